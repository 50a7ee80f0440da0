// The concise request log of `vc-harness serve`: one line per wallet-facing and relying-party request,
//
//   2026-11-22T10:15:00.123Z GET /oid4vci/demo/credential-offer/3f1c2b7a… 200 2.4 ms
//
// (time, method, path, status, milliseconds until the answer was sent). It is off in buildApp unless asked
// for (tests stay quiet); `serve --quiet` turns it off and `--log-level` replaces it with pino's full logs.
//
// No secret reaches it: no header, no body, no query string (`?…` says one was there: cursors, and whatever a
// wallet sends). Ids in paths are capabilities: a process id is the last segment of its credential offer
// URL, and whoever has that URL can fetch the offer and its pre-authorized code; a session id opens its
// request object and response endpoint. So every UUID-shaped segment, and any segment longer than
// MAX_SEGMENT, is cut to its first 8 characters: enough to tell flows apart in the log, not to use one
// (a v4 UUID keeps 90 unknown random bits). The pages and assets of /docs and /demo, and /health, are not
// logged: they are neither wallet-facing nor relying-party calls (the demo's backend calls the API over
// HTTP like any relying party, and those calls are logged).

import type { FastifyInstance, FastifyServerOptions } from 'fastify'

export type RequestLogWriter = (line: string) => void

/** Writes each line to stdout (the default writer of `serve`, and of each worker with --workers). */
export const stdoutRequestLog: RequestLogWriter = (line) => {
  process.stdout.write(`${line}\n`)
}

const UNLOGGED = ['/docs', '/demo', '/health', '/favicon.ico']
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const MAX_SEGMENT = 40
const KEPT = 8

function segment(text: string): string {
  return UUID.test(text) || text.length > MAX_SEGMENT ? `${text.slice(0, KEPT)}…` : text
}

/**
 * The path as the log shows it, or undefined for a request that is not logged: query string dropped,
 * capability ids shortened (see above).
 */
export function loggedPath(url: string): string | undefined {
  const path = url.split(/[?#]/, 1)[0] ?? url
  if (UNLOGGED.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) return undefined
  return redactedPath(url)
}

/** The URL with its query string dropped and capability ids shortened: what any log may show of a request. */
export function redactedPath(url: string): string {
  const query = url.search(/[?#]/)
  const path = query < 0 ? url : url.slice(0, query)
  return `${path.split('/').map(segment).join('/')}${query < 0 ? '' : '?…'}`
}

/**
 * pino's full logs (`serve --log-level L`) under the same rule: Fastify's request serializer would write the
 * whole URL, offer URLs (and so their pre-authorized codes) included.
 */
export function withRedactedUrls(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger || typeof logger !== 'object') return logger
  return {
    ...logger,
    serializers: {
      req: (request: {
        method: string
        url: string
        host?: string
        ip?: string
        socket?: { remotePort?: number }
      }) => ({
        method: request.method,
        url: redactedPath(request.url),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
      ...(logger as { serializers?: Record<string, unknown> }).serializers,
    },
  } as FastifyServerOptions['logger']
}

/** One line of the log. */
export function requestLogLine(at: Date, method: string, url: string, status: number, ms: number) {
  const path = loggedPath(url)
  return path === undefined
    ? undefined
    : `${at.toISOString()} ${method} ${path} ${status} ${ms.toFixed(1)} ms`
}

/**
 * Installs the log on the root instance, before any route plugin is registered, so that it sees every
 * route (encapsulated plugins included) and every 404.
 */
export function installRequestLog(app: FastifyInstance, write: RequestLogWriter) {
  app.addHook('onResponse', async (request, reply) => {
    const line = requestLogLine(new Date(), request.method, request.url, reply.statusCode, reply.elapsedTime)
    if (line !== undefined) write(line)
  })
}
