// What every presentation of one OpenID4VP 1.0 answer is bound to, computed once per answer and handed to
// each format's presenter (presentation-v1.ts): the nonce, the audience (KB-JWT and JWT VP `aud`, ldp_vp
// `domain`) and what an mdoc's SessionTranscript binds. A request by link binds the full client_id and the
// response_uri (B.3.6, B.1.3, B.2.6.1); a request over the Digital Credentials API binds the caller's origin
// (Appendix A.4: `origin:<origin>` as the audience, B.2.6.2: the OpenID4VPDCAPIHandover).

import { jwkThumbprint } from '../shared/jws.ts'

/** What an mdoc's SessionTranscript binds besides the nonce and the thumbprint. */
export type MdocBinding =
  /** B.2.6.1: the OpenID4VPHandover of the full client_id and the response_uri */
  | { kind: 'redirect'; clientId: string; responseUri: string }
  /** B.2.6.2: the OpenID4VPDCAPIHandover of the origin (without `origin:`) */
  | { kind: 'dc_api'; origin: string }

export interface AnswerBinding {
  /** the request's nonce: KB-JWT and JWT VP `nonce`, ldp_vp `challenge`, the mdoc handover */
  nonce: string
  /** KB-JWT and JWT VP `aud`, ldp_vp `domain`: the full client_id, or `origin:<origin>` over the DC API */
  audience: string
  /**
   * base64url JWK SHA-256 thumbprint (RFC 7638) of the verifier's response encryption key when the request
   * asks for an encrypted answer (direct_post.jwt, dc_api.jwt), else undefined (the handover's null)
   */
  jwkThumbprint: string | undefined
  mdoc: MdocBinding
}

/** The thumbprint an mdoc handover binds: of the encryption key when the answer is asked encrypted. */
export function thumbprintOf(encrypted: boolean, key: JsonWebKey | undefined): string | undefined {
  return encrypted && key ? jwkThumbprint(key as never) : undefined
}
