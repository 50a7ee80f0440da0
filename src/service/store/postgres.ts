import type { CompiledQuery, DatabaseConnection, Driver, Kysely, PostgresDialectConfig } from 'kysely'
import type * as Pg from 'pg'
import { lazyRequire } from '../../shared/lazy.ts'
import type { DataKeyring } from '../crypto/data-key.ts'
import { type Clock, systemClock } from '../util/clock.ts'
import { SharedCache } from './exclusive-cache.ts'
import type { ApiKeyRecord, Repositories, Store, StoreStats } from './index.ts'
import { Kysely as KyselyClass, Migrator, PostgresDialect } from './kysely.ts'
import { migrations } from './migrations.ts'
import { postgresGroupCommit } from './postgres-commit.ts'
import { PostgresFeed, SHARED_CACHE_TTL_MS } from './postgres-feed.ts'
import { pipelinedDialect } from './postgres-pipeline.ts'
import { postgresMigrations } from './postgres-schema.ts'
import { type OneRowQuery, postgresStatementNames, prepared, rows, run } from './prepared.ts'
import { type Caches, repositories, type StoreSchema } from './repositories.ts'
import { pendingReseals, type Row, type SecretsDb, StoreSecrets } from './secrets.ts'
import { type TemplateAnnouncer, TemplateCache } from './templates.ts'
import { guardStore } from './transaction-guard.ts'

// The PostgreSQL connection of a shared deployment (issue 21; docs/scaling.md): a pg pool under Kysely's
// PostgreSQL dialect, migrated by the same list of migrations as SQLite. `pg` loads only when a PostgreSQL
// URL is given: the embedded SQLite default never pays for it.

const pg = lazyRequire<typeof Pg>('pg')

/** pg's type id of int8 (`bigint`): every integer column of the schema is one. */
const INT8_OID = 20

export interface PostgresOptions {
  /** Connections in the pool (default 10). */
  maxConnections?: number
  /** A statement running longer is cancelled by the server (default 10 s). */
  statementTimeoutMs?: number
  /** How long a new connection may take (default 5 s). */
  connectTimeoutMs?: number
}

/**
 * The database could not be reached, or its schema is newer than this code (another version migrated it):
 * the message names the database (never its password) and the reason.
 */
export class PostgresOpenError extends Error {
  override name = 'PostgresOpenError'
}

/** The URL without its password, for messages and logs. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return '(not a URL)'
  }
}

/** A connection's settings: the pool's and the pipelined connections' (postgres-pipeline.ts). */
function clientConfig(url: string, options: PostgresOptions): Pg.ClientConfig {
  const { types } = pg()
  return {
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? Number : types.getTypeParser(oid, format)) as typeof types.getTypeParser,
    },
  }
}

/**
 * Kysely over a pg pool. Integer columns are `bigint` (milliseconds since 1970 outgrow 4 bytes) and pg reads
 * those as strings; here they read as numbers, exact up to 2^53, which a millisecond timestamp stays below
 * for 285,000 years.
 */
export function postgresDatabase<DB>(
  url: string,
  options: PostgresOptions = {},
  stats: StoreStats = { statements: 0, syncs: 0, busyWaits: 0 },
): Kysely<DB> {
  const pool = new (pg().Pool)({ ...clientConfig(url, options), max: options.maxConnections ?? 10 })
  // An idle connection the server cut (a restart, pg_terminate_backend) is an 'error' of the pool, which drops
  // it and connects anew for the next statement; unheard, the event would end the process.
  pool.on('error', () => {})
  // The fixed statements (prepared.ts) as named statements: parsed and planned once per connection.
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as { query: unknown }).query = (text: unknown, values?: unknown, callback?: unknown) => {
      const name =
        typeof text === 'string' && Array.isArray(values) ? postgresStatementNames.get(text) : undefined
      if (name === undefined)
        return callback === undefined ? query(text, values) : query(text, values, callback)
      return query({ name, text, values }, callback)
    }
  })
  return new KyselyClass<DB>({ dialect: new CountingPostgresDialect({ pool }, stats) })
}

/**
 * Kysely's PostgreSQL dialect, counting every statement (`stats.statements`, BEGIN and COMMIT included, as
 * on SQLite) and running a fixed statement's PostgreSQL text (store/prepared.ts) in place of its SQLite one.
 */
class CountingPostgresDialect extends PostgresDialect {
  constructor(
    config: PostgresDialectConfig,
    private readonly stats: StoreStats,
  ) {
    super(config)
  }
  override createDriver(): Driver {
    const driver = super.createDriver()
    const stats = this.stats
    const wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>()
    const wrap = (connection: DatabaseConnection): DatabaseConnection => {
      let proxy = wrapped.get(connection)
      if (!proxy) {
        proxy = new Proxy(connection, {
          get(target, property) {
            if (property === 'executeQuery') {
              return (compiled: CompiledQuery) => {
                stats.statements++
                const text = (compiled as OneRowQuery).postgres
                return target.executeQuery(text ? { ...compiled, sql: text } : compiled)
              }
            }
            const value = Reflect.get(target, property, target)
            // The driver's own methods use private fields: they run on the connection itself.
            return typeof value === 'function' ? value.bind(target) : value
          },
        })
        wrapped.set(connection, proxy)
        unwrapped.set(proxy, connection)
      }
      return proxy
    }
    const unwrapped = new WeakMap<DatabaseConnection, DatabaseConnection>()
    const own = (connection: DatabaseConnection) => unwrapped.get(connection) ?? connection
    return new Proxy(driver, {
      get(target, property) {
        const value = Reflect.get(target, property, target)
        if (typeof value !== 'function') return value
        if (property === 'acquireConnection') return async () => wrap(await target.acquireConnection())
        // releaseConnection reaches the pg client through the connection's private method: the real one.
        if (property === 'releaseConnection')
          return (connection: DatabaseConnection) => target.releaseConnection(own(connection))
        return value.bind(target)
      },
    })
  }
}

export interface PostgresStoreOptions extends PostgresOptions {
  clock?: Clock
  /** The data key sealing private keys and webhook secrets (docs/security.md), as on SQLite. */
  dataKeys: DataKeyring
}

/**
 * The store on PostgreSQL (issue 21): migrated by the same list as SQLite, the same repositories over a pg
 * pool, each `transaction` a PostgreSQL transaction (READ COMMITTED; every state change is a conditional
 * UPDATE, and a status-list change locks its list with FOR UPDATE). What SQLite keeps in memory because one
 * process owns the file (API keys, status-list versions) is read every time: other instances change it.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions): Promise<Store> {
  const stats: StoreStats = { statements: 0, syncs: 0, busyWaits: 0 }
  const db = postgresDatabase<StoreSchema>(url, options, stats)
  try {
    await migratePostgres(db as unknown as Kysely<unknown>, url)
  } catch (error) {
    await db.destroy()
    throw error
  }
  const secrets = new StoreSecrets(options.dataKeys)
  try {
    // Values of an older key of a rotation (docs/security.md) are sealed under the current one, as on SQLite.
    options.dataKeys.resealed += await resealSecretsOnPostgres(db, secrets)
  } catch (error) {
    await db.destroy()
    throw error
  }
  const templates = new TemplateCache(options.clock ?? systemClock)
  const feed = new PostgresFeed(
    url,
    db as unknown as Kysely<unknown>,
    (tenantId, id) => templates.drop(tenantId, id),
    undefined,
    () => {
      stats.statements++
    },
  )
  try {
    await feed.start()
  } catch (error) {
    await db.destroy()
    throw new PostgresOpenError(
      `cannot listen on the database ${redactedUrl(url)}: ${(error as Error).message}`,
      {
        cause: error,
      },
    )
  }
  // Read by every authenticated request (API keys) and every status check (status-list versions), changed
  // rarely: cached on every instance, kept coherent over the feed (issue 38; store/exclusive-cache.ts).
  const apiKeys = new SharedCache<ApiKeyRecord>(feed, 'apiKeys', SHARED_CACHE_TTL_MS)
  const listVersions = new SharedCache<{ tenantId: string; version: number }>(
    feed,
    'listVersions',
    SHARED_CACHE_TTL_MS,
  )
  const caches: Caches = { templates, apiKeys, listVersions }
  const shared = { announceTemplate: feed.announceTemplate as TemplateAnnouncer }
  const owner = {}
  // Statements outside a transaction go out pipelined on a few connections (postgres-pipeline.ts, issue 38).
  const rootDb = new KyselyClass<StoreSchema>({
    dialect: pipelinedDialect(clientConfig(url, options), stats),
  })
  const root = repositories(rootDb, caches, secrets, shared)
  /** The shared caches a batch's transactions changed: announced once its commit has answered. */
  const changedBy = new WeakMap<Repositories, Set<SharedCache<object>>>()
  // The transactions of one turn share one BEGIN … COMMIT (postgres-commit.ts, issue 38).
  const group = postgresGroupCommit(
    db,
    (conn) => {
      const changed = new Set<SharedCache<object>>()
      const repos = repositories(
        conn,
        {
          templates,
          apiKeys: apiKeys.inTransaction(() => changed.add(apiKeys)),
          listVersions: listVersions.inTransaction(() => changed.add(listVersions)),
        },
        secrets,
        shared,
      )
      changedBy.set(repos, changed)
      return repos
    },
    owner,
  )
  const settle = group.settle
  // A transaction that changed cached rows answers once no instance holds a copy from before its commit.
  const transaction = async <T>(work: (repos: Repositories) => Promise<T>): Promise<T> => {
    let changed: Set<SharedCache<object>> | undefined
    const value = await group.transaction((repos) => {
      changed = changedBy.get(repos)
      return work(repos)
    })
    for (const cache of changed ?? []) await cache.committed()
    return value
  }
  return {
    ...guardStore(root, transaction, owner),
    stats,
    feed,
    close: async () => {
      await feed.close()
      // Transactions under way finish first: the pool's end does not wait for a connection in use.
      await settle()
      await rootDb.destroy()
      await db.destroy()
    },
  }
}

/**
 * Brings the schema up to date with the store's migrations (migrations.ts, rewritten for PostgreSQL by
 * postgres-schema.ts). Kysely's migrator takes a lock table, so instances starting together migrate once.
 * A database that cannot be reached, or that holds a migration this code does not know (a newer version
 * migrated it), is a PostgresOpenError.
 */
export async function migratePostgres(db: Kysely<unknown>, url: string): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => postgresMigrations(migrations) },
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) {
    const message = (error as Error).message ?? String(error)
    if (/previously executed migration .* is missing/i.test(message)) {
      throw new PostgresOpenError(
        `the database ${redactedUrl(url)} has a schema newer than this version of vc-harness (${message}); run the version that migrated it, or a newer one`,
        { cause: error },
      )
    }
    throw new PostgresOpenError(`cannot migrate the database ${redactedUrl(url)}: ${message}`, {
      cause: error,
    })
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

/**
 * The secret columns (secrets.ts) re-sealed on PostgreSQL (issue 21), in one transaction of its own. Instances starting together with a
 * new key each find the same values pending; the conditional UPDATEs (`AND value = the old one`) let only the
 * first re-seal each value, the others change nothing. Returns how many values this call re-sealed.
 */
async function resealSecretsOnPostgres(
  // biome-ignore lint/suspicious/noExplicitAny: the statements name their tables
  db: Kysely<any>,
  secrets: StoreSecrets,
): Promise<number> {
  // Fixed texts (prepared.ts): the PostgreSQL connection runs their `$n` form.
  const on = (conn: typeof db): SecretsDb => ({
    all: (text, parameters) => rows<Row>(conn, prepared(text), parameters),
    run: async (text, parameters) => {
      await run(conn, prepared(text), parameters)
    },
  })
  if ((await pendingReseals(on(db), secrets)).length === 0) return 0
  return db.transaction().execute(async (trx) => {
    const work = await pendingReseals(on(trx), secrets)
    for (const reseal of work) await reseal()
    return work.length
  })
}
