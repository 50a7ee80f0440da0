import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import {
  base58btcDecode,
  base58btcEncode,
  DidKeyError,
  didKeyFromPublicKey,
  generateKeyPair,
  resolveDidKey,
} from '../../shared/did-key.ts'

// The did:key types Linked Data proofs sign with (did:key method, "Key Types"): the three JWS ones of
// shared/did-key.ts (Ed25519 0xed, P-256 0x1200, secp256k1 0xe7), P-384 (0x1201, compressed point) for
// ecdsa-rdfc-2019 and JsonWebSignature2020, and RSA (0x1205, the PKCS#1 DER public key) for
// RsaSignature2018 and JsonWebSignature2020. Nothing here touches the network.

export type LdKeyType = 'Ed25519' | 'P-256' | 'P-384' | 'secp256k1' | 'RSA'

export interface LdKey {
  did: string
  /** `${did}#${multibase}`, the key id did:key documents define */
  kid: string
  keyType: LdKeyType
  publicKey: KeyObject
  publicJwk: JsonWebKey
}

const DID_KEY_PREFIX = 'did:key:'
/** An RSA 4096 did:key is ~750 characters; anything longer is refused before base58 decoding (quadratic). */
const MAX_DID_LENGTH = 1024
const P384_PREFIX = [0x81, 0x24] as const
const RSA_PREFIX = [0x85, 0x24] as const
const JWS_KEY_TYPE = { EdDSA: 'Ed25519', ES256: 'P-256', ES256K: 'secp256k1' } as const

/** The key type of a node:crypto key; throws for one no Linked Data proof here signs with. */
export function keyTypeOf(key: KeyObject): LdKeyType {
  const type = key.asymmetricKeyType
  if (type === 'ed25519') return 'Ed25519'
  if (type === 'rsa') return 'RSA'
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve
    if (curve === 'prime256v1') return 'P-256'
    if (curve === 'secp384r1') return 'P-384'
    if (curve === 'secp256k1') return 'secp256k1'
  }
  const curve = type === 'ec' ? ` (curve ${key.asymmetricKeyDetails?.namedCurve})` : ''
  throw new Error(
    `unsupported key type ${type ?? key.type}${curve}: Linked Data proofs use Ed25519, P-256, P-384, secp256k1 or RSA`,
  )
}

export function generateLdKeyPair(keyType: LdKeyType): { privateKey: KeyObject; publicKey: KeyObject } {
  switch (keyType) {
    case 'Ed25519':
      return generateKeyPair('EdDSA')
    case 'P-256':
      return generateKeyPair('ES256')
    case 'secp256k1':
      return generateKeyPair('ES256K')
    case 'P-384':
      return generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
    case 'RSA':
      return generateKeyPairSync('rsa', { modulusLength: 2048 })
  }
}

const cache = new Map<string, LdKey>()
function remember(key: LdKey): LdKey {
  if (cache.size >= 1000) cache.delete(cache.keys().next().value as string)
  cache.set(key.did, Object.freeze(key))
  return key
}

/** The did:key of a public (or private) key. */
export function ldKeyFromPublicKey(key: KeyObject): LdKey {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key
  const keyType = keyTypeOf(publicKey)
  if (keyType === 'Ed25519' || keyType === 'P-256' || keyType === 'secp256k1') {
    const { did, kid, publicJwk } = didKeyFromPublicKey(publicKey)
    return { did, kid, keyType, publicKey, publicJwk: { ...publicJwk } }
  }
  const publicJwk = publicKey.export({ format: 'jwk' }) as JsonWebKey
  let bytes: Buffer
  if (keyType === 'RSA') {
    const bits = publicKey.asymmetricKeyDetails?.modulusLength ?? 0
    if (bits < 2048 || bits > 4096)
      throw new DidKeyError(`RSA key of ${bits} bits: did:key RSA keys are 2048 to 4096 bits`)
    bytes = Buffer.concat([Buffer.from(RSA_PREFIX), publicKey.export({ format: 'der', type: 'pkcs1' })])
  } else {
    const x = Buffer.from(publicJwk.x as string, 'base64url')
    const y = Buffer.from(publicJwk.y as string, 'base64url')
    bytes = Buffer.concat([Buffer.from(P384_PREFIX), Buffer.of(0x02 | ((y[y.length - 1] as number) & 1)), x])
  }
  const multibase = `z${base58btcEncode(bytes)}`
  const did = `${DID_KEY_PREFIX}${multibase}`
  return remember({ did, kid: `${did}#${multibase}`, keyType, publicKey, publicJwk })
}

/** The multicodec of a did:key value's bytes (an unsigned varint), for messages. */
function multicodecOf(bytes: Uint8Array): string {
  let code = 0
  for (let i = 0, shift = 0; i < Math.min(bytes.length, 3); i++, shift += 7) {
    const b = bytes[i] as number
    code += (b & 0x7f) * 2 ** shift
    if ((b & 0x80) === 0) break
  }
  return `0x${code.toString(16)}`
}

const startsWith = (bytes: Uint8Array, prefix: readonly [number, number]) =>
  bytes[0] === prefix[0] && bytes[1] === prefix[1]

/** P-384 (0x1201, compressed point) and RSA (0x1205, PKCS#1 DER RSAPublicKey), did:key §3.1.x. */
function decodeWide(did: string, multibase: string, bytes: Uint8Array): LdKey {
  const raw = Buffer.from(bytes.subarray(2))
  let publicKey: KeyObject
  let keyType: LdKeyType
  if (startsWith(bytes, RSA_PREFIX)) {
    keyType = 'RSA'
    try {
      publicKey = createPublicKey({ key: raw, format: 'der', type: 'pkcs1' })
    } catch {
      throw new DidKeyError('RSA public key is not a PKCS#1 DER RSAPublicKey')
    }
    // One key, one DID: a non-canonical encoding that OpenSSL still parses is refused.
    if (!publicKey.export({ format: 'der', type: 'pkcs1' }).equals(raw))
      throw new DidKeyError('RSA public key is not in canonical PKCS#1 DER')
    const bits = publicKey.asymmetricKeyDetails?.modulusLength ?? 0
    if (bits < 2048 || bits > 4096)
      throw new DidKeyError(`RSA key of ${bits} bits: did:key RSA keys are 2048 to 4096 bits`)
  } else {
    keyType = 'P-384'
    if (raw.length !== 49 || (raw[0] !== 0x02 && raw[0] !== 0x03))
      throw new DidKeyError('P-384 public key is not a 49-byte compressed point')
    try {
      publicKey = createPublicKey({ key: Buffer.concat([P384_SPKI, raw]), format: 'der', type: 'spki' })
    } catch {
      throw new DidKeyError('P-384 public key is not a point on the curve')
    }
  }
  const publicJwk = publicKey.export({ format: 'jwk' }) as JsonWebKey
  return { did, kid: `${did}#${multibase}`, keyType, publicKey, publicJwk }
}

/** SubjectPublicKeyInfo header of a compressed P-384 point (id-ecPublicKey, secp384r1). */
const P384_SPKI = Buffer.from('3046301006072a8648ce3d020106052b81040022033200', 'hex')

/** The multicodecs shared/did-key.ts decodes (Ed25519 0xed, P-256 0x1200, secp256k1 0xe7). */
const JWS_PREFIXES: readonly (readonly [number, number])[] = [
  [0xed, 0x01],
  [0x80, 0x24],
  [0xe7, 0x01],
]

const shown = (value: string) => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)

/**
 * Resolves `did:key:z…` or its key id `did:key:z…#z…` (did:key §3.1: the fragment is the multibase value,
 * the document's one verification method). Throws DidKeyError naming what is wrong.
 */
export function resolveLdKey(didOrKid: string): LdKey {
  if (typeof didOrKid !== 'string' || !didOrKid.startsWith(DID_KEY_PREFIX))
    throw new DidKeyError(
      `${typeof didOrKid === 'string' ? shown(didOrKid) : typeof didOrKid} is not a did:key`,
    )
  if (didOrKid.length > 2 * MAX_DID_LENGTH + 1) throw new DidKeyError('did:key too long')
  const hash = didOrKid.indexOf('#')
  const did = hash < 0 ? didOrKid : didOrKid.slice(0, hash)
  if (did.length > MAX_DID_LENGTH) throw new DidKeyError('did:key too long')
  let key = cache.get(did)
  if (!key) {
    const multibase = did.slice(DID_KEY_PREFIX.length)
    if (multibase[0] !== 'z')
      throw new DidKeyError('did:key value is not base58btc multibase (must start with z)')
    const bytes = base58btcDecode(multibase.slice(1))
    if (!bytes) throw new DidKeyError('did:key value contains a character outside the base58btc alphabet')
    if (startsWith(bytes, RSA_PREFIX) || startsWith(bytes, P384_PREFIX))
      key = remember(decodeWide(did, multibase, bytes))
    else if (JWS_PREFIXES.some((prefix) => startsWith(bytes, prefix))) {
      // The three JWS key types decode exactly as the rest of vc-harness decodes them.
      const { alg, publicKey, publicJwk, kid } = resolveDidKey(did)
      key = remember({ did, kid, keyType: JWS_KEY_TYPE[alg], publicKey, publicJwk: { ...publicJwk } })
    } else
      throw new DidKeyError(
        `unsupported multicodec ${multicodecOf(bytes)}: Linked Data proofs use Ed25519, P-256, P-384, secp256k1 or RSA keys`,
      )
  }
  if (hash >= 0 && didOrKid !== key.kid)
    throw new DidKeyError(
      `key id fragment ${shown(didOrKid.slice(hash))} is not the did:key's own key (${key.kid})`,
    )
  return key
}
