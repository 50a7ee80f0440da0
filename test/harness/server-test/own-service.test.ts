// Our own service must pass both server test plans against itself (issue 34): through a deployment of the
// relying-party API (what --profile gives), and through offer / request / result commands that drive the
// relying-party API with curl (examples/server-test/relying-party.sh), as a user of another issuer writes them.
// Every case is named with its expected outcome: a case that turns not-applicable or fails is caught.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { runIssuerTest, runVerifierTest } from '../../../src/harness/server-test/index.ts'
import type { Deployment } from '../../../src/harness/server-test/relying-party.ts'
import type { ServerTestRun } from '../../../src/harness/server-test/runner.ts'
import { startTestIssuer } from '../../../src/harness/server-test/test-issuer.ts'
import { buildApp } from '../../../src/service/app.ts'
import { parseConfig } from '../../../src/service/config/index.ts'
import { Wallet } from '../../../src/wallet/index.ts'

const SCRIPT = 'examples/server-test/relying-party.sh'
const DEMO = JSON.parse(readFileSync('config/demo.json', 'utf8'))
const demo = DEMO.tenants[0]
const key = (template: string) => {
  const k = demo.apiKeys.find((x: { template?: string }) => x.template === template)
  return { id: k.id as string, secret: k.secret as string }
}
const admin = demo.apiKeys.find((x: { role: string }) => x.role === 'admin')

let app: FastifyInstance
let url = ''
let deployment: Deployment
/** the test issuer's data folder: its IACA, which the mdl-test-issuer template trusts, stays the same */
const issuerDir = mkdtempSync(join(tmpdir(), 'vc-harness-test-issuer-'))
const MDL_TEST_ISSUER_KEY = {
  id: '7d2e4f61-3a5b-4c7d-9e8f-0a1b2c3d4e5f',
  secret: 'server-test-mdl-secret-K8jH2gF5dS4a',
}

before(async () => {
  // The demo configuration, plus a template asking for a tx_code and an access token lifetime of one minute
  // (the schema's least), so the tx_code and token-expired cases apply.
  const raw = structuredClone(DEMO)
  raw.oid4vci = { accessTokenLifetimeSeconds: 60 }
  raw.tenants[0].issuanceTemplates.push({
    id: 'degree-tx',
    credentialType: 'UniversityDegreeCredential',
    txCode: { length: 6 },
  })
  raw.tenants[0].apiKeys.push({
    id: '3c1e9a57-2b4d-4e6f-8a1b-9c0d2e3f4a05',
    secret: 'server-test-tx-secret-Q9wE3rT6yU1i',
    role: 'app',
    template: 'degree-tx',
  })
  // and an OpenID4VP 1.0 template whose request object is fetched with POST (request_uri_method=post, §5.10)
  raw.tenants[0].verificationTemplates.push({
    id: 'pid-check-post',
    name: 'Identity check, request_uri POST',
    profile: 'dcql',
    credentialTypes: ['VerifiableId'],
    requestedFields: [{ path: '$.credentialSubject.familyName' }],
    dcql: {
      format: 'dc+sd-jwt',
      clientIdPrefix: 'decentralized_identifier',
      responseMode: 'direct_post',
      requestUriMethod: 'post',
    },
  })
  // and an mdoc check trusting the harness's test issuer's IACA (what --list-trust prints), whose mDL the
  // verifier plan presents when run with a request command
  const testIssuer = await startTestIssuer({ dataDir: issuerDir })
  const iaca = testIssuer.trust.iacaPem
  await testIssuer.close()
  raw.tenants[0].verificationTemplates.push({
    id: 'mdl-test-issuer',
    name: "Driving licence check, the harness's test issuer",
    profile: 'dcql',
    credentialTypes: ['org.iso.18013.5.1.mDL'],
    requestedFields: [{ path: '$.credentialSubject.family_name' }],
    trustAnchors: [iaca],
    dcql: { format: 'mso_mdoc', clientIdPrefix: 'decentralized_identifier', responseMode: 'direct_post' },
  })
  raw.tenants[0].apiKeys.push({ ...MDL_TEST_ISSUER_KEY, role: 'app', template: 'mdl-test-issuer' })
  app = await buildApp({ config: parseConfig(raw, 'the server test configuration'), publicUrl: () => url })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  deployment = {
    describe: `the reference service at ${url}`,
    urls: { authUrl: url, issuerUrl: url, verifierUrl: url },
    tenant: 'demo',
    appKey: key('degree'),
    adminKey: { id: admin.id, secret: admin.secret },
    issuanceTemplate: 'degree',
    verificationTemplate: 'degree-check',
  }
})
after(async () => {
  await app.close()
  rmSync(issuerDir, { recursive: true, force: true })
})

/** id → outcome, for the whole run at once (a failure message then shows every difference). */
function outcomes(run: ServerTestRun): Record<string, string> {
  return Object.fromEntries(run.results.map((r) => [r.id, r.verdict.pass ? 'pass' : r.verdict.outcome]))
}
function explain(run: ServerTestRun): string {
  return run.results
    .filter((r) => !r.verdict.pass)
    .map((r) => `${r.id}: ${r.verdict.reason}`)
    .join('\n')
}

const script = (command: string, env: Record<string, string>) =>
  `env ${Object.entries({ VC_HARNESS_URL: url, ...env })
    .map(([k, v]) => `${k}='${v}'`)
    .join(' ')} sh ${SCRIPT} ${command}`

describe('issuer plan against our own service', { timeout: 240_000 }, () => {
  test('through the relying-party API (--profile): every case that applies passes', async () => {
    const run = await runIssuerTest({ source: { deployment } })
    const expected: Record<string, string> = Object.fromEntries(run.results.map((r) => [r.id, 'pass']))
    // the demo's degree offer asks for no tx_code; the service serves draft 15 beside 1.0; a token lives 60 s
    for (const id of [
      'tx-code-wrong',
      'tx-code-missing',
      'proof-legacy-shape',
      'credential-format-legacy',
      'token-expired',
    ])
      expected[`issuer:${id}`] = 'not-applicable'
    // the degree offers grant the pre-authorized code only: the HAIP cases are haip.test.ts's
    for (const r of run.results) if (r.id.startsWith('issuer:haip-')) expected[r.id] = 'not-applicable'
    assert.deepEqual(outcomes(run), expected, explain(run))
    assert.equal(run.passed, true)
    // the evidence: every judged case recorded the exchanges, secrets masked
    for (const r of run.results.filter((x) => x.verdict.pass)) assert.ok(r.exchanges.length > 0, r.id)
    const text = JSON.stringify(run)
    assert.match(text, /\[redacted:pre-authorized-code\]/)
    assert.doesNotMatch(text, /"access_token":"(?!\[redacted)/)
  })

  test('through curl commands: tx_code, deferred and an expired token', async () => {
    const txEnv = {
      VC_HARNESS_TEMPLATE: 'degree-tx',
      VC_HARNESS_KEY_ID: '3c1e9a57-2b4d-4e6f-8a1b-9c0d2e3f4a05',
      VC_HARNESS_KEY_SECRET: 'server-test-tx-secret-Q9wE3rT6yU1i',
    }
    const tx = await runIssuerTest({
      source: { offerCommand: script('offer', txEnv) },
      only: ['issuer:happy-flow', 'issuer:tx-code-wrong', 'issuer:tx-code-missing'],
    })
    assert.deepEqual(
      outcomes(tx),
      { 'issuer:happy-flow': 'pass', 'issuer:tx-code-wrong': 'pass', 'issuer:tx-code-missing': 'pass' },
      explain(tx),
    )
    const later = await runIssuerTest({
      source: {
        offerCommand: script('offer', {}),
        deferredOfferCommand: script('deferred-offer', {}),
        completeCommand: `${script('complete', {})} {offer} {transaction_id}`,
      },
      only: ['issuer:deferred', 'issuer:token-expired'],
      tokenWaitMs: 70_000,
      caseTimeoutMs: 90_000,
    })
    assert.deepEqual(
      outcomes(later),
      { 'issuer:deferred': 'pass', 'issuer:token-expired': 'pass' },
      explain(later),
    )
    assert.match(later.results[1]?.verdict.reason ?? '', /401 invalid_token/)
  })
})

describe('verifier plan against our own service', { timeout: 240_000 }, () => {
  const PE_CASES = [
    'happy-flow',
    'request-uri-twice',
    'response-replayed',
    'vp-foreign-key',
    'vp-wrong-nonce',
    'vp-wrong-aud',
    'vp-replayed',
    'tampered-credential',
    'untrusted-issuer',
    'revoked-credential',
    'lying-submission',
  ]
  const SD_CASES = [
    'happy-flow',
    'request-uri-twice',
    'response-replayed',
    'vp-token-wrong-id',
    'sd-tampered-disclosure',
    'sd-issuer-signature',
    'kb-missing',
    'kb-wrong-sd-hash',
    'kb-wrong-nonce',
    'kb-wrong-aud',
    'kb-stale-iat',
    'kb-future-iat',
    'kb-bad-signature',
    'plain-response',
    'jwe-wrong-key',
  ]
  // OpenID4VP 1.0 Appendix A: the demo's pid-check and mdl-check are offered over the DC API too
  const DC_API_CASES = [
    'dc-api-happy-flow',
    'dc-api-foreign-origin',
    'dc-api-client-id-audience',
    'dc-api-wrong-request',
  ]
  const expect = (run: ServerTestRun, passing: string[]) => {
    const expected = Object.fromEntries(
      run.results.map((r) => [
        r.id,
        passing.includes(r.id.slice('verifier:'.length)) ? 'pass' : 'not-applicable',
      ]),
    )
    assert.deepEqual(outcomes(run), expected, explain(run))
    assert.equal(run.passed, true)
  }

  test('Presentation Exchange through the relying-party API, credentials from its issuance template', async () => {
    expect(await runVerifierTest({ source: { deployment } }), PE_CASES)
  })

  test('OpenID4VP 1.0 with DCQL, SD-JWT VC and direct_post.jwt through the relying-party API', async () => {
    const run = await runVerifierTest({
      source: { deployment, verificationTemplate: 'pid-check', issuanceTemplates: ['pid-sd-jwt'] },
    })
    // pid-check is offered over the Digital Credentials API too (dcql.dcApi, signed): the dc-api-* cases apply
    expect(run, [...SD_CASES, ...DC_API_CASES])
  })

  test('Linked Data: an ldp_vp answers the same Presentation Exchange request', async () => {
    const run = await runVerifierTest({ source: { deployment, issuanceTemplates: ['degree-ldp'] } })
    expect(run, [...PE_CASES, 'ldp-undefined-term'])
  })

  test('a request object fetched with POST (request_uri_method=post)', async () => {
    const run = await runVerifierTest({
      source: { deployment, verificationTemplate: 'pid-check-post', issuanceTemplates: ['pid-sd-jwt'] },
      only: [
        'verifier:happy-flow',
        'verifier:request-uri-twice',
        'verifier:request-uri-post',
        'verifier:kb-wrong-nonce',
      ],
    })
    expect(run, ['happy-flow', 'request-uri-twice', 'request-uri-post', 'kb-wrong-nonce'])
  })

  // ISO mdoc (OpenID4VP 1.0 Appendix B.2): the demo's mdl-check asks for an mDL with x509_hash and
  // direct_post.jwt (HAIP); the wallet trusts the tenant's IACA (the mDL) and test CA (the request object).
  const MDOC_CASES = [
    'happy-flow',
    'request-uri-twice',
    'response-replayed',
    'vp-token-wrong-id',
    'plain-response',
    'jwe-wrong-key',
    'mdoc-happy-flow',
    'mdoc-wrong-nonce',
    'mdoc-wrong-client-id',
    'mdoc-wrong-response-uri',
    'mdoc-foreign-device-key',
    'mdoc-tampered-element',
  ]

  test('ISO mdoc: an mDL in a DeviceResponse through the relying-party API, every mdoc case passes', async () => {
    const anchor = async (what: string) => (await fetch(`${url}/oid4vci/demo/${what}`)).text()
    const run = await runVerifierTest({
      source: { deployment, verificationTemplate: 'mdl-check', issuanceTemplates: ['mdl'] },
      trustAnchors: [await anchor('iaca'), await anchor('trust-anchor')],
    })
    expect(run, [...MDOC_CASES, ...DC_API_CASES])
    const reason = (id: string) => run.results.find((r) => r.id === `verifier:${id}`)?.verdict.reason ?? ''
    assert.match(reason('mdoc-wrong-nonce'), /sessionBinding/)
    assert.match(reason('mdoc-tampered-element'), /credentialProof/)
  })

  test("ISO mdoc through curl commands, the mDL from the harness's test issuer (its IACA trusted by the template)", async () => {
    const env = { VC_HARNESS_TEMPLATE: 'mdl-test-issuer', ...prefixed(MDL_TEST_ISSUER_KEY) }
    const run = await runVerifierTest({
      source: {
        requestCommand: script('request', env),
        resultCommand: `${script('result', env)} {state} {session}`,
      },
      issuerDataDir: issuerDir,
    })
    expect(
      run,
      MDOC_CASES.filter((c) => !['plain-response', 'jwe-wrong-key'].includes(c)),
    )
  })

  test('through curl commands and a wallet file received beforehand, judged by 4.7 over curl', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-harness-server-test-'))
    try {
      const walletFile = join(dir, 'wallet.json')
      // not execFileSync: the service answering curl runs in this process
      const offer = (await promisify(execFile)('sh', ['-c', script('offer', {})])).stdout.trim()
      const wallet = await Wallet.create({ file: walletFile })
      await wallet.receive(offer)
      const env = { VC_HARNESS_TEMPLATE: 'degree-check', ...prefixed(key('degree-check')) }
      const run = await runVerifierTest({
        source: {
          requestCommand: script('request', env),
          resultCommand: `${script('result', env)} {state} {session}`,
        },
        walletFile,
      })
      // a wallet file holds no revoked credential: that case does not apply
      expect(
        run,
        PE_CASES.filter((c) => c !== 'revoked-credential'),
      )
      assert.match(run.results[0]?.verdict.reason ?? '', /Status VERIFIED/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

function prefixed(k: { id: string; secret: string }) {
  return { VC_HARNESS_KEY_ID: k.id, VC_HARNESS_KEY_SECRET: k.secret }
}
