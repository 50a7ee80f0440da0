// The server tests' plumbing: what an offer / request / result command may print, how a refusal is judged,
// and which hosts a link names. No network.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ExchangeRecorder, HostNotAllowedError } from '../../../src/harness/server-test/exchanges.ts'
import { hostsOfLink } from '../../../src/harness/server-test/index.ts'
import { serverPlanCases } from '../../../src/harness/server-test/plans.ts'
import { judgeRefusal } from '../../../src/harness/server-test/runner.ts'
import {
  commandResult,
  parseOfferOutput,
  parseRequestOutput,
  runCommand,
  SourceError,
} from '../../../src/harness/server-test/sources.ts'
import { WalletProtocolError, WalletUsageError } from '../../../src/wallet/errors.ts'

const OFFER = 'openid-credential-offer://?credential_offer_uri=https%3A%2F%2Fissuer.example%2Foffers%2F1'

describe('offer command output', () => {
  test('a deep link, with a tx_code line in either spelling', () => {
    assert.deepEqual(parseOfferOutput(`starting…\n${OFFER}\ntx_code: 493817\n`), {
      link: OFFER,
      txCode: '493817',
    })
    assert.deepEqual(parseOfferOutput(`TX_CODE=12\n${OFFER}`), { link: OFFER, txCode: '12' })
  })
  test('a bare credential_offer_uri becomes the deep link that carries it', () => {
    assert.deepEqual(parseOfferOutput('https://issuer.example/offers/1\n'), { link: OFFER })
  })
  test("the relying-party API's 4.2 answer, printed as it is", () => {
    assert.deepEqual(parseOfferOutput(JSON.stringify({ credential_offer_uri: OFFER, tx_code: '7' })), {
      link: OFFER,
      txCode: '7',
    })
  })
  test('nothing usable: a SourceError quoting what was printed', () => {
    assert.throws(
      () => parseOfferOutput('error: template not found'),
      (e: Error) => {
        assert.ok(e instanceof SourceError)
        assert.match(e.message, /printed no credential offer link.*template not found/)
        return true
      },
    )
  })
})

describe('request command output', () => {
  test('the first line carrying client_id, request_uri or request, any scheme', () => {
    const link = 'haip://?client_id=x509_hash%3Aabc&request_uri=https%3A%2F%2Fv.example%2Fr%2F1'
    assert.equal(parseRequestOutput(`session 1\n${link}\n`), link)
    assert.equal(parseRequestOutput(JSON.stringify({ authentication_request: link })), link)
    assert.throws(() => parseRequestOutput('https://v.example/'), SourceError)
  })
})

describe('result command', () => {
  test('JSON accepted, 4.7 Status, exit codes', async () => {
    assert.deepEqual(
      await commandResult(`echo '{"accepted":false,"reason":"kb nonce"}'`, { session: 's', link: 'l' }),
      {
        accepted: false,
        detail: 'kb nonce',
      },
    )
    const rejected = await commandResult(
      `echo '{"Status":"REJECTED","Validations":{"checks":[{"check":"sessionBinding","result":"failed","message":"nonce"}]}}'`,
      { session: 's', link: 'l' },
    )
    assert.deepEqual(rejected, { accepted: false, detail: 'Status REJECTED (sessionBinding: nonce)' })
    assert.equal((await commandResult('exit 1', { session: 's', link: 'l' })).accepted, false)
    assert.equal((await commandResult('exit 0', { session: 's', link: 'l' })).accepted, true)
    assert.equal((await commandResult('exit 7', { session: 's', link: 'l' })).accepted, undefined)
  })
  test('placeholders are shell-quoted: a hostile state stays one argument', async () => {
    const out = await runCommand('printf "%s|" {state} {session}', {
      state: "a'; echo pwned; '",
      session: 's 1',
    })
    assert.equal(out, "a'; echo pwned; '|s 1|")
  })
})

describe('judging a refusal', () => {
  const c = serverPlanCases('issuer').find((x) => x.id === 'issuer:proof-wrong-aud')
  assert.ok(c?.refusal)
  const refusal = c.refusal
  const answer = (status: number, error?: string, step: 'credential' | 'token' = 'credential') =>
    new WalletProtocolError({ step, status, error, errorDescription: 'said' })

  test('the right step, status and error: pass', () => {
    assert.equal(judgeRefusal(c, refusal, answer(400, 'invalid_proof')).pass, true)
  })
  test('another error: a failure naming both and the clause', () => {
    const v = judgeRefusal(c, refusal, answer(400, 'invalid_credential_request'))
    assert.equal(v.pass, false)
    assert.match(v.reason, /invalid_credential_request.*@OID4VCI-1\.0-F\.1.*invalid_proof/)
  })
  test('no answer, or a stop at an earlier step: nothing tested, never a pass', () => {
    const silent = judgeRefusal(c, refusal, answer(0, 'transport'))
    assert.equal(silent.outcome, 'nothing')
    assert.equal(silent.pass, false)
    const earlier = judgeRefusal(c, refusal, answer(400, 'invalid_grant', 'token'))
    assert.equal(earlier.outcome, 'nothing')
    assert.match(earlier.reason, /stopped at the token step/)
  })
  test('a misbehaviour that cannot apply: not applicable, not a pass', () => {
    const v = judgeRefusal(c, refusal, new WalletUsageError('no jwt proof here'))
    assert.deepEqual([v.outcome, v.pass], ['not-applicable', false])
  })
})

describe('hosts', () => {
  test('a link names its own host and those of its offer, request and response URIs', () => {
    assert.deepEqual(hostsOfLink(OFFER), ['issuer.example'])
    const byValue = `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify({ credential_issuer: 'https://i.example:8443/t' }))}`
    assert.deepEqual(hostsOfLink(byValue), ['i.example:8443'])
    assert.deepEqual(
      hostsOfLink('https://v.example/authorize?client_id=x&response_uri=https%3A%2F%2Fr.example%2F1'),
      ['v.example', 'r.example'],
    )
  })
  test('the recorder refuses a host nobody named, before any byte leaves', async () => {
    const recorder = new ExchangeRecorder(['allowed.example'])
    await assert.rejects(recorder.fetch('http://127.0.0.1:9/secret'), HostNotAllowedError)
    const [entry] = recorder.take()
    assert.equal(entry?.status, 0)
    assert.match(entry?.response ?? '', /not contacted: 127\.0\.0\.1:9 .*--allow-host/)
  })
})

describe('plans', () => {
  test('ids are unique, and every refuse case names its misbehaviour or its own code', () => {
    for (const plan of ['issuer', 'verifier'] as const) {
      const cases = serverPlanCases(plan)
      assert.equal(new Set(cases.map((c) => c.id)).size, cases.length)
      for (const c of cases) {
        assert.ok(c.sources.length > 0, c.id)
        if (c.expect === 'refuse') assert.ok(c.rule, `${c.id} has no rule`)
      }
    }
  })
})
