import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Store, TransactionMisuseError } from '../src/service/store/index.ts'
import { openSqliteStore } from '../src/service/store/sqlite.ts'
import { ManualClock } from '../src/service/util/clock.ts'

// Group commit (src/service/store/sqlite.ts): transactions asked for in one turn of the event loop share
// one BEGIN IMMEDIATE … COMMIT, each in its own savepoint. What must hold: a failing transaction rolls
// back alone, the others of its batch commit, results reach each caller, and everything is on disk.

const tenant = (id: string) => ({ id, source: 'portal' as const, createdAt: 1 })

describe('write transactions with group commit (durable file database)', () => {
  let dir: string
  let store: Store
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-harness-store-'))
    store = await openSqliteStore(dir)
  })
  after(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('a failing transaction in a batch rolls back alone; the others commit and return their values', async () => {
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
        // Sees its own batch's earlier, committed-to-be write.
        return (await repos.tenants.get('a'))?.id
      }),
    ])
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['a done', 'b changed its mind', 'a'],
    )
    assert.equal((await store.tenants.get('a'))?.id, 'a')
    assert.equal(await store.tenants.get('b'), undefined, 'the failed transaction left nothing behind')
    assert.equal((await store.tenants.get('c'))?.id, 'c')
  })

  test('a constraint error fails only its own transaction', async () => {
    await store.transaction((repos) => repos.tenants.create(tenant('dup')))
    const [first, second] = await Promise.allSettled([
      store.transaction((repos) => repos.tenants.create(tenant('dup'))),
      store.transaction((repos) => repos.tenants.create(tenant('fresh'))),
    ])
    assert.equal(first?.status, 'rejected')
    assert.equal(second?.status, 'fulfilled')
    assert.equal((await store.tenants.get('fresh'))?.id, 'fresh')
  })

  test('many concurrent transactions all land, and survive reopening the file', async () => {
    const ids = Array.from({ length: 150 }, (_, i) => `t${i}`)
    await Promise.all(ids.map((id) => store.transaction((repos) => repos.tenants.create(tenant(id)))))
    await store.close()
    store = await openSqliteStore(dir)
    for (const id of ids) assert.equal((await store.tenants.get(id))?.id, id)
  })
})

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

  test('two transactions in one batch each get a savepoint, and the failing one rolls back alone', async () => {
    let results: PromiseSettledResult<void>[] = []
    const n = await statementsOf(async () => {
      results = await Promise.allSettled([
        store.transaction((repos) => repos.tenants.create(tenant('kept'))),
        store.transaction(async (repos) => {
          await repos.tenants.create(tenant('dropped'))
          throw new Error('no')
        }),
      ])
    })
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected'],
    )
    // BEGIN; SAVEPOINT, INSERT, RELEASE; SAVEPOINT, INSERT, ROLLBACK TO, RELEASE; COMMIT.
    assert.equal(n, 9)
    assert.equal((await store.tenants.get('kept'))?.id, 'kept')
    assert.equal(await store.tenants.get('dropped'), undefined)
  })
})

describe('calling the store from inside its own transaction callback', () => {
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
