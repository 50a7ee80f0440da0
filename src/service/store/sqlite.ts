import { AsyncLocalStorage } from 'node:async_hooks'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import {
  type Insertable,
  Kysely,
  Migrator,
  type Selectable,
  type SqliteDatabase,
  SqliteDialect,
  sql,
} from 'kysely'
import Database from 'libsql'
import { resolveTemplate } from '../config/schema.ts'
import { type Clock, systemClock } from '../util/clock.ts'
import type {
  ApiKeyRecord,
  ApiKeyRepository,
  HolderValidator,
  IssuedCredential,
  PreparedCredential,
  ProcessQuery,
  ProcessRecord,
  ProcessRepository,
  Repositories,
  ServiceKeyRecord,
  ServiceKeyRepository,
  Store,
  StoreStats,
  TemplateKind,
  TemplateRecord,
  TemplateRepository,
  TenantRecord,
  TenantRepository,
} from './index.ts'
import { TransactionMisuseError } from './index.ts'
import { migrations } from './migrations.ts'
import { insertOrConflict } from './sqlite-errors.ts'
import {
  type IssuanceProtocolSchema,
  SqliteGrants,
  SqliteIssuedCredentials,
  SqliteIssuerKeys,
  SqliteNonces,
  SqliteStatusLists,
} from './sqlite-issuance.ts'
import { SqliteSessions, type VerificationSchema } from './sqlite-verification.ts'
import { SqliteWebhooks, type WebhooksSchema } from './sqlite-webhooks.ts'

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
interface TemplatesTable {
  tenant_id: string
  id: string
  kind: string
  body: string
  source: string
  created_at: number
  updated_at: number
}
interface ProcessesTable {
  id: string
  tenant_id: string
  template_id: string
  type: string
  status: string
  data: string | null
  validator: string | null
  submitted: string | null
  rejected_reason: string | null
  created_by_key: string
  created_at: number
  updated_at: number
}
interface ServiceKeysTable {
  kid: string
  alg: string
  private_jwk: string
  public_jwk: string
  created_at: number
}
interface Schema extends IssuanceProtocolSchema, VerificationSchema, WebhooksSchema {
  tenants: TenantsTable
  api_keys: ApiKeysTable
  templates: TemplatesTable
  issuance_processes: ProcessesTable
  service_keys: ServiceKeysTable
}
type Db = Kysely<Schema>

export const DATABASE_FILE = 'vc-harness.db'

const json = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value)
const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T))

const toTenant = (row: Selectable<TenantsTable>): TenantRecord => ({
  id: row.id,
  source: row.source as TenantRecord['source'],
  createdAt: row.created_at,
})

class SqliteTenants implements TenantRepository {
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

class SqliteApiKeys implements ApiKeyRepository {
  constructor(private readonly db: Db) {}
  async get(id: string) {
    const row = await this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toKey(row)
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
    await insertOrConflict(
      this.db.insertInto('api_keys').values(this.row(key)).execute(),
      `API key "${key.id}"`,
    )
  }
  async upsert(key: ApiKeyRecord) {
    const { id: _id, created_at: _created, ...changes } = this.row(key)
    await this.db
      .insertInto('api_keys')
      .values(this.row(key))
      .onConflict((oc) => oc.column('id').doUpdateSet(changes))
      .execute()
  }
  async revoke(tenantId: string, id: string, at: number) {
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

const toTemplate = (row: Selectable<TemplatesTable>): TemplateRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  kind: row.kind as TemplateKind,
  // Defaults applied on read too: a row written before a default existed reads as a new one would.
  body: resolveTemplate(row.kind as TemplateKind, JSON.parse(row.body)),
  source: row.source as TemplateRecord['source'],
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

/**
 * Templates by (tenant, id), read ~9 times per complete flow and written rarely (portal, boot). A write
 * through this process drops its entry at once; an entry lives TEMPLATE_CACHE_MS, which bounds how long
 * another worker of a cluster can act on a template changed elsewhere. Callers get copies.
 */
const TEMPLATE_CACHE_MS = 1000
class TemplateCache {
  private readonly entries = new Map<string, { record: TemplateRecord | undefined; until: number }>()
  // The service's clock, so expiry is tested by moving it rather than by sleeping.
  constructor(private readonly clock: Clock) {}
  get(key: string): { record: TemplateRecord | undefined } | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    const now = this.clock.now()
    // Also stale when the clock moved back (a test clock reset) past the entry's birth.
    if (entry.until <= now || entry.until > now + TEMPLATE_CACHE_MS) {
      this.entries.delete(key)
      return undefined
    }
    return { record: entry.record && structuredClone(entry.record) }
  }
  set(key: string, record: TemplateRecord | undefined) {
    if (this.entries.size >= 1024) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(key, {
      record: record && structuredClone(record),
      until: this.clock.now() + TEMPLATE_CACHE_MS,
    })
  }
  drop(tenantId: string, id: string) {
    this.entries.delete(JSON.stringify([tenantId, id]))
  }
}

class SqliteTemplates implements TemplateRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: TemplateCache,
  ) {}
  async get<K extends TemplateKind>(tenantId: string, id: string, kind: K) {
    const found = await this.find(tenantId, id)
    return found?.kind === kind ? (found as TemplateRecord<K>) : undefined
  }
  async find(tenantId: string, id: string) {
    const key = JSON.stringify([tenantId, id])
    const cached = this.cache.get(key)
    if (cached) return cached.record
    const row = await this.db
      .selectFrom('templates')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .executeTakeFirst()
    const record = row && toTemplate(row)
    this.cache.set(key, record)
    return record
  }
  async list<K extends TemplateKind>(tenantId: string, kind: K) {
    const rows = await this.db
      .selectFrom('templates')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('kind', '=', kind)
      .orderBy('id')
      .execute()
    return rows.map(toTemplate) as TemplateRecord<K>[]
  }
  async listBySource(source: TemplateRecord['source']) {
    return (await this.db.selectFrom('templates').selectAll().where('source', '=', source).execute()).map(
      toTemplate,
    )
  }
  async create(template: TemplateRecord) {
    this.cache.drop(template.tenantId, template.id)
    await insertOrConflict(
      this.db.insertInto('templates').values(this.row(template)).execute(),
      `template "${template.id}"`,
    )
  }
  async upsert(template: TemplateRecord) {
    this.cache.drop(template.tenantId, template.id)
    const row = this.row(template)
    await this.db
      .insertInto('templates')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['tenant_id', 'id']).doUpdateSet({
          kind: row.kind,
          body: row.body,
          source: row.source,
          updated_at: row.updated_at,
        }),
      )
      .execute()
  }
  async update(template: TemplateRecord) {
    this.cache.drop(template.tenantId, template.id)
    await this.db
      .updateTable('templates')
      .set({ body: JSON.stringify(template.body), updated_at: template.updatedAt })
      .where('tenant_id', '=', template.tenantId)
      .where('id', '=', template.id)
      .execute()
  }
  async delete(tenantId: string, id: string) {
    this.cache.drop(tenantId, id)
    await this.db.deleteFrom('templates').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
  }
  private row(t: TemplateRecord): Insertable<TemplatesTable> {
    return {
      tenant_id: t.tenantId,
      id: t.id,
      kind: t.kind,
      body: JSON.stringify(t.body),
      source: t.source,
      created_at: t.createdAt,
      updated_at: t.updatedAt,
    }
  }
}

const toProcess = (row: Selectable<ProcessesTable>): ProcessRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  templateId: row.template_id,
  type: row.type,
  status: row.status as ProcessRecord['status'],
  data: parse<IssuedCredential[]>(row.data),
  validator: parse<HolderValidator>(row.validator),
  submitted: parse<PreparedCredential[]>(row.submitted),
  rejectedReason: row.rejected_reason,
  createdByKey: row.created_by_key,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

class SqliteProcesses implements ProcessRepository {
  constructor(private readonly db: Db) {}
  async get(id: string) {
    const row = await this.db
      .selectFrom('issuance_processes')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toProcess(row)
  }
  async create(p: ProcessRecord) {
    await insertOrConflict(
      this.db
        .insertInto('issuance_processes')
        .values({
          id: p.id,
          tenant_id: p.tenantId,
          template_id: p.templateId,
          type: p.type,
          status: p.status,
          data: json(p.data),
          validator: json(p.validator),
          submitted: json(p.submitted),
          rejected_reason: p.rejectedReason,
          created_by_key: p.createdByKey,
          created_at: p.createdAt,
          updated_at: p.updatedAt,
        })
        .execute(),
      `issuance process "${p.id}"`,
    )
  }
  async list(query: ProcessQuery) {
    let q = this.db.selectFrom('issuance_processes').selectAll().where('tenant_id', '=', query.tenantId)
    if (query.status) q = q.where('status', '=', query.status)
    const after = query.after
    if (after) {
      q = q.where((eb) =>
        eb.or([
          eb('created_at', '>', after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)]),
        ]),
      )
    }
    const rows = await q.orderBy('created_at').orderBy('id').limit(query.limit).execute()
    return rows.map(toProcess)
  }
  async countByTemplate(tenantId: string, templateId: string) {
    const row = await this.db
      .selectFrom('issuance_processes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenantId)
      .where('template_id', '=', templateId)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }
  async update(p: ProcessRecord, expectedUpdatedAt: number) {
    const result = await this.db
      .updateTable('issuance_processes')
      .set({
        status: p.status,
        data: json(p.data),
        validator: json(p.validator),
        submitted: json(p.submitted),
        rejected_reason: p.rejectedReason,
        updated_at: p.updatedAt,
      })
      .where('id', '=', p.id)
      .where('updated_at', '=', expectedUpdatedAt)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }
}

class SqliteServiceKeys implements ServiceKeyRepository {
  constructor(private readonly db: Db) {}
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
        privateJwk: JSON.parse(r.private_jwk),
        publicJwk: JSON.parse(r.public_jwk),
        createdAt: r.created_at,
      }),
    )
  }
  async create(k: ServiceKeyRecord) {
    await insertOrConflict(
      this.db
        .insertInto('service_keys')
        .values({
          kid: k.kid,
          alg: k.alg,
          private_jwk: JSON.stringify(k.privateJwk),
          public_jwk: JSON.stringify(k.publicJwk),
          created_at: k.createdAt,
        })
        .execute(),
      `service key "${k.kid}"`,
    )
  }
}

function repositories(db: Db, templateCache: TemplateCache): Repositories {
  // The protocol repositories see only their own tables (a narrower view of the same connection).
  const protocol = db as unknown as Kysely<IssuanceProtocolSchema>
  return {
    tenants: new SqliteTenants(db),
    apiKeys: new SqliteApiKeys(db),
    templates: new SqliteTemplates(db, templateCache),
    processes: new SqliteProcesses(db),
    serviceKeys: new SqliteServiceKeys(db),
    issuerKeys: new SqliteIssuerKeys(protocol),
    grants: new SqliteGrants(protocol),
    nonces: new SqliteNonces(protocol),
    statusLists: new SqliteStatusLists(protocol),
    issuedCredentials: new SqliteIssuedCredentials(protocol),
    sessions: new SqliteSessions(db as unknown as Kysely<VerificationSchema>),
    webhooks: new SqliteWebhooks(db as unknown as Kysely<WebhooksSchema>),
  }
}

const STATEMENT_CACHE_SIZE = 256

/**
 * Kysely prepares every query afresh; preparing cost ~9% of server time on login and reads. Queries are
 * parameterised, so their SQL texts are few and a prepared statement can be reused. Safe because
 * Kysely's SQLite driver runs one query at a time on the connection.
 */
function withStatementCache(database: Database.Database, stats: StoreStats): SqliteDatabase {
  const cache = new Map<string, Database.Statement>()
  return {
    close: () => database.close(),
    prepare: (sql: string) => {
      // Kysely's driver prepares once per execution (BEGIN, SAVEPOINT and COMMIT included), so this
      // counts every statement run on the connection for the price of an increment.
      stats.statements++
      let statement = cache.get(sql)
      if (!statement) {
        statement = database.prepare(sql)
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string)
        cache.set(sql, statement)
      }
      return statement as unknown as ReturnType<SqliteDatabase['prepare']>
    },
  }
}

/** Transactions committed together at most: bounds how long one batch holds the connection. */
const MAX_BATCH = 64

interface Queued {
  work: (repos: Repositories) => Promise<unknown>
  resolve(value: unknown): void
  reject(error: unknown): void
}

/**
 * Which store's transaction callback the current async context runs in. `active` turns false once the
 * callback settles, so work it merely scheduled (a timer, an event handler) may use the store later.
 */
interface TransactionScope {
  owner: object
  active: boolean
}
const insideTransaction = new AsyncLocalStorage<TransactionScope>()

/**
 * The root store's repositories and `transaction`, refusing calls from inside one of this store's own
 * transaction callbacks: the batch holds the only connection, so such a call would wait forever.
 */
function guardRoot<T extends object>(target: T, owner: object, name: string): T {
  const refuse = (member: string) => {
    const scope = insideTransaction.getStore()
    if (scope?.owner !== owner || !scope.active) return undefined
    return new TransactionMisuseError(
      `store.${name ? `${name}.` : ''}${member}() was called inside a store.transaction() callback, whose batch holds the only database connection: use the callback's repositories argument instead`,
    )
  }
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const misuse = refuse(String(property))
        // Every store method is async: the misuse arrives as a rejection like any other store error.
        return misuse ? Promise.reject(misuse) : value.apply(object, args)
      }
    },
  })
}

/**
 * Write transactions with group commit. The driver is synchronous, so every COMMIT's fsync
 * (synchronous=FULL) blocks the event loop; under load that, not CPU, capped the service. Transactions
 * asked for in the same turn of the event loop are run one after the other inside one
 * `BEGIN IMMEDIATE … COMMIT`: one fsync for the batch. With more than one, each runs in its own SAVEPOINT
 * (a failing one rolls back alone); one alone needs none (a failure rolls back the whole transaction),
 * which saves two statements in the common unloaded case.
 * Nobody hears of success before the COMMIT is durable; if it fails, every transaction of the batch fails.
 *
 * BEGIN IMMEDIATE (Kysely's `begin` is DEFERRED) takes the write lock up front: a deferred transaction
 * that reads and then writes cannot wait for the lock when another process (a cluster worker) committed
 * in between; its upgrade fails at once with SQLITE_BUSY instead of honouring busy_timeout.
 */
function groupCommit(db: Db, templateCache: TemplateCache, owner: object) {
  let queue: Queued[] = []
  let scheduled = false

  async function run(item: Queued, conn: Db): Promise<unknown> {
    const scope: TransactionScope = { owner, active: true }
    try {
      return await insideTransaction.run(scope, () => item.work(repositories(conn, templateCache)))
    } finally {
      scope.active = false
    }
  }

  async function runBatch(batch: Queued[]) {
    const outcomes: { ok: boolean; value: unknown }[] = []
    try {
      // connection() holds the one connection (Kysely's mutex) for the whole batch.
      await db.connection().execute(async (conn) => {
        await sql`begin immediate`.execute(conn)
        try {
          const only = batch.length === 1 ? batch[0] : undefined
          if (only) {
            try {
              outcomes.push({ ok: true, value: await run(only, conn) })
            } catch (error) {
              outcomes.push({ ok: false, value: error })
              await sql`rollback`.execute(conn)
              return
            }
          } else {
            for (const item of batch) {
              await sql`savepoint tx`.execute(conn)
              try {
                outcomes.push({ ok: true, value: await run(item, conn) })
                await sql`release tx`.execute(conn)
              } catch (error) {
                await sql`rollback to tx`.execute(conn)
                await sql`release tx`.execute(conn)
                outcomes.push({ ok: false, value: error })
              }
            }
          }
          await sql`commit`.execute(conn)
        } catch (error) {
          // A failed COMMIT (e.g. SQLITE_BUSY) leaves the transaction open: end it before the connection is reused.
          await sql`rollback`.execute(conn).catch(() => {})
          throw error
        }
      })
    } catch (error) {
      for (const item of batch) item.reject(error)
      return
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i]
      if (outcome?.ok) item.resolve(outcome.value)
      else item.reject(outcome?.value)
    })
  }

  function flush() {
    scheduled = false
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH)
      queue = queue.slice(MAX_BATCH)
      void runBatch(batch)
    }
  }

  return <T>(work: (repos: Repositories) => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (value: unknown) => void, reject })
      if (!scheduled) {
        scheduled = true
        // After the I/O phase: every request that arrived in this turn joins the batch.
        setImmediate(flush)
      }
    })
}

/**
 * Opens (creating if needed) the SQLite store in `dataDir`, or an in-memory one for `':memory:'`,
 * and brings its schema up to date. WAL with synchronous=FULL: a committed write survives a crash.
 */
export async function openSqliteStore(dataDir: string, options: { clock?: Clock } = {}): Promise<Store> {
  let path = ':memory:'
  if (dataDir !== ':memory:') {
    mkdirSync(dataDir, { recursive: true })
    path = join(dataDir, DATABASE_FILE)
  }
  const database = new Database(path)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.pragma('foreign_keys = ON')
  database.pragma('busy_timeout = 5000')
  // libsql mirrors better-sqlite3's API, which is what Kysely's SqliteDialect drives.
  const stats: StoreStats = { statements: 0 }
  const db = new Kysely<Schema>({
    dialect: new SqliteDialect({ database: withStatementCache(database, stats) }),
  })
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error } = await migrator.migrateToLatest()
  if (error) {
    await db.destroy()
    throw error
  }
  const templateCache = new TemplateCache(options.clock ?? systemClock)
  // Identifies this store's transactions: another store's callback may call this one.
  const owner = {}
  const root = repositories(db, templateCache)
  const guarded = Object.fromEntries(
    Object.entries(root).map(([name, repo]) => [name, guardRoot(repo, owner, name)]),
  ) as unknown as Repositories
  return {
    ...guarded,
    ...guardRoot({ transaction: groupCommit(db, templateCache, owner) }, owner, ''),
    stats,
    close: () => db.destroy(),
  }
}
