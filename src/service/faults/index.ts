// Deliberate misbehaviour of the service, for wallet test plans (docs/wallet-testing.md). A wallet vendor
// learns whether their wallet is safe by meeting an issuer or verifier that breaks one rule on purpose and
// watching the wallet refuse. Faults are keyed by tenant: a wallet test plan gives every case its own tenant,
// so a fault is on for exactly one flow. They exist only in an app built with the programmatic `faults`
// option (never from a config file or a CLI flag of `serve` in production), and buildApp refuses them in a
// production configuration. The registry also records what the wallet did on each tenant's wallet-facing
// endpoints, the evidence a plan's judge reads.

export { type ForeignOrigin, type ForeignOriginOptions, startForeignOrigin } from './foreign-origin.ts'

/** OpenID4VP faults: what the verifier gets wrong in its authorization request. */
export const PRESENTATION_FAULTS = [
  /** the request object is signed by a key that is not the client's (OpenID4VP 1.0 §5.9.3, RFC 9101 §6.2) */
  'request-foreign-signature',
  /** the request object's client_id differs from the link's (OpenID4VP 1.0 §5.10, RFC 9101 §5) */
  'client-id-mismatch',
  /** the request object has no nonce (OpenID4VP 1.0 §5.2: nonce REQUIRED) */
  'nonce-missing',
  /** the request object reuses the nonce of an earlier request the wallet answered (§14.1) */
  'nonce-reused',
  /** the request object's exp is in the past (RFC 9101 §6.3 / RFC 7519 §4.1.4) */
  'request-expired',
  /** response_uri on another origin than the client identifier allows (OpenID4VP 1.0 §5.9.3) */
  'response-uri-foreign-origin',
  /** a client identifier prefix nobody defined (OpenID4VP 1.0 §5.9.1) */
  'unknown-client-id-prefix',
  /** a query (DCQL or presentation definition) no held credential satisfies (§6.4, §8.5 access_denied) */
  'query-unsatisfiable',
  /** the query asks for the held credential's claims in another format than it was issued in (§6.1) */
  'format-not-offered',
  /** an mso_mdoc query asks for the held mDL's elements under another doctype_value (OpenID4VP 1.0 B.2.3) */
  'doctype-mismatch',
  /** a signed DC API request whose expected_origins leave out the caller's origin (OpenID4VP 1.0 Appendix A.2) */
  'dc-api-wrong-expected-origins',
  /** a signed DC API request without expected_origins (Appendix A.2: REQUIRED when signed) */
  'dc-api-expected-origins-missing',
  /** a multi-signed DC API request whose first signature is corrupted, the others valid (Appendix A.3.2) */
  'dc-api-multisigned-one-invalid-signature',
  /** a multi-signed DC API request none of whose signatures verifies (Appendix A.3.2) */
  'dc-api-multisigned-all-invalid',
] as const
export type PresentationFault = (typeof PRESENTATION_FAULTS)[number]

/** OpenID4VCI faults: what the issuer gets wrong. */
export const ISSUANCE_FAULTS = [
  /** metadata credential_issuer differs from the offer's (OpenID4VCI 1.0 §12.2.2) */
  'metadata-issuer-mismatch',
  /** the credential is signed by a key that is not the issuer's (§8.3, SD-JWT VC §3.5, VC-JOSE) */
  'credential-foreign-signature',
  /** the credential is bound to another holder key than the proof's (§8.2.1, SD-JWT VC cnf) */
  'credential-other-holder',
  /** an SD-JWT VC with a disclosure whose digest is not in the payload (RFC 9901 §7.1) */
  'sd-jwt-tampered-disclosure',
  /** an mdoc whose element value no longer matches its digest in the MSO (ISO 18013-5 §9.3.1) */
  'mdoc-digest-mismatch',
  /** the credential expired before it was handed out (exp / validUntil) */
  'credential-expired',
  /** the credential's status entry is revoked when it is handed out (Token Status List, Bitstring) */
  'credential-revoked',
  /** draft 15: the token answer carries no c_nonce though proofs need one (draft 15 §6.2, §7) */
  'token-without-c-nonce',
  /** the authorization response has no iss though the metadata announces it (RFC 9207 §2.4) */
  'authorization-response-without-iss',
  /** the authorization response's iss is another issuer's (RFC 9207 §2.4: mix-up attack) */
  'authorization-response-wrong-iss',
  /** the authorization response's state is not the one the wallet sent (RFC 6749 §4.1.2, §10.12) */
  'authorization-response-wrong-state',
  /** the metadata does not require PAR; a HAIP wallet pushes its request anyway (HAIP 1.0 §4.2) */
  'par-not-required',
] as const
export type IssuanceFault = (typeof ISSUANCE_FAULTS)[number]

export type Fault = PresentationFault | IssuanceFault

export const isPresentationFault = (fault: Fault): fault is PresentationFault =>
  (PRESENTATION_FAULTS as readonly string[]).includes(fault)

/** How one tenant's flows behave in a wallet test. */
export interface FlowSetting {
  /** the rule this tenant breaks; none: a positive case */
  fault?: Fault
  /**
   * OpenID4VCI generation the issuer metadata speaks: '1.0' (default: credential_metadata, which a 1.0 wallet
   * recognises) or 'draft15' (no credential_metadata, c_nonce in the token answer).
   */
  issuance?: 'draft15' | '1.0'
}

/** The wallet-facing endpoints the judge distinguishes. */
export type Endpoint =
  | 'offer'
  | 'issuer-metadata'
  | 'authorization-server-metadata'
  | 'par'
  | 'authorize'
  | 'token'
  | 'nonce'
  | 'credential'
  | 'deferred'
  | 'notification'
  | 'request'
  | 'response'
  | 'status-list'
  | 'trust-anchor'

/** One request a wallet made to a tenant's wallet-facing endpoint, and what it carried that judging needs. */
export interface Exchange {
  /** epoch ms */
  at: number
  endpoint: Endpoint
  method: string
  /** the HTTP status the service answered */
  status: number
  /** the OAuth error code the service answered, if any */
  error?: string
  /** credential: whether the key proof carried a nonce */
  proofNonce?: boolean
  /** notification: the event the wallet notified */
  notification?: string
  /** response: the wallet sent a vp_token (also inside a direct_post.jwt JWE) */
  vpToken?: boolean
  /** response: the error the wallet answered instead (access_denied, invalid_request, …) */
  walletError?: string
  /** response: the wallet's error_description, if any */
  walletErrorDescription?: string
  /** 'foreign': the request reached the service through the foreign-origin listener */
  origin?: 'public' | 'foreign'
}

type Listener = (tenantId: string, exchange: Exchange) => void

/** Keeps each tenant's flow setting and the exchanges seen on it. In-process only. */
export class FaultRegistry {
  private readonly settings = new Map<string, FlowSetting>()
  private readonly seen = new Map<string, Exchange[]>()
  private readonly listeners = new Set<Listener>()
  /** Base URL (scheme://host:port) of a second listener of the same app: the "another origin" of a fault. */
  foreignOrigin: string | undefined
  /** The nonce of the latest request object a wallet answered with a vp_token (for 'nonce-reused'). */
  lastAnsweredNonce: string | undefined

  set(tenantId: string, setting: FlowSetting): void {
    this.settings.set(tenantId, { ...setting })
  }

  delete(tenantId: string): void {
    this.settings.delete(tenantId)
    this.seen.delete(tenantId)
  }

  setting(tenantId: string): FlowSetting | undefined {
    return this.settings.get(tenantId)
  }

  /** The fault this tenant breaks, if any. */
  fault(tenantId: string): Fault | undefined {
    return this.settings.get(tenantId)?.fault
  }

  is(tenantId: string, fault: Fault): boolean {
    return this.settings.get(tenantId)?.fault === fault
  }

  record(tenantId: string, exchange: Exchange): void {
    let list = this.seen.get(tenantId)
    if (!list) {
      list = []
      this.seen.set(tenantId, list)
    }
    list.push(exchange)
    for (const listener of this.listeners) listener(tenantId, exchange)
  }

  exchanges(tenantId: string): readonly Exchange[] {
    return this.seen.get(tenantId) ?? []
  }

  /** Told of every exchange as it is recorded; returns the unsubscribe function. */
  onExchange(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}
