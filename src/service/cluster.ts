import cluster, { type Worker } from 'node:cluster'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import type { ServiceConfig } from './config/index.ts'
import { DataKeyring, localDataKeys } from './crypto/data-key.ts'
import { loadServiceKey } from './crypto/keys.ts'
import type { ServiceEvent } from './events.ts'
import { seedFromConfig } from './portal/seed.ts'
import { stdoutRequestLog } from './request-log.ts'
import { type RunningServer, startServer } from './server.ts'
import { openSqliteStore } from './store/sqlite.ts'
import type { TlsCredentials } from './tls.ts'
import { systemClock } from './util/clock.ts'

// Several service processes (node:cluster workers) behind one listening port, on one SQLite database.
// docs/scaling.md describes what is shared and how. The primary (the caller of startCluster) prepares the
// database once (migrations, configuration seed, service key) before any worker starts, forks the workers,
// relays state-change events between them (SSE streams and local subscribers see every worker's changes),
// and restarts a worker that dies. Workers serve HTTP; the primary serves nothing itself.

/** How often each worker scans the webhook outbox for events enqueued by the others (ms). */
export const DEFAULT_WEBHOOK_POLL_MS = 1_000
/** The sanity bound of --workers: more processes than this per core only add contention. */
const WORKERS_PER_CORE = 4
/** How long a worker may take to boot (tsx compile, migrations check, seed) before start fails. */
const START_TIMEOUT_MS = 60_000
/** How long close() waits for a worker to drain before killing it. */
const CLOSE_TIMEOUT_MS = 10_000
const CPU_TIMEOUT_MS = 5_000
/** A worker that dies sooner than this after starting is not restarted (it would crash-loop). */
const MIN_UPTIME_FOR_RESTART_MS = 5_000
const WORKER_ENV = 'VC_HARNESS_CLUSTER_WORKER'

export interface ClusterOptions {
  /** What startServer takes; every worker gets the same (sent over IPC, so secrets touch no file). */
  config: ServiceConfig
  workers: number
  host: string
  port: number
  /** Folder of the shared SQLite database; ':memory:' is refused (each process would have its own). */
  dataDir: string
  /** Base URL wallets reach; overrides config.publicUrl like `serve --public-url`. */
  publicUrl?: string
  logLevel?: string
  /** Every worker writes one concise line per request to its stdout (`vc-harness serve` by default). */
  requestLog?: boolean
  /** Outbox scan interval of every worker's webhook dispatcher; default DEFAULT_WEBHOOK_POLL_MS. */
  webhookPollMs?: number
  /**
   * The data key sealing private keys and webhook secrets (docs/security.md). Workers get it over IPC like
   * the configuration: not through a file, nor their environment (which a worker's own children would
   * inherit). Default: `<dataDir>/data.key`, generated when missing (openSqliteStore's default).
   */
  dataKeys?: DataKeyring
  /**
   * Every worker listens with HTTPS (`serve --tls-cert/--tls-key --workers N`): the PEM texts go over IPC like
   * the data key, read once by the primary, so a worker never reads a file the primary checked.
   */
  tls?: TlsCredentials
  /** Called when a worker died unexpectedly (and whether it was replaced); default: a line on stderr. */
  onWorkerExit?: (info: {
    pid: number
    code: number | null
    signal: string | null
    restarted: boolean
  }) => void
}

export interface WorkerStats {
  pid: number
  /** HTTP requests this worker has received since it started. */
  requests: number
  /** process.cpuUsage() of the worker (µs). */
  cpu: { user: number; system: number }
}

export interface RunningCluster {
  url: string
  /** The base URL wallets are sent to (RunningServer.publicUrl of the workers). */
  publicUrl: string
  workers: number
  /** The live workers' pids (a restarted worker has a new one). */
  readonly pids: number[]
  /** CPU time summed over the workers (µs), asked over IPC. The primary's own share is process.cpuUsage(). */
  cpuUsage(): Promise<{ user: number; system: number }>
  /** Per-worker request counts and CPU: which process served what (tests, benchmarks). */
  stats(): Promise<WorkerStats[]>
  /** Drains every worker (in-flight requests finish) and waits for them to exit; kills laggards. */
  close(): Promise<void>
}

// IPC messages, tagged so they never mix with anything else on the channel.
interface WorkerStart {
  config: ServiceConfig
  host: string
  port: number
  dataDir: string
  logLevel?: string
  requestLog?: boolean
  webhookPollMs: number
  /** DataKeyring.export(): the keys as text, parsed again by the worker. */
  dataKeys: string
  tls?: TlsCredentials
}
type ToWorker =
  | { vcHarness: 'start'; options: WorkerStart }
  | { vcHarness: 'stats'; id: number }
  | { vcHarness: 'event'; event: ServiceEvent }
  | { vcHarness: 'close' }
type FromWorker =
  | { vcHarness: 'hello' }
  | { vcHarness: 'ready'; url: string; publicUrl: string }
  | { vcHarness: 'failed'; message: string; code?: string }
  | { vcHarness: 'stats'; id: number; stats: WorkerStats }
  | { vcHarness: 'event'; event: ServiceEvent }

const isMessage = (m: unknown): m is { vcHarness: string } =>
  typeof m === 'object' && m !== null && typeof (m as { vcHarness?: unknown }).vcHarness === 'string'

/** The most workers accepted: available cores × 4. */
export function maxWorkers(): number {
  return availableParallelism() * WORKERS_PER_CORE
}

/** Throws a RangeError naming the bound when `workers` is not a whole number in 1..maxWorkers(). */
export function checkWorkerCount(workers: number): void {
  const max = maxWorkers()
  if (!Number.isInteger(workers) || workers < 1 || workers > max) {
    throw new RangeError(
      `workers: expected a whole number from 1 to ${max} (${availableParallelism()} cores × ${WORKERS_PER_CORE}), got ${workers}`,
    )
  }
}

/**
 * Everything that writes at boot and must happen once, not racing between workers: schema migrations
 * (Kysely's SQLite migrator has no cross-process lock), the configuration seed, and the service key
 * (access-token signing key; its HKDF-derived secrets sign pre-authorized codes, tx_codes and list cursors).
 * Workers then find it all in place: their own boot re-applies the seed idempotently and loads the same key.
 */
export async function prepareDatabase(
  config: ServiceConfig,
  dataDir: string,
  dataKeys?: DataKeyring,
): Promise<void> {
  // Also seals the stored secrets under the current data key once, before any worker reads them.
  const store = await openSqliteStore(dataDir, dataKeys ? { dataKeys } : {})
  try {
    await seedFromConfig(store, config, systemClock)
    await loadServiceKey(store, systemClock)
  } finally {
    await store.close()
  }
}

/**
 * The workers' node flags: the parent's, minus those that must not be repeated (test runner, inspector
 * ports), plus tsx when the parent loaded it through its API (bin/vc-harness.mjs) rather than `--import`.
 */
function workerExecArgv(): string[] {
  const argv: string[] = []
  for (let i = 0; i < process.execArgv.length; i++) {
    const arg = process.execArgv[i] as string
    if (arg.startsWith('--test') || arg.startsWith('--inspect') || arg === '--watch') {
      // `--test-name-pattern x` gives its value as the next argument: drop that too.
      const next = process.execArgv[i + 1]
      if (!arg.includes('=') && next !== undefined && !next.startsWith('-')) i++
      continue
    }
    argv.push(arg)
  }
  if (!argv.some((arg) => arg.includes('tsx'))) {
    let tsx = 'tsx'
    try {
      // Absolute, so the workers find tsx whatever their working directory.
      tsx = import.meta.resolve('tsx')
    } catch {}
    argv.push('--import', tsx)
  }
  return argv
}

interface Live {
  worker: Worker
  pid: number
  startedAt: number
}

export async function startCluster(options: ClusterOptions): Promise<RunningCluster> {
  if (!cluster.isPrimary) throw new Error('startCluster: must be called from the primary process')
  checkWorkerCount(options.workers)
  if (options.dataDir === ':memory:') {
    throw new Error('workers: an in-memory database cannot be shared between processes; use --data DIR')
  }
  const config =
    options.publicUrl === undefined ? options.config : { ...options.config, publicUrl: options.publicUrl }
  // One key for all: resolved here, so workers never race to generate one.
  const dataKeys = options.dataKeys ?? localDataKeys(options.dataDir).keyring
  await prepareDatabase(config, options.dataDir, dataKeys)

  cluster.setupPrimary({
    exec: fileURLToPath(import.meta.url),
    execArgv: workerExecArgv(),
    args: [],
  })
  const start: WorkerStart = {
    config,
    host: options.host,
    port: options.port,
    dataDir: options.dataDir,
    webhookPollMs: options.webhookPollMs ?? DEFAULT_WEBHOOK_POLL_MS,
    dataKeys: dataKeys.export(),
    ...(options.logLevel !== undefined ? { logLevel: options.logLevel } : {}),
    ...(options.requestLog ? { requestLog: true } : {}),
    ...(options.tls ? { tls: options.tls } : {}),
  }
  let publicUrl = ''
  const live = new Map<number, Live>()
  // This cluster's workers, live or starting (cluster.workers would include other clusters of the process).
  const mine = new Set<Worker>()
  let closing = false
  let statsSeq = 0
  const statsWaiters = new Map<number, (stats: WorkerStats) => void>()
  const onWorkerExit =
    options.onWorkerExit ??
    ((info) =>
      console.error(
        `vc-harness: worker ${info.pid} exited (${info.signal ?? `code ${info.code}`})${info.restarted ? ', restarted' : ''}`,
      ))

  /** Forks one worker and resolves with its URL once it listens. */
  const fork = (): Promise<string> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork({ [WORKER_ENV]: '1' })
      mine.add(worker)
      const entry: Live = { worker, pid: worker.process.pid ?? 0, startedAt: Date.now() }
      let ready = false
      const timer = setTimeout(() => {
        reject(new Error(`worker ${entry.pid} did not start within ${START_TIMEOUT_MS / 1000} s`))
        worker.kill('SIGKILL')
      }, START_TIMEOUT_MS)
      worker.on('message', (message: unknown) => {
        if (!isMessage(message)) return
        const m = message as FromWorker
        switch (m.vcHarness) {
          case 'hello':
            worker.send({ vcHarness: 'start', options: start } satisfies ToWorker)
            break
          case 'ready':
            ready = true
            clearTimeout(timer)
            live.set(worker.id, entry)
            publicUrl ||= m.publicUrl
            resolve(m.url)
            break
          case 'failed':
            clearTimeout(timer)
            // The worker's error code travels too: the CLI tells a port in use from a crash.
            reject(
              Object.assign(new Error(`worker ${entry.pid} failed to start: ${m.message}`), {
                ...(m.code !== undefined ? { code: m.code } : {}),
              }),
            )
            break
          case 'stats':
            statsWaiters.get(m.id)?.(m.stats)
            break
          case 'event':
            // Every other worker re-emits it locally: SSE streams and subscribers see changes made anywhere.
            for (const other of live.values()) {
              if (other.worker !== worker && other.worker.isConnected()) {
                other.worker.send({ vcHarness: 'event', event: m.event } satisfies ToWorker)
              }
            }
            break
        }
      })
      worker.on('exit', (code, signal) => {
        clearTimeout(timer)
        live.delete(worker.id)
        mine.delete(worker)
        if (!ready) {
          reject(new Error(`worker ${entry.pid} exited while starting (${signal ?? `code ${code}`})`))
          return
        }
        if (closing) return
        // A worker that crashed after running a while is replaced; one that dies at once would crash-loop.
        const restart = Date.now() - entry.startedAt >= MIN_UPTIME_FOR_RESTART_MS
        onWorkerExit({ pid: entry.pid, code, signal, restarted: restart })
        if (restart) {
          fork().catch((error: unknown) =>
            console.error(`vc-harness: could not restart a worker: ${(error as Error).message}`),
          )
        }
      })
    })

  const stopAll = async () => {
    closing = true
    const exits = [...mine].map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.isDead()) return resolve()
          const kill = setTimeout(() => worker.kill('SIGKILL'), CLOSE_TIMEOUT_MS)
          worker.once('exit', () => {
            clearTimeout(kill)
            resolve()
          })
          if (worker.isConnected()) worker.send({ vcHarness: 'close' } satisfies ToWorker)
          else worker.kill('SIGTERM')
        }),
    )
    await Promise.all(exits)
  }

  // Every worker asks for the same address and port: the primary binds it once and shares the handle
  // (with port 0 too: the handle is keyed by the requested port, so all get the same free port). They
  // boot in parallel: their boot writes (the idempotent seed) are serialised by BEGIN IMMEDIATE.
  let url: string
  try {
    const urls = await Promise.all(Array.from({ length: options.workers }, () => fork()))
    url = urls[0] as string
    const stray = urls.find((u) => u !== url)
    if (stray) throw new Error(`workers listen on different addresses: ${url} and ${stray}`)
  } catch (error) {
    await stopAll()
    throw error
  }

  const stats = async (): Promise<WorkerStats[]> =>
    Promise.all(
      [...live.values()].map(
        ({ worker, pid }) =>
          new Promise<WorkerStats>((resolve, reject) => {
            const id = ++statsSeq
            const timer = setTimeout(() => {
              statsWaiters.delete(id)
              reject(new Error(`worker ${pid} did not answer a stats request`))
            }, CPU_TIMEOUT_MS)
            statsWaiters.set(id, (s) => {
              clearTimeout(timer)
              statsWaiters.delete(id)
              resolve(s)
            })
            worker.send({ vcHarness: 'stats', id } satisfies ToWorker)
          }),
      ),
    )

  let closed: Promise<void> | undefined
  return {
    url,
    publicUrl,
    workers: options.workers,
    get pids() {
      return [...live.values()].map((l) => l.pid)
    },
    stats,
    async cpuUsage() {
      const all = await stats()
      return all.reduce((sum, s) => ({ user: sum.user + s.cpu.user, system: sum.system + s.cpu.system }), {
        user: 0,
        system: 0,
      })
    },
    close() {
      closed ??= stopAll()
      return closed
    },
  }
}

// --- worker side ------------------------------------------------------------------------------------------

function runWorker() {
  const send = (message: FromWorker) => process.send?.(message)
  let server: RunningServer | undefined
  let requests = 0
  // Set while a relayed event is re-emitted, so it is not sent back to the primary.
  let relaying = false
  let closing: Promise<void> | undefined
  const close = () => {
    closing ??= (server ? server.close() : Promise.resolve()).then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('vc-harness worker: error while closing:', error)
        process.exit(1)
      },
    )
    return closing
  }

  process.on('message', (message: unknown) => {
    if (!isMessage(message)) return
    const m = message as ToWorker
    switch (m.vcHarness) {
      case 'start':
        startServer({
          config: m.options.config,
          host: m.options.host,
          port: m.options.port,
          dataDir: m.options.dataDir,
          webhookPollMs: m.options.webhookPollMs,
          sharedStore: true,
          // Exported by the primary from keys it parsed: parsing them again cannot fail.
          dataKeys: DataKeyring.parse(m.options.dataKeys, 'the data keys from the cluster primary'),
          ...(m.options.logLevel !== undefined ? { logLevel: m.options.logLevel } : {}),
          ...(m.options.requestLog ? { requestLog: stdoutRequestLog } : {}),
          ...(m.options.tls ? { tls: m.options.tls } : {}),
        }).then(
          (running) => {
            server = running
            running.app.server.on('request', () => requests++)
            running.app.services.events.on((event) => {
              if (!relaying) send({ vcHarness: 'event', event })
            })
            send({ vcHarness: 'ready', url: running.url, publicUrl: running.publicUrl })
          },
          (error: unknown) => {
            const { code } = error as { code?: unknown }
            send({
              vcHarness: 'failed',
              message: (error as Error).stack ?? String(error),
              ...(typeof code === 'string' ? { code } : {}),
            })
            process.exit(1)
          },
        )
        break
      case 'event':
        relaying = true
        try {
          server?.app.services.events.emit(m.event)
        } finally {
          relaying = false
        }
        break
      case 'stats':
        send({
          vcHarness: 'stats',
          id: m.id,
          stats: { pid: process.pid, requests, cpu: process.cpuUsage() },
        })
        break
      case 'close':
        void close()
        break
    }
  })
  // Ctrl-C reaches the whole process group: the primary orchestrates the shutdown, so a worker waits for
  // its 'close'. SIGTERM sent to one worker drains that worker (the primary replaces it).
  process.on('SIGINT', () => {})
  process.on('SIGTERM', () => void close())
  send({ vcHarness: 'hello' })
}

if (cluster.isWorker && process.env[WORKER_ENV] === '1') runWorker()
