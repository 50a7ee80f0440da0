// What the demo relying-party backend (src/demo/) and the <vc-flow-qr> component (vc-flow-qr.ts) say to each
// other, and how a service state becomes a page state. Pure code: the component's bundle, the backend and the
// node tests all import it. docs/qr-page.md is the contract.

import { type FlowState, type FlowStep, isFlowStep, SCANNED_STEPS } from '../shared/flow.ts'

export type FlowKind = 'issuance' | 'verification'
export const FLOW_KINDS: readonly FlowKind[] = ['issuance', 'verification']

/** The service's status of a process or session, EXPIRED included (as its event streams say it). */
export type ServiceStatus = FlowState

/** One state of a flow: a message of the service's event stream, or what the backend's polling reads back. */
export interface FlowStatus {
  kind: FlowKind
  id: string
  status: ServiceStatus
  /**
   * snapshot (the stream's first message, or a poll that saw nothing finer), then offer_retrieved,
   * holder_bound, submitted, issued, rejected, credential_retrieved (issuance), request_retrieved, verified,
   * rejected (verification), expired.
   */
  step: FlowStep
  /** ISO 8601 time of the change. */
  at: string
}

/** POST <api>/<kind>: the flow the backend opened. */
export interface FlowCreated {
  kind: FlowKind
  id: string
  /** The deep link: openid-credential-offer://… or openid-vp://…, what the QR code carries. */
  link: string
  template: string
  credentialTypes: string[]
  /** ISO 8601: the offer's pre-authorized code or the session lapses then. */
  expiresAt: string
  /** Issuance templates with a transaction code: the code the wallet asks for. */
  txCode?: string
}

/** A message of the WebSocket relay (GET <api>/<kind>/<id>/socket), JSON text. */
export type SocketMessage = ({ type: 'state' } & FlowStatus) | { type: 'error'; message: string }

/** The component's `state` attribute. */
export type PageState =
  | 'loading'
  | 'waiting'
  | 'scanned'
  | 'issued'
  | 'verified'
  | 'rejected'
  | 'expired'
  | 'error'

export const FINAL_PAGE_STATES: readonly PageState[] = ['issued', 'verified', 'rejected', 'expired', 'error']

export { SCANNED_STEPS }

export function isFinal(state: PageState): boolean {
  return FINAL_PAGE_STATES.includes(state)
}

/**
 * The page state a service state brings. A PENDING flow is `scanned` once the wallet fetched or bound
 * anything, and stays so (a later `submitted`, or a snapshot after a reconnect, does not go back to waiting).
 */
export function pageState(status: ServiceStatus, step: FlowStep, previous: PageState): PageState {
  switch (status) {
    case 'ISSUED':
      return 'issued'
    case 'VERIFIED':
      return 'verified'
    case 'REJECTED':
      return 'rejected'
    case 'EXPIRED':
      return 'expired'
    default:
      return SCANNED_STEPS.includes(step) || previous === 'scanned' ? 'scanned' : 'waiting'
  }
}

const SERVICE_STATUSES: readonly string[] = ['PENDING', 'ISSUED', 'REJECTED', 'VERIFIED', 'EXPIRED']

/** A FlowStatus from untrusted JSON (a socket message or a poll answer), or undefined. */
export function asFlowStatus(value: unknown): FlowStatus | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const v = value as Record<string, unknown>
  if (v.kind !== 'issuance' && v.kind !== 'verification') return undefined
  if (typeof v.id !== 'string' || !isFlowStep(v.step) || typeof v.at !== 'string') return undefined
  if (typeof v.status !== 'string' || !SERVICE_STATUSES.includes(v.status)) return undefined
  return { kind: v.kind, id: v.id, status: v.status as ServiceStatus, step: v.step, at: v.at }
}

/** Deep links the component puts in a link: a URI scheme other than script-capable ones. */
export function isSafeDeepLink(link: string): boolean {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(link)?.[1]?.toLowerCase()
  return scheme !== undefined && !['javascript', 'data', 'vbscript', 'blob', 'file'].includes(scheme)
}
