import { DpopError, dpopChallenge, type VerifiedDpop, verifyDpopProof } from '../../shared/oauth/dpop.ts'
import type { Oid4vciOptions } from '../config/schema.ts'
import { OAuthError } from '../errors/oauth.ts'
import type { Store } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import { CNonces } from './nonces.ts'

// The issuer's side of DPoP (RFC 9449): a proof checked (shared/oauth/dpop.ts), its nonce one this service
// issued to the tenant and still current (§8 at the token endpoint, §9 at the credential endpoints), its jti
// not seen before within the window (§11.1: one row in the used-nonce table, kept until the window closes).
// Nonces are stateless like c_nonces (nonces.ts), MACed with a secret of their own, so any instance checks them.

export type DpopTarget = 'server' | 'resource'

export class DpopGate {
  private readonly nonces: CNonces

  constructor(
    private readonly deps: { store: Store; clock: Clock; options: Oid4vciOptions; nonceSecret: Buffer },
  ) {
    this.nonces = new CNonces(deps.nonceSecret)
  }

  /** A current DPoP-Nonce for the tenant (sent on every answer to a DPoP request, §8.2). */
  newNonce(tenantId: string): string {
    const { clock, options } = this.deps
    return this.nonces.issue(tenantId, clock.now() + options.cNonceLifetimeSeconds * 1000)
  }

  private error(tenantId: string, target: DpopTarget, code: DpopError['code'], message: string): OAuthError {
    const headers: Record<string, string> = { 'DPoP-Nonce': this.newNonce(tenantId) }
    if (target === 'resource') headers['WWW-Authenticate'] = dpopChallenge(code, message)
    return new OAuthError(code, message, { headers, ...(target === 'resource' ? { status: 401 } : {}) })
  }

  /**
   * The DPoP header of a request checked: §4.3, the server nonce when `requireNonce` (§8, §9; a missing or
   * stale one is `use_dpop_nonce` with a fresh one in DPoP-Nonce), the jti unused. Throws the OAuthError
   * the target answers with (a protected resource: 401 with a DPoP challenge).
   */
  async check(
    tenantId: string,
    proof: string | string[] | undefined,
    request: { htm: string; htu: string; accessToken?: string },
    target: DpopTarget,
    requireNonce = this.deps.options.dpopNonces,
  ): Promise<VerifiedDpop> {
    const { clock, options, store } = this.deps
    const now = clock.now()
    let verified: VerifiedDpop
    try {
      verified = verifyDpopProof(proof, { ...request, now, maxAgeSeconds: options.dpopProofMaxAgeSeconds })
    } catch (error) {
      if (error instanceof DpopError) throw this.error(tenantId, target, error.code, error.message)
      throw error
    }
    if (requireNonce || verified.nonce !== undefined) {
      const expiresAt =
        verified.nonce === undefined ? undefined : this.nonces.expiresAt(verified.nonce, tenantId)
      if (expiresAt === undefined || expiresAt <= now) {
        throw this.error(
          tenantId,
          target,
          'use_dpop_nonce',
          verified.nonce === undefined
            ? 'this server requires a DPoP nonce: retry with the one in the DPoP-Nonce header (RFC 9449 §8)'
            : 'the DPoP nonce is not current: retry with the one in the DPoP-Nonce header (RFC 9449 §8)',
        )
      }
    }
    // §11.1: a proof is single use within its window; the row lives as long as the proof could be accepted.
    const keptUntil = (verified.iat + options.dpopProofMaxAgeSeconds) * 1000 + 1000
    if (!(await store.nonces.use(`dpop:${verified.jkt}:${verified.jti}`, tenantId, keptUntil))) {
      throw this.error(
        tenantId,
        target,
        'invalid_dpop_proof',
        'this DPoP proof was used before: its jti is already spent (RFC 9449 §11.1)',
      )
    }
    return verified
  }
}
