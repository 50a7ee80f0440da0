import { createPublicKey, type KeyObject } from 'node:crypto'
import { isObject } from '../json.ts'
import { decodeJws, type SignatureAlg, signJws } from '../jws.ts'
import {
  ATTESTATION_ALGS,
  type AttestationSigner,
  type WalletProviderTrust,
  walletProviderSignature,
} from './client-attestation.ts'

// Key attestations of OpenID4VCI 1.0 Appendix D, both sides: the wallet provider attests keys of the wallet's
// key storage (`attested_keys`, with `key_storage` and `user_authentication`, Appendix D.1); the wallet sends
// the attestation in the `key_attestation` header of a `jwt` key proof (Appendix F.1) or as the `attestation`
// proof type itself (Appendix F.3). The credential issuer checks it against the wallet providers it trusts, the
// same list as for wallet attestations (client-attestation.ts). Using a nonce (single use) is the caller's.

/** Appendix D.1: the `typ` of a key attestation. */
export const KEY_ATTESTATION_TYP = 'key-attestation+jwt'
/**
 * The `typ` of drafts 14/15 (Appendix D there), which @openid4vc/openid4vci 0.4.6 still writes: accepted, as
 * the claims are the same.
 */
export const KEY_ATTESTATION_TYP_DRAFT = 'keyattestation+jwt'
/** Appendix F.1: the JOSE header of a `jwt` proof that carries a key attestation. */
export const KEY_ATTESTATION_HEADER = 'key_attestation'
/** Appendix F.3: the proof type that is a key attestation. */
export const ATTESTATION_PROOF_TYPE = 'attestation'
/** Appendix D.2: the attack potential resistance values this specification defines. */
export const ISO_18045_LEVELS = [
  'iso_18045_high',
  'iso_18045_moderate',
  'iso_18045_enhanced-basic',
  'iso_18045_basic',
] as const

/** JWK members only a private key has: an attested key carrying them is refused. */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth']
const FUTURE_SKEW_SECONDS = 60
/** More keys than any batch_size (§12.2.4) this service allows: refused before each is parsed. */
const MAX_ATTESTED_KEYS = 100

/** What is wrong with a key attestation; `clause` is the OpenID4VCI 1.0 clause it breaks. */
export class KeyAttestationError extends Error {
  override name = 'KeyAttestationError'
  constructor(
    message: string,
    readonly clause: string,
  ) {
    super(`${message} (OpenID4VCI 1.0 ${clause})`)
  }
}

const fail = (message: string, clause = 'Appendix D.1') => new KeyAttestationError(message, clause)

/** Appendix D.1: the wallet provider's attestation of `attestedKeys` (public JWKs). */
export function createKeyAttestation(
  provider: AttestationSigner,
  claims: {
    attestedKeys: readonly Record<string, unknown>[]
    keyStorage?: readonly string[]
    userAuthentication?: readonly string[]
    /** A c_nonce of the credential issuer: required by the `attestation` proof type (Appendix F.3). */
    nonce?: string
    /** Seconds until `exp`; required with the `jwt` proof type (D.1). Default 3600; null: no `exp`. */
    lifetimeSeconds?: number | null
    now?: number
    certification?: string
    /** A status reference (D.1 `status`, e.g. a Token Status List entry). */
    status?: Record<string, unknown>
    /** The `typ` to write; default the 1.0 one. */
    typ?: string
    extra?: Record<string, unknown>
  },
): string {
  const iat = Math.floor((claims.now ?? Date.now()) / 1000)
  const header: { alg: SignatureAlg; [k: string]: unknown } = {
    typ: claims.typ ?? KEY_ATTESTATION_TYP,
    alg: provider.alg,
  }
  if (provider.kid) header.kid = provider.kid
  if (provider.x5c) header.x5c = provider.x5c
  const lifetime = claims.lifetimeSeconds === undefined ? 3600 : claims.lifetimeSeconds
  return signJws(
    header,
    {
      iss: provider.issuer,
      iat,
      ...(lifetime === null ? {} : { exp: iat + lifetime }),
      attested_keys: claims.attestedKeys.map((jwk) => ({ ...jwk })),
      ...(claims.keyStorage ? { key_storage: [...claims.keyStorage] } : {}),
      ...(claims.userAuthentication ? { user_authentication: [...claims.userAuthentication] } : {}),
      ...(claims.certification ? { certification: claims.certification } : {}),
      ...(claims.nonce ? { nonce: claims.nonce } : {}),
      ...(claims.status ? { status: claims.status } : {}),
      ...claims.extra,
    },
    provider.privateKey,
  )
}

/** What a credential issuer accepts in a key attestation. */
export interface KeyAttestationExpectation {
  /** The wallet providers trusted (tenants[].walletProviders, the test provider). */
  trust: readonly WalletProviderTrust[]
  now: number
  /** jwt: in a jwt proof's header (F.1, `exp` required); attestation: the proof itself (F.3, `nonce` required). */
  use: 'jwt' | 'attestation'
  /**
   * The configuration's proof_signing_alg_values_supported (F.1, F.3: the attestation's `alg` must be one);
   * only those a wallet provider signs with here (ES256, EdDSA) count. Default: those.
   */
  algorithms?: readonly SignatureAlg[]
  /** Accepted `key_storage` values (key_attestations_required, §12.2.4): the attestation must assert one. */
  keyStorage?: readonly string[]
  /** Accepted `user_authentication` values, likewise. */
  userAuthentication?: readonly string[]
  /** The `attestation` proof type: how old its `iat` may be (it is the key proof, Appendix F.4). */
  maxAgeSeconds?: number
}

/** An attested key: its JWK as attested and its public key. */
export interface AttestedKey {
  jwk: Record<string, unknown>
  publicKey: KeyObject
}

export interface VerifiedKeyAttestation {
  /** The wallet provider that signed it. */
  provider: string
  attestedKeys: AttestedKey[]
  keyStorage?: string[]
  userAuthentication?: string[]
  nonce?: string
  iat: number
  exp?: number
  certification?: string
  status?: Record<string, unknown>
}

const seconds = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined

/** D.1: a non-empty array of case sensitive strings, when present. */
function levels(payload: Record<string, unknown>, claim: string): string[] | undefined {
  const value = payload[claim]
  if (value === undefined) return undefined
  if (!Array.isArray(value) || value.length === 0 || !value.every((v) => typeof v === 'string')) {
    throw fail(`the key attestation's ${claim} must be a non-empty array of strings`)
  }
  return value as string[]
}

/** §12.2.4 key_attestations_required: the attestation asserts one of the values the issuer accepts. */
function meets(asserted: string[] | undefined, accepted: readonly string[] | undefined, claim: string) {
  if (!accepted?.length) return
  if (!asserted?.some((value) => accepted.includes(value))) {
    throw new KeyAttestationError(
      `the key attestation's ${claim} ${JSON.stringify(asserted ?? null)} asserts none of the values this credential configuration accepts (${accepted.join(', ')}, key_attestations_required)`,
      '§12.2.4',
    )
  }
}

function attestedKey(jwk: unknown, index: number): AttestedKey {
  const what = `attested_keys[${index}]`
  if (!isObject(jwk)) throw fail(`${what} is not a JWK`)
  if (PRIVATE_JWK_MEMBERS.some((m) => m in jwk)) {
    throw fail(
      `${what} carries private key material; it is refused (and the key should be considered compromised)`,
    )
  }
  try {
    return { jwk, publicKey: createPublicKey({ key: jwk as never, format: 'jwk' }) }
  } catch (error) {
    throw fail(`${what} is not a usable public key: ${(error as Error).message}`)
  }
}

/**
 * Appendix D.1 on a key attestation JWT: typed `key-attestation+jwt`, `alg` asymmetric and allowed, signed
 * by a trusted wallet provider (its `kid` JWK or an `x5c` chain to its anchors; `trust_chain` is not
 * supported), `iss` the provider's when it names one, `iat` present and not ahead, `exp` unpassed (required
 * in a jwt proof), `attested_keys` non-empty public JWKs, `key_storage` / `user_authentication` meeting the
 * issuer's accepted values, and in the `attestation` proof type a `nonce` (F.3; compared and used up by the
 * caller). Throws KeyAttestationError naming the clause.
 */
export async function verifyKeyAttestation(
  jwt: unknown,
  expected: KeyAttestationExpectation,
): Promise<VerifiedKeyAttestation> {
  const where = expected.use === 'jwt' ? 'Appendix F.1' : 'Appendix F.3'
  if (typeof jwt !== 'string' || jwt.length === 0) {
    throw fail(
      expected.use === 'jwt'
        ? 'the key_attestation header must be a key attestation JWT'
        : 'proofs.attestation must hold exactly one key attestation JWT',
      where,
    )
  }
  let header: Record<string, unknown>
  try {
    ;({ header } = decodeJws(jwt))
  } catch (error) {
    throw fail(`the key attestation is not a JWT: ${(error as Error).message}`)
  }
  if (header.typ !== KEY_ATTESTATION_TYP && header.typ !== KEY_ATTESTATION_TYP_DRAFT) {
    throw fail(
      `the key attestation's typ must be "${KEY_ATTESTATION_TYP}", got ${JSON.stringify(header.typ)}`,
    )
  }
  const algorithms = (expected.algorithms ?? ATTESTATION_ALGS).filter((alg) => ATTESTATION_ALGS.includes(alg))
  if (typeof header.alg !== 'string' || !(algorithms as readonly string[]).includes(header.alg)) {
    throw fail(
      `the key attestation's alg ${JSON.stringify(header.alg)} is not accepted; use one of ${algorithms.join(', ')} (proof_signing_alg_values_supported)`,
      where,
    )
  }
  if (header.trust_chain !== undefined) {
    throw fail(
      'a key attestation signed through an OpenID Federation trust_chain is not supported; use kid or x5c',
    )
  }
  if (isObject(header.jwk) && PRIVATE_JWK_MEMBERS.some((m) => m in (header.jwk as object))) {
    throw fail('the key attestation header carries private key material in jwk', 'Appendix F.4')
  }
  let signed: Awaited<ReturnType<typeof walletProviderSignature>>
  try {
    signed = await walletProviderSignature(jwt, header, expected.trust, expected.now, algorithms)
  } catch (error) {
    // A provider's configured key that is no key: the configuration's fault, named as such.
    throw fail(`a trusted wallet provider's key cannot be used: ${(error as Error).message}`)
  }
  if (!signed.provider) {
    const { problems } = signed
    throw fail(
      expected.trust.length === 0
        ? 'the key attestation cannot be checked: this issuer trusts no wallet provider (tenants[].walletProviders)'
        : `the key attestation is not signed by a wallet provider this issuer trusts${problems.length ? ` (${problems.slice(0, 3).join('; ')})` : ''}`,
    )
  }
  const { provider, payload } = signed
  if (provider.issuer !== undefined && payload.iss !== undefined && payload.iss !== provider.issuer) {
    throw fail(
      `the key attestation's iss ${JSON.stringify(payload.iss)} is not wallet provider ${provider.name}'s ${provider.issuer}`,
    )
  }
  const now = Math.floor(expected.now / 1000)
  const iat = seconds(payload.iat)
  if (iat === undefined) throw fail('the key attestation has no iat')
  if (iat > now + FUTURE_SKEW_SECONDS) throw fail(`the key attestation's iat is ${iat - now} s in the future`)
  if (expected.maxAgeSeconds !== undefined && iat < now - expected.maxAgeSeconds) {
    throw fail(
      `the key attestation's iat is ${now - iat} s old; at most ${expected.maxAgeSeconds} s is accepted`,
      'Appendix F.4',
    )
  }
  const exp = seconds(payload.exp)
  if (payload.exp !== undefined && exp === undefined) throw fail("the key attestation's exp is not a number")
  if (exp === undefined && expected.use === 'jwt') {
    throw fail(
      'the key attestation has no exp: it is required when the attestation is used with the jwt proof type',
    )
  }
  if (exp !== undefined && exp <= now) {
    throw fail(`the key attestation expired at ${new Date(exp * 1000).toISOString()}`)
  }
  const nbf = seconds(payload.nbf)
  if (nbf !== undefined && nbf > now + FUTURE_SKEW_SECONDS)
    throw fail('the key attestation is not valid yet (nbf)')
  const keys = payload.attested_keys
  if (!Array.isArray(keys) || keys.length === 0) {
    throw fail('the key attestation has no attested_keys (a non-empty array of JWKs)')
  }
  if (keys.length > MAX_ATTESTED_KEYS) {
    throw fail(`the key attestation attests ${keys.length} keys; at most ${MAX_ATTESTED_KEYS} are read`)
  }
  const attestedKeys = keys.map(attestedKey)
  const keyStorage = levels(payload, 'key_storage')
  const userAuthentication = levels(payload, 'user_authentication')
  meets(keyStorage, expected.keyStorage, 'key_storage')
  meets(userAuthentication, expected.userAuthentication, 'user_authentication')
  const nonce = payload.nonce
  if (nonce !== undefined && (typeof nonce !== 'string' || nonce.length === 0)) {
    throw fail("the key attestation's nonce must be a string")
  }
  if (nonce === undefined && expected.use === 'attestation') {
    throw fail(
      "the key attestation has no nonce: the attestation proof type carries the issuer's c_nonce in it (fetch one from the nonce endpoint)",
      'Appendix F.3',
    )
  }
  const { certification, status } = payload
  if (certification !== undefined && typeof certification !== 'string') {
    throw fail("the key attestation's certification must be a URL string")
  }
  if (status !== undefined && !isObject(status)) throw fail("the key attestation's status must be an object")
  return {
    provider: provider.name,
    attestedKeys,
    iat,
    ...(exp === undefined ? {} : { exp }),
    ...(keyStorage ? { keyStorage } : {}),
    ...(userAuthentication ? { userAuthentication } : {}),
    ...(typeof nonce === 'string' ? { nonce } : {}),
    ...(typeof certification === 'string' ? { certification } : {}),
    ...(isObject(status) ? { status } : {}),
  }
}
