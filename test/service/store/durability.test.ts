import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Database from 'better-sqlite3'
import type { Store, StoreStats } from '../../../src/service/store/index.ts'
import { DATABASE_FILE, openSqliteStore } from '../../../src/service/store/sqlite.ts'
import { BACKSTOP_PAGES, Checkpointer } from '../../../src/service/store/sqlite-checkpoint.ts'

// The SQLite store's connection mechanics (src/service/store/sqlite-driver.ts): a write is acknowledged only
// once the WAL is synced, off the event loop, one sync covering many writes; and another process's write lock
// is waited for with timers, the event loop serving meanwhile (issue 20: "a waiting worker never blocks its
// event loop on SQLite's write lock").

const tenant = (id: string) => ({ id, source: 'portal' as const, createdAt: 1 })

/** Event-loop turns counted every `ms` while `work` runs: a blocked loop counts none. */
async function ticksDuring<T>(ms: number, work: () => Promise<T>): Promise<{ value: T; ticks: number }> {
  let ticks = 0
  const timer = setInterval(() => ticks++, ms)
  try {
    return { value: await work(), ticks }
  } finally {
    clearInterval(timer)
  }
}

describe('durable writes: the WAL synced before a write is acknowledged', () => {
  let dir: string
  let store: Store
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-harness-durable-'))
    store = await openSqliteStore(dir)
  })
  after(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('each acknowledged write was synced; concurrent writes share syncs', async () => {
    const before = store.stats.syncs
    await store.tenants.create(tenant('one'))
    assert.equal(store.stats.syncs - before, 1, 'an autocommit write is synced before it resolves')

    const start = store.stats.syncs
    const ids = Array.from({ length: 40 }, (_, i) => `many-${i}`)
    await Promise.all([
      ...ids.slice(0, 20).map((id) => store.transaction((repos) => repos.tenants.create(tenant(id)))),
      ...ids.slice(20).map((id) => store.tenants.create(tenant(id))),
    ])
    const syncs = store.stats.syncs - start
    assert.ok(syncs >= 1, 'the writes were synced')
    assert.ok(syncs < 40, `40 concurrent writes shared syncs (${syncs} syncs)`)
  })

  test('a read that follows an unsynced write answers only once that write is synced', async () => {
    const before = store.stats.syncs
    const write = store.tenants.create(tenant('seen'))
    // Issued in the same turn: runs after the INSERT on the one connection, so it can see the row.
    const read = store.tenants.get('seen')
    assert.equal((await read)?.id, 'seen')
    assert.ok(store.stats.syncs > before, 'the read resolved after the sync that covers the write it saw')
    await write
  })

  test('an in-memory store has nothing to sync', async () => {
    const memory = await openSqliteStore(':memory:')
    try {
      await memory.tenants.create(tenant('m'))
      await memory.transaction((repos) => repos.tenants.create(tenant('n')))
      assert.equal(memory.stats.syncs, 0)
    } finally {
      await memory.close()
    }
  })
})

describe("another process's write lock is waited for without blocking the event loop", () => {
  let dir: string
  let store: Store
  let other: Database.Database
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-harness-busy-'))
    store = await openSqliteStore(dir)
    // A second connection to the same file stands for another process (a cluster worker).
    other = new Database(join(dir, DATABASE_FILE))
  })
  after(async () => {
    other.close()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  for (const kind of ['a transaction (BEGIN IMMEDIATE)', 'an autocommit write'] as const) {
    test(`${kind} waits for the lock, then commits`, async () => {
      const id = kind.startsWith('a transaction') ? 'tx-waited' : 'autocommit-waited'
      other.exec('BEGIN IMMEDIATE')
      const release = setTimeout(() => other.exec('COMMIT'), 300)
      const waitsBefore = store.stats.busyWaits
      const { ticks } = await ticksDuring(10, () =>
        kind.startsWith('a transaction')
          ? store.transaction((repos) => repos.tenants.create(tenant(id)))
          : store.tenants.create(tenant(id)),
      )
      clearTimeout(release)
      assert.equal((await store.tenants.get(id))?.id, id, 'the write landed once the lock was free')
      assert.ok(store.stats.busyWaits > waitsBefore, 'it met SQLITE_BUSY and waited')
      // 300 ms at a 10 ms interval: ~30 turns when the loop is free, 0 when the driver sleeps in busy_timeout.
      assert.ok(ticks >= 15, `the event loop kept turning while it waited (${ticks} ticks in ~300 ms)`)
    })
  }

  test('reads are not held up by the lock (WAL readers do not wait for writers)', async () => {
    other.exec('BEGIN IMMEDIATE')
    try {
      const waitsBefore = store.stats.busyWaits
      assert.equal((await store.tenants.get('tx-waited'))?.id, 'tx-waited')
      assert.equal(store.stats.busyWaits, waitsBefore)
    } finally {
      other.exec('COMMIT')
    }
  })
})

describe('WAL checkpoints on a thread of their own (store/sqlite-checkpoint.ts)', () => {
  const size = (file: string) => statSync(file).size

  test('writes are copied into the database file by the worker, not by a COMMIT on the event loop', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-harness-checkpoint-'))
    let store = await openSqliteStore(dir)
    try {
      const file = join(dir, DATABASE_FILE)
      // What was copied so far (the schema may still be in the log, under the backstop).
      const before = size(file)
      const checkpointsBefore = store.stats.checkpoints ?? 0
      // ~2000 pages of rows: far below the backstop (BACKSTOP_PAGES), so SQLite never checkpoints by itself.
      for (let batch = 0; batch < 20; batch++) {
        await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            store.transaction((repos) =>
              repos.tenants.create({ ...tenant(`c${batch}-${i}-${'x'.repeat(3000)}`), createdAt: batch }),
            ),
          ),
        )
      }
      assert.ok(2000 < BACKSTOP_PAGES)
      for (let waited = 0; size(file) <= before && waited < 3000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      assert.ok(size(file) > before + 1_000_000, `the database file grew: ${before} → ${size(file)} bytes`)
      assert.ok((store.stats.checkpoints ?? 0) > checkpointsBefore, 'the worker ran checkpoints')
      await store.close()
      store = await openSqliteStore(dir)
      assert.equal((await store.tenants.get(`c19-49-${'x'.repeat(3000)}`))?.createdAt, 19)
    } finally {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a worker that cannot open the database is reported once, and closing still resolves', async () => {
    const failures: Error[] = []
    const stats: StoreStats = { statements: 0, syncs: 0, busyWaits: 0 }
    const checkpointer = new Checkpointer(join(tmpdir(), 'no-such-dir', 'vc.db'), stats, (e) =>
      failures.push(e),
    )
    checkpointer.poke()
    await checkpointer.next()
    assert.equal(failures.length, 1, 'reported once')
    assert.match(String(failures[0]?.message), /./)
    assert.equal(stats.checkpoints, undefined, 'no checkpoint counted')
    await checkpointer.close()
  })
})
