import { randomUUID } from 'node:crypto'
import { generateSecret, hashSecret } from '../auth/secrets.ts'
import type { Principal } from '../auth/tokens.ts'
import { issuanceTemplateProblem, verificationTemplateProblem, webhookProblem } from '../config/index.ts'
import {
  type IssuanceTemplate,
  type Role,
  resolveTemplate,
  type VerificationTemplate,
} from '../config/schema.ts'
import { AppError } from '../errors/problem.ts'
import {
  type ApiKeyRecord,
  ConflictError,
  type Store,
  type TemplateBody,
  type TemplateKind,
  type TemplateRecord,
} from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import type { TargetPolicy } from '../util/net-targets.ts'

export interface ApiKeyView {
  id: string
  role: Role
  template: string | null
  label: string | null
  source: 'config' | 'portal'
  createdAt: string
  revokedAt: string | null
}

export type TemplateView<K extends TemplateKind> = Omit<
  TemplateBody<K>,
  'webhookSecret' | 'webhookPreviousSecrets'
> & {
  hasWebhookSecret: boolean
  source: 'config' | 'portal'
  createdAt: string
  updatedAt: string
}

export const keyView = (k: ApiKeyRecord): ApiKeyView => ({
  id: k.id,
  role: k.role,
  template: k.templateId,
  label: k.label,
  source: k.source,
  createdAt: isoTime(k.createdAt),
  revokedAt: k.revokedAt === null ? null : isoTime(k.revokedAt),
})

/** Secrets never leave the service: a template view says only whether one is set. */
export function templateView<K extends TemplateKind>(t: TemplateRecord<K>): TemplateView<K> {
  const {
    webhookSecret,
    webhookPreviousSecrets: _previous,
    ...body
  } = t.body as IssuanceTemplate | VerificationTemplate
  return {
    ...(body as unknown as Omit<TemplateBody<K>, 'webhookSecret' | 'webhookPreviousSecrets'>),
    hasWebhookSecret: webhookSecret !== undefined,
    source: t.source,
    createdAt: isoTime(t.createdAt),
    updatedAt: isoTime(t.updatedAt),
  }
}

const KIND_NAME: Record<TemplateKind, string> = {
  issuance: 'issuance template',
  verification: 'verification template',
}

/** The management portal (left unspecified by docs/interface.md): tenants, API keys and templates. */
export class PortalService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly webhookMode: TargetPolicy,
  ) {}

  /** Webhook settings are checked like the configuration file's: allowed target, a secret to sign with. */
  private checkWebhook(body: {
    webhookUrl?: string
    webhookSecret?: string
    webhookPreviousSecrets?: string[]
  }) {
    const problem = webhookProblem(body, this.webhookMode)
    if (problem) {
      throw new AppError('invalid_webhook', `body/${problem.field}: ${problem.message}`, {
        errors: [{ field: `body/${problem.field}`, message: problem.message }],
      })
    }
  }

  /** Cross-field rules of a template, as the configuration file has them. */
  private checkTemplate(kind: TemplateKind, body: object) {
    const problem =
      kind === 'issuance'
        ? issuanceTemplateProblem(body as IssuanceTemplate)
        : verificationTemplateProblem(body as VerificationTemplate)
    if (problem) {
      throw new AppError('validation_failed', `body/${problem.field}: ${problem.message}`, {
        errors: [{ field: `body/${problem.field}`, message: problem.message }],
      })
    }
  }

  /** Operators only: a new empty tenant with one administrator key (its secret is shown once). */
  async createTenant(id: string) {
    const now = this.clock.now()
    const admin = this.newKey(id, 'admin', null, `administrator of ${id}`, now)
    try {
      await this.store.transaction(async (tx) => {
        await tx.tenants.create({ id, source: 'portal', createdAt: now })
        await tx.apiKeys.create(admin.record)
      })
    } catch (error) {
      if (error instanceof ConflictError) throw new AppError('conflict', `tenant "${id}" already exists`)
      throw error
    }
    return { id, createdAt: isoTime(now), adminKey: { ...keyView(admin.record), secret: admin.secret } }
  }

  async createApiKey(p: Principal, input: { role: 'app' | 'admin'; template?: string; label?: string }) {
    if (input.template !== undefined && !(await this.store.templates.find(p.tenantId, input.template))) {
      throw new AppError('template_not_found', `no template "${input.template}" in this tenant`)
    }
    const key = this.newKey(
      p.tenantId,
      input.role,
      input.template ?? null,
      input.label ?? null,
      this.clock.now(),
    )
    await this.store.apiKeys.create(key.record)
    return { ...keyView(key.record), secret: key.secret }
  }

  async listApiKeys(p: Principal) {
    return (await this.store.apiKeys.listByTenant(p.tenantId)).map(keyView)
  }

  async revokeApiKey(p: Principal, id: string) {
    const key = await this.store.apiKeys.get(id)
    if (!key || key.tenantId !== p.tenantId) throw new AppError('api_key_not_found', `no API key "${id}"`)
    if (key.source === 'config') {
      throw new AppError(
        'config_managed',
        `API key "${id}" is declared in the configuration file; remove it there`,
      )
    }
    await this.store.apiKeys.revoke(p.tenantId, id, this.clock.now())
  }

  async getTemplate<K extends TemplateKind>(p: Principal, kind: K, id: string): Promise<TemplateRecord<K>> {
    const template = await this.store.templates.get(p.tenantId, id, kind)
    if (!template) throw new AppError('template_not_found', `no ${KIND_NAME[kind]} "${id}" in this tenant`)
    return template
  }

  async listTemplates<K extends TemplateKind>(p: Principal, kind: K) {
    return this.store.templates.list(p.tenantId, kind)
  }

  async createTemplate<K extends TemplateKind>(p: Principal, kind: K, body: TemplateBody<K>) {
    this.checkWebhook(body)
    this.checkTemplate(kind, body)
    const now = this.clock.now()
    const record: TemplateRecord<K> = {
      tenantId: p.tenantId,
      id: body.id,
      kind,
      body: resolveTemplate(kind, body),
      source: 'portal',
      createdAt: now,
      updatedAt: now,
    }
    try {
      await this.store.templates.create(record)
    } catch (error) {
      if (error instanceof ConflictError) {
        throw new AppError('conflict', `template id "${body.id}" is already used in this tenant`)
      }
      throw error
    }
    return record
  }

  /** Full replacement; the id comes from the path. */
  async replaceTemplate<K extends TemplateKind>(p: Principal, kind: K, id: string, body: TemplateBody<K>) {
    const current = await this.getTemplate(p, kind, id)
    this.refuseConfigManaged(current)
    this.checkWebhook(body)
    this.checkTemplate(kind, body)
    const record: TemplateRecord<K> = {
      ...current,
      body: resolveTemplate(kind, { ...body, id }),
      updatedAt: this.clock.now(),
    }
    // Saving the template is how an operator re-enables an endpoint that answered 410 Gone.
    await this.store.transaction(async (repos) => {
      await repos.templates.update(record)
      await repos.webhooks.enableEndpoint(p.tenantId, id)
    })
    return record
  }

  /** Refused while processes or live API keys refer to the template: ids stay meaningful. */
  async deleteTemplate(p: Principal, kind: TemplateKind, id: string) {
    const current = await this.getTemplate(p, kind, id)
    this.refuseConfigManaged(current)
    const [processes, keys] = await Promise.all([
      this.store.processes.countByTemplate(p.tenantId, id),
      this.store.apiKeys.countLinkedToTemplate(p.tenantId, id),
    ])
    if (processes + keys > 0) {
      throw new AppError(
        'template_in_use',
        `template "${id}" is used by ${processes} issuance process(es) and ${keys} active API key(s)`,
      )
    }
    await this.store.templates.delete(p.tenantId, id)
  }

  private refuseConfigManaged(t: TemplateRecord) {
    if (t.source === 'config') {
      throw new AppError(
        'config_managed',
        `template "${t.id}" is declared in the configuration file; change it there`,
      )
    }
  }

  private newKey(tenantId: string, role: Role, templateId: string | null, label: string | null, now: number) {
    const secret = generateSecret()
    const record: ApiKeyRecord = {
      id: randomUUID(),
      tenantId,
      role,
      templateId,
      secretHash: hashSecret(secret),
      label,
      source: 'portal',
      createdAt: now,
      revokedAt: null,
    }
    return { record, secret }
  }
}
