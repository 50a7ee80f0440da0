import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  canListen,
  HARNESS_ERROR_FILE,
  preflight,
  problemLine,
  writeHarnessError,
} from '../../src/harness/preflight.ts'
import { runSecrets } from '../../src/harness/redact.ts'
import { externalTarget, startEmbedded, type Target } from '../../src/harness/target.ts'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { DEMO } from '../helpers.ts'

// Pre-flight (src/harness/preflight.ts): a target that cannot be tested as configured stops the run
// before any scenario, naming every problem and its fix, never a secret. Against the demo service in this
// process: each problem alone through preflight(), then all four at once through `vc-harness conformance`.

const BIN = new URL('../../bin/vc-harness.mjs', import.meta.url).pathname
const ROOT = new URL('../..', import.meta.url).pathname
const WRONG_SECRET = 'wrong-secret-Qm2xV9pL4sT8wZ1-0000'
const SECRETS = [DEMO.app.secret, DEMO.admin.secret, DEMO.operator.secret, WRONG_SECRET]

let server: RunningServer
let busy: Server
let busyPort: number
let closedPort: number
const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'vch-preflight-'))
  dirs.push(dir)
  return dir
}

const listen = (s: Server) =>
  new Promise<number>((resolve) =>
    s.listen(0, '127.0.0.1', () => resolve((s.address() as { port: number }).port)),
  )

before(async () => {
  server = await startServer({
    config: loadConfigFile(DEMO_CONFIG_PATH),
    dataDir: ':memory:',
    host: '127.0.0.1',
    port: 0,
  })
  busy = createServer()
  busyPort = await listen(busy)
  // A port nothing listens on: bound, then released.
  const probe = createServer()
  closedPort = await listen(probe)
  await new Promise((resolve) => probe.close(resolve))
})
after(async () => {
  await server.close()
  await new Promise((resolve) => busy.close(resolve))
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** The demo service as an external target, with some settings changed. */
const profile = (overrides: Record<string, unknown> = {}) => ({
  auth_url: server.url,
  tenant: DEMO.app.tenant,
  templates: { issuance: 'degree', other: 'degree-check' },
  app_key: { id: DEMO.app.id, secret: DEMO.app.secret },
  admin_key: { id: DEMO.admin.id, secret: DEMO.admin.secret },
  operator_key: { id: DEMO.operator.id, secret: DEMO.operator.secret },
  ...overrides,
})

function targetOf(settings: Record<string, unknown>): Target {
  return externalTarget(profileEnv(settings))
}

/** The profile written to a file, as VC_HARNESS_PROFILE (fixes name the file's keys). */
function profileEnv(settings: Record<string, unknown>): Record<string, string> {
  const file = join(tempDir(), 'profile.json')
  writeFileSync(file, JSON.stringify(settings))
  return { VC_HARNESS_PROFILE: file }
}

/** Pre-flight of the demo service described by `settings`, as problem lines. */
async function check(settings: Record<string, unknown>, env: Record<string, string> = {}) {
  const profileFile = profileEnv(settings)
  const problems = await preflight(externalTarget(profileFile), { env: { ...profileFile, ...env } })
  return problems.map(problemLine)
}

function assertNoSecret(text: string) {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `a secret in: ${text}`)
}

describe('preflight()', () => {
  test('the demo service described by a profile passes', async () => {
    assert.deepEqual(await preflight(targetOf(profile())), [])
  })

  test('the embedded target passes at once, without a request', async () => {
    const target = await startEmbedded({})
    try {
      const started = performance.now()
      const problems = await preflight(target, {
        fetch: () => Promise.reject(new Error('the embedded pre-flight sent a request')),
      })
      assert.deepEqual(problems, [])
      assert.ok(performance.now() - started < 100)
    } finally {
      await target.close()
    }
  })

  test('a wrong secret names the key, its role and what to check, not the secret', async () => {
    const problems = await check(profile({ app_key: { id: DEMO.app.id, secret: WRONG_SECRET } }))
    assert.equal(problems.length, 1, problems.join('\n'))
    assert.match(
      problems[0] ?? '',
      new RegExp(
        `^app_key \\(application key ${DEMO.app.id}, tenant demo\\): login was refused with HTTP 401 invalid_credentials.*\\. Fix: check app_key.id / app_key.secret in .*profile.json`,
      ),
    )
    assertNoSecret(problems.join('\n'))
  })

  test('an unreachable URL names the setting, the URL and the network error', async () => {
    const dead = `http://127.0.0.1:${closedPort}`
    const problems = await check(profile({ verifier_url: dead }))
    assert.equal(problems.length, 1, problems.join('\n'))
    assert.match(
      problems[0] ?? '',
      new RegExp(`^verifier_url ${dead} cannot be reached: ECONNREFUSED .*Fix: nothing listens there`),
    )
    // With the auth URL down, the keys cannot be checked, and the report says so.
    const auth = await check(profile({ auth_url: dead, issuer_url: server.url }))
    assert.equal(auth.length, 1, auth.join('\n'))
    assert.match(
      auth[0] ?? '',
      /^auth_url http:\/\/127\.0\.0\.1:\d+ cannot be reached: ECONNREFUSED .*; the keys and templates could not be checked\. Fix: /,
    )
  })

  test('a template id that does not exist, and one of the wrong kind', async () => {
    const missing = await check(profile({ templates: { issuance: 'degree', other: 'no-such-template' } }))
    assert.equal(missing.length, 1, missing.join('\n'))
    assert.match(
      missing[0] ?? '',
      /^templates.other "no-such-template" is no template of tenant demo\. Fix: name an existing template in templates.other in \S+profile.json \(or VC_HARNESS_OTHER_TEMPLATE\)$/,
    )
    const wrongKind = await check(profile({ templates: { issuance: 'degree-check', other: 'degree' } }))
    assert.ok(wrongKind.some((l) => /templates.issuance "degree-check" is a verification template/.test(l)))
    assert.ok(wrongKind.some((l) => /app_key .* is not linked to that template/.test(l)))
  })

  test('keys in the wrong role', async () => {
    const problems = await check(
      profile({
        admin_key: { id: DEMO.app.id, secret: DEMO.app.secret },
        operator_key: { id: DEMO.admin.id, secret: DEMO.admin.secret },
      }),
    )
    assert.ok(
      problems.some((l) => /^admin_key \(.*\) logs in but is no administrator key/.test(l)),
      problems.join('\n'),
    )
    assert.ok(
      problems.some((l) => /^operator_key \(.*\) logs in but is no operator key/.test(l)),
      problems.join('\n'),
    )
    // An application key's ssiconfig answers say nothing of the templates: no false template problem.
    assert.ok(!problems.some((l) => l.startsWith('templates.')), problems.join('\n'))
  })

  test('a busy receiver port names the port and whom to ask; parallel workers cannot share one', async () => {
    const receiver = {
      listen_host: '127.0.0.1',
      listen_port: busyPort,
      public_url: 'https://tunnel.example.test:9443',
    }
    const problems = await check(profile({ receiver }))
    assert.equal(problems.length, 1, problems.join('\n'))
    assert.match(
      problems[0] ?? '',
      new RegExp(
        `^the webhook receiver cannot listen on 127.0.0.1:${busyPort}: the port is in use \\(EADDRINUSE\\)\\. Fix: stop what holds it .*receiver.listen_port .*ask whoever runs the route to https://tunnel.example.test:9443`,
      ),
    )
    const parallel = await check(profile({ receiver }), { CUCUMBER_TOTAL_WORKERS: '2' })
    assert.match(parallel[0] ?? '', /2 workers \(--parallel\) cannot all listen on it/)
    assert.equal(await canListen('127.0.0.1', closedPort), undefined)
  })

  test('harness-error.txt: one problem per line, in VC_HARNESS_REPORTS, secrets the run knows masked', () => {
    const dir = tempDir()
    runSecrets.add(DEMO.admin.secret, 'api-key-secret')
    const path = writeHarnessError([`a problem naming ${DEMO.admin.secret}. Fix: x`, 'another. Fix: y'], {
      VC_HARNESS_REPORTS: dir,
    })
    assert.equal(path, join(dir, HARNESS_ERROR_FILE))
    assert.equal(
      readFileSync(path, 'utf8'),
      'a problem naming [redacted:api-key-secret]. Fix: x\nanother. Fix: y\n',
    )
  })
})

describe('vc-harness conformance with a profile that cannot work', () => {
  test('stops before any scenario, prints every problem with its fix, writes harness-error.txt', async () => {
    const dir = tempDir()
    const reports = join(dir, 'reports')
    const file = join(dir, 'broken-profile.json')
    writeFileSync(
      file,
      JSON.stringify(
        profile({
          verifier_url: `http://127.0.0.1:${closedPort}`,
          templates: { issuance: 'degree', other: 'no-such-template' },
          app_key: { id: DEMO.app.id, secret: WRONG_SECRET },
          receiver: {
            listen_host: '127.0.0.1',
            listen_port: busyPort,
            public_url: `http://127.0.0.1:${busyPort}`,
          },
        }),
      ),
    )
    const child = spawn(
      process.execPath,
      [BIN, 'conformance', '--profile', file, '--tags', '@interface-4.1', '--reports', reports],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          VC_HARNESS_TARGET: '',
          VC_HARNESS_PROFILE: '',
          VC_HARNESS_REPORTS: reports,
          NO_COLOR: '1',
        },
      },
    )
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk
    })
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
    assert.notEqual(code, 0, output)

    const written = readFileSync(join(reports, HARNESS_ERROR_FILE), 'utf8').trimEnd().split('\n')
    assert.equal(written.length, 4, written.join('\n'))
    const expected = [
      new RegExp(`^verifier_url http://127.0.0.1:${closedPort} cannot be reached: ECONNREFUSED`),
      /^templates.other "no-such-template" is no template of tenant demo\. Fix: /,
      new RegExp(
        `^app_key \\(application key ${DEMO.app.id}, tenant demo\\): login was refused with HTTP 401`,
      ),
      new RegExp(`^the webhook receiver cannot listen on 127.0.0.1:${busyPort}: the port is in use`),
    ]
    for (const pattern of expected) {
      const line = written.find((l) => pattern.test(l))
      assert.ok(line, `${pattern} in harness-error.txt:\n${written.join('\n')}`)
      assert.match(line, /\. Fix: \S/)
      // The terminal shows every problem too.
      assert.ok(output.includes(line), `not printed: ${line}\n${output}`)
    }
    assertNoSecret(output)
    assertNoSecret(written.join('\n'))
    // No scenario ran: no requirement was judged against the target.
    const messages = readFileSync(join(reports, 'cucumber.ndjson'), 'utf8')
    assert.doesNotMatch(messages, /"testCaseStarted"/)
    if (existsSync(join(reports, 'conformance.json'))) {
      const summary = JSON.parse(readFileSync(join(reports, 'conformance.json'), 'utf8')) as {
        totals: { pass: number }
      }
      assert.equal(summary.totals.pass, 0)
    }
  })
})
