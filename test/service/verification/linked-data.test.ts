import assert from 'node:assert/strict'
import type { KeyObject } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { generateLdKeyPair, type LdKeyType, ldKeyFromPublicKey } from '../../../src/formats/ldp-vc/keys.ts'
import { type LdProofType, signLd } from '../../../src/formats/ldp-vc/suites.ts'
import { parseConfig } from '../../../src/service/config/index.ts'
import type { SigningAlg } from '../../../src/service/store/types.ts'
import { makeApp, type TestApp } from '../../helpers.ts'
import {
  changeStatus,
  DEGREE,
  grantFor,
  jwtRequest,
  newHolder,
  proofJwt,
  submit,
  walletPost,
} from '../../oid4vci-helpers.ts'
import {
  checksWith,
  type OpenSession,
  openSession,
  readSession,
  respond,
  submission,
  V1,
  verificationConfig,
} from '../../verification-helpers.ts'

// Issue 33: the interface's Linked Data formats (section 2.8 `ldp`, `ldp_vp`; 2.5's proof object). A pe
// session accepts an ldp_vp vp_token for each proof type 2.8 lists and the Data Integrity cryptosuites,
// and the service issues ldp_vc credentials with each. Presentations here are made by the format's
// signer (src/formats/ldp-vc/suites.ts), never by the wallet's code; test/formats/ldp-vc/cross-check.test.ts
// proves the proofs against implementations nobody here wrote.

const UNDEFINED_TERMS = 'https://www.w3.org/ns/credentials/undefined-terms/v2'
const DEGREE_TYPE = 'UniversityDegreeCredential'

/** An issuance template per proof type: what the tenant's key of `signingAlg` signs with. */
const ISSUERS: { id: string; proofType: LdProofType; signingAlg: SigningAlg }[] = [
  { id: 'ldp-ed2018', proofType: 'Ed25519Signature2018', signingAlg: 'EdDSA' },
  { id: 'ldp-jws2020-p256', proofType: 'JsonWebSignature2020', signingAlg: 'ES256' },
  { id: 'ldp-k1-2019', proofType: 'EcdsaSecp256k1Signature2019', signingAlg: 'ES256K' },
  { id: 'ldp-rsa2018', proofType: 'RsaSignature2018', signingAlg: 'PS256' },
  { id: 'ldp-eddsa', proofType: 'eddsa-rdfc-2022', signingAlg: 'EdDSA' },
  { id: 'ldp-ecdsa', proofType: 'ecdsa-rdfc-2019', signingAlg: 'ES256' },
]

function ldpConfig() {
  const raw = structuredClone(verificationConfig()) as unknown as {
    tenants: { id: string; issuanceTemplates: unknown[] }[]
  }
  const demo = raw.tenants.find((t) => t.id === 'demo')
  if (!demo) throw new Error('no demo tenant')
  for (const { id, proofType, signingAlg } of ISSUERS) {
    demo.issuanceTemplates.push({ id, credentialType: DEGREE_TYPE, format: 'ldp_vc', proofType, signingAlg })
  }
  return parseConfig(raw)
}

/** The clock of the app under test (a manual one): proofs are made at its now. */
let appNow: () => number = Date.now

interface LdHolder {
  did: string
  kid: string
  privateKey: KeyObject
}

function ldHolder(keyType: LdKeyType): LdHolder {
  const pair = generateLdKeyPair(keyType)
  const { did, kid } = ldKeyFromPublicKey(pair.publicKey)
  return { did, kid, privateKey: pair.privateKey }
}

/** An ldp_vc signed directly by the tenant's key of `alg` (the trusted issuer), with no status entry. */
async function tenantCredential(
  t: TestApp,
  holder: string,
  proofType: LdProofType,
  alg: SigningAlg,
  subject: Record<string, unknown> = { degree: { type: 'BachelorDegree', name: 'Bachelor of Science' } },
) {
  const key = await t.app.services.tenantKeys.forTenant('demo', alg)
  return signLd(
    {
      '@context': [V1, UNDEFINED_TERMS],
      id: `urn:uuid:${crypto.randomUUID()}`,
      type: ['VerifiableCredential', DEGREE_TYPE],
      issuer: key.did,
      issuanceDate: new Date(t.clock.now() - 60_000).toISOString(),
      credentialSubject: { id: holder, ...subject },
    },
    { proofType, kid: key.kid, privateKey: key.privateKey, purpose: { purpose: 'assertionMethod' } },
  )
}

/** An ldp_vp of `credentials` by `holder`, its proof bound to the session (challenge = nonce, domain = client_id). */
function ldpVp(
  s: OpenSession,
  holder: LdHolder,
  proofType: LdProofType,
  credentials: unknown[],
  options: { challenge?: string; domain?: string; created?: Date } = {},
) {
  return signLd(
    {
      '@context': [V1],
      type: ['VerifiablePresentation'],
      holder: holder.did,
      verifiableCredential: credentials,
    },
    {
      proofType,
      kid: holder.kid,
      privateKey: holder.privateKey,
      purpose: {
        purpose: 'authentication',
        challenge: options.challenge ?? s.request.nonce,
        domain: options.domain ?? s.request.client_id,
      },
      // the app's clock, not the machine's: a proof made "later" than the service's now is refused
      created: options.created ?? new Date(appNow()),
    },
  )
}

const DESCRIPTOR = (s: OpenSession) => (s.definition.input_descriptors as { id: string }[])[0]?.id as string
const ldpSubmission = (s: OpenSession, nestedFormat = 'ldp_vc') =>
  submission(s.id, [{ id: DESCRIPTOR(s), index: 0, format: 'ldp_vp', nestedFormat }])

async function expectVerified(t: TestApp, s: OpenSession, vp: unknown, sub = ldpSubmission(s)) {
  const response = await respond(t.app, s, JSON.stringify(vp), sub)
  const { body } = await readSession(t.app, s.rp, s.id)
  assert.equal(response.statusCode, 200, `${response.body} ${JSON.stringify(body.Validations?.checks)}`)
  assert.equal(body.Status, 'VERIFIED', JSON.stringify(body.Validations?.checks))
  assert.deepEqual(checksWith(body, 'failed'), [])
  return body
}

async function expectRejected(
  t: TestApp,
  s: OpenSession,
  vp: unknown,
  failing: string[],
  sub = ldpSubmission(s),
) {
  const response = await respond(t.app, s, typeof vp === 'string' ? vp : JSON.stringify(vp), sub)
  assert.equal(response.statusCode, 400, response.body)
  const { body } = await readSession(t.app, s.rp, s.id)
  assert.equal(body.Status, 'REJECTED')
  const failed = checksWith(body, 'failed')
  for (const check of failing)
    assert.ok(failed.includes(check), `${check} failed: ${JSON.stringify(body.Validations?.checks)}`)
  return body
}

/** The tenant key a credential of each proof type is signed with here. */
const ISSUER_ALG: Record<LdProofType, SigningAlg> = {
  Ed25519Signature2018: 'EdDSA',
  JsonWebSignature2020: 'ES256K',
  EcdsaSecp256k1Signature2019: 'ES256K',
  RsaSignature2018: 'PS256',
  'eddsa-rdfc-2022': 'EdDSA',
  'ecdsa-rdfc-2019': 'ES256',
}

/** Every presentation proof type: section 2.8's four (JsonWebSignature2020 with three key types) and Data Integrity. */
const PRESENTERS: { proofType: LdProofType; keyType: LdKeyType }[] = [
  { proofType: 'Ed25519Signature2018', keyType: 'Ed25519' },
  { proofType: 'JsonWebSignature2020', keyType: 'Ed25519' },
  { proofType: 'JsonWebSignature2020', keyType: 'P-256' },
  { proofType: 'JsonWebSignature2020', keyType: 'secp256k1' },
  { proofType: 'EcdsaSecp256k1Signature2019', keyType: 'secp256k1' },
  { proofType: 'RsaSignature2018', keyType: 'RSA' },
  { proofType: 'eddsa-rdfc-2022', keyType: 'Ed25519' },
  { proofType: 'ecdsa-rdfc-2019', keyType: 'P-256' },
]

describe('pe sessions verify ldp_vp presentations (section 2.8, issue 33)', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(ldpConfig())
    appNow = () => t.clock.now()
  })
  after(() => t.close())

  for (const { proofType, keyType } of PRESENTERS) {
    test(`@interface-2.8 ${proofType} by a ${keyType} holder: VERIFIED, shared as 2.4 shows it`, async () => {
      const holder = ldHolder(keyType)
      const s = await openSession(t, 'degree-nostatus')
      const vc = await tenantCredential(t, holder.did, 'Ed25519Signature2018', 'EdDSA')
      const body = await expectVerified(t, s, await ldpVp(s, holder, proofType, [vc]))
      assert.equal(body.Subject, holder.did)
      const mechanisms = body.Validations?.checks.find((c) => c.check === 'securityMechanisms')
      assert.match(mechanisms?.message ?? '', new RegExp(`ldp_vp \\(${proofType}\\)`))
    })
  }

  for (const [proofType, alg] of Object.entries(ISSUER_ALG) as [LdProofType, SigningAlg][]) {
    test(`@interface-2.8 an ldp_vc signed with ${proofType} by the tenant's ${alg} key: VERIFIED`, async () => {
      const holder = ldHolder('Ed25519')
      const vc = await tenantCredential(t, holder.did, proofType, alg)
      // opened after the tenant's key exists (RSA is made on first use): its DID is then trusted by default
      const s = await openSession(t, 'degree-nostatus')
      const body = await expectVerified(t, s, await ldpVp(s, holder, 'Ed25519Signature2018', [vc]))
      const shared = JSON.stringify(body.PresentationSubmission)
      assert.ok(shared.includes(JSON.stringify(vc.proof)), 'the shared credential keeps its embedded proof')
    })
  }

  test('@interface-2.8 a JWT credential enveloped in a VC 2.0 ldp_vp (VCDM 2.0 §4.13)', async () => {
    const holder = newHolder('EdDSA')
    const grant = await grantFor(t.app, 'degree')
    assert.equal((await submit(t.app, grant.rp, grant.processId, DEGREE)).statusCode, 200)
    const issued = await walletPost(
      t.app,
      'credential',
      grant.accessToken,
      jwtRequest('degree', proofJwt(holder, t.clock, grant.cNonce)),
    )
    const jwt = issued.json<{ credentials: { credential: string }[] }>().credentials[0]?.credential
    const s = await openSession(t)
    // A bare JWT string is not JSON-LD (VC 1.1 reads it as an IRI, which safe mode refuses): VC 2.0 envelopes it.
    const vp = await signLd(
      {
        '@context': ['https://www.w3.org/ns/credentials/v2'],
        type: ['VerifiablePresentation'],
        holder: holder.did,
        verifiableCredential: [
          {
            '@context': 'https://www.w3.org/ns/credentials/v2',
            id: `data:application/vc+jwt,${jwt}`,
            type: 'EnvelopedVerifiableCredential',
          },
        ],
      },
      {
        proofType: 'eddsa-rdfc-2022',
        kid: holder.kid,
        privateKey: holder.privateKey,
        purpose: { purpose: 'authentication', challenge: s.request.nonce, domain: s.request.client_id },
        created: new Date(appNow()),
      },
    )
    await expectVerified(t, s, vp, ldpSubmission(s, 'jwt_vc_json'))
  })

  test('securityMechanisms: a bare JWT string in a VC 1.1 ldp_vp is not JSON-LD (safe mode)', async () => {
    const holder = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await tenantCredential(t, holder.did, 'Ed25519Signature2018', 'EdDSA')
    const vp = (await ldpVp(s, holder, 'Ed25519Signature2018', [vc])) as Record<string, unknown>
    const body = await expectRejected(
      t,
      s,
      { ...vp, verifiableCredential: ['eyJhbGciOiJFZERTQSJ9.e30.AAAA'] },
      ['presentationProof'],
    )
    assert.ok(body.Validations?.verificationResult.errors.some((e) => /safe mode/.test(e)))
  })

  test('sessionBinding: a proof whose challenge is not the request nonce', async () => {
    const holder = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await tenantCredential(t, holder.did, 'Ed25519Signature2018', 'EdDSA')
    const body = await expectRejected(
      t,
      s,
      await ldpVp(s, holder, 'Ed25519Signature2018', [vc], { challenge: 'another-nonce' }),
      ['sessionBinding'],
    )
    assert.deepEqual(checksWith(body, 'failed'), ['sessionBinding'])
    assert.ok(
      body.Validations?.verificationResult.errors.some((e) => /proof challenge "another-nonce"/.test(e)),
    )
  })

  test('sessionBinding: a proof whose domain is another verifier', async () => {
    const holder = ldHolder('P-256')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await tenantCredential(t, holder.did, 'JsonWebSignature2020', 'ES256')
    const body = await expectRejected(
      t,
      s,
      await ldpVp(s, holder, 'JsonWebSignature2020', [vc], { domain: 'did:example:verifier' }),
      ['sessionBinding'],
    )
    assert.deepEqual(checksWith(body, 'failed'), ['sessionBinding'])
  })

  for (const { proofType, keyType } of PRESENTERS.filter(
    (p) => p.keyType !== 'P-256' || p.proofType !== 'JsonWebSignature2020',
  )) {
    test(`credentialProof and presentationProof: a ${proofType} credential altered after signing`, async () => {
      const holder = ldHolder(keyType)
      const s = await openSession(t, 'degree-nostatus')
      // the credential signed with the same proof type, by the tenant's key of a type it signs with
      const vc = await tenantCredential(t, holder.did, proofType, ISSUER_ALG[proofType])
      const vp = await ldpVp(s, holder, proofType, [vc])
      const altered = structuredClone(vp) as {
        verifiableCredential: { credentialSubject: { degree: { name: string } } }[]
      }
      ;(
        altered.verifiableCredential[0] as { credentialSubject: { degree: { name: string } } }
      ).credentialSubject.degree.name = 'Doctor of Philosophy'
      const body = await expectRejected(t, s, altered, ['presentationProof', 'credentialProof'])
      assert.ok(
        body.Validations?.verificationResult.errors.some((e) => /signature/.test(e)),
        JSON.stringify(body.Validations?.verificationResult.errors),
      )
    })
  }

  test('presentationProof: a term no context defines, added after signing, is refused (safe mode)', async () => {
    const holder = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await tenantCredential(t, holder.did, 'Ed25519Signature2018', 'EdDSA')
    // The VP's own contexts define no @vocab: the term would be dropped silently without safe mode.
    const vp = (await ldpVp(s, holder, 'Ed25519Signature2018', [vc])) as Record<string, unknown>
    const added = { ...vp, undefinedTerm: 'added after signing' }
    await expectRejected(t, s, added, ['presentationProof'])
  })

  test('presentationProof: a proof by another DID than the holder', async () => {
    const holder = ldHolder('Ed25519')
    const other = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await tenantCredential(t, holder.did, 'Ed25519Signature2018', 'EdDSA')
    // signed by another key, the presentation naming the credential's holder
    const vp = await signLd(
      { '@context': [V1], type: ['VerifiablePresentation'], holder: holder.did, verifiableCredential: [vc] },
      {
        proofType: 'Ed25519Signature2018',
        kid: other.kid,
        privateKey: other.privateKey,
        purpose: { purpose: 'authentication', challenge: s.request.nonce, domain: s.request.client_id },
      },
    )
    await expectRejected(t, s, vp, ['presentationProof'])
  })

  test('holderBinding: a credential issued to someone else, presented by its own holder key', async () => {
    const holder = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await tenantCredential(t, ldHolder('Ed25519').did, 'Ed25519Signature2018', 'EdDSA')
    const body = await expectRejected(t, s, await ldpVp(s, holder, 'Ed25519Signature2018', [vc]), [
      'holderBinding',
    ])
    assert.deepEqual(checksWith(body, 'failed'), ['holderBinding'])
  })

  test('securityMechanisms: an @context the verifier does not bundle is refused, never fetched', async () => {
    const holder = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await tenantCredential(t, holder.did, 'Ed25519Signature2018', 'EdDSA')
    const vp = {
      ...((await ldpVp(s, holder, 'Ed25519Signature2018', [vc])) as Record<string, unknown>),
      '@context': [V1, 'https://unknown.example/context/v1'],
    }
    const body = await expectRejected(t, s, vp, ['presentationProof'])
    assert.ok(body.Validations?.verificationResult.errors.some((e) => /unknown\.example/.test(e)))
  })

  test('securityMechanisms: a proof type the definition does not list', async () => {
    const holder = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await tenantCredential(t, holder.did, 'Ed25519Signature2018', 'EdDSA')
    const vp = (await ldpVp(s, holder, 'Ed25519Signature2018', [vc])) as { proof: Record<string, unknown> }
    const body = await expectRejected(t, s, { ...vp, proof: { ...vp.proof, type: 'Ed25519Signature2020' } }, [
      'securityMechanisms',
    ])
    assert.ok(body.Validations?.verificationResult.errors.some((e) => /Ed25519Signature2020/.test(e)))
  })

  test('securityMechanisms: a vp_token that is not JSON, or too large, says so', async () => {
    const s = await openSession(t, 'degree-nostatus')
    await expectRejected(t, s, '{"not json', ['securityMechanisms'])
  })

  test('trustedIssuer: an ldp_vc signed by a key the template does not trust', async () => {
    const holder = ldHolder('Ed25519')
    const stranger = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const vc = await signLd(
      {
        '@context': [V1, UNDEFINED_TERMS],
        type: ['VerifiableCredential', DEGREE_TYPE],
        issuer: stranger.did,
        issuanceDate: new Date(t.clock.now() - 60_000).toISOString(),
        credentialSubject: { id: holder.did, degree: { name: 'self-made' } },
      },
      {
        proofType: 'Ed25519Signature2018',
        kid: stranger.kid,
        privateKey: stranger.privateKey,
        purpose: { purpose: 'assertionMethod' },
      },
    )
    const body = await expectRejected(t, s, await ldpVp(s, holder, 'Ed25519Signature2018', [vc]), [
      'trustedIssuer',
    ])
    assert.deepEqual(checksWith(body, 'failed'), ['trustedIssuer', 'matchingIds']) // the definition's issuer filter excludes it too
  })

  test('validityPeriod: an expired ldp_vc', async () => {
    const holder = ldHolder('Ed25519')
    const s = await openSession(t, 'degree-nostatus')
    const key = await t.app.services.tenantKeys.forTenant('demo', 'EdDSA')
    const vc = await signLd(
      {
        '@context': [V1, UNDEFINED_TERMS],
        type: ['VerifiableCredential', DEGREE_TYPE],
        issuer: key.did,
        issuanceDate: '2020-01-01T00:00:00Z',
        expirationDate: '2021-01-01T00:00:00Z',
        credentialSubject: { id: holder.did, degree: { name: 'old' } },
      },
      {
        proofType: 'Ed25519Signature2018',
        kid: key.kid,
        privateKey: key.privateKey,
        purpose: { purpose: 'assertionMethod' },
      },
    )
    const body = await expectRejected(t, s, await ldpVp(s, holder, 'Ed25519Signature2018', [vc]), [
      'validityPeriod',
    ])
    assert.deepEqual(checksWith(body, 'failed'), ['validityPeriod'])
  })
})

describe('ldp_vc issuance (OpenID4VCI 1.0 Appendix A.1.2, issue 33)', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(ldpConfig())
    appNow = () => t.clock.now()
  })
  after(() => t.close())

  test('the issuer metadata describes each ldp_vc configuration with its @context, type and proof type', async () => {
    const response = await t.app.inject({
      method: 'GET',
      url: '/.well-known/openid-credential-issuer/oid4vci/demo',
    })
    const configurations = response.json<{
      credential_configurations_supported: Record<string, Record<string, unknown>>
    }>().credential_configurations_supported
    for (const { id, proofType } of ISSUERS) {
      const c = configurations[id] as {
        format: string
        credential_definition: { '@context': string[]; type: string[] }
        credential_signing_alg_values_supported: string[]
      }
      assert.equal(c.format, 'ldp_vc', id)
      assert.deepEqual(c.credential_definition.type, ['VerifiableCredential', DEGREE_TYPE])
      assert.equal(c.credential_definition['@context'][0], V1)
      assert.deepEqual(c.credential_signing_alg_values_supported, [proofType])
    }
  })

  for (const { id, proofType, signingAlg } of ISSUERS) {
    test(`@interface-2.3 ${proofType} (${signingAlg}): issued over OpenID4VCI, shown in 4.4's data, presented and revoked`, async () => {
      const holder = newHolder('EdDSA')
      const grant = await grantFor(t.app, id)
      assert.equal((await submit(t.app, grant.rp, grant.processId, DEGREE)).statusCode, 200)
      const response = await walletPost(
        t.app,
        'credential',
        grant.accessToken,
        jwtRequest(id, proofJwt(holder, t.clock, grant.cNonce)),
      )
      assert.equal(response.statusCode, 200, response.body)
      const vc = response.json<{ credentials: { credential: Record<string, unknown> }[] }>().credentials[0]
        ?.credential as Record<string, unknown>
      assert.equal(typeof vc, 'object', 'an ldp_vc is a JSON object on the wire')
      const proof = vc.proof as Record<string, unknown>
      assert.equal(proof.proofPurpose, 'assertionMethod')
      assert.equal(proofType.includes('-') ? proof.cryptosuite : proof.type, proofType)
      assert.deepEqual((vc.credentialSubject as Record<string, unknown>).id, holder.did)
      assert.equal((vc.credentialStatus as Record<string, unknown>).type, 'BitstringStatusListEntry')
      // presented back in a pe session that requires an active status
      const ldHolderOf: LdHolder = { did: holder.did, kid: holder.kid, privateKey: holder.privateKey }
      const s = await openSession(t)
      await expectVerified(t, s, await ldpVp(s, ldHolderOf, 'Ed25519Signature2018', [vc]))
      // revoked through the status API, the next presentation is REJECTED by credentialStatus
      assert.equal(
        (await changeStatus(t.app, grant.rp, grant.processId, { status: 'revoked' })).statusCode,
        200,
      )
      const again = await openSession(t)
      const body = await expectRejected(
        t,
        again,
        await ldpVp(again, ldHolderOf, 'Ed25519Signature2018', [vc]),
        ['credentialStatus'],
      )
      assert.deepEqual(checksWith(body, 'failed'), ['credentialStatus'])
    })
  }

  test('a submitted ldp_vc naming an @context the issuer does not bundle is a 400, nothing issued', async () => {
    const grant = await grantFor(t.app, 'ldp-ed2018')
    const response = await submit(t.app, grant.rp, grant.processId, [
      { ...DEGREE[0], '@context': [V1, 'https://unknown.example/v1'] },
    ])
    assert.equal(response.statusCode, 400, response.body)
    assert.match(response.body, /unknown\.example.*processed offline/)
  })
})
