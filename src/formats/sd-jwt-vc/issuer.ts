import type { KeyObject } from 'node:crypto'
import { lazyImport } from '../../shared/lazy.ts'
import { resolveKid } from '../jwt-vc/verify.ts'
import type { KeyResolver } from '../types.ts'

// Who signed an SD-JWT VC, decided once for both sides of the wire: the service's verifier (verify.ts) and
// the wallet at receipt (src/wallet/sd-jwt-receive.ts) call the same function, so they cannot disagree
// (they did: the wallet matched a dNSName only for an https issuer, the service for any scheme; the wallet
// let a did:key kid sign for an https iss). The stricter rule of each won.

// @peculiar/x509 loads only when an x5c chain is met (the CLI starts without it).
const loadX509 = lazyImport(() => import('../../shared/x509.ts'))

/** SD-JWT VC registered claims (draft §3.2.2) and SD-JWT internals: not the subject's claims. */
export const REGISTERED_CLAIMS: ReadonlySet<string> = new Set([
  'iss',
  'sub',
  'jti',
  'aud',
  'iat',
  'nbf',
  'exp',
  'cnf',
  'vct',
  'vct#integrity',
  'status',
  '_sd',
  '_sd_alg',
])

/** The subject's claims of a payload: the registered ones left out. */
export function subjectClaims(payload: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(payload).filter(([name]) => !REGISTERED_CLAIMS.has(name)))
}

/** Why the issuer key cannot be trusted; `code` lets each side phrase what only it knows. */
export class IssuerKeyError extends Error {
  override name = 'IssuerKeyError'
  constructor(
    /** `no_anchor`: nothing to validate an x5c chain against; `chain`: the chain failed (RFC 5280 §6). */
    readonly code: 'no_anchor' | 'chain' | 'issuer',
    message: string,
  ) {
    super(message)
  }
}

/** The key that must have signed the issuer-signed JWT, and who that makes the issuer. */
export interface SdJwtIssuer {
  key: KeyObject
  /** The issuer identifier: the DID of a did:key kid, the iss an x5c leaf certifies. */
  issuer: string
  /** The trust anchor an x5c chain ended in (its subject); undefined for a did:key issuer. */
  anchor?: string
}

/**
 * SD-JWT VC §3.5 (HAIP): an `x5c` header chain must validate to one of `trust.anchors` and its leaf must
 * name `iss`: one of its SAN URIs, or, for an https issuer, its host one of its dNSNames. Otherwise the
 * `kid` is a did:key key id, and `iss`, when present, is that DID.
 */
export async function sdJwtIssuer(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  trust: { anchors: readonly string[]; now: number; keys?: KeyResolver },
): Promise<SdJwtIssuer> {
  if (header.x5c === undefined) {
    let key: ReturnType<KeyResolver>
    try {
      key = resolveKid(header.kid, trust.keys)
    } catch (error) {
      throw new IssuerKeyError('issuer', (error as Error).message)
    }
    if (payload.iss !== undefined && payload.iss !== key.did) {
      throw new IssuerKeyError('issuer', 'iss is not the DID of the key that signed it')
    }
    return { key: key.publicKey, issuer: key.did }
  }
  if (trust.anchors.length === 0) throw new IssuerKeyError('no_anchor', 'no trust anchor is configured')
  const { verifyX5c } = await loadX509()
  let chain: Awaited<ReturnType<typeof verifyX5c>>
  try {
    chain = await verifyX5c(header.x5c, trust.anchors, trust.now)
  } catch (error) {
    throw new IssuerKeyError('chain', (error as Error).message)
  }
  const { iss } = payload
  if (typeof iss !== 'string') {
    throw new IssuerKeyError('issuer', 'iss is missing (an x5c issuer is named by its URL, SD-JWT VC §3.5)')
  }
  let host: string | undefined
  try {
    const url = new URL(iss)
    if (url.protocol === 'https:') host = url.hostname
  } catch {
    // not a URL: only an exact SAN URI can name it
  }
  if (!chain.uris.includes(iss) && !(host !== undefined && chain.dns.includes(host))) {
    throw new IssuerKeyError(
      'issuer',
      `iss ${JSON.stringify(iss)} is not named by the x5c leaf certificate (SAN URIs ${JSON.stringify(chain.uris)}, dNSNames ${JSON.stringify(chain.dns)}; a dNSName names an https issuer only)`,
    )
  }
  return { key: chain.publicKey, issuer: iss, anchor: chain.anchor.subject }
}
