import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { buildApp } from './app.ts'
import type { ServiceConfig } from './config/index.ts'
import type { DataKeyring } from './crypto/data-key.ts'
import type { RequestLogWriter } from './request-log.ts'
import type { Store } from './store/index.ts'
import { certificateHost, type TlsCredentials, tlsLeaf } from './tls.ts'
import type { Clock } from './util/clock.ts'

export interface ServerOptions {
  config: ServiceConfig
  host?: string
  port?: number
  /** Folder of the SQLite database, or ':memory:'. */
  dataDir: string
  logLevel?: string
  /** One concise line per wallet-facing and relying-party request (`vc-harness serve` by default). */
  requestLog?: RequestLogWriter
  /** Injected time source (the conformance harness moves it to test expiry). Default: the system clock. */
  clock?: Clock
  /**
   * Routes served next to the service (e.g. the demo relying party), registered before listening. They get
   * the base URL the service listens on once it is known.
   */
  plugins?: { plugin: FastifyPluginAsync<{ baseUrl: () => string }>; prefix?: string }[]
  /** Scan the webhook outbox at least this often (ms): set when other processes share the database. */
  webhookPollMs?: number
  /** Other processes share the database (cluster workers): see AppOptions.sharedStore. */
  sharedStore?: boolean
  /** The data key of the store (docs/security.md); default: the store's own choice (openSqliteStore). */
  dataKeys?: DataKeyring
  /** A store opened by the caller (PostgreSQL: store/postgres.ts) instead of SQLite in `dataDir`; the caller closes it. */
  store?: Store
  /**
   * Listen with HTTPS (docs/phones.md). Without a configured publicUrl, wallets are then sent to
   * https://<the certificate's first name>:<port>: the name a phone reaches and the certificate proves.
   */
  tls?: TlsCredentials
}

export interface RunningServer {
  app: FastifyInstance
  /** The base URL the service listens on, e.g. http://127.0.0.1:8080 (https:// with TLS). */
  url: string
  /** The base URL wallets are sent to: config.publicUrl, else (TLS) the certificate's name, else `url`. */
  publicUrl: string
  close(): Promise<void>
}

/** Builds the app, listens, and reports the bound URL; `close` drains connections and closes the store. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  let listeningUrl = ''
  let defaultPublicUrl = ''
  const app = await buildApp({
    config: options.config,
    dataDir: options.dataDir,
    ...(options.store ? { store: options.store } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    publicUrl: () => defaultPublicUrl,
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.webhookPollMs !== undefined ? { webhookPollMs: options.webhookPollMs } : {}),
    ...(options.sharedStore ? { sharedStore: true } : {}),
    logger: options.logLevel ? { level: options.logLevel } : false,
    ...(options.requestLog ? { requestLog: options.requestLog } : {}),
    ...(options.dataKeys ? { dataKeys: options.dataKeys } : {}),
  })
  for (const { plugin, prefix } of options.plugins ?? []) {
    await app.register(plugin, { baseUrl: () => listeningUrl, ...(prefix ? { prefix } : {}) })
  }
  const host = options.host ?? '127.0.0.1'
  try {
    await app.listen({ host, port: options.port ?? 8080 })
  } catch (error) {
    // Port in use, not allowed, or not an address of this machine: nothing is left open behind the error.
    await app.close().catch(() => {})
    throw error
  }
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : options.port
  const bracket = (h: string) => (h.includes(':') ? `[${h}]` : h)
  listeningUrl = `${options.tls ? 'https' : 'http'}://${bracket(host)}:${port}`
  defaultPublicUrl = listeningUrl
  if (options.tls) {
    // The name the certificate proves (a dNSName first: OpenID4VP's x509_san_dns needs one), not the
    // listening address: with --host 0.0.0.0 that is no URL at all, and a loopback one no phone reaches.
    const leaf = tlsLeaf(options.tls)
    const name = certificateHost(leaf) ?? leaf.ips[0]
    if (name !== undefined) defaultPublicUrl = `https://${bracket(name)}:${port}`
  }
  return {
    app,
    url: listeningUrl,
    publicUrl: options.config.publicUrl ?? defaultPublicUrl,
    close: () => drainAndClose(app),
  }
}

/** How long in-flight requests get to finish on close before their connections are cut. */
const DRAIN_MS = 5_000

/**
 * Closes gracefully: in-flight requests finish, and keep-alive connections are closed as soon as they
 * turn idle (Node closes only those idle when close starts; a busy one would otherwise linger for the
 * keep-alive timeout), with a hard cut after DRAIN_MS.
 */
async function drainAndClose(app: FastifyInstance) {
  const idle = setInterval(() => app.server.closeIdleConnections(), 50)
  const cut = setTimeout(() => app.server.closeAllConnections(), DRAIN_MS)
  try {
    await app.close()
  } finally {
    clearInterval(idle)
    clearTimeout(cut)
  }
}
