// The mdoc presentation of an OpenID4VP 1.0 answer (1.0 Appendix B.2.6, ISO/IEC 18013-5 §8.3.2.1.2.2): a
// DeviceResponse of the one mdoc the credential query chose, its IssuerSigned reduced to exactly the elements
// the query's claims select (a path is [namespace, element], B.2.1), and a deviceSignature over
// DeviceAuthentication with the SessionTranscript of this request (B.2.6.1: the OpenID4VPHandover of the full
// client_id, the nonce, the JWK thumbprint of the verifier's response encryption key when the answer is
// encrypted, the response_uri; over the Digital Credentials API, B.2.6.2: the OpenID4VPDCAPIHandover of the
// origin, the nonce and that thumbprint), signed by the holder key the MSO's deviceKey is. The CBOR and COSE are
// src/shared/mdoc.ts's (the verifier's own code); each misbehaviour (a tamper hook of tamper.ts) changes one
// thing. Pure over a signer: unit-tested without a verifier.

import {
  type DcApiHandover,
  dcApiSessionTranscript,
  decodeIssuerSigned,
  type Oid4vpHandover,
  oid4vpSessionTranscript,
  prepareMdoc,
  presentMdoc,
} from '../shared/mdoc.ts'
import type { DeviceSigner, MdocElements } from './defects.ts'
import { WalletUsageError } from './errors.ts'
import type { PresentationMisbehaviour } from './misbehaviour.ts'
import type { ClaimPath } from './presentation-dcql.ts'
import { tamperOf } from './tamper.ts'

export type { DeviceSigner } from './defects.ts'

/**
 * What the SessionTranscript binds besides the nonce and the thumbprint: the full client_id and the
 * response_uri of a request by link (B.2.6.1), or the origin the platform handed over with a Digital
 * Credentials API request (B.2.6.2).
 */
export type MdocSessionOf = RedirectSession | DcApiSession

interface RedirectSession {
  /** the full client_id, prefix included (B.2.6.1, §5.9.1) */
  clientId: string
  /** where the answer is posted */
  responseUri: string
  origin?: undefined
}

interface DcApiSession {
  /** the caller's origin, without `origin:` (B.2.6.2) */
  origin: string
  clientId?: undefined
  responseUri?: undefined
}

export type MdocPresentationInput = MdocPresentationFields & MdocSessionOf

interface MdocPresentationFields {
  /** the mdoc as issued: base64url IssuerSigned (OpenID4VCI 1.0 Appendix A.2.4) */
  credential: string
  /** claims path pointers [namespace, element] (1.0 B.2.1); [] discloses no element (§6.4.1) */
  claimPaths: readonly ClaimPath[]
  nonce: string
  /**
   * base64url SHA-256 JWK thumbprint (RFC 7638) of the verifier's response encryption key when the request
   * asks for an encrypted answer (direct_post.jwt); undefined otherwise (the handover's null)
   */
  jwkThumbprint: string | undefined
  /** the holder key the MSO's deviceKey is */
  signer: DeviceSigner
  misbehave?: readonly PresentationMisbehaviour[]
}

export interface MdocPresentation<H extends Oid4vpHandover | DcApiHandover = Oid4vpHandover | DcApiHandover> {
  /** base64url DeviceResponse: the vp_token entry (B.2.6) */
  presentation: string
  /** the elements disclosed, by namespace */
  disclosed: Record<string, string[]>
  /** what the SessionTranscript bound: the OpenID4VPHandover, or over the DC API the OpenID4VPDCAPIHandover */
  handover: H
  /** 'mdoc-extra-element': the element disclosed beyond the query */
  extra?: { namespace: string; element: string }
  /** 'mdoc-tampered-element': the element whose value was changed, and its new value */
  tampered?: { namespace: string; element: string; value: unknown }
}

/** The elements the claims paths select, by namespace, in query order (B.2.1: a path is [namespace, element]). */
export function elementsOf(claimPaths: readonly ClaimPath[]): Record<string, string[]> {
  const disclose: Record<string, string[]> = {}
  for (const path of claimPaths) {
    const [namespace, element] = path
    if (path.length !== 2 || typeof namespace !== 'string' || typeof element !== 'string') {
      throw new WalletUsageError(
        `the claims path ${JSON.stringify(path)} is not [namespace, element] (OpenID4VP 1.0 Appendix B.2.1): an mdoc cannot disclose it`,
      )
    }
    const list = disclose[namespace] ?? []
    if (!list.includes(element)) list.push(element)
    disclose[namespace] = list
  }
  return disclose
}

/**
 * The DeviceResponse: the elements of `claimPaths`, the SessionTranscript of the handover, the device
 * signature by `signer` (over the DC API, `origin` set: the OpenID4VPDCAPIHandover). Misbehaviours:
 * 'mdoc-wrong-nonce', 'mdoc-wrong-client-id', 'mdoc-wrong-response-uri' (one handover member; the last two
 * have none to change over the DC API: WalletUsageError), 'mdoc-extra-element' (one element more), 'mdoc-tampered-element' (the first
 * disclosed element's value), 'mdoc-foreign-device-key' (a fresh key signs).
 */
export function presentMdocCredential(
  input: MdocPresentationFields & RedirectSession,
): Promise<MdocPresentation<Oid4vpHandover>>
export function presentMdocCredential(
  input: MdocPresentationFields & DcApiSession,
): Promise<MdocPresentation<DcApiHandover>>
export function presentMdocCredential(input: MdocPresentationInput): Promise<MdocPresentation>
export async function presentMdocCredential(input: MdocPresentationInput): Promise<MdocPresentation> {
  await prepareMdoc()
  const tamper = tamperOf(input.misbehave)
  let doc: ReturnType<typeof decodeIssuerSigned>
  try {
    doc = decodeIssuerSigned(input.credential)
  } catch (error) {
    throw new WalletUsageError(`the held mdoc cannot be read: ${(error as Error).message}`)
  }
  const held: MdocElements = Object.fromEntries(
    Object.entries(doc.namespaces).map(([ns, elements]) => [ns, Object.keys(elements)]),
  )
  // only what the mdoc holds (the query matched it: every selected element is there)
  const wanted = elementsOf(input.claimPaths)
  const selected = Object.fromEntries(
    Object.entries(wanted)
      .map(([ns, elements]) => [ns, elements.filter((e) => held[ns]?.includes(e))] as const)
      .filter(([, elements]) => elements.length > 0),
  )
  const { disclose, extra } = tamper.apply('mdoc.disclose', { disclose: selected }, { held })
  const disclosedItems = Object.entries(disclose).flatMap(([namespace, elements]) =>
    elements.map((element) => ({ namespace, element, value: doc.namespaces[namespace]?.[element] })),
  )
  const tampered = tamper.apply('mdoc.tamper', undefined, { disclosed: disclosedItems })
  let handover: Oid4vpHandover | DcApiHandover
  let sessionTranscript: Awaited<ReturnType<typeof oid4vpSessionTranscript>>
  if (input.origin !== undefined) {
    const dcApi = tamper.apply('mdoc.dcApiHandover', {
      origin: input.origin,
      nonce: input.nonce,
      jwkThumbprint: input.jwkThumbprint,
    })
    handover = dcApi
    sessionTranscript = await dcApiSessionTranscript(dcApi)
  } else {
    const redirect = tamper.apply('mdoc.handover', {
      clientId: input.clientId,
      nonce: input.nonce,
      jwkThumbprint: input.jwkThumbprint,
      responseUri: input.responseUri,
    })
    handover = redirect
    sessionTranscript = await oid4vpSessionTranscript(redirect)
  }
  const signer = tamper.apply('mdoc.signer', input.signer)
  const presentation = await presentMdoc({
    documents: [{ issuerSigned: input.credential, disclose }],
    sessionTranscript,
    deviceSigner: { alg: signer.alg, sign: (bytes) => signer.sign(bytes) },
    ...(tampered && { tamper: tampered }),
  })
  return {
    presentation,
    disclosed: disclose,
    handover,
    ...(extra && { extra }),
    ...(tampered && { tampered }),
  }
}
