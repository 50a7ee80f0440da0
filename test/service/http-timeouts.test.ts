import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { parseConfig } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { demoConfig } from '../helpers.ts'

// Issue 19: 200 connections sending a body one byte every 2 s were held for 130 s, none closed. With the
// documented timeouts (docs/security.md "Timeouts and connections"), Node answers 408 and closes them.

async function serverWith(http: Record<string, unknown>): Promise<RunningServer> {
  const raw = structuredClone(demoConfig()) as unknown as Record<string, unknown>
  return startServer({ config: parseConfig({ ...raw, http }), dataDir: ':memory:', port: 0 })
}

interface Trickle {
  socket: Socket
  /** Everything the server sent, once it closed the connection. */
  closed: Promise<string>
  stop(): void
}

/** Sends `head`, then one byte of `rest` every `everyMs`: a client that never finishes on its own in time. */
function trickle(url: string, head: string, rest: string, everyMs: number): Trickle {
  const { port } = new URL(url)
  const socket = connect(Number(port), '127.0.0.1')
  let received = ''
  let sent = 0
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    received += chunk
  })
  socket.on('error', () => {})
  socket.write(head)
  const timer = setInterval(() => {
    if (sent < rest.length && socket.writable) socket.write(rest[sent++] ?? '')
  }, everyMs)
  const closed = new Promise<string>((resolve) =>
    socket.on('close', () => {
      clearInterval(timer)
      resolve(received)
    }),
  )
  return { socket, closed, stop: () => clearInterval(timer) }
}

/** Resolves with `promise`, or rejects after `ms`: the test's own bound, far above the configured timeout. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still open after ${ms} ms`)), ms)
  })
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer))
}

describe('HTTP timeouts and connection limits', () => {
  test('slow bodies and slow headers get 408 and their connections are closed (requestTimeoutMs, headersTimeoutMs)', async () => {
    const server = await serverWith({ requestTimeoutMs: 1000, headersTimeoutMs: 1000 })
    const clients: Trickle[] = []
    try {
      // 30 bytes at 300 ms each would take 9 s: far longer than the 1 s allowed.
      const body = 'grant_type=x&pre-authorized=yy'
      for (let i = 0; i < 10; i++) {
        clients.push(
          trickle(
            server.url,
            `POST /oid4vci/demo/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n`,
            body,
            300,
          ),
        )
      }
      clients.push(
        trickle(server.url, 'GET /health HTTP/1.1\r\n', 'Host: x\r\nX-Slow: 123456789\r\n\r\n', 300),
      )
      const answers = await within(Promise.all(clients.map((c) => c.closed)), 6_000, 'a slow client')
      for (const answer of answers)
        assert.match(answer, /^HTTP\/1\.1 408 /, answer || '(closed without an answer)')
      // The service still answers a well-behaved client.
      assert.equal((await fetch(`${server.url}/health`)).status, 200)
    } finally {
      for (const c of clients) c.stop()
      await server.close()
    }
  })

  test('beyond maxConnections a connection is refused; once one closes, a new one is served', async () => {
    const server = await serverWith({ maxConnections: 16 })
    const { port } = new URL(server.url)
    const open: Socket[] = []
    try {
      for (let i = 0; i < 16; i++) {
        const socket = connect(Number(port), '127.0.0.1')
        socket.on('error', () => {})
        await new Promise((resolve) => socket.once('connect', resolve))
        open.push(socket)
      }
      const extra = trickle(server.url, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n', '', 1000)
      assert.equal(await within(extra.closed, 5_000, 'the 17th connection'), '', 'closed without an answer')
      open.pop()?.destroy()
      // The server notices the close asynchronously: retry briefly until a slot is free.
      let status = 0
      for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
        status = await fetch(`${server.url}/health`, { headers: { connection: 'close' } })
          .then((r) => r.status)
          .catch(() => 0)
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 20))
      }
      assert.equal(status, 200)
    } finally {
      for (const socket of open) socket.destroy()
      await server.close()
    }
  })

  test('the defaults are documented values, and apply to the server', async () => {
    const server = await startServer({ config: demoConfig(), dataDir: ':memory:', port: 0 })
    try {
      const http = server.app.server
      assert.equal(http.requestTimeout, 30_000)
      assert.equal(http.headersTimeout, 10_000)
      assert.equal(http.keepAliveTimeout, 72_000)
      assert.equal(http.timeout, 120_000)
      assert.equal(http.maxConnections, 4096)
    } finally {
      await server.close()
    }
  })
})
