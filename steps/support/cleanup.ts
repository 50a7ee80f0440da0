import type { ApiKeyCredentials, RelyingPartyClient } from '../../src/client/index.ts'
import type { Target } from '../../src/harness/target-types.ts'
import type { Exchange } from './exchanges.ts'

// What a scenario left on the target, and its removal. Read from the scenario's HTTP exchanges (every
// portal call goes through the World's recording client), so no flow has to declare what it creates:
// a 201 to POST /portal/v1/tenants, /api-keys or /{kind}-templates is something this run made, and the
// login exchanges say which tenant and key each access token belongs to.
//
// Removal, per tenant: log in with an administrator key the run knows (one it created, one that created
// something, or the target's configured one), revoke every API key the run created (the key used for the
// removal last), and delete every template it created. The portal has no DELETE for tenants, a revoked key
// stays listed as revoked, and a template an issuance process refers to cannot be deleted
// (409 template_in_use): those remain, and the report says so. docs/conformance-exchanges.md.

export type TemplateKindName = 'issuance' | 'verification'

export interface Debris {
  tenant: string
  /** The run created the tenant itself (it cannot be deleted). */
  createdTenant: boolean
  /** API keys the run created, by id. */
  keys: Map<string, { role: string; secret?: string }>
  /** Templates the run created, by id. */
  templates: Map<string, TemplateKindName>
  /** Keys that may remove the debris, best first (administrators of the tenant). */
  admins: { keyId: string; secret: string }[]
}

export interface CleanupReport {
  tenant: string
  createdTenant: boolean
  revoked: number
  deleted: number
  /** What stays on the target, each with why. */
  left: string[]
  /** Removals that failed for another reason (an error answer, a network error). */
  failed: string[]
}

const PORTAL =
  /\/portal\/v1\/(tenants|api-keys|issuance-templates|verification-templates)(?:\/([^/?#]+))?\/?(?:[?#].*)?$/
const LOGIN = /\/admin\/v1\/api_keys\/login(?:[?#].*)?$/

const header = (headers: [string, string][], name: string) =>
  headers.find(([n]) => n.toLowerCase() === name)?.[1]

const json = (text: string | undefined): Record<string, unknown> | undefined => {
  if (!text) return undefined
  try {
    const value = JSON.parse(text)
    return value && typeof value === 'object' && !Array.isArray(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** `Basic base64(id:secret)` → the key. */
function basicKey(authorization: string | undefined): { keyId: string; secret: string } | undefined {
  const match = /^basic\s+(\S+)/i.exec(authorization ?? '')
  if (!match?.[1]) return undefined
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon > 0 ? { keyId: decoded.slice(0, colon), secret: decoded.slice(colon + 1) } : undefined
}

const bearer = (authorization: string | undefined) =>
  /^(?:jwt|bearer)\s+(\S+)/i.exec(authorization ?? '')?.[1]

/** What the exchanges created on the target, by tenant. */
export function debrisOf(exchanges: readonly Exchange[], target: Pick<Target, 'tenant'>): Debris[] {
  const owners = new Map<string, { tenant: string; keyId: string; secret: string }>()
  const byTenant = new Map<string, Debris>()
  const debris = (tenant: string) => {
    let d = byTenant.get(tenant)
    if (!d) {
      d = { tenant, createdTenant: false, keys: new Map(), templates: new Map(), admins: [] }
      byTenant.set(tenant, d)
    }
    return d
  }
  const addAdmin = (d: Debris, key: { keyId: string; secret: string }) => {
    if (!d.admins.some((a) => a.keyId === key.keyId)) d.admins.push(key)
  }

  for (const e of exchanges) {
    if (e.status === undefined || e.source !== 'relying party') continue
    let path: string
    try {
      path = new URL(e.url).pathname
    } catch {
      continue
    }
    if (LOGIN.test(path) && e.method === 'POST') {
      const token = header(e.responseHeaders, 'token')
      const key = basicKey(header(e.requestHeaders, 'authorization'))
      const tenant = header(e.requestHeaders, 'tenant')
      if (e.status === 200 && token && key && tenant) owners.set(token, { tenant, ...key })
      continue
    }
    const match = PORTAL.exec(path)
    if (!match) continue
    const [, collection, id] = match
    const owner = owners.get(bearer(header(e.requestHeaders, 'authorization')) ?? '')
    if (e.method === 'POST' && id === undefined && e.status === 201) {
      const body = json(e.responseBody)
      if (collection === 'tenants') {
        const tenant = typeof body?.id === 'string' ? body.id : undefined
        const admin = body?.adminKey as { id?: unknown; secret?: unknown; role?: unknown } | undefined
        if (!tenant) continue
        const d = debris(tenant)
        d.createdTenant = true
        if (typeof admin?.id === 'string') {
          d.keys.set(admin.id, {
            role: typeof admin.role === 'string' ? admin.role : 'admin',
            ...(typeof admin.secret === 'string' ? { secret: admin.secret } : {}),
          })
          if (typeof admin.secret === 'string') addAdmin(d, { keyId: admin.id, secret: admin.secret })
        }
        continue
      }
      if (!owner || typeof body?.id !== 'string') continue
      const d = debris(owner.tenant)
      addAdmin(d, owner)
      if (collection === 'api-keys') {
        const role = typeof body.role === 'string' ? body.role : 'app'
        const secret = typeof body.secret === 'string' ? body.secret : undefined
        d.keys.set(body.id, { role, ...(secret ? { secret } : {}) })
        if (role === 'admin' && secret) addAdmin(d, { keyId: body.id, secret })
      } else {
        d.templates.set(body.id, collection === 'issuance-templates' ? 'issuance' : 'verification')
      }
      continue
    }
    // A template the scenario deleted itself is gone already.
    if (e.method === 'DELETE' && id !== undefined && e.status === 204 && owner && collection !== 'api-keys') {
      byTenant.get(owner.tenant)?.templates.delete(decodeURIComponent(id))
    }
  }
  // The configured tenant's administrator may remove what was made in it.
  const configured = byTenant.get(target.tenant.tenant)
  if (configured) {
    addAdmin(configured, { keyId: target.tenant.adminKey.id, secret: target.tenant.adminKey.secret })
  }
  return [...byTenant.values()].filter((d) => d.createdTenant || d.keys.size > 0 || d.templates.size > 0)
}

const problemCode = (text: string) => {
  try {
    return (JSON.parse(text) as { code?: unknown }).code
  } catch {
    return undefined
  }
}

/** Removes what `debris` lists, through `client` (one that records nothing: this is not the scenario). */
export async function removeDebris(d: Debris, client: RelyingPartyClient): Promise<CleanupReport> {
  const report: CleanupReport = {
    tenant: d.tenant,
    createdTenant: d.createdTenant,
    revoked: 0,
    deleted: 0,
    left: [],
    failed: [],
  }
  if (d.createdTenant) report.left.push(`tenant ${d.tenant} (the portal cannot delete tenants)`)
  let token: string | undefined
  let used: string | undefined
  for (const admin of d.admins) {
    const credentials: ApiKeyCredentials = { keyId: admin.keyId, secret: admin.secret, tenant: d.tenant }
    try {
      const login = await client.login(credentials)
      if (login.status === 200 && login.token) {
        token = login.token
        used = admin.keyId
        break
      }
    } catch {}
  }
  if (!token) {
    const what = [
      d.keys.size > 0 ? `${d.keys.size} API key(s)` : '',
      d.templates.size > 0 ? `${d.templates.size} template(s)` : '',
    ].filter(Boolean)
    if (what.length > 0) {
      report.failed.push(
        `${what.join(' and ')} of tenant ${d.tenant}: no administrator key of the tenant could log in`,
      )
    }
    return report
  }
  const authorized = token
  const revoke = async (id: string) => {
    try {
      const response = await client.revokeApiKey(authorized, id)
      if (response.status === 204 || response.status === 404) report.revoked++
      else report.failed.push(`API key ${id}: DELETE answered HTTP ${response.status}`)
    } catch (error) {
      report.failed.push(`API key ${id}: ${(error as Error).message}`)
    }
  }
  // Keys first (a live key linked to a template keeps it), the key of the removal last.
  await Promise.all([...d.keys.keys()].filter((id) => id !== used).map(revoke))
  await Promise.all(
    [...d.templates].map(async ([id, kind]) => {
      try {
        const response = await client.request(
          client.urls.authUrl,
          `/portal/v1/${kind}-templates/${encodeURIComponent(id)}`,
          { method: 'DELETE', token: authorized },
        )
        if (response.status === 204 || response.status === 404) report.deleted++
        else if (response.status === 409 && problemCode(response.text) === 'template_in_use')
          report.left.push(`${kind} template ${id} in tenant ${d.tenant} (issuance processes refer to it)`)
        else report.failed.push(`${kind} template ${id}: DELETE answered HTTP ${response.status}`)
      } catch (error) {
        report.failed.push(`${kind} template ${id}: ${(error as Error).message}`)
      }
    }),
  )
  if (used !== undefined && d.keys.has(used)) await revoke(used)
  return report
}

/** One line for a scenario's log: what was removed and what stays. */
export function describeCleanup(reports: readonly CleanupReport[]): string {
  const revoked = reports.reduce((n, r) => n + r.revoked, 0)
  const deleted = reports.reduce((n, r) => n + r.deleted, 0)
  const tenants = reports.map((r) => r.tenant).join(', ')
  const lines = [`Cleanup of ${tenants}: revoked ${revoked} API key(s), deleted ${deleted} template(s)`]
  const left = reports.flatMap((r) => r.left)
  const failed = reports.flatMap((r) => r.failed)
  if (left.length > 0) lines.push(`left on the target: ${left.join('; ')}`)
  if (failed.length > 0) lines.push(`could not remove: ${failed.join('; ')}`)
  return lines.join('\n')
}

/** Whether scenarios remove what they created: VC_HARNESS_CLEANUP, default on for external targets only. */
export function cleanupEnabled(kind: Target['kind'], env: Record<string, string | undefined>): boolean {
  const setting = (env.VC_HARNESS_CLEANUP ?? '').trim().toLowerCase()
  if (['1', 'true', 'yes', 'on'].includes(setting)) return true
  if (['0', 'false', 'no', 'off'].includes(setting)) return false
  // Embedded: an in-memory database; child: a temp dir removed at the end. Their debris dies with the run.
  return kind === 'external'
}

/** The run's tally (this worker process), printed by AfterAll. */
export class CleanupTally {
  scenarios = 0
  tenantsCreated = 0
  revoked = 0
  deleted = 0
  readonly left: string[] = []
  readonly failed: string[] = []

  add(reports: readonly CleanupReport[]) {
    if (reports.length === 0) return
    this.scenarios++
    for (const r of reports) {
      if (r.createdTenant) this.tenantsCreated++
      this.revoked += r.revoked
      this.deleted += r.deleted
      this.left.push(...r.left.filter((l) => !l.startsWith('tenant ')))
      this.failed.push(...r.failed)
    }
  }

  describe(): string | undefined {
    if (this.scenarios === 0) return undefined
    const lines = [
      `cleanup: ${this.scenarios} scenario(s) created things on the target: revoked ${this.revoked} API key(s), deleted ${this.deleted} template(s)`,
    ]
    if (this.tenantsCreated > 0)
      lines.push(
        `  left: ${this.tenantsCreated} tenant(s) named t-… (the portal cannot delete tenants; their keys are revoked)`,
      )
    if (this.left.length > 0)
      lines.push(
        `  left: ${this.left.length} template(s) that issuance processes refer to (409 template_in_use)`,
      )
    if (this.failed.length > 0) {
      lines.push(`  could not remove ${this.failed.length}:`)
      for (const f of this.failed.slice(0, 20)) lines.push(`    ${f}`)
      if (this.failed.length > 20) lines.push(`    … and ${this.failed.length - 20} more`)
    }
    return lines.join('\n')
  }
}
