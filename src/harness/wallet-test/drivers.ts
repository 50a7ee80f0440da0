// How a plan hands a deep link to a wallet: a command (any wallet a script can drive: ours, a phone over adb,
// a vendor's automation hook), our own wallet in-process (the test suite), or a person with a phone.

import { spawn } from 'node:child_process'
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { CaseContext, DriverResult, WalletDriver } from './runner.ts'

/** The package's CLI; the same path from src/ and from the compiled dist/ (both sit one level under the root). */
const CLI_BIN = fileURLToPath(new URL('../../../bin/vc-harness.mjs', import.meta.url))

/**
 * A fresh folder holding a `vc-harness` launcher of this package's CLI, to put first on a wallet command's
 * PATH: `vc-harness wallet open {link}` then works without a global install. The caller removes it.
 */
export function cliLauncherDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vc-harness-bin-'))
  const launcher = join(dir, 'vc-harness')
  writeFileSync(launcher, `#!/bin/sh\nexec "${process.execPath}" "${CLI_BIN}" "$@"\n`)
  chmodSync(launcher, 0o755)
  return dir
}

/** POSIX single quoting: the link (which carries & and %) stays one argument whatever it holds. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

/**
 * The placeholders a wallet command may use. `dc_api_request` and `origin` are the DC API plan's
 * (presentation-dc-api): a file holding the request entry `{protocol, data}` the page would hand
 * `navigator.credentials.get`, and the origin of that page; empty for the other plans.
 */
export const PLACEHOLDERS = [
  'link',
  'trust_anchor',
  'wallet_file',
  'case',
  'dc_api_request',
  'origin',
] as const
/** A placeholder, with the quotes a user may have put around it. */
const PLACEHOLDER = new RegExp(`(['"]?)\\{(${PLACEHOLDERS.join('|')})\\}\\1`, 'g')

/**
 * The command for one case: every `{link}`, `{trust_anchor}`, `{wallet_file}` and `{case}` replaced by the
 * value, shell-quoted (quotes the user already put around a placeholder are dropped, so `'{link}'` works too).
 */
export function commandFor(
  template: string,
  ctx: Pick<CaseContext, 'link' | 'trustAnchorFile' | 'walletFile' | 'testCase'> &
    Partial<Pick<CaseContext, 'dcApi'>>,
): string {
  const values: Record<(typeof PLACEHOLDERS)[number], string> = {
    // a DC API case has no deep link: {link} is empty there, {dc_api_request} and {origin} everywhere else
    link: ctx.dcApi ? '' : ctx.link,
    trust_anchor: ctx.trustAnchorFile,
    wallet_file: ctx.walletFile,
    case: ctx.testCase.id,
    dc_api_request: ctx.dcApi?.requestFile ?? '',
    origin: ctx.dcApi?.origin ?? '',
  }
  return template.replace(PLACEHOLDER, (_m, _q, name: keyof typeof values) => shellQuote(values[name]))
}

/** Whether a command hands over a DC API request: `{dc_api_request}`, or a script reading the environment. */
export const handsDcApiRequest = (template: string): boolean =>
  template.includes('{dc_api_request}') || template.includes('VC_HARNESS_DC_API_REQUEST')

/**
 * Checks a --wallet-command: it must hand the link over somewhere, or, for the DC API plan
 * (`presentation-dc-api`, whose cases have no link), the request: `{dc_api_request}` (with `{origin}`).
 */
export function commandProblem(template: string, plan?: string, dcApiCommand?: string): string | undefined {
  if (template.trim() === '') return '--wallet-command is empty'
  if (dcApiCommand !== undefined && !handsDcApiRequest(dcApiCommand))
    return `--dc-api-command must contain {dc_api_request} (a file holding the request entry; {origin} the calling origin), e.g. "vc-harness wallet dc-api --origin {origin} --request {dc_api_request}": ${dcApiCommand}`
  if (!template.includes('{link}') && !handsDcApiRequest(template))
    return `--wallet-command must contain {link} (where the deep link goes): ${template}`
  if (plan === 'presentation-dc-api' && dcApiCommand === undefined && !handsDcApiRequest(template))
    return `plan presentation-dc-api asks over the Digital Credentials API: give --dc-api-command with {dc_api_request} and {origin} (e.g. "vc-harness wallet dc-api --origin {origin} --request {dc_api_request}"), or a --wallet-command that also handles {dc_api_request}`
  return undefined
}

/**
 * The DigitalCredential a DC API wallet command printed on stdout: the JSON object `{protocol, data}` (the
 * whole output, or from its first line that opens an object); undefined when there is none.
 */
export function dcApiAnswerOf(
  stdout: string,
): { protocol?: unknown; data: Record<string, unknown> } | undefined {
  const text = stdout.trim()
  const candidates = [
    text,
    ...text
      .split('\n')
      .flatMap((line, i, lines) => (line.startsWith('{') ? [lines.slice(i).join('\n')] : [])),
  ]
  for (const candidate of candidates) {
    try {
      const value: unknown = JSON.parse(candidate)
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        const data = (value as { data?: unknown }).data
        if (typeof data === 'object' && data !== null && !Array.isArray(data))
          return value as { protocol?: unknown; data: Record<string, unknown> }
      }
    } catch {}
  }
  return undefined
}

const OUTPUT_TAIL = 4000
/** The most of a DC API command's stdout read as its answer (the service takes 512 KiB). */
const ANSWER_MAX = 1024 * 1024

/**
 * Runs `template` through /bin/sh for each case, with the link in `{link}` and in VC_HARNESS_LINK, the trust
 * anchor in VC_HARNESS_TRUST_ANCHOR, a wallet file for the whole run in VC_HARNESS_WALLET (unless the
 * environment sets one), the case id in VC_HARNESS_CASE. The case's end kills the command's process group.
 */
export function commandDriver(
  template: string,
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; dcApiCommand?: string } = {},
): WalletDriver {
  const dcApiTemplate = opts.dcApiCommand ?? (handsDcApiRequest(template) ? template : undefined)
  return {
    describe: opts.dcApiCommand ? `${template}; over the DC API: ${opts.dcApiCommand}` : template,
    dcApi: dcApiTemplate !== undefined,
    open(ctx) {
      const env = opts.env ?? process.env
      const command = ctx.dcApi && dcApiTemplate !== undefined ? dcApiTemplate : template
      const child = spawn('/bin/sh', ['-c', commandFor(command, ctx)], {
        cwd: opts.cwd,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...env,
          VC_HARNESS_LINK: ctx.dcApi ? '' : ctx.link,
          VC_HARNESS_CASE: ctx.testCase.id,
          VC_HARNESS_TRUST_ANCHOR: env.VC_HARNESS_TRUST_ANCHOR ?? ctx.trustAnchorFile,
          VC_HARNESS_WALLET: env.VC_HARNESS_WALLET ?? ctx.walletFile,
          ...(ctx.dcApi && {
            VC_HARNESS_DC_API_REQUEST: ctx.dcApi.requestFile,
            VC_HARNESS_ORIGIN: ctx.dcApi.origin,
          }),
        },
      })
      let output = ''
      // A DC API case: stdout is the wallet's answer (an mdoc's DeviceResponse in a JWE: kept whole, bounded).
      let stdout = ''
      const keep = (chunk: Buffer) => {
        output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL)
      }
      child.stdout.on('data', (chunk: Buffer) => {
        keep(chunk)
        if (ctx.dcApi && stdout.length < ANSWER_MAX) stdout += chunk.toString('utf8')
      })
      child.stderr.on('data', keep)
      const kill = () => {
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL')
        } catch {}
      }
      ctx.signal.addEventListener('abort', kill, { once: true })
      return new Promise<DriverResult>((resolve) => {
        child.on('error', (error) =>
          resolve({ exitCode: null, output: `cannot run the wallet command: ${error.message}` }),
        )
        child.on('close', (code) => {
          ctx.signal.removeEventListener('abort', kill)
          const answer = ctx.dcApi && !ctx.signal.aborted ? dcApiAnswerOf(stdout) : undefined
          resolve({
            exitCode: ctx.signal.aborted ? null : code,
            output: output.trim(),
            ...(answer && { answer }),
          })
        })
      })
    },
  }
}

/** The part of src/wallet's Wallet the in-process driver needs. */
export interface OpensLinks {
  open(link: string): Promise<unknown>
  /** the DC API plan: answers `{request, origin}` as a platform wallet (Wallet.presentDcApi) */
  presentDcApi?(input: { request: unknown; origin: string }): Promise<{ response: unknown }>
}

/**
 * Our own wallet, in this process: exit 0 when `open` succeeds, 1 when it refuses or fails. `walletFor` makes
 * (or hands back) the wallet for a case: the first case's context names the run's trust anchor.
 */
export function inProcessDriver(
  walletFor: (ctx: CaseContext) => Promise<OpensLinks>,
  describe = 'vc-harness wallet (in-process)',
): WalletDriver {
  return {
    describe,
    // open() resolves once every request the wallet made has its answer: nothing can come late.
    settleMs: 0,
    dcApi: true,
    async open(ctx) {
      const dcApi = ctx.dcApi
      if (dcApi) return presentInProcess(await walletFor(ctx), dcApi)
      try {
        await (await walletFor(ctx)).open(ctx.link)
        return { exitCode: 0 }
      } catch (error) {
        return { exitCode: 1, output: (error as Error).message }
      }
    },
  }
}

/**
 * A DC API case in process: the wallet's DigitalCredential (exit 0), or the error answer a platform hands back
 * for its refusal (exit 1), as `vc-harness wallet dc-api` prints them.
 */
async function presentInProcess(
  wallet: OpensLinks,
  dcApi: NonNullable<CaseContext['dcApi']>,
): Promise<DriverResult> {
  if (!wallet.presentDcApi)
    return { exitCode: 1, output: 'this wallet does not speak the Digital Credentials API' }
  try {
    const result = await wallet.presentDcApi({ request: dcApi.request, origin: dcApi.origin })
    return { exitCode: 0, answer: result.response }
  } catch (error) {
    const { dcApiErrorResponse, isDcApiRefusal } = await import('../../wallet/presentation-dc-api.ts')
    return {
      exitCode: 1,
      output: (error as Error).message,
      ...(isDcApiRefusal(error) && { answer: dcApiErrorResponse(dcApi.request, error) }),
    }
  }
}
