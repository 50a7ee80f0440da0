// The OpenID4VP 1.0 authorization response: the vp_token object (§8.1: keyed by credential query id, each
// value an array of presentations), posted form-encoded with `direct_post` (§8.2: vp_token as JSON text,
// state) or, for `direct_post.jwt` (§8.3, §8.3.1), as one `response` field holding an unsigned JWE encrypted
// to the verifier's client_metadata key: alg ECDH-ES with an ephemeral key (jose), enc from
// encrypted_response_enc_values_supported, the key's `kid` in the protected header, payload {vp_token, state}.

import { loadJose } from './lazy.ts'
import { WRONG_QUERY_ID_SUFFIX } from './misbehaviour.ts'
import type { ResponseEncryption } from './presentation-v1-request.ts'

/** vp_token of a DCQL answer (1.0 §8.1). */
/** §8.1: per credential query id, its presentations (a compact JWT / SD-JWT, or an ldp_vp JSON object). */
export type VpTokenV1 = Record<string, (string | Record<string, unknown>)[]>

/** The protected header of an encrypted response, as sent. */
export interface JweHeader {
  alg: string
  enc: string
  kid?: string
  epk?: JsonWebKey
}

/** 'vp-token-wrong-id': the first entry keyed under its credential query id + `_unrequested`, order kept. */
export function withWrongQueryId(vpToken: VpTokenV1): VpTokenV1 {
  return Object.fromEntries(
    Object.entries(vpToken).map(([id, presentations], i) => [
      i === 0 ? `${id}${WRONG_QUERY_ID_SUFFIX}` : id,
      presentations,
    ]),
  )
}

/** §8.2: the direct_post form; vp_token is a JSON object, so it travels as JSON text. */
export function directPostForm(vpToken: VpTokenV1, state: string | undefined): Record<string, string> {
  return { vp_token: JSON.stringify(vpToken), ...(state !== undefined && { state }) }
}

/** §8.3: the response parameters as top-level members of the encrypted JWT's payload. */
export function responsePayload(vpToken: VpTokenV1, state: string | undefined): Record<string, unknown> {
  return { vp_token: vpToken, ...(state !== undefined && { state }) }
}

/** The unsigned, encrypted JWT of §8.3 (JWE compact serialization). */
export async function encryptResponse(
  payload: Record<string, unknown>,
  encryption: ResponseEncryption,
): Promise<{ jwe: string; header: JweHeader }> {
  const { CompactEncrypt, decodeProtectedHeader, importJWK } = await loadJose()
  const { alg: _alg, use: _use, key_ops: _ops, ...publicJwk } = encryption.jwk as Record<string, unknown>
  const key = await importJWK(publicJwk as never, encryption.alg)
  const jwe = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({
      alg: encryption.alg,
      enc: encryption.enc,
      // §8.3: "the JWE MUST include the same value in the kid JWE Header Parameter"
      ...(encryption.kid !== undefined && { kid: encryption.kid }),
    })
    .encrypt(key)
  return { jwe, header: decodeProtectedHeader(jwe) as JweHeader }
}

/** §8.3.1: the direct_post.jwt form. */
export function directPostJwtForm(jwe: string): Record<string, string> {
  return { response: jwe }
}
