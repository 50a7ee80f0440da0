// The reports of a wallet test run, like the conformance suite's: JSON (the run as it is), Markdown (a
// requirement per case with its clauses and the reason of every verdict) and JUnit (a testcase per case,
// a failure with its reason), plus the console summary.

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { redactPatterns } from '../redact.ts'
import { PLAN_TITLES } from './plans.ts'
import type { CaseResult, WalletTestRun } from './runner.ts'

export const xml = (s: string) =>
  s
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    // XML 1.0 has no place for most control characters (a wallet's output may carry them).
    // biome-ignore lint/suspicious/noControlCharactersInRegex: that is the point
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
export const cell = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ')
export const seconds = (ms: number) => (ms / 1000).toFixed(3)

/** The most of a wallet's output a report keeps (a command driver already keeps only its tail). */
const OUTPUT_MAX = 4000
/** The most of the wallet's own reason a table cell shows: one line, not its log. */
const REASON_MAX = 300

/**
 * A wallet command's output as the reports show it: its tail, with secret-shaped values masked (a vendor's
 * wallet may log an access token or a pre-authorized code; src/harness/redact.ts).
 */
export function walletOutput(r: CaseResult): string | undefined {
  return r.output === undefined ? undefined : redactPatterns(r.output.slice(-OUTPUT_MAX))
}

/** A line that reads as the wallet saying why it stopped. */
const REFUSAL_WORDS =
  /\b(error|fail(ed|s|ure)?|refus\w*|reject\w*|invalid\w*|denied|declin\w*|cannot|can't|unable|untrusted|expired|mismatch\w*|not)\b/i

/**
 * The wallet's own reason for not completing a case (a non-zero exit, or stopped at the window's end): the
 * last line of its output that reads as an error (a CLI's stderr line comes last), else its last line;
 * masked and bounded. Undefined when the wallet exited 0 or said nothing.
 */
export function walletReason(r: CaseResult): string | undefined {
  const output = walletOutput(r)
  if (output === undefined || r.exitCode === 0) return undefined
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /[A-Za-z]/.test(line))
  const line = [...lines].reverse().find((l) => REFUSAL_WORDS.test(l)) ?? lines.at(-1)
  if (line === undefined) return undefined
  return line.length > REASON_MAX ? `${line.slice(0, REASON_MAX - 1)}…` : line
}

/** Inline code for a Markdown table cell: no backtick can end it early. */
export const inlineCode = (s: string) => `\`${cell(s.replaceAll('`', "'"))}\``

/** A fenced block longer than any backtick run inside it. */
export function fenced(text: string): string[] {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const fence = '`'.repeat(longest + 1)
  return [`${fence}text`, text, fence]
}

/** "every case" or, for a run stopped early, "every case judged". */
const judgedWord = (run: WalletTestRun) => (run.interrupted ? 'every case judged' : 'every case')

function byPlan(run: WalletTestRun): Map<string, CaseResult[]> {
  const plans = new Map<string, CaseResult[]>()
  for (const r of run.results) {
    if (!plans.has(r.plan)) plans.set(r.plan, [])
    plans.get(r.plan)?.push(r)
  }
  return plans
}

export function renderJunit(run: WalletTestRun): string {
  const out = ['<?xml version="1.0" encoding="UTF-8"?>']
  out.push(
    `<testsuites name="vc-harness wallet-test" tests="${run.totals.cases}" failures="${run.totals.fail}" time="${seconds(run.durationMs)}">`,
  )
  for (const [plan, results] of byPlan(run)) {
    const failures = results.filter((r) => !r.verdict.pass).length
    const time = results.reduce((t, r) => t + r.durationMs, 0)
    out.push(
      `  <testsuite name="${xml(plan)}" tests="${results.length}" failures="${failures}" time="${seconds(time)}">`,
    )
    for (const r of results) {
      out.push(
        `    <testcase classname="${xml(`wallet-test.${plan}`)}" name="${xml(`${r.title} [${r.sources.join(' ')}]`)}" time="${seconds(r.durationMs)}">`,
      )
      const details = [
        `case: ${r.id}${r.fault ? ` (fault ${r.fault})` : ''}`,
        `expected: ${r.passes}`,
        `outcome: ${r.verdict.outcome}`,
        ...r.verdict.observed.map((o) => `observed: ${o}`),
        ...(r.output ? [`wallet output:\n${walletOutput(r)}`] : []),
      ].join('\n')
      if (!r.verdict.pass) {
        out.push(
          `      <failure message="${xml(r.verdict.reason)}" type="${xml(r.fault ?? 'positive')}">${xml(details)}</failure>`,
        )
      } else {
        out.push(`      <system-out>${xml(`${r.verdict.reason}\n${details}`)}</system-out>`)
      }
      out.push('    </testcase>')
    }
    out.push('  </testsuite>')
  }
  out.push('</testsuites>')
  return `${out.join('\n')}\n`
}

export function renderMarkdown(run: WalletTestRun): string {
  const out = ['# Wallet test report', '']
  out.push(
    `Wallet: \`${cell(run.wallet)}\` · Plan: **${run.plan}** · Service: ${run.serviceUrl} · Started: ${run.startedAt} · Wall time: ${(run.durationMs / 1000).toFixed(1)} s`,
    '',
  )
  out.push(
    `**${run.totals.cases} cases: ${run.totals.pass} pass, ${run.totals.fail} fail** — ${
      run.totals.cases === 0
        ? 'no case was judged'
        : `the wallet ${run.passed ? 'behaved correctly' : 'did NOT behave correctly'} in ${judgedWord(run)}`
    }`,
    '',
  )
  if (run.interrupted) {
    out.push(
      `**Interrupted** (stopped by hand) after ${run.totals.cases} of ${run.interrupted.planned} cases: the others did not run, and the case in progress was not judged.`,
      '',
    )
  }
  for (const [plan, results] of byPlan(run)) {
    out.push(`## ${plan}: ${PLAN_TITLES[plan as keyof typeof PLAN_TITLES] ?? plan}`, '')
    out.push(
      '| Requirement | Sources | Fault | Result | Outcome | Reason |',
      '| --- | --- | --- | --- | --- | --- |',
    )
    for (const r of results) {
      // "the wallet command exited 1" says that it refused; its own words say why.
      const said = walletReason(r)
      out.push(
        `| ${cell(r.title)} <sub>${r.id}</sub> | ${r.sources.join(' ')} | ${r.fault ?? '—'} | ${r.verdict.pass ? 'PASS' : '**FAIL**'} | ${r.verdict.outcome} | ${cell(r.verdict.reason)}${said ? `<br>the wallet said: ${inlineCode(said)}` : ''} |`,
      )
    }
    out.push('')
  }
  const failed = run.results.filter((r) => !r.verdict.pass)
  if (failed.length) {
    out.push('## Failures in detail', '')
    for (const r of failed) {
      out.push(
        `### ${cell(r.title)} (\`${r.id}\`)`,
        '',
        `- Sources: ${r.sources.join(' ')}`,
        `- What passes: ${r.passes}`,
      )
      out.push(`- Reason: ${r.verdict.reason}`)
      const said = walletReason(r)
      if (said) out.push(`- The wallet said: ${inlineCode(said)}`)
      out.push(`- Observed:`)
      for (const o of r.verdict.observed) out.push(`  - ${o}`)
      const output = walletOutput(r)
      if (output) out.push('', ...fenced(output))
      out.push('')
    }
  }
  return `${out.join('\n').trimEnd()}\n`
}

/** Writes wallet-test.json, wallet-test.md and wallet-test.xml into `dir`; returns label → path. */
export function writeWalletTestReports(run: WalletTestRun, dir: string): [string, string][] {
  mkdirSync(dir, { recursive: true })
  // The JSON is the run as it is, but for the wallets' output, masked as in the other two reports.
  const json = {
    ...run,
    results: run.results.map((r) => (r.output === undefined ? r : { ...r, output: walletOutput(r) })),
  }
  const files: [string, string, string][] = [
    ['JSON', 'wallet-test.json', `${JSON.stringify(json, null, 2)}\n`],
    ['Markdown', 'wallet-test.md', renderMarkdown(run)],
    ['JUnit', 'wallet-test.xml', renderJunit(run)],
  ]
  return files.map(([label, name, text]) => {
    const path = join(dir, name)
    writeFileSync(path, text)
    return [label, path]
  })
}

/** One line per case as it finishes. */
export function caseLine(r: CaseResult, index: number, total: number): string {
  const mark = r.verdict.pass ? '✔' : '✘'
  return `${mark} [${index}/${total}] ${r.title} (${r.id})\n      ${r.verdict.pass ? '' : 'FAIL: '}${r.verdict.reason}`
}

/** The end-of-run summary for the console. */
export function renderConsoleSummary(run: WalletTestRun, reports: [string, string][] = []): string {
  const out = ['']
  const failed = run.results.filter((r) => !r.verdict.pass)
  if (failed.length) {
    out.push(`Failures (${failed.length}):`)
    for (const r of failed)
      out.push(`  ✘ ${r.title} [${r.sources.join(' ')}]`, `      ${r.id}: ${r.verdict.reason}`)
    out.push('')
  }
  if (reports.length) {
    out.push('Reports:')
    const width = Math.max(...reports.map(([label]) => label.length))
    for (const [label, path] of reports) out.push(`  ${label.padEnd(width)}  ${path}`)
    out.push('')
  }
  if (run.interrupted) {
    out.push(
      `Interrupted after ${run.totals.cases} of ${run.interrupted.planned} cases: the others did not run (the case in progress was not judged).`,
    )
  }
  out.push(
    `Wallet test (${run.plan}) in ${(run.durationMs / 1000).toFixed(1)} s: ${run.totals.cases} cases: ${run.totals.pass} pass, ${run.totals.fail} fail`,
  )
  out.push(
    run.passed
      ? `Verdict: the wallet behaved correctly in ${judgedWord(run)}`
      : run.totals.cases === 0
        ? 'Verdict: FAILED (no case was judged)'
        : 'Verdict: FAILED',
  )
  return out.join('\n')
}
