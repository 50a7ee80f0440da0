import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type * as Pg from 'pg'
import { lazyRequire } from '../../shared/lazy.ts'
import type { CacheCoherence } from './exclusive-cache.ts'
import type { ChangeFeed } from './index.ts'
import { CompiledQuery, sql } from './kysely.ts'

// What the instances of a shared deployment tell each other (issue 21; docs/scaling.md), over PostgreSQL's
// LISTEN/NOTIFY on one channel: state-changed events (so an SSE stream or a QR page's socket on one instance
// sees a wallet's step on another) and template changes (so no instance acts on a template another changed
// or deleted; the local cache would otherwise keep it up to a second). A template change is notified on the
// write's own connection, inside its transaction: PostgreSQL delivers it at the commit, and never for a
// rollback. An instance ignores its own messages. While the listening connection is down (it reconnects
// every second), messages are missed: the template cache's one-second life bounds what that costs.
//
// Issue 38: the instances know each other (a handshake when each starts, a heartbeat), so that
// - an instance alone on its database sends no event at all (a NOTIFY per state change was ~5 of a flow's
//   statements), and starts sending as soon as another instance has said hello;
// - rows read on every request and changed rarely (API keys) are cached on every instance: a change is
//   announced and its writer answers only once every live instance has forgotten its copy (or a cached copy
//   has outlived its lifetime), so "a revoked key is refused at once, on every instance" holds without a read
//   per request (store/exclusive-cache.ts SharedCache).
// Whenever this instance cannot be sure who listens (its connection is down, or the handshake did not hear
// from every other instance connected), it is not `coherent`: events are always sent, nothing is cached.

const pg = lazyRequire<typeof Pg>('pg')

export const FEED_CHANNEL = 'vc_harness'
/** NOTIFY's payload limit is 8000 bytes; an event's webhook body (claims) can be larger and is left out. */
const MAX_PAYLOAD = 7900
const RECONNECT_MS = 1000
/** Events published in one turn of the event loop go out in one statement, at most this many (issue 38). */
const MAX_BATCH = 256
/** One NOTIFY per element of the array: the events of a turn in one round trip. */
const NOTIFY_ALL = CompiledQuery.raw('select pg_notify($1, payload) from unnest($2::text[]) as payload')

/** The listening connections' application_name: how a starting instance counts the others (pg_stat_activity). */
export const FEED_APPLICATION = 'vc-harness feed'
/** How long a starting instance waits to hear from every other instance before it stays incoherent. */
const HANDSHAKE_MS = 3000
/** Every instance says it is alive this often; one silent for PEER_SILENCE_MS is taken for gone. */
const HEARTBEAT_MS = 5000
const PEER_SILENCE_MS = 3 * HEARTBEAT_MS
/**
 * A cached row's longest life (SharedCache): what a change waits for at most when an instance does not
 * confirm that it forgot its copy (busy, or gone without its goodbye).
 */
export const SHARED_CACHE_TTL_MS = 5000

type Message =
  | { from: string; topic: 'event'; event: unknown }
  | { from: string; topic: 'template'; tenantId: string; id: string }
  /** A starting (or reconnected) instance: each listener answers `welcome` and then sends it events. */
  | { from: string; topic: 'hello' }
  | { from: string; topic: 'welcome'; to: string }
  | { from: string; topic: 'alive' }
  | { from: string; topic: 'bye' }
  /** Rows of `scope` changed: forget them and confirm with `seen`. */
  | { from: string; topic: 'changed'; scope: string; seq: number }
  | { from: string; topic: 'seen'; to: string; seq: number }

export class PostgresFeed implements ChangeFeed, CacheCoherence {
  /** This instance, so that it ignores what it sent itself. */
  readonly instance = randomUUID()
  private readonly listeners = new Set<(event: unknown) => void>()
  private client: Pg.Client | undefined
  private closed = false
  private retry: NodeJS.Timeout | undefined
  /** Events waiting for this turn's NOTIFY statement, each with its caller's promise. */
  private outgoing: { payload: string; resolve(): void; reject(error: unknown): void }[] = []
  /** The NOTIFY statement under way: close() waits for it, so none is cut off by the pool's end. */
  private sending: Promise<void> | undefined
  /** A flush is scheduled for the end of this turn. */
  private scheduled = false
  /** What this instance's own messages start with (JSON.stringify keeps `from` first): skipped unparsed. */
  private readonly ownPrefix = `{"from":${JSON.stringify(this.instance)},`
  /** The other instances listening, with when each was last heard from (performance.now()). */
  private readonly peers = new Map<string, number>()
  /** Handshake under way: the instances connected when it began, and those that answered. */
  private handshake: { expected: number; welcomed: Set<string>; done(): void } | undefined
  private handshaken = false
  private heartbeat: NodeJS.Timeout | undefined
  private readonly forgetters = new Map<string, Set<() => void>>()
  private sequence = 0
  /** Changes announced and not yet confirmed by every instance that was listening. */
  private readonly unconfirmed = new Map<number, { waiting: Set<string>; done(): void }>()

  constructor(
    private readonly url: string,
    private readonly db: Kysely<unknown>,
    private readonly onTemplate: (tenantId: string, id: string) => void,
    private readonly onError: (error: Error) => void = () => {},
    /** Counts a statement run on the listening connection (the pool's are counted by the store's dialect). */
    private readonly onStatement: () => void = () => {},
  ) {}

  /** Connects the listening client; resolves once LISTEN is in place. */
  async start(): Promise<void> {
    const client = new (pg().Client)({ connectionString: this.url, application_name: FEED_APPLICATION })
    client.on('notification', (n) => this.receive(n.payload))
    client.on('error', (error) => this.lost(client, error))
    client.on('end', () => this.lost(client))
    await client.connect()
    await client.query(`LISTEN ${FEED_CHANNEL}`)
    this.client = client
    await this.greet(client)
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.send({ from: this.instance, topic: 'alive' }), HEARTBEAT_MS)
      this.heartbeat.unref()
    }
  }

  /**
   * The handshake: every other listening connection of this database (counted once LISTEN is in place, so an
   * instance starting later hears our hello) must answer our hello before this instance relies on knowing
   * who listens. An instance that said hello itself before it could hear ours is greeted again.
   */
  private async greet(client: Pg.Client) {
    let expected: number | undefined
    try {
      const { rows } = await client.query<{ n: number }>(
        'select count(*)::int as n from pg_stat_activity where application_name = $1 and datname = current_database() and pid <> pg_backend_pid()',
        [FEED_APPLICATION],
      )
      expected = rows[0]?.n
    } catch (error) {
      this.onError(error as Error)
    }
    this.onStatement()
    let done = () => {}
    const answered = new Promise<void>((resolve) => {
      done = resolve
    })
    const welcomed = new Set<string>()
    this.handshake = { expected: expected ?? Number.POSITIVE_INFINITY, welcomed, done }
    // Said even when nobody else seems to listen: one that the count could not see learns of us all the same.
    this.send({ from: this.instance, topic: 'hello' }).catch(() => {})
    if (expected === 0) done()
    const timer = setTimeout(done, HANDSHAKE_MS)
    await answered
    clearTimeout(timer)
    this.handshake = undefined
    const complete = expected !== undefined && welcomed.size >= expected
    // Incomplete: events are always sent and nothing is cached until the next connection's handshake.
    this.handshaken = complete && this.client === client
    if (!complete)
      this.onError(
        new Error(
          `${expected ?? 'an unknown number of'} other instance(s) listen on this database but ${welcomed.size} answered within ${HANDSHAKE_MS} ms: events are sent to all, API keys and status-list versions are read every time`,
        ),
      )
  }

  /** This instance knows who listens: it may skip events nobody hears and cache shared rows. */
  get coherent(): boolean {
    return this.handshaken && this.client !== undefined && !this.closed
  }

  /** The instances heard from lately (the others are taken for gone). */
  private livePeers(): string[] {
    const now = performance.now()
    for (const [peer, heard] of this.peers) if (now - heard > PEER_SILENCE_MS) this.peers.delete(peer)
    return [...this.peers.keys()]
  }

  onForget(scope: string, forget: () => void): () => void {
    let set = this.forgetters.get(scope)
    if (!set) {
      set = new Set()
      this.forgetters.set(scope, set)
    }
    set.add(forget)
    return () => set.delete(forget)
  }

  private forgetAll() {
    for (const set of this.forgetters.values()) for (const forget of set) forget()
  }

  /**
   * Rows of `scope` changed (committed): every live instance forgets its copies. Resolves once each has
   * confirmed, or after SHARED_CACHE_TTL_MS, when no copy cached before the change is used any more.
   */
  async changed(scope: string): Promise<void> {
    const waiting = new Set(this.livePeers())
    if (waiting.size === 0 && this.coherent) return
    const seq = ++this.sequence
    let done = () => {}
    const confirmed = new Promise<void>((resolve) => {
      done = resolve
    })
    // Not coherent: some instance may cache unseen; only the lifetime bounds its copy.
    if (this.coherent) this.unconfirmed.set(seq, { waiting, done })
    const timer = setTimeout(done, SHARED_CACHE_TTL_MS)
    try {
      await this.send({ from: this.instance, topic: 'changed', scope, seq })
    } catch {
      // Not announced: the copies' lifetime is the bound.
      this.unconfirmed.delete(seq)
    }
    await confirmed
    clearTimeout(timer)
    this.unconfirmed.delete(seq)
  }

  private lost(client: Pg.Client, error?: Error) {
    if (this.client !== client || this.closed) return
    this.client = undefined
    // Messages are missed from now on: nothing cached is trusted, every event is sent.
    this.handshaken = false
    this.forgetAll()
    if (error) this.onError(error)
    client.end().catch(() => {})
    this.retry = setTimeout(() => this.reconnect(), RECONNECT_MS)
    this.retry.unref()
  }

  private reconnect() {
    if (this.closed) return
    this.start().catch((error: Error) => {
      this.onError(error)
      this.retry = setTimeout(() => this.reconnect(), RECONNECT_MS)
      this.retry.unref()
    })
  }

  private receive(payload: string | undefined) {
    // Every instance hears its own NOTIFYs too: ignored before parsing (an event carries its webhook body).
    if (payload?.startsWith(this.ownPrefix)) return
    let message: Message
    try {
      message = JSON.parse(payload ?? '') as Message
    } catch {
      return
    }
    if (message.from === this.instance) return
    if (message.topic === 'bye') {
      this.peers.delete(message.from)
      for (const change of this.unconfirmed.values()) this.confirm(change, message.from)
      return
    }
    this.peers.set(message.from, performance.now())
    switch (message.topic) {
      case 'template':
        this.onTemplate(message.tenantId, message.id)
        break
      case 'event':
        for (const listener of this.listeners) listener(message.event)
        break
      case 'hello':
        this.send({ from: this.instance, topic: 'welcome', to: message.from }).catch(() => {})
        // It may have started listening after our own hello: greet it again.
        if (this.handshake && !this.handshake.welcomed.has(message.from))
          this.send({ from: this.instance, topic: 'hello' }).catch(() => {})
        break
      case 'welcome':
        if (message.to === this.instance && this.handshake) {
          this.handshake.welcomed.add(message.from)
          if (this.handshake.welcomed.size >= this.handshake.expected) this.handshake.done()
        }
        break
      case 'changed':
        for (const forget of this.forgetters.get(message.scope) ?? []) forget()
        this.send({ from: this.instance, topic: 'seen', to: message.from, seq: message.seq }).catch(() => {})
        break
      case 'seen': {
        const change = message.to === this.instance ? this.unconfirmed.get(message.seq) : undefined
        if (change) this.confirm(change, message.from)
        break
      }
    }
  }

  private confirm(change: { waiting: Set<string>; done(): void }, peer: string) {
    change.waiting.delete(peer)
    if (change.waiting.size === 0) change.done()
  }

  /** Notifies a template change on `db`, the connection (or transaction) that wrote it. */
  readonly announceTemplate = async (db: Kysely<unknown>, tenantId: string, id: string) => {
    const message: Message = { from: this.instance, topic: 'template', tenantId, id }
    await sql`select pg_notify(${FEED_CHANNEL}, ${JSON.stringify(message)})`.execute(db)
  }

  async publishEvent(event: unknown): Promise<void> {
    // Alone on the database, and sure of it: nobody would hear the event (issue 38).
    if (this.coherent && this.livePeers().length === 0) return
    let payload = JSON.stringify({ from: this.instance, topic: 'event', event } satisfies Message)
    // The limit is in bytes: a claim of multi-byte characters is twice or more its length (issue 30).
    if (Buffer.byteLength(payload, 'utf8') > MAX_PAYLOAD) {
      const { webhook: _left, ...lean } = event as Record<string, unknown>
      payload = JSON.stringify({ from: this.instance, topic: 'event', event: lean } satisfies Message)
    }
    await this.enqueue(payload)
  }

  private send(message: Message): Promise<void> {
    return this.enqueue(JSON.stringify(message))
  }

  private enqueue(payload: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.outgoing.push({ payload, resolve, reject })
      if (!this.scheduled && !this.sending) {
        this.scheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  /**
   * The events published in this turn in one statement (issue 38: a NOTIFY per event was a round trip per
   * state change, 8 per complete flow), one statement at a time: what is published while one is under way
   * goes out in the next, as soon as it returns. Each is still its own notification, in publishing order
   * (PostgreSQL folds identical payloads of one statement into one: two identical events would say nothing
   * more).
   */
  private flush() {
    this.scheduled = false
    if (this.sending || this.outgoing.length === 0) return
    const batch = this.outgoing.splice(0, MAX_BATCH)
    const parameters = [FEED_CHANNEL, batch.map((item) => item.payload)]
    // On the listening connection when it is up: no pool hand-off; it hears its own messages anyway.
    const client = this.client
    if (client) this.onStatement()
    this.sending = (
      client
        ? client.query(NOTIFY_ALL.sql, parameters)
        : this.db.executeQuery(CompiledQuery.raw(NOTIFY_ALL.sql, parameters))
    ).then(
      () => {
        for (const item of batch) item.resolve()
        this.sent()
      },
      (error: unknown) => {
        for (const item of batch) item.reject(error)
        this.sent()
      },
    )
  }

  private sent() {
    this.sending = undefined
    this.flush()
  }

  onEvent(listener: (event: unknown) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async close() {
    clearInterval(this.heartbeat)
    // The others stop waiting for this instance's confirmations, and stop sending to it when it was the last.
    if (this.client) this.send({ from: this.instance, topic: 'bye' }).catch(() => {})
    // What was published before the close still goes out, before the store's pool ends.
    this.flush()
    while (this.sending) await this.sending
    this.closed = true
    this.forgetAll()
    clearTimeout(this.retry)
    const client = this.client
    this.client = undefined
    await client?.end().catch(() => {})
  }
}
