// `import { runConformance } from 'vc-harness/conformance'`: the conformance suite from a script, as
// `vc-harness conformance` runs it.
//
// It runs the CLI as a child process rather than cucumber in this process, on purpose: the steps
// (steps/**/*.ts) and cucumber.mjs are TypeScript that cucumber imports through tsx (a dependency), which the
// CLI registers (bin/vc-harness.mjs) and a caller on plain Node has not; a run sets VC_HARNESS_* variables
// for its hooks and may fork cucumber workers, which must not leak into the caller's process; and the
// embedded target keeps its service, clock and webhook receiver in the process that runs the steps. So one
// code path serves both, the CLI's checks and exit codes included, and the compiled package needs no
// compiled steps. The price is a child's start (~1 s), small beside a run.

import { spawn } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ConformanceSummary } from '../harness/report.ts'

export type {
  ConformanceSummary,
  Requirement,
  RequirementStatus,
  Tally,
  TargetDescription,
} from '../harness/report.ts'

/** The package's CLI; the same path from src/ and from the compiled dist/ (both one level under the root). */
const CLI_BIN = fileURLToPath(new URL('../../bin/vc-harness.mjs', import.meta.url))

/** The options of `vc-harness conformance` (its --help and docs/conformance.md say what each one does). */
export interface ConformanceOptions {
  /** `--target`: embedded (default without a profile), child, or external. */
  target?: 'embedded' | 'child' | 'external'
  /** `--profile`: JSON profile of an external deployment (docs/targets.md); implies the external target. */
  profile?: string
  /** `--tags`: a cucumber tag expression, e.g. `'@interface-4.1 and not @needs-portal'`. */
  tags?: string
  /** `--name` (repeated): only scenarios whose name matches one of these regular expressions. */
  names?: readonly string[]
  /** Feature files or folders, optionally with `:LINE`, e.g. `features/auth/login.feature:13`. */
  features?: readonly string[]
  /** `--shard K/N`: this CI job's share of the feature files. */
  shard?: `${number}/${number}`
  /** `--parallel N`: worker processes, each with its own target. */
  parallel?: number
  /** `--instances N`: the child target's serve instances behind a round-robin proxy (needs PostgreSQL). */
  instances?: number
  /** `--retry N`: reruns of a failing scenario; its last attempt counts. */
  retry?: number
  /** `--fail-fast`: stop at the first failure. */
  failFast?: boolean
  /** `--dry-run`: run no step, only check that every step has one definition; writes no report. */
  dryRun?: boolean
  /** `--reports DIR`: where the reports go; default `reports` under `cwd`. */
  reports?: string
  /** `--format` (repeated): more cucumber formatters, `FORMAT[:PATH]`. */
  formats?: readonly string[]
  /** `--expected-failures FILE`: known failures with reasons; default the package's list. */
  expectedFailures?: string
  /** `--strict`: an unexpected pass fails the gate too. */
  strict?: boolean
  /** `--report-only`: run nothing, summarise these message files (cucumber.ndjson of runs or shards). */
  reportOnly?: readonly string[]
  /** The working folder relative paths are read from; default `process.cwd()`. */
  cwd?: string
  /** Variables added to this process's environment for the run (VC_HARNESS_*, see docs/targets.md). */
  env?: Readonly<Record<string, string | undefined>>
  /** Copy the run's output (a line per scenario, the summary) to this process's stdout and stderr; default true. */
  echo?: boolean
  /** Stops the run: the child is killed and the promise rejects with an AbortError. */
  signal?: AbortSignal
}

export interface ConformanceResult {
  /**
   * The CLI's exit code: 0 the gate passed; 1 a requirement failed (or a dry run found a step without a
   * definition); 2 a usage error (bad option, a selection of no scenario, a bad profile: `stderr` says which);
   * 3 a harness error (the target could not be judged).
   */
  exitCode: number
  /** exitCode is 0. */
  passed: boolean
  /** conformance.json of this run (every requirement with its outcome); absent when the run wrote none. */
  summary?: ConformanceSummary
  /** The absolute reports folder. */
  reportsDir: string
  stdout: string
  stderr: string
}

/** The command line of `vc-harness conformance` for these options. */
export function conformanceArgs(options: ConformanceOptions = {}): string[] {
  const args: string[] = []
  const value = (name: string, v: string | number | undefined) => {
    if (v !== undefined) args.push(`--${name}`, String(v))
  }
  value('target', options.target)
  value('profile', options.profile)
  value('tags', options.tags)
  for (const name of options.names ?? []) value('name', name)
  value('shard', options.shard)
  value('parallel', options.parallel)
  value('instances', options.instances)
  value('retry', options.retry)
  if (options.failFast) args.push('--fail-fast')
  if (options.dryRun) args.push('--dry-run')
  value('reports', options.reports)
  for (const format of options.formats ?? []) value('format', format)
  value('expected-failures', options.expectedFailures)
  if (options.strict) args.push('--strict')
  if (options.reportOnly) args.push('--report-only')
  // `--` ends the options: a feature path that starts with a dash stays a path.
  const positionals = [...(options.reportOnly ?? []), ...(options.features ?? [])]
  if (positionals.length) args.push('--', ...positionals)
  return args
}

/** Runs the conformance suite as `vc-harness conformance` does; resolves with its exit code and summary. */
export function runConformance(options: ConformanceOptions = {}): Promise<ConformanceResult> {
  const cwd = resolve(options.cwd ?? process.cwd())
  const reportsDir = resolve(cwd, options.reports ?? 'reports')
  const summaryFile = join(reportsDir, 'conformance.json')
  // The reports folder may hold an earlier run's summary: only one this run wrote is answered.
  const before = modified(summaryFile)
  const echo = options.echo ?? true
  const child = spawn(process.execPath, [CLI_BIN, 'conformance', ...conformanceArgs(options)], {
    cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.signal ? { signal: options.signal } : {}),
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8')
    if (echo) process.stdout.write(chunk)
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8')
    if (echo) process.stderr.write(chunk)
  })
  return new Promise((resolvePromise, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (options.signal?.aborted) return // 'error' rejected with the AbortError
      if (code === null) {
        reject(new Error(`vc-harness conformance was killed by ${signal}`))
        return
      }
      const after = modified(summaryFile)
      const summary =
        after !== undefined && after !== before
          ? (JSON.parse(readFileSync(summaryFile, 'utf8')) as ConformanceSummary)
          : undefined
      resolvePromise({
        exitCode: code,
        passed: code === 0,
        ...(summary ? { summary } : {}),
        reportsDir,
        stdout,
        stderr,
      })
    })
  })
}

function modified(file: string): number | undefined {
  return existsSync(file) ? statSync(file).mtimeMs : undefined
}
