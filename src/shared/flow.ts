// The vocabulary of a flow's life, written once: the service's state-changed events, its event streams, the
// <vc-flow-qr> component, the demo relying party, the sandbox and the conformance steps all import it.
// Pure data, no imports: the browser bundle takes it as it is.

/** What happens to an issuance process, finer than its status (docs/api.md, Event streams). */
export const ISSUANCE_STEPS = [
  'offer_created',
  'offer_retrieved',
  'holder_bound',
  'submitted',
  'issued',
  'rejected',
  'credential_retrieved',
] as const
export type IssuanceStep = (typeof ISSUANCE_STEPS)[number]

/** What happens to a verification session. */
export const VERIFICATION_STEPS = ['session_created', 'request_retrieved', 'verified', 'rejected'] as const
export type VerificationStep = (typeof VERIFICATION_STEPS)[number]

/**
 * Steps no stored event has: a stream's first message (`snapshot`), the clock passing a deadline (`expired`),
 * and a QR page's own state before the service said anything (`created`).
 */
export const OBSERVED_STEPS = ['snapshot', 'expired', 'created'] as const
export type FlowStep = IssuanceStep | VerificationStep | (typeof OBSERVED_STEPS)[number]
export const FLOW_STEPS: readonly FlowStep[] = [...ISSUANCE_STEPS, ...VERIFICATION_STEPS, ...OBSERVED_STEPS]
export const isFlowStep = (value: unknown): value is FlowStep => FLOW_STEPS.includes(value as FlowStep)

/** Stored statuses (section 2.2 for processes; 2.9 for sessions, whose EXPIRED is judged on the clock). */
export const PROCESS_STATUSES = ['PENDING', 'ISSUED', 'REJECTED'] as const
export type ProcessStatus = (typeof PROCESS_STATUSES)[number]
export const SESSION_STATUSES = ['PENDING', 'VERIFIED', 'REJECTED'] as const
export type SessionStatus = (typeof SESSION_STATUSES)[number]

/**
 * A flow's state as observed at a moment: the stored status, or EXPIRED once an offer lapsed unredeemed or a
 * session passed its deadline while PENDING.
 */
export type ProcessState = ProcessStatus | 'EXPIRED'
export type SessionState = SessionStatus | 'EXPIRED'
export type FlowState = ProcessState | SessionState

/** States after which nothing changes any more: streams end, pages stop waiting. */
export const FINAL_STATES: readonly FlowState[] = ['ISSUED', 'REJECTED', 'VERIFIED', 'EXPIRED']

/** Steps that show the wallet has the link: it fetched the offer or request, or bound its key. */
export const SCANNED_STEPS: readonly FlowStep[] = ['offer_retrieved', 'holder_bound', 'request_retrieved']
