// The lean load wallet: the holder side of OpenID4VCI (pre-authorized code, deferred issuance, notification)
// and OpenID4VP (request_uri, signed request object, direct_post with a JWT VP) over undici and node:crypto
// only. It exists to load a server, so its own CPU per flow is kept minimal: no jose, Veramo or Sphereon,
// JWS headers encoded once per wallet, metadata and public keys cached per process. It is still a correct
// wallet: it signs for real and verifies what it receives (request objects, issued credentials), so a broken
// server fails loudly instead of looking fast.

import {
  createPublicKey,
  type KeyObject,
  type JsonWebKey as NodeJwk,
  randomUUID,
  sign,
  verify,
  X509Certificate,
} from 'node:crypto'
import { Agent, type Dispatcher, request } from 'undici'
import {
  didKeyFromPublicKey,
  generateKeyPair,
  isJwsAlg,
  type JwsAlg,
  resolveDidKey,
} from '../src/shared/did-key.ts'
import { type DecodedJws, decodeJws } from '../src/shared/jws.ts'
import {
  FORM_MEDIA_TYPE,
  JWT_TYP,
  PRE_AUTHORIZED_GRANT,
  PROOF_TYP,
  REQUEST_OBJECT_MEDIA_TYPE,
  REQUEST_OBJECT_TYP,
} from '../src/shared/wire.ts'

export interface LeanWalletOptions {
  alg?: 'EdDSA' | 'ES256'
  dispatcher?: Dispatcher
}

export type LeanStep = 'scan' | 'token' | 'credential' | 'deferred' | 'notify' | 'request' | 'response'

export class LeanWalletError extends Error {
  override name = 'LeanWalletError'
  /**
   * `step`: the protocol step that failed; `kind`: a short stable category for error counting (the
   * server's OAuth `error` or problem `code`, else `http_<status>`, `bad_signature`, `network`, `protocol`).
   */
  constructor(
    readonly step: LeanStep,
    readonly kind: string,
    message: string,
    readonly status?: number,
  ) {
    super(message)
  }
}

export interface LeanIssuance {
  readonly issuer: string
  token(): Promise<void>
  requestCredential(): Promise<{ status: 200; credential: string } | { status: 202; transactionId: string }>
  deferred(transactionId: string): Promise<{ status: 200; credential: string } | { status: 'pending' }>
  notify(event: 'credential_accepted' | 'credential_failure' | 'credential_deleted'): Promise<void>
}

export interface LeanPresentation {
  readonly nonce: string
  readonly clientId: string
  readonly definition: Record<string, unknown>
  respond(credential?: string): Promise<{ status: number; body: unknown }>
}

const VC_CONTEXT_V1 = 'https://www.w3.org/2018/credentials/v1'
const VERIFY_ALGS: readonly JwsAlg[] = ['EdDSA', 'ES256', 'ES256K']
/** Lifetime of the key proof and of the VP: long enough for a loaded server, short enough to mean something. */
const PROOF_LIFETIME_SECONDS = 300
const DEEP_LINK = /^([a-z][a-z0-9+.-]*):\/\/[^?#]*\?([^#]*)/i
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' }

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
const b64urlJson = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
const nowSeconds = () => Math.floor(Date.now() / 1000)

// --- HTTP ---------------------------------------------------------------------------------------------------

let defaultAgent: Agent | undefined
/** One keep-alive agent per process unless the caller brings its own: connection reuse is part of the load. */
function sharedAgent(): Agent {
  defaultAgent ??= new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000 })
  return defaultAgent
}

interface Answer {
  status: number
  /** Parsed JSON when the body is JSON, else the text. */
  body: unknown
  text: string
}

interface Call {
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
}

async function http(step: LeanStep, dispatcher: Dispatcher, url: string, call: Call = {}): Promise<Answer> {
  let status: number
  let text: string
  let contentType: string
  try {
    const res = await request(url, {
      method: call.method ?? 'GET',
      dispatcher,
      ...(call.headers ? { headers: call.headers } : {}),
      ...(call.body !== undefined ? { body: call.body } : {}),
    })
    status = res.statusCode
    const type = res.headers['content-type']
    contentType = (Array.isArray(type) ? type[0] : type) ?? ''
    // Always read the body to the end: an unread body keeps the connection from being reused.
    text = await res.body.text()
  } catch (error) {
    throw new LeanWalletError(
      step,
      'network',
      `${step}: ${call.method ?? 'GET'} ${url}: ${(error as Error).message}`,
    )
  }
  let body: unknown = text
  if (text.length > 0 && (contentType.includes('json') || text[0] === '{' || text[0] === '[')) {
    try {
      body = JSON.parse(text)
    } catch {
      if (contentType.includes('json')) {
        throw new LeanWalletError(
          step,
          'protocol',
          `${step}: HTTP ${status} from ${url} is not valid JSON`,
          status,
        )
      }
    }
  }
  return { status, body, text }
}

/** The error a non-2xx answer means, with what the server said (OAuth error or problem+json). */
function httpError(step: LeanStep, answer: Answer, what: string): LeanWalletError {
  const body = isObject(answer.body) ? answer.body : {}
  const code =
    typeof body.error === 'string' ? body.error : typeof body.code === 'string' ? body.code : undefined
  const detail =
    typeof body.error_description === 'string'
      ? body.error_description
      : typeof body.detail === 'string'
        ? body.detail
        : typeof answer.body === 'string'
          ? answer.body.slice(0, 300)
          : ''
  const kind = code ?? `http_${answer.status}`
  return new LeanWalletError(
    step,
    kind,
    `${step}: ${what}: HTTP ${answer.status}${code ? ` ${code}` : ''}${detail ? `: ${detail}` : ''}`,
    answer.status,
  )
}

const protocolError = (step: LeanStep, message: string, kind = 'protocol') =>
  new LeanWalletError(step, kind, `${step}: ${message}`)

const ok = (answer: Answer) => answer.status >= 200 && answer.status < 300

// --- keys and signatures ------------------------------------------------------------------------------------

interface PublicKeyInfo {
  key: KeyObject
  alg: JwsAlg
}

const KEY_CACHE_MAX = 10_000
const keyCache = new Map<string, PublicKeyInfo>()

function algOfJwk(jwk: Record<string, unknown>): JwsAlg | undefined {
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return 'EdDSA'
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return 'ES256'
  if (jwk.kty === 'EC' && jwk.crv === 'secp256k1') return 'ES256K'
  return undefined
}

/**
 * The public key a `kid` names: did:key (pure) or did:jwk (the key is in the DID). Cached per kid, since a
 * load run sees the same few issuer and verifier keys over and over.
 */
function keyForKid(step: LeanStep, kid: unknown): PublicKeyInfo {
  if (typeof kid !== 'string') throw protocolError(step, 'the JWS header has no kid', 'unsupported_key')
  const cached = keyCache.get(kid)
  if (cached) return cached
  let info: PublicKeyInfo
  try {
    if (kid.startsWith('did:key:')) {
      const didKey = resolveDidKey(kid)
      info = { key: didKey.publicKey, alg: didKey.alg }
    } else if (kid.startsWith('did:jwk:')) {
      const hash = kid.indexOf('#')
      const jwk = JSON.parse(
        Buffer.from(kid.slice(8, hash < 0 ? undefined : hash), 'base64url').toString('utf8'),
      ) as Record<string, unknown>
      const alg = algOfJwk(jwk)
      if (!alg || 'd' in jwk) throw new Error('not an Ed25519, P-256 or secp256k1 public JWK')
      info = { key: createPublicKey({ key: jwk as NodeJwk, format: 'jwk' }), alg }
    } else {
      throw new Error('only did:key and did:jwk key ids are supported')
    }
  } catch (error) {
    throw protocolError(step, `kid ${kid} cannot be resolved: ${(error as Error).message}`, 'unsupported_key')
  }
  if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear()
  keyCache.set(kid, info)
  return info
}

function decode(step: LeanStep, jws: string, what: string): DecodedJws {
  try {
    return decodeJws(jws)
  } catch (error) {
    throw protocolError(step, `${what} is not a compact JWS: ${(error as Error).message}`)
  }
}

/** Verifies an already decoded JWS (so it is parsed once); throws LeanWalletError 'bad_signature'. */
function verifyDecoded(step: LeanStep, jws: DecodedJws, key: PublicKeyInfo, what: string): void {
  const alg = jws.header.alg
  if (!isJwsAlg(alg) || !VERIFY_ALGS.includes(alg)) {
    throw protocolError(step, `${what} alg ${JSON.stringify(alg)} is not allowed`, 'bad_signature')
  }
  if (alg !== key.alg)
    throw protocolError(step, `${what} alg ${alg} does not match its ${key.alg} key`, 'bad_signature')
  let valid = false
  if (jws.signature.length === 64) {
    const data = Buffer.from(jws.signingInput, 'ascii')
    try {
      valid =
        alg === 'EdDSA'
          ? verify(null, data, key.key, jws.signature)
          : verify('sha256', data, { key: key.key, dsaEncoding: 'ieee-p1363' }, jws.signature)
    } catch {
      valid = false
    }
  }
  if (!valid)
    throw protocolError(
      step,
      `${what} signature does not verify with ${String(jws.header.kid)}`,
      'bad_signature',
    )
}

/**
 * Checks an issued JWT credential before the wallet keeps it: signature by the key in the header `kid`
 * (did:key or did:jwk), `iss` = that key's DID, and, when the credential names a subject, that it is the
 * holder. Exported for tests (a tampered credential must be refused).
 */
export function verifyIssuedCredential(
  jwt: unknown,
  holderDid?: string,
  step: LeanStep = 'credential',
): DecodedJws {
  if (typeof jwt !== 'string') {
    throw protocolError(
      step,
      'the credential is not a JWT (this wallet takes jwt_vc_json only)',
      'unsupported_format',
    )
  }
  const decoded = decode(step, jwt, 'the credential')
  const kid = decoded.header.kid
  const key = keyForKid(step, kid)
  verifyDecoded(step, decoded, key, 'the credential')
  const { payload } = decoded
  const did = (kid as string).split('#')[0]
  const vc = isObject(payload.vc) ? payload.vc : payload
  const issuer = payload.iss ?? (isObject(vc.issuer) ? vc.issuer.id : vc.issuer)
  if (issuer !== did)
    throw protocolError(step, `the credential's issuer ${String(issuer)} is not its signer ${did}`)
  if (holderDid) {
    const subject = isObject(vc.credentialSubject) ? vc.credentialSubject.id : undefined
    const bound = payload.sub ?? subject
    if (bound !== undefined && bound !== holderDid) {
      throw protocolError(
        step,
        `the credential was issued to ${String(bound)}, not to this holder ${holderDid}`,
      )
    }
  }
  return decoded
}

// --- issuer discovery (cached per process) -------------------------------------------------------------------

interface IssuerInfo {
  metadata: Record<string, unknown>
  tokenEndpoint: string
  credentialEndpoint: string
  nonceEndpoint: string | undefined
  deferredEndpoint: string | undefined
  notificationEndpoint: string | undefined
}

const issuerCache = new Map<string, Promise<IssuerInfo>>()

/** `${base}/.well-known/x` (appended, what OpenID4VCI clients ask) and RFC 8615's inserted form. */
function wellKnownUrls(base: string, name: string): string[] {
  const trimmed = base.replace(/\/+$/, '')
  const url = new URL(trimmed)
  const path = url.pathname === '/' ? '' : url.pathname
  const inserted = `${url.origin}/.well-known/${name}${path}`
  const appended = `${trimmed}/.well-known/${name}`
  return inserted === appended ? [appended] : [appended, inserted]
}

async function firstJson(
  dispatcher: Dispatcher,
  urls: string[],
): Promise<Record<string, unknown> | undefined> {
  for (const url of urls) {
    const answer = await http('scan', dispatcher, url, { headers: { accept: 'application/json' } })
    if (ok(answer) && isObject(answer.body)) return answer.body
    if (answer.status !== 404 && answer.status !== 405 && !ok(answer))
      throw httpError('scan', answer, `GET ${url}`)
  }
  return undefined
}

async function discover(
  dispatcher: Dispatcher,
  issuer: string,
  grantServer: string | undefined,
): Promise<IssuerInfo> {
  const metadata = await firstJson(dispatcher, wellKnownUrls(issuer, 'openid-credential-issuer'))
  if (!metadata) throw protocolError('scan', `no credential issuer metadata for ${issuer}`)
  const bare = (url: unknown) => String(url).replace(/\/+$/, '')
  if (bare(metadata.credential_issuer) !== bare(issuer)) {
    throw protocolError(
      'scan',
      `metadata credential_issuer ${String(metadata.credential_issuer)} is not the offer's ${issuer}`,
    )
  }
  if (typeof metadata.credential_endpoint !== 'string')
    throw protocolError('scan', 'issuer metadata has no credential_endpoint')
  let tokenEndpoint = typeof metadata.token_endpoint === 'string' ? metadata.token_endpoint : undefined
  if (!tokenEndpoint) {
    const servers = Array.isArray(metadata.authorization_servers) ? metadata.authorization_servers : []
    const server =
      grantServer ??
      (typeof servers[0] === 'string' ? servers[0] : undefined) ??
      (typeof metadata.authorization_server === 'string' ? metadata.authorization_server : undefined) ??
      issuer
    const as = await firstJson(dispatcher, [
      ...wellKnownUrls(server, 'oauth-authorization-server'),
      ...wellKnownUrls(server, 'openid-configuration'),
    ])
    if (typeof as?.token_endpoint === 'string') tokenEndpoint = as.token_endpoint
  }
  if (!tokenEndpoint)
    throw protocolError('scan', `no token_endpoint for ${issuer} (issuer or authorization server metadata)`)
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
  return {
    metadata,
    tokenEndpoint,
    credentialEndpoint: metadata.credential_endpoint,
    nonceEndpoint: str(metadata.nonce_endpoint),
    deferredEndpoint: str(metadata.deferred_credential_endpoint),
    notificationEndpoint: str(metadata.notification_endpoint),
  }
}

function issuerInfo(
  dispatcher: Dispatcher,
  issuer: string,
  grantServer: string | undefined,
): Promise<IssuerInfo> {
  const key = `${issuer} ${grantServer ?? ''}`
  let info = issuerCache.get(key)
  if (!info) {
    info = discover(dispatcher, issuer, grantServer)
    // A failed discovery is not cached: the next flow asks again.
    info.catch(() => issuerCache.delete(key))
    issuerCache.set(key, info)
  }
  return info
}

// --- links ----------------------------------------------------------------------------------------------------

function linkParams(step: LeanStep, link: string): URLSearchParams {
  const match = DEEP_LINK.exec(link.trim())
  if (!match) throw protocolError(step, `not a <scheme>://…?… link: ${link.slice(0, 120)}`, 'bad_link')
  return new URLSearchParams(match[2])
}

// --- the wallet ---------------------------------------------------------------------------------------------

export class LeanWallet {
  readonly did: string
  readonly kid: string
  /** JWT VCs received and verified, newest last. */
  readonly credentials: string[] = []
  private readonly alg: JwsAlg
  private readonly privateKey: KeyObject
  private readonly dispatcher: Dispatcher
  /** The JWS headers never change for a wallet: encoded once. */
  private readonly proofHeader: string
  private readonly vpHeader: string

  private constructor(options: LeanWalletOptions) {
    this.alg = options.alg ?? 'EdDSA'
    const pair = generateKeyPair(this.alg)
    const didKey = didKeyFromPublicKey(pair.publicKey)
    this.did = didKey.did
    this.kid = didKey.kid
    this.privateKey = pair.privateKey
    this.dispatcher = options.dispatcher ?? sharedAgent()
    this.proofHeader = b64urlJson({ alg: this.alg, typ: PROOF_TYP, kid: this.kid })
    this.vpHeader = b64urlJson({ alg: this.alg, typ: JWT_TYP, kid: this.kid })
  }

  static create(options: LeanWalletOptions = {}): LeanWallet {
    return new LeanWallet(options)
  }

  /** A compact JWS over a pre-encoded header. */
  sign(header: 'proof' | 'vp', payload: Record<string, unknown>): string {
    const input = `${header === 'proof' ? this.proofHeader : this.vpHeader}.${b64urlJson(payload)}`
    const data = Buffer.from(input, 'ascii')
    const signature =
      this.alg === 'EdDSA'
        ? sign(null, data, this.privateKey)
        : sign('sha256', data, { key: this.privateKey, dsaEncoding: 'ieee-p1363' })
    return `${input}.${signature.toString('base64url')}`
  }

  /** @internal */
  http(step: LeanStep, url: string, call?: Call): Promise<Answer> {
    return http(step, this.dispatcher, url, call)
  }

  /** @internal verifies an issued credential and keeps it. */
  accept(step: LeanStep, credential: unknown): string {
    verifyIssuedCredential(credential, this.did, step)
    this.credentials.push(credential as string)
    return credential as string
  }

  async startIssuance(link: string): Promise<LeanIssuance> {
    const params = linkParams('scan', link)
    const byReference = params.get('credential_offer_uri')
    const byValue = params.get('credential_offer')
    let offer: unknown
    if (byReference !== null) {
      const answer = await this.http('scan', byReference, { headers: { accept: 'application/json' } })
      if (!ok(answer)) throw httpError('scan', answer, 'credential offer')
      offer = answer.body
    } else if (byValue !== null) {
      try {
        offer = JSON.parse(byValue)
      } catch {
        throw protocolError('scan', 'credential_offer is not JSON', 'bad_link')
      }
    } else {
      throw protocolError(
        'scan',
        'the link has neither credential_offer_uri nor credential_offer',
        'bad_link',
      )
    }
    if (!isObject(offer) || typeof offer.credential_issuer !== 'string') {
      throw protocolError('scan', 'the credential offer has no credential_issuer')
    }
    const grants = isObject(offer.grants) ? offer.grants : {}
    const grant = grants[PRE_AUTHORIZED_GRANT]
    if (!isObject(grant) || typeof grant['pre-authorized_code'] !== 'string') {
      throw protocolError(
        'scan',
        'the offer has no pre-authorized_code grant (the only flow this wallet speaks)',
        'unsupported',
      )
    }
    if (grant.tx_code !== undefined || grant.user_pin_required === true) {
      throw protocolError(
        'scan',
        'the offer demands a tx_code (user PIN); the lean wallet does not support one',
        'tx_code_required',
      )
    }
    // Draft 13+ names configurations; draft 11/12 offers listed `credentials` (ids or objects).
    const ids = Array.isArray(offer.credential_configuration_ids)
      ? offer.credential_configuration_ids
      : Array.isArray(offer.credentials)
        ? offer.credentials
        : []
    const configurationId = ids[0]
    if (typeof configurationId !== 'string')
      throw protocolError('scan', 'the offer names no credential_configuration_id')
    const info = await issuerInfo(
      this.dispatcher,
      offer.credential_issuer,
      typeof grant.authorization_server === 'string' ? grant.authorization_server : undefined,
    )
    return new Issuance(this, info, offer.credential_issuer, configurationId, grant['pre-authorized_code'])
  }

  async present(link: string): Promise<LeanPresentation> {
    const params = linkParams('request', link)
    const requestUri = params.get('request_uri')
    let jwt = params.get('request')
    if (requestUri !== null) {
      if (params.get('request_uri_method') === 'post') {
        throw protocolError('request', 'request_uri_method=post is not supported', 'unsupported')
      }
      const answer = await this.http('request', requestUri, {
        headers: { accept: REQUEST_OBJECT_MEDIA_TYPE },
      })
      if (!ok(answer)) throw httpError('request', answer, 'request object')
      jwt = answer.text.trim()
    }
    if (jwt === null)
      throw protocolError(
        'request',
        'the link has neither request_uri nor request (a signed request object is required)',
        'bad_link',
      )
    const decoded = decode('request', jwt, 'the request object')
    const { header, payload } = decoded
    if (header.typ !== undefined && header.typ !== REQUEST_OBJECT_TYP && header.typ !== JWT_TYP) {
      throw protocolError(
        'request',
        `request object typ ${JSON.stringify(header.typ)} is not ${REQUEST_OBJECT_TYP}`,
      )
    }
    const clientId = payload.client_id
    if (typeof clientId !== 'string') throw protocolError('request', 'the request object has no client_id')
    const linkClientId = params.get('client_id')
    if (linkClientId !== null && linkClientId !== clientId) {
      throw protocolError(
        'request',
        `client_id of the link (${linkClientId}) differs from the request object's (${clientId})`,
      )
    }
    verifyDecoded('request', decoded, requestKey(header, payload, clientId), 'the request object')
    if (typeof payload.exp === 'number' && payload.exp <= nowSeconds()) {
      throw protocolError(
        'request',
        `the request object expired at ${new Date(payload.exp * 1000).toISOString()}`,
        'expired',
      )
    }
    if (payload.response_mode !== 'direct_post') {
      throw protocolError(
        'request',
        `response_mode ${JSON.stringify(payload.response_mode)} is not direct_post`,
        'unsupported',
      )
    }
    const responseUri = payload.response_uri ?? payload.redirect_uri
    if (typeof responseUri !== 'string' || !/^https?:\/\//.test(responseUri)) {
      throw protocolError('request', 'the request object has no http(s) response_uri')
    }
    if (typeof payload.nonce !== 'string' || payload.nonce.length === 0)
      throw protocolError('request', 'the request object has no nonce')
    if (!isObject(payload.presentation_definition)) {
      throw protocolError(
        'request',
        'the request object has no presentation_definition (presentation_definition_uri and DCQL are not supported)',
        'unsupported',
      )
    }
    const state = typeof payload.state === 'string' ? payload.state : undefined
    return new Presentation(
      this,
      clientId,
      payload.nonce,
      payload.presentation_definition,
      responseUri,
      state,
    )
  }
}

/**
 * The key a request object must be signed with: a DID key of the client_id (client_id_scheme did, also
 * the `decentralized_identifier:` prefix), or the x5c leaf whose SAN is the client_id (x509_san_dns/uri;
 * the chain is not checked: a load wallet has no trust store).
 */
function requestKey(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  clientId: string,
): PublicKeyInfo {
  const scheme = typeof payload.client_id_scheme === 'string' ? payload.client_id_scheme : undefined
  if (Array.isArray(header.x5c) && typeof header.x5c[0] === 'string') {
    const cert = new X509Certificate(Buffer.from(header.x5c[0], 'base64'))
    const name = clientId.replace(/^x509_san_(dns|uri):/, '')
    const matches =
      scheme === 'x509_san_uri' || clientId.startsWith('x509_san_uri:')
        ? cert.checkHost(new URL(name).hostname)
        : cert.checkHost(name)
    if (!matches)
      throw protocolError(
        'request',
        `the request object certificate is not for client_id ${clientId}`,
        'bad_signature',
      )
    const key = cert.publicKey
    const alg =
      key.asymmetricKeyType === 'ed25519'
        ? 'EdDSA'
        : key.asymmetricKeyDetails?.namedCurve === 'prime256v1'
          ? 'ES256'
          : undefined
    if (!alg)
      throw protocolError(
        'request',
        'the request object certificate key is not Ed25519 or P-256',
        'unsupported_key',
      )
    return { key, alg }
  }
  const did = clientId.replace(/^decentralized_identifier:/, '')
  if (!did.startsWith('did:'))
    throw protocolError('request', `client_id ${clientId} is not a DID and no x5c was given`, 'unsupported')
  const kid = header.kid
  if (typeof kid !== 'string' || kid.split('#')[0] !== did) {
    throw protocolError(
      'request',
      `request object kid ${String(kid)} is not a key of client_id ${did}`,
      'bad_signature',
    )
  }
  return keyForKid('request', kid)
}

class Issuance implements LeanIssuance {
  private accessToken: string | undefined
  private cNonce: string | undefined
  private notificationId: string | undefined

  constructor(
    private readonly wallet: LeanWallet,
    private readonly info: IssuerInfo,
    readonly issuer: string,
    private readonly configurationId: string,
    private readonly preAuthorizedCode: string,
  ) {}

  async token(): Promise<void> {
    const body = new URLSearchParams({
      grant_type: PRE_AUTHORIZED_GRANT,
      'pre-authorized_code': this.preAuthorizedCode,
    })
    const answer = await this.wallet.http('token', this.info.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': FORM_MEDIA_TYPE, accept: 'application/json' },
      body: body.toString(),
    })
    if (!ok(answer)) throw httpError('token', answer, 'token request')
    const res = isObject(answer.body) ? answer.body : {}
    if (typeof res.access_token !== 'string')
      throw protocolError('token', 'the token response has no access_token')
    this.accessToken = res.access_token
    this.cNonce = typeof res.c_nonce === 'string' ? res.c_nonce : undefined
  }

  private bearer(step: LeanStep): Record<string, string> {
    if (!this.accessToken) throw protocolError(step, 'no access token: call token() first', 'usage')
    return { ...JSON_HEADERS, authorization: `Bearer ${this.accessToken}` }
  }

  /** A c_nonce from the token (or last credential) response, else from the nonce endpoint. */
  private async nonce(): Promise<string | undefined> {
    const saved = this.cNonce
    this.cNonce = undefined
    if (saved || !this.info.nonceEndpoint) return saved
    const answer = await this.wallet.http('credential', this.info.nonceEndpoint, {
      method: 'POST',
      headers: { accept: 'application/json' },
    })
    if (!ok(answer)) throw httpError('credential', answer, 'nonce request')
    const nonce = isObject(answer.body) ? answer.body.c_nonce : undefined
    if (typeof nonce !== 'string') throw protocolError('credential', 'the nonce endpoint answered no c_nonce')
    return nonce
  }

  private requestBody(nonce: string | undefined): string {
    const iat = nowSeconds()
    const jwt = this.wallet.sign('proof', {
      aud: this.issuer,
      iat,
      exp: iat + PROOF_LIFETIME_SECONDS,
      ...(nonce ? { nonce } : {}),
    })
    const configurations = this.info.metadata.credential_configurations_supported
    const configuration = isObject(configurations) ? configurations[this.configurationId] : undefined
    // format and credential_definition help draft-13 issuers; ours and oid4vci-issuer 0.20 ignore them.
    return JSON.stringify({
      credential_configuration_id: this.configurationId,
      ...(isObject(configuration) && typeof configuration.format === 'string'
        ? { format: configuration.format }
        : {}),
      ...(isObject(configuration) && isObject(configuration.credential_definition)
        ? { credential_definition: configuration.credential_definition }
        : {}),
      proof: { proof_type: 'jwt', jwt },
    })
  }

  async requestCredential(): Promise<
    { status: 200; credential: string } | { status: 202; transactionId: string }
  > {
    const headers = this.bearer('credential')
    let answer = await this.wallet.http('credential', this.info.credentialEndpoint, {
      method: 'POST',
      headers,
      body: this.requestBody(await this.nonce()),
    })
    const error = isObject(answer.body) ? answer.body : {}
    // A stale nonce comes back with a fresh one: one retry, as the spec intends.
    if (answer.status === 400 && error.error === 'invalid_nonce' && typeof error.c_nonce === 'string') {
      answer = await this.wallet.http('credential', this.info.credentialEndpoint, {
        method: 'POST',
        headers,
        body: this.requestBody(error.c_nonce),
      })
    }
    if (!ok(answer)) throw httpError('credential', answer, 'credential request')
    const res = isObject(answer.body) ? answer.body : {}
    if (typeof res.c_nonce === 'string') this.cNonce = res.c_nonce
    if (typeof res.transaction_id === 'string') return { status: 202, transactionId: res.transaction_id }
    return { status: 200, credential: this.take('credential', res) }
  }

  private take(step: LeanStep, res: Record<string, unknown>): string {
    if (typeof res.notification_id === 'string') this.notificationId = res.notification_id
    const first = Array.isArray(res.credentials) ? res.credentials[0] : undefined
    const credential = res.credential ?? (isObject(first) ? first.credential : first)
    if (credential === undefined)
      throw protocolError(step, 'the answer carries no credential and no transaction_id')
    return this.wallet.accept(step, credential)
  }

  async deferred(
    transactionId: string,
  ): Promise<{ status: 200; credential: string } | { status: 'pending' }> {
    if (!this.info.deferredEndpoint)
      throw protocolError('deferred', 'the issuer metadata has no deferred_credential_endpoint')
    const answer = await this.wallet.http('deferred', this.info.deferredEndpoint, {
      method: 'POST',
      headers: this.bearer('deferred'),
      body: JSON.stringify({ transaction_id: transactionId }),
    })
    const res = isObject(answer.body) ? answer.body : {}
    // issuance_pending (draft 13–15) or 202 (1.0) both mean "not yet".
    if ((answer.status === 400 && res.error === 'issuance_pending') || answer.status === 202)
      return { status: 'pending' }
    if (!ok(answer)) throw httpError('deferred', answer, 'deferred credential request')
    return { status: 200, credential: this.take('deferred', res) }
  }

  async notify(event: 'credential_accepted' | 'credential_failure' | 'credential_deleted'): Promise<void> {
    if (!this.info.notificationEndpoint || !this.notificationId) return
    const answer = await this.wallet.http('notify', this.info.notificationEndpoint, {
      method: 'POST',
      headers: this.bearer('notify'),
      body: JSON.stringify({ notification_id: this.notificationId, event }),
    })
    if (!ok(answer)) throw httpError('notify', answer, 'notification')
  }
}

interface Descriptor {
  id: string
  type: string | undefined
  required: boolean
}

/** The credential type a descriptor asks for: the `const` (or `contains.const`) of a field on a type path. */
function wantedType(descriptor: Record<string, unknown>): string | undefined {
  const constraints = isObject(descriptor.constraints) ? descriptor.constraints : {}
  const fields = Array.isArray(constraints.fields) ? constraints.fields : []
  for (const field of fields) {
    if (!isObject(field) || !Array.isArray(field.path) || !field.path.some((p) => String(p).includes('type')))
      continue
    const filter = isObject(field.filter) ? field.filter : {}
    if (typeof filter.const === 'string') return filter.const
    if (isObject(filter.contains) && typeof filter.contains.const === 'string') return filter.contains.const
  }
  return undefined
}

/** Descriptors with the type they want and whether the submission requirements need them answered. */
function descriptorsOf(definition: Record<string, unknown>): Descriptor[] {
  const list = Array.isArray(definition.input_descriptors)
    ? definition.input_descriptors.filter(isObject)
    : []
  const requirements = Array.isArray(definition.submission_requirements)
    ? definition.submission_requirements.filter(isObject)
    : []
  const allGroups = new Set(
    requirements.filter((r) => r.rule === 'all' && typeof r.from === 'string').map((r) => r.from),
  )
  return list.map((d) => ({
    id: String(d.id),
    type: wantedType(d),
    required: requirements.length === 0 || (Array.isArray(d.group) && d.group.some((g) => allGroups.has(g))),
  }))
}

function typesOf(jwt: string): unknown[] {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8'))
    const vc = isObject(payload?.vc) ? payload.vc : payload
    return Array.isArray(vc?.type) ? vc.type : []
  } catch {
    return []
  }
}

function pickFormat(formats: Record<string, unknown>, preferred: string, fallback: string): string {
  return preferred in formats || !(fallback in formats) ? preferred : fallback
}

class Presentation implements LeanPresentation {
  constructor(
    private readonly wallet: LeanWallet,
    readonly clientId: string,
    readonly nonce: string,
    readonly definition: Record<string, unknown>,
    private readonly responseUri: string,
    private readonly state: string | undefined,
  ) {}

  /** For each descriptor answered: the newest held credential of its type, else (if required) the fallback. */
  private choose(explicit: string | undefined): { id: string; credential: string }[] {
    const held = this.wallet.credentials
    const chosen: { id: string; credential: string }[] = []
    for (const d of descriptorsOf(this.definition)) {
      let credential: string | undefined
      if (explicit !== undefined) {
        if (d.required || (d.type !== undefined && typesOf(explicit).includes(d.type))) credential = explicit
      } else {
        for (let i = held.length - 1; i >= 0 && !credential; i--) {
          const c = held[i] as string
          if (d.type !== undefined && typesOf(c).includes(d.type)) credential = c
        }
        if (!credential && d.required) credential = held.at(-1)
      }
      if (credential) chosen.push({ id: d.id, credential })
    }
    return chosen
  }

  async respond(credential?: string): Promise<{ status: number; body: unknown }> {
    const chosen = this.choose(credential)
    if (chosen.length === 0)
      throw protocolError('response', 'the wallet holds no credential to present', 'no_credential')
    const credentials: string[] = []
    const formats = isObject(this.definition.format) ? this.definition.format : {}
    const vpFormat = pickFormat(formats, 'jwt_vp', 'jwt_vp_json')
    const vcFormat = pickFormat(formats, 'jwt_vc_json', 'jwt_vc')
    const descriptorMap = chosen.map(({ id, credential: c }) => {
      let index = credentials.indexOf(c)
      if (index < 0) index = credentials.push(c) - 1
      return {
        id,
        format: vpFormat,
        path: '$',
        path_nested: { id, format: vcFormat, path: `$.verifiableCredential[${index}]` },
      }
    })
    const vpToken = this.wallet.sign('vp', {
      iss: this.wallet.did,
      aud: this.clientId,
      nonce: this.nonce,
      iat: nowSeconds(),
      jti: `urn:uuid:${randomUUID()}`,
      vp: {
        '@context': [VC_CONTEXT_V1],
        type: ['VerifiablePresentation'],
        holder: this.wallet.did,
        verifiableCredential: credentials,
      },
    })
    const submission = { id: randomUUID(), definition_id: this.definition.id, descriptor_map: descriptorMap }
    const form = new URLSearchParams({
      ...(this.state !== undefined ? { state: this.state } : {}),
      presentation_submission: JSON.stringify(submission),
      vp_token: vpToken,
    })
    const answer = await this.wallet.http('response', this.responseUri, {
      method: 'POST',
      headers: { 'content-type': FORM_MEDIA_TYPE, accept: 'application/json' },
      body: form.toString(),
    })
    if (!ok(answer)) throw httpError('response', answer, 'authorization response')
    return { status: answer.status, body: answer.body }
  }
}
