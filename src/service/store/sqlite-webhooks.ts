import type { Generated, Kysely, Selectable } from 'kysely'
import type {
  DeliveryState,
  TemplateKind,
  WebhookAttemptRecord,
  WebhookEndpointRecord,
  WebhookEventRecord,
  WebhookEventType,
  WebhookRepository,
} from './index.ts'
import { sql } from './kysely.ts'
import { insertOrConflict } from './sqlite-errors.ts'

// The webhook outbox, its delivery log and disabled endpoints (migration 0004).

interface EventsTable {
  seq: Generated<number>
  id: string
  tenant_id: string
  template_id: string
  template_kind: string
  subject_id: string
  type: string
  url: string
  body: string
  state: string
  attempts: number
  next_attempt_at: number | null
  lease_until: number | null
  last_status: number | null
  last_error: string | null
  created_at: number
  updated_at: number
  delivered_at: number | null
}
interface AttemptsTable {
  event_id: string
  attempt: number
  at: number
  duration_ms: number
  status: number | null
  error: string | null
  outcome: string
  next_attempt_at: number | null
  trigger: string
}
interface EndpointsTable {
  tenant_id: string
  template_id: string
  url: string
  disabled_at: number
  disabled_reason: string
}
export interface WebhooksSchema {
  webhook_events: EventsTable
  webhook_attempts: AttemptsTable
  webhook_endpoints: EndpointsTable
}
type Db = Kysely<WebhooksSchema>

const toEvent = (r: Selectable<EventsTable>): WebhookEventRecord => ({
  id: r.id,
  seq: r.seq,
  tenantId: r.tenant_id,
  templateId: r.template_id,
  templateKind: r.template_kind as TemplateKind,
  subjectId: r.subject_id,
  type: r.type as WebhookEventType,
  url: r.url,
  body: r.body,
  state: r.state as DeliveryState,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  leaseUntil: r.lease_until,
  lastStatus: r.last_status,
  lastError: r.last_error,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deliveredAt: r.delivered_at,
})

const toAttempt = (r: Selectable<AttemptsTable>): WebhookAttemptRecord => ({
  eventId: r.event_id,
  attempt: r.attempt,
  at: r.at,
  durationMs: r.duration_ms,
  status: r.status,
  error: r.error,
  outcome: r.outcome as WebhookAttemptRecord['outcome'],
  nextAttemptAt: r.next_attempt_at,
  trigger: r.trigger as WebhookAttemptRecord['trigger'],
})

export class SqliteWebhooks implements WebhookRepository {
  constructor(private readonly db: Db) {}

  async enqueue(e: WebhookEventRecord) {
    await insertOrConflict(
      this.db
        .insertInto('webhook_events')
        .values({
          id: e.id,
          tenant_id: e.tenantId,
          template_id: e.templateId,
          template_kind: e.templateKind,
          subject_id: e.subjectId,
          type: e.type,
          url: e.url,
          body: e.body,
          state: e.state,
          attempts: e.attempts,
          next_attempt_at: e.nextAttemptAt,
          lease_until: e.leaseUntil,
          last_status: e.lastStatus,
          last_error: e.lastError,
          created_at: e.createdAt,
          updated_at: e.updatedAt,
          delivered_at: e.deliveredAt,
        })
        .execute(),
      `webhook event "${e.id}"`,
    )
  }

  async get(id: string) {
    const row = await this.db.selectFrom('webhook_events').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toEvent(row)
  }

  async due(now: number, limit: number) {
    const rows = await this.db
      .selectFrom('webhook_events as e')
      .selectAll('e')
      .where('e.state', '=', 'pending')
      .where('e.next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('e.lease_until', 'is', null), eb('e.lease_until', '<', now)]))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('webhook_events as older')
              .select('older.seq')
              .whereRef('older.tenant_id', '=', 'e.tenant_id')
              .whereRef('older.subject_id', '=', 'e.subject_id')
              .whereRef('older.seq', '<', 'e.seq')
              .where('older.state', '=', 'pending'),
          ),
        ),
      )
      .orderBy('e.next_attempt_at')
      .orderBy('e.seq')
      .limit(limit)
      .execute()
    return rows.map(toEvent)
  }

  async nextDueAt() {
    const row = await this.db
      .selectFrom('webhook_events as e')
      // A leased event is not due before its lease ends.
      .select(sql<number | null>`min(max(e.next_attempt_at, coalesce(e.lease_until, 0)))`.as('next'))
      .where('e.state', '=', 'pending')
      // An event queued behind an older one of its subject is due only once that one is settled (which
      // wakes the dispatcher); its own past due time would otherwise hide the older one's retry time.
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('webhook_events as older')
              .select('older.seq')
              .whereRef('older.tenant_id', '=', 'e.tenant_id')
              .whereRef('older.subject_id', '=', 'e.subject_id')
              .whereRef('older.seq', '<', 'e.seq')
              .where('older.state', '=', 'pending'),
          ),
        ),
      )
      .executeTakeFirst()
    return row?.next ?? null
  }

  async claim(id: string, now: number, leaseUntil: number) {
    const result = await this.db
      .updateTable('webhook_events')
      .set({ lease_until: leaseUntil })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async recordAttempt(e: WebhookEventRecord, a: WebhookAttemptRecord) {
    await this.db
      .updateTable('webhook_events')
      .set({
        state: e.state,
        attempts: e.attempts,
        next_attempt_at: e.nextAttemptAt,
        lease_until: null,
        last_status: e.lastStatus,
        last_error: e.lastError,
        updated_at: e.updatedAt,
        delivered_at: e.deliveredAt,
      })
      .where('id', '=', e.id)
      .execute()
    await this.db
      .insertInto('webhook_attempts')
      .values({
        event_id: a.eventId,
        attempt: a.attempt,
        at: a.at,
        duration_ms: a.durationMs,
        status: a.status,
        error: a.error,
        outcome: a.outcome,
        next_attempt_at: a.nextAttemptAt,
        trigger: a.trigger,
      })
      .execute()
  }

  async release(id: string) {
    await this.db.updateTable('webhook_events').set({ lease_until: null }).where('id', '=', id).execute()
  }

  async listByTemplate(
    tenantId: string,
    templateId: string,
    query: { limit: number; beforeSeq?: number; state?: string },
  ) {
    let q = this.db
      .selectFrom('webhook_events')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('template_id', '=', templateId)
    if (query.beforeSeq !== undefined) q = q.where('seq', '<', query.beforeSeq)
    if (query.state !== undefined) q = q.where('state', '=', query.state)
    const rows = await q.orderBy('seq', 'desc').limit(query.limit).execute()
    return rows.map(toEvent)
  }

  async attempts(eventId: string) {
    const rows = await this.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('event_id', '=', eventId)
      .orderBy('attempt')
      .execute()
    return rows.map(toAttempt)
  }

  async requeue(id: string, now: number) {
    const result = await this.db
      .updateTable('webhook_events')
      .set({ state: 'pending', attempts: 0, next_attempt_at: now, lease_until: null, updated_at: now })
      .where('id', '=', id)
      .where('state', '!=', 'pending')
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async endpoint(tenantId: string, templateId: string) {
    const r = await this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('template_id', '=', templateId)
      .executeTakeFirst()
    return (
      r && {
        tenantId: r.tenant_id,
        templateId: r.template_id,
        url: r.url,
        disabledAt: r.disabled_at,
        disabledReason: r.disabled_reason,
      }
    )
  }

  async disableEndpoint(e: WebhookEndpointRecord) {
    const values = {
      tenant_id: e.tenantId,
      template_id: e.templateId,
      url: e.url,
      disabled_at: e.disabledAt,
      disabled_reason: e.disabledReason,
    }
    await this.db
      .insertInto('webhook_endpoints')
      .values(values)
      .onConflict((oc) =>
        oc.columns(['tenant_id', 'template_id']).doUpdateSet({
          url: e.url,
          disabled_at: e.disabledAt,
          disabled_reason: e.disabledReason,
        }),
      )
      .execute()
  }

  async enableEndpoint(tenantId: string, templateId: string) {
    await this.db
      .deleteFrom('webhook_endpoints')
      .where('tenant_id', '=', tenantId)
      .where('template_id', '=', templateId)
      .execute()
  }
}
