// The verifier plan's cases over the W3C Digital Credentials API (OpenID4VP 1.0 Appendix A) discriminate:
// our own service passes all four (own-service.test.ts, through the relying-party API, SD-JWT VC and mdoc);
// here an independent verifier built on the OpenWallet Foundation's @openid4vc/openid4vp
// (test/fixtures/owf-dc-api-verifier.ts), put behind a small HTTP page as a verifier's relying party would and
// driven by --dc-api-command alone, passes them too, while the same verifier trusting the library (which does
// not look into presentations, so no KB-JWT aud is held to origin:<origin>) fails exactly the two binding
// cases: an answer bound to another origin and one bound to the client_id.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { runVerifierTest } from '../../../src/harness/server-test/index.ts'
import type { ServerTestRun } from '../../../src/harness/server-test/runner.ts'
import { parseDcApiOutput } from '../../../src/harness/server-test/sources.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../../src/shared/did-key.ts'
import { issueSdJwtVc } from '../../../src/shared/sd-jwt.ts'
import { Wallet } from '../../../src/wallet/index.ts'
import {
  createOwfDcApiVerifier,
  type OwfDcApiSession,
  type OwfDcApiVerifier,
} from '../../fixtures/owf-dc-api-verifier.ts'

const ORIGIN = 'https://rp.example'
const VCT = 'urn:example:pid'
const DC_API = ['happy-flow', 'foreign-origin', 'client-id-audience', 'wrong-request'].map(
  (n) => `verifier:dc-api-${n}`,
)

const issuerPair = generateKeyPair('EdDSA')
const ISSUER = { ...didKeyFromPublicKey(issuerPair.publicKey), privateKey: issuerPair.privateKey }

/**
 * The verifier's relying party: GET /new makes a signed (x509_hash) request and prints what --dc-api-command
 * must, POST /answer/<n> takes the page's `{origin, protocol, data}` and answers 200 or 400.
 */
async function page(verifier: OwfDcApiVerifier): Promise<{ url: string; server: Server }> {
  const sessions: OwfDcApiSession[] = []
  const server = createServer(async (req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.method === 'GET' && req.url === '/new') {
      const session = await verifier.request({
        signed: 'x509_hash',
        dcql: { credentials: [{ id: 'pid', format: 'dc+sd-jwt', meta: { vct_values: [VCT] } }] },
      })
      sessions.push(session)
      return send(200, {
        request: session.request,
        origin: ORIGIN,
        response: `${base}/answer/${sessions.length - 1}`,
      })
    }
    const n = /^\/answer\/(\d+)$/.exec(req.url ?? '')?.[1]
    const session = n === undefined ? undefined : sessions[Number(n)]
    if (req.method !== 'POST' || !session) return send(404, { error: 'not_found' })
    let text = ''
    for await (const chunk of req) text += chunk
    const { origin, protocol, data } = JSON.parse(text)
    const verdict = await verifier.verify(session, { protocol, data }, origin)
    return verdict.accepted
      ? send(200, {})
      : send(400, { error: 'invalid_presentation', error_description: verdict.reason ?? verdict.declined })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

const outcomes = (run: ServerTestRun) =>
  Object.fromEntries(run.results.map((r) => [r.id, r.verdict.pass ? 'pass' : r.verdict.outcome]))
const explain = (run: ServerTestRun) =>
  run.results.map((r) => `${r.id}: ${r.verdict.outcome} ${r.verdict.reason}`).join('\n')

describe('the dc-api-* verifier cases against the OWF verifier over the DC API (--dc-api-command alone)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-harness-dc-api-verifier-'))
  const walletFile = join(dir, 'wallet.json')
  after(() => rmSync(dir, { recursive: true, force: true }))

  before(async () => {
    // the credential the OWF verifier trusts: an SD-JWT VC of a did:key issuer, in a wallet file
    const wallet = await Wallet.create({ file: walletFile, keyType: 'P-256' })
    const pid = await issueSdJwtVc(
      {
        iss: ISSUER.did,
        vct: VCT,
        iat: Math.floor(Date.now() / 1000) - 60,
        cnf: { jwk: wallet.publicJwk() },
        family_name: 'Hopper',
      },
      ['family_name'],
      { alg: 'EdDSA', privateKey: ISSUER.privateKey, header: { kid: ISSUER.kid } },
    )
    await wallet.accept([pid], {
      credentialIssuer: 'https://issuer.example',
      configurationId: 'pid',
      status: 200,
      format: 'dc+sd-jwt',
      vct: VCT,
    })
  })

  async function run(flawed: boolean): Promise<ServerTestRun> {
    const verifier = await createOwfDcApiVerifier({
      origin: ORIGIN,
      trustedIssuers: [ISSUER.did],
      ...(flawed && { acceptAnyAudience: true }),
    })
    const { url, server } = await page(verifier)
    try {
      return await runVerifierTest({
        source: { dcApiCommand: `curl -sf ${url}/new` },
        walletFile,
        trustAnchors: [verifier.caPem],
      })
    } finally {
      server.close()
    }
  }

  test('correct: every dc-api-* case passes, every other case is not applicable', async () => {
    const r = await run(false)
    const expected = Object.fromEntries(
      r.results.map((x) => [x.id, DC_API.includes(x.id) ? 'pass' : 'not-applicable']),
    )
    assert.deepEqual(outcomes(r), expected, explain(r))
    assert.equal(r.passed, true)
  })

  test('trusting the library (no KB-JWT aud check) fails exactly dc-api-foreign-origin and dc-api-client-id-audience', async () => {
    const r = await run(true)
    const failing = r.results.filter((x) => !x.verdict.pass && x.verdict.outcome !== 'not-applicable')
    assert.deepEqual(
      failing.map((x) => x.id),
      ['verifier:dc-api-foreign-origin', 'verifier:dc-api-client-id-audience'],
      explain(r),
    )
    for (const x of failing) assert.match(x.verdict.reason, /the verifier accepted it \(answered 200/)
  })
})

describe('--dc-api-command output', () => {
  test('is JSON {request: {protocol, data}, origin, response}; anything else names what it lacks', () => {
    const ok = {
      request: { protocol: 'openid4vp-v1-unsigned', data: { nonce: 'n' } },
      origin: ORIGIN,
      response: 'https://rp.example/answer/1',
    }
    assert.deepEqual(parseDcApiOutput(JSON.stringify(ok)), ok)
    assert.throws(() => parseDcApiOutput('openid4vp://?x'), /printed no JSON object/)
    assert.throws(
      () => parseDcApiOutput(JSON.stringify({ ...ok, response: 'nope', origin: 1 })),
      /lacks origin .*, response/,
    )
  })
})
