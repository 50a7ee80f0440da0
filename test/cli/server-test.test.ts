// `vc-harness issuer-test` and `verifier-test` as users run them: usage errors (exit 2), --list, a pre-flight
// that names what is wrong (exit 3), and a real run against the OWF issuer peer: a failing case is exit 1 with
// its reason on the console and in the three reports.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { explain, runCli } from '../fixtures/cli.ts'
import { startOwfIssuerPeer } from '../fixtures/owf-peers.ts'

describe('issuer-test and verifier-test on the command line', { timeout: 180_000 }, () => {
  test('usage errors are exit 2 and say what to give', async () => {
    const none = await runCli(['issuer-test'])
    assert.equal(none.code, 2, explain(none))
    assert.match(none.stderr, /exactly one of --offer-command and --profile/)
    const half = await runCli(['issuer-test', '--offer-command', 'true', '--deferred-offer-command', 'true'])
    assert.equal(half.code, 2, explain(half))
    assert.match(half.stderr, /--deferred-offer-command and --complete-command go together/)
    const unknown = await runCli(['verifier-test', '--list', '--case', 'verifier:nope'])
    assert.equal(unknown.code, 2, explain(unknown))
    assert.match(unknown.stderr, /verifier:nope: not a case of the verifier plan/)
  })

  test('--list prints every case with its clauses, rule and what passes', async () => {
    const list = await runCli(['issuer-test', '--list'])
    assert.equal(list.code, 0, explain(list))
    assert.match(
      list.stdout,
      /^issuer:proof-missing\trefuse \(misbehaviour missing-proof\)\t@OID4VCI-1\.0-8\.2/m,
    )
    assert.match(list.stdout, /rule: the credential request carries neither proof nor proofs/)
    assert.equal(list.stdout.match(/^issuer:/gm)?.length, 41)
    const verifier = await runCli(['verifier-test', '--list'])
    assert.equal(verifier.stdout.match(/^verifier:/gm)?.length, 35)
    // the ISO mdoc cases: the OIDF suite's invalid-session-transcript among them
    assert.match(
      verifier.stdout,
      /^verifier:mdoc-wrong-nonce\trefuse \(misbehaviour mdoc-wrong-nonce\)\t@OID4VP-1\.0-B\.2\.6\.1/m,
    )
  })

  test('a pre-flight problem is exit 3, naming it', async () => {
    const silent = await runCli(['issuer-test', '--offer-command', 'echo no offer here'])
    assert.equal(silent.code, 3, explain(silent))
    assert.match(
      silent.stderr,
      /pre-flight: the offer command printed no credential offer link.*no offer here/,
    )
    const failing = await runCli(['verifier-test', '--request-command', 'exit 4', '--wallet', '/dev/null'])
    assert.equal(failing.code, 3, explain(failing))
    assert.match(failing.stderr, /pre-flight: --request-command exited 4/)
  })

  test('a flawed issuer: exit 1, the failing case and its reason on the console and in the reports', async () => {
    const peer = await startOwfIssuerPeer({ flaw: 'replayable-code' })
    const reports = mkdtempSync(join(tmpdir(), 'vc-harness-issuer-test-'))
    try {
      const run = await runCli([
        'issuer-test',
        '--offer-command',
        `curl -sf ${peer.control}/offer`,
        '--case',
        'issuer:happy-flow',
        '--case',
        'issuer:code-replayed',
        '--reports',
        reports,
      ])
      assert.equal(run.code, 1, explain(run))
      assert.match(run.stdout, /✔ \[1\/2\] .*issuer:happy-flow/)
      assert.match(
        run.stdout,
        /✘ \[2\/2\] .*issuer:code-replayed\)\n\s+FAIL: the pre-authorized code is redeemed a second time: the issuer answered the token request with an access token/,
      )
      for (const file of ['issuer-test.json', 'issuer-test.md', 'issuer-test.xml'])
        assert.ok(existsSync(join(reports, file)), file)
      const junit = readFileSync(join(reports, 'issuer-test.xml'), 'utf8')
      assert.match(junit, /tests="2" failures="1"/)
      const json = readFileSync(join(reports, 'issuer-test.json'), 'utf8')
      // the evidence is there, the secrets are not
      assert.match(json, /"url": "http:\/\/127\.0\.0\.1:\d+\/oauth\/x7\/exchange-code"/)
      assert.match(json, /\[redacted:pre-authorized-code\]/)
      assert.doesNotMatch(json, /"access_token\\":\\"(?!\[redacted)/)
    } finally {
      await peer.close()
      rmSync(reports, { recursive: true, force: true })
    }
  })
})
