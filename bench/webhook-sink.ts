// The bench's webhook receiver: checks every delivery's Standard Webhooks signature (the same check as the
// conformance receiver) and lets a flow wait for the events of its process and session. Unlike the
// conformance receiver it keeps nothing once a flow has taken its events, so a long run stays flat.

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { MAX_BODY_BYTES, verifyWebhookSignature } from '../src/harness/webhook-receiver.ts'

interface Arrival {
  event: string
  status: string
  at: number
}

/** The URL deliveries are sent to, under the base URL the sink is reached at. */
export function sinkUrl(base: string): string {
  return new URL('hooks', `${base.replace(/\/+$/, '')}/`).href
}

export class WebhookSink {
  private readonly arrived = new Map<string, Arrival>()
  private readonly waiting = new Map<string, (arrival: Arrival) => void>()
  private secret = ''
  /** Deliveries refused: bad signature, unparsable body. They are answered 400 and counted here. */
  refused = 0
  private readonly sweep: NodeJS.Timeout

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {
    // Events nobody waits for (a flow that failed before its webhook step) are dropped after a minute.
    this.sweep = setInterval(() => {
      const before = Date.now() - 60_000
      for (const [id, arrival] of this.arrived) if (arrival.at < before) this.arrived.delete(id)
    }, 10_000).unref()
  }

  /**
   * Listens on `host:port` (default 127.0.0.1, a free port). `publicUrl`: where the target reaches the sink
   * when that is not the bound address (`--target external`, the profile's `receiver.public_url`).
   */
  static async start(at: { host?: string; port?: number; publicUrl?: string } = {}): Promise<WebhookSink> {
    let sink: WebhookSink | undefined
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      let size = 0
      req.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size <= MAX_BODY_BYTES) chunks.push(chunk)
      })
      req.on('end', () => {
        const status = sink?.accept(req.headers, Buffer.concat(chunks)) ?? 503
        res.writeHead(status).end()
      })
    })
    server.keepAliveTimeout = 30_000
    const host = at.host ?? '127.0.0.1'
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(at.port ?? 0, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    // Without a public URL the sink is reached where it listens (a wildcard address: over loopback).
    const reach = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host
    const base = at.publicUrl ?? `http://${reach}:${(server.address() as AddressInfo).port}`
    sink = new WebhookSink(server, sinkUrl(base))
    return sink
  }

  /** The secret deliveries must be signed with (known once the job arrives). */
  useSecret(secret: string): void {
    this.secret = secret
  }

  private accept(headers: NodeJS.Dict<string | string[]>, body: Buffer): number {
    const header = (name: string) => {
      const value = headers[name]
      return Array.isArray(value) ? value[0] : value
    }
    const verdict = verifyWebhookSignature({
      secrets: this.secret ? [this.secret] : [],
      id: header('webhook-id'),
      timestamp: header('webhook-timestamp'),
      signature: header('webhook-signature'),
      body,
      now: Date.now(),
    })
    let parsed: { id?: unknown; status?: unknown }
    try {
      parsed = JSON.parse(body.toString('utf8'))
    } catch {
      parsed = {}
    }
    if (!verdict.valid || typeof parsed.id !== 'string') {
      this.refused++
      return 400
    }
    const arrival = { event: header('webhook-event') ?? '', status: String(parsed.status), at: Date.now() }
    const waiter = this.waiting.get(parsed.id)
    if (waiter) {
      this.waiting.delete(parsed.id)
      waiter(arrival)
    } else this.arrived.set(parsed.id, arrival)
    return 204
  }

  /** The first event for process or session `id`; rejects after `timeoutMs`. */
  waitFor(id: string, timeoutMs: number): Promise<Arrival> {
    const there = this.arrived.get(id)
    if (there) {
      this.arrived.delete(id)
      return Promise.resolve(there)
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id)
        reject(new Error(`no webhook for ${id} within ${timeoutMs} ms (refused so far: ${this.refused})`))
      }, timeoutMs)
      this.waiting.set(id, (arrival) => {
        clearTimeout(timer)
        resolve(arrival)
      })
    })
  }

  close(): Promise<void> {
    clearInterval(this.sweep)
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}
