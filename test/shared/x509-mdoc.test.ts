import 'reflect-metadata'
import assert from 'node:assert/strict'
import { createPublicKey, type KeyObject, webcrypto } from 'node:crypto'
import { before, describe, test } from 'node:test'
import * as x509 from '@peculiar/x509'
import {
  certificatePem,
  generateIaca,
  issueDocumentSigner,
  MDL_DS_EKU,
  mdocCertificateProblems,
  type TestCa,
  verifyX5c,
} from '../../src/shared/x509.ts'

// src/shared/x509.ts, ISO/IEC 18013-5:2021 Annex B: the IACA root (B.1.2) and the document signer (B.1.4) the
// service generates, and mdocCertificateProblems, which checks a configured certificate against them. The
// broken certificates below are each a conforming one with one rule broken, built here with @peculiar/x509.

x509.cryptoProvider.set(webcrypto as unknown as Crypto)

const DAY = 86_400_000
const P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const
const KU = x509.KeyUsageFlags

const newKeys = () => webcrypto.subtle.generateKey(P256, true, ['sign', 'verify']) as Promise<CryptoKeyPair>
const signingKeyOf = (key: KeyObject) =>
  webcrypto.subtle.importKey('pkcs8', key.export({ type: 'pkcs8', format: 'der' }), P256, false, [
    'sign',
  ]) as Promise<CryptoKey>
const publicKeyObject = async (keys: CryptoKeyPair) =>
  createPublicKey({
    key: Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey)),
    format: 'der',
    type: 'spki',
  })
const serialNumber = () => `01${Buffer.from(webcrypto.getRandomValues(new Uint8Array(15))).toString('hex')}`

type Extensions = Record<string, x509.Extension | undefined>

/** A conforming IACA (B.1.2) with `change` applied to its parts: an extension set to undefined is left out. */
async function iacaWith(change: { subject?: string; issuer?: string; extensions?: Extensions } = {}) {
  const keys = await newKeys()
  const extensions: Extensions = {
    basicConstraints: new x509.BasicConstraintsExtension(true, 0, true),
    keyUsage: new x509.KeyUsagesExtension(KU.keyCertSign | KU.cRLSign, true),
    subjectKeyIdentifier: await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    issuerAltName: new x509.IssuerAlternativeNameExtension([
      { type: 'url', value: 'https://issuer.example' },
    ]),
    ...change.extensions,
  }
  const subject = change.subject ?? 'CN=Broken IACA, C=UT'
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject,
    issuer: change.issuer ?? subject,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 3650 * DAY),
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    signingAlgorithm: P256,
    extensions: Object.values(extensions).filter((e) => e !== undefined),
  })
  return Buffer.from(cert.rawData)
}

/** A conforming document signer (B.1.4) under `iaca` with `change` applied, as iacaWith does. */
async function dsWith(iaca: TestCa, change: { subject?: string; extensions?: Extensions } = {}) {
  const issuer = new x509.X509Certificate(new Uint8Array(iaca.certificate))
  const keys = await newKeys()
  const extensions: Extensions = {
    keyUsage: new x509.KeyUsagesExtension(KU.digitalSignature, true),
    extendedKeyUsage: new x509.ExtendedKeyUsageExtension([MDL_DS_EKU], true),
    authorityKeyIdentifier: await x509.AuthorityKeyIdentifierExtension.create(issuer.publicKey),
    subjectKeyIdentifier: await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    issuerAltName: new x509.IssuerAlternativeNameExtension([
      { type: 'url', value: 'https://issuer.example' },
    ]),
    ...change.extensions,
  }
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: change.subject ?? 'CN=Broken DS, C=UT',
    issuer: issuer.subject,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 365 * DAY),
    publicKey: keys.publicKey,
    signingKey: await signingKeyOf(iaca.privateKey),
    signingAlgorithm: P256,
    extensions: Object.values(extensions).filter((e) => e !== undefined),
  })
  return Buffer.from(cert.rawData)
}

/** The one problem a certificate with one rule broken has, matched against `expected`. */
function assertOneProblem(problems: string[], expected: RegExp) {
  assert.equal(problems.length, 1, `one problem expected, got: ${problems.join('; ') || 'none'}`)
  assert.match(problems[0] as string, expected)
}

describe('ISO 18013-5 Annex B certificates (x509.ts)', () => {
  let iaca: TestCa
  let dsKeys: CryptoKeyPair
  let ds: Buffer
  before(async () => {
    iaca = await generateIaca({ commonName: 'vc-harness IACA (acme)', uri: 'https://issuer.example/acme' })
    dsKeys = await newKeys()
    ds = await issueDocumentSigner({
      iaca,
      publicKey: await publicKeyObject(dsKeys),
      commonName: 'vc-harness document signer acme',
      uri: 'https://issuer.example/acme',
    })
  })

  test('the generated IACA and document signer fit their profiles', () => {
    assert.deepEqual(mdocCertificateProblems(iaca.certificate, 'iaca'), [])
    assert.deepEqual(mdocCertificateProblems(ds, 'ds'), [])
    assert.deepEqual(mdocCertificateProblems(certificatePem(ds), 'ds'), [], 'PEM as well as DER')
  })

  test('the IACA (B.1.2): self-signed P-256, cA pathLen 0, keyCertSign | cRLSign, SKI, issuerAltName, C=UT', async () => {
    const cert = new x509.X509Certificate(new Uint8Array(iaca.certificate))
    assert.equal(cert.subject, cert.issuer)
    assert.ok(await cert.verify({ signatureOnly: true }), 'self-signed')
    assert.deepEqual(cert.publicKey.algorithm, { name: 'ECDSA', namedCurve: 'P-256' })
    assert.deepEqual(cert.subjectName.getField('C'), ['UT'])
    const bc = cert.getExtension(x509.BasicConstraintsExtension)
    assert.deepEqual([bc?.ca, bc?.pathLength, bc?.critical], [true, 0, true])
    const ku = cert.getExtension(x509.KeyUsagesExtension)
    assert.deepEqual([ku?.usages, ku?.critical], [KU.keyCertSign | KU.cRLSign, true])
    assert.ok(cert.getExtension(x509.SubjectKeyIdentifierExtension))
    const ian = cert.getExtension(x509.IssuerAlternativeNameExtension)
    assert.deepEqual(ian?.names.toJSON(), [{ type: 'url', value: 'https://issuer.example/acme' }])
    // A long-lived test root: ten years by default.
    const years = (cert.notAfter.getTime() - cert.notBefore.getTime()) / (365 * DAY)
    assert.ok(years >= 9.9 && years <= 20, `${years} years`)
  })

  test('the document signer (B.1.4): digitalSignature and id-mdl-kp-mdlDS critical, AKI = IACA SKI, C of the IACA', async () => {
    const cert = new x509.X509Certificate(new Uint8Array(ds))
    const ku = cert.getExtension(x509.KeyUsagesExtension)
    assert.deepEqual([ku?.usages, ku?.critical], [KU.digitalSignature, true])
    const eku = cert.getExtension(x509.ExtendedKeyUsageExtension)
    assert.deepEqual([[...(eku?.usages ?? [])].map(String), eku?.critical], [[MDL_DS_EKU], true])
    const aki = cert.getExtension(x509.AuthorityKeyIdentifierExtension)
    const iacaCert = new x509.X509Certificate(new Uint8Array(iaca.certificate))
    const iacaSki = iacaCert.getExtension(x509.SubjectKeyIdentifierExtension)
    assert.ok(aki?.keyId && aki.keyId === iacaSki?.keyId, 'authorityKeyIdentifier names the IACA key')
    const ski = cert.getExtension(x509.SubjectKeyIdentifierExtension)
    const own = await x509.SubjectKeyIdentifierExtension.create(dsKeys.publicKey)
    assert.equal(ski?.keyId, own.keyId)
    assert.ok(cert.getExtension(x509.IssuerAlternativeNameExtension))
    assert.ok(!cert.getExtension(x509.BasicConstraintsExtension)?.ca, 'not a CA')
    assert.deepEqual(cert.subjectName.getField('C'), ['UT'])
    assert.ok(cert.notAfter <= iacaCert.notAfter, 'the DS does not outlive its IACA')
    assert.ok(
      cert.notAfter.getTime() - cert.notBefore.getTime() <
        iacaCert.notAfter.getTime() - iacaCert.notBefore.getTime(),
      'the DS is shorter-lived than the IACA',
    )

    // Another country: the DS takes the IACA's.
    const nl = await generateIaca({ commonName: 'NL IACA', country: 'NL', uri: 'https://issuer.example/nl' })
    const nlDs = new x509.X509Certificate(
      new Uint8Array(
        await issueDocumentSigner({
          iaca: nl,
          publicKey: await publicKeyObject(dsKeys),
          commonName: 'NL DS',
          uri: 'https://issuer.example/nl',
        }),
      ),
    )
    assert.deepEqual(nlDs.subjectName.getField('C'), ['NL'])
    assert.deepEqual(mdocCertificateProblems(nl.certificate, 'iaca'), [])
  })

  test('the document signer verifies under its IACA (@peculiar/x509 and verifyX5c), not under another', async () => {
    const cert = new x509.X509Certificate(new Uint8Array(ds))
    const root = new x509.X509Certificate(new Uint8Array(iaca.certificate))
    assert.equal(cert.issuer, root.subject)
    assert.ok(await cert.verify({ publicKey: root.publicKey }))
    const path = await new x509.X509ChainBuilder({ certificates: [root] }).build(cert)
    assert.deepEqual(
      [...path].map((c) => c.subject),
      [cert.subject, root.subject],
    )
    // The x5chain as an mdoc carries it: the DS only, the IACA configured as trust anchor.
    const verified = await verifyX5c([ds.toString('base64')], [certificatePem(iaca.certificate)])
    assert.equal(verified.anchor.subject, root.subject)

    const other = await generateIaca({ commonName: 'Other IACA', uri: 'https://other.example' })
    const otherRoot = new x509.X509Certificate(new Uint8Array(other.certificate))
    assert.equal(await cert.verify({ publicKey: otherRoot.publicKey, signatureOnly: true }), false)
    await assert.rejects(
      verifyX5c([ds.toString('base64')], [certificatePem(other.certificate)]),
      /trust anchor/,
    )
  })

  describe('an IACA with one rule of B.1.2 broken: that rule is reported', () => {
    const cases: [string, Parameters<typeof iacaWith>[0], RegExp][] = [
      [
        'pathLenConstraint missing',
        { extensions: { basicConstraints: new x509.BasicConstraintsExtension(true, undefined, true) } },
        /basicConstraints/,
      ],
      [
        'pathLenConstraint 1',
        { extensions: { basicConstraints: new x509.BasicConstraintsExtension(true, 1, true) } },
        /basicConstraints/,
      ],
      [
        'cA false',
        { extensions: { basicConstraints: new x509.BasicConstraintsExtension(false, undefined, true) } },
        /basicConstraints/,
      ],
      ['no basicConstraints', { extensions: { basicConstraints: undefined } }, /basicConstraints/],
      [
        'keyUsage without cRLSign',
        { extensions: { keyUsage: new x509.KeyUsagesExtension(KU.keyCertSign, true) } },
        /keyUsage/,
      ],
      [
        'keyUsage without keyCertSign',
        { extensions: { keyUsage: new x509.KeyUsagesExtension(KU.cRLSign, true) } },
        /keyUsage/,
      ],
      ['no keyUsage', { extensions: { keyUsage: undefined } }, /keyUsage/],
      ['no country in the subject', { subject: 'CN=Broken IACA' }, /country/],
      ['no issuerAltName', { extensions: { issuerAltName: undefined } }, /issuerAltName/],
      ['not self-issued', { issuer: 'CN=Someone else, C=UT' }, /self-signed/],
    ]
    for (const [name, change, expected] of cases) {
      test(name, async () =>
        assertOneProblem(mdocCertificateProblems(await iacaWith(change), 'iaca'), expected),
      )
    }
    test('a conforming one built the same way has none', async () => {
      assert.deepEqual(mdocCertificateProblems(await iacaWith(), 'iaca'), [])
    })
  })

  describe('a document signer with one rule of B.1.4 broken: that rule is reported', () => {
    const cases: [string, Parameters<typeof dsWith>[1], RegExp][] = [
      ['no extKeyUsage', { extensions: { extendedKeyUsage: undefined } }, new RegExp(MDL_DS_EKU)],
      [
        'extKeyUsage serverAuth instead of id-mdl-kp-mdlDS',
        { extensions: { extendedKeyUsage: new x509.ExtendedKeyUsageExtension(['1.3.6.1.5.5.7.3.1'], true) } },
        new RegExp(MDL_DS_EKU),
      ],
      [
        'keyUsage keyCertSign instead of digitalSignature',
        { extensions: { keyUsage: new x509.KeyUsagesExtension(KU.keyCertSign, true) } },
        /digitalSignature/,
      ],
      ['no keyUsage', { extensions: { keyUsage: undefined } }, /digitalSignature/],
      [
        'a CA',
        { extensions: { basicConstraints: new x509.BasicConstraintsExtension(true, 0, true) } },
        /not a CA/,
      ],
      ['no country in the subject', { subject: 'CN=Broken DS' }, /country/],
      ['no issuerAltName', { extensions: { issuerAltName: undefined } }, /issuerAltName/],
    ]
    for (const [name, change, expected] of cases) {
      test(name, async () => {
        const iaca = await generateIaca({ commonName: 'IACA', uri: 'https://issuer.example' })
        assertOneProblem(mdocCertificateProblems(await dsWith(iaca, change), 'ds'), expected)
      })
    }
    test('a conforming one built the same way has none; an IACA is no DS, a DS no IACA', async () => {
      const iaca = await generateIaca({ commonName: 'IACA', uri: 'https://issuer.example' })
      const ds = await dsWith(iaca)
      assert.deepEqual(mdocCertificateProblems(ds, 'ds'), [])
      assert.ok(mdocCertificateProblems(iaca.certificate, 'ds').length > 0)
      assert.ok(mdocCertificateProblems(ds, 'iaca').length > 0)
    })
  })

  // The remaining rules of Annex B: criticality, key identifiers, the key type, a real self-signature.
  describe('criticality, key identifiers, key type, self-signature', () => {
    test('IACA: basicConstraints not critical', async () => {
      const cert = await iacaWith({
        extensions: { basicConstraints: new x509.BasicConstraintsExtension(true, 0, false) },
      })
      assertOneProblem(mdocCertificateProblems(cert, 'iaca'), /basicConstraints.*critical/)
    })
    test('IACA: keyUsage not critical', async () => {
      const cert = await iacaWith({
        extensions: { keyUsage: new x509.KeyUsagesExtension(KU.keyCertSign | KU.cRLSign, false) },
      })
      assertOneProblem(mdocCertificateProblems(cert, 'iaca'), /keyUsage.*critical/)
    })
    test('IACA: no subjectKeyIdentifier', async () => {
      const cert = await iacaWith({ extensions: { subjectKeyIdentifier: undefined } })
      assertOneProblem(mdocCertificateProblems(cert, 'iaca'), /subjectKeyIdentifier/)
    })
    test('IACA: issuer = subject but the signature is by another key (not self-signed)', async () => {
      const iaca = await generateIaca({ commonName: 'IACA', uri: 'https://issuer.example' })
      const subject = new x509.X509Certificate(new Uint8Array(iaca.certificate)).subject
      const keys = await newKeys()
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: serialNumber(),
        subject,
        issuer: subject,
        notBefore: new Date(Date.now() - DAY),
        notAfter: new Date(Date.now() + 3650 * DAY),
        publicKey: keys.publicKey,
        signingKey: await signingKeyOf(iaca.privateKey),
        signingAlgorithm: P256,
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(KU.keyCertSign | KU.cRLSign, true),
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
          new x509.IssuerAlternativeNameExtension([{ type: 'url', value: 'https://issuer.example' }]),
        ],
      })
      assertOneProblem(mdocCertificateProblems(Buffer.from(cert.rawData), 'iaca'), /self-signed/)
    })
    test('IACA: a P-384 key instead of P-256 (ES256)', async () => {
      const alg = { name: 'ECDSA', namedCurve: 'P-384', hash: 'SHA-384' } as const
      const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair
      const cert = await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber: serialNumber(),
        name: 'CN=P-384 IACA, C=UT',
        notBefore: new Date(Date.now() - DAY),
        notAfter: new Date(Date.now() + 3650 * DAY),
        keys,
        signingAlgorithm: alg,
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(KU.keyCertSign | KU.cRLSign, true),
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
          new x509.IssuerAlternativeNameExtension([{ type: 'url', value: 'https://issuer.example' }]),
        ],
      })
      assertOneProblem(mdocCertificateProblems(Buffer.from(cert.rawData), 'iaca'), /P-256/)
    })
    test('DS: keyUsage not critical', async () => {
      const iaca = await generateIaca({ commonName: 'IACA', uri: 'https://issuer.example' })
      const cert = await dsWith(iaca, {
        extensions: { keyUsage: new x509.KeyUsagesExtension(KU.digitalSignature, false) },
      })
      assertOneProblem(mdocCertificateProblems(cert, 'ds'), /keyUsage.*critical/)
    })
    test('DS: extKeyUsage not critical', async () => {
      const iaca = await generateIaca({ commonName: 'IACA', uri: 'https://issuer.example' })
      const cert = await dsWith(iaca, {
        extensions: { extendedKeyUsage: new x509.ExtendedKeyUsageExtension([MDL_DS_EKU], false) },
      })
      assertOneProblem(mdocCertificateProblems(cert, 'ds'), /extKeyUsage.*critical/)
    })
    test('DS: no authorityKeyIdentifier', async () => {
      const iaca = await generateIaca({ commonName: 'IACA', uri: 'https://issuer.example' })
      const cert = await dsWith(iaca, { extensions: { authorityKeyIdentifier: undefined } })
      assertOneProblem(mdocCertificateProblems(cert, 'ds'), /authorityKeyIdentifier/)
    })
    test('DS: no subjectKeyIdentifier', async () => {
      const iaca = await generateIaca({ commonName: 'IACA', uri: 'https://issuer.example' })
      const cert = await dsWith(iaca, { extensions: { subjectKeyIdentifier: undefined } })
      assertOneProblem(mdocCertificateProblems(cert, 'ds'), /subjectKeyIdentifier/)
    })
  })
})
