// What a misbehaving wallet can do wrong. Each misbehaviour changes exactly one thing of an otherwise correct
// request; src/wallet/README.md has the tables, test/wallet/receive-unit.test.ts (issuance) and
// test/wallet/present-unit.test.ts (presentation) prove each one.
//
// Issuance and presentation misbehaviours are two separate lists with disjoint names: passing one to the
// other flow is a TypeError that says which flow it belongs to, never a silently ignored option. Two that
// change the same thing (the proof's iat; a KB-JWT that one of them leaves out) are a WalletUsageError
// together (CONFLICTING_MISBEHAVIOURS, LEAVE_OUT_MISBEHAVIOURS): one would silently undo the other.

import { WalletUsageError } from './errors.ts'

/** Misbehaviours of the OpenID4VCI issuance flow (`receive`, `IssuanceSession`). */
export const MISBEHAVIOURS = [
  'wrong-nonce',
  'replayed-nonce',
  'bad-signature',
  'wrong-aud',
  'expired-iat',
  'future-iat',
  'replayed-code',
  'wrong-tx-code',
  'foreign-kid',
  'missing-tx-code',
  'jwk-with-private-key',
  'wrong-typ',
  'alg-none',
  // the key attestation of a jwt proof (OpenID4VCI 1.0 Appendix D.1, F.1; 1.0 path only)
  'key-attestation-foreign-key',
  // legacy request shapes sent to an OpenID4VCI 1.0 issuer on purpose (1.0 path only)
  'legacy-proof',
  'legacy-format-request',
  // the credential request around the proof
  'missing-proof',
  'unknown-configuration',
  'unknown-credential-identifier',
  'token-in-query',
] as const

export type Misbehaviour = (typeof MISBEHAVIOURS)[number]

/** Misbehaviours of the token request. */
export const TOKEN_MISBEHAVIOURS: readonly Misbehaviour[] = [
  'replayed-code',
  'wrong-tx-code',
  'missing-tx-code',
]
/**
 * Misbehaviours that change the key proof, the nonce it carries or the member that carries it: 'missing-proof'
 * sends none, so it combines with none of them (LEAVE_OUT_MISBEHAVIOURS).
 */
export const PROOF_MISBEHAVIOURS: readonly Misbehaviour[] = [
  'wrong-nonce',
  'replayed-nonce',
  'bad-signature',
  'wrong-aud',
  'expired-iat',
  'future-iat',
  'foreign-kid',
  'jwk-with-private-key',
  'wrong-typ',
  'alg-none',
  'key-attestation-foreign-key',
  'legacy-proof',
]
/**
 * Misbehaviours a `jwt` proof can show but a `di_vp` proof cannot (it has no JOSE header), nor the
 * `attestation` proof type (a key attestation alone, Appendix F.3: no proof JWT of the holder key).
 */
export const JWT_ONLY_MISBEHAVIOURS: readonly Misbehaviour[] = [
  'jwk-with-private-key',
  'wrong-typ',
  'alg-none',
  'key-attestation-foreign-key',
]

/**
 * What 'key-attestation-foreign-key' changes (everything else is correct): CLI and README text. The issuer
 * must refuse it with invalid_proof (Appendix D.1: "the JWT used as a proof is signed by a key contained in
 * the attestation").
 */
export const KEY_ATTESTATION_FOREIGN_KEY_HELP =
  "the jwt proof's key_attestation header carries a key attestation by the wallet's provider (with the c_nonce and the key_storage / user_authentication asked for) of a freshly generated key, not of the key that signs the proof (OpenID4VCI 1.0 Appendix D.1, F.1); sent even where the configuration asks for no key attestation"

/**
 * Misbehaviours the wallet speaks on its OpenID4VCI 1.0 path only: 'legacy-proof' sends the draft singular
 * `proof` where 1.0 §8.2 has only `proofs`; 'legacy-format-request' identifies the credential the draft-13/14
 * way (`format` + `credential_definition` / `vct`) instead of `credential_configuration_id`;
 * 'key-attestation-foreign-key' changes a key attestation, which the wallet sends on the 1.0 path only
 * (Appendix D, with the `attestation` proof type and batches).
 */
export const V1_ONLY_MISBEHAVIOURS: readonly Misbehaviour[] = [
  'legacy-proof',
  'legacy-format-request',
  'key-attestation-foreign-key',
]

/**
 * Misbehaviours of the authorization code flow (OpenID4VCI 1.0 §5, §6 as HAIP 1.0 profiles it: PAR, PKCE, DPoP,
 * wallet attestation). A list of their own, not in MISBEHAVIOURS: they have nothing to act on in a
 * pre-authorized code issuance (refused there with a WalletUsageError before anything is sent), and the
 * pre-authorized ones' tables stay what they are. issuance-authorization.ts applies them
 * (authorization-tamper.ts); AUTHORIZATION_MISBEHAVIOUR_HELP says what each one changes.
 */
export const AUTHORIZATION_MISBEHAVIOURS = [
  'pkce-verifier-mismatch',
  'code-replay',
  'dpop-wrong-htu',
  'dpop-wrong-htm',
  'dpop-replayed-jti',
  'dpop-token-as-bearer',
  'attestation-untrusted-provider',
  'attestation-pop-wrong-aud',
  'authorization-wrong-redirect-uri',
] as const

export type AuthorizationMisbehaviour = (typeof AUTHORIZATION_MISBEHAVIOURS)[number]
/** Any misbehaviour of an issuance: the pre-authorized ones and the authorization code flow's. */
export type IssuanceMisbehaviour = Misbehaviour | AuthorizationMisbehaviour

/** What each authorization code flow misbehaviour changes (everything else is correct): CLI and README text. */
export const AUTHORIZATION_MISBEHAVIOUR_HELP: Readonly<Record<AuthorizationMisbehaviour, string>> = {
  'pkce-verifier-mismatch':
    'the token request carries a fresh code_verifier, not the one whose S256 challenge went with the pushed authorization request (RFC 7636 §4.5, §4.6)',
  'code-replay':
    'after a successful token request the authorization code is redeemed a second time (fresh DPoP proof and attestation PoP); the second answer is reported (RFC 6749 §4.1.2, §10.5)',
  'dpop-wrong-htu':
    "the token request's DPoP proof names the token endpoint with /elsewhere appended as htu (RFC 9449 §4.2, §4.3 step 9)",
  'dpop-wrong-htm': "the token request's DPoP proof says htm GET for the POST (RFC 9449 §4.2, §4.3 step 8)",
  'dpop-replayed-jti':
    "the token request's DPoP proof carries the jti of the wallet's previous DPoP proof, the one sent to the same authorization server with the pushed authorization request (RFC 9449 §4.2, §11.1)",
  'dpop-token-as-bearer':
    'the credential request presents the DPoP-bound access token with Authorization: Bearer (its DPoP proof, with ath, still sent) (RFC 9449 §7.1, §7.2)',
  'attestation-untrusted-provider':
    'the wallet attestation is signed by a freshly generated wallet provider key (its own kid and iss), one no authorization server trusts (draft-ietf-oauth-attestation-based-client-auth-07 §5.1, §6.2)',
  'attestation-pop-wrong-aud':
    "the attestation PoP's aud is https://wrong-audience.invalid, not the authorization server's issuer identifier (draft-ietf-oauth-attestation-based-client-auth-07 §5.2)",
  'authorization-wrong-redirect-uri':
    'the token request names the redirect_uri of the pushed authorization request with /elsewhere appended (RFC 6749 §4.1.3)',
}

/** 'dpop-wrong-htu' and 'authorization-wrong-redirect-uri' append this path to the right URI: same origin, another URI. */
export const WRONG_URI_SUFFIX = '/elsewhere'

/**
 * Presentation misbehaviours that only mean something in an OpenID4VP 1.0 answer: the SD-JWT VC presentation
 * and its key-binding JWT (1.0 Appendix B.3.6), the encrypted response (§8.3), the DCQL vp_token (§8.1) and an
 * mdoc's DeviceResponse (Appendix B.2.6).
 * Passed to a Presentation Exchange (draft 20) answer they are a WalletUsageError.
 */
const V1_ONLY = [
  'sd-tampered-disclosure',
  'sd-extra-disclosure',
  'kb-wrong-sd-hash',
  'kb-wrong-nonce',
  'kb-wrong-aud',
  'kb-stale-iat',
  'kb-missing',
  'plain-response',
  'vp-token-wrong-id',
  'kb-bad-signature',
  'kb-future-iat',
  'sd-issuer-signature',
  'jwe-wrong-key',
  // an mdoc's DeviceResponse (1.0 Appendix B.2.6): MDOC_PRESENTATION_MISBEHAVIOURS
  'mdoc-wrong-nonce',
  'mdoc-wrong-client-id',
  'mdoc-wrong-response-uri',
  'mdoc-tampered-element',
  'mdoc-extra-element',
  'mdoc-foreign-device-key',
  // an answer over the Digital Credentials API (1.0 Appendix A): DC_API_PRESENTATION_MISBEHAVIOURS
  'dc-api-foreign-origin',
  'dc-api-client-id-audience',
  'dc-api-wrong-request',
  'dc-api-ignore-expected-origins',
] as const
export type V1OnlyPresentationMisbehaviour = (typeof V1_ONLY)[number]
export const V1_ONLY_PRESENTATION_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = V1_ONLY

/** Misbehaviours of the OpenID4VP presentation flow (`present`, `PresentationSession.respond`). */
export const PRESENTATION_MISBEHAVIOURS = [
  'vp-wrong-nonce',
  'vp-wrong-aud',
  'vp-foreign-key',
  'vp-replayed',
  'tampered-credential',
  'untrusted-issuer',
  'revoked-credential',
  'expired-session',
  'lying-submission',
  'access-denied',
  // ldp_vp only: a property no context defines, added after signing (JSON-LD safe mode)
  'ldp-undefined-term',
  // OpenID4VP 1.0 answers only (DCQL vp_token, SD-JWT VC presentations, direct_post.jwt)
  ...V1_ONLY,
] as const

export type PresentationMisbehaviour = (typeof PRESENTATION_MISBEHAVIOURS)[number]

/**
 * Presentation misbehaviours of the Presentation Exchange answer that a 1.0 answer has no place for: no
 * presentation_submission to lie in, no Bitstring status list read, no remembered JWT VP to replay.
 */
export const PE_ONLY_PRESENTATION_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'lying-submission',
  'revoked-credential',
  'vp-replayed',
]

/** 1.0 misbehaviours of an SD-JWT VC presentation: the first dc+sd-jwt presentation of the answer carries them. */
export const SD_JWT_PRESENTATION_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'sd-tampered-disclosure',
  'sd-extra-disclosure',
  'kb-wrong-sd-hash',
  'kb-wrong-nonce',
  'kb-wrong-aud',
  'kb-stale-iat',
  'kb-missing',
  'kb-bad-signature',
  'kb-future-iat',
  'sd-issuer-signature',
]

/**
 * 1.0 misbehaviours of an mdoc presentation (a DeviceResponse, Appendix B.2.6): the first mso_mdoc
 * presentation of the answer carries them. Three change one member of the OpenID4VPHandover its
 * SessionTranscript binds (B.2.6.1), one the device signature's key, two the IssuerSignedItems disclosed.
 */
export const MDOC_PRESENTATION_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'mdoc-wrong-nonce',
  'mdoc-wrong-client-id',
  'mdoc-wrong-response-uri',
  'mdoc-tampered-element',
  'mdoc-extra-element',
  'mdoc-foreign-device-key',
]

/**
 * 1.0 misbehaviours of an answer over the Digital Credentials API (Appendix A, Wallet.presentDcApi): how every
 * presentation is bound to the calling origin (A.4, B.2.6.2), which request it answers, and the wallet's own
 * expected_origins check (A.2). Asked of a request by link they are a WalletUsageError before anything is
 * fetched; DC_API_MISBEHAVIOUR_HELP says what each one changes.
 */
export const DC_API_PRESENTATION_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'dc-api-foreign-origin',
  'dc-api-client-id-audience',
  'dc-api-wrong-request',
  'dc-api-ignore-expected-origins',
]

/** 'dc-api-foreign-origin' binds every presentation to this origin instead of the caller's. */
export const FOREIGN_ORIGIN = 'https://attacker.example'

/** What each DC API misbehaviour changes (everything else is correct): CLI and README text. */
export const DC_API_MISBEHAVIOUR_HELP: Readonly<Record<string, string>> = {
  'dc-api-foreign-origin': `every presentation is bound to the origin ${FOREIGN_ORIGIN} instead of the caller's: KB-JWT and JWT VP aud, ldp_vp domain origin:${FOREIGN_ORIGIN}, an mdoc's OpenID4VPDCAPIHandover of that origin (OpenID4VP 1.0 Appendix A.4, B.2.6.2)`,
  'dc-api-client-id-audience':
    "the presentations are bound as if the request had not come over the DC API (missing origin binding): aud / domain the request's client_id (an unsigned request, which has none: the origin without origin:), an mdoc's OpenID4VPHandover of the redirect flow (that client_id, the nonce, the thumbprint, the origin as response_uri) (Appendix A.4, B.2.6.2)",
  'dc-api-wrong-request':
    'the answer is one made for another request: every presentation carries a fresh random nonce (KB-JWT / JWT VP nonce, ldp_vp challenge, the mdoc handover); the request’s nonce is not remembered as answered (§14.1)',
  'dc-api-ignore-expected-origins':
    "a signed request whose expected_origins do not contain the caller's origin (or lack them) is answered instead of refused (Appendix A.2); asked of an unsigned request, or of one whose expected_origins hold the origin: WalletUsageError",
}

/**
 * The misbehaviours that change the KB-JWT: 'kb-missing' sends none, so it combines with none of them
 * (LEAVE_OUT_MISBEHAVIOURS).
 */
export const KB_JWT_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'kb-wrong-sd-hash',
  'kb-wrong-nonce',
  'kb-wrong-aud',
  'kb-stale-iat',
  'kb-bad-signature',
  'kb-future-iat',
]

/** Misbehaviours of a JWT VP (jwt_vp_json): on the 1.0 path the first jwt_vc_json presentation carries them. */
export const JWT_VP_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'vp-wrong-nonce',
  'vp-wrong-aud',
  'vp-foreign-key',
  'tampered-credential',
  'untrusted-issuer',
]

/**
 * Misbehaviours of a Linked Data presentation (ldp_vp): what it presents and how its proof is bound. All but
 * 'ldp-undefined-term' are the JWT VP's too, with the same meaning (nonce → proof challenge, aud → proof
 * domain, the JWT VP's signer → the proof's verificationMethod); on the 1.0 path they change the first
 * presentation of the vp_token that is a JWT VP or an ldp_vp.
 */
export const LDP_VP_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'vp-wrong-nonce',
  'vp-wrong-aud',
  'vp-foreign-key',
  'tampered-credential',
  'untrusted-issuer',
  'ldp-undefined-term',
]

/**
 * Presentation misbehaviours that replace the whole answer, so they combine with nothing but
 * 'expired-session' (which changes no byte on the wire).
 */
export const EXCLUSIVE_PRESENTATION_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'vp-replayed',
  'access-denied',
]

/**
 * Presentation misbehaviours after which the answer does not carry the request's nonce (another nonce, or
 * an earlier VP): the request's nonce is then not remembered as answered (OpenID4VP 1.0 §14.1).
 */
export const NONCE_LESS_PRESENTATION_MISBEHAVIOURS: readonly PresentationMisbehaviour[] = [
  'vp-replayed',
  'vp-wrong-nonce',
  'kb-wrong-nonce',
  'mdoc-wrong-nonce',
  'dc-api-wrong-request',
]

type AnyMisbehaviour = Misbehaviour | PresentationMisbehaviour

/**
 * Misbehaviours that exclude each other: each group sets one thing to values that cannot both be on the wire
 * (two `iat` values, two names of the credential). At most one of a group; asked together: WalletUsageError.
 */
export const CONFLICTING_MISBEHAVIOURS: readonly {
  readonly misbehaviours: readonly AnyMisbehaviour[]
  /** what they all set */
  readonly change: string
}[] = [
  { misbehaviours: ['expired-iat', 'future-iat'], change: "the key proof's iat (di_vp: created)" },
  { misbehaviours: ['wrong-tx-code', 'missing-tx-code'], change: "the token request's tx_code" },
  {
    misbehaviours: ['unknown-configuration', 'unknown-credential-identifier', 'legacy-format-request'],
    change: 'how the credential request names the credential',
  },
  { misbehaviours: ['kb-stale-iat', 'kb-future-iat'], change: "the KB-JWT's iat" },
  { misbehaviours: ['plain-response', 'jwe-wrong-key'], change: 'how a direct_post.jwt answer is encrypted' },
  {
    misbehaviours: ['dc-api-foreign-origin', 'dc-api-client-id-audience'],
    change: 'the audience and the mdoc handover every presentation over the DC API is bound to',
  },
]

/**
 * A misbehaviour that leaves a part out, and those that change that part: they have nothing to change then,
 * so asked together they are a WalletUsageError (the misbehaviours that change it combine with each other).
 */
export const LEAVE_OUT_MISBEHAVIOURS: readonly {
  readonly leavesOut: AnyMisbehaviour
  readonly part: string
  readonly changing: readonly AnyMisbehaviour[]
}[] = [
  { leavesOut: 'missing-proof', part: 'key proof', changing: PROOF_MISBEHAVIOURS },
  { leavesOut: 'kb-missing', part: 'KB-JWT', changing: KB_JWT_MISBEHAVIOURS },
]

/** The `aud` (jwt proof, VP) or `domain` (di_vp) of the 'wrong-aud' and 'vp-wrong-aud' misbehaviours. */
export const WRONG_AUDIENCE = 'https://wrong-audience.invalid'
/** How far in the past 'expired-iat' puts `iat` (jwt) or `created` (di_vp), and 'kb-stale-iat' the KB-JWT `iat`. */
export const EXPIRED_IAT_SECONDS = 3600
/** How far in the future 'future-iat' puts `iat` (jwt) or `created` (di_vp), and 'kb-future-iat' the KB-JWT `iat`. */
export const FUTURE_IAT_SECONDS = 3600
/**
 * 'unknown-configuration' names the configuration `<the requested id><this suffix>`, and
 * 'unknown-credential-identifier' sends `credential_identifier` `<the requested configuration id><this suffix>`.
 */
export const UNKNOWN_ID_SUFFIX = '-unknown-vc-harness'
/** 'vp-token-wrong-id' keys the first vp_token entry under its credential query id with this suffix. */
export const WRONG_QUERY_ID_SUFFIX = '_unrequested'
/** 'mdoc-wrong-response-uri' binds the response_uri with this path segment added: same origin, another URI. */
export const WRONG_RESPONSE_URI_SUFFIX = '/elsewhere'

export function isMisbehaviour(value: unknown): value is Misbehaviour {
  return typeof value === 'string' && (MISBEHAVIOURS as readonly string[]).includes(value)
}

export function isPresentationMisbehaviour(value: unknown): value is PresentationMisbehaviour {
  return typeof value === 'string' && (PRESENTATION_MISBEHAVIOURS as readonly string[]).includes(value)
}

/** Misbehaviours that exclude each other (CONFLICTING_MISBEHAVIOURS, LEAVE_OUT_MISBEHAVIOURS): WalletUsageError. */
function assertCompatible(list: readonly AnyMisbehaviour[]): void {
  for (const { misbehaviours, change } of CONFLICTING_MISBEHAVIOURS) {
    const asked = misbehaviours.filter((m) => list.includes(m))
    if (asked.length > 1) {
      throw new WalletUsageError(
        `misbehaviours ${asked.join(' and ')} both set ${change}: ask for one of them at a time`,
      )
    }
  }
  for (const { leavesOut, part, changing } of LEAVE_OUT_MISBEHAVIOURS) {
    const asked = changing.filter((m) => list.includes(m))
    if (list.includes(leavesOut) && asked.length > 0) {
      throw new WalletUsageError(
        `misbehaviour ${leavesOut} sends no ${part}, so ${asked.join(', ')} would change nothing: ask for them separately`,
      )
    }
  }
}

/**
 * Checks issuance misbehaviours; a presentation misbehaviour or an unknown name is a TypeError, two that
 * exclude each other (CONFLICTING_MISBEHAVIOURS) a WalletUsageError.
 */
export function assertMisbehaviours(values: readonly unknown[] | undefined): readonly Misbehaviour[] {
  const list = values ?? []
  for (const value of list) {
    if (isMisbehaviour(value)) continue
    if (isPresentationMisbehaviour(value)) {
      throw new TypeError(
        `misbehaviour ${JSON.stringify(value)} belongs to the presentation flow (present, respond), not to issuance; issuance misbehaviours: ${MISBEHAVIOURS.join(', ')}`,
      )
    }
    throw new TypeError(`unknown misbehaviour ${JSON.stringify(value)}; known: ${MISBEHAVIOURS.join(', ')}`)
  }
  assertCompatible(list as readonly Misbehaviour[])
  return list as readonly Misbehaviour[]
}

export function isAuthorizationMisbehaviour(value: unknown): value is AuthorizationMisbehaviour {
  return typeof value === 'string' && (AUTHORIZATION_MISBEHAVIOURS as readonly string[]).includes(value)
}

/**
 * Checks issuance misbehaviours of either flow and splits them: `common` (checked by assertMisbehaviours) and
 * `authorization` (the authorization code flow's). An unknown name is a TypeError listing both lists.
 */
export function splitIssuanceMisbehaviours(values: readonly unknown[] | undefined): {
  common: readonly Misbehaviour[]
  authorization: readonly AuthorizationMisbehaviour[]
} {
  const list = values ?? []
  const authorization = list.filter(isAuthorizationMisbehaviour)
  const rest = list.filter((m) => !isAuthorizationMisbehaviour(m))
  const unknown = rest.find((m) => !isMisbehaviour(m) && !isPresentationMisbehaviour(m))
  if (unknown !== undefined) {
    throw new TypeError(
      `unknown misbehaviour ${JSON.stringify(unknown)}; known: ${[...MISBEHAVIOURS, ...AUTHORIZATION_MISBEHAVIOURS].join(', ')}`,
    )
  }
  return { common: assertMisbehaviours(rest), authorization }
}

/**
 * Checks presentation misbehaviours; an issuance misbehaviour or an unknown name is a TypeError, two that
 * exclude each other (CONFLICTING_MISBEHAVIOURS) a WalletUsageError.
 */
export function assertPresentationMisbehaviours(
  values: readonly unknown[] | undefined,
): readonly PresentationMisbehaviour[] {
  const list = values ?? []
  for (const value of list) {
    if (isPresentationMisbehaviour(value)) continue
    if (isMisbehaviour(value)) {
      const twin = `vp-${value}`
      throw new TypeError(
        `misbehaviour ${JSON.stringify(value)} belongs to the issuance flow (receive, IssuanceSession), not to presentation${isPresentationMisbehaviour(twin) ? ` (did you mean ${twin}?)` : ''}; presentation misbehaviours: ${PRESENTATION_MISBEHAVIOURS.join(', ')}`,
      )
    }
    throw new TypeError(
      `unknown presentation misbehaviour ${JSON.stringify(value)}; known: ${PRESENTATION_MISBEHAVIOURS.join(', ')}`,
    )
  }
  assertCompatible(list as readonly PresentationMisbehaviour[])
  return list as readonly PresentationMisbehaviour[]
}
