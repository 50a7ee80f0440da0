// The reports of a server test run, as the wallet test's: JSON (the run as it is), Markdown (a requirement per
// case, its clauses, the verdict's reason and every exchange) and JUnit (a testcase per case: a failure with
// its reason, a skipped one for "not applicable"), plus the console lines. Exchanges are masked when
// recorded (exchanges.ts); nothing here adds a secret.

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cell, fenced, seconds, xml } from '../wallet-test/report.ts'
import { exchangeLine } from './exchanges.ts'
import { SERVER_PLAN_TITLES } from './plans.ts'
import type { ServerCaseResult, ServerTestRun } from './runner.ts'

const mark = (r: ServerCaseResult) =>
  r.verdict.pass ? 'PASS' : r.verdict.outcome === 'not-applicable' ? 'n/a' : '**FAIL**'

function details(r: ServerCaseResult): string {
  return [
    `case: ${r.id}${r.misbehave ? ` (misbehaviour ${r.misbehave})` : ''}`,
    `expected: ${r.passes}`,
    `outcome: ${r.verdict.outcome}`,
    ...r.observed.map((o) => `observed: ${o}`),
    ...r.exchanges.map((e) => `exchange: ${exchangeLine(e)}`),
  ].join('\n')
}

export function renderServerJunit(run: ServerTestRun): string {
  const name = `${run.plan}-test`
  const out = ['<?xml version="1.0" encoding="UTF-8"?>']
  out.push(
    `<testsuites name="vc-harness ${name}" tests="${run.totals.cases}" failures="${run.totals.fail}" skipped="${run.totals.notApplicable}" time="${seconds(run.durationMs)}">`,
    `  <testsuite name="${xml(run.plan)}" tests="${run.totals.cases}" failures="${run.totals.fail}" skipped="${run.totals.notApplicable}" time="${seconds(run.durationMs)}">`,
  )
  for (const r of run.results) {
    out.push(
      `    <testcase classname="${xml(`${name}.${run.plan}`)}" name="${xml(`${r.title} [${r.sources.join(' ')}]`)}" time="${seconds(r.durationMs)}">`,
    )
    if (r.verdict.outcome === 'not-applicable')
      out.push(`      <skipped message="${xml(r.verdict.reason)}"/>`)
    else if (!r.verdict.pass)
      out.push(
        `      <failure message="${xml(r.verdict.reason)}" type="${xml(r.misbehave ?? 'positive')}">${xml(details(r))}</failure>`,
      )
    else out.push(`      <system-out>${xml(`${r.verdict.reason}\n${details(r)}`)}</system-out>`)
    out.push('    </testcase>')
  }
  out.push('  </testsuite>', '</testsuites>')
  return `${out.join('\n')}\n`
}

export function renderServerMarkdown(run: ServerTestRun): string {
  const what = run.plan === 'issuer' ? 'issuer' : 'verifier'
  const out = [`# ${what === 'issuer' ? 'Issuer' : 'Verifier'} test report`, '']
  out.push(
    `Target: ${cell(run.target)} · Plan: **${run.plan}** (${SERVER_PLAN_TITLES[run.plan]}) · Started: ${run.startedAt} · Wall time: ${(run.durationMs / 1000).toFixed(1)} s`,
    '',
    `**${run.totals.cases} cases: ${run.totals.pass} pass, ${run.totals.fail} fail, ${run.totals.notApplicable} not applicable** — ${
      run.passed
        ? `the ${what} behaved correctly in every case that applies`
        : run.totals.pass === 0 && run.totals.fail === 0
          ? 'no case applied: nothing was tested'
          : `the ${what} did NOT behave correctly`
    }`,
    '',
    '| Requirement | Sources | Misbehaviour | Result | Outcome | Reason |',
    '| --- | --- | --- | --- | --- | --- |',
  )
  for (const r of run.results) {
    out.push(
      `| ${cell(r.title)} <sub>${r.id}</sub> | ${r.sources.join(' ')} | ${r.misbehave ?? '—'} | ${mark(r)} | ${r.verdict.outcome} | ${cell(r.verdict.reason)} |`,
    )
  }
  out.push('', '## Exchanges per case', '')
  for (const r of run.results) {
    out.push(
      `### ${cell(r.title)} (\`${r.id}\`): ${mark(r)}`,
      '',
      `- What passes: ${r.passes}`,
      `- Reason: ${r.verdict.reason}`,
    )
    for (const o of r.observed) out.push(`- Observed: ${o}`)
    if (r.exchanges.length > 0) {
      out.push(
        '',
        ...fenced(
          r.exchanges
            .map(
              (e) =>
                `${exchangeLine(e)}${e.request ? `\n    sent: ${e.request}` : ''}${e.response ? `\n    answered: ${e.response}` : ''}`,
            )
            .join('\n'),
        ),
      )
    }
    out.push('')
  }
  return `${out.join('\n').trimEnd()}\n`
}

/** Writes <plan>-test.json, .md and .xml into `dir`; returns label → path. */
export function writeServerTestReports(run: ServerTestRun, dir: string): [string, string][] {
  mkdirSync(dir, { recursive: true })
  const base = `${run.plan}-test`
  const files: [string, string, string][] = [
    ['JSON', `${base}.json`, `${JSON.stringify(run, null, 2)}\n`],
    ['Markdown', `${base}.md`, renderServerMarkdown(run)],
    ['JUnit', `${base}.xml`, renderServerJunit(run)],
  ]
  return files.map(([label, name, text]) => {
    const path = join(dir, name)
    writeFileSync(path, text)
    return [label, path]
  })
}

export function serverCaseLine(r: ServerCaseResult, index: number, total: number): string {
  const sign = r.verdict.pass ? '✔' : r.verdict.outcome === 'not-applicable' ? '–' : '✘'
  return `${sign} [${index}/${total}] ${r.title} (${r.id})\n      ${r.verdict.pass || r.verdict.outcome === 'not-applicable' ? '' : 'FAIL: '}${r.verdict.reason}`
}

export function renderServerSummary(run: ServerTestRun, reports: [string, string][]): string {
  const out = ['']
  const failed = run.results.filter((r) => !r.verdict.pass && r.verdict.outcome !== 'not-applicable')
  if (failed.length) {
    out.push(`Failures (${failed.length}):`)
    for (const r of failed)
      out.push(`  ✘ ${r.title} [${r.sources.join(' ')}]`, `      ${r.id}: ${r.verdict.reason}`)
    out.push('')
  }
  out.push('Reports:')
  for (const [label, path] of reports) out.push(`  ${label.padEnd(8)}  ${path}`)
  out.push(
    '',
    `${run.plan === 'issuer' ? 'Issuer' : 'Verifier'} test in ${(run.durationMs / 1000).toFixed(1)} s: ${run.totals.cases} cases: ${run.totals.pass} pass, ${run.totals.fail} fail, ${run.totals.notApplicable} not applicable`,
    run.passed
      ? 'Verdict: PASSED (every case that applies)'
      : run.totals.pass === 0 && run.totals.fail === 0
        ? 'Verdict: FAILED (no case applied: nothing was tested)'
        : 'Verdict: FAILED',
  )
  return out.join('\n')
}
