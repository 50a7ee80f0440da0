// "Use a wallet on this device": the QR page's Digital Credentials API path (OpenID4VP 1.0 Appendix A) in a real
// Chromium (Debian's, through playwright-core; skipped cleanly without it). The service runs the demo relying
// party with the demo's dcql template `pid-check`, whose `dcql.dcApi` asks for a signed request (config/demo.json),
// and two variants of it (unsigned, multi-signed). A test credential provider stands in for the platform's
// wallet selection: an init script gives the page `DigitalCredential` (where the browser lacks it) and replaces
// `navigator.credentials.get` so that a `{digital}` request goes, with the page's real `location.origin`, to our
// simulated wallet in Node (`page.exposeFunction`), whose answer comes back as a DigitalCredential-shaped
// `{protocol, data}`. Everything else is the real page: the component's feature test and button, the request
// entry from the backend, the POST of the answer with the browser's own Origin header, the service's checks
// (the origin binding among them) and the flow's state over the WebSocket. Screenshots: reports/screenshots/dc-api-*.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { ok, parseCredentialOfferUri, RelyingPartyClient, type SessionRead } from '../../src/client/index.ts'
import { DEMO_CONFIG_PATH, parseConfig, type ServiceConfig } from '../../src/service/config/index.ts'
import { systemClock } from '../../src/service/util/clock.ts'
import type { DcApiRequest, DcApiResponse } from '../../src/shared/dc-api.ts'
import {
  dcApiErrorResponse,
  isDcApiRefusal,
  type PresentationMisbehaviour,
  Wallet,
} from '../../src/wallet/index.ts'
import type { PageState } from '../../src/web/flow-state.ts'
import type { DcApiDetail } from '../../src/web/vc-flow-qr.ts'
import {
  BROWSER_SKIP,
  CHROMIUM_PATH,
  DCQL_TEMPLATES,
  type DemoServer,
  decodeQr,
  screenshotPath,
  secretsOf,
  startDemoServer,
  watchPage,
} from '../browser-helpers.ts'

const STATE_TIMEOUT_MS = 10_000
const TEST_TIMEOUT_MS = 30_000
const VERIFY_TEMPLATE = DCQL_TEMPLATES.verify
/** The DC API request entry may carry a signed request object (a JWS), nothing else shaped like a JWT. */
const ENTRY_ANSWER = /\/dc-api \(200\)$/

type RequestType = 'signed' | 'unsigned' | 'multisigned'

/**
 * A demo server for one request type (or the mdoc pair, `mdl` / `mdl-check`, signed as config/demo.json has
 * it), its wallet (holding the credential that server issued), and its 4.7 reader.
 */
interface Setup {
  demo: DemoServer
  wallet: Wallet
  readSession(id: string): Promise<SessionRead>
}

let browser: Browser
const setups = {} as Record<RequestType | 'mdoc', Setup>

const MDOC_TEMPLATES = { issue: 'mdl', verify: 'mdl-check' } as const
const NS = 'org.iso.18013.5.1'
/** The mDL content mdl-check asks for (the demo's own sample content has none of its elements). */
const LICENCE = [
  {
    type: ['VerifiableCredential', `${NS}.mDL`],
    credentialSubject: { [NS]: { family_name: 'Lovelace', given_name: 'Ada', age_over_18: true } },
  },
]

/** config/demo.json with `pid-check`'s `dcql.dcApi.request` set (signed is the file's own). */
function configWith(request: RequestType): ServiceConfig {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const template = raw.tenants[0].verificationTemplates.find((t: { id: string }) => t.id === VERIFY_TEMPLATE)
  assert.equal(
    template?.dcql?.dcApi?.request,
    'signed',
    `config/demo.json: ${VERIFY_TEMPLATE} has no signed dcApi`,
  )
  template.dcql.dcApi.request = request
  return parseConfig(raw)
}

async function setUp(request: RequestType): Promise<Setup> {
  const config = configWith(request)
  const demo = await startDemoServer(systemClock, { config, templates: DCQL_TEMPLATES })
  const wallet = await Wallet.create()
  const offer = await demo.demo.backend.openIssuance()
  assert.equal((await wallet.receive(offer.link)).status, 'issued')
  return { demo, wallet, readSession: sessionReader(demo, VERIFY_TEMPLATE) }
}

/** The mdoc pair: a P-256 wallet trusting the tenant's IACA (issuerAuth) and test CA (x509_hash request). */
async function setUpMdoc(): Promise<Setup> {
  const demo = await startDemoServer(systemClock, { templates: MDOC_TEMPLATES })
  const anchors = await Promise.all(
    ['iaca', 'trust-anchor'].map(async (path) => (await fetch(`${demo.url}/oid4vci/demo/${path}`)).text()),
  )
  const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors })
  const { rp, token } = await appToken(demo, MDOC_TEMPLATES.issue)
  const offer = ok(await rp.createOffer(token, MDOC_TEMPLATES.issue), 'offer')
  const { processId } = parseCredentialOfferUri(offer.credential_offer_uri)
  ok(await rp.submitCredentials(token, processId, LICENCE), 'submit')
  assert.equal((await wallet.receive(offer.credential_offer_uri)).status, 'issued')
  return { demo, wallet, readSession: sessionReader(demo, MDOC_TEMPLATES.verify) }
}

async function appToken(demo: DemoServer, template: string) {
  const tenant = demo.config.tenants[0]
  const key = tenant?.apiKeys.find((k) => k.role === 'app' && k.template === template)
  assert.ok(tenant && key, `no application key of ${template}`)
  const rp = new RelyingPartyClient(demo.url)
  return { rp, token: await rp.token({ keyId: key.id, secret: key.secret, tenant: tenant.id }) }
}

const sessionReader = (demo: DemoServer, template: string) => async (id: string) => {
  const { rp, token } = await appToken(demo, template)
  return ok(await rp.readSession(token, id), '4.7') as SessionRead
}

before(async () => {
  if (BROWSER_SKIP) return // every test below is skipped with the reason
  assert.ok(existsSync(CHROMIUM_PATH), `no Chromium at ${CHROMIUM_PATH}`)
  const [launched, signed, unsigned, multisigned, mdoc] = await Promise.all([
    chromium.launch({ executablePath: CHROMIUM_PATH, headless: true }),
    setUp('signed'),
    setUp('unsigned'),
    setUp('multisigned'),
    setUpMdoc(),
  ])
  browser = launched
  Object.assign(setups, { signed, unsigned, multisigned, mdoc })
})

after(async () => {
  await browser?.close()
  await Promise.all(Object.values(setups).map((s) => s.demo.close()))
})

/** What the test provider saw of one `navigator.credentials.get` call. */
interface ProviderCall {
  requests: DcApiRequest[]
  origin: string
  response?: DcApiResponse
}

/**
 * How the test provider answers: our wallet (with misbehaviours; `platformOrigin` plays a platform that
 * reports another origin than the page's, as for a request replayed from elsewhere), or a rejection of the
 * browser's promise with a DOMException of that name (the user closed the wallet selection: NotAllowedError).
 */
type Provider =
  | { wallet: Wallet; misbehave?: PresentationMisbehaviour[]; platformOrigin?: string }
  | { reject: string }

/**
 * Installs the test credential provider in every page of `context`: `DigitalCredential` if the browser has
 * none, and `navigator.credentials.get` handing a `{digital}` request and `location.origin` to Node. The
 * n-th call answers as the n-th provider given (the last one answers every further call).
 */
async function installProvider(context: BrowserContext, ...providers: Provider[]): Promise<ProviderCall[]> {
  const calls: ProviderCall[] = []
  await context.exposeFunction('vcHarnessDcApi', async (requests: DcApiRequest[], origin: string) => {
    const call: ProviderCall = { requests, origin }
    const provider = providers[Math.min(calls.length, providers.length - 1)] as Provider
    calls.push(call)
    if ('reject' in provider) return { reject: provider.reject }
    const request = requests[0] as DcApiRequest
    try {
      const { response } = await provider.wallet.presentDcApi(
        { request, origin: provider.platformOrigin ?? origin },
        { misbehave: provider.misbehave ?? [] },
      )
      call.response = response
    } catch (error) {
      // A refusal of the wallet is still an answer (Appendix A.4): {error, error_description} as data.
      if (!isDcApiRefusal(error)) throw error
      call.response = dcApiErrorResponse(request, error)
    }
    return { protocol: call.response.protocol, data: call.response.data }
  })
  await context.addInitScript(() => {
    type Answer = { protocol: string; data: object } | { reject: string }
    const w = window as unknown as {
      DigitalCredential?: unknown
      vcHarnessDcApi: (requests: unknown[], origin: string) => Promise<Answer>
    }
    if (!('DigitalCredential' in window)) {
      w.DigitalCredential = class DigitalCredential {}
    }
    const DigitalCredential = w.DigitalCredential as { prototype: object }
    const browserGet = navigator.credentials.get.bind(navigator.credentials)
    navigator.credentials.get = async (options?: CredentialRequestOptions) => {
      const digital = (options as { digital?: { requests?: unknown[] } } | undefined)?.digital
      if (!digital) return browserGet(options)
      options?.signal?.throwIfAborted()
      const answer = await w.vcHarnessDcApi(digital.requests ?? [], location.origin)
      if ('reject' in answer) throw new DOMException('The wallet selection was closed.', answer.reject)
      options?.signal?.throwIfAborted()
      // The DigitalCredential shape: its prototype, type "digital", protocol and data.
      return Object.defineProperties(Object.create(DigitalCredential.prototype), {
        id: { value: '', enumerable: true },
        type: { value: 'digital', enumerable: true },
        protocol: { value: answer.protocol, enumerable: true },
        data: { value: answer.data, enumerable: true },
      }) as Credential
    }
  })
  return calls
}

/** Opens the verify page with `setup`'s demo; records the states and DC API events the component announces. */
async function openVerify(context: BrowserContext, setup: Setup) {
  const page = await context.newPage()
  const watch = watchPage(page)
  await page.addInitScript(() => {
    const seen = { states: [] as string[], dcApi: [] as unknown[] }
    ;(window as unknown as { seen: typeof seen }).seen = seen
    document.addEventListener('vc-flow-state', (e) => seen.states.push((e as CustomEvent).detail.state))
    document.addEventListener('vc-flow-dc-api', (e) => seen.dcApi.push((e as CustomEvent).detail))
  })
  await page.goto(`${setup.demo.url}/demo/verify`)
  await waitForState(page, 'waiting')
  await page.waitForSelector('vc-flow-qr[active-transport="websocket"]', {
    state: 'attached',
    timeout: STATE_TIMEOUT_MS,
  })
  return { page, watch }
}

const waitForState = (page: Page, state: PageState) =>
  page.waitForSelector(`vc-flow-qr[state="${state}"]`, { state: 'attached', timeout: STATE_TIMEOUT_MS })

const seen = (page: Page) =>
  page.evaluate(() => (window as unknown as { seen: { states: string[]; dcApi: DcApiDetail[] } }).seen)

const shot = (page: Page, name: string) => page.screenshot({ path: screenshotPath(name), fullPage: true })

const flowId = async (page: Page) => {
  const id = await page.evaluate(() => document.querySelector('vc-flow-qr')?.flow?.id)
  assert.ok(id, 'the page shows no flow')
  return id
}

async function withContext(run: (context: BrowserContext) => Promise<void>) {
  const context = await browser.newContext({ viewport: { width: 720, height: 1000 } })
  try {
    await run(context)
  } finally {
    await context.close()
  }
}

/** The claims and failed checks the page shows of a finished verification. */
async function outcomeShown(page: Page) {
  const qr = page.locator('vc-flow-qr')
  return {
    checks: await qr.locator('[part="failed-checks"] [part="check"]').allTextContents(),
    failed: await qr.locator('[part="failed-checks"] li').allTextContents(),
    claims: await qr.locator('[part="shared"] [part="claims"] li').allTextContents(),
  }
}

/** The page's origin, the one the browser reports: the demo's public URL (expectedOrigins' default). */
const originOf = (setup: Setup) => new URL(setup.demo.url).origin

/** Click "Use a wallet on this device" and follow the flow to `final`; returns the provider's one call. */
async function presentOnThisDevice(page: Page, calls: ProviderCall[], final: PageState) {
  const button = page.locator('vc-flow-qr [part="dc-api"]')
  assert.equal(await button.textContent(), 'Use a wallet on this device')
  await button.click()
  await waitForState(page, final)
  assert.equal(calls.length, 1, 'navigator.credentials.get was called once')
  return calls[0] as ProviderCall
}

describe('the QR page over the Digital Credentials API, in Chromium', {
  timeout: 120_000,
  skip: BROWSER_SKIP,
}, () => {
  test('signed (config/demo.json): the button above the QR code; the wallet on this device answers; verified', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const setup = setups.signed
    await withContext(async (context) => {
      const calls = await installProvider(context, { wallet: setup.wallet })
      const { page, watch } = await openVerify(context, setup)
      const qr = page.locator('vc-flow-qr')
      assert.ok(await qr.locator('[part="dc-api"]').isVisible(), 'no "Use a wallet on this device" button')
      assert.equal(await qr.getAttribute('dc-api-offered'), '')
      // The QR code stays as the fallback, below the button.
      assert.match(decodeQr(await qr.locator('[part="qr"]').screenshot()), /^openid4vp:\/\/\?client_id=/)
      const [buttonBox, qrBox] = [
        await qr.locator('[part="dc-api"]').boundingBox(),
        await qr.locator('[part="qr"]').boundingBox(),
      ]
      assert.ok(
        buttonBox && qrBox && buttonBox.y + buttonBox.height <= qrBox.y,
        'the button is not above the QR code',
      )
      assert.deepEqual(await page.evaluate(() => document.querySelector('vc-flow-qr')?.flow?.dcApi), {
        protocol: 'openid4vp-v1-signed',
        expectedOrigins: [originOf(setup)],
      })
      await shot(page, 'dc-api-waiting')

      const call = await presentOnThisDevice(page, calls, 'verified')
      await shot(page, 'dc-api-verified')
      // What the page handed the API: one entry of the signed protocol, a compact JWS request; and the origin.
      assert.equal(call.origin, originOf(setup))
      assert.equal(call.requests.length, 1)
      const entry = call.requests[0] as DcApiRequest
      assert.equal(entry.protocol, 'openid4vp-v1-signed')
      assert.deepEqual(Object.keys(entry.data), ['request'])
      assert.match(String(entry.data.request), /^[\w-]+\.[\w-]+\.[\w-]+$/)
      assert.equal(call.response?.protocol, 'openid4vp-v1-signed')
      // dc_api.jwt (the template's direct_post.jwt over the API): the answer is a JWE in `response`.
      assert.deepEqual(Object.keys(call.response?.data ?? {}), ['response'])
      assert.match(String(call.response?.data.response), /^[\w-]+\.[\w-]*\.[\w-]+\.[\w-]+\.[\w-]+$/)

      const id = await flowId(page)
      const session = await setup.readSession(id)
      assert.equal(session.Status, 'VERIFIED')
      assert.ok(session.RequestedAt, '4.7 has no RequestedAt: the entry was not counted as the request fetch')
      assert.deepEqual(
        session.Validations?.checks.filter((c) => c.result === 'failed'),
        [],
        'failed checks of a verified session',
      )
      assert.deepEqual((await outcomeShown(page)).claims, ['familyName: Doe'])
      const { states, dcApi } = await seen(page)
      assert.deepEqual(states, ['loading', 'waiting', 'scanned', 'verified'])
      assert.deepEqual(
        dcApi.map((d) => [d.phase, d.flowId, d.protocol]),
        [
          ['asking', id, 'openid4vp-v1-signed'],
          ['sent', id, 'openid4vp-v1-signed'],
        ],
      )
      assert.ok(!(await qr.locator('[part="dc-api"]').isVisible()), 'the button is still shown when done')
      assert.equal(await qr.getAttribute('dc-api-offered'), null)
      await watch.check(secretsOf(setup.demo.config), { requestObjectsIn: ENTRY_ANSWER })
    })
  })

  for (const request of ['unsigned', 'multisigned'] as const) {
    test(`${request}: the entry of openid4vp-v1-${request} reaches the wallet; verified`, {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const setup = setups[request]
      await withContext(async (context) => {
        const calls = await installProvider(context, { wallet: setup.wallet })
        const { page, watch } = await openVerify(context, setup)
        const call = await presentOnThisDevice(page, calls, 'verified')
        const entry = call.requests[0] as DcApiRequest
        assert.equal(entry.protocol, `openid4vp-v1-${request}`)
        if (request === 'unsigned') {
          // Appendix A.3.1: the parameters themselves, without client_id.
          assert.equal(entry.data.client_id, undefined)
          assert.equal(typeof entry.data.nonce, 'string')
          assert.ok(entry.data.dcql_query, 'no dcql_query in the unsigned request')
        } else {
          // Appendix A.3.2: a JWS JSON Serialization, one signature per client identifier.
          const jws = entry.data.request as { payload?: unknown; signatures?: unknown[] }
          assert.equal(typeof jws.payload, 'string')
          assert.ok(Array.isArray(jws.signatures) && jws.signatures.length >= 1)
        }
        assert.equal((await setup.readSession(await flowId(page))).Status, 'VERIFIED')
        assert.deepEqual((await outcomeShown(page)).claims, ['familyName: Doe'])
        await shot(page, `dc-api-${request}-verified`)
        await watch.check(secretsOf(setup.demo.config), { requestObjectsIn: ENTRY_ANSWER })
      })
    })
  }

  test('an ISO mdoc (config/demo.json mdl-check, signed, x509_hash): the DeviceResponse bound to the origin; verified', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const setup = setups.mdoc
    await withContext(async (context) => {
      const calls = await installProvider(context, { wallet: setup.wallet })
      const { page, watch } = await openVerify(context, setup)
      assert.equal(
        (await page.evaluate(() => document.querySelector('vc-flow-qr')?.flow?.dcApi))?.protocol,
        'openid4vp-v1-signed',
      )
      const call = await presentOnThisDevice(page, calls, 'verified')
      assert.equal(call.origin, originOf(setup))
      assert.equal(call.requests[0]?.protocol, 'openid4vp-v1-signed')
      await shot(page, 'dc-api-mdoc-verified')
      assert.equal((await setup.readSession(await flowId(page))).Status, 'VERIFIED')
      const claims = (await outcomeShown(page)).claims
      assert.ok(claims.includes(`${NS}.family_name: Lovelace`), claims.join('; '))
      assert.ok(claims.includes(`${NS}.age_over_18: true`), claims.join('; '))
      await watch.check(secretsOf(setup.demo.config), { requestObjectsIn: ENTRY_ANSWER })
    })
  })

  test('an answer bound to another origin (dc-api-foreign-origin): rejected, sessionBinding shown', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const setup = setups.signed
    await withContext(async (context) => {
      const calls = await installProvider(context, {
        wallet: setup.wallet,
        misbehave: ['dc-api-foreign-origin'],
      })
      const { page, watch } = await openVerify(context, setup)
      const call = await presentOnThisDevice(page, calls, 'rejected')
      await shot(page, 'dc-api-rejected')
      // The browser reported the page's origin; the wallet bound its answer to the attacker's.
      assert.equal(call.origin, originOf(setup))
      const shown = await outcomeShown(page)
      assert.ok(shown.checks.includes('sessionBinding'), `failed checks shown: ${shown.checks.join(', ')}`)
      const binding = shown.failed.find((line) => line.startsWith('sessionBinding: ')) ?? ''
      assert.match(
        binding,
        /origin:https:\/\/attacker\.example/,
        'the message does not name the foreign origin',
      )
      assert.deepEqual(shown.claims, [])
      assert.ok(await page.locator('vc-flow-qr [part="refresh"]').isVisible(), 'no refresh button')
      const session = await setup.readSession(await flowId(page))
      assert.equal(session.Status, 'REJECTED')
      assert.ok(
        session.Validations?.checks.some((c) => c.check === 'sessionBinding' && c.result === 'failed'),
        'the 4.7 session has no failed sessionBinding',
      )
      assert.deepEqual(
        (await seen(page)).dcApi.map((d) => d.phase),
        ['asking', 'sent'],
        'a rejected answer is still an answer the backend took',
      )
      await watch.check(secretsOf(setup.demo.config), { requestObjectsIn: ENTRY_ANSWER })
    })
  })

  test('the wallet declines (access-denied) or refuses (another origin than expected_origins): its error answer is posted; rejected', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const setup = setups.signed
    const cases: { provider: Provider; error: string }[] = [
      { provider: { wallet: setup.wallet, misbehave: ['access-denied'] }, error: 'access_denied' },
      {
        provider: { wallet: setup.wallet, platformOrigin: 'https://attacker.example' },
        error: 'invalid_request',
      },
    ]
    for (const { provider, error } of cases) {
      await withContext(async (context) => {
        const calls = await installProvider(context, provider)
        const { page, watch } = await openVerify(context, setup)
        const call = await presentOnThisDevice(page, calls, 'rejected')
        // Appendix A.4: an error is still a fulfilled promise, its data {error, error_description}.
        assert.equal(call.response?.data.error, error)
        const session = await setup.readSession(await flowId(page))
        assert.equal(session.Status, 'REJECTED')
        const failed = session.Validations?.checks.filter((c) => c.result === 'failed') ?? []
        assert.ok(failed.length > 0, 'a rejected session without a failed check')
        assert.deepEqual(
          (await outcomeShown(page)).checks,
          failed.map((c) => c.check),
          'the page shows the failed checks of 4.7',
        )
        assert.ok(
          failed.some((c) => c.message.includes(error)),
          JSON.stringify(failed),
        )
        if (error === 'invalid_request') await shot(page, 'dc-api-wallet-refused')
        await watch.check(secretsOf(setup.demo.config), { requestObjectsIn: ENTRY_ANSWER })
      })
    }
  })

  test('the user closes the wallet selection (NotAllowedError): a short message, the QR code stays; dc-api="off" hides the button; trying again works', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const setup = setups.signed
    await withContext(async (context) => {
      const calls = await installProvider(context, { reject: 'NotAllowedError' }, { wallet: setup.wallet })
      const { page, watch } = await openVerify(context, setup)
      const qr = page.locator('vc-flow-qr')
      await qr.locator('[part="dc-api"]').click()
      await page.waitForFunction(
        () =>
          (window as unknown as { seen: { dcApi: { phase: string }[] } }).seen.dcApi.some(
            (d) => d.phase === 'cancelled',
          ),
        undefined,
        { timeout: STATE_TIMEOUT_MS },
      )
      assert.equal(calls.length, 1)
      assert.match((await qr.locator('[part="dc-api-status"]').textContent()) ?? '', /cancelled/)
      assert.ok(await qr.locator('[part="dc-api-status"]').isVisible())
      // The flow goes on: the backend fetched the request (scanned), the QR code and the button stay.
      await waitForState(page, 'scanned')
      assert.ok(await qr.locator('[part="qr"]').isVisible(), 'the QR code is gone')
      // Scanned by the page's own fetch, answered by no one: the QR code is not dimmed, the status points to it.
      assert.equal(await qr.locator('[part="qr"]').evaluate((c) => getComputedStyle(c).opacity), '1')
      assert.match(
        (await qr.locator('[part="status"]').textContent()) ?? '',
        /^Waiting for a wallet: scan the QR code/,
      )
      await shot(page, 'dc-api-cancelled')
      assert.ok(await qr.locator('[part="dc-api"]').isEnabled(), 'the button stays disabled')
      const { dcApi } = await seen(page)
      assert.deepEqual(
        dcApi.map((d) => [d.phase, d.reason]),
        [
          ['asking', undefined],
          ['cancelled', 'NotAllowedError'],
        ],
      )

      await page.evaluate(() => document.querySelector('vc-flow-qr')?.setAttribute('dc-api', 'off'))
      assert.ok(!(await qr.locator('[part="dc-api"]').isVisible()), 'dc-api="off" still shows the button')
      assert.equal(await qr.getAttribute('dc-api-offered'), null)
      await page.evaluate(() => document.querySelector('vc-flow-qr')?.setAttribute('dc-api', 'auto'))
      assert.ok(await qr.locator('[part="dc-api"]').isVisible())
      // Try again: a new request entry from the backend, the wallet answers this time.
      await qr.locator('[part="dc-api"]').click()
      await waitForState(page, 'verified')
      assert.equal(calls.length, 2)
      assert.equal((await setup.readSession(await flowId(page))).Status, 'VERIFIED')
      await watch.check(secretsOf(setup.demo.config), { requestObjectsIn: ENTRY_ANSWER })
    })
  })

  test('a browser without the API: no button, the QR code, which a wallet still answers', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const setup = setups.signed
    await withContext(async (context) => {
      // As in a browser that has no Digital Credentials API (no DigitalCredential; WebAuthn's get remains).
      await context.addInitScript(() => {
        delete (window as { DigitalCredential?: unknown }).DigitalCredential
      })
      const { page, watch } = await openVerify(context, setup)
      const qr = page.locator('vc-flow-qr')
      assert.equal(await page.evaluate(() => 'DigitalCredential' in window), false)
      assert.equal(await page.evaluate(() => typeof navigator.credentials?.get), 'function')
      assert.ok(!(await qr.locator('[part="dc-api"]').isVisible()), 'the button is offered without the API')
      assert.equal(await qr.getAttribute('dc-api-offered'), null)
      const link = decodeQr(await qr.locator('[part="qr"]').screenshot())
      await shot(page, 'dc-api-unavailable')
      assert.equal((await setup.wallet.present(link)).status, 'verified')
      await waitForState(page, 'verified')
      await watch.check(secretsOf(setup.demo.config))
    })
  })

  test("Chromium's own API, no provider: the button is offered; a new flow aborts the pending request cleanly", {
    timeout: TEST_TIMEOUT_MS,
  }, async (t) => {
    const setup = setups.signed
    await withContext(async (context) => {
      const { page, watch } = await openVerify(context, setup)
      if (!(await page.evaluate(() => 'DigitalCredential' in window))) {
        t.skip('this Chromium has no Digital Credentials API of its own')
        return
      }
      const qr = page.locator('vc-flow-qr')
      assert.ok(await qr.locator('[part="dc-api"]').isVisible())
      const first = await flowId(page)
      await qr.locator('[part="dc-api"]').click()
      await page.waitForFunction(
        () => (window as unknown as { seen: { dcApi: { phase: string }[] } }).seen.dcApi.length > 0,
        undefined,
        { timeout: STATE_TIMEOUT_MS },
      )
      // Headless Chromium has no platform wallet: its get() waits (or refuses). A new flow stops waiting.
      await page.evaluate(() => document.querySelector('vc-flow-qr')?.refresh())
      await waitForState(page, 'waiting')
      assert.notEqual(await flowId(page), first)
      assert.ok(await qr.locator('[part="dc-api"]').isEnabled(), "the new flow's button is disabled")
      await watch.check(secretsOf(setup.demo.config), { requestObjectsIn: ENTRY_ANSWER })
    })
  })
})
