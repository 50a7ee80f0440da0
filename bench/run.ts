// `vc-harness bench`: complete flows with N concurrent simulated wallets against our service, and in the
// same run against the baselines (the bare Fastify + jose issuer/verifier, the peer issuer on
// @sphereon/oid4vci-issuer) and a 2-process cluster, so the ratios hold on a noisy machine. Each run gets
// a fresh target process and a fresh wallet process; their CPU and peak memory are measured apart.
// `--target external` drives a deployment the bench did not start instead (bench/external.ts): the wallet
// process only, guarded by --allow-host, no baselines.

import { type ChildProcess, fork } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { postgresSkipReason, startPostgres, type TestPostgres } from '../src/harness/postgres-cluster.ts'
import type { Target } from '../src/harness/target.ts'
import { generateWebhookSecret } from '../src/harness/webhook-receiver.ts'
import type { ExternalSetup } from './external.ts'
import { HostGuard, parseAllowHosts } from './host-guard.ts'
import {
  FLOW_KINDS,
  type FlowKind,
  type FromTarget,
  type FromWorker,
  STEPS,
  type TargetInfo,
  type TargetSpec,
  WALLET_MODES,
  type WalletMode,
  type WorkerJob,
  type WorkerResult,
} from './protocol.ts'
import { latency, r1, r2, readProcStat } from './stats.ts'
import { BenchUsageError } from './usage-error.ts'
import { sinkUrl } from './webhook-sink.ts'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '..')

export const BENCH_USAGE = `Usage: vc-harness bench [options]
       vc-harness bench --target external --profile FILE --allow-host HOST[,HOST...] [options]

Complete flows per second with concurrent simulated wallets, against our service and, in the same run,
the baselines; prints flows/s, latency per flow and step, errors by kind, CPU per flow (wallet and
server), peak memory and the ratios; writes reports/bench.json.

Flow kinds: full (login, attended issuance, verification, webhooks); issuance (attended: the wallet asks
first, gets 202, the administrator submits, the wallet downloads the deferred credential);
issuance-ready (the relying party submits right after its offer, before the wallet arrives, so the
credential request answers 200 at once: the peer's work; its submit step is timed); verification.

  --plan P          default: service, bare (full flows), service and peer (issuance-ready), service
                    (attended issuance), service and bare (verification), a 2-process service, and the
                    full Veramo wallet; or: service (only our service)
  --flow F          only this flow kind: full | issuance | issuance-ready | verification
                    (default: as the plan says)
  --wallet M        only this wallet mode: lean (undici + node:crypto) | full (Veramo/Sphereon)
  --wallets N       concurrent wallets of the lean runs (default 50)
  --full-wallets N  concurrent wallets of the full-wallet run (default 8)
  --workers LIST    service process counts to run (default 1,2)
  --duration S      measured seconds per run (default 10)
  --flows N         stop each run after N flows instead (0: no limit)
  --warmup S        unmeasured seconds before each run (default 3)
  --rounds N        repeat the plan N times; ratios use medians (default 1)
  --no-compare      skip the baselines (bare, peer)
  --no-postgres     skip the run on PostgreSQL (it runs when a PostgreSQL server can be started here:
                    Debian's postgresql, or VC_HARNESS_PG_BIN; a private cluster on 127.0.0.1)
  --cpu-prof DIR    write a V8 CPU profile of every server process to DIR (node --cpu-prof)
  --smoke           a few flows per run, no warm-up: proves the bench works (runs in npm test)
  --out FILE        JSON report (default reports/bench.json; smoke: reports/bench.smoke.json)

Load-testing your own deployment:
  --target T        local (default): the bench starts our service and the baselines on this machine;
                    external: drive a deployment's relying-party API and wallet-facing endpoints with
                    the lean wallets. No baselines, no ratios; server CPU, memory and SQL are unknown (-).
                    Runs every flow kind the deployment can serve (--flow picks one), each bounded by
                    --duration or --flows, with --wallets concurrent wallets
  --profile FILE    external: the conformance suite's profile (config/profile.example.json,
                    docs/targets.md); VC_HARNESS_* variables override its keys, as for the suite
  --allow-host H    external: the hosts the bench may send requests to (comma-separated or repeated):
                    every host of the profile's URLs must be named, else nothing runs (exit 2); a URL
                    the deployment hands out to another host is never requested and stops the run (exit 2)
  External set-up, with the profile's admin key: verification and full flows use templates.other when it
  is a Presentation Exchange verification template, through an application key created for the run and
  revoked at the end. The webhook step runs only when the profile lets the deployment reach the bench's
  sink (an operator key and receiver.public_url, as for the suite's webhooks capability): copies of the
  templates named vc-harness-bench-<template> send to it. Otherwise the output says it was skipped.

Exit code 1 when any flow failed; 2 on a usage error (also: a host not named with --allow-host).`

export interface BenchOptions {
  /** `local`: the bench starts the targets; `external`: a deployment of the profile, guarded by allowHosts. */
  target: 'local' | 'external'
  /** external: the profile file (else VC_HARNESS_PROFILE or VC_HARNESS_* variables alone). */
  profile?: string
  /** external: the hosts the bench may send requests to (--allow-host). */
  allowHosts: string[]
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
  /** Also run the service on PostgreSQL (issue 21). */
  postgres: boolean
  smoke: boolean
  cpuProf?: string
  out: string
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
      target: { type: 'string', default: 'local' },
      profile: { type: 'string' },
      'allow-host': { type: 'string', multiple: true },
      // No defaults where --target external refuses the option: given or not must be told apart.
      plan: { type: 'string' },
      flow: { type: 'string' },
      wallet: { type: 'string' },
      wallets: { type: 'string', default: '50' },
      'full-wallets': { type: 'string' },
      workers: { type: 'string' },
      duration: { type: 'string', default: '10' },
      flows: { type: 'string', default: '0' },
      warmup: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '1' },
      'no-compare': { type: 'boolean', default: false },
      'no-postgres': { type: 'boolean', default: false },
      smoke: { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  })
  if (values.help) return 'help'
  if (values.target !== 'local' && values.target !== 'external')
    throw new BenchUsageError('--target must be local or external')
  const external = values.target === 'external'
  if (external) {
    const refused = [
      ['plan', values.plan],
      ['workers', values.workers],
      ['full-wallets', values['full-wallets']],
      ['cpu-prof', values['cpu-prof']],
    ].filter(([, value]) => value !== undefined)
    if (refused.length > 0)
      throw new BenchUsageError(
        `--${refused.map(([name]) => name).join(', --')} do${refused.length > 1 ? '' : 'es'} not apply to --target external (the bench starts no server there)`,
      )
    if (values.wallet === 'full')
      throw new BenchUsageError('--target external drives the lean wallets only (--wallet lean)')
  } else {
    if (values.profile !== undefined)
      throw new BenchUsageError(
        '--profile describes an external deployment: add --target external (and --allow-host)',
      )
    if (values['allow-host'] !== undefined)
      throw new BenchUsageError('--allow-host applies to --target external only')
  }
  const allowHosts = parseAllowHosts(values['allow-host'] ?? [])
  const plan = values.plan ?? 'default'
  if (plan !== 'default' && plan !== 'service') throw new BenchUsageError('--plan must be default or service')
  if (values.flow !== undefined && !FLOW_KINDS.includes(values.flow as FlowKind))
    throw new BenchUsageError(`--flow must be one of ${FLOW_KINDS.join(', ')}`)
  if (values.wallet !== undefined && !WALLET_MODES.includes(values.wallet as WalletMode))
    throw new BenchUsageError(`--wallet must be one of ${WALLET_MODES.join(', ')}`)
  const workers = (values.workers ?? '1,2').split(',').map((w) => count('workers', w, 1))
  const durationSec = Number(values.duration)
  if (!(durationSec > 0)) throw new BenchUsageError('--duration must be a number of seconds > 0')
  const warmupSec = Number(values.warmup)
  if (!(warmupSec >= 0)) throw new BenchUsageError('--warmup must be a number of seconds ≥ 0')
  const smoke = values.smoke
  return {
    target: values.target as BenchOptions['target'],
    ...(values.profile !== undefined ? { profile: resolve(values.profile) } : {}),
    allowHosts,
    plan,
    ...(values.flow !== undefined ? { flow: values.flow as FlowKind } : {}),
    ...(values.wallet !== undefined ? { wallet: values.wallet as WalletMode } : {}),
    wallets: smoke ? 2 : count('wallets', values.wallets, 1),
    fullWallets: smoke ? 1 : count('full-wallets', values['full-wallets'] ?? '8', 1),
    workers,
    durationSec: smoke ? 60 : durationSec,
    flows: smoke ? 4 : count('flows', values.flows, 0),
    warmupSec: smoke ? 0 : warmupSec,
    rounds: smoke ? 1 : count('rounds', values.rounds, 1),
    compare: !values['no-compare'] && !external,
    postgres: !values['no-postgres'] && !external && postgresSkipReason() === false,
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

/**
 * The private PostgreSQL cluster of the PostgreSQL runs (src/harness/postgres-cluster.ts), started at the first
 * such run and stopped when the bench exits; each run gets a fresh database.
 */
let cluster: TestPostgres | undefined
let databases = 0
async function postgresDatabase() {
  cluster ??= await startPostgres()
  return { url: cluster.database(`bench_${++databases}`), serverPid: cluster.pid() }
}

export function planRuns(options: BenchOptions): PlannedRun[] {
  const service = (workers: number): TargetSpec => ({ kind: 'service', workers })
  const runs: PlannedRun[] = []
  const lean = (name: string, target: TargetSpec, flow: FlowKind) =>
    runs.push({ name, target, flow, mode: 'lean', wallets: options.wallets })
  const chosen = (run: PlannedRun) =>
    (options.flow === undefined || run.flow === options.flow) &&
    (options.wallet === undefined || run.mode === options.wallet)
  if (options.target === 'external') {
    // Every flow kind; those the deployment cannot serve are left out once its set-up is known.
    for (const flow of ['full', 'issuance-ready', 'issuance', 'verification'] as const)
      lean('external', { kind: 'external' }, flow)
    return runs.filter(chosen)
  }
  const [first = 1, ...more] = options.workers
  const svc = first > 1 ? `service ×${first}` : 'service'
  lean(svc, service(first), 'full')
  // The same service on PostgreSQL (issue 21), one instance, when a server can be started here.
  if (options.postgres)
    lean('service (PostgreSQL)', { kind: 'service', workers: 1, database: 'postgres' }, 'full')
  if (options.plan === 'default') {
    if (options.compare) lean('bare', { kind: 'bare' }, 'full')
    // Equal work with the peer: both issue at once (our relying party submitted before the wallet asked).
    lean(svc, service(first), 'issuance-ready')
    if (options.compare) lean('peer', { kind: 'peer' }, 'issuance-ready')
    // The attended flow (202, submission, deferred download) is our own; its ratio to the peer is informative.
    lean(svc, service(first), 'issuance')
    lean(svc, service(first), 'verification')
    if (options.compare) lean('bare', { kind: 'bare' }, 'verification')
    // Each half on PostgreSQL too (issue 38), so each half's ratio to SQLite is visible.
    if (options.postgres) {
      const onPostgres = { kind: 'service', workers: 1, database: 'postgres' } as const
      lean('service (PostgreSQL)', onPostgres, 'issuance')
      lean('service (PostgreSQL)', onPostgres, 'verification')
    }
    for (const workers of more) lean(`service ×${workers}`, service(workers), 'full')
    // Two instances on one PostgreSQL database, each wallet on one of them (issue 21).
    if (options.postgres)
      lean(
        'service ×2 (PostgreSQL)',
        { kind: 'service', workers: 1, database: 'postgres', instances: 2 },
        'full',
      )
    runs.push({ name: svc, target: service(first), flow: 'full', mode: 'full', wallets: options.fullWallets })
  }
  return runs.filter(chosen)
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
  /** `server` null: an external deployment, whose processes the bench cannot see (also in cores and peakRssMb). */
  /** `database`: the part of `server` spent by the database server's processes (PostgreSQL runs only). */
  cpuMsPerFlow: { wallet: number; server: number | null; database?: number }
  /**
   * Cores used during the measured run: wallet process, server processes, everything else (for an
   * external deployment on this machine, `other` includes it).
   */
  cores: { wallet: number; server: number | null; other: number | null }
  walletEventLoopBusy: number
  /**
   * The server's event loop, where one process serves (ours on one worker, bare, peer): milliseconds it was
   * busy per completed flow, and its busy share of the run (performance.eventLoopUtilization: wall time out of
   * the poll phase, so a loop waiting for a core counts). A loop busy ~100 % of the time is what limits
   * flows/s; the CPU of the thread pool, the JIT and GC threads beside it is in cpuMsPerFlow. Null for a
   * cluster, several instances and an external deployment.
   */
  serverLoop: { msPerFlow: number; busy: number } | null
  peakRssMb: { wallet: number; server: number | null }
  /**
   * SQL statements the service ran during the measured run per completed flow (webhook deliveries and
   * any flow still under way at either end included); null where the store is out of sight (cluster, baselines).
   */
  sqlStatementsPerFlow: number | null
  webhooks: boolean
  /** External only: hosts the deployment sent the wallets to that --allow-host does not name (the run stopped). */
  refusedHosts?: { host: string; url: string }[]
}

/** What the runs of `--target external` share: the deployment's set-up, the webhook secret, the sink's address. */
export interface ExternalContext {
  setup: ExternalSetup
  webhookSecret: string
  /** Where the worker's webhook sink listens and is reached (the profile's receiver), when the step is on. */
  sinkAt?: { host: string; port: number; publicUrl?: string }
  allowHosts: string[]
}

const tsxLoader = () => import.meta.resolve('tsx')

// Servers run as a deployment runs them: NODE_ENV=production turns off the service's development checks
// (the transaction guard, store/transaction-guard.ts); the baselines have none to turn off.
function child(file: string, profileDir?: string, args: string[] = []): ChildProcess {
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
  return fork(join(HERE, file), args, {
    execArgv: ['--import', tsxLoader(), ...profile],
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  })
}

/** Waits for a child to exit (a fixed sink port must be free for the next run); kills it after `ms`. */
async function exited(proc: ChildProcess, ms = 10_000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  await new Promise<void>((resolvePromise) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), ms)
    proc.once('exit', () => {
      clearTimeout(timer)
      resolvePromise()
    })
  })
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

async function runOne(
  run: PlannedRun,
  options: BenchOptions,
  round: number,
  external?: ExternalContext,
): Promise<RunSummary> {
  const label = `${run.name} · ${run.flow} · ${run.mode} wallet ×${run.wallets}`
  // Both processes load their modules at once (~1 s each); the target is told what to start once the
  // worker's webhook sink is known. Nothing is measured before both are up. An external deployment has
  // no target process: its server figures are unknown.
  const worker = child('worker.ts', undefined, external?.sinkAt ? [JSON.stringify(external.sinkAt)] : [])
  const target: ChildProcess | undefined = external ? undefined : child('target-host.ts', options.cpuProf)
  try {
    const { url: sinkUrl } = await next<Extract<FromWorker, { kind: 'sink' }>>(worker, 'sink')
    let info: TargetInfo
    let webhookSecret: string
    if (target) {
      webhookSecret = generateWebhookSecret()
      const spec: TargetSpec =
        run.target.kind === 'service'
          ? {
              ...run.target,
              webhook: { url: sinkUrl, secret: webhookSecret },
              ...(run.target.database === 'postgres' ? { database: await postgresDatabase() } : {}),
            }
          : run.target
      target.send({ kind: 'start', spec })
      ;({ info } = await next<Extract<FromTarget, { kind: 'started' }>>(target, 'started'))
    } else if (external) {
      info = external.setup.info
      webhookSecret = external.webhookSecret
    } else throw new Error('a run needs a target host or an external deployment')
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
      ...(external ? { allowHosts: external.allowHosts } : {}),
    }
    let startUsage: Awaited<ReturnType<typeof usage>> | undefined
    let machineStart: ReturnType<typeof readProcStat> = null
    let lastFlows = 0
    let lastAt = Date.now()
    const measured = new Promise<void>((ok) => {
      worker.on('message', (message: FromWorker) => {
        if (message.kind === 'measuring') {
          machineStart = readProcStat()
          if (!target) ok()
          else
            void usage(target).then((u) => {
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
    const endUsage = target ? await usage(target) : undefined
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K')
    const serverCpuSec = endUsage ? (endUsage.cpuUs - (startUsage?.cpuUs ?? 0)) / 1e6 : null
    const walletCpuSec = result.cpuUs / 1e6
    const wall = result.wallSec || 1
    const flows = result.flows || 1
    const start = machineStart as ReturnType<typeof readProcStat>
    const loopMs =
      endUsage?.loopActiveMs !== undefined && startUsage?.loopActiveMs !== undefined
        ? endUsage.loopActiveMs - startUsage.loopActiveMs
        : null
    const other =
      start && machineEnd
        ? r2(Math.max(0, machineEnd.busy - start.busy - (serverCpuSec ?? 0) - walletCpuSec) / wall)
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
      cpuMsPerFlow: {
        wallet: r2((walletCpuSec * 1000) / flows),
        server: serverCpuSec === null ? null : r2((serverCpuSec * 1000) / flows),
        ...(endUsage?.databaseCpuUs !== undefined && startUsage?.databaseCpuUs !== undefined
          ? { database: r2((endUsage.databaseCpuUs - startUsage.databaseCpuUs) / 1000 / flows) }
          : {}),
      },
      cores: {
        wallet: r2(walletCpuSec / wall),
        server: serverCpuSec === null ? null : r2(serverCpuSec / wall),
        other,
      },
      walletEventLoopBusy: r2(result.eventLoopBusy),
      serverLoop: loopMs === null ? null : { msPerFlow: r2(loopMs / flows), busy: r2(loopMs / 1000 / wall) },
      peakRssMb: { wallet: result.peakRssMb, server: endUsage ? endUsage.peakRssMb : null },
      sqlStatementsPerFlow:
        endUsage?.statements !== undefined && startUsage?.statements !== undefined && result.flows > 0
          ? r1((endUsage.statements - startUsage.statements) / result.flows)
          : null,
      webhooks: info.webhooks && run.flow === 'full',
      ...(result.refusedHosts ? { refusedHosts: result.refusedHosts } : {}),
    }
  } finally {
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K')
    if (target?.connected) {
      target.send({ kind: 'stop' })
      await new Promise((ok) => target.once('exit', ok))
    }
    if (worker.connected) worker.disconnect()
    await exited(worker)
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
  /** `flow` of a, against `against` of b (default the same flow). */
  const pair = (
    what: string,
    a: (n: string) => boolean,
    b: (n: string) => boolean,
    flow: FlowKind,
    goal: string,
    against: FlowKind = flow,
  ) => {
    const values = rounds.flatMap((round) => {
      const x = find(round, a, flow)
      const y = find(round, b, against)
      return x && y && y.flowsPerSec > 0 && x.errors === 0 && y.errors === 0
        ? [x.flowsPerSec / y.flowsPerSec]
        : []
    })
    return values.length
      ? [
          {
            what,
            flow,
            ...(against !== flow ? { against } : {}),
            ratio: r2(median(values)),
            goal,
            rounds: values.map(r2),
          },
        ]
      : []
  }
  const service = (n: string) => n === 'service'
  const peer = (n: string) => n === 'peer'
  return [
    // Issue 20's goals: every check, durable commits, status list and both webhooks against signature checks only.
    ...pair('service / bare', service, (n) => n === 'bare', 'full', '≥ 0.5'),
    ...pair('service / bare', service, (n) => n === 'bare', 'verification', '≥ 0.35'),
    // Equal work: both issue at once, our relying party having submitted before the wallet asked.
    ...pair('service / peer', service, peer, 'issuance-ready', '≥ 1.0'),
    // Our attended flow (two more round trips and the administrator's submission) against the same peer run.
    ...pair(
      'service / peer',
      service,
      peer,
      'issuance',
      'informative (attended vs at once)',
      'issuance-ready',
    ),
    // The same single instance on PostgreSQL (its server's CPU counted with the service's).
    ...(['full', 'issuance', 'verification'] as const).flatMap((flow) =>
      pair(
        'service (PostgreSQL) / service',
        (n) => n === 'service (PostgreSQL)',
        service,
        flow,
        flow === 'full' ? '≥ 0.5 (issue 38)' : 'informative (issue 38)',
      ),
    ),
    ...pair(
      'service ×2 (PostgreSQL) / service (PostgreSQL)',
      (n) => n === 'service ×2 (PostgreSQL)',
      (n) => n === 'service (PostgreSQL)',
      'full',
      'informative (2 instances share 2 cores with the wallets and the database)',
    ),
    ...pair(
      'service ×2 / service',
      (n) => n === 'service ×2',
      service,
      'full',
      'informative (2 workers share 2 cores with the wallets)',
    ),
  ]
}

const dash = (value: number | null) => (value === null ? '-' : value)

function print(summaries: RunSummary[], ratioRows: ReturnType<typeof ratios>, smoke: boolean) {
  const pad = (s: string | number, n: number) => String(s).padStart(n)
  console.log(
    `\n${'run'.padEnd(34)}${pad('flows', 7)}${pad('flows/s', 9)}${pad('p50', 8)}${pad('p95', 8)}${pad('p99', 8)}  ${'CPU ms/flow w/s'.padStart(16)}  ${'cores w/s/other'.padStart(16)}  ${'peak MB w/s'.padStart(12)}${pad('SQL/flow', 9)}${pad('errors', 8)}`,
  )
  for (const s of summaries) {
    const name = `${s.name} · ${s.flow} · ${s.wallet} ×${s.wallets}${s.round > 1 ? ` #${s.round}` : ''}`
    console.log(
      `${name.padEnd(34)}${pad(s.flows, 7)}${pad(s.flowsPerSec, 9)}${pad(s.flowMs.p50, 8)}${pad(s.flowMs.p95, 8)}${pad(s.flowMs.p99, 8)}  ${`${s.cpuMsPerFlow.wallet} / ${dash(s.cpuMsPerFlow.server)}`.padStart(16)}  ${`${s.cores.wallet}/${dash(s.cores.server)}/${s.cores.other ?? '?'}`.padStart(16)}  ${`${s.peakRssMb.wallet}/${dash(s.peakRssMb.server)}`.padStart(12)}${pad(dash(s.sqlStatementsPerFlow), 9)}${pad(s.errors, 8)}`,
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
  // A smoke run's few flows say nothing about speed: its ratios are printed without goals (issue 32).
  if (ratioRows.length) {
    console.log(`\nratios (flows/s, same run${smoke ? '; smoke: not comparable with the goals' : ''}):`)
    for (const r of ratioRows)
      console.log(
        `  ${r.what} (${'against' in r ? `${r.flow} / ${r.against}` : r.flow}): ${r.ratio}${smoke ? '' : `  goal ${r.goal}`}${r.rounds.length > 1 ? `  rounds ${r.rounds.join(', ')}` : ''}`,
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

const machineInfo = () => ({
  cores: cpus().length,
  cpu: cpus()[0]?.model ?? 'unknown',
  memoryGb: r1(totalmem() / 2 ** 30),
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
})

function header(options: BenchOptions, runs: number, machine: ReturnType<typeof machineInfo>): string {
  const n = runs * options.rounds
  return `${n} run${n === 1 ? '' : 's'} on ${machine.cores} cores (${machine.cpu}), Node ${machine.node}; ${
    options.flows > 0 ? `${options.flows} flows` : `${options.durationSec} s`
  } per run after ${options.warmupSec} s warm-up${options.smoke ? ' (smoke: figures meaningless)' : ''}`
}

function runLine(s: RunSummary): string {
  return `  ${s.name} · ${s.flow} · ${s.wallet} ×${s.wallets}: ${s.flowsPerSec} flows/s, p50 ${s.flowMs.p50} ms, CPU ms/flow wallet ${s.cpuMsPerFlow.wallet} server ${dash(s.cpuMsPerFlow.server)}${s.cpuMsPerFlow.database !== undefined ? ` (database ${s.cpuMsPerFlow.database})` : ''}${s.serverLoop ? ` (event loop ${s.serverLoop.msPerFlow} ms/flow, busy ${Math.round(s.serverLoop.busy * 100)} %)` : ''}${s.sqlStatementsPerFlow !== null ? `, SQL statements/flow ${s.sqlStatementsPerFlow}` : ''}, errors ${s.errors}`
}

/** Prints the tables, writes the JSON report; 1 when a run had failed flows or none. */
function finish(
  options: BenchOptions,
  machine: ReturnType<typeof machineInfo>,
  summaries: RunSummary[],
  extra: Record<string, unknown> = {},
): number {
  const ratioRows = ratios(summaries)
  print(summaries, ratioRows, options.smoke)
  mkdirSync(dirname(options.out), { recursive: true })
  const { out: _out, ...settings } = options
  writeFileSync(
    options.out,
    `${JSON.stringify({ date: new Date().toISOString(), machine, settings, ...extra, runs: summaries, ratios: ratioRows }, null, 2)}\n`,
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

export async function runBench(options: BenchOptions): Promise<number> {
  if (options.target === 'external') return runExternal(options)
  let runs = planRuns(options)
  if (runs.some((run) => run.target.kind === 'peer') && !peerInstalled()) {
    console.log(
      'vc-harness bench: @sphereon/oid4vci-issuer-server is not installed (an installed package has no devDependencies): running without the peer baseline',
    )
    runs = runs.filter((run) => run.target.kind !== 'peer')
  }
  if (runs.length === 0) throw new BenchUsageError('--flow/--wallet leave nothing to run')
  const machine = machineInfo()
  console.log(`vc-harness bench: ${header(options, runs.length, machine)}`)
  const summaries: RunSummary[] = []
  for (let round = 1; round <= options.rounds; round++) {
    for (const run of runs) {
      const summary = await runOne(run, options, round)
      summaries.push(summary)
      console.log(runLine(summary))
    }
  }
  return finish(options, machine, summaries)
}

/** A URL as printed and reported: without user and password (a profile's URL may carry them). */
function shownUrl(url: string): string {
  const parsed = new URL(url)
  parsed.username = ''
  parsed.password = ''
  return parsed.href.replace(/\/$/, '')
}

/**
 * `--target external`: resolve the profile, check its hosts against --allow-host before anything is sent,
 * set the deployment up (bench/external.ts), run the flow kinds it can serve, clean up.
 */
async function runExternal(options: BenchOptions): Promise<number> {
  const { checkProfileHosts, prepareExternal, refusedHostsMessage, resolveExternalTarget } = await import(
    './external.ts'
  )
  const target: Target = resolveExternalTarget(options.profile)
  checkProfileHosts(target.urls, options.allowHosts)
  const runs = planRuns(options)
  if (runs.length === 0) throw new BenchUsageError('--flow/--wallet leave nothing to run')
  const machine = machineInfo()
  const guard = new HostGuard(options.allowHosts)
  const webhookSecret = generateWebhookSecret()
  const { receiver } = target
  const deployment = shownUrl(target.urls.authUrl)
  console.log(
    `vc-harness bench: external deployment ${deployment} (tenant ${target.tenant.tenant}), requests only to ${options.allowHosts.join(', ')}; ${header(options, runs.length, machine)}`,
  )
  console.log(
    '  no baselines in this mode: the deployment is measured alone (no bare or peer run, no ratios); its CPU, memory and SQL statements are unknown to the bench (-)',
  )
  const setup = await prepareExternal(target, guard, {
    flows: runs.map((run) => run.flow),
    ...(receiver.publicUrl ? { webhook: { url: sinkUrl(receiver.publicUrl), secret: webhookSecret } } : {}),
  })
  let cleaned: Promise<string[]> | undefined
  const cleanup = () => {
    cleaned ??= setup.cleanup().then((lines) => {
      for (const line of lines) console.log(`  clean-up: ${line}`)
      return lines
    })
    return cleaned
  }
  // Ctrl-C: the keys the set-up created are revoked before the bench exits.
  const onSignal = () => void cleanup().finally(() => process.exit(130))
  process.once('SIGINT', onSignal)
  const summaries: RunSummary[] = []
  let refused: RunSummary['refusedHosts']
  try {
    for (const note of setup.notes) console.log(`  ${note}`)
    const runnable = runs.filter((run) => setup.info.kinds.includes(run.flow))
    for (const run of runs.filter((r) => !runnable.includes(r)))
      console.log(`  not run: ${run.flow} (the deployment cannot serve it, see above)`)
    if (runnable.length === 0)
      throw new BenchUsageError(`--flow ${options.flow}: the deployment cannot run it (see above)`)
    const context: ExternalContext = {
      setup,
      webhookSecret,
      allowHosts: options.allowHosts,
      ...(setup.info.webhooks && receiver.publicUrl
        ? { sinkAt: { host: receiver.host, port: receiver.port, publicUrl: receiver.publicUrl } }
        : {}),
    }
    plan: for (let round = 1; round <= options.rounds; round++) {
      for (const run of runnable) {
        const summary = await runOne(run, options, round, context).catch((error: Error) => {
          // The deployment refused what a run needs (e.g. a login): its message, exit 1, after the clean-up.
          throw Object.assign(new Error(`${run.name} · ${run.flow}: ${error.message}`), {
            name: 'UserError',
            exitCode: 1,
          })
        })
        if (summary.refusedHosts) {
          refused = summary.refusedHosts
          break plan
        }
        summaries.push(summary)
        console.log(runLine(summary))
      }
    }
  } finally {
    process.off('SIGINT', onSignal)
    await cleanup()
  }
  if (refused) throw new BenchUsageError(refusedHostsMessage(refused))
  const code = finish(options, machine, summaries, {
    target: {
      kind: 'external',
      urls: {
        authUrl: deployment,
        issuerUrl: shownUrl(target.urls.issuerUrl),
        verifierUrl: shownUrl(target.urls.verifierUrl),
      },
      tenant: target.tenant.tenant,
      kinds: setup.info.kinds,
      webhooks: setup.info.webhooks,
      notes: setup.notes,
    },
  })
  for (const note of setup.notes.filter((n) => n.startsWith('webhook step'))) console.log(note)
  return code
}

export async function bench(argv: string[]): Promise<number> {
  const options = parseBenchArgs(argv)
  if (options === 'help') {
    console.log(BENCH_USAGE)
    return 0
  }
  return runBench(options)
}
