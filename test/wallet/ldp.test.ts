// The simulated wallet's Linked Data side (issue 33): it receives ldp_vc credentials from the reference
// service over real HTTP, verifies them at receipt, and answers a Presentation Exchange session (section 2.8's
// `ldp_vp`) with the proof type the definition lists that its key makes; each ldp_vp misbehaviour really
// changes what is sent and the service names the check that broke.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import {
  ok,
  parseCredentialOfferUri,
  RelyingPartyClient,
  type SessionCreated,
  type SessionRead,
} from '../../src/client/index.ts'
import { type LdProofType, verifyLd } from '../../src/formats/ldp-vc/suites.ts'
import { ldpVp } from '../../src/formats/ldp-vc/verify.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import {
  type HolderKeyType,
  type PresentationMisbehaviour,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import { chooseLdProofType } from '../../src/wallet/presentation-ldp.ts'

const TENANT = 'demo'
const APP_KEY = {
  id: 'a11ce000-5e7e-4c0d-9a11-0000000011d0',
  secret: 'wallet-ldp-app-secret-Zq7Vb2Xn5Lm8Kp3',
  role: 'app',
  label: 'test/wallet/ldp.test.ts: every template',
}
/** ldp_vc templates, one per issuer key type (config/demo.json has degree-ldp: Ed25519Signature2018). */
const ISSUANCE_TEMPLATES = [
  {
    id: 'ldp-p256',
    credentialType: 'UniversityDegreeCredential',
    format: 'ldp_vc',
    proofType: 'JsonWebSignature2020',
    signingAlg: 'ES256',
  },
  {
    id: 'ldp-k1',
    credentialType: 'UniversityDegreeCredential',
    format: 'ldp_vc',
    proofType: 'EcdsaSecp256k1Signature2019',
    signingAlg: 'ES256K',
  },
  {
    id: 'ldp-rsa',
    credentialType: 'UniversityDegreeCredential',
    format: 'ldp_vc',
    proofType: 'RsaSignature2018',
    signingAlg: 'PS256',
  },
  {
    id: 'ldp-eddsa',
    credentialType: 'UniversityDegreeCredential',
    format: 'ldp_vc',
    proofType: 'eddsa-rdfc-2022',
  },
]
const DEGREE = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]

let server: RunningServer
let rp: RelyingPartyClient
let appToken: string

before(async () => {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  tenant.apiKeys.push(APP_KEY)
  tenant.issuanceTemplates.push(...ISSUANCE_TEMPLATES)
  server = await startServer({
    config: parseConfig(raw, 'test/wallet/ldp.test.ts configuration'),
    host: '127.0.0.1',
    port: 0,
    dataDir: ':memory:',
  })
  rp = new RelyingPartyClient(server.url)
  appToken = await rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT })
})
after(() => server?.close())

async function receive(wallet: Wallet, group = 'degree-ldp') {
  const body = ok(await rp.createOffer(appToken, group), `offer ${group}`)
  const { processId } = parseCredentialOfferUri(body.credential_offer_uri)
  ok(await rp.submitCredentials(appToken, processId, DEGREE), 'submit')
  const result = await wallet.receive(body.credential_offer_uri)
  return { processId, result }
}

async function openSession(template = 'degree-check') {
  const body = ok(await rp.createSession<SessionCreated>(appToken, template), `session ${template}`)
  const requestUri = new URLSearchParams(body.authentication_request.split('?')[1]).get('request_uri') ?? ''
  const id = decodeURIComponent(new URL(requestUri).pathname.split('/').pop() ?? '')
  return { link: body.authentication_request, id }
}

const readSession = async (id: string): Promise<SessionRead> => ok(await rp.readSession(appToken, id), 'read')
const failed = (s: SessionRead) =>
  (s.Validations?.checks ?? []).filter((c) => c.result === 'failed').map((c) => c.check)

describe('receipt of ldp_vc (OpenID4VCI 1.0 Appendix A.1.2)', () => {
  for (const group of ['degree-ldp', ...ISSUANCE_TEMPLATES.map((t) => t.id)]) {
    test(`${group}: verified at receipt and stored as an ldp_vc object`, async () => {
      const wallet = await Wallet.create()
      const { result } = await receive(wallet, group)
      assert.equal(result.status, 'issued')
      const [held] = wallet.credentials()
      assert.equal(held?.format, 'ldp_vc')
      const vc = JSON.parse(held?.credential ?? '{}') as Record<string, unknown>
      assert.equal((vc.credentialSubject as Record<string, unknown>).id, wallet.did)
      const verdict = await verifyLd(vc, { purpose: 'assertionMethod' })
      assert.equal(verdict.verified, true, JSON.stringify(verdict))
      assert.equal(held?.issuer, (vc.issuer as string) ?? '')
    })
  }
})

describe('ldp_vp answers to a Presentation Exchange session (section 2.8)', () => {
  const cases: { keyType: HolderKeyType; expected: LdProofType }[] = [
    { keyType: 'Ed25519', expected: 'Ed25519Signature2018' },
    { keyType: 'P-256', expected: 'JsonWebSignature2020' },
    { keyType: 'secp256k1', expected: 'EcdsaSecp256k1Signature2019' },
  ]
  for (const { keyType, expected } of cases) {
    test(`a ${keyType} holder answers with ${expected}: VERIFIED`, async () => {
      const wallet = await Wallet.create({ keyType })
      await receive(wallet)
      const session = await openSession()
      const answer = await wallet.present(session.link)
      assert.equal(answer.status, 'verified')
      const vp = JSON.parse(answer.vpToken ?? '{}') as { proof: Record<string, unknown>; holder: string }
      assert.equal(vp.proof.type, expected)
      assert.equal(vp.holder, wallet.did)
      const read = await readSession(session.id)
      assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations?.checks))
      assert.equal(read.Subject, wallet.did)
    })
  }

  test('a forced Data Integrity proof (eddsa-rdfc-2022): VERIFIED; one the key cannot make is a usage error', async () => {
    const wallet = await Wallet.create()
    await receive(wallet, 'ldp-eddsa')
    const session = await openSession()
    const presentation = await wallet.startPresentation(session.link)
    const answer = await presentation.respond({ ldProofType: 'eddsa-rdfc-2022' })
    const vp = JSON.parse(answer.vpToken ?? '{}') as { proof: Record<string, unknown> }
    assert.equal(vp.proof.cryptosuite, 'eddsa-rdfc-2022')
    assert.equal((await readSession(session.id)).Status, 'VERIFIED')
    const other = await openSession()
    await assert.rejects(
      (await wallet.startPresentation(other.link)).respond({ ldProofType: 'RsaSignature2018' }),
      (e: Error) =>
        e instanceof WalletUsageError && /cannot be made with this wallet's Ed25519 key/.test(e.message),
    )
    assert.equal((await readSession(other.id)).Status, 'PENDING', 'nothing was posted')
  })

  test('the proof type choice follows the verifier list and the key type', () => {
    assert.equal(
      chooseLdProofType('Ed25519', ['JsonWebSignature2020', 'Ed25519Signature2018']),
      'Ed25519Signature2018',
    )
    assert.equal(chooseLdProofType('Ed25519', ['JsonWebSignature2020']), 'JsonWebSignature2020')
    assert.equal(chooseLdProofType('Ed25519', ['DataIntegrityProof']), 'eddsa-rdfc-2022')
    assert.equal(chooseLdProofType('P-256', ['DataIntegrityProof']), 'ecdsa-rdfc-2019')
    assert.equal(chooseLdProofType('secp256k1', ['RsaSignature2018']), undefined)
  })

  const misbehaviours: { misbehaviour: PresentationMisbehaviour; failed: string[]; description: RegExp }[] = [
    {
      misbehaviour: 'vp-wrong-nonce',
      failed: ['sessionBinding'],
      description: /proof challenge .* is not the nonce/,
    },
    {
      misbehaviour: 'vp-wrong-aud',
      failed: ['sessionBinding'],
      description: /proof domain "https:\/\/wrong-audience\.invalid"/,
    },
    { misbehaviour: 'vp-foreign-key', failed: ['holderBinding'], description: /not to the presenter/ },
    {
      // changed before the holder signs: the presentation's proof holds, the issuer's does not
      misbehaviour: 'tampered-credential',
      failed: ['credentialProof'],
      description: /signature does not verify/,
    },
    {
      misbehaviour: 'ldp-undefined-term',
      failed: ['presentationProof', 'credentialProof'],
      description: /presentationProof/,
    },
  ]
  for (const { misbehaviour, failed: checks, description } of misbehaviours) {
    test(`${misbehaviour}: REJECTED by ${checks.join(', ')}`, async () => {
      const wallet = await Wallet.create()
      await receive(wallet)
      const session = await openSession()
      let caught: unknown
      await assert.rejects(wallet.present(session.link, { misbehave: [misbehaviour] }), (e: unknown) => {
        caught = e
        return true
      })
      assert.ok(caught instanceof WalletProtocolError, String(caught))
      assert.equal(caught.status, 400)
      assert.match(caught.errorDescription ?? '', description)
      const read = await readSession(session.id)
      assert.equal(read.Status, 'REJECTED')
      assert.deepEqual(failed(read), checks)
    })
  }

  test('ldp-undefined-term on a JWT VP answer is a usage error, nothing posted', async () => {
    const wallet = await Wallet.create()
    const body = ok(await rp.createOffer(appToken, 'degree'), 'offer')
    ok(
      await rp.submitCredentials(
        appToken,
        parseCredentialOfferUri(body.credential_offer_uri).processId,
        DEGREE,
      ),
      'submit',
    )
    await wallet.receive(body.credential_offer_uri)
    const session = await openSession()
    await assert.rejects(
      wallet.present(session.link, { misbehave: ['ldp-undefined-term'] }),
      (e: Error) => e instanceof WalletUsageError && /ldp_vp/.test(e.message),
    )
    assert.equal((await readSession(session.id)).Status, 'PENDING')
  })

  test('the ldp_vp the wallet posts is what the format reads: bound to the request nonce and client_id', async () => {
    const wallet = await Wallet.create()
    await receive(wallet)
    const session = await openSession()
    const answer = await wallet.present(session.link)
    const read = ldpVp.read(answer.vpToken, { algorithms: [] })
    const proof = await read.verifyProof()
    assert.equal(proof.ok, true)
    assert.equal(read.credentials.length, 1)
  })
})
