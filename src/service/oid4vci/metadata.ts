import { issuedFormat } from '../../formats/registry.ts'
import { JWS_ALGS } from '../../shared/did-key.ts'
import { ATTEST_JWT_CLIENT_AUTH, ATTESTATION_ALGS } from '../../shared/oauth/client-attestation.ts'
import { DPOP_ALGS } from '../../shared/oauth/dpop.ts'
import { ATTESTATION_PROOF_TYPE } from '../../shared/oauth/key-attestation.ts'
import { AUTHORIZATION_CODE_GRANT, OPENID_CREDENTIAL, PRE_AUTHORIZED_GRANT } from '../../shared/wire.ts'
import { DEFAULT_LOCALE, type ResolvedIssuanceTemplate } from '../config/schema.ts'
import type { TenantKeys } from '../crypto/tenant-keys.ts'
import { OAuthError } from '../errors/oauth.ts'
import { namingOf } from '../issuance/credentials.ts'
import type { Store, TemplateRecord } from '../store/index.ts'
import type { PublicUrls } from '../util/urls.ts'
import { authorizationCodeEnabled } from './grants.ts'

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
      /** oid4vci.batchSize: batch_credential_issuance.batch_size (1.0 §12.2.4); 1 announces none. */
      batchSize: number
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
    const algorithms = [...(issuance.proofAlgorithms ?? JWS_ALGS)]
    // §12.2.4 key_attestations_required (Appendix D), present only when the template requires one; the
    // attestation proof type (Appendix F.3) is offered whenever the template evaluates key attestations, its
    // algorithms those a wallet provider's signature is checked with here.
    const keyAttestation = body.keyAttestation
    const required =
      keyAttestation && keyAttestation.required !== false
        ? {
            key_attestations_required: {
              ...(keyAttestation.keyStorage ? { key_storage: keyAttestation.keyStorage } : {}),
              ...(keyAttestation.userAuthentication
                ? { user_authentication: keyAttestation.userAuthentication }
                : {}),
            },
          }
        : undefined
    const jwtProofs = {
      jwt: { proof_signing_alg_values_supported: algorithms, ...required },
      ...(keyAttestation
        ? {
            [ATTESTATION_PROOF_TYPE]: {
              proof_signing_alg_values_supported: algorithms.filter((alg) => ATTESTATION_ALGS.includes(alg)),
              ...required,
            },
          }
        : {}),
    }
    return {
      format: body.format,
      scope: template.id,
      cryptographic_binding_methods_supported: [...issuance.bindingMethods],
      credential_signing_alg_values_supported: issuance.signingAlgValues(body),
      // A template that requires a presentation takes it as the key proof (di_vp), so a jwt proof cannot do;
      // one that requires a key attestation cannot take a di_vp proof, which carries none.
      proof_types_supported: !issuance.dataIntegrityProofs
        ? jwtProofs
        : body.requiredPresentation
          ? { di_vp: diVp, ldp_vp: diVp }
          : required
            ? jwtProofs
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
      // §12.2.4: "It MUST be 2 or greater"; a service that binds one key per request announces none.
      ...(this.deps.batchSize >= 2 ? { batch_credential_issuance: { batch_size: this.deps.batchSize } } : {}),
      display: [{ name: `vc-harness issuer (${tenantId})`, locale: 'en' }],
      credential_configurations_supported: Object.fromEntries(
        templates.map((t) => [t.id, this.configuration(t)]),
      ),
      vc_harness_issuer_dids: await this.deps.tenantKeys.didsOf(tenantId),
    }
  }

  /**
   * OAuth authorization server metadata (RFC 8414 §2): the issuer is its own authorization server. A tenant
   * with templates of the authorization code flow announces it as HAIP 1.0 §4 profiles it: PAR required
   * (RFC 9126 §5), PKCE S256 (RFC 7636), iss in the response (RFC 9207 §3), DPoP (RFC 9449 §5.1), wallet
   * attestation (attest_jwt_client_auth, draft-ietf-oauth-attestation-based-client-auth-07 §10.1).
   */
  async authorizationServer(tenantId: string) {
    await requireIssuer(this.deps.store, tenantId)
    const issuer = this.deps.urls.credentialIssuer(tenantId)
    const preAuthorized = {
      issuer,
      token_endpoint: `${issuer}/token`,
      grant_types_supported: [PRE_AUTHORIZED_GRANT],
      token_endpoint_auth_methods_supported: ['none'],
      'pre-authorized_grant_anonymous_access_supported': true,
    }
    const templates = await this.deps.store.templates.list(tenantId, 'issuance')
    const scopes = templates.filter(authorizationCodeEnabled).map((t) => t.id)
    if (scopes.length === 0) return preAuthorized
    return {
      ...preAuthorized,
      authorization_endpoint: `${issuer}/authorize`,
      pushed_authorization_request_endpoint: `${issuer}/par`,
      require_pushed_authorization_requests: true,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: [PRE_AUTHORIZED_GRANT, AUTHORIZATION_CODE_GRANT],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      dpop_signing_alg_values_supported: [...DPOP_ALGS],
      token_endpoint_auth_methods_supported: ['none', ATTEST_JWT_CLIENT_AUTH],
      client_attestation_signing_alg_values_supported: [...ATTESTATION_ALGS],
      client_attestation_pop_signing_alg_values_supported: [...ATTESTATION_ALGS],
      authorization_details_types_supported: [OPENID_CREDENTIAL],
      scopes_supported: scopes,
    }
  }
}
