// Compact JWS (the JWT form) with node:crypto KeyObjects: EdDSA (Ed25519), ES256 (P-256), ES256K (secp256k1),
// and PS256 (RSA, RFC 7518 §3.5) for the status lists of an RSA issuer key (Linked Data proofs only).
// jose cannot do ES256K on Node, and node:crypto is several times faster for the other two.
import {
  constants,
  createHash,
  sign as cryptoSign,
  verify as cryptoVerify,
  type KeyObject,
} from 'node:crypto'
import { algForKey, DidKeyError, isJwsAlg, type JwsAlg } from './did-key.ts'

export type JwsErrorReason = 'malformed' | 'alg_not_allowed' | 'alg_key_mismatch' | 'bad_signature'

export class JwsError extends Error {
  override name = 'JwsError'
  constructor(
    readonly reason: JwsErrorReason,
    message: string,
  ) {
    super(message)
  }
}

export interface DecodedJws {
  header: Record<string, unknown>
  payload: Record<string, unknown>
  signingInput: string
  signature: Buffer
}

/** Upper bound on a compact JWS we are willing to parse (credentials with status entries stay far below). */
const MAX_JWS_LENGTH = 256 * 1024
const B64URL = /^[A-Za-z0-9_-]*$/

function b64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
}

/** The JWS algorithms a key signs with here: the did:key ones, and PS256 for an RSA key. */
export type SignatureAlg = JwsAlg | 'PS256'
const isSignatureAlg = (alg: unknown): alg is SignatureAlg => alg === 'PS256' || isJwsAlg(alg)
/** RFC 7518 §3.5: RSASSA-PSS with SHA-256, MGF1 SHA-256, a salt as long as the hash. */
const PSS = { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }

function signWith(alg: SignatureAlg, data: Buffer, key: KeyObject): Buffer {
  if (alg === 'EdDSA') return cryptoSign(null, data, key)
  if (alg === 'PS256') return cryptoSign('sha256', data, { key, ...PSS })
  return cryptoSign('sha256', data, { key, dsaEncoding: 'ieee-p1363' })
}

function keyAlg(key: KeyObject): SignatureAlg {
  if (key.asymmetricKeyType === 'rsa') return 'PS256'
  try {
    return algForKey(key)
  } catch (err) {
    if (err instanceof DidKeyError) throw new JwsError('alg_key_mismatch', err.message)
    throw err
  }
}

export function signJws(
  header: { alg: SignatureAlg; [k: string]: unknown },
  payload: Record<string, unknown>,
  privateKey: KeyObject,
): string {
  if (!isSignatureAlg(header.alg))
    throw new JwsError('alg_not_allowed', `unsupported alg ${String(header.alg)}`)
  if (privateKey.type !== 'private') throw new JwsError('alg_key_mismatch', 'signing needs a private key')
  const keyType = keyAlg(privateKey)
  if (keyType !== header.alg) {
    throw new JwsError('alg_key_mismatch', `alg ${header.alg} does not match the ${keyType} key`)
  }
  const signingInput = `${b64urlJson(header)}.${b64urlJson(payload)}`
  const signature = signWith(header.alg, Buffer.from(signingInput, 'ascii'), privateKey)
  return `${signingInput}.${signature.toString('base64url')}`
}

function parseJsonObject(segment: string, what: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
  } catch {
    throw new JwsError('malformed', `${what} is not base64url-encoded JSON`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new JwsError('malformed', `${what} is not a JSON object`)
  }
  return value as Record<string, unknown>
}

/** Parses a compact JWS without verifying it. Throws JwsError('malformed'). */
export function decodeJws(jws: string): DecodedJws {
  if (typeof jws !== 'string') throw new JwsError('malformed', 'JWS is not a string')
  if (jws.length > MAX_JWS_LENGTH) throw new JwsError('malformed', 'JWS is too long')
  const parts = jws.split('.')
  if (parts.length !== 3) throw new JwsError('malformed', 'JWS must have three dot-separated parts')
  const [h, p, s] = parts as [string, string, string]
  if (!B64URL.test(h) || !B64URL.test(p) || !B64URL.test(s)) {
    throw new JwsError('malformed', 'JWS parts must be base64url without padding')
  }
  if (h.length === 0 || p.length === 0) throw new JwsError('malformed', 'JWS header or payload is empty')
  const header = parseJsonObject(h, 'JWS header')
  const payload = parseJsonObject(p, 'JWS payload')
  if (typeof header.alg !== 'string') throw new JwsError('malformed', 'JWS header has no alg')
  const signature = Buffer.from(s, 'base64url')
  // only the canonical encoding of the signature is accepted, so one signature has one JWS string
  if (signature.toString('base64url') !== s)
    throw new JwsError('malformed', 'JWS signature is not canonical base64url')
  return { header, payload, signingInput: `${h}.${p}`, signature }
}

/**
 * Verifies a compact JWS against a public key. `alg` must be in `options.algorithms` (never `none`) and match
 * the key type; `crit` header parameters are not supported and rejected.
 */
export function verifyJws(
  jws: string,
  publicKey: KeyObject,
  options: { algorithms: readonly SignatureAlg[] },
): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const { header, payload, signingInput, signature } = decodeJws(jws)
  const alg = header.alg as string
  if (!isSignatureAlg(alg) || !options.algorithms.includes(alg)) {
    throw new JwsError('alg_not_allowed', `alg ${alg} is not allowed`)
  }
  if (header.crit !== undefined)
    throw new JwsError('malformed', 'JWS crit header parameters are not supported')
  const keyType = keyAlg(publicKey)
  if (keyType !== alg) throw new JwsError('alg_key_mismatch', `alg ${alg} does not match the ${keyType} key`)
  if (!verifySignature(alg, signingInput, signature, publicKey)) {
    throw new JwsError('bad_signature', 'JWS signature is invalid')
  }
  return { header, payload }
}

function verifySignature(
  alg: SignatureAlg,
  signingInput: string,
  signature: Buffer,
  publicKey: KeyObject,
): boolean {
  if (alg === 'PS256') {
    try {
      return cryptoVerify('sha256', Buffer.from(signingInput, 'ascii'), { key: publicKey, ...PSS }, signature)
    } catch {
      return false
    }
  }
  if (signature.length !== 64) return false
  try {
    const data = Buffer.from(signingInput, 'ascii')
    return alg === 'EdDSA'
      ? cryptoVerify(null, data, publicKey, signature)
      : cryptoVerify('sha256', data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature)
  } catch {
    return false
  }
}

/**
 * The base64url signature over a signing input that a library built itself (the SD-JWT libraries assemble
 * header and payload): the same algorithms and key checks as signJws.
 */
export function signInput(alg: JwsAlg, signingInput: string, privateKey: KeyObject): string {
  if (keyAlg(privateKey) !== alg) throw new JwsError('alg_key_mismatch', `alg ${alg} does not match the key`)
  return signWith(alg, Buffer.from(signingInput, 'ascii'), privateKey).toString('base64url')
}

/** The counterpart of signInput: false for a wrong key type, a malformed or a bad signature. */
export function verifyInput(
  alg: JwsAlg,
  signingInput: string,
  signature: string,
  publicKey: KeyObject,
): boolean {
  try {
    if (keyAlg(publicKey) !== alg) return false
  } catch {
    return false
  }
  const bytes = Buffer.from(signature, 'base64url')
  return bytes.toString('base64url') === signature && verifySignature(alg, signingInput, bytes, publicKey)
}

/** RFC 7638 §3: the members a thumbprint covers, per key type, in lexicographic order. */
const THUMBPRINT_MEMBERS: Record<string, readonly string[]> = {
  EC: ['crv', 'kty', 'x', 'y'],
  OKP: ['crv', 'kty', 'x'],
  RSA: ['e', 'kty', 'n'],
}

/** The JWK SHA-256 thumbprint (RFC 7638), base64url; throws for a key type it does not cover. */
export function jwkThumbprint(jwk: { kty?: string } & Record<string, unknown>): string {
  const members = THUMBPRINT_MEMBERS[jwk.kty ?? '']
  if (!members) throw new Error(`no RFC 7638 thumbprint for key type ${JSON.stringify(jwk.kty)}`)
  const canonical = JSON.stringify(Object.fromEntries(members.map((m) => [m, jwk[m]])))
  return createHash('sha256').update(canonical).digest('base64url')
}
