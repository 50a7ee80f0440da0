import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, mock, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { purged, RetentionPurge } from '../../src/service/retention.ts'
import {
  type GrantRecord,
  noPurgeCounts,
  type ProcessRecord,
  type PurgeCounts,
  type Repositories,
  type Store,
  type WebhookEventRecord,
} from '../../src/service/store/index.ts'
import { getStatus, readStatusList, STATUS_VALUES } from '../../src/shared/bitstring.ts'
import { decodeJws } from '../../src/shared/jws.ts'
import { STORE_KINDS, type TestDatabase } from '../fixtures/stores.ts'
import { auth, DEMO, makeApp, problemOf, type TestApp, tokenFor } from '../helpers.ts'
import {
  changeStatus,
  DEGREE,
  issueTo,
  newHolder,
  newOffer,
  rejectProcess,
  submit,
  WIDE_APP,
  walletAsked,
} from '../oid4vci-helpers.ts'
import {
  openSession,
  postResponse,
  respond,
  submission,
  verificationConfig,
  vpJwt,
} from '../verification-helpers.ts'

// Retention (issue 19; docs/security.md, "Retention"): the background purge, driven here by its runOnce()
// on the manual clock. Each kind of record is read through the relying-party API at the last instant of
// its lifetime (exactly as before) and one millisecond later (gone: 404, as an unknown id answers). The
// purge runs on both stores, SQLite and PostgreSQL (issue 21; test/fixtures/stores.ts); its schedule is
// the store's concern of neither.

const DAY = 86_400_000
const POLICY = verificationConfig().retention
const CLOSED = POLICY.closedFlowDays * DAY
const ISSUED = POLICY.issuedProcessDays * DAY

const only = (counts: Partial<PurgeCounts>): PurgeCounts => ({ ...noPurgeCounts(), ...counts })

async function appOn(db: TestDatabase): Promise<TestApp> {
  const t = await makeApp(verificationConfig(), db)
  await t.app.ready()
  // Deliveries are not under test (and the purge must never race one): the outbox stays as written.
  await t.app.services.webhookDispatcher.stop()
  return t
}

const purge = async (t: TestApp) => (await t.app.services.retention.runOnce()).counts
const moveTo = (t: TestApp, at: number) => t.clock.advance(at - t.clock.now())
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * PostgreSQL: a purge racing another instance's write. `change` (one UPDATE, as that instance's store
 * writes it) is left uncommitted on a connection of its own while the purge runs; it commits once the
 * purge waits for the row's lock. Answers the purge's counts.
 */
async function purgeRacing(t: TestApp, db: TestDatabase, change: string, values: unknown[]) {
  const { default: pg } = await import('pg') // loaded by the PostgreSQL tests only
  const writer = new pg.Client({ connectionString: db.location })
  const watcher = new pg.Client({ connectionString: db.location })
  await writer.connect()
  await watcher.connect()
  try {
    await writer.query('BEGIN')
    assert.equal((await writer.query(change, values)).rowCount, 1, 'the other instance changed its row')
    const running = purge(t)
    running.catch(() => {}) // awaited below; a failure to see the wait must not leave it unhandled
    for (let waited = 0; ; waited += 10) {
      const { rows } = await watcher.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      )
      if ((rows[0]?.n ?? 0) > 0) break
      if (waited > 5000) assert.fail('the purge never reached the changed row')
      await sleep(10)
    }
    await writer.query('COMMIT')
    return await running
  } finally {
    await writer.query('ROLLBACK').catch(() => {})
    await writer.end()
    await watcher.end()
  }
}

/** 4.3 with a fresh token (the clock moves by days: tokens expire). */
async function readProcess(t: TestApp, id: string) {
  const rp = await tokenFor(t.app, WIDE_APP, 'degree')
  return t.app.inject({ url: `/admin/v1/issuanceRequests/${id}`, headers: auth(rp) })
}

/** 4.7 with a fresh token. */
async function readSession(t: TestApp, id: string, template = 'degree-check') {
  const rp = await tokenFor(t.app, WIDE_APP, template)
  return t.app.inject({ url: `/api/v3/sessions/${id}`, headers: auth(rp) })
}

async function readDelivery(t: TestApp, id: string) {
  const admin = await tokenFor(t.app, DEMO.admin)
  return t.app.inject({ url: `/portal/v1/webhook-deliveries/${id}`, headers: auth(admin) })
}

/** The same answer, status and body, as the unknown id `unknown` gets (the id aside). */
function assertLikeUnknown(
  gone: LightMyRequestResponse,
  unknown: LightMyRequestResponse,
  ids: { gone: string; unknown: string },
  code: string,
) {
  assert.equal(gone.statusCode, 404, gone.body)
  assert.equal(problemOf(gone).code, code)
  assert.equal(gone.statusCode, unknown.statusCode)
  assert.equal(gone.headers['content-type'], unknown.headers['content-type'])
  assert.deepEqual(JSON.parse(gone.body.replaceAll(ids.gone, ids.unknown)), unknown.json())
}

/**
 * The record read by `read` is kept (read exactly as `expected`) with the clock at `lastInstant`, and
 * deleted one millisecond later (`counts` answered; then 404 like an unknown id).
 */
async function keptThenPurged(
  t: TestApp,
  options: {
    lastInstant: number
    read: (id: string) => Promise<LightMyRequestResponse>
    id: string
    expected: LightMyRequestResponse
    counts: Partial<PurgeCounts>
    notFound: string
  },
) {
  const { lastInstant, read, id, expected } = options
  // What else the flow left behind and is already due (its used c_nonce) goes first.
  moveTo(t, lastInstant - 1)
  await purge(t)
  t.clock.advance(1)
  assert.deepEqual(await purge(t), noPurgeCounts(), 'nothing is due at the last instant of the lifetime')
  const kept = await read(id)
  assert.equal(kept.statusCode, expected.statusCode, kept.body)
  assert.deepEqual(kept.json(), expected.json(), 'read exactly as before')

  t.clock.advance(1)
  assert.deepEqual(await purge(t), only(options.counts))
  const unknown = randomUUID()
  assertLikeUnknown(await read(id), await read(unknown), { gone: id, unknown }, options.notFound)
  assert.deepEqual(await purge(t), noPurgeCounts(), 'a second run finds nothing more')
}

/** keptThenPurged for a verification session, whose lifetime ends closedFlowDays after `endedAt`. */
const sessionKeptThenPurged = (t: TestApp, id: string, expected: LightMyRequestResponse, endedAt: number) =>
  keptThenPurged(t, {
    lastInstant: endedAt + CLOSED,
    read: (sessionId) => readSession(t, sessionId),
    id,
    expected,
    counts: { sessions: 1 },
    notFound: 'session_not_found',
  })

describe('retention: the policy', () => {
  test('the policy in force is the documented default', () => {
    assert.deepEqual(POLICY, { closedFlowDays: 30, issuedProcessDays: 400, purgeIntervalSeconds: 3600 })
  })
})

for (const kind of STORE_KINDS) {
  describe(`retention (${kind.name})`, { skip: kind.skip }, () => {
    const databases = kind.use()
    /** An app on a fresh database of this kind. */
    const app = async () => appOn(await databases.fresh('retention'))

    describe('retention: issuance processes', () => {
      test(`REJECTED: kept closedFlowDays after the rejection, then deleted with its grant (${kind.name})`, async () => {
        const t = await app()
        try {
          const { rp, processId } = await newOffer(t.app, 'degree')
          assert.equal((await rejectProcess(t.app, rp, processId, 'not eligible')).statusCode, 200)
          const expected = await readProcess(t, processId)
          assert.equal(expected.json<{ status: string }>().status, 'REJECTED')
          const rejectedAt = Date.parse(expected.json<{ updatedAt: string }>().updatedAt)
          await keptThenPurged(t, {
            lastInstant: rejectedAt + CLOSED,
            read: (id) => readProcess(t, id),
            id: processId,
            expected,
            counts: { rejectedProcesses: 1 },
            notFound: 'process_not_found',
          })
          assert.equal(await t.app.services.store.grants.get(processId), undefined, 'its grant went with it')
        } finally {
          await t.close()
        }
      })

      test(`an offer that lapsed unredeemed: kept closedFlowDays after the code expired, then deleted (${kind.name})`, async () => {
        const t = await app()
        try {
          const { processId } = await newOffer(t.app, 'degree')
          const expected = await readProcess(t, processId)
          assert.equal(expected.json<{ status: string }>().status, 'PENDING')
          const grant = await t.app.services.store.grants.get(processId)
          assert.ok(grant)
          const updatedAt = Date.parse(expected.json<{ updatedAt: string }>().updatedAt)
          await keptThenPurged(t, {
            lastInstant: Math.max(updatedAt, grant.codeExpiresAt) + CLOSED,
            read: (id) => readProcess(t, id),
            id: processId,
            expected,
            counts: { lapsedProcesses: 1 },
            notFound: 'process_not_found',
          })
          assert.equal(await t.app.services.store.grants.get(processId), undefined)
        } finally {
          await t.close()
        }
      })

      // Another instance's submission to the lapsed offer commits while the purge holds the offer it chose:
      // SQLite's write lock cannot let that happen; on PostgreSQL the purge's locks must.
      if (kind.name === 'PostgreSQL')
        test(`content submitted to a lapsed offer while the purge is choosing it keeps the process and its grant (${kind.name})`, async () => {
          const db = await databases.fresh('retention')
          const t = await appOn(db)
          try {
            const { processId } = await newOffer(t.app, 'degree')
            const { store } = t.app.services
            const grant = await store.grants.get(processId)
            const offered = await store.processes.get(processId)
            assert.ok(grant && offered)
            moveTo(t, Math.max(offered.updatedAt, grant.codeExpiresAt) + CLOSED + 1)
            const content = [{ id: `urn:uuid:${randomUUID()}`, submittedBy: 'another instance' }]
            // What IssuanceService's submission writes: the content, conditional on the row as it read it.
            const counts = await purgeRacing(
              t,
              db,
              'UPDATE issuance_processes SET submitted = $1, updated_at = $2 WHERE id = $3 AND updated_at = $4',
              [JSON.stringify(content), offered.updatedAt + 1, processId, offered.updatedAt],
            )
            assert.deepEqual(counts, noPurgeCounts(), 'the offer has content waiting now: not lapsed')
            const kept = await store.processes.get(processId)
            assert.equal(kept?.status, 'PENDING')
            assert.deepEqual(kept?.submitted, content)
            assert.deepEqual(await store.grants.get(processId), grant, 'its grant stays with it')
          } finally {
            await t.close()
          }
        })

      test(`PENDING with content waiting, or with a wallet waiting for content, is kept however old (${kind.name})`, async () => {
        const t = await app()
        try {
          // Content submitted before any wallet came; its offer then lapsed.
          const waitingContent = await newOffer(t.app, 'degree')
          const submitted = await submit(t.app, waitingContent.rp, waitingContent.processId, DEGREE)
          assert.equal(submitted.statusCode, 200, submitted.body)
          // The wallet redeemed the code and asked: the process waits for the relying party (attended issuance).
          const waitingWallet = await walletAsked(t)
          const before = await Promise.all([
            readProcess(t, waitingContent.processId),
            readProcess(t, waitingWallet.processId),
          ])
          t.clock.advance(10 * 365 * DAY)
          // (The wallet's used c_nonce went long ago.)
          assert.deepEqual({ ...(await purge(t)), nonces: 0 }, noPurgeCounts())
          for (const [i, id] of [waitingContent.processId, waitingWallet.processId].entries()) {
            const now = await readProcess(t, id)
            assert.equal(now.statusCode, 200, now.body)
            assert.deepEqual(now.json(), before[i]?.json())
            assert.equal(now.json<{ status: string }>().status, 'PENDING')
          }
        } finally {
          await t.close()
        }
      })

      test(`ISSUED: kept issuedProcessDays after issuance; then its status entries go, the bits stay, the slot is never reused (${kind.name})`, async () => {
        const t = await app()
        try {
          const holder = newHolder()
          const issued = await issueTo(t.app, t.clock, holder, 'degree', DEGREE)
          const revoked = await changeStatus(t.app, issued.rp, issued.processId, { status: 'revoked' })
          assert.equal(revoked.statusCode, 200, revoked.body)
          const expected = await readProcess(t, issued.processId)
          assert.equal(expected.json<{ status: string }>().status, 'ISSUED')
          const entry = statusEntryOf(issued.jwts[0] as string)
          const listBefore = await statusListAt(t, entry.statusListCredential)
          assert.equal(getStatus(listBefore.bits, entry.index), STATUS_VALUES.revoked)

          const issuedAt = Date.parse(expected.json<{ updatedAt: string }>().updatedAt)
          await keptThenPurged(t, {
            lastInstant: issuedAt + ISSUED,
            read: (id) => readProcess(t, id),
            id: issued.processId,
            expected,
            counts: { issuedProcesses: 1 },
            notFound: 'process_not_found',
          })
          const { store } = t.app.services
          assert.deepEqual(await store.issuedCredentials.listByProcess(issued.processId), [])
          assert.equal(await store.grants.get(issued.processId), undefined)
          // The wallet's credential still points at the list: served, its bit as it was.
          const listAfter = await statusListAt(t, entry.statusListCredential)
          assert.equal(getStatus(listAfter.bits, entry.index), STATUS_VALUES.revoked)
          assert.deepEqual(listAfter.bits, listBefore.bits)
          // The freed slot is never handed to another credential: the list takes no new entries.
          const next = await issueTo(t.app, t.clock, newHolder(), 'degree', DEGREE)
          const nextEntry = statusEntryOf(next.jwts[0] as string)
          assert.notEqual(nextEntry.statusListCredential, entry.statusListCredential)
          const list = await store.statusLists.get(entry.listId)
          assert.ok(list && list.used === list.size, 'the list is closed to new entries')
        } finally {
          await t.close()
        }
      })
    })

    describe('retention: verification sessions', () => {
      test(`EXPIRED (PENDING past ExpiredAt): kept closedFlowDays after the expiry, then deleted (${kind.name})`, async () => {
        const t = await app()
        try {
          const s = await openSession(t, 'degree-check')
          const pending = await readSession(t, s.id)
          assert.equal(pending.statusCode, 202)
          const expiredAt = Date.parse(pending.json<{ ExpiredAt: string }>().ExpiredAt)
          moveTo(t, expiredAt)
          const expected = await readSession(t, s.id)
          assert.equal(expected.json<{ Status: string }>().Status, 'EXPIRED')
          await sessionKeptThenPurged(t, s.id, expected, expiredAt)
        } finally {
          await t.close()
        }
      })

      test(`REJECTED (a wallet error): kept closedFlowDays after the answer, then deleted (${kind.name})`, async () => {
        const t = await app()
        try {
          const s = await openSession(t, 'degree-check')
          const answer = await postResponse(t.app, s.responsePath, {
            error: 'access_denied',
            state: s.request.state,
          })
          assert.equal(answer.statusCode, 200, answer.body)
          const expected = await readSession(t, s.id)
          assert.equal(expected.json<{ Status: string }>().Status, 'REJECTED')
          await sessionKeptThenPurged(
            t,
            s.id,
            expected,
            Date.parse(expected.json<{ UpdatedAt: string }>().UpdatedAt),
          )
        } finally {
          await t.close()
        }
      })

      test(`VERIFIED: kept closedFlowDays after the answer, then deleted (${kind.name})`, async () => {
        const t = await app()
        try {
          const holder = newHolder()
          const issued = await issueTo(t.app, t.clock, holder, 'degree', DEGREE)
          const s = await openSession(t, 'degree-check')
          const answer = await respond(
            t.app,
            s,
            vpJwt(holder, t.clock, s.request, [issued.jwts[0]]),
            submission(s.id, [{ id: 'UniversityDegreeCredential', index: 0 }]),
          )
          assert.equal(answer.statusCode, 200, answer.body)
          const expected = await readSession(t, s.id)
          assert.equal(expected.json<{ Status: string }>().Status, 'VERIFIED')
          await sessionKeptThenPurged(
            t,
            s.id,
            expected,
            Date.parse(expected.json<{ UpdatedAt: string }>().UpdatedAt),
          )
          // The process that issued the credential is ISSUED: it has its own, longer lifetime.
          assert.equal((await readProcess(t, issued.processId)).statusCode, 200)
        } finally {
          await t.close()
        }
      })

      test(`a PENDING session that has not expired is kept (${kind.name})`, async () => {
        const t = await app()
        try {
          const s = await openSession(t, 'degree-check')
          const expected = await readSession(t, s.id)
          const expiredAt = Date.parse(expected.json<{ ExpiredAt: string }>().ExpiredAt)
          moveTo(t, expiredAt - 1)
          assert.deepEqual(await purge(t), noPurgeCounts())
          const kept = await readSession(t, s.id)
          assert.equal(kept.statusCode, 202)
          assert.deepEqual(kept.json(), expected.json())
        } finally {
          await t.close()
        }
      })
    })

    describe('retention: webhook deliveries', () => {
      test(`delivered, failed and disabled events go closedFlowDays after their last change, with their log; pending ones stay however old (${kind.name})`, async () => {
        const t = await app()
        try {
          const { store } = t.app.services
          const settledAt = t.clock.now()
          const settled = [
            await outboxEvent(store, settledAt, 'delivered'),
            await outboxEvent(store, settledAt, 'failed'),
            await outboxEvent(store, settledAt, 'disabled'),
          ]
          const pending = [
            await outboxEvent(store, settledAt, 'new'),
            await outboxEvent(store, settledAt, 'retry'),
            await outboxEvent(store, settledAt, 'leased'),
          ]
          const expected = new Map<string, LightMyRequestResponse>()
          for (const id of [...settled, ...pending]) expected.set(id, await readDelivery(t, id))
          for (const id of settled) assert.equal(expected.get(id)?.json<{ log: unknown[] }>().log.length, 1)

          moveTo(t, settledAt + CLOSED)
          assert.deepEqual(await purge(t), noPurgeCounts())
          for (const id of [...settled, ...pending]) {
            const kept = await readDelivery(t, id)
            assert.equal(kept.statusCode, 200, kept.body)
            assert.deepEqual(kept.json(), expected.get(id)?.json(), 'read exactly as before')
          }

          t.clock.advance(1)
          assert.deepEqual(await purge(t), only({ webhookEvents: 3 }))
          const unknown = `msg_${randomUUID()}`
          for (const id of settled) {
            assertLikeUnknown(
              await readDelivery(t, id),
              await readDelivery(t, unknown),
              { gone: id, unknown },
              'webhook_delivery_not_found',
            )
            assert.deepEqual(await store.webhooks.attempts(id), [], 'the attempt log went with it')
          }

          t.clock.advance(10 * 365 * DAY)
          assert.deepEqual(await purge(t), noPurgeCounts(), 'a pending delivery is never purged')
          for (const id of pending) {
            const kept = await readDelivery(t, id)
            assert.equal(kept.statusCode, 200, kept.body)
            assert.deepEqual(kept.json(), expected.get(id)?.json())
          }
        } finally {
          await t.close()
        }
      })

      // A redelivery (WebhookService.redeliver's requeue) on another instance commits while the purge holds
      // the settled event it chose: the event is pending again, and its log must stay with it.
      if (kind.name === 'PostgreSQL')
        test(`an event redelivered while the purge is choosing it keeps its attempt log (${kind.name})`, async () => {
          const db = await databases.fresh('retention')
          const t = await appOn(db)
          try {
            const { store } = t.app.services
            const settledAt = t.clock.now()
            const id = await outboxEvent(store, settledAt, 'delivered')
            const log = await store.webhooks.attempts(id)
            assert.equal(log.length, 1)
            moveTo(t, settledAt + CLOSED + 1)
            const now = t.clock.now()
            const counts = await purgeRacing(
              t,
              db,
              `UPDATE webhook_events SET state = 'pending', attempts = 0, next_attempt_at = $1, lease_until = NULL,
                lease_owner = NULL, updated_at = $1 WHERE id = $2 AND state <> 'pending'`,
              [now, id],
            )
            assert.deepEqual(counts, noPurgeCounts(), 'pending again: not purged')
            assert.equal((await store.webhooks.get(id))?.state, 'pending')
            assert.deepEqual(await store.webhooks.attempts(id), log, 'the attempt log stays with its event')
          } finally {
            await t.close()
          }
        })
    })

    describe('retention: used nonces', () => {
      test(`a used c_nonce is kept while it could be replayed, and deleted once past its expiry and a grace of 5 min (${kind.name})`, async () => {
        const t = await app()
        try {
          const { store } = t.app.services
          const expiresAt = t.clock.now() + 300_000
          const values = [randomUUID(), randomUUID(), randomUUID()]
          for (const value of values) assert.ok(await store.nonces.use(value, 'demo', expiresAt))
          moveTo(t, expiresAt + 300_000)
          assert.deepEqual(await purge(t), noPurgeCounts())
          for (const value of values)
            assert.equal(await store.nonces.use(value, 'demo', expiresAt), false, 'still recorded')
          t.clock.advance(1)
          assert.deepEqual(await purge(t), only({ nonces: 3 }))
          assert.deepEqual(await purge(t), noPurgeCounts())
        } finally {
          await t.close()
        }
      })
    })

    describe('retention: batches', () => {
      let t: TestApp
      before(async () => {
        t = await app()
      })
      after(() => t.close())

      /** The app's store, recording what each of its transactions purged. */
      function recording(store: Store) {
        const transactions: number[] = []
        let open = 0
        let mostOpen = 0
        const wrapped = new Proxy(store, {
          get(target, property, receiver) {
            if (property !== 'transaction') return Reflect.get(target, property, receiver)
            return async <T>(work: (repos: Repositories) => Promise<T>) => {
              mostOpen = Math.max(mostOpen, ++open)
              try {
                const result = await target.transaction(work)
                transactions.push(purged(result as PurgeCounts))
                return result
              } finally {
                open--
              }
            }
          },
        })
        return { store: wrapped, transactions, mostOpen: () => mostOpen }
      }

      test(`a backlog goes in bounded transactions, all of it, and a second run finds nothing (${kind.name})`, async () => {
        const { store } = t.app.services
        const old = t.clock.now()
        const processes = 1_100
        const events = 130
        const nonces = 420
        await store.transaction(async (repos) => {
          for (let i = 0; i < processes; i++) {
            const id = randomUUID()
            await repos.processes.create(rejectedProcess(id, old))
            await repos.grants.create(grantOf(id, old))
          }
          for (let i = 0; i < nonces; i++) await repos.nonces.use(randomUUID(), 'demo', old)
        })
        for (let i = 0; i < events; i++) await outboxEvent(store, old, 'delivered')
        t.clock.advance(CLOSED + 1)

        const batchSize = 200
        const recorder = recording(store)
        const purge = new RetentionPurge({
          store: recorder.store,
          clock: t.clock,
          options: POLICY,
          batchSize,
        })
        const report = await purge.runOnce()
        assert.deepEqual(report.counts, only({ rejectedProcesses: processes, webhookEvents: events, nonces }))
        const total = processes + events + nonces
        assert.equal(report.batches, Math.floor(total / batchSize) + 1)
        assert.equal(recorder.transactions.length, report.batches)
        assert.ok(
          recorder.transactions.every((n) => n <= batchSize),
          `every transaction purged at most ${batchSize}: ${recorder.transactions}`,
        )
        assert.equal(
          recorder.transactions.reduce((a, b) => a + b, 0),
          total,
        )

        const again = await purge.runOnce()
        assert.deepEqual(again.counts, noPurgeCounts())
        assert.equal(again.batches, 1)
        assert.deepEqual(await t.app.services.retention.runOnce().then((r) => r.counts), noPurgeCounts())
      })

      test(`runs never overlap: a second runOnce waits for the one under way (${kind.name})`, async () => {
        const { store } = t.app.services
        const old = t.clock.now()
        await store.transaction(async (repos) => {
          for (let i = 0; i < 300; i++) {
            const id = randomUUID()
            await repos.processes.create(rejectedProcess(id, old))
            await repos.grants.create(grantOf(id, old))
          }
        })
        t.clock.advance(CLOSED + 1)
        const recorder = recording(store)
        const purge = new RetentionPurge({
          store: recorder.store,
          clock: t.clock,
          options: POLICY,
          batchSize: 50,
        })
        const [first, second] = await Promise.all([purge.runOnce(), purge.runOnce()])
        assert.equal(recorder.mostOpen(), 1, 'one transaction at a time')
        assert.equal(first.counts.rejectedProcesses, 300)
        assert.deepEqual(second.counts, noPurgeCounts())
      })
    })
  })
}

function statusEntryOf(jwt: string) {
  const { payload } = decodeJws(jwt)
  const status = (payload as { vc: { credentialStatus: Record<string, string> } }).vc.credentialStatus
  const statusListCredential = String(status.statusListCredential)
  return {
    statusListCredential,
    index: Number(status.statusListIndex),
    listId: statusListCredential.split('/').pop() ?? '',
  }
}

async function statusListAt(t: TestApp, url: string) {
  const response = await t.app.inject({ url: new URL(url).pathname })
  assert.equal(response.statusCode, 200, response.body)
  return readStatusList(decodeJws(response.body).payload)
}

/** An outbox row of the demo tenant's vid-check template, written as the dispatcher would have left it. */
async function outboxEvent(
  store: Store,
  now: number,
  outcome: 'delivered' | 'failed' | 'disabled' | 'retry' | 'leased' | 'new',
): Promise<string> {
  const event: WebhookEventRecord = {
    id: `msg_${randomUUID()}`,
    tenantId: 'demo',
    templateId: 'vid-check',
    templateKind: 'verification',
    subjectId: randomUUID(),
    type: 'verification.verified',
    url: 'https://rp.example/hooks/vid-check',
    body: '{"status":"SUCCESS"}',
    state: 'pending',
    attempts: 0,
    nextAttemptAt: now,
    leaseUntil: null,
    lastStatus: null,
    lastError: null,
    createdAt: now,
    updatedAt: now,
    deliveredAt: null,
  }
  await store.webhooks.enqueue(event)
  if (outcome === 'new') return event.id
  if (outcome === 'leased') {
    assert.ok(await store.webhooks.claim(event.id, now, now + 60_000))
    return event.id
  }
  const state = outcome === 'retry' ? 'pending' : outcome
  const status = { delivered: 204, failed: 400, disabled: 410, retry: 503 }[outcome]
  await store.webhooks.recordAttempt(
    {
      ...event,
      state,
      attempts: 1,
      nextAttemptAt: outcome === 'retry' ? now + 1000 : null,
      lastStatus: status,
      updatedAt: now,
      deliveredAt: outcome === 'delivered' ? now : null,
    },
    {
      eventId: event.id,
      attempt: 1,
      at: now,
      durationMs: 3,
      status,
      error: outcome === 'delivered' ? null : `the receiver answered ${status}`,
      outcome: outcome === 'retry' ? 'retry' : outcome,
      nextAttemptAt: outcome === 'retry' ? now + 1000 : null,
      trigger: 'automatic',
    },
  )
  return event.id
}

function rejectedProcess(id: string, at: number): ProcessRecord {
  return {
    id,
    tenantId: 'demo',
    templateId: 'degree',
    type: 'OIDC4VCI_PRE_AUTHORIZED',
    status: 'REJECTED',
    data: null,
    validator: null,
    submitted: null,
    rejectedReason: 'seeded',
    createdByKey: WIDE_APP.id,
    createdAt: at,
    updatedAt: at,
  }
}

function grantOf(processId: string, at: number): GrantRecord {
  return {
    processId,
    tenantId: 'demo',
    codeHash: randomUUID(),
    codeExpiresAt: at + 600_000,
    txCodeHash: null,
    txFailures: 0,
    codeState: 'live',
    tokenHash: null,
    tokenExpiresAt: null,
    holderDid: null,
    credentialRequestedAt: null,
    transactionId: null,
    redeemedAt: null,
    notificationId: null,
    notificationEvent: null,
    tokenJkt: null,
  }
}

describe('retention: the schedule', () => {
  /** A store whose every transaction is one purge batch answered by `batch`. */
  function fakeStore(batch: () => Promise<PurgeCounts>) {
    const calls: number[] = []
    const store = {
      transaction: async <T>(work: (repos: Repositories) => Promise<T>) =>
        work({
          retention: {
            purgeBatch: async (now: number) => {
              calls.push(now)
              return batch()
            },
          },
        } as unknown as Repositories),
    } as unknown as Store
    return { store, calls }
  }
  const settle = () => new Promise((resolve) => setImmediate(resolve))

  test('first run 60–120 s after start, then every purgeIntervalSeconds ±10 %; a failing run is logged and the next one comes', async (ctx) => {
    mock.timers.enable({ apis: ['setTimeout'] })
    ctx.after(() => mock.timers.reset())
    let fail = true
    const { store, calls } = fakeStore(async () => {
      if (fail) throw new Error('database is locked')
      return noPurgeCounts()
    })
    const logged: string[] = []
    const log = { info: () => {}, error: (_: object, message: string) => logged.push(message) }
    let now = 1_000
    const purge = new RetentionPurge({
      store,
      clock: { now: () => now },
      options: POLICY,
      log,
      random: () => 0.5,
    })
    purge.start()
    mock.timers.tick(89_999)
    await settle()
    assert.equal(calls.length, 0, 'not before 60 s + jitter (here 90 s)')
    now = 2_000
    mock.timers.tick(1)
    await settle()
    await settle()
    assert.deepEqual(calls, [2_000])
    assert.equal(logged.length, 1, 'the failure is logged, not thrown')

    fail = false
    now = 3_000
    mock.timers.tick(POLICY.purgeIntervalSeconds * 1000)
    await settle()
    await settle()
    assert.deepEqual(calls, [2_000, 3_000], 'the next run came after the interval')

    await purge.stop()
    mock.timers.tick(10 * POLICY.purgeIntervalSeconds * 1000)
    await settle()
    assert.equal(calls.length, 2, 'no run after stop()')
    await assert.rejects(purge.runOnce(), /stopped/)
  })

  test('the app answers runOnce while it runs, and stops the purge on close', async () => {
    const t = await makeApp(verificationConfig())
    await t.app.ready()
    const { retention } = t.app.services
    assert.deepEqual((await retention.runOnce()).counts, noPurgeCounts())
    await t.close()
    await assert.rejects(retention.runOnce(), /stopped/)
  })
})
