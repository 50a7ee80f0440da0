import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { inProcessDriver } from '../../../src/harness/wallet-test/drivers.ts'
import { runWalletTest } from '../../../src/harness/wallet-test/runner.ts'
import { p256WalletOnce } from './wallets.ts'

// Issue 17's proof that the plans discriminate, second half (first half: test/harness/wallet-test/our-wallet.test.ts): the same
// wallet with its checks switched off (trustEverything, test-only) fails every case with a fault. A file of
// its own so the two runs overlap under the test runner's concurrency.

describe('wallet test plans discriminate', () => {
  test('a wallet that checks nothing fails every case with a fault and still completes the valid flows', async () => {
    const run = await runWalletTest({
      plan: 'all',
      driver: inProcessDriver(p256WalletOnce({ trustEverything: true }), 'careless wallet'),
      caseTimeoutMs: 20_000,
    })
    // Every case with a fault: the negative ones, and token-without-c-nonce, a positive case a careless
    // wallet fails by sending its proof without a nonce. Not par-not-required: a positive case that relaxes
    // the metadata (HAIP wallets push their requests anyway), which tests that a wallet copes, not a check;
    // nor dc-api-multisigned-one-invalid-signature: a multi-signed request with one good signature, which
    // every wallet must answer (the careless one too).
    const copes = new Set(['par-not-required', 'dc-api-multisigned-one-invalid-signature'])
    const faulty = run.results.filter((r) => r.fault !== undefined && !copes.has(r.fault))
    const passedFaulty = faulty.filter((r) => r.verdict.pass).map((r) => `${r.id}: ${r.verdict.reason}`)
    assert.deepEqual(passedFaulty, [], 'a fault a careless wallet gets through is a defect of the plan')
    const failedValid = run.results.filter((r) => r.fault === undefined && !r.verdict.pass)
    assert.deepEqual(
      failedValid.map((r) => `${r.id}: ${r.verdict.reason}`),
      [],
      'the careless wallet still completes valid flows',
    )
    assert.equal(run.passed, false)
    for (const r of faulty.filter((x) => x.expect === 'refuse')) {
      assert.equal(r.verdict.outcome, 'answered', `${r.id}: the careless wallet went on`)
    }
  })
})
