// The simulated wallet: a Veramo agent holding one did:key, a credential store, OpenID4VCI issuance (step by
// step through IssuanceSession, or in one call with receive()) and OpenID4VP presentation (step by step
// through PresentationSession, or in one call with present()).

import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import type { LdProofType } from '../formats/ldp-vc/suites.ts'
import { issuerIdOf, ldpVc } from '../formats/ldp-vc/verify.ts'
import { DEFAULT_ISSUANCE_FORMAT, type FormatId, formatNamed } from '../formats/registry.ts'
import type { DiSigner } from '../shared/data-integrity.ts'
import { didKeyFromPublicKey, type JwsAlg, resolveDidKey } from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws } from '../shared/jws.ts'
import { MDOC_FORMAT } from '../shared/mdoc.ts'
import { SD_JWT_VC_TYP } from '../shared/wire.ts'
import {
  type AgentHandle,
  createHolder,
  createWalletAgent,
  exportPrivateKeyHex,
  type HolderKey,
  privateJwkFromHex,
  privateKeyFromHex,
  type WalletAgent,
} from './agent.ts'
import { CredentialStatusError, ReceiptStatusChecker } from './credential-status.ts'
import type { DeviceSigner } from './defects.ts'
import { WalletProtocolError, WalletUsageError } from './errors.ts'
import { deviceSignerOf, freshProofKey, type ProofKey, privateKeyHexOf, proofKeyOf } from './holder-keys.ts'
import { type FetchLike, type HttpLimits, httpLimits, type WalletHttp } from './http.ts'
import {
  type CredentialOrigin,
  type CredentialResult,
  IssuanceSession,
  type IssuedCredentials,
  type NotificationEvent,
  type Sleep,
  type StartIssuanceOptions,
  type WalletContext,
} from './issuance.ts'
import type { AuthorizationOptions, IssuanceFlow } from './issuance-authorization.ts'
import type { IssuanceProtocol } from './issuance-v1.ts'
import type { V1ProofType } from './key-attestation.ts'
import { loadX509 } from './lazy.ts'
import { MdocReceiveError, parseReceivedMdoc, verifyReceivedMdoc } from './mdoc-receive.ts'
import {
  type AuthorizationMisbehaviour,
  assertPresentationMisbehaviours,
  type IssuanceMisbehaviour,
  isAuthorizationMisbehaviour,
  isMisbehaviour,
  isPresentationMisbehaviour,
  type Misbehaviour,
  type PresentationMisbehaviour,
  splitIssuanceMisbehaviours,
  V1_ONLY_MISBEHAVIOURS,
  V1_ONLY_PRESENTATION_MISBEHAVIOURS,
} from './misbehaviour.ts'
import {
  type PresentationContext,
  type PresentationResult,
  PresentationSession,
  type PresentStep,
  type RememberedPresentation,
  type StartPresentationOptions,
} from './presentation.ts'
import {
  type DcApiInput,
  type DcApiPresentationResult,
  type PresentDcApiOptions,
  presentDcApi,
} from './presentation-dc-api.ts'
import { checkForcedLdProofType, type LdPresenter, presenterOf } from './presentation-ldp.ts'
import { linkKind, parsePresentationLink } from './presentation-link.ts'
import { checkAnswerMisbehaviours, PresentationSessionV1 } from './presentation-v1.ts'
import { isV1Link } from './presentation-v1-request.ts'
import type { JwtSigner } from './proof.ts'
import { parseReceivedSdJwt, SdJwtReceiveError, verifyReceivedSdJwt } from './sd-jwt-receive.ts'
import type { SharePolicy } from './share.ts'
import {
  emptyState,
  FileWalletStore,
  type HolderKeyType,
  MemoryWalletStore,
  type StoredCredential,
  type StoredHolder,
  WalletFileError,
  type WalletState,
  type WalletStore,
} from './store.ts'

export interface WalletOptions {
  /** holder key type of a new wallet; default Ed25519. Must match the key of an existing wallet file. */
  keyType?: HolderKeyType
  /** keep keys and credentials in this JSON file (created on first use); default: in memory only */
  file?: string
  /**
   * HTTP client for every request of the wallet (offer, metadata, token, nonce, credential, deferred,
   * notification, status lists, request objects, responses; the OpenID4VCI 1.0 library's too), always
   * within `http`'s deadline and body cap and never following a redirect; default undici.request (the 1.0
   * library: the global fetch)
   */
  fetch?: FetchLike
  /**
   * Bounds of every HTTP request (http.ts): `timeoutMs` the total deadline of one request, connect, headers
   * and body (default 30 000); `maxBodyBytes` the most of an answer's body read (default 1 MiB). CLI
   * --http-timeout, --http-max-body.
   */
  http?: Partial<HttpLimits>
  /**
   * OpenID4VCI generation to speak: 'auto' (default: 1.0 when the issuer metadata has `credential_metadata`
   * on a configuration, else draft 15), '1.0' or 'draft15'. See src/wallet/README.md.
   */
  protocol?: IssuanceProtocol
  /**
   * PEM certificates (CAs, or pinned leaves) an SD-JWT VC's `x5c` chain must lead to (SD-JWT VC §3.5,
   * HAIP); default none: x5c-signed credentials are then refused. Not saved in the wallet file.
   */
  trustAnchors?: readonly string[]
  /**
   * The Linked Data proof type of every ldp_vp this wallet signs (Presentation Exchange and OpenID4VP 1.0):
   * Ed25519Signature2018, JsonWebSignature2020, EcdsaSecp256k1Signature2019, eddsa-rdfc-2022 or
   * ecdsa-rdfc-2019, one the holder key type makes (else a WalletUsageError here); default: the first the
   * verifier lists that the key makes (presentation-ldp.ts). A call's `ldProofType` overrides it. CLI
   * --ldp-proof-type.
   */
  ldpProofType?: string
  /**
   * TEST ONLY: a careless wallet that verifies nothing it is shown. It exists to prove that wallet test plans
   * fail a wallet that checks nothing (each negative case must catch it); never offered by the CLI or the
   * environment. Receiving: issuer metadata naming another credential_issuer is used, credentials are only
   * parsed (no signature, holder binding, expiry, disclosure or status check) and acknowledged with
   * credential_accepted, and on the draft-15 path a token answer without c_nonce gets a proof without nonce
   * (no nonce endpoint, no retry). Presenting: no request object signature, client_id, nonce (missing or
   * reused), expiry, response_uri origin or client identifier prefix check (an unknown prefix is taken for
   * decentralized_identifier), and when nothing held matches the query the first held credential is presented
   * anyway under every credential query id / input descriptor.
   */
  trustEverything?: boolean
  /**
   * The authorization code flow (OpenID4VCI 1.0 §5 as HAIP 1.0 profiles it): the redirect_uri (default
   * https://wallet.vc-harness.invalid/callback), the wallet provider that signs the wallet attestation (default
   * the built-in TEST provider), the client_id, and the user step for an authorization endpoint that shows a
   * page (issuance-authorization.ts). Not saved in the wallet file.
   */
  authorization?: AuthorizationOptions
}

export type ReceiveStep =
  | 'offer'
  | 'metadata'
  // the authorization code flow: PAR, the authorization endpoint and the checked authorization response
  | 'authorization'
  | 'token'
  | 'credential'
  | 'deferred'
  | 'verify'
  | 'notification'

export interface ReceiveOptions {
  txCode?: string
  /** misbehaviours of either flow (the authorization code flow's: AUTHORIZATION_MISBEHAVIOURS) */
  misbehave?: readonly IssuanceMisbehaviour[]
  /** poll the deferred endpoint when the credential is not issued at once; default false. true: up to 10 min */
  waitForDeferred?: boolean | { timeoutMs: number }
  onStep?: (step: ReceiveStep, detail?: unknown) => void
  /** this issuance only: overrides the wallet's `protocol` */
  protocol?: IssuanceProtocol
  /**
   * which flow redeems the offer: default the pre-authorized code when the offer has one, else the
   * authorization code flow; 'authorization_code' takes that flow for an offer granting both
   */
  flow?: IssuanceFlow
  /** this issuance only: authorization code flow options over the wallet's (e.g. a userStep) */
  authorization?: AuthorizationOptions
  /** how the deferred poll waits the announced interval; default a real timer (tests pass a fake) */
  sleep?: Sleep
  /**
   * What may be shared with an issuer whose offer asks for a presentation (a draft-15 offer's
   * presentation_definition, answered in a di_vp proof): 'all', or held credential ids, types or issuers
   * (share.ts). Default nothing: such an offer is refused (ShareNotAllowedError) before the code is redeemed.
   */
  share?: SharePolicy
  /**
   * How many copies to ask for, each bound to a key of its own (StartIssuanceOptions.batch: OpenID4VCI 1.0
   * §3.3.2; at most the issuer's batch_size, else a WalletUsageError before anything is sent). Every copy is
   * stored with its key; presenting one signs with that key. Default 1. CLI --batch N.
   */
  batch?: number
  /**
   * Attach a key attestation (Appendix D) to every jwt proof even where the configuration requires none
   * (StartIssuanceOptions.keyAttestation). CLI --key-attestation.
   */
  keyAttestation?: boolean
  /**
   * The key proof on the 1.0 path: 'jwt' (default, with a key attestation where required) or 'attestation'
   * (Appendix F.3: one key attestation of every key, with the c_nonce; the default where the configuration
   * offers it and not jwt). CLI --proof-type.
   */
  proofType?: V1ProofType
}

export type ReceiveResult =
  | {
      status: 'issued'
      credentials: StoredCredential[]
      notificationId?: string
      session: IssuanceSession
    }
  | {
      status: 'pending'
      transactionId: string
      interval?: number
      session: IssuanceSession
    }

export interface PresentOptions {
  misbehave?: readonly PresentationMisbehaviour[]
  onStep?: (step: PresentStep, detail?: unknown) => void
  /** the wallet's clock in ms (request object expiry, VP `iat`); default Date.now */
  now?: () => number
  /** error_description of the 'access-denied' answer */
  errorDescription?: string
  /**
   * A query the held credentials cannot satisfy (a DCQL query, OpenID4VP 1.0; a presentation_definition,
   * draft 20) throws DcqlUnsatisfiedError / NoMatchingCredentialsError and sends nothing ('throw', default),
   * or is answered `access_denied` naming what is missing ('access-denied', §8.5)
   */
  onUnsatisfied?: 'throw' | 'access-denied'
  /**
   * an ldp_vp answer (Presentation Exchange, OpenID4VP 1.0): the Linked Data proof type to sign with, instead of
   * the wallet's `ldpProofType` or the verifier's first (presentation-ldp.ts)
   */
  ldProofType?: string
}

/** Wallet.open: the options of receive and present, each applied where it means something. */
export interface OpenOptions {
  /** issuance: the transaction code the issuer showed out of band */
  txCode?: string
  /** issuance or presentation misbehaviours; one of the other flow's is a WalletUsageError */
  misbehave?: readonly (Misbehaviour | AuthorizationMisbehaviour | PresentationMisbehaviour)[]
  /** issuance: poll the deferred endpoint (default false; true: up to 10 min) */
  waitForDeferred?: boolean | { timeoutMs: number }
  /** issuance: overrides the wallet's `protocol` */
  protocol?: IssuanceProtocol
  /** issuance: which flow redeems the offer (ReceiveOptions.flow) */
  flow?: IssuanceFlow
  /** issuance: authorization code flow options over the wallet's */
  authorization?: AuthorizationOptions
  sleep?: Sleep
  /** issuance: what may be shared with an issuer that asks for a presentation (ReceiveOptions.share) */
  share?: SharePolicy
  /** issuance: how many copies, one key each (ReceiveOptions.batch) */
  batch?: number
  /** issuance: attach key attestations even where none is required (ReceiveOptions.keyAttestation) */
  keyAttestation?: boolean
  /** issuance: the key proof type on the 1.0 path (ReceiveOptions.proofType) */
  proofType?: V1ProofType
  onStep?: (step: ReceiveStep | PresentStep, detail?: unknown) => void
  /** presentation: the wallet's clock in ms */
  now?: () => number
  /** presentation: error_description of the wallet's access_denied answer */
  errorDescription?: string
  /**
   * presentation: a query nothing held satisfies is answered access_denied ('access-denied', the default
   * here) or refused without an answer ('throw')
   */
  onUnsatisfied?: 'throw' | 'access-denied'
  /** presentation: the Linked Data proof type of an ldp_vp (PresentOptions.ldProofType) */
  ldProofType?: string
}

/** What Wallet.open did: received (ReceiveResult: issued, or pending) or presented (PresentationResult). */
export type OpenResult =
  | { kind: 'issuance'; result: ReceiveResult }
  | { kind: 'presentation'; result: PresentationResult }

/**
 * Wallet.open answered the verifier with an error instead of a presentation (access_denied: nothing held
 * satisfies the query, or the 'access-denied' misbehaviour): the wallet did not present. `result` is what was
 * posted and what the verifier answered.
 */
export class PresentationDeclinedError extends Error {
  override name = 'PresentationDeclinedError'
  constructor(readonly result: PresentationResult) {
    super(
      `declined: answered ${String(result.form.error)} (${String(result.form.error_description)}) to ${result.clientId}; nothing was presented`,
    )
  }
}

const DEFAULT_DEFERRED_TIMEOUT_MS = 10 * 60 * 1000
const MAX_REMEMBERED_NONCES = 64
/** How many answered presentation nonces a wallet keeps (OpenID4VP 1.0 §14.1 replay refusal). */
export const MAX_ANSWERED_NONCES = 64

/** Whether a retry with a fresh nonce is the right answer to a credential request refused for its nonce. */
function isNonceRefusal(error: unknown): error is WalletProtocolError {
  return (
    error instanceof WalletProtocolError && error.step === 'credential' && error.error === 'invalid_nonce'
  )
}

/** What of ReceiveOptions starts the session. */
function startOptions(opts: ReceiveOptions): StartIssuanceOptions {
  return {
    ...(opts.protocol && { protocol: opts.protocol }),
    ...(opts.flow && { flow: opts.flow }),
    ...(opts.authorization && { authorization: opts.authorization }),
    ...(opts.batch !== undefined && { batch: opts.batch }),
    ...(opts.keyAttestation !== undefined && { keyAttestation: opts.keyAttestation }),
  }
}

function asStringArray(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
}

/**
 * Why a JWT VC is past its validity period at `nowMs`, or undefined: `exp` (RFC 7519 §4.1.4), the VC's own
 * `expirationDate` (VC Data Model 1.1) or `validUntil` (VC Data Model 2.0). A clear refusal before the
 * signature check, whose library names only the first of them.
 */
function expiryProblem(
  payload: Record<string, unknown>,
  vc: Record<string, unknown>,
  nowMs: number,
): string | undefined {
  if (typeof payload.exp === 'number' && payload.exp * 1000 <= nowMs) {
    return `validity period: exp ${new Date(payload.exp * 1000).toISOString()} has passed (RFC 7519 §4.1.4); an expired credential is not stored`
  }
  for (const name of ['expirationDate', 'validUntil']) {
    const value = vc[name]
    if (typeof value !== 'string') continue
    const at = Date.parse(value)
    if (!Number.isNaN(at) && at <= nowMs) {
      return `validity period: ${name} ${value} has passed (VC Data Model ${name === 'validUntil' ? '2.0' : '1.1'}); an expired credential is not stored`
    }
  }
  return undefined
}

/**
 * Why an ldp_vc is outside its validity period at `nowMs`, or undefined: `issuanceDate` / `validFrom` not yet
 * reached (60 s of clock skew allowed), `expirationDate` / `validUntil` passed, or one that is not a date.
 */
function ldValidityProblem(
  bounds: readonly { kind: 'notBefore' | 'notAfter'; at: number; shown: string }[],
  nowMs: number,
): string | undefined {
  for (const bound of bounds) {
    if (Number.isNaN(bound.at))
      return `validity period: ${JSON.stringify(bound.shown)} is not an XML Schema dateTime (VC Data Model 1.1 §4.6, §4.8)`
    if (bound.kind === 'notAfter' && bound.at <= nowMs)
      return `validity period: expirationDate / validUntil ${bound.shown} has passed (VC Data Model 1.1 §4.8, 2.0 §4.9); an expired credential is not stored`
    if (bound.kind === 'notBefore' && bound.at > nowMs + LD_CLOCK_SKEW_MS)
      return `validity period: issuanceDate / validFrom ${bound.shown} is in the future (VC Data Model 1.1 §4.6, 2.0 §4.9)`
  }
  return undefined
}
const LD_CLOCK_SKEW_MS = 60_000

/**
 * The key among `holders` (the keys a request proved) that `did` names, else the first (the wallet's own): a
 * credential bound to none of them is then refused by that key's holder-binding check, as before batches.
 */
function holderNamed(holders: readonly ProofKey[], did: string | undefined): ProofKey {
  return holders.find((h) => h.did === did) ?? (holders[0] as ProofKey)
}

/** The did:key of an SD-JWT VC's `cnf.jwk` (issuer-signed, read unverified to pick the key to verify against). */
function cnfDidOf(compact: string): string | undefined {
  try {
    const cnf = decodeJws(compact.split('~')[0] ?? '').payload.cnf
    const jwk = isObject(cnf) ? cnf.jwk : undefined
    return isObject(jwk)
      ? didKeyFromPublicKey(createPublicKey({ key: jwk as never, format: 'jwk' })).did
      : undefined
  } catch {
    return undefined
  }
}

function isoFromSeconds(value: unknown): string | undefined {
  return typeof value === 'number' && Number.isFinite(value)
    ? new Date(value * 1000).toISOString()
    : undefined
}

export class Wallet implements WalletContext, PresentationContext {
  readonly agent: WalletAgent
  readonly did: string
  /** the holder's did:key key id (`did#multibase`), as proofs name it */
  readonly kid: string
  readonly alg: JwsAlg
  readonly keyType: HolderKeyType
  /** the HTTP client and limits of every request (WalletOptions.fetch and .http) */
  readonly http: WalletHttp
  readonly protocol: IssuanceProtocol
  /** where the state lives: a file path or '(memory)' */
  readonly location: string
  /** PEM trust anchors for x5c issuer keys (WalletOptions.trustAnchors) */
  readonly trustAnchors: readonly string[]
  /** WalletOptions.trustEverything: the test-only careless wallet */
  readonly trustEverything: boolean
  /** WalletOptions.ldpProofType: the proof type of every ldp_vp, checked against the key type */
  readonly ldpProofType: LdProofType | undefined
  /** WalletOptions.authorization: how the wallet takes part in the authorization code flow */
  readonly authorization: AuthorizationOptions

  private readonly handle: AgentHandle
  private readonly holder: HolderKey
  /** the further keys of batches held (WalletState.keys), by did */
  private readonly batchKeys: Map<string, KeyObject>
  private readonly store: WalletStore
  private readonly state: WalletState
  private readonly consumedNonces: string[] = []
  private lastAccepted: RememberedPresentation | undefined

  private constructor(
    handle: AgentHandle,
    holder: HolderKey,
    store: WalletStore,
    state: WalletState,
    http: WalletHttp,
    protocol?: IssuanceProtocol,
    trustAnchors: readonly string[] = [],
    trustEverything = false,
    ldpProofType?: LdProofType,
    authorization: AuthorizationOptions = {},
    batchKeys: Map<string, KeyObject> = new Map(),
  ) {
    this.handle = handle
    this.agent = handle.agent
    this.holder = holder
    this.batchKeys = batchKeys
    this.store = store
    this.state = state
    this.did = holder.did
    this.kid = holder.kid
    this.alg = holder.alg
    this.keyType = holder.keyType
    this.http = http
    this.protocol = protocol ?? 'auto'
    this.location = store.location
    this.trustAnchors = trustAnchors
    this.trustEverything = trustEverything
    this.ldpProofType = ldpProofType
    this.authorization = authorization
  }

  /** A new wallet, or the one kept in `file`. */
  static async create(opts: WalletOptions = {}): Promise<Wallet> {
    let limits: HttpLimits
    try {
      limits = httpLimits(opts.http)
    } catch (error) {
      throw new WalletUsageError((error as Error).message)
    }
    const trustAnchors = [...(opts.trustAnchors ?? [])]
    if (trustAnchors.length > 0) {
      // Refused at once rather than at the first x5c credential: a typo in a PEM file is a usage error.
      const { parseCertificates, X509Error } = await loadX509()
      trustAnchors.forEach((pem, i) => {
        try {
          parseCertificates(pem, `trustAnchors[${i}]`)
        } catch (error) {
          if (error instanceof X509Error) throw new WalletUsageError(error.message)
          throw error
        }
      })
    }
    const store: WalletStore = opts.file ? new FileWalletStore(opts.file) : new MemoryWalletStore()
    const state = (await store.load()) ?? emptyState()
    // a proof type the holder key cannot make is refused before any key is made or anything is sent
    const ldpKeyType = state.holder?.keyType ?? opts.keyType ?? 'Ed25519'
    const ldpProofType =
      opts.ldpProofType === undefined ? undefined : checkForcedLdProofType(ldpKeyType, opts.ldpProofType)
    const handle = createWalletAgent()
    let holder: HolderKey
    if (state.holder) {
      const saved = state.holder
      if (opts.keyType && opts.keyType !== saved.keyType) {
        throw new WalletUsageError(
          `${store.location} holds a ${saved.keyType} holder key (${saved.did}); it cannot become ${opts.keyType}`,
        )
      }
      if (!saved.privateKeyHex) throw new WalletFileError(`${store.location}: holder has no private key`)
      holder = await createHolder(handle.agent, saved.keyType, saved.privateKeyHex)
      if (holder.did !== saved.did) {
        throw new WalletFileError(`${store.location}: the private key does not belong to ${saved.did}`)
      }
    } else {
      holder = await createHolder(handle.agent, opts.keyType ?? 'Ed25519')
      state.holder = {
        keyType: holder.keyType,
        did: holder.did,
        kid: holder.kid,
        // the private key is written only where the user asked for a file
        ...(store.persistent && { privateKeyHex: await exportPrivateKeyHex(handle, holder) }),
      }
      await store.save(state)
    }
    // the further keys of batches received into this file (holder-keys.ts)
    const batchKeys = new Map<string, KeyObject>()
    for (const saved of state.keys ?? []) {
      if (!saved.privateKeyHex)
        throw new WalletFileError(`${store.location}: key ${saved.did} has no private key`)
      const privateKey = privateKeyFromHex(saved.keyType, saved.privateKeyHex)
      if (proofKeyOf(privateKey).did !== saved.did) {
        throw new WalletFileError(`${store.location}: the private key does not belong to ${saved.did}`)
      }
      batchKeys.set(saved.did, privateKey)
    }
    return new Wallet(
      handle,
      holder,
      store,
      state,
      { ...limits, fetch: opts.fetch },
      opts.protocol,
      trustAnchors,
      opts.trustEverything === true,
      ldpProofType,
      opts.authorization,
      batchKeys,
    )
  }

  /** The credentials held, oldest first. */
  credentials(): StoredCredential[] {
    return structuredClone(this.state.credentials)
  }

  /** Starts an issuance from a deep link: reads the offer and the issuer metadata. */
  startIssuance(deepLink: string, opts: StartIssuanceOptions = {}): Promise<IssuanceSession> {
    return IssuanceSession.start(this, deepLink, opts)
  }

  /**
   * Starts a wallet-initiated issuance (no offer): the authorization code flow for `configurationId` of the
   * credential issuer's metadata (IssuanceSession.startAt).
   */
  startIssuanceAt(
    credentialIssuer: string,
    configurationId: string,
    opts: Omit<StartIssuanceOptions, 'flow'> = {},
  ): Promise<IssuanceSession> {
    return IssuanceSession.startAt(this, credentialIssuer, configurationId, opts)
  }

  /**
   * The whole issuance of an offer: offer, metadata, the access token (the pre-authorized code; or the
   * authorization code flow: PAR, the authorization endpoint, the token request with PKCE, wallet attestation
   * and DPoP), credential request (jwt proof, or di_vp when the offer asks for a presentation), deferred
   * polling when asked, verification, storage, and a credential_accepted notification.
   */
  async receive(deepLink: string, opts: ReceiveOptions = {}): Promise<ReceiveResult> {
    splitIssuanceMisbehaviours(opts.misbehave) // an unknown name is a TypeError before anything is fetched
    const session = await this.startIssuance(deepLink, startOptions(opts))
    return this.complete(session, opts)
  }

  /**
   * Wallet-initiated issuance in one call (OpenID4VCI 1.0 §3.5, no offer): the credential issuer's metadata,
   * its authorization server's, then the authorization code flow for `configurationId` and the rest as
   * receive does.
   */
  async request(
    credentialIssuer: string,
    configurationId: string,
    opts: Omit<ReceiveOptions, 'flow' | 'txCode'> = {},
  ): Promise<ReceiveResult> {
    splitIssuanceMisbehaviours(opts.misbehave)
    const session = await this.startIssuanceAt(credentialIssuer, configurationId, startOptions(opts))
    return this.complete(session, opts)
  }

  /** receive and request after the session started: token, credential, deferred, verify, store, notify. */
  private async complete(session: IssuanceSession, opts: ReceiveOptions): Promise<ReceiveResult> {
    const step = opts.onStep ?? (() => {})
    const all = opts.misbehave ?? []
    const misbehave = splitIssuanceMisbehaviours(all).common
    const v1Only = misbehave.filter((m) => V1_ONLY_MISBEHAVIOURS.includes(m))
    if (v1Only.length > 0 && session.protocol !== '1.0') {
      // refused before the single-use code is redeemed
      throw new WalletUsageError(
        `misbehaviour ${v1Only.join(', ')} is spoken on the OpenID4VCI 1.0 path only (a legacy shape sent to a 1.0 issuer, or a key attestation); ${session.credentialIssuer} is spoken to in draft 15`,
      )
    }
    step('offer', session.offer)
    step('metadata', session.issuerMetadata)
    // what the offer asks to be presented is settled before the single-use pre-authorized code is redeemed:
    // nothing unless the holder said what may be shared (opts.share)
    let present: string[] | undefined
    if (session.presentationDefinition) {
      this.diSigner() // a WalletUsageError for a holder key that cannot make the di_vp proof
      present = await session.selectCredentials(opts.share)
    } else {
      // a WalletUsageError for a holder key the configuration's jwt proof (an mdoc's device key: ES256) refuses
      session.assertHolderKey()
    }
    if (session.flow === 'authorization_code') {
      const grant = await session.authorize({ misbehave: all })
      step('authorization', {
        authorizationServer: grant.authorizationServer,
        clientId: session.authorization?.clientId,
        requestUri: grant.requestUri,
        via: grant.via,
        iss: grant.iss,
      })
    }
    const token = await session.token({
      ...(opts.txCode !== undefined && { txCode: opts.txCode }),
      misbehave: all,
    })
    step('token', { token_type: token.token_type, expires_in: token.expires_in })
    let result: CredentialResult
    const proofType = opts.proofType && { proofType: opts.proofType }
    try {
      result = await session.requestCredential({ misbehave: all, ...(present && { present }), ...proofType })
    } catch (error) {
      // OpenID4VCI 1.0 §8.3.1.2 / draft 15 §8.3.1: invalid_nonce asks for a proof with a fresh nonce — the
      // one the error carries (draft 15's c_nonce), else one from the nonce endpoint. Retried once, and only
      // for an honest request (a misbehaving one is meant to get the refusal); the careless wallet gives up.
      if (!isNonceRefusal(error) || all.length > 0 || this.trustEverything) throw error
      const body = error.body
      const cNonce = isObject(body) && typeof body.c_nonce === 'string' ? body.c_nonce : undefined
      step('credential', { status: error.status, error: error.error, retry: cNonce ? 'c_nonce' : 'nonce' })
      result = await session.requestCredential({ ...(present && { present }), nonce: cNonce, ...proofType })
    }
    step('credential', result.status === 200 ? { status: 200 } : result)
    let issued: IssuedCredentials
    if (result.status === 202) {
      const wait = opts.waitForDeferred ?? false
      if (wait === false) {
        return {
          status: 'pending',
          transactionId: result.transactionId,
          ...(result.interval !== undefined && { interval: result.interval }),
          session,
        }
      }
      const timeoutMs = wait === true ? DEFAULT_DEFERRED_TIMEOUT_MS : wait.timeoutMs
      issued = await session.awaitDeferred(result.transactionId, {
        timeoutMs,
        onPoll: (poll) => step('deferred', poll.status === 200 ? { status: 200 } : poll),
        ...(opts.sleep && { sleep: opts.sleep }),
      })
    } else {
      issued = result
    }
    let stored: StoredCredential[]
    try {
      stored = await session.accept(issued)
    } catch (error) {
      // tell the issuer, then report what was wrong with the credential
      if (issued.notificationId && error instanceof WalletProtocolError) {
        await this.notifyQuietly(session, 'credential_failure', issued.notificationId, error.message)
      }
      throw error
    }
    step('verify', stored)
    if (issued.notificationId) {
      await session.notify('credential_accepted', { notificationId: issued.notificationId })
      step('notification', 'credential_accepted')
    }
    return {
      status: 'issued',
      credentials: stored,
      ...(issued.notificationId && { notificationId: issued.notificationId }),
      session,
    }
  }

  /**
   * Starts a presentation from an OpenID4VP link as the QR code carries it (`openid-vp://?client_id=…&
   * request_uri=…`): fetches the request object and checks its signature, client_id, response mode and
   * expiry. `misbehave: ['expired-session']` skips the expiry check.
   */
  startPresentation(link: string, opts: StartPresentationOptions = {}): Promise<PresentationSession> {
    return PresentationSession.start(this, link, opts)
  }

  /**
   * Starts an OpenID4VP 1.0 presentation (a link whose client_id carries a 1.0 client identifier prefix, or
   * the request parameters by value): resolves the request (request_uri get or post, §5.10) and verifies it
   * per its prefix (§5.9.3). `misbehave: ['expired-session']` skips the expiry check.
   */
  startPresentationV1(link: string, opts: StartPresentationOptions = {}): Promise<PresentationSessionV1> {
    return PresentationSessionV1.start(this, link, opts)
  }

  /**
   * The whole presentation. OpenID4VP 1.0 links (client_id prefix, or parameters by value): DCQL selection,
   * SD-JWT VC and JWT VP presentations keyed by credential query id, direct_post or direct_post.jwt. Other
   * links (a bare DID client_id): Presentation Exchange, a JWT VP and presentation_submission (draft 20).
   * 'access-denied' answers the wallet's error answer instead.
   */
  async present(link: string, opts: PresentOptions = {}): Promise<PresentationResult> {
    const misbehave = assertPresentationMisbehaviours(opts.misbehave)
    const step = opts.onStep ?? (() => {})
    if (isV1Link(parsePresentationLink(link))) {
      // refused before the request is fetched (the DC API ones among them)
      checkAnswerMisbehaviours(misbehave, 'link')
      const v1 = await this.startPresentationV1(link, { misbehave, ...(opts.now && { now: opts.now }) })
      step('request', {
        profile: '1.0',
        clientId: v1.clientId,
        prefix: v1.prefix,
        requestUriMethod: v1.request.requestUriMethod,
        signed: v1.request.signed,
        responseUri: v1.responseUri,
        responseMode: v1.responseMode,
        dcqlQueryIds: v1.queryIds,
        expiresAt: v1.expiresAt,
      })
      return v1.respond({
        misbehave,
        onStep: step,
        ...(opts.errorDescription !== undefined && { errorDescription: opts.errorDescription }),
        ...(opts.onUnsatisfied !== undefined && { onUnsatisfied: opts.onUnsatisfied }),
        ...(opts.ldProofType !== undefined && { ldProofType: opts.ldProofType }),
      })
    }
    const v1Only = misbehave.filter((m) => V1_ONLY_PRESENTATION_MISBEHAVIOURS.includes(m))
    if (v1Only.length > 0) {
      // refused before the request object is fetched
      throw new WalletUsageError(
        `misbehaviour ${v1Only.join(', ')} applies to an OpenID4VP 1.0 (DCQL) answer only; this link is a Presentation Exchange (draft 20) request`,
      )
    }
    const session = await this.startPresentation(link, {
      misbehave,
      ...(opts.now && { now: opts.now }),
    })
    step('request', {
      profile: 'pe',
      clientId: session.clientId,
      responseUri: session.responseUri,
      definitionId: session.presentationDefinition.id,
      expiresAt: session.expiresAt,
    })
    return session.respond({
      misbehave,
      onStep: step,
      ...(opts.errorDescription !== undefined && { errorDescription: opts.errorDescription }),
      ...(opts.onUnsatisfied !== undefined && { onUnsatisfied: opts.onUnsatisfied }),
      ...(opts.ldProofType !== undefined && { ldProofType: opts.ldProofType }),
    })
  }

  /**
   * Answers an OpenID4VP 1.0 request over the W3C Digital Credentials API (Appendix A) as a platform wallet
   * does: `request` is what the page handed `navigator.credentials.get` (one `{protocol, data}` entry, or the
   * whole `{digital: {requests}}`: the first entry of openid4vp-v1-unsigned / -signed / -multisigned), `origin`
   * the caller's origin as the platform authenticated it. Returns the DigitalCredential `{protocol, data}`
   * (`response`: `{vp_token}` for dc_api, `{response: <JWE>}` for dc_api.jwt, `{error: 'access_denied', …}`
   * when declined) with what the wallet checked (`signatures` of a signed request) and presented; nothing is
   * posted. A refusal throws a WalletProtocolError of step `request` (dcApiErrorResponse makes the error answer
   * a platform returns of it). See presentation-dc-api.ts and README.md.
   */
  presentDcApi(input: DcApiInput, opts: PresentDcApiOptions = {}): Promise<DcApiPresentationResult> {
    return presentDcApi(this, input, opts)
  }

  /**
   * One entry for any link a QR code carries, as a wallet app opening it would: a credential offer
   * (`credential_offer_uri` / `credential_offer`) is received, an authorization request (`request_uri`,
   * `request`, `client_id`, `dcql_query`, `presentation_definition`, …; any scheme) is answered. A refusal
   * throws the wallet's errors (WalletProtocolError naming the rule and clause; WalletUsageError). A query
   * nothing held satisfies is declined with access_denied (onUnsatisfied default 'access-denied' here), then
   * PresentationDeclinedError is thrown: open resolves only when the wallet received or presented.
   */
  async open(link: string, opts: OpenOptions = {}): Promise<OpenResult> {
    const kind = linkKind(link)
    const misbehave = opts.misbehave ?? []
    if (kind === 'issuance') {
      const wrong = misbehave.filter((m) => !isMisbehaviour(m) && !isAuthorizationMisbehaviour(m))
      if (wrong.length > 0) {
        throw new WalletUsageError(
          `misbehaviour ${wrong.join(', ')} is not an issuance misbehaviour, and this link is a credential offer`,
        )
      }
      const result = await this.receive(link, {
        ...(opts.txCode !== undefined && { txCode: opts.txCode }),
        misbehave: misbehave as IssuanceMisbehaviour[],
        ...(opts.waitForDeferred !== undefined && { waitForDeferred: opts.waitForDeferred }),
        ...(opts.protocol && { protocol: opts.protocol }),
        ...(opts.flow && { flow: opts.flow }),
        ...(opts.authorization && { authorization: opts.authorization }),
        ...(opts.sleep && { sleep: opts.sleep }),
        ...(opts.onStep && { onStep: opts.onStep }),
        ...(opts.share && { share: opts.share }),
        ...(opts.batch !== undefined && { batch: opts.batch }),
        ...(opts.keyAttestation !== undefined && { keyAttestation: opts.keyAttestation }),
        ...(opts.proofType && { proofType: opts.proofType }),
      })
      return { kind, result }
    }
    const wrong = misbehave.filter((m) => !isPresentationMisbehaviour(m))
    if (wrong.length > 0) {
      throw new WalletUsageError(
        `misbehaviour ${wrong.join(', ')} is not a presentation misbehaviour, and this link is an authorization request`,
      )
    }
    const result = await this.present(link, {
      misbehave: misbehave as PresentationMisbehaviour[],
      ...(opts.onStep && { onStep: opts.onStep }),
      ...(opts.now && { now: opts.now }),
      ...(opts.errorDescription !== undefined && { errorDescription: opts.errorDescription }),
      onUnsatisfied: opts.onUnsatisfied ?? 'access-denied',
      ...(opts.ldProofType !== undefined && { ldProofType: opts.ldProofType }),
    })
    if (result.status !== 'verified') throw new PresentationDeclinedError(result)
    return { kind, result }
  }

  private async notifyQuietly(
    session: IssuanceSession,
    event: NotificationEvent,
    notificationId: string,
    description: string,
  ): Promise<void> {
    try {
      await session.notify(event, { notificationId, description: description.slice(0, 200) })
    } catch {}
  }

  // --- WalletContext: what an IssuanceSession uses ---------------------------------------------------------

  /** The holder's public key as a JWK (from its did:key). */
  publicJwk(): JsonWebKey {
    return { ...resolveDidKey(this.did).publicJwk }
  }

  /** The wallet's own key as a proof key (its did:key; it signs through the KMS). */
  holderKey(): ProofKey {
    return {
      did: this.did,
      kid: this.kid,
      alg: this.alg,
      publicJwk: this.publicJwk(),
      signer: this.jwtSigner(),
    }
  }

  /**
   * A fresh further key for a batch, of the wallet's key type (a presentation signs with the key the copy is
   * bound to, so every copy must be presentable like the wallet's own). Kept only once a credential bound to
   * it is stored (accept), with it.
   */
  newHolderKey(): ProofKey {
    return freshProofKey(this.alg)
  }

  /** Whether `did` is a further key of a batch this wallet holds. */
  isBatchKey(did: string): boolean {
    return this.batchKeys.has(did)
  }

  /** The further key `holder` names, when it is one this wallet holds; else undefined (the wallet's own key). */
  private batchKey(holder: string | undefined): ProofKey | undefined {
    const privateKey = holder === undefined || holder === this.did ? undefined : this.batchKeys.get(holder)
    return privateKey && proofKeyOf(privateKey)
  }

  /**
   * Signs proof JWTs, VPs and KB-JWTs: through the Veramo KMS (keyManagerSign answers base64url) with the
   * wallet's own key, or with the further key of a batch that `holder` (a credential's subject) names.
   */
  jwtSigner(holder?: string): JwtSigner {
    const further = this.batchKey(holder)
    if (further) return further.signer
    const { agent, holder: own } = this
    return {
      kid: own.kid,
      alg: own.alg,
      async sign(signingInput: string): Promise<Uint8Array> {
        const signature = await agent.keyManagerSign({
          keyRef: own.keyRef,
          data: signingInput,
          algorithm: own.alg,
          encoding: 'utf-8',
        })
        return Buffer.from(signature, 'base64url')
      },
    }
  }

  /** A Data Integrity signer over the Veramo KMS; eddsa-rdfc-2022 needs an Ed25519 holder. */
  diSigner(): DiSigner {
    const { agent, holder } = this
    if (holder.keyType !== 'Ed25519') {
      throw new WalletUsageError(
        `a di_vp proof needs an Ed25519 holder key (docs/issuance.md); this wallet holds a ${holder.keyType} key`,
      )
    }
    return {
      id: holder.kid,
      algorithm: 'Ed25519',
      async sign({ data }: { data: Uint8Array }): Promise<Uint8Array> {
        const signature = await agent.keyManagerSign({
          keyRef: holder.keyRef,
          data: Buffer.from(data).toString('hex'),
          algorithm: 'EdDSA',
          encoding: 'base16',
        })
        return Buffer.from(signature, 'base64url')
      },
    }
  }

  /**
   * The holder key as an mdoc's device signature makes it (COSE_Sign1 over DeviceAuthentication, ISO 18013-5
   * §9.1.3.6): the raw bytes signed through the Veramo KMS, ES256 (IEEE P1363 r||s) for a P-256 holder, EdDSA
   * for an Ed25519 one; a secp256k1 key signs no mdoc (WalletUsageError). An mdoc whose deviceKey is a further
   * key of a batch (`holder`, its subject) is signed with that key.
   */
  deviceSigner(holder?: string): DeviceSigner {
    const further = this.batchKey(holder)
    const furtherSigner = further?.privateKey && deviceSignerOf(further.alg, further.privateKey)
    if (furtherSigner) return furtherSigner
    const { agent, holder: own } = this
    const alg = own.keyType === 'P-256' ? 'ES256' : own.keyType === 'Ed25519' ? 'EdDSA' : undefined
    if (!alg) {
      throw new WalletUsageError(
        `an mdoc device signature is ES256 (OpenID4VP 1.0 Appendix B.2.4, HAIP) or EdDSA; this wallet holds a ${own.keyType} key: use a P-256 wallet (--key-type P-256)`,
      )
    }
    return {
      alg,
      async sign(toBeSigned: Uint8Array): Promise<Uint8Array> {
        const signature = await agent.keyManagerSign({
          keyRef: own.keyRef,
          data: Buffer.from(toBeSigned).toString('hex'),
          algorithm: own.alg,
          encoding: 'base16',
        })
        return new Uint8Array(Buffer.from(signature, 'base64url'))
      },
    }
  }

  /** The holder's private JWK, read from the KMS; only the 'jwk-with-private-key' misbehaviour uses it. */
  async privateJwk(): Promise<JsonWebKey> {
    return privateJwkFromHex(this.keyType, await exportPrivateKeyHex(this.handle, this.holder))
  }

  lastConsumedNonce(): string | undefined {
    return this.consumedNonces.at(-1)
  }

  rememberConsumedNonce(nonce: string): void {
    this.consumedNonces.push(nonce)
    if (this.consumedNonces.length > MAX_REMEMBERED_NONCES) this.consumedNonces.shift()
  }

  // --- PresentationContext: what a PresentationSession uses --------------------------------------------------

  /**
   * Whether this wallet already answered a request carrying `nonce` with a vp_token (OpenID4VP 1.0 §14.1).
   * A file wallet reads the file again, so another Wallet on the same file (another run of the CLI) counts.
   */
  async answeredNonce(nonce: string): Promise<boolean> {
    await this.mergeAnsweredNonces()
    return (this.state.answeredNonces ?? []).includes(nonce)
  }

  /** Remembers a nonce answered with a vp_token: the newest MAX_ANSWERED_NONCES are kept (in the file). */
  async rememberAnsweredNonce(nonce: string): Promise<void> {
    if (!nonce) return
    await this.mergeAnsweredNonces()
    const nonces = this.state.answeredNonces ?? []
    if (nonces.includes(nonce)) return
    nonces.push(nonce)
    this.state.answeredNonces = nonces.slice(-MAX_ANSWERED_NONCES)
    await this.store.save(this.state)
  }

  /** Adds the nonces another Wallet on the same file has saved since this one loaded it. */
  private async mergeAnsweredNonces(): Promise<void> {
    if (!this.store.persistent) return
    const saved = (await this.store.load())?.answeredNonces ?? []
    const own = this.state.answeredNonces ?? []
    const missing = saved.filter((n) => !own.includes(n))
    if (missing.length > 0) this.state.answeredNonces = [...missing, ...own].slice(-MAX_ANSWERED_NONCES)
  }

  /** The last honest presentation a verifier answered 2xx (in memory only), for 'vp-replayed'. */
  lastPresentation(): RememberedPresentation | undefined {
    return this.lastAccepted && structuredClone(this.lastAccepted)
  }

  rememberPresentation(presentation: RememberedPresentation): void {
    this.lastAccepted = structuredClone(presentation)
  }

  /**
   * Verifies each credential and stores them all, or none. jwt_vc_json: validity period (`nbf`, `exp`,
   * `expirationDate` / `validUntil`), Veramo's signature check against the issuer's did:key, holder binding
   * (`sub` and `credentialSubject.id` are this holder); with `origin.checkStatus` (receipt through an
   * IssuanceSession) its Bitstring status lists. dc+sd-jwt: acceptSdJwt. mso_mdoc: acceptMdoc. Every refusal is a
   * WalletProtocolError of step `verify` naming the rule. The careless wallet (trustEverything) only parses.
   */
  async accept(credentials: unknown[], origin: CredentialOrigin): Promise<StoredCredential[]> {
    // The format the issuer named (its id or an older alias); what it does not name is a W3C JWT VC.
    const format = formatNamed(origin.format)?.id ?? DEFAULT_ISSUANCE_FORMAT
    const receivers: Record<FormatId, () => Promise<StoredCredential[]>> = {
      jwt_vc_json: () => this.acceptJwtVc(credentials, origin),
      [SD_JWT_VC_TYP]: () => this.acceptSdJwt(credentials, origin),
      ldp_vc: () => this.acceptLdVc(credentials, origin),
      [MDOC_FORMAT]: () => this.acceptMdoc(credentials, origin),
    }
    return receivers[format]()
  }

  /**
   * ldp_vc at receipt (OpenID4VCI 1.0 Appendix A.1.2): a JSON object whose embedded proof verifies
   * (assertionMethod, offline JSON-LD in safe mode) with a key of its issuer, issued to this holder
   * (credentialSubject.id), within its validity period, its Bitstring status active. Stored as its JSON text.
   */
  private async acceptLdVc(credentials: unknown[], origin: CredentialOrigin): Promise<StoredCredential[]> {
    const { fail, status, holders } = this.receipt(origin)
    const accepted: StoredCredential[] = []
    for (const [index, credential] of credentials.entries()) {
      if (!isObject(credential))
        fail('unsupported_credential_format', `credentials[${index}] is not an ldp_vc JSON object`)
      const vc = credential as Record<string, unknown>
      let read: ReturnType<typeof ldpVc.read> | undefined
      try {
        read = ldpVc.read(vc, { algorithms: [] })
      } catch (error) {
        // the careless wallet keeps any JSON object
        if (!this.trustEverything)
          fail('invalid_credential', `credentials[${index}]: ${(error as Error).message}`)
      }
      const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : {}
      const subjectId = typeof subject.id === 'string' ? subject.id : undefined
      const holder = holderNamed(holders, subjectId)
      let issuer = String(issuerIdOf(vc) ?? '')
      if (read && !this.trustEverything) {
        const expired = ldValidityProblem(read.validity, Date.now())
        if (expired) fail('invalid_credential', `credentials[${index}]: ${expired}`)
        const proof = await read.verifyProof(resolveDidKey)
        if (!proof.ok)
          fail(
            'invalid_credential',
            `credentials[${index}]: the issuer's proof (VC Data Model 1.1 §4.7, VC Data Integrity 1.0 §4.3; ${read.alg}) does not verify: ${proof.reason}`,
          )
        else issuer = proof.issuer
        if (subjectId !== holder.did)
          fail(
            'wrong_subject',
            `credentials[${index}]: credentialSubject.id ${String(subjectId)} is not the holder ${holder.did} (holder binding: the credential belongs to another key than the proof showed)`,
          )
        if (status) await this.statusOrFail(() => status.checkBitstring(vc, issuer), index, origin.status)
      }
      const text = JSON.stringify(vc)
      const notBefore = read?.validity.find((b) => b.kind === 'notBefore')
      const notAfter = read?.validity.find((b) => b.kind === 'notAfter')
      accepted.push({
        id:
          typeof vc.id === 'string' ? vc.id : `urn:sha256:${createHash('sha256').update(text).digest('hex')}`,
        format: 'ldp_vc',
        credential: text,
        issuer,
        subject: holder.did,
        types: read ? [...read.types] : asStringArray(vc.type),
        credentialSubject: this.trustEverything ? { ...subject } : { ...subject, id: holder.did },
        ...(notBefore && { issuedAt: notBefore.shown }),
        ...(notAfter && { expiresAt: notAfter.shown }),
        credentialIssuer: origin.credentialIssuer,
        configurationId: origin.configurationId,
        receivedAt: new Date().toISOString(),
      })
    }
    return this.keep(accepted, holders)
  }

  /** The holder key as a Linked Data presentation signs with it (an ldp_vp: presentation-ldp.ts). */
  async ldPresenter(holder?: string): Promise<LdPresenter> {
    const further = this.batchKey(holder)?.privateKey
    if (further) return presenterOf(further)
    return presenterOf(
      createPrivateKey({ key: (await this.privateJwk()) as import('node:crypto').JsonWebKey, format: 'jwk' }),
    )
  }

  /** What every receiver refuses with (a WalletProtocolError of step `verify`) and checks status with. */
  private receipt(origin: CredentialOrigin) {
    const fail = (error: string, description: string): never => {
      throw new WalletProtocolError({
        step: 'verify',
        status: origin.status,
        error,
        errorDescription: description,
      })
    }
    const status =
      origin.checkStatus && !this.trustEverything ? new ReceiptStatusChecker(this.http) : undefined
    // the keys the request proved (a batch: several); a credential direct to accept() is the wallet's own key's
    const holders = origin.holders && origin.holders.length > 0 ? origin.holders : [this.holderKey()]
    return { fail, status, holders }
  }

  /**
   * Stores every accepted credential at once (all or none of a response), with the further keys of a batch
   * they are bound to (a key no credential came for is not kept), and answers copies.
   */
  private async keep(
    accepted: StoredCredential[],
    holders: readonly ProofKey[] = [],
  ): Promise<StoredCredential[]> {
    const keys: StoredHolder[] = []
    for (const key of holders) {
      if (!key.privateKey || this.batchKeys.has(key.did)) continue
      if (!accepted.some((c) => c.subject === key.did)) continue
      keys.push({
        keyType: this.keyType,
        did: key.did,
        kid: key.kid,
        // the private key is written only where the user asked for a file, as the holder's (store.ts)
        ...(this.store.persistent && { privateKeyHex: privateKeyHexOf(key.privateKey) }),
      })
    }
    this.state.credentials.push(...accepted)
    if (keys.length > 0) this.state.keys = [...(this.state.keys ?? []), ...keys]
    await this.store.save(this.state)
    for (const key of holders) {
      if (key.privateKey && keys.some((k) => k.did === key.did)) this.batchKeys.set(key.did, key.privateKey)
    }
    return structuredClone(accepted)
  }

  /** jwt_vc_json at receipt (see accept). */
  private async acceptJwtVc(credentials: unknown[], origin: CredentialOrigin): Promise<StoredCredential[]> {
    const { fail, status, holders } = this.receipt(origin)
    const accepted: StoredCredential[] = []
    for (const [index, credential] of credentials.entries()) {
      if (typeof credential !== 'string') {
        fail('unsupported_credential_format', `credentials[${index}] is not a jwt_vc_json string`)
      }
      const jwt = credential as string
      let payload: Record<string, unknown>
      try {
        payload = decodeJws(jwt).payload
      } catch (error) {
        return fail('invalid_credential', `credentials[${index}]: ${(error as Error).message}`)
      }
      const vc = isObject(payload.vc) ? payload.vc : {}
      const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : {}
      const issuer = typeof payload.iss === 'string' ? payload.iss : ''
      const holder = holderNamed(holders, typeof payload.sub === 'string' ? payload.sub : undefined)
      if (!this.trustEverything) {
        const expired = expiryProblem(payload, vc, Date.now())
        if (expired) fail('invalid_credential', `credentials[${index}]: ${expired}`)
        const result = await this.agent.verifyCredential({
          credential: jwt,
          // the status list is read below (ReceiptStatusChecker); this agent has no status plugin
          policies: { credentialStatus: false },
        })
        if (!result.verified) {
          fail(
            'invalid_credential',
            `credentials[${index}]: the issuer's signature (JWT VC, RFC 7515 §5.2) or validity does not verify against ${issuer || 'its issuer'}: ${result.error?.message ?? 'not verified'}`,
          )
        }
        if (payload.sub !== holder.did) {
          fail(
            'wrong_subject',
            `credentials[${index}]: sub ${String(payload.sub)} is not the holder ${holder.did} (holder binding: the credential belongs to another key than the proof showed)`,
          )
        }
        if (subject.id !== undefined && subject.id !== holder.did) {
          fail(
            'wrong_subject',
            `credentials[${index}]: credentialSubject.id ${String(subject.id)} is not the holder (holder binding)`,
          )
        }
        if (status)
          await this.statusOrFail(() => status.checkBitstring(payload, issuer), index, origin.status)
      }
      const issuedAt = isoFromSeconds(payload.nbf ?? payload.iat)
      const expiresAt = isoFromSeconds(payload.exp)
      accepted.push({
        id:
          typeof payload.jti === 'string'
            ? payload.jti
            : `urn:sha256:${createHash('sha256').update(jwt).digest('hex')}`,
        format: 'jwt_vc_json',
        credential: jwt,
        issuer,
        subject: holder.did,
        types: asStringArray(vc.type),
        credentialSubject: this.trustEverything ? { ...subject } : { ...subject, id: holder.did },
        ...(issuedAt && { issuedAt }),
        ...(expiresAt && { expiresAt }),
        credentialIssuer: origin.credentialIssuer,
        configurationId: origin.configurationId,
        receivedAt: new Date().toISOString(),
      })
    }
    return this.keep(accepted, holders)
  }

  /** A status check at receipt; a revoked or unknown status is a WalletProtocolError of step `verify`. */
  private async statusOrFail(check: () => Promise<void>, index: number, status: number): Promise<void> {
    try {
      await check()
    } catch (error) {
      if (!(error instanceof CredentialStatusError)) throw error
      throw new WalletProtocolError({
        step: 'verify',
        status,
        error: error.kind === 'revoked' ? 'credential_revoked' : 'invalid_credential',
        errorDescription: `credentials[${index}]: ${error.message}`,
      })
    }
  }

  /**
   * SD-JWT VCs (dc+sd-jwt): verified with src/shared/sd-jwt.ts (issuer did:key or x5c signature, disclosures,
   * validity) and bound to this holder (`cnf.jwk` is its key); with `origin.checkStatus` its Token Status List
   * entry; stored all, or none. The careless wallet (trustEverything) only reads the claims.
   */
  private async acceptSdJwt(credentials: unknown[], origin: CredentialOrigin): Promise<StoredCredential[]> {
    const { status, holders } = this.receipt(origin)
    const accepted: StoredCredential[] = []
    for (const [index, credential] of credentials.entries()) {
      if (typeof credential !== 'string') {
        throw new WalletProtocolError({
          step: 'verify',
          status: origin.status,
          error: 'unsupported_credential_format',
          errorDescription: `credentials[${index}] is not a dc+sd-jwt string`,
        })
      }
      const holder = holderNamed(holders, cnfDidOf(credential))
      let received: Awaited<ReturnType<typeof verifyReceivedSdJwt>>
      try {
        received = this.trustEverything
          ? await parseReceivedSdJwt(credential)
          : await verifyReceivedSdJwt(credential, {
              holderJwk: holder.publicJwk,
              vct: origin.vct,
              trustAnchors: this.trustAnchors,
            })
      } catch (error) {
        if (!(error instanceof SdJwtReceiveError)) throw error
        throw new WalletProtocolError({
          step: 'verify',
          status: origin.status,
          error: error.code,
          errorDescription: `credentials[${index}]: ${error.message}`,
        })
      }
      if (status) {
        const { issuer, issuerKey } = received
        await this.statusOrFail(
          () => status.checkTokenStatus(received.payload, issuer, issuerKey),
          index,
          origin.status,
        )
      }
      const vct = received.vct || origin.vct || ''
      accepted.push({
        id: received.id,
        format: SD_JWT_VC_TYP,
        credential,
        issuer: received.issuer,
        subject: holder.did,
        types: [vct],
        vct,
        credentialSubject: received.claims,
        ...(received.issuedAt && { issuedAt: received.issuedAt }),
        ...(received.expiresAt && { expiresAt: received.expiresAt }),
        credentialIssuer: origin.credentialIssuer,
        configurationId: origin.configurationId,
        receivedAt: new Date().toISOString(),
      })
    }
    return this.keep(accepted, holders)
  }

  /**
   * ISO mdocs (mso_mdoc, OpenID4VCI 1.0 Appendix A.2): base64url IssuerSigned, verified with the format's reader
   * (mdoc-receive.ts: validity period, issuerAuth's x5chain to the wallet's trust anchors — the issuer's IACA —
   * its signature and every digest, the configuration's doctype) and bound to this holder (the MSO's deviceKey
   * is its key); with `origin.checkStatus` the MSO's Token Status List entry; stored all, or none. The careless
   * wallet (trustEverything) only reads the elements.
   */
  private async acceptMdoc(credentials: unknown[], origin: CredentialOrigin): Promise<StoredCredential[]> {
    const { fail, status, holders } = this.receipt(origin)
    const accepted: StoredCredential[] = []
    for (const [index, credential] of credentials.entries()) {
      if (typeof credential !== 'string') {
        fail(
          'unsupported_credential_format',
          `credentials[${index}] is not an mso_mdoc string (base64url IssuerSigned, OpenID4VCI 1.0 Appendix A.2.4)`,
        )
      }
      let received: Awaited<ReturnType<typeof verifyReceivedMdoc>>
      try {
        received = this.trustEverything
          ? await parseReceivedMdoc(credential)
          : await verifyReceivedMdoc(credential, {
              holderDid: holders.map((h) => h.did),
              docType: origin.doctype,
              trustAnchors: this.trustAnchors,
            })
      } catch (error) {
        if (!(error instanceof MdocReceiveError)) throw error
        return fail(error.code, `credentials[${index}]: ${error.message}`)
      }
      const reference = received.status
      if (status && reference) {
        const { issuer, issuerKey } = received
        await this.statusOrFail(
          () => status.checkTokenStatus({ status: { status_list: { ...reference } } }, issuer, issuerKey),
          index,
          origin.status,
        )
      }
      accepted.push({
        id: received.id,
        format: MDOC_FORMAT,
        credential: credential as string,
        issuer: received.issuer,
        subject: holderNamed(holders, received.deviceKeyDid).did,
        types: [received.docType],
        doctype: received.docType,
        credentialSubject: received.namespaces,
        issuedAt: received.validFrom,
        expiresAt: received.validUntil,
        credentialIssuer: origin.credentialIssuer,
        configurationId: origin.configurationId,
        receivedAt: new Date().toISOString(),
      })
    }
    return this.keep(accepted, holders)
  }
}
