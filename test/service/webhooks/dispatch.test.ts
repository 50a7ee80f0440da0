// The webhook outbox at one SQL statement per delivery attempt (issue 20): an event written in the state
// change's transaction already leased to the process's dispatcher and handed over in memory, sent once the
// change is announced, recorded (with its log row) by one UPDATE. Driven against a real receiver over HTTP,
// with the store's own statement counter. Also: two dispatchers on one database deliver each event once;
// a dispatcher that dies leaves its leased events to another once the leases end; the migration numbers an
// existing log's next attempt right. Everything but the migration runs on both stores, SQLite and
// PostgreSQL (issue 21; test/fixtures/stores.ts).
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Database from 'better-sqlite3'
import {
  type Delivery,
  type WebhookEndpoint,
  WebhookReceiver,
} from '../../../src/harness/webhook-receiver.ts'
import { resolveTemplate, type WebhookOptions } from '../../../src/service/config/schema.ts'
import { ServiceEvents, type WebhookBody } from '../../../src/service/events.ts'
import type { Store, TemplateRecord, WebhookEventRecord } from '../../../src/service/store/index.ts'
import { Kysely, Migrator, SqliteDialect } from '../../../src/service/store/kysely.ts'
import { migrations } from '../../../src/service/store/migrations.ts'
import { DATABASE_FILE, openSqliteStore } from '../../../src/service/store/sqlite.ts'
import { ManualClock, ShiftedClock } from '../../../src/service/util/clock.ts'
import { type AttemptReport, WebhookDispatcher } from '../../../src/service/webhooks/dispatcher.ts'
import { type OutboxHandoff, WebhookOutbox } from '../../../src/service/webhooks/outbox.ts'
import { STORE_KINDS, type TestDatabase, type TestDatabases } from '../../fixtures/stores.ts'

const TENANT = 'hooks'
/** Retries after 20 ms, then 80 ms. */
const OPTIONS: WebhookOptions = {
  mode: 'test',
  timeoutMs: 2000,
  maxAttempts: 5,
  retryInitialDelayMs: 20,
  retryMaxDelayMs: 60_000,
  concurrency: 16,
  perEndpointConcurrency: 4,
}
/** A negative check ("nothing more runs") needs a window: several times the dispatcher's least scan gap. */
const QUIET_MS = 300

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One process's share of the service: a store on the database, its events, dispatcher and outbox. */
interface Node {
  store: Store
  events: ServiceEvents
  dispatcher: WebhookDispatcher
  outbox: WebhookOutbox
  reports: AttemptReport[]
}

async function node(
  db: TestDatabase,
  clock: ShiftedClock,
  options: { webhooks?: Partial<WebhookOptions>; pollIntervalMs?: number } = {},
): Promise<Node> {
  // The store's clock only ages its template cache: held still, so that the counts below are the
  // dispatcher's own (in service a template read more than TEMPLATE_CACHE_MS after the last one costs one).
  const store = await db.open({ clock: new ManualClock() })
  const events = new ServiceEvents()
  const dispatcher = new WebhookDispatcher({
    store,
    clock,
    events,
    options: { ...OPTIONS, ...options.webhooks },
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
  })
  // As app.ts wires them: the outbox hands what it writes to this process's dispatcher.
  const outbox = new WebhookOutbox(clock, dispatcher)
  const reports: AttemptReport[] = []
  dispatcher.onAttempt((r) => reports.push(r))
  dispatcher.start()
  return { store, events, dispatcher, outbox, reports }
}

async function close(n: Node) {
  await n.dispatcher.stop()
  await n.store.close()
}

/** An issuance template of the tenant whose webhook goes to `endpoint`. */
async function hookTemplate(store: Store, clock: ShiftedClock, endpoint: WebhookEndpoint) {
  const now = clock.now()
  if (!(await store.tenants.get(TENANT)))
    await store.tenants.create({ id: TENANT, source: 'portal', createdAt: now })
  const template: TemplateRecord<'issuance'> = {
    tenantId: TENANT,
    id: `wh-${randomUUID().slice(0, 8)}`,
    kind: 'issuance',
    body: resolveTemplate('issuance', {
      id: 'x',
      credentialType: 'UniversityDegreeCredential',
      webhookUrl: endpoint.url,
      webhookSecret: endpoint.secret,
    }),
    source: 'portal',
    createdAt: now,
    updatedAt: now,
  }
  template.body.id = template.id
  await store.templates.create(template)
  return template
}

const body = (subject: string): WebhookBody => ({
  id: subject,
  subject: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
  status: 'SUCCESS',
  verificationResult: { checks: [], warnings: [], errors: [] },
})

/** What the service announces once an issuance change committed: the dispatcher's cue to send its events. */
const announceIssued = (n: Node, template: TemplateRecord, subject: string, at: number) =>
  n.events.emit({
    kind: 'issuance',
    tenantId: template.tenantId,
    templateId: template.id,
    processId: subject,
    status: 'ISSUED',
    step: 'issued',
    at,
  })

/**
 * A process becomes ISSUED as IssuanceService does it: the template read, the outbox row written in the
 * change's transaction, the change announced after the commit. Answers the event id and the statements
 * the transaction ran.
 */
async function issue(n: Node, template: TemplateRecord, outbox = n.outbox, subject = `p-${randomUUID()}`) {
  await n.store.templates.get(template.tenantId, template.id, 'issuance')
  const before = n.store.stats.statements
  const id = await n.store.transaction((repos) =>
    outbox.enqueueIn(repos, template, subject, 'issuance.issued', body(subject)),
  )
  const transaction = n.store.stats.statements - before
  announceIssued(n, template, subject, Date.now())
  return { id: id as string, transaction }
}

/** The first report matching, recorded already or still to come. */
function untilReport(nodes: Node[], what: string, match: (r: AttemptReport) => boolean, timeoutMs = 8000) {
  const found = nodes.flatMap((n) => n.reports).find(match)
  if (found) return Promise.resolve(found)
  return new Promise<AttemptReport>((resolve, reject) => {
    const offs: (() => void)[] = []
    const done = () => {
      clearTimeout(timer)
      for (const off of offs) off()
    }
    const timer = setTimeout(() => {
      done()
      reject(new Error(`timed out waiting for ${what}`))
    }, timeoutMs)
    for (const n of nodes) {
      offs.push(
        n.dispatcher.onAttempt((r) => {
          if (!match(r)) return
          done()
          resolve(r)
        }),
      )
    }
  })
}

const settled = (nodes: Node[], id: string) =>
  untilReport(nodes, `event ${id} to settle`, (r) => r.event.id === id && r.event.state !== 'pending')

const logOf = async (store: Store, id: string) =>
  (await store.webhooks.attempts(id)).map((a) => [a.attempt, a.status, a.outcome, a.trigger])

/** A clock, a receiver on it and a node on a fresh database, made before a describe's tests and closed after. */
function nodeWithReceiver(databases: TestDatabases, label: string) {
  const env = {} as { clock: ShiftedClock; receiver: WebhookReceiver; n: Node }
  before(async () => {
    env.clock = new ShiftedClock()
    env.receiver = await WebhookReceiver.start({ now: () => env.clock.now() })
    env.n = await node(await databases.fresh(label), env.clock)
  })
  after(async () => {
    await close(env.n)
    await env.receiver.close()
  })
  return env
}

for (const kind of STORE_KINDS) {
  describe(`webhook dispatch (${kind.name})`, { skip: kind.skip }, () => {
    const databases = kind.use()

    describe('one statement per delivery attempt', () => {
      const env = nodeWithReceiver(databases, 'one statement')

      test(`the outbox row costs one statement in the change transaction, a successful attempt one more, nothing after (${kind.name})`, async () => {
        const endpoint = env.receiver.endpoint('one statement')
        const template = await hookTemplate(env.n.store, env.clock, endpoint)
        for (let i = 0; i < 5; i++) {
          const { id, transaction } = await issue(env.n, template)
          // BEGIN (IMMEDIATE on SQLite), the INSERT of the row (leased, with the endpoint's state
          // returned), COMMIT.
          assert.equal(transaction, 3, 'the outbox write is one statement of its transaction')
          const before = env.n.store.stats.statements
          const done = await settled([env.n], id)
          await sleep(QUIET_MS)
          assert.equal(
            env.n.store.stats.statements - before,
            1,
            'the attempt is recorded by one statement, and no scan follows',
          )
          assert.equal(done.event.state, 'delivered')
          assert.deepEqual(await logOf(env.n.store, id), [[1, 204, 'delivered', 'automatic']])
          const row = await env.n.store.webhooks.get(id)
          assert.equal(row?.state, 'delivered')
          assert.equal(row?.attempts, 1)
          assert.equal(row?.leaseUntil, null)
          assert.equal(row?.leaseOwner, null)
          assert.equal(row?.logCount, 1)
          assert.equal(endpoint.deliveries.filter((d) => d.webhookId === id).length, 1)
        }
      })

      test(`many changes at once: one statement per attempt in all, no scan while they are delivered (${kind.name})`, async () => {
        const endpoint = env.receiver.endpoint('many at once')
        const template = await hookTemplate(env.n.store, env.clock, endpoint)
        await env.n.store.templates.get(TENANT, template.id, 'issuance')
        const subjects = Array.from({ length: 40 }, () => `p-${randomUUID()}`)
        const ids: string[] = []
        // Written in one transaction each, in the same turn: the group commit puts them in one batch.
        const written = await Promise.all(
          subjects.map((subject) =>
            env.n.store.transaction((repos) =>
              env.n.outbox.enqueueIn(repos, template, subject, 'issuance.issued', body(subject)),
            ),
          ),
        )
        for (const id of written) ids.push(id as string)
        const before = env.n.store.stats.statements
        for (const subject of subjects) {
          env.n.events.emit({
            kind: 'issuance',
            tenantId: TENANT,
            templateId: template.id,
            processId: subject,
            status: 'ISSUED',
            step: 'issued',
            at: env.clock.now(),
          })
        }
        for (const id of ids) assert.equal((await settled([env.n], id)).event.state, 'delivered')
        await sleep(QUIET_MS)
        assert.equal(env.n.store.stats.statements - before, ids.length)
        assert.equal(new Set(endpoint.deliveries.map((d) => d.webhookId)).size, ids.length)
        assert.equal(endpoint.deliveries.length, ids.length)
      })

      test(`a retried attempt costs one statement each: 503, 503, then 204 (${kind.name})`, async () => {
        const endpoint = env.receiver.endpoint('retried').respondWith({ status: 503 }, { status: 503 })
        const template = await hookTemplate(env.n.store, env.clock, endpoint)
        const { id } = await issue(env.n, template)
        const before = env.n.store.stats.statements
        const done = await settled([env.n], id)
        await sleep(QUIET_MS)
        assert.equal(env.n.store.stats.statements - before, 3, 'three attempts, three statements')
        assert.equal(done.event.state, 'delivered')
        assert.deepEqual(await logOf(env.n.store, id), [
          [1, 503, 'retry', 'automatic'],
          [2, 503, 'retry', 'automatic'],
          [3, 204, 'delivered', 'automatic'],
        ])
        const log = await env.n.store.webhooks.attempts(id)
        assert.equal(log[0]?.error, 'the receiver answered 503')
        assert.ok((log[0]?.nextAttemptAt ?? 0) <= (log[1]?.at ?? 0), 'not before its time')
        const row = await env.n.store.webhooks.get(id)
        assert.deepEqual(
          [row?.state, row?.attempts, row?.lastStatus, row?.logCount, row?.leaseUntil],
          ['delivered', 3, 204, 3, null],
        )
        assert.deepEqual(
          endpoint.deliveries.map((d) => [d.webhookId, d.answeredStatus]),
          [
            [id, 503],
            [id, 503],
            [id, 204],
          ],
        )
      })

      test(`a 410 disables the endpoint in the same statement; the next event is disabled without a request (${kind.name})`, async () => {
        const endpoint = env.receiver.endpoint('gone').respondWith({ status: 410 })
        const template = await hookTemplate(env.n.store, env.clock, endpoint)
        const { id } = await issue(env.n, template)
        const before = env.n.store.stats.statements
        assert.equal((await settled([env.n], id)).event.state, 'disabled')
        await sleep(QUIET_MS)
        assert.equal(env.n.store.stats.statements - before, 1)
        const disabled = await env.n.store.webhooks.endpoint(TENANT, template.id)
        assert.equal(disabled?.url, endpoint.url)
        assert.equal(disabled?.disabledReason, `${endpoint.url} answered 410 Gone to event ${id}`)
        assert.deepEqual(await logOf(env.n.store, id), [[1, 410, 'disabled', 'automatic']])

        const next = await issue(env.n, template)
        const skipped = await settled([env.n], next.id)
        assert.equal(skipped.event.state, 'disabled')
        assert.equal(skipped.attempt.status, null)
        assert.equal(skipped.attempt.error, `endpoint disabled: ${disabled?.disabledReason}`)
        assert.equal(endpoint.deliveries.length, 1, 'no request after the 410')
      })

      test(`per-origin limit: held events of a slow origin wait for its slot, another origin is not held back (${kind.name})`, async () => {
        const slowReceiver = await WebhookReceiver.start({ now: () => env.clock.now() })
        const limited = await node(await databases.fresh('per origin'), env.clock, {
          webhooks: { perEndpointConcurrency: 1, timeoutMs: 5000 },
        })
        try {
          const slow = slowReceiver.endpoint('slow').respondAlways({ delayMs: 3000 })
          const fast = env.receiver.endpoint('fast')
          const slowTemplate = await hookTemplate(limited.store, env.clock, slow)
          const fastTemplate = await hookTemplate(limited.store, env.clock, fast)
          for (let i = 0; i < 4; i++) await issue(limited, slowTemplate)
          await slow.waitFor(() => true, { description: 'the first slow delivery' })
          const { id } = await issue(limited, fastTemplate)
          await fast.waitFor((d) => d.webhookId === id, { timeoutMs: 2000 })
          assert.equal(slow.deliveries.length, 1, 'one delivery at a time to the slow origin')
          assert.equal(slow.deliveries[0]?.answerOutcome, 'pending')
        } finally {
          await close(limited)
          await slowReceiver.close()
        }
      })
    })

    describe('announcements', () => {
      const env = nodeWithReceiver(databases, 'announcements')

      const announce = (template: TemplateRecord, subject: string) =>
        announceIssued(env.n, template, subject, env.clock.now())

      /** A transaction that writes the outbox row and then fails: the row rolls back with it. */
      async function rolledBack(template: TemplateRecord, subject: string) {
        await assert.rejects(
          env.n.store.transaction(async (repos) => {
            await env.n.outbox.enqueueIn(repos, template, subject, 'issuance.issued', body(subject))
            throw new Error('injected failure after the outbox write')
          }),
          /injected failure/,
        )
      }

      test(`a write rolled back is never sent; the committed write of the same change is sent once (${kind.name})`, async () => {
        const endpoint = env.receiver.endpoint('rolled back')
        const template = await hookTemplate(env.n.store, env.clock, endpoint)
        const subject = `p-${randomUUID()}`
        await rolledBack(template, subject)
        const { id } = await issue(env.n, template, env.n.outbox, subject)
        assert.equal((await settled([env.n], id)).event.state, 'delivered')
        await sleep(QUIET_MS)
        assert.deepEqual(
          endpoint.deliveries.map((d) => d.webhookId),
          [id],
        )
      })

      test(`an announcement long after a write that rolled back (another worker's, relayed) sends nothing (${kind.name})`, async () => {
        const endpoint = env.receiver.endpoint('relayed')
        const template = await hookTemplate(env.n.store, env.clock, endpoint)
        const subject = `p-${randomUUID()}`
        await rolledBack(template, subject)
        env.clock.advance(11_000)
        const before = env.n.store.stats.statements
        announce(template, subject)
        await sleep(QUIET_MS)
        assert.equal(endpoint.deliveries.length, 0)
        assert.equal(env.n.store.stats.statements, before, 'nothing was attempted')
        assert.deepEqual(await env.n.store.webhooks.listByTemplate(TENANT, template.id, { limit: 10 }), [])
      })
    })

    describe('redelivery keeps the order of a subject', () => {
      test(`a later event of the subject held for its retry goes back to the outbox and waits for the redelivered one (${kind.name})`, async () => {
        const clock = new ShiftedClock()
        const receiver = await WebhookReceiver.start({ now: () => clock.now() })
        const n = await node(await databases.fresh('redelivery order'), clock)
        try {
          const endpoint = receiver.endpoint('redelivery order')
          const template = await hookTemplate(n.store, clock, endpoint)
          const subject = `p-${randomUUID()}`
          const first = (await issue(n, template, n.outbox, subject)).id
          assert.equal((await settled([n], first)).event.state, 'delivered')
          endpoint.respondWith({ status: 503, retryAfter: '10' })
          const second = (await issue(n, template, n.outbox, subject)).id
          await untilReport([n], 'the first attempt of the second event', (r) => r.event.id === second)
          assert.equal(
            (await n.store.webhooks.get(second))?.leaseOwner,
            n.dispatcher.owner,
            'its retry is held',
          )

          // The redelivery (as WebhookService.redeliver does it) is answered 503, Retry-After 30 s.
          endpoint.respondWith({ status: 503, retryAfter: '30' })
          assert.ok(await n.store.webhooks.requeue(first, clock.now()))
          await n.dispatcher.redelivered((await n.store.webhooks.get(first)) as WebhookEventRecord)
          assert.equal((await n.store.webhooks.get(second))?.leaseOwner, null, 'back to the outbox')
          await untilReport([n], 'the redelivery', (r) => r.event.id === first && r.attempt.attempt === 2)

          // The second event's retry falls due first, but its subject's redelivered event is still pending.
          clock.advance(11_000)
          n.dispatcher.kick()
          await sleep(QUIET_MS)
          assert.equal(endpoint.deliveries.filter((d) => d.webhookId === second).length, 1)

          clock.advance(20_000)
          n.dispatcher.kick()
          assert.equal((await settled([n], second)).event.state, 'delivered')
          assert.deepEqual(
            endpoint.deliveries.map((d) => [d.webhookId, d.answeredStatus]),
            [
              [first, 204],
              [second, 503],
              [first, 503],
              [first, 204],
              [second, 204],
            ],
          )
          assert.deepEqual(await logOf(n.store, first), [
            [1, 204, 'delivered', 'automatic'],
            [2, 503, 'retry', 'redelivery'],
            [3, 204, 'delivered', 'automatic'],
          ])
        } finally {
          await close(n)
          await receiver.close()
        }
      })
    })

    describe('several dispatchers on one database', () => {
      let db: TestDatabase
      let clock: ShiftedClock
      let receiver: WebhookReceiver
      before(async () => {
        db = await databases.fresh('several dispatchers')
        clock = new ShiftedClock()
        receiver = await WebhookReceiver.start({ now: () => clock.now() })
      })
      after(() => receiver.close())

      const shared = kind.name === 'SQLite' ? 'two stores on one file' : 'two stores on one database'
      test(`two processes (${shared}), both scanning: each event is delivered exactly once (${kind.name})`, async () => {
        const a = await node(db, clock, { pollIntervalMs: 20 })
        const b = await node(db, clock, { pollIntervalMs: 20 })
        try {
          const endpoint = receiver.endpoint('two dispatchers')
          // Every third request is answered 503 once: retries are held in memory, leased, while the other scans.
          const template = await hookTemplate(a.store, clock, endpoint)
          const ids: string[] = []
          const unleased = new WebhookOutbox(clock) // a writer without a dispatcher: both race to claim its rows
          for (let i = 0; i < 30; i++) {
            if (i % 3 === 0) endpoint.respondWith({ status: 503 })
            const writer = i % 3 === 0 ? a : b
            ids.push((await issue(writer, template, i % 5 === 0 ? unleased : writer.outbox)).id)
          }
          const both = [a, b]
          for (const id of ids) assert.equal((await settled(both, id)).event.state, 'delivered', id)
          await sleep(QUIET_MS)
          const byId = new Map<string, Delivery[]>()
          for (const d of endpoint.deliveries)
            byId.set(d.webhookId ?? '', [...(byId.get(d.webhookId ?? '') ?? []), d])
          assert.deepEqual([...byId.keys()].sort(), [...ids].sort())
          for (const id of ids) {
            const sent = byId.get(id) ?? []
            assert.equal(sent.filter((d) => d.answeredStatus === 204).length, 1, `${id} acknowledged once`)
            // Every request is in the log, numbered in order, whoever sent it.
            const log = await a.store.webhooks.attempts(id)
            assert.deepEqual(
              log.map((x) => [x.attempt, x.status]),
              sent.map((d, i) => [i + 1, d.answeredStatus]),
            )
          }
          const reported = [...a.reports, ...b.reports].filter((r) => r.event.state === 'delivered')
          assert.equal(reported.length, ids.length, 'one delivered report per event over both dispatchers')
          assert.ok(a.reports.length > 0 && b.reports.length > 0, 'both dispatchers delivered')
        } finally {
          await close(a)
          await close(b)
        }
      })

      /** An event written with no lease (a writer without a dispatcher): any claimant may take it. */
      async function unleased(store: Store, template: TemplateRecord) {
        const subject = `p-${randomUUID()}`
        const id = await store.transaction((repos) =>
          new WebhookOutbox(clock).enqueueIn(repos, template, subject, 'issuance.issued', body(subject)),
        )
        return id as string
      }

      test(`claims of one event raced from two stores: exactly one claimant wins, and holds the lease (${kind.name})`, async () => {
        const a = await db.open({ clock: new ManualClock() })
        const b = await db.open({ clock: new ManualClock() })
        try {
          const template = await hookTemplate(a, clock, receiver.endpoint('claim race'))
          for (let round = 0; round < 5; round++) {
            const id = await unleased(a, template)
            const now = clock.now()
            const claims = await Promise.all(
              Array.from({ length: 16 }, (_, i) =>
                (i % 2 === 0 ? a : b).webhooks.claim(id, now, now + 60_000, `claimant-${i}`),
              ),
            )
            const winners = claims.filter((c) => c !== undefined)
            assert.equal(winners.length, 1, `round ${round}: one claim of 16 won`)
            const owner = winners[0]?.event.leaseOwner
            assert.match(owner ?? '', /^claimant-\d+$/)
            assert.equal((await b.webhooks.get(id))?.leaseOwner, owner, 'the row names the winner')
          }
        } finally {
          await a.close()
          await b.close()
        }
      })

      // Issue 21: the claim locks the event's row with FOR UPDATE SKIP LOCKED, so a claimant never queues
      // behind a row another instance holds locked; it answers "not yours" at once and a later scan retries.
      if (kind.name === 'PostgreSQL')
        test(`a claim skips an event whose row another transaction holds locked, at once, and takes it after that transaction ends (${kind.name})`, async () => {
          const store = await db.open({ clock: new ManualClock() })
          const { default: pg } = await import('pg') // loaded by the PostgreSQL tests only
          const locker = new pg.Client({ connectionString: db.location })
          await locker.connect()
          try {
            const template = await hookTemplate(store, clock, receiver.endpoint('locked row'))
            const id = await unleased(store, template)
            await locker.query('BEGIN')
            const locked = await locker.query('SELECT id FROM webhook_events WHERE id = $1 FOR UPDATE', [id])
            assert.equal(locked.rowCount, 1)
            const now = clock.now()
            // A claim that waited for the lock would still be waiting when the timer fires.
            const claimed = await Promise.race([
              store.webhooks.claim(id, now, now + 60_000, 'claimant'),
              sleep(2000).then(() => 'still waiting for the row lock'),
            ])
            assert.equal(claimed, undefined, 'the locked row is skipped, not waited for')
            assert.equal((await store.webhooks.get(id))?.leaseOwner, null, 'and left as it was')
            // The lock's holder commits without touching the lease: the event is free to claim again.
            await locker.query('COMMIT')
            const taken = await store.webhooks.claim(id, now, now + 60_000, 'claimant')
            assert.equal(taken?.event.id, id)
            assert.equal(taken?.event.leaseOwner, 'claimant')
            assert.equal(taken?.event.leaseUntil, now + 60_000)
            assert.equal(
              await store.webhooks.claim(id, now, now + 60_000, 'another claimant'),
              undefined,
              'leased now: another claimant is refused',
            )
          } finally {
            await locker.query('ROLLBACK').catch(() => {})
            await locker.end()
            await store.close()
          }
        })

      test(`a dispatcher that dies holding leases: another sends its events once the leases end, not before (${kind.name})`, async () => {
        const a = await node(db, clock)
        const b = await node(db, clock)
        try {
          const endpoint = receiver.endpoint('crash')
          const template = await hookTemplate(a.store, clock, endpoint)
          // A process that committed an event leased to its dispatcher and died before sending it.
          const dead: OutboxHandoff = {
            leaseFor: (_url, now) => ({ owner: 'dispatcher-that-died', until: now + 60_000 }),
            written: () => {},
          }
          const orphan = (await issue(a, template, new WebhookOutbox(clock, dead))).id
          // A's dispatcher holds a retry (Retry-After 30 s) in memory, leased, then dies without releasing it.
          endpoint.respondWith({ status: 503, retryAfter: '30' })
          const retried = (await issue(a, template)).id
          const first = await untilReport([a], 'the first attempt', (r) => r.event.id === retried)
          assert.equal(first.attempt.outcome, 'retry')
          const held = await a.store.webhooks.get(retried)
          assert.equal(held?.leaseOwner, a.dispatcher.owner)
          assert.ok((held?.leaseUntil ?? 0) > (first.attempt.nextAttemptAt ?? 0) + OPTIONS.timeoutMs)
          a.store.webhooks.release = async () => {} // dies: no graceful release
          await a.dispatcher.stop()

          // B scans (at start and now): both are leased to someone else, so B sends neither.
          b.dispatcher.kick()
          assert.equal(
            await b.store.webhooks.claim(orphan, clock.now(), clock.now() + 1000, b.dispatcher.owner),
            undefined,
          )
          const until = Math.max((await b.store.webhooks.get(orphan))?.leaseUntil ?? 0, held?.leaseUntil ?? 0)
          await sleep(QUIET_MS)
          assert.equal(endpoint.deliveries.filter((d) => d.webhookId === orphan).length, 0)
          assert.equal(endpoint.deliveries.filter((d) => d.webhookId === retried).length, 1)

          // Once the leases end, B's scan takes both and sends each once.
          clock.advance(until - clock.now() + 1)
          b.dispatcher.kick()
          for (const id of [orphan, retried]) {
            const done = await settled([b], id)
            assert.equal(done.event.state, 'delivered')
            assert.ok(done.attempt.at > until - 1)
          }
          assert.deepEqual(await logOf(b.store, orphan), [[1, 204, 'delivered', 'automatic']])
          assert.deepEqual(await logOf(b.store, retried), [
            [1, 503, 'retry', 'automatic'],
            [2, 204, 'delivered', 'automatic'],
          ])
          assert.equal(endpoint.deliveries.filter((d) => d.webhookId === orphan).length, 1)
          assert.equal(endpoint.deliveries.filter((d) => d.webhookId === retried).length, 2)
        } finally {
          await close(a).catch(() => {})
          await close(b)
        }
      })
    })
  })
}

// SQLite only: it migrates a database file as the release before migration 0008 left it. No PostgreSQL
// database predates 0008 (PostgreSQL came with issue 21, after it); test/service/store/postgres.test.ts holds the
// PostgreSQL trigger of 0008 to the same log rows.
describe('migration 0008 (SQLite)', () => {
  test('an event logged before it counts its attempts: the next one is numbered after them, a redelivery (SQLite)', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'vc-harness-webhook-dispatch-'))
    try {
      // A database as the previous release left it: migrations up to 0007, an event with two attempts.
      const old = new Kysely<unknown>({
        dialect: new SqliteDialect({ database: new Database(join(dataDir, DATABASE_FILE)) }),
      })
      const migrator = new Migrator({ db: old, provider: { getMigrations: async () => migrations } })
      assert.equal((await migrator.migrateTo('0007_retention')).error, undefined)
      const raw = new Database(join(dataDir, DATABASE_FILE))
      raw.prepare(`insert into tenants (id, source, created_at) values ('${TENANT}', 'portal', 1)`).run()
      raw
        .prepare(
          `insert into webhook_events (id, tenant_id, template_id, template_kind, subject_id, type, url, body, state,
            attempts, next_attempt_at, lease_until, last_status, last_error, created_at, updated_at, delivered_at)
          values ('msg_old', '${TENANT}', 'tpl', 'issuance', 'p-1', 'issuance.issued', 'https://rp.example/hook', '{}',
            'failed', 2, null, null, 500, 'gave up', 1, 2, null)`,
        )
        .run()
      for (const n of [1, 2]) {
        raw
          .prepare(
            `insert into webhook_attempts (event_id, attempt, at, duration_ms, status, error, outcome, next_attempt_at, trigger)
            values ('msg_old', ${n}, ${n}, 5, 500, 'the receiver answered 500', '${n === 1 ? 'retry' : 'failed'}', null, 'automatic')`,
          )
          .run()
      }
      raw.close()
      await old.destroy()

      const store = await openSqliteStore(dataDir)
      try {
        const event = await store.webhooks.get('msg_old')
        assert.equal(event?.logCount, 2)
        assert.equal(event?.leaseOwner, null)
        assert.ok(await store.webhooks.requeue('msg_old', 10))
        const requeued = (await store.webhooks.get('msg_old')) as NonNullable<typeof event>
        const attempt = {
          eventId: 'msg_old',
          attempt: 3,
          at: 11,
          durationMs: 4,
          status: 204,
          error: null,
          outcome: 'delivered' as const,
          nextAttemptAt: null,
          trigger: 'redelivery' as const,
        }
        const next = {
          ...requeued,
          state: 'delivered' as const,
          attempts: 1,
          lastStatus: 204,
          lastError: null,
        }
        assert.ok(await store.webhooks.recordAttempt({ ...next, updatedAt: 12, deliveredAt: 12 }, attempt))
        assert.equal(
          await store.webhooks.recordAttempt({ ...next, updatedAt: 12, deliveredAt: 12 }, attempt),
          undefined,
          'attempt 3 is logged already: a second record of it changes nothing',
        )
        assert.deepEqual(await logOf(store, 'msg_old'), [
          [1, 500, 'retry', 'automatic'],
          [2, 500, 'failed', 'automatic'],
          [3, 204, 'delivered', 'redelivery'],
        ])
        assert.equal((await store.webhooks.get('msg_old'))?.logCount, 3)
      } finally {
        await store.close()
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  })
})
