import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, isAbsolute, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { Envelope } from '@cucumber/messages'
import { parse as parseTagExpression } from '@cucumber/tag-expressions'
import { CHILD_INSTANCES_ENV, parseChildInstances, requireSharedDatabase } from '../harness/child-target.ts'
import { didYouMean, externalProblems, TargetConfigError } from '../harness/profile.ts'
import type { ProgressOptions } from '../harness/progress-formatter.ts'
import {
  type ConformanceSummary,
  clearHarnessErrors,
  exitCode,
  HARNESS_ERROR_FILE,
  REPORTS_DIR_ENV,
  RunCollector,
  readHarnessErrors,
  readNdjson,
  renderConsoleSummary,
  type SummaryOptions,
  summarizeCollected,
  type TargetDescription,
  writeSummary,
} from '../harness/report.ts'
import { type ExpectedFailures, loadExpectedFailures } from '../harness/report-expected.ts'
import { finishCucumberReports, renderJunit } from '../harness/report-formats.ts'
import { loadScenarios, type ScenarioInfo } from '../harness/scenarios.ts'
import { TARGET_KINDS } from '../harness/target.ts'

export const CONFORMANCE_USAGE = `Usage: vc-harness conformance [options] [FEATURE[:LINE]...]
       vc-harness conformance --list [options] [FEATURE[:LINE]...]
       vc-harness conformance --report-only FILE.ndjson... [--expected-failures FILE] [--strict] [--reports DIR]

Runs the conformance suite (features/**/*.feature): one requirement per scenario, named after it and
tagged with its source (docs/requirements.md). Prints one line per scenario as it finishes, then a summary,
and writes cucumber.html, cucumber.json, cucumber.xml (JUnit), cucumber.ndjson, conformance.json and
conformance.md to the reports folder. See docs/conformance.md.

Selecting (a selection of no scenario is an error):
  FEATURE[:LINE]...         feature files or folders, e.g. features/auth/login.feature:13 (the scenario or
                            outline row at that line); default every feature file
  --tags EXPR               cucumber tag expression, e.g. '@interface-4.1 and not @needs-portal'
  --name REGEXP             only scenarios whose name matches; repeat it for any of several
  --shard K/N               run only the feature files whose index i in the sorted list satisfies
                            i % N == K-1 (K from 1 to N); for separate CI jobs, merged with --report-only
  --list                    print the selected scenarios (file:line, name, tags) and exit; runs nothing

Running:
  --target T                embedded, child or external; sets VC_HARNESS_TARGET for the run (see
                            src/harness/target.ts). Default: VC_HARNESS_TARGET, else external with a
                            profile, else embedded
  --profile FILE            JSON profile of an external deployment (URLs, tenant, keys); sets
                            VC_HARNESS_PROFILE; checked before the run, every problem at once
  --instances N             child target: N serve instances on one database behind a round-robin proxy,
                            so consecutive requests of a flow reach different instances; sets
                            VC_HARNESS_CHILD_INSTANCES (default 1). N > 1 needs VC_HARNESS_DATABASE_URL
                            (PostgreSQL): the children's SQLite files cannot be shared
  --parallel N              run scenarios in N worker processes, each with its own target
  --retry N                 run a failing scenario up to N more times; its last attempt counts
  --fail-fast               stop at the first failure; the scenarios after it are reported as not run
  --dry-run                 run no step: check that every step of the selection has one definition;
                            writes no report (only those asked for with --format)

Reports:
  --reports DIR             where the reports go; default reports
  --format FORMAT[:PATH]    another cucumber formatter, added to ours (repeatable); PATH is relative to
                            the working folder; without PATH it replaces the progress lines on stdout
  --expected-failures FILE  known failures with reasons; default features/expected-failures.json
  --strict                  an unexpected pass (a listed scenario that passes) fails the gate too
  --report-only FILE...     run nothing: build the reports from existing message files (cucumber.ndjson
                            of one run or of several shards): conformance.json/.md and cucumber.xml
  -h, --help                show this text

Exit codes:
  0  the gate passed: every requirement passed, is not applicable or is a listed expected failure
     (and, with --strict, no unexpected pass); --list and --help
  1  the gate failed: a requirement failed, or passed unexpectedly under --strict; a dry run found a
     step without a definition
  2  usage error: bad arguments, a filter that selects no scenario, a malformed tag expression, an
     invalid profile, a malformed expected-failures file
  3  harness error: the harness could not judge the target (a pre-flight check failed, the target did
     not start, a feature file does not parse, the run broke); see <reports>/${HARNESS_ERROR_FILE}`

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

function wholeNumber(name: string, value: string): number {
  if (!/^\d+$/.test(value)) throw usageError(`${name}: expected a whole number ≥ 0, got "${value}"`)
  return Number(value)
}

function positiveInteger(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < 1) throw usageError(`${name}: expected a whole number ≥ 1, got "${value}"`)
  return n
}

/**
 * The child target's instance count: --instances, else VC_HARNESS_CHILD_INSTANCES, else 1. More than one
 * needs VC_HARNESS_DATABASE_URL when the run starts a target (`running`; not for --list or --dry-run).
 */
function childInstances(option: string | undefined, running: boolean): number {
  const value = option ?? process.env[CHILD_INSTANCES_ENV]
  const origin = option !== undefined ? `--instances ${option}` : `${CHILD_INSTANCES_ENV}=${value}`
  try {
    const instances = parseChildInstances(value, origin)
    // Only a run starts instances: --list and --dry-run need no database.
    if (running) requireSharedDatabase(instances, process.env, origin)
    return instances
  } catch (error) {
    if (error instanceof TargetConfigError) throw usageError(error.message)
    throw error
  }
}

/** Report label for each cucumber formatter writing a file. */
const FORMAT_LABEL: Record<string, string> = {
  html: 'html',
  json: 'cucumber json',
  junit: 'junit xml',
  message: 'messages (ndjson)',
}

/**
 * Issue 32: a subset run replaced the full run's reports without a word. When the folder holds the reports of
 * a run of more requirements than this one selects, says so before anything is written.
 */
function replacedRun(reportsDir: string, selected: number): string | undefined {
  let earlier: { totals?: { requirements?: unknown }; startedAt?: unknown }
  try {
    earlier = JSON.parse(readFileSync(join(reportsDir, 'conformance.json'), 'utf8'))
  } catch {
    return undefined // no earlier run, or nothing readable to lose
  }
  const before = earlier.totals?.requirements
  if (typeof before !== 'number' || before <= selected) return undefined
  const when = typeof earlier.startedAt === 'string' ? ` of ${earlier.startedAt}` : ''
  return `${shown(reportsDir)} holds the reports of a run${when} of ${before} requirements; this run of ${selected} replaces them (--reports DIR keeps both)`
}

/**
 * One cucumber HTML report of several runs (CI shards; issue 32: the merged report had none). Cucumber's own
 * formatter renders messages by their ids, which are unique across runs; of the messages each run has once,
 * the first run's `meta` and `testRunStarted` and the last run's `testRunFinished` are kept.
 */
async function writeMergedHtml(runs: readonly (readonly Envelope[])[], path: string): Promise<void> {
  const { CucumberHtmlStream } = await import('@cucumber/html-formatter')
  const { createWriteStream } = await import('node:fs')
  const { pipeline } = await import('node:stream/promises')
  const { Readable } = await import('node:stream')
  const all = runs.flat()
  const lastFinished = all.filter((e) => e.testRunFinished).at(-1)
  const merged = all.filter(
    (e, i) =>
      (!e.meta || all.findIndex((f) => f.meta) === i) &&
      (!e.testRunStarted || all.findIndex((f) => f.testRunStarted) === i) &&
      (!e.testRunFinished || e === lastFinished),
  )
  await pipeline(Readable.from(merged), new CucumberHtmlStream(), createWriteStream(path))
}

/** What each source tag stands for: conformance.md lists the tags it uses with these descriptions. */
const CATALOGUE = join(ROOT, 'features/requirements.json')

function readCatalogue(): Record<string, string> {
  try {
    const clauses = (JSON.parse(readFileSync(CATALOGUE, 'utf8')) as { clauses?: unknown }).clauses
    return clauses && typeof clauses === 'object' ? (clauses as Record<string, string>) : {}
  } catch {
    return {} // a report without descriptions is still a report
  }
}

/** Splits a cucumber format option, FORMAT[:PATH], as cucumber-js does for its usual spellings. */
export function splitFormat(value: string): [string, string | undefined] {
  const quoted = /^"([^"]*)"(?::"?([^"]*)"?)?$/.exec(value)
  if (quoted) return [quoted[1] as string, quoted[2] || undefined]
  // A formatter module given as a file URL or a Windows path keeps the colon of its scheme or drive.
  const prefix = /^(file:\/{2,3}(?:[a-zA-Z]:[/\\])?|[a-zA-Z]:[/\\])/.exec(value)?.[0] ?? ''
  const rest = value.slice(prefix.length)
  const colon = rest.indexOf(':')
  if (colon < 0) return [value, undefined]
  return [prefix + rest.slice(0, colon), rest.slice(colon + 1) || undefined]
}

/** A FEATURE[:LINE...] argument: the path with its lines split off. */
function splitFeaturePath(value: string): { path: string; lines: string } {
  const match = /^(.*?)((?::\d+)*)$/.exec(value) as RegExpExecArray
  return { path: match[1] as string, lines: match[2] ?? '' }
}

/** The tags of a tag expression, for "did you mean" when it selects nothing. */
const tagsOf = (expression: string) => [...new Set(expression.match(/@[^\s()]+/g) ?? [])]

interface Selection {
  /** The scenarios the filters select, in run order, with their tags. */
  scenarios: ScenarioInfo[]
  /** Gherkin parse errors of the selected files (the run reports them). */
  parseErrors: string[]
}

/** What cucumber itself selects with these filters (paths with lines, names, tags), with each scenario's tags. */
async function select(coordinates: {
  paths: string[]
  names: string[]
  tagExpression: string
}): Promise<Selection> {
  const { loadSources } = await import('@cucumber/cucumber/api')
  const { plan, errors } = await loadSources(
    { ...coordinates, defaultDialect: 'en', order: 'defined' },
    { cwd: ROOT, stderr: process.stderr },
  )
  const uris = [...new Set(plan.map((p) => p.uri))]
  const byKey = new Map(loadScenarios(uris, ROOT).scenarios.map((s) => [`${s.uri}:${s.line}:${s.name}`, s]))
  const scenarios = plan.map(
    (p): ScenarioInfo =>
      byKey.get(`${p.uri}:${p.location.line}:${p.name}`) ?? {
        name: p.name,
        uri: p.uri,
        line: p.location.line,
        feature: p.uri,
        tags: [],
        sources: [],
        capabilities: [],
        needs: [],
      },
  )
  return { scenarios, parseErrors: errors.map((e) => `${e.uri}:${e.location.line}: ${e.message}`) }
}

export async function conformance(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      target: { type: 'string' },
      profile: { type: 'string' },
      tags: { type: 'string' },
      name: { type: 'string', multiple: true },
      parallel: { type: 'string' },
      instances: { type: 'string' },
      shard: { type: 'string' },
      retry: { type: 'string' },
      'fail-fast': { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      list: { type: 'boolean', default: false },
      format: { type: 'string', multiple: true },
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
  if (reportOnly) {
    if (positionals.length === 0) throw usageError('--report-only: name at least one .ndjson message file')
    for (const option of [
      'tags',
      'name',
      'parallel',
      'instances',
      'shard',
      'retry',
      'fail-fast',
      'dry-run',
      'list',
      'format',
    ] as const) {
      const value = values[option]
      if (value !== undefined && value !== false)
        throw usageError(`--${option} does not apply with --report-only`)
    }
  }
  const listOnly = values.list
  const profile = values.profile !== undefined ? resolve(values.profile) : undefined
  if (profile !== undefined && !existsSync(profile))
    throw usageError(`--profile: no such file: ${values.profile}`)
  const profileInUse = profile ?? (process.env.VC_HARNESS_PROFILE || undefined)
  // The same default as src/harness/target.ts: a profile describes an external deployment.
  const targetKind =
    values.target || process.env.VC_HARNESS_TARGET || (profileInUse ? 'external' : 'embedded')
  if (!(TARGET_KINDS as readonly string[]).includes(targetKind))
    throw usageError(
      `--target: expected ${TARGET_KINDS.join(', ')}; got "${targetKind}"${values.target ? '' : ' (from VC_HARNESS_TARGET)'}`,
    )
  if (profileInUse && targetKind !== 'external')
    throw usageError(
      `${profile ? '--profile' : 'VC_HARNESS_PROFILE'} describes an external deployment; it does not apply to the ${targetKind} target`,
    )
  const parallel = positiveInteger('--parallel', values.parallel)
  if (values.instances !== undefined && targetKind !== 'child')
    throw usageError(`--instances applies to the child target only, not to the ${targetKind} target`)
  const instances =
    targetKind === 'child'
      ? childInstances(values.instances, !listOnly && !reportOnly && !values['dry-run'])
      : 1
  const retry = values.retry === undefined ? undefined : wholeNumber('--retry', values.retry)
  const shard = values.shard !== undefined ? parseShard(values.shard) : undefined
  if (shard && positionals.length > 0 && !reportOnly)
    throw usageError('--shard splits the whole suite by feature file; it does not combine with feature paths')
  const reportsDir = resolve(values.reports)

  // The filters, checked before anything runs.
  const tagExpression = values.tags ?? ''
  if (values.tags !== undefined) checkTagExpression(values.tags)
  const names = values.name ?? []
  for (const name of names) {
    try {
      new RegExp(name)
    } catch (error) {
      throw usageError(`--name: "${name}" is not a regular expression: ${(error as Error).message}`)
    }
  }
  const paths = reportOnly ? [] : positionals.map(featurePath)
  const formats = (values.format ?? []).map(userFormat)

  // The external target's settings, checked before anything runs: every problem at once.
  if (targetKind === 'external' && !listOnly && !reportOnly && !values['dry-run']) {
    const problems = externalProblems({
      ...process.env,
      ...(profile ? { VC_HARNESS_PROFILE: profile } : {}),
    })
    if (problems.length > 0) throw profileError(problems)
  }

  const expectedFile = values['expected-failures']
    ? resolve(values['expected-failures'])
    : join(ROOT, 'features/expected-failures.json')
  // A missing default file means no known failures; a file that was named must exist.
  const expected: ExpectedFailures =
    !listOnly && (values['expected-failures'] || existsSync(expectedFile))
      ? loadExpectedFailures(expectedFile, shown(expectedFile))
      : { entries: [] }

  const url = targetKind === 'external' ? externalUrl(profileInUse) : undefined
  const target: TargetDescription = {
    kind: targetKind,
    ...(profileInUse && targetKind === 'external' ? { profile: shown(resolve(profileInUse)) } : {}),
    ...(url ? { url } : {}),
  }
  const suite = loadScenarios(featureFiles(), ROOT)
  const summaryOptions: SummaryOptions = {
    expected,
    target,
    strict: values.strict,
    ...(suite.scenarios.length ? { knownScenarios: suite.scenarios.map((s) => s.name) } : {}),
  }

  if (reportOnly) {
    const files = positionals.map((p) => resolve(p))
    for (const [i, file] of files.entries()) {
      if (!existsSync(file)) throw usageError(`--report-only: no such file: ${positionals[i]}`)
    }
    const collector = new RunCollector()
    const runs = files.map((file) => readNdjson(file))
    for (const run of runs) for (const envelope of run) collector.add(envelope)
    const summary = summarizeCollected(collector, summaryOptions)
    mkdirSync(reportsDir, { recursive: true })
    const junit = join(reportsDir, 'cucumber.xml')
    writeFileSync(junit, renderJunit(summary, collector.steps))
    const html = join(reportsDir, 'cucumber.html')
    await writeMergedHtml(runs, html)
    return finish(summary, reportsDir, [
      [FORMAT_LABEL.html as string, html],
      [FORMAT_LABEL.junit as string, junit],
    ])
  }

  // What the filters select, over the whole suite (a shard may hold none of it: that is no error).
  const selection = await select({
    paths: paths.length ? paths : ['features/**/*.feature'],
    names,
    tagExpression,
  })
  if (selection.scenarios.length === 0 && selection.parseErrors.length === 0)
    throw emptySelection({ tags: values.tags, names, paths: positionals }, suite.scenarios)
  const shardFileList = shard ? shardFiles(featureFiles(), shard) : undefined
  const selected = shardFileList
    ? selection.scenarios.filter((s) => shardFileList.includes(s.uri))
    : selection.scenarios

  if (listOnly) {
    printList(selected)
    const filters = describeFilters({ tags: values.tags, names, paths: positionals })
    console.error(
      `${selected.length} scenario${selected.length === 1 ? '' : 's'}${filters ? ` selected by ${filters}` : ''}${shard ? ` in shard ${shard.index}/${shard.total}` : ''}`,
    )
    return 0
  }

  if (!values['dry-run']) {
    const replaced = replacedRun(reportsDir, selected.length)
    if (replaced) console.error(`Warning: ${replaced}`)
  }

  // The run: environment for the hooks (this process when serial, the workers when parallel).
  process.env.VC_HARNESS_TARGET = targetKind
  if (values.instances !== undefined) process.env[CHILD_INSTANCES_ENV] = String(instances)
  if (profile) process.env.VC_HARNESS_PROFILE = profile
  // Harness errors (pre-flight checks) go to <reports>/harness-error.txt: see recordHarnessError.
  process.env[REPORTS_DIR_ENV] = reportsDir
  if (!values['dry-run']) mkdirSync(reportsDir, { recursive: true })
  clearHarnessErrors(reportsDir)
  const env: Record<string, string | undefined> = { ...process.env }
  if (parallel && !/\btsx\b/.test(`${env.NODE_OPTIONS ?? ''} ${process.execArgv.join(' ')}`)) {
    // Workers are fresh node processes (forked with this process's execArgv and the env below): they need
    // tsx to import the TypeScript steps, which bin/vc-harness.mjs registered in this process only.
    env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --import ${import.meta.resolve('tsx')}`.trim()
  }

  const { loadConfiguration, runCucumber } = await import('@cucumber/cucumber/api')
  const environment = { cwd: ROOT, env, stdout: process.stdout, stderr: process.stderr }
  // Relative: cucumber joins it to the environment's cwd (ROOT).
  const { runConfiguration } = await loadConfiguration({ file: 'cucumber.mjs' }, environment)
  const dryRun = values['dry-run']
  const failFast = values['fail-fast']
  runConfiguration.sources = {
    ...runConfiguration.sources,
    ...(paths.length ? { paths } : {}),
    ...(names.length ? { names } : {}),
    ...(values.tags !== undefined ? { tagExpression } : {}),
  }
  runConfiguration.runtime = {
    ...runConfiguration.runtime,
    ...(parallel ? { parallel } : {}),
    ...(retry !== undefined ? { retry } : {}),
    ...(failFast ? { failFast } : {}),
    ...(dryRun ? { dryRun } : {}),
  }

  const header = [
    `vc-harness conformance: ${targetKind} target${instances > 1 ? ` (${instances} instances behind a round-robin proxy)` : ''}`,
  ]
  if (positionals.length) header.push(positionals.join(' '))
  if (values.tags) header.push(`tags ${values.tags}`)
  for (const name of names) header.push(`name /${name}/`)
  if (parallel) header.push(`${parallel} workers`)
  if (retry) header.push(`retry ${retry}`)
  if (failFast) header.push('fail fast')
  if (dryRun) header.push('dry run')
  if (shard && shardFileList) {
    header.push(
      `shard ${shard.index}/${shard.total} (${shardFileList.length ? shardFileList.join(', ') : 'no feature file'})`,
    )
    console.log(header.join(', '))
    if (selected.length === 0) {
      const summary = summarizeCollected(new RunCollector(), summaryOptions)
      summary.warnings.push(
        shardFileList.length
          ? `shard ${shard.index}/${shard.total} holds none of the selected scenarios: nothing to run`
          : `shard ${shard.index}/${shard.total} holds no feature file: nothing to run`,
      )
      return finish(summary, reportsDir, [])
    }
    runConfiguration.sources.paths = shardFileList
  }

  // Cucumber's own reports go to the reports folder under their usual names (none on a dry run); the
  // formats asked for with --format are added where they were asked for.
  const files: Record<string, string> = {}
  if (!dryRun) {
    for (const [path, type] of Object.entries(runConfiguration.formats.files))
      files[join(reportsDir, basename(path))] = type
  }
  let stdoutFormat: string | undefined
  for (const [type, path] of formats) {
    if (path) files[path] = type
    else stdoutFormat = type
  }
  const cucumberReports: [string, string][] = Object.entries(files).map(([path, type]) => [
    FORMAT_LABEL[type] ?? type,
    path,
  ])
  // vc-harness writes the JUnit reports itself, from the summary (report-formats.ts); on a dry run, cucumber does.
  runConfiguration.formats.files = dryRun
    ? files
    : Object.fromEntries(Object.entries(files).filter(([, type]) => type !== 'junit'))
  // Our progress lines replace the console formatter of cucumber.mjs (progress bar or summary), unless
  // --format names another.
  runConfiguration.formats.stdout = stdoutFormat ?? PROGRESS_FORMATTER
  const progress: ProgressOptions = { expected, targetKind, dryRun, failFast }
  runConfiguration.formats.options = {
    ...runConfiguration.formats.options,
    vcHarness: JSON.parse(JSON.stringify(progress)),
  }

  if (!shard) console.log(header.join(', '))
  const collector = new RunCollector()
  const envelopes: Envelope[] = []
  try {
    await runCucumber(runConfiguration, environment, (envelope) => {
      envelopes.push(envelope)
      collector.add(envelope)
    })
  } catch (error) {
    // A BeforeAll hook that throws (e.g. the target does not start) stops a serial run here.
    // A harness error (pre-flight) or a hook failure the messages reported already is not printed again.
    const cause = (error as Error).cause
    const head = cause instanceof Error ? (cause.message.split('\n')[0] ?? '').slice(0, 200) : undefined
    const known =
      cause instanceof Error &&
      (cause.name === 'HarnessError' || collector.runErrors.some((e) => e.includes(head as string)))
    const why = cause instanceof Error && !known ? `: ${cause.message}` : ''
    collector.runError(`the test run stopped: ${(error as Error).message}${why}`)
    // Anything else (a step file that does not load, a formatter that throws) needs its stack to be fixed.
    if (!known) console.error(error)
  }
  if (dryRun) {
    const kept = finishCucumberReports(
      Object.fromEntries(Object.entries(files).filter(([, type]) => type !== 'junit')),
      summarizeCollected(collector, summaryOptions),
      { envelopes: [], steps: new Map() },
    )
    return dryRunResult(
      collector,
      cucumberReports.filter(([, path]) => kept.includes(path) || existsSync(path)),
    )
  }
  const summary = summarizeCollected(collector, {
    ...summaryOptions,
    failFast,
    harnessErrors: readHarnessErrors(reportsDir),
  })
  const kept = finishCucumberReports(files, summary, { envelopes, steps: collector.steps })
  return finish(
    summary,
    reportsDir,
    cucumberReports.filter(([, path]) => kept.includes(path)),
  )
}

/** Writes conformance.json/.md, prints the summary and the report paths; the exit code (report.ts exitCode). */
function finish(
  summary: ConformanceSummary,
  reportsDir: string,
  cucumberReports: [string, string][],
): number {
  const { json, markdown } = writeSummary(summary, reportsDir, { catalogue: readCatalogue() })
  const reports: [string, string][] = [
    ...cucumberReports.map(([label, path]): [string, string] => [label, shown(path)]),
    ['conformance.md', shown(markdown)],
    ['conformance.json', shown(json)],
  ]
  console.log(renderConsoleSummary(summary, { reports }))
  const code = exitCode(summary)
  if (code === 3)
    console.log(
      `Exit code 3: the harness could not judge the target${summary.harnessErrors.length ? ` (see ${shown(join(reportsDir, HARNESS_ERROR_FILE))})` : ' (see the run errors)'}`,
    )
  return code
}

/** The end of a dry run: every step has one definition (exit 0), or the scenarios that lack one (exit 1). */
function dryRunResult(collector: RunCollector, reports: [string, string][]): number {
  const outcomes = [...collector.outcomes.values()]
  const broken = outcomes.filter((o) => o.result === 'failed')
  const out = ['']
  if (broken.length) {
    out.push(`Steps without exactly one definition (${broken.length}):`)
    for (const o of broken) out.push(`  ✘ ${o.name}  (${o.uri}:${o.line})`, `      ${o.reason ?? 'failed'}`)
    out.push('')
  }
  for (const error of collector.runErrors) out.push(`Run error: ${error}`, '')
  if (reports.length) {
    out.push('Reports:')
    const width = Math.max(...reports.map(([label]) => label.length))
    for (const [label, path] of reports) out.push(`  ${label.padEnd(width)}  ${shown(path)}`)
    out.push('')
  }
  const n = outcomes.length
  out.push(
    `Dry run: ${n} scenario${n === 1 ? '' : 's'}, nothing executed; ${
      broken.length
        ? `${broken.length} with a step that has no single definition`
        : 'every step has a definition'
    }`,
  )
  console.log(out.join('\n'))
  if (collector.runErrors.length) return 3
  return broken.length ? 1 : 0
}

/** `--list`: one line per selected scenario: file:line, name, tags. */
function printList(scenarios: readonly ScenarioInfo[]) {
  const width = Math.max(0, ...scenarios.map((s) => `${s.uri}:${s.line}`.length))
  for (const s of scenarios)
    console.log(
      `${`${s.uri}:${s.line}`.padEnd(width)}  ${s.name}${s.tags.length ? `  ${s.tags.join(' ')}` : ''}`,
    )
}

/** The filters as the user gave them, for messages: --tags "…", --name "…", paths. */
function describeFilters(filters: { tags?: string | undefined; names: string[]; paths: string[] }): string {
  return [
    ...(filters.tags !== undefined ? [`--tags "${filters.tags}"`] : []),
    ...filters.names.map((n) => `--name "${n}"`),
    ...(filters.paths.length ? [filters.paths.join(' ')] : []),
  ].join(', ')
}

/** A selection of no scenario: a usage error naming the filters, with a likely tag for a misspelt one. */
function emptySelection(
  filters: { tags?: string | undefined; names: string[]; paths: string[] },
  suite: readonly ScenarioInfo[],
): Error {
  const known = new Set(suite.flatMap((s) => s.tags))
  const hints = tagsOf(filters.tags ?? '')
    .filter((tag) => !known.has(tag))
    .map((tag) => {
      const close = didYouMean(tag, known)
      return `no scenario is tagged ${tag}${close.length ? ` (did you mean ${close.join(' or ')}?)` : ''}`
    })
  return usageError(
    `no scenario matches ${describeFilters(filters) || 'the selection'}: nothing to run${hints.length ? `; ${hints.join('; ')}` : ''}. vc-harness conformance --list shows what a filter selects`,
  )
}

/** Parses a tag expression as cucumber will; a usage error in one line when it does not parse. */
function checkTagExpression(expression: string) {
  try {
    parseTagExpression(expression)
  } catch (error) {
    const why = (error as Error).message.replace(/^.*because of syntax error: /s, '').replace(/\.$/, '')
    throw usageError(`--tags: "${expression}" is not a valid tag expression: ${why}`)
  }
}

/** A FEATURE[:LINE] argument, checked to exist, as cucumber (working in ROOT) must see it. */
function featurePath(value: string): string {
  const { path, lines } = splitFeaturePath(value)
  const absolute = resolve(path)
  if (!existsSync(absolute)) throw usageError(`no such feature file or folder: ${path}`)
  const rel = relative(ROOT, absolute)
  const inside = rel && !rel.startsWith('..') && !isAbsolute(rel)
  return `${inside ? rel.split('\\').join('/') : absolute}${lines}`
}

/** A --format FORMAT[:PATH] as cucumber (working in ROOT) must see it: paths from the working folder. */
function userFormat(value: string): [string, string | undefined] {
  const [type, path] = splitFormat(value)
  if (!type) throw usageError(`--format: expected FORMAT[:PATH], got "${value}"`)
  // A formatter module given by a relative path is found from the working folder too.
  const module = /^\.{1,2}[/\\]/.test(type) ? pathToFileURL(resolve(type)).href : type
  return [module, path ? resolve(path) : undefined]
}

/** Every problem of the external target's settings, one per line: exit 2 before anything runs. */
function profileError(problems: string[]): Error {
  return Object.assign(
    new TypeError(
      `the external target's settings have ${problems.length} problem${problems.length === 1 ? '' : 's'} (see docs/targets.md):\n${problems
        .flatMap((p) => p.split('\n'))
        .map((p) => `  ${p.trim()}`)
        .join('\n')}`,
    ),
    { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' },
  )
}

/** The external deployment's login URL, for the report: the variable, else the profile's auth_url. */
function externalUrl(profile: string | undefined): string | undefined {
  if (process.env.VC_HARNESS_AUTH_URL) return process.env.VC_HARNESS_AUTH_URL
  if (!profile) return undefined
  try {
    const data = JSON.parse(readFileSync(profile, 'utf8')) as { auth_url?: unknown }
    return typeof data.auth_url === 'string' ? data.auth_url : undefined
  } catch {
    return undefined // checked before the run
  }
}
