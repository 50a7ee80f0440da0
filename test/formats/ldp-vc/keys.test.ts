import assert from 'node:assert/strict'
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { describe, test } from 'node:test'
import {
  generateLdKeyPair,
  keyTypeOf,
  type LdKeyType,
  ldKeyFromPublicKey,
  resolveLdKey,
} from '../../../src/formats/ldp-vc/keys.ts'
import { base58btcDecode, base58btcEncode, didKeyFromPublicKey } from '../../../src/shared/did-key.ts'

// did:key for the five key types Linked Data proofs use (did:key method §3.1 and its test vectors,
// w3c-ccg/did-method-key test-vectors/): Ed25519, P-256 and secp256k1 exactly as shared/did-key.ts encodes
// them, P-384 (multicodec 0x1201, compressed point) and RSA (0x1205, PKCS#1 DER RSAPublicKey).

const KEY_TYPES: readonly LdKeyType[] = ['Ed25519', 'P-256', 'P-384', 'secp256k1', 'RSA']
const PREFIX: Record<LdKeyType, string> = {
  Ed25519: 'did:key:z6Mk',
  'P-256': 'did:key:zDn',
  'P-384': 'did:key:z82',
  secp256k1: 'did:key:zQ3s',
  RSA: 'did:key:z4MX',
}

/** did:key test vectors (test-vectors/nist-curves.json and rsa.json). */
const P384_VECTOR = {
  did: 'did:key:z82Lm1MpAkeJcix9K8TMiLd5NMAhnwkjjCBeWHXyu3U4oT2MVJJKXkcVBgjGhnLBn2Kaau9',
  jwk: {
    kty: 'EC',
    crv: 'P-384',
    x: 'lInTxl8fjLKp_UCrxI0WDklahi-7-_6JbtiHjiRvMvhedhKVdHBfi2HCY8t_QJyc',
    y: 'y6N1IC-2mXxHreETBW7K3mBcw0qGr3CWHCs-yl09yCQRLcyfGv7XhqAngHOu51Zv',
  },
}
const RSA_VECTOR = {
  did: 'did:key:z4MXj1wBzi9jUstyPMS4jQqB6KdJaiatPkAtVtGc6bQEQEEsKTic4G7Rou3iBf9vPmT5dbkm9qsZsuVNjq8HCuW1w24nhBFGkRE4cd2Uf2tfrB3N7h4mnyPp1BF3ZttHTYv3DLUPi1zMdkULiow3M1GfXkoC6DoxDUm1jmN6GBj22SjVsr6dxezRVQc7aj9TxE7JLbMH1wh5X3kA58H3DFW8rnYMakFGbca5CB2Jf6CnGQZmL7o5uJAdTwXfy2iiiyPxXEGerMhHwhjTA1mKYobyk2CpeEcmvynADfNZ5MBvcCS7m3XkFCMNUYBS9NQ3fze6vMSUPsNa6GVYmKx2x6JrdEjCk3qRMMmyjnjCMfR4pXbRMZa3i',
  jwk: {
    kty: 'RSA',
    n: 'sbX82NTV6IylxCh7MfV4hlyvaniCajuP97GyOqSvTmoEdBOflFvZ06kR_9D6ctt45Fk6hskfnag2GG69NALVH2o4RCR6tQiLRpKcMRtDYE_thEmfBvDzm_VVkOIYfxu-Ipuo9J_S5XDNDjczx2v-3oDh5-CIHkU46hvFeCvpUS-L8TJSbgX0kjVk_m4eIb9wh63rtmD6Uz_KBtCo5mmR4TEtcLZKYdqMp3wCjN-TlgHiz_4oVXWbHUefCEe8rFnX1iQnpDHU49_SaXQoud1jCaexFn25n-Aa8f8bc5Vm-5SeRwidHa6ErvEhTvf1dz6GoNPp2iRvm-wJ1gxwWJEYPQ',
    e: 'AQAB',
  },
}
/** A P-521 did:key (multicodec 0x1202), valid but not a key type Linked Data proofs here use. */
const P521_DID =
  'did:key:z2J9gaYxrKVpdoG9A4gRnmpnRCcxU6agDtFVVBVdn1JedouoZN7SzcyREXXzWgt3gGiwpoHq7K68X4m32D8HgzG8wv3sY5j7'

const pairs = new Map<LdKeyType, { privateKey: KeyObject; publicKey: KeyObject }>()
/** One key pair per type for the file (RSA key generation is slow). */
function pairOf(keyType: LdKeyType) {
  let pair = pairs.get(keyType)
  if (!pair) {
    pair = generateLdKeyPair(keyType)
    pairs.set(keyType, pair)
  }
  return pair
}

const jwkOf = (key: KeyObject) => key.export({ format: 'jwk' })
const multibaseOf = (did: string) => did.slice('did:key:'.length)
/** A did:key made of the given multicodec prefix and key bytes. */
const didOf = (prefix: number[], raw: Uint8Array) =>
  `did:key:z${base58btcEncode(Buffer.concat([Buffer.from(prefix), Buffer.from(raw)]))}`

describe('ldp-vc did:key keys', () => {
  for (const keyType of KEY_TYPES) {
    test(`${keyType}: generate, encode, resolve round-trip`, () => {
      const { privateKey, publicKey } = pairOf(keyType)
      assert.equal(keyTypeOf(privateKey), keyType)
      assert.equal(keyTypeOf(publicKey), keyType)
      const key = ldKeyFromPublicKey(publicKey)
      assert.equal(key.keyType, keyType)
      assert.ok(key.did.startsWith(PREFIX[keyType]), key.did)
      assert.equal(key.kid, `${key.did}#${multibaseOf(key.did)}`)
      assert.deepEqual(jwkOf(key.publicKey), jwkOf(publicKey))
      assert.deepEqual(key.publicJwk, jwkOf(publicKey))
      // the private key names the same did:key
      assert.equal(ldKeyFromPublicKey(privateKey).kid, key.kid)
      for (const input of [key.did, key.kid]) {
        const resolved = resolveLdKey(input)
        assert.equal(resolved.did, key.did)
        assert.equal(resolved.kid, key.kid)
        assert.equal(resolved.keyType, keyType)
        assert.deepEqual(resolved.publicJwk, key.publicJwk)
        assert.deepEqual(jwkOf(resolved.publicKey), jwkOf(publicKey))
      }
    })
  }

  for (const keyType of ['Ed25519', 'P-256', 'secp256k1'] as const) {
    test(`${keyType}: the same did:key as shared/did-key.ts (JWT credentials name the same holder)`, () => {
      const { publicKey } = pairOf(keyType)
      const shared = didKeyFromPublicKey(publicKey)
      const key = ldKeyFromPublicKey(publicKey)
      assert.equal(key.did, shared.did)
      assert.equal(key.kid, shared.kid)
      assert.deepEqual(key.publicJwk, shared.publicJwk)
    })
  }

  test('P-384: the did:key test vector resolves to its key, and its key encodes to it', () => {
    const key = resolveLdKey(P384_VECTOR.did)
    assert.equal(key.keyType, 'P-384')
    assert.deepEqual(key.publicJwk, P384_VECTOR.jwk)
    const encoded = ldKeyFromPublicKey(createPublicKey({ key: P384_VECTOR.jwk, format: 'jwk' }))
    assert.equal(encoded.did, P384_VECTOR.did)
    // multicodec 0x1201 (varint 0x81 0x24) and a 49-byte compressed point
    const bytes = base58btcDecode(multibaseOf(P384_VECTOR.did).slice(1)) as Uint8Array
    assert.deepEqual([...bytes.subarray(0, 2)], [0x81, 0x24])
    assert.equal(bytes.length, 2 + 49)
  })

  test('RSA: the did:key test vector resolves to its key, and its key encodes to it', () => {
    const key = resolveLdKey(`${RSA_VECTOR.did}#${multibaseOf(RSA_VECTOR.did)}`)
    assert.equal(key.keyType, 'RSA')
    assert.deepEqual(key.publicJwk, RSA_VECTOR.jwk)
    const publicKey = createPublicKey({ key: RSA_VECTOR.jwk, format: 'jwk' })
    assert.equal(ldKeyFromPublicKey(publicKey).did, RSA_VECTOR.did)
    // multicodec 0x1205 (varint 0x85 0x24) then the PKCS#1 DER RSAPublicKey
    const bytes = base58btcDecode(multibaseOf(RSA_VECTOR.did).slice(1)) as Uint8Array
    assert.deepEqual([...bytes.subarray(0, 2)], [0x85, 0x24])
    assert.deepEqual(Buffer.from(bytes.subarray(2)), publicKey.export({ format: 'der', type: 'pkcs1' }))
  })

  test('RSA 4096 keys round-trip too (did:key allows 2048 and 4096)', () => {
    // a fixed key: generating a 4096-bit one takes seconds
    const n =
      'vO53KEMj2aLnjtqjEfOs5QE-DT15DbVGatBlNUxRCx39EjWMi7n4r5UshystUJpeOxyOhlTzteFdQBnHpPfBf3whMyUMarQW' +
      'cE5UtvkAlJHatvLx0cdpvFUakXW0HO1rq1E-5CYHfrG0gLhvDPX9aq4ecZX4vpHndSfVwxC-67m3eCJblxZ6bxV59cLccwpI' +
      'IPe0jtYx9VfzpVtoFSrppE50wrE1LhCP1vAUdqwk1vq8Lfp9VybRu3KzsWKLSiElRMLsx5m2Q3GhTa0og_a2hzj0ZfHap11c' +
      'W6tyQ_y-3YeJp6Je_zKng5QPkmGQuyKkgRNwR_WASjPtIMUK30KsnIyMghdbMGtzbpE0-ZL95T77K143xkTmbXYmDGbgNMd8' +
      'cwyUVCLZOQUO833XOwMtydKDiTZ_MEF8UTT15vg0SFAQYCvKl4zYwlIElVCXgj0IQ8xxE_ZY5Nc2EGaQ5q5YvOHQPWqHNd6u' +
      'X93jTrMM0zm3DCFwg-SWF_I4Ns7KRy1JQpvMU2wdsSzHqa0h3jK8krqaqPldbDSab7piMwUNvN07YtOWI6nNSMxxQTggfmsc' +
      'EbC4gvGlWMCt3LqybZ9u-kf-e4oejsKI-zpvAnuN_teJoppgG7iYNzR349ZClEkkqfd_bpYD_9s9-6YOjgftkoSR3_7_BptD' +
      'IN6RyJEG9zU'
    const publicKey = createPublicKey({ key: { kty: 'RSA', n, e: 'AQAB' }, format: 'jwk' })
    const key = ldKeyFromPublicKey(publicKey)
    assert.ok(key.did.length < 800, `${key.did.length} characters`)
    assert.equal(resolveLdKey(key.kid).did, key.did)
    assert.equal(resolveLdKey(key.kid).publicJwk.n, n)
  })

  describe('malformed input is refused with a message naming the problem', () => {
    const { publicKey: p384 } = pairOf('P-384')
    const p384Did = ldKeyFromPublicKey(p384).did
    const p384Bytes = base58btcDecode(multibaseOf(p384Did).slice(1)) as Uint8Array
    const rsaBytes = base58btcDecode(multibaseOf(RSA_VECTOR.did).slice(1)) as Uint8Array
    const cases: [string, unknown, RegExp][] = [
      ['a DID of another method', 'did:web:issuer.example', /is not a did:key/],
      ['not a string', 42, /number is not a did:key/],
      ['an empty string', '', /is not a did:key/],
      ['a multibase other than base58btc', 'did:key:f0123abcd', /must start with z/],
      ['a character outside base58btc', 'did:key:z6Mk0OIl', /outside the base58btc alphabet/],
      ['P-521 (multicodec 0x1202)', P521_DID, /unsupported multicodec 0x1202/],
      [
        'X25519 (multicodec 0xec)',
        didOf([0xec, 0x01], new Uint8Array(32).fill(9)),
        /unsupported multicodec 0xec/,
      ],
      ['a truncated P-384 point', didOf([0x81, 0x24], p384Bytes.subarray(2, 40)), /49-byte compressed point/],
      [
        'a P-384 point off the curve',
        didOf([0x81, 0x24], Buffer.concat([Buffer.of(0x02), Buffer.alloc(48, 0xff)])),
        /not a point on the curve/,
      ],
      [
        'an RSA key that is not DER',
        didOf([0x85, 0x24], Buffer.from('not der')),
        /not a PKCS#1 DER RSAPublicKey/,
      ],
      [
        'an RSA key with trailing bytes',
        didOf([0x85, 0x24], Buffer.concat([rsaBytes.subarray(2), Buffer.of(0)])),
        /PKCS#1|canonical/,
      ],
      [
        'an RSA key of 1024 bits',
        didOf(
          [0x85, 0x24],
          generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({
            format: 'der',
            type: 'pkcs1',
          }),
        ),
        /1024 bits/,
      ],
      [
        'a key id whose fragment is another key',
        `${p384Did}#keys-1`,
        /fragment "#keys-1" is not the did:key's own key/,
      ],
      [
        'a key id naming another did:key',
        `${p384Did}#${multibaseOf(RSA_VECTOR.did)}`,
        /is not the did:key's own key/,
      ],
      ['a did:key longer than any key type needs', `did:key:z${'1'.repeat(5000)}`, /too long/],
      ['a key id longer than any key type needs', `${p384Did}#${'z'.repeat(5000)}`, /too long/],
    ]
    for (const [name, input, message] of cases) {
      test(name, () => {
        assert.throws(() => resolveLdKey(input as string), message)
      })
    }

    test('an unbounded input is refused quickly (no quadratic base58 decoding)', () => {
      const started = performance.now()
      assert.throws(() => resolveLdKey(`did:key:z${'2'.repeat(1_000_000)}`), /too long/)
      assert.ok(performance.now() - started < 50)
    })

    test('keyTypeOf and ldKeyFromPublicKey refuse other keys', () => {
      assert.throws(() => keyTypeOf(generateKeyPairSync('x25519').publicKey), /unsupported key type x25519/)
      assert.throws(
        () => keyTypeOf(generateKeyPairSync('ec', { namedCurve: 'secp521r1' }).publicKey),
        /unsupported key type ec \(curve secp521r1\)/,
      )
      assert.throws(
        () => ldKeyFromPublicKey(generateKeyPairSync('ed448').publicKey),
        /unsupported key type ed448/,
      )
      assert.throws(
        () => ldKeyFromPublicKey(generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey),
        /1024 bits/,
      )
    })
  })
})
