import { EventEmitter } from 'node:events'
import type { WebhookOptions } from '../config/schema.ts'
import type { ServiceEvents } from '../events.ts'
import type { Store, WebhookAttemptRecord, WebhookEventRecord } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import { type AttemptResult, DeliveryAgents, postWebhook } from './delivery.ts'
import { deliveryHeaders } from './signing.ts'

// Delivers the outbox: at least once, in order per process or session, with retries (exponential backoff,
// jitter, Retry-After), bounded concurrency overall and per origin so a slow receiver cannot starve the
// others, and leases so that a restarted (or a second) dispatcher picks up what was left.

/** How long past the attempt's deadline a lease outlives a dispatcher that died mid-attempt. */
const LEASE_MARGIN_MS = 30_000
/** Longest sleep: rows written by another process (or a moved clock) are noticed at least this often. */
const MAX_SLEEP_MS = 60_000
/** Sleep while due events wait only behind in-flight ones (their completion wakes us earlier). */
const BLOCKED_SLEEP_MS = 1_000
/** Most due events one scan looks at for an origin with a free slot. */
const MAX_SCAN = 4_096
const BACKOFF_FACTOR = 4
const TERMINAL_STEPS = new Set(['issued', 'rejected', 'verified'])

export interface DispatcherDeps {
  store: Store
  clock: Clock
  events: ServiceEvents
  options: WebhookOptions
  random?: () => number
  /**
   * Scan the outbox at least this often (ms). Off by default: one process is woken by its own enqueues.
   * With several processes on one database (cluster workers), an event enqueued by another worker is
   * otherwise noticed only when that worker's dispatcher runs or after MAX_SLEEP_MS; the periodic scan
   * lets an idle worker pick it up (the lease in `claim` keeps a delivery to one dispatcher).
   */
  pollIntervalMs?: number
}

/** What happened to one attempt, for tests, benchmarks and the sandbox. */
export interface AttemptReport {
  event: WebhookEventRecord
  attempt: WebhookAttemptRecord
}

/** The wait before retry number `attempts` (1 = the first retry): ×4 per retry, capped, ±25 % jitter. */
export function backoffDelay(attempts: number, options: WebhookOptions, random: () => number = Math.random) {
  const base = Math.min(
    options.retryMaxDelayMs,
    options.retryInitialDelayMs * BACKOFF_FACTOR ** (attempts - 1),
  )
  return Math.round(Math.min(options.retryMaxDelayMs, base * (0.75 + 0.5 * random())))
}

type Decision = Pick<WebhookAttemptRecord, 'outcome' | 'error'> & { nextAttemptAt: number | null }

/** Classifies an attempt: delivered, retry (timeouts, connection errors, 3xx, 408, 429, 5xx), disabled (410) or failed. */
export function decide(
  result: AttemptResult,
  attempts: number,
  now: number,
  options: WebhookOptions,
  random: () => number = Math.random,
): Decision {
  const { status } = result
  if (status !== null && status >= 200 && status < 300)
    return { outcome: 'delivered', error: null, nextAttemptAt: null }
  if (status === 410) {
    return {
      outcome: 'disabled',
      error: 'the receiver answered 410 Gone: endpoint disabled until the template is saved again',
      nextAttemptAt: null,
    }
  }
  if (result.forbidden)
    return { outcome: 'failed', error: result.error ?? 'target refused', nextAttemptAt: null }
  const retryable =
    status === null || (status >= 300 && status < 400) || status === 408 || status === 429 || status >= 500
  const why = status === null ? (result.error ?? 'no answer') : `the receiver answered ${status}`
  if (!retryable) {
    return {
      outcome: 'failed',
      error: `${why}; a 4xx other than 408, 410 and 429 is not retried`,
      nextAttemptAt: null,
    }
  }
  if (attempts >= options.maxAttempts) {
    return { outcome: 'failed', error: `${why}; gave up after ${attempts} attempts`, nextAttemptAt: null }
  }
  const delay =
    result.retryAfterMs !== undefined
      ? Math.min(result.retryAfterMs, options.retryMaxDelayMs)
      : backoffDelay(attempts, options, random)
  return { outcome: 'retry', error: why, nextAttemptAt: now + delay }
}

export class WebhookDispatcher {
  private readonly agents = new DeliveryAgents()
  private readonly inFlight = new Map<string, AbortController>()
  private readonly perOrigin = new Map<string, number>()
  private readonly running = new Set<Promise<void>>()
  private readonly reports = new EventEmitter()
  private timer: NodeJS.Timeout | undefined
  private pumping = false
  private again = false
  private stopped = true
  private unsubscribe: (() => void) | undefined
  private enqueued = true

  /** The outbox wrote a row: the next terminal event wakes the dispatcher. */
  noteEnqueued() {
    this.enqueued = true
  }
  private readonly random: () => number

  constructor(private readonly deps: DispatcherDeps) {
    this.random = deps.random ?? Math.random
    this.reports.setMaxListeners(0)
  }

  start() {
    if (!this.stopped) return
    this.stopped = false
    // Terminal changes commit their outbox row before the event is emitted: wake up and deliver, but
    // only when a row was written since the last wake-up (a rolled-back write just costs one scan).
    this.unsubscribe = this.deps.events.on((event) => {
      if (TERMINAL_STEPS.has(event.step) && this.enqueued) {
        this.enqueued = false
        this.kick()
      }
    })
    this.kick()
  }

  /** Looks for due deliveries now (after an enqueue, a redelivery or a finished attempt). */
  kick() {
    if (this.stopped) return
    const run = this.pump()
      .catch((error: unknown) => {
        process.emitWarning(`webhook dispatcher: ${(error as Error).message}`)
        this.sleep(BLOCKED_SLEEP_MS)
      })
      .finally(() => this.running.delete(run))
    // stop() waits for a scan under way too: it must not outlive the store.
    this.running.add(run)
  }

  /** Subscribes to attempt outcomes; returns the unsubscribe function. */
  onAttempt(listener: (report: AttemptReport) => void): () => void {
    this.reports.on('attempt', listener)
    return () => this.reports.off('attempt', listener)
  }

  /** Stops scheduling, aborts attempts in flight (their leases are released: the next start retries them). */
  async stop() {
    this.stopped = true
    this.unsubscribe?.()
    clearTimeout(this.timer)
    for (const controller of this.inFlight.values()) controller.abort()
    await Promise.allSettled([...this.running])
    this.agents.destroy()
  }

  private async pump() {
    if (this.pumping) {
      this.again = true
      return
    }
    this.pumping = true
    const { store, clock, options } = this.deps
    try {
      do {
        this.again = false
        const free = options.concurrency - this.inFlight.size
        if (free <= 0) break
        const now = clock.now()
        // Ask for more than the free slots: some may belong to an origin at its limit. When a whole batch
        // is looked at and slots are still free, look further: a backlog of one busy origin must not hide
        // the events of the others behind it. Claimed events are leased, so they drop out of the next scan.
        for (let batch = free * 4; ; batch = Math.min(batch * 4, MAX_SCAN)) {
          const due = await store.webhooks.due(now, batch)
          for (const event of due) {
            if (this.stopped || this.inFlight.size >= options.concurrency) break
            const origin = new URL(event.url).origin
            if ((this.perOrigin.get(origin) ?? 0) >= options.perEndpointConcurrency) continue
            if (!(await store.webhooks.claim(event.id, now, now + options.timeoutMs + LEASE_MARGIN_MS)))
              continue
            if (this.stopped) {
              // stop() came while the claim was written: leave the event to the next start.
              await store.webhooks.release(event.id)
              break
            }
            this.launch(event, origin)
          }
          const full = this.stopped || this.inFlight.size >= options.concurrency
          if (full || due.length < batch || batch >= MAX_SCAN) break
        }
      } while (this.again && !this.stopped)
    } finally {
      this.pumping = false
    }
    if (!this.stopped) await this.scheduleNext()
  }

  private async scheduleNext() {
    const poll = this.deps.pollIntervalMs
    const next = await this.deps.store.webhooks.nextDueAt()
    if (next === null) {
      if (poll) this.sleep(poll)
      return
    }
    const wait = next - this.deps.clock.now()
    const ms = wait > 0 ? Math.min(wait, MAX_SLEEP_MS) : BLOCKED_SLEEP_MS
    this.sleep(poll ? Math.min(ms, poll) : ms)
  }

  private sleep(ms: number) {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => this.kick(), ms)
    this.timer.unref()
  }

  private launch(event: WebhookEventRecord, origin: string) {
    const controller = new AbortController()
    this.inFlight.set(event.id, controller)
    this.perOrigin.set(origin, (this.perOrigin.get(origin) ?? 0) + 1)
    const run = this.attempt(event, controller.signal)
      .catch((error: unknown) => process.emitWarning(`webhook ${event.id}: ${(error as Error).message}`))
      .finally(() => {
        this.inFlight.delete(event.id)
        this.perOrigin.set(origin, (this.perOrigin.get(origin) ?? 1) - 1)
        this.running.delete(run)
        this.kick()
      })
    this.running.add(run)
  }

  private async attempt(event: WebhookEventRecord, signal: AbortSignal) {
    const { store, clock, options } = this.deps
    const [template, endpoint, log] = await Promise.all([
      store.templates.get(event.tenantId, event.templateId, event.templateKind),
      store.webhooks.endpoint(event.tenantId, event.templateId),
      store.webhooks.attempts(event.id),
    ])
    const at = clock.now()
    const trigger = event.attempts === 0 && log.length > 0 ? 'redelivery' : 'automatic'
    const secrets = template?.body.webhookSecret
      ? [template.body.webhookSecret, ...(template.body.webhookPreviousSecrets ?? [])]
      : []
    let result: AttemptResult
    let decision: Decision
    if (endpoint && endpoint.url === event.url) {
      result = { status: null, durationMs: 0 }
      decision = {
        outcome: 'disabled',
        error: `endpoint disabled: ${endpoint.disabledReason}`,
        nextAttemptAt: null,
      }
    } else if (!template || secrets.length === 0) {
      result = { status: null, durationMs: 0 }
      const why = template ? 'the template has no webhookSecret' : 'the template was deleted'
      decision = { outcome: 'failed', error: why, nextAttemptAt: null }
    } else {
      result = await postWebhook(event.url, deliveryHeaders(event, at, secrets), event.body, {
        timeoutMs: options.timeoutMs,
        policy: options.mode,
        agents: this.agents,
        signal,
      })
      if (signal.aborted) {
        await store.webhooks.release(event.id)
        return
      }
      decision = decide(result, event.attempts + 1, clock.now(), options, this.random)
    }
    const now = clock.now()
    const attempt: WebhookAttemptRecord = {
      eventId: event.id,
      attempt: log.length + 1,
      at,
      durationMs: result.durationMs,
      status: result.status,
      error: decision.error,
      outcome: decision.outcome,
      nextAttemptAt: decision.nextAttemptAt,
      trigger,
    }
    const next: WebhookEventRecord = {
      ...event,
      state:
        decision.outcome === 'retry'
          ? 'pending'
          : decision.outcome === 'delivered'
            ? 'delivered'
            : decision.outcome,
      attempts: event.attempts + 1,
      nextAttemptAt: decision.nextAttemptAt,
      lastStatus: result.status,
      lastError: decision.error,
      updatedAt: now,
      deliveredAt: decision.outcome === 'delivered' ? now : null,
    }
    await store.transaction(async (repos) => {
      await repos.webhooks.recordAttempt(next, attempt)
      if (decision.outcome === 'disabled' && result.status === 410) {
        await repos.webhooks.disableEndpoint({
          tenantId: event.tenantId,
          templateId: event.templateId,
          url: event.url,
          disabledAt: now,
          disabledReason: `${event.url} answered 410 Gone to event ${event.id}`,
        })
      }
    })
    this.reports.emit('attempt', { event: next, attempt } satisfies AttemptReport)
  }
}
