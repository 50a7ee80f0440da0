import { createServer, type IncomingMessage, type RequestListener } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { TlsCredentials } from '../tls.ts'

// "Another origin" for the response-uri-foreign-origin fault: a second listener of the same app on another
// port (and, for x509_san_dns, another host name), so a careless wallet that posts its answer to a
// response_uri its client identifier does not allow still reaches the session, and the judge sees it did.
// Requests that came through it are marked so the observer records them as origin 'foreign'.

const foreign = new WeakSet<IncomingMessage>()

/** Whether a request arrived through a foreign-origin listener (read by the exchange observer). */
export const cameThroughForeignOrigin = (raw: IncomingMessage): boolean => foreign.has(raw)

export interface ForeignOriginOptions {
  /** The address to bind, e.g. '127.0.0.1' or '127.0.0.2'. */
  host: string
  /** Default 0: any free port. */
  port?: number
  /**
   * The host name the returned URL names, when it is not `host` (e.g. bind 127.0.0.1, announce 'localhost').
   * x509_san_dns compares host names, not ports: its foreign origin must differ from the public one in the
   * host, not only the port.
   */
  urlHost?: string
  /** Serve HTTPS with the service's own certificate (the public URL is https, so the foreign one is too). */
  tls?: TlsCredentials
}

export interface ForeignOrigin {
  /** scheme://host:port of the listener, no trailing slash: set it as `registry.foreignOrigin`. */
  url: string
  close(): Promise<void>
}

/**
 * Starts a second Node http server that hands every request to `app` (Fastify's public `routing` handler);
 * the app is made ready first. Close it before the app.
 */
export async function startForeignOrigin(
  app: FastifyInstance,
  options: ForeignOriginOptions,
): Promise<ForeignOrigin> {
  await app.ready()
  const handler: RequestListener = (req, res) => {
    foreign.add(req)
    app.routing(req, res)
  }
  const server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, handler)
    : createServer(handler)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  const host = options.urlHost ?? options.host
  const url = `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`
  return {
    url,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()))
        server.closeAllConnections()
      }),
  }
}
