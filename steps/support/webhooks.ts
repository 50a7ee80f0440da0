import { ok, type TemplateKind, type WebhookDeliveryWithLog } from '../../src/client/index.ts'
import type { Target } from '../../src/harness/target-types.ts'
import {
  type Delivery,
  generateWebhookSecret,
  type ScriptedAnswer,
  type WebhookEndpoint,
  type WebhookEventBody,
  WebhookReceiver,
} from '../../src/harness/webhook-receiver.ts'
import type { IssuanceFlow } from './issuance.ts'
import type { VerificationFlow } from './verification.ts'
import type { FlowWorld } from './world-types.ts'

// The harness side of webhooks: one receiver per worker process (each scenario gets its own endpoint
// path and secret on it), templates pointed at it through the portal, and expectations that wait for
// deliveries as they arrive, never for a fixed time.

let receiver: Promise<WebhookReceiver> | undefined

/** The worker's receiver, started on first use where the target says it is reachable. */
export function receiverFor(target: Target): Promise<WebhookReceiver> {
  receiver ??= WebhookReceiver.start({
    host: target.receiver.host,
    port: target.receiver.port,
    ...(target.receiver.publicUrl ? { publicUrl: target.receiver.publicUrl } : {}),
  })
  return receiver
}

export async function closeReceiver() {
  const started = receiver
  receiver = undefined
  if (started) await (await started).close()
}

/** What a scenario waits on: the process or the session its flow created. */
export type WebhookSubject = 'process' | 'session'

const VIEW_ONLY = ['id', 'hasWebhookSecret', 'source', 'createdAt', 'updatedAt']

/** A validly signed delivery of the `status` event about `id`, acknowledged (2xx) by the receiver. */
export const acknowledged =
  (id: string, status: 'SUCCESS' | 'REJECT') =>
  (d: { signatureValid: boolean; json?: unknown; answeredStatus: number | null }) =>
    d.signatureValid &&
    (d.json as WebhookEventBody | undefined)?.id === id &&
    (d.json as WebhookEventBody | undefined)?.status === status &&
    d.answeredStatus !== null &&
    d.answeredStatus < 300

export class WebhookFlow {
  endpoint: WebhookEndpoint | undefined
  private kind: TemplateKind | undefined
  private templateId: string | undefined
  /** The delivery this scenario's expectations are about, once it arrived. */
  delivery: Delivery | undefined

  /** `flows` is the World itself: its issuance and verification flows are created on first use. */
  constructor(
    private readonly world: FlowWorld,
    private readonly flows: { readonly issuance: IssuanceFlow; readonly verification: VerificationFlow },
  ) {}

  private template(kind: TemplateKind): string {
    if (kind === 'issuance') return this.world.tenant.issuanceTemplate
    return this.flows.verification.templateId('degree check')
  }

  /**
   * Points the template's webhookUrl at a fresh receiver endpoint through the portal (PUT keeps the rest of
   * the template). With `rotation`, the service signs with a new secret and the endpoint's, which becomes
   * the previous one: the receiver knows only that one.
   */
  async subscribe(kind: TemplateKind, options: { rotation?: boolean } = {}) {
    const world = this.world
    const endpoint = (await receiverFor(world.target)).endpoint(world.scenario.name.slice(0, 40))
    const templateId = this.template(kind)
    const admin = await world.client.token(world.credentials('admin'))
    const current = ok(await world.client.getTemplate(admin, kind, templateId), `read template ${templateId}`)
    const body = Object.fromEntries(Object.entries(current).filter(([k]) => !VIEW_ONLY.includes(k)))
    const secrets = options.rotation
      ? { webhookSecret: generateWebhookSecret(), webhookPreviousSecrets: [endpoint.secret] }
      : { webhookSecret: endpoint.secret }
    const replaced = await world.client.replaceTemplate(admin, kind, templateId, {
      ...body,
      webhookUrl: endpoint.url,
      ...secrets,
    } as never)
    ok(replaced, `point the webhook of template ${templateId} at the harness receiver`)
    this.endpoint = endpoint
    this.kind = kind
    this.templateId = templateId
    return endpoint
  }

  /** Points the template's webhook at `url` and records the answer (for refusal scenarios). */
  async pointAt(kind: TemplateKind, url: string, withSecret = true) {
    const world = this.world
    const templateId = this.template(kind)
    const admin = await world.client.token(world.credentials('admin'))
    const current = ok(await world.client.getTemplate(admin, kind, templateId), `read template ${templateId}`)
    const body = Object.fromEntries(Object.entries(current).filter(([k]) => !VIEW_ONLY.includes(k)))
    const response = await world.client.replaceTemplate(admin, kind, templateId, {
      ...body,
      webhookUrl: url,
      ...(withSecret ? { webhookSecret: generateWebhookSecret() } : {}),
    } as never)
    world.recordAnswer(response, `point the webhook of template "${templateId}" at ${url}`)
  }

  requireEndpoint(): WebhookEndpoint {
    if (!this.endpoint) throw new Error('no template sends webhooks to the receiver in this scenario')
    return this.endpoint
  }

  script(...answers: ScriptedAnswer[]) {
    this.requireEndpoint().respondWith(...answers)
  }

  subjectId(subject: WebhookSubject): string {
    return subject === 'process' ? this.flows.issuance.requireProcess() : this.flows.verification.sessionId
  }

  /**
   * Within `seconds`, a validly signed delivery with this status about the subject arrives, the service
   * records it as delivered, and no second event about the subject was sent: exactly one.
   */
  async expectExactlyOne(status: 'SUCCESS' | 'REJECT', subject: WebhookSubject, seconds: number) {
    const endpoint = this.requireEndpoint()
    const id = this.subjectId(subject)
    const deadline = Date.now() + seconds * 1000
    try {
      this.delivery = await endpoint.waitFor(acknowledged(id, status), {
        timeoutMs: seconds * 1000,
        description: `one validly signed ${status} about ${subject} ${id}, acknowledged by the receiver`,
      })
    } catch (error) {
      this.world.fail(`${(error as Error).message}`, null)
    }
    const delivery = this.delivery as Delivery
    const record = await this.settled(delivery.webhookId ?? '', deadline)
    if (record.state !== 'delivered') {
      this.world.fail(`the service to record delivery ${record.id} as delivered; it is ${record.state}`, null)
    }
    const events = endpoint.distinctEvents(id)
    if (events.size !== 1) {
      this.world.fail(
        `exactly one webhook event about ${subject} ${id}; the receiver got ${events.size}:\n${endpoint.summary()}`,
        null,
      )
    }
  }

  /**
   * The service's record of a delivery once it stopped changing (delivered, failed or disabled), read
   * through the portal; polled because the service writes it just after the receiver answered.
   */
  async settled(webhookId: string, deadline: number): Promise<WebhookDeliveryWithLog> {
    const world = this.world
    const admin = await world.client.token(world.credentials('admin'))
    for (;;) {
      const read = await world.client.webhookDelivery(admin, webhookId)
      const record = ok(read, `read webhook delivery ${webhookId}`) as WebhookDeliveryWithLog
      if (record.state !== 'pending') return record
      if (Date.now() > deadline) {
        world.fail(
          `delivery ${webhookId} to settle in time; it is still pending: ${JSON.stringify(record.log)}`,
          null,
        )
      }
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  /** The service's record of the first event about the subject (portal log, newest first). */
  async recordFor(subject: WebhookSubject, seconds: number): Promise<WebhookDeliveryWithLog> {
    const world = this.world
    const id = this.subjectId(subject)
    const admin = await world.client.token(world.credentials('admin'))
    const deadline = Date.now() + seconds * 1000
    for (;;) {
      const log = ok(
        await world.client.webhookDeliveries(admin, this.kind ?? 'verification', this.templateId ?? ''),
        'read the delivery log',
      )
      const entry = log.deliveries.find((d) => d.subject === id)
      if (entry) return this.settled(entry.id, deadline)
      if (Date.now() > deadline)
        world.fail(`a webhook event about ${subject} ${id} in the delivery log`, null)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  /** The template's delivery log: its endpoint's state and the deliveries with their last status. */
  async deliveryLog() {
    const world = this.world
    const admin = await world.client.token(world.credentials('admin'))
    return ok(
      await world.client.webhookDeliveries(admin, this.kind ?? 'verification', this.templateId ?? ''),
      'read the delivery log',
    )
  }

  async redeliver() {
    const delivery = this.requireDelivery()
    const admin = await this.world.client.token(this.world.credentials('admin'))
    const response = await this.world.client.redeliverWebhook(admin, delivery.webhookId ?? '')
    this.world.recordAnswer(response, `redeliver webhook ${delivery.webhookId}`)
    this.world.expectStatus(202)
  }

  /** A redirect to a second endpoint of the receiver, which must never be called. */
  private redirectTarget: WebhookEndpoint | undefined

  async redirectOnce() {
    this.redirectTarget = (await receiverFor(this.world.target)).endpoint('redirect target')
    this.script({ status: 302, location: this.redirectTarget.url })
  }

  expectRedirectTargetUntouched() {
    const target = this.redirectTarget
    if (!target) throw new Error('no redirect was scripted in this scenario')
    if (target.deliveries.length > 0) {
      this.world.fail(`no request at the redirect's Location; it got:\n${target.summary()}`, null)
    }
  }

  /** A secret the template does not use. */
  otherSecret(): string {
    return generateWebhookSecret()
  }

  /** The receiver got `count` attempts about the subject of the awaited delivery, all one event. */
  expectAttempts(count: number) {
    const endpoint = this.requireEndpoint()
    const id = this.delivery ? this.body().id : this.subjectId('session')
    const attempts = endpoint.deliveriesFor(id)
    const events = endpoint.distinctEvents(id)
    if (attempts.length !== count || events.size > 1) {
      this.world.fail(
        `${count} attempt(s) of one event about ${id}; got ${attempts.length} of ${events.size} event(s):\n${endpoint.summary()}`,
        null,
      )
    }
  }

  /** The service's attempt log of the awaited delivery has exactly these outcomes, in order. */
  async expectLog(outcomes: string[]) {
    const record = await this.settled(this.requireDelivery().webhookId ?? '', Date.now() + 10_000)
    const got = record.log.map((a) => a.outcome)
    if (JSON.stringify(got) !== JSON.stringify(outcomes)) {
      this.world.fail(
        `attempt outcomes ${outcomes.join(', ')}; the log is ${JSON.stringify(record.log)}`,
        null,
      )
    }
    return record.log
  }

  /** The receiver saw the second attempt of the awaited event at least `ms` after the first. */
  expectGap(ms: number) {
    const [first, second] = this.requireEndpoint().deliveriesFor(this.body().id)
    if (!first || !second) this.world.fail('two attempts of the event', null)
    const gap = second.receivedAt - first.receivedAt
    // The service stamps Retry-After from its own clock; allow for the receiver's millisecond rounding.
    if (gap < ms - 5)
      this.world.fail(`the retry at least ${ms} ms after the first attempt; it came after ${gap} ms`, null)
  }

  /**
   * The service settled the event about the subject as `state` after `attempts` logged attempts, and the
   * receiver saw `received` of them (default: as many as were logged).
   */
  async expectSettledAs(
    subject: WebhookSubject,
    state: 'failed' | 'disabled',
    attempts: number,
    received = attempts,
  ) {
    const record = await this.recordFor(subject, 10)
    if (record.state !== state || record.log.length !== attempts) {
      this.world.fail(
        `the event about ${subject} ${record.subject} ${state} after ${attempts} attempt(s); it is ${record.state} after ${JSON.stringify(record.log)}`,
        null,
      )
    }
    const got = this.requireEndpoint().deliveriesFor(record.subject).length
    if (got !== received) {
      this.world.fail(`${received} request(s) at the receiver for ${record.subject}; it got ${got}`, null)
    }
  }

  /** After a redelivery the same webhook-id arrives again (acknowledged), still one event. */
  async expectRepeat(seconds: number) {
    const first = this.requireDelivery()
    const endpoint = this.requireEndpoint()
    try {
      await endpoint.waitFor(
        (d) =>
          d.signatureValid &&
          d.webhookId === first.webhookId &&
          d.seq > first.seq &&
          (d.answeredStatus ?? 500) < 300,
        { timeoutMs: seconds * 1000, description: `webhook-id ${first.webhookId} delivered again` },
      )
    } catch (error) {
      this.world.fail((error as Error).message, null)
    }
    const events = endpoint.distinctEvents(this.body().id)
    if (events.size !== 1)
      this.world.fail(`one event (one webhook-id); got ${events.size}:\n${endpoint.summary()}`, null)
  }

  async expectRedeliveryLogged() {
    const record = await this.settled(this.requireDelivery().webhookId ?? '', Date.now() + 10_000)
    const last = record.log.at(-1)
    if (record.state !== 'delivered' || last?.trigger !== 'redelivery' || last.outcome !== 'delivered') {
      this.world.fail(
        `a delivered attempt triggered by the redelivery last in the log; it is ${JSON.stringify(record.log)}`,
        null,
      )
    }
  }

  requireDelivery(): Delivery {
    if (!this.delivery) throw new Error('no webhook delivery has been awaited in this scenario')
    return this.delivery
  }

  body(): WebhookEventBody {
    return this.requireDelivery().json as WebhookEventBody
  }
}
