// The demo relying party's backend logic: it holds the application keys (from the configuration, like the
// sandbox), logs in over HTTP and caches each token until shortly before it expires, opens offers (with
// sample content submitted at once) and verification sessions, reads their state back (4.3 / 4.7) and
// follows the service's event streams. Both verification profiles: a pe session (OpenID4VP draft 20, its
// definition's id is the session's) and a dcql one (OpenID4VP 1.0, 4.6 answers its id and DCQL query). The
// page only ever sees what `FlowCreated` and `FlowStatus` carry: ids, deep links, statuses, the profile and
// what the request asks for, never a key or a token. A dcql session whose template has `dcql.dcApi` can also
// be answered over the Digital Credentials API (OpenID4VP 1.0 Appendix A): the backend keeps the service's
// request and response URLs, hands the page the request entry when it asks, and forwards the browser's
// answer with the page's Origin. plugin.ts puts HTTP and WebSocket in front of it.

import {
  type ApiResponse,
  type DcqlSessionCreated,
  type IssuanceProcess,
  type Problem,
  parseCredentialOfferUri,
  RelyingPartyClient,
  type SessionCreated,
  type SessionRead,
  sessionIdOf,
} from '../client/index.ts'
import { type FlowPlan, type SandboxPlan, sampleCredentials } from '../harness/sandbox.ts'
import type { Clock } from '../service/util/clock.ts'
import type { FlowStep } from '../shared/flow.ts'
import {
  asDcApiMessage,
  asDcApiOffer,
  claimLines,
  type DcApiMessage,
  type DcApiOffer,
  describeRequest,
  type FlowCreated,
  type FlowKind,
  type FlowOutcome,
  type FlowStatus,
  OUTCOME_LIMITS,
  pageText,
  type RequestedCredential,
  type ServiceStatus,
  type SharedCredential,
  type VerificationProfile,
} from '../web/flow-state.ts'

/** An error the demo answers the page with: its own problem code, never the service's body or a token. */
export class DemoError extends Error {
  override name = 'DemoError'
  constructor(
    readonly status: 400 | 404 | 502 | 503,
    readonly code:
      | 'flow_not_found'
      | 'dc_api_not_offered'
      | 'answer_refused'
      | 'upstream_failed'
      | 'upstream_unreachable'
      | 'too_many_streams',
    message: string,
  ) {
    super(message)
  }
}

export interface DemoBackendOptions {
  plan: SandboxPlan
  /** Where the service's relying-party API is reached (a loopback URL of the same server). */
  apiUrl: () => string
  /** The service's clock: an offer's pre-authorized code lapses on it (the conformance clock in tests). */
  clock: Clock
  /** How long an unused offer's pre-authorized code stays redeemable (config oid4vci setting). */
  offerLifetimeMs: number
  /** The demo's own wall clock, for token caching; default Date.now. */
  now?: () => number
  fetch?: typeof fetch
  /** Flows remembered for polling and sockets; the oldest are forgotten beyond it. Default 1000. */
  maxFlows?: number
}

interface Flow {
  kind: FlowKind
  id: string
  link: string
  template: string
  credentialTypes: string[]
  /** On the service's clock. */
  expiresAt: number
  txCode?: string
  /** Verification: the session's profile and what its request asks for (from 4.6). */
  profile?: VerificationProfile
  requested?: RequestedCredential[]
  /** Verification over the DC API: the service's URLs (kept here) and what the page learns of them. */
  dcApi?: { offer: DcApiOffer; request: string; response: string }
  /** A final state read once is not read again. */
  final?: FlowStatus
}

/** Seconds-precision lifetime of a JWT from its own iat/exp (not verified: the service checks it). */
function tokenLifetimeMs(token: string): number | undefined {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      iat?: unknown
      exp?: unknown
    }
    if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number') return undefined
    const lifetime = (payload.exp - payload.iat) * 1000
    return lifetime > 0 ? lifetime : undefined
  } catch {
    return undefined
  }
}

/** One application key's access token, fetched once and reused until shortly before it expires. */
export class TokenCache {
  private cached: { token: string; refreshAt: number } | undefined
  private pending: Promise<string> | undefined
  /** How many logins were made (tests check the cache). */
  logins = 0

  constructor(
    private readonly login: () => Promise<string>,
    private readonly now: () => number,
  ) {}

  get(): Promise<string> {
    if (this.cached && this.now() < this.cached.refreshAt) return Promise.resolve(this.cached.token)
    this.pending ??= (async () => {
      try {
        const obtained = this.now()
        this.logins++
        const token = await this.login()
        // Refresh a tenth of the lifetime early (at most a minute); 5 minutes when the token says nothing.
        const lifetime = tokenLifetimeMs(token)
        const reuse = lifetime === undefined ? 300_000 : lifetime - Math.min(60_000, lifetime / 10)
        this.cached = { token, refreshAt: obtained + reuse }
        return token
      } finally {
        this.pending = undefined
      }
    })()
    return this.pending
  }

  /** The service refused `token` (401): the next call logs in again. */
  invalidate(token: string) {
    if (this.cached?.token === token) this.cached = undefined
  }
}

/** Server-sent events of a response body: `{event, data}` per message; comments and ids are skipped. */
export async function* serverSentEvents(
  body: AsyncIterable<Uint8Array>,
): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder()
  let buffer = ''
  let event = 'message'
  let data: string[] = []
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true })
    const lines = buffer.split(/\r?\n/)
    buffer = lines.pop() ?? ''
    for (const line of lines) {
      if (line === '') {
        if (data.length > 0) yield { event, data: data.join('\n') }
        event = 'message'
        data = []
      } else if (line.startsWith(':')) {
        // comment (keep-alive)
      } else {
        const colon = line.indexOf(':')
        const field = colon < 0 ? line : line.slice(0, colon)
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
        if (field === 'event') event = value
        else if (field === 'data') data.push(value)
      }
    }
  }
}

const iso = (ms: number) => new Date(ms).toISOString()

export class DemoBackend {
  readonly tokens: Record<FlowKind, TokenCache>
  private readonly flows = new Map<string, Flow>()
  private readonly fetchImpl: typeof fetch
  private client: { url: string; client: RelyingPartyClient } | undefined

  constructor(private readonly options: DemoBackendOptions) {
    this.fetchImpl = options.fetch ?? fetch
    const now = options.now ?? Date.now
    const cache = (plan: FlowPlan) =>
      new TokenCache(async () => {
        const response = await this.rp().login(plan.key)
        if (response.status !== 200 || !response.token) throw upstream('login', response)
        return response.token
      }, now)
    this.tokens = { issuance: cache(options.plan.issuance), verification: cache(options.plan.verification) }
  }

  /** The templates and types the demo offers, for the pages. */
  get plan(): SandboxPlan {
    return this.options.plan
  }

  private rp(): RelyingPartyClient {
    const url = this.options.apiUrl()
    if (this.client?.url !== url) {
      const fetchImpl = this.fetchImpl
      // Network failures become a 502 the page can show, without the URL's internals.
      const guarded: typeof fetch = async (input, init) => {
        try {
          return await fetchImpl(input, init)
        } catch (error) {
          if ((error as Error).name === 'AbortError') throw error
          throw new DemoError(502, 'upstream_unreachable', 'the service cannot be reached')
        }
      }
      this.client = { url, client: new RelyingPartyClient(url, guarded) }
    }
    return this.client.client
  }

  /** A call with the flow's token; a 401 (token revoked or expired early) logs in again once. */
  private async withToken<T>(
    kind: FlowKind,
    call: (token: string) => Promise<ApiResponse<T | Problem>>,
  ): Promise<ApiResponse<T | Problem>> {
    const cache = this.tokens[kind]
    const token = await cache.get()
    const response = await call(token)
    if (response.status !== 401) return response
    cache.invalidate(token)
    return call(await cache.get())
  }

  private remember(flow: Flow) {
    const max = this.options.maxFlows ?? 1000
    this.flows.set(flow.id, flow)
    for (const id of this.flows.keys()) {
      if (this.flows.size <= max) break
      this.flows.delete(id)
    }
  }

  /** A flow this backend opened, or a 404: the page cannot read any other process or session. */
  flow(kind: FlowKind, id: string): Flow {
    const flow = this.flows.get(id)
    if (!flow || flow.kind !== kind)
      throw new DemoError(404, 'flow_not_found', `no ${kind} flow "${id}" here`)
    return flow
  }

  private created(flow: Flow): FlowCreated {
    return {
      kind: flow.kind,
      id: flow.id,
      link: flow.link,
      template: flow.template,
      credentialTypes: flow.credentialTypes,
      expiresAt: iso(flow.expiresAt),
      ...(flow.txCode !== undefined ? { txCode: flow.txCode } : {}),
      ...(flow.profile !== undefined ? { profile: flow.profile } : {}),
      ...(flow.requested !== undefined ? { requested: flow.requested } : {}),
      ...(flow.dcApi !== undefined ? { dcApi: flow.dcApi.offer } : {}),
    }
  }

  /** 4.2 then 4.4 with sample content at once: the wallet gets its credential as soon as it asks. */
  async openIssuance(): Promise<FlowCreated> {
    const plan = this.options.plan.issuance
    const offer = await this.withToken<{ credential_offer_uri: string; tx_code?: string }>('issuance', (t) =>
      this.rp().createOffer(t, plan.template),
    )
    if (offer.status !== 201) throw upstream('create offer', offer)
    const body = offer.body as { credential_offer_uri: string; tx_code?: string }
    const { processId } = parseCredentialOfferUri(body.credential_offer_uri)
    const expiresAt = this.options.clock.now() + this.options.offerLifetimeMs
    const content = sampleCredentials(plan.credentialTypes[0] as string)
    const submitted = await this.withToken('issuance', (t) =>
      this.rp().submitCredentials(t, processId, content),
    )
    if (submitted.status !== 200) throw upstream('submit content', submitted)
    const flow: Flow = {
      kind: 'issuance',
      id: processId,
      link: body.credential_offer_uri,
      template: plan.template,
      credentialTypes: plan.credentialTypes,
      expiresAt,
      ...(body.tx_code !== undefined ? { txCode: body.tx_code } : {}),
    }
    this.remember(flow)
    return this.created(flow)
  }

  /**
   * 4.6, then 4.7 once for the session's expiry. A pe session answers its definition (whose id is the
   * session's), a dcql one its DCQL query and id; the page gets the profile and what the request asks for.
   */
  async openVerification(): Promise<FlowCreated> {
    const plan = this.options.plan.verification
    type Created = SessionCreated | DcqlSessionCreated
    const created = await this.withToken<Created>('verification', (t) =>
      this.rp().createSession<Created>(t, plan.template),
    )
    if (created.status !== 201) throw upstream('create session', created)
    const body = created.body as Created
    const link = body.authentication_request
    const id = sessionIdOf(body)
    const { profile, requested } = describeRequest(body)
    const dcApi = dcApiOf(body)
    const read = await this.withToken<SessionRead>('verification', (t) => this.rp().readSession(t, id))
    if (read.status !== 200 && read.status !== 202) throw upstream('read session', read)
    const flow: Flow = {
      kind: 'verification',
      id,
      link,
      template: plan.template,
      credentialTypes: plan.credentialTypes,
      expiresAt: Date.parse((read.body as SessionRead).ExpiredAt),
      profile,
      requested,
      ...(dcApi ? { dcApi } : {}),
    }
    this.remember(flow)
    return this.created(flow)
  }

  /** A verification flow this backend opened with a DC API request, or a 404. */
  private dcApiFlow(id: string): Flow & { dcApi: NonNullable<Flow['dcApi']> } {
    const flow = this.flow('verification', id)
    if (!flow.dcApi) {
      throw new DemoError(
        404,
        'dc_api_not_offered',
        `verification "${id}" has no Digital Credentials API request`,
      )
    }
    return flow as Flow & { dcApi: NonNullable<Flow['dcApi']> }
  }

  /**
   * A service URL of the DC API, called on the service this demo runs in (its loopback address, like every
   * other call of the backend): the path and query of the URL 4.6 answered. A URL that is not a wallet-facing
   * OpenID4VP one is refused.
   */
  private serviceUrl(url: string): string {
    const parsed = new URL(url)
    if (!parsed.pathname.startsWith('/oid4vp/')) {
      throw new DemoError(502, 'upstream_failed', 'create session: the DC API URLs are not OpenID4VP ones')
    }
    return `${this.options.apiUrl()}${parsed.pathname}${parsed.search}`
  }

  /** Calls the service's DC API endpoints; network failures are the demo's 502. */
  private async dcApiCall(url: string, init: RequestInit): Promise<{ status: number; body: unknown }> {
    let response: Response
    try {
      response = await this.fetchImpl(this.serviceUrl(url), {
        ...init,
        headers: { accept: 'application/json', ...init.headers },
        signal: AbortSignal.timeout(DC_API_CALL_TIMEOUT_MS),
      })
    } catch (error) {
      if (error instanceof DemoError) throw error
      throw new DemoError(502, 'upstream_unreachable', 'the service cannot be reached')
    }
    const text = await response.text()
    let body: unknown
    try {
      body = text === '' ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, body }
  }

  /**
   * GET <api>/verification/<id>/dc-api: the request entry for `navigator.credentials.get`, fetched from the
   * service's request URL (which the service counts as the wallet's fetch of the request: request_retrieved).
   */
  async dcApiRequest(id: string): Promise<DcApiMessage> {
    const flow = this.dcApiFlow(id)
    const answer = await this.dcApiCall(flow.dcApi.request, { method: 'GET' })
    if (answer.status !== 200) throw upstreamOf('DC API request', answer)
    const entry = asDcApiMessage(answer.body, flow.dcApi.offer.protocol)
    if (!entry) {
      throw new DemoError(
        502,
        'upstream_failed',
        'DC API request: the service answered no {protocol, data} entry',
      )
    }
    return { protocol: entry.protocol, data: entry.data }
  }

  /**
   * POST <api>/verification/<id>/dc-api: the browser's answer (a DigitalCredential's protocol and data),
   * forwarded with the page's Origin, which only the relying party's backend can vouch for (the browser
   * sets it; the page cannot). A verified or a rejected presentation are both answers the flow's state
   * reports (`result`); an answer the service cannot read is 400 answer_refused; anything else a 502.
   */
  async dcApiRespond(
    id: string,
    origin: string,
    answer: DcApiMessage,
  ): Promise<{ result: 'verified' | 'rejected' }> {
    const flow = this.dcApiFlow(id)
    const posted = await this.dcApiCall(flow.dcApi.response, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ origin, protocol: answer.protocol, data: answer.data }),
    })
    const error = errorCodeOf(posted.body)
    if (posted.status === 200) return { result: 'verified' }
    if (posted.status === 400 && error === 'invalid_presentation') return { result: 'rejected' }
    if (posted.status === 400 && error === 'invalid_request') {
      throw new DemoError(
        400,
        'answer_refused',
        "the service could not read the wallet's answer (invalid_request)",
      )
    }
    throw upstreamOf('DC API response', posted)
  }

  open(kind: FlowKind): Promise<FlowCreated> {
    return kind === 'issuance' ? this.openIssuance() : this.openVerification()
  }

  /** The polling answer: 4.3 or 4.7 read with the backend's token, as a FlowStatus. */
  async status(kind: FlowKind, id: string): Promise<FlowStatus> {
    const flow = this.flow(kind, id)
    if (flow.final) return flow.final
    const status = kind === 'issuance' ? await this.processStatus(flow) : await this.sessionStatus(flow)
    if (status.status !== 'PENDING') flow.final = status
    return status
  }

  private async processStatus(flow: Flow): Promise<FlowStatus> {
    const read = await this.withToken<IssuanceProcess>('issuance', (t) => this.rp().getProcess(t, flow.id))
    if (read.status !== 200) throw upstream('read process', read)
    const process = read.body as IssuanceProcess
    const state = (status: ServiceStatus, step: FlowStep, at: string): FlowStatus => ({
      kind: 'issuance',
      id: flow.id,
      status,
      step,
      at,
    })
    if (process.status === 'ISSUED') return state('ISSUED', 'issued', process.updatedAt)
    if (process.status === 'REJECTED') return state('REJECTED', 'rejected', process.updatedAt)
    // PENDING: the wallet bound its key (it redeemed the code), or the unused code lapsed, or nothing yet.
    if (process.validator !== null) return state('PENDING', 'holder_bound', process.updatedAt)
    if (this.options.clock.now() >= flow.expiresAt) return state('EXPIRED', 'expired', iso(flow.expiresAt))
    return state('PENDING', 'snapshot', process.updatedAt)
  }

  private async sessionStatus(flow: Flow): Promise<FlowStatus> {
    const read = await this.withToken<SessionRead>('verification', (t) => this.rp().readSession(t, flow.id))
    if (read.status !== 200 && read.status !== 202) throw upstream('read session', read)
    const session = read.body as SessionRead
    const steps: Record<SessionRead['Status'], FlowStep> = {
      PENDING: session.RequestedAt !== null ? 'request_retrieved' : 'snapshot',
      VERIFIED: 'verified',
      REJECTED: 'rejected',
      EXPIRED: 'expired',
    }
    const at = session.Status === 'EXPIRED' ? session.ExpiredAt : session.UpdatedAt
    const outcome = outcomeOf(session)
    return {
      kind: 'verification',
      id: flow.id,
      status: session.Status,
      step: steps[session.Status],
      at,
      ...(outcome ? { outcome } : {}),
    }
  }

  /**
   * A verification's final state from its event stream, with the outcome the stream does not carry (the
   * failed checks or the shared claims, read once with 4.7 and remembered like a polled final state). If
   * the read fails the state goes to the page without it: the flow's end matters more than its details.
   */
  private async withOutcome(flow: Flow, state: FlowStatus): Promise<FlowStatus> {
    if (flow.kind !== 'verification' || (state.status !== 'VERIFIED' && state.status !== 'REJECTED')) {
      return state
    }
    try {
      const read = flow.final ?? (await this.sessionStatus(flow))
      if (read.status !== 'PENDING') flow.final = read
      return read.outcome ? { ...state, outcome: read.outcome } : state
    } catch {
      return state
    }
  }

  /**
   * Follows the service's event stream of the flow (server to server, `Authorization: jwt …`) and hands each
   * state to `onState`. Resolves when the service ends the stream (after a final state) or `signal` aborts.
   */
  async follow(
    kind: FlowKind,
    id: string,
    onState: (state: FlowStatus) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const flow = this.flow(kind, id)
    const path =
      kind === 'issuance'
        ? `/admin/v1/issuanceRequests/${encodeURIComponent(flow.id)}/events`
        : `/api/v3/sessions/${encodeURIComponent(flow.id)}/events`
    const cache = this.tokens[kind]
    for (let attempt = 0; ; attempt++) {
      const token = await cache.get()
      let response: Response
      try {
        response = await this.fetchImpl(`${this.options.apiUrl()}${path}`, {
          headers: { authorization: `jwt ${token}`, accept: 'text/event-stream' },
          signal,
        })
      } catch (error) {
        if (signal.aborted) return
        throw new DemoError(
          502,
          'upstream_unreachable',
          `the service cannot be reached (${(error as Error).name})`,
        )
      }
      if (response.status === 401 && attempt === 0) {
        cache.invalidate(token)
        await response.body?.cancel()
        continue
      }
      if (response.status !== 200 || !response.body) {
        await response.body?.cancel()
        throw new DemoError(
          502,
          'upstream_failed',
          `event stream: the service answered HTTP ${response.status}`,
        )
      }
      try {
        for await (const message of serverSentEvents(response.body)) {
          if (message.event !== 'state') continue
          const state = JSON.parse(message.data) as FlowStatus
          const next: FlowStatus = { kind, id: flow.id, status: state.status, step: state.step, at: state.at }
          onState(await this.withOutcome(flow, next))
        }
      } catch (error) {
        if (signal.aborted) return
        throw error
      }
      return
    }
  }
}

/**
 * What the page shows of a final session (4.7): a REJECTED one's failed checks (name and message, as
 * `Validations.checks` has them), a VERIFIED one's shared credentials (`PresentationSubmission
 * .verifiableCredential`: type, issuer, the subject's claims). Never a token: the credentials' proofs are
 * left out, and every text goes through pageText (JWT-shaped parts cut, length bounded).
 */
export function outcomeOf(session: SessionRead): FlowOutcome | undefined {
  if (session.Status === 'REJECTED') {
    const failedChecks = (session.Validations?.checks ?? [])
      .filter((c) => c.result === 'failed')
      .slice(0, OUTCOME_LIMITS.checks)
      .map((c) => ({ check: pageText(String(c.check)), message: pageText(String(c.message)) }))
    return failedChecks.length > 0 ? { failedChecks } : undefined
  }
  if (session.Status === 'VERIFIED') {
    const credentials = session.PresentationSubmission?.verifiableCredential
    const shared = (Array.isArray(credentials) ? credentials : [])
      .slice(0, OUTCOME_LIMITS.credentials)
      .map((credential): SharedCredential => {
        const c = (typeof credential === 'object' && credential !== null ? credential : {}) as Record<
          string,
          unknown
        >
        const types = Array.isArray(c.type) ? c.type.filter((t): t is string => typeof t === 'string') : []
        const issuer =
          typeof c.issuer === 'string'
            ? c.issuer
            : typeof (c.issuer as { id?: unknown } | undefined)?.id === 'string'
              ? ((c.issuer as { id: string }).id as string)
              : ''
        const subject = c.credentialSubject
        return {
          type: pageText(types.at(-1) ?? 'VerifiableCredential'),
          issuer: pageText(issuer),
          claims:
            typeof subject === 'object' && subject !== null && !Array.isArray(subject)
              ? claimLines(subject as Record<string, unknown>)
              : [],
        }
      })
    return shared.length > 0 ? { shared } : undefined
  }
  return undefined
}

/** A service answer the demo did not expect: status and the service's problem code, nothing else. */
function upstream(what: string, response: ApiResponse<unknown>): DemoError {
  return upstreamOf(what, { status: response.status, body: response.body })
}

/** The same for any answer: the problem's `code` (relying-party API) or the OAuth `error` (wallet-facing). */
function upstreamOf(what: string, response: { status: number; body: unknown }): DemoError {
  const code = errorCodeOf(response.body)
  return new DemoError(
    502,
    'upstream_failed',
    `${what}: the service answered HTTP ${response.status}${code !== undefined ? ` ${code}` : ''}`,
  )
}

/** A wire error code of a service answer (`code` of a problem, `error` of an OAuth error), if it looks like one. */
function errorCodeOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const { code, error } = body as { code?: unknown; error?: unknown }
  const found = typeof code === 'string' ? code : error
  return typeof found === 'string' && /^[a-z0-9_.:-]{1,64}$/i.test(found) ? found : undefined
}

/** How long a call to the service's DC API endpoints may take (the page's user is waiting on it). */
const DC_API_CALL_TIMEOUT_MS = 15_000

/**
 * The DC API of a 4.6 answer (`dcApi: {protocol, request, response, expectedOrigins}`), or undefined when the
 * template has none. Malformed members are a 502: the service promised something it did not give.
 */
function dcApiOf(created: object): Flow['dcApi'] {
  const dcApi = (created as { dcApi?: unknown }).dcApi
  if (dcApi === undefined || dcApi === null) return undefined
  const { request, response } = dcApi as { request?: unknown; response?: unknown }
  const offer = asDcApiOffer(dcApi)
  const isUrl = (u: unknown): u is string => typeof u === 'string' && URL.canParse(u)
  if (!offer || !isUrl(request) || !isUrl(response)) {
    throw new DemoError(
      502,
      'upstream_failed',
      'create session: the service answered an unusable dcApi member',
    )
  }
  return { offer, request, response }
}
