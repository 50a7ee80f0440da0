import type { Kysely, Selectable } from 'kysely'
import { insertOrConflict } from './conflicts.ts'
import type { AuthorizationRecord, AuthorizationRepository, AuthorizationStage } from './index.ts'
import { sql } from './kysely.ts'

// The authorization code flow's requests (OpenID4VCI 1.0 §5, RFC 9126, RFC 6749 §4.1): one row from the
// pushed authorization request to the code's redemption. Its stage only moves forward, each step one
// conditional UPDATE, so a request_uri and a code are each used once however many requests race for them.

export interface AuthorizationsTable {
  id: string
  tenant_id: string
  template_id: string
  process_id: string | null
  client_id: string
  redirect_uri: string
  state: string | null
  code_challenge: string
  dpop_jkt: string | null
  instance_jkt: string | null
  details: string | null
  scope: string | null
  stage: string
  expires_at: number
  code_hash: string | null
  created_at: number
}
export interface AuthorizationSchema {
  oauth_authorizations: AuthorizationsTable
}
type Db = Kysely<AuthorizationSchema>

const toRecord = (r: Selectable<AuthorizationsTable>): AuthorizationRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  templateId: r.template_id,
  processId: r.process_id,
  clientId: r.client_id,
  redirectUri: r.redirect_uri,
  state: r.state,
  codeChallenge: r.code_challenge,
  dpopJkt: r.dpop_jkt,
  instanceJkt: r.instance_jkt,
  details: r.details === null ? null : (JSON.parse(r.details) as Record<string, unknown>[]),
  scope: r.scope,
  stage: r.stage as AuthorizationStage,
  expiresAt: r.expires_at,
  codeHash: r.code_hash,
  createdAt: r.created_at,
})

export class SqlAuthorizations implements AuthorizationRepository {
  constructor(private readonly db: Db) {}

  async create(a: AuthorizationRecord) {
    await insertOrConflict(
      this.db
        .insertInto('oauth_authorizations')
        .values({
          id: a.id,
          tenant_id: a.tenantId,
          template_id: a.templateId,
          process_id: a.processId,
          client_id: a.clientId,
          redirect_uri: a.redirectUri,
          state: a.state,
          code_challenge: a.codeChallenge,
          dpop_jkt: a.dpopJkt,
          instance_jkt: a.instanceJkt,
          details: a.details === null ? null : JSON.stringify(a.details),
          scope: a.scope,
          stage: a.stage,
          expires_at: a.expiresAt,
          code_hash: a.codeHash,
          created_at: a.createdAt,
        })
        .execute(),
      `authorization request "${a.id}"`,
    )
  }

  async get(id: string) {
    const row = await this.db
      .selectFrom('oauth_authorizations')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toRecord(row)
  }

  async byCode(codeHash: string) {
    const row = await this.db
      .selectFrom('oauth_authorizations')
      .selectAll()
      .where('code_hash', '=', codeHash)
      .executeTakeFirst()
    return row && toRecord(row)
  }

  async authorize(id: string, to: { codeHash: string; expiresAt: number; processId: string; now: number }) {
    const result = await this.db
      .updateTable('oauth_authorizations')
      .set({
        stage: 'authorized',
        code_hash: to.codeHash,
        expires_at: to.expiresAt,
        process_id: to.processId,
      })
      .where('id', '=', id)
      .where('stage', '=', 'pushed')
      .where('expires_at', '>', to.now)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  async deny(id: string, now: number) {
    const result = await this.db
      .updateTable('oauth_authorizations')
      .set({ stage: 'denied' })
      .where('id', '=', id)
      .where('stage', '=', 'pushed')
      .where('expires_at', '>', now)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  async redeem(id: string, now: number) {
    const result = await this.db
      .updateTable('oauth_authorizations')
      .set({ stage: 'redeemed' })
      .where('id', '=', id)
      .where('stage', '=', 'authorized')
      .where('expires_at', '>', now)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  async deleteExpired(before: number, limit: number) {
    // A redeemed code's row stays until its expiry: a replay within it is recognised as one (and revokes).
    const result = await sql`delete from oauth_authorizations where id in (
      select id from oauth_authorizations where expires_at < ${before} limit ${limit})`.execute(this.db)
    return Number(result.numAffectedRows ?? 0n)
  }
}
