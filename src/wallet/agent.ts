// The wallet's Veramo agent: in-memory key, DID and KMS stores; did:key holders (Ed25519 by default, P-256 and
// secp256k1 selectable); did:key resolution through key-did-resolver; JWT credential verification through
// @veramo/credential-jwt.
import { createECDH, createPrivateKey, ECDH, type KeyObject } from 'node:crypto'
import {
  createAgent,
  type IAgentContext,
  type ICredentialVerifier,
  type IDIDManager,
  type IIdentifier,
  type IKey,
  type IKeyManager,
  type IResolver,
  type TAgent,
} from '@veramo/core'
import { CredentialProviderJWT } from '@veramo/credential-jwt'
import { CredentialPlugin } from '@veramo/credential-w3c'
import { AbstractIdentifierProvider, DIDManager, MemoryDIDStore } from '@veramo/did-manager'
import { KeyDIDProvider } from '@veramo/did-provider-key'
import { DIDResolverPlugin } from '@veramo/did-resolver'
import { KeyManager, MemoryKeyStore, MemoryPrivateKeyStore } from '@veramo/key-manager'
import { KeyManagementSystem } from '@veramo/kms-local'
import { importOrCreateKey } from '@veramo/utils'
import { getResolver as getKeyDidResolver } from 'key-did-resolver'
import { base58btcEncode, type JwsAlg } from '../shared/did-key.ts'
import type { HolderKeyType } from './store.ts'

export type WalletAgent = TAgent<IKeyManager & IDIDManager & IResolver & ICredentialVerifier>

export interface AgentHandle {
  agent: WalletAgent
  /** the KMS's private key store: read to persist the holder key in a wallet file */
  privateKeyStore: MemoryPrivateKeyStore
}

const KMS = 'local'
const P256_PROVIDER = 'did:key:p256'

interface KeyTypeInfo {
  veramoType: 'Ed25519' | 'Secp256r1' | 'Secp256k1'
  alg: JwsAlg
  provider: string
  /** node:crypto ECDH curve name */
  curve?: string
  crv: string
}

export const KEY_TYPE_INFO: Readonly<Record<HolderKeyType, KeyTypeInfo>> = {
  Ed25519: { veramoType: 'Ed25519', alg: 'EdDSA', provider: 'did:key', crv: 'Ed25519' },
  'P-256': {
    veramoType: 'Secp256r1',
    alg: 'ES256',
    provider: P256_PROVIDER,
    curve: 'prime256v1',
    crv: 'P-256',
  },
  secp256k1: {
    veramoType: 'Secp256k1',
    alg: 'ES256K',
    provider: 'did:key',
    curve: 'secp256k1',
    crv: 'secp256k1',
  },
}

/** Multicodec p256-pub (0x1200) as an unsigned varint. */
const P256_PUB_PREFIX = Uint8Array.of(0x80, 0x24)

function compressEcPoint(publicKeyHex: string, curve: string): Buffer {
  const raw = Buffer.from(publicKeyHex, 'hex')
  if (raw.length === 33) return raw
  // accepts compressed, uncompressed or hybrid points
  return ECDH.convertKey(raw, curve, undefined, undefined, 'compressed') as Buffer
}

/**
 * did:key for P-256 keys (`did:key:zDn…`: multicodec p256-pub + the compressed point). Veramo's KeyDIDProvider
 * silently falls back to Ed25519 when asked for Secp256r1.
 */
export class P256KeyDIDProvider extends AbstractIdentifierProvider {
  constructor(private readonly defaultKms: string) {
    super()
  }

  async createIdentifier(
    { kms, options }: { kms?: string; alias?: string; options?: { privateKeyHex?: string } },
    context: IAgentContext<IKeyManager>,
  ): Promise<Omit<IIdentifier, 'provider'>> {
    const key = await importOrCreateKey(
      {
        kms: kms ?? this.defaultKms,
        options: {
          type: 'Secp256r1',
          ...(options?.privateKeyHex && { privateKeyHex: options.privateKeyHex }),
        },
      },
      context,
    )
    const compressed = compressEcPoint(key.publicKeyHex, 'prime256v1')
    const multibase = `z${base58btcEncode(Buffer.concat([P256_PUB_PREFIX, compressed]))}`
    return { did: `did:key:${multibase}`, controllerKeyId: key.kid, keys: [key], services: [] }
  }

  async updateIdentifier(): Promise<IIdentifier> {
    throw new Error('P256KeyDIDProvider: a did:key cannot be updated')
  }
  async deleteIdentifier(identifier: IIdentifier, context: IAgentContext<IKeyManager>): Promise<boolean> {
    for (const { kid } of identifier.keys) await context.agent.keyManagerDelete({ kid })
    return true
  }
  async addKey(): Promise<never> {
    throw new Error('P256KeyDIDProvider: a did:key has exactly one key')
  }
  async removeKey(): Promise<never> {
    throw new Error('P256KeyDIDProvider: a did:key has exactly one key')
  }
  async addService(): Promise<never> {
    throw new Error('P256KeyDIDProvider: a did:key has no services')
  }
  async removeService(): Promise<never> {
    throw new Error('P256KeyDIDProvider: a did:key has no services')
  }
}

/** A fresh agent with in-memory stores. key-did-resolver resolves Ed25519, P-256 and secp256k1 did:keys. */
export function createWalletAgent(): AgentHandle {
  const privateKeyStore = new MemoryPrivateKeyStore()
  const agent = createAgent<IKeyManager & IDIDManager & IResolver & ICredentialVerifier>({
    plugins: [
      new KeyManager({
        store: new MemoryKeyStore(),
        kms: { [KMS]: new KeyManagementSystem(privateKeyStore) },
      }),
      new DIDManager({
        store: new MemoryDIDStore(),
        defaultProvider: 'did:key',
        providers: {
          'did:key': new KeyDIDProvider({ defaultKms: KMS }),
          [P256_PROVIDER]: new P256KeyDIDProvider(KMS),
        },
      }),
      new DIDResolverPlugin({ ...getKeyDidResolver() }),
      new CredentialPlugin([new CredentialProviderJWT()]),
    ],
  })
  return { agent, privateKeyStore }
}

export interface HolderKey {
  keyType: HolderKeyType
  alg: JwsAlg
  did: string
  /** `${did}#${multibase}`: the key id a proof JWT names */
  kid: string
  /** Veramo's key reference (its `kid`, the public key hex) for keyManagerSign */
  keyRef: string
  key: IKey
}

/**
 * Creates the holder did:key, or re-creates it from a stored private key. The key id is `did#multibase`,
 * as did:key documents define it (Veramo's own `kid` is the public key hex).
 */
export async function createHolder(
  agent: WalletAgent,
  keyType: HolderKeyType,
  privateKeyHex?: string,
): Promise<HolderKey> {
  const info = KEY_TYPE_INFO[keyType]
  const identifier = await agent.didManagerCreate({
    provider: info.provider,
    kms: KMS,
    options: { keyType: info.veramoType, ...(privateKeyHex && { privateKeyHex }) },
  })
  const key = identifier.keys[0]
  if (!key) throw new Error(`did:key provider returned no key for ${identifier.did}`)
  if (key.type !== info.veramoType) {
    throw new Error(`did:key provider made a ${key.type} key where ${info.veramoType} was asked for`)
  }
  const multibase = identifier.did.slice('did:key:'.length)
  return {
    keyType,
    alg: info.alg,
    did: identifier.did,
    kid: `${identifier.did}#${multibase}`,
    keyRef: key.kid,
    key,
  }
}

/** The private key of a holder, hex as kms-local keeps it. */
export async function exportPrivateKeyHex(handle: AgentHandle, holder: HolderKey): Promise<string> {
  const stored = await handle.privateKeyStore.getKey({ alias: holder.keyRef })
  return stored.privateKeyHex
}

const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

/**
 * A node:crypto private key from kms-local hex (Ed25519: seed, or seed + public key; EC: the 32-byte scalar).
 */
export function privateKeyFromHex(keyType: HolderKeyType, privateKeyHex: string): KeyObject {
  const bytes = Buffer.from(privateKeyHex, 'hex')
  if (keyType === 'Ed25519') {
    return createPrivateKey({
      key: Buffer.concat([ED25519_PKCS8_PREFIX, bytes.subarray(0, 32)]),
      format: 'der',
      type: 'pkcs8',
    })
  }
  const info = KEY_TYPE_INFO[keyType]
  const ecdh = createECDH(info.curve as string)
  ecdh.setPrivateKey(bytes)
  const point = ecdh.getPublicKey()
  return createPrivateKey({
    key: {
      kty: 'EC',
      crv: info.crv,
      d: bytes.toString('base64url'),
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33, 65).toString('base64url'),
    },
    format: 'jwk',
  })
}

/** The private JWK (with `d`) of a kms-local key. Used only by the 'jwk-with-private-key' misbehaviour. */
export function privateJwkFromHex(keyType: HolderKeyType, privateKeyHex: string): JsonWebKey {
  return privateKeyFromHex(keyType, privateKeyHex).export({ format: 'jwk' })
}
