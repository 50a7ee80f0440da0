import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { HandedOutSessions } from '../../../src/service/oid4vp/handed-out.ts'
import type { SessionRecord } from '../../../src/service/store/index.ts'
import { isoTime } from '../../../src/service/util/clock.ts'
import { STORE_KINDS } from '../../fixtures/stores.ts'
import { makeApp, type TestApp, tokenFor } from '../../helpers.ts'
import { DEGREE, expectOAuth, type Holder, issueTo, newHolder } from '../../oid4vci-helpers.ts'
import {
  createSession,
  getRequest,
  type OpenSession,
  OTHER_WIDE,
  openSession,
  recordSessionEvents,
  respond,
  submission,
  verificationConfig,
  vpJwt,
  WIDE_APP,
} from '../../verification-helpers.ts'

// Issue 20: the wallet's first GET of request_uri is one SQL statement, the conditional write of requestedAt
// returning the row (store.sessions.markRequestedReturning). Every fetch it refuses (unknown, another
// tenant's, expired, closed, by value) writes nothing and answers as before, from the read that follows; a
// fetch after the first is that write (writing nothing) and the read. On both stores (test/fixtures/stores.ts).
// On PostgreSQL each announced event is also handed to the change feed (postgres-feed.ts), which sends it only
// when another instance listens (issue 38): this instance is alone, so the figures are the repository's
// statements on both stores, with no `pg_notify`.

for (const kind of STORE_KINDS) {
  describe(`request object fetch: statements and refusals (${kind.name})`, { skip: kind.skip }, () => {
    const databases = kind.use()
    let t: TestApp
    let wide: string
    before(async () => {
      t = await makeApp(verificationConfig(), await databases.fresh('oid4vp request statements'))
      wide = await tokenFor(t.app, WIDE_APP)
      // Nothing else runs statements while a fetch is counted: no outbox scan (PostgreSQL polls every second).
      await t.app.services.webhookDispatcher.stop()
      const feed = t.app.services.store.feed
      if (feed) {
        const publish = feed.publishEvent.bind(feed)
        feed.publishEvent = (event) => {
          notified++
          const sent = publish(event)
          publishing.push(sent.catch(() => {}))
          return sent
        }
      }
    })
    after(() => t?.close())

    /** Change-feed notifications (PostgreSQL): how many, and those still on their way. */
    let notified = 0
    const publishing: Promise<unknown>[] = []
    const settled = async () => {
      while (publishing.length > 0) await publishing.shift()
    }

    const store = () => t.app.services.store
    const row = async (id: string) => {
      const session = await store().sessions.get(id)
      assert.ok(session, `session ${id} is stored`)
      return session
    }
    /**
     * GET path: the response, the statements it ran (an instance alone sends no notification) and the
     * verification events it announced.
     */
    async function fetchCounted(path: string) {
      await settled()
      const recorder = recordSessionEvents(t.app)
      const before = store().stats.statements
      const notifiedBefore = notified
      try {
        const response = await getRequest(t.app, path)
        await settled()
        const notifications = notified - notifiedBefore
        assert.equal(notifications, store().feed ? recorder.events.length : 0, 'one notification an event')
        return {
          response,
          statements: store().stats.statements - before,
          events: recorder.events,
        }
      } finally {
        recorder.stop()
      }
    }
    /** A refusal: exactly this status and body, nothing announced, the row as it was. */
    async function refused(path: string, id: string, status: number, body: Record<string, string>) {
      const stored = await store().sessions.get(id)
      const { response, statements, events } = await fetchCounted(path)
      assert.equal(response.statusCode, status, response.body)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      assert.deepEqual(response.json(), body)
      assert.deepEqual(events, [], 'nothing announced')
      assert.equal(statements, 2, 'the conditional write (no row) and the read that decides the error')
      assert.deepEqual(await store().sessions.get(id), stored, 'the row is unchanged')
    }

    test('the first fetch is one statement: requestedAt written, the row answered, announced once', async () => {
      const s = await createSession(t.app, wide, 'degree-check')
      const before = await row(s.id)
      assert.equal(before.requestedAt, null)
      t.clock.advance(1500)
      const at = t.clock.now()
      const { response, statements, events } = await fetchCounted(s.requestPath)
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.body, before.requestJwt)
      assert.equal(statements, 1, 'UPDATE … RETURNING only')
      assert.deepEqual(await row(s.id), { ...before, requestedAt: at }, 'only requestedAt changed')
      assert.deepEqual(
        events.map((e) => [e.sessionId, e.status, e.step, e.at]),
        [[s.id, 'PENDING', 'request_retrieved', at]],
      )
    })

    test('a second fetch: the same object, requestedAt kept, not announced again, two statements', async () => {
      const s = await createSession(t.app, wide, 'degree-check')
      const first = await fetchCounted(s.requestPath)
      assert.equal(first.statements, 1)
      const stored = await row(s.id)
      t.clock.advance(1500)
      const second = await fetchCounted(s.requestPath)
      assert.equal(second.response.statusCode, 200, second.response.body)
      assert.equal(second.response.body, first.response.body)
      assert.equal(second.statements, 2, 'the write (no row) and the read')
      assert.deepEqual(second.events, [])
      assert.deepEqual(await row(s.id), stored)
    })

    test('unknown id: 404 not_found', async () => {
      const id = '00000000-0000-4000-8000-000000000000'
      const { response, statements } = await fetchCounted(`/oid4vp/demo/requests/${id}`)
      assert.equal(response.statusCode, 404)
      assert.deepEqual(response.json(), {
        error: 'not_found',
        error_description: `no verification session "${id}"`,
      })
      assert.equal(statements, 2)
      assert.equal(await store().sessions.get(id), undefined)
    })

    test('another tenant’s path: 404 not_found like an unknown id, requestedAt not written', async () => {
      const s = await createSession(t.app, wide, 'degree-check')
      const notFound = { error: 'not_found', error_description: `no verification session "${s.id}"` }
      await refused(s.requestPath.replace('/demo/', '/other/'), s.id, 404, notFound)
      await refused(s.requestPath.replace('/demo/', '/nobody/'), s.id, 404, notFound)
      const other = await createSession(t.app, await tokenFor(t.app, OTHER_WIDE), 'other-check')
      await refused(other.requestPath.replace('/other/', '/demo/'), other.id, 404, {
        error: 'not_found',
        error_description: `no verification session "${other.id}"`,
      })
      assert.equal((await row(s.id)).requestedAt, null)
      assert.equal((await row(other.id)).requestedAt, null)
    })

    test('expired (now = expiresAt): 410 session_expired, requestedAt not written; a millisecond before: 200', async () => {
      const late = await createSession(t.app, wide, 'vid-check')
      const alive = await createSession(t.app, wide, 'vid-check')
      const { expiresAt } = await row(late.id)
      assert.equal((await row(alive.id)).expiresAt, expiresAt)
      t.clock.advance(expiresAt - 1 - t.clock.now())
      const lastInstant = await fetchCounted(alive.requestPath)
      assert.equal(lastInstant.response.statusCode, 200, lastInstant.response.body)
      assert.equal(lastInstant.statements, 1)
      assert.equal((await row(alive.id)).requestedAt, expiresAt - 1)
      t.clock.advance(1)
      await refused(late.requestPath, late.id, 410, {
        error: 'session_expired',
        error_description: `verification session "${late.id}" expired at ${isoTime(expiresAt)}`,
      })
      assert.equal((await row(late.id)).requestedAt, null)
      // fetched before it expired: the same 410, and its requestedAt stays
      await refused(alive.requestPath, alive.id, 410, {
        error: 'session_expired',
        error_description: `verification session "${alive.id}" expired at ${isoTime(expiresAt)}`,
      })
    })

    test('closed before any fetch: 409 session_closed, requestedAt not written', async () => {
      for (const status of ['VERIFIED', 'REJECTED'] as const) {
        const s = await createSession(t.app, wide, 'degree-check')
        const now = t.clock.now()
        const stored = await row(s.id)
        assert.equal(await store().sessions.complete({ ...stored, status, updatedAt: now }, now), true)
        await refused(s.requestPath, s.id, 409, {
          error: 'session_closed',
          error_description: `verification session "${s.id}" is already ${status}`,
        })
        assert.equal((await row(s.id)).requestedAt, null)
      }
    })

    test('a session whose request goes by value: 404 not_found, requestedAt not written', async () => {
      const s = await createSession(t.app, wide, 'degree-check')
      const id = '11111111-0000-4000-8000-000000000001'
      const byValue: SessionRecord = { ...(await row(s.id)), id, requestJwt: '' }
      await store().sessions.create(byValue)
      await refused(s.requestPath.replace(s.id, id), id, 404, {
        error: 'not_found',
        error_description: `verification session "${id}" sends its request by value (client identifier prefix redirect_uri, OpenID4VP 1.0 §5.9.3): it has no request object`,
      })
      assert.equal((await row(id)).requestedAt, null)
    })
  })
}

// The wallet's response after the request object was handed out (oid4vp/handed-out.ts): judged on the session
// as handed out, without reading it again; its state is judged by the conditional write of the outcome. The
// counts are SQLite's (BEGIN/COMMIT are statements there).
describe('the response to a session whose request object this process handed out', () => {
  const DEGREE_ID = 'UniversityDegreeCredential'
  let t: TestApp
  let holder: Holder
  let jwt: string
  before(async () => {
    t = await makeApp(verificationConfig())
    await t.app.services.webhookDispatcher.stop()
    holder = newHolder('EdDSA')
    jwt = (await issueTo(t.app, t.clock, holder, 'degree', DEGREE)).jwts[0] as string
  })
  after(() => t?.close())

  const store = () => t.app.services.store
  const good = (s: OpenSession) =>
    respond(
      t.app,
      s,
      vpJwt(holder, t.clock, s.request, [jwt]),
      submission(s.id, [{ id: DEGREE_ID, index: 0 }]),
    )
  async function counted<T>(work: () => Promise<T>): Promise<{ value: T; statements: number }> {
    const before = store().stats.statements
    const value = await work()
    return { value, statements: store().stats.statements - before }
  }

  test('a good response reads nothing: BEGIN, the outcome, COMMIT', async () => {
    // The first presentation reads the credential's status list (kept for the next ones).
    assert.equal((await good(await openSession(t, 'degree-check'))).statusCode, 200)
    const s = await openSession(t, 'degree-check')
    const { value: response, statements } = await counted(() => good(s))
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(statements, 3, 'no read of the session (this template sends no webhook)')
    assert.equal((await store().sessions.get(s.id))?.status, 'VERIFIED')
  })

  test('a second response reads the session anew: 409 session_closed, the outcome kept', async () => {
    const s = await openSession(t, 'degree-check')
    assert.equal((await good(s)).statusCode, 200)
    const stored = await store().sessions.get(s.id)
    const { value: again, statements } = await counted(() =>
      respond(t.app, s, 'not-even-a-jwt', {}, { state: 'wrong state' }),
    )
    expectOAuth(again, 409, 'session_closed')
    assert.equal(statements, 1, 'the read that decides the answer')
    assert.deepEqual(await store().sessions.get(s.id), stored)
  })

  test('closed meanwhile by someone else (another instance): nothing written, 409 session_closed', async () => {
    const s = await openSession(t, 'degree-check')
    const now = t.clock.now()
    const stored = await store().sessions.get(s.id)
    assert.ok(stored)
    assert.equal(
      await store().sessions.complete({ ...stored, status: 'REJECTED', updatedAt: now }, now),
      true,
    )
    const closed = await store().sessions.get(s.id)
    const response = await good(s)
    expectOAuth(response, 409, 'session_closed')
    assert.deepEqual(await store().sessions.get(s.id), closed, 'the other outcome stays')
    const events = await store().webhooks.listByTemplate('demo', 'degree-check', { limit: 50 })
    assert.equal(events.filter((e) => e.subjectId === s.id).length, 0, 'no webhook event for it')
  })

  test('expired while held: 410 session_expired, nothing written', async () => {
    const s = await openSession(t, 'vid-check')
    const stored = await store().sessions.get(s.id)
    assert.ok(stored)
    t.clock.advance(stored.expiresAt - t.clock.now())
    const response = await respond(t.app, s, 'x', {})
    expectOAuth(response, 410, 'session_expired')
    assert.deepEqual(await store().sessions.get(s.id), stored)
  })

  test('another tenant’s response path is 404 although the session is held', async () => {
    const s = await openSession(t, 'degree-check')
    const response = await respond(
      t.app,
      { ...s, responsePath: s.responsePath.replace('/demo/', '/other/') },
      'x',
      {},
    )
    expectOAuth(response, 404, 'not_found')
    assert.equal((await store().sessions.get(s.id))?.status, 'PENDING')
  })
})

describe('HandedOutSessions: bounded in count and time', () => {
  const session = (id: string, expiresAt = 10_000, tenantId = 'demo') =>
    ({ id, tenantId, status: 'PENDING', expiresAt }) as SessionRecord

  test('the oldest goes first beyond the bound; only PENDING sessions are held', () => {
    const held = new HandedOutSessions(60_000, 2)
    held.remember(session('a'), 0)
    held.remember(session('b'), 0)
    held.remember(session('c'), 0)
    held.remember({ ...session('d'), status: 'VERIFIED' }, 0)
    assert.equal(held.size, 2)
    assert.equal(held.recall('demo', 'a', 1), undefined)
    assert.equal(held.recall('demo', 'b', 1)?.id, 'b')
    assert.equal(held.recall('demo', 'd', 1), undefined)
  })

  test('held until the window or the expiry, whichever is first; another tenant never gets it', () => {
    const held = new HandedOutSessions(1_000, 10)
    held.remember(session('short', 500), 0)
    held.remember(session('long', 99_000), 0)
    assert.equal(held.recall('other', 'long', 1), undefined)
    assert.equal(held.recall('demo', 'short', 499)?.id, 'short')
    assert.equal(held.recall('demo', 'short', 500), undefined, 'expired: read anew')
    assert.equal(held.recall('demo', 'long', 999)?.id, 'long')
    assert.equal(held.recall('demo', 'long', 1_000), undefined, 'the window passed')
    assert.equal(held.size, 0)
  })
})
