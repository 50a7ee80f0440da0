import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
} from 'node:crypto'
import type { JWK } from 'jose'
import type { Store } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'

/** The service's own signing key (access tokens). EdDSA over Ed25519; the private key never leaves the store. */
export interface ServiceKey {
  kid: string
  alg: 'EdDSA'
  /** node:crypto KeyObjects: signing and verifying through them costs a fraction of the WebCrypto path. */
  privateKey: KeyObject
  publicKey: KeyObject
  publicJwk: JWK
  /** A 32-byte secret for `label`, derived from the private key (HKDF): HMAC keys that need no storage. */
  deriveSecret(label: string): Buffer
}

const ALG = 'EdDSA'

function importKey(kid: string, privateJwk: JsonWebKey, publicJwk: JsonWebKey): ServiceKey {
  return {
    kid,
    alg: ALG,
    privateKey: createPrivateKey({ key: privateJwk as import('node:crypto').JsonWebKey, format: 'jwk' }),
    publicKey: createPublicKey({ key: publicJwk as import('node:crypto').JsonWebKey, format: 'jwk' }),
    publicJwk: { ...(publicJwk as JWK), kid, alg: ALG, use: 'sig' },
    deriveSecret: (label) =>
      Buffer.from(
        hkdfSync('sha256', Buffer.from(String(privateJwk.d), 'base64url'), 'vc-harness', label, 32),
      ),
  }
}

/**
 * Loads the persisted service key, creating one on first boot. Imported once: signing and
 * verification then reuse the KeyObjects instead of re-importing per request.
 */
export async function loadServiceKey(store: Store, clock: Clock): Promise<ServiceKey> {
  if ((await store.serviceKeys.list()).length === 0) {
    const pair = generateKeyPairSync('ed25519')
    const publicJwk = pair.publicKey.export({ format: 'jwk' }) as JsonWebKey
    const privateJwk = pair.privateKey.export({ format: 'jwk' }) as JsonWebKey
    // RFC 7638 thumbprint: the required members in lexicographic order, no whitespace
    const kid = createHash('sha256')
      .update(JSON.stringify({ crv: publicJwk.crv, kty: publicJwk.kty, x: publicJwk.x }))
      .digest('base64url')
    const key = { kid, alg: ALG, privateJwk, publicJwk, createdAt: clock.now() }
    // Written only if no other process wrote one meanwhile (instances starting together on PostgreSQL).
    await store.transaction((repos) => repos.serviceKeys.createFirst(key))
  }
  // Re-read and take the oldest: the one key written first, or the oldest of an older database's.
  const [chosen] = await store.serviceKeys.list()
  if (!chosen) throw new Error('service key missing after creation')
  return importKey(chosen.kid, chosen.privateJwk, chosen.publicJwk)
}
