import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { inProcessDriver } from '../../../src/harness/wallet-test/drivers.ts'
import { planCases } from '../../../src/harness/wallet-test/plans.ts'
import { runWalletTest, type WalletTestRun } from '../../../src/harness/wallet-test/runner.ts'
import { p256WalletOnce } from './wallets.ts'

// Issue 17's proof that the plans discriminate, first half: our own wallet passes every case of every plan
// (the careless half: test/harness/wallet-test/careless-wallet.test.ts). Then the CLI as a wallet vendor's CI runs it, with
// our CLI wallet as the command.

const BIN = new URL('../../../bin/vc-harness.mjs', import.meta.url).pathname

const failures = (run: WalletTestRun) =>
  run.results.filter((r) => !r.verdict.pass).map((r) => `${r.id}: ${r.verdict.reason}`)

describe('wallet test plans discriminate', () => {
  test('our wallet behaves correctly in every case of every plan', async () => {
    const run = await runWalletTest({
      plan: 'all',
      driver: inProcessDriver(p256WalletOnce()),
      caseTimeoutMs: 20_000,
    })
    assert.deepEqual(failures(run), [])
    assert.equal(run.results.length, planCases('all').length)
    assert.equal(run.passed, true)
    // the negative cases were refused by saying so, not by a wallet that did nothing at all
    for (const r of run.results.filter((x) => x.expect === 'refuse')) {
      assert.ok(r.verdict.observed.length > 0, `${r.id}: the wallet was seen`)
    }
  })
})

describe('vc-harness wallet-test', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wallet-test-cli-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  const cli = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'wallet-test', ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (c) => {
        stdout += c
      })
      child.stderr.on('data', (c) => {
        stderr += c
      })
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })

  test('our CLI wallet as the command passes presentation-pe cases, positive and negative: exit 0 and the three reports', async () => {
    const reports = join(dir, 'ok')
    // A few cases of the plan: each spawns the CLI wallet (~1.5 s); every plan runs in-process above.
    const cases = ['setup', 'positive', 'nonce-missing', 'query-unsatisfiable'].map(
      (c) => `presentation-pe:${c}`,
    )
    const out = await cli([
      '--plan',
      'presentation-pe',
      ...cases.flatMap((c) => ['--case', c]),
      '--wallet-command',
      'vc-harness wallet open {link}',
      '--reports',
      reports,
    ])
    assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`)
    assert.match(out.stdout, /Verdict: the wallet behaved correctly in every case/)
    const json = JSON.parse(readFileSync(join(reports, 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.equal(json.totals.fail, 0)
    assert.deepEqual(
      json.results.map((r) => r.id),
      cases,
    )
    assert.match(readFileSync(join(reports, 'wallet-test.xml'), 'utf8'), /failures="0"/)
    assert.ok(existsSync(join(reports, 'wallet-test.md')))
    assert.ok(existsSync(join(reports, 'trust-anchor.pem')))
  })

  test('a command that does nothing fails: exit 1, every case says nothing was tested', async () => {
    const reports = join(dir, 'nothing')
    const out = await cli([
      '--plan',
      'issuance-draft15',
      '--case',
      'issuance-draft15:positive',
      '--case',
      'issuance-draft15:credential-expired',
      '--wallet-command',
      'true {link}',
      '--reports',
      reports,
    ])
    assert.equal(out.code, 1, out.stderr)
    const json = JSON.parse(readFileSync(join(reports, 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.deepEqual(
      json.results.map((r) => [r.id, r.verdict.pass]),
      [
        ['issuance-draft15:positive', false],
        ['issuance-draft15:credential-expired', false],
      ],
    )
    for (const r of json.results) assert.match(r.verdict.reason, /never fetched the credential offer/)
  })

  test('usage errors exit 2', async () => {
    assert.equal((await cli(['--plan', 'nope', '--wallet-command', 'x {link}'])).code, 2)
    const noLink = await cli(['--wallet-command', 'my-wallet'])
    assert.equal(noLink.code, 2)
    assert.match(noLink.stderr, /must contain \{link\}/)
    assert.equal(
      (
        await cli([
          '--plan',
          'issuance-1.0',
          '--case',
          'presentation-pe:positive',
          '--wallet-command',
          'x {link}',
        ])
      ).code,
      2,
    )
  })
})
