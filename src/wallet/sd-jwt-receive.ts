// Receiving an SD-JWT VC (format `dc+sd-jwt`, OpenID4VCI 1.0 Appendix A.3): the shared verifier
// (src/shared/sd-jwt.ts) checks the issuer's signature, every disclosure, iat/nbf/exp; the issuer key is
// the one the service's verifier would accept (src/formats/sd-jwt-vc/issuer.ts); this module checks what
// only the holder knows: that `cnf.jwk` is its own key.
import { createHash, type KeyObject } from 'node:crypto'
import { IssuerKeyError, sdJwtIssuer, subjectClaims } from '../formats/sd-jwt-vc/issuer.ts'
import { JWS_ALGS } from '../shared/did-key.ts'
import { decodeJws } from '../shared/jws.ts'
import { SdJwtError, sdJwtClaims, splitSdJwt, verifySdJwtVc } from '../shared/sd-jwt.ts'

/** A verified SD-JWT VC, as the store keeps it. */
export interface ReceivedSdJwt {
  id: string
  issuer: string
  vct: string
  /** every disclosed claim, the registered ones (iss, vct, cnf, …) removed */
  claims: Record<string, unknown>
  issuedAt?: string
  expiresAt?: string
  /** the payload with every disclosure applied (registered claims included: `status`, `cnf`, …) */
  payload: Record<string, unknown>
  /** the key that signed it (its status list must be signed by the same key); undefined when not verified */
  issuerKey: KeyObject | undefined
}

/** A refusal with the wallet-side code the verify step reports. */
export class SdJwtReceiveError extends Error {
  override name = 'SdJwtReceiveError'
  constructor(
    readonly code: 'invalid_credential' | 'wrong_holder_key',
    message: string,
  ) {
    super(message)
  }
}

/**
 * The issuer key from the header (SD-JWT VC §3.5), by the rule the service's verifier applies too
 * (src/formats/sd-jwt-vc/issuer.ts): an `x5c` chain to a configured trust anchor whose leaf names `iss`, or
 * a did:key `kid` whose DID is the `iss` when there is one. Refusals phrased for the wallet's user.
 */
async function issuerKey(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  trust: { anchors: readonly string[]; now: number },
): Promise<KeyObject> {
  try {
    return (await sdJwtIssuer(header, payload, trust)).key
  } catch (error) {
    if (!(error instanceof IssuerKeyError)) throw error
    if (error.code === 'no_anchor') {
      throw new SdJwtError(
        'the issuer names its key with an x5c chain, but this wallet has no trust anchor configured (Wallet.create trustAnchors, --trust-anchor)',
      )
    }
    throw new SdJwtError(error.code === 'chain' ? `x5c: ${error.message}` : error.message)
  }
}

function sameKey(a: JsonWebKey, b: JsonWebKey): boolean {
  return a.kty === b.kty && a.crv === b.crv && a.x === b.x && (a.y ?? '') === (b.y ?? '')
}

function iso(value: unknown): string | undefined {
  return typeof value === 'number' && Number.isFinite(value)
    ? new Date(value * 1000).toISOString()
    : undefined
}

/**
 * Verifies an issued SD-JWT VC for this holder: signature (did:key `kid`, or an `x5c` chain to a trust anchor), disclosures, validity period,
 * `vct` (the configuration's, when it names one) and `cnf.jwk` = `holderJwk` (the key the proof showed).
 */
export async function verifyReceivedSdJwt(
  compact: string,
  expected: {
    holderJwk: JsonWebKey
    vct?: string | undefined
    now?: number
    /** PEM certificates an x5c chain must lead to; without any, x5c-signed credentials are refused. */
    trustAnchors?: readonly string[]
  },
): Promise<ReceivedSdJwt> {
  const now = expected.now ?? Date.now()
  const trust = { anchors: expected.trustAnchors ?? [], now }
  // the validity period first, with the rule named (the library's message does not say which claim)
  let exp: unknown
  try {
    exp = decodeJws(splitSdJwt(compact).jwt).payload.exp
  } catch {}
  if (typeof exp === 'number' && exp * 1000 <= now) {
    throw new SdJwtReceiveError(
      'invalid_credential',
      `validity period: exp ${new Date(exp * 1000).toISOString()} has passed (RFC 7519 §4.1.4, SD-JWT VC); an expired credential is not stored`,
    )
  }
  let verified: Awaited<ReturnType<typeof verifySdJwtVc>>
  let signer: KeyObject | undefined
  try {
    verified = await verifySdJwtVc(compact, {
      issuerKey: async (header, payload) => {
        signer = await issuerKey(header, payload, trust)
        return signer
      },
      algorithms: JWS_ALGS,
      now,
    })
  } catch (error) {
    // the issuer's signature by the key its header names, every disclosure's digest, iat/nbf/exp
    throw new SdJwtReceiveError(
      'invalid_credential',
      `SD-JWT VC verification (RFC 9901 §7.1; issuer key SD-JWT VC §3.5): ${(error as Error).message}`,
    )
  }
  const { claims, holderJwk } = verified
  if (!holderJwk) throw new SdJwtReceiveError('wrong_holder_key', 'the SD-JWT VC has no cnf.jwk')
  if (!sameKey(holderJwk, expected.holderJwk)) {
    throw new SdJwtReceiveError(
      'wrong_holder_key',
      "holder binding: cnf.jwk is not this holder's key (the key its proof showed); the credential is bound to someone else",
    )
  }
  if (typeof claims.vct !== 'string')
    throw new SdJwtReceiveError('invalid_credential', 'the SD-JWT VC has no vct')
  if (expected.vct !== undefined && claims.vct !== expected.vct) {
    throw new SdJwtReceiveError('invalid_credential', `vct ${claims.vct} is not the offered ${expected.vct}`)
  }
  return received(compact, claims, signer)
}

function received(
  compact: string,
  claims: Record<string, unknown>,
  issuerKey: KeyObject | undefined,
): ReceivedSdJwt {
  const shown = subjectClaims(claims)
  const issuedAt = iso(claims.nbf ?? claims.iat)
  const expiresAt = iso(claims.exp)
  return {
    id:
      typeof claims.jti === 'string'
        ? claims.jti
        : `urn:sha256:${createHash('sha256').update(compact).digest('hex')}`,
    issuer: typeof claims.iss === 'string' ? claims.iss : '',
    vct: typeof claims.vct === 'string' ? claims.vct : '',
    claims: shown,
    ...(issuedAt && { issuedAt }),
    ...(expiresAt && { expiresAt }),
    payload: claims,
    issuerKey,
  }
}

/**
 * An SD-JWT VC read without verifying anything (the careless wallet of WalletOptions.trustEverything):
 * its claims with every disclosure applied, whatever signed it and whoever it is bound to.
 */
export async function parseReceivedSdJwt(compact: string): Promise<ReceivedSdJwt> {
  let claims: Record<string, unknown>
  try {
    claims = await sdJwtClaims(compact)
  } catch (error) {
    throw new SdJwtReceiveError('invalid_credential', `not an SD-JWT: ${(error as Error).message}`)
  }
  return received(compact, claims, undefined)
}
