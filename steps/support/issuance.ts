import type { ApiResponse } from '../../src/client/index.ts'
import { resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../src/shared/jws.ts'
import type { HolderKeyType, Misbehaviour, ReceiveResult, Wallet } from '../../src/wallet/index.ts'
import type { IssuanceSession } from '../../src/wallet/issuance.ts'
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

export class IssuanceFlow {
  private wallets = new Map<string, Wallet>()
  deepLink: string | undefined
  txCode: string | undefined
  processId: string | undefined
  /** The application token that opened the offer: the one linked to (or covering) its template. */
  private openerToken: string | undefined
  session: IssuanceSession | undefined
  transactionId: string | undefined
  received: string[] = []
  private outcome: WalletOutcome | undefined

  constructor(private readonly world: FlowWorld) {}

  /** The scenario's wallet (created on first use); several key types may coexist. */
  async wallet(keyType: HolderKeyType = 'Ed25519'): Promise<Wallet> {
    let wallet = this.wallets.get(keyType)
    if (!wallet) {
      const { Wallet } = await import('../../src/wallet/index.ts')
      wallet = await Wallet.create({ keyType })
      this.wallets.set(keyType, wallet)
    }
    return wallet
  }

  /** The application opens an offer for one of the tenant's templates (4.2) and keeps its deep link. */
  async openOffer(role: TemplateRole = 'linked') {
    const template = this.world.templateFor(role)
    const token = role === 'linked' ? this.world.token('app') : await this.world.unlinkedAppToken()
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
    try {
      this.outcome = { ok: true, what, value: await work() }
    } catch (error) {
      const e = error as {
        name?: string
        step?: string
        status?: number
        error?: string
        errorDescription?: string
        message: string
      }
      if (e.name !== 'WalletProtocolError') throw error
      this.outcome = {
        ok: false,
        what,
        error: {
          step: e.step ?? '?',
          status: e.status ?? 0,
          ...(e.error ? { error: e.error } : {}),
          ...(e.errorDescription ? { errorDescription: e.errorDescription } : {}),
          message: e.message,
        },
      }
    }
  }

  /** The wallet scans the deep link: fetches the offer and the issuer metadata. */
  async scan(keyType: HolderKeyType = 'Ed25519') {
    const wallet = await this.wallet(keyType)
    if (!this.deepLink) throw new Error('no offer was opened in this scenario')
    const link = this.deepLink
    await this.attempt('scan the offer', async () => {
      this.session = await wallet.startIssuance(link)
      return this.session
    })
    this.expectWalletSuccess()
  }

  /** Token request; `txCode` undefined sends the code the offer response carried. */
  async redeem(misbehave: Misbehaviour[] = [], txCode = this.txCode) {
    const session = this.requireSession()
    await this.attempt(`token request${misbehave.length ? ` (${misbehave.join(', ')})` : ''}`, () =>
      session.token({ ...(txCode ? { txCode } : {}), misbehave }),
    )
  }

  async requestCredential(misbehave: Misbehaviour[] = []) {
    const session = this.requireSession()
    await this.attempt(
      `credential request${misbehave.length ? ` (${misbehave.join(', ')})` : ''}`,
      async () => {
        const result = await session.requestCredential({ misbehave })
        if (result.status === 202) this.transactionId = result.transactionId
        else this.received = await this.accept(session, result)
        return result
      },
    )
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
    const stored = await session.accept(result)
    return stored.map((c) => c.credential)
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
      else this.received = result.credentials.map((c) => c.credential)
      return result
    })
  }

  private requireSession(): IssuanceSession {
    if (!this.session) throw new Error('the wallet has not scanned an offer yet')
    return this.session
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
