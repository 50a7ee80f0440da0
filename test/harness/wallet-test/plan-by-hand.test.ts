import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { planCases } from '../../../src/harness/wallet-test/plans.ts'
import type { WalletTestRun } from '../../../src/harness/wallet-test/runner.ts'
import { Wallet } from '../../../src/wallet/index.ts'

// `serve --sandbox --wallet-plan NAME` as a person with a phone uses it: read each case's deep link from the
// terminal, let the wallet open it, and when the wallet refused (shows an error, sends nothing) say so with
// Enter in the terminal or "Next case" on the page. The page shows the current case's QR code meanwhile.

const BIN = new URL('../../../bin/vc-harness.mjs', import.meta.url).pathname
const dir = mkdtempSync(join(tmpdir(), 'wallet-plan-by-hand-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** `serve --sandbox --wallet-plan presentation-pe` as a child, and a reader of its terminal output. */
function byHand(reports: string) {
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
  return {
    child,
    next,
    exited,
    output: () => ({ stdout, stderr, consumed }),
  }
}

test('a plan driven by hand: QR codes in the terminal and on the page, Enter or Next case ends a refused case, reports at the end', async () => {
  const reports = join(dir, 'reports')
  const { child, next, exited, output } = byHand(reports)
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
      const { stdout, consumed } = output()
      assert.equal(verdict[1], '✔', `${c.id}:\n${stdout.slice(consumed - 400, consumed + 400)}`)
    }
    assert.equal(await exited, 0, output().stderr)
    const run = JSON.parse(readFileSync(join(reports, 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.equal(run.totals.pass, cases.length)
    assert.match(run.wallet, /by hand/)
  } finally {
    child.kill()
  }
})

test('Ctrl-C after a passed case: the reports list the cases judged so far, the summary is printed, exit 0', async () => {
  const reports = join(dir, 'reports-interrupted')
  const { child, next, exited, output } = byHand(reports)
  try {
    const cases = planCases('presentation-pe')
    const setup = cases[0] as (typeof cases)[number]
    await next(new RegExp(`^=== Case 1/${cases.length}: `))
    const link = (
      await next(/^Scan the QR code with the wallet, or open the deep link on the phone:\n(\S+)$/)
    )[1] as string
    const wallet = await Wallet.create()
    await wallet.open(link)
    await next(new RegExp(`^✔ \\[1/${cases.length}\\] .*\\(${setup.id}\\)$`))
    // The second case is live (its QR code printed) when the person presses Ctrl-C.
    await next(new RegExp(`^=== Case 2/${cases.length}: `))
    const interrupted = Date.now()
    child.kill('SIGINT')
    assert.equal(await exited, 0, output().stderr)
    assert.ok(Date.now() - interrupted < 10_000, 'Ctrl-C ends the run at once')
    const { stdout, stderr } = output()
    assert.match(stderr, /SIGINT: stopping; the reports cover the cases judged so far/)
    assert.match(stdout, new RegExp(`^Interrupted after 1 of ${cases.length} cases`, 'm'))
    assert.match(stdout, /^ {2}JSON {6}\S+wallet-test\.json$/m)
    assert.match(stdout, /^Verdict: the wallet behaved correctly in every case judged$/m)

    const run = JSON.parse(readFileSync(join(reports, 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.deepEqual(
      run.results.map((r) => [r.id, r.verdict.pass]),
      [[setup.id, true]],
    )
    assert.deepEqual(run.interrupted, { planned: cases.length })
    assert.equal(run.passed, true)
    const md = readFileSync(join(reports, 'wallet-test.md'), 'utf8')
    assert.match(md, new RegExp(`<sub>${setup.id}</sub> .* \\| PASS \\|`))
    assert.match(
      md,
      new RegExp(`\\*\\*Interrupted\\*\\* \\(stopped by hand\\) after 1 of ${cases.length} cases`),
    )
    const junit = readFileSync(join(reports, 'wallet-test.xml'), 'utf8')
    assert.match(junit, /<testsuites name="vc-harness wallet-test" tests="1" failures="0"/)
  } finally {
    child.kill()
  }
})
