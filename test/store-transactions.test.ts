import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Store } from '../src/service/store/index.ts'
import { openSqliteStore } from '../src/service/store/sqlite.ts'

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
