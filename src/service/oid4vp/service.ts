import { createPrivateKey } from 'node:crypto'
import type { VerificationStep } from '../../shared/flow.ts'
import { isObject } from '../../shared/json.ts'
import { lazyImport } from '../../shared/lazy.ts'
import type { CheckMetrics } from '../credentials/pipeline.ts'
import type { StatusChecker } from '../credentials/status.ts'
import { OAuthError } from '../errors/oauth.ts'
import type { ServiceEvents, WebhookBody } from '../events.ts'
import type { Exchange, FaultRegistry } from '../faults/index.ts'
import type { SessionRecord, Store, Validations } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import { checkCarriedJson } from '../util/json-limits.ts'
import { type Verdict, verifyDcqlResponse, verifyResponse } from '../verification/checks.ts'
import { sessionChanged, transition } from '../verification/lifecycle.ts'
import type { AuthorizationRequests } from '../verification/service.ts'
import type { WebhookOutbox } from '../webhooks/outbox.ts'
import { HandedOutSessions } from './handed-out.ts'
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
  /** The request builders of each profile (request_uri_method=post signs the request object anew). */
  requests: Record<SessionRecord['profile'], AuthorizationRequests>
  /** Told where the time of each response's checks went (the bench sets it); none by default. */
  metrics?: CheckMetrics
  /** Wallet test plans only: told the nonce of every verified answer (for the nonce-reused fault). */
  faults?: FaultRegistry
}

/** What a response carried that a wallet test's judge needs, known only once it is read (and decrypted). */
export type ResponseFacts = Pick<Exchange, 'vpToken' | 'walletError' | 'walletErrorDescription'>

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
    const builder = this.deps.requests[session.profile]
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
        'response must be a compact JWE (response_mode direct_post.jwt)',
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
   * The wallet's direct_post (or direct_post.jwt). A response that cannot be attributed (bad state, missing
   * vp_token, a JWE that does not decrypt) is a 400 that leaves the session open; a presentation that fails
   * any check closes it as REJECTED.
   */
  async respond(
    tenantId: string,
    id: string,
    body: Record<string, unknown>,
    userAgent: string | undefined,
    /** Wallet test plans: told what the response carried, also when it is refused below. */
    observe?: (facts: ResponseFacts) => void,
  ): Promise<Record<string, never>> {
    const session =
      this.handedOut.recall(tenantId, id, this.deps.clock.now()) ?? (await this.session(tenantId, id))
    this.allow(session, 'verify')
    const encryptedMode = session.request.response_mode === 'direct_post.jwt'
    const encrypted = encryptedMode && body.response !== undefined
    const params = encrypted ? await this.decrypt(session, body.response) : body
    // Before anything reads or writes: a response beyond the JSON limits is a 400 that leaves the session open.
    checkResponseLimits(params)
    observe?.({
      vpToken: params.vp_token !== undefined && params.vp_token !== '',
      ...(params.error !== undefined && { walletError: text(params.error) }),
      ...(params.error_description !== undefined && {
        walletErrorDescription: clip(text(params.error_description)),
      }),
    })
    const { state, nonce, client_id: clientId } = session.request
    if (params.state !== state) {
      throw new OAuthError(
        'invalid_request',
        params.state === undefined ? 'state is missing' : "state does not match this session's request",
      )
    }
    const now = this.deps.clock.now()
    const base = { ...session, updatedAt: now, sourceWallet: userAgent ? clip(userAgent) : null }
    if (params.error !== undefined) {
      const error = text(params.error)
      const description =
        params.error_description === undefined ? '' : `: ${clip(text(params.error_description))}`
      const message = `the wallet answered with error ${clip(error)}${description}`
      await this.complete({ ...base, status: 'REJECTED', validations: single('walletResponse', message) })
      return {}
    }
    if (params.vp_token === undefined || params.vp_token === '') {
      throw new OAuthError('invalid_request', 'vp_token is missing (or send error for a refusal)')
    }
    if (encryptedMode && !encrypted) {
      // The holder's data crossed the wire in the clear although this verifier asked for encryption.
      const message = `the response is not encrypted: this session's response_mode is direct_post.jwt, so vp_token must arrive inside the JWE in \`response\` (OpenID4VP 1.0 §8.3)`
      await this.complete({ ...base, status: 'REJECTED', validations: single('securityMechanisms', message) })
      throw new OAuthError('invalid_request', message)
    }
    const context = {
      nonce,
      clientId,
      now,
      trustedIssuers: session.policy.trustedIssuers,
      trustAnchors: session.policy.trustAnchors ?? [],
      requireStatus: session.policy.requireStatus,
      status: this.deps.status,
    }
    let verdict: Verdict
    let mapping: Record<string, unknown>
    if (session.profile === 'dcql') {
      const vpToken = dcqlVpToken(params.vp_token)
      verdict = await verifyDcqlResponse(vpToken, {
        ...context,
        dcqlQuery: session.request.dcql_query as Record<string, unknown>,
      })
      mapping = { credential_query_ids: Object.keys(vpToken) }
    } else {
      if (typeof params.vp_token !== 'string') {
        throw new OAuthError('invalid_request', 'vp_token must be the JWT of the presentation')
      }
      mapping = peSubmission(params.presentation_submission)
      verdict = await verifyResponse(params.vp_token, mapping, {
        ...context,
        definition: session.request.presentation_definition as Record<string, unknown>,
      })
    }
    this.deps.metrics?.checks('verification', verdict.timings)
    const verified = verdict.validations.status === 'SUCCESS'
    await this.complete(
      {
        ...base,
        status: verified ? 'VERIFIED' : 'REJECTED',
        validations: verdict.validations,
        subject: verdict.holder,
        submissionFormat: verified ? (session.profile === 'dcql' ? 'dcql' : 'jwt_vp') : '',
        submission: verified
          ? { ...mapping, holder: verdict.holder, verifiableCredential: verdict.credentials }
          : null,
      },
      verified ? verdict.claims : undefined,
    )
    // A wallet answered this nonce: the nonce-reused fault of a later session offers it again.
    if (verified && this.deps.faults) this.deps.faults.lastAnsweredNonce = nonce
    if (!verified) {
      throw new OAuthError(
        'invalid_presentation',
        `the presentation was rejected: ${verdict.validations.verificationResult.errors.join(' | ')}`,
      )
    }
    return {}
  }

  /** Records the outcome and its webhook event in one transaction, then announces it. */
  private async complete(session: SessionRecord, claims?: Record<string, unknown>) {
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
    const completed = await store.transaction(async (repos) => {
      // Expiry is judged when the outcome is written, not when the checks began.
      if (!(await repos.sessions.complete(session, clock.now()))) return false
      if (template) {
        const type = session.status === 'VERIFIED' ? 'verification.verified' : 'verification.rejected'
        await this.deps.webhooks.enqueueIn(repos, template, session.id, type, webhook)
      }
      return true
    })
    if (!completed) {
      // Another response won the race, or the session expired meanwhile: answer what it is now.
      this.allow((await this.deps.store.sessions.get(session.id)) ?? session, 'verify')
      throw new OAuthError('session_closed', `verification session "${session.id}" changed meanwhile`)
    }
    this.deps.events.emit(
      sessionChanged(session, session.status === 'VERIFIED' ? 'verified' : 'rejected', webhook),
    )
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
function single(check: 'walletResponse' | 'securityMechanisms', message: string): Validations {
  return {
    status: 'REJECT',
    checks: [{ check, result: 'failed', message }],
    verificationResult: { checks: [check], warnings: [], errors: [`${check}: ${message}`] },
  }
}

/** Draft 20 requires the submission with a vp_token: without it the answer cannot be read. */
function peSubmission(text: unknown): Record<string, unknown> {
  let submission: unknown
  try {
    submission = typeof text === 'string' ? JSON.parse(text) : undefined
  } catch {
    throw new OAuthError('invalid_request', 'presentation_submission is not valid JSON')
  }
  if (!isObject(submission)) {
    throw new OAuthError('invalid_request', 'presentation_submission is missing or not a JSON object')
  }
  checkDescriptorTypes(submission)
  return submission
}

/**
 * DIF Presentation Exchange v2, Presentation Submission: each descriptor_map entry, and each `path_nested`
 * in it, names its `id`, `format` and `path` as strings. Another type is a malformed message (400, the
 * session stays open), not a mapping to judge: the mapping check reads them as text, and String() of an
 * object with a non-callable `toString` member throws.
 */
function checkDescriptorTypes(submission: Record<string, unknown>) {
  const map = submission.descriptor_map
  if (!Array.isArray(map)) return
  for (const [i, entry] of map.entries()) {
    let node: unknown = entry
    let at = `presentation_submission.descriptor_map[${i}]`
    // Iterative: path_nested may nest as deep as the JSON limits let it.
    while (isObject(node)) {
      for (const member of ['id', 'format', 'path'] as const) {
        if (node[member] !== undefined && typeof node[member] !== 'string') {
          throw new OAuthError('invalid_request', `${at}.${member} must be a string`)
        }
      }
      node = node.path_nested
      at = `${at}.path_nested`
    }
  }
}

/** OpenID4VP 1.0 §8.1: a JSON object keyed by credential query id (JSON text in a direct_post form). */
function dcqlVpToken(value: unknown): Record<string, unknown> {
  let token = value
  if (typeof value === 'string') {
    try {
      token = JSON.parse(value)
    } catch {
      token = undefined
    }
  }
  if (!isObject(token) || Object.keys(token).length === 0) {
    throw new OAuthError(
      'invalid_request',
      'vp_token must be a JSON object keyed by the credential query ids of the dcql_query (OpenID4VP 1.0 §8.1)',
    )
  }
  return token
}
