// A small round-robin HTTP proxy: several service instances behind one address (issue 21). Request n goes
// to upstream n mod N, whatever it is (a wallet's step, a relying party's call, an SSE stream), so a flow's
// consecutive steps land on different instances and any state one instance keeps to itself shows up.
// Answers are piped as they come: a stream (SSE) reaches the client event by event. Request bodies are
// read whole first (see forward).
//
// Started before its upstreams: the instances need the proxy's URL as their public URL (it goes into
// offers and requests) before they listen, so the upstream list is set afterwards (setUpstreams).
// Used by the child target with several instances (child-target.ts) and by test/service/store/postgres.test.ts.

import {
  Agent,
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'

export interface RoundRobinProxy {
  /** The proxy's base URL, http://127.0.0.1:<port>, without a trailing slash. */
  readonly url: string
  /** Requests forwarded to each upstream since the last setUpstreams (index = upstream index). */
  readonly served: number[]
  /** The upstream base URLs, in turn order; replaces the list and resets the turn and the counts. */
  setUpstreams(urls: readonly string[]): void
  /** Stops listening and ends every open exchange (streams included), both towards clients and upstreams. */
  close(): Promise<void>
}

// Hop-by-hop headers (RFC 9110 §7.6.1) concern one connection, not the exchange: not forwarded.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase()),
  )
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name) && !named.has(name)),
  )
}

/** Starts the proxy on 127.0.0.1 and a free port, with no upstream yet (requests then get 503). */
export async function startRoundRobinProxy(upstreams: readonly string[] = []): Promise<RoundRobinProxy> {
  let targets = upstreams.map((u) => new URL(u))
  let served = targets.map(() => 0)
  let next = 0
  const agent = new Agent({ keepAlive: true })
  const open = new Set<ClientRequest>()

  const server: Server = createServer((req, res) => {
    if (targets.length === 0) {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('round-robin proxy: no upstream yet\n')
      return
    }
    const i = next++ % targets.length
    const upstream = targets[i] as URL
    served[i] = (served[i] ?? 0) + 1
    // The request body is read whole, then written at once: piped chunk by chunk, the 600 KiB direct_post
    // of limits.feature met an instance that answers 400 early and closes, so the upload broke (EPIPE), its
    // answer was lost (502), and the client, left mid-upload, stalled its connection for the next scenario.
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => forward(upstream, req, res, Buffer.concat(chunks)))
  })

  function forward(upstream: URL, req: IncomingMessage, res: ServerResponse, body: Buffer) {
    if (res.destroyed) return
    const headers = endToEnd(req.headers)
    if (body.length > 0 || headers['content-length'] !== undefined)
      headers['content-length'] = String(body.length)
    const exchange = httpRequest({
      agent,
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      // Host stays the proxy's, as behind a real load balancer.
      headers,
    })
    open.add(exchange)
    exchange.on('close', () => open.delete(exchange))
    exchange.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers))
      // An event stream may hold its first event back: the client learns of the answer at once.
      res.flushHeaders()
      answer.pipe(res)
      answer.on('error', () => res.destroy())
    })
    exchange.on('error', (error) => {
      if (res.headersSent) res.destroy()
      else
        res
          .writeHead(502, { 'content-type': 'text/plain' })
          .end(`round-robin proxy: upstream ${upstream.origin}: ${error.message}\n`)
    })
    // A client that goes away (a closed SSE stream) closes its exchange upstream too.
    res.on('close', () => {
      if (!res.writableFinished) exchange.destroy()
    })
    exchange.end(body)
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`

  let closing: Promise<void> | undefined
  return {
    url,
    get served() {
      return served
    },
    setUpstreams(urls) {
      targets = urls.map((u) => new URL(u))
      served = targets.map(() => 0)
      next = 0
    },
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeAllConnections()
        for (const forward of open) forward.destroy()
        agent.destroy()
        await closed
      })()
      return closing
    },
  }
}
