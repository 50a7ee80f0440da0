// One OpenID4VCI pre-authorized issuance, step by step, as docs/issuance.md profiles it. Two paths, chosen
// per issuer (chooseProtocol): OpenID4VCI 1.0 Final through @openid4vc/openid4vci (issuance-v1.ts, handed the
// wallet's bounded fetch), and draft 15, where @sphereon/oid4vci-client 0.20.1 parses the offer and lays out
// the credential request, and the wallet sends every request itself through http.ts (offer, metadata, token,
// nonce, credential, deferred, notification): the library's cross-fetch has no deadline and no body cap and
// follows redirects, and it cannot be handed another fetch. Every non-success answer becomes a
// WalletProtocolError naming the step, status and wire error.

import { setTimeout as sleep } from 'node:timers/promises'
import { CredentialOfferClient, CredentialRequestClientBuilderV1_0_15 } from '@sphereon/oid4vci-client'
import {
  type AccessTokenResponse,
  type CredentialConfigurationSupportedV1_0_15,
  type CredentialOfferPayloadV1_0_15,
  type CredentialOfferRequestWithBaseUrl,
  type EndpointMetadataResultV1_0_15,
  type IssuerMetadataV1_0_15,
  OpenId4VCIVersion,
  PRE_AUTH_CODE_LITERAL,
  PRE_AUTH_GRANT_LITERAL,
  type ProofOfPossession,
  type TxCode,
} from '@sphereon/oid4vci-common'
import type { IPresentationDefinition } from '@sphereon/pex'
import { formatNamed } from '../formats/registry.ts'
import type { DiSigner } from '../shared/data-integrity.ts'
import type { JwsAlg } from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import type { AttestationSigner } from '../shared/oauth/client-attestation.ts'
import { ATTESTATION_PROOF_TYPE } from '../shared/oauth/key-attestation.ts'
import { testWalletProviderSigner } from '../shared/oauth/test-wallet-provider.ts'
import { type AccessAuthorization, bearerAuthorization } from './access-authorization.ts'
import { parseDeepLink } from './deep-link.ts'
import {
  protocolError,
  transportError,
  WalletProtocolError,
  type WalletStep,
  WalletUsageError,
} from './errors.ts'
import { freshProofKey, type ProofKey } from './holder-keys.ts'
import { type HttpAnswer, type HttpRequest, httpRequest, type WalletHttp } from './http.ts'
import {
  AUTHORIZATION_CODE_GRANT,
  AuthorizationCodeFlow,
  type AuthorizationGrant,
  type AuthorizationOptions,
  chooseFlow,
  type IssuanceFlow,
  OPENID_CREDENTIAL,
  type UserStep,
} from './issuance-authorization.ts'
import {
  chooseProtocol,
  type IssuanceProtocol,
  IssuerMismatchError,
  type V1Client,
  type V1Proofs,
  v1Endpoints,
  type WireAnswer,
} from './issuance-v1.ts'
import { planProof, walletKeyAttestation } from './key-attestation.ts'
import { loadPex } from './lazy.ts'
import {
  type AuthorizationMisbehaviour,
  type IssuanceMisbehaviour,
  type Misbehaviour,
  PROOF_MISBEHAVIOURS,
  splitIssuanceMisbehaviours,
  TOKEN_MISBEHAVIOURS,
  V1_ONLY_MISBEHAVIOURS,
} from './misbehaviour.ts'
import { unsafeDefinitionPath } from './presentation-select.ts'
import { buildDiVpProof, buildJwtProof, buildTokenRequest, type JwtSigner } from './proof.ts'
import { quietly } from './quiet.ts'
import { ShareNotAllowedError, type SharePolicy, shareAllows, sharesAnything } from './share.ts'
import type { HolderKeyType, StoredCredential } from './store.ts'
import { tamperOf } from './tamper.ts'

// re-exported for callers that import the issuance module directly
export { WalletProtocolError } from './errors.ts'
export type { Misbehaviour } from './misbehaviour.ts'

export type TokenResponse = AccessTokenResponse
export type NotificationEvent = 'credential_accepted' | 'credential_failure' | 'credential_deleted'
export type CredentialOffer = CredentialOfferPayloadV1_0_15 & {
  presentation_definition?: IPresentationDefinition
  [extension: string]: unknown
}
export type IssuerMetadata = NonNullable<EndpointMetadataResultV1_0_15['credentialIssuerMetadata']> &
  Partial<IssuerMetadataV1_0_15> & { deferred_credential_endpoint?: string; notification_endpoint?: string }

/** The credential endpoint issued at once. */
export interface IssuedCredentials {
  status: 200
  /** the credentials as issued (jwt_vc_json: compact JWTs) */
  credentials: unknown[]
  notificationId?: string
  body: unknown
}
/** The credential endpoint accepted the request; the credential comes later from the deferred endpoint. */
export interface PendingCredentials {
  status: 202
  transactionId: string
  /** seconds the server asks the wallet to wait between deferred requests */
  interval?: number
  body: unknown
}
export type CredentialResult = IssuedCredentials | PendingCredentials
/**
 * One deferred request: issued, or still pending — `202 {transaction_id, interval}` (OpenID4VCI 1.0 §9.2) or
 * the drafts' `400 issuance_pending`.
 */
/** Where received credentials come from: what the wallet stores with them. */
export interface CredentialOrigin {
  credentialIssuer: string
  configurationId: string
  status: number
  /** the configuration's `format` (default jwt_vc_json) and, for SD-JWT VC, its `vct`; for an mdoc its `doctype` */
  format?: string | undefined
  vct?: string | undefined
  doctype?: string | undefined
  /**
   * fetch the credentials' status lists and refuse a revoked one (receipt, through an IssuanceSession);
   * default false: Wallet.accept called directly only verifies and stores
   */
  checkStatus?: boolean
  /**
   * the keys the request proved (a batch: the wallet's own and further ones); each credential must be bound to
   * one of them, and is stored with it. Default: the wallet's own key
   */
  holders?: readonly ProofKey[]
}

export type DeferredResult =
  | IssuedCredentials
  | { status: 202; transactionId: string; interval?: number; body: unknown }
  | { status: 400; error: 'issuance_pending'; interval?: number; body: unknown }

/** How long to wait; injectable so tests check the announced interval without waiting it. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>

export interface RequestCredentialOptions {
  /** the authorization code flow's 'dpop-token-as-bearer' acts here too */
  misbehave?: readonly IssuanceMisbehaviour[]
  /** prove with this nonce instead of the token's c_nonce or a fresh one from the nonce endpoint */
  nonce?: string | undefined
  /**
   * default: `di_vp` when the offer carries a presentation_definition, else `jwt` — on the 1.0 path
   * `attestation` (Appendix F.3) where the configuration offers it and not `jwt`; asked for, `attestation`
   * sends one key attestation of every key of the request with the c_nonce instead of jwt proofs
   */
  proofType?: 'jwt' | 'di_vp' | 'attestation'
  /** this request only: how many copies, one per key (StartIssuanceOptions.batch); default the session's */
  batch?: number
  /**
   * di_vp: what the holder lets the wallet share with this issuer (share.ts); default nothing, so an offer
   * carrying a presentation_definition is refused with ShareNotAllowedError before anything is sent
   */
  share?: SharePolicy
  /**
   * di_vp: present exactly these credentials (compact JWTs, the caller's choice) instead of selecting with
   * Presentation Exchange among what `share` allows
   */
  present?: string[]
  /** default: the offer's first credential_configuration_id */
  configurationId?: string
}

/** How a session starts (IssuanceSession.start, startAt; Wallet.startIssuance). */
export interface StartIssuanceOptions {
  protocol?: IssuanceProtocol
  /**
   * which flow redeems the offer (OpenID4VCI 1.0 §4.1.1): default its pre-authorized code when it has one,
   * else the authorization code flow; 'authorization_code' takes that flow for an offer granting both
   */
  flow?: IssuanceFlow
  /** this session's authorization code flow options, over the wallet's (WalletOptions.authorization) */
  authorization?: AuthorizationOptions
  /**
   * How many copies of the credential to ask for (OpenID4VCI 1.0 §3.3.2 Batch Credential Issuance): that many
   * distinct holder keys — the wallet's own and fresh further ones of its key type — one key proof each with
   * one c_nonce (§8.2 `proofs`), one credential bound to each key. At most the issuer's
   * `batch_credential_issuance.batch_size` (§12.2.4): more, or any batch where the issuer announces none, is a
   * WalletUsageError before anything is sent to the issuer. Default 1. The 1.0 path only (CLI --batch).
   */
  batch?: number
  /**
   * Attach a key attestation (Appendix D) to every jwt proof even where the configuration does not require
   * one; default: only where its proof type says `key_attestations_required` (§12.2.4). Signed by the wallet
   * provider of `authorization.walletProvider`, by default the TEST provider. The 1.0 path only (CLI
   * --key-attestation).
   */
  keyAttestation?: boolean
}

/** What a session needs from the wallet holding the key and the credentials. */
export interface WalletContext {
  readonly did: string
  readonly kid: string
  readonly alg: JwsAlg
  readonly keyType: HolderKeyType
  /** the wallet's HTTP client and limits (deadline, body cap, no redirects; http.ts) */
  readonly http: WalletHttp
  /** the protocol to speak unless a session asks for another; default 'auto' */
  readonly protocol?: IssuanceProtocol | undefined
  /** how the wallet takes part in the authorization code flow (redirect_uri, wallet provider, user step) */
  readonly authorization?: AuthorizationOptions | undefined
  /**
   * WalletOptions.trustEverything: the test-only careless wallet (metadata of another issuer used anyway, a
   * proof without a nonce when the token brought none, credentials stored unverified)
   */
  readonly trustEverything?: boolean
  /** the holder's public JWK (the `jwk` proof header; SD-JWT `cnf.jwk`) */
  publicJwk(): JsonWebKey
  /** the wallet's own key as a proof key (its did:key, signing through the KMS) */
  holderKey(): ProofKey
  /** a fresh further key of the wallet's key type for a batch: the session holds it until a credential bound to it is stored */
  newHolderKey(): ProofKey
  /** whether `did` is a further key of a batch this wallet holds (a credential bound to it is presented with it) */
  isBatchKey(did: string): boolean
  jwtSigner(): JwtSigner
  diSigner(): DiSigner
  privateJwk(): Promise<JsonWebKey>
  credentials(): StoredCredential[]
  lastConsumedNonce(): string | undefined
  rememberConsumedNonce(nonce: string): void
  /** verifies the credentials and stores them (all or none); failures are WalletProtocolError step 'verify' */
  accept(credentials: unknown[], origin: CredentialOrigin): Promise<StoredCredential[]>
}

/** The holder key type that signs each JWS algorithm (src/wallet/agent.ts). */
const KEY_TYPE_OF_ALG: Readonly<Record<string, HolderKeyType>> = {
  EdDSA: 'Ed25519',
  ES256: 'P-256',
  ES256K: 'secp256k1',
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** One request of `step` through the wallet's HTTP client; no answer at all is a WalletProtocolError. */
async function send(step: WalletStep, url: string, req: HttpRequest, http: WalletHttp): Promise<HttpAnswer> {
  try {
    return await httpRequest(url, req, http)
  } catch (error) {
    throw transportError(step, url, error)
  }
}

export class IssuanceSession {
  /** the deep link as scanned */
  readonly deepLink: string
  /** the deep link's credential_offer_uri, when the offer came by reference */
  readonly offerUri: string | undefined
  /** the credential offer (`credential_offer` by value, or what `credential_offer_uri` answered) */
  readonly offer: CredentialOffer
  /** the credential issuer metadata as oid4vci-client keeps it (its V1_0_15 subset of the document) */
  readonly issuerMetadata: IssuerMetadata
  /** all endpoints oid4vci-client found (token endpoint, AS metadata, …) */
  readonly endpoints: EndpointMetadataResultV1_0_15
  /** what the holder must share to obtain the credential (an extension of the offer) */
  readonly presentationDefinition: IPresentationDefinition | undefined
  /** the transaction code the offer announced */
  readonly txCodeSpec: TxCode | undefined
  readonly credentialIssuer: string
  /** the protocol this session speaks with the issuer */
  readonly protocol: '1.0' | 'draft15'
  /** how the access token is obtained: the offer's pre-authorized code, or the authorization code flow */
  readonly flow: IssuanceFlow
  /** 'issuer': from a credential offer; 'wallet': wallet-initiated (startAt), no offer was made */
  readonly initiatedBy: 'issuer' | 'wallet'

  private readonly wallet: WalletContext
  private readonly v1: V1Client | undefined
  /** the authorization code flow (PAR, user step, DPoP token), when this session takes it */
  private readonly authorizationFlow: AuthorizationCodeFlow | undefined
  private readonly offerRequest: CredentialOfferRequestWithBaseUrl
  private currentToken: TokenResponse | undefined
  private tokenNonceUsed = false
  private lastInterval: number | undefined
  private lastAnswerAt = 0
  private lastNotificationId: string | undefined
  /** StartIssuanceOptions.batch, .keyAttestation, and who signs key attestations */
  private readonly batch: number
  private readonly keyAttestation: boolean
  private readonly walletProvider: AttestationSigner
  /** the keys of the last credential request: its credentials (now, or at the deferred download) are bound to them */
  private proofKeys: readonly ProofKey[] | undefined

  private constructor(
    wallet: WalletContext,
    deepLink: string,
    offerRequest: CredentialOfferRequestWithBaseUrl,
    endpoints: EndpointMetadataResultV1_0_15,
    v1?: V1Client,
    authorizationFlow?: AuthorizationCodeFlow,
    initiatedBy: 'issuer' | 'wallet' = 'issuer',
    settings: {
      batch?: number | undefined
      keyAttestation?: boolean | undefined
      provider?: AttestationSigner
    } = {},
  ) {
    this.wallet = wallet
    this.batch = settings.batch ?? 1
    this.keyAttestation = settings.keyAttestation === true
    this.walletProvider = settings.provider ?? testWalletProviderSigner()
    this.v1 = v1
    this.authorizationFlow = authorizationFlow
    this.flow = authorizationFlow ? 'authorization_code' : 'pre-authorized_code'
    this.initiatedBy = initiatedBy
    this.protocol = v1 ? '1.0' : 'draft15'
    this.deepLink = deepLink
    this.offerUri = parseDeepLink(deepLink).offerUri
    this.offerRequest = offerRequest
    this.offer = offerRequest.credential_offer as CredentialOffer
    this.endpoints = endpoints
    this.issuerMetadata = endpoints.credentialIssuerMetadata as IssuerMetadata
    this.credentialIssuer = this.offer.credential_issuer
    const pd = this.offer.presentation_definition
    this.presentationDefinition = isObject(pd) ? (pd as IPresentationDefinition) : undefined
    this.txCodeSpec = offerRequest.txCode
  }

  /**
   * Wallet-initiated issuance (OpenID4VCI 1.0 §3.5, no offer): the authorization code flow for one
   * configuration of the credential issuer's metadata. The session is built as for an offer of that
   * configuration without grants (§4.1.1: the wallet takes the grant types from the metadata), so the same
   * discovery and checks apply; `offer` is that synthesized offer, `initiatedBy` 'wallet'.
   */
  static startAt(
    wallet: WalletContext,
    credentialIssuer: string,
    configurationId: string,
    opts: StartIssuanceOptions = {},
  ): Promise<IssuanceSession> {
    const offer = { credential_issuer: credentialIssuer, credential_configuration_ids: [configurationId] }
    const link = `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify(offer))}`
    return IssuanceSession.start(wallet, link, { ...opts, flow: 'authorization_code', initiatedBy: 'wallet' })
  }

  /** Reads the offer (fetching `credential_offer_uri`) and the issuer and authorization server metadata. */
  static async start(
    wallet: WalletContext,
    deepLink: string,
    opts: StartIssuanceOptions & { initiatedBy?: 'issuer' | 'wallet' } = {},
  ): Promise<IssuanceSession> {
    const link = parseDeepLink(deepLink)
    checkBatchNumber(opts.batch)
    // oid4vci-client's own fetch of credential_offer_uri runs the JSON through decodeJsonProperties, which
    // turns arrays of objects into "[object Object]" (the presentation_definition), drops falsy values and
    // URI-decodes every string; fetch it here and hand the library the exact JSON by value instead. An inline
    // offer is re-encoded the same way (the library does not undo form encoding such as '+' for a space).
    const offerJson = link.offerUri ? await fetchOffer(link.offerUri, wallet.http) : link.offer
    const libraryUri = `${deepLink.trim().split('?')[0]}?credential_offer=${encodeURIComponent(JSON.stringify(offerJson))}`
    let offerRequest: CredentialOfferRequestWithBaseUrl
    try {
      offerRequest = await quietly(() => CredentialOfferClient.fromURI(libraryUri))
    } catch (error) {
      throw new WalletProtocolError({
        step: 'offer',
        status: link.offerUri ? 200 : 0,
        error: 'invalid_credential_offer',
        errorDescription: message(error),
      })
    }
    const offer = offerRequest.credential_offer
    if (!isObject(offer) || typeof offer.credential_issuer !== 'string') {
      throw new WalletProtocolError({
        step: 'offer',
        status: 200,
        error: 'invalid_credential_offer',
        errorDescription: 'the offer has no credential_issuer',
        body: offer,
      })
    }
    // Presentation Exchange will run the definition's field paths against held credentials (selectCredentials):
    // a path that is not plain member/index JSONPath is refused now, before any other request
    const unsafe = unsafeDefinitionPath(
      "the offer's presentation_definition",
      (offer as CredentialOffer).presentation_definition,
    )
    if (unsafe) {
      throw new WalletProtocolError({
        step: 'offer',
        status: link.offerUri ? 200 : 0,
        error: 'invalid_credential_offer',
        errorDescription: `${unsafe}; nothing was sent to the issuer`,
        body: offer,
      })
    }
    const flow = chooseFlow(opts.flow, offer.grants)
    const grant = offer.grants?.[PRE_AUTH_GRANT_LITERAL]
    if (flow === 'pre-authorized_code' && !grant?.[PRE_AUTH_CODE_LITERAL]) {
      throw new WalletProtocolError({
        step: 'offer',
        status: 200,
        error: 'invalid_credential_offer',
        errorDescription: 'the offer has no pre-authorized_code (OpenID4VCI 1.0 §4.1.1)',
        body: offer,
      })
    }
    if (
      !Array.isArray(offer.credential_configuration_ids) ||
      offer.credential_configuration_ids.length === 0
    ) {
      throw new WalletProtocolError({
        step: 'offer',
        status: 200,
        error: 'invalid_credential_offer',
        errorDescription: 'the offer has no credential_configuration_ids',
        body: offer,
      })
    }

    const protocol = opts.protocol ?? wallet.protocol ?? 'auto'
    if (flow === 'authorization_code' && protocol === 'draft15') {
      throw new WalletUsageError(
        'the authorization code flow is spoken on the OpenID4VCI 1.0 path only (PAR, DPoP, wallet attestation as HAIP 1.0 profiles them): use protocol 1.0 or auto',
      )
    }
    const v1 = await chooseProtocol(
      // the authorization code flow always takes the 1.0 path, whatever the metadata's generation
      flow === 'authorization_code' ? '1.0' : protocol,
      (offerJson ?? offer) as Record<string, unknown>,
      wallet.http,
      { trustEverything: wallet.trustEverything === true },
    )
    if (v1) {
      const configurations = v1.metadata.credentialIssuer.credential_configurations_supported
      const missing = offer.credential_configuration_ids.filter((id) => !(id in configurations))
      if (missing.length > 0) {
        throw new WalletProtocolError({
          step: 'metadata',
          status: 200,
          error: 'invalid_issuer_metadata',
          errorDescription: `credential_configurations_supported lacks the ${opts.initiatedBy === 'wallet' ? 'requested' : 'offered'} ${missing.join(', ')}`,
          body: v1.metadata.credentialIssuer,
        })
      }
      // refused before a code is redeemed: a batch the issuer cannot serve (§12.2.4)
      const batchProblem = batchSizeProblem(opts.batch ?? 1, v1.metadata.credentialIssuer)
      if (batchProblem) throw new WalletUsageError(batchProblem)
      const authorizationOptions = { ...wallet.authorization, ...opts.authorization }
      const authorizationFlow =
        flow === 'authorization_code'
          ? new AuthorizationCodeFlow(wallet, v1, {
              configurationIds: offer.credential_configuration_ids as string[],
              grant: offer.grants?.[AUTHORIZATION_CODE_GRANT] as Record<string, unknown> | undefined,
              options: authorizationOptions,
            })
          : undefined
      return new IssuanceSession(
        wallet,
        deepLink,
        offerRequest,
        v1Endpoints(v1),
        v1,
        authorizationFlow,
        opts.initiatedBy ?? 'issuer',
        {
          batch: opts.batch,
          keyAttestation: opts.keyAttestation,
          // the key attestation's signer is the wallet attestation's (HAIP: one wallet provider vouches for both)
          ...(authorizationOptions.walletProvider && { provider: authorizationOptions.walletProvider }),
        },
      )
    }
    const onlyV1 = [
      ...((opts.batch ?? 1) > 1 ? [`a batch of ${opts.batch} (OpenID4VCI 1.0 §3.3.2)`] : []),
      ...(opts.keyAttestation ? ['key attestations (OpenID4VCI 1.0 Appendix D)'] : []),
    ]
    if (onlyV1.length > 0) {
      // refused before the code is redeemed
      throw new WalletUsageError(
        `${onlyV1.join(' and ')} ${onlyV1.length > 1 ? 'are' : 'is'} spoken on the OpenID4VCI 1.0 path only; ${offer.credential_issuer} is spoken to in draft 15`,
      )
    }
    const { endpoints, status, document } = await discoverDraft15(offer.credential_issuer, wallet.http)
    const metadata = endpoints.credentialIssuerMetadata
    const configurations = metadata?.credential_configurations_supported ?? {}
    const missing = offer.credential_configuration_ids.filter((id) => !(id in configurations))
    if (!metadata || missing.length > 0) {
      throw new WalletProtocolError({
        step: 'metadata',
        status,
        error: 'invalid_issuer_metadata',
        errorDescription: `credential_configurations_supported lacks the offered ${missing.join(', ')}`,
        body: document,
      })
    }
    if (metadata.credential_issuer !== offer.credential_issuer && !wallet.trustEverything) {
      throw new IssuerMismatchError(
        metadata.credential_issuer,
        offer.credential_issuer,
        wellKnown(offer.credential_issuer),
        metadata,
      )
    }
    return new IssuanceSession(wallet, deepLink, offerRequest, endpoints)
  }

  /** The pre-authorized code of the offer. */
  get preAuthorizedCode(): string {
    return this.offer.grants?.[PRE_AUTH_GRANT_LITERAL]?.[PRE_AUTH_CODE_LITERAL] as string
  }

  /** The token response of the last successful token request. */
  get tokenResponse(): TokenResponse | undefined {
    return this.currentToken
  }

  get configurations(): Record<string, CredentialConfigurationSupportedV1_0_15> {
    return this.issuerMetadata.credential_configurations_supported ?? {}
  }

  /** The authorization code flow's grant (authorize()), when this session takes that flow. */
  get authorizationGrant(): AuthorizationGrant | undefined {
    return this.authorizationFlow?.authorizationGrant
  }

  /** The authorization code flow of this session (its server, client_id, DPoP prover), when it takes it. */
  get authorization(): AuthorizationCodeFlow | undefined {
    return this.authorizationFlow
  }

  /**
   * The authorization code flow's authorization step (issuance-authorization.ts): pushed authorization
   * request, the authorization endpoint (and the user step), the authorization response checked. token()
   * calls it when no code was obtained yet.
   */
  async authorize(
    opts: { misbehave?: readonly IssuanceMisbehaviour[]; userStep?: UserStep } = {},
  ): Promise<AuthorizationGrant> {
    const flow = this.authorizationFlow
    if (!flow) {
      throw new WalletUsageError(
        "this session redeems the offer's pre-authorized code: it has no authorization step (flow authorization_code)",
      )
    }
    const { authorization } = this.splitMisbehaviours(opts.misbehave)
    return flow.authorize({ misbehave: authorization, ...(opts.userStep && { userStep: opts.userStep }) })
  }

  /**
   * Misbehaviours of this session's flow: the authorization code flow's are refused in a pre-authorized
   * session, and the pre-authorized token request's in an authorization code session (WalletUsageError, before
   * anything is sent).
   */
  private splitMisbehaviours(values: readonly unknown[] | undefined): {
    common: readonly Misbehaviour[]
    authorization: readonly AuthorizationMisbehaviour[]
  } {
    const split = splitIssuanceMisbehaviours(values)
    if (!this.authorizationFlow && split.authorization.length > 0) {
      throw new WalletUsageError(
        `misbehaviour ${split.authorization.join(', ')} belongs to the authorization code flow; this session redeems the offer's pre-authorized code`,
      )
    }
    const tokenOnes = split.common.filter((m) => TOKEN_MISBEHAVIOURS.includes(m))
    if (this.authorizationFlow && tokenOnes.length > 0) {
      throw new WalletUsageError(
        `misbehaviour ${tokenOnes.join(', ')} belongs to the pre-authorized code token request; this session takes the authorization code flow (its replay: code-replay)`,
      )
    }
    return split
  }

  /**
   * Redeems the pre-authorized code. Misbehaviours: 'wrong-tx-code', 'missing-tx-code', and 'replayed-code'
   * (redeems twice, answers with the second answer). In the authorization code flow: the code of authorize()
   * (called first when there is none) with PKCE, attestation and DPoP; the token must be DPoP-bound.
   */
  async token(
    opts: { txCode?: string; misbehave?: readonly IssuanceMisbehaviour[]; userStep?: UserStep } = {},
  ): Promise<TokenResponse> {
    const { common: misbehave, authorization } = this.splitMisbehaviours(opts.misbehave)
    if (this.authorizationFlow) {
      const flow = this.authorizationFlow
      if (!flow.authorizationGrant) {
        await flow.authorize({ misbehave: authorization, ...(opts.userStep && { userStep: opts.userStep }) })
      }
      const token = (await flow.token({ misbehave: authorization })) as unknown as TokenResponse
      this.currentToken = token
      this.tokenNonceUsed = false
      return token
    }
    const tamper = tamperOf(misbehave)
    const needsCode = this.txCodeSpec !== undefined
    // a misbehaviour that decides the transaction code itself needs none from the caller
    const deliberate = tamper.acts('token.txCode')
    if (needsCode && opts.txCode === undefined && !deliberate) {
      const spec = this.txCodeSpec as TxCode
      throw new WalletUsageError(
        `the offer requires a transaction code (${spec.input_mode ?? 'numeric'}${spec.length ? `, ${spec.length} characters` : ''}${spec.description ? `: ${spec.description}` : ''}); pass txCode (CLI: --tx-code)`,
      )
    }
    if (this.v1) {
      const v1 = this.v1
      const redeem = async (): Promise<TokenResponse> => {
        const answer = await v1.token({
          ...(opts.txCode !== undefined && { txCode: opts.txCode }),
          misbehave,
        })
        return this.tokenOf(answer)
      }
      let token = await redeem()
      if (tamper.acts('token.replay')) token = await redeem()
      this.currentToken = token
      this.tokenNonceUsed = false
      return token
    }
    const form = buildTokenRequest({
      preAuthorizedCode: this.preAuthorizedCode,
      clientId: this.wallet.did,
      ...(opts.txCode !== undefined && { txCode: opts.txCode }),
      ...(this.txCodeSpec && { txCodeSpec: this.txCodeSpec }),
      misbehave,
    })
    let response = await this.redeem(form)
    if (tamper.acts('token.replay')) {
      if (response.error) throw response.error
      response = await this.redeem(form)
    }
    if (response.error) throw response.error
    this.currentToken = response.token
    this.tokenNonceUsed = false
    return response.token as TokenResponse
  }

  /**
   * One token request (the form buildTokenRequest lays out exactly as oid4vci-client would, a unit test
   * compares them), posted by the wallet to the token endpoint discovery found.
   */
  private async redeem(
    form: Record<string, string>,
  ): Promise<{ token?: TokenResponse; error?: WalletProtocolError }> {
    const url = this.endpoints.token_endpoint as string
    const answer = await send('token', url, { method: 'POST', form }, this.wallet.http)
    if (answer.status < 200 || answer.status >= 300) {
      return { error: protocolError('token', answer.status, answer.body, answer.headers['www-authenticate']) }
    }
    const token = answer.body
    if (!isObject(token) || typeof token.access_token !== 'string' || token.access_token.length === 0) {
      return {
        error: new WalletProtocolError({
          step: 'token',
          status: answer.status,
          error: 'invalid_token_response',
          errorDescription: 'no access_token',
          body: token,
        }),
      }
    }
    return { token: token as unknown as TokenResponse }
  }

  private tokenOf(answer: WireAnswer): TokenResponse {
    if (answer.status < 200 || answer.status >= 300) {
      throw protocolError('token', answer.status, answer.body, answer.wwwAuthenticate)
    }
    const token = answer.body
    if (!isObject(token) || typeof token.access_token !== 'string' || token.access_token.length === 0) {
      throw new WalletProtocolError({
        step: 'token',
        status: answer.status,
        error: 'invalid_token_response',
        errorDescription: 'no access_token',
        body: token,
      })
    }
    return token as unknown as TokenResponse
  }

  private requireToken(): TokenResponse {
    if (!this.currentToken) throw new WalletUsageError('no access token yet: call token() first')
    return this.currentToken
  }

  /**
   * How the access token goes with a resource request: Bearer (pre-authorized), or DPoP-bound with a proof
   * per request (authorization code flow; 'dpop-token-as-bearer' presents it as Bearer).
   */
  private access(
    token: TokenResponse,
    misbehave: readonly AuthorizationMisbehaviour[] = [],
  ): AccessAuthorization {
    return this.authorizationFlow
      ? this.authorizationFlow.access(token.access_token, { misbehave })
      : bearerAuthorization(token.access_token)
  }

  /**
   * The credential_identifier the token response's authorization_details granted for a configuration (1.0
   * §6.2): the credential request must then name it instead of the configuration (§8.2).
   */
  private credentialIdentifier(token: TokenResponse, configurationId: string): string | undefined {
    const details = (token as unknown as Record<string, unknown>).authorization_details
    if (!Array.isArray(details)) return undefined
    for (const detail of details) {
      if (!isObject(detail) || detail.type !== OPENID_CREDENTIAL) continue
      if (detail.credential_configuration_id !== configurationId) continue
      const ids = detail.credential_identifiers
      if (Array.isArray(ids) && typeof ids[0] === 'string') return ids[0]
    }
    return undefined
  }

  /** A fresh c_nonce from the nonce endpoint. */
  async nonce(): Promise<string> {
    if (this.v1) {
      return this.v1.nonce(
        this.authorizationFlow && this.currentToken ? this.access(this.currentToken) : undefined,
      )
    }
    const endpoint = this.issuerMetadata.nonce_endpoint
    if (!endpoint) throw new WalletUsageError('the issuer metadata has no nonce_endpoint')
    // an HTTP POST to the nonce endpoint (OpenID4VCI §7.1), with the empty form body oid4vci-common's formPost sent
    const answer = await send('nonce', endpoint, { method: 'POST', form: {} }, this.wallet.http)
    const status = answer.status
    if (status < 200 || status >= 300 || !isObject(answer.body)) {
      throw protocolError('nonce', status, answer.body)
    }
    const cNonce = answer.body.c_nonce
    if (typeof cNonce !== 'string' || cNonce.length === 0) {
      throw new WalletProtocolError({
        step: 'nonce',
        status,
        error: 'invalid_nonce_response',
        errorDescription: 'no c_nonce',
        body: answer.body,
      })
    }
    return cNonce
  }

  /**
   * The nonce of the next proof: the caller's, the token's c_nonce (once), else a fresh one from the nonce
   * endpoint. The careless wallet on the draft-15 path does not ask the nonce endpoint: no c_nonce in the
   * token answer, no nonce in the proof.
   */
  private async chooseNonce(
    opts: RequestCredentialOptions,
    misbehave: readonly Misbehaviour[],
  ): Promise<string | undefined> {
    if (opts.nonce !== undefined) return opts.nonce
    const chosen = tamperOf(misbehave).apply('nonce.choose', undefined, {
      lastConsumed: () => this.wallet.lastConsumedNonce(),
    })
    if (chosen !== undefined) return chosen
    const token = this.requireToken()
    if (token.c_nonce && !this.tokenNonceUsed) {
      this.tokenNonceUsed = true
      return token.c_nonce
    }
    if (this.wallet.trustEverything && !this.v1) return undefined
    return await this.nonce()
  }

  /**
   * Credentials the holder shares for the offer's presentation_definition: per input descriptor the newest
   * held credential that `share` allows and Presentation Exchange selects; the whole set must then evaluate
   * to `info`. Without `share` (or with an empty list) nothing is selected: ShareNotAllowedError. An issuer
   * gets no credential the holder did not allow, and of those only what its descriptors select.
   */
  async selectCredentials(share?: SharePolicy): Promise<string[]> {
    const definition = this.presentationDefinition
    if (!definition) return []
    if (!sharesAnything(share)) {
      throw new ShareNotAllowedError(
        this.credentialIssuer,
        String(definition.id),
        (definition.input_descriptors ?? []).map((d) => d.id),
      )
    }
    const unsafe = unsafeDefinitionPath("the offer's presentation_definition", definition)
    if (unsafe) throw new WalletUsageError(unsafe) // refused at start(); guards a definition set otherwise
    const { PEX } = await loadPex()
    const pex = new PEX()
    // the di_vp proof is signed by the wallet's own key: a copy bound to a further key of a batch cannot go in it
    const jwtCredentials = this.wallet
      .credentials()
      .filter((c) => c.format === 'jwt_vc_json' && !this.wallet.isBatchKey(c.subject))
    const allowed = jwtCredentials.filter((c) => shareAllows(share, c))
    const held = allowed.map((c) => c.credential).reverse()
    const holderDIDs = [this.wallet.did]
    const selected: string[] = []
    const unsatisfied: string[] = []
    for (const descriptor of definition.input_descriptors) {
      const single = { ...definition, input_descriptors: [descriptor] } as IPresentationDefinition
      delete (single as { submission_requirements?: unknown }).submission_requirements
      const result = held.length > 0 ? pex.selectFrom(single, held, { holderDIDs }) : undefined
      const index = result?.vcIndexes?.[0]
      const pick =
        index !== undefined ? held[index] : (result?.verifiableCredential?.[0] as string | undefined)
      if (!result || result.areRequiredCredentialsPresent === 'error' || typeof pick !== 'string') {
        unsatisfied.push(descriptor.id)
      } else if (!selected.includes(pick)) {
        selected.push(pick)
      }
    }
    if (unsatisfied.length > 0) {
      const limited =
        share === 'all'
          ? ''
          : `; share allows only credentials with the id, type or issuer ${share.join(', ')} (${allowed.length} of the ${jwtCredentials.length} held)`
      throw new WalletUsageError(
        `no held credential satisfies input descriptor(s) ${unsatisfied.join(', ')} of presentation definition ${definition.id}${limited}`,
      )
    }
    const check = pex.evaluateCredentials(definition, selected, { holderDIDs })
    if (check.areRequiredCredentialsPresent !== 'info') {
      const reasons = (check.errors ?? []).map((e) => `${e.tag}: ${e.message}`).join('; ')
      throw new WalletUsageError(`the selected credentials do not satisfy ${definition.id}: ${reasons}`)
    }
    return selected
  }

  /** Requests the credential with a `jwt` or `di_vp` proof. 200: issued now; 202: deferred. */
  async requestCredential(opts: RequestCredentialOptions = {}): Promise<CredentialResult> {
    const { common: misbehave, authorization } = this.splitMisbehaviours(opts.misbehave)
    const token = this.requireToken()
    const v1Only = misbehave.filter((m) => V1_ONLY_MISBEHAVIOURS.includes(m))
    if (v1Only.length > 0 && !this.v1) {
      throw new WalletUsageError(
        `misbehaviour ${v1Only.join(', ')} is spoken on the OpenID4VCI 1.0 path only (a legacy shape sent to a 1.0 issuer, or a key attestation); this session speaks draft 15`,
      )
    }
    if (this.v1) return this.requestCredentialV1(this.v1, token, opts, misbehave, authorization)
    if (opts.proofType === 'attestation' || (opts.batch ?? 1) > 1) {
      throw new WalletUsageError(
        `${opts.proofType === 'attestation' ? 'the attestation proof type (OpenID4VCI 1.0 Appendix F.3)' : `a batch of ${opts.batch} (OpenID4VCI 1.0 §3.3.2)`} is spoken on the OpenID4VCI 1.0 path only; this session speaks draft 15`,
      )
    }
    const proofType = opts.proofType ?? (this.presentationDefinition ? 'di_vp' : 'jwt')
    if (proofType === 'jwt') this.assertHolderKey(opts.configurationId)
    const diSigner = proofType === 'di_vp' ? this.wallet.diSigner() : undefined
    const presented = diSigner ? (opts.present ?? (await this.selectCredentials(opts.share))) : []
    const nonce = await this.chooseNonce(opts, misbehave)
    const proof = diSigner
      ? await buildDiVpProof(diSigner, {
          holder: this.wallet.did,
          credentials: presented,
          challenge: nonce ?? '',
          domain: this.credentialIssuer,
          misbehave,
        })
      : {
          proof_type: 'jwt' as const,
          jwt: await buildJwtProof(this.wallet.jwtSigner(), {
            audience: this.credentialIssuer,
            nonce,
            misbehave,
            privateJwk: () => this.wallet.privateJwk(),
          }),
        }

    const configurationId = opts.configurationId ?? (this.offer.credential_configuration_ids[0] as string)
    const builder = CredentialRequestClientBuilderV1_0_15.fromCredentialOffer({
      credentialOffer: this.offerRequest,
      metadata: this.endpoints,
    })
    builder.withTokenFromResponse(token)
    builder.withCredentialConfigurationId(configurationId)
    const client = builder.build()
    // laid out by the library (credential_configuration_id, or the credential_identifier of the token's
    // authorization_details), sent by the wallet; a ready proof object passes through untouched, so it
    // carries di_vp too (its type says jwt)
    const request = await quietly(() =>
      client.createCredentialRequest({
        proofInput: proof as ProofOfPossession,
        format: 'jwt_vc_json',
        version: OpenId4VCIVersion.VER_1_0_15,
      }),
    )
    // the misbehaviours of the request around the proof (the legacy shapes never get here: 1.0 only)
    const tamper = tamperOf(misbehave)
    const json = tamper.apply('credential.request', request as unknown as Record<string, unknown>, {
      configuration: this.configurations[configurationId] as Record<string, unknown> | undefined,
      configurationId,
      proofJwt: proof.proof_type === 'jwt' ? proof.jwt : undefined,
    })
    const { url, bearer } = tamper.apply('credential.auth', {
      url: this.endpoints.credential_endpoint as string,
      bearer: token.access_token,
    })
    const answer = await send(
      'credential',
      url,
      { method: 'POST', json, ...(bearer !== undefined && { bearer }) },
      this.wallet.http,
    )
    if (answer.status < 200 || answer.status >= 300 || !isObject(answer.body)) {
      throw protocolError('credential', answer.status, answer.body, answer.headers['www-authenticate'])
    }
    return this.credentialResult(answer.status, answer.body, nonce, misbehave)
  }

  /**
   * The 1.0 path (§8.2 `proofs`): a jwt proof per key (Appendix F.1, laid out by @openid4vc/openid4vci), with a
   * key attestation of its key in the header where the configuration requires one or the session asks; or the
   * attestation proof type (F.3). A batch proves the wallet's own key and fresh further ones, every proof with
   * the same c_nonce (the issuer refuses mixed nonces).
   */
  private async requestCredentialV1(
    v1: V1Client,
    token: TokenResponse,
    opts: RequestCredentialOptions,
    misbehave: readonly Misbehaviour[],
    authorization: readonly AuthorizationMisbehaviour[] = [],
  ): Promise<CredentialResult> {
    if (opts.proofType === 'di_vp' || this.presentationDefinition) {
      throw new WalletUsageError(
        'the OpenID4VCI 1.0 path proves possession with a jwt proof (or the attestation proof type) only',
      )
    }
    const configurationId = opts.configurationId ?? (this.offer.credential_configuration_ids[0] as string)
    const batch = opts.batch ?? this.batch
    checkBatchNumber(batch)
    const batchProblem = batchSizeProblem(batch, v1.metadata.credentialIssuer)
    if (batchProblem) throw new WalletUsageError(batchProblem)
    const plan = planProof(
      configurationId,
      this.configurations[configurationId] as Record<string, unknown> | undefined,
      { proofType: opts.proofType, keyAttestation: this.keyAttestation },
      this.walletProvider,
    )
    // the keys of either proof type become the credentials' keys: of a type the configuration binds
    this.assertHolderKey(configurationId)
    if (plan.type === ATTESTATION_PROOF_TYPE) {
      // F.3: the attestation is the proof; only what it carries (its nonce) can be wrong in it
      const jwtOnly = misbehave.filter(
        (m) => PROOF_MISBEHAVIOURS.includes(m) && m !== 'wrong-nonce' && m !== 'replayed-nonce',
      )
      if (jwtOnly.length > 0) {
        throw new WalletUsageError(
          `misbehaviour ${jwtOnly.join(', ')} acts on a jwt proof; the attestation proof type (OpenID4VCI 1.0 Appendix F.3) is a key attestation alone`,
        )
      }
    }
    const tamper = tamperOf(misbehave)
    const keys = [
      this.wallet.holderKey(),
      ...Array.from({ length: batch - 1 }, () => this.wallet.newHolderKey()),
    ]
    const nonce = (await this.chooseNonce(opts, misbehave)) ?? ''
    // the nonce as every proof (and key attestation) carries it: 'wrong-nonce' puts one other nonce in all
    const carried = tamper.apply('proof.nonce', nonce) ?? nonce
    const provider = this.walletProvider
    let proofs: V1Proofs
    if (plan.type === ATTESTATION_PROOF_TYPE) {
      proofs = { attestation: [walletKeyAttestation(provider, keys, plan, carried)] }
    } else {
      const jwts: string[] = []
      for (const key of keys) {
        jwts.push(
          await v1.proof({
            signer: key.signer,
            publicJwk: key.publicJwk,
            configurationId,
            nonce: carried,
            misbehave,
            privateJwk: await tamper.apply('proof.privateJwk', undefined, {
              read: () =>
                key.privateKey ? key.privateKey.export({ format: 'jwk' }) : this.wallet.privateJwk(),
            }),
            // D.1: the attestation names the key that signs the proof (one attestation per proof, so each
            // key gets exactly one credential: §8.3)
            ...(plan.attest && { keyAttestation: walletKeyAttestation(provider, [key], plan, carried) }),
            foreignKeyAttestation: () =>
              walletKeyAttestation(provider, [freshProofKey(key.alg)], plan, carried),
          }),
        )
      }
      proofs = { jwt: jwts }
    }
    const answer = await v1.credential(
      this.access(token, authorization),
      configurationId,
      proofs,
      misbehave,
      {
        credentialIdentifier: this.credentialIdentifier(token, configurationId),
      },
    )
    if (answer.status < 200 || answer.status >= 300 || !isObject(answer.body)) {
      throw protocolError('credential', answer.status, answer.body, answer.wwwAuthenticate)
    }
    // accepted (200, or 202 for the deferred download): the credentials will be bound to these keys
    this.proofKeys = keys
    return this.credentialResult(answer.status, answer.body, nonce, misbehave)
  }

  /**
   * Why the holder key cannot make the jwt key proof a configuration takes, or undefined: the algorithms its
   * `proof_types_supported.jwt.proof_signing_alg_values_supported` lists and those its format allows (an
   * mdoc's: ES256, since the proven key becomes the device key that signs DeviceAuthentication with ES256;
   * OpenID4VP 1.0 Appendix B.2.4, HAIP) must include the holder's. A wallet holds one key of one type (its
   * did:key), so the answer is another wallet: the message names the key type to create it with.
   */
  holderKeyProblem(configurationId?: string): string | undefined {
    const id = configurationId ?? (this.offer.credential_configuration_ids[0] as string)
    const configuration = this.configurations[id] as Record<string, unknown> | undefined
    if (!configuration) return undefined
    const format = formatNamed(configuration.format)
    const types = configuration.proof_types_supported
    const jwt = isObject(types) ? types.jwt : undefined
    const listed = isObject(jwt) ? jwt.proof_signing_alg_values_supported : undefined
    const fromMetadata = Array.isArray(listed) ? listed.filter((a) => typeof a === 'string') : undefined
    const fromFormat = format?.issuance.proofAlgorithms
    const allowed = (fromMetadata ?? fromFormat)?.filter(
      (a) => !fromFormat || fromFormat.includes(a as JwsAlg),
    )
    if (!allowed || allowed.includes(this.wallet.alg)) return undefined
    const keyTypes = allowed.flatMap((a) => KEY_TYPE_OF_ALG[a] ?? [])
    const why = fromFormat
      ? ` (${format?.id}: the proven key becomes the device key, which signs with ${fromFormat.join(', ')}; OpenID4VP 1.0 Appendix B.2.4, HAIP)`
      : ''
    return `credential configuration ${id} takes jwt key proofs signed with ${allowed.join(', ') || 'no algorithm'} (proof_signing_alg_values_supported)${why}, and this wallet's ${this.wallet.keyType} key signs ${this.wallet.alg}${keyTypes.length > 0 ? `: receive it into a ${keyTypes.join(' or ')} wallet (Wallet.create({ keyType: '${keyTypes[0]}' }), --key-type ${keyTypes[0]})` : ''}`
  }

  /** holderKeyProblem as a WalletUsageError (nothing sent). */
  assertHolderKey(configurationId?: string): void {
    const problem = this.holderKeyProblem(configurationId)
    if (problem) throw new WalletUsageError(problem)
  }

  private credentialResult(
    status: number,
    body: Record<string, unknown>,
    nonce: string | undefined,
    misbehave: readonly Misbehaviour[],
  ): CredentialResult {
    const consumed = tamperOf(misbehave).apply('nonce.consumed', nonce)
    if (consumed) this.wallet.rememberConsumedNonce(consumed)
    this.lastAnswerAt = Date.now()
    if (Array.isArray(body.credentials)) return this.issued(200, body, 'credential')
    if (typeof body.transaction_id === 'string') {
      const interval = typeof body.interval === 'number' ? body.interval : undefined
      this.lastInterval = interval
      return {
        status: 202,
        transactionId: body.transaction_id,
        ...(interval !== undefined && { interval }),
        body,
      }
    }
    throw new WalletProtocolError({
      step: 'credential',
      status,
      error: 'invalid_credential_response',
      errorDescription: 'neither credentials nor transaction_id',
      body,
    })
  }

  private issued(
    status: number,
    body: Record<string, unknown>,
    step: 'credential' | 'deferred',
  ): IssuedCredentials {
    const entries = body.credentials as unknown[]
    const credentials = entries.map((entry) => (isObject(entry) ? entry.credential : undefined))
    if (credentials.length === 0 || credentials.some((c) => c === undefined)) {
      throw new WalletProtocolError({
        step,
        status,
        error: 'invalid_credential_response',
        errorDescription: 'credentials must be a non-empty array of {credential}',
        body,
      })
    }
    const notificationId = typeof body.notification_id === 'string' ? body.notification_id : undefined
    if (notificationId) this.lastNotificationId = notificationId
    return { status: 200, credentials, ...(notificationId && { notificationId }), body }
  }

  private endpoint(name: 'deferred_credential_endpoint' | 'notification_endpoint'): string {
    const url = this.issuerMetadata[name]
    if (typeof url !== 'string' || url.length === 0) {
      throw new WalletUsageError(`the issuer metadata has no ${name}`)
    }
    return url
  }

  /**
   * One request to the deferred credential endpoint. Either generation's "not yet" is understood on either
   * path: 1.0 §9.2's 202 with the transaction_id and interval, and draft 15's 400 issuance_pending.
   */
  async deferred(transactionId: string): Promise<DeferredResult> {
    const token = this.requireToken()
    const answer = this.v1
      ? await this.v1.deferred(this.access(token), transactionId)
      : await send(
          'deferred',
          this.endpoint('deferred_credential_endpoint'),
          { method: 'POST', json: { transaction_id: transactionId }, bearer: token.access_token },
          this.wallet.http,
        ).then((a) => ({ status: a.status, body: a.body, wwwAuthenticate: a.headers['www-authenticate'] }))
    this.lastAnswerAt = Date.now()
    const body = answer.body
    if (answer.status === 200 && isObject(body) && Array.isArray(body.credentials)) {
      return this.issued(200, body, 'deferred')
    }
    const interval = isObject(body) && typeof body.interval === 'number' ? body.interval : undefined
    if (answer.status === 202 && isObject(body) && typeof body.transaction_id === 'string') {
      if (interval !== undefined) this.lastInterval = interval
      return {
        status: 202,
        transactionId: body.transaction_id,
        ...(interval !== undefined && { interval }),
        body,
      }
    }
    if (answer.status === 400 && isObject(body) && body.error === 'issuance_pending') {
      if (interval !== undefined) this.lastInterval = interval
      return { status: 400, error: 'issuance_pending', ...(interval !== undefined && { interval }), body }
    }
    if (answer.status >= 200 && answer.status < 300) {
      throw new WalletProtocolError({
        step: 'deferred',
        status: answer.status,
        error: 'invalid_credential_response',
        errorDescription: 'neither credentials (200) nor transaction_id (202)',
        body,
      })
    }
    throw protocolError('deferred', answer.status, body, answer.wwwAuthenticate)
  }

  /**
   * Polls the deferred endpoint until the credential is issued, never sooner than the server's `interval`
   * (default 5 s) after its previous answer. Past `timeoutMs`: WalletProtocolError 'deferred' 400
   * issuance_pending.
   */
  async awaitDeferred(
    transactionId: string,
    opts: {
      timeoutMs: number
      signal?: AbortSignal
      onPoll?: (result: DeferredResult) => void
      /** default: timers/promises setTimeout */
      sleep?: Sleep
    },
  ): Promise<IssuedCredentials> {
    const wait =
      opts.sleep ??
      ((ms: number, signal?: AbortSignal) => sleep(ms, undefined, signal ? { signal } : undefined))
    const deadline = Date.now() + opts.timeoutMs
    for (;;) {
      const next = this.lastAnswerAt + (this.lastInterval ?? 5) * 1000
      if (next > deadline) {
        throw new WalletProtocolError({
          step: 'deferred',
          status: 400,
          error: 'issuance_pending',
          errorDescription: `still pending after ${opts.timeoutMs} ms (transaction ${transactionId})`,
        })
      }
      const ms = next - Date.now()
      if (ms > 0) await wait(ms, opts.signal)
      const result = await this.deferred(transactionId)
      opts.onPoll?.(result)
      if (result.status === 200) return result
    }
  }

  /** Sends a notification (default id: the last notification_id received in this session). Expects 204. */
  async notify(
    event: NotificationEvent,
    opts: { notificationId?: string; description?: string } = {},
  ): Promise<void> {
    const token = this.requireToken()
    const notificationId = opts.notificationId ?? this.lastNotificationId
    if (!notificationId) throw new WalletUsageError('no notification_id to notify about')
    if (this.v1) {
      return this.v1.notify(this.access(token), {
        notificationId,
        event,
        ...(opts.description !== undefined && { eventDescription: opts.description }),
      })
    }
    const answer = await send(
      'notification',
      this.endpoint('notification_endpoint'),
      {
        method: 'POST',
        json: {
          notification_id: notificationId,
          event,
          ...(opts.description !== undefined && { event_description: opts.description }),
        },
        bearer: token.access_token,
      },
      this.wallet.http,
    )
    if (answer.status < 200 || answer.status >= 300) {
      throw protocolError('notification', answer.status, answer.body, answer.headers['www-authenticate'])
    }
  }

  /** Verifies credentials this session received and stores them in the wallet. */
  async accept(issued: IssuedCredentials, configurationId?: string): Promise<StoredCredential[]> {
    const id = configurationId ?? (this.offer.credential_configuration_ids[0] as string)
    const configuration = (this.configurations[id] ?? {}) as Record<string, unknown>
    return this.wallet.accept(issued.credentials, {
      credentialIssuer: this.credentialIssuer,
      configurationId: id,
      status: issued.status,
      format: typeof configuration.format === 'string' ? configuration.format : undefined,
      vct: typeof configuration.vct === 'string' ? configuration.vct : undefined,
      doctype: typeof configuration.doctype === 'string' ? configuration.doctype : undefined,
      // at receipt the status lists are read: a credential revoked already is refused, not stored
      checkStatus: true,
      // a batch's credentials are bound to the keys its proofs showed, each stored with its key
      ...(this.proofKeys && { holders: this.proofKeys }),
    })
  }
}

/** A batch is a whole number of copies, 1 or more (StartIssuanceOptions.batch): a WalletUsageError otherwise. */
function checkBatchNumber(batch: number | undefined): void {
  if (batch !== undefined && (!Number.isInteger(batch) || batch < 1)) {
    throw new WalletUsageError(`batch: a whole number of copies, 1 or more, not ${batch}`)
  }
}

/**
 * Why the issuer cannot issue `batch` copies in one request, or undefined: §12.2.4 batch_credential_issuance
 * "the Credential Issuer supports batch issuance", its batch_size "the maximum array size for the proofs
 * parameter"; an issuer without it takes one proof per request (the OWF client refuses more too).
 */
function batchSizeProblem(batch: number, metadata: Record<string, unknown>): string | undefined {
  if (batch <= 1) return undefined
  const announced = metadata.batch_credential_issuance
  const size =
    isObject(announced) && typeof announced.batch_size === 'number' ? announced.batch_size : undefined
  if (size === undefined) {
    return `a batch of ${batch} copies asked for, but ${String(metadata.credential_issuer)} announces no batch issuance (no batch_credential_issuance in its metadata, OpenID4VCI 1.0 §12.2.4): ask for one copy; nothing was sent`
  }
  if (batch > size) {
    return `a batch of ${batch} copies asked for, but ${String(metadata.credential_issuer)} takes at most ${size} key proofs per request (batch_credential_issuance.batch_size, OpenID4VCI 1.0 §12.2.4); nothing was sent`
  }
  return undefined
}

/** GET credential_offer_uri: a JSON object, or a WalletProtocolError with what the server answered. */
async function fetchOffer(offerUri: string, http: WalletHttp): Promise<Record<string, unknown>> {
  const answer = await send('offer', offerUri, { method: 'GET' }, http)
  if (answer.status < 200 || answer.status >= 300) throw protocolError('offer', answer.status, answer.body)
  const contentType = answer.headers['content-type'] ?? ''
  const invalid = (description: string) =>
    new WalletProtocolError({
      step: 'offer',
      status: answer.status,
      error: 'invalid_credential_offer',
      errorDescription: description,
      body: answer.body,
    })
  if (!contentType.startsWith('application/json'))
    throw invalid(`content type ${contentType || '(none)'} is not application/json`)
  if (!isObject(answer.body)) throw invalid('the offer is not a JSON object')
  return answer.body
}

/** `<identifier>/.well-known/<name>`: the well-known path appended, as oid4vci-client 0.20.1 places it. */
function wellKnown(identifier: string, name = 'openid-credential-issuer'): string {
  return `${identifier.replace(/\/$/, '')}/.well-known/${name}`
}

const stringOf = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined

/**
 * Draft-15 discovery as oid4vci-client 0.20.1's MetadataClientV1_0_15.retrieveAllMetadata does it, in the
 * same order and with the same fallbacks, over the wallet's HTTP client: the credential issuer metadata
 * (appended well-known path), then the first authorization server's (the issuer itself unless the metadata
 * names `authorization_servers`) `openid-configuration`, else `oauth-authorization-server`; its token,
 * credential, deferred and notification endpoints complete the issuer's; with no authorization server
 * metadata from the issuer itself, `<issuer>/token` and `<issuer>/credential`. Answers the library's result
 * shape (its V1_0_15 subset of the issuer metadata), the status of the metadata answer and the document.
 */
async function discoverDraft15(
  issuer: string,
  http: WalletHttp,
): Promise<{ endpoints: EndpointMetadataResultV1_0_15; status: number; document: unknown }> {
  const url = wellKnown(issuer)
  const answer = await send('metadata', url, { method: 'GET' }, http)
  if (answer.status < 200 || answer.status >= 300) throw protocolError('metadata', answer.status, answer.body)
  const invalid = (description: string) =>
    new WalletProtocolError({
      step: 'metadata',
      status: answer.status,
      error: 'invalid_issuer_metadata',
      errorDescription: description,
      body: answer.body,
    })
  if (!isObject(answer.body)) throw invalid(`${url} did not answer a JSON object`)
  const ci = answer.body
  let tokenEndpoint = stringOf(ci.token_endpoint)
  let credentialEndpoint = stringOf(ci.credential_endpoint)
  let deferredEndpoint = stringOf(ci.deferred_credential_endpoint)
  let notificationEndpoint = stringOf(ci.notification_endpoint)
  const nonceEndpoint = stringOf(ci.nonce_endpoint)
  const servers =
    Array.isArray(ci.authorization_servers) && ci.authorization_servers.length > 0
      ? ci.authorization_servers.filter((s): s is string => typeof s === 'string')
      : [issuer]
  const server = servers[0] ?? issuer
  // the library's label: OIDC when openid-configuration answered, else OID4VCI
  let authorizationServerType = 'OID4VCI'
  let as: Record<string, unknown> | undefined
  for (const name of ['openid-configuration', 'oauth-authorization-server']) {
    const found = await send('metadata', wellKnown(server, name), { method: 'GET' }, http)
    if (found.status >= 200 && found.status < 300 && isObject(found.body)) {
      as = found.body
      if (name === 'openid-configuration') authorizationServerType = 'OIDC'
      break
    }
  }
  if (!as) {
    if (!servers.includes(issuer)) {
      throw invalid(
        `the issuer names the authorization server ${server}, which serves no authorization server metadata (RFC 8414 §3)`,
      )
    }
  } else {
    const asToken = stringOf(as.token_endpoint)
    if (!asToken) throw invalid(`the authorization server ${server} names no token_endpoint (RFC 8414 §2)`)
    if (tokenEndpoint && asToken !== tokenEndpoint) {
      throw invalid(
        `the credential issuer's token_endpoint ${tokenEndpoint} differs from its authorization server's ${asToken}`,
      )
    }
    tokenEndpoint = asToken
    // the issuer's own values win, as in the library
    credentialEndpoint ??= stringOf(as.credential_endpoint)
    deferredEndpoint ??= stringOf(as.deferred_credential_endpoint)
    notificationEndpoint ??= stringOf(as.notification_endpoint)
  }
  const base = issuer.replace(/\/$/, '')
  tokenEndpoint ??= `${base}/token`
  credentialEndpoint ??= `${base}/credential`
  const credentialIssuerMetadata = {
    credential_issuer: ci.credential_issuer ?? issuer,
    credential_endpoint: credentialEndpoint,
    authorization_servers: servers,
    credential_configurations_supported: isObject(ci.credential_configurations_supported)
      ? ci.credential_configurations_supported
      : {},
    display: Array.isArray(ci.display) ? ci.display : [],
    ...(nonceEndpoint && { nonce_endpoint: nonceEndpoint }),
    ...(deferredEndpoint && { deferred_credential_endpoint: deferredEndpoint }),
    ...(notificationEndpoint && { notification_endpoint: notificationEndpoint }),
  }
  const endpoints = {
    issuer,
    token_endpoint: tokenEndpoint,
    credential_endpoint: credentialEndpoint,
    ...(notificationEndpoint && { notification_endpoint: notificationEndpoint }),
    authorizationServerType,
    credentialIssuerMetadata,
    ...(as && { authorizationServerMetadata: as }),
  } as unknown as EndpointMetadataResultV1_0_15
  return { endpoints, status: answer.status, document: ci }
}
