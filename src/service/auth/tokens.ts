import { randomUUID } from 'node:crypto'
import { errors, jwtVerify, SignJWT } from 'jose'
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

export class AccessTokens {
  constructor(
    private readonly key: ServiceKey,
    private readonly clock: Clock,
    private readonly lifetimeSeconds: number,
  ) {}

  async issue(p: Omit<Principal, 'expiresAt'>): Promise<{ token: string; expiresAt: number }> {
    const iat = Math.floor(this.clock.now() / 1000)
    const exp = iat + this.lifetimeSeconds
    const claims: Claims = { tenant: p.tenantId, role: p.role, template: p.template }
    const token = await new SignJWT({ ...claims })
      .setProtectedHeader({ alg: this.key.alg, kid: this.key.kid, typ: TOKEN_TYPE })
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(p.keyId)
      .setJti(randomUUID())
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.key.privateKey)
    return { token, expiresAt: exp * 1000 }
  }

  /** Verifies signature (EdDSA only, so `alg: none` and HMAC confusion fail), typ, issuer, audience and expiry. */
  async verify(token: string): Promise<Principal> {
    try {
      const { payload } = await jwtVerify<Claims>(token, this.key.publicKey, {
        algorithms: [this.key.alg],
        typ: TOKEN_TYPE,
        issuer: TOKEN_ISSUER,
        audience: TOKEN_AUDIENCE,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ['sub', 'exp', 'iat', 'tenant', 'role'],
      })
      if (typeof payload.tenant !== 'string' || typeof payload.sub !== 'string') {
        throw new AppError('invalid_token', 'access token lacks tenant or subject')
      }
      return {
        tenantId: payload.tenant,
        keyId: payload.sub,
        role: payload.role,
        template: payload.template ?? null,
        expiresAt: (payload.exp ?? 0) * 1000,
      }
    } catch (error) {
      if (error instanceof AppError) throw error
      if (error instanceof errors.JWTExpired)
        throw new AppError('token_expired', 'the access token has expired')
      if (error instanceof errors.JOSEError) {
        throw new AppError('invalid_token', `the access token is not valid: ${error.code}`)
      }
      throw error
    }
  }
}
