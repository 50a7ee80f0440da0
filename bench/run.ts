// `vc-harness bench`: complete flows with N concurrent simulated wallets against our service, and in the
// same run against the baselines (the bare Fastify + jose issuer/verifier, the peer issuer on
// @sphereon/oid4vci-issuer) and a 2-process cluster, so the ratios hold on a noisy machine. Each run gets
// a fresh target process and a fresh wallet process; their CPU and peak memory are measured apart.

import { type ChildProcess, fork } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { generateWebhookSecret } from '../src/harness/webhook-receiver.ts'
import {
  FLOW_KINDS,
  type FlowKind,
  type FromTarget,
  type FromWorker,
  STEPS,
  type TargetSpec,
  WALLET_MODES,
  type WalletMode,
  type WorkerJob,
  type WorkerResult,
} from './protocol.ts'
import { latency, r1, r2, readProcStat } from './stats.ts'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '..')

export const BENCH_USAGE = `Usage: vc-harness bench [options]

Complete flows per second with concurrent simulated wallets, against our service and, in the same run,
the baselines; prints flows/s, latency per flow and step, errors by kind, CPU per flow (wallet and
server), peak memory and the ratios; writes reports/bench.json.

  --plan P          default: service, bare (full flows), service and peer (issuance), a 2-process
                    service, and the full Veramo wallet; or: service (only our service)
  --flow F          only this flow kind: full | issuance | verification (default: as the plan says)
  --wallet M        only this wallet mode: lean (undici + node:crypto) | full (Veramo/Sphereon)
  --wallets N       concurrent wallets of the lean runs (default 50)
  --full-wallets N  concurrent wallets of the full-wallet run (default 8)
  --workers LIST    service process counts to run (default 1,2)
  --duration S      measured seconds per run (default 10)
  --flows N         stop each run after N flows instead (0: no limit)
  --warmup S        unmeasured seconds before each run (default 3)
  --rounds N        repeat the plan N times; ratios use medians (default 1)
  --no-compare      skip the baselines (bare, peer)
  --cpu-prof DIR    write a V8 CPU profile of every server process to DIR (node --cpu-prof)
  --smoke           a few flows per run, no warm-up: proves the bench works (runs in npm test)
  --out FILE        JSON report (default reports/bench.json; smoke: reports/bench.smoke.json)

Exit code 1 when any flow failed.`

export interface BenchOptions {
  plan: 'default' | 'service'
  flow?: FlowKind
  wallet?: WalletMode
  wallets: number
  fullWallets: number
  workers: number[]
  durationSec: number
  flows: number
  warmupSec: number
  rounds: number
  compare: boolean
  smoke: boolean
  cpuProf?: string
  out: string
}

class BenchUsageError extends Error {
  // Recognised by the CLI like a configuration error: a usage message, exit code 2.
  override name = 'ConfigError'
}

function count(name: string, value: string, min: number): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) throw new BenchUsageError(`--${name} must be a whole number ≥ ${min}`)
  return n
}

export function parseBenchArgs(argv: string[]): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      plan: { type: 'string', default: 'default' },
      flow: { type: 'string' },
      wallet: { type: 'string' },
      wallets: { type: 'string', default: '50' },
      'full-wallets': { type: 'string', default: '8' },
      workers: { type: 'string', default: '1,2' },
      duration: { type: 'string', default: '10' },
      flows: { type: 'string', default: '0' },
      warmup: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '1' },
      'no-compare': { type: 'boolean', default: false },
      smoke: { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  })
  if (values.help) return 'help'
  if (values.plan !== 'default' && values.plan !== 'service')
    throw new BenchUsageError('--plan must be default or service')
  if (values.flow !== undefined && !FLOW_KINDS.includes(values.flow as FlowKind))
    throw new BenchUsageError(`--flow must be one of ${FLOW_KINDS.join(', ')}`)
  if (values.wallet !== undefined && !WALLET_MODES.includes(values.wallet as WalletMode))
    throw new BenchUsageError(`--wallet must be one of ${WALLET_MODES.join(', ')}`)
  const workers = values.workers.split(',').map((w) => count('workers', w, 1))
  const durationSec = Number(values.duration)
  if (!(durationSec > 0)) throw new BenchUsageError('--duration must be a number of seconds > 0')
  const warmupSec = Number(values.warmup)
  if (!(warmupSec >= 0)) throw new BenchUsageError('--warmup must be a number of seconds ≥ 0')
  const smoke = values.smoke
  return {
    plan: values.plan,
    ...(values.flow !== undefined ? { flow: values.flow as FlowKind } : {}),
    ...(values.wallet !== undefined ? { wallet: values.wallet as WalletMode } : {}),
    wallets: smoke ? 2 : count('wallets', values.wallets, 1),
    fullWallets: smoke ? 1 : count('full-wallets', values['full-wallets'], 1),
    workers,
    durationSec: smoke ? 60 : durationSec,
    flows: smoke ? 4 : count('flows', values.flows, 0),
    warmupSec: smoke ? 0 : warmupSec,
    rounds: smoke ? 1 : count('rounds', values.rounds, 1),
    compare: !values['no-compare'],
    smoke,
    ...(values['cpu-prof'] !== undefined ? { cpuProf: resolve(values['cpu-prof']) } : {}),
    out: resolve(values.out ?? join(ROOT, 'reports', smoke ? 'bench.smoke.json' : 'bench.json')),
  }
}

/** One run: a target, a flow kind, a wallet mode and a number of wallets. */
export interface PlannedRun {
  name: string
  target: TargetSpec
  flow: FlowKind
  mode: WalletMode
  wallets: number
}

export function planRuns(options: BenchOptions): PlannedRun[] {
  const service = (workers: number): TargetSpec => ({ kind: 'service', workers })
  const runs: PlannedRun[] = []
  const lean = (name: string, target: TargetSpec, flow: FlowKind) =>
    runs.push({ name, target, flow, mode: 'lean', wallets: options.wallets })
  const [first = 1, ...more] = options.workers
  const svc = first > 1 ? `service ×${first}` : 'service'
  lean(svc, service(first), 'full')
  if (options.plan === 'default') {
    if (options.compare) lean('bare', { kind: 'bare' }, 'full')
    lean(svc, service(first), 'issuance')
    if (options.compare) lean('peer', { kind: 'peer' }, 'issuance')
    lean(svc, service(first), 'verification')
    if (options.compare) lean('bare', { kind: 'bare' }, 'verification')
    for (const workers of more) lean(`service ×${workers}`, service(workers), 'full')
    runs.push({ name: svc, target: service(first), flow: 'full', mode: 'full', wallets: options.fullWallets })
  }
  return runs.filter(
    (run) =>
      (options.flow === undefined || run.flow === options.flow) &&
      (options.wallet === undefined || run.mode === options.wallet),
  )
}

/** A run's figures, as printed and written to the JSON report. */
export interface RunSummary {
  name: string
  flow: FlowKind
  wallet: WalletMode
  wallets: number
  round: number
  flows: number
  errors: number
  errorKinds: WorkerResult['errorKinds']
  seconds: number
  flowsPerSec: number
  flowMs: ReturnType<typeof latency>
  stepMs: Record<string, ReturnType<typeof latency>>
  cpuMsPerFlow: { wallet: number; server: number }
  /** Cores used during the measured run: wallet process, server processes, everything else. */
  cores: { wallet: number; server: number; other: number | null }
  walletEventLoopBusy: number
  peakRssMb: { wallet: number; server: number }
  /**
   * SQL statements the service ran during the measured run per completed flow (webhook deliveries and
   * any flow still under way at either end included); null where the store is out of sight (cluster, baselines).
   */
  sqlStatementsPerFlow: number | null
  webhooks: boolean
}

const tsxLoader = () => import.meta.resolve('tsx')

function child(file: string, profileDir?: string): ChildProcess {
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
  return fork(join(HERE, file), [], { execArgv: ['--import', tsxLoader(), ...profile], stdio: 'inherit' })
}

/** The next message of a kind (or a failure); rejects when the child dies first. */
function next<T extends { kind: string }>(proc: ChildProcess, kind: T['kind']): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const onMessage = (message: T) => {
      if (message.kind === kind) done(() => resolvePromise(message))
      else if (message.kind === 'failed')
        done(() => reject(new Error((message as unknown as { message: string }).message)))
    }
    const onExit = (code: number | null) =>
      done(() => reject(new Error(`process exited (${code}) before "${kind}"`)))
    const done = (then: () => void) => {
      proc.off('message', onMessage)
      proc.off('exit', onExit)
      then()
    }
    proc.on('message', onMessage)
    proc.once('exit', onExit)
  })
}

async function usage(target: ChildProcess) {
  target.send({ kind: 'usage' })
  return next<Extract<FromTarget, { kind: 'usage' }>>(target, 'usage')
}

function progressLine(name: string, text: string) {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[2K  ${name}: ${text}`)
}

async function runOne(run: PlannedRun, options: BenchOptions, round: number): Promise<RunSummary> {
  const label = `${run.name} · ${run.flow} · ${run.mode} wallet ×${run.wallets}`
  // Both processes load their modules at once (~1 s each); the target is told what to start once the
  // worker's webhook sink is known. Nothing is measured before both are up.
  const worker = child('worker.ts')
  const target: ChildProcess = child('target-host.ts', options.cpuProf)
  try {
    const { url: sinkUrl } = await next<Extract<FromWorker, { kind: 'sink' }>>(worker, 'sink')
    const webhookSecret = generateWebhookSecret()
    const spec: TargetSpec =
      run.target.kind === 'service'
        ? { ...run.target, webhook: { url: sinkUrl, secret: webhookSecret } }
        : run.target
    target.send({ kind: 'start', spec })
    const { info } = await next<Extract<FromTarget, { kind: 'started' }>>(target, 'started')
    if (!info.kinds.includes(run.flow)) throw new Error(`${info.label} cannot run ${run.flow} flows`)
    const job: WorkerJob = {
      target: info,
      flow: run.flow,
      mode: run.mode,
      wallets: run.wallets,
      warmupSec: options.warmupSec,
      durationSec: options.durationSec,
      flows: options.flows,
      webhookTimeoutSec: 30,
      webhookSecret,
    }
    let startUsage: Awaited<ReturnType<typeof usage>> | undefined
    let machineStart: ReturnType<typeof readProcStat> = null
    let lastFlows = 0
    let lastAt = Date.now()
    const measured = new Promise<void>((ok) => {
      worker.on('message', (message: FromWorker) => {
        if (message.kind === 'measuring') {
          machineStart = readProcStat()
          void usage(target as ChildProcess).then((u) => {
            startUsage = u
            ok()
          })
        } else if (message.kind === 'progress') {
          const now = Date.now()
          const rate = ((message.flows - lastFlows) * 1000) / Math.max(1, now - lastAt)
          lastFlows = message.flows
          lastAt = now
          progressLine(
            label,
            `${message.phase === 'warmup' ? 'warming up' : `${message.flows} flows, ${r1(rate)}/s`}, errors ${message.errors}`,
          )
        }
      })
    })
    worker.send({ kind: 'run', job })
    const { result } = await next<Extract<FromWorker, { kind: 'result' }>>(worker, 'result')
    await measured
    const machineEnd = readProcStat()
    const endUsage = await usage(target)
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K')
    const serverCpuSec = (endUsage.cpuUs - (startUsage?.cpuUs ?? 0)) / 1e6
    const walletCpuSec = result.cpuUs / 1e6
    const wall = result.wallSec || 1
    const flows = result.flows || 1
    const start = machineStart as ReturnType<typeof readProcStat>
    const other =
      start && machineEnd
        ? r2(Math.max(0, machineEnd.busy - start.busy - serverCpuSec - walletCpuSec) / wall)
        : null
    return {
      name: run.name,
      flow: run.flow,
      wallet: run.mode,
      wallets: run.wallets,
      round,
      flows: result.flows,
      errors: result.errors,
      errorKinds: result.errorKinds,
      seconds: r2(result.wallSec),
      flowsPerSec: r1(result.flows / wall),
      flowMs: latency(result.flowMs),
      stepMs: Object.fromEntries(
        STEPS[run.flow]
          .filter((s) => (result.stepMs[s]?.length ?? 0) > 0)
          .map((s) => [s, latency(result.stepMs[s] ?? [])]),
      ),
      cpuMsPerFlow: { wallet: r2((walletCpuSec * 1000) / flows), server: r2((serverCpuSec * 1000) / flows) },
      cores: { wallet: r2(walletCpuSec / wall), server: r2(serverCpuSec / wall), other },
      walletEventLoopBusy: r2(result.eventLoopBusy),
      peakRssMb: { wallet: result.peakRssMb, server: endUsage.peakRssMb },
      sqlStatementsPerFlow:
        endUsage.statements !== undefined && startUsage?.statements !== undefined && result.flows > 0
          ? r1((endUsage.statements - startUsage.statements) / result.flows)
          : null,
      webhooks: info.webhooks && run.flow === 'full',
    }
  } finally {
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K')
    if (target.connected) {
      target.send({ kind: 'stop' })
      await new Promise((ok) => target.once('exit', ok))
    }
    if (worker.connected) worker.disconnect()
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length / 2
  if (sorted.length === 0) return 0
  return Number.isInteger(mid)
    ? ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
    : (sorted[Math.floor(mid)] ?? 0)
}

/** The ratios the issue asks for: each pairs runs of the same round, then takes the median over rounds. */
export function ratios(summaries: RunSummary[]) {
  const find = (round: number, name: (n: string) => boolean, flow: FlowKind) =>
    summaries.find((s) => s.round === round && name(s.name) && s.flow === flow && s.wallet === 'lean')
  const rounds = [...new Set(summaries.map((s) => s.round))]
  const pair = (
    what: string,
    a: (n: string) => boolean,
    b: (n: string) => boolean,
    flow: FlowKind,
    goal: string,
  ) => {
    const values = rounds.flatMap((round) => {
      const x = find(round, a, flow)
      const y = find(round, b, flow)
      return x && y && y.flowsPerSec > 0 && x.errors === 0 && y.errors === 0
        ? [x.flowsPerSec / y.flowsPerSec]
        : []
    })
    return values.length ? [{ what, flow, ratio: r2(median(values)), goal, rounds: values.map(r2) }] : []
  }
  const service = (n: string) => n === 'service'
  return [
    ...pair('service / bare', service, (n) => n === 'bare', 'full', '≥ 0.70'),
    ...pair('service / bare', service, (n) => n === 'bare', 'verification', 'informative'),
    ...pair('service / peer', service, (n) => n === 'peer', 'issuance', '> 1'),
    ...pair(
      'service ×2 / service',
      (n) => n === 'service ×2',
      service,
      'full',
      '> 1 (2 cores shared with the wallets)',
    ),
  ]
}

function print(summaries: RunSummary[], ratioRows: ReturnType<typeof ratios>) {
  const pad = (s: string | number, n: number) => String(s).padStart(n)
  console.log(
    `\n${'run'.padEnd(34)}${pad('flows', 7)}${pad('flows/s', 9)}${pad('p50', 8)}${pad('p95', 8)}${pad('p99', 8)}  ${'CPU ms/flow w/s'.padStart(16)}  ${'cores w/s/other'.padStart(16)}  ${'peak MB w/s'.padStart(12)}${pad('SQL/flow', 9)}${pad('errors', 8)}`,
  )
  for (const s of summaries) {
    const name = `${s.name} · ${s.flow} · ${s.wallet} ×${s.wallets}${s.round > 1 ? ` #${s.round}` : ''}`
    console.log(
      `${name.padEnd(34)}${pad(s.flows, 7)}${pad(s.flowsPerSec, 9)}${pad(s.flowMs.p50, 8)}${pad(s.flowMs.p95, 8)}${pad(s.flowMs.p99, 8)}  ${`${s.cpuMsPerFlow.wallet} / ${s.cpuMsPerFlow.server}`.padStart(16)}  ${`${s.cores.wallet}/${s.cores.server}/${s.cores.other ?? '?'}`.padStart(16)}  ${`${s.peakRssMb.wallet}/${s.peakRssMb.server}`.padStart(12)}${pad(s.sqlStatementsPerFlow ?? '-', 9)}${pad(s.errors, 8)}`,
    )
  }
  console.log('\nper step, p50 / p95 / p99 ms:')
  for (const s of summaries) {
    const steps = Object.entries(s.stepMs)
      .map(([step, l]) => `${step} ${l.p50}/${l.p95}/${l.p99}`)
      .join('  ')
    console.log(`  ${s.name} · ${s.flow} · ${s.wallet}: ${steps}`)
  }
  const failed = summaries.filter((s) => s.errors > 0)
  if (failed.length) {
    console.log('\nerrors by kind:')
    for (const s of failed) {
      for (const [kind, { count: n, sample }] of Object.entries(s.errorKinds))
        console.log(`  ${s.name} · ${s.flow} · ${s.wallet}: ${n} × ${kind} — e.g. ${sample}`)
    }
  }
  if (ratioRows.length) {
    console.log('\nratios (flows/s, same run):')
    for (const r of ratioRows)
      console.log(
        `  ${r.what} (${r.flow}): ${r.ratio}  goal ${r.goal}${r.rounds.length > 1 ? `  rounds ${r.rounds.join(', ')}` : ''}`,
      )
  }
}

/** The peer baseline's libraries are devDependencies: present in a git checkout after `npm ci` only. */
function peerInstalled(): boolean {
  try {
    import.meta.resolve('@sphereon/oid4vci-issuer-server')
    return true
  } catch {
    return false
  }
}

export async function runBench(options: BenchOptions): Promise<number> {
  let runs = planRuns(options)
  if (runs.some((run) => run.target.kind === 'peer') && !peerInstalled()) {
    console.log(
      'vc-harness bench: @sphereon/oid4vci-issuer-server is not installed (an installed package has no devDependencies): running without the peer baseline',
    )
    runs = runs.filter((run) => run.target.kind !== 'peer')
  }
  if (runs.length === 0) throw new BenchUsageError('--flow/--wallet leave nothing to run')
  const machine = {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGb: r1(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  }
  console.log(
    `vc-harness bench: ${runs.length * options.rounds} runs on ${machine.cores} cores (${machine.cpu}), Node ${machine.node}; ${
      options.flows > 0 ? `${options.flows} flows` : `${options.durationSec} s`
    } per run after ${options.warmupSec} s warm-up${options.smoke ? ' (smoke: figures meaningless)' : ''}`,
  )
  const summaries: RunSummary[] = []
  for (let round = 1; round <= options.rounds; round++) {
    for (const run of runs) {
      const summary = await runOne(run, options, round)
      summaries.push(summary)
      console.log(
        `  ${summary.name} · ${summary.flow} · ${summary.wallet} ×${summary.wallets}: ${summary.flowsPerSec} flows/s, p50 ${summary.flowMs.p50} ms, CPU ms/flow wallet ${summary.cpuMsPerFlow.wallet} server ${summary.cpuMsPerFlow.server}${summary.sqlStatementsPerFlow !== null ? `, SQL statements/flow ${summary.sqlStatementsPerFlow}` : ''}, errors ${summary.errors}`,
      )
    }
  }
  const ratioRows = ratios(summaries)
  print(summaries, ratioRows)
  mkdirSync(dirname(options.out), { recursive: true })
  const { out: _out, ...settings } = options
  writeFileSync(
    options.out,
    `${JSON.stringify({ date: new Date().toISOString(), machine, settings, runs: summaries, ratios: ratioRows }, null, 2)}\n`,
  )
  console.log(`\nwritten: ${relative(process.cwd(), options.out)}`)
  const bad = summaries.filter((s) => s.errors > 0 || s.flows === 0)
  if (bad.length) {
    console.error(
      `!!! ${bad.length} run(s) had failed flows or none at all: ${bad.map((s) => `${s.name} · ${s.flow} · ${s.wallet}`).join('; ')}`,
    )
    return 1
  }
  return 0
}

export async function bench(argv: string[]): Promise<number> {
  const options = parseBenchArgs(argv)
  if (options === 'help') {
    console.log(BENCH_USAGE)
    return 0
  }
  return runBench(options)
}
