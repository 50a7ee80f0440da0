// The server test plans discriminate, against code nobody here wrote (issue 34): the OpenWallet Foundation's
// Openid4vciIssuer and Openid4vpVerifier (test/fixtures/owf-peers.ts), driven only through the commands a user
// of another stack writes (curl on the peers' control API). Correct, the plans pass but for what the library
// itself gets wrong (each named below); with one deliberate flaw, the plan fails exactly that flaw's case.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { runIssuerTest, runVerifierTest } from '../../../src/harness/server-test/index.ts'
import type { ServerTestRun } from '../../../src/harness/server-test/runner.ts'
import { startTestIssuer, type TestIssuerTrust } from '../../../src/harness/server-test/test-issuer.ts'
import { startOwfIssuerPeer, startOwfVerifierPeer } from '../../fixtures/owf-peers.ts'

function failures(run: ServerTestRun): string[] {
  return run.results.filter((r) => !r.verdict.pass && r.verdict.outcome !== 'not-applicable').map((r) => r.id)
}
const explain = (run: ServerTestRun) =>
  run.results
    .filter((r) => !r.verdict.pass)
    .map((r) => `${r.id}: ${r.verdict.reason}`)
    .join('\n')

/**
 * What the correct OWF issuer gets wrong by itself (@openid4vc/oauth2 and @openid4vc/openid4vci 0.4.6): it never
 * checks a key proof's iat (verifyJwt checks exp and nbf only), answers an unsigned proof with the request
 * schema's invalid_credential_request instead of invalid_proof (OpenID4VCI 1.0 §8.3.1.2), and an unknown
 * configuration or credential_identifier with invalid_credential_request instead of the codes §8.3.1.2 names.
 */
const OWF_ISSUER_DEFECTS = [
  'issuer:proof-stale-iat',
  'issuer:proof-future-iat',
  'issuer:proof-alg-none',
  'issuer:unknown-configuration',
  'issuer:unknown-identifier',
]

const issuerRun = async (flaw?: 'accept-any-nonce' | 'replayable-code') => {
  const peer = await startOwfIssuerPeer({ ...(flaw ? { flaw } : {}), accessTokenLifetimeSeconds: 3 })
  try {
    const control = peer.control
    return await runIssuerTest({
      source: {
        offerCommand: `curl -sf ${control}/offer`,
        deferredOfferCommand: `curl -sf '${control}/offer?deferred=1'`,
        completeCommand: `curl -sf -X POST --data-urlencode transaction_id={transaction_id} ${control}/complete`,
      },
      tokenWaitMs: 10_000,
    })
  } finally {
    await peer.close()
  }
}

describe('the issuer plan against the OWF issuer', { timeout: 300_000 }, () => {
  test('correct: every failure is one of the library defects named above', async () => {
    const run = await issuerRun()
    assert.deepEqual(failures(run).sort(), [...OWF_ISSUER_DEFECTS].sort(), explain(run))
    const passed = run.results.filter((r) => r.verdict.pass).map((r) => r.id)
    for (const id of [
      'issuer:happy-flow',
      'issuer:nonce-unknown',
      'issuer:nonce-reused',
      'issuer:code-replayed',
      'issuer:deferred',
      'issuer:token-expired',
    ])
      assert.ok(passed.includes(id), `${id}: ${explain(run)}`)
  })
  test('accepting a proof without the issued nonce fails exactly the nonce cases', async () => {
    const run = await issuerRun('accept-any-nonce')
    assert.deepEqual(
      failures(run).sort(),
      [...OWF_ISSUER_DEFECTS, 'issuer:nonce-unknown', 'issuer:nonce-reused'].sort(),
      explain(run),
    )
    const unknown = run.results.find((r) => r.id === 'issuer:nonce-unknown')
    assert.match(unknown?.verdict.reason ?? '', /issued a credential.*@OID4VCI-1\.0-7/)
  })
  test('accepting a replayed pre-authorized code fails exactly code-replayed', async () => {
    const run = await issuerRun('replayable-code')
    assert.deepEqual(
      failures(run).sort(),
      [...OWF_ISSUER_DEFECTS, 'issuer:code-replayed'].sort(),
      explain(run),
    )
  })
})

describe('the verifier plan against the OWF verifier', { timeout: 300_000 }, () => {
  let dataDir: string
  let trust: TestIssuerTrust
  before(async () => {
    // what --list-trust prints: the test issuer's CA, kept in a data folder the runs below reuse
    dataDir = mkdtempSync(join(tmpdir(), 'vc-harness-test-issuer-'))
    const issuer = await startTestIssuer({ dataDir })
    trust = issuer.trust
    await issuer.close()
  })
  after(() => rmSync(dataDir, { recursive: true, force: true }))

  const verifierRun = async (flaw?: 'ignore-kb-nonce', mode = 'direct_post.jwt') => {
    const peer = await startOwfVerifierPeer({
      ...(flaw ? { flaw } : {}),
      // the CA for the credentials' x5c, the DIDs for the token status lists they point at
      trustedIssuer: [trust.trustAnchorPem, ...trust.dids],
      vct: trust.vct,
      claims: ['familyName'],
    })
    try {
      const control = peer.control
      return await runVerifierTest({
        source: {
          requestCommand: `curl -sf '${control}/request?response_mode=${mode}'`,
          resultCommand: `curl -sf -G --data-urlencode state={state} ${control}/result`,
        },
        issuerDataDir: dataDir,
        trustAnchors: [peer.caPem],
      })
    } finally {
      await peer.close()
    }
  }

  test('correct: every SD-JWT VC and encryption case passes', async () => {
    const run = await verifierRun()
    assert.deepEqual(failures(run), [], explain(run))
    const passed = run.results.filter((r) => r.verdict.pass).map((r) => r.id)
    for (const id of [
      'verifier:happy-flow',
      'verifier:kb-wrong-nonce',
      'verifier:kb-bad-signature',
      'verifier:sd-issuer-signature',
      'verifier:jwe-wrong-key',
      'verifier:plain-response',
    ])
      assert.ok(passed.includes(id), `${id}: ${explain(run)}`)
  })
  test("accepting a KB-JWT whose nonce is not the session's fails exactly kb-wrong-nonce", async () => {
    const run = await verifierRun('ignore-kb-nonce')
    assert.deepEqual(failures(run), ['verifier:kb-wrong-nonce'], explain(run))
    const [failure] = run.results.filter((r) => r.id === 'verifier:kb-wrong-nonce')
    assert.match(failure?.verdict.reason ?? '', /KB-JWT's nonce is not the request's nonce.*accepted it/)
  })
})
