// A cucumber formatter printing one line per scenario as it finishes, the same on a terminal and in CI
// logs (no redrawing):
//
//   ✔ [ 3/75] A valid API key receives a JWT in the Token header (412 ms)
//   ✘ [ 4/75] A wrong API key secret is refused with 401 invalid_credentials (38 ms): Then the answer is …
//   ↷ [ 5/75] A revoked API key can no longer log in (0 ms): needs portal; the external target has …
//
// `vc-harness conformance` uses it as the console formatter and passes the expected failures and target
// under formatOptions.vcHarness, so known failures and unexpected passes are marked as they happen. It
// also works on its own: cucumber-js --format ./src/harness/progress-formatter.ts (with tsx loaded).

import type { Envelope } from '@cucumber/messages'
import { classify, type Finished, isUnexplainedSkip, type RequirementStatus, RunCollector } from './report.ts'
import type { ExpectedFailures } from './report-expected.ts'

export interface ProgressOptions {
  expected?: ExpectedFailures
  targetKind?: string
  /** --dry-run: nothing runs; a scenario whose steps all have a definition is skipped. */
  dryRun?: boolean
  /** --fail-fast: the scenarios after the first failure are skipped without a reason (not run). */
  failFast?: boolean
  /** Colour the marks; default: when the stream is a terminal and NO_COLOR is not set. */
  color?: boolean
}

interface FormatterContext {
  on: (key: 'message', handler: (value: Envelope) => void) => void
  options: ProgressOptions
  stream: NodeJS.WritableStream & { isTTY?: boolean }
  write: (text: string) => void
}

const MARK: Record<RequirementStatus, string> = {
  pass: '✔',
  fail: '✘',
  'not-applicable': '↷',
  'expected-failure': '✘',
  'unexpected-pass': '✔',
}
const COLOR: Record<RequirementStatus, number> = {
  pass: 32,
  fail: 31,
  'not-applicable': 33,
  'expected-failure': 35,
  'unexpected-pass': 33,
}
const LINE_CHARS = 200

/** The first lines of a reason on one line (a failure: the step and what was expected; the rest at the end). */
const oneLine = (text: string, lines = 2) => {
  const flat = text
    .split('\n')
    .slice(0, lines)
    .map((l) => l.trim())
    .join(' / ')
  return flat.length > LINE_CHARS ? `${flat.slice(0, LINE_CHARS)}…` : flat
}

/** The progress line of a finished scenario attempt. */
export function progressLine(
  finished: Finished,
  position: { done: number; planned: number },
  options: ProgressOptions = {},
): string {
  const requirement = classify(finished, options.expected, options.targetKind)
  const width = String(position.planned).length
  const counter = `[${String(position.done).padStart(width)}/${position.planned}]`
  const paint = (code: number, text: string) => (options.color ? `\u001b[${code}m${text}\u001b[0m` : text)
  const mark = paint(COLOR[requirement.status], finished.willBeRetried ? '↻' : MARK[requirement.status])
  const head = `${mark} ${counter} ${finished.name} (${finished.durationMs} ms)`
  if (isUnexplainedSkip(finished) && (options.dryRun || options.failFast))
    return `${paint(COLOR['not-applicable'], '·')} ${counter} ${finished.name}: ${options.dryRun ? 'dry run, every step has a definition' : 'not run (--fail-fast)'}`
  if (finished.willBeRetried) return `${head}: failed, retrying: ${oneLine(requirement.reason ?? '')}`
  switch (requirement.status) {
    case 'pass':
      return head
    case 'not-applicable':
      return `${head}: ${oneLine(requirement.reason ?? 'skipped')}`
    case 'fail':
      return `${head}: ${oneLine(requirement.reason ?? 'failed')}`
    case 'expected-failure':
      return `${head}: expected failure (${oneLine(requirement.knownIssue ?? '')})`
    case 'unexpected-pass':
      return `${head}: ${paint(33, 'UNEXPECTED PASS')}, listed as a known failure: remove it from the list`
  }
}

export default {
  type: 'formatter' as const,
  optionsKey: 'vcHarness',
  formatter({ on, options, stream, write }: FormatterContext) {
    const collector = new RunCollector()
    const color = options.color ?? (stream.isTTY === true && !process.env.NO_COLOR)
    let done = 0
    on('message', (envelope) => {
      const finished = collector.add(envelope)
      if (!finished) return
      if (!finished.willBeRetried) done++
      write(`${progressLine(finished, { done, planned: collector.planned }, { ...options, color })}\n`)
    })
  },
}
