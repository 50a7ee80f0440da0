import type { Kysely } from 'kysely'
import type { Repositories } from './index.ts'
import { CompiledQuery } from './kysely.ts'
import { inTransactionScope } from './transaction-guard.ts'

// Transactions of one turn of the event loop in one PostgreSQL transaction (issue 38), as sqlite-commit.ts
// groups SQLite's: on PostgreSQL every statement is a round trip, and BEGIN and COMMIT were two of them per
// transaction, 8 of a complete flow's ~45. Nobody hears of success before the shared COMMIT has returned
// (PostgreSQL's commit is durable when it answers: synchronous_commit as the server has it).

/** Transactions committed together at most: bounds how long one batch holds its connection and its locks. */
const MAX_BATCH = 32

interface Queued {
  work: (repos: Repositories) => Promise<unknown>
  resolve(value: unknown): void
  reject(error: unknown): void
}

const BEGIN = CompiledQuery.raw('begin')
const COMMIT = CompiledQuery.raw('commit')
const ROLLBACK = CompiledQuery.raw('rollback')

/**
 * Write transactions with group commit on PostgreSQL. Transactions asked for in the same turn run one after
 * the other on one connection inside one `BEGIN … COMMIT`; each sees the ones before it, as it would had they
 * committed first (READ COMMITTED). A transaction alone in its turn is an ordinary transaction.
 *
 * If any transaction of a batch fails (its callback throws, a statement fails, a deadlock with another
 * instance's batch is broken, the COMMIT fails), the whole batch is rolled back and every transaction of it
 * runs again as a transaction of its own, concurrently on the pool: exactly what each was before issue 38,
 * so a failure means what it always meant and touches no other request. A transaction callback may therefore
 * run twice; callbacks only touch the database and compute (sqlite-commit.ts states the same rule). A lost
 * connection during the COMMIT leaves the outcome unknown: every transaction of the batch fails with it, as
 * a lone transaction would.
 *
 * Locks are held until the batch commits: a row another instance's batch holds is waited for, as before. Two
 * batches waiting on each other are a deadlock PostgreSQL breaks by failing one statement; that batch then
 * runs its transactions one by one.
 */
export function postgresGroupCommit<S>(
  db: Kysely<S>,
  repositoriesOf: (conn: Kysely<S>) => Repositories,
  owner: object,
) {
  let queue: Queued[] = []
  let scheduled = false
  /** Batches and lone transactions under way: the store's close waits for them before its pool ends. */
  const running = new Set<Promise<unknown>>()
  const track = (work: Promise<unknown>) => {
    running.add(work)
    void work.finally(() => running.delete(work))
  }

  const run = (item: Queued, conn: Kysely<S>) =>
    inTransactionScope(owner, () => item.work(repositoriesOf(conn)))

  /** One transaction of its own: Kysely's BEGIN … COMMIT, ROLLBACK when the callback throws. */
  const alone = (item: Queued) =>
    track(
      db
        .transaction()
        .execute((trx) => run(item, trx as unknown as Kysely<S>))
        .then(item.resolve, item.reject),
    )

  /** The batch's values, or undefined when one failed and the batch was rolled back (nothing committed). */
  async function together(batch: Queued[]): Promise<unknown[] | undefined> {
    return db.connection().execute(async (conn) => {
      await conn.executeQuery(BEGIN)
      const values: unknown[] = []
      try {
        for (const item of batch) values.push(await run(item, conn))
      } catch {
        await conn.executeQuery(ROLLBACK)
        return undefined
      }
      try {
        await conn.executeQuery(COMMIT)
      } catch (error) {
        // A COMMIT that answered with an error rolled the transaction back; a connection lost meanwhile did
        // too (PostgreSQL ends a session's open transaction), but whether its COMMIT was applied is unknown.
        if (isConnectionLoss(error)) throw error
        return undefined
      }
      return values
    })
  }

  async function runBatch(batch: Queued[]) {
    let values: unknown[] | undefined
    try {
      values = await together(batch)
    } catch (error) {
      for (const item of batch) item.reject(error)
      return
    }
    if (!values) for (const item of batch) alone(item)
    else
      batch.forEach((item, i) => {
        item.resolve(values[i])
      })
  }

  function flush() {
    scheduled = false
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH)
      queue = queue.slice(MAX_BATCH)
      if (batch.length === 1) alone(batch[0] as Queued)
      else track(runBatch(batch))
    }
  }

  const transaction = <T>(work: (repos: Repositories) => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (value: unknown) => void, reject })
      if (!scheduled) {
        scheduled = true
        // After the I/O phase: every request that arrived in this turn joins the batch.
        setImmediate(flush)
      }
    })
  /** Resolves once no transaction is queued or under way (the store's close, before its pool ends). */
  const settle = async () => {
    if (scheduled) flush()
    while (running.size > 0) await Promise.allSettled([...running])
  }
  return { transaction, settle }
}

/** An error of the connection rather than of a statement: pg's errors from the server carry a SQLSTATE code. */
function isConnectionLoss(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08')
}
