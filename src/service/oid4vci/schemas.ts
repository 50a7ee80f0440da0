import { WALLET_TOKEN_SECURITY } from '../auth/security.ts'
import { Type } from '../util/typebox.ts'

// The wallet-facing issuer's contract. Unknown fields are ignored (OpenID4VCI, OAuth 2.0): every object
// is open. Bodies are documented but kept permissive: the service answers each problem with the spec's
// own code (invalid_credential_request, invalid_proof, unsupported_grant_type, …), which a schema failure
// (always invalid_request) could not.

const tags = ['OpenID4VCI (wallet)']
const Open = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description?: string) =>
  Type.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) })
const Field = (description: string) => Type.Optional(Type.Unknown({ description }))

export const OAuthErrorBody = Open(
  {
    error: Type.String({ description: 'OAuth 2.0 / OpenID4VCI error code.' }),
    error_description: Type.String(),
  },
  'OAuth-style error (never problem+json); `Cache-Control: no-store`.',
)
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, OAuthErrorBody]))

const TenantParams = Type.Object({ tenant: Type.String({ minLength: 1, maxLength: 128 }) })
const TenantIdParams = Type.Object({
  tenant: Type.String({ minLength: 1, maxLength: 128 }),
  id: Type.String({ minLength: 1, maxLength: 128 }),
})

export const issuerMetadataSchema = {
  tags,
  summary: 'Credential issuer metadata',
  params: TenantParams,
  response: {
    200: Open(
      {
        credential_issuer: Type.String(),
        credential_endpoint: Type.String(),
        credential_configurations_supported: Open({}),
      },
      'OpenID4VCI issuer metadata.',
    ),
    ...errors(404),
  },
}

export const authorizationServerMetadataSchema = {
  tags,
  summary: 'OAuth authorization server metadata (RFC 8414)',
  params: TenantParams,
  response: {
    200: Open({ issuer: Type.String(), token_endpoint: Type.String() }, 'RFC 8414 metadata.'),
    ...errors(404),
  },
}

export const offerSchema = {
  tags,
  summary: 'Credential offer (by reference)',
  params: TenantIdParams,
  response: {
    200: Open(
      {
        credential_issuer: Type.String(),
        credential_configuration_ids: Type.Array(Type.String()),
        grants: Open({}),
      },
      'The credential offer of one issuance process.',
    ),
    ...errors(404),
  },
}

export const TokenRequest = Open(
  {
    grant_type: Field('urn:ietf:params:oauth:grant-type:pre-authorized_code'),
    'pre-authorized_code': Field('From the offer.'),
    tx_code: Field('The transaction code, when the offer announced one.'),
    user_pin: Field('The same, under its draft name.'),
  },
  'application/x-www-form-urlencoded.',
)

export const tokenSchema = {
  tags,
  summary: 'Token endpoint (pre-authorized code grant, form-encoded)',
  params: TenantParams,
  body: TokenRequest,
  response: {
    200: Open({
      access_token: Type.String(),
      token_type: Type.String({ description: 'Bearer' }),
      expires_in: Type.Integer(),
      // Always sent, except under a wallet test's token-without-c-nonce fault (OpenID4VCI 1.0 has none).
      c_nonce: Type.Optional(Type.String()),
      c_nonce_expires_in: Type.Optional(Type.Integer()),
    }),
    ...errors(400, 401, 404),
  },
}

const Nonce = Open({ c_nonce: Type.String(), c_nonce_expires_in: Type.Integer() })

export const nonceSchema = {
  tags,
  summary: 'Nonce endpoint',
  params: TenantParams,
  response: { 200: Nonce, ...errors(404) },
}

// JSON bodies may be anything a wallet sends (even not an object): the service names the problem.
export const CredentialRequest = Type.Unknown({
  description:
    'JSON: `credential_configuration_id` and a key proof, `proofs: {jwt: [...]}` (1.0) or `proof: {proof_type: "jwt", jwt}` (draft 15) ' +
    '(or `di_vp` when the template requires a presentation); drafts 13/14 may describe the credential with `format` and ' +
    '`credential_definition` or `vct` instead of naming it. Unknown members are ignored.',
})

const Issued = Open({
  credentials: Type.Array(
    Open({
      credential: Type.Union([Type.String(), Type.Object({}, { additionalProperties: true })], {
        description:
          'The credential: a jwt_vc_json JWT, a dc+sd-jwt SD-JWT VC, or an ldp_vc JSON object with its embedded proof.',
      }),
    }),
  ),
  notification_id: Type.Optional(Type.String({ description: 'For the notification endpoint.' })),
})

const Deferred = (description: string) =>
  Open({ transaction_id: Type.String(), interval: Type.Integer() }, description)

export const credentialSchema = {
  tags,
  summary: 'Credential endpoint',
  security: WALLET_TOKEN_SECURITY,
  params: TenantParams,
  body: CredentialRequest,
  response: {
    200: Issued,
    202: Deferred('Nothing submitted yet: poll the deferred endpoint.'),
    ...errors(400, 401, 404),
  },
}

export const deferredSchema = {
  tags,
  summary: 'Deferred credential endpoint',
  security: WALLET_TOKEN_SECURITY,
  params: TenantParams,
  body: Type.Unknown({ description: 'JSON `{transaction_id}`. Unknown members are ignored.' }),
  response: {
    200: Issued,
    202: Deferred('Still not issued (OpenID4VCI 1.0 §9.2): poll again after interval seconds.'),
    ...errors(400, 401, 404),
  },
}

export const notificationSchema = {
  tags,
  summary: 'Notification endpoint',
  security: WALLET_TOKEN_SECURITY,
  params: TenantParams,
  body: Type.Unknown({
    description:
      'JSON `{notification_id, event, event_description?}`, event credential_accepted | credential_failure | credential_deleted.',
  }),
  response: { 204: Type.Null(), ...errors(400, 401, 404) },
}

export const statusListSchema = {
  tags: ['Status lists'],
  summary: 'Status-list credential (signed JWT)',
  params: TenantIdParams,
  response: {
    200: Type.String({ description: 'application/jwt: the status-list credential.' }),
    ...errors(404),
  },
}

export const trustAnchorSchema = {
  tags,
  summary: "The tenant's test CA certificate: the trust anchor of its x5c issuer keys (HAIP)",
  params: TenantParams,
  response: {
    200: Type.String({
      description:
        'application/x-pem-file: the self-signed CA certificate that issues the leaf certificates of SD-JWT VCs signed with issuerKeyBinding x5c.',
    }),
    ...errors(404),
  },
}

export const iacaSchema = {
  tags,
  summary: "The tenant's IACA certificate: the trust anchor of its mdocs (ISO 18013-5 Annex B)",
  params: TenantParams,
  response: {
    200: Type.String({
      description:
        "application/x-pem-file: the self-signed IACA root that issues the document signer certificate in every mso_mdoc's issuerAuth x5chain.",
    }),
    ...errors(404),
  },
}

export const tokenStatusListSchema = {
  tags: ['Status lists'],
  summary: 'Token Status List (IETF Token Status List §5, for SD-JWT VCs)',
  params: TenantIdParams,
  response: {
    200: Type.String({
      description:
        'application/statuslist+jwt: the same list as the status-list credential, 2 bits per entry.',
    }),
    ...errors(404),
  },
}

export const parSchema = {
  tags,
  summary: 'Pushed authorization request (RFC 9126; form-encoded)',
  description:
    'The authorization code flow starts here (required: RFC 9126 §5, HAIP 1.0 §4.2): response_type=code, client_id, redirect_uri, PKCE S256, authorization_details of type openid_credential (or scope), issuer_state from an offer; wallet attestation in the OAuth-Client-Attestation(-PoP) headers; an optional DPoP proof binds the code to its key.',
  params: TenantParams,
  body: Open(
    {
      response_type: Field('code'),
      client_id: Field('The wallet (the attestation names it in sub).'),
      redirect_uri: Field('Where the authorization response goes.'),
      code_challenge: Field('RFC 7636 S256 challenge.'),
      code_challenge_method: Field('S256'),
      authorization_details: Field('JSON: [{"type":"openid_credential","credential_configuration_id":"…"}].'),
      scope: Field('Or the credential configuration’s scope.'),
      issuer_state: Field('From the offer’s authorization_code grant.'),
      state: Field('Echoed in the authorization response.'),
    },
    'application/x-www-form-urlencoded.',
  ),
  response: {
    201: Open({ request_uri: Type.String(), expires_in: Type.Integer() }),
    ...errors(400, 401, 404),
  },
}

export const authorizeSchema = {
  tags,
  summary: 'Authorization endpoint (the user step)',
  description:
    'With the request_uri of a pushed request: a template in test mode (authorization.userStep auto) answers the authorization response at once (302 to redirect_uri with code, state, iss); otherwise a page asks a person to approve or decline.',
  params: TenantParams,
  querystring: Open({ client_id: Field('As pushed.'), request_uri: Field('From the pushed request.') }),
  response: { 200: Type.String({ description: 'The user step (text/html).' }), ...errors(400, 404) },
}

export const authorizeDecisionSchema = {
  tags,
  summary: 'The user step’s answer (form-encoded)',
  params: TenantParams,
  body: Open({
    client_id: Field('As pushed.'),
    request_uri: Field('From the pushed request.'),
    decision: Field('approve or decline'),
  }),
  response: { ...errors(400, 404) },
}
