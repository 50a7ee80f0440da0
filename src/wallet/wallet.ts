// The simulated wallet: a Veramo agent holding one did:key, a credential store, OpenID4VCI issuance (step by
// step through IssuanceSession, or in one call with receive()) and OpenID4VP presentation (step by step
// through PresentationSession, or in one call with present()).

import { createHash } from 'node:crypto'
import type { DiSigner } from '../shared/data-integrity.ts'
import { type JwsAlg, resolveDidKey } from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws } from '../shared/jws.ts'
import {
  type AgentHandle,
  createHolder,
  createWalletAgent,
  exportPrivateKeyHex,
  type HolderKey,
  privateJwkFromHex,
  type WalletAgent,
} from './agent.ts'
import { WalletProtocolError, WalletUsageError } from './errors.ts'
import type { FetchLike } from './http.ts'
import {
  type CredentialOrigin,
  IssuanceSession,
  type IssuedCredentials,
  type NotificationEvent,
  type Sleep,
  type WalletContext,
} from './issuance.ts'
import type { IssuanceProtocol } from './issuance-v1.ts'
import { loadX509 } from './lazy.ts'
import {
  assertMisbehaviours,
  assertPresentationMisbehaviours,
  type Misbehaviour,
  type PresentationMisbehaviour,
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
import { parsePresentationLink } from './presentation-link.ts'
import { PresentationSessionV1 } from './presentation-v1.ts'
import { isV1Link } from './presentation-v1-request.ts'
import type { JwtSigner } from './proof.ts'
import { SdJwtReceiveError, verifyReceivedSdJwt } from './sd-jwt-receive.ts'
import {
  emptyState,
  FileWalletStore,
  type HolderKeyType,
  MemoryWalletStore,
  type StoredCredential,
  WalletFileError,
  type WalletState,
  type WalletStore,
} from './store.ts'

export interface WalletOptions {
  /** holder key type of a new wallet; default Ed25519. Must match the key of an existing wallet file. */
  keyType?: HolderKeyType
  /** keep keys and credentials in this JSON file (created on first use); default: in memory only */
  file?: string
  /** HTTP client for the wallet's own requests (deferred, notification, diagnostics); default undici.request */
  fetch?: FetchLike
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
}

export type ReceiveStep =
  | 'offer'
  | 'metadata'
  | 'token'
  | 'credential'
  | 'deferred'
  | 'verify'
  | 'notification'

export interface ReceiveOptions {
  txCode?: string
  misbehave?: readonly Misbehaviour[]
  /** poll the deferred endpoint when the credential is not issued at once; default false. true: up to 10 min */
  waitForDeferred?: boolean | { timeoutMs: number }
  onStep?: (step: ReceiveStep, detail?: unknown) => void
  /** this issuance only: overrides the wallet's `protocol` */
  protocol?: IssuanceProtocol
  /** how the deferred poll waits the announced interval; default a real timer (tests pass a fake) */
  sleep?: Sleep
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
   * OpenID4VP 1.0: a DCQL query the held credentials cannot satisfy throws DcqlUnsatisfiedError and sends
   * nothing ('throw', default), or is answered `access_denied` naming the unsatisfied queries ('access-denied')
   */
  onUnsatisfied?: 'throw' | 'access-denied'
}

const DEFAULT_DEFERRED_TIMEOUT_MS = 10 * 60 * 1000
const MAX_REMEMBERED_NONCES = 64

function asStringArray(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
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
  readonly fetch: FetchLike | undefined
  readonly protocol: IssuanceProtocol
  /** where the state lives: a file path or '(memory)' */
  readonly location: string
  /** PEM trust anchors for x5c issuer keys (WalletOptions.trustAnchors) */
  readonly trustAnchors: readonly string[]

  private readonly handle: AgentHandle
  private readonly holder: HolderKey
  private readonly store: WalletStore
  private readonly state: WalletState
  private readonly consumedNonces: string[] = []
  private lastAccepted: RememberedPresentation | undefined

  private constructor(
    handle: AgentHandle,
    holder: HolderKey,
    store: WalletStore,
    state: WalletState,
    fetch?: FetchLike,
    protocol?: IssuanceProtocol,
    trustAnchors: readonly string[] = [],
  ) {
    this.handle = handle
    this.agent = handle.agent
    this.holder = holder
    this.store = store
    this.state = state
    this.did = holder.did
    this.kid = holder.kid
    this.alg = holder.alg
    this.keyType = holder.keyType
    this.fetch = fetch
    this.protocol = protocol ?? 'auto'
    this.location = store.location
    this.trustAnchors = trustAnchors
  }

  /** A new wallet, or the one kept in `file`. */
  static async create(opts: WalletOptions = {}): Promise<Wallet> {
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
    return new Wallet(handle, holder, store, state, opts.fetch, opts.protocol, trustAnchors)
  }

  /** The credentials held, oldest first. */
  credentials(): StoredCredential[] {
    return structuredClone(this.state.credentials)
  }

  /** Starts an issuance from a deep link: reads the offer and the issuer metadata. */
  startIssuance(deepLink: string, opts: { protocol?: IssuanceProtocol } = {}): Promise<IssuanceSession> {
    return IssuanceSession.start(this, deepLink, opts)
  }

  /**
   * The whole pre-authorized flow: offer, metadata, token, credential request (jwt proof, or di_vp when the
   * offer asks for a presentation), deferred polling when asked, verification, storage, and a
   * credential_accepted notification.
   */
  async receive(deepLink: string, opts: ReceiveOptions = {}): Promise<ReceiveResult> {
    const step = opts.onStep ?? (() => {})
    const misbehave = assertMisbehaviours(opts.misbehave)
    const session = await this.startIssuance(deepLink, opts.protocol ? { protocol: opts.protocol } : {})
    const v1Only = misbehave.filter((m) => V1_ONLY_MISBEHAVIOURS.includes(m))
    if (v1Only.length > 0 && session.protocol !== '1.0') {
      // refused before the single-use code is redeemed
      throw new WalletUsageError(
        `misbehaviour ${v1Only.join(', ')} sends a legacy shape to an OpenID4VCI 1.0 issuer; ${session.credentialIssuer} is spoken to in draft 15`,
      )
    }
    step('offer', session.offer)
    step('metadata', session.issuerMetadata)
    // what the offer asks to be presented is settled before the single-use pre-authorized code is redeemed
    let share: string[] | undefined
    if (session.presentationDefinition) {
      this.diSigner() // a WalletUsageError for a holder key that cannot make the di_vp proof
      share = await session.selectCredentials()
    }
    const token = await session.token({
      ...(opts.txCode !== undefined && { txCode: opts.txCode }),
      misbehave,
    })
    step('token', { token_type: token.token_type, expires_in: token.expires_in })
    const result = await session.requestCredential({ misbehave, ...(share && { share }) })
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
    })
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

  /** Signs proof JWTs through the Veramo KMS (keyManagerSign answers base64url). */
  jwtSigner(): JwtSigner {
    const { agent, holder } = this
    return {
      kid: holder.kid,
      alg: holder.alg,
      async sign(signingInput: string): Promise<Uint8Array> {
        const signature = await agent.keyManagerSign({
          keyRef: holder.keyRef,
          data: signingInput,
          algorithm: holder.alg,
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

  /** The last honest presentation a verifier answered 2xx (in memory only), for 'vp-replayed'. */
  lastPresentation(): RememberedPresentation | undefined {
    return this.lastAccepted && structuredClone(this.lastAccepted)
  }

  rememberPresentation(presentation: RememberedPresentation): void {
    this.lastAccepted = structuredClone(presentation)
  }

  /**
   * Verifies each credential with Veramo (signature against the issuer's did:key, validity period) and checks
   * it is bound to this holder (`sub` and `credentialSubject.id`); stores them all, or none.
   */
  async accept(credentials: unknown[], origin: CredentialOrigin): Promise<StoredCredential[]> {
    if (origin.format === 'dc+sd-jwt' || origin.format === 'vc+sd-jwt')
      return this.acceptSdJwt(credentials, origin)
    const fail = (error: string, description: string): never => {
      throw new WalletProtocolError({
        step: 'verify',
        status: origin.status,
        error,
        errorDescription: description,
      })
    }
    const accepted: StoredCredential[] = []
    for (const [index, credential] of credentials.entries()) {
      if (typeof credential !== 'string') {
        fail('unsupported_credential_format', `credentials[${index}] is not a jwt_vc_json string`)
      }
      const jwt = credential as string
      const result = await this.agent.verifyCredential({
        credential: jwt,
        // the status list is not fetched at receipt (no status plugin in this agent); verifiers check it
        policies: { credentialStatus: false },
      })
      if (!result.verified) {
        fail('invalid_credential', `credentials[${index}]: ${result.error?.message ?? 'not verified'}`)
      }
      let payload: Record<string, unknown>
      try {
        payload = decodeJws(jwt).payload
      } catch (error) {
        return fail('invalid_credential', `credentials[${index}]: ${(error as Error).message}`)
      }
      const vc = isObject(payload.vc) ? payload.vc : {}
      const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : {}
      if (payload.sub !== this.did) {
        fail(
          'wrong_subject',
          `credentials[${index}]: sub ${String(payload.sub)} is not the holder ${this.did}`,
        )
      }
      if (subject.id !== undefined && subject.id !== this.did) {
        fail(
          'wrong_subject',
          `credentials[${index}]: credentialSubject.id ${String(subject.id)} is not the holder`,
        )
      }
      const issuer = typeof payload.iss === 'string' ? payload.iss : ''
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
        subject: this.did,
        types: asStringArray(vc.type),
        credentialSubject: { ...subject, id: this.did },
        ...(issuedAt && { issuedAt }),
        ...(expiresAt && { expiresAt }),
        credentialIssuer: origin.credentialIssuer,
        configurationId: origin.configurationId,
        receivedAt: new Date().toISOString(),
      })
    }
    this.state.credentials.push(...accepted)
    await this.store.save(this.state)
    return structuredClone(accepted)
  }

  /**
   * SD-JWT VCs (dc+sd-jwt): verified with src/shared/sd-jwt.ts (issuer did:key or x5c signature, disclosures,
   * validity) and bound to this holder (`cnf.jwk` is its key); stored all, or none.
   */
  private async acceptSdJwt(
    credentials: unknown[],
    origin: { credentialIssuer: string; configurationId: string; status: number; vct?: string | undefined },
  ): Promise<StoredCredential[]> {
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
      let received: Awaited<ReturnType<typeof verifyReceivedSdJwt>>
      try {
        received = await verifyReceivedSdJwt(credential, {
          holderJwk: this.publicJwk(),
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
      accepted.push({
        id: received.id,
        format: 'dc+sd-jwt',
        credential,
        issuer: received.issuer,
        subject: this.did,
        types: [received.vct],
        vct: received.vct,
        credentialSubject: received.claims,
        ...(received.issuedAt && { issuedAt: received.issuedAt }),
        ...(received.expiresAt && { expiresAt: received.expiresAt }),
        credentialIssuer: origin.credentialIssuer,
        configurationId: origin.configurationId,
        receivedAt: new Date().toISOString(),
      })
    }
    this.state.credentials.push(...accepted)
    await this.store.save(this.state)
    return structuredClone(accepted)
  }
}
