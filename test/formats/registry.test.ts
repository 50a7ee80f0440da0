// The format registry (src/formats/) and the one issuer rule both sides of the wire apply (issue 31 items 1
// and 2): the service's verifier (sdJwtVcCredential.verifyProof) and the wallet at receipt
// (verifyReceivedSdJwt) decide who signed an SD-JWT VC with the same function, so a credential one accepts
// the other accepts, and one refuses the other refuses. Before, they disagreed: the wallet matched an x5c
// dNSName for https issuers only while the service matched any scheme, and the wallet let a did:key kid
// sign for an https iss that the service refused. The stricter rule of each won.
import assert from 'node:assert/strict'
import type { KeyObject } from 'node:crypto'
import { describe, test } from 'node:test'
import { FORMAT_IDS, FORMATS, formatNamed, issuedFormat } from '../../src/formats/registry.ts'
import { sdJwtVcCredential } from '../../src/formats/sd-jwt-vc/verify.ts'
import { didKeyFromPublicKey, generateKeyPair, JWS_ALGS } from '../../src/shared/did-key.ts'
import { jwkThumbprint } from '../../src/shared/jws.ts'
import { issueSdJwtVc } from '../../src/shared/sd-jwt.ts'
import { certificatePem, generateTestCa, issueCertificate, x5cOf } from '../../src/shared/x509.ts'
import { verifyReceivedSdJwt } from '../../src/wallet/sd-jwt-receive.ts'

const NOW = Date.now()
const holder = didKeyFromPublicKey(generateKeyPair('EdDSA').publicKey)

async function sdJwt(
  header: { kid?: string; x5c?: string[] },
  iss: string,
  privateKey: KeyObject,
  alg: 'ES256' | 'EdDSA',
) {
  const payload = {
    iss,
    sub: holder.did,
    jti: 'urn:uuid:5d1f0a36-0000-4000-8000-000000000031',
    iat: Math.floor(NOW / 1000),
    vct: 'https://issuer.example/vct/VerifiableId',
    cnf: { jwk: holder.publicJwk },
    given_name: 'Ada',
  }
  return issueSdJwtVc(payload, ['given_name'], { alg, privateKey, header })
}

/** Both sides' verdicts on `compact`: the service's reason and the wallet's message (undefined = accepted). */
async function verdicts(compact: string, anchors: readonly string[]) {
  const read = sdJwtVcCredential.read(compact, { algorithms: JWS_ALGS })
  const service = await read.verifyProof(() => assert.fail('no did:key resolution expected'), {
    trustAnchors: anchors,
    now: NOW,
  })
  let wallet: string | undefined
  try {
    await verifyReceivedSdJwt(compact, { holderJwk: holder.publicJwk, now: NOW, trustAnchors: anchors })
  } catch (error) {
    wallet = (error as Error).message
  }
  return { service: service.ok ? undefined : service.reason, wallet, read }
}

describe('one issuer rule for the service and the wallet (SD-JWT VC §3.5)', async () => {
  const ca = await generateTestCa({ now: NOW })
  const anchors = [certificatePem(ca.certificate)]
  const leafKeys = generateKeyPair('ES256')
  const leaf = await issueCertificate({
    issuer: ca,
    publicKey: leafKeys.publicKey,
    dns: ['issuer.example'],
  })
  const x5c = x5cOf([leaf])

  test('an https issuer whose host is the leaf dNSName: both accept', async () => {
    const both = await verdicts(
      await sdJwt({ x5c }, 'https://issuer.example', leafKeys.privateKey, 'ES256'),
      anchors,
    )
    assert.equal(both.service, undefined)
    assert.equal(both.wallet, undefined)
  })

  test('an http issuer on the same host: both refuse, naming the https-only rule (the service used to accept it)', async () => {
    const both = await verdicts(
      await sdJwt({ x5c }, 'http://issuer.example', leafKeys.privateKey, 'ES256'),
      anchors,
    )
    assert.match(
      both.service ?? '',
      /iss "http:\/\/issuer\.example" is not named by the x5c leaf certificate .*https issuer only/,
    )
    assert.match(both.wallet ?? '', /iss "http:\/\/issuer\.example" is not named by the x5c leaf certificate/)
  })

  test('a did:key kid signing for an https iss: both refuse (the wallet used to accept it)', async () => {
    const tenantKeys = generateKeyPair('EdDSA')
    const issuer = didKeyFromPublicKey(tenantKeys.publicKey)
    const compact = await sdJwt({ kid: issuer.kid }, 'https://issuer.example', tenantKeys.privateKey, 'EdDSA')
    const read = sdJwtVcCredential.read(compact, { algorithms: JWS_ALGS })
    const service = await read.verifyProof(() => issuer, { trustAnchors: anchors, now: NOW })
    assert.equal(service.ok, false)
    assert.match(service.ok ? '' : service.reason, /iss is not the DID of the key that signed it/)
    await assert.rejects(
      verifyReceivedSdJwt(compact, { holderJwk: holder.publicJwk, now: NOW }),
      /iss is not the DID of the key that signed it/,
    )
  })

  test('the same registered claims on both sides: sub and jti are not subject claims', async () => {
    const compact = await sdJwt({ x5c }, 'https://issuer.example', leafKeys.privateKey, 'ES256')
    const both = await verdicts(compact, anchors)
    assert.deepEqual(both.read.claims, { given_name: 'Ada' })
    const received = await verifyReceivedSdJwt(compact, {
      holderJwk: holder.publicJwk,
      now: NOW,
      trustAnchors: anchors,
    })
    assert.deepEqual(received.claims, { given_name: 'Ada' })
  })
})

describe('the format registry', () => {
  test('ids and aliases name one format each; the wire names resolve', () => {
    const names = FORMATS.flatMap((f) => [f.id, ...f.aliases])
    assert.equal(new Set(names).size, names.length, `a name is used twice: ${names.join(', ')}`)
    assert.deepEqual([...FORMAT_IDS], ['jwt_vc_json', 'dc+sd-jwt', 'ldp_vc', 'mso_mdoc'])
    assert.equal(formatNamed('jwt_vc')?.id, 'jwt_vc_json')
    // section 2.8 names the Linked Data credential format `ldp`
    assert.equal(formatNamed('ldp')?.id, 'ldp_vc')
    assert.equal(formatNamed('vc+sd-jwt')?.id, 'dc+sd-jwt')
    assert.equal(formatNamed('mso_mdoc')?.id, 'mso_mdoc')
    assert.equal(formatNamed('ac_vc'), undefined)
    assert.equal(issuedFormat(undefined).id, 'jwt_vc_json')
  })

  test('each format answers every part from its own folder: reader, presentation, vp_formats_supported, DCQL, issuance', () => {
    for (const format of FORMATS) {
      assert.equal(format.credential.id, format.id)
      const supported = format.vpFormatsSupported({ credential: ['ES256'], holder: ['EdDSA'] })
      assert.deepEqual(
        Object.keys(supported),
        [format.id],
        `${format.id} names itself in vp_formats_supported`,
      )
      assert.equal(format.dcql.claimPath(['a', 'b'], 'VerifiableId').slice(-2).join('.'), 'a.b')
      const meta = format.dcql.meta('VerifiableId', () => ['https://x.example/vct'])
      assert.equal(typeof meta, 'object', `${format.id} builds a credential query meta`)
      // an mdoc's holder key is a COSE key (Appendix A.2), every other format's a did:key
      assert.ok(format.issuance.bindingMethods.includes(format.id === 'mso_mdoc' ? 'cose_key' : 'did:key'))
    }
    assert.equal(
      formatNamed('dc+sd-jwt')?.dcql.meta('VerifiableId', () => []),
      'credential type "VerifiableId" has no vct value for dc+sd-jwt',
    )
  })
})

describe('the JWK thumbprint an mdoc handover binds (RFC 7638 §3.1)', () => {
  test("the RFC's example key has the RFC's thumbprint; members beyond the required ones do not count", () => {
    const jwk = {
      kty: 'RSA',
      n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
      e: 'AQAB',
      alg: 'RS256',
      kid: '2011-04-29',
    }
    assert.equal(jwkThumbprint(jwk), 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs')
    assert.throws(() => jwkThumbprint({ kty: 'oct', k: 'x' }), /no RFC 7638 thumbprint for key type "oct"/)
  })
})
