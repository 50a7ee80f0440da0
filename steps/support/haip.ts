import { generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import type { ApiResponse, IssuanceTemplateInput } from '../../src/client/index.ts'
import type { TenantFixture } from '../../src/harness/target-types.ts'
import type { WebhookEndpoint, WebhookEventBody } from '../../src/harness/webhook-receiver.ts'
import { decodeJws } from '../../src/shared/jws.ts'
import {
  ATTEST_JWT_CLIENT_AUTH,
  ATTESTATION_HEADER,
  ATTESTATION_POP_HEADER,
  createClientAttestation,
  createClientAttestationPop,
} from '../../src/shared/oauth/client-attestation.ts'
import { createDpopProof } from '../../src/shared/oauth/dpop.ts'
import { newPkce } from '../../src/shared/oauth/pkce.ts'
import { testWalletProviderSigner } from '../../src/shared/oauth/test-wallet-provider.ts'
import { OPENID_CREDENTIAL } from '../../src/shared/wire.ts'
import type {
  AuthorizationMisbehaviour,
  ReceiveResult,
  StoredCredential,
  Wallet,
} from '../../src/wallet/index.ts'
import type { IssuanceSession } from '../../src/wallet/issuance.ts'
import type { IssuanceFlow } from './issuance.ts'
import { type WalletAttempt, walletAttempt } from './wallet-outcome.ts'
import { acknowledged, receiverFor } from './webhooks.ts'
import type { FlowWorld } from './world-types.ts'

// The authorization code flow of OpenID4VCI 1.0 §5–§6 as HAIP 1.0 §4 profiles it (PAR, PKCE S256, DPoP,
// wallet attestation), the issuer's side: features/issuance/haip.feature. Two clients play the wallet:
//
// - the simulated wallet (src/wallet), which takes an offer or starts from the metadata, and misbehaves on
//   request (AUTHORIZATION_MISBEHAVIOURS); its attestations are signed by vc-harness's published test wallet
//   provider, so the scenarios run in the target's configured tenant, which trusts it (the capability
//   `test-wallet-provider`: a tenant made through the portal trusts no wallet provider);
// - a raw client written out here with the shared builders (src/shared/oauth), for what the wallet would not
//   send or does not show: the pushed request and the authorization response as they came, the token response,
//   a pushed request with a defect (PKCE plain or none, another response_type, a request_uri inside, a wallet
//   attestation broken one way or another), the authorization endpoint misused (a request_uri twice, under
//   another client, unknown; a request never pushed), a token request without a DPoP nonce, a DPoP-bound
//   access token presented as a Bearer token, a person declining on the authorization page.
//
// Every template is created through the portal with a name of its own (a suffix per scenario), so scenarios
// sharing the configured tenant do not meet. The World owns one of these; steps call it in one line.

/** What the relying party submits for the HAIP templates (4.4), and what the wallet-initiated one supplies. */
export const PID_CONTENT = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Hopper', givenName: 'Grace', birthDate: '1906-12-09' },
  },
]
const PID_CLAIMS = PID_CONTENT[0]?.credentialSubject as Record<string, unknown>

/** The raw client's client_id and redirect_uri (`.invalid`, RFC 2606: nothing answers there). */
const CLIENT_ID = 'vc-harness-conformance-haip-client'
const REDIRECT_URI = 'https://wallet.vc-harness.invalid/conformance-callback'

/**
 * The scenario's templates: `haip` (offers carry only the authorization_code grant, the user step approved at
 * once; a wallet may start from the metadata too), `wallet-initiated` (its content supplied at authorization),
 * `page` (the user step a page a person decides on), and for the webhook comparison `haip-webhook` and
 * `pre-authorized`, both sending their webhooks to the harness receiver.
 */
export type HaipTemplateRole = 'haip' | 'wallet-initiated' | 'page' | 'haip-webhook' | 'pre-authorized'

type TemplateBody = IssuanceTemplateInput & { grants?: string[]; authorization?: Record<string, unknown> }

/** An SD-JWT VC of type VerifiableId signed with ES256 (HAIP's credential format and algorithm). */
function templateBody(role: HaipTemplateRole, id: string): TemplateBody {
  const base: TemplateBody = {
    id,
    credentialType: 'VerifiableId',
    format: 'dc+sd-jwt',
    signingAlg: 'ES256',
    display: { name: 'Identity (HAIP conformance)' },
  }
  if (role === 'pre-authorized') return base
  return {
    ...base,
    grants: ['authorization_code'],
    authorization: {
      userStep: role === 'page' ? 'page' : 'auto',
      ...(role === 'wallet-initiated' && { credentials: PID_CONTENT }),
    },
  }
}

interface P256 {
  privateKey: KeyObject
  publicJwk: Record<string, unknown>
}

function p256(): P256 {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' })
  return { privateKey, publicJwk: { kty, crv, x, y } }
}

/** The credential issuer's documents, as a wallet discovers them (OpenID4VCI 1.0 §12.2.2, RFC 8414 §3.1). */
interface Discovered {
  credentialIssuer: string
  issuerMetadata: Record<string, unknown>
  /** the authorization server's issuer identifier: the first of authorization_servers, else the issuer */
  authorizationServer: string
  serverMetadata: Record<string, unknown>
}

/** What the raw client pushed and got back so far. */
interface RawFlow {
  state: string
  verifier: string
  requestUri?: string
  code?: string
  accessToken?: string
  /** the latest DPoP-Nonce of the authorization server (RFC 9449 §8) */
  nonce?: string
}

/** One webhook-sending issuance of the comparison: its process and what the relying party saw. */
interface Observed {
  role: 'haip-webhook' | 'pre-authorized'
  processId: string
  openerToken: string
}

const stringOf = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined

/** What a raw pushed authorization request may get wrong (an outline of haip.feature names each). */
export const REQUEST_DEFECTS = [
  'plain',
  'no-challenge',
  'response-type-token',
  'response-type-code-id-token',
  'request-uri',
] as const
export type RequestDefect = (typeof REQUEST_DEFECTS)[number]

/** What the raw client's wallet attestation may get wrong (attestation-based client auth §5, §6.2). */
export const ATTESTATION_DEFECTS = [
  'bad-signature',
  'expired',
  'no-sub',
  'pop-bad-signature',
  'pop-other-key',
] as const
export type AttestationDefect = (typeof ATTESTATION_DEFECTS)[number]

/** How the raw client misuses the authorization endpoint (RFC 9126 §4, §5). */
export type AuthorizationEndpointMisuse = 'reused' | 'other-client' | 'unknown' | 'not-pushed'

/** A JWS whose signature no longer verifies: a character in the middle of it changed. */
function tamperSignature(jws: string): string {
  const [header, payload, signature = ''] = jws.split('.')
  const i = Math.floor(signature.length / 2)
  const swapped = signature[i] === 'A' ? 'B' : 'A'
  return `${header}.${payload}.${signature.slice(0, i)}${swapped}${signature.slice(i + 1)}`
}

const unescapeHtml = (text: string) =>
  text
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&')

/** The issuer-signed JWT of an SD-JWT (the part before the first ~), decoded. */
const issuerJwtOf = (sdJwt: string) => decodeJws(sdJwt.split('~')[0] ?? '')

export class HaipFlow {
  private readonly suffix = randomBytes(4).toString('hex')
  private readonly created = new Set<HaipTemplateRole>()
  private adminToken: string | undefined
  private appToken: string | undefined
  private discovered: Discovered | undefined
  private readonly fetch: ReturnType<FlowWorld['exchanges']['walletFetch']>
  private readonly instance = p256()
  private readonly dpopKey = p256()
  private raw: RawFlow | undefined
  /** The raw client's last answer. */
  private lastAnswer: ApiResponse<unknown> | undefined
  /** The simulated wallet's last step, its session and what it stored. */
  private outcome: WalletAttempt<unknown> | undefined
  private session: IssuanceSession | undefined
  private transactionId: string | undefined
  private stored: StoredCredential[] = []
  private webhookEndpoint: WebhookEndpoint | undefined
  private readonly observed: Observed[] = []

  constructor(
    private readonly world: FlowWorld & { useConfiguredTenant(): TenantFixture },
    private readonly issuance: IssuanceFlow,
  ) {
    // the raw client's requests are recorded as a wallet's (they play one)
    this.fetch = world.exchanges.walletFetch()
  }

  // The tenant and its templates

  /** The template id of a role in this scenario. */
  templateId(role: HaipTemplateRole = 'haip'): string {
    return `${role}-${this.suffix}`
  }

  /**
   * The target's configured tenant (it trusts the test wallet provider: the capability), and the template
   * of `role` created there through the portal with its administrator key.
   */
  async defineTemplate(role: HaipTemplateRole = 'haip', webhook?: WebhookEndpoint) {
    if (!this.adminToken) {
      this.world.useConfiguredTenant()
      this.adminToken = await this.world.logIn('admin')
    }
    if (this.created.has(role)) return
    const body = {
      ...templateBody(role, this.templateId(role)),
      ...(webhook && { webhookUrl: webhook.url, webhookSecret: webhook.secret }),
    }
    const response = await this.world.client.createIssuanceTemplate(this.adminToken, body)
    this.world.recordAnswer(response, `create the issuance template "${body.id}" (portal)`)
    this.world.expectStatus(201)
    this.created.add(role)
  }

  /** An application key of the tenant linked to no template (it opens offers for every one), made once. */
  private async opener(): Promise<string> {
    if (this.appToken) return this.appToken
    const admin = this.adminToken
    if (!admin) throw new Error('no HAIP template defined yet: start with the Background')
    const response = await this.world.client.createApiKey(admin, {
      role: 'app',
      label: 'conformance HAIP application',
    })
    this.world.recordAnswer(response, 'create an application key (portal)')
    this.world.expectStatus(201)
    const key = response.body as { id: string; secret: string }
    this.appToken = await this.world.client.token({
      keyId: key.id,
      secret: key.secret,
      tenant: this.world.tenant.tenant,
    })
    return this.appToken
  }

  /** 4.2 for the template of `role`, by the scenario's application key. */
  async openOffer(role: HaipTemplateRole = 'haip') {
    await this.issuance.openOfferFor(this.templateId(role), await this.opener())
  }

  /** 4.4 of PID_CONTENT to the process of the offer opened last, by the application that opened it. */
  async submit() {
    await this.issuance.submitAsOpener(PID_CONTENT)
    this.world.expectStatus(200)
  }

  // The simulated wallet

  private async wallet(): Promise<Wallet> {
    return this.issuance.wallet('P-256')
  }

  private async attempt<T>(what: string, work: () => Promise<T>): Promise<T | undefined> {
    this.outcome = await walletAttempt(what, work, { usage: false })
    return this.outcome.kind === 'ok' ? (this.outcome.result as T) : undefined
  }

  /** Keeps what a receive or request came to: the session, the credentials or the transaction. */
  private keep(result: ReceiveResult | undefined) {
    if (!result) return
    this.session = result.session
    if (result.status === 'pending') this.transactionId = result.transactionId
    else this.stored = result.credentials
  }

  /** The wallet takes the offer opened last: the authorization code flow, since it grants nothing else. */
  async takeOffer() {
    const wallet = await this.wallet()
    const link = this.requireLink()
    this.keep(await this.attempt('take the offer', () => wallet.receive(link)))
  }

  /** takeOffer, which must come to a transaction id (nothing submitted yet: attended issuance, §9). */
  async takeOfferAndWait() {
    await this.takeOffer()
    const value = this.expectWalletSuccess() as ReceiveResult
    if (value.status !== 'pending' || !this.transactionId)
      this.world.fail(
        `a credential response with a transaction_id (OpenID4VCI 1.0 §9: nothing is submitted yet); the wallet got ${JSON.stringify({ status: value.status })}`,
        null,
      )
  }

  /** The wallet takes the offer misbehaving once (AUTHORIZATION_MISBEHAVIOURS); the refusal is kept. */
  async takeOfferMisbehaving(misbehaviour: string) {
    const { AUTHORIZATION_MISBEHAVIOURS } = await import('../../src/wallet/index.ts')
    if (!(AUTHORIZATION_MISBEHAVIOURS as readonly string[]).includes(misbehaviour))
      throw new Error(
        `"${misbehaviour}" is not a misbehaviour of the authorization code flow (${AUTHORIZATION_MISBEHAVIOURS.join(', ')})`,
      )
    const wallet = await this.wallet()
    const link = this.requireLink()
    this.keep(
      await this.attempt(`take the offer misbehaving with ${misbehaviour}`, () =>
        wallet.receive(link, { misbehave: [misbehaviour as AuthorizationMisbehaviour] }),
      ),
    )
  }

  /** The deferred endpoint once, with the DPoP-bound token of the flow and the transaction id (§9.1). */
  async collectDeferred() {
    const session = this.session
    const id = this.transactionId
    if (!session || !id) throw new Error('the wallet was not told to come back later in this scenario')
    await this.attempt('the deferred credential request', async () => {
      const result = await session.deferred(id)
      if (result.status !== 200)
        this.world.fail(
          `the credential at the deferred endpoint once it was submitted (OpenID4VCI 1.0 §9.2); it answered ${JSON.stringify(result)}`,
          null,
        )
      this.stored = await session.accept(result)
      return result
    })
  }

  /** Wallet-initiated (no offer): the wallet starts from the credential issuer's metadata alone. */
  async requestFromMetadata() {
    const wallet = await this.wallet()
    const issuer = this.credentialIssuer()
    const id = this.templateId('wallet-initiated')
    this.keep(await this.attempt(`request ${id} from the issuer metadata`, () => wallet.request(issuer, id)))
  }

  private requireLink(): string {
    const link = this.issuance.deepLink
    if (!link) throw new Error('no offer was opened in this scenario')
    return link
  }

  expectWalletSuccess(): unknown {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    if (outcome.kind !== 'ok')
      this.world.fail(
        `the wallet's ${outcome.what} to succeed; it got ${outcome.kind === 'protocol' ? outcome.message : `${outcome.name}: ${outcome.message}`}`,
        null,
      )
    return outcome.result
  }

  /** The wallet's last step was refused on the wire at `step` with `status` and OAuth `error`. */
  expectRefused(step: string, status: number, error: string) {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has done nothing yet')
    const expected = `the wallet's ${outcome.what} refused at its ${step} request with HTTP ${status} "${error}"`
    if (outcome.kind === 'ok') this.world.fail(`${expected}; it succeeded`, null)
    if (outcome.kind === 'usage')
      this.world.fail(`${expected}; the wallet refused to send it: ${outcome.message}`, null)
    if (outcome.step !== step || outcome.status !== status || outcome.error !== error)
      this.world.fail(`${expected}; it got ${outcome.message}`, null)
  }

  /** OpenID4VCI 1.0 §4.1.1: the offer's grants are authorization_code alone, with an issuer_state. */
  expectOfferOfAuthorizationCodeOnly() {
    this.expectWalletSuccess()
    const offer = this.session?.offer
    const grants = (offer?.grants ?? {}) as Record<string, { issuer_state?: unknown } | undefined>
    if (
      !isDeepStrictEqual(Object.keys(grants), ['authorization_code']) ||
      !stringOf(grants.authorization_code?.issuer_state) ||
      this.session?.flow !== 'authorization_code'
    )
      this.world.fail(
        `an offer whose grants are {authorization_code: {issuer_state}} only, redeemed by the authorization code flow; the offer's grants were ${JSON.stringify(grants)} and the wallet took ${this.session?.flow}`,
        null,
      )
  }

  /**
   * The wallet holds an SD-JWT VC of the template (dc+sd-jwt, its configuration), with the submitted claims
   * disclosed and cnf.jwk the wallet's key (OpenID4VCI 1.0 §8.2, Appendix A.3).
   */
  async expectCredential(role: HaipTemplateRole = 'haip') {
    this.expectWalletSuccess()
    const [stored, ...more] = this.stored
    const id = this.templateId(role)
    if (!stored || more.length > 0 || stored.format !== 'dc+sd-jwt' || stored.configurationId !== id)
      this.world.fail(
        `one dc+sd-jwt credential of the configuration ${id}; the wallet stored ${JSON.stringify(this.stored.map((c) => ({ format: c.format, configurationId: c.configurationId })))}`,
        null,
      )
    const missing = Object.entries(PID_CLAIMS).filter(
      ([name, value]) => !isDeepStrictEqual(stored.credentialSubject[name], value),
    )
    if (missing.length > 0)
      this.world.fail(
        `the claims ${JSON.stringify(PID_CLAIMS)} in the SD-JWT VC; it discloses ${JSON.stringify(stored.credentialSubject)}`,
        null,
      )
    const holder = (await this.wallet()).publicJwk()
    const cnf = (issuerJwtOf(stored.credential).payload.cnf as { jwk?: Record<string, unknown> } | undefined)
      ?.jwk
    if (cnf?.x !== holder.x || cnf?.y !== holder.y)
      this.world.fail(
        `cnf.jwk the wallet's key ${JSON.stringify(holder)}; the SD-JWT VC has cnf ${JSON.stringify(cnf)}`,
        null,
      )
  }

  /** The administrator lists exactly one process of the wallet-initiated template, ISSUED (interface 4.5). */
  async expectOneIssuedWalletInitiatedProcess() {
    const admin = this.adminToken as string
    const group = this.templateId('wallet-initiated')
    const listed = (await this.world.client.listAllProcesses(admin)).filter((p) => p.group === group)
    if (listed.length !== 1 || listed[0]?.status !== 'ISSUED')
      this.world.fail(
        `one ISSUED process of template ${group} among the tenant's processes (4.5); found ${JSON.stringify(listed.map((p) => ({ id: p.id, status: p.status })))}`,
        null,
      )
  }

  // Discovery

  /** The credential issuer identifier of the tenant: `<issuer URL>/oid4vci/<tenant>`. */
  credentialIssuer(): string {
    return `${this.world.target.urls.issuerUrl}/oid4vci/${encodeURIComponent(this.world.tenant.tenant)}`
  }

  /** GET `<origin>/.well-known/<name><path>` (the well-known segment after the host), a JSON object. */
  private async wellKnown(name: string, identifier: string): Promise<Record<string, unknown>> {
    const url = new URL(identifier)
    const path = `/.well-known/${name}${url.pathname.replace(/\/$/, '')}`
    const response = await this.world.client.request(url.origin, path)
    this.world.recordAnswer(response, `GET ${url.origin}${path}`)
    this.world.expectStatus(200)
    if (typeof response.body !== 'object' || response.body === null)
      this.world.fail('a JSON object (application/json)')
    return response.body as Record<string, unknown>
  }

  /**
   * The issuer metadata (OpenID4VCI 1.0 §12.2.2), then its authorization server's (the first of
   * authorization_servers, else the issuer itself, §12.2.4) at its RFC 8414 location.
   */
  async discover(): Promise<Discovered> {
    if (this.discovered) return this.discovered
    const credentialIssuer = this.credentialIssuer()
    const issuerMetadata = await this.wellKnown('openid-credential-issuer', credentialIssuer)
    const servers = issuerMetadata.authorization_servers
    const authorizationServer =
      (Array.isArray(servers) ? stringOf(servers[0]) : undefined) ?? credentialIssuer
    const serverMetadata = await this.wellKnown('oauth-authorization-server', authorizationServer)
    this.discovered = { credentialIssuer, issuerMetadata, authorizationServer, serverMetadata }
    return this.discovered
  }

  /**
   * RFC 8414 §2/§3.3 with what HAIP 1.0 §4 asks of an authorization server: its issuer, the authorization
   * code grant; PAR required (RFC 9126 §5); PKCE S256 and not plain; iss in the authorization response (RFC
   * 9207 §3); ES256 DPoP proofs (RFC 9449 §5.1); wallet attestation as client authentication, with the
   * algorithms of attestations and their PoPs (attestation-based client auth, authorization server metadata).
   */
  expectHaipServerMetadata() {
    const { authorizationServer, serverMetadata: m } = this.requireDiscovered()
    const list = (name: string) => (Array.isArray(m[name]) ? (m[name] as unknown[]) : [])
    const url = (name: string) => typeof m[name] === 'string' && URL.canParse(m[name] as string)
    const problems = [
      m.issuer === authorizationServer ? '' : `issuer ${JSON.stringify(m.issuer)}`,
      list('grant_types_supported').includes('authorization_code')
        ? ''
        : `grant_types_supported ${JSON.stringify(m.grant_types_supported)}`,
      url('authorization_endpoint') && url('token_endpoint') ? '' : 'no authorization or token endpoint URL',
      url('pushed_authorization_request_endpoint') ? '' : 'no pushed_authorization_request_endpoint',
      m.require_pushed_authorization_requests === true
        ? ''
        : `require_pushed_authorization_requests ${JSON.stringify(m.require_pushed_authorization_requests)}`,
      list('code_challenge_methods_supported').includes('S256') &&
      !list('code_challenge_methods_supported').includes('plain')
        ? ''
        : `code_challenge_methods_supported ${JSON.stringify(m.code_challenge_methods_supported)}`,
      m.authorization_response_iss_parameter_supported === true
        ? ''
        : `authorization_response_iss_parameter_supported ${JSON.stringify(m.authorization_response_iss_parameter_supported)}`,
      list('dpop_signing_alg_values_supported').includes('ES256')
        ? ''
        : `dpop_signing_alg_values_supported ${JSON.stringify(m.dpop_signing_alg_values_supported)}`,
      list('token_endpoint_auth_methods_supported').includes(ATTEST_JWT_CLIENT_AUTH)
        ? ''
        : `token_endpoint_auth_methods_supported ${JSON.stringify(m.token_endpoint_auth_methods_supported)}`,
      list('client_attestation_signing_alg_values_supported').length > 0 &&
      list('client_attestation_pop_signing_alg_values_supported').length > 0
        ? ''
        : 'no client_attestation_signing_alg_values_supported and client_attestation_pop_signing_alg_values_supported',
    ].filter(Boolean)
    if (problems.length > 0)
      this.world.fail(
        `authorization server metadata with issuer ${authorizationServer}, the authorization_code grant, a required pushed_authorization_request_endpoint, code_challenge_methods_supported with S256 and not plain, authorization_response_iss_parameter_supported true, ES256 among dpop_signing_alg_values_supported, and ${ATTEST_JWT_CLIENT_AUTH} with its algorithms; it has ${problems.join('; ')}`,
        null,
      )
  }

  private requireDiscovered(): Discovered {
    if (!this.discovered) throw new Error('the metadata has not been read in this scenario')
    return this.discovered
  }

  private endpoint(name: string): string {
    const value = stringOf(this.requireDiscovered().serverMetadata[name])
    if (!value) this.world.fail(`${name} in the authorization server metadata`, null)
    return value
  }

  // The raw client

  /** One request of the raw client, recorded as the scenario's last answer. */
  private async send(
    what: string,
    method: 'GET' | 'POST',
    url: string,
    opts: { form?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<unknown>> {
    const headers: Record<string, string> = { ...opts.headers }
    let body: string | undefined
    if (opts.form) {
      body = new URLSearchParams(opts.form).toString()
      headers['content-type'] = 'application/x-www-form-urlencoded'
    } else if (opts.json !== undefined) {
      body = JSON.stringify(opts.json)
      headers['content-type'] = 'application/json'
    }
    const answer = await this.fetch(url, { method, headers, ...(body !== undefined && { body }) })
    const text = await answer.text()
    let parsed: unknown = text
    if (/json/.test(answer.headers.get('content-type') ?? '') && text !== '') {
      try {
        parsed = JSON.parse(text)
      } catch {}
    }
    const response: ApiResponse<unknown> = {
      status: answer.status,
      headers: answer.headers,
      text,
      body: parsed,
    }
    this.world.recordAnswer(response, what)
    return response
  }

  /**
   * The client authentication of each request to the authorization server (attestation-based client auth
   * §6.1, HAIP 1.0 §4): the test wallet provider's attestation of the client's instance key, and a fresh PoP
   * for this authorization server; `defect` breaks one thing of them (AttestationDefect).
   */
  private attestationHeaders(defect?: AttestationDefect): Record<string, string> {
    const audience = this.requireDiscovered().authorizationServer
    const now = Date.now()
    let attestation = createClientAttestation(testWalletProviderSigner(), {
      clientId: CLIENT_ID,
      instanceJwk: this.instance.publicJwk,
      // issued 70 minutes ago for an hour: expired ten minutes ago
      ...(defect === 'expired' && { now: now - 70 * 60_000, lifetimeSeconds: 3600 }),
      ...(defect === 'no-sub' && { extra: { sub: undefined } }),
    })
    // another key than the attested one signs the PoP
    const popKey = defect === 'pop-other-key' ? p256().privateKey : this.instance.privateKey
    let pop = createClientAttestationPop(
      { privateKey: popKey, alg: 'ES256' },
      { clientId: CLIENT_ID, audience },
    )
    if (defect === 'bad-signature') attestation = tamperSignature(attestation)
    if (defect === 'pop-bad-signature') pop = tamperSignature(pop)
    return { [ATTESTATION_HEADER]: attestation, [ATTESTATION_POP_HEADER]: pop }
  }

  private dpopProof(method: string, url: string, opts: { nonce?: boolean; accessToken?: string } = {}) {
    const nonce = opts.nonce === false ? undefined : this.raw?.nonce
    return createDpopProof(
      { ...this.dpopKey, alg: 'ES256' },
      {
        htm: method,
        htu: url,
        ...(nonce !== undefined && { nonce }),
        ...(opts.accessToken !== undefined && { accessToken: opts.accessToken }),
      },
    )
  }

  /** Remembers the authorization server's latest DPoP-Nonce (RFC 9449 §8.2). */
  private noteNonce(response: ApiResponse<unknown>) {
    const nonce = response.headers.get('dpop-nonce')
    if (nonce && this.raw) this.raw.nonce = nonce
  }

  /**
   * The parameters of an authorization request for the template of `role` (RFC 6749 §4.1.1 with PKCE S256,
   * RFC 7636 §4.3): the credential by authorization_details (OpenID4VCI 1.0 §5.1.1), a fresh state; the
   * template is wallet-initiated too, so no offer (issuer_state) is needed. `defect` changes one of them.
   */
  private authorizationParameters(role: HaipTemplateRole, defect?: RequestDefect): Record<string, string> {
    const pkce = newPkce()
    const state = randomBytes(16).toString('base64url')
    this.raw = { state, verifier: pkce.verifier }
    const form: Record<string, string> = {
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
      state,
      authorization_details: JSON.stringify([
        { type: OPENID_CREDENTIAL, credential_configuration_id: this.templateId(role) },
      ]),
    }
    switch (defect) {
      case 'plain':
        // plain: the challenge is the verifier itself (RFC 7636 §4.2)
        form.code_challenge = pkce.verifier
        form.code_challenge_method = 'plain'
        break
      case 'no-challenge':
        delete form.code_challenge
        delete form.code_challenge_method
        break
      case 'response-type-token':
        form.response_type = 'token'
        break
      case 'response-type-code-id-token':
        form.response_type = 'code id_token'
        break
      case 'request-uri':
        form.request_uri = `urn:ietf:params:oauth:request_uri:${randomBytes(12).toString('base64url')}`
        break
    }
    return form
  }

  /**
   * RFC 9126 §2.1: the pushed authorization request for the template of `role` with the wallet attestation;
   * `defect` breaks one thing of the request or of the attestation.
   */
  async push(opts: { role?: HaipTemplateRole; defect?: RequestDefect | AttestationDefect } = {}) {
    await this.discover()
    const role = opts.role ?? 'haip'
    const requestDefect = REQUEST_DEFECTS.includes(opts.defect as RequestDefect)
      ? (opts.defect as RequestDefect)
      : undefined
    const attestationDefect = ATTESTATION_DEFECTS.includes(opts.defect as AttestationDefect)
      ? (opts.defect as AttestationDefect)
      : undefined
    const form = this.authorizationParameters(role, requestDefect)
    const response = await this.send(
      `the pushed authorization request (RFC 9126 §2.1) for ${this.templateId(role)}${opts.defect ? ` (${opts.defect})` : ''}`,
      'POST',
      this.endpoint('pushed_authorization_request_endpoint'),
      { headers: this.attestationHeaders(attestationDefect), form },
    )
    this.lastAnswer = response
    const raw = this.raw as RawFlow
    if (response.status === 201 && typeof response.body === 'object' && response.body !== null)
      raw.requestUri = stringOf((response.body as Record<string, unknown>).request_uri)
    return response
  }

  /** RFC 9126 §2.2: 201 with a request_uri and a positive expires_in. */
  expectPushed() {
    this.world.expectStatus(201)
    const body = (this.lastAnswer?.body ?? {}) as Record<string, unknown>
    if (
      !stringOf(body.request_uri) ||
      typeof body.expires_in !== 'number' ||
      !(body.expires_in > 0) ||
      !this.raw?.requestUri
    )
      this.world.fail('HTTP 201 {request_uri, expires_in > 0} (RFC 9126 §2.2)')
  }

  /**
   * RFC 9126 §4: the authorization endpoint with client_id and the pushed request_uri only, no redirect
   * followed; `clientId` and `requestUri` replace the client's own.
   */
  async visitAuthorization(opts: { clientId?: string; requestUri?: string } = {}) {
    const requestUri = opts.requestUri ?? this.raw?.requestUri
    if (!requestUri) throw new Error('no pushed request_uri in this scenario')
    const url = new URL(this.endpoint('authorization_endpoint'))
    url.searchParams.set('client_id', opts.clientId ?? CLIENT_ID)
    url.searchParams.set('request_uri', requestUri)
    this.lastAnswer = await this.send(
      `the authorization request by request_uri (RFC 9126 §4)${opts.clientId ? ` under client_id ${opts.clientId}` : ''}`,
      'GET',
      url.href,
    )
    return this.lastAnswer
  }

  /**
   * The authorization endpoint asked by the client with `request` (AuthorizationEndpointMisuse); the one
   * before it, where there is one, must succeed.
   */
  async misuseAuthorization(request: AuthorizationEndpointMisuse) {
    switch (request) {
      case 'reused':
        await this.visitAuthorization()
        this.expectAuthorizationResponse()
        await this.visitAuthorization()
        return
      case 'other-client':
        await this.visitAuthorization({ clientId: `${CLIENT_ID}-other` })
        return
      case 'unknown':
        await this.visitAuthorization({
          requestUri: `urn:ietf:params:oauth:request_uri:${randomBytes(16).toString('base64url')}`,
        })
        return
      case 'not-pushed': {
        // RFC 9126 §5: a server that requires PAR refuses an authorization request that was not pushed
        const url = new URL(this.endpoint('authorization_endpoint'))
        for (const [name, value] of Object.entries(this.authorizationParameters('haip')))
          url.searchParams.set(name, value)
        this.lastAnswer = await this.send(
          'an authorization request by value, never pushed (RFC 6749 §4.1.1)',
          'GET',
          url.href,
        )
        return
      }
    }
  }

  /**
   * The user step as a page (a template with userStep page): the authorization endpoint answers 200 with an
   * HTML form, which the person submits with the button of id `button` (docs/issuance.md: #approve,
   * #decline); its answer, not followed, is kept.
   */
  async decideOnPage(button: 'approve' | 'decline') {
    const page = await this.visitAuthorization()
    if (page.status !== 200 || !/text\/html/.test(page.headers.get('content-type') ?? ''))
      this.world.fail('an HTML page for the person to decide on (HTTP 200 text/html)')
    this.world.expectStatus(200)
    const form = /<form[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(page.text)
    const choice = new RegExp(`<button[^>]*\\bid="${button}"[^>]*>`, 'i').exec(form?.[2] ?? '')?.[0]
    const name = /\bname="([^"]*)"/.exec(choice ?? '')?.[1]
    const value = /\bvalue="([^"]*)"/.exec(choice ?? '')?.[1]
    if (!form || !name || value === undefined)
      this.world.fail(`a form with a button of id "${button}" (name and value) on the page`)
    const fields: Record<string, string> = { [name]: value }
    for (const input of (form[2] ?? '').matchAll(/<input[^>]*>/gi)) {
      const field = /\bname="([^"]*)"/.exec(input[0])?.[1]
      const text = /\bvalue="([^"]*)"/.exec(input[0])?.[1]
      if (field) fields[field] = unescapeHtml(text ?? '')
    }
    this.lastAnswer = await this.send(
      `the person's decision on the authorization page: ${button}`,
      'POST',
      // the form's action, relative to the page (served at the authorization endpoint)
      new URL(form[1] ?? '', this.endpoint('authorization_endpoint')).href,
      { form: fields },
    )
  }

  /**
   * RFC 6749 §4.1.2.1 and RFC 9207 §2: a declined request is answered by a redirect to the client's
   * redirect_uri with error access_denied, the client's state and iss, and no code.
   */
  expectAccessDenied() {
    const params = this.redirectParameters('error access_denied')
    const problems = [
      params.get('error') === 'access_denied' ? '' : `error ${JSON.stringify(params.get('error'))}`,
      params.get('code') === null ? '' : 'a code',
    ].filter(Boolean)
    if (problems.length > 0)
      this.world.fail(`a redirect with error access_denied and no code; it has ${problems.join('; ')}`)
  }

  /**
   * The query of the authorization response the last answer redirects to (302 or 303, RFC 6749 §4.1.2): at
   * the client's redirect_uri, with its state and the authorization server's iss (RFC 9207 §2).
   */
  private redirectParameters(what: string): URLSearchParams {
    const response = this.lastAnswer
    if (!response) throw new Error('the authorization endpoint was not visited')
    const location = response.headers.get('location')
    const issuer = this.requireDiscovered().authorizationServer
    const expected = `a redirect (302 or 303) to ${REDIRECT_URI} with ${what}, state ${this.raw?.state} and iss ${issuer}`
    if (response.status !== 302 && response.status !== 303) this.world.fail(expected, response)
    this.world.expectStatus(response.status) // looked at
    let url: URL
    try {
      url = new URL(location ?? '')
    } catch {
      this.world.fail(`${expected}; Location was ${JSON.stringify(location)}`, response)
    }
    const params = url.searchParams
    const problems = [
      `${url.origin}${url.pathname}` === REDIRECT_URI ? '' : `it goes to ${url.origin}${url.pathname}`,
      params.get('state') === this.raw?.state ? '' : `state ${JSON.stringify(params.get('state'))}`,
      params.get('iss') === issuer ? '' : `iss ${JSON.stringify(params.get('iss'))}`,
    ].filter(Boolean)
    if (problems.length > 0) this.world.fail(`${expected}; ${problems.join('; ')}`, response)
    return params
  }

  /**
   * RFC 6749 §4.1.2 and RFC 9207 §2: the answer redirects (302 or 303) to the client's redirect_uri with a
   * code, the state the client sent and iss, the authorization server's issuer identifier.
   */
  expectAuthorizationResponse() {
    const params = this.redirectParameters('a code')
    const problems = [
      params.get('code') ? '' : 'no code',
      params.get('error') === null ? '' : `error ${params.get('error')}`,
    ].filter(Boolean)
    if (problems.length > 0)
      this.world.fail(`an authorization response with a code; it has ${problems.join('; ')}`)
    if (this.raw) this.raw.code = params.get('code') ?? undefined
  }

  /**
   * RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.5), DPoP (RFC 9449 §5) and wallet attestation: the code redeemed
   * at the token endpoint. `nonce: false` sends a proof without the server's nonce; otherwise a
   * use_dpop_nonce answer (§8) is retried once with the DPoP-Nonce it carries.
   */
  async redeem(opts: { nonce?: boolean } = {}) {
    const raw = this.raw
    if (!raw?.code) throw new Error('no authorization code in this scenario')
    const token = this.endpoint('token_endpoint')
    const request = (withNonce: boolean) =>
      this.send(
        `the token request with the authorization code (DPoP proof ${withNonce ? 'with the server nonce' : 'without a nonce'})`,
        'POST',
        token,
        {
          headers: {
            ...this.attestationHeaders(),
            dpop: this.dpopProof('POST', token, { nonce: withNonce }),
          },
          form: {
            grant_type: 'authorization_code',
            code: raw.code as string,
            redirect_uri: REDIRECT_URI,
            code_verifier: raw.verifier,
            client_id: CLIENT_ID,
          },
        },
      )
    let response = await request(opts.nonce !== false && raw.nonce !== undefined)
    this.noteNonce(response)
    if (opts.nonce !== false && this.isUseDpopNonce(response)) {
      response = await request(true)
      this.noteNonce(response)
    }
    this.lastAnswer = response
    if (response.status === 200)
      raw.accessToken = stringOf((response.body as Record<string, unknown> | null)?.access_token)
  }

  private isUseDpopNonce(response: ApiResponse<unknown>): boolean {
    const body = response.body as { error?: unknown } | null
    return response.status === 400 && body?.error === 'use_dpop_nonce'
  }

  /** The whole raw flow to a DPoP-bound access token: PAR, the authorization endpoint, the token request. */
  async obtainAccessToken() {
    await this.push()
    this.expectPushed()
    await this.visitAuthorization()
    this.expectAuthorizationResponse()
    await this.redeem()
    this.expectDpopBoundToken()
  }

  /**
   * RFC 9449 §5 and OpenID4VCI 1.0 §6.2: 200 with an access_token of token_type DPoP (case-insensitive, RFC
   * 6749 §5.1), expires_in, and authorization_details of type openid_credential naming the template's
   * configuration with its credential_identifiers.
   */
  expectDpopBoundToken() {
    const response = this.lastAnswer
    if (!response) throw new Error('no token request was sent')
    this.world.expectStatus(200)
    const body = (response.body ?? {}) as Record<string, unknown>
    const details = body.authorization_details as Record<string, unknown>[] | undefined
    const detail = Array.isArray(details) && details.length === 1 ? details[0] : undefined
    const identifiers = detail?.credential_identifiers
    if (
      !stringOf(body.access_token) ||
      typeof body.token_type !== 'string' ||
      body.token_type.toLowerCase() !== 'dpop' ||
      typeof body.expires_in !== 'number' ||
      detail?.type !== OPENID_CREDENTIAL ||
      detail.credential_configuration_id !== this.templateId() ||
      !Array.isArray(identifiers) ||
      identifiers.length === 0 ||
      !identifiers.every((i) => typeof i === 'string' && i !== '')
    )
      this.world.fail(
        `HTTP 200 {access_token, token_type: "DPoP", expires_in, authorization_details: [{type: "${OPENID_CREDENTIAL}", credential_configuration_id: "${this.templateId()}", credential_identifiers: [...]}]}`,
      )
  }

  /** RFC 9449 §8: the answer names a DPoP-Nonce; the same request again with it gets the access token. */
  async expectNonceThenRetry() {
    const response = this.lastAnswer
    const nonce = response?.headers.get('dpop-nonce')
    if (!response || !nonce)
      this.world.fail('a DPoP-Nonce header with the use_dpop_nonce answer (RFC 9449 §8)', response)
    await this.redeem()
    this.expectDpopBoundToken()
  }

  /** The credential endpoint of the issuer metadata. */
  private credentialEndpoint(): string {
    const endpoint = stringOf(this.requireDiscovered().issuerMetadata.credential_endpoint)
    if (!endpoint) this.world.fail('a credential_endpoint in the issuer metadata', null)
    return endpoint
  }

  /** The credential request of the raw client, with the access token as a Bearer token (RFC 6750 §2.1). */
  async presentAsBearer() {
    const token = this.raw?.accessToken
    if (!token) throw new Error('the client holds no access token')
    this.lastAnswer = await this.send(
      'the credential request with the DPoP-bound access token as a Bearer token',
      'POST',
      this.credentialEndpoint(),
      {
        headers: { authorization: `Bearer ${token}` },
        json: { credential_configuration_id: this.templateId() },
      },
    )
  }

  /**
   * RFC 9449 §7.2: a resource that takes both schemes "MUST reject a DPoP-bound access token received as a
   * bearer token": 401 with error invalid_token (in the body or the WWW-Authenticate challenge).
   */
  expectBearerRefused() {
    const response = this.lastAnswer
    if (!response) throw new Error('no credential request was sent')
    const expected = 'HTTP 401 with error invalid_token (RFC 9449 §7.2, RFC 6750 §3.1)'
    if (response.status !== 401) this.world.fail(expected)
    this.world.expectStatus(401)
    const challenge = response.headers.get('www-authenticate') ?? ''
    const body = response.body as { error?: unknown } | null
    const error = body?.error ?? /error="([^"]+)"/.exec(challenge)?.[1]
    if (error !== 'invalid_token') this.world.fail(`${expected}; the error was ${JSON.stringify(error)}`)
  }

  /**
   * The same credential request under the DPoP scheme (RFC 9449 §7.1: `Authorization: DPoP`, a proof of the
   * token's key with `ath`; a use_dpop_nonce challenge retried once with its DPoP-Nonce, §9) gets past the
   * token: it carries no key proof, so the issuer judges the request itself: 400 invalid_proof (OpenID4VCI
   * 1.0 §8.3.1.2). The refusal above was the scheme's, not the token's.
   */
  async expectAcceptedAsDpop() {
    const token = this.raw?.accessToken
    if (!token) throw new Error('the client holds no access token')
    const endpoint = this.credentialEndpoint()
    const request = () =>
      this.send(
        'the same credential request with the access token under the DPoP scheme and a proof of its key',
        'POST',
        endpoint,
        {
          headers: {
            authorization: `DPoP ${token}`,
            dpop: this.dpopProof('POST', endpoint, { accessToken: token }),
          },
          json: { credential_configuration_id: this.templateId() },
        },
      )
    let response = await request()
    this.noteNonce(response)
    const challenge = response.headers.get('www-authenticate') ?? ''
    if (response.status === 401 && /error="use_dpop_nonce"/.test(challenge)) {
      response = await request()
      this.noteNonce(response)
    }
    const body = response.body as { error?: unknown } | null
    if (response.status !== 400 || body?.error !== 'invalid_proof')
      this.world.fail(
        'HTTP 400 invalid_proof: the DPoP-bound token accepted under its own scheme, the request without a key proof refused (OpenID4VCI 1.0 §8.3.1.2)',
        response,
      )
    this.world.expectStatus(400)
  }

  // The relying party's view: the same as with a pre-authorized offer

  /**
   * The comparison's two templates, the HAIP one and a pre-authorized one issuing the same credential, both
   * sending their webhooks to one endpoint of the harness receiver.
   */
  async defineWebhookTemplates() {
    const endpoint = (await receiverFor(this.world.target)).endpoint(this.world.scenario.name.slice(0, 40))
    this.webhookEndpoint = endpoint
    await this.defineTemplate('pre-authorized', endpoint)
    await this.defineTemplate('haip-webhook', endpoint)
  }

  /** Each template: an offer, the relying party's submission, the wallet's whole flow (which must succeed). */
  async issueBoth() {
    for (const role of ['pre-authorized', 'haip-webhook'] as const) {
      await this.openOffer(role)
      await this.submit()
      await this.takeOffer()
      await this.expectCredential(role)
      const expectedFlow = role === 'pre-authorized' ? 'pre-authorized_code' : 'authorization_code'
      if (this.session?.flow !== expectedFlow)
        this.world.fail(
          `the ${role} offer redeemed by the ${expectedFlow} flow; the wallet took ${this.session?.flow}`,
          null,
        )
      this.observed.push({
        role,
        processId: this.issuance.requireProcess(),
        openerToken: await this.opener(),
      })
    }
  }

  /**
   * Interface 4.3: both processes read ISSUED, with the same members, a validator of the same members naming
   * the same holder, and the same issued data but for ids and dates.
   */
  async expectSameProcesses() {
    const read = async (o: Observed) => {
      const response = await this.world.client.getProcess(o.openerToken, o.processId)
      this.world.recordAnswer(response, `read the ${o.role} issuance process (4.3)`)
      this.world.expectStatus(200)
      return response.body as unknown as Record<string, unknown>
    }
    const [pre, haip] = await Promise.all(this.requireObserved().map(read))
    const shape = (p: Record<string, unknown> | undefined) => {
      const validator = (p?.validator ?? {}) as { verifiablePresentation?: { holder?: unknown } }
      const data = (p?.data ?? []) as { type?: unknown; credentialSubject?: Record<string, unknown> }[]
      return {
        status: p?.status,
        type: p?.type,
        members: Object.keys(p ?? {}).sort(),
        validator: Object.keys(validator).sort(),
        holder: validator.verifiablePresentation?.holder,
        data: data.map((c) => ({ type: c.type, credentialSubject: c.credentialSubject })),
      }
    }
    const [a, b] = [shape(pre), shape(haip)]
    const did = (await this.wallet()).did
    if (a.status !== 'ISSUED' || a.holder !== did || !isDeepStrictEqual(a, b))
      this.world.fail(
        `both processes ISSUED and alike (type, members, the validator's members, the wallet ${did} as holder, the issued credentials' types and subjects); the pre-authorized one reads ${JSON.stringify(a)}, the authorization code one ${JSON.stringify(b)}`,
        null,
      )
  }

  /**
   * Interface 6: each process is reported by exactly one validly signed SUCCESS webhook, the two bodies of
   * the same fields, the same subject (the wallet) and the same payload but for ids.
   */
  async expectSameWebhooks(seconds: number) {
    const endpoint = this.webhookEndpoint
    if (!endpoint) throw new Error('no template sends webhooks in this scenario')
    const bodies: WebhookEventBody[] = []
    for (const o of this.requireObserved()) {
      let delivered: WebhookEventBody
      try {
        const delivery = await endpoint.waitFor(acknowledged(o.processId, 'SUCCESS'), {
          timeoutMs: seconds * 1000,
          description: `one validly signed SUCCESS about the ${o.role} process ${o.processId}`,
        })
        delivered = delivery.json as WebhookEventBody
      } catch (error) {
        this.world.fail((error as Error).message, null)
      }
      const events = endpoint.distinctEvents(o.processId)
      if (events.size !== 1)
        this.world.fail(
          `exactly one webhook event about the ${o.role} process; the receiver got ${events.size}:\n${endpoint.summary()}`,
          null,
        )
      bodies.push(delivered)
    }
    // the event's own id (the process's) is the one member that must differ
    const shape = (b: WebhookEventBody | undefined) => {
      const { id: _id, ...rest } = (b ?? {}) as WebhookEventBody & Record<string, unknown>
      return rest
    }
    const [pre, haip] = bodies
    const did = (await this.wallet()).did
    if (pre?.subject !== did || pre?.status !== 'SUCCESS' || !isDeepStrictEqual(shape(pre), shape(haip)))
      this.world.fail(
        `the same SUCCESS webhook body for both processes but for their ids (the wallet ${did} as subject, the payload, the verificationResult); the pre-authorized one was ${JSON.stringify(shape(pre))}, the authorization code one ${JSON.stringify(shape(haip))}`,
        null,
      )
  }

  private requireObserved(): Observed[] {
    if (this.observed.length !== 2) throw new Error('the two issuances of the comparison did not run')
    return this.observed
  }
}
