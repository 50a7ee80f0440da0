import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import {
  commandFor,
  commandProblem,
  dcApiAnswerOf,
  inProcessDriver,
  type OpensLinks,
} from '../../../src/harness/wallet-test/drivers.ts'
import { isDcApiCase, planCases, type WalletCase } from '../../../src/harness/wallet-test/plans.ts'
import { runWalletTest, type WalletTestRun } from '../../../src/harness/wallet-test/runner.ts'
import type { Wallet } from '../../../src/wallet/index.ts'
import { p256WalletOnce } from './wallets.ts'

// The plan over the W3C Digital Credentials API (presentation-dc-api, OpenID4VP 1.0 Appendix A): the harness
// plays the browser, hands the request entry and the origin to the wallet and posts its answer to the verifier.
// Our wallet passes every case and the careless one fails the refusals (our-wallet.test.ts and
// careless-wallet.test.ts, plan all); here a wallet that ignores expected_origins fails exactly the two cases
// about them, and the CLI runs the plan with `vc-harness wallet dc-api` as the command.

const PLAN = 'presentation-dc-api'
const id = (name: string) => `${PLAN}:${name}`
const failures = (run: WalletTestRun) => run.results.filter((r) => !r.verdict.pass).map((r) => r.id)

describe('presentation-dc-api', () => {
  test('its cases: two setups first, every other case asked over the DC API, each naming its clauses', () => {
    const cases = planCases(PLAN)
    assert.deepEqual(
      cases.slice(0, 2).map((c) => c.id),
      [id('setup'), id('setup-mdoc')],
    )
    for (const c of cases.slice(2)) {
      assert.ok(isDcApiCase(c), c.id)
      assert.ok(
        c.sources.some((s) => s.startsWith('@OID4VP-1.0-A')),
        `${c.id} cites Appendix A`,
      )
    }
    const refusals = cases.filter((c) => c.expect === 'refuse').map((c) => c.id)
    assert.deepEqual(refusals, [
      id('multisigned-all-invalid'),
      id('wrong-expected-origins'),
      id('expected-origins-missing'),
      id('request-foreign-signature'),
    ])
    const one = cases.find((c) => c.id === id('multisigned-one-invalid-signature')) as WalletCase
    assert.equal(one.expect, 'accept')
    assert.equal(one.fault, 'dc-api-multisigned-one-invalid-signature')
  })

  test('a wallet that ignores expected_origins (dc-api-ignore-expected-origins) fails exactly the two cases about them', async () => {
    const wallets = p256WalletOnce()
    const misbehaving = async (ctx: Parameters<typeof wallets>[0]): Promise<OpensLinks> => {
      const wallet: Wallet = await wallets(ctx)
      return {
        open: (link) => wallet.open(link),
        presentDcApi: (input) =>
          wallet.presentDcApi(input, { misbehave: ['dc-api-ignore-expected-origins'] }),
      }
    }
    const run = await runWalletTest({
      plan: PLAN,
      only: [id('setup'), id('wrong-expected-origins'), id('expected-origins-missing')],
      driver: inProcessDriver(misbehaving, 'a wallet ignoring expected_origins'),
      caseTimeoutMs: 20_000,
    })
    assert.deepEqual(failures(run), [id('wrong-expected-origins'), id('expected-origins-missing')])
    for (const r of run.results.slice(1)) {
      assert.match(r.verdict.reason, /yet the wallet sent a presentation/, r.id)
      assert.match(
        r.output ?? '',
        /posted the wallet's answer to the verifier with origin http:\/\/127\.0\.0\.1:\d+: 200/,
      )
    }
  })

  test('a driver that cannot hand over a DC API request leaves the cases out and says so', async () => {
    const notes: string[] = []
    const run = await runWalletTest({
      plan: PLAN,
      only: [id('setup'), id('positive-unsigned')],
      driver: { describe: 'links only', settleMs: 0, open: async () => ({ exitCode: 1 }) },
      caseTimeoutMs: 5_000,
      onProgress: (e) => {
        if (e.kind === 'ready') notes.push(...e.notes)
      },
    })
    assert.deepEqual(
      run.results.map((r) => r.id),
      [id('setup')],
    )
    assert.ok(
      notes.some((n) => /1 case of presentation-dc-api left out/.test(n)),
      notes.join('\n'),
    )
    await assert.rejects(
      runWalletTest({
        plan: PLAN,
        only: [id('positive-unsigned')],
        driver: { describe: 'by hand', interactive: true, open: async () => ({}) },
      }),
      /driven by hand cannot be asked/,
    )
  })

  test('commands: {dc_api_request} and {origin} for the DC API cases, {link} for the others; the answer is stdout', () => {
    const testCase = planCases(PLAN)[2] as WalletCase
    const ctx = {
      link: 'http://127.0.0.1:1/oid4vp/t/dc-api/s',
      trustAnchorFile: '/ta.pem',
      walletFile: '/w.json',
      testCase,
      dcApi: { request: {}, origin: 'http://127.0.0.1:1', requestFile: '/tmp/r.json' },
    }
    assert.equal(
      commandFor('w dc-api --origin {origin} --request {dc_api_request} {link}', ctx),
      "w dc-api --origin 'http://127.0.0.1:1' --request '/tmp/r.json' ''",
    )
    const { dcApi: _, ...linkCtx } = ctx
    assert.equal(commandFor('w {link} {origin}', linkCtx), "w 'http://127.0.0.1:1/oid4vp/t/dc-api/s' ''")
    assert.equal(commandProblem('w open {link}', 'presentation-dcql'), undefined)
    assert.match(commandProblem('w open {link}', PLAN) ?? '', /--dc-api-command/)
    assert.equal(commandProblem('w open {link}', PLAN, 'w dc-api --request {dc_api_request}'), undefined)
    assert.match(commandProblem('w open {link}', PLAN, 'w dc-api') ?? '', /must contain \{dc_api_request\}/)
    assert.equal(commandProblem('w open {link}', 'all'), undefined)
    const answer = { protocol: 'openid4vp-v1-unsigned', data: { vp_token: { q: ['x'] } } }
    assert.deepEqual(dcApiAnswerOf(JSON.stringify(answer, null, 2)), answer)
    assert.deepEqual(dcApiAnswerOf(`holder: did:key:z\n${JSON.stringify(answer, null, 2)}`), answer)
    assert.equal(dcApiAnswerOf('refused'), undefined)
    assert.equal(dcApiAnswerOf('{"protocol": "p"}'), undefined)
  })
})

describe('vc-harness wallet-test --plan presentation-dc-api', () => {
  const BIN = new URL('../../../bin/vc-harness.mjs', import.meta.url).pathname
  const dir = mkdtempSync(join(tmpdir(), 'wallet-test-dc-api-'))
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
  const run = (reports: string, dcApiCommand: string, cases: string[]) =>
    cli([
      '--plan',
      PLAN,
      ...cases.flatMap((c) => ['--case', id(c)]),
      '--wallet-command',
      'vc-harness wallet open --key-type P-256 {link}',
      '--dc-api-command',
      dcApiCommand,
      '--reports',
      reports,
    ])

  test('our CLI wallet as the DC API command passes positive and negative cases; misbehaving, it fails the refusal', async () => {
    const cases = ['setup', 'positive-unsigned', 'positive-multisigned', 'wrong-expected-origins']
    const good = await run(
      join(dir, 'ok'),
      'vc-harness wallet dc-api --origin {origin} --request {dc_api_request}',
      cases,
    )
    assert.equal(good.code, 0, `${good.stdout}\n${good.stderr}`)
    const json = JSON.parse(readFileSync(join(dir, 'ok', 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.deepEqual(
      json.results.map((r) => [r.id, r.verdict.pass]),
      cases.map((c) => [id(c), true]),
    )
    const refused = json.results.find((r) => r.id === id('wrong-expected-origins'))
    assert.equal(refused?.exitCode, 1)
    assert.match(refused?.verdict.reason ?? '', /refused: error response invalid_request/)

    const careless = await run(
      join(dir, 'careless'),
      'vc-harness wallet dc-api --origin {origin} --request {dc_api_request} --misbehave dc-api-ignore-expected-origins',
      ['setup', 'wrong-expected-origins'],
    )
    assert.equal(careless.code, 1, careless.stderr)
    const bad = JSON.parse(readFileSync(join(dir, 'careless', 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.deepEqual(
      bad.results.map((r) => [r.id, r.verdict.pass]),
      [
        [id('setup'), true],
        [id('wrong-expected-origins'), false],
      ],
    )
  })

  test('the plan without a DC API command is a usage error (exit 2)', async () => {
    const out = await cli(['--plan', PLAN, '--wallet-command', 'vc-harness wallet open {link}'])
    assert.equal(out.code, 2)
    assert.match(out.stderr, /--dc-api-command/)
  })
})
