import { randomUUID } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { performance } from 'node:perf_hooks'
import type { WebhookOptions } from '../config/schema.ts'
import type { ServiceEvent, ServiceEvents } from '../events.ts'
import type { LeasedWebhookEvent, Store, WebhookAttemptRecord, WebhookEventRecord } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import { type AttemptResult, DeliveryAgents, postWebhook } from './delivery.ts'
import type { OutboxHandoff, OutboxLease } from './outbox.ts'
import { deliveryHeaders } from './signing.ts'

// Delivers the outbox: at least once, in order per process or session, with retries (exponential backoff,
// jitter, Retry-After), bounded concurrency overall and per origin so a slow receiver cannot starve the
// others, and leases so that a restarted (or a second) dispatcher picks up what was left.
//
// One SQL statement per attempt (issue 20). The outbox writes an event already leased to this dispatcher
// and hands it over in memory (OutboxHandoff); it is sent once the service announces that the change
// committed (its terminal ServiceEvent), and the attempt is recorded by one UPDATE of the event that also
// logs it (store/webhooks.ts). A retry due soon stays leased and in memory. The outbox is scanned
// (due, claim, nextDueAt) only at start, on kick(), on timers, and when memory does not hold the work: an
// event another process wrote or left (its lease ended), a retry far ahead, a subject's later event.

/** How long past the attempt's deadline a lease outlives a dispatcher that died mid-attempt. */
const LEASE_MARGIN_MS = 30_000
/**
 * A held lease with less than the attempt's deadline plus this left is renewed before the attempt (the
 * event waited long for a slot): another process's clock may run this much ahead without sending it too.
 */
const LEASE_RENEW_MS = 15_000
/** Longest sleep: rows written by another process (or a moved clock) are noticed at least this often. */
const MAX_SLEEP_MS = 60_000
/** Sleep while due events wait only behind in-flight ones (their completion wakes us earlier). */
const BLOCKED_SLEEP_MS = 1_000
/**
 * How long after its write an event waits in memory for the announcement of its change's commit (which
 * comes within milliseconds); one not announced by then is left to a scan once its lease ends.
 */
const ANNOUNCE_WINDOW_MS = 10_000
/** Least time between the scans the dispatcher asks for itself: never one per delivery under load. */
const MIN_SCAN_GAP_MS = 100
/** A retry due within this stays leased and in memory; a later one goes back to the outbox's scan. */
const HOLD_HORIZON_MS = 60_000
/** Events waiting in memory for a slot, per slot (overall and per origin); more are left to the scan. */
const HOLD_PER_SLOT = 16
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
   * Scan the outbox at least this often (ms). Off by default: one process delivers what it enqueues.
   * With several processes on one database (cluster workers), an event left by another worker (its lease
   * ended, or it was too busy to take one) is otherwise noticed only after MAX_SLEEP_MS; the periodic scan
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

/**
 * An event whose lease this dispatcher holds. unannounced: written by this process's outbox, its
 * transaction not yet announced as committed; queued: waiting for its due time or a slot; claimed: taken by
 * a scan; flight: its attempt is under way.
 */
interface Held {
  event: WebhookEventRecord
  origin: string
  /** Tenant and subject: one event of a subject is in flight at a time. */
  subject: string
  /** What the last statement on the row saw of the endpoint (LeasedWebhookEvent), and when. */
  endpointDisabled: string | null
  seenAt: number
  stage: 'unannounced' | 'queued' | 'claimed' | 'flight'
}

const subjectKey = (e: { tenantId: string; subjectId: string }) => `${e.tenantId}\n${e.subjectId}`
const templateKey = (e: { tenantId: string; templateId: string }) => `${e.tenantId}\n${e.templateId}`
/** Matches a written event with the announcement of its change: `${kind}.${step}` is the event type. */
const announceKey = (type: string, tenantId: string, subjectId: string) =>
  `${type}\n${tenantId}\n${subjectId}`
const dueOf = (h: Held) => h.event.nextAttemptAt ?? 0
/** Per-origin limits group by origin; a URL that does not parse (never saved: templates are checked) by itself. */
function originOf(url: string) {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}

export class WebhookDispatcher implements OutboxHandoff {
  /** Names this dispatcher's leases (leaseOwner): unique per dispatcher, so a restart never inherits them. */
  readonly owner = `dispatcher-${randomUUID()}`
  private readonly agents = new DeliveryAgents()
  /** Every event whose lease this dispatcher holds, by id. */
  private readonly held = new Map<string, Held>()
  /** Written by this process, not yet announced, by announceKey (several only when a write rolled back). */
  private readonly unannounced = new Map<string, Held[]>()
  /** Announcement keys of events written without our lease: a scan finds them once committed. */
  private readonly scanOnAnnounce = new Set<string>()
  /** Queued events by due time (then write order). */
  private queue: Held[] = []
  /** Unannounced and queued events, overall and per origin (the bound on what memory holds). */
  private waiting = 0
  private readonly waitingPerOrigin = new Map<string, number>()
  private readonly inFlight = new Map<string, AbortController>()
  private readonly perOrigin = new Map<string, number>()
  private readonly subjectsInFlight = new Set<string>()
  /** When this dispatcher disabled a template's endpoint (a 410): older endpoint states are stale. */
  private readonly disabledHere = new Map<string, number>()
  private readonly running = new Set<Promise<void>>()
  private readonly reports = new EventEmitter()
  private wakeTimer: NodeJS.Timeout | undefined
  private scanTimer: NodeJS.Timeout | undefined
  /** performance.now() at which scanTimer fires. */
  private scanTimerAt = Number.POSITIVE_INFINITY
  private scanning = false
  private scanAgain = false
  private lastScanAt = Number.NEGATIVE_INFINITY
  /** The last scan left due events it had no slot for: a freed slot asks for another. */
  private scanBacklog = false
  /** Subjects with a redelivered event, and its seq: their later events are not held in memory. */
  private readonly redeliveredSubjects = new Map<string, number>()
  private stopped = true
  private unsubscribe: (() => void) | undefined
  private readonly random: () => number

  constructor(private readonly deps: DispatcherDeps) {
    this.random = deps.random ?? Math.random
    this.reports.setMaxListeners(0)
  }

  start() {
    if (!this.stopped) return
    this.stopped = false
    // Terminal changes are announced after their commit: the events their transactions wrote may go.
    this.unsubscribe = this.deps.events.on((event) => this.announced(event))
    this.scanNow()
  }

  /** Looks at the outbox and at what is held now (after a redelivery, or when the clock was moved). */
  kick() {
    if (this.stopped) return
    this.pump()
    this.scanNow()
  }

  /**
   * A redelivery put `event` back in its subject's queue, ahead of the subject's later events
   * (docs/webhooks.md): those this dispatcher holds go back to the outbox, whose scan keeps that order
   * (one in flight is not recalled). A later event held by another process is not seen.
   */
  async redelivered(event: WebhookEventRecord) {
    if (this.stopped) return
    const subject = subjectKey(event)
    const seq = event.seq ?? 0
    if (this.redeliveredSubjects.size >= 1024) this.redeliveredSubjects.clear()
    this.redeliveredSubjects.set(subject, Math.min(seq, this.redeliveredSubjects.get(subject) ?? seq))
    const later = [...this.held.values()].filter(
      (h) =>
        h.subject === subject &&
        (h.event.seq ?? 0) > seq &&
        (h.stage === 'queued' || h.stage === 'unannounced'),
    )
    for (const h of later) {
      this.forget(h)
      this.unannounced.delete(announceKey(h.event.type, h.event.tenantId, h.event.subjectId))
    }
    await this.deps.store.webhooks.release(
      this.owner,
      later.map((h) => h.event.id),
    )
    this.kick()
  }

  /** Subscribes to attempt outcomes; returns the unsubscribe function. */
  onAttempt(listener: (report: AttemptReport) => void): () => void {
    this.reports.on('attempt', listener)
    return () => this.reports.off('attempt', listener)
  }

  /**
   * Stops scheduling, aborts attempts in flight and releases every lease it holds, in one statement: the
   * next start (of any process) retries them. A transaction that took a lease before stop() and commits
   * after it leaves that event leased until the lease ends; it is delivered then.
   */
  async stop() {
    this.stopped = true
    this.unsubscribe?.()
    this.unsubscribe = undefined
    clearTimeout(this.wakeTimer)
    clearTimeout(this.scanTimer)
    this.scanTimerAt = Number.POSITIVE_INFINITY
    for (const controller of this.inFlight.values()) controller.abort()
    await Promise.allSettled([...this.running])
    const ids = [...this.held.keys()]
    this.held.clear()
    this.unannounced.clear()
    this.scanOnAnnounce.clear()
    this.queue = []
    this.waiting = 0
    this.waitingPerOrigin.clear()
    try {
      await this.deps.store.webhooks.release(this.owner, ids)
    } catch (error) {
      process.emitWarning(`webhook dispatcher: releasing its leases: ${(error as Error).message}`)
    }
    this.agents.destroy()
  }

  // --- the outbox's handoff (called inside the state change's transaction) ---------------------------------

  leaseFor(url: string, now: number): OutboxLease | null {
    if (this.stopped) return null
    const { concurrency, perEndpointConcurrency, timeoutMs } = this.deps.options
    // Busy: memory holds enough; the rest waits in the outbox for whichever dispatcher has a slot first.
    if (this.waiting >= concurrency * HOLD_PER_SLOT) return null
    if ((this.waitingPerOrigin.get(originOf(url)) ?? 0) >= perEndpointConcurrency * HOLD_PER_SLOT) return null
    return { owner: this.owner, until: now + timeoutMs + LEASE_MARGIN_MS }
  }

  written({ event, endpointDisabled }: LeasedWebhookEvent) {
    const key = announceKey(event.type, event.tenantId, event.subjectId)
    if (event.leaseOwner !== this.owner || this.stopped) {
      // Not leased to us (an older event of the subject is pending, or we declined): scan once committed.
      if (this.scanOnAnnounce.size >= 1024) this.scanOnAnnounce.clear() // keys of rolled-back writes
      this.scanOnAnnounce.add(key)
      return
    }
    const held: Held = {
      event,
      origin: originOf(event.url),
      subject: subjectKey(event),
      endpointDisabled,
      seenAt: this.deps.clock.now(),
      stage: 'unannounced',
    }
    this.held.set(event.id, held)
    this.addWaiting(held)
    const list = this.unannounced.get(key)
    if (list) list.push(held)
    else this.unannounced.set(key, [held])
  }

  /**
   * A state change was announced, after its commit: the event its transaction wrote may be sent.
   * Announcements carry no event id, so they are matched by subject and event type. A subject reaches a
   * terminal state once, so one transaction per key commits; an earlier write under the same key came from
   * a transaction that rolled back (the committed one changed the subject: no later one got as far as its
   * outbox write). In a cluster another worker's announcement is relayed here too: it could match a write
   * of ours whose COMMIT itself failed, hence only writes younger than ANNOUNCE_WINDOW_MS are matched.
   * What is forgotten stays leased to us in the row, if it exists, and a scan sends it once the lease ends:
   * late, never twice.
   */
  private announced(change: ServiceEvent) {
    if (!TERMINAL_STEPS.has(change.step)) return
    if (this.unannounced.size > 0) this.forgetStaleUnannounced()
    const subject = change.kind === 'issuance' ? change.processId : change.sessionId
    const key = announceKey(`${change.kind}.${change.step}`, change.tenantId, subject)
    const written = this.unannounced.get(key)
    if (written) {
      this.unannounced.delete(key)
      const committed = written.pop() as Held
      for (const h of written) this.forget(h)
      committed.stage = 'queued' // still waiting: the counts stay as they are
      this.insertQueued(committed)
      this.pump()
    }
    if (this.scanOnAnnounce.delete(key)) this.requestScan()
  }

  /** Unannounced writes older than ANNOUNCE_WINDOW_MS: rolled back, or left to a scan once their lease ends. */
  private forgetStaleUnannounced() {
    const since = this.deps.clock.now() - ANNOUNCE_WINDOW_MS
    for (const [key, list] of this.unannounced) {
      const live = list.filter((h) => h.seenAt > since)
      for (const h of list) if (!live.includes(h)) this.forget(h)
      if (live.length === 0) this.unannounced.delete(key)
      else if (live.length < list.length) this.unannounced.set(key, live)
    }
  }

  // --- what memory holds ---------------------------------------------------------------------------------

  private addWaiting(h: Held) {
    if (h.stage !== 'unannounced' && h.stage !== 'queued') return
    this.waiting++
    this.waitingPerOrigin.set(h.origin, (this.waitingPerOrigin.get(h.origin) ?? 0) + 1)
  }

  private removeWaiting(h: Held) {
    if (h.stage !== 'unannounced' && h.stage !== 'queued') return
    this.waiting--
    const left = (this.waitingPerOrigin.get(h.origin) ?? 1) - 1
    if (left > 0) this.waitingPerOrigin.set(h.origin, left)
    else this.waitingPerOrigin.delete(h.origin)
  }

  /** Drops an event from memory (its lease, if still ours in the row, simply runs out). */
  private forget(h: Held) {
    if (this.held.get(h.event.id) !== h) return
    this.held.delete(h.event.id)
    this.removeWaiting(h)
    if (h.stage === 'queued') this.queue = this.queue.filter((q) => q !== h)
  }

  private insertQueued(h: Held) {
    const due = dueOf(h)
    let i = this.queue.length
    while (i > 0 && dueOf(this.queue[i - 1] as Held) > due) i--
    this.queue.splice(i, 0, h)
  }

  /** Launches the queued events that are due and have a slot; wakes up for the next one to fall due. */
  private pump() {
    if (this.stopped) return
    const { concurrency, perEndpointConcurrency } = this.deps.options
    const now = this.deps.clock.now()
    let i = 0
    while (i < this.queue.length && this.inFlight.size < concurrency) {
      const h = this.queue[i] as Held
      if (dueOf(h) > now) break
      // Waiting for a slot of its origin or for its subject's event in flight: their completion pumps again.
      if (
        (this.perOrigin.get(h.origin) ?? 0) >= perEndpointConcurrency ||
        this.subjectsInFlight.has(h.subject)
      ) {
        i++
        continue
      }
      this.queue.splice(i, 1)
      this.launch(h)
    }
    while (i < this.queue.length && dueOf(this.queue[i] as Held) <= now) i++
    clearTimeout(this.wakeTimer)
    const later = this.queue[i]
    if (later) {
      this.wakeTimer = setTimeout(() => this.pump(), Math.min(dueOf(later) - now, MAX_SLEEP_MS))
      this.wakeTimer.unref()
    }
  }

  private launch(h: Held) {
    this.removeWaiting(h)
    h.stage = 'flight'
    const id = h.event.id
    const controller = new AbortController()
    this.inFlight.set(id, controller)
    this.perOrigin.set(h.origin, (this.perOrigin.get(h.origin) ?? 0) + 1)
    this.subjectsInFlight.add(h.subject)
    const run = this.attempt(h, controller.signal)
      .catch((error: unknown) => {
        process.emitWarning(`webhook ${id}: ${(error as Error).message}`)
        // Its lease stays in the row: once it ends, a scan retries the event.
        this.forget(h)
      })
      .finally(() => {
        this.inFlight.delete(id)
        this.perOrigin.set(h.origin, (this.perOrigin.get(h.origin) ?? 1) - 1)
        this.subjectsInFlight.delete(h.subject)
        this.running.delete(run)
        this.pump()
        if (this.scanBacklog) this.requestScan()
      })
    this.running.add(run)
  }

  // --- one attempt -----------------------------------------------------------------------------------------

  private async attempt(h: Held, signal: AbortSignal) {
    const { store, clock, options } = this.deps
    const startedAt = clock.now()
    // A lease that would not outlast this attempt is renewed first: the event waited long for a slot.
    if ((h.event.leaseUntil ?? 0) < startedAt + options.timeoutMs + LEASE_RENEW_MS) {
      const until = startedAt + options.timeoutMs + LEASE_MARGIN_MS
      const renewed = await store.webhooks.claim(h.event.id, startedAt, until, this.owner)
      if (!renewed) {
        // Another dispatcher took it once our lease ended, or it is settled.
        this.forget(h)
        return
      }
      this.see(h, renewed, startedAt)
    }
    if (signal.aborted) return
    const event = h.event
    const [template, disabledReason] = await Promise.all([
      store.templates.get(event.tenantId, event.templateId, event.templateKind),
      this.endpointDisabled(h),
    ])
    const at = clock.now()
    const logged = event.logCount ?? 0
    const trigger = event.attempts === 0 && logged > 0 ? 'redelivery' : 'automatic'
    const secrets = template?.body.webhookSecret
      ? [template.body.webhookSecret, ...(template.body.webhookPreviousSecrets ?? [])]
      : []
    let result: AttemptResult
    let decision: Decision
    if (disabledReason !== null) {
      result = { status: null, durationMs: 0 }
      decision = { outcome: 'disabled', error: `endpoint disabled: ${disabledReason}`, nextAttemptAt: null }
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
      // stop(): nothing is recorded; its lease is released with the others.
      if (signal.aborted) return
      decision = decide(result, event.attempts + 1, clock.now(), options, this.random)
    }
    const now = clock.now()
    const attempt: WebhookAttemptRecord = {
      eventId: event.id,
      attempt: logged + 1,
      at,
      durationMs: result.durationMs,
      status: result.status,
      error: decision.error,
      outcome: decision.outcome,
      nextAttemptAt: decision.nextAttemptAt,
      trigger,
    }
    // A retry due soon keeps its lease (written by the same statement) and waits in memory.
    const hold = decision.outcome === 'retry' && this.mayHold(h, now, decision.nextAttemptAt)
    const leaseUntil = hold ? (decision.nextAttemptAt ?? now) + options.timeoutMs + LEASE_MARGIN_MS : null
    const next: WebhookEventRecord = {
      ...event,
      state: decision.outcome === 'retry' ? 'pending' : decision.outcome,
      attempts: event.attempts + 1,
      nextAttemptAt: decision.nextAttemptAt,
      leaseUntil,
      leaseOwner: hold ? this.owner : null,
      lastStatus: result.status,
      lastError: decision.error,
      updatedAt: now,
      deliveredAt: decision.outcome === 'delivered' ? now : null,
      logCount: attempt.attempt,
    }
    const recorded = await store.webhooks.recordAttempt(next, attempt)
    if (!recorded) {
      process.emitWarning(
        `webhook ${event.id}: attempt ${attempt.attempt} was already logged by another dispatcher; this one is not`,
      )
      this.forget(h)
      return
    }
    // The statement's trigger disabled the endpoint (migration 0008); what this process holds saw it before.
    if (decision.outcome === 'disabled' && result.status === 410)
      this.disabledHere.set(templateKey(event), now)
    this.reports.emit('attempt', { event: next, attempt } satisfies AttemptReport)
    if (hold) {
      h.event = next
      h.endpointDisabled = recorded.endpointDisabled
      h.seenAt = now
      h.stage = 'queued'
      this.addWaiting(h)
      this.insertQueued(h)
      return
    }
    this.forget(h)
    // A retry not held is the scan's once due; a settled event may have let its subject's next one go.
    if (decision.nextAttemptAt !== null) this.requestScan(decision.nextAttemptAt)
    if (recorded.successorPending) this.requestScan()
  }

  private see(h: Held, leased: LeasedWebhookEvent, at: number) {
    h.event = leased.event
    h.endpointDisabled = leased.endpointDisabled
    h.seenAt = at
  }

  private mayHold(h: Held, now: number, nextAttemptAt: number | null) {
    if (this.stopped || nextAttemptAt === null || nextAttemptAt - now > HOLD_HORIZON_MS) return false
    // Behind a redelivered event of its subject: the scan keeps the order.
    if ((h.event.seq ?? 0) > (this.redeliveredSubjects.get(h.subject) ?? Number.POSITIVE_INFINITY))
      return false
    const { concurrency, perEndpointConcurrency } = this.deps.options
    return (
      this.waiting < concurrency * HOLD_PER_SLOT &&
      (this.waitingPerOrigin.get(h.origin) ?? 0) < perEndpointConcurrency * HOLD_PER_SLOT
    )
  }

  /**
   * Why the endpoint is disabled for the event's URL, or null. What the statement that wrote or leased the
   * row saw is trusted, unless it saw the endpoint disabled (saving the template may have enabled it since)
   * or this dispatcher has disabled the template's endpoint since. Another process's 410 in between is not
   * seen: the attempt goes out and is answered 410 in turn.
   */
  private async endpointDisabled(h: Held): Promise<string | null> {
    const since = this.disabledHere.get(templateKey(h.event))
    if (h.endpointDisabled === null && (since === undefined || since < h.seenAt)) return null
    const endpoint = await this.deps.store.webhooks.endpoint(h.event.tenantId, h.event.templateId)
    return endpoint && endpoint.url === h.event.url ? endpoint.disabledReason : null
  }

  // --- the scan --------------------------------------------------------------------------------------------

  /** Scans now (start, kick, a timer). */
  private scanNow() {
    if (this.stopped) return
    clearTimeout(this.scanTimer)
    this.scanTimerAt = Number.POSITIVE_INFINITY
    const run = this.scan()
      .catch((error: unknown) => {
        process.emitWarning(`webhook dispatcher: ${(error as Error).message}`)
        this.armScan(BLOCKED_SLEEP_MS)
      })
      .finally(() => this.running.delete(run))
    // stop() waits for a scan under way too: it must not outlive the store.
    this.running.add(run)
  }

  /** A scan the dispatcher asks for itself: at `at` on the service clock at the earliest, rate-limited. */
  private requestScan(at?: number) {
    const gap = MIN_SCAN_GAP_MS - (performance.now() - this.lastScanAt)
    const wait = at === undefined ? 0 : at - this.deps.clock.now()
    this.armScan(Math.min(Math.max(gap, wait, 0), MAX_SLEEP_MS))
  }

  /** Sets the scan timer to `ms` from now unless it fires sooner already. */
  private armScan(ms: number) {
    if (this.stopped) return
    const at = performance.now() + ms
    if (at >= this.scanTimerAt) return
    clearTimeout(this.scanTimer)
    this.scanTimerAt = at
    this.scanTimer = setTimeout(() => this.scanNow(), ms)
    this.scanTimer.unref()
  }

  private async scan() {
    if (this.scanning) {
      this.scanAgain = true
      return
    }
    this.scanning = true
    const { store, clock, options } = this.deps
    try {
      do {
        this.scanAgain = false
        this.scanBacklog = false
        this.lastScanAt = performance.now()
        const free = options.concurrency - this.inFlight.size
        if (free <= 0) {
          this.scanBacklog = true
          break
        }
        const now = clock.now()
        // Ask for more than the free slots: some may belong to an origin at its limit. When a whole batch
        // is looked at and slots are still free, look further: a backlog of one busy origin must not hide
        // the events of the others behind it. Claimed events are leased, so they drop out of the next scan.
        for (let batch = free * 4; ; batch = Math.min(batch * 4, MAX_SCAN)) {
          const due = await store.webhooks.due(now, batch)
          for (const event of due) {
            if (this.stopped) break
            // Held here already (its lease ran out while it waited for a slot): renewed when it goes.
            if (this.held.has(event.id)) continue
            const origin = originOf(event.url)
            if (
              this.inFlight.size >= options.concurrency ||
              (this.perOrigin.get(origin) ?? 0) >= options.perEndpointConcurrency ||
              this.subjectsInFlight.has(subjectKey(event))
            ) {
              this.scanBacklog = true
              continue
            }
            const leased = await store.webhooks.claim(
              event.id,
              now,
              now + options.timeoutMs + LEASE_MARGIN_MS,
              this.owner,
            )
            if (!leased) continue
            const h: Held = {
              event: leased.event,
              origin,
              subject: subjectKey(event),
              endpointDisabled: leased.endpointDisabled,
              seenAt: now,
              stage: 'claimed',
            }
            this.held.set(event.id, h)
            // stop() came while the claim was written: the lease is released with the others.
            if (this.stopped) break
            this.launch(h)
          }
          const full = this.stopped || this.inFlight.size >= options.concurrency
          if (full || due.length < batch || batch >= MAX_SCAN) break
        }
      } while (this.scanAgain && !this.stopped)
    } finally {
      this.scanning = false
    }
    if (!this.stopped) await this.scheduleScan()
  }

  /** The next scan: when the next event the outbox holds falls due, and at least every pollIntervalMs. */
  private async scheduleScan() {
    const poll = this.deps.pollIntervalMs
    const next = await this.deps.store.webhooks.nextDueAt()
    let ms = Number.POSITIVE_INFINITY
    if (next !== null) {
      const wait = next - this.deps.clock.now()
      ms = wait > 0 ? Math.min(wait, MAX_SLEEP_MS) : BLOCKED_SLEEP_MS
    }
    if (poll) ms = Math.min(ms, poll)
    if (Number.isFinite(ms)) this.armScan(ms)
  }
}
