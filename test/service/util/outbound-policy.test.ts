import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { describe, test } from 'node:test'
import { deflateSync } from 'node:zlib'
import { parseConfig, type ServiceConfig } from '../../../src/service/config/index.ts'
import {
  RemoteStatusLists,
  StatusChecker,
  StatusListCache,
  statusListCacheUntil,
} from '../../../src/service/credentials/status.ts'
import { ManualClock } from '../../../src/service/util/clock.ts'
import type { Resolver, TargetPolicy } from '../../../src/service/util/net-targets.ts'
import { fetchOutbound, OutboundError, type OutboundOptions } from '../../../src/service/util/outbound.ts'
import { emptyBitstring, encodeList } from '../../../src/shared/bitstring.ts'
import { signJws } from '../../../src/shared/jws.ts'
import { makeApp, type TestApp } from '../../helpers.ts'
import { expectOAuth, type Holder, newHolder } from '../../oid4vci-helpers.ts'
import {
  checksWith,
  openSession,
  readSession,
  respond,
  type SigningKey,
  signCredential,
  submission,
  verificationConfig,
  vpJwt,
} from '../../verification-helpers.ts'

// Issue 30: one outbound-request policy for every fetch the service makes on someone else's say-so
// (util/outbound.ts), and the shared, bounded status-list cache (credentials/status.ts). Each attack of
// the black-box run is replayed against a local server that records every connection, so "refused"
// means "nothing left the process", not only "an error came back".

type Handler = (request: IncomingMessage, response: ServerResponse) => void

/** A server on 127.0.0.1 that counts connections and requests, answering by path. */
async function recordingServer(routes: Record<string, Handler>) {
  const seen = { connections: 0, requests: [] as string[] }
  const server = createServer((request, response) => {
    seen.requests.push(request.url ?? '')
    const route = routes[(request.url ?? '').split('?')[0] ?? '']
    if (route) return route(request, response)
    response.writeHead(404, { 'content-type': 'text/plain' }).end('TOPSECRET admin page not found')
  })
  server.on('connection', () => seen.connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** The OutboundError `promise` rejects with (fails when it resolves or rejects with anything else). */
async function outboundError(promise: Promise<unknown>): Promise<OutboundError> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof OutboundError, `expected an OutboundError, got ${String(error)}`)
    return error
  }
  assert.fail('expected the fetch to be refused')
}

/** A resolver that answers `addresses` for every name and records the names asked. */
function fixedResolver(addresses: string[]): Resolver & { asked: string[] } {
  const asked: string[] = []
  const resolve = ((hostname, _options, callback) => {
    asked.push(hostname)
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    )
  }) as Resolver & { asked: string[] }
  resolve.asked = asked
  return resolve
}

const production: OutboundOptions = { policy: 'production' }
const JWT_TYPE = { 'content-type': 'application/jwt' }

describe('outbound policy: addresses refused before any connection (production)', () => {
  test('loopback, private, link-local, cloud metadata, ULA, IPv4-mapped and IPv4-compatible URLs', async () => {
    const server = await recordingServer({})
    const p = server.port
    try {
      const urls = [
        `http://127.0.0.1:${p}/int/admin`,
        `http://127.1:${p}/int/admin`, // the URL parser normalises it to 127.0.0.1
        `http://2130706433:${p}/int/admin`,
        `http://0x7f000001:${p}/int/admin`,
        `http://localhost:${p}/int/admin`,
        `http://status.localhost:${p}/int/admin`,
        `http://[::1]:${p}/int/admin`,
        `http://[::ffff:127.0.0.1]:${p}/int/admin`,
        `http://[::127.0.0.1]:${p}/int/admin`,
        `http://0.0.0.0:${p}/int/admin`,
        'http://10.0.0.1/int/admin',
        'http://172.16.5.4/int/admin',
        'http://192.168.1.1/int/admin',
        'http://100.64.0.1/int/admin',
        'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
        'http://[fd00:ec2::254]/latest/meta-data/',
        'http://[fc00::1]/int/admin',
        'http://[fe80::1]/int/admin',
        'http://[::ffff:10.0.0.1]/int/admin',
        'http://[::ffff:169.254.169.254]/latest/meta-data/',
        'http://[64:ff9b::7f00:1]/int/admin',
      ]
      for (const url of urls) {
        const started = performance.now()
        const error = await outboundError(fetchOutbound(url, production))
        assert.equal(error.check, 'address', `${url}: ${error.message}`)
        assert.doesNotMatch(error.message, /int\/admin|meta-data/, url)
        assert.ok(performance.now() - started < 100, `${url} refused at once`)
      }
      assert.equal(server.seen.connections, 0, 'the loopback server saw no connection')
    } finally {
      await server.close()
    }
  })

  test('a name that resolves to loopback is refused at connect (DNS rebinding); no connection is made', async () => {
    const server = await recordingServer({ '/list': (_q, r) => r.writeHead(200, JWT_TYPE).end('a.b.c') })
    try {
      const url = `http://status.issuer.example:${server.port}/list`
      const loopback = fixedResolver(['127.0.0.1'])
      const error = await outboundError(fetchOutbound(url, { ...production, resolve: loopback }))
      assert.equal(error.check, 'address', error.message)
      assert.match(error.message, /loopback/)
      assert.doesNotMatch(
        error.message,
        /127\.0\.0\.1|\/list/,
        'the resolved address and the path stay inside',
      )
      assert.deepEqual(loopback.asked, ['status.issuer.example'])
      // one bad answer among good ones taints the name (a resolver may rotate them)
      const mixed = fixedResolver(['93.184.215.14', '10.1.2.3'])
      assert.equal(
        (await outboundError(fetchOutbound(url, { ...production, resolve: mixed }))).check,
        'address',
      )
      assert.equal(server.seen.connections, 0)
      // the same name and resolver under the test policy does connect: the resolver above was the one asked
      const ok = await fetchOutbound(url, { policy: 'test', resolve: fixedResolver(['127.0.0.1']) })
      assert.equal(ok.body.toString(), 'a.b.c')
      assert.equal(server.seen.connections, 1)
    } finally {
      await server.close()
    }
  })

  test('only http(s), never credentials in the URL', async () => {
    for (const url of [
      'ftp://issuer.example/list',
      'file:///etc/passwd',
      'data:application/jwt,a.b.c',
      'not a url',
      '/relative/list',
      'https://user:pass@issuer.example/list',
    ]) {
      const error = await outboundError(fetchOutbound(url, production))
      assert.equal(error.check, 'url', `${url}: ${error.message}`)
      assert.doesNotMatch(error.message, /passwd|pass@|relative/, url)
    }
  })
})

describe('outbound policy: what the target may do (test policy, a loopback server)', () => {
  const policy: TargetPolicy = 'test'

  test('a 302 is refused and not followed', async () => {
    const server = await recordingServer({
      '/moved': (_q, r) => r.writeHead(302, { location: '/int/admin' }).end(),
    })
    try {
      const error = await outboundError(fetchOutbound(`${server.origin}/moved`, { policy }))
      assert.equal(error.check, 'redirect')
      assert.deepEqual(server.seen.requests, ['/moved'], 'the redirect target was never asked')
    } finally {
      await server.close()
    }
  })

  test('a drip-fed body (one byte every 500 ms) ends at the total deadline', async () => {
    const drip: Handler = (_q, r) => {
      r.writeHead(200, JWT_TYPE)
      const timer = setInterval(() => r.write('a'), 500)
      r.on('close', () => clearInterval(timer))
    }
    const silent: Handler = () => {} // accepts the request and never answers
    const server = await recordingServer({ '/drip': drip, '/silent': silent })
    try {
      for (const path of ['/drip', '/silent']) {
        const started = performance.now()
        const error = await outboundError(
          fetchOutbound(`${server.origin}${path}`, { policy, deadlineMs: 1000 }),
        )
        const elapsed = performance.now() - started
        assert.equal(error.check, 'deadline', `${path}: ${error.message}`)
        assert.ok(elapsed >= 950 && elapsed < 1600, `${path} ended after ${Math.round(elapsed)} ms`)
      }
    } finally {
      await server.close()
    }
  })

  test('a body over the cap is refused after reading about the cap, not the whole body', async () => {
    const CAP = 256 * 1024
    const TOTAL = 64 * 1024 * 1024
    let written = 0
    let closed: Promise<void> = Promise.resolve()
    const flood: Handler = (_q, r) => {
      r.writeHead(200, JWT_TYPE) // no Content-Length: chunked, the size is only known by reading
      closed = new Promise((resolve) => r.on('close', () => resolve()))
      const chunk = Buffer.alloc(64 * 1024, 0x61)
      const pump = () => {
        while (written < TOTAL && !r.destroyed) {
          written += chunk.length
          if (!r.write(chunk)) return void r.once('drain', pump)
        }
        r.end()
      }
      pump()
    }
    const announced: Handler = (_q, r) => {
      r.writeHead(200, { ...JWT_TYPE, 'content-length': String(TOTAL) })
      r.write('a') // and nothing more: only the announcement can end this quickly
    }
    const server = await recordingServer({ '/flood': flood, '/announced': announced })
    try {
      const error = await outboundError(fetchOutbound(`${server.origin}/flood`, { policy, maxBytes: CAP }))
      assert.equal(error.check, 'size')
      await closed
      // what the client read is at most the cap plus one chunk; the rest of `written` sat in socket buffers
      assert.ok(
        written < TOTAL / 4,
        `the server could write only ${written} of ${TOTAL} bytes before the close`,
      )
      const started = performance.now()
      const early = await outboundError(
        fetchOutbound(`${server.origin}/announced`, { policy, maxBytes: CAP }),
      )
      assert.equal(early.check, 'size')
      assert.ok(performance.now() - started < 1000, 'refused on its Content-Length, before the deadline')
    } finally {
      await server.close()
    }
  })

  test('errors name the check and the origin, never the path nor what the target answered', async () => {
    const server = await recordingServer({
      '/html': (_q, r) => r.writeHead(200, { 'content-type': 'text/html' }).end('<h1>TOPSECRET</h1>'),
    })
    try {
      const status = await outboundError(
        fetchOutbound(`${server.origin}/int/admin?token=s3cret`, { policy, mediaTypes: ['application/jwt'] }),
      )
      assert.equal(status.check, 'status')
      assert.equal(status.origin, server.origin)
      assert.ok(status.message.includes(server.origin), status.message)
      assert.doesNotMatch(status.message, /int\/admin|s3cret|404|TOPSECRET|not found/i, status.message)
      const html = await outboundError(
        fetchOutbound(`${server.origin}/html`, { policy, mediaTypes: ['application/jwt'] }),
      )
      assert.equal(html.check, 'media-type')
      assert.doesNotMatch(html.message, /\/html|text\/html|TOPSECRET/, html.message)
      const closedPort = await recordingServer({})
      await closedPort.close()
      const refused = await outboundError(fetchOutbound(`${closedPort.origin}/int/admin`, { policy }))
      assert.equal(refused.check, 'connection')
      assert.doesNotMatch(refused.message, /ECONNREFUSED|int\/admin/, refused.message)
    } finally {
      await server.close()
    }
  })
})

// ---------------------------------------------------------------------------------------------------------
// Status lists through the policy and the cache

const NOW = Date.parse('2026-11-22T10:15:00.000Z')

/** A Token Status List JWT (statuslist+jwt) of 16 two-bit entries, all VALID, signed by `issuer`. */
function tokenList(issuer: Holder, uri: string, claims: Record<string, unknown> = {}) {
  return signJws(
    { alg: 'EdDSA', typ: 'statuslist+jwt', kid: issuer.kid },
    {
      sub: uri,
      iat: Math.floor(NOW / 1000),
      status_list: { bits: 2, lst: deflateSync(new Uint8Array(4)).toString('base64url') },
      ...claims,
    },
    issuer.privateKey,
  )
}

/** A server of one Token Status List at /list, with the headers and claims a test chooses. */
async function listServer(issuer: Holder, claims: Record<string, unknown> = {}, headers = {}) {
  let uri = ''
  const server = await recordingServer({
    '/list': (_q, r) =>
      r
        .writeHead(200, { 'content-type': 'application/statuslist+jwt', ...headers })
        .end(tokenList(issuer, uri, claims)),
  })
  uri = `${server.origin}/list`
  return { ...server, uri }
}

/** One presentation's status check of entry 3 (a fresh memo each time, as checks.ts makes one per response). */
const checkEntry = (checker: StatusChecker, uri: string, issuer: Holder, clock: ManualClock) =>
  checker.token.check({ uri, index: 3 }, issuer.did, clock.now(), new Map())

describe('status lists: fetched through the outbound policy', () => {
  test('a loopback status list in production mode: a named failure, no path, no request sent', async () => {
    const issuer = newHolder()
    const server = await listServer(issuer)
    try {
      const clock = new ManualClock(NOW)
      const remote = new RemoteStatusLists({ policy: 'production', clock })
      const checker = new StatusChecker(remote.source)
      const uri = `${server.origin}/int/admin`
      const verdict = await checkEntry(checker, uri, issuer, clock)
      assert.equal(verdict.ok, false)
      const reason = verdict.ok ? '' : verdict.reason
      assert.match(reason, /address check/)
      assert.ok(reason.includes(server.origin), reason)
      assert.doesNotMatch(reason, /int\/admin|\b404\b/)
      assert.equal(server.seen.connections, 0)
    } finally {
      await server.close()
    }
  })
})

describe('status lists: the shared cache', () => {
  test('a second presentation within the ttl does not refetch; after the ttl it does', async () => {
    const issuer = newHolder()
    const server = await listServer(issuer, { ttl: 60 }, { 'cache-control': 'max-age=600' })
    try {
      const clock = new ManualClock(NOW)
      const remote = new RemoteStatusLists({ policy: 'test', clock })
      const checker = new StatusChecker(remote.source)
      for (let i = 0; i < 3; i++) {
        const verdict = await checkEntry(checker, server.uri, issuer, clock)
        assert.deepEqual(verdict, { ok: true, status: 'valid' })
      }
      assert.equal(server.seen.requests.length, 1, 'three presentations, one fetch')
      clock.advance(59_000)
      await checkEntry(checker, server.uri, issuer, clock)
      assert.equal(server.seen.requests.length, 1, 'still within the ttl (60 s) — max-age is longer')
      clock.advance(2000)
      await checkEntry(checker, server.uri, issuer, clock)
      assert.equal(server.seen.requests.length, 2, 'the ttl passed: fetched again')
    } finally {
      await server.close()
    }
  })

  test('a shorter max-age wins over the ttl', async () => {
    const issuer = newHolder()
    const server = await listServer(issuer, { ttl: 600 }, { 'cache-control': 'public, max-age=10' })
    try {
      const clock = new ManualClock(NOW)
      const checker = new StatusChecker(new RemoteStatusLists({ policy: 'test', clock }).source)
      await checkEntry(checker, server.uri, issuer, clock)
      clock.advance(9000)
      await checkEntry(checker, server.uri, issuer, clock)
      assert.equal(server.seen.requests.length, 1)
      clock.advance(2000)
      await checkEntry(checker, server.uri, issuer, clock)
      assert.equal(server.seen.requests.length, 2)
    } finally {
      await server.close()
    }
  })

  test('no-store (and no-cache) is never cached', async () => {
    for (const directive of ['no-store', 'no-cache']) {
      const issuer = newHolder()
      const server = await listServer(issuer, { ttl: 600 }, { 'cache-control': directive })
      try {
        const clock = new ManualClock(NOW)
        const remote = new RemoteStatusLists({ policy: 'test', clock })
        const checker = new StatusChecker(remote.source)
        await checkEntry(checker, server.uri, issuer, clock)
        await checkEntry(checker, server.uri, issuer, clock)
        assert.equal(server.seen.requests.length, 2, directive)
        assert.equal(remote.cache?.size, 0, directive)
      } finally {
        await server.close()
      }
    }
  })

  test('never served past its exp, whatever the ttl says', async () => {
    const issuer = newHolder()
    const exp = Math.floor(NOW / 1000) + 30
    const server = await listServer(issuer, { ttl: 3600, exp })
    try {
      const clock = new ManualClock(NOW)
      const remote = new RemoteStatusLists({ policy: 'test', clock })
      const checker = new StatusChecker(remote.source)
      assert.equal((await checkEntry(checker, server.uri, issuer, clock)).ok, true)
      clock.advance(29_000)
      assert.equal((await checkEntry(checker, server.uri, issuer, clock)).ok, true)
      assert.equal(server.seen.requests.length, 1)
      clock.advance(1000) // at exp: the cached copy is gone; the fresh one is expired too, and says so
      const verdict = await checkEntry(checker, server.uri, issuer, clock)
      assert.equal(server.seen.requests.length, 2)
      assert.equal(verdict.ok, false)
      assert.match(verdict.ok ? '' : verdict.reason, /expired/)
      assert.equal(
        statusListCacheUntil(tokenList(issuer, server.uri, { exp: exp - 60 }), undefined, NOW),
        undefined,
        'an expired list is not stored at all',
      )
    } finally {
      await server.close()
    }
  })

  test('lifetime: the shortest of maximum, max-age, ttl and exp, raised to the floor', () => {
    const issuer = newHolder()
    const jwt = (claims: Record<string, unknown>) => tokenList(issuer, 'https://i.example/l', claims)
    const limits = { maxEntries: 4, maxBytes: 1 << 20, maxLifetimeMs: 300_000, minLifetimeMs: 1000 }
    assert.equal(statusListCacheUntil(jwt({}), undefined, NOW, limits), NOW + 300_000)
    assert.equal(statusListCacheUntil(jwt({ ttl: 86_400 }), undefined, NOW, limits), NOW + 300_000)
    assert.equal(statusListCacheUntil(jwt({ ttl: 20 }), 'max-age=40', NOW, limits), NOW + 20_000)
    assert.equal(statusListCacheUntil(jwt({ ttl: 20 }), 's-maxage=5, max-age=40', NOW, limits), NOW + 5000)
    assert.equal(statusListCacheUntil(jwt({ ttl: 0 }), undefined, NOW, limits), NOW + 1000)
    assert.equal(
      statusListCacheUntil(jwt({ ttl: 0, exp: NOW / 1000 + 0.5 }), undefined, NOW, limits),
      NOW + 500,
    )
    assert.equal(statusListCacheUntil(jwt({}), 'max-age=junk', NOW, limits), NOW + 1000)
    assert.equal(statusListCacheUntil(jwt({}), 'private, max-age=60', NOW, limits), undefined)
    assert.equal(statusListCacheUntil('not a jwt', undefined, NOW, limits), undefined)
    // Bitstring Status List v1.0 §2.2: ttl in milliseconds, in the list's credentialSubject
    const bitstring = signJws(
      { alg: 'EdDSA', typ: 'JWT', kid: issuer.kid },
      { vc: { credentialSubject: { ttl: 45_000 }, validUntil: new Date(NOW + 30_000).toISOString() } },
      issuer.privateKey,
    )
    assert.equal(statusListCacheUntil(bitstring, undefined, NOW, limits), NOW + 30_000)
  })

  test('bounded: the least recently used list is evicted by count and by size', () => {
    const cache = new StatusListCache({ maxEntries: 3, maxBytes: 1000, maxLifetimeMs: 1, minLifetimeMs: 1 })
    const until = NOW + 60_000
    for (const id of ['a', 'b', 'c']) cache.set(`https://i.example/${id}`, 'x'.repeat(100), until, NOW)
    assert.equal(cache.get('https://i.example/a', NOW), 'x'.repeat(100)) // a is now the most recent
    cache.set('https://i.example/d', 'x'.repeat(100), until, NOW)
    assert.equal(cache.size, 3)
    assert.equal(cache.get('https://i.example/b', NOW), undefined, 'b, least recently used, went first')
    assert.ok(cache.get('https://i.example/a', NOW))
    cache.set('https://i.example/big', 'x'.repeat(700), until, NOW)
    assert.ok(cache.bytes <= 1000, `${cache.bytes} characters kept`)
    assert.ok(cache.get('https://i.example/big', NOW))
    cache.set('https://i.example/huge', 'x'.repeat(2000), until, NOW)
    assert.equal(cache.get('https://i.example/huge', NOW), undefined, 'larger than the whole cache: not kept')
    assert.ok(cache.get('https://i.example/big', NOW), 'and it evicted nothing')
    assert.equal(cache.get('https://i.example/big', until), undefined, 'gone at its time')
  })

  test('concurrent presentations of one list share one fetch', async () => {
    const issuer = newHolder()
    const server = await listServer(issuer, { ttl: 60 })
    try {
      const clock = new ManualClock(NOW)
      const checker = new StatusChecker(new RemoteStatusLists({ policy: 'test', clock }).source)
      const verdicts = await Promise.all(
        Array.from({ length: 20 }, () => checkEntry(checker, server.uri, issuer, clock)),
      )
      assert.ok(verdicts.every((v) => v.ok))
      assert.equal(server.seen.requests.length, 1)
    } finally {
      await server.close()
    }
  })
})

// ---------------------------------------------------------------------------------------------------------
// End to end: a wallet's response to a verification session of the service

/** verificationConfig() with webhooks.mode `mode`. */
function configIn(mode: TargetPolicy): ServiceConfig {
  const raw = structuredClone(verificationConfig()) as unknown as { webhooks: { mode: string } }
  raw.webhooks.mode = mode
  return parseConfig(raw)
}

/** A Bitstring Status List credential (VC-JWT) of `key`, all entries 0, at `url`. */
function bitstringList(key: SigningKey, url: string, clock: ManualClock) {
  return signJws(
    { alg: key.alg, typ: 'JWT', kid: key.kid },
    {
      iss: key.did,
      sub: `${url}#list`,
      iat: Math.floor(clock.now() / 1000),
      vc: {
        '@context': ['https://www.w3.org/ns/credentials/v2'],
        id: url,
        type: ['VerifiableCredential', 'BitstringStatusListCredential'],
        issuer: key.did,
        credentialSubject: {
          id: `${url}#list`,
          type: 'BitstringStatusList',
          statusPurpose: 'revocation',
          ttl: 60_000,
          encodedList: encodeList(emptyBitstring(1024)),
        },
      },
    },
    key.privateKey,
  )
}

/** A degree of the tenant's EdDSA issuer for a fresh holder, its status entry at `statusUrl`. */
async function degreeWithStatusAt(t: TestApp, statusUrl: string) {
  const key = await t.app.services.tenantKeys.forTenant('demo', 'EdDSA')
  const holder = newHolder()
  const jwt = signCredential(key, holder.did, t.clock, {
    vc: {
      credentialStatus: {
        id: `${statusUrl}#3`,
        type: 'BitstringStatusListEntry',
        statusPurpose: 'revocation',
        statusListIndex: '3',
        statusListCredential: statusUrl,
      },
    },
  })
  return { key, holder, jwt }
}

async function present(t: TestApp, holder: Holder, jwt: string) {
  const s = await openSession(t, 'degree-check')
  const response = await respond(
    t.app,
    s,
    vpJwt(holder, t.clock, s.request, [jwt]),
    submission(s.id, [{ id: 'UniversityDegreeCredential', index: 0 }]),
  )
  return { s, response }
}

describe('end to end: status lists of a presented credential', () => {
  test('production mode: a status list on loopback fails credentialStatus by the address check; nothing is fetched', async () => {
    const server = await recordingServer({})
    const t = await makeApp(configIn('production'))
    try {
      const { holder, jwt } = await degreeWithStatusAt(t, `${server.origin}/int/admin`)
      const { s, response } = await present(t, holder, jwt)
      const error = expectOAuth(response, 400, 'invalid_presentation')
      assert.match(error.error_description, /credentialStatus/)
      assert.doesNotMatch(error.error_description, /int\/admin|\b404\b/, error.error_description)
      const { body } = await readSession(t.app, s.rp, s.id)
      assert.deepEqual(checksWith(body, 'failed'), ['credentialStatus'])
      const message = body.Validations?.checks.find((c) => c.check === 'credentialStatus')?.message ?? ''
      assert.match(message, /address check/)
      assert.ok(message.includes(server.origin), message)
      assert.doesNotMatch(message, /int\/admin|\b404\b/, message)
      assert.equal(server.seen.connections, 0, 'the loopback server saw no request')
    } finally {
      await t.close()
      await server.close()
    }
  })

  test('test mode: a list of another server is fetched once for two presentations, again after its ttl', async () => {
    const t = await makeApp(configIn('test'))
    let list = ''
    const server = await recordingServer({
      '/lists/1': (_q, r) => r.writeHead(200, { 'content-type': 'application/vc+jwt' }).end(list),
    })
    try {
      const url = `${server.origin}/lists/1`
      const key = await t.app.services.tenantKeys.forTenant('demo', 'EdDSA')
      list = bitstringList(key, url, t.clock)
      for (let i = 0; i < 2; i++) {
        const { holder, jwt } = await degreeWithStatusAt(t, url)
        const { response } = await present(t, holder, jwt)
        assert.equal(response.statusCode, 200, response.body)
      }
      assert.deepEqual(server.seen.requests, ['/lists/1'], 'the second presentation used the cached list')
      t.clock.advance(61_000) // the list's ttl is 60 000 ms
      const { holder, jwt } = await degreeWithStatusAt(t, url)
      assert.equal((await present(t, holder, jwt)).response.statusCode, 200)
      assert.equal(server.seen.requests.length, 2)
    } finally {
      await t.close()
      await server.close()
    }
  })
})
