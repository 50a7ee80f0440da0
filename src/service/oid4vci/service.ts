import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { issuedFormat } from '../../formats/registry.ts'
import { isObject } from '../../shared/json.ts'
import { PRE_AUTHORIZED_GRANT } from '../../shared/wire.ts'
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
import type { GrantRecord, ProcessRecord, Store, TemplateRecord } from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import { type PreAuthorizedGrants, sha256 } from './grants.ts'
import { presentationDefinition, requireIssuer } from './metadata.ts'
import { CNonces } from './nonces.ts'
import {
  buildValidator,
  type HolderProof,
  type ProofContext,
  verifyDiVpProof,
  verifyJwtProof,
} from './proofs.ts'
import { requestedConfiguration } from './requests.ts'

const MAX_PROOFS = 10
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i
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
    return {
      credential_issuer: this.deps.urls.credentialIssuer(tenantId),
      credential_configuration_ids: [process.templateId],
      grants: {
        [PRE_AUTHORIZED_GRANT]: {
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
        },
      },
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

  /** Token endpoint, pre-authorized code grant (OpenID4VCI section 6). */
  async token(tenantId: string, form: Form) {
    const { store, clock, options } = this.deps
    const grantType = form.grant_type
    if (typeof grantType !== 'string') throw new OAuthError('invalid_request', 'grant_type is required')
    if (grantType !== PRE_AUTHORIZED_GRANT) {
      throw new OAuthError(
        'unsupported_grant_type',
        `grant_type "${grantType}" is not supported; use ${PRE_AUTHORIZED_GRANT}`,
      )
    }
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
      (await store.grants.consumeCodeByHash({ codeHash, tenantId, now, tokenHash, tokenExpiresAt }))
    if (!redeemed) await this.judgeCode(tenantId, codeHash, txCode, now, tokenHash, tokenExpiresAt)
    return {
      access_token: accessToken,
      token_type: 'Bearer',
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
    if (!(await store.grants.consumeCode(grant.processId, tokenHash, tokenExpiresAt))) {
      throw new OAuthError('invalid_grant', 'pre-authorized_code was already used')
    }
  }

  /** RFC 6750: the grant behind a Bearer access token of this tenant's issuer, read with its process. */
  async authenticate(
    tenantId: string,
    authorization: string | undefined,
  ): Promise<{ grant: GrantRecord; process: ProcessRecord }> {
    if (!authorization) throw tokenError('an access token is required (Authorization: Bearer …)', false)
    const match = BEARER.exec(authorization)
    if (!match?.[1]) throw tokenError('Authorization must be "Bearer <access token>"', true)
    const found = await this.deps.store.grants.withProcess({ tokenHash: sha256(match[1]) })
    if (!found || found.grant.tenantId !== tenantId)
      throw tokenError('access token is unknown to this issuer', true)
    const { tokenExpiresAt } = found.grant
    if (tokenExpiresAt === null || this.deps.clock.now() >= tokenExpiresAt) {
      throw tokenError('access token has expired', true)
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
    }
  }

  /**
   * The request's key proofs, verified. Both generations name a missing proof, and draft 15 both members at
   * once, `invalid_proof` (1.0 §8.3.1.2 "(1) if the field is missing"; draft 15 §8.3.1.2 "(1) if both fields
   * are missing, or (2) both are present simultaneously").
   */
  private async verifyProofs(body: Form, ctx: ProofContext): Promise<HolderProof> {
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
      if (!types[0] || !Array.isArray(list) || list.length === 0 || list.length > MAX_PROOFS) {
        throw new OAuthError(
          'invalid_proof',
          `proofs must hold one proof type with 1 to ${MAX_PROOFS} proofs`,
        )
      }
      const type = types[0]
      proofs = list.map((value) => ({ type, value }))
    } else {
      throw new OAuthError('invalid_proof', 'a key proof is required (proof or proofs)')
    }
    const verified: HolderProof[] = []
    for (const { type, value } of proofs) {
      if (type === 'jwt') verified.push(verifyJwtProof(value, ctx))
      else if (type === 'di_vp' || type === 'ldp_vp') verified.push(await verifyDiVpProof(value, ctx))
      else throw new OAuthError('invalid_proof', `proof type "${type}" is not supported; use jwt or di_vp`)
    }
    const [first] = verified
    if (!first) throw new OAuthError('invalid_proof', 'a key proof is required')
    if (verified.some((p) => p.holder.did !== first.holder.did || p.nonce !== first.nonce)) {
      throw new OAuthError('invalid_proof', 'all proofs of one request must name the same holder and nonce')
    }
    return first
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
  async credential(tenantId: string, authorization: string | undefined, body: unknown) {
    const { grant, process } = await this.authenticate(tenantId, authorization)
    const { store, clock, issuance } = this.deps
    if (!isObject(body)) throw new OAuthError('invalid_credential_request', 'body must be a JSON object')
    // `pending`: a further request while the first one's transaction is open, judged once its proof is.
    const step = transition(process, grant, 'request_credential', clock.now())
    if (!step.ok && step.refusal !== 'pending') {
      throw this.refusal(process, 'request_credential', step, 'invalid_credential_request')
    }
    const granted = await store.templates.get(tenantId, process.templateId, 'issuance')
    if (!granted) throw new Error(`template ${process.templateId} of process ${process.id} missing`)
    const configurationId = requestedConfiguration(body, granted, this.deps.urls)
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
    const proof = await this.verifyProofs(body, this.proofContext(tenantId, template))
    if (grant.holderDid !== null) return this.further(tenantId, grant, process, template, proof)
    // Content submitted for a named holder is not handed to another one; nothing is consumed then.
    const conflict = process.submitted && holderConflict(process.submitted, proof.holder.did)
    if (conflict) {
      throw new OAuthError(
        'credential_request_denied',
        `the credential prepared for this offer is bound to ${conflict}, not to the proving holder ${proof.holder.did}`,
      )
    }
    await this.consumeNonce(proof.nonce, tenantId)
    const validator = buildValidator(process.id, proof)
    const holderDid = proof.holder.did
    const key = await issuance.signingKey(template)
    const outcome = await store.transaction(async (repos) => {
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
      const notificationId = ready ? randomUUID() : null
      const recorded = await repos.grants.recordCredentialRequest(process.id, {
        holderDid,
        at: clock.now(),
        transactionId,
        notificationId,
      })
      if (!recorded)
        throw new OAuthError(
          'invalid_credential_request',
          'another credential request with this access token was answered meanwhile; send this one again',
        )
      if (next) return { process: next, transactionId, notificationId }
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
        return { process: issued, transactionId, notificationId }
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
    return {
      status: 200 as const,
      body: {
        credentials: await this.handOut(outcome.process, async () => ({ template, key })),
        // Set whenever the credentials are handed out (no transaction_id).
        ...(outcome.notificationId ? { notification_id: outcome.notificationId } : {}),
      },
    }
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
   */
  private async further(
    tenantId: string,
    grant: GrantRecord,
    process: ProcessRecord,
    template: TemplateRecord<'issuance'>,
    proof: HolderProof,
  ) {
    const { store, issuance, options } = this.deps
    const holderDid = proof.holder.did
    if (process.status === 'PENDING') {
      if (holderDid !== grant.holderDid || grant.transactionId === null) {
        throw new OAuthError(
          'invalid_credential_request',
          `this access token's credential request for ${grant.holderDid} waits for the issuer; poll the deferred endpoint with its transaction_id, and ask for another key once it is issued`,
        )
      }
      await this.consumeNonce(proof.nonce, tenantId)
      return {
        status: 202 as const,
        body: { transaction_id: grant.transactionId, interval: options.deferredIntervalSeconds },
      }
    }
    const conflict = process.submitted && holderConflict(process.submitted, holderDid)
    if (conflict) {
      throw new OAuthError(
        'credential_request_denied',
        `the credential prepared for this offer is bound to ${conflict}, not to the proving holder ${holderDid}`,
      )
    }
    await this.consumeNonce(proof.nonce, tenantId)
    const key = await issuance.signingKey(template)
    const notificationId = randomUUID()
    let outcome: Awaited<ReturnType<IssuanceService['issueFurtherIn']>>
    try {
      outcome = await store.transaction((repos) =>
        issuance.issueFurtherIn(repos, process, template, holderDid, key, notificationId),
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
    if (!outcome.ok) throw new OAuthError('credential_request_denied', outcome.reason)
    this.deps.events.emit(processChanged(process, 'credential_retrieved'))
    return {
      status: 200 as const,
      body: {
        credentials: await this.handOut({ ...process, data: outcome.credentials }, async () => ({
          template,
          key,
        })),
        notification_id: notificationId,
      },
    }
  }

  /** Deferred credential endpoint (OpenID4VCI section 9). */
  async deferred(tenantId: string, authorization: string | undefined, body: unknown) {
    const { store, clock } = this.deps
    // The successful download in one statement (issue 20): a live token of this tenant, its transaction,
    // not yet redeemed, of an ISSUED process. Anything else takes the checks below, which name what is wrong.
    const token = authorization && BEARER.exec(authorization)?.[1]
    const transactionId = isObject(body) ? body.transaction_id : undefined
    if (token && typeof transactionId === 'string') {
      const notificationId = randomUUID()
      const redeemed = await store.grants.markRedeemedByToken({
        tokenHash: sha256(token),
        tenantId,
        transactionId,
        now: clock.now(),
        notificationId,
      })
      if (redeemed) return this.retrieved(tenantId, redeemed.process, notificationId)
    }
    const { grant, process } = await this.authenticate(tenantId, authorization)
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
    // One conditional statement: a second redemption changes nothing.
    const redeemed = await store.grants.markRedeemed(process.id, clock.now(), notificationId)
    if (!redeemed) throw new OAuthError('invalid_transaction_id', 'transaction_id was already redeemed')
    return this.retrieved(tenantId, process, notificationId)
  }

  /** The deferred credential handed out, its transaction redeemed under `notificationId`. */
  private async retrieved(tenantId: string, process: ProcessRecord, notificationId: string) {
    this.deps.events.emit(processChanged(process, 'credential_retrieved'))
    const issuedWith = async () => {
      const template = await this.deps.store.templates.get(tenantId, process.templateId, 'issuance')
      return template ? { template, key: await this.deps.issuance.signingKey(template) } : undefined
    }
    return {
      status: 200,
      body: {
        credentials: await this.handOut(process, issuedWith),
        notification_id: notificationId,
      },
    }
  }

  /** Notification endpoint (OpenID4VCI section 10); idempotent for a repeated notification. */
  async notification(tenantId: string, authorization: string | undefined, body: unknown) {
    // The common case in one statement: a well-formed first notification with a live token of this tenant.
    // Anything else takes the checks below, which name what is wrong.
    const token = authorization && BEARER.exec(authorization)?.[1]
    const first = isObject(body) ? body : {}
    if (
      token &&
      typeof first.notification_id === 'string' &&
      typeof first.event === 'string' &&
      NOTIFICATION_EVENTS.has(first.event) &&
      (await this.deps.store.grants.recordNotificationByToken({
        tokenHash: sha256(token),
        tenantId,
        notificationId: first.notification_id,
        event: first.event,
        now: this.deps.clock.now(),
      }))
    ) {
      return
    }
    const { grant } = await this.authenticate(tenantId, authorization)
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
