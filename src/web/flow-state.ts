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
  /** A final verification (VERIFIED or REJECTED): what the page shows of the outcome. */
  outcome?: FlowOutcome
}

/**
 * What the page shows of a finished verification, from 4.7: the checks that failed (REJECTED) or what the
 * wallet shared (VERIFIED). Text only, bounded, with anything shaped like a JWT cut (outcomeOf in
 * src/demo/backend.ts builds it; asOutcome reads it back from untrusted JSON).
 */
export interface FlowOutcome {
  /** REJECTED: each check whose result is `failed`, with its name and message (`Validations.checks`). */
  failedChecks?: { check: string; message: string }[]
  /** VERIFIED: per shared credential, its type, issuer and claims as dotted paths (`credentialSubject`, no id). */
  shared?: SharedCredential[]
}

export interface SharedCredential {
  /** The last element of its `type` (an SD-JWT VC's `vct`). */
  type: string
  issuer: string
  claims: { path: string; value: string }[]
}

/**
 * The protocol profile of a verification session: `pe` (OpenID4VP draft 20 with Presentation Exchange, the
 * profile of docs/interface.md) or `dcql` (OpenID4VP 1.0 Final with a DCQL query).
 */
export type VerificationProfile = 'pe' | 'dcql'

export const PROFILE_NAMES: Record<VerificationProfile, string> = {
  pe: 'OpenID4VP draft 20, Presentation Exchange',
  dcql: 'OpenID4VP 1.0, DCQL',
}

/** One thing a verification request asks for: an input descriptor (pe) or a credential query (dcql). */
export interface RequestedCredential {
  /** The input descriptor id or the credential query id (what the wallet's answer names). */
  id: string
  /** The formats it may come in: the descriptor's (else the definition's) format names, or the query's format. */
  formats: string[]
  /** The credential types asked for: the descriptor's type, DCQL `meta.vct_values`, `meta.doctype_value` (mdoc), or each `meta.type_values`' last element. */
  types: string[]
  /** Claims asked for, as dotted paths: `credentialSubject.…` (pe, jwt_vc_json), the SD-JWT VC claim (dc+sd-jwt), or `<namespace>.<element>` (mso_mdoc). */
  claims: string[]
}

/** POST <api>/<kind>: the flow the backend opened. */
export interface FlowCreated {
  kind: FlowKind
  id: string
  /** The deep link: openid-credential-offer://…, openid-vp://… (pe) or openid4vp://… (dcql), what the QR code carries. */
  link: string
  template: string
  credentialTypes: string[]
  /** ISO 8601: the offer's pre-authorized code or the session lapses then. */
  expiresAt: string
  /** Issuance templates with a transaction code: the code the wallet asks for. */
  txCode?: string
  /** Verification: the session's profile. */
  profile?: VerificationProfile
  /** Verification: what the request asks for, in the request's own order. */
  requested?: RequestedCredential[]
  /**
   * Verification: the session can also be answered through the browser's Digital Credentials API (OpenID4VP
   * 1.0 Appendix A), by a wallet on this device. The request itself is fetched when the user asks for it
   * (GET <api>/verification/<id>/dc-api), the answer posted back there.
   */
  dcApi?: DcApiOffer
}

// --- The Digital Credentials API (OpenID4VP 1.0 Appendix A) ----------------------------------------------

/**
 * Appendix A.1's exchange protocol identifiers, the ones this page can hand to the browser. The same three as
 * `DC_API_PROTOCOLS` in src/shared/dc-api.ts (which the browser bundle cannot import: it signs with node:crypto);
 * test/web/flow-state.test.ts holds them equal.
 */
export const DC_API_PROTOCOL_NAMES = [
  'openid4vp-v1-unsigned',
  'openid4vp-v1-signed',
  'openid4vp-v1-multisigned',
] as const
export type DcApiProtocolName = (typeof DC_API_PROTOCOL_NAMES)[number]

/** What the page learns of a session's DC API request before the user asks for it: no URL, no key. */
export interface DcApiOffer {
  /** The exchange protocol of the request entry (unsigned, signed or multi-signed). */
  protocol: DcApiProtocolName
  /** The origins the verifier accepts an answer from (a signed request's `expected_origins`). */
  expectedOrigins: string[]
}

/**
 * One entry of `navigator.credentials.get({digital: {requests}})` (GET <api>/verification/<id>/dc-api), and
 * what the page posts back: a DigitalCredential's `protocol` and `data`.
 */
export interface DcApiMessage {
  protocol: string
  data: Record<string, unknown>
}

/** Bounds of the DC API offer the page accepts. */
export const DC_API_LIMITS = { origins: 16, origin: 2048, protocol: 64 } as const

/** A DcApiOffer from untrusted JSON (a backend's FlowCreated), or undefined. */
export function asDcApiOffer(value: unknown): DcApiOffer | undefined {
  const v = record(value)
  const protocol = DC_API_PROTOCOL_NAMES.find((p) => p === v.protocol)
  const origins = v.expectedOrigins
  if (protocol === undefined || !Array.isArray(origins) || origins.length > DC_API_LIMITS.origins)
    return undefined
  if (!origins.every((o) => typeof o === 'string' && o.length > 0 && o.length <= DC_API_LIMITS.origin)) {
    return undefined
  }
  return { protocol, expectedOrigins: [...(origins as string[])] }
}

/**
 * A request entry or an answer from untrusted values: `protocol` a string (equal to `protocol` when given)
 * and `data` a JSON object; undefined otherwise. Reads the two members by name, so it also takes a
 * DigitalCredential (whose members are getters of its prototype, not own properties).
 */
export function asDcApiMessage(value: unknown, protocol?: string): DcApiMessage | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const v = value as { protocol?: unknown; data?: unknown }
  const data = v.data
  if (
    typeof v.protocol !== 'string' ||
    v.protocol.length === 0 ||
    v.protocol.length > DC_API_LIMITS.protocol
  ) {
    return undefined
  }
  if (protocol !== undefined && v.protocol !== protocol) return undefined
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined
  return { protocol: v.protocol, data: data as Record<string, unknown> }
}

/** What the page knows of the browser for the DC API: the feature test and the protocol check. */
export interface DcApiEnvironment {
  /** `typeof navigator.credentials?.get === 'function' && 'DigitalCredential' in window` */
  available: boolean
  /** `DigitalCredential.userAgentAllowsProtocol(protocol)` where the browser has it; undefined otherwise. */
  allowsProtocol?: (protocol: string) => boolean
  /** The page's origin (`location.origin`), the one the browser reports to the wallet. */
  origin: string
}

/**
 * Whether the page offers "Use a wallet on this device": the flow has a DC API request, the browser has the
 * API and does not refuse the request's protocol, and the page runs on an origin the verifier accepts (on any
 * other the wallet, or the verifier, would refuse the answer: the QR code is the way then).
 */
export function dcApiUsable(offer: DcApiOffer | undefined, env: DcApiEnvironment): boolean {
  if (offer === undefined || !env.available) return false
  if (offer.expectedOrigins.length > 0 && !offer.expectedOrigins.includes(env.origin)) return false
  try {
    return env.allowsProtocol?.(offer.protocol) !== false
  } catch {
    return true
  }
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
  const outcome = asOutcome(v.outcome)
  return {
    kind: v.kind,
    id: v.id,
    status: v.status as ServiceStatus,
    step: v.step,
    at: v.at,
    ...(outcome ? { outcome } : {}),
  }
}

// --- The outcome of a verification ---------------------------------------------------------------------

/** Bounds of what the page is sent and shows. */
export const OUTCOME_LIMITS = { checks: 20, credentials: 10, claims: 50, text: 300 } as const

const JWT_SHAPED = /eyJ[\w-]*\.[\w-]+\.[\w-]*(?:~[\w.~-]*)?/g

/** A text the page may show: JWT-shaped parts (tokens, SD-JWTs) cut, at most OUTCOME_LIMITS.text characters. */
export function pageText(text: string): string {
  const cut = text.replace(JWT_SHAPED, '[JWT]')
  return cut.length > OUTCOME_LIMITS.text ? `${cut.slice(0, OUTCOME_LIMITS.text - 1)}…` : cut
}

/** A FlowOutcome from untrusted JSON: the well-formed parts only, within the limits, or undefined. */
export function asOutcome(value: unknown): FlowOutcome | undefined {
  const v = record(value)
  const text = (x: unknown) => (typeof x === 'string' ? pageText(x) : undefined)
  const failedChecks = list(v.failedChecks)
    .map(record)
    .flatMap((c) => {
      const check = text(c.check)
      const message = text(c.message)
      return check !== undefined && message !== undefined ? [{ check, message }] : []
    })
    .slice(0, OUTCOME_LIMITS.checks)
  const shared = list(v.shared)
    .map(record)
    .flatMap((c): SharedCredential[] => {
      const type = text(c.type)
      const issuer = text(c.issuer)
      if (type === undefined || issuer === undefined) return []
      const claims = list(c.claims)
        .map(record)
        .flatMap((claim) => {
          const path = text(claim.path)
          const value = text(claim.value)
          return path !== undefined && value !== undefined ? [{ path, value }] : []
        })
        .slice(0, OUTCOME_LIMITS.claims)
      return [{ type, issuer, claims }]
    })
    .slice(0, OUTCOME_LIMITS.credentials)
  if (failedChecks.length === 0 && shared.length === 0) return undefined
  return { ...(failedChecks.length > 0 ? { failedChecks } : {}), ...(shared.length > 0 ? { shared } : {}) }
}

/** `path: value` lines of a credential subject (its `id` left out): nested members dotted, lists indexed. */
export function claimLines(subject: Record<string, unknown>): { path: string; value: string }[] {
  const lines: { path: string; value: string }[] = []
  const walk = (value: unknown, path: string) => {
    if (lines.length >= OUTCOME_LIMITS.claims) return
    if (Array.isArray(value)) {
      if (value.every((x) => typeof x !== 'object' || x === null)) {
        lines.push({ path, value: pageText(value.map(String).join(', ')) })
      } else {
        for (const [i, x] of value.entries()) walk(x, `${path}[${i}]`)
      }
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, member] of Object.entries(value)) walk(member, path ? `${path}.${key}` : key)
    } else lines.push({ path, value: pageText(String(value)) })
  }
  const { id: _id, ...claims } = subject
  walk(claims, '')
  return lines
}

/** Deep links the component puts in a link: a URI scheme other than script-capable ones. */
export function isSafeDeepLink(link: string): boolean {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(link)?.[1]?.toLowerCase()
  return scheme !== undefined && !['javascript', 'data', 'vbscript', 'blob', 'file'].includes(scheme)
}

// --- What a verification request asks for ------------------------------------------------------------------

const record = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {}
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : [])
const strings = (value: unknown): string[] => list(value).filter((v): v is string => typeof v === 'string')

/** `$.credentialSubject.a.b` (or `$.vc.credentialSubject.a.b`) → `credentialSubject.a.b`; other paths: none. */
function subjectPath(paths: unknown): string | undefined {
  for (const path of strings(paths)) {
    const match = /^\$\.(?:vc\.)?(credentialSubject(?:\.[^.[\]]+)*)$/.exec(path)
    if (match) return match[1]
  }
  return undefined
}

function descriptorRequested(descriptor: unknown, definitionFormats: string[]): RequestedCredential {
  const d = record(descriptor)
  const fields = list(record(d.constraints).fields).map(record)
  // The type constraint (2.8: the last element of the type array) names the type; else the descriptor's name.
  const typeConst = fields
    .filter((f) => strings(f.path).some((p) => /\.type\[-1:\]$/.test(p)))
    .map((f) => record(f.filter).const)
    .filter((c): c is string => typeof c === 'string')
  const own = Object.keys(record(d.format))
  return {
    id: String(d.id ?? ''),
    formats: own.length > 0 ? own : definitionFormats,
    types: typeConst.length > 0 ? typeConst : typeof d.name === 'string' ? [d.name] : [],
    claims: fields.map((f) => subjectPath(f.path)).filter((p): p is string => p !== undefined),
  }
}

function credentialQueryRequested(query: unknown): RequestedCredential {
  const q = record(query)
  const meta = record(q.meta)
  const vct = strings(meta.vct_values)
  // Appendix B.2.3: an mdoc query names its doctype
  const doctype = typeof meta.doctype_value === 'string' ? [meta.doctype_value] : []
  const typeValues = list(meta.type_values)
    .map((t) => strings(t).at(-1))
    .filter((t): t is string => t !== undefined)
  return {
    id: String(q.id ?? ''),
    formats: typeof q.format === 'string' ? [q.format] : [],
    types: vct.length > 0 ? vct : doctype.length > 0 ? doctype : typeValues,
    // §7: a path element is a claim name, an array index, or null for every element of an array.
    claims: list(q.claims).map((c) =>
      list(record(c).path)
        .map((p) => (p === null ? '*' : String(p)))
        .join('.'),
    ),
  }
}

/**
 * What the answer of 4.6 asks the wallet for: its profile and one entry per input descriptor (a `pe`
 * session's `presentation_definition`) or credential query (a `dcql` session's `dcql_query`).
 */
export function describeRequest(created: { presentation_definition?: unknown; dcql_query?: unknown }): {
  profile: VerificationProfile
  requested: RequestedCredential[]
} {
  if (created.dcql_query !== undefined) {
    return {
      profile: 'dcql',
      requested: list(record(created.dcql_query).credentials).map(credentialQueryRequested),
    }
  }
  const definition = record(created.presentation_definition)
  const formats = Object.keys(record(definition.format))
  return {
    profile: 'pe',
    requested: list(definition.input_descriptors).map((d) => descriptorRequested(d, formats)),
  }
}

/** The requested credentials of untrusted JSON (a backend's FlowCreated): the well-formed entries only. */
export function asRequested(value: unknown): RequestedCredential[] {
  const texts = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string')
  return list(value)
    .map(record)
    .filter((r) => typeof r.id === 'string' && texts(r.formats) && texts(r.types) && texts(r.claims))
    .map((r) => ({
      id: r.id as string,
      formats: r.formats as string[],
      types: r.types as string[],
      claims: r.claims as string[],
    }))
}

/** One line of text for a requested credential (the QR page and the sandbox print the same). */
export function requestedText(requested: RequestedCredential): string {
  const types = requested.types.filter((t) => t !== requested.id)
  return [
    requested.id,
    ...(types.length > 0 ? [`type ${types.join(' or ')}`] : []),
    ...(requested.formats.length > 0
      ? [`${requested.formats.length > 1 ? 'formats' : 'format'} ${requested.formats.join(', ')}`]
      : []),
    requested.claims.length > 0 ? `claims ${requested.claims.join(', ')}` : 'no claims named',
  ].join('; ')
}
