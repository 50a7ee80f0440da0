import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { planCases } from '../src/harness/wallet-test/plans.ts'
import type { WalletTestRun } from '../src/harness/wallet-test/runner.ts'
import { Wallet } from '../src/wallet/index.ts'

// `serve --sandbox --wallet-plan NAME` as a person with a phone uses it: read each case's deep link from the
// terminal, let the wallet open it, and when the wallet refused (shows an error, sends nothing) say so with
// Enter in the terminal or "Next case" on the page. The page shows the current case's QR code meanwhile.

const BIN = new URL('../bin/vc-harness.mjs', import.meta.url).pathname
const dir = mkdtempSync(join(tmpdir(), 'wallet-plan-by-hand-'))
after(() => rmSync(dir, { recursive: true, force: true }))

test('a plan driven by hand: QR codes in the terminal and on the page, Enter or Next case ends a refused case, reports at the end', async () => {
  const reports = join(dir, 'reports')
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--sandbox',
      '--wallet-plan',
      'presentation-pe',
      '--port',
      '0',
      '--case-timeout',
      '60',
      '--reports',
      reports,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  let consumed = 0
  const waiters: (() => void)[] = []
  child.stdout.on('data', (chunk) => {
    stdout += chunk
    for (const w of waiters.splice(0)) w()
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  /** The next match of `pattern` after what was read so far. */
  const next = async (pattern: RegExp): Promise<RegExpExecArray> => {
    const deadline = Date.now() + 30_000
    for (;;) {
      const match = new RegExp(pattern.source, 'm').exec(stdout.slice(consumed))
      if (match) {
        consumed += match.index + match[0].length
        return match
      }
      if (Date.now() > deadline) throw new Error(`no ${pattern} in:\n${stdout}\n${stderr}`)
      await new Promise<void>((resolve) => {
        waiters.push(resolve)
        setTimeout(resolve, 500)
      })
    }
  }
  try {
    const page = (await next(/^The current case is also shown at (\S+)$/))[1] as string
    const cases = planCases('presentation-pe')
    let wallet: Wallet | undefined
    for (const [i, c] of cases.entries()) {
      await next(new RegExp(`^=== Case ${i + 1}/${cases.length}: `))
      const link = (
        await next(/^Scan the QR code with the wallet, or open the deep link on the phone:\n(\S+)$/)
      )[1] as string
      if (i === 0) {
        const html = await fetch(page)
        assert.match(await html.text(), /vc-harness wallet test/)
        const state = (await (await fetch(`${page}/state`)).json()) as {
          current: { id: string; link: string; qr: string }
        }
        assert.equal(state.current.id, c.id)
        assert.equal(state.current.link, link)
        assert.match(state.current.qr, /^<svg/)
        wallet = await Wallet.create({
          trustAnchors: [readFileSync(join(reports, 'trust-anchor.pem'), 'utf8')],
        })
      }
      try {
        await (wallet as Wallet).open(link)
      } catch {
        // The wallet refused and sent nothing: the person says so, on the page or in the terminal.
        if (i % 2 === 0) assert.equal((await fetch(`${page}/next`, { method: 'POST' })).status, 204)
        else child.stdin.write('\n')
      }
      const verdict = await next(
        new RegExp(`^([✔✘]) \\[${i + 1}/${cases.length}\\] .*\\(${c.id.replace(/[.:]/g, '\\$&')}\\)$`),
      )
      assert.equal(verdict[1], '✔', `${c.id}:\n${stdout.slice(consumed - 400, consumed + 400)}`)
    }
    assert.equal(await exited, 0, stderr)
    const run = JSON.parse(readFileSync(join(reports, 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.equal(run.totals.pass, cases.length)
    assert.match(run.wallet, /by hand/)
  } finally {
    child.kill()
  }
})
