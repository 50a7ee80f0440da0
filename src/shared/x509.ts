import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomBytes,
  webcrypto,
  X509Certificate,
} from 'node:crypto'
import type * as x509 from '@peculiar/x509'
import { lazyRequire } from './lazy.ts'

// X.509 for both sides of the wire (HAIP asks for x509 issuer keys): a test CA and leaf certificates for the
// service, `x5c` arrays (RFC 7515 §4.1.6), path validation to configured trust anchors (RFC 5280 §6) for the
// wallet and the verifier, and the OpenID4VP 1.0 `x509_hash` client identifier value.
// The service, the wallet and the verifier import this file; it imports nothing of theirs.

// @peculiar/x509 (CommonJS: its ASN.1 schemas, tsyringe) loads at the first certificate parsed or made, not
// with this module: a service whose configuration names no certificate starts without it.
const reflectMetadata = lazyRequire<unknown>('reflect-metadata')
const peculiarX509 = lazyRequire<typeof x509>('@peculiar/x509')
let loaded: typeof x509 | undefined
function x509Lib(): typeof x509 {
  if (loaded) return loaded
  // The polyfill first: tsyringe, a dependency of @peculiar/x509, throws at load without a Reflect metadata API.
  reflectMetadata()
  const lib = peculiarX509()
  lib.cryptoProvider.set(webcrypto as unknown as Crypto)
  loaded = lib
  return lib
}

const P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const
/** A chain longer than this is refused before any signature is checked (bounded work per credential). */
const MAX_CHAIN = 8
const DAY = 86_400_000

export class X509Error extends Error {
  override name = 'X509Error'
}

/** A certificate as PEM text, standard base64 DER (an `x5c` entry) or DER bytes. */
export type CertificateInput = string | Uint8Array

function parse(input: CertificateInput, what: string): x509.X509Certificate {
  const lib = x509Lib()
  try {
    // A copy into a plain ArrayBuffer: a Buffer may be a view of Node's shared pool.
    if (typeof input !== 'string') return new lib.X509Certificate(new Uint8Array(input))
    const text = input.trim()
    return new lib.X509Certificate(
      text.startsWith('-----BEGIN') ? text : new Uint8Array(Buffer.from(text, 'base64')),
    )
  } catch (error) {
    throw new X509Error(`${what} is not a DER or PEM X.509 certificate: ${(error as Error).message}`)
  }
}

/** Every certificate of PEM text (a bundle may hold several), or the one DER certificate. */
export function parseCertificates(input: CertificateInput, what = 'trust anchor'): x509.X509Certificate[] {
  if (typeof input === 'string' && input.includes('-----BEGIN')) {
    const blocks = input.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
    if (blocks.length === 0) throw new X509Error(`${what} has no CERTIFICATE block`)
    return blocks.map((block, i) => parse(block, blocks.length > 1 ? `${what} #${i + 1}` : what))
  }
  return [parse(input, what)]
}

export const certificatePem = (input: CertificateInput): string => parse(input, 'certificate').toString('pem')
export const certificateDer = (input: CertificateInput): Buffer =>
  Buffer.from(parse(input, 'certificate').rawData)

/** An `x5c` header value (RFC 7515 §4.1.6): standard base64 (not base64url) DER, the key's certificate first. */
export function x5cOf(chain: readonly CertificateInput[]): string[] {
  return chain.map((c) => certificateDer(c).toString('base64'))
}

/** OpenID4VP 1.0 `x509_hash:` client identifier value: base64url of the SHA-256 of the leaf's DER. */
export function x509Hash(leaf: CertificateInput): string {
  return createHash('sha256').update(certificateDer(leaf)).digest('base64url')
}

const serial = () => {
  const bytes = randomBytes(16)
  bytes[0] = (bytes[0] as number) & 0x7f // a positive INTEGER (RFC 5280 §4.1.2.2)
  return bytes.toString('hex')
}

const spki = (key: KeyObject) => new Uint8Array(key.export({ type: 'spki', format: 'der' }))

async function signingKeyOf(privateKey: KeyObject): Promise<CryptoKey> {
  if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new X509Error('a test CA key must be a P-256 key')
  }
  const der = privateKey.export({ type: 'pkcs8', format: 'der' })
  return webcrypto.subtle.importKey('pkcs8', der, P256, false, ['sign']) as Promise<CryptoKey>
}

export interface TestCa {
  /** The CA certificate (DER); `certificatePem()` gives the PEM relying parties configure. */
  certificate: Buffer
  /** P-256 private key the CA signs certificates with. */
  privateKey: KeyObject
}

/**
 * A self-signed P-256 CA for tests and the service's per-tenant trust anchor: basicConstraints cA (critical,
 * pathLen 0: it certifies end-entity keys only) and keyUsage keyCertSign | cRLSign (RFC 5280 §4.2.1.3, §4.2.1.9).
 */
export async function generateTestCa(
  options: {
    name?: string
    now?: number
    validityDays?: number
    /** Further extensions, already DER-encoded (e.g. the development TLS CA's nameConstraints). */
    extensions?: readonly RawExtension[]
  } = {},
): Promise<TestCa> {
  const lib = x509Lib()
  const now = options.now ?? Date.now()
  const keys = (await webcrypto.subtle.generateKey(P256, true, ['sign', 'verify'])) as CryptoKeyPair
  const cert = await lib.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: options.name ?? 'CN=vc-harness Test CA, O=vc-harness',
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + (options.validityDays ?? 3650) * DAY),
    keys,
    signingAlgorithm: P256,
    extensions: [
      new lib.BasicConstraintsExtension(true, 0, true),
      new lib.KeyUsagesExtension(lib.KeyUsageFlags.keyCertSign | lib.KeyUsageFlags.cRLSign, true),
      await lib.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ...(options.extensions ?? []).map((e) => new lib.Extension(e.oid, e.critical, new Uint8Array(e.value))),
    ],
  })
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey))
  return {
    certificate: Buffer.from(cert.rawData),
    privateKey: createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }),
  }
}

/** An extension this module has no builder for: its OID, criticality and DER-encoded extnValue. */
export interface RawExtension {
  oid: string
  critical: boolean
  value: Uint8Array
}

export interface CertificateRequest {
  /** The issuing CA (its certificate and private key). */
  issuer: { certificate: CertificateInput; privateKey: KeyObject }
  /** The certified public key (any key type WebCrypto knows: P-256, Ed25519, …). */
  publicKey: KeyObject
  subject?: string
  /** subjectAltName dNSName entries (RFC 5280 §4.2.1.6). */
  dns?: readonly string[]
  /** subjectAltName uniformResourceIdentifier entries. */
  uris?: readonly string[]
  /** subjectAltName iPAddress entries (IPv4 or IPv6 text). */
  ips?: readonly string[]
  /** extKeyUsage purposes (OIDs, e.g. serverAuth 1.3.6.1.5.5.7.3.1: RFC 5280 §4.2.1.12); none by default. */
  extendedKeyUsages?: readonly string[]
  notBefore?: Date
  notAfter?: Date
  /** An intermediate CA instead of an end-entity certificate (tests build longer chains with it). */
  ca?: boolean
}

/** A certificate for `publicKey` signed by `issuer` (DER). End-entity by default: keyUsage digitalSignature. */
export async function issueCertificate(request: CertificateRequest): Promise<Buffer> {
  const lib = x509Lib()
  const issuerCert = parse(request.issuer.certificate, 'issuer certificate')
  const now = Date.now()
  const names = [
    ...(request.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(request.uris ?? []).map((value) => ({ type: 'url' as const, value })),
    ...(request.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ]
  const extensions: x509.Extension[] = request.ca
    ? [
        new lib.BasicConstraintsExtension(true, 0, true),
        new lib.KeyUsagesExtension(lib.KeyUsageFlags.keyCertSign, true),
      ]
    : [
        new lib.BasicConstraintsExtension(false, undefined, true),
        new lib.KeyUsagesExtension(lib.KeyUsageFlags.digitalSignature, true),
      ]
  if (names.length > 0) extensions.push(new lib.SubjectAlternativeNameExtension(names))
  if (request.extendedKeyUsages?.length) {
    extensions.push(new lib.ExtendedKeyUsageExtension([...request.extendedKeyUsages]))
  }
  extensions.push(await lib.AuthorityKeyIdentifierExtension.create(issuerCert.publicKey))
  extensions.push(await lib.SubjectKeyIdentifierExtension.create(spki(request.publicKey)))
  const cert = await lib.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: request.subject ?? `CN=${request.dns?.[0] ?? request.uris?.[0] ?? 'vc-harness issuer'}`,
    issuer: issuerCert.subject,
    notBefore: request.notBefore ?? new Date(now - DAY),
    notAfter: request.notAfter ?? new Date(now + 365 * DAY),
    publicKey: spki(request.publicKey),
    signingKey: await signingKeyOf(request.issuer.privateKey),
    signingAlgorithm: P256,
    extensions,
  })
  return Buffer.from(cert.rawData)
}

export interface VerifiedChain {
  /** The leaf's public key, for the JWS it signs (SD-JWT VC §3.5: the issuer-signed JWT's key). */
  publicKey: KeyObject
  /** subjectAltName dNSName and uniformResourceIdentifier entries of the leaf. */
  dns: string[]
  uris: string[]
  leaf: x509.X509Certificate
  /** The configured anchor the chain ends in. */
  anchor: x509.X509Certificate
}

// Extensions this validation processes; an unknown critical one fails the path (RFC 5280 §6.1.4 (o)).
const UNDERSTOOD = new Set([
  '2.5.29.19', // basicConstraints
  '2.5.29.15', // keyUsage
  '2.5.29.17', // subjectAltName
  '2.5.29.14', // subjectKeyIdentifier
  '2.5.29.35', // authorityKeyIdentifier
  '2.5.29.18', // issuerAltName (ISO 18013-5 Annex B certificates)
  '2.5.29.37', // extKeyUsage: the document signer's, critical (ISO 18013-5 Annex B.1.4)
])

const label = (cert: x509.X509Certificate, i: number, count: number) =>
  `certificate ${i} of the chain (${i === 0 ? 'leaf' : i === count - 1 ? 'last' : 'intermediate'}, ${cert.subject || 'empty subject'})`

function checkDates(cert: x509.X509Certificate, at: Date, what: string) {
  if (at < cert.notBefore) throw new X509Error(`${what} is not valid before ${cert.notBefore.toISOString()}`)
  if (at > cert.notAfter) throw new X509Error(`${what} expired at ${cert.notAfter.toISOString()}`)
}

function checkCriticalExtensions(cert: x509.X509Certificate, what: string) {
  const unknown = cert.extensions.find((e) => e.critical && !UNDERSTOOD.has(e.type))
  if (unknown) throw new X509Error(`${what} has an unrecognised critical extension ${unknown.type}`)
}

/**
 * A certificate that signs others must be a CA: basicConstraints cA (RFC 5280 §6.1.4 (k)), keyCertSign when
 * keyUsage is present (§6.1.4 (n)), and its pathLenConstraint must allow the intermediates below it
 * (§6.1.4 (l), (m)): `below` counts the non-self-issued intermediates between it and the leaf.
 */
function checkIssuerConstraints(cert: x509.X509Certificate, below: number, what: string) {
  const lib = x509Lib()
  const bc = cert.getExtension(lib.BasicConstraintsExtension)
  if (!bc?.ca)
    throw new X509Error(`${what} issued a certificate but is not a CA (basicConstraints cA is not set)`)
  const ku = cert.getExtension(lib.KeyUsagesExtension)
  if (ku && (ku.usages & lib.KeyUsageFlags.keyCertSign) === 0) {
    throw new X509Error(`${what} issued a certificate but its keyUsage lacks keyCertSign`)
  }
  if (bc.pathLength !== undefined && below > bc.pathLength) {
    throw new X509Error(
      `${what} allows ${bc.pathLength} intermediate(s) below it (pathLenConstraint); found ${below}`,
    )
  }
}

async function signedBy(cert: x509.X509Certificate, issuer: x509.X509Certificate): Promise<boolean> {
  if (cert.issuer !== issuer.subject) return false
  try {
    return await cert.verify({ publicKey: issuer.publicKey, signatureOnly: true })
  } catch {
    return false
  }
}

const isSelfIssued = (cert: x509.X509Certificate) => cert.issuer === cert.subject

/**
 * Validates an `x5c` chain (RFC 5280 §6.1) to one of `anchors` at `at`, and returns the leaf's key and names.
 * RFC 7515 §4.1.6 fixes the order (each certificate certifies the one before it), so the path is the array
 * itself: no search among the certificates. The last one must be an anchor (byte for byte) or be issued by
 * one. Every certificate's signature, validity period and critical extensions are checked; every issuing
 * certificate (intermediates and the anchor) must be a CA allowed to issue at that depth; the leaf's keyUsage,
 * when present, must allow digitalSignature (it signs the JWS). Revocation is not checked (no CRL/OCSP).
 */
export async function verifyX5c(
  x5c: unknown,
  anchors: readonly CertificateInput[],
  at: Date | number = Date.now(),
): Promise<VerifiedChain> {
  const when = at instanceof Date ? at : new Date(at)
  // A chain validated against the same anchors stays valid while every certificate on the path is: the
  // signatures (several WebCrypto verifications, about 9 ms) are checked once per chain, not per credential.
  const key = chainCacheKey(x5c, anchors)
  const cached = key === undefined ? undefined : VERIFIED_CHAINS.get(key)
  if (cached && when >= cached.from && when <= cached.until) return cached.chain
  const chain = await validateX5c(x5c, anchors, when)
  if (key !== undefined) {
    const dates = [...chain.path, chain.anchor]
    if (VERIFIED_CHAINS.size >= MAX_CACHED_CHAINS)
      VERIFIED_CHAINS.delete(VERIFIED_CHAINS.keys().next().value as string)
    VERIFIED_CHAINS.set(key, {
      chain: chain.verified,
      from: new Date(Math.max(...dates.map((c) => c.notBefore.getTime()))),
      until: new Date(Math.min(...dates.map((c) => c.notAfter.getTime()))),
    })
  }
  return chain.verified
}

/** Chains validated recently, by their bytes and the anchors they were validated against. */
const VERIFIED_CHAINS = new Map<string, { chain: VerifiedChain; from: Date; until: Date }>()
const MAX_CACHED_CHAINS = 256

function chainCacheKey(x5c: unknown, anchors: readonly CertificateInput[]): string | undefined {
  if (!Array.isArray(x5c) || !x5c.every((c) => typeof c === 'string')) return undefined
  const hash = createHash('sha256')
  for (const c of x5c as string[]) hash.update(c).update('\u0000')
  hash.update('|')
  for (const a of anchors) hash.update(typeof a === 'string' ? a : Buffer.from(a)).update('\u0000')
  return hash.digest('base64url')
}

async function validateX5c(
  x5c: unknown,
  anchors: readonly CertificateInput[],
  when: Date,
): Promise<{ verified: VerifiedChain; path: x509.X509Certificate[]; anchor: x509.X509Certificate }> {
  if (!Array.isArray(x5c) || x5c.length === 0 || !x5c.every((c) => typeof c === 'string')) {
    throw new X509Error('x5c must be a non-empty array of base64 DER certificates')
  }
  if (x5c.length > MAX_CHAIN)
    throw new X509Error(`x5c holds ${x5c.length} certificates; at most ${MAX_CHAIN}`)
  if (anchors.length === 0) throw new X509Error('no trust anchor is configured')
  const trusted = anchors.flatMap((a, i) => parseCertificates(a, `trust anchor ${i}`))
  const chain = (x5c as string[]).map((b64, i) => {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) {
      throw new X509Error(`x5c[${i}] is not standard base64 (RFC 7515 §4.1.6; base64url is not allowed)`)
    }
    return parse(b64, `x5c[${i}]`)
  })
  const count = chain.length
  const leaf = chain[0] as x509.X509Certificate

  // Where the path meets the anchors: the last certificate is an anchor itself, or an anchor issued it.
  const last = chain[count - 1] as x509.X509Certificate
  let anchor = trusted.find((a) => Buffer.from(a.rawData).equals(Buffer.from(last.rawData)))
  const lastIsAnchor = anchor !== undefined
  if (!anchor) {
    for (const candidate of trusted) {
      if (await signedBy(last, candidate)) {
        anchor = candidate
        break
      }
    }
  }
  if (!anchor) {
    throw new X509Error(
      `${label(last, count - 1, count)} is not a configured trust anchor nor issued by one (issuer ${last.issuer || 'empty'})`,
    )
  }
  // The certificates validated as a path: the x5c entries, without the anchor when it is included.
  const path = lastIsAnchor ? chain.slice(0, -1) : chain
  // Intermediates below each position, counting non-self-issued ones only (RFC 5280 §6.1.4 (l)).
  let below = 0
  for (let i = 0; i < path.length; i++) {
    const cert = path[i] as x509.X509Certificate
    const what = label(cert, i, count)
    checkDates(cert, when, what)
    checkCriticalExtensions(cert, what)
    const issuer = (path[i + 1] ?? anchor) as x509.X509Certificate
    const issuerWhat = i + 1 < path.length ? label(issuer, i + 1, count) : `trust anchor (${anchor.subject})`
    if (cert.issuer !== issuer.subject) {
      throw new X509Error(
        `${what} names issuer "${cert.issuer}", but the next certificate is "${issuer.subject}"`,
      )
    }
    if (!(await signedBy(cert, issuer))) {
      throw new X509Error(`${what}: its signature does not verify with the key of ${issuerWhat}`)
    }
    if (i > 0 && !isSelfIssued(cert)) below++
    checkIssuerConstraints(issuer, below, issuerWhat)
  }
  // The anchor's own validity: a configured but expired anchor no longer vouches for anything.
  checkDates(anchor, when, `trust anchor (${anchor.subject})`)
  if (path.length === 0) checkCriticalExtensions(leaf, label(leaf, 0, count))
  const lib = x509Lib()
  const ku = leaf.getExtension(lib.KeyUsagesExtension)
  if (ku && (ku.usages & lib.KeyUsageFlags.digitalSignature) === 0) {
    throw new X509Error(`${label(leaf, 0, count)}: its keyUsage lacks digitalSignature`)
  }
  const { dns, uris } = subjectAltNames(leaf)
  let publicKey: KeyObject
  try {
    publicKey = createPublicKey({ key: Buffer.from(leaf.publicKey.rawData), format: 'der', type: 'spki' })
  } catch (error) {
    throw new X509Error(`${label(leaf, 0, count)}: its public key is not usable: ${(error as Error).message}`)
  }
  return { verified: { publicKey, dns, uris, leaf, anchor }, path, anchor }
}

/** The DER extnValue and criticality of a certificate's extension `oid`, or undefined when it has none. */
export function certificateExtension(
  input: CertificateInput,
  oid: string,
): { critical: boolean; value: Buffer } | undefined {
  const found = parse(input, 'certificate').extensions.find((e) => e.type === oid)
  return found && { critical: found.critical, value: Buffer.from(found.value) }
}

/** The subjectAltName dNSName and uniformResourceIdentifier entries of a certificate. */
export function subjectAltNames(input: CertificateInput | x509.X509Certificate): {
  dns: string[]
  uris: string[]
} {
  const lib = x509Lib()
  const cert = input instanceof lib.X509Certificate ? input : parse(input, 'certificate')
  const items = cert.getExtension(lib.SubjectAlternativeNameExtension)?.names.items ?? []
  return {
    dns: items.filter((n) => n.type === 'dns').map((n) => n.value),
    uris: items.filter((n) => n.type === 'url').map((n) => n.value),
  }
}

// ---- ISO/IEC 18013-5 Annex B: the IACA root and the document signer (mdoc issuers) ----

/** ISO 18013-5 Annex B.1.4: the document signer's extended key usage, id-mdl-kp-mdlDS. */
export const MDL_DS_EKU = '1.0.18013.5.1.2'

export interface IacaOptions {
  /** The issuing authority's name (CN); the subject carries C, as Annex B.1.2 requires. */
  commonName: string
  /** ISO 3166-1 alpha-2 country of the issuing authority; `UT` is the code ISO test data uses. */
  country?: string
  /** issuerAlternativeName (Annex B.1.2: an e-mail or URL to reach the issuing authority). */
  uri: string
  now?: number
  validityDays?: number
}

/**
 * A self-signed IACA root certificate (ISO/IEC 18013-5:2021 Annex B.1.2): P-256, basicConstraints cA
 * pathLen 0 (critical), keyUsage keyCertSign | cRLSign (critical), subjectKeyIdentifier, issuerAltName, C in
 * the subject.
 */
export async function generateIaca(options: IacaOptions): Promise<TestCa> {
  const lib = x509Lib()
  return generateTestCa({
    name: `CN=${options.commonName}, C=${options.country ?? 'UT'}`,
    ...(options.now !== undefined && { now: options.now }),
    validityDays: options.validityDays ?? 3650,
    extensions: [rawOf(new lib.IssuerAlternativeNameExtension([{ type: 'url', value: options.uri }]))],
  })
}

function rawOf(extension: x509.Extension): RawExtension {
  return { oid: extension.type, critical: extension.critical, value: new Uint8Array(extension.value) }
}

/**
 * A document signer certificate for `publicKey` under `iaca` (ISO/IEC 18013-5:2021 Annex B.1.4): keyUsage
 * digitalSignature (critical), extKeyUsage id-mdl-kp-mdlDS (critical), authority and subject key
 * identifiers, issuerAltName, the IACA's country in the subject.
 */
export async function issueDocumentSigner(request: {
  iaca: { certificate: CertificateInput; privateKey: KeyObject }
  publicKey: KeyObject
  commonName: string
  uri: string
  notBefore?: Date
  notAfter?: Date
}): Promise<Buffer> {
  const lib = x509Lib()
  const iaca = parse(request.iaca.certificate, 'IACA certificate')
  const country = iaca.subjectName.getField('C')[0] ?? 'UT'
  const now = Date.now()
  const cert = await lib.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${request.commonName}, C=${country}`,
    issuer: iaca.subject,
    notBefore: request.notBefore ?? new Date(now - DAY),
    notAfter: request.notAfter ?? new Date(now - DAY + DS_MAX_DAYS * DAY),
    publicKey: spki(request.publicKey),
    signingKey: await signingKeyOf(request.iaca.privateKey),
    signingAlgorithm: P256,
    extensions: [
      new lib.KeyUsagesExtension(lib.KeyUsageFlags.digitalSignature, true),
      new lib.ExtendedKeyUsageExtension([MDL_DS_EKU], true),
      await lib.AuthorityKeyIdentifierExtension.create(iaca.publicKey),
      await lib.SubjectKeyIdentifierExtension.create(spki(request.publicKey)),
      new lib.IssuerAlternativeNameExtension([{ type: 'url', value: request.uri }]),
    ],
  })
  return Buffer.from(cert.rawData)
}

/** ISO 18013-5 Annex B.1.4: a document signer certificate is valid at most 457 days. */
export const DS_MAX_DAYS = 457

/** What a certificate breaks of its Annex B profile (`iaca`: B.1.2, `ds`: B.1.4); empty when it fits. */
export function mdocCertificateProblems(input: CertificateInput, role: 'iaca' | 'ds'): string[] {
  const lib = x509Lib()
  const cert = parse(input, role === 'iaca' ? 'IACA certificate' : 'document signer certificate')
  const problems: string[] = []
  if (cert.subjectName.getField('C').length === 0) problems.push('its subject has no country (C)')
  if (!cert.getExtension(lib.IssuerAlternativeNameExtension)) problems.push('it has no issuerAltName')
  if (!cert.getExtension(lib.SubjectKeyIdentifierExtension)) problems.push('it has no subjectKeyIdentifier')
  const algorithm = cert.publicKey.algorithm as { name?: string; namedCurve?: string }
  if (algorithm.name !== 'ECDSA' || algorithm.namedCurve !== 'P-256') {
    problems.push(
      `its key is ${algorithm.namedCurve ?? algorithm.name ?? 'unknown'}, not EC P-256 (ES256, HAIP)`,
    )
  }
  const ku = cert.getExtension(lib.KeyUsagesExtension)
  if (ku && !ku.critical) problems.push('keyUsage must be critical')
  const bc = cert.getExtension(lib.BasicConstraintsExtension)
  if (role === 'iaca') {
    if (!bc?.ca || bc.pathLength !== 0) problems.push('basicConstraints must be cA with pathLenConstraint 0')
    else if (!bc.critical) problems.push('basicConstraints must be critical')
    const wanted = lib.KeyUsageFlags.keyCertSign | lib.KeyUsageFlags.cRLSign
    if (!ku || (ku.usages & wanted) !== wanted) problems.push('keyUsage must include keyCertSign and cRLSign')
    // self-signed: issuer = subject, and its own key verifies its signature
    const own = new X509Certificate(Buffer.from(cert.rawData))
    if (cert.issuer !== cert.subject || !own.verify(own.publicKey)) {
      problems.push('an IACA certificate is self-signed (issuer = subject, signed by its own key)')
    }
  } else {
    if (bc?.ca) problems.push('a document signer is not a CA')
    if (!ku || (ku.usages & lib.KeyUsageFlags.digitalSignature) === 0)
      problems.push('keyUsage must include digitalSignature')
    const eku = cert.getExtension(lib.ExtendedKeyUsageExtension)
    if (!eku?.usages.map(String).includes(MDL_DS_EKU))
      problems.push(`extKeyUsage must be id-mdl-kp-mdlDS (${MDL_DS_EKU})`)
    else if (!eku.critical) problems.push('extKeyUsage must be critical')
    if (!cert.getExtension(lib.AuthorityKeyIdentifierExtension))
      problems.push('it has no authorityKeyIdentifier')
    if (cert.notAfter.getTime() - cert.notBefore.getTime() > DS_MAX_DAYS * DAY) {
      problems.push(`it is valid longer than ${DS_MAX_DAYS} days`)
    }
  }
  return problems
}
