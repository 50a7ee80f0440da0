// Our wallet and the reference service with ISO mdocs (mso_mdoc), both halves for real: the demo tenant's `mdl`
// issuance template (OpenID4VCI 1.0 Appendix A.2; the IACA from GET /oid4vci/<tenant>/iaca as the wallet's
// trust anchor) and its `mdl-check` verification template (OpenID4VP 1.0 DCQL, x509_hash, direct_post.jwt:
// the SessionTranscript binds the response encryption key's thumbprint); each mdoc misbehaviour gets the
// verifier's refusal under the check it breaks.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { type DcqlSessionCreated, ok, RelyingPartyClient, type SessionRead } from '../../src/client/index.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import {
  MDOC_PRESENTATION_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'

const TENANT = 'demo'
const NS = 'org.iso.18013.5.1'
const APP_KEY = {
  id: '5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
  secret: 'wallet-mdoc-service-secret-0123456789abcdef',
  role: 'app',
}
const LICENCE = [
  {
    type: ['VerifiableCredential', 'org.iso.18013.5.1.mDL'],
    credentialSubject: { [NS]: { family_name: 'Lovelace', given_name: 'Ada', age_over_18: true } },
  },
]

let server: RunningServer
let rp: RelyingPartyClient
let appToken: string
let iaca: string
let wallet: Wallet

async function offer(): Promise<string> {
  const body = ok(await rp.createOffer(appToken, 'mdl'), 'offer mdl')
  const processId = new URL(
    decodeURIComponent(body.credential_offer_uri.split('credential_offer_uri=')[1] ?? ''),
  ).pathname
    .split('/')
    .at(-1) as string
  ok(await rp.submitCredentials(appToken, processId, LICENCE), 'submit')
  return body.credential_offer_uri
}

before(async () => {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  raw.tenants.find((t: { id: string }) => t.id === TENANT).apiKeys.push(APP_KEY)
  server = await startServer({
    config: parseConfig(raw, 'wallet mdoc-service test configuration'),
    host: '127.0.0.1',
    port: 0,
    dataDir: ':memory:',
  })
  rp = new RelyingPartyClient(server.url)
  appToken = await rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT })
  iaca = await (await fetch(`${server.url}/oid4vci/${TENANT}/iaca`)).text()
  // the IACA for the mdoc's issuerAuth; the tenant CA for the x509_hash request object
  const ca = await (await fetch(`${server.url}/oid4vci/${TENANT}/trust-anchor`)).text()
  wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: [iaca, ca] })
  const received = await wallet.receive(await offer())
  assert.equal(received.status, 'issued')
})
after(() => server?.close())

const session = async () =>
  ok(await rp.createSession<DcqlSessionCreated>(appToken, 'mdl-check'), 'session mdl-check')
const read = async (id: string) => (await rp.readSession(appToken, id)).body as SessionRead

describe('our wallet and our service with an mDL', () => {
  test('received: verified to the IACA, its status read, stored with doctype and elements', () => {
    const [stored] = wallet.credentials()
    assert.equal(stored?.format, 'mso_mdoc')
    assert.equal(stored?.doctype, 'org.iso.18013.5.1.mDL')
    assert.deepEqual(stored?.credentialSubject, LICENCE[0]?.credentialSubject)
  })

  test('an Ed25519 wallet is told to use a P-256 one before the code is redeemed', async () => {
    const ed = await Wallet.create({ keyType: 'Ed25519', trustAnchors: [iaca] })
    await assert.rejects(
      ed.receive(await offer()),
      (e: Error) => e instanceof WalletUsageError && /--key-type P-256/.test(e.message),
    )
  })

  test('mdl-check (x509_hash, direct_post.jwt): VERIFIED, no warning', async () => {
    const created = await session()
    const result = await wallet.present(created.authentication_request)
    assert.equal(result.responseMode, 'direct_post.jwt')
    const s = await read(created.id)
    assert.equal(s.Status, 'VERIFIED', JSON.stringify(s.Validations))
    assert.deepEqual(s.Validations?.verificationResult.warnings, [])
  })

  const EXPECTED: Record<string, { check: string; reason: RegExp } | { warning: RegExp }> = {
    'mdoc-wrong-nonce': { check: 'sessionBinding', reason: /the deviceSignature does not verify/ },
    'mdoc-wrong-client-id': { check: 'sessionBinding', reason: /the deviceSignature does not verify/ },
    'mdoc-wrong-response-uri': { check: 'sessionBinding', reason: /the deviceSignature does not verify/ },
    'mdoc-foreign-device-key': { check: 'sessionBinding', reason: /the deviceSignature does not verify/ },
    'mdoc-tampered-element': {
      check: 'credentialProof',
      reason: /org\.iso\.18013\.5\.1\/family_name: its value does not match its digest in the MSO/,
    },
    'mdoc-extra-element': { warning: /claims disclosed beyond the query: org\.iso\.18013\.5\.1\.given_name/ },
  }

  test('every mdoc misbehaviour has an expectation', () => {
    assert.deepEqual(Object.keys(EXPECTED).sort(), [...MDOC_PRESENTATION_MISBEHAVIOURS].sort())
  })

  for (const [misbehaviour, expected] of Object.entries(EXPECTED)) {
    test(`${misbehaviour}: ${'check' in expected ? `REJECTED under ${expected.check}` : 'VERIFIED with a warning'}`, async () => {
      const created = await session()
      const answer = wallet.present(created.authentication_request, {
        misbehave: [misbehaviour as PresentationMisbehaviour],
      })
      const s = async () => read(created.id)
      if ('warning' in expected) {
        await answer
        const verified = await s()
        assert.equal(verified.Status, 'VERIFIED')
        assert.match(verified.Validations?.verificationResult.warnings.join(' | ') ?? '', expected.warning)
        return
      }
      await assert.rejects(answer, (e: Error) => e instanceof WalletProtocolError && e.status === 400)
      const rejected = await s()
      assert.equal(rejected.Status, 'REJECTED')
      const errors = rejected.Validations?.verificationResult.errors ?? []
      assert.ok(
        errors.some((e) => e.startsWith(`${expected.check}:`) && expected.reason.test(e)),
        errors.join(' | '),
      )
    })
  }
})
