// Helpers of test/web/vc-flow-qr.test.ts, test/demo/backend.test.ts and test/harness/sandbox.test.ts: the service with the demo relying
// party on a real port, QR decoding from a screenshot, the secret scan of everything the page received, and an
// OpenID4VP 1.0 wallet built from independent code (the OWF clients of test/fixtures/owf-holder.ts) for the
// dcql profile's flows.
import assert from 'node:assert/strict'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import jsQRModule from 'jsqr'
import type { Page } from 'playwright-core'
import { PNG } from 'pngjs'
import { type DemoPlugin, demoPlugin } from '../src/demo/plugin.ts'
import { planSandbox } from '../src/harness/sandbox.ts'
import type { ServiceConfig } from '../src/service/config/index.ts'
import { type RunningServer, startServer } from '../src/service/server.ts'
import type { Clock } from '../src/service/util/clock.ts'
import { REQUEST_OBJECT_TYP } from '../src/shared/wire.ts'
import { owfAnswer, owfHolder, owfReceive, owfResolve, sdJwtPresentation } from './fixtures/owf-holder.ts'
import { demoConfig } from './helpers.ts'

// jsqr is CommonJS whose types declare a default export; what the loader hands over differs (cf. util/ajv.ts).
type JsQr = typeof jsQRModule.default
const jsQR: JsQr = (jsQRModule as unknown as { default?: JsQr }).default ?? (jsQRModule as unknown as JsQr)

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
/**
 * Why the browser tests are skipped on this machine (no Chromium), or false. VC_HARNESS_REQUIRE_BROWSER=1
 * (set by .ci/run) never skips: a missing Chromium then fails the tests that need it.
 */
export const BROWSER_SKIP: string | false =
  !existsSync(CHROMIUM_PATH) && process.env.VC_HARNESS_REQUIRE_BROWSER !== '1'
    ? `no Chromium at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH; VC_HARNESS_REQUIRE_BROWSER=1 makes this a failure`
    : false
export const SCREENSHOTS = fileURLToPath(new URL('../reports/screenshots/', import.meta.url))

export interface DemoServer {
  server: RunningServer
  demo: DemoPlugin
  config: ServiceConfig
  url: string
  close(): Promise<void>
}

/** The service on 127.0.0.1 and a free port, in memory, with the demo relying party at /demo. */
export async function startDemoServer(
  clock: Clock,
  options: {
    config?: ServiceConfig
    fetch?: typeof fetch
    /** The demo's templates (`serve --issue / --verify`); default the first ones, as `serve` picks them. */
    templates?: { issue?: string; verify?: string }
  } = {},
): Promise<DemoServer> {
  const config = options.config ?? demoConfig()
  const demo = demoPlugin({
    config,
    plan: planSandbox(config, options.templates),
    clock,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  })
  const server = await startServer({
    config,
    dataDir: ':memory:',
    port: 0,
    clock,
    plugins: [{ plugin: demo, prefix: '/demo' }],
  })
  return { server, demo, config, url: server.url, close: () => server.close() }
}

/** Every secret of the configuration: API key secrets and webhook secrets. */
export function secretsOf(config: ServiceConfig): string[] {
  const secrets: string[] = []
  for (const tenant of config.tenants) {
    for (const key of tenant.apiKeys) secrets.push(key.secret)
    for (const template of [...tenant.issuanceTemplates, ...tenant.verificationTemplates]) {
      const t = template as { webhookSecret?: string; webhookPreviousSecrets?: string[] }
      if (t.webhookSecret) secrets.push(t.webhookSecret)
      secrets.push(...(t.webhookPreviousSecrets ?? []))
    }
  }
  return secrets
}

const JWT = /eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*/
const JWTS = new RegExp(JWT.source, 'g')

/**
 * `text` with every signed request object (a JWS whose header says `typ: oauth-authz-req+jwt`) replaced by a
 * marker: the request a page hands to the Digital Credentials API is one, a public message the wallet would
 * otherwise fetch from request_uri. Any other JWT-shaped text stays, for assertNoSecrets to find.
 */
export function withoutRequestObjects(text: string): string {
  return text.replace(JWTS, (jws) => {
    try {
      const header = JSON.parse(Buffer.from(jws.split('.')[0] ?? '', 'base64url').toString('utf8')) as {
        typ?: unknown
      }
      return header.typ === REQUEST_OBJECT_TYP ? '[request object]' : jws
    } catch {
      return jws
    }
  })
}

/** Fails when `text` (something the page received) holds a secret, a `jwt ` authorization or a JWT. */
export function assertNoSecrets(where: string, text: string, secrets: string[]) {
  for (const secret of secrets)
    assert.ok(!text.includes(secret), `${where} leaks an API key or webhook secret`)
  // "KB-JWT " and "SD-JWT " are names a check's message may use (a failed sessionBinding names the KB-JWT).
  assert.ok(!/(?<!(?:KB|SD)-)jwt /i.test(text), `${where} contains "jwt " (an Authorization value)`)
  assert.ok(!JWT.test(text), `${where} contains a JWT`)
}

/** Records what a page receives from /demo (bodies and WebSocket frames) and its script errors. */
export function watchPage(page: Page) {
  const received: { where: string; text: Promise<string> }[] = []
  const errors: string[] = []
  page.on('response', (response) => {
    if (!new URL(response.url()).pathname.startsWith('/demo')) return
    received.push({
      where: `${response.request().method()} ${response.url()} (${response.status()})`,
      text: response.text().catch(() => ''),
    })
  })
  page.on('websocket', (socket) => {
    socket.on('framereceived', (frame) => {
      received.push({
        where: `WebSocket frame from ${socket.url()}`,
        text: Promise.resolve(String(frame.payload)),
      })
    })
  })
  page.on('pageerror', (error) => errors.push(error.message))
  return {
    /**
     * Asserts that nothing received holds a secret or token, and that no script error happened. Answers
     * whose description matches `requestObjectsIn` (the DC API request entry) may carry signed request
     * objects, and nothing else shaped like a JWT.
     */
    async check(secrets: string[], options: { requestObjectsIn?: RegExp } = {}) {
      assert.deepEqual(errors, [], 'script errors on the page')
      assert.ok(received.length > 0, 'nothing was received from /demo')
      for (const { where, text } of received) {
        const body = await text
        const allowed = options.requestObjectsIn?.test(where) ? withoutRequestObjects(body) : body
        assertNoSecrets(where, allowed, secrets)
      }
      return received.length
    },
  }
}

/** Decodes a PNG screenshot holding a QR code. */
export function decodeQr(png: Buffer): string {
  const image = PNG.sync.read(png)
  const pixels = new Uint8ClampedArray(image.data.buffer, image.data.byteOffset, image.data.length)
  const code = jsQR(pixels, image.width, image.height)
  assert.ok(code, 'no QR code found in the screenshot')
  return code.data
}

export function screenshotPath(name: string): string {
  if (!existsSync(SCREENSHOTS)) mkdirSync(SCREENSHOTS, { recursive: true })
  return join(SCREENSHOTS, `${name}.png`)
}

/** The demo configuration's OpenID4VP 1.0 pair: a dc+sd-jwt VerifiableId and the dcql template asking for it. */
export const DCQL_TEMPLATES = { issue: 'pid-sd-jwt', verify: 'pid-check' } as const

/**
 * A holder answering OpenID4VP 1.0 (dcql) requests with SD-JWT VCs, from code nobody here wrote: the OWF
 * OpenID4VCI client receives, the OWF OpenID4VP client resolves and answers (encrypting for direct_post.jwt),
 * @sd-jwt/sd-jwt-vc presents (test/fixtures/owf-holder.ts; the whole sequence is test/service/oid4vp/owf-interop.test.ts).
 */
export class OwfDcqlWallet {
  readonly holder = owfHolder('ES256')
  /** The last SD-JWT VC received. */
  credential: string | undefined

  /** Redeems an offer link (openid-credential-offer://…) with a jwk-bound proof; keeps the SD-JWT VC. */
  async receive(offerLink: string): Promise<string> {
    const { result } = await owfReceive(this.holder, offerLink, 'jwk')
    const credential = (result.credentialResponse as { credentials?: { credential: string }[] })
      .credentials?.[0]?.credential
    assert.equal(typeof credential, 'string', 'the credential response carries no credential')
    this.credential = credential as string
    return this.credential
  }

  /**
   * Resolves an authorization request (openid4vp://…; fetches its request_uri, which the verifier sees as
   * request_retrieved) and returns its payload and a `respond` that answers every credential query with the
   * held SD-JWT VC disclosing `disclose`, and posts the answer.
   */
  async start(link: string, disclose: readonly string[] = ['familyName']) {
    const resolved = await owfResolve(link)
    const { request, queryIds } = resolved
    const respond = async (): Promise<{ status: number; body: string }> => {
      const credential = this.credential
      assert.ok(credential, 'the wallet holds no SD-JWT VC')
      const binding = { nonce: request.nonce, aud: request.client_id }
      const vpToken: Record<string, string[]> = {}
      for (const id of queryIds) {
        vpToken[id] = [await sdJwtPresentation(this.holder, credential, disclose, binding)]
      }
      const response = await owfAnswer(resolved, vpToken)
      return { status: response.status, body: await response.text() }
    }
    return { request, queryIds, respond }
  }

  /** start, then respond at once. */
  async present(link: string, disclose?: readonly string[]) {
    return (await this.start(link, disclose)).respond()
  }
}
