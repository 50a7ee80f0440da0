import type { IssuanceStep, ProcessState } from '../../shared/flow.ts'
import type { ProcessChanged } from '../events.ts'
import type { GrantRecord, ProcessRecord, ProcessStatus } from '../store/index.ts'

// The life of an issuance process, as one pure function: every service that changes a process asks
// `transition` first, writes the answer conditionally (the row must not have changed since it was read),
// then announces the step. Relying-party routes and wallet-facing routes map a refusal onto their own error
// family (problem+json codes, OAuth codes); the rules are written once, here.
//
//   PENDING ──submit (no holder yet)──────────────► PENDING (submitted)
//   PENDING ──request_credential (no content yet)─► PENDING (holder_bound)
//   PENDING ──submit / request_credential, when the other one already happened──► ISSUED (issued)
//   PENDING ──reject──► REJECTED
//   ISSUED  ──retrieve_credential──► ISSUED (credential_retrieved);  ──change_status──► ISSUED
//   ISSUED  ──request_credential again on the same access token──► ISSUED (credential_retrieved): a further
//           instance (OpenID4VCI 1.0 §14.3); the process is not issued again. While PENDING, such a
//           further request waits like the first one (refusal `pending`).
//   PENDING, offer unredeemed past its code's lifetime: observed as EXPIRED (the wallet can no longer start)

/** What can happen to a process, and who makes it happen. */
export type ProcessEvent =
  /** The wallet fetched the offer (OpenID4VCI §4.1.3). */
  | 'retrieve_offer'
  /**
   * The wallet's credential request with a verified key proof: binds the holder, issues if content waits.
   * With a holder already bound it is a further request on the same access token (OpenID4VCI 1.0 §14.3).
   */
  | 'request_credential'
  /** The relying party's credentials (section 4.4). */
  | 'submit'
  /** An administrator closes the process. */
  | 'reject'
  /** The wallet's deferred request (OpenID4VCI §9). */
  | 'retrieve_credential'
  /** Revoke, suspend or reinstate the issued credentials. */
  | 'change_status'

/** Why an event is refused; each API names it in its own error family (see `problemCodeOf`, oid4vci). */
export type ProcessRefusal =
  | 'expired'
  | 'not_pending'
  | 'rejected'
  | 'already_submitted'
  | 'pending'
  | 'not_issued'

export type ProcessOutcome =
  | { ok: true; status: ProcessStatus; step: IssuanceStep | null }
  | { ok: false; refusal: ProcessRefusal; message: string }

/** The facts a transition reads: the process row and, when it exists, its OpenID4VCI grant. */
export type GrantFacts = Pick<GrantRecord, 'codeState' | 'codeExpiresAt' | 'holderDid'>

/** The state as a stream or a page sees it at `now`: EXPIRED once the offer lapsed unredeemed. */
export function processState(
  process: ProcessRecord,
  grant: GrantFacts | null | undefined,
  now: number,
): ProcessState {
  if (process.status === 'PENDING' && grant?.codeState === 'live' && now >= grant.codeExpiresAt) {
    return 'EXPIRED'
  }
  return process.status
}

const refuse = (refusal: ProcessRefusal, message: string): ProcessOutcome => ({ ok: false, refusal, message })
const move = (status: ProcessStatus, step: IssuanceStep | null): ProcessOutcome => ({
  ok: true,
  status,
  step,
})

/** The next status and step of `process` when `event` happens at `now`, or why it may not. */
export function transition(
  process: ProcessRecord,
  grant: GrantFacts | null | undefined,
  event: ProcessEvent,
  now: number,
): ProcessOutcome {
  const { id, status } = process
  const closed = () =>
    refuse(status === 'REJECTED' ? 'rejected' : 'not_pending', `process "${id}" is ${status}`)
  switch (event) {
    case 'retrieve_offer':
      if (status !== 'PENDING') return closed()
      if (processState(process, grant, now) === 'EXPIRED') {
        return refuse('expired', `the offer of process "${id}" expired unredeemed`)
      }
      // A redeemed code past its lifetime is dead too: the offer hands out a bearer code no one may use.
      if (grant && now >= grant.codeExpiresAt) {
        return refuse('expired', `the pre-authorized code of process "${id}" expired`)
      }
      return move('PENDING', 'offer_retrieved')
    case 'request_credential':
      // A holder bound already: the access token asks again (1.0 §14.3). Once ISSUED the wallet gets a further
      // instance and the process stays as it is; before, the first request's transaction is still open.
      if (grant?.holderDid) {
        if (status === 'ISSUED') return move('ISSUED', 'credential_retrieved')
        if (status === 'PENDING')
          return refuse('pending', `the credential of process "${id}" is not issued yet`)
        return closed()
      }
      if (status !== 'PENDING') return closed()
      return process.submitted !== null ? move('ISSUED', 'issued') : move('PENDING', 'holder_bound')
    case 'submit':
      if (status === 'ISSUED' || process.submitted !== null) {
        return refuse('already_submitted', `credentials were already submitted to process "${id}"`)
      }
      // The relying party knows three statuses (section 2.2): an offer that lapsed unredeemed is still PENDING
      // to it, and content may still be submitted (a new offer is the way to reach the wallet again).
      if (status !== 'PENDING')
        return refuse('not_pending', `process "${id}" is ${status}; only PENDING processes change`)
      return grant?.holderDid ? move('ISSUED', 'issued') : move('PENDING', 'submitted')
    case 'reject':
      return status === 'PENDING'
        ? move('REJECTED', 'rejected')
        : refuse('not_pending', `process "${id}" is ${status}; only PENDING processes can be rejected`)
    case 'retrieve_credential':
      if (status === 'PENDING')
        return refuse('pending', `the credential of process "${id}" is not issued yet`)
      return status === 'ISSUED' ? move('ISSUED', 'credential_retrieved') : closed()
    case 'change_status':
      return status === 'ISSUED'
        ? move('ISSUED', null)
        : refuse('not_issued', `process "${id}" is ${status}; only ISSUED credentials have a status`)
  }
}

/** The state-changed event of a committed step (webhooks, streams, the QR page and tests listen). */
export function processChanged(process: ProcessRecord, step: IssuanceStep): ProcessChanged {
  return {
    kind: 'issuance',
    tenantId: process.tenantId,
    templateId: process.templateId,
    processId: process.id,
    status: process.status,
    step,
    at: process.updatedAt,
  }
}

/** The next `updatedAt`: strictly increasing, so a conditional update always sees a change. */
export const nextStamp = (process: ProcessRecord, now: number) => Math.max(now, process.updatedAt + 1)
