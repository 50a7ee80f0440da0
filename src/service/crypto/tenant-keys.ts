import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { didKeyFromPublicKey, generateKeyPair, resolveDidKey } from '../../shared/did-key.ts'
import { ConflictError, type SigningAlg, type Store } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'

/** A tenant's signing identity for one algorithm (credentials, status lists, request objects). */
export interface TenantKey {
  alg: SigningAlg
  did: string
  kid: string
  privateKey: KeyObject
  publicKey: KeyObject
}

/**
 * One did:key per tenant and algorithm, generated on first use and persisted, then kept imported in
 * memory: signing must not re-import a key (it costs more than the signature). The tenant signs its
 * credentials, status lists and its verifier's request objects with these keys, hence the name (it was
 * `IssuerKeys`); the store keeps them in the `issuer_keys` table, whose name stays.
 */
export class TenantKeys {
  private readonly cache = new Map<string, Promise<TenantKey>>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  forTenant(tenantId: string, alg: SigningAlg): Promise<TenantKey> {
    const cacheKey = `${tenantId}\u0000${alg}`
    let key = this.cache.get(cacheKey)
    if (!key) {
      key = this.load(tenantId, alg)
      key.catch(() => this.cache.delete(cacheKey))
      this.cache.set(cacheKey, key)
    }
    return key
  }

  /** The DIDs a tenant has issued with (for metadata and trusted-issuer defaults). */
  async didsOf(tenantId: string): Promise<string[]> {
    return (await this.store.issuerKeys.listByTenant(tenantId)).map((k) => resolveDidKey(k.kid).did)
  }

  private async load(tenantId: string, alg: SigningAlg): Promise<TenantKey> {
    let record = await this.store.issuerKeys.get(tenantId, alg)
    if (!record) {
      const pair = generateKeyPair(alg)
      const { kid } = didKeyFromPublicKey(pair.publicKey)
      try {
        await this.store.issuerKeys.create({
          tenantId,
          alg,
          kid,
          privateJwk: pair.privateKey.export({ format: 'jwk' }) as JsonWebKey,
          createdAt: this.clock.now(),
        })
      } catch (error) {
        // Another process created it first: use theirs, so every credential of the tenant agrees.
        if (!(error instanceof ConflictError)) throw error
      }
      record = await this.store.issuerKeys.get(tenantId, alg)
      if (!record) throw new Error(`issuer key ${alg} of tenant ${tenantId} missing after creation`)
    }
    const privateKey = createPrivateKey({
      key: record.privateJwk as import('node:crypto').JsonWebKey,
      format: 'jwk',
    })
    const publicKey = createPublicKey(privateKey)
    const { did, kid } = didKeyFromPublicKey(publicKey)
    return { alg, did, kid, privateKey, publicKey }
  }
}
