// The conformance harness's webhook receiver: a small HTTP server that records every delivery the
// service makes, checks its Standard Webhooks signature (https://www.standardwebhooks.com/) and answers
// as a scenario scripts it, so retry and timeout behaviour can be driven from the outside.
//
//   const receiver = await WebhookReceiver.start()
//   const hook = receiver.endpoint('degree issued')      // { url, path, secret }: configure the template
//   hook.respondWith({ status: 503, retryAfter: '1' })    // first attempt fails, then the default answer
//   const delivery = await hook.waitForEvent({ id: processId, status: 'SUCCESS', timeoutMs: 5000 })
//   await receiver.close()
//
// Each scenario takes its own endpoint (a fresh random path and a fresh secret), so scenarios running in
// parallel against one receiver never see each other's events.
//
// Signatures are checked here with node:crypto rather than with the `standardwebhooks` package: its
// `verify` reads the time from Date.now() with no way to pass a reference, while the service under test
// may run a shifted clock; it also decodes the body to a string before hashing it (a body that is not
// valid UTF-8 would be mangled). test/harness/webhook-receiver.test.ts cross-checks this verifier against the
// package on the same deliveries.

import { randomBytes, timingSafeEqual } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { WEBHOOK_SECRET_PREFIX, webhookSignature } from '../shared/webhook-signature.ts'

/** The body limit of a delivery: 1 MiB. Larger bodies are answered 413. */
export const MAX_BODY_BYTES = 1024 * 1024
/** The timestamp tolerance Standard Webhooks recommends (and the `standardwebhooks` package uses). */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60

// --- signatures ------------------------------------------------------------------------------------------

/** A fresh Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64')
}

// The signature of one message with one secret, as the service computes it (one implementation).
export { webhookSignature }

export interface SignatureInput {
  /** Current secrets of the endpoint: a signature made with any of them is accepted. */
  secrets: readonly string[]
  id: string | undefined
  timestamp: string | undefined
  /** The `webhook-signature` header: space-separated `version,signature` entries. */
  signature: string | undefined
  body: Buffer | string
  /** Receiver time in milliseconds since the epoch. */
  now: number
  toleranceSeconds?: number
}

/** secretIndex: which of the secrets matched (0 = the oldest still accepted). */
export type SignatureVerdict = { valid: true; secretIndex: number } | { valid: false; error: string }

/** Checks a delivery's signature headers the way the Standard Webhooks spec describes, with a given "now". */
export function verifyWebhookSignature(input: SignatureInput): SignatureVerdict {
  const missing = (
    [
      ['webhook-id', input.id],
      ['webhook-timestamp', input.timestamp],
      ['webhook-signature', input.signature],
    ] as const
  )
    .filter(([, value]) => value === undefined || value === '')
    .map(([name]) => name)
  if (missing.length > 0) return { valid: false, error: `missing header ${missing.join(', ')}` }
  const id = input.id as string
  const timestamp = input.timestamp as string
  const signature = input.signature as string

  // Integer seconds, without sign or leading zeros: what the sender signed is then exactly what we
  // parse (standardwebhooks' parseInt would accept "1700000000abc" and sign it as "1700000000").
  if (!/^(0|[1-9][0-9]*)$/.test(timestamp)) {
    return {
      valid: false,
      error: `bad timestamp: webhook-timestamp ${JSON.stringify(timestamp)} is not integer seconds`,
    }
  }
  const tolerance = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  const nowSeconds = Math.floor(input.now / 1000)
  const skew = Number(timestamp) - nowSeconds
  if (skew < -tolerance) {
    return {
      valid: false,
      error: `bad timestamp: too old, ${-skew} s behind the receiver clock (tolerance ${tolerance} s)`,
    }
  }
  if (skew > tolerance) {
    const hint = Number(timestamp) > 1e12 ? '; milliseconds instead of seconds?' : ''
    return {
      valid: false,
      error: `bad timestamp: too new, ${skew} s ahead of the receiver clock (tolerance ${tolerance} s${hint})`,
    }
  }

  const entries = signature.split(' ').filter((entry) => entry !== '')
  // Other versions (v1a: asymmetric ed25519) are skipped, as the spec says to skip unknown versions.
  const v1 = entries.filter((entry) => entry.startsWith('v1,')).map((entry) => entry.slice(3))
  if (v1.length === 0) {
    const versions = entries.map((entry) => entry.split(',')[0]).join(', ')
    return {
      valid: false,
      error: `no v1 signature in webhook-signature (versions seen: ${versions || 'none'})`,
    }
  }
  for (const [secretIndex, secret] of input.secrets.entries()) {
    // Compared as base64 text, like the reference library: Buffer.from(x, 'base64') would also accept
    // url-safe or unpadded variants, which a conforming sender never produces.
    const expected = Buffer.from(webhookSignature(secret, id, timestamp, input.body).slice(3))
    for (const candidate of v1) {
      const given = Buffer.from(candidate)
      if (given.length === expected.length && timingSafeEqual(given, expected))
        return { valid: true, secretIndex }
    }
  }
  return {
    valid: false,
    error: `no matching signature: ${v1.length} v1 signature(s) checked against ${input.secrets.length} secret(s)`,
  }
}

// --- deliveries and answers ------------------------------------------------------------------------------

/** Whether the answer the receiver planned actually reached the sender. */
export type AnswerOutcome = 'pending' | 'answered' | 'destroyed' | 'client-closed' | 'server-closed'

/** One request to an endpoint path, as received. */
export interface Delivery {
  /** Name of the endpoint it arrived on. */
  endpoint: string
  /** 1-based position among the endpoint's deliveries. */
  seq: number
  /** Receiver time (the injected clock) in milliseconds since the epoch. */
  receivedAt: number
  method: string
  /** Path including any query string. */
  path: string
  /** Header names lowercased; repeated headers joined with ", ". */
  headers: Record<string, string>
  rawBody: string
  bodyBytes: number
  /** The parsed body; undefined when empty or not JSON (then jsonError says why). */
  json: unknown
  jsonError?: string
  webhookId: string | undefined
  webhookTimestamp: string | undefined
  /** The `webhook-event` header (issuance.issued, verification.rejected, …) when the service sends it. */
  event: string | undefined
  signatureValid: boolean
  /** Why the signature was not accepted: missing header, bad timestamp, no matching signature, … */
  signatureError?: string
  /** The status the receiver answered (or is about to answer, when delayed); null when it dropped the connection. */
  answeredStatus: number | null
  /** Updated as the answer goes out: a delayed answer stays 'pending' until sent or the sender gives up. */
  answerOutcome: AnswerOutcome
}

/** A request to a path no endpoint owns: answered 404. */
export interface StrayRequest {
  receivedAt: number
  method: string
  path: string
}

/**
 * A scripted answer. Fields left out fall back to the default answer: 204 for a valid signature,
 * 400 `{"error":"invalid signature"}` otherwise.
 */
export interface ScriptedAnswer {
  status?: number
  /** Sent as the Retry-After header. */
  retryAfter?: string
  /** Sent as the Location header (for redirect scenarios). */
  location?: string
  headers?: Record<string, string>
  /** A string is sent as is; anything else as JSON. */
  body?: unknown
  /** Answer this late, e.g. to run into the sender's timeout. */
  delayMs?: number
  /** Drop the connection without any answer (after delayMs, if given). */
  destroy?: boolean
}

/** The JSON body of a delivery, section 6 of docs/interface.md. */
export interface WebhookEventBody {
  id: string
  subject: string
  status: 'SUCCESS' | 'REJECT'
  payload?: Record<string, unknown>
  verificationResult: { checks: string[]; warnings: string[]; errors: string[] }
}

export interface WaitOptions {
  timeoutMs?: number
  /** What is awaited, in words: it goes into the timeout message. */
  description?: string
}

/** How a wait ended without its delivery; `deliveries` are what had arrived by then. */
export class WebhookWaitError extends Error {
  override readonly name = 'WebhookWaitError'
  constructor(
    readonly code: 'timeout' | 'closed',
    message: string,
    readonly deliveries: readonly Delivery[],
  ) {
    super(message)
  }
}

/** `(delivery, seen)`: seen holds the endpoint's deliveries up to and including this one. */
export type DeliveryPredicate = (delivery: Delivery, seen: readonly Delivery[]) => boolean

const DEFAULT_WAIT_MS = 10_000

/** One line per delivery, for failure messages. */
export function describeDelivery(d: Delivery): string {
  const body = d.json as Partial<WebhookEventBody> | undefined
  const fields = [
    `#${d.seq} ${d.method}`,
    `webhook-id=${d.webhookId ?? '-'}`,
    d.event === undefined ? undefined : `event=${d.event}`,
    body && typeof body === 'object'
      ? `id=${String(body.id)} status=${String(body.status)}`
      : `body=${d.jsonError ?? 'empty'}`,
    d.signatureValid ? 'signature valid' : `signature invalid (${d.signatureError})`,
    d.answeredStatus === null ? 'connection dropped' : `answered ${d.answeredStatus}`,
  ]
  return fields.filter((f) => f !== undefined).join(' ')
}

interface EndpointHost {
  readonly closed: boolean
  url(path: string): string
  strays: readonly StrayRequest[]
  unregister(endpoint: WebhookEndpoint): void
}

/** A path of the receiver with its own secrets, deliveries and scripted answers. */
export class WebhookEndpoint {
  readonly url: string
  private readonly accepted: string[]
  private readonly received: Delivery[] = []
  private readonly script: ScriptedAnswer[] = []
  private always: ScriptedAnswer | undefined
  // 'delivery' on each recorded delivery, 'closed' when the receiver or the endpoint goes away.
  private readonly events = new EventEmitter().setMaxListeners(0)
  private disposed = false

  constructor(
    readonly name: string,
    readonly path: string,
    private readonly host: EndpointHost,
    secret: string,
  ) {
    this.url = host.url(path)
    this.accepted = [secret]
  }

  /** The newest secret: the one to configure. */
  get secret(): string {
    return this.accepted[this.accepted.length - 1] as string
  }

  /** Every secret a delivery may currently be signed with, oldest first. */
  get secrets(): readonly string[] {
    return [...this.accepted]
  }

  get deliveries(): readonly Delivery[] {
    return [...this.received]
  }

  /** Adds a fresh secret and returns it; the previous ones stay accepted until removed. */
  rotate(): string {
    const secret = generateWebhookSecret()
    this.accepted.push(secret)
    return secret
  }

  /** Stops accepting a secret (the end of a rotation). The last secret cannot be removed. */
  removeSecret(secret: string): void {
    const index = this.accepted.indexOf(secret)
    if (index === -1) throw new Error(`endpoint "${this.name}" has no such secret`)
    if (this.accepted.length === 1) throw new Error(`endpoint "${this.name}" needs at least one secret`)
    this.accepted.splice(index, 1)
  }

  /** Queues answers, consumed one per delivery; then respondAlways's answer, then the default. */
  respondWith(...answers: ScriptedAnswer[]): this {
    this.script.push(...answers)
    return this
  }

  /** The answer once the queue is empty; undefined restores the default. */
  respondAlways(answer: ScriptedAnswer | undefined): this {
    this.always = answer
    return this
  }

  /** Deliveries whose JSON body carries this process or session id. */
  deliveriesFor(id: string): Delivery[] {
    return this.received.filter((d) => bodyOf(d)?.id === id)
  }

  /**
   * Deliveries grouped by webhook-id: retries of one event share it, so one entry is one event however
   * often it was attempted. With an id, only deliveries whose body carries it.
   */
  distinctEvents(id?: string): Map<string, Delivery[]> {
    const groups = new Map<string, Delivery[]>()
    for (const d of id === undefined ? this.received : this.deliveriesFor(id)) {
      const key = d.webhookId ?? '(no webhook-id)'
      groups.set(key, [...(groups.get(key) ?? []), d])
    }
    return groups
  }

  /**
   * The first delivery matching the predicate: already received ones first, then as they arrive.
   * Rejects with a WebhookWaitError after timeoutMs, or when the receiver closes.
   */
  waitFor(predicate: DeliveryPredicate, options: WaitOptions = {}): Promise<Delivery> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS
    const description = options.description ?? 'a delivery matching the predicate'
    return new Promise<Delivery>((resolve, reject) => {
      const matches = (d: Delivery) => predicate(d, this.received.slice(0, d.seq))
      try {
        const found = this.received.find(matches)
        if (found) return resolve(found)
      } catch (error) {
        return reject(error)
      }
      if (this.disposed || this.host.closed) return reject(this.closedError(description))

      const cleanup = () => {
        clearTimeout(timer)
        this.events.off('delivery', onDelivery)
        this.events.off('closed', onClosed)
      }
      const onDelivery = (d: Delivery) => {
        let matched: boolean
        try {
          matched = matches(d)
        } catch (error) {
          cleanup()
          return reject(error)
        }
        if (matched) {
          cleanup()
          resolve(d)
        }
      }
      const onClosed = () => {
        cleanup()
        reject(this.closedError(description))
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(
          new WebhookWaitError(
            'timeout',
            `timed out after ${timeoutMs} ms on webhook endpoint "${this.name}" (${this.path}) waiting for ${description}; ${this.summary()}`,
            this.deliveries,
          ),
        )
      }, timeoutMs)
      this.events.on('delivery', onDelivery)
      this.events.on('closed', onClosed)
    })
  }

  /** A validly signed delivery whose JSON body has this id and status (and, if given, webhook-event). */
  waitForEvent(options: {
    id: string
    status: 'SUCCESS' | 'REJECT'
    event?: string
    timeoutMs?: number
  }): Promise<Delivery> {
    const { id, status, event } = options
    return this.waitFor(
      (d) =>
        d.signatureValid &&
        bodyOf(d)?.id === id &&
        bodyOf(d)?.status === status &&
        (event === undefined || d.event === event),
      {
        timeoutMs: options.timeoutMs,
        description: `a validly signed delivery with id=${id} status=${status}${event ? ` event=${event}` : ''}`,
      },
    )
  }

  /** What arrived, one delivery per line (and the receiver's strays), for failure messages. */
  summary(): string {
    const lines = [`received ${this.received.length} deliveries${this.received.length ? ':' : ''}`]
    for (const d of this.received) lines.push(`  ${describeDelivery(d)}`)
    const strays = this.host.strays
    if (strays.length > 0) {
      lines.push(
        `receiver also got ${strays.length} request(s) to unknown paths: ${strays.map((s) => `${s.method} ${s.path}`).join(', ')}`,
      )
    }
    return lines.join('\n')
  }

  /** Forgets the endpoint: later requests to its path are strays, pending waits reject. */
  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    this.host.unregister(this)
    this.events.emit('closed')
  }

  /** @internal Records a delivery and wakes the waits. */
  record(delivery: Omit<Delivery, 'seq' | 'endpoint'>): Delivery {
    const full: Delivery = { ...delivery, endpoint: this.name, seq: this.received.length + 1 }
    this.received.push(full)
    this.events.emit('delivery', full)
    return full
  }

  /** @internal The next scripted answer, if any. */
  nextAnswer(): ScriptedAnswer | undefined {
    return this.script.shift() ?? this.always
  }

  /** @internal */
  receiverClosed(): void {
    this.events.emit('closed')
  }

  private closedError(description: string): WebhookWaitError {
    return new WebhookWaitError(
      'closed',
      `receiver closed while waiting on webhook endpoint "${this.name}" (${this.path}) for ${description}; ${this.summary()}`,
      this.deliveries,
    )
  }
}

function bodyOf(d: Delivery): Partial<WebhookEventBody> | undefined {
  return d.json !== null && typeof d.json === 'object' ? (d.json as Partial<WebhookEventBody>) : undefined
}

// --- the server --------------------------------------------------------------------------------------------

export interface WebhookReceiverOptions {
  host?: string
  /** 0 (default) picks a free port. */
  port?: number
  /** The address the service reaches the receiver at, when not the bound one (a tunnel, a container name). */
  publicUrl?: string
  /** Reference time in ms for the timestamp tolerance, e.g. the service's shifted clock. Default Date.now. */
  now?: () => number
  toleranceSeconds?: number
}

export interface EndpointOptions {
  /** Use this secret (`whsec_` + base64) instead of generating one. */
  secret?: string
}

interface Answer {
  status: number
  headers: Record<string, string>
  body: string | undefined
  delayMs: number
  destroy: boolean
}

export class WebhookReceiver implements EndpointHost {
  /** Requests to paths no endpoint owns. */
  readonly strays: StrayRequest[] = []
  private readonly routes = new Map<string, WebhookEndpoint>()
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly now: () => number
  private readonly toleranceSeconds: number
  private readonly base: string
  private readonly basePath: string
  private isClosed = false
  private closing: Promise<void> | undefined

  private constructor(
    private readonly server: Server,
    options: WebhookReceiverOptions,
  ) {
    this.now = options.now ?? Date.now
    this.toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
    const address = server.address() as AddressInfo
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
    this.base = (options.publicUrl ?? `http://${host}:${address.port}`).replace(/\/+$/, '')
    // A public URL with a path (https://tunnel.example/hooks): a proxy may forward that prefix or strip it.
    this.basePath = new URL(this.base).pathname.replace(/\/+$/, '')
  }

  static async start(options: WebhookReceiverOptions = {}): Promise<WebhookReceiver> {
    const server = createServer()
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.off('error', reject)
        resolve()
      })
    })
    const receiver = new WebhookReceiver(server, options)
    server.on('request', (req, res) => {
      receiver.handle(req, res).catch((error: unknown) => {
        // A bug here must not take the harness down; answer 500 so the sender sees something is off.
        if (!res.headersSent) res.writeHead(500).end(String(error))
        else res.destroy()
      })
    })
    return receiver
  }

  get closed(): boolean {
    return this.isClosed
  }

  /** The receiver's URL for a path: publicUrl when given, else the bound http://host:port. */
  url(path = '/'): string {
    return this.base + (path.startsWith('/') ? path : `/${path}`)
  }

  /**
   * A new endpoint: a fresh random path under /wh/ (with the name in it, for logs) and a fresh secret,
   * unless one is given (a template of an external deployment whose secret is already set).
   */
  endpoint(name?: string, options: EndpointOptions = {}): WebhookEndpoint {
    if (this.isClosed) throw new Error('webhook receiver is closed')
    if (options.secret !== undefined && !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(options.secret)) {
      throw new Error('webhook secret must be whsec_ followed by base64')
    }
    const slug = (name ?? '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 40)
    const token = randomBytes(12).toString('base64url')
    const path = `/wh/${slug ? `${slug}-` : ''}${token}`
    const endpoint = new WebhookEndpoint(name ?? path, path, this, options.secret ?? generateWebhookSecret())
    this.routes.set(path, endpoint)
    return endpoint
  }

  get endpoints(): readonly WebhookEndpoint[] {
    return [...this.routes.values()]
  }

  /** @internal */
  unregister(endpoint: WebhookEndpoint): void {
    if (this.routes.get(endpoint.path) === endpoint) this.routes.delete(endpoint.path)
  }

  /** Closes the server: open connections (delayed answers included) are destroyed, pending waits reject. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.isClosed = true
      for (const timer of this.timers) clearTimeout(timer)
      this.timers.clear()
      this.server.close(() => resolve())
      // Keep-alive and delayed-answer sockets would otherwise hold close() open.
      this.server.closeAllConnections()
      for (const endpoint of this.routes.values()) endpoint.receiverClosed()
    })
    return this.closing
  }

  private route(pathname: string): WebhookEndpoint | undefined {
    const direct = this.routes.get(pathname)
    if (direct || !this.basePath || !pathname.startsWith(`${this.basePath}/`)) return direct
    return this.routes.get(pathname.slice(this.basePath.length))
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAt = this.now()
    const target = req.url ?? '/'
    const pathname = new URL(target, 'http://receiver').pathname
    const body = await readBody(req, MAX_BODY_BYTES)
    if (body === undefined) return // the sender went away mid-body: nothing to record or answer
    const method = req.method ?? 'GET'

    const endpoint = this.route(pathname)
    if (!endpoint) {
      this.strays.push({ receivedAt, method, path: target })
      sendJson(res, 404, { error: 'unknown webhook endpoint' })
      return
    }

    const headers: Record<string, string> = {}
    for (const [name, values] of Object.entries(req.headersDistinct)) {
      if (values) headers[name] = values.join(', ')
    }
    const single = (name: string) => {
      const values = req.headersDistinct[name]
      return values && values.length === 1 ? values[0] : values?.join(', ')
    }

    let verdict: SignatureVerdict
    if (body.tooLarge) {
      verdict = { valid: false, error: `body of ${body.size} bytes exceeds the ${MAX_BODY_BYTES} byte limit` }
    } else if ((req.headersDistinct['webhook-id']?.length ?? 0) > 1) {
      verdict = { valid: false, error: 'webhook-id header sent more than once' }
    } else if ((req.headersDistinct['webhook-timestamp']?.length ?? 0) > 1) {
      verdict = { valid: false, error: 'webhook-timestamp header sent more than once' }
    } else {
      verdict = verifyWebhookSignature({
        secrets: endpoint.secrets,
        id: single('webhook-id'),
        timestamp: single('webhook-timestamp'),
        // Repeated signature headers are unambiguous: their entries are simply all candidates.
        signature: req.headersDistinct['webhook-signature']?.join(' '),
        body: body.bytes,
        now: this.now(),
        toleranceSeconds: this.toleranceSeconds,
      })
    }

    const rawBody = body.tooLarge ? '' : body.bytes.toString('utf8')
    let json: unknown
    let jsonError: string | undefined
    if (rawBody !== '') {
      try {
        json = JSON.parse(rawBody)
      } catch (error) {
        jsonError = `not JSON: ${(error as Error).message}`
      }
    }

    // Protocol-level refusals win over the script and do not consume it.
    let answer: Answer
    if (body.tooLarge) answer = plain(413, { error: 'body too large' }, { connection: 'close' })
    else if (method !== 'POST') answer = plain(405, { error: 'method not allowed' }, { allow: 'POST' })
    else answer = resolveAnswer(endpoint.nextAnswer(), verdict.valid)

    const delivery = endpoint.record({
      receivedAt,
      method,
      path: target,
      headers,
      rawBody,
      bodyBytes: body.size,
      json,
      ...(jsonError === undefined ? {} : { jsonError }),
      webhookId: single('webhook-id'),
      webhookTimestamp: single('webhook-timestamp'),
      event: single('webhook-event'),
      signatureValid: verdict.valid,
      ...(verdict.valid ? {} : { signatureError: verdict.error }),
      answeredStatus: answer.destroy ? null : answer.status,
      answerOutcome: 'pending',
    })
    this.answer(req, res, answer, delivery)
  }

  private answer(req: IncomingMessage, res: ServerResponse, answer: Answer, delivery: Delivery): void {
    res.on('finish', () => {
      delivery.answerOutcome = 'answered'
    })
    res.on('close', () => {
      if (delivery.answerOutcome === 'pending')
        delivery.answerOutcome = this.isClosed ? 'server-closed' : 'client-closed'
    })
    const send = () => {
      if (res.destroyed || res.writableEnded) return
      if (answer.destroy) {
        delivery.answerOutcome = 'destroyed'
        req.socket.destroy()
        return
      }
      res.writeHead(answer.status, answer.headers).end(answer.body)
    }
    if (answer.delayMs <= 0) {
      send()
      return
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      send()
    }, answer.delayMs)
    // The close() path clears it too; unref so a forgotten receiver cannot keep the process alive.
    timer.unref()
    this.timers.add(timer)
    res.on('close', () => {
      clearTimeout(timer)
      this.timers.delete(timer)
    })
  }
}

// --- helpers -----------------------------------------------------------------------------------------------

interface ReadBody {
  bytes: Buffer
  size: number
  tooLarge: boolean
}

/**
 * Reads the body up to `limit` bytes. Beyond it the rest is drained and discarded, so the 413 reaches a
 * sender that is still writing instead of a reset connection; past 16× the limit the connection is
 * dropped. Undefined when the sender aborted.
 */
async function readBody(req: IncomingMessage, limit: number): Promise<ReadBody | undefined> {
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length
      if (size > limit * 16) {
        req.socket.destroy()
        return undefined
      }
      if (size <= limit) chunks.push(chunk)
    }
  } catch {
    return undefined
  }
  return { bytes: size > limit ? Buffer.alloc(0) : Buffer.concat(chunks), size, tooLarge: size > limit }
}

function plain(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return {
    status,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    delayMs: 0,
    destroy: false,
  }
}

function resolveAnswer(scripted: ScriptedAnswer | undefined, signatureValid: boolean): Answer {
  const fallback: Answer = signatureValid
    ? { status: 204, headers: {}, body: undefined, delayMs: 0, destroy: false }
    : plain(400, { error: 'invalid signature' })
  if (!scripted) return fallback
  // A scripted status replaces the default answer's body too; only delayMs/destroy keep it.
  const ownStatus = scripted.status !== undefined
  const headers: Record<string, string> = { ...(ownStatus ? {} : fallback.headers), ...scripted.headers }
  if (scripted.retryAfter !== undefined) headers['retry-after'] = scripted.retryAfter
  if (scripted.location !== undefined) headers.location = scripted.location
  let body = ownStatus ? undefined : fallback.body
  if (scripted.body !== undefined) {
    body = typeof scripted.body === 'string' ? scripted.body : JSON.stringify(scripted.body)
    if (typeof scripted.body !== 'string') headers['content-type'] ??= 'application/json'
  }
  return {
    status: scripted.status ?? fallback.status,
    headers,
    body,
    delayMs: scripted.delayMs ?? 0,
    destroy: scripted.destroy ?? false,
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}
