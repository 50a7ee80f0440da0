import { join } from 'node:path'
import Database from 'better-sqlite3'
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
import type { ApiKeyRecord, Store, StoreStats } from './index.ts'
import { Kysely, Migrator } from './kysely.ts'
import { migrations } from './migrations.ts'
import { type Caches, repositories, type StoreSchema } from './repositories.ts'
import { StoreSecrets } from './secrets.ts'
import { BACKSTOP_PAGES, Checkpointer } from './sqlite-checkpoint.ts'
import { groupCommit } from './sqlite-commit.ts'
import { NativeSqliteDialect, WalSync } from './sqlite-driver.ts'
import { resealSecrets } from './sqlite-secrets.ts'
import { TemplateCache } from './templates.ts'
import { guardStore } from './transaction-guard.ts'

// The store on SQLite: one file (WAL) or ':memory:', the repositories of repositories.ts over it (the same
// ones PostgreSQL runs), group commit (sqlite-commit.ts) over the connection of sqlite-driver.ts.

export const DATABASE_FILE = 'vc-harness.db'

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
 * (secrets.ts, sqlite-secrets.ts); a value sealed under a key not given fails the open with a DataKeyError.
 */
export async function openSqliteStore(dataDir: string, options: SqliteStoreOptions = {}): Promise<Store> {
  let db: Kysely<StoreSchema> | undefined
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
    db = new Kysely<StoreSchema>({ dialect: new NativeSqliteDialect(database, stats, sync) })
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
  const synced = sync
  const transaction = groupCommit(db, (conn) => repositories(conn, caches, secrets), owner, synced)
  // A write atomic by itself (index.ts, Store; issue 38) runs its statements in a transaction of the store's
  // own when called on the root store: as it ran in the caller's before, group-committed.
  const root = repositories(db, caches, secrets, undefined, transaction)
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
