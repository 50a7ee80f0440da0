// The OpenID4VP authorization request link, exactly as a QR code carries it: any scheme (`openid-vp://`,
// `openid4vp://`, `haip://`, `https://wallet.example/…`), with the request object by reference (`request_uri`,
// optionally `request_uri_method`, OpenID4VP 1.0 §5.1), as a JWT by value (`request`), or as plain request
// parameters by value (`response_type`, `client_id`, `dcql_query`, …: the unsigned requests of the
// `redirect_uri:` client identifier prefix, 1.0 §5.9.3). Parsed here only to fail early with a clear message;
// the request itself is checked in presentation.ts (draft 20) and presentation-v1-request.ts (1.0).
import { WalletUsageError } from './errors.ts'

export interface ParsedPresentationLink {
  scheme: string
  /** `client_id` of the link; the request object's `client_id` must equal it */
  clientId: string | undefined
  /** `request_uri`, when the request object comes by reference */
  requestUri: string | undefined
  /** `request`, when the request object comes by value */
  request: string | undefined
  /** true when the link carries the request parameters themselves (no request object) */
  byValue: boolean
  /** `request_uri_method` as sent (`get` | `post`, 1.0 §5.1), when present */
  requestUriMethod: string | undefined
  /** every query parameter, as sent */
  params: Record<string, string>
}

const LINK = /^([a-z][a-z0-9+.-]*):\/\/([^?#]*)\?([^#]*)(#.*)?$/i
const SHAPE = '<scheme>://?client_id=…&request_uri=<URL> (or &request=<JWT>, or the request parameters)'

function preview(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text
}

export function parsePresentationLink(link: string): ParsedPresentationLink {
  if (typeof link !== 'string' || link.trim() === '') {
    throw new WalletUsageError(`authorization request link is empty (expected ${SHAPE})`)
  }
  const text = link.trim()
  const match = LINK.exec(text)
  if (!match)
    throw new WalletUsageError(`not an authorization request link (expected ${SHAPE}): ${preview(text)}`)
  const params: Record<string, string> = {}
  for (const [key, value] of new URLSearchParams(match[3])) {
    if (key in params) throw new WalletUsageError(`authorization request link repeats the parameter ${key}`)
    params[key] = value
  }
  const requestUri = params.request_uri
  const request = params.request
  if (requestUri !== undefined && request !== undefined) {
    throw new WalletUsageError('authorization request link has both request_uri and request')
  }
  const byValue = requestUri === undefined && request === undefined
  if (byValue && params.response_type === undefined) {
    throw new WalletUsageError(
      `authorization request link has neither request_uri nor request, nor the request parameters themselves (response_type, …): ${preview(text)}`,
    )
  }
  if (params.request_uri_method !== undefined && requestUri === undefined) {
    // OpenID4VP 1.0 §5.1: request_uri_method MUST NOT be present without request_uri
    throw new WalletUsageError('authorization request link has request_uri_method but no request_uri')
  }
  if (requestUri !== undefined) {
    let url: URL
    try {
      url = new URL(requestUri)
    } catch {
      throw new WalletUsageError(`request_uri is not a URL: ${preview(requestUri)}`)
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new WalletUsageError(`request_uri must be an http(s) URL: ${preview(requestUri)}`)
    }
  }
  return {
    scheme: (match[1] as string).toLowerCase(),
    clientId: params.client_id,
    requestUri,
    request,
    byValue,
    requestUriMethod: params.request_uri_method,
    params,
  }
}

/** Parameters that make a link a credential offer (OpenID4VCI 1.0 §4.1) or an authorization request. */
const OFFER_PARAMETERS = ['credential_offer_uri', 'credential_offer']
const REQUEST_PARAMETERS = [
  'request_uri',
  'request',
  'client_id',
  'response_type',
  'dcql_query',
  'presentation_definition',
  'presentation_definition_uri',
]

/**
 * What a link asks of the wallet, from its parameters whatever its scheme (`openid-credential-offer://`,
 * `openid-vp://`, `openid4vp://`, `haip://`, `https://…`): 'issuance' for a credential offer, 'presentation'
 * for an authorization request. A link carrying both, or neither, is a WalletUsageError.
 */
export function linkKind(link: string): 'issuance' | 'presentation' {
  const text = typeof link === 'string' ? link.trim() : ''
  const match = LINK.exec(text)
  if (!match) {
    throw new WalletUsageError(
      `not a credential offer nor an authorization request link (expected <scheme>://…?credential_offer_uri=… or ${SHAPE}): ${preview(text)}`,
    )
  }
  const keys = new Set(new URLSearchParams(match[3]).keys())
  const offer = OFFER_PARAMETERS.filter((k) => keys.has(k))
  const request = REQUEST_PARAMETERS.filter((k) => keys.has(k))
  if (offer.length > 0 && request.length > 0) {
    throw new WalletUsageError(
      `the link carries a credential offer (${offer.join(', ')}) and an authorization request (${request.join(', ')}); a wallet answers one or the other`,
    )
  }
  if (offer.length > 0) return 'issuance'
  if (request.length > 0) return 'presentation'
  throw new WalletUsageError(
    `the link carries neither a credential offer (credential_offer_uri, credential_offer) nor an authorization request (${REQUEST_PARAMETERS.join(', ')}): ${preview(text)}`,
  )
}
