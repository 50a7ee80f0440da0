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

  absolute(path: string): string {
    return `${this.base()}${path}`
  }
}
