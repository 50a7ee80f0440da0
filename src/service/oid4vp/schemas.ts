import { Type } from 'typebox'
import { OAuthErrorBody } from '../oid4vci/schemas.ts'

// The wallet-facing verifier's contract. Unknown fields are ignored (OpenID4VP); the direct_post body is
// documented but permissive, so the service answers each problem with its own code.

const tags = ['OpenID4VP (wallet)']
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, OAuthErrorBody]))
const SessionParams = Type.Object({
  tenant: Type.String({ minLength: 1, maxLength: 128 }),
  id: Type.String({ minLength: 1, maxLength: 128 }),
})
const Field = (description: string) => Type.Optional(Type.Unknown({ description }))

export const requestObjectSchema = {
  tags,
  summary: 'Signed request object (request_uri)',
  params: SessionParams,
  response: {
    200: Type.String({ description: 'application/oauth-authz-req+jwt' }),
    ...errors(404, 409, 410),
  },
}

export const AuthorizationResponse = Type.Object(
  {
    state: Field('The state of the request object.'),
    vp_token: Field('The verifiable presentation (a JWT).'),
    presentation_submission: Field('JSON text: the DIF presentation submission.'),
    error: Field('A refusal by the wallet, instead of vp_token.'),
    error_description: Field('With error.'),
  },
  { additionalProperties: true, description: 'application/x-www-form-urlencoded (direct_post).' },
)

export const authorizationResponseSchema = {
  tags,
  summary: 'Authorization response (response_mode direct_post, form-encoded)',
  params: SessionParams,
  body: AuthorizationResponse,
  response: {
    200: Type.Object({}, { additionalProperties: true, description: 'Empty: no redirect_uri.' }),
    ...errors(400, 404, 409, 410),
  },
}
