// OpenID4VP 1.0 over the W3C Digital Credentials API (Appendix A), answered as a platform wallet answers it:
// the platform hands the wallet one entry of `navigator.credentials.get({digital: {requests}})` — `{protocol,
// data}` — and the caller's origin as the browser authenticated it; the wallet answers a DigitalCredential's
// `{protocol, data}`. Nothing is fetched and nothing is posted: the answer is returned to the caller.
//
//   openid4vp-v1-unsigned     the parameters are `data` (A.3.1); client_id and expected_origins are ignored
//                             (A.2); the client is `origin:<origin>`
//   openid4vp-v1-signed       `data.request` is a compact JWS request object (A.3.1) verified per its
//                             client_id prefix (src/shared/client-id-prefix.ts, with the origin: x509_san_dns
//                             holds the origin's host to the certified name); expected_origins REQUIRED and
//                             holding the origin by plain string comparison (A.2)
//   openid4vp-v1-multisigned  `data.request` is a JWS JSON Serialization (A.3.2): client_id in each signature's
//                             protected header, never in the payload; accepted when at least one signature of
//                             a prefix this wallet verifies verifies; every signature's outcome is reported
//
// The rest is the 1.0 answer of a link (presentation-v1.ts buildDcqlAnswer: selection, presenters, the
// misbehaviours aimed at them; presentation-v1-request.ts: the shared parameter checks and the response
// encryption), bound to the origin instead of the client_id (A.4: `origin:<origin>` as KB-JWT / JWT VP aud and
// ldp_vp domain, even for signed requests; B.2.6.2: an mdoc's OpenID4VPDCAPIHandover), returned as `{vp_token}`
// (dc_api) or `{response: <JWE>}` (dc_api.jwt, the JWE of direct_post.jwt). A refusal is a WalletProtocolError
// of step `request` (status 0: nothing went over HTTP); dcApiErrorResponse turns it into the error answer a
// platform hands back (A.4), as the CLI and a browser test's credential provider do.

import type { DcqlQuery } from 'dcql'
import {
  ClientIdPrefixError,
  checkClientRequest,
  parseClientId,
  refusalOf,
  type VerifiedCertificate,
  walletRule,
} from '../shared/client-id-prefix.ts'
import {
  DC_API_PROTOCOLS,
  DC_API_REQUEST_PARAMETERS,
  DC_API_RESPONSE_MODES,
  type DcApiProtocol,
  type DcApiRequest,
  type DcApiRequestType,
  type DcApiResponse,
  type DcApiResponseMode,
  GeneralJwsError,
  originAudience,
  originProblem,
  PER_SIGNATURE_PARAMETERS,
  requestTypeOf,
  splitGeneralJws,
} from '../shared/dc-api.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws } from '../shared/jws.ts'
import { REQUEST_OBJECT_TYP } from '../shared/wire.ts'
import { replayedNonce, WalletProtocolError, WalletUsageError } from './errors.ts'
import { assertPresentationMisbehaviours, type PresentationMisbehaviour } from './misbehaviour.ts'
import { ACCESS_DENIED_DESCRIPTION, type PresentationContext, type PresentStep } from './presentation.ts'
import { type AnswerBinding, thumbprintOf } from './presentation-binding.ts'
import { buildDcqlAnswer, checkAnswerMisbehaviours } from './presentation-v1.ts'
import {
  type ClientIdPrefix,
  checkRequestParameters,
  type ResponseEncryption,
  refuse,
  responseEncryption,
  SUPPORTED_CLIENT_ID_PREFIXES,
} from './presentation-v1-request.ts'
import {
  encryptResponse,
  type JweHeader,
  responsePayload,
  type VpTokenV1,
} from './presentation-v1-response.ts'
import { tamperOf } from './tamper.ts'

/** What the platform hands the wallet: the request (one entry, or the whole `{digital: {requests}}`) and the origin. */
export interface DcApiInput {
  /**
   * One entry of `navigator.credentials.get({digital: {requests: [...]}})` (`{protocol, data}`), the whole
   * `{digital: {requests}}` (or `{requests}`, or the array): the first entry of a protocol this wallet speaks
   */
  request: unknown
  /** the caller's origin as the platform authenticated it (`https://verifier.example`, no path, no `/`) */
  origin: string
}

/** The prefixes a signed request over the DC API may use: all this wallet verifies but redirect_uri (A.3). */
export const DC_API_CLIENT_ID_PREFIXES: readonly ClientIdPrefix[] = SUPPORTED_CLIENT_ID_PREFIXES.filter(
  (prefix) => prefix !== 'redirect_uri',
)

/** One signature of a signed or multi-signed request, and what the wallet made of it. */
export interface DcApiSignatureOutcome {
  /** its index in `signatures` (0 for a compact JWS) */
  index: number
  /** the client_id its protected header (multisigned) or the payload (signed) names; undefined: none */
  clientId: string | undefined
  /** the client identifier prefix of that client_id, when it has a known one */
  prefix: string | undefined
  /** whether this wallet verifies requests under that prefix over the DC API */
  supported: boolean
  /** the signature verified under its prefix's rule (the careless wallet checks none: false) */
  verified: boolean
  /** why it did not verify (or was not checked) */
  reason?: string
  /** the error code a refusal for it carries (invalid_request, invalid_request_object) */
  error?: string
  /** x509_san_dns / x509_hash: the verified leaf certificate */
  certificate?: VerifiedCertificate
}

/** A DC API request, resolved and checked before anything is answered. */
export interface ResolvedDcApiRequest {
  protocol: DcApiProtocol
  requestType: DcApiRequestType
  origin: string
  /** the effective client: `origin:<origin>` (unsigned), the client_id (signed; multisigned: of the first verified signature) */
  clientId: string
  /** its prefix: `origin` for an unsigned request */
  prefix: ClientIdPrefix | 'origin'
  signed: boolean
  /** the request parameters (a signed request's payload) */
  payload: Record<string, unknown>
  /** a compact request object's protected header */
  header?: Record<string, unknown>
  /** signed and multisigned: every signature's outcome */
  signatures?: DcApiSignatureOutcome[]
  /** the verified leaf (x509 prefixes) of the signature the client is named by */
  certificate?: VerifiedCertificate
  /** the request's expected_origins (A.2), as sent; ignored in an unsigned request */
  expectedOrigins: unknown
  /** parameters present but ignored: client_id and expected_origins of an unsigned request, any unknown one (A.2) */
  ignoredParameters: string[]
  dcqlQuery: DcqlQuery
  nonce: string
  responseMode: DcApiResponseMode
  /** dc_api.jwt: the verifier key and algorithms the response is encrypted with (§8.3) */
  encryption: ResponseEncryption | undefined
  /** `exp` of a signed request, ms */
  expiresAt: number | undefined
}

export interface ResolveDcApiContext {
  trustAnchors: readonly string[]
  /** the wallet's clock, ms */
  now: number
  /** 'expired-session': a signed request's exp is not checked */
  allowExpired?: boolean
  /** whether this wallet already answered a request with this nonce (§14.1); default never */
  answeredNonce?: (nonce: string) => Promise<boolean>
  /** the careless wallet: no signature, typ, prefix, expected_origins, nonce or expiry check */
  trustEverything?: boolean
  /** 'dc-api-ignore-expected-origins': a signed request whose expected_origins lack the origin is answered */
  ignoreExpectedOrigins?: boolean
}

const RULE = 'OpenID4VP 1.0 Appendix A'
const JWT_CLAIMS = new Set(['iss', 'aud', 'iat', 'exp', 'nbf', 'jti'])

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

const fail = (error: string, description: string, body?: unknown) => refuse(0, error, description, body)

/** `{digital: {requests}}`, `{requests}`, an array, or one entry: the entries, in order. */
function entriesOf(request: unknown): unknown[] {
  if (Array.isArray(request)) return request
  if (isObject(request) && isObject(request.digital) && Array.isArray(request.digital.requests)) {
    return request.digital.requests
  }
  if (isObject(request) && Array.isArray(request.requests)) return request.requests
  return [request]
}

/**
 * The entry this wallet answers: the first whose protocol is one of Appendix A.1's (WalletUsageError when none
 * is: a platform would not have offered this wallet). `data` given as JSON text is parsed.
 */
export function pickDcApiRequest(request: unknown): DcApiRequest {
  const entries = entriesOf(request)
  const entry = entries.find((e) => isObject(e) && requestTypeOf(e.protocol) !== undefined)
  if (!isObject(entry)) {
    const named = entries.map((e) => (isObject(e) ? JSON.stringify(e.protocol) : typeof e)).join(', ')
    throw new WalletUsageError(
      `no request of a protocol this wallet speaks over the Digital Credentials API (${Object.values(DC_API_PROTOCOLS).join(', ')}; OpenID4VP 1.0 Appendix A.1): ${entries.length === 0 ? 'no request at all' : `the request${entries.length === 1 ? ' is' : 's are'} of ${named}`}`,
    )
  }
  let data = entry.data
  if (typeof data === 'string') {
    try {
      data = JSON.parse(data)
    } catch {
      throw fail(
        'invalid_request',
        `the ${String(entry.protocol)} request's data is neither an object nor JSON text`,
      )
    }
  }
  if (!isObject(data)) {
    throw fail('invalid_request', `the ${String(entry.protocol)} request's data is not an object (${RULE}.3)`)
  }
  return { protocol: entry.protocol as DcApiProtocol, data }
}

/**
 * The client identifier prefix of a signed request's client_id, or why this wallet cannot verify it over the
 * DC API: an unknown prefix, one it does not verify, redirect_uri (its requests are unsigned and there is no
 * redirect over the DC API), origin (reserved, §5.9.3: "The Wallet MUST NOT accept").
 */
function prefixOf(
  clientId: string,
): { prefix: ClientIdPrefix; identifier: string } | { prefix: string | undefined; refusal: string } {
  const parsed = parseClientId(clientId)
  const verified = `this wallet verifies ${DC_API_CLIENT_ID_PREFIXES.join(', ')} over the Digital Credentials API (OpenID4VP 1.0 §5.9.3, Appendix A.3)`
  if (parsed.kind !== 'known') {
    return {
      prefix: parsed.prefix,
      refusal: `client_id ${clientId} has ${parsed.kind === 'unknown' ? `the unknown client identifier prefix ${parsed.prefix}` : 'no client identifier prefix this wallet recognises'}; ${verified}`,
    }
  }
  if (parsed.prefix === 'redirect_uri') {
    return {
      prefix: parsed.prefix,
      refusal: `client_id ${clientId}: the redirect_uri prefix cannot be used over the Digital Credentials API (its requests cannot be signed, and nothing is redirected: ${RULE}.3); ${verified}`,
    }
  }
  if (parsed.prefix === 'origin') {
    return {
      prefix: parsed.prefix,
      refusal: `client_id ${clientId}: the origin prefix is reserved for the audience of a DC API answer and MUST NOT be accepted in requests (OpenID4VP 1.0 §5.9.3)`,
    }
  }
  if (!walletRule(parsed.prefix)) {
    const refusal = refusalOf(parsed.prefix)
    return {
      prefix: parsed.prefix,
      refusal: `client_id ${clientId} has prefix ${parsed.prefix}; ${verified}${refusal ? `, and ${refusal}` : ''}`,
    }
  }
  return { prefix: parsed.prefix as ClientIdPrefix, identifier: parsed.identifier }
}

/** A request object's `typ` and `alg` (§5: typ oauth-authz-req+jwt; a signed request is signed). */
function headerProblem(header: Record<string, unknown>): string | undefined {
  if (header.typ !== REQUEST_OBJECT_TYP)
    return `header typ ${JSON.stringify(header.typ)} is not ${REQUEST_OBJECT_TYP} (OpenID4VP 1.0 §5)`
  if (header.alg === undefined || header.alg === 'none')
    return `header alg ${JSON.stringify(header.alg)}: a signed request is signed (${RULE}.3)`
  return undefined
}

/** One signature under its prefix's rule, as an outcome (never throws for a signature that fails). */
async function verifySignature(
  index: number,
  clientId: unknown,
  compact: string,
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  origin: string,
  ctx: ResolveDcApiContext,
): Promise<DcApiSignatureOutcome> {
  if (typeof clientId !== 'string' || clientId.length === 0) {
    return {
      index,
      clientId: undefined,
      prefix: undefined,
      supported: false,
      verified: false,
      reason: 'no client_id names the client this signature speaks for',
    }
  }
  const split = prefixOf(clientId)
  if ('refusal' in split) {
    return {
      index,
      clientId,
      prefix: split.prefix,
      supported: false,
      verified: false,
      reason: split.refusal,
      error: 'invalid_request',
    }
  }
  const problem = headerProblem(header)
  if (problem)
    return {
      index,
      clientId,
      prefix: split.prefix,
      supported: true,
      verified: false,
      reason: problem,
      error: 'invalid_request_object',
    }
  try {
    const certificate = await checkClientRequest(
      {
        prefix: split.prefix,
        identifier: split.identifier,
        signed: true,
        compact,
        header,
        payload,
        requestUri: undefined,
        origin,
      },
      { trustAnchors: ctx.trustAnchors, now: ctx.now },
    )
    return {
      index,
      clientId,
      prefix: split.prefix,
      supported: true,
      verified: true,
      ...(certificate && { certificate }),
    }
  } catch (error) {
    if (!(error instanceof ClientIdPrefixError)) throw error
    return {
      index,
      clientId,
      prefix: split.prefix,
      supported: true,
      verified: false,
      reason: error.message,
      error: error.error,
    }
  }
}

/** A.2: expected_origins of a signed request, a non-empty array of strings that holds the origin as written. */
function checkExpectedOrigins(
  payload: Record<string, unknown>,
  origin: string,
  ctx: ResolveDcApiContext,
): void {
  const expected = payload.expected_origins
  const holds =
    Array.isArray(expected) && expected.length > 0 && expected.every((o) => typeof o === 'string')
      ? expected.includes(origin)
      : undefined
  if (ctx.ignoreExpectedOrigins) {
    if (holds === true) {
      throw new WalletUsageError(
        `'dc-api-ignore-expected-origins' answers a signed request whose expected_origins lack the origin; this one's ${JSON.stringify(expected)} hold ${origin}: there is nothing to ignore`,
      )
    }
    return
  }
  if (ctx.trustEverything) return
  if (holds === undefined) {
    throw fail(
      'invalid_request',
      `expected_origins (${RULE}.2): a signed request must carry a non-empty array of origins (to detect its replay by another verifier); it carries ${JSON.stringify(expected)}. Nothing was answered.`,
    )
  }
  if (!holds) {
    throw fail(
      'invalid_request',
      `expected_origins (${RULE}.2): the calling origin ${origin} is not one of ${JSON.stringify(expected)} (compared as plain strings): the request was made for another verifier's page, or replayed from it. Nothing was answered.`,
    )
  }
}

/** Members of `params` that Appendix A.2 does not define (and which the wallet therefore ignores). */
function unknownParameters(params: Record<string, unknown>, signed: boolean): string[] {
  const known = new Set<string>(DC_API_REQUEST_PARAMETERS)
  return Object.keys(params).filter((k) => !known.has(k) && !(signed && JWT_CLAIMS.has(k)))
}

/**
 * Resolves a DC API request (the entry of a protocol the wallet speaks) for `origin`: its parameters, the
 * client it authenticates (per prefix, signed and multisigned), expected_origins, and the parameters every
 * 1.0 request shares with response_mode dc_api or dc_api.jwt. Throws a WalletProtocolError of step
 * `request` naming the broken rule; a WalletUsageError for what the caller got wrong (no request of these
 * protocols, an origin that is no origin).
 */
export async function resolveDcApiRequest(
  input: DcApiInput,
  ctx: ResolveDcApiContext,
): Promise<ResolvedDcApiRequest> {
  const { origin } = input
  const wrongOrigin = originProblem(origin)
  if (wrongOrigin !== undefined) {
    throw new WalletUsageError(`the origin the platform hands over: ${wrongOrigin} (${RULE}.2)`)
  }
  const { protocol, data } = pickDcApiRequest(input.request)
  const requestType = requestTypeOf(protocol) as DcApiRequestType
  const careless = ctx.trustEverything === true
  if (ctx.ignoreExpectedOrigins && requestType === 'unsigned') {
    throw new WalletUsageError(
      `'dc-api-ignore-expected-origins' answers a signed request whose expected_origins lack the origin; this request is ${protocol}, whose expected_origins the wallet ignores anyway (${RULE}.2)`,
    )
  }

  let payload: Record<string, unknown>
  let header: Record<string, unknown> | undefined
  let clientId: string
  let prefix: ResolvedDcApiRequest['prefix'] = 'origin'
  let signatures: DcApiSignatureOutcome[] | undefined
  let certificate: VerifiedCertificate | undefined
  let ignoredParameters: string[]

  if (requestType === 'unsigned') {
    if (data.request !== undefined) {
      throw fail(
        'invalid_request',
        `an ${protocol} request carries its parameters as data (${RULE}.3.1), not a request object: a signed request is ${DC_API_PROTOCOLS.signed} (or ${DC_API_PROTOCOLS.multisigned})`,
      )
    }
    // A.2: client_id "MUST be omitted" and expected_origins "not for use" in an unsigned request: ignored
    payload = { ...data }
    ignoredParameters = [
      ...['client_id', 'expected_origins'].filter((k) => payload[k] !== undefined),
      ...unknownParameters(payload, false),
    ]
    delete payload.client_id
    delete payload.expected_origins
    clientId = originAudience(origin)
  } else if (requestType === 'signed') {
    const compact = data.request
    if (typeof compact !== 'string') {
      throw fail(
        'invalid_request',
        `an ${protocol} request carries its request object as data.request, a compact JWS (${RULE}.3.1); it has ${compact === undefined ? 'none' : typeof compact}`,
      )
    }
    if (compact.split('.').length === 5) {
      throw fail(
        'invalid_request_object',
        'the request object is encrypted (a JWE); this wallet decrypts none',
      )
    }
    try {
      ;({ header, payload } = decodeJws(compact))
    } catch (error) {
      throw fail(
        'invalid_request_object',
        `the request object is not a compact JWS: ${message(error)}`,
        compact,
      )
    }
    const problem = headerProblem(header)
    if (problem && !careless) throw fail('invalid_request_object', problem)
    if (typeof payload.client_id !== 'string' || payload.client_id.length === 0) {
      throw fail(
        'invalid_request',
        `a signed request names its client: client_id is REQUIRED in its request object (${RULE}.2); it carries ${JSON.stringify(payload.client_id)}`,
      )
    }
    clientId = payload.client_id
    if (!careless) {
      const outcome = await verifySignature(0, clientId, compact, header, payload, origin, ctx)
      signatures = [outcome]
      if (!outcome.verified) {
        throw fail(outcome.error ?? 'invalid_request', `${outcome.reason}. Nothing was answered.`)
      }
      certificate = outcome.certificate
    } else {
      signatures = [
        {
          index: 0,
          clientId,
          prefix: undefined,
          supported: false,
          verified: false,
          reason: 'not checked: the careless wallet',
        },
      ]
    }
    const split = prefixOf(clientId)
    prefix = 'refusal' in split ? 'decentralized_identifier' : split.prefix
    if (payload.request !== undefined && !careless) {
      throw fail('invalid_request', `the request object must not carry a request parameter (${RULE}.3)`)
    }
    checkExpectedOrigins(payload, origin, ctx)
    ignoredParameters = unknownParameters(payload, true)
  } else {
    let split: ReturnType<typeof splitGeneralJws>
    try {
      split = splitGeneralJws(typeof data.request === 'string' ? JSON.parse(data.request) : data.request)
    } catch (error) {
      const reason =
        error instanceof GeneralJwsError || error instanceof SyntaxError ? error.message : message(error)
      throw fail(
        'invalid_request_object',
        `an ${protocol} request carries a JWS JSON Serialization as data.request (${RULE}.3.2, RFC 7515 §7.2.1): ${reason}`,
      )
    }
    payload = split.payload
    // A.3.2: client_id and verifier_info "MUST be present only in the protected header"
    const misplaced = PER_SIGNATURE_PARAMETERS.filter((k) => payload[k] !== undefined)
    if (misplaced.length > 0 && !careless) {
      throw fail(
        'invalid_request',
        `${misplaced.join(' and ')} of a multi-signed request belong in each signature's protected header, not in the payload (${RULE}.3.2)`,
      )
    }
    if (careless) {
      signatures = split.entries.map((e) => ({
        index: e.index,
        clientId: typeof e.header.client_id === 'string' ? e.header.client_id : undefined,
        prefix: undefined,
        supported: false,
        verified: false,
        reason: 'not checked: the careless wallet',
      }))
    } else {
      signatures = []
      for (const entry of split.entries) {
        signatures.push(
          await verifySignature(
            entry.index,
            entry.header.client_id,
            entry.compact,
            entry.header,
            payload,
            origin,
            ctx,
          ),
        )
      }
    }
    const first =
      signatures.find((s) => s.verified) ?? (careless ? signatures.find((s) => s.clientId) : undefined)
    if (!first?.clientId) {
      throw fail(
        signatures.find((s) => s.supported)?.error ?? 'invalid_request',
        `none of the ${signatures.length} signature${signatures.length === 1 ? '' : 's'} of the multi-signed request verifies under a client identifier prefix this wallet verifies (${RULE}.3.2): ${signatures.map((s) => `signatures[${s.index}] (${s.clientId ?? 'no client_id'}): ${s.reason}`).join('; ')}. Nothing was answered.`,
      )
    }
    clientId = first.clientId
    const chosen = prefixOf(clientId)
    prefix = 'refusal' in chosen ? 'decentralized_identifier' : chosen.prefix
    certificate = first.certificate
    if (payload.request !== undefined && !careless) {
      throw fail('invalid_request', `the request object must not carry a request parameter (${RULE}.3)`)
    }
    checkExpectedOrigins(payload, origin, ctx)
    ignoredParameters = unknownParameters(payload, true)
  }

  const signed = requestType !== 'unsigned'
  const checked = checkRequestParameters(
    payload,
    {
      status: 0,
      now: ctx.now,
      allowExpired: ctx.allowExpired === true,
      checkExpiry: signed,
      careless,
    },
    () => {
      const mode = payload.response_mode
      if (!(DC_API_RESPONSE_MODES as readonly unknown[]).includes(mode)) {
        throw fail(
          'invalid_request',
          `response_mode ${JSON.stringify(mode)} is not one of the Digital Credentials API (dc_api, dc_api.jwt: ${RULE}.2): the answer goes back through the API, never to a response_uri`,
          payload,
        )
      }
      return { responseMode: mode as DcApiResponseMode }
    },
  )
  if (!careless && (await ctx.answeredNonce?.(checked.nonce))) {
    throw replayedNonce(0, checked.nonce, 'invalid_request')
  }
  return {
    protocol,
    requestType,
    origin,
    clientId,
    prefix,
    signed,
    payload,
    ...(header && { header }),
    ...(signatures && { signatures }),
    ...(certificate && { certificate }),
    expectedOrigins: payload.expected_origins ?? data.expected_origins,
    ignoredParameters,
    ...checked,
    encryption:
      checked.responseMode === 'dc_api.jwt'
        ? responseEncryption(payload.client_metadata, 0, 'dc_api.jwt')
        : undefined,
    expiresAt: signed && typeof payload.exp === 'number' ? payload.exp * 1000 : undefined,
  }
}

export interface PresentDcApiOptions {
  misbehave?: readonly PresentationMisbehaviour[]
  onStep?: (step: PresentStep, detail?: unknown) => void
  /** the wallet's clock in ms (a signed request's exp, the presentations' iat); default Date.now */
  now?: () => number
  /** error_description of an access_denied answer */
  errorDescription?: string
  /** a query nothing held satisfies: DcqlUnsatisfiedError ('throw', default) or the access_denied answer */
  onUnsatisfied?: 'throw' | 'access-denied'
  /** ldp_vp: the Linked Data proof type to sign with (as PresentOptions.ldProofType) */
  ldProofType?: string
}

/** What the wallet answered over the DC API: the DigitalCredential, and how it came to it. */
export interface DcApiPresentationResult {
  /** 'presented': a vp_token (or its JWE); 'declined': the access_denied error answer */
  status: 'presented' | 'declined'
  /** what the platform hands back to the page: the DigitalCredential's `{protocol, data}` (A.4) */
  response: DcApiResponse
  protocol: DcApiProtocol
  requestType: DcApiRequestType
  origin: string
  /** the effective client: `origin:<origin>` (unsigned), the signed request's (first verified) client_id */
  clientId: string
  prefix: ClientIdPrefix | 'origin'
  signed: boolean
  /** what every presentation was bound to: `origin:<origin>` (A.4) unless a misbehaviour changed it */
  audience: string
  /** the nonce the presentations carry (another one with dc-api-wrong-request) */
  nonce: string
  /** the response mode answered with (dc_api where dc_api.jwt was asked: plain-response) */
  responseMode: DcApiResponseMode
  /** ids of the credentials presented, in vp_token order; [] when declined */
  presented: string[]
  /** the vp_token object (also inside the JWE of dc_api.jwt) */
  vpToken?: VpTokenV1
  /** dc_api.jwt: the JWE protected header (alg, enc, kid, epk) */
  encryption?: JweHeader
  /** signed and multisigned: every signature's outcome */
  signatures?: DcApiSignatureOutcome[]
  certificate?: VerifiedCertificate
  /** parameters present but ignored (A.2) */
  ignoredParameters: string[]
  /** the request as resolved */
  request: ResolvedDcApiRequest
}

/**
 * Answers a DC API request as a platform wallet does: resolves and checks it for `origin`
 * (resolveDcApiRequest), selects and presents as a 1.0 answer bound to the origin, and returns the
 * DigitalCredential `{protocol, data}`. Refusals throw (WalletProtocolError step `request`; WalletUsageError),
 * a decline is an answer (`status: 'declined'`, data `{error: 'access_denied', error_description}`).
 */
export async function presentDcApi(
  wallet: PresentationContext,
  input: DcApiInput,
  opts: PresentDcApiOptions = {},
): Promise<DcApiPresentationResult> {
  const misbehave = assertPresentationMisbehaviours(opts.misbehave)
  checkAnswerMisbehaviours(misbehave, 'dc_api')
  const tamper = tamperOf(misbehave)
  const step = opts.onStep ?? (() => {})
  const now = opts.now ?? (() => Date.now())
  const request = await resolveDcApiRequest(input, {
    trustAnchors: wallet.trustAnchors,
    now: now(),
    allowExpired: tamper.acts('request.skipExpiry'),
    answeredNonce: (nonce) => wallet.answeredNonce(nonce),
    trustEverything: wallet.trustEverything,
    ignoreExpectedOrigins: tamper.acts('dc_api.ignoreExpectedOrigins'),
  })
  step('request', {
    profile: 'dc_api',
    protocol: request.protocol,
    origin: request.origin,
    clientId: request.clientId,
    prefix: request.prefix,
    signed: request.signed,
    ...(request.signatures && { signatures: request.signatures }),
    responseMode: request.responseMode,
    dcqlQueryIds: request.dcqlQuery.credentials.map((c) => c.id),
    ignoredParameters: request.ignoredParameters,
  })
  // 'plain-response' answers dc_api where dc_api.jwt was asked; 'jwe-wrong-key' needs dc_api.jwt
  const responseMode = tamper.apply('response.mode', request.responseMode) as DcApiResponseMode
  const base = {
    protocol: request.protocol,
    requestType: request.requestType,
    origin: request.origin,
    clientId: request.clientId,
    prefix: request.prefix,
    signed: request.signed,
    responseMode,
    ...(request.signatures && { signatures: request.signatures }),
    ...(request.certificate && { certificate: request.certificate }),
    ignoredParameters: request.ignoredParameters,
    request,
  }
  const binding = tamper.apply(
    'dc_api.binding',
    {
      nonce: request.nonce,
      audience: originAudience(request.origin),
      // B.2.6.2: the thumbprint of the key the request asks the answer to be encrypted to (as the verifier
      // knows it: 'plain-response' and 'jwe-wrong-key' change the encryption, not the handover)
      jwkThumbprint: thumbprintOf(request.responseMode === 'dc_api.jwt', request.encryption?.jwk),
      mdoc: { kind: 'dc_api', origin: request.origin },
    } satisfies AnswerBinding,
    { origin: request.origin, clientId: request.signed ? request.clientId : undefined },
  )
  const declined = (description: string): DcApiPresentationResult => {
    const response = {
      protocol: request.protocol,
      data: { error: 'access_denied', error_description: description },
    }
    step('response', { protocol: request.protocol, error: 'access_denied' })
    return {
      ...base,
      status: 'declined',
      response,
      audience: binding.audience,
      nonce: binding.nonce,
      presented: [],
    }
  }
  if (tamper.acts('response.decline')) return declined(opts.errorDescription ?? ACCESS_DENIED_DESCRIPTION)

  const built = await buildDcqlAnswer({
    wallet,
    dcqlQuery: request.dcqlQuery,
    binding,
    clientMetadata: request.payload.client_metadata,
    iat: Math.floor(now() / 1000),
    misbehave,
    ldProofType: opts.ldProofType,
    onUnsatisfied: opts.onUnsatisfied,
    step,
  })
  if (built.kind === 'unsatisfied') return declined(opts.errorDescription ?? built.description)
  const { vpToken } = built

  let data: Record<string, unknown>
  let encryption: JweHeader | undefined
  if (responseMode === 'dc_api.jwt') {
    // §8.3 as for direct_post.jwt: the response parameters (no state over the DC API) in a JWE to the verifier key
    const encrypted = await encryptResponse(
      responsePayload(vpToken, undefined),
      tamper.apply('response.encryption', request.encryption as ResponseEncryption),
    )
    data = { response: encrypted.jwe }
    encryption = encrypted.header
  } else {
    data = { vp_token: vpToken }
  }
  // remembered before it leaves: a verifier that asks again with this nonce is refused (§14.1)
  if (!tamper.acts('response.forgetNonce')) await wallet.rememberAnsweredNonce(request.nonce)
  const response: DcApiResponse = { protocol: request.protocol, data }
  step('response', { protocol: request.protocol, responseMode })
  return {
    ...base,
    status: 'presented',
    response,
    audience: binding.audience,
    nonce: binding.nonce,
    presented: built.presented,
    vpToken,
    ...(encryption && { encryption }),
  }
}

/** The protocol an error answer names: the entry's the wallet would have answered, else the first entry's. */
function protocolOf(request: unknown): string {
  const entries = entriesOf(request)
  const ours = entries.find((e) => isObject(e) && requestTypeOf(e.protocol) !== undefined)
  const any = ours ?? entries.find((e) => isObject(e) && typeof e.protocol === 'string')
  return isObject(any) && typeof any.protocol === 'string' ? any.protocol : DC_API_PROTOCOLS.unsigned
}

/**
 * The error answer a platform hands back for a refusal (Appendix A.4: a protocol error is still a fulfilled
 * promise, `data` = `{error}`): `{protocol, data: {error, error_description}}` with the refusal's code
 * (invalid_request, invalid_request_object, …; `invalid_request` when it has none). A.4 names `error` the
 * single property of `data`; `{describe: false}` leaves error_description out.
 */
export function dcApiErrorResponse(
  request: unknown,
  refusal: WalletProtocolError | { error?: string | undefined; errorDescription?: string | undefined },
  opts: { describe?: boolean } = {},
): DcApiResponse {
  const error = refusal.error ?? 'invalid_request'
  const description = refusal.errorDescription
  return {
    protocol: protocolOf(request),
    data: {
      error,
      ...(opts.describe !== false && description !== undefined && { error_description: description }),
    },
  }
}

/** Whether an error thrown by presentDcApi is the wallet's refusal of the request (an answer over the API). */
export function isDcApiRefusal(error: unknown): error is WalletProtocolError {
  return error instanceof WalletProtocolError && error.step === 'request'
}
