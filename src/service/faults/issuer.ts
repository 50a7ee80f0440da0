import type { OfferGrants } from '../issuance/service.ts'
import type { AuthorizationEndpoints, ClientHeaders } from '../oid4vci/authorization.ts'
import type { IssuerMetadataDocuments, Oid4vciEndpoints } from '../oid4vci/routes.ts'
import type { ProcessRecord, TemplateRecord } from '../store/index.ts'
import { issuanceFaultProblem } from './credentials.ts'
import type { FaultRegistry } from './index.ts'

// The wallet test plans' faulty issuer: decorators around the genuine issuer metadata, token answer and
// offer grants, wired by app.ts only in an app built with `faults`. Each tenant's FlowSetting picks what
// its issuer does otherwise; every other tenant's answers pass through. What the wallet is handed at the
// credential and deferred endpoints is faults/credentials.ts.

/** The issuer's metadata as a tenant's setting has it: draft-15 shaped, or naming another issuer. */
export class FaultyIssuerMetadata implements IssuerMetadataDocuments {
  constructor(
    private readonly inner: IssuerMetadataDocuments,
    private readonly registry: FaultRegistry,
  ) {}

  async issuer(tenantId: string) {
    const genuine = await this.inner.issuer(tenantId)
    const setting = this.registry.setting(tenantId)
    if (!setting) return genuine
    const configurations = genuine.credential_configurations_supported as Record<
      string,
      Record<string, unknown>
    >
    return {
      ...genuine,
      // metadata-issuer-mismatch (OpenID4VCI 1.0 §12.2.2: credential_issuer MUST be the identifier the
      // metadata was fetched for): another issuer's; the endpoints stay ours so a careless wallet goes on.
      ...(setting.fault === 'metadata-issuer-mismatch' && {
        credential_issuer: `${genuine.credential_issuer}/other`,
      }),
      // draft15: no credential_metadata, by which a 1.0 wallet recognises 1.0 metadata (display stays).
      ...(setting.issuance === 'draft15' && {
        credential_configurations_supported: Object.fromEntries(
          Object.entries(configurations).map(([id, { credential_metadata: _, ...draft15 }]) => [id, draft15]),
        ),
      }),
    }
  }

  async authorizationServer(tenantId: string) {
    const genuine = await this.inner.authorizationServer(tenantId)
    // par-not-required: the metadata says PAR is optional (HAIP 1.0 §4.2: the wallet pushes anyway).
    if (
      this.registry.is(tenantId, 'par-not-required') &&
      'require_pushed_authorization_requests' in genuine
    ) {
      return { ...genuine, require_pushed_authorization_requests: false }
    }
    return genuine
  }
}

/**
 * The authorization response as a tenant's fault has it (the OpenID Foundation's HAIP wallet modules: an
 * authorization response without iss, with another issuer's, with another state). The code stays genuine,
 * so a wallet that does not check goes on to the token endpoint, which the judge sees.
 */
export class FaultyAuthorization implements AuthorizationEndpoints {
  constructor(
    private readonly inner: AuthorizationEndpoints,
    private readonly registry: FaultRegistry,
  ) {}

  par: AuthorizationEndpoints['par'] = (...args) => this.inner.par(...args)

  private altered(tenantId: string, redirect: string): string {
    const fault = this.registry.fault(tenantId)
    const url = new URL(redirect)
    if (fault === 'authorization-response-without-iss') url.searchParams.delete('iss')
    else if (fault === 'authorization-response-wrong-iss')
      url.searchParams.set('iss', `${url.searchParams.get('iss')}/other`)
    else if (fault === 'authorization-response-wrong-state')
      url.searchParams.set('state', `${url.searchParams.get('state') ?? ''}-other`)
    else return redirect
    return url.toString()
  }

  async authorize(tenantId: string, query: Record<string, unknown>) {
    const answer = await this.inner.authorize(tenantId, query)
    return 'redirect' in answer ? { redirect: this.altered(tenantId, answer.redirect) } : answer
  }

  async decide(tenantId: string, form: Record<string, unknown>) {
    const answer = await this.inner.decide(tenantId, form)
    return { redirect: this.altered(tenantId, answer.redirect) }
  }
}

/** The issuer's wallet-facing answers, the token answer as a tenant's fault has it. */
export class FaultyTokenAnswers implements Oid4vciEndpoints {
  constructor(
    private readonly inner: Oid4vciEndpoints,
    private readonly registry: FaultRegistry,
  ) {}

  offer: Oid4vciEndpoints['offer'] = (...args) => this.inner.offer(...args)
  nonce: Oid4vciEndpoints['nonce'] = (...args) => this.inner.nonce(...args)
  credential: Oid4vciEndpoints['credential'] = (...args) => this.inner.credential(...args)
  deferred: Oid4vciEndpoints['deferred'] = (...args) => this.inner.deferred(...args)
  notification: Oid4vciEndpoints['notification'] = (...args) => this.inner.notification(...args)

  async token(tenantId: string, form: Record<string, unknown>, headers?: ClientHeaders) {
    const answer = await this.inner.token(tenantId, form, headers)
    if (!this.registry.is(tenantId, 'token-without-c-nonce')) return answer
    // token-without-c-nonce (draft 15 §6.2: a token answer of an issuer that wants proofs carries c_nonce):
    // left out; the nonce endpoint stays announced and the credential endpoint still wants a nonce.
    const { c_nonce: _nonce, c_nonce_expires_in: _expiresIn, ...withoutNonce } = answer
    return withoutNonce
  }
}

/** Offers of a template the tenant's fault cannot apply to are refused (409) before anything is written. */
export class FaultyOfferGrants implements OfferGrants {
  constructor(
    private readonly inner: OfferGrants,
    private readonly registry: FaultRegistry,
  ) {}

  newGrant(process: ProcessRecord, template: TemplateRecord<'issuance'>, now: number) {
    const misfit = issuanceFaultProblem(
      this.registry.fault(process.tenantId),
      template.body.format ?? 'jwt_vc_json',
    )
    if (misfit) throw misfit
    return this.inner.newGrant(process, template, now)
  }

  deepLink(tenantId: string, processId: string) {
    return this.inner.deepLink(tenantId, processId)
  }
}
