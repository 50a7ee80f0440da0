import type { DcqlCredential } from 'dcql'
import { isObject, jsonCopy } from '../../shared/json.ts'
import { decodeIssuerSigned, defaultNamespace, MDOC_FORMAT, prepareMdoc } from '../../shared/mdoc.ts'
import type { FormatModule } from '../types.ts'
import { signMdoc } from './issue.ts'
import { mdocCredential, mdocPresentation } from './verify.ts'

// mso_mdoc: an ISO/IEC 18013-5 mdoc (the mDL, the EUDI PID); OpenID4VCI 1.0 Appendix A.2, OpenID4VP 1.0
// Appendix B.2. The CBOR and COSE structures are @owf/mdoc's (src/shared/mdoc.ts); verify.ts reads and
// verifies an issued mdoc and a DeviceResponse; issue.ts signs. A credential type of an mdoc template is its
// doctype; a claim is an element, its path [namespace, element].

/** Appendix A.2.2: ES256 as a COSE algorithm identifier (RFC 9053). */
const COSE_ES256 = -7

export const msoMdocFormat: FormatModule<typeof MDOC_FORMAT> = {
  id: MDOC_FORMAT,
  aliases: [],
  credential: mdocCredential,
  presentation: mdocPresentation,
  typedBy: 'doctype',
  selectiveDisclosure: true,
  // Appendix B.2.4: COSE algorithm identifiers for issuerAuth and for the device signature.
  vpFormatsSupported: () => ({
    [MDOC_FORMAT]: { issuerauth_alg_values: [COSE_ES256], deviceauth_alg_values: [COSE_ES256] },
  }),
  dcql: {
    // Appendix B.2.1: a claims path is [namespace, element]; a template field names the element, with its
    // namespace before it (`org.iso.18013.5.1.family_name`) or alone for the doctype's own namespace.
    claimPath: (segments, type) => {
      const element = segments.at(-1) ?? ''
      const namespace = segments.length > 1 ? segments.slice(0, -1).join('.') : defaultNamespace(type)
      return [namespace, element]
    },
    // No element is in every mdoc, so a query whose every claim is optional cannot be expressed.
    anchorClaim: undefined,
    // Appendix B.2.3: meta.doctype_value names the doctype: an mdoc template's credential type.
    meta: (type) => ({ doctype_value: type }),
    model(credential) {
      if (!isObject(credential.queryInput)) return `format ${credential.format} has no DCQL model`
      return jsonCopy({ ...credential.queryInput, cryptographic_holder_binding: true }) as DcqlCredential
    },
    async heldModel(issued) {
      await prepareMdoc()
      const doc = decodeIssuerSigned(issued)
      return {
        credential_format: MDOC_FORMAT,
        doctype: doc.docType,
        namespaces: doc.namespaces as never,
        cryptographic_holder_binding: true,
      }
    },
  },
  issuance: {
    // Appendix A.2: the device key is a COSE key, which a jwt key proof carries as its `jwk`.
    bindingMethods: ['cose_key'],
    // HAIP / Appendix B.2.4: the device key signs DeviceAuthentication with ES256 (deviceauth_alg_values -7)
    proofAlgorithms: ['ES256'],
    dataIntegrityProofs: false,
    signingAlgValues: () => [COSE_ES256],
    x5cIssuer: false,
    describe: ({ doctype }) => ({ doctype }),
    legacyRequest: (body) => ({
      shown: `with doctype ${JSON.stringify(body.doctype)}`,
      names: (t) => body.doctype === t.doctype,
    }),
    // Token Status List §6.3: the MSO's status.status_list {idx, uri}
    statusEntry: (allocation) => allocation.token,
    sign: signMdoc,
  },
}
