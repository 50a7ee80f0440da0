// Typed relying-party client for the relying-party interface (docs/interface.md, sections 4.1–4.7) and the
// management portal.
// It depends on nothing of the service: it speaks HTTP only, so it drives any deployment.

import type { LdProofType } from '../formats/ldp-vc/suites.ts'
import type { FormatId } from '../formats/registry.ts'

export interface ServiceUrls {
  /** {auth_url}: login host. */
  authUrl: string
  /** {issuer_url}: issuance host. */
  issuerUrl: string
  /** {verifier_url}: verification host. */
  verifierUrl: string
}

export interface Problem {
  type: string
  title: string
  status: number
  detail: string
  code: string
  errors?: { field: string; message: string }[]
}

/** Every call answers with what came over the wire, so negative tests can assert status, headers and body. */
export interface ApiResponse<T> {
  status: number
  headers: Headers
  /** The raw body text, for byte-level comparisons. */
  text: string
  /** Parsed JSON body when there is one. */
  body: T
}

export interface ApiKeyCredentials {
  keyId: string
  secret: string
  /** The `tenant` header; omitted when undefined (to test that the service requires it). */
  tenant: string | undefined
  /** The `ssiconfig` header (template id); omitted when undefined. */
  ssiconfig?: string
}

export type ProcessStatus = 'PENDING' | 'ISSUED' | 'REJECTED'

export interface IssuanceProcess {
  id: string
  status: ProcessStatus
  group: string
  type: string
  data?: Record<string, unknown>[]
  validator: Record<string, unknown> | null
  createdAt: string
  updatedAt: string
}

export interface ApiKeyView {
  id: string
  role: 'app' | 'admin' | 'operator'
  template: string | null
  label: string | null
  source: 'config' | 'portal'
  createdAt: string
  revokedAt: string | null
}
export type NewApiKey = ApiKeyView & { secret: string }

export interface IssuanceTemplateInput {
  id: string
  credentialType: string
  /** PS256: an RSA key, for ldp_vc with RsaSignature2018 or JsonWebSignature2020 only */
  signingAlg?: 'EdDSA' | 'ES256' | 'ES256K' | 'PS256'
  /** ldp_vc: the Linked Data proof type (docs/issuance.md); default Ed25519Signature2018 */
  proofType?: LdProofType
  txCode?: { length?: number; inputMode?: 'numeric' | 'text'; description?: string }
  requiredPresentation?: {
    purpose?: string
    credentials: { type: string; trustedIssuers?: string[]; fields?: string[] }[]
  }
  display?: { name: string; description?: string; locale?: string }
  validityDays?: number
  /** jwt_vc_json (default), an IETF SD-JWT VC or an ldp_vc (docs/issuance.md) */
  format?: FormatId
  /** dc+sd-jwt: the credential type; default <credential issuer>/vct/<credentialType> */
  vct?: string
  /** mso_mdoc: the document type (ISO 18013-5); default org.iso.18013.5.1.mDL */
  doctype?: string
  /** dc+sd-jwt: credentialSubject claims (dotted paths) issued as disclosures; default every top-level one */
  selectivelyDisclosable?: string[]
  /** the claims wallets show (issuer metadata `credential_metadata.claims`) */
  claims?: { path: string; name?: string; mandatory?: boolean }[]
  /** how a pending deferred request is answered: 1.0 (202, default) or draft15 (400 issuance_pending) */
  deferredResponse?: '1.0' | 'draft15'
  /** dc+sd-jwt with ES256: name the issuer key by an x5c chain of the tenant's test CA (HAIP) */
  issuerKeyBinding?: 'did:key' | 'x5c'
  webhookUrl?: string
  webhookSecret?: string
  /** Secrets being rotated out: deliveries are also signed with each. */
  webhookPreviousSecrets?: string[]
}
export interface VerificationTemplateInput {
  id: string
  name: string
  /** pe (default): draft 20 with Presentation Exchange; dcql: OpenID4VP 1.0 (docs/verification.md) */
  profile?: 'pe' | 'dcql'
  dcql?: {
    format?: FormatId
    vctValues?: Record<string, string[]>
    clientIdPrefix?: 'decentralized_identifier' | 'x509_san_dns' | 'x509_hash' | 'redirect_uri'
    responseMode?: 'direct_post' | 'direct_post.jwt'
    requestUriMethod?: 'get' | 'post'
  }
  /** dcql: PEM anchors of x5c-certified SD-JWT VC issuers and mdoc IACAs (default: the tenant's test CA, and its IACA for mso_mdoc) */
  trustAnchors?: string[]
  credentialTypes: string[]
  optionalGroups?: { name: string; credentialTypes: string[]; min?: number; purpose?: string }[]
  purpose?: string
  requestedFields?: {
    path: string
    credentialTypes?: string[]
    purpose?: string
    sensitive?: boolean
    optional?: boolean
  }[]
  trustedIssuers?: string[]
  requireStatus?: boolean
  sessionLifetimeSeconds?: number
  consentDurationDays?: number
  webhookUrl?: string
  webhookSecret?: string
  /** Secrets being rotated out: deliveries are also signed with each. */
  webhookPreviousSecrets?: string[]
}

/** Section 2.7 (a `pe` template). */
export interface SessionCreated {
  authentication_request: string
  presentation_definition: Record<string, unknown> & { id: string }
}

/** 4.6 for a `dcql` template (OpenID4VP 1.0): the DCQL query and the session id (docs/verification.md). */
export interface DcqlSessionCreated {
  authentication_request: string
  dcql_query: Record<string, unknown> & { credentials: { id: string; format: string }[] }
  id: string
  /**
   * A template with `dcql.dcApi`: the same session over the W3C Digital Credentials API (OpenID4VP 1.0
   * Appendix A). GET `request` answers the `{protocol, data}` entry for `navigator.credentials.get`; POST
   * `response` (application/json `{origin, protocol, data}`) the DigitalCredential the page received.
   */
  dcApi?: {
    protocol: 'openid4vp-v1-unsigned' | 'openid4vp-v1-signed' | 'openid4vp-v1-multisigned'
    request: string
    response: string
    expectedOrigins: string[]
  }
}

/** The session id of either answer of 4.6. */
export const sessionIdOf = (created: SessionCreated | DcqlSessionCreated): string =>
  'id' in created ? created.id : created.presentation_definition.id

/** Section 2.9 (plus Status); docs/verification.md. */
export interface SessionRead {
  Id: string
  Status: 'PENDING' | 'VERIFIED' | 'REJECTED' | 'EXPIRED'
  PresentationSubmission: Record<string, unknown> | null
  PresentationSubmissionFormat: string
  Validations: {
    status: 'SUCCESS' | 'REJECT'
    checks: { check: string; result: 'passed' | 'failed' | 'not_run'; message: string }[]
    verificationResult: { checks: string[]; warnings: string[]; errors: string[] }
  } | null
  /** null for a dcql session. */
  PresentationDefinition: Record<string, unknown> | null
  AuthRequest: Record<string, unknown>
  RequestedAt: string | null
  CreatedAt: string
  UpdatedAt: string
  ExpiredAt: string
  DeletedAt: string | null
  SourceWallet: string
  Callback: string
  Subject: string
}
export type TemplateView<T> = Omit<T, 'webhookSecret' | 'webhookPreviousSecrets'> & {
  hasWebhookSecret: boolean
  source: 'config' | 'portal'
  createdAt: string
  updatedAt: string
}

/** Thrown by `ok()` when a call that should succeed did not; the message carries the problem. */
export type TemplateKind = 'issuance' | 'verification'

/** One webhook event and where its delivery stands (portal, docs/webhooks.md). */
export interface WebhookDelivery {
  id: string
  event: 'issuance.issued' | 'issuance.rejected' | 'verification.verified' | 'verification.rejected'
  subject: string
  template: string
  url: string
  state: 'pending' | 'delivered' | 'failed' | 'disabled'
  attempts: number
  nextAttemptAt: string | null
  lastStatus: number | null
  lastError: string | null
  createdAt: string
  updatedAt: string
  deliveredAt: string | null
  body: unknown
}
export interface WebhookAttempt {
  attempt: number
  at: string
  durationMs: number
  status: number | null
  outcome: 'delivered' | 'retry' | 'failed' | 'disabled'
  error: string | null
  nextAttemptAt: string | null
  trigger: 'automatic' | 'redelivery'
}
export type WebhookDeliveryWithLog = WebhookDelivery & { log: WebhookAttempt[] }
export interface WebhookDeliveryLog {
  endpoint: {
    url: string | null
    disabled: boolean
    disabledAt: string | null
    disabledReason: string | null
  }
  deliveries: WebhookDelivery[]
}

export class UnexpectedResponse extends Error {
  override name = 'UnexpectedResponse'
  constructor(
    readonly what: string,
    readonly response: ApiResponse<unknown>,
  ) {
    super(`${what}: HTTP ${response.status} ${response.text.slice(0, 500)}`)
  }
}

/** Returns the body of a 2xx response, or throws with what the server said. */
export function ok<T>(response: ApiResponse<T | Problem>, what = 'request'): T {
  if (response.status < 200 || response.status > 299) throw new UnexpectedResponse(what, response)
  return response.body as T
}

export interface RequestOptions {
  method?: string
  headers?: Record<string, string>
  /** JSON-encoded unless it is already a string. */
  body?: unknown
  token?: string
}

export class RelyingPartyClient {
  readonly urls: ServiceUrls
  constructor(
    urls: ServiceUrls | string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.urls = typeof urls === 'string' ? { authUrl: urls, issuerUrl: urls, verifierUrl: urls } : urls
  }

  /** Low-level call used by every method; exposed so suites can send deliberately broken requests. */
  async request<T>(base: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization ??= `jwt ${options.token}`
    let body: string | undefined
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    const url = `${base}${path}`
    const method = options.method ?? 'GET'
    let response: Response
    try {
      response = await this.fetchImpl(url, { method, headers, ...(body !== undefined ? { body } : {}) })
    } catch (error) {
      // fetch's own "fetch failed" names neither the request nor the cause.
      throw new TypeError(`fetch failed: ${method} ${withoutCredentials(url)}: ${networkCause(error)}`, {
        cause: error,
      })
    }
    const text = await response.text()
    let parsed: unknown = text
    if (/json/.test(response.headers.get('content-type') ?? '') && text !== '') parsed = JSON.parse(text)
    return { status: response.status, headers: response.headers, text, body: parsed as T }
  }

  /** 4.1: Basic base64(id:secret) + tenant + ssiconfig, no body. The token is in the `Token` header. */
  async login(credentials: ApiKeyCredentials, basic?: string) {
    const headers: Record<string, string> = {
      authorization: `Basic ${basic ?? Buffer.from(`${credentials.keyId}:${credentials.secret}`).toString('base64')}`,
      'content-type': 'application/json',
    }
    if (credentials.tenant !== undefined) headers.tenant = credentials.tenant
    if (credentials.ssiconfig !== undefined) headers.ssiconfig = credentials.ssiconfig
    const response = await this.request<{ message: string } | Problem>(
      this.urls.authUrl,
      '/admin/v1/api_keys/login',
      {
        method: 'POST',
        headers,
      },
    )
    return { ...response, token: response.headers.get('token') ?? undefined }
  }

  /** Logs in and returns the token, or throws with the server's answer, naming the key (never its secret). */
  async token(credentials: ApiKeyCredentials): Promise<string> {
    const response = await this.login(credentials)
    const what = `login of API key ${credentials.keyId}${credentials.tenant !== undefined ? ` (tenant ${credentials.tenant})` : ''}`
    ok(response, what)
    if (!response.token) throw new UnexpectedResponse(`${what}: no Token header`, response)
    return response.token
  }

  /** 4.2; an undefined token sends no Authorization header. */
  createOffer(token: string | undefined, group: string) {
    return this.request<{ credential_offer_uri: string; tx_code?: string } | Problem>(
      this.urls.issuerUrl,
      '/api/v3/oidc-issuance/credential-offer',
      { method: 'POST', body: { group }, ...(token !== undefined ? { token } : {}) },
    )
  }

  /** 4.3 */
  /** 4.6: open a verification session for template `ssiConfigId`. */
  /** 4.6; name `DcqlSessionCreated` as `T` for a dcql template (or take either and use `sessionIdOf`). */
  createSession<T extends SessionCreated | DcqlSessionCreated = SessionCreated>(
    token: string | undefined,
    ssiConfigId: string,
  ) {
    return this.request<T | Problem>(this.urls.verifierUrl, '/api/v3/sessions', {
      method: 'POST',
      body: { ssiConfigId },
      ...(token !== undefined ? { token } : {}),
    })
  }

  /** 4.7: 202 while the session waits for the wallet, 200 once it is final. */
  readSession(token: string, id: string) {
    return this.request<SessionRead | Problem>(
      this.urls.verifierUrl,
      `/api/v3/sessions/${encodeURIComponent(id)}`,
      { token },
    )
  }

  getProcess(token: string, id: string) {
    return this.request<IssuanceProcess | Problem>(
      this.urls.issuerUrl,
      `/admin/v1/issuanceRequests/${encodeURIComponent(id)}`,
      { token },
    )
  }

  /** 4.4: the body is an array of credential objects (section 2.3); the answer an array of processes. */
  submitCredentials(token: string, id: string, credentials: unknown) {
    return this.request<IssuanceProcess[] | Problem>(
      this.urls.issuerUrl,
      `/admin/v1/issuanceRequests/${encodeURIComponent(id)}/credentials`,
      { method: 'PATCH', body: credentials, token },
    )
  }

  /** Extension: PENDING → REJECTED (docs/api.md). */
  rejectProcess(token: string, id: string, reason?: string) {
    return this.request<IssuanceProcess | Problem>(
      this.urls.issuerUrl,
      `/admin/v1/issuanceRequests/${encodeURIComponent(id)}/reject`,
      { method: 'POST', body: reason === undefined ? {} : { reason }, token },
    )
  }

  /** Extension: revoke, suspend or reinstate the credentials of an ISSUED process. */
  setCredentialStatus(
    token: string,
    id: string,
    change: { status: 'active' | 'revoked' | 'suspended'; credentialIds?: string[] },
  ) {
    return this.request<{ credentials: { id: string; status: string }[] } | Problem>(
      this.urls.issuerUrl,
      `/admin/v1/issuanceRequests/${encodeURIComponent(id)}/credentials/status`,
      { method: 'POST', body: change, token },
    )
  }

  /** 4.5; `next` is the cursor from the Link header when another page exists. */
  async listProcesses(token: string, query: { status?: string; limit?: number; cursor?: string } = {}) {
    const search = new URLSearchParams()
    for (const [k, v] of Object.entries(query)) if (v !== undefined) search.set(k, String(v))
    const qs = search.size > 0 ? `?${search}` : ''
    const response = await this.request<IssuanceProcess[] | Problem>(
      this.urls.issuerUrl,
      `/admin/v1/issuanceRequests${qs}`,
      { token },
    )
    const link = response.headers.get('link') ?? ''
    const next = /<([^>]+)>;\s*rel="next"/.exec(link)?.[1]
    return { ...response, next: next ? (new URL(next).searchParams.get('cursor') ?? undefined) : undefined }
  }

  /** Reads every page of 4.5. */
  async listAllProcesses(token: string, query: { status?: string; limit?: number } = {}) {
    const all: IssuanceProcess[] = []
    let cursor: string | undefined
    do {
      const page = await this.listProcesses(token, { ...query, ...(cursor ? { cursor } : {}) })
      all.push(...ok<IssuanceProcess[]>(page, 'list processes'))
      cursor = page.next
    } while (cursor)
    return all
  }

  // Management portal (served with the auth host).

  createTenant(token: string, id: string) {
    return this.request<{ id: string; createdAt: string; adminKey: NewApiKey } | Problem>(
      this.urls.authUrl,
      '/portal/v1/tenants',
      { method: 'POST', token, body: { id } },
    )
  }

  createApiKey(token: string, input: { role: 'app' | 'admin'; template?: string; label?: string }) {
    return this.request<NewApiKey | Problem>(this.urls.authUrl, '/portal/v1/api-keys', {
      method: 'POST',
      token,
      body: input,
    })
  }

  listApiKeys(token: string) {
    return this.request<ApiKeyView[] | Problem>(this.urls.authUrl, '/portal/v1/api-keys', { token })
  }

  revokeApiKey(token: string, id: string) {
    return this.request<'' | Problem>(this.urls.authUrl, `/portal/v1/api-keys/${encodeURIComponent(id)}`, {
      method: 'DELETE',
      token,
    })
  }

  createIssuanceTemplate(token: string, template: IssuanceTemplateInput) {
    return this.request<TemplateView<IssuanceTemplateInput> | Problem>(
      this.urls.authUrl,
      '/portal/v1/issuance-templates',
      { method: 'POST', token, body: template },
    )
  }

  createVerificationTemplate(token: string, template: VerificationTemplateInput) {
    return this.request<TemplateView<VerificationTemplateInput> | Problem>(
      this.urls.authUrl,
      '/portal/v1/verification-templates',
      { method: 'POST', token, body: template },
    )
  }

  getTemplate<K extends TemplateKind>(token: string, kind: K, id: string) {
    return this.request<
      TemplateView<K extends 'issuance' ? IssuanceTemplateInput : VerificationTemplateInput> | Problem
    >(this.urls.authUrl, `/portal/v1/${kind}-templates/${encodeURIComponent(id)}`, { token })
  }

  replaceTemplate<K extends TemplateKind>(
    token: string,
    kind: K,
    id: string,
    template: Omit<K extends 'issuance' ? IssuanceTemplateInput : VerificationTemplateInput, 'id'>,
  ) {
    return this.request<TemplateView<typeof template> | Problem>(
      this.urls.authUrl,
      `/portal/v1/${kind}-templates/${encodeURIComponent(id)}`,
      { method: 'PUT', token, body: template },
    )
  }

  /** The webhook delivery log of a template, newest first (docs/webhooks.md). */
  webhookDeliveries(
    token: string,
    kind: TemplateKind,
    templateId: string,
    query: { limit?: number; before?: string; state?: WebhookDelivery['state'] } = {},
  ) {
    const search = new URLSearchParams()
    for (const [k, v] of Object.entries(query)) if (v !== undefined) search.set(k, String(v))
    const qs = search.size > 0 ? `?${search}` : ''
    return this.request<WebhookDeliveryLog | Problem>(
      this.urls.authUrl,
      `/portal/v1/${kind}-templates/${encodeURIComponent(templateId)}/webhook-deliveries${qs}`,
      { token },
    )
  }

  webhookDelivery(token: string, id: string) {
    return this.request<WebhookDeliveryWithLog | Problem>(
      this.urls.authUrl,
      `/portal/v1/webhook-deliveries/${encodeURIComponent(id)}`,
      { token },
    )
  }

  redeliverWebhook(token: string, id: string) {
    return this.request<WebhookDeliveryWithLog | Problem>(
      this.urls.authUrl,
      `/portal/v1/webhook-deliveries/${encodeURIComponent(id)}/redeliver`,
      { method: 'POST', token },
    )
  }

  health(base = this.urls.issuerUrl) {
    return this.request<{ status: string }>(base, '/health')
  }
}

/** A URL as messages may show it: without user:password@. */
function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url)
    if (!parsed.username && !parsed.password) return url
    parsed.username = ''
    parsed.password = ''
    return parsed.href
  } catch {
    return url
  }
}

/** The code and message of a network error's cause (ECONNREFUSED, ENOTFOUND, a timeout, a TLS error). */
function networkCause(error: unknown): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } }
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return e.message ?? 'timed out'
  const cause = e.cause
  const parts = [cause?.code, cause?.message].filter((p): p is string => typeof p === 'string' && p !== '')
  return parts.length > 0 ? parts.join(': ') : (e.message ?? String(error))
}

/** Splits a credential offer deep link (any scheme) into the offer URL and the process id it ends with. */
export function parseCredentialOfferUri(deepLink: string): {
  scheme: string
  offerUrl: string
  processId: string
} {
  const match = /^([a-z][a-z0-9+.-]*):\/\/[^?]*\?(.*)$/i.exec(deepLink)
  if (!match?.[1] || match[2] === undefined) throw new Error(`not a deep link with a query: ${deepLink}`)
  const offerUrl = new URLSearchParams(match[2]).get('credential_offer_uri')
  if (!offerUrl) throw new Error(`deep link has no credential_offer_uri parameter: ${deepLink}`)
  const processId = decodeURIComponent(new URL(offerUrl).pathname.split('/').pop() ?? '')
  return { scheme: match[1], offerUrl, processId }
}
