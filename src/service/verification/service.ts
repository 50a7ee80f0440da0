import { randomBytes, randomUUID } from 'node:crypto'
import { signJws } from '../../shared/jws.ts'
import type { Principal } from '../auth/tokens.ts'
import type { CheckMetrics } from '../credentials/pipeline.ts'
import type { StatusChecker } from '../credentials/status.ts'
import type { IssuerKeys } from '../crypto/issuer-keys.ts'
import { OAuthError } from '../errors/oauth.ts'
import { AppError } from '../errors/problem.ts'
import type { ServiceEvents, SessionChanged, WebhookBody } from '../events.ts'
import type { SessionRecord, Store, Validations } from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import type { WebhookOutbox } from '../webhooks/outbox.ts'
import { verifyResponse } from './checks.ts'
import { buildDefinition, difDefinition } from './definition.ts'

// Verification sessions (sections 2.7–2.9, 4.6, 4.7) and the wallet-facing OpenID4VP draft-20 verifier
// (direct_post, client_id scheme did, DIF Presentation Exchange). docs/verification.md is the contract.

export const REQUEST_OBJECT_TYP = 'oauth-authz-req+jwt'
export const SIOP_AUDIENCE = 'https://self-issued.me/v2'
const AUTH_REQUEST_SCHEME = 'openid-vp'
const SIGNING_ALGS = ['EdDSA', 'ES256', 'ES256K'] as const
const MAX_DESCRIPTION = 300

export interface VerificationDeps {
  store: Store
  clock: Clock
  urls: PublicUrls
  issuerKeys: IssuerKeys
  events: ServiceEvents
  webhooks: WebhookOutbox
  status: StatusChecker
  /** Told where the time of each response's checks went (the bench sets it); none by default. */
  metrics?: CheckMetrics
}

export type SessionState = 'PENDING' | 'VERIFIED' | 'REJECTED' | 'EXPIRED'

export function sessionState(session: SessionRecord, now: number): SessionState {
  return session.status === 'PENDING' && now >= session.expiresAt ? 'EXPIRED' : session.status
}

const b64 = (bytes: number) => randomBytes(bytes).toString('base64url')
const clip = (text: string) => (text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION)}…` : text)

export class VerificationService {
  constructor(private readonly deps: VerificationDeps) {}

  private emit(session: SessionRecord, step: SessionChanged['step'], webhook?: WebhookBody) {
    this.deps.events.emit({
      kind: 'verification',
      tenantId: session.tenantId,
      templateId: session.templateId,
      sessionId: session.id,
      status: session.status,
      step,
      at: session.updatedAt,
      ...(webhook ? { webhook } : {}),
    })
  }

  /** Section 4.6: open a session for verification template `ssiConfigId`. */
  async createSession(principal: Principal, ssiConfigId: string) {
    if (principal.template !== null && principal.template !== ssiConfigId) {
      throw new AppError(
        'template_not_allowed',
        `this token was issued for template "${principal.template}"; ssiConfigId "${ssiConfigId}" is not allowed`,
      )
    }
    const { store, clock, urls, issuerKeys } = this.deps
    const template = await store.templates.get(principal.tenantId, ssiConfigId, 'verification')
    if (!template) {
      throw new AppError('template_not_found', `no verification template "${ssiConfigId}" in this tenant`)
    }
    // Keys load before anything else: the default trust list is the tenant's own issuer DIDs.
    const verifier = await issuerKeys.forTenant(principal.tenantId, 'EdDSA')
    const keys = await Promise.all(SIGNING_ALGS.map((alg) => issuerKeys.forTenant(principal.tenantId, alg)))
    const trustedIssuers = template.body.trustedIssuers ?? keys.map((k) => k.did)
    const now = clock.now()
    const id = randomUUID()
    const nonce = b64(32)
    const state = b64(16)
    const definition = buildDefinition({
      sessionId: id,
      template: template.body,
      templateUpdatedAt: template.updatedAt,
      trustedIssuers,
      verifier,
      nonce,
      receiverUrl: urls.absolute(''),
      now,
    })
    const expiresAt = now + (template.body.sessionLifetimeSeconds ?? 600) * 1000
    const responseUri = urls.verifierResponse(principal.tenantId, id)
    const request = {
      iss: verifier.did,
      aud: SIOP_AUDIENCE,
      client_id: verifier.did,
      client_id_scheme: 'did',
      response_type: 'vp_token',
      response_mode: 'direct_post',
      response_uri: responseUri,
      scope: 'openid',
      nonce,
      state,
      presentation_definition: difDefinition(definition),
      iat: Math.floor(now / 1000),
      nbf: Math.floor(now / 1000),
      exp: Math.floor(expiresAt / 1000),
      jti: id,
    }
    const requestJwt = signJws(
      { alg: verifier.alg, typ: REQUEST_OBJECT_TYP, kid: verifier.kid },
      request,
      verifier.privateKey,
    )
    const session: SessionRecord = {
      id,
      tenantId: principal.tenantId,
      templateId: ssiConfigId,
      createdByKey: principal.keyId,
      status: 'PENDING',
      definition,
      request,
      requestJwt,
      policy: { trustedIssuers: [...trustedIssuers], requireStatus: template.body.requireStatus ?? true },
      createdAt: now,
      updatedAt: now,
      expiresAt,
      requestedAt: null,
      submission: null,
      submissionFormat: '',
      validations: null,
      subject: null,
      sourceWallet: null,
      callback: template.body.webhookUrl ?? null,
    }
    await store.sessions.create(session)
    this.emit(session, 'session_created')
    const link = new URLSearchParams({
      client_id: verifier.did,
      redirect_uri: responseUri,
      request_uri: urls.verifierRequest(principal.tenantId, id),
      response_mode: 'direct_post',
      response_type: 'vp_token',
      scope: 'openid',
    })
    return {
      authentication_request: `${AUTH_REQUEST_SCHEME}://?${link.toString().replaceAll('+', '%20')}`,
      presentation_definition: definition,
    }
  }

  /**
   * Section 4.7. Like issuance processes: another tenant's session is a 404 like an unknown id; one of
   * another template than the token's is a 403.
   */
  async getSession(principal: Principal, id: string): Promise<SessionRecord> {
    const session = await this.deps.store.sessions.get(id)
    if (!session || session.tenantId !== principal.tenantId) {
      throw new AppError('session_not_found', `no verification session "${id}"`)
    }
    if (principal.template !== null && principal.template !== session.templateId) {
      throw new AppError(
        'session_not_linked',
        `session "${id}" belongs to template "${session.templateId}", not to this token's template "${principal.template}"`,
      )
    }
    return session
  }

  /** A wallet-facing lookup: unknown, other tenant's, expired and closed sessions answer OAuth errors. */
  private async liveSession(tenantId: string, id: string): Promise<SessionRecord> {
    const session = await this.deps.store.sessions.get(id)
    if (!session || session.tenantId !== tenantId) {
      throw new OAuthError('not_found', `no verification session "${id}"`)
    }
    const state = sessionState(session, this.deps.clock.now())
    if (state === 'EXPIRED') {
      throw new OAuthError(
        'session_expired',
        `verification session "${id}" expired at ${isoTime(session.expiresAt)}`,
      )
    }
    if (state !== 'PENDING') {
      throw new OAuthError('session_closed', `verification session "${id}" is already ${state}`)
    }
    return session
  }

  /** The signed request object at request_uri; it may be fetched again while the session lives. */
  async requestObject(tenantId: string, id: string): Promise<string> {
    const session = await this.liveSession(tenantId, id)
    const now = this.deps.clock.now()
    if (await this.deps.store.sessions.markRequested(id, now)) {
      this.emit({ ...session, requestedAt: now, updatedAt: now }, 'request_retrieved')
    }
    return session.requestJwt
  }

  /**
   * The wallet's direct_post. A response that cannot be attributed (bad state, missing vp_token) is a
   * 400 that leaves the session open; a presentation that fails any check closes it as REJECTED.
   */
  async respond(
    tenantId: string,
    id: string,
    body: Record<string, unknown>,
    userAgent: string | undefined,
  ): Promise<Record<string, never>> {
    const session = await this.liveSession(tenantId, id)
    const { state } = session.request as { state: string }
    if (body.state !== state) {
      throw new OAuthError(
        'invalid_request',
        body.state === undefined ? 'state is missing' : "state does not match this session's request",
      )
    }
    const now = this.deps.clock.now()
    const base = { ...session, updatedAt: now, sourceWallet: userAgent ? clip(userAgent) : null }
    if (body.error !== undefined) {
      const error = String(body.error)
      const description =
        body.error_description === undefined ? '' : `: ${clip(String(body.error_description))}`
      const message = `the wallet answered with error ${clip(error)}${description}`
      const validations: Validations = {
        status: 'REJECT',
        checks: [{ check: 'walletResponse', result: 'failed', message }],
        verificationResult: {
          checks: ['walletResponse'],
          warnings: [],
          errors: [`walletResponse: ${message}`],
        },
      }
      await this.complete({ ...base, status: 'REJECTED', validations })
      return {}
    }
    if (typeof body.vp_token !== 'string' || body.vp_token.length === 0) {
      throw new OAuthError('invalid_request', 'vp_token is missing (or send error for a refusal)')
    }
    // Draft 20 requires the submission with a vp_token: without it the answer cannot be read, like a missing vp_token.
    let submission: unknown
    try {
      submission =
        typeof body.presentation_submission === 'string'
          ? JSON.parse(body.presentation_submission)
          : undefined
    } catch {
      throw new OAuthError('invalid_request', 'presentation_submission is not valid JSON')
    }
    if (typeof submission !== 'object' || submission === null || Array.isArray(submission)) {
      throw new OAuthError('invalid_request', 'presentation_submission is missing or not a JSON object')
    }
    const verdict = await verifyResponse(body.vp_token, submission, {
      definition: session.request.presentation_definition as Record<string, unknown>,
      nonce: (session.request as { nonce: string }).nonce,
      clientId: (session.request as { client_id: string }).client_id,
      now,
      trustedIssuers: session.policy.trustedIssuers,
      requireStatus: session.policy.requireStatus,
      status: this.deps.status,
    })
    this.deps.metrics?.checks('verification', verdict.timings)
    const verified = verdict.validations.status === 'SUCCESS'
    await this.complete(
      {
        ...base,
        status: verified ? 'VERIFIED' : 'REJECTED',
        validations: verdict.validations,
        subject: verdict.holder,
        submissionFormat: verified ? 'jwt_vp' : '',
        submission: verified
          ? {
              ...(submission as Record<string, unknown>),
              holder: verdict.holder,
              verifiableCredential: verdict.credentials,
            }
          : null,
      },
      verified ? verdict.claims : undefined,
    )
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
    const { store } = this.deps
    const template = await store.templates.get(session.tenantId, session.templateId, 'verification')
    const completed = await store.transaction(async (repos) => {
      // Expiry is judged when the outcome is written, not when the checks began.
      if (!(await repos.sessions.complete(session, this.deps.clock.now()))) return false
      if (template) {
        const type = session.status === 'VERIFIED' ? 'verification.verified' : 'verification.rejected'
        await this.deps.webhooks.enqueueIn(repos, template, session.id, type, webhook)
      }
      return true
    })
    if (!completed) {
      // Another response won the race, or the session expired meanwhile: answer what it is now.
      await this.liveSession(session.tenantId, session.id)
      throw new OAuthError('session_closed', `verification session "${session.id}" changed meanwhile`)
    }
    this.emit(session, session.status === 'VERIFIED' ? 'verified' : 'rejected', webhook)
  }
}

/** Section 2.9, plus `Status`; the HTTP status is 202 while the session waits and 200 once it is final. */
export function sessionView(session: SessionRecord, now: number) {
  const state = sessionState(session, now)
  const { definition } = session
  return {
    httpStatus: state === 'PENDING' ? 202 : 200,
    body: {
      Id: session.id,
      Status: state,
      PresentationSubmission: session.submission,
      PresentationSubmissionFormat: session.submissionFormat,
      Validations: session.validations,
      PresentationDefinition: definition,
      AuthRequest: {
        ...session.request,
        redirect_uri: session.request.response_uri,
        name: definition.name,
        id: definition.id,
        format: definition.format,
        submission_requirements: definition.submission_requirements,
        input_descriptors: definition.input_descriptors,
        proof: definition.proof,
      },
      RequestedAt: session.requestedAt === null ? null : isoTime(session.requestedAt),
      CreatedAt: isoTime(session.createdAt),
      UpdatedAt: isoTime(session.updatedAt),
      ExpiredAt: isoTime(session.expiresAt),
      DeletedAt: null,
      SourceWallet: session.sourceWallet ?? '',
      Callback: session.callback ?? '',
      Subject: session.subject ?? '',
    },
  }
}
