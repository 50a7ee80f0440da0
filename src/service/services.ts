import { testWalletProviderTrust } from '../shared/oauth/test-wallet-provider.ts'
import { AuthService } from './auth/service.ts'
import { AccessTokens } from './auth/tokens.ts'
import type { ServiceConfig } from './config/index.ts'
import type { CheckMetrics } from './credentials/pipeline.ts'
import { RemoteStatusLists, StatusChecker, type StatusListSource } from './credentials/status.ts'
import type { DataKeyring } from './crypto/data-key.ts'
import { configuredIaca, configuredVerifier, IssuerCertificates } from './crypto/issuer-certificates.ts'
import { loadServiceKey } from './crypto/keys.ts'
import { TenantKeys } from './crypto/tenant-keys.ts'
import { type ServiceEvent, ServiceEvents } from './events.ts'
import { CredentialFaults } from './faults/credentials.ts'
import type { FaultRegistry } from './faults/index.ts'
import {
  FaultyAuthorization,
  FaultyIssuerMetadata,
  FaultyOfferGrants,
  FaultyTokenAnswers,
} from './faults/issuer.ts'
import { FaultyVerifier } from './faults/verifier.ts'
import { IssuanceService } from './issuance/service.ts'
import { type AuthorizationEndpoints, AuthorizationServer } from './oid4vci/authorization.ts'
import { DpopGate } from './oid4vci/dpop.ts'
import { PreAuthorizedGrants } from './oid4vci/grants.ts'
import { IssuerMetadata } from './oid4vci/metadata.ts'
import type { IssuerMetadataDocuments, Oid4vciEndpoints } from './oid4vci/routes.ts'
import { Oid4vciService } from './oid4vci/service.ts'
import { type DcApiRequests, Openid4vpDcApiRequests } from './oid4vp/dc-api.ts'
import { requestObjectSigner } from './oid4vp/profile.ts'
import { PresentationExchangeRequests } from './oid4vp/request.ts'
import { Openid4vp1Requests } from './oid4vp/request-v1.ts'
import { Oid4vpService } from './oid4vp/service.ts'
import { seedFromConfig } from './portal/seed.ts'
import { PortalService } from './portal/service.ts'
import { exemptFrom, LoginLimits } from './rate-limit.ts'
import { type RetentionLog, RetentionPurge } from './retention.ts'
import { STATUS_ENTRIES_AHEAD, StatusLists } from './status/service.ts'
import type { Store } from './store/index.ts'
import { openSqliteStore } from './store/sqlite.ts'
import { type Clock, systemClock } from './util/clock.ts'
import { PublicUrls } from './util/urls.ts'
import { VerificationService } from './verification/service.ts'
import { WebhookDispatcher } from './webhooks/dispatcher.ts'
import { WebhookOutbox } from './webhooks/outbox.ts'
import { WebhookService } from './webhooks/service.ts'

// The service's parts, constructed in the order they depend on each other, with no HTTP server: the one
// place where they are wired (a domain module declares the interface it needs, this file hands it the
// protocol's implementation; docs/design.md has the table). app.ts puts them behind Fastify's routes;
// tests may build them alone (test/service/services.test.ts).

export interface ServiceOptions {
  config: ServiceConfig
  /** A store to use; when absent, one is opened in `dataDir` (default: in memory) and closed by `close()`. */
  store?: Store
  dataDir?: string
  clock?: Clock
  /** Base URL when the config has no publicUrl; a function because the port may be known only after listen. */
  publicUrl?: () => string
  /** Webhook outbox scan interval (ms) when other processes share the store (cluster workers); default none. */
  webhookPollMs?: number
  /** Other processes share the database it opens (cluster workers): no cache that must see their writes. */
  sharedStore?: boolean
  /** Told where the time of every credential check went (benchmarks); none by default. */
  checkMetrics?: CheckMetrics
  /** Wallet test plans: the faulty issuer and verifier decorators (src/service/faults) are wired around the genuine ones. */
  faults?: FaultRegistry
  /** The data key sealing private keys and webhook secrets in the store it opens (docs/security.md). */
  dataKeys?: DataKeyring
  /** Where the background work logs (the retention purge, events not shared): Fastify's logger in app.ts. */
  log?: RetentionLog & { warn(object: object, message: string): void }
}

export interface AppServices {
  store: Store
  clock: Clock
  urls: PublicUrls
  auth: AuthService
  issuance: IssuanceService
  oid4vci: Oid4vciService
  tenantKeys: TenantKeys
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

/** The services, and what the HTTP layer needs besides them. */
export interface BuiltServices {
  services: AppServices
  /** The wallet-facing OpenID4VCI answers and metadata documents (decorated in a wallet test). */
  oid4vciEndpoints: Oid4vciEndpoints
  metadata: IssuerMetadataDocuments
  issuerCertificates: IssuerCertificates
  /** The authorization code flow's endpoints (PAR, the user step) and the DPoP nonces answers carry. */
  authorization: AuthorizationEndpoints
  dpop: DpopGate
  /** Who the rate limits leave alone (rateLimits.exempt; loopback in test mode). */
  rateLimitExempt: (address: string) => boolean
  /** Stops what construction started (the shared event feed) and closes a store it opened. */
  close(): Promise<void>
}

/** The outbox scan of instances sharing a PostgreSQL database (the cluster's DEFAULT_WEBHOOK_POLL_MS). */
const SHARED_WEBHOOK_POLL_MS = 1_000

/** Constructs every service of the reference service; nothing listens and nothing runs until started. */
export async function buildServices(options: ServiceOptions): Promise<BuiltServices> {
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
  const closing: (() => Promise<void> | void)[] = []
  if (!options.store) closing.push(() => store.close())
  await seedFromConfig(store, config, clock)
  const key = await loadServiceKey(store, clock)
  const urls = new PublicUrls(
    () => config.publicUrl ?? options.publicUrl?.() ?? 'http://127.0.0.1',
    config.walletScheme,
  )
  // Loopback is exempt in test mode: the conformance suite and the benchmarks drive the service from this machine.
  const rateLimitExempt = exemptFrom(config.rateLimits, config.webhooks.mode === 'test')
  const auth = new AuthService(
    store,
    new AccessTokens(key, clock, config.tokenLifetimeSeconds),
    new LoginLimits(config.rateLimits, rateLimitExempt, clock),
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
        feed.publishEvent(event).catch((error) => options.log?.warn({ err: error }, 'event not shared'))
    })
    const stop = feed.onEvent((event) => {
      relaying = true
      try {
        events.emit(event as ServiceEvent)
      } finally {
        relaying = false
      }
    })
    closing.unshift(async () => stop())
  }
  // Events are written leased to this process's dispatcher, which sends them once the commit is announced.
  const outbox = new WebhookOutbox(clock, webhookDispatcher)
  const tenantKeys = new TenantKeys(store, clock)
  const issuerCertificates = new IssuerCertificates(
    store,
    clock,
    urls,
    new Map(config.tenants.flatMap((t) => (t.mdocIaca ? [[t.id, configuredIaca(t.mdocIaca)] as const] : []))),
  )
  // Shared deployments (PostgreSQL, the store with a change feed) count status entries ahead (issue 38).
  const statusLists = new StatusLists(
    store,
    tenantKeys,
    clock,
    urls,
    config.statusListSize,
    store.feed ? STATUS_ENTRIES_AHEAD : 0,
  )
  const grants = new PreAuthorizedGrants(
    {
      preAuthorizedCode: key.deriveSecret('oid4vci pre-authorized code'),
      txCode: key.deriveSecret('oid4vci tx_code'),
      issuerState: key.deriveSecret('oid4vci issuer_state'),
    },
    urls,
    config.oid4vci,
  )
  const issuance = new IssuanceService({
    store,
    clock,
    urls,
    tenantKeys,
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
  const dpop = new DpopGate({
    store,
    clock,
    options: config.oid4vci,
    nonceSecret: key.deriveSecret('oid4vci dpop nonce'),
  })
  // The wallet providers each tenant trusts (tenants[].walletProviders; the published test one on request).
  const walletProviders = new Map(
    config.tenants.map((t) => [
      t.id,
      [...(t.walletProviders ?? []), ...(t.testWalletProvider ? [testWalletProviderTrust] : [])],
    ]),
  )
  const trustedProviders = (tenantId: string) => walletProviders.get(tenantId) ?? []
  const authorization = new AuthorizationServer({
    store,
    clock,
    urls,
    options: config.oid4vci,
    grants,
    issuance,
    dpop,
    walletProviders: trustedProviders,
  })
  const oid4vci = new Oid4vciService({
    dpop,
    authorization,
    // Key attestations (OpenID4VCI 1.0 Appendix D) are the same providers' word as wallet attestations.
    walletProviders: trustedProviders,
    store,
    clock,
    urls,
    issuance,
    grants,
    events,
    tenantKeys,
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
  const dcql = new Openid4vp1Requests({
    urls,
    clock,
    signer,
    tenantKeys,
    certificates: issuerCertificates,
    configured: new Map(
      config.tenants.flatMap((t) =>
        t.verifierCertificate ? [[t.id, configuredVerifier(t.verifierCertificate)] as const] : [],
      ),
    ),
  })
  const genuine = { pe: new PresentationExchangeRequests(urls, signer), dcql }
  // The same session over the Digital Credentials API (OpenID4VP 1.0 Appendix A), named as its QR request
  // is; the extension point a wallet test's decorator would wrap.
  const genuineDcApi = new Openid4vpDcApiRequests({ identities: dcql.identities, signer })
  const dcApi: DcApiRequests = faultyVerifier ? faultyVerifier.dcApi(genuineDcApi) : genuineDcApi
  const profiles = faultyVerifier
    ? { pe: faultyVerifier.profile('pe', genuine.pe), dcql: faultyVerifier.profile('dcql', genuine.dcql) }
    : genuine
  const verification = new VerificationService({
    store,
    clock,
    urls,
    tenantKeys,
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
    dcApi,
    ...metrics,
  })
  const metadata = new IssuerMetadata({ store, urls, tenantKeys, batchSize: config.oid4vci.batchSize })
  return {
    services: {
      store,
      clock,
      urls,
      auth,
      issuance,
      oid4vci,
      tenantKeys,
      statusLists,
      events,
      portal: new PortalService(store, clock, config.webhooks.mode),
      verification,
      oid4vp,
      webhooks: new WebhookService(store, clock, webhookDispatcher),
      webhookDispatcher,
      retention: new RetentionPurge({
        store,
        clock,
        options: config.retention,
        ...(options.log && { log: options.log }),
      }),
    },
    oid4vciEndpoints: faults ? new FaultyTokenAnswers(oid4vci, faults) : oid4vci,
    authorization: faults ? new FaultyAuthorization(authorization, faults) : authorization,
    dpop,
    metadata: faults ? new FaultyIssuerMetadata(metadata, faults) : metadata,
    issuerCertificates,
    rateLimitExempt,
    async close() {
      for (const step of closing) await step()
    },
  }
}
