// The defects the misbehaviours put into otherwise correct messages: a wrong code, a flipped bit, a changed
// claim, a self-issued copy. tamper.ts says which misbehaviour puts which defect where; the builders
// (proof.ts, presentation-*.ts, issuance*.ts) apply tamper.ts at the points where they build a message. Pure
// functions that import no builder, so that the builders, tamper.ts and these stay free of import cycles.

import { sign as cryptoSign, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto'
import type { TxCode } from '@sphereon/oid4vci-common'
import { formatNamed } from '../formats/registry.ts'
import {
  base58btcDecode,
  base58btcEncode,
  didKeyFromPublicKey,
  generateKeyPair,
  isJwsAlg,
  type JwsAlg,
  resolveDidKey,
} from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws, signJws } from '../shared/jws.ts'
import { JWT_TYP } from '../shared/wire.ts'
import { WalletUsageError } from './errors.ts'

/** What signs a JWS: the shape of proof.ts `JwtSigner`, named here so that this module imports no builder. */
export interface KeySigner {
  kid: string
  alg: JwsAlg
  sign(signingInput: string): Promise<Uint8Array>
}

function b64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
}

// --- issuance ------------------------------------------------------------------------------------------------

/** A code of the announced shape that differs from `code` (or a random one when the right one is unknown). */
export function wrongTxCode(code: string | undefined, spec?: TxCode): string {
  if (code && code.length > 0) {
    const last = code.charAt(code.length - 1)
    let replacement: string
    if (/[0-9]/.test(last)) replacement = String((Number(last) + 1) % 10)
    else if (/[a-y]/i.test(last)) replacement = String.fromCharCode(last.charCodeAt(0) + 1)
    else replacement = last === '0' ? '1' : '0'
    return code.slice(0, -1) + replacement
  }
  const length = spec?.length && spec.length > 0 ? spec.length : 6
  const digits = Array.from(randomBytes(length), (b) => String(b % 10)).join('')
  return spec?.input_mode === 'text' ? `x${digits.slice(1)}` : digits
}

/** A random value shaped like a server nonce that no server issued ('wrong-nonce', 'vp-wrong-nonce', …). */
export function randomNonce(): string {
  return randomBytes(32).toString('base64url')
}

/** A new did:key key id of one algorithm, for 'foreign-kid'. */
export function freshKid(alg: JwsAlg): string {
  return didKeyFromPublicKey(generateKeyPair(alg).publicKey).kid
}

/** The public JWK of a did:key URL: what 'foreign-kid' puts into a `jwk` header. */
export function publicJwkOfKid(kid: string): JsonWebKey {
  return { ...resolveDidKey(kid).publicJwk }
}

export function flipLastBit(bytes: Uint8Array): Uint8Array {
  const copy = Uint8Array.from(bytes)
  const last = copy.length - 1
  copy[last] = (copy[last] as number) ^ 0x01
  return copy
}

/** Flips one bit of the signature inside a base58btc multibase `proofValue`. */
export function corruptProofValue(proofValue: string): string {
  const bytes = proofValue.startsWith('z') ? base58btcDecode(proofValue.slice(1)) : undefined
  if (!bytes || bytes.length === 0) throw new Error('proofValue is not base58btc multibase')
  return `z${base58btcEncode(flipLastBit(bytes))}`
}

/** The draft-13/14 way to name a credential: its format and format-specific parameters, no configuration id. */
export function legacyFormat(configuration: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!configuration) throw new WalletUsageError("'legacy-format-request': unknown credential configuration")
  const { format } = configuration
  // The format says how it names the credential: `vct` (SD-JWT VC), else credential_definition.type, and for
  // ldp_vc its `@context` too (draft 13 Appendix A.1.2.2, A.1.3.2).
  const named = formatNamed(format)
  if (named?.typedBy === 'vct') return { format, vct: configuration.vct }
  const definition = isObject(configuration.credential_definition) ? configuration.credential_definition : {}
  const context = named?.id === 'ldp_vc' ? definition['@context'] : undefined
  return {
    format,
    credential_definition: { ...(context !== undefined && { '@context': context }), type: definition.type },
  }
}

/**
 * 'token-in-query': the credential endpoint with `access_token` added to its query (RFC 6750 §2.3); any query
 * the endpoint already has is kept.
 */
export function withAccessTokenInQuery(endpoint: string, accessToken: string | undefined): string {
  if (accessToken === undefined) throw new Error('no access token to put into the query')
  const url = new URL(endpoint)
  url.searchParams.append('access_token', accessToken)
  return url.toString()
}

// --- presentation: keys ----------------------------------------------------------------------------------------

/** A JwtSigner over a node:crypto private key (the foreign keys of the misbehaviours). */
export function keySigner(privateKey: KeyObject, kid: string, alg: JwsAlg): KeySigner {
  return {
    kid,
    alg,
    async sign(signingInput: string): Promise<Uint8Array> {
      const data = Buffer.from(signingInput, 'ascii')
      return alg === 'EdDSA'
        ? cryptoSign(null, data, privateKey)
        : cryptoSign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' })
    },
  }
}

export interface ForeignKey {
  did: string
  kid: string
  alg: JwsAlg
  privateKey: KeyObject
}

/** A freshly generated did:key of one algorithm. */
export function freshDidKey(alg: JwsAlg): ForeignKey {
  const pair = generateKeyPair(alg)
  const didKey = didKeyFromPublicKey(pair.publicKey)
  return { did: didKey.did, kid: didKey.kid, alg, privateKey: pair.privateKey }
}

// --- presentation: credential defects ------------------------------------------------------------------------

function subjectOf(payload: Record<string, unknown>): Record<string, unknown> | undefined {
  const vc = isObject(payload.vc) ? payload.vc : payload
  return isObject(vc.credentialSubject) ? vc.credentialSubject : undefined
}

/** A changed value of the same kind: string + ` (tampered)`, number + 1, boolean negated, else 'tampered'. */
export function tamperValue(value: unknown): unknown {
  if (typeof value === 'string') return `${value} (tampered)`
  if (typeof value === 'number') return value + 1
  if (typeof value === 'boolean') return !value
  return 'tampered'
}

/** Changes the first primitive leaf under `node` (depth first, `id` skipped); answers its path. */
function tamperFirstLeaf(node: Record<string, unknown> | unknown[], path: string): string | undefined {
  const entries: [string | number, unknown][] = Array.isArray(node)
    ? node.map((v, i) => [i, v])
    : Object.entries(node).filter(([key]) => key !== 'id')
  for (const [key, value] of entries) {
    const childPath = typeof key === 'number' ? `${path}[${key}]` : `${path}.${key}`
    if (isObject(value) || Array.isArray(value)) {
      const found = tamperFirstLeaf(value, childPath)
      if (found) return found
      continue
    }
    ;(node as Record<string | number, unknown>)[key] = tamperValue(value)
    return childPath
  }
  return undefined
}

export interface TamperedCredential {
  jwt: string
  /** JSONPath of the changed claim in the JWT payload */
  path: string
  from: unknown
  to: unknown
}

/**
 * 'tampered-credential': one claim of `credentialSubject` (the first value other than `id`, depth first)
 * changed in the JWT payload; header and signature segments kept byte for byte.
 */
export function tamperCredential(jwt: string): TamperedCredential {
  const [header, , signature] = jwt.split('.') as [string, string, string]
  const { payload } = decodeJws(jwt)
  const subject = subjectOf(payload)
  if (!subject) throw new Error('the credential has no credentialSubject to tamper with')
  const before = structuredClone(subject)
  const base = isObject(payload.vc) ? '$.vc.credentialSubject' : '$.credentialSubject'
  const path = tamperFirstLeaf(subject, base)
  if (!path) throw new Error('the credentialSubject has no claim besides id to tamper with')
  const read = (root: unknown, p: string) =>
    p
      .slice(base.length)
      .split(/\.|\[(\d+)\]/)
      .filter((s) => s !== undefined && s !== '')
      .reduce<unknown>((node, key) => (node as Record<string, unknown>)?.[key], root)
  return {
    jwt: `${header}.${b64urlJson(payload)}.${signature}`,
    path,
    from: read(before, path),
    to: read(subject, path),
  }
}

export interface SelfIssuedCredential {
  jwt: string
  /** the fresh did:key that signed it */
  issuer: string
}

/**
 * 'untrusted-issuer': the same credential (type, subject = holder, claims, dates, jti, status entry) issued
 * and properly signed by a freshly generated did:key of the original's algorithm instead of its issuer.
 */
export function selfIssueCopy(jwt: string, issuerKey?: ForeignKey): SelfIssuedCredential {
  const { header, payload } = decodeJws(jwt)
  const alg: JwsAlg = isJwsAlg(header.alg) ? header.alg : 'EdDSA'
  const key = issuerKey ?? freshDidKey(alg)
  const copy = structuredClone(payload)
  copy.iss = key.did
  // a VC 1.1 JWT keeps the credential under `vc`; a VC 2.0 JWT is the credential
  const vc = isObject(copy.vc) ? copy.vc : undefined
  const credential = vc ?? copy
  if (isObject(credential.issuer)) credential.issuer = { ...credential.issuer, id: key.did }
  else if (credential.issuer !== undefined || vc) credential.issuer = key.did
  const signed = signJws(
    { ...header, alg: key.alg, kid: key.kid, ...(header.typ === undefined && { typ: JWT_TYP }) },
    copy,
    key.privateKey,
  )
  return { jwt: signed, issuer: key.did }
}

/**
 * DIF Presentation Exchange v2 presentation_submission (presentation-vp.ts lays it out and re-exports the
 * type; declared here because 'lying-submission' changes one).
 */
export interface PresentationSubmission {
  id: string
  definition_id: string
  descriptor_map: DescriptorMapEntry[]
}
export interface DescriptorMapEntry {
  id: string
  format: string
  path: string
  path_nested?: DescriptorMapEntry
}

/**
 * 'lying-submission': `descriptor_map[0]` points at another credential of the VP (index i → i + 1, wrapping;
 * with a single credential, at index 1, which does not exist). Everything else of the submission is kept.
 */
export function lyingSubmission(
  submission: PresentationSubmission,
  credentialCount: number,
): PresentationSubmission {
  const copy = structuredClone(submission)
  const first = copy.descriptor_map[0]
  if (!first) throw new Error('the presentation_submission has no descriptor_map entry to lie about')
  const target = first.path_nested ?? first
  const match = /\[(\d+)\]$/.exec(target.path)
  const index = match ? Number(match[1]) : 0
  const next = (index + 1) % Math.max(credentialCount, 2)
  target.path = match ? target.path.replace(/\[\d+\]$/, `[${next}]`) : `${target.path}[${next}]`
  return copy
}

// --- presentation: SD-JWT defects --------------------------------------------------------------------------------

/** 'sd-tampered-disclosure': the first disclosure with its value changed after issuance (salt and name kept). */
export function tamperDisclosure(disclosure: string): {
  disclosure: string
  claim: string
  from: unknown
  to: unknown
} {
  const decoded = JSON.parse(Buffer.from(disclosure, 'base64url').toString('utf8')) as unknown[]
  const from = decoded.at(-1)
  const to = tamperValue(from)
  const copy = [...decoded.slice(0, -1), to]
  const claim = decoded.length === 3 ? String(decoded[1]) : '(array element)'
  return { disclosure: b64urlJson(copy), claim, from, to }
}

/**
 * 'sd-issuer-signature': the SD-JWT (`<issuer-signed JWT>~<disclosures>~`) with one bit of the issuer-signed
 * JWT's signature flipped (its last byte); header, payload and disclosures kept byte for byte.
 */
export function corruptIssuerSignature(sdJwt: string): string {
  const tilde = sdJwt.indexOf('~')
  const jwt = tilde < 0 ? sdJwt : sdJwt.slice(0, tilde)
  const [header, payload, signature] = jwt.split('.')
  if (header === undefined || payload === undefined || !signature) {
    throw new WalletUsageError("'sd-issuer-signature': the issuer-signed JWT has no signature to corrupt")
  }
  const flipped = Buffer.from(flipLastBit(Buffer.from(signature, 'base64url'))).toString('base64url')
  return `${header}.${payload}.${flipped}${tilde < 0 ? '' : sdJwt.slice(tilde)}`
}

// --- presentation: response encryption --------------------------------------------------------------------------

/** Node's names of the curves a JWK names (EC: the NIST curves; OKP: X25519 / X448). */
const CURVES: Record<string, { type: 'ec' | 'x25519' | 'x448'; namedCurve?: string }> = {
  'P-256': { type: 'ec', namedCurve: 'prime256v1' },
  'P-384': { type: 'ec', namedCurve: 'secp384r1' },
  'P-521': { type: 'ec', namedCurve: 'secp521r1' },
  X25519: { type: 'x25519' },
  X448: { type: 'x448' },
}

/**
 * 'jwe-wrong-key': the public JWK of a freshly generated key of the same type and curve as the verifier's
 * encryption key, with its `kid`, `alg` and `use` (the private half is dropped: nobody can decrypt).
 */
export function freshEncryptionKey(
  verifierKey: JsonWebKey & { kid?: string },
): JsonWebKey & { kid?: string } {
  const curve = typeof verifierKey.crv === 'string' ? CURVES[verifierKey.crv] : undefined
  if (!curve) {
    throw new WalletUsageError(
      `'jwe-wrong-key': cannot make a key like the verifier's (kty ${String(verifierKey.kty)}, crv ${String(verifierKey.crv)})`,
    )
  }
  const { publicKey } =
    curve.type === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: curve.namedCurve as string })
      : curve.type === 'x25519'
        ? generateKeyPairSync('x25519')
        : generateKeyPairSync('x448')
  const fresh = publicKey.export({ format: 'jwk' })
  const { kid, alg, use } = verifierKey
  return {
    ...fresh,
    ...(kid !== undefined && { kid }),
    ...(alg !== undefined && { alg }),
    ...(use !== undefined && { use }),
  }
}

/** `x509_san_dns:verifier.example` → `verifier.example`: the audience a wallet that drops the prefix would use. */
export function withoutPrefix(clientId: string): string {
  const colon = clientId.indexOf(':')
  return colon < 0 ? `${clientId}-wrong` : clientId.slice(colon + 1)
}

// --- presentation: mdoc defects (OpenID4VP 1.0 Appendix B.2.6) ----------------------------------------------------

/** What signs an mdoc's DeviceAuthentication: the shape of shared/mdoc.ts `deviceSigner`, named here. */
export interface DeviceSigner {
  alg: 'ES256' | 'ES384' | 'EdDSA'
  sign(toBeSigned: Uint8Array): Promise<Uint8Array> | Uint8Array
}

/**
 * 'mdoc-foreign-device-key': a device signer over a freshly generated key of the same algorithm (ES256: P-256,
 * IEEE P1363 r||s; EdDSA: Ed25519), not the MSO's deviceKey.
 */
export function freshDeviceSigner(alg: DeviceSigner['alg']): DeviceSigner {
  if (alg === 'EdDSA') {
    const { privateKey } = generateKeyPairSync('ed25519')
    return { alg, sign: (bytes) => new Uint8Array(cryptoSign(null, bytes, privateKey)) }
  }
  const { privateKey } = generateKeyPairSync('ec', {
    namedCurve: alg === 'ES256' ? 'prime256v1' : 'secp384r1',
  })
  const hash = alg === 'ES256' ? 'sha256' : 'sha384'
  return {
    alg,
    sign: (bytes) => new Uint8Array(cryptoSign(hash, bytes, { key: privateKey, dsaEncoding: 'ieee-p1363' })),
  }
}

/** The elements of an mdoc by namespace (element names in issued order). */
export type MdocElements = Record<string, readonly string[]>

/**
 * 'mdoc-extra-element': the first element of the mdoc (namespaces and elements in issued order) that is not
 * disclosed yet, added to `disclose`; undefined when every element is disclosed already.
 */
export function withExtraElement(
  disclose: MdocElements,
  held: MdocElements,
): { disclose: Record<string, string[]>; extra: { namespace: string; element: string } } | undefined {
  for (const [namespace, elements] of Object.entries(held)) {
    const element = elements.find((e) => !(disclose[namespace] ?? []).includes(e))
    if (element === undefined) continue
    const next = Object.fromEntries(Object.entries(disclose).map(([ns, list]) => [ns, [...list]]))
    next[namespace] = [...(next[namespace] ?? []), element]
    return { disclose: next, extra: { namespace, element } }
  }
  return undefined
}
