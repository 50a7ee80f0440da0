import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { RelyingPartyClient } from '../../src/client/index.ts'
import { resolveExternal } from '../../src/harness/profile.ts'
import {
  CAPABILITIES,
  describeCapabilities,
  externalTarget,
  missingCapability,
  startTarget,
  type Target,
  TargetConfigError,
} from '../../src/harness/target.ts'
import { DEMO } from '../helpers.ts'

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'vch-target-'))
  dirs.push(dir)
  return dir
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const APP_SECRET = 'profile-app-secret-0123456789abcdef'
const ADMIN_SECRET = 'profile-admin-secret-0123456789abcd'
const OPERATOR_SECRET = 'profile-operator-secret-0123456789'
const SECRETS = [APP_SECRET, ADMIN_SECRET, OPERATOR_SECRET]

const fullProfile = () => ({
  auth_url: 'https://auth.example.test/',
  issuer_url: 'https://issuer.example.test',
  verifier_url: 'https://verifier.example.test',
  tenant: 'acme',
  app_key: { id: 'app-id', secret: APP_SECRET },
  admin_key: { id: 'admin-id', secret: ADMIN_SECRET },
  operator_key: { id: 'operator-id', secret: OPERATOR_SECRET },
  templates: { issuance: 'degree', other: 'degree-check' },
  receiver: { listen_host: '0.0.0.0', listen_port: 9099, public_url: 'https://hooks.example.test/' },
})

function writeProfile(content: unknown): string {
  const file = join(tempDir(), 'profile.json')
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content))
  return file
}

/** The error thrown by `fn`, checked to be a TargetConfigError carrying none of the secrets. */
function configError(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    assert.ok(error instanceof TargetConfigError, `a TargetConfigError, got ${error}`)
    for (const secret of SECRETS) assert.ok(!error.message.includes(secret), 'no secret in the message')
    return error.message
  }
  assert.fail('expected an error')
}

const EXTERNAL_ENV = {
  VC_HARNESS_AUTH_URL: 'http://service.test',
  VC_HARNESS_TENANT: 'acme',
  VC_HARNESS_ISSUANCE_TEMPLATE: 'degree',
  VC_HARNESS_OTHER_TEMPLATE: 'other',
  VC_HARNESS_APP_KEY_ID: 'app',
  VC_HARNESS_APP_KEY_SECRET: APP_SECRET,
  VC_HARNESS_ADMIN_KEY_ID: 'admin',
  VC_HARNESS_ADMIN_KEY_SECRET: ADMIN_SECRET,
}

describe('external target settings', () => {
  test('a profile gives every setting; URLs lose their trailing slash', () => {
    const file = writeProfile(fullProfile())
    const target = externalTarget({ VC_HARNESS_PROFILE: file })
    assert.equal(target.kind, 'external')
    assert.deepEqual(target.urls, {
      authUrl: 'https://auth.example.test',
      issuerUrl: 'https://issuer.example.test',
      verifierUrl: 'https://verifier.example.test',
    })
    assert.equal(target.tenant.tenant, 'acme')
    assert.deepEqual(target.tenant.appKey, { id: 'app-id', secret: APP_SECRET })
    assert.deepEqual(target.tenant.adminKey, { id: 'admin-id', secret: ADMIN_SECRET })
    assert.equal(target.tenant.issuanceTemplate, 'degree')
    assert.equal(target.tenant.otherTemplate, 'degree-check')
    assert.deepEqual(target.operator, { keyId: 'operator-id', secret: OPERATOR_SECRET, tenant: 'acme' })
    assert.deepEqual(target.receiver, {
      host: '0.0.0.0',
      port: 9099,
      publicUrl: 'https://hooks.example.test',
    })
    assert.deepEqual([...target.capabilities].sort(), ['portal', 'webhooks'])
  })

  test('the shipped example profile describes the demo service with its public demo keys', () => {
    const example = new URL('../../config/profile.example.json', import.meta.url).pathname
    const target = externalTarget({ VC_HARNESS_PROFILE: example })
    assert.equal(target.tenant.tenant, DEMO.app.tenant)
    assert.deepEqual(target.tenant.appKey, { id: DEMO.app.id, secret: DEMO.app.secret })
    assert.deepEqual(target.tenant.adminKey, { id: DEMO.admin.id, secret: DEMO.admin.secret })
    assert.equal(target.operator?.keyId, DEMO.operator.id)
    // the demo tenant trusts the test wallet provider (testWalletProvider: true), and the example says so
    assert.deepEqual([...target.capabilities].sort(), ['portal', 'test-wallet-provider', 'webhooks'])
  })

  test('environment variables override the profile key by key', () => {
    const file = writeProfile(fullProfile())
    const settings = resolveExternal({
      VC_HARNESS_PROFILE: file,
      VC_HARNESS_TENANT: 'other-tenant',
      VC_HARNESS_APP_KEY_SECRET: 'from-env-secret',
      VC_HARNESS_RECEIVER_PORT: '9100',
      VC_HARNESS_OPERATOR_TENANT: 'ops',
      VC_HARNESS_VERIFIER_URL: '', // empty: not set, the profile's value stays
    })
    assert.equal(settings.tenant.tenant, 'other-tenant')
    assert.deepEqual(settings.tenant.appKey, { id: 'app-id', secret: 'from-env-secret' })
    assert.equal(settings.receiver.port, 9100)
    assert.equal(settings.operator?.tenant, 'ops')
    assert.equal(settings.urls.verifierUrl, 'https://verifier.example.test')
  })

  test('without a profile the environment alone describes the target; URLs default down the chain', () => {
    const target = externalTarget(EXTERNAL_ENV)
    assert.deepEqual(target.urls, {
      authUrl: 'http://service.test',
      issuerUrl: 'http://service.test',
      verifierUrl: 'http://service.test',
    })
    assert.equal(target.operator, undefined)
    assert.deepEqual(target.receiver, { host: '0.0.0.0', port: 0 })
    assert.equal(target.capabilities.size, 0)
  })

  test('missing keys are all named, with the file and the variable, never with a secret', () => {
    const profile: Record<string, unknown> = fullProfile()
    delete profile.tenant
    profile.app_key = { secret: APP_SECRET }
    profile.templates = { issuance: 'degree' }
    const file = writeProfile(profile)
    const message = configError(() => externalTarget({ VC_HARNESS_PROFILE: file }))
    assert.match(message, /missing: /)
    assert.ok(message.includes(`tenant (in ${file}, or VC_HARNESS_TENANT)`), message)
    assert.ok(message.includes(`app_key.id (in ${file}, or VC_HARNESS_APP_KEY_ID)`), message)
    assert.ok(message.includes(`templates.other (in ${file}, or VC_HARNESS_OTHER_TEMPLATE)`), message)
    assert.doesNotMatch(message, /auth_url|admin_key/)

    const bare = configError(() => externalTarget({ VC_HARNESS_APP_KEY_SECRET: APP_SECRET }))
    assert.match(bare, /VC_HARNESS_AUTH_URL/)
    assert.match(bare, /VC_HARNESS_ADMIN_KEY_SECRET/)
    assert.doesNotMatch(bare, /VC_HARNESS_APP_KEY_SECRET/)
  })

  test('invalid values name the key and where it came from, without the value', () => {
    const profile: Record<string, unknown> = fullProfile()
    profile.auth_url = `ftp://user:${APP_SECRET}@host`
    profile.app_key = { id: 'app', secret: 42 }
    profile.receiver = { listen_port: 'eighty', public_url: 'https://hooks.example.test' }
    const file = writeProfile(profile)
    const message = configError(() => externalTarget({ VC_HARNESS_PROFILE: file }))
    assert.ok(message.includes(`${file}: auth_url must be an http(s) URL`), message)
    assert.ok(message.includes(`${file}: app_key.secret must be a string`), message)
    assert.ok(message.includes(`${file}: receiver.listen_port must be a port number`), message)

    const env = configError(() =>
      externalTarget({ ...EXTERNAL_ENV, VC_HARNESS_ISSUER_URL: `not a url ${ADMIN_SECRET}` }),
    )
    assert.match(env, /VC_HARNESS_ISSUER_URL must be an http\(s\) URL/)
  })

  test('unknown keys and wrong shapes are refused with the known keys listed', () => {
    const typo = configError(() =>
      externalTarget({ VC_HARNESS_PROFILE: writeProfile({ ...fullProfile(), auth_ulr: 'x' }) }),
    )
    assert.match(typo, /unknown key auth_ulr/)
    assert.match(typo, /known keys: auth_url,/)
    const nested = configError(() =>
      externalTarget({
        VC_HARNESS_PROFILE: writeProfile({
          ...fullProfile(),
          app_key: { id: 'a', secret: APP_SECRET, x: 1 },
        }),
      }),
    )
    assert.match(nested, /unknown key app_key\.x/)
    const shape = configError(() => externalTarget({ VC_HARNESS_PROFILE: writeProfile('[1]') }))
    assert.match(shape, /a profile is a JSON object/)
  })

  test('bad JSON names the file and the position but does not quote the text', () => {
    const text = `{\n  "app_key": { "id": "a", "secret": "${APP_SECRET}" }\n  "tenant": "acme"\n}`
    const file = writeProfile(text)
    const message = configError(() => externalTarget({ VC_HARNESS_PROFILE: file }))
    assert.match(
      message,
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not valid JSON at line 3`),
    )
    const missing = configError(() => externalTarget({ VC_HARNESS_PROFILE: join(tempDir(), 'nope.json') }))
    assert.match(missing, /VC_HARNESS_PROFILE: cannot read .*nope\.json: ENOENT/)
  })

  test('an operator key needs its secret; a receiver URL needs a fixed port', () => {
    const noSecret = configError(() => externalTarget({ ...EXTERNAL_ENV, VC_HARNESS_OPERATOR_KEY_ID: 'op' }))
    assert.match(noSecret, /VC_HARNESS_OPERATOR_KEY_SECRET, since an operator key id is given/)
    const noPort = configError(() =>
      externalTarget({ ...EXTERNAL_ENV, VC_HARNESS_RECEIVER_URL: 'https://hooks.example.test' }),
    )
    assert.match(noPort, /VC_HARNESS_RECEIVER_PORT: a receiver URL needs a fixed port/)
    const zero = configError(() =>
      externalTarget({
        ...EXTERNAL_ENV,
        VC_HARNESS_RECEIVER_URL: 'https://hooks.example.test',
        VC_HARNESS_RECEIVER_PORT: '0',
      }),
    )
    assert.match(zero, /VC_HARNESS_RECEIVER_PORT must not be 0 when a receiver URL is given/)
  })
})

describe('capabilities', () => {
  const external = (env: Record<string, string>) => externalTarget({ ...EXTERNAL_ENV, ...env })
  const operator = { VC_HARNESS_OPERATOR_KEY_ID: 'op', VC_HARNESS_OPERATOR_KEY_SECRET: OPERATOR_SECRET }
  const receiver = { VC_HARNESS_RECEIVER_URL: 'https://hooks.example.test', VC_HARNESS_RECEIVER_PORT: '9099' }

  test('external: portal with an operator key; webhooks with portal and a receiver URL; never clock', () => {
    const cases: [Record<string, string>, string[]][] = [
      [{}, []],
      [operator, ['portal']],
      [receiver, []],
      [{ ...operator, ...receiver }, ['portal', 'webhooks']],
    ]
    for (const [env, expected] of cases) {
      assert.deepEqual([...external(env).capabilities].sort(), expected, JSON.stringify(env))
    }
  })

  test('external: test-wallet-provider only when the profile or the environment says true', () => {
    for (const [value, expected] of [
      ['true', true],
      ['1', true],
      ['false', false],
      ['0', false],
    ] as const) {
      const target = external({ VC_HARNESS_TEST_WALLET_PROVIDER: value })
      assert.equal(target.capabilities.has('test-wallet-provider'), expected, value)
    }
    const inProfile = externalTarget({
      VC_HARNESS_PROFILE: writeProfile({ ...fullProfile(), test_wallet_provider: true }),
    })
    assert.ok(inProfile.capabilities.has('test-wallet-provider'))
    const wrong = configError(() => external({ VC_HARNESS_TEST_WALLET_PROVIDER: 'yes' }))
    assert.match(wrong, /VC_HARNESS_TEST_WALLET_PROVIDER must be true or false/)
    const missing = missingCapability(external({}), 'test-wallet-provider') ?? ''
    assert.match(missing, /VC_HARNESS_TEST_WALLET_PROVIDER=true/)
  })

  test('missingCapability says what to set', () => {
    const none = external({})
    assert.match(missingCapability(none, 'portal') ?? '', /VC_HARNESS_OPERATOR_KEY_ID/)
    assert.match(missingCapability(none, 'clock') ?? '', /cannot be moved/)
    const hooks = missingCapability(none, 'webhooks') ?? ''
    assert.match(hooks, /needs an operator key/)
    assert.match(hooks, /set VC_HARNESS_RECEIVER_URL and VC_HARNESS_RECEIVER_PORT/)
    const portalOnly = missingCapability(external(operator), 'webhooks') ?? ''
    assert.doesNotMatch(portalOnly, /operator key/)
    assert.match(portalOnly, /no receiver URL reachable from the service/)
    const receiverOnly = missingCapability(external(receiver), 'webhooks') ?? ''
    assert.match(receiverOnly, /operator key/)
    assert.doesNotMatch(receiverOnly, /VC_HARNESS_RECEIVER_URL/)
    assert.equal(missingCapability(external({ ...operator, ...receiver }), 'webhooks'), undefined)
    const described = describeCapabilities(external(operator))
    for (const capability of CAPABILITIES) assert.match(described, new RegExp(`^  ${capability}: `, 'm'))
    assert.match(described, /^ {2}portal: yes$/m)
    assert.match(described, /^ {2}webhooks: no \(/m)
  })

  test('embedded: portal, clock, webhooks and (the demo tenant) test-wallet-provider, receiver on loopback', async () => {
    const target = await startTarget({})
    try {
      assert.equal(target.kind, 'embedded')
      assert.deepEqual([...target.capabilities].sort(), [
        'clock',
        'portal',
        'test-wallet-provider',
        'webhooks',
      ])
      assert.deepEqual(target.receiver, { host: '127.0.0.1', port: 0 })
      assert.equal(target.child, undefined)
    } finally {
      await target.close()
    }
  })
})

describe('target selection', () => {
  test('an unknown target lists the three', async () => {
    await assert.rejects(
      startTarget({ VC_HARNESS_TARGET: 'remote' }),
      (error: Error) =>
        error instanceof TargetConfigError &&
        error.message === 'VC_HARNESS_TARGET must be one of "embedded", "child", "external", not "remote"',
    )
  })

  test('a profile alone selects external; with another target it is refused', async () => {
    const file = writeProfile(fullProfile())
    const target = await startTarget({ VC_HARNESS_PROFILE: file })
    assert.equal(target.kind, 'external')
    await assert.rejects(
      startTarget({ VC_HARNESS_PROFILE: file, VC_HARNESS_TARGET: 'child' }),
      /VC_HARNESS_PROFILE describes an external deployment; it does not apply to VC_HARNESS_TARGET=child/,
    )
  })
})

/** Whether a process with this pid still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

describe('child target', { concurrency: true }, () => {
  test('starts vc-harness serve, answers /health and logins, and close() leaves no process or folder', async () => {
    const started = Date.now()
    const target: Target = await startTarget({ VC_HARNESS_TARGET: 'child' })
    const startMs = Date.now() - started
    let closed = false
    try {
      assert.equal(target.kind, 'child')
      console.error(`child target started in ${startMs} ms`)
      assert.deepEqual([...target.capabilities].sort(), ['portal', 'test-wallet-provider', 'webhooks'])
      assert.equal(missingCapability(target, 'clock')?.includes('child'), true)
      assert.equal(target.clock, undefined)
      assert.deepEqual(target.receiver, { host: '127.0.0.1', port: 0 })
      assert.match(target.urls.authUrl, /^http:\/\/127\.0\.0\.1:\d+$/)
      const info = target.child
      assert.ok(info)
      assert.ok(alive(info.pid))
      assert.ok(existsSync(join(info.dataDir)), 'its data folder exists')

      const client = new RelyingPartyClient(target.urls)
      const health = await client.health()
      assert.equal(health.status, 200)
      // The fixture comes from the same demo configuration the child runs.
      assert.equal(target.tenant.appKey.id, DEMO.app.id)
      const token = await client.token({
        keyId: target.tenant.appKey.id,
        secret: target.tenant.appKey.secret,
        tenant: target.tenant.tenant,
        ssiconfig: target.tenant.issuanceTemplate,
      })
      assert.ok(token.length > 20)
      assert.ok(target.operator)
      await client.token(target.operator)

      await target.close()
      closed = true
      assert.equal(alive(info.pid), false, 'the child is gone')
      assert.equal(existsSync(info.dataDir), false, 'its data folder is removed')
      await target.close() // idempotent
    } finally {
      if (!closed) await target.close()
    }
  })

  test('a configuration the child refuses fails with the error the child printed', async () => {
    const file = join(tempDir(), 'bad.json')
    writeFileSync(
      file,
      JSON.stringify({ tenants: [{ id: 'acme', apiKeys: [{ id: 'x', secret: 's', role: 'app' }] }] }),
    )
    await assert.rejects(
      startTarget({ VC_HARNESS_TARGET: 'child', VC_HARNESS_CONFIG: file }),
      (error: Error) => {
        assert.match(error.message, /child target: vc-harness serve exited \(code 2\) before listening/)
        assert.match(error.message, /--- its stderr ---/)
        assert.ok(error.message.includes(`${file} is invalid`), error.message)
        assert.match(error.message, /\/tenants\/0\/apiKeys\/0\/id/)
        return true
      },
    )
  })

  test('the child ends when the process that started it is killed', { timeout: 60_000 }, async () => {
    const target = new URL('../../src/harness/target.ts', import.meta.url).href
    const script = `const { startTarget } = await import(${JSON.stringify(target)})
const t = await startTarget({ VC_HARNESS_TARGET: 'child' })
console.log(JSON.stringify(t.child))
setInterval(() => {}, 1000)`
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    // Wait for the parent's report or its exit, whichever comes first: no fixed deadline to lose under
    // load (the test's timeout bounds a hang).
    let out = ''
    let err = ''
    parent.stderr.on('data', (c: Buffer) => (err += c))
    const reported = await new Promise<boolean>((resolve) => {
      parent.stdout.on('data', (c: Buffer) => {
        out += c
        if (out.includes('}')) resolve(true)
      })
      parent.once('exit', () => resolve(out.includes('}')))
    })
    if (!reported) parent.kill('SIGKILL')
    assert.ok(reported, `the parent reports its child: ${out}\n${err}`)
    const { pid, dataDir } = JSON.parse(out) as { pid: number; dataDir: string }
    dirs.push(dataDir) // SIGKILL leaves the parent no chance to remove it
    assert.ok(alive(pid))
    parent.kill('SIGKILL')
    // The child is not ours, so it has no exit event here: poll until it is gone (bounded by the timeout).
    while (alive(pid)) await new Promise((r) => setTimeout(r, 50))
  })
})
