import { randomBytes, randomUUID } from 'node:crypto'
import { type IWorldOptions, setWorldConstructor, World } from '@cucumber/cucumber'
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose'
import { type ApiKeyCredentials, type ApiResponse, ok, RelyingPartyClient } from '../../src/client/index.ts'
import { redact, runSecrets, type SecretRegistry } from '../../src/harness/redact.ts'
import type { KeySecret, Target, TenantFixture } from '../../src/harness/target.ts'
import { PROBLEM_MEDIA_TYPE } from '../../src/shared/wire.ts'
import { type CleanupReport, cleanupEnabled, debrisOf, describeCleanup, removeDebris } from './cleanup.ts'
import { DcApiFlow } from './dc-api.ts'
import { DcqlFlow } from './dcql.ts'
import { type Exchange, ExchangeLog, unrecordedFetch } from './exchanges.ts'
import { HaipFlow } from './haip.ts'
import { IssuanceFlow } from './issuance.ts'
import { LinkedDataFlow } from './linked-data.ts'
import { MdocFlow } from './mdoc.ts'
import { SdJwtVcFlow } from './sd-jwt-vc.ts'
import { VerificationFlow } from './verification.ts'
import { WebhookFlow } from './webhooks.ts'
import type {
  Caller,
  FlowWorld,
  ProvisionedTenant,
  Spoiling,
  TemplateChoice,
  TemplateRole,
} from './world-types.ts'

export type { Caller, ProvisionedTenant, Spoiling, TemplateChoice } from './world-types.ts'

// The one piece of module state: the target this worker process started in BeforeAll (hooks.ts).
// Parallel workers are separate processes, each with its own.
let processTarget: Target | undefined

export function setProcessTarget(target: Target | undefined) {
  processTarget = target
}
export function getProcessTarget(): Target | undefined {
  return processTarget
}

const CALLER_NAMES: Record<Caller, string> = {
  app: 'the application key',
  unlinkedApp: 'the unlinked application key',
  admin: 'the administrator key',
}

const TEMPLATE_NAMES: Record<TemplateChoice, string> = {
  own: 'its own template',
  other: 'another template of the tenant',
  unknown: 'a template that does not exist',
}

/** A failed expectation: the requirement it breaks (the scenario's name), what was expected, what came back. */
export class RequirementBroken extends Error {
  override name = 'RequirementBroken'
}

interface Answer {
  response: ApiResponse<unknown>
  /** What was sent, e.g. "login of the application key with a wrong secret". */
  what: string
  checked: boolean
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/** One per scenario: the target, a relying-party client, the tenant in use, tokens and the last answer. */
export class HarnessWorld extends World implements FlowWorld {
  private started: { target: Target; client: RelyingPartyClient } | undefined
  /** Secrets this scenario learned (and the run's): every report text passes through redact() with them. */
  readonly secrets: SecretRegistry = runSecrets.child()
  /** Every HTTP exchange of the scenario: the relying-party client's and the wallets' (exchanges.ts). */
  readonly exchanges = new ExchangeLog(this.secrets)
  /** The exchange a failed expectation was about, for the report. */
  brokenBy: Exchange | undefined
  /** The scenario's name (its requirement) and tags, set by the Before hook. */
  scenario = { name: '', tags: [] as string[] }
  private tenancy: TenantFixture | undefined
  private readonly tokens = new Map<Caller, string>()
  private readonly kept = new Map<string, Answer>()
  private last: Answer | undefined
  private flow: IssuanceFlow | undefined
  private verificationFlow: VerificationFlow | undefined
  private webhookFlow: WebhookFlow | undefined
  private sdJwtFlow: SdJwtVcFlow | undefined
  private dcqlFlow: DcqlFlow | undefined
  private dcApiFlow: DcApiFlow | undefined
  private linkedDataFlow: LinkedDataFlow | undefined
  private mdocFlow: MdocFlow | undefined
  private haipFlow: HaipFlow | undefined
  /** Cucumber's attach, for texts redacted already. */
  private readonly attachRedacted: World['attach']

  constructor(options: IWorldOptions) {
    super(options)
    // Every attachment and log line of a scenario is redacted (a base64 attachment is not text).
    const attach = this.attach
    const log = this.log
    this.attachRedacted = attach
    const redacting = ((data: unknown, media?: unknown, callback?: unknown) => {
      const mediaType =
        typeof media === 'string' ? media : (media as { mediaType?: string } | undefined)?.mediaType
      const text = typeof data === 'string' && !/;base64$/.test(mediaType ?? '')
      return (attach as (...args: unknown[]) => unknown)(
        text ? redact(data, this.secrets) : data,
        ...(media === undefined ? [] : [media]),
        ...(callback === undefined ? [] : [callback]),
      )
    }) as World['attach']
    Object.assign(this, { attach: redacting, log: (text: string) => log(redact(text, this.secrets)) })
  }

  /** The number of the last exchange attached to a step (attachStepExchanges). */
  private stepMark = 0

  /**
   * Attaches the HTTP exchanges the step just finished made, to that step (issue 32: they only showed under
   * the scenario's After hooks, where nobody looks for the request a Given sent).
   */
  attachStepExchanges() {
    const log = this.exchanges
    const fresh = log.exchanges.filter((e) => e.n > this.stepMark)
    const first = fresh[0]
    const last = fresh.at(-1)
    if (!first || !last) return
    this.stepMark = last.n
    const span = first === last ? `#${first.n}` : `#${first.n}–#${last.n}`
    this.attachRedacted(fresh.map((e) => log.render(e)).join('\n\n'), {
      mediaType: 'text/plain',
      fileName: `HTTP exchanges of this step (${span}, secrets redacted)`,
    })
  }

  /**
   * Attaches the scenario's HTTP exchanges (redacted, bodies cut); after a failure also, on its own, the
   * exchange that broke the requirement (the answer the failed expectation was about, else the last one).
   */
  attachExchanges(failed: boolean) {
    const log = this.exchanges
    const count = log.exchanges.length + log.dropped
    if (count === 0) return
    this.attachRedacted(log.transcript(), {
      mediaType: 'text/plain',
      fileName: `HTTP exchanges (${count}, secrets redacted)`,
    })
    const broken = this.brokenBy ?? log.last
    if (failed && broken) {
      const label = this.brokenBy
        ? `The HTTP exchange that broke the requirement (#${broken.n})`
        : `The last HTTP exchange before the failure (#${broken.n})`
      this.attachRedacted(`${label}\n\n${log.render(broken)}`, { mediaType: 'text/plain', fileName: label })
    }
  }

  /**
   * Removes what the scenario created on the target (tenants' keys and templates; cleanup.ts), when
   * cleanup is on for this target (VC_HARNESS_CLEANUP; default: external targets). Logs what stays.
   */
  async cleanUp(env: Record<string, string | undefined> = process.env): Promise<CleanupReport[]> {
    if (!this.started || !cleanupEnabled(this.started.target.kind, env)) return []
    const target = this.started.target
    const debris = debrisOf(this.exchanges.exchanges, target)
    if (debris.length === 0) return []
    // Its own client: the removal is not part of the scenario's exchanges.
    const client = new RelyingPartyClient(target.urls, unrecordedFetch)
    const reports = await Promise.all(debris.map((d) => removeDebris(d, client)))
    this.log(describeCleanup(reports))
    return reports
  }

  /** The scenario's wallet and issuance process (steps/support/issuance.ts). */
  get issuance(): IssuanceFlow {
    this.flow ??= new IssuanceFlow(this)
    return this.flow
  }

  /** The SD-JWT VC the scenario's wallet received and its Token Status List (steps/support/sd-jwt-vc.ts). */
  get sdJwt(): SdJwtVcFlow {
    this.sdJwtFlow ??= new SdJwtVcFlow(this, this.issuance)
    return this.sdJwtFlow
  }

  /** The scenario's verification session, presented by the same wallet (steps/support/verification.ts). */
  get verification(): VerificationFlow {
    this.verificationFlow ??= new VerificationFlow(this, this)
    return this.verificationFlow
  }

  /** The scenario's OpenID4VP 1.0 wallet, dcql template and session (steps/support/dcql.ts). */
  get dcql(): DcqlFlow {
    this.dcqlFlow ??= new DcqlFlow(this)
    return this.dcqlFlow
  }

  /** The scenario's OpenID4VP over the Digital Credentials API: template, page, platform wallet (steps/support/dc-api.ts). */
  get dcApi(): DcApiFlow {
    this.dcApiFlow ??= new DcApiFlow(this, this.dcql)
    return this.dcApiFlow
  }

  /** The scenario's ISO mdoc: the mDL template, the mdoc received, what a session asked and got (steps/support/mdoc.ts). */
  get mdoc(): MdocFlow {
    this.mdocFlow ??= new MdocFlow(this, this.issuance, this.dcql)
    return this.mdocFlow
  }

  /** The scenario's authorization code flow as HAIP profiles it: its templates and clients (steps/support/haip.ts). */
  get haip(): HaipFlow {
    this.haipFlow ??= new HaipFlow(this, this.issuance)
    return this.haipFlow
  }

  /** The scenario's Linked Data holder, credentials, ldp_vp and session (steps/support/linked-data.ts). */
  get linkedData(): LinkedDataFlow {
    this.linkedDataFlow ??= new LinkedDataFlow(this, this)
    return this.linkedDataFlow
  }

  /** The scenario's receiver endpoint and webhook expectations (steps/support/webhooks.ts). */
  get webhooks(): WebhookFlow {
    this.webhookFlow ??= new WebhookFlow(this, this)
    return this.webhookFlow
  }

  // Looked up on first use, so a --dry-run (which runs no hooks) can still build worlds.
  private get runtime() {
    if (!this.started) {
      const target = getProcessTarget()
      if (!target) throw new Error('no target: the BeforeAll hook in steps/support/hooks.ts did not run')
      this.started = {
        target,
        client: new RelyingPartyClient(target.urls, this.exchanges.fetch('relying party')),
      }
    }
    return this.started
  }

  get target(): Target {
    return this.runtime.target
  }

  get client(): RelyingPartyClient {
    return this.runtime.client
  }

  // Tenancy

  /** The tenant this scenario works in. */
  get tenant(): TenantFixture {
    if (!this.tenancy)
      throw new Error('no tenant chosen: start the scenario with "Given a tenant of our own"')
    return this.tenancy
  }

  /**
   * A tenant no other scenario touches: provisioned through the portal when the target has one, else
   * the target's configured tenant (scenarios that change it are tagged @needs-portal and skipped).
   */
  async useOwnTenant(): Promise<TenantFixture> {
    if (this.target.capabilities.has('portal')) {
      this.tenancy = await this.provisionTenant()
    } else {
      this.tenancy = this.target.tenant
      this.log(`no portal: using the configured tenant "${this.tenancy.tenant}"`)
    }
    return this.tenancy
  }

  /**
   * The tenant the target was configured with (the demo tenant when embedded or child), for scenarios that
   * need what only its configuration can give, such as trusting the test wallet provider (steps/support/haip.ts).
   */
  useConfiguredTenant(): TenantFixture {
    this.tenancy = this.target.tenant
    return this.tenancy
  }

  /**
   * Creates tenant `t-<random>` through the portal (operator key) with two issuance templates, an
   * application key linked to the first, an unlinked application key and an administrator key.
   */
  async provisionTenant(): Promise<ProvisionedTenant> {
    const operator = this.target.operator
    if (!operator) throw new Error('provisionTenant needs the portal capability (an operator key)')
    const operatorToken = await this.client.token(operator)
    const tenant = `t-${randomBytes(6).toString('hex')}`
    const created = ok(await this.client.createTenant(operatorToken, tenant), `create tenant ${tenant}`)
    const adminKey = { id: created.adminKey.id, secret: created.adminKey.secret }
    const adminToken = await this.client.token({ keyId: adminKey.id, secret: adminKey.secret, tenant })
    const issuanceTemplate = 'degree'
    const otherTemplate = 'transcript'
    const templates = {
      txCode: 'degree-tx-code',
      identity: 'verifiable-id',
      requiresIdentity: 'degree-for-id-holders',
    }
    await Promise.all(
      [
        { id: issuanceTemplate, credentialType: 'UniversityDegreeCredential' },
        { id: otherTemplate, credentialType: 'TranscriptCredential' },
        { id: templates.txCode, credentialType: 'UniversityDegreeCredential', txCode: { length: 6 } },
        { id: templates.identity, credentialType: 'VerifiableId' },
        {
          id: templates.requiresIdentity,
          credentialType: 'UniversityDegreeCredential',
          requiredPresentation: {
            purpose: 'The degree is issued to holders of a verified identity',
            credentials: [{ type: 'VerifiableId', fields: ['$.credentialSubject.familyName'] }],
          },
        },
      ].map(async (t) =>
        ok(await this.client.createIssuanceTemplate(adminToken, t), `create template ${t.id}`),
      ),
    )
    const verificationTemplates = {
      degreeCheck: 'degree-check',
      degreeAndIdentity: 'degree-and-identity',
      statusOptional: 'degree-check-status-optional',
    }
    await Promise.all(
      [
        {
          id: verificationTemplates.degreeCheck,
          name: 'Degree check',
          credentialTypes: ['UniversityDegreeCredential'],
          purpose: 'We check that applicants hold a degree',
          requestedFields: [{ path: '$.credentialSubject.degree' }],
        },
        {
          id: verificationTemplates.degreeAndIdentity,
          name: 'Degree and identity',
          credentialTypes: ['UniversityDegreeCredential'],
          optionalGroups: [{ name: 'identity', credentialTypes: ['VerifiableId', 'Passport'], min: 1 }],
        },
        {
          id: verificationTemplates.statusOptional,
          name: 'Degree check, status optional',
          credentialTypes: ['UniversityDegreeCredential'],
          requireStatus: false,
        },
      ].map(async (t) =>
        ok(await this.client.createVerificationTemplate(adminToken, t), `create template ${t.id}`),
      ),
    )
    const [app, unlinked] = await Promise.all([
      this.client.createApiKey(adminToken, {
        role: 'app',
        template: issuanceTemplate,
        label: 'conformance app',
      }),
      this.client.createApiKey(adminToken, { role: 'app', label: 'conformance unlinked app' }),
    ])
    const appKey = ok(app, 'create linked app key')
    const unlinkedKey = ok(unlinked, 'create unlinked app key')
    return {
      tenant,
      issuanceTemplate,
      otherTemplate,
      templates,
      verificationTemplates,
      appKey: { id: appKey.id, secret: appKey.secret },
      unlinkedAppKey: { id: unlinkedKey.id, secret: unlinkedKey.secret },
      adminKey,
    }
  }

  /**
   * A tenant for scenarios that create every template they use (the Linked Data features): created through
   * the portal with its administrator key and one application key linked to no template, nothing else (a
   * third of provisionTenant's requests). Without a portal: the target's configured tenant, as useOwnTenant.
   */
  async useOwnBareTenant(): Promise<TenantFixture> {
    const operator = this.target.operator
    if (!this.target.capabilities.has('portal') || !operator) return this.useOwnTenant()
    const operatorToken = await this.client.token(operator)
    const tenant = `t-${randomBytes(6).toString('hex')}`
    const created = ok(await this.client.createTenant(operatorToken, tenant), `create tenant ${tenant}`)
    const adminKey = { id: created.adminKey.id, secret: created.adminKey.secret }
    const adminToken = await this.client.token({ keyId: adminKey.id, secret: adminKey.secret, tenant })
    this.tokens.set('admin', adminToken)
    const app = ok(
      await this.client.createApiKey(adminToken, { role: 'app', label: 'conformance unlinked app' }),
      'create unlinked app key',
    )
    const appKey = { id: app.id, secret: app.secret }
    // no template: the application key is the unlinked one, and a login names no template
    this.tenancy = {
      tenant,
      issuanceTemplate: '',
      otherTemplate: '',
      appKey,
      unlinkedAppKey: appKey,
      adminKey,
    }
    return this.tenancy
  }

  /** A tenant id other than this scenario's that exists on the target when one is known. */
  otherTenantId(): string {
    const configured = this.target.tenant.tenant
    if (configured !== this.tenant.tenant) return configured
    this.log('no second tenant known: using a tenant id that does not exist')
    return `t-other-${randomBytes(4).toString('hex')}`
  }

  /** The template id of a role; roles beyond `linked` exist on provisioned tenants only. */
  templateFor(role: TemplateRole): string {
    if (role === 'linked') return this.tenant.issuanceTemplate
    const templates = this.tenant.templates
    if (!templates)
      throw new Error(
        `tenant "${this.tenant.tenant}" has no ${role} template: tag the scenario @needs-portal`,
      )
    return role === 'tx-code'
      ? templates.txCode
      : role === 'identity'
        ? templates.identity
        : templates.requiresIdentity
  }

  /** A token of the unlinked application key, which may open offers for every template of the tenant. */
  async unlinkedAppToken(): Promise<string> {
    const cached = this.tokens.get('unlinkedApp')
    if (cached) return cached
    const key = this.key('unlinkedApp')
    const token = await this.client.token({ keyId: key.id, secret: key.secret, tenant: this.tenant.tenant })
    this.tokens.set('unlinkedApp', token)
    return token
  }

  key(caller: Caller): KeySecret {
    const key =
      caller === 'app'
        ? this.tenant.appKey
        : caller === 'admin'
          ? this.tenant.adminKey
          : this.tenant.unlinkedAppKey
    if (!key) throw new Error(`${CALLER_NAMES[caller]} is not available in tenant "${this.tenant.tenant}"`)
    return key
  }

  templateId(choice: TemplateChoice): string {
    if (choice === 'own') return this.tenant.issuanceTemplate
    if (choice === 'other') return this.tenant.otherTemplate
    return `no-such-template-${randomBytes(4).toString('hex')}`
  }

  credentials(caller: Caller, template: TemplateChoice = 'own'): ApiKeyCredentials {
    const key = this.key(caller)
    return {
      keyId: key.id,
      secret: key.secret,
      tenant: this.tenant.tenant,
      ssiconfig: this.templateId(template),
    }
  }

  // Calls whose answers the steps check

  async login(caller: Caller, template: TemplateChoice = 'own') {
    const response = await this.client.login(this.credentials(caller, template))
    this.record(response, `login of ${CALLER_NAMES[caller]} naming ${TEMPLATE_NAMES[template]}`)
    return response
  }

  async loginWithWrongSecret(caller: Caller) {
    const credentials = { ...this.credentials(caller), secret: randomBytes(32).toString('base64url') }
    this.record(await this.client.login(credentials), `login of ${CALLER_NAMES[caller]} with a wrong secret`)
  }

  async loginWithUnknownKeyId() {
    const credentials = { ...this.credentials('app'), keyId: randomUUID() }
    this.record(await this.client.login(credentials), 'login with an API key id that does not exist')
  }

  async loginWithTenant(caller: Caller, tenant: string) {
    const credentials = { ...this.credentials(caller), tenant }
    this.record(
      await this.client.login(credentials),
      `login of ${CALLER_NAMES[caller]} for tenant "${tenant}"`,
    )
  }

  async loginWithoutTenantHeader(caller: Caller) {
    const response = await this.client.login({ ...this.credentials(caller), tenant: undefined })
    this.record(response, `login of ${CALLER_NAMES[caller]} without a tenant header`)
  }

  /** Logs in (must succeed) and keeps the token for later calls by the same caller. */
  async logIn(caller: Caller, template: TemplateChoice = 'own'): Promise<string> {
    const response = await this.client.login(this.credentials(caller, template))
    this.record(response, `login of ${CALLER_NAMES[caller]}`)
    this.expectStatus(200)
    if (!response.token) this.fail('a Token header in the login answer')
    this.tokens.set(caller, response.token)
    return response.token
  }

  token(caller: Caller): string {
    const token = this.tokens.get(caller)
    if (!token) throw new Error(`${CALLER_NAMES[caller]} has not logged in yet`)
    return token
  }

  /** 4.2 with the given token (undefined: no Authorization header at all). */
  async createOffer(token: string | undefined, what: string) {
    const group = this.tenant.issuanceTemplate
    this.record(await this.client.createOffer(token, group), `create offer for "${group}" ${what}`)
  }

  async listProcesses(caller: Caller) {
    this.record(
      await this.client.listProcesses(this.token(caller)),
      `list issuance processes as ${CALLER_NAMES[caller]}`,
    )
  }

  /** Revokes a key through the portal with the tenant's administrator key. */
  async revoke(caller: Caller) {
    const adminToken = await this.client.token(this.credentials('admin'))
    ok(await this.client.revokeApiKey(adminToken, this.key(caller).id), `revoke ${CALLER_NAMES[caller]}`)
  }

  // Tokens

  /** A token that must fail verification, made from a valid one. */
  async spoil(token: string, how: Spoiling): Promise<string> {
    const [header = '', payload = '', signature = ''] = token.split('.')
    switch (how) {
      case 'tampered signature': {
        // Change a character in the middle: the last one may only carry padding bits.
        const i = Math.floor(signature.length / 2)
        const swapped = signature[i] === 'A' ? 'B' : 'A'
        return `${header}.${payload}.${signature.slice(0, i)}${swapped}${signature.slice(i + 1)}`
      }
      case 'alg none':
        return `${b64url({ ...decodeProtectedHeader(token), alg: 'none' })}.${payload}.`
      case 'foreign key': {
        const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
        return new SignJWT(decodeJwt(token))
          .setProtectedHeader({ ...decodeProtectedHeader(token), alg: 'EdDSA' })
          .sign(privateKey)
      }
      case 'garbage':
        return randomBytes(48).toString('base64url')
    }
  }

  /** Moves the target's clock to one second past the expiry of the caller's token. */
  passTokenExpiry(caller: Caller) {
    const clock = this.target.clock
    if (!clock) throw new Error('moving time needs the clock capability (tag the scenario @needs-clock)')
    const exp = decodeJwt(this.token(caller)).exp
    if (typeof exp !== 'number') this.fail('an exp claim in the access token')
    clock.advance(Math.max(0, exp * 1000 - clock.now()) + 1000)
  }

  // Answers and expectations

  private record(response: ApiResponse<unknown>, what: string) {
    this.last = { response, what, checked: false }
  }

  /** Records an answer obtained elsewhere (the issuance flow), for the expectations below. */
  recordAnswer(response: ApiResponse<unknown>, what: string) {
    this.record(response, what)
  }

  /** The last answer, marked as checked. */
  get answer(): ApiResponse<unknown> {
    if (!this.last) throw new Error('no request has been sent in this scenario yet')
    this.last.checked = true
    return this.last.response
  }

  /** Keeps the last answer under a name, to compare later answers with it. */
  keep(name: string) {
    if (!this.last) throw new Error('no answer to keep')
    this.kept.set(name, this.last)
  }

  keptAnswer(name: string): ApiResponse<unknown> {
    const kept = this.kept.get(name)
    if (!kept) throw new Error(`no answer kept as "${name}"`)
    return kept.response
  }

  /** An error answer no step looked at, described; the After hook fails the scenario on it. */
  uncheckedError(): string | undefined {
    const last = this.last
    if (!last || last.checked || last.response.status < 400) return undefined
    const exchange = this.exchanges.exchangeOf(last.response.headers)
    if (exchange) this.brokenBy = exchange
    return redact(
      `the answer to ${last.what} was never checked: ${describeResponse(last.response)}`,
      this.secrets,
    )
  }

  /** Throws naming the broken requirement, what was expected and what came back. */
  fail(expected: string, response: ApiResponse<unknown> | null | undefined = this.last?.response): never {
    const tags = this.scenario.tags.length > 0 ? ` (${this.scenario.tags.join(' ')})` : ''
    const lines = [`${this.scenario.name}${tags}`, `Expected: ${expected}`]
    if (this.last && response === this.last.response) lines.push(`Request: ${this.last.what}`)
    if (response) lines.push(`Got: ${describeResponse(response)}`)
    const exchange = this.exchanges.exchangeOf(response?.headers)
    const last = this.exchanges.last
    if (exchange) {
      this.brokenBy = exchange
      lines.push(`Exchange: ${this.exchanges.headline(exchange)} (attached to the scenario)`)
    } else if (last) {
      lines.push(`Last exchange: ${this.exchanges.headline(last)} (attached to the scenario)`)
    }
    throw new RequirementBroken(redact(lines.join('\n'), this.secrets))
  }

  expectStatus(status: number) {
    if (this.answer.status !== status) this.fail(`HTTP ${status}`)
  }

  /** An RFC 9457 problem with this status and stable code, every member present. */
  expectProblem(status: number, code: string) {
    const response = this.answer
    const expected = `HTTP ${status} ${PROBLEM_MEDIA_TYPE} with code "${code}"`
    if (response.status !== status) this.fail(expected)
    if (!(response.headers.get('content-type') ?? '').startsWith(PROBLEM_MEDIA_TYPE)) this.fail(expected)
    const body = response.body as Record<string, unknown> | null
    if (typeof body !== 'object' || body === null || body.code !== code) this.fail(expected)
    for (const member of ['type', 'title', 'detail'] as const) {
      if (typeof body[member] !== 'string') this.fail(`${expected}, with a string "${member}"`)
    }
    if (body.status !== status) this.fail(`${expected}, whose "status" member is ${status}`)
  }

  expectJsonBody(expected: unknown) {
    const response = this.answer
    if (JSON.stringify(canonical(response.body)) !== JSON.stringify(canonical(expected))) {
      this.fail(`the JSON body ${JSON.stringify(expected)}`)
    }
  }

  expectHeader(name: string, check: (value: string) => boolean, expected: string) {
    const value = this.answer.headers.get(name)
    if (value === null || !check(value))
      this.fail(`header ${name}: ${expected} (it was ${JSON.stringify(value)})`)
  }

  /** A compact JWS whose header names a signing algorithm and whose payload has an expiry. */
  expectJwtHeader(name: string) {
    const value = this.answer.headers.get(name)
    const expected = `header ${name}: a signed JWT (base64url header.payload.signature with alg and exp)`
    const got = ` (it was ${JSON.stringify(value)})`
    if (value === null || !/^[\w-]+\.[\w-]+\.[\w-]+$/.test(value)) this.fail(expected + got)
    let alg: unknown
    let exp: unknown
    try {
      alg = decodeProtectedHeader(value).alg
      exp = decodeJwt(value).exp
    } catch {
      this.fail(expected + got)
    }
    if (typeof alg !== 'string' || alg.toLowerCase() === 'none') this.fail(expected + got)
    if (typeof exp !== 'number') this.fail(expected + got)
  }

  expectBodyString(member: string) {
    const body = this.answer.body as Record<string, unknown> | null
    if (
      typeof body !== 'object' ||
      body === null ||
      typeof body[member] !== 'string' ||
      body[member] === ''
    ) {
      this.fail(`a JSON body with a non-empty string "${member}"`)
    }
  }

  expectSameBodyAs(name: string) {
    const kept = this.keptAnswer(name)
    const response = this.answer
    if (response.text !== kept.text) {
      this.fail(`a body byte-identical to the ${name} answer, which was ${JSON.stringify(kept.text)}`)
    }
  }
}

/** Sorts object keys so JSON comparison ignores member order. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => [k, canonical(v)]),
    )
  }
  return value
}

export function describeResponse(response: ApiResponse<unknown>): string {
  const type = response.headers.get('content-type') ?? 'no content-type'
  const text = response.text.length > 2000 ? `${response.text.slice(0, 2000)}…` : response.text
  return `HTTP ${response.status} (${type}) ${text || '(empty body)'}`
}

setWorldConstructor(HarnessWorld)
