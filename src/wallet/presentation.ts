// One OpenID4VP presentation (draft 20 era, Presentation Exchange v2, response_mode direct_post), step by step:
// PresentationSession.start fetches and checks the signed request object, respond() selects the credentials,
// builds the JWT VP and the presentation_submission and posts them. @sphereon/did-auth-siop 0.19.0 (the `OP`)
// verifies the request object (through our did:key verifyJwtCallback), finds the presentation definition,
// lays out the presentation and the submission (PresentationExchange, whose sign callback builds our JWT VP)
// and the authorization response (createAuthorizationResponse, which also checks the VP against the
// definition). The wallet does plain HTTP where the library hides what the verifier answered:
//  - GET request_uri: the library's fetch turns a 4xx into "Received unexpected response status 410:Gone"
//    without the body, and it cannot take the link as the QR carries it: it merges the link's `redirect_uri`
//    with the request object's `response_uri` and refuses the pair. The wallet fetches the request object
//    itself and hands the library the JWT.
//  - POST response_uri: submitAuthorizationResponse throws on a 4xx with the body as the message and no
//    status; the wallet posts the same form itself (responseForm in presentation-vp.ts; a unit test proves it
//    equal to the library's payload).
//  - Misbehaviours whose presentation the library refuses to assemble (it evaluates the VP against the
//    definition: a self-issued or tampered credential, a lying submission, a foreign holder) skip
//    createAuthorizationResponse; the form is the same.

import { randomUUID } from 'node:crypto'
import type { OP, VerifiedAuthorizationRequest } from '@sphereon/did-auth-siop'
import type { IPresentationDefinition } from '@sphereon/pex'
import type { LdKeyType } from '../formats/ldp-vc/keys.ts'
import { didOf, JWS_ALGS, type JwsAlg, resolveDidKey } from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws, verifyJws } from '../shared/jws.ts'
import { JWT_MEDIA_TYPE, REQUEST_OBJECT_MEDIA_TYPE, REQUEST_OBJECT_TYP } from '../shared/wire.ts'
import type { DeviceSigner } from './defects.ts'
import {
  protocolError,
  replayedNonce,
  transportError,
  WalletProtocolError,
  WalletUsageError,
} from './errors.ts'
import { type HttpAnswer, httpRequest, type WalletHttp } from './http.ts'
import { loadSiop } from './lazy.ts'
import {
  assertPresentationMisbehaviours,
  EXCLUSIVE_PRESENTATION_MISBEHAVIOURS,
  JWT_VP_MISBEHAVIOURS,
  LDP_VP_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  V1_ONLY_PRESENTATION_MISBEHAVIOURS,
} from './misbehaviour.ts'
import { buildLdpVp, chooseLdProofType, type LdPresenter, peAcceptedLdProofs } from './presentation-ldp.ts'
import { parsePresentationLink } from './presentation-link.ts'
import {
  answerFormats,
  descriptorIds,
  evaluationDefinition,
  ldpVcFormatName,
  NoMatchingCredentialsError,
  type Selection,
  selectCredentials,
  unsafeDefinitionPath,
} from './presentation-select.ts'
import { revocationEntryOf, StatusListReader } from './presentation-status.ts'
import { isV1Link } from './presentation-v1-request.ts'
import {
  buildVpToken,
  credentialId,
  errorForm,
  type PresentationSubmission,
  responseForm,
  withAnswerFormats,
} from './presentation-vp.ts'
import type { JwtSigner } from './proof.ts'
import { quietly } from './quiet.ts'
import type { StoredCredential } from './store.ts'
import { tamperOf } from './tamper.ts'

/** The wallet's answer for the 'access-denied' misbehaviour (also usable as a plain decline). */
export const ACCESS_DENIED_DESCRIPTION = 'the holder declined to share the requested credentials'

/**
 * The request asks with a DCQL query (`dcql_query`, OpenID4VP 1.0 §6) under a client_id without an OpenID4VP
 * 1.0 client identifier prefix (a bare DID, the drafts' form): this wallet answers DCQL in the 1.0 form only
 * (presentation-v1.ts), and a bare DID client_id with Presentation Exchange only. Raised before anything is sent.
 */
export class DcqlNotSupportedError extends WalletUsageError {
  override name = 'DcqlNotSupportedError'
  constructor(
    /** the request object's `client_id` */
    readonly clientId: unknown,
    /** the query as the request object carries it */
    readonly dcqlQuery: unknown,
  ) {
    super(
      `the verifier ${typeof clientId === 'string' ? `${clientId} ` : ''}asks with a DCQL query (dcql_query, OpenID4VP 1.0 §6) under a client_id without an OpenID4VP 1.0 client identifier prefix (a bare DID is the drafts' form; 1.0 §5.9.3 writes decentralized_identifier:did:…): this wallet answers DCQL in the OpenID4VP 1.0 form only, and a bare DID client_id with Presentation Exchange (presentation_definition) only. Nothing was sent to the verifier.`,
    )
  }
}

/** A presentation the verifier accepted, kept (in memory) for the 'vp-replayed' misbehaviour. */
export interface RememberedPresentation {
  vpToken: string
  /** ids of its credentials */
  presented: string[]
  clientId: string
  responseUri: string
}

/** What a session needs from the wallet holding the key and the credentials. */
export interface PresentationContext {
  readonly did: string
  readonly kid: string
  readonly alg: JwsAlg
  /** the wallet's HTTP client and limits (deadline, body cap, no redirects; http.ts) */
  readonly http: WalletHttp
  /** PEM trust anchors an x5c-signed request object must chain to (1.0 x509_san_dns, x509_hash) */
  readonly trustAnchors: readonly string[]
  /**
   * WalletOptions.trustEverything: the test-only careless wallet, which checks nothing a request says and
   * presents even when nothing matches (to prove that wallet test plans fail such a wallet)
   */
  readonly trustEverything: boolean
  /**
   * the holder key's JWS signer; `holder` (a stored credential's subject) names the further key of a batch the
   * credential is bound to (OpenID4VCI 1.0 §3.3.2), else the wallet's own key signs
   */
  jwtSigner(holder?: string): JwtSigner
  /** the holder key as an mdoc's DeviceAuthentication signs with it (COSE, ISO 18013-5 §9.1.3.6); `holder` as above */
  deviceSigner(holder?: string): DeviceSigner
  /** the holder key as an ldp_vp signs with it, and its type; `holder` as above */
  ldPresenter(holder?: string): Promise<LdPresenter>
  /** whether `did` is a further key of a batch (a copy bound to it cannot go into a VP of the wallet's own key) */
  isBatchKey(did: string): boolean
  readonly keyType: LdKeyType
  /** the Linked Data proof type every ldp_vp is signed with (WalletOptions.ldpProofType); default: chosen */
  readonly ldpProofType?: string | undefined
  credentials(): StoredCredential[]
  lastPresentation(): RememberedPresentation | undefined
  rememberPresentation(presentation: RememberedPresentation): void
  /** whether this wallet already answered a request with this nonce with a vp_token (OpenID4VP 1.0 §14.1) */
  answeredNonce(nonce: string): Promise<boolean>
  /** remembers a nonce answered with a vp_token (kept in a file wallet, so across runs) */
  rememberAnsweredNonce(nonce: string): Promise<void>
}

export type PresentStep = 'request' | 'select' | 'status' | 'response'

export interface StartPresentationOptions {
  /** only 'expired-session' matters here: it skips the wallet's own `exp` check of the request object */
  misbehave?: readonly PresentationMisbehaviour[]
  /** the wallet's clock in ms (expiry of the request object, `iat` of the VP); default Date.now */
  now?: () => number
}

export interface RespondOptions {
  misbehave?: readonly PresentationMisbehaviour[]
  onStep?: (step: PresentStep, detail?: unknown) => void
  /** error_description of the 'access-denied' answer */
  errorDescription?: string
  /**
   * What to do when the held credentials cannot satisfy the query (presentation_definition or DCQL): 'throw'
   * (default) NoMatchingCredentialsError / DcqlUnsatisfiedError and send nothing, or 'access-denied': answer
   * `access_denied` naming what is missing (OpenID4VP 1.0 §8.5: "The Wallet did not have the requested
   * Credentials").
   */
  onUnsatisfied?: 'throw' | 'access-denied'
  /**
   * ldp_vp: the Linked Data proof type to sign with (the wallet's key type must make it, else a
   * WalletUsageError and nothing is sent); default the wallet's `ldpProofType`, else the first the verifier's
   * definition lists that the key makes (presentation-ldp.ts).
   */
  ldProofType?: string
}

export interface PresentationResult {
  /** 'verified': the verifier answered 2xx to the VP; 'rejected-by-wallet': 2xx to the wallet's error answer */
  status: 'verified' | 'rejected-by-wallet'
  /** which OpenID4VP profile answered: 'pe' (draft 20, Presentation Exchange) or '1.0' (DCQL) */
  profile: 'pe' | '1.0'
  /** the last path segment of response_uri (the reference service's session id) */
  sessionId: string
  clientId: string
  responseUri: string
  /** HTTP status of the answer to the direct_post */
  httpStatus: number
  /** the answer's body, parsed */
  response: unknown
  /** `redirect_uri` of the answer, when the verifier sent one */
  redirectUri?: string
  /** ids (jti, else urn:sha256 of the JWT) of the credentials in the VP, in VP order; [] for an error answer */
  presented: string[]
  /** pe: the JWT VP; 1.0: the vp_token object as JSON text (as direct_post sends it) */
  vpToken?: string
  presentationSubmission?: PresentationSubmission
  /** 1.0: the vp_token object, keyed by credential query id, each value an array of presentations (§8.1) */
  dcqlVpToken?: Record<string, (string | Record<string, unknown>)[]>
  /** 1.0: the response mode used (direct_post.jwt was asked but direct_post sent: 'plain-response') */
  responseMode?: 'direct_post' | 'direct_post.jwt'
  /** 1.0 direct_post.jwt: the JWE protected header sent (alg, enc, kid, epk) */
  encryption?: { alg: string; enc: string; kid?: string; epk?: JsonWebKey }
  /** exactly what was posted */
  form: Record<string, string>
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function requestError(status: number, description: string, body?: unknown): WalletProtocolError {
  return new WalletProtocolError({
    step: 'request',
    status,
    error: 'invalid_request_object',
    errorDescription: description,
    body,
  })
}

/** Request parameters did-auth-siop would fetch by reference (with its own, unbounded, HTTP client). */
const BY_REFERENCE_PARAMETERS = [
  'presentation_definition_uri',
  'client_metadata_uri',
  'registration_uri',
  'request_uri',
] as const

/** A parameter that may come as JSON text (a request's parameters by value) as the object it holds. */
function jsonValue(value: unknown): unknown {
  if (typeof value !== 'string') return value
  try {
    return JSON.parse(value)
  } catch {
    return value
  }
}

/** The credential JWTs inside a JWT VP. */
/** Whether a remembered vp_token is an ldp_vp (JSON text) rather than a JWT VP. */
const isLdpToken = (vpToken: string): boolean => vpToken.trimStart().startsWith('{')

function credentialsOf(vpToken: string): string[] {
  const vp = decodeJws(vpToken).payload.vp
  const list = isObject(vp) ? vp.verifiableCredential : undefined
  return (Array.isArray(list) ? list : [list]).filter((c): c is string => typeof c === 'string')
}

/**
 * The checks of a verified request object's payload that the library does not make (it checks the
 * signature through our callback and finds the presentation definition).
 */
export function checkRequestObject(
  payload: Record<string, unknown>,
  opts: { linkClientId: string | undefined; nowMs: number; allowExpired: boolean },
): string | undefined {
  const clientId = payload.client_id
  if (typeof clientId !== 'string' || !clientId.startsWith('did:')) {
    const prefix = typeof clientId === 'string' ? /^([a-z][\w.+-]*):/i.exec(clientId)?.[1] : undefined
    return prefix
      ? `client_id ${clientId} has the client identifier prefix ${prefix}, which this wallet does not know (OpenID4VP 1.0 §5.9.1, §5.9.3): refused, not taken for a draft-20 DID`
      : `client_id ${JSON.stringify(clientId)} is not a DID (this wallet supports client_id_scheme did only)`
  }
  if (payload.client_id_scheme !== undefined && payload.client_id_scheme !== 'did') {
    return `client_id_scheme ${JSON.stringify(payload.client_id_scheme)} is not supported (did only)`
  }
  if (opts.linkClientId !== undefined && opts.linkClientId !== clientId) {
    return `client_id of the link (${opts.linkClientId}) differs from the request object's (${clientId}); they must be identical (RFC 9101 §5, OpenID4VP 1.0 §5.10.1)`
  }
  const responseType = String(payload.response_type ?? '')
  if (!responseType.split(' ').includes('vp_token')) {
    return `response_type ${JSON.stringify(payload.response_type)} does not ask for a vp_token`
  }
  if (payload.response_mode !== 'direct_post') {
    return `response_mode ${JSON.stringify(payload.response_mode)} is not direct_post (the only mode this wallet speaks)`
  }
  if (typeof payload.response_uri !== 'string' || !/^https?:\/\//.test(payload.response_uri)) {
    return `response_uri ${JSON.stringify(payload.response_uri)} is not an http(s) URL`
  }
  if (typeof payload.nonce !== 'string' || payload.nonce.length === 0)
    return 'the request object has no nonce (OpenID4VP §5.2: nonce is REQUIRED; without it a presentation can be replayed)'
  if (payload.state !== undefined && typeof payload.state !== 'string') return 'state is not a string'
  if (payload.exp !== undefined) {
    if (typeof payload.exp !== 'number') return 'exp is not a number'
    if (!opts.allowExpired && payload.exp * 1000 <= opts.nowMs) {
      return `the request object expired at ${new Date(payload.exp * 1000).toISOString()} (wallet clock ${new Date(opts.nowMs).toISOString()}; exp, RFC 7519 §4.1.4, RFC 9101 §6.3)`
    }
  }
  return undefined
}

/**
 * The request object is signed by a key of its client_id (client_id_scheme did: the header `kid` is a did:key
 * URL of that DID, RFC 9101 §6.2). Checked by the wallet before anything the payload says is used, and again
 * by did-auth-siop through its verifyJwtCallback. `status` is the HTTP status that carried the object.
 */
function checkRequestSignature(
  status: number,
  kid: string | undefined,
  jwt: { header: Record<string, unknown>; payload: Record<string, unknown>; raw: string },
  method = 'did',
): void {
  const rule = 'request object signature (RFC 9101 §6.2, client_id_scheme did)'
  if (method !== 'did' || kid === undefined || jwt.header.alg === 'none') {
    throw requestError(
      status,
      `${rule}: the request object must be signed by a did:key of the client_id (header kid); got ${jwt.header.alg === 'none' ? 'an unsigned (alg none)' : kid === undefined ? 'one without a kid' : `a ${method}`} request object`,
    )
  }
  let publicKey: ReturnType<typeof resolveDidKey>['publicKey']
  try {
    publicKey = resolveDidKey(kid).publicKey
  } catch (error) {
    throw requestError(status, `${rule}: kid ${kid}: ${message(error)}`)
  }
  if (didOf(kid) !== jwt.payload.client_id) {
    throw requestError(
      status,
      `${rule}: kid ${kid} is not a key of client_id ${String(jwt.payload.client_id)}`,
    )
  }
  try {
    verifyJws(jwt.raw, publicKey, { algorithms: JWS_ALGS })
  } catch (error) {
    throw requestError(status, `${rule}: it does not verify with ${kid}: ${message(error)}`)
  }
}

/** did-auth-siop's verifyJwtCallback: the same check as checkRequestSignature. */
const verifyRequestObjectJwt =
  (status: number) =>
  async (
    verifier: { method: string; didUrl?: string },
    jwt: { header: Record<string, unknown>; payload: Record<string, unknown>; raw: string },
  ): Promise<boolean> => {
    checkRequestSignature(status, verifier.didUrl, jwt, verifier.method)
    return true
  }

async function buildOp(holderDid: string, status: number): Promise<OP> {
  const { OP: OPClass, SupportedVersion } = await loadSiop()
  return OPClass.builder()
    .withSupportedVersions([SupportedVersion.SIOPv2_D12_OID4VP_D20, SupportedVersion.SIOPv2_D12_OID4VP_D18])
    .withVerifyJwtCallback(verifyRequestObjectJwt(status) as never)
    .withIssuer(holderDid)
    .withCreateJwtCallback(async () => {
      // only an id_token would need it, and response_type vp_token asks for none
      throw new Error('this wallet signs no id_token')
    })
    .build()
}

/** GET request_uri: the compact JWS, or a WalletProtocolError with what the verifier answered. */
async function fetchRequestObject(requestUri: string, http: WalletHttp): Promise<string> {
  let answer: HttpAnswer
  try {
    answer = await httpRequest(
      requestUri,
      { method: 'GET', accept: `${REQUEST_OBJECT_MEDIA_TYPE}, ${JWT_MEDIA_TYPE}` },
      http,
    )
  } catch (error) {
    // the wallet's deadline, body cap and no-redirect rule (http.ts) end the fetch before any check of the
    // object: a 128 MiB "request object" is never read whole
    throw transportError('request', requestUri, error)
  }
  if (answer.status < 200 || answer.status >= 300) throw protocolError('request', answer.status, answer.body)
  const contentType = answer.headers['content-type'] ?? ''
  if (!contentType.toLowerCase().startsWith(REQUEST_OBJECT_MEDIA_TYPE)) {
    throw requestError(
      answer.status,
      `content type ${contentType || '(none)'} is not ${REQUEST_OBJECT_MEDIA_TYPE}`,
      answer.body,
    )
  }
  return answer.text.trim()
}

export class PresentationSession {
  /** the link as scanned */
  readonly link: string
  /** the link's request_uri (undefined for a request object by value) */
  readonly requestUri: string | undefined
  /** the request object (compact JWS) as fetched */
  readonly requestObject: string
  readonly requestHeader: Record<string, unknown>
  readonly requestPayload: Record<string, unknown>
  readonly clientId: string
  readonly nonce: string
  readonly state: string | undefined
  readonly responseUri: string
  /** the last path segment of response_uri */
  readonly sessionId: string
  readonly presentationDefinition: IPresentationDefinition
  /** `exp` of the request object, ms */
  readonly expiresAt: number | undefined

  private readonly wallet: PresentationContext
  /** did-auth-siop's OP and its verified request; undefined for the careless wallet (trustEverything) */
  private readonly op: OP | undefined
  private readonly verified: VerifiedAuthorizationRequest | undefined
  private readonly correlationId: string
  private readonly now: () => number

  private constructor(init: {
    wallet: PresentationContext
    link: string
    requestUri: string | undefined
    requestObject: string
    op: OP | undefined
    verified: VerifiedAuthorizationRequest | undefined
    correlationId: string
    definition: IPresentationDefinition
    now: () => number
    /** the client_id when the request object has none (careless wallet only) */
    clientId?: string | undefined
  }) {
    this.wallet = init.wallet
    this.link = init.link
    this.requestUri = init.requestUri
    this.requestObject = init.requestObject
    const { header, payload } = decodeJws(init.requestObject)
    this.requestHeader = header
    this.requestPayload = payload
    this.clientId = typeof payload.client_id === 'string' ? payload.client_id : (init.clientId ?? '')
    // a nonce-less request gets this far only in the careless wallet, which answers with an empty one
    this.nonce = typeof payload.nonce === 'string' ? payload.nonce : ''
    this.state = typeof payload.state === 'string' ? payload.state : undefined
    this.responseUri = payload.response_uri as string
    this.sessionId = decodeURIComponent(
      new URL(this.responseUri).pathname.split('/').filter(Boolean).at(-1) ?? '',
    )
    this.presentationDefinition = init.definition
    this.expiresAt = typeof payload.exp === 'number' ? payload.exp * 1000 : undefined
    this.op = init.op
    this.verified = init.verified
    this.correlationId = init.correlationId
    this.now = init.now
  }

  /**
   * Fetches the request object (request_uri) and checks it: signature, client_id, nonce (present, and not one
   * this wallet already answered), response mode, expiry.
   */
  static async start(
    wallet: PresentationContext,
    link: string,
    opts: StartPresentationOptions = {},
  ): Promise<PresentationSession> {
    const misbehave = assertPresentationMisbehaviours(opts.misbehave)
    const now = opts.now ?? (() => Date.now())
    const parsed = parsePresentationLink(link)
    if (isV1Link(parsed)) {
      throw new WalletUsageError(
        `${parsed.clientId ?? 'the link'} is an OpenID4VP 1.0 request (${parsed.byValue ? 'request parameters by value' : `client_id prefix ${parsed.clientId?.split(':')[0]}`}): answer it with startPresentationV1 or present; startPresentation speaks the draft-20 Presentation Exchange profile`,
      )
    }
    const requestObject = parsed.requestUri
      ? await fetchRequestObject(parsed.requestUri, wallet.http)
      : (parsed.request as string)
    const status = parsed.requestUri ? 200 : 0
    let header: Record<string, unknown>
    let payload: Record<string, unknown>
    try {
      ;({ header, payload } = decodeJws(requestObject))
    } catch (error) {
      throw requestError(status, `not a compact JWS: ${message(error)}`, requestObject)
    }
    if (!wallet.trustEverything && header.typ !== undefined && header.typ !== REQUEST_OBJECT_TYP) {
      throw requestError(status, `header typ ${JSON.stringify(header.typ)} is not ${REQUEST_OBJECT_TYP}`)
    }
    // DCQL before the library: did-auth-siop 0.19.0 wants dcql_query as a JSON string and fails on a 1.0
    // request's object with '"[object Object]" is not valid JSON'. Refused whatever its signature: nothing
    // is sent either way.
    if (payload.dcql_query !== undefined) {
      if (
        payload.presentation_definition !== undefined ||
        payload.presentation_definition_uri !== undefined
      ) {
        throw requestError(
          status,
          'the request object carries both dcql_query and presentation_definition (a request carries exactly one query)',
          payload,
        )
      }
      throw new DcqlNotSupportedError(payload.client_id, payload.dcql_query)
    }
    // Presentation Exchange runs each field path of the definition against the held credentials (PEX here
    // and inside did-auth-siop): a path that is not plain member/index JSONPath is refused before either
    // sees it, whatever the signature says; the careless wallet too (it protects the wallet's process).
    const unsafe = unsafeDefinitionPath('presentation_definition', jsonValue(payload.presentation_definition))
    if (unsafe) throw requestError(status, `${unsafe}; nothing was sent`, payload)
    if (wallet.trustEverything) return PresentationSession.careless(wallet, link, parsed, requestObject, now)
    // the signature first: nothing the payload says counts before the client's key is shown to have signed it
    checkRequestSignature(status, typeof header.kid === 'string' ? header.kid : undefined, {
      header,
      payload,
      raw: requestObject,
    })
    const problem = checkRequestObject(payload, {
      linkClientId: parsed.clientId,
      nowMs: now(),
      allowExpired: tamperOf(misbehave).acts('request.skipExpiry'),
    })
    if (problem) throw requestError(status, problem, payload)
    if (await wallet.answeredNonce(payload.nonce as string))
      throw replayedNonce(status, payload.nonce as string)
    // did-auth-siop fetches these references itself, through cross-fetch: no deadline, no body cap, redirects
    // followed. Every request of this wallet goes through http.ts, so it answers requests that carry them by
    // value only (OpenID4VP draft 20 §5.1 defines the _uri forms as alternatives to the by-value parameters).
    const byReference = BY_REFERENCE_PARAMETERS.filter((name) => payload[name] !== undefined)
    if (byReference.length > 0) {
      throw requestError(
        status,
        `${byReference.join(', ')}: this wallet does not fetch a request's parameters by reference (its library would, without the wallet's deadline, body cap and no-redirect rule); send them by value (presentation_definition, client_metadata)`,
        payload,
      )
    }
    // then did-auth-siop, which checks the signature again (verifyRequestObjectJwt) and finds the definition
    const op = await buildOp(wallet.did, status)
    const correlationId = randomUUID()
    let verified: VerifiedAuthorizationRequest
    try {
      verified = await quietly(() => op.verifyAuthorizationRequest(requestObject, { correlationId }))
    } catch (error) {
      if (error instanceof WalletProtocolError) throw error
      throw requestError(status, `did-auth-siop: ${message(error)}`, payload)
    }
    if (verified.dcqlQuery) throw new DcqlNotSupportedError(payload.client_id, verified.dcqlQuery)
    const definitions = verified.presentationDefinitions ?? []
    if (definitions.length !== 1) {
      throw requestError(status, `expected one presentation_definition, found ${definitions.length}`, payload)
    }
    return new PresentationSession({
      wallet,
      link,
      requestUri: parsed.requestUri,
      requestObject,
      op,
      verified,
      correlationId,
      definition: (definitions[0] as { definition: IPresentationDefinition }).definition,
      now,
    })
  }

  /**
   * The careless wallet (trustEverything): the request object is only read — no signature, client_id, nonce,
   * expiry or replay check — and did-auth-siop is not asked. What it needs to answer at all must be there: a
   * presentation_definition and an http(s) response_uri.
   */
  private static careless(
    wallet: PresentationContext,
    link: string,
    parsed: ReturnType<typeof parsePresentationLink>,
    requestObject: string,
    now: () => number,
  ): PresentationSession {
    const status = parsed.requestUri ? 200 : 0
    const { payload } = decodeJws(requestObject)
    let definition = payload.presentation_definition
    if (typeof definition === 'string') {
      try {
        definition = JSON.parse(definition)
      } catch {}
    }
    if (!isObject(definition) || !Array.isArray(definition.input_descriptors)) {
      throw requestError(status, 'the request object carries no presentation_definition to answer', payload)
    }
    if (typeof payload.response_uri !== 'string' || !/^https?:\/\//.test(payload.response_uri)) {
      throw requestError(status, 'the request object has no http(s) response_uri to answer to', payload)
    }
    return new PresentationSession({
      wallet,
      link,
      requestUri: parsed.requestUri,
      requestObject,
      op: undefined,
      verified: undefined,
      correlationId: randomUUID(),
      definition: definition as unknown as IPresentationDefinition,
      now,
      clientId: parsed.clientId,
    })
  }

  /** True when the request object's `exp` has passed on the wallet's clock. */
  get expired(): boolean {
    return this.expiresAt !== undefined && this.expiresAt <= this.now()
  }

  /**
   * The credentials a correct answer presents (see presentation-select.ts). With `revoked`, one chosen
   * credential is replaced by a candidate of the same descriptor whose status list says revoked.
   */
  async select(opts: { revoked?: boolean; onStatus?: (lists: number) => void } = {}): Promise<Selection> {
    // Presentation Exchange over W3C VCs (draft-20 profile): JWT VCs and ldp_vc; SD-JWT VCs are presented by
    // the 1.0 profile. Its one VP is the wallet's own key's: a copy bound to a further key of a batch (OpenID4VCI
    // 1.0 §3.3.2) would fail holder binding in it, and is presented on the 1.0 profile, with its key
    const held = this.wallet
      .credentials()
      .filter(
        (c) => (c.format === 'jwt_vc_json' || c.format === 'ldp_vc') && !this.wallet.isBatchKey(c.subject),
      )
    return selectCredentials(
      this.presentationDefinition,
      held,
      this.wallet.did,
      opts.revoked
        ? async (chosen, matches) => {
            const reader = new StatusListReader(this.wallet.http)
            for (const [index, pick] of chosen.entries()) {
              const match = matches.find((m) => m.id === pick.descriptorId)
              for (const candidate of match?.candidates ?? []) {
                const entry = revocationEntryOf(candidate.credential)
                if (entry && (await reader.isRevoked(entry))) {
                  opts.onStatus?.(reader.fetched)
                  const copy = [...chosen]
                  copy[index] = { descriptorId: pick.descriptorId, credential: candidate }
                  return copy
                }
              }
            }
            opts.onStatus?.(reader.fetched)
            throw new WalletUsageError(
              `'revoked-credential': none of the ${[...new Set(matches.flatMap((m) => m.candidates))].length} held credentials matching presentation definition ${String(this.presentationDefinition.id)} is revoked (${reader.fetched} status list${reader.fetched === 1 ? '' : 's'} read)`,
            )
          }
        : undefined,
    )
  }

  /**
   * The ldp_vp answer (section 2.8; DIF PE v2 with `ldp_vp` / `ldp_vc`): the chosen ldp_vc credentials (and
   * chosen JWT credentials, enveloped: only for descriptors that accept a JWT VC) in one presentation whose
   * proof (challenge = nonce, domain = client_id) is of the first proof type the definition's
   * `format.ldp_vp` lists that this wallet's key makes, or the forced one; the submission points each
   * descriptor at its credential (`path_nested` `$.verifiableCredential[i]`). Posted as JSON text in the
   * direct_post form. `replayed`: that earlier ldp_vp is posted again, with this session's submission.
   */
  private async respondLdp(
    selection: Selection,
    misbehave: readonly PresentationMisbehaviour[],
    step: (step: PresentStep, detail?: unknown) => void,
    opts: RespondOptions,
    replayed?: RememberedPresentation,
  ): Promise<PresentationResult> {
    const tamper = tamperOf(misbehave)
    const credentials = selection.credentials
    let vpToken: string
    let positions: Map<StoredCredential, number>
    if (replayed) {
      vpToken = replayed.vpToken
      positions = new Map(credentials.map((c) => [c, Math.max(replayed.presented.indexOf(c.id), 0)]))
    } else {
      const accepted = peAcceptedLdProofs(this.presentationDefinition)
      const proofType = chooseLdProofType(
        this.wallet.keyType,
        accepted,
        opts.ldProofType ?? this.wallet.ldpProofType,
      )
      if (!proofType)
        throw new WalletUsageError(
          `the verifier accepts ldp_vp proofs of type ${accepted?.proofTypes.join(', ')}, none of which this wallet's ${this.wallet.keyType} key makes (${chooseLdProofType(this.wallet.keyType, undefined)} and the others of presentation-ldp.ts)`,
        )
      const vp = await buildLdpVp({
        holder: await this.wallet.ldPresenter(),
        credentials: credentials.map((c) =>
          c.format === 'ldp_vc' ? (JSON.parse(c.credential) as Record<string, unknown>) : c.credential,
        ),
        nonce: this.nonce,
        audience: this.clientId,
        proofType,
        misbehave,
        now: this.now(),
      })
      vpToken = JSON.stringify(vp)
      positions = new Map(credentials.map((c, i) => [c, i]))
    }
    const jwtNames = answerFormats(this.presentationDefinition)
    let submission: PresentationSubmission = {
      id: randomUUID(),
      definition_id: selection.definitionId,
      descriptor_map: selection.chosen.map((c) => ({
        id: c.descriptorId,
        format: 'ldp_vp',
        path: '$',
        path_nested: {
          id: c.descriptorId,
          format:
            c.credential.format === 'ldp_vc'
              ? ldpVcFormatName(this.presentationDefinition, c.descriptorId)
              : (jwtNames.get(c.descriptorId)?.vc ?? 'jwt_vc_json'),
          path: `$.verifiableCredential[${positions.get(c.credential) ?? 0}]`,
        },
      })),
    }
    submission = tamper.apply('pe.submission', submission, { credentialCount: credentials.length })
    const form = responseForm({ vpToken, submission, state: this.state })
    const presented = replayed ? replayed.presented : credentials.map((c) => c.id)
    return this.postPresentation(form, { vpToken, submission, presented, tamper, step })
  }

  /**
   * Answers the request: the JWT VP and presentation_submission (or, for 'access-denied', an error answer),
   * posted form-encoded to response_uri. A 2xx answer is the result; anything else a WalletProtocolError
   * step 'response'. Nothing matching: NoMatchingCredentialsError, and nothing is posted.
   */
  async respond(opts: RespondOptions = {}): Promise<PresentationResult> {
    const misbehave = assertPresentationMisbehaviours(opts.misbehave)
    const tamper = tamperOf(misbehave)
    const step = opts.onStep ?? (() => {})
    const v1Only = misbehave.filter((m) => V1_ONLY_PRESENTATION_MISBEHAVIOURS.includes(m))
    if (v1Only.length > 0) {
      throw new WalletUsageError(
        `misbehaviour ${v1Only.join(', ')} applies to an OpenID4VP 1.0 (DCQL) answer only; ${this.clientId} is answered with Presentation Exchange (draft 20)`,
      )
    }
    const exclusive = misbehave.filter((m) => EXCLUSIVE_PRESENTATION_MISBEHAVIOURS.includes(m))
    const others = misbehave.filter((m) => m !== 'expired-session' && !exclusive.includes(m))
    if (exclusive.length > 1 || (exclusive.length === 1 && others.length > 0)) {
      throw new WalletUsageError(
        `misbehaviour ${exclusive[0]} replaces the whole answer: combine it with expired-session only, not with ${[...exclusive.slice(1), ...others].join(', ')}`,
      )
    }
    if (!tamper.acts('request.skipExpiry') && !this.wallet.trustEverything && this.expired) {
      throw requestError(
        this.requestUri ? 200 : 0,
        `the request object expired at ${new Date(this.expiresAt as number).toISOString()}: not answering it (misbehaviour expired-session answers anyway)`,
      )
    }

    if (tamper.acts('response.decline')) {
      const form = errorForm({
        error: 'access_denied',
        errorDescription: opts.errorDescription ?? ACCESS_DENIED_DESCRIPTION,
        state: this.state,
      })
      const answer = await postAuthorizationResponse(this, form, step, this.wallet.http)
      return presentationResult(this, 'pe', 'rejected-by-wallet', answer, form, [])
    }

    // 'vp-replayed' presents the previous VP's credentials, and its sign callback answers the previous VP
    // instead of signing a new one: the submission is this session's, only the vp_token is old
    let previous: RememberedPresentation | undefined
    let jwts: string[]
    if (tamper.acts('pe.replay')) {
      previous = this.wallet.lastPresentation()
      if (!previous) {
        throw new WalletUsageError(
          "'vp-replayed' needs a presentation of this wallet that a verifier accepted: present once first (in the same process)",
        )
      }
      step('select', { replayed: previous.presented })
      if (isLdpToken(previous.vpToken)) {
        // an earlier ldp_vp: this definition evaluated over the credentials it presented, for the submission
        const presented = new Set(previous.presented)
        const earlier = this.wallet.credentials().filter((c) => presented.has(c.id))
        const selection = await selectCredentials(this.presentationDefinition, earlier, this.wallet.did)
        return this.respondLdp(selection, misbehave, step, opts, previous)
      }
      jwts = credentialsOf(previous.vpToken)
    } else {
      let selection: Selection
      try {
        selection = await this.select({
          revoked: tamper.acts('pe.selectRevoked'),
          onStatus: (lists) => step('status', { lists }),
        })
      } catch (error) {
        if (!(error instanceof NoMatchingCredentialsError)) throw error
        if (this.wallet.trustEverything) return this.respondCarelessly(step)
        if (opts.onUnsatisfied !== 'access-denied') throw error
        // §8.5 access_denied: the wallet does not hold what is asked; say which descriptors, send no VP
        step('select', { unsatisfied: error.descriptors })
        const form = errorForm({
          error: 'access_denied',
          errorDescription:
            opts.errorDescription ??
            `the wallet holds no credential for the input descriptor${error.descriptors.length === 1 ? '' : 's'} ${error.descriptors.join(', ')}`,
          state: this.state,
        })
        const answer = await postAuthorizationResponse(this, form, step, this.wallet.http)
        return presentationResult(this, 'pe', 'rejected-by-wallet', answer, form, [])
      }
      step('select', {
        chosen: selection.chosen.map((c) => ({ descriptor: c.descriptorId, credential: c.credential.id })),
      })
      jwts = selection.credentials.map((c) => c.credential)
      // ldp_vc credentials go in a Linked Data presentation (section 2.8's ldp_vp), the careless wallet's too
      if (selection.credentials.some((c) => c.format === 'ldp_vc'))
        return this.respondLdp(selection, this.wallet.trustEverything ? [] : misbehave, step, opts)
      if (this.wallet.trustEverything) return this.respondCarelessly(step, selection)
    }
    const ldpOnly = misbehave.filter(
      (m) => !JWT_VP_MISBEHAVIOURS.includes(m) && LDP_VP_MISBEHAVIOURS.includes(m),
    )
    if (ldpOnly.length > 0)
      throw new WalletUsageError(
        `misbehaviour ${ldpOnly.join(', ')} changes a Linked Data presentation (ldp_vp), but this answer is a JWT VP`,
      )

    const { PresentationExchange } = await loadSiop()
    const exchange = new PresentationExchange({ allDIDs: [this.wallet.did], allVerifiableCredentials: jwts })
    let presentedJwts: string[] = []
    const signer = this.wallet.jwtSigner()
    const replayed = previous?.vpToken
    let built: Awaited<ReturnType<typeof exchange.createVerifiablePresentation>>
    try {
      built = await quietly(() =>
        exchange.createVerifiablePresentation(
          // PEX's words for the formats (jwt_vc_json also as jwt_vc), as the selection evaluated it
          evaluationDefinition(this.presentationDefinition),
          jwts,
          async (args) => {
            const presentation = structuredClone(args.presentation) as unknown as Record<string, unknown>
            const selected = [...((presentation.verifiableCredential as string[] | undefined) ?? [])]
            if (replayed) {
              presentedJwts = selected
              return replayed
            }
            const credentials = tamper.apply('vp.credentials', selected)
            presentation.verifiableCredential = credentials
            presentedJwts = credentials
            return buildVpToken(signer, {
              holder: this.wallet.did,
              audience: this.clientId,
              nonce: this.nonce,
              presentation,
              misbehave,
              now: () => Math.floor(this.now() / 1000),
            })
          },
          { holderDID: this.wallet.did, proofOptions: { nonce: this.nonce, domain: this.clientId } } as never,
        ),
      )
    } catch (error) {
      throw new WalletUsageError(`did-auth-siop cannot lay out the presentation: ${message(error)}`)
    }
    const vpToken = built.verifiablePresentations[0] as unknown as string
    if (typeof vpToken !== 'string' || built.verifiablePresentations.length !== 1) {
      throw new Error('did-auth-siop built no single JWT VP')
    }
    // descriptor_map in the verifier's words: jwt_vp_json / jwt_vc_json, or jwt_vp / jwt_vc for a definition
    // that names only those. The library lays it out, and checks it, in PEX's words only (its PEX compares
    // the VP's detected format, jwt_vp, with descriptor_map[i].format): it checks its own layout, the wallet
    // posts the same submission with the verifier's identifiers.
    const laidOut = built.presentationSubmission as unknown as PresentationSubmission
    let submission = withAnswerFormats(laidOut, answerFormats(this.presentationDefinition))
    submission = tamper.apply('pe.submission', submission, { credentialCount: presentedJwts.length })

    let form: Record<string, string>
    // did-auth-siop's own check would refuse to assemble a VP or submission some misbehaviours change
    if (tamper.acts('pe.bypassLibrary')) {
      form = responseForm({ vpToken, submission, state: this.state })
    } else {
      const op = this.op as OP
      const response = await quietly(() =>
        op.createAuthorizationResponse(this.checkedRequest(), {
          correlationId: this.correlationId,
          presentationExchange: {
            verifiablePresentations: [vpToken],
            presentationSubmission: laidOut as never,
          },
        }),
      )
      form = libraryForm(response.response.payload as unknown as Record<string, unknown>)
      // same field, same place: only the format identifiers differ from what the library checked
      form.presentation_submission = JSON.stringify(submission)
    }
    const presented = presentedJwts.map(credentialId)
    return this.postPresentation(form, { vpToken, submission, presented, tamper, step })
  }

  /**
   * Posts a presentation answer and reports it: the nonce remembered as answered before it leaves (a verifier
   * that asks again with it is refused, §14.1), the VP remembered for 'vp-replayed' unless a misbehaviour
   * changed it (not an honest one to replay).
   */
  private async postPresentation(
    form: Record<string, string>,
    sent: {
      vpToken: string
      submission: PresentationSubmission
      presented: string[]
      tamper: ReturnType<typeof tamperOf>
      step: (step: PresentStep, detail?: unknown) => void
    },
  ): Promise<PresentationResult> {
    const { vpToken, submission, presented, tamper } = sent
    if (!tamper.acts('response.forgetNonce')) await this.wallet.rememberAnsweredNonce(this.nonce)
    const answer = await postAuthorizationResponse(this, form, sent.step, this.wallet.http)
    if (!tamper.acts('pe.forget')) {
      this.wallet.rememberPresentation({
        vpToken,
        presented,
        clientId: this.clientId,
        responseUri: this.responseUri,
      })
    }
    return presentationResult(this, 'pe', 'verified', answer, form, presented, {
      vpToken,
      presentationSubmission: submission,
    })
  }

  /**
   * The careless wallet's answer (trustEverything): the credentials PEX selected, or when nothing matches the
   * first held credential anyway, for every input descriptor; a JWT VP and a presentation_submission laid out
   * by the wallet itself, with no library checking them against the definition.
   */
  private async respondCarelessly(
    step: (step: PresentStep, detail?: unknown) => void,
    selection?: Selection,
  ): Promise<PresentationResult> {
    const held = this.wallet.credentials()
    const first = held.find((c) => c.format === 'jwt_vc_json') ?? held[0]
    const chosen =
      selection?.chosen ??
      (first
        ? descriptorIds(this.presentationDefinition).map((descriptorId) => ({
            descriptorId,
            credential: first,
          }))
        : [])
    if (chosen.length === 0) {
      throw new NoMatchingCredentialsError('the wallet holds no credential at all to present', [])
    }
    if (!selection) {
      step('select', {
        chosen: chosen.map((c) => ({ descriptor: c.descriptorId, credential: c.credential.id })),
      })
    }
    const credentials = [...new Set(chosen.map((c) => c.credential))]
    if (credentials.some((c) => c.format === 'ldp_vc')) {
      // an ldp_vc goes in an ldp_vp, unchecked as everything here
      const definitionId = String(this.presentationDefinition.id)
      return this.respondLdp({ definitionId, matches: [], chosen, credentials }, [], step, {})
    }
    const vpToken = await buildVpToken(this.wallet.jwtSigner(), {
      holder: this.wallet.did,
      audience: this.clientId,
      nonce: this.nonce,
      presentation: { holder: this.wallet.did, verifiableCredential: credentials.map((c) => c.credential) },
      now: () => Math.floor(this.now() / 1000),
    })
    const submission: PresentationSubmission = withAnswerFormats(
      {
        id: randomUUID(),
        definition_id: String(this.presentationDefinition.id),
        descriptor_map: chosen.map((c) => ({
          id: c.descriptorId,
          format: 'jwt_vp',
          path: '$',
          path_nested: {
            id: c.descriptorId,
            format: 'jwt_vc',
            path: `$.vp.verifiableCredential[${credentials.indexOf(c.credential)}]`,
          },
        })),
      },
      answerFormats(this.presentationDefinition),
    )
    const form = responseForm({ vpToken, submission, state: this.state })
    await this.wallet.rememberAnsweredNonce(this.nonce)
    const answer = await postAuthorizationResponse(this, form, step, this.wallet.http)
    return presentationResult(
      this,
      'pe',
      'verified',
      answer,
      form,
      credentials.map((c) => c.id),
      { vpToken, presentationSubmission: submission },
    )
  }

  /**
   * The verified request as createAuthorizationResponse checks the VP against it: its presentation
   * definitions in PEX's words for the formats (evaluationDefinition; the library's PEX, like ours, calls a
   * JWT VC `jwt_vc` and would refuse it for a descriptor that names only `jwt_vc_json`). A plain object from
   * the library, so a shallow copy keeps everything else.
   */
  private checkedRequest(): VerifiedAuthorizationRequest {
    const verified = this.verified as VerifiedAuthorizationRequest
    return {
      ...verified,
      presentationDefinitions: (verified.presentationDefinitions ?? []).map((pd) => ({
        ...pd,
        definition: evaluationDefinition(pd.definition as IPresentationDefinition) as never,
      })),
    }
  }
}

/** Where a presentation session answers: its response_uri, and what its result names. */
export interface ResponseTarget {
  readonly sessionId: string
  readonly clientId: string
  readonly responseUri: string
}

/**
 * Posts the authorization response (direct_post, or its JWE form) to the session's response_uri. A
 * redirect is never followed (OpenID4VP 1.0 §14.8: it would re-send the presentations elsewhere); a non-2xx
 * answer is the verifier's refusal, as a WalletProtocolError.
 */
export async function postAuthorizationResponse(
  target: ResponseTarget,
  form: Record<string, string>,
  step: (step: PresentStep, detail?: unknown) => void,
  http: WalletHttp,
): Promise<HttpAnswer> {
  let answer: HttpAnswer
  try {
    answer = await httpRequest(target.responseUri, { method: 'POST', form }, http)
  } catch (error) {
    throw transportError('response', target.responseUri, error)
  }
  step('response', { status: answer.status, body: answer.body })
  if (answer.status < 200 || answer.status >= 300) throw protocolError('response', answer.status, answer.body)
  return answer
}

/** What a presentation session reports once the verifier answered. */
export function presentationResult(
  target: ResponseTarget,
  profile: PresentationResult['profile'],
  status: PresentationResult['status'],
  answer: HttpAnswer,
  form: Record<string, string>,
  presented: string[],
  vp?: { vpToken: string; presentationSubmission: PresentationSubmission },
): PresentationResult {
  const redirectUri =
    isObject(answer.body) && typeof answer.body.redirect_uri === 'string'
      ? answer.body.redirect_uri
      : undefined
  return {
    status,
    profile,
    sessionId: target.sessionId,
    clientId: target.clientId,
    responseUri: target.responseUri,
    httpStatus: answer.status,
    response: answer.body,
    ...(redirectUri !== undefined && { redirectUri }),
    presented,
    ...(vp && { vpToken: vp.vpToken, presentationSubmission: vp.presentationSubmission }),
    form,
  }
}

/** The library's authorization response payload as form fields (objects as JSON, as it would post them). */
export function libraryForm(payload: Record<string, unknown>): Record<string, string> {
  const form: Record<string, string> = {}
  for (const [key, value] of Object.entries(payload)) {
    if (value === undefined || value === null || value === '') continue
    form[key] = typeof value === 'string' ? value : JSON.stringify(value)
  }
  return form
}
