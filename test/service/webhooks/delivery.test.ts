// Webhooks (section 6, docs/webhooks.md): the outbox written with each terminal change, the signed
// delivery to a real receiver over HTTP, retries and their classification, ordering per subject,
// concurrency per origin, restart and leases, the target rules (SSRF) and the portal's delivery log.
// Nothing sleeps: tests wait on the receiver or on the dispatcher's attempt reports, and move the
// service's (shifted) clock when a retry is scheduled far ahead.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Webhook } from 'standardwebhooks'
import {
  type Delivery,
  generateWebhookSecret,
  verifyWebhookSignature,
  type WebhookEndpoint,
  type WebhookEventBody,
  WebhookReceiver,
} from '../../../src/harness/webhook-receiver.ts'
import { buildApp } from '../../../src/service/app.ts'
import { parseConfig, type ServiceConfig } from '../../../src/service/config/index.ts'
import type { WebhookOptions } from '../../../src/service/config/schema.ts'
import type { WebhookBody } from '../../../src/service/events.ts'
import { issuedWebhook } from '../../../src/service/issuance/service.ts'
import type { TemplateKind, WebhookEventRecord, WebhookEventType } from '../../../src/service/store/index.ts'
import { isoTime, type ManualClock, ShiftedClock } from '../../../src/service/util/clock.ts'
import { forbiddenAddress, forbiddenUrl, guardedLookup } from '../../../src/service/util/net-targets.ts'
import { DeliveryAgents, parseRetryAfter, postWebhook } from '../../../src/service/webhooks/delivery.ts'
import { type AttemptReport, backoffDelay, decide } from '../../../src/service/webhooks/dispatcher.ts'
import { WebhookOutbox } from '../../../src/service/webhooks/outbox.ts'
import { auth, DEMO, OTHER, problemOf, tokenFor } from '../../helpers.ts'
import {
  DEGREE,
  type Holder,
  issueTo,
  newHolder,
  rejectProcess,
  submit,
  WIDE_APP,
  walletAsked,
} from '../../oid4vci-helpers.ts'
import {
  type OpenSession,
  openSession,
  respond,
  submission,
  tamper,
  verificationConfig,
  vpJwt,
} from '../../verification-helpers.ts'

// --- the harness -------------------------------------------------------------------------------------------

/** Fast retries for tests: 20 ms, then 80 ms; a 300 ms deadline; three attempts per round. */
const FAST: Partial<WebhookOptions> = {
  mode: 'test',
  retryInitialDelayMs: 20,
  timeoutMs: 300,
  maxAttempts: 3,
}
const SECTION_6_KEYS = ['id', 'payload', 'status', 'subject', 'verificationResult']
const SECTION_6_CHECKS = ['matchingIds', 'presentationProof', 'securityMechanisms', 'credentialProof']
const DEGREE_TYPE = 'UniversityDegreeCredential'

/** verificationConfig() (demo and other tenants, the tenant-wide WIDE_APP key) with these webhook options. */
function webhookConfig(webhooks: Partial<WebhookOptions>): ServiceConfig {
  const raw = structuredClone(verificationConfig()) as unknown as Record<string, unknown>
  raw.webhooks = webhooks
  return parseConfig(raw)
}

interface Harness {
  app: FastifyInstance
  clock: ShiftedClock
  /** The same clock as the protocol helpers type it (they only read now()). */
  mclock: ManualClock
  receiver: WebhookReceiver
  admin: string
  /** Every attempt the dispatcher reported, in order. */
  attempts: AttemptReport[]
  close(): Promise<void>
}

/**
 * An app on a real-time clock that tests may shift forward, with a receiver on 127.0.0.1 that judges
 * signature timestamps by that clock. A given receiver (a restart) is left open on close.
 */
async function start(
  webhooks: Partial<WebhookOptions> = FAST,
  options: { dataDir?: string; clock?: ShiftedClock; receiver?: WebhookReceiver } = {},
): Promise<Harness> {
  const clock = options.clock ?? new ShiftedClock()
  const receiver = options.receiver ?? (await WebhookReceiver.start({ now: () => clock.now() }))
  const app = await buildApp({
    config: webhookConfig(webhooks),
    clock,
    dataDir: options.dataDir ?? ':memory:',
    publicUrl: () => 'https://issuer.example',
  })
  const attempts: AttemptReport[] = []
  app.services.webhookDispatcher.onAttempt((report) => attempts.push(report))
  const admin = await tokenFor(app, DEMO.admin)
  return {
    app,
    clock,
    mclock: clock as unknown as ManualClock,
    receiver,
    admin,
    attempts,
    close: async () => {
      await app.close()
      if (!options.receiver) await receiver.close()
    },
  }
}

function portal(h: Harness, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object, token = h.admin) {
  return h.app.inject({
    method,
    url: `/portal/v1${url}`,
    headers: auth(token),
    ...(payload ? { payload } : {}),
  })
}

function templateBody(kind: TemplateKind, id: string, webhook: Record<string, unknown>) {
  return kind === 'issuance'
    ? { id, credentialType: DEGREE_TYPE, ...webhook }
    : { id, name: id, credentialTypes: [DEGREE_TYPE], ...webhook }
}
const templatePath = (kind: TemplateKind) => `/${kind}-templates`

/** A portal template of `kind` whose webhook is `endpoint` (signed with its secret unless told otherwise). */
async function hookTemplate(
  h: Harness,
  kind: TemplateKind,
  endpoint: WebhookEndpoint,
  secrets: { webhookSecret?: string; webhookPreviousSecrets?: string[] } = {},
) {
  const id = `wh-${randomUUID().slice(0, 8)}`
  const body = templateBody(kind, id, {
    webhookUrl: endpoint.url,
    webhookSecret: secrets.webhookSecret ?? endpoint.secret,
    ...(secrets.webhookPreviousSecrets ? { webhookPreviousSecrets: secrets.webhookPreviousSecrets } : {}),
  })
  const created = await portal(h, 'POST', templatePath(kind), body)
  assert.equal(created.statusCode, 201, created.body)
  return id
}

/** A real issuance: offer, token, content submitted, the wallet's credential request → ISSUED. */
async function issue(h: Harness, template: string, holder: Holder = newHolder()) {
  const issued = await issueTo(h.app, h.mclock, holder, template, DEGREE)
  return { processId: issued.processId, holder }
}

/** A real rejection: the wallet bound a holder (202), then the relying party rejects the process. */
async function reject(h: Harness, template: string, reason = 'no degree on file') {
  const asked = await walletAsked({ app: h.app, clock: h.mclock }, template)
  const response = await rejectProcess(h.app, asked.rp, asked.processId, reason)
  assert.equal(response.statusCode, 200, response.body)
  return { processId: asked.processId, holder: asked.holder, rp: asked.rp }
}

const degreeSubmission = (s: OpenSession) => {
  const descriptor = s.definition.input_descriptors.find((d) => d.name === DEGREE_TYPE)
  assert.ok(descriptor, 'a descriptor for the degree')
  return submission(s.id, [{ id: descriptor.id, index: 0 }])
}

/** A holder of a degree issued by the demo tenant (through the template without webhook). */
async function degreeHolder(h: Harness) {
  const holder = newHolder()
  const { jwts } = await issueTo(h.app, h.mclock, holder, 'degree', DEGREE)
  return { holder, jwt: jwts[0] as string }
}

/** A real verification: session, request object, direct_post with the holder's degree → VERIFIED. */
async function verify(h: Harness, template: string, who: { holder: Holder; jwt: string }) {
  const s = await openSession(h, template, WIDE_APP)
  const response = await respond(
    h.app,
    s,
    vpJwt(who.holder, h.mclock, s.request, [who.jwt]),
    degreeSubmission(s),
  )
  assert.equal(response.statusCode, 200, response.body)
  return s
}

/** A presentation whose credential was tampered with → REJECTED (credentialProof fails). */
async function verifyRejected(h: Harness, template: string, who: { holder: Holder; jwt: string }) {
  const s = await openSession(h, template, WIDE_APP)
  const altered = tamper(who.jwt, (p) => {
    p.jti = `urn:uuid:${randomUUID()}`
  })
  const response = await respond(
    h.app,
    s,
    vpJwt(who.holder, h.mclock, s.request, [altered]),
    degreeSubmission(s),
  )
  assert.equal(response.statusCode, 400, response.body)
  return s
}

/** The outbox rows of a template about one process or session. */
async function rowsOf(h: Harness, templateId: string, subjectId: string) {
  const rows = await h.app.services.store.webhooks.listByTemplate('demo', templateId, { limit: 200 })
  return rows.filter((r) => r.subjectId === subjectId)
}

/** The one outbox row of a process or session. */
async function eventOf(h: Harness, templateId: string, subjectId: string) {
  const rows = await rowsOf(h, templateId, subjectId)
  assert.equal(rows.length, 1, `one outbox row for ${subjectId}: ${JSON.stringify(rows)}`)
  return rows[0] as WebhookEventRecord
}

/** The first attempt report matching, recorded already or still to come. */
function untilAttempt(
  h: Harness,
  what: string,
  match: (r: AttemptReport) => boolean,
  timeoutMs = 5000,
): Promise<AttemptReport> {
  const found = h.attempts.find(match)
  if (found) return Promise.resolve(found)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off()
      const seen = h.attempts.map((r) => `${r.event.id}#${r.attempt.attempt} ${r.attempt.outcome}`)
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; attempts: ${seen.join(', ')}`))
    }, timeoutMs)
    const off = h.app.services.webhookDispatcher.onAttempt((r) => {
      if (!match(r)) return
      clearTimeout(timer)
      off()
      resolve(r)
    })
  })
}

/** The attempt that ends the current round of event `id` (delivered, failed or disabled). */
const settled = (h: Harness, id: string, round = 1) =>
  untilAttempt(
    h,
    `event ${id} to settle (round ${round})`,
    (r) =>
      r.event.id === id &&
      r.event.state !== 'pending' &&
      (round === 1 || r.attempt.trigger === 'redelivery' || r.attempt.attempt > round),
  )

const attemptNo = (h: Harness, id: string, n: number) =>
  untilAttempt(h, `attempt ${n} of ${id}`, (r) => r.event.id === id && r.attempt.attempt === n)

type DeliveryView = {
  id: string
  event: WebhookEventType
  subject: string
  template: string
  url: string
  state: string
  attempts: number
  nextAttemptAt: string | null
  lastStatus: number | null
  lastError: string | null
  deliveredAt: string | null
  body: WebhookEventBody
  log: {
    attempt: number
    at: string
    durationMs: number
    status: number | null
    outcome: string
    error: string | null
    nextAttemptAt: string | null
    trigger: string
  }[]
}

async function deliveryView(h: Harness, id: string): Promise<DeliveryView> {
  const response = await portal(h, 'GET', `/webhook-deliveries/${id}`)
  assert.equal(response.statusCode, 200, response.body)
  return response.json<DeliveryView>()
}

const logOf = (view: DeliveryView) => view.log.map((a) => [a.attempt, a.status, a.outcome, a.trigger])

/** Writes events straight into the outbox, in one transaction, as a service would; wakes the dispatcher. */
async function enqueue(
  h: Harness,
  kind: TemplateKind,
  templateId: string,
  subjects: string[],
  overrides: Partial<WebhookEventRecord> = {},
): Promise<string[]> {
  const { store, clock, webhookDispatcher } = h.app.services
  const template = await store.templates.get('demo', templateId, kind)
  assert.ok(template, `template ${templateId}`)
  const outbox = new WebhookOutbox(clock)
  const type: WebhookEventType = kind === 'issuance' ? 'issuance.issued' : 'verification.verified'
  const ids = await store.transaction(async (repos) => {
    const written: string[] = []
    for (const subject of subjects) {
      const body: WebhookBody = {
        id: subject,
        subject: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
        status: 'SUCCESS',
        verificationResult: { checks: [], warnings: [], errors: [] },
      }
      if (Object.keys(overrides).length === 0) {
        written.push((await outbox.enqueueIn(repos, template, subject, type, body)) as string)
        continue
      }
      const now = clock.now()
      const id = `msg_${randomUUID()}`
      await repos.webhooks.enqueue({
        id,
        tenantId: 'demo',
        templateId,
        templateKind: kind,
        subjectId: subject,
        type,
        url: template.body.webhookUrl as string,
        body: JSON.stringify(body),
        state: 'pending',
        attempts: 0,
        nextAttemptAt: now,
        leaseUntil: null,
        lastStatus: null,
        lastError: null,
        createdAt: now,
        updatedAt: now,
        deliveredAt: null,
        ...overrides,
      })
      written.push(id)
    }
    return written
  })
  webhookDispatcher.kick()
  return ids
}

const bodyOf = (d: Delivery) => d.json as WebhookEventBody

// --- the outbox --------------------------------------------------------------------------------------------

describe('outbox: one event per terminal change, written in its transaction', () => {
  let h: Harness
  let issuanceTemplate: string
  let verificationTemplate: string
  let who: { holder: Holder; jwt: string }
  before(async () => {
    h = await start()
    issuanceTemplate = await hookTemplate(h, 'issuance', h.receiver.endpoint('outbox issuance'))
    verificationTemplate = await hookTemplate(h, 'verification', h.receiver.endpoint('outbox verification'))
    who = await degreeHolder(h)
  })
  after(() => h.close())

  test('ISSUED writes exactly one issuance.issued row for the process, due at once', async () => {
    const { processId } = await issue(h, issuanceTemplate)
    const row = await eventOf(h, issuanceTemplate, processId)
    assert.equal(row.type, 'issuance.issued')
    assert.equal(row.templateKind, 'issuance')
    assert.match(row.id, /^msg_[0-9a-f-]{36}$/)
    assert.equal(
      row.url,
      (await h.app.services.store.templates.get('demo', issuanceTemplate, 'issuance'))?.body.webhookUrl,
    )
    assert.equal(JSON.parse(row.body).id, processId)
  })

  test('REJECTED writes one issuance.rejected row; a second reject (409) writes none', async () => {
    const { processId, rp } = await reject(h, issuanceTemplate)
    assert.equal((await eventOf(h, issuanceTemplate, processId)).type, 'issuance.rejected')
    const again = await rejectProcess(h.app, rp, processId, 'twice')
    assert.equal(again.statusCode, 409)
    assert.equal(problemOf(again).code, 'process_not_pending')
    assert.equal((await rowsOf(h, issuanceTemplate, processId)).length, 1)
  })

  test('VERIFIED and REJECTED sessions write one row each', async () => {
    const verified = await verify(h, verificationTemplate, who)
    assert.equal((await eventOf(h, verificationTemplate, verified.id)).type, 'verification.verified')
    const rejected = await verifyRejected(h, verificationTemplate, who)
    assert.equal((await eventOf(h, verificationTemplate, rejected.id)).type, 'verification.rejected')
    // A late answer to a closed session changes nothing and writes nothing.
    const late = await respond(
      h.app,
      rejected,
      vpJwt(who.holder, h.mclock, rejected.request, [who.jwt]),
      degreeSubmission(rejected),
    )
    assert.ok(late.statusCode >= 400, late.body)
    assert.equal((await rowsOf(h, verificationTemplate, rejected.id)).length, 1)
  })

  test('concurrent answers to one session: one wins, the losers (409 session_closed) write no row', async () => {
    const s = await openSession(h, verificationTemplate, WIDE_APP)
    const vp = vpJwt(who.holder, h.mclock, s.request, [who.jwt])
    const responses = await Promise.all([1, 2, 3, 4].map(() => respond(h.app, s, vp, degreeSubmission(s))))
    const codes = responses.map((r) => r.statusCode).sort()
    assert.deepEqual(codes, [200, 409, 409, 409])
    for (const r of responses.filter((x) => x.statusCode === 409)) {
      assert.equal(r.json().error, 'session_closed')
    }
    assert.equal((await eventOf(h, verificationTemplate, s.id)).type, 'verification.verified')
  })

  test('a transition whose transaction fails leaves neither the change nor its row', async () => {
    const { store } = h.app.services
    const transaction = store.transaction
    // A verification's outcome and its row are one write atomic by itself, not a store.transaction (issue 38:
    // store/index.ts, Store): its row's insert fails, after the session's UPDATE (a tenant that does not exist).
    const sessions = store.sessions as unknown as Record<string, unknown>
    const completeWithEvent = store.sessions.completeWithEvent.bind(store.sessions)
    sessions.completeWithEvent = ((session, now, event) =>
      completeWithEvent(
        session,
        now,
        event && { ...event, tenantId: 'no-such-tenant' },
      )) as typeof store.sessions.completeWithEvent
    // Fails every transaction that wrote an outbox row, after it did: the row must roll back with the change.
    store.transaction = ((work) =>
      transaction.call(store, async (repos) => {
        let enqueued = false
        const webhooks = new Proxy(repos.webhooks, {
          get(target, prop) {
            if (prop === 'enqueue')
              return async (e: WebhookEventRecord) => {
                const written = await target.enqueue(e)
                enqueued = true
                return written
              }
            const value = Reflect.get(target, prop)
            return typeof value === 'function' ? value.bind(target) : value
          },
        })
        const result = await work({ ...repos, webhooks })
        if (enqueued) throw new Error('injected failure after the outbox write')
        return result
      })) as typeof store.transaction
    let rejected: Awaited<ReturnType<typeof walletAsked>>
    let waiting: Awaited<ReturnType<typeof walletAsked>>
    let session: OpenSession
    try {
      // reject
      rejected = await walletAsked({ app: h.app, clock: h.mclock }, issuanceTemplate)
      assert.equal((await rejectProcess(h.app, rejected.rp, rejected.processId)).statusCode, 500)
      // issue: the wallet waits (202), then the relying party submits the content
      waiting = await walletAsked({ app: h.app, clock: h.mclock }, issuanceTemplate)
      assert.equal((await submit(h.app, waiting.rp, waiting.processId, DEGREE)).statusCode, 500)
      // verify
      session = await openSession(h, verificationTemplate, WIDE_APP)
      const answer = await respond(
        h.app,
        session,
        vpJwt(who.holder, h.mclock, session.request, [who.jwt]),
        degreeSubmission(session),
      )
      assert.equal(answer.statusCode, 500, answer.body)
    } finally {
      store.transaction = transaction
      delete sessions.completeWithEvent
    }
    for (const p of [rejected, waiting]) {
      assert.equal((await store.processes.get(p.processId))?.status, 'PENDING')
      assert.equal((await rowsOf(h, issuanceTemplate, p.processId)).length, 0)
    }
    assert.equal((await store.sessions.get(session.id))?.status, 'PENDING')
    assert.equal((await rowsOf(h, verificationTemplate, session.id)).length, 0)
    // Once the store works again, the same transitions write their row.
    assert.equal((await rejectProcess(h.app, rejected.rp, rejected.processId)).statusCode, 200)
    assert.equal((await eventOf(h, issuanceTemplate, rejected.processId)).type, 'issuance.rejected')
  })

  test('a template without webhookUrl writes no row', async () => {
    const { processId } = await issue(h, 'degree')
    const s = await verify(h, 'degree-check', who)
    const { store } = h.app.services
    assert.deepEqual(await store.webhooks.listByTemplate('demo', 'degree', { limit: 10 }), [])
    assert.deepEqual(await store.webhooks.listByTemplate('demo', 'degree-check', { limit: 10 }), [])
    assert.equal((await store.processes.get(processId))?.status, 'ISSUED')
    assert.equal((await store.sessions.get(s.id))?.status, 'VERIFIED')
  })
})

// --- bodies, headers, signatures ---------------------------------------------------------------------------

describe('section 6 bodies, headers and Standard Webhooks signatures', () => {
  let h: Harness
  let issuance: WebhookEndpoint
  let verification: WebhookEndpoint
  let issuanceTemplate: string
  let verificationTemplate: string
  let who: { holder: Holder; jwt: string }
  before(async () => {
    h = await start()
    issuance = h.receiver.endpoint('bodies issuance')
    verification = h.receiver.endpoint('bodies verification')
    issuanceTemplate = await hookTemplate(h, 'issuance', issuance)
    verificationTemplate = await hookTemplate(h, 'verification', verification)
    who = await degreeHolder(h)
  })
  after(() => h.close())

  /** The common headers of a delivery and the Standard Webhooks checks the receiver made. */
  function assertHeaders(d: Delivery, event: WebhookEventType, webhookId: string) {
    assert.equal(d.method, 'POST')
    assert.equal(d.headers['content-type'], 'application/json')
    assert.equal(d.event, event, 'webhook-event header')
    assert.equal(d.webhookId, webhookId, 'webhook-id is the outbox id')
    assert.match(d.webhookTimestamp ?? '', /^\d{10}$/, 'whole seconds')
    assert.ok(d.signatureValid, d.signatureError)
  }

  test('issuance.issued: id, the holder DID as subject, SUCCESS, the claims without id, the checks run', async () => {
    const { processId, holder } = await issue(h, issuanceTemplate)
    const d = await issuance.waitForEvent({ id: processId, status: 'SUCCESS' })
    assertHeaders(d, 'issuance.issued', (await eventOf(h, issuanceTemplate, processId)).id)
    const body = bodyOf(d)
    assert.deepEqual(Object.keys(body).sort(), SECTION_6_KEYS)
    assert.equal(body.id, processId)
    assert.equal(body.subject, holder.did)
    assert.equal(body.status, 'SUCCESS')
    assert.deepEqual(body.payload, DEGREE[0]?.credentialSubject)
    assert.deepEqual(body.verificationResult, {
      checks: ['securityMechanisms', 'holderProof'],
      warnings: [],
      errors: [],
    })
  })

  test('payload is omitted when the credential subject holds nothing but its id', async () => {
    // The issuance API refuses such content (a claim besides id is required), so the body builder is
    // checked directly with the template of this suite.
    const template = await h.app.services.store.templates.get('demo', issuanceTemplate, 'issuance')
    assert.ok(template)
    const holder = newHolder()
    const credential = (subject: Record<string, unknown>) =>
      ({
        id: `urn:uuid:${randomUUID()}`,
        type: ['VerifiableCredential', DEGREE_TYPE],
        credentialSubject: subject,
      }) as never
    const bare = issuedWebhook('p-1', holder.did, [credential({ id: holder.did })], template)
    assert.deepEqual(Object.keys(bare).sort(), ['id', 'status', 'subject', 'verificationResult'])
    const merged = issuedWebhook(
      'p-2',
      holder.did,
      [credential({ id: holder.did, a: 1 }), credential({ b: 2 })],
      template,
    )
    assert.deepEqual(merged.payload, { a: 1, b: 2 }, 'the claims of every credential, without id')
  })

  test('issuance.rejected: REJECT, the bound holder as subject, the reason in errors, no payload', async () => {
    const { processId, holder } = await reject(h, issuanceTemplate, 'diploma not found')
    const d = await issuance.waitForEvent({ id: processId, status: 'REJECT' })
    assertHeaders(d, 'issuance.rejected', (await eventOf(h, issuanceTemplate, processId)).id)
    assert.deepEqual(bodyOf(d), {
      id: processId,
      subject: holder.did,
      status: 'REJECT',
      verificationResult: { checks: [], warnings: [], errors: ['rejected by the issuer: diploma not found'] },
    })
  })

  test('verification.verified: the session id, the holder, the shared claims without id, the checks', async () => {
    const s = await verify(h, verificationTemplate, who)
    const d = await verification.waitForEvent({ id: s.id, status: 'SUCCESS' })
    assertHeaders(d, 'verification.verified', (await eventOf(h, verificationTemplate, s.id)).id)
    const body = bodyOf(d)
    assert.deepEqual(Object.keys(body).sort(), SECTION_6_KEYS)
    assert.equal(body.subject, who.holder.did)
    assert.deepEqual(body.payload, DEGREE[0]?.credentialSubject)
    for (const check of SECTION_6_CHECKS) assert.ok(body.verificationResult.checks.includes(check), check)
    assert.deepEqual(body.verificationResult.errors, [])
    assert.ok(Array.isArray(body.verificationResult.warnings))
  })

  test('verification.rejected: REJECT, no payload, errors name the failed check', async () => {
    const s = await verifyRejected(h, verificationTemplate, who)
    const d = await verification.waitForEvent({ id: s.id, status: 'REJECT' })
    assertHeaders(d, 'verification.rejected', (await eventOf(h, verificationTemplate, s.id)).id)
    const body = bodyOf(d)
    assert.deepEqual(Object.keys(body).sort(), ['id', 'status', 'subject', 'verificationResult'])
    assert.equal(body.subject, who.holder.did)
    assert.ok(
      body.verificationResult.errors.some((e) => e.startsWith('credentialProof')),
      JSON.stringify(body),
    )
  })

  test('one v1 signature with the template secret, accepted by the standardwebhooks package too', async () => {
    const { processId } = await issue(h, issuanceTemplate)
    const d = await issuance.waitForEvent({ id: processId, status: 'SUCCESS' })
    const signatures = (d.headers['webhook-signature'] ?? '').split(' ')
    assert.equal(signatures.length, 1)
    assert.match(signatures[0] ?? '', /^v1,[A-Za-z0-9+/]+=*$/)
    const verified = new Webhook(issuance.secret).verify(d.rawBody, d.headers)
    assert.deepEqual(verified, JSON.parse(d.rawBody))
    assert.throws(() => new Webhook(generateWebhookSecret()).verify(d.rawBody, d.headers), /signature/i)
  })

  test('rotation: one signature per secret, current first; a receiver that knows only the old one accepts', async () => {
    const old = generateWebhookSecret()
    const current = generateWebhookSecret()
    const endpoint = h.receiver.endpoint('rotation', { secret: old })
    const template = await hookTemplate(h, 'issuance', endpoint, {
      webhookSecret: current,
      webhookPreviousSecrets: [old],
    })
    const { processId } = await issue(h, template)
    const d = await endpoint.waitForEvent({ id: processId, status: 'SUCCESS' })
    assert.ok(d.signatureValid, d.signatureError)
    const signatures = (d.headers['webhook-signature'] ?? '').split(' ')
    assert.equal(signatures.length, 2)
    const check = (secret: string, signature: string | undefined) =>
      verifyWebhookSignature({
        secrets: [secret],
        id: d.webhookId,
        timestamp: d.webhookTimestamp,
        signature,
        body: d.rawBody,
        now: h.clock.now(),
      }).valid
    assert.ok(check(current, signatures[0]), 'the first signature is made with webhookSecret')
    assert.ok(check(old, signatures[1]), 'the second with the previous secret')
    assert.ok(!check(old, signatures[0]))
    // The receiver rotates too: it accepts with either secret.
    assert.doesNotThrow(() => new Webhook(current).verify(d.rawBody, d.headers))
    assert.doesNotThrow(() => new Webhook(old).verify(d.rawBody, d.headers))
  })

  test("webhook-timestamp is the attempt's time on the service clock, in whole seconds", async () => {
    h.clock.advance(120_000) // the service runs two minutes ahead of the wall clock
    const { processId } = await issue(h, issuanceTemplate)
    const d = await issuance.waitForEvent({ id: processId, status: 'SUCCESS' })
    const eventId = (await eventOf(h, issuanceTemplate, processId)).id
    // The receiver can see the POST before the dispatcher has recorded the attempt: wait for the record.
    await settled(h, eventId)
    const view = await deliveryView(h, eventId)
    const at = Date.parse(view.log[0]?.at ?? '')
    assert.equal(d.webhookTimestamp, String(Math.floor(at / 1000)))
    assert.ok(Number(d.webhookTimestamp) - Math.floor(Date.now() / 1000) >= 115, 'not the wall clock')
  })
})

// --- retries -----------------------------------------------------------------------------------------------

describe('retries, Retry-After, what is not retried, 410', () => {
  let h: Harness
  before(async () => {
    h = await start()
  })
  after(() => h.close())

  /** A fresh endpoint and template, one real issuance to it; returns the outbox id once known. */
  async function issuedTo(name: string, script: (e: WebhookEndpoint) => void) {
    const endpoint = h.receiver.endpoint(name)
    script(endpoint)
    const template = await hookTemplate(h, 'issuance', endpoint)
    const { processId } = await issue(h, template)
    const id = (await eventOf(h, template, processId)).id
    return { endpoint, template, processId, id }
  }

  test('503 then 200: two attempts with the same webhook-id; the log shows retry, then delivered', async () => {
    const { endpoint, id } = await issuedTo('503 then 200', (e) => e.respondWith({ status: 503 }))
    const done = await settled(h, id)
    assert.equal(done.event.state, 'delivered')
    assert.deepEqual(
      endpoint.deliveries.map((d) => [d.webhookId, d.answeredStatus, d.signatureValid]),
      [
        [id, 503, true],
        [id, 204, true],
      ],
    )
    assert.equal(endpoint.distinctEvents().size, 1)
    const view = await deliveryView(h, id)
    assert.deepEqual(logOf(view), [
      [1, 503, 'retry', 'automatic'],
      [2, 204, 'delivered', 'automatic'],
    ])
    assert.equal(view.log[0]?.error, 'the receiver answered 503')
    assert.ok((view.log[0]?.nextAttemptAt ?? '') <= (view.log[1]?.at ?? ''))
    assert.equal(view.state, 'delivered')
    assert.equal(view.attempts, 2)
    assert.equal(view.lastStatus, 204)
    assert.equal(view.nextAttemptAt, null)
    assert.ok(view.deliveredAt)
  })

  test('Retry-After: the next attempt is scheduled that many seconds after the answer, and not before', async () => {
    const { endpoint, id } = await issuedTo('retry after', (e) =>
      e.respondWith({ status: 429, retryAfter: '30' }),
    )
    const first = (await attemptNo(h, id, 1)).attempt
    assert.equal(first.outcome, 'retry')
    const next = first.nextAttemptAt as number
    assert.ok(
      next >= first.at + 30_000 && next <= first.at + first.durationMs + 30_000 + 50,
      `next ${next - first.at} ms after the attempt (took ${first.durationMs} ms)`,
    )
    const pending = await deliveryView(h, id)
    assert.equal(pending.state, 'pending')
    assert.equal(pending.nextAttemptAt, isoTime(next))
    assert.equal(pending.log[0]?.nextAttemptAt, isoTime(next))
    assert.equal(endpoint.deliveries.length, 1)
    // Move the service clock to the scheduled time instead of waiting 30 s.
    h.clock.advance(30_000)
    h.app.services.webhookDispatcher.kick()
    const second = (await settled(h, id)).attempt
    assert.equal(second.outcome, 'delivered')
    assert.ok(second.at >= next, 'not before the time Retry-After asked for')
    assert.equal(endpoint.deliveries.length, 2)
  })

  test('a timeout is retried: no answer within timeoutMs, then a quick one', async () => {
    const { endpoint, id } = await issuedTo('timeout', (e) => e.respondWith({ delayMs: 1500 }))
    const done = await settled(h, id)
    assert.equal(done.event.state, 'delivered')
    const view = await deliveryView(h, id)
    assert.deepEqual(logOf(view), [
      [1, null, 'retry', 'automatic'],
      [2, 204, 'delivered', 'automatic'],
    ])
    assert.match(view.log[0]?.error ?? '', /^timeout: no answer within 300 ms/)
    assert.ok((view.log[0]?.durationMs ?? 0) >= 290)
    assert.deepEqual(
      endpoint.deliveries.map((d) => d.webhookId),
      [id, id],
    )
  })

  test('a dropped connection is retried', async () => {
    const { endpoint, id } = await issuedTo('drop', (e) => e.respondWith({ destroy: true }))
    assert.equal((await settled(h, id)).event.state, 'delivered')
    const view = await deliveryView(h, id)
    assert.deepEqual(logOf(view), [
      [1, null, 'retry', 'automatic'],
      [2, 204, 'delivered', 'automatic'],
    ])
    assert.match(view.log[0]?.error ?? '', /^connection error: /)
    assert.equal(endpoint.deliveries.length, 2)
  })

  test('a redirect is retried at the same URL, never followed', async () => {
    const elsewhere = h.receiver.endpoint('redirect target')
    const { endpoint, id } = await issuedTo('redirect', (e) =>
      e.respondWith({ status: 307, location: elsewhere.url }),
    )
    assert.equal((await settled(h, id)).event.state, 'delivered')
    assert.deepEqual(logOf(await deliveryView(h, id)), [
      [1, 307, 'retry', 'automatic'],
      [2, 204, 'delivered', 'automatic'],
    ])
    assert.equal(endpoint.deliveries.length, 2)
    assert.equal(elsewhere.deliveries.length, 0, 'the Location was not followed')
  })

  test('a 400 fails at once, without retry', async () => {
    const { endpoint, id } = await issuedTo('400', (e) => e.respondAlways({ status: 400 }))
    const done = await settled(h, id)
    assert.equal(done.event.state, 'failed')
    const view = await deliveryView(h, id)
    assert.deepEqual(logOf(view), [[1, 400, 'failed', 'automatic']])
    assert.match(view.lastError ?? '', /answered 400; a 4xx other than 408, 410 and 429 is not retried/)
    assert.equal(view.nextAttemptAt, null)
    assert.equal(endpoint.deliveries.length, 1)
  })

  test('maxAttempts exhausted: failed with the reason; the waits grow ×4', async () => {
    const { endpoint, id } = await issuedTo('always 500', (e) => e.respondAlways({ status: 500 }))
    const done = await settled(h, id)
    assert.equal(done.event.state, 'failed')
    const view = await deliveryView(h, id)
    assert.deepEqual(logOf(view), [
      [1, 500, 'retry', 'automatic'],
      [2, 500, 'retry', 'automatic'],
      [3, 500, 'failed', 'automatic'],
    ])
    assert.equal(view.lastError, 'the receiver answered 500; gave up after 3 attempts')
    assert.equal(endpoint.distinctEvents().size, 1)
    assert.equal(endpoint.deliveries.length, 3)
    // Wait after each answer: 20 ms ±25 %, then 80 ms ±25 % (plus scheduling noise, never less).
    const waits = view.log
      .slice(0, 2)
      .map((a) => Date.parse(a.nextAttemptAt ?? '') - Date.parse(a.at) - a.durationMs)
    assert.ok((waits[0] ?? 0) >= 14 && (waits[0] ?? 0) < 200, `first wait ${waits[0]}`)
    assert.ok((waits[1] ?? 0) >= 59 && (waits[1] ?? 0) < 300, `second wait ${waits[1]}`)
  })

  test('410 disables the endpoint: later events skip HTTP, redelivery is refused until the template is saved', async () => {
    const { endpoint, template, id } = await issuedTo('gone', (e) => e.respondWith({ status: 410 }))
    assert.equal((await settled(h, id)).event.state, 'disabled')
    assert.deepEqual(logOf(await deliveryView(h, id)), [[1, 410, 'disabled', 'automatic']])
    const list = await portal(h, 'GET', `/issuance-templates/${template}/webhook-deliveries`)
    const { endpoint: state } = list.json()
    assert.equal(state.disabled, true)
    assert.equal(state.url, endpoint.url)
    assert.match(state.disabledReason, /answered 410 Gone/)
    assert.ok(state.disabledAt)

    // The next event of the template is disabled without an HTTP request.
    const next = await issue(h, template)
    const nextId = (await eventOf(h, template, next.processId)).id
    const skipped = await settled(h, nextId)
    assert.equal(skipped.event.state, 'disabled')
    assert.equal(skipped.attempt.status, null)
    assert.match(skipped.attempt.error ?? '', /^endpoint disabled: /)
    assert.equal(endpoint.deliveries.length, 1, 'no request after the 410')

    const refused = await portal(h, 'POST', `/webhook-deliveries/${id}/redeliver`)
    assert.equal(refused.statusCode, 409)
    assert.equal(problemOf(refused).code, 'webhook_endpoint_disabled')

    // Saving the template again re-enables the endpoint; a redelivery then goes out and succeeds.
    const { id: _id, ...unchanged } = templateBody('issuance', template, {
      webhookUrl: endpoint.url,
      webhookSecret: endpoint.secret,
    })
    const saved = await portal(h, 'PUT', `/issuance-templates/${template}`, unchanged)
    assert.equal(saved.statusCode, 200, saved.body)
    const enabled = (await portal(h, 'GET', `/issuance-templates/${template}/webhook-deliveries`)).json()
    assert.deepEqual(enabled.endpoint, {
      url: endpoint.url,
      disabled: false,
      disabledAt: null,
      disabledReason: null,
    })
    const again = await portal(h, 'POST', `/webhook-deliveries/${nextId}/redeliver`)
    assert.equal(again.statusCode, 202, again.body)
    const redelivered = await settled(h, nextId, 2)
    assert.equal(redelivered.event.state, 'delivered')
    assert.equal(redelivered.attempt.trigger, 'redelivery')
    assert.equal(endpoint.deliveries.at(-1)?.webhookId, nextId)
  })
})

// --- pure rules --------------------------------------------------------------------------------------------

describe('backoff, classification and Retry-After (pure)', () => {
  const options: WebhookOptions = {
    mode: 'production',
    timeoutMs: 10_000,
    maxAttempts: 8,
    retryInitialDelayMs: 5000,
    retryMaxDelayMs: 3_600_000,
    concurrency: 16,
    perEndpointConcurrency: 4,
  }

  test('backoffDelay grows ×4 per retry, is capped, and jitters within ±25 %', () => {
    const middle = () => 0.5
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(n, options, middle)),
      [5000, 20_000, 80_000, 320_000, 1_280_000, 3_600_000, 3_600_000],
    )
    assert.equal(
      backoffDelay(1, options, () => 0),
      3750,
    )
    assert.equal(
      backoffDelay(1, options, () => 0.999_999),
      6250,
    )
    assert.equal(
      backoffDelay(3, options, () => 0),
      60_000,
    )
    assert.equal(
      backoffDelay(7, options, () => 0.999_999),
      3_600_000,
      'jitter never exceeds the cap',
    )
    assert.equal(
      backoffDelay(7, options, () => 0),
      2_700_000,
      'a capped wait still jitters down',
    )
    for (let i = 0; i < 200; i++) {
      const delay = backoffDelay(2, options)
      assert.ok(delay >= 15_000 && delay <= 25_000, String(delay))
    }
  })

  test('decide: delivered, retried, failed or disabled by status', () => {
    const now = 1_000_000
    const outcome = (status: number | null, extra: object = {}) =>
      decide({ status, durationMs: 5, ...extra }, 1, now, options, () => 0.5).outcome
    const table: [number | null, string][] = [
      [200, 'delivered'],
      [201, 'delivered'],
      [204, 'delivered'],
      [299, 'delivered'],
      [301, 'retry'],
      [302, 'retry'],
      [307, 'retry'],
      [308, 'retry'],
      [400, 'failed'],
      [401, 'failed'],
      [403, 'failed'],
      [404, 'failed'],
      [408, 'retry'],
      [409, 'failed'],
      [410, 'disabled'],
      [413, 'failed'],
      [422, 'failed'],
      [429, 'retry'],
      [500, 'retry'],
      [502, 'retry'],
      [503, 'retry'],
      [504, 'retry'],
      [null, 'retry'],
    ]
    for (const [status, expected] of table) assert.equal(outcome(status), expected, `status ${status}`)
    assert.equal(outcome(null, { error: 'target refused: x', forbidden: true }), 'failed')
    const retry = decide({ status: 503, durationMs: 5 }, 1, now, options, () => 0.5)
    assert.deepEqual(retry, {
      outcome: 'retry',
      error: 'the receiver answered 503',
      nextAttemptAt: now + 5000,
    })
    const timeout = decide({ status: null, error: 'timeout: x', durationMs: 5 }, 2, now, options, () => 0.5)
    assert.deepEqual(timeout, { outcome: 'retry', error: 'timeout: x', nextAttemptAt: now + 20_000 })
    const last = decide({ status: 503, durationMs: 5 }, 8, now, options)
    assert.deepEqual(last, {
      outcome: 'failed',
      error: 'the receiver answered 503; gave up after 8 attempts',
      nextAttemptAt: null,
    })
    assert.equal(decide({ status: 410, durationMs: 5 }, 8, now, options).outcome, 'disabled')
    assert.equal(decide({ status: 200, durationMs: 5 }, 8, now, options).outcome, 'delivered')
  })

  test('decide: Retry-After replaces the backoff, capped by retryMaxDelayMs', () => {
    const now = 1_000_000
    const at = (retryAfterMs: number) =>
      decide({ status: 503, retryAfterMs, durationMs: 5 }, 1, now, options).nextAttemptAt
    assert.equal(at(120_000), now + 120_000)
    assert.equal(at(0), now)
    assert.equal(at(86_400_000), now + 3_600_000)
    assert.equal(
      decide({ status: 429, retryAfterMs: 7000, durationMs: 5 }, 8, now, options).outcome,
      'failed',
      'not past maxAttempts',
    )
  })

  test('parseRetryAfter: delta-seconds and HTTP dates; anything else is ignored', () => {
    const now = Date.parse('1994-11-06T08:49:00Z')
    assert.equal(parseRetryAfter('120', now), 120_000)
    assert.equal(parseRetryAfter('0', now), 0)
    assert.equal(parseRetryAfter(' 7 ', now), 7000)
    assert.equal(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now), 37_000)
    assert.equal(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', now), 37_000, 'RFC 850 date')
    assert.equal(parseRetryAfter('Sun Nov  6 08:49:37 1994', now), 37_000, 'asctime date, in GMT')
    assert.equal(parseRetryAfter('Sun, 06 Nov 1994 08:48:00 GMT', now), 0, 'a date in the past')
    for (const junk of [
      undefined,
      '',
      '  ',
      'soon',
      '-5',
      '1.5',
      '5s',
      '12abc',
      'Tuesday 3',
      '2 days',
      'NaN',
    ]) {
      assert.equal(parseRetryAfter(junk, now), undefined, JSON.stringify(junk))
    }
  })
})

// --- ordering and concurrency ------------------------------------------------------------------------------

describe('ordering per subject, concurrency per origin', () => {
  test('two events of one subject are never in flight together and arrive in order, across retries', async () => {
    const h = await start()
    try {
      const endpoint = h.receiver.endpoint('ordering').respondWith({ status: 503, delayMs: 50 })
      const template = await hookTemplate(h, 'issuance', endpoint)
      const subject = `process-${randomUUID()}`
      const [first, second] = (await enqueue(h, 'issuance', template, [subject, subject])) as [string, string]
      const done = await settled(h, second)
      assert.equal(done.event.state, 'delivered')
      assert.deepEqual(
        endpoint.deliveries.map((d) => [d.webhookId, d.answeredStatus]),
        [
          [first, 503],
          [first, 204],
          [second, 204],
        ],
      )
      const firstDone = h.attempts.find((r) => r.event.id === first && r.event.state === 'delivered')
      const firstRetry = h.attempts.find((r) => r.event.id === first && r.attempt.outcome === 'retry')
      assert.ok(firstDone && firstRetry)
      // The retry goes out when scheduled (20 ms ±25 %), not when a later wake-up happens to come.
      const late = firstDone.attempt.at - (firstRetry.attempt.nextAttemptAt as number)
      assert.ok(late >= 0 && late < 500, `the retry went out ${late} ms after its time`)
      const secondSent = endpoint.deliveries[2] as Delivery
      assert.ok(
        secondSent.receivedAt >= firstDone.attempt.at + firstDone.attempt.durationMs - 1,
        'the second left only after the first was answered',
      )
      // Another subject is not held back by one that waits for its retry.
      const other = h.receiver
        .endpoint('ordering other subject')
        .respondWith({ status: 503, retryAfter: '3600' })
      const otherTemplate = await hookTemplate(h, 'issuance', other)
      const [stuck] = (await enqueue(h, 'issuance', otherTemplate, [`a-${randomUUID()}`])) as [string]
      assert.equal((await attemptNo(h, stuck, 1)).event.state, 'pending')
      const [free] = (await enqueue(h, 'issuance', otherTemplate, [`b-${randomUUID()}`])) as [string]
      assert.equal((await settled(h, free)).event.state, 'delivered')
    } finally {
      await h.close()
    }
  })

  test('a slow origin with a backlog does not hold back another origin (perEndpointConcurrency)', async () => {
    const h = await start({ ...FAST, timeoutMs: 10_000, concurrency: 3, perEndpointConcurrency: 1 })
    const slowReceiver = await WebhookReceiver.start({ now: () => h.clock.now() })
    try {
      const slow = slowReceiver.endpoint('slow').respondAlways({ delayMs: 8000 })
      const fast = h.receiver.endpoint('fast')
      const slowTemplate = await hookTemplate(h, 'issuance', slow)
      const fastTemplate = await hookTemplate(h, 'issuance', fast)
      // A backlog of the slow origin, written before the fast origin's event.
      await enqueue(
        h,
        'issuance',
        slowTemplate,
        Array.from({ length: 30 }, () => `slow-${randomUUID()}`),
      )
      await slow.waitFor(() => true, { description: 'the first slow delivery' })
      const [fastId] = await enqueue(h, 'issuance', fastTemplate, [`fast-${randomUUID()}`])
      const d = await fast.waitFor((x) => x.webhookId === fastId, { timeoutMs: 4000 })
      assert.ok(d.signatureValid)
      assert.equal(slow.deliveries.length, 1, 'one delivery at a time to the slow origin')
      assert.equal(slow.deliveries[0]?.answerOutcome, 'pending', 'the slow one is still unanswered')
    } finally {
      await h.close()
      await slowReceiver.close()
    }
  })
})

// --- restart and leases ------------------------------------------------------------------------------------

describe('restart and leases', () => {
  test('a delivery cut off by a shutdown, and one written while no dispatcher ran, complete after a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'vc-harness-webhooks-'))
    const clock = new ShiftedClock()
    const receiver = await WebhookReceiver.start({ now: () => clock.now() })
    const options = { ...FAST, timeoutMs: 5000 }
    try {
      const first = await start(options, { dataDir, clock, receiver })
      const endpoint = receiver.endpoint('restart').respondWith({ delayMs: 20_000 })
      const template = await hookTemplate(first, 'issuance', endpoint)
      const a = await issue(first, template)
      const cut = await endpoint.waitFor((d) => bodyOf(d)?.id === a.processId)
      await first.app.services.webhookDispatcher.stop() // the service goes down mid-attempt
      const b = await issue(first, template) // written while no dispatcher runs
      const [rowA, rowB] = [
        await eventOf(first, template, a.processId),
        await eventOf(first, template, b.processId),
      ]
      assert.equal(cut.webhookId, rowA.id)
      for (const row of [rowA, rowB]) {
        assert.equal(row.state, 'pending')
        assert.equal(row.attempts, 0)
        assert.equal(row.leaseUntil, null, 'a graceful stop releases its leases')
      }
      await first.close()

      const second = await start(options, { dataDir, clock, receiver })
      try {
        await second.app.ready()
        const again = await endpoint.waitFor((d) => d.webhookId === rowA.id && d.answeredStatus === 204)
        assert.ok(again.signatureValid)
        const bDelivered = await endpoint.waitForEvent({ id: b.processId, status: 'SUCCESS' })
        assert.equal(bDelivered.webhookId, rowB.id)
        for (const id of [rowA.id, rowB.id]) {
          assert.equal((await settled(second, id)).event.state, 'delivered')
          assert.deepEqual(logOf(await deliveryView(second, id)), [[1, 204, 'delivered', 'automatic']])
        }
      } finally {
        await second.close()
      }
    } finally {
      await receiver.close()
      await rm(dataDir, { recursive: true, force: true })
    }
  })

  test('a stop that comes while an event is being claimed leaves it unleased and unsent', async () => {
    const h = await start()
    try {
      const endpoint = h.receiver.endpoint('stop race')
      const template = await hookTemplate(h, 'issuance', endpoint)
      const { store, webhookDispatcher } = h.app.services
      const claim = store.webhooks.claim
      let claimed = () => {}
      const claiming = new Promise<void>((resolve) => {
        claimed = resolve
      })
      let open = () => {}
      const gate = new Promise<void>((resolve) => {
        open = resolve
      })
      // The claim is written, then held until stop() has begun.
      store.webhooks.claim = async (...args) => {
        const won = await claim.apply(store.webhooks, args)
        claimed()
        await gate
        return won
      }
      try {
        const [id] = await enqueue(h, 'issuance', template, [`stop-${randomUUID()}`])
        await claiming
        const stopped = webhookDispatcher.stop()
        open()
        await stopped
        const row = await store.webhooks.get(id as string)
        assert.equal(row?.state, 'pending')
        assert.equal(row?.attempts, 0)
        assert.equal(row?.leaseUntil, null, 'released by the time stop() resolves, for the next start')
      } finally {
        store.webhooks.claim = claim
      }
      assert.equal(endpoint.deliveries.length, 0, 'nothing sent after stop()')
      assert.deepEqual(h.attempts, [])
    } finally {
      await h.close()
    }
  })

  test('an event leased by a dispatcher that died is retried once the lease runs out', async () => {
    const h = await start()
    try {
      const endpoint = h.receiver.endpoint('lease')
      const template = await hookTemplate(h, 'issuance', endpoint)
      const leaseUntil = h.clock.now() + 60_000
      // The dead dispatcher's claim, committed with the event itself.
      const [orphan] = await enqueue(h, 'issuance', template, [`orphan-${randomUUID()}`], { leaseUntil })
      // A live event after it: once it is delivered, the dispatcher has looked at the outbox since.
      const [live] = await enqueue(h, 'issuance', template, [`live-${randomUUID()}`])
      assert.equal((await settled(h, live as string)).event.state, 'delivered')
      const { store } = h.app.services
      const held = await store.webhooks.get(orphan as string)
      assert.equal(held?.state, 'pending')
      assert.equal(held?.attempts, 0)
      assert.ok(!endpoint.deliveries.some((d) => d.webhookId === orphan))
      assert.equal(
        await store.webhooks.claim(orphan as string, h.clock.now(), h.clock.now() + 1000),
        undefined,
        'another dispatcher cannot take a lease that has not run out',
      )
      assert.equal(await store.webhooks.nextDueAt(), leaseUntil, 'the dispatcher wakes when the lease ends')

      h.clock.advance(60_001)
      h.app.services.webhookDispatcher.kick()
      const done = await settled(h, orphan as string)
      assert.equal(done.event.state, 'delivered')
      assert.ok(done.attempt.at > leaseUntil)
      assert.equal(endpoint.deliveries.filter((d) => d.webhookId === orphan).length, 1)
    } finally {
      await h.close()
    }
  })
})

// --- target rules (SSRF) -----------------------------------------------------------------------------------

describe('webhook targets: public unicast only (loopback too in test mode)', () => {
  test('forbiddenAddress', () => {
    const refusedAlways = [
      '10.0.0.1',
      '10.255.255.255',
      '172.16.0.1',
      '172.31.255.254',
      '192.168.1.1',
      '169.254.169.254',
      '0.0.0.0',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '::7f00:1',
      '::a00:1',
      '64:ff9b::a00:1',
    ]
    const loopback = ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']
    const publicAddresses = [
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '192.169.0.1',
      '2606:4700::1111',
      '::ffff:8.8.8.8',
    ]
    for (const address of refusedAlways) {
      assert.ok(forbiddenAddress(address, 'production'), `${address} in production`)
      assert.ok(forbiddenAddress(address, 'test'), `${address} in test mode`)
    }
    for (const address of loopback) {
      assert.match(forbiddenAddress(address, 'production') ?? '', /loopback.*webhooks\.mode "test"/, address)
      assert.equal(forbiddenAddress(address, 'test'), undefined, address)
    }
    for (const address of publicAddresses) {
      assert.equal(forbiddenAddress(address, 'production'), undefined, address)
      assert.equal(forbiddenAddress(address, 'test'), undefined, address)
    }
    assert.match(forbiddenAddress('10.0.0.1', 'production') ?? '', /private/)
    assert.match(forbiddenAddress('169.254.169.254', 'production') ?? '', /linkLocal/)
    assert.match(forbiddenAddress('example.com', 'production') ?? '', /not an IP address/)
  })

  test('forbiddenUrl', () => {
    const refusedAlways = [
      'http://10.1.2.3/hook',
      'https://172.16.5.4/hook',
      'http://192.168.0.10:8080/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://0.0.0.0/hook',
      'http://0/hook',
      'http://[fe80::1]/hook',
      'http://[fc00::1]/hook',
      'http://[::ffff:10.0.0.1]/hook',
      'http://[::127.0.0.1]/hook',
      'ftp://rp.example/hook',
      'file:///etc/passwd',
      'https://user:pass@rp.example/hook',
      'not a url',
    ]
    const loopback = [
      'http://127.0.0.1:8080/hook',
      'http://127.1/hook',
      'http://2130706433/hook',
      'http://0x7f.1/hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://localhost/hook',
      'http://LOCALHOST./hook',
      'http://api.localhost/hook',
    ]
    const allowed = ['https://rp.example/hooks/1', 'http://8.8.8.8/hook', 'https://[2606:4700::1111]/hook']
    for (const url of refusedAlways) {
      assert.ok(forbiddenUrl(url, 'production'), `${url} in production`)
      assert.ok(forbiddenUrl(url, 'test'), `${url} in test mode`)
    }
    for (const url of loopback) {
      assert.match(forbiddenUrl(url, 'production') ?? '', /loopback/, url)
      assert.equal(forbiddenUrl(url, 'test'), undefined, url)
    }
    for (const url of allowed) {
      assert.equal(forbiddenUrl(url, 'production'), undefined, url)
      assert.equal(forbiddenUrl(url, 'test'), undefined, url)
    }
  })

  test('the configuration file is refused with a private or loopback target, or without a secret', () => {
    const withTemplate = (mode: 'production' | 'test', template: Record<string, unknown>) => {
      const raw = structuredClone(verificationConfig()) as unknown as {
        webhooks: unknown
        tenants: { issuanceTemplates: unknown[] }[]
      }
      raw.webhooks = { mode }
      raw.tenants[0]?.issuanceTemplates.push({ id: 'hooked', credentialType: DEGREE_TYPE, ...template })
      return () => parseConfig(raw, 'test.json')
    }
    const secret = generateWebhookSecret()
    assert.throws(
      withTemplate('test', { webhookUrl: 'http://192.168.1.10/hook', webhookSecret: secret }),
      /test\.json is invalid:[\s\S]*\/tenants\/0\/issuanceTemplates\/\d+\/webhookUrl: targets 192\.168\.1\.10, a private address/,
    )
    assert.throws(
      withTemplate('production', { webhookUrl: 'http://localhost:8080/hook', webhookSecret: secret }),
      /issuanceTemplates\/\d+\/webhookUrl: targets localhost, which is loopback/,
    )
    assert.throws(
      withTemplate('production', { webhookUrl: 'https://rp.example/hook' }),
      /issuanceTemplates\/\d+\/webhookSecret: is required with webhookUrl/,
    )
    assert.doesNotThrow(
      withTemplate('test', { webhookUrl: 'http://localhost:8080/hook', webhookSecret: secret }),
    )
    assert.doesNotThrow(
      withTemplate('production', { webhookUrl: 'https://rp.example/hook', webhookSecret: secret }),
    )
  })

  test('the portal refuses a private target in test mode and a loopback one in production (400 invalid_webhook)', async () => {
    const testMode = await start()
    const production = await start({ ...FAST, mode: 'production' })
    const secret = generateWebhookSecret()
    try {
      const post = (h: Harness, kind: TemplateKind, webhook: Record<string, unknown>) =>
        portal(h, 'POST', templatePath(kind), templateBody(kind, `wh-${randomUUID().slice(0, 8)}`, webhook))
      const refused = async (response: LightMyRequestResponse, field: string, reason: RegExp) => {
        assert.equal(response.statusCode, 400, response.body)
        const problem = problemOf(response)
        assert.equal(problem.code, 'invalid_webhook')
        assert.equal(problem.errors?.[0]?.field, field)
        assert.match(problem.errors?.[0]?.message ?? '', reason)
      }
      for (const kind of ['issuance', 'verification'] as const) {
        await refused(
          await post(testMode, kind, { webhookUrl: 'http://10.0.0.7/hook', webhookSecret: secret }),
          'body/webhookUrl',
          /private/,
        )
        await refused(
          await post(testMode, kind, { webhookUrl: 'http://[fe80::1]/hook', webhookSecret: secret }),
          'body/webhookUrl',
          /linkLocal/,
        )
        await refused(
          await post(testMode, kind, { webhookUrl: 'https://rp.example/hook' }),
          'body/webhookSecret',
          /required/,
        )
        for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://[::1]:9/hook']) {
          await refused(
            await post(production, kind, { webhookUrl: url, webhookSecret: secret }),
            'body/webhookUrl',
            /loopback/,
          )
          assert.equal(
            (await post(testMode, kind, { webhookUrl: url, webhookSecret: secret })).statusCode,
            201,
          )
        }
        assert.equal(
          (await post(production, kind, { webhookUrl: 'https://rp.example/hook', webhookSecret: secret }))
            .statusCode,
          201,
        )
      }
      // Replacing a template is checked the same way.
      const id = `wh-${randomUUID().slice(0, 8)}`
      const body = templateBody('issuance', id, {
        webhookUrl: 'https://rp.example/hook',
        webhookSecret: secret,
      })
      assert.equal((await portal(production, 'POST', '/issuance-templates', body)).statusCode, 201)
      const { id: _id, ...replacement } = body
      await refused(
        await portal(production, 'PUT', `/issuance-templates/${id}`, {
          ...replacement,
          webhookUrl: 'http://169.254.169.254/latest',
        }),
        'body/webhookUrl',
        /linkLocal/,
      )
    } finally {
      await testMode.close()
      await production.close()
    }
  })

  test('at connect time, a name that resolves to loopback is refused in production and reaches nothing', async () => {
    const receiver = await WebhookReceiver.start()
    const agents = new DeliveryAgents()
    try {
      const endpoint = receiver.endpoint('connect guard')
      const byName = endpoint.url.replace('127.0.0.1', 'localhost')
      assert.equal(forbiddenUrl(byName, 'test'), undefined)
      const lookup = (policy: 'production' | 'test') =>
        new Promise<{ error: Error | null; address: unknown }>((resolve) =>
          guardedLookup(policy)('localhost', {}, (error, address) => resolve({ error, address })),
        )
      const production = await lookup('production')
      assert.equal(production.error?.name, 'ForbiddenTargetError')
      assert.match(production.error?.message ?? '', /^localhost resolves to 127\.0\.0\.1, a loopback address/)
      assert.equal((await lookup('test')).address, '127.0.0.1')

      const post = (url: string, policy: 'production' | 'test') =>
        postWebhook(url, { 'content-type': 'application/json' }, '{}', { timeoutMs: 2000, policy, agents })
      const byNameRefused = await post(byName, 'production')
      assert.equal(byNameRefused.status, null)
      assert.equal(byNameRefused.forbidden, true)
      assert.match(byNameRefused.error ?? '', /^target refused: localhost resolves to 127\.0\.0\.1/)
      const literalRefused = await post(endpoint.url, 'production')
      assert.equal(literalRefused.forbidden, true)
      assert.match(literalRefused.error ?? '', /^target refused: 127\.0\.0\.1, a loopback address/)
      assert.equal(endpoint.deliveries.length, 0, 'no request reached the receiver')
      assert.deepEqual(receiver.strays, [])
      // The same name is fine in test mode (the receiver answers 400: the request is unsigned).
      assert.equal((await post(byName, 'test')).status, 400)
      assert.equal(endpoint.deliveries.length, 1)
    } finally {
      agents.destroy()
      await receiver.close()
    }
  })

  test('a production dispatcher fails an event whose host resolves to loopback, without retry or request', async () => {
    const h = await start({ ...FAST, mode: 'production' })
    try {
      const secret = generateWebhookSecret()
      const template = `wh-${randomUUID().slice(0, 8)}`
      const created = await portal(
        h,
        'POST',
        '/issuance-templates',
        templateBody('issuance', template, { webhookUrl: 'https://rp.example/hook', webhookSecret: secret }),
      )
      assert.equal(created.statusCode, 201)
      // As if the name had resolved to a public address when saved, and to loopback at delivery time.
      const endpoint = h.receiver.endpoint('rebinding', { secret })
      const [id] = await enqueue(h, 'issuance', template, [`p-${randomUUID()}`], {
        url: endpoint.url.replace('127.0.0.1', 'localhost'),
      })
      const done = await settled(h, id as string)
      assert.equal(done.event.state, 'failed')
      assert.equal(done.attempt.attempt, 1)
      assert.equal(done.attempt.status, null)
      assert.match(done.attempt.error ?? '', /^target refused: localhost resolves to 127\.0\.0\.1/)
      assert.equal(endpoint.deliveries.length, 0)
    } finally {
      await h.close()
    }
  })
})

// --- the portal's delivery log -----------------------------------------------------------------------------

describe('portal: delivery log, one delivery, redelivery', () => {
  let h: Harness
  let endpoint: WebhookEndpoint
  let template: string
  let verificationTemplate: string
  let ids: string[]
  const secrets: string[] = []
  before(async () => {
    h = await start()
    endpoint = h.receiver.endpoint('portal log')
    template = await hookTemplate(h, 'issuance', endpoint)
    const previous = generateWebhookSecret()
    const verificationEndpoint = h.receiver.endpoint('portal verification')
    verificationTemplate = await hookTemplate(h, 'verification', verificationEndpoint, {
      webhookSecret: verificationEndpoint.secret,
      webhookPreviousSecrets: [previous],
    })
    secrets.push(endpoint.secret, verificationEndpoint.secret, previous)
    ids = []
    for (let i = 0; i < 3; i++) {
      const { processId } = await issue(h, template)
      const id = (await eventOf(h, template, processId)).id
      await settled(h, id)
      ids.push(id)
    }
    // A failed one, newest of all.
    endpoint.respondWith({ status: 400 })
    const { processId } = await issue(h, template)
    const failed = (await eventOf(h, template, processId)).id
    await settled(h, failed)
    ids.push(failed)
  })
  after(() => h.close())

  const list = (query = '', path = `/issuance-templates/${template}`, token?: string) =>
    portal(h, 'GET', `${path}/webhook-deliveries${query}`, undefined, token)

  test('the log of a template: newest first, paged with before, filtered by state', async () => {
    const all = await list()
    assert.equal(all.statusCode, 200)
    const body = all.json()
    assert.deepEqual(body.endpoint, {
      url: endpoint.url,
      disabled: false,
      disabledAt: null,
      disabledReason: null,
    })
    assert.deepEqual(
      body.deliveries.map((d: DeliveryView) => d.id),
      [...ids].reverse(),
    )
    const newest = body.deliveries[0] as DeliveryView
    assert.equal(newest.state, 'failed')
    assert.equal(newest.event, 'issuance.issued')
    assert.equal(newest.template, template)
    assert.equal(newest.url, endpoint.url)
    assert.equal(newest.lastStatus, 400)
    assert.equal((newest as { log?: unknown }).log, undefined, 'the list has no attempt log')

    const page1 = (await list('?limit=2')).json().deliveries.map((d: DeliveryView) => d.id)
    assert.deepEqual(page1, [ids[3], ids[2]])
    const page2 = (await list(`?limit=2&before=${page1[1]}`)).json().deliveries.map((d: DeliveryView) => d.id)
    assert.deepEqual(page2, [ids[1], ids[0]])
    assert.deepEqual((await list(`?limit=2&before=${ids[0]}`)).json().deliveries, [])

    const delivered = (await list('?state=delivered')).json().deliveries.map((d: DeliveryView) => d.id)
    assert.deepEqual(delivered, [ids[2], ids[1], ids[0]])
    const failed = (await list('?state=failed')).json().deliveries.map((d: DeliveryView) => d.id)
    assert.deepEqual(failed, [ids[3]])
    assert.deepEqual((await list('?state=disabled')).json().deliveries, [])
  })

  test('bad queries: limit over the maximum, an unknown cursor, an unknown state → 400', async () => {
    const tooMany = await list('?limit=201')
    assert.equal(tooMany.statusCode, 400)
    assert.equal(problemOf(tooMany).errors?.[0]?.field, 'querystring/limit')
    assert.equal((await list('?limit=200')).statusCode, 200)
    const cursor = await list('?before=msg_nope')
    assert.equal(cursor.statusCode, 400)
    assert.equal(problemOf(cursor).code, 'invalid_cursor')
    const state = await list('?state=lost')
    assert.equal(state.statusCode, 400)
    assert.equal(problemOf(state).code, 'validation_failed')
  })

  test('one delivery with its attempts and exact body', async () => {
    const view = await deliveryView(h, ids[0] as string)
    assert.equal(view.id, ids[0])
    assert.equal(view.state, 'delivered')
    assert.equal(view.attempts, 1)
    assert.deepEqual(logOf(view), [[1, 204, 'delivered', 'automatic']])
    const received = endpoint.deliveries.find((d) => d.webhookId === ids[0])
    assert.deepEqual(view.body, received?.json, 'the body exactly as posted')
    const missing = await portal(h, 'GET', '/webhook-deliveries/msg_nope')
    assert.equal(missing.statusCode, 404)
    assert.equal(problemOf(missing).code, 'webhook_delivery_not_found')
  })

  test('redeliver: 202, a new round with the same webhook-id, trigger redelivery; 409 while pending', async () => {
    const id = ids[3] as string // failed with 400
    const accepted = await portal(h, 'POST', `/webhook-deliveries/${id}/redeliver`)
    assert.equal(accepted.statusCode, 202, accepted.body)
    const view = accepted.json<DeliveryView>()
    assert.equal(view.id, id)
    assert.equal(view.state, 'pending')
    assert.equal(view.attempts, 0, 'a new round')
    assert.deepEqual(logOf(view), [[1, 400, 'failed', 'automatic']], 'the earlier round stays in the log')
    const done = await settled(h, id, 2)
    assert.equal(done.event.state, 'delivered')
    const after = await deliveryView(h, id)
    assert.deepEqual(logOf(after), [
      [1, 400, 'failed', 'automatic'],
      [2, 204, 'delivered', 'redelivery'],
    ])
    assert.deepEqual(
      endpoint.deliveries.filter((d) => d.webhookId === id).map((d) => d.answeredStatus),
      [400, 204],
    )

    // While a round is under way (here: waiting an hour on Retry-After) a redelivery is refused.
    endpoint.respondWith({ status: 503, retryAfter: '3600' })
    assert.equal((await portal(h, 'POST', `/webhook-deliveries/${ids[0]}/redeliver`)).statusCode, 202)
    await untilAttempt(
      h,
      'the redelivery to be answered 503',
      (r) => r.event.id === ids[0] && r.attempt.status === 503,
    )
    const busy = await portal(h, 'POST', `/webhook-deliveries/${ids[0]}/redeliver`)
    assert.equal(busy.statusCode, 409)
    assert.equal(problemOf(busy).code, 'conflict')
    assert.equal((await deliveryView(h, ids[0] as string)).state, 'pending')
  })

  test("another tenant's administrator sees none of it (404)", async () => {
    const other = await tokenFor(h.app, OTHER.admin)
    for (const [method, url] of [
      ['GET', `/webhook-deliveries/${ids[0]}`],
      ['POST', `/webhook-deliveries/${ids[1]}/redeliver`],
    ] as const) {
      const response = await portal(h, method, url, undefined, other)
      assert.equal(response.statusCode, 404, url)
      assert.equal(problemOf(response).code, 'webhook_delivery_not_found')
    }
    for (const path of [
      `/issuance-templates/${template}`,
      `/verification-templates/${verificationTemplate}`,
    ]) {
      const response = await list('', path, other)
      assert.equal(response.statusCode, 404, path)
      assert.equal(problemOf(response).code, 'template_not_found')
    }
    // The other tenant's own "degree" template has no deliveries, and a demo cursor means nothing there.
    assert.deepEqual((await list('', '/issuance-templates/degree', other)).json().deliveries, [])
    const cursor = await list(`?before=${ids[0]}`, '/issuance-templates/degree', other)
    assert.equal(problemOf(cursor).code, 'invalid_cursor')
  })

  test('an application key may not use the delivery log (403 role_forbidden)', async () => {
    const app = await tokenFor(h.app, WIDE_APP)
    for (const [method, url] of [
      ['GET', `/issuance-templates/${template}/webhook-deliveries`],
      ['GET', `/webhook-deliveries/${ids[0]}`],
      ['POST', `/webhook-deliveries/${ids[1]}/redeliver`],
    ] as const) {
      const response = await portal(h, method, url, undefined, app)
      assert.equal(response.statusCode, 403, url)
      assert.equal(problemOf(response).code, 'role_forbidden')
    }
  })

  test('webhook secrets appear in no portal answer', async () => {
    const who = await degreeHolder(h)
    const s = await verify(h, verificationTemplate, who)
    const vid = (await eventOf(h, verificationTemplate, s.id)).id
    await settled(h, vid)
    const answers = [
      await portal(h, 'GET', '/issuance-templates'),
      await portal(h, 'GET', `/issuance-templates/${template}`),
      await portal(h, 'GET', '/verification-templates'),
      await portal(h, 'GET', `/verification-templates/${verificationTemplate}`),
      await list(),
      await list('', `/verification-templates/${verificationTemplate}`),
      await portal(h, 'GET', `/webhook-deliveries/${ids[1]}`),
      await portal(h, 'GET', `/webhook-deliveries/${vid}`),
      await portal(h, 'POST', `/webhook-deliveries/${vid}/redeliver`),
    ]
    for (const answer of answers) {
      assert.ok(answer.statusCode < 300, answer.body)
      for (const secret of secrets) {
        assert.ok(!answer.body.includes(secret), `a secret in ${answer.body.slice(0, 120)}`)
        assert.ok(!answer.body.includes(secret.slice('whsec_'.length)))
      }
      assert.ok(!/webhook(Previous)?Secrets?"/.test(answer.body), answer.body.slice(0, 200))
    }
    assert.equal(
      (await portal(h, 'GET', `/verification-templates/${verificationTemplate}`)).json().hasWebhookSecret,
      true,
    )
  })
})
