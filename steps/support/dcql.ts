import { isDeepStrictEqual } from 'node:util'
import {
  type DcqlSessionCreated,
  type IssuanceTemplateInput,
  parseCredentialOfferUri,
  type SessionRead,
  type VerificationTemplateInput,
} from '../../src/client/index.ts'
import type { Delivery, WebhookEndpoint, WebhookEventBody } from '../../src/harness/webhook-receiver.ts'
import { decodeJws } from '../../src/shared/jws.ts'
import { MDL_NAMESPACE, MDOC_FORMAT } from '../../src/shared/mdoc.ts'
import { splitSdJwt } from '../../src/shared/sd-jwt.ts'
import { PEM_MEDIA_TYPE, REQUEST_OBJECT_TYP, SD_JWT_VC_TYP } from '../../src/shared/wire.ts'
import type {
  PresentationMisbehaviour,
  PresentationResult,
  PresentationSessionV1,
  StoredCredential,
  Wallet,
} from '../../src/wallet/index.ts'
import { DEGREE_CONTENT } from './issuance.ts'
import { createMdlTemplate, MDL_CONTENT, MDL_TEMPLATE } from './mdoc-template.ts'
import { type WalletAttempt, walletAttempt } from './wallet-outcome.ts'
import { acknowledged, receiverFor } from './webhooks.ts'
import type { FlowWorld } from './world-types.ts'

// The OpenID4VP 1.0 side of a scenario (a verification template of profile `dcql`): the scenario's own
// wallet (P-256, HAIP's ES256, trusting the tenant's test CA as the x509 client identifiers and x5c issuers
// need), the credentials it received over OpenID4VCI 1.0, the dcql template created through the portal, the
// session the relying party opens (4.6), the wallet's answer and what the relying party reads (4.7, webhooks).
// The World owns one; steps call it in one line.

/** What a dcql template asks for: one credential type and one of its claims. */
export type DcqlAsk = 'family name' | 'degree name' | 'mDL family name'
export type DcqlFormat = 'dc+sd-jwt' | 'jwt_vc_json' | 'mso_mdoc'
export type ClientIdPrefix = 'decentralized_identifier' | 'x509_san_dns' | 'x509_hash' | 'redirect_uri'
export type ResponseMode = 'direct_post' | 'direct_post.jwt'
/** How the wallet fetches the request object (request_uri_method, OpenID4VP 1.0 §5.10). */
export type RequestUriMethod = 'get' | 'post'
/** The credentials a scenario's wallet can hold. */
export type HeldCredential = 'sd-jwt' | 'x5c sd-jwt' | 'jwt_vc_json degree' | 'mdl'
/** Whose certificate authority the wallet (or a template) trusts. */
export type TrustChoice = 'the tenant' | 'another CA' | 'no CA'

const ASKS: Record<DcqlAsk, { credentialType: string; path: string; claim: string[] }> = {
  'family name': {
    credentialType: 'VerifiableId',
    path: '$.credentialSubject.familyName',
    claim: ['familyName'],
  },
  'degree name': {
    credentialType: 'UniversityDegreeCredential',
    path: '$.credentialSubject.degree.name',
    claim: ['degree', 'name'],
  },
  // OpenID4VP 1.0 Appendix B.2: an element of the doctype's own namespace, the claims path [namespace, element]
  'mDL family name': {
    credentialType: MDL_TEMPLATE.doctype,
    path: '$.credentialSubject.family_name',
    claim: [MDL_NAMESPACE, 'family_name'],
  },
}

/** The identity the SD-JWT VC templates issue: two selectively disclosable claims, one of them asked for. */
export const PID_CONTENT = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Hopper', firstName: 'Grace' },
  },
]

/** SD-JWT VC issuance templates (created through the portal on first use), as test/fixtures/dcql-service.ts. */
const SD_JWT_TEMPLATES: Record<'sd-jwt' | 'x5c sd-jwt', IssuanceTemplateInput> = {
  'sd-jwt': {
    id: 'pid',
    credentialType: 'VerifiableId',
    format: SD_JWT_VC_TYP,
    selectivelyDisclosable: ['familyName', 'firstName'],
  },
  // SD-JWT VC §3.5 (HAIP): the issuer key named by an x5c chain from the tenant's test CA.
  'x5c sd-jwt': {
    id: 'pid-x5c',
    credentialType: 'VerifiableId',
    format: SD_JWT_VC_TYP,
    signingAlg: 'ES256',
    issuerKeyBinding: 'x5c',
    selectivelyDisclosable: ['familyName', 'firstName'],
  },
}

/** The W3C subject `id` (the SD-JWT's `sub`) is the holder, not a disclosed claim. */
const NOT_SUBJECT_CLAIMS = ['id']

/** The claims of a shared credentialSubject or a webhook payload, the subject id left out. */
export function subjectClaims(claims: Record<string, unknown> | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(claims ?? {}).filter(([k]) => !NOT_SUBJECT_CLAIMS.includes(k)))
}

/** Members of a template as the portal shows it that a replacement must not send. */
const VIEW_ONLY = ['id', 'hasWebhookSecret', 'source', 'createdAt', 'updatedAt']

/** The checks of the one pipeline (docs/verification.md): a dcql session reports the same as a pe one. */
export const CHECK_NAMES = [
  'securityMechanisms',
  'presentationProof',
  'sessionBinding',
  'credentialProof',
  'holderBinding',
  'trustedIssuer',
  'validityPeriod',
  'credentialStatus',
  'matchingIds',
] as const

type DcqlTemplateInput = VerificationTemplateInput & {
  profile: 'dcql'
  dcql: {
    format: DcqlFormat
    clientIdPrefix?: ClientIdPrefix
    responseMode?: ResponseMode
    requestUriMethod?: RequestUriMethod
  }
}

export interface DcqlTemplateChoice {
  ask: DcqlAsk
  format: DcqlFormat
  prefix?: ClientIdPrefix
  responseMode?: ResponseMode
  requestUriMethod?: RequestUriMethod
}

/** The wallet's last presentation step: success, a wire error, or a refusal before anything was sent. */
type Outcome = WalletAttempt<PresentationResult | PresentationSessionV1>

export class DcqlFlow {
  private walletPromise: Promise<Wallet> | undefined
  private walletTrust: TrustChoice = 'the tenant'
  private tenantAnchor: string | undefined
  private tenantIacaPem: string | undefined
  /** The wallet trusts the tenant's IACA too (an mdoc's issuerAuth chains to it); set before it is made. */
  private trustsIaca = false
  /** The issuance process behind each kind of credential the wallet received, and the token that opened it. */
  private readonly processes = new Map<HeldCredential, { id: string; token: string }>()
  private readonly issuanceTemplates = new Set<string>()
  /** What the wallet received, per kind. */
  private readonly held = new Map<HeldCredential, StoredCredential>()
  private templates = 0
  template: { id: string; choice: DcqlTemplateChoice } | undefined
  endpoint: WebhookEndpoint | undefined
  created: DcqlSessionCreated | undefined
  private started: PresentationSessionV1 | undefined
  private presented: PresentationResult | undefined
  private outcome: Outcome | undefined
  delivery: Delivery | undefined

  constructor(private readonly world: FlowWorld) {}

  // The wallet and its credentials

  /** GET /oid4vci/<tenant>/trust-anchor: the PEM of the tenant's test CA. */
  async tenantTrustAnchor(): Promise<string> {
    if (this.tenantAnchor) return this.tenantAnchor
    const tenant = this.world.tenant.tenant
    const response = await this.world.client.request<string>(
      this.world.client.urls.issuerUrl,
      `/oid4vci/${encodeURIComponent(tenant)}/trust-anchor`,
    )
    this.world.recordAnswer(response, `GET the trust anchor of tenant ${tenant}`)
    this.world.expectStatus(200)
    if (!response.text.includes('-----BEGIN CERTIFICATE-----')) this.world.fail('a PEM certificate')
    this.tenantAnchor = response.text
    return this.tenantAnchor
  }

  /** GET /oid4vci/<tenant>/iaca: the PEM of the tenant's IACA root (ISO 18013-5 Annex B), mdoc issuers' anchor. */
  async tenantIaca(): Promise<string> {
    if (this.tenantIacaPem) return this.tenantIacaPem
    const tenant = this.world.tenant.tenant
    const response = await this.world.client.request<string>(
      this.world.client.urls.issuerUrl,
      `/oid4vci/${encodeURIComponent(tenant)}/iaca`,
    )
    this.world.recordAnswer(response, `GET the IACA of tenant ${tenant}`)
    this.world.expectStatus(200)
    if (
      !(response.headers.get('content-type') ?? '').startsWith(PEM_MEDIA_TYPE) ||
      !response.text.includes('-----BEGIN CERTIFICATE-----')
    )
      this.world.fail(`a PEM certificate (${PEM_MEDIA_TYPE})`)
    this.tenantIacaPem = response.text
    return this.tenantIacaPem
  }

  private async anchors(choice: TrustChoice): Promise<string[]> {
    if (choice === 'no CA') return []
    if (choice === 'the tenant') return [await this.tenantTrustAnchor()]
    const { certificatePem, generateTestCa } = await import('../../src/shared/x509.ts')
    const ca = await generateTestCa({ name: 'CN=A CA nobody in this tenant uses, O=vc-harness conformance' })
    return [certificatePem(ca.certificate)]
  }

  /** Whose CA the wallet trusts; before the wallet is first used. */
  trustOnly(choice: TrustChoice) {
    if (this.walletPromise) throw new Error('the wallet exists already: say whom it trusts first')
    this.walletTrust = choice
  }

  /** The scenario's OpenID4VP 1.0 wallet (created on first use). */
  wallet(): Promise<Wallet> {
    this.walletPromise ??= (async () => {
      const { Wallet } = await import('../../src/wallet/index.ts')
      return Wallet.create({
        keyType: 'P-256',
        trustAnchors: [
          ...(await this.anchors(this.walletTrust)),
          ...(this.trustsIaca ? [await this.tenantIaca()] : []),
        ],
        fetch: this.world.exchanges.walletFetch(),
      })
    })()
    return this.walletPromise
  }

  private async issuanceTemplate(kind: HeldCredential): Promise<string> {
    if (kind === 'jwt_vc_json degree') return this.world.tenant.issuanceTemplate
    if (kind === 'mdl') {
      if (!this.issuanceTemplates.has(MDL_TEMPLATE.id)) await createMdlTemplate(this.world)
      this.issuanceTemplates.add(MDL_TEMPLATE.id)
      return MDL_TEMPLATE.id
    }
    const template = SD_JWT_TEMPLATES[kind]
    if (!this.world.tenant.templates)
      throw new Error('creating SD-JWT VC templates needs the portal: tag the scenario @needs-portal')
    if (!this.issuanceTemplates.has(template.id)) {
      const response = await this.world.client.createIssuanceTemplate(
        await this.world.logIn('admin'),
        template,
      )
      this.world.recordAnswer(response, `create the issuance template "${template.id}" (portal)`)
      this.world.expectStatus(201)
      this.issuanceTemplates.add(template.id)
    }
    return template.id
  }

  /** The whole OpenID4VCI flow: offer (4.2), submission (4.4), the wallet receives and verifies. */
  async hold(kind: HeldCredential) {
    if (kind === 'mdl' && !this.trustsIaca) {
      // an mdoc's issuerAuth chains to the tenant's IACA: the wallet refuses it at receipt without that anchor
      if (this.walletPromise) throw new Error('the wallet exists already: receive the mDL first')
      this.trustsIaca = true
    }
    const template = await this.issuanceTemplate(kind)
    const token = await this.world.unlinkedAppToken()
    const offer = await this.world.client.createOffer(token, template)
    this.world.recordAnswer(offer, `create an offer for "${template}" (4.2)`)
    this.world.expectStatus(201)
    const link = (offer.body as { credential_offer_uri: string }).credential_offer_uri
    const content =
      kind === 'jwt_vc_json degree' ? DEGREE_CONTENT : kind === 'mdl' ? MDL_CONTENT : PID_CONTENT
    const processId = parseCredentialOfferUri(link).processId
    this.processes.set(kind, { id: processId, token })
    const submitted = await this.world.client.submitCredentials(token, processId, content)
    this.world.recordAnswer(submitted, `submit the credential of "${template}" (4.4)`)
    this.world.expectStatus(200)
    const wallet = await this.wallet()
    let received: Awaited<ReturnType<Wallet['receive']>>
    try {
      received = await wallet.receive(link)
    } catch (error) {
      this.world.fail(`the wallet to receive the "${template}" credential; ${(error as Error).message}`, null)
    }
    const stored = received.status === 'issued' ? received.credentials[0] : undefined
    if (!stored) this.world.fail(`the "${template}" credential issued at once; got ${received.status}`, null)
    const format =
      kind === 'jwt_vc_json degree' ? 'jwt_vc_json' : kind === 'mdl' ? MDOC_FORMAT : SD_JWT_VC_TYP
    if (stored.format !== format)
      this.world.fail(`a ${format} credential; the wallet stored a ${stored.format} one`, null)
    this.held.set(kind, stored)
    return stored
  }

  /** The relying party revokes the credential of `kind` the wallet received (its process's status entry, 4.4). */
  async revokeHeld(kind: HeldCredential) {
    const process = this.processes.get(kind)
    if (!process) throw new Error(`the wallet received no ${kind} credential in this scenario`)
    const response = await this.world.client.setCredentialStatus(process.token, process.id, {
      status: 'revoked',
    })
    this.world.recordAnswer(response, `revoke the ${kind} credential of its process`)
    this.world.expectStatus(200)
  }

  heldCredential(kind: HeldCredential): StoredCredential {
    const stored = this.held.get(kind)
    if (!stored) throw new Error(`the wallet holds no ${kind} credential in this scenario`)
    return stored
  }

  // The template and the session

  /** A dcql verification template through the portal, with the tenant's administrator key. */
  async defineTemplate(choice: DcqlTemplateChoice) {
    const ask = ASKS[choice.ask]
    const id = `dcql-${++this.templates}`
    const template: DcqlTemplateInput = {
      id,
      name: `${choice.ask} (${choice.format}, OpenID4VP 1.0)`,
      profile: 'dcql',
      credentialTypes: [ask.credentialType],
      purpose: `We check the ${choice.ask}`,
      requestedFields: [{ path: ask.path }],
      dcql: {
        format: choice.format,
        ...(choice.prefix && { clientIdPrefix: choice.prefix }),
        ...(choice.responseMode && { responseMode: choice.responseMode }),
        ...(choice.requestUriMethod && { requestUriMethod: choice.requestUriMethod }),
      },
    }
    const response = await this.world.client.createVerificationTemplate(
      await this.world.logIn('admin'),
      template,
    )
    this.world.recordAnswer(response, `create the dcql verification template "${id}" (portal)`)
    this.world.expectStatus(201)
    this.template = { id, choice }
  }

  /** PUT of the template as it reads, with `changes` (the portal's replace keeps nothing implicitly). */
  private async changeTemplate(changes: Record<string, unknown>, what: string) {
    const { id } = this.requireTemplate()
    const admin = await this.world.logIn('admin')
    const read = await this.world.client.getTemplate(admin, 'verification', id)
    this.world.recordAnswer(read, `read the dcql verification template "${id}" (portal)`)
    this.world.expectStatus(200)
    const current = Object.fromEntries(
      Object.entries(read.body as Record<string, unknown>).filter(([k]) => !VIEW_ONLY.includes(k)),
    )
    const response = await this.world.client.replaceTemplate(admin, 'verification', id, {
      ...current,
      ...changes,
    } as never)
    this.world.recordAnswer(response, `${what} (portal)`)
    this.world.expectStatus(200)
  }

  /** The template's webhooks go to a fresh endpoint of the harness receiver. */
  async sendWebhooksToReceiver() {
    const receiver = await receiverFor(this.world.target)
    this.endpoint = receiver.endpoint(this.world.scenario.name.slice(0, 40))
    await this.changeTemplate(
      { webhookUrl: this.endpoint.url, webhookSecret: this.endpoint.secret },
      'point the webhook of the dcql template at the harness receiver',
    )
  }

  /** The template's `trustAnchors` (SD-JWT VC §3.5 issuers) name only a CA the tenant does not use. */
  async trustOnlyAnotherCa() {
    await this.changeTemplate(
      { trustAnchors: await this.anchors('another CA') },
      "set the dcql template's trustAnchors to another CA",
    )
  }

  /** The template's `trustAnchors` name only an IACA root the tenant does not use (mdoc issuers). */
  async trustOnlyAnotherIaca() {
    const { certificatePem, generateIaca } = await import('../../src/shared/x509.ts')
    const iaca = await generateIaca({
      commonName: 'An IACA nobody in this tenant uses',
      uri: 'https://iaca.example.invalid',
    })
    await this.changeTemplate(
      { trustAnchors: [certificatePem(iaca.certificate)] },
      "set the dcql template's trustAnchors to another IACA",
    )
  }

  requireTemplate() {
    if (!this.template) throw new Error('no dcql template was defined in this scenario')
    return this.template
  }

  /** 4.6 by the tenant's unlinked application. */
  async open() {
    const { id } = this.requireTemplate()
    const response = await this.world.client.createSession<DcqlSessionCreated>(
      await this.world.unlinkedAppToken(),
      id,
    )
    this.world.recordAnswer(response, `create a verification session for the dcql template "${id}" (4.6)`)
    this.world.expectStatus(201)
    this.created = response.body as DcqlSessionCreated
    this.started = undefined
    this.presented = undefined
    this.outcome = undefined
    return this.created
  }

  requireCreated(): DcqlSessionCreated {
    if (!this.created) throw new Error('no dcql session was opened in this scenario')
    return this.created
  }

  get sessionId(): string {
    return this.requireCreated().id
  }

  /** 4.7 by the application that opened the session. */
  async read(): Promise<SessionRead> {
    const response = await this.world.client.readSession(await this.world.unlinkedAppToken(), this.sessionId)
    this.world.recordAnswer(response, 'read the dcql verification session (4.7)')
    return response.body as SessionRead
  }

  // The wallet's answer

  private async attempt(what: string, work: () => Promise<PresentationResult | PresentationSessionV1>) {
    this.outcome = await walletAttempt(what, work)
  }

  private describe(what: string, misbehave: readonly PresentationMisbehaviour[]) {
    return `${what}${misbehave.length ? ` (${misbehave.join(', ')})` : ''}`
  }

  /** The wallet scans the link, fetches and verifies the request (per prefix), selects and answers. */
  async present(misbehave: PresentationMisbehaviour[] = []) {
    const wallet = await this.wallet()
    const link = this.requireCreated().authentication_request
    await this.attempt(this.describe('OpenID4VP 1.0 presentation', misbehave), async () => {
      this.started = await wallet.startPresentationV1(link, { misbehave })
      this.presented = await this.started.respond({ misbehave })
      return this.presented
    })
  }

  /** The wallet fetches and verifies the request only. */
  async fetchRequest() {
    const wallet = await this.wallet()
    const link = this.requireCreated().authentication_request
    await this.attempt('fetch the OpenID4VP 1.0 request', async () => {
      this.started = await wallet.startPresentationV1(link)
      return this.started
    })
    this.expectWalletSuccess()
  }

  /** Answers the request fetched before. */
  async respond(misbehave: PresentationMisbehaviour[] = []) {
    const session = this.requireStarted()
    await this.attempt(this.describe('OpenID4VP 1.0 response', misbehave), async () => {
      this.presented = await session.respond({ misbehave })
      return this.presented
    })
  }

  /** Moves the service clock past the expiry of the request the wallet fetched. */
  expireSession() {
    const clock = this.world.target.clock
    if (!clock) throw new Error('moving time needs the clock capability (tag the scenario @needs-clock)')
    const exp = this.requireStarted().expiresAt
    if (exp === undefined) throw new Error('the request object has no exp')
    clock.advance(Math.max(0, exp - clock.now()) + 1000)
  }

  private requireStarted(): PresentationSessionV1 {
    if (!this.started) throw new Error('the wallet has not fetched the request')
    return this.started
  }

  /** The wallet's answer that the verifier accepted (expectations of a format, steps/support/mdoc.ts). */
  presentedAnswer(): PresentationResult {
    return this.requirePresented()
  }

  private requirePresented(): PresentationResult {
    this.expectWalletSuccess()
    if (!this.presented) throw new Error('the wallet has not answered')
    return this.presented
  }

  // Expectations on the wallet's outcome

  expectWalletSuccess() {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    if (outcome.kind !== 'ok')
      this.world.fail(`the wallet's ${outcome.what} to succeed; it got ${outcome.message}`, null)
    return outcome.result
  }

  /** HTTP 200 to the vp_token (`verified`) or to the wallet's error answer (`rejected-by-wallet`). */
  expectAnswerReceived(status: PresentationResult['status']) {
    const result = this.requirePresented()
    if (result.status !== status || result.httpStatus !== 200)
      this.world.fail(
        `HTTP 200 to the wallet's ${status === 'verified' ? 'vp_token' : 'error answer'}; got HTTP ${result.httpStatus} ${JSON.stringify(result.response)}`,
        null,
      )
  }

  /** The verifier answered the wallet's response with `status` and OAuth `error`. */
  expectVerifierRefused(status: number, error: string) {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    const expected = `the wallet's ${outcome.what} to be refused with HTTP ${status} "${error}"`
    if (outcome.kind === 'ok') this.world.fail(`${expected}; it was accepted`, null)
    if (outcome.kind === 'usage')
      this.world.fail(`${expected}; the wallet refused by itself: ${outcome.message}`, null)
    if (outcome.step !== 'response' || outcome.status !== status || outcome.error !== error)
      this.world.fail(`${expected}; it got ${outcome.message}`, null)
  }

  /** The wallet refused the verifier's request with `error` and sent nothing (step `request`). */
  expectWalletRefusedRequest(error: string) {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    const expected = `the wallet to refuse the request with "${error}" before answering`
    if (outcome.kind !== 'protocol' || outcome.step !== 'request' || outcome.error !== error)
      this.world.fail(
        `${expected}; it ${outcome.kind === 'ok' ? 'presented' : `got ${outcome.message}`}`,
        null,
      )
  }

  /** The wallet found nothing the DCQL query accepts and sent nothing. */
  expectWalletFoundNothing() {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    const queries = (this.requireCreated().dcql_query.credentials ?? []).map((c) => c.id)
    if (
      outcome.kind !== 'usage' ||
      outcome.name !== 'DcqlUnsatisfiedError' ||
      !queries.every((id) => outcome.message.includes(id))
    )
      this.world.fail(
        `the wallet to refuse by itself, naming the unsatisfied credential queries ${queries.join(', ')}; it ${outcome.kind === 'ok' ? 'presented' : `got ${outcome.message}`}`,
        null,
      )
  }

  /**
   * OpenID4VP 1.0 §5.9.3, as the wallet verified it: decentralized_identifier — a request object signed by the
   * key its `kid` names, a DID URL of the client identifier; x509_san_dns — signed by the leaf of an x5c chain
   * ending in the tenant's CA, whose dNSName is the client identifier and the host of response_uri; x509_hash
   * — the client identifier is the SHA-256 of that leaf; redirect_uri — unsigned, every parameter in the link,
   * the client identifier being response_uri.
   */
  async expectRequestVerifiedAs(prefix: ClientIdPrefix) {
    const request = this.requireStarted().request
    const resolved = {
      clientId: request.clientId,
      signed: request.signed,
      requestUriMethod: request.requestUriMethod,
      header: request.header && { ...request.header, x5c: request.header.x5c && '…' },
      certificate: request.certificate,
      responseUri: request.responseUri,
    }
    const fail = (what: string) =>
      this.world.fail(`a ${prefix} request: ${what}; the wallet resolved ${JSON.stringify(resolved)}`, null)
    const link = new URL(this.requireCreated().authentication_request)
    if (link.searchParams.get('client_id') !== `${prefix}:${request.identifier}` || request.prefix !== prefix)
      fail(`client_id ${prefix}:… in the link and in the request`)
    if (prefix === 'redirect_uri') {
      if (request.signed || request.requestUri !== undefined || request.requestObject !== undefined)
        fail('no request object (parameters by value)')
      if (request.identifier !== request.responseUri) fail('the client identifier is the response_uri')
      return
    }
    const jwt = request.requestObject
    if (!request.signed || jwt === undefined || request.status !== 200)
      fail('a signed request object fetched from request_uri')
    const { header } = decodeJws(jwt as string)
    if (header.typ !== REQUEST_OBJECT_TYP) fail(`typ ${REQUEST_OBJECT_TYP}`)
    if (prefix === 'decentralized_identifier') {
      if (!request.identifier.startsWith('did:') || !String(header.kid).startsWith(`${request.identifier}#`))
        fail('a kid naming a key of the client identifier DID')
      return
    }
    const x5c = header.x5c as string[] | undefined
    if (!Array.isArray(x5c) || x5c.length === 0 || !request.certificate)
      fail('an x5c chain the wallet validated')
    const anchor = await this.tenantTrustAnchor()
    const { parseCertificates, x509Hash } = await import('../../src/shared/x509.ts')
    const ca = parseCertificates(anchor)[0]
    if (!ca || request.certificate?.anchor !== ca.subject)
      fail(`a chain ending in the tenant's CA (${ca?.subject})`)
    if (prefix === 'x509_san_dns') {
      if (
        !request.certificate?.dns.includes(request.identifier) ||
        new URL(request.responseUri).hostname !== request.identifier
      )
        fail("the client identifier is a dNSName of the leaf and response_uri's host")
    } else if (x509Hash((x5c as string[])[0] as string) !== request.identifier) {
      fail('the client identifier is the SHA-256 hash of the leaf certificate')
    }
  }

  /** §5.10: the request object was fetched by POST, and §5.10.1: it echoes the wallet_nonce posted. */
  expectWalletNonceEchoed() {
    const request = this.requireStarted().request
    const link = new URL(this.requireCreated().authentication_request)
    if (link.searchParams.get('request_uri_method') !== 'post')
      this.world.fail(`request_uri_method=post in the link ${link}`, null)
    if (request.requestUriMethod !== 'post' || !request.walletNonce)
      this.world.fail('the wallet to POST to request_uri with a wallet_nonce', null)
    if (request.payload.wallet_nonce !== request.walletNonce)
      this.world.fail(
        `the request object to echo wallet_nonce ${request.walletNonce}; it carries ${JSON.stringify(request.payload.wallet_nonce)}`,
        null,
      )
  }

  /** §8.2: vp_token and state in the form; §8.3: only `response`, a JWE (ECDH-ES) to the session's key. */
  expectAnsweredBy(mode: ResponseMode) {
    const result = this.requirePresented()
    const fields = Object.keys(result.form).sort()
    if (result.responseMode !== mode)
      this.world.fail(`an answer by ${mode}; it was ${result.responseMode}`, null)
    if (mode === 'direct_post') {
      if (!isDeepStrictEqual(fields, ['state', 'vp_token']))
        this.world.fail(`a form of vp_token and state; it had ${fields.join(', ')}`, null)
      return
    }
    const jwe = result.form.response ?? ''
    const request = this.requireStarted().request
    const keys = (request.payload.client_metadata as { jwks?: { keys?: { kid?: string }[] } } | undefined)
      ?.jwks?.keys
    if (
      !isDeepStrictEqual(fields, ['response']) ||
      jwe.split('.').length !== 5 ||
      result.encryption?.alg !== 'ECDH-ES' ||
      !['A128GCM', 'A256GCM'].includes(result.encryption.enc) ||
      !keys?.some((k) => k.kid === result.encryption?.kid)
    )
      this.world.fail(
        `only a compact JWE in response, ECDH-ES to the key of client_metadata.jwks; the form had ${fields.join(', ')}, the header ${JSON.stringify(result.encryption)}`,
        null,
      )
  }

  /** §6.4.1: the SD-JWT VC presented discloses the claim the query asked for and nothing else. */
  expectOnlyRequestedDisclosed() {
    const result = this.requirePresented()
    const presentations = Object.values(result.dcqlVpToken ?? {}).flat()
    const sdJwt = presentations[0]
    if (presentations.length !== 1 || typeof sdJwt !== 'string')
      this.world.fail(
        `one SD-JWT presentation in vp_token; it was ${JSON.stringify(result.dcqlVpToken)}`,
        null,
      )
    const names = splitSdJwt(sdJwt).disclosures.map((d) => {
      const decoded = JSON.parse(Buffer.from(d, 'base64url').toString()) as unknown[]
      return String(decoded.length === 3 ? decoded[1] : '(array element)')
    })
    const wanted = ASKS[this.requireTemplate().choice.ask].claim
    if (!isDeepStrictEqual(names, wanted))
      this.world.fail(
        `only the disclosure of ${wanted.join('.')}; the wallet disclosed ${names.join(', ')}`,
        null,
      )
  }

  // Expectations on what the relying party reads

  async expectState(state: SessionRead['Status']) {
    const body = await this.read()
    const status = state === 'PENDING' ? 202 : 200
    this.world.expectStatus(status)
    if (body.Status !== state) this.world.fail(`a session in state ${state} (HTTP ${status})`)
    return body
  }

  /** 4.7 while nothing was submitted: 202, no definition, the DCQL query the wallet is shown. */
  async expectPendingWithQuery() {
    const created = this.requireCreated()
    const body = await this.expectState('PENDING')
    if (body.PresentationDefinition !== null)
      this.world.fail('PresentationDefinition null for a dcql session')
    if (!isDeepStrictEqual(body.AuthRequest.dcql_query, created.dcql_query))
      this.world.fail(`AuthRequest.dcql_query equal to 4.6's ${JSON.stringify(created.dcql_query)}`)
    const clientId = new URL(created.authentication_request).searchParams.get('client_id')
    if (body.AuthRequest.client_id !== clientId || typeof body.AuthRequest.nonce !== 'string')
      this.world.fail(`AuthRequest with the link's client_id ${clientId} and a nonce`)
    if (
      body.PresentationSubmission !== null ||
      body.PresentationSubmissionFormat !== '' ||
      body.Validations !== null ||
      body.Subject !== ''
    )
      this.world.fail(
        'PresentationSubmission null, PresentationSubmissionFormat "", Validations null, Subject ""',
      )
  }

  /**
   * 4.7 of a verified dcql session: VERIFIED, the wallet's key as Subject, every named check of the pipeline
   * (the PE profile's) listed and passed, PresentationSubmissionFormat `dcql` and a submission naming the
   * answered credential queries with the shared credentials.
   */
  async expectVerified() {
    const wallet = await this.wallet()
    const body = await this.expectState('VERIFIED')
    if (body.Subject !== wallet.did) this.world.fail(`Subject to be the wallet's DID ${wallet.did}`)
    const checks = body.Validations?.checks ?? []
    const listed = checks.map((c) => c.check)
    const notPassed = checks.filter((c) => c.result !== 'passed')
    if (
      body.Validations?.status !== 'SUCCESS' ||
      notPassed.length > 0 ||
      !CHECK_NAMES.every((name) => listed.includes(name))
    )
      this.world.fail(
        `Validations SUCCESS with every check of the pipeline passed: ${CHECK_NAMES.join(', ')}`,
      )
    if (body.Validations.verificationResult.errors.length > 0)
      this.world.fail('no verificationResult.errors on a VERIFIED session')
    const submission = body.PresentationSubmission as {
      credential_query_ids?: unknown
      verifiableCredential?: unknown[]
    } | null
    const queries = this.requireCreated().dcql_query.credentials.map((c) => c.id)
    if (
      body.PresentationSubmissionFormat !== 'dcql' ||
      !isDeepStrictEqual(submission?.credential_query_ids, queries) ||
      submission?.verifiableCredential?.length !== queries.length
    )
      this.world.fail(
        `PresentationSubmissionFormat "dcql" and a PresentationSubmission naming the credential queries ${queries.join(', ')} with one shared credential each`,
      )
    return body
  }

  /**
   * The shared credential of a verified session holds the asked claim, with the submitted value, and no
   * other claim of the subject: the claim not asked for (firstName) stays undisclosed. The JWT's registered
   * claims (RFC 7519 §4.1: `jti`, …), which the issuer signs in the clear, are not the subject's disclosures.
   */
  async expectSharedOnlyTheAskedClaim() {
    const body = await this.read()
    const shared = (
      body.PresentationSubmission?.verifiableCredential as Record<string, unknown>[] | undefined
    )?.[0]
    const subject = (shared?.credentialSubject ?? {}) as Record<string, unknown>
    if (!isDeepStrictEqual(subjectClaims(subject), { familyName: 'Hopper' }))
      this.world.fail(
        `the shared credentialSubject {familyName: "Hopper"} and no other claim of the subject; it was ${JSON.stringify(subject)}`,
      )
  }

  /** REJECTED, the named check failed and its message names `subject` (a protocol member), in both forms. */
  async expectRejected(check: string, subject?: string) {
    const body = await this.expectState('REJECTED')
    const entry = body.Validations?.checks.find((c) => c.check === check)
    const shown = JSON.stringify(body.Validations?.checks.filter((c) => c.result === 'failed'))
    if (entry?.result !== 'failed' || (subject !== undefined && !entry.message.includes(subject)))
      this.world.fail(
        `Validations to show check "${check}" failed${subject ? ` naming ${subject}` : ''}; failed: ${shown}`,
      )
    if (!body.Validations?.verificationResult.errors.some((e) => e.startsWith(`${check}:`)))
      this.world.fail(`verificationResult.errors to name "${check}"`)
    if (body.Validations.status !== 'REJECT') this.world.fail('Validations.status REJECT')
    if (body.PresentationSubmission !== null || body.PresentationSubmissionFormat !== '')
      this.world.fail('no PresentationSubmission on a REJECTED session')
    return body
  }

  /** VERIFIED, with a verificationResult warning that names `subject`. */
  async expectVerifiedWithWarning(subject: string) {
    const body = await this.expectVerified()
    const warnings = body.Validations?.verificationResult.warnings ?? []
    if (!warnings.some((w) => w.includes(subject)))
      this.world.fail(
        `a verificationResult warning naming ${subject}; the warnings are ${JSON.stringify(warnings)}`,
      )
  }

  // Webhooks (section 6)

  /** Within `seconds`, exactly one validly signed event of `status` about the session, acknowledged. */
  async expectWebhook(status: 'SUCCESS' | 'REJECT', seconds: number) {
    const endpoint = this.endpoint
    if (!endpoint) throw new Error('the dcql template sends no webhooks to the receiver in this scenario')
    const id = this.sessionId
    try {
      this.delivery = await endpoint.waitFor(acknowledged(id, status), {
        timeoutMs: seconds * 1000,
        description: `one validly signed ${status} about session ${id}, acknowledged by the receiver`,
      })
    } catch (error) {
      this.world.fail((error as Error).message, null)
    }
    const events = endpoint.distinctEvents(id)
    if (events.size !== 1)
      this.world.fail(
        `exactly one webhook event about session ${id}; the receiver got ${events.size}:\n${endpoint.summary()}`,
        null,
      )
    return this.delivery?.json as WebhookEventBody
  }

  webhookBody(): WebhookEventBody {
    if (!this.delivery) throw new Error('no webhook delivery was awaited in this scenario')
    return this.delivery.json as WebhookEventBody
  }
}
