import type { Insertable, Selectable } from 'kysely'
import { type AuthorizationSchema, SqlAuthorizations } from './authorization.ts'
import { insertOrConflict } from './conflicts.ts'
import type { RowCache } from './exclusive-cache.ts'
import type {
  ApiKeyRecord,
  ApiKeyRepository,
  OwnTransaction,
  Repositories,
  ServiceKeyRecord,
  ServiceKeyRepository,
  TenantRecord,
  TenantRepository,
} from './index.ts'
import {
  type IssuanceProtocolSchema,
  SqlGrants,
  SqlIssuedCredentials,
  SqlIssuerCertificates,
  SqlIssuerKeys,
  SqlNonces,
  SqlProcesses,
  SqlStatusLists,
} from './issuance.ts'
import type { Kysely } from './kysely.ts'
import { first, flag, prepared, run } from './prepared.ts'
import { type RetentionSchema, SqlRetention } from './retention.ts'
import type { StoreSecrets } from './secrets.ts'
import {
  SqlTemplates,
  type TemplateAnnouncer,
  type TemplateCache,
  type TemplatesSchema,
} from './templates.ts'
import { SqlSessions, type VerificationSchema } from './verification.ts'
import { SqlWebhooks, type WebhooksSchema } from './webhooks.ts'

// The repositories of both databases, over one Kysely connection: SQLite (sqlite.ts) and PostgreSQL
// (postgres.ts) run the same ones; where the two differ, a fixed statement carries its PostgreSQL text
// (prepared.ts) or a repository takes a `postgres` flag.

interface TenantsTable {
  id: string
  source: string
  created_at: number
}
interface ApiKeysTable {
  id: string
  tenant_id: string
  role: string
  template_id: string | null
  secret_hash: string
  label: string | null
  source: string
  created_at: number
  revoked_at: number | null
}
interface ServiceKeysTable {
  kid: string
  alg: string
  private_jwk: string
  public_jwk: string
  created_at: number
}
interface Schema extends IssuanceProtocolSchema, VerificationSchema, WebhooksSchema, TemplatesSchema {
  tenants: TenantsTable
  api_keys: ApiKeysTable
  service_keys: ServiceKeysTable
}
type Db = Kysely<Schema>
/** Every table of the store (both databases). */
export type StoreSchema = Schema

const toTenant = (row: Selectable<TenantsTable>): TenantRecord => ({
  id: row.id,
  source: row.source as TenantRecord['source'],
  createdAt: row.created_at,
})

class SqlTenants implements TenantRepository {
  constructor(private readonly db: Db) {}
  async get(id: string) {
    const row = await this.db.selectFrom('tenants').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toTenant(row)
  }
  async create(tenant: TenantRecord) {
    await insertOrConflict(
      this.db.insertInto('tenants').values(this.row(tenant)).execute(),
      `tenant "${tenant.id}"`,
    )
  }
  async upsert(tenant: TenantRecord) {
    await this.db
      .insertInto('tenants')
      .values(this.row(tenant))
      .onConflict((oc) => oc.column('id').doUpdateSet({ source: tenant.source }))
      .execute()
  }
  private row(t: TenantRecord): Insertable<TenantsTable> {
    return { id: t.id, source: t.source, created_at: t.createdAt }
  }
}

const toKey = (row: Selectable<ApiKeysTable>): ApiKeyRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  role: row.role as ApiKeyRecord['role'],
  templateId: row.template_id,
  secretHash: row.secret_hash,
  label: row.label,
  source: row.source as ApiKeyRecord['source'],
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
})

const API_KEY_BY_ID = prepared(
  'SELECT id, tenant_id, role, template_id, secret_hash, label, source, created_at, revoked_at FROM api_keys WHERE id = ?',
  true,
)

// The decoy row has the real row's shape; LIMIT 1 stops after the real one when it exists.
const API_KEY_FOR_LOGIN = prepared(
  `SELECT id, tenant_id, role, template_id, secret_hash, label, source, created_at, revoked_at, 1 AS found
     FROM api_keys WHERE id = ?
   UNION ALL
   SELECT ?, '', 'app', NULL, ?, NULL, 'portal', 0, NULL, 0
   LIMIT 1`,
  true,
)

class SqlApiKeys implements ApiKeyRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: RowCache<ApiKeyRecord>,
  ) {}
  async forLogin(id: string, decoyHash: string) {
    const row = await first<Selectable<ApiKeysTable> & { found: number }>(this.db, API_KEY_FOR_LOGIN, [
      id,
      id,
      decoyHash,
    ])
    if (!row) throw new Error('the login lookup answered no row')
    return { key: toKey(row), found: flag(row.found) }
  }
  async get(id: string) {
    return this.cache.read(id, async () => {
      const row = await first<Selectable<ApiKeysTable>>(this.db, API_KEY_BY_ID, [id])
      return row && toKey(row)
    })
  }
  async listByTenant(tenantId: string) {
    const rows = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toKey)
  }
  async listBySource(source: ApiKeyRecord['source']) {
    return (await this.db.selectFrom('api_keys').selectAll().where('source', '=', source).execute()).map(
      toKey,
    )
  }
  async create(key: ApiKeyRecord) {
    await this.cache.changed(() =>
      insertOrConflict(this.db.insertInto('api_keys').values(this.row(key)).execute(), `API key "${key.id}"`),
    )
  }
  async upsert(key: ApiKeyRecord) {
    const { id: _id, created_at: _created, ...changes } = this.row(key)
    await this.cache.changed(() =>
      this.db
        .insertInto('api_keys')
        .values(this.row(key))
        .onConflict((oc) => oc.column('id').doUpdateSet(changes))
        .execute(),
    )
  }
  revoke(tenantId: string, id: string, at: number) {
    return this.cache.changed(() => this.revokeUncached(tenantId, id, at))
  }
  private async revokeUncached(tenantId: string, id: string, at: number) {
    const key = await this.db
      .selectFrom('api_keys')
      .select('revoked_at')
      .where('id', '=', id)
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst()
    if (!key) return false
    if (key.revoked_at === null) {
      await this.db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).execute()
    }
    return true
  }
  async countLinkedToTemplate(tenantId: string, templateId: string) {
    const row = await this.db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenantId)
      .where('template_id', '=', templateId)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }
  private row(k: ApiKeyRecord): Insertable<ApiKeysTable> {
    return {
      id: k.id,
      tenant_id: k.tenantId,
      role: k.role,
      template_id: k.templateId,
      secret_hash: k.secretHash,
      label: k.label,
      source: k.source,
      created_at: k.createdAt,
      revoked_at: k.revokedAt,
    }
  }
}

// The first service key of a fresh database (issue 21): instances that start together must agree on it. On
// SQLite the transaction's BEGIN IMMEDIATE already serialises writers. On PostgreSQL (READ COMMITTED) two
// transactions would both see no key and both insert; a transaction-scoped advisory lock taken in its own
// statement makes the second wait, and its insert, a later statement, sees the first's committed key.
const FIRST_KEY_LOCK = prepared('SELECT 1', true, 'SELECT pg_advisory_xact_lock(7021001)')
const FIRST_KEY_INSERT = prepared(
  `INSERT INTO service_keys (kid, alg, private_jwk, public_jwk, created_at)
  SELECT ?, ?, ?, ?, CAST(? AS BIGINT) WHERE NOT EXISTS (SELECT 1 FROM service_keys)`,
  false,
  `INSERT INTO service_keys (kid, alg, private_jwk, public_jwk, created_at)
  SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS TEXT), CAST($5 AS BIGINT)
  WHERE NOT EXISTS (SELECT 1 FROM service_keys)`,
)

class SqlServiceKeys implements ServiceKeyRepository {
  constructor(
    private readonly db: Db,
    private readonly secrets: StoreSecrets,
  ) {}
  async list() {
    const rows = await this.db
      .selectFrom('service_keys')
      .selectAll()
      .orderBy('created_at')
      .orderBy('kid')
      .execute()
    return rows.map(
      (r): ServiceKeyRecord => ({
        kid: r.kid,
        alg: r.alg,
        privateJwk: this.secrets.openJson<JsonWebKey>('service_keys.private_jwk', [r.kid], r.private_jwk),
        publicJwk: JSON.parse(r.public_jwk),
        createdAt: r.created_at,
      }),
    )
  }
  async createFirst(k: ServiceKeyRecord) {
    await first(this.db, FIRST_KEY_LOCK, [])
    await run(this.db, FIRST_KEY_INSERT, [
      k.kid,
      k.alg,
      this.secrets.sealJson('service_keys.private_jwk', [k.kid], k.privateJwk),
      JSON.stringify(k.publicJwk),
      k.createdAt,
    ])
  }
}

export interface Caches {
  templates: TemplateCache
  apiKeys: RowCache<ApiKeyRecord>
  listVersions: RowCache<{ tenantId: string; version: number }>
}

/**
 * The repositories over one connection. `postgres`: the same store on PostgreSQL (issue 21), whose template
 * writes are announced to the other instances (store/postgres-feed.ts). `own`: SQLite's root repositories
 * only, the store's own transaction, in which a write atomic by itself (index.ts, Store) runs its statements
 * (issue 38); on PostgreSQL each such write is one statement and needs none.
 */
export function repositories(
  db: Db,
  caches: Caches,
  secrets: StoreSecrets,
  postgres?: { announceTemplate: TemplateAnnouncer },
  own?: OwnTransaction,
): Repositories {
  // The protocol repositories see only their own tables (a narrower view of the same connection).
  const protocol = db as unknown as Kysely<IssuanceProtocolSchema>
  const nonces = new SqlNonces(protocol)
  const authorizations = new SqlAuthorizations(db as unknown as Kysely<AuthorizationSchema>)
  const webhooks = new SqlWebhooks(db as unknown as Kysely<WebhooksSchema>)
  const onPostgres = postgres !== undefined
  const ownTransaction = onPostgres ? undefined : own
  return {
    tenants: new SqlTenants(db),
    apiKeys: new SqlApiKeys(db, caches.apiKeys),
    templates: new SqlTemplates(
      db as unknown as Kysely<TemplatesSchema>,
      caches.templates,
      secrets,
      postgres?.announceTemplate,
    ),
    processes: new SqlProcesses(protocol),
    serviceKeys: new SqlServiceKeys(db, secrets),
    issuerKeys: new SqlIssuerKeys(protocol, secrets),
    issuerCertificates: new SqlIssuerCertificates(protocol, secrets),
    grants: new SqlGrants(protocol, onPostgres, ownTransaction),
    authorizations,
    nonces,
    statusLists: new SqlStatusLists(protocol, caches.listVersions),
    issuedCredentials: new SqlIssuedCredentials(protocol),
    sessions: new SqlSessions(
      db as unknown as Kysely<VerificationSchema>,
      secrets,
      webhooks,
      onPostgres,
      ownTransaction,
    ),
    webhooks,
    retention: new SqlRetention(
      db as unknown as Kysely<RetentionSchema>,
      nonces,
      postgres !== undefined,
      authorizations,
    ),
  }
}
