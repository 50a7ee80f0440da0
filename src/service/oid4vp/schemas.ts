import { OAuthErrorBody } from '../oid4vci/schemas.ts'
import { Type } from '../util/typebox.ts'

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

export const requestObjectPostSchema = {
  tags,
  summary: 'Signed request object, request_uri_method=post (OpenID4VP 1.0 §5.10)',
  params: SessionParams,
  body: Type.Object(
    {
      wallet_metadata: Field(
        "JSON text: the wallet's metadata (§10); request_object_signing_alg_values_supported is honoured.",
      ),
      wallet_nonce: Field('Echoed in the request object as wallet_nonce.'),
    },
    { additionalProperties: true, description: 'application/x-www-form-urlencoded.' },
  ),
  response: {
    200: Type.String({ description: 'application/oauth-authz-req+jwt, with wallet_nonce' }),
    ...errors(400, 404, 409, 410),
  },
}

export const AuthorizationResponse = Type.Object(
  {
    state: Field('The state of the request object.'),
    vp_token: Field(
      'pe: the verifiable presentation (a JWT). dcql: JSON text of an object keyed by credential query id, each value an array of presentations (OpenID4VP 1.0 §8.1).',
    ),
    response: Field(
      'direct_post.jwt: the compact JWE (ECDH-ES, A128GCM or A256GCM) of the response parameters.',
    ),
    presentation_submission: Field('JSON text: the DIF presentation submission.'),
    error: Field('A refusal by the wallet, instead of vp_token.'),
    error_description: Field('With error.'),
  },
  { additionalProperties: true, description: 'application/x-www-form-urlencoded (direct_post).' },
)

export const authorizationResponseSchema = {
  tags,
  summary: 'Authorization response (response_mode direct_post or direct_post.jwt, form-encoded)',
  params: SessionParams,
  body: AuthorizationResponse,
  response: {
    200: Type.Object({}, { additionalProperties: true, description: 'Empty: no redirect_uri.' }),
    ...errors(400, 404, 409, 410),
  },
}
