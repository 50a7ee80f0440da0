// The server test plans (docs/server-testing.md): the harness's wallet against someone else's OpenID4VCI
// issuer (`issuer`) or OpenID4VP verifier (`verifier`), one case per rule. Pure data: the runners
// (issuer.ts, verifier.ts) carry each case out by its `name`, the judge (judge.ts) reads `expect` and
// `refusal`. The OpenID Foundation modules each case answers are listed in oidf-modules.ts.

import type { WalletStep } from '../../wallet/errors.ts'
import type {
  AuthorizationMisbehaviour,
  Misbehaviour,
  PresentationMisbehaviour,
} from '../../wallet/misbehaviour.ts'

export const SERVER_PLANS = ['issuer', 'verifier'] as const
export type ServerPlan = (typeof SERVER_PLANS)[number]

export const SERVER_PLAN_TITLES: Record<ServerPlan, string> = {
  issuer: 'OpenID4VCI issuer (1.0 Final, and the draft 15 shape where the issuer speaks it)',
  verifier: 'OpenID4VP verifier (1.0 Final with DCQL, and draft 20 with Presentation Exchange)',
}

/** What the target must do: complete the flow, or refuse the case's misbehaviour. */
export type ServerExpectation = 'accept' | 'refuse'

/** Where the refusal must come and what it may say. */
export interface Refusal {
  /** the wallet step whose answer must be the refusal */
  step: WalletStep
  /** OAuth `error` codes that are right (undefined: any 4xx with no code, e.g. RFC 6750 §3.1's bare 401) */
  errors: readonly (string | undefined)[]
  /** HTTP statuses that are right; default any 4xx */
  statuses?: readonly number[]
}

export interface ServerCase {
  /** `<plan>:<name>`: stable, the JUnit test name, what `--case` takes */
  id: string
  plan: ServerPlan
  name: string
  /** the requirement, as the reports name it */
  title: string
  expect: ServerExpectation
  /** clause tags, as the conformance suite writes them */
  sources: string[]
  /** the broken rule, in words: a failure's reason starts with it */
  rule?: string
  /** documented per case: which outcomes pass */
  passes: string
  /** the wallet misbehaviour the case sends */
  misbehave?: Misbehaviour | AuthorizationMisbehaviour | PresentationMisbehaviour
  /** refuse cases of the issuer plan: the step and the error codes that pass */
  refusal?: Refusal
}

const V = '@OID4VCI-1.0'
const P = '@OID4VP-1.0'

const REFUSE_ISSUER = (step: string, errors: string) =>
  `passes when the issuer answers the ${step} with ${errors} and issues nothing; fails when it issues, answers 2xx, or refuses with another error`
const ACCEPT_ISSUER =
  'passes when the wallet receives the credential and verifies it (signature, holder binding, validity, status); fails on any error answer or a credential that does not verify'

function issuerCase(
  name: string,
  title: string,
  fields: Omit<ServerCase, 'id' | 'plan' | 'name' | 'title' | 'passes' | 'expect'> & {
    expect?: ServerExpectation
    passes?: string
  },
): ServerCase {
  const expect = fields.expect ?? (fields.refusal ? 'refuse' : 'accept')
  const refusal = fields.refusal
  const errors = refusal?.errors.map((e) => e ?? '(no error code)').join(' or ')
  return {
    id: `issuer:${name}`,
    plan: 'issuer',
    name,
    title,
    expect,
    passes:
      fields.passes ?? (refusal ? REFUSE_ISSUER(`${refusal.step} request`, `4xx ${errors}`) : ACCEPT_ISSUER),
    ...fields,
  }
}

const proofRefusal: Refusal = { step: 'credential', errors: ['invalid_proof'], statuses: [400] }
const nonceRefusal: Refusal = { step: 'credential', errors: ['invalid_nonce'], statuses: [400] }

const ISSUER_CASES: ServerCase[] = [
  issuerCase('metadata', 'The issuer publishes its metadata at the well-known location of OpenID4VCI 1.0', {
    sources: [`${V}-12.2.2`, `${V}-12.2.4`],
    passes:
      "passes when GET /.well-known/openid-credential-issuer inserted before the issuer identifier's path answers 200 JSON whose credential_issuer is the offer's, with a credential_endpoint and every offered credential_configuration_id; fails otherwise",
  }),
  issuerCase(
    'metadata-appended',
    'The issuer also publishes its metadata where draft 15 wallets look (appended to the issuer identifier)',
    {
      sources: ['@OID4VCI-draft15-11.2.2'],
      passes:
        'passes when <credential_issuer>/.well-known/openid-credential-issuer answers the same metadata; not applicable when the issuer identifier has no path (both locations are one URL) or the issuer speaks 1.0 only; fails when it answers anything else',
    },
  ),
  issuerCase(
    'happy-flow',
    'The issuer issues a credential for a valid pre-authorized code flow (EdDSA key proof where offered)',
    {
      sources: [`${V}-6`, `${V}-8.2`, `${V}-8.3`, `${V}-F.1`],
    },
  ),
  issuerCase('proof-es256', 'The issuer accepts a jwt key proof signed with ES256 (P-256 holder key)', {
    sources: [`${V}-F.1`, '@HAIP-1.0-5'],
    passes: `${ACCEPT_ISSUER}; not applicable when the configuration's proof_signing_alg_values_supported leaves ES256 out`,
  }),
  issuerCase(
    'additional-requests',
    'The issuer answers further credential requests made with the same access token',
    {
      sources: [`${V}-8`, `${V}-6.2`],
      passes:
        'passes when a second credential request on the same access token (with a fresh nonce) is answered with a credential that verifies; fails when it is refused',
    },
  ),
  issuerCase('deferred', 'The issuer defers the credential and hands it out at the deferred endpoint', {
    sources: [`${V}-9`, `${V}-9.2`],
    passes:
      'passes when the credential request answers 202 with a transaction_id and, once the issuance is completed, the deferred endpoint answers the credential, which verifies; not applicable without a way to make the issuer defer (--deferred-offer-command, or a profile); fails otherwise',
  }),
  issuerCase('notification', 'The issuer accepts a credential_accepted notification', {
    sources: [`${V}-11`, `${V}-11.2`],
    passes:
      'passes when the notification endpoint answers 204 to credential_accepted for the notification_id it gave; not applicable when the issuer has no notification_endpoint or gave no notification_id',
  }),
  issuerCase(
    'proof-foreign-signature',
    'The issuer refuses a key proof whose signature is not made by the key it names',
    {
      sources: [`${V}-8.3.1.2`, `${V}-F.4`],
      rule: 'the jwt proof is signed by another key than the one its header names',
      misbehave: 'bad-signature',
      refusal: proofRefusal,
    },
  ),
  issuerCase('proof-foreign-kid', 'The issuer refuses a key proof naming a key the holder does not control', {
    sources: [`${V}-8.3.1.2`, `${V}-F.4`],
    rule: "the jwt proof's kid names another DID's key",
    misbehave: 'foreign-kid',
    refusal: proofRefusal,
  }),
  issuerCase('proof-alg-none', 'The issuer refuses an unsigned key proof (alg none)', {
    sources: [`${V}-F.1`, `${V}-8.3.1.2`],
    rule: 'the jwt proof has alg "none" and no signature',
    misbehave: 'alg-none',
    refusal: proofRefusal,
  }),
  issuerCase('proof-wrong-typ', 'The issuer refuses a key proof whose typ is not openid4vci-proof+jwt', {
    sources: [`${V}-F.1`, `${V}-8.3.1.2`],
    rule: 'the jwt proof header typ is not openid4vci-proof+jwt',
    misbehave: 'wrong-typ',
    refusal: proofRefusal,
  }),
  issuerCase('proof-wrong-aud', 'The issuer refuses a key proof whose aud is not its identifier', {
    sources: [`${V}-F.1`, `${V}-8.3.1.2`],
    rule: "the jwt proof's aud is not the credential issuer identifier",
    misbehave: 'wrong-aud',
    refusal: proofRefusal,
  }),
  issuerCase('proof-stale-iat', 'The issuer refuses a key proof issued an hour ago', {
    sources: [`${V}-F.1`, `${V}-F.4`],
    rule: "the jwt proof's iat is an hour in the past",
    misbehave: 'expired-iat',
    refusal: { step: 'credential', errors: ['invalid_proof', 'invalid_nonce'], statuses: [400] },
  }),
  issuerCase('proof-future-iat', 'The issuer refuses a key proof issued an hour in the future', {
    sources: [`${V}-F.1`, `${V}-F.4`],
    rule: "the jwt proof's iat is an hour in the future",
    misbehave: 'future-iat',
    refusal: proofRefusal,
  }),
  issuerCase('proof-private-jwk', 'The issuer refuses a key proof whose jwk carries the private key', {
    sources: [`${V}-F.1`, '@RFC7517-4'],
    rule: 'the jwt proof header jwk contains the private part "d"',
    misbehave: 'jwk-with-private-key',
    refusal: proofRefusal,
  }),
  issuerCase('proof-missing', 'The issuer refuses a credential request without a key proof', {
    sources: [`${V}-8.2`, `${V}-8.3.1.2`],
    rule: 'the credential request carries neither proof nor proofs for a configuration that binds to a key',
    misbehave: 'missing-proof',
    refusal: proofRefusal,
  }),
  issuerCase('proof-legacy-shape', 'A 1.0 issuer refuses the draft singular proof member', {
    sources: [`${V}-8.2`, `${V}-8.3.1.2`],
    rule: 'the credential request sends the draft `proof` member, which OpenID4VCI 1.0 replaced by `proofs`',
    misbehave: 'legacy-proof',
    refusal: { step: 'credential', errors: ['invalid_credential_request', 'invalid_proof'], statuses: [400] },
    passes: REFUSE_ISSUER('credential request', '4xx invalid_credential_request or invalid_proof').concat(
      '; not applicable to a draft 15 issuer',
    ),
  }),
  issuerCase('nonce-unknown', 'The issuer refuses a key proof with a nonce it never issued', {
    sources: [`${V}-7`, `${V}-8.3.1.2`],
    rule: "the jwt proof's nonce was not issued by this issuer",
    misbehave: 'wrong-nonce',
    refusal: nonceRefusal,
  }),
  issuerCase('nonce-reused', 'The issuer refuses a key proof with a nonce already used', {
    sources: [`${V}-7`, `${V}-8.3.1.2`],
    rule: "the jwt proof's nonce was already used by an earlier credential request (of another offer)",
    misbehave: 'replayed-nonce',
    refusal: nonceRefusal,
  }),
  issuerCase('code-replayed', 'The issuer refuses a pre-authorized code redeemed a second time', {
    sources: [`${V}-6.1`, '@RFC6749-4.1.2', `${V}-13.6`],
    rule: 'the pre-authorized code is redeemed a second time',
    misbehave: 'replayed-code',
    refusal: { step: 'token', errors: ['invalid_grant'], statuses: [400] },
  }),
  issuerCase('tx-code-wrong', 'The issuer refuses a token request with the wrong tx_code', {
    sources: [`${V}-6.1`, `${V}-6.3`],
    rule: 'the token request carries a tx_code that is not the one the offer asked for',
    misbehave: 'wrong-tx-code',
    refusal: { step: 'token', errors: ['invalid_grant'], statuses: [400] },
    passes: `${REFUSE_ISSUER('token request', '4xx invalid_grant')}; not applicable when the offer asks for no tx_code`,
  }),
  issuerCase(
    'tx-code-missing',
    'The issuer refuses a token request without the tx_code the offer asked for',
    {
      sources: [`${V}-6.1`, `${V}-6.3`],
      rule: 'the token request carries no tx_code although the offer asked for one',
      misbehave: 'missing-tx-code',
      refusal: { step: 'token', errors: ['invalid_request', 'invalid_grant'], statuses: [400] },
      passes: `${REFUSE_ISSUER('token request', '4xx invalid_request or invalid_grant')}; not applicable when the offer asks for no tx_code`,
    },
  ),
  issuerCase(
    'unknown-configuration',
    'The issuer refuses a credential request for a configuration it does not offer',
    {
      sources: [`${V}-8.2`, `${V}-8.3.1.2`],
      rule: 'the credential request names a credential_configuration_id the issuer does not have',
      misbehave: 'unknown-configuration',
      refusal: {
        step: 'credential',
        errors: ['unknown_credential_configuration'],
        statuses: [400],
      },
    },
  ),
  issuerCase('unknown-identifier', 'The issuer refuses a credential_identifier it never granted', {
    sources: [`${V}-8.2`, `${V}-8.3.1.2`],
    rule: 'the credential request names a credential_identifier the token response did not grant',
    misbehave: 'unknown-credential-identifier',
    refusal: {
      step: 'credential',
      errors: ['unknown_credential_identifier'],
      statuses: [400],
    },
    passes: REFUSE_ISSUER('credential request', '4xx unknown_credential_identifier').concat(
      '; not applicable to a draft 15 issuer',
    ),
  }),
  issuerCase('token-in-query', 'The issuer refuses an access token sent in the URL query', {
    sources: [`${V}-8`, '@RFC6750-2.3', '@HAIP-1.0-4.2'],
    rule: 'the access token travels as access_token in the query string, not in the Authorization header',
    misbehave: 'token-in-query',
    passes:
      'passes when the credential endpoint answers 401 (or 400 invalid_request) and issues nothing; fails when it issues. RFC 6750 §2.3 lets a resource server accept a token in the query (MAY); HAIP 1.0 and FAPI 2.0 (§5.3.4) do not, and the reference service does not: an issuer outside those profiles may fail this case by design',
    refusal: {
      step: 'credential',
      errors: ['invalid_token', 'invalid_request', undefined],
      statuses: [400, 401],
    },
  }),
  issuerCase('token-expired', 'The issuer refuses an access token used after it expired', {
    sources: [`${V}-8`, '@RFC6750-3.1'],
    rule: 'the access token is used after its expires_in',
    refusal: { step: 'credential', errors: ['invalid_token'], statuses: [401] },
    passes:
      "passes when a credential request after the token's expires_in is answered 401 invalid_token; not applicable when expires_in is longer than --token-wait allows (default 0: the harness does not wait)",
  }),
  issuerCase(
    'credential-format-legacy',
    'A 1.0 issuer refuses a credential request identified the draft-13 way (format and its members)',
    {
      sources: [`${V}-8.2`, `${V}-8.3.1.2`],
      rule: 'the credential request names format + credential_definition / vct instead of credential_configuration_id',
      misbehave: 'legacy-format-request',
      refusal: {
        step: 'credential',
        errors: ['invalid_credential_request', 'unknown_credential_configuration'],
        statuses: [400],
      },
      passes: REFUSE_ISSUER(
        'credential request',
        '4xx invalid_credential_request or unknown_credential_configuration',
      ).concat('; not applicable to a draft 15 issuer'),
    },
  ),
  ...haipIssuerCases(),
]

/**
 * The authorization code flow as HAIP 1.0 profiles it (OpenID4VCI 1.0 §5, §6): PAR (RFC 9126), PKCE S256
 * (RFC 7636), the authorization response with iss (RFC 9207) and state, a DPoP-bound token (RFC 9449), wallet
 * attestation at PAR and token (draft-ietf-oauth-attestation-based-client-auth-07 §6.2). They apply when the
 * issuer's offers carry an authorization_code grant (OpenID4VCI 1.0 §4.1.1); each takes a fresh offer but
 * haip-metadata (the pre-flight's issuer) and haip-wallet-initiated (no offer: §3.5). The authorization
 * endpoint must answer without a person (the target's test mode): docs/server-testing.md "HAIP issuance".
 */
function haipIssuerCases(): ServerCase[] {
  const H = '@HAIP-1.0-4.1'
  const APPLIES = "not applicable when the issuer's offers carry no authorization_code grant"
  const ACCEPT_HAIP = `${ACCEPT_ISSUER}; ${APPLIES}`
  const refuse = (step: string, errors: string) => `${REFUSE_ISSUER(`${step} request`, errors)}; ${APPLIES}`
  const tokenGrant: Refusal = { step: 'token', errors: ['invalid_grant'], statuses: [400] }
  const dpopProof: Refusal = { step: 'token', errors: ['invalid_dpop_proof'], statuses: [400] }
  const client: Refusal = { step: 'par', errors: ['invalid_client'], statuses: [401, 400] }
  return [
    issuerCase(
      'haip-metadata',
      'The authorization server announces what HAIP 1.0 requires: PAR required, PKCE S256, iss in the response, DPoP, wallet attestation',
      {
        sources: [
          H,
          '@RFC8414-2',
          '@RFC9126-5',
          '@RFC7636-4.2',
          '@RFC9207-3',
          '@RFC9449-5.1',
          '@OAuth-Attestation-10.1',
        ],
        passes: `passes when the authorization server metadata (RFC 8414 §3, of the offer's authorization_server, else the issuer metadata's first authorization_servers entry, else the credential issuer) names the issuer it is fetched for, a pushed_authorization_request_endpoint with require_pushed_authorization_requests true, S256 in code_challenge_methods_supported, authorization_response_iss_parameter_supported true, ES256 in dpop_signing_alg_values_supported and attest_jwt_client_auth in token_endpoint_auth_methods_supported; fails naming each one missing; ${APPLIES}`,
      },
    ),
    issuerCase(
      'haip-flow',
      'The issuer issues through the HAIP authorization code flow: PAR, PKCE S256, authorization, DPoP-bound token, credential (issuer-initiated)',
      {
        sources: [
          H,
          '@OID4VCI-1.0-5.1',
          '@RFC9126-2',
          '@RFC7636-4.3',
          '@RFC9449-5',
          '@RFC9449-7.1',
          '@OAuth-Attestation-6.2',
        ],
        passes: ACCEPT_HAIP,
      },
    ),
    issuerCase(
      'haip-wallet-initiated',
      'The issuer issues through the HAIP authorization code flow started by the wallet from its metadata alone (no offer)',
      {
        sources: [H, '@OID4VCI-1.0-3.5', '@OID4VCI-1.0-5.1.1', '@RFC9126-2'],
        passes: `${ACCEPT_HAIP}, or when the issuer does not take a wallet-initiated request (its PAR or authorization endpoint refuses one without issuer_state: OpenID4VCI 1.0 §3.5 is optional), or holds it for a person (202)`,
      },
    ),
    issuerCase(
      'haip-authorization-response',
      "The authorization response carries the code, the wallet's state and the authorization server's iss",
      {
        sources: [H, '@RFC6749-4.1.2', '@RFC9207-2', '@RFC9126-4'],
        passes: `passes when the authorization endpoint (given the request_uri of the pushed request) redirects to the wallet's redirect_uri with code, the state of the pushed request and iss equal to the authorization server's issuer identifier; fails when iss is missing or another's, state is missing or another, or it answers an error; ${APPLIES}`,
      },
    ),
    issuerCase('haip-token-dpop', 'The token endpoint answers a DPoP-bound access token (token_type DPoP)', {
      sources: [H, '@RFC9449-5', '@RFC6749-5.1'],
      passes: `passes when the token request with PKCE, DPoP proof and wallet attestation is answered 200 with an access_token and token_type DPoP; fails on an error or a Bearer token; ${APPLIES}`,
    }),
    issuerCase(
      'haip-pkce-verifier-mismatch',
      'The issuer refuses a token request whose code_verifier does not match the PKCE challenge',
      {
        sources: ['@RFC7636-4.6', H],
        rule: "the token request's code_verifier is not the one whose S256 challenge went with the pushed authorization request",
        misbehave: 'pkce-verifier-mismatch',
        refusal: tokenGrant,
        passes: refuse('token', '400 invalid_grant'),
      },
    ),
    issuerCase('haip-code-replay', 'The issuer refuses an authorization code redeemed a second time', {
      sources: ['@RFC6749-4.1.2', '@RFC6749-10.5', H],
      rule: 'the authorization code is redeemed a second time after an access token was issued for it',
      misbehave: 'code-replay',
      refusal: tokenGrant,
      passes: `${refuse('token', '400 invalid_grant')}. The first redemption must succeed (else nothing is tested); whether the token it gave is revoked (RFC 6749 §4.1.2: SHOULD) is noted`,
    }),
    issuerCase(
      'haip-dpop-wrong-htu',
      'The issuer refuses a token request whose DPoP proof names another URI (htu)',
      {
        sources: ['@RFC9449-4.3', H],
        rule: "the token request's DPoP proof has the token endpoint with /elsewhere appended as htu",
        misbehave: 'dpop-wrong-htu',
        refusal: dpopProof,
        passes: refuse('token', '400 invalid_dpop_proof'),
      },
    ),
    issuerCase(
      'haip-dpop-wrong-htm',
      'The issuer refuses a token request whose DPoP proof names another method (htm)',
      {
        sources: ['@RFC9449-4.3', H],
        rule: "the token request's DPoP proof says htm GET for the POST",
        misbehave: 'dpop-wrong-htm',
        refusal: dpopProof,
        passes: refuse('token', '400 invalid_dpop_proof'),
      },
    ),
    issuerCase('haip-dpop-replayed-jti', 'The issuer refuses a DPoP proof whose jti it has seen before', {
      sources: ['@RFC9449-11.1', '@RFC9449-4.3', H],
      rule: "the token request's DPoP proof carries the jti of the proof the wallet sent with its pushed authorization request",
      misbehave: 'dpop-replayed-jti',
      refusal: dpopProof,
      passes: refuse('token', '400 invalid_dpop_proof'),
    }),
    issuerCase(
      'haip-dpop-token-as-bearer',
      'The issuer refuses a DPoP-bound access token presented as a Bearer token',
      {
        sources: ['@RFC9449-7.1', '@RFC9449-7.2', H],
        rule: 'the credential request presents the DPoP-bound access token with Authorization: Bearer (its DPoP proof still sent)',
        misbehave: 'dpop-token-as-bearer',
        refusal: { step: 'credential', errors: ['invalid_token', undefined], statuses: [401] },
        passes: refuse('credential', '401 invalid_token (or no error code: RFC 6750 §3.1)'),
      },
    ),
    issuerCase(
      'haip-attestation-untrusted-provider',
      'The issuer refuses a wallet attestation signed by a wallet provider it does not trust',
      {
        sources: ['@OAuth-Attestation-6.2', '@OAuth-Attestation-5.1', H],
        rule: 'the wallet attestation at PAR is signed by a freshly generated wallet provider key no issuer trusts',
        misbehave: 'attestation-untrusted-provider',
        refusal: client,
        passes: refuse('pushed authorization', '401 (or 400) invalid_client'),
      },
    ),
    issuerCase(
      'haip-attestation-pop-wrong-aud',
      'The issuer refuses a wallet attestation PoP whose aud is not the authorization server',
      {
        sources: ['@OAuth-Attestation-5.2', '@OAuth-Attestation-6.2', H],
        rule: "the attestation PoP's aud at PAR is https://wrong-audience.invalid, not the authorization server's issuer identifier",
        misbehave: 'attestation-pop-wrong-aud',
        refusal: client,
        passes: refuse('pushed authorization', '401 (or 400) invalid_client'),
      },
    ),
    issuerCase(
      'haip-wrong-redirect-uri',
      "The issuer refuses a token request whose redirect_uri is not the authorization request's",
      {
        sources: ['@RFC6749-4.1.3', H],
        rule: 'the token request names the redirect_uri of the pushed authorization request with /elsewhere appended',
        misbehave: 'authorization-wrong-redirect-uri',
        refusal: tokenGrant,
        passes: refuse('token', '400 invalid_grant'),
      },
    ),
  ]
}

const REJECT_VERIFIER =
  'passes when the verifier refuses the response (a 4xx answer) or, with --result-command / a profile, reports the presentation rejected; fails when it answers 2xx and reports it accepted (or reports nothing else)'
const ACCEPT_VERIFIER =
  'passes when the verifier answers the response 2xx and, with --result-command / a profile, reports the presentation accepted; fails on an error answer or a rejection'

function verifierCase(
  name: string,
  title: string,
  fields: Omit<ServerCase, 'id' | 'plan' | 'name' | 'title' | 'passes' | 'expect'> & {
    expect?: ServerExpectation
    passes?: string
    /** the request property the case needs, for its "not applicable" */
    applies?: string
  },
): ServerCase {
  const { applies, ...rest } = fields
  const expect = fields.expect ?? (fields.misbehave ? 'refuse' : 'accept')
  const base = fields.passes ?? (expect === 'refuse' ? REJECT_VERIFIER : ACCEPT_VERIFIER)
  return {
    id: `verifier:${name}`,
    plan: 'verifier',
    name,
    title,
    expect,
    ...rest,
    passes: applies ? `${base}; not applicable unless ${applies}` : base,
  }
}

const SD = 'the request asks for an SD-JWT VC (dc+sd-jwt)'
const MDOC = 'the request asks for an ISO mdoc (mso_mdoc) in an OpenID4VP 1.0 (DCQL) request'
const ISO = '@ISO18013-5'
const JWT_VP = 'the request asks for a JWT VC (jwt_vc_json) or a Linked Data VC (ldp_vc)'
const PE = 'the request is a Presentation Exchange (draft 20) request'
const V1 = 'the request is an OpenID4VP 1.0 (DCQL) request'
const DC_API =
  'the verifier offers its request over the W3C Digital Credentials API (a relying-party session whose 4.6 answer has dcApi, or --dc-api-command)'

const VERIFIER_CASES: ServerCase[] = [
  verifierCase('happy-flow', 'The verifier accepts a valid presentation of a credential it trusts', {
    sources: [`${P}-5`, `${P}-6`, `${P}-8.2`],
  }),
  verifierCase(
    'request-uri-twice',
    'The verifier serves its request object again when request_uri is fetched twice',
    {
      sources: [`${P}-5.10`, '@RFC9101-5.2'],
      passes:
        'passes when a second fetch of request_uri answers a request object and the presentation that follows is accepted; not applicable when the request is passed by value',
    },
  ),
  verifierCase(
    'request-uri-post',
    'The verifier serves its request object to a POST on request_uri (request_uri_method=post)',
    {
      sources: [`${P}-5.10`, `${P}-5.10.1`],
      applies: 'the request says request_uri_method=post',
    },
  ),
  verifierCase('response-replayed', 'The verifier refuses the same authorization response posted again', {
    sources: [`${P}-14.1`, `${P}-8.2`],
    rule: 'an authorization response the verifier already accepted is posted to its response_uri again',
    expect: 'refuse',
    passes:
      'passes when the first answer is accepted and the second post of the same response is refused (4xx); fails when the verifier answers it 2xx',
  }),
  verifierCase(
    'vp-foreign-key',
    "The verifier refuses a presentation signed by a key that is not the holder's",
    {
      sources: ['@VC-DM-1.1-7.1', `${P}-14.1`],
      rule: "the presentation is signed by another key than the credential subject's",
      misbehave: 'vp-foreign-key',
      applies: JWT_VP,
    },
  ),
  verifierCase('vp-wrong-nonce', 'The verifier refuses a presentation bound to another nonce', {
    sources: [`${P}-14.1`, `${P}-B.1.3.1.5`],
    rule: "the presentation carries another nonce than the request's",
    misbehave: 'vp-wrong-nonce',
    applies: JWT_VP,
  }),
  verifierCase('vp-wrong-aud', 'The verifier refuses a presentation bound to another audience', {
    sources: [`${P}-14.1`, `${P}-B.1.3.1.5`],
    rule: "the presentation's aud (domain) is not the verifier's client_id",
    misbehave: 'vp-wrong-aud',
    applies: JWT_VP,
  }),
  verifierCase('vp-replayed', 'The verifier refuses a presentation made for an earlier request', {
    sources: [`${P}-14.1`],
    rule: 'the VP answered to an earlier request is sent again to a new one',
    misbehave: 'vp-replayed',
    applies: PE,
  }),
  verifierCase(
    'tampered-credential',
    'The verifier refuses a credential whose content was changed after signing',
    {
      sources: ['@VC-JOSE-COSE-3.1', '@RFC9901-7.1'],
      rule: "the presented credential's content no longer matches its issuer's signature",
      misbehave: 'tampered-credential',
      applies: JWT_VP,
    },
  ),
  verifierCase('untrusted-issuer', 'The verifier refuses a credential from an issuer it does not trust', {
    sources: [`${P}-14.1`, '@HAIP-1.0-6'],
    rule: 'the presented credential is signed by an issuer the verifier was not told to trust',
    misbehave: 'untrusted-issuer',
    applies: JWT_VP,
  }),
  verifierCase('revoked-credential', 'The verifier refuses a revoked credential', {
    sources: ['@VC-BITSTRING-STATUS-LIST-1.0-3.2'],
    rule: "the presented credential's status list entry says revoked",
    misbehave: 'revoked-credential',
    applies: `${PE} and the wallet holds a credential its issuer revoked (the harness's test issuer revokes one)`,
  }),
  verifierCase(
    'lying-submission',
    'The verifier refuses a presentation_submission that does not describe the VP',
    {
      sources: ['@DIF-PE-2.0-6'],
      rule: 'the presentation_submission maps a descriptor to a path that holds no matching credential',
      misbehave: 'lying-submission',
      applies: PE,
    },
  ),
  verifierCase(
    'vp-token-wrong-id',
    'The verifier refuses a vp_token keyed by an id its DCQL query does not have',
    {
      sources: [`${P}-8.1`, `${P}-6`],
      rule: 'the vp_token entry is keyed by a credential query id that the DCQL query does not have',
      misbehave: 'vp-token-wrong-id',
      applies: V1,
    },
  ),
  verifierCase(
    'sd-tampered-disclosure',
    'The verifier refuses an SD-JWT VC with a disclosure changed after issuance',
    {
      sources: ['@RFC9901-7.1', `${P}-B.3.6`],
      rule: 'a disclosure no longer hashes to a digest of the issuer-signed JWT',
      misbehave: 'sd-tampered-disclosure',
      applies: SD,
    },
  ),
  verifierCase(
    'sd-issuer-signature',
    'The verifier refuses an SD-JWT VC whose issuer signature does not verify',
    {
      sources: ['@RFC9901-7.1', '@SD-JWT-VC-3.5'],
      rule: "the issuer-signed JWT's signature does not verify",
      misbehave: 'sd-issuer-signature',
      applies: SD,
    },
  ),
  verifierCase('kb-missing', 'The verifier refuses an SD-JWT VC presented without key binding', {
    sources: [`${P}-B.3.6`, '@RFC9901-4.3'],
    rule: 'the SD-JWT VC presentation carries no KB-JWT although the credential is key-bound',
    misbehave: 'kb-missing',
    applies: SD,
  }),
  verifierCase('kb-wrong-sd-hash', "The verifier refuses a KB-JWT whose sd_hash is not the presentation's", {
    sources: ['@RFC9901-4.3', '@RFC9901-7.3'],
    rule: "the KB-JWT's sd_hash is not the hash of the presented SD-JWT",
    misbehave: 'kb-wrong-sd-hash',
    applies: SD,
  }),
  verifierCase('kb-wrong-nonce', "The verifier refuses a KB-JWT whose nonce is not the request's", {
    sources: [`${P}-B.3.6`, '@RFC9901-7.3'],
    rule: "the KB-JWT's nonce is not the request's nonce",
    misbehave: 'kb-wrong-nonce',
    applies: SD,
  }),
  verifierCase('kb-wrong-aud', 'The verifier refuses a KB-JWT whose aud is not its client_id', {
    sources: [`${P}-B.3.6`, '@RFC9901-7.3'],
    rule: "the KB-JWT's aud is not the verifier's client_id",
    misbehave: 'kb-wrong-aud',
    applies: SD,
  }),
  verifierCase('kb-stale-iat', 'The verifier refuses a KB-JWT issued an hour ago', {
    sources: [`${P}-B.3.6`, '@RFC9901-7.3'],
    rule: "the KB-JWT's iat is an hour in the past",
    misbehave: 'kb-stale-iat',
    applies: SD,
  }),
  verifierCase('kb-future-iat', 'The verifier refuses a KB-JWT issued an hour in the future', {
    sources: [`${P}-B.3.6`, '@RFC9901-7.3'],
    rule: "the KB-JWT's iat is an hour in the future",
    misbehave: 'kb-future-iat',
    applies: SD,
  }),
  verifierCase('kb-bad-signature', "The verifier refuses a KB-JWT not signed by the credential's key", {
    sources: ['@RFC9901-4.3', '@RFC9901-7.3'],
    rule: "the KB-JWT is signed by another key than the credential's cnf key",
    misbehave: 'kb-bad-signature',
    applies: SD,
  }),
  verifierCase(
    'plain-response',
    'The verifier refuses an unencrypted response to a direct_post.jwt request',
    {
      sources: [`${P}-8.3`, '@HAIP-1.0-5'],
      rule: 'the response is posted as a plain direct_post form although the request asked for direct_post.jwt',
      misbehave: 'plain-response',
      applies: 'the request asks for response_mode direct_post.jwt',
    },
  ),
  verifierCase('jwe-wrong-key', 'The verifier refuses a response encrypted to another key', {
    sources: [`${P}-8.3`, '@RFC7516-5.2'],
    rule: "the response JWE is encrypted to a key that is not the verifier's",
    misbehave: 'jwe-wrong-key',
    applies: 'the request asks for response_mode direct_post.jwt',
  }),
  // ISO mdocs (OpenID4VP 1.0 Appendix B.2): a DeviceResponse whose deviceSignature covers DeviceAuthentication
  // over the exchange's SessionTranscript (B.2.6.1: the OpenID4VPHandover of client_id, nonce, the response
  // encryption key's thumbprint and response_uri). mdoc-extra-element (one element more than the query
  // selects) has no case: §6.4's data minimisation is the wallet's duty, and a verifier that accepts the
  // extra element breaks no rule (our own service accepts it with a warning under matchingIds).
  verifierCase(
    'mdoc-happy-flow',
    'The verifier accepts a valid mdoc DeviceResponse bound to its SessionTranscript',
    {
      sources: [`${P}-B.2.6`, `${P}-B.2.6.1`, `${ISO}-9.1.3.6`, `${ISO}-9.3.1`],
      applies: MDOC,
    },
  ),
  verifierCase(
    'mdoc-wrong-nonce',
    'The verifier refuses an mdoc whose device signature covers a SessionTranscript with another nonce',
    {
      sources: [`${P}-B.2.6.1`, `${ISO}-9.1.3.6`, `${P}-14.1`],
      rule: "the SessionTranscript the deviceSignature covers binds another nonce than the request's",
      misbehave: 'mdoc-wrong-nonce',
      applies: MDOC,
    },
  ),
  verifierCase(
    'mdoc-wrong-client-id',
    'The verifier refuses an mdoc whose device signature covers a SessionTranscript with another client_id',
    {
      sources: [`${P}-B.2.6.1`, `${ISO}-9.1.3.6`],
      rule: "the SessionTranscript the deviceSignature covers binds another client_id than the verifier's (the identifier without its prefix)",
      misbehave: 'mdoc-wrong-client-id',
      applies: MDOC,
    },
  ),
  verifierCase(
    'mdoc-wrong-response-uri',
    'The verifier refuses an mdoc whose device signature covers a SessionTranscript with another response_uri',
    {
      sources: [`${P}-B.2.6.1`, `${ISO}-9.1.3.6`],
      rule: "the SessionTranscript the deviceSignature covers binds another response_uri than the request's",
      misbehave: 'mdoc-wrong-response-uri',
      applies: MDOC,
    },
  ),
  verifierCase(
    'mdoc-foreign-device-key',
    "The verifier refuses an mdoc whose device signature is not made by the MSO's device key",
    {
      sources: [`${ISO}-9.1.3.6`, `${ISO}-9.1.2.4`, `${P}-B.2.6`],
      rule: "the deviceSignature is made by another key than the MSO's deviceKeyInfo.deviceKey",
      misbehave: 'mdoc-foreign-device-key',
      applies: MDOC,
    },
  ),
  verifierCase(
    'mdoc-tampered-element',
    'The verifier refuses an mdoc element whose value does not match its digest in the MSO',
    {
      sources: [`${ISO}-9.3.1`, `${ISO}-9.1.2.4`, `${P}-B.2.6`],
      rule: "a disclosed element's value was changed after issuance: its digest is not the one the MSO's valueDigests hold",
      misbehave: 'mdoc-tampered-element',
      applies: MDOC,
    },
  ),
  // OpenID4VP 1.0 over the W3C Digital Credentials API (Appendix A): the harness plays the browser and the
  // platform, hands the verifier's request entry and the origin to its wallet and posts the answer back with
  // that origin. Every presentation must be bound to `origin:<origin>` (A.4; an mdoc's OpenID4VPDCAPIHandover,
  // B.2.6.2), never to the client_id, even for a signed request.
  verifierCase(
    'dc-api-happy-flow',
    'The verifier accepts a valid answer over the Digital Credentials API, bound to the calling origin',
    {
      sources: [`${P}-A.2`, `${P}-A.4`, `${P}-B.2.6.2`],
      applies: DC_API,
    },
  ),
  verifierCase(
    'dc-api-foreign-origin',
    'The verifier refuses an answer over the DC API bound to another origin than the calling one',
    {
      sources: [`${P}-A.4`, `${P}-B.2.6.2`],
      rule: 'every presentation is bound to origin:https://attacker.example, not to the origin the answer came from',
      misbehave: 'dc-api-foreign-origin',
      applies: DC_API,
    },
  ),
  verifierCase(
    'dc-api-client-id-audience',
    'The verifier refuses an answer over the DC API bound to the client_id instead of the origin (missing origin binding)',
    {
      sources: [`${P}-A.4`, `${P}-B.2.6.2`],
      rule: "the presentations are bound to the request's client_id (an mdoc: the redirect flow's OpenID4VPHandover), not to origin:<origin>, which A.4 requires even for signed requests",
      misbehave: 'dc-api-client-id-audience',
      applies: DC_API,
    },
  ),
  verifierCase(
    'dc-api-wrong-request',
    'The verifier refuses an answer over the DC API made for another request',
    {
      sources: [`${P}-A.4`, `${P}-14.1`],
      rule: "every presentation carries another nonce than the request's",
      misbehave: 'dc-api-wrong-request',
      applies: DC_API,
    },
  ),
  verifierCase(
    'ldp-undefined-term',
    'The verifier refuses a Linked Data presentation with a term no context defines',
    {
      sources: ['@VC-DATA-INTEGRITY-1.0-4.3', '@JSON-LD-1.1-9.3'],
      rule: 'the ldp_vp carries a property no @context defines, added after signing',
      misbehave: 'ldp-undefined-term',
      applies: 'the request asks for a Linked Data presentation (ldp_vp)',
    },
  ),
]

const PLAN_CASES: Record<ServerPlan, readonly ServerCase[]> = {
  issuer: ISSUER_CASES,
  verifier: VERIFIER_CASES,
}

export function serverPlanCases(plan: ServerPlan): readonly ServerCase[] {
  return PLAN_CASES[plan]
}

export function isServerPlan(value: unknown): value is ServerPlan {
  return typeof value === 'string' && (SERVER_PLANS as readonly string[]).includes(value)
}
