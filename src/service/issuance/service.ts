import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto'
import { issuedFormat } from '../../formats/registry.ts'
import type { IssuanceStep } from '../../shared/flow.ts'
import { MDOC_FORMAT } from '../../shared/mdoc.ts'
import { hasRole } from '../auth/service.ts'
import type { Principal } from '../auth/tokens.ts'
import type { IssuerCertificates, SigningKey } from '../crypto/issuer-certificates.ts'
import type { TenantKeys } from '../crypto/tenant-keys.ts'
import { AppError, type ProblemCode } from '../errors/problem.ts'
import type { ServiceEvents, WebhookBody } from '../events.ts'
import type { StatusLists } from '../status/service.ts'
import {
  ConflictError,
  type CredentialStatus,
  type GrantRecord,
  type HolderValidator,
  type IssuedCredential,
  type ListCursor,
  type ProcessRecord,
  type ProcessStatus,
  type Repositories,
  type Store,
  type TemplateRecord,
} from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import type { WebhookOutbox } from '../webhooks/outbox.ts'
import {
  doctypeOf,
  holderConflict,
  type PreparedCredential,
  prepareCredentials,
  signIn,
  vctOf,
} from './credentials.ts'
import { nextStamp, type ProcessEvent, type ProcessRefusal, processChanged, transition } from './lifecycle.ts'

export const PROCESS_TYPE = 'OIDC4VCI_PRE_AUTHORIZED'

/** The wire shape of an issuance process (section 2.2). */
export interface ProcessView {
  id: string
  status: ProcessStatus
  group: string
  type: string
  data?: IssuedCredential[]
  validator: HolderValidator | null
  createdAt: string
  updatedAt: string
}

export function processView(p: ProcessRecord): ProcessView {
  return {
    id: p.id,
    status: p.status,
    group: p.templateId,
    type: p.type,
    ...(p.status === 'ISSUED' && p.data ? { data: p.data } : {}),
    validator: p.validator,
    createdAt: isoTime(p.createdAt),
    updatedAt: isoTime(p.updatedAt),
  }
}

/** A keyset cursor, MACed so that only cursors this service issued are accepted. */
export function encodeCursor(c: ListCursor, secret: Buffer): string {
  const payload = Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url')
  return `${payload}.${cursorMac(payload, secret)}`
}

const cursorMac = (payload: string, secret: Buffer) =>
  createHmac('sha256', secret).update(payload).digest('base64url').slice(0, 22)

export function decodeCursor(text: string, secret: Buffer): ListCursor {
  const [payload = '', mac = ''] = text.split('.')
  const expected = cursorMac(payload, secret)
  if (mac.length === expected.length && timingSafeEqual(Buffer.from(mac), Buffer.from(expected))) {
    try {
      const [createdAt, id] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[]
      if (typeof createdAt === 'number' && typeof id === 'string') return { createdAt, id }
    } catch {
      // fall through to the error below
    }
  }
  throw new AppError('invalid_cursor', 'cursor is not one this service issued; take it from the Link header')
}

export interface ListOptions {
  status?: ProcessStatus
  limit: number
  cursor?: string
}

/**
 * The wallet protocol's side of an offer (implemented by oid4vci/grants.ts): the grant row written with the
 * process, and the deep link. Declared here so the domain never imports a protocol module. `newGrant` is
 * asked before anything is written, so it may refuse the offer with an AppError (the wallet test plans'
 * faulty issuer does, for a template its tenant's rule cannot apply to).
 */
/** The createdByKey of a process a wallet opened itself (no API key created it). */
export const WALLET_INITIATED = 'wallet-initiated'

export interface OfferGrants {
  newGrant(
    process: ProcessRecord,
    template: TemplateRecord<'issuance'>,
    now: number,
  ): { grant: GrantRecord; txCode?: string }
  deepLink(tenantId: string, processId: string): string
}

/** How the relying-party API names each refusal of the lifecycle (docs/api.md, error codes). */
const PROBLEM_OF: Record<ProcessRefusal, ProblemCode> = {
  not_pending: 'process_not_pending',
  rejected: 'process_not_pending',
  expired: 'process_not_pending',
  pending: 'process_not_issued',
  already_submitted: 'already_submitted',
  not_issued: 'process_not_issued',
}

export interface IssuanceDeps {
  store: Store
  clock: Clock
  urls: PublicUrls
  tenantKeys: TenantKeys
  issuerCertificates: IssuerCertificates
  statusLists: StatusLists
  events: ServiceEvents
  webhooks: WebhookOutbox
  grants: OfferGrants
  /** MACs list cursors. */
  cursorSecret: Buffer
}

export class IssuanceService {
  private readonly store: Store
  private readonly clock: Clock

  constructor(private readonly deps: IssuanceDeps) {
    this.store = deps.store
    this.clock = deps.clock
  }

  /** Announces a committed change of `process` (the webhook dispatcher, streams and tests subscribe). */
  private emit(process: ProcessRecord, step: IssuanceStep) {
    this.deps.events.emit(processChanged(process, step))
  }

  /** Asks the lifecycle whether `event` may happen now; a refusal is the relying-party API's 409. */
  private allow(process: ProcessRecord, grant: GrantRecord | null | undefined, event: ProcessEvent) {
    const outcome = transition(process, grant, event, this.clock.now())
    if (!outcome.ok) throw new AppError(PROBLEM_OF[outcome.refusal], outcome.message)
    return outcome
  }

  /**
   * Section 4.2: open a PENDING process for template `group` with its pre-authorized code (and
   * tx_code when the template asks for one), and build the offer deep link.
   */
  async createOffer(
    principal: Principal,
    group: string,
  ): Promise<{ uri: string; process: ProcessRecord; txCode?: string }> {
    if (principal.template !== null && principal.template !== group) {
      throw new AppError(
        'template_not_allowed',
        `this token was issued for template "${principal.template}"; group "${group}" is not allowed`,
      )
    }
    const template = await this.store.templates.get(principal.tenantId, group, 'issuance')
    if (!template) throw new AppError('template_not_found', `no issuance template "${group}" in this tenant`)
    const now = this.clock.now()
    const process: ProcessRecord = {
      id: randomUUID(),
      tenantId: principal.tenantId,
      templateId: group,
      type: PROCESS_TYPE,
      status: 'PENDING',
      data: null,
      validator: null,
      submitted: null,
      rejectedReason: null,
      createdByKey: principal.keyId,
      createdAt: now,
      updatedAt: now,
    }
    const { grant, txCode } = this.deps.grants.newGrant(process, template, now)
    // Atomic by itself (store/index.ts, Store): one statement on PostgreSQL, no BEGIN/COMMIT (issue 38).
    await this.store.grants.createWithProcess(process, grant)
    this.emit(process, 'offer_created')
    return {
      uri: this.deps.grants.deepLink(principal.tenantId, process.id),
      process,
      ...(txCode === undefined ? {} : { txCode }),
    }
  }

  /**
   * The content a wallet-initiated authorization submits at once (the template's `authorization.credentials`,
   * validated as a 4.4 body), or null: the process then waits for an administrator (attended issuance).
   * Prepared before the transaction that opens the process (it loads the signing key).
   */
  async walletInitiatedContent(template: TemplateRecord<'issuance'>): Promise<PreparedCredential[] | null> {
    const body = template.body.authorization?.credentials
    if (!body) return null
    const key = await this.signingKey(template)
    return prepareCredentials(body, template.body, { issuerDid: key.did, holderDid: null })
  }

  /**
   * Opens a PENDING process for a wallet that started from the issuer metadata and was authorized (the
   * authorization code flow, OpenID4VCI 1.0 §3.3.3 wallet-initiated): as 4.2 would open it, in the caller's
   * transaction, with `submitted` content when the template supplies some. Announce it with `opened` once
   * the transaction committed.
   */
  async openForWalletIn(
    repos: Repositories,
    template: TemplateRecord<'issuance'>,
    submitted: PreparedCredential[] | null,
    now: number,
  ): Promise<ProcessRecord> {
    const process: ProcessRecord = {
      id: randomUUID(),
      tenantId: template.tenantId,
      templateId: template.id,
      type: PROCESS_TYPE,
      status: 'PENDING',
      data: null,
      validator: null,
      submitted,
      rejectedReason: null,
      createdByKey: WALLET_INITIATED,
      createdAt: now,
      updatedAt: now,
    }
    const { grant } = this.deps.grants.newGrant(process, template, now)
    await repos.grants.createWithProcess(process, grant)
    return process
  }

  /** The steps of a process openForWalletIn opened, announced after its commit (webhooks, streams). */
  opened(process: ProcessRecord) {
    this.emit(process, 'offer_created')
    if (process.submitted) this.emit(process, 'submitted')
  }

  /**
   * Section 4.3. Another tenant's process answers 404 exactly like an unknown id; a process of this
   * tenant but of a template the token is not linked to answers 403. Administrators (allowed on the
   * write calls only: submit, reject, status) act on every process of their tenant.
   */
  async getProcess(principal: Principal, id: string): Promise<ProcessRecord> {
    return this.visible(principal, id, await this.store.processes.get(id))
  }

  /** getProcess, with the process's grant read in the same statement (null: the process has none). */
  private async getProcessWithGrant(
    principal: Principal,
    id: string,
  ): Promise<{ process: ProcessRecord; grant: GrantRecord | null }> {
    const found = await this.store.grants.withProcess({ processId: id })
    if (found) return { process: this.visible(principal, id, found.process), grant: found.grant }
    return { process: await this.getProcess(principal, id), grant: null }
  }

  private visible(principal: Principal, id: string, process: ProcessRecord | undefined): ProcessRecord {
    if (!process || process.tenantId !== principal.tenantId) {
      throw new AppError('process_not_found', `no issuance process "${id}"`)
    }
    if (
      !hasRole(principal, ['admin']) &&
      principal.template !== null &&
      principal.template !== process.templateId
    ) {
      throw new AppError(
        'process_not_linked',
        `process "${id}" belongs to template "${process.templateId}", not to this token's template "${principal.template}"`,
      )
    }
    return process
  }

  private async templateOf(process: ProcessRecord): Promise<TemplateRecord<'issuance'>> {
    const template = await this.store.templates.get(process.tenantId, process.templateId, 'issuance')
    if (!template) throw new Error(`template ${process.templateId} of process ${process.id} missing`)
    return template
  }

  /** Writes `next` if nobody changed the process since `current` was read; 409 otherwise. */
  private async save(repos: Repositories, current: ProcessRecord, next: ProcessRecord) {
    if (!(await repos.processes.update(next, current.updatedAt))) {
      throw new AppError('conflict', `process "${current.id}" changed concurrently; read it again`)
    }
  }

  /**
   * Section 4.4. Validates every credential first (400, nothing stored). If the wallet already bound a
   * holder, the credentials are signed now and the process is ISSUED; otherwise the content waits and
   * is signed the moment the wallet's proof arrives.
   */
  async submitCredentials(principal: Principal, id: string, body: unknown): Promise<ProcessRecord> {
    const { process: current, grant: known } = await this.getProcessWithGrant(principal, id)
    this.allow(current, known, 'submit')
    const template = await this.templateOf(current)
    const key = await this.signingKey(template)
    const prepared = prepareCredentials(body, template.body, {
      issuerDid: key.did,
      holderDid: known?.holderDid ?? null,
    })
    // Only ids the relying party chose can have been issued before (ours are random UUIDs).
    const chosen = (body as Record<string, unknown>[]).flatMap((c) =>
      typeof c.id === 'string' ? [c.id] : [],
    )
    const taken = chosen.length > 0 ? await this.store.issuedCredentials.existing(chosen) : []
    if (taken.length > 0) {
      throw new AppError('credential_id_conflict', `credential id "${taken[0]}" was already issued`)
    }
    const next = await this.store.transaction(async (repos) => {
      // The process and grant read above (one statement, one snapshot) are judged; every write below is
      // conditional on the process row. A wallet binding its holder meanwhile changed that row (in the
      // same transaction as the grant), so only then are both read again and judged anew.
      const first = await this.submitIn(repos, current, known, template, prepared, key)
      if (first) return first
      const again = await repos.grants.withProcess({ processId: id })
      const second =
        again && (await this.submitIn(repos, again.process, again.grant, template, prepared, key))
      if (!second) throw new AppError('conflict', `process "${id}" changed concurrently; read it again`)
      return second
    })
    this.emit(next, next.status === 'ISSUED' ? 'issued' : 'submitted')
    return next
  }

  /**
   * The write half of submitCredentials, on the rows as last read: signs and issues when a holder is bound,
   * else stores the content to wait for one. Undefined when the content could not be stored because the
   * process changed since it was read (nothing written then); the issuing path throws 409 instead, as its
   * writes (status entries) came first and the transaction must not keep them.
   */
  private async submitIn(
    repos: Repositories,
    base: ProcessRecord,
    grant: GrantRecord | null,
    template: TemplateRecord<'issuance'>,
    prepared: PreparedCredential[],
    key: SigningKey,
  ): Promise<ProcessRecord | undefined> {
    {
      const holderDid = grant?.holderDid ?? null
      const outcome = this.allow(base, grant, 'submit')
      if (outcome.status === 'ISSUED' && holderDid) {
        const conflict = holderConflict(prepared, holderDid)
        if (conflict !== undefined) {
          throw new AppError(
            'invalid_credential',
            `credentialSubject.id ${conflict} is not the holder the wallet proved (${holderDid})`,
            {
              errors: [{ field: 'body/credentialSubject/id', message: `must be ${holderDid} (or left out)` }],
            },
          )
        }
        return this.issueIn(repos, base, template, prepared, holderDid, key)
      }
      const waiting: ProcessRecord = {
        ...base,
        submitted: prepared,
        updatedAt: nextStamp(base, this.clock.now()),
      }
      return (await repos.processes.update(waiting, base.updatedAt)) ? waiting : undefined
    }
  }

  /**
   * The signing key of a template, with its x5c chain when the template asks for one; load it before a
   * transaction (the store has one connection).
   */
  async signingKey(template: TemplateRecord<'issuance'>): Promise<SigningKey> {
    if (template.body.format === MDOC_FORMAT) {
      // ISO 18013-5 Annex B: the tenant's P-256 key, certified as a document signer by the tenant's IACA
      const key = await this.deps.tenantKeys.forTenant(template.tenantId, 'ES256')
      return { ...key, mdocChain: await this.deps.issuerCertificates.mdocChain(template.tenantId, key) }
    }
    const key = await this.deps.tenantKeys.forTenant(template.tenantId, template.body.signingAlg)
    if (template.body.issuerKeyBinding !== 'x5c') return key
    return this.deps.issuerCertificates.withChain(template.tenantId, key)
  }

  /**
   * Signs `prepared` for `holderDid` and moves the process to ISSUED, inside the caller's transaction
   * (status-list entries, the state change and its webhook commit together). The caller has asked the
   * lifecycle; `process` is the row as it read it, and the write fails if it changed since.
   */
  async issueIn(
    repos: Repositories,
    process: ProcessRecord,
    template: TemplateRecord<'issuance'>,
    prepared: PreparedCredential[],
    holderDid: string,
    key: SigningKey,
  ): Promise<ProcessRecord> {
    const now = this.clock.now()
    const data: IssuedCredential[] = []
    for (const credential of prepared) {
      data.push(await this.allocateAndSign(repos, process, template, credential, holderDid, key, now))
    }
    const issued: ProcessRecord = {
      ...process,
      status: 'ISSUED',
      data,
      // Kept: a further credential request on the same access token signs it again (issueFurtherIn).
      submitted: prepared,
      updatedAt: nextStamp(process, now),
    }
    await this.save(repos, process, issued)
    await this.deps.webhooks.enqueueIn(
      repos,
      template,
      process.id,
      'issuance.issued',
      issuedWebhook(process.id, holderDid, prepared, template),
    )
    return issued
  }

  /** One credential's status entry allocated and the credential signed for `holderDid` in the template's format. */
  private async allocateAndSign(
    repos: Repositories,
    process: ProcessRecord,
    template: TemplateRecord<'issuance'>,
    credential: PreparedCredential,
    holderDid: string,
    key: SigningKey,
    now: number,
  ): Promise<IssuedCredential> {
    let allocation: Awaited<ReturnType<StatusLists['allocate']>>
    try {
      allocation = await this.deps.statusLists.allocate(repos, {
        tenantId: process.tenantId,
        alg: key.alg,
        credentialId: credential.id,
        processId: process.id,
      })
    } catch (error) {
      if (error instanceof ConflictError && error.key === 'id') {
        throw new AppError(
          'credential_id_conflict',
          `a credential with id "${credential.id}" was already issued`,
        )
      }
      throw error
    }
    // One list entry, referenced the way each format does (a Bitstring Status List entry in a W3C VC,
    // a Token Status List reference in an SD-JWT VC); signed by the template's format.
    const { token, ...bitstring } = allocation
    return signIn(issuedFormat(template.body.format), credential, {
      holderDid,
      key,
      status: { bitstring: { ...bitstring }, token: { ...token } },
      now,
      validityDays: template.body.validityDays,
      vct: vctOf(template, this.deps.urls),
      doctype: doctypeOf(template),
      disclosable: template.body.selectivelyDisclosable,
      proofType: template.body.proofType,
    })
  }

  /**
   * Further instances of an ISSUED process's credentials for each of `holderDids`, inside the caller's
   * transaction (OpenID4VCI 1.0 §14.3: the wallet asks again with the same access token; §8.2: a batch
   * request's further keys). The content the relying party submitted is signed anew for each holder, each
   * credential with a new `urn:uuid` id and its own status entry (so the copies are unlinkable), recorded as
   * an instance of its original (a status change of the original reaches it) under `notificationId`. The
   * process row does not change, no webhook is queued (the relying party was told once, when the process was
   * issued) and the process data keeps showing the originals. Refused, with nothing written, while an
   * original is revoked or suspended: a new instance would bypass that status. The credentials come in the
   * order of `holderDids`, each holder's in the order of the content.
   */
  async issueFurtherIn(
    repos: Repositories,
    process: ProcessRecord,
    template: TemplateRecord<'issuance'>,
    holderDids: readonly string[],
    key: SigningKey,
    notificationId: string,
  ): Promise<{ ok: true; credentials: IssuedCredential[] } | { ok: false; reason: string }> {
    const content = process.submitted
    if (process.status !== 'ISSUED' || !content) {
      return { ok: false, reason: `process "${process.id}" holds no issued content to sign again` }
    }
    // Locks the process's entries against a status change until this transaction ends.
    const entries = await repos.issuedCredentials.listByProcessForUpdate(process.id)
    for (const original of content) {
      const entry = entries.find((e) => e.id === original.id)
      if (entry?.status !== 'active') {
        return {
          ok: false,
          reason: `credential "${original.id}" of this process is ${entry?.status ?? 'gone'}; no further instance is issued`,
        }
      }
    }
    const now = this.clock.now()
    const credentials: IssuedCredential[] = []
    for (const holderDid of holderDids) {
      for (const original of content) {
        const instance: PreparedCredential = { ...original, id: `urn:uuid:${randomUUID()}` }
        credentials.push(await this.allocateAndSign(repos, process, template, instance, holderDid, key, now))
        await repos.issuedCredentials.markFurtherInstance(instance.id, {
          instanceOf: original.id,
          notificationId,
        })
      }
    }
    return { ok: true, credentials }
  }

  /** Rejects a PENDING process (the interface shows no transition; see docs/api.md). */
  async reject(principal: Principal, id: string, reason: string | undefined): Promise<ProcessRecord> {
    const current = await this.getProcess(principal, id)
    this.allow(current, null, 'reject')
    const next: ProcessRecord = {
      ...current,
      status: 'REJECTED',
      submitted: null,
      rejectedReason: reason ?? null,
      updatedAt: nextStamp(current, this.clock.now()),
    }
    const template = await this.templateOf(current)
    await this.store.transaction(async (repos) => {
      await this.save(repos, current, next)
      const holderDid = (await repos.grants.get(id))?.holderDid ?? ''
      await this.deps.webhooks.enqueueIn(repos, template, id, 'issuance.rejected', {
        id,
        subject: holderDid,
        status: 'REJECT',
        verificationResult: {
          checks: [],
          warnings: [],
          errors: [`rejected by the issuer${reason ? `: ${reason}` : ''}`],
        },
      })
    })
    this.emit(next, 'rejected')
    return next
  }

  /**
   * Revokes, suspends or reinstates the credentials of an ISSUED process (all, or those listed).
   * Revocation is final. A credential's further instances (issueFurtherIn: the wallet asked again with its
   * access token) change with it; the answer names the process's own credentials, the ids the relying
   * party knows.
   */
  async setCredentialStatus(
    principal: Principal,
    id: string,
    change: { status: CredentialStatus; credentialIds?: string[] },
  ): Promise<{ id: string; status: CredentialStatus }[]> {
    this.allow(await this.getProcess(principal, id), null, 'change_status')
    return this.store.transaction(async (repos) => {
      // Locked: a further instance allocated meanwhile is either seen here or sees this change.
      const entries = await repos.issuedCredentials.listByProcessForUpdate(id)
      const originals = entries.filter((e) => !e.instanceOf)
      const wanted = change.credentialIds ?? originals.map((e) => e.id)
      const chosen = wanted.map((credentialId) => {
        const entry = originals.find((e) => e.id === credentialId)
        if (!entry)
          throw new AppError('credential_not_found', `process "${id}" has no credential "${credentialId}"`)
        return entry
      })
      const targets = [...chosen, ...entries.filter((e) => e.instanceOf && wanted.includes(e.instanceOf))]
      for (const entry of targets) {
        if (entry.status === 'revoked' && change.status !== 'revoked') {
          throw new AppError(
            'status_final',
            `credential "${entry.instanceOf ?? entry.id}" is revoked; revocation cannot be undone`,
          )
        }
      }
      const now = this.clock.now()
      for (const entry of targets) await repos.issuedCredentials.setStatus(entry.id, change.status, now)
      await this.deps.statusLists.apply(
        repos,
        targets.map((e) => ({ listId: e.listId, index: e.listIndex, status: change.status })),
      )
      return chosen.map((e) => ({ id: e.id, status: change.status }))
    })
  }

  /** Section 4.5, tenant-scoped; returns one page and the cursor of the next, if any. */
  async listProcesses(principal: Principal, options: ListOptions) {
    const after =
      options.cursor === undefined ? undefined : decodeCursor(options.cursor, this.deps.cursorSecret)
    const rows = await this.store.processes.list({
      tenantId: principal.tenantId,
      ...(options.status ? { status: options.status } : {}),
      ...(after ? { after } : {}),
      limit: options.limit + 1,
    })
    const page = rows.slice(0, options.limit)
    const last = page.at(-1)
    const next = rows.length > options.limit && last ? encodeCursor(last, this.deps.cursorSecret) : undefined
    return { page, next }
  }
}

/**
 * The section 6 body of an ISSUED process: the holder as subject, the issued claims (without `id`) as
 * payload, and the checks the wallet's requests passed before anything was signed.
 */
export function issuedWebhook(
  processId: string,
  holderDid: string,
  prepared: PreparedCredential[],
  template: TemplateRecord<'issuance'>,
): WebhookBody {
  const payload: Record<string, unknown> = {}
  for (const credential of prepared) {
    const { id: _id, ...claims } = credential.credentialSubject
    Object.assign(payload, claims)
  }
  const checks = ['securityMechanisms', 'holderProof']
  if (template.body.requiredPresentation) checks.push('presentationProof', 'credentialProof', 'matchingIds')
  return {
    id: processId,
    subject: holderDid,
    status: 'SUCCESS',
    ...(Object.keys(payload).length > 0 ? { payload } : {}),
    verificationResult: { checks, warnings: [], errors: [] },
  }
}
