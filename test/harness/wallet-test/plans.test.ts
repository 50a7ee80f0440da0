import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { ISSUANCE_TEMPLATE, walletTestConfig } from '../../../src/harness/wallet-test/config.ts'
import { commandFor, commandProblem, shellQuote } from '../../../src/harness/wallet-test/drivers.ts'
import { type Evidence, judge, settled } from '../../../src/harness/wallet-test/judge.ts'
import { PLAN_NAMES, planCases, tenantOf, type WalletCase } from '../../../src/harness/wallet-test/plans.ts'
import {
  renderConsoleSummary,
  renderJunit,
  renderMarkdown,
  walletReason,
  writeWalletTestReports,
} from '../../../src/harness/wallet-test/report.ts'
import type { WalletTestRun } from '../../../src/harness/wallet-test/runner.ts'
import { ISSUANCE_FAULTS, PRESENTATION_FAULTS } from '../../../src/service/faults/index.ts'

// The pure parts of wallet test plans: which cases exist, how a link reaches a command, and how evidence is
// judged. The end-to-end proof (our wallet passes, a careless one fails) is test/harness/wallet-test/our-wallet.test.ts.

const find = (id: string) => {
  const c = planCases('all').find((x) => x.id === id)
  assert.ok(c, id)
  return c as WalletCase
}
const ex = (endpoint: string, status: number, more: Record<string, unknown> = {}) =>
  ({ at: 0, endpoint, method: 'POST', status, ...more }) as Evidence['exchanges'][number]
const evidence = (exchanges: Evidence['exchanges'], more: Partial<Evidence> = {}): Evidence => ({
  exchanges,
  windowSeconds: 60,
  ...more,
})
const OFFER = ex('offer', 200)
const TOKEN = ex('token', 200)
const CREDENTIAL = ex('credential', 200, { proofNonce: true })
const REQUEST = ex('request', 200)

describe('wallet test plans', () => {
  test('every fault is exercised by a case, case ids and tenants are unique, each plan has positives and negatives', () => {
    const all = planCases('all')
    const faults = new Set(all.map((c) => c.fault))
    for (const fault of [...ISSUANCE_FAULTS, ...PRESENTATION_FAULTS]) assert.ok(faults.has(fault), fault)
    assert.equal(new Set(all.map((c) => c.id)).size, all.length)
    assert.equal(new Set(all.map(tenantOf)).size, all.length)
    for (const plan of PLAN_NAMES) {
      const cases = planCases(plan)
      assert.ok(
        cases.some((c) => c.expect === 'accept'),
        `${plan} has a positive case`,
      )
      assert.ok(
        cases.some((c) => c.expect === 'refuse'),
        `${plan} has a negative case`,
      )
      for (const c of cases) {
        assert.ok(
          c.sources.length > 0 && c.sources.every((s) => s.startsWith('@')),
          `${c.id} names its clauses`,
        )
        if (c.expect === 'refuse') assert.ok(c.rule, `${c.id} names its rule`)
      }
    }
    assert.equal(
      all.length,
      PLAN_NAMES.reduce((n, p) => n + planCases(p).length, 0),
    )
  })

  test('a presentation plan issues its credential first and answers a valid request before nonce-reused', () => {
    for (const plan of ['presentation-pe', 'presentation-pe-ldp', 'presentation-dcql'] as const) {
      const ids = planCases(plan).map((c) => c.id)
      assert.equal(ids[0], `${plan}:setup`)
      assert.ok(ids.indexOf(`${plan}:positive`) < ids.indexOf(`${plan}:nonce-reused`))
    }
  })
})

describe('the Linked Data plan (presentation-pe-ldp, issue 33)', () => {
  const cases = planCases('presentation-pe-ldp')
  const setup = cases[0] as WalletCase

  test('its setup issues an ldp_vc of a type no other plan issues, which every presentation case asks for in a pe session', () => {
    assert.equal(setup.id, 'presentation-pe-ldp:setup')
    assert.deepEqual(setup.flow, {
      kind: 'issuance',
      generation: 'draft15',
      format: 'ldp_vc',
      credentialType: 'PermanentResidentCard',
    })
    for (const c of cases.slice(1)) {
      assert.equal(c.flow.kind, 'presentation', c.id)
      assert.deepEqual(
        [c.flow.profile, c.flow.format, c.flow.credentialType],
        ['pe', 'ldp_vc', 'PermanentResidentCard'],
        c.id,
      )
    }
    // under plan all the wallet holds no other credential of the type: it must answer with the ldp_vc
    const others = planCases('all').filter((c) => c.plan !== 'presentation-pe-ldp')
    assert.ok(!others.some((c) => c.flow.credentialType === 'PermanentResidentCard'))
  })

  test("it judges the wallet on presentation-pe's request faults, format-not-offered aside (it narrows a definition to ldp)", () => {
    const faultsOf = (plan: 'presentation-pe' | 'presentation-pe-ldp') =>
      planCases(plan).flatMap((c) => (c.fault ? [c.fault] : []))
    assert.deepEqual(
      faultsOf('presentation-pe-ldp'),
      faultsOf('presentation-pe').filter((f) => f !== 'format-not-offered'),
    )
    const positive = find('presentation-pe-ldp:positive')
    assert.equal(positive.expect, 'accept')
    assert.ok(positive.sources.includes('@VC-DATA-INTEGRITY-2.1'))
    assert.ok(
      cases.findIndex((c) => c.id === positive.id) < cases.findIndex((c) => c.fault === 'nonce-reused'),
    )
  })

  test("its tenant's issuance template signs ldp_vc with Ed25519Signature2018 by the EdDSA key", async () => {
    const { config } = await walletTestConfig([setup], '127.0.0.1')
    const template = config.tenants.find((t) => t.id === tenantOf(setup))?.issuanceTemplates[0]
    assert.ok(template)
    assert.deepEqual(
      [template.id, template.format, template.proofType, template.signingAlg, template.credentialType],
      [ISSUANCE_TEMPLATE, 'ldp_vc', 'Ed25519Signature2018', 'EdDSA', 'PermanentResidentCard'],
    )
    assert.equal(template.display?.name, 'Permanent resident card (wallet test)')
  })
})

describe('the wallet command', () => {
  test("{link} becomes one argument however many & % ' and spaces it carries", () => {
    const link = "openid4vp://?client_id=x509_san_dns%3Ahost&request_uri=http://h/r?a=1&b='2' $(touch /tmp/x)"
    const ctx = {
      link,
      trustAnchorFile: '/tmp/a b.pem',
      walletFile: '/tmp/w.json',
      testCase: find('presentation-pe:positive'),
    }
    for (const template of [
      'printf "%s\\n" {link} {trust_anchor} {case}',
      'printf "%s\\n" \'{link}\' "{trust_anchor}" {case}',
    ]) {
      const out = spawnSync('/bin/sh', ['-c', commandFor(template, ctx)], { encoding: 'utf8' })
      assert.equal(out.status, 0, out.stderr)
      assert.deepEqual(out.stdout.split('\n').slice(0, 3), [link, '/tmp/a b.pem', 'presentation-pe:positive'])
    }
    assert.equal(shellQuote("it's"), `'it'\\''s'`)
  })

  test('a command without {link} or an empty one is a usage problem', () => {
    assert.match(commandProblem('my-wallet --open') ?? '', /must contain \{link\}/)
    assert.match(commandProblem('  ') ?? '', /empty/)
    assert.equal(commandProblem('w {link}'), undefined)
  })
})

describe('judging', () => {
  test('a positive issuance passes only when the credential is received and kept', () => {
    const c = find('issuance-1.0:positive')
    assert.equal(
      judge(
        c,
        evidence(
          [OFFER, TOKEN, CREDENTIAL, ex('notification', 204, { notification: 'credential_accepted' })],
          { exitCode: 0 },
        ),
      ).pass,
      true,
    )
    assert.equal(judge(c, evidence([OFFER, TOKEN, CREDENTIAL], { exitCode: 0 })).pass, true)
    const refused = judge(
      c,
      evidence([OFFER, TOKEN, CREDENTIAL, ex('notification', 204, { notification: 'credential_failure' })], {
        exitCode: 1,
      }),
    )
    assert.equal(refused.pass, false)
    assert.match(refused.reason, /received a valid credential but notified credential_failure/)
    const never = judge(c, evidence([], { exitCode: 1 }))
    assert.equal(never.pass, false)
    assert.match(never.reason, /never fetched the credential offer .*nothing was tested/)
  })

  test('a negative issuance fails when the wallet keeps the credential, passes when it says no', () => {
    const c = find('issuance-1.0:credential-expired')
    const kept = judge(c, evidence([OFFER, TOKEN, CREDENTIAL], { exitCode: 0 }))
    assert.equal(kept.pass, false)
    assert.equal(kept.outcome, 'answered')
    assert.match(
      kept.reason,
      /^the credential's expiry \(exp \/ validUntil\) is in the past, yet the wallet command exited 0/,
    )
    const accepted = judge(
      c,
      evidence([OFFER, TOKEN, CREDENTIAL, ex('notification', 204, { notification: 'credential_accepted' })], {
        exitCode: 1,
      }),
    )
    assert.equal(accepted.pass, false)
    assert.match(accepted.reason, /notified credential_accepted/)
    const failure = judge(
      c,
      evidence([OFFER, TOKEN, CREDENTIAL, ex('notification', 204, { notification: 'credential_failure' })], {
        exitCode: 1,
      }),
    )
    assert.deepEqual([failure.pass, failure.outcome], [true, 'refused'])
    const byExit = judge(c, evidence([OFFER, TOKEN, CREDENTIAL], { exitCode: 1 }))
    assert.deepEqual([byExit.pass, byExit.outcome], [true, 'refused'])
    // by hand (no command): silence after taking the credential is keeping it
    assert.equal(judge(c, evidence([OFFER, TOKEN, CREDENTIAL])).pass, false)
    // a command still running when the window closed says nothing either
    assert.equal(judge(c, evidence([OFFER, TOKEN, CREDENTIAL], { exitCode: null })).pass, false)
  })

  test('metadata-issuer-mismatch fails as soon as the code is redeemed', () => {
    const c = find('issuance-draft15:metadata-issuer-mismatch')
    const redeemed = judge(c, evidence([OFFER, TOKEN], { exitCode: 1 }))
    assert.equal(redeemed.pass, false)
    assert.match(redeemed.reason, /redeemed the pre-authorized code .*§12\.2\.2/)
    assert.deepEqual(
      judge(c, evidence([OFFER, ex('issuer-metadata', 200, { method: 'GET' })], { exitCode: 1 })).pass,
      true,
    )
    assert.equal(settled(c, [OFFER, TOKEN]), true)
  })

  test('token-without-c-nonce passes only with a credential obtained through an issuer nonce', () => {
    const c = find('issuance-draft15:token-without-c-nonce')
    const gaveUp = judge(
      c,
      evidence([OFFER, TOKEN, ex('credential', 400, { error: 'invalid_nonce', proofNonce: false })], {
        exitCode: 1,
      }),
    )
    assert.equal(gaveUp.pass, false)
    assert.match(gaveUp.reason, /sent a key proof without a nonce/)
    const recovered = judge(
      c,
      evidence(
        [OFFER, TOKEN, ex('credential', 400, { error: 'invalid_nonce', proofNonce: false }), CREDENTIAL],
        { exitCode: 0 },
      ),
    )
    assert.equal(recovered.pass, true)
  })

  test('a negative presentation fails on any vp_token, passes on an error response or silence after fetching', () => {
    const c = find('presentation-dcql:nonce-missing')
    const sent = judge(
      c,
      evidence([REQUEST, ex('response', 200, { vpToken: true })], { exitCode: 0, sessionStatus: 'VERIFIED' }),
    )
    assert.equal(sent.pass, false)
    assert.equal(sent.reason, 'the request object carries no nonce, yet the wallet sent a presentation')
    const denied = judge(
      c,
      evidence([REQUEST, ex('response', 200, { walletError: 'access_denied' })], { exitCode: 1 }),
    )
    assert.deepEqual([denied.pass, denied.outcome], [true, 'refused'])
    assert.match(denied.reason, /access_denied/)
    assert.deepEqual(judge(c, evidence([REQUEST], { exitCode: 1 })).pass, true)
    const untested = judge(c, evidence([], { exitCode: 0 }))
    assert.equal(untested.pass, false)
    assert.match(untested.reason, /never fetched the request object/)
    const foreign = judge(
      find('presentation-dcql:response-uri-foreign-origin-x509-san-dns'),
      evidence([REQUEST, ex('response', 200, { vpToken: true, origin: 'foreign' })], { exitCode: 0 }),
    )
    assert.match(foreign.reason, /to the foreign response_uri/)
  })

  test('a positive presentation needs a VERIFIED session', () => {
    const c = find('presentation-dcql:positive')
    assert.equal(
      judge(
        c,
        evidence([REQUEST, ex('response', 200, { vpToken: true })], {
          sessionStatus: 'VERIFIED',
          exitCode: 0,
        }),
      ).pass,
      true,
    )
    const rejected = judge(
      c,
      evidence([REQUEST, ex('response', 400, { vpToken: true })], {
        sessionStatus: 'REJECTED',
        failedChecks: ['presentationProof: bad'],
        exitCode: 1,
      }),
    )
    assert.equal(rejected.pass, false)
    assert.match(rejected.reason, /REJECTED \(presentationProof: bad\)/)
    // the redirect_uri request is all in the link: no fetch to see
    assert.match(
      judge(find('presentation-dcql:positive-redirect-uri'), evidence([], { exitCode: 0 })).reason,
      /^no answer/,
    )
  })
})

describe('reports', () => {
  const c = find('presentation-pe:nonce-missing')
  const run: WalletTestRun = {
    format: 'vc-harness-wallet-test/1',
    plan: 'presentation-pe',
    wallet: 'careless <wallet> & co',
    serviceUrl: 'http://127.0.0.1:1',
    startedAt: '2026-11-24T20:00:00.000Z',
    finishedAt: '2026-11-24T20:00:01.000Z',
    durationMs: 1000,
    totals: { cases: 2, pass: 1, fail: 1 },
    passed: false,
    results: [
      {
        id: c.id,
        plan: c.plan,
        title: c.title,
        sources: c.sources,
        expect: c.expect,
        fault: 'nonce-missing',
        passes: c.passes,
        tenant: tenantOf(c),
        verdict: {
          outcome: 'answered',
          pass: false,
          reason: 'the request object carries no nonce, yet the wallet sent a presentation',
          observed: ['POST response → 200: vp_token'],
        },
        durationMs: 400,
        output: 'done \u0007 <ok>',
      },
      {
        id: 'presentation-pe:positive',
        plan: c.plan,
        title: 'The wallet answers',
        sources: ['@OID4VP-draft20-5'],
        expect: 'accept',
        passes: 'VERIFIED',
        tenant: 't',
        verdict: { outcome: 'answered', pass: true, reason: 'answered', observed: [] },
        durationMs: 300,
      },
    ],
  }

  test('JUnit: a testcase per case, the failure carries the reason, counts match, text escaped', () => {
    const junit = renderJunit(run)
    assert.match(junit, /<testsuites name="vc-harness wallet-test" tests="2" failures="1"/)
    assert.match(junit, /<testsuite name="presentation-pe" tests="2" failures="1"/)
    assert.equal(junit.match(/<testcase /g)?.length, 2)
    assert.match(
      junit,
      /<failure message="the request object carries no nonce, yet the wallet sent a presentation" type="nonce-missing">/,
    )
    assert.match(junit, /\[@OID4VP-draft20-5\.2 @OID4VP-draft20-14\.1\]/)
    assert.match(junit, /done {2}&lt;ok&gt;/)
    assert.equal(junit.includes(String.fromCharCode(7)), false)
  })

  test('Markdown: a row per requirement with sources and reason, failures in detail', () => {
    const md = renderMarkdown(run)
    assert.match(md, /\*\*2 cases: 1 pass, 1 fail\*\*/)
    assert.match(
      md,
      /\| The wallet refuses a request without a nonce <sub>presentation-pe:nonce-missing<\/sub> \| @OID4VP-draft20-5\.2 @OID4VP-draft20-14\.1 \| nonce-missing \| \*\*FAIL\*\* \| answered \|/,
    )
    assert.match(md, /## Failures in detail/)
  })

  // What our CLI wallet prints when it refuses a request without a nonce (stdout JSON, then its stderr line),
  // with an access token in it, as a vendor's wallet may log one.
  const refusal = [
    'holder: did:key:z6MkegC4 (Ed25519)',
    '{',
    '  "kind": "presentation",',
    '  "status": "failed",',
    '  "error": "invalid_request_object"',
    '}',
    'vc-harness wallet: request: 200 invalid_request_object: the request object has no nonce (Authorization: Bearer eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl)',
  ].join('\n')
  const refused = {
    ...(run.results[1] as WalletTestRun['results'][number]),
    id: c.id,
    title: c.title,
    fault: 'nonce-missing',
    verdict: {
      outcome: 'nothing' as const,
      pass: true,
      reason: 'refused: sent nothing after fetching the request (the wallet command exited 1)',
      observed: ['GET request → 200', 'the wallet command exited 1'],
    },
    exitCode: 1,
    output: refusal,
  }

  test('Markdown: the wallet\'s own reason beside "the wallet command exited 1", masked and bounded', () => {
    const md = renderMarkdown({ ...run, results: [refused] })
    const row = md.split('\n').find((line) => line.includes('<sub>presentation-pe:nonce-missing</sub>'))
    assert.ok(row)
    assert.match(
      row,
      /\| refused: sent nothing after fetching the request \(the wallet command exited 1\)<br>the wallet said: `vc-harness wallet: request: 200 invalid_request_object: the request object has no nonce \(Authorization: Bearer \[redacted:access-token\]\)` \|$/,
    )
    assert.equal(md.includes('eyJhbGciOiJFZERTQSJ9'), false, 'the token is masked')
    // A failed case: the same line in its details, and the whole output, masked.
    const failed = renderMarkdown({
      ...run,
      results: [{ ...refused, verdict: { ...refused.verdict, pass: false } }],
    })
    assert.match(failed, /^- The wallet said: `vc-harness wallet: request: 200 invalid_request_object: /m)
    assert.match(failed, /^ {2}"status": "failed",$/m)
    assert.equal(failed.includes('eyJhbGciOiJFZERTQSJ9'), false)

    // One line of at most 300 characters, whatever the wallet printed.
    const long = walletReason({ ...refused, output: `Error: ${'x'.repeat(1000)}` })
    assert.equal(long?.length, 300)
    assert.match(long ?? '', /^Error: x+…$/)
    // No error line: the last line the wallet printed.
    assert.equal(
      walletReason({ ...refused, output: 'step 1\nstep 2: waiting for the user' }),
      'step 2: waiting for the user',
    )
    // Exit 0 (it completed) or no output: nothing to say.
    assert.equal(walletReason({ ...refused, exitCode: 0 }), undefined)
    assert.equal(walletReason({ ...refused, output: undefined }), undefined)
  })

  test('the JSON and JUnit reports mask the same output', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wallet-test-report-'))
    try {
      writeWalletTestReports({ ...run, results: [refused] }, dir)
      const json = JSON.parse(readFileSync(join(dir, 'wallet-test.json'), 'utf8')) as WalletTestRun
      assert.match(json.results[0]?.output ?? '', /Bearer \[redacted:access-token\]\)$/)
      assert.equal(json.results[0]?.exitCode, 1)
      for (const file of ['wallet-test.json', 'wallet-test.md', 'wallet-test.xml'])
        assert.equal(readFileSync(join(dir, file), 'utf8').includes('eyJhbGciOiJFZERTQSJ9'), false, file)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a run stopped by hand says so in the Markdown and the summary; none judged is no pass', () => {
    const stopped: WalletTestRun = {
      ...run,
      totals: { cases: 1, pass: 1, fail: 0 },
      passed: true,
      results: [refused],
      interrupted: { planned: 9 },
    }
    assert.match(renderMarkdown(stopped), /the wallet behaved correctly in every case judged/)
    assert.match(renderMarkdown(stopped), /\*\*Interrupted\*\* \(stopped by hand\) after 1 of 9 cases/)
    const summary = renderConsoleSummary(stopped)
    assert.match(summary, /^Interrupted after 1 of 9 cases/m)
    assert.match(summary, /^Verdict: the wallet behaved correctly in every case judged$/m)
    const none = renderConsoleSummary({
      ...stopped,
      totals: { cases: 0, pass: 0, fail: 0 },
      passed: false,
      results: [],
    })
    assert.match(none, /^Verdict: FAILED \(no case was judged\)$/m)
  })
})
