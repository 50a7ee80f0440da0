// The simulated wallet's Linked Data side (issue 33) against the real reference service over real HTTP on
// 127.0.0.1: it receives ldp_vc credentials (both OpenID4VCI paths, every issuer proof type), verifies them at
// receipt, and answers Presentation Exchange sessions (section 2.8's `ldp_vp`) and a DCQL session (OpenID4VP
// 1.0 Appendix B.1.3.2) with the proof type the verifier lists that its key makes; each Presentation Exchange
// misbehaviour, and `ldp-undefined-term`, really changes what is sent, and the service names the check that
// broke. Unit tests without the service: test/wallet/ldp-unit.test.ts.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import {
  type DcqlSessionCreated,
  ok,
  parseCredentialOfferUri,
  RelyingPartyClient,
  type SessionCreated,
  type SessionRead,
} from '../../src/client/index.ts'
import { verifyLd } from '../../src/formats/ldp-vc/suites.ts'
import { ldpVc, ldpVp } from '../../src/formats/ldp-vc/verify.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { ShiftedClock } from '../../src/service/util/clock.ts'
import {
  type HolderKeyType,
  type IssuanceProtocol,
  type LdProofType,
  PRESENTATION_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  V1_ONLY_PRESENTATION_MISBEHAVIOURS,
  type V1OnlyPresentationMisbehaviour,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import { UNDEFINED_TERM } from '../../src/wallet/presentation-ldp-defects.ts'

// --- the service ---------------------------------------------------------------------------------------------

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
  {
    id: 'ldp-ecdsa',
    credentialType: 'UniversityDegreeCredential',
    format: 'ldp_vc',
    proofType: 'ecdsa-rdfc-2019',
    signingAlg: 'ES256',
  },
  { id: 'id-ldp', credentialType: 'VerifiableId', format: 'ldp_vc' },
  { id: 'id-jwt', credentialType: 'VerifiableId' },
]
const VERIFICATION_TEMPLATES = [
  {
    id: 'degree-and-id',
    name: 'Degree and ID',
    credentialTypes: ['UniversityDegreeCredential', 'VerifiableId'],
  },
  {
    id: 'degree-ldp-dcql',
    name: 'Degree (OpenID4VP 1.0, ldp_vc)',
    profile: 'dcql',
    credentialTypes: ['UniversityDegreeCredential'],
    dcql: { format: 'ldp_vc', clientIdPrefix: 'decentralized_identifier' },
  },
]
const LIFETIME_MS = 600_000
const DEGREE = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]
const VERIFIABLE_ID = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Lovelace', firstName: 'Ada' },
  },
]

let server: RunningServer
let rp: RelyingPartyClient
let appToken: string
let adminToken: string
const clock = new ShiftedClock()

before(async () => {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  tenant.apiKeys.push(APP_KEY)
  tenant.issuanceTemplates.push(...ISSUANCE_TEMPLATES)
  tenant.verificationTemplates.push(...VERIFICATION_TEMPLATES)
  const admin = (tenant.apiKeys as { id: string; secret: string; role: string; template?: string }[]).find(
    (k) => k.role === 'admin' && k.template === undefined,
  )
  if (!admin) throw new Error('config/demo.json has no admin key')
  server = await startServer({
    config: parseConfig(raw, 'test/wallet/ldp.test.ts configuration'),
    host: '127.0.0.1',
    port: 0,
    dataDir: ':memory:',
    clock,
  })
  rp = new RelyingPartyClient(server.url)
  ;[appToken, adminToken] = await Promise.all([
    rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT }),
    rp.token({ keyId: admin.id, secret: admin.secret, tenant: TENANT }),
  ])
})
after(() => server?.close())

// --- helpers -------------------------------------------------------------------------------------------------

/** Issuance through the service's own issuer; answers the process id. */
async function issue(
  wallet: Wallet,
  group = 'degree-ldp',
  protocol?: IssuanceProtocol,
): Promise<{ processId: string }> {
  const body = ok(await rp.createOffer(appToken, group), `offer ${group}`)
  const { processId } = parseCredentialOfferUri(body.credential_offer_uri)
  const content = group.startsWith('id-') ? VERIFIABLE_ID : DEGREE
  ok(await rp.submitCredentials(appToken, processId, content), 'submit')
  const result = await wallet.receive(body.credential_offer_uri, protocol ? { protocol } : {})
  assert.equal(result.status, 'issued')
  return { processId }
}

async function holding(
  groups: string[] = ['degree-ldp'],
  keyType: HolderKeyType = 'Ed25519',
): Promise<Wallet> {
  const wallet = await Wallet.create({ keyType })
  for (const group of groups) await issue(wallet, group)
  return wallet
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

const vpOf = (vpToken: string | undefined) =>
  JSON.parse(vpToken ?? '{}') as {
    '@context': string[]
    proof: Record<string, unknown>
    holder: string
  } & Record<string, unknown>

// --- receipt -------------------------------------------------------------------------------------------------

describe('receipt of ldp_vc (OpenID4VCI 1.0 Appendix A.1.2, and the draft-15 path)', () => {
  const groups = ['degree-ldp', ...ISSUANCE_TEMPLATES.filter((t) => t.id.startsWith('ldp-')).map((t) => t.id)]
  for (const group of groups) {
    test(`${group}: verified at receipt and stored as the credential object's JSON text`, async () => {
      const wallet = await Wallet.create()
      await issue(wallet, group)
      const [held] = wallet.credentials()
      assert.equal(held?.format, 'ldp_vc')
      const vc = JSON.parse(held?.credential ?? '{}') as Record<string, unknown>
      assert.equal((vc.credentialSubject as Record<string, unknown>).id, wallet.did)
      const verdict = await verifyLd(vc, { purpose: 'assertionMethod' })
      assert.equal(verdict.verified, true, JSON.stringify(verdict))
      assert.equal(held?.issuer, vc.issuer)
      assert.equal(held?.id, vc.id)
      assert.ok(vc.credentialStatus, 'with its Bitstring status entry, read at receipt')
    })
  }

  test('the draft-15 path receives an ldp_vc as well', async () => {
    const wallet = await Wallet.create({ protocol: 'draft15' })
    await issue(wallet, 'degree-ldp')
    assert.equal(wallet.credentials()[0]?.format, 'ldp_vc')
  })
})

// --- verified ------------------------------------------------------------------------------------------------

describe('ldp_vp answers to a Presentation Exchange session (section 2.8)', () => {
  for (const keyType of ['Ed25519', 'P-256', 'secp256k1'] as const) {
    test(`${keyType} holder: the first proof type the definition lists that the key makes (JsonWebSignature2020), VERIFIED`, async () => {
      const wallet = await holding(['degree-ldp'], keyType)
      const [held] = wallet.credentials()
      const session = await openSession()
      const answer = await wallet.present(session.link)
      assert.equal(answer.status, 'verified')
      const vp = vpOf(answer.vpToken)
      assert.equal(vp.proof.type, 'JsonWebSignature2020')
      assert.equal(vp.holder, wallet.did)
      assert.deepEqual(vp['@context'], ['https://www.w3.org/2018/credentials/v1', vp['@context'][1]])
      assert.deepEqual(answer.presented, [held?.id])
      assert.deepEqual(
        answer.presentationSubmission?.descriptor_map.map((d) => [
          d.format,
          d.path,
          d.path_nested?.format,
          d.path_nested?.path,
        ]),
        [['ldp_vp', '$', 'ldp_vc', '$.verifiableCredential[0]']],
      )
      assert.equal(answer.form.vp_token, answer.vpToken, 'the ldp_vp goes as JSON text in the form')
      const read = await readSession(session.id)
      assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations?.checks))
      assert.equal(read.Subject, wallet.did)
      assert.deepEqual(failed(read), [])
    })
  }

  const forced: [HolderKeyType, LdProofType][] = [
    ['Ed25519', 'Ed25519Signature2018'],
    ['Ed25519', 'eddsa-rdfc-2022'],
    ['P-256', 'ecdsa-rdfc-2019'],
    ['secp256k1', 'EcdsaSecp256k1Signature2019'],
  ]
  for (const [keyType, proofType] of forced) {
    test(`${keyType} holder forced to ${proofType} (Wallet.create ldpProofType): VERIFIED`, async () => {
      const wallet = await Wallet.create({ keyType, ldpProofType: proofType })
      await issue(wallet)
      const session = await openSession()
      const vp = vpOf((await wallet.present(session.link)).vpToken)
      assert.equal(proofType.includes('-') ? vp.proof.cryptosuite : vp.proof.type, proofType)
      assert.equal((await readSession(session.id)).Status, 'VERIFIED')
    })
  }

  test('a forced proof type per answer (respond ldProofType); one the key cannot make posts nothing', async () => {
    const wallet = await holding(['ldp-eddsa'])
    const session = await openSession()
    const answer = await (await wallet.startPresentation(session.link)).respond({
      ldProofType: 'Ed25519Signature2018',
    })
    assert.equal(vpOf(answer.vpToken).proof.type, 'Ed25519Signature2018')
    assert.equal((await readSession(session.id)).Status, 'VERIFIED')
    const other = await openSession()
    await assert.rejects(
      (await wallet.startPresentation(other.link)).respond({ ldProofType: 'RsaSignature2018' }),
      (e: Error) =>
        e instanceof WalletUsageError && /cannot be made with this wallet's Ed25519 key/.test(e.message),
    )
    assert.equal((await readSession(other.id)).Status, 'PENDING', 'nothing was posted')
  })

  test('the ldp_vp posted is what the format reads: proof, holder and binding to the request', async () => {
    const wallet = await holding()
    const session = await openSession()
    const presentation = await wallet.startPresentation(session.link)
    const answer = await presentation.respond()
    const read = ldpVp.read(answer.vpToken, { algorithms: [] })
    const proof = await read.verifyProof()
    assert.ok(proof.ok, JSON.stringify(proof))
    assert.equal(proof.holder.did, wallet.did)
    assert.deepEqual(
      read.verifyBinding({
        nonce: presentation.nonce,
        audience: presentation.clientId,
        nonceRole: 'the nonce',
        audienceRole: 'the client_id',
        now: Date.now(),
      }),
      [],
    )
    const credential = ldpVc.read(read.credentials[0]?.raw, { algorithms: [] })
    assert.deepEqual(credential.holderBinding, { kind: 'subject', id: wallet.did })
  })

  test('an ldp_vc and a JWT VC together: one VC 2.0 ldp_vp, the JWT enveloped; VERIFIED', async () => {
    const wallet = await holding(['degree-ldp', 'id-jwt'])
    const session = await openSession('degree-and-id')
    const answer = await wallet.present(session.link)
    const vp = vpOf(answer.vpToken)
    assert.equal(vp['@context'][0], 'https://www.w3.org/ns/credentials/v2')
    const entries = vp.verifiableCredential as Record<string, unknown>[]
    assert.equal(entries.length, 2)
    assert.deepEqual(
      answer.presentationSubmission?.descriptor_map.map((d) => [d.id, d.format, d.path_nested?.format]),
      [
        ['UniversityDegreeCredential', 'ldp_vp', 'ldp_vc'],
        ['VerifiableId', 'ldp_vp', 'jwt_vc_json'],
      ],
    )
    assert.equal(entries[1]?.type, 'EnvelopedVerifiableCredential')
    const read = await readSession(session.id)
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
  })

  test('JWT credentials alone are still a JWT VP', async () => {
    const wallet = await holding(['degree'])
    const answer = await wallet.present((await openSession()).link)
    assert.equal(answer.presentationSubmission?.descriptor_map[0]?.format, 'jwt_vp_json')
    assert.equal(typeof answer.vpToken, 'string')
    assert.equal(answer.vpToken?.split('.').length, 3)
  })
})

// --- misbehaviours -----------------------------------------------------------------------------------------------

interface Expected {
  status: number
  error?: string
  failed: string[]
  description?: RegExp
  sessionStatus: SessionRead['Status']
  template?: string
}
type LdpMisbehaviour = Exclude<PresentationMisbehaviour, V1OnlyPresentationMisbehaviour>
const LDP_PE_MISBEHAVIOURS = PRESENTATION_MISBEHAVIOURS.filter(
  (m): m is LdpMisbehaviour => !V1_ONLY_PRESENTATION_MISBEHAVIOURS.includes(m),
)
const rejected = (failedChecks: string[], description: RegExp, template?: string): Expected => ({
  status: 400,
  error: 'invalid_presentation',
  failed: failedChecks,
  description,
  sessionStatus: 'REJECTED',
  ...(template && { template }),
})

/** What the service answers each misbehaviour of an ldp_vp with (Presentation Exchange). */
const EXPECTED: Record<LdpMisbehaviour, Expected> = {
  'vp-wrong-nonce': rejected(
    ['sessionBinding'],
    /proof challenge .* is not the nonce of this session's request/,
  ),
  'vp-wrong-aud': rejected(
    ['sessionBinding'],
    /proof domain "https:\/\/wrong-audience\.invalid" is not this verifier's client_id/,
  ),
  'vp-foreign-key': rejected(['holderBinding'], /was issued to did:key:\S+, not to the presenter did:key:/),
  'vp-replayed': rejected(
    ['sessionBinding'],
    /proof challenge .* is not the nonce of this session's request/,
  ),
  'tampered-credential': rejected(['credentialProof'], /signature does not verify/),
  // the definition constrains the issuer too, so PEX no longer matches the credential
  'untrusted-issuer': rejected(['trustedIssuer', 'matchingIds'], /which this template does not trust/),
  'revoked-credential': rejected(['credentialStatus'], /the credential is revoked/),
  'expired-session': {
    status: 410,
    error: 'session_expired',
    failed: [],
    description: /expired at/,
    sessionStatus: 'EXPIRED',
  },
  'lying-submission': rejected(
    ['matchingIds'],
    /descriptor_map\[0\] maps descriptor "UniversityDegreeCredential" to verifiableCredential\[1\], which does not satisfy it/,
    'degree-and-id',
  ),
  'access-denied': { status: 200, failed: ['walletResponse'], sessionStatus: 'REJECTED' },
  'ldp-undefined-term': rejected(
    ['presentationProof'],
    new RegExp(`the term "${UNDEFINED_TERM}" is not defined by the document's @context \\(JSON-LD safe mode`),
  ),
}

describe('ldp_vp misbehaviours: each changes what is sent, and the service names the check', () => {
  test('every Presentation Exchange misbehaviour, and ldp-undefined-term, has an expectation', () => {
    assert.deepEqual(Object.keys(EXPECTED).sort(), [...LDP_PE_MISBEHAVIOURS].sort())
  })

  for (const misbehaviour of LDP_PE_MISBEHAVIOURS) {
    const expected = EXPECTED[misbehaviour]
    test(`${misbehaviour}: ${expected.status} ${expected.error ?? ''} ${expected.failed.join(', ')}`, async () => {
      const wallet = await holding(expected.template ? ['degree-ldp', 'id-ldp'] : ['degree-ldp'])
      if (misbehaviour === 'vp-replayed') {
        const first = await wallet.present((await openSession()).link)
        assert.equal(first.status, 'verified')
      }
      if (misbehaviour === 'revoked-credential') {
        const { processId } = await issue(wallet)
        ok(await rp.setCredentialStatus(adminToken, processId, { status: 'revoked' }), 'revoke')
        // a newer, active degree: the misbehaviour picks the revoked one anyway
        await issue(wallet)
      }
      const session = await openSession(expected.template)
      let outcome: Promise<Awaited<ReturnType<Wallet['present']>>>
      if (misbehaviour === 'expired-session') {
        const presentation = await wallet.startPresentation(session.link)
        clock.advance(LIFETIME_MS + 1000)
        outcome = presentation.respond({ misbehave: [misbehaviour] }).finally(() => clock.reset())
      } else {
        outcome = wallet.present(session.link, { misbehave: [misbehaviour] })
      }
      if (expected.status === 200) {
        const result = await outcome
        assert.equal(result.status, 'rejected-by-wallet')
      } else {
        let caught: unknown
        await assert.rejects(outcome, (e: unknown) => {
          caught = e
          return true
        })
        assert.ok(caught instanceof WalletProtocolError, String(caught))
        assert.equal(caught.step, 'response')
        assert.equal(caught.status, expected.status)
        assert.equal(caught.error, expected.error)
        if (expected.description) assert.match(caught.errorDescription ?? '', expected.description)
      }
      if (misbehaviour === 'expired-session') clock.advance(LIFETIME_MS + 1000)
      const read = await readSession(session.id)
      clock.reset()
      assert.equal(read.Status, expected.sessionStatus)
      assert.deepEqual(failed(read), expected.failed)
    })
  }

  test('ldp-undefined-term on a JWT VP answer is a usage error, nothing posted', async () => {
    const wallet = await holding(['degree'])
    const session = await openSession()
    await assert.rejects(
      wallet.present(session.link, { misbehave: ['ldp-undefined-term'] }),
      (e: Error) => e instanceof WalletUsageError && /ldp_vp/.test(e.message),
    )
    assert.equal((await readSession(session.id)).Status, 'PENDING')
  })
})

// --- DCQL ----------------------------------------------------------------------------------------------------

describe('OpenID4VP 1.0 (DCQL): an ldp_vc query answered with an ldp_vp (Appendix B.1.3.2)', () => {
  const dcqlSession = async () => {
    const created = ok(
      await rp.createSession<DcqlSessionCreated>(appToken, 'degree-ldp-dcql'),
      'dcql session',
    )
    return { link: created.authentication_request, id: created.id }
  }

  test('VERIFIED: challenge = nonce, domain = the full client_id', async () => {
    const wallet = await holding(['degree-ldp'], 'P-256')
    const session = await dcqlSession()
    const answer = await wallet.present(session.link)
    assert.equal(answer.profile, '1.0')
    const [vp] = Object.values(answer.dcqlVpToken ?? {})[0] ?? []
    assert.ok(vp && typeof vp === 'object', 'an ldp_vp is a JSON object in the vp_token')
    const proof = (vp as { proof: Record<string, unknown> }).proof
    assert.equal(proof.domain, answer.clientId)
    const read = await readSession(session.id)
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
  })

  for (const [misbehaviour, check] of [
    ['vp-wrong-nonce', 'sessionBinding'],
    ['vp-wrong-aud', 'sessionBinding'],
    ['tampered-credential', 'credentialProof'],
    ['ldp-undefined-term', 'presentationProof'],
  ] as const) {
    test(`${misbehaviour}: REJECTED under ${check}`, async () => {
      const wallet = await holding(['degree-ldp'])
      const session = await dcqlSession()
      await wallet.present(session.link, { misbehave: [misbehaviour] }).catch(() => undefined)
      const read = await readSession(session.id)
      assert.equal(read.Status, 'REJECTED', JSON.stringify(read.Validations))
      assert.ok(failed(read).includes(check), `${check} in ${JSON.stringify(failed(read))}`)
    })
  }
})
