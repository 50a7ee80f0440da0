// Receiving an SD-JWT VC (format `dc+sd-jwt`, OpenID4VCI 1.0 Appendix A.3): the shared verifier
// (src/shared/sd-jwt.ts) checks the issuer's signature, every disclosure, iat/nbf/exp; this module finds the
// issuer key and checks what only the holder knows: that `cnf.jwk` is its own key.
import { createHash } from 'node:crypto'
import { DidKeyError, didOf, JWS_ALGS, resolveDidKey } from '../shared/did-key.ts'
import { SdJwtError, verifySdJwtVc } from '../shared/sd-jwt.ts'

/** A verified SD-JWT VC, as the store keeps it. */
export interface ReceivedSdJwt {
  id: string
  issuer: string
  vct: string
  /** every disclosed claim, the registered ones (iss, vct, cnf, …) removed */
  claims: Record<string, unknown>
  issuedAt?: string
  expiresAt?: string
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
 * The issuer key from the header: `kid` must be a did:key URL (and its DID the `iss`, when `iss` is a DID).
 * An `x5c` chain (SD-JWT VC §3.5 allows it) needs a trust anchor this wallet does not have yet.
 */
function issuerKey(header: Record<string, unknown>, payload: Record<string, unknown>) {
  if (header.x5c !== undefined) {
    throw new SdJwtError('x5c issuer keys are not supported yet: the issuer must name a did:key in kid')
  }
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

function sameKey(a: JsonWebKey, b: JsonWebKey): boolean {
  return a.kty === b.kty && a.crv === b.crv && a.x === b.x && (a.y ?? '') === (b.y ?? '')
}

function iso(value: unknown): string | undefined {
  return typeof value === 'number' && Number.isFinite(value)
    ? new Date(value * 1000).toISOString()
    : undefined
}

/**
 * Verifies an issued SD-JWT VC for this holder: signature (did:key `kid`), disclosures, validity period,
 * `vct` (the configuration's, when it names one) and `cnf.jwk` = `holderJwk` (the key the proof showed).
 */
export async function verifyReceivedSdJwt(
  compact: string,
  expected: { holderJwk: JsonWebKey; vct?: string | undefined; now?: number },
): Promise<ReceivedSdJwt> {
  let verified: Awaited<ReturnType<typeof verifySdJwtVc>>
  try {
    verified = await verifySdJwtVc(compact, {
      issuerKey,
      algorithms: JWS_ALGS,
      now: expected.now ?? Date.now(),
    })
  } catch (error) {
    throw new SdJwtReceiveError('invalid_credential', (error as Error).message)
  }
  const { claims, holderJwk } = verified
  if (!holderJwk) throw new SdJwtReceiveError('wrong_holder_key', 'the SD-JWT VC has no cnf.jwk')
  if (!sameKey(holderJwk, expected.holderJwk)) {
    throw new SdJwtReceiveError('wrong_holder_key', "cnf.jwk is not this holder's key")
  }
  if (typeof claims.vct !== 'string')
    throw new SdJwtReceiveError('invalid_credential', 'the SD-JWT VC has no vct')
  if (expected.vct !== undefined && claims.vct !== expected.vct) {
    throw new SdJwtReceiveError('invalid_credential', `vct ${claims.vct} is not the offered ${expected.vct}`)
  }
  const shown = Object.fromEntries(Object.entries(claims).filter(([key]) => !REGISTERED.includes(key)))
  const issuedAt = iso(claims.nbf ?? claims.iat)
  const expiresAt = iso(claims.exp)
  return {
    id:
      typeof claims.jti === 'string'
        ? claims.jti
        : `urn:sha256:${createHash('sha256').update(compact).digest('hex')}`,
    issuer: typeof claims.iss === 'string' ? claims.iss : '',
    vct: claims.vct,
    claims: shown,
    ...(issuedAt && { issuedAt }),
    ...(expiresAt && { expiresAt }),
  }
}
