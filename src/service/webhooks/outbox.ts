import { randomUUID } from 'node:crypto'
import type { WebhookBody } from '../events.ts'
import type {
  LeasedWebhookEvent,
  Repositories,
  TemplateRecord,
  WebhookEventRecord,
  WebhookEventType,
} from '../store/index.ts'
import type { Clock } from '../util/clock.ts'

/** A lease an event is written with: `owner` alone may send it until `until`. */
export interface OutboxLease {
  owner: string
  until: number
}

/**
 * The dispatcher of this process as the outbox sees it (dispatcher.ts implements it). Each event is written
 * already leased to it and handed over in memory, so that delivering it costs neither a scan nor a claim;
 * the dispatcher sends it once the service announces that the change committed.
 */
export interface OutboxHandoff {
  /** The lease for a new event to `url`, or null to leave the event to any dispatcher's scan (stopped, busy). */
  leaseFor(url: string, now: number): OutboxLease | null
  /**
   * The row as written, inside the transaction that has still to commit, or just after the one statement
   * that wrote it with its change (issue 38); either way before the change is announced.
   */
  written(row: LeasedWebhookEvent): void
}

/**
 * Writes webhook events into the outbox. Callers pass the repositories of the transaction that makes the
 * state change, so the event exists exactly when the change does; the dispatcher delivers it later.
 */
export class WebhookOutbox {
  constructor(
    private readonly clock: Clock,
    private readonly handoff?: OutboxHandoff,
  ) {}

  /** Queues `body` for the template's webhookUrl; returns the event id, or undefined when it has none. */
  async enqueueIn(
    repos: Repositories,
    template: TemplateRecord,
    subjectId: string,
    type: WebhookEventType,
    body: WebhookBody,
  ): Promise<string | undefined> {
    const event = this.eventFor(template, subjectId, type, body)
    if (!event) return undefined
    this.written(await repos.webhooks.enqueue(event))
    return event.id
  }

  /**
   * The event enqueueIn would write now (leased to this process's dispatcher if it takes it), or undefined
   * when the template has no webhookUrl: for a store write that writes it with its state change in one
   * statement (sessions.completeWithEvent, issue 38). Pass the row it wrote, if any, to `written` before the
   * change is announced; an event built and not written needs nothing.
   */
  eventFor(
    template: TemplateRecord,
    subjectId: string,
    type: WebhookEventType,
    body: WebhookBody,
  ): WebhookEventRecord | undefined {
    const url = template.body.webhookUrl
    if (url === undefined) return undefined
    const now = this.clock.now()
    const lease = this.handoff?.leaseFor(url, now) ?? null
    return {
      id: `msg_${randomUUID()}`,
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
      leaseUntil: lease?.until ?? null,
      leaseOwner: lease?.owner ?? null,
      lastStatus: null,
      lastError: null,
      createdAt: now,
      updatedAt: now,
      deliveredAt: null,
    }
  }

  /** An event as written, inside or just after the statement that wrote it, before its change is announced. */
  written(row: LeasedWebhookEvent) {
    // Without a handoff (a writer with no dispatcher of its own) the row waits for a dispatcher's scan.
    this.handoff?.written(row)
  }
}
