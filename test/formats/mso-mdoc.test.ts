import assert from 'node:assert/strict'
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto'
import { before, describe, test } from 'node:test'
import { msoMdocFormat } from '../../src/formats/mso-mdoc/index.ts'
import { namespacesOf } from '../../src/formats/mso-mdoc/issue.ts'
import * as mdoc from '../../src/shared/mdoc.ts'
import {
  certificatePem,
  generateIaca,
  issueCertificate,
  issueDocumentSigner,
  MDL_DS_EKU,
  mdocCertificateProblems,
  type TestCa,
} from '../../src/shared/x509.ts'

// The mso_mdoc format (ISO/IEC 18013-5; OpenID4VCI 1.0 A.2, OpenID4VP 1.0 B.2) on @owf/mdoc: what the
// service signs, the verifier reads and the wallet presents, each rule broken once.

const NS = mdoc.MDL_NAMESPACE
const DOCTYPE = mdoc.MDL_DOCTYPE
const HOUR = 3_600_000

let iaca: TestCa
let ds: { privateKey: KeyObject; x5chain: string[] }
let device: { privateKey: KeyObject; publicKey: KeyObject }
let issued: string
const anchors = () => [certificatePem(iaca.certificate)]

const issue = (over: Partial<mdoc.MdocIssueInput> = {}) =>
  mdoc.issueMdoc({
    docType: DOCTYPE,
    namespaces: {
      [NS]: {
        family_name: 'Doe',
        given_name: 'Jane',
        birth_date: '1990-01-02',
        portrait: 'AAEC',
        age_over_18: true,
      },
    },
    deviceKey: device.publicKey.export({ format: 'jwk' }),
    signer: ds,
    validity: {
      signed: new Date(),
      validFrom: new Date(Date.now() - HOUR),
      validUntil: new Date(Date.now() + 24 * HOUR),
    },
    status: { idx: 7, uri: 'https://issuer.example/token-status/1' },
    ...over,
  })

const deviceSigner = (key: KeyObject) => ({
  alg: 'ES256' as const,
  sign: (bytes: Uint8Array) => new Uint8Array(sign('sha256', bytes, { key, dsaEncoding: 'ieee-p1363' })),
})

const HANDOVER = {
  clientId: 'x509_hash:abc',
  nonce: 'n-1',
  responseUri: 'https://verifier.example/response',
}

async function presentation(
  over: Partial<mdoc.PresentMdocInput> = {},
  handover: mdoc.Oid4vpHandover = HANDOVER,
): Promise<string> {
  return mdoc.presentMdoc({
    documents: [{ issuerSigned: issued, disclose: { [NS]: ['family_name', 'age_over_18'] } }],
    sessionTranscript: await mdoc.oid4vpSessionTranscript(handover),
    deviceSigner: deviceSigner(device.privateKey),
    ...over,
  })
}

const session = { audience: HANDOVER.clientId, nonce: HANDOVER.nonce, responseUri: HANDOVER.responseUri }
const expectation = (over: Record<string, unknown> = {}) => ({
  nonceRole: 'the nonce',
  audienceRole: 'the client_id',
  now: Date.now(),
  ...session,
  ...over,
})

before(async () => {
  await mdoc.prepareMdoc()
  iaca = await generateIaca({ commonName: 'Test IACA', uri: 'https://issuer.example' })
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const certificate = await issueDocumentSigner({
    iaca,
    publicKey: pair.publicKey,
    commonName: 'Test DS',
    uri: 'https://issuer.example',
  })
  ds = { privateKey: pair.privateKey, x5chain: [certificate.toString('base64')] }
  device = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  issued = await issue()
})

describe('ISO 18013-5 Annex B certificates', () => {
  test('the generated IACA and document signer fit their profiles', () => {
    assert.deepEqual(mdocCertificateProblems(iaca.certificate, 'iaca'), [])
    assert.deepEqual(mdocCertificateProblems(Buffer.from(ds.x5chain[0] as string, 'base64'), 'ds'), [])
  })

  test('a plain leaf is no document signer, and a DS is no IACA: each rule named', async () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const leaf = await issueCertificate({ issuer: iaca, publicKey: pair.publicKey, subject: 'CN=leaf' })
    const problems = mdocCertificateProblems(leaf, 'ds')
    assert.ok(
      problems.some((p) => p.includes(MDL_DS_EKU)),
      problems.join('; '),
    )
    assert.ok(
      problems.some((p) => p.includes('country')),
      problems.join('; '),
    )
    const asIaca = mdocCertificateProblems(Buffer.from(ds.x5chain[0] as string, 'base64'), 'iaca')
    assert.ok(
      asIaca.some((p) => p.includes('basicConstraints')),
      asIaca.join('; '),
    )
    assert.ok(
      asIaca.some((p) => p.includes('self-signed')),
      asIaca.join('; '),
    )
  })
})

describe('an issued mdoc (OpenID4VCI 1.0 Appendix A.2.4)', () => {
  test('reads back its doctype, elements (full-date, bytes), device key, validity and status', () => {
    const doc = mdoc.decodeIssuerSigned(issued)
    assert.equal(doc.docType, DOCTYPE)
    assert.deepEqual(doc.namespaces[NS], {
      family_name: 'Doe',
      given_name: 'Jane',
      birth_date: '1990-01-02',
      portrait: 'AAEC',
      age_over_18: true,
    })
    assert.equal(doc.deviceKey.x, device.publicKey.export({ format: 'jwk' }).x)
    assert.deepEqual(doc.status, { idx: 7, uri: 'https://issuer.example/token-status/1' })
    assert.equal(doc.alg, 'ES256')
  })

  test('the credential format verifies issuerAuth to the IACA and exposes what the pipeline judges', async () => {
    await msoMdocFormat.credential.prepare?.()
    const read = msoMdocFormat.credential.read(issued, { algorithms: ['ES256'] })
    const proof = await read.verifyProof(
      () => {
        throw new Error('no did:key is resolved for an mdoc')
      },
      { trustAnchors: anchors(), now: Date.now() },
    )
    assert.ok(proof.ok, proof.ok ? '' : proof.reason)
    assert.equal(proof.ok && proof.issuer, 'CN=Test DS, C=UT')
    assert.deepEqual(read.types, [DOCTYPE])
    assert.deepEqual(read.status, [
      { kind: 'token-status-list', uri: 'https://issuer.example/token-status/1', index: 7 },
    ])
    assert.deepEqual(
      read.validity.map((v) => v.kind),
      ['notBefore', 'notAfter'],
    )
    assert.equal(read.holderBinding.kind, 'key')
  })

  test('no trust anchor, or another IACA: credentialProof fails naming the x5chain', async () => {
    const read = msoMdocFormat.credential.read(issued, { algorithms: ['ES256'] })
    const none = await read.verifyProof(() => ({}) as never, { trustAnchors: [], now: Date.now() })
    assert.equal(none.ok, false)
    assert.match(none.ok ? '' : none.reason, /no IACA trust anchor/)
    const other = await generateIaca({ commonName: 'Other IACA', uri: 'https://other.example' })
    const foreign = await read.verifyProof(() => ({}) as never, {
      trustAnchors: [certificatePem(other.certificate)],
      now: Date.now(),
    })
    assert.equal(foreign.ok, false)
    assert.match(foreign.ok ? '' : foreign.reason, /issuerAuth x5chain/)
  })

  test('an element changed under the MSO fails its digest; a re-signed MSO by another DS fails the chain', async () => {
    const tampered = await mdoc.tamperMdocElement(issued)
    const doc = mdoc.decodeIssuerSigned(tampered)
    const result = await mdoc.verifyIssuerAuth(doc, { trustAnchors: anchors(), now: Date.now() })
    assert.equal(result.ok, false)
    assert.match(result.ok ? '' : result.reason, /does not match its digest in the MSO/)
    const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const strangerCa = await generateIaca({ commonName: 'Stranger', uri: 'https://stranger.example' })
    const strangerDs = await issueDocumentSigner({
      iaca: strangerCa,
      publicKey: stranger.publicKey,
      commonName: 'Stranger DS',
      uri: 'https://stranger.example',
    })
    const resigned = await mdoc.reissueMdoc(
      issued,
      {},
      {
        privateKey: stranger.privateKey,
        x5chain: [strangerDs.toString('base64')],
      },
    )
    const refused = await mdoc.verifyIssuerAuth(mdoc.decodeIssuerSigned(resigned), {
      trustAnchors: anchors(),
      now: Date.now(),
    })
    assert.equal(refused.ok, false)
  })

  test('reissueMdoc with the genuine DS keeps it valid and changes only what it was asked to', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const changed = await mdoc.reissueMdoc(
      issued,
      { deviceKey: other.publicKey.export({ format: 'jwk' }) },
      ds,
    )
    const doc = mdoc.decodeIssuerSigned(changed)
    assert.ok((await mdoc.verifyIssuerAuth(doc, { trustAnchors: anchors(), now: Date.now() })).ok)
    assert.equal(doc.deviceKey.x, other.publicKey.export({ format: 'jwk' }).x)
    assert.deepEqual(doc.namespaces, mdoc.decodeIssuerSigned(issued).namespaces)
    assert.deepEqual(doc.status, { idx: 7, uri: 'https://issuer.example/token-status/1' })
  })

  test('malformed input is refused with a reason, before anything is trusted', () => {
    assert.throws(() => mdoc.decodeIssuerSigned('not base64url!'), /not base64url/)
    assert.throws(() => mdoc.decodeIssuerSigned('oWFhAQ'), /not a CBOR IssuerSigned structure/)
    assert.throws(() => mdoc.decodeIssuerSigned('A'.repeat(mdoc.MDOC_LIMITS.maxBytes * 2)), /larger than/)
  })
})

describe('a DeviceResponse (OpenID4VP 1.0 Appendix B.2.6)', () => {
  test('discloses exactly the requested elements; the device signature binds this exchange', async () => {
    const token = await presentation()
    await msoMdocFormat.presentation.prepare?.()
    const read = msoMdocFormat.presentation.read(token, { algorithms: ['ES256'] })
    assert.deepEqual(read.unreadable, [])
    const proof = await read.verifyProof()
    assert.ok(proof.ok)
    assert.deepEqual(await read.verifyBinding(expectation()), [])
    const credential = msoMdocFormat.credential.read(read.credentials[0]?.raw, { algorithms: ['ES256'] })
    assert.deepEqual(credential.claims, { [NS]: { family_name: 'Doe', age_over_18: true } })
    assert.deepEqual(credential.disclosed, [
      [NS, 'family_name'],
      [NS, 'age_over_18'],
    ])
    const verified = await credential.verifyProof(() => ({}) as never, {
      trustAnchors: anchors(),
      now: Date.now(),
    })
    assert.ok(verified.ok)
  })

  for (const [what, over] of [
    ['another nonce', { nonce: 'n-2' }],
    ['another client_id', { audience: 'x509_hash:other' }],
    ['another response_uri', { responseUri: 'https://elsewhere.example/response' }],
    ['an encryption key the wallet did not use', { encryptionKeyThumbprint: 'AAAA' }],
  ] as const) {
    test(`sessionBinding fails for ${what} in the expected SessionTranscript`, async () => {
      const read = msoMdocFormat.presentation.read(await presentation(), { algorithms: ['ES256'] })
      const failures = await read.verifyBinding(expectation(over))
      assert.equal(failures.length, 1)
      assert.match(failures[0] as string, /deviceSignature does not verify/)
    })
  }

  test("a device signature by a key other than the MSO's deviceKey fails sessionBinding", async () => {
    const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const token = await presentation({ deviceSigner: deviceSigner(stranger.privateKey) })
    const read = msoMdocFormat.presentation.read(token, { algorithms: ['ES256'] })
    assert.equal((await read.verifyBinding(expectation())).length, 1)
  })

  test('with the encryption key thumbprint in the handover, the verifier expecting it accepts', async () => {
    const handover = { ...HANDOVER, jwkThumbprint: Buffer.alloc(32, 7).toString('base64url') }
    const read = msoMdocFormat.presentation.read(await presentation({}, handover), { algorithms: ['ES256'] })
    assert.deepEqual(
      await read.verifyBinding(expectation({ encryptionKeyThumbprint: handover.jwkThumbprint })),
      [],
    )
    assert.equal((await read.verifyBinding(expectation())).length, 1, 'without it, the transcript differs')
  })

  test('a presented element whose value changed fails credentialProof naming the element', async () => {
    const token = await presentation({ tamper: { namespace: NS, element: 'family_name', value: 'Roe' } })
    const read = msoMdocFormat.presentation.read(token, { algorithms: ['ES256'] })
    const credential = msoMdocFormat.credential.read(read.credentials[0]?.raw, { algorithms: ['ES256'] })
    const verified = await credential.verifyProof(() => ({}) as never, {
      trustAnchors: anchors(),
      now: Date.now(),
    })
    assert.equal(verified.ok, false)
    assert.match(
      verified.ok ? '' : verified.reason,
      /org\.iso\.18013\.5\.1\/family_name: its value does not match/,
    )
  })

  test('the vp_token must be a DeviceResponse', () => {
    assert.throws(() => msoMdocFormat.presentation.read('', { algorithms: [] }), /vp_token is missing/)
    assert.throws(
      () => msoMdocFormat.presentation.read(issued, { algorithms: [] }),
      /vp_token is not a CBOR DeviceResponse/,
    )
  })
})

describe('the format as DCQL and the issuer metadata see it', () => {
  test('claims paths are [namespace, element]; meta names the doctype; no all-optional fallback', () => {
    assert.deepEqual(msoMdocFormat.dcql.claimPath(['family_name'], DOCTYPE), [NS, 'family_name'])
    assert.deepEqual(msoMdocFormat.dcql.claimPath(['org', 'iso', '18013', '5', '1', 'aamva', 'x'], DOCTYPE), [
      'org.iso.18013.5.1.aamva',
      'x',
    ])
    assert.deepEqual(msoMdocFormat.dcql.claimPath(['given_name'], mdoc.PID_DOCTYPE), [
      mdoc.PID_DOCTYPE,
      'given_name',
    ])
    assert.deepEqual(
      msoMdocFormat.dcql.meta(DOCTYPE, () => []),
      { doctype_value: DOCTYPE },
    )
    assert.equal(msoMdocFormat.dcql.anchorClaim, undefined)
  })

  test('the wallet-side DCQL model of a held mdoc lists every element by namespace', async () => {
    const model = await msoMdocFormat.dcql.heldModel(issued, undefined)
    assert.equal(model?.credential_format, 'mso_mdoc')
    assert.equal((model as { doctype: string }).doctype, DOCTYPE)
    assert.deepEqual(
      Object.keys((model as { namespaces: Record<string, object> }).namespaces[NS] ?? {}).sort(),
      ['age_over_18', 'birth_date', 'family_name', 'given_name', 'portrait'],
    )
  })

  test("section 2.3's credentialSubject maps onto namespaces: grouped, or in the doctype's own", () => {
    assert.deepEqual(
      namespacesOf({ id: 'did:key:z', family_name: 'Doe', 'org.iso.18013.5.1.aamva': { sex: 1 } }, DOCTYPE),
      { [NS]: { family_name: 'Doe' }, 'org.iso.18013.5.1.aamva': { sex: 1 } },
    )
    assert.deepEqual(namespacesOf({ given_name: 'Erika' }, mdoc.PID_DOCTYPE), {
      [mdoc.PID_DOCTYPE]: { given_name: 'Erika' },
    })
  })

  test('the issuance profile: cose_key binding, ES256 proofs, COSE -7, doctype', () => {
    const { issuance } = msoMdocFormat
    assert.deepEqual(issuance.bindingMethods, ['cose_key'])
    assert.deepEqual(issuance.proofAlgorithms, ['ES256'])
    assert.deepEqual(issuance.signingAlgValues({ signingAlg: 'ES256' }), [-7])
    assert.deepEqual(issuance.describe({ credentialType: 'x', vct: 'y', doctype: DOCTYPE }), {
      doctype: DOCTYPE,
    })
    assert.deepEqual(msoMdocFormat.vpFormatsSupported({ credential: ['ES256'], holder: ['ES256'] }), {
      mso_mdoc: { issuerauth_alg_values: [-7], deviceauth_alg_values: [-7] },
    })
  })
})
