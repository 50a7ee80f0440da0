import { type FileHandle, open } from 'node:fs/promises'
import type Database from 'better-sqlite3'
import type {
  CompiledQuery,
  DatabaseConnection,
  Driver,
  QueryResult,
  SqliteDatabase,
  SqliteDialectConfig,
} from 'kysely'
import type { StoreStats } from './index.ts'
import { SqliteDialect } from './kysely.ts'
import type { OneRowQuery } from './prepared.ts'

// The connection-level mechanics of the SQLite store, under Kysely: prepared statements reused, writes
// made durable off the event loop, and SQLITE_BUSY waited for asynchronously. The repositories know
// nothing of them; sqlite-commit.ts groups transactions on top.

const STATEMENT_CACHE_SIZE = 256

/** How long a statement waits for another process's write lock before SQLITE_BUSY reaches the caller. */
export const BUSY_WAIT_MS = 5000
/** The first pause after SQLITE_BUSY; doubled up to BUSY_MAX_PAUSE_MS, with jitter so workers do not march in step. */
const BUSY_FIRST_PAUSE_MS = 1
const BUSY_MAX_PAUSE_MS = 25

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const isBusy = (error: unknown) => (error as { code?: string }).code?.startsWith('SQLITE_BUSY') === true

/**
 * Durable commits without blocking the event loop. The connection runs with `synchronous=NORMAL` (in WAL
 * mode a commit then writes its frames and does not fsync), and every write's caller waits for `settle()`,
 * which fdatasyncs the WAL file on libuv's thread pool: nobody hears of a write's success before it is on
 * disk, as with `synchronous=FULL`, but the event loop serves other requests meanwhile, and one fsync
 * covers every write made before it started (group commit across batches). Checkpoints sync the WAL and
 * the database file themselves (SQLite's rule for NORMAL). A read that saw a write not yet on disk waits
 * for it too (transaction-guard.ts), so no answer shows state that a power cut could take back.
 */
export class WalSync {
  /** Writes run on the connection so far (a counter: which of them a sync covers). */
  private written = 0
  private synced = 0
  private inFlight: Promise<void> | undefined
  private handle: FileHandle | undefined
  /** Told after each sync that covered writes (the checkpointer, store/sqlite-checkpoint.ts). */
  onSynced: (() => void) | undefined

  constructor(
    /** The `-wal` file; undefined for ':memory:' (nothing to make durable). */
    private readonly walPath: string | undefined,
    private readonly stats: StoreStats,
  ) {}

  wrote() {
    this.written++
  }

  /** True when a write has run that no finished sync covers. */
  get pending() {
    return this.synced < this.written
  }

  /** Resolves once every write run so far is on disk. */
  async settle(): Promise<void> {
    const target = this.written
    if (this.walPath === undefined) {
      this.synced = Math.max(this.synced, target)
      return
    }
    // A sync in flight may have started before the last of these writes: wait, then start one that covers it.
    while (this.synced < target) await (this.inFlight ?? this.start())
  }

  private start(): Promise<void> {
    const run = async () => {
      // Let the writes of this turn of the event loop join: fewer syncs, each covering more.
      await new Promise((resolve) => setImmediate(resolve))
      const covers = this.written
      try {
        this.handle ??= await open(this.walPath as string, 'r')
        await this.handle.datasync()
        this.stats.syncs++
        this.synced = Math.max(this.synced, covers)
        this.onSynced?.()
      } catch (error) {
        // A WAL that SQLite removed and made again (it does when the last connection closes) is reopened.
        await this.handle?.close().catch(() => {})
        this.handle = undefined
        throw error
      }
    }
    const promise = run().finally(() => {
      if (this.inFlight === promise) this.inFlight = undefined
    })
    this.inFlight = promise
    return promise
  }

  async close() {
    await this.inFlight?.catch(() => {})
    await this.handle?.close().catch(() => {})
    this.handle = undefined
  }
}

interface CachedStatement {
  statement: Database.Statement
  reader: boolean
  write: boolean
}

/**
 * One better-sqlite3 connection behind Kysely's DatabaseConnection. Compared with Kysely's own SqliteConnection:
 * - a statement is prepared once per SQL text (Kysely prepares per execution; preparing cost ~9 % of
 *   server time on login and reads), and its `reader` flag is read once with it;
 * - every statement is counted (`stats.statements`, BEGIN / SAVEPOINT / COMMIT included) and every write
 *   reported to the WalSync;
 * - SQLITE_BUSY outside a transaction (another process holds the write lock: a cluster worker) is waited
 *   for with timers, up to BUSY_WAIT_MS, instead of inside the synchronous driver with the event loop
 *   stalled (`busy_timeout` is 0). Outside a transaction a statement that met SQLITE_BUSY changed
 *   nothing, so running it again is safe; `BEGIN IMMEDIATE`, where group commit takes the lock, is such a
 *   statement. Inside a transaction the lock is already held.
 */
class NativeConnection implements DatabaseConnection {
  private readonly cache = new Map<string, CachedStatement>()
  constructor(
    private readonly database: Database.Database,
    private readonly stats: StoreStats,
    private readonly sync: WalSync,
  ) {}

  prepare(sql: string): CachedStatement {
    let cached = this.cache.get(sql)
    if (!cached) {
      const statement = this.database.prepare(sql)
      // Only a plain SELECT leaves the database as it was; anything else (RETURNING included) may write.
      cached = { statement, reader: statement.reader, write: !/^\s*select\b/i.test(sql) }
      if (this.cache.size >= STATEMENT_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string)
      this.cache.set(sql, cached)
    }
    return cached
  }

  private runOnce<R>(compiled: CompiledQuery): QueryResult<R> {
    this.stats.statements++
    const { statement, reader, write } = this.prepare(compiled.sql)
    if (write) this.sync.wrote()
    const parameters = compiled.parameters as unknown[]
    if (reader) {
      if (!(compiled as OneRowQuery).one) return { rows: statement.all(parameters) as R[] }
      // A single row in one native call (`get`), without an array around it.
      const row = statement.get(parameters) as R | undefined
      return { rows: row === undefined ? [] : [row] }
    }
    const { changes, lastInsertRowid } = statement.run(parameters)
    return {
      numAffectedRows: changes === undefined || changes === null ? undefined : BigInt(changes),
      insertId:
        lastInsertRowid === undefined || lastInsertRowid === null ? undefined : BigInt(lastInsertRowid),
      rows: [],
    }
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    let deadline = 0
    let pause = BUSY_FIRST_PAUSE_MS
    for (;;) {
      try {
        return this.runOnce<R>(compiled)
      } catch (error) {
        if (!isBusy(error) || this.database.inTransaction) throw error
        const now = Date.now()
        deadline ||= now + BUSY_WAIT_MS
        if (now >= deadline) throw error
        this.stats.busyWaits++
        await sleep(Math.min(pause * (0.5 + Math.random()), deadline - now))
        pause = Math.min(pause * 2, BUSY_MAX_PAUSE_MS)
      }
    }
  }

  // biome-ignore lint/correctness/useYield: the store streams nothing; Kysely's interface asks for the method
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the SQLite store does not stream queries')
  }
}

/** Kysely's single-connection mutex: one query or transaction at a time on the one connection. */
class ConnectionMutex {
  private held: Promise<void> | undefined
  private release: (() => void) | undefined
  async lock() {
    while (this.held) await this.held
    this.held = new Promise((resolve) => {
      this.release = resolve
    })
  }
  unlock() {
    const release = this.release
    this.held = undefined
    this.release = undefined
    release?.()
  }
}

class NativeDriver implements Driver {
  private readonly mutex = new ConnectionMutex()
  private readonly connection: NativeConnection
  constructor(
    private readonly database: Database.Database,
    stats: StoreStats,
    sync: WalSync,
  ) {
    this.connection = new NativeConnection(database, stats, sync)
  }
  async init() {}
  async acquireConnection() {
    await this.mutex.lock()
    return this.connection
  }
  async beginTransaction(connection: DatabaseConnection) {
    await connection.executeQuery({ sql: 'begin', parameters: [] } as unknown as CompiledQuery)
  }
  async commitTransaction(connection: DatabaseConnection) {
    await connection.executeQuery({ sql: 'commit', parameters: [] } as unknown as CompiledQuery)
  }
  async rollbackTransaction(connection: DatabaseConnection) {
    await connection.executeQuery({ sql: 'rollback', parameters: [] } as unknown as CompiledQuery)
  }
  async releaseConnection() {
    this.mutex.unlock()
  }
  async destroy() {
    this.database.close()
  }
}

/** Kysely's SQLite dialect (query compiler, adapter, introspector) over NativeDriver. */
export class NativeSqliteDialect extends SqliteDialect {
  constructor(
    private readonly database: Database.Database,
    private readonly stats: StoreStats,
    private readonly sync: WalSync,
  ) {
    // The base class's own driver is never created; its config is kept for the introspector's sake.
    super({ database: database as unknown as SqliteDatabase } satisfies SqliteDialectConfig)
  }
  override createDriver(): Driver {
    return new NativeDriver(this.database, this.stats, this.sync)
  }
}
