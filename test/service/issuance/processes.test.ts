import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  auth,
  createOffer,
  DEMO,
  makeApp,
  OTHER,
  postOffer,
  problemOf,
  type TestApp,
  tokenFor,
  twoTenantConfig,
} from '../../helpers.ts'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('4.2 create offer', () => {
  let t: TestApp
  let app: string
  before(async () => {
    t = await makeApp(twoTenantConfig())
    app = await tokenFor(t.app, DEMO.app)
  })
  after(() => t.close())

  test('201 with a deep link whose URL-encoded inner URL ends with the process id', async () => {
    const response = await postOffer(t.app, app, { group: 'degree' })
    assert.equal(response.statusCode, 201)
    const body = response.json()
    assert.deepEqual(Object.keys(body), ['credential_offer_uri'])
    const uri: string = body.credential_offer_uri
    assert.match(uri, /^openid-credential-offer:\/\/\?credential_offer_uri=https%3A%2F%2Fissuer\.example%2F/)
    const inner = new URL(decodeURIComponent(uri.split('credential_offer_uri=')[1] ?? ''))
    assert.equal(inner.origin, 'https://issuer.example')
    const processId = inner.pathname.split('/').pop() ?? ''
    assert.match(processId, /^[0-9a-f-]{36}$/)
    const process = await t.app.inject({ url: `/admin/v1/issuanceRequests/${processId}`, headers: auth(app) })
    assert.equal(process.statusCode, 200)
    assert.equal(process.json().status, 'PENDING')
  })

  test('the wallet scheme is configurable', async () => {
    const config = twoTenantConfig()
    config.walletScheme = 'haip'
    const t2 = await (await import('../../helpers.ts')).makeApp(config)
    const { uri } = await createOffer(t2.app, await tokenFor(t2.app, DEMO.app))
    assert.match(uri, /^haip:\/\/\?credential_offer_uri=/)
    await t2.close()
  })

  test('a missing group → 400 naming the field; an unknown field → 400 naming it', async () => {
    const missing = await postOffer(t.app, app, {})
    assert.equal(missing.statusCode, 400)
    assert.deepEqual(problemOf(missing).errors?.[0]?.field, 'body/group')
    const extra = await postOffer(t.app, app, { group: 'degree', colour: 'red' })
    assert.equal(extra.statusCode, 400)
    assert.equal(problemOf(extra).errors?.[0]?.field, 'body/colour')
    assert.match(problemOf(extra).detail, /unknown field "colour"/)
  })

  test('a group that is not a number-coerced string: {group: 5} → 400', async () => {
    const response = await postOffer(t.app, app, { group: 5 })
    assert.equal(response.statusCode, 400)
    assert.equal(problemOf(response).code, 'validation_failed')
  })

  test('another template than the token’s → 403 template_not_allowed; unknown template → 404', async () => {
    const admin = await tokenFor(t.app, DEMO.admin)
    const unlinked = await t.app.inject({
      method: 'POST',
      url: '/portal/v1/api-keys',
      headers: auth(admin),
      payload: { role: 'app' },
    })
    assert.equal(unlinked.statusCode, 201)
    const wide = await tokenFor(t.app, {
      id: unlinked.json().id,
      secret: unlinked.json().secret,
      tenant: 'demo',
    })
    const unknown = await postOffer(t.app, wide, { group: 'no-such-template' })
    assert.equal(unknown.statusCode, 404)
    assert.equal(problemOf(unknown).code, 'template_not_found')
    const verifierTemplate = await postOffer(t.app, wide, { group: 'degree-check' })
    assert.equal(verifierTemplate.statusCode, 404, 'a verification template is not an issuance template')
    const linkedElsewhere = await postOffer(t.app, await tokenFor(t.app, DEMO.verifierApp), {
      group: 'degree',
    })
    assert.equal(linkedElsewhere.statusCode, 403)
    assert.equal(problemOf(linkedElsewhere).code, 'template_not_allowed')
  })

  test('an administrator cannot create offers (role_forbidden)', async () => {
    const response = await postOffer(t.app, await tokenFor(t.app, DEMO.admin), { group: 'degree' })
    assert.equal(response.statusCode, 403)
    assert.equal(problemOf(response).code, 'role_forbidden')
  })
})

describe('4.3 read process', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(twoTenantConfig())
  })
  after(() => t.close())

  test('200 with the section 2.2 shape, millisecond ISO timestamps, no data while PENDING', async () => {
    const app = await tokenFor(t.app, DEMO.app)
    const { processId } = await createOffer(t.app, app)
    const response = await t.app.inject({
      url: `/admin/v1/issuanceRequests/${processId}`,
      headers: auth(app),
    })
    assert.equal(response.statusCode, 200)
    // Issue 19: a process carries credentials and personal data; no cache may keep it.
    assert.equal(response.headers['cache-control'], 'no-store')
    const body = response.json()
    assert.deepEqual(Object.keys(body).sort(), [
      'createdAt',
      'group',
      'id',
      'status',
      'type',
      'updatedAt',
      'validator',
    ])
    assert.equal(body.id, processId)
    assert.equal(body.status, 'PENDING')
    assert.equal(body.group, 'degree')
    assert.equal(body.type, 'OIDC4VCI_PRE_AUTHORIZED')
    assert.equal(body.validator, null)
    assert.equal(body.createdAt, '2026-11-22T10:15:00.123Z')
    assert.match(body.updatedAt, ISO_MS)
  })

  test("another tenant's process answers 404, byte-identical to an unknown id", async () => {
    const { processId } = await createOffer(t.app, await tokenFor(t.app, DEMO.app))
    const other = await tokenFor(t.app, OTHER.app)
    const foreign = await t.app.inject({
      url: `/admin/v1/issuanceRequests/${processId}`,
      headers: auth(other),
    })
    const unknown = await t.app.inject({
      url: '/admin/v1/issuanceRequests/00000000-0000-4000-8000-000000000000',
      headers: auth(other),
    })
    assert.equal(foreign.statusCode, 404)
    assert.equal(problemOf(foreign).code, 'process_not_found')
    assert.equal(
      foreign.body.replace(processId, 'ID'),
      unknown.body.replace('00000000-0000-4000-8000-000000000000', 'ID'),
    )
  })

  test('a same-tenant application linked to another template gets 403 process_not_linked', async () => {
    const { processId } = await createOffer(t.app, await tokenFor(t.app, DEMO.app))
    const response = await t.app.inject({
      url: `/admin/v1/issuanceRequests/${processId}`,
      headers: auth(await tokenFor(t.app, DEMO.verifierApp)),
    })
    assert.equal(response.statusCode, 403)
    assert.equal(problemOf(response).code, 'process_not_linked')
  })

  test('an administrator is refused (the document: an application, not an administrator)', async () => {
    const { processId } = await createOffer(t.app, await tokenFor(t.app, DEMO.app))
    const response = await t.app.inject({
      url: `/admin/v1/issuanceRequests/${processId}`,
      headers: auth(await tokenFor(t.app, DEMO.admin)),
    })
    assert.equal(response.statusCode, 403)
    assert.equal(problemOf(response).code, 'role_forbidden')
  })
})

describe('4.5 list processes', () => {
  let t: TestApp
  let admin: string
  const ids: string[] = []
  before(async () => {
    t = await makeApp(twoTenantConfig())
    const app = await tokenFor(t.app, DEMO.app)
    for (let i = 0; i < 7; i++) {
      ids.push((await createOffer(t.app, app)).processId)
      t.clock.advance(1000)
    }
    await createOffer(t.app, await tokenFor(t.app, OTHER.app))
    admin = await tokenFor(t.app, DEMO.admin)
  })
  after(() => t.close())

  const list = (query: string, token = admin) =>
    t.app.inject({ url: `/admin/v1/issuanceRequests${query}`, headers: auth(token) })

  test("an administrator gets an array of the tenant's processes, oldest first, never another tenant's", async () => {
    const response = await list('')
    assert.equal(response.statusCode, 200)
    assert.deepEqual(
      response.json().map((p: { id: string }) => p.id),
      ids,
    )
    assert.equal(response.headers.link, undefined)
  })

  test('status filter: PENDING lists them, ISSUED and REJECTED are empty; anything else is 400', async () => {
    assert.equal((await list('?status=PENDING')).json().length, 7)
    assert.deepEqual((await list('?status=ISSUED')).json(), [])
    assert.deepEqual((await list('?status=REJECTED')).json(), [])
    const bad = await list('?status=DONE')
    assert.equal(bad.statusCode, 400)
    assert.equal(problemOf(bad).errors?.[0]?.field, 'querystring/status')
    assert.match(problemOf(bad).detail, /PENDING, ISSUED, REJECTED/)
  })

  test('keyset pagination through the Link header visits every process exactly once', async () => {
    const seen: string[] = []
    let query = '?limit=3'
    for (let page = 0; page < 5 && query; page++) {
      const response = await list(query)
      assert.equal(response.statusCode, 200)
      seen.push(...response.json().map((p: { id: string }) => p.id))
      const next = /<([^>]+)>; rel="next"/.exec(String(response.headers.link ?? ''))?.[1]
      query = next ? new URL(next).search : ''
    }
    assert.deepEqual(seen, ids)
  })

  test('limit above the maximum, a non-integer limit, an unknown parameter and a forged cursor are 400', async () => {
    for (const [query, field] of [
      ['?limit=201', 'querystring/limit'],
      ['?limit=abc', 'querystring/limit'],
      ['?limit=0', 'querystring/limit'],
      ['?sort=desc', 'querystring/sort'],
    ]) {
      const response = await list(query ?? '')
      assert.equal(response.statusCode, 400, query)
      assert.equal(problemOf(response).errors?.[0]?.field, field, query)
    }
    const forged = await list('?cursor=bm90LWEtY3Vyc29y')
    assert.equal(forged.statusCode, 400)
    assert.equal(problemOf(forged).code, 'invalid_cursor')
  })

  test('an application gets 403 role_forbidden', async () => {
    const response = await list('', await tokenFor(t.app, DEMO.app))
    assert.equal(response.statusCode, 403)
    assert.equal(problemOf(response).code, 'role_forbidden')
  })

  test("the other tenant's administrator sees only its own process", async () => {
    const response = await list('', await tokenFor(t.app, OTHER.admin))
    assert.equal(response.json().length, 1)
    assert.ok(!ids.includes(response.json()[0].id))
  })
})
