import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { issuedFormat } from '../../formats/registry.ts'
import { isObject } from '../../shared/json.ts'
import type { WalletProviderTrust } from '../../shared/oauth/client-attestation.ts'
import { ATTESTATION_PROOF_TYPE } from '../../shared/oauth/key-attestation.ts'
import { AUTHORIZATION_CODE_GRANT, PRE_AUTHORIZED_GRANT } from '../../shared/wire.ts'
import type { Oid4vciOptions } from '../config/schema.ts'
import type { CheckMetrics } from '../credentials/pipeline.ts'
import type { StatusChecker } from '../credentials/status.ts'
import type { SigningKey } from '../crypto/issuer-certificates.ts'
import type { TenantKeys } from '../crypto/tenant-keys.ts'
import { OAuthError, type OAuthErrorCode, tokenError } from '../errors/oauth.ts'
import { AppError } from '../errors/problem.ts'
import type { ServiceEvents } from '../events.ts'
import { holderConflict, wireCredential } from '../issuance/credentials.ts'
import {
  nextStamp,
  type ProcessEvent,
  type ProcessRefusal,
  processChanged,
  transition,
} from '../issuance/lifecycle.ts'
import type { IssuanceService } from '../issuance/service.ts'
import type {
  GrantRecord,
  IssuedCredential,
  ProcessRecord,
  Repositories,
  Store,
  TemplateRecord,
} from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import type { AuthorizationServer, ClientHeaders } from './authorization.ts'
import type { DpopGate } from './dpop.ts'
import {
  offersAuthorizationCode,
  offersPreAuthorizedCode,
  type PreAuthorizedGrants,
  sha256,
} from './grants.ts'
import { presentationDefinition, requireIssuer } from './metadata.ts'
import { CNonces } from './nonces.ts'
import {
  buildValidator,
  type HolderProof,
  type ProofContext,
  verifyAttestationProof,
  verifyDiVpProof,
  verifyJwtProof,
} from './proofs.ts'
import { requestedConfiguration } from './requests.ts'

const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i
/** RFC 9449 §7.1: a DPoP-bound access token is sent with the DPoP scheme. */
const DPOP_SCHEME = /^DPoP +([A-Za-z0-9._~+/-]+=*)$/i
const NOTIFICATION_EVENTS = new Set(['credential_accepted', 'credential_failure', 'credential_deleted'])

export interface Oid4vciDeps {
  store: Store
  clock: Clock
  urls: PublicUrls
  /** Only for what is the domain's: the signing key and issuing (signing, status list, webhook). */
  issuance: IssuanceService
  grants: PreAuthorizedGrants
  events: ServiceEvents
  tenantKeys: TenantKeys
  options: Oid4vciOptions
  /** The MAC key of c_nonce values (nonces.ts), derived from the service key so every instance agrees. */
  nonceSecret: Buffer
  /** Reads the status of credentials shared in a di_vp proof. */
  status: StatusChecker
  /** Told where the time of each di_vp proof's checks went (the bench sets it); none by default. */
  metrics?: CheckMetrics
  /** Hands the wallet its credentials; none: as issued (see CredentialHandOut). */
  handOut?: CredentialHandOut
  /** DPoP proofs at the token and credential endpoints (RFC 9449). */
  dpop: DpopGate
  /** The authorization code grant (authorization.ts). */
  authorization: AuthorizationServer
  /** The wallet providers a tenant trusts: their key attestations too (OpenID4VCI 1.0 Appendix D). */
  walletProviders: (tenantId: string) => readonly WalletProviderTrust[]
}

/**
 * The keys a credential request proved (1.0 §8.2 `proofs`; Appendix D attested keys), verified: one
 * credential (set) per key, each key distinct, the first the process's holder.
 */
interface ProvenKeys {
  /** The first proof: its holder is the process's, its proof entry the validator's. */
  first: HolderProof
  /** Every holder DID credentials are bound to, the first proof's first; more than one is a batch. */
  holders: string[]
  /** The c_nonce every proof carries (one per request), used once. */
  nonce: string
}

/** An access token as a request presents it, its DPoP proof checked: `jkt` null for a Bearer token. */
interface PresentedToken {
  token: string
  jkt: string | null
}

/** What a process's credentials were issued with: read only when a CredentialHandOut asks. */
export interface IssuedWith {
  template: TemplateRecord<'issuance'>
  /** The template's signing key (with its x5c chain, if any). */
  key: SigningKey
}

/**
 * Hands a wallet the credentials of its process (credential and deferred endpoints). Without one they go
 * as issued. app.ts hands in another only in a wallet-test app: the wallet test plans' faulty issuer
 * alters them at hand-out (the process data the relying party reads stays genuine). `issuedWith` reads the
 * template and key when asked (undefined if the template is gone), so the genuine path reads nothing more.
 */
/** A credential as the wallet receives it: a compact JWT / SD-JWT VC, or an ldp_vc JSON object. */
export type WireCredential = string | Record<string, unknown>

export interface CredentialHandOut {
  handOut(
    credentials: WireCredential[],
    process: ProcessRecord,
    issuedWith: () => Promise<IssuedWith | undefined>,
  ): Promise<WireCredential[]>
}

type Form = Record<string, unknown>

/** The process as its credentials are handed out: its own, then a batch's further keys' (in their order). */
const withExtras = (process: ProcessRecord, extras: readonly IssuedCredential[]): ProcessRecord =>
  extras.length === 0 ? process : { ...process, data: [...(process.data ?? []), ...extras] }

const denied = (process: ProcessRecord) =>
  new OAuthError(
    'credential_request_denied',
    `the issuer rejected this issuance${process.rejectedReason ? `: ${process.rejectedReason}` : ''}`,
  )

/** The wallet-facing OpenID4VCI issuer of every tenant (docs/issuance.md). */
export class Oid4vciService {
  private readonly nonces: CNonces

  constructor(private readonly deps: Oid4vciDeps) {
    this.nonces = new CNonces(deps.nonceSecret)
  }

  /**
   * Asks the lifecycle (issuance/lifecycle.ts) whether `event` may happen now. A REJECTED process is
   * `credential_request_denied` (§8.3.1.2) with the issuer's reason; other refusals take the code the
   * endpoint gives.
   */
  private allow(
    process: ProcessRecord,
    grant: GrantRecord | null,
    event: ProcessEvent,
    code: (refusal: ProcessRefusal) => OAuthErrorCode,
  ) {
    const outcome = transition(process, grant, event, this.deps.clock.now())
    if (outcome.ok) return outcome
    throw this.refusal(process, event, outcome, code(outcome.refusal))
  }

  /** A lifecycle refusal in OAuth words: REJECTED is credential_request_denied with the issuer's reason. */
  private refusal(
    process: ProcessRecord,
    event: ProcessEvent,
    outcome: { refusal: ProcessRefusal; message: string },
    code: OAuthErrorCode,
  ): OAuthError {
    if (outcome.refusal === 'rejected' && event !== 'retrieve_offer') return denied(process)
    return new OAuthError(code, outcome.message)
  }

  async offer(tenantId: string, processId: string) {
    const { store, clock } = this.deps
    const found = await store.grants.withProcess({ processId })
    if (!found || found.process.tenantId !== tenantId) {
      throw new OAuthError('not_found', `no credential offer "${processId}"`)
    }
    const { process, grant } = found
    const template = await store.templates.get(tenantId, process.templateId, 'issuance')
    if (!template) throw new Error(`offer ${processId} has no template`)
    // A closed or lapsed offer is gone for the wallet (docs/issuance.md): 404 like an unknown one.
    const open = transition(process, grant, 'retrieve_offer', clock.now())
    if (!open.ok) {
      throw new OAuthError(
        'not_found',
        open.refusal === 'expired'
          ? `credential offer "${processId}" expired at ${isoTime(grant.codeExpiresAt)}${grant.codeState === 'live' ? ' unredeemed' : ''}`
          : `credential offer "${processId}" is closed (process ${process.status})`,
      )
    }
    // The wallet fetched the offer: on a QR page, the code was scanned.
    this.deps.events.emit(processChanged(process, 'offer_retrieved'))
    const txCode = template.body.txCode
    const definition = presentationDefinition(template)
    const grants: Record<string, unknown> = {}
    if (offersPreAuthorizedCode(template)) {
      grants[PRE_AUTHORIZED_GRANT] = {
        'pre-authorized_code': this.deps.grants.preAuthorizedCode(processId),
        ...(grant.txCodeHash && txCode
          ? {
              tx_code: {
                input_mode: txCode.inputMode,
                length: txCode.length,
                ...(txCode.description ? { description: txCode.description } : {}),
              },
            }
          : {}),
      }
    }
    // OpenID4VCI 1.0 §4.1.1: the issuer_state ties the wallet's authorization request to this process.
    if (offersAuthorizationCode(template)) {
      grants[AUTHORIZATION_CODE_GRANT] = { issuer_state: this.deps.grants.issuerState(processId) }
    }
    return {
      credential_issuer: this.deps.urls.credentialIssuer(tenantId),
      credential_configuration_ids: [process.templateId],
      grants,
      ...(definition ? { presentation_definition: definition } : {}),
    }
  }

  async nonce(tenantId: string) {
    await requireIssuer(this.deps.store, tenantId)
    return {
      c_nonce: this.newNonce(tenantId),
      c_nonce_expires_in: this.deps.options.cNonceLifetimeSeconds,
    }
  }

  private newNonce(tenantId: string): string {
    return this.nonces.issue(tenantId, this.deps.clock.now() + this.deps.options.cNonceLifetimeSeconds * 1000)
  }

  /** Single use: true only for the first use of a nonce this service issued to the tenant, while unexpired. */
  private async useNonce(value: string, tenantId: string): Promise<boolean> {
    const expiresAt = this.nonces.expiresAt(value, tenantId)
    if (expiresAt === undefined || expiresAt <= this.deps.clock.now()) return false
    return this.deps.store.nonces.use(value, tenantId, expiresAt)
  }

  /**
   * Token endpoint (OpenID4VCI section 6): the pre-authorized code grant here, the authorization code grant in
   * authorization.ts. A DPoP proof, when sent, binds the access token to its key (RFC 9449 §5; HAIP 1.0 allows
   * it on the pre-authorized flow too).
   */
  async token(tenantId: string, form: Form, headers: ClientHeaders = {}) {
    const { store, clock, options } = this.deps
    const grantType = form.grant_type
    if (typeof grantType !== 'string') throw new OAuthError('invalid_request', 'grant_type is required')
    if (grantType === AUTHORIZATION_CODE_GRANT) return this.deps.authorization.token(tenantId, form, headers)
    if (grantType !== PRE_AUTHORIZED_GRANT) {
      throw new OAuthError(
        'unsupported_grant_type',
        `grant_type "${grantType}" is not supported; use ${PRE_AUTHORIZED_GRANT} or ${AUTHORIZATION_CODE_GRANT}`,
      )
    }
    const dpop =
      headers.dpop === undefined
        ? undefined
        : await this.deps.dpop.check(
            tenantId,
            headers.dpop,
            { htm: 'POST', htu: this.deps.authorization.endpoint(tenantId, 'token') },
            'server',
          )
    const tokenJkt = dpop?.jkt ?? null
    const code = form['pre-authorized_code']
    if (typeof code !== 'string' || code.length === 0) {
      throw new OAuthError('invalid_request', 'pre-authorized_code is required')
    }
    const now = clock.now()
    const codeHash = sha256(code)
    const txCode = form.tx_code ?? form.user_pin
    const accessToken = randomBytes(32).toString('base64url')
    const expiresIn = options.accessTokenLifetimeSeconds
    const tokenHash = sha256(accessToken)
    const tokenExpiresAt = now + expiresIn * 1000
    // The common case in one statement: a live code of this tenant asking no tx_code, of a PENDING process
    // (issue 20). Anything else takes the checks below, which name what is wrong; a tx_code is checked
    // there (its HMAC needs the process id, and the comparison stays timing-safe).
    const redeemed =
      (txCode === undefined || txCode === '') &&
      (await store.grants.consumeCodeByHash({ codeHash, tenantId, now, tokenHash, tokenExpiresAt, tokenJkt }))
    if (!redeemed) await this.judgeCode(tenantId, codeHash, txCode, now, tokenHash, tokenExpiresAt, tokenJkt)
    return {
      access_token: accessToken,
      token_type: tokenJkt ? 'DPoP' : 'Bearer',
      expires_in: expiresIn,
      c_nonce: this.newNonce(tenantId),
      c_nonce_expires_in: options.cNonceLifetimeSeconds,
    }
  }

  /**
   * The token request's checks on the grant read with its process: throws the OAuth error of the first that
   * fails (a wrong tx_code is counted), else consumes the code, binding the access token.
   */
  private async judgeCode(
    tenantId: string,
    codeHash: string,
    txCode: unknown,
    now: number,
    tokenHash: string,
    tokenExpiresAt: number,
    tokenJkt: string | null,
  ) {
    const { store, options, grants } = this.deps
    const found = await store.grants.withProcess({ codeHash })
    if (!found || found.grant.tenantId !== tenantId) {
      throw new OAuthError('invalid_grant', 'pre-authorized_code is unknown to this credential issuer')
    }
    const { grant, process } = found
    if (grant.codeState === 'burnt') {
      throw new OAuthError(
        'invalid_grant',
        'pre-authorized_code was invalidated after too many wrong tx_code attempts',
      )
    }
    if (grant.codeState === 'used')
      throw new OAuthError('invalid_grant', 'pre-authorized_code was already used')
    if (now >= grant.codeExpiresAt) throw new OAuthError('invalid_grant', 'pre-authorized_code has expired')
    if (process.status !== 'PENDING') {
      const reason = process.rejectedReason ? `: ${process.rejectedReason}` : ''
      throw new OAuthError('invalid_grant', `the issuance process is ${process.status}${reason}`)
    }
    if (grant.txCodeHash) {
      if (typeof txCode !== 'string' || txCode.length === 0) {
        throw new OAuthError('invalid_request', 'tx_code is required: the offer announced one')
      }
      const given = Buffer.from(grants.txCodeHash(grant.processId, txCode))
      if (!timingSafeEqual(given, Buffer.from(grant.txCodeHash))) {
        const { failures, burnt } = await store.grants.recordTxFailure(
          grant.processId,
          options.txCodeMaxAttempts,
        )
        throw new OAuthError(
          'invalid_grant',
          burnt
            ? `tx_code is wrong; after ${failures} wrong attempts the pre-authorized_code is invalidated`
            : `tx_code is wrong (${options.txCodeMaxAttempts - failures} attempts left)`,
        )
      }
    } else if (txCode !== undefined && txCode !== '') {
      throw new OAuthError('invalid_request', 'tx_code was sent but the offer did not announce one')
    }
    if (!(await store.grants.consumeCode(grant.processId, tokenHash, tokenExpiresAt, tokenJkt))) {
      throw new OAuthError('invalid_grant', 'pre-authorized_code was already used')
    }
  }

  /**
   * The access token of a request to `endpoint`: `Bearer <token>` (RFC 6750), or `DPoP <token>` with its proof
   * checked (RFC 9449 §7: htm, htu, ath, the server nonce, a fresh jti). A malformed header is the RFC 6750 /
   * RFC 9449 challenge of the scheme it names.
   */
  private async presented(
    tenantId: string,
    authorization: string | undefined,
    headers: ClientHeaders,
    endpoint: string,
  ): Promise<PresentedToken | undefined> {
    if (!authorization) return undefined
    const dpopToken = DPOP_SCHEME.exec(authorization)?.[1]
    if (dpopToken) {
      const htu = `${this.deps.urls.credentialIssuer(tenantId)}/${endpoint}`
      const proof = await this.deps.dpop.check(
        tenantId,
        headers.dpop,
        { htm: 'POST', htu, accessToken: dpopToken },
        'resource',
      )
      return { token: dpopToken, jkt: proof.jkt }
    }
    const bearer = BEARER.exec(authorization)?.[1]
    return bearer ? { token: bearer, jkt: null } : undefined
  }

  /**
   * The grant behind an access token of this tenant's issuer, read with its process: a Bearer token (RFC
   * 6750), or a DPoP-bound one sent with the DPoP scheme and a proof by the key it is bound to (RFC 9449 §7).
   */
  async authenticate(
    tenantId: string,
    authorization: string | undefined,
    headers: ClientHeaders = {},
    endpoint = 'credential',
    presented?: PresentedToken,
  ): Promise<{ grant: GrantRecord; process: ProcessRecord }> {
    if (!authorization)
      throw tokenError('an access token is required (Authorization: Bearer … or DPoP …)', false)
    const given = presented ?? (await this.presented(tenantId, authorization, headers, endpoint))
    if (!given)
      throw tokenError('Authorization must be "Bearer <access token>" or "DPoP <access token>"', true)
    const found = await this.deps.store.grants.withProcess({ tokenHash: sha256(given.token) })
    if (!found || found.grant.tenantId !== tenantId)
      throw tokenError('access token is unknown to this issuer', true)
    const { tokenExpiresAt, tokenJkt } = found.grant
    if (tokenExpiresAt === null || this.deps.clock.now() >= tokenExpiresAt) {
      throw tokenError('access token has expired', true)
    }
    if (tokenJkt !== null && given.jkt === null) {
      throw tokenError(
        'this access token is DPoP-bound: send it as "Authorization: DPoP <token>" with a DPoP proof (RFC 9449 §7.1)',
        true,
      )
    }
    if (given.jkt !== null && tokenJkt !== given.jkt) {
      throw tokenError(
        tokenJkt === null
          ? 'this access token is a Bearer token, not DPoP-bound (RFC 9449 §7.1)'
          : 'the DPoP proof is signed by another key than the one this access token is bound to (RFC 9449 §7.1)',
        true,
      )
    }
    return found
  }

  private proofContext(tenantId: string, template: TemplateRecord<'issuance'>): ProofContext {
    const required = template.body.requiredPresentation
    return {
      credentialIssuer: this.deps.urls.credentialIssuer(tenantId),
      now: this.deps.clock.now(),
      maxAgeSeconds: this.deps.options.proofMaxAgeSeconds,
      presentationDefinition: presentationDefinition(template),
      trustedIssuers: (type) => required?.credentials.find((c) => c.type === type)?.trustedIssuers,
      ownIssuers: () => this.deps.tenantKeys.didsOf(tenantId),
      status: this.deps.status,
      metrics: this.deps.metrics,
      acceptJwk: issuedFormat(template.body.format).issuance.bindingMethods.some(
        (m) => m === 'jwk' || m === 'cose_key',
      ),
      algorithms: issuedFormat(template.body.format).issuance.proofAlgorithms,
      keyAttestation: template.body.keyAttestation && {
        required: template.body.keyAttestation.required !== false,
        keyStorage: template.body.keyAttestation.keyStorage,
        userAuthentication: template.body.keyAttestation.userAuthentication,
        trust: this.deps.walletProviders(tenantId),
      },
    }
  }

  /**
   * The request's key proofs, verified. Both generations name a missing proof, and draft 15 both members at
   * once, `invalid_proof` (1.0 §8.3.1.2 "(1) if the field is missing"; draft 15 §8.3.1.2 "(1) if both fields
   * are missing, or (2) both are present simultaneously").
   *
   * A batch (1.0 §8.2: `proofs` "providing one or more proof of possessions"; §12.2.4 batch_size: "the
   * maximum array size for the proofs parameter") binds one credential to each key (§8.3: "Each key provided
   * by the Wallet is used to bind to, at most, one Credential"), so the proven keys must be distinct; the keys
   * a jwt proof's key attestation vouches for besides its own are added (Appendix F.1, up to batch_size: the
   * issuer may issue fewer, §8.3), an `attestation` proof's keys are all there is (Appendix F.3, within
   * batch_size). Every proof carries the same c_nonce, used once for the request.
   */
  private async verifyProofs(body: Form, ctx: ProofContext): Promise<ProvenKeys> {
    const { batchSize } = this.deps.options
    if (body.proof !== undefined && body.proofs !== undefined) {
      throw new OAuthError('invalid_proof', 'send either proof or proofs, not both')
    }
    let proofs: { type: string; value: unknown }[]
    if (isObject(body.proof)) {
      const type = body.proof.proof_type
      if (typeof type !== 'string') throw new OAuthError('invalid_proof', 'proof.proof_type is required')
      proofs = [{ type, value: body.proof[type] }]
    } else if (isObject(body.proofs)) {
      const types = Object.keys(body.proofs)
      const list = types.length === 1 && types[0] ? body.proofs[types[0]] : undefined
      if (!types[0] || !Array.isArray(list) || list.length === 0 || list.length > batchSize) {
        throw new OAuthError(
          'invalid_proof',
          `proofs must hold one proof type with 1 to ${batchSize} proofs (this issuer's batch_size, OpenID4VCI 1.0 §12.2.4)${Array.isArray(list) && list.length > batchSize ? `; got ${list.length}` : ''}`,
        )
      }
      const type = types[0]
      // Appendix F: "an array that contains exactly one JWT" (one attestation attests every key).
      if (type === ATTESTATION_PROOF_TYPE && list.length !== 1) {
        throw new OAuthError(
          'invalid_proof',
          'proofs.attestation must hold exactly one key attestation JWT, attesting every key (OpenID4VCI 1.0 Appendix F)',
        )
      }
      proofs = list.map((value) => ({ type, value }))
    } else {
      throw new OAuthError('invalid_proof', 'a key proof is required (proof or proofs)')
    }
    const verified: HolderProof[] = []
    for (const { type, value } of proofs) {
      if (type === 'jwt') verified.push(await verifyJwtProof(value, ctx))
      else if (type === 'di_vp' || type === 'ldp_vp') {
        if (ctx.keyAttestation?.required) {
          throw new OAuthError(
            'invalid_proof',
            `this credential configuration requires a key attestation (key_attestations_required), which a ${type} proof cannot carry; use the jwt or attestation proof type`,
          )
        }
        verified.push(await verifyDiVpProof(value, ctx))
      } else if (type === ATTESTATION_PROOF_TYPE && ctx.keyAttestation) {
        verified.push(await verifyAttestationProof(value, ctx))
      } else {
        const supported = ['jwt', 'di_vp', ...(ctx.keyAttestation ? [ATTESTATION_PROOF_TYPE] : [])]
        throw new OAuthError(
          'invalid_proof',
          `proof type "${type}" is not supported; use ${supported.join(', ')} (the configuration's proof_types_supported)`,
        )
      }
    }
    const [first] = verified
    if (!first) throw new OAuthError('invalid_proof', 'a key proof is required')
    if (verified.some((p) => p.nonce !== first.nonce)) {
      throw new OAuthError('invalid_proof', 'all proofs of one request must carry the same c_nonce')
    }
    const proven = verified.map((p) => p.holder.did)
    for (const [i, did] of proven.entries()) {
      const earlier = proven.indexOf(did)
      if (earlier !== i) {
        throw new OAuthError(
          'invalid_proof',
          `proofs[${i}] proves the same key as proofs[${earlier}] (${did}): each key is bound to one credential, so a batch needs distinct keys (OpenID4VCI 1.0 §8.3)`,
        )
      }
    }
    const holders = [...proven]
    if (proofs[0]?.type === ATTESTATION_PROOF_TYPE) {
      const attested = first.attested ?? []
      const total = 1 + attested.length
      if (total > batchSize) {
        throw new OAuthError(
          'invalid_proof',
          `the key attestation attests ${total} keys, one credential each; this issuer issues at most ${batchSize} per request (batch_size, OpenID4VCI 1.0 §12.2.4)`,
        )
      }
      holders.push(...attested.map((key) => key.did))
    } else {
      // Keys attested beside a jwt proof's own: issued too while the batch has room (§8.3: fewer may be issued).
      for (const key of verified.flatMap((p) => p.attested ?? [])) {
        if (holders.length >= batchSize) break
        if (!holders.includes(key.did)) holders.push(key.did)
      }
    }
    return { first, holders, nonce: first.nonce }
  }

  private static credentialsOf(process: ProcessRecord) {
    return (process.data ?? []).map((c) => ({ credential: wireCredential(c) }))
  }

  /** The credentials a wallet is handed: the process's, through the CredentialHandOut if there is one. */
  private async handOut(process: ProcessRecord, issuedWith: () => Promise<IssuedWith | undefined>) {
    const genuine = Oid4vciService.credentialsOf(process)
    if (!this.deps.handOut) return genuine
    const credentials = genuine.map((c) => c.credential)
    return (await this.deps.handOut.handOut(credentials, process, issuedWith)).map((credential) => ({
      credential,
    }))
  }

  /**
   * Credential endpoint (OpenID4VCI section 8). The access token may ask again (1.0 §8, §14.3; draft 15
   * §13.3): a further request, with its own key proof and unused nonce, is answered by `further`.
   */
  async credential(
    tenantId: string,
    authorization: string | undefined,
    body: unknown,
    headers: ClientHeaders = {},
  ) {
    const { grant, process } = await this.authenticate(tenantId, authorization, headers, 'credential')
    const { store, clock, issuance } = this.deps
    if (!isObject(body)) throw new OAuthError('invalid_credential_request', 'body must be a JSON object')
    // `pending`: a further request while the first one's transaction is open, judged once its proof is.
    const step = transition(process, grant, 'request_credential', clock.now())
    if (!step.ok && step.refusal !== 'pending') {
      throw this.refusal(process, 'request_credential', step, 'invalid_credential_request')
    }
    const granted = await store.templates.get(tenantId, process.templateId, 'issuance')
    if (!granted) throw new Error(`template ${process.templateId} of process ${process.id} missing`)
    const configurationId = requestedConfiguration(
      body,
      granted,
      this.deps.urls,
      this.deps.grants.credentialIdentifier(process.id, granted.id),
    )
    if (configurationId !== granted.id) {
      // Only another configuration than the granted one needs a look-up: unknown, or not this token's.
      const known = await store.templates.get(tenantId, configurationId, 'issuance')
      throw known
        ? new OAuthError(
            'invalid_credential_request',
            `this access token grants "${process.templateId}", not "${configurationId}"`,
          )
        : new OAuthError(
            'unknown_credential_configuration',
            `credential configuration "${configurationId}" is not in this issuer's metadata`,
          )
    }
    const template = granted
    const proven = await this.verifyProofs(body, this.proofContext(tenantId, template))
    if (grant.holderDid !== null) return this.further(tenantId, grant, process, template, proven)
    // Content submitted for a named holder is not handed to another one; nothing is consumed then.
    this.refuseConflict(process, proven)
    await this.consumeNonce(proven.nonce, tenantId)
    const validator = buildValidator(process.id, proven.first)
    const [holderDid, ...batch] = proven.holders as [string, ...string[]]
    const key = await issuance.signingKey(template)
    // Issue 38: the common case in one write atomic by itself; else (or when it wrote nothing) as always.
    let outcome = await this.bindHolderAlone(process, grant, validator, holderDid, batch)
    outcome ??= await store.transaction(async (repos) => {
      // The process row read above is passed along; the writes below are conditional on it. Only when the
      // relying party changed it meanwhile (submitted or rejected) is it read again and judged anew.
      let current = process
      let next: ProcessRecord | undefined
      for (let attempt = 0; attempt < 2 && !next; attempt++) {
        if (attempt > 0) current = (await repos.processes.get(process.id)) ?? process
        const step = this.allow(current, grant, 'request_credential', () => 'invalid_credential_request')
        if (step.status === 'ISSUED') break
        const bound: ProcessRecord = { ...current, validator, updatedAt: nextStamp(current, clock.now()) }
        if (await repos.processes.update(bound, current.updatedAt)) next = bound
      }
      const ready = !next
      const transactionId = ready ? null : randomUUID()
      const answerId = randomUUID()
      const notificationId = ready ? answerId : null
      // A batch's further keys are kept with the request: the deferred download issues theirs (see deferred).
      const recorded = await repos.grants.recordCredentialRequest(process.id, {
        holderDid,
        at: clock.now(),
        transactionId,
        notificationId,
        batchHolders: batch,
      })
      if (!recorded)
        throw new OAuthError(
          'invalid_credential_request',
          'another credential request with this access token was answered meanwhile; send this one again',
        )
      if (next) return { process: next, transactionId, notificationId, extras: [] }
      // The lifecycle answers ISSUED only for a process with submitted content.
      if (!current.submitted) throw new Error(`process ${current.id} has nothing submitted to issue`)
      try {
        const issued = await issuance.issueIn(
          repos,
          { ...current, validator },
          template,
          current.submitted,
          holderDid,
          key,
        )
        // §8.2 batch: the other keys' credentials in the same transaction, each with its own status entry, as
        // further instances of the process's (a status change reaches them); one notification_id for all.
        const extras =
          batch.length === 0 ? [] : await this.furtherIn(repos, issued, template, batch, key, answerId)
        return { process: issued, transactionId, notificationId, extras }
      } catch (error) {
        // E.g. a custom credential id issued meanwhile by another process: nothing is written.
        if (error instanceof AppError) {
          throw new OAuthError(
            'credential_request_denied',
            `the submitted content cannot be issued: ${error.detail}`,
          )
        }
        throw error
      }
    })
    this.deps.events.emit(
      processChanged(outcome.process, outcome.process.status === 'ISSUED' ? 'issued' : 'holder_bound'),
    )
    if (outcome.transactionId) {
      return {
        status: 202 as const,
        body: { transaction_id: outcome.transactionId, interval: this.deps.options.deferredIntervalSeconds },
      }
    }
    const handed = withExtras(outcome.process, outcome.extras)
    return {
      status: 200 as const,
      body: {
        credentials: await this.handOut(handed, async () => ({ template, key })),
        // Set whenever the credentials are handed out (no transaction_id).
        ...(outcome.notificationId ? { notification_id: outcome.notificationId } : {}),
      },
    }
  }

  /**
   * A first credential request's common case (issue 38): no content waits, so the process stays PENDING with
   * the holder bound and the answer is a transaction_id. The process and the grant's request are written as
   * the transaction of `credential` writes them on its first attempt, by one write atomic by itself
   * (grants.recordCredentialRequestWithProcess: one statement on PostgreSQL, no BEGIN/COMMIT). Undefined when
   * the request is not that case, or when that write found the process changed or a request recorded (it
   * wrote nothing then): the transaction runs as it always did, reads again and names what is wrong.
   */
  private async bindHolderAlone(
    process: ProcessRecord,
    grant: GrantRecord,
    validator: ProcessRecord['validator'],
    holderDid: string,
    batch: readonly string[],
  ) {
    const { store, clock } = this.deps
    const step = transition(process, grant, 'request_credential', clock.now())
    if (!step.ok || step.step !== 'holder_bound') return undefined
    const bound: ProcessRecord = { ...process, validator, updatedAt: nextStamp(process, clock.now()) }
    const transactionId = randomUUID()
    const written = await store.grants.recordCredentialRequestWithProcess(bound, process.updatedAt, {
      holderDid,
      at: clock.now(),
      transactionId,
      notificationId: null,
      batchHolders: batch,
    })
    if (!written) return undefined
    return {
      process: bound,
      transactionId: transactionId as string | null,
      notificationId: null as string | null,
      extras: [] as IssuedCredential[],
    }
  }

  /**
   * Content submitted for a named holder (a credentialSubject.id) is refused to any other key of the request
   * (`credential_request_denied`, nothing consumed): a batch cannot bind it to several keys.
   */
  private refuseConflict(process: ProcessRecord, proven: ProvenKeys) {
    const submitted = process.submitted
    if (!submitted) return
    for (const holder of proven.holders) {
      const conflict = holderConflict(submitted, holder)
      if (conflict) {
        throw new OAuthError(
          'credential_request_denied',
          `the credential prepared for this offer is bound to ${conflict}, not to the proving holder ${holder}`,
        )
      }
    }
  }

  /**
   * Further instances of an ISSUED process's credentials for `holders` in the caller's transaction
   * (IssuanceService.issueFurtherIn); its refusal (an original revoked or suspended) is
   * `credential_request_denied`, and the transaction writes nothing.
   */
  private async furtherIn(
    repos: Repositories,
    process: ProcessRecord,
    template: TemplateRecord<'issuance'>,
    holders: readonly string[],
    key: SigningKey,
    notificationId: string,
  ): Promise<IssuedCredential[]> {
    const outcome = await this.deps.issuance.issueFurtherIn(
      repos,
      process,
      template,
      holders,
      key,
      notificationId,
    )
    if (!outcome.ok) throw new OAuthError('credential_request_denied', outcome.reason)
    return outcome.credentials
  }

  /** The proof's nonce used up (single use), or `invalid_nonce` with a fresh one (1.0 §8.3.1.2). */
  private async consumeNonce(nonce: string, tenantId: string) {
    if (await this.useNonce(nonce, tenantId)) return
    throw new OAuthError(
      'invalid_nonce',
      'the nonce is unknown, expired or already used; fetch a fresh one',
      {
        body: {
          c_nonce: this.newNonce(tenantId),
          c_nonce_expires_in: this.deps.options.cNonceLifetimeSeconds,
        },
      },
    )
  }

  /**
   * A further credential request on an access token that asked already (1.0 §8: "several consecutive
   * Credential Requests"; §14.3: "accessed multiple times by a Wallet using the same Access Token"; draft 15
   * §13.3 alike), its proof verified. Every rule of a first request holds: the token is live and of this
   * tenant (authenticate), the configuration is the granted one, the key proof verifies and its nonce is
   * unused (consumed here). Then:
   * - the process ISSUED: the submitted content signed anew for the proving key, each credential with its
   *   own id and status entry (IssuanceService.issueFurtherIn), a new notification_id; the process, its data
   *   and its webhook stay as they were, the step announced is `credential_retrieved`. Content submitted for
   *   a named holder is refused to another one, as on the first request; so is a process whose credentials
   *   are revoked or suspended;
   * - the first request still waiting for content (PENDING): the same holder is answered the same 202 with
   *   its transaction_id (the deferred endpoint hands the credential out); another key is refused until the
   *   credential is issued, since that transaction can deliver only the first holder's.
   * A batch (§8.2) is served alike: every key gets its instances in one transaction under one
   * notification_id; while PENDING, the same 202 only for the same keys as the first request's batch.
   */
  private async further(
    tenantId: string,
    grant: GrantRecord,
    process: ProcessRecord,
    template: TemplateRecord<'issuance'>,
    proven: ProvenKeys,
  ) {
    const { store, issuance, options } = this.deps
    if (process.status === 'PENDING') {
      const [holderDid, ...batch] = proven.holders
      const waiting = grant.batchHolders ?? []
      const same =
        holderDid === grant.holderDid &&
        batch.length === waiting.length &&
        batch.every((did) => waiting.includes(did))
      if (!same || grant.transactionId === null) {
        throw new OAuthError(
          'invalid_credential_request',
          `this access token's credential request for ${[grant.holderDid, ...waiting].join(', ')} waits for the issuer; poll the deferred endpoint with its transaction_id, and ask for other keys once it is issued`,
        )
      }
      await this.consumeNonce(proven.nonce, tenantId)
      return {
        status: 202 as const,
        body: { transaction_id: grant.transactionId, interval: options.deferredIntervalSeconds },
      }
    }
    this.refuseConflict(process, proven)
    await this.consumeNonce(proven.nonce, tenantId)
    const key = await issuance.signingKey(template)
    const notificationId = randomUUID()
    let credentials: IssuedCredential[]
    try {
      credentials = await store.transaction((repos) =>
        this.furtherIn(repos, process, template, proven.holders, key, notificationId),
      )
    } catch (error) {
      if (error instanceof AppError) {
        throw new OAuthError(
          'credential_request_denied',
          `the content cannot be issued again: ${error.detail}`,
        )
      }
      throw error
    }
    this.deps.events.emit(processChanged(process, 'credential_retrieved'))
    return {
      status: 200 as const,
      body: {
        credentials: await this.handOut({ ...process, data: credentials }, async () => ({
          template,
          key,
        })),
        notification_id: notificationId,
      },
    }
  }

  /** Deferred credential endpoint (OpenID4VCI section 9). */
  async deferred(
    tenantId: string,
    authorization: string | undefined,
    body: unknown,
    headers: ClientHeaders = {},
  ) {
    const { store, clock } = this.deps
    // The successful download in one statement (issue 20): a live token of this tenant, bound as presented
    // (a DPoP proof checked first), its transaction, not yet redeemed, of an ISSUED process. Anything else
    // takes the checks below, which name what is wrong.
    const presented = await this.presented(tenantId, authorization, headers, 'deferred_credential')
    const transactionId = isObject(body) ? body.transaction_id : undefined
    if (presented && typeof transactionId === 'string') {
      const notificationId = randomUUID()
      const redeemed = await store.grants.markRedeemedByToken({
        tokenHash: sha256(presented.token),
        tenantId,
        transactionId,
        now: clock.now(),
        notificationId,
        tokenJkt: presented.jkt,
      })
      if (redeemed) return this.retrieved(tenantId, redeemed.process, notificationId)
    }
    const { grant, process } = await this.authenticate(
      tenantId,
      authorization,
      headers,
      'deferred_credential',
      presented,
    )
    if (typeof transactionId !== 'string')
      throw new OAuthError('invalid_request', 'transaction_id is required')
    if (grant.transactionId === null || grant.transactionId !== transactionId) {
      throw new OAuthError('invalid_transaction_id', 'transaction_id is unknown to this access token')
    }
    if (grant.redeemedAt !== null) {
      throw new OAuthError('invalid_transaction_id', 'transaction_id was already redeemed')
    }
    const outcome = transition(process, grant, 'retrieve_credential', clock.now())
    if (!outcome.ok && outcome.refusal === 'pending') {
      const interval = this.deps.options.deferredIntervalSeconds
      const template = await store.templates.get(tenantId, process.templateId, 'issuance')
      // 1.0 §9.2: still pending is a 202 with the same transaction_id; draft 15 answered an error.
      if (template?.body.deferredResponse !== 'draft15') {
        return { status: 202, body: { transaction_id: transactionId, interval } }
      }
      throw new OAuthError(
        'issuance_pending',
        'the credential is not issued yet; retry after interval seconds',
        {
          body: { interval },
        },
      )
    }
    if (!outcome.ok) throw this.refusal(process, 'retrieve_credential', outcome, 'invalid_transaction_id')
    const notificationId = randomUUID()
    const batch = grant.batchHolders ?? []
    if (batch.length > 0) return this.retrievedBatch(tenantId, process, batch, notificationId)
    // One conditional statement: a second redemption changes nothing.
    const redeemed = await store.grants.markRedeemed(process.id, clock.now(), notificationId)
    if (!redeemed) throw new OAuthError('invalid_transaction_id', 'transaction_id was already redeemed')
    return this.retrieved(tenantId, process, notificationId)
  }

  /**
   * The deferred download of a batch request (§8.2 with §9): the first key's credentials were issued when the
   * relying party submitted (4.4); the further keys' are issued now, in the transaction that redeems it, each
   * with its own status entry, as instances of the process's credentials under the download's
   * notification_id. While a credential of the process is revoked or suspended no new instance is made (it
   * would escape that status): the download then hands out the process's own credentials only, as §8.3 lets
   * an issuer issue fewer credentials than keys.
   */
  private async retrievedBatch(
    tenantId: string,
    process: ProcessRecord,
    batch: readonly string[],
    notificationId: string,
  ) {
    const { store, clock, issuance } = this.deps
    const template = await store.templates.get(tenantId, process.templateId, 'issuance')
    if (!template) throw new Error(`template ${process.templateId} of process ${process.id} missing`)
    const key = await issuance.signingKey(template)
    const extras = await store.transaction(async (repos) => {
      if (!(await repos.grants.markRedeemed(process.id, clock.now(), notificationId))) {
        throw new OAuthError('invalid_transaction_id', 'transaction_id was already redeemed')
      }
      const further = await issuance.issueFurtherIn(repos, process, template, batch, key, notificationId)
      return further.ok ? further.credentials : []
    })
    return this.retrieved(tenantId, process, notificationId, extras, { template, key })
  }

  /** The deferred credential handed out (and a batch's further credentials), its transaction redeemed under `notificationId`. */
  private async retrieved(
    tenantId: string,
    process: ProcessRecord,
    notificationId: string,
    extras: readonly IssuedCredential[] = [],
    known?: IssuedWith,
  ) {
    this.deps.events.emit(processChanged(process, 'credential_retrieved'))
    const issuedWith = async () => {
      if (known) return known
      const template = await this.deps.store.templates.get(tenantId, process.templateId, 'issuance')
      return template ? { template, key: await this.deps.issuance.signingKey(template) } : undefined
    }
    return {
      status: 200,
      body: {
        credentials: await this.handOut(withExtras(process, extras), issuedWith),
        notification_id: notificationId,
      },
    }
  }

  /** Notification endpoint (OpenID4VCI section 10); idempotent for a repeated notification. */
  async notification(
    tenantId: string,
    authorization: string | undefined,
    body: unknown,
    headers: ClientHeaders = {},
  ) {
    // The common case in one statement: a well-formed first notification with a live token of this tenant,
    // bound as presented. Anything else takes the checks below, which name what is wrong.
    const presented = await this.presented(tenantId, authorization, headers, 'notification')
    const first = isObject(body) ? body : {}
    if (
      presented &&
      typeof first.notification_id === 'string' &&
      typeof first.event === 'string' &&
      NOTIFICATION_EVENTS.has(first.event) &&
      (await this.deps.store.grants.recordNotificationByToken({
        tokenHash: sha256(presented.token),
        tenantId,
        notificationId: first.notification_id,
        event: first.event,
        now: this.deps.clock.now(),
        tokenJkt: presented.jkt,
      }))
    ) {
      return
    }
    const { grant } = await this.authenticate(tenantId, authorization, headers, 'notification', presented)
    if (!isObject(body)) throw new OAuthError('invalid_notification_request', 'body must be a JSON object')
    const { notification_id: id, event } = body
    if (typeof id !== 'string')
      throw new OAuthError('invalid_notification_request', 'notification_id is required')
    if (typeof event !== 'string' || !NOTIFICATION_EVENTS.has(event)) {
      throw new OAuthError(
        'invalid_notification_request',
        `event must be one of ${[...NOTIFICATION_EVENTS].join(', ')}`,
      )
    }
    if (grant.notificationId === null || grant.notificationId !== id) {
      await this.notifyFurther(grant.processId, id, event)
      return
    }
    if (await this.deps.store.grants.recordNotification(grant.processId, event)) return
    const recorded = (await this.deps.store.grants.get(grant.processId))?.notificationEvent
    if (recorded !== event) {
      throw new OAuthError(
        'invalid_notification_id',
        `this notification_id was already notified with "${recorded}"`,
      )
    }
  }

  /** A notification for the credentials of a further credential response (`further`), as idempotent. */
  private async notifyFurther(processId: string, id: string, event: string) {
    const { issuedCredentials } = this.deps.store
    if (await issuedCredentials.recordNotification(processId, id, event)) return
    const recorded = await issuedCredentials.notificationEvent(processId, id)
    if (!recorded) {
      throw new OAuthError('invalid_notification_id', 'notification_id is unknown to this access token')
    }
    if (recorded.event !== event) {
      throw new OAuthError(
        'invalid_notification_id',
        `this notification_id was already notified with "${recorded.event}"`,
      )
    }
  }
}
