import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { auth, DEMO, makeApp, problemOf, type TestApp, tokenFor } from '../../helpers.ts'

describe('relying-party API errors (problem+json)', () => {
  let t: TestApp
  let app: string
  before(async () => {
    t = await makeApp()
    t.app.get('/test-only/boom', async () => {
      throw new Error('secret database detail at /var/lib/x')
    })
    app = await tokenFor(t.app, DEMO.app)
  })
  after(() => t.close())

  const offer = (payload: string, contentType = 'application/json') =>
    t.app.inject({
      method: 'POST',
      url: '/api/v3/oidc-issuance/credential-offer',
      headers: { ...auth(app), 'content-type': contentType },
      payload,
    })

  test('malformed JSON → 400 malformed_json', async () => {
    const response = await offer('{"group":')
    assert.equal(response.statusCode, 400)
    assert.equal(problemOf(response).code, 'malformed_json')
  })

  test('a JSON prototype-poisoning body is refused', async () => {
    const response = await offer('{"group":"degree","__proto__":{"admin":true}}')
    assert.equal(response.statusCode, 400)
  })

  test('wrong content type → 415 unsupported_media_type', async () => {
    const response = await offer('group=degree', 'application/x-www-form-urlencoded')
    assert.equal(response.statusCode, 415)
    assert.equal(problemOf(response).code, 'unsupported_media_type')
  })

  test('an oversized body → 413 payload_too_large and nothing is created', async () => {
    const before = await t.app.services.store.processes.list({ tenantId: 'demo', limit: 1000 })
    const response = await offer(JSON.stringify({ group: 'degree', pad: 'x'.repeat(300_000) }))
    assert.equal(response.statusCode, 413)
    assert.equal(problemOf(response).code, 'payload_too_large')
    const afterRows = await t.app.services.store.processes.list({ tenantId: 'demo', limit: 1000 })
    assert.equal(afterRows.length, before.length)
  })

  test('problem bodies carry type, title, status, detail and code', async () => {
    const problem = problemOf(await offer('{}'))
    assert.deepEqual(Object.keys(problem).sort(), ['code', 'detail', 'errors', 'status', 'title', 'type'])
    assert.equal(problem.type, 'urn:vc-harness:problem:validation_failed')
    assert.equal(problem.status, 400)
  })

  test('an unknown route → 404 problem not_found', async () => {
    const response = await t.app.inject({ url: '/api/v3/nothing-here' })
    assert.equal(response.statusCode, 404)
    assert.equal(problemOf(response).code, 'not_found')
  })

  test('a 5xx hides its cause: no message, no stack trace', async () => {
    const response = await t.app.inject({ url: '/test-only/boom' })
    assert.equal(response.statusCode, 500)
    const problem = problemOf(response)
    assert.equal(problem.code, 'internal_error')
    assert.ok(!response.body.includes('secret database detail'))
    assert.ok(!response.body.includes('at '))
  })

  test('responses carry X-Content-Type-Options: nosniff', async () => {
    assert.equal((await t.app.inject({ url: '/health' })).headers['x-content-type-options'], 'nosniff')
  })
})

describe('OpenAPI contract', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp()
  })
  after(() => t.close())

  test('/docs/json is an OpenAPI 3 document covering every relying-party route', async () => {
    const response = await t.app.inject({ url: '/docs/json' })
    assert.equal(response.statusCode, 200)
    const doc = response.json()
    assert.match(doc.openapi, /^3\./)
    const paths = Object.keys(doc.paths)
    for (const path of [
      '/admin/v1/api_keys/login',
      '/api/v3/oidc-issuance/credential-offer',
      '/admin/v1/issuanceRequests/{id}',
      '/admin/v1/issuanceRequests',
      '/portal/v1/api-keys',
      '/portal/v1/issuance-templates/{id}',
      '/portal/v1/tenants',
    ]) {
      assert.ok(paths.includes(path), `missing ${path}`)
    }
    const login = doc.paths['/admin/v1/api_keys/login'].post
    assert.ok(login.responses['200'].headers.Token, 'login documents the Token header')
    assert.ok(doc.paths['/admin/v1/issuanceRequests'].get.responses['403'])
  })

  test('/docs serves a browsable page', async () => {
    const response = await t.app.inject({ url: '/docs/' })
    assert.equal(response.statusCode, 200)
    assert.match(String(response.headers['content-type']), /text\/html/)
  })
})

describe('error code documentation', () => {
  test('docs/api.md lists every problem code with its status, and nothing else', async () => {
    const { readFileSync } = await import('node:fs')
    const { PROBLEMS } = await import('../../../src/service/errors/problem.ts')
    const doc = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8')
    const documented = [...doc.matchAll(/^\| `([a-z_]+)`\s*\| (\d{3})\s*\|/gm)].map((m) => [
      m[1],
      Number(m[2]),
    ])
    const actual = Object.entries(PROBLEMS).map(([code, [status]]) => [code, status])
    assert.deepEqual(documented.sort(), actual.sort())
  })
})
