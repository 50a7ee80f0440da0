import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { authRoutes } from './auth/routes.ts'
import type { ServiceConfig } from './config/index.ts'
import type { CheckMetrics } from './credentials/pipeline.ts'
import type { DataKeyring } from './crypto/data-key.ts'
import type { FaultRegistry } from './faults/index.ts'
import { installExchangeObserver, noteExchange } from './faults/observer.ts'
import { createHttpServer, registerApiDocs } from './http.ts'
import { issuanceRoutes } from './issuance/routes.ts'
import { oid4vciRoutes } from './oid4vci/routes.ts'
import { oid4vpRoutes } from './oid4vp/routes.ts'
import { portalRoutes } from './portal/routes.ts'
import { installWalletRateLimit } from './rate-limit.ts'
import type { RequestLogWriter } from './request-log.ts'
import { type AppServices, type BuiltServices, buildServices } from './services.ts'
import type { Store } from './store/index.ts'
import { streamRoutes } from './streams/routes.ts'
import type { TlsCredentials } from './tls.ts'
import { type Clock, systemClock } from './util/clock.ts'
import { Type } from './util/typebox.ts'
import { verificationRoutes } from './verification/routes.ts'

// buildApp: the HTTP layer (http.ts), the services (services.ts, plain construction, the one wiring
// place) and the routes that put one behind the other. server.ts listens.

export type { AppServices }

export interface AppOptions {
  config: ServiceConfig
  /** A store to use; when absent, one is opened in `dataDir` (default: in memory) and closed with the app. */
  store?: Store
  dataDir?: string
  clock?: Clock
  /** Base URL when the config has no publicUrl; a function because the port may be known only after listen. */
  publicUrl?: () => string
  logger?: FastifyServerOptions['logger']
  /** One concise line per wallet-facing and relying-party request (src/service/request-log.ts); default none. */
  requestLog?: RequestLogWriter
  /** Webhook outbox scan interval (ms) when other processes share the store (cluster workers); default none. */
  webhookPollMs?: number
  /** Other processes share the database it opens (cluster workers): no cache that must see their writes. */
  sharedStore?: boolean
  /** Told where the time of every credential check went (benchmarks); none by default. */
  checkMetrics?: CheckMetrics
  /**
   * Wallet test plans (src/service/faults): per tenant, an issuer or verifier that breaks one rule on
   * purpose, and a record of every wallet-facing exchange. Refused unless `webhooks.mode` is 'test'.
   */
  faults?: FaultRegistry
  /** The data key sealing private keys and webhook secrets in the store it opens (docs/security.md). */
  dataKeys?: DataKeyring
  /** Serve HTTPS with this certificate chain and key (`serve --tls-cert/--tls-key`, docs/phones.md). */
  tls?: TlsCredentials
}

declare module 'fastify' {
  interface FastifyInstance {
    services: AppServices
  }
}

/** Builds the service (plugins, routes, store, keys) without listening: tests drive it with `inject`. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, faults } = options
  const clock = options.clock ?? systemClock
  const app = createHttpServer(options)
  // Plain construction of every service (services.ts); Fastify's logger for their background work.
  let built: BuiltServices
  try {
    built = await buildServices({ ...options, clock, log: app.log })
  } catch (error) {
    await app.close()
    throw error
  }
  const { services } = built
  const { urls, auth, issuance, verification, oid4vp } = services
  app.addHook('onClose', () => built.close())
  // Root hooks, added before any route plugin: they run for the encapsulated wallet-facing plugins too.
  installWalletRateLimit(app, config.rateLimits, built.rateLimitExempt, clock)
  if (faults) installExchangeObserver(app, faults, clock)
  app.decorate('services', services)
  // Deliveries start once the app is ready and stop before the store closes; unfinished ones resume at the next start.
  app.addHook('onReady', async () => services.webhookDispatcher.start())
  app.addHook('preClose', async () => services.webhookDispatcher.stop())
  // The purge runs shortly after ready, then every retention.purgeIntervalSeconds; a run under way ends first.
  app.addHook('onReady', async () => services.retention.start())
  app.addHook('preClose', async () => services.retention.stop())

  await registerApiDocs(app, urls)

  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get(
      '/health',
      { schema: { hide: true, response: { 200: Type.Object({ status: Type.Literal('ok') }) } } },
      async () => ({ status: 'ok' as const }),
    )
  await app.register(authRoutes, { auth })
  await app.register(issuanceRoutes, {
    auth,
    issuance: services.issuance,
    urls,
    pageSize: { default: config.listPageSize, max: config.listMaxPageSize },
  })
  await app.register(oid4vciRoutes, {
    oid4vci: built.oid4vciEndpoints,
    metadata: built.metadata,
    statusLists: services.statusLists,
    issuerCertificates: built.issuerCertificates,
    authorization: built.authorization,
    dpop: built.dpop,
  })
  await app.register(verificationRoutes, { auth, verification, clock })
  await app.register(oid4vpRoutes, { oid4vp, ...(faults && { onResponse: noteExchange }) })
  await app.register(streamRoutes, {
    auth,
    store: services.store,
    issuance,
    verification,
    events: services.events,
    clock,
  })
  await app.register(portalRoutes, {
    prefix: '/portal/v1',
    auth,
    portal: services.portal,
    webhooks: services.webhooks,
    pageSize: { default: config.listPageSize, max: config.listMaxPageSize },
  })
  return app
}
