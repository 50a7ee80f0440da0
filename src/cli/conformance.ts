import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, isAbsolute, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { ProgressOptions } from '../harness/progress-formatter.ts'
import {
  type ConformanceSummary,
  RunCollector,
  readNdjson,
  renderConsoleSummary,
  type SummaryOptions,
  summarize,
  summarizeCollected,
  type TargetDescription,
  writeSummary,
} from '../harness/report.ts'
import { type ExpectedFailures, loadExpectedFailures } from '../harness/report-expected.ts'
import { TARGET_KINDS } from '../harness/target.ts'

export const CONFORMANCE_USAGE = `Usage: vc-harness conformance [options]
       vc-harness conformance --report-only FILE.ndjson... [--expected-failures FILE] [--strict] [--reports DIR]

Runs the conformance suite (features/**/*.feature): one requirement per scenario, named after it and
tagged with its source. Prints one line per scenario as it finishes, then a summary, and writes
cucumber.html, cucumber.json, cucumber.xml (JUnit), cucumber.ndjson, conformance.json and conformance.md
to the reports folder. See docs/conformance.md.

Options:
  --target T                embedded, child or external; sets VC_HARNESS_TARGET for the run (see
                            src/harness/target.ts). Default: VC_HARNESS_TARGET, else external with a
                            profile, else embedded
  --profile FILE            JSON profile of an external deployment (URLs, tenant, keys); sets
                            VC_HARNESS_PROFILE
  --tags EXPR               cucumber tag expression, e.g. '@interface-4.1 and not @needs-portal'
  --parallel N              run scenarios in N worker processes, each with its own target
  --shard K/N               run only the feature files whose index i in the sorted list satisfies
                            i % N == K-1 (K from 1 to N); for separate CI jobs, merged with --report-only
  --expected-failures FILE  known failures with reasons; default features/expected-failures.json
  --strict                  an unexpected pass (a listed scenario that passes) fails the gate too
  --reports DIR             where the reports go; default reports
  --report-only FILE...     run nothing: build conformance.json/.md from existing message files
                            (cucumber.ndjson of one run or of several shards)
  -h, --help                show this text

Exit codes: 0 no requirement failed unexpectedly (and, with --strict, no unexpected pass); 1 a requirement
failed, the run broke (e.g. a BeforeAll hook) or an unexpected pass under --strict; 2 bad arguments or a
malformed expected-failures file.`

/** The package root: features/, steps/ and cucumber.mjs live there, wherever the CLI is run from. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PROGRESS_FORMATTER = pathToFileURL(join(ROOT, 'src/harness/progress-formatter.ts')).href

/** An argument error: main maps codes starting with ERR_PARSE_ARGS to exit code 2. */
function usageError(message: string): Error {
  return Object.assign(new TypeError(`${message} (see vc-harness conformance --help)`), {
    code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
  })
}

/** A path as the user would type it: relative to the working folder when inside it. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path)
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path
}

/** Every feature file under features/, as paths relative to the root with forward slashes, sorted. */
export function featureFiles(root = ROOT): string[] {
  const out: string[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.feature')) out.push(path)
    }
  }
  if (existsSync(join(root, 'features'))) walk('features')
  return out.sort()
}

/** The feature files of shard K of N (1-based): those whose index i satisfies i % N === K - 1. */
export function shardFiles(files: readonly string[], shard: { index: number; total: number }): string[] {
  return files.filter((_, i) => i % shard.total === shard.index - 1)
}

export function parseShard(value: string): { index: number; total: number } {
  const match = /^(\d+)\/(\d+)$/.exec(value)
  const index = Number(match?.[1])
  const total = Number(match?.[2])
  if (!match || total < 1 || index < 1 || index > total)
    throw usageError(`--shard: expected K/N with 1 ≤ K ≤ N, e.g. 1/3; got "${value}"`)
  return { index, total }
}

function positiveInteger(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < 1) throw usageError(`${name}: expected a whole number ≥ 1, got "${value}"`)
  return n
}

/** Report label for each cucumber formatter writing a file. */
const FORMAT_LABEL: Record<string, string> = {
  html: 'html',
  json: 'cucumber json',
  junit: 'junit xml',
  message: 'messages (ndjson)',
}

export async function conformance(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      target: { type: 'string' },
      profile: { type: 'string' },
      tags: { type: 'string' },
      parallel: { type: 'string' },
      shard: { type: 'string' },
      'expected-failures': { type: 'string' },
      strict: { type: 'boolean', default: false },
      reports: { type: 'string', default: 'reports' },
      'report-only': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  })
  if (values.help) {
    console.log(CONFORMANCE_USAGE)
    return 0
  }

  const reportOnly = values['report-only']
  if (!reportOnly && positionals.length > 0)
    throw usageError(`unexpected argument "${positionals[0]}" (message files go after --report-only)`)
  if (reportOnly) {
    if (positionals.length === 0) throw usageError('--report-only: name at least one .ndjson message file')
    for (const option of ['tags', 'parallel', 'shard'] as const) {
      if (values[option] !== undefined) throw usageError(`--${option} does not apply with --report-only`)
    }
  }
  const profile = values.profile !== undefined ? resolve(values.profile) : undefined
  if (profile !== undefined && !existsSync(profile))
    throw usageError(`--profile: no such file: ${values.profile}`)
  const profileInUse = profile ?? process.env.VC_HARNESS_PROFILE
  // The same default as src/harness/target.ts: a profile describes an external deployment.
  const targetKind =
    values.target || process.env.VC_HARNESS_TARGET || (profileInUse ? 'external' : 'embedded')
  if (!(TARGET_KINDS as readonly string[]).includes(targetKind))
    throw usageError(
      `--target: expected ${TARGET_KINDS.join(', ')}; got "${targetKind}"${values.target ? '' : ' (from VC_HARNESS_TARGET)'}`,
    )
  if (profile && targetKind !== 'external')
    throw usageError(
      `--profile describes an external deployment; it does not apply to the ${targetKind} target`,
    )
  const parallel = positiveInteger('--parallel', values.parallel)
  const shard = values.shard !== undefined ? parseShard(values.shard) : undefined
  const reportsDir = resolve(values.reports)
  const expectedFile = values['expected-failures']
    ? resolve(values['expected-failures'])
    : join(ROOT, 'features/expected-failures.json')
  // A missing default file means no known failures; a file that was named must exist.
  const expected: ExpectedFailures =
    values['expected-failures'] || existsSync(expectedFile)
      ? loadExpectedFailures(expectedFile, shown(expectedFile))
      : { entries: [] }

  const url = targetKind === 'external' ? externalUrl(profileInUse) : undefined
  const target: TargetDescription = {
    kind: targetKind,
    ...(profileInUse && targetKind === 'external' ? { profile: shown(resolve(profileInUse)) } : {}),
    ...(url ? { url } : {}),
  }
  const summaryOptions: SummaryOptions = {
    expected,
    target,
    strict: values.strict,
    knownScenarios: await scenarioNames(),
  }

  if (reportOnly) {
    const files = positionals.map((p) => resolve(p))
    for (const [i, file] of files.entries()) {
      if (!existsSync(file)) throw usageError(`--report-only: no such file: ${positionals[i]}`)
    }
    const summary = summarize(
      files.map((f) => readNdjson(f)),
      summaryOptions,
    )
    return finish(summary, reportsDir, [])
  }

  // The run: environment for the hooks (this process when serial, the workers when parallel).
  process.env.VC_HARNESS_TARGET = targetKind
  if (profile) process.env.VC_HARNESS_PROFILE = profile
  const env: Record<string, string | undefined> = { ...process.env }
  if (parallel && !/\btsx\b/.test(`${env.NODE_OPTIONS ?? ''} ${process.execArgv.join(' ')}`)) {
    // Workers are fresh node processes (forked with this process's execArgv and the env below): they need
    // tsx to import the TypeScript steps, which bin/vc-harness.mjs registered in this process only.
    env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --import ${import.meta.resolve('tsx')}`.trim()
  }

  const { loadConfiguration, runCucumber } = await import('@cucumber/cucumber/api')
  const environment = { cwd: ROOT, env, stdout: process.stdout, stderr: process.stderr }
  const { runConfiguration } = await loadConfiguration(
    {
      // Relative: cucumber joins it to the environment's cwd (ROOT).
      file: 'cucumber.mjs',
      provided: {
        ...(values.tags !== undefined ? { tags: values.tags } : {}),
        ...(parallel ? { parallel } : {}),
      },
    },
    environment,
  )
  const header = [`vc-harness conformance: ${targetKind} target`]
  if (values.tags) header.push(`tags ${values.tags}`)
  if (parallel) header.push(`${parallel} workers`)
  if (shard) {
    const files = shardFiles(featureFiles(), shard)
    header.push(
      `shard ${shard.index}/${shard.total} (${files.length ? files.join(', ') : 'no feature file'})`,
    )
    console.log(header.join(', '))
    if (files.length === 0) {
      const summary = summarizeCollected(new RunCollector(), summaryOptions)
      summary.warnings.push(`shard ${shard.index}/${shard.total} holds no feature file: nothing to run`)
      return finish(summary, reportsDir, [])
    }
    runConfiguration.sources.paths = files
  }
  // Cucumber's own reports go to the reports folder under their usual names.
  const files: Record<string, string> = {}
  const cucumberReports: [string, string][] = []
  for (const [path, type] of Object.entries(runConfiguration.formats.files)) {
    const moved = join(reportsDir, basename(path))
    files[moved] = type
    cucumberReports.push([FORMAT_LABEL[type] ?? type, moved])
  }
  runConfiguration.formats.files = files
  // Our progress lines replace the console formatter of cucumber.mjs (progress bar or summary).
  runConfiguration.formats.stdout = PROGRESS_FORMATTER
  const progress: ProgressOptions = { expected, targetKind }
  runConfiguration.formats.options = {
    ...runConfiguration.formats.options,
    vcHarness: JSON.parse(JSON.stringify(progress)),
  }

  if (!shard) console.log(header.join(', '))
  const collector = new RunCollector()
  try {
    await runCucumber(runConfiguration, environment, (envelope) => collector.add(envelope))
  } catch (error) {
    // A BeforeAll hook that throws (e.g. an external target missing its settings) stops a serial run here.
    const cause = (error as Error).cause
    const known = cause instanceof Error && collector.runErrors.some((e) => e.includes(cause.message))
    const why = cause instanceof Error && !known ? `: ${cause.message}` : ''
    collector.runError(`the test run stopped: ${(error as Error).message}${why}`)
    // Anything else (a step file that does not load, a formatter that throws) needs its stack to be fixed.
    if (!known) console.error(error)
  }
  return finish(summarizeCollected(collector, summaryOptions), reportsDir, cucumberReports)
}

/** Writes conformance.json/.md, prints the summary and the report paths; the exit code. */
function finish(
  summary: ConformanceSummary,
  reportsDir: string,
  cucumberReports: [string, string][],
): number {
  const { json, markdown } = writeSummary(summary, reportsDir)
  const reports: [string, string][] = [
    ...cucumberReports.map(([label, path]): [string, string] => [label, shown(path)]),
    ['conformance.md', shown(markdown)],
    ['conformance.json', shown(json)],
  ]
  console.log(renderConsoleSummary(summary, { reports }))
  return summary.gate.passed ? 0 : 1
}

/** The external deployment's login URL, for the report: the variable, else the profile's auth_url. */
function externalUrl(profile: string | undefined): string | undefined {
  if (process.env.VC_HARNESS_AUTH_URL) return process.env.VC_HARNESS_AUTH_URL
  if (!profile) return undefined
  try {
    const data = JSON.parse(readFileSync(profile, 'utf8')) as { auth_url?: unknown }
    return typeof data.auth_url === 'string' ? data.auth_url : undefined
  } catch {
    return undefined // the target reports a bad profile when the run starts
  }
}

/** Every scenario name of the suite (no tag filter), to tell a renamed listed scenario from an unselected one. */
async function scenarioNames(): Promise<string[] | undefined> {
  const files = featureFiles()
  if (files.length === 0) return undefined
  const { loadSources } = await import('@cucumber/cucumber/api')
  const { plan } = await loadSources(
    { paths: files, defaultDialect: 'en', names: [], tagExpression: '', order: 'defined' },
    { cwd: ROOT, stderr: process.stderr },
  )
  return plan.map((p) => p.name)
}
