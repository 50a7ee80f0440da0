// Our wallet's authorization code flow (HAIP 1.0: PAR, PKCE S256, wallet attestation by the test wallet
// provider, DPoP with the server's nonces) against the reference service over real HTTP: issuer-initiated
// and wallet-initiated, dc+sd-jwt and jwt_vc_json, immediate and attended; the user step as a page, driven
// through the wallet's userStep callback; and each misbehaviour refused by the service with the error and
// the clause it names (the issuer-test side of issue 36: what a misbehaving wallet meets here).
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ok, type RelyingPartyClient } from '../../src/client/index.ts'
import {
  AUTHORIZATION_MISBEHAVIOURS,
  type AuthorizationMisbehaviour,
  type StoredCredential,
  Wallet,
  WalletProtocolError,
  type WalletStep,
} from '../../src/wallet/index.ts'
import {
  DEGREE,
  offerFor,
  startIssuer,
  type TestIssuer,
  VERIFIABLE_ID,
} from '../service/oid4vci/http-wallet.ts'

const TEMPLATES = [
  {
    id: 'pid-code',
    credentialType: 'VerifiableId',
    format: 'dc+sd-jwt',
    signingAlg: 'ES256',
    grants: ['authorization_code'],
    authorization: { userStep: 'auto' },
  },
  {
    id: 'degree-code',
    credentialType: 'UniversityDegreeCredential',
    signingAlg: 'ES256',
    grants: ['authorization_code'],
    authorization: { userStep: 'auto', credentials: DEGREE },
  },
  {
    id: 'degree-page',
    credentialType: 'UniversityDegreeCredential',
    signingAlg: 'ES256',
    grants: ['authorization_code'],
    authorization: { userStep: 'page', credentials: DEGREE },
  },
]

let t: TestIssuer
let rp: RelyingPartyClient
let appToken: string
let adminToken: string
let issuer: string

before(async () => {
  // The demo tenant trusts the test wallet provider the wallet attests itself with.
  t = await startIssuer({ templates: TEMPLATES, label: 'test/wallet/haip-service.test.ts' })
  ;({ rp, appToken, adminToken, issuer } = t)
})
after(() => t?.close())

const offer = (group: string, content?: unknown) => offerFor(t, group, content)

const wallet = () => Wallet.create({ keyType: 'P-256' })

async function rejectsWith(
  promise: Promise<unknown>,
  expected: { step: WalletStep; status: number; error: string; description: RegExp },
) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof WalletProtocolError, String(error))
    assert.equal(error.step, expected.step, error.message)
    assert.equal(error.status, expected.status, error.message)
    assert.equal(error.error, expected.error, error.message)
    assert.match(String(error.errorDescription), expected.description)
    return true
  })
}

describe('our wallet against the service', () => {
  test('issuer-initiated dc+sd-jwt, immediate: the process ISSUED, the credential bound to the wallet', async () => {
    const w = await wallet()
    const { link, processId } = await offer('pid-code', VERIFIABLE_ID)
    const steps: string[] = []
    const result = await w.receive(link, { onStep: (step) => steps.push(step) })
    assert.equal(result.status, 'issued')
    assert.equal(result.session.flow, 'authorization_code')
    assert.ok(steps.includes('authorization'))
    const [stored] = result.credentials as [StoredCredential]
    assert.equal(stored.format, 'dc+sd-jwt')
    assert.equal(stored.credentialSubject.familyName, 'Hopper')
    assert.equal(ok(await rp.getProcess(appToken, processId), 'process').status, 'ISSUED')
  })

  test('issuer-initiated dc+sd-jwt, attended: pending, the administrator submits, the deferred download', async () => {
    const w = await wallet()
    const { link, processId } = await offer('pid-code')
    const first = await w.receive(link)
    assert.equal(first.status, 'pending')
    if (first.status !== 'pending') return
    ok(await rp.submitCredentials(adminToken, processId, VERIFIABLE_ID), 'submit')
    // The deferred download with the DPoP-bound token (RFC 9449 §7) and a fresh proof.
    const issued = await first.session.awaitDeferred(first.transactionId, { timeoutMs: 10_000 })
    assert.ok(issued.credentials.length > 0)
  })

  test('wallet-initiated jwt_vc_json from the metadata: issued with the template content', async () => {
    const w = await wallet()
    const result = await w.request(issuer, 'degree-code')
    assert.equal(result.status, 'issued')
    const [stored] = result.credentials as [StoredCredential]
    assert.equal(stored.format, 'jwt_vc_json')
    assert.deepEqual(stored.credentialSubject.degree, DEGREE[0]?.credentialSubject.degree)
  })

  test('the user step as a page: the wallet hands the URL to its callback, which approves on the page', async () => {
    let shown = ''
    const w = await Wallet.create({
      keyType: 'P-256',
      authorization: {
        userStep: async (url: string) => {
          shown = url
          const page = await fetch(url)
          assert.match(await page.text(), /id="approve"/)
          const params = new URL(url).searchParams
          const answer = await fetch(new URL('authorize', `${issuer}/`), {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              client_id: params.get('client_id') ?? '',
              request_uri: params.get('request_uri') ?? '',
              decision: 'approve',
            }).toString(),
            redirect: 'manual',
          })
          return answer.headers.get('location') ?? ''
        },
      },
    })
    const result = await w.request(issuer, 'degree-page')
    assert.match(shown, /\/authorize\?/)
    assert.equal(result.status, 'issued')
  })
})

/** What the service answers each misbehaviour: the step, status, error and the clause it names. */
const ANSWERS: Record<
  AuthorizationMisbehaviour,
  { step: WalletStep; status: number; error: string; description: RegExp }
> = {
  'pkce-verifier-mismatch': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /RFC 7636 §4\.6/,
  },
  'code-replay': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /already used; the access token it gave is revoked \(RFC 6749 §4\.1\.2\)/,
  },
  'dpop-wrong-htu': {
    step: 'token',
    status: 400,
    error: 'invalid_dpop_proof',
    description: /htu.*RFC 9449 §4\.3 step 9/,
  },
  'dpop-wrong-htm': {
    step: 'token',
    status: 400,
    error: 'invalid_dpop_proof',
    description: /htm.*RFC 9449 §4\.3 step 8/,
  },
  'dpop-replayed-jti': {
    step: 'token',
    status: 400,
    error: 'invalid_dpop_proof',
    description: /jti.*RFC 9449 §11\.1/,
  },
  'dpop-token-as-bearer': {
    step: 'credential',
    status: 401,
    error: 'invalid_token',
    description: /DPoP-bound.*RFC 9449 §7\.1/,
  },
  'attestation-untrusted-provider': {
    step: 'par',
    status: 401,
    error: 'invalid_client',
    description: /not signed by a wallet provider this issuer trusts/,
  },
  'attestation-pop-wrong-aud': {
    step: 'par',
    status: 401,
    error: 'invalid_client',
    description: /PoP's aud/,
  },
  'authorization-wrong-redirect-uri': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /redirect_uri is not the one of the authorization request \(RFC 6749 §4\.1\.3\)/,
  },
}

describe('each misbehaviour of the wallet is refused by the service, naming the rule', () => {
  test('the table covers every misbehaviour', () => {
    assert.deepEqual(Object.keys(ANSWERS).sort(), [...AUTHORIZATION_MISBEHAVIOURS].sort())
  })
  for (const misbehaviour of AUTHORIZATION_MISBEHAVIOURS) {
    const answer = ANSWERS[misbehaviour]
    test(`${misbehaviour}: ${answer.step} ${answer.status} ${answer.error}`, async () => {
      const w = await wallet()
      const { link, processId } = await offer('pid-code', VERIFIABLE_ID)
      await rejectsWith(w.receive(link, { misbehave: [misbehaviour] }), answer)
      assert.equal(w.credentials().length, 0)
      // Nothing was issued to a misbehaving wallet, except where the rule broken comes after issuance.
      const status = ok(await rp.getProcess(appToken, processId), 'process').status
      assert.equal(status, 'PENDING', `${misbehaviour}: the process stays PENDING`)
    })
  }
})
