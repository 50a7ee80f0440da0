import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildApp } from '../../src/service/app.ts'
import { parseConfig, type ServiceConfig } from '../../src/service/config/index.ts'
import { TokenBuckets } from '../../src/service/rate-limit.ts'
import { ManualClock } from '../../src/service/util/clock.ts'
import { basic, DEMO, demoConfig, problemOf } from '../helpers.ts'

// Issue 19: 1,500 wrong-secret logins ran at ~5,000/s with no slowdown, and the anonymous wallet-facing
// endpoints took any rate from one client. docs/security.md "Rate limits" is the contract.

const ATTACKER = '203.0.113.7'
const OTHER_CLIENT = '198.51.100.20'

function config(changes: Record<string, unknown>): ServiceConfig {
  const raw = structuredClone(demoConfig()) as unknown as Record<string, unknown>
  return parseConfig({ ...raw, rateLimits: changes })
}

async function appWith(changes: Record<string, unknown>) {
  const clock = new ManualClock(Date.parse('2026-11-22T10:15:00.123Z'))
  const app = await buildApp({ config: config(changes), clock, publicUrl: () => 'https://issuer.example' })
  const login = (id: string, secret: string, remoteAddress = ATTACKER) =>
    app.inject({
      method: 'POST',
      url: '/admin/v1/api_keys/login',
      remoteAddress,
      headers: { authorization: basic(id, secret), tenant: DEMO.app.tenant },
    })
  return { app, clock, login }
}

describe('rate limits: failed logins', () => {
  let t: Awaited<ReturnType<typeof appWith>>
  before(async () => {
    t = await appWith({ loginFailuresPerKeyPerMinute: 10, loginFailuresPerClientPerMinute: 30 })
  })
  after(() => t.app.close())

  test('per key id: 10 failures, then 429 problem+json with Retry-After, even for the right secret', async () => {
    for (let i = 0; i < 10; i++) {
      assert.equal((await t.login(DEMO.app.id, `wrong-secret-${i}`)).statusCode, 401)
    }
    const blocked = await t.login(DEMO.app.id, DEMO.app.secret)
    assert.equal(blocked.statusCode, 429, blocked.body)
    assert.match(String(blocked.headers['content-type']), /^application\/problem\+json/)
    const problem = problemOf(blocked)
    assert.equal(problem.code, 'too_many_requests')
    assert.match(problem.detail, /more than 10 failed logins per minute for this API key id; retry after 6 s/)
    assert.equal(blocked.headers['retry-after'], '6')
    // The key's owner from another address is held too: the limit protects the key, not the address.
    assert.equal((await t.login(DEMO.app.id, DEMO.app.secret, OTHER_CLIENT)).statusCode, 429)
    t.clock.advance(6_000)
    assert.equal(
      (await t.login(DEMO.app.id, DEMO.app.secret, OTHER_CLIENT)).statusCode,
      200,
      'a token is back',
    )
    // A success spends nothing; another key of the tenant was never affected.
    assert.equal((await t.login(DEMO.admin.id, DEMO.admin.secret)).statusCode, 200)
  })

  test('an unknown key id is limited exactly like a known one (the limit tells nothing about which ids exist)', async () => {
    const unknown = '00000000-0000-4000-8000-00000000abcd'
    const statuses: number[] = []
    for (let i = 0; i < 11; i++) statuses.push((await t.login(unknown, 'x', OTHER_CLIENT)).statusCode)
    assert.deepEqual(statuses, [...Array(10).fill(401), 429])
    t.clock.advance(60_000)
  })

  test('per client address: 30 failures over many key ids, then 429 for that address only', async () => {
    for (let i = 0; i < 30; i++) {
      const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`
      assert.equal((await t.login(id, 'guess')).statusCode, 401)
    }
    const blocked = await t.login(DEMO.operator.id, DEMO.operator.secret)
    assert.equal(blocked.statusCode, 429)
    assert.match(problemOf(blocked).detail, /more than 30 failed logins per minute from this address/)
    assert.equal((await t.login(DEMO.operator.id, DEMO.operator.secret, OTHER_CLIENT)).statusCode, 200)
    t.clock.advance(2_000)
    assert.equal((await t.login(DEMO.operator.id, DEMO.operator.secret)).statusCode, 200, 'one every 2 s')
  })
})

describe('rate limits: exemptions', () => {
  test('a listed address, and loopback in webhooks.mode "test", are never limited; loopback in production is', async () => {
    const listed = await appWith({ loginFailuresPerKeyPerMinute: 1, exempt: [ATTACKER] })
    try {
      for (let i = 0; i < 5; i++) assert.equal((await listed.login(DEMO.app.id, 'wrong')).statusCode, 401)
      for (let i = 0; i < 5; i++) {
        assert.equal((await listed.login(DEMO.app.id, 'wrong', '127.0.0.1')).statusCode, 401, 'test mode')
      }
      assert.equal((await listed.login(DEMO.app.id, 'wrong', '::ffff:127.0.0.1')).statusCode, 401)
      assert.equal((await listed.login(DEMO.app.id, 'wrong', OTHER_CLIENT)).statusCode, 401)
      assert.equal((await listed.login(DEMO.app.id, 'wrong', OTHER_CLIENT)).statusCode, 429)
    } finally {
      await listed.app.close()
    }
    const raw = structuredClone(demoConfig()) as unknown as Record<string, unknown>
    const production = parseConfig({
      ...raw,
      webhooks: { mode: 'production' },
      rateLimits: { loginFailuresPerKeyPerMinute: 1 },
    })
    const app = await buildApp({ config: production, clock: new ManualClock(0) })
    try {
      const login = () =>
        app.inject({
          method: 'POST',
          url: '/admin/v1/api_keys/login',
          headers: { authorization: basic(DEMO.app.id, 'wrong'), tenant: DEMO.app.tenant },
        })
      assert.equal((await login()).statusCode, 401)
      assert.equal((await login()).statusCode, 429, 'loopback is a client like any other in production')
    } finally {
      await app.close()
    }
  })

  test('a bad exempt address or trustProxy entry is a configuration error naming it', () => {
    assert.throws(
      () => config({ exempt: ['not-an-ip'] }),
      /\/rateLimits\/exempt\/0: "not-an-ip" is not an IPv4/,
    )
    const raw = structuredClone(demoConfig()) as unknown as Record<string, unknown>
    assert.throws(
      () => parseConfig({ ...raw, http: { trustProxy: ['10.0.0.0/40'] } }),
      /\/http\/trustProxy\/0: "10.0.0.0\/40" is not an address, a CIDR range/,
    )
    assert.throws(
      () => parseConfig({ ...raw, http: { requestTimeoutMs: 5000, headersTimeoutMs: 6000 } }),
      /\/http\/headersTimeoutMs: must not exceed requestTimeoutMs/,
    )
  })
})

describe('rate limits: wallet-facing endpoints', () => {
  test('per client: 60 a minute in a burst, then 429 slow_down (OAuth shape) with Retry-After; others unaffected', async () => {
    const t = await appWith({ walletPerClientPerMinute: 60 })
    try {
      const nonce = (remoteAddress = ATTACKER) =>
        t.app.inject({ method: 'POST', url: '/oid4vci/demo/nonce', remoteAddress })
      const metadata = (remoteAddress = ATTACKER) =>
        t.app.inject({ url: '/.well-known/openid-credential-issuer/oid4vci/demo', remoteAddress })
      for (let i = 0; i < 30; i++) assert.equal((await nonce()).statusCode, 200)
      for (let i = 0; i < 30; i++) assert.equal((await metadata()).statusCode, 200)
      const blocked = await nonce()
      assert.equal(blocked.statusCode, 429, blocked.body)
      assert.match(String(blocked.headers['content-type']), /^application\/json/)
      assert.equal(blocked.headers['retry-after'], '1')
      assert.equal(blocked.headers['cache-control'], 'no-store')
      const body = blocked.json()
      assert.equal(body.error, 'slow_down')
      assert.match(body.error_description, /more than 60 wallet-facing requests per minute from this address/)
      assert.equal((await nonce(OTHER_CLIENT)).statusCode, 200, 'another client')
      assert.equal((await t.app.inject({ url: '/health', remoteAddress: ATTACKER })).statusCode, 200)
      t.clock.advance(1_000)
      assert.equal((await nonce()).statusCode, 200, 'one a second comes back')
      assert.equal((await nonce()).statusCode, 429)
    } finally {
      await t.app.close()
    }
  })

  test('0 turns a limit off', async () => {
    const t = await appWith({ walletPerClientPerMinute: 0, loginFailuresPerKeyPerMinute: 0 })
    try {
      for (let i = 0; i < 100; i++) {
        assert.equal(
          (await t.app.inject({ method: 'POST', url: '/oid4vci/demo/nonce', remoteAddress: ATTACKER }))
            .statusCode,
          200,
        )
      }
      for (let i = 0; i < 20; i++) assert.equal((await t.login(DEMO.app.id, 'wrong')).statusCode, 401)
    } finally {
      await t.app.close()
    }
  })
})

describe('token buckets', () => {
  test('refill at perMinute/60 a second up to perMinute; memory stays bounded', () => {
    const clock = new ManualClock(0)
    const buckets = new TokenBuckets(6, clock, 3)
    for (let i = 0; i < 6; i++) assert.equal(buckets.take('a'), 0)
    assert.equal(buckets.take('a'), 10, 'one token every 10 s')
    clock.advance(9_000)
    assert.equal(buckets.take('a'), 1)
    clock.advance(1_000)
    assert.equal(buckets.take('a'), 0)
    for (const key of ['b', 'c', 'd']) buckets.take(key)
    // 'a' was the least recently used of four with room for three: forgotten, so it starts full again.
    assert.equal(buckets.wait('a'), 0)
    for (let i = 0; i < 6; i++) assert.equal(buckets.take('a'), 0)
  })
})
