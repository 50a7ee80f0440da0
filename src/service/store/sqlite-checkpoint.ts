import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { StoreStats } from './index.ts'

// WAL checkpoints off the event loop (issue 20). SQLite's automatic checkpoint runs inside the COMMIT that
// crosses its threshold, on the connection's thread: with the service's one connection, that is the event
// loop, and it copies a thousand pages and fsyncs the database file while every request waits. Here a
// worker thread with a connection of its own runs a PASSIVE checkpoint (it never blocks a writer; what a
// writer appends meanwhile waits for the next one) at most every INTERVAL_MS while writes come in. The main
// connection keeps SQLite's own checkpoint as a backstop at BACKSTOP_PAGES, far above what the worker lets
// the log reach, for a worker that falls behind or fails. Checkpoints change no durability: a commit is
// durable once its WAL frames are synced (sqlite-driver.ts), whether or not they were copied yet.

/** Pages in the log at which the main connection checkpoints by itself (SQLite's default is 1000). */
export const BACKSTOP_PAGES = 8000
const INTERVAL_MS = 50

// Plain CommonJS, evaluated in the worker: it needs neither our loader nor our modules.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.path)
// A checkpoint that meets another one's lock is skipped, never waited for: the next request catches up.
db.pragma('busy_timeout = 0')
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close()
    parentPort.close()
    return
  }
  try {
    // Another process's checkpoint in progress is no error: the row says busy, and the next run catches up.
    db.pragma('wal_checkpoint(PASSIVE)')
    parentPort.postMessage({})
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) })
  }
})
`

/** The database file's checkpointing thread; `poke` after writes, `close` before the main connection. */
export class Checkpointer {
  private readonly worker: Worker
  private running = false
  private wanted = false
  private timer: NodeJS.Timeout | undefined
  private lastAt = 0
  private failed = false
  private closed: Promise<void> | undefined
  private waiters: (() => void)[] = []

  constructor(
    path: string,
    /** `checkpoints` counts the worker's runs. */
    private readonly stats: StoreStats,
    /** Told once if the worker fails; the backstop checkpoints from then on. */
    private readonly onFailure: (error: Error) => void,
  ) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driver } })
    // Never what keeps the process alive.
    this.worker.unref()
    this.worker.on('message', (m: { error?: string }) => {
      this.running = false
      if (m.error) this.fail(new Error(m.error))
      else this.stats.checkpoints = (this.stats.checkpoints ?? 0) + 1
      for (const waiter of this.waiters.splice(0)) waiter()
      if (this.wanted) this.poke()
    })
    this.worker.on('error', (error) => this.fail(error))
  }

  /** Writes were synced: a checkpoint is due within INTERVAL_MS, one at a time. */
  poke() {
    if (this.failed || this.closed) return
    this.wanted = true
    if (this.running || this.timer) return
    const wait = Math.max(0, this.lastAt + INTERVAL_MS - Date.now())
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.running || this.failed || this.closed) return
      this.wanted = false
      this.running = true
      this.lastAt = Date.now()
      this.worker.postMessage('checkpoint')
    }, wait)
    this.timer.unref()
  }

  /** Resolves after the next checkpoint (tests). */
  next(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push(resolve)
      this.poke()
    })
  }

  private fail(error: Error) {
    if (this.failed) return
    this.failed = true
    this.running = false
    for (const waiter of this.waiters.splice(0)) waiter()
    this.onFailure(error)
  }

  /** Ends the worker and its connection (before the main connection closes, which checkpoints last). */
  close(): Promise<void> {
    this.closed ??= (async () => {
      clearTimeout(this.timer)
      if (this.failed) {
        this.worker.ref()
        await this.worker.terminate()
        return
      }
      const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()))
      // Held now: closing is waited for, and an unreferenced worker would let the process end first.
      this.worker.ref()
      this.worker.postMessage('close')
      await exited
    })()
    return this.closed
  }
}
