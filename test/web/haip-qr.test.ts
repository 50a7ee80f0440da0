// The demo's HAIP issuance in a real browser (Debian Chromium through playwright-core): the relying party's QR
// page offers the `pid-haip` template (only the authorization_code grant); our wallet scans it, pushes its
// authorization request (PAR, PKCE, wallet attestation), and the user step is a page a person completes: here
// Chromium opens it, shows what is asked and by whom, and clicks Approve. The browser's redirect to the
// wallet's redirect_uri is caught (the wallet's callback URL is not a real site) and handed back to the
// wallet, which redeems the code with DPoP; the QR page follows the process to issued by itself. Declining
// on the page ends the flow with access_denied and nothing issued.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { type Browser, chromium, type Page } from 'playwright-core'
import { systemClock } from '../../src/service/util/clock.ts'
import { DEFAULT_REDIRECT_URI, Wallet, WalletProtocolError } from '../../src/wallet/index.ts'
import {
  BROWSER_SKIP,
  CHROMIUM_PATH,
  type DemoServer,
  decodeQr,
  screenshotPath,
  startDemoServer,
} from '../browser-helpers.ts'

const STATE_TIMEOUT_MS = 10_000

let demo: DemoServer
let browser: Browser

before(async () => {
  if (BROWSER_SKIP) return
  assert.ok(existsSync(CHROMIUM_PATH), `no Chromium at ${CHROMIUM_PATH}`)
  ;[demo, browser] = await Promise.all([
    startDemoServer(systemClock, { templates: { issue: 'pid-haip', verify: 'pid-check' } }),
    chromium.launch({ executablePath: CHROMIUM_PATH, headless: true }),
  ])
})
after(async () => {
  await browser?.close()
  await demo?.close()
})

const waitForState = (page: Page, state: string) =>
  page.waitForSelector(`vc-flow-qr[state="${state}"]`, { state: 'attached', timeout: STATE_TIMEOUT_MS })

/**
 * A person at the authorization page, played by Chromium: opens the URL the wallet hands over, reads the
 * page, clicks the button, and returns the URL the browser was redirected to (the wallet's redirect_uri).
 */
function personInBrowser(decision: 'approve' | 'decline', seen: { page?: string }) {
  return async (authorizationUrl: string): Promise<string> => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      let redirectedTo = ''
      // The wallet's redirect_uri is not a site: the browser's request to it is the authorization response.
      await page.route(`${new URL(DEFAULT_REDIRECT_URI).origin}/**`, async (route) => {
        redirectedTo = route.request().url()
        await route.fulfill({ status: 200, contentType: 'text/plain', body: 'back to the wallet' })
      })
      await page.goto(authorizationUrl)
      seen.page = (await page.locator('body').textContent()) ?? ''
      await page.screenshot({ path: screenshotPath(`haip-authorization-${decision}`), fullPage: true })
      await page.locator(`#${decision}`).click()
      await page.waitForURL(`${new URL(DEFAULT_REDIRECT_URI).origin}/**`, { timeout: STATE_TIMEOUT_MS })
      assert.ok(redirectedTo, 'the browser was redirected to the wallet')
      return redirectedTo
    } finally {
      await context.close()
    }
  }
}

describe('HAIP issuance from the QR page, the user step in Chromium', {
  timeout: 60_000,
  skip: BROWSER_SKIP,
}, () => {
  test('approve: PAR, the authorization page, the redirect with code/state/iss, DPoP token, the page reaches issued', async () => {
    const context = await browser.newContext({ viewport: { width: 720, height: 900 } })
    try {
      const page = await context.newPage()
      await page.goto(`${demo.url}/demo/issue`)
      await waitForState(page, 'waiting')
      const link = decodeQr(await page.locator('vc-flow-qr [part="qr"]').screenshot())
      assert.match(link, /^openid-credential-offer:\/\/\?credential_offer_uri=/)
      const seen: { page?: string } = {}
      const wallet = await Wallet.create({
        keyType: 'P-256',
        authorization: { userStep: personInBrowser('approve', seen) },
      })
      const result = await wallet.receive(link)
      assert.equal(result.status, 'issued')
      assert.equal(result.session.flow, 'authorization_code')
      // The page said which wallet asks for which credential.
      assert.match(seen.page ?? '', /Verifiable ID \(HAIP\)/)
      assert.match(seen.page ?? '', /vc-harness-wallet-/)
      await waitForState(page, 'issued')
      await page.screenshot({ path: screenshotPath('haip-issued'), fullPage: true })
      assert.equal(wallet.credentials()[0]?.format, 'dc+sd-jwt')
    } finally {
      await context.close()
    }
  })

  test('decline: the wallet is told access_denied (with iss), nothing is issued, the page still waits', async () => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(`${demo.url}/demo/issue`)
      await waitForState(page, 'waiting')
      const link = decodeQr(await page.locator('vc-flow-qr [part="qr"]').screenshot())
      const wallet = await Wallet.create({
        keyType: 'P-256',
        authorization: { userStep: personInBrowser('decline', {}) },
      })
      await assert.rejects(wallet.receive(link), (error: unknown) => {
        assert.ok(error instanceof WalletProtocolError, String(error))
        assert.equal(error.step, 'authorization')
        assert.equal(error.error, 'access_denied')
        return true
      })
      assert.equal(wallet.credentials().length, 0)
      assert.notEqual(await page.locator('vc-flow-qr').getAttribute('state'), 'issued')
    } finally {
      await context.close()
    }
  })
})
