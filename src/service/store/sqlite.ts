import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { Insertable, Selectable } from 'kysely'
import { DataKeyError, DataKeyring, localDataKeys } from '../crypto/data-key.ts'
import {
  createPrivateFile,
  ensurePrivateDir,
  fileStatus,
  sharedBits,
  tightenIfExists,
} from '../crypto/private-files.ts'
import { type Clock, systemClock } from '../util/clock.ts'
import { ExclusiveCache } from './exclusive-cache.ts'
import type {
  ApiKeyRecord,
  ApiKeyRepository,
  Repositories,
  ServiceKeyRecord,
  ServiceKeyRepository,
  Store,
  StoreStats,
  TenantRecord,
  TenantRepository,
} from './index.ts'
import { Kysely, Migrator } from './kysely.ts'
import { migrations } from './migrations.ts'
import { first, flag, prepared, run } from './prepared.ts'
import { BACKSTOP_PAGES, Checkpointer } from './sqlite-checkpoint.ts'
import { groupCommit, guardStore } from './sqlite-commit.ts'
import { NativeSqliteDialect, WalSync } from './sqlite-driver.ts'
import { insertOrConflict } from './sqlite-errors.ts'
import {
  type IssuanceProtocolSchema,
  SqliteGrants,
  SqliteIssuedCredentials,
  SqliteIssuerCertificates,
  SqliteIssuerKeys,
  SqliteNonces,
  SqliteProcesses,
  SqliteStatusLists,
} from './sqlite-issuance.ts'
import { type RetentionSchema, SqliteRetention } from './sqlite-retention.ts'
import { resealSecrets, StoreSecrets } from './sqlite-secrets.ts'
import {
  SqliteTemplates,
  type TemplateAnnouncer,
  TemplateCache,
  type TemplatesSchema,
} from './sqlite-templates.ts'
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

export const DATABASE_FILE = 'vc-harness.db'

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

class SqliteApiKeys implements ApiKeyRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ExclusiveCache<ApiKeyRecord>,
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

class SqliteServiceKeys implements ServiceKeyRepository {
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
  apiKeys: ExclusiveCache<ApiKeyRecord>
  listVersions: ExclusiveCache<{ tenantId: string; version: number }>
}

/**
 * The repositories over one connection. `postgres`: the same store on PostgreSQL (issue 21), whose template
 * writes are announced to the other instances (store/postgres-feed.ts).
 */
export function repositories(
  db: Db,
  caches: Caches,
  secrets: StoreSecrets,
  postgres?: { announceTemplate: TemplateAnnouncer },
): Repositories {
  // The protocol repositories see only their own tables (a narrower view of the same connection).
  const protocol = db as unknown as Kysely<IssuanceProtocolSchema>
  const nonces = new SqliteNonces(protocol)
  return {
    tenants: new SqliteTenants(db),
    apiKeys: new SqliteApiKeys(db, caches.apiKeys),
    templates: new SqliteTemplates(
      db as unknown as Kysely<TemplatesSchema>,
      caches.templates,
      secrets,
      postgres?.announceTemplate,
    ),
    processes: new SqliteProcesses(protocol),
    serviceKeys: new SqliteServiceKeys(db, secrets),
    issuerKeys: new SqliteIssuerKeys(protocol, secrets),
    issuerCertificates: new SqliteIssuerCertificates(protocol, secrets),
    grants: new SqliteGrants(protocol),
    nonces,
    statusLists: new SqliteStatusLists(protocol, caches.listVersions),
    issuedCredentials: new SqliteIssuedCredentials(protocol),
    sessions: new SqliteSessions(db as unknown as Kysely<VerificationSchema>, secrets),
    webhooks: new SqliteWebhooks(db as unknown as Kysely<WebhooksSchema>),
    retention: new SqliteRetention(db as unknown as Kysely<RetentionSchema>, nonces, postgres !== undefined),
  }
}

/**
 * The database could not be opened or prepared where `dataDir` says (a file in the way, a folder or database
 * that is not writable, a corrupt file): the message names the folder and SQLite's reason. `vc-harness serve`
 * reports it as a mistake in --data, without a stack trace.
 */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
  constructor(
    readonly dataDir: string,
    cause: unknown,
  ) {
    super(`cannot open the database ${join(dataDir, DATABASE_FILE)}: ${(cause as Error).message ?? cause}`, {
      cause,
    })
  }
}

export interface SqliteStoreOptions {
  clock?: Clock
  /**
   * The data key that seals private keys and webhook secrets (crypto/data-key.ts). Default: a fresh key for
   * ':memory:', else `<dataDir>/data.key`, generated when missing (the embedded demo's choice). `vc-harness
   * serve` chooses per mode: production needs a key from outside the data folder.
   */
  dataKeys?: DataKeyring
  /**
   * Other processes write this database too (cluster workers): what must see their changes at once (API
   * key revocations) is read from the database every time instead of cached.
   */
  shared?: boolean
}

/**
 * Opens (creating if needed) the SQLite store in `dataDir`, or an in-memory one for `':memory:'`,
 * and brings its schema up to date. WAL, and the WAL synced before anyone hears of a write (sqlite-driver.ts):
 * an acknowledged write survives a crash or a power cut.
 * A new folder is created 0700 and a new database 0600 whatever the umask (SQLite gives the -wal and -shm
 * files the database's mode). After the migrations every secret is sealed under the current data key
 * (sqlite-secrets.ts); a value sealed under a key not given fails the open with a DataKeyError.
 */
export async function openSqliteStore(dataDir: string, options: SqliteStoreOptions = {}): Promise<Store> {
  let db: Kysely<Schema> | undefined
  let stats: StoreStats
  let sync: WalSync | undefined
  let checkpointer: Checkpointer | undefined
  let secrets: StoreSecrets
  try {
    let path = ':memory:'
    if (dataDir !== ':memory:') {
      ensurePrivateDir(dataDir)
      path = join(dataDir, DATABASE_FILE)
      createPrivateFile(path)
    }
    const keys =
      options.dataKeys ??
      (dataDir === ':memory:' ? DataKeyring.generate('an in-memory key') : localDataKeys(dataDir).keyring)
    secrets = new StoreSecrets(keys)
    const database = new Database(path)
    database.pragma('journal_mode = WAL')
    // NORMAL: a commit does not fsync on the event loop; WalSync does it on the thread pool before anyone
    // hears of the commit (sqlite-driver.ts), so an acknowledged write is as durable as with FULL.
    database.pragma('synchronous = NORMAL')
    database.pragma('foreign_keys = ON')
    // 0: another process's write lock is waited for with timers (sqlite-driver.ts), never in the driver.
    database.pragma('busy_timeout = 0')
    stats = { statements: 0, syncs: 0, busyWaits: 0 }
    sync = new WalSync(path === ':memory:' ? undefined : `${path}-wal`, stats)
    db = new Kysely<Schema>({ dialect: new NativeSqliteDialect(database, stats, sync) })
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
    const { error } = await migrator.migrateToLatest()
    if (error) throw error
    keys.resealed += await resealSecrets(database, secrets)
    sync.wrote() // the migrations and the re-sealing, on disk before the store serves
    await sync.settle()
    if (path !== ':memory:') {
      // Checkpoints on a thread of their own; SQLite's own, in a COMMIT on the event loop, only as a backstop.
      const started = new Checkpointer(path, stats, (error) => {
        process.emitWarning(
          `vc-harness: the WAL checkpoint thread failed (${error.message}); SQLite checkpoints in COMMIT again`,
        )
        try {
          database.pragma('wal_autocheckpoint = 1000')
        } catch {
          // closed meanwhile: nothing left to checkpoint for
        }
      })
      checkpointer = started
      database.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`)
      sync.onSynced = () => started.poke()
    }
    // Belt and braces for a -wal or -shm file left by an earlier version with a looser mode.
    if (path !== ':memory:' && sharedBits(fileStatus(path)?.mode ?? 0) === 0) {
      for (const suffix of ['-wal', '-shm']) tightenIfExists(`${path}${suffix}`)
    }
  } catch (error) {
    await checkpointer?.close()
    await db?.destroy()
    await sync?.close()
    // A data key problem is the operator's to fix, as it is: not a database that cannot be opened.
    if (dataDir === ':memory:' || error instanceof DataKeyError) throw error
    throw new StoreOpenError(dataDir, error)
  }
  const caches: Caches = {
    templates: new TemplateCache(options.clock ?? systemClock),
    // API keys are read on every relying-party call; revoking one ends its tokens at once.
    apiKeys: new ExclusiveCache<ApiKeyRecord>(!options.shared),
    // A status list's version is read for every presentation of a credential on it.
    listVersions: new ExclusiveCache<{ tenantId: string; version: number }>(!options.shared),
  }
  // Identifies this store's transactions: another store's callback may call this one.
  const owner = {}
  const root = repositories(db, caches, secrets)
  const synced = sync
  const transaction = groupCommit(db, (conn) => repositories(conn, caches, secrets), owner, synced)
  return {
    ...guardStore(root, transaction, owner, synced),
    stats,
    close: async () => {
      await synced.settle().catch(() => {})
      // The checkpoint thread's connection first: nothing of it may outlive the store.
      await checkpointer?.close()
      await db.destroy()
      await synced.close()
    },
  }
}
