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

/** The placeholders a wallet command may use. */
export const PLACEHOLDERS = ['link', 'trust_anchor', 'wallet_file', 'case'] as const
/** A placeholder, with the quotes a user may have put around it. */
const PLACEHOLDER = new RegExp(`(['"]?)\\{(${PLACEHOLDERS.join('|')})\\}\\1`, 'g')

/**
 * The command for one case: every `{link}`, `{trust_anchor}`, `{wallet_file}` and `{case}` replaced by the
 * value, shell-quoted (quotes the user already put around a placeholder are dropped, so `'{link}'` works too).
 */
export function commandFor(
  template: string,
  ctx: Pick<CaseContext, 'link' | 'trustAnchorFile' | 'walletFile' | 'testCase'>,
): string {
  const values: Record<(typeof PLACEHOLDERS)[number], string> = {
    link: ctx.link,
    trust_anchor: ctx.trustAnchorFile,
    wallet_file: ctx.walletFile,
    case: ctx.testCase.id,
  }
  return template.replace(PLACEHOLDER, (_m, _q, name: keyof typeof values) => shellQuote(values[name]))
}

/** Checks a --wallet-command: it must hand the link over somewhere. */
export function commandProblem(template: string): string | undefined {
  if (template.trim() === '') return '--wallet-command is empty'
  if (!template.includes('{link}'))
    return `--wallet-command must contain {link} (where the deep link goes): ${template}`
  return undefined
}

const OUTPUT_TAIL = 4000

/**
 * Runs `template` through /bin/sh for each case, with the link in `{link}` and in VC_HARNESS_LINK, the trust
 * anchor in VC_HARNESS_TRUST_ANCHOR, a wallet file for the whole run in VC_HARNESS_WALLET (unless the
 * environment sets one), the case id in VC_HARNESS_CASE. The case's end kills the command's process group.
 */
export function commandDriver(
  template: string,
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): WalletDriver {
  return {
    describe: template,
    open(ctx) {
      const env = opts.env ?? process.env
      const child = spawn('/bin/sh', ['-c', commandFor(template, ctx)], {
        cwd: opts.cwd,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...env,
          VC_HARNESS_LINK: ctx.link,
          VC_HARNESS_CASE: ctx.testCase.id,
          VC_HARNESS_TRUST_ANCHOR: env.VC_HARNESS_TRUST_ANCHOR ?? ctx.trustAnchorFile,
          VC_HARNESS_WALLET: env.VC_HARNESS_WALLET ?? ctx.walletFile,
        },
      })
      let output = ''
      const keep = (chunk: Buffer) => {
        output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL)
      }
      child.stdout.on('data', keep)
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
          resolve({ exitCode: ctx.signal.aborted ? null : code, output: output.trim() })
        })
      })
    },
  }
}

/** The part of src/wallet's Wallet the in-process driver needs. */
export interface OpensLinks {
  open(link: string): Promise<unknown>
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
    async open(ctx) {
      try {
        await (await walletFor(ctx)).open(ctx.link)
        return { exitCode: 0 }
      } catch (error) {
        return { exitCode: 1, output: (error as Error).message }
      }
    },
  }
}
