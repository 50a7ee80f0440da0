import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type JsonWebKey,
  type KeyObject,
  randomBytes,
  sign as signBytes,
  verify as verifyBytes,
} from 'node:crypto'
import type * as Mdoc from '@owf/mdoc'
import { isObject } from './json.ts'
import { lazyImport } from './lazy.ts'
import { parseCertificates, verifyX5c, X509Error } from './x509.ts'

// ISO/IEC 18013-5 mdocs (`mso_mdoc`; OpenID4VCI 1.0 Appendix A.2, OpenID4VP 1.0 Appendix B.2) on the
// OpenWallet Foundation's @owf/mdoc: its CBOR structures (IssuerSigned, the MSO, DeviceResponse,
// SessionTranscript) and COSE_Sign1, with node:crypto doing the cryptography through the library's pluggable
// MdocContext and our RFC 5280 path validation (x509.ts) judging the IACA chain. The service signs and
// verifies with it, the wallet verifies at receipt and presents: one implementation for both sides.
// The library (about 0.2 s to import) loads on first use: `prepareMdoc()` before any synchronous call here.

type MdocLib = typeof Mdoc

const loadMdoc = lazyImport(() => import('@owf/mdoc'))
let loaded: MdocLib | undefined

/** Loads @owf/mdoc (once); every other function of this module needs it loaded. */
export async function prepareMdoc(): Promise<MdocLib> {
  loaded ??= await loadMdoc()
  return loaded
}

function lib(): MdocLib {
  if (!loaded) throw new Error('the mdoc library is not loaded yet: await prepareMdoc() first')
  return loaded
}

/** The format identifier (OpenID4VCI 1.0 Appendix A.2, OpenID4VP 1.0 Appendix B.2). */
export const MDOC_FORMAT = 'mso_mdoc' as const

/** ISO 18013-5 §7.1: the mDL's doctype and namespace; the EUDI PID's (ARF PID Rulebook). */
export const MDL_DOCTYPE = 'org.iso.18013.5.1.mDL'
export const MDL_NAMESPACE = 'org.iso.18013.5.1'
export const PID_DOCTYPE = 'eu.europa.ec.eudi.pid.1'

/**
 * The namespace a doctype's own elements live in, for claims given without one: the mDL's is
 * `org.iso.18013.5.1`; a doctype that names its namespace itself (the EUDI PID) is its own.
 */
export function defaultNamespace(docType: string): string {
  return docType === MDL_DOCTYPE ? MDL_NAMESPACE : docType
}

/** An mdoc's element values by namespace, as JSON: what a template submits and what the views show. */
export type MdocNamespaces = Record<string, Record<string, unknown>>

/** A Token Status List reference in the MSO (ISO 18013-5 2nd edition; IETF Token Status List §6.3). */
export interface MdocStatus {
  idx: number
  uri: string
}

export interface MdocValidity {
  signed: Date
  validFrom: Date
  validUntil: Date
  expectedUpdate?: Date
}

// ---- JSON ⇄ CBOR element values ----

const FULL_DATE = /^\d{4}-\d{2}-\d{2}$/
/** Elements whose value is a byte string (ISO 18013-5 Table 5: portrait, signature; biometric templates). */
const BYTE_ELEMENT = /^(portrait|signature_usual_mark|biometric_template_.+|.+_image)$/
/** Elements whose value is a full-date (ISO 18013-5 Table 5, RFC 8943 tag 1004). */
const DATE_ELEMENT = /(^|_)date$|^birth_date$/

/**
 * A JSON element value as the CBOR value ISO 18013-5 Table 5 gives it: `YYYY-MM-DD` in an element named
 * `…_date` a full-date (tag 1004), a base64/base64url string in `portrait`, `signature_usual_mark` or
 * `…_image` a byte string, everything else as it is (objects as maps).
 */
export function toElementValue(element: string, value: unknown): unknown {
  const { DateOnly } = lib()
  if (typeof value === 'string' && DATE_ELEMENT.test(element) && FULL_DATE.test(value))
    return new DateOnly(value)
  if (typeof value === 'string' && BYTE_ELEMENT.test(element)) {
    const text = value.replace(/^data:[^,]*;base64,/, '')
    return new Uint8Array(
      Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64'),
    )
  }
  return value
}

/** A decoded CBOR element value as JSON: full-dates `YYYY-MM-DD`, tdates ISO, byte strings base64url. */
export function fromElementValue(value: unknown): unknown {
  const { DateOnly } = lib()
  if (value instanceof DateOnly) return value.toISOString()
  if (value instanceof Date) return value.toISOString()
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64url')
  if (value instanceof Map) {
    return Object.fromEntries([...value.entries()].map(([k, v]) => [String(k), fromElementValue(v)]))
  }
  if (Array.isArray(value)) return value.map(fromElementValue)
  if (isObject(value) && !('tag' in value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromElementValue(v)]))
  }
  return value
}

// ---- the crypto context: node:crypto signs, hashes and verifies; x509.ts validates chains ----

const COSE_ALGS: Record<number, { name: string; hash: string | null; curve?: string }> = {
  [-7]: { name: 'ES256', hash: 'sha256', curve: 'prime256v1' },
  [-35]: { name: 'ES384', hash: 'sha384', curve: 'secp384r1' },
  [-8]: { name: 'EdDSA', hash: null },
}

/** A signing function for COSE_Sign1 `toBeSigned` bytes (IEEE P1363 signature for ECDSA). */
export type CoseSigner = (toBeSigned: Uint8Array) => Uint8Array | Promise<Uint8Array>

function keyObjectOf(key: Mdoc.CoseKey, which: 'public' | 'private'): KeyObject {
  const jwk = key.jwk as JsonWebKey
  if (which === 'public') {
    const { d: _d, ...pub } = jwk
    return createPublicKey({ key: pub, format: 'jwk' })
  }
  return createPrivateKey({ key: jwk, format: 'jwk' })
}

function algOf(sign1: { protectedHeaders: Mdoc.ProtectedHeaders }): number | undefined {
  const alg = sign1.protectedHeaders.headers?.get(1)
  return typeof alg === 'number' ? alg : undefined
}

function coseSign(toBeSigned: Uint8Array, key: KeyObject, alg: number): Uint8Array {
  const a = COSE_ALGS[alg]
  if (!a) throw new Error(`COSE algorithm ${alg} is not supported (ES256, ES384, EdDSA are)`)
  return new Uint8Array(signBytes(a.hash, toBeSigned, { key, dsaEncoding: 'ieee-p1363' }))
}

function coseVerify(toBeSigned: Uint8Array, signature: Uint8Array, key: KeyObject, alg: number): boolean {
  const a = COSE_ALGS[alg]
  if (!a) return false
  return verifyBytes(a.hash, toBeSigned, { key, dsaEncoding: 'ieee-p1363' }, signature)
}

/** The @owf/mdoc context on node:crypto; `signer` replaces the private key a CoseKey would carry. */
function context(signer?: CoseSigner): Mdoc.MdocContext {
  const { CoseKey } = lib()
  return {
    crypto: {
      random: (length) => new Uint8Array(randomBytes(length)),
      digest: ({ digestAlgorithm, bytes }) =>
        new Uint8Array(createHash(digestAlgorithm.replace('-', '').toLowerCase()).update(bytes).digest()),
      calculateEphemeralMacKey: () => {
        throw new Error('mdoc MAC authentication (ISO 18013-5 §9.1.3.5) is not used over OpenID4VP')
      },
    },
    cose: {
      sign1: {
        sign: ({ toBeSigned, key, algorithm }) => {
          if (signer) return signer(toBeSigned)
          return coseSign(toBeSigned, keyObjectOf(key, 'private'), algorithm ?? -7)
        },
        verify: ({ key, sign1 }) => {
          const alg = algOf(sign1)
          if (alg === undefined) return false
          return coseVerify(sign1.toBeSigned, sign1.signature, keyObjectOf(key, 'public'), alg)
        },
      },
      mac0: {
        sign: () => {
          throw new Error('mdoc MAC authentication is not used over OpenID4VP')
        },
        verify: () => false,
      },
    },
    x509: {
      getIssuerNameField: ({ certificate, field }) => {
        const [cert] = parseCertificates(certificate, 'certificate')
        return cert ? cert.subjectName.getField(field) : []
      },
      getPublicKey: ({ certificate }) => {
        const [cert] = parseCertificates(certificate, 'certificate')
        if (!cert) throw new Error('no certificate')
        const key = createPublicKey({ key: Buffer.from(cert.publicKey.rawData), format: 'der', type: 'spki' })
        return CoseKey.fromJwk(key.export({ format: 'jwk' }) as Record<string, unknown>)
      },
      verifyCertificateChain: async () => {
        // issuerAuth's chain is judged by verifyIssuerAuth (x509.ts); the library's own check is disabled
        throw new Error('certificate chains are validated by vc-harness, not by the mdoc library')
      },
      getCertificateData: ({ certificate }) => {
        const [cert] = parseCertificates(certificate, 'certificate')
        if (!cert) throw new Error('no certificate')
        return {
          issuerName: cert.issuer,
          subjectName: cert.subject,
          serialNumber: cert.serialNumber,
          thumbprint: createHash('sha256').update(Buffer.from(cert.rawData)).digest('hex'),
          notBefore: cert.notBefore,
          notAfter: cert.notAfter,
          pem: cert.toString('pem'),
        }
      },
    },
  }
}

// ---- keys ----

/** A JWK's public members, as the COSE_Key of an MSO's deviceKeyInfo takes them (RFC 9053 §7.1.1). */
function publicJwk(jwk: JsonWebKey): Record<string, unknown> {
  const { d: _private, ...pub } = jwk
  return pub as Record<string, unknown>
}

/** A COSE_Key's public key as a JWK (kty, crv, x, y). */
export function jwkOfCoseKey(key: Mdoc.CoseKey): JsonWebKey {
  const { d: _private, ...pub } = key.jwk as JsonWebKey
  return createPublicKey({ key: pub, format: 'jwk' }).export({ format: 'jwk' })
}

const COSE_ALG_OF_KEY = (key: KeyObject): number => {
  if (key.asymmetricKeyType === 'ed25519') return -8
  const curve = key.asymmetricKeyDetails?.namedCurve
  if (curve === 'prime256v1') return -7
  if (curve === 'secp384r1') return -35
  throw new Error(`a ${key.asymmetricKeyType} ${curve ?? ''} key signs no mdoc (ES256, ES384 or EdDSA)`)
}

// ---- issuing (OpenID4VCI 1.0 Appendix A.2.4: the credential is base64url IssuerSigned) ----

export interface MdocIssueInput {
  docType: string
  namespaces: MdocNamespaces
  /** The holder's public key from its key proof: the MSO's deviceKeyInfo.deviceKey. */
  deviceKey: JsonWebKey
  /** The document signer: its key and its chain (standard base64 DER, the DS certificate first). */
  signer: { privateKey: KeyObject; x5chain: readonly string[] }
  validity: MdocValidity
  status?: MdocStatus
}

/** A document signer: its key and its chain (standard base64 DER, the DS certificate first). */
export interface MdocSigner {
  privateKey: KeyObject
  x5chain: readonly string[]
}

/** What an MSO says besides the digests, as issueMdoc and reissueMdoc sign it. */
interface MsoContent {
  docType: string
  valueDigests: Mdoc.ValueDigests
  deviceKeyInfo: Mdoc.DeviceKeyInfo
  validity: MdocValidity
  status?: MdocStatus | undefined
}

/**
 * The MSO (ISO 18013-5 §9.1.2.4) signed as issuerAuth, a COSE_Sign1 whose unprotected header carries the
 * x5chain. The library's MSO has no `status`; it is added to the same map (ISO 18013-5 2nd edition, Token
 * Status List §6.3: `status.status_list {idx, uri}`) before the one signature.
 */
async function signMso(m: MdocLib, content: MsoContent, signer: MdocSigner): Promise<Mdoc.IssuerAuth> {
  const mso = m.MobileSecurityObject.create({
    docType: content.docType,
    digestAlgorithm: 'SHA-256',
    valueDigests: content.valueDigests,
    deviceKeyInfo: content.deviceKeyInfo,
    validityInfo: m.ValidityInfo.create(content.validity),
  })
  if (content.status) {
    const list = new Map<string, unknown>([
      ['idx', content.status.idx],
      ['uri', content.status.uri],
    ])
    mso.decodedStructure.set('status' as never, new Map([['status_list', list]]) as never)
  }
  const alg = COSE_ALG_OF_KEY(signer.privateKey)
  const certificates = signer.x5chain.map((b64) => new Uint8Array(Buffer.from(b64, 'base64')))
  return m.IssuerAuth.create(
    {
      payload: mso,
      protectedHeaders: new Map([[1, alg]]) as never,
      // §9.1.2.4: x5chain (label 33), one bstr for a single certificate, else an array
      unprotectedHeaders: new Map([
        [33, certificates.length === 1 ? certificates[0] : certificates],
      ]) as never,
      signingKey: m.CoseKey.fromJwk(signer.privateKey.export({ format: 'jwk' }) as Record<string, unknown>),
      algorithm: alg,
    },
    context(),
  )
}

const digestOf = (item: Mdoc.IssuerSignedItem) =>
  new Uint8Array(
    createHash('sha256')
      .update(item.encode({ asDataItem: true }))
      .digest(),
  )

/** The MSO's valueDigests of `namespaces` (SHA-256 of each IssuerSignedItemBytes). */
function valueDigestsOf(m: MdocLib, namespaces: Map<string, Mdoc.IssuerSignedItem[]>): Mdoc.ValueDigests {
  const digests = new Map<string, Map<number, Uint8Array>>()
  for (const [ns, items] of namespaces) digests.set(ns, new Map(items.map((i) => [i.digestId, digestOf(i)])))
  return m.ValueDigests.create({ digests })
}

export interface MdocIssueInput {
  docType: string
  namespaces: MdocNamespaces
  /** The holder's public key from its key proof: the MSO's deviceKeyInfo.deviceKey. */
  deviceKey: JsonWebKey
  signer: MdocSigner
  validity: MdocValidity
  status?: MdocStatus
}

/**
 * Signs an mdoc: an IssuerSignedItem per element (a random digestID, unique in its namespace, and 32 random
 * salt bytes; ISO 18013-5 §9.1.2.5), the MSO with their SHA-256 value digests, the device key, validity
 * and status, signed once as issuerAuth. Returns base64url IssuerSigned (OpenID4VCI 1.0 A.2.4).
 */
export async function issueMdoc(input: MdocIssueInput): Promise<string> {
  const m = await prepareMdoc()
  const namespaces = new Map<string, Mdoc.IssuerSignedItem[]>()
  for (const [ns, elements] of Object.entries(input.namespaces)) {
    const ids = new Set<number>()
    namespaces.set(
      ns,
      Object.entries(elements).map(([elementIdentifier, value]) => {
        let digestId = randomBytes(4).readUInt32BE()
        while (ids.has(digestId)) digestId = randomBytes(4).readUInt32BE()
        ids.add(digestId)
        return m.IssuerSignedItem.fromOptions({
          digestId,
          random: new Uint8Array(randomBytes(32)),
          elementIdentifier,
          elementValue: toElementValue(elementIdentifier, value),
        })
      }),
    )
  }
  // An mdoc ends no later than its document signer certificate: a verifier judges the chain now, so an MSO
  // outliving its DS would fail as soon as the DS expired (ISO 18013-5 §9.3.3).
  const dsUntil = signerNotAfter(input.signer.x5chain[0])
  const validity =
    dsUntil !== undefined && input.validity.validUntil.getTime() > dsUntil
      ? { ...input.validity, validUntil: new Date(dsUntil) }
      : input.validity
  const issuerAuth = await signMso(
    m,
    {
      docType: input.docType,
      valueDigests: valueDigestsOf(m, namespaces),
      deviceKeyInfo: m.DeviceKeyInfo.create({ deviceKey: m.DeviceKey.fromJwk(publicJwk(input.deviceKey)) }),
      validity,
      status: input.status,
    },
    input.signer,
  )
  return m.IssuerSigned.create({
    issuerNamespaces: m.IssuerNamespaces.create({ issuerNamespaces: namespaces }),
    issuerAuth,
  }).encodedForOid4Vci
}

/** The notAfter (ms) of a base64 DER certificate, remembered per certificate. */
const NOT_AFTER = new Map<string, number>()
function signerNotAfter(der: string | undefined): number | undefined {
  if (der === undefined) return undefined
  let until = NOT_AFTER.get(der)
  if (until === undefined) {
    until = parseCertificates(
      Buffer.from(der, 'base64'),
      'document signer certificate',
    )[0]?.notAfter.getTime()
    if (until === undefined) return undefined
    if (NOT_AFTER.size > 64) NOT_AFTER.clear()
    NOT_AFTER.set(der, until)
  }
  return until
}

/**
 * An issued mdoc with its MSO changed and signed again (by `signer`: the genuine document signer, or one
 * outside the IACA): another device key, another validity. Faults of the wallet test plans use it.
 */
export async function reissueMdoc(
  encoded: string,
  change: { deviceKey?: JsonWebKey; validity?: MdocValidity },
  signer: MdocSigner,
): Promise<string> {
  const m = await prepareMdoc()
  const doc = decodeIssuerSigned(encoded)
  const mso = doc.issuerSigned.issuerAuth.mobileSecurityObject
  const issuerAuth = await signMso(
    m,
    {
      docType: doc.docType,
      valueDigests: mso.valueDigests,
      deviceKeyInfo: change.deviceKey
        ? m.DeviceKeyInfo.create({ deviceKey: m.DeviceKey.fromJwk(publicJwk(change.deviceKey)) })
        : mso.deviceKeyInfo,
      validity: change.validity ?? doc.validity,
      status: doc.status,
    },
    signer,
  )
  return m.IssuerSigned.create({ issuerNamespaces: doc.issuerSigned.issuerNamespaces, issuerAuth })
    .encodedForOid4Vci
}

/** An issued mdoc whose first element's value changed and whose MSO did not (ISO 18013-5 §9.3.1 digest check). */
export async function tamperMdocElement(encoded: string): Promise<string> {
  const m = await prepareMdoc()
  const doc = decodeIssuerSigned(encoded)
  const namespaces = new Map(doc.issuerSigned.issuerNamespaces.issuerNamespaces)
  const [ns, items] = [...namespaces.entries()][0] ?? []
  const first = items?.[0]
  if (ns === undefined || !items || !first) throw new Error('the mdoc has no element to tamper with')
  const value = first.elementValue
  namespaces.set(ns, [
    m.IssuerSignedItem.fromOptions({
      digestId: first.digestId,
      random: first.random,
      elementIdentifier: first.elementIdentifier,
      elementValue:
        typeof value === 'string' ? `${value} (altered)` : typeof value === 'boolean' ? !value : 'altered',
    }),
    ...items.slice(1),
  ])
  return m.IssuerSigned.create({
    issuerNamespaces: m.IssuerNamespaces.create({ issuerNamespaces: namespaces }),
    issuerAuth: doc.issuerSigned.issuerAuth,
  }).encodedForOid4Vci
}

// ---- reading (nothing here is trusted before verifyIssuerAuth) ----

/** An mdoc as read: what the MSO and the disclosed items say. */
export interface ReadMdoc {
  docType: string
  /** The disclosed elements (every one, for an issued credential), values as JSON. */
  namespaces: MdocNamespaces
  validity: MdocValidity
  deviceKey: JsonWebKey
  status?: MdocStatus
  /** issuerAuth's algorithm name (ES256). */
  alg: string
  /** The x5chain, DER. */
  x5chain: Uint8Array[]
  /** The decoded structure, for verifyIssuerAuth and presentMdoc. */
  issuerSigned: Mdoc.IssuerSigned
}

/** Bounds on what is decoded from an untrusted mdoc (issue 30's rule: bound work before trust). */
export const MDOC_LIMITS = { maxBytes: 256 * 1024, maxDocuments: 10, maxElements: 200 } as const

function statusOf(mso: Mdoc.MobileSecurityObject): MdocStatus | undefined {
  const status = mso.decodedStructure.get('status' as never) as unknown
  if (status === undefined) return undefined
  const list = status instanceof Map ? status.get('status_list') : undefined
  const idx = list instanceof Map ? list.get('idx') : undefined
  const uri = list instanceof Map ? list.get('uri') : undefined
  if (!Number.isInteger(idx) || (idx as number) < 0 || typeof uri !== 'string') {
    throw new Error('MSO status is not {status_list: {idx, uri}} (Token Status List §6.3)')
  }
  return { idx: idx as number, uri }
}

/** Reads a decoded IssuerSigned; throws an Error saying what is wrong. */
export function readIssuerSigned(issuerSigned: Mdoc.IssuerSigned): ReadMdoc {
  const auth = issuerSigned.issuerAuth
  const mso = auth.mobileSecurityObject
  const namespaces: MdocNamespaces = {}
  let count = 0
  for (const [ns, items] of issuerSigned.issuerNamespaces?.issuerNamespaces ?? new Map()) {
    const elements: Record<string, unknown> = {}
    for (const item of items) {
      if (++count > MDOC_LIMITS.maxElements)
        throw new Error(`holds more than ${MDOC_LIMITS.maxElements} elements`)
      elements[item.elementIdentifier] = fromElementValue(item.elementValue)
    }
    namespaces[ns] = elements
  }
  const v = mso.validityInfo
  const chain = auth.x5chain ?? []
  if (chain.length === 0) throw new Error('issuerAuth has no x5chain (ISO 18013-5 §9.1.2.4)')
  return {
    docType: mso.docType,
    namespaces,
    validity: {
      signed: v.signed,
      validFrom: v.validFrom,
      validUntil: v.validUntil,
      ...(v.expectedUpdate ? { expectedUpdate: v.expectedUpdate } : {}),
    },
    deviceKey: jwkOfCoseKey(mso.deviceKeyInfo.deviceKey),
    ...(statusOf(mso) ? { status: statusOf(mso) as MdocStatus } : {}),
    alg: auth.signatureAlgorithmName,
    x5chain: chain,
    issuerSigned,
  }
}

function bytesOfBase64url(text: unknown, what: string): Uint8Array {
  if (typeof text !== 'string' || !/^[A-Za-z0-9_-]+$/.test(text)) throw new Error(`${what} is not base64url`)
  const bytes = Buffer.from(text, 'base64url')
  if (bytes.length > MDOC_LIMITS.maxBytes)
    throw new Error(`${what} is larger than ${MDOC_LIMITS.maxBytes} bytes`)
  return new Uint8Array(bytes)
}

/** Decodes a base64url IssuerSigned (an issued mdoc, OpenID4VCI 1.0 A.2.4). */
export function decodeIssuerSigned(encoded: unknown): ReadMdoc {
  const bytes = bytesOfBase64url(encoded, 'the mdoc')
  let decoded: Mdoc.IssuerSigned
  try {
    decoded = lib().IssuerSigned.decode(bytes)
  } catch (error) {
    throw new Error(`is not a CBOR IssuerSigned structure: ${firstLine(error)}`)
  }
  return readIssuerSigned(decoded)
}

/** Re-encodes an IssuerSigned (after selection or a deliberate fault) as OpenID4VCI carries it. */
export const encodeIssuerSigned = (issuerSigned: Mdoc.IssuerSigned): string => issuerSigned.encodedForOid4Vci

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0]

// ---- verifying the issuer's side ----

export type IssuerAuthResult =
  | { ok: true; issuer: string; anchor: string; issuerKey: KeyObject }
  | { ok: false; reason: string }

/**
 * Verifies issuerAuth (ISO 18013-5 §9.3.1): the x5chain to one of `trustAnchors` (IACA roots, RFC 5280 path
 * validation at `now`), the COSE_Sign1 signature by the DS certificate's key, the MSO's docType against the
 * document's, and the digest of every present IssuerSignedItem against the MSO's valueDigests. Validity and
 * status are the pipeline's (they are judged for every format alike).
 */
export async function verifyIssuerAuth(
  doc: ReadMdoc,
  options: { trustAnchors: readonly string[]; now: number; docType?: string },
): Promise<IssuerAuthResult> {
  await prepareMdoc()
  const auth = doc.issuerSigned.issuerAuth
  const x5c = doc.x5chain.map((der) => Buffer.from(der).toString('base64'))
  let chain: Awaited<ReturnType<typeof verifyX5c>>
  try {
    chain = await verifyX5c(x5c, options.trustAnchors, options.now)
  } catch (error) {
    if (!(error instanceof X509Error)) throw error
    return {
      ok: false,
      reason:
        options.trustAnchors.length === 0
          ? 'issuerAuth names its document signer by an x5chain, and this verifier has no IACA trust anchor configured'
          : `issuerAuth x5chain: ${error.message}`,
    }
  }
  const alg = algOf(auth)
  if (alg === undefined || !COSE_ALGS[alg]) {
    return { ok: false, reason: `issuerAuth algorithm ${String(alg)} is not supported (ES256, ES384, EdDSA)` }
  }
  if (!coseVerify(auth.toBeSigned, auth.signature, chain.publicKey, alg)) {
    return { ok: false, reason: 'issuerAuth signature does not verify with the document signer certificate' }
  }
  if (options.docType !== undefined && options.docType !== doc.docType) {
    return { ok: false, reason: `the document's docType ${options.docType} is not the MSO's ${doc.docType}` }
  }
  const mso = auth.mobileSecurityObject
  const digests = mso.valueDigests.valueDigests
  for (const [ns, items] of doc.issuerSigned.issuerNamespaces?.issuerNamespaces ?? new Map()) {
    for (const item of items) {
      if (!digests.get(ns)?.has(item.digestId)) {
        return {
          ok: false,
          reason: `${ns}/${item.elementIdentifier}: its digestID ${item.digestId} is not in the MSO`,
        }
      }
      const expected = digests.get(ns)?.get(item.digestId)
      if (!expected || !Buffer.from(expected).equals(digestOf(item))) {
        return {
          ok: false,
          reason: `${ns}/${item.elementIdentifier}: its value does not match its digest in the MSO (ISO 18013-5 §9.3.1)`,
        }
      }
    }
  }
  return {
    ok: true,
    issuer: chain.leaf.subject,
    anchor: chain.anchor.toString('pem'),
    issuerKey: chain.publicKey,
  }
}

// ---- presenting (OpenID4VP 1.0 Appendix B.2.6: a base64url DeviceResponse) ----

/** What the OpenID4VP 1.0 SessionTranscript binds (Appendix B.2.6.1, `OpenID4VPHandover`). */
export interface Oid4vpHandover {
  clientId: string
  nonce: string
  /** base64url SHA-256 JWK thumbprint of the verifier's response encryption key; absent: null. */
  jwkThumbprint?: string | undefined
  responseUri: string
}

/**
 * OpenID4VP 1.0 Appendix B.2.6.1: SessionTranscript = [null, null, ["OpenID4VPHandover",
 * SHA-256(CBOR([client_id, nonce, jwkThumbprint or null, response_uri]))]].
 */
export async function oid4vpSessionTranscript(handover: Oid4vpHandover): Promise<Mdoc.SessionTranscript> {
  const m = await prepareMdoc()
  return m.SessionTranscript.forOid4Vp(
    {
      clientId: handover.clientId,
      nonce: handover.nonce,
      responseUri: handover.responseUri,
      ...(handover.jwkThumbprint !== undefined && {
        jwkThumbprint: new Uint8Array(Buffer.from(handover.jwkThumbprint, 'base64url')),
      }),
    },
    context(),
  )
}

/** What the SessionTranscript of a DC API presentation binds (OpenID4VP 1.0 Appendix B.2.6.2). */
export interface DcApiHandover {
  /** the origin the platform handed the wallet, without the `origin:` prefix */
  origin: string
  nonce: string
  /** base64url SHA-256 JWK thumbprint of the verifier's response encryption key (dc_api.jwt); absent: null */
  jwkThumbprint?: string | undefined
}

/**
 * OpenID4VP 1.0 Appendix B.2.6.2: SessionTranscript = [null, null, ["OpenID4VPDCAPIHandover",
 * SHA-256(CBOR([origin, nonce, jwkThumbprint or null]))]], when the request came over the DC API.
 */
export async function dcApiSessionTranscript(handover: DcApiHandover): Promise<Mdoc.SessionTranscript> {
  const m = await prepareMdoc()
  return m.SessionTranscript.forOid4VpDcApi(
    {
      origin: handover.origin,
      nonce: handover.nonce,
      ...(handover.jwkThumbprint !== undefined && {
        jwkThumbprint: new Uint8Array(Buffer.from(handover.jwkThumbprint, 'base64url')),
      }),
    },
    context(),
  )
}

export interface PresentMdocInput {
  /** The mdocs as issued (base64url IssuerSigned), each with the elements to disclose by namespace. */
  documents: readonly { issuerSigned: string; disclose: Record<string, readonly string[]> }[]
  sessionTranscript: Mdoc.SessionTranscript
  /** Signs DeviceAuthentication with the device key (the MSO's deviceKey; another one on purpose). */
  deviceSigner: { sign: CoseSigner; alg: 'ES256' | 'ES384' | 'EdDSA' }
  /** Changes an IssuerSignedItem value after selection (a deliberate fault): namespace, element, value. */
  tamper?: { namespace: string; element: string; value: unknown }
}

const COSE_ALG_OF_NAME = { ES256: -7, ES384: -35, EdDSA: -8 } as const

/**
 * A DeviceResponse (ISO 18013-5 §8.3.2.1.2.2) disclosing exactly the requested elements of each mdoc, with a
 * deviceSignature over DeviceAuthentication (§9.1.3.4) under the given SessionTranscript.
 */
export async function presentMdoc(input: PresentMdocInput): Promise<string> {
  const m = await prepareMdoc()
  const ctx = context(input.deviceSigner.sign)
  const documents: Mdoc.Document[] = []
  for (const { issuerSigned: encoded, disclose } of input.documents) {
    const doc = decodeIssuerSigned(encoded)
    const selected = new Map<string, Mdoc.IssuerSignedItem[]>()
    for (const [ns, elements] of Object.entries(disclose)) {
      const items = doc.issuerSigned.getIssuerNamespace(ns) ?? []
      const picked = items.filter((item) => elements.includes(item.elementIdentifier))
      if (picked.length > 0) selected.set(ns, picked)
    }
    if (input.tamper) {
      const items = selected.get(input.tamper.namespace)
      const index = items?.findIndex((i) => i.elementIdentifier === input.tamper?.element) ?? -1
      if (!items || index < 0)
        throw new Error(`cannot tamper with ${input.tamper.namespace}/${input.tamper.element}: not disclosed`)
      const original = items[index] as Mdoc.IssuerSignedItem
      items[index] = m.IssuerSignedItem.fromOptions({
        digestId: original.digestId,
        random: original.random,
        elementIdentifier: original.elementIdentifier,
        elementValue: toElementValue(original.elementIdentifier, input.tamper.value),
      })
    }
    const issuerSigned = m.IssuerSigned.create({
      issuerNamespaces: m.IssuerNamespaces.create({ issuerNamespaces: selected }),
      issuerAuth: doc.issuerSigned.issuerAuth,
    })
    const deviceNamespaces = m.DeviceNamespaces.create({ deviceNamespaces: new Map() })
    const deviceAuthentication = m.DeviceAuthentication.create({
      sessionTranscript: input.sessionTranscript,
      docType: doc.docType,
      deviceNamespaces,
    })
    const alg = COSE_ALG_OF_NAME[input.deviceSigner.alg]
    const deviceSignature = await m.DeviceSignature.create(
      {
        protectedHeaders: new Map([[1, alg]]) as never,
        unprotectedHeaders: new Map() as never,
        detachedPayload: deviceAuthentication.encode({ asDataItem: true }),
        signingKey: m.CoseKey.create({ keyType: m.KeyType.Ec }),
        algorithm: alg,
      },
      ctx,
    )
    documents.push(
      m.Document.create({
        docType: doc.docType,
        issuerSigned,
        deviceSigned: m.DeviceSigned.create({
          deviceNamespaces,
          deviceAuth: m.DeviceAuth.create({ deviceSignature }),
        }),
      }),
    )
  }
  const response = m.DeviceResponse.fromDecodedStructure(
    new m.TypedMap([
      ['version', '1.0'],
      ['documents', documents],
      ['status', 0],
    ]) as never,
  )
  return response.encodedForOid4Vp
}

// ---- reading and verifying a DeviceResponse ----

export interface PresentedMdoc extends ReadMdoc {
  /** The document as presented, for the device signature check. */
  document: Mdoc.Document
}

/** Decodes a base64url DeviceResponse; throws an Error saying what is wrong. */
export function decodeDeviceResponse(encoded: unknown): { status: number; documents: PresentedMdoc[] } {
  const bytes = bytesOfBase64url(encoded, 'the DeviceResponse')
  let response: Mdoc.DeviceResponse
  try {
    response = lib().DeviceResponse.decode(bytes)
  } catch (error) {
    throw new Error(`is not a CBOR DeviceResponse: ${firstLine(error)}`)
  }
  const docs = response.documents ?? []
  if (docs.length > MDOC_LIMITS.maxDocuments)
    throw new Error(`holds more than ${MDOC_LIMITS.maxDocuments} documents`)
  return {
    status: response.status,
    documents: docs.map((document) => {
      const read = readIssuerSigned(document.issuerSigned)
      if (document.docType !== read.docType) {
        throw new Error(`a document's docType ${document.docType} is not its MSO's ${read.docType}`)
      }
      return { ...read, document }
    }),
  }
}

/**
 * ISO 18013-5 §9.1.3.6: the deviceSignature over DeviceAuthentication with `transcript`, by the MSO's device
 * key. Returns why it fails, or undefined when it verifies.
 */
export function deviceSignatureFailure(
  doc: PresentedMdoc,
  transcript: Mdoc.SessionTranscript,
): string | undefined {
  const m = lib()
  const { deviceAuth, deviceNamespaces } = doc.document.deviceSigned
  const signature = deviceAuth.deviceSignature
  if (!signature) return 'the document has no deviceSignature (deviceMac is not used over OpenID4VP)'
  const alg = algOf(signature)
  if (alg === undefined || !COSE_ALGS[alg])
    return `the deviceSignature algorithm ${String(alg)} is not supported`
  signature.detachedPayload = m.DeviceAuthentication.create({
    sessionTranscript: transcript,
    docType: doc.document.docType,
    deviceNamespaces,
  }).encode({ asDataItem: true })
  let key: KeyObject
  try {
    key = createPublicKey({ key: doc.deviceKey, format: 'jwk' })
  } catch (error) {
    return `the MSO's deviceKey is not usable: ${firstLine(error)}`
  }
  return coseVerify(signature.toBeSigned, signature.signature, key, alg)
    ? undefined
    : 'the deviceSignature does not verify with the MSO’s deviceKey over DeviceAuthentication with this exchange’s SessionTranscript'
}
