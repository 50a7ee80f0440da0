import { createHash, type KeyObject, randomBytes } from 'node:crypto'
import { DEFAULT_DCQL_FORMAT, type FormatId, formatNamed } from '../../formats/registry.ts'
import { didKeyFromPublicKey, generateKeyPair, type JwsAlg } from '../../shared/did-key.ts'
import { AppError } from '../errors/problem.ts'
import { type Fault, type FaultRegistry, isPresentationFault, type PresentationFault } from './index.ts'

// Presentation faults: what the verifier gets wrong in its authorization request. The faulty verifier
// (faults/verifier.ts), wrapped around the genuine profile objects and their request object signer, asks
// this module; the session stays answerable and, where a careless wallet's answer can still be checked, is
// VERIFIED by it.
//
// Two kinds. Faults in what the verifier asks (nonce-reused, response-uri-foreign-origin,
// unknown-client-id-prefix, query-unsatisfiable, format-not-offered) are stored with the session: the
// response is checked against the request as sent. Faults in how the request object is presented
// (request-foreign-signature, client-id-mismatch, nonce-missing, request-expired, doctype-mismatch) change
// only what is signed (requestObjectFault): the session keeps the genuine client_id, nonce and query to check
// an answer against, so a careless wallet's answer is still VERIFIED and really seen.

/** A presentation definition input descriptor type / DCQL type_values entry no wallet holds. */
export const UNOBTAINABLE_TYPE = 'VcHarnessUnobtainableCredential'
/** A DCQL vct_values entry no wallet holds. */
export const UNOBTAINABLE_VCT = 'https://vc-harness.invalid/unobtainable'
/** A client identifier prefix OpenID4VP 1.0 §5.9.3 does not define. */
export const UNKNOWN_PREFIX = 'vc_harness_unknown'
/** A DCQL doctype_value no wallet holds (query-unsatisfiable for mso_mdoc). */
export const UNOBTAINABLE_DOCTYPE = 'invalid.vc-harness.unobtainable.1'

/**
 * doctype-mismatch (OpenID4VP 1.0 Appendix B.2.3 meta.doctype_value, ISO/IEC 18013-5 §8.3.2.1.2.1): every
 * mso_mdoc credential query of the signed request asks for its claims, [namespace, element] unchanged,
 * under another doctype than the template's. A wallet holding an mDL must not answer with it: its claims
 * match, its doctype does not. faults/index.ts lists it among PRESENTATION_FAULTS; this module compares a
 * fault with it as a string, so that it compiles whether or not the list has it yet.
 */
export const DOCTYPE_MISMATCH = 'doctype-mismatch'
/** The doctype doctype-mismatch asks under: ISO 7367's mobile vehicle registration certificate, not an mDL. */
export const MISMATCHED_DOCTYPE = 'org.iso.7367.1.mVRC'

/** Where a session's request comes from: its profile and, for dcql, its client identifier prefix. */
export interface RequestKind {
  profile: 'pe' | 'dcql'
  prefix?: 'decentralized_identifier' | 'x509_san_dns' | 'x509_hash' | 'redirect_uri'
}

const notApplicable = (fault: Fault, why: string) =>
  new AppError('conflict', `fault ${fault} cannot apply to this verification template: ${why}`)

/**
 * The presentation fault of a tenant for a request of `kind`, or undefined. Throws a 409 naming the
 * mistake when the fault cannot be applied to such a request (or lacks what it needs).
 */
export function presentationFault(
  registry: FaultRegistry | undefined,
  tenantId: string,
  kind: RequestKind,
): PresentationFault | undefined {
  const fault = registry?.fault(tenantId)
  if (!registry || !fault || !isPresentationFault(fault)) return undefined
  const unsigned = kind.profile === 'dcql' && kind.prefix === 'redirect_uri'
  // doctype-mismatch changes the signed request's dcql_query: a DCQL request object it needs.
  if ((fault as string) === DOCTYPE_MISMATCH) {
    if (kind.profile !== 'dcql')
      throw notApplicable(fault, 'doctype_value is a DCQL member (an mso_mdoc credential query)')
    if (unsigned) {
      throw notApplicable(
        fault,
        'the redirect_uri prefix sends an unsigned request by value (no request object)',
      )
    }
  }
  switch (fault) {
    case 'request-foreign-signature':
    case 'client-id-mismatch':
    case 'request-expired':
      if (unsigned) {
        throw notApplicable(
          fault,
          'the redirect_uri prefix sends an unsigned request by value (no request object)',
        )
      }
      break
    case 'response-uri-foreign-origin':
      if (kind.profile !== 'dcql' || (kind.prefix !== 'x509_san_dns' && kind.prefix !== 'redirect_uri')) {
        throw notApplicable(
          fault,
          'only the x509_san_dns and redirect_uri prefixes bind the response_uri to the client identifier (dcql profile)',
        )
      }
      if (!registry.foreignOrigin) {
        throw notApplicable(
          fault,
          'no foreign origin is set (startForeignOrigin, then registry.foreignOrigin)',
        )
      }
      break
    case 'unknown-client-id-prefix':
      if (kind.profile !== 'dcql')
        throw notApplicable(fault, 'client identifier prefixes exist in the dcql profile only')
      break
    case 'nonce-reused':
      if (!registry.lastAnsweredNonce) {
        throw new AppError(
          'conflict',
          `fault ${fault}: no wallet has answered a request of this service with a verified vp_token yet, so there is no nonce to reuse; run a positive presentation first`,
        )
      }
      break
  }
  return fault
}

/** A client identifier of the same kind as `clientId` that is another client's (client-id-mismatch). */
export function otherClientId(clientId: string): string {
  const freshDid = () => didKeyFromPublicKey(generateKeyPair('EdDSA').publicKey).did
  if (clientId.startsWith('did:')) return freshDid()
  const prefix = clientId.slice(0, clientId.indexOf(':'))
  if (prefix === 'x509_san_dns') return 'x509_san_dns:other.invalid'
  if (prefix === 'x509_hash') {
    return `x509_hash:${createHash('sha256').update(randomBytes(32)).digest('base64url')}`
  }
  return `${prefix}:${freshDid()}`
}

/**
 * What a request object says and who signs it under a fault of how it is presented; the claims the session
 * stores are not changed. Each case breaks one rule:
 */
export function requestObjectFault(
  fault: PresentationFault | undefined,
  claims: Record<string, unknown>,
  signer: { alg: JwsAlg; privateKey: KeyObject },
  now: number,
): { claims: Record<string, unknown>; privateKey: KeyObject } {
  const shown = { ...claims }
  let { privateKey } = signer
  switch (fault) {
    // OpenID4VP 1.0 §5.9.3 / RFC 9101 §6.2: the signature must verify with the client's key.
    case 'request-foreign-signature':
      privateKey = generateKeyPair(signer.alg).privateKey
      break
    // RFC 9101 §5 / OpenID4VP 1.0 §5.10: the request object's client_id must equal the link's.
    case 'client-id-mismatch':
      shown.client_id = otherClientId(String(claims.client_id))
      if (typeof claims.iss === 'string') shown.iss = shown.client_id
      break
    // OpenID4VP 1.0 §5.2: nonce is REQUIRED.
    case 'nonce-missing':
      delete shown.nonce
      break
    // RFC 9101 §6.3 / RFC 7519 §4.1.4: a request object past its exp must be refused.
    case 'request-expired': {
      const seconds = Math.floor(now / 1000)
      Object.assign(shown, { iat: seconds - 360, nbf: seconds - 360, exp: seconds - 60 })
      break
    }
  }
  // OpenID4VP 1.0 Appendix B.2.3: the wallet answers only with an mdoc of the doctype_value asked for.
  if ((fault as string | undefined) === DOCTYPE_MISMATCH)
    shown.dcql_query = mismatchedDoctype(claims.dcql_query)
  return { claims: shown, privateKey }
}

/**
 * doctype-mismatch: the DCQL query with every mso_mdoc credential query's meta.doctype_value replaced by
 * MISMATCHED_DOCTYPE, its claims kept. A 409 when the query has no mso_mdoc credential query.
 */
export function mismatchedDoctype(query: unknown): Record<string, unknown> {
  type Credential = { format?: unknown; meta?: Record<string, unknown> } & Record<string, unknown>
  const credentials =
    typeof query === 'object' &&
    query !== null &&
    Array.isArray((query as { credentials?: unknown }).credentials)
      ? (query as { credentials: Credential[] }).credentials
      : []
  if (!credentials.some((c) => formatNamed(String(c.format))?.typedBy === 'doctype')) {
    throw notApplicable(
      DOCTYPE_MISMATCH as PresentationFault,
      'the DCQL query asks for no mso_mdoc credential (doctype_value is an mdoc query member)',
    )
  }
  return {
    ...(query as Record<string, unknown>),
    credentials: credentials.map((c) =>
      formatNamed(String(c.format))?.typedBy === 'doctype'
        ? { ...c, meta: { ...c.meta, doctype_value: MISMATCHED_DOCTYPE } }
        : c,
    ),
  }
}

/**
 * response-uri-foreign-origin (OpenID4VP 1.0 §5.9.3: x509_san_dns binds the response_uri's host to the
 * certified name, redirect_uri the response_uri itself): the same path on the foreign origin. For
 * x509_san_dns a foreign origin on the public host name (another port only) would break no rule: refused.
 */
export function foreignResponseUri(
  registry: FaultRegistry,
  publicBase: string,
  responseUri: string,
  prefix: RequestKind['prefix'],
): string {
  const foreign = new URL(registry.foreignOrigin ?? '')
  if (prefix === 'x509_san_dns' && foreign.hostname === new URL(publicBase).hostname) {
    throw notApplicable(
      'response-uri-foreign-origin',
      `x509_san_dns compares host names, and the foreign origin ${foreign.origin} has the public host name ${foreign.hostname} (start the foreign listener with another host or urlHost)`,
    )
  }
  const path = responseUri.startsWith(publicBase)
    ? responseUri.slice(publicBase.length)
    : new URL(responseUri).pathname
  return `${foreign.origin}${path}`
}

/** unknown-client-id-prefix (OpenID4VP 1.0 §5.9.1/§5.9.3): a decentralized_identifier client id renamed. */
export const unknownPrefixClientId = (clientId: string) =>
  `${UNKNOWN_PREFIX}:${clientId.slice(clientId.indexOf(':') + 1)}`

// PE proof types of the interface (section 2.8); any non-empty list says "Linked Data proofs only".
const LDP_PROOF_TYPES = [
  'JsonWebSignature2020',
  'Ed25519Signature2018',
  'Ed25519Signature2020',
  'DataIntegrityProof',
]

/**
 * The pe profile's query faults on the wallet's copy of the definition (DIF Presentation Exchange 2.0):
 * - query-unsatisfiable (§6.4 / §8.5: the wallet answers access_denied, never a credential that does not
 *   match): every descriptor's type filter names UNOBTAINABLE_TYPE;
 * - format-not-offered (PE 2.0 §5 `format`): the definition accepts Linked Data Proof credentials and
 *   presentations only (`ldp_vc`, `ldp_vp`), while the held credential was issued as jwt_vc_json. A wallet
 *   must not answer with its JWT credential, nor relabel it.
 */
export function peDefinitionFault(
  fault: PresentationFault | undefined,
  definition: Record<string, unknown>,
): Record<string, unknown> {
  if (fault === 'format-not-offered') {
    return {
      ...definition,
      format: { ldp_vc: { proof_type: LDP_PROOF_TYPES }, ldp_vp: { proof_type: LDP_PROOF_TYPES } },
    }
  }
  if (fault !== 'query-unsatisfiable') return definition
  type Field = { filter?: Record<string, unknown> } & Record<string, unknown>
  type Descriptor = { constraints: { fields: Field[] } } & Record<string, unknown>
  const descriptors = (definition.input_descriptors as Descriptor[]).map((d) => ({
    ...d,
    name: UNOBTAINABLE_TYPE,
    constraints: {
      ...d.constraints,
      // The first field is the type filter (verification/definition.ts).
      fields: d.constraints.fields.map((f, i) =>
        i === 0 ? { ...f, filter: { type: 'string', const: UNOBTAINABLE_TYPE } } : f,
      ),
    },
  }))
  return { ...definition, input_descriptors: descriptors }
}

/**
 * query-unsatisfiable for a DCQL query (OpenID4VP 1.0 §6.4.2: a wallet that cannot satisfy a required
 * credential query answers access_denied): each credential query's meta names what no wallet holds.
 */
export function unsatisfiableDcqlQuery<Q extends { credentials: { format: string; meta: unknown }[] }>(
  query: Q,
): Q {
  return {
    ...query,
    credentials: query.credentials.map((c) => ({
      ...c,
      meta: unobtainableMeta(formatNamed(c.format)?.typedBy),
    })),
  }
}

/** The meta of a credential query of a format typed by `typedBy` that no held credential matches. */
function unobtainableMeta(typedBy: string | undefined) {
  if (typedBy === 'vct') return { vct_values: [UNOBTAINABLE_VCT] }
  // OpenID4VP 1.0 Appendix B.2.3: an mso_mdoc query's meta names one doctype_value
  if (typedBy === 'doctype') return { doctype_value: UNOBTAINABLE_DOCTYPE }
  return { type_values: [['VerifiableCredential', UNOBTAINABLE_TYPE]] }
}

/**
 * format-not-offered for a DCQL query (OpenID4VP 1.0 §6.1 `format`, Appendix B): the same credential is
 * asked for in the other format than the template's (dc+sd-jwt ⇄ jwt_vc_json; any other as dc+sd-jwt; meta.type_values or
 * vct_values then name the same credential type), and client_metadata.vp_formats_supported lists only that
 * format. The wallet holds the credential in the template's format only.
 */
export const otherFormat = (format: FormatId): FormatId =>
  // the two JWT-secured formats swap; any other is asked for as the DCQL default (SD-JWT VC)
  format === DEFAULT_DCQL_FORMAT ? 'jwt_vc_json' : DEFAULT_DCQL_FORMAT
