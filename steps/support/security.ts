import { randomBytes, randomUUID } from 'node:crypto'
import { type ApiResponse, ok, type Problem, parseCredentialOfferUri } from '../../src/client/index.ts'
import type { TenantFixture } from '../../src/harness/target.ts'
import { FORM_MEDIA_TYPE, PRE_AUTHORIZED_GRANT } from '../../src/shared/wire.ts'
import { DEGREE_CONTENT } from './issuance.ts'
import type { Caller, HarnessWorld } from './world.ts'

// Tenant isolation, roles and input limits (features/security/). The scenario's state lives in one
// SecurityFlow per World; the World's own calls (tenant, tokens, answers, the issuance and verification
// flows) do the rest. "Another tenant" is the tenant the target is configured with: its keys are known,
// it always exists, and it uses the same template ids as a provisioned tenant, so only the tenant can
// tell their resources apart.

/** A role of the other tenant's keys. */
export type Role = 'app' | 'admin'
/** What a caller tries to do to the scenario's issuance process. */
export type ProcessAction = 'read' | 'submit' | 'reject' | 'revoke'
export type TemplateKind = 'issuance' | 'verification'
export type TemplateAction = 'read' | 'replace' | 'delete'
export type PortalAction = 'list keys' | 'create key' | 'create template'
/** Relying-party requests the limits scenarios bend. */
export type RpRequest = 'offer' | 'session' | 'rejection' | 'submission' | 'api key'
/** What a refusal's reason must name. */
export type Subject = 'process id' | 'session id' | 'key id' | 'template id' | 'both templates'

const CALLER_NAMES: Record<Caller, string> = {
  app: 'the application',
  unlinkedApp: 'the unlinked application',
  admin: 'the administrator',
}
const ROLE_NAMES: Record<Role, string> = { app: 'application', admin: 'administrator' }
const ACTION_NAMES: Record<ProcessAction, string> = {
  read: 'read',
  submit: 'submit the degree credential to',
  reject: 'reject',
  revoke: 'revoke the credentials of',
}

/** How a hand-made wallet-facing form POST is bent. */
type FormBend = { underOtherTenant?: boolean; padKiB?: number; json?: boolean }

/** A relying-party request as the wire carries it. */
interface Wire {
  base: string
  method: string
  path: string
  body: unknown
  what: string
}

export class SecurityFlow {
  private readonly otherTokens = new Map<Role, string>()
  /** What the last attempt acted on, for "naming the process id" and the like. */
  private subject: { id: string; templates?: [string, string] } | undefined
  private unknownProcessId: string | undefined
  private processGroup: string | undefined
  private otherProcessId: string | undefined
  private ownTemplate: { kind: TemplateKind; id: string } | undefined
  private before: { pending?: string[]; keys?: string[] } = {}
  private listed: string[] | undefined

  constructor(private readonly world: HarnessWorld) {}

  // The other tenant

  private otherTenant(): TenantFixture {
    const other = this.world.target.tenant
    if (other.tenant === this.world.tenant.tenant)
      throw new Error('this scenario needs a second tenant: tag it @needs-portal')
    return other
  }

  private async otherToken(role: Role): Promise<string> {
    const cached = this.otherTokens.get(role)
    if (cached) return cached
    const other = this.otherTenant()
    const key = role === 'app' ? other.appKey : other.adminKey
    const token = await this.world.client.token({
      keyId: key.id,
      secret: key.secret,
      tenant: other.tenant,
      ...(role === 'app' ? { ssiconfig: other.issuanceTemplate } : {}),
    })
    this.otherTokens.set(role, token)
    return token
  }

  /** A URL of this tenant's wallet-facing endpoints moved under the other tenant's path. */
  private underOtherTenant(url: string, prefix: 'oid4vci' | 'oid4vp'): { base: string; path: string } {
    const own = `/${prefix}/${encodeURIComponent(this.world.tenant.tenant)}/`
    const parsed = new URL(url)
    if (!parsed.pathname.includes(own)) throw new Error(`${url} is not under ${own}`)
    const path = parsed.pathname.replace(own, `/${prefix}/${encodeURIComponent(this.otherTenant().tenant)}/`)
    return { base: parsed.origin, path: `${path}${parsed.search}` }
  }

  private async tokenOf(caller: Caller): Promise<string> {
    return caller === 'unlinkedApp' ? this.world.unlinkedAppToken() : this.world.logIn(caller)
  }

  // Issuance processes

  /** The other tenant's application reads a random process id: the baseline of "like an unknown id". */
  async otherReadsUnknownProcess() {
    this.unknownProcessId = randomUUID()
    const response = await this.world.client.getProcess(await this.otherToken('app'), this.unknownProcessId)
    this.world.recordAnswer(
      response,
      "read a process id that does not exist with another tenant's application",
    )
    this.world.expectProblem(404, 'process_not_found')
    this.world.keep('unknown-id')
  }

  /** The process as its own application reads it, kept to compare with later reads. */
  async snapshotProcess() {
    const process = (await this.world.issuance.readProcess()) as { group?: string }
    this.processGroup = process.group
    this.world.keep('process before')
  }

  async expectProcessUnchanged() {
    await this.world.issuance.readProcess()
    this.world.expectSameBodyAs('process before')
  }

  private async actOnProcess(token: string, action: ProcessAction, who: string, callerTemplate?: string) {
    const id = this.world.issuance.requireProcess()
    const client = this.world.client
    const response =
      action === 'read'
        ? await client.getProcess(token, id)
        : action === 'submit'
          ? await client.submitCredentials(token, id, DEGREE_CONTENT)
          : action === 'reject'
            ? await client.rejectProcess(token, id, 'rejected by someone who may not')
            : await client.setCredentialStatus(token, id, { status: 'revoked' })
    this.subject = {
      id,
      ...(this.processGroup && callerTemplate ? { templates: [this.processGroup, callerTemplate] } : {}),
    }
    this.world.recordAnswer(response, `${ACTION_NAMES[action]} process ${id} as ${who}`)
  }

  async otherActsOnProcess(role: Role, action: ProcessAction) {
    await this.actOnProcess(await this.otherToken(role), action, `another tenant's ${ROLE_NAMES[role]}`)
  }

  async actsOnProcess(caller: Caller, action: ProcessAction) {
    const template = caller === 'app' ? this.world.tenant.issuanceTemplate : undefined
    await this.actOnProcess(await this.tokenOf(caller), action, CALLER_NAMES[caller], template)
  }

  async openOfferAs(caller: Caller) {
    const template = this.world.tenant.issuanceTemplate
    const response = await this.world.client.createOffer(await this.tokenOf(caller), template)
    this.world.recordAnswer(response, `create an offer for "${template}" as ${CALLER_NAMES[caller]}`)
  }

  async otherOpensOffer() {
    const response = await this.world.client.createOffer(
      await this.otherToken('app'),
      this.otherTenant().issuanceTemplate,
    )
    this.world.recordAnswer(response, "create an offer with another tenant's application")
    this.world.expectStatus(201)
    const { credential_offer_uri } = response.body as { credential_offer_uri: string }
    this.otherProcessId = parseCredentialOfferUri(credential_offer_uri).processId
  }

  async otherListsPending() {
    const list = await this.world.client.listAllProcesses(await this.otherToken('admin'), {
      status: 'PENDING',
    })
    this.listed = list.map((p) => p.id)
  }

  expectListHasOthersButNotOurs() {
    const ours = this.world.issuance.requireProcess()
    const listed = this.listed
    if (!listed) throw new Error("the other tenant's PENDING processes were not listed")
    if (!this.otherProcessId || !listed.includes(this.otherProcessId) || listed.includes(ours)) {
      this.world.fail(
        `the other tenant's PENDING list to hold its process ${this.otherProcessId} and not ours ${ours}; it held ${JSON.stringify(listed)}`,
        null,
      )
    }
  }

  async expectStillSuspendable() {
    const response = await this.world.client.setCredentialStatus(
      this.world.token('app'),
      this.world.issuance.requireProcess(),
      { status: 'suspended' },
    )
    this.world.recordAnswer(response, 'suspend the credentials of the process as its application')
    const body = response.body as { credentials?: { status: string }[] }
    if (
      response.status !== 200 ||
      !body.credentials?.length ||
      body.credentials.some((c) => c.status !== 'suspended')
    ) {
      this.world.fail(
        'HTTP 200 suspending every credential: a revoked credential would answer 409 status_final',
      )
    }
  }

  async countPending() {
    this.before.pending = await this.pendingIds()
  }

  private async pendingIds(): Promise<string[]> {
    const token = await this.world.logIn('admin')
    return (await this.world.client.listAllProcesses(token, { status: 'PENDING' })).map((p) => p.id)
  }

  async expectPendingUnchanged() {
    const before = this.before.pending
    if (!before) throw new Error('the PENDING processes were not counted before')
    const now = await this.pendingIds()
    if (JSON.stringify(now) !== JSON.stringify(before)) {
      this.world.fail(
        `the PENDING processes to stay ${JSON.stringify(before)}; they are now ${JSON.stringify(now)}`,
        null,
      )
    }
  }

  /** Submits `count` copies of the degree credential. */
  async submitMany(count: number) {
    const content = Array.from({ length: count }, () => DEGREE_CONTENT[0])
    const id = this.world.issuance.requireProcess()
    const response = await this.world.client.submitCredentials(await this.world.logIn('app'), id, content)
    this.world.recordAnswer(response, `submit ${count} degree credentials as the application`)
  }

  async listWithQuery(query: string) {
    const token = await this.world.logIn('admin')
    const { issuerUrl } = this.world.target.urls
    const response = await this.world.client.request(issuerUrl, `/admin/v1/issuanceRequests?${query}`, {
      token,
    })
    this.world.recordAnswer(response, `list the processes with "?${query}" as the administrator`)
  }

  // Verification sessions

  async actsOnSession(caller: Caller) {
    const id = this.world.verification.sessionId
    const response = await this.world.client.readSession(await this.tokenOf(caller), id)
    const template = caller === 'app' ? this.world.tenant.issuanceTemplate : undefined
    const sessionTemplate = this.world.verification.templateId('degree check')
    this.subject = { id, ...(template ? { templates: [sessionTemplate, template] } : {}) }
    this.world.recordAnswer(response, `read session ${id} as ${CALLER_NAMES[caller]}`)
  }

  private authenticationRequest(name: 'request_uri' | 'redirect_uri'): string {
    const link = this.world.verification.requireCreated().authentication_request
    const value = new URL(link).searchParams.get(name)
    if (!value) throw new Error(`the authentication request has no ${name}: ${link}`)
    return value
  }

  async fetchRequestUnderOtherTenant() {
    const { base, path } = this.underOtherTenant(this.authenticationRequest('request_uri'), 'oid4vp')
    this.subject = { id: this.world.verification.sessionId }
    const response = await this.world.client.request(base, path)
    this.world.recordAnswer(response, `fetch the request object at ${path}`)
  }

  async expectRequestNotFetched() {
    const body = await this.world.verification.read()
    this.world.expectStatus(202)
    if (body.RequestedAt !== null)
      this.world.fail(`RequestedAt null: nobody fetched the request object; it was ${body.RequestedAt}`)
  }

  /**
   * The wallet's refusal (`error=access_denied` with the session's state): a direct_post that closes the
   * session as REJECTED when it reaches the right place.
   */
  private async refusal(): Promise<Record<string, string>> {
    const session = await this.world.verification.fetchRequest()
    if (!session.state) throw new Error('the request object has no state')
    return { state: session.state, error: 'access_denied', error_description: 'the holder declined' }
  }

  async postRefusal(how: FormBend) {
    const form = await this.refusal()
    this.subject = { id: this.world.verification.sessionId }
    await this.postForm(
      'oid4vp',
      this.authenticationRequest('redirect_uri'),
      form,
      how,
      "the wallet's refusal",
    )
  }

  /**
   * A wallet-facing form POST sent by hand, bent as asked: under another tenant's path, padded with an
   * extra parameter (protocol endpoints ignore unknown ones, so only the size is wrong), or as JSON.
   */
  private async postForm(
    prefix: 'oid4vci' | 'oid4vp',
    url: string,
    form: Record<string, string>,
    how: FormBend,
    what: string,
  ) {
    const { base, path } = how.underOtherTenant
      ? this.underOtherTenant(url, prefix)
      : { base: new URL(url).origin, path: new URL(url).pathname }
    const fields = how.padKiB ? { ...form, padding: 'a'.repeat(how.padKiB * 1024) } : form
    const response = await this.world.client.request(base, path, {
      method: 'POST',
      ...(how.json
        ? { body: fields }
        : { body: new URLSearchParams(fields).toString(), headers: { 'content-type': FORM_MEDIA_TYPE } }),
    })
    const bent = how.underOtherTenant
      ? 'under another tenant'
      : how.json
        ? 'as JSON'
        : `padded to ${how.padKiB} KiB`
    this.world.recordAnswer(response, `${what} ${bent} (POST ${path})`)
  }

  // OpenID4VCI

  private walletSession() {
    const session = this.world.issuance.session
    if (!session) throw new Error('the wallet has not scanned an offer yet')
    return session
  }

  async fetchOfferUnderOtherTenant() {
    const deepLink = this.world.issuance.deepLink
    if (!deepLink) throw new Error('no offer was opened in this scenario')
    const { offerUrl, processId } = parseCredentialOfferUri(deepLink)
    const { base, path } = this.underOtherTenant(offerUrl, 'oid4vci')
    this.subject = { id: processId }
    this.world.recordAnswer(await this.world.client.request(base, path), `fetch the offer at ${path}`)
  }

  /** The wallet's token request, sent by hand: at another tenant's issuer, padded, or as JSON. */
  async sendTokenRequest(how: FormBend) {
    const session = this.walletSession()
    const form = { grant_type: PRE_AUTHORIZED_GRANT, 'pre-authorized_code': session.preAuthorizedCode }
    await this.postForm(
      'oid4vci',
      `${session.credentialIssuer}/token`,
      form,
      how,
      "the wallet's token request",
    )
  }

  async credentialRequestAtOtherTenant() {
    const session = this.walletSession()
    const accessToken = session.tokenResponse?.access_token
    if (!accessToken) throw new Error('the wallet has no access token yet')
    const { base, path } = this.underOtherTenant(`${session.credentialIssuer}/credential`, 'oid4vci')
    const response = await this.world.client.request(base, path, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}` },
      body: { credential_configuration_id: session.offer.credential_configuration_ids[0] },
    })
    this.world.recordAnswer(response, `credential request with the wallet's access token at ${path}`)
  }

  async expectStillRedeemable() {
    await this.world.issuance.redeem()
    this.world.issuance.expectWalletSuccess()
  }

  // The portal

  async revokeAppKeyAs(who: 'other admin' | 'operator') {
    const operator = this.world.target.operator
    if (who === 'operator' && !operator) throw new Error('no operator key: tag the scenario @needs-portal')
    const token =
      who === 'operator' && operator
        ? await this.world.client.token(operator)
        : await this.otherToken('admin')
    const id = this.world.key('app').id
    this.subject = { id }
    const response = await this.world.client.revokeApiKey(token, id)
    this.world.recordAnswer(
      response,
      `revoke the application's key ${id} as ${who === 'operator' ? 'the operator' : "another tenant's administrator"}`,
    )
  }

  async expectAppStillLogsIn() {
    await this.world.logIn('app')
  }

  async otherListsKeys() {
    const response = await this.world.client.listApiKeys(await this.otherToken('admin'))
    this.world.recordAnswer(response, "list the API keys as another tenant's administrator")
    this.world.expectStatus(200)
    this.listed = (response.body as { id: string }[]).map((k) => k.id)
  }

  /** The other tenant's key list holds its own administrator key and none of ours. */
  expectNoneOfOurKeysListed() {
    const listed = this.listed
    if (!listed) throw new Error("the other tenant's keys were not listed")
    const ours = (['app', 'unlinkedApp', 'admin'] as const).map((c) => this.world.key(c).id)
    const theirs = this.otherTenant().adminKey.id
    if (!listed.includes(theirs) || ours.some((id) => listed.includes(id))) {
      this.world.fail(
        `the other tenant's key list to hold its administrator key ${theirs} and none of ours ${JSON.stringify(ours)}; it held ${JSON.stringify(listed)}`,
      )
    }
  }

  async countKeys() {
    this.before.keys = await this.keyIds()
  }

  private async keyIds(): Promise<string[]> {
    const response = await this.world.client.listApiKeys(await this.world.logIn('admin'))
    return ok(response, 'list the API keys').map((k) => k.id)
  }

  async expectKeysUnchanged() {
    const before = this.before.keys
    if (!before) throw new Error('the API keys were not counted before')
    const now = await this.keyIds()
    if (JSON.stringify(now) !== JSON.stringify(before))
      this.world.fail(
        `the API keys to stay ${JSON.stringify(before)}; they are now ${JSON.stringify(now)}`,
        null,
      )
  }

  private templatePath(kind: TemplateKind, id: string) {
    return `/portal/v1/${kind}-templates/${encodeURIComponent(id)}`
  }

  /** The tenant's administrator creates a template whose id no other tenant has, and reads it once. */
  async createOwnTemplate(kind: TemplateKind) {
    const id = `iso-${randomBytes(5).toString('hex')}`
    const token = await this.world.logIn('admin')
    const client = this.world.client
    ok<unknown>(
      kind === 'issuance'
        ? await client.createIssuanceTemplate(token, { id, credentialType: 'IsolationCheckCredential' })
        : await client.createVerificationTemplate(token, {
            id,
            name: 'Isolation check',
            credentialTypes: ['UniversityDegreeCredential'],
          }),
      `create the ${kind} template ${id}`,
    )
    this.ownTemplate = { kind, id }
    await this.readOwnTemplate()
    this.world.keep('template before')
  }

  private requireOwnTemplate() {
    if (!this.ownTemplate) throw new Error('the administrator has created no template in this scenario')
    return this.ownTemplate
  }

  private async readOwnTemplate() {
    const { kind, id } = this.requireOwnTemplate()
    const token = await this.world.logIn('admin')
    const response = await this.world.client.request(
      this.world.target.urls.authUrl,
      this.templatePath(kind, id),
      {
        token,
      },
    )
    this.world.recordAnswer(response, `read the ${kind} template "${id}" as its administrator`)
    this.world.expectStatus(200)
  }

  async expectTemplateUnchanged() {
    await this.readOwnTemplate()
    this.world.expectSameBodyAs('template before')
  }

  async otherActsOnTemplate(action: TemplateAction) {
    const { kind, id } = this.requireOwnTemplate()
    const replacement =
      kind === 'issuance'
        ? { credentialType: 'HijackedCredential' }
        : { name: 'Hijacked', credentialTypes: ['Passport'] }
    const method = action === 'read' ? 'GET' : action === 'replace' ? 'PUT' : 'DELETE'
    this.subject = { id }
    const response = await this.world.client.request(
      this.world.target.urls.authUrl,
      this.templatePath(kind, id),
      {
        method,
        token: await this.otherToken('admin'),
        ...(action === 'replace' ? { body: replacement } : {}),
      },
    )
    this.world.recordAnswer(
      response,
      `${action} our ${kind} template "${id}" as another tenant's administrator`,
    )
  }

  async otherLinksKeyToOurTemplate() {
    const { id } = this.requireOwnTemplate()
    this.subject = { id }
    const response = await this.world.client.createApiKey(await this.otherToken('admin'), {
      role: 'app',
      template: id,
    })
    this.world.recordAnswer(
      response,
      `create an application key linked to our template "${id}" in another tenant`,
    )
  }

  async appUsesPortal(action: PortalAction) {
    const token = await this.world.logIn('app')
    const client = this.world.client
    const response =
      action === 'list keys'
        ? await client.listApiKeys(token)
        : action === 'create key'
          ? await client.createApiKey(token, { role: 'admin', label: 'made by an application' })
          : await client.createIssuanceTemplate(token, {
              id: `iso-${randomBytes(5).toString('hex')}`,
              credentialType: 'IsolationCheckCredential',
            })
    this.world.recordAnswer(response, `${action} through the portal as the application`)
  }

  async adminCreatesTenant() {
    const tenant = `t-${randomBytes(6).toString('hex')}`
    this.world.recordAnswer(
      await this.world.client.createTenant(await this.world.logIn('admin'), tenant),
      `create tenant ${tenant} as the administrator`,
    )
  }

  async adminCreatesOperatorKey() {
    const response = await this.world.client.request(this.world.target.urls.authUrl, '/portal/v1/api-keys', {
      method: 'POST',
      token: await this.world.logIn('admin'),
      body: { role: 'operator', label: 'escalation' },
    })
    this.world.recordAnswer(response, 'create an API key with the role operator as the administrator')
  }

  // Relying-party requests with bent bodies

  private wire(request: RpRequest): Wire {
    const { issuerUrl, verifierUrl, authUrl } = this.world.target.urls
    const processPath = () =>
      `/admin/v1/issuanceRequests/${encodeURIComponent(this.world.issuance.requireProcess())}`
    switch (request) {
      case 'offer':
        return {
          base: issuerUrl,
          method: 'POST',
          path: '/api/v3/oidc-issuance/credential-offer',
          body: { group: this.world.tenant.issuanceTemplate },
          what: 'an offer request (4.2)',
        }
      case 'session':
        return {
          base: verifierUrl,
          method: 'POST',
          path: '/api/v3/sessions',
          body: { ssiConfigId: this.world.verification.templateId('degree check') },
          what: 'a session request (4.6)',
        }
      case 'rejection':
        return {
          base: issuerUrl,
          method: 'POST',
          path: `${processPath()}/reject`,
          body: { reason: 'documents could not be verified' },
          what: 'a rejection',
        }
      case 'submission':
        return {
          base: issuerUrl,
          method: 'PATCH',
          path: `${processPath()}/credentials`,
          body: DEGREE_CONTENT,
          what: 'a submission (4.4)',
        }
      case 'api key':
        return {
          base: authUrl,
          method: 'POST',
          path: '/portal/v1/api-keys',
          body: { role: 'app', label: 'limits check' },
          what: 'an API key request',
        }
    }
  }

  /** Sends `request` by `caller`, its JSON body bent as asked. */
  async send(
    caller: Caller,
    request: RpRequest,
    bend:
      | { padKiB: number }
      | { unknownField: string }
      | { member: string; length: number }
      | { contentType: string }
      | { text: string },
  ) {
    const wire = this.wire(request)
    let body = wire.body
    if ('unknownField' in bend) body = { ...(body as object), [bend.unknownField]: 'x' }
    if ('member' in bend) body = { ...(body as object), [bend.member]: 'x'.repeat(bend.length) }
    let text = JSON.stringify(body)
    // Whitespace keeps the body valid JSON of the same meaning: only its size is wrong.
    if ('padKiB' in bend) text += ' '.repeat(Math.max(0, bend.padKiB * 1024 - text.length))
    if ('text' in bend) text = bend.text
    const headers: Record<string, string> = {
      'content-type': 'contentType' in bend ? bend.contentType : 'application/json',
    }
    const response = await this.world.client.request(wire.base, wire.path, {
      method: wire.method,
      token: await this.tokenOf(caller),
      body: text,
      headers,
    })
    this.world.recordAnswer(response, `${wire.what} ${describeBend(bend)} as ${CALLER_NAMES[caller]}`)
  }

  // Expectations

  /** What the last attempt's refusal must name: the id it acted on, or the two templates at odds. */
  named(subject: Subject): string[] {
    if (!this.subject) throw new Error('no call in this scenario named a resource')
    if (subject !== 'both templates') return [this.subject.id]
    if (!this.subject.templates) throw new Error('the last call has no template pair to name')
    return this.subject.templates
  }

  /** An RFC 9457 problem whose `errors` member names the field path (e.g. `body/group`). */
  expectProblemField(status: number, code: string, field: string) {
    this.world.expectProblem(status, code)
    const body = this.world.answer.body as Problem
    if (!body.errors?.some((e) => e.field === field))
      this.world.fail(`a problem "${code}" whose errors name the field "${field}"`)
  }

  /** A wallet-facing error: `{error, error_description}` JSON with no-store (the description's text is free). */
  expectOAuthError(status: number, error: string) {
    const response = this.world.answer as ApiResponse<Record<string, unknown>>
    const expected = `HTTP ${status} application/json {error: "${error}", error_description} with Cache-Control: no-store`
    const body = response.body
    if (
      response.status !== status ||
      !(response.headers.get('content-type') ?? '').startsWith('application/json') ||
      typeof body !== 'object' ||
      body === null ||
      body.error !== error ||
      typeof body.error_description !== 'string'
    ) {
      this.world.fail(expected)
    }
    if (!(response.headers.get('cache-control') ?? '').includes('no-store')) this.world.fail(expected)
  }

  /** The answer is the unknown-id answer, byte for byte, once each echoed id is blanked out. */
  expectLikeUnknownId() {
    const kept = this.world.keptAnswer('unknown-id')
    const response = this.world.answer
    const id = this.named('process id')[0] ?? ''
    const blank = (r: ApiResponse<unknown>, value: string) =>
      `${r.status} ${r.headers.get('content-type')} ${r.text.replaceAll(value, '<id>')}`
    if (blank(response, id) !== blank(kept, this.unknownProcessId ?? '')) {
      this.world.fail(
        `the same answer as for an id that does not exist, apart from the id; that answer was ${kept.status} ${kept.text}`,
      )
    }
  }
}

function describeBend(bend: Record<string, unknown>): string {
  if ('padKiB' in bend) return `padded to ${bend.padKiB} KiB`
  if ('unknownField' in bend) return `with the unknown field "${bend.unknownField}"`
  if ('member' in bend) return `whose ${bend.member} is ${bend.length} characters long`
  if ('contentType' in bend) return `sent as ${bend.contentType}`
  return `whose body is ${JSON.stringify(bend.text)}`
}

// One flow per World. world.ts belongs to another change, so the flow hangs off the World here; the
// WeakMap holds nothing beyond a scenario's life and each parallel worker is its own process.
const flows = new WeakMap<HarnessWorld, SecurityFlow>()

export function security(world: HarnessWorld): SecurityFlow {
  let flow = flows.get(world)
  if (!flow) {
    flow = new SecurityFlow(world)
    flows.set(world, flow)
  }
  return flow
}
