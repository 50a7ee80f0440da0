import type { JsonWebKey, KeyObject } from 'node:crypto'
import type { DcqlCredential } from 'dcql'
import type { DidKey, JwsAlg } from '../shared/did-key.ts'
import type { SessionExpectation } from './binding.ts'

export type { PresentationBinding, SessionExpectation } from './binding.ts'

// What a credential format is, for every part that handles one: the service's checking pipeline
// (src/service/credentials/pipeline.ts), its issuer and metadata, its verifier's requests, and the wallet.
// A format is one folder beside this file (jwt-vc/, sd-jwt-vc/, data-integrity/) whose index.ts exports a
// FormatModule; registry.ts lists them. A format reads and verifies what it carries, including how a
// presentation is bound to its exchange (a KB-JWT's nonce and aud, a future mdoc's SessionTranscript);
// what a careful verifier concludes from what it read stays the pipeline's, so issuance (OpenID4VCI di_vp)
// and verification (OpenID4VP) apply the same rules to every format. This folder imports only src/shared/
// and libraries: the service and the wallet both use it (one verifier for both sides of the wire).

/** Finds the public key behind a key id (did:key today; did:web, x5c or an issuer's JWKS later). */
export type KeyResolver = (kid: string) => DidKey

/** What a query language and the format's own algorithm policy allow, per format identifier. */
export interface FormatPolicy {
  /** Signature algorithms the query allows for this format; empty means none. */
  algorithms: readonly JwsAlg[]
  /**
   * Linked Data proof types the query allows (ldp_vc, ldp_vp: the definition's `proof_type`, Data Integrity
   * cryptosuites by name); undefined: every one the format verifies.
   */
  proofTypes?: readonly string[]
}

/** How a credential names the one it was issued to. */
export type HolderBinding =
  /** W3C VCs: the holder is the subject (`sub` / `credentialSubject.id`); `conflict` when they differ. */
  | { kind: 'subject'; id: string | undefined; conflict?: string }
  /** SD-JWT VC and mdoc: the holder proves possession of this key (`cnf.jwk`), e.g. with a KB-JWT. */
  | { kind: 'key'; jwk: JsonWebKey }

/** A status entry a credential points at. */
export type StatusReference =
  /** W3C Bitstring Status List v1.0 `credentialStatus` entry (BitstringStatusListEntry). */
  | { kind: 'bitstring'; entry: unknown }
  /** IETF Token Status List (`status.status_list {idx, uri}`), used by SD-JWT VC. */
  | { kind: 'token-status-list'; uri: string; index: number }

/** One instant a credential is valid from or until (ms), and how the credential wrote it. */
export interface ValidityBound {
  kind: 'notBefore' | 'notAfter'
  at: number
  shown: string
}

/** The outcome of a signature check: the verified issuer, or why there is none. */
export type ProofResult =
  /**
   * `anchor`: the trust anchor an x5c chain ended in (the issuer is trusted by it, not by a DID list);
   * `issuerKey`: then the leaf's key, which must also sign the issuer's status list.
   */
  | { ok: true; issuer: string; anchor?: string; issuerKey?: import('node:crypto').KeyObject }
  | { ok: false; reason: string }

/** What an issuer's proof is checked against besides did:key resolution. */
export interface ProofContext {
  /** PEM certificates an `x5c` issuer chain must end in (SD-JWT VC §3.5, HAIP); none: x5c fails. */
  trustAnchors: readonly string[]
  /** When the chain must be valid (ms). */
  now: number
}

/** A credential as its format read it: nothing here is trusted before `verifyProof` says ok. */
export interface ReadCredential {
  /** The format identifier (OpenID4VC `format`): `jwt_vc_json`, `dc+sd-jwt`. */
  readonly format: string
  /** The signature algorithm (for securityMechanisms). */
  readonly alg: string
  /** The credential types (W3C `type`, or the SD-JWT `vct`), most specific last. */
  readonly types: readonly string[]
  /** Verifies the issuer's signature, resolving the issuer key with `keys` (or its x5c chain to an anchor). */
  verifyProof(keys: KeyResolver, context?: ProofContext): ProofResult | Promise<ProofResult>
  readonly holderBinding: HolderBinding
  readonly validity: readonly ValidityBound[]
  /** Status entries; empty when the credential carries none. */
  readonly status: readonly StatusReference[]
  /** The subject's claims (disclosed ones only, for selective disclosure), `id` left out. */
  readonly claims: Record<string, unknown>
  /** The credential as section 2.4 shows it (decoded, W3C-shaped, with the original in `proof`). */
  readonly sharedView: Record<string, unknown>
  /** What query languages evaluate: the form `@sphereon/pex` and `dcql` accept (a JWT string for jwt_vc). */
  readonly queryInput: unknown
  /**
   * Selective disclosure: the paths of the claims the holder disclosed (array positions as numbers), once the
   * proof verified; undefined for formats that disclose everything.
   */
  readonly disclosed?: readonly (readonly (string | number)[])[]
}

export interface CredentialFormat {
  /** The format identifier and the older names a wallet or a query may use for it (jwt_vc). */
  readonly id: string
  readonly aliases: readonly string[]
  /** Whether `raw`, one entry of a presentation, looks like this format (no validation yet). */
  accepts(raw: unknown): boolean
  /** Decodes `raw`; throws an Error whose message says what is wrong. */
  read(raw: unknown, policy: FormatPolicy): ReadCredential
  /** Loads what `read` needs (a library loaded on first use: mso_mdoc's); awaited before `read`. */
  prepare?(): Promise<void>
}

/** The key a presentation proof was made with, and its DID: a did:key of any type a format verifies. */
export type ProvenHolder = Pick<DidKey, 'did' | 'kid' | 'publicKey'>

/** The holder's proof over the presentation: the proven holder key, or the failures. */
export type PresentationProofResult =
  | { ok: true; holder: ProvenHolder; proofEntry: Record<string, unknown> }
  | { ok: false; failures: string[] }

/** A presentation as its format read it. */
export interface ReadPresentation {
  readonly format: string
  /** A one-line description of the security mechanisms used, for the passed securityMechanisms check. */
  readonly mechanisms: string
  /**
   * The sessionBinding check: failures when the presentation was not made for this exchange (nonce,
   * audience, time; an mdoc's SessionTranscript), empty when it was. The format owns it.
   */
  verifyBinding(session: SessionExpectation): string[] | Promise<string[]>
  /** The credentials as carried (unwrapped from envelopes), by position in the presentation. */
  readonly credentials: readonly { index: number; raw: unknown }[]
  /** Entries that cannot be read as a credential (securityMechanisms failures). */
  readonly unreadable: readonly string[]
  /** Verifies the holder's signature over the presentation (not the binding: the pipeline judges it). */
  verifyProof(): Promise<PresentationProofResult>
}

export interface PresentationFormat {
  readonly id: string
  readonly aliases: readonly string[]
  /** Decodes a presentation; throws an Error whose message says what is wrong (a securityMechanisms failure). */
  read(token: unknown, policy: FormatPolicy): ReadPresentation
  /** Loads what `read` needs; awaited before `read`. */
  prepare?(): Promise<void>
}

// ---- a format as every part uses it (one folder per format; registry.ts lists them) ----

/** How a format takes part in DCQL (OpenID4VP 1.0 §6, Appendix B): queries the verifier builds and evaluates. */
export interface DcqlProfile {
  /** Appendix B: a template's `$.credentialSubject.a.b` field, asked of credential type `type`, as this format's claims path. */
  claimPath(segments: readonly string[], type: string): string[]
  /**
   * A claim every credential of the format carries and no wallet discloses selectively (a claim set's
   * fallback); undefined when there is none (an mdoc), so a query of only optional claims cannot be built.
   */
  readonly anchorClaim: string | undefined
  /** The credential query's `meta` for a credential type (`vctValues` asked only by vct-typed formats), or why there is none. */
  meta(
    type: string,
    vctValues: () => readonly string[],
  ): { vct_values: string[] } | { type_values: string[][] } | { doctype_value: string } | string
  /** A presented credential in the `dcql` package's model (what it disclosed), or why it cannot be evaluated. */
  model(credential: ReadCredential): DcqlCredential | string
  /**
   * A credential the wallet holds (its issued form, as stored) in the `dcql` package's model: every claim
   * the holder could disclose (§7.1); undefined when it cannot be read so.
   */
  heldModel(issued: string, vct: string | undefined): Promise<DcqlCredential | undefined>
}

/** The one status-list entry allocated for a credential, in both forms; a format references it its own way. */
export interface StatusAllocation {
  /** W3C Bitstring Status List v1.0 `credentialStatus` entry. */
  bitstring: Record<string, unknown>
  /** IETF Token Status List reference (`status.status_list {idx, uri}`). */
  token: Record<string, unknown>
}

/** An issuer key as a template signs with it: a did:key, with an x5c chain when the template asks for one. */
export interface IssuerSigningKey {
  /** PS256: an RSA key, which only Linked Data proofs (RsaSignature2018, JsonWebSignature2020) sign with. */
  alg: JwsAlg | 'PS256'
  kid: string
  did: string
  privateKey: KeyObject
  /** SD-JWT VC §3.5: the chain to name the key by, and the issuer URL its leaf certifies. */
  x5c?: { x5c: string[]; issuer: string }
}

/** A credential object of section 2.3 completed for its holder (issuer, dates, subject id, status), to be signed. */
export interface IssueInput {
  credential: Record<string, unknown> & { id?: unknown; credentialSubject: Record<string, unknown> }
  /** Seconds since the epoch: valid from, and until (when it expires). */
  notBefore: number
  expires: number | undefined
  holderDid: string
  key: IssuerSigningKey
  now: number
  /** SD-JWT VC: its `vct`, and the subject claims disclosed selectively (all of them when undefined). */
  vct: string
  disclosable: readonly string[] | undefined
  /** ldp_vc: the Linked Data proof type the template names (suites.ts). */
  proofType?: string
  /** mso_mdoc: the doctype, and the document signer whose x5chain ends in the tenant's IACA. */
  mdoc?: { docType: string; signer: { privateKey: KeyObject; x5chain: readonly string[] } }
}

/**
 * A signed credential as a process's `data` shows it: the credential object with its signed form as proof
 * (a JWT-secured one), or with its embedded Linked Data proof (ldp_vc).
 */
export type SignedCredential = Record<string, unknown> & {
  proof:
    | { type: 'JwtProof2020' | 'SdJwtVc'; jwt: string }
    | { type: 'MsoMdoc'; format: 'mso_mdoc'; mdoc: string }
    | (Record<string, unknown> & { type: string })
}

/** How a template names what it issues, in every format's terms. */
export interface CredentialNaming {
  credentialType: string
  /** SD-JWT VC `vct`. */
  vct: string
  /** mdoc doctype (ISO 18013-5). */
  doctype: string
}

/** How a format is issued over OpenID4VCI (1.0 Appendix A) by the service. */
export interface IssuanceProfile {
  /** `cryptographic_binding_methods_supported`; with `jwk`, a key proof may name the holder key by a bare jwk. */
  readonly bindingMethods: readonly string[]
  /** The key proof algorithms (`proof_signing_alg_values_supported`) when the format limits them (mdoc: ES256). */
  readonly proofAlgorithms?: readonly JwsAlg[]
  /** Whether a key proof may be a Data Integrity presentation (`di_vp`, `ldp_vp`): W3C credentials only. */
  readonly dataIntegrityProofs: boolean
  /** Whether the issuer key may be named by an x5c chain (SD-JWT VC §3.5, HAIP). */
  readonly x5cIssuer: boolean
  /**
   * `credential_signing_alg_values_supported` (OpenID4VCI 1.0 Appendix A): the JWS algorithm of a
   * JWT-secured format; an ldp_vc's proof type (a Data Integrity cryptosuite by name).
   */
  signingAlgValues(template: { signingAlg: string; proofType?: string | undefined }): (string | number)[]
  /** The credential configuration members naming the type: `vct`, `doctype`, or `credential_definition`. */
  describe(type: CredentialNaming): Record<string, unknown>
  /**
   * A draft 13/14 credential request naming the credential by `format` plus `credential_definition` or
   * `vct`: how it describes the credential (for messages) and whether that is `type`, or why it cannot be read.
   */
  legacyRequest(
    body: Record<string, unknown>,
    format: string,
  ): { shown: string; names(type: CredentialNaming): boolean } | string
  /** The status entry in this format's form. */
  statusEntry(allocation: StatusAllocation): Record<string, unknown>
  /** Signs the completed credential for its holder. */
  sign(input: IssueInput): Promise<SignedCredential>
}

/** A credential format, everything of it in one place. */
export interface FormatModule<Id extends string = string> {
  /** The format identifier (OpenID4VCI / OpenID4VP `format`) and the older names wallets and queries use. */
  readonly id: Id
  readonly aliases: readonly string[]
  /** Reads and verifies a credential of this format: the service's pipeline, the wallet at receipt. */
  readonly credential: CredentialFormat
  /** How a credential of this format travels in an OpenID4VP 1.0 vp_token entry (Appendix B). */
  readonly presentation: PresentationFormat
  /** How a credential of this format names its type: SD-JWT VC `vct`, W3C `type`. */
  readonly typedBy: 'vct' | 'type' | 'doctype'
  /** Its claims are disclosed one by one (SD-JWT VC; an mdoc's elements): the holder picks what to show. */
  readonly selectiveDisclosure: boolean
  /**
   * Its member of `vp_formats_supported` (OpenID4VP 1.0 §11.1, Appendix B): the algorithms accepted for the
   * issuer's signature (`credential`) and the holder's (`holder`: a KB-JWT's, a VP's).
   */
  vpFormatsSupported(algs: {
    credential: readonly JwsAlg[]
    holder: readonly JwsAlg[]
  }): Record<string, unknown>
  readonly dcql: DcqlProfile
  readonly issuance: IssuanceProfile
}
