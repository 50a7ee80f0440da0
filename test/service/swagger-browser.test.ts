// Swagger UI at /docs in a real browser (Debian Chromium through playwright-core, as test/web/vc-flow-qr.test.ts):
// "Authorize" with the API key (Basic), "Try it out" on the login, the token from its `Token` response header
// into "Authorize" → jwt, then "Try it out" on a protected GET answers 200, with `Authorization: jwt <token>`
// on the wire. Without Chromium the file is skipped with the reason, unless VC_HARNESS_REQUIRE_BROWSER=1
// (then it fails). test/service/openapi-security.test.ts checks the document itself without a browser.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { type Browser, chromium, type Locator, type Page } from 'playwright-core'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { BROWSER_SKIP, CHROMIUM_PATH, screenshotPath } from '../browser-helpers.ts'
import { DEMO, demoConfig } from '../helpers.ts'

const UI_TIMEOUT_MS = 10_000
const skip = BROWSER_SKIP

describe('Swagger UI at /docs authenticates "Try it out" in Chromium', { skip, timeout: 60_000 }, () => {
  let server: RunningServer
  let browser: Browser
  before(async () => {
    assert.ok(existsSync(CHROMIUM_PATH), `no Chromium at ${CHROMIUM_PATH} (VC_HARNESS_REQUIRE_BROWSER=1)`)
    ;[server, browser] = await Promise.all([
      startServer({ config: demoConfig(), dataDir: ':memory:', port: 0 }),
      chromium.launch({ executablePath: CHROMIUM_PATH, headless: true }),
    ])
  })
  after(async () => {
    await browser?.close()
    await server?.close()
  })

  /** Opens an operation, presses "Try it out", fills header parameters, executes, returns its status. */
  async function tryItOut(page: Page, id: string, headers: Record<string, string> = {}) {
    const operation = page.locator(`[id="${id}"]`)
    if (!(await operation.locator('.try-out__btn').isVisible()))
      await operation.locator('.opblock-summary').click()
    const tryOut = operation.locator('.try-out__btn')
    if ((await tryOut.textContent())?.includes('Try it out')) await tryOut.click()
    for (const [name, value] of Object.entries(headers)) {
      await operation.locator(`input[placeholder="${name}"]`).fill(value)
    }
    // A previous answer of the same operation is replaced: wait for the new one (Clear removes it first).
    const clear = operation.locator('button.btn-clear')
    if (await clear.isVisible()) await clear.click()
    await operation.locator('button.execute').click()
    const status = operation.locator('.live-responses-table tbody .response-col_status')
    await status.waitFor({ timeout: UI_TIMEOUT_MS })
    return { operation, status: Number((await status.textContent())?.trim()) }
  }

  async function authorize(page: Page, fill: (dialog: Locator) => Promise<void>, scheme: string) {
    await page.locator('.swagger-ui .auth-wrapper .btn.authorize').click()
    const dialog = page.locator('.modal-ux')
    const container = dialog.locator('.auth-container', { has: page.locator(`h4 code:text-is("${scheme}")`) })
    await fill(container)
    await container.locator('button.authorize').click()
    await dialog.locator('.close-modal').click()
  }

  test('Authorize (basic) → login → Authorize (jwt <token>) → a protected GET answers 200', async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    try {
      const page = await context.newPage()
      const sent: { method: string; path: string; authorization: string | undefined }[] = []
      page.on('request', (request) => {
        const url = new URL(request.url())
        if (url.pathname.startsWith('/docs')) return
        sent.push({
          method: request.method(),
          path: url.pathname,
          authorization: request.headers().authorization,
        })
      })
      await page.goto(`${server.url}/docs`)
      await page.locator('.swagger-ui .auth-wrapper .btn.authorize').waitFor({ timeout: UI_TIMEOUT_MS })
      // The document names the public URL as its server (here the listening URL).
      assert.equal(await page.locator('.servers select option').first().getAttribute('value'), server.url)

      const listKeys = 'operations-Management_portal-get_portal_v1_api_keys'
      // Not authorized yet: the protected call goes out without credentials and is refused.
      assert.equal((await tryItOut(page, listKeys)).status, 401)
      assert.equal(sent.at(-1)?.authorization, undefined)

      await authorize(
        page,
        async (dialog) => {
          await dialog.locator('input[name="username"]').fill(DEMO.admin.id)
          await dialog.locator('input[name="password"]').fill(DEMO.admin.secret)
        },
        'basic',
      )
      const login = await tryItOut(page, 'operations-Authentication-post_admin_v1_api_keys_login', {
        tenant: DEMO.admin.tenant,
      })
      assert.equal(login.status, 200)
      assert.match(sent.at(-1)?.authorization ?? '', /^Basic /)
      const headers = (
        await login.operation.locator('.live-responses-table .headerline').allTextContents()
      ).join('\n')
      const token = /^\s*token: (\S+)/m.exec(headers)?.[1]
      assert.ok(token, `no Token response header shown:\n${headers}`)

      await authorize(page, (dialog) => dialog.locator('input[type="text"]').fill(`jwt ${token}`), 'jwt')
      const read = await tryItOut(page, listKeys)
      await page.screenshot({ path: screenshotPath('swagger-ui-authorized'), fullPage: false })
      assert.equal(read.status, 200)
      assert.deepEqual(sent.at(-1), {
        method: 'GET',
        path: '/portal/v1/api-keys',
        authorization: `jwt ${token}`,
      })
      const body = await read.operation
        .locator('.live-responses-table .response-col_description code')
        .first()
        .textContent()
      assert.ok(body?.includes(DEMO.admin.id), 'the answer lists the demo keys')
    } finally {
      await context.close()
    }
  })
})
