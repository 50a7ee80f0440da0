// The authorization code flow of OpenID4VCI 1.0 (§5 authorization, §6 token) as HAIP 1.0 profiles it, for the
// 1.0 issuance path: the authorization server of the credential issuer's metadata (RFC 8414, read by
// issuance-v1.ts), a pushed authorization request (RFC 9126) with PKCE S256 (RFC 7636) and
// `authorization_details` (§5.1.1), the user step at the authorization endpoint, the authorization response
// checked (RFC 9207 §2.4 `iss`, RFC 6749 §4.1.2 `state`), and the token request with the code. Every request to
// the authorization server carries the wallet attestation and a fresh PoP (draft-ietf-oauth-attestation-
// based-client-auth-07, HAIP 1.0 §4.3) and a DPoP proof (RFC 9449); the access token must come back DPoP-bound,
// and the credential, nonce, deferred and notification requests then present it with a proof each
// (access-authorization.ts). The misbehaviours of this flow are authorization-tamper.ts's.

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto'
import { isObject } from '../shared/json.ts'
import { jwkThumbprint, type SignatureAlg } from '../shared/jws.ts'
import {
  ATTESTATION_HEADER,
  ATTESTATION_POP_HEADER,
  type AttestationSigner,
  createClientAttestation,
  createClientAttestationPop,
} from '../shared/oauth/client-attestation.ts'
import { newPkce } from '../shared/oauth/pkce.ts'
import { testWalletProviderSigner } from '../shared/oauth/test-wallet-provider.ts'
import {
  type AccessAuthorization,
  type DpopClaimsChange,
  DpopProver,
  dpopAuthorization,
  type HeaderOf,
  serverOf,
} from './access-authorization.ts'
import { AuthorizationTamper } from './authorization-tamper.ts'
import {
  parseWwwAuthenticate,
  protocolError,
  transportError,
  WalletProtocolError,
  type WalletStep,
  WalletUsageError,
} from './errors.ts'
import { type HttpAnswer, type HttpRequest, httpRequest, type WalletHttp } from './http.ts'
import type { V1Client } from './issuance-v1.ts'
import type { AuthorizationMisbehaviour } from './misbehaviour.ts'

/** How an issuance obtains its access token (OpenID4VCI 1.0 §3.4, §3.5). */
export type IssuanceFlow = 'pre-authorized_code' | 'authorization_code'
export const ISSUANCE_FLOWS: readonly IssuanceFlow[] = ['pre-authorized_code', 'authorization_code']

/** The authorization code grant of a credential offer (OpenID4VCI 1.0 §4.1.1) and of the token request. */
export const AUTHORIZATION_CODE_GRANT = 'authorization_code'
const PRE_AUTHORIZED_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:pre-authorized_code'
/** Where the authorization server sends the wallet back; `.invalid` (RFC 2606): nothing ever answers there. */
export const DEFAULT_REDIRECT_URI = 'https://wallet.vc-harness.invalid/callback'
/** The authorization_details type of OpenID4VCI 1.0 §5.1.1. */
export const OPENID_CREDENTIAL = 'openid_credential'
/** draft-ietf-oauth-attestation-based-client-auth-07 §8: a server's challenge for the PoP, and its error. */
const ATTESTATION_CHALLENGE_HEADER = 'oauth-client-attestation-challenge'
const USE_ATTESTATION_CHALLENGE = 'use_attestation_challenge'

/**
 * The user step: the authorization endpoint showed a page for a person instead of redirecting at once. The
 * callback opens `authorizationUrl` (a browser, Playwright), lets the person (or a script) finish, and answers
 * the URL the authorization server redirected to: the redirect_uri with the authorization response.
 */
export type UserStep = (
  authorizationUrl: string,
  answer: { status: number; location?: string | undefined },
) => Promise<string>

/** How the wallet takes part in the authorization code flow (WalletOptions.authorization, per receive too). */
export interface AuthorizationOptions {
  /** default DEFAULT_REDIRECT_URI */
  redirectUri?: string
  /**
   * Who signs the wallet attestation (§5.1); default the built-in TEST provider of
   * src/shared/oauth/test-wallet-provider.ts, which only a deployment configured to trust it accepts.
   */
  walletProvider?: AttestationSigner
  /** the wallet's client_id and attestation `sub`; default `vc-harness-wallet-<hash of the holder DID>` */
  clientId?: string
  /** the user step (see UserStep); without it a page for a person is a WalletProtocolError naming the URL */
  userStep?: UserStep
}

/** What the authorization step got: the code and what led to it. */
export interface AuthorizationGrant {
  code: string
  state: string
  /** the authorization response's `iss` (RFC 9207) */
  iss: string | undefined
  /** the authorization server's issuer identifier */
  authorizationServer: string
  /** the pushed authorization request's answer (RFC 9126 §2.2) */
  requestUri: string
  expiresIn: number
  /** what the wallet opened (RFC 9126 §4) and where it was sent back */
  authorizationUrl: string
  redirectUrl: string
  /** 'redirect': the authorization endpoint redirected at once; 'user-step': the userStep callback answered */
  via: 'redirect' | 'user-step'
}

// --- flow choice -----------------------------------------------------------------------------------------------

/**
 * Which flow an offer is redeemed with (OpenID4VCI 1.0 §4.1.1): the caller's choice when the offer grants it;
 * otherwise its pre-authorized code when it has one (as before), else the authorization code flow (an
 * `authorization_code` grant, or no grants at all: the wallet then finds the grant types in the metadata).
 */
export function chooseFlow(asked: IssuanceFlow | undefined, grants: unknown): IssuanceFlow {
  const offered = isObject(grants) ? grants : {}
  const preAuthorized = isObject(offered[PRE_AUTHORIZED_CODE_GRANT])
  const authorizationCode = isObject(offered[AUTHORIZATION_CODE_GRANT])
  const noGrants = Object.keys(offered).length === 0
  if (asked === 'pre-authorized_code') {
    if (preAuthorized) return asked
    throw new WalletUsageError(
      'the offer has no pre-authorized_code grant (OpenID4VCI 1.0 §4.1.1): redeem it with the authorization code flow (flow authorization_code)',
    )
  }
  if (asked === 'authorization_code') {
    if (authorizationCode || noGrants) return asked
    throw new WalletUsageError(
      'the offer grants a pre-authorized code only (OpenID4VCI 1.0 §4.1.1): it is not redeemed with the authorization code flow',
    )
  }
  if (preAuthorized) return 'pre-authorized_code'
  if (authorizationCode || noGrants) return 'authorization_code'
  throw new WalletProtocolError({
    step: 'offer',
    status: 200,
    error: 'invalid_credential_offer',
    errorDescription: `the offer grants neither a pre-authorized code nor an authorization code (OpenID4VCI 1.0 §4.1.1; grants: ${Object.keys(offered).join(', ')})`,
    body: grants,
  })
}

// --- the authorization response -------------------------------------------------------------------------------

export interface ExpectedAuthorizationResponse {
  redirectUri: string
  /** the state of the authorization request */
  state: string
  /** the authorization server's issuer identifier: where the request went */
  issuer: string
  /** the metadata's authorization_response_iss_parameter_supported (RFC 9207 §3) */
  issSupported: boolean
  /** refuse a response without iss even when the metadata does not promise one (HAIP; default true) */
  requireIss?: boolean
  /** the HTTP status that carried the redirect (0 when a user step handed it over) */
  status?: number
  /** the careless wallet (test only): iss and state are not checked, the code is taken as it comes */
  careless?: boolean
}

const refused = (status: number, description: string, body?: unknown) =>
  new WalletProtocolError({
    step: 'authorization',
    status,
    error: 'invalid_authorization_response',
    errorDescription: description,
    ...(body !== undefined && { body }),
  })

/**
 * Reads the authorization response the redirect URL carries and checks it before anything else is done with
 * it: sent to this wallet's redirect_uri; `iss` (RFC 9207 §2.4) the issuer the request went to, and present
 * (the metadata promises it, and this wallet, following HAIP, asks for it always); `state` the request's (RFC
 * 6749 §4.1.2, §10.12); then an error response is reported with its code (§4.1.2.1), else the code is answered.
 */
export function checkAuthorizationResponse(
  redirectUrl: string,
  expected: ExpectedAuthorizationResponse,
): { code: string; state: string; iss: string | undefined } {
  const status = expected.status ?? 0
  let url: URL
  try {
    url = new URL(redirectUrl)
  } catch {
    throw refused(status, `the authorization response ${JSON.stringify(redirectUrl)} is not a URL`)
  }
  const target = new URL(expected.redirectUri)
  if (url.origin !== target.origin || url.pathname !== target.pathname) {
    throw refused(
      status,
      `the authorization response went to ${url.origin}${url.pathname}, not this wallet's redirect_uri ${expected.redirectUri} (RFC 6749 §3.1.2)`,
    )
  }
  const params = url.searchParams
  const parameters = Object.fromEntries(params)
  const iss = params.get('iss') ?? undefined
  // RFC 9207 §2.4: compare iss first; an error response from another server must not be taken for this one's
  if (expected.careless) {
    // the careless wallet proves the plans discriminate: it takes any response (wallet-test careless-wallet.test.ts)
  } else if (iss === undefined) {
    if (expected.issSupported || expected.requireIss !== false) {
      throw refused(
        status,
        `iss (RFC 9207 §2.4): the authorization response has no iss, ${expected.issSupported ? `but the authorization server ${expected.issuer} says authorization_response_iss_parameter_supported` : `and this wallet (HAIP) requires it of ${expected.issuer}`}; a response without it cannot be told from another server's (mix-up, RFC 9207 §2.4): refused, the code is not redeemed`,
        parameters,
      )
    }
  } else if (iss !== expected.issuer) {
    throw refused(
      status,
      `iss (RFC 9207 §2.4): the authorization response names the issuer ${JSON.stringify(iss)}, not ${expected.issuer}, the authorization server the request went to (mix-up): refused, the code is not redeemed`,
      parameters,
    )
  }
  const state = params.get('state')
  if (state !== expected.state && !expected.careless) {
    throw refused(
      status,
      `state (RFC 6749 §4.1.2, §10.12): the authorization response carries ${state === null ? 'no state' : `the state ${JSON.stringify(state)}`}, not the ${JSON.stringify(expected.state)} of this wallet's authorization request: refused, the code is not redeemed`,
      parameters,
    )
  }
  const error = params.get('error')
  if (error !== null) {
    const description = params.get('error_description')
    throw new WalletProtocolError({
      step: 'authorization',
      status,
      error,
      errorDescription: `${description ?? 'the authorization server answered an error'} (error response, RFC 6749 §4.1.2.1)`,
      body: parameters,
    })
  }
  const code = params.get('code')
  if (!code) {
    throw refused(status, 'code (RFC 6749 §4.1.2): the authorization response carries no code', parameters)
  }
  return { code, state: state ?? expected.state, iss }
}

// --- the wallet instance ---------------------------------------------------------------------------------------

/** The wallet's key for DPoP proofs and the attestation's instance key (cnf.jwk, PoP signer). */
export interface InstanceKey {
  privateKey: KeyObject
  publicJwk: Record<string, unknown>
  alg: SignatureAlg
}

interface WalletInstance {
  key: InstanceKey
  /** the latest DPoP-Nonce of each server this wallet spoke to */
  dpopNonces: Map<string, string>
}

const instances = new WeakMap<object, WalletInstance>()

/**
 * The P-256 key of this wallet object (HAIP 1.0 asks for ES256), made on first use and kept in memory only:
 * it signs the DPoP proofs and the attestation PoPs, and the attestation binds it (cnf.jwk).
 */
export function instanceOf(wallet: object): WalletInstance {
  let instance = instances.get(wallet)
  if (!instance) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const { kty, crv, x, y } = publicKey.export({ format: 'jwk' })
    instance = { key: { privateKey, publicJwk: { kty, crv, x, y }, alg: 'ES256' }, dpopNonces: new Map() }
    instances.set(wallet, instance)
  }
  return instance
}

/** A stable client_id per wallet: its holder DID hashed, so it names the wallet without revealing the DID. */
export function defaultClientId(did: string): string {
  return `vc-harness-wallet-${createHash('sha256').update(did).digest('base64url').slice(0, 16)}`
}

/**
 * A wallet provider from its private JWK (a key file): EC P-256 signs ES256, OKP Ed25519 EdDSA (§5.1; HAIP
 * asks for ES256). `kid` the JWK's, else its thumbprint; `iss` the given issuer, else the thumbprint URN.
 */
export function walletProviderFromJwk(
  jwk: Record<string, unknown>,
  opts: { issuer?: string } = {},
): AttestationSigner {
  if (typeof jwk.d !== 'string')
    throw new WalletUsageError('the wallet provider key must be a private JWK (with d)')
  const alg: SignatureAlg | undefined =
    jwk.kty === 'EC' && jwk.crv === 'P-256'
      ? 'ES256'
      : jwk.kty === 'OKP' && jwk.crv === 'Ed25519'
        ? 'EdDSA'
        : undefined
  if (!alg) {
    throw new WalletUsageError(
      `the wallet provider key must be an EC P-256 (ES256) or OKP Ed25519 (EdDSA) JWK, not ${String(jwk.kty)} ${String(jwk.crv ?? '')}`,
    )
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey({ key: jwk as never, format: 'jwk' })
  } catch (error) {
    throw new WalletUsageError(`the wallet provider key is not a usable JWK: ${(error as Error).message}`)
  }
  const thumbprint = jwkThumbprint(
    createPublicKey(privateKey).export({ format: 'jwk' }) as Record<string, unknown>,
  )
  return {
    privateKey,
    alg,
    issuer: opts.issuer ?? `urn:ietf:params:oauth:jwk-thumbprint:sha-256:${thumbprint}`,
    kid: typeof jwk.kid === 'string' ? jwk.kid : thumbprint,
  }
}

// --- the flow --------------------------------------------------------------------------------------------------

const stringOf = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined

const headerOf =
  (answer: HttpAnswer): HeaderOf =>
  (name) =>
    answer.headers[name.toLowerCase()]

async function send(step: WalletStep, url: string, req: HttpRequest, http: WalletHttp): Promise<HttpAnswer> {
  try {
    return await httpRequest(url, req, http)
  } catch (error) {
    throw transportError(step, url, error)
  }
}

/** The authorization server's endpoints this flow uses, read from its RFC 8414 metadata. */
interface ServerEndpoints {
  issuer: string
  par: string
  authorization: string
  token: string
  issSupported: boolean
}

/** What a session of the flow needs from the wallet. */
export interface AuthorizationWallet {
  readonly did: string
  readonly http: WalletHttp
  /** The test-only careless wallet (WalletOptions.trustEverything): the response's iss and state go unchecked. */
  readonly trustEverything?: boolean | undefined
}

export interface AuthorizationFlowInput {
  /** the configurations asked for (the offer's, or the one a wallet-initiated request names) */
  configurationIds: readonly string[]
  /** the offer's authorization_code grant (issuer_state, authorization_server), when there was an offer */
  grant?: Record<string, unknown> | undefined
  options?: AuthorizationOptions | undefined
}

/**
 * One authorization code flow against the authorization server the issuer metadata names. Built at session
 * start: a server without what HAIP needs (PAR, an authorization and a token endpoint, S256, ES256 DPoP) is a
 * `metadata` WalletProtocolError before anything is sent to it.
 */
export class AuthorizationCodeFlow {
  readonly clientId: string
  readonly redirectUri: string
  readonly server: ServerEndpoints
  /** the authorization server's metadata as read (RFC 8414) */
  readonly serverMetadata: Record<string, unknown>
  readonly prover: DpopProver
  private readonly http: WalletHttp
  private readonly v1: V1Client
  private readonly input: AuthorizationFlowInput
  private readonly key: InstanceKey
  private readonly provider: AttestationSigner
  private readonly userStep: UserStep | undefined
  private readonly careless: boolean
  /** the server's latest attestation challenge (§8) */
  private challenge: string | undefined
  private pending: { verifier: string; state: string } | undefined
  private grant: AuthorizationGrant | undefined

  constructor(wallet: AuthorizationWallet, v1: V1Client, input: AuthorizationFlowInput) {
    const options = input.options ?? {}
    this.http = wallet.http
    this.v1 = v1
    this.input = input
    const instance = instanceOf(wallet)
    this.key = instance.key
    this.prover = new DpopProver(
      { privateKey: instance.key.privateKey, publicJwk: instance.key.publicJwk, alg: instance.key.alg },
      instance.dpopNonces,
    )
    this.clientId = options.clientId ?? defaultClientId(wallet.did)
    this.redirectUri = options.redirectUri ?? DEFAULT_REDIRECT_URI
    this.provider = options.walletProvider ?? testWalletProviderSigner()
    this.userStep = options.userStep
    this.careless = wallet.trustEverything === true
    const { metadata, endpoints } = this.readServer()
    this.serverMetadata = metadata
    this.server = endpoints
  }

  /**
   * The authorization server of the grant (`authorization_server`, OpenID4VCI 1.0 §4.1.1), else the first the
   * issuer metadata names (or the issuer itself), as issuance-v1.ts read it; and what HAIP needs of it.
   */
  private readServer(): { metadata: Record<string, unknown>; endpoints: ServerEndpoints } {
    const servers = this.v1.metadata.authorizationServers as unknown as Record<string, unknown>[]
    const hint = stringOf(this.input.grant?.authorization_server)
    const metadata = hint ? servers.find((s) => s.issuer === hint) : servers[0]
    const invalid = (description: string) =>
      new WalletProtocolError({
        step: 'metadata',
        status: 200,
        error: 'invalid_authorization_server_metadata',
        errorDescription: `${description}; nothing was sent to the authorization server`,
        body: metadata,
      })
    if (!metadata) {
      throw invalid(
        hint
          ? `the offer's authorization_server ${hint} is not one of the issuer metadata's authorization_servers (OpenID4VCI 1.0 §4.1.1)`
          : 'the credential issuer names no authorization server with metadata (RFC 8414 §3)',
      )
    }
    const issuer = stringOf(metadata.issuer) as string
    const par = stringOf(metadata.pushed_authorization_request_endpoint)
    const authorization = stringOf(metadata.authorization_endpoint)
    const token = stringOf(metadata.token_endpoint)
    // HAIP 1.0 (OpenID4VCI profile): the wallet always pushes its authorization request (RFC 9126)
    if (!par) {
      throw invalid(
        `the authorization server ${issuer} has no pushed_authorization_request_endpoint (RFC 9126 §5); this wallet follows HAIP 1.0 and always pushes its authorization request`,
      )
    }
    if (!authorization)
      throw invalid(`the authorization server ${issuer} has no authorization_endpoint (RFC 8414 §2)`)
    if (!token) throw invalid(`the authorization server ${issuer} has no token_endpoint (RFC 8414 §2)`)
    const challengeMethods = metadata.code_challenge_methods_supported
    if (Array.isArray(challengeMethods) && !challengeMethods.includes('S256')) {
      throw invalid(
        `the authorization server ${issuer} lists code_challenge_methods_supported ${JSON.stringify(challengeMethods)} without S256 (RFC 7636 §4.2; HAIP asks for S256)`,
      )
    }
    const dpopAlgs = metadata.dpop_signing_alg_values_supported
    if (Array.isArray(dpopAlgs) && !dpopAlgs.includes(this.key.alg)) {
      throw invalid(
        `the authorization server ${issuer} lists dpop_signing_alg_values_supported ${JSON.stringify(dpopAlgs)} without ${this.key.alg}, the algorithm of this wallet's DPoP key (RFC 9449 §5.1; HAIP asks for ES256)`,
      )
    }
    return {
      metadata,
      endpoints: {
        issuer,
        par,
        authorization,
        token,
        issSupported: metadata.authorization_response_iss_parameter_supported === true,
      },
    }
  }

  /** The grant the last authorize() got. */
  get authorizationGrant(): AuthorizationGrant | undefined {
    return this.grant
  }

  /** OpenID4VCI 1.0 §5.1.1: one openid_credential entry per configuration; `locations` when the AS is separate. */
  private authorizationDetails(): Record<string, unknown>[] {
    const metadata = this.v1.metadata.credentialIssuer
    const separate =
      Array.isArray(metadata.authorization_servers) && metadata.authorization_servers.length > 0
    return this.input.configurationIds.map((id) => ({
      type: OPENID_CREDENTIAL,
      credential_configuration_id: id,
      ...(separate && { locations: [metadata.credential_issuer] }),
    }))
  }

  /** The configurations' `scope` values (§5.1.2), sent beside the authorization_details. */
  private scope(): string | undefined {
    const configurations = this.v1.metadata.credentialIssuer.credential_configurations_supported
    const scopes = this.input.configurationIds.flatMap((id) => {
      const scope = (configurations[id] as Record<string, unknown> | undefined)?.scope
      return typeof scope === 'string' && scope.length > 0 ? [scope] : []
    })
    return scopes.length > 0 ? [...new Set(scopes)].join(' ') : undefined
  }

  /**
   * The client authentication of every request to the authorization server (attestation-based-client-auth-07
   * §6.1): the provider's attestation of this wallet's instance key, and a PoP for this server (aud = its
   * issuer identifier, §5.2) with the server's latest challenge (§8).
   */
  private attestationHeaders(tamper: AuthorizationTamper): Record<string, string> {
    const provider = tamper.apply('attestation.provider', this.provider)
    const attestation = createClientAttestation(provider, {
      clientId: this.clientId,
      instanceJwk: this.key.publicJwk,
    })
    const pop = createClientAttestationPop(
      { privateKey: this.key.privateKey, alg: this.key.alg },
      {
        clientId: this.clientId,
        audience: tamper.apply('attestation.popAudience', this.server.issuer),
        ...(this.challenge !== undefined && { challenge: this.challenge }),
      },
    )
    return { [ATTESTATION_HEADER]: attestation, [ATTESTATION_POP_HEADER]: pop }
  }

  /**
   * One form POST to the authorization server (PAR, token) with the attestation, its PoP and a DPoP proof. A
   * 400 asking for a DPoP nonce (RFC 9449 §8) or an attestation challenge (attestation-based-client-auth-07 §8)
   * is retried once each with what the answer's header gave; every answer's nonce is remembered.
   */
  private async post(
    step: 'par' | 'token',
    url: string,
    form: Record<string, string>,
    tamper: AuthorizationTamper,
    dpopChange?: DpopClaimsChange,
  ): Promise<HttpAnswer> {
    const retried = new Set<string>()
    for (;;) {
      const headers = {
        ...this.attestationHeaders(tamper),
        dpop: this.prover.proof('POST', url, dpopChange ? { change: dpopChange } : {}),
      }
      const answer = await send(step, url, { method: 'POST', form, headers }, this.http)
      const header = headerOf(answer)
      const nonce = this.prover.note(url, header)
      const challenge = header(ATTESTATION_CHALLENGE_HEADER)
      if (challenge) this.challenge = challenge
      if (answer.status >= 200 && answer.status < 300) return answer
      const error =
        isObject(answer.body) && typeof answer.body.error === 'string'
          ? answer.body.error
          : parseWwwAuthenticate(header('www-authenticate')).error
      if (error === 'use_dpop_nonce' && nonce && !retried.has(error)) {
        retried.add(error)
        continue
      }
      if (error === USE_ATTESTATION_CHALLENGE && challenge && !retried.has(error)) {
        retried.add(error)
        continue
      }
      return answer
    }
  }

  /**
   * The authorization step: the pushed authorization request (RFC 9126 §2.1: response_type code, client_id,
   * redirect_uri, PKCE S256, state, authorization_details, scope, issuer_state), then the authorization endpoint
   * with client_id and request_uri (§4) without following redirects: a redirect to the redirect_uri is the
   * authorization response; anything else is the user step (the `userStep` callback, else a WalletProtocolError
   * naming the URL to open). The response is checked (checkAuthorizationResponse) before its code is kept.
   */
  async authorize(
    opts: { misbehave?: readonly AuthorizationMisbehaviour[]; userStep?: UserStep } = {},
  ): Promise<AuthorizationGrant> {
    const tamper = new AuthorizationTamper(opts.misbehave)
    const pkce = newPkce()
    const state = randomBytes(16).toString('base64url')
    const scope = this.scope()
    const issuerState = stringOf(this.input.grant?.issuer_state)
    const form: Record<string, string> = {
      response_type: 'code',
      client_id: this.clientId,
      redirect_uri: this.redirectUri,
      code_challenge: pkce.challenge,
      code_challenge_method: pkce.method,
      state,
      authorization_details: JSON.stringify(this.authorizationDetails()),
      ...(scope !== undefined && { scope }),
      // OpenID4VCI 1.0 §5.1.3: the offer's issuer_state goes back to the issuer with the request
      ...(issuerState !== undefined && { issuer_state: issuerState }),
    }
    const par = await this.post('par', this.server.par, form, tamper)
    if (par.status < 200 || par.status >= 300) {
      throw protocolError('par', par.status, par.body, par.headers['www-authenticate'])
    }
    const requestUri = isObject(par.body) ? stringOf(par.body.request_uri) : undefined
    const expiresIn = isObject(par.body) ? par.body.expires_in : undefined
    if (!requestUri || typeof expiresIn !== 'number' || !(expiresIn > 0)) {
      throw new WalletProtocolError({
        step: 'par',
        status: par.status,
        error: 'invalid_par_response',
        errorDescription: `the pushed authorization response must carry request_uri and a positive expires_in (RFC 9126 §2.2); got ${JSON.stringify(par.body)}`,
        body: par.body,
      })
    }
    this.pending = { verifier: pkce.verifier, state }

    const authorizationUrl = new URL(this.server.authorization)
    authorizationUrl.searchParams.set('client_id', this.clientId)
    authorizationUrl.searchParams.set('request_uri', requestUri)
    const opened = authorizationUrl.href
    const answer = await send(
      'authorization',
      opened,
      { method: 'GET', redirect: 'manual', accept: 'text/html, application/json' },
      this.http,
    )
    const location = answer.headers.location ? new URL(answer.headers.location, opened).href : undefined
    const redirected = answer.status >= 300 && answer.status < 400 && location !== undefined
    let redirectUrl: string
    let via: AuthorizationGrant['via']
    if (redirected && isAt(location, this.redirectUri)) {
      redirectUrl = location
      via = 'redirect'
    } else if (answer.status >= 400) {
      // the authorization server refused the request itself (RFC 6749 §4.1.2.1: no redirect then)
      throw protocolError('authorization', answer.status, answer.body, answer.headers['www-authenticate'])
    } else {
      const userStep = opts.userStep ?? this.userStep
      if (!userStep) {
        throw new WalletProtocolError({
          step: 'authorization',
          status: answer.status,
          error: 'interaction_required',
          errorDescription: `the authorization endpoint answered ${answer.status}${redirected ? ` with a redirect to ${location}` : ''}, not a redirect to the redirect_uri ${this.redirectUri}: a person has to authorize. Open ${opened} in a browser, or give the wallet a userStep (AuthorizationOptions.userStep; CLI --interactive)`,
          body: answer.body,
        })
      }
      redirectUrl = await userStep(opened, { status: answer.status, location })
      via = 'user-step'
    }
    const response = checkAuthorizationResponse(redirectUrl, {
      redirectUri: this.redirectUri,
      state,
      issuer: this.server.issuer,
      issSupported: this.server.issSupported,
      status: via === 'redirect' ? answer.status : 0,
      careless: this.careless,
    })
    this.grant = {
      code: response.code,
      state,
      iss: response.iss,
      authorizationServer: this.server.issuer,
      requestUri,
      expiresIn,
      authorizationUrl: opened,
      redirectUrl,
      via,
    }
    return this.grant
  }

  /**
   * The token request (RFC 6749 §4.1.3, RFC 7636 §4.5): grant_type authorization_code, the code, the
   * redirect_uri and code_verifier of the authorization request, client_id; attestation, PoP and DPoP
   * headers. The answer must be a DPoP-bound token (RFC 9449 §5). 'code-replay' redeems the code once more
   * after success and answers the second answer.
   */
  async token(
    opts: { misbehave?: readonly AuthorizationMisbehaviour[] } = {},
  ): Promise<Record<string, unknown>> {
    if (!this.grant || !this.pending)
      throw new WalletUsageError('no authorization code yet: call authorize() first')
    const tamper = new AuthorizationTamper(opts.misbehave)
    const form: Record<string, string> = {
      grant_type: AUTHORIZATION_CODE_GRANT,
      code: this.grant.code,
      redirect_uri: tamper.apply('token.redirectUri', this.redirectUri),
      code_verifier: tamper.apply('token.codeVerifier', this.pending.verifier),
      client_id: this.clientId,
    }
    // the replayed jti is the proof's before this request (PAR's), fixed before any retry
    const previous = this.prover.lastJti
    const change = tamper.dpopChange()
    const dpopChange: DpopClaimsChange | undefined = change
      ? (claims, ctx) => change(claims, { ...ctx, previousJti: previous })
      : undefined
    const redeem = async () => tokenOf(await this.post('token', this.server.token, form, tamper, dpopChange))
    let token = await redeem()
    if (tamper.acts('token.replay')) token = await redeem()
    return token
  }

  /** The access token for the resource requests: DPoP-bound, a fresh proof per request (RFC 9449 §7.1). */
  access(
    accessToken: string,
    opts: { misbehave?: readonly AuthorizationMisbehaviour[] } = {},
  ): AccessAuthorization {
    const scheme = new AuthorizationTamper(opts.misbehave).apply('credential.scheme', 'DPoP')
    return dpopAuthorization(accessToken, this.prover, { scheme })
  }

  /** The server this flow's DPoP nonces are kept for (tests). */
  get tokenServer(): string {
    return serverOf(this.server.token)
  }
}

/** Whether `url` is at the redirect URI (origin and path; the response parameters are in its query). */
function isAt(url: string, redirectUri: string): boolean {
  const a = new URL(url)
  const b = new URL(redirectUri)
  return a.origin === b.origin && a.pathname === b.pathname
}

/** A token answer: 2xx, an access_token, and token_type DPoP (the request carried a DPoP proof, RFC 9449 §5). */
function tokenOf(answer: HttpAnswer): Record<string, unknown> {
  if (answer.status < 200 || answer.status >= 300) {
    throw protocolError('token', answer.status, answer.body, answer.headers['www-authenticate'])
  }
  const token = answer.body
  const invalid = (description: string) =>
    new WalletProtocolError({
      step: 'token',
      status: answer.status,
      error: 'invalid_token_response',
      errorDescription: description,
      body: token,
    })
  if (!isObject(token) || typeof token.access_token !== 'string' || token.access_token.length === 0) {
    throw invalid('no access_token (RFC 6749 §5.1)')
  }
  // token_type is case-insensitive (RFC 6749 §5.1)
  if (typeof token.token_type !== 'string' || token.token_type.toLowerCase() !== 'dpop') {
    throw invalid(
      `token_type (RFC 9449 §5): the token request carried a DPoP proof, so the access token must be DPoP-bound (token_type DPoP), not ${JSON.stringify(token.token_type)}: a Bearer token in its place is refused`,
    )
  }
  return token
}
