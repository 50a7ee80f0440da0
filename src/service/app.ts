import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ValidateFunction } from 'ajv'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { authRoutes } from './auth/routes.ts'
import { SECURITY_SCHEMES } from './auth/security.ts'
import { AuthService } from './auth/service.ts'
import { AccessTokens } from './auth/tokens.ts'
import type { ServiceConfig } from './config/index.ts'
import type { CheckMetrics } from './credentials/pipeline.ts'
import { RemoteStatusLists, StatusChecker, type StatusListSource } from './credentials/status.ts'
import type { DataKeyring } from './crypto/data-key.ts'
import { configuredVerifier, IssuerCertificates } from './crypto/issuer-certificates.ts'
import { IssuerKeys } from './crypto/issuer-keys.ts'
import { loadServiceKey } from './crypto/keys.ts'
import { installErrorHandling } from './errors/handler.ts'
import { ProblemSchema } from './errors/schemas.ts'
import { type ServiceEvent, ServiceEvents } from './events.ts'
import { CredentialFaults } from './faults/credentials.ts'
import type { FaultRegistry } from './faults/index.ts'
import { FaultyIssuerMetadata, FaultyOfferGrants, FaultyTokenAnswers } from './faults/issuer.ts'
import { installExchangeObserver, noteExchange } from './faults/observer.ts'
import { FaultyVerifier } from './faults/verifier.ts'
import { issuanceRoutes } from './issuance/routes.ts'
import { ProcessSchema } from './issuance/schemas.ts'
import { IssuanceService } from './issuance/service.ts'
import { PreAuthorizedGrants } from './oid4vci/grants.ts'
import { IssuerMetadata } from './oid4vci/metadata.ts'
import { oid4vciRoutes } from './oid4vci/routes.ts'
import { Oid4vciService } from './oid4vci/service.ts'
import { requestObjectSigner } from './oid4vp/profile.ts'
import { PresentationExchangeRequests } from './oid4vp/request.ts'
import { Openid4vp1Requests } from './oid4vp/request-v1.ts'
import { oid4vpRoutes } from './oid4vp/routes.ts'
import { Oid4vpService } from './oid4vp/service.ts'
import { portalRoutes } from './portal/routes.ts'
import { seedFromConfig } from './portal/seed.ts'
import { PortalService } from './portal/service.ts'
import { exemptFrom, installWalletRateLimit, LoginLimits } from './rate-limit.ts'
import { installRequestLog, type RequestLogWriter, withRedactedUrls } from './request-log.ts'
import { RetentionPurge } from './retention.ts'
import { StatusLists } from './status/service.ts'
import type { Store } from './store/index.ts'
import { openSqliteStore } from './store/sqlite.ts'
import { streamRoutes } from './streams/routes.ts'
import type { TlsCredentials } from './tls.ts'
import { newAjv } from './util/ajv.ts'
import { type Clock, systemClock } from './util/clock.ts'
import { installJsonLimits } from './util/json-limits.ts'
import { Type } from './util/typebox.ts'
import { PublicUrls } from './util/urls.ts'
import { PACKAGE_VERSION } from './util/version.ts'
import { verificationRoutes } from './verification/routes.ts'
import { VerificationService } from './verification/service.ts'
import { WebhookDispatcher } from './webhooks/dispatcher.ts'
import { WebhookOutbox } from './webhooks/outbox.ts'
import { WebhookService } from './webhooks/service.ts'

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

export interface AppServices {
  store: Store
  clock: Clock
  urls: PublicUrls
  auth: AuthService
  issuance: IssuanceService
  oid4vci: Oid4vciService
  issuerKeys: IssuerKeys
  statusLists: StatusLists
  events: ServiceEvents
  portal: PortalService
  verification: VerificationService
  oid4vp: Oid4vpService
  webhooks: WebhookService
  webhookDispatcher: WebhookDispatcher
  /** The background purge of closed flows (docs/security.md, "Retention"). */
  retention: RetentionPurge
}

declare module 'fastify' {
  interface FastifyInstance {
    services: AppServices
  }
}

/** The relying-party API and the portal: every answer is per caller and most carry personal data. */
const API_PATH = /^\/(?:api|admin|portal)\//

// Bodies are validated strictly (no type coercion); query strings, params and headers arrive as text
// and are coerced. Neither instance strips unknown fields: they are rejected with a 400 naming them.
function validatorCompiler() {
  const options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const
  const body = newAjv({ ...options, coerceTypes: false })
  const text = newAjv({ ...options, coerceTypes: 'array' })
  // Compiled at the route's first request, not at start-up (~140 ms of `serve`'s start, bench/startup.ts).
  // test/fuzz-openapi.test.ts sends every route requests, so a schema Ajv refuses still fails a test.
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => {
    let compiled: ValidateFunction | undefined
    const validate = (data: unknown) => {
      compiled ??= (httpPart === 'body' ? body : text).compile(schema)
      const ok = compiled(data)
      validate.errors = compiled.errors
      return ok
    }
    validate.errors = undefined as ValidateFunction['errors']
    return validate
  }
}

/** The outbox scan of instances sharing a PostgreSQL database (the cluster's DEFAULT_WEBHOOK_POLL_MS). */
const SHARED_WEBHOOK_POLL_MS = 1_000

/** Builds the service (plugins, routes, store, keys) without listening: tests drive it with `inject`. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, faults } = options
  if (faults && config.webhooks.mode !== 'test') {
    throw new Error(
      `deliberate faults (AppOptions.faults) are for wallet tests only: the configuration must set webhooks.mode "test" (it is "${config.webhooks.mode}"), never a production configuration`,
    )
  }
  const clock = options.clock ?? systemClock
  const store =
    options.store ??
    (await openSqliteStore(options.dataDir ?? ':memory:', {
      clock,
      shared: options.sharedStore === true,
      ...(options.dataKeys ? { dataKeys: options.dataKeys } : {}),
    }))
  const httpServerOptions = {
    headersTimeout: config.http.headersTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, config.http.headersTimeoutMs / 2),
  }
  const app = Fastify({
    logger: withRedactedUrls(options.logger ?? false),
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: true,
    // Response serializers compile at their route's first answer, not at start-up.
    schemaController: {
      compilersFactory: {
        buildSerializer: (external, options) => {
          const compile = SerializerSelector()(external, options)
          return (route) => {
            let serialize: ((data: unknown) => string) | undefined
            return (data) => {
              serialize ??= compile(route)
              return serialize(data)
            }
          }
        },
      },
    },
    // Slow clients (a body one byte every 2 s, headers that never end) must not hold connections: Node answers
    // 408 and closes; its timeout checks run every connectionsCheckingInterval (default 30 s, too coarse).
    requestTimeout: config.http.requestTimeoutMs,
    connectionTimeout: config.http.idleTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    // Fastify hands `http` to http.createServer only; with `https` the same server options go there, beside
    // the certificate and key (node:https takes both kinds).
    ...(options.tls
      ? { https: { ...httpServerOptions, cert: options.tls.cert, key: options.tls.key } }
      : { http: httpServerOptions }),
    trustProxy: config.http.trustProxy.length > 0 ? config.http.trustProxy : false,
  } as FastifyServerOptions)
  app.server.maxConnections = config.http.maxConnections
  if (!options.store) app.addHook('onClose', () => store.close())
  // A root hook before any route plugin: it sees every route and every 404.
  if (options.requestLog) installRequestLog(app, options.requestLog)
  app.setValidatorCompiler(validatorCompiler())
  installErrorHandling(app)
  installJsonLimits(app)
  app.decorateRequest('principal', null)
  app.addSchema(ProblemSchema)
  app.addSchema(ProcessSchema)
  // Callback hooks, not async ones: they run on every request, and a promise each is measurable (issue 20).
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('X-Content-Type-Options', 'nosniff')
    // Processes, sessions and keys carry credentials and personal data: no cache may keep them (RFC 9111 §5.2.2.5).
    if (API_PATH.test(request.url) && !reply.hasHeader('Cache-Control'))
      reply.header('Cache-Control', 'no-store')
    done(null, payload)
  })
  // Loopback is exempt in test mode: the conformance suite and the benchmarks drive the service from this machine.
  const exempt = exemptFrom(config.rateLimits, config.webhooks.mode === 'test')
  // Root hooks, added before any route plugin: they run for the encapsulated wallet-facing plugins too.
  installWalletRateLimit(app, config.rateLimits, exempt, clock)
  if (faults) installExchangeObserver(app, faults, clock)

  await seedFromConfig(store, config, clock)
  const key = await loadServiceKey(store, clock)
  const urls = new PublicUrls(
    () => config.publicUrl ?? options.publicUrl?.() ?? 'http://127.0.0.1',
    config.walletScheme,
  )
  const auth = new AuthService(
    store,
    new AccessTokens(key, clock, config.tokenLifetimeSeconds),
    new LoginLimits(config.rateLimits, exempt, clock),
  )
  const events = new ServiceEvents()
  // Instances sharing a database (PostgreSQL): scan the outbox every second too, so that an event whose
  // instance is busy or died is delivered by another once its lease ends.
  const webhookPollMs = options.webhookPollMs ?? (store.feed ? SHARED_WEBHOOK_POLL_MS : undefined)
  const webhookDispatcher = new WebhookDispatcher({
    store,
    clock,
    events,
    options: config.webhooks,
    ...(webhookPollMs !== undefined ? { pollIntervalMs: webhookPollMs } : {}),
  })
  const feed = store.feed
  if (feed) {
    // State changes reach the streams of every instance, as the cluster's IPC relay does for its workers.
    let relaying = false
    events.on((event) => {
      if (!relaying)
        feed.publishEvent(event).catch((error) => app.log.warn({ err: error }, 'event not shared'))
    })
    const stop = feed.onEvent((event) => {
      relaying = true
      try {
        events.emit(event as ServiceEvent)
      } finally {
        relaying = false
      }
    })
    app.addHook('onClose', async () => stop())
  }
  // Events are written leased to this process's dispatcher, which sends them once the commit is announced.
  const outbox = new WebhookOutbox(clock, webhookDispatcher)
  const issuerKeys = new IssuerKeys(store, clock)
  const issuerCertificates = new IssuerCertificates(store, clock, urls)
  const statusLists = new StatusLists(store, issuerKeys, clock, urls, config.statusListSize)
  const grants = new PreAuthorizedGrants(
    {
      preAuthorizedCode: key.deriveSecret('oid4vci pre-authorized code'),
      txCode: key.deriveSecret('oid4vci tx_code'),
    },
    urls,
    config.oid4vci,
  )
  const issuance = new IssuanceService({
    store,
    clock,
    urls,
    issuerKeys,
    issuerCertificates,
    statusLists,
    events,
    webhooks: outbox,
    grants: faults ? new FaultyOfferGrants(grants, faults) : grants,
    cursorSecret: key.deriveSecret('list cursor'),
  })
  // Lists this service publishes are read in-process; any other issuer's over HTTP under the outbound
  // policy of webhooks.mode, through one shared cache. One checker serves issuance-time (di_vp) and
  // verification-time checks alike.
  const remoteLists = new RemoteStatusLists({ policy: config.webhooks.mode, clock })
  const statusSource: StatusListSource = async (url) => {
    const own = urls.ownStatusList(url)
    if (!own) return remoteLists.source(url)
    const jwt =
      own.form === 'bitstring'
        ? await statusLists.credential(own.tenantId, own.listId)
        : await statusLists.tokenStatusList(own.tenantId, own.listId)
    if (!jwt) throw new Error(`no status list at ${url}`)
    return jwt
  }
  const status = new StatusChecker(statusSource)
  const metrics = options.checkMetrics ? { metrics: options.checkMetrics } : {}
  const oid4vci = new Oid4vciService({
    store,
    clock,
    urls,
    issuance,
    grants,
    events,
    issuerKeys,
    options: config.oid4vci,
    nonceSecret: key.deriveSecret('oid4vci c_nonce'),
    status,
    ...metrics,
    ...(faults && { handOut: new CredentialFaults(faults, { store, statusLists, clock }) }),
  })
  // Wallet test plans only: the faulty verifier, wrapped around the request object signer and the profiles.
  const faultyVerifier = faults && new FaultyVerifier(faults, { publicBase: () => urls.absolute(''), events })
  const signer = faultyVerifier ? faultyVerifier.signer(requestObjectSigner) : requestObjectSigner
  // One profile object per OpenID4VP profile a verification template may choose.
  const genuine = {
    pe: new PresentationExchangeRequests(urls, signer),
    dcql: new Openid4vp1Requests({
      urls,
      clock,
      signer,
      issuerKeys,
      certificates: issuerCertificates,
      configured: new Map(
        config.tenants.flatMap((t) =>
          t.verifierCertificate ? [[t.id, configuredVerifier(t.verifierCertificate)] as const] : [],
        ),
      ),
    }),
  }
  const profiles = faultyVerifier
    ? { pe: faultyVerifier.profile('pe', genuine.pe), dcql: faultyVerifier.profile('dcql', genuine.dcql) }
    : genuine
  const verification = new VerificationService({
    store,
    clock,
    urls,
    issuerKeys,
    certificates: issuerCertificates,
    events,
    requests: profiles,
  })
  const oid4vp = new Oid4vpService({
    store,
    clock,
    events,
    webhooks: outbox,
    status,
    profiles,
    ...metrics,
  })
  const services: AppServices = {
    store,
    clock,
    urls,
    auth,
    issuance,
    oid4vci,
    issuerKeys,
    statusLists,
    events,
    portal: new PortalService(store, clock, config.webhooks.mode),
    verification,
    oid4vp,
    webhooks: new WebhookService(store, clock, webhookDispatcher),
    webhookDispatcher,
    retention: new RetentionPurge({ store, clock, options: config.retention, log: app.log }),
  }
  app.decorate('services', services)
  // Deliveries start once the app is ready and stop before the store closes; unfinished ones resume at the next start.
  app.addHook('onReady', async () => webhookDispatcher.start())
  app.addHook('preClose', async () => webhookDispatcher.stop())
  // The purge runs shortly after ready, then every retention.purgeIntervalSeconds; a run under way ends first.
  app.addHook('onReady', async () => services.retention.start())
  app.addHook('preClose', async () => services.retention.stop())

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'vc-harness reference service',
        version: PACKAGE_VERSION,
        description:
          'Relying-party API of the Credential Issuance and Verification Service Interface, plus the management portal. ' +
          'To try a protected call here: run the login (Authentication) with "Authorize" → basic (API key id and secret) ' +
          'and the `tenant` header, copy the `Token` response header, then "Authorize" → jwt with `jwt <token>`.',
      },
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // `servers` is the public URL, known only once the service listens (port 0): set per request. When
    // the page was opened at another address (e.g. 127.0.0.1 while the public URL is the LAN one), that
    // address comes first, so that "Try it out" stays same-origin (the API sends no CORS headers).
    transformSpecification: (spec, request) => {
      const base = urls.absolute('')
      const servers = [{ url: base, description: 'the public URL (offers and requests carry it)' }]
      let publicHost: string | undefined
      try {
        publicHost = new URL(base).host
      } catch {}
      if (request.headers.host !== undefined && request.headers.host !== publicHost) {
        servers.unshift({ url: '/', description: 'the address this page was opened at' })
      }
      return { ...spec, servers }
    },
  })

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
  const metadata = new IssuerMetadata({ store, urls, issuerKeys })
  await app.register(oid4vciRoutes, {
    oid4vci: faults ? new FaultyTokenAnswers(oid4vci, faults) : oid4vci,
    metadata: faults ? new FaultyIssuerMetadata(metadata, faults) : metadata,
    statusLists,
    issuerCertificates,
  })
  await app.register(verificationRoutes, { auth, verification, clock })
  await app.register(oid4vpRoutes, { oid4vp, ...(faults && { onResponse: noteExchange }) })
  await app.register(streamRoutes, { auth, store, issuance, verification, events, clock })
  await app.register(portalRoutes, {
    prefix: '/portal/v1',
    auth,
    portal: services.portal,
    webhooks: services.webhooks,
    pageSize: { default: config.listPageSize, max: config.listMaxPageSize },
  })
  return app
}
