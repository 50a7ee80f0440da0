// The relying party's QR page in a real browser (Debian Chromium through playwright-core, never downloaded):
// the service with the demo relying party (src/demo/) on a real port, a ShiftedClock to expire flows, the
// simulated wallet scanning what the page shows. Every assertion on the page waits for the component to
// update by itself (its `state` attribute), bounded by STATE_TIMEOUT_MS. Screenshots of every state go to
// reports/screenshots/. One browser for the file, a new context per test. A second demo server runs the demo's
// OpenID4VP 1.0 templates (dcql profile), answered by an independent wallet (OwfDcqlWallet).
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { ok, parseCredentialOfferUri, RelyingPartyClient } from '../../src/client/index.ts'
import { sampleCredentials } from '../../src/harness/sandbox.ts'
import { ShiftedClock } from '../../src/service/util/clock.ts'
import { Wallet, WalletProtocolError } from '../../src/wallet/index.ts'
import type { PageState } from '../../src/web/flow-state.ts'
import {
  assertNoSecrets,
  BROWSER_SKIP,
  CHROMIUM_PATH,
  DCQL_TEMPLATES,
  type DemoServer,
  decodeQr,
  OwfDcqlWallet,
  screenshotPath,
  secretsOf,
  startDemoServer,
  watchPage,
} from '../browser-helpers.ts'
import { DEMO } from '../helpers.ts'

const STATE_TIMEOUT_MS = 10_000
const TEST_TIMEOUT_MS = 30_000
/** Past the offer's pre-authorized code lifetime and the session lifetime (both 600 s in the demo). */
const PAST_LIFETIMES_MS = 660_000

const clock = new ShiftedClock()
let demo: DemoServer
/** The demo with `--issue pid-sd-jwt --verify pid-check`: a dc+sd-jwt VerifiableId and a dcql session. */
let dcql: DemoServer
let browser: Browser
let secrets: string[]
/** A wallet holding a UniversityDegreeCredential, issued straight through the API (not through a page). */
let holder: Wallet

before(async () => {
  if (BROWSER_SKIP) return // every test below is skipped with the reason
  assert.ok(
    existsSync(CHROMIUM_PATH),
    `no Chromium at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`,
  )
  ;[demo, dcql, browser, holder] = await Promise.all([
    startDemoServer(clock),
    startDemoServer(clock, { templates: DCQL_TEMPLATES }),
    chromium.launch({ executablePath: CHROMIUM_PATH, headless: true }),
    Wallet.create(),
  ])
  secrets = secretsOf(demo.config)
  const rp = new RelyingPartyClient(demo.url)
  const token = await rp.token({ keyId: DEMO.app.id, secret: DEMO.app.secret, tenant: DEMO.app.tenant })
  const offer = ok(await rp.createOffer(token, 'degree'), 'offer')
  const { processId } = parseCredentialOfferUri(offer.credential_offer_uri)
  ok(await rp.submitCredentials(token, processId, sampleCredentials('UniversityDegreeCredential')), 'submit')
  assert.equal((await holder.receive(offer.credential_offer_uri)).status, 'issued')
})

after(async () => {
  await browser?.close()
  await demo?.close()
  await dcql?.close()
})

/** A fresh browser context per test; closed (sockets and all) when the test ends. */
async function withContext(run: (context: BrowserContext) => Promise<void>) {
  const context = await browser.newContext({ viewport: { width: 720, height: 900 } })
  try {
    await run(context)
  } finally {
    await context.close()
  }
}

/**
 * Opens a demo page, records the states the component announces, and waits for its first QR code and for
 * its updates to be live (`active-transport` is set once the socket delivered the stream's snapshot, or
 * when polling started): a wallet scanning earlier could not be missed by polling, but by a socket not yet
 * subscribed.
 */
async function openPage(context: BrowserContext, path: string, transport = 'websocket', server = demo) {
  const page = await context.newPage()
  const watch = watchPage(page)
  await page.addInitScript(() => {
    const states: string[] = []
    ;(window as unknown as { vcStates: string[] }).vcStates = states
    document.addEventListener('vc-flow-state', (event) => {
      states.push((event as CustomEvent<{ state: string }>).detail.state)
    })
  })
  await page.goto(`${server.url}${path}`)
  await waitForState(page, 'waiting')
  await page.waitForSelector(`vc-flow-qr[active-transport="${transport}"]`, {
    state: 'attached',
    timeout: STATE_TIMEOUT_MS,
  })
  return { page, watch }
}

function waitForState(page: Page, state: PageState) {
  return page.waitForSelector(`vc-flow-qr[state="${state}"]`, {
    state: 'attached',
    timeout: STATE_TIMEOUT_MS,
  })
}

/** What the page's QR code says, read from a screenshot of the canvas. */
async function scanQr(page: Page): Promise<string> {
  return decodeQr(await page.locator('vc-flow-qr [part="qr"]').screenshot())
}

async function deepLinkHref(page: Page): Promise<string> {
  const href = await page.locator('vc-flow-qr [part="deep-link"]').getAttribute('href')
  assert.ok(href, 'the deep-link button has no href')
  return href
}

/** The deep link as copyable text (the read-only input beside the Copy button). */
async function linkText(page: Page): Promise<string> {
  return page.locator('vc-flow-qr [part="link-text"]').inputValue()
}

/** What the page shows of a finished verification: the failed checks' names, the shared claims' lines. */
async function outcomeShown(page: Page) {
  const qr = page.locator('vc-flow-qr')
  return {
    title: await qr.locator('[part="outcome-title"]').textContent(),
    checks: await qr.locator('[part="failed-checks"] [part="check"]').allTextContents(),
    failed: await qr.locator('[part="failed-checks"] li').allTextContents(),
    credentials: await qr.locator('[part="shared"] [part="credential"]').allTextContents(),
    claims: await qr.locator('[part="shared"] [part="claims"] li').allTextContents(),
  }
}

const shot = (page: Page, name: string) => page.screenshot({ path: screenshotPath(name), fullPage: true })

async function statesSeen(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { vcStates: string[] }).vcStates)
}

describe('the relying-party QR page in Chromium', { timeout: 60_000, skip: BROWSER_SKIP }, () => {
  test('/demo/issue: the QR code carries the offer; the page follows the wallet to issued by itself', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await withContext(async (context) => {
      const { page, watch } = await openPage(context, '/demo/issue')
      await shot(page, 'issuance-waiting')
      const link = await scanQr(page)
      assert.match(link, /^openid-credential-offer:\/\/\?credential_offer_uri=/)
      assert.equal(await deepLinkHref(page), link, 'the same-device button carries the QR content')
      assert.equal(await linkText(page), link, 'the copyable text is the QR content')
      // Copy puts the link on the clipboard (granted to this origin) and says so.
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: demo.url })
      await page.locator('vc-flow-qr [part="copy"]').click()
      await page.waitForFunction(
        () =>
          document.querySelector('vc-flow-qr')?.shadowRoot?.querySelector('[part="copy"]')?.textContent ===
          'Copied',
        undefined,
        { timeout: STATE_TIMEOUT_MS },
      )
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), link)

      const wallet = await Wallet.create()
      await wallet.startIssuance(link) // fetches the offer: the page shows the scan
      await waitForState(page, 'scanned')
      await shot(page, 'issuance-scanned')
      assert.equal((await wallet.receive(link)).status, 'issued')
      await waitForState(page, 'issued')
      await shot(page, 'issuance-issued')

      assert.equal(await page.locator('vc-flow-qr').getAttribute('active-transport'), 'websocket')
      assert.deepEqual(await statesSeen(page), ['loading', 'waiting', 'scanned', 'issued'])
      assert.equal(wallet.credentials().length, 1)
      await watch.check(secrets)
    })
  })

  test('/demo/verify: the wallet presents its degree; the page reaches verified', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await withContext(async (context) => {
      const { page, watch } = await openPage(context, '/demo/verify')
      await shot(page, 'verification-waiting')
      const link = await scanQr(page)
      assert.match(link, /^openid-vp:\/\/\?/)
      // A pe session: the page names its profile and the definition's input descriptor.
      const qr = page.locator('vc-flow-qr')
      assert.equal(await qr.getAttribute('profile'), 'pe')
      assert.equal(
        await qr.locator('[part="profile"]').textContent(),
        'Asks, over OpenID4VP draft 20, Presentation Exchange, for:',
      )
      const descriptors = await qr.locator('[part="requested"] li').allTextContents()
      assert.equal(descriptors.length, 1)
      assert.match(
        descriptors[0] ?? '',
        /^UniversityDegreeCredential; formats jwt, [^;]*jwt_vc_json[^;]*; no claims named$/,
      )
      const presentation = await holder.startPresentation(link) // fetches the request object
      await waitForState(page, 'scanned')
      await shot(page, 'verification-scanned')
      const result = await presentation.respond()
      assert.equal(result.status, 'verified')
      await waitForState(page, 'verified')
      await shot(page, 'verification-verified')
      assert.deepEqual(await statesSeen(page), ['loading', 'waiting', 'scanned', 'verified'])
      // The shared claims, as 4.7 has them, read by the backend when the stream said VERIFIED.
      const shown = await outcomeShown(page)
      assert.equal(shown.title, 'Your wallet shared:')
      assert.deepEqual(shown.checks, [])
      assert.equal(shown.credentials.length, 1)
      assert.match(shown.credentials[0] ?? '', /^UniversityDegreeCredential, issued by did:key:z/)
      assert.deepEqual(shown.claims, [
        'degree.type: BachelorDegree',
        'degree.name: Bachelor of Science and Arts',
      ])
      await watch.check(secrets)
    })
  })

  test('OpenID4VP 1.0 (dcql): an SD-JWT VC issued from /demo/issue, presented to /demo/verify; the page reaches verified', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await withContext(async (context) => {
      const wallet = new OwfDcqlWallet()
      const issue = await openPage(context, '/demo/issue', 'websocket', dcql)
      const offerLink = await scanQr(issue.page)
      assert.match(offerLink, /^openid-credential-offer:\/\/\?credential_offer_uri=/)
      await wallet.receive(offerLink)
      await waitForState(issue.page, 'issued')
      assert.equal(await issue.page.locator('vc-flow-qr').getAttribute('profile'), null)

      const { page, watch } = await openPage(context, '/demo/verify', 'websocket', dcql)
      await shot(page, 'verification-dcql-waiting')
      const link = await scanQr(page)
      assert.match(
        link,
        /^openid4vp:\/\/\?client_id=decentralized_identifier%3Adid%3Akey%3A[^&]+&request_uri=/,
      )
      assert.equal(await deepLinkHref(page), link, 'the same-device button carries the QR content')
      assert.equal(await linkText(page), link, 'the copyable text is the QR content')
      const qr = page.locator('vc-flow-qr')
      assert.equal(await qr.getAttribute('profile'), 'dcql')
      assert.ok(await qr.locator('[part="request"]').isVisible(), 'what the request asks for is not shown')
      assert.equal(await qr.locator('[part="profile"]').textContent(), 'Asks, over OpenID4VP 1.0, DCQL, for:')
      assert.deepEqual(await qr.locator('[part="requested"] li').allTextContents(), [
        `VerifiableId; type ${dcql.url}/oid4vci/demo/vct/VerifiableId; format dc+sd-jwt; claims familyName`,
      ])
      assert.equal(await qr.locator('h2[part="title"]').textContent(), 'Share your VerifiableId')

      const started = await wallet.start(link) // resolves the request: fetches the request object
      await waitForState(page, 'scanned')
      await shot(page, 'verification-dcql-scanned')
      const answered = await started.respond() // direct_post.jwt: the vp_token encrypted to the session's key
      assert.equal(answered.status, 200, answered.body)
      await waitForState(page, 'verified')
      await shot(page, 'verification-dcql-verified')
      assert.ok(!(await qr.locator('[part="request"]').isVisible()), 'the request is still shown when done')
      // Only the disclosed claim is shared (the SD-JWT VC's other claims stay with the wallet).
      const shown = await outcomeShown(page)
      assert.deepEqual(shown.credentials, [
        `${dcql.url}/oid4vci/demo/vct/VerifiableId, issued by ${(shown.credentials[0] ?? '').split(', issued by ')[1]}`,
      ])
      assert.deepEqual(shown.claims, ['familyName: Doe'])
      assert.deepEqual(await statesSeen(page), ['loading', 'waiting', 'scanned', 'verified'])
      assert.equal(await qr.getAttribute('active-transport'), 'websocket')
      await watch.check(secrets)
      await issue.watch.check(secrets)
    })
  })

  test('a presentation with a wrong nonce (vp-wrong-nonce): the page shows rejected and offers a new flow', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await withContext(async (context) => {
      const { page, watch } = await openPage(context, '/demo/verify')
      const link = await scanQr(page)
      await assert.rejects(holder.present(link, { misbehave: ['vp-wrong-nonce'] }), (error: unknown) => {
        assert.ok(error instanceof WalletProtocolError)
        assert.equal(error.error, 'invalid_presentation')
        return true
      })
      await waitForState(page, 'rejected')
      await shot(page, 'verification-rejected')
      assert.ok(await page.locator('vc-flow-qr [part="refresh"]').isVisible(), 'no refresh button')
      // Which check failed and why, as 4.7's Validations has it; no claims of a rejected presentation.
      const shown = await outcomeShown(page)
      assert.deepEqual(shown.checks, ['sessionBinding'])
      assert.match(shown.failed[0] ?? '', /^sessionBinding: .*nonce/)
      assert.equal(shown.title, 'This check failed:')
      assert.deepEqual(shown.claims, [])
      assert.ok(await page.locator('vc-flow-qr [part="outcome"]').isVisible(), 'the failed checks are hidden')
      await watch.check(secrets)
    })
  })

  test('WebSockets blocked: transport="auto" falls back to polling and still reaches verified', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await withContext(async (context) => {
      let blocked = 0
      // Every WebSocket the page opens is closed at once, before any message: the component must poll.
      await context.routeWebSocket(/.*/, (socket) => {
        blocked++
        void socket.close()
      })
      const { page, watch } = await openPage(context, '/demo/verify', 'polling')
      assert.equal(await page.locator('vc-flow-qr').getAttribute('transport'), 'auto')
      assert.ok(blocked >= 1, 'the page never tried a WebSocket')
      const link = await scanQr(page)
      assert.equal((await holder.present(link)).status, 'verified')
      await waitForState(page, 'verified')
      await shot(page, 'verification-verified-polling')
      assert.equal(await page.locator('vc-flow-qr').getAttribute('active-transport'), 'polling')
      // The polling answer carries the outcome too.
      assert.deepEqual((await outcomeShown(page)).claims, [
        'degree.type: BachelorDegree',
        'degree.name: Bachelor of Science and Arts',
      ])
      await watch.check(secrets)
    })
  })

  test('same device: the "Open in wallet" link equals the QR content and completes the flow', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await withContext(async (context) => {
      const { page, watch } = await openPage(context, '/demo/verify')
      const href = await deepLinkHref(page)
      assert.equal(href, await scanQr(page))
      assert.equal(await linkText(page), href)
      assert.equal(await page.locator('vc-flow-qr [part="deep-link"]').textContent(), 'Open in wallet')
      assert.equal((await holder.present(href)).status, 'verified')
      await waitForState(page, 'verified')
      await watch.check(secrets)
    })
  })

  test('expiry: past the offer and session lifetimes both pages show expired; refresh brings a new QR code', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await withContext(async (context) => {
      const issue = await openPage(context, '/demo/issue')
      const verify = await openPage(context, '/demo/verify')
      const before = { issue: await scanQr(issue.page), verify: await scanQr(verify.page) }
      try {
        clock.advance(PAST_LIFETIMES_MS)
        await Promise.all([waitForState(issue.page, 'expired'), waitForState(verify.page, 'expired')])
      } finally {
        clock.reset()
      }
      await shot(issue.page, 'issuance-expired')
      await shot(verify.page, 'verification-expired')
      for (const [name, { page }] of Object.entries({ issue, verify })) {
        assert.ok(
          !(await page.locator('vc-flow-qr [part="qr"]').isVisible()),
          `${name}: an expired QR is shown`,
        )
        await page.locator('vc-flow-qr [part="refresh"]').click()
        await waitForState(page, 'waiting')
        const fresh = await scanQr(page)
        assert.notEqual(fresh, before[name as keyof typeof before], `${name}: refresh kept the old deep link`)
        assert.equal(await deepLinkHref(page), fresh)
        assert.equal(await linkText(page), fresh, `${name}: the copyable text kept the old deep link`)
      }
      // The fresh offer works.
      const wallet = await Wallet.create()
      assert.equal((await wallet.receive(await scanQr(issue.page))).status, 'issued')
      await waitForState(issue.page, 'issued')
      await issue.watch.check(secrets)
      await verify.watch.check(secrets)
    })
  })

  test('security: pages, the bundle and every /demo/api answer hold no API key secret and no token', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const answers: [string, Response][] = []
    const get = async (path: string, init?: RequestInit) => {
      const response = await fetch(`${demo.url}${path}`, init)
      answers.push([`${init?.method ?? 'GET'} ${path}`, response])
      return response
    }
    const post = (path: string, body = '{}') =>
      get(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const issuePage = await get('/demo/issue')
    assert.match(issuePage.headers.get('content-security-policy') ?? '', /script-src 'self'/)
    await get('/demo/verify')
    await get('/demo')
    const script = /src="([^"]+vc-flow-qr\.js\?v=[\w-]+)"/.exec(await issuePage.clone().text())?.[1]
    assert.ok(script, 'the page loads no component bundle')
    const bundle = await get(script)
    assert.equal(bundle.status, 200)
    assert.match(bundle.headers.get('cache-control') ?? '', /immutable/)
    assert.match(bundle.headers.get('etag') ?? '', /^"[\w-]{22}"$/)
    const created = await post('/demo/api/issuance')
    const session = await post('/demo/api/verification')
    const { id: processId } = (await created.clone().json()) as { id: string }
    const { id: sessionId } = (await session.clone().json()) as { id: string }
    await get(`/demo/api/issuance/${processId}`)
    await get(`/demo/api/verification/${sessionId}`)
    await get('/demo/api/verification/00000000-0000-4000-8000-000000000000')
    await post('/demo/api/issuance', '{"template":"x"}')
    for (const [where, response] of answers) {
      assertNoSecrets(where, `${JSON.stringify([...response.headers])}\n${await response.text()}`, secrets)
    }
  })
})
