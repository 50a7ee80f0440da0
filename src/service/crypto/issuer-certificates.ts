import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { isIP } from 'node:net'
import {
  certificatePem,
  DS_MAX_DAYS,
  generateIaca,
  generateTestCa,
  issueCertificate,
  issueDocumentSigner,
  mdocCertificateProblems,
  parseCertificates,
  subjectAltNames,
  x5cOf,
  x509Hash,
} from '../../shared/x509.ts'
import type { MdocIaca, VerifierCertificate } from '../config/schema.ts'
import { ConflictError, type Store } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import type { TenantKey } from './tenant-keys.ts'

// X.509 issuer keys (HAIP; SD-JWT VC §3.5 lets the issuer-signed JWT name its key with `x5c`). Each tenant
// gets a test CA, generated on first use and persisted (its private key stored as the issuer keys are), and
// a leaf certificate per issuer key that names the tenant's credential issuer URL. The CA certificate is the
// trust anchor relying parties and wallets configure (GET /oid4vci/<tenant>/trust-anchor).

const DAY = 86_400_000
/** The test CA's and its leaves' validity: long, so a persisted chain does not lapse under a demo. */
const VALIDITY_DAYS = 3650
/** A new mdoc document signer certificate this often (each valid DS_MAX_DAYS). */
const DS_RENEWAL_DAYS = 365

/** How a template's credentials name their issuer key: an x5c chain and the issuer URL it certifies. */
export interface X5cBinding {
  /** Standard base64 DER, the leaf first; the CA (trust anchor) is left out as RFC 5280 path input. */
  x5c: string[]
  /** The credential issuer URL: the SD-JWT VC's `iss` and the leaf's SAN URI. */
  issuer: string
}

/**
 * A verifier's signing chain for the x509 client identifier prefixes of OpenID4VP 1.0 §5.9.3: the leaf names
 * the service's host as a dNSName SAN (`x509_san_dns:<host>`) and is named by its hash (`x509_hash:<hash>`).
 */
export interface VerifierChain {
  /** Standard base64 DER, the leaf first (the request object's `x5c` header). */
  x5c: string[]
  dnsName: string
  /** base64url SHA-256 of the leaf's DER (the `x509_hash` client identifier). */
  hash: string
}

/** An issuer key as a template signs with it: did:key, or with an x5c chain. */
export type SigningKey = TenantKey & {
  x5c?: X5cBinding
  /** mso_mdoc: the document signer certificate of this key (standard base64 DER), issued by the tenant's IACA. */
  mdocChain?: string[]
}

interface Ca {
  certificate: Buffer
  privateKey: KeyObject
}

export class IssuerCertificates {
  private readonly cas = new Map<string, Promise<Ca>>()
  private readonly leaves = new Map<string, Promise<X5cBinding>>()
  private readonly verifierLeaves = new Map<string, Promise<VerifierChain>>()
  private readonly iacas = new Map<string, Promise<Ca>>()
  private readonly signers = new Map<string, Promise<string[]>>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly urls: PublicUrls,
    /** Tenants whose configuration names their own IACA (tenants[].mdocIaca), read at start-up. */
    private readonly configuredIacas: ReadonlyMap<string, Ca> = new Map(),
  ) {}

  /** The tenant's IACA certificate as PEM (created on first use); undefined for an unknown tenant. */
  async iacaPem(tenantId: string): Promise<string | undefined> {
    if (!this.iacas.has(tenantId) && !(await this.store.tenants.get(tenantId))) return undefined
    return certificatePem((await this.iaca(tenantId)).certificate)
  }

  /**
   * The document signer certificate of `key` (the tenant's ES256 issuer key), issued by the tenant's IACA
   * (ISO 18013-5 Annex B.1.4) and persisted on first use: an mdoc's issuerAuth x5chain. The same key signs
   * the tenant's ES256 status lists, so a verifier finds the status list signed by the key that signed the MSO.
   */
  mdocChain(tenantId: string, key: TenantKey): Promise<string[]> {
    // Annex B.1.4 limits a DS to 457 days: one is issued per year (its `period`), so the one in use always
    // has three months or more to run; the credentials it signs end no later than it does (shared/mdoc.ts).
    const period = Math.floor(this.clock.now() / (DS_RENEWAL_DAYS * DAY))
    const cacheKey = `${tenantId}\u0000${period}`
    let chain = this.signers.get(cacheKey)
    if (!chain) {
      chain = this.documentSigner(tenantId, key, period)
      chain.catch(() => this.signers.delete(cacheKey))
      this.signers.set(cacheKey, chain)
    }
    return chain
  }

  private async documentSigner(tenantId: string, key: TenantKey, period: number): Promise<string[]> {
    const iaca = await this.iaca(tenantId)
    const iacaUntil = parseCertificates(iaca.certificate, 'IACA certificate')[0]?.notAfter.getTime() ?? 0
    // Stored beside the issuer leaves, under a name of its IACA and period: a configured IACA gets its own DS.
    const name = `mdoc document signer ${x509Hash(iaca.certificate)} ${period}`
    const record = await this.persistedLeaf(tenantId, key.alg, name, async (_ca, now) =>
      issueDocumentSigner({
        iaca,
        publicKey: createPublicKey(key.privateKey),
        commonName: `vc-harness document signer ${tenantId}`,
        uri: this.urls.credentialIssuer(tenantId),
        notBefore: new Date(now - DAY),
        // never past its IACA (RFC 5280: the path is invalid once the root expired)
        notAfter: new Date(Math.min(now - DAY + DS_MAX_DAYS * DAY, iacaUntil)),
      }),
    )
    return [record]
  }

  private iaca(tenantId: string): Promise<Ca> {
    const configured = this.configuredIacas.get(tenantId)
    if (configured) return Promise.resolve(configured)
    let iaca = this.iacas.get(tenantId)
    if (!iaca) {
      iaca = this.loadIaca(tenantId)
      iaca.catch(() => this.iacas.delete(tenantId))
      this.iacas.set(tenantId, iaca)
    }
    return iaca
  }

  private async loadIaca(tenantId: string): Promise<Ca> {
    let record = await this.store.issuerCertificates.getIaca(tenantId)
    if (!record) {
      const iaca = await generateIaca({
        commonName: `vc-harness IACA (${tenantId})`,
        uri: this.urls.credentialIssuer(tenantId),
        now: this.clock.now(),
        validityDays: VALIDITY_DAYS,
      })
      try {
        await this.store.issuerCertificates.createIaca({
          tenantId,
          privateJwk: iaca.privateKey.export({ format: 'jwk' }) as JsonWebKey,
          certificate: iaca.certificate.toString('base64'),
          createdAt: this.clock.now(),
        })
      } catch (error) {
        // Another process created it first: use theirs, so every mdoc of the tenant ends in one IACA.
        if (!(error instanceof ConflictError)) throw error
      }
      record = await this.store.issuerCertificates.getIaca(tenantId)
      if (!record) throw new Error(`IACA of tenant ${tenantId} missing after creation`)
    }
    return {
      certificate: Buffer.from(record.certificate, 'base64'),
      privateKey: createPrivateKey({
        key: record.privateJwk as import('node:crypto').JsonWebKey,
        format: 'jwk',
      }),
    }
  }

  /** The tenant's CA certificate as PEM (created on first use); undefined for an unknown tenant. */
  async trustAnchorPem(tenantId: string): Promise<string | undefined> {
    if (!this.cas.has(tenantId) && !(await this.store.tenants.get(tenantId))) return undefined
    return certificatePem((await this.ca(tenantId)).certificate)
  }

  /** `key` with the x5c chain of its leaf certificate (issued and persisted on first use). */
  async withChain(tenantId: string, key: TenantKey): Promise<SigningKey> {
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

  /**
   * The chain the tenant's verifier signs request objects with, for a P-256 `key`: a leaf of the tenant's
   * test CA naming the public host as dNSName (an IP literal too: wallets compare it with the response_uri's
   * host as text, §5.9.3), issued and persisted on first use.
   */
  verifierChain(tenantId: string, key: TenantKey): Promise<VerifierChain> {
    const origin = new URL(this.urls.absolute('/')).origin
    const cacheKey = `${tenantId}\u0000${key.alg}\u0000${origin}`
    let chain = this.verifierLeaves.get(cacheKey)
    if (!chain) {
      chain = this.verifierLeaf(tenantId, key, origin)
      chain.catch(() => this.verifierLeaves.delete(cacheKey))
      this.verifierLeaves.set(cacheKey, chain)
    }
    return chain
  }

  private async verifierLeaf(tenantId: string, key: TenantKey, origin: string): Promise<VerifierChain> {
    const dnsName = new URL(origin).hostname.replace(/^\[|\]$/g, '')
    // Stored beside the issuer leaves; the "verifier " prefix keeps the two kinds apart in one table.
    const record = await this.persistedLeaf(tenantId, key.alg, `verifier ${origin}`, async (ca, now) =>
      issueCertificate({
        issuer: ca,
        publicKey: createPublicKey(key.privateKey),
        subject: `CN=vc-harness verifier ${tenantId} (${key.alg})`,
        uris: [origin],
        dns: [dnsName],
        notBefore: new Date(now - DAY),
        notAfter: new Date(now + VALIDITY_DAYS * DAY),
      }),
    )
    return { x5c: x5cOf([record]), dnsName, hash: x509Hash(record) }
  }

  /** The stored leaf under (tenant, alg, name), issued by `issue` with the tenant's CA when there is none. */
  private async persistedLeaf(
    tenantId: string,
    alg: TenantKey['alg'],
    name: string,
    issue: (ca: Ca, now: number) => Promise<Buffer>,
  ): Promise<string> {
    let record = await this.store.issuerCertificates.getLeaf(tenantId, alg, name)
    if (!record) {
      const now = this.clock.now()
      const der = await issue(await this.ca(tenantId), now)
      try {
        await this.store.issuerCertificates.createLeaf({
          tenantId,
          alg,
          issuer: name,
          certificate: der.toString('base64'),
          createdAt: now,
        })
      } catch (error) {
        // Another process created it first: use theirs.
        if (!(error instanceof ConflictError)) throw error
      }
      record = await this.store.issuerCertificates.getLeaf(tenantId, alg, name)
      if (!record)
        throw new Error(`${alg} certificate "${name}" of tenant ${tenantId} missing after creation`)
    }
    return record.certificate
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

  private async leaf(tenantId: string, key: TenantKey, issuer: string): Promise<X5cBinding> {
    const host = new URL(issuer).hostname
    const record = await this.persistedLeaf(tenantId, key.alg, issuer, (ca, now) =>
      // SD-JWT VC §3.5: a verifier matches `iss` to a SAN URI, or its host to a dNSName (not an IP literal).
      issueCertificate({
        issuer: ca,
        publicKey: createPublicKey(key.privateKey),
        subject: `CN=vc-harness issuer ${tenantId} (${key.alg})`,
        uris: [issuer],
        dns: isIP(host.replace(/^\[|\]$/g, '')) === 0 ? [host] : [],
        notBefore: new Date(now - DAY),
        notAfter: new Date(now + VALIDITY_DAYS * DAY),
      }),
    )
    return { x5c: x5cOf([record]), issuer }
  }
}

/**
 * A configured IACA (tenants[].mdocIaca), read once at start-up; throws an Error naming what is wrong: the
 * certificate must fit ISO 18013-5 Annex B.1.2 and the key must be its P-256 key.
 */
export function configuredIaca(config: MdocIaca): Ca {
  const [certificate] = parseCertificates(config.certificate, 'certificate')
  if (!certificate) throw new Error('certificate holds no certificate')
  const problems = mdocCertificateProblems(config.certificate, 'iaca')
  if (problems.length > 0)
    throw new Error(`certificate is no IACA (ISO 18013-5 Annex B.1.2): ${problems.join('; ')}`)
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(config.privateKey)
  } catch (error) {
    throw new Error(`privateKey is not a PEM private key: ${(error as Error).message}`)
  }
  const key = createPublicKey({
    key: Buffer.from(certificate.publicKey.rawData),
    format: 'der',
    type: 'spki',
  })
  if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new Error('privateKey must be a P-256 key')
  }
  if (!key.equals(createPublicKey(privateKey))) throw new Error("privateKey is not the certificate's key")
  return { certificate: Buffer.from(certificate.rawData), privateKey }
}

/** A configured verifier chain (tenants[].verifierCertificate), read once at start-up. */
export interface ConfiguredVerifier {
  chain: VerifierChain
  privateKey: KeyObject
}

/**
 * Reads a configured verifier chain; throws an Error naming what is wrong (config load reports it): the
 * PEMs must parse, the key must be P-256 (ES256, HAIP) and be the leaf's. A leaf without a dNSName SAN
 * serves x509_hash only (dnsName '').
 */
export function configuredVerifier(config: VerifierCertificate): ConfiguredVerifier {
  const certificates = config.chain.flatMap((pem) => parseCertificates(pem, 'certificate'))
  const leaf = certificates[0]
  if (!leaf) throw new Error('chain holds no certificate')
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(config.privateKey)
  } catch (error) {
    throw new Error(`privateKey is not a PEM private key: ${(error as Error).message}`)
  }
  if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new Error('privateKey must be a P-256 key: request objects are signed ES256 (HAIP)')
  }
  const leafKey = createPublicKey({ key: Buffer.from(leaf.publicKey.rawData), format: 'der', type: 'spki' })
  if (!leafKey.equals(createPublicKey(privateKey))) {
    throw new Error("privateKey is not the key of the chain's first (leaf) certificate")
  }
  const der = Buffer.from(leaf.rawData)
  return {
    chain: {
      x5c: x5cOf(certificates.map((c) => Buffer.from(c.rawData))),
      dnsName: subjectAltNames(leaf).dns[0] ?? '',
      hash: x509Hash(der),
    },
    privateKey,
  }
}
