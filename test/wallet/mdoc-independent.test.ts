import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { before, describe, test } from 'node:test'
import * as mdoc from '../../src/shared/mdoc.ts'
import { certificatePem, generateIaca, issueDocumentSigner } from '../../src/shared/x509.ts'
import { Wallet } from '../../src/wallet/index.ts'
import { presentMdocCredential } from '../../src/wallet/presentation-mdoc.ts'
import { issueIndependently, verifyDeviceResponseIndependently } from '../fixtures/independent-mdoc.ts'

// The simulated wallet against an mdoc implementation nobody here wrote (@auth0/mdl, test/fixtures/
// independent-mdoc.ts): it accepts an mDL @auth0/mdl issued and presents it so that @auth0/mdl, as the
// verifier, accepts the DeviceResponse under the OpenID4VP 1.0 SessionTranscript the test builds; and
// @auth0/mdl refuses it when the wallet binds another exchange.

const NS = mdoc.MDL_NAMESPACE
const ISSUER = 'https://issuer.example/oid4vci/independent'
const HANDOVER = {
  clientId: 'x509_hash:2cQ6Cbh0p4qCeH8yFq7eTkP3pX0m0B1aQ1gH3o2s5lY',
  nonce: 'nonce-of-this-request',
  jwkThumbprint: null,
  responseUri: 'https://verifier.example/oid4vp/response/1',
}

let iacaPem: string
let wallet: Wallet
let issued: string

before(async () => {
  await mdoc.prepareMdoc()
  const iaca = await generateIaca({ commonName: 'Independent IACA', uri: ISSUER })
  iacaPem = certificatePem(iaca.certificate)
  const ds = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const dsCertificate = await issueDocumentSigner({
    iaca,
    publicKey: ds.publicKey,
    commonName: 'Independent DS',
    uri: ISSUER,
  })
  wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: [iacaPem] })
  issued = await issueIndependently({
    docType: mdoc.MDL_DOCTYPE,
    namespaces: {
      [NS]: { family_name: 'Turing', given_name: 'Alan', birth_date: '1912-06-23', age_over_18: true },
    },
    deviceKeyJwk: wallet.publicJwk() as import('node:crypto').JsonWebKey,
    issuerPrivateJwk: ds.privateKey.export({ format: 'jwk' }),
    issuerCertificatePem: certificatePem(dsCertificate),
    validFrom: new Date(Date.now() - 60_000),
    validUntil: new Date(Date.now() + 86_400_000),
  })
})

describe('the wallet and @auth0/mdl', () => {
  test('the wallet accepts and stores an mDL @auth0/mdl issued, verified to its IACA', async () => {
    const [stored] = await wallet.accept([issued], {
      credentialIssuer: ISSUER,
      configurationId: 'mdl',
      status: 200,
      format: 'mso_mdoc',
      doctype: mdoc.MDL_DOCTYPE,
    })
    assert.equal(stored?.format, 'mso_mdoc')
    assert.deepEqual(stored?.types, [mdoc.MDL_DOCTYPE])
  })

  test("the wallet's DeviceResponse verifies with @auth0/mdl: issuerAuth, digests, device signature", async () => {
    const { presentation, disclosed } = await presentMdocCredential({
      credential: issued,
      claimPaths: [
        [NS, 'family_name'],
        [NS, 'age_over_18'],
      ],
      clientId: HANDOVER.clientId,
      nonce: HANDOVER.nonce,
      responseUri: HANDOVER.responseUri,
      jwkThumbprint: undefined,
      signer: wallet.deviceSigner(),
    })
    assert.deepEqual(disclosed, { [NS]: ['family_name', 'age_over_18'] })
    const shown = await verifyDeviceResponseIndependently(presentation, iacaPem, HANDOVER)
    assert.deepEqual(shown, { [NS]: { family_name: 'Turing', age_over_18: true } })
  })

  for (const misbehaviour of [
    'mdoc-wrong-nonce',
    'mdoc-foreign-device-key',
    'mdoc-tampered-element',
  ] as const) {
    test(`${misbehaviour}: @auth0/mdl refuses the DeviceResponse`, async () => {
      const { presentation } = await presentMdocCredential({
        credential: issued,
        claimPaths: [[NS, 'family_name']],
        clientId: HANDOVER.clientId,
        nonce: HANDOVER.nonce,
        responseUri: HANDOVER.responseUri,
        jwkThumbprint: undefined,
        signer: wallet.deviceSigner(),
        misbehave: [misbehaviour],
      })
      await assert.rejects(
        verifyDeviceResponseIndependently(presentation, iacaPem, HANDOVER),
        misbehaviour === 'mdoc-tampered-element' ? /DIGEST/ : /DEVICE_SIGNATURE|[Dd]evice signature/,
      )
    })
  }
})
