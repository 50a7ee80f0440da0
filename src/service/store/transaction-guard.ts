import { AsyncLocalStorage } from 'node:async_hooks'
import type { Repositories } from './index.ts'
import { TransactionMisuseError } from './index.ts'

// The guard that refuses root-store calls from inside one of the store's own transaction callbacks, on
// either database (sqlite.ts, postgres.ts).

/** What a root call waits for before it answers: SQLite's WAL sync (sqlite-driver.ts WalSync). */
export interface PendingSync {
  readonly pending: boolean
  settle(): Promise<void>
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
 * The guard is a development check, on unless NODE_ENV=production: AsyncLocalStorage makes Node 20 run a
 * hook for every promise of the process, which cost 4–8 % of a full flow's throughput (issue 20, measured
 * by `vc-harness bench`). The tests run with it on, so a misuse fails there instead of deadlocking later.
 */
export const TRANSACTION_GUARD = process.env.NODE_ENV !== 'production'

/** Runs a transaction callback of `owner`'s store; the root store refuses calls made from inside it. */
export async function inTransactionScope<T>(owner: object, work: () => Promise<T>): Promise<T> {
  if (!TRANSACTION_GUARD) return work()
  const scope: TransactionScope = { owner, active: true }
  try {
    return await insideTransaction.run(scope, work)
  } finally {
    scope.active = false
  }
}

/**
 * Runs `work` as if outside any transaction callback: for scheduling, from inside one, work that uses the
 * root store once it runs (a timer created in `work` does not inherit the callback's scope).
 */
export function outsideTransaction<T>(work: () => T): T {
  return insideTransaction.exit(work)
}

/**
 * The root store's repositories and `transaction`, refusing calls from inside one of this store's own
 * transaction callbacks: the batch holds the only connection, so such a call would wait forever. A call
 * answers only once every write made so far is on disk (`sync`, SQLite's; a PostgreSQL commit is durable
 * when it returns): its own (an autocommit write) and any another request made that it may have read.
 */
function guardRoot<T extends object>(target: T, owner: object, name: string, sync?: PendingSync): T {
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
        if (misuse) return Promise.reject(misuse)
        const answer = value.apply(object, args) as Promise<unknown>
        return answer.then((result) => (sync?.pending ? sync.settle().then(() => result) : result))
      }
    },
  })
}

/** A store's root repositories and `transaction`, each guarded by guardRoot (either database). */
export function guardStore(
  root: Repositories,
  transaction: <T>(work: (repos: Repositories) => Promise<T>) => Promise<T>,
  owner: object,
  sync?: PendingSync,
): Repositories & { transaction: typeof transaction } {
  const guarded = Object.fromEntries(
    Object.entries(root).map(([name, repo]) => [name, guardRoot(repo, owner, name, sync)]),
  ) as unknown as Repositories
  return { ...guarded, ...guardRoot({ transaction }, owner, '', sync) }
}
