import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { supportCodeLibraryBuilder } from '@cucumber/cucumber'
import { RelyingPartyClient } from '../../src/client/index.ts'
import { SecretRegistry } from '../../src/harness/redact.ts'
import type { Target } from '../../src/harness/target.ts'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { cleanupEnabled, debrisOf } from '../../steps/support/cleanup.ts'
import { BODY_LIMIT, ExchangeLog } from '../../steps/support/exchanges.ts'
import { type CliResult, explain, ROOT, runCli } from '../fixtures/cli.ts'
import { DEMO } from '../helpers.ts'

// The HTTP exchanges of each scenario in the reports, redacted (steps/support/exchanges.ts), and the
// removal of what a run created on an external target (steps/support/cleanup.ts). Two small runs of the
// real suite side by side: against the embedded service, and against the demo service in this process
// described by a profile (an external target, so cleanup is on).

// Login scenarios (tenants provisioned through the portal: keys and templates) and one full issuance
// (the wallet's offer, token and credential requests: a pre-authorized code, an access token).
const TAGS = '@interface-4.1 or (@interface-2.3 and @interface-2.4)'
const DEMO_SECRETS = [DEMO.app.secret, DEMO.verifierApp.secret, DEMO.admin.secret, DEMO.operator.secret]

const cli = (args: string[], env: Record<string, string> = {}) => runCli(['conformance', ...args], { env })

interface JsonScenario {
  name: string
  before?: { embeddings?: { data: string; mime_type: string }[] }[]
  steps: { embeddings?: { data: string; mime_type: string }[] }[]
  after?: { embeddings?: { data: string; mime_type: string }[] }[]
}

/** Every attachment of every scenario in cucumber.json, decoded. */
function attachments(dir: string): { scenario: string; text: string; type: string }[] {
  const features = JSON.parse(readFileSync(join(dir, 'cucumber.json'), 'utf8')) as {
    elements: JsonScenario[]
  }[]
  return features.flatMap((f) =>
    f.elements.flatMap((s) =>
      [...(s.before ?? []), ...s.steps, ...(s.after ?? [])].flatMap((step) =>
        (step.embeddings ?? []).map((e) => ({
          scenario: s.name,
          type: e.mime_type,
          text: Buffer.from(e.data, 'base64').toString('utf8'),
        })),
      ),
    ),
  )
}

/** What no report may show: a secret, a token or a code in the clear. */
function assertNothingSecret(text: string, where: string) {
  for (const secret of DEMO_SECRETS) assert.ok(!text.includes(secret), `a demo key secret in ${where}`)
  const leaks = [
    /"secret"\s*:\s*"(?!\[redacted)/,
    /"(?:access_token|pre-authorized_code|tx_code|webhookSecret)"\s*:\s*"(?!\[redacted)/,
    /\btoken: (?!\[redacted)/,
    /\b(?:jwt|Bearer) (?!\[redacted)[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\./,
    /\bBasic (?!\[redacted)[A-Za-z0-9+/]{8,}/,
    /pre-authorized_code=(?!\[redacted)/,
    /whsec_/,
  ]
  for (const leak of leaks) {
    const match = leak.exec(text)
    assert.equal(
      match,
      null,
      `${leak} in ${where}: …${text.slice(Math.max(0, (match?.index ?? 0) - 200), (match?.index ?? 0) + 200)}…`,
    )
  }
}

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'vch-exchanges-'))
  dirs.push(dir)
  return dir
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('conformance runs: exchanges in the reports, cleanup on an external target', () => {
  let server: RunningServer
  let embedded: CliResult
  let external: CliResult
  const embeddedDir = tempDir()
  const externalDir = tempDir()

  before(async () => {
    server = await startServer({
      config: loadConfigFile(DEMO_CONFIG_PATH),
      dataDir: ':memory:',
      host: '127.0.0.1',
      port: 0,
    })
    const profile = join(externalDir, 'profile.json')
    writeFileSync(
      profile,
      JSON.stringify({
        auth_url: server.url,
        tenant: DEMO.app.tenant,
        templates: { issuance: 'degree', other: 'degree-check' },
        app_key: { id: DEMO.app.id, secret: DEMO.app.secret },
        admin_key: { id: DEMO.admin.id, secret: DEMO.admin.secret },
        operator_key: { id: DEMO.operator.id, secret: DEMO.operator.secret },
      }),
    )
    ;[embedded, external] = await Promise.all([
      cli(['--tags', TAGS, '--reports', embeddedDir], { VC_HARNESS_REPORTS: embeddedDir }),
      cli(['--profile', profile, '--tags', TAGS, '--reports', join(externalDir, 'reports')], {
        VC_HARNESS_REPORTS: join(externalDir, 'reports'),
      }),
    ])
  })
  after(() => server.close())

  test('every scenario attaches its HTTP exchanges: requests, answers, the wallet’s too', () => {
    assert.equal(embedded.code, 0, explain(embedded))
    const all = attachments(embeddedDir)
    const exchanges = all.filter((a) => /^\d+ HTTP exchanges? of this scenario/.test(a.text))
    const scenarios = new Set(all.map((a) => a.scenario))
    assert.ok(scenarios.size >= 7, `${scenarios.size} scenarios`)
    assert.deepEqual(new Set(exchanges.map((a) => a.scenario)), scenarios)
    for (const a of exchanges) {
      assert.equal(a.type, 'text/plain')
      assert.match(
        a.text,
        /^#1 relying party: POST http:\/\/127\.0\.0\.1:\d+\/admin\/v1\/api_keys\/login → \d{3} \(\d+ ms\)$/m,
      )
      assert.match(a.text, /^> authorization: Basic \[redacted:api-key-credentials\]$/m)
    }
    const issuance = exchanges.find((a) => /holder DID is the validator/.test(a.scenario))
    assert.ok(issuance, 'the issuance scenario')
    // The wallet's requests, with what they carried redacted.
    assert.match(issuance.text, /^#\d+ wallet: GET http:\/\/\S+\/credential-offer\/\S+ → 200/m)
    assert.match(issuance.text, /"pre-authorized_code":"\[redacted:pre-authorized-code\]"/)
    assert.match(issuance.text, /^#\d+ wallet: POST \S+token → 200/m)
    assert.match(issuance.text, /"access_token":"\[redacted:access-token\]"/)
    assert.match(issuance.text, /^> authorization: Bearer \[redacted:access-token\]$/m)
    // Issue 32: each step carries the exchanges it made, numbered as in the scenario's transcript.
    const perStep = all.filter((a) => a.scenario === issuance.scenario && /^#\d+ /.test(a.text))
    assert.ok(perStep.length >= 2, `${perStep.length} steps with exchanges`)
    const numbers = perStep.flatMap((a) => [...a.text.matchAll(/^#(\d+) /gm)].map((m) => Number(m[1])))
    const total = Number(/^(\d+) HTTP exchange/.exec(issuance.text)?.[1])
    assert.deepEqual(
      numbers,
      Array.from({ length: total }, (_, i) => i + 1),
      'each exchange under one step, in order',
    )
  })

  test('no report shows a secret: attachments, messages, HTML', () => {
    for (const a of attachments(embeddedDir)) assertNothingSecret(a.text, `"${a.scenario}"`)
    for (const file of ['cucumber.ndjson', 'cucumber.html', 'conformance.json', 'cucumber.xml']) {
      const text = readFileSync(join(embeddedDir, file), 'utf8')
      for (const secret of DEMO_SECRETS) assert.ok(!text.includes(secret), `a demo key secret in ${file}`)
    }
  })

  test('what the run created on an external target is gone afterwards', async () => {
    assert.equal(external.code, 0, explain(external))
    const store = server.app.services.store
    const keys = await store.apiKeys.listBySource('portal')
    // Every scenario provisions a tenant with three keys, and logins revoke or add none of the demo's.
    assert.ok(keys.length >= 3 * 7, `${keys.length} keys were created`)
    assert.deepEqual(
      keys.filter((k) => k.revokedAt === null).map((k) => `${k.tenantId}/${k.id} (${k.role})`),
      [],
    )
    // Templates: only those issuance processes refer to remain (the portal refuses to delete them).
    const templates = await store.templates.listBySource('portal')
    const left = await Promise.all(
      templates.map(async (t) => ({
        name: `${t.tenantId}/${t.id}`,
        processes: await store.processes.countByTemplate(t.tenantId, t.id),
      })),
    )
    assert.deepEqual(
      left.filter((t) => t.processes === 0).map((t) => t.name),
      [],
    )
    assert.equal(left.length, 1, JSON.stringify(left))
    // The configured tenant keeps its keys and templates.
    assert.ok((await store.apiKeys.listByTenant('demo')).every((k) => k.revokedAt === null))
    // The run says what it removed and what stays, and each scenario's log too.
    assert.match(
      external.stderr,
      /cleanup: \d+ scenario\(s\) created things on the target: revoked \d+ API key\(s\), deleted \d+ template\(s\)/,
    )
    assert.match(external.stderr, /left: \d+ tenant\(s\) named t-… \(the portal cannot delete tenants/)
    assert.match(external.stderr, /left: 1 template\(s\) that issuance processes refer to/)
    const logs = attachments(join(externalDir, 'reports')).filter((a) => a.text.startsWith('Cleanup of '))
    assert.ok(logs.length >= 7, `${logs.length} cleanup logs`)
    for (const a of attachments(join(externalDir, 'reports'))) assertNothingSecret(a.text, `"${a.scenario}"`)
  })
})

describe('the exchange log', () => {
  const answer =
    (body: string, init: ResponseInit = {}) =>
    async () =>
      new Response(body, init)

  test('records requests and answers, learns their secrets and renders them redacted', async () => {
    const secrets = new SecretRegistry()
    const log = new ExchangeLog(
      secrets,
      answer(JSON.stringify({ id: 'k1', secret: 'handed-out-secret-0123456789' }), {
        status: 201,
        headers: { 'content-type': 'application/json', token: 'opaque-token-abcdef0123456789' },
      }),
    )
    const client = new RelyingPartyClient('http://svc.test', log.fetch('relying party'))
    const response = await client.createApiKey('access-token-0123456789abcdef', { role: 'app' })
    assert.equal(response.status, 201)
    assert.deepEqual(response.body, { id: 'k1', secret: 'handed-out-secret-0123456789' })
    const [exchange] = log.exchanges
    assert.ok(exchange)
    assert.equal(log.exchangeOf(response.headers), exchange)
    assert.equal(exchange.method, 'POST')
    assert.equal(exchange.url, 'http://svc.test/portal/v1/api-keys')
    const text = log.render(exchange)
    assert.match(text, /^#1 relying party: POST http:\/\/svc\.test\/portal\/v1\/api-keys → 201 \(\d+ ms\)$/m)
    assert.match(text, /^> authorization: jwt \[redacted:access-token\]$/m)
    assert.match(text, /^< token: \[redacted:access-token\]$/m)
    assert.match(text, /^< \{"id":"k1","secret":"\[redacted:api-key-secret\]"\}$/m)
    // Learned: the same values are masked wherever they appear later.
    for (const value of [
      'handed-out-secret-0123456789',
      'opaque-token-abcdef0123456789',
      'access-token-0123456789abcdef',
    ])
      assert.ok(secrets.has(value), value)
  })

  test('bodies are cut after the limit; a network error is recorded with its cause', async () => {
    const log = new ExchangeLog(new SecretRegistry(), answer('x'.repeat(BODY_LIMIT + 10)))
    await (await log.fetch('wallet')('http://svc.test/big')).text()
    assert.match(
      log.transcript(),
      new RegExp(`x{${BODY_LIMIT}}… \\(cut: ${BODY_LIMIT + 10} characters in all\\)`),
    )
    const failing = new ExchangeLog(new SecretRegistry(), async () => {
      throw Object.assign(new TypeError('fetch failed'), {
        cause: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:9' },
      })
    })
    await assert.rejects(failing.fetch('wallet')('http://127.0.0.1:9/x'))
    assert.match(
      failing.headline(failing.exchanges[0] as never),
      /→ no answer: ECONNREFUSED: connect ECONNREFUSED 127\.0\.0\.1:9/,
    )
  })

  test('a relying-party request that got no answer names the request and the cause, not "fetch failed" alone', async () => {
    const probe = createServer()
    const port = await new Promise<number>((resolve) =>
      probe.listen(0, '127.0.0.1', () => resolve((probe.address() as { port: number }).port)),
    )
    await new Promise((resolve) => probe.close(resolve))
    const log = new ExchangeLog(new SecretRegistry())
    const client = new RelyingPartyClient(`http://127.0.0.1:${port}`, log.fetch('relying party'))
    await assert.rejects(
      client.token({ keyId: 'k', secret: 's', tenant: 't' }),
      new RegExp(
        `^TypeError: fetch failed: POST http://127\\.0\\.0\\.1:${port}/admin/v1/api_keys/login: ECONNREFUSED: connect ECONNREFUSED`,
      ),
    )
    assert.match(log.transcript(), /→ no answer: ECONNREFUSED/)
  })

  test('a failed expectation names its exchange and echoes no secret; the exchange is attached', async () => {
    // The World outside a cucumber run: open the support code library so its module can load.
    supportCodeLibraryBuilder.reset(ROOT, () => 'id')
    const { HarnessWorld, setProcessTarget } = await import('../../steps/support/world.ts')
    const attached: { data: unknown; options: unknown }[] = []
    const world = new HarnessWorld({
      attach: ((data: unknown, options: unknown) => attached.push({ data, options })) as never,
      log: ((text: string) => attached.push({ data: text, options: 'log' })) as never,
      link: (() => undefined) as never,
      parameters: {},
    })
    const echoed = 'portal-secret-0123456789abcdef'
    setProcessTarget({
      kind: 'external',
      urls: { authUrl: 'http://svc.test', issuerUrl: 'http://svc.test', verifierUrl: 'http://svc.test' },
    } as Target)
    try {
      // A target whose answer echoes a key secret it handed out (as a failing "Got:" once did).
      const log = world.exchanges
      Object.assign(log, {
        base: answer(JSON.stringify({ id: 'k1', secret: echoed }), {
          status: 201,
          headers: { 'content-type': 'application/json' },
        }),
      })
      world.scenario = { name: 'An application cannot create API keys', tags: ['@security'] }
      world.recordAnswer(
        await world.client.createApiKey('token-0123456789abcdef0123', { role: 'admin' }),
        'create a key as the application',
      )
      assert.throws(
        () => world.expectStatus(403),
        (error: Error) => {
          assert.ok(!error.message.includes(echoed), error.message)
          assert.match(
            error.message,
            /^Got: HTTP 201 \(application\/json\) \{"id":"k1","secret":"\[redacted:api-key-secret\]"\}$/m,
          )
          assert.match(
            error.message,
            /^Exchange: #1 relying party: POST http:\/\/svc\.test\/portal\/v1\/api-keys → 201/m,
          )
          return true
        },
      )
      world.log(`echo ${echoed}`)
      world.attachExchanges(true)
      const texts = attached.map((a) => String(a.data))
      assert.equal(texts[0], 'echo [redacted:api-key-secret]')
      assert.match(texts[1] ?? '', /^1 HTTP exchange of this scenario/)
      assert.match(
        texts[2] ?? '',
        /^The HTTP exchange that broke the requirement \(#1\)\n\n#1 relying party: POST/,
      )
      assert.ok(texts.every((t) => !t.includes(echoed)))
      assert.deepEqual(attached[2]?.options, {
        mediaType: 'text/plain',
        fileName: 'The HTTP exchange that broke the requirement (#1)',
      })
    } finally {
      setProcessTarget(undefined)
    }
  })
})

describe('cleanup bookkeeping', () => {
  test('what the exchanges created, by tenant, with the keys that may remove it', () => {
    const log = new ExchangeLog(new SecretRegistry())
    const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`
    const exchange = (
      method: string,
      path: string,
      status: number,
      requestHeaders: [string, string][],
      responseBody?: unknown,
      responseHeaders: [string, string][] = [],
    ) =>
      log.exchanges.push({
        n: log.exchanges.length + 1,
        source: 'relying party',
        method,
        url: `http://svc.test${path}`,
        requestHeaders,
        status,
        responseHeaders,
        ...(responseBody !== undefined ? { responseBody: JSON.stringify(responseBody) } : {}),
        at: 0,
        ms: 1,
      })
    exchange(
      'POST',
      '/admin/v1/api_keys/login',
      200,
      [
        ['authorization', basic('op', 'op-secret')],
        ['tenant', 'demo'],
      ],
      { message: 'SUCCESS' },
      [['token', 'T-op']],
    )
    exchange('POST', '/portal/v1/tenants', 201, [['authorization', 'jwt T-op']], {
      id: 't-1',
      adminKey: { id: 'a1', role: 'admin', secret: 'a1-secret' },
    })
    exchange(
      'POST',
      '/admin/v1/api_keys/login',
      200,
      [
        ['authorization', basic('a1', 'a1-secret')],
        ['tenant', 't-1'],
      ],
      undefined,
      [['token', 'T-a1']],
    )
    exchange('POST', '/portal/v1/issuance-templates', 201, [['authorization', 'jwt T-a1']], { id: 'degree' })
    exchange('POST', '/portal/v1/verification-templates', 201, [['authorization', 'jwt T-a1']], {
      id: 'check',
    })
    exchange('POST', '/portal/v1/api-keys', 201, [['authorization', 'jwt T-a1']], {
      id: 'k2',
      role: 'app',
      secret: 'k2-secret',
    })
    exchange('DELETE', '/portal/v1/verification-templates/check', 204, [['authorization', 'jwt T-a1']])
    // Refused creations and an unknown token leave nothing to track.
    exchange('POST', '/portal/v1/api-keys', 403, [['authorization', 'jwt T-a1']], { code: 'forbidden' })
    exchange('POST', '/portal/v1/api-keys', 201, [['authorization', 'jwt T-unknown']], {
      id: 'k3',
      role: 'app',
    })
    const target = { tenant: { tenant: 'demo', adminKey: { id: 'demo-admin', secret: 's' } } } as Target
    const [debris, ...rest] = debrisOf(log.exchanges, target)
    assert.equal(rest.length, 0)
    assert.ok(debris)
    assert.equal(debris.tenant, 't-1')
    assert.equal(debris.createdTenant, true)
    assert.deepEqual([...debris.keys.keys()], ['a1', 'k2'])
    assert.deepEqual([...debris.templates], [['degree', 'issuance']])
    assert.deepEqual(debris.admins, [{ keyId: 'a1', secret: 'a1-secret' }])
  })

  test('on by default for external targets only; VC_HARNESS_CLEANUP decides', () => {
    assert.equal(cleanupEnabled('external', {}), true)
    assert.equal(cleanupEnabled('embedded', {}), false)
    assert.equal(cleanupEnabled('child', {}), false)
    assert.equal(cleanupEnabled('child', { VC_HARNESS_CLEANUP: '1' }), true)
    assert.equal(cleanupEnabled('external', { VC_HARNESS_CLEANUP: 'off' }), false)
  })
})
