import type { Generated, Kysely, Selectable } from 'kysely'
import { insertOrConflict } from './conflicts.ts'
import type {
  DeliveryState,
  LeasedWebhookEvent,
  TemplateKind,
  WebhookAttemptRecord,
  WebhookEndpointRecord,
  WebhookEventRecord,
  WebhookEventType,
  WebhookRepository,
} from './index.ts'
import { first, flag, numbered, type Prepared, prepared, rows, run } from './prepared.ts'

// The webhook outbox, its delivery log and disabled endpoints (migrations 0004 and 0008). What the
// dispatcher runs per delivery (enqueue in the state change's transaction, recordAttempt after the HTTP
// attempt) is one fixed statement each; the scan (due, nextDueAt, claim) runs only when it polls.

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
  lease_owner: string | null
  log_count: Generated<number>
  /** The newest attempt as JSON; the trigger of migration 0008 appends it to webhook_attempts. */
  last_attempt: string | null
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

type EventRow = Omit<Selectable<EventsTable>, 'last_attempt'>

const toEvent = (r: EventRow): WebhookEventRecord => ({
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
  leaseOwner: r.lease_owner,
  logCount: r.log_count,
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

/** The reason the event's endpoint is disabled for its URL, or null (correlated with the statement's row). */
const ENDPOINT_DISABLED = `(SELECT d.disabled_reason FROM webhook_endpoints d
  WHERE d.tenant_id = webhook_events.tenant_id AND d.template_id = webhook_events.template_id
    AND d.url = webhook_events.url)`

/** No older event of the same subject is pending (per-subject order), for a row aliased `e`. */
const FIRST_OF_SUBJECT = `NOT EXISTS (SELECT 1 FROM webhook_events older
  WHERE older.tenant_id = e.tenant_id AND older.subject_id = e.subject_id AND older.seq < e.seq
    AND older.state = 'pending')`

const EVENT_COLUMNS = `seq, id, tenant_id, template_id, template_kind, subject_id, type, url, body, state, attempts,
  next_attempt_at, lease_until, lease_owner, log_count, last_status, last_error, created_at, updated_at,
  delivered_at`

// The lease asked for is written only when no older event of the subject is pending: that one goes first,
// and this one is left to the scan that finds it once the older one is settled. Numbers are cast: selected
// values have no column type to take on PostgreSQL (BIGINT is an integer to SQLite).
// `from`: FROM items before `older` (enqueueAfter's CTE; none for ENQUEUE).
const enqueueText = (from = '') =>
  `INSERT INTO webhook_events (id, tenant_id, template_id, template_kind, subject_id, type,
    url, body, state, attempts, next_attempt_at, lease_until, lease_owner, last_status, last_error, created_at,
    updated_at, delivered_at)
  SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT),
    CASE WHEN older.pending THEN NULL ELSE CAST(? AS BIGINT) END, CASE WHEN older.pending THEN NULL ELSE ? END,
    CAST(? AS BIGINT), ?, CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT)
  FROM ${from}(SELECT EXISTS (SELECT 1 FROM webhook_events o
    WHERE o.tenant_id = ? AND o.subject_id = ? AND o.state = 'pending') AS pending) AS older
  RETURNING seq, lease_until, lease_owner, ${ENDPOINT_DISABLED} AS endpoint_disabled`
const ENQUEUE = prepared(enqueueText(), true)

/**
 * PostgreSQL's text of a state change and its event in one statement (issue 38): `WITH <name> AS (<change>)`
 * then ENQUEUE, whose row is inserted only when the change (a data-modifying statement with RETURNING)
 * answered a row: no row, no event. The change's `?` come first; run it with SqlWebhooks.enqueueWith.
 * PostgreSQL only: SQLite has no INSERT or UPDATE in a WITH.
 */
export const enqueueAfter = (name: string, change: string) =>
  numbered(`WITH ${name} AS (${change}) ${enqueueText(`${name}, `)}`)

const DUE = prepared(`SELECT ${EVENT_COLUMNS} FROM webhook_events e
  WHERE e.state = 'pending' AND e.next_attempt_at <= ? AND (e.lease_until IS NULL OR e.lease_until < ?)
    AND ${FIRST_OF_SUBJECT}
  ORDER BY e.next_attempt_at, e.seq LIMIT ?`)

// A leased event is not due before its lease ends. An event queued behind an older one of its subject is
// due only once that one is settled; its own past due time would otherwise hide the older one's.
const NEXT_DUE = prepared(
  `SELECT min(max(e.next_attempt_at, coalesce(e.lease_until, 0))) AS next FROM webhook_events e
  WHERE e.state = 'pending' AND ${FIRST_OF_SUBJECT}`,
  true,
  // PostgreSQL's max() is the aggregate only; greatest() is SQLite's two-argument max().
  `SELECT min(greatest(e.next_attempt_at, coalesce(e.lease_until, 0))) AS next FROM webhook_events e
  WHERE e.state = 'pending' AND ${FIRST_OF_SUBJECT}`,
)

const CLAIM = prepared(
  `UPDATE webhook_events SET lease_until = ?, lease_owner = ?
  WHERE id = ? AND state = 'pending' AND (lease_until IS NULL OR lease_until < ? OR lease_owner = ?)
  RETURNING ${EVENT_COLUMNS}, ${ENDPOINT_DISABLED} AS endpoint_disabled`,
  true,
  // Issue 21: instances sharing the database lease with FOR UPDATE SKIP LOCKED, so each event is delivered
  // once and a claim never waits for a row another instance holds locked (it answers no row; a later scan
  // retries). The lock re-checks the conditions on the newest row version, so one claimant wins.
  `UPDATE webhook_events SET lease_until = $1, lease_owner = $2
  WHERE id = (SELECT free.id FROM webhook_events free
    WHERE free.id = $3 AND free.state = 'pending'
      AND (free.lease_until IS NULL OR free.lease_until < $4 OR free.lease_owner = $5)
    FOR UPDATE SKIP LOCKED)
  RETURNING ${EVENT_COLUMNS}, ${ENDPOINT_DISABLED} AS endpoint_disabled`,
)

// The log row and a 410's disabled endpoint are written by the trigger of migration 0008, in this statement.
// `log_count = attempt - 1`: an attempt another dispatcher logged first (a lease lost) changes nothing.
const RECORD_ATTEMPT = prepared(
  `UPDATE webhook_events SET state = ?, attempts = ?, next_attempt_at = ?,
    lease_until = ?, lease_owner = ?, last_status = ?, last_error = ?, updated_at = ?, delivered_at = ?,
    log_count = ?, last_attempt = ?
  WHERE id = ? AND log_count = ?
  RETURNING ${ENDPOINT_DISABLED} AS endpoint_disabled,
    EXISTS (SELECT 1 FROM webhook_events later
      WHERE later.tenant_id = webhook_events.tenant_id AND later.subject_id = webhook_events.subject_id
        AND later.seq > webhook_events.seq AND later.state = 'pending') AS successor_pending`,
  true,
)

const RELEASE = prepared(
  `UPDATE webhook_events SET lease_until = NULL, lease_owner = NULL
  WHERE lease_owner = ? AND id IN (SELECT value FROM json_each(?))`,
  false,
  `UPDATE webhook_events SET lease_until = NULL, lease_owner = NULL
  WHERE lease_owner = $1 AND id IN (SELECT json_array_elements_text($2::json))`,
)

type LeasedRow = EventRow & { endpoint_disabled: string | null }
interface EnqueuedRow {
  seq: number
  lease_until: number | null
  lease_owner: string | null
  endpoint_disabled: string | null
}
const toLeased = (r: LeasedRow): LeasedWebhookEvent => ({
  event: toEvent(r),
  endpointDisabled: r.endpoint_disabled,
})

export class SqlWebhooks implements WebhookRepository {
  constructor(private readonly db: Db) {}

  async enqueue(e: WebhookEventRecord) {
    const written = await this.enqueueWith(ENQUEUE, [], e)
    if (!written) throw new Error(`the insert of webhook event "${e.id}" answered no row`)
    return written
  }

  /**
   * Runs `statement`, ENQUEUE or a text of enqueueAfter, with `before` (the change's parameters) ahead of the
   * event's: the event as written, or undefined when nothing was inserted (enqueueAfter's change answered no
   * row). Throws ConflictError when the event's id exists (nothing of the statement is written then).
   */
  async enqueueWith(
    statement: Prepared,
    before: readonly unknown[],
    e: WebhookEventRecord,
  ): Promise<LeasedWebhookEvent | undefined> {
    const inserted = rows<EnqueuedRow>(this.db, statement, [
      ...before,
      e.id,
      e.tenantId,
      e.templateId,
      e.templateKind,
      e.subjectId,
      e.type,
      e.url,
      e.body,
      e.state,
      e.attempts,
      e.nextAttemptAt,
      e.leaseUntil,
      e.leaseOwner ?? null,
      e.lastStatus,
      e.lastError,
      e.createdAt,
      e.updatedAt,
      e.deliveredAt,
      e.tenantId,
      e.subjectId,
    ])
    await insertOrConflict(inserted, `webhook event "${e.id}"`)
    const [written] = await inserted
    if (!written) return undefined
    return {
      event: {
        ...e,
        seq: written.seq,
        leaseUntil: written.lease_until,
        leaseOwner: written.lease_owner,
        logCount: 0,
      },
      endpointDisabled: written.endpoint_disabled,
    }
  }

  async get(id: string) {
    const row = await this.db.selectFrom('webhook_events').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toEvent(row)
  }

  async due(now: number, limit: number) {
    return (await rows<EventRow>(this.db, DUE, [now, now, limit])).map(toEvent)
  }

  async nextDueAt() {
    return (await first<{ next: number | null }>(this.db, NEXT_DUE, []))?.next ?? null
  }

  async claim(id: string, now: number, leaseUntil: number, owner?: string) {
    const [row] = await rows<LeasedRow>(this.db, CLAIM, [leaseUntil, owner ?? null, id, now, owner ?? null])
    return row && toLeased(row)
  }

  async recordAttempt(e: WebhookEventRecord, a: WebhookAttemptRecord) {
    const attempt = {
      at: a.at,
      durationMs: a.durationMs,
      status: a.status,
      error: a.error,
      outcome: a.outcome,
      nextAttemptAt: a.nextAttemptAt,
      trigger: a.trigger,
    }
    const [row] = await rows<{ endpoint_disabled: string | null; successor_pending: number }>(
      this.db,
      RECORD_ATTEMPT,
      [
        e.state,
        e.attempts,
        e.nextAttemptAt,
        e.leaseUntil,
        e.leaseOwner ?? null,
        e.lastStatus,
        e.lastError,
        e.updatedAt,
        e.deliveredAt,
        a.attempt,
        JSON.stringify(attempt),
        e.id,
        a.attempt - 1,
      ],
    )
    return row && { endpointDisabled: row.endpoint_disabled, successorPending: flag(row.successor_pending) }
  }

  async release(owner: string, ids: string[]) {
    if (ids.length > 0) await run(this.db, RELEASE, [owner, JSON.stringify(ids)])
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
    const found = await q.orderBy('seq', 'desc').limit(query.limit).execute()
    return found.map(toEvent)
  }

  async attempts(eventId: string) {
    const found = await this.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('event_id', '=', eventId)
      .orderBy('attempt')
      .execute()
    return found.map(toAttempt)
  }

  async requeue(id: string, now: number) {
    const result = await this.db
      .updateTable('webhook_events')
      .set({
        state: 'pending',
        attempts: 0,
        next_attempt_at: now,
        lease_until: null,
        lease_owner: null,
        updated_at: now,
      })
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
