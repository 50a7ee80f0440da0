import { createPublicKey } from 'node:crypto'
import { didKeyFromPublicKey } from '../../shared/did-key.ts'
import {
  dcApiSessionTranscript,
  decodeDeviceResponse,
  decodeIssuerSigned,
  deviceSignatureFailure,
  encodeIssuerSigned,
  MDOC_FORMAT,
  oid4vpSessionTranscript,
  type PresentedMdoc,
  prepareMdoc,
  type ReadMdoc,
  verifyIssuerAuth,
} from '../../shared/mdoc.ts'
import type {
  CredentialFormat,
  PresentationFormat,
  ProofResult,
  ReadCredential,
  ReadPresentation,
  StatusReference,
  ValidityBound,
} from '../types.ts'

// mso_mdoc for the pipeline (ISO/IEC 18013-5; OpenID4VP 1.0 Appendix B.2). A presentation is a base64url
// DeviceResponse; each of its documents is a credential (its IssuerSigned with the disclosed elements) read
// by `mdocCredential`, and the wallet reads an issued mdoc (base64url IssuerSigned, OpenID4VCI 1.0 A.2.4)
// the same way. The issuer is named by issuerAuth's x5chain, which must end in an IACA trust anchor; the
// holder is the MSO's deviceKey, proven by the deviceSignature over DeviceAuthentication, whose
// SessionTranscript (Appendix B.2.6.1: client_id, nonce, the encryption key's JWK thumbprint, response_uri)
// is the session binding. Reading needs @owf/mdoc loaded: `prepare()` first (the pipeline and wallet do).

const ALGS_OF_COSE: Record<string, string> = { ES256: 'ES256', ES384: 'ES384', EdDSA: 'EdDSA' }

/** What a document is when the pipeline hands it over: decoded already (from a DeviceResponse). */
const isPresented = (raw: unknown): raw is PresentedMdoc =>
  typeof raw === 'object' && raw !== null && 'document' in raw && 'issuerSigned' in raw

function validityOf(doc: ReadMdoc): ValidityBound[] {
  const { validFrom, validUntil } = doc.validity
  return [
    { kind: 'notBefore', at: validFrom.getTime(), shown: validFrom.toISOString() },
    { kind: 'notAfter', at: validUntil.getTime(), shown: validUntil.toISOString() },
  ]
}

function statusOf(doc: ReadMdoc): StatusReference[] {
  return doc.status ? [{ kind: 'token-status-list', uri: doc.status.uri, index: doc.status.idx }] : []
}

/** An mdoc (issued, or one document of a DeviceResponse) as a ReadCredential. */
export function readMdocCredential(raw: unknown): ReadCredential {
  const doc = isPresented(raw) ? raw : decodeIssuerSigned(raw)
  const encoded = encodeIssuerSigned(doc.issuerSigned)
  let issuer: string | undefined
  const disclosed = Object.entries(doc.namespaces).flatMap(([ns, elements]) =>
    Object.keys(elements).map((element) => [ns, element] as const),
  )
  return {
    format: MDOC_FORMAT,
    alg: ALGS_OF_COSE[doc.alg] ?? doc.alg,
    types: [doc.docType],
    async verifyProof(_keys, context): Promise<ProofResult> {
      const result = await verifyIssuerAuth(doc, {
        trustAnchors: context?.trustAnchors ?? [],
        now: context?.now ?? Date.now(),
        ...(isPresented(raw) && { docType: raw.document.docType }),
      })
      if (!result.ok) return result
      issuer = result.issuer
      return result
    },
    holderBinding: { kind: 'key', jwk: doc.deviceKey },
    validity: validityOf(doc),
    status: statusOf(doc),
    claims: doc.namespaces,
    get sharedView() {
      // Section 2.4's shape for an mdoc: the doctype as its type, the elements by namespace as the subject.
      return {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', doc.docType],
        ...(issuer !== undefined && { issuer }),
        issuanceDate: doc.validity.signed.toISOString(),
        expirationDate: doc.validity.validUntil.toISOString(),
        credentialSubject: doc.namespaces,
        ...(doc.status && { credentialStatus: { status_list: { ...doc.status } } }),
        proof: { type: 'MsoMdoc', format: MDOC_FORMAT, mdoc: encoded },
      }
    },
    // dcql's own model of an mdoc (OpenID4VP 1.0 B.2): doctype and the disclosed elements by namespace
    queryInput: { credential_format: MDOC_FORMAT, doctype: doc.docType, namespaces: doc.namespaces },
    disclosed: disclosed.map((p) => [...p]),
  }
}

export const mdocCredential: CredentialFormat = {
  id: MDOC_FORMAT,
  aliases: [],
  accepts: (raw) =>
    isPresented(raw) || (typeof raw === 'string' && /^[A-Za-z0-9_-]+$/.test(raw) && raw.length > 16),
  read: (raw) => readMdocCredential(raw),
  prepare: async () => {
    await prepareMdoc()
  },
}

/** A DeviceResponse (OpenID4VP 1.0 Appendix B.2.6) as a ReadPresentation. */
function readDeviceResponse(token: unknown): ReadPresentation {
  if (typeof token !== 'string' || token.length === 0) throw new Error('vp_token is missing')
  let response: ReturnType<typeof decodeDeviceResponse>
  try {
    response = decodeDeviceResponse(token)
  } catch (error) {
    throw new Error(`vp_token ${(error as Error).message}`)
  }
  const { documents } = response
  const algs = [...new Set(documents.map((d) => d.alg))].join(', ')
  return {
    format: MDOC_FORMAT,
    mechanisms: `${MDOC_FORMAT} DeviceResponse of ${documents.length} document(s) (issuerAuth ${algs || 'none'}, deviceSignature)`,
    async verifyBinding(session) {
      // Appendix B.2.6.2: over the DC API the device signed DeviceAuthentication with the
      // OpenID4VPDCAPIHandover of the origin, the nonce and the encryption key's thumbprint
      if (session.origin !== undefined) {
        if (session.nonce === undefined) return ['the mdoc SessionTranscript needs the request’s nonce']
        const transcript = await dcApiSessionTranscript({
          origin: session.origin,
          nonce: session.nonce,
          jwkThumbprint: session.encryptionKeyThumbprint,
        })
        return documents.flatMap((doc, i) => {
          const failure = deviceSignatureFailure(doc, transcript)
          return failure === undefined
            ? []
            : [
                `document ${i} (${doc.docType}): ${failure} (OpenID4VPDCAPIHandover of origin ${session.origin}, this nonce${session.encryptionKeyThumbprint ? ', the encryption key’s thumbprint' : ''}, OpenID4VP 1.0 Appendix B.2.6.2): it was made for another origin or exchange, or by a key other than the MSO’s`,
              ]
        })
      }
      // Appendix B.2.6.1: the device signed DeviceAuthentication with the SessionTranscript of this request
      if (session.nonce === undefined || session.responseUri === undefined) {
        return [
          'the mdoc SessionTranscript needs the request’s nonce and response_uri, and this exchange has none',
        ]
      }
      const transcript = await oid4vpSessionTranscript({
        clientId: session.audience,
        nonce: session.nonce,
        jwkThumbprint: session.encryptionKeyThumbprint,
        responseUri: session.responseUri,
      })
      return documents.flatMap((doc, i) => {
        const failure = deviceSignatureFailure(doc, transcript)
        return failure === undefined
          ? []
          : [
              `document ${i} (${doc.docType}): ${failure} (OpenID4VPHandover of client_id ${session.audience}, this nonce, response_uri ${session.responseUri}${session.encryptionKeyThumbprint ? ', the encryption key’s thumbprint' : ''}): it was made for another exchange, or by a key other than the MSO’s`,
            ]
      })
    },
    credentials: documents.map((doc, index) => ({ index, raw: doc })),
    unreadable:
      response.status === 0
        ? []
        : [`the DeviceResponse status is ${response.status}, not 0 (OK; ISO 18013-5 §8.3.2.1.2.3)`],
    async verifyProof() {
      // The deviceSignature can only be checked against a SessionTranscript (verifyBinding does); here the
      // holder is the MSO's device key, which must be usable, and every document must be device-signed.
      const failures: string[] = []
      const keys = documents.map((doc, i) => {
        if (!doc.document.deviceSigned.deviceAuth.deviceSignature) {
          failures.push(`document ${i} has no deviceSignature (deviceMac is not used over OpenID4VP)`)
        }
        try {
          return createPublicKey({ key: doc.deviceKey, format: 'jwk' })
        } catch (error) {
          failures.push(`document ${i}: the MSO's deviceKey is not usable: ${(error as Error).message}`)
          return undefined
        }
      })
      if (documents.length === 0) failures.push('the DeviceResponse carries no document')
      const [first] = keys
      if (failures.length > 0 || !first) return { ok: false, failures }
      let holder: ReturnType<typeof didKeyFromPublicKey>
      try {
        holder = didKeyFromPublicKey(first)
      } catch (error) {
        return { ok: false, failures: [`the MSO's deviceKey names no holder: ${(error as Error).message}`] }
      }
      return { ok: true, holder, proofEntry: { type: 'MdocDeviceSignature', format: MDOC_FORMAT } }
    },
  }
}

export const mdocPresentation: PresentationFormat = {
  id: MDOC_FORMAT,
  aliases: [],
  read: (token) => readDeviceResponse(token),
  prepare: async () => {
    await prepareMdoc()
  },
}
