import { constants, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto'
import { base58btcEncode } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { lazyImport } from '../../shared/lazy.ts'
import {
  DATA_INTEGRITY_V2_CONTEXT,
  DID_V1_CONTEXT,
  ED25519_2018_CONTEXT,
  JWS_2020_CONTEXT,
  type LoadedDocument,
  ldDocumentLoader,
  MULTIKEY_CONTEXT,
  SECP256K1_2019_CONTEXT,
  SECURITY_V2_CONTEXT,
  UnknownContextError,
} from './contexts.ts'
import { keyTypeOf, type LdKey, type LdKeyType, ldKeyFromPublicKey, resolveLdKey } from './keys.ts'

// The Linked Data proof types vc-harness signs and verifies, one row each: section 2.8's four (W3C CCG
// Ed25519Signature2018, JsonWebSignature2020, EcdsaSecp256k1Signature2019, RsaSignature2018: a detached
// JWS over the RDF-canonicalized document and proof options) and the VC Data Integrity 1.0 cryptosuites
// eddsa-rdfc-2022 and ecdsa-rdfc-2019. jsonld-signatures runs the algorithm in JSON-LD safe mode (an
// undefined term is an error, not silently dropped) with the bundled contexts only (contexts.ts).
// Verification methods are did:keys (keys.ts), presented to each suite as the key type it defines.

export const LD_PROOF_TYPES = [
  'Ed25519Signature2018',
  'JsonWebSignature2020',
  'EcdsaSecp256k1Signature2019',
  'RsaSignature2018',
  'eddsa-rdfc-2022',
  'ecdsa-rdfc-2019',
] as const
export type LdProofType = (typeof LD_PROOF_TYPES)[number]

/** A Data Integrity cryptosuite (a `DataIntegrityProof` naming it), not one of the CCG suite types. */
export const isCryptosuite = (type: LdProofType): boolean => type.includes('-')
/** The Data Integrity cryptosuites, as LD_PROOF_TYPES names them. */
export const CRYPTOSUITES: readonly LdProofType[] = LD_PROOF_TYPES.filter(isCryptosuite)

export const isLdProofType = (value: unknown): value is LdProofType =>
  typeof value === 'string' && (LD_PROOF_TYPES as readonly string[]).includes(value)

/** The key types each proof type signs with, preferred first. */
export const PROOF_KEY_TYPES: Readonly<Record<LdProofType, readonly LdKeyType[]>> = {
  Ed25519Signature2018: ['Ed25519'],
  JsonWebSignature2020: ['Ed25519', 'P-256', 'secp256k1', 'P-384', 'RSA'],
  EcdsaSecp256k1Signature2019: ['secp256k1'],
  RsaSignature2018: ['RSA'],
  'eddsa-rdfc-2022': ['Ed25519'],
  'ecdsa-rdfc-2019': ['P-256', 'P-384'],
}

// A verifier canonicalizes what strangers send before it knows who signed it, and RDF canonicalization
// costs grow with the number of nodes (blank nodes above all): measured here, ~0.2 s of CPU to verify
// 1000 blank-node objects, ~0.5 s for 2500. A presentation of a few credentials is a few kB and under a
// hundred objects, so the limits below leave ample room and cap the cost of one check near 0.2 s.
/** A document larger than this (serialized, UTF-8) is refused before it is canonicalized. */
export const MAX_LD_DOCUMENT_BYTES = 64 * 1024
/** Nesting deeper than this is refused before JSON-LD expansion (which recurses). */
export const MAX_LD_DEPTH = 32
/** More JSON objects and arrays than this are refused before canonicalization. */
export const MAX_LD_NODES = 1000

/** The proof type a proof names: its `type`, or its `cryptosuite` for a DataIntegrityProof; else undefined. */
export function proofTypeOf(proof: unknown): LdProofType | undefined {
  if (!isObject(proof)) return undefined
  const named = proof.type === 'DataIntegrityProof' ? proof.cryptosuite : proof.type
  return isLdProofType(named) && named.includes('-') === (proof.type === 'DataIntegrityProof')
    ? named
    : undefined
}

export type LdPurpose =
  | { purpose: 'assertionMethod' }
  | { purpose: 'authentication'; challenge: string; domain: string }

export type LdVerifyResult =
  | { verified: true; proofType: LdProofType; proof: Record<string, unknown>; key: LdKey }
  | { verified: false; proofType?: LdProofType; errors: string[] }

// --- keys as each suite names them -------------------------------------------------------------------------

/** JWS `alg` of a key type (RFC 7518; ES256K RFC 8812; PS256 for RSA as the RsaSignature2018 suite says). */
const JWS_ALG: Readonly<Record<LdKeyType, string>> = {
  Ed25519: 'EdDSA',
  'P-256': 'ES256',
  'P-384': 'ES384',
  secp256k1: 'ES256K',
  RSA: 'PS256',
}

const HASH: Readonly<Record<LdKeyType, string | null>> = {
  Ed25519: null,
  'P-256': 'sha256',
  'P-384': 'sha384',
  secp256k1: 'sha256',
  RSA: 'sha256',
}

/** Order of the secp256k1 group: a signature's s above n/2 is turned into n − s (low-S, BIP 62). */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

function cryptoOptions(keyType: LdKeyType, key: KeyObject) {
  if (keyType === 'RSA') return { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }
  if (keyType === 'Ed25519') return key
  return { key, dsaEncoding: 'ieee-p1363' as const }
}

/** Libraries that verify secp256k1 (noble, bitcoin's) refuse high-S signatures; node:crypto makes either. */
function lowS(signature: Buffer): Buffer {
  const half = signature.length / 2
  const s = BigInt(`0x${signature.subarray(half).toString('hex')}`)
  if (s <= SECP256K1_N / 2n) return signature
  const low = Buffer.from((SECP256K1_N - s).toString(16).padStart(half * 2, '0'), 'hex')
  return Buffer.concat([signature.subarray(0, half), low])
}

interface Signer {
  id: string
  algorithm: string
  sign(input: { data: Uint8Array }): Promise<Uint8Array>
}

function signerOf(kid: string, privateKey: KeyObject, algorithm: string): Signer {
  const keyType = keyTypeOf(privateKey)
  return {
    id: kid,
    algorithm,
    sign: async ({ data }) => {
      const signature = cryptoSign(HASH[keyType], data, cryptoOptions(keyType, privateKey))
      return keyType === 'secp256k1' ? lowS(signature) : signature
    },
  }
}

function verifyWith(key: LdKey, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    return cryptoVerify(HASH[key.keyType], data, cryptoOptions(key.keyType, key.publicKey), signature)
  } catch {
    return false
  }
}

/** The verification method document of a did:key as a suite defines its key type. */
type MethodOf = (key: LdKey) => { '@context': string | string[]; type: string } & Record<string, unknown>

const rawEd25519 = (key: LdKey) => Buffer.from(key.publicJwk.x as string, 'base64url')
const multibaseOf = (key: LdKey) => key.kid.slice(key.kid.indexOf('#') + 1)

const METHODS: Readonly<Record<LdProofType, MethodOf>> = {
  Ed25519Signature2018: (key) => ({
    '@context': ED25519_2018_CONTEXT,
    type: 'Ed25519VerificationKey2018',
    publicKeyBase58: base58btcEncode(rawEd25519(key)),
  }),
  JsonWebSignature2020: (key) => ({
    '@context': JWS_2020_CONTEXT,
    type: 'JsonWebKey2020',
    publicKeyJwk: key.publicJwk,
  }),
  EcdsaSecp256k1Signature2019: (key) => ({
    '@context': SECP256K1_2019_CONTEXT,
    type: 'EcdsaSecp256k1VerificationKey2019',
    publicKeyJwk: key.publicJwk,
  }),
  RsaSignature2018: (key) => ({
    '@context': SECURITY_V2_CONTEXT,
    type: 'RsaVerificationKey2018',
    publicKeyPem: key.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  }),
  // VC Data Integrity: a Multikey's publicKeyMultibase is exactly the did:key's multibase value.
  'eddsa-rdfc-2022': (key) => ({
    '@context': MULTIKEY_CONTEXT,
    type: 'Multikey',
    publicKeyMultibase: multibaseOf(key),
  }),
  'ecdsa-rdfc-2019': (key) => ({
    '@context': MULTIKEY_CONTEXT,
    type: 'Multikey',
    publicKeyMultibase: multibaseOf(key),
  }),
}

/**
 * The loader of one proof check: bundled contexts, and a did:key's document (one verification method of
 * the suite's key type, authorised for authentication and assertionMethod, as did:key documents are) or
 * that method alone. Nothing else resolves.
 */
function loaderFor(proofType: LdProofType) {
  const methodOf = METHODS[proofType]
  return async (url: string): Promise<LoadedDocument> => {
    if (!url.startsWith('did:key:')) return ldDocumentLoader(url)
    const key = resolveLdKey(url)
    if (!PROOF_KEY_TYPES[proofType].includes(key.keyType))
      throw new Error(`${proofType} is not made with a ${key.keyType} key (${key.kid})`)
    const { '@context': context, ...method } = { ...methodOf(key), id: key.kid, controller: key.did }
    if (url.includes('#'))
      return { document: { '@context': context, ...method }, documentUrl: url, contextUrl: null }
    const contexts = [DID_V1_CONTEXT, ...[context].flat().filter((c) => c !== DID_V1_CONTEXT)]
    return {
      document: {
        '@context': contexts,
        id: key.did,
        verificationMethod: [method],
        authentication: [key.kid],
        assertionMethod: [key.kid],
      },
      documentUrl: url,
      contextUrl: null,
    }
  }
}

// --- the suites --------------------------------------------------------------------------------------------

const libraries = lazyImport(async () => {
  const [jsigsModule, integrity, eddsa, ecdsa, ed2018, jwsld] = await Promise.all([
    import('jsonld-signatures'),
    import('@digitalbazaar/data-integrity'),
    import('@digitalbazaar/eddsa-rdfc-2022-cryptosuite'),
    import('@digitalbazaar/ecdsa-rdfc-2019-cryptosuite'),
    import('@digitalbazaar/ed25519-signature-2018'),
    import('@digitalbazaar/jws-linked-data-signature'),
  ])
  const jsigs = jsigsModule.default
  const Base = jwsld.JwsLinkedDataSignature

  /**
   * JsonWebSignature2020, EcdsaSecp256k1Signature2019 and RsaSignature2018 (and Ed25519Signature2018 proofs
   * written with `creator`): the detached JWS of jws-linked-data-signature, with node:crypto behind it and
   * the verification method resolved from the did:key in the proof. `proofContext`: the context the proof
   * options are canonicalized under when not the document's (jsonld-signatures ≤ 5, which RsaSignature2018
   * implementations follow, used security/v2; the legacy `creator` term is defined only there).
   */
  class JwsSuite extends Base {
    constructor(
      readonly proofType: LdProofType,
      readonly options: { signer?: Signer; date?: Date; proofContext?: string },
    ) {
      super({
        type: proofType,
        alg: options.signer?.algorithm,
        LDKeyClass: undefined,
        contextUrl: undefined,
        signer: options.signer,
        date: options.date,
      })
    }

    /** signLd has added the suite's context where the document's contexts do not define the proof type. */
    override ensureSuiteContext() {}

    override async canonizeProof(
      proof: Record<string, unknown>,
      options: { document: unknown; documentLoader: unknown },
    ) {
      const { proofContext } = this.options
      if (!proofContext) return super.canonizeProof(proof, options)
      const { jws: _jws, signatureValue: _sv, proofValue: _pv, '@context': _c, ...rest } = proof
      return this.canonize({ '@context': proofContext, ...rest }, { documentLoader: options.documentLoader })
    }

    override async getVerificationMethod({
      proof,
      documentLoader,
    }: {
      proof: Record<string, unknown>
      documentLoader: (url: string) => Promise<LoadedDocument>
    }) {
      const named = isObject(proof.verificationMethod)
        ? proof.verificationMethod.id
        : (proof.verificationMethod ?? proof.creator)
      if (typeof named !== 'string') throw new Error('the proof names no verificationMethod')
      return (await documentLoader(named)).document
    }

    override async verifySignature({
      verifyData,
      verificationMethod,
      proof,
    }: {
      verifyData: Uint8Array
      verificationMethod: Record<string, unknown>
      proof: Record<string, unknown>
    }) {
      const key = resolveLdKey(String(verificationMethod.id))
      this.alg = JWS_ALG[key.keyType]
      this.verifier = {
        verify: async ({ data, signature }: { data: Uint8Array; signature: Uint8Array }) =>
          verifyWith(key, data, signature),
      }
      return super.verifySignature({ verifyData, verificationMethod, proof })
    }
  }

  return {
    jsigs,
    purpose(purpose: LdPurpose) {
      return purpose.purpose === 'authentication'
        ? new jsigs.purposes.AuthenticationProofPurpose({
            challenge: purpose.challenge,
            domain: purpose.domain,
          })
        : new jsigs.purposes.AssertionProofPurpose()
    },
    /**
     * A suite of `proofType` that signs with `signer` (or verifies, without one). `proofOptions`: what the
     * proof options are canonicalized under, the document's contexts or security/v2 (default: security/v2
     * for RsaSignature2018, as jsonld-signatures ≤ 5 and its interoperable implementations do). The two
     * differ for RsaSignature2018 only: VC 1.1's scoped context for it uses `sec:` and `xsd:` prefixes it
     * never defines, so under the document's context its options canonicalize to IRIs like <sec:challenge>
     * (jsonld-signatures ≥ 6 signs those); Ed25519Signature2018 and EcdsaSecp256k1Signature2019 options
     * come out the same either way (blockcerts, on jsonld-signatures 11, verifies ours).
     */
    suite(proofType: LdProofType, signer?: Signer, date?: Date, proofOptions?: 'document' | 'security-v2') {
      const legacy =
        (proofOptions ?? (proofType === 'RsaSignature2018' ? 'security-v2' : 'document')) === 'security-v2'
      const legacyContext = legacy ? SECURITY_V2_CONTEXT : undefined
      switch (proofType) {
        case 'eddsa-rdfc-2022':
          return new integrity.DataIntegrityProof({ signer, date, cryptosuite: eddsa.cryptosuite })
        case 'ecdsa-rdfc-2019':
          return new integrity.DataIntegrityProof({ signer, date, cryptosuite: ecdsa.cryptosuite })
        case 'Ed25519Signature2018':
          // Digital Bazaar's suite, unless the proof is the legacy form its getVerificationMethod cannot read
          if (!legacy) return new ed2018.Ed25519Signature2018({ signer, date })
          return new JwsSuite(proofType, { signer, date, proofContext: legacyContext })
        case 'JsonWebSignature2020':
          return new JwsSuite(proofType, { signer, date, proofContext: legacyContext })
        default:
          return new JwsSuite(proofType, { signer, date, proofContext: legacyContext })
      }
    },
  }
})

/** The signer's `algorithm` each suite expects: a JWS alg, or a Data Integrity curve name. */
function algorithmFor(proofType: LdProofType, keyType: LdKeyType): string {
  if (proofType === 'eddsa-rdfc-2022') return 'Ed25519'
  if (proofType === 'ecdsa-rdfc-2019') return keyType
  return JWS_ALG[keyType]
}

// --- bounds ------------------------------------------------------------------------------------------------

/** Why a document is too large or too deep to canonicalize, or undefined. */
function boundsProblem(document: unknown): string | undefined {
  let text: string
  try {
    text = JSON.stringify(document)
  } catch {
    // a cycle, or nesting deep enough to overflow the stack
    return 'the document is not a JSON tree'
  }
  const bytes = Buffer.byteLength(text)
  if (bytes > MAX_LD_DOCUMENT_BYTES)
    return `the document is ${bytes} bytes, more than the ${MAX_LD_DOCUMENT_BYTES} a Linked Data proof is checked on`
  let depth = 0
  let deepest = 0
  let nodes = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      nodes++
      deepest = Math.max(deepest, ++depth)
    } else if (c === 125 || c === 93) depth--
  }
  if (deepest > MAX_LD_DEPTH) return `the document nests ${deepest} levels deep, more than ${MAX_LD_DEPTH}`
  if (nodes > MAX_LD_NODES)
    return `the document has ${nodes} JSON objects and arrays, more than ${MAX_LD_NODES}`
  return undefined
}

// --- errors ------------------------------------------------------------------------------------------------

type ErrorLike = Error & {
  errors?: unknown[]
  details?: {
    cause?: unknown
    event?: { code?: string; message?: string; details?: Record<string, unknown> }
  }
  cause?: unknown
}

function rootCause(error: ErrorLike): ErrorLike {
  let current = error
  for (let depth = 0; depth < 6; depth++) {
    const next = current.details?.cause ?? current.cause
    if (!(next instanceof Error)) break
    current = next as ErrorLike
  }
  return current
}

/** A failure as a QA engineer needs to read it: which rule, about what. */
function describe(error: unknown, key: string | undefined): string[] {
  const nested = error instanceof Error ? (error as ErrorLike).errors : undefined
  const list = Array.isArray(nested) && nested.length > 0 ? nested : [error]
  return list.map((cause) => {
    if (!(cause instanceof Error)) return `the proof does not verify: ${String(cause)}`
    const root = rootCause(cause as ErrorLike)
    if (root instanceof UnknownContextError) return root.message
    const event = root.details?.event
    if (event?.code === 'invalid property' || event?.code === 'relative @type reference' || event?.message) {
      // JSON-LD safe mode: a term no context defines (which would otherwise be left out of the signature)
      const term = event.details?.property ?? event.details?.type ?? event.details?.term
      return term !== undefined
        ? `the term ${JSON.stringify(term)} is not defined by the document's @context (JSON-LD safe mode: it would be left out of the signature)`
        : `the document is not valid JSON-LD in safe mode: ${event.message}`
    }
    if (root.message === 'Invalid signature.')
      return `the signature does not verify with ${key ?? 'its verification method'} (was the document altered?)`
    if (/challenge/i.test(root.message)) return `proof.challenge: ${root.message}`
    if (/domain/i.test(root.message)) return `proof.domain: ${root.message}`
    return `the proof does not verify: ${root.message}`
  })
}

// --- suite contexts ----------------------------------------------------------------------------------------

/**
 * The context that defines each proof type's term, from its suite specification: Ed25519Signature2018 and
 * JsonWebSignature2020 (W3C CCG suite contexts), EcdsaSecp256k1Signature2019 (CCG secp256k1-2019 context),
 * RsaSignature2018 (security/v2, the only context of its era), DataIntegrityProof (VC Data Integrity 1.0 §2.1:
 * data-integrity/v2 unless the VC 2.0 context already defines it).
 */
const SUITE_CONTEXT: Readonly<Record<LdProofType, string>> = {
  Ed25519Signature2018: ED25519_2018_CONTEXT,
  JsonWebSignature2020: JWS_2020_CONTEXT,
  EcdsaSecp256k1Signature2019: SECP256K1_2019_CONTEXT,
  RsaSignature2018: SECURITY_V2_CONTEXT,
  'eddsa-rdfc-2022': DATA_INTEGRITY_V2_CONTEXT,
  'ecdsa-rdfc-2019': DATA_INTEGRITY_V2_CONTEXT,
}

/** Whether `context` (a URL the loader serves, an inline context, or a list of them) defines `term` itself. */
async function definesTerm(context: unknown, term: string, depth = 0): Promise<boolean> {
  if (depth > 4) return false
  if (typeof context === 'string') {
    const { document } = await ldDocumentLoader(context)
    return definesTerm(isObject(document) ? document['@context'] : undefined, term, depth + 1)
  }
  if (Array.isArray(context)) {
    for (const entry of context) if (await definesTerm(entry, term, depth + 1)) return true
    return false
  }
  return isObject(context) && Object.hasOwn(context, term)
}

/**
 * Appends the suite's context when the document's contexts do not define the proof type. An `@vocab` (the
 * undefined-terms context) does not count: it would give the proof type an IRI no other implementation
 * signs. VC 1.1's context defines Ed25519Signature2018, RsaSignature2018 and EcdsaSecp256k1Signature2019, so
 * nothing is added there (their suite contexts redefine its protected terms: blockcerts refuses the pair).
 */
async function addSuiteContext(document: Record<string, unknown>, proofType: LdProofType): Promise<void> {
  const term = proofType.includes('-') ? 'DataIntegrityProof' : proofType
  const contexts = document['@context'] === undefined ? [] : [document['@context']].flat()
  if (await definesTerm(contexts, term)) return
  document['@context'] = [...contexts, SUITE_CONTEXT[proofType]]
}

// --- proof options ------------------------------------------------------------------------------------------

/** What in the proof's purpose, challenge and domain differs from what the verifier expects. */
function purposeProblems(proof: Record<string, unknown>, purpose: LdPurpose): string[] {
  if (proof.proofPurpose !== purpose.purpose)
    return [
      `proof.proofPurpose ${JSON.stringify(proof.proofPurpose)} is not ${JSON.stringify(purpose.purpose)}`,
    ]
  if (purpose.purpose !== 'authentication') return []
  const errors: string[] = []
  if (proof.challenge !== purpose.challenge)
    errors.push(
      `proof.challenge ${JSON.stringify(proof.challenge)} is not the expected ${JSON.stringify(purpose.challenge)}`,
    )
  const domains = [proof.domain].flat()
  if (!domains.includes(purpose.domain))
    errors.push(
      `proof.domain ${JSON.stringify(proof.domain)} is not the expected ${JSON.stringify(purpose.domain)}`,
    )
  return errors
}

// --- sign and verify ---------------------------------------------------------------------------------------

/**
 * Signs a copy of `document` with an embedded proof of `proofType` by `privateKey`, whose did:key key id
 * `kid` must be. Refuses a key type the proof type does not sign with and a term no context defines.
 */
export async function signLd(
  document: Record<string, unknown>,
  options: { proofType: LdProofType; kid: string; privateKey: KeyObject; purpose: LdPurpose; created?: Date },
): Promise<Record<string, unknown>> {
  const { proofType, kid, privateKey } = options
  if (privateKey.type !== 'private') throw new Error('signLd needs a private key')
  const key = ldKeyFromPublicKey(privateKey)
  if (key.kid !== kid)
    throw new Error(`kid ${kid} is not the did:key key id of this private key (${key.kid})`)
  if (!PROOF_KEY_TYPES[proofType].includes(key.keyType))
    throw new Error(
      `${proofType} signs with ${PROOF_KEY_TYPES[proofType].join(', ')} keys, not ${key.keyType}`,
    )
  if (document.proof !== undefined) throw new Error('the document already has a proof')
  const bounds = boundsProblem(document)
  if (bounds) throw new Error(bounds)
  const copy = structuredClone(document)
  try {
    await addSuiteContext(copy, proofType)
  } catch (error) {
    throw new Error(describe(error, kid).join('; '))
  }
  const { jsigs, suite, purpose } = await libraries()
  const signer = signerOf(kid, privateKey, algorithmFor(proofType, key.keyType))
  // Whole seconds, as Ed25519Signature2018 and the CCG suites write `created` (xsd:dateTime without ms).
  const created = new Date(Math.floor((options.created ?? new Date()).getTime() / 1000) * 1000)
  try {
    return await jsigs.sign(copy, {
      suite: suite(proofType, signer, created),
      purpose: purpose(options.purpose),
      documentLoader: loaderFor(proofType),
    })
  } catch (error) {
    throw new Error(describe(error, kid).join('; '))
  }
}

/**
 * Verifies the document's one embedded proof for `purpose` (authentication: the proof's challenge and
 * domain must be the ones given). `allowed`: the proof types accepted (default all). Never fetches.
 */
export async function verifyLd(
  document: Record<string, unknown>,
  purpose: LdPurpose,
  options: { allowed?: readonly LdProofType[] } = {},
): Promise<LdVerifyResult> {
  const proofs = [document.proof].flat().filter((p) => p !== undefined)
  if (proofs.length !== 1 || !isObject(proofs[0]))
    return { verified: false, errors: [`expected exactly one embedded proof object, found ${proofs.length}`] }
  const proof = proofs[0]
  const proofType = proofTypeOf(proof)
  if (proofType === undefined)
    return {
      verified: false,
      errors: [
        `proof type ${JSON.stringify(proof.type)}${proof.type === 'DataIntegrityProof' ? ` with cryptosuite ${JSON.stringify(proof.cryptosuite)}` : ''} is not one vc-harness verifies (${LD_PROOF_TYPES.join(', ')})`,
      ],
    }
  if (options.allowed && !options.allowed.includes(proofType))
    return { verified: false, proofType, errors: [`proof type ${proofType} is not allowed here`] }
  const bounds = boundsProblem(document)
  if (bounds) return { verified: false, proofType, errors: [bounds] }
  // The proof options the purpose fixes, checked before anything is canonicalized (VC Data Integrity 1.0
  // §4.3 verify proof, step "proofPurpose"; §2.1 challenge and domain of an authentication proof).
  const optionErrors = purposeProblems(proof, purpose)
  if (optionErrors.length > 0) return { verified: false, proofType, errors: optionErrors }
  const named = isObject(proof.verificationMethod)
    ? proof.verificationMethod.id
    : (proof.verificationMethod ?? proof.creator)
  let key: LdKey
  try {
    if (typeof named !== 'string') throw new Error('the proof names no verificationMethod (or creator)')
    key = resolveLdKey(named)
    if (!PROOF_KEY_TYPES[proofType].includes(key.keyType))
      throw new Error(`${proofType} is not made with a ${key.keyType} key`)
  } catch (error) {
    return {
      verified: false,
      proofType,
      errors: [`verificationMethod ${JSON.stringify(named)}: ${(error as Error).message}`],
    }
  }
  const { jsigs, suite, purpose: purposeOf } = await libraries()
  // A proof written with `creator` (section 2.5's form, jsonld-signatures ≤ 5) defines it under security/v2
  // only, so its options are canonicalized there.
  const legacy = proof.verificationMethod === undefined && proof.creator !== undefined
  const attempt = (proofOptions: 'document' | 'security-v2' | undefined) =>
    // jsonld-signatures copies the document shallowly: give it its own deep copy.
    jsigs.verify(structuredClone(document), {
      suite: suite(proofType, undefined, undefined, proofOptions),
      purpose: purposeOf(purpose),
      documentLoader: loaderFor(proofType),
    })
  try {
    let result = await attempt(legacy ? 'security-v2' : undefined)
    // RsaSignature2018 proofs are made both ways (security/v2, or the document's contexts since
    // jsonld-signatures 6): a signature that fails one way is tried the other, over the same content.
    if (!result.verified && proofType === 'RsaSignature2018' && !legacy) {
      const other = await attempt('document')
      // the first way's failure explains it (a wrong challenge is not a signature problem)
      if (other.verified) result = other
    }
    if (!result.verified) return { verified: false, proofType, errors: describe(result.error, key.kid) }
  } catch (error) {
    return { verified: false, proofType, errors: describe(error, key.kid) }
  }
  return { verified: true, proofType, proof: structuredClone(proof), key }
}
