/**
 * HTTP benchmark: requests per second of login, create offer and read process, each next to a bare
 * Fastify route measured in the same run on 127.0.0.1. See bench/README.md.
 *
 *   npm run bench                      # 3 rounds × 5 scenarios × (2 s warm-up + 5 s), 10 connections
 *   npm run bench -- --duration 10 --rounds 5 --connections 20
 *   npm run bench:smoke                # 1 round, ~0.5 s per scenario; fails on any request error
 *
 * Servers run in this process; autocannon runs in a forked child (bench/http/loadgen.ts).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { parseCredentialOfferUri } from '../../src/client/index.ts'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { readProcStat } from '../stats.ts'
import { BARE_GET_PATH, BARE_POST_PATH, type RunningBare, startBare } from './bare.ts'
import type { FromLoadgen, LoadJob, LoadResult, ToLoadgen } from './loadgen.ts'

const BENCH_DIR = dirname(fileURLToPath(import.meta.url))
const ROOT = join(BENCH_DIR, '../..')
const DEFAULT_OUT = join(ROOT, 'reports', 'bench-http.json')
// Smoke runs (inside `npm test`) must not overwrite the figures of the last real run.
const SMOKE_OUT = join(ROOT, 'reports', 'bench-http.smoke.json')

const DEMO_APP_KEY = {
  id: '0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01',
  secret: 'demo-app-secret-7Qm2xV9pL4sT8wZ1',
}
const TENANT = 'demo'
const TEMPLATE = 'degree'
const OFFER_BODY = JSON.stringify({ group: TEMPLATE })

// ---------------------------------------------------------------------------------------------- options

interface Options {
  smoke: boolean
  durationSec: number
  warmupSec: number
  rounds: number
  connections: number
  out: string
}

const USAGE = `usage: node --import tsx bench/http/http.ts [--smoke] [--duration S] [--warmup S] [--rounds N] [--connections N] [--out FILE]
  --smoke          1 round of ~0.5 s per scenario, no warm-up: proves the bench works (exit 1 on any request error)
  --duration S     measured seconds per scenario and round (default 5; smoke 0.5)
  --warmup S       unmeasured seconds before each measured run (default 2; smoke 0)
  --rounds N       times the whole scenario list is run; figures are medians over rounds (default 3; smoke 1)
  --connections N  concurrent keep-alive connections (default 10); pipelining is always 1
  --out FILE       JSON report (default reports/bench-http.json; smoke: reports/bench-http.smoke.json)`

function positive(name: string, text: string | undefined, fallback: number, allowZero = false): number {
  if (text === undefined) return fallback
  const value = Number(text)
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new Error(`--${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got "${text}"`)
  }
  return value
}

function whole(name: string, text: string | undefined, fallback: number): number {
  const value = positive(name, text, fallback)
  if (!Number.isInteger(value)) throw new Error(`--${name} must be a whole number, got "${text}"`)
  return value
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      smoke: { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      rounds: { type: 'string' },
      connections: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  })
  if (values.help) {
    console.log(USAGE)
    process.exit(0)
  }
  const smoke = values.smoke ?? false
  return {
    smoke,
    durationSec: positive('duration', values.duration, smoke ? 0.5 : 5),
    warmupSec: positive('warmup', values.warmup, smoke ? 0 : 2, true),
    rounds: whole('rounds', values.rounds, smoke ? 1 : 3),
    connections: whole('connections', values.connections, 10),
    out: values.out ?? (smoke ? SMOKE_OUT : DEFAULT_OUT),
  }
}

// ------------------------------------------------------------------------------------- load generator

/** The forked autocannon process; one job at a time. */
class LoadGenerator {
  private readonly child: ChildProcess
  private pending: { resolve(r: LoadResult): void; reject(e: Error): void } | undefined
  /** Set once the child has exited: later runs fail at once instead of hanging. */
  private gone: Error | undefined

  constructor() {
    // cwd = repository root so `--import tsx` resolves from this project's node_modules.
    this.child = fork(join(BENCH_DIR, 'loadgen.ts'), [], {
      cwd: ROOT,
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    this.child.on('message', (message: FromLoadgen) => {
      const pending = this.pending
      this.pending = undefined
      if (!pending) return
      if (message.kind === 'result') pending.resolve(message.result)
      else pending.reject(new Error(`load generator failed: ${message.message}`))
    })
    this.child.on('exit', (code, signal) => {
      this.gone = new Error(`load generator exited (code ${code}, signal ${signal})`)
      this.fail(this.gone)
    })
    this.child.on('error', (error) => this.fail(error))
  }

  private fail(error: Error): void {
    this.pending?.reject(error)
    this.pending = undefined
  }

  run(job: LoadJob): Promise<LoadResult> {
    if (this.pending) throw new Error('load generator is busy')
    if (this.gone) return Promise.reject(this.gone)
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject }
      const message: ToLoadgen = { kind: 'run', job }
      this.child.send(message)
    })
  }

  close(): void {
    if (this.child.connected) this.child.disconnect()
  }
}

// ------------------------------------------------------------------------------------------ scenarios

type Baseline = 'bare POST' | 'bare GET'

interface Scenario {
  name: string
  /** Which bare route this one is compared with; absent for the bare routes themselves. */
  baseline?: Baseline
  job: Omit<LoadJob, 'durationSec' | 'connections'>
}

async function expectStatus(response: Response, status: number, what: string): Promise<void> {
  if (response.status !== status) {
    throw new Error(
      `pre-flight ${what}: HTTP ${response.status}, expected ${status}: ${await response.text()}`,
    )
  }
}

/** Logs in once, creates the processes the read scenario reads, and checks each scenario answers as expected. */
async function prepare(bare: RunningBare, service: RunningServer, connections: number): Promise<Scenario[]> {
  const basic = Buffer.from(`${DEMO_APP_KEY.id}:${DEMO_APP_KEY.secret}`).toString('base64')
  const loginHeaders = {
    authorization: `Basic ${basic}`,
    tenant: TENANT,
    ssiconfig: TEMPLATE,
    'content-type': 'application/json',
  }
  const login = await fetch(`${service.url}/admin/v1/api_keys/login`, {
    method: 'POST',
    headers: loginHeaders,
  })
  await expectStatus(login, 200, 'login')
  const token = login.headers.get('token')
  if (!token) throw new Error('pre-flight login: no token header')
  await login.arrayBuffer()

  const appHeaders = { authorization: `jwt ${token}`, 'content-type': 'application/json' }
  // One process per connection: connection i reads process i for its whole run.
  const processIds: string[] = []
  for (let i = 0; i < connections; i++) {
    const offer = await fetch(`${service.url}/api/v3/oidc-issuance/credential-offer`, {
      method: 'POST',
      headers: appHeaders,
      body: OFFER_BODY,
    })
    await expectStatus(offer, 201, 'create offer')
    const { credential_offer_uri } = (await offer.json()) as { credential_offer_uri: string }
    processIds.push(parseCredentialOfferUri(credential_offer_uri).processId)
  }
  const readPaths = processIds.map((id) => `/admin/v1/issuanceRequests/${encodeURIComponent(id)}`)
  const read = await fetch(`${service.url}${readPaths[0]}`, {
    headers: { authorization: appHeaders.authorization },
  })
  await expectStatus(read, 200, 'read process')
  const view = (await read.json()) as { id?: string }
  if (view.id !== processIds[0]) throw new Error(`pre-flight read process: got id ${view.id}`)

  const barePost = await fetch(`${bare.url}${BARE_POST_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: OFFER_BODY,
  })
  await expectStatus(barePost, 201, 'bare POST')
  await barePost.arrayBuffer()
  const bareGet = await fetch(`${bare.url}${BARE_GET_PATH}`)
  await expectStatus(bareGet, 200, 'bare GET')
  await bareGet.arrayBuffer()

  return [
    {
      name: 'bare POST',
      job: {
        origin: bare.url,
        method: 'POST',
        paths: [BARE_POST_PATH],
        headers: { 'content-type': 'application/json' },
        body: OFFER_BODY,
        expectedStatus: 201,
      },
    },
    {
      name: 'bare GET',
      job: { origin: bare.url, method: 'GET', paths: [BARE_GET_PATH], headers: {}, expectedStatus: 200 },
    },
    {
      name: 'login',
      baseline: 'bare POST',
      job: {
        origin: service.url,
        method: 'POST',
        paths: ['/admin/v1/api_keys/login'],
        headers: loginHeaders,
        expectedStatus: 200,
      },
    },
    {
      name: 'create offer',
      baseline: 'bare POST',
      job: {
        origin: service.url,
        method: 'POST',
        paths: ['/api/v3/oidc-issuance/credential-offer'],
        headers: appHeaders,
        body: OFFER_BODY,
        expectedStatus: 201,
      },
    },
    {
      name: 'read process',
      baseline: 'bare GET',
      job: {
        origin: service.url,
        method: 'GET',
        paths: readPaths,
        headers: { authorization: appHeaders.authorization },
        expectedStatus: 200,
      },
    },
  ]
}

// ------------------------------------------------------------------------------------ CPU accounting

/**
 * Where the machine's CPU went during a run, in cores (1.0 = one core fully busy):
 * this process (the server under test), the load generator, and everything else. "other" comes from
 * /proc/stat (Linux only; null elsewhere) minus the two processes' own usage; anything well above zero
 * means something else was running and the figures are depressed. "steal" is time the hypervisor gave
 * to other guests.
 */
interface CpuShare {
  serverCores: number
  loadgenCores: number
  otherCores: number | null
  stealCores: number | null
}

interface CpuMark {
  at: bigint
  self: NodeJS.CpuUsage
  machine: { busy: number; steal: number } | null
}

function cpuMark(): CpuMark {
  return { at: process.hrtime.bigint(), self: process.cpuUsage(), machine: readProcStat() }
}

function cpuShare(start: CpuMark, loadgen: LoadResult): CpuShare {
  const end = cpuMark()
  const wall = Number(end.at - start.at) / 1e9
  const self = process.cpuUsage(start.self)
  const serverSec = (self.user + self.system) / 1e6
  const loadgenSec = loadgen.cpuCores * loadgen.durationSec
  const r2 = (x: number) => Math.round(x * 100) / 100
  let otherCores: number | null = null
  let stealCores: number | null = null
  if (start.machine && end.machine) {
    const busy = end.machine.busy - start.machine.busy
    otherCores = r2(Math.max(0, busy - serverSec - loadgenSec) / wall)
    stealCores = r2((end.machine.steal - start.machine.steal) / wall)
  }
  return { serverCores: r2(serverSec / wall), loadgenCores: loadgen.cpuCores, otherCores, stealCores }
}

/** Above this many cores of foreign CPU during a measured run, the machine was not quiet. */
const NOISY_CORES = 0.15

const FS_TYPES: Record<number, string> = {
  61267: 'ext2/3/4',
  1481003842: 'xfs',
  2435016766: 'btrfs',
  2035054128: 'overlayfs',
  16914836: 'tmpfs',
  2240043254: 'ramfs',
}

function filesystemOf(dir: string): string {
  try {
    const type = statfsSync(dir).type
    return FS_TYPES[type] ?? `0x${type.toString(16)}`
  } catch {
    return 'unknown'
  }
}

// ------------------------------------------------------------------------------------------ reporting

/** One measured run of one scenario in one round. */
interface Run {
  round: number
  warmup: { responses: number; errors: number } | null
  /** req/s of this run ÷ req/s of its bare route in the same round. */
  ratioVsBaseline: number | null
  result: LoadResult
  cpu: CpuShare
}

interface Summary {
  name: string
  method: string
  path: string
  expectedStatus: number
  baseline: Baseline | null
  /** Medians over rounds (a single round: that round's figures). */
  reqPerSec: number
  reqPerSecMin: number
  reqPerSecMax: number
  /** Median of the per-round ratios (each ratio pairs runs measured seconds apart). */
  ratioVsBaseline: number | null
  latencyMs: { p50: number; p99: number }
  cpu: { serverCores: number; loadgenCores: number; otherCores: number | null }
  /** Failed requests over all rounds, warm-ups included. */
  errors: number
  runs: Run[]
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits

function summarise(scenario: Scenario, runs: Run[]): Summary {
  const rates = runs.map((r) => r.result.reqPerSec)
  const ratios = runs.flatMap((r) => (r.ratioVsBaseline === null ? [] : [r.ratioVsBaseline]))
  const others = runs.flatMap((r) => (r.cpu.otherCores === null ? [] : [r.cpu.otherCores]))
  const { paths } = scenario.job
  return {
    name: scenario.name,
    method: scenario.job.method,
    path: paths.length > 1 ? `${paths[0]} (and ${paths.length - 1} more ids)` : (paths[0] ?? ''),
    expectedStatus: scenario.job.expectedStatus,
    baseline: scenario.baseline ?? null,
    reqPerSec: round(median(rates), 1),
    reqPerSecMin: Math.min(...rates),
    reqPerSecMax: Math.max(...rates),
    ratioVsBaseline: ratios.length ? round(median(ratios), 3) : null,
    latencyMs: {
      p50: round(median(runs.map((r) => r.result.latencyMs.p50)), 3),
      p99: round(median(runs.map((r) => r.result.latencyMs.p99)), 3),
    },
    cpu: {
      serverCores: round(median(runs.map((r) => r.cpu.serverCores)), 2),
      loadgenCores: round(median(runs.map((r) => r.cpu.loadgenCores)), 2),
      otherCores: others.length ? Math.max(...others) : null,
    },
    errors: runs.reduce((n, r) => n + r.result.errors + (r.warmup?.errors ?? 0), 0),
    runs,
  }
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')
}

function table(rows: Summary[], rounds: number): string {
  const header = [
    'scenario',
    'req/s',
    rounds > 1 ? 'range (rounds)' : '± sd',
    'p50 ms',
    'p99 ms',
    'errors',
    'vs bare',
    'cpu srv/gen/other',
  ]
  const body = rows.map((r) => [
    r.name,
    r.reqPerSec.toFixed(0),
    rounds > 1
      ? `${r.reqPerSecMin.toFixed(0)}–${r.reqPerSecMax.toFixed(0)}`
      : (r.runs[0]?.result.reqPerSecStddev.toFixed(0) ?? '-'),
    r.latencyMs.p50.toFixed(2),
    r.latencyMs.p99.toFixed(2),
    String(r.errors),
    r.ratioVsBaseline === null ? '(baseline)' : `${r.ratioVsBaseline.toFixed(3)} × ${r.baseline}`,
    [r.cpu.serverCores, r.cpu.loadgenCores, r.cpu.otherCores]
      .map((x) => (x === null ? '?' : x.toFixed(2)))
      .join(' / '),
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)))
  const rule = widths.map((w) => '-'.repeat(w)).join('  ')
  return [pad(header, widths), rule, ...body.map((row) => pad(row, widths))].join('\n')
}

// ------------------------------------------------------------------------------------------------ main

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2))
  const dataDir = mkdtempSync(join(tmpdir(), 'vc-harness-bench-'))
  const filesystem = filesystemOf(dataDir)
  let bare: RunningBare | undefined
  let service: RunningServer | undefined
  let loadgen: LoadGenerator | undefined
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true })
  process.once('SIGINT', () => {
    removeDataDir()
    process.exit(130)
  })

  try {
    loadgen = new LoadGenerator() // boots (tsx + autocannon) while the servers start
    bare = await startBare()
    service = await startServer({ config: loadConfigFile(DEMO_CONFIG_PATH), dataDir, port: 0 })
    const scenarios = await prepare(bare, service, options.connections)

    console.log(
      `vc-harness HTTP bench: ${options.rounds} round(s) × ${scenarios.length} scenarios × ` +
        (options.warmupSec > 0
          ? `(${options.warmupSec} s warm-up + ${options.durationSec} s)`
          : `${options.durationSec} s`) +
        `, ${options.connections} connections, pipelining 1${options.smoke ? ' (smoke)' : ''}`,
    )
    console.log(
      `servers in this process (pid ${process.pid}); autocannon in a child process; both share ` +
        `${cpus().length} cores. SQLite (WAL, synchronous=FULL) on ${filesystem} in ${dataDir}`,
    )
    if (filesystem === 'tmpfs' || filesystem === 'ramfs') {
      console.warn(`WARNING: ${dataDir} is on ${filesystem}: fsync is free, so write figures are optimistic.`)
    }

    const runs = new Map<string, Run[]>(scenarios.map((s) => [s.name, []]))
    for (let r = 1; r <= options.rounds; r++) {
      const line: string[] = []
      for (const scenario of scenarios) {
        const job = { ...scenario.job, connections: options.connections }
        let warmup: Run['warmup'] = null
        if (options.warmupSec > 0) {
          const w = await loadgen.run({ ...job, durationSec: options.warmupSec })
          warmup = { responses: w.responses, errors: w.errors }
        }
        const mark = cpuMark()
        const result = await loadgen.run({ ...job, durationSec: options.durationSec })
        const cpu = cpuShare(mark, result)
        const base = scenario.baseline && runs.get(scenario.baseline)?.[r - 1]
        const ratioVsBaseline =
          base && base.result.reqPerSec > 0 ? round(result.reqPerSec / base.result.reqPerSec, 3) : null
        runs.get(scenario.name)?.push({ round: r, warmup, ratioVsBaseline, result, cpu })
        const errors = result.errors + (warmup?.errors ?? 0)
        line.push(`${scenario.name} ${result.reqPerSec.toFixed(0)}${errors ? ` (${errors} ERRORS)` : ''}`)
      }
      console.log(`  round ${r}/${options.rounds} req/s: ${line.join(', ')}`)
    }
    const summaries = scenarios.map((s) => summarise(s, runs.get(s.name) ?? []))

    console.log(`\n${table(summaries, options.rounds)}\n`)
    console.log(
      (options.rounds > 1
        ? `req/s, p50, p99, ratio and cpu are medians over ${options.rounds} rounds (ratio: median of per-round ratios);\n`
        : '± sd = std. dev. of the per-sample rate (0.1 s samples when a run is under 2 s, else 1 s);\n') +
        'req/s = responses / elapsed time of a run; latency = send to last byte as seen by autocannon;\n' +
        'cpu = cores used by the servers (this process) / the load generator / anything else on the machine.',
    )
    const noisy = summaries.filter((s) => (s.cpu.otherCores ?? 0) > NOISY_CORES)
    if (noisy.length > 0) {
      const worst = Math.max(...noisy.map((s) => s.cpu.otherCores ?? 0))
      console.warn(
        `WARNING: the machine was not quiet — other processes used up to ${worst.toFixed(2)} cores during ` +
          `${noisy.map((s) => s.name).join(', ')}. Those figures are depressed; rerun on an idle machine.`,
      )
    }

    const failed = summaries.filter((s) => s.errors > 0)
    const report = {
      generatedAt: new Date().toISOString(),
      ok: failed.length === 0,
      /** False when other processes used more than NOISY_CORES during some measured run. */
      machineQuiet: noisy.length === 0,
      machine: {
        cores: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
      },
      setup: {
        smoke: options.smoke,
        rounds: options.rounds,
        durationSec: options.durationSec,
        warmupSec: options.warmupSec,
        connections: options.connections,
        pipelining: 1,
        host: '127.0.0.1',
        loadGenerator:
          'autocannon 8 in a forked child process (bench/http/loadgen.ts); servers in the parent',
        coresShared: true,
        database: { engine: 'SQLite via better-sqlite3', journal: 'WAL', synchronous: 'FULL', filesystem },
      },
      scenarios: summaries,
    }
    mkdirSync(dirname(options.out), { recursive: true })
    writeFileSync(options.out, `${JSON.stringify(report, null, 2)}\n`)
    const shown = relative(process.cwd(), options.out)
    console.log(`wrote ${shown.startsWith('..') ? options.out : shown}`)

    if (failed.length > 0) {
      console.error(`\n${'!'.repeat(78)}`)
      console.error('!!! BENCH RUN HAD REQUEST ERRORS — these figures are NOT valid')
      for (const s of failed) {
        for (const run of s.runs) {
          const r = run.result
          if (r.errors === 0 && !run.warmup?.errors) continue
          console.error(
            `!!! ${s.name}, round ${run.round}: ${r.errors} errors in the measured run` +
              (run.warmup?.errors ? `, ${run.warmup.errors} in warm-up` : '') +
              ` (unexpected status ${r.unexpectedStatus}, socket ${r.socketErrors}, timeouts ${r.timeouts}); ` +
              `statuses ${JSON.stringify(r.statusCounts)}; e.g. ${r.errorSamples.join(' | ') || 'n/a'}`,
          )
        }
      }
      console.error('!'.repeat(78))
      return 1
    }
    return 0
  } finally {
    loadgen?.close()
    await service?.close()
    await bare?.close()
    removeDataDir()
  }
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error)
    process.exitCode = 1
  },
)
