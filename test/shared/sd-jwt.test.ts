import assert from 'node:assert/strict'
import type { KeyObject } from 'node:crypto'
import { describe, test } from 'node:test'
import { generateKeyPair, JWS_ALGS, type JwsAlg } from '../../src/shared/did-key.ts'
import { decodeJws, signJws } from '../../src/shared/jws.ts'
import {
  disclosureFrame,
  issueSdJwtVc,
  presentSdJwtVc,
  SdJwtError,
  sdJwtClaims,
  splitSdJwt,
  verifySdJwtVc,
} from '../../src/shared/sd-jwt.ts'

// SD-JWT VC through the shared module (src/shared/sd-jwt.ts): issue, verify, present with key binding, and
// every refusal the module adds on top of @sd-jwt (typ, alg allow-list, KB audience and freshness).

const NOW = Date.UTC(2026, 10, 24, 12)
const SECONDS = Math.floor(NOW / 1000)

function keys(alg: JwsAlg) {
  const pair = generateKeyPair(alg)
  return { alg, ...pair, jwk: pair.publicKey.export({ format: 'jwk' }) as JsonWebKey }
}

async function issued(alg: JwsAlg = 'ES256', extra: Record<string, unknown> = {}) {
  const issuer = keys(alg)
  const holder = keys('ES256')
  const payload = {
    iss: 'did:example:issuer',
    iat: SECONDS,
    nbf: SECONDS,
    exp: SECONDS + 3600,
    vct: 'https://vc-harness.example/vct/VerifiableId',
    cnf: { jwk: holder.jwk },
    status: { status_list: { idx: 7, uri: 'https://issuer.example/status/1' } },
    given_name: 'Erika',
    family_name: 'Mustermann',
    address: { locality: 'Köln', country: 'DE' },
    ...extra,
  }
  const credential = await issueSdJwtVc(payload, ['given_name', 'family_name', 'address.locality'], {
    alg,
    privateKey: issuer.privateKey,
    header: { kid: 'did:example:issuer#key-1' },
  })
  return { issuer, holder, credential }
}

const verifyWith = (issuerKey: KeyObject, extra: Partial<Parameters<typeof verifySdJwtVc>[1]> = {}) => ({
  issuerKey: () => issuerKey,
  algorithms: JWS_ALGS,
  now: NOW,
  ...extra,
})

describe('SD-JWT VC (shared module)', () => {
  test('disclosureFrame turns claim paths into the library frame', () => {
    assert.deepEqual(disclosureFrame(['a', 'b.c', 'b.d']), { _sd: ['a'], b: { _sd: ['c', 'd'] } })
  })

  for (const alg of ['EdDSA', 'ES256'] as const) {
    test(`${alg}: issued with typ dc+sd-jwt and the kid; verified with every disclosure applied`, async () => {
      const { issuer, holder, credential } = await issued(alg)
      const { jwt, disclosures } = splitSdJwt(credential)
      assert.equal(disclosures.length, 3)
      const header = decodeJws(jwt).header
      assert.deepEqual([header.typ, header.alg, header.kid], ['dc+sd-jwt', alg, 'did:example:issuer#key-1'])
      assert.equal(decodeJws(jwt).payload.given_name, undefined, 'a disclosable claim is not in clear')
      const verified = await verifySdJwtVc(credential, verifyWith(issuer.publicKey))
      assert.equal(verified.claims.given_name, 'Erika')
      assert.deepEqual(verified.claims.address, { locality: 'Köln', country: 'DE' })
      assert.equal(verified.claims._sd, undefined)
      assert.deepEqual(verified.holderJwk, holder.jwk)
      assert.equal(verified.keyBinding, undefined)
    })
  }

  test('a presentation discloses only what is asked and binds to the holder key, nonce and audience', async () => {
    const { issuer, holder, credential } = await issued()
    const presented = await presentSdJwtVc(credential, ['given_name'], {
      alg: 'ES256',
      privateKey: holder.privateKey,
      nonce: 'n-1',
      audience: 'x509_san_dns:verifier.example',
      iat: SECONDS,
    })
    const keyBinding = { nonce: 'n-1', audience: 'x509_san_dns:verifier.example', maxAgeSeconds: 300 }
    const verified = await verifySdJwtVc(presented, verifyWith(issuer.publicKey, { keyBinding }))
    assert.equal(verified.claims.given_name, 'Erika')
    assert.equal(verified.claims.family_name, undefined, 'not disclosed')
    assert.equal((verified.claims.address as Record<string, unknown>).locality, undefined)
    assert.equal(verified.keyBinding?.header.typ, 'kb+jwt')
    assert.equal(typeof verified.keyBinding?.payload.sd_hash, 'string')

    const refuse = async (text: string, options: Parameters<typeof verifySdJwtVc>[1], token = presented) =>
      assert.rejects(
        verifySdJwtVc(token, options),
        (e: unknown) => e instanceof SdJwtError && e.message.includes(text),
      )
    await refuse('Nonce', verifyWith(issuer.publicKey, { keyBinding: { ...keyBinding, nonce: 'other' } }))
    await refuse('aud', verifyWith(issuer.publicKey, { keyBinding: { ...keyBinding, audience: 'other' } }))
    await refuse('s old', verifyWith(issuer.publicKey, { now: NOW + 3_000_000, keyBinding }))
    await refuse('Key Binding', verifyWith(issuer.publicKey, { keyBinding }), credential)
    // An extra disclosure added after the holder signed breaks sd_hash.
    const [, , third] = splitSdJwt(credential).disclosures
    const parts = presented.split('~')
    const injected = [...parts.slice(0, -1), third, parts.at(-1)].join('~')
    await refuse('sd_hash', verifyWith(issuer.publicKey, { keyBinding }), injected)
  })

  test('refused: another key, a tampered disclosure, a wrong typ, an alg off the list, expiry', async () => {
    const { issuer, credential } = await issued()
    const refuse = (token: string, options: Parameters<typeof verifySdJwtVc>[1]) =>
      assert.rejects(verifySdJwtVc(token, options), SdJwtError)
    await refuse(credential, verifyWith(keys('ES256').publicKey))
    const { jwt, disclosures } = splitSdJwt(credential)
    const decoded = disclosures.map((d) => Buffer.from(d, 'base64url').toString())
    const erika = decoded.findIndex((d) => d.includes('Erika'))
    assert.ok(erika >= 0)
    const tampered = Buffer.from((decoded[erika] as string).replace('Erika', 'Mallory')).toString('base64url')
    const altered = disclosures.map((d, i) => (i === erika ? tampered : d))
    await refuse([jwt, ...altered, ''].join('~'), verifyWith(issuer.publicKey))
    await refuse(credential, verifyWith(issuer.publicKey, { algorithms: ['EdDSA'] }))
    await refuse(credential, verifyWith(issuer.publicKey, { now: NOW + 7_200_000 }))
    const plainJwt = signJws({ alg: 'ES256', typ: 'JWT' }, decodeJws(jwt).payload, issuer.privateKey)
    await refuse(`${plainJwt}~`, verifyWith(issuer.publicKey))
  })

  test('reserved claims (cnf, vct, status, iss) cannot be made disclosable', async () => {
    const issuer = keys('ES256')
    await assert.rejects(
      issueSdJwtVc({ iss: 'x', vct: 'y', cnf: { jwk: issuer.jwk } }, ['cnf'], {
        alg: 'ES256',
        privateKey: issuer.privateKey,
        header: {},
      }),
    )
  })

  test('sdJwtClaims shows every claim without verifying (the wallet list)', async () => {
    const { credential } = await issued()
    const claims = await sdJwtClaims(credential)
    assert.equal(claims.family_name, 'Mustermann')
    assert.equal(claims.vct, 'https://vc-harness.example/vct/VerifiableId')
  })
})
