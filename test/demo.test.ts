// The demo relying party's backend (src/demo/) without a browser: its inputs, the flows it opens, its polling
// answers, the WebSocket relay of the service's event streams (a real socket, undici's WebSocket client), its
// token cache, the component bundle's caching, and `vc-harness serve` turning it on and off.
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { WebSocket } from 'undici'
import { demoWanted } from '../src/cli/serve.ts'
import { serverSentEvents, TokenCache } from '../src/demo/backend.ts'
import { DEMO_CONFIG_PATH } from '../src/service/config/index.ts'
import { ShiftedClock } from '../src/service/util/clock.ts'
import { Wallet } from '../src/wallet/index.ts'
import {
  asFlowStatus,
  type FlowCreated,
  type FlowStatus,
  pageState,
  SCANNED_STEPS,
} from '../src/web/flow-state.ts'
import { assertNoSecrets, type DemoServer, secretsOf, startDemoServer } from './browser-helpers.ts'

const clock = new ShiftedClock()
let demo: DemoServer
let secrets: string[]
/** Holds a UniversityDegreeCredential (received through a demo offer). */
let holder: Wallet
let logins = 0

before(async () => {
  // Counts the backend's logins (the token cache).
  const counting: typeof fetch = (input, init) => {
    if (String(input).endsWith('/admin/v1/api_keys/login')) logins++
    return fetch(input, init)
  }
  ;[demo, holder] = await Promise.all([startDemoServer(clock, { fetch: counting }), Wallet.create()])
  secrets = secretsOf(demo.config)
})
after(async () => {
  await demo?.close()
})

/** An inject on the demo's server; every answer is scanned for secrets and tokens. */
async function call(
  method: 'GET' | 'POST',
  url: string,
  options: { body?: string; headers?: Record<string, string> } = {},
) {
  const response = await demo.server.app.inject({
    method,
    url,
    headers: {
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { payload: options.body } : {}),
  })
  assertNoSecrets(`${method} ${url}`, `${JSON.stringify(response.headers)}\n${response.body}`, secrets)
  return response
}
const open = async (kind: 'issuance' | 'verification') => {
  const response = await call('POST', `/demo/api/${kind}`, { body: '{}' })
  assert.equal(response.statusCode, 201, response.body)
  return response.json<FlowCreated>()
}
const poll = async (kind: 'issuance' | 'verification', id: string) => {
  const response = await call('GET', `/demo/api/${kind}/${id}`)
  assert.equal(response.statusCode, 200, response.body)
  return response.json<FlowStatus>()
}
const problemCode = (response: LightMyRequestResponse) => {
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/)
  return response.json<{ code: string }>().code
}

describe('demo backend: inputs', () => {
  test('the create calls take {} only: unknown fields 400, large bodies 413, other media types 415', async () => {
    const unknown = await call('POST', '/demo/api/issuance', { body: '{"template":"other"}' })
    assert.equal(unknown.statusCode, 400)
    assert.equal(problemCode(unknown), 'validation_failed')
    const big = await call('POST', '/demo/api/verification', {
      body: JSON.stringify({ x: 'y'.repeat(2000) }),
    })
    assert.equal(big.statusCode, 413)
    assert.equal(problemCode(big), 'payload_too_large')
    const text = await call('POST', '/demo/api/issuance', {
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    })
    assert.equal(text.statusCode, 415)
    const broken = await call('POST', '/demo/api/issuance', { body: '{' })
    assert.equal(broken.statusCode, 400)
    assert.equal(problemCode(broken), 'malformed_json')
  })

  test('ids must be UUIDs of flows this backend opened, of the same kind', async () => {
    const bad = await call('GET', '/demo/api/issuance/..%2F..%2Fadmin')
    assert.equal(bad.statusCode, 400)
    const unknown = await call('GET', '/demo/api/issuance/00000000-0000-4000-8000-000000000000')
    assert.equal(unknown.statusCode, 404)
    assert.equal(problemCode(unknown), 'flow_not_found')
    const offer = await open('issuance')
    const crossed = await call('GET', `/demo/api/verification/${offer.id}`)
    assert.equal(crossed.statusCode, 404)
  })

  test('pages accept transport=auto|websocket|polling and nothing else', async () => {
    const polling = await call('GET', '/demo/verify?transport=polling')
    assert.equal(polling.statusCode, 200)
    assert.match(polling.body, /<vc-flow-qr kind="verification" api="\/demo\/api" transport="polling">/)
    assert.match(String(polling.headers['content-security-policy']), /default-src 'none'; script-src 'self'/)
    assert.equal((await call('GET', '/demo/issue?transport=%22%3E%3Cscript%3E')).statusCode, 400)
    assert.equal((await call('GET', '/demo/issue?debug=1')).statusCode, 400)
  })
})

describe('demo backend: flows and polling', () => {
  test('an offer with content submitted at once: waiting, then ISSUED when the wallet receives it', async () => {
    const offer = await open('issuance')
    assert.equal(offer.kind, 'issuance')
    assert.match(
      offer.link,
      /^openid-credential-offer:\/\/\?credential_offer_uri=http%3A%2F%2F127\.0\.0\.1%3A/,
    )
    assert.ok(offer.link.endsWith(offer.id))
    assert.equal(offer.template, 'degree')
    assert.deepEqual(offer.credentialTypes, ['UniversityDegreeCredential'])
    assert.ok(Date.parse(offer.expiresAt) > Date.now())
    const first = await poll('issuance', offer.id)
    assert.deepEqual(
      { status: first.status, step: first.step, id: first.id, kind: first.kind },
      { status: 'PENDING', step: 'snapshot', id: offer.id, kind: 'issuance' },
    )
    assert.equal((await holder.receive(offer.link)).status, 'issued')
    const issued = await poll('issuance', offer.id)
    assert.equal(issued.status, 'ISSUED')
    assert.equal(issued.step, 'issued')
    assert.equal(pageState(issued.status, issued.step, 'waiting'), 'issued')
  })

  test('a session: waiting, request_retrieved once the wallet fetched the request, then VERIFIED', async () => {
    const session = await open('verification')
    assert.match(session.link, /^openid-vp:\/\/\?client_id=did%3Akey%3A/)
    assert.equal(session.template, 'degree-check')
    assert.equal((await poll('verification', session.id)).step, 'snapshot')
    const presentation = await holder.startPresentation(session.link)
    const scanned = await poll('verification', session.id)
    assert.deepEqual([scanned.status, scanned.step], ['PENDING', 'request_retrieved'])
    assert.equal(pageState(scanned.status, scanned.step, 'waiting'), 'scanned')
    assert.equal((await presentation.respond()).status, 'verified')
    const verified = await poll('verification', session.id)
    assert.deepEqual([verified.status, verified.step], ['VERIFIED', 'verified'])
  })

  test('past their lifetimes on the service clock, an unused offer and a session poll EXPIRED', async () => {
    const offer = await open('issuance')
    const session = await open('verification')
    clock.advance(660_000)
    try {
      const [o, s] = [await poll('issuance', offer.id), await poll('verification', session.id)]
      assert.deepEqual([o.status, o.step, o.at], ['EXPIRED', 'expired', offer.expiresAt])
      assert.deepEqual([s.status, s.step], ['EXPIRED', 'expired'])
    } finally {
      clock.reset()
    }
    // A final state stays final.
    assert.equal((await poll('issuance', offer.id)).status, 'EXPIRED')
  })

  test('the backend logs in once per key and reuses its token', async () => {
    for (let i = 0; i < 3; i++) {
      await open('issuance')
      await open('verification')
    }
    assert.equal(logins, 2, 'one login for the issuance key, one for the verification key')
    assert.equal(demo.demo.backend.tokens.issuance.logins, 1)
  })
})

/** A WebSocket to the relay, collecting its messages and its close code. */
function relay(path: string) {
  const socket = new WebSocket(`${demo.url.replace('http:', 'ws:')}${path}`)
  const messages: unknown[] = []
  const waiters: (() => void)[] = []
  socket.addEventListener('message', (event) => {
    messages.push(JSON.parse(String(event.data)))
    for (const wake of waiters.splice(0)) wake()
  })
  const closed = new Promise<number>((resolve) =>
    socket.addEventListener('close', (event) => resolve(event.code)),
  )
  const opened = new Promise<boolean>((resolve) => {
    socket.addEventListener('open', () => resolve(true))
    socket.addEventListener('error', () => resolve(false))
  })
  return {
    opened,
    closed,
    messages,
    /** Resolves once `count` messages arrived (5 s at most). */
    async count(count: number) {
      const deadline = Date.now() + 5000
      while (messages.length < count) {
        assert.ok(
          Date.now() < deadline,
          `only ${messages.length} of ${count} messages: ${JSON.stringify(messages)}`,
        )
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 100)
          waiters.push(() => {
            clearTimeout(timer)
            resolve()
          })
        })
      }
      return messages
    },
  }
}

describe('demo backend: the WebSocket relay of the service event streams', () => {
  test('a session: snapshot, request_retrieved, verified as JSON messages; then a normal close', async () => {
    const session = await open('verification')
    const socket = relay(`/demo/api/verification/${session.id}/socket`)
    assert.equal(await socket.opened, true)
    const [first] = await socket.count(1)
    assert.deepEqual(
      { ...(first as object), at: undefined },
      {
        type: 'state',
        kind: 'verification',
        id: session.id,
        status: 'PENDING',
        step: 'snapshot',
        at: undefined,
      },
    )
    const presentation = await holder.startPresentation(session.link)
    await socket.count(2)
    await presentation.respond()
    const all = await socket.count(3)
    assert.deepEqual(
      all.map((m) => [(m as FlowStatus).status, (m as FlowStatus).step]),
      [
        ['PENDING', 'snapshot'],
        ['PENDING', 'request_retrieved'],
        ['VERIFIED', 'verified'],
      ],
    )
    assert.ok(all.every((m) => asFlowStatus(m) !== undefined))
    assert.equal(await socket.closed, 1000)
    for (const m of all) assertNoSecrets('relay message', JSON.stringify(m), secrets)
  })

  test('an offer: snapshot, offer_retrieved … issued; EXPIRED when the clock passes the code lifetime', async () => {
    const offer = await open('issuance')
    const socket = relay(`/demo/api/issuance/${offer.id}/socket`)
    await socket.count(1)
    const wallet = await Wallet.create()
    assert.equal((await wallet.receive(offer.link)).status, 'issued')
    assert.equal(await socket.closed, 1000)
    const steps = socket.messages.map((m) => (m as FlowStatus).step)
    assert.equal(steps[0], 'snapshot')
    assert.ok(steps.includes('offer_retrieved'), steps.join())
    assert.equal(steps.at(-1), 'issued')

    const unused = await open('issuance')
    const expiring = relay(`/demo/api/issuance/${unused.id}/socket`)
    await expiring.count(1)
    clock.advance(660_000)
    try {
      const [, last] = await expiring.count(2)
      assert.deepEqual([(last as FlowStatus).status, (last as FlowStatus).step], ['EXPIRED', 'expired'])
      assert.equal(await expiring.closed, 1000)
    } finally {
      clock.reset()
    }
  })

  test('a flow this backend did not open is refused before the upgrade', async () => {
    const socket = relay('/demo/api/verification/00000000-0000-4000-8000-000000000000/socket')
    assert.equal(await socket.opened, false)
    await socket.closed
  })
})

describe('demo: the component bundle', () => {
  test('served with its content hash as ETag; the hashed URL is immutable, the bare one revalidates', async () => {
    const page = await call('GET', '/demo/issue')
    const src = /src="(\/demo\/assets\/vc-flow-qr\.js\?v=([\w-]{22}))"/.exec(page.body)
    assert.ok(src?.[1] && src[2], 'no hashed script URL in the page')
    const hashed = await call('GET', src[1])
    assert.equal(hashed.statusCode, 200)
    assert.match(String(hashed.headers['content-type']), /^text\/javascript/)
    assert.equal(hashed.headers.etag, `"${src[2]}"`)
    assert.equal(hashed.headers['cache-control'], 'public, max-age=31536000, immutable')
    assert.match(hashed.body, /customElements\.define\("vc-flow-qr"/)
    const bare = await call('GET', '/demo/assets/vc-flow-qr.js')
    assert.equal(bare.headers['cache-control'], 'no-cache')
    const revalidated = await call('GET', '/demo/assets/vc-flow-qr.js', {
      headers: { 'if-none-match': `"${src[2]}"` },
    })
    assert.equal(revalidated.statusCode, 304)
  })
})

describe('demo: building blocks', () => {
  test('pageState: PENDING steps map to waiting or scanned and never go back; final statuses map 1:1', () => {
    assert.equal(pageState('PENDING', 'snapshot', 'loading'), 'waiting')
    for (const step of SCANNED_STEPS) {
      assert.equal(pageState('PENDING', step, 'waiting'), 'scanned')
    }
    assert.equal(pageState('PENDING', 'submitted', 'scanned'), 'scanned')
    assert.equal(pageState('PENDING', 'snapshot', 'scanned'), 'scanned')
    assert.equal(pageState('ISSUED', 'issued', 'scanned'), 'issued')
    assert.equal(pageState('VERIFIED', 'verified', 'waiting'), 'verified')
    assert.equal(pageState('REJECTED', 'rejected', 'scanned'), 'rejected')
    assert.equal(pageState('EXPIRED', 'expired', 'waiting'), 'expired')
    assert.equal(asFlowStatus({ kind: 'issuance', id: 'x', status: 'DONE', step: 's', at: 'a' }), undefined)
  })

  test('serverSentEvents: messages split across chunks, comments and multi-line data', async () => {
    const text =
      ': keep-alive\n\nid: 1\nevent: state\ndata: {"a":\ndata: 1}\n\nevent: state\r\ndata: 2\r\n\r\n'
    const bytes = new TextEncoder().encode(text)
    async function* chunks() {
      for (let i = 0; i < bytes.length; i += 7) yield bytes.slice(i, i + 7)
    }
    const seen: { event: string; data: string }[] = []
    for await (const message of serverSentEvents(chunks())) seen.push(message)
    assert.deepEqual(seen, [
      { event: 'state', data: '{"a":\n1}' },
      { event: 'state', data: '2' },
    ])
  })

  test('TokenCache: one login for concurrent callers, reuse until shortly before expiry, again after a 401', async () => {
    let now = 1_000_000
    let issued = 0
    const jwt = (lifetimeSeconds: number) => {
      issued++
      const payload = Buffer.from(JSON.stringify({ iat: 100, exp: 100 + lifetimeSeconds, n: issued }))
      return `eyJhbGciOiJFUzI1NiJ9.${payload.toString('base64url')}.sig`
    }
    const cache = new TokenCache(
      async () => jwt(3600),
      () => now,
    )
    const [a, b] = await Promise.all([cache.get(), cache.get()])
    assert.equal(a, b)
    assert.equal(cache.logins, 1)
    now += 3_539_000 // 59 min later: still the same token (refresh one minute early)
    assert.equal(await cache.get(), a)
    now += 2_000
    const c = await cache.get()
    assert.notEqual(c, a)
    cache.invalidate(c)
    assert.notEqual(await cache.get(), c)
    assert.equal(cache.logins, 3)
  })
})

// --- vc-harness serve ------------------------------------------------------------------------------------------

const BIN = new URL('../bin/vc-harness.mjs', import.meta.url).pathname

interface Served {
  code: number | null
  out: string
  /** Status of GET /demo/issue while it ran (undefined when it never listened). */
  demoStatus?: number
}

/** Runs `vc-harness serve …`; once it listens, reads /demo/issue and stops it with SIGTERM. */
function serve(args: string[]): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      [BIN, 'serve', '--port', '0', '--data', ':memory:', ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    let demoStatus: number | undefined
    let asked = false
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`serve ${args.join(' ')} did not finish in time:\n${out}`))
    }, 20_000)
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1]
      // The banner is printed at once after the first line: wait for the data line, then ask.
      if (url && !asked && /\n {2}data: /.test(out)) {
        asked = true
        fetch(`${url}/demo/issue`)
          .then((response) => {
            demoStatus = response.status
          })
          .finally(() => child.kill('SIGTERM'))
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, out, ...(demoStatus !== undefined ? { demoStatus } : {}) })
    })
  })
}

describe('vc-harness serve: the demo on and off', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vch-demo-'))
  const ownConfig = join(dir, 'own.json')
  after(() => rmSync(dir, { recursive: true, force: true }))

  // Three children (each loads the whole service, ~1.5 s of CPU); --demo with another --config is demoWanted's
  // rule below, and the demo's plan for any configuration is planSandbox's.
  test('on without --config; off with --no-demo; off with another --config', async () => {
    const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
    delete raw.$schema
    writeFileSync(ownConfig, JSON.stringify(raw))
    const [embedded, noDemo, own] = await Promise.all([
      serve([]),
      serve(['--no-demo']),
      serve(['--config', ownConfig]),
    ])
    assert.equal(embedded.demoStatus, 200, embedded.out)
    assert.match(embedded.out, /demo relying party: http:\/\/127\.0\.0\.1:\d+\/demo\/issue/)
    assert.equal(noDemo.demoStatus, 404, noDemo.out)
    assert.doesNotMatch(noDemo.out, /demo relying party/)
    assert.equal(own.demoStatus, 404, own.out)
    assert.doesNotMatch(own.out, /demo relying party/)
    for (const run of [embedded, noDemo, own]) assert.equal(run.code, 0, run.out)
  })

  test('the option rules: --demo and --no-demo exclude each other; --issue / --verify need the demo or the sandbox', () => {
    assert.equal(demoWanted({}), true)
    assert.equal(demoWanted({ config: 'x.json' }), false)
    assert.equal(demoWanted({ config: 'x.json', demo: true }), true)
    assert.equal(demoWanted({ 'no-demo': true }), false)
    assert.equal(demoWanted({ issue: 'degree' }), true)
    assert.equal(demoWanted({ config: 'x.json', sandbox: true, issue: 'degree' }), false)
    assert.throws(
      () => demoWanted({ demo: true, 'no-demo': true }),
      /--demo and --no-demo exclude each other/,
    )
    assert.throws(
      () => demoWanted({ config: 'x.json', issue: 'degree' }),
      /--issue needs --sandbox or the demo/,
    )
    assert.throws(() => demoWanted({ 'no-demo': true, verify: 'x' }), /--verify needs --sandbox or the demo/)
    assert.throws(() => demoWanted({ once: true }), /--once needs --sandbox/)
  })
})
