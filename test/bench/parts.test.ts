import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Agent, request } from 'undici'
import { BenchRelyingParty, processIdOf, StepError } from '../../bench/relying-party.ts'
import { type BenchOptions, parseBenchArgs, planRuns, type RunSummary, ratios } from '../../bench/run.ts'
import { latency, percentile } from '../../bench/stats.ts'
import { WebhookSink } from '../../bench/webhook-sink.ts'
import { generateWebhookSecret, webhookSignature } from '../../src/harness/webhook-receiver.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { DEMO, demoConfig } from '../helpers.ts'

// The bench's own pieces (bench): arguments and plan, the ratios, the statistics, the webhook sink's
// signature check and the relying party's error reports. The whole bench runs in `npm run bench:smoke`.

const options = (argv: string[]) => parseBenchArgs(argv) as BenchOptions

describe('bench arguments and plan', () => {
  test('defaults: 50 lean wallets, 10 s after 3 s warm-up, workers 1 and 2, baselines on', () => {
    const o = options([])
    assert.equal(o.wallets, 50)
    assert.equal(o.durationSec, 10)
    assert.equal(o.warmupSec, 3)
    assert.deepEqual(o.workers, [1, 2])
    assert.equal(o.compare, true)
    assert.match(o.out, /reports\/bench\.json$/)
  })

  test('the default plan pairs each service run with its baseline, then ×2 and the full wallet', () => {
    // Whether a PostgreSQL server can be started here decides the PostgreSQL run: both plans, each way.
    const withPostgres = planRuns({ ...options([]), postgres: true }).map(
      (r) => `${r.name}|${r.flow}|${r.mode}`,
    )
    assert.deepEqual(withPostgres.slice(0, 2), ['service|full|lean', 'service (PostgreSQL)|full|lean'])
    assert.ok(withPostgres.includes('service ×2 (PostgreSQL)|full|lean'), 'two PostgreSQL instances')
    // Each half on PostgreSQL too (issue 38), right after SQLite's halves and the bare verification.
    assert.deepEqual(withPostgres.slice(withPostgres.indexOf('bare|verification|lean') + 1).slice(0, 2), [
      'service (PostgreSQL)|issuance|lean',
      'service (PostgreSQL)|verification|lean',
    ])
    assert.deepEqual(
      planRuns({ ...options([]), postgres: true }).find((r) => r.name === 'service (PostgreSQL)')?.target,
      { kind: 'service', workers: 1, database: 'postgres' },
    )
    const runs = planRuns(options(['--no-postgres'])).map((r) => `${r.name}|${r.flow}|${r.mode}`)
    assert.deepEqual(
      withPostgres.slice(2).filter((r) => !r.includes('(PostgreSQL)')),
      runs.slice(1),
    )
    assert.deepEqual(runs, [
      'service|full|lean',
      'bare|full|lean',
      'service|issuance-ready|lean',
      'peer|issuance-ready|lean',
      'service|issuance|lean',
      'service|verification|lean',
      'bare|verification|lean',
      'service ×2|full|lean',
      'service|full|full',
    ])
  })

  test('--no-compare, --flow and --wallet narrow the plan', () => {
    assert.deepEqual(
      planRuns(options(['--no-compare', '--no-postgres', '--flow', 'issuance'])).map((r) => r.name),
      ['service'],
    )
    assert.deepEqual(
      planRuns(options(['--flow', 'issuance-ready'])).map((r) => `${r.name}|${r.flow}`),
      ['service|issuance-ready', 'peer|issuance-ready'],
    )
    const full = planRuns(options(['--no-postgres', '--wallet', 'full', '--full-wallets', '3']))
    assert.deepEqual(
      full.map((r) => [r.name, r.flow, r.wallets]),
      [['service', 'full', 3]],
    )
    assert.deepEqual(
      planRuns(options(['--no-postgres', '--plan', 'service', '--workers', '2'])).map((r) => r.target),
      [{ kind: 'service', workers: 2 }],
    )
  })

  test('smoke: a few flows, two wallets, no warm-up, its own report file', () => {
    const o = options(['--smoke', '--wallets', '500'])
    assert.equal(o.flows, 4)
    assert.equal(o.wallets, 2)
    assert.equal(o.warmupSec, 0)
    assert.match(o.out, /reports\/bench\.smoke\.json$/)
  })

  test('bad arguments are usage errors naming the option', () => {
    for (const [argv, message] of [
      [['--flow', 'both'], /--flow must be one of full, issuance, issuance-ready, verification/],
      [['--wallet', 'heavy'], /--wallet must be one of lean, full/],
      [['--wallets', '0'], /--wallets must be a whole number ≥ 1/],
      [['--workers', '1,x'], /--workers must be a whole number ≥ 1/],
      [['--duration=-1'], /--duration must be a number of seconds > 0/],
      [['--plan', 'all'], /--plan must be default or service/],
    ] as const) {
      assert.throws(
        () => parseBenchArgs([...argv]),
        (error: Error) => error.name === 'ConfigError' && message.test(error.message),
      )
    }
    assert.throws(() => parseBenchArgs(['--nope']), { code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' })
    assert.equal(parseBenchArgs(['--help']), 'help')
  })

  test('the CLI answers a bad option with exit code 2 and the reason', () => {
    const run = spawnSync(process.execPath, ['bin/vc-harness.mjs', 'bench', '--flow', 'both'], {
      encoding: 'utf8',
    })
    assert.equal(run.status, 2)
    assert.match(
      run.stderr,
      /vc-harness bench: --flow must be one of full, issuance, issuance-ready, verification/,
    )
  })
})

describe('server event loop figure', () => {
  test('one-process servers report their loop busy time per flow; the line and the JSON say it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-harness-bench-loop-'))
    try {
      const out = join(dir, 'bench.json')
      const run = spawnSync(
        process.execPath,
        ['bin/vc-harness.mjs', 'bench', '--smoke', '--flow', 'issuance-ready', '--no-postgres', '--out', out],
        { encoding: 'utf8', timeout: 180_000 },
      )
      assert.equal(run.status, 0, `exit ${run.status}\n${run.stdout}\n${run.stderr}`)
      const report = JSON.parse(readFileSync(out, 'utf8')) as { runs: RunSummary[] }
      assert.deepEqual(
        report.runs.map((r) => r.name),
        ['service', 'peer'],
      )
      for (const r of report.runs) {
        assert.ok(r.serverLoop, `${r.name}: a loop figure`)
        assert.ok(r.serverLoop.msPerFlow > 0, `${r.name}: ${r.serverLoop.msPerFlow} ms per flow`)
        // Busy is wall time (a loop waiting for a core counts), over the measured window: positive, finite.
        assert.ok(
          r.serverLoop.busy > 0 && Number.isFinite(r.serverLoop.busy),
          `${r.name}: busy ${r.serverLoop.busy}`,
        )
      }
      assert.match(
        run.stdout,
        /service · issuance-ready · lean ×2: .*\(event loop [\d.]+ ms\/flow, busy \d+ %\)/,
      )
      // Issue 32: a smoke run's ratios come without goals (its figures say nothing about speed).
      assert.match(
        run.stdout,
        /ratios \(flows\/s, same run; smoke: not comparable with the goals\):\n {2}.*: [\d.]+\n/,
      )
      assert.doesNotMatch(run.stdout, /goal /)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('verifier bench', () => {
  test('bench/verifier.ts --smoke verifies every presentation and prints a row per profile and format', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/verifier.ts', '--smoke'], {
      encoding: 'utf8',
      timeout: 120_000,
    })
    assert.equal(run.status, 0, `exit ${run.status}\n${run.stdout}\n${run.stderr}`)
    for (const row of [
      /^\| pe \| jwt_vc_json \| direct_post \| EdDSA \| \d+ .*\| \(baseline\) \|/m,
      /^\| dcql \| jwt_vc_json \| direct_post \| EdDSA \| \d+ .*\| ×\d+\.\d\d \|/m,
      /^\| dcql \| dc\+sd-jwt \| direct_post \| EdDSA \| \d+ .*\| ×\d+\.\d\d \|/m,
      /^\| dcql \| dc\+sd-jwt \| direct_post\.jwt \| EdDSA \| \d+ .*\| ×\d+\.\d\d \|/m,
      /^\| dcql \| dc\+sd-jwt \| direct_post \| ES256 \| \d+ .*\| ×\d+\.\d\d \|/m,
    ]) {
      assert.match(run.stdout, row)
    }
    assert.doesNotMatch(run.stdout + run.stderr, /DID NOT VERIFY/)
  })
})

describe('bench figures', () => {
  test('nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i)
    assert.equal(percentile(values, 50), 50)
    assert.equal(percentile(values, 99), 99)
    assert.equal(percentile(values, 100), 100)
    assert.equal(percentile([], 50), 0)
    assert.deepEqual(latency([3, 1, 2]), { p50: 2, p95: 3, p99: 3 })
  })

  const run = (name: string, flow: RunSummary['flow'], flowsPerSec: number, round = 1, errors = 0) =>
    ({ name, flow, wallet: 'lean', round, flowsPerSec, errors }) as RunSummary

  test('ratios pair runs of the same round and take the median; runs with errors are left out', () => {
    const rows = ratios([
      run('service', 'full', 80, 1),
      run('bare', 'full', 100, 1),
      run('service', 'full', 90, 2),
      run('bare', 'full', 100, 2),
      run('service', 'full', 10, 3),
      run('bare', 'full', 100, 3, 5),
      run('service', 'issuance-ready', 300),
      run('peer', 'issuance-ready', 150),
      run('service', 'issuance', 75),
      run('service ×2', 'full', 120, 1),
    ])
    assert.deepEqual(
      rows.map((r) => [r.what, r.flow, 'against' in r ? r.against : null, r.ratio, r.goal, r.rounds]),
      [
        ['service / bare', 'full', null, 0.85, '≥ 0.5', [0.8, 0.9]],
        // Equal work: the ready flow against the peer; the attended flow against the same peer run, informative.
        ['service / peer', 'issuance-ready', null, 2, '≥ 1.0', [2]],
        ['service / peer', 'issuance', 'issuance-ready', 0.5, 'informative (attended vs at once)', [0.5]],
        [
          'service ×2 / service',
          'full',
          null,
          1.5,
          'informative (2 workers share 2 cores with the wallets)',
          [1.5],
        ],
      ],
    )
  })
})

describe('bench webhook sink', () => {
  let sink: WebhookSink
  const secret = generateWebhookSecret()
  const agent = new Agent()
  before(async () => {
    sink = await WebhookSink.start()
    sink.useSecret(secret)
  })
  after(async () => {
    await agent.close()
    await sink.close()
  })

  const deliver = async (body: string, sign = secret) => {
    const id = `msg_${Math.random()}`
    const timestamp = String(Math.floor(Date.now() / 1000))
    const answer = await request(sink.url, {
      dispatcher: agent,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': timestamp,
        'webhook-signature': webhookSignature(sign, id, timestamp, body),
        'webhook-event': 'issuance.issued',
      },
      body,
    })
    await answer.body.dump()
    return answer.statusCode
  }

  test('a signed delivery reaches the flow waiting for its id, before or after it starts waiting', async () => {
    const waiting = sink.waitFor('p-1', 2000)
    assert.equal(await deliver(JSON.stringify({ id: 'p-1', status: 'SUCCESS' })), 204)
    assert.deepEqual({ ...(await waiting), at: 0 }, { event: 'issuance.issued', status: 'SUCCESS', at: 0 })
    assert.equal(await deliver(JSON.stringify({ id: 'p-2', status: 'FAILED' })), 204)
    assert.equal((await sink.waitFor('p-2', 10)).status, 'FAILED')
  })

  test('a delivery signed with another secret is refused and never reaches a flow', async () => {
    const before = sink.refused
    assert.equal(
      await deliver(JSON.stringify({ id: 'p-3', status: 'SUCCESS' }), generateWebhookSecret()),
      400,
    )
    assert.equal(sink.refused, before + 1)
    await assert.rejects(sink.waitFor('p-3', 50), /no webhook for p-3 within 50 ms \(refused so far: \d+\)/)
  })
})

describe('bench relying party against the service', () => {
  let server: RunningServer
  const agent = new Agent()
  let rp: BenchRelyingParty
  before(async () => {
    server = await startServer({ config: demoConfig(), host: '127.0.0.1', port: 0, dataDir: ':memory:' })
    rp = new BenchRelyingParty({ authUrl: server.url, issuerUrl: server.url, verifierUrl: server.url }, agent)
  })
  after(async () => {
    await agent.close()
    await server.close()
  })

  test('login, offer and submission succeed; the offer link names its process', async () => {
    const token = await rp.login({
      keyId: DEMO.app.id,
      secret: DEMO.app.secret,
      tenant: 'demo',
      ssiconfig: 'degree',
    })
    const link = await rp.createOffer(token, 'degree')
    assert.match(processIdOf(link), /^[\w-]{8,}$/)
  })

  test('failures are step errors with the status and the problem code', async () => {
    await assert.rejects(
      rp.login({ keyId: DEMO.app.id, secret: 'wrong', tenant: 'demo', ssiconfig: 'degree' }),
      (error: StepError) =>
        error instanceof StepError &&
        error.step === 'login' &&
        /^HTTP 401/.test(error.kind) &&
        /expected 200/.test(error.message),
    )
    const token = await rp.login({
      keyId: DEMO.app.id,
      secret: DEMO.app.secret,
      tenant: 'demo',
      ssiconfig: 'degree',
    })
    await assert.rejects(rp.createOffer(token, 'no-such-template'), (error: StepError) => {
      assert.equal(error.step, 'offer')
      assert.match(error.message, /^offer: expected 201, got HTTP 4\d\d \w+/)
      return true
    })
  })
})
