// The issuer plan's HAIP cases (plans.ts `haip-*`, issuer-haip.ts): the harness's wallet through the
// authorization code flow as HAIP 1.0 profiles it (PAR, PKCE S256, the authorization response's iss and state,
// DPoP, wallet attestation by vc-harness's published TEST wallet provider), against our own service (a
// template granting authorization_code, approved at once, its tenant trusting the test provider) and against
// the OpenWallet Foundation HAIP issuer (test/fixtures/owf-haip-peer.ts, driven by curl on its control API).
// Both pass every HAIP case; each flaw of the OWF peer fails exactly the case of the rule it breaks; an
// authorization endpoint that wants a person, or an untrusted wallet provider, stops the pre-flight naming
// what to do; an issuer whose offers grant no authorization code makes every HAIP case not applicable.
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { PreflightError, runIssuerTest } from '../../../src/harness/server-test/index.ts'
import { serverPlanCases } from '../../../src/harness/server-test/plans.ts'
import type { Deployment } from '../../../src/harness/server-test/relying-party.ts'
import type { ServerTestRun } from '../../../src/harness/server-test/runner.ts'
import { buildApp } from '../../../src/service/app.ts'
import { parseConfig } from '../../../src/service/config/index.ts'
import { testWalletProviderTrust } from '../../../src/shared/oauth/test-wallet-provider.ts'
import { AUTHORIZATION_MISBEHAVIOURS, walletProviderFromJwk } from '../../../src/wallet/index.ts'
import { explain as explainCli, runCli } from '../../fixtures/cli.ts'
import { SD_JWT_CONFIG } from '../../fixtures/owf-haip-issuer.ts'
import { type OwfHaipPeerOptions, startOwfHaipPeer } from '../../fixtures/owf-haip-peer.ts'

const HAIP = serverPlanCases('issuer')
  .filter((c) => c.name.startsWith('haip-'))
  .map((c) => c.id)

function outcomes(run: ServerTestRun): Record<string, string> {
  return Object.fromEntries(run.results.map((r) => [r.id, r.verdict.pass ? 'pass' : r.verdict.outcome]))
}
const failures = (run: ServerTestRun) =>
  run.results.filter((r) => !r.verdict.pass && r.verdict.outcome !== 'not-applicable').map((r) => r.id)
const explain = (run: ServerTestRun) =>
  run.results
    .filter((r) => !r.verdict.pass)
    .map((r) => `${r.id}: ${r.verdict.reason}`)
    .join('\n')
const reason = (run: ServerTestRun, id: string) => run.results.find((r) => r.id === id)?.verdict.reason ?? ''

describe('the HAIP cases of the issuer plan', () => {
  test('one refuse case per authorization misbehaviour of the wallet, each naming its step and clauses', () => {
    const cases = serverPlanCases('issuer').filter((c) => c.name.startsWith('haip-'))
    assert.deepEqual(
      cases
        .filter((c) => c.expect === 'refuse')
        .map((c) => c.misbehave)
        .sort(),
      [...AUTHORIZATION_MISBEHAVIOURS].sort(),
    )
    for (const c of cases) {
      assert.ok(c.sources.length > 0, c.id)
      assert.match(
        c.passes,
        /not applicable when the issuer's offers carry no authorization_code grant/,
        c.id,
      )
      if (c.expect === 'refuse') assert.ok(c.refusal && c.rule, c.id)
    }
    const refusal = (name: string) => cases.find((c) => c.name === name)?.refusal
    assert.deepEqual(refusal('haip-pkce-verifier-mismatch'), {
      step: 'token',
      errors: ['invalid_grant'],
      statuses: [400],
    })
    assert.deepEqual(refusal('haip-attestation-untrusted-provider'), {
      step: 'par',
      errors: ['invalid_client'],
      statuses: [401, 400],
    })
    assert.deepEqual(refusal('haip-dpop-token-as-bearer'), {
      step: 'credential',
      errors: ['invalid_token', undefined],
      statuses: [401],
    })
  })
})

describe('against our own service', { timeout: 240_000 }, () => {
  const DEMO = JSON.parse(readFileSync('config/demo.json', 'utf8'))
  const demo = DEMO.tenants[0]
  const admin = demo.apiKeys.find((k: { role: string }) => k.role === 'admin')
  const HAIP_KEY = {
    id: '6a2f0c1d-8e4b-4a7c-9d3e-5b1f2a3c4d70',
    secret: 'server-test-haip-secret-P3vN8qW2xK5m',
  }
  const keyOf = (template: string) => {
    const k = demo.apiKeys.find((x: { template?: string }) => x.template === template)
    return { id: k.id as string, secret: k.secret as string }
  }
  let app: FastifyInstance
  let url = ''
  const deployment = (template: string, appKey: { id: string; secret: string }): Deployment => ({
    describe: `the reference service at ${url}`,
    urls: { authUrl: url, issuerUrl: url, verifierUrl: url },
    tenant: 'demo',
    appKey,
    adminKey: { id: admin.id, secret: admin.secret },
    issuanceTemplate: template,
  })

  before(async () => {
    // the demo tenant trusts the test wallet provider (testWalletProvider: true); a template granting the
    // authorization code, approved at once (the test mode an automated run needs), whose wallet-initiated
    // authorization submits its content at once
    const raw = structuredClone(DEMO)
    raw.tenants[0].issuanceTemplates.push({
      id: 'pid-haip-auto',
      credentialType: 'VerifiableId',
      format: 'dc+sd-jwt',
      signingAlg: 'ES256',
      grants: ['authorization_code'],
      authorization: {
        userStep: 'auto',
        credentials: [
          {
            type: ['VerifiableCredential', 'VerifiableId'],
            credentialSubject: { familyName: 'Hopper', givenName: 'Grace' },
          },
        ],
      },
    })
    raw.tenants[0].apiKeys.push({ ...HAIP_KEY, role: 'app', template: 'pid-haip-auto' })
    app = await buildApp({
      config: parseConfig(raw, 'the HAIP server test configuration'),
      publicUrl: () => url,
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const address = app.server.address()
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  })
  after(() => app?.close())

  test('through the relying-party API (--profile): every HAIP case passes, the rest as named', async () => {
    const run = await runIssuerTest({ source: { deployment: deployment('pid-haip-auto', HAIP_KEY) } })
    const expected = Object.fromEntries(run.results.map((r) => [r.id, 'pass']))
    // no tx_code, draft 15 served beside 1.0, a token living an hour; the authorization code flow has no
    // pre-authorized code to replay, and its token grants credential_identifiers (1.0 §6.2, §8.2)
    for (const name of [
      'proof-legacy-shape',
      'credential-format-legacy',
      'code-replayed',
      'tx-code-wrong',
      'tx-code-missing',
      'token-expired',
      'unknown-configuration',
    ])
      expected[`issuer:${name}`] = 'not-applicable'
    assert.deepEqual(outcomes(run), expected, explain(run))
    assert.equal(run.passed, true)
    assert.match(reason(run, 'issuer:haip-code-replay'), /400 invalid_grant/)
    assert.match(reason(run, 'issuer:haip-dpop-token-as-bearer'), /401 invalid_token/)
    assert.match(reason(run, 'issuer:haip-attestation-untrusted-provider'), /par answered 401 invalid_client/)
    // the first redemption's token was revoked by the replay (RFC 6749 §4.1.2), and the report says so
    const replay = run.results.find((r) => r.id === 'issuer:haip-code-replay')
    assert.ok(
      replay?.observed.some((o) => /refused after the replay.*revoked/.test(o)),
      replay?.observed.join('\n'),
    )
    // the evidence: PAR, authorization, token, credential; the code, its verifier and the token masked
    const flow = run.results.find((r) => r.id === 'issuer:haip-flow')
    const lines = (flow?.exchanges ?? []).map((e) => `${e.method} ${new URL(e.url).pathname} ${e.status}`)
    for (const expected of [
      /^POST \/oid4vci\/demo\/par 201$/,
      /^GET \/oid4vci\/demo\/authorize 302$/,
      /^POST \/oid4vci\/demo\/token 200$/,
      /^POST \/oid4vci\/demo\/credential 200$/,
    ])
      assert.ok(
        lines.some((l) => expected.test(l)),
        `${expected}: ${lines.join('\n')}`,
      )
    const text = JSON.stringify(run)
    assert.match(text, /code=\[redacted:authorization-code\]/)
    assert.match(text, /code_verifier=\[redacted:code-verifier\]/)
    assert.doesNotMatch(text, /"access_token":"(?!\[redacted)/)
  })

  test('an authorization endpoint that wants a person (the demo pid-haip, a page): the pre-flight names the test mode', async () => {
    await assert.rejects(
      runIssuerTest({ source: { deployment: deployment('pid-haip', keyOf('pid-haip')) } }),
      (error: unknown) => {
        assert.ok(error instanceof PreflightError, String(error))
        assert.match(error.message, /interaction_required/)
        assert.match(error.message, /approve at once in a test mode/)
        return true
      },
    )
  })

  test('a wallet provider the issuer does not trust: the pre-flight says what to trust', async () => {
    const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })
    await assert.rejects(
      runIssuerTest({
        source: { deployment: deployment('pid-haip-auto', HAIP_KEY) },
        authorization: { walletProvider: walletProviderFromJwk(jwk as Record<string, unknown>) },
      }),
      (error: unknown) => {
        assert.ok(error instanceof PreflightError, String(error))
        assert.match(error.message, /invalid_client/)
        assert.match(error.message, /--list-trust/)
        return true
      },
    )
  })

  test('offers granting the pre-authorized code only: every HAIP case is not applicable, saying why', async () => {
    const run = await runIssuerTest({
      source: { deployment: deployment('degree', keyOf('degree')) },
      only: HAIP,
    })
    assert.deepEqual(
      Object.values(outcomes(run)),
      HAIP.map(() => 'not-applicable'),
    )
    for (const r of run.results) assert.match(r.verdict.reason, /no authorization_code grant/, r.id)
    assert.equal(run.passed, false, 'nothing green on nothing')
  })
})

describe('against the OWF HAIP issuer, through curl on its control API', { timeout: 300_000 }, () => {
  const TEST_PROVIDER = testWalletProviderTrust.jwks?.[0] as JsonWebKey
  const peerRun = async (
    options: Omit<OwfHaipPeerOptions, 'trustedWalletProviders'> = {},
    only?: readonly string[],
    query = '',
  ) => {
    const peer = await startOwfHaipPeer({ trustedWalletProviders: [TEST_PROVIDER], ...options })
    try {
      return await runIssuerTest({
        source: { offerCommand: `curl -sf '${peer.control}/offer${query}'` },
        trustAnchors: [peer.caPem],
        ...(only ? { only } : {}),
      })
    } finally {
      await peer.close()
    }
  }

  test('correct: every HAIP case passes; the whole plan fails only the library defect the pre-authorized OWF issuer has too', async () => {
    const run = await peerRun()
    // @openid4vc/openid4vci answers an unsigned key proof with its schema's invalid_credential_request, not
    // invalid_proof (OpenID4VCI 1.0 §8.3.1.2): owf-plans.test.ts's OWF_ISSUER_DEFECTS
    assert.deepEqual(failures(run), ['issuer:proof-alg-none'], explain(run))
    for (const id of HAIP) assert.equal(outcomes(run)[id], 'pass', `${id}: ${reason(run, id)}`)
    assert.match(reason(run, 'issuer:haip-token-dpop'), /cnf\.jkt the DPoP key's thumbprint/)
  })

  test('correct, dc+sd-jwt offers (x5c chains to the peer CA): every HAIP case passes', async () => {
    const run = await peerRun({}, HAIP, `?configuration=${SD_JWT_CONFIG}`)
    assert.deepEqual(failures(run), [], explain(run))
    assert.equal(run.totals.pass, HAIP.length)
  })

  const FLAWS: [Omit<OwfHaipPeerOptions, 'trustedWalletProviders'>, string, RegExp][] = [
    [
      { flaw: 'replayable-code' },
      'issuer:haip-code-replay',
      /redeemed a second time.*answered the second redemption of the authorization code with an access token/,
    ],
    [
      { flaw: 'accept-bearer' },
      'issuer:haip-dpop-token-as-bearer',
      /Authorization: Bearer.*issued a credential/,
    ],
    [
      { flaw: 'ignore-pkce' },
      'issuer:haip-pkce-verifier-mismatch',
      /code_verifier.*answered the token request with an access token/,
    ],
    [{ flaw: 'ignore-redirect-uri' }, 'issuer:haip-wrong-redirect-uri', /redirect_uri.*@RFC6749-4\.1\.3/],
    [
      { issuerFlaw: 'no-par-required' },
      'issuer:haip-metadata',
      /require_pushed_authorization_requests is false, not true/,
    ],
  ]
  for (const [options, id, why] of FLAWS) {
    test(`${options.flaw ?? options.issuerFlaw}: fails exactly ${id}`, async () => {
      const run = await peerRun(options, HAIP)
      assert.deepEqual(failures(run), [id], explain(run))
      assert.match(reason(run, id), why)
    })
  }

  test('no iss in the authorization response (RFC 9207 §2.4): the response case fails naming it; the cases past it test nothing', async () => {
    const run = await peerRun({ issuerFlaw: 'no-iss' }, HAIP)
    // what is judged before the authorization response still passes: the metadata, the PAR refusals
    const unaffected = [
      'issuer:haip-metadata',
      'issuer:haip-attestation-untrusted-provider',
      'issuer:haip-attestation-pop-wrong-aud',
    ]
    assert.deepEqual(failures(run).sort(), HAIP.filter((id) => !unaffected.includes(id)).sort(), explain(run))
    assert.match(reason(run, 'issuer:haip-authorization-response'), /the authorization response has no iss/)
    assert.equal(outcomes(run)['issuer:haip-pkce-verifier-mismatch'], 'nothing')
  })
})

describe('issuer-test on the command line', { timeout: 60_000 }, () => {
  test('--list-trust prints the wallet provider the issuer must trust: the TEST one, or that of --wallet-provider-key', async () => {
    const run = await runCli(['issuer-test', '--list-trust'])
    assert.equal(run.code, 0, explainCli(run))
    const jwk = testWalletProviderTrust.jwks?.[0] as Record<string, string>
    assert.match(run.stdout, /published TEST wallet provider/)
    assert.ok(run.stdout.includes(`"x": "${jwk.x}"`), run.stdout)
    assert.ok(run.stdout.includes(`wallet attestation iss: ${testWalletProviderTrust.issuer}`))
    const dir = mkdtempSync(join(tmpdir(), 'vc-harness-provider-'))
    try {
      const file = join(dir, 'provider.json')
      const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })
      writeFileSync(file, JSON.stringify({ ...key, kid: 'my-provider' }))
      const own = await runCli([
        'issuer-test',
        '--list-trust',
        '--wallet-provider-key',
        file,
        '--wallet-provider-issuer',
        'https://provider.example',
      ])
      assert.equal(own.code, 0, explainCli(own))
      assert.ok(own.stdout.includes(`"x": "${key.x}"`), own.stdout)
      assert.match(own.stdout, /"kid": "my-provider"/)
      assert.match(own.stdout, /wallet attestation iss: https:\/\/provider\.example/)
      assert.doesNotMatch(own.stdout, /"d"/)
      const lonely = await runCli(['issuer-test', '--list-trust', '--wallet-provider-issuer', 'x'])
      assert.equal(lonely.code, 2, explainCli(lonely))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('--list shows the HAIP cases with their refusal', async () => {
    const run = await runCli(['issuer-test', '--list'])
    assert.equal(run.code, 0, explainCli(run))
    assert.match(
      run.stdout,
      /^issuer:haip-pkce-verifier-mismatch\trefuse \(misbehaviour pkce-verifier-mismatch\)\t@RFC7636-4\.6 @HAIP-1\.0-4\.1/m,
    )
    assert.equal(run.stdout.match(/^issuer:haip-/gm)?.length, HAIP.length)
  })
})
