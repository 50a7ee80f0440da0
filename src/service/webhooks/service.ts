import type { Principal } from '../auth/tokens.ts'
import { AppError } from '../errors/problem.ts'
import type { Store, TemplateKind, WebhookAttemptRecord, WebhookEventRecord } from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import type { WebhookDispatcher } from './dispatcher.ts'

// The portal's view of webhook deliveries: the log per template, one delivery with its attempts, and
// redelivery on request. Tenant-scoped like everything in the portal.

const iso = (ms: number | null) => (ms === null ? null : isoTime(ms))

export function attemptView(a: WebhookAttemptRecord) {
  return {
    attempt: a.attempt,
    at: isoTime(a.at),
    durationMs: a.durationMs,
    status: a.status,
    outcome: a.outcome,
    error: a.error,
    nextAttemptAt: iso(a.nextAttemptAt),
    trigger: a.trigger,
  }
}

export function deliveryView(e: WebhookEventRecord) {
  return {
    id: e.id,
    event: e.type,
    subject: e.subjectId,
    template: e.templateId,
    url: e.url,
    state: e.state,
    attempts: e.attempts,
    nextAttemptAt: e.state === 'pending' ? iso(e.nextAttemptAt) : null,
    lastStatus: e.lastStatus,
    lastError: e.lastError,
    createdAt: isoTime(e.createdAt),
    updatedAt: isoTime(e.updatedAt),
    deliveredAt: iso(e.deliveredAt),
    body: JSON.parse(e.body) as unknown,
  }
}

export class WebhookService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly dispatcher: WebhookDispatcher,
  ) {}

  /** The template's endpoint state and its deliveries, newest first; `before` pages on with an event id. */
  async listDeliveries(
    p: Principal,
    kind: TemplateKind,
    templateId: string,
    query: { limit: number; before?: string; state?: string },
  ) {
    const template = await this.store.templates.get(p.tenantId, templateId, kind)
    if (!template)
      throw new AppError('template_not_found', `no ${kind} template "${templateId}" in this tenant`)
    let beforeSeq: number | undefined
    if (query.before !== undefined) {
      const anchor = await this.store.webhooks.get(query.before)
      if (!anchor || anchor.tenantId !== p.tenantId || anchor.templateId !== templateId) {
        throw new AppError('invalid_cursor', `"before" must be a delivery id of template "${templateId}"`)
      }
      beforeSeq = anchor.seq
    }
    const [rows, endpoint] = await Promise.all([
      this.store.webhooks.listByTemplate(p.tenantId, templateId, {
        limit: query.limit,
        ...(beforeSeq !== undefined ? { beforeSeq } : {}),
        ...(query.state !== undefined ? { state: query.state } : {}),
      }),
      this.store.webhooks.endpoint(p.tenantId, templateId),
    ])
    const url = template.body.webhookUrl ?? null
    const disabled = endpoint !== undefined && endpoint.url === url
    return {
      endpoint: {
        url,
        disabled,
        disabledAt: disabled ? isoTime(endpoint.disabledAt) : null,
        disabledReason: disabled ? endpoint.disabledReason : null,
      },
      deliveries: rows.map((e) => deliveryView(e)),
    }
  }

  async getDelivery(p: Principal, id: string) {
    const event = await this.owned(p, id)
    return { ...deliveryView(event), log: (await this.store.webhooks.attempts(id)).map(attemptView) }
  }

  /** Starts a new delivery round of an event that is not pending (same webhook-id, fresh attempts). */
  async redeliver(p: Principal, id: string) {
    const event = await this.owned(p, id)
    if (event.state === 'pending') {
      throw new AppError('conflict', `delivery "${id}" is still pending; its next attempt is scheduled`)
    }
    const endpoint = await this.store.webhooks.endpoint(p.tenantId, event.templateId)
    if (endpoint && endpoint.url === event.url) {
      throw new AppError(
        'webhook_endpoint_disabled',
        `${event.url} is disabled (${endpoint.disabledReason}); save the template again to re-enable it`,
      )
    }
    if (!(await this.store.webhooks.requeue(id, this.clock.now()))) {
      throw new AppError('conflict', `delivery "${id}" was requeued concurrently`)
    }
    await this.dispatcher.redelivered(event)
    return this.getDelivery(p, id)
  }

  private async owned(p: Principal, id: string) {
    const event = await this.store.webhooks.get(id)
    if (!event || event.tenantId !== p.tenantId) {
      throw new AppError('webhook_delivery_not_found', `no webhook delivery "${id}"`)
    }
    return event
  }
}
