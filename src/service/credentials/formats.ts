import type { JsonWebKey } from 'node:crypto'
import type { DidKey, JwsAlg } from '../../shared/did-key.ts'

// The plug-in points of the credential pipeline for credential and presentation formats. A format only
// reads and verifies; what a careful verifier concludes from what it read is the pipeline's (pipeline.ts),
// so issuance (OpenID4VCI di_vp) and verification (OpenID4VP) apply the same rules to every format.
// Today: jwt_vc_json + jwt_vp_json (jwt-vc.ts) and Data Integrity ldp_vp / di_vp (data-integrity.ts).
// An SD-JWT VC format (dc+sd-jwt) fits as one file: it is both a credential and its own presentation
// (the KB-JWT carries nonce and aud), binds the holder by `cnf` key, names a Token Status List entry,
// and shows its disclosed claims.

/** Finds the public key behind a key id (did:key today; did:web, x5c or an issuer's JWKS later). */
export type KeyResolver = (kid: string) => DidKey

/** What a query language and the format's own algorithm policy allow, per format identifier. */
export interface FormatPolicy {
  /** Signature algorithms the query allows for this format; empty means none. */
  algorithms: readonly JwsAlg[]
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
  /** The format identifier (OpenID4VC `format`): `jwt_vc_json`, later `dc+sd-jwt`. */
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
}

/** What binds a presentation to this exchange: OpenID4VP nonce / client_id, OpenID4VCI c_nonce / issuer. */
export interface PresentationBinding {
  /** JWT `nonce`, Data Integrity `challenge`, KB-JWT `nonce`. */
  nonce: unknown
  /** JWT `aud`, Data Integrity `domain`, KB-JWT `aud`. */
  audiences: readonly unknown[]
  /** Seconds since the epoch (`iat`, Data Integrity `created`); undefined when absent. */
  issuedAt: unknown
  /** Seconds since the epoch (`exp`, Data Integrity `expires`); undefined when absent. */
  expiresAt: unknown
  /** The audience as the presentation wrote it (for messages). */
  audienceShown: unknown
  /** What the presentation calls these, for messages: `VP nonce`, `VP aud`, `VP iat`, `exp`; `challenge`, … */
  names: { presentation: string; nonce: string; audience: string; issuedAt: string; expiresAt: string }
}

/** The holder's proof over the presentation: the proven holder key, or the failures. */
export type PresentationProofResult =
  | { ok: true; holder: DidKey; proofEntry: Record<string, unknown> }
  | { ok: false; failures: string[] }

/** A presentation as its format read it. */
export interface ReadPresentation {
  readonly format: string
  /** A one-line description of the security mechanisms used, for the passed securityMechanisms check. */
  readonly mechanisms: string
  readonly binding: PresentationBinding
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
}
