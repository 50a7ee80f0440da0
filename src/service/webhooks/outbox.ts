import { randomUUID } from 'node:crypto'
import type { WebhookBody } from '../events.ts'
import type { Repositories, TemplateRecord, WebhookEventType } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'

/**
 * Writes webhook events into the outbox. Callers pass the repositories of the transaction that makes the
 * state change, so the event exists exactly when the change does; the dispatcher delivers it later.
 */
export class WebhookOutbox {
  /**
   * Called after each row written (inside the transaction): the dispatcher then knows a terminal event
   * may have work for it, and skips its scan for the many that have none (templates without webhooks).
   */
  onEnqueue: () => void = () => {}

  constructor(private readonly clock: Clock) {}

  /** Queues `body` for the template's webhookUrl; returns the event id, or undefined when it has none. */
  async enqueueIn(
    repos: Repositories,
    template: TemplateRecord,
    subjectId: string,
    type: WebhookEventType,
    body: WebhookBody,
  ): Promise<string | undefined> {
    const url = template.body.webhookUrl
    if (url === undefined) return undefined
    const now = this.clock.now()
    const id = `msg_${randomUUID()}`
    await repos.webhooks.enqueue({
      id,
      tenantId: template.tenantId,
      templateId: template.id,
      templateKind: template.kind,
      subjectId,
      type,
      url,
      body: JSON.stringify(body),
      state: 'pending',
      attempts: 0,
      nextAttemptAt: now,
      leaseUntil: null,
      lastStatus: null,
      lastError: null,
      createdAt: now,
      updatedAt: now,
      deliveredAt: null,
    })
    this.onEnqueue()
    return id
  }
}
