import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { type Store, TransactionMisuseError } from '../../../src/service/store/index.ts'
import { openSqliteStore } from '../../../src/service/store/sqlite.ts'
import { TRANSACTION_GUARD } from '../../../src/service/store/transaction-guard.ts'
import { ManualClock } from '../../../src/service/util/clock.ts'
import { STORE_KINDS, type TestDatabase } from '../../fixtures/stores.ts'

const COMMIT_MODULE = new URL('../../../src/service/store/transaction-guard.ts', import.meta.url).href

// Group commit (src/service/store/sqlite.ts): transactions asked for in one turn of the event loop share
// one BEGIN IMMEDIATE … COMMIT; when one fails, the batch runs again with a savepoint each. What must hold:
// a failing transaction rolls back alone, the others of its batch commit, results reach each caller, and
// everything is on disk.

const tenant = (id: string) => ({ id, source: 'portal' as const, createdAt: 1 })

// The same semantics on both stores (issue 21). On PostgreSQL there is no group commit: each transaction is
// a PostgreSQL transaction of its own, on a connection of the pool.
for (const kind of STORE_KINDS) {
  const how =
    kind.name === 'SQLite' ? 'with group commit (durable file database)' : 'one database transaction each'
  describe(`write transactions ${how} (${kind.name})`, { skip: kind.skip }, () => {
    const databases = kind.use()
    let db: TestDatabase
    let store: Store
    before(async () => {
      db = await databases.fresh('store transactions')
      store = await db.open()
    })
    after(() => store?.close())

    test(`a failing transaction ${kind.name === 'SQLite' ? 'in a batch ' : ''}rolls back alone; the others commit and return their values (${kind.name})`, async () => {
      const results = await Promise.allSettled([
        store.transaction(async (repos) => {
          await repos.tenants.create(tenant('a'))
          return 'a done'
        }),
        store.transaction(async (repos) => {
          await repos.tenants.create(tenant('b'))
          throw new Error('b changed its mind')
        }),
        store.transaction(async (repos) => {
          await repos.tenants.create(tenant('c'))
          // SQLite: sees its own batch's earlier, committed-to-be write. PostgreSQL (READ COMMITTED): whether
          // a's transaction, on another connection, has committed yet is a race; its own write it sees.
          return (await repos.tenants.get(kind.name === 'SQLite' ? 'a' : 'c'))?.id
        }),
      ])
      assert.deepEqual(
        results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
        ['a done', 'b changed its mind', kind.name === 'SQLite' ? 'a' : 'c'],
      )
      assert.equal((await store.tenants.get('a'))?.id, 'a')
      assert.equal(await store.tenants.get('b'), undefined, 'the failed transaction left nothing behind')
      assert.equal((await store.tenants.get('c'))?.id, 'c')
    })

    test(`a constraint error fails only its own transaction, as a ConflictError (${kind.name})`, async () => {
      await store.transaction((repos) => repos.tenants.create(tenant('dup')))
      const [first, second] = await Promise.allSettled([
        store.transaction((repos) => repos.tenants.create(tenant('dup'))),
        store.transaction((repos) => repos.tenants.create(tenant('fresh'))),
      ])
      assert.equal(first?.status, 'rejected')
      assert.equal((first as PromiseRejectedResult).reason.name, 'ConflictError')
      assert.equal(second?.status, 'fulfilled')
      assert.equal((await store.tenants.get('fresh'))?.id, 'fresh')
    })

    test(`many concurrent transactions all land, and survive reopening the database (${kind.name})`, async () => {
      const ids = Array.from({ length: 150 }, (_, i) => `t${i}`)
      await Promise.all(ids.map((id) => store.transaction((repos) => repos.tenants.create(tenant(id)))))
      await store.close()
      store = await db.open()
      for (const id of ids) assert.equal((await store.tenants.get(id))?.id, id)
    })
  })
}

describe('batches of one and of several (statements counted by store.stats)', () => {
  let store: Store
  before(async () => {
    store = await openSqliteStore(':memory:')
  })
  after(() => store.close())

  /** Statements the store ran while `work` ran. */
  async function statementsOf(work: () => Promise<unknown>): Promise<number> {
    const before = store.stats.statements
    await work()
    return store.stats.statements - before
  }

  test('a transaction alone in its batch runs without a savepoint: BEGIN, its statement, COMMIT', async () => {
    const n = await statementsOf(() => store.transaction((repos) => repos.tenants.create(tenant('one'))))
    assert.equal(n, 3)
    assert.equal((await store.tenants.get('one'))?.id, 'one')
  })

  test('a transaction alone in its batch that fails rolls back whole', async () => {
    const n = await statementsOf(async () => {
      await assert.rejects(
        store.transaction(async (repos) => {
          await repos.tenants.create(tenant('lonely'))
          throw new Error('changed its mind')
        }),
        /changed its mind/,
      )
    })
    assert.equal(n, 3, 'BEGIN, INSERT, ROLLBACK')
    assert.equal(await store.tenants.get('lonely'), undefined)
  })

  test('transactions of one batch that all succeed share BEGIN and COMMIT, with no savepoint', async () => {
    let values: string[] = []
    const n = await statementsOf(async () => {
      values = await Promise.all(
        ['shared-a', 'shared-b', 'shared-c'].map((id) =>
          store.transaction(async (repos) => {
            await repos.tenants.create(tenant(id))
            return id
          }),
        ),
      )
    })
    assert.deepEqual(values, ['shared-a', 'shared-b', 'shared-c'])
    assert.equal(n, 5, 'BEGIN, three INSERTs, COMMIT')
    for (const id of values) assert.equal((await store.tenants.get(id))?.id, id)
  })

  test('a failure in a batch runs the batch again with a savepoint each, and the failing one rolls back alone', async () => {
    let results: PromiseSettledResult<string>[] = []
    const runs = { kept: 0, dropped: 0, after: 0 }
    const n = await statementsOf(async () => {
      results = await Promise.allSettled([
        store.transaction(async (repos) => {
          runs.kept++
          await repos.tenants.create(tenant('kept'))
          return `kept, run ${runs.kept}`
        }),
        store.transaction(async (repos) => {
          runs.dropped++
          await repos.tenants.create(tenant('dropped'))
          throw new Error(`no, run ${runs.dropped}`)
        }),
        store.transaction(async (repos) => {
          runs.after++
          // Sees the batch's earlier, committed-to-be write, whichever run this is.
          return `after sees ${(await repos.tenants.get('kept'))?.id}, run ${runs.after}`
        }),
      ])
    })
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['kept, run 2', 'no, run 2', 'after sees kept, run 1'],
      'each caller gets the outcome of the run that counted; the one after the failure ran once',
    )
    // BEGIN, INSERT, INSERT, ROLLBACK; then BEGIN; SAVEPOINT, INSERT; SAVEPOINT, INSERT, ROLLBACK TO;
    // SAVEPOINT, SELECT; COMMIT. No RELEASE: COMMIT ends them all.
    assert.equal(n, 4 + 9)
    assert.equal((await store.tenants.get('kept'))?.id, 'kept')
    assert.equal(await store.tenants.get('dropped'), undefined)
  })

  test('savepoints left open: a rollback undoes only its own transaction, not the earlier ones of its batch', async () => {
    // Every savepoint is named tx; ROLLBACK TO names the newest, which is the failing transaction's own.
    const names = ['sp-a', 'sp-b', 'sp-c', 'sp-d', 'sp-e']
    const results = await Promise.allSettled(
      names.map((id, i) =>
        store.transaction(async (repos) => {
          await repos.tenants.create(tenant(id))
          if (i % 2 === 1) throw new Error(`${id} fails`)
          return id
        }),
      ),
    )
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['sp-a', 'sp-b fails', 'sp-c', 'sp-d fails', 'sp-e'],
    )
    const kept = await Promise.all(names.map(async (id) => (await store.tenants.get(id))?.id ?? null))
    assert.deepEqual(kept, ['sp-a', null, 'sp-c', null, 'sp-e'])
  })
})

describe('calling the store from inside its own transaction callback', () => {
  test('the guard is on here (the tests) and off under NODE_ENV=production only', () => {
    assert.equal(TRANSACTION_GUARD, true, 'the tests run with the development check')
    const probe = (env: string | undefined) =>
      execFileSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          `import { TRANSACTION_GUARD } from '${COMMIT_MODULE}'; console.log(TRANSACTION_GUARD)`,
        ],
        { env: { ...process.env, NODE_ENV: env }, encoding: 'utf8' },
      ).trim()
    assert.equal(probe('production'), 'false')
    assert.equal(probe('development'), 'true')
    assert.equal(probe(''), 'true')
  })

  let store: Store
  before(async () => {
    store = await openSqliteStore(':memory:')
  })
  after(() => store.close())

  // The timeout only turns a regression (the old deadlock) into a failure instead of a hung run.
  test('a root repository call rejects at once, naming the misuse', { timeout: 10_000 }, async () => {
    await assert.rejects(
      store.transaction(async (repos) => {
        await repos.tenants.create(tenant('inner'))
        await store.tenants.get('inner')
      }),
      (error: Error) =>
        error instanceof TransactionMisuseError &&
        /store\.tenants\.get\(\) was called inside a store\.transaction\(\) callback/.test(error.message),
    )
    assert.equal(await store.tenants.get('inner'), undefined, 'the transaction rolled back')
  })

  test('a nested store.transaction rejects at once', { timeout: 10_000 }, async () => {
    await assert.rejects(
      store.transaction(() => store.transaction(async () => 'never')),
      (error: Error) =>
        error instanceof TransactionMisuseError && /store\.transaction\(\)/.test(error.message),
    )
  })

  test('the store works again after the callback, also from work the callback only scheduled', async () => {
    let later: Promise<unknown> | undefined
    await store.transaction(async (repos) => {
      await repos.tenants.create(tenant('scheduled'))
      // Inherits the callback's async context but runs after it settled: not a misuse.
      later = new Promise((resolve) => setTimeout(resolve, 0)).then(() => store.tenants.get('scheduled'))
    })
    assert.equal(((await later) as { id: string } | undefined)?.id, 'scheduled')
  })

  test("another store's root may be called from inside this store's callback", async () => {
    const other = await openSqliteStore(':memory:')
    try {
      const found = await store.transaction(() => other.tenants.get('nobody'))
      assert.equal(found, undefined)
    } finally {
      await other.close()
    }
  })
})

describe('template cache on the injected clock', () => {
  test('a template read is served from the cache for 1 s of clock time, then read again', async () => {
    const clock = new ManualClock(1_000_000)
    const store = await openSqliteStore(':memory:', { clock })
    try {
      await store.tenants.create(tenant('t'))
      await store.templates.create({
        tenantId: 't',
        id: 'tpl',
        kind: 'issuance',
        body: {},
        source: 'portal',
        createdAt: 1,
        updatedAt: 1,
      } as unknown as Parameters<Store['templates']['create']>[0])
      const reads = async () => {
        const before = store.stats.statements
        assert.equal((await store.templates.find('t', 'tpl'))?.id, 'tpl')
        return store.stats.statements - before
      }
      assert.equal(await reads(), 1, 'first read goes to the database')
      clock.advance(999)
      assert.equal(await reads(), 0, 'cached until 1 s has passed')
      clock.advance(1)
      assert.equal(await reads(), 1, 'expired at 1 s')
      assert.equal(await reads(), 0)
      clock.advance(-5_000)
      assert.equal(await reads(), 1, 'a clock moved back does not keep an entry alive longer')
    } finally {
      await store.close()
    }
  })
})
