import type { Kysely } from 'kysely'
import {
  type AuthorizationRepository,
  type NonceRepository,
  noPurgeCounts,
  type PurgeCounts,
  type RetentionPolicy,
  type RetentionRepository,
} from './index.ts'
import { sql } from './kysely.ts'

// The retention purge (docs/security.md, "Retention"; the indexes of migration 0007). What each table of
// migrations.ts holds, and whether a purge touches it:
//
//   issuance_processes     a flow: REJECTED, or PENDING with its offer lapsed unredeemed (live code past its
//                          expiry, no content waiting), closedFlowDays after the last change; ISSUED
//                          issuedProcessDays after it. PENDING with content waiting or a live code: never.
//   oid4vci_grants         the process's codes and tokens (1:1): deleted with the process
//   issued_credentials     the process's status entries: deleted with it; their lists are closed to new
//                          entries first (below), their bits stay as they are
//   verification_sessions  a flow: VERIFIED, REJECTED, or PENDING past expiresAt (EXPIRED),
//                          closedFlowDays after the last change (for an expired one, its expiry)
//   webhook_events         the outbox, on its own clock: delivered, failed or disabled events
//                          closedFlowDays after their last change; pending ones (leased: in flight) never,
//                          whether or not their process or session still exists
//   webhook_attempts       an event's delivery log: deleted with the event
//   nonces                 used c_nonces, dead once expired: deleted NONCE_GRACE_MS after the expiry
//   oauth_authorizations   authorization code flows, dead once the request_uri or code expired: likewise
//   tenants, api_keys, templates, service_keys, issuer_keys, issuer_cas, mdoc_iacas, issuer_certificates,
//   webhook_endpoints      configuration and keys: never
//   status_lists           never: credentials in wallets point at them and verifiers keep fetching them
//
// A status entry is free to the allocator (status/service.ts) once its issued_credentials row is gone:
// the row's unique (list_id, list_index) is what keeps two credentials off one slot. Reusing the slot of a
// purged credential, still held by its wallet with whatever status its bits say, would tie the two
// credentials' statuses together. So before a purge frees slots of a list, the list is closed to new
// entries (`used` raised to `size`: the allocator opens a new list once a list is that full). A list is
// closed at most once, and in steady state a new one opens about once per issuedProcessDays.

/** A used nonce is kept this long past its expiry: a check that read the clock just before it is done. */
const NONCE_GRACE_MS = 5 * 60_000
const DAY_MS = 86_400_000

// The columns the purge reads: a narrower view of the same connection, like the other repositories'.
interface ProcessesTable {
  id: string
  status: string
  submitted: string | null
  updated_at: number
}
interface GrantsTable {
  process_id: string
  code_state: string
  code_expires_at: number
}
interface EventsTable {
  id: string
  state: string
  updated_at: number
}
export interface RetentionSchema {
  issuance_processes: ProcessesTable
  oid4vci_grants: GrantsTable
  webhook_events: EventsTable
}
type Db = Kysely<RetentionSchema>

const affected = (result: { numAffectedRows?: bigint }) => Number(result.numAffectedRows ?? 0n)

/**
 * One bounded batch per call. Deletes by id lists pass them as one JSON parameter (`json_each`), so each
 * statement has one SQL text whatever the batch size (the connection's statement cache reuses it).
 * Concurrency: run inside `store.transaction`, which holds SQLite's write lock from its first statement,
 * what a batch chose cannot change before it is deleted. A request that read a record just before writes
 * nothing (its conditional update finds no row), and one just after finds it gone (404, like an unknown id).
 * On PostgreSQL (READ COMMITTED, other instances writing) the statements that choose lock what they chose
 * (FOR UPDATE) to the same end: a change committed meanwhile is waited for and the row judged again (left
 * out when it no longer qualifies, e.g. content submitted to a lapsed offer, an event redelivered), and a
 * later one waits for the purge's commit, then finds no row.
 */
export class SqlRetention implements RetentionRepository {
  constructor(
    private readonly db: Db,
    private readonly nonces: NonceRepository,
    /** The same store on PostgreSQL (issue 21): its JSON list function has another name. */
    private readonly postgres = false,
    private readonly authorizations?: AuthorizationRepository,
  ) {}

  /** PostgreSQL: the rows a batch chooses stay as chosen until it commits (SQLite: its write lock). */
  private chosen<Q extends { forUpdate(): Q }>(query: Q): Q {
    return this.postgres ? query.forUpdate() : query
  }

  /** The ids of a JSON array parameter, as a subquery: one SQL text whatever the batch size. */
  private ids(list: string) {
    return this.postgres
      ? sql`select json_array_elements_text(${list}::json)`
      : sql`select value from json_each(${list})`
  }

  async purgeBatch(now: number, policy: RetentionPolicy, limit: number): Promise<PurgeCounts> {
    const closedBefore = now - policy.closedFlowDays * DAY_MS
    const issuedBefore = now - policy.issuedProcessDays * DAY_MS
    const counts = noPurgeCounts()
    let left = limit

    const rejected = await this.processesIn('REJECTED', closedBefore, left)
    left -= rejected.length
    const lapsed = left > 0 ? await this.lapsedOffers(closedBefore, left) : []
    left -= lapsed.length
    const issued = left > 0 ? await this.processesIn('ISSUED', issuedBefore, left) : []
    left -= issued.length
    await this.deleteProcesses([...rejected, ...lapsed, ...issued])
    counts.rejectedProcesses = rejected.length
    counts.lapsedProcesses = lapsed.length
    counts.issuedProcesses = issued.length

    if (left > 0) {
      counts.sessions = await this.deleteEndedSessions(closedBefore, left)
      left -= counts.sessions
    }
    if (left > 0) {
      counts.webhookEvents = await this.deleteSettledEvents(closedBefore, left)
      left -= counts.webhookEvents
    }
    if (left > 0) {
      counts.nonces = await this.nonces.deleteExpired(now - NONCE_GRACE_MS, left)
      left -= counts.nonces
    }
    if (left > 0 && this.authorizations) {
      counts.authorizations = await this.authorizations.deleteExpired(now - NONCE_GRACE_MS, left)
    }
    return counts
  }

  private async processesIn(status: 'REJECTED' | 'ISSUED', before: number, limit: number) {
    const rows = await this.chosen(
      this.db
        .selectFrom('issuance_processes')
        .select('id')
        .where('status', '=', status)
        .where('updated_at', '<', before)
        .limit(limit),
    ).execute()
    return rows.map((r) => r.id)
  }

  /** PENDING, nothing submitted, its code still live but expired before `before` (and no change since). */
  private async lapsedOffers(before: number, limit: number) {
    const rows = await this.chosen(
      this.db
        .selectFrom('oid4vci_grants as g')
        // CROSS JOIN keeps the grants' expiry index the outer loop: few live codes are long expired.
        .crossJoin('issuance_processes as p')
        .select('p.id')
        .whereRef('p.id', '=', 'g.process_id')
        .where('g.code_state', '=', 'live')
        .where('g.code_expires_at', '<', before)
        .where('p.status', '=', 'PENDING')
        .where('p.submitted', 'is', null)
        .where('p.updated_at', '<', before)
        .limit(limit),
    ).execute()
    return rows.map((r) => r.id)
  }

  private async deleteProcesses(ids: string[]) {
    if (ids.length === 0) return
    const list = JSON.stringify(ids)
    // Close the lists whose slots are about to be freed (see the top of this file).
    await sql`update status_lists set used = size where used < size and id in (
      select list_id from issued_credentials where process_id in (${this.ids(list)}))`.execute(this.db)
    await sql`delete from issued_credentials where process_id in (${this.ids(list)})`.execute(this.db)
    await sql`delete from oid4vci_grants where process_id in (${this.ids(list)})`.execute(this.db)
    await sql`delete from issuance_processes where id in (${this.ids(list)})`.execute(this.db)
  }

  /**
   * VERIFIED or REJECTED before `before`, or PENDING with expiresAt before it. The index on updated_at
   * bounds the scan: a PENDING session is written only while it lives, so its updated_at is at most its
   * expiresAt.
   */
  private async deleteEndedSessions(before: number, limit: number) {
    return affected(
      await sql`delete from verification_sessions where id in (
        select id from verification_sessions where updated_at < ${before}
          and (status in ('VERIFIED', 'REJECTED') or (status = 'PENDING' and expires_at < ${before}))
        limit ${limit})`.execute(this.db),
    )
  }

  /** Delivered, failed or disabled before `before`, with their attempt log; never a pending one. */
  private async deleteSettledEvents(before: number, limit: number) {
    const rows = await this.chosen(
      this.db
        .selectFrom('webhook_events')
        .select('id')
        // A literal, so both databases use the partial index of settled events (migration 0010).
        .where(sql<boolean>`state <> 'pending'`)
        .where('updated_at', '<', before)
        .limit(limit),
    ).execute()
    if (rows.length === 0) return 0
    const list = JSON.stringify(rows.map((r) => r.id))
    await sql`delete from webhook_attempts where event_id in (${this.ids(list)})`.execute(this.db)
    return affected(
      await sql`delete from webhook_events where state <> 'pending' and id in (${this.ids(list)})`.execute(
        this.db,
      ),
    )
  }
}
