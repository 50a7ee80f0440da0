import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { request } from 'undici'
import { checkProfileHosts, profileHosts, refusedHostsMessage } from '../../bench/external.ts'
import {
  GuardedAgent,
  guardedFetch,
  HostGuard,
  HostNotAllowedError,
  parseAllowHosts,
} from '../../bench/host-guard.ts'
import { type BenchOptions, parseBenchArgs, planRuns } from '../../bench/run.ts'
import { startChild } from '../../src/harness/child-target.ts'
import { freePort } from '../../src/harness/free-port.ts'
import type { Target } from '../../src/harness/target-types.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { runCli } from '../fixtures/cli.ts'
import { DEMO, demoConfig } from '../helpers.ts'

// `vc-harness bench --target external`: the guard (every host named with --allow-host, checked before
// anything is sent and on every later request), the arguments, and a smoke run against our own service
// started as a child process on 127.0.0.1 (`vc-harness serve`, as the conformance suite's child target
// does), which stands for any deployment: the bench only knows it from a profile file.

const usage = (argv: string[], message: RegExp) =>
  assert.throws(
    () => parseBenchArgs(argv),
    (error: Error) => error.name === 'ConfigError' && message.test(error.message),
  )

describe('bench --target external: arguments', () => {
  test('external options, and what does not apply there, are usage errors naming the option', () => {
    const o = parseBenchArgs([
      '--target',
      'external',
      '--profile',
      'p.json',
      '--allow-host',
      'A.example,b.example',
    ]) as BenchOptions
    assert.equal(o.target, 'external')
    assert.deepEqual(o.allowHosts, ['a.example', 'b.example'])
    assert.equal(o.compare, false, 'no baselines')
    assert.deepEqual(
      planRuns(o).map((r) => `${r.name}|${r.flow}`),
      ['external|full', 'external|issuance-ready', 'external|issuance', 'external|verification'],
    )
    assert.deepEqual(
      planRuns({ ...o, flow: 'issuance-ready' }).map((r) => r.flow),
      ['issuance-ready'],
    )
    usage(['--target', 'elsewhere'], /--target must be local or external/)
    usage(['--profile', 'p.json'], /--profile describes an external deployment: add --target external/)
    usage(['--allow-host', 'x.example'], /--allow-host applies to --target external only/)
    usage(['--target', 'external', '--workers', '2'], /--workers does not apply to --target external/)
    usage(
      ['--target', 'external', '--plan', 'service', '--cpu-prof', '/tmp/p'],
      /--plan, --cpu-prof do not apply/,
    )
    usage(['--target', 'external', '--wallet', 'full'], /lean wallets only/)
  })

  test('--allow-host takes host names only: no URL, port or wildcard', () => {
    assert.deepEqual(parseAllowHosts(['Staging.Example.com.', 'a.example,[::1]', 'a.example']), [
      'staging.example.com',
      'a.example',
      '::1',
    ])
    for (const [value, message] of [
      ['https://staging.example.com', /not URLs/],
      ['staging.example.com:8443', /without a port/],
      ['[::1]:8080', /without a port/],
      ['*.example.com', /no wildcards/],
      ['a.example,,b.example', /empty host/],
    ] as const)
      assert.throws(() => parseAllowHosts([value]), message)
  })
})

describe('bench --target external: the host guard', () => {
  const urls = (auth: string, issuer = auth, verifier = issuer) => ({
    authUrl: auth,
    issuerUrl: issuer,
    verifierUrl: verifier,
  })

  test('every host of the profile must be named; the message says which, and with which keys', () => {
    assert.deepEqual(
      [...profileHosts(urls('https://auth.example', 'https://issuer.example'))],
      [
        ['auth.example', ['auth_url']],
        ['issuer.example', ['issuer_url', 'verifier_url']],
      ],
    )
    checkProfileHosts(urls('https://auth.example:8443/base'), ['auth.example'])
    assert.throws(
      () => checkProfileHosts(urls('https://auth.example', 'https://issuer.example'), ['auth.example']),
      (error: Error) =>
        error.name === 'ConfigError' &&
        /the profile points at issuer\.example \(issuer_url, verifier_url\)/.test(error.message) &&
        /--allow-host issuer\.example$/.test(error.message),
    )
    assert.throws(() => checkProfileHosts(urls('http://127.0.0.1:8080'), []), /--allow-host 127\.0\.0\.1$/)
    // A name is not its address: localhost does not allow 127.0.0.1.
    assert.throws(() => checkProfileHosts(urls('http://127.0.0.1:8080'), ['localhost']), /127\.0\.0\.1/)
  })

  test('a request to a host not named is refused before any connection, and recorded without ids', async () => {
    const guard = new HostGuard(['127.0.0.1'])
    const agent = new GuardedAgent(guard)
    await assert.rejects(
      request(
        'http://not-named.invalid/oid4vci/demo/credential-offer/0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01?x=1',
        {
          dispatcher: agent,
        },
      ),
      (error: unknown) => error instanceof HostNotAllowedError && error.host === 'not-named.invalid',
    )
    assert.deepEqual(
      [...guard.refused],
      [['not-named.invalid', 'http://not-named.invalid/oid4vci/demo/credential-offer/…']],
    )
    await assert.rejects(guardedFetch(guard)('https://other.invalid/login'), HostNotAllowedError)
    assert.match(
      refusedHostsMessage([{ host: 'other.invalid', url: 'https://other.invalid/x' }]),
      /sent the bench to other\.invalid .*nothing was sent there.*--allow-host other\.invalid$/,
    )
    await agent.close()
  })
})

/** Runs `vc-harness bench` without blocking this process (which may be serving the target). */
async function cli(argv: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const run = await runCli(['bench', ...argv])
  return { code: run.code, out: run.stdout, err: run.stderr }
}

const profileOf = (url: string, receiverPort?: number) => ({
  auth_url: url,
  tenant: 'demo',
  templates: { issuance: 'degree', other: 'degree-check' },
  app_key: { id: DEMO.app.id, secret: DEMO.app.secret },
  admin_key: { id: DEMO.admin.id, secret: DEMO.admin.secret },
  operator_key: { id: DEMO.operator.id, secret: DEMO.operator.secret, tenant: 'demo' },
  ...(receiverPort
    ? {
        receiver: {
          listen_host: '127.0.0.1',
          listen_port: receiverPort,
          public_url: `http://127.0.0.1:${receiverPort}`,
        },
      }
    : {}),
})

describe('bench --target external against our service in a child process', () => {
  let target: Target
  let dir: string
  let profile: string
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-harness-bench-external-'))
    target = await startChild({})
    profile = join(dir, 'profile.json')
    writeFileSync(profile, JSON.stringify(profileOf(target.urls.authUrl, await freePort())))
  })
  after(async () => {
    await target?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('without --allow-host naming 127.0.0.1 nothing runs: exit 2 naming the host', async () => {
    for (const allow of [[], ['--allow-host', 'localhost']]) {
      const run = await cli(['--target', 'external', '--profile', profile, ...allow, '--smoke'])
      assert.equal(run.code, 2, run.out + run.err)
      assert.match(
        run.err,
        /loads only hosts named with --allow-host, and the profile points at 127\.0\.0\.1 \(auth_url, issuer_url, verifier_url\)\. .*--allow-host 127\.0\.0\.1/,
      )
      assert.doesNotMatch(run.out, /external ·/, 'no run started')
    }
  })

  test('an invalid profile is a usage error listing its problems, never a secret', async () => {
    const bad = join(dir, 'bad.json')
    writeFileSync(bad, JSON.stringify({ ...profileOf(target.urls.authUrl), tenant: undefined, app_kee: {} }))
    const run = await cli(['--target', 'external', '--profile', bad, '--allow-host', '127.0.0.1'])
    assert.equal(run.code, 2)
    assert.match(run.err, /the profile cannot be used:[\s\S]*unknown key app_kee[\s\S]*missing: tenant/)
    assert.doesNotMatch(run.err, new RegExp(DEMO.admin.secret))
  })

  test('--smoke runs every flow kind with the webhook step; server figures are unknown (-)', async () => {
    const out = join(dir, 'bench.json')
    const run = await cli([
      '--target',
      'external',
      '--profile',
      profile,
      '--allow-host',
      '127.0.0.1',
      '--smoke',
      '--out',
      out,
    ])
    assert.equal(run.code, 0, run.out + run.err)
    assert.match(run.out, /no baselines in this mode/)
    assert.match(
      run.out,
      /webhook step: on, copies vc-harness-bench-degree and vc-harness-bench-degree-check/,
    )
    assert.match(run.out, /clean-up: revoked API key/)
    for (const flow of ['full', 'issuance-ready', 'issuance', 'verification'])
      assert.match(run.out, new RegExp(`^external · ${flow} · lean ×2 +4 .* / - .*/-/.* \\d+/- +- +0$`, 'm'))
    assert.match(run.out, /external · full · lean: login .* webhook /)
    assert.match(run.out, /external · issuance-ready · lean: offer \S+ {2}submit \S+ {2}scan /)
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      runs: {
        flow: string
        flows: number
        errors: number
        cpuMsPerFlow: { server: unknown }
        serverLoop: unknown
        webhooks: boolean
      }[]
      ratios: unknown[]
      target: { kind: string; webhooks: boolean }
    }
    assert.deepEqual(
      report.runs.map((r) => [r.flow, r.flows, r.errors, r.cpuMsPerFlow.server, r.serverLoop]),
      [
        ['full', 4, 0, null, null],
        ['issuance-ready', 4, 0, null, null],
        ['issuance', 4, 0, null, null],
        ['verification', 4, 0, null, null],
      ],
    )
    assert.equal(report.runs[0]?.webhooks, true)
    assert.deepEqual(report.ratios, [])
    assert.deepEqual([report.target.kind, report.target.webhooks], ['external', true])
  })

  test('without a receiver in the profile the webhook step is skipped, and the output says why', async () => {
    const noReceiver = join(dir, 'no-receiver.json')
    writeFileSync(noReceiver, JSON.stringify(profileOf(target.urls.authUrl)))
    const run = await cli([
      '--target',
      'external',
      '--profile',
      noReceiver,
      '--allow-host',
      '127.0.0.1',
      '--smoke',
      '--flow',
      'full',
      '--out',
      join(dir, 'no-receiver.json.out'),
    ])
    assert.equal(run.code, 0, run.out + run.err)
    assert.match(
      run.out,
      /webhook step: skipped, the external target cannot receive webhooks: it has no receiver URL/,
    )
    assert.doesNotMatch(run.out, /external · full · lean: .*webhook/)
  })
})

describe('bench --target external: a deployment that hands out URLs of another host', () => {
  let server: RunningServer
  before(async () => {
    // Offers and metadata name a public URL on a host nobody allowed: the wallets must never go there.
    const config = { ...demoConfig(), publicUrl: 'http://elsewhere.invalid:8080' }
    server = await startServer({ config, host: '127.0.0.1', port: 0, dataDir: ':memory:' })
  })
  after(async () => {
    await server.close()
  })

  test('the run stops at the first such URL, nothing is sent there, exit 2 naming the host', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-harness-bench-external-'))
    try {
      const profile = join(dir, 'profile.json')
      writeFileSync(profile, JSON.stringify(profileOf(server.url)))
      const run = await cli([
        '--target',
        'external',
        '--profile',
        profile,
        '--allow-host',
        '127.0.0.1',
        '--smoke',
      ])
      assert.equal(run.code, 2, run.out + run.err)
      assert.match(
        run.err,
        /the deployment sent the bench to elsewhere\.invalid \(http:\/\/elsewhere\.invalid:8080\/oid4vci\/demo\/credential-offer\/…\).*nothing was sent there.*--allow-host elsewhere\.invalid/,
      )
      assert.match(run.out, /clean-up: revoked API key/, 'what the set-up created is removed')
      assert.doesNotMatch(run.out, /external · full · lean ×2:/, 'the run stopped: no figures')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
