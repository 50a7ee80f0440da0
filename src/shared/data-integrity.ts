// Data Integrity (VC Data Model 2.0, cryptosuite eddsa-rdfc-2022) presentations, signed and verified offline:
// the document loader serves a fixed set of bundled contexts and did:key documents, nothing else.

import { sign as cryptoSign, type KeyObject } from 'node:crypto'
import { algForKey, DidKeyError, didKeyFromPublicKey, didOf, resolveDidKey } from './did-key.ts'
import { isObject } from './json.ts'
import { lazyImport } from './lazy.ts'
import { VC_JWT_MEDIA_TYPE } from './wire.ts'

// The Digital Bazaar libraries (jsonld, rdf-canonize, the bundled contexts: some 300 modules) load at the
// first proof signed or verified, once, not with this module.
const libraries = lazyImport(async () => {
  const [credentials, integrity, integrityContext, multikey, eddsa, multikeyContext, jsigs] =
    await Promise.all([
      import('@digitalbazaar/credentials-context'),
      import('@digitalbazaar/data-integrity'),
      import('@digitalbazaar/data-integrity-context'),
      import('@digitalbazaar/ed25519-multikey'),
      import('@digitalbazaar/eddsa-rdfc-2022-cryptosuite'),
      import('@digitalbazaar/multikey-context'),
      import('jsonld-signatures'),
    ])
  return {
    DataIntegrityProof: integrity.DataIntegrityProof,
    Ed25519Multikey: multikey,
    eddsaRdfc2022: eddsa.cryptosuite,
    jsigs: jsigs.default,
    AuthenticationProofPurpose: jsigs.default.purposes.AuthenticationProofPurpose,
    staticDocuments: new Map<string, unknown>([
      ...credentials.contexts,
      ...integrityContext.contexts,
      ...multikeyContext.contexts,
    ]) as ReadonlyMap<string, unknown>,
  }
})

export const VC_V2_CONTEXT = 'https://www.w3.org/ns/credentials/v2'
/**
 * The final VC 2.0 context has no `@vocab`; this W3C context adds one, so that types such as
 * `ServiceCredentialPresentation` (defined by no context) are signed as IRIs instead of failing safe mode.
 */
export const UNDEFINED_TERMS_CONTEXT = 'https://www.w3.org/ns/credentials/undefined-terms/v2'
const MULTIKEY_CONTEXT = 'https://w3id.org/security/multikey/v1'
const DID_CONTEXT = 'https://www.w3.org/ns/did/v1'
const CRYPTOSUITE = 'eddsa-rdfc-2022'
const ENVELOPED_JWT_PREFIX = `data:${VC_JWT_MEDIA_TYPE},`
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

// --- document loader -----------------------------------------------------------------------------------

type LoadedDocument = { document: unknown; documentUrl: string; contextUrl: null }

async function verificationMethodDocument(kid: string, did: string): Promise<Record<string, unknown>> {
  const { Ed25519Multikey } = await libraries()
  const key = await Ed25519Multikey.from({
    '@context': MULTIKEY_CONTEXT,
    type: 'Multikey',
    id: kid,
    controller: did,
    publicKeyMultibase: kid.slice(kid.indexOf('#') + 1),
  })
  return key.export({ publicKey: true, includeContext: true })
}

async function loadDidKey(url: string): Promise<Record<string, unknown>> {
  let didKey: ReturnType<typeof resolveDidKey>
  try {
    didKey = resolveDidKey(url)
  } catch (err) {
    if (err instanceof DidKeyError) throw new Error(`cannot resolve ${url}: ${err.message}`)
    throw err
  }
  if (didKey.alg !== 'EdDSA')
    throw new Error(`cannot resolve ${url}: Data Integrity needs an Ed25519 did:key`)
  const vm = await verificationMethodDocument(didKey.kid, didKey.did)
  if (url.includes('#')) return vm
  // The DID document. It starts with the DID v1 context, so jsonld-signatures uses it as is (no framing, so
  // the DID context itself is never loaded).
  const { '@context': _ignored, ...vmWithoutContext } = vm
  return {
    '@context': [DID_CONTEXT, MULTIKEY_CONTEXT],
    id: didKey.did,
    verificationMethod: [vmWithoutContext],
    authentication: [didKey.kid],
    assertionMethod: [didKey.kid],
    capabilityInvocation: [didKey.kid],
    capabilityDelegation: [didKey.kid],
  }
}

/** Static, offline JSON-LD document loader: bundled contexts and Ed25519 did:key documents only. */
export const documentLoader = async (url: string): Promise<LoadedDocument> => {
  const document = (await libraries()).staticDocuments.get(url)
  if (document !== undefined) return { document, documentUrl: url, contextUrl: null }
  if (typeof url === 'string' && url.startsWith('did:key:')) {
    return { document: await loadDidKey(url), documentUrl: url, contextUrl: null }
  }
  throw new Error(`document not allowed offline: ${url}`)
}

// --- signing ---------------------------------------------------------------------------------------------

export interface DiSigner {
  /** the verification method: the holder's key id */
  id: string
  algorithm: 'Ed25519'
  sign(input: { data: Uint8Array }): Promise<Uint8Array>
}

/** A Data Integrity signer over an Ed25519 node:crypto private key; `kid` must be that key's did:key key id. */
export function signerFromPrivateKey(kid: string, privateKey: KeyObject): DiSigner {
  if (privateKey.type !== 'private') throw new Error('signerFromPrivateKey needs a private key')
  if (algForKey(privateKey) !== 'EdDSA')
    throw new Error('Data Integrity eddsa-rdfc-2022 needs an Ed25519 key')
  const expected = didKeyFromPublicKey(privateKey)
  if (kid !== expected.kid) throw new Error(`kid ${kid} is not the did:key key id of this private key`)
  return {
    id: kid,
    algorithm: 'Ed25519',
    sign: async ({ data }) => cryptoSign(null, data, privateKey),
  }
}

/** Adds an eddsa-rdfc-2022 authentication proof; the input is not modified. */
export async function signPresentation(
  presentation: Record<string, unknown>,
  signer: DiSigner,
  options: { challenge: string; domain: string; created?: Date },
): Promise<Record<string, unknown>> {
  if (presentation.proof !== undefined) throw new Error('presentation already has a proof')
  const document = structuredClone(presentation)
  const { DataIntegrityProof, eddsaRdfc2022, AuthenticationProofPurpose, jsigs } = await libraries()
  const suite = new DataIntegrityProof({ signer, cryptosuite: eddsaRdfc2022, date: options.created })
  const purpose = new AuthenticationProofPurpose({ challenge: options.challenge, domain: options.domain })
  return jsigs.sign(document, { suite, purpose, documentLoader })
}

// --- verification ----------------------------------------------------------------------------------------

export type DiVerifyResult =
  | { verified: true; holderKid: string; proof: Record<string, unknown> }
  | { verified: false; errors: string[] }

function asArray(value: unknown): unknown[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** Checks everything but the signature; returns the errors (empty when the proof may be verified). */
function precheck(
  presentation: Record<string, unknown>,
  proof: Record<string, unknown>,
  options: { challenge: string; domain: string },
): string[] {
  const errors: string[] = []
  if (asArray(presentation['@context'])[0] !== VC_V2_CONTEXT) {
    errors.push(`presentation @context must start with ${VC_V2_CONTEXT}`)
  }
  if (!asArray(presentation.type).includes('VerifiablePresentation')) {
    errors.push('presentation type must include VerifiablePresentation')
  }
  if (proof.type !== 'DataIntegrityProof') errors.push('proof type is not DataIntegrityProof')
  if (proof.cryptosuite !== CRYPTOSUITE) errors.push(`cryptosuite is not ${CRYPTOSUITE}`)
  if (proof.proofPurpose !== 'authentication') errors.push('proofPurpose is not authentication')
  if (proof.challenge !== options.challenge) errors.push('challenge does not match')
  const domains = asArray(proof.domain)
  if (domains.length === 0 || !domains.includes(options.domain)) errors.push('domain does not match')
  if (typeof proof.proofValue !== 'string' || proof.proofValue.length === 0) errors.push('proofValue missing')
  if (typeof proof.expires === 'string' && Date.parse(proof.expires) < Date.now())
    errors.push('proof expired')

  const vm = proof.verificationMethod
  if (typeof vm !== 'string' || !vm.startsWith('did:key:') || !vm.includes('#')) {
    errors.push('verificationMethod is not a did:key key id')
    return errors
  }
  try {
    if (resolveDidKey(vm).alg !== 'EdDSA') errors.push('verificationMethod is not an Ed25519 did:key')
  } catch (err) {
    errors.push(`verificationMethod is not a valid did:key key id: ${(err as Error).message}`)
    return errors
  }
  const holder = presentation.holder
  if (holder !== undefined) {
    const holderId = isObject(holder) ? holder.id : holder
    if (holderId !== didOf(vm)) errors.push('holder does not match the verification method')
  }
  return errors
}

type ErrorLike = Error & {
  errors?: ErrorLike[]
  details?: { cause?: unknown; event?: { message?: string; details?: unknown } }
}

/** The innermost cause (jsonld wraps document loader errors in `details.cause`). */
function rootCause(error: ErrorLike): ErrorLike {
  let current = error
  for (let depth = 0; depth < 5; depth++) {
    const next = current.details?.cause ?? current.cause
    if (!(next instanceof Error)) break
    current = next as ErrorLike
  }
  return current
}

function describeFailure(error: ErrorLike | undefined): string[] {
  const causes = error?.errors?.length ? error.errors : error ? [error] : []
  if (causes.length === 0) return ['signature invalid']
  return causes.map((cause) => {
    const root = cause instanceof Error ? rootCause(cause) : undefined
    const message = root ? root.message : String(cause)
    if (message === 'Invalid signature.') return 'signature invalid'
    const event = root?.details?.event
    if (event?.message) {
      // a JSON-LD safe mode violation, e.g. a term no context defines
      return `presentation is not valid JSON-LD in safe mode: ${event.message} ${JSON.stringify(event.details ?? {})}`
    }
    return `proof verification failed: ${message}`
  })
}

/**
 * Verifies a VC 2.0 presentation secured with one eddsa-rdfc-2022 authentication proof by a did:key holder.
 * Embedded credentials are not verified here (enveloped JWT credentials are checked by their consumer).
 */
export async function verifyPresentation(
  presentation: unknown,
  options: { challenge: string; domain: string },
): Promise<DiVerifyResult> {
  if (!isObject(presentation)) return { verified: false, errors: ['presentation is not a JSON object'] }
  const proofs = asArray(presentation.proof)
  if (proofs.length === 0) return { verified: false, errors: ['proof missing'] }
  if (proofs.length > 1) return { verified: false, errors: ['expected exactly one proof'] }
  const proof = proofs[0]
  if (!isObject(proof)) return { verified: false, errors: ['proof is not a JSON object'] }

  const errors = precheck(presentation, proof, options)
  if (errors.length > 0) return { verified: false, errors }

  const { DataIntegrityProof, eddsaRdfc2022, AuthenticationProofPurpose, jsigs } = await libraries()
  const suite = new DataIntegrityProof({ cryptosuite: eddsaRdfc2022 })
  const purpose = new AuthenticationProofPurpose({ challenge: options.challenge, domain: options.domain })
  let result: Awaited<ReturnType<typeof jsigs.verify>>
  try {
    // jsonld-signatures copies the document shallowly; give it its own deep copy all the same
    result = await jsigs.verify(structuredClone(presentation), { suite, purpose, documentLoader })
  } catch (err) {
    return { verified: false, errors: [`proof verification failed: ${(err as Error).message}`] }
  }
  if (!result.verified) return { verified: false, errors: describeFailure(result.error) }
  return { verified: true, holderKid: proof.verificationMethod as string, proof: structuredClone(proof) }
}

// --- enveloped JWT credentials -----------------------------------------------------------------------------

export function envelopeJwtCredential(jwt: string): {
  '@context': string
  id: string
  type: 'EnvelopedVerifiableCredential'
} {
  return {
    '@context': VC_V2_CONTEXT,
    id: `${ENVELOPED_JWT_PREFIX}${jwt}`,
    type: 'EnvelopedVerifiableCredential',
  }
}

/** The JWT inside an `EnvelopedVerifiableCredential` with a `data:application/vc+jwt,` id, else undefined. */
export function unwrapEnvelopedCredential(entry: unknown): string | undefined {
  if (!isObject(entry)) return undefined
  if (!asArray(entry.type).includes('EnvelopedVerifiableCredential')) return undefined
  const id = entry.id
  if (typeof id !== 'string' || !id.startsWith(ENVELOPED_JWT_PREFIX)) return undefined
  const jwt = id.slice(ENVELOPED_JWT_PREFIX.length)
  return COMPACT_JWS.test(jwt) ? jwt : undefined
}

export function presentationTemplate(holder: string, credentialJwts: string[]): Record<string, unknown> {
  return {
    '@context': [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT],
    type: ['VerifiablePresentation', 'ServiceCredentialPresentation'],
    holder,
    verifiableCredential: credentialJwts.map(envelopeJwtCredential),
  }
}
