// The simulated wallet (src/wallet, CLI src/cli/wallet.ts) against the real reference service over real HTTP on
// 127.0.0.1: one service for the whole file, the relying party driven with RelyingPartyClient. Every wire
// answer asserted here is the one docs/issuance.md and src/wallet/README.md promise.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  type IssuanceProcess,
  ok,
  parseCredentialOfferUri,
  RelyingPartyClient,
} from '../../src/client/index.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../src/service/config/index.ts'
import type { ProcessChanged } from '../../src/service/events.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { didOf, resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws } from '../../src/shared/jws.ts'
import {
  type HolderKeyType,
  MISBEHAVIOURS,
  type Misbehaviour,
  V1_ONLY_MISBEHAVIOURS,
  Wallet,
  WalletProtocolError,
  type WalletStep,
  WalletUsageError,
} from '../../src/wallet/index.ts'

// --- the service ---------------------------------------------------------------------------------------------

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
const TENANT = 'demo'
/** An unlinked application key: one login creates offers for every template of the tenant. */
const APP_KEY = {
  id: 'a11ce000-5e7e-4c0d-9a11-00000000c0de',
  secret: 'wallet-test-app-secret-4hT9qZ2mX7vB1nK5',
  role: 'app',
  label: 'test/wallet/receive.test.ts: every template',
}
const TEMPLATES = [
  { id: 'verifiable-id', credentialType: 'VerifiableId' },
  {
    id: 'degree-with-id',
    credentialType: 'UniversityDegreeCredential',
    requiredPresentation: {
      purpose: 'We issue the degree only to holders of a verified ID',
      credentials: [{ type: 'VerifiableId', fields: ['$.credentialSubject.familyName'] }],
    },
  },
  {
    id: 'pin',
    credentialType: 'UniversityDegreeCredential',
    txCode: { length: 6, description: 'the 100% secret code from the letter' },
  },
  { id: 'es256', credentialType: 'UniversityDegreeCredential', signingAlg: 'ES256' },
  { id: 'es256k', credentialType: 'UniversityDegreeCredential', signingAlg: 'ES256K' },
  {
    id: 'pid',
    credentialType: 'VerifiableId',
    format: 'dc+sd-jwt',
    selectivelyDisclosable: ['familyName', 'firstName'],
  },
]
const INTERVAL_SECONDS = 1

interface DemoKey {
  id: string
  secret: string
  role: string
  template?: string
}

function serviceConfig() {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  tenant.apiKeys.push(APP_KEY)
  tenant.issuanceTemplates.push(...TEMPLATES)
  raw.oid4vci = { deferredIntervalSeconds: INTERVAL_SECONDS }
  const admin = (tenant.apiKeys as DemoKey[]).find((k) => k.role === 'admin' && k.template === undefined)
  if (!admin) throw new Error('config/demo.json has no admin key')
  return { config: parseConfig(raw, 'test/wallet/receive.test.ts configuration'), admin }
}

const DEGREE = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]
const VERIFIABLE_ID = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Lovelace', firstName: 'Ada' },
  },
]

let server: RunningServer
let rp: RelyingPartyClient
let appToken: string
let adminToken: string
let issuerUrl: string

before(async () => {
  const { config, admin } = serviceConfig()
  server = await startServer({ config, host: '127.0.0.1', port: 0, dataDir: ':memory:' })
  rp = new RelyingPartyClient(server.url)
  ;[appToken, adminToken] = await Promise.all([
    rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT }),
    rp.token({ keyId: admin.id, secret: admin.secret, tenant: TENANT }),
  ])
  issuerUrl = `${server.url}/oid4vci/${TENANT}`
})

const tempDirs: string[] = []
after(async () => {
  await server?.close()
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

// --- helpers -------------------------------------------------------------------------------------------------

const KEY_TYPES: { keyType: HolderKeyType; prefix: string }[] = [
  { keyType: 'Ed25519', prefix: 'did:key:z6Mk' },
  { keyType: 'P-256', prefix: 'did:key:zDn' },
  { keyType: 'secp256k1', prefix: 'did:key:zQ3s' },
]

interface Offer {
  deepLink: string
  offerUrl: string
  processId: string
  txCode: string | undefined
}

/** 4.2 by the relying party: the deep link the QR code carries. */
async function offer(group = 'degree'): Promise<Offer> {
  const body = ok(await rp.createOffer(appToken, group), `offer ${group}`)
  const { offerUrl, processId } = parseCredentialOfferUri(body.credential_offer_uri)
  return { deepLink: body.credential_offer_uri, offerUrl, processId, txCode: body.tx_code }
}

/** 4.4 by the relying party; answers the process. */
async function submit(processId: string, credentials: unknown = DEGREE): Promise<IssuanceProcess> {
  const [process] = ok(await rp.submitCredentials(appToken, processId, credentials), 'submit')
  assert.ok(process)
  return process
}

async function processOf(processId: string): Promise<IssuanceProcess> {
  return ok(await rp.getProcess(appToken, processId), 'get process')
}

interface Validator {
  id: string
  verifiablePresentation: {
    holder: string
    proof: { type: string; creator: string; proofPurpose: string; jwt?: string }[]
    verifiableCredential: {
      type: string[]
      credentialSubject: Record<string, unknown>
      proof: { jwt: string }
    }[]
  }
}

/** The process after a successful issuance: ISSUED, bound to the wallet's holder DID (rule 3). */
async function assertIssuedTo(
  processId: string,
  wallet: Wallet,
  jwt: string | undefined,
): Promise<Validator> {
  const process = await processOf(processId)
  assert.equal(process.status, 'ISSUED')
  const validator = process.validator as unknown as Validator
  assert.equal(validator.id, processId)
  const creator = validator.verifiablePresentation.proof[0]?.creator ?? ''
  assert.equal(creator, wallet.kid, 'creator is the holder key id')
  assert.equal(creator.split('#')[0], wallet.did, 'creator without fragment is the holder DID')
  assert.equal(validator.verifiablePresentation.holder, wallet.did)
  const data = process.data as { credentialSubject: { id: string }; proof: { type: string; jwt: string } }[]
  assert.equal(data.length, 1)
  assert.equal(data[0]?.credentialSubject.id, wallet.did)
  assert.equal(data[0]?.proof.type, 'JwtProof2020')
  assert.equal(data[0]?.proof.jwt, jwt, 'the wallet holds what the process shows')
  return validator
}

/** After a refused request: nothing changed on the service's side. */
async function assertUntouched(processId: string, what: string): Promise<void> {
  const process = await processOf(processId)
  assert.equal(process.status, 'PENDING', `${what}: process status`)
  assert.equal(process.validator, null, `${what}: validator`)
  assert.equal(process.data, undefined, `${what}: data`)
}

async function rejectsWith(
  promise: Promise<unknown>,
  expected: { step: WalletStep; status: number; error: string; description: RegExp },
): Promise<WalletProtocolError> {
  let caught: unknown
  await assert.rejects(promise, (error: unknown) => {
    caught = error
    return true
  })
  assert.ok(caught instanceof WalletProtocolError, `expected a WalletProtocolError, got ${String(caught)}`)
  const e = caught
  assert.deepEqual(
    { step: e.step, status: e.status, error: e.error },
    { step: expected.step, status: expected.status, error: expected.error },
    e.message,
  )
  assert.match(e.errorDescription ?? '', expected.description)
  assert.equal(e.message, `${e.step}: ${e.status} ${e.error}: ${e.errorDescription}`)
  return e
}

interface Call {
  method: string
  path: string
  status: number
  sentAt: number
  answeredAt: number
}

/** The global fetch, watched: the wallet's own calls (offer, deferred, notification) with their timing. */
function watchedFetch() {
  const calls: Call[] = []
  const watched: typeof fetch = async (input, init) => {
    const sentAt = Date.now()
    const response = await fetch(input, init)
    calls.push({
      method: init?.method ?? 'GET',
      path: new URL(String(input)).pathname,
      status: response.status,
      sentAt,
      answeredAt: Date.now(),
    })
    return response
  }
  return {
    fetch: watched,
    calls,
    to: (endpoint: string) => calls.filter((c) => c.path.endsWith(`/${endpoint}`)),
  }
}

/** Resolves with the first service event matching `match` (events are emitted after the commit). */
function nextEvent(match: (event: ProcessChanged) => boolean): Promise<ProcessChanged> {
  return new Promise((resolve) => {
    const off = server.app.services.events.on((event) => {
      if (event.kind !== 'issuance' || !match(event)) return
      off()
      resolve(event)
    })
  })
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vc-harness-wallet-e2e-'))
  tempDirs.push(dir)
  return dir
}

const PARALLEL = { concurrency: true }

interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** `node bin/vc-harness.mjs …` as a user runs it. */
function cli(args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin/vc-harness.mjs'), ...args],
      { cwd: ROOT, timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

// Every group runs at once: the CLI children and the deferred intervals overlap with the rest.
describe('the simulated wallet against the reference service', PARALLEL, () => {
  // --- receiving -----------------------------------------------------------------------------------------------

  describe('receive from the reference service, draft-15 path (Sphereon)', PARALLEL, () => {
    for (const { keyType, prefix } of KEY_TYPES) {
      test(`${keyType}: content submitted first → 200 at once, verified, stored, acknowledged`, async () => {
        const wallet = await Wallet.create({ keyType, protocol: 'draft15' })
        assert.ok(wallet.did.startsWith(prefix), wallet.did)
        const watch = watchedFetch()
        const watchedWallet = await Wallet.create({ keyType, fetch: watch.fetch, protocol: 'draft15' })
        let lastProcessId = ''
        for (const holder of [wallet, watchedWallet]) {
          const { deepLink, processId } = await offer()
          lastProcessId = processId
          const submitted = await submit(processId)
          assert.equal(submitted.status, 'PENDING', 'nothing signed before the wallet proves its key')
          assert.equal(submitted.data, undefined)
          const steps: string[] = []
          const result = await holder.receive(deepLink, { onStep: (step) => steps.push(step) })
          assert.equal(result.status, 'issued')
          if (result.status !== 'issued') return
          assert.deepEqual(steps, ['offer', 'metadata', 'token', 'credential', 'verify', 'notification'])
          assert.ok(result.notificationId)
          const [stored] = holder.credentials()
          assert.deepEqual(result.credentials, [stored])
          assert.equal(stored?.subject, holder.did)
          assert.deepEqual(stored?.types, ['VerifiableCredential', 'UniversityDegreeCredential'])
          assert.deepEqual(stored?.credentialSubject.degree, DEGREE[0]?.credentialSubject.degree)
          assert.equal(stored?.credentialIssuer, issuerUrl)
          assert.equal(stored?.configurationId, 'degree')
          assert.ok(stored?.issuer.startsWith('did:key:z6Mk'), 'the degree template signs with EdDSA')
          const validator = await assertIssuedTo(processId, holder, stored?.credential)
          assert.equal(validator.verifiablePresentation.proof[0]?.type, 'JwtProof2020')
          assert.deepEqual(validator.verifiablePresentation.verifiableCredential, [])
        }
        // every request of the wallet goes through its fetch (http.ts: deadline, body cap, no redirects): the
        // offer by reference, the issuer and authorization server metadata (draft-15 discovery, appended
        // well-known paths), the token (with c_nonce: no nonce request), the credential, its status list (read
        // at receipt: a revoked credential is refused), then credential_accepted answered 204
        const base = new URL(issuerUrl).pathname
        const calls = watch.calls.map((c) => `${c.method} ${c.path.slice(base.length)} ${c.status}`)
        assert.deepEqual(
          calls.map((c) => c.replace(/\/status\/[\w-]+/, '/status/…')),
          [
            `GET /credential-offer/${lastProcessId} 200`,
            'GET /.well-known/openid-credential-issuer 200',
            'GET /.well-known/openid-configuration 404',
            'GET /.well-known/oauth-authorization-server 200',
            'POST /token 200',
            'POST /credential 200',
            'GET /status/… 200',
            'POST /notification 204',
          ],
          calls.join(', '),
        )
      })

      test(`${keyType}: wallet first → 202, relying party submits, awaitDeferred honours interval`, async () => {
        const watch = watchedFetch()
        const wallet = await Wallet.create({ keyType, fetch: watch.fetch, protocol: 'draft15' })
        const { deepLink, processId } = await offer()
        const pending = await wallet.receive(deepLink)
        assert.equal(pending.status, 'pending')
        if (pending.status !== 'pending') return
        assert.equal(pending.interval, INTERVAL_SECONDS)
        assert.deepEqual(wallet.credentials(), [])
        const bound = await processOf(processId)
        assert.equal(bound.status, 'PENDING')
        assert.equal(bound.data, undefined)
        assert.equal((bound.validator as unknown as Validator).verifiablePresentation.holder, wallet.did)

        const session = pending.session
        const first = await session.deferred(pending.transactionId)
        // The service answers as 1.0 §9.2 does (202, same transaction_id, interval); this path reads it too.
        assert.equal(first.status, 202)
        if (first.status !== 202) return
        assert.deepEqual(
          { transactionId: first.transactionId, interval: first.interval },
          { transactionId: pending.transactionId, interval: INTERVAL_SECONDS },
        )
        assert.equal((await submit(processId)).status, 'ISSUED', 'signed at once: the holder is known')
        const issued = await session.awaitDeferred(pending.transactionId, { timeoutMs: 10_000 })
        const polls = watch.to('deferred_credential')
        assert.deepEqual(
          polls.map((p) => p.status),
          [202, 200],
        )
        const gap = (polls[1]?.sentAt ?? 0) - (polls[0]?.answeredAt ?? 0)
        assert.ok(gap >= INTERVAL_SECONDS * 1000 - 50, `second poll ${gap} ms after the first answer`)

        const stored = await session.accept(issued)
        assert.equal(stored[0]?.subject, wallet.did)
        await session.notify('credential_accepted')
        assert.equal(watch.to('notification').at(-1)?.status, 204)
        await session.notify('credential_accepted')
        assert.equal(watch.to('notification').at(-1)?.status, 204, 'a repeated notification is 204 again')
        await assertIssuedTo(processId, wallet, stored[0]?.credential)
        // the transaction is redeemed once
        await rejectsWith(session.deferred(pending.transactionId), {
          step: 'deferred',
          status: 400,
          error: 'invalid_transaction_id',
          description: /already redeemed/,
        })
      })
    }

    test('receive({waitForDeferred}): the relying party answers the holder_bound event', async () => {
      const watch = watchedFetch()
      const wallet = await Wallet.create({ fetch: watch.fetch, protocol: 'draft15' })
      const { deepLink, processId } = await offer()
      // a relying party that submits as soon as the wallet has proved its key (as a webhook receiver would)
      const submitted = nextEvent((e) => e.processId === processId && e.step === 'holder_bound').then(() =>
        submit(processId),
      )
      let deferredAt = 0
      const steps: string[] = []
      const result = await wallet.receive(deepLink, {
        waitForDeferred: { timeoutMs: 10_000 },
        onStep: (step) => {
          steps.push(step)
          if (step === 'credential') deferredAt = Date.now()
        },
      })
      assert.equal((await submitted).status, 'ISSUED')
      assert.equal(result.status, 'issued')
      // one 'deferred' step per poll: one, unless the relying party were slower than the interval
      assert.deepEqual(
        steps.filter((step, i) => step !== 'deferred' || steps[i - 1] !== 'deferred'),
        ['offer', 'metadata', 'token', 'credential', 'deferred', 'verify', 'notification'],
      )
      const [poll] = watch.to('deferred_credential')
      assert.ok(
        (poll?.sentAt ?? 0) - deferredAt >= INTERVAL_SECONDS * 1000 - 50,
        'the first poll waits interval after the 202',
      )
      assert.equal(watch.to('notification')[0]?.status, 204)
      await assertIssuedTo(processId, wallet, wallet.credentials()[0]?.credential)
    })

    for (const [template, alg, prefix] of [
      ['es256', 'ES256', 'did:key:zDn'],
      ['es256k', 'ES256K', 'did:key:zQ3s'],
    ] as const) {
      test(`template ${template}: credentials signed ${alg} by a ${prefix}… issuer, verified by Veramo`, async () => {
        const wallet = await Wallet.create()
        const { deepLink, processId } = await offer(template)
        await submit(processId)
        const result = await wallet.receive(deepLink)
        assert.equal(result.status, 'issued')
        const [stored] = wallet.credentials()
        const { header, payload } = decodeJws(stored?.credential ?? '')
        assert.equal(header.alg, alg)
        assert.equal(header.typ, 'JWT')
        assert.ok(String(header.kid).startsWith(`${prefix}`), String(header.kid))
        assert.equal(didOf(String(header.kid)), payload.iss)
        assert.equal(resolveDidKey(String(header.kid)).alg, alg)
        assert.equal(stored?.issuer, payload.iss)
        assert.equal(payload.sub, wallet.did)
        const verified = await wallet.agent.verifyCredential({
          credential: stored?.credential ?? '',
          policies: { credentialStatus: false },
        })
        assert.equal(verified.verified, true, verified.error?.message)
        // the issuer DID is one the tenant publishes
        const metadata = await (await fetch(`${issuerUrl}/.well-known/openid-credential-issuer`)).json()
        assert.ok((metadata.vc_harness_issuer_dids as string[]).includes(String(payload.iss)))
        await assertIssuedTo(processId, wallet, stored?.credential)
      })
    }
  })
  describe('receive from the reference service, 1.0 path (@openid4vc/openid4vci)', PARALLEL, () => {
    test('auto speaks 1.0 to a 1.0 issuer: jwt_vc_json at once, then deferred with the 1.0 202', async () => {
      const wallet = await Wallet.create()
      const first = await offer()
      await submit(first.processId)
      const issued = await wallet.receive(first.deepLink)
      assert.equal(issued.status, 'issued')
      assert.equal((await processOf(first.processId)).status, 'ISSUED')
      const second = await offer()
      const submitted = nextEvent((e) => e.processId === second.processId && e.step === 'holder_bound').then(
        () => submit(second.processId),
      )
      const deferred = await wallet.receive(second.deepLink, { waitForDeferred: true })
      await submitted
      assert.equal(deferred.status, 'issued')
      assert.equal(wallet.credentials().length, 2)
      assert.ok(wallet.credentials().every((c) => c.format === 'jwt_vc_json'))
    })

    test('dc+sd-jwt: the SD-JWT VC is verified, bound to the wallet key, stored with every claim', async () => {
      const wallet = await Wallet.create({ keyType: 'P-256' })
      const { deepLink, processId } = await offer('pid')
      await submit(processId, VERIFIABLE_ID)
      assert.equal((await wallet.receive(deepLink)).status, 'issued')
      const [stored] = wallet.credentials()
      assert.equal(stored?.format, 'dc+sd-jwt')
      assert.equal(stored?.subject, wallet.did)
      assert.equal(stored?.vct, `${issuerUrl}/vct/VerifiableId`)
      assert.deepEqual(
        { familyName: stored?.credentialSubject.familyName, firstName: stored?.credentialSubject.firstName },
        { familyName: 'Lovelace', firstName: 'Ada' },
      )
      assert.equal((await processOf(processId)).status, 'ISSUED')
    })
  })

  // --- offer forms -----------------------------------------------------------------------------------------------

  describe('offer forms', PARALLEL, () => {
    test('custom scheme deep link (as the service makes it)', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId } = await offer()
      assert.match(deepLink, /^openid-credential-offer:\/\/\?credential_offer_uri=http%3A%2F%2F127\.0\.0\.1/)
      await submit(processId)
      assert.equal((await wallet.receive(deepLink)).status, 'issued')
      await assertIssuedTo(processId, wallet, wallet.credentials()[0]?.credential)
    })

    test('https deep link by reference', async () => {
      const wallet = await Wallet.create()
      const { offerUrl, processId } = await offer()
      await submit(processId)
      const link = `https://wallet.example/receive?credential_offer_uri=${encodeURIComponent(offerUrl)}`
      const result = await wallet.receive(link)
      assert.equal(result.status, 'issued')
      assert.equal(result.session.offerUri, offerUrl)
      await assertIssuedTo(processId, wallet, wallet.credentials()[0]?.credential)
    })

    test('inline credential_offer built from the fetched offer JSON', async () => {
      const wallet = await Wallet.create()
      const { offerUrl, processId } = await offer()
      await submit(processId)
      const json = await (await fetch(offerUrl)).json()
      const link = `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify(json))}`
      const result = await wallet.receive(link)
      assert.equal(result.status, 'issued')
      assert.equal(result.session.offerUri, undefined)
      assert.deepEqual(result.session.offer, json)
      await assertIssuedTo(processId, wallet, wallet.credentials()[0]?.credential)
    })

    test('the offer arrives intact: tx_code with a %, presentation_definition', async () => {
      const wallet = await Wallet.create()
      for (const group of ['pin', 'degree-with-id']) {
        const { deepLink, offerUrl } = await offer(group)
        const json = await (await fetch(offerUrl)).json()
        const session = await wallet.startIssuance(deepLink)
        assert.deepEqual(session.offer, json)
        assert.equal(session.credentialIssuer, issuerUrl)
        if (group === 'pin') {
          assert.deepEqual(session.txCodeSpec, {
            input_mode: 'numeric',
            length: 6,
            description: 'the 100% secret code from the letter',
          })
        } else {
          assert.deepEqual(session.presentationDefinition, json.presentation_definition)
          assert.ok(session.presentationDefinition?.input_descriptors.length === 1)
        }
      }
    })

    test('unknown, foreign-tenant and closed offers: step offer, 404', async () => {
      const wallet = await Wallet.create()
      const unknown = `${issuerUrl}/credential-offer/${randomUUID()}`
      const { offerUrl, processId } = await offer()
      const foreign = offerUrl.replace(`/oid4vci/${TENANT}/`, '/oid4vci/nobody/')
      for (const url of [unknown, foreign]) {
        await rejectsWith(
          wallet.receive(`openid-credential-offer://?credential_offer_uri=${encodeURIComponent(url)}`),
          {
            step: 'offer',
            status: 404,
            error: 'not_found',
            description: /^no credential offer "[0-9a-f-]{36}"$/,
          },
        )
      }
      // once issued, the offer URL is closed
      await submit(processId)
      const link = `openid-credential-offer://?credential_offer_uri=${encodeURIComponent(offerUrl)}`
      await wallet.receive(link)
      await rejectsWith(wallet.receive(link), {
        step: 'offer',
        status: 404,
        error: 'not_found',
        description: /is closed \(process ISSUED\)/,
      })
    })
  })

  // --- transaction code ------------------------------------------------------------------------------------------

  describe('transaction code', PARALLEL, () => {
    test('the code the relying party got works; without one the wallet refuses before sending', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId, txCode } = await offer('pin')
      assert.match(txCode ?? '', /^\d{6}$/, 'the 4.2 answer carries the tx_code once')
      await assert.rejects(wallet.receive(deepLink), (e: Error) => {
        assert.ok(e instanceof WalletUsageError, String(e))
        assert.match(e.message, /requires a transaction code \(numeric, 6 characters: the 100% secret/)
        return true
      })
      await submit(processId)
      const result = await wallet.receive(deepLink, { ...(txCode && { txCode }) })
      assert.equal(result.status, 'issued')
      await assertIssuedTo(processId, wallet, wallet.credentials()[0]?.credential)
    })

    test('a wrong code is invalid_grant and leaves the code usable with the right one', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId, txCode } = await offer('pin')
      const wrong = `${txCode?.slice(0, 5)}${(Number(txCode?.at(5)) + 1) % 10}`
      await rejectsWith(wallet.receive(deepLink, { txCode: wrong }), {
        step: 'token',
        status: 400,
        error: 'invalid_grant',
        description: /^tx_code is wrong \(4 attempts left\)$/,
      })
      await assertUntouched(processId, 'wrong tx_code')
      await submit(processId)
      assert.equal((await wallet.receive(deepLink, { ...(txCode && { txCode }) })).status, 'issued')
    })
  })

  // --- misbehaviours ---------------------------------------------------------------------------------------------

  interface Expected {
    step: WalletStep
    status: number
    error: string
    description: RegExp
    /** the template to offer; default 'degree' */
    group?: string
    /** send the right tx_code along */
    txCode?: boolean
    /** the wallet must have had a successful credential request before */
    experienced?: boolean
  }

  /**
   * The legacy request shapes are for 1.0 issuers (test/wallet/receive-v1.test.ts), and key attestations are sent
   * on the 1.0 path only (test/wallet/key-attestation-service.test.ts); this service speaks draft 15.
   */
  type DraftMisbehaviour = Exclude<
    Misbehaviour,
    'legacy-proof' | 'legacy-format-request' | 'key-attestation-foreign-key'
  >
  const DRAFT_MISBEHAVIOURS = MISBEHAVIOURS.filter(
    (m): m is DraftMisbehaviour => !V1_ONLY_MISBEHAVIOURS.includes(m),
  )

  /** Every draft-15 misbehaviour of src/wallet/misbehaviour.ts with a jwt proof, and the service's exact answer. */
  const EXPECTED: Record<DraftMisbehaviour, Expected> = {
    'wrong-nonce': {
      step: 'credential',
      status: 400,
      error: 'invalid_nonce',
      description: /^the nonce is unknown, expired or already used; fetch a fresh one$/,
    },
    'replayed-nonce': {
      step: 'credential',
      status: 400,
      error: 'invalid_nonce',
      description: /^the nonce is unknown, expired or already used; fetch a fresh one$/,
      experienced: true,
    },
    'bad-signature': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^proof JWT signature does not verify with the key named in kid$/,
    },
    'wrong-aud': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description:
        /^proof JWT aud must be the credential issuer http:\/\/127\.0\.0\.1:\d+\/oid4vci\/demo, got "https:\/\/wrong-audience\.invalid"$/,
    },
    'expired-iat': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^proof JWT iat is 36\d\d s old; at most 300 s is accepted$/,
    },
    'future-iat': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^proof JWT iat is 3[56]\d\d s in the future$/,
    },
    'foreign-kid': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^proof JWT signature does not verify with the key named in kid$/,
    },
    'jwk-with-private-key': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^proof JWT header carries private key material in jwk/,
    },
    'wrong-typ': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^proof JWT header typ must be "openid4vci-proof\+jwt", got "JWT"$/,
    },
    'alg-none': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^proof JWT alg "none" is not allowed; use one of EdDSA, ES256, ES256K\b/,
    },
    'replayed-code': {
      step: 'token',
      status: 400,
      error: 'invalid_grant',
      description: /^pre-authorized_code was already used$/,
    },
    'wrong-tx-code': {
      step: 'token',
      status: 400,
      error: 'invalid_grant',
      description: /^tx_code is wrong \(4 attempts left\)$/,
      group: 'pin',
      txCode: true,
    },
    'missing-tx-code': {
      step: 'token',
      status: 400,
      error: 'invalid_request',
      description: /^tx_code is required: the offer announced one$/,
      group: 'pin',
    },
    'missing-proof': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^a key proof is required \(proof or proofs\)$/,
    },
    'unknown-configuration': {
      step: 'credential',
      status: 400,
      error: 'unknown_credential_configuration',
      description: /^credential configuration "degree-unknown-vc-harness" is not in this issuer's metadata$/,
    },
    'unknown-credential-identifier': {
      step: 'credential',
      status: 400,
      error: 'unknown_credential_identifier',
      description:
        /^this credential_identifier was not granted: only a token response with authorization_details grants one; send credential_configuration_id$/,
    },
    'token-in-query': {
      step: 'credential',
      status: 401,
      error: 'invalid_token',
      description: /^an access token is required \(Authorization: Bearer … or DPoP …\)$/,
    },
  }

  /** The misbehaviours of the credential request around the proof: the draft-15 path sends them too. */
  const REQUEST_MISBEHAVIOURS = [
    'missing-proof',
    'unknown-configuration',
    'unknown-credential-identifier',
    'token-in-query',
    'future-iat',
  ] as const satisfies readonly DraftMisbehaviour[]

  /** The same misbehaviours in a di_vp proof (template degree-with-id); the jwt-only ones cannot be made. */
  const EXPECTED_DI_VP: Partial<Record<Misbehaviour, Omit<Expected, 'group' | 'txCode'>>> = {
    'wrong-nonce': EXPECTED['wrong-nonce'],
    'replayed-nonce': EXPECTED['replayed-nonce'],
    'bad-signature': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^di_vp rejected: presentationProof: signature invalid$/,
    },
    'wrong-aud': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^di_vp rejected: sessionBinding: proof domain .* is not the credential issuer /,
    },
    'expired-iat': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description:
        /^di_vp rejected: sessionBinding: proof created is 36\d\d s old; at most 300 s is accepted$/,
    },
    'foreign-kid': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^di_vp rejected: presentationProof: holder does not match the verification method$/,
    },
    'future-iat': {
      step: 'credential',
      status: 400,
      error: 'invalid_proof',
      description: /^di_vp rejected: sessionBinding: proof created is in the future$/,
    },
    'missing-proof': EXPECTED['missing-proof'],
    'token-in-query': EXPECTED['token-in-query'],
  }

  describe('misbehaviours: the service refuses each one and nothing changes', PARALLEL, () => {
    /** Per key type, a wallet that has received a credential (for replayed-nonce). */
    const experienced = new Map<HolderKeyType, Wallet>()
    /** An Ed25519 wallet holding a VerifiableId (for the di_vp misbehaviours). */
    let idHolder: Wallet
    before(async () => {
      const receiveOne = async (wallet: Wallet, group: string, credentials: unknown) => {
        const { deepLink, processId } = await offer(group)
        await submit(processId, credentials)
        assert.equal((await wallet.receive(deepLink)).status, 'issued')
        return wallet
      }
      await Promise.all([
        ...KEY_TYPES.map(async ({ keyType }) =>
          experienced.set(keyType, await receiveOne(await Wallet.create({ keyType }), 'degree', DEGREE)),
        ),
        (async () => {
          idHolder = await receiveOne(await Wallet.create(), 'verifiable-id', VERIFIABLE_ID)
        })(),
      ])
    })

    test('the table covers every misbehaviour the wallet knows', () => {
      assert.deepEqual(Object.keys(EXPECTED).sort(), [...DRAFT_MISBEHAVIOURS].sort())
    })

    for (const misbehaviour of V1_ONLY_MISBEHAVIOURS) {
      test(`${misbehaviour} on the draft-15 path: refused before the code is redeemed`, async () => {
        const wallet = await Wallet.create({ protocol: 'draft15' })
        const { deepLink, processId } = await offer()
        await submit(processId)
        await assert.rejects(wallet.receive(deepLink, { misbehave: [misbehaviour] }), {
          name: 'WalletUsageError',
          message: new RegExp(
            `^misbehaviour ${misbehaviour} is spoken on the OpenID4VCI 1\\.0 path only \\(`,
          ),
        })
        assert.equal((await wallet.receive(deepLink)).status, 'issued', 'the code is still unused')
      })
    }

    for (const { keyType } of KEY_TYPES) {
      for (const misbehaviour of DRAFT_MISBEHAVIOURS) {
        const expected = EXPECTED[misbehaviour]
        test(`${keyType} jwt proof, ${misbehaviour}: ${expected.step} ${expected.status} ${expected.error}`, async () => {
          const wallet = expected.experienced
            ? (experienced.get(keyType) as Wallet)
            : await Wallet.create({ keyType })
          const before = wallet.credentials().length
          const { deepLink, processId, txCode } = await offer(expected.group)
          await submit(processId)
          await rejectsWith(
            wallet.receive(deepLink, {
              misbehave: [misbehaviour],
              ...(expected.txCode && txCode && { txCode }),
            }),
            expected,
          )
          await assertUntouched(processId, misbehaviour)
          assert.equal(wallet.credentials().length, before, 'nothing stored')
        })
      }
    }

    for (const misbehaviour of REQUEST_MISBEHAVIOURS) {
      const expected = EXPECTED[misbehaviour]
      test(`draft-15 path, ${misbehaviour}: ${expected.step} ${expected.status} ${expected.error}`, async () => {
        const wallet = await Wallet.create({ protocol: 'draft15' })
        const { deepLink, processId } = await offer()
        await submit(processId)
        await rejectsWith(wallet.receive(deepLink, { misbehave: [misbehaviour] }), expected)
        await assertUntouched(processId, misbehaviour)
        assert.equal(wallet.credentials().length, 0, 'nothing stored')
      })
    }

    for (const [misbehaviour, expected] of Object.entries(EXPECTED_DI_VP)) {
      test(`di_vp proof, ${misbehaviour}: ${expected.step} ${expected.status} ${expected.error}`, async () => {
        const { deepLink, processId } = await offer('degree-with-id')
        await submit(processId)
        await rejectsWith(
          idHolder.receive(deepLink, { misbehave: [misbehaviour as Misbehaviour], share: 'all' }),
          expected,
        )
        await assertUntouched(processId, misbehaviour)
      })
    }

    test('replayed-code: the first redemption succeeds, the identical second one is refused', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId } = await offer()
      const session = await wallet.startIssuance(deepLink)
      await rejectsWith(session.token({ misbehave: ['replayed-code'] }), EXPECTED['replayed-code'])
      assert.equal(session.tokenResponse, undefined, 'the session keeps no token from a refused answer')
      // the first redemption did happen: a fresh session of the same offer is refused the same way
      await rejectsWith((await wallet.startIssuance(deepLink)).token(), EXPECTED['replayed-code'])
      await assertUntouched(processId, 'replayed-code')
    })

    test('a tx_code sent although none was announced is invalid_request', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId } = await offer()
      await rejectsWith(wallet.receive(deepLink, { misbehave: ['wrong-tx-code'] }), {
        step: 'token',
        status: 400,
        error: 'invalid_request',
        description: /^tx_code was sent but the offer did not announce one$/,
      })
      await assertUntouched(processId, 'unannounced tx_code')
    })

    test('a jwt proof where the offer asks for a presentation is invalid_proof', async () => {
      const { deepLink, processId } = await offer('degree-with-id')
      const session = await idHolder.startIssuance(deepLink)
      await session.token()
      await rejectsWith(session.requestCredential({ proofType: 'jwt' }), {
        step: 'credential',
        status: 400,
        error: 'invalid_proof',
        description: /^this credential requires a di_vp proof carrying the credentials the offer asks for$/,
      })
      await assertUntouched(processId, 'jwt instead of di_vp')
    })
  })

  // --- other wire errors ---------------------------------------------------------------------------------------

  describe('other wire errors name the step, status and error', PARALLEL, () => {
    test('an offer naming an issuer the service does not have: step metadata', async () => {
      const wallet = await Wallet.create()
      const { offerUrl } = await offer()
      const json = await (await fetch(offerUrl)).json()
      const elsewhere = { ...json, credential_issuer: `${server.url}/oid4vci/nobody` }
      await rejectsWith(
        wallet.receive(
          `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify(elsewhere))}`,
        ),
        {
          step: 'metadata',
          status: 404,
          error: 'not_found',
          description: /^no credential issuer for tenant "nobody"$/,
        },
      )
    })

    test('a forged access token: 401 invalid_token with the Bearer challenge', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId } = await offer()
      const session = await wallet.startIssuance(deepLink)
      await session.token()
      // the session's token is private: forge it the way a broken wallet would send it
      ;(session as unknown as { currentToken: { access_token: string } }).currentToken.access_token = 'forged'
      const e = await rejectsWith(session.requestCredential(), {
        step: 'credential',
        status: 401,
        error: 'invalid_token',
        description: /^access token is unknown to this issuer$/,
      })
      assert.equal(
        e.wwwAuthenticate,
        'Bearer error="invalid_token", error_description="access token is unknown to this issuer"',
      )
      await rejectsWith(session.deferred('whatever'), {
        step: 'deferred',
        status: 401,
        error: 'invalid_token',
        description: /^access token is unknown to this issuer$/,
      })
      await assertUntouched(processId, 'forged access token')
    })

    test('deferred: a foreign transaction id, and a wallet that gives up after timeoutMs', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId } = await offer()
      const pending = await wallet.receive(deepLink)
      assert.equal(pending.status, 'pending')
      if (pending.status !== 'pending') return
      await rejectsWith(pending.session.deferred(randomUUID()), {
        step: 'deferred',
        status: 400,
        error: 'invalid_transaction_id',
        description: /^transaction_id is unknown to this access token$/,
      })
      // the next poll is due interval after the last answer: past the deadline, the wallet gives up at once
      const started = Date.now()
      await rejectsWith(pending.session.awaitDeferred(pending.transactionId, { timeoutMs: 200 }), {
        step: 'deferred',
        status: 400,
        error: 'issuance_pending',
        description: /^still pending after 200 ms \(transaction [0-9a-f-]{36}\)$/,
      })
      assert.ok(Date.now() - started < INTERVAL_SECONDS * 1000, 'no poll sooner than the interval')
      assert.equal((await processOf(processId)).status, 'PENDING')
    })

    test('replayed-nonce without an earlier successful request is refused locally', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId } = await offer()
      const session = await wallet.startIssuance(deepLink)
      await session.token()
      await assert.rejects(session.requestCredential({ misbehave: ['replayed-nonce'] }), (e: Error) => {
        assert.ok(e instanceof WalletUsageError, String(e))
        assert.match(e.message, /needs a nonce this wallet already used/)
        return true
      })
      await assertUntouched(processId, 'replayed-nonce, nothing to replay')
    })
  })

  // --- rejection -------------------------------------------------------------------------------------------------

  describe('the relying party rejects', PARALLEL, () => {
    test('after the wallet asked: its deferred poll is credential_request_denied with the reason', async () => {
      const wallet = await Wallet.create()
      const { deepLink, processId } = await offer()
      const pending = await wallet.receive(deepLink)
      assert.equal(pending.status, 'pending')
      if (pending.status !== 'pending') return
      const rejected = ok(await rp.rejectProcess(appToken, processId, 'diploma withdrawn'), 'reject')
      assert.equal(rejected.status, 'REJECTED')
      await rejectsWith(pending.session.awaitDeferred(pending.transactionId, { timeoutMs: 10_000 }), {
        step: 'deferred',
        status: 400,
        error: 'credential_request_denied',
        description: /^the issuer rejected this issuance: diploma withdrawn$/,
      })
      assert.deepEqual(wallet.credentials(), [])
      const process = await processOf(processId)
      assert.equal(process.status, 'REJECTED')
      assert.equal(process.data, undefined)
    })

    test('before the wallet came: the token request is invalid_grant, the offer is closed', async () => {
      const wallet = await Wallet.create()
      const { deepLink, offerUrl, processId } = await offer()
      // the wallet had scanned the code and read the offer before the relying party changed its mind
      const session = await wallet.startIssuance(deepLink)
      ok(await rp.rejectProcess(adminToken, processId), 'reject by the administrator')
      await rejectsWith(session.token(), {
        step: 'token',
        status: 400,
        error: 'invalid_grant',
        description: /^the issuance process is REJECTED$/,
      })
      await rejectsWith(wallet.receive(deepLink), {
        step: 'offer',
        status: 404,
        error: 'not_found',
        description: /is closed \(process REJECTED\)/,
      })
      assert.equal(new URL(offerUrl).pathname.split('/').pop(), processId)
      const listed = ok(await rp.listProcesses(adminToken, { status: 'REJECTED' }), 'list')
      assert.ok(listed.some((p) => p.id === processId))
    })
  })

  // --- presentation required (di_vp) -------------------------------------------------------------------------------

  describe('a template that requires a presentation (di_vp)', PARALLEL, () => {
    test('the wallet shares its VerifiableId (and nothing else); the validator holds it', async () => {
      const wallet = await Wallet.create()
      for (const [group, credentials] of [
        ['verifiable-id', VERIFIABLE_ID],
        ['degree', DEGREE],
      ] as const) {
        const { deepLink, processId } = await offer(group)
        await submit(processId, credentials)
        assert.equal((await wallet.receive(deepLink)).status, 'issued')
      }
      const [verifiableId] = wallet.credentials()
      assert.deepEqual(verifiableId?.types, ['VerifiableCredential', 'VerifiableId'])

      const { deepLink, processId } = await offer('degree-with-id')
      await submit(processId)
      // the holder allows its VerifiableIds only (the degree it also holds stays private)
      const result = await wallet.receive(deepLink, { share: ['VerifiableId'] })
      assert.equal(result.status, 'issued')
      const definition = result.session.presentationDefinition
      assert.ok(definition, 'the offer carries a presentation_definition')
      assert.equal(definition.purpose, 'We issue the degree only to holders of a verified ID')
      assert.equal(wallet.credentials().length, 3)

      const validator = await assertIssuedTo(processId, wallet, wallet.credentials()[2]?.credential)
      const vp = validator.verifiablePresentation
      assert.equal(vp.proof[0]?.type, 'DataIntegrityProof')
      assert.equal(vp.proof[0]?.proofPurpose, 'authentication')
      assert.equal(vp.verifiableCredential.length, 1, 'only the VerifiableId is shared')
      assert.equal(vp.verifiableCredential[0]?.proof.jwt, verifiableId?.credential)
      assert.deepEqual(vp.verifiableCredential[0]?.type, ['VerifiableCredential', 'VerifiableId'])
      assert.equal(vp.verifiableCredential[0]?.credentialSubject.familyName, 'Lovelace')
    })

    test('the wallet first, then the relying party: deferred works with di_vp too', async () => {
      const wallet = await Wallet.create()
      const id = await offer('verifiable-id')
      await submit(id.processId, VERIFIABLE_ID)
      await wallet.receive(id.deepLink)
      const { deepLink, processId } = await offer('degree-with-id')
      const submitted = nextEvent((e) => e.processId === processId && e.step === 'holder_bound').then(() =>
        submit(processId),
      )
      const result = await wallet.receive(deepLink, { waitForDeferred: { timeoutMs: 10_000 }, share: 'all' })
      assert.equal((await submitted).status, 'ISSUED')
      assert.equal(result.status, 'issued')
      const validator = await assertIssuedTo(processId, wallet, wallet.credentials()[1]?.credential)
      assert.equal(
        validator.verifiablePresentation.verifiableCredential[0]?.proof.jwt,
        wallet.credentials()[0]?.credential,
      )
    })

    test('nothing to present: a WalletUsageError before anything is sent; the offer stays usable', async () => {
      const { deepLink, processId } = await offer('degree-with-id')
      await submit(processId)
      // an empty wallet, and one holding only a degree
      const empty = await Wallet.create()
      const degreeOnly = await Wallet.create()
      const degree = await offer()
      await submit(degree.processId)
      await degreeOnly.receive(degree.deepLink)
      for (const wallet of [empty, degreeOnly]) {
        await assert.rejects(wallet.receive(deepLink, { share: 'all' }), (e: Error) => {
          assert.ok(e instanceof WalletUsageError, String(e))
          assert.match(
            e.message,
            /^no held credential satisfies input descriptor\(s\) VerifiableId-0 of presentation definition degree-with-id:holder-presentation$/,
          )
          return true
        })
        await assertUntouched(processId, 'nothing to present')
      }
      // the pre-authorized code was not redeemed: a wallet holding a VerifiableId still gets the credential
      const holder = await Wallet.create()
      const id = await offer('verifiable-id')
      await submit(id.processId, VERIFIABLE_ID)
      await holder.receive(id.deepLink)
      assert.equal((await holder.receive(deepLink, { share: 'all' })).status, 'issued')
      await assertIssuedTo(processId, holder, holder.credentials()[1]?.credential)
    })

    test('a P-256 holder cannot make a di_vp proof: a WalletUsageError before anything is sent', async () => {
      const wallet = await Wallet.create({ keyType: 'P-256' })
      const id = await offer('verifiable-id')
      await submit(id.processId, VERIFIABLE_ID)
      await wallet.receive(id.deepLink)
      const { deepLink, processId } = await offer('degree-with-id')
      await assert.rejects(wallet.receive(deepLink), (e: Error) => {
        assert.ok(e instanceof WalletUsageError, String(e))
        assert.match(e.message, /^a di_vp proof needs an Ed25519 holder key/)
        return true
      })
      await assertUntouched(processId, 'P-256 holder')
      const session = await wallet.startIssuance(deepLink)
      await session.token() // the code was not redeemed by the failed attempt
    })
  })

  // --- CLI -------------------------------------------------------------------------------------------------------

  describe('vc-harness wallet (CLI, child process)', PARALLEL, () => {
    test('receive (--tx-code) into a wallet file, then list it', async () => {
      const file = join(tempDir(), 'wallet.json')
      const { deepLink, processId, txCode } = await offer('pin')
      await submit(processId)
      const received = await cli([
        'wallet',
        'receive',
        deepLink,
        '--wallet',
        file,
        '--key-type',
        'secp256k1',
        '--tx-code',
        txCode ?? '',
      ])
      assert.equal(received.code, 0, received.stderr)
      const output = JSON.parse(received.stdout)
      assert.equal(output.status, 'issued')
      assert.match(output.holder, /^did:key:zQ3s/)
      assert.ok(output.notificationId)
      const [credential] = output.credentials
      assert.equal(credential.credentialSubject.id, output.holder)
      assert.deepEqual(credential.credentialSubject.degree, DEGREE[0]?.credentialSubject.degree)
      assert.equal(credential.configurationId, 'pin')
      assert.equal(credential.credentialIssuer, issuerUrl)
      assert.match(received.stderr, /^holder: did:key:zQ3s\S+ \(secp256k1, wallet /m)
      assert.match(received.stderr, /^verify: signature and holder binding checked, stored$/m)
      assert.match(received.stderr, /^notification: credential_accepted sent$/m)

      const process = await processOf(processId)
      assert.equal(process.status, 'ISSUED')
      assert.equal((process.data as { proof: { jwt: string } }[])[0]?.proof.jwt, credential.credential)
      assert.equal(
        (process.validator as unknown as Validator).verifiablePresentation.proof[0]?.creator.split('#')[0],
        output.holder,
      )

      const listed = await cli(['wallet', 'list', '--wallet', file])
      assert.equal(listed.code, 0, listed.stderr)
      const wallet = JSON.parse(listed.stdout)
      assert.equal(wallet.holder.did, output.holder)
      assert.equal(wallet.holder.keyType, 'secp256k1')
      assert.deepEqual(wallet.credentials, output.credentials)
    })

    test('--no-wait on a deferred flow prints pending', async () => {
      const deferred = await offer()
      const pending = await cli(['wallet', 'receive', deferred.deepLink, '--no-wait'])
      assert.equal(pending.code, 0, pending.stderr)
      const output = JSON.parse(pending.stdout)
      assert.deepEqual(Object.keys(output).sort(), ['holder', 'interval', 'status', 'transactionId'])
      assert.equal(output.status, 'pending')
      assert.equal(output.interval, INTERVAL_SECONDS)
      assert.match(pending.stderr, /^credential: deferred, transaction [0-9a-f-]{36}, interval 1 s$/m)
      const process = await processOf(deferred.processId)
      assert.equal(process.status, 'PENDING')
      assert.equal((process.validator as unknown as Validator).verifiablePresentation.holder, output.holder)
    })

    test('a failed flow exits 1 with a one-line error', async () => {
      const { deepLink, processId, txCode } = await offer('pin')
      const wrong = `${txCode?.slice(0, 5)}${(Number(txCode?.at(5)) + 1) % 10}`
      const failed = await cli(['wallet', 'receive', deepLink, '--tx-code', wrong])
      assert.equal(failed.code, 1)
      assert.equal(failed.stdout, '')
      const lines = failed.stderr.trimEnd().split('\n')
      assert.equal(
        lines.at(-1),
        'vc-harness wallet: token: 400 invalid_grant: tx_code is wrong (4 attempts left)',
      )
      assert.ok(!lines.some((line) => /^\s+at /.test(line)), `no stack trace:\n${failed.stderr}`)
      await assertUntouched(processId, 'CLI wrong tx_code')
    })
  })
})
