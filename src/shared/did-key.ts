// did:key for the three JWS algorithms vc-harness signs with: Ed25519 (EdDSA), P-256 (ES256) and
// secp256k1 (ES256K). Keys are node:crypto KeyObjects; nothing here touches the network.
import {
  createPublicKey,
  ECDH,
  type KeyObject,
  generateKeyPairSync as nodeGenerateKeyPair,
} from 'node:crypto'

export type JwsAlg = 'EdDSA' | 'ES256' | 'ES256K'
export const JWS_ALGS: readonly JwsAlg[] = Object.freeze(['EdDSA', 'ES256', 'ES256K'] as const)

export interface DidKey {
  did: string
  /** `${did}#${multibase}`, the key id did:key documents define */
  kid: string
  alg: JwsAlg
  publicKey: KeyObject
  publicJwk: JsonWebKey
}

export class DidKeyError extends Error {
  override name = 'DidKeyError'
}

interface KeyTypeInfo {
  alg: JwsAlg
  /** multicodec code, for messages */
  code: number
  /** the code as an unsigned varint */
  prefix: readonly [number, number]
  /** node:crypto curve name for ECDH.convertKey; undefined for Ed25519 */
  ecdhCurve?: string
  /** JWK crv */
  crv: string
  keyLength: number
}

const ED25519: KeyTypeInfo = { alg: 'EdDSA', code: 0xed, prefix: [0xed, 0x01], crv: 'Ed25519', keyLength: 32 }
const P256: KeyTypeInfo = {
  alg: 'ES256',
  code: 0x1200,
  prefix: [0x80, 0x24],
  ecdhCurve: 'prime256v1',
  crv: 'P-256',
  keyLength: 33,
}
const SECP256K1: KeyTypeInfo = {
  alg: 'ES256K',
  code: 0xe7,
  prefix: [0xe7, 0x01],
  ecdhCurve: 'secp256k1',
  crv: 'secp256k1',
  keyLength: 33,
}
const KEY_TYPES: readonly KeyTypeInfo[] = [ED25519, P256, SECP256K1]
const BY_ALG: Readonly<Record<JwsAlg, KeyTypeInfo>> = { EdDSA: ED25519, ES256: P256, ES256K: SECP256K1 }

const DID_KEY_PREFIX = 'did:key:'
/** Longer than any did:key of the supported types (~57 chars); bounds the quadratic base58 decoder. */
const MAX_DID_LENGTH = 128

// --- base58btc (Bitcoin alphabet) --------------------------------------------------------------------

const B58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
const B58_MAP = new Int16Array(128).fill(-1)
for (let i = 0; i < B58_ALPHABET.length; i++) B58_MAP[B58_ALPHABET.charCodeAt(i)] = i

export function base58btcEncode(bytes: Uint8Array): string {
  let zeros = 0
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++
  // base58 digits, least significant first
  const digits: number[] = []
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i] as number
    for (let j = 0; j < digits.length; j++) {
      carry += (digits[j] as number) << 8
      digits[j] = carry % 58
      carry = (carry / 58) | 0
    }
    while (carry > 0) {
      digits.push(carry % 58)
      carry = (carry / 58) | 0
    }
  }
  let out = '1'.repeat(zeros)
  for (let i = digits.length - 1; i >= 0; i--) out += B58_ALPHABET[digits[i] as number]
  return out
}

/** Returns undefined for a character outside the alphabet. */
export function base58btcDecode(text: string): Uint8Array | undefined {
  let zeros = 0
  while (zeros < text.length && text.charCodeAt(zeros) === 0x31 /* '1' */) zeros++
  // bytes, least significant first
  const bytes: number[] = []
  for (let i = zeros; i < text.length; i++) {
    const c = text.charCodeAt(i)
    const value = c < 128 ? (B58_MAP[c] as number) : -1
    if (value < 0) return undefined
    let carry = value
    for (let j = 0; j < bytes.length; j++) {
      carry += (bytes[j] as number) * 58
      bytes[j] = carry & 0xff
      carry >>= 8
    }
    while (carry > 0) {
      bytes.push(carry & 0xff)
      carry >>= 8
    }
  }
  const out = new Uint8Array(zeros + bytes.length)
  for (let i = 0; i < bytes.length; i++) out[out.length - 1 - i] = bytes[i] as number
  return out
}

// --- key types -----------------------------------------------------------------------------------------

function keyTypeOf(key: KeyObject): KeyTypeInfo {
  if (key.type === 'secret') throw new DidKeyError('a secret key is not an asymmetric key')
  const type = key.asymmetricKeyType
  if (type === 'ed25519') return ED25519
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve
    if (curve === 'prime256v1') return P256
    if (curve === 'secp256k1') return SECP256K1
    throw new DidKeyError(`unsupported EC curve ${curve ?? '(unknown)'}: use P-256 or secp256k1`)
  }
  throw new DidKeyError(`unsupported key type ${type ?? '(unknown)'}: use Ed25519, P-256 or secp256k1`)
}

export function algForKey(key: KeyObject): JwsAlg {
  return keyTypeOf(key).alg
}

export function generateKeyPair(alg: JwsAlg): { privateKey: KeyObject; publicKey: KeyObject } {
  switch (alg) {
    case 'EdDSA':
      return nodeGenerateKeyPair('ed25519')
    case 'ES256':
      return nodeGenerateKeyPair('ec', { namedCurve: 'prime256v1' })
    case 'ES256K':
      return nodeGenerateKeyPair('ec', { namedCurve: 'secp256k1' })
    default:
      throw new DidKeyError(`unsupported algorithm ${String(alg)}`)
  }
}

export function didOf(kid: string): string {
  const hash = kid.indexOf('#')
  return hash < 0 ? kid : kid.slice(0, hash)
}

function freezeDidKey(didKey: DidKey): DidKey {
  Object.freeze(didKey.publicJwk)
  return Object.freeze(didKey)
}

export function didKeyFromPublicKey(publicKey: KeyObject): DidKey {
  const info = keyTypeOf(publicKey)
  const pub = publicKey.type === 'private' ? createPublicKey(publicKey) : publicKey
  const jwk = pub.export({ format: 'jwk' })
  if (typeof jwk.x !== 'string') throw new DidKeyError('public key has no x coordinate')
  const x = Buffer.from(jwk.x, 'base64url')
  let raw: Buffer
  let publicJwk: JsonWebKey
  if (info === ED25519) {
    raw = x
    publicJwk = { kty: 'OKP', crv: 'Ed25519', x: jwk.x }
  } else {
    if (typeof jwk.y !== 'string') throw new DidKeyError('EC public key has no y coordinate')
    const y = Buffer.from(jwk.y, 'base64url')
    raw = Buffer.concat([Buffer.of(0x02 | ((y[y.length - 1] as number) & 1)), x])
    publicJwk = { kty: 'EC', crv: info.crv, x: jwk.x, y: jwk.y }
  }
  const multibase = `z${base58btcEncode(Buffer.concat([Buffer.from(info.prefix), raw]))}`
  const did = `${DID_KEY_PREFIX}${multibase}`
  const didKey = freezeDidKey({ did, kid: `${did}#${multibase}`, alg: info.alg, publicKey: pub, publicJwk })
  cachePut(did, didKey)
  return didKey
}

function decodeDidKey(did: string): DidKey {
  if (!did.startsWith(DID_KEY_PREFIX)) throw new DidKeyError('not a did:key')
  if (did.length > MAX_DID_LENGTH) throw new DidKeyError('did:key too long')
  const multibase = did.slice(DID_KEY_PREFIX.length)
  if (multibase[0] !== 'z')
    throw new DidKeyError('did:key value is not base58btc multibase (must start with z)')
  const bytes = base58btcDecode(multibase.slice(1))
  if (!bytes) throw new DidKeyError('did:key value contains a character outside the base58btc alphabet')
  const info = KEY_TYPES.find((t) => bytes[0] === t.prefix[0] && bytes[1] === t.prefix[1])
  if (!info) {
    throw new DidKeyError(
      `unsupported multicodec ${describeMulticodec(bytes)}: use Ed25519, P-256 or secp256k1`,
    )
  }
  const raw = bytes.subarray(2)
  if (raw.length !== info.keyLength) {
    throw new DidKeyError(`${info.crv} public key must be ${info.keyLength} bytes, got ${raw.length}`)
  }
  let publicJwk: JsonWebKey
  if (info.ecdhCurve) {
    if (raw[0] !== 0x02 && raw[0] !== 0x03)
      throw new DidKeyError(`${info.crv} public key is not a compressed point`)
    let uncompressed: Buffer
    try {
      uncompressed = ECDH.convertKey(raw, info.ecdhCurve, undefined, undefined, 'uncompressed') as Buffer
    } catch {
      throw new DidKeyError(`${info.crv} public key is not a point on the curve`)
    }
    publicJwk = {
      kty: 'EC',
      crv: info.crv,
      x: uncompressed.subarray(1, 33).toString('base64url'),
      y: uncompressed.subarray(33, 65).toString('base64url'),
    }
  } else {
    publicJwk = { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }
  }
  let publicKey: KeyObject
  try {
    publicKey = createPublicKey({ key: { ...publicJwk }, format: 'jwk' })
  } catch {
    throw new DidKeyError(`${info.crv} public key is invalid`)
  }
  return freezeDidKey({ did, kid: `${did}#${multibase}`, alg: info.alg, publicKey, publicJwk })
}

function describeMulticodec(bytes: Uint8Array): string {
  // unsigned varint, at most 3 bytes is plenty for a message
  let code = 0
  for (let i = 0, shift = 0; i < Math.min(bytes.length, 3); i++, shift += 7) {
    const b = bytes[i] as number
    code += (b & 0x7f) * 2 ** shift
    if ((b & 0x80) === 0) break
  }
  return `0x${code.toString(16)}`
}

// --- bounded LRU of resolved did:keys (resolution is on the hot path) --------------------------------

const CACHE_MAX = 10_000
const cache = new Map<string, DidKey>()

function cachePut(did: string, didKey: DidKey): void {
  cache.delete(did)
  cache.set(did, didKey)
  if (cache.size > CACHE_MAX) {
    const oldest = cache.keys().next().value
    if (oldest !== undefined) cache.delete(oldest)
  }
}

/** Accepts `did:key:z…` or `did:key:z…#z…`; the fragment, when present, must equal the multibase value. */
export function resolveDidKey(didOrKid: string): DidKey {
  if (typeof didOrKid !== 'string') throw new DidKeyError('not a did:key')
  const hash = didOrKid.indexOf('#')
  const did = hash < 0 ? didOrKid : didOrKid.slice(0, hash)
  let didKey = cache.get(did)
  if (didKey) {
    // refresh recency
    cache.delete(did)
    cache.set(did, didKey)
  } else {
    didKey = decodeDidKey(did)
    cachePut(did, didKey)
  }
  if (hash >= 0 && didOrKid !== didKey.kid) throw new DidKeyError('kid fragment does not match the did')
  return didKey
}

/** The JWS algorithm names as a set, for quick membership checks. */
export function isJwsAlg(value: unknown): value is JwsAlg {
  return typeof value === 'string' && Object.hasOwn(BY_ALG, value)
}
