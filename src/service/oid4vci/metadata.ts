import { JWS_ALGS } from '../../shared/did-key.ts'
import { PRE_AUTHORIZED_GRANT } from '../../shared/wire.ts'
import { DEFAULT_LOCALE, type ResolvedIssuanceTemplate } from '../config/schema.ts'
import type { IssuerKeys } from '../crypto/issuer-keys.ts'
import { OAuthError } from '../errors/oauth.ts'
import type { Store, TemplateRecord } from '../store/index.ts'
import type { PublicUrls } from '../util/urls.ts'

// What a wallet reads before it asks for anything: the credential issuer's metadata, the authorization
// server's, and the presentation a template requires. Built from the tenant's issuance templates.

const DI_CRYPTOSUITES = ['eddsa-rdfc-2022']

/** Every tenant is one credential issuer; an unknown tenant has no metadata and no endpoints. */
export async function requireIssuer(store: Store, tenantId: string) {
  if (!(await store.tenants.get(tenantId))) {
    throw new OAuthError('not_found', `no credential issuer for tenant "${tenantId}"`)
  }
}

/** The DIF presentation definition a template's `requiredPresentation` asks the holder to satisfy. */
export function presentationDefinition(
  template: TemplateRecord<'issuance'>,
): Record<string, unknown> | undefined {
  const required = template.body.requiredPresentation
  if (!required) return undefined
  const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return {
    id: `${template.id}:holder-presentation`,
    name: `Required to obtain ${template.body.credentialType}`,
    ...(required.purpose ? { purpose: required.purpose } : {}),
    format: { jwt_vc_json: { alg: [...JWS_ALGS] }, jwt_vc: { alg: [...JWS_ALGS] } },
    input_descriptors: required.credentials.map((c, i) => ({
      id: `${c.type}-${i}`,
      name: c.type,
      ...(required.purpose ? { purpose: required.purpose } : {}),
      constraints: {
        fields: [
          { path: ['$.vc.type', '$.type'], filter: { type: 'array', contains: { const: c.type } } },
          ...(c.trustedIssuers
            ? [
                {
                  path: ['$.iss', '$.vc.issuer', '$.issuer'],
                  filter: { type: 'string', pattern: `^(${c.trustedIssuers.map(escapeRegex).join('|')})$` },
                },
              ]
            : []),
          ...(c.fields ?? []).map((path) => ({ path: [path.replace(/^\$\./, '$.vc.'), path] })),
        ],
      },
    })),
  }
}

export class IssuerMetadata {
  constructor(private readonly deps: { store: Store; urls: PublicUrls; issuerKeys: IssuerKeys }) {}

  private static configuration(template: TemplateRecord<'issuance'>) {
    const body: ResolvedIssuanceTemplate = template.body
    const display = body.display
    const diVp = { proof_signing_alg_values_supported: DI_CRYPTOSUITES }
    return {
      format: 'jwt_vc_json',
      scope: template.id,
      cryptographic_binding_methods_supported: ['did:key'],
      credential_signing_alg_values_supported: [body.signingAlg],
      proof_types_supported: body.requiredPresentation
        ? { di_vp: diVp, ldp_vp: diVp }
        : { jwt: { proof_signing_alg_values_supported: [...JWS_ALGS] }, di_vp: diVp, ldp_vp: diVp },
      credential_definition: { type: ['VerifiableCredential', body.credentialType] },
      display: [
        {
          name: display?.name ?? body.credentialType,
          locale: display?.locale ?? DEFAULT_LOCALE,
          ...(display?.description ? { description: display.description } : {}),
          ...(display?.backgroundColor ? { background_color: display.backgroundColor } : {}),
          ...(display?.textColor ? { text_color: display.textColor } : {}),
        },
      ],
    }
  }

  /** Credential issuer metadata (OpenID4VCI §12.2). */
  async issuer(tenantId: string) {
    await requireIssuer(this.deps.store, tenantId)
    const issuer = this.deps.urls.credentialIssuer(tenantId)
    const templates = await this.deps.store.templates.list(tenantId, 'issuance')
    return {
      credential_issuer: issuer,
      credential_endpoint: `${issuer}/credential`,
      nonce_endpoint: `${issuer}/nonce`,
      deferred_credential_endpoint: `${issuer}/deferred_credential`,
      notification_endpoint: `${issuer}/notification`,
      display: [{ name: `vc-harness issuer (${tenantId})`, locale: 'en' }],
      credential_configurations_supported: Object.fromEntries(
        templates.map((t) => [t.id, IssuerMetadata.configuration(t)]),
      ),
      vc_harness_issuer_dids: await this.deps.issuerKeys.didsOf(tenantId),
    }
  }

  /** OAuth authorization server metadata (RFC 8414 §2): the issuer is its own authorization server. */
  async authorizationServer(tenantId: string) {
    await requireIssuer(this.deps.store, tenantId)
    const issuer = this.deps.urls.credentialIssuer(tenantId)
    return {
      issuer,
      token_endpoint: `${issuer}/token`,
      grant_types_supported: [PRE_AUTHORIZED_GRANT],
      token_endpoint_auth_methods_supported: ['none'],
      'pre-authorized_grant_anonymous_access_supported': true,
    }
  }
}
