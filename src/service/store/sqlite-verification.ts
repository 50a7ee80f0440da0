import type { Kysely, Selectable } from 'kysely'
import type { SessionRecord, SessionRepository, SessionStatus, Validations } from './index.ts'
import { insertOrConflict } from './sqlite-errors.ts'
import type { StoreSecrets } from './sqlite-secrets.ts'

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

// response_key (the ephemeral private key of an encrypted response) is sealed with the data key; the
// keyring remembers recent openings, so the reads of one flow decrypt it once.
const toSession = (r: Selectable<SessionsTable>, secrets: StoreSecrets): SessionRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  templateId: r.template_id,
  createdByKey: r.created_by_key,
  status: r.status as SessionStatus,
  definition: JSON.parse(r.definition),
  request: JSON.parse(r.request),
  requestJwt: r.request_jwt,
  policy: JSON.parse(r.policy),
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

export class SqliteSessions implements SessionRepository {
  constructor(
    private readonly db: Db,
    private readonly secrets: StoreSecrets,
  ) {}

  async create(s: SessionRecord) {
    await insertOrConflict(
      this.db
        .insertInto('verification_sessions')
        .values({
          id: s.id,
          tenant_id: s.tenantId,
          template_id: s.templateId,
          created_by_key: s.createdByKey,
          status: s.status,
          definition: JSON.stringify(s.definition),
          request: JSON.stringify(s.request),
          request_jwt: s.requestJwt,
          policy: JSON.stringify(s.policy),
          created_at: s.createdAt,
          updated_at: s.updatedAt,
          expires_at: s.expiresAt,
          requested_at: s.requestedAt,
          submission: json(s.submission),
          submission_format: s.submissionFormat,
          validations: json(s.validations),
          subject: s.subject,
          source_wallet: s.sourceWallet,
          callback: s.callback,
          profile: s.profile,
          response_key:
            s.responseKey === null
              ? null
              : this.secrets.sealJson('verification_sessions.response_key', [s.id], s.responseKey),
        })
        .execute(),
      `verification session "${s.id}"`,
    )
  }

  async get(id: string) {
    const row = await this.db
      .selectFrom('verification_sessions')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toSession(row, this.secrets)
  }

  async markRequested(id: string, at: number) {
    const result = await this.db
      .updateTable('verification_sessions')
      .set({ requested_at: at })
      .where('id', '=', id)
      .where('requested_at', 'is', null)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async complete(s: SessionRecord, now: number) {
    const result = await this.db
      .updateTable('verification_sessions')
      .set({
        status: s.status,
        submission: json(s.submission),
        submission_format: s.submissionFormat,
        validations: json(s.validations),
        subject: s.subject,
        source_wallet: s.sourceWallet,
        updated_at: s.updatedAt,
      })
      .where('id', '=', s.id)
      .where('status', '=', 'PENDING')
      .where('expires_at', '>', now)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }
}
