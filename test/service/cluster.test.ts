import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Agent, fetch as undiciFetch } from 'undici'
import { parseServeArgs } from '../../src/cli/serve.ts'
import { RelyingPartyClient, type SessionCreated, type SessionRead } from '../../src/client/index.ts'
import { type WebhookEndpoint, WebhookReceiver } from '../../src/harness/webhook-receiver.ts'
import { checkWorkerCount, maxWorkers, type RunningCluster, startCluster } from '../../src/service/cluster.ts'
import type { ServiceConfig } from '../../src/service/config/index.ts'
import type { StreamState } from '../../src/service/streams/routes.ts'
import { FORM_MEDIA_TYPE, PRE_AUTHORIZED_GRANT as PRE_AUTH } from '../../src/shared/wire.ts'
import { Wallet } from '../../src/wallet/index.ts'
import { DEMO, demoConfig } from '../helpers.ts'

// Two service processes (node:cluster) on one SQLite file: requests spread over both, and everything that
// must hold across processes does (tokens, flows, single use, webhooks exactly once, event streams).

// No keep-alive: every request opens its own connection, so the primary's round robin spreads them.
const fresh = new Agent({ pipelining: 0 })
const freshFetch = ((url: string | URL, init?: RequestInit) =>
  undiciFetch(url, { ...(init as object), dispatcher: fresh })) as unknown as typeof fetch

const CONTENT = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]

const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('cluster: 2 workers on one database', { timeout: 60_000 }, () => {
  let cluster: RunningCluster
  let receiver: WebhookReceiver
  let issuanceHook: WebhookEndpoint
  let verificationHook: WebhookEndpoint
  let dataDir: string
  let client: RelyingPartyClient
  const app = { keyId: DEMO.app.id, secret: DEMO.app.secret, tenant: DEMO.app.tenant, ssiconfig: 'degree' }
  const verifier = {
    keyId: DEMO.verifierApp.id,
    secret: DEMO.verifierApp.secret,
    tenant: DEMO.verifierApp.tenant,
    ssiconfig: 'degree-check',
  }
  const admin = { keyId: DEMO.admin.id, secret: DEMO.admin.secret, tenant: DEMO.admin.tenant }

  /** Runs `call` alone and returns its result with the pid of the worker whose request count went up. */
  async function servedBy<T>(call: () => Promise<T>): Promise<{ result: T; pid: number }> {
    const before = new Map((await cluster.stats()).map((s) => [s.pid, s.requests]))
    const result = await call()
    const moved = (await cluster.stats()).filter((s) => s.requests !== before.get(s.pid))
    assert.equal(moved.length, 1, 'exactly one worker served the request')
    return { result, pid: (moved[0] as { pid: number }).pid }
  }

  before(async () => {
    receiver = await WebhookReceiver.start()
    issuanceHook = receiver.endpoint('cluster issuance')
    verificationHook = receiver.endpoint('cluster verification')
    // The demo configuration with webhooks on both demo templates (mode "test" allows the loopback receiver).
    const config = structuredClone(demoConfig()) as ServiceConfig
    const tenant = config.tenants[0] as ServiceConfig['tenants'][number]
    Object.assign(tenant.issuanceTemplates[0] as object, {
      webhookUrl: issuanceHook.url,
      webhookSecret: issuanceHook.secret,
    })
    Object.assign(tenant.verificationTemplates[0] as object, {
      webhookUrl: verificationHook.url,
      webhookSecret: verificationHook.secret,
    })
    dataDir = mkdtempSync(join(tmpdir(), 'vc-harness-cluster-'))
    cluster = await startCluster({
      config,
      workers: 2,
      host: '127.0.0.1',
      port: 0,
      dataDir,
      webhookPollMs: 200,
      onWorkerExit: (info) => assert.fail(`worker ${info.pid} exited unexpectedly`),
    })
    client = new RelyingPartyClient(cluster.url, freshFetch)
  })

  after(async () => {
    const pids = cluster?.pids ?? []
    await cluster?.close()
    await receiver?.close()
    await fresh.close()
    // A clean close leaves no worker behind.
    for (const pid of pids) assert.equal(pidAlive(pid), false, `worker ${pid} still running`)
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  test('the worker count is bounded', () => {
    assert.throws(() => checkWorkerCount(0), RangeError)
    assert.throws(() => checkWorkerCount(1.5), RangeError)
    assert.throws(() => checkWorkerCount(maxWorkers() + 1), /from 1 to/)
    checkWorkerCount(maxWorkers())
  })

  test('requests spread over both processes', async () => {
    assert.equal(cluster.pids.length, 2)
    assert.notEqual(cluster.pids[0], cluster.pids[1])
    const before = await cluster.stats()
    for (let i = 0; i < 8; i++) assert.equal((await freshFetch(`${cluster.url}/health`)).status, 200)
    const after = await cluster.stats()
    for (const s of after) {
      const was = before.find((b) => b.pid === s.pid)?.requests ?? 0
      assert.ok(s.requests - was >= 2, `worker ${s.pid} served ${s.requests - was} of 8`)
    }
    const cpu = await cluster.cpuUsage()
    assert.ok(cpu.user > 0 && cpu.system >= 0)
  })

  test('a token minted by one worker is accepted by the other', async () => {
    const login = await servedBy(() => client.token(admin))
    let crossed = false
    for (let i = 0; i < 6 && !crossed; i++) {
      const use = await servedBy(() => client.listProcesses(login.result))
      assert.equal(use.result.status, 200, use.result.text)
      crossed = use.pid !== login.pid
    }
    assert.ok(crossed, 'the token was used on the other worker')
  })

  test('attended issuance, then verification, across workers: webhooks exactly once, streams see every change', async () => {
    const appToken = await client.token(app)
    const adminToken = await client.token(admin)
    const verifierToken = await client.token(verifier)
    const wallet = await Wallet.create({ fetch: freshFetch })

    const offer = await client.createOffer(appToken, 'degree')
    assert.equal(offer.status, 201, offer.text)
    const link = (offer.body as { credential_offer_uri: string }).credential_offer_uri
    const offerUri = new URLSearchParams(link.split('?')[1]).get('credential_offer_uri') ?? ''
    const processId = new URL(offerUri).pathname.split('/').pop() as string
    // The stream is served by one worker; the changes below land on both.
    const stream = await servedBy(() =>
      openStream(`${cluster.url}/admin/v1/issuanceRequests/${processId}/events`, appToken),
    )
    const before = new Map((await cluster.stats()).map((s) => [s.pid, s.requests]))

    const session = await wallet.startIssuance(link)
    await session.token()
    const pending = await session.requestCredential()
    assert.equal(pending.status, 202)
    const submitted = await client.submitCredentials(adminToken, processId, CONTENT)
    assert.equal(submitted.status, 200, submitted.text)
    const issued = await session.deferred(pending.transactionId)
    assert.equal(issued.status, 200, JSON.stringify(issued.body))
    await session.accept(issued)
    await session.notify('credential_accepted')

    const states = await stream.result.states
    // The other worker handled part of the flow, so some of these changes came to the stream relayed.
    const other = (await cluster.stats()).find((s) => s.pid !== stream.pid)
    assert.ok(
      other && other.requests > (before.get(other.pid) ?? 0),
      'the other worker served part of the flow',
    )
    assert.deepEqual(
      states.map((s) => s.step),
      ['snapshot', 'offer_retrieved', 'holder_bound', 'issued'],
    )
    assert.equal(states.at(-1)?.status, 'ISSUED')

    const created = await client.createSession(verifierToken, 'degree-check')
    assert.equal(created.status, 201, created.text)
    const { authentication_request: request, presentation_definition } = created.body as SessionCreated
    await wallet.present(request)
    const read = await client.readSession(verifierToken, presentation_definition.id)
    assert.equal((read.body as SessionRead).Status, 'VERIFIED', `HTTP ${read.status}`)

    await issuanceHook.waitForEvent({ id: processId, status: 'SUCCESS', timeoutMs: 5000 })
    await verificationHook.waitForEvent({
      id: presentation_definition.id,
      status: 'SUCCESS',
      timeoutMs: 5000,
    })
    // Both dispatchers scan the outbox (every 200 ms here): give a double delivery the time to show.
    await new Promise((resolve) => setTimeout(resolve, 800))
    for (const [hook, id] of [
      [issuanceHook, processId],
      [verificationHook, presentation_definition.id],
    ] as const) {
      const events = hook.distinctEvents(id)
      assert.equal(events.size, 1, hook.summary())
      assert.equal([...events.values()][0]?.length, 1, `one delivery: ${hook.summary()}`)
    }
  })

  test('a pre-authorized code is redeemed once when two workers race for it', async () => {
    const appToken = await client.token(app)
    for (let round = 0; round < 4; round++) {
      const offer = await client.createOffer(appToken, 'degree')
      assert.equal(offer.status, 201, offer.text)
      const link = (offer.body as { credential_offer_uri: string }).credential_offer_uri
      const offerUri = new URLSearchParams(link.split('?')[1]).get('credential_offer_uri') ?? ''
      const json = (await (await freshFetch(offerUri)).json()) as {
        credential_issuer: string
        grants: Record<string, { 'pre-authorized_code': string }>
      }
      const code = json.grants[PRE_AUTH]?.['pre-authorized_code'] ?? ''
      const before = new Map((await cluster.stats()).map((s) => [s.pid, s.requests]))
      // Two connections at once: the round robin hands them to different workers.
      const answers = await Promise.all(
        [0, 1].map(() =>
          freshFetch(`${json.credential_issuer}/token`, {
            method: 'POST',
            headers: { 'content-type': FORM_MEDIA_TYPE },
            body: new URLSearchParams({ grant_type: PRE_AUTH, 'pre-authorized_code': code }).toString(),
          }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error?: string } })),
        ),
      )
      const both = (await cluster.stats()).every((s) => s.requests > (before.get(s.pid) ?? 0))
      assert.ok(both, 'the two redemptions reached both workers')
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 400], JSON.stringify(answers))
      assert.equal(answers.find((a) => a.status === 400)?.body.error, 'invalid_grant')
    }
  })
})

/** An open SSE stream; `states` resolves, once the server ends it (after a final state), with its messages. */
async function openStream(url: string, token: string): Promise<{ states: Promise<StreamState[]> }> {
  const response = await freshFetch(url, { headers: { authorization: `jwt ${token}` } })
  assert.equal(response.status, 200)
  // Wrapped: a promise returned from an async function would be awaited with it.
  return { states: readAll(response) }
}

async function readAll(response: Response): Promise<StreamState[]> {
  let text = ''
  const decoder = new TextDecoder()
  const reading = (async () => {
    for await (const chunk of response.body ?? [])
      text += decoder.decode(chunk as Uint8Array, { stream: true })
  })()
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`stream did not end; got: ${text}`)), 10_000).unref(),
  )
  await Promise.race([reading, timeout])
  return text
    .split('\n\n')
    .filter((m) => m.includes('event: state'))
    .map((m) =>
      JSON.parse(
        m
          .split('\n')
          .find((l) => l.startsWith('data: '))
          ?.slice(6) ?? '{}',
      ),
    )
}

describe('serve --workers: refused settings', () => {
  const refusals = [
    [['--workers', '0'], /--workers: expected a whole number from 1 to \d+/],
    [
      ['--workers', '2', '--data', ':memory:'],
      /--workers needs a database folder \(--data DIR\), not :memory:/,
    ],
    [['--workers', '2', '--sandbox'], /--sandbox runs in one process: not with --workers/],
    [['--workers', '2', '--demo'], /--demo runs in one process: not with --workers/],
  ] as const

  // The checks run in-process (each child process costs ~2 s of start-up); main.ts turns an
  // ERR_PARSE_ARGS_* error into exit 2, which the one child process below proves end to end.
  test('a bad count, :memory:, --sandbox and --demo are usage errors naming the reason', () => {
    for (const [args, message] of refusals) {
      assert.throws(
        () => parseServeArgs(['--port', '0', ...args]),
        (error: Error & { code?: string }) =>
          error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && message.test(error.message),
        args.join(' '),
      )
    }
    // And the same options pass with one worker or a database folder, so the refusal is about --workers.
    assert.equal(parseServeArgs(['--workers', '2', '--data', 'dir']).workers, 2)
    assert.equal(parseServeArgs(['--sandbox', '--data', ':memory:']).workers, 1)
  })

  test('the CLI exits 2 on a refused setting and names it on stderr', () => {
    const [args, message] = refusals[2]
    const run = spawnSync(process.execPath, ['bin/vc-harness.mjs', 'serve', '--port', '0', ...args], {
      encoding: 'utf8',
      timeout: 30_000,
    })
    assert.equal(run.status, 2, `${args.join(' ')}: ${run.stderr}`)
    assert.match(run.stderr, message)
  })
})
