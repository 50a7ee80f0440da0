// The conformance summary: one requirement per scenario (each Scenario Outline row is its own), built from
// cucumber's message stream (reports/cucumber.ndjson or the envelopes of a run), with the expected
// failures applied, rendered as reports/conformance.json and reports/conformance.md.
//
// Everything here but writeReports/readNdjson is pure, so it is tested on synthetic envelopes
// (test/harness/report.test.ts). The progress formatter (progress-formatter.ts) uses the same RunCollector to print
// each scenario as it finishes.

import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type {
  Envelope,
  GherkinDocument,
  Hook,
  Pickle,
  Step,
  TestCase,
  TestStep,
  TestStepResult,
  Timestamp,
} from '@cucumber/messages'
import { type ExpectedFailures, expectedFailureFor } from './report-expected.ts'

export type RequirementStatus = 'pass' | 'fail' | 'not-applicable' | 'expected-failure' | 'unexpected-pass'

/** Statuses in report order: what needs attention first. */
export const STATUS_ORDER: readonly RequirementStatus[] = [
  'fail',
  'unexpected-pass',
  'expected-failure',
  'not-applicable',
  'pass',
]

/** Tags that name a spec section are always sources, even on a feature. */
const SPEC_TAG =
  /^@(interface-|OID4VCI-|OID4VP-|PEX-|BitstringStatusList|StandardWebhooks|RFC8414-|RFC9901-|SD-JWT-VC-|TokenStatusList-|security$)/
/** Error message lines kept in a failure reason, and the longest line kept. */
const REASON_LINES = 6
const REASON_LINE_CHARS = 300

/** The tags of a scenario sorted the report's way: the feature's grouping tags are its capabilities, every
 * other tag (and a feature tag naming a spec section) a source, `@needs-<capability>` what it needs. */
export function scenarioTags(
  tags: readonly string[],
  featureTags: readonly string[],
): { sources: string[]; capabilities: string[]; needs: string[] } {
  const capabilities = featureTags.filter((t) => !t.startsWith('@needs-') && !SPEC_TAG.test(t))
  const unique = [...new Set(tags)]
  return {
    capabilities,
    sources: unique.filter((t) => !t.startsWith('@needs-') && !capabilities.includes(t)),
    needs: unique.filter((t) => t.startsWith('@needs-')).map((t) => t.slice('@needs-'.length)),
  }
}

/** The key a scenario, its outcome and its requirement share: file, line and name. */
export const requirementKey = (r: { uri: string; line: number; name: string }) =>
  `${r.uri}:${r.line}:${r.name}`

/** One step (or hook) of a scenario's last attempt, for the JUnit report's system-out. */
export interface StepLine {
  text: string
  /** Cucumber's status, lower case: passed, failed, skipped, undefined, … */
  status: string
}

/** What happened to one scenario (its last attempt), before the expected failures apply. */
export interface Outcome {
  /** The scenario's name: the requirement. */
  name: string
  uri: string
  line: number
  /** Name of the feature the scenario belongs to. */
  feature: string
  /** Feature-level grouping tags (`@auth`, `@issuance`, …). */
  capabilities: string[]
  /** Tags naming the spec sections the scenario checks (`@interface-4.1`, `@OID4VCI-8.3`, `@security`, …). */
  sources: string[]
  /** Capabilities the scenario needs from the target (`@needs-portal` → `portal`). */
  needs: string[]
  result: 'passed' | 'failed' | 'skipped'
  /** failed: the failing step and the first lines of its error; skipped: why (absent when no hook said why:
   * a dry run, or the scenarios --fail-fast did not run). */
  reason?: string
  /** failed: the step (or hook) that failed, with its keyword. */
  step?: string
  durationMs: number
  attempts: number
  /** Epoch ms; when two runs hold the same scenario the later one counts. */
  finishedAt: number
}

export interface Requirement {
  name: string
  status: RequirementStatus
  /** fail / expected-failure: the failing step and error; not-applicable: why; unexpected-pass: what to do. */
  reason?: string
  /** expected-failure / unexpected-pass: the reason the expected-failures file gives. */
  knownIssue?: string
  step?: string
  sources: string[]
  capabilities: string[]
  needs: string[]
  feature: string
  uri: string
  line: number
  durationMs: number
  attempts: number
}

export interface Tally {
  requirements: number
  pass: number
  fail: number
  notApplicable: number
  expectedFailure: number
  unexpectedPass: number
}

export interface TargetDescription {
  kind: string
  profile?: string
  url?: string
}

export interface RunInfo {
  startedAt?: string
  finishedAt?: string
  success?: boolean
  scenarios: number
}

export interface ConformanceSummary {
  format: 'vc-harness-conformance/1'
  target?: TargetDescription
  startedAt?: string
  finishedAt?: string
  /** Wall time from the earliest start to the latest finish of the runs. */
  durationMs?: number
  runs: RunInfo[]
  expectedFailuresFile?: string
  strict: boolean
  gate: { passed: boolean; problems: string[] }
  totals: Tally
  bySource: (Tally & { tag: string })[]
  byCapability: (Tally & { capability: string })[]
  warnings: string[]
  /** Failures outside any scenario: a BeforeAll/AfterAll hook, a Gherkin parse error, a run that stopped. */
  runErrors: string[]
  /** What the harness itself could not do (pre-flight checks, HARNESS_ERROR_FILE): the run judged nothing. */
  harnessErrors: string[]
  requirements: Requirement[]
}

export interface SummaryOptions {
  expected?: ExpectedFailures
  target?: TargetDescription
  /** Unexpected passes fail the gate too. */
  strict?: boolean
  /** Every scenario name of the suite, so listed names that exist but were not selected are no warning. */
  knownScenarios?: Iterable<string>
  /** The run stopped at the first failure: scenarios skipped without a reason were not run, not judged. */
  failFast?: boolean
  /** Harness errors of the run (readHarnessErrors): they fail the gate, and the command exits 3. */
  harnessErrors?: readonly string[]
}

const ms = (t: Timestamp | undefined) => (t ? t.seconds * 1000 + t.nanos / 1e6 : 0)
const iso = (epochMs: number | undefined) =>
  epochMs === undefined ? undefined : new Date(epochMs).toISOString()

interface Attempt {
  testCaseId: string
  attempt: number
  startMs: number
  results: Map<string, TestStepResult>
  logs: string[]
}

interface Run {
  id?: string
  startMs?: number
  finishMs?: number
  success?: boolean
  scenarios: number
}

/** A scenario attempt that has just finished; `willBeRetried` attempts are not the final word. */
export type Finished = Outcome & { willBeRetried: boolean }

/**
 * Accumulates cucumber envelopes (of one run or several: ids are unique) into outcomes. `add` returns the
 * scenario attempt an envelope finished, so a formatter can print it at once.
 */
export class RunCollector {
  private readonly docs = new Map<string, { name: string; tags: string[] }>()
  private readonly keywords = new Map<string, string>()
  private readonly pickles = new Map<string, Pickle>()
  private readonly hooks = new Map<string, Hook>()
  private readonly testCases = new Map<string, TestCase>()
  private readonly attempts = new Map<string, Attempt>()
  private readonly runHooks = new Map<string, string>()
  private readonly runs = new Map<string, Run>()
  private lastRun: Run | undefined
  private readonly startedCases = new Set<string>()
  /** Final outcome per pickle id. */
  readonly outcomes = new Map<string, Outcome>()
  /** The steps of each final outcome, by requirementKey. */
  readonly steps = new Map<string, StepLine[]>()
  readonly runErrors: string[] = []

  /** Test cases planned so far (all are planned before the first one starts). */
  get planned(): number {
    return this.testCases.size
  }

  add(envelope: Envelope): Finished | undefined {
    if (envelope.gherkinDocument) this.addDocument(envelope.gherkinDocument)
    else if (envelope.pickle) this.pickles.set(envelope.pickle.id, envelope.pickle)
    else if (envelope.hook) this.hooks.set(envelope.hook.id, envelope.hook)
    else if (envelope.testCase) {
      this.testCases.set(envelope.testCase.id, envelope.testCase)
      if (this.lastRun) this.lastRun.scenarios++
    } else if (envelope.testCaseStarted) {
      const s = envelope.testCaseStarted
      this.startedCases.add(s.testCaseId)
      this.attempts.set(s.id, {
        testCaseId: s.testCaseId,
        attempt: s.attempt,
        startMs: ms(s.timestamp),
        results: new Map(),
        logs: [],
      })
    } else if (envelope.testStepFinished) {
      const f = envelope.testStepFinished
      this.attempts.get(f.testCaseStartedId)?.results.set(f.testStepId, f.testStepResult)
    } else if (envelope.attachment) {
      const a = envelope.attachment
      if (a.testCaseStartedId && a.mediaType.startsWith('text/')) {
        const text = `${a.contentEncoding}` === 'BASE64' ? Buffer.from(a.body, 'base64').toString() : a.body
        this.attempts.get(a.testCaseStartedId)?.logs.push(text)
      }
    } else if (envelope.testCaseFinished) {
      const f = envelope.testCaseFinished
      const attempt = this.attempts.get(f.testCaseStartedId)
      if (!attempt) return undefined
      const outcome = this.outcome(attempt, ms(f.timestamp))
      if (!outcome) return undefined
      const testCase = this.testCases.get(attempt.testCaseId)
      if (!f.willBeRetried && testCase) {
        this.outcomes.set(testCase.pickleId, outcome)
        this.steps.set(requirementKey(outcome), this.stepLines(attempt))
      }
      return { ...outcome, willBeRetried: f.willBeRetried }
    } else if (envelope.testRunStarted) {
      const s = envelope.testRunStarted
      const run: Run = { startMs: ms(s.timestamp), scenarios: 0, ...(s.id ? { id: s.id } : {}) }
      this.runs.set(s.id ?? `run-${this.runs.size}`, run)
      this.lastRun = run
    } else if (envelope.testRunFinished) {
      const f = envelope.testRunFinished
      const run = (f.testRunStartedId && this.runs.get(f.testRunStartedId)) || this.lastRun
      if (run) {
        run.finishMs = ms(f.timestamp)
        run.success = f.success
      }
      const why = f.exception?.message ?? f.message
      if (why) this.runError(`the test run failed: ${firstLines(why, 4).join(' / ')}`)
    } else if (envelope.testRunHookStarted) {
      this.runHooks.set(envelope.testRunHookStarted.id, envelope.testRunHookStarted.hookId)
    } else if (envelope.testRunHookFinished) {
      const f = envelope.testRunHookFinished
      const status = `${f.result.status}`
      if (status !== 'PASSED' && status !== 'SKIPPED') {
        const hook = this.hooks.get(this.runHooks.get(f.testRunHookStartedId) ?? '')
        const message = f.result.exception?.message ?? f.result.message ?? status
        this.runError(`${hookLabel(hook)} failed: ${firstLines(message, 4).join(' / ')}`)
      }
    } else if (envelope.parseError) {
      const p = envelope.parseError
      this.runError(`${p.source.uri ?? '?'}: ${p.message}`)
    } else if (envelope.undefinedParameterType) {
      const u = envelope.undefinedParameterType
      this.runError(`undefined parameter type {${u.name}} in "${u.expression}"`)
    }
    return undefined
  }

  /** Records a failure outside any scenario (once: parallel workers report the same BeforeAll error). */
  runError(message: string) {
    if (!this.runErrors.includes(message)) this.runErrors.push(message)
  }

  /** Every scenario name the runs compiled, selected or not (cucumber emits a pickle for each). */
  scenarioNames(): Set<string> {
    return new Set([...this.pickles.values()].map((p) => p.name))
  }

  /** Test cases that were planned but never finished (the run stopped, a worker died). */
  unfinished(): Outcome[] {
    const done = new Set(this.outcomes.keys())
    const out: Outcome[] = []
    for (const testCase of this.testCases.values()) {
      if (done.has(testCase.pickleId)) continue
      const pickle = this.pickles.get(testCase.pickleId)
      if (!pickle) continue
      out.push({
        ...this.describe(pickle),
        // One that started and never ended failed; one that never started was not judged at all (issue 32:
        // a harness error before the first scenario is no failure of 222 requirements).
        ...(this.startedCases.has(testCase.id)
          ? { result: 'failed', reason: 'did not run to the end: the test run stopped during this scenario' }
          : { result: 'skipped', reason: NOT_STARTED }),
        durationMs: 0,
        attempts: 0,
        finishedAt: 0,
      })
    }
    return out
  }

  runInfo(): RunInfo[] {
    return [...this.runs.values()].map((r) => ({
      ...(r.startMs !== undefined ? { startedAt: iso(r.startMs) } : {}),
      ...(r.finishMs !== undefined ? { finishedAt: iso(r.finishMs) } : {}),
      ...(r.success !== undefined ? { success: r.success } : {}),
      scenarios: r.scenarios,
    }))
  }

  /** Earliest start and latest finish over the runs, epoch ms. */
  span(): { start?: number; finish?: number } {
    const starts = [...this.runs.values()].flatMap((r) => (r.startMs ? [r.startMs] : []))
    const finishes = [...this.runs.values()].flatMap((r) => (r.finishMs ? [r.finishMs] : []))
    return {
      ...(starts.length ? { start: Math.min(...starts) } : {}),
      ...(finishes.length ? { finish: Math.max(...finishes) } : {}),
    }
  }

  private addDocument(doc: GherkinDocument) {
    if (!doc.uri || !doc.feature) return
    this.docs.set(doc.uri, { name: doc.feature.name, tags: doc.feature.tags.map((t) => t.name) })
    const steps = (list: readonly Step[]) => {
      for (const s of list) this.keywords.set(s.id, s.keyword.trim())
    }
    for (const child of doc.feature.children) {
      if (child.background) steps(child.background.steps)
      if (child.scenario) steps(child.scenario.steps)
      for (const ruleChild of child.rule?.children ?? []) {
        if (ruleChild.background) steps(ruleChild.background.steps)
        if (ruleChild.scenario) steps(ruleChild.scenario.steps)
      }
    }
  }

  private describe(pickle: Pickle) {
    const doc = this.docs.get(pickle.uri)
    return {
      name: pickle.name,
      uri: pickle.uri,
      line: pickle.location?.line ?? 0,
      feature: doc?.name ?? pickle.uri,
      ...scenarioTags(
        pickle.tags.map((t) => t.name),
        doc?.tags ?? [],
      ),
    }
  }

  private stepLines(attempt: Attempt): StepLine[] {
    const testCase = this.testCases.get(attempt.testCaseId)
    const pickle = testCase && this.pickles.get(testCase.pickleId)
    if (!testCase || !pickle) return []
    // The steps, and the hooks that did not simply pass (the skip of a not-applicable scenario, a failure).
    return testCase.testSteps
      .map((step) => ({ step, status: `${attempt.results.get(step.id)?.status ?? 'UNKNOWN'}` }))
      .filter(({ step, status }) => step.pickleStepId || status !== 'PASSED')
      .map(({ step, status }) => ({ text: this.stepLabel(step, pickle), status: status.toLowerCase() }))
  }

  private outcome(attempt: Attempt, finishMs: number): Outcome | undefined {
    const testCase = this.testCases.get(attempt.testCaseId)
    const pickle = testCase && this.pickles.get(testCase.pickleId)
    if (!testCase || !pickle) return undefined
    const base = {
      ...this.describe(pickle),
      durationMs: Math.max(0, Math.round(finishMs - attempt.startMs)),
      attempts: attempt.attempt + 1,
      finishedAt: finishMs,
    }
    let skipped = false
    for (const step of testCase.testSteps) {
      const result = attempt.results.get(step.id)
      const status = result ? `${result.status}` : 'UNKNOWN'
      if (status === 'PASSED') continue
      if (status === 'SKIPPED') {
        skipped = true
        continue
      }
      const label = this.stepLabel(step, pickle)
      return {
        ...base,
        result: 'failed',
        step: label,
        reason: failureReason(status, label, result, pickle.name),
      }
    }
    if (!skipped) return { ...base, result: 'passed' }
    const log = attempt.logs.find((l) => l.startsWith('Skipped:'))
    return { ...base, result: 'skipped', ...(log ? { reason: log.slice('Skipped:'.length).trim() } : {}) }
  }

  private stepLabel(step: TestStep, pickle: Pickle): string {
    if (step.hookId) return hookLabel(this.hooks.get(step.hookId))
    const pickleStep = pickle.steps.find((s) => s.id === step.pickleStepId)
    if (!pickleStep) return 'a step'
    const keyword = this.keywords.get(pickleStep.astNodeIds[0] ?? '')
    return keyword ? `${keyword} ${pickleStep.text}` : pickleStep.text
  }
}

function hookLabel(hook: Hook | undefined): string {
  if (!hook) return 'a hook'
  const kind: Record<string, string> = {
    BEFORE_TEST_RUN: 'BeforeAll hook',
    AFTER_TEST_RUN: 'AfterAll hook',
    BEFORE_TEST_CASE: 'Before hook',
    AFTER_TEST_CASE: 'After hook',
    BEFORE_TEST_STEP: 'BeforeStep hook',
    AFTER_TEST_STEP: 'AfterStep hook',
  }
  const name = hook.name ? ` "${hook.name}"` : ''
  const ref = hook.sourceReference
  const where = ref?.uri ? ` (${ref.uri}${ref.location ? `:${ref.location.line}` : ''})` : ''
  return `${kind[`${hook.type}`] ?? 'hook'}${name}${where}`
}

/** The first non-stack lines of an error message, each cut to a readable length. */
function firstLines(text: string, max = REASON_LINES): string[] {
  return text
    .split('\n')
    .filter((l) => !/^\s+at\s/.test(l))
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '')
    .slice(0, max)
    .map((l) => (l.length > REASON_LINE_CHARS ? `${l.slice(0, REASON_LINE_CHARS)}…` : l))
}

function failureReason(status: string, step: string, result: TestStepResult | undefined, name: string) {
  switch (status) {
    case 'UNDEFINED':
      return `undefined step: ${step} (no step definition matches it)`
    case 'PENDING':
      return `pending step: ${step} (its step definition is not implemented yet)`
    case 'UNKNOWN':
      return `did not finish: ${step} has no result`
  }
  const text = result?.exception?.message ?? result?.message ?? ''
  const lines = firstLines(text, REASON_LINES + 1)
  // RequirementBroken messages start with the scenario name and tags, which the report shows already.
  if (lines[0]?.replace(/^[A-Za-z]*Error: /, '').startsWith(name)) lines.shift()
  const head = status === 'AMBIGUOUS' ? `ambiguous step: ${step} (several step definitions match it)` : step
  return [head, ...lines.slice(0, REASON_LINES)].join('\n')
}

/** Applies the expected failures to an outcome. */
export function classify(
  outcome: Outcome,
  expected: ExpectedFailures | undefined,
  targetKind: string | undefined,
): Requirement {
  const { result, finishedAt: _, reason, step, ...rest } = outcome
  const known = expectedFailureFor(expected, outcome.name, targetKind)
  const file = expected?.file ?? 'the expected-failures file'
  const common = { ...rest, ...(step ? { step } : {}) }
  if (result === 'skipped') return { ...common, status: 'not-applicable', reason: reason ?? 'skipped' }
  if (result === 'failed') {
    return known
      ? { ...common, status: 'expected-failure', knownIssue: known.reason, reason: reason ?? 'failed' }
      : { ...common, status: 'fail', reason: reason ?? 'failed' }
  }
  return known
    ? {
        ...common,
        status: 'unexpected-pass',
        knownIssue: known.reason,
        reason: `passes although ${file} lists it as a known failure: remove it from the list`,
      }
    : { ...common, status: 'pass' }
}

const emptyTally = (): Tally => ({
  requirements: 0,
  pass: 0,
  fail: 0,
  notApplicable: 0,
  expectedFailure: 0,
  unexpectedPass: 0,
})
const TALLY_KEY: Record<RequirementStatus, keyof Tally> = {
  pass: 'pass',
  fail: 'fail',
  'not-applicable': 'notApplicable',
  'expected-failure': 'expectedFailure',
  'unexpected-pass': 'unexpectedPass',
}

function count(tally: Tally, status: RequirementStatus) {
  tally.requirements++
  tally[TALLY_KEY[status]]++
}

/** Natural order for tags such as @interface-4.10 after @interface-4.9. */
const byNatural = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true, sensitivity: 'base' })

/**
 * The conformance summary of one or more runs (CI shards): a scenario present in several runs counts
 * once, as its latest finished attempt.
 */
export function summarize(
  runs: readonly (readonly Envelope[])[],
  options: SummaryOptions = {},
): ConformanceSummary {
  const collector = new RunCollector()
  for (const run of runs) for (const envelope of run) collector.add(envelope)
  return summarizeCollected(collector, options)
}

/** The summary of what a collector has seen (the CLI feeds it live, then summarizes). */
export function summarizeCollected(
  collector: RunCollector,
  options: SummaryOptions = {},
): ConformanceSummary {
  const latest = new Map<string, Outcome>()
  for (const outcome of [...collector.outcomes.values(), ...collector.unfinished()]) {
    const key = requirementKey(outcome)
    const seen = latest.get(key)
    if (!seen || outcome.finishedAt >= seen.finishedAt) latest.set(key, outcome)
  }
  const targetKind = options.target?.kind
  // With --fail-fast, the scenarios after the first failure are skipped without a reason: not run, not judged;
  // so are those a broken run never started (they are its run or harness errors, not failures).
  const notRun = [...latest.values()].filter(
    (o) => (options.failFast && isUnexplainedSkip(o)) || o.reason === NOT_STARTED,
  )
  const notStarted = notRun.filter((o) => o.reason === NOT_STARTED).length
  const requirements = [...latest.values()]
    .filter((o) => !notRun.includes(o))
    .sort((a, b) => byNatural(a.uri, b.uri) || a.line - b.line)
    .map((o) => classify(o, options.expected, targetKind))

  const totals = emptyTally()
  const sources = new Map<string, Tally>()
  const capabilities = new Map<string, Tally>()
  for (const r of requirements) {
    count(totals, r.status)
    // A requirement without a spec reference shows up as "(none)", to be tagged.
    for (const tag of r.sources.length ? r.sources : ['(none)']) {
      if (!sources.has(tag)) sources.set(tag, emptyTally())
      count(sources.get(tag) as Tally, r.status)
    }
    for (const tag of r.capabilities.length ? r.capabilities : ['(none)']) {
      if (!capabilities.has(tag)) capabilities.set(tag, emptyTally())
      count(capabilities.get(tag) as Tally, r.status)
    }
  }

  const warnings: string[] = []
  const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`
  const ran = new Set(requirements.map((r) => r.name))
  const compiled = collector.scenarioNames()
  const known = options.knownScenarios
    ? new Set(options.knownScenarios)
    : compiled.size > 0
      ? compiled
      : undefined
  const file = options.expected?.file ?? 'the expected-failures file'
  for (const entry of options.expected?.entries ?? []) {
    if (ran.has(entry.scenario)) continue
    if (known && !known.has(entry.scenario))
      warnings.push(
        `${file} lists "${entry.scenario}", which is no scenario of the suite (renamed or removed?)`,
      )
    else if (!known) warnings.push(`${file} lists "${entry.scenario}", which is not among the scenarios run`)
  }
  if (notRun.length > notStarted)
    warnings.push(
      `${plural(notRun.length - notStarted, 'scenario was', 'scenarios were')} not run: --fail-fast stopped the run at the first failure`,
    )
  if (notStarted > 0)
    warnings.push(
      `${plural(notStarted, 'scenario was', 'scenarios were')} not run: the test run stopped before them (see the run errors)`,
    )
  if (requirements.length === 0 && notRun.length === 0)
    warnings.push('no scenario ran: check the tag expression, shard and paths')

  const problems: string[] = []
  const harnessErrors = [...(options.harnessErrors ?? [])]
  if (harnessErrors.length === 1) problems.push(`harness error: ${harnessErrors[0]}`)
  else if (harnessErrors.length > 1) problems.push(`${harnessErrors.length} harness errors`)
  if (totals.fail > 0) problems.push(`${plural(totals.fail, 'requirement fails', 'requirements fail')}`)
  // Scenarios never started are never a pass: with no error of the run to say why, that is one.
  const runErrors = [...collector.runErrors]
  if (notStarted > 0 && runErrors.length === 0 && harnessErrors.length === 0)
    runErrors.push(`the test run stopped before ${plural(notStarted, 'scenario', 'scenarios')} started`)
  if (runErrors.length) problems.push(`the run broke: ${plural(runErrors.length, 'run error', 'run errors')}`)
  if (options.strict && totals.unexpectedPass > 0)
    problems.push(`${plural(totals.unexpectedPass, 'unexpected pass', 'unexpected passes')} (--strict)`)

  const { start, finish } = collector.span()
  return {
    format: 'vc-harness-conformance/1',
    ...(options.target ? { target: options.target } : {}),
    ...(start !== undefined ? { startedAt: iso(start) } : {}),
    ...(finish !== undefined ? { finishedAt: iso(finish) } : {}),
    ...(start !== undefined && finish !== undefined ? { durationMs: Math.round(finish - start) } : {}),
    runs: collector.runInfo(),
    ...(options.expected?.file ? { expectedFailuresFile: options.expected.file } : {}),
    strict: options.strict ?? false,
    gate: { passed: problems.length === 0, problems },
    totals,
    bySource: [...sources.entries()].sort(([a], [b]) => byNatural(a, b)).map(([tag, t]) => ({ tag, ...t })),
    byCapability: [...capabilities.entries()]
      .sort(([a], [b]) => byNatural(a, b))
      .map(([capability, t]) => ({ capability, ...t })),
    warnings,
    runErrors,
    harnessErrors,
    requirements,
  }
}

/** Why a scenario that a broken run never started has no verdict (the run's errors say why). */
const NOT_STARTED = 'not run: the test run stopped before this scenario (see the run errors)'

/** A skipped scenario no hook gave a reason for: not run (--fail-fast, a dry run), rather than not applicable. */
export const isUnexplainedSkip = (o: Pick<Outcome, 'result' | 'reason'>) =>
  o.result === 'skipped' && o.reason === undefined

/**
 * The exit code of `vc-harness conformance` for a summary: 3 when the harness could not judge (a harness
 * error, or the run broke: a BeforeAll hook, a parse error, scenarios not run), 1 when the gate failed
 * (a requirement failed, an unexpected pass under --strict), else 0. Usage errors (2) never get this far.
 */
export function exitCode(
  summary: Pick<ConformanceSummary, 'gate' | 'runErrors' | 'harnessErrors'>,
): 0 | 1 | 3 {
  if (summary.harnessErrors.length > 0 || summary.runErrors.length > 0) return 3
  return summary.gate.passed ? 0 : 1
}

// Rendering

const LABEL: Record<RequirementStatus, string> = {
  pass: 'pass',
  fail: 'FAIL',
  'not-applicable': 'not applicable',
  'expected-failure': 'expected failure',
  'unexpected-pass': 'UNEXPECTED PASS',
}

/** "75 requirements: 70 pass, 1 fail, 4 not applicable, 0 expected failures, 0 unexpected passes". */
export function totalsLine(t: Tally): string {
  return (
    `${t.requirements} requirement${t.requirements === 1 ? '' : 's'}: ${t.pass} pass, ${t.fail} fail, ${t.notApplicable} not applicable, ` +
    `${t.expectedFailure} expected failure${t.expectedFailure === 1 ? '' : 's'}, ` +
    `${t.unexpectedPass} unexpected pass${t.unexpectedPass === 1 ? '' : 'es'}`
  )
}

const cell = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>')

function reasonCell(r: Requirement): string {
  if (r.status === 'expected-failure') return cell(`Known: ${r.knownIssue}\nFailed at ${r.reason}`)
  if (r.status === 'unexpected-pass') return cell(`${r.reason}\n(listed because: ${r.knownIssue})`)
  return r.reason ? cell(r.reason) : ''
}

const byStatus = (a: Requirement, b: Requirement) =>
  STATUS_ORDER.indexOf(a.status) - STATUS_ORDER.indexOf(b.status) || a.line - b.line

/** The scenarios that took longest, slowest first. */
export function slowest(summary: ConformanceSummary, n = 10): Requirement[] {
  return [...summary.requirements].sort((a, b) => b.durationMs - a.durationMs).slice(0, n)
}

const seconds = (durationMs: number) => `${(durationMs / 1000).toFixed(1)} s`

export interface MarkdownOptions {
  /**
   * What each source tag stands for (features/requirements.json `clauses`): the report lists the tags it
   * uses with their descriptions in its own "Sources" section and links to them there, so a copied or
   * archived report keeps every link (issue 32: a link to ../docs/requirements.md broke once copied).
   */
  catalogue?: Readonly<Record<string, string>>
}

/** The anchor of a source tag in docs/requirements.md and a report's Sources: the tag without its @. */
export const requirementAnchor = (tag: string) => tag.replace(/^@/, '')

/** The implementation-by-requirement matrix (reports/conformance.md). */
export function renderMarkdown(summary: ConformanceSummary, options: MarkdownOptions = {}): string {
  const catalogue = options.catalogue ?? {}
  const link = (tag: string) => (catalogue[tag] !== undefined ? `[${tag}](#${requirementAnchor(tag)})` : tag)
  const out: string[] = ['# Conformance report', '']
  const facts: string[] = []
  if (summary.target) {
    const t = summary.target
    facts.push(
      `Target: **${t.kind}**${t.url ? ` at ${t.url}` : ''}${t.profile ? ` (profile \`${t.profile}\`)` : ''}`,
    )
  }
  if (summary.startedAt) facts.push(`Started: ${summary.startedAt}`)
  if (summary.finishedAt) facts.push(`Finished: ${summary.finishedAt}`)
  if (summary.durationMs !== undefined) facts.push(`Wall time: ${seconds(summary.durationMs)}`)
  if (summary.runs.length > 1) facts.push(`Merged runs: ${summary.runs.length}`)
  out.push(facts.join(' · '), '')
  out.push(`**${totalsLine(summary.totals)}**`, '')
  out.push(
    `Gate: **${summary.gate.passed ? 'passed' : 'FAILED'}**${
      summary.gate.problems.length ? ` (${summary.gate.problems.map(cell).join('; ')})` : ''
    }${summary.strict ? ' — strict: unexpected passes fail the gate' : ''}`,
    '',
  )
  out.push(
    summary.expectedFailuresFile
      ? `Expected failures: \`${summary.expectedFailuresFile}\` (a listed scenario that fails does not fail the gate; one that passes is an unexpected pass to remove from the list).`
      : 'Expected failures: none (no expected-failures file).',
    '',
  )
  const unexpected = summary.requirements.filter((r) => r.status === 'unexpected-pass')
  if (unexpected.length) {
    out.push(`> **Unexpected passes: remove ${unexpected.length === 1 ? 'it' : 'them'} from the list**`, '>')
    for (const r of unexpected) out.push(`> - ${cell(r.name)} (\`${r.uri}:${r.line}\`)`)
    out.push('')
  }
  for (const [title, list] of [
    ['Harness errors', summary.harnessErrors ?? []],
    ['Run errors', summary.runErrors],
    ['Warnings', summary.warnings],
  ] as const) {
    if (!list.length) continue
    out.push(`**${title}**`, '', ...list.map((w) => `- ${cell(w)}`), '')
  }

  const features = new Map<string, Requirement[]>()
  for (const r of summary.requirements) {
    if (!features.has(r.uri)) features.set(r.uri, [])
    features.get(r.uri)?.push(r)
  }
  for (const [uri, list] of features) {
    const first = list[0] as Requirement
    const caps = first.capabilities.length ? ` ${first.capabilities.map((c) => `\`${c}\``).join(' ')}` : ''
    const tally = emptyTally()
    for (const r of list) count(tally, r.status)
    out.push(`## ${cell(first.feature)}${caps}`, '', `\`${uri}\` — ${totalsLine(tally)}`, '')
    out.push('| Requirement | Sources | Result | Reason |', '| --- | --- | --- | --- |')
    for (const r of [...list].sort(byStatus)) {
      const name = `${cell(r.name)} <sub>${uri.split('/').pop()}:${r.line}</sub>`
      const result =
        r.status === 'pass' || r.status === 'not-applicable' ? LABEL[r.status] : `**${LABEL[r.status]}**`
      out.push(`| ${name} | ${r.sources.map(link).join(' ') || '—'} | ${result} | ${reasonCell(r)} |`)
    }
    out.push('')
  }

  if (summary.bySource.length) {
    out.push('## By source', '')
    out.push(
      '| Source | Requirements | Pass | Fail | Not applicable | Expected failure | Unexpected pass |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    )
    for (const s of summary.bySource) {
      out.push(
        `| ${link(s.tag)} | ${s.requirements} | ${s.pass} | ${s.fail} | ${s.notApplicable} | ${s.expectedFailure} | ${s.unexpectedPass} |`,
      )
    }
    out.push('')
  }
  const slow = slowest(summary, 10).filter((r) => r.durationMs > 0)
  if (slow.length) {
    out.push('## Slowest scenarios', '', '| ms | Requirement |', '| ---: | --- |')
    for (const r of slow) out.push(`| ${r.durationMs} | ${cell(r.name)} <sub>${r.uri}:${r.line}</sub> |`)
    out.push('')
  }
  const used = [...new Set(summary.requirements.flatMap((r) => r.sources))]
    .filter((tag) => catalogue[tag] !== undefined)
    .sort(byNatural)
  if (used.length) {
    out.push('## Sources', '')
    for (const tag of used) {
      out.push(`- <a id="${requirementAnchor(tag)}"></a>**${tag}**: ${cell(catalogue[tag] as string)}`)
    }
    out.push('')
  }
  return `${out.join('\n').trimEnd()}\n`
}

/** Groups not-applicable reasons: "4 × needs portal; …". */
function groupedReasons(list: Requirement[]): [string, number][] {
  const counts = new Map<string, number>()
  for (const r of list) counts.set(r.reason ?? 'skipped', (counts.get(r.reason ?? 'skipped') ?? 0) + 1)
  return [...counts.entries()].sort((a, b) => b[1] - a[1])
}

const indent = (text: string, prefix: string) =>
  text
    .split('\n')
    .map((l) => prefix + l)
    .join('\n')

/** The end-of-run summary for the console. `reports` maps a label to a path. */
export function renderConsoleSummary(
  summary: ConformanceSummary,
  options: { reports?: [string, string][]; slowest?: number } = {},
): string {
  const out: string[] = ['']
  const by = (status: RequirementStatus) => summary.requirements.filter((r) => r.status === status)
  const where = (r: Requirement) => `${r.uri}:${r.line}`
  const tags = (r: Requirement) => (r.sources.length ? ` [${r.sources.join(' ')}]` : '')

  for (const error of summary.harnessErrors ?? []) out.push(`Harness error: ${error}`)
  for (const error of summary.runErrors) out.push(`Run error: ${error}`)
  if (summary.runErrors.length || summary.harnessErrors?.length) out.push('')
  const failures = by('fail')
  if (failures.length) {
    out.push(`Failures (${failures.length}):`)
    for (const r of failures) {
      out.push(`  ✘ ${r.name}${tags(r)}`, `      ${where(r)}`, indent(r.reason ?? 'failed', '      '))
    }
    out.push('')
  }
  const unexpected = by('unexpected-pass')
  if (unexpected.length) {
    out.push(
      `Unexpected passes (${unexpected.length}): remove ${unexpected.length === 1 ? 'it' : 'them'} from ${summary.expectedFailuresFile ?? 'the expected-failures file'}${summary.strict ? '' : ` (${unexpected.length === 1 ? 'it fails' : 'they fail'} the gate with --strict)`}:`,
    )
    for (const r of unexpected) out.push(`  ! ${r.name}  (${where(r)}; listed because: ${r.knownIssue})`)
    out.push('')
  }
  const expected = by('expected-failure')
  if (expected.length) {
    out.push(`Expected failures (${expected.length}), known and listed in ${summary.expectedFailuresFile}:`)
    for (const r of expected) out.push(`  ✘ ${r.name}  (${where(r)}): ${r.knownIssue}`)
    out.push('')
  }
  const na = by('not-applicable')
  if (na.length) {
    out.push(`Not applicable (${na.length}):`)
    for (const [reason, n] of groupedReasons(na)) out.push(`  ↷ ${n} × ${reason}`)
    out.push('')
  }
  for (const warning of summary.warnings) out.push(`Warning: ${warning}`)
  if (summary.warnings.length) out.push('')
  const slow = slowest(summary, options.slowest ?? 10).filter((r) => r.durationMs > 0)
  if (slow.length) {
    out.push('Slowest scenarios:')
    for (const r of slow) out.push(`  ${String(r.durationMs).padStart(6)} ms  ${r.name}  (${where(r)})`)
    out.push('')
  }
  if (options.reports?.length) {
    out.push('Reports:')
    const width = Math.max(...options.reports.map(([label]) => label.length))
    for (const [label, path] of options.reports) out.push(`  ${label.padEnd(width)}  ${path}`)
    out.push('')
  }
  const target = summary.target ? ` on the ${summary.target.kind} target` : ''
  const time = summary.durationMs !== undefined ? ` in ${seconds(summary.durationMs)}` : ''
  out.push(`Conformance${target}${time}: ${totalsLine(summary.totals)}`)
  out.push(summary.gate.passed ? 'Gate: passed' : `Gate: FAILED (${summary.gate.problems.join('; ')})`)
  return out.join('\n')
}

// Files

/**
 * Harness errors: what the harness itself could not do (a pre-flight check of the target, a target that
 * does not start, a receiver that cannot listen), as opposed to a requirement the target fails. Code
 * running inside the suite (hooks, steps, in this process or a --parallel worker) writes them to
 * HARNESS_ERROR_FILE in the run's reports folder, one problem per line, before it throws (src/harness/
 * preflight.ts does; recordHarnessError is the shortcut); after the run, `vc-harness conformance` reads the
 * file, reports each line and exits 3. The command names the folder in REPORTS_DIR_ENV for the run and
 * its workers, and removes the file of a previous run before it starts.
 */
export const HARNESS_ERROR_FILE = 'harness-error.txt'
/** The environment variable naming the reports folder of the run under `vc-harness conformance`. */
export const REPORTS_DIR_ENV = 'VC_HARNESS_REPORTS'

/**
 * Appends harness errors (one problem per line; a message's own line breaks become spaces) for the
 * command to report with exit code 3. Returns the file written, or undefined outside `vc-harness
 * conformance` (plain cucumber-js: the thrown error is then all there is). Never throws.
 */
export function recordHarnessError(
  problems: string | readonly string[],
  env: Record<string, string | undefined> = process.env,
): string | undefined {
  const dir = env[REPORTS_DIR_ENV]
  if (!dir) return undefined
  const file = join(dir, HARNESS_ERROR_FILE)
  const lines = (typeof problems === 'string' ? [problems] : problems)
    .map((p) => p.replace(/\s*\n\s*/g, ' ').trim())
    .filter((p) => p !== '')
  try {
    mkdirSync(dir, { recursive: true })
    appendFileSync(file, lines.map((l) => `${l}\n`).join(''))
    return file
  } catch {
    return undefined
  }
}

/** The harness errors recorded in a reports folder during a run: its lines, once each. */
export function readHarnessErrors(dir: string): string[] {
  const file = join(dir, HARNESS_ERROR_FILE)
  if (!existsSync(file)) return []
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
  return [...new Set(lines)]
}

/** Removes a previous run's harness errors before a new run. */
export function clearHarnessErrors(dir: string) {
  rmSync(join(dir, HARNESS_ERROR_FILE), { force: true })
}

/** Parses an ndjson message file; names the file and line of a bad line. */
export function readNdjson(path: string): Envelope[] {
  const text = readFileSync(path, 'utf8')
  const envelopes: Envelope[] = []
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue
    try {
      envelopes.push(JSON.parse(line) as Envelope)
    } catch (error) {
      throw new Error(`${path}:${i + 1}: not a cucumber message (${(error as Error).message})`)
    }
  }
  return envelopes
}

/** Writes conformance.json and conformance.md into outDir; returns their paths. */
export function writeSummary(
  summary: ConformanceSummary,
  outDir: string,
  options: MarkdownOptions = {},
): { json: string; markdown: string } {
  mkdirSync(outDir, { recursive: true })
  const json = join(outDir, 'conformance.json')
  const markdown = join(outDir, 'conformance.md')
  writeFileSync(json, `${JSON.stringify(summary, null, 2)}\n`)
  writeFileSync(markdown, renderMarkdown(summary, options))
  return { json, markdown }
}

/** Builds the summary from one or more ndjson message files (merged shards) and writes it. */
export function writeReports(
  ndjsonPaths: string | readonly string[],
  outDir: string,
  options: SummaryOptions = {},
): { summary: ConformanceSummary; json: string; markdown: string } {
  const paths = typeof ndjsonPaths === 'string' ? [ndjsonPaths] : ndjsonPaths
  const summary = summarize(
    paths.map((p) => readNdjson(p)),
    options,
  )
  return { summary, ...writeSummary(summary, outDir) }
}
