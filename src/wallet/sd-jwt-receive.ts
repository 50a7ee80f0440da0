// Receiving an SD-JWT VC (format `dc+sd-jwt`, OpenID4VCI 1.0 Appendix A.3): the shared verifier
// (src/shared/sd-jwt.ts) checks the issuer's signature, every disclosure, iat/nbf/exp; this module finds the
// issuer key and checks what only the holder knows: that `cnf.jwk` is its own key.
import { createHash, type KeyObject } from 'node:crypto'
import { DidKeyError, didOf, JWS_ALGS, resolveDidKey } from '../shared/did-key.ts'
import { decodeJws } from '../shared/jws.ts'
import { SdJwtError, sdJwtClaims, splitSdJwt, verifySdJwtVc } from '../shared/sd-jwt.ts'
import { loadX509 } from './lazy.ts'

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

const REGISTERED = ['iss', 'iat', 'nbf', 'exp', 'cnf', 'vct', 'status', 'vct#integrity', '_sd', '_sd_alg']

/**
 * The issuer key from the header (SD-JWT VC §3.5). `x5c`: the chain must validate to one of the configured
 * trust anchors (RFC 5280 §6, src/shared/x509.ts) and the leaf must name the issuer: `iss` is one of its SAN
 * URIs, or an https URL whose host is one of its SAN dNSNames. Otherwise `kid` must be a did:key URL (and
 * its DID the `iss`, when `iss` is a DID).
 */
async function issuerKey(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  trust: { anchors: readonly string[]; now: number },
) {
  if (header.x5c !== undefined) return x5cIssuerKey(header.x5c, payload.iss, trust)
  const kid = header.kid
  if (typeof kid !== 'string' || !kid.startsWith('did:key:')) {
    throw new SdJwtError(`header kid ${JSON.stringify(kid)} is not a did:key URL`)
  }
  if (typeof payload.iss === 'string' && payload.iss.startsWith('did:') && payload.iss !== didOf(kid)) {
    throw new SdJwtError(`header kid ${kid} is not a key of the issuer ${payload.iss}`)
  }
  try {
    return resolveDidKey(kid).publicKey
  } catch (error) {
    if (error instanceof DidKeyError) throw new SdJwtError(`header kid ${kid}: ${error.message}`)
    throw error
  }
}

async function x5cIssuerKey(x5c: unknown, iss: unknown, trust: { anchors: readonly string[]; now: number }) {
  if (trust.anchors.length === 0) {
    throw new SdJwtError(
      'the issuer names its key with an x5c chain, but this wallet has no trust anchor configured (Wallet.create trustAnchors, --trust-anchor)',
    )
  }
  const { verifyX5c, X509Error } = await loadX509()
  let chain: Awaited<ReturnType<typeof verifyX5c>>
  try {
    chain = await verifyX5c(x5c, trust.anchors, trust.now)
  } catch (error) {
    if (error instanceof X509Error) throw new SdJwtError(`x5c: ${error.message}`)
    throw error
  }
  if (typeof iss !== 'string')
    throw new SdJwtError('an SD-JWT VC signed with x5c must name its issuer in iss')
  let host: string | undefined
  try {
    const url = new URL(iss)
    if (url.protocol === 'https:') host = url.hostname
  } catch {
    // not a URL: only an exact SAN URI can match it
  }
  if (!chain.uris.includes(iss) && !(host !== undefined && chain.dns.includes(host))) {
    throw new SdJwtError(
      `x5c: the leaf certificate does not name the issuer ${iss} (SAN URIs ${JSON.stringify(chain.uris)}, dNSNames ${JSON.stringify(chain.dns)})`,
    )
  }
  return chain.publicKey
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
  const shown = Object.fromEntries(Object.entries(claims).filter(([key]) => !REGISTERED.includes(key)))
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
