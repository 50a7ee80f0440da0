import type Database from 'better-sqlite3'
import { pendingReseals, type Row, type SecretsDb, type StoreSecrets } from './secrets.ts'

// The secret columns (secrets.ts) re-sealed on SQLite when the store opens.

/** better-sqlite3's synchronous statements as a SecretsDb. */
const onNative = (database: Database.Database): SecretsDb => ({
  all: async (sql, parameters) => database.prepare(sql).all(...parameters) as Row[],
  run: async (sql, parameters) => {
    database.prepare(sql).run(...parameters)
  },
})

/**
 * Seals every secret under the current data key: clear values of a database written before encryption at
 * rest, and values sealed under an older key of a rotation. One transaction, so a failure (a value sealed
 * under a key not given: DataKeyError naming its id) changes nothing. Returns how many values it re-sealed.
 * The common case, nothing pending, only reads: cluster workers opening together do not contend.
 */
export async function resealSecrets(database: Database.Database, secrets: StoreSecrets): Promise<number> {
  if ((await pendingReseals(onNative(database), secrets)).length === 0) return 0
  // secure_delete: the bytes a clear value (or an old key's ciphertext) leaves behind in its page are zeroed,
  // not left in the file's free space. Only for this transaction: it costs I/O on every other delete.
  const secureDelete = database.pragma('secure_delete', { simple: true })
  database.pragma('secure_delete = ON')
  let work: (() => Promise<void>)[] = []
  try {
    // BEGIN IMMEDIATE: the write lock first, then the list again (another process may have re-sealed meanwhile).
    database.exec('BEGIN IMMEDIATE')
    try {
      work = await pendingReseals(onNative(database), secrets)
      for (const reseal of work) await reseal()
      database.exec('COMMIT')
    } catch (error) {
      database.exec('ROLLBACK')
      throw error
    }
  } finally {
    database.pragma(`secure_delete = ${Number(secureDelete)}`)
  }
  // The WAL still holds the pages as they were (this connection's close does not checkpoint it): copy the
  // new pages into the database and empty the WAL, so no old copy of a value stays in either file. Best
  // effort: a reader of another process may keep part of the WAL until the next checkpoint.
  database.pragma('wal_checkpoint(TRUNCATE)')
  return work.length
}
