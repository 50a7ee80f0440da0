// Client identifier prefixes (OpenID4VP 1.0 §5.9), one table for both sides of the wire: how a client_id
// splits into prefix and identifier (§5.9.1), what a verifier needs to name itself under each prefix (the
// service's request-v1.ts), and how a wallet checks a request under it (the wallet's
// presentation-v1-request.ts). A prefix without a wallet rule is recognised and refused.
// Anchor: oid4vc-ts `openid4vp/src/client-identifier-prefix/`.

import { DidKeyError, didOf, JWS_ALGS, resolveDidKey } from './did-key.ts'
import { JwsError, verifyJws } from './jws.ts'
import { lazyImport } from './lazy.ts'

const loadX509 = lazyImport(() => import('./x509.ts'))

/** Why a wallet refuses a request under its prefix: the OAuth error code and the description it sends. */
export class ClientIdPrefixError extends Error {
  override name = 'ClientIdPrefixError'
  constructor(
    readonly error: 'invalid_request' | 'invalid_request_object',
    description: string,
  ) {
    super(description)
  }
}

/** A request as the wallet received it, for the check of its prefix. */
export interface ClientRequest {
  prefix: VerifiedClientIdPrefix
  /** the client identifier without its prefix */
  identifier: string
  /** whether it came as a signed request object (JOSE alg other than none) */
  signed: boolean
  /** the request object (compact JWS) when it came as one */
  compact: string | undefined
  header: Record<string, unknown>
  /** the request parameters; the redirect_uri rule fills in response_uri when it is absent */
  payload: Record<string, unknown>
  /** where the request object was fetched, when by reference */
  requestUri: string | undefined
  /**
   * OpenID4VP 1.0 Appendix A: the origin the platform handed the wallet with a Digital Credentials API
   * request. There is no response_uri then: x509_san_dns holds the origin's host to the certified name instead.
   */
  origin?: string
}

/** What the wallet trusts: the trust anchors of x5c chains, and its clock (ms). */
export interface ClientTrust {
  trustAnchors: readonly string[]
  now: number
}

/** The verified leaf certificate of an x509 prefix. */
export interface VerifiedCertificate {
  subject: string
  dns: string[]
  anchor: string
}

/** How a wallet checks a request under one prefix. */
interface WalletRule {
  /** a request object; answers the verified leaf for the x509 prefixes */
  signed(request: ClientRequest, trust: ClientTrust): Promise<VerifiedCertificate | undefined>
  /** a request that came unsigned (as parameters, or alg none) */
  unsigned(request: ClientRequest): void
  /** where the answer goes when the request names no response_uri */
  respondsTo?: (identifier: string) => string
}

/** What a verifier needs to name itself under one prefix, and what its request objects are signed with. */
type ServiceIdentity =
  | { signsWith: 'nothing'; identifier: (of: { responseUri: string }) => string }
  | { signsWith: 'did'; identifier: (of: { did: string }) => string }
  | {
      signsWith: 'x509'
      /** '' when the certificate cannot name the verifier this way */
      identifier: (of: { dnsName: string; hash: string }) => string
      /** what the certificate must name for it (the service's error message) */
      requires: string
    }

interface PrefixEntry {
  service?: ServiceIdentity
  wallet?: WalletRule
  /** why the prefix is refused beyond "this wallet verifies only …" */
  refusal?: string
}

const RULE = 'OpenID4VP 1.0 §5.9.3'

/**
 * Every client identifier prefix this project knows (OpenID4VP 1.0 §5.9.3, and the drafts' x509_san_uri).
 * The first four are the ones the service signs with and the wallet verifies, in the order the wallet
 * announces them (client_id_prefixes_supported, §10.1).
 */
export const CLIENT_ID_PREFIXES = {
  // the verifier is a DID: the request object is signed by a key of the DID document, named by the header kid
  decentralized_identifier: {
    service: { signsWith: 'did', identifier: ({ did }) => did },
    wallet: { signed: verifyDidSigned, unsigned: mustBeSigned("DID's key") },
  },
  // the verifier is a DNS name: the request object is signed by the leaf of an x5c chain whose dNSName SAN is it
  x509_san_dns: {
    service: { signsWith: 'x509', identifier: ({ dnsName }) => dnsName, requires: 'dNSName' },
    wallet: { signed: verifyX509SanDns, unsigned: mustBeSigned('leaf key of its x5c chain') },
  },
  // the verifier is the SHA-256 hash of its leaf certificate (base64url of the DER), which signs the request object
  x509_hash: {
    service: { signsWith: 'x509', identifier: ({ hash }) => hash, requires: 'hash' },
    wallet: { signed: verifyX509Hash, unsigned: mustBeSigned('leaf key of its x5c chain') },
  },
  // the verifier is its response URI: "Requests using the redirect_uri Client Identifier Prefix cannot be
  // signed", every parameter comes in the link, and the answer goes to the identifier itself
  redirect_uri: {
    service: { signsWith: 'nothing', identifier: ({ responseUri }) => responseUri },
    wallet: { signed: refuseSigned, unsigned: checkRedirectUri, respondsTo: (identifier) => identifier },
  },
  // recognised, not verified by this wallet: a trust chain of OpenID Federation, a verifier attestation JWT,
  // the drafts' URI SAN, and the prefix the Digital Credentials API reserves
  openid_federation: {},
  verifier_attestation: {},
  x509_san_uri: {},
  origin: { refusal: 'origin is reserved for the DC API' },
} as const satisfies Record<string, PrefixEntry>

export type KnownClientIdPrefix = keyof typeof CLIENT_ID_PREFIXES
type Entry = (typeof CLIENT_ID_PREFIXES)[KnownClientIdPrefix]
/** The prefixes a wallet verifies (and the service signs with). */
export type VerifiedClientIdPrefix = {
  [P in KnownClientIdPrefix]: (typeof CLIENT_ID_PREFIXES)[P] extends { wallet: WalletRule } ? P : never
}[KnownClientIdPrefix]

/** The prefixes a wallet verifies, in table order. */
export const VERIFIED_CLIENT_ID_PREFIXES = (Object.keys(CLIENT_ID_PREFIXES) as KnownClientIdPrefix[]).filter(
  (prefix): prefix is VerifiedClientIdPrefix => walletRule(prefix) !== undefined,
)

export function isKnownClientIdPrefix(prefix: string): prefix is KnownClientIdPrefix {
  return Object.hasOwn(CLIENT_ID_PREFIXES, prefix)
}

/** How a wallet checks requests under `prefix`; undefined for a prefix it recognises and refuses. */
export function walletRule(prefix: KnownClientIdPrefix): WalletRule | undefined {
  const entry: Entry = CLIENT_ID_PREFIXES[prefix]
  return 'wallet' in entry ? entry.wallet : undefined
}

/** Why a recognised prefix is refused, beyond not being verified. */
export function refusalOf(prefix: KnownClientIdPrefix): string | undefined {
  const entry: Entry = CLIENT_ID_PREFIXES[prefix]
  return 'refusal' in entry ? entry.refusal : undefined
}

/** What the service needs to name itself under `prefix`. */
export function serviceIdentity(prefix: VerifiedClientIdPrefix): ServiceIdentity {
  return CLIENT_ID_PREFIXES[prefix].service
}

/**
 * Whether requests under `prefix` are signed request objects: all but redirect_uri, which "cannot be signed"
 * (a wallet then announces no request_object_signing_alg_values_supported for it, §5.10).
 */
export function requestsAreSigned(prefix: string): boolean {
  if (!isKnownClientIdPrefix(prefix)) return true
  const entry: Entry = CLIENT_ID_PREFIXES[prefix]
  return !('service' in entry) || entry.service.signsWith !== 'nothing'
}

/** `<prefix>:<identifier>`: the full client_id, the audience of every presentation (§5.9.1, §B.3.6). */
export function clientIdOf(prefix: KnownClientIdPrefix, identifier: string): string {
  return `${prefix}:${identifier}`
}

/** `<prefix>:<identifier>`: how a 1.0 client_id with a prefix looks, whether or not the prefix is known. */
const PREFIX_SHAPE = /^[A-Za-z][\w.+-]*:./

/**
 * A client_id split per 1.0 §5.9.1: `known` (a prefix of the table), `unknown` (another `<prefix>:…`, which a
 * wallet refuses rather than taking it for another client identifier scheme), `bare-did` (`did:…`, the
 * drafts' client_id; 1.0 writes `decentralized_identifier:did:…`) or `pre-registered` (no prefix).
 */
export type ParsedClientId =
  | { kind: 'known'; prefix: KnownClientIdPrefix; identifier: string }
  | { kind: 'unknown'; prefix: string; identifier: string }
  | { kind: 'bare-did' | 'pre-registered'; prefix: undefined; identifier: string }

export function parseClientId(clientId: string): ParsedClientId {
  if (clientId.startsWith('did:')) return { kind: 'bare-did', prefix: undefined, identifier: clientId }
  const colon = clientId.indexOf(':')
  if (colon >= 0) {
    const prefix = clientId.slice(0, colon)
    const identifier = clientId.slice(colon + 1)
    if (isKnownClientIdPrefix(prefix)) return { kind: 'known', prefix, identifier }
    if (PREFIX_SHAPE.test(clientId)) return { kind: 'unknown', prefix, identifier }
  }
  return { kind: 'pre-registered', prefix: undefined, identifier: clientId }
}

// --- the wallet's rules ----------------------------------------------------------------------------------------

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The request object's signature by `key`; a failure is the prefix's refusal naming `what` was checked. */
function checkSignature(request: ClientRequest, key: Parameters<typeof verifyJws>[1], what: string): void {
  try {
    verifyJws(request.compact as string, key, { algorithms: JWS_ALGS })
  } catch (error) {
    const reason = error instanceof JwsError ? error.message : message(error)
    throw new ClientIdPrefixError('invalid_request_object', `${request.prefix} (${RULE}): ${what}: ${reason}`)
  }
}

/** A prefix whose requests are request objects signed by `signer`: an unsigned one is refused. */
function mustBeSigned(signer: string): (request: ClientRequest) => void {
  return (request) => {
    throw new ClientIdPrefixError(
      'invalid_request',
      `${request.prefix} (${RULE}): the request must be a request object signed by the ${signer}; it came unsigned`,
    )
  }
}

/** decentralized_identifier: the key is the DID's, named by the JOSE header kid; this wallet resolves did:key. */
async function verifyDidSigned(request: ClientRequest): Promise<undefined> {
  const { identifier, header } = request
  if (!identifier.startsWith('did:')) {
    throw new ClientIdPrefixError(
      'invalid_request',
      `decentralized_identifier (${RULE}): ${identifier} is not a DID`,
    )
  }
  const kid = header.kid
  if (typeof kid !== 'string' || !kid.startsWith('did:')) {
    throw new ClientIdPrefixError(
      'invalid_request_object',
      `decentralized_identifier (${RULE}): the header kid ${JSON.stringify(kid)} is not a DID URL naming the key of ${identifier}`,
    )
  }
  if (didOf(kid) !== identifier) {
    throw new ClientIdPrefixError(
      'invalid_request_object',
      `decentralized_identifier (${RULE}): the header kid ${kid} is not a key of the client identifier ${identifier}`,
    )
  }
  if (!identifier.startsWith('did:key:')) {
    throw new ClientIdPrefixError(
      'invalid_request',
      `decentralized_identifier (${RULE}): this wallet resolves did:key only, not ${identifier.split(':').slice(0, 2).join(':')}`,
    )
  }
  let key: ReturnType<typeof resolveDidKey>
  try {
    key = resolveDidKey(kid)
  } catch (error) {
    if (!(error instanceof DidKeyError)) throw error
    throw new ClientIdPrefixError(
      'invalid_request_object',
      `decentralized_identifier: kid ${kid}: ${error.message}`,
    )
  }
  checkSignature(request, key.publicKey, `the signature by ${kid}`)
  return undefined
}

/**
 * x509_san_dns and x509_hash: the leaf of the x5c header signs, and the chain leads to a trust anchor of the
 * wallet. Answers the verified chain and the hash function of the x509 module (loaded on first use).
 */
async function verifiedChain(request: ClientRequest, trust: ClientTrust) {
  const { prefix, header } = request
  if (header.x5c === undefined) {
    throw new ClientIdPrefixError(
      'invalid_request_object',
      `${prefix} (${RULE}): the request object has no x5c header`,
    )
  }
  if (trust.trustAnchors.length === 0) {
    throw new ClientIdPrefixError(
      'invalid_request',
      `${prefix} (${RULE}): the wallet must validate the x5c chain, but it has no trust anchor configured (Wallet.create trustAnchors, --trust-anchor)`,
    )
  }
  const { verifyX5c, x509Hash, X509Error } = await loadX509()
  try {
    return { chain: await verifyX5c(header.x5c, trust.trustAnchors, trust.now), x509Hash }
  } catch (error) {
    if (!(error instanceof X509Error)) throw error
    throw new ClientIdPrefixError('invalid_request', `${prefix} (${RULE}): x5c: ${error.message}`)
  }
}

/** The request object's signature by the leaf; answers the leaf the wallet reports. */
function signedByLeaf(
  request: ClientRequest,
  chain: Awaited<ReturnType<typeof verifiedChain>>['chain'],
): VerifiedCertificate {
  checkSignature(request, chain.publicKey, `the signature by the leaf certificate ${chain.leaf.subject}`)
  return { subject: chain.leaf.subject, dns: chain.dns, anchor: chain.anchor.subject }
}

/** x509_san_dns: the identifier is a dNSName SAN of the leaf, and the answer goes to that host. */
async function verifyX509SanDns(request: ClientRequest, trust: ClientTrust): Promise<VerifiedCertificate> {
  const { identifier, payload } = request
  const { chain } = await verifiedChain(request, trust)
  if (!chain.dns.includes(identifier)) {
    throw new ClientIdPrefixError(
      'invalid_request',
      `x509_san_dns (${RULE}): ${identifier} is not a dNSName SAN of the leaf certificate (${chain.leaf.subject}; dNSNames ${JSON.stringify(chain.dns)})`,
    )
  }
  // No list of trusted client identifiers here, so the response goes to the certified host only — and,
  // since a certificate names no port, to the origin (scheme, host, port) that served the request object:
  // another port of the same host is another service the certificate does not speak for.
  if (request.origin !== undefined) {
    // Appendix A: the answer goes back to the calling page, so the page's origin is what the certificate
    // must speak for (no response_uri exists over the DC API)
    if (new URL(request.origin).hostname !== identifier) {
      throw new ClientIdPrefixError(
        'invalid_request',
        `x509_san_dns (${RULE}, OpenID4VP 1.0 Appendix A): the calling origin ${request.origin} is not on the certified host ${identifier}. Nothing was sent.`,
      )
    }
    return signedByLeaf(request, chain)
  }
  const target = payload.response_uri ?? payload.redirect_uri
  let url: URL | undefined
  try {
    url = new URL(String(target))
  } catch {}
  if (url?.hostname !== identifier) {
    throw new ClientIdPrefixError(
      'invalid_request',
      `x509_san_dns (${RULE}): the host of response_uri ${JSON.stringify(target)} must be the client identifier ${identifier}. Nothing was sent.`,
    )
  }
  const expected = request.requestUri !== undefined ? new URL(request.requestUri).origin : undefined
  if (expected !== undefined && url.origin !== expected) {
    throw new ClientIdPrefixError(
      'invalid_request',
      `x509_san_dns (${RULE}): response_uri ${JSON.stringify(target)} is on the origin ${url.origin}, not on ${expected}, where the certified verifier ${identifier} served its request; a certificate names no port, so the wallet answers only the origin it was asked from. Nothing was sent.`,
    )
  }
  return signedByLeaf(request, chain)
}

/** x509_hash: the identifier is the SHA-256 hash of the leaf's DER (base64url). */
async function verifyX509Hash(request: ClientRequest, trust: ClientTrust): Promise<VerifiedCertificate> {
  const { identifier, header } = request
  const { chain, x509Hash } = await verifiedChain(request, trust)
  const hash = x509Hash(String((header.x5c as unknown[])[0]))
  if (hash !== identifier) {
    throw new ClientIdPrefixError(
      'invalid_request',
      `x509_hash (${RULE}): the client identifier ${identifier} is not the SHA-256 hash of the leaf certificate (${hash})`,
    )
  }
  return signedByLeaf(request, chain)
}

/** redirect_uri: "Requests using the redirect_uri Client Identifier Prefix cannot be signed". */
async function refuseSigned(request: ClientRequest): Promise<undefined> {
  throw new ClientIdPrefixError(
    'invalid_request',
    `redirect_uri (${RULE}): the request must not be signed (no key can be trusted for it); got a request object signed with ${String(request.header.alg)}`,
  )
}

/** redirect_uri: the response goes to the client identifier itself; the verifier MAY omit response_uri. */
function checkRedirectUri(request: ClientRequest): void {
  const { payload, identifier } = request
  payload.response_uri ??= identifier
  if (payload.response_uri !== identifier) {
    throw new ClientIdPrefixError(
      'invalid_request',
      `redirect_uri (${RULE}): response_uri ${JSON.stringify(payload.response_uri)} must be the client identifier ${identifier}. Nothing was sent.`,
    )
  }
}

/**
 * Checks a request under its prefix (§5.9.3): a signed one by the prefix's key and identifier rule, an
 * unsigned one by the prefix's rule for that. Throws ClientIdPrefixError naming the broken rule.
 */
export async function checkClientRequest(
  request: ClientRequest,
  trust: ClientTrust,
): Promise<VerifiedCertificate | undefined> {
  const rule: WalletRule = CLIENT_ID_PREFIXES[request.prefix].wallet
  if (request.signed) return rule.signed(request, trust)
  rule.unsigned(request)
  return undefined
}
