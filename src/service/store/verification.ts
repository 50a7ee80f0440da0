import type { Kysely, Selectable } from 'kysely'
import { JsonInterner } from '../util/frozen.ts'
import { insertOrConflict } from './conflicts.ts'
import type {
  LeasedWebhookEvent,
  OwnTransaction,
  SessionRecord,
  SessionRepository,
  SessionStatus,
  Validations,
  WebhookEventRecord,
} from './index.ts'
import { first, prepared, run } from './prepared.ts'
import type { StoreSecrets } from './secrets.ts'
import { enqueueAfter, type SqlWebhooks } from './webhooks.ts'

// Verification sessions (migration 0003) and their repository.

export interface SessionsTable {
  id: string
  tenant_id: string
  template_id: string
  created_by_key: string
  status: string
  definition: string
  request: string
  request_jwt: string
  policy: string
  created_at: number
  updated_at: number
  expires_at: number
  requested_at: number | null
  submission: string | null
  submission_format: string
  validations: string | null
  subject: string | null
  source_wallet: string | null
  callback: string | null
  profile: string
  response_key: string | null
}
export interface VerificationSchema {
  verification_sessions: SessionsTable
}
type Db = Kysely<VerificationSchema>

const policies = new JsonInterner()
const definitions = new JsonInterner()

// response_key (the ephemeral private key of an encrypted response) is sealed with the data key; the
// keyring remembers recent openings, so the reads of one flow decrypt it once.
const toSession = (r: Selectable<SessionsTable>, secrets: StoreSecrets): SessionRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  templateId: r.template_id,
  createdByKey: r.created_by_key,
  status: r.status as SessionStatus,
  // The template's definition (a DCQL query or Presentation Exchange), the same text in each of its sessions.
  definition: definitions.parse(r.definition),
  request: JSON.parse(r.request),
  requestJwt: r.request_jwt,
  // The same for every session of a template (trust anchors' PEM included): parsed once, shared frozen.
  policy: policies.parse(r.policy),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  expiresAt: r.expires_at,
  requestedAt: r.requested_at,
  submission: r.submission === null ? null : JSON.parse(r.submission),
  submissionFormat: r.submission_format,
  validations: r.validations === null ? null : (JSON.parse(r.validations) as Validations),
  subject: r.subject,
  sourceWallet: r.source_wallet,
  callback: r.callback,
  profile: r.profile as SessionRecord['profile'],
  responseKey:
    r.response_key === null
      ? null
      : secrets.openJson<import('node:crypto').JsonWebKey>(
          'verification_sessions.response_key',
          [r.id],
          r.response_key,
        ),
})

const json = (value: unknown) => (value === null ? null : JSON.stringify(value))

const SESSION_COLUMNS = `id, tenant_id, template_id, created_by_key, status, definition, request, request_jwt,
  policy, created_at, updated_at, expires_at, requested_at, submission, submission_format, validations, subject,
  source_wallet, callback, profile, response_key`
const SESSION_BY_ID = prepared(`SELECT ${SESSION_COLUMNS} FROM verification_sessions WHERE id = ?`, true)
const SESSION_INSERT = prepared(
  `INSERT INTO verification_sessions (${SESSION_COLUMNS})
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
)
const MARK_REQUESTED = prepared(
  'UPDATE verification_sessions SET requested_at = ? WHERE id = ? AND requested_at IS NULL',
)
// The first fetch of the request object in one statement: the row as the update left it, only when the
// session is the tenant's, PENDING, unexpired at `now` and has a request object (the wallet-facing checks of
// oid4vp/service.ts, so a fetch they would refuse writes nothing), and was not requested before.
const MARK_REQUESTED_RETURNING = prepared(
  `UPDATE verification_sessions SET requested_at = ?
   WHERE id = ? AND tenant_id = ? AND requested_at IS NULL AND status = 'PENDING' AND expires_at > ?
     AND request_jwt <> ''
   RETURNING ${SESSION_COLUMNS}`,
  true,
)
const COMPLETE = prepared(`UPDATE verification_sessions
  SET status = ?, submission = ?, submission_format = ?, validations = ?, subject = ?, source_wallet = ?, updated_at = ?
  WHERE id = ? AND status = 'PENDING' AND expires_at > ?`)
// The outcome and its webhook event in one statement on PostgreSQL (issue 38): the event is inserted only when
// the conditional UPDATE changed the session; a conflicting event id fails the whole statement. SQLite runs
// COMPLETE and the outbox's ENQUEUE in a transaction (its text here is never run).
const COMPLETE_AND_ENQUEUE = prepared(
  COMPLETE.sql,
  true,
  enqueueAfter('completed', `${COMPLETE.sql} RETURNING id`),
)

export class SqlSessions implements SessionRepository {
  constructor(
    private readonly db: Db,
    private readonly secrets: StoreSecrets,
    /** The outbox on the same connection: completeWithEvent's event. */
    private readonly webhooks: SqlWebhooks,
    /** PostgreSQL: completeWithEvent is one statement. */
    private readonly postgres = false,
    /** SQLite's root repositories: completeWithEvent's statements run in this transaction (issue 38). */
    private readonly own?: OwnTransaction,
  ) {}

  async create(s: SessionRecord) {
    await insertOrConflict(
      run(this.db, SESSION_INSERT, [
        s.id,
        s.tenantId,
        s.templateId,
        s.createdByKey,
        s.status,
        JSON.stringify(s.definition),
        JSON.stringify(s.request),
        s.requestJwt,
        JSON.stringify(s.policy),
        s.createdAt,
        s.updatedAt,
        s.expiresAt,
        s.requestedAt,
        json(s.submission),
        s.submissionFormat,
        json(s.validations),
        s.subject,
        s.sourceWallet,
        s.callback,
        s.profile,
        s.responseKey === null
          ? null
          : this.secrets.sealJson('verification_sessions.response_key', [s.id], s.responseKey),
      ]),
      `verification session "${s.id}"`,
    )
  }

  async get(id: string) {
    const row = await first<Selectable<SessionsTable>>(this.db, SESSION_BY_ID, [id])
    return row && toSession(row, this.secrets)
  }

  async markRequested(id: string, at: number) {
    return (await run(this.db, MARK_REQUESTED, [at, id])) > 0
  }

  async markRequestedReturning(id: string, tenantId: string, at: number) {
    const row = await first<Selectable<SessionsTable>>(this.db, MARK_REQUESTED_RETURNING, [
      at,
      id,
      tenantId,
      at,
    ])
    return row && toSession(row, this.secrets)
  }

  async complete(s: SessionRecord, now: number) {
    return (await run(this.db, COMPLETE, completeValues(s, now))) > 0
  }

  // Atomic by itself (store/index.ts; issue 38): PostgreSQL one statement wherever it is called, SQLite its two
  // in the caller's transaction or, on the root store, in one of the store's own.
  async completeWithEvent(
    s: SessionRecord,
    now: number,
    event?: WebhookEventRecord,
  ): Promise<{ completed: boolean; event?: LeasedWebhookEvent }> {
    if (this.postgres && event) {
      const written = await this.webhooks.enqueueWith(COMPLETE_AND_ENQUEUE, completeValues(s, now), event)
      return written ? { completed: true, event: written } : { completed: false }
    }
    if (this.own) return this.own((repos) => repos.sessions.completeWithEvent(s, now, event))
    if (!(await this.complete(s, now))) return { completed: false }
    return event ? { completed: true, event: await this.webhooks.enqueue(event) } : { completed: true }
  }
}

const completeValues = (s: SessionRecord, now: number) => [
  s.status,
  json(s.submission),
  s.submissionFormat,
  json(s.validations),
  s.subject,
  s.sourceWallet,
  s.updatedAt,
  s.id,
  now,
]
