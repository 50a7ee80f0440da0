import type { SessionCreated, SessionRead } from '../../src/client/index.ts'
import { resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../src/shared/jws.ts'
import { REQUEST_OBJECT_TYP } from '../../src/shared/wire.ts'
import type {
  HolderKeyType,
  PresentationMisbehaviour,
  PresentationResult,
  PresentationSession,
} from '../../src/wallet/index.ts'
import { DEGREE_CONTENT, IDENTITY_CONTENT, type IssuanceFlow } from './issuance.ts'
import { type WalletAttempt, walletAttempt } from './wallet-outcome.ts'
import type { FlowWorld } from './world-types.ts'

// The verification side of a scenario: the session the relying party opens (4.6), what the scenario's
// wallet (the same one that received credentials) does with it, and what the relying party reads (4.7).

export type VerificationTemplateRole = 'degree check' | 'degree and identity check' | 'status-optional check'

/** The wallet's last presentation step: success, a wire error, or a refusal before anything was sent. */
type PresentOutcome = WalletAttempt<PresentationResult | PresentationSession>

export class VerificationFlow {
  created: SessionCreated | undefined
  private started: PresentationSession | undefined
  private outcome: PresentOutcome | undefined
  /** The issuance process of the credential the wallet received last (to revoke it). */
  private heldProcess: string | undefined

  /** `flows` is the World itself: its issuance flow is created on first use. */
  constructor(
    private readonly world: FlowWorld,
    private readonly flows: { readonly issuance: IssuanceFlow },
  ) {}

  templateId(role: VerificationTemplateRole): string {
    const templates = this.world.tenant.verificationTemplates
    if (!templates)
      throw new Error('this tenant has no verification templates: tag the scenario @needs-portal')
    return role === 'degree check'
      ? templates.degreeCheck
      : role === 'degree and identity check'
        ? templates.degreeAndIdentity
        : templates.statusOptional
  }

  /** Issues a credential to the scenario's wallet through the whole OpenID4VCI flow. */
  async holdCredential(kind: 'degree' | 'identity', keyType: HolderKeyType = 'Ed25519') {
    const issuance = this.flows.issuance
    await this.world.logIn('app')
    await issuance.openOffer(kind === 'degree' ? 'linked' : 'identity')
    const token = kind === 'degree' ? this.world.token('app') : await this.world.unlinkedAppToken()
    const content = kind === 'degree' ? DEGREE_CONTENT : IDENTITY_CONTENT
    const submitted = await this.world.client.submitCredentials(token, issuance.requireProcess(), content)
    this.world.recordAnswer(submitted, `submit the ${kind} credential (4.4)`)
    this.world.expectStatus(200)
    await issuance.receive(keyType)
    await issuance.expectReceived(kind === 'degree' ? 'UniversityDegreeCredential' : 'VerifiableId', keyType)
    this.heldProcess = issuance.requireProcess()
  }

  /** The relying party revokes or suspends the credential the wallet received last. */
  async changeHeldStatus(status: 'revoked' | 'suspended') {
    if (!this.heldProcess) throw new Error('the wallet holds no credential of this scenario')
    const response = await this.world.client.setCredentialStatus(this.world.token('app'), this.heldProcess, {
      status,
    })
    this.world.recordAnswer(response, `set the held credential ${status}`)
    this.world.expectStatus(200)
  }

  /** 4.6 by the tenant's unlinked application (it may use every template). */
  async open(role: VerificationTemplateRole) {
    const template = this.templateId(role)
    const response = await this.world.client.createSession(await this.world.unlinkedAppToken(), template)
    this.world.recordAnswer(response, `create a verification session for "${template}" (4.6)`)
    this.world.expectStatus(201)
    this.created = response.body as SessionCreated
    return this.created
  }

  requireCreated(): SessionCreated {
    if (!this.created) throw new Error('no verification session was opened in this scenario')
    return this.created
  }

  get sessionId(): string {
    return this.requireCreated().presentation_definition.id
  }

  private async attempt(what: string, work: () => Promise<PresentationResult | PresentationSession>) {
    this.outcome = await walletAttempt(what, work)
  }

  /** The wallet scans the QR (the authentication request) and presents, in one call. */
  async present(misbehave: PresentationMisbehaviour[] = [], keyType: HolderKeyType = 'Ed25519') {
    const wallet = await this.flows.issuance.wallet(keyType)
    const link = this.requireCreated().authentication_request
    const what = `presentation${misbehave.length ? ` (${misbehave.join(', ')})` : ''}`
    await this.attempt(what, () => wallet.present(link, { misbehave }))
  }

  /** The wallet fetches and verifies the request object only. */
  async fetchRequest(keyType: HolderKeyType = 'Ed25519') {
    const wallet = await this.flows.issuance.wallet(keyType)
    const link = this.requireCreated().authentication_request
    await this.attempt('fetch the request object', async () => {
      this.started = await wallet.startPresentation(link)
      return this.started
    })
    this.expectWalletSuccess()
    return this.started as PresentationSession
  }

  /** Answers the request fetched before, misbehaving as asked. */
  async respond(misbehave: PresentationMisbehaviour[] = []) {
    const session = this.started
    if (!session) throw new Error('the wallet has not fetched the request object')
    await this.attempt(`response${misbehave.length ? ` (${misbehave.join(', ')})` : ''}`, () =>
      session.respond({ misbehave }),
    )
  }

  /** Moves the service clock past the session's expiry. */
  expireSession() {
    const clock = this.world.target.clock
    if (!clock) throw new Error('moving time needs the clock capability (tag the scenario @needs-clock)')
    const exp = decodeJws(this.requestObjectJwt()).payload.exp as number
    clock.advance(Math.max(0, exp * 1000 - clock.now()) + 1000)
  }

  private requestObjectJwt(): string {
    const session = this.started
    if (!session) throw new Error('the wallet has not fetched the request object')
    return session.requestObject
  }

  /** 4.7 by the application that opened the session. */
  async read(): Promise<SessionRead> {
    const response = await this.world.client.readSession(await this.world.unlinkedAppToken(), this.sessionId)
    this.world.recordAnswer(response, 'read the verification session (4.7)')
    return response.body as SessionRead
  }

  // Expectations on the wallet's outcome

  expectWalletSuccess(): PresentationResult | PresentationSession {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    if (outcome.kind !== 'ok')
      this.world.fail(`the wallet's ${outcome.what} to succeed; it got ${outcome.message}`, null)
    return outcome.result
  }

  /** The verifier refused the wallet with `status` and `error`, the description naming `reason`. */
  expectWalletRefused(status: number, error: string, reason?: string) {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    const expected = `the wallet's ${outcome.what} to be refused with HTTP ${status} "${error}"${reason ? ` naming "${reason}"` : ''}`
    if (outcome.kind === 'ok') this.world.fail(`${expected}; it was accepted`, null)
    if (outcome.kind === 'usage')
      this.world.fail(`${expected}; the wallet refused by itself: ${outcome.message}`, null)
    if (
      outcome.status !== status ||
      outcome.error !== error ||
      (reason && !outcome.description.includes(reason))
    ) {
      this.world.fail(`${expected}; it got ${outcome.message}`, null)
    }
  }

  /** The wallet refused to present before sending anything, saying `reason`. */
  expectWalletDeclined(reason: string) {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    if (outcome.kind !== 'usage' || !outcome.message.includes(reason)) {
      this.world.fail(
        `the wallet to refuse by itself, naming "${reason}"; it ${outcome.kind === 'ok' ? 'presented' : `got ${outcome.message}`}`,
        null,
      )
    }
  }

  // Expectations on what the relying party reads

  /** 4.7 answers the state with 202 while pending and 200 once final. */
  async expectState(state: SessionRead['Status']) {
    const body = await this.read()
    const status = state === 'PENDING' ? 202 : 200
    this.world.expectStatus(status)
    if (body.Status !== state) this.world.fail(`a session in state ${state} (HTTP ${status})`)
    return body
  }

  /** The named check failed, in Validations and in the webhook-form errors. */
  expectFailedCheck(body: SessionRead, check: string, reason?: string) {
    const entry = body.Validations?.checks.find((c) => c.check === check)
    if (entry?.result !== 'failed' || (reason && !entry.message.includes(reason))) {
      this.world.fail(`Validations to show check "${check}" failed${reason ? ` because "${reason}"` : ''}`)
    }
    if (!body.Validations?.verificationResult.errors.some((e) => e.startsWith(`${check}:`))) {
      this.world.fail(`verificationResult.errors to name "${check}"`)
    }
    if (body.Validations.status !== 'REJECT') this.world.fail('Validations.status REJECT')
  }

  async expectVerifiedBy(keyType: HolderKeyType = 'Ed25519') {
    const wallet = await this.flows.issuance.wallet(keyType)
    const body = await this.expectState('VERIFIED')
    if (body.Subject !== wallet.did) this.world.fail(`Subject to be the wallet's DID ${wallet.did}`)
    const notPassed = body.Validations?.checks.filter((c) => c.result !== 'passed') ?? []
    if (body.Validations?.status !== 'SUCCESS' || notPassed.length > 0) {
      this.world.fail('Validations with status SUCCESS and every check passed')
    }
    if (body.PresentationSubmissionFormat !== 'jwt_vp' || !body.PresentationSubmission) {
      this.world.fail('PresentationSubmission filled and PresentationSubmissionFormat "jwt_vp"')
    }
    return body
  }

  /** The signed request object: typ, signature by the client_id DID, nonce of at least 128 bits. */
  expectSignedRequest(jwt: string) {
    const link = new URL(this.requireCreated().authentication_request)
    const clientId = link.searchParams.get('client_id') ?? ''
    const { header, payload } = decodeJws(jwt)
    if (header.typ !== REQUEST_OBJECT_TYP)
      this.world.fail(`typ ${REQUEST_OBJECT_TYP}; it was ${String(header.typ)}`, null)
    const key = resolveDidKey(String(header.kid))
    if (key.did !== clientId)
      this.world.fail(
        `a request signed by the client_id DID ${clientId}; kid was ${String(header.kid)}`,
        null,
      )
    try {
      verifyJws(jwt, key.publicKey, { algorithms: ['EdDSA', 'ES256', 'ES256K'] })
    } catch {
      this.world.fail('a request object whose signature verifies with the client_id key', null)
    }
    const nonce = String(payload.nonce ?? '')
    if (Buffer.from(nonce, 'base64url').length < 16)
      this.world.fail(`a nonce of at least 128 bits; it was "${nonce}"`, null)
    for (const claim of ['state', 'response_uri', 'presentation_definition', 'exp'] as const) {
      if (payload[claim] === undefined) this.world.fail(`the request object claim ${claim}`, null)
    }
    if (payload.client_id !== clientId || payload.response_mode !== 'direct_post') {
      this.world.fail("client_id equal to the link's and response_mode direct_post", null)
    }
  }
}
