/**
 * The wallet side of bench/verification.ts, in a child process: N simulated wallets (the real Veramo /
 * did-auth-siop wallet of src/wallet) each first receive one UniversityDegreeCredential (setup, not
 * measured), then run complete verification flows back to back: relying party creates a session → wallet
 * presents (request object, PEX selection, JWT VP, direct_post) → relying party reads the session, which
 * must be VERIFIED. Reports per-flow and per-step latencies, the wallet's own HTTP time (from undici's
 * diagnostics channels, so the wallet runs unmodified) and this process's CPU (the wallet's share; the
 * relying party's two calls per flow are made from this process too).
 *
 * IPC: parent → `{ kind: 'run', job }`; child → `{ kind: 'ready' }` once set up; parent → `{ kind: 'go' }`
 * (after snapshotting its own counters); child → `{ kind: 'result', result }` | `{ kind: 'failed', message }`.
 */
import { subscribe } from 'node:diagnostics_channel'
import { performance } from 'node:perf_hooks'
import { RelyingPartyClient, type SessionCreated, type SessionRead } from '../src/client/index.ts'
import { type PresentStep, Wallet, WalletProtocolError } from '../src/wallet/index.ts'

export interface WalletJob {
  origin: string
  tenant: string
  /** verification template (ssiConfigId) and the application key linked to it */
  verification: { template: string; keyId: string; secret: string }
  /** issuance template and the application key linked to it, for the setup credential */
  issuance: { template: string; keyId: string; secret: string }
  wallets: number
  /** Stop starting flows after this many seconds, or after `flows` flows (0: no limit), whichever comes first. */
  durationSec: number
  flows: number
}

/**
 * Steps of one flow: `session` and `read` are the relying party's calls (4.6, 4.7); the others are the
 * wallet's onStep events of present(), each timed from the previous event: `request` = GET request_uri +
 * request object verification (did-auth-siop), `select` = PEX selection over the held credentials,
 * `status` = status lists read by the wallet (only the 'revoked-credential' misbehaviour: absent here),
 * `response` = VP layout and signing (did-auth-siop + PEX) + POST response_uri (which includes the
 * service's checks).
 */
export const STEPS = ['session', 'request', 'select', 'status', 'response', 'read'] as const
export type Step = (typeof STEPS)[number]

export interface WalletResult {
  flows: number
  errors: number
  /** error count per kind (step and what went wrong) */
  errorKinds: Record<string, number>
  errorSamples: string[]
  wallSec: number
  flowMs: number[]
  stepMs: Record<Step, number[]>
  /** per flow: the wallet's two HTTP exchanges, request to last byte of the answer */
  httpMs: { request: number[]; response: number[] }
  /** per flow: wallet time outside its HTTP exchanges = (request − GET) + select + status + (response − POST) */
  walletLocalMs: number[]
  /** this process's CPU (all threads) during the measured run */
  cpuSec: number
  /** share of the measured run its event loop was busy (1: saturated) */
  eventLoopBusy: number
  peakRssMb: number
  /** setup: logins, one issuance and one warm-up flow per wallet */
  setupSec: number
  /** of the last verified flow: the definition as the service evaluates it and the vp_token, for isolated timing */
  sample: { definition: Record<string, unknown>; vpToken: string } | undefined
}

const CONTENT = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]

class FlowError extends Error {
  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(message)
  }
}

const OID4VP_PATH = /\/oid4vp\/[^/]+\/(requests|responses)\/([^/?#]+)/

/**
 * Times every undici request of this process whose path is a request_uri or response_uri, keyed
 * `requests|<session id>` / `responses|<session id>`. The wallet's own HTTP goes through undici.request,
 * which publishes `undici:request:*` on node:diagnostics_channel; `trailers` fires when the answer's last
 * byte is parsed.
 */
function watchWalletHttp() {
  const open = new WeakMap<object, { key: string; at: number }>()
  const done = new Map<string, number>()
  subscribe('undici:request:create', (message) => {
    const { request } = message as { request: { path?: string } }
    const match = OID4VP_PATH.exec(request.path ?? '')
    if (match)
      open.set(request, { key: `${match[1]}|${decodeURIComponent(match[2] ?? '')}`, at: performance.now() })
  })
  subscribe('undici:request:trailers', (message) => {
    const { request } = message as { request: object }
    const started = open.get(request)
    if (!started) return
    open.delete(request)
    done.set(started.key, (done.get(started.key) ?? 0) + performance.now() - started.at)
  })
  /** The time spent on `kind` exchanges of session `id` (undefined if none was seen); forgets them. */
  return (kind: 'requests' | 'responses', id: string): number | undefined => {
    const key = `${kind}|${id}`
    const ms = done.get(key)
    done.delete(key)
    return ms
  }
}

async function run(job: WalletJob): Promise<WalletResult> {
  const setupAt = performance.now()
  const client = new RelyingPartyClient(job.origin)
  const verifierToken = await client.token({
    keyId: job.verification.keyId,
    secret: job.verification.secret,
    tenant: job.tenant,
    ssiconfig: job.verification.template,
  })
  const issuerToken = await client.token({
    keyId: job.issuance.keyId,
    secret: job.issuance.secret,
    tenant: job.tenant,
    ssiconfig: job.issuance.template,
  })
  // Setup (not measured): every wallet receives one degree credential through attended issuance —
  // offer, the relying party's submission, then the whole OpenID4VCI flow in the wallet.
  const wallets = await Promise.all(
    Array.from({ length: job.wallets }, async () => {
      const wallet = await Wallet.create()
      const offer = await client.createOffer(issuerToken, job.issuance.template)
      if (offer.status !== 201) throw new Error(`setup offer: HTTP ${offer.status} ${offer.text}`)
      const { credential_offer_uri: link, tx_code: txCode } = offer.body as {
        credential_offer_uri: string
        tx_code?: string
      }
      const processId = new URL(
        new URLSearchParams(link.split('?')[1]).get('credential_offer_uri') ?? '',
      ).pathname
        .split('/')
        .pop() as string
      const submitted = await client.submitCredentials(issuerToken, processId, CONTENT)
      if (submitted.status !== 200)
        throw new Error(`setup submit: HTTP ${submitted.status} ${submitted.text}`)
      const received = await wallet.receive(link, txCode === undefined ? {} : { txCode })
      if (received.status !== 'issued') throw new Error(`setup receive: ${received.status}, not issued`)
      return wallet
    }),
  )
  const httpOf = watchWalletHttp()

  /** One complete flow; throws a FlowError naming the step that failed. */
  async function flow(wallet: Wallet) {
    const at = performance.now()
    const created = await client.createSession(verifierToken, job.verification.template)
    const sessionMs = performance.now() - at
    if (created.status !== 201) {
      throw new FlowError(
        `session: HTTP ${created.status}`,
        `createSession: HTTP ${created.status} ${created.text}`,
      )
    }
    const { authentication_request: link, presentation_definition } = created.body as SessionCreated
    const id = presentation_definition.id

    const steps: Partial<Record<PresentStep, number>> = {}
    let last = performance.now()
    let presented: Awaited<ReturnType<Wallet['present']>>
    try {
      presented = await wallet.present(link, {
        onStep: (step) => {
          const now = performance.now()
          steps[step] = (steps[step] ?? 0) + now - last
          last = now
        },
      })
    } catch (error) {
      httpOf('requests', id)
      httpOf('responses', id)
      if (error instanceof WalletProtocolError) {
        throw new FlowError(
          `wallet ${error.step}: ${error.status} ${error.error}`,
          `present: ${error.message}`,
        )
      }
      const e = error as Error
      throw new FlowError(`wallet: ${e.name}`, `present: ${e.name}: ${e.message}`)
    }
    const getMs = httpOf('requests', id)
    const postMs = httpOf('responses', id)

    const readAt = performance.now()
    const read = await client.readSession(verifierToken, id)
    const readMs = performance.now() - readAt
    const body = read.body as SessionRead
    if (read.status !== 200 || body.Status !== 'VERIFIED') {
      throw new FlowError(
        `read: HTTP ${read.status} ${body?.Status ?? ''}`.trim(),
        `readSession ${id}: HTTP ${read.status} ${read.text.slice(0, 400)}`,
      )
    }
    if (getMs === undefined || postMs === undefined) {
      throw new FlowError('bench: wallet HTTP not seen', `no undici timing for session ${id}'s GET or POST`)
    }
    const definition = (body.AuthRequest as { presentation_definition?: Record<string, unknown> })
      .presentation_definition
    return {
      flowMs: performance.now() - at,
      stepMs: { ...steps, session: sessionMs, read: readMs } as Partial<Record<Step, number>>,
      getMs,
      postMs,
      sample: definition && presented.vpToken ? { definition, vpToken: presented.vpToken } : undefined,
    }
  }

  // Warm-up (not measured): one flow per wallet, so the measured run starts with the libraries loaded
  // and the hot paths compiled — the first flow of a fresh process takes ~1 s and would otherwise be the
  // p99 of a run with several wallets.
  try {
    await Promise.all(wallets.map(flow))
  } catch (error) {
    throw new Error(`warm-up flow: ${(error as Error).message}`)
  }
  const setupSec = (performance.now() - setupAt) / 1000

  // Setup done: the parent snapshots its CPU and the service's check totals, then says go.
  await new Promise<void>((resolve) => {
    const onGo = (message: { kind: string }) => {
      if (message.kind !== 'go') return
      process.off('message', onGo)
      resolve()
    }
    process.on('message', onGo)
    process.send?.({ kind: 'ready' })
  })

  const stepMs = Object.fromEntries(STEPS.map((s) => [s, [] as number[]])) as Record<Step, number[]>
  const flowMs: number[] = []
  const httpMs = { request: [] as number[], response: [] as number[] }
  const walletLocalMs: number[] = []
  const errorKinds: Record<string, number> = {}
  const errorSamples: string[] = []
  let sample: WalletResult['sample']
  let errors = 0
  let started = 0
  const cpu0 = process.cpuUsage()
  const elu0 = performance.eventLoopUtilization()
  const t0 = performance.now()
  const deadline = t0 + job.durationSec * 1000

  function record(done: Awaited<ReturnType<typeof flow>>) {
    flowMs.push(done.flowMs)
    for (const step of STEPS) {
      const ms = done.stepMs[step]
      if (ms !== undefined) stepMs[step].push(ms)
    }
    httpMs.request.push(done.getMs)
    httpMs.response.push(done.postMs)
    const { request = 0, select = 0, status = 0, response = 0 } = done.stepMs
    walletLocalMs.push(request - done.getMs + select + status + response - done.postMs)
    sample = done.sample ?? sample
  }

  async function loop(wallet: Wallet) {
    while (performance.now() < deadline && (job.flows === 0 || started < job.flows)) {
      started++
      try {
        record(await flow(wallet))
      } catch (error) {
        errors++
        const kind = error instanceof FlowError ? error.kind : `bench: ${(error as Error).name}`
        errorKinds[kind] = (errorKinds[kind] ?? 0) + 1
        if (errorSamples.length < 5) errorSamples.push((error as Error).message)
      }
    }
  }
  await Promise.all(wallets.map(loop))
  const wallSec = (performance.now() - t0) / 1000
  const used = process.cpuUsage(cpu0)
  const eventLoopBusy = performance.eventLoopUtilization(elu0).utilization
  return {
    flows: flowMs.length,
    errors,
    errorKinds,
    errorSamples,
    wallSec,
    flowMs,
    stepMs,
    httpMs,
    walletLocalMs,
    cpuSec: (used.user + used.system) / 1e6,
    eventLoopBusy,
    // maxRSS is in KiB: the peak of this process's whole life (setup included)
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    setupSec,
    sample,
  }
}

process.on('message', (message: { kind: string; job?: WalletJob }) => {
  if (message.kind !== 'run' || !message.job) return
  run(message.job).then(
    (result) => process.send?.({ kind: 'result', result }),
    (error: Error) => process.send?.({ kind: 'failed', message: error.stack ?? error.message }),
  )
})
process.on('disconnect', () => process.exit(0))
