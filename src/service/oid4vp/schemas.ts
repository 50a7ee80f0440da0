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

// OpenID4VP 1.0 Appendix A: a session over the W3C Digital Credentials API. The relying party's page (or its
// backend) fetches the request entry and posts back what navigator.credentials.get answered.

export const dcApiRequestSchema = {
  tags,
  summary: 'Digital Credentials API request entry (OpenID4VP 1.0 Appendix A)',
  description:
    "The entry for navigator.credentials.get({digital: {requests: [entry]}}): protocol openid4vp-v1-unsigned (data: the request parameters), -signed (data.request: a compact JWS) or -multisigned (data.request: a JWS JSON Serialization). Signed when fetched; the first fetch is the session's request_retrieved step.",
  params: SessionParams,
  response: {
    200: Type.Object(
      {
        protocol: Type.String({ description: 'openid4vp-v1-unsigned, -signed or -multisigned (A.1).' }),
        data: Type.Object({}, { additionalProperties: true, description: 'The request (A.2, A.3).' }),
      },
      { description: 'application/json' },
    ),
    ...errors(404, 409, 410),
  },
}

export const DcApiAnswer = Type.Object(
  {
    origin: Field(
      'The origin of the page that called navigator.credentials.get (e.g. the Origin header of its request to its backend); one of the session’s expected origins. Default: the first of them.',
    ),
    protocol: Field("The DigitalCredential's protocol; when present, the session's (A.1)."),
    data: Field(
      "The DigitalCredential's data: {vp_token} (dc_api), {response: <JWE>} (dc_api.jwt) or {error, error_description?} (A.4).",
    ),
  },
  { additionalProperties: true, description: 'application/json.' },
)

export const dcApiResponseSchema = {
  tags,
  summary: 'Digital Credentials API answer (OpenID4VP 1.0 Appendix A.4)',
  description:
    '200 {}: VERIFIED. 400 invalid_presentation: REJECTED (the checks, a wallet error, another origin). 400 invalid_request: the answer cannot be read (not JSON, no data object, a JWE that does not decrypt, another protocol); the session stays PENDING.',
  params: SessionParams,
  body: DcApiAnswer,
  response: {
    200: Type.Object({}, { additionalProperties: true, description: 'Empty: the session is VERIFIED.' }),
    ...errors(400, 404, 409, 410),
  },
}
