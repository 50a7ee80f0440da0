// Where the conformance suite runs: the same features drive the service started in this process
// (`embedded`), the service started as a child process (`child`: `vc-harness serve` on a free port with a
// durable SQLite database in a fresh temp dir), or an external deployment reached by base URLs (`external`).
// docs/targets.md describes all three.
//
// Selected by VC_HARNESS_TARGET. Every variable the suite reads (an external target may take each of its
// settings from a profile file instead, VC_HARNESS_PROFILE; the variable overrides the profile's key):
//
// | Variable                       | Target         | Required | Profile key            | Meaning                                                   |
// |--------------------------------|----------------|----------|------------------------|-----------------------------------------------------------|
// | VC_HARNESS_TARGET              | all            | no       |                        | `embedded` (default; `external` when a profile is given), `child` or `external` |
// | VC_HARNESS_CONFIG              | embedded/child | no       |                        | service configuration file; default config/demo.json      |
// | VC_HARNESS_CHILD_INSTANCES     | child          | no       |                        | `serve` instances behind a round-robin proxy; default 1; more need VC_HARNESS_DATABASE_URL |
// | VC_HARNESS_PROFILE             | external       | no       |                        | JSON profile with the keys of this table (config/profile.example.json) |
// | VC_HARNESS_AUTH_URL            | external       | yes      | auth_url               | {auth_url}: login host and management portal              |
// | VC_HARNESS_ISSUER_URL          | external       | no       | issuer_url             | {issuer_url}; default the auth URL                        |
// | VC_HARNESS_VERIFIER_URL        | external       | no       | verifier_url           | {verifier_url}; default the issuer URL                    |
// | VC_HARNESS_TENANT              | external       | yes      | tenant                 | tenant id of the configured tenant                        |
// | VC_HARNESS_ISSUANCE_TEMPLATE   | external       | yes      | templates.issuance     | issuance template the application key is linked to        |
// | VC_HARNESS_OTHER_TEMPLATE      | external       | yes      | templates.other        | another template of that tenant, not linked to the app key |
// | VC_HARNESS_APP_KEY_ID          | external       | yes      | app_key.id             | application API key id (linked to the issuance template)  |
// | VC_HARNESS_APP_KEY_SECRET      | external       | yes      | app_key.secret         | its secret                                                |
// | VC_HARNESS_ADMIN_KEY_ID        | external       | yes      | admin_key.id           | administrator API key id of the tenant                    |
// | VC_HARNESS_ADMIN_KEY_SECRET    | external       | yes      | admin_key.secret       | its secret                                                |
// | VC_HARNESS_OPERATOR_KEY_ID     | external       | no       | operator_key.id        | operator key id; when given the target has `portal`       |
// | VC_HARNESS_OPERATOR_KEY_SECRET | external       | with id  | operator_key.secret    | its secret                                                |
// | VC_HARNESS_OPERATOR_TENANT     | external       | no       | operator_key.tenant    | tenant the operator key belongs to; default the tenant    |
// | VC_HARNESS_RECEIVER_URL        | external       | no       | receiver.public_url    | URL at which the service reaches the harness's webhook receiver |
// | VC_HARNESS_RECEIVER_PORT       | external       | with URL | receiver.listen_port   | port the receiver listens on (fixed, not 0, with a URL)   |
// | VC_HARNESS_RECEIVER_HOST       | external       | no       | receiver.listen_host   | interface the receiver listens on; default 0.0.0.0        |
// | VC_HARNESS_TEST_WALLET_PROVIDER | external      | no       | test_wallet_provider   | `true`: the tenant trusts vc-harness's test wallet provider |
//
// Capabilities:
// - `portal`: tenants, keys and templates can be created and keys revoked through /portal/v1 with an
//   operator key. Embedded and child: yes. External: when an operator key is given.
// - `clock`: the service's clock can be moved. Embedded only.
// - `webhooks`: the harness can point a template's webhookUrl at its own receiver and the service reaches
//   it. Embedded and child: yes (receiver on 127.0.0.1; the demo configuration admits loopback webhook
//   targets). External: with `portal` and a receiver URL.
// - `test-wallet-provider`: the tenant trusts the wallet attestations of vc-harness's published test wallet
//   provider (src/shared/oauth/test-wallet-provider.ts), so the simulated wallet can take the authorization
//   code flow (HAIP: PAR, DPoP, wallet attestation). Embedded and child: when the configuration's tenant has
//   `testWalletProvider: true` (the demo's has). External: when the profile says so (test_wallet_provider).

import { fixtureFromConfig, trustsTestWalletProvider } from './fixture.ts'
import { resolveExternal, TargetConfigError } from './profile.ts'
import {
  CAPABILITIES,
  type Capability,
  LOOPBACK_RECEIVER,
  TARGET_KINDS,
  type Target,
  type TargetKind,
} from './target-types.ts'

// The target's vocabulary lives in leaf modules that child-target.ts and profile.ts import without
// importing this file back; re-exported so callers keep one entry point.
export { fixtureFromConfig } from './fixture.ts'
export { TargetConfigError } from './profile.ts'
export * from './target-types.ts'

/** Why a target lacks a capability, or undefined when it has it. */
export function missingCapability(target: Target, capability: Capability): string | undefined {
  if (target.capabilities.has(capability)) return undefined
  if (capability === 'clock') {
    return `the ${target.kind} target's clock cannot be moved, so expiry cannot be tested without waiting`
  }
  if (capability === 'portal') {
    return `the ${target.kind} target has no portal access: set VC_HARNESS_OPERATOR_KEY_ID and VC_HARNESS_OPERATOR_KEY_SECRET (or operator_key in the profile)`
  }
  if (capability === 'test-wallet-provider') {
    return target.kind === 'external'
      ? `the external target's tenant "${target.tenant.tenant}" is not known to trust vc-harness's test wallet provider, whose wallet attestations the simulated wallet sends in the authorization code flow: set VC_HARNESS_TEST_WALLET_PROVIDER=true (or test_wallet_provider: true in the profile) when the deployment's tenant is configured with testWalletProvider: true (a test deployment only: the provider's key is published)`
      : `the ${target.kind} target's configured tenant "${target.tenant.tenant}" does not trust vc-harness's test wallet provider, whose wallet attestations the simulated wallet sends in the authorization code flow: give it testWalletProvider: true in the configuration (VC_HARNESS_CONFIG; the demo configuration has it)`
  }
  const reasons: string[] = []
  if (!target.capabilities.has('portal')) {
    reasons.push('webhook templates are created through the portal, which needs an operator key')
  }
  if (target.receiver.publicUrl === undefined) {
    reasons.push(
      'it has no receiver URL reachable from the service: set VC_HARNESS_RECEIVER_URL and VC_HARNESS_RECEIVER_PORT (or receiver.public_url and receiver.listen_port in the profile)',
    )
  }
  return `the ${target.kind} target cannot receive webhooks: ${reasons.join('; and ') || 'not supported'}`
}

/** One line per capability, for logs and reports: `portal: yes (…)` / `clock: no (…)`. */
export function describeCapabilities(target: Target): string {
  const instances = target.child?.instances.length ?? 1
  const lines = [
    `target: ${target.kind} at ${target.urls.authUrl}${instances > 1 ? ` (${instances} instances behind a round-robin proxy)` : ''}`,
  ]
  for (const capability of CAPABILITIES) {
    const missing = missingCapability(target, capability)
    lines.push(`  ${capability}: ${missing === undefined ? 'yes' : `no (${missing})`}`)
  }
  return lines.join('\n')
}

type Env = Record<string, string | undefined>

/**
 * Starts (embedded, child) or describes (external) the target named by VC_HARNESS_TARGET. Without it the
 * target is embedded, or external when VC_HARNESS_PROFILE names a profile.
 */
export async function startTarget(env: Env = process.env): Promise<Target> {
  const kind = env.VC_HARNESS_TARGET || (env.VC_HARNESS_PROFILE ? 'external' : 'embedded')
  if (!TARGET_KINDS.includes(kind as TargetKind)) {
    throw new TargetConfigError(
      `VC_HARNESS_TARGET must be one of ${TARGET_KINDS.map((k) => `"${k}"`).join(', ')}, not "${kind}"`,
    )
  }
  if (kind !== 'external' && env.VC_HARNESS_PROFILE) {
    throw new TargetConfigError(
      `VC_HARNESS_PROFILE describes an external deployment; it does not apply to VC_HARNESS_TARGET=${kind} (unset one of them)`,
    )
  }
  if (kind === 'embedded') return startEmbedded(env)
  if (kind === 'child') return (await import('./child-target.ts')).startChild(env)
  return externalTarget(env)
}

/** The service in this process on 127.0.0.1, a free port, an in-memory database and a hand-moved clock. */
export async function startEmbedded(env: Env = process.env): Promise<Target> {
  // Imported here so an external run never loads the service (nor its database driver).
  const [{ startServer }, { DEMO_CONFIG_PATH, loadConfigFile }, { ShiftedClock }] = await Promise.all([
    import('../service/server.ts'),
    import('../service/config/index.ts'),
    import('../service/util/clock.ts'),
  ])
  const configPath = env.VC_HARNESS_CONFIG || DEMO_CONFIG_PATH
  const config = loadConfigFile(configPath)
  const { tenant, operator } = fixtureFromConfig(config, configPath)
  const clock = new ShiftedClock()
  const server = await startServer({ config, dataDir: ':memory:', host: '127.0.0.1', port: 0, clock })
  const capabilities = new Set<Capability>(['portal', 'clock', 'webhooks'])
  if (trustsTestWalletProvider(config, tenant.tenant)) capabilities.add('test-wallet-provider')
  return {
    kind: 'embedded',
    urls: { authUrl: server.url, issuerUrl: server.url, verifierUrl: server.url },
    capabilities,
    tenant,
    operator,
    clock,
    receiver: { ...LOOPBACK_RECEIVER },
    close: () => server.close(),
  }
}

/**
 * An external deployment described by a profile file and environment variables (see the table at the
 * top and docs/targets.md). Throws TargetConfigError naming every missing or invalid key.
 */
export function externalTarget(env: Env = process.env): Target {
  const settings = resolveExternal(env)
  const capabilities = new Set<Capability>()
  if (settings.operator) capabilities.add('portal')
  if (settings.operator && settings.receiver.publicUrl !== undefined) capabilities.add('webhooks')
  if (settings.testWalletProvider) capabilities.add('test-wallet-provider')
  return {
    kind: 'external',
    urls: settings.urls,
    capabilities,
    tenant: settings.tenant,
    ...(settings.operator ? { operator: settings.operator } : {}),
    receiver: settings.receiver,
    close: async () => {},
  }
}
