// An OpenID4VP 1.0 Final authorization request, resolved and checked before anything is answered: the request
// object fetched by reference (request_uri_method get, or post with wallet_metadata and wallet_nonce, §5.10),
// taken by value (a `request` JWT, or the parameters themselves for the unsigned `redirect_uri:` prefix), its
// signature verified per client identifier prefix (§5.9.3), and the parameters this wallet answers checked
// (§5.1, §8.2, §8.3); the rule of each prefix is in src/shared/client-id-prefix.ts. Every refusal is a WalletProtocolError of step `request` whose description names the
// rule and its clause; nothing is sent to the verifier. The OWF @openid4vc/openid4vp client is not used here:
// its request_uri POST sends the wallet metadata members as flat form fields and no wallet_nonce (0.4.6), and
// the interop test's verifier is built on it, so the wallet stays an independent implementation.

import { randomBytes } from 'node:crypto'
import { DcqlError, DcqlQuery } from 'dcql'
import type { LdKeyType } from '../formats/ldp-vc/keys.ts'
import { FORMATS } from '../formats/registry.ts'
import {
  ClientIdPrefixError,
  checkClientRequest,
  type KnownClientIdPrefix,
  parseClientId,
  refusalOf,
  requestsAreSigned,
  VERIFIED_CLIENT_ID_PREFIXES,
  type VerifiedClientIdPrefix,
  walletRule,
} from '../shared/client-id-prefix.ts'
import { JWS_ALGS, type JwsAlg } from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws } from '../shared/jws.ts'
import { JWT_MEDIA_TYPE, REQUEST_OBJECT_MEDIA_TYPE, REQUEST_OBJECT_TYP } from '../shared/wire.ts'
import { protocolError, replayedNonce, transportError, WalletProtocolError } from './errors.ts'
import { type HttpAnswer, httpRequest, type WalletHttp } from './http.ts'
import { proofTypesFor } from './ldp-proof-choice.ts'
import type { ParsedPresentationLink } from './presentation-link.ts'

/** The client identifier prefixes this wallet verifies (OpenID4VP 1.0 §5.9.3): those with a wallet rule. */
export const SUPPORTED_CLIENT_ID_PREFIXES: readonly VerifiedClientIdPrefix[] = VERIFIED_CLIENT_ID_PREFIXES
export type ClientIdPrefix = VerifiedClientIdPrefix

/** Response modes this wallet answers: §8.2 and §8.3.1. */
export type ResponseModeV1 = 'direct_post' | 'direct_post.jwt'
/** Content encryption this wallet can use for direct_post.jwt (HAIP: A128GCM and A256GCM). */
export const SUPPORTED_ENC = ['A128GCM', 'A256GCM'] as const
/** The one key agreement this wallet uses for direct_post.jwt (HAIP: ECDH-ES). */
export const RESPONSE_ENCRYPTION_ALG = 'ECDH-ES'
/** §8.3: `A128GCM` when client_metadata names no `encrypted_response_enc_values_supported`. */
export const DEFAULT_ENC = 'A128GCM'

/** Parameters carried as JSON text when the request comes as URL parameters (RFC 6749, 1.0 §5.1). */
const JSON_PARAMETERS = ['dcql_query', 'client_metadata', 'transaction_data', 'verifier_info']

export interface ResponseEncryption {
  /** the verifier's public key from client_metadata.jwks */
  jwk: JsonWebKey & { kid?: string; alg?: string; use?: string }
  alg: typeof RESPONSE_ENCRYPTION_ALG
  enc: (typeof SUPPORTED_ENC)[number]
  kid: string | undefined
}

export interface ResolvedRequestV1 {
  /** the full client_id, prefix included: the audience of every presentation (1.0 §5.9.1, §B.3.6) */
  clientId: string
  prefix: ClientIdPrefix
  /** the client identifier without its prefix */
  identifier: string
  requestUri: string | undefined
  /** how the request object was fetched; undefined when it came by value */
  requestUriMethod: 'get' | 'post' | undefined
  /** the wallet_nonce sent with a request_uri POST and echoed by the request object (§5.10) */
  walletNonce: string | undefined
  /** the request object as received (compact JWS); undefined when the parameters came by value */
  requestObject: string | undefined
  header: Record<string, unknown> | undefined
  /** the authorization request parameters (objects parsed) */
  payload: Record<string, unknown>
  signed: boolean
  /** the verified chain's leaf, for x509_san_dns and x509_hash */
  certificate: { subject: string; dns: string[]; anchor: string } | undefined
  /** HTTP status that carried the request object (0 when it came by value) */
  status: number
  dcqlQuery: DcqlQuery
  responseMode: ResponseModeV1
  responseUri: string
  nonce: string
  state: string | undefined
  /** `exp` of the request object, ms */
  expiresAt: number | undefined
  /** direct_post.jwt: the verifier key and algorithms the response is encrypted with (§8.3) */
  encryption: ResponseEncryption | undefined
}

export interface ResolveContext {
  /** the wallet's HTTP client and limits (deadline, body cap, no redirects) */
  http: WalletHttp
  trustAnchors: readonly string[]
  now: number
  /** 'expired-session': the request object's exp is not checked */
  allowExpired: boolean
  /** the holder's signing algorithm (kb-jwt_alg_values of wallet_metadata) */
  holderAlg: JwsAlg
  /** whether this wallet already answered a request with this nonce (OpenID4VP 1.0 §14.1); default never */
  answeredNonce?: (nonce: string) => Promise<boolean>
  /**
   * The careless wallet (WalletOptions.trustEverything): no signature, client_id, nonce, expiry, origin or
   * prefix check; an unknown prefix is taken for decentralized_identifier. Test-only.
   */
  trustEverything?: boolean
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** A refusal of the request (step `request`): nothing is sent. */
export function refuse(
  status: number,
  error: string,
  description: string,
  body?: unknown,
): WalletProtocolError {
  return new WalletProtocolError({ step: 'request', status, error, errorDescription: description, body })
}

/**
 * Whether a link is an OpenID4VP 1.0 request: its client_id carries a client identifier prefix (1.0 §5.9.1:
 * whatever precedes the first `:` — one this wallet does not know included, which resolveRequestV1 then
 * refuses rather than taking it for a draft-20 client_id), or it carries the request parameters themselves
 * (the unsigned `redirect_uri:` form). A bare DID client_id (`did:…`), or none, is the draft-20
 * Presentation Exchange profile (presentation.ts).
 */
export function isV1Link(parsed: ParsedPresentationLink): boolean {
  if (parsed.byValue) return true
  if (parsed.clientId === undefined) return false
  const { kind } = parseClientId(parsed.clientId)
  return kind === 'known' || kind === 'unknown'
}

/**
 * What the wallet tells a verifier in a request_uri POST (§5.10, §10.1): the formats and algorithms it
 * answers with, the prefixes it verifies, the response modes and encryption it speaks.
 * `request_object_signing_alg_values_supported` is left out where the prefix forbids signing (§5.10).
 */
export function walletMetadata(holderAlg: JwsAlg, prefix: string): Record<string, unknown> {
  return {
    vp_formats_supported: {
      ...Object.assign(
        {},
        ...FORMATS.map((f) => f.vpFormatsSupported({ credential: JWS_ALGS, holder: [holderAlg] })),
      ),
      // B.1.3.2.3: the proof types this holder's key signs an ldp_vp with (the format lists every one it reads)
      ldp_vc: ldpVcSupported(holderAlg),
    },
    client_id_prefixes_supported: [...SUPPORTED_CLIENT_ID_PREFIXES],
    ...(requestsAreSigned(prefix) && { request_object_signing_alg_values_supported: [...JWS_ALGS] }),
    response_types_supported: ['vp_token'],
    response_modes_supported: ['direct_post', 'direct_post.jwt'],
    authorization_encryption_alg_values_supported: [RESPONSE_ENCRYPTION_ALG],
    authorization_encryption_enc_values_supported: [...SUPPORTED_ENC],
  }
}

/** The key type behind each holder algorithm. */
const HOLDER_KEY_TYPE: Readonly<Record<JwsAlg, LdKeyType>> = {
  EdDSA: 'Ed25519',
  ES256: 'P-256',
  ES256K: 'secp256k1',
}

/** `vp_formats_supported.ldp_vc` of a holder: its proof types, Data Integrity ones as their cryptosuites. */
function ldpVcSupported(holderAlg: JwsAlg): { proof_type_values: string[]; cryptosuite_values: string[] } {
  const types = proofTypesFor(HOLDER_KEY_TYPE[holderAlg])
  const suites = types.filter((t) => t.includes('-'))
  return {
    proof_type_values: [
      ...types.filter((t) => !t.includes('-')),
      ...(suites.length > 0 ? ['DataIntegrityProof'] : []),
    ],
    cryptosuite_values: suites,
  }
}

/** GET or POST request_uri (§5.10): the request object text, or what the verifier answered as an error. */
async function fetchRequestObject(
  requestUri: string,
  method: 'get' | 'post',
  form: Record<string, string> | undefined,
  http: WalletHttp,
): Promise<{ text: string; status: number }> {
  let answer: HttpAnswer
  try {
    answer = await httpRequest(
      requestUri,
      method === 'post'
        ? { method: 'POST', form: form ?? {}, accept: REQUEST_OBJECT_MEDIA_TYPE }
        : { method: 'GET', accept: `${REQUEST_OBJECT_MEDIA_TYPE}, ${JWT_MEDIA_TYPE}` },
      http,
    )
  } catch (error) {
    // §5.10.2: any HTTP error ends the process; a redirect is treated as one (§14.8, HTTP Redirects), and so
    // are the wallet's deadline and body cap (http.ts): nothing of a request object past them is read
    throw transportError('request', requestUri, error)
  }
  if (answer.status < 200 || answer.status >= 300) throw protocolError('request', answer.status, answer.body)
  const contentType = answer.headers['content-type'] ?? ''
  if (!contentType.toLowerCase().startsWith(REQUEST_OBJECT_MEDIA_TYPE)) {
    throw refuse(
      answer.status,
      'invalid_request_object',
      `content type ${contentType || '(none)'} is not ${REQUEST_OBJECT_MEDIA_TYPE} (OpenID4VP 1.0 §5.10.1, RFC 9101 §10.2)`,
      answer.body,
    )
  }
  return { text: answer.text.trim(), status: answer.status }
}

/** URL parameters → request parameters: the object-valued ones are JSON text (1.0 §5.1). */
function parametersByValue(params: Record<string, string>, status: number): Record<string, unknown> {
  const payload: Record<string, unknown> = { ...params }
  for (const name of JSON_PARAMETERS) {
    const text = params[name]
    if (text === undefined) continue
    try {
      payload[name] = JSON.parse(text)
    } catch {
      throw refuse(status, 'invalid_request', `${name} is not JSON text (OpenID4VP 1.0 §5.1)`)
    }
  }
  return payload
}

/**
 * §8.3: the verifier's encryption key (use enc or absent, alg ECDH-ES) and the content encryption, for
 * direct_post.jwt and the Digital Credentials API's dc_api.jwt alike.
 */
export function responseEncryption(
  metadata: unknown,
  status: number,
  mode: 'direct_post.jwt' | 'dc_api.jwt' = 'direct_post.jwt',
): ResponseEncryption {
  const rule = `${mode} (OpenID4VP 1.0 §8.3)`
  const keys = isObject(metadata) && isObject(metadata.jwks) ? metadata.jwks.keys : undefined
  if (!Array.isArray(keys)) {
    throw refuse(
      status,
      'invalid_request',
      `${rule}: client_metadata.jwks has no keys to encrypt the response to`,
    )
  }
  const jwk = keys.find(
    (k): k is ResponseEncryption['jwk'] =>
      isObject(k) && (k.use === undefined || k.use === 'enc') && k.alg === RESPONSE_ENCRYPTION_ALG,
  )
  if (!jwk) {
    throw refuse(
      status,
      'invalid_request',
      `${rule}: client_metadata.jwks has no key with alg ${RESPONSE_ENCRYPTION_ALG} for encryption (use "enc" or absent); this wallet encrypts with ${RESPONSE_ENCRYPTION_ALG} only`,
    )
  }
  const offered = isObject(metadata) ? metadata.encrypted_response_enc_values_supported : undefined
  let enc: ResponseEncryption['enc'] | undefined
  if (offered === undefined) enc = DEFAULT_ENC
  else if (Array.isArray(offered)) {
    enc = offered.find((e): e is ResponseEncryption['enc'] =>
      (SUPPORTED_ENC as readonly unknown[]).includes(e),
    )
  }
  if (!enc) {
    throw refuse(
      status,
      'invalid_request',
      `${rule}: none of encrypted_response_enc_values_supported ${JSON.stringify(offered)} is one this wallet can use (${SUPPORTED_ENC.join(', ')})`,
    )
  }
  return { jwk, alg: RESPONSE_ENCRYPTION_ALG, enc, kid: typeof jwk.kid === 'string' ? jwk.kid : undefined }
}

/** The checks of the request parameters every prefix shares (1.0 §5.1, §5.10.1, §6, §8.2, §8.3). */
function checkParameters(
  payload: Record<string, unknown>,
  opts: {
    status: number
    walletNonce: string | undefined
    now: number
    allowExpired: boolean
    /** the careless wallet: no wallet_nonce, nonce or exp check */
    careless?: boolean
  },
): { dcqlQuery: DcqlQuery; responseMode: ResponseModeV1; responseUri: string; nonce: string } {
  const fail = (error: string, description: string) => refuse(opts.status, error, description, payload)
  const careless = opts.careless === true
  if (opts.walletNonce !== undefined && payload.wallet_nonce !== opts.walletNonce && !careless) {
    throw fail(
      'invalid_request',
      `wallet_nonce (OpenID4VP 1.0 §5.10.1): the request object must echo the wallet_nonce the wallet posted (${opts.walletNonce}); it carries ${JSON.stringify(payload.wallet_nonce)}`,
    )
  }
  return checkRequestParameters(payload, { ...opts, checkExpiry: true }, () => {
    const mode = payload.response_mode
    if (mode !== 'direct_post' && mode !== 'direct_post.jwt') {
      throw fail(
        'invalid_request',
        `response_mode ${JSON.stringify(mode)} is not one this wallet answers (direct_post, OpenID4VP 1.0 §8.2; direct_post.jwt, §8.3.1)`,
      )
    }
    if (payload.redirect_uri !== undefined) {
      throw fail(
        'invalid_request',
        `redirect_uri must not be present with response_mode ${mode} (OpenID4VP 1.0 §8.2)`,
      )
    }
    const responseUri = payload.response_uri
    if (typeof responseUri !== 'string' || !/^https?:\/\//.test(responseUri)) {
      throw fail(
        'invalid_request',
        `response_uri ${JSON.stringify(responseUri)} is not an http(s) URL (OpenID4VP 1.0 §8.2)`,
      )
    }
    if (payload.state !== undefined && typeof payload.state !== 'string') {
      throw fail('invalid_request', 'state is not a string')
    }
    return { responseMode: mode as ResponseModeV1, responseUri }
  })
}

/**
 * The request parameters every OpenID4VP 1.0 request shares, whatever carried it and however it is answered
 * (§5.1, §5.2, §6, RFC 9101 §6.3): response_type vp_token, then `transport` (the response mode and where the
 * answer goes: §8.2 / §8.3 for a link, Appendix A.2 over the Digital Credentials API), a nonce, a valid
 * dcql_query (no presentation_definition, scope or transaction_data), `exp` not passed when `checkExpiry`.
 * Throws the WalletProtocolError of step `request` naming the rule.
 */
export function checkRequestParameters<T extends object>(
  payload: Record<string, unknown>,
  opts: {
    status: number
    now: number
    allowExpired: boolean
    /** a request object's `exp` (RFC 9101 §6.3); parameters that came unsigned have none to judge */
    checkExpiry: boolean
    /** the careless wallet: no nonce or exp check */
    careless?: boolean
  },
  transport: () => T,
): { dcqlQuery: DcqlQuery; nonce: string } & T {
  const fail = (error: string, description: string) => refuse(opts.status, error, description, payload)
  const careless = opts.careless === true
  if (payload.response_type !== 'vp_token') {
    throw fail(
      'unsupported_response_type',
      `response_type ${JSON.stringify(payload.response_type)} is not vp_token (OpenID4VP 1.0 §5.6; this wallet signs no ID Token)`,
    )
  }
  const transported = transport()
  if ((typeof payload.nonce !== 'string' || payload.nonce.length === 0) && !careless) {
    throw fail(
      'invalid_request',
      'the request has no nonce (OpenID4VP 1.0 §5.2: nonce is REQUIRED; without it a presentation can be replayed). Nothing was sent.',
    )
  }
  if (payload.presentation_definition !== undefined || payload.presentation_definition_uri !== undefined) {
    throw fail(
      'invalid_request',
      'presentation_definition is not an OpenID4VP 1.0 parameter (§5.1 asks with dcql_query); this wallet answers Presentation Exchange only to a bare DID client_id (draft 20)',
    )
  }
  if (payload.transaction_data !== undefined) {
    // §5.1: a wallet that does not support transaction_data MUST reject the request
    throw fail(
      'invalid_transaction_data',
      'transaction_data is not supported by this wallet (OpenID4VP 1.0 §5.1, §8.4)',
    )
  }
  if (payload.dcql_query === undefined) {
    throw fail(
      'invalid_request',
      payload.scope !== undefined
        ? `scope ${JSON.stringify(payload.scope)} stands for no DCQL query this wallet knows (OpenID4VP 1.0 §5.5); send a dcql_query`
        : 'the request has no dcql_query (OpenID4VP 1.0 §5.1)',
    )
  }
  if (payload.scope !== undefined) {
    throw fail('invalid_request', 'dcql_query and scope must not both be present (OpenID4VP 1.0 §5.1)')
  }
  let dcqlQuery: DcqlQuery
  try {
    const raw = typeof payload.dcql_query === 'string' ? JSON.parse(payload.dcql_query) : payload.dcql_query
    dcqlQuery = DcqlQuery.parse(raw)
    DcqlQuery.validate(dcqlQuery)
  } catch (error) {
    const reason = error instanceof DcqlError || error instanceof SyntaxError ? error.message : message(error)
    throw fail('invalid_request', `dcql_query is not a valid DCQL query (OpenID4VP 1.0 §6): ${reason}`)
  }
  if (opts.checkExpiry && payload.exp !== undefined && !careless) {
    if (typeof payload.exp !== 'number') throw fail('invalid_request_object', 'exp is not a number')
    if (!opts.allowExpired && payload.exp * 1000 <= opts.now) {
      throw fail(
        'invalid_request_object',
        `the request object expired at ${new Date(payload.exp * 1000).toISOString()} (wallet clock ${new Date(opts.now).toISOString()}; exp, RFC 7519 §4.1.4, RFC 9101 §6.3). Nothing was sent.`,
      )
    }
  }
  if (payload.client_metadata !== undefined && !isObject(payload.client_metadata)) {
    throw fail('invalid_request', 'client_metadata is not a JSON object (OpenID4VP 1.0 §5.1)')
  }
  return {
    ...transported,
    dcqlQuery,
    nonce: typeof payload.nonce === 'string' ? payload.nonce : '',
  }
}

/**
 * Resolves a 1.0 link: fetches (or takes) the request, verifies it per its client identifier prefix and checks
 * its parameters. Throws a WalletProtocolError of step `request` naming the broken rule.
 */
export async function resolveRequestV1(
  parsed: ParsedPresentationLink,
  ctx: ResolveContext,
): Promise<ResolvedRequestV1> {
  const linkClientId = parsed.clientId
  if (linkClientId === undefined) {
    throw refuse(
      0,
      'invalid_request',
      'the authorization request link has no client_id (OpenID4VP 1.0 §5.10.1, RFC 9101 §5)',
    )
  }
  const careless = ctx.trustEverything === true
  const parsedId = parseClientId(linkClientId)
  let split: { prefix: KnownClientIdPrefix; identifier: string } | undefined =
    parsedId.kind === 'known' ? parsedId : undefined
  if (!split && careless) {
    // the careless wallet takes any `<prefix>:<rest>` for a DID client identifier
    const colon = linkClientId.indexOf(':')
    split = {
      prefix: 'decentralized_identifier',
      identifier: linkClientId.startsWith('did:') || colon < 0 ? linkClientId : linkClientId.slice(colon + 1),
    }
  }
  const rule = split && walletRule(split.prefix)
  if (!split || !rule) {
    const unknown = /^([^:]+):/.exec(linkClientId)?.[1]
    const refusal = split && refusalOf(split.prefix)
    const named = split
      ? `prefix ${split.prefix}`
      : unknown
        ? `the unknown client identifier prefix ${unknown} (OpenID4VP 1.0 §5.9.1: a prefix the wallet does not support is refused, not taken for another client identifier scheme)`
        : 'no client identifier prefix this wallet recognises'
    throw refuse(
      0,
      'invalid_request',
      `client_id ${linkClientId} has ${named}; this wallet verifies ${SUPPORTED_CLIENT_ID_PREFIXES.join(', ')} (OpenID4VP 1.0 §5.9.3)${refusal ? `, and ${refusal}` : ''}. Nothing was sent.`,
    )
  }
  const prefix = split.prefix as ClientIdPrefix

  let requestObject: string | undefined
  let status = 0
  let requestUriMethod: ResolvedRequestV1['requestUriMethod']
  let walletNonce: string | undefined
  if (parsed.requestUri !== undefined) {
    const method = parsed.requestUriMethod ?? 'get'
    if (method !== 'get' && method !== 'post') {
      throw refuse(
        0,
        'invalid_request_uri_method',
        `request_uri_method ${JSON.stringify(method)} is neither get nor post (OpenID4VP 1.0 §5.1, case-sensitive)`,
      )
    }
    requestUriMethod = method
    let form: Record<string, string> | undefined
    if (method === 'post') {
      walletNonce = randomBytes(16).toString('base64url')
      form = {
        wallet_metadata: JSON.stringify(walletMetadata(ctx.holderAlg, prefix)),
        wallet_nonce: walletNonce,
      }
    }
    const fetched = await fetchRequestObject(parsed.requestUri, method, form, ctx.http)
    requestObject = fetched.text
    status = fetched.status
  } else if (parsed.request !== undefined) {
    requestObject = parsed.request
  }

  let payload: Record<string, unknown>
  let header: Record<string, unknown> | undefined
  let signed = false
  if (requestObject !== undefined) {
    if (requestObject.split('.').length === 5) {
      throw refuse(
        status,
        'invalid_request_object',
        'the request object is encrypted (a JWE); this wallet asks for none and decrypts none',
      )
    }
    try {
      ;({ header, payload } = decodeJws(requestObject))
    } catch (error) {
      // an unsigned (alg none) object has an empty signature, which decodeJws accepts; anything else is garbage
      throw refuse(
        status,
        'invalid_request_object',
        `the request object is not a compact JWS: ${message(error)}`,
        requestObject,
      )
    }
    // §5: "Wallets MUST NOT process Request Objects where the typ Header Parameter is not present or does
    // not have the value oauth-authz-req+jwt"
    if (header.typ !== REQUEST_OBJECT_TYP && !careless) {
      throw refuse(
        status,
        'invalid_request_object',
        `header typ ${JSON.stringify(header.typ)} is not ${REQUEST_OBJECT_TYP} (OpenID4VP 1.0 §5)`,
      )
    }
    signed = header.alg !== 'none'
    // §5.10.1: "The Client Identifier value in the client_id Authorization Request parameter and the Request
    // Object client_id claim value MUST be identical, including the Client Identifier Prefix."
    if (payload.client_id !== linkClientId && !careless) {
      throw refuse(
        status,
        'invalid_request',
        `client_id of the link (${linkClientId}) and of the request object (${String(payload.client_id)}) must be identical, prefix included (OpenID4VP 1.0 §5.10.1)`,
      )
    }
  } else {
    payload = parametersByValue(parsed.params, status)
  }

  let certificate: ResolvedRequestV1['certificate']
  if (careless) {
    // nothing verified: whatever signed it, wherever the answer goes
    payload.response_uri ??= rule.respondsTo?.(split.identifier)
  } else {
    // the prefix's rule (src/shared/client-id-prefix.ts): its key and identifier, or why it may not be signed
    try {
      certificate = await checkClientRequest(
        {
          prefix,
          identifier: split.identifier,
          signed,
          compact: requestObject,
          header: header ?? {},
          payload,
          requestUri: parsed.requestUri,
        },
        { trustAnchors: ctx.trustAnchors, now: ctx.now },
      )
    } catch (error) {
      if (error instanceof ClientIdPrefixError) throw refuse(status, error.error, error.message)
      throw error
    }
  }
  const checked = checkParameters(payload, {
    status,
    walletNonce,
    now: ctx.now,
    allowExpired: ctx.allowExpired,
    careless,
  })
  if (!careless && (await ctx.answeredNonce?.(checked.nonce)))
    throw replayedNonce(status, checked.nonce, 'invalid_request')
  return {
    clientId: linkClientId,
    prefix,
    identifier: split.identifier,
    requestUri: parsed.requestUri,
    requestUriMethod,
    walletNonce,
    requestObject,
    header,
    payload,
    signed,
    certificate,
    status,
    ...checked,
    state: typeof payload.state === 'string' ? payload.state : undefined,
    expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : undefined,
    encryption:
      checked.responseMode === 'direct_post.jwt'
        ? responseEncryption(payload.client_metadata, status)
        : undefined,
  }
}
