// The tenant fixture of a target whose service configuration the suite knows (embedded and child).

import type { ApiKeyCredentials } from '../client/index.ts'
import type { ServiceConfig } from '../service/config/index.ts'
import { TargetConfigError } from './profile.ts'
import type { TenantFixture } from './target-types.ts'

/**
 * Picks from a service configuration the tenant the suite logs in to and the operator key (embedded and
 * child targets: the suite knows the service's configuration).
 */
export function fixtureFromConfig(
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
  throw new TargetConfigError(
    `${source}: the suite needs a tenant with an application key linked to an issuance ` +
      'template, a second template, an admin key and an operator key',
  )
}

/**
 * Whether the configuration's tenant `tenantId` trusts vc-harness's published test wallet provider
 * (`tenants[].testWalletProvider`): the `test-wallet-provider` capability of embedded and child targets.
 */
export function trustsTestWalletProvider(config: ServiceConfig, tenantId: string): boolean {
  return config.tenants.find((t) => t.id === tenantId)?.testWalletProvider === true
}
