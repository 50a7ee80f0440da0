import { problems } from '../errors/schemas.ts'
import { Type } from '../util/typebox.ts'
import { BASIC_SECURITY } from './security.ts'

export const loginSchema = {
  tags: ['Authentication'],
  summary: 'Exchange an API key for an access token (interface 4.1)',
  security: BASIC_SECURITY,
  description:
    'HTTP Basic with base64(api_key_id:api_key_secret), plus headers `tenant` and `ssiconfig`. No body. ' +
    'The token comes back in the `Token` response header; later calls send `Authorization: jwt <token>`.',
  // Authorization is declared by `security` (Basic), not as a parameter: Swagger UI fills it from "Authorize".
  headers: Type.Object({
    tenant: Type.Optional(Type.String({ description: 'Tenant id (required).' })),
    ssiconfig: Type.Optional(
      Type.String({ description: 'Template id; must equal the key’s linked template when it has one.' }),
    ),
  }),
  response: {
    200: {
      ...Type.Object({ message: Type.Literal('SUCCESS') }),
      // @fastify/swagger takes response headers as a plain name → schema map.
      headers: {
        Token: Type.String({ description: 'The access token (a JWT).' }),
        Token_type: Type.Literal('jwt', { description: 'Always jwt.' }),
      },
    },
    ...problems(400, 401, 403),
  },
}
