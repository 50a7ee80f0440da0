import type { CheckMetrics } from '../credentials/pipeline.ts'
import type { StatusChecker } from '../credentials/status.ts'
import { OAuthError } from '../errors/oauth.ts'
import type { ServiceEvents, WebhookBody } from '../events.ts'
import type { SessionRecord, Store, Validations } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import { verifyResponse } from '../verification/checks.ts'
import { sessionChanged, transition } from '../verification/lifecycle.ts'
import type { WebhookOutbox } from '../webhooks/outbox.ts'

// The wallet-facing verifier (OpenID4VP draft 20 as section 2.7 shows it; docs/verification.md): serves the
// signed request object and takes the direct_post response. OAuth-style errors only. Each step asks the
// session lifecycle (verification/lifecycle.ts), writes conditionally, then announces.

const MAX_DESCRIPTION = 300
const clip = (text: string) => (text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION)}…` : text)

export interface Oid4vpDeps {
  store: Store
  clock: Clock
  events: ServiceEvents
  webhooks: WebhookOutbox
  status: StatusChecker
  /** Told where the time of each response's checks went (the bench sets it); none by default. */
  metrics?: CheckMetrics
}

export class Oid4vpService {
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
  private allow(session: SessionRecord, event: 'retrieve_request' | 'verify' | 'reject') {
    const outcome = transition(session, event, this.deps.clock.now())
    if (outcome.ok) return outcome
    throw new OAuthError(
      outcome.refusal === 'expired' ? 'session_expired' : 'session_closed',
      outcome.message,
    )
  }

  /** The signed request object at request_uri; it may be fetched again while the session lives. */
  async requestObject(tenantId: string, id: string): Promise<string> {
    const session = await this.session(tenantId, id)
    const { step } = this.allow(session, 'retrieve_request')
    const now = this.deps.clock.now()
    // Written (and announced) the first time only: the relying party's RequestedAt is that moment.
    if (await this.deps.store.sessions.markRequested(id, now)) {
      this.deps.events.emit(sessionChanged({ ...session, requestedAt: now, updatedAt: now }, step))
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
    const session = await this.session(tenantId, id)
    this.allow(session, 'verify')
    const { state, nonce, client_id: clientId, presentation_definition: definition } = session.request
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
      definition,
      nonce,
      clientId,
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
              ...submission,
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
    const { store, clock } = this.deps
    const template = await store.templates.get(session.tenantId, session.templateId, 'verification')
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
