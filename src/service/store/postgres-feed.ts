import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type * as Pg from 'pg'
import { lazyRequire } from '../../shared/lazy.ts'
import type { ChangeFeed } from './index.ts'
import { CompiledQuery, sql } from './kysely.ts'

// What the instances of a shared deployment tell each other (issue 21; docs/scaling.md), over PostgreSQL's
// LISTEN/NOTIFY on one channel: state-changed events (so an SSE stream or a QR page's socket on one instance
// sees a wallet's step on another) and template changes (so no instance acts on a template another changed
// or deleted; the local cache would otherwise keep it up to a second). A template change is notified on the
// write's own connection, inside its transaction: PostgreSQL delivers it at the commit, and never for a
// rollback. An instance ignores its own messages. While the listening connection is down (it reconnects
// every second), messages are missed: the template cache's one-second life bounds what that costs.

const pg = lazyRequire<typeof Pg>('pg')

export const FEED_CHANNEL = 'vc_harness'
/** NOTIFY's payload limit is 8000 bytes; an event's webhook body (claims) can be larger and is left out. */
const MAX_PAYLOAD = 7900
const RECONNECT_MS = 1000
/** Events published in one turn of the event loop go out in one statement, at most this many (issue 38). */
const MAX_BATCH = 256
/** One NOTIFY per element of the array: the events of a turn in one round trip. */
const NOTIFY_ALL = CompiledQuery.raw('select pg_notify($1, payload) from unnest($2::text[]) as payload')

type Message =
  | { from: string; topic: 'event'; event: unknown }
  | { from: string; topic: 'template'; tenantId: string; id: string }

export class PostgresFeed implements ChangeFeed {
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
    const client = new (pg().Client)({ connectionString: this.url })
    client.on('notification', (n) => this.receive(n.payload))
    client.on('error', (error) => this.lost(client, error))
    client.on('end', () => this.lost(client))
    await client.connect()
    await client.query(`LISTEN ${FEED_CHANNEL}`)
    this.client = client
  }

  private lost(client: Pg.Client, error?: Error) {
    if (this.client !== client || this.closed) return
    this.client = undefined
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
    if (message.topic === 'template') this.onTemplate(message.tenantId, message.id)
    else if (message.topic === 'event') for (const listener of this.listeners) listener(message.event)
  }

  /** Notifies a template change on `db`, the connection (or transaction) that wrote it. */
  readonly announceTemplate = async (db: Kysely<unknown>, tenantId: string, id: string) => {
    const message: Message = { from: this.instance, topic: 'template', tenantId, id }
    await sql`select pg_notify(${FEED_CHANNEL}, ${JSON.stringify(message)})`.execute(db)
  }

  async publishEvent(event: unknown): Promise<void> {
    let payload = JSON.stringify({ from: this.instance, topic: 'event', event } satisfies Message)
    // The limit is in bytes: a claim of multi-byte characters is twice or more its length (issue 30).
    if (Buffer.byteLength(payload, 'utf8') > MAX_PAYLOAD) {
      const { webhook: _left, ...lean } = event as Record<string, unknown>
      payload = JSON.stringify({ from: this.instance, topic: 'event', event: lean } satisfies Message)
    }
    await new Promise<void>((resolve, reject) => {
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
    // What was published before the close still goes out, before the store's pool ends.
    this.flush()
    while (this.sending) await this.sending
    this.closed = true
    clearTimeout(this.retry)
    const client = this.client
    this.client = undefined
    await client?.end().catch(() => {})
  }
}
