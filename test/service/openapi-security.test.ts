// The OpenAPI document (/docs/json, Swagger UI's source) says how each call authenticates, and says it
// truthfully: every operation is called without credentials, and exactly those that answer 401 declare a
// security requirement: the relying party's access token (`jwt`), Basic for the login, and the wallet's OAuth
// access token (`walletToken`) for the OpenID4VCI credential, deferred and notification endpoints.
// test/service/swagger-browser.test.ts proves in Chromium that Swagger UI then sends the token.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { makeApp, type TestApp } from '../helpers.ts'

interface Operation {
  summary?: string
  security?: Record<string, string[]>[]
}
interface OpenApi {
  info: { version: string }
  servers?: { url: string; description?: string }[]
  paths: Record<string, Record<string, Operation>>
  components: { securitySchemes: Record<string, Record<string, string>> }
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete']
const UUID = '00000000-0000-4000-8000-000000000000'

describe('OpenAPI security: what /docs/json declares is what the service enforces', () => {
  let t: TestApp
  let doc: OpenApi
  before(async () => {
    t = await makeApp()
    // As a browser at the public URL asks for it (inject's default host is localhost:80).
    doc = (await t.app.inject({ url: '/docs/json', headers: { host: 'issuer.example' } })).json() as OpenApi
  })
  after(() => t.close())

  test('the schemes: jwt (the Authorization header carrying `jwt <token>`) and basic (the login)', () => {
    const { jwt, basic } = doc.components.securitySchemes
    assert.deepEqual(
      { type: jwt?.type, in: jwt?.in, name: jwt?.name },
      {
        type: 'apiKey',
        in: 'header',
        name: 'Authorization',
      },
    )
    assert.match(jwt?.description ?? '', /jwt <token>/)
    assert.deepEqual({ type: basic?.type, scheme: basic?.scheme }, { type: 'http', scheme: 'basic' })
  })

  test('every operation answering 401 without credentials declares security, and no other does', async () => {
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => ({ path, method: m, operation: item[m] as Operation })),
    )
    assert.ok(operations.length > 30, `only ${operations.length} operations`)
    const undeclared: string[] = []
    const overDeclared: string[] = []
    let protectedCount = 0
    for (const { path, method, operation } of operations) {
      const url = path.replace(/\{tenant\}/g, 'demo').replace(/\{[^}]+\}/g, UUID)
      const response = await t.app.inject({
        method: method.toUpperCase() as 'GET',
        url,
        // A body where one is expected, so that only the missing credentials can be wrong.
        ...(['post', 'put', 'patch'].includes(method)
          ? { headers: { 'content-type': 'application/json', tenant: 'demo' }, payload: '{}' }
          : {}),
      })
      const where = `${method.toUpperCase()} ${path}`
      const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement))
      if (response.statusCode === 401) {
        protectedCount++
        const expected =
          path === '/admin/v1/api_keys/login'
            ? ['basic']
            : path.startsWith('/oid4vci/')
              ? ['walletToken']
              : ['jwt']
        if (JSON.stringify(schemes) !== JSON.stringify(expected)) {
          undeclared.push(`${where} answers 401 but declares [${schemes}], not [${expected}]`)
        }
      } else if (schemes.length > 0) {
        overDeclared.push(`${where} declares [${schemes}] but answers ${response.statusCode} without it`)
      }
    }
    assert.deepEqual(undeclared, [])
    assert.deepEqual(overDeclared, [])
    assert.ok(protectedCount >= 25, `only ${protectedCount} protected operations found`)
  })

  test('the version is the package version; servers name the public URL; summaries say "an issuance"', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string
    }
    assert.equal(doc.info.version, pkg.version)
    assert.equal(doc.servers?.[0]?.url, 'https://issuer.example')
    const summaries = Object.values(doc.paths).flatMap((item) =>
      Object.values(item).map((o) => (o as Operation).summary ?? ''),
    )
    assert.ok(summaries.includes('Create an issuance template'))
    assert.deepEqual(
      summaries.filter((s) => /\ba [aeiou]/i.test(s)),
      [],
      'a summary with "a" before a vowel',
    )
  })

  test('a page opened at another address than the public URL lists that address first ("/")', async () => {
    const other = (await t.app.inject({ url: '/docs/json', headers: { host: '127.0.0.1:8080' } })).json()
    assert.deepEqual(
      (other as OpenApi).servers?.map((s) => s.url),
      ['/', 'https://issuer.example'],
    )
  })
})
