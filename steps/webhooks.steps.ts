import { Given, Then, When } from '@cucumber/cucumber'
import type { TemplateKind } from '../src/client/index.ts'
import { verifyWebhookSignature, type WebhookEventBody } from '../src/harness/webhook-receiver.ts'
import { DEGREE_CONTENT } from './support/issuance.ts'
import type { WebhookSubject } from './support/webhooks.ts'
import type { HarnessWorld as W } from './support/world.ts'

// Webhook delivery (features/webhooks). The receiver and its expectations: steps/support/webhooks.ts.

/** The demo configuration's webhooks.timeoutMs is 2000; an answer this late misses it. */
const LATER_THAN_TIMEOUT_MS = 2600

Given(
  /^the (issuance|verification) template sends its webhooks to the harness receiver( during a secret rotation)?$/,
  async function (this: W, kind: TemplateKind, rotation: string | undefined) {
    await this.webhooks.subscribe(kind, { rotation: rotation !== undefined })
  },
)

Given('the receiver answers {int} twice', function (this: W, status: number) {
  this.webhooks.script({ status }, { status })
})

Given('the receiver answers {int} always', function (this: W, status: number) {
  this.webhooks.requireEndpoint().respondAlways({ status })
})

Given(
  'the receiver answers {int} with Retry-After {int} once',
  function (this: W, status: number, seconds: number) {
    this.webhooks.script({ status, retryAfter: String(seconds) })
  },
)

Given("the receiver answers only after the service's timeout once", function (this: W) {
  this.webhooks.script({ delayMs: LATER_THAN_TIMEOUT_MS })
})

Given('the receiver redirects once to another of its endpoints', async function (this: W) {
  await this.webhooks.redirectOnce()
})

When('the administrator requests a redelivery of that event', async function (this: W) {
  await this.webhooks.redeliver()
})

When(
  "the administrator points the verification template's webhook at {string}",
  async function (this: W, url: string) {
    await this.webhooks.pointAt('verification', url)
  },
)

When(
  "the administrator points the verification template's webhook at {string} without a secret",
  async function (this: W, url: string) {
    await this.webhooks.pointAt('verification', url, false)
  },
)

When(
  'the application opens another verification session and the wallet presents to it',
  async function (this: W) {
    await this.verification.open('degree check')
    await this.verification.present()
  },
)

Then(
  /^within (\d+) seconds the receiver got exactly one (SUCCESS|REJECT) about the (process|session)$/,
  async function (this: W, seconds: string, status: 'SUCCESS' | 'REJECT', subject: WebhookSubject) {
    await this.webhooks.expectExactlyOne(status, subject, Number(seconds))
  },
)

Then(
  'the webhook body has only the fields of section 6, the holder as subject and the shared claims without id',
  async function (this: W) {
    const body = this.webhooks.body()
    const allowed = ['id', 'subject', 'status', 'payload', 'verificationResult']
    const extra = Object.keys(body).filter((k) => !allowed.includes(k))
    if (extra.length > 0)
      this.fail(`only the fields of section 6 in the webhook body; it also has ${extra.join(', ')}`, null)
    const holder = (await this.issuance.wallet()).did
    if (body.subject !== holder)
      this.fail(`subject ${holder} (the holder); it is ${JSON.stringify(body.subject)}`, null)
    // The submitted content names no subject id, so the claims are exactly what was submitted.
    const claims = (DEGREE_CONTENT[0] as { credentialSubject: Record<string, unknown> }).credentialSubject
    if (JSON.stringify(body.payload) !== JSON.stringify(claims)) {
      this.fail(
        `payload ${JSON.stringify(claims)} (the shared claims without id); it is ${JSON.stringify(body.payload)}`,
        null,
      )
    }
    const result = body.verificationResult
    const lists = [result?.checks, result?.warnings, result?.errors]
    if (!lists.every((l) => Array.isArray(l) && l.every((x) => typeof x === 'string'))) {
      this.fail(
        `verificationResult with string arrays checks, warnings and errors; it is ${JSON.stringify(result)}`,
        null,
      )
    }
  },
)

Then(
  'the webhook lists the checks matchingIds, presentationProof, securityMechanisms and credentialProof',
  function (this: W) {
    const checks = this.webhooks.body().verificationResult.checks
    const missing = ['matchingIds', 'presentationProof', 'securityMechanisms', 'credentialProof'].filter(
      (c) => !checks.includes(c),
    )
    if (missing.length > 0)
      this.fail(
        `verificationResult.checks to include ${missing.join(', ')}; it is ${JSON.stringify(checks)}`,
        null,
      )
  },
)

Then('the webhook errors mention {string}', function (this: W, text: string) {
  const body: WebhookEventBody = this.webhooks.body()
  if (!body.verificationResult.errors.some((e) => e.includes(text))) {
    this.fail(
      `a verificationResult error mentioning "${text}"; they are ${JSON.stringify(body.verificationResult.errors)}`,
      null,
    )
  }
})

Then(
  "the delivery is signed per Standard Webhooks with the template's secret and with no other",
  function (this: W) {
    const flow = this.webhooks
    const d = flow.requireDelivery()
    const secret = flow.requireEndpoint().secret
    if (!d.webhookId?.startsWith('msg_')) this.fail(`a webhook-id header (msg_…); it is ${d.webhookId}`, null)
    if (!/^\d{10}$/.test(d.webhookTimestamp ?? ''))
      this.fail(`a whole-second webhook-timestamp; it is ${d.webhookTimestamp}`, null)
    const input = {
      id: d.webhookId,
      timestamp: d.webhookTimestamp,
      body: d.rawBody,
      signature: d.headers['webhook-signature'],
      now: d.receivedAt,
    }
    const good = verifyWebhookSignature({ ...input, secrets: [secret] })
    if (!good.valid) this.fail(`a signature verifying with the template's secret: ${good.error}`, null)
    const other = verifyWebhookSignature({ ...input, secrets: [flow.otherSecret()] })
    if (other.valid) this.fail('a signature that does not verify with another secret; it did', null)
  },
)

Then(
  'the delivery carries {int} v1 signatures, one of which verifies with the previous secret',
  function (this: W, count: number) {
    const d = this.webhooks.requireDelivery()
    const signatures = (d.headers['webhook-signature'] ?? '').split(' ').filter((s) => s.startsWith('v1,'))
    if (signatures.length !== count)
      this.fail(`${count} v1 signatures; the header is ${d.headers['webhook-signature']}`, null)
    if (!d.signatureValid)
      this.fail(`the receiver, knowing only the previous secret, to accept it: ${d.signatureError}`, null)
  },
)

Then(
  'the receiver got {int} attempt(s) of that event(, all with the same webhook-id)',
  function (this: W, count: number) {
    this.webhooks.expectAttempts(count)
  },
)

Then('the delivery log shows {int} retries and then delivered', async function (this: W, retries: number) {
  await this.webhooks.expectLog([...Array(retries).fill('retry'), 'delivered'])
})

Then('the delivery log shows a timeout and then delivered', async function (this: W) {
  const log = await this.webhooks.expectLog(['retry', 'delivered'])
  if (!log[0]?.error?.startsWith('timeout'))
    this.fail(`the first attempt to time out; it was ${JSON.stringify(log[0])}`, null)
})

Then('the second attempt came at least {int} second(s) after the first', function (this: W, seconds: number) {
  this.webhooks.expectGap(seconds * 1000)
})

Then('the redirect target received nothing', function (this: W) {
  this.webhooks.expectRedirectTargetUntouched()
})

Then(
  /^the delivery log shows the event (failed|disabled) after (\d+) attempts?$/,
  async function (this: W, state: 'failed' | 'disabled', attempts: string) {
    await this.webhooks.expectSettledAs('session', state, Number(attempts))
  },
)

Then('the delivery log shows the endpoint disabled', async function (this: W) {
  // The 410 is read from the delivery's last status, not from disabledReason (free text).
  const { endpoint, deliveries } = await this.webhooks.deliveryLog()
  if (!endpoint.disabled || !deliveries.some((d) => d.lastStatus === 410 && d.state === 'disabled')) {
    this.fail(
      `the endpoint disabled because of a 410; it is ${JSON.stringify(endpoint)}, the deliveries ${JSON.stringify(deliveries)}`,
      null,
    )
  }
})

Then(
  'the delivery log shows that event disabled without any attempt reaching the receiver',
  async function (this: W) {
    await this.webhooks.expectSettledAs('session', 'disabled', 1, 0)
  },
)

Then(
  'within {int} seconds the receiver got that webhook-id a second time',
  async function (this: W, seconds: number) {
    await this.webhooks.expectRepeat(seconds)
  },
)

Then('the delivery log records the redelivery', async function (this: W) {
  await this.webhooks.expectRedeliveryLogged()
})
