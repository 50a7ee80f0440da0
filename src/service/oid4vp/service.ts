import { createPrivateKey } from 'node:crypto'
import { DC_API_PROTOCOLS, type DcApiRequest } from '../../shared/dc-api.ts'
import type { VerificationStep } from '../../shared/flow.ts'
import { isObject } from '../../shared/json.ts'
import { jwkThumbprint } from '../../shared/jws.ts'
import { lazyImport } from '../../shared/lazy.ts'
import type { CheckMetrics } from '../credentials/pipeline.ts'
import type { StatusChecker } from '../credentials/status.ts'
import { OAuthError } from '../errors/oauth.ts'
import type { ServiceEvents, WebhookBody } from '../events.ts'
import type { SessionRecord, Store, Validations } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import { checkCarriedJson } from '../util/json-limits.ts'
import { sessionChanged, transition } from '../verification/lifecycle.ts'
import type { WebhookOutbox } from '../webhooks/outbox.ts'
import type { DcApiRequests } from './dc-api.ts'
import { HandedOutSessions } from './handed-out.ts'
import type { Oid4vpProfile, PresentationResponse } from './profile.ts'
import { RESPONSE_ALG, RESPONSE_ENC_VALUES } from './request-v1.ts'

/** jose decrypts direct_post.jwt responses only: loaded at the first one. */
const jose = lazyImport(() => import('jose'))

// The wallet-facing verifier (docs/verification.md), for both profiles: `pe` (OpenID4VP draft 20 as section
// 2.7 shows it) and `dcql` (OpenID4VP 1.0: request_uri_method post, direct_post.jwt, a vp_token object).
// Serves the request object and takes the response. OAuth-style errors only. Each step asks the session
// lifecycle (verification/lifecycle.ts), writes conditionally, then announces.

const MAX_DESCRIPTION = 300
/** OpenID4VP 1.0 §5.10 sets no length; a nonce needs far less (ours are 22 characters). */
const MAX_WALLET_NONCE = 512
const clip = (text: string) => (text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION)}…` : text)
/**
 * A wallet's parameter as text. A form gives strings (or arrays of them), a decrypted direct_post.jwt payload
 * any JSON: String() of an object with a non-callable `toString` member throws, JSON text never does.
 */
const text = (value: unknown) =>
  typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))

export interface Oid4vpDeps {
  store: Store
  clock: Clock
  events: ServiceEvents
  webhooks: WebhookOutbox
  status: StatusChecker
  /**
   * Each profile's object (profile.ts): request_uri_method=post signs its request object anew; a response
   * is parsed and verified by the profile of its session.
   */
  profiles: Record<SessionRecord['profile'], Oid4vpProfile>
  /** Builds a session's request over the Digital Credentials API (dc-api.ts; wrapped in wallet test plans). */
  dcApi: DcApiRequests
  /** Told where the time of each response's checks went (the bench sets it); none by default. */
  metrics?: CheckMetrics
}

/** What a response carried, known only once it is read (and decrypted): what a wallet test's judge needs. */
export interface ResponseFacts {
  /** The wallet sent a vp_token (also inside a direct_post.jwt JWE). */
  vpToken: boolean
  /** The error the wallet answered instead (access_denied, invalid_request, …). */
  walletError?: string
  /** The wallet's error_description, if any. */
  walletErrorDescription?: string
}

export class Oid4vpService {
  /** Sessions whose request object was just handed out: their response needs no second read (handed-out.ts). */
  private readonly handedOut = new HandedOutSessions()

  constructor(private readonly deps: Oid4vpDeps) {}

  /** The session a wallet names: unknown and other tenants' sessions are 404s like any unknown path. */
  private async session(tenantId: string, id: string): Promise<SessionRecord> {
    const session = await this.deps.store.sessions.get(id)
    if (!session || session.tenantId !== tenantId) {
      throw new OAuthError('not_found', `no verification session "${id}"`)
    }
    return session
  }

  /** The lifecycle's answer for a wallet step; an expired session is 410, a closed one 409. */
  private allow(
    session: SessionRecord,
    event: 'retrieve_request' | 'verify' | 'reject',
    now = this.deps.clock.now(),
  ) {
    const outcome = transition(session, event, now)
    if (outcome.ok) return outcome
    throw new OAuthError(
      outcome.refusal === 'expired' ? 'session_expired' : 'session_closed',
      outcome.message,
    )
  }

  /**
   * The signed request object at request_uri; it may be fetched again while the session lives. The first
   * fetch is one statement: the conditional write of requestedAt, which holds the checks below in its WHERE
   * and answers the row. Only when it writes nothing (unknown, another tenant's, expired, closed, by value,
   * or fetched before) is the session read, and the checks decide the answer as for any wallet step.
   */
  async requestObject(tenantId: string, id: string): Promise<string> {
    const now = this.deps.clock.now()
    const requested = await this.deps.store.sessions.markRequestedReturning(id, tenantId, now)
    if (requested) {
      const { step } = this.allow(requested, 'retrieve_request', now)
      this.deps.events.emit(sessionChanged({ ...requested, updatedAt: now }, step))
      this.handedOut.remember(requested, now)
      return requested.requestJwt
    }
    const session = await this.session(tenantId, id)
    const { step } = this.allow(session, 'retrieve_request', now)
    if (session.requestJwt === '') {
      throw new OAuthError(
        'not_found',
        `verification session "${id}" sends its request by value (client identifier prefix redirect_uri, OpenID4VP 1.0 §5.9.3): it has no request object`,
      )
    }
    // Fetched before (the common case here): nothing to write. Null only if the row changed in between.
    if (session.requestedAt === null) await this.markRequested(session, step)
    else this.handedOut.remember(session, now)
    return session.requestJwt
  }

  /**
   * request_uri_method=post (OpenID4VP 1.0 §5.10): the wallet posts its metadata and a nonce; the answer is
   * the request object signed anew with that `wallet_nonce`. Only a dcql session offers it.
   */
  async requestObjectByPost(tenantId: string, id: string, body: Record<string, unknown>): Promise<string> {
    const session = await this.session(tenantId, id)
    const { step } = this.allow(session, 'retrieve_request')
    const builder = this.deps.profiles[session.profile]
    if (session.profile !== 'dcql' || session.requestJwt === '' || !builder.requestObjectFor) {
      throw new OAuthError(
        'invalid_request',
        session.profile === 'dcql'
          ? `verification session "${id}" sends its request by value: there is no request_uri to post to`
          : `verification session "${id}" speaks the draft 20 profile (pe): fetch its request object with GET`,
      )
    }
    const walletNonce = body.wallet_nonce
    if (walletNonce !== undefined && (typeof walletNonce !== 'string' || walletNonce.length === 0)) {
      throw new OAuthError('invalid_request', 'wallet_nonce must be a non-empty string')
    }
    // Echoed in a signed request object: bounded, or 300,000 characters came back as a 402 KB JWT (issue 30).
    if (walletNonce !== undefined && walletNonce.length > MAX_WALLET_NONCE) {
      throw new OAuthError(
        'invalid_request',
        `wallet_nonce is ${walletNonce.length} characters long; at most ${MAX_WALLET_NONCE} are accepted`,
      )
    }
    if (body.wallet_metadata !== undefined) {
      let metadata: unknown
      try {
        metadata = typeof body.wallet_metadata === 'string' ? JSON.parse(body.wallet_metadata) : undefined
      } catch {
        // reported below
      }
      if (!isObject(metadata)) throw new OAuthError('invalid_request', 'wallet_metadata is not a JSON object')
      checkCarriedJson(metadata, 'wallet_metadata')
      // §5.10.1: a wallet that names the algorithms it verifies gets a request object it can verify, or none.
      const algs = metadata.request_object_signing_alg_values_supported
      const alg = JSON.parse(
        Buffer.from(session.requestJwt.split('.')[0] as string, 'base64url').toString(),
      ).alg
      if (Array.isArray(algs) && !algs.includes(alg)) {
        throw new OAuthError(
          'invalid_request',
          `wallet_metadata.request_object_signing_alg_values_supported ${JSON.stringify(algs)} does not include ${alg}, the algorithm of this verifier's key`,
        )
      }
    }
    const jwt = await builder.requestObjectFor(session, walletNonce)
    await this.markRequested(session, step)
    return jwt
  }

  /**
   * OpenID4VP 1.0 Appendix A: the request entry for `navigator.credentials.get`, built (and, signed, signed)
   * now (dc-api.ts). Its first fetch is the wallet's step request_retrieved, as a request object's is: the
   * relying party's page fetches it when its user chooses a wallet on this device.
   */
  async dcApiRequest(tenantId: string, id: string): Promise<DcApiRequest> {
    const now = this.deps.clock.now()
    const session = await this.session(tenantId, id)
    dcApiOf(session)
    const { step } = this.allow(session, 'retrieve_request', now)
    const entry = await this.deps.dcApi.build(session, now)
    if (session.requestedAt === null) await this.markRequested(session, step)
    this.handedOut.remember(session, now)
    return entry
  }

  private async markRequested(session: SessionRecord, step: VerificationStep) {
    const now = this.deps.clock.now()
    // Written (and announced) the first time only: the relying party's RequestedAt is that moment.
    if (await this.deps.store.sessions.markRequested(session.id, now)) {
      this.deps.events.emit(sessionChanged({ ...session, requestedAt: now, updatedAt: now }, step))
    }
  }

  /**
   * direct_post.jwt (OpenID4VP 1.0 §8.3): the response parameters from the JWE in `response`, decrypted
   * with the session's ephemeral key. A JWE that cannot be decrypted cannot be attributed: a 400.
   */
  private async decrypt(session: SessionRecord, jwe: unknown): Promise<Record<string, unknown>> {
    if (typeof jwe !== 'string' || jwe.length === 0 || !session.responseKey) {
      throw new OAuthError(
        'invalid_request',
        'response must be a compact JWE (response_mode direct_post.jwt, or dc_api.jwt over the Digital Credentials API)',
      )
    }
    try {
      const { plaintext, protectedHeader } = await (await jose()).compactDecrypt(
        jwe,
        createPrivateKey({ key: session.responseKey, format: 'jwk' }),
        { keyManagementAlgorithms: [RESPONSE_ALG], contentEncryptionAlgorithms: [...RESPONSE_ENC_VALUES] },
      )
      if (protectedHeader.kid !== undefined && protectedHeader.kid !== session.responseKey.kid) {
        throw new Error(`kid ${JSON.stringify(protectedHeader.kid)} is not this session's key`)
      }
      const params: unknown = JSON.parse(new TextDecoder().decode(plaintext))
      if (!isObject(params)) throw new Error('its payload is not a JSON object')
      return params
    } catch (error) {
      throw new OAuthError(
        'invalid_request',
        `the response JWE cannot be decrypted with this session's key (${RESPONSE_ALG}; ${RESPONSE_ENC_VALUES.join(' or ')}): ${clip((error as Error).message)}`,
      )
    }
  }

  /**
   * The wallet's direct_post (or direct_post.jwt), as one pipeline: recall the session, ask the lifecycle
   * whether it takes a response, decrypt, parse (the profile's schema), verify (the profile's checks), ask
   * the lifecycle for the outcome's status, complete. A response that cannot be attributed or read (bad
   * state, missing vp_token, a JWE that does not decrypt) is a 400 that leaves the session open; a wallet's
   * refusal or a presentation that fails any check closes it as REJECTED.
   */
  async respond(
    tenantId: string,
    id: string,
    body: Record<string, unknown>,
    userAgent: string | undefined,
    /** Told what the response carried, also when it is refused below (a wallet test's judge reads it). */
    observe?: (facts: ResponseFacts) => void,
  ): Promise<Record<string, never>> {
    const session = await this.recall(tenantId, id)
    this.allow(session, 'verify')
    const received = await this.received(session, body, DIRECT_POST)
    return this.answer(session, received, userAgent, observe)
  }

  /**
   * OpenID4VP 1.0 Appendix A: the DigitalCredential the relying party's page received, posted with the origin
   * of the page that asked (`origin`; absent, the session's first expected origin). The same pipeline as
   * respond() from the decryption on (dc_api.jwt: `data.response` with the session's key), without `state`
   * (A.2), and bound to the origin instead of the client_id: an answer from an origin the session does not
   * expect is REJECTED (sessionBinding), since the holder's data reached a page it was not meant for. The
   * caller learns the outcome: 200 verified, 400 invalid_presentation rejected (a wallet's refusal too), 400
   * invalid_request when the answer cannot be read, the session left open.
   */
  async respondDcApi(
    tenantId: string,
    id: string,
    body: { origin?: unknown; protocol?: unknown; data?: unknown },
    userAgent: string | undefined,
    observe?: (facts: ResponseFacts) => void,
  ): Promise<Record<string, never>> {
    const session = await this.recall(tenantId, id)
    const dcApi = dcApiOf(session)
    this.allow(session, 'verify')
    const protocol = DC_API_PROTOCOLS[dcApi.request]
    if (body.protocol !== undefined && body.protocol !== protocol) {
      throw new OAuthError(
        'invalid_request',
        `protocol ${clip(text(body.protocol))} is not this session's DC API protocol ${protocol} (OpenID4VP 1.0 Appendix A.1)`,
      )
    }
    if (body.origin !== undefined && typeof body.origin !== 'string') {
      throw new OAuthError('invalid_request', 'origin must be the calling page’s origin as a string')
    }
    if (!isObject(body.data)) {
      throw new OAuthError(
        'invalid_request',
        "data must be the DigitalCredential's data object: {vp_token}, {response} (dc_api.jwt) or {error} (OpenID4VP 1.0 Appendix A.4)",
      )
    }
    const origin = body.origin ?? (dcApi.origins[0] as string)
    const received = await this.received(session, body.data, {
      via: 'dc_api',
      origin,
      origins: dcApi.origins,
    })
    return this.answer(session, received, userAgent, observe)
  }

  /**
   * What respond() and respondDcApi() share once the response is read: tell the observer, parse, verify,
   * transition, complete. A DC API answer that closes the session as REJECTED is answered 400
   * invalid_presentation, whatever rejected it: its caller is the relying party, which learns the outcome.
   */
  private async answer(
    session: SessionRecord,
    received: Received,
    userAgent: string | undefined,
    observe: ((facts: ResponseFacts) => void) | undefined,
  ): Promise<Record<string, never>> {
    observe?.(factsOf(received.params))
    const now = this.deps.clock.now()
    const profile = this.deps.profiles[session.profile]
    const parsed = parse(session, received, profile)
    const outcome =
      'outcome' in parsed
        ? parsed.outcome
        : await this.verify(session, profile, parsed, received.channel, now)
    const { status, step } = this.allow(session, outcome.event, now)
    const sourceWallet = userAgent ? clip(userAgent) : null
    await this.complete(
      { ...session, ...outcome.record, status, updatedAt: now, sourceWallet },
      step,
      outcome.claims,
    )
    if (received.channel.via === 'dc_api' && outcome.event === 'reject') {
      const errors = outcome.record.validations?.verificationResult.errors.join(' | ') ?? ''
      throw new OAuthError('invalid_presentation', `the answer was rejected: ${errors}`)
    }
    if (outcome.error) throw outcome.error
    return {}
  }

  /** The session as its request object was handed out here (handed-out.ts), else as stored. */
  private async recall(tenantId: string, id: string): Promise<SessionRecord> {
    return this.handedOut.recall(tenantId, id, this.deps.clock.now()) ?? (await this.session(tenantId, id))
  }

  /**
   * The response parameters: the form's, or under direct_post.jwt those of the JWE in `response`. Before
   * anything reads or writes: a response beyond the JSON limits is a 400 that leaves the session open.
   */
  private async received(
    session: SessionRecord,
    body: Record<string, unknown>,
    channel: Channel,
  ): Promise<Received> {
    // direct_post.jwt, and over the DC API dc_api.jwt (dc-api.ts): the same session key decrypts `response`.
    const encrypted = session.request.response_mode === 'direct_post.jwt' && body.response !== undefined
    const params = encrypted ? await this.decrypt(session, body.response) : body
    checkResponseLimits(params)
    return { params, encrypted, channel }
  }

  /** The profile's verdict on the presentations, as the outcome the session records. */
  private async verify(
    session: SessionRecord,
    profile: Oid4vpProfile,
    presentations: PresentationResponse,
    channel: Channel,
    now: number,
  ): Promise<Outcome> {
    const { policy, request } = session
    const verdict = await profile.verify(presentations, session, {
      nonce: request.nonce,
      clientId: request.client_id,
      now,
      trustedIssuers: policy.trustedIssuers,
      trustAnchors: policy.trustAnchors ?? [],
      requireStatus: policy.requireStatus,
      status: this.deps.status,
      // Over the DC API the answer is bound to the origin (Appendix A.4, B.2.6.2), never to a response_uri.
      ...(channel.via === 'dc_api' ? { origin: channel.origin } : { responseUri: request.response_uri }),
      // direct_post.jwt: the session's ECDH-ES key, which a format's handover may bind (OpenID4VP 1.0 §8.3).
      ...(session.responseKey && { encryptionKeyThumbprint: jwkThumbprint(session.responseKey) }),
    })
    this.deps.metrics?.checks('verification', verdict.timings)
    const { validations, holder } = verdict
    if (validations.status !== 'SUCCESS') {
      const errors = validations.verificationResult.errors.join(' | ')
      return {
        event: 'reject',
        record: { validations, subject: holder, submissionFormat: '', submission: null },
        error: new OAuthError('invalid_presentation', `the presentation was rejected: ${errors}`),
      }
    }
    return {
      event: 'verify',
      record: {
        validations,
        subject: holder,
        submissionFormat: verdict.submissionFormat ?? profile.submissionFormat,
        submission: { ...presentations.mapping, holder, verifiableCredential: verdict.credentials },
      },
      claims: verdict.claims,
    }
  }

  /**
   * Records the outcome and its webhook event together (sessions.completeWithEvent: one statement on
   * PostgreSQL, issue 38; a transaction on SQLite), then announces it as `step`.
   */
  private async complete(session: SessionRecord, step: VerificationStep, claims?: Record<string, unknown>) {
    const validations = session.validations as Validations
    const webhook: WebhookBody = {
      id: session.id,
      subject: session.subject ?? '',
      status: validations.status,
      ...(claims && Object.keys(claims).length > 0 ? { payload: claims } : {}),
      verificationResult: validations.verificationResult,
    }
    const { store, clock } = this.deps
    const template = await store.templates.get(session.tenantId, session.templateId, 'verification')
    // Recorded or closed meanwhile: either way a later response must read the session as it now is.
    this.handedOut.forget(session.id)
    const type = session.status === 'VERIFIED' ? 'verification.verified' : 'verification.rejected'
    const event = template && this.deps.webhooks.eventFor(template, session.id, type, webhook)
    // Expiry is judged when the outcome is written, not when the checks began. No event is written unless
    // the session is.
    const { completed, event: written } = await store.sessions.completeWithEvent(session, clock.now(), event)
    if (written) this.deps.webhooks.written(written)
    if (!completed) {
      // Another response won the race, or the session expired meanwhile: answer what it is now.
      this.allow((await this.deps.store.sessions.get(session.id)) ?? session, 'verify')
      throw new OAuthError('session_closed', `verification session "${session.id}" changed meanwhile`)
    }
    this.deps.events.emit(sessionChanged(session, step, webhook))
  }
}

// Form fields whose value is JSON text: vp_token of the dcql profile (OpenID4VP 1.0 §8.1) and the PE
// presentation_submission (draft 20 §6.1).
const JSON_TEXT_FIELDS = new Set(['vp_token', 'presentation_submission'])

/**
 * The response's JSON within util/json-limits.ts: every parameter, the JSON text of vp_token and
 * presentation_submission, and the tokens they carry (the VP JWT, its credential JWTs, SD-JWT disclosures and
 * KB-JWTs), members counted over the whole response. Throws JsonLimitError (400 invalid_request).
 */
function checkResponseLimits(params: Record<string, unknown>) {
  const counted = { members: 0 }
  for (const [field, value] of Object.entries(params)) {
    checkCarriedJson(value, field, { jsonText: JSON_TEXT_FIELDS.has(field), counted })
  }
}

/** Validations of a response that failed one check before any presentation could be read. */
function single(
  check: 'walletResponse' | 'securityMechanisms' | 'sessionBinding',
  message: string,
): Validations {
  return {
    status: 'REJECT',
    checks: [{ check, result: 'failed', message }],
    verificationResult: { checks: [check], warnings: [], errors: [`${check}: ${message}`] },
  }
}

/**
 * How a response reached the verifier: posted by the wallet to the response_uri, or handed back through the
 * Digital Credentials API to the relying party's page at `origin` (OpenID4VP 1.0 Appendix A), which the
 * session expects among `origins`.
 */
type Channel = { via: 'direct_post' } | { via: 'dc_api'; origin: string; origins: readonly string[] }
const DIRECT_POST: Channel = { via: 'direct_post' }

/** The parameters a response carried, whether they came inside a JWE, and how they came. */
interface Received {
  params: Record<string, unknown>
  encrypted: boolean
  channel: Channel
}

type DcApiPolicy = NonNullable<SessionRecord['policy']['dcApi']>

/** The DC API policy of the session a DC API call names; none is a 404, like an unknown session. */
function dcApiOf(session: SessionRecord): DcApiPolicy {
  if (session.profile !== 'dcql' || session.policy.dcApi === undefined) {
    throw new OAuthError(
      'not_found',
      `verification session "${session.id}" offers no Digital Credentials API request (its template sets no dcql.dcApi)`,
    )
  }
  return session.policy.dcApi
}

/** What a response comes to: the lifecycle event it asks for and what the session records with it. */
interface Outcome {
  event: 'verify' | 'reject'
  record: Pick<SessionRecord, 'validations'> &
    Partial<Pick<SessionRecord, 'subject' | 'submission' | 'submissionFormat'>>
  /** The claims of a verified presentation (the webhook's payload). */
  claims?: Record<string, unknown>
  /** The wallet's answer once the outcome is recorded, when it is not the empty 200. */
  error?: OAuthError
}

/** What a wallet test's judge reads of a response, known only once it is read (and decrypted). */
function factsOf(params: Record<string, unknown>): ResponseFacts {
  return {
    vpToken: params.vp_token !== undefined && params.vp_token !== '',
    ...(params.error !== undefined && { walletError: text(params.error) }),
    ...(params.error_description !== undefined && {
      walletErrorDescription: clip(text(params.error_description)),
    }),
  }
}

/**
 * The response as its session reads it: the state first (it attributes the response), then a refusal by
 * the wallet, then the presentations in the profile's shape (its schema, oid4vp/responses.ts). Throws 400
 * invalid_request, the session left open, for what cannot be attributed or read. A wallet's refusal is an
 * outcome, and so is a vp_token that crossed the wire in the clear although the session asked for
 * direct_post.jwt (OpenID4VP 1.0 §8.3): the holder's data is already exposed, so the session is rejected.
 */
function parse(
  session: SessionRecord,
  { params, encrypted, channel }: Received,
  profile: Oid4vpProfile,
): { outcome: Outcome } | PresentationResponse {
  // Appendix A.2: state "is not defined for the DC API": such an answer is attributed by its session's URL.
  if (channel.via === 'direct_post' && params.state !== session.request.state) {
    throw new OAuthError(
      'invalid_request',
      params.state === undefined ? 'state is missing' : "state does not match this session's request",
    )
  }
  if (params.error !== undefined) {
    const description =
      params.error_description === undefined ? '' : `: ${clip(text(params.error_description))}`
    const message = `the wallet answered with error ${clip(text(params.error))}${description}`
    return { outcome: { event: 'reject', record: { validations: single('walletResponse', message) } } }
  }
  if (params.vp_token === undefined || params.vp_token === '') {
    throw new OAuthError('invalid_request', 'vp_token is missing (or send error for a refusal)')
  }
  if (session.request.response_mode === 'direct_post.jwt' && !encrypted) {
    const message =
      channel.via === 'dc_api'
        ? `the response is not encrypted: this session's DC API response_mode is dc_api.jwt, so vp_token must arrive inside the JWE in \`data.response\` (OpenID4VP 1.0 §8.3, Appendix A.2)`
        : `the response is not encrypted: this session's response_mode is direct_post.jwt, so vp_token must arrive inside the JWE in \`response\` (OpenID4VP 1.0 §8.3)`
    const validations = single('securityMechanisms', message)
    const error = new OAuthError('invalid_request', message)
    return { outcome: { event: 'reject', record: { validations }, error } }
  }
  // Appendix A.2, A.4: the answer belongs to the origins the request was made for; the page at any other
  // origin has already seen the holder's data, so the session is rejected rather than left open.
  if (channel.via === 'dc_api' && !channel.origins.includes(channel.origin)) {
    const message = `the answer came through the Digital Credentials API to origin ${clip(JSON.stringify(channel.origin))}, which is not one this session expects (${channel.origins.join(', ')}; OpenID4VP 1.0 Appendix A.2 expected_origins, A.4): the holder's data was exposed to another origin`
    return { outcome: { event: 'reject', record: { validations: single('sessionBinding', message) } } }
  }
  return profile.parseResponse(params)
}
