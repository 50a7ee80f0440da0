import type { Kysely } from 'kysely'
import type { Repositories } from './index.ts'
import { CompiledQuery } from './kysely.ts'
import type { WalSync } from './sqlite-driver.ts'
import { inTransactionScope } from './transaction-guard.ts'

// Transactions grouped into one commit, nobody told of success before it is durable (the guard that refuses
// root-store calls from inside a transaction is transaction-guard.ts, shared with PostgreSQL). The connection
// beneath (statement cache, WAL sync, SQLITE_BUSY) is sqlite-driver.ts; the repositories (repositories.ts
// and the modules it assembles) know nothing of either.

/** Transactions committed together at most: bounds how long one batch holds the connection. */
const MAX_BATCH = 64

interface Queued {
  work: (repos: Repositories) => Promise<unknown>
  resolve(value: unknown): void
  reject(error: unknown): void
}

/** The batch's own statements, compiled once (each `sql` template would be compiled per execution). */
const BEGIN = CompiledQuery.raw('begin immediate')
const SAVEPOINT = CompiledQuery.raw('savepoint tx')
const ROLLBACK_TO = CompiledQuery.raw('rollback to tx')
const COMMIT = CompiledQuery.raw('commit')
const ROLLBACK = CompiledQuery.raw('rollback')

/**
 * Write transactions with group commit. The driver is synchronous, so every COMMIT's fsync
 * (synchronous=FULL) blocks the event loop; under load that, not CPU, capped the service. Transactions
 * asked for in the same turn of the event loop are run one after the other inside one
 * `BEGIN IMMEDIATE … COMMIT`: one fsync for the batch. Nobody hears of success before the COMMIT is
 * durable; if it fails, every transaction of the batch fails.
 *
 * A batch runs first without savepoints: transactions almost never fail, and a savepoint each cost two
 * statements per flow out of ~30 (issue 20). If one fails, the whole batch is rolled back and run again with
 * a savepoint per transaction, so the failing one rolls back alone and the others commit, as if each had
 * been a transaction of its own. A transaction callback may therefore run twice; callbacks only touch the
 * database and compute (side effects wait for the promise: events, answers), and the outbox's in-memory
 * handoff already expects writes that roll back (webhooks/dispatcher.ts). The second run is linear: at most
 * every transaction of the batch twice, however many fail.
 *
 * BEGIN IMMEDIATE (Kysely's `begin` is DEFERRED) takes the write lock up front: a deferred transaction
 * that reads and then writes cannot wait for the lock when another process (a cluster worker) committed
 * in between; its upgrade would fail at once with SQLITE_BUSY. BEGIN IMMEDIATE meeting another process's
 * lock is waited for with timers by the driver (sqlite-driver.ts), the event loop free meanwhile.
 */
export function groupCommit<S>(
  db: Kysely<S>,
  repositoriesOf: (conn: Kysely<S>) => Repositories,
  owner: object,
  sync: WalSync,
) {
  let queue: Queued[] = []
  let scheduled = false

  const run = (item: Queued, conn: Kysely<S>) =>
    inTransactionScope(owner, () => item.work(repositoriesOf(conn)))

  /**
   * One BEGIN IMMEDIATE … COMMIT over the batch: each transaction's outcome, or undefined when, without
   * savepoints, one failed and the whole batch was rolled back. With savepoints a failing transaction rolls
   * back alone. No RELEASE: a savepoint left open costs nothing, `rollback to tx` undoes the newest one named
   * tx (this transaction's; the earlier ones stay), and COMMIT ends them all with the batch.
   */
  async function attempt(batch: Queued[], savepoints: boolean) {
    const outcomes: { ok: boolean; value: unknown }[] = []
    // connection() holds the one connection (Kysely's mutex) for the whole batch.
    const committed = await db.connection().execute(async (conn) => {
      await conn.executeQuery(BEGIN)
      try {
        for (const item of batch) {
          if (savepoints) await conn.executeQuery(SAVEPOINT)
          try {
            outcomes.push({ ok: true, value: await run(item, conn) })
          } catch (error) {
            if (!savepoints) {
              await conn.executeQuery(ROLLBACK)
              // Alone in its batch, the failure is the outcome; among others, the batch runs again.
              if (batch.length === 1) outcomes.push({ ok: false, value: error })
              return batch.length === 1
            }
            await conn.executeQuery(ROLLBACK_TO)
            outcomes.push({ ok: false, value: error })
          }
        }
        await conn.executeQuery(COMMIT)
        return true
      } catch (error) {
        // A failed COMMIT (e.g. SQLITE_BUSY) leaves the transaction open: end it before the connection is reused.
        await conn.executeQuery(ROLLBACK).catch(() => {})
        throw error
      }
    })
    return committed ? outcomes : undefined
  }

  async function runBatch(batch: Queued[]) {
    let outcomes: { ok: boolean; value: unknown }[]
    try {
      outcomes = (await attempt(batch, false)) ?? ((await attempt(batch, true)) as typeof outcomes)
      // Off the connection, so the next batch runs while the WAL is synced (one sync may cover both).
      await sync.settle()
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
