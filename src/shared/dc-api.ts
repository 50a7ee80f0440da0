// OpenID4VP over the Digital Credentials API (OpenID4VP 1.0 Appendix A), what both sides of the browser need:
// the three protocol identifiers, the request and response shapes that `navigator.credentials.get` carries,
// the origin rules (expected_origins, `origin:<origin>` as the audience of every presentation), and the JWS
// JSON Serialization of a multi-signed request (RFC 7515 §7.2.1). The verifier builds with it
// (service/oid4vp/dc-api.ts), the wallet answers with it (wallet/presentation-dc-api.ts); the mdoc handover of
// the DC API is shared/mdoc.ts `dcApiSessionTranscript`.

import type { KeyObject } from 'node:crypto'
import type { JwsAlg } from './did-key.ts'
import { isObject } from './json.ts'
import { signInput } from './jws.ts'
import { REQUEST_OBJECT_TYP } from './wire.ts'

/** Appendix A.1: `openid4vp-v<version>-<request-type>`, one per way the request is protected. */
export const DC_API_PROTOCOLS = {
  unsigned: 'openid4vp-v1-unsigned',
  signed: 'openid4vp-v1-signed',
  multisigned: 'openid4vp-v1-multisigned',
} as const
export type DcApiRequestType = keyof typeof DC_API_PROTOCOLS
export type DcApiProtocol = (typeof DC_API_PROTOCOLS)[DcApiRequestType]
export const DC_API_REQUEST_TYPES = Object.keys(DC_API_PROTOCOLS) as DcApiRequestType[]

/** The request type a protocol identifier names; undefined for any other (another version, another protocol). */
export function requestTypeOf(protocol: unknown): DcApiRequestType | undefined {
  return DC_API_REQUEST_TYPES.find((type) => DC_API_PROTOCOLS[type] === protocol)
}

/** Appendix A.2: `dc_api` answers in the clear through the API, `dc_api.jwt` inside a JWE in `response`. */
export const DC_API_RESPONSE_MODES = ['dc_api', 'dc_api.jwt'] as const
export type DcApiResponseMode = (typeof DC_API_RESPONSE_MODES)[number]

/**
 * Appendix A.2: the request parameters defined for the DC API. A signed request carries them in its request
 * object; an unsigned one as the members of `data` (no `client_id`: the origin identifies the verifier).
 */
export const DC_API_REQUEST_PARAMETERS = [
  'client_id',
  'response_type',
  'response_mode',
  'nonce',
  'client_metadata',
  'request',
  'transaction_data',
  'dcql_query',
  'verifier_info',
  'expected_origins',
] as const

/** A multi-signed request's parameters that belong in each signature's protected header (Appendix A.3.2). */
export const PER_SIGNATURE_PARAMETERS = ['client_id', 'verifier_info'] as const

/** One entry of `navigator.credentials.get({digital: {requests: [...]}})` (W3C Digital Credentials API). */
export interface DcApiRequest {
  protocol: DcApiProtocol
  /** unsigned: the parameters; signed: `{request: <compact JWS>}`; multisigned: `{request: <GeneralJws>}` */
  data: Record<string, unknown>
}

/** What the wallet answers through the API: a DigitalCredential's `protocol` and `data` (Appendix A.4). */
export interface DcApiResponse {
  protocol: string
  /** `{vp_token}` (dc_api), `{response: <JWE>}` (dc_api.jwt), or `{error, error_description?}` */
  data: Record<string, unknown>
}

/** Appendix A.4: "The audience for the response … MUST be the Origin, prefixed with origin:". */
export const ORIGIN_PREFIX = 'origin:'
export const originAudience = (origin: string): string => `${ORIGIN_PREFIX}${origin}`

/** Hosts for which http is "explicitly allowed for … local development" (Appendix A.2). */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * Why `origin` cannot be an origin of a verifier (Appendix A.2 expected_origins), or undefined when it can: an
 * https origin (scheme, host, optional port; no path, query or fragment), or http on a loopback host for local
 * development. Compared later as plain strings, so it must be written exactly as a browser serialises it.
 */
export function originProblem(origin: unknown): string | undefined {
  if (typeof origin !== 'string' || origin.length === 0) return 'an origin is a non-empty string'
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return `${JSON.stringify(origin)} is not a URL origin`
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return `${JSON.stringify(origin)} uses the scheme ${url.protocol.slice(0, -1)}; only https (http on a loopback host for local development) may be used (OpenID4VP 1.0 Appendix A.2)`
  }
  if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname)) {
    return `${JSON.stringify(origin)} is http on a host that is not loopback; http is allowed only for local development (OpenID4VP 1.0 Appendix A.2)`
  }
  if (url.origin !== origin) {
    return `${JSON.stringify(origin)} is not an origin as a browser writes it (${url.origin}): scheme, host and port only, no path or trailing slash`
  }
  return undefined
}

// ---- JWS JSON Serialization (RFC 7515 §7.2.1), the multi-signed request of Appendix A.3.2 ----

/** A JWS in the general JSON serialization: one payload, a signature per client identifier. */
export interface GeneralJws {
  payload: string
  signatures: { protected: string; signature: string; header?: Record<string, unknown> }[]
}

/** A signer of one signature of a multi-signed request: its key, and the protected header that names it. */
export interface GeneralJwsSigner {
  alg: JwsAlg
  privateKey: KeyObject
  /** kid or x5c, and the per-signature parameters (client_id, verifier_info); alg and typ are added */
  header: Record<string, unknown>
}

const b64urlJson = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/**
 * Signs `payload` once per signer (RFC 7515 §5.1 over each protected header and the shared payload). The
 * per-signature parameters must not be in the payload (Appendix A.3.2): the caller leaves them out.
 */
export function signGeneralJws(
  payload: Record<string, unknown>,
  signers: readonly GeneralJwsSigner[],
): GeneralJws {
  const encodedPayload = b64urlJson(payload)
  return {
    payload: encodedPayload,
    signatures: signers.map((signer) => {
      const encodedHeader = b64urlJson({ alg: signer.alg, typ: REQUEST_OBJECT_TYP, ...signer.header })
      return {
        protected: encodedHeader,
        signature: signInput(signer.alg, `${encodedHeader}.${encodedPayload}`, signer.privateKey),
      }
    }),
  }
}

/** One signature of a general JWS, as a compact JWS of its own (the same signing input) and its header. */
export interface GeneralJwsEntry {
  index: number
  header: Record<string, unknown>
  /** `protected.payload.signature`: verifiable with any compact JWS verifier */
  compact: string
}

/** A general JWS that is malformed: the message says where (RFC 7515 §7.2.1). */
export class GeneralJwsError extends Error {
  override name = 'GeneralJwsError'
}

const B64URL = /^[A-Za-z0-9_-]+$/

function jsonOf(segment: string, what: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
  } catch {
    throw new GeneralJwsError(`${what} is not base64url-encoded JSON`)
  }
  if (!isObject(value)) throw new GeneralJwsError(`${what} is not a JSON object`)
  return value
}

/** At most this many signatures are read: a request names a handful of trust frameworks. */
export const MAX_SIGNATURES = 8

/**
 * The payload and every signature of a general JWS, nothing verified. A signature's `header` (unprotected)
 * is refused: every parameter that names the client must be integrity-protected (Appendix A.3.2 puts them in
 * the protected header).
 */
export function splitGeneralJws(value: unknown): {
  payload: Record<string, unknown>
  entries: GeneralJwsEntry[]
} {
  if (!isObject(value)) throw new GeneralJwsError('a multi-signed request is a JWS JSON Serialization object')
  if (typeof value.payload !== 'string' || !B64URL.test(value.payload)) {
    throw new GeneralJwsError('payload is not a base64url string')
  }
  if (!Array.isArray(value.signatures) || value.signatures.length === 0) {
    throw new GeneralJwsError('signatures is not a non-empty array (RFC 7515 §7.2.1)')
  }
  if (value.signatures.length > MAX_SIGNATURES) {
    throw new GeneralJwsError(`${value.signatures.length} signatures; at most ${MAX_SIGNATURES} are read`)
  }
  const payload = jsonOf(value.payload, 'payload')
  const entries = value.signatures.map((entry: unknown, index: number): GeneralJwsEntry => {
    const where = `signatures[${index}]`
    if (!isObject(entry)) throw new GeneralJwsError(`${where} is not an object`)
    if (typeof entry.protected !== 'string' || !B64URL.test(entry.protected)) {
      throw new GeneralJwsError(`${where}.protected is not a base64url string`)
    }
    if (typeof entry.signature !== 'string' || !B64URL.test(entry.signature)) {
      throw new GeneralJwsError(`${where}.signature is not a base64url string`)
    }
    if (entry.header !== undefined) {
      throw new GeneralJwsError(
        `${where} has an unprotected header: client_id and the key must be in the protected header (OpenID4VP 1.0 Appendix A.3.2)`,
      )
    }
    const header = jsonOf(entry.protected, `${where}.protected`)
    return { index, header, compact: `${entry.protected}.${value.payload}.${entry.signature}` }
  })
  return { payload, entries }
}
