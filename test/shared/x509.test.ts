import assert from 'node:assert/strict'
import { createHash, generateKeyPairSync, sign, verify } from 'node:crypto'
import { before, describe, test } from 'node:test'
import {
  certificatePem,
  generateTestCa,
  issueCertificate,
  subjectAltNames,
  type TestCa,
  verifyX5c,
  X509Error,
  x5cOf,
  x509Hash,
} from '../../src/shared/x509.ts'

// src/shared/x509.ts: test CA, leaf certificates, x5c chains validated to trust anchors (RFC 5280 §6).

const DAY = 86_400_000
const holder = () => generateKeyPairSync('ec', { namedCurve: 'P-256' })

describe('x509', () => {
  let ca: TestCa
  let other: TestCa
  before(async () => {
    ;[ca, other] = await Promise.all([generateTestCa(), generateTestCa({ name: 'CN=Other CA' })])
  })

  test('a good chain verifies to its anchor (PEM or DER), and the leaf key verifies what it signed', async () => {
    const keys = holder()
    const leaf = await issueCertificate({
      issuer: ca,
      publicKey: keys.publicKey,
      dns: ['issuer.example'],
      uris: ['https://issuer.example/oid4vci/acme'],
    })
    const x5c = x5cOf([leaf])
    assert.match(x5c[0] as string, /^[A-Za-z0-9+/]+={0,2}$/)
    for (const anchor of [certificatePem(ca.certificate), ca.certificate]) {
      const verified = await verifyX5c(x5c, [anchor])
      const signature = sign('sha256', Buffer.from('data'), keys.privateKey)
      assert.ok(verify('sha256', Buffer.from('data'), verified.publicKey, signature))
      assert.deepEqual(verified.dns, ['issuer.example'])
    }
    // The anchor may also be sent as the last element.
    await verifyX5c(x5cOf([leaf, ca.certificate]), [certificatePem(ca.certificate)])
  })

  test('a chain with an intermediate CA verifies when the anchor allows one', async () => {
    const root = await generateTestCa({ name: 'CN=Root' })
    const keys = holder()
    const intermediateKeys = holder()
    // generateTestCa's pathLen is 0: an intermediate below it is refused.
    const intermediate = await issueCertificate({
      issuer: root,
      publicKey: intermediateKeys.publicKey,
      subject: 'CN=Intermediate',
      ca: true,
    })
    const leaf = await issueCertificate({
      issuer: { certificate: intermediate, privateKey: intermediateKeys.privateKey },
      publicKey: keys.publicKey,
      dns: ['a.example'],
    })
    await assert.rejects(
      verifyX5c(x5cOf([leaf, intermediate]), [root.certificate]),
      (e: Error) => e instanceof X509Error && /pathLenConstraint/.test(e.message),
    )
  })

  test('a chain to an anchor that is not configured is refused, naming the last certificate', async () => {
    const leaf = await issueCertificate({ issuer: ca, publicKey: holder().publicKey, dns: ['a.example'] })
    await assert.rejects(
      verifyX5c(x5cOf([leaf]), [certificatePem(other.certificate)]),
      (e: Error) => e instanceof X509Error && /not a configured trust anchor/.test(e.message),
    )
    await assert.rejects(
      verifyX5c(x5cOf([leaf]), []),
      (e: Error) => e instanceof X509Error && /no trust anchor/.test(e.message),
    )
  })

  test('an expired leaf is refused; the same chain verifies at a time inside its validity', async () => {
    const now = Date.now()
    const oldCa = await generateTestCa({ now: now - 30 * DAY })
    const leaf = await issueCertificate({
      issuer: oldCa,
      publicKey: holder().publicKey,
      notBefore: new Date(now - 10 * DAY),
      notAfter: new Date(now - DAY),
    })
    await assert.rejects(
      verifyX5c(x5cOf([leaf]), [oldCa.certificate]),
      (e: Error) => e instanceof X509Error && /certificate 0 .*leaf.* expired at/.test(e.message),
    )
    await verifyX5c(x5cOf([leaf]), [oldCa.certificate], now - 5 * DAY)
  })

  test('a tampered signature is refused', async () => {
    const leaf = await issueCertificate({ issuer: ca, publicKey: holder().publicKey, dns: ['a.example'] })
    // The DER ends with the signature BIT STRING: change its last byte.
    const tampered = Buffer.from(leaf)
    tampered[tampered.length - 1] = (tampered[tampered.length - 1] as number) ^ 0x01
    await assert.rejects(
      verifyX5c(x5cOf([tampered]), [ca.certificate]),
      (e: Error) =>
        e instanceof X509Error && /not a configured trust anchor nor issued by one/.test(e.message),
    )
    // Tampered inside a two-element chain: the leaf's own check names it.
    const intermediateKeys = holder()
    const root = await generateTestCa({ name: 'CN=Root2' })
    const intermediate = await issueCertificate({
      issuer: root,
      publicKey: intermediateKeys.publicKey,
      subject: 'CN=Intermediate2',
      ca: true,
    })
    const leaf2 = Buffer.from(
      await issueCertificate({
        issuer: { certificate: intermediate, privateKey: intermediateKeys.privateKey },
        publicKey: holder().publicKey,
      }),
    )
    leaf2[leaf2.length - 1] = (leaf2[leaf2.length - 1] as number) ^ 0x01
    await assert.rejects(
      verifyX5c(x5cOf([leaf2, intermediate, root.certificate]), [root.certificate]),
      (e: Error) => e instanceof X509Error && /certificate 0 .*signature does not verify/.test(e.message),
    )
  })

  test('a certificate issued by a non-CA certificate is refused', async () => {
    const middleKeys = holder()
    const notCa = await issueCertificate({
      issuer: ca,
      publicKey: middleKeys.publicKey,
      subject: 'CN=Not a CA',
    })
    const leaf = await issueCertificate({
      issuer: { certificate: notCa, privateKey: middleKeys.privateKey },
      publicKey: holder().publicKey,
    })
    await assert.rejects(
      verifyX5c(x5cOf([leaf, notCa]), [ca.certificate]),
      (e: Error) => e instanceof X509Error && /CN=Not a CA.* is not a CA/.test(e.message),
    )
  })

  test('base64url and malformed x5c entries are refused', async () => {
    await assert.rejects(verifyX5c('abc', [ca.certificate]), /non-empty array/)
    await assert.rejects(verifyX5c(['a_b-'], [ca.certificate]), /not standard base64/)
  })

  test('subjectAltNames lists dNSName and URI entries of the leaf', async () => {
    const leaf = await issueCertificate({
      issuer: ca,
      publicKey: holder().publicKey,
      dns: ['issuer.example', 'www.issuer.example'],
      uris: ['https://issuer.example/t'],
    })
    assert.deepEqual(subjectAltNames(leaf), {
      dns: ['issuer.example', 'www.issuer.example'],
      uris: ['https://issuer.example/t'],
    })
    const verified = await verifyX5c(x5cOf([leaf]), [ca.certificate])
    assert.deepEqual(verified.uris, ['https://issuer.example/t'])
    assert.deepEqual(subjectAltNames(ca.certificate), { dns: [], uris: [] })
  })

  test('x509Hash is base64url(SHA-256(DER)) of the leaf, whatever form the certificate comes in', async () => {
    const leaf = await issueCertificate({ issuer: ca, publicKey: holder().publicKey })
    const expected = createHash('sha256').update(leaf).digest('base64url')
    assert.equal(x509Hash(leaf), expected)
    assert.equal(x509Hash(certificatePem(leaf)), expected)
    assert.equal(x509Hash(x5cOf([leaf])[0] as string), expected)
    assert.doesNotMatch(expected, /[+/=]/)
  })
})
