// Cucumber's reports told the gate's way. Cucumber knows passed, failed and skipped; the gate also knows
// expected failures (a listed scenario that fails: not a failure), not-applicable requirements (skipped,
// for a reason) and unexpected passes (a failure under --strict). After a run, `vc-harness conformance`
// rewrites each report so that its counts are the gate's and each such requirement carries its state and
// reason:
//
//   JUnit XML      written here from the summary: <failure> for exactly the requirements that fail the gate,
//                  <skipped message="expected failure: …">, <skipped message="not applicable: …">,
//                  <error> for run and harness errors; the steps in <system-out>
//   cucumber.json  each scenario annotated ("vc_harness": status, reason, sources); an expected failure's
//                  failing step reads "skipped" with the known issue first in its error_message
//   cucumber.html  titled after the project and the target, a summary panel on top, and the embedded
//                  messages rewritten the same way (annotateEnvelopes), so the page's counts are the gate's
//
// The message file (cucumber.ndjson) stays as cucumber wrote it: it is the record --report-only reads.
// Everything but finishCucumberReports is pure (test/report-formats.test.ts).

import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Envelope, Pickle, TestStepResult } from '@cucumber/messages'
import {
  type ConformanceSummary,
  type Requirement,
  requirementKey,
  type StepLine,
  totalsLine,
} from './report.ts'

/** The project's name for its reports. */
export const REPORT_TITLE = 'vc-harness conformance report'

/** Does the requirement count as a failure of the gate? (A fail, or an unexpected pass under --strict.) */
export const failsGate = (r: Requirement, summary: Pick<ConformanceSummary, 'strict'>) =>
  r.status === 'fail' || (r.status === 'unexpected-pass' && summary.strict)

/**
 * What a report says of a requirement whose cucumber status is not its gate status; undefined for a pass
 * and a plain failure, which cucumber already tells right.
 */
export function statusNote(
  r: Requirement,
  summary: Pick<ConformanceSummary, 'strict' | 'expectedFailuresFile'>,
): string | undefined {
  const file = summary.expectedFailuresFile ?? 'the expected-failures file'
  switch (r.status) {
    case 'expected-failure':
      return `expected failure: ${r.knownIssue ?? 'listed as a known failure'}`
    case 'not-applicable':
      return `not applicable: ${r.reason ?? 'skipped'}`
    case 'unexpected-pass':
      return `unexpected pass${summary.strict ? ' (--strict: fails the gate)' : ''}: ${file} lists it as a known failure (${r.knownIssue}); it passes: remove it from the list`
    default:
      return undefined
  }
}

/** The title of a report: the project, the target and its profile. */
export function reportTitle(summary: Pick<ConformanceSummary, 'target'>): string {
  const t = summary.target
  if (!t) return REPORT_TITLE
  const at = t.url ? ` at ${t.url}` : ''
  const profile = t.profile ? `, profile ${t.profile}` : ''
  return `${REPORT_TITLE}: ${t.kind} target${at}${profile}`
}

// Messages (the HTML report embeds them)

type Json = Record<string, unknown>
const statusOf = (e: Envelope) => `${e.testStepFinished?.testStepResult.status ?? ''}`

function withResult(envelope: Envelope, result: Partial<TestStepResult>): Envelope {
  const finished = envelope.testStepFinished as NonNullable<Envelope['testStepFinished']>
  const { exception: _, ...kept } = finished.testStepResult
  return { testStepFinished: { ...finished, testStepResult: { ...kept, ...result } } } as Envelope
}

/** The original error of a failed step result, for the message that now leads with the known issue. */
function resultText(result: TestStepResult): string {
  return result.exception?.stackTrace ?? result.exception?.message ?? result.message ?? `${result.status}`
}

/**
 * The envelopes of a run with each final attempt told the gate's way: an expected failure's failing step
 * becomes SKIPPED with the message "expected failure: <known issue>" and its error attached to it as text
 * ("The known failure (FAILED): …"); a not-applicable scenario's
 * skipped step says "not applicable: <reason>"; an unexpected pass gets a note attached to its last step,
 * and under --strict that step fails with it. Other envelopes are returned as they are (not copied).
 */
export function annotateEnvelopes(
  envelopes: readonly Envelope[],
  summary: Pick<ConformanceSummary, 'requirements' | 'strict' | 'expectedFailuresFile'>,
): Envelope[] {
  const requirements = new Map(summary.requirements.map((r) => [requirementKey(r), r]))
  const pickles = new Map<string, Pickle>()
  const pickleOfCase = new Map<string, string>()
  const caseOfStart = new Map<string, string>()
  const steps = new Map<string, number[]>()
  const finals: { started: string; finishedAt: number }[] = []
  for (const [i, e] of envelopes.entries()) {
    if (e.pickle) pickles.set(e.pickle.id, e.pickle)
    else if (e.testCase) pickleOfCase.set(e.testCase.id, e.testCase.pickleId)
    else if (e.testCaseStarted) caseOfStart.set(e.testCaseStarted.id, e.testCaseStarted.testCaseId)
    else if (e.testStepFinished) {
      const id = e.testStepFinished.testCaseStartedId
      steps.set(id, [...(steps.get(id) ?? []), i])
    } else if (e.testCaseFinished && !e.testCaseFinished.willBeRetried)
      finals.push({ started: e.testCaseFinished.testCaseStartedId, finishedAt: i })
  }
  const out = [...envelopes]
  const inserts = new Map<number, Envelope>()
  for (const { started, finishedAt } of finals) {
    const pickle = pickles.get(pickleOfCase.get(caseOfStart.get(started) ?? '') ?? '')
    if (!pickle) continue
    const r = requirements.get(
      requirementKey({ uri: pickle.uri, line: pickle.location?.line ?? 0, name: pickle.name }),
    )
    const note = r && statusNote(r, summary)
    const indices = steps.get(started) ?? []
    if (!r || !note || indices.length === 0) continue
    const attach = (testStepId: string | undefined, body: string) =>
      inserts.set(finishedAt, {
        attachment: {
          testCaseStartedId: started,
          testStepId,
          body,
          mediaType: 'text/plain',
          contentEncoding: 'IDENTITY',
        },
      } as Envelope)
    if (r.status === 'expected-failure') {
      const i = indices.find((j) => !['PASSED', 'SKIPPED'].includes(statusOf(out[j] as Envelope)))
      if (i === undefined) continue
      const finished = (out[i] as Envelope).testStepFinished
      const result = finished?.testStepResult as TestStepResult
      // The step reads skipped with the known issue; the failure itself stays readable, attached to it.
      out[i] = withResult(out[i] as Envelope, {
        status: 'SKIPPED' as TestStepResult['status'],
        message: note,
      })
      attach(finished?.testStepId, `The known failure (${result.status}):\n${resultText(result)}`)
    } else if (r.status === 'not-applicable') {
      const i = indices.find((j) => statusOf(out[j] as Envelope) === 'SKIPPED')
      if (i !== undefined) out[i] = withResult(out[i] as Envelope, { message: note })
    } else if (r.status === 'unexpected-pass') {
      const last = indices.at(-1) as number
      if (summary.strict)
        out[last] = withResult(out[last] as Envelope, {
          status: 'FAILED' as TestStepResult['status'],
          message: note,
        })
      else attach((out[last] as Envelope).testStepFinished?.testStepId, note)
    }
  }
  if (inserts.size === 0) return out
  return out.flatMap((e, i) => {
    const before = inserts.get(i)
    return before ? [before, e] : [e]
  })
}

// cucumber.json

/**
 * cucumber.json (an array of features with their scenario elements) told the gate's way: each scenario
 * gains "vc_harness" {status, reason?, known_issue?, sources}; an expected failure's failing step reads
 * "skipped" with the known issue first in its error_message, a not-applicable scenario's skipped step
 * carries the reason, a strict unexpected pass fails its last step. Returns a new document.
 */
export function annotateCucumberJson(
  document: unknown,
  summary: Pick<ConformanceSummary, 'requirements' | 'strict' | 'expectedFailuresFile'>,
): unknown {
  if (!Array.isArray(document)) return document
  const requirements = new Map(summary.requirements.map((r) => [requirementKey(r), r]))
  return document.map((feature: Json) => {
    const uri = String(feature.uri ?? '')
    const elements = Array.isArray(feature.elements) ? (feature.elements as Json[]) : []
    return {
      ...feature,
      elements: elements.map((element) => {
        const r = requirements.get(
          requirementKey({ uri, line: Number(element.line), name: String(element.name ?? '') }),
        )
        if (!r) return element
        const note = statusNote(r, summary)
        const steps = (Array.isArray(element.steps) ? (element.steps as Json[]) : []).map((s) => ({
          ...s,
          result: { ...(s.result as Json) },
        }))
        const status = (s: Json) => String((s.result as Json).status ?? '')
        if (r.status === 'expected-failure') {
          const failing = steps.find((s) => !['passed', 'skipped'].includes(status(s)))
          if (failing) {
            const result = failing.result as Json
            result.error_message = `${note}\n\nThe known failure (${result.status}):\n${result.error_message ?? ''}`
            result.status = 'skipped'
          }
        } else if (r.status === 'not-applicable') {
          const skipped = steps.find((s) => status(s) === 'skipped')
          if (skipped) (skipped.result as Json).error_message = note
        } else if (r.status === 'unexpected-pass' && summary.strict) {
          const last = steps.at(-1)
          if (last) Object.assign(last.result as Json, { status: 'failed', error_message: note })
        }
        return {
          ...element,
          steps,
          vc_harness: {
            status: r.status,
            ...(note ? { reason: note } : r.status === 'fail' && r.reason ? { reason: r.reason } : {}),
            ...(r.knownIssue ? { known_issue: r.knownIssue } : {}),
            sources: r.sources,
          },
        }
      }),
    }
  })
}

// JUnit XML

// Characters XML 1.0 cannot carry at all; they are dropped.
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters to remove
const XML_INVALID = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g
const xmlAttr = (text: string) =>
  text
    .replace(XML_INVALID, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/\n/g, '&#10;')
    .replace(/\r/g, '&#13;')
    .replace(/\t/g, '&#9;')
const cdata = (text: string) =>
  `<![CDATA[${text.replace(XML_INVALID, '').replace(/]]>/g, ']]]]><![CDATA[>')}]]>`
const attrs = (list: [string, string | number | undefined][]) =>
  list
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${xmlAttr(String(v))}"`)
    .join('')
const secs = (ms: number) => (ms / 1000).toFixed(3)
const firstLine = (text: string) => text.split('\n').find((l) => l.trim() !== '') ?? text
/** The first two lines of a reason on one line: the step and what was expected. */
const headline = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, 2)
    .map((l) => l.trim())
    .join(' / ')

/** One line per step, dotted to its status, as cucumber's JUnit formatter prints them. */
function stepsText(steps: readonly StepLine[]): string {
  return steps.map((s) => `${`${s.text}.`.padEnd(76, '.')}${s.status}`).join('\n')
}

/**
 * The JUnit XML report: one <testsuite> per feature, one <testcase> per requirement. `failures` counts
 * exactly the requirements that fail the gate; expected failures and not-applicable requirements are
 * <skipped> with their state and reason in `message`; run errors and harness errors are <error>s of a
 * testsuite of their own. `steps` (RunCollector.steps) fills each testcase's <system-out>.
 */
export function renderJunit(
  summary: ConformanceSummary,
  steps: ReadonlyMap<string, readonly StepLine[]> = new Map(),
): string {
  const features = new Map<string, Requirement[]>()
  for (const r of summary.requirements) features.set(r.uri, [...(features.get(r.uri) ?? []), r])
  const errors = [
    ...(summary.harnessErrors ?? []).map((e) => ['harness error', e] as const),
    ...summary.runErrors.map((e) => ['run error', e] as const),
  ]
  const count = (list: Requirement[]) => ({
    tests: list.length,
    failures: list.filter((r) => failsGate(r, summary)).length,
    skipped: list.filter((r) => r.status === 'expected-failure' || r.status === 'not-applicable').length,
    time: list.reduce((t, r) => t + r.durationMs, 0),
  })
  const all = count(summary.requirements)
  const t = summary.target
  const properties = [
    ['vc-harness.target', t?.kind],
    ['vc-harness.url', t?.url],
    ['vc-harness.profile', t?.profile],
    ['vc-harness.expected-failures', summary.expectedFailuresFile],
    ['vc-harness.strict', String(summary.strict)],
    ['vc-harness.gate', summary.gate.passed ? 'passed' : `FAILED (${summary.gate.problems.join('; ')})`],
    ['vc-harness.totals', totalsLine(summary.totals)],
  ].filter((p): p is [string, string] => p[1] !== undefined)
  const propertiesXml = [
    '    <properties>',
    ...properties.map(
      ([name, value]) =>
        `      <property${attrs([
          ['name', name],
          ['value', value],
        ])}/>`,
    ),
    '    </properties>',
  ]
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attrs([
      ['name', reportTitle(summary)],
      ['tests', all.tests + errors.length],
      ['failures', all.failures],
      ['errors', errors.length],
      ['skipped', all.skipped],
      ['time', secs(summary.durationMs ?? all.time)],
      ['timestamp', summary.startedAt],
    ])}>`,
  ]
  if (errors.length) {
    out.push(
      `  <testsuite${attrs([
        ['name', 'vc-harness run'],
        ['tests', errors.length],
        ['failures', 0],
        ['errors', errors.length],
        ['skipped', 0],
        ['time', '0.000'],
      ])}>`,
      ...propertiesXml,
    )
    for (const [i, [kind, message]] of errors.entries()) {
      out.push(
        `    <testcase${attrs([
          ['classname', 'vc-harness run'],
          ['name', `${kind} ${i + 1}: ${firstLine(message)}`],
          ['time', '0.000'],
        ])}>`,
        `      <error${attrs([
          ['message', `${kind}: ${firstLine(message)}`],
          ['type', kind],
        ])}>${cdata(message)}</error>`,
        '    </testcase>',
      )
    }
    out.push('  </testsuite>')
  }
  for (const [uri, list] of features) {
    const c = count(list)
    out.push(
      `  <testsuite${attrs([
        ['name', (list[0] as Requirement).feature],
        ['file', uri],
        ['tests', c.tests],
        ['failures', c.failures],
        ['errors', 0],
        ['skipped', c.skipped],
        ['time', secs(c.time)],
      ])}>`,
      ...propertiesXml,
    )
    for (const r of list) {
      out.push(
        `    <testcase${attrs([
          ['classname', r.feature],
          ['name', r.name],
          ['file', r.uri],
          ['line', r.line],
          ['time', secs(r.durationMs)],
        ])}>`,
      )
      const note = statusNote(r, summary)
      if (failsGate(r, summary)) {
        const message = note ?? headline(r.reason ?? 'failed')
        out.push(
          `      <failure${attrs([
            ['message', message],
            ['type', r.status],
          ])}>${cdata(r.reason ?? message)}</failure>`,
        )
      } else if (r.status === 'expected-failure') {
        out.push(`      <skipped${attrs([['message', note]])}>${cdata(r.reason ?? '')}</skipped>`)
      } else if (r.status === 'not-applicable') {
        out.push(`      <skipped${attrs([['message', note]])}/>`)
      }
      const lines = steps.get(requirementKey(r)) ?? []
      const text = [
        ...(lines.length ? [stepsText(lines)] : []),
        ...(r.status === 'unexpected-pass' && !summary.strict && note ? [note] : []),
      ]
      if (text.length) out.push(`      <system-out>${cdata(text.join('\n\n'))}</system-out>`)
      out.push('    </testcase>')
    }
    out.push('  </testsuite>')
  }
  out.push('</testsuites>')
  return `${out.join('\n')}\n`
}

// HTML

const html = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

const MESSAGES_START = 'window.CUCUMBER_MESSAGES = ['
const MESSAGES_END = '];\n</script>'

const HEADER_CSS = `
.vch{font-family:ui-sans-serif,system-ui,sans-serif;margin:1em;padding:1em 1.25em;border:1px solid #ddd;border-radius:4px;background:#fafafa;color:#222}
.vch h1{font-size:1.4em;margin:0 0 .4em}.vch p{margin:.3em 0}.vch ul{margin:.3em 0 .6em;padding-left:1.4em}
.vch .gate-passed{color:#11772b;font-weight:bold}.vch .gate-failed{color:#b3261e;font-weight:bold}
.vch summary{cursor:pointer;font-weight:600;margin-top:.4em}.vch code{font-size:.9em}.vch small{color:#555}
`

/** The summary panel at the top of the HTML report. */
export function renderHtmlHeader(summary: ConformanceSummary): string {
  const t = summary.target
  const facts: string[] = []
  if (t)
    facts.push(
      `Target: <b>${html(t.kind)}</b>${t.url ? ` at ${html(t.url)}` : ''}${t.profile ? `, profile <code>${html(t.profile)}</code>` : ''}`,
    )
  if (summary.startedAt) facts.push(`started ${html(summary.startedAt)}`)
  if (summary.durationMs !== undefined) facts.push(`wall time ${(summary.durationMs / 1000).toFixed(1)} s`)
  const by = (status: Requirement['status']) => summary.requirements.filter((r) => r.status === status)
  const where = (r: Requirement) => `<small>${html(r.uri)}:${r.line}</small>`
  const section = (title: string, items: string[], open = false) =>
    items.length
      ? `<details${open ? ' open' : ''}><summary>${html(title)} (${items.length})</summary><ul>${items.map((i) => `<li>${i}</li>`).join('')}</ul></details>`
      : ''
  const na = new Map<string, number>()
  for (const r of by('not-applicable'))
    na.set(r.reason ?? 'skipped', (na.get(r.reason ?? 'skipped') ?? 0) + 1)
  const gate = summary.gate.passed
    ? '<span class="gate-passed">Gate: passed</span>'
    : `<span class="gate-failed">Gate: FAILED</span> (${html(summary.gate.problems.join('; '))})`
  return [
    '<header class="vch">',
    `<h1>${html(REPORT_TITLE)}</h1>`,
    facts.length ? `<p>${facts.join(' · ')}</p>` : '',
    `<p><b>${html(totalsLine(summary.totals))}</b></p>`,
    `<p>${gate}${summary.strict ? ' — strict: unexpected passes fail the gate' : ''}</p>`,
    section(
      'Harness errors',
      (summary.harnessErrors ?? []).map((e) => html(e)),
      true,
    ),
    section(
      'Run errors',
      summary.runErrors.map((e) => html(e)),
      true,
    ),
    section(
      'Failures',
      by('fail').map((r) => `${html(r.name)} ${where(r)}: ${html(firstLine(r.reason ?? 'failed'))}`),
      true,
    ),
    section(
      'Unexpected passes: remove them from the list',
      by('unexpected-pass').map(
        (r) => `${html(r.name)} ${where(r)} (listed because: ${html(r.knownIssue ?? '')})`,
      ),
      true,
    ),
    section(
      'Expected failures',
      by('expected-failure').map((r) => `${html(r.name)} ${where(r)}: ${html(r.knownIssue ?? '')}`),
    ),
    section(
      'Not applicable',
      [...na.entries()].map(([reason, n]) => `${n} × ${html(reason)}`),
    ),
    section(
      'Warnings',
      summary.warnings.map((w) => html(w)),
    ),
    '<p><small>Below, every scenario as cucumber ran it: expected failures and not-applicable requirements show as skipped, with their state and reason on the step.</small></p>',
    '</header>',
  ]
    .filter((l) => l !== '')
    .join('\n')
}

/**
 * cucumber.html told the gate's way: the project's title, the summary panel, and `envelopes` (the run's,
 * annotated) in place of the embedded messages. A page not shaped as expected keeps its messages.
 */
export function annotateHtml(
  page: string,
  envelopes: readonly Envelope[],
  summary: ConformanceSummary,
): string {
  let out = page.replace(/<title>[^<]*<\/title>/, () => `<title>${html(reportTitle(summary))}</title>`)
  out = out.replace('</head>', () => `\t<style>${HEADER_CSS}</style>\n</head>`)
  out = out.replace(/<body>\n?/, (body) => `${body}${renderHtmlHeader(summary)}\n`)
  const start = out.indexOf(MESSAGES_START)
  const end = start < 0 ? -1 : out.indexOf(MESSAGES_END, start)
  if (start < 0 || end < 0) return out
  // As @cucumber/html-formatter writes them: JSON with < escaped for the script element.
  const messages = envelopes.map((e) => JSON.stringify(e).replace(/</g, '\\x3C')).join(',')
  return `${out.slice(0, start + MESSAGES_START.length)}${messages}${out.slice(end)}`
}

// Files

const isEmptyFile = (path: string) => existsSync(path) && statSync(path).size === 0

/**
 * Rewrites the report files of a finished run (JUnit written from the summary, cucumber.json and
 * cucumber.html annotated) and removes any report file a broken run left empty. `files` maps each path
 * to its cucumber format; returns the paths that exist afterwards.
 */
export function finishCucumberReports(
  files: Readonly<Record<string, string>>,
  summary: ConformanceSummary,
  run: { envelopes: readonly Envelope[]; steps: ReadonlyMap<string, readonly StepLine[]> },
): string[] {
  const kept: string[] = []
  let annotated: Envelope[] | undefined
  for (const [path, type] of Object.entries(files)) {
    if (type === 'junit') {
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(path, renderJunit(summary, run.steps))
    } else if (isEmptyFile(path)) {
      rmSync(path, { force: true })
      continue
    } else if (type === 'json' && existsSync(path)) {
      let document: unknown
      try {
        document = JSON.parse(readFileSync(path, 'utf8'))
      } catch {
        // A run that broke while writing: leave the file as it is.
      }
      if (document !== undefined)
        writeFileSync(path, `${JSON.stringify(annotateCucumberJson(document, summary), null, 2)}\n`)
    } else if (type === 'html' && existsSync(path)) {
      annotated ??= annotateEnvelopes(run.envelopes, summary)
      writeFileSync(path, annotateHtml(readFileSync(path, 'utf8'), annotated, summary))
    }
    if (existsSync(path)) kept.push(path)
  }
  return kept
}
