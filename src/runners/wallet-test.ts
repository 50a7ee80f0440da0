// `import { runWalletTest } from 'vc-harness/wallet-test'`: the wallet test plans from a script, as
// `vc-harness wallet-test` runs them (docs/wallet-testing.md): the embedded service breaks one rule per case,
// hands the deep link to the wallet (a command, or an object in this process that opens links), and judges.
//
// Unlike the conformance runner it runs in this process: the plans' runner is plain TypeScript compiled with
// the package (no cucumber, no tsx), and an in-process wallet must live where the caller made it.

import { mkdirSync, rmSync } from 'node:fs'
import { delimiter, resolve } from 'node:path'
import {
  cliLauncherDir,
  commandDriver,
  commandProblem,
  inProcessDriver,
  type OpensLinks,
} from '../harness/wallet-test/drivers.ts'
import {
  isPlanChoice,
  PLAN_CHOICES,
  type PlanChoice,
  planCases,
  type WalletCase,
} from '../harness/wallet-test/plans.ts'
import type { CaseContext, Progress, WalletDriver, WalletTestRun } from '../harness/wallet-test/runner.ts'
import type { TlsCredentials } from '../service/tls.ts'

export type { OpensLinks } from '../harness/wallet-test/drivers.ts'
export type { Expectation, PlanChoice, PlanName, WalletCase } from '../harness/wallet-test/plans.ts'
export type { CaseContext, CaseResult, Progress, WalletTestRun } from '../harness/wallet-test/runner.ts'
export type { TlsCredentials } from '../service/tls.ts'
export { PLAN_CHOICES }

export interface WalletTestOptions {
  /** The plan: issuance-draft15, issuance-1.0, issuance-mdoc, presentation-pe, presentation-pe-ldp, presentation-dcql, presentation-mdoc, or all (default). */
  plan?: PlanChoice
  /**
   * The wallet as a command run through /bin/sh per case, as `--wallet-command`: `{link}` (required),
   * `{trust_anchor}`, `{wallet_file}` and `{case}` are replaced, shell-quoted; exit status 0 means the wallet
   * completed the flow. This package's `vc-harness` is first on its PATH.
   */
  walletCommand?: string
  /**
   * Or the wallet in this process: an object whose `open(link)` resolves when it completed the flow and
   * rejects when it refused, or a function that makes it, called once at the first case (its context names
   * the PEM file of the CA x509 request objects chain to). One wallet serves the whole run, as a command's
   * `{wallet_file}` does: a presentation plan issues its credential first and presents it later. E.g.
   * `(ctx) => Wallet.create({ trustAnchors: [readFileSync(ctx.trustAnchorFile, 'utf8')] })`.
   */
  wallet?: OpensLinks | ((ctx: CaseContext) => OpensLinks | Promise<OpensLinks>)
  /** Only these case ids (as `listWalletTestCases` gives them). */
  cases?: readonly string[]
  /** How long a wallet has per case; default 60 s. */
  caseTimeoutMs?: number
  /** Where the service listens; default 127.0.0.1 and any free port. */
  host?: string
  port?: number
  /**
   * The base URL wallets reach; default http://<host>:<port>, or with `tls` https://<the certificate's first
   * DNS name>:<port> (a phone: docs/phones.md).
   */
  publicUrl?: string
  /** Listen with HTTPS: PEM certificate chain and key (`vc-harness dev-cert` makes a pair; docs/phones.md). */
  tls?: TlsCredentials
  /**
   * A folder for wallet-test.json, wallet-test.md, wallet-test.xml (JUnit) and trust-anchor.pem, as the CLI
   * writes them; default none (the trust anchor then lives in a temporary folder for the run).
   */
  reports?: string
  /** The command's environment; default this process's. */
  env?: NodeJS.ProcessEnv
  /** Told as the run goes: ready (with the service URL), each case, each result. */
  onProgress?: (event: Progress) => void
  /**
   * Stops the run: the case in progress is dropped unjudged and the result holds the cases judged so far
   * (`interrupted`), as Ctrl-C does in the by-hand mode.
   */
  signal?: AbortSignal
}

export interface WalletTestResult extends WalletTestRun {
  /** The report files written, when `reports` named a folder. */
  reports: { label: string; path: string }[]
}

/** The cases of a plan in run order (id, expectation, fault, sources), as `vc-harness wallet-test --list`. */
export function listWalletTestCases(plan: PlanChoice = 'all'): WalletCase[] {
  if (!isPlanChoice(plan)) throw new TypeError(`unknown plan ${plan} (known: ${PLAN_CHOICES.join(', ')})`)
  return planCases(plan)
}

/**
 * Runs a wallet test plan. Resolves with every case's verdict (`passed`: the wallet behaved correctly in
 * every case); rejects on bad options and when the harness itself cannot run (e.g. the port is taken).
 */
export async function runWalletTest(options: WalletTestOptions): Promise<WalletTestResult> {
  const plan = options.plan ?? 'all'
  const cases = listWalletTestCases(plan)
  const unknown = (options.cases ?? []).filter((id) => !cases.some((c) => c.id === id))
  if (unknown.length) throw new TypeError(`cases ${unknown.join(', ')}: not in plan ${plan}`)
  if ((options.walletCommand === undefined) === (options.wallet === undefined))
    throw new TypeError('runWalletTest: give either walletCommand or wallet')
  const timeout = options.caseTimeoutMs ?? 60_000
  if (!Number.isInteger(timeout) || timeout < 1)
    throw new TypeError(`caseTimeoutMs ${timeout}: not a duration`)

  // Loaded here, not at the top: the runner builds the whole service, which listWalletTestCases does not need.
  const { runWalletTest: runPlan } = await import('../harness/wallet-test/runner.ts')
  const { writeWalletTestReports } = await import('../harness/wallet-test/report.ts')
  let launcher: string | undefined
  let driver: WalletDriver
  if (options.walletCommand !== undefined) {
    const problem = commandProblem(options.walletCommand)
    if (problem) throw new TypeError(problem.replace('--wallet-command', 'walletCommand'))
    launcher = cliLauncherDir()
    const env = options.env ?? process.env
    driver = commandDriver(options.walletCommand, {
      env: { ...env, PATH: `${launcher}${delimiter}${env.PATH ?? ''}` },
    })
  } else {
    const wallet = options.wallet as NonNullable<WalletTestOptions['wallet']>
    let made: Promise<OpensLinks> | undefined
    driver = inProcessDriver((ctx) => {
      made ??= Promise.resolve(typeof wallet === 'function' ? wallet(ctx) : wallet)
      return made
    }, 'wallet in the calling process')
  }
  const reports = options.reports === undefined ? undefined : resolve(options.reports)
  if (reports) mkdirSync(reports, { recursive: true })
  try {
    const run = await runPlan({
      plan,
      driver,
      ...(options.cases?.length ? { only: options.cases } : {}),
      ...(options.host !== undefined ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
      ...(options.tls ? { tls: options.tls } : {}),
      caseTimeoutMs: timeout,
      ...(reports ? { workDir: reports } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    })
    const written = reports ? writeWalletTestReports(run, reports) : []
    return { ...run, reports: written.map(([label, path]) => ({ label, path })) }
  } finally {
    if (launcher) rmSync(launcher, { recursive: true, force: true })
  }
}
