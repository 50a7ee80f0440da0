import type { Role } from '../config/schema.ts'
import { AppError } from '../errors/problem.ts'
import type { LoginLimits } from '../rate-limit.ts'
import type { Store } from '../store/index.ts'
import { DUMMY_HASH, verifySecret } from './secrets.ts'
import type { AccessTokens, Principal } from './tokens.ts'

export interface LoginInput {
  authorization: string | undefined
  tenant: string | undefined
  ssiconfig: string | undefined
  /** The client's address (rate limits count failed logins per address). */
  clientAddress: string
}

const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="vc-harness", charset="UTF-8"' }
const JWT_CHALLENGE = { 'WWW-Authenticate': 'jwt realm="vc-harness"' }

// One answer for every credential failure (unknown id, wrong secret, revoked key, other tenant's key),
// so the response never tells an attacker which part was right.
const badCredentials = () =>
  new AppError(
    'invalid_credentials',
    'the API key id or secret is wrong, or the key is not valid for this tenant',
    {
      headers: BASIC_CHALLENGE,
    },
  )

function parseBasic(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header ?? '')
  if (!match?.[1]) return undefined
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon <= 0) return undefined
  return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) }
}

export class AuthService {
  constructor(
    private readonly store: Store,
    private readonly tokens: AccessTokens,
    private readonly limits: LoginLimits,
  ) {}

  /** Section 4.1: API key (HTTP Basic) + tenant + ssiconfig → access token. */
  async login(input: LoginInput): Promise<{ token: string; principal: Principal }> {
    if (!input.authorization) {
      throw new AppError('unauthenticated', 'send Authorization: Basic base64(api_key_id:api_key_secret)', {
        headers: BASIC_CHALLENGE,
      })
    }
    if (!input.tenant) throw new AppError('missing_header', 'header "tenant" (the tenant id) is required')
    const credentials = parseBasic(input.authorization)
    const keyId = credentials?.id ?? ''
    // Over the failure allowance: 429 before the secret is checked, so guessing stops costing us anything.
    const blocked = this.limits.blocked(keyId, input.clientAddress)
    if (blocked) {
      throw new AppError('too_many_requests', `${blocked.what}; retry after ${blocked.wait} s`, {
        headers: { 'Retry-After': String(blocked.wait) },
      })
    }
    // A known and an unknown id do the same work (one row read, one HMAC, the same checks), so timing does
    // not reveal which ids exist (docs/api.md; bench/login-timing.ts measures it).
    const { key, found } = await this.store.apiKeys.forLogin(keyId, DUMMY_HASH)
    const secretOk = verifySecret(credentials?.secret ?? '', key.secretHash)
    if (!found || !secretOk || key.revokedAt !== null || key.tenantId !== input.tenant) {
      this.limits.failed(keyId, input.clientAddress)
      throw badCredentials()
    }

    const template = await this.chooseTemplate(key.tenantId, key.templateId, input.ssiconfig || undefined)
    const principal = { tenantId: key.tenantId, keyId: key.id, role: key.role, template }
    const issued = await this.tokens.issue(principal)
    return { token: issued.token, principal: { ...principal, expiresAt: issued.expiresAt } }
  }

  private async chooseTemplate(tenantId: string, linked: string | null, requested: string | undefined) {
    if (linked !== null && requested !== undefined && requested !== linked) {
      throw new AppError(
        'template_not_allowed',
        `this API key is linked to template "${linked}"; ssiconfig "${requested}" is not allowed`,
      )
    }
    const chosen = linked ?? requested ?? null
    if (chosen !== null && !(await this.store.templates.find(tenantId, chosen))) {
      throw new AppError('template_not_allowed', `template "${chosen}" does not exist in this tenant`)
    }
    return chosen
  }

  /** Verifies `Authorization: jwt <token>` (Bearer accepted too) and that its key is still valid. */
  async authenticate(header: string | undefined): Promise<Principal> {
    if (!header) {
      throw new AppError('unauthenticated', 'send Authorization: jwt <access token> (obtained by login)', {
        headers: JWT_CHALLENGE,
      })
    }
    const match = /^(?:jwt|bearer) +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header)
    if (!match?.[1]) {
      throw new AppError('invalid_token', 'the Authorization header must be "jwt <access token>"', {
        headers: JWT_CHALLENGE,
      })
    }
    let principal: Principal
    try {
      principal = await this.tokens.verify(match[1])
    } catch (error) {
      if (error instanceof AppError) throw new AppError(error.code, error.detail, { headers: JWT_CHALLENGE })
      throw error
    }
    // Revoking a key ends its tokens at once, not at their expiry.
    const key = await this.store.apiKeys.get(principal.keyId)
    if (!key || key.revokedAt !== null || key.tenantId !== principal.tenantId) {
      throw new AppError('invalid_token', 'the API key behind this access token was revoked', {
        headers: JWT_CHALLENGE,
      })
    }
    return principal
  }
}

/** operator includes every admin right. */
export function hasRole(principal: Principal, allowed: readonly Role[]): boolean {
  return allowed.includes(principal.role) || (principal.role === 'operator' && allowed.includes('admin'))
}
