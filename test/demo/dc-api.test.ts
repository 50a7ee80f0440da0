// The demo backend's Digital Credentials API routes (src/demo/), without a browser and without depending on the
// service's own DC API: the demo's `fetch` puts its own `dcApi` member in 4.6's answer (in place of the
// service's, for a template with `dcql.dcApi`) whose request and response URLs are answered here, so every answer of the service
// can be played and what the backend forwards recorded. Chromium and the real service: test/web/dc-api.test.ts.
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { DEMO_DC_API_BODY_LIMIT } from '../../src/demo/plugin.ts'
import { ShiftedClock } from '../../src/service/util/clock.ts'
import type { FlowCreated } from '../../src/web/flow-state.ts'
import {
  assertNoSecrets,
  DCQL_TEMPLATES,
  type DemoServer,
  secretsOf,
  startDemoServer,
} from '../browser-helpers.ts'

const FAKE = '/oid4vp/demo/fake-dc-api/'
const ENTRY = {
  protocol: 'openid4vp-v1-multisigned',
  data: {
    request: {
      payload: 'eyJub25jZSI6Im4ifQ',
      signatures: [
        { protected: 'eyJhbGciOiJFUzI1NiJ9', signature: 'c2ln' },
        { protected: 'e30', signature: 'c2ln' },
      ],
    },
  },
}

/** What the fake service endpoints answer next, and what they were sent. */
const service = {
  dcApi: { protocol: 'openid4vp-v1-multisigned' } as Record<string, unknown> | undefined,
  request: { status: 200, body: ENTRY as unknown },
  response: { status: 200, body: {} as unknown },
  unreachable: false,
  calls: [] as { method: string; path: string; body?: unknown }[],
}

let demo: DemoServer
let secrets: string[]

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

/** The real service for everything but the fake DC API endpoints; 4.6 answers gain `dcApi`. */
const fakeFetch: typeof fetch = async (input, init) => {
  const url = new URL(String(input))
  if (url.pathname.startsWith(FAKE)) {
    if (service.unreachable) throw new TypeError('fetch failed')
    const method = init?.method ?? 'GET'
    service.calls.push({
      method,
      path: url.pathname,
      ...(init?.body ? { body: JSON.parse(String(init.body)) } : {}),
    })
    const answer = method === 'GET' ? service.request : service.response
    return json(answer.status, answer.body)
  }
  const response = await fetch(input, init)
  if (url.pathname !== '/api/v3/sessions' || init?.method !== 'POST' || response.status !== 201)
    return response
  // The service's own dcApi (config/demo.json's pid-check has one) is replaced by the fake, or removed.
  const { dcApi: _real, ...body } = (await response.json()) as { id: string; dcApi?: unknown }
  if (service.dcApi === undefined) return json(201, body)
  return json(201, {
    ...body,
    dcApi: {
      request: `https://rp.example${FAKE}${body.id}`,
      response: `https://rp.example${FAKE}${body.id}`,
      expectedOrigins: ['https://rp.example'],
      ...service.dcApi,
    },
  })
}

before(async () => {
  demo = await startDemoServer(new ShiftedClock(), { templates: DCQL_TEMPLATES, fetch: fakeFetch })
  secrets = secretsOf(demo.config)
})
after(async () => {
  await demo?.close()
})
beforeEach(() => {
  service.dcApi = { protocol: 'openid4vp-v1-multisigned' }
  service.request = { status: 200, body: ENTRY }
  service.response = { status: 200, body: {} }
  service.unreachable = false
  service.calls = []
})

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
  return { status: response.statusCode, body: response.json() as Record<string, unknown> }
}
const open = async () => {
  const response = await call('POST', '/demo/api/verification', { body: '{}' })
  assert.equal(response.status, 201, JSON.stringify(response.body))
  return response.body as unknown as FlowCreated
}
const ORIGIN = { origin: 'https://rp.example' }
const answer = (data: unknown = { vp_token: { VerifiableId: ['x~y~'] } }) =>
  JSON.stringify({ protocol: 'openid4vp-v1-multisigned', data })

describe('demo backend: the Digital Credentials API', () => {
  test('the page learns the protocol and the expected origins of the DC API request, never its URLs', async () => {
    const session = await open()
    assert.deepEqual(session.dcApi, {
      protocol: 'openid4vp-v1-multisigned',
      expectedOrigins: ['https://rp.example'],
    })
    assert.ok(!JSON.stringify(session).includes(FAKE), 'the service URL reached the page')
  })

  test("GET …/dc-api: the entry as the service answered it (nested JSON kept); refusals are the demo's codes", async () => {
    const session = await open()
    const path = `/demo/api/verification/${session.id}/dc-api`
    const entry = await call('GET', path)
    assert.equal(entry.status, 200)
    assert.deepEqual(entry.body, ENTRY)
    assert.deepEqual(service.calls, [{ method: 'GET', path: `${FAKE}${session.id}` }])

    service.request = {
      status: 400,
      body: { error: 'invalid_request', error_description: 'no longer pending' },
    }
    const refused = await call('GET', path)
    assert.equal(refused.status, 502)
    assert.equal(refused.body.code, 'upstream_failed')
    assert.equal(refused.body.detail, 'DC API request: the service answered HTTP 400 invalid_request')

    service.request = { status: 200, body: { protocol: 'openid4vp-v1-unsigned', data: {} } }
    assert.equal((await call('GET', path)).body.code, 'upstream_failed', 'another protocol than 4.6 named')
    service.request = { status: 200, body: { protocol: 'openid4vp-v1-multisigned', data: 'x' } }
    assert.equal((await call('GET', path)).body.code, 'upstream_failed', 'data is not an object')
    service.unreachable = true
    const unreachable = await call('GET', path)
    assert.deepEqual([unreachable.status, unreachable.body.code], [502, 'upstream_unreachable'])
  })

  test('POST …/dc-api forwards {origin, protocol, data} with the Origin header; verified and rejected are results', async () => {
    const session = await open()
    const path = `/demo/api/verification/${session.id}/dc-api`
    const verified = await call('POST', path, { body: answer(), headers: ORIGIN })
    assert.deepEqual([verified.status, verified.body], [200, { result: 'verified' }])
    assert.deepEqual(service.calls, [
      {
        method: 'POST',
        path: `${FAKE}${session.id}`,
        body: {
          origin: 'https://rp.example',
          protocol: 'openid4vp-v1-multisigned',
          data: { vp_token: { VerifiableId: ['x~y~'] } },
        },
      },
    ])

    service.response = { status: 400, body: { error: 'invalid_presentation', error_description: 'origin' } }
    const rejected = await call('POST', path, {
      body: answer(),
      headers: { origin: 'https://attacker.example' },
    })
    assert.deepEqual([rejected.status, rejected.body], [200, { result: 'rejected' }])
    assert.equal(
      (service.calls.at(-1)?.body as { origin?: string } | undefined)?.origin,
      'https://attacker.example',
    )

    service.response = { status: 400, body: { error: 'invalid_request', error_description: 'unreadable' } }
    const unreadable = await call('POST', path, { body: answer(), headers: ORIGIN })
    assert.deepEqual([unreadable.status, unreadable.body.code], [400, 'answer_refused'])

    service.response = { status: 500, body: { error: 'server_error' } }
    const broken = await call('POST', path, { body: answer(), headers: ORIGIN })
    assert.deepEqual([broken.status, broken.body.code], [502, 'upstream_failed'])
    assert.equal(broken.body.detail, 'DC API response: the service answered HTTP 500 server_error')
  })

  test('POST …/dc-api: no Origin, unknown members, data not an object: 400; beyond the limit: 413; nothing forwarded', async () => {
    const session = await open()
    const path = `/demo/api/verification/${session.id}/dc-api`
    const noOrigin = await call('POST', path, { body: answer() })
    assert.deepEqual([noOrigin.status, noOrigin.body.code], [400, 'validation_failed'])
    const extra = JSON.stringify({ ...JSON.parse(answer()), origin: 'https://rp.example' })
    assert.equal((await call('POST', path, { body: extra, headers: ORIGIN })).status, 400)
    assert.equal((await call('POST', path, { body: answer('vp'), headers: ORIGIN })).status, 400)
    assert.equal((await call('POST', path, { body: answer([]), headers: ORIGIN })).status, 400)
    const big = answer({ vp_token: 'x'.repeat(DEMO_DC_API_BODY_LIMIT) })
    const tooBig = await call('POST', path, { body: big, headers: ORIGIN })
    assert.deepEqual([tooBig.status, tooBig.body.code], [413, 'payload_too_large'])
    assert.deepEqual(service.calls, [])
  })

  test('only flows this backend opened with a DC API request: 404 otherwise, 400 for a malformed id', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000'
    const notOpened = await call('GET', `/demo/api/verification/${unknown}/dc-api`)
    assert.deepEqual([notOpened.status, notOpened.body.code], [404, 'flow_not_found'])
    assert.equal(
      (await call('POST', `/demo/api/verification/${unknown}/dc-api`, { body: answer(), headers: ORIGIN }))
        .status,
      404,
    )
    assert.equal((await call('GET', '/demo/api/verification/..%2Fx/dc-api')).status, 400)
    assert.equal((await call('GET', `/demo/api/issuance/${unknown}/dc-api`)).status, 404)

    service.dcApi = undefined
    const plain = await open()
    assert.equal(plain.dcApi, undefined)
    const none = await call('GET', `/demo/api/verification/${plain.id}/dc-api`)
    assert.deepEqual([none.status, none.body.code], [404, 'dc_api_not_offered'])
    assert.deepEqual(service.calls, [])
  })

  test("a 4.6 answer with an unusable dcApi member is the service's fault: 502", async () => {
    service.dcApi = { protocol: 'openid4vp-v9-signed' }
    const response = await call('POST', '/demo/api/verification', { body: '{}' })
    assert.deepEqual([response.status, response.body.code], [502, 'upstream_failed'])
  })
})
