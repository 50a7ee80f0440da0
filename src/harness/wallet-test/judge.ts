// Judges one wallet test case from what the service saw (the fault registry's exchanges, the session's
// verdict) and what the wallet command said (its exit status). Pure: the runner gathers the evidence.

import type { Exchange } from '../../service/faults/index.ts'
import type { WalletCase } from './plans.ts'

/** What the wallet did, in the words of the plan: it completed the flow, refused it, or did nothing. */
export type Outcome = 'answered' | 'refused' | 'nothing'

export interface Evidence {
  exchanges: readonly Exchange[]
  /** the wallet command's exit status; null: it did not finish in time (killed); undefined: no command */
  exitCode?: number | null
  /** presentation: the session's status after the wallet was done (PENDING, VERIFIED, REJECTED, EXPIRED) */
  sessionStatus?: string
  /** presentation: the failed checks of a REJECTED session, `check: message` */
  failedChecks?: string[]
  /** the case window (s), for the reason of a case that timed out */
  windowSeconds: number
}

export interface Verdict {
  outcome: Outcome
  pass: boolean
  /** one line: why it passed or failed, naming the rule and what the wallet did */
  reason: string
  /** what was observed, a line per fact, for the reports */
  observed: string[]
}

function describe(x: Exchange): string {
  const facts = [
    x.error && `error ${x.error}`,
    x.proofNonce !== undefined && (x.proofNonce ? 'proof with nonce' : 'proof WITHOUT nonce'),
    x.notification && `event ${x.notification}`,
    x.vpToken && 'vp_token',
    x.walletError &&
      `wallet error ${x.walletError}${x.walletErrorDescription ? ` (${x.walletErrorDescription})` : ''}`,
    x.origin === 'foreign' && 'via the foreign origin',
  ].filter(Boolean)
  return `${x.method} ${x.endpoint} → ${x.status}${facts.length ? `: ${facts.join(', ')}` : ''}`
}

const exitText = (code: number | null | undefined) =>
  code === undefined
    ? ''
    : code === null
      ? 'the wallet command did not finish in time'
      : `the wallet command exited ${code}`

/**
 * Faults after which the wallet must not redeem anything: metadata it must not use (OpenID4VCI 1.0 §12.2.2),
 * an authorization response it must discard (RFC 9207 §2.4, RFC 6749 §4.1.2).
 */
const STOP_BEFORE_TOKEN: ReadonlySet<string> = new Set([
  'metadata-issuer-mismatch',
  'authorization-response-without-iss',
  'authorization-response-wrong-iss',
  'authorization-response-wrong-state',
])

function judgeIssuance(c: WalletCase, e: Evidence, observed: string[]): Verdict {
  const x = e.exchanges
  const fetchedOffer = x.some((r) => r.endpoint === 'offer' && r.status === 200)
  const redeemed = x.some((r) => r.endpoint === 'token' && r.status === 200)
  const received = x.some(
    (r) => (r.endpoint === 'credential' || r.endpoint === 'deferred') && r.status === 200,
  )
  const events = x.flatMap((r) => (r.endpoint === 'notification' && r.notification ? [r.notification] : []))
  const acceptedEvent = events.includes('credential_accepted')
  const failureEvent = events.find((ev) => ev === 'credential_failure' || ev === 'credential_deleted')
  const nonceless = x.some((r) => r.endpoint === 'credential' && r.proofNonce === false)
  const exit = exitText(e.exitCode)
  // Kept: said so (credential_accepted), or took it and neither notified a failure nor exited non-zero.
  const kept =
    received &&
    !failureEvent &&
    (acceptedEvent || e.exitCode === 0 || e.exitCode === undefined || e.exitCode === null)
  const refusedBy = failureEvent
    ? `notified ${failureEvent}`
    : typeof e.exitCode === 'number' && e.exitCode !== 0
      ? exit
      : undefined
  const outcome: Outcome = kept ? 'answered' : refusedBy ? 'refused' : 'nothing'
  const verdict = (pass: boolean, reason: string): Verdict => ({ outcome, pass, reason, observed })

  if (!fetchedOffer) {
    return verdict(
      false,
      `the wallet never fetched the credential offer within ${e.windowSeconds} s${exit ? ` (${exit})` : ''}: nothing was tested`,
    )
  }
  if (c.expect === 'accept') {
    if (
      c.fault === 'token-without-c-nonce' &&
      !x.some((r) => r.endpoint === 'credential' && r.proofNonce && r.status === 200)
    ) {
      return verdict(
        false,
        nonceless
          ? `${c.rule}: the wallet sent a key proof without a nonce and did not recover with an issuer nonce`
          : `${c.rule}: the wallet obtained no credential with an issuer nonce`,
      )
    }
    if (kept && (acceptedEvent || e.exitCode === 0 || e.exitCode === undefined)) {
      return verdict(
        true,
        `received and kept the credential${acceptedEvent ? ' (credential_accepted)' : exit ? ` (${exit})` : ''}`,
      )
    }
    if (received) {
      return verdict(
        false,
        `the wallet received a valid credential but ${refusedBy ?? exit ?? 'did not say it kept it'}`,
      )
    }
    const refusal = x.find((r) => r.error)
    return verdict(
      false,
      redeemed
        ? `the wallet redeemed the code but obtained no credential${refusal ? ` (the issuer answered ${refusal.endpoint}: ${refusal.error})` : ''}${exit ? `; ${exit}` : ''}`
        : `the wallet fetched the offer but never redeemed it within ${e.windowSeconds} s${exit ? ` (${exit})` : ''}`,
    )
  }
  // refuse
  if (c.fault === 'metadata-issuer-mismatch' && redeemed) {
    return verdict(
      false,
      `${c.rule}, yet the wallet redeemed the pre-authorized code (OpenID4VCI 1.0 §12.2.2: the metadata MUST NOT be used)`,
    )
  }
  if (c.fault && STOP_BEFORE_TOKEN.has(c.fault) && x.some((r) => r.endpoint === 'token')) {
    return verdict(
      false,
      `${c.rule}, yet the wallet sent the code to the token endpoint (the response MUST be discarded)`,
    )
  }
  if (acceptedEvent) return verdict(false, `${c.rule}, yet the wallet notified credential_accepted`)
  if (kept) {
    return verdict(
      false,
      e.exitCode === 0
        ? `${c.rule}, yet ${exit} after receiving it and notified no credential_failure`
        : `${c.rule}, yet the wallet took the credential and did not say it refused it (no credential_failure notification${e.exitCode === null ? `; ${exit}` : ''})`,
    )
  }
  return verdict(
    true,
    refusedBy
      ? `refused: ${refusedBy}${received ? ' after receiving the credential' : ''}`
      : 'did nothing: the wallet did not go on with the flow',
  )
}

function judgePresentation(c: WalletCase, e: Evidence, observed: string[]): Verdict {
  const x = e.exchanges
  const responses = x.filter((r) => r.endpoint === 'response')
  const answered = responses.some((r) => r.vpToken)
  const errorAnswer = responses.find((r) => r.walletError)
  const fetched = x.some((r) => r.endpoint === 'request' && r.status === 200)
  // Nothing to fetch: every parameter is in the link (redirect_uri), or the fault is (an unknown prefix).
  const byValue =
    (c.flow.kind === 'presentation' && c.flow.clientIdPrefix === 'redirect_uri') || c.visibleInLink
  const outcome: Outcome = answered ? 'answered' : errorAnswer ? 'refused' : 'nothing'
  const exit = exitText(e.exitCode)
  const verdict = (pass: boolean, reason: string): Verdict => ({ outcome, pass, reason, observed })
  if (!fetched && !byValue && !answered && !errorAnswer) {
    return verdict(
      false,
      `the wallet never fetched the request object within ${e.windowSeconds} s${exit ? ` (${exit})` : ''}: nothing was tested`,
    )
  }
  if (c.expect === 'accept') {
    if (answered && e.sessionStatus === 'VERIFIED')
      return verdict(true, 'answered with a presentation the verifier found valid (VERIFIED)')
    if (answered) {
      return verdict(
        false,
        `the wallet's presentation was not valid: session ${e.sessionStatus ?? 'unknown'}${e.failedChecks?.length ? ` (${e.failedChecks.join('; ')})` : ''}`,
      )
    }
    if (errorAnswer) {
      return verdict(
        false,
        `the wallet answered error ${errorAnswer.walletError}${errorAnswer.walletErrorDescription ? ` (${errorAnswer.walletErrorDescription})` : ''} to a valid request`,
      )
    }
    return verdict(
      false,
      `no answer to a valid request within ${e.windowSeconds} s${exit ? ` (${exit})` : ''}`,
    )
  }
  if (answered) {
    const foreign = responses.some((r) => r.vpToken && r.origin === 'foreign')
    return verdict(
      false,
      `${c.rule}, yet the wallet sent a presentation${foreign ? ' (to the foreign response_uri)' : ''}`,
    )
  }
  return verdict(
    true,
    errorAnswer
      ? `refused: error response ${errorAnswer.walletError}${errorAnswer.walletErrorDescription ? ` (${errorAnswer.walletErrorDescription})` : ''}`
      : `refused: sent nothing${fetched ? ' after fetching the request' : ''}${exit ? ` (${exit})` : ''}`,
  )
}

/** The verdict of one case. */
export function judge(c: WalletCase, e: Evidence): Verdict {
  const observed = e.exchanges.map(describe)
  if (e.exitCode !== undefined) observed.push(exitText(e.exitCode))
  if (e.sessionStatus)
    observed.push(
      `session ${e.sessionStatus}${e.failedChecks?.length ? `: ${e.failedChecks.join('; ')}` : ''}`,
    )
  return c.flow.kind === 'issuance' ? judgeIssuance(c, e, observed) : judgePresentation(c, e, observed)
}

/**
 * Whether the evidence already settles the case, so an interactive run need not wait out the window: the
 * wallet answered the verifier, or notified the issuer, or (a negative metadata case) redeemed the code.
 */
export function settled(c: WalletCase, exchanges: readonly Exchange[]): boolean {
  if (c.flow.kind === 'presentation') return exchanges.some((r) => r.endpoint === 'response')
  if (exchanges.some((r) => r.endpoint === 'notification' && r.status < 300)) return true
  return (
    c.fault !== undefined && STOP_BEFORE_TOKEN.has(c.fault) && exchanges.some((r) => r.endpoint === 'token')
  )
}
