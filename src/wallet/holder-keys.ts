// The keys a credential is bound to: the wallet's own did:key (in the Veramo KMS, agent.ts) and the further
// keys of a batch (OpenID4VCI 1.0 §3.3.2 Batch Credential Issuance: copies of one credential, each bound to its
// own key, so that presentations of different copies cannot be linked by the key; §8.3: "Each key provided by
// the Wallet is used to bind to, at most, one Credential"). A further key has the wallet's key type and is a
// did:key too, so a credential bound to it names it as its `subject` (jwt_vc_json `sub`, SD-JWT VC `cnf.jwk`,
// an mdoc's deviceKey), and the wallet signs with it whenever it presents that credential. Further keys are
// node:crypto keys kept by the Wallet (in the file of a file wallet, as the holder key is), never in the KMS.

import { sign as cryptoSign, type KeyObject } from 'node:crypto'
import { didKeyFromPublicKey, generateKeyPair, type JwsAlg } from '../shared/did-key.ts'
import type { DeviceSigner } from './defects.ts'
import type { JwtSigner } from './proof.ts'

/** A key a key proof is made with and a credential is bound to. */
export interface ProofKey {
  did: string
  /** the did:key URL a proof's `kid` names */
  kid: string
  alg: JwsAlg
  publicJwk: JsonWebKey
  signer: JwtSigner
  /** a further key's private key; undefined for the wallet's own key, which stays in the agent's KMS */
  privateKey?: KeyObject | undefined
}

/** A JOSE signature over `bytes` (EdDSA; ES256 / ES256K as IEEE P1363 r||s over SHA-256). */
export function signRaw(alg: JwsAlg, privateKey: KeyObject, bytes: Uint8Array): Uint8Array {
  return new Uint8Array(
    alg === 'EdDSA'
      ? cryptoSign(null, bytes, privateKey)
      : cryptoSign('sha256', bytes, { key: privateKey, dsaEncoding: 'ieee-p1363' }),
  )
}

/** The proof key of a node:crypto private key (a further key of a batch). */
export function proofKeyOf(privateKey: KeyObject): ProofKey {
  const key = didKeyFromPublicKey(privateKey)
  return {
    did: key.did,
    kid: key.kid,
    alg: key.alg,
    publicJwk: { ...key.publicJwk },
    signer: {
      kid: key.kid,
      alg: key.alg,
      sign: async (signingInput) => signRaw(key.alg, privateKey, Buffer.from(signingInput, 'ascii')),
    },
    privateKey,
  }
}

/** A freshly generated further key of `alg` (the wallet's key type). */
export function freshProofKey(alg: JwsAlg): ProofKey {
  return proofKeyOf(generateKeyPair(alg).privateKey)
}

/**
 * The private key as kms-local hex, the form the wallet file keeps the holder key in (agent.ts
 * privateKeyFromHex reads it back): an Ed25519 seed, or an EC private scalar, 32 bytes each.
 */
export function privateKeyHexOf(privateKey: KeyObject): string {
  const { d } = privateKey.export({ format: 'jwk' })
  if (typeof d !== 'string') throw new Error('not a private key')
  return Buffer.from(d, 'base64url').toString('hex')
}

/** An mdoc device signer (ISO 18013-5 §9.1.3.6) over a further key: ES256 for P-256, EdDSA for Ed25519. */
export function deviceSignerOf(alg: JwsAlg, privateKey: KeyObject): DeviceSigner | undefined {
  if (alg === 'ES256K') return undefined
  return { alg, sign: (bytes) => signRaw(alg, privateKey, bytes) }
}
