// The demo relying party's backend (src/demo/) without a browser: its inputs, the flows it opens, its polling
// answers, the WebSocket relay of the service's event streams (a real socket, undici's WebSocket client), its
// token cache, the component bundle's caching, and `vc-harness serve` turning it on and off. Both verification
// profiles: the default pe template, and the demo's OpenID4VP 1.0 pair (dc+sd-jwt issuance, dcql verification)
// on a second server, answered by an independent wallet (OwfDcqlWallet).
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { WebSocket } from 'undici'
import { demoWanted } from '../../src/cli/serve.ts'
import type { SessionRead } from '../../src/client/index.ts'
import { outcomeOf, serverSentEvents, TokenCache } from '../../src/demo/backend.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../src/service/config/index.ts'
import { ShiftedClock } from '../../src/service/util/clock.ts'
import { Wallet } from '../../src/wallet/index.ts'
import {
  asFlowStatus,
  asOutcome,
  asRequested,
  describeRequest,
  type FlowCreated,
  type FlowStatus,
  OUTCOME_LIMITS,
  pageState,
  requestedText,
  SCANNED_STEPS,
} from '../../src/web/flow-state.ts'
import {
  assertNoSecrets,
  DCQL_TEMPLATES,
  type DemoServer,
  OwfDcqlWallet,
  secretsOf,
  startDemoServer,
} from '../browser-helpers.ts'

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

/** An inject on the demo's server (or `on`); every answer is scanned for secrets and tokens. */
async function call(
  method: 'GET' | 'POST',
  url: string,
  options: { body?: string; headers?: Record<string, string> } = {},
  on: DemoServer = demo,
) {
  const response = await on.server.app.inject({
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
const open = async (kind: 'issuance' | 'verification', on: DemoServer = demo) => {
  const response = await call('POST', `/demo/api/${kind}`, { body: '{}' }, on)
  assert.equal(response.statusCode, 201, response.body)
  return response.json<FlowCreated>()
}
const poll = async (kind: 'issuance' | 'verification', id: string, on: DemoServer = demo) => {
  const response = await call('GET', `/demo/api/${kind}/${id}`, {}, on)
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
    // A pe session: what it asks for is its definition's one input descriptor (type and issuer constraints only).
    assert.equal(session.profile, 'pe')
    assert.equal(session.requested?.length, 1)
    const [descriptor] = session.requested ?? []
    assert.deepEqual(
      [descriptor?.id, descriptor?.types, descriptor?.claims],
      ['UniversityDegreeCredential', ['UniversityDegreeCredential'], []],
    )
    assert.ok(descriptor?.formats.includes('jwt_vc_json'), descriptor?.formats.join())
    assert.equal((await poll('verification', session.id)).step, 'snapshot')
    const presentation = await holder.startPresentation(session.link)
    const scanned = await poll('verification', session.id)
    assert.deepEqual([scanned.status, scanned.step], ['PENDING', 'request_retrieved'])
    assert.equal(pageState(scanned.status, scanned.step, 'waiting'), 'scanned')
    assert.equal((await presentation.respond()).status, 'verified')
    const verified = await poll('verification', session.id)
    assert.deepEqual([verified.status, verified.step], ['VERIFIED', 'verified'])
    // What the wallet shared, for the page: the credential's type, issuer and claims (no proof, no token).
    assert.deepEqual(verified.outcome?.failedChecks, undefined)
    const [credential] = verified.outcome?.shared ?? []
    assert.equal(credential?.type, 'UniversityDegreeCredential')
    assert.match(credential?.issuer ?? '', /^did:key:z/)
    assert.deepEqual(credential?.claims, [
      { path: 'degree.type', value: 'BachelorDegree' },
      { path: 'degree.name', value: 'Bachelor of Science and Arts' },
    ])
  })

  test('a rejected presentation polls REJECTED with each failed check, its name and message', async () => {
    const session = await open('verification')
    await assert.rejects(holder.present(session.link, { misbehave: ['vp-wrong-nonce'] }))
    const rejected = await poll('verification', session.id)
    assert.deepEqual([rejected.status, rejected.step], ['REJECTED', 'rejected'])
    assert.deepEqual(
      rejected.outcome?.failedChecks?.map((c) => c.check),
      ['sessionBinding'],
    )
    assert.match(rejected.outcome?.failedChecks?.[0]?.message ?? '', /nonce/)
    assert.equal(rejected.outcome?.shared, undefined)
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

/** A WebSocket to the relay (of the demo's server, or `on`), collecting its messages and its close code. */
function relay(path: string, on: DemoServer = demo) {
  const socket = new WebSocket(`${on.url.replace('http:', 'ws:')}${path}`)
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
    // The final message carries what was shared (the backend reads 4.7 once; the stream does not say it).
    assert.equal((all[2] as FlowStatus).outcome?.shared?.[0]?.type, 'UniversityDegreeCredential')
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

describe('demo backend: the OpenID4VP 1.0 templates (serve --issue pid-sd-jwt --verify pid-check)', () => {
  const dcqlClock = new ShiftedClock()
  let dcql: DemoServer
  const wallet = new OwfDcqlWallet()
  before(async () => {
    dcql = await startDemoServer(dcqlClock, { templates: DCQL_TEMPLATES })
  })
  after(async () => {
    await dcql?.close()
  })

  test('the pages name the dcql template and its profile', async () => {
    const page = await call('GET', '/demo/verify', {}, dcql)
    assert.equal(page.statusCode, 200)
    assert.match(page.body, /template &quot;pid-check&quot;, tenant &quot;demo&quot;, OpenID4VP 1\.0, DCQL\)/)
    const index = await call('GET', '/demo', {}, dcql)
    assert.match(
      index.body,
      /Verification: asks for VerifiableId \(template "pid-check", OpenID4VP 1\.0, DCQL\)/,
    )
  })

  test('an SD-JWT VC offer, then a dcql session: openid4vp:// link, the DCQL query, request_retrieved, VERIFIED', async () => {
    const offer = await open('issuance', dcql)
    assert.equal(offer.template, 'pid-sd-jwt')
    assert.deepEqual(offer.credentialTypes, ['VerifiableId'])
    assert.equal(offer.profile, undefined)
    await wallet.receive(offer.link)
    assert.equal((await poll('issuance', offer.id, dcql)).status, 'ISSUED')
    assert.match(wallet.credential ?? '', /^[\w-]+\.[\w-]+\.[\w-]+~/, 'an SD-JWT VC')

    const session = await open('verification', dcql)
    assert.match(
      session.link,
      /^openid4vp:\/\/\?client_id=decentralized_identifier%3Adid%3Akey%3A[^&]+&request_uri=/,
    )
    assert.equal(session.template, 'pid-check')
    assert.equal(session.profile, 'dcql')
    assert.deepEqual(session.requested, [
      {
        id: 'VerifiableId',
        formats: ['dc+sd-jwt'],
        types: [`${dcql.url}/oid4vci/demo/vct/VerifiableId`],
        claims: ['familyName'],
      },
    ])
    // The session id is 4.6's `id` (no definition): it is the last segment of the request_uri.
    const requestUri = new URL(session.link).searchParams.get('request_uri') ?? ''
    assert.ok(requestUri.endsWith(`/${session.id}`), requestUri)

    const socket = relay(`/demo/api/verification/${session.id}/socket`, dcql)
    assert.equal(await socket.opened, true)
    await socket.count(1)
    assert.equal((await poll('verification', session.id, dcql)).step, 'snapshot')
    const started = await wallet.start(session.link)
    assert.deepEqual(started.queryIds, ['VerifiableId'])
    assert.equal(started.request.response_mode, 'direct_post.jwt')
    const scanned = await poll('verification', session.id, dcql)
    assert.deepEqual([scanned.status, scanned.step], ['PENDING', 'request_retrieved'])
    const answered = await started.respond()
    assert.equal(answered.status, 200, answered.body)
    const verified = await poll('verification', session.id, dcql)
    assert.deepEqual([verified.status, verified.step], ['VERIFIED', 'verified'])
    const all = await socket.count(3)
    assert.deepEqual(
      all.map((m) => [(m as FlowStatus).id, (m as FlowStatus).status, (m as FlowStatus).step]),
      [
        [session.id, 'PENDING', 'snapshot'],
        [session.id, 'PENDING', 'request_retrieved'],
        [session.id, 'VERIFIED', 'verified'],
      ],
    )
    assert.equal(await socket.closed, 1000)
  })

  test('redirect_uri: every parameter by value (no request_uri); the session id comes from 4.6, VERIFIED', async () => {
    // A configuration beside the demo's: a dcql template with the redirect_uri prefix and its own key.
    const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
    const tenant = raw.tenants[0]
    tenant.verificationTemplates.push({
      id: 'pid-by-value',
      name: 'PID by value',
      profile: 'dcql',
      credentialTypes: ['VerifiableId'],
      requestedFields: [{ path: '$.credentialSubject.familyName' }],
      dcql: { clientIdPrefix: 'redirect_uri' },
    })
    tenant.apiKeys.push({
      id: '2c9d7e61-4b3a-4f58-9e0d-7a6b5c4d3e2f',
      secret: 'demo-test-by-value-secret-0123456789',
      role: 'app',
      template: 'pid-by-value',
    })
    const byValue = await startDemoServer(new ShiftedClock(), {
      config: parseConfig(raw),
      templates: { issue: DCQL_TEMPLATES.issue, verify: 'pid-by-value' },
    })
    try {
      const holder = new OwfDcqlWallet()
      await holder.receive((await open('issuance', byValue)).link)
      const session = await open('verification', byValue)
      const params = new URL(session.link).searchParams
      assert.match(session.link, /^openid4vp:\/\/\?/)
      assert.equal(params.get('request_uri'), null)
      assert.equal(params.get('client_id'), `redirect_uri:${params.get('response_uri')}`)
      assert.ok(params.get('dcql_query'), 'the DCQL query goes in the link')
      assert.equal(session.profile, 'dcql')
      assert.deepEqual(
        session.requested?.map((r) => [r.id, r.claims]),
        [['VerifiableId', ['familyName']]],
      )
      assert.match(session.id, /^[0-9a-f-]{36}$/)
      assert.equal((await poll('verification', session.id, byValue)).step, 'snapshot')
      const answered = await holder.present(session.link)
      assert.equal(answered.status, 200, answered.body)
      const verified = await poll('verification', session.id, byValue)
      assert.deepEqual([verified.status, verified.step], ['VERIFIED', 'verified'])
    } finally {
      await byValue.close()
    }
  })

  test('a dcql session past its lifetime polls EXPIRED', async () => {
    const session = await open('verification', dcql)
    dcqlClock.advance(660_000)
    try {
      const expired = await poll('verification', session.id, dcql)
      assert.deepEqual([expired.status, expired.step], ['EXPIRED', 'expired'])
    } finally {
      dcqlClock.reset()
    }
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

  test('outcomeOf and asOutcome: failed checks or shared claims, text only, bounded, no JWT', () => {
    const session = (status: SessionRead['Status'], extra: Partial<SessionRead>) =>
      ({ Status: status, Validations: null, PresentationSubmission: null, ...extra }) as SessionRead
    const jwt = `eyJhbGciOiJFZERTQSJ9.${'a'.repeat(20)}.${'b'.repeat(20)}`
    const rejected = outcomeOf(
      session('REJECTED', {
        Validations: {
          status: 'REJECT',
          checks: [
            { check: 'securityMechanisms', result: 'passed', message: 'fine' },
            { check: 'credentialStatus', result: 'failed', message: `revoked; token ${jwt}~disclosure~` },
            { check: 'holderBinding', result: 'not_run', message: 'skipped' },
            { check: 'validityPeriod', result: 'failed', message: 'x'.repeat(1000) },
          ],
          verificationResult: { checks: [], warnings: [], errors: [] },
        },
      }),
    )
    assert.deepEqual(
      rejected?.failedChecks?.map((c) => c.check),
      ['credentialStatus', 'validityPeriod'],
    )
    assert.equal(rejected?.failedChecks?.[0]?.message, 'revoked; token [JWT]')
    assert.equal(rejected?.failedChecks?.[1]?.message.length, OUTCOME_LIMITS.text)
    const verified = outcomeOf(
      session('VERIFIED', {
        PresentationSubmission: {
          verifiableCredential: [
            {
              type: ['VerifiableCredential', 'VerifiableId'],
              issuer: { id: 'did:key:zIssuer' },
              credentialSubject: {
                id: 'did:key:zHolder',
                name: 'Jane',
                tags: ['a', 'b'],
                address: [{ city: 'X' }],
              },
              proof: { type: 'JwtProof2020', jwt },
            },
          ],
        },
      }),
    )
    assert.deepEqual(verified, {
      shared: [
        {
          type: 'VerifiableId',
          issuer: 'did:key:zIssuer',
          claims: [
            { path: 'name', value: 'Jane' },
            { path: 'tags', value: 'a, b' },
            { path: 'address[0].city', value: 'X' },
          ],
        },
      ],
    })
    assert.equal(outcomeOf(session('PENDING', {})), undefined)
    // From untrusted JSON: malformed entries dropped, texts cut, nothing at all → undefined.
    assert.equal(asOutcome({ failedChecks: [{ check: 1 }], shared: 'x' }), undefined)
    assert.deepEqual(asOutcome({ failedChecks: [{ check: 'c', message: jwt }, { check: 'd' }] }), {
      failedChecks: [{ check: 'c', message: '[JWT]' }],
    })
    const status = asFlowStatus({
      kind: 'verification',
      id: 'x',
      status: 'VERIFIED',
      step: 'verified',
      at: 'now',
      outcome: { shared: [{ type: 't', issuer: 'i', claims: [{ path: 'p', value: 'v' }, { path: 2 }] }] },
    })
    assert.deepEqual(status?.outcome, {
      shared: [{ type: 't', issuer: 'i', claims: [{ path: 'p', value: 'v' }] }],
    })
  })

  test('describeRequest: input descriptors of a definition, credential queries of a DCQL query', () => {
    const pe = describeRequest({
      presentation_definition: {
        id: 'session-1',
        format: { jwt_vc_json: {}, jwt_vp_json: {} },
        input_descriptors: [
          {
            id: 'UniversityDegreeCredential',
            name: 'UniversityDegreeCredential',
            constraints: {
              fields: [
                { path: ['$.vc.type[-1:]', '$.type[-1:]'], filter: { const: 'UniversityDegreeCredential' } },
                { path: ['$.iss', '$.vc.issuer'] },
                { path: ['$.vc.credentialSubject.degree.name', '$.credentialSubject.degree.name'] },
              ],
            },
          },
          { id: 'identity.VerifiableId', name: 'VerifiableId', format: { ldp_vc: {} }, constraints: {} },
        ],
      },
    })
    assert.deepEqual(pe, {
      profile: 'pe',
      requested: [
        {
          id: 'UniversityDegreeCredential',
          formats: ['jwt_vc_json', 'jwt_vp_json'],
          types: ['UniversityDegreeCredential'],
          claims: ['credentialSubject.degree.name'],
        },
        { id: 'identity.VerifiableId', formats: ['ldp_vc'], types: ['VerifiableId'], claims: [] },
      ],
    })
    const dcql = describeRequest({
      dcql_query: {
        credentials: [
          {
            id: 'pid',
            format: 'dc+sd-jwt',
            meta: { vct_values: ['https://issuer.example/vct/Pid'] },
            claims: [{ path: ['address', 'locality'] }, { path: ['nationalities', null] }],
          },
          {
            id: 'degree',
            format: 'jwt_vc_json',
            meta: { type_values: [['VerifiableCredential', 'UniversityDegreeCredential']] },
          },
          {
            id: 'mdl',
            format: 'mso_mdoc',
            meta: { doctype_value: 'org.iso.18013.5.1.mDL' },
            claims: [{ path: ['org.iso.18013.5.1', 'family_name'], intent_to_retain: false }],
          },
        ],
      },
    })
    assert.deepEqual(dcql, {
      profile: 'dcql',
      requested: [
        {
          id: 'pid',
          formats: ['dc+sd-jwt'],
          types: ['https://issuer.example/vct/Pid'],
          claims: ['address.locality', 'nationalities.*'],
        },
        { id: 'degree', formats: ['jwt_vc_json'], types: ['UniversityDegreeCredential'], claims: [] },
        // Appendix B.2: the doctype, and each element as namespace.element
        {
          id: 'mdl',
          formats: ['mso_mdoc'],
          types: ['org.iso.18013.5.1.mDL'],
          claims: ['org.iso.18013.5.1.family_name'],
        },
      ],
    })
    assert.equal(
      requestedText(dcql.requested[2] as never),
      'mdl; type org.iso.18013.5.1.mDL; format mso_mdoc; claims org.iso.18013.5.1.family_name',
    )
    assert.equal(
      requestedText(dcql.requested[0] as never),
      'pid; type https://issuer.example/vct/Pid; format dc+sd-jwt; claims address.locality, nationalities.*',
    )
    assert.equal(
      requestedText(pe.requested[1] as never),
      'identity.VerifiableId; type VerifiableId; format ldp_vc; no claims named',
    )
    // What the component accepts of a backend's answer: well-formed entries only.
    assert.deepEqual(asRequested([dcql.requested[1], { id: 'x', formats: 'dc+sd-jwt' }, null]), [
      dcql.requested[1],
    ])
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

const BIN = new URL('../../bin/vc-harness.mjs', import.meta.url).pathname

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
