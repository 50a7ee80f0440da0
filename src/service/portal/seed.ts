import { hashSecret, verifySecret } from '../auth/secrets.ts'
import type { ServiceConfig } from '../config/index.ts'
import { resolveTemplate } from '../config/schema.ts'
import type { Store } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'

/**
 * Applies the configuration file to the store at boot, in one transaction. The file is the source of
 * truth for what it declares (the portal refuses to change those entries); entries it declared at an
 * earlier boot but no longer does are revoked (keys) or deleted (templates). Portal-made entries are untouched.
 */
export async function seedFromConfig(store: Store, config: ServiceConfig, clock: Clock): Promise<void> {
  const now = clock.now()
  await store.transaction(async (tx) => {
    const declaredKeys = new Set<string>()
    const declaredTemplates = new Set<string>()
    for (const tenant of config.tenants) {
      const existingTenant = await tx.tenants.get(tenant.id)
      await tx.tenants.upsert({
        id: tenant.id,
        source: 'config',
        createdAt: existingTenant?.createdAt ?? now,
      })
      const templates = [
        ...tenant.issuanceTemplates.map((body) => ({ kind: 'issuance' as const, body })),
        ...tenant.verificationTemplates.map((body) => ({ kind: 'verification' as const, body })),
      ]
      for (const { kind, body } of templates) {
        declaredTemplates.add(`${tenant.id}/${body.id}`)
        const existing = await tx.templates.find(tenant.id, body.id)
        await tx.templates.upsert({
          tenantId: tenant.id,
          id: body.id,
          kind,
          body: resolveTemplate(kind, body),
          source: 'config',
          createdAt: existing?.createdAt ?? now,
          updatedAt:
            existing && JSON.stringify(existing.body) === JSON.stringify(body) ? existing.updatedAt : now,
        })
        // A configuration template cannot be saved through the portal: re-applying the file at boot is
        // what re-enables its endpoint after a 410 Gone.
        await tx.webhooks.enableEndpoint(tenant.id, body.id)
      }
      for (const key of tenant.apiKeys) {
        declaredKeys.add(key.id)
        const existing = await tx.apiKeys.get(key.id)
        if (existing && existing.tenantId !== tenant.id) {
          throw new Error(
            `API key ${key.id} of tenant "${tenant.id}" already belongs to tenant "${existing.tenantId}"`,
          )
        }
        await tx.apiKeys.upsert({
          id: key.id,
          tenantId: tenant.id,
          role: key.role,
          templateId: key.template ?? null,
          // Keep the stored hash while it still matches, so a restart does not rewrite every key.
          secretHash:
            existing && verifySecret(key.secret, existing.secretHash)
              ? existing.secretHash
              : hashSecret(key.secret),
          label: key.label ?? null,
          source: 'config',
          createdAt: existing?.createdAt ?? now,
          revokedAt: null,
        })
      }
    }
    for (const key of await tx.apiKeys.listBySource('config')) {
      if (!declaredKeys.has(key.id)) await tx.apiKeys.revoke(key.tenantId, key.id, now)
    }
    for (const template of await tx.templates.listBySource('config')) {
      if (!declaredTemplates.has(`${template.tenantId}/${template.id}`)) {
        await tx.templates.delete(template.tenantId, template.id)
      }
    }
  })
}
