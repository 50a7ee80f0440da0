// The by-hand wallet test page (`serve --sandbox --wallet-plan NAME`, page at <public URL>/wallet-test) in a
// real browser (Debian Chromium through playwright-core, as test/web/vc-flow-qr.test.ts): the plan runs with the
// interactive driver and the page's routes, exactly as the CLI wires them; the page is opened at
// /wallet-test and at /wallet-test/, each case's QR code is decoded from a screenshot, our simulated wallet
// acts on the decoded link, and the verdict must appear on the page by itself. A refused case is ended with
// the page's "Next case" button, which must move the page on to the next case. Screenshots go to
// reports/screenshots/wallet-test-*.png.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Browser, chromium, type Page } from 'playwright-core'
import { interactiveDriver, walletTestPage } from '../../../src/harness/wallet-test/interactive.ts'
import { type Progress, runWalletTest, type WalletTestRun } from '../../../src/harness/wallet-test/runner.ts'
import { Wallet } from '../../../src/wallet/index.ts'
import { BROWSER_SKIP, CHROMIUM_PATH, decodeQr, screenshotPath } from '../../browser-helpers.ts'

/** How long the page may take to show what the run did: it long-polls, so a change shows at once. */
const PAGE_TIMEOUT_MS = 10_000

// Two positive cases (the setup issuance, a valid presentation) and two faults our wallet refuses by sending
// nothing, so a person (here: the test) ends them with "Next case".
const CASES = [
  { id: 'presentation-pe:setup', wallet: 'completes' },
  { id: 'presentation-pe:positive', wallet: 'completes' },
  { id: 'presentation-pe:nonce-missing', wallet: 'refuses' },
  { id: 'presentation-pe:request-expired', wallet: 'refuses' },
] as const

let browser: Browser
const dir = mkdtempSync(join(tmpdir(), 'wallet-test-browser-'))

before(async () => {
  if (BROWSER_SKIP) return // every test below is skipped with the reason
  assert.ok(
    existsSync(CHROMIUM_PATH),
    `no Chromium at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`,
  )
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true })
})

after(async () => {
  await browser?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A page of its own context, with every failed request and script error recorded. */
async function openPage(url: string) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 } })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', (error) => problems.push(`script error: ${error.message}`))
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`)
  })
  await page.goto(url)
  return { page, problems, close: () => context.close() }
}

/** Waits until the page shows case `index` (by itself: nothing reloads it). */
async function waitForCase(page: Page, index: number, id: string) {
  await page.waitForFunction(
    (expected) => document.getElementById('step')?.textContent === expected,
    `Case ${index} of ${CASES.length} · ${id}`,
    { timeout: PAGE_TIMEOUT_MS },
  )
}

/** What the page's QR code says, read from a screenshot of it; checked against the link shown beside it. */
async function scanQr(page: Page): Promise<string> {
  const link = decodeQr(await page.locator('#qr').screenshot())
  assert.equal(await page.locator('#link').textContent(), link, 'the deep link shown is the QR content')
  assert.equal(
    await page.locator('#open').getAttribute('href'),
    link,
    'the open button carries the QR content',
  )
  return link
}

/** Waits for the case's verdict row to appear by itself; its result and reason. */
async function verdictRow(page: Page, id: string) {
  const row = page.locator(`#results tr[data-case="${id}"]`)
  await row.waitFor({ state: 'attached', timeout: PAGE_TIMEOUT_MS })
  const cells = await row.locator('td').allTextContents()
  return { result: cells[2], reason: cells[3] }
}

describe('the by-hand wallet test page in Chromium', { timeout: 120_000, skip: BROWSER_SKIP }, () => {
  test('/wallet-test and /wallet-test/ show each case’s QR code; our wallet acts on it; verdicts appear by themselves; Next case moves on', async () => {
    const terminal: string[] = []
    let ready: (event: Extract<Progress, { kind: 'ready' }>) => void = () => {}
    const started = new Promise<Extract<Progress, { kind: 'ready' }>>((resolve) => {
      ready = resolve
    })
    // A failed assertion stops the run rather than waiting out every case's window.
    const stop = new AbortController()
    const running: Promise<WalletTestRun> = runWalletTest({
      plan: 'presentation-pe',
      only: CASES.map((c) => c.id),
      driver: interactiveDriver((line) => terminal.push(line)),
      configureApp: walletTestPage,
      caseTimeoutMs: 60_000,
      workDir: dir,
      signal: stop.signal,
      onProgress: (event) => {
        if (event.kind === 'ready') ready(event)
      },
    })
    // A harness error would otherwise leave the test waiting for a page that never comes.
    const { pageUrl, trustAnchorFile } = await Promise.race([
      started,
      running.then(() => assert.fail('the run ended before it was ready')),
    ])
    assert.match(pageUrl, /\/wallet-test$/)
    const bare = await openPage(pageUrl)
    const slash = await openPage(`${pageUrl}/`)
    try {
      const wallet = await Wallet.create({ trustAnchors: [readFileSync(trustAnchorFile, 'utf8')] })
      for (const [i, c] of CASES.entries()) {
        await waitForCase(bare.page, i + 1, c.id)
        await waitForCase(slash.page, i + 1, c.id)
        const link = await scanQr(bare.page)
        assert.equal(await scanQr(slash.page), link, '/wallet-test/ shows the same case')
        assert.match(link, i === 0 ? /^openid-credential-offer:\/\// : /^openid-vp:\/\//)
        if (i === 0)
          await bare.page.screenshot({ path: screenshotPath('wallet-test-case-1'), fullPage: true })
        if (c.wallet === 'completes') {
          await wallet.open(link)
        } else {
          await assert.rejects(wallet.open(link), `${c.id}: our wallet refuses`)
          // The wallet shows an error and sends nothing: the person says so on the page.
          await bare.page.locator('#next').click()
        }
        const shown = await verdictRow(bare.page, c.id)
        assert.equal(shown.result, 'PASS', `${c.id}: ${shown.reason}`)
        assert.deepEqual(await verdictRow(slash.page, c.id), shown)
        if (i === 2)
          await bare.page.screenshot({ path: screenshotPath('wallet-test-verdicts'), fullPage: true })
      }
      // The end of the run shows by itself too: the last answer comes before the service closes.
      const run = await running
      assert.equal(run.passed, true, JSON.stringify(run.results.map((r) => r.verdict.reason)))
      for (const { page } of [bare, slash]) {
        await page.locator('#done').waitFor({ state: 'visible', timeout: PAGE_TIMEOUT_MS })
        assert.equal(
          await page.locator('#verdict').textContent(),
          'The wallet behaved correctly in every case',
        )
        assert.equal(await page.locator('#current').isVisible(), false)
        assert.equal(await page.locator('#results tr').count(), CASES.length)
      }
      await bare.page.screenshot({ path: screenshotPath('wallet-test-finished'), fullPage: true })
      assert.deepEqual(bare.problems, [], 'failed requests or script errors on /wallet-test')
      assert.deepEqual(slash.problems, [], 'failed requests or script errors on /wallet-test/')
      assert.ok(terminal.some((line) => line.startsWith('=== Case 1/4: ')))
    } finally {
      await bare.close()
      await slash.close()
      stop.abort()
      await running.catch(() => {})
    }
  })
})
