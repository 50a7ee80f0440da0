import type { ApiResponse } from '../../src/client/index.ts'
import { resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../src/shared/jws.ts'
import { PRE_AUTHORIZED_GRANT } from '../../src/shared/wire.ts'
import type {
  HolderKeyType,
  IssuanceProtocol,
  Misbehaviour,
  ReceiveResult,
  StoredCredential,
  Wallet,
} from '../../src/wallet/index.ts'
import type { IssuanceSession } from '../../src/wallet/issuance.ts'
import { walletAttempt } from './wallet-outcome.ts'
import type { FlowWorld, TemplateRole } from './world-types.ts'

// The issuance side of a scenario: one simulated wallet, the offer it scans, the process behind it and
// the wallet's last protocol outcome. The World owns one; steps call it in one line.

export type { TemplateRole } from './world-types.ts'

/** What the wallet's last protocol step came to: success, or the wire error it got. */
type WalletOutcome =
  | { ok: true; what: string; value: unknown }
  | {
      ok: false
      what: string
      error: { step: string; status: number; error?: string; errorDescription?: string; message: string }
    }

export const DEGREE_CONTENT = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]
export const IDENTITY_CONTENT = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Doe', givenName: 'Jane', dateOfBirth: '1990-01-01' },
  },
]

/**
 * The SD-JWT VC template scenarios create through the portal (OpenID4VCI 1.0 Appendix A.3): every top-level
 * claim selectively disclosable (the default), one claim described for display.
 */
export const SD_JWT_TEMPLATE = {
  id: 'degree-sd-jwt',
  credentialType: 'UniversityDegreeCredential',
  format: 'dc+sd-jwt' as const,
  vct: 'https://credentials.example.com/university-degree',
  claims: [{ path: 'degree.name', name: 'Degree', mandatory: true }],
}

export class IssuanceFlow {
  private wallets = new Map<string, Wallet>()
  /** PEM trust anchors the scenario's wallets are made with (trustWith). */
  private trustAnchors: readonly string[] = []
  deepLink: string | undefined
  txCode: string | undefined
  processId: string | undefined
  /** The application token that opened the offer: the one linked to (or covering) its template. */
  private openerToken: string | undefined
  session: IssuanceSession | undefined
  transactionId: string | undefined
  received: string[] = []
  /** What the wallet stored of the credentials it received last (format, vct, claims). */
  stored: StoredCredential[] = []
  /** Templates this scenario created through the portal (SD-JWT VC). */
  private readonly created = new Set<string>()
  private outcome: WalletOutcome | undefined
  /**
   * What the wallet's credential or deferred answer before the last credential request brought: a further
   * request on the same access token (OpenID4VCI 1.0 §14.3) is compared with it.
   */
  private previous: { credentials: string[]; notificationId?: string; transactionId?: string } | undefined

  constructor(private readonly world: FlowWorld) {}

  /** The scenario's wallet (created on first use); several key types may coexist. */
  async wallet(keyType: HolderKeyType = 'Ed25519'): Promise<Wallet> {
    let wallet = this.wallets.get(keyType)
    if (!wallet) {
      const { Wallet } = await import('../../src/wallet/index.ts')
      // The recording fetch: the wallet's own requests appear in the scenario's exchanges.
      wallet = await Wallet.create({
        keyType,
        fetch: this.world.exchanges.walletFetch(),
        ...(this.trustAnchors.length > 0 && { trustAnchors: this.trustAnchors }),
      })
      this.wallets.set(keyType, wallet)
    }
    return wallet
  }

  /**
   * The scenario's wallets trust these PEM anchors (an mdoc issuer's IACA root, steps/support/mdoc.ts):
   * said before the first wallet is made.
   */
  trustWith(anchors: readonly string[]) {
    if (this.wallets.size > 0) throw new Error('the wallet exists already: say whom it trusts first')
    this.trustAnchors = anchors
  }

  /** The application opens an offer for one of the tenant's templates (4.2) and keeps its deep link. */
  async openOffer(role: TemplateRole = 'linked') {
    const template = this.world.templateFor(role)
    const token = role === 'linked' ? this.world.token('app') : await this.world.unlinkedAppToken()
    return this.openOfferFor(template, token)
  }

  /**
   * An offer for the scenario's SD-JWT VC template (SD_JWT_TEMPLATE), created through the portal with the
   * tenant's administrator key on first use: provisioned tenants only (tag the scenario @needs-portal).
   */
  async openSdJwtOffer() {
    if (!this.world.tenant.templates)
      throw new Error('creating the SD-JWT VC template needs the portal: tag the scenario @needs-portal')
    if (!this.created.has(SD_JWT_TEMPLATE.id)) {
      const adminToken = await this.world.logIn('admin')
      const response = await this.world.client.createIssuanceTemplate(adminToken, SD_JWT_TEMPLATE)
      this.world.recordAnswer(response, `create the issuance template "${SD_JWT_TEMPLATE.id}" (portal)`)
      this.world.expectStatus(201)
      this.created.add(SD_JWT_TEMPLATE.id)
    }
    return this.openOfferFor(SD_JWT_TEMPLATE.id, await this.world.unlinkedAppToken())
  }

  /** An offer for `template` opened with `token` (an application key linked to it or covering it). */
  async openOfferFor(template: string, token: string) {
    this.openerToken = token
    const response = await this.world.client.createOffer(token, template)
    this.world.recordAnswer(response, `create offer for template "${template}"`)
    this.world.expectStatus(201)
    const body = response.body as { credential_offer_uri: string; tx_code?: string }
    this.deepLink = body.credential_offer_uri
    this.txCode = body.tx_code
    const { parseCredentialOfferUri } = await import('../../src/client/index.ts')
    this.processId = parseCredentialOfferUri(this.deepLink).processId
    return body
  }

  requireProcess(): string {
    if (!this.processId) throw new Error('no offer was opened in this scenario')
    return this.processId
  }

  private async attempt(what: string, work: () => Promise<unknown>) {
    const attempt = await walletAttempt(what, work, { usage: false })
    if (attempt.kind === 'usage') throw new Error(attempt.message) // not reached: usage errors are rethrown
    this.outcome =
      attempt.kind === 'ok'
        ? { ok: true, what, value: attempt.result }
        : {
            ok: false,
            what,
            error: {
              step: attempt.step,
              status: attempt.status,
              ...(attempt.error ? { error: attempt.error } : {}),
              ...(attempt.description ? { errorDescription: attempt.description } : {}),
              message: attempt.message,
            },
          }
  }

  /**
   * The wallet scans the deep link: fetches the offer and the issuer metadata. `protocol` forces the
   * OpenID4VCI generation the wallet speaks (default: the wallet's choice from the metadata).
   */
  async scan(keyType: HolderKeyType = 'Ed25519', protocol?: IssuanceProtocol) {
    const wallet = await this.wallet(keyType)
    if (!this.deepLink) throw new Error('no offer was opened in this scenario')
    const link = this.deepLink
    await this.attempt(`scan the offer${protocol ? ` (speaking ${protocol})` : ''}`, async () => {
      this.session = await wallet.startIssuance(link, protocol ? { protocol } : {})
      return this.session
    })
    this.expectWalletSuccess()
    if (protocol && protocol !== 'auto' && this.session?.protocol !== protocol)
      throw new Error(`the wallet speaks ${this.session?.protocol}, not ${protocol}`)
  }

  /** Token request; `txCode` undefined sends the code the offer response carried. */
  async redeem(misbehave: Misbehaviour[] = [], txCode = this.txCode) {
    const session = this.requireSession()
    await this.attempt(`token request${misbehave.length ? ` (${misbehave.join(', ')})` : ''}`, () =>
      session.token({ ...(txCode ? { txCode } : {}), misbehave }),
    )
  }

  /** `configurationId`: ask for another configuration of the issuer than the offered one. */
  async requestCredential(misbehave: Misbehaviour[] = [], configurationId?: string) {
    const session = this.requireSession()
    const what = [...misbehave, ...(configurationId ? [`configuration ${configurationId}`] : [])]
    await this.attempt(`credential request${what.length ? ` (${what.join(', ')})` : ''}`, async () => {
      const result = await session.requestCredential({
        misbehave,
        ...(configurationId && { configurationId }),
        // the scenario's wallet holds only what its Given steps gave it: sharing that with an issuer whose
        // offer asks for a presentation is the holder's consent (src/wallet/README.md, share)
        share: 'all',
      })
      if (result.status === 202) this.transactionId = result.transactionId
      else this.received = await this.accept(session, result)
      return result
    })
  }

  /**
   * A further credential request on the access token the wallet already asked with (OpenID4VCI 1.0 §14.3);
   * the wallet proves with a fresh nonce from the nonce endpoint unless a misbehaviour says otherwise.
   */
  async requestCredentialAgain(misbehave: Misbehaviour[] = []) {
    const last = this.outcome?.ok
      ? (this.outcome.value as { body?: { notification_id?: unknown } })
      : undefined
    const notificationId = last?.body?.notification_id
    this.previous = {
      credentials: this.received,
      ...(typeof notificationId === 'string' && { notificationId }),
      ...(this.transactionId && { transactionId: this.transactionId }),
    }
    await this.requestCredential(misbehave)
  }

  /** One deferred request with the transaction id of the 202 answer. */
  async pollDeferred() {
    const session = this.requireSession()
    const id = this.transactionId
    if (!id) throw new Error('the credential request was not deferred')
    await this.attempt('deferred credential request', async () => {
      const result = await session.deferred(id)
      if (result.status === 200) this.received = await this.accept(session, result)
      return result
    })
  }

  private async accept(session: IssuanceSession, result: Parameters<IssuanceSession['accept']>[0]) {
    this.stored = await session.accept(result)
    return this.stored.map((c) => c.credential)
  }

  /** A whole wallet flow in one call (scan, token, credential, deferred polling when asked). */
  async receive(keyType: HolderKeyType = 'Ed25519', waitForDeferred = false) {
    const wallet = await this.wallet(keyType)
    if (!this.deepLink) throw new Error('no offer was opened in this scenario')
    const link = this.deepLink
    await this.attempt('receive the credential', async () => {
      const result: ReceiveResult = await wallet.receive(link, {
        ...(this.txCode ? { txCode: this.txCode } : {}),
        waitForDeferred,
      })
      this.session = result.session
      if (result.status === 'pending') this.transactionId = result.transactionId
      else {
        this.stored = result.credentials
        this.received = result.credentials.map((c) => c.credential)
      }
      return result
    })
  }

  private requireSession(): IssuanceSession {
    if (!this.session) throw new Error('the wallet has not scanned an offer yet')
    return this.session
  }

  // Discovery, read the way OpenID4VCI 1.0 §12.2.2 and RFC 8414 §3.1 place the documents

  /** The credential issuer metadata as read at its 1.0 location (readIssuerMetadata). */
  issuerMetadataDocument: Record<string, unknown> | undefined
  /** The authorization server metadata as read at its RFC 8414 location, and the identifier it was read for. */
  authorizationServerDocument: { identifier: string; metadata: Record<string, unknown> } | undefined

  /** GET `<origin>/.well-known/<name><path>`: the well-known segment inserted between host and path. */
  private async readWellKnown(name: string, identifier: string): Promise<Record<string, unknown>> {
    const url = new URL(identifier)
    const path = `/.well-known/${name}${url.pathname.replace(/\/$/, '')}`
    const response = await this.world.client.request(url.origin, path)
    this.world.recordAnswer(response, `GET ${url.origin}${path}`)
    this.world.expectStatus(200)
    if (typeof response.body !== 'object' || response.body === null)
      this.world.fail('a JSON object (application/json)')
    return response.body as Record<string, unknown>
  }

  /** 1.0 §12.2.2: the metadata of the offer's credential issuer, at the well-known URI inserted after the host. */
  async readIssuerMetadata() {
    const issuer = this.requireSession().offer.credential_issuer
    this.issuerMetadataDocument = await this.readWellKnown('openid-credential-issuer', issuer)
    return this.issuerMetadataDocument
  }

  /**
   * RFC 8414 §3.1: the metadata of the authorization server the offer's grant names (1.0 §4.1.1), else the
   * first one of the issuer metadata's `authorization_servers`, else the credential issuer itself (1.0 §12.2.4).
   */
  async readAuthorizationServerMetadata() {
    const session = this.requireSession()
    const grant = session.offer.grants?.[PRE_AUTHORIZED_GRANT] as
      | { authorization_server?: string }
      | undefined
    const servers = (session.issuerMetadata as { authorization_servers?: string[] }).authorization_servers
    const identifier = grant?.authorization_server ?? servers?.[0] ?? session.offer.credential_issuer
    const metadata = await this.readWellKnown('oauth-authorization-server', identifier)
    this.authorizationServerDocument = { identifier, metadata }
    return this.authorizationServerDocument
  }

  /** The configurations of the metadata read at the 1.0 location. */
  configurations(): Record<string, Record<string, unknown>> {
    const metadata = this.issuerMetadataDocument
    if (!metadata) throw new Error('the issuer metadata has not been read at its 1.0 location')
    const configurations = metadata.credential_configurations_supported
    if (
      typeof configurations !== 'object' ||
      configurations === null ||
      Object.keys(configurations).length === 0
    )
      this.world.fail(
        `credential_configurations_supported in the issuer metadata; it was ${JSON.stringify(metadata)}`,
        null,
      )
    return configurations as Record<string, Record<string, unknown>>
  }

  /** 1.0 §12.2.2: the `credential_issuer` of the metadata is the offer's (a wallet must check they are equal). */
  expectMetadataOfOfferIssuer() {
    const offered = this.requireSession().offer.credential_issuer
    const named = this.issuerMetadataDocument?.credential_issuer
    if (named !== offered)
      this.world.fail(
        `credential_issuer ${offered} (the offer's) in the metadata; it was ${JSON.stringify(named)}`,
        null,
      )
  }

  /** Every configuration has `credential_metadata` (1.0 §12.2.4), whose `display` entries each have a name. */
  expectCredentialMetadataEverywhere() {
    for (const [id, configuration] of Object.entries(this.configurations())) {
      const meta = configuration.credential_metadata as { display?: { name?: unknown }[] } | undefined
      const display = meta?.display
      if (typeof meta !== 'object' || meta === null)
        this.world.fail(
          `credential_metadata in configuration "${id}"; it was ${JSON.stringify(configuration)}`,
          null,
        )
      if (
        display !== undefined &&
        (!Array.isArray(display) || display.some((d) => typeof d?.name !== 'string'))
      )
        this.world.fail(
          `a name in every credential_metadata.display entry of "${id}"; it was ${JSON.stringify(display)}`,
          null,
        )
    }
  }

  /** RFC 8414 §3.3: `issuer` is the identifier the document was read for; §2: a token endpoint. */
  expectAuthorizationServerMetadata() {
    const read = this.authorizationServerDocument
    if (!read) throw new Error('the authorization server metadata has not been read')
    const { identifier, metadata } = read
    if (
      metadata.issuer !== identifier ||
      typeof metadata.token_endpoint !== 'string' ||
      !URL.canParse(metadata.token_endpoint)
    )
      this.world.fail(
        `issuer ${identifier} and a token_endpoint URL in the authorization server metadata; it was ${JSON.stringify(metadata)}`,
        null,
      )
  }

  // Expectations on the wallet's outcome

  expectWalletSuccess() {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    if (!outcome.ok)
      this.world.fail(`the wallet's ${outcome.what} to succeed; it got ${outcome.error.message}`, null)
    return outcome.value
  }

  /** The wallet's last step failed on the wire with `status` and OAuth `error`, the description matching. */
  expectWalletError(status: number, error: string, reason?: RegExp) {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    const expected = `the wallet's ${outcome.what} to be refused with HTTP ${status} "${error}"${reason ? ` (reason matching ${reason})` : ''}`
    if (outcome.ok) this.world.fail(`${expected}; it succeeded`, null)
    const got = outcome.error
    if (
      got.status !== status ||
      got.error !== error ||
      (reason && !reason.test(got.errorDescription ?? ''))
    ) {
      this.world.fail(`${expected}; it got ${got.message}`, null)
    }
  }

  /** 1.0 §8.3: 200 `{credentials: [{credential}, …]}` and, as this profile sends it, a `notification_id`. */
  expectCredentialResponseWithNotification() {
    const value = this.expectWalletSuccess() as { status?: number; body?: unknown }
    const body = value.body as
      | { credentials?: { credential?: unknown }[]; notification_id?: unknown }
      | undefined
    const ok =
      value.status === 200 &&
      Array.isArray(body?.credentials) &&
      body.credentials.length > 0 &&
      body.credentials.every((c) => typeof c?.credential === 'string') &&
      typeof body.notification_id === 'string' &&
      body.notification_id !== ''
    if (!ok)
      this.world.fail(
        `HTTP 200 {credentials: [{credential}], notification_id}; got ${JSON.stringify(value)}`,
        null,
      )
  }

  /**
   * 1.0 §14.3: the further credential is another instance for the same wallet: its own credential id and
   * status entry, the same claims, and a notification_id of its own.
   */
  expectFurtherCredential() {
    const previous = this.previous
    if (!previous) throw new Error('the wallet has not asked again in this scenario')
    const value = this.expectWalletSuccess() as { body?: { notification_id?: unknown } }
    const [before, now] = [previous.credentials[0], this.received[0]]
    if (!before || !now)
      this.world.fail(`a credential from each request; received ${JSON.stringify([before, now])}`, null)
    const claims = (credential: string) =>
      decodeJws(credential.split('~')[0] ?? '').payload as {
        sub?: unknown
        jti?: unknown
        vc?: { credentialSubject?: Record<string, unknown>; credentialStatus?: { id?: unknown } }
      }
    const [first, further] = [claims(before), claims(now)]
    const problems = [
      further.sub === first.sub ? '' : `sub ${String(further.sub)}, not the wallet's ${String(first.sub)}`,
      further.jti !== first.jti ? '' : `the same credential id ${String(first.jti)}`,
      further.vc?.credentialStatus?.id !== first.vc?.credentialStatus?.id
        ? ''
        : `the same status entry ${String(first.vc?.credentialStatus?.id)}`,
      JSON.stringify(further.vc?.credentialSubject) === JSON.stringify(first.vc?.credentialSubject)
        ? ''
        : `other claims: ${JSON.stringify(further.vc?.credentialSubject)}`,
      value.body?.notification_id !== previous.notificationId
        ? ''
        : `the same notification_id ${previous.notificationId}`,
    ].filter(Boolean)
    if (problems.length > 0)
      this.world.fail(
        `another credential for the same wallet (own id, status entry and notification_id, the same claims); got ${problems.join('; ')}`,
        null,
      )
  }

  /** A further request while the first one's transaction is open: the same 202 (1.0 §14.3, §9). */
  expectSameTransaction() {
    const value = this.expectWalletSuccess() as { status?: number; transactionId?: string; interval?: number }
    const open = this.previous?.transactionId
    if (value.status !== 202 || !open || value.transactionId !== open || typeof value.interval !== 'number') {
      this.world.fail(
        `HTTP 202 with the first request's transaction_id ${open} and an interval; got ${JSON.stringify(value)}`,
        null,
      )
    }
  }

  /** The deferred answer said the credential is not ready yet. */
  /** OpenID4VCI 1.0 §9.2: still pending is HTTP 202 with the same transaction_id and an interval. */
  expectPending() {
    const value = this.expectWalletSuccess() as { status?: number; transactionId?: string; interval?: number }
    if (
      value.status !== 202 ||
      value.transactionId !== this.transactionId ||
      typeof value.interval !== 'number'
    ) {
      this.world.fail(
        `HTTP 202 with the same transaction_id ${this.transactionId} and an interval; got ${JSON.stringify(value)}`,
        null,
      )
    }
  }

  expectDeferred() {
    const value = this.expectWalletSuccess() as { status?: number; interval?: number }
    if (value.status !== 202 || !this.transactionId || typeof value.interval !== 'number') {
      this.world.fail(`HTTP 202 with transaction_id and interval; got ${JSON.stringify(value)}`, null)
    }
  }

  /** The wallet holds a credential: signed by a did:key issuer, for the wallet's DID, of `type`. */
  async expectReceived(type: string, keyType: HolderKeyType = 'Ed25519') {
    this.expectWalletSuccess()
    const wallet = await this.wallet(keyType)
    const jwt = this.received[0]
    if (!jwt) this.world.fail(`a ${type} credential in the wallet; it received none`, null)
    const { header, payload } = decodeJws(jwt)
    let verified = false
    try {
      verifyJws(jwt, resolveDidKey(String(header.kid)).publicKey, {
        algorithms: ['EdDSA', 'ES256', 'ES256K'],
      })
      verified = true
    } catch {
      // reported below
    }
    if (!verified)
      this.world.fail(
        `a credential whose signature verifies with its issuer did:key ${String(header.kid)}`,
        null,
      )
    const vc = payload.vc as { type?: string[] } | undefined
    if (payload.sub !== wallet.did)
      this.world.fail(`a credential issued to the wallet ${wallet.did}; sub was ${String(payload.sub)}`, null)
    if (vc?.type?.at(-1) !== type)
      this.world.fail(`a credential of type ${type}; type was ${JSON.stringify(vc?.type)}`, null)
    return payload
  }

  /** The issuer DID of the credential the wallet received last. */
  lastIssuerDid(): string {
    const jwt = this.received[0]
    if (!jwt) throw new Error('the wallet has received no credential in this scenario')
    return String(decodeJws(jwt).payload.iss)
  }

  // The relying party's side of the same process

  async readProcess() {
    const response = await this.world.client.getProcess(
      this.openerToken ?? this.world.token('app'),
      this.requireProcess(),
    )
    this.world.recordAnswer(response, 'read the issuance process (4.3)')
    this.world.expectStatus(200)
    return response.body as {
      status: string
      validator: Record<string, unknown> | null
      data?: Record<string, unknown>[]
    }
  }

  async submit(caller: 'app' | 'admin', content: unknown = DEGREE_CONTENT): Promise<ApiResponse<unknown>> {
    const response = await this.world.client.submitCredentials(
      this.world.token(caller),
      this.requireProcess(),
      content,
    )
    this.world.recordAnswer(
      response,
      `submit credentials (4.4) as the ${caller === 'app' ? 'application' : 'administrator'}`,
    )
    return response
  }

  /** 4.4 with the token that opened the offer (linked offers: the application key's). */
  async submitAsOpener(content: unknown = DEGREE_CONTENT): Promise<ApiResponse<unknown>> {
    const response = await this.world.client.submitCredentials(
      this.openerToken ?? this.world.token('app'),
      this.requireProcess(),
      content,
    )
    this.world.recordAnswer(response, 'submit credentials (4.4) as the application that opened the offer')
    return response
  }

  /** Revokes or suspends the credentials of the process with the token that opened the offer. */
  async setStatus(status: 'revoked' | 'suspended') {
    const response = await this.world.client.setCredentialStatus(
      this.openerToken ?? this.world.token('app'),
      this.requireProcess(),
      { status },
    )
    this.world.recordAnswer(response, `set the credentials of the process ${status}`)
    this.world.expectStatus(200)
  }

  async reject(caller: 'app' | 'admin', reason: string) {
    const response = await this.world.client.rejectProcess(
      this.world.token(caller),
      this.requireProcess(),
      reason,
    )
    this.world.recordAnswer(response, 'reject the issuance process')
    return response
  }
}
