import { issuedFormat } from '../../formats/registry.ts'
import { JWS_ALGS } from '../../shared/did-key.ts'
import { PRE_AUTHORIZED_GRANT } from '../../shared/wire.ts'
import { DEFAULT_LOCALE, type ResolvedIssuanceTemplate } from '../config/schema.ts'
import type { TenantKeys } from '../crypto/tenant-keys.ts'
import { OAuthError } from '../errors/oauth.ts'
import { namingOf } from '../issuance/credentials.ts'
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
  constructor(
    private readonly deps: {
      store: Store
      urls: PublicUrls
      tenantKeys: TenantKeys
    },
  ) {}

  /**
   * One credential configuration (OpenID4VCI 1.0 §12.2.4 and Appendix A). Display and claims sit under
   * `credential_metadata` as 1.0 has them; `display` stays at the top too for draft-15 wallets (unknown
   * members are ignored by both). A 1.0 wallet recognises the version by `credential_metadata` (the draft-15
   * issuer of a wallet test plan, which app.ts wraps around this one, leaves it out).
   */
  private configuration(template: TemplateRecord<'issuance'>) {
    const body: ResolvedIssuanceTemplate = template.body
    const display = [
      {
        name: body.display?.name ?? body.credentialType,
        locale: body.display?.locale ?? DEFAULT_LOCALE,
        ...(body.display?.description ? { description: body.display.description } : {}),
        ...(body.display?.backgroundColor ? { background_color: body.display.backgroundColor } : {}),
        ...(body.display?.textColor ? { text_color: body.display.textColor } : {}),
      },
    ]
    const format = issuedFormat(body.format)
    const { issuance } = format
    // Claims path pointers (Appendix C) as the format's DCQL paths run: a W3C VC's from the credential's root
    // (credentialSubject first), an SD-JWT VC's from its payload, an mdoc's [namespace, element] (A.2.2).
    const naming = namingOf(template, this.deps.urls)
    const claimPathOf = (path: string) =>
      format.dcql.claimPath(
        path.split('.'),
        format.typedBy === 'doctype' ? naming.doctype : naming.credentialType,
      )
    const claims = (body.claims ?? []).map((claim) => ({
      path: claimPathOf(claim.path),
      ...(claim.mandatory !== undefined ? { mandatory: claim.mandatory } : {}),
      ...(claim.name
        ? { display: [{ name: claim.name, locale: display[0]?.locale ?? DEFAULT_LOCALE }] }
        : {}),
    }))
    const diVp = { proof_signing_alg_values_supported: DI_CRYPTOSUITES }
    const jwtProofs = {
      jwt: { proof_signing_alg_values_supported: [...(issuance.proofAlgorithms ?? JWS_ALGS)] },
    }
    return {
      format: body.format,
      scope: template.id,
      cryptographic_binding_methods_supported: [...issuance.bindingMethods],
      credential_signing_alg_values_supported: issuance.signingAlgValues(body),
      // A template that requires a presentation takes it as the key proof (di_vp), so a jwt proof cannot do.
      proof_types_supported: !issuance.dataIntegrityProofs
        ? jwtProofs
        : body.requiredPresentation
          ? { di_vp: diVp, ldp_vp: diVp }
          : { ...jwtProofs, di_vp: diVp, ldp_vp: diVp },
      ...issuance.describe(naming),
      credential_metadata: { display, ...(claims.length > 0 ? { claims } : {}) },
      display,
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
        templates.map((t) => [t.id, this.configuration(t)]),
      ),
      vc_harness_issuer_dids: await this.deps.tenantKeys.didsOf(tenantId),
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
