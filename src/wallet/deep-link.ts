// The credential offer deep link, exactly as a QR code carries it: any scheme (`openid-credential-offer://`,
// `haip://`, `https://wallet.example/…`), with the offer by reference (`credential_offer_uri`) or inline
// (`credential_offer`, URL-encoded JSON). Parsed here only to fail early with a clear message; the offer itself
// is then read by @sphereon/oid4vci-client.
import { WalletUsageError } from './errors.ts'

export type ParsedDeepLink =
  | { scheme: string; offerUri: string; offer?: undefined }
  | { scheme: string; offerUri?: undefined; offer: Record<string, unknown> }

const DEEP_LINK = /^([a-z][a-z0-9+.-]*):\/\/([^?#]*)\?([^#]*)(#.*)?$/i
const SHAPE = '<scheme>://…?credential_offer_uri=<URL> or <scheme>://…?credential_offer=<JSON>'

function preview(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text
}

export function parseDeepLink(deepLink: string): ParsedDeepLink {
  if (typeof deepLink !== 'string' || deepLink.trim() === '') {
    throw new WalletUsageError(`credential offer deep link is empty (expected ${SHAPE})`)
  }
  const link = deepLink.trim()
  const match = DEEP_LINK.exec(link)
  if (!match)
    throw new WalletUsageError(`not a credential offer deep link (expected ${SHAPE}): ${preview(link)}`)
  const scheme = (match[1] as string).toLowerCase()
  let params: URLSearchParams
  try {
    params = new URLSearchParams(match[3])
  } catch {
    throw new WalletUsageError(`credential offer deep link has an unreadable query: ${preview(link)}`)
  }
  const offerUri = params.get('credential_offer_uri')
  const inline = params.get('credential_offer')
  if (offerUri !== null && inline !== null) {
    throw new WalletUsageError(
      'credential offer deep link has both credential_offer_uri and credential_offer',
    )
  }
  if (offerUri !== null) {
    let url: URL
    try {
      url = new URL(offerUri)
    } catch {
      throw new WalletUsageError(`credential_offer_uri is not a URL: ${preview(offerUri)}`)
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new WalletUsageError(`credential_offer_uri must be an http(s) URL: ${preview(offerUri)}`)
    }
    return { scheme, offerUri }
  }
  if (inline !== null) {
    let offer: unknown
    try {
      offer = JSON.parse(inline)
    } catch {
      throw new WalletUsageError(`credential_offer is not JSON: ${preview(inline)}`)
    }
    if (typeof offer !== 'object' || offer === null || Array.isArray(offer)) {
      throw new WalletUsageError('credential_offer is not a JSON object')
    }
    const record = offer as Record<string, unknown>
    if (typeof record.credential_issuer !== 'string') {
      throw new WalletUsageError('credential_offer has no credential_issuer')
    }
    return { scheme, offer: record }
  }
  throw new WalletUsageError(
    `credential offer deep link has neither credential_offer_uri nor credential_offer: ${preview(link)}`,
  )
}
