import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import {
  documentLoader,
  envelopeJwtCredential,
  presentationTemplate,
  signerFromPrivateKey,
  signPresentation,
  unwrapEnvelopedCredential,
  verifyPresentation,
} from '../../src/shared/data-integrity.ts'
import {
  algForKey,
  base58btcDecode,
  base58btcEncode,
  DidKeyError,
  didKeyFromPublicKey,
  didOf,
  generateKeyPair,
  JWS_ALGS,
  type JwsAlg,
  resolveDidKey,
} from '../../src/shared/did-key.ts'
import { decodeJws, JwsError, signJws, verifyJws } from '../../src/shared/jws.ts'

const ED25519_VECTOR = {
  did: 'did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp',
  jwk: { kty: 'OKP', crv: 'Ed25519', x: 'O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik' },
}
const P256_VECTOR = {
  did: 'did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169',
  jwk: {
    kty: 'EC',
    crv: 'P-256',
    x: 'fyNYMN0976ci7xqiSdag3buk-ZCwgXU4kz9XNkBlNUI',
    y: 'hW2ojTNfH7Jbi8--CJUo3OCbH3y5n91g-IMA9MLMbTU',
  },
}
const SECP256K1_VECTOR = {
  did: 'did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme',
  jwk: {
    kty: 'EC',
    crv: 'secp256k1',
    x: 'h0wVx_2iDlOcblulc8E5iEw1EYh5n1RYtLQfeSTyNc0',
    y: 'O2EATIGbu6DezKFptj5scAIRntgfecanVNXxat1rnwE',
  },
}
const PREFIX: Record<JwsAlg, string> = { EdDSA: 'did:key:z6Mk', ES256: 'did:key:zDn', ES256K: 'did:key:zQ3s' }

function didKeyError(message: string | RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof DidKeyError, `expected DidKeyError, got ${String(err)}`)
    if (typeof message === 'string') assert.equal(err.message, message)
    else assert.match(err.message, message)
    return true
  }
}

function jwsError(reason: JwsError['reason']) {
  return (err: unknown) => {
    assert.ok(err instanceof JwsError, `expected JwsError, got ${String(err)}`)
    assert.equal(err.reason, reason, err.message)
    return true
  }
}

describe('did:key', () => {
  for (const vector of [ED25519_VECTOR, P256_VECTOR, SECP256K1_VECTOR]) {
    it(`decodes and re-encodes the ${vector.jwk.crv} test vector`, () => {
      const key = resolveDidKey(vector.did)
      assert.equal(key.did, vector.did)
      assert.equal(key.kid, `${vector.did}#${vector.did.slice('did:key:'.length)}`)
      assert.deepEqual(key.publicJwk, vector.jwk)
      assert.deepEqual(key.publicKey.export({ format: 'jwk' }), vector.jwk)
      assert.equal(didKeyFromPublicKey(key.publicKey).did, vector.did)
      assert.equal(resolveDidKey(key.kid).did, vector.did)
    })
  }

  it('maps test vectors to their algorithms', () => {
    assert.equal(resolveDidKey(ED25519_VECTOR.did).alg, 'EdDSA')
    assert.equal(resolveDidKey(P256_VECTOR.did).alg, 'ES256')
    assert.equal(resolveDidKey(SECP256K1_VECTOR.did).alg, 'ES256K')
  })

  for (const alg of JWS_ALGS) {
    it(`round-trips a generated ${alg} key`, () => {
      const { privateKey, publicKey } = generateKeyPair(alg)
      assert.equal(algForKey(privateKey), alg)
      assert.equal(algForKey(publicKey), alg)
      const encoded = didKeyFromPublicKey(publicKey)
      assert.ok(encoded.did.startsWith(PREFIX[alg]), encoded.did)
      assert.equal(encoded.alg, alg)
      assert.equal(didOf(encoded.kid), encoded.did)
      const fromPrivate = didKeyFromPublicKey(privateKey)
      assert.equal(fromPrivate.did, encoded.did)
      assert.equal(fromPrivate.publicKey.type, 'public')
      const resolved = resolveDidKey(encoded.kid)
      assert.equal(resolved.did, encoded.did)
      assert.ok(resolved.publicKey.equals(publicKey))
    })
  }

  it('caches resolutions', () => {
    const { publicKey } = generateKeyPair('ES256')
    const { did, kid } = didKeyFromPublicKey(publicKey)
    assert.equal(resolveDidKey(did), resolveDidKey(kid))
    assert.ok(Object.isFrozen(resolveDidKey(did).publicJwk))
  })

  it('rejects what is not a did:key', () => {
    assert.throws(() => resolveDidKey('did:web:example.com'), didKeyError('not a did:key'))
    assert.throws(() => resolveDidKey(''), didKeyError('not a did:key'))
    assert.throws(() => resolveDidKey('did:key:'), didKeyError(/not base58btc multibase/))
    assert.throws(() => resolveDidKey('did:key:u6MkiTBz1'), didKeyError(/not base58btc multibase/))
    assert.throws(() => resolveDidKey('did:key:z6Mk0OIl'), didKeyError(/outside the base58btc alphabet/))
    assert.throws(() => resolveDidKey(`did:key:z${'1'.repeat(200)}`), didKeyError('did:key too long'))
  })

  it('rejects a kid whose fragment is not the multibase value', () => {
    assert.throws(
      () => resolveDidKey(`${ED25519_VECTOR.did}#key-1`),
      didKeyError('kid fragment does not match the did'),
    )
    assert.throws(
      () => resolveDidKey(`${ED25519_VECTOR.did}#${P256_VECTOR.did.slice(8)}`),
      didKeyError('kid fragment does not match the did'),
    )
  })

  it('rejects unsupported multicodecs and bad key bytes', () => {
    // X25519 (0xec) from the did:key spec
    assert.throws(
      () => resolveDidKey('did:key:z6LSbysY2xFMRpGMhb7tFTLMpeuPRaqaWM1yECx2AtzE3KCc'),
      didKeyError(/^unsupported multicodec 0xec/),
    )
    const encode = (bytes: number[]) => `did:key:z${base58btcEncode(Uint8Array.from(bytes))}`
    assert.throws(
      () => resolveDidKey(encode([0xed, 0x01, ...new Array(31).fill(1)])),
      didKeyError('Ed25519 public key must be 32 bytes, got 31'),
    )
    // x = 2^256 - 1 is not a field element of P-256
    assert.throws(
      () => resolveDidKey(encode([0x80, 0x24, 0x02, ...new Array(32).fill(0xff)])),
      didKeyError('P-256 public key is not a point on the curve'),
    )
    assert.throws(
      () => resolveDidKey(encode([0xe7, 0x01, 0x04, ...new Array(32).fill(1)])),
      didKeyError('secp256k1 public key is not a compressed point'),
    )
  })

  it('rejects unsupported key types', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
    assert.throws(() => algForKey(rsa.publicKey), didKeyError(/unsupported key type rsa/))
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
    assert.throws(() => didKeyFromPublicKey(p384.publicKey), didKeyError(/unsupported EC curve secp384r1/))
    assert.throws(() => generateKeyPair('RS256' as JwsAlg), didKeyError('unsupported algorithm RS256'))
  })

  it('base58btc round-trips, keeping leading zeros', () => {
    for (const bytes of [[], [0], [0, 0, 1], [255, 254, 0, 3], Array.from({ length: 34 }, (_, i) => i * 7)]) {
      const input = Uint8Array.from(bytes)
      assert.deepEqual(base58btcDecode(base58btcEncode(input)), input)
    }
    assert.equal(base58btcEncode(Buffer.from('hello world')), 'StV1DL6CwTryKyV')
    assert.equal(base58btcDecode('0'), undefined)
  })

  it('didOf strips the fragment', () => {
    assert.equal(didOf('did:key:zabc#zabc'), 'did:key:zabc')
    assert.equal(didOf('did:key:zabc'), 'did:key:zabc')
  })
})

describe('compact JWS', () => {
  const keys = Object.fromEntries(JWS_ALGS.map((alg) => [alg, generateKeyPair(alg)])) as Record<
    JwsAlg,
    ReturnType<typeof generateKeyPair>
  >

  for (const alg of JWS_ALGS) {
    it(`signs and verifies ${alg}`, () => {
      const { privateKey, publicKey } = keys[alg]
      const { kid } = didKeyFromPublicKey(publicKey)
      const payload = { iss: 'did:key:zissuer', nested: { a: [1, 2] }, text: 'äöü' }
      const jws = signJws({ alg, typ: 'JWT', kid }, payload, privateKey)
      const decoded = decodeJws(jws)
      assert.deepEqual(decoded.header, { alg, typ: 'JWT', kid })
      assert.equal(decoded.signature.length, 64)
      const verified = verifyJws(jws, resolveDidKey(kid).publicKey, { algorithms: JWS_ALGS })
      assert.deepEqual(verified.payload, payload)
      assert.equal(verified.header.kid, kid)
    })

    it(`rejects a tampered ${alg} JWS`, () => {
      const { privateKey, publicKey } = keys[alg]
      const jws = signJws({ alg }, { sub: 'alice' }, privateKey)
      const [h, , s] = jws.split('.') as [string, string, string]
      const forgedPayload = Buffer.from(JSON.stringify({ sub: 'mallory' })).toString('base64url')
      assert.throws(
        () => verifyJws(`${h}.${forgedPayload}.${s}`, publicKey, { algorithms: JWS_ALGS }),
        jwsError('bad_signature'),
      )
      const sig = Buffer.from(s, 'base64url')
      sig[10] = (sig[10] as number) ^ 1
      const flipped = `${h}.${jws.split('.')[1]}.${sig.toString('base64url')}`
      assert.throws(() => verifyJws(flipped, publicKey, { algorithms: JWS_ALGS }), jwsError('bad_signature'))
      const truncated = `${h}.${jws.split('.')[1]}.${sig.subarray(0, 63).toString('base64url')}`
      assert.throws(
        () => verifyJws(truncated, publicKey, { algorithms: JWS_ALGS }),
        jwsError('bad_signature'),
      )
    })
  }

  it('rejects algorithms that are not allowed', () => {
    const { privateKey, publicKey } = keys.ES256
    const jws = signJws({ alg: 'ES256' }, { a: 1 }, privateKey)
    assert.throws(() => verifyJws(jws, publicKey, { algorithms: ['EdDSA'] }), jwsError('alg_not_allowed'))
    assert.throws(() => verifyJws(jws, publicKey, { algorithms: [] }), jwsError('alg_not_allowed'))
  })

  it('rejects alg none', () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
    const unsigned = `${b64({ alg: 'none' })}.${b64({ a: 1 })}.`
    for (const alg of JWS_ALGS) {
      assert.throws(
        () => verifyJws(unsigned, keys[alg].publicKey, { algorithms: JWS_ALGS }),
        jwsError('alg_not_allowed'),
      )
    }
    const hs256 = `${b64({ alg: 'HS256' })}.${b64({ a: 1 })}.${Buffer.alloc(32).toString('base64url')}`
    assert.throws(
      () => verifyJws(hs256, keys.EdDSA.publicKey, { algorithms: JWS_ALGS }),
      jwsError('alg_not_allowed'),
    )
  })

  it('rejects an alg that does not match the key', () => {
    const jws = signJws({ alg: 'EdDSA' }, { a: 1 }, keys.EdDSA.privateKey)
    assert.throws(
      () => verifyJws(jws, keys.ES256.publicKey, { algorithms: JWS_ALGS }),
      jwsError('alg_key_mismatch'),
    )
    // ES256 header over a secp256k1 key (same signature shape, other curve)
    const k1 = signJws({ alg: 'ES256K' }, { a: 1 }, keys.ES256K.privateKey)
    const [, p, s] = k1.split('.') as [string, string, string]
    const relabelled = `${Buffer.from(JSON.stringify({ alg: 'ES256' })).toString('base64url')}.${p}.${s}`
    assert.throws(
      () => verifyJws(relabelled, keys.ES256K.publicKey, { algorithms: JWS_ALGS }),
      jwsError('alg_key_mismatch'),
    )
    assert.throws(
      () => signJws({ alg: 'ES256' }, { a: 1 }, keys.ES256K.privateKey),
      jwsError('alg_key_mismatch'),
    )
    assert.throws(
      () => signJws({ alg: 'EdDSA' }, { a: 1 }, keys.EdDSA.publicKey),
      jwsError('alg_key_mismatch'),
    )
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
    assert.throws(() => verifyJws(jws, rsa.publicKey, { algorithms: JWS_ALGS }), jwsError('alg_key_mismatch'))
  })

  it('rejects malformed input', () => {
    const b64 = (v: string) => Buffer.from(v).toString('base64url')
    const valid = signJws({ alg: 'EdDSA' }, { a: 1 }, keys.EdDSA.privateKey)
    const [h, p, s] = valid.split('.') as [string, string, string]
    for (const bad of [
      '',
      'abc',
      'a.b',
      `${valid}.x`,
      `${h}.${p}.${s}=`,
      `${h}.${p}.${s}+`,
      `.${p}.${s}`,
      `${b64('not json')}.${p}.${s}`,
      `${b64('[1]')}.${p}.${s}`,
      `${h}.${b64('null')}.${s}`,
      `${b64('{"typ":"JWT"}')}.${p}.${s}`,
      'x'.repeat(300_000),
    ]) {
      assert.throws(() => decodeJws(bad), jwsError('malformed'), bad.slice(0, 40))
      assert.throws(
        () => verifyJws(bad, keys.EdDSA.publicKey, { algorithms: JWS_ALGS }),
        jwsError('malformed'),
      )
    }
    // a non-canonical encoding of the same signature bytes (last char's unused bits set)
    const last = s.at(-1) as string
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const sibling = alphabet[alphabet.indexOf(last) + 1] as string
    assert.throws(() => decodeJws(`${h}.${p}.${s.slice(0, -1)}${sibling}`), jwsError('malformed'))
    const crit = signJws({ alg: 'EdDSA', crit: ['exp'] }, { a: 1 }, keys.EdDSA.privateKey)
    assert.throws(
      () => verifyJws(crit, keys.EdDSA.publicKey, { algorithms: JWS_ALGS }),
      jwsError('malformed'),
    )
  })
})

describe('Data Integrity presentations (eddsa-rdfc-2022)', () => {
  const CHALLENGE = 'c-nonce-123'
  const DOMAIN = 'https://issuer.example/oid4vci/demo'
  const holderKeys = generateKeyPair('EdDSA')
  const holder = didKeyFromPublicKey(holderKeys.publicKey)
  const signer = signerFromPrivateKey(holder.kid, holderKeys.privateKey)
  const tenantKeys = generateKeyPair('ES256')
  const issuer = didKeyFromPublicKey(tenantKeys.publicKey)
  const credentialJwt = signJws(
    { alg: 'ES256', typ: 'JWT', kid: issuer.kid },
    { iss: issuer.did, sub: holder.did, vc: { type: ['VerifiableCredential', 'VerifiableId'] } },
    tenantKeys.privateKey,
  )
  const options = { challenge: CHALLENGE, domain: DOMAIN }
  let signed: Record<string, unknown>
  const realFetch = globalThis.fetch
  const fetched: string[] = []

  before(async () => {
    // nothing here may reach the network
    globalThis.fetch = (async (input: unknown) => {
      fetched.push(String(input))
      throw new Error('network access in an offline test')
    }) as typeof fetch
    signed = await signPresentation(presentationTemplate(holder.did, [credentialJwt]), signer, options)
  })
  after(() => {
    globalThis.fetch = realFetch
    assert.deepEqual(fetched, [])
  })

  function failures(result: Awaited<ReturnType<typeof verifyPresentation>>): string[] {
    assert.equal(result.verified, false)
    return result.verified ? [] : result.errors
  }

  it('signs and verifies a presentation', async () => {
    const proof = signed.proof as Record<string, unknown>
    assert.equal(proof.type, 'DataIntegrityProof')
    assert.equal(proof.cryptosuite, 'eddsa-rdfc-2022')
    assert.equal(proof.proofPurpose, 'authentication')
    assert.equal(proof.verificationMethod, holder.kid)
    assert.equal(proof.challenge, CHALLENGE)
    assert.equal(proof.domain, DOMAIN)
    const result = await verifyPresentation(signed, options)
    assert.deepEqual(result, { verified: true, holderKid: holder.kid, proof })
  })

  it('does not modify its input and honours `created`', async () => {
    const template = presentationTemplate(holder.did, [credentialJwt])
    const copy = structuredClone(template)
    const created = new Date('2026-01-02T03:04:05Z')
    const out = await signPresentation(template, signer, { ...options, created })
    assert.deepEqual(template, copy)
    assert.equal((out.proof as Record<string, unknown>).created, '2026-01-02T03:04:05Z')
    assert.equal((await verifyPresentation(out, options)).verified, true)
    await assert.rejects(signPresentation(out, signer, options), /already has a proof/)
  })

  it('verifies a presentation without holder and without credentials', async () => {
    const vp = presentationTemplate(holder.did, [])
    delete vp.holder
    const out = await signPresentation(vp, signer, options)
    assert.equal((await verifyPresentation(out, options)).verified, true)
  })

  it('rejects a wrong challenge or domain', async () => {
    assert.deepEqual(failures(await verifyPresentation(signed, { ...options, challenge: 'other' })), [
      'challenge does not match',
    ])
    assert.deepEqual(
      failures(await verifyPresentation(signed, { ...options, domain: 'https://evil.example' })),
      ['domain does not match'],
    )
    const proof = { ...(signed.proof as Record<string, unknown>), challenge: 'other' }
    assert.deepEqual(
      failures(await verifyPresentation({ ...signed, proof }, { ...options, challenge: 'other' })),
      ['signature invalid'],
    )
  })

  it('rejects a tampered holder or credential', async () => {
    const other = didKeyFromPublicKey(generateKeyPair('EdDSA').publicKey)
    assert.deepEqual(failures(await verifyPresentation({ ...signed, holder: other.did }, options)), [
      'holder does not match the verification method',
    ])
    const { holder: _removed, ...withoutHolder } = signed
    assert.deepEqual(failures(await verifyPresentation(withoutHolder, options)), ['signature invalid'])
    const swapped = { ...signed, verifiableCredential: [envelopeJwtCredential(`${credentialJwt}x`)] }
    assert.deepEqual(failures(await verifyPresentation(swapped, options)), ['signature invalid'])
    const dropped = { ...signed, verifiableCredential: [] }
    assert.deepEqual(failures(await verifyPresentation(dropped, options)), ['signature invalid'])
    const retyped = { ...signed, type: ['VerifiablePresentation', 'OtherPresentation'] }
    assert.deepEqual(failures(await verifyPresentation(retyped, options)), ['signature invalid'])
  })

  it('rejects a presentation whose holder is not the signer', async () => {
    const other = didKeyFromPublicKey(generateKeyPair('EdDSA').publicKey)
    const vp = await signPresentation(presentationTemplate(other.did, [credentialJwt]), signer, options)
    assert.deepEqual(failures(await verifyPresentation(vp, options)), [
      'holder does not match the verification method',
    ])
  })

  it('rejects verification methods that are not Ed25519 did:key key ids', async () => {
    const proof = signed.proof as Record<string, unknown>
    const withVm = (verificationMethod: unknown) => ({ ...signed, proof: { ...proof, verificationMethod } })
    for (const vm of ['did:web:example.com#key-1', holder.did, 'https://example.com/key', undefined]) {
      assert.deepEqual(failures(await verifyPresentation(withVm(vm), options)), [
        'verificationMethod is not a did:key key id',
      ])
    }
    assert.deepEqual(failures(await verifyPresentation(withVm(issuer.kid), options)), [
      'verificationMethod is not an Ed25519 did:key',
      'holder does not match the verification method',
    ])
    assert.match(
      failures(await verifyPresentation(withVm(`${holder.did}#key-1`), options))[0] as string,
      /kid fragment does not match the did/,
    )
  })

  it('rejects missing or foreign proofs', async () => {
    const proof = signed.proof as Record<string, unknown>
    const { proof: _p, ...unsigned } = signed
    assert.deepEqual(failures(await verifyPresentation(unsigned, options)), ['proof missing'])
    assert.deepEqual(failures(await verifyPresentation({ ...signed, proof: [proof, proof] }, options)), [
      'expected exactly one proof',
    ])
    assert.deepEqual(failures(await verifyPresentation({ ...signed, proof: 'x' }, options)), [
      'proof is not a JSON object',
    ])
    assert.deepEqual(
      failures(
        await verifyPresentation({ ...signed, proof: { ...proof, cryptosuite: 'ecdsa-rdfc-2019' } }, options),
      ),
      ['cryptosuite is not eddsa-rdfc-2022'],
    )
    assert.deepEqual(
      failures(
        await verifyPresentation(
          { ...signed, proof: { ...proof, proofPurpose: 'assertionMethod' } },
          options,
        ),
      ),
      ['proofPurpose is not authentication'],
    )
    assert.deepEqual(
      failures(
        await verifyPresentation({ ...signed, proof: { ...proof, type: 'Ed25519Signature2020' } }, options),
      ),
      ['proof type is not DataIntegrityProof'],
    )
    assert.deepEqual(failures(await verifyPresentation(null, options)), ['presentation is not a JSON object'])
    assert.deepEqual(failures(await verifyPresentation([signed], options)), [
      'presentation is not a JSON object',
    ])
  })

  it('accepts an array of one proof', async () => {
    const result = await verifyPresentation({ ...signed, proof: [signed.proof] }, options)
    assert.equal(result.verified, true)
  })

  it('stays offline and in JSON-LD safe mode', async () => {
    const foreignContext = {
      ...signed,
      '@context': [...(signed['@context'] as string[]), 'https://example.com/ctx'],
    }
    assert.match(
      failures(await verifyPresentation(foreignContext, options))[0] as string,
      /document not allowed offline: https:\/\/example.com\/ctx/,
    )
    // VC 2.0 context alone defines no @vocab: an undefined type cannot be signed, an added term cannot verify
    const strict = { '@context': ['https://www.w3.org/ns/credentials/v2'], type: ['VerifiablePresentation'] }
    await assert.rejects(
      signPresentation({ ...strict, type: ['VerifiablePresentation', 'Custom'] }, signer, options),
      /Safe mode validation error/,
    )
    const strictSigned = await signPresentation({ ...strict, holder: holder.did }, signer, options)
    assert.equal((await verifyPresentation(strictSigned, options)).verified, true)
    assert.match(
      failures(await verifyPresentation({ ...strictSigned, extra: 'x' }, options))[0] as string,
      /safe mode/,
    )
    const v1 = { ...signed, '@context': ['https://www.w3.org/2018/credentials/v1'] }
    assert.deepEqual(failures(await verifyPresentation(v1, options)), [
      'presentation @context must start with https://www.w3.org/ns/credentials/v2',
    ])
  })

  it('resolves only bundled contexts and Ed25519 did:keys', async () => {
    for (const url of [
      'https://www.w3.org/ns/credentials/v2',
      'https://www.w3.org/2018/credentials/v1',
      'https://www.w3.org/ns/credentials/undefined-terms/v2',
      'https://w3id.org/security/data-integrity/v2',
      'https://w3id.org/security/multikey/v1',
    ]) {
      const loaded = await documentLoader(url)
      assert.equal(loaded.documentUrl, url)
      assert.ok(
        typeof loaded.document === 'object' && loaded.document !== null && '@context' in loaded.document,
      )
    }
    const didDoc = (await documentLoader(holder.did)).document as Record<string, unknown>
    assert.equal(didDoc.id, holder.did)
    assert.deepEqual(didDoc.authentication, [holder.kid])
    const vm = (await documentLoader(holder.kid)).document as Record<string, unknown>
    assert.equal(vm.type, 'Multikey')
    assert.equal(vm.controller, holder.did)
    assert.equal(vm.publicKeyMultibase, holder.kid.split('#')[1])
    await assert.rejects(
      documentLoader('https://example.com/'),
      /^Error: document not allowed offline: https:\/\/example.com\/$/,
    )
    await assert.rejects(documentLoader('https://www.w3.org/ns/did/v1'), /document not allowed offline/)
    await assert.rejects(documentLoader(issuer.did), /Ed25519/)
  })

  it('envelopes JWT credentials', () => {
    const entry = envelopeJwtCredential(credentialJwt)
    assert.deepEqual(entry, {
      '@context': 'https://www.w3.org/ns/credentials/v2',
      id: `data:application/vc+jwt,${credentialJwt}`,
      type: 'EnvelopedVerifiableCredential',
    })
    assert.equal(unwrapEnvelopedCredential(entry), credentialJwt)
    assert.equal(
      unwrapEnvelopedCredential({ ...entry, type: ['EnvelopedVerifiableCredential'] }),
      credentialJwt,
    )
    assert.equal(unwrapEnvelopedCredential({ ...entry, type: 'VerifiableCredential' }), undefined)
    assert.equal(
      unwrapEnvelopedCredential({ ...entry, id: `data:application/vc+sd-jwt,${credentialJwt}` }),
      undefined,
    )
    assert.equal(unwrapEnvelopedCredential({ ...entry, id: 'data:application/vc+jwt,not a jwt' }), undefined)
    assert.equal(unwrapEnvelopedCredential(credentialJwt), undefined)
    assert.equal(unwrapEnvelopedCredential(null), undefined)
    const vp = presentationTemplate(holder.did, [credentialJwt, credentialJwt])
    assert.deepEqual(vp.type, ['VerifiablePresentation', 'ServiceCredentialPresentation'])
    assert.equal(vp.holder, holder.did)
    assert.deepEqual((vp.verifiableCredential as unknown[]).map(unwrapEnvelopedCredential), [
      credentialJwt,
      credentialJwt,
    ])
  })

  it('builds signers only for matching Ed25519 keys', async () => {
    const other = didKeyFromPublicKey(generateKeyPair('EdDSA').publicKey)
    assert.throws(() => signerFromPrivateKey(other.kid, holderKeys.privateKey), /is not the did:key key id/)
    assert.throws(() => signerFromPrivateKey(issuer.kid, tenantKeys.privateKey), /needs an Ed25519 key/)
    assert.throws(() => signerFromPrivateKey(holder.kid, holderKeys.publicKey), /needs a private key/)
    const sig = await signer.sign({ data: new Uint8Array([1, 2, 3]) })
    assert.equal(sig.length, 64)
  })
})
