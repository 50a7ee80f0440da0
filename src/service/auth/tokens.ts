import { randomUUID } from 'node:crypto'
import { JwsError, signJws, verifyJws } from '../../shared/jws.ts'
import type { Role } from '../config/schema.ts'
import type { ServiceKey } from '../crypto/keys.ts'
import { AppError } from '../errors/problem.ts'
import type { Clock } from '../util/clock.ts'

export const TOKEN_ISSUER = 'vc-harness'
export const TOKEN_AUDIENCE = 'vc-harness:relying-party-api'
// RFC 9068 media type for JWT access tokens; pinned on verify so no other JWT the service signs passes.
export const TOKEN_TYPE = 'at+jwt'

/** Who is calling: what a verified access token says. */
export interface Principal {
  tenantId: string
  keyId: string
  role: Role
  /** The template chosen at login (`ssiconfig`), or null for a tenant-wide key without one. */
  template: string | null
  expiresAt: number
}

interface Claims {
  tenant: string
  role: Role
  template: string | null
}

/** Why a token is refused, as the message of 401 invalid_token says it. */
function refuse(reason: string): never {
  throw new AppError('invalid_token', `the access token is not valid: ${reason}`)
}

const REQUIRED_CLAIMS = ['sub', 'exp', 'iat', 'tenant', 'role'] as const

/** Tokens whose signature and claims were verified, kept so a relying party's next call skips the signature check. */
const VERIFIED_CACHE_SIZE = 4096

// Tokens are signed and checked with node:crypto KeyObjects (src/shared/jws.ts): every relying-party call
// verifies one, and the WebCrypto path through jose cost several times more CPU per call.
export class AccessTokens {
  constructor(
    private readonly key: ServiceKey,
    private readonly clock: Clock,
    private readonly lifetimeSeconds: number,
  ) {}

  // A token is a string of exactly the bytes that were verified, so a hit needs no new signature check;
  // expiry is still judged on every call (the clock moves), and revocation by the caller (AuthService).
  private readonly verified = new Map<string, Principal>()

  async issue(p: Omit<Principal, 'expiresAt'>): Promise<{ token: string; expiresAt: number }> {
    const iat = Math.floor(this.clock.now() / 1000)
    const exp = iat + this.lifetimeSeconds
    const claims: Claims = { tenant: p.tenantId, role: p.role, template: p.template }
    const token = signJws(
      { alg: this.key.alg, kid: this.key.kid, typ: TOKEN_TYPE },
      {
        ...claims,
        iss: TOKEN_ISSUER,
        aud: TOKEN_AUDIENCE,
        sub: p.keyId,
        jti: randomUUID(),
        iat,
        exp,
      },
      this.key.privateKey,
    )
    // Signed here a moment ago, with exactly these claims: its first use needs no signature check either.
    this.remember(token, { ...p, expiresAt: exp * 1000 })
    return { token, expiresAt: exp * 1000 }
  }

  private remember(token: string, principal: Principal) {
    // Oldest first out: a Map iterates in insertion order.
    if (this.verified.size >= VERIFIED_CACHE_SIZE)
      this.verified.delete(this.verified.keys().next().value as string)
    this.verified.set(token, principal)
  }

  /** Verifies signature (EdDSA only, so `alg: none` and HMAC confusion fail), typ, issuer, audience and expiry. */
  async verify(token: string): Promise<Principal> {
    const known = this.verified.get(token)
    if (known) {
      if (known.expiresAt <= Math.floor(this.clock.now() / 1000) * 1000) {
        this.verified.delete(token)
        throw new AppError('token_expired', 'the access token has expired')
      }
      return { ...known }
    }
    const principal = this.verifyAfresh(token)
    this.remember(token, principal)
    return { ...principal }
  }

  private verifyAfresh(token: string): Principal {
    let verified: { header: Record<string, unknown>; payload: Record<string, unknown> }
    try {
      verified = verifyJws(token, this.key.publicKey, { algorithms: [this.key.alg] })
    } catch (error) {
      if (error instanceof JwsError) refuse(error.reason)
      throw error
    }
    const { header, payload } = verified
    const typ = typeof header.typ === 'string' ? header.typ.toLowerCase().replace(/^application\//, '') : ''
    if (typ !== TOKEN_TYPE) refuse('typ')
    for (const claim of REQUIRED_CLAIMS) if (payload[claim] === undefined) refuse(`missing claim ${claim}`)
    if (payload.iss !== TOKEN_ISSUER) refuse('iss')
    const aud = payload.aud
    if (!(aud === TOKEN_AUDIENCE || (Array.isArray(aud) && aud.includes(TOKEN_AUDIENCE)))) refuse('aud')
    const { exp, iat, nbf } = payload
    if (typeof exp !== 'number' || typeof iat !== 'number') refuse('exp or iat is not a number')
    const now = Math.floor(this.clock.now() / 1000)
    if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now)) refuse('nbf')
    if (exp <= now) throw new AppError('token_expired', 'the access token has expired')
    if (typeof payload.tenant !== 'string' || typeof payload.sub !== 'string') {
      throw new AppError('invalid_token', 'access token lacks tenant or subject')
    }
    return {
      tenantId: payload.tenant,
      keyId: payload.sub,
      role: payload.role as Role,
      template: typeof payload.template === 'string' ? payload.template : null,
      expiresAt: exp * 1000,
    }
  }
}
