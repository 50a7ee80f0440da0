import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { constants, createHash, type KeyObject, sign } from 'node:crypto'
import { createRequire } from 'node:module'
import { after, before, describe, mock, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  DATA_INTEGRITY_V2_CONTEXT,
  ED25519_2018_CONTEXT,
  JWS_2020_CONTEXT,
  KNOWN_CONTEXTS,
  ldDocumentLoader,
  SECP256K1_2019_CONTEXT,
  SECURITY_V2_CONTEXT,
  UNDEFINED_TERMS_CONTEXT,
  VC_V1_CONTEXT,
  VC_V2_CONTEXT,
} from '../../../src/formats/ldp-vc/contexts.ts'
import {
  generateLdKeyPair,
  type LdKey,
  type LdKeyType,
  ldKeyFromPublicKey,
} from '../../../src/formats/ldp-vc/keys.ts'
import {
  LD_PROOF_TYPES,
  type LdProofType,
  type LdPurpose,
  MAX_LD_DEPTH,
  MAX_LD_DOCUMENT_BYTES,
  MAX_LD_NODES,
  PROOF_KEY_TYPES,
  proofTypeOf,
  signLd,
  verifyLd,
} from '../../../src/formats/ldp-vc/suites.ts'

// The Linked Data proof library (issue 33): each proof type with each key type it signs with, on the
// credentials vc-harness issues (VC 1.1 + the undefined-terms context, template types and claims) and the
// presentations wallets send (@digitalbazaar/vc createPresentation, version 1.0), and everything a verifier
// must refuse: altered content, another challenge or domain, a term no context defines (JSON-LD safe mode:
// the Ed25519Signature2018 / JsonWebSignature2020 trap, where it would silently drop out of the signature),
// a context it does not bundle (nothing is ever fetched), legacy `creator` proofs (section 2.5).
// cross-check.test.ts checks the same proofs against other implementations.

type Doc = Record<string, unknown>

const CHALLENGE = 'n-0S6_WzA2Mj'
const DOMAIN = 'x509_san_dns:verifier.example'
const AUTH: LdPurpose = { purpose: 'authentication', challenge: CHALLENGE, domain: DOMAIN }
const ASSERT: LdPurpose = { purpose: 'assertionMethod' }
const UNKNOWN_CONTEXT = 'https://contexts.example/unknown/v1'

interface Party {
  key: LdKey
  privateKey: KeyObject
}
const parties = new Map<string, Party>()
/** One issuer and one holder key per key type for the file (RSA key generation is slow). */
function party(role: 'issuer' | 'holder', keyType: LdKeyType): Party {
  let p = parties.get(`${role} ${keyType}`)
  if (!p) {
    const { privateKey, publicKey } = generateLdKeyPair(keyType)
    p = { key: ldKeyFromPublicKey(publicKey), privateKey }
    parties.set(`${role} ${keyType}`, p)
  }
  return p
}

/** A credential as vc-harness issues it: template-defined type and claims, named by the undefined-terms @vocab. */
const credential = (issuer: string, version: 1 | 2 = 1): Doc => ({
  '@context': [version === 1 ? VC_V1_CONTEXT : VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT],
  type: ['VerifiableCredential', 'ServiceCredential'],
  issuer,
  [version === 1 ? 'issuanceDate' : 'validFrom']: '2026-01-01T00:00:00Z',
  credentialSubject: { id: 'did:example:holder', name: 'Alice', degree: 'BSc' },
})

/** A credential whose every term VC 1.1 defines: without the @vocab, an added claim is undefined. */
const strictCredential = (issuer: string): Doc => ({
  '@context': [VC_V1_CONTEXT],
  type: ['VerifiableCredential'],
  issuer,
  issuanceDate: '2026-01-01T00:00:00Z',
  credentialSubject: { id: 'did:example:holder' },
})

/** As @digitalbazaar/vc createPresentation({version: 1.0}) builds it. */
const presentation = (holder: string, vc: Doc): Doc => ({
  '@context': [VC_V1_CONTEXT],
  type: ['VerifiablePresentation'],
  verifiableCredential: [vc],
  holder,
})

async function signAs(p: Party, proofType: LdProofType, document: Doc, purpose: LdPurpose): Promise<Doc> {
  return signLd(document, { proofType, kid: p.key.kid, privateKey: p.privateKey, purpose })
}

async function refused(document: Doc, purpose: LdPurpose, message: RegExp): Promise<string[]> {
  const result = await verifyLd(document, purpose)
  assert.equal(result.verified, false, 'refused')
  if (result.verified) throw new Error('unreachable')
  assert.match(result.errors.join('\n'), message)
  return result.errors
}

const subjectOf = (document: Doc) => document.credentialSubject as Doc
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const signatureFailure = (kid: string) =>
  new RegExp(`the signature does not verify with ${escaped(kid)} \\(was the document altered\\?\\)`)
const SAFE_MODE = (term: string) =>
  new RegExp(`the term "${term}" is not defined by the document's @context .*safe mode`)
const OFFLINE = new RegExp(
  `@context "${escaped(UNKNOWN_CONTEXT)}" is not one this verifier has \\(JSON-LD is processed offline; nothing is fetched\\)`,
)

/** The contexts signLd leaves on a VC 1.1 credential: VC 1.1 defines the three 2018/2019 suites itself. */
const V1_CONTEXTS_AFTER: Record<LdProofType, string[]> = {
  Ed25519Signature2018: [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT],
  JsonWebSignature2020: [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT, JWS_2020_CONTEXT],
  EcdsaSecp256k1Signature2019: [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT],
  RsaSignature2018: [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT],
  'eddsa-rdfc-2022': [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT, DATA_INTEGRITY_V2_CONTEXT],
  'ecdsa-rdfc-2019': [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT, DATA_INTEGRITY_V2_CONTEXT],
}
/** And on a VC 2.0 one, which defines DataIntegrityProof only. */
const V2_CONTEXTS_AFTER: Record<LdProofType, string[]> = {
  Ed25519Signature2018: [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT, ED25519_2018_CONTEXT],
  JsonWebSignature2020: [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT, JWS_2020_CONTEXT],
  EcdsaSecp256k1Signature2019: [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT, SECP256K1_2019_CONTEXT],
  RsaSignature2018: [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT, SECURITY_V2_CONTEXT],
  'eddsa-rdfc-2022': [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT],
  'ecdsa-rdfc-2019': [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT],
}

let fetchMock: ReturnType<typeof mock.method> | undefined

describe('ldp-vc proof suites', () => {
  before(() => {
    fetchMock = mock.method(globalThis, 'fetch', async (input: unknown) => {
      throw new Error(`fetch(${String(input)}) from the Linked Data proof library`)
    })
  })
  after(() => {
    assert.equal(fetchMock?.mock.callCount(), 0, 'nothing was fetched')
    fetchMock?.mock.restore()
  })

  for (const proofType of LD_PROOF_TYPES) {
    for (const keyType of PROOF_KEY_TYPES[proofType]) {
      describe(`${proofType} with ${keyType} keys`, () => {
        test('signs and verifies a credential (assertionMethod), leaving the input as it was', async () => {
          const issuer = party('issuer', keyType)
          const input = credential(issuer.key.did)
          const before = structuredClone(input)
          const vc = await signAs(issuer, proofType, input, ASSERT)
          assert.deepEqual(input, before, 'the input is not modified')
          assert.deepEqual(vc['@context'], V1_CONTEXTS_AFTER[proofType])
          const proof = vc.proof as Doc
          assert.equal(proofTypeOf(proof), proofType)
          assert.equal(proof.proofPurpose, 'assertionMethod')
          assert.equal(proof.verificationMethod, issuer.key.kid)
          assert.match(String(proof.created), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
          if (proofType.includes('-')) assert.match(String(proof.proofValue), /^z[1-9A-HJ-NP-Za-km-z]+$/)
          else assert.match(String(proof.jws), /^[\w-]+\.\.[\w-]+$/)

          const copy = structuredClone(vc)
          const result = await verifyLd(vc, ASSERT)
          assert.ok(result.verified, JSON.stringify(result))
          assert.equal(result.proofType, proofType)
          assert.equal(result.key.did, issuer.key.did)
          assert.equal(result.key.kid, issuer.key.kid)
          assert.equal(result.key.keyType, keyType)
          assert.deepEqual(result.proof, proof)
          assert.deepEqual(vc, copy, 'verification does not modify the document')
        })

        test('signs and verifies a presentation (authentication with challenge and domain)', async () => {
          const issuer = party('issuer', keyType)
          const holder = party('holder', keyType)
          const vc = await signAs(issuer, proofType, credential(issuer.key.did), ASSERT)
          const vp = await signAs(holder, proofType, presentation(holder.key.did, vc), AUTH)
          const proof = vp.proof as Doc
          assert.equal(proof.proofPurpose, 'authentication')
          assert.equal(proof.challenge, CHALLENGE)
          assert.equal(proof.domain, DOMAIN)
          const result = await verifyLd(vp, AUTH)
          assert.ok(result.verified, JSON.stringify(result))
          assert.equal(result.key.did, holder.key.did)
          // the embedded credential keeps its own, still valid, proof
          const embedded = (vp.verifiableCredential as Doc[])[0] as Doc
          assert.ok((await verifyLd(embedded, ASSERT)).verified)
        })

        test('a claim altered after signing fails, naming the signature and the key', async () => {
          const issuer = party('issuer', keyType)
          const holder = party('holder', keyType)
          const vc = await signAs(issuer, proofType, credential(issuer.key.did), ASSERT)
          const altered = structuredClone(vc)
          subjectOf(altered).degree = 'PhD'
          await refused(altered, ASSERT, signatureFailure(issuer.key.kid))
          // inside a presentation: the presentation's own signature covers the embedded credential
          const vp = await signAs(holder, proofType, presentation(holder.key.did, vc), AUTH)
          const alteredVp = structuredClone(vp)
          subjectOf((alteredVp.verifiableCredential as Doc[])[0] as Doc).degree = 'PhD'
          await refused(alteredVp, AUTH, signatureFailure(holder.key.kid))
        })

        test('another challenge, another domain or another purpose is refused', async () => {
          const holder = party('holder', keyType)
          const issuer = party('issuer', keyType)
          const vc = await signAs(issuer, proofType, credential(issuer.key.did), ASSERT)
          const vp = await signAs(holder, proofType, presentation(holder.key.did, vc), AUTH)
          await refused(
            vp,
            { ...AUTH, challenge: 'another-nonce' } as LdPurpose,
            new RegExp(`proof.challenge "${CHALLENGE}" is not the expected "another-nonce"`),
          )
          await refused(
            vp,
            { ...AUTH, domain: 'x509_san_dns:other.example' } as LdPurpose,
            /proof.domain "x509_san_dns:verifier.example" is not the expected "x509_san_dns:other.example"/,
          )
          // the signed challenge cannot be swapped for the expected one
          const swapped = structuredClone(vp)
          ;(swapped.proof as Doc).challenge = 'another-nonce'
          await refused(
            swapped,
            { ...AUTH, challenge: 'another-nonce' } as LdPurpose,
            signatureFailure(holder.key.kid),
          )
          await refused(vp, ASSERT, /proof.proofPurpose "authentication" is not "assertionMethod"/)
          await refused(vc, AUTH, /proof.proofPurpose "assertionMethod" is not "authentication"/)
        })

        test('a term no context defines, added after signing, is refused in safe mode', async () => {
          const issuer = party('issuer', keyType)
          const vc = await signAs(issuer, proofType, strictCredential(issuer.key.did), ASSERT)
          assert.ok((await verifyLd(vc, ASSERT)).verified)
          const added = structuredClone(vc)
          subjectOf(added).degree = 'PhD'
          await refused(added, ASSERT, SAFE_MODE('degree'))
        })

        test('a term no context defines is refused at signing', async () => {
          const issuer = party('issuer', keyType)
          const document = strictCredential(issuer.key.did)
          subjectOf(document).degree = 'BSc'
          await assert.rejects(signAs(issuer, proofType, document, ASSERT), SAFE_MODE('degree'))
          await assert.rejects(
            signAs(
              issuer,
              proofType,
              { ...strictCredential(issuer.key.did), type: ['VerifiableCredential', 'ServiceCredential'] },
              ASSERT,
            ),
            /not defined by the document's @context|relative @type/,
          )
        })

        test('a context the library does not bundle is refused offline, at verification and at signing', async () => {
          const issuer = party('issuer', keyType)
          const vc = await signAs(issuer, proofType, credential(issuer.key.did), ASSERT)
          const unknown = structuredClone(vc)
          unknown['@context'] = [...(vc['@context'] as string[]), UNKNOWN_CONTEXT]
          await refused(unknown, ASSERT, OFFLINE)
          await assert.rejects(
            signAs(
              issuer,
              proofType,
              { ...credential(issuer.key.did), '@context': [VC_V1_CONTEXT, UNKNOWN_CONTEXT] },
              ASSERT,
            ),
            OFFLINE,
          )
        })
      })
    }
  }

  describe('signing refuses a key its proof type does not sign with', () => {
    const allTypes: LdKeyType[] = ['Ed25519', 'P-256', 'P-384', 'secp256k1', 'RSA']
    for (const proofType of LD_PROOF_TYPES) {
      const wrong = allTypes.filter((t) => !PROOF_KEY_TYPES[proofType].includes(t))
      test(`${proofType}: ${wrong.join(', ') || 'none'}`, async () => {
        for (const keyType of wrong) {
          const issuer = party('issuer', keyType)
          await assert.rejects(
            signAs(issuer, proofType, credential(issuer.key.did), ASSERT),
            new RegExp(
              `${proofType} signs with ${PROOF_KEY_TYPES[proofType].join(', ')} keys, not ${keyType}`,
            ),
          )
        }
      })
    }

    test('a kid that is not the private key’s did:key is refused', async () => {
      const issuer = party('issuer', 'Ed25519')
      const other = party('holder', 'Ed25519')
      await assert.rejects(
        signLd(credential(issuer.key.did), {
          proofType: 'Ed25519Signature2018',
          kid: other.key.kid,
          privateKey: issuer.privateKey,
          purpose: ASSERT,
        }),
        /is not the did:key key id of this private key/,
      )
      await assert.rejects(
        signLd(credential(issuer.key.did), {
          proofType: 'Ed25519Signature2018',
          kid: issuer.key.kid,
          privateKey: issuer.key.publicKey,
          purpose: ASSERT,
        }),
        /private key/,
      )
    })
  })

  describe('verification', () => {
    test('exactly one proof: two, none, or a proof that is not an object are refused', async () => {
      const issuer = party('issuer', 'Ed25519')
      const vc = await signAs(issuer, 'eddsa-rdfc-2022', credential(issuer.key.did), ASSERT)
      await refused(
        { ...vc, proof: [vc.proof, vc.proof] },
        ASSERT,
        /exactly one embedded proof object, found 2/,
      )
      const { proof: _proof, ...bare } = vc
      await refused(bare, ASSERT, /exactly one embedded proof object, found 0/)
      await refused({ ...vc, proof: 'z3Fg' }, ASSERT, /exactly one embedded proof object/)
      await assert.rejects(signAs(issuer, 'eddsa-rdfc-2022', vc, ASSERT), /already has a proof/)
    })

    test('`allowed` limits the proof types accepted; an unknown proof type is named', async () => {
      const issuer = party('issuer', 'Ed25519')
      const vc = await signAs(issuer, 'JsonWebSignature2020', credential(issuer.key.did), ASSERT)
      const result = await verifyLd(vc, ASSERT, { allowed: ['eddsa-rdfc-2022', 'Ed25519Signature2018'] })
      assert.equal(result.verified, false)
      assert.equal(result.proofType, 'JsonWebSignature2020')
      assert.ok((await verifyLd(vc, ASSERT, { allowed: ['JsonWebSignature2020'] })).verified)
      await refused(
        { ...vc, proof: { ...(vc.proof as Doc), type: 'Ed25519Signature2020' } },
        ASSERT,
        /Ed25519Signature2020/,
      )
    })

    test('a verification method that is not a did:key, or of a key type the suite does not take, is refused', async () => {
      const issuer = party('issuer', 'Ed25519')
      const vc = await signAs(issuer, 'Ed25519Signature2018', credential(issuer.key.did), ASSERT)
      const web = {
        ...vc,
        proof: { ...(vc.proof as Doc), verificationMethod: 'did:web:issuer.example#key-1' },
      }
      await refused(web, ASSERT, /did:web:issuer.example#key-1.*not a did:key/)
      const p256 = party('issuer', 'P-256').key.kid
      const wrongType = { ...vc, proof: { ...(vc.proof as Doc), verificationMethod: p256 } }
      await refused(wrongType, ASSERT, /Ed25519Signature2018 is not made with a P-256 key/)
      const { verificationMethod: _vm, ...noMethod } = vc.proof as Doc
      await refused({ ...vc, proof: noMethod }, ASSERT, /names no verificationMethod/)
    })

    test('another issuer’s key in the proof fails on the signature', async () => {
      const issuer = party('issuer', 'P-256')
      const other = party('holder', 'P-256')
      const vc = await signAs(issuer, 'ecdsa-rdfc-2019', credential(issuer.key.did), ASSERT)
      const swapped = { ...vc, proof: { ...(vc.proof as Doc), verificationMethod: other.key.kid } }
      await refused(swapped, ASSERT, signatureFailure(other.key.kid))
    })

    test('the proofTypeOf table', () => {
      assert.equal(proofTypeOf({ type: 'Ed25519Signature2018' }), 'Ed25519Signature2018')
      assert.equal(
        proofTypeOf({ type: 'DataIntegrityProof', cryptosuite: 'ecdsa-rdfc-2019' }),
        'ecdsa-rdfc-2019',
      )
      assert.equal(proofTypeOf({ type: 'DataIntegrityProof', cryptosuite: 'eddsa-jcs-2022' }), undefined)
      assert.equal(proofTypeOf({ type: 'DataIntegrityProof', cryptosuite: 'RsaSignature2018' }), undefined)
      assert.equal(proofTypeOf({ type: 'eddsa-rdfc-2022' }), undefined)
      assert.equal(proofTypeOf({ type: 'Ed25519Signature2020' }), undefined)
      assert.equal(proofTypeOf('Ed25519Signature2018'), undefined)
      assert.equal(proofTypeOf(undefined), undefined)
    })
  })

  describe('legacy proofs written with `creator` (section 2.5; jsonld-signatures ≤ 5)', () => {
    const cases: [LdProofType, LdKeyType][] = [
      ['Ed25519Signature2018', 'Ed25519'],
      ['RsaSignature2018', 'RSA'],
      ['EcdsaSecp256k1Signature2019', 'secp256k1'],
    ]
    for (const [proofType, keyType] of cases) {
      test(`${proofType}: a credential and a presentation with \`creator\` verify; a creator of another DID does not`, async () => {
        const issuer = party('issuer', keyType)
        const holder = party('holder', keyType)
        const vc = await legacySign(credential(issuer.key.did), proofType, issuer, ASSERT)
        const vp = await legacySign(presentation(holder.key.did, vc), proofType, holder, AUTH)
        assert.equal((vp.proof as Doc).creator, holder.key.kid)
        assert.equal((vp.proof as Doc).verificationMethod, undefined)
        const result = await verifyLd(vp, AUTH)
        assert.ok(result.verified, JSON.stringify(result))
        assert.equal(result.key.did, holder.key.did)
        assert.ok((await verifyLd(vc, ASSERT)).verified)
        // the wallet misbehaviour "creator of another DID"
        const stranger = party('issuer', keyType).key.kid
        await refused(
          { ...vp, proof: { ...(vp.proof as Doc), creator: stranger } },
          AUTH,
          signatureFailure(stranger),
        )
        await refused(
          { ...vp, proof: { ...(vp.proof as Doc), creator: `${holder.key.did}#keys-1` } },
          AUTH,
          /#keys-1/,
        )
      })
    }
  })

  describe('VC 2.0 documents get the suite context their @context lacks', () => {
    for (const proofType of LD_PROOF_TYPES) {
      test(proofType, async () => {
        const issuer = party('issuer', PROOF_KEY_TYPES[proofType][0] as LdKeyType)
        const vc = await signAs(issuer, proofType, credential(issuer.key.did, 2), ASSERT)
        assert.deepEqual(vc['@context'], V2_CONTEXTS_AFTER[proofType])
        assert.ok((await verifyLd(vc, ASSERT)).verified)
      })
    }
  })

  describe('bounds: what a verifier canonicalizes is limited before it starts', () => {
    const issuer = () => party('issuer', 'Ed25519')
    const nested = (depth: number): unknown => {
      let value: unknown = 'leaf'
      for (let i = 0; i < depth; i++) value = { n: value }
      return value
    }

    test(`more than ${MAX_LD_DOCUMENT_BYTES} bytes`, async () => {
      const big = credential(issuer().key.did)
      subjectOf(big).name = 'x'.repeat(MAX_LD_DOCUMENT_BYTES)
      await assert.rejects(signAs(issuer(), 'eddsa-rdfc-2022', big, ASSERT), /bytes, more than the 65536/)
      const vc = await signAs(issuer(), 'eddsa-rdfc-2022', credential(issuer().key.did), ASSERT)
      subjectOf(vc).name = 'x'.repeat(MAX_LD_DOCUMENT_BYTES)
      await refused(vc, ASSERT, /bytes, more than the 65536/)
    })

    test(`nesting deeper than ${MAX_LD_DEPTH}`, async () => {
      const vc = await signAs(issuer(), 'Ed25519Signature2018', credential(issuer().key.did), ASSERT)
      subjectOf(vc).name = nested(MAX_LD_DEPTH)
      await refused(vc, ASSERT, new RegExp(`more than ${MAX_LD_DEPTH}`))
      subjectOf(vc).name = nested(100_000)
      await refused(vc, ASSERT, /not a JSON tree|more than 32/)
    })

    test(`more than ${MAX_LD_NODES} objects and arrays`, async () => {
      const vc = await signAs(issuer(), 'Ed25519Signature2018', credential(issuer().key.did), ASSERT)
      subjectOf(vc).name = Array.from({ length: MAX_LD_NODES }, () => ({}))
      await refused(vc, ASSERT, new RegExp(`JSON objects and arrays, more than ${MAX_LD_NODES}`))
    })

    test('a cyclic document', async () => {
      const vc = await signAs(issuer(), 'Ed25519Signature2018', credential(issuer().key.did), ASSERT)
      subjectOf(vc).self = vc
      await refused(vc, ASSERT, /not a JSON tree/)
    })
  })

  describe('contexts', () => {
    test('the loader serves every bundled context and refuses anything else without fetching', async () => {
      for (const url of KNOWN_CONTEXTS) {
        const { document, documentUrl } = await ldDocumentLoader(url)
        assert.equal(documentUrl, url)
        assert.ok(typeof document === 'object' && document !== null && '@context' in document, url)
      }
      await assert.rejects(ldDocumentLoader(UNKNOWN_CONTEXT), OFFLINE)
      await assert.rejects(
        ldDocumentLoader('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'),
        /not one this verifier has/,
      )
    })

    test('importing the library loads no JSON-LD code (it loads at the first proof)', () => {
      const root = fileURLToPath(new URL('../../../', import.meta.url))
      const script = `
        await import('./src/formats/ldp-vc/suites.ts')
        const { createRequire } = await import('node:module')
        const loaded = Object.keys(createRequire(import.meta.url).cache)
        console.log(JSON.stringify(loaded.filter((f) => /node_modules\\/(jsonld|rdf-canonize|jsonld-signatures)\\//.test(f))))
      `
      const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: root,
        encoding: 'utf8',
      })
      assert.equal(run.status, 0, run.stderr)
      assert.deepEqual(JSON.parse(run.stdout.trim().split('\n').at(-1) as string), [])
    })
  })
})

// --- a legacy signer, as jsonld-signatures ≤ 5 wrote proofs --------------------------------------------------
//
// Proof options under security/v2 with `creator` naming the key, a detached JWS (RFC 7797, b64: false) over
// SHA-256(canonical proof options) || SHA-256(canonical document): the Linked Data Signatures 1.0 draft
// algorithm the 2018/2019 suites follow. Canonicalization by jsonld (RDFC-1.0) with the bundled contexts.

const require = createRequire(import.meta.url)
const jsonld = require('jsonld') as { canonize(input: unknown, options: object): Promise<string> }

const canonize = (document: unknown) =>
  jsonld.canonize(document, {
    algorithm: 'RDFC-1.0',
    format: 'application/n-quads',
    documentLoader: ldDocumentLoader,
    safe: true,
    base: null,
  })

async function legacySign(
  document: Doc,
  proofType: LdProofType,
  signer: Party,
  purpose: LdPurpose,
): Promise<Doc> {
  const options: Doc = {
    type: proofType,
    created: '2026-01-01T00:00:00Z',
    creator: signer.key.kid,
    proofPurpose: purpose.purpose,
    ...(purpose.purpose === 'authentication' ? { challenge: purpose.challenge, domain: purpose.domain } : {}),
  }
  const sha256 = (text: string) => createHash('sha256').update(text).digest()
  const verifyData = Buffer.concat([
    sha256(await canonize({ '@context': SECURITY_V2_CONTEXT, ...options })),
    sha256(await canonize(document)),
  ])
  const alg = { Ed25519: 'EdDSA', RSA: 'PS256', secp256k1: 'ES256K' }[signer.key.keyType as 'Ed25519']
  const header = Buffer.from(JSON.stringify({ alg, b64: false, crit: ['b64'] })).toString('base64url')
  const data = Buffer.concat([Buffer.from(`${header}.`), verifyData])
  const signature =
    signer.key.keyType === 'Ed25519'
      ? sign(null, data, signer.privateKey)
      : signer.key.keyType === 'RSA'
        ? sign('sha256', data, {
            key: signer.privateKey,
            padding: constants.RSA_PKCS1_PSS_PADDING,
            saltLength: 32,
          })
        : sign('sha256', data, { key: signer.privateKey, dsaEncoding: 'ieee-p1363' })
  return { ...document, proof: { ...options, jws: `${header}..${signature.toString('base64url')}` } }
}
