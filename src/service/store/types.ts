import type { ProcessStatus, SessionStatus } from '../../shared/flow.ts'
import type {
  IssuanceTemplate,
  ResolvedIssuanceTemplate,
  ResolvedVerificationTemplate,
  Role,
  VerificationTemplate,
} from '../config/schema.ts'

export type { ProcessStatus, SessionStatus }

// Domain records as the repositories return them: camelCase, epoch milliseconds, parsed JSON.
// Nothing here knows which SQL engine sits behind the repositories.

/** Where an entry comes from: the configuration file (re-applied at every boot) or the portal API. */
export type Source = 'config' | 'portal'

export interface TenantRecord {
  id: string
  source: Source
  createdAt: number
}

export interface ApiKeyRecord {
  id: string
  tenantId: string
  role: Role
  templateId: string | null
  /** `hmac-sha256$<salt b64url>$<digest b64url>`; the secret itself is never stored. */
  secretHash: string
  label: string | null
  source: Source
  createdAt: number
  revokedAt: number | null
}

export type TemplateKind = 'issuance' | 'verification'
export type TemplateBody<K extends TemplateKind> = K extends 'issuance'
  ? IssuanceTemplate
  : VerificationTemplate

/** A template body as stored and read: every schema default applied (config/schema.ts resolveTemplate). */
export type ResolvedTemplateBody<K extends TemplateKind> = K extends 'issuance'
  ? ResolvedIssuanceTemplate
  : ResolvedVerificationTemplate

export interface TemplateRecord<K extends TemplateKind = TemplateKind> {
  tenantId: string
  id: string
  kind: K
  body: ResolvedTemplateBody<K>
  source: Source
  createdAt: number
  updatedAt: number
}

/** A credential object of section 2.3 as the relying party submitted it, validated, defaults applied except holder and status. */
export type PreparedCredential = Record<string, unknown> & {
  '@context': string[]
  id: string
  type: string[]
  credentialSubject: Record<string, unknown>
}

/** The proof the process `data` shows for a JWT-secured credential (Veramo's normalized form). */
export interface JwtProof {
  /** JwtProof2020: a jwt_vc_json JWT; SdJwtVc: an SD-JWT VC in its compact form (docs/issuance.md). */
  type: 'JwtProof2020' | 'SdJwtVc'
  jwt: string
}

/** The proof the process `data` shows for an ISO mdoc: its base64url IssuerSigned (docs/issuance.md). */
export interface MdocProof {
  type: 'MsoMdoc'
  format: 'mso_mdoc'
  mdoc: string
}

/** An embedded Linked Data proof (ldp_vc): the proof object itself, as VC Data Model 1.1 §4.7 shows it. */
export type LinkedDataProof = Record<string, unknown> & { type: string }

/**
 * A signed credential as the process `data` shows it: the credential object with its JWT as proof, or
 * with its embedded Linked Data proof.
 */
export type IssuedCredential = PreparedCredential & { proof: JwtProof | MdocProof | LinkedDataProof }

/** What the holder shared (section 2.4): the verified presentation, as a JSON object. */
export type HolderValidator = Record<string, unknown>

export interface ProcessRecord {
  id: string
  tenantId: string
  /** The issuance template id (`group` on the wire). */
  templateId: string
  type: string
  status: ProcessStatus
  data: IssuedCredential[] | null
  validator: HolderValidator | null
  /**
   * The content the relying party submitted (4.4): while PENDING, waiting for the wallet's proof; once ISSUED,
   * kept so that a further credential request on the same access token (OpenID4VCI 1.0 §14.3) signs it anew
   * for the key that request proves. Null before a submission (and on a process issued before issue 34).
   */
  submitted: PreparedCredential[] | null
  rejectedReason: string | null
  createdByKey: string
  createdAt: number
  updatedAt: number
}

export interface ServiceKeyRecord {
  kid: string
  alg: string
  privateJwk: JsonWebKey
  publicJwk: JsonWebKey
  createdAt: number
}

/** Keyset cursor: the last row of the previous page in the list order. */
export interface ListCursor {
  createdAt: number
  id: string
}

/** PS256: an RSA key (did:key multicodec 0x1205), which signs Linked Data proofs and its status lists only. */
export type SigningAlg = 'EdDSA' | 'ES256' | 'ES256K' | 'PS256'

/** A tenant's credential-signing key: one per tenant and algorithm, its public key a did:key. */
export interface IssuerKeyRecord {
  tenantId: string
  alg: SigningAlg
  /** did:key key id (`did#fragment`). */
  kid: string
  privateJwk: JsonWebKey
  createdAt: number
}

/** A tenant's test CA (X.509 issuer keys): the trust anchor of its x5c chains. */
export interface IssuerCaRecord {
  tenantId: string
  /** The CA's P-256 private key. */
  privateJwk: JsonWebKey
  /** The self-signed CA certificate, standard base64 DER. */
  certificate: string
  createdAt: number
}

/** A leaf certificate the tenant's CA issued for its issuer key of `alg`, naming `issuer` (SAN URI). */
export interface IssuerCertificateRecord {
  tenantId: string
  alg: SigningAlg
  /** The credential issuer URL the certificate names. */
  issuer: string
  /** Standard base64 DER. */
  certificate: string
  createdAt: number
}

export type CodeState = 'live' | 'used' | 'burnt'

/** The OpenID4VCI side of an issuance process: pre-authorized code, access token, transaction. */
export interface GrantRecord {
  processId: string
  tenantId: string
  /** SHA-256 of the pre-authorized code, base64url. */
  codeHash: string
  codeExpiresAt: number
  /** HMAC of the tx_code, or null when the offer asks for none. */
  txCodeHash: string | null
  txFailures: number
  codeState: CodeState
  tokenHash: string | null
  tokenExpiresAt: number | null
  holderDid: string | null
  credentialRequestedAt: number | null
  transactionId: string | null
  redeemedAt: number | null
  notificationId: string | null
  notificationEvent: string | null
  /** RFC 9449 §6: the DPoP key (JWK thumbprint) the access token is bound to; null for a Bearer token. */
  tokenJkt: string | null
  /**
   * Read only (set by `recordCredentialRequest`): the further holders of a batch credential request (OpenID4VCI
   * 1.0 §8.2, several keys; `holderDid` is the first), whose credentials the deferred download hands out with
   * the first one's. Null or absent when the first request named one key.
   */
  batchHolders?: readonly string[] | null
}

export type CredentialStatus = 'active' | 'revoked' | 'suspended'

/** A status list: `size` entries of 2 bits (0 active, 1 revoked, 2 suspended). */
export interface StatusListRecord {
  id: string
  tenantId: string
  /** Lists are per issuer key, so a list is signed by the same DID as the credentials that point to it. */
  alg: SigningAlg
  size: number
  /** Raw bitstring, most significant bit of byte 0 first, as the Bitstring Status List spec orders it. */
  bits: Uint8Array
  used: number
  version: number
  createdAt: number
  updatedAt: number
}

/** A status entry of an issued credential: one per credential instance handed out. */
export interface IssuedCredentialRecord {
  id: string
  processId: string
  tenantId: string
  listId: string
  listIndex: number
  status: CredentialStatus
  updatedAt: number
  /**
   * Read only (set by `markFurtherInstance`): the id of the process credential this row is a further
   * instance of (OpenID4VCI 1.0 §14.3); null or absent on the process's own credentials.
   */
  instanceOf?: string | null
}

/** One verifier check's outcome (docs/verification.md lists the checks). */
export interface CheckOutcome {
  check: string
  result: 'passed' | 'failed' | 'not_run'
  message: string
}

/** What the verifier concluded about a response: the `Validations` of section 2.9. */
export interface Validations {
  status: 'SUCCESS' | 'REJECT'
  checks: CheckOutcome[]
  /** The webhook form (section 6): checks run, warnings, errors. */
  verificationResult: { checks: string[]; warnings: string[]; errors: string[] }
}

/** Claims of a session's signed request object; the verifier checks the response against these. */
export interface RequestObjectClaims {
  client_id: string
  nonce: string
  state: string
  response_uri: string
  response_mode: string
  /** PE profile: the DIF-only form of the session's definition (no `dataAgreement`, no `proof`). */
  presentation_definition?: Record<string, unknown>
  /** DCQL profile (OpenID4VP 1.0 §6): the query. */
  dcql_query?: Record<string, unknown>
  [claim: string]: unknown
}

/** A verification session (OpenID4VP): the signed request, and once answered the outcome. */
export interface SessionRecord {
  id: string
  tenantId: string
  templateId: string
  createdByKey: string
  status: SessionStatus
  /** `pe`: the profile of docs/interface.md (draft 20, Presentation Exchange); `dcql`: OpenID4VP 1.0. */
  profile: 'pe' | 'dcql'
  /** The presentation definition of section 2.8, with `dataAgreement` and `proof`; null for `dcql`. */
  definition: Record<string, unknown> | null
  /** Claims of the signed request object (nonce, state, the DIF-only presentation_definition, …). */
  request: RequestObjectClaims
  /** The request object served at request_uri (signed; '' when the request goes by value, unsigned). */
  requestJwt: string
  /** direct_post.jwt: the private JWK of the session's ephemeral ECDH-ES key (OpenID4VP 1.0 §8.3). */
  responseKey: import('node:crypto').JsonWebKey | null
  /** What the checks hold the response to, fixed when the session opens. */
  policy: {
    trustedIssuers: string[]
    requireStatus: boolean
    /** dcql: PEM anchors of x5c issuer chains (absent on sessions opened before issue 16, and on pe). */
    trustAnchors?: string[]
    /**
     * dcql with `dcql.dcApi`: the session is also offered over the Digital Credentials API (OpenID4VP 1.0
     * Appendix A), how its request is protected, the origins an answer may come from (the first assumed when
     * none is named) and, multi-signed, the client identifier prefixes it is signed under. Absent on every
     * session opened without it (and on rows written before it existed).
     */
    dcApi?: {
      request: import('../../shared/dc-api.ts').DcApiRequestType
      origins: string[]
      prefixes?: ('decentralized_identifier' | 'x509_san_dns' | 'x509_hash')[]
    }
  }
  createdAt: number
  updatedAt: number
  expiresAt: number
  requestedAt: number | null
  /** What the holder shared; set only on a VERIFIED session. */
  submission: Record<string, unknown> | null
  submissionFormat: string
  validations: Validations | null
  subject: string | null
  sourceWallet: string | null
  callback: string | null
}

/** What a webhook event reports (the `webhook-event` header); one per terminal state change. */
export type WebhookEventType =
  | 'issuance.issued'
  | 'issuance.rejected'
  | 'verification.verified'
  | 'verification.rejected'

/**
 * pending: waiting for (another) attempt. delivered: a 2xx came back. failed: attempts exhausted or the
 * receiver refused for good (4xx other than 408/429). disabled: the endpoint answered 410 Gone.
 */
export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'disabled'

/** One outbox row: a webhook event and where its delivery stands. */
export interface WebhookEventRecord {
  /** The `webhook-id`: stable across retries and redeliveries. */
  id: string
  /** Assigned by the store; orders the events of one subject. */
  seq?: number
  tenantId: string
  templateId: string
  templateKind: TemplateKind
  /** The issuance process or verification session the event is about. */
  subjectId: string
  type: WebhookEventType
  /** The template's webhookUrl when the event was written. */
  url: string
  /** The exact JSON bytes posted (and signed). */
  body: string
  state: DeliveryState
  /** Attempts in the current round (a redelivery starts a new round). */
  attempts: number
  nextAttemptAt: number | null
  /** While set in the future, one dispatcher owns the delivery. */
  leaseUntil: number | null
  /**
   * Which dispatcher holds the lease (null or absent: none named). An event is written already leased to
   * the dispatcher of the process that enqueued it, which delivers it without a scan or a claim.
   */
  leaseOwner?: string | null
  /** Attempts in the log over all rounds, i.e. the number of the newest one; maintained by the store. */
  logCount?: number
  lastStatus: number | null
  lastError: string | null
  createdAt: number
  updatedAt: number
  deliveredAt: number | null
}

/** The delivery log: one row per HTTP attempt. */
export interface WebhookAttemptRecord {
  eventId: string
  /** 1, 2, … across all rounds of the event. */
  attempt: number
  at: number
  durationMs: number
  /** The receiver's HTTP status, or null when none came (timeout, connection error, refused target). */
  status: number | null
  error: string | null
  outcome: 'delivered' | 'retry' | 'failed' | 'disabled'
  nextAttemptAt: number | null
  trigger: 'automatic' | 'redelivery'
}

export interface WebhookEndpointRecord {
  tenantId: string
  templateId: string
  url: string
  disabledAt: number
  disabledReason: string
}
