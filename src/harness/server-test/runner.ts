// Runs a server test plan: for each case a fresh flow from the source (an offer, a request), the harness's
// wallet doing the case's one thing wrong (or nothing, in a positive case), a verdict from what the target
// answered. A case has its own window; a target that never answers the case's request fails it as
// "nothing tested", never passes it.

import type { WalletStep } from '../../wallet/errors.ts'
import { WalletProtocolError, WalletUsageError } from '../../wallet/errors.ts'
import { type Exchange, exchangeLine } from './exchanges.ts'
import type { Refusal, ServerCase, ServerPlan } from './plans.ts'

/**
 * accepted / refused: the target completed the flow or refused it; nothing: it never answered the case's
 * request (or an earlier step failed, so the case's request was never made); not-applicable: the target
 * does not offer what the case needs (said why), which is neither a pass nor a failure.
 */
export type ServerOutcome = 'accepted' | 'refused' | 'nothing' | 'not-applicable'

export interface ServerVerdict {
  outcome: ServerOutcome
  /** false for not-applicable too: only a judged case passes */
  pass: boolean
  /** one line: why, naming the rule, the clause and what the target answered */
  reason: string
}

export interface ServerCaseResult {
  id: string
  plan: ServerPlan
  title: string
  sources: string[]
  expect: ServerCase['expect']
  misbehave?: string
  passes: string
  verdict: ServerVerdict
  /** what the wallet sent and the target answered, in order (secrets masked) */
  exchanges: Exchange[]
  /** facts the case noted besides the exchanges (the error the wallet saw, the reported result) */
  observed: string[]
  durationMs: number
}

export interface ServerTestRun {
  format: 'vc-harness-server-test/1'
  plan: ServerPlan
  /** the target: where the flows came from */
  target: string
  startedAt: string
  finishedAt: string
  durationMs: number
  totals: { cases: number; pass: number; fail: number; notApplicable: number }
  /** no case failed and at least one passed: nothing green on nothing */
  passed: boolean
  results: ServerCaseResult[]
}

/** What a case's code hands back: the verdict and what it noted. */
export interface CaseReport {
  verdict: ServerVerdict
  observed: string[]
}

/** A case's code: does the flow, judges it; throws only for harness errors. */
export type CaseCode = (
  c: ServerCase,
  note: (line: string) => void,
  signal: AbortSignal,
) => Promise<ServerVerdict>

export interface ServerTestOptions {
  plan: ServerPlan
  cases: readonly ServerCase[]
  target: string
  run: CaseCode
  /** the exchanges of the case that just ran (the recorder's take) */
  exchanges: () => Exchange[]
  caseTimeoutMs: number
  onResult?: (result: ServerCaseResult, index: number, total: number) => void
}

export async function runServerTest(options: ServerTestOptions): Promise<ServerTestRun> {
  const started = Date.now()
  const results: ServerCaseResult[] = []
  for (const [i, c] of options.cases.entries()) {
    const caseStarted = Date.now()
    const observed: string[] = []
    const controller = new AbortController()
    let timer: NodeJS.Timeout | undefined
    const window = new Promise<ServerVerdict>((resolve) => {
      timer = setTimeout(() => {
        controller.abort()
        resolve(
          nothing(`no verdict within the case window of ${options.caseTimeoutMs / 1000} s (--case-timeout)`),
        )
      }, options.caseTimeoutMs)
    })
    let verdict: ServerVerdict
    try {
      verdict = await Promise.race([options.run(c, (line) => observed.push(line), controller.signal), window])
    } catch (error) {
      verdict = nothing(`the case could not be carried out: ${(error as Error).message}`)
    } finally {
      clearTimeout(timer)
      controller.abort()
    }
    const exchanges = options.exchanges()
    const result: ServerCaseResult = {
      id: c.id,
      plan: c.plan,
      title: c.title,
      sources: c.sources,
      expect: c.expect,
      ...(c.misbehave ? { misbehave: c.misbehave } : {}),
      passes: c.passes,
      verdict,
      exchanges,
      observed,
      durationMs: Date.now() - caseStarted,
    }
    results.push(result)
    options.onResult?.(result, i + 1, options.cases.length)
  }
  const pass = results.filter((r) => r.verdict.pass).length
  const notApplicable = results.filter((r) => r.verdict.outcome === 'not-applicable').length
  const fail = results.length - pass - notApplicable
  const finished = Date.now()
  return {
    format: 'vc-harness-server-test/1',
    plan: options.plan,
    target: options.target,
    startedAt: new Date(started).toISOString(),
    finishedAt: new Date(finished).toISOString(),
    durationMs: finished - started,
    totals: { cases: results.length, pass, fail, notApplicable },
    passed: fail === 0 && pass > 0,
    results,
  }
}

export const nothing = (reason: string): ServerVerdict => ({
  outcome: 'nothing',
  pass: false,
  reason: `nothing tested: ${reason}`,
})
export const notApplicable = (reason: string): ServerVerdict => ({
  outcome: 'not-applicable',
  pass: false,
  reason: `not applicable: ${reason}`,
})
export const passed = (outcome: 'accepted' | 'refused', reason: string): ServerVerdict => ({
  outcome,
  pass: true,
  reason,
})
export const failed = (outcome: ServerOutcome, reason: string): ServerVerdict => ({
  outcome,
  pass: false,
  reason,
})

/** How the target's answer reads in a reason: `400 invalid_proof ("…")`. */
export function answerText(error: WalletProtocolError): string {
  return `${error.status}${error.error ? ` ${error.error}` : ''}${error.errorDescription ? ` (${JSON.stringify(error.errorDescription.slice(0, 200))})` : ''}`
}

/**
 * Judges the outcome of a request the target must refuse: a WalletProtocolError at `refusal.step` with an
 * allowed status and error passes; at that step with another error fails naming both; anything the target
 * did not answer (status 0, another step) is "nothing tested".
 */
export function judgeRefusal(c: ServerCase, refusal: Refusal, error: unknown): ServerVerdict {
  const clause = c.sources.join(' ')
  if (error instanceof WalletProtocolError && error.step === refusal.step && error.status >= 400) {
    const statusOk = refusal.statuses ? refusal.statuses.includes(error.status) : error.status < 500
    const errorOk = refusal.errors.includes(error.error)
    if (statusOk && errorOk)
      return passed('refused', `refused as required: ${refusal.step} answered ${answerText(error)}`)
    const wanted = `${(refusal.statuses ?? ['4xx']).join(' or ')} ${refusal.errors.map((e) => e ?? '(no error code)').join(' or ')}`
    return failed(
      'refused',
      `${c.rule ?? c.title}: the issuer refused, but with ${answerText(error)} where ${clause} asks for ${wanted}`,
    )
  }
  if (error instanceof WalletProtocolError && error.status === 0)
    return nothing(`the ${error.step} request got no answer: ${error.errorDescription ?? error.message}`)
  if (error instanceof WalletProtocolError)
    return nothing(
      `the flow stopped at the ${error.step} step (${answerText(error)}) before the ${refusal.step} request the case is about`,
    )
  if (error instanceof WalletUsageError) return notApplicable(error.message)
  return nothing((error as Error).message)
}

/** A failure of a step the case needs to reach its own request: the case tested nothing. */
export function stepFailed(step: WalletStep | string, error: unknown): ServerVerdict {
  if (error instanceof WalletProtocolError)
    return nothing(
      error.status === 0
        ? `the ${error.step} request got no answer: ${error.errorDescription ?? error.message}`
        : `the ${error.step} step failed before the case's request: ${answerText(error)}`,
    )
  if (error instanceof WalletUsageError) return notApplicable(error.message)
  return nothing(`${step}: ${(error as Error).message}`)
}

export { exchangeLine }
