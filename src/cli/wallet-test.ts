import { mkdirSync, rmSync } from 'node:fs'
import { delimiter, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { isPlanChoice, PLAN_CHOICES, planCases } from '../harness/wallet-test/plans.ts'
// Types only: the runner (and the service it builds) loads when a plan runs, not for --help.
import type { WalletTestOptions, WalletTestRun } from '../harness/wallet-test/runner.ts'
import type { TlsCredentials, TlsLeaf } from '../service/tls.ts'
import { loadTls, TLS_PARSE_OPTIONS, tlsFilePair, tlsUsage } from './tls-options.ts'

export const WALLET_TEST_USAGE = `Usage: vc-harness wallet-test [--plan NAME] --wallet-command "<command with {link}>" [options]
       vc-harness wallet-test --list [--plan NAME]

Tests a wallet's safety: the embedded reference service acts as an issuer or verifier that breaks one rule
on purpose per case (or none, in the positive cases), hands each case's deep link to the wallet by running
the command, and judges what the wallet did: completed the flow, refused it with an error, or did nothing.
Each case documents which outcomes pass. See docs/wallet-testing.md.

Plans: issuance-draft15, issuance-1.0, issuance-mdoc, presentation-pe, presentation-pe-ldp, presentation-dcql,
presentation-mdoc, presentation-dc-api, all (default: every plan). The mdoc plans (and presentation-dc-api,
which asks for an mDL too) need a P-256 wallet and the IACA (iaca.pem); presentation-dc-api needs
--dc-api-command.

Options:
  --plan NAME             the plan to run; default all
  --case ID               run only this case (repeatable; ids as --list prints them)
  --wallet-command CMD    run for every case through /bin/sh. {link} becomes the deep link as one safely
                          quoted argument (links carry & and %); {trust_anchor} the PEM file of the CA the
                          x509 request objects chain to; {wallet_file} a file the wallet may keep its state
                          in for the run; {case} the case id. The same values are in the environment:
                          VC_HARNESS_LINK, VC_HARNESS_TRUST_ANCHOR, VC_HARNESS_WALLET (unless already set),
                          VC_HARNESS_CASE; and vc-harness itself is on the command's PATH. Exit status 0 means
                          the wallet completed the flow and kept what it got; anything else that it refused.
                          Example: --wallet-command "vc-harness wallet open {link}"
  --dc-api-command CMD    plan presentation-dc-api (OpenID4VP over the Digital Credentials API): run instead
                          of --wallet-command for the cases asked over the API (the setup cases still get a
                          link). {dc_api_request} becomes a JSON file holding the request entry {protocol,
                          data} a page hands navigator.credentials.get, {origin} the calling page's origin
                          (also VC_HARNESS_DC_API_REQUEST, VC_HARNESS_ORIGIN); its stdout must be the
                          DigitalCredential {protocol, data} (an error answer for a refusal), which the
                          harness posts to the verifier with that origin. Without it those cases are left
                          out of plan all. Example: --dc-api-command "vc-harness wallet dc-api --origin
                          {origin} --request {dc_api_request}"
  --case-timeout S        seconds a wallet has per case; default 60
  --host H, --port P      where the service listens; default 127.0.0.1 and any free port
  --public-url URL        the base URL wallets reach (a phone: https://<this machine's DNS name>:<port> with
                          --tls-cert/--tls-key; the x509_san_dns cases name its host, which must be a DNS name)
${tlsUsage(26)}
  --reports DIR           where wallet-test.json, wallet-test.md (Markdown) and wallet-test.xml (JUnit) and
                          trust-anchor.pem go; default reports/wallet-test
  --list                  print the plan's cases (id, expectation, sources) and exit
  -h, --help              show this text

Exit codes: 0 the wallet behaved correctly in every case; 1 it did not in at least one; 2 bad arguments
(also a --tls-cert / --tls-key that cannot be read or are no pair); 3 the harness could not run (e.g. the
port is taken).`

function usageError(message: string): Error {
  return Object.assign(new TypeError(`${message} (see vc-harness wallet-test --help)`), {
    code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
  })
}

export async function walletTest(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      plan: { type: 'string' },
      case: { type: 'string', multiple: true },
      'wallet-command': { type: 'string' },
      'dc-api-command': { type: 'string' },
      'case-timeout': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'public-url': { type: 'string' },
      reports: { type: 'string' },
      ...TLS_PARSE_OPTIONS,
      list: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  })
  if (values.help) {
    console.log(WALLET_TEST_USAGE)
    return 0
  }
  const plan = values.plan ?? 'all'
  if (!isPlanChoice(plan))
    throw usageError(`--plan ${plan}: unknown plan (known: ${PLAN_CHOICES.join(', ')})`)
  const cases = planCases(plan)
  if (values.list) {
    for (const c of cases) {
      console.log(
        `${c.id}\t${c.expect}${c.fault ? ` (fault ${c.fault})` : ''}\t${c.sources.join(' ')}\t${c.title}`,
      )
    }
    return 0
  }
  const unknown = (values.case ?? []).filter((id) => !cases.some((c) => c.id === id))
  if (unknown.length)
    throw usageError(`--case ${unknown.join(', ')}: not a case of plan ${plan} (see --list)`)
  const command = values['wallet-command']
  // A newcomer with a phone looks here first: the by-hand mode lives under serve.
  if (command === undefined)
    throw usageError(
      `--wallet-command is required (to drive a wallet by hand with a phone: vc-harness serve --sandbox --wallet-plan ${plan})`,
    )
  const { cliLauncherDir, commandDriver, commandProblem } = await import('../harness/wallet-test/drivers.ts')
  const dcApiCommand = values['dc-api-command']
  const problem = commandProblem(command, plan, dcApiCommand)
  if (problem) throw usageError(problem)
  const timeout = values['case-timeout'] === undefined ? 60 : Number(values['case-timeout'])
  if (!Number.isInteger(timeout) || timeout < 1 || timeout > 3600) {
    throw usageError(`--case-timeout ${values['case-timeout']}: whole seconds from 1 to 3600`)
  }
  const port = values.port === undefined ? 0 : Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw usageError(`--port ${values.port}: not a port`)
  if (values['public-url'] !== undefined) {
    try {
      new URL(values['public-url'])
    } catch {
      throw usageError(`--public-url ${values['public-url']}: not a URL`)
    }
  }
  const pair = tlsFilePair(values, usageError)
  const tls = pair && loadTls(pair)
  const reports = resolve(values.reports ?? 'reports/wallet-test')
  const bin = cliLauncherDir()
  try {
    const driver = commandDriver(command, {
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` },
      ...(dcApiCommand !== undefined ? { dcApiCommand } : {}),
    })
    return await runAndReport({
      plan,
      driver,
      ...(values.case?.length ? { only: values.case } : {}),
      ...(values.host !== undefined ? { host: values.host } : {}),
      port,
      ...(values['public-url'] !== undefined ? { publicUrl: values['public-url'] } : {}),
      ...(tls ? { tls } : {}),
      caseTimeoutMs: timeout * 1000,
      reports,
    })
  } finally {
    rmSync(bin, { recursive: true, force: true })
  }
}

type RunOptions = Omit<WalletTestOptions, 'workDir' | 'onProgress'> & { reports: string }

/** Runs the plan, printing a line per case, writes the reports; the exit code (3: the harness broke). */
async function runAndReport(
  options: RunOptions,
  print = (text: string) => console.log(text),
): Promise<number> {
  const { runWalletTest } = await import('../harness/wallet-test/runner.ts')
  const { caseLine, renderConsoleSummary, writeWalletTestReports } = await import(
    '../harness/wallet-test/report.ts'
  )
  const { reports, ...rest } = options
  mkdirSync(reports, { recursive: true })
  let run: WalletTestRun
  try {
    run = await runWalletTest({
      ...rest,
      workDir: reports,
      onProgress: (event) => {
        if (event.kind === 'ready') {
          console.error(
            `wallet-test: ${event.cases} cases against the service at ${event.serviceUrl}; trust anchor ${event.trustAnchorFile}`,
          )
          for (const note of event.notes) console.error(`wallet-test: note: ${note}`)
          if (rest.driver.interactive) print(`The current case is also shown at ${event.pageUrl}`)
        } else if (event.kind === 'exchange' && rest.driver.interactive) {
          print(`  wallet: ${event.line}`)
        } else if (event.kind === 'result') {
          print(caseLine(event.result, event.index, event.total))
        }
      },
    })
  } catch (error) {
    const code = (error as { code?: string }).code
    console.error(
      `vc-harness wallet-test: the harness could not run: ${(error as Error).message}${code === 'EADDRINUSE' ? ' (choose another --port)' : ''}`,
    )
    return 3
  }
  const written = writeWalletTestReports(run, reports)
  print(renderConsoleSummary(run, written))
  return run.passed ? 0 : 1
}

/** `serve --sandbox --wallet-plan NAME`: the plan with a person driving the wallet. */
export async function walletPlanByHand(options: {
  plan: string
  host: string
  port: number
  publicUrl?: string
  tls?: TlsCredentials & { leaf: TlsLeaf }
  caseTimeout?: string
  reports?: string
}): Promise<number> {
  if (!isPlanChoice(options.plan)) {
    throw usageError(`--wallet-plan ${options.plan}: unknown plan (known: ${PLAN_CHOICES.join(', ')})`)
  }
  if (options.plan === 'presentation-dc-api') {
    // The harness would have to be the phone's browser and platform: only a command or code can be asked so.
    throw usageError(
      '--wallet-plan presentation-dc-api: a wallet driven by hand cannot be asked over the Digital Credentials API (the harness plays the browser); run it with vc-harness wallet-test --dc-api-command (docs/wallet-testing.md)',
    )
  }
  const timeout = options.caseTimeout === undefined ? 120 : Number(options.caseTimeout)
  if (!Number.isInteger(timeout) || timeout < 1 || timeout > 3600) {
    throw usageError(`--case-timeout ${options.caseTimeout}: whole seconds from 1 to 3600`)
  }
  const { interactiveDriver, walletTestPage } = await import('../harness/wallet-test/interactive.ts')
  const print = (text: string) => console.log(text)
  // Enter ends a case; stdin is read only while the plan runs (a closed stdin simply never says so).
  const stdin = process.stdin
  stdin.resume()
  // Ctrl-C (or a SIGTERM) ends the run, not the process: the case in progress stops unjudged and the
  // reports and summary cover the cases judged so far. A second one quits at once, as a person expects.
  const stop = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) process.exit(130)
    console.error(
      `vc-harness: ${signal}: stopping; the reports cover the cases judged so far (again to quit at once)`,
    )
    stop.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    return await runAndReport(
      {
        plan: options.plan,
        driver: interactiveDriver(print, stdin),
        host: options.host,
        port: options.port,
        ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
        ...(options.tls ? { tls: options.tls } : {}),
        caseTimeoutMs: timeout * 1000,
        reports: resolve(options.reports ?? 'reports/wallet-test'),
        configureApp: walletTestPage,
        signal: stop.signal,
      },
      print,
    )
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    stdin.pause()
  }
}
