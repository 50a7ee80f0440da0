// The package as a newcomer installs it (issue 32): `npm pack` (prepare builds dist/), the tarball installed
// into an empty folder, then plain Node — no tsx, no loader — imports `vc-harness` and `vc-harness/client`
// and receives a credential from a running service; the runners load, and the declarations type-check.
//
// The install is real (the package's declared dependencies, resolved from the registry or npm's cache with
// --prefer-offline) with --ignore-scripts: a full install compiles better-sqlite3 for ~2 minutes, and what
// runs from the installed copy here (the wallet, the client, the conformance CLI's dry run) never opens a
// database. The service is the project's own (startServer, in this process). The empty folder's package.json
// carries the project's `overrides`, as README "Use as a library" tells every consumer to: npm applies
// overrides only from the root package, and two pinned @sphereon/ssi-types versions do not exist.

import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ok, RelyingPartyClient } from '../../src/client/index.ts'
import { conformanceArgs, runConformance } from '../../src/runners/conformance.ts'
import { runWalletTest } from '../../src/runners/wallet-test.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  overrides: Record<string, string>
  exports: Record<string, string | { types: string; default: string }>
}

/** npm, or why not: the only reason to skip. */
const npmProbe = spawnSync('npm', ['--version'], { encoding: 'utf8' })
const noNpm =
  npmProbe.error || npmProbe.status !== 0
    ? `npm is not available (${npmProbe.error?.message ?? npmProbe.stderr.trim()}): cannot pack or install the package`
    : false

/**
 * The environment of a child npm or node, as a user's shell would have it: without the npm_* variables of an
 * enclosing `npm test` (they carry this project's .npmrc, e.g. legacy-peer-deps, into the consumer's install),
 * and without a NODE_OPTIONS that could bring tsx in.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(key) && key !== 'NODE_OPTIONS') env[key] = value
  }
  return env
}

/** Runs a command to its end; fails with its output when it exits non-zero. */
function run(command: string, args: string[], cwd: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => {
      stdout += c
    })
    child.stderr.on('data', (c: Buffer) => {
      stderr += c
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else
        reject(
          new Error(
            `${command} ${args.join(' ')} (in ${cwd}) ended with ${code ?? signal}\n--- stdout\n${stdout.slice(-4000)}\n--- stderr\n${stderr.slice(-4000)}`,
          ),
        )
    })
  })
}

/** Plain `node file.mjs args…` in the consumer's folder: no --import, no loader. */
const plainNode = (cwd: string, file: string, args: string[] = [], timeoutMs = 60_000) =>
  run(process.execPath, [file, ...args], cwd, timeoutMs)

const TENANT = 'demo'
interface DemoKey {
  id: string
  secret: string
  role: string
  template?: string
}
const demo = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8')) as {
  tenants: { id: string; apiKeys: DemoKey[] }[]
}
/** The demo's application key linked to the `degree` template (README, the relying-party API). */
const APP_KEY = demo.tenants
  .find((t) => t.id === TENANT)
  ?.apiKeys.find((k) => k.template === 'degree') as DemoKey

let work: string
let consumer: string
let packed: { filename: string; files: { path: string }[] }
let server: RunningServer

before(
  async () => {
    if (noNpm) return
    work = mkdtempSync(join(tmpdir(), 'vc-harness-package-'))
    consumer = join(work, 'consumer')
    mkdirSync(consumer)
    // npm pack runs prepare (scripts/build-package.ts: dist/); its --json report is the only thing on stdout.
    const out = await run('npm', ['pack', '--json', '--pack-destination', work], ROOT, 300_000)
    packed = (JSON.parse(out) as (typeof packed)[])[0] as typeof packed
    writeFileSync(
      join(consumer, 'package.json'),
      `${JSON.stringify({ name: 'consumer', private: true, type: 'module', overrides: PACKAGE.overrides }, null, 2)}\n`,
    )
    await run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--ignore-scripts',
        join(work, packed.filename),
      ],
      consumer,
      300_000,
    )
    server = await startServer({
      config: parseConfig(JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8')), 'config/demo.json'),
      host: '127.0.0.1',
      port: 0,
      dataDir: ':memory:',
    })
  },
  { timeout: 660_000 },
)

after(async () => {
  await server?.close()
  if (work) rmSync(work, { recursive: true, force: true })
})

describe('the packed package', { skip: noNpm }, () => {
  test('the tarball holds LICENSE, README, docs/, dist/ with its declarations, and no test/ or reports/', () => {
    const paths = new Set(packed.files.map((f) => f.path))
    for (const file of ['LICENSE', 'README.md', 'package.json', 'bin/vc-harness.mjs', 'config/demo.json'])
      assert.ok(paths.has(file), `${file} is packed`)
    assert.ok(
      [...paths].some((p) => p.startsWith('docs/') && p.endsWith('.md')),
      'docs/*.md are packed',
    )
    // every export's JavaScript and declarations
    for (const [subpath, target] of Object.entries(PACKAGE.exports)) {
      for (const file of typeof target === 'string' ? [target] : [target.default, target.types])
        assert.ok(paths.has(file.replace(/^\.\//, '')), `${subpath}: ${file} is packed`)
    }
    const strays = [...paths].filter((p) => /^(test|reports|node_modules|\.scratch|\.vc-harness)\//.test(p))
    assert.deepEqual(strays, [], 'no tests, reports, dependencies or local state')
  })

  test('plain Node imports Wallet from vc-harness and the client from vc-harness/client, and receives a credential', async () => {
    writeFileSync(
      join(consumer, 'receive.mjs'),
      `import { Wallet } from 'vc-harness'
import { ok, parseCredentialOfferUri, RelyingPartyClient } from 'vc-harness/client'

const [url, keyId, secret, tenant] = process.argv.slice(2)
const rp = new RelyingPartyClient(url)
const token = await rp.token({ keyId, secret, tenant })
const offer = ok(await rp.createOffer(token, 'degree'), 'create offer')
const { processId } = parseCredentialOfferUri(offer.credential_offer_uri)
const degree = { type: ['VerifiableCredential', 'UniversityDegreeCredential'], credentialSubject: { degree: 'BSc' } }
ok(await rp.submitCredentials(token, processId, [degree]), 'submit')
const wallet = await Wallet.create()
const result = await wallet.receive(offer.credential_offer_uri)
console.log(JSON.stringify({
  resolved: import.meta.resolve('vc-harness'),
  processId,
  did: wallet.did,
  status: result.status,
  stored: wallet.credentials().map((c) => ({ subject: c.subject, types: c.types })),
}))
`,
    )
    const out = await plainNode(consumer, 'receive.mjs', [server.url, APP_KEY.id, APP_KEY.secret, TENANT])
    const got = JSON.parse(out.trim().split('\n').at(-1) as string) as {
      resolved: string
      processId: string
      did: string
      status: string
      stored: { subject: string; types: string[] }[]
    }
    assert.equal(
      got.resolved,
      `file://${join(consumer, 'node_modules/vc-harness/dist/index.js')}`,
      'the installed copy, compiled',
    )
    assert.equal(got.status, 'issued')
    assert.deepEqual(got.stored, [
      { subject: got.did, types: ['VerifiableCredential', 'UniversityDegreeCredential'] },
    ])
    // and the service issued it to that wallet
    const rp = new RelyingPartyClient(server.url)
    const token = await rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT })
    const process = ok(await rp.getProcess(token, got.processId), 'read process')
    assert.equal(process.status, 'ISSUED')
    assert.equal((process.data as { credentialSubject: { id: string } }[])[0]?.credentialSubject.id, got.did)
  })

  test('plain Node loads the runners; runConformance dry-runs the TypeScript steps through the CLI', async () => {
    writeFileSync(
      join(consumer, 'runners.mjs'),
      `import { runConformance } from 'vc-harness/conformance'
import { listWalletTestCases, runWalletTest } from 'vc-harness/wallet-test'

const result = await runConformance({ dryRun: true, tags: '@interface-4.1', echo: false })
console.log(JSON.stringify({
  exitCode: result.exitCode,
  stdout: result.stdout,
  stderr: result.stderr,
  cases: listWalletTestCases('presentation-pe').length,
  runWalletTest: typeof runWalletTest,
}))
`,
    )
    const got = JSON.parse(
      (await plainNode(consumer, 'runners.mjs')).trim().split('\n').at(-1) as string,
    ) as {
      exitCode: number
      stdout: string
      stderr: string
      cases: number
      runWalletTest: string
    }
    assert.equal(got.exitCode, 0, `${got.stdout}\n${got.stderr}`)
    assert.match(got.stdout, /Dry run: \d+ scenarios?, nothing executed; every step has a definition/)
    assert.ok(got.cases > 0)
    assert.equal(got.runWalletTest, 'function')
  })

  test('the declarations type-check a consumer (NodeNext): classes, options and results are typed, not any', async () => {
    writeFileSync(
      join(consumer, 'check.ts'),
      `import { type ReceiveResult, Wallet } from 'vc-harness'
import { RelyingPartyClient } from 'vc-harness/client'
import { type ConformanceResult, runConformance } from 'vc-harness/conformance'
import { runWalletTest, type WalletTestResult } from 'vc-harness/wallet-test'

export async function typed(link: string) {
  const wallet: Wallet = await Wallet.create({ keyType: 'P-256' })
  // @ts-expect-error an unknown key type (would compile if the declarations resolved to any)
  await Wallet.create({ keyType: 'RSA' })
  const received: ReceiveResult = await wallet.receive(link)
  const rp = new RelyingPartyClient('http://127.0.0.1:8080')
  // @ts-expect-error token() takes the key's credentials
  await rp.token('key')
  const conformance: ConformanceResult = await runConformance({ tags: '@interface-4.1' })
  // @ts-expect-error plan names are checked
  await runWalletTest({ plan: 'no-such-plan', walletCommand: 'wallet {link}' })
  const plans: WalletTestResult = await runWalletTest({ walletCommand: 'wallet {link}' })
  return [received.status, conformance.summary?.totals.pass, plans.passed]
}
`,
    )
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          // as in this project's own tsconfig: some dependencies ship declarations that do not compile
          skipLibCheck: true,
        },
        files: ['check.ts'],
      }),
    )
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], consumer, 120_000)
  })

  test('vc-harness/wallet-test runs a case from the compiled dist/ on plain Node', async () => {
    // In this repository, where the package resolves itself by name (the script is given with -e, so bare
    // specifiers resolve from the working folder): the consumer's install skipped the native SQLite build
    // that the plans' embedded service needs, this one has it. dist/ is what npm pack just built.
    const script = `import { readFileSync } from 'node:fs'
import { Wallet } from 'vc-harness'
import { runWalletTest } from 'vc-harness/wallet-test'

const run = await runWalletTest({
  plan: 'issuance-draft15',
  cases: ['issuance-draft15:positive', 'issuance-draft15:credential-other-holder'],
  wallet: (ctx) => Wallet.create({ trustAnchors: [readFileSync(ctx.trustAnchorFile, 'utf8')] }),
  caseTimeoutMs: 20000,
})
console.log(JSON.stringify({
  resolved: import.meta.resolve('vc-harness/wallet-test'),
  passed: run.passed,
  reasons: run.results.map((r) => r.verdict.reason),
}))
`
    const out = await run(process.execPath, ['--input-type=module', '-e', script], ROOT, 60_000)
    const got = JSON.parse(out.trim().split('\n').at(-1) as string) as {
      resolved: string
      passed: boolean
      reasons: string[]
    }
    assert.equal(got.resolved, `file://${join(ROOT, 'dist/runners/wallet-test.js')}`)
    assert.equal(got.passed, true, got.reasons.join('; '))
    assert.equal(got.reasons.length, 2)
  })
})

// The runners from source (this process runs under tsx): what the packaged ones do, without npm.
describe('the programmatic runners', () => {
  test('conformanceArgs: every option as vc-harness conformance spells it, paths after --', () => {
    assert.deepEqual(
      conformanceArgs({
        target: 'child',
        tags: '@interface-4.1 and not @needs-portal',
        names: ['login', 'token'],
        shard: '1/3',
        parallel: 2,
        retry: 1,
        failFast: true,
        strict: true,
        reports: 'out',
        formats: ['html:x.html'],
        expectedFailures: 'known.json',
        features: ['-odd.feature', 'features/auth'],
      }),
      [
        ...['--target', 'child', '--tags', '@interface-4.1 and not @needs-portal'],
        ...['--name', 'login', '--name', 'token', '--shard', '1/3', '--parallel', '2', '--retry', '1'],
        ...['--fail-fast', '--reports', 'out', '--format', 'html:x.html'],
        ...['--expected-failures', 'known.json', '--strict', '--', '-odd.feature', 'features/auth'],
      ],
    )
    assert.deepEqual(conformanceArgs({ reportOnly: ['a.ndjson', 'b.ndjson'] }), [
      '--report-only',
      '--',
      'a.ndjson',
      'b.ndjson',
    ])
    assert.deepEqual(conformanceArgs(), [])
  })

  test("runConformance answers this run's summary; a usage error answers exit 2 and no earlier run's summary", async () => {
    const reports = mkdtempSync(join(tmpdir(), 'vc-harness-runner-reports-'))
    try {
      const passed = await runConformance({ tags: '@interface-4.1', reports, echo: false })
      assert.equal(passed.exitCode, 0, passed.stdout + passed.stderr)
      assert.equal(passed.passed, true)
      assert.equal(passed.reportsDir, reports)
      assert.ok(passed.summary && passed.summary.totals.requirements > 0)
      assert.equal(passed.summary.totals.pass, passed.summary.totals.requirements)
      assert.match(passed.stdout, /Gate: passed/)

      const usage = await runConformance({ tags: '@no-such-tag', reports, echo: false })
      assert.equal(usage.exitCode, 2)
      assert.equal(usage.passed, false)
      assert.equal(
        usage.summary,
        undefined,
        'the folder still holds the first run’s summary, which is not this one',
      )
      assert.match(usage.stderr, /no scenario is tagged @no-such-tag/)
    } finally {
      rmSync(reports, { recursive: true, force: true })
    }
  })

  test('runWalletTest refuses bad options before starting anything', async () => {
    const opens = { open: async () => undefined }
    await assert.rejects(runWalletTest({}), /either walletCommand or wallet/)
    await assert.rejects(
      runWalletTest({ wallet: opens, walletCommand: 'w {link}' }),
      /either walletCommand or wallet/,
    )
    await assert.rejects(
      runWalletTest({ walletCommand: 'wallet open' }),
      /walletCommand must contain \{link\}/,
    )
    await assert.rejects(
      runWalletTest({ plan: 'presentation-pe', cases: ['issuance-1.0:positive'], wallet: opens }),
      /issuance-1.0:positive: not in plan presentation-pe/,
    )
    // @ts-expect-error a plan name the types refuse is refused at run time too
    await assert.rejects(runWalletTest({ plan: 'nope', wallet: opens }), /unknown plan nope/)
  })
})
