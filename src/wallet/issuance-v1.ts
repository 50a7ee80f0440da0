// The OpenID4VCI 1.0 Final path of an issuance, on @openid4vc/openid4vci 0.4.6 (OpenWallet Foundation):
// discovery (§12.2.2 well-known inserted after the host, appended form as fallback; authorization server
// metadata per RFC 8414 §3.1, never guessed), the token request (§6), the nonce endpoint (§7), the credential
// request with `proofs` (§8.2), the deferred endpoint (§9, 202 while pending) and notifications (§11).
// @sphereon/oid4vci-client 0.20.1 speaks none of this (appended well-known only, singular `proof`), so it keeps
// the draft-15 path (issuance.ts). Every library call's HTTP answer is recorded, so a refusal becomes the same
// WalletProtocolError (step, status, wire error) as on the draft-15 path; requests the library refuses to
// build (the legacy-shape and token misbehaviours) go out as plain HTTP to the endpoints it discovered.

import { createHash, randomBytes } from 'node:crypto'
import { clientAuthenticationAnonymous, type JwtSigner as OwfSigner } from '@openid4vc/oauth2'
import {
  type CredentialOfferObject,
  type IssuerMetadataResult,
  Openid4vciClient,
  Openid4vciVersion,
  setGlobalConfig,
} from '@openid4vc/openid4vci'
import type { EndpointMetadataResultV1_0_15 } from '@sphereon/oid4vci-common'
import { resolveDidKey } from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import { PROOF_TYP } from '../shared/wire.ts'
import { type AccessAuthorization, accessOf } from './access-authorization.ts'
import {
  protocolError,
  transportError,
  WalletProtocolError,
  type WalletStep,
  WalletUsageError,
} from './errors.ts'
import { boundedFetch, type HttpAnswer, httpRequest, type WalletHttp } from './http.ts'
import type { Misbehaviour } from './misbehaviour.ts'
import { buildTokenRequest, type JwtSigner, signProofJwt } from './proof.ts'
import { tamperOf } from './tamper.ts'

// The library refuses every http:// URL unless told otherwise, and the setting is process-global: the
// wallet tests local deployments (http://127.0.0.1:…), so it allows them.
setGlobalConfig({ allowInsecureUrls: true })

/** Which OpenID4VCI generation to speak: `auto` picks 1.0 when the metadata says 1.0 (see chooseProtocol). */
export type IssuanceProtocol = 'auto' | '1.0' | 'draft15'
export const ISSUANCE_PROTOCOLS: readonly IssuanceProtocol[] = ['auto', '1.0', 'draft15']

/** A raw answer: the status, the parsed body and the `WWW-Authenticate` header. */
export interface WireAnswer {
  status: number
  body: unknown
  wwwAuthenticate?: string | undefined
}

/** What the proof needs from the wallet. */
export interface V1ProofInput {
  signer: JwtSigner
  /** the holder's did:key URL (`kid` header) and public JWK (`jwk` header) */
  publicJwk: JsonWebKey
  configurationId: string
  /** the nonce as the proof carries it ('wrong-nonce' applied by the caller: one for every proof of a batch) */
  nonce: string
  misbehave: readonly Misbehaviour[]
  privateJwk?: JsonWebKey | undefined
  /** a key attestation of the signer's key for the `key_attestation` header (Appendix D, F.1) */
  keyAttestation?: string | undefined
  /** 'key-attestation-foreign-key': a key attestation like it, of another key */
  foreignKeyAttestation?: (() => string) | undefined
}

/** The key proofs of one credential request (1.0 §8.2 `proofs`: one proof type, one or more proofs). */
export type V1Proofs = { jwt: string[] } | { attestation: [string] }

const INVALID_ANSWER: Partial<Record<WalletStep, string>> = {
  metadata: 'invalid_issuer_metadata',
  token: 'invalid_token_response',
  nonce: 'invalid_nonce_response',
  credential: 'invalid_credential_response',
  deferred: 'invalid_credential_response',
  notification: 'invalid_notification_response',
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function parse(text: string): unknown {
  if (text.length === 0) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** The 1.0 metadata signal the OWF client uses itself: any configuration with `credential_metadata`. */
export function isV1Metadata(metadata: IssuerMetadataResult): boolean {
  return metadata.originalDraftVersion === Openid4vciVersion.V1
}

/**
 * The issuer metadata names another credential_issuer than the offer: OpenID4VCI 1.0 §12.2.2 says the data
 * of such a response MUST NOT be used. Raised on both paths, before the pre-authorized code is redeemed.
 */
export class IssuerMismatchError extends WalletProtocolError {
  override name = 'IssuerMismatchError'
  constructor(found: unknown, expected: string, url: string | undefined, body?: unknown) {
    super({
      step: 'metadata',
      status: 200,
      error: 'invalid_issuer_metadata',
      errorDescription: `credential_issuer (OpenID4VCI 1.0 §12.2.2): the issuer metadata${url ? ` at ${url}` : ''} names credential_issuer ${JSON.stringify(found)}, not the offer's ${expected}; metadata whose credential_issuer differs MUST NOT be used. The pre-authorized code was not redeemed.`,
      body,
    })
  }
}

export interface V1ClientOptions {
  /**
   * The careless wallet (WalletOptions.trustEverything): issuer metadata naming another credential_issuer is
   * used anyway (the library, which refuses it, is shown the offer's identifier instead). Test-only.
   */
  trustEverything?: boolean
}

const METADATA_PATH = '/.well-known/openid-credential-issuer'

export class V1Client {
  readonly metadata: IssuerMetadataResult
  readonly offer: CredentialOfferObject
  /**
   * the wallet's HTTP client: the library's requests go through boundedFetch of it, the ones it will not
   * send (misbehaviours) through httpRequest; the same deadline, body cap and no-redirect rule for both
   */
  private readonly http: WalletHttp
  private readonly options: V1ClientOptions
  private last: WireAnswer | undefined
  /** the URL and error of a request of the current call that got no answer (network, or an http.ts rule) */
  private unreachable: { url: string; error: unknown } | undefined
  private mismatch: IssuerMismatchError | undefined

  private constructor(
    http: WalletHttp,
    offer: CredentialOfferObject,
    metadata: IssuerMetadataResult,
    options: V1ClientOptions = {},
  ) {
    this.http = http
    this.offer = offer
    this.metadata = metadata
    this.options = options
  }

  /** Validates the offer with the library and reads the issuer and authorization server metadata. */
  static async discover(offerJson: Record<string, unknown>, http: WalletHttp, options: V1ClientOptions = {}) {
    const probe = new V1Client(http, offerJson as CredentialOfferObject, undefined as never, options)
    const client = probe.client()
    const offer = await probe.call('offer', () =>
      client.resolveCredentialOffer(
        `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify(offerJson))}`,
      ),
    )
    const metadata = await probe.call('metadata', () => client.resolveIssuerMetadata(offer.credential_issuer))
    return new V1Client(http, offer, metadata, options)
  }

  /**
   * A credential issuer metadata answer whose credential_issuer is not the offer's: the careful wallet notes
   * it (the library refuses it too, with a message that names no clause; `call` reports this one instead),
   * the careless one shows the library the offer's identifier.
   */
  private async checkIssuer(url: string, response: Response): Promise<Response> {
    const expected = this.offer.credential_issuer
    if (!url.includes(METADATA_PATH) || response.status !== 200) return response
    let body: unknown
    try {
      body = JSON.parse(await response.clone().text())
    } catch {
      return response // signed metadata (a JWT) or garbage: the library judges it
    }
    if (!isObject(body) || body.credential_issuer === expected) return response
    if (!this.options.trustEverything) {
      this.mismatch = new IssuerMismatchError(body.credential_issuer, expected, url, body)
      return response
    }
    return new Response(JSON.stringify({ ...body, credential_issuer: expected }), {
      status: response.status,
      headers: response.headers,
    })
  }

  /**
   * A library client whose fetch records every answer; `signJwt` signs proofs (the only JWTs it makes). The
   * library's fetch is the wallet's (its `fetch` option, else the global fetch) within the wallet's deadline,
   * body cap and no-redirect rule (boundedFetch, http.ts). With `auth`, every request carries the access token
   * as `auth` says (the library's own `Authorization: Bearer` replaced: Bearer, or DPoP with a fresh proof),
   * and an answer asking for a DPoP nonce is retried once (RFC 9449 §9) before the library sees it.
   */
  private client(
    signJwt?: (signer: OwfSigner, jwt: { header: object; payload: object }) => Promise<string>,
    auth?: AccessAuthorization,
  ) {
    const bounded = boundedFetch(this.http)
    const base = auth
      ? async (input: string | URL | Request, init?: RequestInit) => {
          const url = String(input instanceof Request ? input.url : input)
          const method = (init?.method ?? 'GET').toUpperCase()
          for (let attempt = 0; ; attempt++) {
            const headers = new Headers(init?.headers)
            headers.delete('authorization')
            for (const [name, value] of Object.entries(auth.headers(method, url))) headers.set(name, value)
            const response = await bounded(input, { ...init, headers })
            const again = auth.retry(url, response.status, (name) => response.headers.get(name) ?? undefined)
            if (!again || attempt > 0) return response
          }
        }
      : bounded
    const recording = async (input: string | URL | Request, init?: RequestInit) => {
      let response: Response
      try {
        response = await base(input, init)
      } catch (error) {
        this.unreachable = { url: String(input instanceof Request ? input.url : input), error }
        throw error
      }
      response = await this.checkIssuer(String(input instanceof Request ? input.url : input), response)
      const text = await response.clone().text()
      this.last = {
        status: response.status,
        body: parse(text),
        wwwAuthenticate: response.headers.get('www-authenticate') ?? undefined,
      }
      return response
    }
    return new Openid4vciClient({
      callbacks: {
        fetch: recording as never,
        hash: (data, alg) => new Uint8Array(createHash(alg.replace('-', '')).update(data).digest()),
        generateRandom: (length) => new Uint8Array(randomBytes(length)),
        // anonymous pre-authorized access: no client_id (1.0 §6.1, §12.3)
        clientAuthentication: clientAuthenticationAnonymous(),
        signJwt: async (signer, jwt) => {
          if (!signJwt) throw new Error('this client signs nothing')
          // the library compares the signer's key with a key attestation's attested_keys (Appendix F.1)
          const signerJwk =
            signer.method === 'jwk'
              ? signer.publicJwk
              : signer.method === 'did'
                ? resolveDidKey(signer.didUrl).publicJwk
                : {}
          return { jwt: await signJwt(signer, jwt), signerJwk: signerJwk as never }
        },
      },
    })
  }

  /**
   * Runs one library call; a refusal becomes the WalletProtocolError of the last answer it got (a non-2xx
   * answer: its wire error; a 2xx answer the library rejected: `invalid_…_response`), a failure before
   * anything was sent a WalletUsageError.
   */
  private async call<T>(step: WalletStep, run: () => Promise<T>): Promise<T> {
    this.last = undefined
    this.unreachable = undefined
    this.mismatch = undefined
    try {
      return await run()
    } catch (error) {
      if (error instanceof WalletProtocolError || error instanceof WalletUsageError) throw error
      if (this.mismatch) throw this.mismatch
      // set by the recording fetch while the call ran (TypeScript cannot see that)
      const last = this.last as WireAnswer | undefined
      const unreachable = this.unreachable as { url: string; error: unknown } | undefined
      if (unreachable) throw transportError(step, unreachable.url, unreachable.error)
      if (!last) throw new WalletUsageError(`@openid4vc/openid4vci (${step}): ${message(error)}`)
      if (last.status < 200 || last.status >= 300) {
        throw protocolError(step, last.status, last.body, last.wwwAuthenticate)
      }
      throw new WalletProtocolError({
        step,
        status: last.status,
        error: INVALID_ANSWER[step] ?? 'invalid_response',
        errorDescription: message(error),
        body: last.body,
      })
    }
  }

  /** A request the library will not send, through the wallet's HTTP client. */
  private async send(step: WalletStep, url: string, req: Parameters<typeof httpRequest>[1]) {
    try {
      return await httpRequest(url, req, this.http)
    } catch (error) {
      throw transportError(step, url, error)
    }
  }

  /**
   * A request to a protected resource the library will not send: the access token as `auth` says (`withToken`
   * false: no Authorization header, the token travels elsewhere), one retry when the answer asks for a DPoP
   * nonce (RFC 9449 §9).
   */
  private async sendAuthorized(
    step: WalletStep,
    url: string,
    req: Parameters<typeof httpRequest>[1],
    auth: AccessAuthorization,
    withToken: boolean,
  ): Promise<HttpAnswer> {
    for (let attempt = 0; ; attempt++) {
      const headers = auth.headers(req.method, url, { withToken })
      const answer = await this.send(step, url, { ...req, headers: { ...req.headers, ...headers } })
      const again = auth.retry(url, answer.status, (name) => answer.headers[name.toLowerCase()])
      if (!again || attempt > 0) return answer
    }
  }

  /**
   * The authorization server of the offer's grant (pre-authorized, else authorization code: 1.0 §4.1.1), else
   * the first one.
   */
  get tokenEndpoint(): string {
    const grants = this.offer.grants
    const grant =
      grants?.['urn:ietf:params:oauth:grant-type:pre-authorized_code'] ?? grants?.authorization_code
    const servers = this.metadata.authorizationServers
    const server = servers.find((s) => s.issuer === grant?.authorization_server) ?? servers[0]
    if (!server?.token_endpoint)
      throw new WalletUsageError('no token_endpoint in the authorization server metadata')
    return server.token_endpoint
  }

  /**
   * 1.0 §6.1: form-encoded `grant_type`, `pre-authorized_code`, `tx_code` (iff the offer announced one). The
   * token misbehaviours are requests the library would not send: they go out as plain HTTP.
   */
  async token(opts: { txCode?: string; misbehave: readonly Misbehaviour[] }): Promise<WireAnswer> {
    const { misbehave } = opts
    if (tamperOf(misbehave).acts('token.txCode')) {
      const spec = this.offer.grants?.['urn:ietf:params:oauth:grant-type:pre-authorized_code']?.tx_code
      const form = buildTokenRequest({
        preAuthorizedCode: this.preAuthorizedCode,
        ...(opts.txCode !== undefined && { txCode: opts.txCode }),
        ...(spec && { txCodeSpec: spec }),
        misbehave,
      })
      delete form.user_pin // a draft parameter; 1.0 has tx_code only
      const answer = await this.send('token', this.tokenEndpoint, { method: 'POST', form })
      return { status: answer.status, body: answer.body, wwwAuthenticate: answer.headers['www-authenticate'] }
    }
    const client = this.client()
    const result = await this.call('token', () =>
      client.retrievePreAuthorizedCodeAccessTokenFromOffer({
        credentialOffer: this.offer,
        issuerMetadata: this.metadata,
        ...(opts.txCode !== undefined && { txCode: opts.txCode }),
      }),
    )
    return { status: this.last?.status ?? 200, body: result.accessTokenResponse }
  }

  get preAuthorizedCode(): string {
    const grant = this.offer.grants?.['urn:ietf:params:oauth:grant-type:pre-authorized_code']
    return grant?.['pre-authorized_code'] ?? ''
  }

  /**
   * 1.0 §7: POST nonce_endpoint, no body; no token unless `access` is given (the authorization code flow sends
   * its DPoP-bound token and a proof, so the issuer can hand out its DPoP nonce there too).
   */
  async nonce(access?: AccessAuthorization): Promise<string> {
    if (!this.metadata.credentialIssuer.nonce_endpoint) {
      throw new WalletUsageError('the issuer metadata has no nonce_endpoint')
    }
    const client = this.client(undefined, access)
    const { c_nonce } = await this.call('nonce', () => client.requestNonce({ issuerMetadata: this.metadata }))
    return c_nonce
  }

  /**
   * The key proof (1.0 Appendix F.1), laid out by the library: header `typ`, `alg` and `kid` (the holder's
   * did:key URL) — or `jwk` when the configuration binds to `jwk` or `cose_key` (an mdoc's device key, Appendix
   * A.2) but not to DIDs — and `key_attestation` when given (Appendix F.1; the library checks that the signing
   * key is one of its attested_keys), payload `aud`, `iat`, `nonce`; the misbehaviours are applied as on the
   * draft-15 path, then the key signs.
   */
  async proof(input: V1ProofInput): Promise<string> {
    const configuration =
      this.metadata.credentialIssuer.credential_configurations_supported[input.configurationId]
    const methods = configuration?.cryptographic_binding_methods_supported ?? []
    const useJwk =
      (methods.includes('jwk') || methods.includes('cose_key')) &&
      !methods.some((m) => m === 'did:key' || m === 'did')
    const signer: OwfSigner = useJwk
      ? { method: 'jwk', alg: input.signer.alg, publicJwk: input.publicJwk as never }
      : { method: 'did', alg: input.signer.alg, didUrl: input.signer.kid }
    const { nonce } = input
    const client = this.client((_signer, jwt) =>
      signProofJwt(
        input.signer,
        { header: { ...jwt.header, typ: PROOF_TYP }, payload: { ...jwt.payload } },
        {
          misbehave: input.misbehave,
          privateJwk: input.privateJwk,
          foreignKeyAttestation: input.foreignKeyAttestation,
        },
      ),
    )
    const { jwt } = await this.call('credential', () =>
      client.createCredentialRequestJwtProof({
        issuerMetadata: this.metadata,
        credentialConfigurationId: input.configurationId,
        signer,
        nonce,
        ...(input.keyAttestation !== undefined && { keyAttestationJwt: input.keyAttestation }),
      }),
    )
    return jwt
  }

  /**
   * 1.0 §8.2: `{credential_configuration_id, proofs}`, `proofs` `{jwt: [proof, …]}` (several: a batch, one
   * proof per key) or `{attestation: [key attestation]}` (Appendix F.3). 'legacy-proof' sends the draft
   * singular `proof` instead; 'legacy-format-request' identifies the credential by `format` +
   * `credential_definition` (jwt_vc_json, draft 13) or `vct` (SD-JWT, draft 14); 'missing-proof' sends no
   * proof, 'unknown-configuration' and 'unknown-credential-identifier' name a credential the issuer does not
   * have or did not grant, 'token-in-query' puts the access token into the URL: all as plain HTTP. With a
   * `credentialIdentifier` (one the token response's authorization_details granted, §6.2) the request names it
   * instead of the configuration (§8.2), as plain HTTP too: the library sends configuration ids only.
   */
  async credential(
    access: AccessAuthorization | string,
    configurationId: string,
    proofs: V1Proofs,
    misbehave: readonly Misbehaviour[],
    opts: { credentialIdentifier?: string | undefined } = {},
  ): Promise<WireAnswer> {
    const auth = accessOf(access)
    // Shapes the library refuses to send (legacy requests, an unsigned proof) go out as plain HTTP.
    const tamper = tamperOf(misbehave)
    if (tamper.acts('credential.plainHttp') || opts.credentialIdentifier !== undefined) {
      const configuration =
        this.metadata.credentialIssuer.credential_configurations_supported[configurationId]
      const json = tamper.apply(
        'credential.request',
        opts.credentialIdentifier !== undefined
          ? { credential_identifier: opts.credentialIdentifier, proofs }
          : { credential_configuration_id: configurationId, proofs },
        {
          configuration: configuration as Record<string, unknown> | undefined,
          configurationId,
          proofJwt: 'jwt' in proofs ? proofs.jwt[0] : undefined,
        },
      )
      const { url, bearer } = tamper.apply('credential.auth', {
        url: this.metadata.credentialIssuer.credential_endpoint,
        bearer: auth.accessToken,
      })
      const answer = await this.sendAuthorized(
        'credential',
        url,
        { method: 'POST', json },
        auth,
        bearer !== undefined,
      )
      return { status: answer.status, body: answer.body, wwwAuthenticate: answer.headers['www-authenticate'] }
    }
    const client = this.client(undefined, auth)
    const result = await this.call('credential', () =>
      client.retrieveCredentials({
        issuerMetadata: this.metadata,
        accessToken: auth.accessToken,
        credentialConfigurationId: configurationId,
        proofs,
      }),
    )
    return { status: result.response.status, body: result.credentialResponse }
  }

  /** 1.0 §9.1: `{transaction_id}`; 200 with credentials, or 202 `{transaction_id, interval}` while pending. */
  async deferred(access: AccessAuthorization | string, transactionId: string): Promise<WireAnswer> {
    const auth = accessOf(access)
    const client = this.client(undefined, auth)
    try {
      const result = await this.call('deferred', () =>
        client.retrieveDeferredCredentials({
          issuerMetadata: this.metadata,
          accessToken: auth.accessToken,
          transactionId,
        }),
      )
      return { status: result.response.status, body: result.deferredCredentialResponse }
    } catch (error) {
      // 0.4.6 rejects a spec-valid 200 {credentials, notification_id} (its check is inverted: "'notification_id'
      // MUST NOT be defined when 'credentials' is not defined"); 1.0 §9.2 allows exactly that
      const last = this.last as WireAnswer | undefined
      if (last?.status === 200 && isObject(last.body) && Array.isArray(last.body.credentials)) return last
      throw error
    }
  }

  /** 1.0 §11.1: `{notification_id, event, event_description?}`; 204 expected. */
  async notify(
    access: AccessAuthorization | string,
    notification: {
      notificationId: string
      event: 'credential_accepted' | 'credential_failure' | 'credential_deleted'
      eventDescription?: string
    },
  ): Promise<void> {
    const auth = accessOf(access)
    const client = this.client(undefined, auth)
    await this.call('notification', () =>
      client.sendNotification({ issuerMetadata: this.metadata, accessToken: auth.accessToken, notification }),
    )
  }
}

/** The `error` of a WalletProtocolError that one of the wallet's HTTP rules caused (errors.ts). */
const LIMIT_CODES: ReadonlySet<string> = new Set(['timeout', 'response_too_large', 'redirect_not_followed'])

/**
 * Which path to take: '1.0' and 'draft15' as asked; 'auto' reads the metadata with @openid4vc/openid4vci
 * (it tries the 1.0 §12.2.2 location first, then the appended one) and takes 1.0 when any configuration has
 * `credential_metadata` — the 1.0 signal the library itself uses — else draft 15 (also when the library
 * cannot read the metadata: the draft-15 path then reports what the server answered, and when the offer
 * carries a presentation_definition).
 */
export async function chooseProtocol(
  protocol: IssuanceProtocol,
  offerJson: Record<string, unknown>,
  http: WalletHttp,
  options: V1ClientOptions = {},
): Promise<V1Client | undefined> {
  if (protocol === 'draft15') return undefined
  if (protocol === '1.0') return V1Client.discover(offerJson, http, options)
  // An offer asking the holder to share credentials (a di_vp key proof, the interface's requiredPresentation)
  // is a draft-15-era extension the 1.0 path does not speak: the draft-15 path handles it.
  if (offerJson.presentation_definition !== undefined) return undefined
  try {
    const v1 = await V1Client.discover(offerJson, http, options)
    return isV1Metadata(v1.metadata) ? v1 : undefined
  } catch (error) {
    // metadata of another issuer is refused whatever its generation (§12.2.2), not read again as draft 15;
    // nor is an answer the wallet's HTTP rules ended (a redirect, a timeout, a body over the cap): asking
    // the same server again on the draft-15 path would only wait out the deadline twice
    if (error instanceof IssuerMismatchError) throw error
    if (error instanceof WalletProtocolError && LIMIT_CODES.has(error.error ?? '')) throw error
    return undefined
  }
}

/** The 1.0 endpoints in the shape the draft-15 session exposes as `endpoints`. */
export function v1Endpoints(v1: V1Client): EndpointMetadataResultV1_0_15 {
  const metadata = v1.metadata.credentialIssuer
  return {
    issuer: metadata.credential_issuer,
    token_endpoint: v1.tokenEndpoint,
    credential_endpoint: metadata.credential_endpoint,
    ...(metadata.deferred_credential_endpoint && {
      deferred_credential_endpoint: metadata.deferred_credential_endpoint,
    }),
    ...(metadata.notification_endpoint && { notification_endpoint: metadata.notification_endpoint }),
    authorizationServerMetadata: v1.metadata.authorizationServers[0],
    credentialIssuerMetadata: metadata,
  } as unknown as EndpointMetadataResultV1_0_15
}
