// Wallet-vendor sandbox (`vc-harness serve --sandbox`): the reference service stays up, and this module acts
// as a relying party beside it. It opens a credential offer (with sample content submitted at once, so the
// wallet gets its credential immediately) and a verification session, prints both as deep links and
// terminal QR codes, reports each step the wallet takes, and opens fresh ones when a flow ends.
//
// It is a relying party: every API call goes over HTTP through RelyingPartyClient. It only listens to the
// service's state-changed events (what a webhook or the QR page would see) to learn what the wallet did.

import { appendFileSync, mkdirSync } from 'node:fs'
import { networkInterfaces } from 'node:os'
import { dirname } from 'node:path'
import QRCode from 'qrcode'
import {
  type ApiKeyCredentials,
  type DcqlSessionCreated,
  type IssuanceProcess,
  ok,
  parseCredentialOfferUri,
  RelyingPartyClient,
  type SessionCreated,
  type SessionRead,
  sessionIdOf,
} from '../client/index.ts'
// Types only: the sandbox runs in the serve process but reaches the service over HTTP.
import type { ConfigTenant, ServiceConfig } from '../service/config/index.ts'
import type { ServiceEvent } from '../service/events.ts'
import type { IssuanceStep, VerificationStep } from '../shared/flow.ts'
import { describeRequest, PROFILE_NAMES, requestedText, type VerificationProfile } from '../web/flow-state.ts'

/** The part of ServiceEvents the sandbox uses. */
export interface EventSource {
  on(listener: (event: ServiceEvent) => void): () => void
}

type Flow = 'issuance' | 'verification'

/** One flow the sandbox drives: the tenant, template and application key it logs in with. */
export interface FlowPlan {
  tenant: string
  template: string
  /** Issuance: the template's credential type; verification: the types it asks for. */
  credentialTypes: string[]
  /** Verification: the template's profile (pe: OpenID4VP draft 20 + Presentation Exchange; dcql: OpenID4VP 1.0). */
  profile?: VerificationProfile
  key: ApiKeyCredentials
}

export interface SandboxPlan {
  issuance: FlowPlan
  verification: FlowPlan
}

/** A configuration that offers the sandbox nothing to do, or a template it cannot use. */
export class SandboxPlanError extends Error {
  override name = 'SandboxPlanError'
}

/** An application key that may open flows for `template`: one linked to it, else one without a template. */
function appKeyFor(tenant: ConfigTenant, template: string) {
  return (
    tenant.apiKeys.find((k) => k.role === 'app' && k.template === template) ??
    tenant.apiKeys.find((k) => k.role === 'app' && k.template === undefined)
  )
}

function planFlow(config: ServiceConfig, flow: Flow, wanted: string | undefined): FlowPlan {
  const option = flow === 'issuance' ? '--issue' : '--verify'
  const known: string[] = []
  for (const tenant of config.tenants) {
    const templates: { id: string; types: string[]; profile?: VerificationProfile }[] =
      flow === 'issuance'
        ? tenant.issuanceTemplates.map((t) => ({ id: t.id, types: [t.credentialType] }))
        : tenant.verificationTemplates.map((t) => ({
            id: t.id,
            types: t.credentialTypes,
            profile: t.profile === 'dcql' ? 'dcql' : 'pe',
          }))
    for (const template of templates) {
      known.push(template.id)
      if (wanted !== undefined && template.id !== wanted) continue
      const key = appKeyFor(tenant, template.id)
      if (!key) {
        if (wanted !== undefined) {
          throw new SandboxPlanError(
            `${option} ${wanted}: tenant "${tenant.id}" has no application key linked to it (nor one without a template)`,
          )
        }
        continue
      }
      return {
        tenant: tenant.id,
        template: template.id,
        credentialTypes: template.types,
        ...(template.profile !== undefined ? { profile: template.profile } : {}),
        key: { keyId: key.id, secret: key.secret, tenant: tenant.id, ssiconfig: template.id },
      }
    }
  }
  if (wanted !== undefined) {
    throw new SandboxPlanError(
      `${option} ${wanted}: no ${flow} template of that id (known: ${known.join(', ') || 'none'})`,
    )
  }
  throw new SandboxPlanError(
    `the configuration has no ${flow} template with an application key (linked to it, or without a template)`,
  )
}

/**
 * Picks the templates: --issue / --verify when given, else the first issuance and the first verification
 * template (first tenant first) that an application key may use.
 */
export function planSandbox(config: ServiceConfig, choice: { issue?: string; verify?: string } = {}) {
  return {
    issuance: planFlow(config, 'issuance', choice.issue),
    verification: planFlow(config, 'verification', choice.verify),
  } satisfies SandboxPlan
}

/** Sample content for an issuance template's credential type (what a relying party would submit). */
export function sampleCredentials(credentialType: string): Record<string, unknown>[] {
  const subject: Record<string, unknown> =
    credentialType === 'UniversityDegreeCredential'
      ? { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } }
      : credentialType === 'VerifiableId' || credentialType === 'VerifiableID'
        ? { familyName: 'Doe', givenName: 'Jane', dateOfBirth: '1990-01-01' }
        : { name: `Sample ${credentialType} from the vc-harness sandbox` }
  return [{ type: ['VerifiableCredential', credentialType], credentialSubject: subject }]
}

/** `QRCode.toString` in the form the sandbox prints (tests compare against it). */
export function terminalQr(text: string): Promise<string> {
  return QRCode.toString(text, { type: 'terminal', small: true })
}

/** Non-internal IPv4 addresses of this machine: where a phone on the same network may reach it. */
function lanAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a !== undefined && a.family === 'IPv4' && !a.internal)
    .map((a) => (a as { address: string }).address)
}

export interface SandboxOptions {
  config: ServiceConfig
  plan: SandboxPlan
  /** The service's state-changed events (server.app.services.events). */
  events: EventSource
  /** Where the sandbox calls the relying-party API (a loopback URL of the server). */
  apiUrl: string
  /** How it calls it; default the global fetch (with TLS: one pinning the served certificate, loopback-fetch.ts). */
  fetch?: typeof fetch
  /** The base URL wallets reach (config.publicUrl, or the listening URL). */
  publicUrl: string
  /** Stop after one issuance and one verification have finished. */
  once?: boolean
  /** NDJSON log of every reported line; undefined: none. */
  logFile?: string
  /** Output; default console.log. */
  print?: (text: string) => void
  /** Wall clock, for timestamps and expiry; default Date.now. */
  now?: () => number
  /** How long an unused offer stays redeemable; default the config's pre-authorized code lifetime. */
  offerLifetimeMs?: number
}

export interface Sandbox {
  /** With `once`: resolves when both flows finished, true when both succeeded. Otherwise never. */
  done: Promise<boolean>
  close(): void
}

/** One reported line, as printed and as logged. */
interface Report {
  flow: Flow
  round: number
  id: string
  step: string
  message: string
  [detail: string]: unknown
}

interface Round {
  flow: Flow
  number: number
  id: string
  finished: boolean
  /** Issuance: the wallet bound its key before the content was there; the credential comes by deferral. */
  holderBound?: boolean
  timer?: NodeJS.Timeout
}

/** Starts the sandbox: prints the first offer and session, then reports until closed. */
export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const sandbox = new SandboxRunner(options)
  await sandbox.start()
  return sandbox
}

class SandboxRunner implements Sandbox {
  private readonly client: RelyingPartyClient
  private readonly print: (text: string) => void
  private readonly now: () => number
  private readonly rounds = new Map<string, Round>()
  private readonly counters: Record<Flow, number> = { issuance: 0, verification: 0 }
  private readonly outcomes: Partial<Record<Flow, boolean>> = {}
  /** Event handling is serialised so lines come out in order, HTTP read-backs included. */
  private queue: Promise<void> = Promise.resolve()
  private unsubscribe: (() => void) | undefined
  private closed = false
  private resolveDone: (ok: boolean) => void = () => {}
  readonly done: Promise<boolean>

  constructor(private readonly options: SandboxOptions) {
    this.client = new RelyingPartyClient(options.apiUrl, options.fetch)
    this.print = options.print ?? ((text) => console.log(text))
    this.now = options.now ?? Date.now
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve
    })
  }

  async start() {
    const { plan, publicUrl, logFile } = this.options
    if (logFile) mkdirSync(dirname(logFile), { recursive: true })
    this.print('')
    this.print('vc-harness sandbox: a relying party for wallet testing')
    this.print(`  wallets reach the service at ${publicUrl}`)
    const host = new URL(publicUrl).hostname
    if (['127.0.0.1', 'localhost', '[::1]', '0.0.0.0', '[::]'].includes(host)) {
      const lan = lanAddresses()
      const port = new URL(publicUrl).port
      const scheme = new URL(publicUrl).protocol.slice(0, -1)
      this.print(
        `  note: a phone cannot reach ${host}; run with --host 0.0.0.0 --public-url ${scheme}://<this machine's ${scheme === 'https' ? 'DNS name' : 'address'}>:${port || '<port>'}` +
          (lan.length > 0 ? ` (this machine: ${lan.join(', ')})` : ''),
      )
    }
    this.print(
      `  issuance: tenant "${plan.issuance.tenant}", template "${plan.issuance.template}" (${plan.issuance.credentialTypes.join(', ')})`,
    )
    this.print(
      `  verification: tenant "${plan.verification.tenant}", template "${plan.verification.template}" (asks for ${plan.verification.credentialTypes.join(', ')}; ${PROFILE_NAMES[plan.verification.profile ?? 'pe']})`,
    )
    this.print(`  log: ${logFile ?? 'none (in-memory data; pass --sandbox-log FILE)'}`)
    this.print(
      this.options.once
        ? '  --once: exits after one issuance and one verification'
        : '  a fresh offer / session is printed after each flow ends; Ctrl-C stops',
    )
    this.unsubscribe = this.options.events.on((event) => {
      const id = event.kind === 'issuance' ? event.processId : event.sessionId
      const round = this.rounds.get(id)
      if (!round) return
      this.enqueue(() =>
        event.kind === 'issuance' ? this.onIssuance(round, event.step) : this.onVerification(round, event),
      )
    })
    await this.openIssuance()
    await this.openVerification()
  }

  close() {
    this.closed = true
    this.unsubscribe?.()
    for (const round of this.rounds.values()) clearTimeout(round.timer)
  }

  private enqueue(task: () => Promise<void> | void) {
    this.queue = this.queue.then(task).catch((error: unknown) => {
      this.print(`${this.time()} sandbox error: ${(error as Error).message}`)
    })
  }

  private time() {
    return new Date(this.now()).toTimeString().slice(0, 8)
  }

  private report(entry: Report) {
    const label = entry.flow === 'issuance' ? 'issuance' : 'verification'
    this.print(`${this.time()} [${label} #${entry.round}] ${entry.message}`)
    if (this.options.logFile) {
      const line = JSON.stringify({ time: new Date(this.now()).toISOString(), ...entry })
      appendFileSync(this.options.logFile, `${line}\n`)
    }
  }

  private async login(plan: FlowPlan): Promise<string> {
    return this.client.token(plan.key)
  }

  private async block(title: string, link: string, extra: string[]) {
    const qr = await terminalQr(link)
    this.print('')
    this.print(`=== ${title} ===`)
    this.print('Scan the QR code with the wallet, or open the deep link on the phone:')
    this.print(link)
    this.print(qr)
    for (const line of extra) this.print(line)
    this.print('')
  }

  /** Opens an offer, submits its content at once and prints it. Errors are reported, then retried. */
  private async openIssuance() {
    if (this.closed) return
    const plan = this.options.plan.issuance
    const number = ++this.counters.issuance
    try {
      const token = await this.login(plan)
      const offer = ok<{ credential_offer_uri: string; tx_code?: string }>(
        await this.client.createOffer(token, plan.template),
        'create offer',
      )
      const { processId } = parseCredentialOfferUri(offer.credential_offer_uri)
      const round: Round = { flow: 'issuance', number, id: processId, finished: false }
      this.rounds.set(processId, round)
      const credentialType = plan.credentialTypes[0] as string
      ok(
        await this.client.submitCredentials(token, processId, sampleCredentials(credentialType)),
        'submit content',
      )
      await this.block(
        `Issuance #${number}: ${credentialType} (template "${plan.template}", tenant "${plan.tenant}")`,
        offer.credential_offer_uri,
        [
          ...(offer.tx_code ? [`tx_code (the wallet asks for it): ${offer.tx_code}`] : []),
          `process: ${processId}`,
        ],
      )
      this.report({
        flow: 'issuance',
        round: number,
        id: processId,
        step: 'offer_created',
        message: `offer created and sample ${credentialType} content submitted: the wallet gets the credential as soon as it asks`,
        link: offer.credential_offer_uri,
      })
      const lifetime =
        this.options.offerLifetimeMs ?? this.options.config.oid4vci.preAuthorizedCodeLifetimeSeconds * 1000
      round.timer = setTimeout(() => this.enqueue(() => this.offerExpired(round)), lifetime)
      round.timer.unref()
    } catch (error) {
      this.retry('issuance', `could not open an offer: ${(error as Error).message}`)
    }
  }

  private async openVerification() {
    if (this.closed) return
    const plan = this.options.plan.verification
    const number = ++this.counters.verification
    try {
      const token = await this.login(plan)
      // 4.6 answers a pe session's definition (its id is the session's) or a dcql session's query and id.
      const created = ok<SessionCreated | DcqlSessionCreated>(
        await this.client.createSession<SessionCreated | DcqlSessionCreated>(token, plan.template),
        'create session',
      )
      const sessionId = sessionIdOf(created)
      const round: Round = { flow: 'verification', number, id: sessionId, finished: false }
      this.rounds.set(sessionId, round)
      const read = ok<SessionRead>(await this.client.readSession(token, sessionId), 'read session')
      const { profile, requested } = describeRequest(created)
      const kind = profile === 'dcql' ? 'credential query' : 'input descriptor'
      await this.block(
        `Verification #${number}: asks for ${plan.credentialTypes.join(', ')} (template "${plan.template}", tenant "${plan.tenant}")`,
        created.authentication_request,
        [
          `profile: ${PROFILE_NAMES[profile]}`,
          ...requested.map((r) => `${kind} ${requestedText(r)}`),
          `session: ${sessionId}, expires ${new Date(read.ExpiredAt).toTimeString().slice(0, 8)}`,
        ],
      )
      this.report({
        flow: 'verification',
        round: number,
        id: sessionId,
        step: 'session_created',
        message: `session created (${PROFILE_NAMES[profile]}), expires at ${read.ExpiredAt}`,
        link: created.authentication_request,
        profile,
        requested,
      })
      const wait = Math.max(0, Date.parse(read.ExpiredAt) - this.now()) + 250
      round.timer = setTimeout(() => this.enqueue(() => this.sessionExpired(round)), wait)
      round.timer.unref()
    } catch (error) {
      this.retry('verification', `could not open a session: ${(error as Error).message}`)
    }
  }

  /** Reports a failure to open a flow; tries again in 5 s, or ends a --once run. */
  private retry(flow: Flow, message: string) {
    this.print(`${this.time()} [${flow}] ${message}`)
    if (this.options.once) {
      this.finishFlow(flow, false)
      return
    }
    this.print(`${this.time()} [${flow}] trying again in 5 s`)
    setTimeout(() => {
      if (flow === 'issuance') void this.openIssuance()
      else void this.openVerification()
    }, 5_000).unref()
  }

  private async onIssuance(round: Round, step: IssuanceStep) {
    const base = { flow: 'issuance' as const, round: round.number, id: round.id, step }
    // The sandbox's own actions (offer_created, submitted) are reported from its HTTP answers.
    if (step === 'offer_retrieved') {
      this.report({ ...base, message: 'wallet fetched the credential offer (scanned)' })
    } else if (step === 'holder_bound') {
      round.holderBound = true
      this.report({ ...base, message: 'wallet proved its key and asked for the credential (holder bound)' })
    } else if (step === 'issued') {
      const details = await this.issuedDetails(round)
      const via = round.holderBound
        ? 'the wallet collects it from the deferred endpoint'
        : 'sent to the wallet in the credential response'
      this.report({
        ...base,
        message: `credential ISSUED (${via})${details.holder ? `: holder ${details.holder}` : ''}`,
        ...details,
      })
      if (!round.holderBound) this.finishRound(round, true)
    } else if (step === 'credential_retrieved') {
      this.report({ ...base, message: 'wallet collected the credential from the deferred endpoint' })
      this.finishRound(round, true)
    } else if (step === 'rejected') {
      this.report({ ...base, message: 'issuance REJECTED' })
      this.finishRound(round, false)
    }
  }

  /** The holder and credential ids of an issued process, read back over HTTP. */
  private async issuedDetails(round: Round): Promise<{ holder?: string; credentialIds?: string[] }> {
    const token = await this.login(this.options.plan.issuance)
    const response = await this.client.getProcess(token, round.id)
    if (response.status !== 200) return {}
    const data = (response.body as IssuanceProcess).data ?? []
    const subject = (data[0]?.credentialSubject ?? {}) as { id?: string }
    return {
      ...(subject.id ? { holder: subject.id } : {}),
      credentialIds: data.map((c) => String(c.id)),
    }
  }

  private async onVerification(round: Round, event: ServiceEvent) {
    if (event.kind !== 'verification') return
    const base = { flow: 'verification' as const, round: round.number, id: round.id, step: event.step }
    if (event.step === 'request_retrieved') {
      this.report({ ...base, message: 'wallet fetched the verification request' })
      return
    }
    if (event.step !== 'verified' && event.step !== 'rejected') return
    const result = event.webhook?.verificationResult ?? { checks: [], warnings: [], errors: [] }
    const verified = event.step === 'verified'
    const warnings = result.warnings.length > 0 ? `; warnings: ${result.warnings.join(' | ')}` : ''
    this.report({
      ...base,
      message: verified
        ? `presentation VERIFIED: checks ${result.checks.join(', ')}${warnings}`
        : `presentation REJECTED: errors ${result.errors.join(' | ')}${warnings}`,
      verificationResult: result,
    })
    await this.sessionDetails(round, event.step)
    this.finishRound(round, verified)
  }

  /** SourceWallet, Subject and every failed check, as GET /api/v3/sessions/:id shows them. */
  private async sessionDetails(round: Round, step: VerificationStep) {
    const token = await this.login(this.options.plan.verification)
    const response = await this.client.readSession(token, round.id)
    const base = { flow: 'verification' as const, round: round.number, id: round.id, step }
    if (response.status !== 200) {
      this.report({ ...base, message: `could not read the session back: HTTP ${response.status}` })
      return
    }
    const session = response.body as SessionRead
    const failed = (session.Validations?.checks ?? []).filter((c) => c.result === 'failed')
    this.report({
      ...base,
      step: 'session_read',
      message:
        `SourceWallet: ${session.SourceWallet || '(none: the wallet sent no User-Agent)'}; ` +
        `Subject: ${session.Subject || '(none)'}; Status: ${session.Status}`,
      sourceWallet: session.SourceWallet,
      subject: session.Subject,
      status: session.Status,
      failedChecks: failed,
    })
    for (const check of failed) {
      this.report({
        ...base,
        step: 'failed_check',
        message: `  failed check ${check.check}: ${check.message}`,
      })
    }
  }

  private async offerExpired(round: Round) {
    if (round.finished || this.closed) return
    this.report({
      flow: 'issuance',
      round: round.number,
      id: round.id,
      step: 'expired',
      message: 'offer EXPIRED: the wallet did not redeem it in time',
    })
    this.finishRound(round, false)
  }

  private async sessionExpired(round: Round) {
    if (round.finished || this.closed) return
    const token = await this.login(this.options.plan.verification)
    const session = ok<SessionRead>(await this.client.readSession(token, round.id), 'read session')
    if (session.Status !== 'EXPIRED') {
      // A verdict is on its way (its event follows), or the clocks differ slightly: look again soon.
      if (session.Status === 'PENDING') {
        round.timer = setTimeout(() => this.enqueue(() => this.sessionExpired(round)), 1_000)
        round.timer.unref()
      }
      return
    }
    this.report({
      flow: 'verification',
      round: round.number,
      id: round.id,
      step: 'expired',
      message: 'session EXPIRED: no presentation arrived',
    })
    this.finishRound(round, false)
  }

  private finishRound(round: Round, succeeded: boolean) {
    if (round.finished) return
    round.finished = true
    clearTimeout(round.timer)
    this.finishFlow(round.flow, succeeded)
    if (this.options.once || this.closed) return
    if (round.flow === 'issuance') void this.openIssuance()
    else void this.openVerification()
  }

  private finishFlow(flow: Flow, succeeded: boolean) {
    if (!this.options.once || this.outcomes[flow] !== undefined) return
    this.outcomes[flow] = succeeded
    const { issuance, verification } = this.outcomes
    if (issuance !== undefined && verification !== undefined) this.resolveDone(issuance && verification)
  }
}
