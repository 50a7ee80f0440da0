// Where the conformance suite runs: the same features drive the service started in this process
// (`embedded`) or an external deployment reached by base URLs (`external`).
//
// Selected by VC_HARNESS_TARGET. Every variable the suite reads:
//
// | Variable                       | Target   | Required | Meaning                                                   |
// |--------------------------------|----------|----------|-----------------------------------------------------------|
// | VC_HARNESS_TARGET              | both     | no       | `embedded` (default) or `external`                        |
// | VC_HARNESS_CONFIG              | embedded | no       | service configuration file; default config/demo.json      |
// | VC_HARNESS_AUTH_URL            | external | yes      | {auth_url}: login host and management portal              |
// | VC_HARNESS_ISSUER_URL          | external | no       | {issuer_url}; default VC_HARNESS_AUTH_URL                 |
// | VC_HARNESS_VERIFIER_URL        | external | no       | {verifier_url}; default VC_HARNESS_ISSUER_URL             |
// | VC_HARNESS_TENANT              | external | yes      | tenant id of the configured tenant                        |
// | VC_HARNESS_ISSUANCE_TEMPLATE   | external | yes      | issuance template the application key is linked to        |
// | VC_HARNESS_OTHER_TEMPLATE      | external | yes      | another template of that tenant, not linked to the app key |
// | VC_HARNESS_APP_KEY_ID          | external | yes      | application API key id (linked to the issuance template)  |
// | VC_HARNESS_APP_KEY_SECRET      | external | yes      | its secret                                                |
// | VC_HARNESS_ADMIN_KEY_ID        | external | yes      | administrator API key id of the tenant                    |
// | VC_HARNESS_ADMIN_KEY_SECRET    | external | yes      | its secret                                                |
// | VC_HARNESS_OPERATOR_KEY_ID     | external | no       | operator key id; when given the target has `portal`       |
// | VC_HARNESS_OPERATOR_KEY_SECRET | external | with id  | its secret                                                |
// | VC_HARNESS_OPERATOR_TENANT     | external | no       | tenant the operator key belongs to; default VC_HARNESS_TENANT |
//
// Capabilities: `portal` (tenants, keys and templates can be created and keys revoked through
// /portal/v1 with an operator key) and `clock` (the service's clock can be moved). The embedded target
// has both; an external one has `portal` only when an operator key is given, and never `clock`.

import type { ApiKeyCredentials, ServiceUrls } from '../client/index.ts'
// Types only (erased at run time): an external run still never loads the service.
import type { ServiceConfig } from '../service/config/index.ts'
import type { ShiftedClock } from '../service/util/clock.ts'

export type Capability = 'portal' | 'clock'
export const CAPABILITIES: readonly Capability[] = ['portal', 'clock']

/** An API key as the portal hands it out: id and secret. */
export interface KeySecret {
  id: string
  secret: string
}

/** A tenant the suite may log in to, with the keys and templates scenarios need. */
export interface TenantFixture {
  tenant: string
  /** Issuance template the application key is linked to. */
  issuanceTemplate: string
  /** Another template of the same tenant that the application key is not linked to. */
  otherTemplate: string
  /**
   * Templates with a particular setup, for the issuance features: one asking for a tx_code, one issuing a
   * VerifiableId, one requiring the holder to present a VerifiableId. Present on provisioned tenants;
   * scenarios that need them are tagged @needs-portal.
   */
  templates?: { txCode: string; identity: string; requiresIdentity: string }
  /**
   * Verification templates (provisioned tenants only): a degree check asking for the degree claim, one
   * asking for a degree and one of two identity credentials (pick), and one accepting credentials without
   * a status entry.
   */
  verificationTemplates?: { degreeCheck: string; degreeAndIdentity: string; statusOptional: string }
  /** Application key linked to `issuanceTemplate`. */
  appKey: KeySecret
  /** Application key without a linked template (only tenants provisioned through the portal have one). */
  unlinkedAppKey?: KeySecret
  adminKey: KeySecret
}

export interface Target {
  kind: 'embedded' | 'external'
  urls: ServiceUrls
  capabilities: ReadonlySet<Capability>
  /** The tenant the target was configured with (the demo tenant when embedded). */
  tenant: TenantFixture
  /** Operator credentials; present exactly when the target has `portal`. */
  operator?: ApiKeyCredentials
  /** The service's clock; present exactly when the target has `clock`. */
  clock?: ShiftedClock
  close(): Promise<void>
}

/** Why a target lacks a capability, or undefined when it has it. */
export function missingCapability(target: Target, capability: Capability): string | undefined {
  if (target.capabilities.has(capability)) return undefined
  if (capability === 'clock') {
    return `the ${target.kind} target's clock cannot be moved, so expiry cannot be tested without waiting`
  }
  return `the ${target.kind} target has no portal access: set VC_HARNESS_OPERATOR_KEY_ID and VC_HARNESS_OPERATOR_KEY_SECRET`
}

/** One line per capability, for logs and reports: `portal: yes (…)` / `clock: no (…)`. */
export function describeCapabilities(target: Target): string {
  const lines = [`target: ${target.kind} at ${target.urls.authUrl}`]
  for (const capability of CAPABILITIES) {
    const missing = missingCapability(target, capability)
    lines.push(`  ${capability}: ${missing === undefined ? 'yes' : `no (${missing})`}`)
  }
  return lines.join('\n')
}

type Env = Record<string, string | undefined>

/** Starts (embedded) or describes (external) the target named by VC_HARNESS_TARGET. */
export async function startTarget(env: Env = process.env): Promise<Target> {
  const kind = env.VC_HARNESS_TARGET ?? 'embedded'
  if (kind === 'embedded') return startEmbedded(env)
  if (kind === 'external') return externalTarget(env)
  throw new Error(`VC_HARNESS_TARGET must be "embedded" or "external", not "${kind}"`)
}

/** The service in this process on 127.0.0.1, a free port, an in-memory database and a hand-moved clock. */
export async function startEmbedded(env: Env = process.env): Promise<Target> {
  // Imported here so an external run never loads the service (nor its database driver).
  const [{ startServer }, { DEMO_CONFIG_PATH, loadConfigFile }, { ShiftedClock }] = await Promise.all([
    import('../service/server.ts'),
    import('../service/config/index.ts'),
    import('../service/util/clock.ts'),
  ])
  const configPath = env.VC_HARNESS_CONFIG ?? DEMO_CONFIG_PATH
  const config = loadConfigFile(configPath)
  const { tenant, operator } = fixtureFromConfig(config, configPath)
  const clock = new ShiftedClock()
  const server = await startServer({ config, dataDir: ':memory:', host: '127.0.0.1', port: 0, clock })
  return {
    kind: 'embedded',
    urls: { authUrl: server.url, issuerUrl: server.url, verifierUrl: server.url },
    capabilities: new Set<Capability>(['portal', 'clock']),
    tenant,
    operator,
    clock,
    close: () => server.close(),
  }
}

/** Picks from a service configuration the tenant the suite logs in to and the operator key. */
function fixtureFromConfig(
  config: ServiceConfig,
  source: string,
): { tenant: TenantFixture; operator: ApiKeyCredentials } {
  for (const t of config.tenants) {
    const issuance = new Set(t.issuanceTemplates.map((x) => x.id))
    const app = t.apiKeys.find(
      (k) => k.role === 'app' && k.template !== undefined && issuance.has(k.template),
    )
    const admin = t.apiKeys.find((k) => k.role === 'admin')
    const operator = t.apiKeys.find((k) => k.role === 'operator')
    const other = [...t.issuanceTemplates, ...t.verificationTemplates].find((x) => x.id !== app?.template)
    if (!app?.template || !admin || !operator || !other) continue
    const unlinked = t.apiKeys.find((k) => k.role === 'app' && k.template === undefined)
    return {
      tenant: {
        tenant: t.id,
        issuanceTemplate: app.template,
        otherTemplate: other.id,
        appKey: { id: app.id, secret: app.secret },
        ...(unlinked ? { unlinkedAppKey: { id: unlinked.id, secret: unlinked.secret } } : {}),
        adminKey: { id: admin.id, secret: admin.secret },
      },
      operator: { keyId: operator.id, secret: operator.secret, tenant: t.id },
    }
  }
  throw new Error(
    `${source}: the embedded target needs a tenant with an application key linked to an issuance ` +
      'template, a second template, an admin key and an operator key',
  )
}

/** An external deployment described by environment variables (see the table at the top). */
export function externalTarget(env: Env = process.env): Target {
  const missing: string[] = []
  const need = (name: string): string => {
    const value = env[name]
    if (!value) missing.push(name)
    return value ?? ''
  }
  const authUrl = need('VC_HARNESS_AUTH_URL').replace(/\/+$/, '')
  const issuerUrl = (env.VC_HARNESS_ISSUER_URL ?? authUrl).replace(/\/+$/, '')
  const verifierUrl = (env.VC_HARNESS_VERIFIER_URL ?? issuerUrl).replace(/\/+$/, '')
  const tenant: TenantFixture = {
    tenant: need('VC_HARNESS_TENANT'),
    issuanceTemplate: need('VC_HARNESS_ISSUANCE_TEMPLATE'),
    otherTemplate: need('VC_HARNESS_OTHER_TEMPLATE'),
    appKey: { id: need('VC_HARNESS_APP_KEY_ID'), secret: need('VC_HARNESS_APP_KEY_SECRET') },
    adminKey: { id: need('VC_HARNESS_ADMIN_KEY_ID'), secret: need('VC_HARNESS_ADMIN_KEY_SECRET') },
  }
  let operator: ApiKeyCredentials | undefined
  if (env.VC_HARNESS_OPERATOR_KEY_ID) {
    operator = {
      keyId: env.VC_HARNESS_OPERATOR_KEY_ID,
      secret: need('VC_HARNESS_OPERATOR_KEY_SECRET'),
      tenant: env.VC_HARNESS_OPERATOR_TENANT ?? tenant.tenant,
    }
  }
  if (missing.length > 0) {
    throw new Error(`VC_HARNESS_TARGET=external needs these environment variables: ${missing.join(', ')}`)
  }
  return {
    kind: 'external',
    urls: { authUrl, issuerUrl, verifierUrl },
    capabilities: new Set<Capability>(operator ? ['portal'] : []),
    tenant,
    ...(operator ? { operator } : {}),
    close: async () => {},
  }
}
