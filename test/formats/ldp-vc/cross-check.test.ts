import assert from 'node:assert/strict'
import { createHash, createPublicKey, type KeyObject, sign, verify } from 'node:crypto'
import { createRequire } from 'node:module'
import { after, before, describe, mock, test } from 'node:test'
import jsigs from 'jsonld-signatures'
import {
  DID_V1_CONTEXT,
  ED25519_2018_CONTEXT,
  JWS_2020_CONTEXT,
  ldDocumentLoader,
  SECP256K1_2019_CONTEXT,
  SECURITY_V2_CONTEXT,
  UNDEFINED_TERMS_CONTEXT,
  VC_V1_CONTEXT,
} from '../../../src/formats/ldp-vc/contexts.ts'
import {
  generateLdKeyPair,
  type LdKey,
  type LdKeyType,
  ldKeyFromPublicKey,
} from '../../../src/formats/ldp-vc/keys.ts'
import { type LdProofType, type LdPurpose, signLd, verifyLd } from '../../../src/formats/ldp-vc/suites.ts'
import { base58btcDecode, base58btcEncode } from '../../../src/shared/did-key.ts'

// Interoperability of the Linked Data proofs (issue 33, "verifies with an implementation other than the one
// that signed it"): every proof type suites.ts signs is checked by a second implementation, and proofs made
// by that implementation are checked by verifyLd.
//
//   JsonWebSignature2020 (Ed25519, P-256, secp256k1)  @transmute/json-web-signature + @transmute/vc.js
//   Ed25519Signature2018                               @transmute/ed25519-signature-2018 (suites.ts signs with
//                                                     Digital Bazaar's suite); legacy `creator` proofs by
//                                                     jsonld-signatures 5
//   EcdsaSecp256k1Signature2019                        @blockcerts/ecdsa-secp256k1-signature-2019
//   RsaSignature2018                                   jsonld-signatures 5 (`jsonld-signatures-v5`), which
//                                                     canonicalizes the proof options under security/v2
//   eddsa-rdfc-2022, ecdsa-rdfc-2019 (P-256, P-384)   the VC Data Integrity EdDSA / ECDSA algorithms written
//                                                     out below (RDFC-1.0 by rdf-canonize, hashes and
//                                                     signatures by node:crypto), first checked against the
//                                                     specifications' own test vectors
//
// The other implementations get a document loader made here: the bundled contexts and in-memory DID
// documents of the suite's key type; anything else throws, and fetch is never called.

const require = createRequire(import.meta.url)

// @transmute/jsonld loads jsonld 5 whose HTTP client requires `ky-universal`, and that resolves the
// top-level `ky` (1.x, ESM only, no `ky/umd`) of this install. The loader below is the only one the library
// uses, so give ky-universal the ky 0.25 its own tree ships; nothing is fetched either way.
{
  const kyUniversal = require.resolve('ky-universal', {
    paths: [require.resolve('@transmute/jsonld/node_modules/@digitalbazaar/http-client/main.js')],
  })
  const kyUmd = require.resolve('@transmute/jsonld/node_modules/ky/umd.js')
  require.cache[kyUniversal] ??= {
    id: kyUniversal,
    filename: kyUniversal,
    loaded: true,
    exports: require(kyUmd),
  } as unknown as NodeJS.Module
}
const transmuteJws =
  require('@transmute/json-web-signature') as typeof import('@transmute/json-web-signature')
const transmuteVc = require('@transmute/vc.js') as typeof import('@transmute/vc.js')
const transmuteEd =
  require('@transmute/ed25519-signature-2018') as typeof import('@transmute/ed25519-signature-2018')

interface Jsigs5 {
  sign(document: unknown, options: Record<string, unknown>): Promise<Record<string, unknown>>
  verify(document: unknown, options: Record<string, unknown>): Promise<{ verified: boolean; error?: unknown }>
  suites: Record<'RsaSignature2018' | 'Ed25519Signature2018', new (options?: object) => unknown>
  purposes: {
    AssertionProofPurpose: new () => unknown
    AuthenticationProofPurpose: new (options: { challenge: string; domain: string }) => unknown
  }
  RSAKeyPair: new (options: object) => unknown
  Ed25519KeyPair: new (options: object) => unknown
}
const jsigs5 = require('jsonld-signatures-v5') as Jsigs5
// Blockcerts ships declarations its package exports do not point to: the two classes, as used here.
const { EcdsaSecp256k1Signature2019 } = require('@blockcerts/ecdsa-secp256k1-signature-2019') as {
  EcdsaSecp256k1Signature2019: (new (options?: { key?: unknown }) => object) & { CONTEXT: unknown }
}
const { EcdsaSecp256k1VerificationKey2019 } =
  require('@blockcerts/ecdsa-secp256k1-verification-key-2019') as {
    EcdsaSecp256k1VerificationKey2019: { from(options: Record<string, string>): unknown }
  }
const jsonld = require('jsonld') as { toRDF(input: unknown, options: object): Promise<unknown> }
const rdfCanonize = require('rdf-canonize') as {
  canonize(dataset: unknown, options: object): Promise<string>
}

type Doc = Record<string, unknown>
type LoadedDocument = { document: unknown; documentUrl: string; contextUrl: null }

const CHALLENGE = 'n-0S6_WzA2Mj'
const DOMAIN = 'https://verifier.example'
const AUTH: LdPurpose = { purpose: 'authentication', challenge: CHALLENGE, domain: DOMAIN }
const ASSERT: LdPurpose = { purpose: 'assertionMethod' }
const BLOCKCERTS_CONTEXT = 'https://ns.did.ai/suites/secp256k1-2019/v1'

interface Pair {
  key: LdKey
  privateKey: KeyObject
}
const pairs = new Map<LdKeyType, Pair>()
/** One key per type for the whole file (RSA key generation is slow). */
function pair(keyType: LdKeyType): Pair {
  let p = pairs.get(keyType)
  if (!p) {
    const { privateKey, publicKey } = generateLdKeyPair(keyType)
    p = { key: ldKeyFromPublicKey(publicKey), privateKey }
    pairs.set(keyType, p)
  }
  return p
}

const credential = (issuer: string, extraContexts: string[] = []): Doc => ({
  '@context': [VC_V1_CONTEXT, ...extraContexts, UNDEFINED_TERMS_CONTEXT],
  type: ['VerifiableCredential', 'ServiceCredential'],
  issuer,
  issuanceDate: '2026-01-01T00:00:00Z',
  credentialSubject: { id: 'did:example:holder', name: 'Alice', degree: 'BSc' },
})

/** As @digitalbazaar/vc createPresentation({version: 1.0}) builds it. */
const presentation = (holder: string, vc: Doc, extraContexts: string[] = []): Doc => ({
  '@context': [VC_V1_CONTEXT, ...extraContexts],
  type: ['VerifiablePresentation'],
  verifiableCredential: [vc],
  holder,
})

const tampered = (vc: Doc): Doc => {
  const copy = structuredClone(vc)
  ;(copy.credentialSubject as Doc).degree = 'PhD'
  return copy
}

// --- the other implementations' world: contexts and DID documents, in memory ------------------------------

const documents = new Map<string, unknown>()
async function loader(url: string): Promise<LoadedDocument> {
  const own = documents.get(url) ?? documents.get(String(url).split('#')[0] as string)
  const document = own ?? (await ldDocumentLoader(url)).document
  return { document: structuredClone(document), documentUrl: url, contextUrl: null }
}

/** Registers the did:key's DID document with its one verification method as `method` describes it. */
function register(key: LdKey, method: Doc, contexts: string[], legacyPublicKey = false): Doc {
  const vm = { id: key.kid, controller: key.did, ...method }
  documents.set(key.did, {
    '@context': contexts,
    id: key.did,
    [legacyPublicKey ? 'publicKey' : 'verificationMethod']: [vm],
    assertionMethod: [key.kid],
    authentication: [key.kid],
  })
  // jsonld-signatures 5 frames the key from its own document; the others from the DID document.
  if (legacyPublicKey) documents.set(key.kid, { '@context': contexts, ...vm })
  else documents.delete(key.kid)
  return vm
}

const jsonWebKey2020 = (key: LdKey) =>
  register(key, { type: 'JsonWebKey2020', publicKeyJwk: key.publicJwk }, [DID_V1_CONTEXT, JWS_2020_CONTEXT])
const ed25519Key2018 = (key: LdKey) =>
  register(
    key,
    {
      type: 'Ed25519VerificationKey2018',
      publicKeyBase58: base58btcEncode(Buffer.from(key.publicJwk.x as string, 'base64url')),
    },
    [DID_V1_CONTEXT, ED25519_2018_CONTEXT],
  )
/** did:key secp256k1 keys are compressed points: the multibase value less its 2-byte multicodec. */
const compressedK1 = (key: LdKey) => base58btcEncode(multikeyBytes(key.kid).subarray(2))
const secp256k1Key2019 = (key: LdKey) =>
  register(key, { type: 'EcdsaSecp256k1VerificationKey2019', publicKeyBase58: compressedK1(key) }, [
    DID_V1_CONTEXT,
    SECP256K1_2019_CONTEXT,
  ])
const rsaKey2018 = (key: LdKey) =>
  register(
    key,
    {
      type: 'RsaVerificationKey2018',
      publicKeyPem: key.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    },
    [SECURITY_V2_CONTEXT],
    true,
  )

function multikeyBytes(kid: string): Buffer {
  const multibase = kid.slice(kid.indexOf('#') + 1)
  const bytes = base58btcDecode(multibase.slice(1))
  assert.ok(multibase.startsWith('z') && bytes, `${kid} is not a base58btc multibase key id`)
  return Buffer.from(bytes)
}

const privateJwk = (privateKey: KeyObject) => privateKey.export({ format: 'jwk' }) as Record<string, string>
const ok = (verified: boolean, error?: unknown) =>
  assert.ok(verified, JSON.stringify(error ?? 'not verified'))

async function ours(pt: LdProofType, keyType: LdKeyType, document: Doc, purpose: LdPurpose): Promise<Doc> {
  const { key, privateKey } = pair(keyType)
  return signLd(document, { proofType: pt, kid: key.kid, privateKey, purpose })
}

async function assertOursVerify(document: Doc, purpose: LdPurpose, proofType: LdProofType, signer: LdKey) {
  const result = await verifyLd(document, purpose)
  assert.ok(result.verified, JSON.stringify(result))
  assert.equal(result.proofType, proofType)
  assert.equal(result.key.kid, signer.kid)
}

// --- VC Data Integrity, by hand ---------------------------------------------------------------------------
//
// VC Data Integrity EdDSA Cryptosuites 1.0 §3.3 (eddsa-rdfc-2022) and ECDSA Cryptosuites 1.0 §3.3
// (ecdsa-rdfc-2019): canonicalize the unsecured document and the proof configuration (the proof options
// without proofValue, with the document's @context) with RDFC-1.0; hashData = H(proof config) || H(document);
// sign hashData with Ed25519, or ECDSA (IEEE P1363 r||s) over it. H is SHA-256, except for P-384 keys:
// SHA-384, both for the two hashes and as RDFC-1.0's own hash function (ECDSA §3.1, "canon-and-hash").

const EXAMPLES_CONTEXT = 'https://www.w3.org/ns/credentials/examples/v2'
const DATA_INTEGRITY_V2 = 'https://w3id.org/security/data-integrity/v2'
/** SubjectPublicKeyInfo headers of compressed P-256 / P-384 points (RFC 5480). */
const SPKI: Record<string, string> = {
  'P-256': '3039301306072a8648ce3d020106082a8648ce3d030107032200',
  'P-384': '3046301006072a8648ce3d020106052b81040022033200',
}

async function independentLoader(url: string): Promise<LoadedDocument> {
  // The VC 2.0 examples context (only the test vectors use it) is an @vocab.
  if (url === EXAMPLES_CONTEXT)
    return {
      document: { '@context': { '@vocab': 'https://www.w3.org/ns/credentials/examples#' } },
      documentUrl: url,
      contextUrl: null,
    }
  return ldDocumentLoader(url)
}

async function canonical(document: unknown, hash: 'sha256' | 'sha384'): Promise<string> {
  const dataset = await jsonld.toRDF(document, {
    documentLoader: independentLoader,
    safe: true,
    base: null,
    rdfDirection: 'i18n-datatype',
    produceGeneralizedRdf: false,
  })
  return rdfCanonize.canonize(dataset, {
    algorithm: 'RDFC-1.0',
    messageDigestAlgorithm: hash === 'sha256' ? 'SHA-256' : 'SHA-384',
  })
}

/** The public key a did:key key id (a Multikey value, did:key §3.1) names, decoded here. */
function multikeyPublicKey(kid: string): { key: KeyObject; curve: 'Ed25519' | 'P-256' | 'P-384' } {
  const bytes = multikeyBytes(kid)
  const raw = bytes.subarray(2)
  if (bytes[0] === 0xed && bytes[1] === 0x01)
    return {
      key: createPublicKey({
        key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
        format: 'jwk',
      }),
      curve: 'Ed25519',
    }
  const curve =
    bytes[0] === 0x80 && bytes[1] === 0x24
      ? 'P-256'
      : bytes[0] === 0x81 && bytes[1] === 0x24
        ? 'P-384'
        : undefined
  assert.ok(curve, `${kid} is not an Ed25519, P-256 or P-384 Multikey`)
  const der = Buffer.concat([Buffer.from(SPKI[curve] as string, 'hex'), raw])
  return { key: createPublicKey({ key: der, format: 'der', type: 'spki' }), curve }
}

async function hashData(unsecured: Doc, proofOptions: Doc, hash: 'sha256' | 'sha384'): Promise<Buffer> {
  const config = { ...proofOptions, '@context': unsecured['@context'] }
  const digest = async (document: unknown) =>
    createHash(hash)
      .update(await canonical(document, hash))
      .digest()
  return Buffer.concat([await digest(config), await digest(unsecured)])
}

async function independentDiVerify(document: Doc, purpose: LdPurpose): Promise<boolean> {
  const { proof, ...unsecured } = document
  const { proofValue, ...options } = proof as Doc
  if (options.type !== 'DataIntegrityProof' || options.proofPurpose !== purpose.purpose) return false
  if (
    purpose.purpose === 'authentication' &&
    (options.challenge !== purpose.challenge || options.domain !== purpose.domain)
  )
    return false
  const { key, curve } = multikeyPublicKey(String(options.verificationMethod))
  if (options.cryptosuite !== (curve === 'Ed25519' ? 'eddsa-rdfc-2022' : 'ecdsa-rdfc-2019')) return false
  const hash = curve === 'P-384' ? 'sha384' : 'sha256'
  const data = await hashData(unsecured, options, hash)
  const signature = Buffer.from(base58btcDecode(String(proofValue).slice(1)) ?? [])
  return curve === 'Ed25519'
    ? verify(null, data, key, signature)
    : verify(hash, data, { key, dsaEncoding: 'ieee-p1363' }, signature)
}

async function independentDiSign(
  document: Doc,
  cryptosuite: LdProofType,
  kid: string,
  privateKey: KeyObject,
  purpose: LdPurpose,
): Promise<Doc> {
  const unsecured = structuredClone(document)
  // VC Data Integrity 1.0 §2.1: a document whose context does not define DataIntegrityProof (VC 1.1) gets
  // the data-integrity context.
  unsecured['@context'] = [...(unsecured['@context'] as string[]), DATA_INTEGRITY_V2]
  const { curve } = multikeyPublicKey(kid)
  const options: Doc = {
    type: 'DataIntegrityProof',
    cryptosuite,
    created: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    verificationMethod: kid,
    proofPurpose: purpose.purpose,
    ...(purpose.purpose === 'authentication' ? { challenge: purpose.challenge, domain: purpose.domain } : {}),
  }
  const hash = curve === 'P-384' ? 'sha384' : 'sha256'
  const data = await hashData(unsecured, options, hash)
  const signature =
    curve === 'Ed25519'
      ? sign(null, data, privateKey)
      : sign(hash, data, { key: privateKey, dsaEncoding: 'ieee-p1363' })
  return { ...unsecured, proof: { ...options, proofValue: `z${base58btcEncode(signature)}` } }
}

/**
 * The specifications' signed test vectors, as published (w3c/vc-di-eddsa TestVectors/eddsa-rdfc-2022/
 * signedDataInt.json, w3c/vc-di-ecdsa TestVectors/ecdsa-rdfc-2019-p256/signedECDSAP256.json and
 * -p384/signedECDSAP384.json).
 */
const SPEC_VECTORS: Record<string, Doc> = Object.fromEntries(
  (
    [
      [
        'eddsa-rdfc-2022',
        'eddsa-rdfc-2022',
        'z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2',
        'z2YwC8z3ap7yx1nZYCg4L3j3ApHsF8kgPdSb5xoS1VR7vPG3F561B52hYnQF9iseabecm3ijx4K1FBTQsCZahKZme',
      ],
      [
        'ecdsa-rdfc-2019 P-256',
        'ecdsa-rdfc-2019',
        'zDnaepBuvsQ8cpsWrVKw8fbpGpvPeNSjVPTWoq6cRqaYzBKVP',
        'zaHXrr7AQdydBk3ahpCDpWbxfLokDqmCToYm2dyWvpcFVyWooC2he63w1f7UNQoAMKdhaRtcnaE2KTo5o5vTCcfw',
      ],
      [
        'ecdsa-rdfc-2019 P-384',
        'ecdsa-rdfc-2019',
        'z82LkuBieyGShVBhvtE2zoiD6Kma4tJGFtkAhxR5pfkp5QPw4LutoYWhvQCnGjdVn14kujQ',
        'z967Mvv5bxtmLNqTzPZ8KmJjFmFXaAKeQNzq7GWnQkMcLtaGSSmuozE5WtJ8PipMe178B1tE28K1vsJur9bGVJhz6jgSJsRHFSQeqgH8hhjcg8gZDFJC1b9FsR5ggNmDBqHv',
      ],
    ] as const
  ).map(([name, cryptosuite, multikey, proofValue]) => [
    name,
    {
      '@context': ['https://www.w3.org/ns/credentials/v2', EXAMPLES_CONTEXT],
      id: 'urn:uuid:58172aac-d8ba-11ed-83dd-0b3aef56cc33',
      type: ['VerifiableCredential', 'AlumniCredential'],
      name: 'Alumni Credential',
      description: 'A minimum viable example of an Alumni Credential.',
      issuer: 'https://vc.example/issuers/5678',
      validFrom: '2023-01-01T00:00:00Z',
      credentialSubject: { id: 'did:example:abcdefgh', alumniOf: 'The School of Examples' },
      proof: {
        type: 'DataIntegrityProof',
        cryptosuite,
        created: '2023-02-24T23:36:38Z',
        verificationMethod: `did:key:${multikey}#${multikey}`,
        proofPurpose: 'assertionMethod',
        proofValue,
      },
    },
  ]),
)

let fetchMock: ReturnType<typeof mock.method> | undefined

describe('Linked Data proofs cross-checked with other implementations', () => {
  before(() => {
    fetchMock = mock.method(globalThis, 'fetch', async (input: unknown) => {
      throw new Error(`fetch(${String(input)}) during a cross-check`)
    })
    documents.set(BLOCKCERTS_CONTEXT, EcdsaSecp256k1Signature2019.CONTEXT)
  })
  after(() => {
    assert.equal(fetchMock?.mock.callCount(), 0, 'nothing was fetched')
    fetchMock?.mock.restore()
  })

  test('the two vendored suite contexts are the ones the other implementations ship', async () => {
    const transmuteCopy = require(
      require.resolve('@transmute/security-context/contexts/suites/jws-2020-v1.json', {
        paths: [require.resolve('@transmute/json-web-signature')],
      }),
    ) as unknown
    assert.deepEqual((await ldDocumentLoader(JWS_2020_CONTEXT)).document, transmuteCopy)
    assert.deepEqual(
      (await ldDocumentLoader(SECP256K1_2019_CONTEXT)).document,
      EcdsaSecp256k1Signature2019.CONTEXT,
    )
  })

  describe('JsonWebSignature2020: @transmute/json-web-signature', () => {
    for (const keyType of ['Ed25519', 'P-256', 'secp256k1'] as const) {
      test(`${keyType}: our credential and presentation verify with transmute`, async () => {
        const { key } = pair(keyType)
        jsonWebKey2020(key)
        const vc = await ours('JsonWebSignature2020', keyType, credential(key.did), ASSERT)
        const suite = new transmuteJws.JsonWebSignature()
        const rv = await transmuteVc.verifiable.credential.verify({
          credential: vc as never,
          suite,
          documentLoader: loader,
          format: ['vc'],
        })
        ok(rv.verified, rv)
        const vp = await ours('JsonWebSignature2020', keyType, presentation(key.did, vc), AUTH)
        const rp = await transmuteVc.verifiable.presentation.verify({
          presentation: vp as never,
          suite,
          challenge: CHALLENGE,
          domain: DOMAIN,
          documentLoader: loader,
          format: ['vp'],
        })
        ok(rp.verified, rp)
        const bad = await transmuteVc.verifiable.credential.verify({
          credential: tampered(vc) as never,
          suite,
          documentLoader: loader,
          format: ['vc'],
        })
        assert.equal(
          bad.verified,
          false,
          'transmute refuses a tampered credential (the check is not vacuous)',
        )
      })

      test(`${keyType}: transmute's credential and presentation verify with ours`, async () => {
        const { key, privateKey } = pair(keyType)
        const vm = jsonWebKey2020(key)
        const signer = await transmuteJws.JsonWebKey.from({
          ...vm,
          privateKeyJwk: privateJwk(privateKey),
        } as never)
        const suite = new transmuteJws.JsonWebSignature({ key: signer })
        const {
          items: [vc],
        } = await transmuteVc.verifiable.credential.create({
          credential: credential(key.did, [JWS_2020_CONTEXT]) as never,
          suite,
          documentLoader: loader,
          format: ['vc'],
        })
        const {
          items: [vp],
        } = await transmuteVc.verifiable.presentation.create({
          presentation: presentation(key.did, vc as Doc, [JWS_2020_CONTEXT]) as never,
          suite,
          challenge: CHALLENGE,
          domain: DOMAIN,
          documentLoader: loader,
          format: ['vp'],
        })
        await assertOursVerify(vc as Doc, ASSERT, 'JsonWebSignature2020', key)
        await assertOursVerify(vp as Doc, AUTH, 'JsonWebSignature2020', key)
        assert.equal((await verifyLd(tampered(vc as Doc), ASSERT)).verified, false)
      })
    }
  })

  describe('Ed25519Signature2018: @transmute/ed25519-signature-2018 and jsonld-signatures 5', () => {
    test('our credential and presentation (Digital Bazaar suite) verify with transmute', async () => {
      const { key } = pair('Ed25519')
      ed25519Key2018(key)
      const vc = await ours('Ed25519Signature2018', 'Ed25519', credential(key.did), ASSERT)
      // VC 1.1 defines Ed25519Signature2018: the suite context is not added (it would redefine its terms).
      assert.deepEqual(vc['@context'], [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT])
      const suite = new transmuteEd.Ed25519Signature2018()
      const rv = await transmuteVc.verifiable.credential.verify({
        credential: vc as never,
        suite,
        documentLoader: loader,
        format: ['vc'],
      })
      ok(rv.verified, rv)
      const vp = await ours('Ed25519Signature2018', 'Ed25519', presentation(key.did, vc), AUTH)
      const rp = await transmuteVc.verifiable.presentation.verify({
        presentation: vp as never,
        suite,
        challenge: CHALLENGE,
        domain: DOMAIN,
        documentLoader: loader,
        format: ['vp'],
      })
      ok(rp.verified, rp)
      const bad = await transmuteVc.verifiable.presentation.verify({
        presentation: vp as never,
        suite,
        challenge: 'another-nonce',
        domain: DOMAIN,
        documentLoader: loader,
        format: ['vp'],
      })
      assert.equal(bad.verified, false, 'transmute refuses another challenge')
    })

    test("transmute's credential and presentation verify with ours", async () => {
      const { key, privateKey } = pair('Ed25519')
      const vm = ed25519Key2018(key)
      const jwk = privateJwk(privateKey)
      const secret = Buffer.concat([
        Buffer.from(jwk.d as string, 'base64url'),
        Buffer.from(jwk.x as string, 'base64url'),
      ])
      const signer = await transmuteEd.Ed25519KeyPair.from({
        ...vm,
        privateKeyBase58: base58btcEncode(secret),
      } as never)
      const suite = new transmuteEd.Ed25519Signature2018({ key: signer })
      const {
        items: [vc],
      } = await transmuteVc.verifiable.credential.create({
        credential: credential(key.did) as never,
        suite,
        documentLoader: loader,
        format: ['vc'],
      })
      const {
        items: [vp],
      } = await transmuteVc.verifiable.presentation.create({
        presentation: presentation(key.did, vc as Doc) as never,
        suite,
        challenge: CHALLENGE,
        domain: DOMAIN,
        documentLoader: loader,
        format: ['vp'],
      })
      await assertOursVerify(vc as Doc, ASSERT, 'Ed25519Signature2018', key)
      await assertOursVerify(vp as Doc, AUTH, 'Ed25519Signature2018', key)
    })

    test('a jsonld-signatures 5 proof written with `creator` (section 2.5) verifies with ours', async () => {
      const { key, privateKey } = pair('Ed25519')
      const vm = register(
        key,
        {
          type: 'Ed25519VerificationKey2018',
          publicKeyBase58: base58btcEncode(Buffer.from(key.publicJwk.x as string, 'base64url')),
        },
        [SECURITY_V2_CONTEXT],
        true,
      )
      const jwk = privateJwk(privateKey)
      const secret = Buffer.concat([
        Buffer.from(jwk.d as string, 'base64url'),
        Buffer.from(jwk.x as string, 'base64url'),
      ])
      const keyPair = new jsigs5.Ed25519KeyPair({ ...vm, privateKeyBase58: base58btcEncode(secret) })
      const suite = () => new jsigs5.suites.Ed25519Signature2018({ key: keyPair, creator: key.kid })
      const options = { documentLoader: loader, compactProof: false }
      const vc = await jsigs5.sign(credential(key.did), {
        ...options,
        suite: suite(),
        purpose: new jsigs5.purposes.AssertionProofPurpose(),
      })
      const vp = await jsigs5.sign(presentation(key.did, vc), {
        ...options,
        suite: suite(),
        purpose: new jsigs5.purposes.AuthenticationProofPurpose({ challenge: CHALLENGE, domain: DOMAIN }),
      })
      for (const document of [vc, vp]) {
        const proof = document.proof as Doc
        assert.equal(proof.creator, key.kid)
        assert.equal(proof.verificationMethod, undefined)
      }
      await assertOursVerify(vc, ASSERT, 'Ed25519Signature2018', key)
      await assertOursVerify(vp, AUTH, 'Ed25519Signature2018', key)
      assert.equal((await verifyLd(tampered(vc), ASSERT)).verified, false)
    })
  })

  describe('EcdsaSecp256k1Signature2019: @blockcerts/ecdsa-secp256k1-signature-2019', () => {
    const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

    test('our credentials (low-S signatures) and presentation verify with blockcerts', async () => {
      const { key } = pair('secp256k1')
      secp256k1Key2019(key)
      // noble (behind blockcerts) refuses a high-S signature, half of what node:crypto makes un-normalised.
      for (let i = 0; i < 6; i++) {
        const vc = await ours('EcdsaSecp256k1Signature2019', 'secp256k1', credential(key.did), ASSERT)
        const jws = String((vc.proof as Doc).jws)
        const signature = Buffer.from(jws.slice(jws.lastIndexOf('.') + 1), 'base64url')
        assert.equal(signature.length, 64)
        assert.ok(BigInt(`0x${signature.subarray(32).toString('hex')}`) <= N / 2n, 'low S')
        const result = await jsigs.verify(vc, {
          suite: new EcdsaSecp256k1Signature2019(),
          purpose: new jsigs.purposes.AssertionProofPurpose(),
          documentLoader: loader,
        })
        ok(result.verified, result.error)
      }
      const vc = await ours('EcdsaSecp256k1Signature2019', 'secp256k1', credential(key.did), ASSERT)
      const vp = await ours('EcdsaSecp256k1Signature2019', 'secp256k1', presentation(key.did, vc), AUTH)
      const result = await jsigs.verify(vp, {
        suite: new EcdsaSecp256k1Signature2019(),
        purpose: new jsigs.purposes.AuthenticationProofPurpose({ challenge: CHALLENGE, domain: DOMAIN }),
        documentLoader: loader,
      })
      ok(result.verified, result.error)
      const bad = await jsigs.verify(tampered(vc), {
        suite: new EcdsaSecp256k1Signature2019(),
        purpose: new jsigs.purposes.AssertionProofPurpose(),
        documentLoader: loader,
      })
      assert.equal(bad.verified, false, 'blockcerts refuses a tampered credential')
    })

    test("blockcerts' credential and presentation verify with ours", async () => {
      const { key, privateKey } = pair('secp256k1')
      const vm = secp256k1Key2019(key)
      const signer = EcdsaSecp256k1VerificationKey2019.from({
        ...(vm as Record<string, string>),
        privateKeyBase58: base58btcEncode(Buffer.from(privateJwk(privateKey).d as string, 'base64url')),
      })
      const vc = await jsigs.sign(credential(key.did), {
        suite: new EcdsaSecp256k1Signature2019({ key: signer }),
        purpose: new jsigs.purposes.AssertionProofPurpose(),
        documentLoader: loader,
      })
      const vp = await jsigs.sign(presentation(key.did, vc), {
        suite: new EcdsaSecp256k1Signature2019({ key: signer }),
        purpose: new jsigs.purposes.AuthenticationProofPurpose({ challenge: CHALLENGE, domain: DOMAIN }),
        documentLoader: loader,
      })
      await assertOursVerify(vc, ASSERT, 'EcdsaSecp256k1Signature2019', key)
      await assertOursVerify(vp, AUTH, 'EcdsaSecp256k1Signature2019', key)
    })
  })

  describe('RsaSignature2018: jsonld-signatures 5', () => {
    const options = { documentLoader: loader, compactProof: false }
    const purpose = (p: LdPurpose) =>
      p.purpose === 'authentication'
        ? new jsigs5.purposes.AuthenticationProofPurpose({ challenge: p.challenge, domain: p.domain })
        : new jsigs5.purposes.AssertionProofPurpose()

    test('our credential and presentation verify with jsonld-signatures 5', async () => {
      const { key } = pair('RSA')
      rsaKey2018(key)
      const vc = await ours('RsaSignature2018', 'RSA', credential(key.did), ASSERT)
      const rv = await jsigs5.verify(vc, {
        ...options,
        suite: new jsigs5.suites.RsaSignature2018(),
        purpose: purpose(ASSERT),
      })
      ok(rv.verified, rv.error)
      const vp = await ours('RsaSignature2018', 'RSA', presentation(key.did, vc), AUTH)
      const rp = await jsigs5.verify(vp, {
        ...options,
        suite: new jsigs5.suites.RsaSignature2018(),
        purpose: purpose(AUTH),
      })
      ok(rp.verified, rp.error)
      const bad = await jsigs5.verify(tampered(vc), {
        ...options,
        suite: new jsigs5.suites.RsaSignature2018(),
        purpose: purpose(ASSERT),
      })
      assert.equal(bad.verified, false, 'jsonld-signatures 5 refuses a tampered credential')
    })

    for (const legacy of [false, true]) {
      test(`jsonld-signatures 5's credential and presentation${legacy ? ' written with `creator`' : ''} verify with ours`, async () => {
        const { key, privateKey } = pair('RSA')
        const vm = rsaKey2018(key)
        const keyPair = new jsigs5.RSAKeyPair({
          ...vm,
          privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        })
        const suite = () =>
          new jsigs5.suites.RsaSignature2018(legacy ? { key: keyPair, creator: key.kid } : { key: keyPair })
        const vc = await jsigs5.sign(credential(key.did), {
          ...options,
          suite: suite(),
          purpose: purpose(ASSERT),
        })
        const vp = await jsigs5.sign(presentation(key.did, vc), {
          ...options,
          suite: suite(),
          purpose: purpose(AUTH),
        })
        assert.equal((vp.proof as Doc)[legacy ? 'creator' : 'verificationMethod'], key.kid)
        await assertOursVerify(vc, ASSERT, 'RsaSignature2018', key)
        await assertOursVerify(vp, AUTH, 'RsaSignature2018', key)
        assert.equal((await verifyLd(tampered(vc), ASSERT)).verified, false)
      })
    }
  })

  describe('eddsa-rdfc-2022 and ecdsa-rdfc-2019: the VC Data Integrity algorithms written out', () => {
    for (const [name, doc] of Object.entries(SPEC_VECTORS)) {
      test(`the independent check verifies the specification's test vector ${name}, and ours refuses only its examples context`, async () => {
        assert.equal(await independentDiVerify(doc, ASSERT), true)
        assert.equal(await independentDiVerify(tampered(doc), ASSERT), false)
        // The vectors use https://www.w3.org/ns/credentials/examples/v2, which verifyLd does not bundle.
        const result = await verifyLd(doc, ASSERT)
        assert.equal(result.verified, false)
        assert.match(result.errors.join(), /examples\/v2.*not one this verifier has.*nothing is fetched/)
      })
    }

    const cases: [LdProofType, LdKeyType][] = [
      ['eddsa-rdfc-2022', 'Ed25519'],
      ['ecdsa-rdfc-2019', 'P-256'],
      ['ecdsa-rdfc-2019', 'P-384'],
    ]
    for (const [proofType, keyType] of cases) {
      test(`${proofType} ${keyType}: our credential and presentation verify with the independent check`, async () => {
        const { key } = pair(keyType)
        const vc = await ours(proofType, keyType, credential(key.did), ASSERT)
        assert.equal(await independentDiVerify(vc, ASSERT), true)
        const vp = await ours(proofType, keyType, presentation(key.did, vc), AUTH)
        assert.equal(await independentDiVerify(vp, AUTH), true)
        assert.equal(await independentDiVerify(tampered(vc), ASSERT), false)
        assert.equal(await independentDiVerify(vp, { ...AUTH, challenge: 'another' }), false)
      })

      test(`${proofType} ${keyType}: credentials and presentations signed by the independent code verify with ours`, async () => {
        const { key, privateKey } = pair(keyType)
        const vc = await independentDiSign(credential(key.did), proofType, key.kid, privateKey, ASSERT)
        const vp = await independentDiSign(presentation(key.did, vc), proofType, key.kid, privateKey, AUTH)
        await assertOursVerify(vc, ASSERT, proofType, key)
        await assertOursVerify(vp, AUTH, proofType, key)
        assert.equal((await verifyLd(tampered(vc), ASSERT)).verified, false)
      })
    }
  })
})
