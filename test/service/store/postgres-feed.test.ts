import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import {
  postgresSkipReason,
  startPostgres,
  type TestPostgres,
} from '../../../src/harness/postgres-cluster.ts'
import { DataKeyring } from '../../../src/service/crypto/data-key.ts'
import type { Store } from '../../../src/service/store/index.ts'
import { openPostgresStore } from '../../../src/service/store/postgres.ts'
import {
  FEED_APPLICATION,
  FEED_CHANNEL,
  type PostgresFeed,
} from '../../../src/service/store/postgres-feed.ts'

// Issue 38: the instances of a shared deployment know each other (store/postgres-feed.ts). What must hold:
// an instance alone on its database sends no event (no statement at all), starts sending them as soon as
// another has said hello, and stops once the other said goodbye; a cached API key is forgotten by every
// instance before the change that made it stale answers; an instance that cannot be sure who listens (a
// listener that never answers) sends every event and caches nothing. Each on a real PostgreSQL cluster.

const skip = postgresSkipReason()
const dataKeys = DataKeyring.generate('feed tests')

describe('the change feed: who listens, and the caches it keeps coherent (PostgreSQL)', { skip }, () => {
  let cluster: TestPostgres
  const open: Store[] = []
  const openStore = async (url: string) => {
    const store = await openPostgresStore(url, { dataKeys })
    open.push(store)
    return store
  }
  const feedOf = (store: Store) => store.feed as unknown as PostgresFeed
  before(async () => {
    cluster = await startPostgres()
  })
  after(async () => {
    for (const store of open) await store.close().catch(() => {})
    cluster?.stop()
  })

  /** Statements `work` made the store run (its feed's included). */
  async function counted(store: Store, work: () => Promise<unknown>) {
    const before = store.stats.statements
    await work()
    return store.stats.statements - before
  }

  const event = (n: number) => ({ kind: 'verification', sessionId: `s${n}`, step: 'session_created' })

  test('alone: no statement per event; with a second instance: each event reaches it; after its goodbye: none again', async () => {
    const url = cluster.database('feed_peers')
    const a = await openStore(url)
    assert.equal(feedOf(a).coherent, true, 'alone and sure of it')
    assert.equal(await counted(a, () => feedOf(a).publishEvent(event(1))), 0)

    const b = await openStore(url)
    assert.equal(feedOf(b).coherent, true, 'b heard a answer its hello')
    const heard: unknown[] = []
    feedOf(b).onEvent((e) => heard.push(e))
    // a knows b from b's hello (answered before b's handshake ended): the event goes out, one statement.
    assert.equal(await counted(a, () => feedOf(a).publishEvent(event(2))), 1)
    await until(() => heard.length === 1)
    assert.deepEqual(heard, [event(2)])

    await b.close()
    await until(async () => (await counted(a, () => feedOf(a).publishEvent(event(3)))) === 0)
    assert.deepEqual(heard, [event(2)], 'nothing more reached the closed instance')
  })

  test('a revocation answers only after the other instance forgot its cached key; that instance then reads it anew', async () => {
    const url = cluster.database('feed_keys')
    const a = await openStore(url)
    const b = await openStore(url)
    const now = Date.now()
    await a.tenants.upsert({ id: 't', source: 'portal', createdAt: now })
    await a.apiKeys.create({
      id: 'k1',
      tenantId: 't',
      role: 'app',
      templateId: null,
      secretHash: 'x',
      label: 'k1',
      source: 'portal',
      createdAt: now,
      revokedAt: null,
    })
    // b reads the key once: afterwards it answers from its cache, with no statement.
    assert.equal((await b.apiKeys.get('k1'))?.revokedAt, null)
    assert.equal(await counted(b, () => b.apiKeys.get('k1')), 0, 'cached')

    assert.equal(await a.apiKeys.revoke('t', 'k1', now + 1), true)
    // The revocation has answered: b's copy is gone, its next read is a statement and sees the revocation.
    let key: Awaited<ReturnType<Store['apiKeys']['get']>>
    assert.equal(
      await counted(b, async () => {
        key = await b.apiKeys.get('k1')
      }),
      1,
    )
    assert.equal(key?.revokedAt, now + 1)
  })

  test('a status change answers only after the other instance forgot the list version it cached', async () => {
    const url = cluster.database('feed_status')
    const a = await openStore(url)
    const b = await openStore(url)
    const now = Date.now()
    await a.tenants.upsert({ id: 't', source: 'portal', createdAt: now })
    const list = {
      id: 'l1',
      tenantId: 't',
      alg: 'ES256' as const,
      size: 16,
      bits: new Uint8Array(2),
      used: 0,
      version: 1,
      createdAt: now,
      updatedAt: now,
    }
    await a.transaction((repos) => repos.statusLists.create(list))
    assert.deepEqual(await b.statusLists.version('l1'), { tenantId: 't', version: 1 })
    assert.equal(await counted(b, () => b.statusLists.version('l1')), 0, 'cached')
    // A status change is written inside a transaction: it answers once b has forgotten version 1.
    await a.transaction((repos) => repos.statusLists.save({ ...list, version: 2, updatedAt: now + 1 }))
    assert.deepEqual(await b.statusLists.version('l1'), { tenantId: 't', version: 2 })
  })

  test('the root store’s pipelined connections, cut by the server, fail what was on them and reconnect', async () => {
    const url = cluster.database('pipeline_lost')
    const d = await openStore(url)
    await d.tenants.upsert({ id: 't', source: 'portal', createdAt: Date.now() })
    assert.equal((await d.tenants.get('t'))?.id, 't')
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    try {
      // Every session of the store but the feed's: the pipelined connections (and the pool's, if any).
      const { rows } = await admin.query(
        'select pg_terminate_backend(pid) as cut from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and application_name <> $1',
        [FEED_APPLICATION],
      )
      assert.ok(rows.length >= 1, 'a store connection was cut')
    } finally {
      await admin.end()
    }
    // A statement on a cut connection fails as a pool's would (no uncaught error); the next ones reconnect.
    const outcomes: string[] = []
    for (let i = 0; i < 4; i++) {
      outcomes.push(
        await d.tenants.get('t').then(
          (t) => t?.id ?? 'none',
          (error: Error) => `error: ${error.message}`,
        ),
      )
    }
    assert.deepEqual(outcomes.slice(-2), ['t', 't'], outcomes.join('; '))
    for (const outcome of outcomes.filter((o) => o.startsWith('error')))
      assert.match(outcome, /terminat|connection|Connection/)
  })

  test('a listener that never answers: the next instance is not coherent, sends every event and caches no key', async () => {
    const url = cluster.database('feed_silent')
    const silent = new pg.Client({ connectionString: url, application_name: FEED_APPLICATION })
    await silent.connect()
    try {
      await silent.query(`LISTEN ${FEED_CHANNEL}`)
      const c = await openStore(url)
      assert.equal(feedOf(c).coherent, false)
      assert.equal(await counted(c, () => feedOf(c).publishEvent(event(4))), 1, 'sent: someone may listen')
      const now = Date.now()
      await c.tenants.upsert({ id: 't', source: 'portal', createdAt: now })
      await c.apiKeys.create({
        id: 'k2',
        tenantId: 't',
        role: 'app',
        templateId: null,
        secretHash: 'x',
        label: 'k2',
        source: 'portal',
        createdAt: now,
        revokedAt: null,
      })
      await c.apiKeys.get('k2')
      assert.equal(await counted(c, () => c.apiKeys.get('k2')), 1, 'read every time')
    } finally {
      await silent.end()
    }
  })
})

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
