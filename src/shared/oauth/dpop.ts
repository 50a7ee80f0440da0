import { createHash, createPublicKey, type KeyObject, randomBytes } from 'node:crypto'
import { isObject } from '../json.ts'
import { decodeJws, JwsError, jwkThumbprint, type SignatureAlg, signJws, verifyJws } from '../jws.ts'

// DPoP (RFC 9449) for both sides of the wire: the wallet makes proofs, the issuer checks them. The checks
// follow §4.3's list in order, so a refusal names the step that failed. Keeping the used jti values and the
// server nonces is the caller's (it has the store and the secret); this module is pure.

export const DPOP_TYP = 'dpop+jwt'
/** What a DPoP proof may be signed with here (HAIP 1.0 §4.1 asks for ES256; EdDSA for did:key wallets). */
export const DPOP_ALGS: readonly SignatureAlg[] = ['ES256', 'EdDSA']

/** `use_dpop_nonce` (§8, §9) asks the client to retry with the nonce in the DPoP-Nonce header. */
export type DpopErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce'

export class DpopError extends Error {
  override name = 'DpopError'
  constructor(
    readonly code: DpopErrorCode,
    message: string,
  ) {
    super(message)
  }
}

/** RFC 9449 §4.2 / RFC 9110: the request URI without query and fragment, for `htu`. */
export function htuOf(url: string): string {
  const parsed = new URL(url)
  return `${parsed.origin}${parsed.pathname}`
}

/** §4.2 `ath`: base64url SHA-256 of the ASCII access token. */
export const accessTokenHash = (token: string): string =>
  createHash('sha256').update(token, 'ascii').digest('base64url')

export interface DpopSigner {
  privateKey: KeyObject
  /** The public JWK that goes in the header (§4.2 `jwk`); never the private members. */
  publicJwk: Record<string, unknown>
  alg: SignatureAlg
}

export interface DpopClaims {
  htm: string
  htu: string
  nonce?: string
  /** Bound to this access token (`ath`) when it is used at a resource. */
  accessToken?: string
  /** Set only to misbehave (a replayed jti): fresh random by default. */
  jti?: string
  /** Seconds; now by default. */
  iat?: number
}

/** A DPoP proof JWT (§4.2). */
export function createDpopProof(signer: DpopSigner, claims: DpopClaims): string {
  const payload: Record<string, unknown> = {
    jti: claims.jti ?? randomBytes(16).toString('base64url'),
    htm: claims.htm,
    htu: htuOf(claims.htu),
    iat: claims.iat ?? Math.floor(Date.now() / 1000),
  }
  if (claims.nonce !== undefined) payload.nonce = claims.nonce
  if (claims.accessToken !== undefined) payload.ath = accessTokenHash(claims.accessToken)
  return signJws({ typ: DPOP_TYP, alg: signer.alg, jwk: signer.publicJwk }, payload, signer.privateKey)
}

export interface DpopExpectation {
  htm: string
  /** The URL of the request, as the client addressed it (the service's public URL of the endpoint). */
  htu: string
  /** The access token the request carries (§4.3 step 11: `ath` must match). */
  accessToken?: string
  now: number
  /** How old (or how far in the future) `iat` may be, in seconds (§11.1 "reasonable window"). */
  maxAgeSeconds: number
}

export interface VerifiedDpop {
  /** §6.1: the JWK SHA-256 thumbprint of the proof's key: what a DPoP-bound token's `cnf.jkt` holds. */
  jkt: string
  jti: string
  iat: number
  /** The `nonce` claim, for the caller to check against the nonces it issued (§8, §9). */
  nonce?: string
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']
const MAX_JTI = 256

/** RFC 9449 §4.3 steps 2 to 11 on one DPoP header value; step 12 (jti replay) and the nonce are the caller's. */
export function verifyDpopProof(
  proof: string | string[] | undefined,
  expected: DpopExpectation,
): VerifiedDpop {
  const fail = (step: string, message: string) =>
    new DpopError('invalid_dpop_proof', `${message} (RFC 9449 §4.3 ${step})`)
  if (proof === undefined) throw fail('step 1', 'a DPoP proof is required (DPoP header)')
  if (Array.isArray(proof)) throw fail('step 1', 'exactly one DPoP header is allowed')
  let header: Record<string, unknown>
  let payload: Record<string, unknown>
  try {
    ;({ header } = decodeJws(proof))
  } catch (error) {
    throw fail('step 2', `the DPoP proof is not a well-formed JWT: ${(error as Error).message}`)
  }
  if (header.typ !== DPOP_TYP) throw fail('step 4', `the DPoP proof's typ must be "${DPOP_TYP}"`)
  if (!DPOP_ALGS.includes(header.alg as SignatureAlg)) {
    throw fail(
      'step 5',
      `the DPoP proof's alg ${JSON.stringify(header.alg)} is not one of ${DPOP_ALGS.join(', ')}`,
    )
  }
  const jwk = header.jwk
  if (!isObject(jwk)) throw fail('step 7', 'the DPoP proof header has no jwk')
  if (PRIVATE_MEMBERS.some((m) => m in jwk))
    throw fail('step 7', 'the DPoP proof header jwk holds a private key')
  let key: KeyObject
  try {
    key = createPublicKey({ key: jwk as never, format: 'jwk' })
  } catch {
    throw fail('step 7', 'the DPoP proof header jwk is not a usable public key')
  }
  try {
    ;({ payload } = verifyJws(proof, key, { algorithms: DPOP_ALGS }))
  } catch (error) {
    const reason = error instanceof JwsError ? error.message : String(error)
    throw fail('step 6', `the DPoP proof's signature does not verify with its jwk: ${reason}`)
  }
  const { jti, htm, htu, iat, nonce, ath } = payload
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI) {
    throw fail('step 3', 'the DPoP proof has no usable jti')
  }
  if (htm !== expected.htm) {
    throw fail(
      'step 8',
      `the DPoP proof's htm ${JSON.stringify(htm)} is not this request's method ${expected.htm}`,
    )
  }
  let htuMatches = false
  try {
    htuMatches = typeof htu === 'string' && htuOf(htu) === htuOf(expected.htu)
  } catch {
    htuMatches = false
  }
  if (!htuMatches) {
    throw fail(
      'step 9',
      `the DPoP proof's htu ${JSON.stringify(htu)} is not this request's URL ${htuOf(expected.htu)}`,
    )
  }
  if (typeof iat !== 'number' || !Number.isFinite(iat))
    throw fail('step 3', 'the DPoP proof has no numeric iat')
  const age = expected.now / 1000 - iat
  if (age > expected.maxAgeSeconds || -age > expected.maxAgeSeconds) {
    throw fail(
      'step 11',
      `the DPoP proof's iat is ${Math.round(age)} s from now; at most ${expected.maxAgeSeconds} s is accepted`,
    )
  }
  if (nonce !== undefined && typeof nonce !== 'string')
    throw fail('step 10', 'the DPoP proof nonce must be a string')
  if (expected.accessToken !== undefined) {
    if (typeof ath !== 'string') throw fail('step 11', 'the DPoP proof for a protected resource has no ath')
    if (ath !== accessTokenHash(expected.accessToken)) {
      throw fail('step 11', "the DPoP proof's ath is not the hash of the access token sent with it")
    }
  }
  return { jkt: jwkThumbprint(jwk as Record<string, unknown>), jti, iat, ...(nonce ? { nonce } : {}) }
}

/** A `WWW-Authenticate: DPoP` challenge (§7.1) for an error at a protected resource. */
/**
 * A description as an auth-param value (RFC 9110 §11.2): header values are ASCII (§5.5), so a clause's
 * section sign is spelled out and any other non-ASCII character becomes "?"; double quotes become single.
 */
export const headerText = (text: string) =>
  text
    .replaceAll('"', "'")
    .replaceAll('§', 'section ')
    .replace(/[^\x20-\x7e]/g, '?')

export function dpopChallenge(code: string, description: string): string {
  return `DPoP error="${code}", error_description="${headerText(description)}", algs="${DPOP_ALGS.join(' ')}"`
}
