import type { SessionState, VerificationStep } from '../../shared/flow.ts'
import type { SessionChanged, WebhookBody } from '../events.ts'
import type { SessionRecord, SessionStatus } from '../store/index.ts'
import { isoTime } from '../util/clock.ts'

// The life of a verification session, as one pure function (like issuance/lifecycle.ts):
//
//   PENDING ──retrieve_request──► PENDING (request_retrieved; again while it lives, announced once)
//   PENDING ──verify──► VERIFIED      PENDING ──reject──► REJECTED (failed checks or a wallet error)
//   PENDING past expiresAt: EXPIRED (section 2.9 `Status`), judged on the clock, never written

export type SessionEvent = 'retrieve_request' | 'verify' | 'reject'
export type SessionRefusal = 'expired' | 'closed'

export type SessionOutcome =
  | { ok: true; status: SessionStatus; step: VerificationStep }
  | { ok: false; refusal: SessionRefusal; message: string }

/**
 * The one judgement of "PENDING and unexpired": every step (transition), the held sessions of
 * oid4vp/handed-out.ts and the relying party's view ask it. The store's conditional writes hold the same
 * rule in their WHERE (the sessions repository) and, when they write nothing, the row is judged here.
 */
export function sessionState(session: SessionRecord, now: number): SessionState {
  return session.status === 'PENDING' && now >= session.expiresAt ? 'EXPIRED' : session.status
}

export function transition(session: SessionRecord, event: SessionEvent, now: number): SessionOutcome {
  const state = sessionState(session, now)
  if (state === 'EXPIRED') {
    return {
      ok: false,
      refusal: 'expired',
      message: `verification session "${session.id}" expired at ${isoTime(session.expiresAt)}`,
    }
  }
  if (state !== 'PENDING') {
    return {
      ok: false,
      refusal: 'closed',
      message: `verification session "${session.id}" is already ${state}`,
    }
  }
  switch (event) {
    case 'retrieve_request':
      return { ok: true, status: 'PENDING', step: 'request_retrieved' }
    case 'verify':
      return { ok: true, status: 'VERIFIED', step: 'verified' }
    case 'reject':
      return { ok: true, status: 'REJECTED', step: 'rejected' }
  }
}

/** The state-changed event of a committed step; `webhook` rides along on the final ones. */
export function sessionChanged(
  session: SessionRecord,
  step: VerificationStep,
  webhook?: WebhookBody,
): SessionChanged {
  return {
    kind: 'verification',
    tenantId: session.tenantId,
    templateId: session.templateId,
    sessionId: session.id,
    status: session.status,
    step,
    at: session.updatedAt,
    ...(webhook ? { webhook } : {}),
  }
}
