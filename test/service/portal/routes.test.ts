import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  auth,
  DEMO,
  loginRequest,
  makeApp,
  postOffer,
  problemOf,
  type TestApp,
  tokenFor,
} from '../../helpers.ts'

describe('management portal', () => {
  let t: TestApp
  let admin: string
  before(async () => {
    t = await makeApp()
    admin = await tokenFor(t.app, DEMO.admin)
  })
  after(() => t.close())

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, token = admin) =>
    t.app.inject({ method, url: `/portal/v1${url}`, headers: auth(token), ...(payload ? { payload } : {}) })

  test('creates an API key whose secret is shown once and stored only as a hash', async () => {
    const created = await call('POST', '/api-keys', { role: 'app', template: 'degree', label: 'ci' })
    assert.equal(created.statusCode, 201)
    const key = created.json()
    assert.equal(key.role, 'app')
    assert.equal(key.template, 'degree')
    assert.equal(key.source, 'portal')
    assert.match(key.secret, /^[\w-]{43}$/)
    const listed = (await call('GET', '/api-keys')).json().find((k: { id: string }) => k.id === key.id)
    assert.equal(listed.secret, undefined, 'the list never shows secrets')
    const stored = await t.app.services.store.apiKeys.get(key.id)
    assert.ok(stored && !stored.secretHash.includes(key.secret))
    assert.match(stored?.secretHash ?? '', /^hmac-sha256\$/)
    assert.equal(
      (await loginRequest(t.app, { id: key.id, secret: key.secret, tenant: 'demo' })).statusCode,
      200,
    )
  })

  test('revoking a key refuses its login and ends its live tokens at once', async () => {
    const key = (await call('POST', '/api-keys', { role: 'app', template: 'degree' })).json()
    const token = await tokenFor(t.app, { id: key.id, secret: key.secret, tenant: 'demo' })
    assert.equal((await call('DELETE', `/api-keys/${key.id}`)).statusCode, 204)
    const login = await loginRequest(t.app, { id: key.id, secret: key.secret, tenant: 'demo' })
    assert.equal(login.statusCode, 401)
    assert.equal(problemOf(login).code, 'invalid_credentials')
    const use = await postOffer(t.app, token, { group: 'degree' })
    assert.equal(use.statusCode, 401)
    assert.equal(problemOf(use).code, 'invalid_token')
    assert.notEqual(
      (await call('GET', '/api-keys')).json().find((k: { id: string }) => k.id === key.id).revokedAt,
      null,
    )
  })

  test('keys from the configuration file cannot be revoked through the portal (409 config_managed)', async () => {
    const response = await call('DELETE', `/api-keys/${DEMO.app.id}`)
    assert.equal(response.statusCode, 409)
    assert.equal(problemOf(response).code, 'config_managed')
  })

  test('a key for an unknown template → 404; an operator role cannot be minted → 400', async () => {
    assert.equal((await call('POST', '/api-keys', { role: 'app', template: 'ghost' })).statusCode, 404)
    const operator = await call('POST', '/api-keys', { role: 'operator' })
    assert.equal(operator.statusCode, 400)
    assert.equal(problemOf(operator).errors?.[0]?.field, 'body/role')
  })

  test('issuance templates: create, read, list, replace, delete; the webhook secret is never returned', async () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
    const created = await call('POST', '/issuance-templates', {
      id: 'badge',
      credentialType: 'OpenBadgeCredential',
      webhookUrl: 'https://rp.example/hooks',
      webhookSecret: secret,
    })
    assert.equal(created.statusCode, 201)
    assert.equal(created.json().hasWebhookSecret, true)
    assert.ok(!created.body.includes(secret))
    const read = await call('GET', '/issuance-templates/badge')
    assert.equal(read.json().credentialType, 'OpenBadgeCredential')
    assert.ok(!read.body.includes(secret))
    const listIds = (await call('GET', '/issuance-templates')).json().map((x: { id: string }) => x.id)
    assert.deepEqual(listIds, ['badge', 'degree', 'degree-ldp', 'mdl', 'pid-haip', 'pid-sd-jwt'])
    const replaced = await call('PUT', '/issuance-templates/badge', { credentialType: 'BadgeV2' })
    assert.equal(replaced.statusCode, 200)
    assert.equal(replaced.json().credentialType, 'BadgeV2')
    assert.equal(replaced.json().hasWebhookSecret, false)
    assert.equal((await call('DELETE', '/issuance-templates/badge')).statusCode, 204)
    assert.equal((await call('GET', '/issuance-templates/badge')).statusCode, 404)
  })

  test('template ids are unique across kinds in a tenant (409), and kinds do not mix (404)', async () => {
    const dup = await call('POST', '/verification-templates', {
      id: 'degree',
      name: 'x',
      credentialTypes: ['A'],
    })
    assert.equal(dup.statusCode, 409)
    assert.equal(problemOf(dup).code, 'conflict')
    assert.equal((await call('GET', '/verification-templates/degree')).statusCode, 404)
    assert.equal((await call('GET', '/verification-templates/degree-check')).statusCode, 200)
  })

  test('a template in use by a process or a live key cannot be deleted (409 template_in_use)', async () => {
    await call('POST', '/issuance-templates', { id: 'used', credentialType: 'UsedCredential' })
    const key = (await call('POST', '/api-keys', { role: 'app', template: 'used' })).json()
    const blocked = await call('DELETE', '/issuance-templates/used')
    assert.equal(blocked.statusCode, 409)
    assert.equal(problemOf(blocked).code, 'template_in_use')
    await call('DELETE', `/api-keys/${key.id}`)
    assert.equal((await call('DELETE', '/issuance-templates/used')).statusCode, 204)
  })

  test('configuration templates cannot be changed through the portal (409 config_managed)', async () => {
    const response = await call('PUT', '/issuance-templates/degree', { credentialType: 'Other' })
    assert.equal(response.statusCode, 409)
    assert.equal(problemOf(response).code, 'config_managed')
  })

  test('bad template bodies are 400 naming the field, and nothing is stored', async () => {
    for (const [body, field] of [
      [{ id: 'x y', credentialType: 'A' }, 'body/id'],
      [{ id: 'ok', credentialType: 'A', webhookUrl: 'ftp://x' }, 'body/webhookUrl'],
      [{ id: 'ok', credentialType: 'A', webhookSecret: 'plain' }, 'body/webhookSecret'],
      [{ id: 'ok' }, 'body/credentialType'],
    ] as const) {
      const response = await call('POST', '/issuance-templates', body)
      assert.equal(response.statusCode, 400, JSON.stringify(body))
      assert.ok(
        problemOf(response).errors?.some((e) => e.field === field),
        `${field} in ${response.body}`,
      )
    }
    assert.equal((await call('GET', '/issuance-templates/ok')).statusCode, 404)
  })

  test('applications cannot use the portal; administrators cannot create tenants', async () => {
    const asApp = await call('GET', '/api-keys', undefined, await tokenFor(t.app, DEMO.app))
    assert.equal(asApp.statusCode, 403)
    assert.equal(problemOf(asApp).code, 'role_forbidden')
    const tenant = await call('POST', '/tenants', { id: 'sneaky' })
    assert.equal(tenant.statusCode, 403)
  })

  test('an operator provisions an isolated tenant with an administrator key', async () => {
    const operator = await tokenFor(t.app, DEMO.operator)
    const created = await call('POST', '/tenants', { id: 'fresh' }, operator)
    assert.equal(created.statusCode, 201)
    const { adminKey } = created.json()
    const freshAdmin = await tokenFor(t.app, { id: adminKey.id, secret: adminKey.secret, tenant: 'fresh' })
    const templates = await call('GET', '/issuance-templates', undefined, freshAdmin)
    assert.deepEqual(templates.json(), [], 'a new tenant sees none of the demo tenant’s templates')
    const keys = (await call('GET', '/api-keys', undefined, freshAdmin)).json()
    assert.deepEqual(
      keys.map((k: { id: string }) => k.id),
      [adminKey.id],
    )
    assert.equal((await call('POST', '/tenants', { id: 'fresh' }, operator)).statusCode, 409)
    assert.equal((await call('POST', '/tenants', { id: 'Bad Id' }, operator)).statusCode, 400)
  })
})
