import type {
  ApiKeyRecord,
  CredentialStatus,
  GrantRecord,
  IssuedCredentialRecord,
  IssuerCaRecord,
  IssuerCertificateRecord,
  IssuerKeyRecord,
  ListCursor,
  ProcessRecord,
  ProcessStatus,
  ServiceKeyRecord,
  SessionRecord,
  SigningAlg,
  StatusListRecord,
  TemplateKind,
  TemplateRecord,
  TenantRecord,
  WebhookAttemptRecord,
  WebhookEndpointRecord,
  WebhookEventRecord,
} from './types.ts'

export * from './types.ts'

// The repositories are the only way the service touches storage. They are async so that a
// second engine (PostgreSQL for shared deployments) can implement them without touching handlers.

export interface TenantRepository {
  get(id: string): Promise<TenantRecord | undefined>
  /** Inserts; throws ConflictError when the id exists. */
  create(tenant: TenantRecord): Promise<void>
  upsert(tenant: TenantRecord): Promise<void>
}

export interface ApiKeyRepository {
  get(id: string): Promise<ApiKeyRecord | undefined>
  /**
   * Login's lookup: one record whether or not `id` exists (a decoy with `decoyHash` when not), read by one
   * statement materialising one row either way, so a known id costs what an unknown one does (issue 19).
   */
  forLogin(id: string, decoyHash: string): Promise<{ key: ApiKeyRecord; found: boolean }>
  listByTenant(tenantId: string): Promise<ApiKeyRecord[]>
  listBySource(source: ApiKeyRecord['source']): Promise<ApiKeyRecord[]>
  create(key: ApiKeyRecord): Promise<void>
  upsert(key: ApiKeyRecord): Promise<void>
  /** Sets revokedAt if not already set; returns false when no such key exists in the tenant. */
  revoke(tenantId: string, id: string, at: number): Promise<boolean>
  countLinkedToTemplate(tenantId: string, templateId: string): Promise<number>
}

export interface TemplateRepository {
  get<K extends TemplateKind>(tenantId: string, id: string, kind: K): Promise<TemplateRecord<K> | undefined>
  /** Any kind: `ssiconfig` at login names a template without its kind. */
  find(tenantId: string, id: string): Promise<TemplateRecord | undefined>
  list<K extends TemplateKind>(tenantId: string, kind: K): Promise<TemplateRecord<K>[]>
  listBySource(source: TemplateRecord['source']): Promise<TemplateRecord[]>
  /** Inserts; throws ConflictError when the id is taken in the tenant (by either kind). */
  create(template: TemplateRecord): Promise<void>
  upsert(template: TemplateRecord): Promise<void>
  update(template: TemplateRecord): Promise<void>
  delete(tenantId: string, id: string): Promise<void>
}

export interface ProcessQuery {
  tenantId: string
  status?: ProcessStatus
  after?: ListCursor
  limit: number
}

export interface ProcessRepository {
  get(id: string): Promise<ProcessRecord | undefined>
  create(process: ProcessRecord): Promise<void>
  /** Oldest first, by (createdAt, id). */
  list(query: ProcessQuery): Promise<ProcessRecord[]>
  countByTemplate(tenantId: string, templateId: string): Promise<number>
  /**
   * Writes the mutable fields (status, data, validator, submitted, rejectedReason, updatedAt) only if the
   * stored `updatedAt` still equals `expectedUpdatedAt`: false means another writer came first.
   */
  update(process: ProcessRecord, expectedUpdatedAt: number): Promise<boolean>
}

export interface IssuerKeyRepository {
  get(tenantId: string, alg: SigningAlg): Promise<IssuerKeyRecord | undefined>
  listByTenant(tenantId: string): Promise<IssuerKeyRecord[]>
  /** Inserts; throws ConflictError when the tenant already has a key for the algorithm. */
  create(key: IssuerKeyRecord): Promise<void>
}

/** X.509 issuer keys: the tenant's CA and its leaf certificates. Rows are written once, never changed. */
export interface IssuerCertificateRepository {
  getCa(tenantId: string): Promise<IssuerCaRecord | undefined>
  /** Inserts; throws ConflictError when the tenant already has a CA (another process created it first). */
  createCa(ca: IssuerCaRecord): Promise<void>
  /** The tenant's mdoc IACA root (ISO 18013-5 Annex B.1.2), in the same record form as the CA. */
  getIaca(tenantId: string): Promise<IssuerCaRecord | undefined>
  /** Inserts; throws ConflictError when the tenant already has an IACA. */
  createIaca(iaca: IssuerCaRecord): Promise<void>
  getLeaf(tenantId: string, alg: SigningAlg, issuer: string): Promise<IssuerCertificateRecord | undefined>
  /** Inserts; throws ConflictError when a certificate for (tenant, alg, issuer) exists. */
  createLeaf(certificate: IssuerCertificateRecord): Promise<void>
}

/** Every state change is one conditional UPDATE, so concurrent requests cannot both win. */
/** What a wallet's first credential request records on its grant (recordCredentialRequest). */
export interface CredentialRequestWrite {
  holderDid: string
  at: number
  transactionId: string | null
  notificationId: string | null
  batchHolders?: readonly string[]
}

export interface GrantRepository {
  create(grant: GrantRecord): Promise<void>
  /**
   * processes.create and create, atomic by itself (see Store): a new offer needs no store.transaction. One
   * statement on PostgreSQL (issue 38). Throws ConflictError when either row exists (neither is written then).
   */
  createWithProcess(process: ProcessRecord, grant: GrantRecord): Promise<void>
  get(processId: string): Promise<GrantRecord | undefined>
  /** The grant and its process, read together (one statement on the wallet's hot paths). */
  withProcess(
    key: { processId: string } | { codeHash: string } | { tokenHash: string },
  ): Promise<{ grant: GrantRecord; process: ProcessRecord } | undefined>
  /** Ends the access token's life at once (a replayed authorization code, RFC 6749 §4.1.2). */
  revokeToken(processId: string): Promise<void>
  /** Counts a wrong tx_code; at `maxAttempts` the code is burnt. Returns the new state. */
  recordTxFailure(processId: string, maxAttempts: number): Promise<{ failures: number; burnt: boolean }>
  /**
   * live → used, binding the access token (to a DPoP key when `tokenJkt` is given, RFC 9449 §6). False when
   * the code was no longer live.
   */
  consumeCode(
    processId: string,
    tokenHash: string,
    tokenExpiresAt: number,
    tokenJkt?: string | null,
  ): Promise<boolean>
  /**
   * The token endpoint's common case in one statement: the code of `codeHash` of the tenant, live and
   * unexpired at `now`, asking no tx_code, of a PENDING process → used, binding the access token. False
   * (nothing changed) when any of that does not hold: the caller reads the grant and names what is wrong.
   */
  consumeCodeByHash(redemption: {
    codeHash: string
    tenantId: string
    now: number
    tokenHash: string
    tokenExpiresAt: number
    /** The DPoP key the access token is bound to (RFC 9449 §6); none: a Bearer token. */
    tokenJkt?: string | null
  }): Promise<boolean>
  /**
   * Records the (single) credential request. False when one was already recorded. `batchHolders`: the further
   * keys of a batch request (§8.2), kept for the deferred download.
   */
  recordCredentialRequest(processId: string, request: CredentialRequestWrite): Promise<boolean>
  /**
   * processes.update(process, expectedUpdatedAt) and recordCredentialRequest(process.id, request), atomic by
   * itself (see Store), both conditional: true when both were written; false when either condition fails (the
   * process changed since `expectedUpdatedAt`, or a credential request is recorded already), and then neither
   * is. The attended first credential request's write (oid4vci/service.ts): one statement on PostgreSQL
   * (issue 38), which locks both rows (as the two UPDATEs would) and writes them only if both still qualify.
   */
  recordCredentialRequestWithProcess(
    process: ProcessRecord,
    expectedUpdatedAt: number,
    request: CredentialRequestWrite,
  ): Promise<boolean>
  /**
   * Marks the deferred transaction redeemed and sets the notification id of the credential it hands out;
   * false (nothing changed) when it already was.
   */
  markRedeemed(processId: string, at: number, notificationId: string): Promise<boolean>
  /**
   * The deferred endpoint's successful download in one statement: markRedeemed (at `now`) for the grant of
   * a live access token (unexpired at `now`, of the tenant) whose transaction is `transactionId`, not yet
   * redeemed, of an ISSUED process; answers the grant as changed and its process. Undefined (nothing
   * changed) when any of that does not hold, or for a batch request (its further credentials are issued
   * with the redemption, in one transaction): the caller reads the grant and names what is wrong.
   */
  markRedeemedByToken(redemption: {
    tokenHash: string
    tenantId: string
    transactionId: string
    now: number
    notificationId: string
    /** The DPoP key the request proved (the token must be bound to it); none: a Bearer token. */
    tokenJkt?: string | null
  }): Promise<{ grant: GrantRecord; process: ProcessRecord } | undefined>
  /**
   * recordNotification for the grant of a live access token (unexpired at `now`, of the tenant) whose
   * notification id is `notificationId`: one statement. False when any of that does not hold.
   */
  recordNotificationByToken(notification: {
    tokenHash: string
    tenantId: string
    notificationId: string
    event: string
    now: number
    /** As for markRedeemedByToken. */
    tokenJkt?: string | null
  }): Promise<boolean>
  /** Records the wallet's notification event; false when one was already recorded. */
  recordNotification(processId: string, event: string): Promise<boolean>
}

/** Where an authorization code flow is (store/authorization.ts): each step only from the one before. */
export type AuthorizationStage = 'pushed' | 'authorized' | 'denied' | 'redeemed'

/** One authorization code flow, from its pushed request (RFC 9126) to its code's redemption (RFC 6749 §4.1.3). */
export interface AuthorizationRecord {
  /** SHA-256 of the request_uri's reference: the request_uri itself is not kept. */
  id: string
  tenantId: string
  /** The credential configuration authorized (the issuance template). */
  templateId: string
  /** The issuance process: the offer's (issuer-initiated), or created at the user step (wallet-initiated). */
  processId: string | null
  clientId: string
  redirectUri: string
  state: string | null
  /** RFC 7636 S256 challenge. */
  codeChallenge: string
  /** RFC 9449 §10: the DPoP key the code is bound to when the pushed request carried a proof. */
  dpopJkt: string | null
  /** The attested client instance key (wallet attestation cnf.jwk thumbprint): the token request's must match. */
  instanceJkt: string | null
  /** The authorization_details granted (OpenID4VCI 1.0 §5.1.1), echoed in the token response. */
  details: Record<string, unknown>[] | null
  scope: string | null
  stage: AuthorizationStage
  /** The request_uri's expiry while pushed; the code's once authorized. */
  expiresAt: number
  /** SHA-256 of the authorization code, once authorized. */
  codeHash: string | null
  createdAt: number
}

/** Every step one conditional UPDATE: a request_uri and a code are each used once however requests race. */
export interface AuthorizationRepository {
  create(authorization: AuthorizationRecord): Promise<void>
  get(id: string): Promise<AuthorizationRecord | undefined>
  byCode(codeHash: string): Promise<AuthorizationRecord | undefined>
  /** pushed → authorized (unexpired at `now`), with the code and the process; false when it was not pushed. */
  authorize(
    id: string,
    to: { codeHash: string; expiresAt: number; processId: string; now: number },
  ): Promise<boolean>
  /** pushed → denied (the person declined); false when it was not pushed. */
  deny(id: string, now: number): Promise<boolean>
  /** authorized → redeemed while the code is unexpired at `now`; false for a replay or an expired code. */
  redeem(id: string, now: number): Promise<boolean>
  /** The retention purge: up to `limit` rows expired before `before`. */
  deleteExpired(before: number, limit: number): Promise<number>
}

/** Used c_nonces (oid4vci/nonces.ts: issuing one writes nothing), each kept until it expires. */
export interface NonceRepository {
  /** Records the use of a nonce: true only for the first caller. */
  use(value: string, tenantId: string, expiresAt: number): Promise<boolean>
  /** Deletes up to `limit` uses of nonces that expired before `before` (the retention purge); answers how many. */
  deleteExpired(before: number, limit: number): Promise<number>
}

export interface StatusListRepository {
  get(id: string): Promise<StatusListRecord | undefined>
  /** get, inside a transaction that changes the bits: no other writer changes them until it ends. */
  getForUpdate(id: string): Promise<StatusListRecord | undefined>
  /** A list's tenant and version without its bits (deciding whether a signed copy is current). */
  version(id: string): Promise<{ tenantId: string; version: number } | undefined>
  /**
   * Counts one more entry on the tenant's newest list of `alg` (where new entries go) if fewer than
   * `fillLimit` × its size are taken; answers that list (undefined: no list yet, or it is full).
   */
  reserveEntry(
    tenantId: string,
    alg: SigningAlg,
    fillLimit: number,
    at: number,
  ): Promise<{ id: string; size: number } | undefined>
  /** reserveEntry for `count` entries at once, if all fit below `fillLimit` × the size. */
  reserveEntries(
    tenantId: string,
    alg: SigningAlg,
    fillLimit: number,
    count: number,
    at: number,
  ): Promise<{ id: string; size: number } | undefined>
  create(list: StatusListRecord): Promise<void>
  /** Writes a status change: the bits, the version and updatedAt (the allocation count is reserveEntry's). */
  save(list: StatusListRecord): Promise<void>
}

export interface IssuedCredentialRepository {
  /** Inserts; throws ConflictError when (listId, listIndex) is taken. */
  create(record: IssuedCredentialRecord): Promise<void>
  listByProcess(processId: string): Promise<IssuedCredentialRecord[]>
  /**
   * listByProcess after locking the process's row until the transaction ends (PostgreSQL: FOR UPDATE; on
   * SQLite the transaction already holds the write lock). A status change and a further instance of the
   * same process (OpenID4VCI 1.0 §14.3) both read this way, so they take turns: an instance is never
   * allocated beside an original revoked meanwhile, nor missed by the change.
   */
  listByProcessForUpdate(processId: string): Promise<IssuedCredentialRecord[]>
  /**
   * Marks the row `id` (just allocated) a further instance of the process credential `instanceOf`, handed out
   * in the credential response of `notificationId`.
   */
  markFurtherInstance(id: string, further: { instanceOf: string; notificationId: string }): Promise<void>
  /**
   * Records the wallet's notification event for the further instances of `processId` handed out under
   * `notificationId`: one conditional UPDATE; false when none is unnotified (unknown id, or notified already).
   */
  recordNotification(processId: string, notificationId: string, event: string): Promise<boolean>
  /** The event recorded for that notification id (null: none yet); undefined when no instance has the id. */
  notificationEvent(processId: string, notificationId: string): Promise<{ event: string | null } | undefined>
  /** Those of `ids` that were already issued. */
  existing(ids: string[]): Promise<string[]>
  setStatus(id: string, status: CredentialStatus, at: number): Promise<void>
}

export interface SessionRepository {
  create(session: SessionRecord): Promise<void>
  get(id: string): Promise<SessionRecord | undefined>
  /** Sets requestedAt on the first fetch of the request object; true only for that first fetch. */
  markRequested(id: string, at: number): Promise<boolean>
  /**
   * The first fetch of the request object in one statement: sets requestedAt to `at` only while the session
   * is `tenantId`'s, PENDING, unexpired at `at`, has a request object (requestJwt not '') and was not
   * requested before; answers the session as stored after that write, or undefined when nothing was written.
   */
  markRequestedReturning(id: string, tenantId: string, at: number): Promise<SessionRecord | undefined>
  /**
   * Records the outcome (status, submission, validations, subject, sourceWallet, updatedAt) only while the
   * session is still PENDING and unexpired at `now`: false means another response came first or it expired.
   */
  complete(session: SessionRecord, now: number): Promise<boolean>
  /**
   * complete, and when it changed the session, `event` written to the outbox (WebhookRepository.enqueue),
   * atomic by itself (see Store): `completed` false means nothing was written, no event either. The
   * wallet's response's outcome (oid4vp/service.ts): one statement on PostgreSQL (issue 38). Throws
   * ConflictError when the event's id exists (the session is not completed then).
   */
  completeWithEvent(
    session: SessionRecord,
    now: number,
    event?: WebhookEventRecord,
  ): Promise<{ completed: boolean; event?: LeasedWebhookEvent }>
}

/**
 * An outbox row as the statement that wrote or leased it left it, with what that statement saw of the
 * template's endpoint: the dispatcher holding the lease makes the next attempt without reading either again.
 */
export interface LeasedWebhookEvent {
  event: WebhookEventRecord
  /** The reason the endpoint is disabled for the event's URL (a 410 Gone), or null when it is not. */
  endpointDisabled: string | null
}

/** What recording an attempt saw, from the same statement. */
export interface RecordedWebhookAttempt {
  /** As in LeasedWebhookEvent, before this attempt's own 410 (if any) disabled the endpoint. */
  endpointDisabled: string | null
  /** A later event of the same subject is pending: it was waiting for this one (per-subject order). */
  successorPending: boolean
}

/**
 * The webhook outbox and its delivery log. Concurrency: a dispatcher sends an event only while it holds the
 * event's lease (`leaseUntil` in the future, `leaseOwner` its own), taken when the event is written
 * (enqueue) or by `claim`; `recordAttempt` refuses an attempt another dispatcher logged first.
 */
export interface WebhookRepository {
  /**
   * Writes a new event (in the caller's transaction, with the state change it reports). Its lease is kept
   * only when no older event of its subject is pending (that one goes first); the answer says which.
   */
  enqueue(event: WebhookEventRecord): Promise<LeasedWebhookEvent>
  get(id: string): Promise<WebhookEventRecord | undefined>
  /**
   * Pending events due at `now` and not leased, oldest first, skipping any event of a subject that has an
   * older event still pending (per-subject order).
   */
  due(now: number, limit: number): Promise<WebhookEventRecord[]>
  /** When the next pending event falls due (null: none pending). */
  nextDueAt(): Promise<number | null>
  /**
   * Takes (or, for its owner, extends) the lease of a pending event: answers the event as leased, or
   * undefined when another dispatcher holds it or it is no longer pending.
   */
  claim(id: string, now: number, leaseUntil: number, owner?: string): Promise<LeasedWebhookEvent | undefined>
  /**
   * One statement: the event's new columns (its lease kept, for a retry its owner holds, or released), the
   * log row `attempt` (whose number must follow the event's logCount) and, on a 410, the endpoint disabled.
   * Undefined when the log already holds that attempt number (another dispatcher recorded it): nothing written.
   */
  recordAttempt(
    event: WebhookEventRecord,
    attempt: WebhookAttemptRecord,
  ): Promise<RecordedWebhookAttempt | undefined>
  /** Gives up `owner`'s leases of these events without an attempt (shutdown). */
  release(owner: string, ids: string[]): Promise<void>
  /** Newest first. */
  listByTemplate(
    tenantId: string,
    templateId: string,
    query: { limit: number; beforeSeq?: number; state?: string },
  ): Promise<WebhookEventRecord[]>
  attempts(eventId: string): Promise<WebhookAttemptRecord[]>
  /** A new round for an event that is not pending: pending, attempts 0, due at `now`. */
  requeue(id: string, now: number): Promise<boolean>
  endpoint(tenantId: string, templateId: string): Promise<WebhookEndpointRecord | undefined>
  disableEndpoint(endpoint: WebhookEndpointRecord): Promise<void>
  enableEndpoint(tenantId: string, templateId: string): Promise<void>
}

export interface ServiceKeyRepository {
  list(): Promise<ServiceKeyRecord[]>
  /**
   * In a transaction: writes `key` only when there is no service key yet, so that instances starting
   * together on a fresh database all end up with the one that was written first.
   */
  createFirst(key: ServiceKeyRecord): Promise<void>
}

/** How long closed flows are kept (config `retention`; docs/security.md, "Retention"). */
export interface RetentionPolicy {
  /** REJECTED processes, offers that lapsed unredeemed, ended sessions, settled webhook events: days after their last change. */
  closedFlowDays: number
  /** ISSUED processes, with their credentials' status entries: days after issuance. */
  issuedProcessDays: number
}

/** How many records of each kind a purge deleted (dependent rows not counted). */
export interface PurgeCounts {
  rejectedProcesses: number
  /** PENDING processes whose offer lapsed unredeemed, with no content waiting. */
  lapsedProcesses: number
  issuedProcesses: number
  /** VERIFIED, REJECTED and EXPIRED sessions. */
  sessions: number
  /** Delivered, failed or disabled webhook events, with their attempt log. */
  webhookEvents: number
  /** Used c_nonces past their expiry. */
  nonces: number
  /** Authorization code flows (pushed requests and codes) past their expiry. */
  authorizations: number
}

/** Counts of a purge that deleted nothing (a fresh object: purges add to it). */
export const noPurgeCounts = (): PurgeCounts => ({
  rejectedProcesses: 0,
  lapsedProcesses: 0,
  issuedProcesses: 0,
  sessions: 0,
  webhookEvents: 0,
  nonces: 0,
  authorizations: 0,
})

/**
 * Deletes what the retention policy says has outlived its lifetime, with its dependent rows. One call is
 * one bounded batch: at most `limit` records. Run it inside `store.transaction` (its deletes commit
 * together, and what it chose cannot change before it deletes it) and call again while it answers `limit`
 * records, so that a backlog never holds the write lock for long (retention.ts does).
 */
export interface RetentionRepository {
  purgeBatch(now: number, policy: RetentionPolicy, limit: number): Promise<PurgeCounts>
}

export interface Repositories {
  tenants: TenantRepository
  apiKeys: ApiKeyRepository
  templates: TemplateRepository
  processes: ProcessRepository
  serviceKeys: ServiceKeyRepository
  issuerKeys: IssuerKeyRepository
  issuerCertificates: IssuerCertificateRepository
  grants: GrantRepository
  authorizations: AuthorizationRepository
  nonces: NonceRepository
  statusLists: StatusListRepository
  issuedCredentials: IssuedCredentialRepository
  sessions: SessionRepository
  webhooks: WebhookRepository
  retention: RetentionRepository
}

/**
 * The store: its repositories (the root store's, each call on its own) and `transaction` for writes that must
 * happen together.
 *
 * **Atomic by itself** (issue 38): a few writes of two rows that always go together are one method that makes
 * both or neither, with no `transaction` around it: `grants.createWithProcess`,
 * `grants.recordCredentialRequestWithProcess`, `sessions.completeWithEvent`.
 * - On PostgreSQL, where every statement is a round trip, each is one statement (a data-modifying CTE): called
 *   on the root store it runs on the pool as it is, with no BEGIN and COMMIT (one round trip, not three or
 *   four).
 * - SQLite has no INSERT or UPDATE in a WITH: there it runs the same statements as before, and called on the
 *   root store it runs them in a `transaction` of the store's own (group-committed like any other, so
 *   SQLite's statements and their cost are unchanged).
 * - Called on a transaction's `repos`, it is part of that transaction, on either database.
 * So however it is called it cannot half happen. Call it on the root store when it is a step's only write,
 * so that PostgreSQL saves the transaction; inside a transaction callback use `repos`, as for any call (the
 * root store refuses it there with TransactionMisuseError).
 */
export interface Store extends Repositories {
  /**
   * Runs `work` atomically: all of its writes commit together or none do. Inside `work` use only `repos`:
   * the store itself (its repositories or a nested `transaction`) rejects with TransactionMisuseError.
   */
  transaction<T>(work: (repos: Repositories) => Promise<T>): Promise<T>
  /** Counters for measuring, never for logic. */
  readonly stats: StoreStats
  /**
   * Shared deployments (PostgreSQL, several instances): what one instance tells the others, and hears from
   * them. Undefined when this process is the only one (SQLite; its cluster relays over IPC instead).
   */
  readonly feed?: ChangeFeed
  close(): Promise<void>
}

/**
 * The store's own `transaction`, handed to SQLite's root repositories (repositories.ts): a write atomic by
 * itself (see Store) runs its statements in it when called on the root store (issue 38).
 */
export type OwnTransaction = <T>(work: (repos: Repositories) => Promise<T>) => Promise<T>

/** Messages between the instances sharing a database; never echoed to the instance that published. */
export interface ChangeFeed {
  /** Sends a state-changed event (emitted here after its commit) to the other instances. */
  publishEvent(event: unknown): Promise<void>
  /** Events another instance published. */
  onEvent(listener: (event: unknown) => void): () => void
}

export interface StoreStats {
  /** SQL statements executed on the connection since the store opened (BEGIN, SAVEPOINT, COMMIT included). */
  statements: number
  /** Durable syncs of the write-ahead log (fdatasync off the event loop; 0 for an in-memory store). */
  syncs: number
  /** Pauses taken because another process held the write lock (SQLITE_BUSY, waited for with timers). */
  busyWaits: number
  /** WAL checkpoints run off the event loop (SQLite file stores; store/sqlite-checkpoint.ts). */
  checkpoints?: number
}

/** The store was called from inside one of its own transaction callbacks (which would wait forever). */
export class TransactionMisuseError extends Error {
  override name = 'TransactionMisuseError'
}

/** A write collided with an existing row (unique key). */
export class ConflictError extends Error {
  override name = 'ConflictError'
  /** Which unique key collided, where a table has several (e.g. 'id' or 'slot'). */
  constructor(
    message: string,
    readonly key = 'id',
  ) {
    super(message)
  }
}
