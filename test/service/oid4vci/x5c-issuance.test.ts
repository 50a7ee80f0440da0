// X.509 issuer keys end to end (issue 15 items 3 and 5; HAIP): the reference service signs an SD-JWT VC with
// an x5c chain from its per-tenant test CA, publishes the CA at GET /oid4vci/<tenant>/trust-anchor, and the
// simulated wallet accepts the credential only when that CA is one of its trust anchors (SD-JWT VC §3.5).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ok, parseCredentialOfferUri, RelyingPartyClient } from '../../../src/client/index.ts'
import { ConfigError, DEMO_CONFIG_PATH, parseConfig } from '../../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../../src/service/server.ts'
import { decodeJws } from '../../../src/shared/jws.ts'
import { splitSdJwt } from '../../../src/shared/sd-jwt.ts'
import { certificatePem, generateTestCa, verifyX5c } from '../../../src/shared/x509.ts'
import { Wallet, WalletUsageError } from '../../../src/wallet/index.ts'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..')
const TENANT = 'demo'
const APP_KEY = {
  id: 'a11ce000-5e7e-4c0d-9a11-0000000005c5',
  secret: 'x5c-test-app-secret-4hT9qZ2mX7vB1nK5xx',
  role: 'app',
  label: 'test/service/oid4vci/x5c-issuance.test.ts',
}
const X5C_TEMPLATE = {
  id: 'pid-x5c',
  credentialType: 'VerifiableId',
  format: 'dc+sd-jwt',
  issuerKeyBinding: 'x5c',
  signingAlg: 'ES256',
}
const VERIFIABLE_ID = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Lovelace', firstName: 'Ada' },
  },
]

function demoConfig(templates: Record<string, unknown>[]) {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  tenant.apiKeys.push(APP_KEY)
  tenant.issuanceTemplates.push(...templates)
  return raw
}

let server: RunningServer
let rp: RelyingPartyClient
let appToken: string
let issuerUrl: string
let anchorPem: string
const tempDir = mkdtempSync(join(tmpdir(), 'x5c-'))

before(async () => {
  const config = parseConfig(
    demoConfig([X5C_TEMPLATE]),
    'test/service/oid4vci/x5c-issuance.test.ts configuration',
  )
  server = await startServer({ config, host: '127.0.0.1', port: 0, dataDir: ':memory:' })
  rp = new RelyingPartyClient(server.url)
  appToken = await rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT })
  issuerUrl = `${server.url}/oid4vci/${TENANT}`
  const response = await fetch(`${issuerUrl}/trust-anchor`)
  assert.equal(response.status, 200)
  assert.equal(response.headers.get('content-type'), 'application/x-pem-file')
  anchorPem = await response.text()
})
after(async () => {
  await server?.close()
  rmSync(tempDir, { recursive: true, force: true })
})

/** A submitted x5c offer: the deep link and its process id. */
async function offer() {
  const body = ok(await rp.createOffer(appToken, X5C_TEMPLATE.id), 'offer')
  const { processId } = parseCredentialOfferUri(body.credential_offer_uri)
  ok(await rp.submitCredentials(appToken, processId, VERIFIABLE_ID), 'submit')
  return { deepLink: body.credential_offer_uri, processId }
}

async function refusedAtVerify(wallet: Wallet, description: RegExp) {
  const { deepLink } = await offer()
  await assert.rejects(wallet.receive(deepLink), (error: Record<string, unknown>) => {
    assert.equal(error.name, 'WalletProtocolError', String(error.message))
    assert.equal(error.step, 'verify')
    assert.equal(error.error, 'invalid_credential')
    assert.match(String(error.errorDescription), description)
    return true
  })
  assert.equal(wallet.credentials().length, 0)
}

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin/vc-harness.mjs'), ...args],
      { cwd: ROOT, timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr })
      },
    )
  })
}

describe('x5c issuer keys (HAIP; SD-JWT VC §3.5)', { concurrency: true }, () => {
  test('the trust-anchor route answers the tenant CA as PEM, the same every time; 404 for no tenant', async () => {
    assert.match(anchorPem, /^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n?$/)
    assert.equal(await (await fetch(`${issuerUrl}/trust-anchor`)).text(), anchorPem)
    const missing = await fetch(`${server.url}/oid4vci/no-such-tenant/trust-anchor`)
    assert.equal(missing.status, 404)
    assert.equal(((await missing.json()) as { error: string }).error, 'not_found')
  })

  test('the service signs with x5c (leaf only) and iss = the credential issuer URL, the leaf SAN URI', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: [anchorPem] })
    const { deepLink, processId } = await offer()
    assert.equal((await wallet.receive(deepLink)).status, 'issued')
    const [stored] = wallet.credentials()
    assert.equal(stored?.format, 'dc+sd-jwt')
    assert.equal(stored?.issuer, issuerUrl)
    assert.equal(stored?.credentialSubject.familyName, 'Lovelace')
    const { header, payload } = decodeJws(splitSdJwt(stored?.credential ?? '').jwt)
    assert.equal(header.alg, 'ES256')
    assert.equal(header.kid, undefined, 'x5c names the key; no did:key kid')
    assert.ok(Array.isArray(header.x5c) && header.x5c.length === 1, 'the anchor is left out of x5c (HAIP)')
    assert.equal(payload.iss, issuerUrl)
    const chain = await verifyX5c(header.x5c, [anchorPem])
    assert.deepEqual(chain.uris, [issuerUrl])
    assert.deepEqual(chain.dns, [], 'no dNSName for an IP literal host')
    // The process data shows the same SD-JWT VC the wallet holds.
    const process = ok(await rp.getProcess(appToken, processId), 'process')
    const data = process.data as { proof: { type: string; jwt: string } }[]
    assert.equal(data[0]?.proof.type, 'SdJwtVc')
    assert.equal(data[0]?.proof.jwt, stored?.credential)
    // The leaf is persisted: a second credential carries the same certificate.
    const again = await Wallet.create({ keyType: 'P-256', trustAnchors: [anchorPem] })
    await again.receive((await offer()).deepLink)
    const next = decodeJws(splitSdJwt(again.credentials()[0]?.credential ?? '').jwt).header
    assert.deepEqual(next.x5c, header.x5c)
  })

  test('a wallet without a trust anchor refuses the x5c credential at verify', async () => {
    await refusedAtVerify(await Wallet.create(), /x5c chain, but this wallet has no trust anchor configured/)
  })

  test("a wallet trusting another CA refuses it, naming the chain's last certificate", async () => {
    const other = await generateTestCa({ name: 'CN=Some other CA' })
    const wallet = await Wallet.create({ trustAnchors: [certificatePem(other.certificate)] })
    await refusedAtVerify(wallet, /x5c: certificate 0 of the chain .* is not a configured trust anchor/)
  })

  test('Wallet.create refuses a trust anchor that is not a certificate', async () => {
    await assert.rejects(
      Wallet.create({ trustAnchors: ['-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----'] }),
      (error: Error) => error instanceof WalletUsageError && /trustAnchors\[0\]/.test(error.message),
    )
  })

  test('vc-harness wallet receive --trust-anchor FILE accepts it; without the flag the CLI refuses', async () => {
    const file = join(tempDir, 'anchor.pem')
    writeFileSync(file, anchorPem)
    const accepted = await cli(['wallet', 'receive', (await offer()).deepLink, '--trust-anchor', file])
    assert.equal(accepted.code, 0, accepted.stderr)
    const output = JSON.parse(accepted.stdout) as { status: string; credentials: { issuer: string }[] }
    assert.equal(output.status, 'issued')
    assert.equal(output.credentials[0]?.issuer, issuerUrl)
    const refused = await cli(['wallet', 'receive', (await offer()).deepLink])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /no trust anchor configured/)
  })
})

describe('x5c template configuration', () => {
  test('issuerKeyBinding x5c needs signingAlg ES256 and format dc+sd-jwt: a config error names the field', () => {
    const eddsa = { ...X5C_TEMPLATE, signingAlg: 'EdDSA' }
    assert.throws(
      () => parseConfig(demoConfig([eddsa])),
      (e: Error) =>
        e instanceof ConfigError &&
        /issuanceTemplates\/\d+\/signingAlg: issuerKeyBinding x5c needs signingAlg ES256/.test(e.message),
    )
    const { signingAlg: _default, ...defaultAlg } = X5C_TEMPLATE
    assert.throws(() => parseConfig(demoConfig([defaultAlg])), /needs signingAlg ES256 .*not EdDSA/)
    const jwtVc = { ...X5C_TEMPLATE, format: 'jwt_vc_json' }
    assert.throws(
      () => parseConfig(demoConfig([jwtVc])),
      /format: issuerKeyBinding x5c is offered for format dc\+sd-jwt only/,
    )
    const plain = parseConfig(demoConfig([{ ...X5C_TEMPLATE, issuerKeyBinding: undefined }]))
    assert.ok(plain)
  })
})
