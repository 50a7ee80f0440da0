import type { RetentionOptions } from './config/schema.ts'
import { noPurgeCounts, type PurgeCounts, type Store } from './store/index.ts'
import type { Clock } from './util/clock.ts'

// The background purge of the retention policy (config `retention`; docs/security.md, "Retention"): once
// shortly after start, then every purgeIntervalSeconds, each run deleting in bounded batches of their own
// transactions (store/retention.ts says what goes, table by table).

/** Records per transaction: a backlog is purged in many short write transactions, never one long one. */
export const PURGE_BATCH = 500
/** The first run comes this long after start, plus up to as much again (jitter): after the start-up burst. */
const FIRST_RUN_MS = 60_000
/** Each interval is stretched or shrunk by up to this fraction, so processes sharing a database drift apart. */
const INTERVAL_JITTER = 0.1

/** The logger's calls the purge makes (Fastify's `app.log` has them). */
export interface RetentionLog {
  info(details: object, message: string): void
  error(details: object, message: string): void
}

export interface RetentionDeps {
  store: Store
  clock: Clock
  options: RetentionOptions
  log?: RetentionLog
  random?: () => number
  /** Default PURGE_BATCH. */
  batchSize?: number
}

/** What one run did. */
export interface PurgeReport {
  /** The clock's time the run judged ages against. */
  at: number
  counts: PurgeCounts
  /** Transactions it took (the last one answered less than a full batch). */
  batches: number
  durationMs: number
}

/** Records of every kind together. */
export const purged = (counts: PurgeCounts) => Object.values(counts).reduce((sum, n) => sum + n, 0)

export class RetentionPurge {
  private timer: NodeJS.Timeout | undefined
  private started = false
  private stopping = false
  /** The run under way, if any: runs never overlap. */
  private current: Promise<PurgeReport> | undefined
  private readonly random: () => number
  private readonly batchSize: number

  constructor(private readonly deps: RetentionDeps) {
    this.random = deps.random ?? Math.random
    this.batchSize = deps.batchSize ?? PURGE_BATCH
  }

  /** Schedules the first run (the timers never keep the process alive). */
  start() {
    if (this.started || this.stopping) return
    this.started = true
    this.schedule(FIRST_RUN_MS * (1 + this.random()))
  }

  /** No more runs; a run under way ends after its current batch, and this waits for it. */
  async stop() {
    this.stopping = true
    clearTimeout(this.timer)
    await this.current?.catch(() => {})
  }

  /**
   * One complete purge at the clock's now, once a run under way has ended. Rejects on a store error (the
   * scheduled runs log it and go on).
   */
  runOnce(): Promise<PurgeReport> {
    if (this.stopping) return Promise.reject(new Error('the retention purge is stopped'))
    const run = (this.current ?? Promise.resolve()).catch(() => {}).then(() => this.purge())
    this.current = run
    const clear = () => {
      if (this.current === run) this.current = undefined
    }
    run.then(clear, clear)
    return run
  }

  private schedule(delayMs: number) {
    this.timer = setTimeout(() => void this.tick(), delayMs)
    this.timer.unref()
  }

  private async tick() {
    try {
      const report = await this.runOnce()
      if (purged(report.counts) > 0) {
        this.deps.log?.info({ retention: report }, 'retention purge: deleted records past their lifetime')
      }
    } catch (error) {
      if (this.stopping) return
      this.deps.log?.error({ err: error }, 'retention purge failed; the next run tries again')
    } finally {
      if (!this.stopping) {
        const interval = this.deps.options.purgeIntervalSeconds * 1000
        this.schedule(interval * (1 - INTERVAL_JITTER + 2 * INTERVAL_JITTER * this.random()))
      }
    }
  }

  private async purge(): Promise<PurgeReport> {
    const { store, clock, options } = this.deps
    const at = clock.now()
    const started = performance.now()
    const counts = noPurgeCounts()
    let batches = 0
    for (;;) {
      const batch = await store.transaction((repos) =>
        repos.retention.purgeBatch(at, options, this.batchSize),
      )
      batches++
      for (const kind of Object.keys(counts) as (keyof PurgeCounts)[]) counts[kind] += batch[kind]
      if (purged(batch) < this.batchSize || this.stopping) break
    }
    return { at, counts, batches, durationMs: Math.round(performance.now() - started) }
  }
}
