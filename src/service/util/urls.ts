/**
 * Every absolute URL the service hands out is built here from the public base URL, which may only be
 * known after listening (port 0), hence the function.
 */
export class PublicUrls {
  constructor(
    private readonly base: () => string,
    private readonly walletScheme: string,
  ) {}

  /** The OpenID4VCI credential issuer identifier of a tenant: one issuer per tenant. */
  credentialIssuer(tenantId: string): string {
    return `${this.base()}/oid4vci/${encodeURIComponent(tenantId)}`
  }

  /** The offer by reference; its last path segment is the issuance process id. */
  credentialOffer(tenantId: string, processId: string): string {
    return `${this.credentialIssuer(tenantId)}/credential-offer/${encodeURIComponent(processId)}`
  }

  credentialOfferDeepLink(tenantId: string, processId: string): string {
    return `${this.walletScheme}://?credential_offer_uri=${encodeURIComponent(this.credentialOffer(tenantId, processId))}`
  }

  /** Where the signed status-list credential of `listId` is served. */
  statusList(tenantId: string, listId: string): string {
    return `${this.credentialIssuer(tenantId)}/status/${encodeURIComponent(listId)}`
  }

  /** The `vct` of an SD-JWT VC template that names none: a URL under its tenant's credential issuer. */
  defaultVct(tenantId: string, credentialType: string): string {
    return `${this.credentialIssuer(tenantId)}/vct/${encodeURIComponent(credentialType)}`
  }

  /** Where the IETF Token Status List form of `listId` is served (SD-JWT VCs' `status.status_list.uri`). */
  tokenStatusList(tenantId: string, listId: string): string {
    return `${this.credentialIssuer(tenantId)}/token-status/${encodeURIComponent(listId)}`
  }

  /** Where a wallet fetches the signed request object of a verification session (last segment: its id). */
  verifierRequest(tenantId: string, sessionId: string): string {
    return `${this.base()}/oid4vp/${encodeURIComponent(tenantId)}/requests/${encodeURIComponent(sessionId)}`
  }

  /** Where a wallet posts its response (direct_post); the link's redirect_uri. */
  verifierResponse(tenantId: string, sessionId: string): string {
    return `${this.base()}/oid4vp/${encodeURIComponent(tenantId)}/responses/${encodeURIComponent(sessionId)}`
  }

  /**
   * A session's request over the Digital Credentials API (OpenID4VP 1.0 Appendix A): GET hands the relying
   * party's page its `{protocol, data}` entry, POST takes the DigitalCredential back (last segment: its id).
   */
  verifierDcApi(tenantId: string, sessionId: string): string {
    return `${this.base()}/oid4vp/${encodeURIComponent(tenantId)}/dc-api/${encodeURIComponent(sessionId)}`
  }

  /** The origin (scheme, host, port) of the public base URL: a DC API request's default expected origin. */
  origin(): string {
    return new URL(this.base()).origin
  }

  /**
   * The reverse of statusList() and tokenStatusList(): the tenant, list id and form of a URL this service
   * publishes, or undefined
   * for any other URL (which a verifier then fetches over HTTP).
   */
  ownStatusList(url: string): { tenantId: string; listId: string; form: 'bitstring' | 'token' } | undefined {
    const prefix = `${this.base()}/oid4vci/`
    if (!url.startsWith(prefix)) return undefined
    const match = /^([^/?#]+)\/(status|token-status)\/([^/?#]+)$/.exec(url.slice(prefix.length))
    if (!match) return undefined
    return {
      tenantId: decodeURIComponent(match[1] as string),
      listId: decodeURIComponent(match[3] as string),
      form: match[2] === 'status' ? 'bitstring' : 'token',
    }
  }

  absolute(path: string): string {
    return `${this.base()}${path}`
  }
}
