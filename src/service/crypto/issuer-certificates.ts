import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { isIP } from 'node:net'
import { certificatePem, generateTestCa, issueCertificate, x5cOf } from '../../shared/x509.ts'
import { ConflictError, type Store } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import type { IssuerKey } from './issuer-keys.ts'

// X.509 issuer keys (HAIP; SD-JWT VC §3.5 lets the issuer-signed JWT name its key with `x5c`). Each tenant
// gets a test CA, generated on first use and persisted (its private key stored as the issuer keys are), and
// a leaf certificate per issuer key that names the tenant's credential issuer URL. The CA certificate is the
// trust anchor relying parties and wallets configure (GET /oid4vci/<tenant>/trust-anchor).

const DAY = 86_400_000
/** The test CA's and its leaves' validity: long, so a persisted chain does not lapse under a demo. */
const VALIDITY_DAYS = 3650

/** How a template's credentials name their issuer key: an x5c chain and the issuer URL it certifies. */
export interface X5cBinding {
  /** Standard base64 DER, the leaf first; the CA (trust anchor) is left out as RFC 5280 path input. */
  x5c: string[]
  /** The credential issuer URL: the SD-JWT VC's `iss` and the leaf's SAN URI. */
  issuer: string
}

/** An issuer key as a template signs with it: did:key, or with an x5c chain. */
export type SigningKey = IssuerKey & { x5c?: X5cBinding }

interface Ca {
  certificate: Buffer
  privateKey: KeyObject
}

export class IssuerCertificates {
  private readonly cas = new Map<string, Promise<Ca>>()
  private readonly leaves = new Map<string, Promise<X5cBinding>>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly urls: PublicUrls,
  ) {}

  /** The tenant's CA certificate as PEM (created on first use); undefined for an unknown tenant. */
  async trustAnchorPem(tenantId: string): Promise<string | undefined> {
    if (!this.cas.has(tenantId) && !(await this.store.tenants.get(tenantId))) return undefined
    return certificatePem((await this.ca(tenantId)).certificate)
  }

  /** `key` with the x5c chain of its leaf certificate (issued and persisted on first use). */
  async withChain(tenantId: string, key: IssuerKey): Promise<SigningKey> {
    const issuer = this.urls.credentialIssuer(tenantId)
    const cacheKey = `${tenantId}\u0000${key.alg}\u0000${issuer}`
    let binding = this.leaves.get(cacheKey)
    if (!binding) {
      binding = this.leaf(tenantId, key, issuer)
      binding.catch(() => this.leaves.delete(cacheKey))
      this.leaves.set(cacheKey, binding)
    }
    return { ...key, x5c: await binding }
  }

  private ca(tenantId: string): Promise<Ca> {
    let ca = this.cas.get(tenantId)
    if (!ca) {
      ca = this.loadCa(tenantId)
      ca.catch(() => this.cas.delete(tenantId))
      this.cas.set(tenantId, ca)
    }
    return ca
  }

  private async loadCa(tenantId: string): Promise<Ca> {
    let record = await this.store.issuerCertificates.getCa(tenantId)
    if (!record) {
      const ca = await generateTestCa({
        name: `CN=vc-harness test CA (${tenantId}), O=vc-harness`,
        now: this.clock.now(),
        validityDays: VALIDITY_DAYS,
      })
      try {
        await this.store.issuerCertificates.createCa({
          tenantId,
          privateJwk: ca.privateKey.export({ format: 'jwk' }) as JsonWebKey,
          certificate: ca.certificate.toString('base64'),
          createdAt: this.clock.now(),
        })
      } catch (error) {
        // Another process created it first: use theirs, so every chain of the tenant ends in one anchor.
        if (!(error instanceof ConflictError)) throw error
      }
      record = await this.store.issuerCertificates.getCa(tenantId)
      if (!record) throw new Error(`CA of tenant ${tenantId} missing after creation`)
    }
    return {
      certificate: Buffer.from(record.certificate, 'base64'),
      privateKey: createPrivateKey({
        key: record.privateJwk as import('node:crypto').JsonWebKey,
        format: 'jwk',
      }),
    }
  }

  private async leaf(tenantId: string, key: IssuerKey, issuer: string): Promise<X5cBinding> {
    let record = await this.store.issuerCertificates.getLeaf(tenantId, key.alg, issuer)
    if (!record) {
      const ca = await this.ca(tenantId)
      const now = this.clock.now()
      const host = new URL(issuer).hostname
      // SD-JWT VC §3.5: a verifier matches `iss` to a SAN URI, or its host to a dNSName (not an IP literal).
      const der = await issueCertificate({
        issuer: ca,
        publicKey: createPublicKey(key.privateKey),
        subject: `CN=vc-harness issuer ${tenantId} (${key.alg})`,
        uris: [issuer],
        dns: isIP(host.replace(/^\[|\]$/g, '')) === 0 ? [host] : [],
        notBefore: new Date(now - DAY),
        notAfter: new Date(now + VALIDITY_DAYS * DAY),
      })
      try {
        await this.store.issuerCertificates.createLeaf({
          tenantId,
          alg: key.alg,
          issuer,
          certificate: der.toString('base64'),
          createdAt: now,
        })
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error
      }
      record = await this.store.issuerCertificates.getLeaf(tenantId, key.alg, issuer)
      if (!record) throw new Error(`${key.alg} certificate of tenant ${tenantId} missing after creation`)
    }
    return { x5c: x5cOf([record.certificate]), issuer }
  }
}
