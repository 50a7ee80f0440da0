import { clientIdOf, serviceIdentity } from '../../shared/client-id-prefix.ts'
import type { JwsAlg } from '../../shared/did-key.ts'
import type { ResolvedVerificationTemplate } from '../config/schema.ts'
import type { ConfiguredVerifier, IssuerCertificates } from '../crypto/issuer-certificates.ts'
import type { TenantKey, TenantKeys } from '../crypto/tenant-keys.ts'
import type { RequestSigningKey } from './profile.ts'

// How the verifier names itself under a client identifier prefix (OpenID4VP 1.0 §5.9.3) and what it signs
// with: the one answer both the request object by link (request-v1.ts) and the requests over the Digital
// Credentials API (dc-api.ts, Appendix A) use, so a wallet sees the same client_id and key either way. The
// prefix's table entry (src/shared/client-id-prefix.ts) says what it signs with and what names it.

export type ClientIdPrefix = NonNullable<ResolvedVerificationTemplate['dcql']>['clientIdPrefix']

/** The client identifier under one prefix, and its signer (none for redirect_uri: it "cannot be signed"). */
export interface VerifierIdentity {
  clientId: string
  signer?: RequestSigningKey
}

export class VerifierIdentities {
  constructor(
    private readonly deps: {
      tenantKeys: TenantKeys
      certificates: IssuerCertificates
      /** Tenants whose configuration names their own verifier chain (tenants[].verifierCertificate). */
      configured?: ReadonlyMap<string, ConfiguredVerifier> | undefined
    },
  ) {}

  /**
   * The client identifier and signer of `prefix` for this tenant. `responseUri` names a redirect_uri
   * verifier; `verifier` is the tenant's EdDSA key when the caller holds it (loaded otherwise).
   */
  async of(
    prefix: ClientIdPrefix,
    tenantId: string,
    of: { responseUri?: string; verifier?: TenantKey<JwsAlg> } = {},
  ): Promise<VerifierIdentity> {
    const service = serviceIdentity(prefix)
    if (service.signsWith === 'nothing') {
      if (of.responseUri === undefined)
        throw new Error('a redirect_uri verifier is named by its response_uri')
      return { clientId: clientIdOf(prefix, service.identifier({ responseUri: of.responseUri })) }
    }
    if (service.signsWith === 'did') {
      const verifier = of.verifier ?? (await this.deps.tenantKeys.forTenant(tenantId, 'EdDSA'))
      return {
        clientId: clientIdOf(prefix, service.identifier({ did: verifier.did })),
        signer: { alg: verifier.alg, privateKey: verifier.privateKey, header: { kid: verifier.kid } },
      }
    }
    // HAIP: x509 request objects are ES256: the configured chain's key, or the tenant's P-256 key under a
    // leaf of its test CA.
    const configured = this.deps.configured?.get(tenantId)
    const key = configured ? undefined : await this.deps.tenantKeys.forTenant(tenantId, 'ES256')
    const chain =
      configured?.chain ?? (await this.deps.certificates.verifierChain(tenantId, key as TenantKey))
    const privateKey = configured?.privateKey ?? (key as TenantKey).privateKey
    const identifier = service.identifier(chain)
    if (identifier === '') {
      throw new Error(
        `the verifier certificate of tenant ${tenantId} names no ${service.requires}: ${prefix} cannot be used`,
      )
    }
    return {
      clientId: clientIdOf(prefix, identifier),
      signer: { alg: 'ES256', privateKey, header: { x5c: chain.x5c } },
    }
  }
}
