// The wallet process of a bench run: N simulated wallets, each running complete flows back to back
// against the target, with the relying party's calls made from here too, and the webhook sink. Forked by
// run.ts; its CPU is "the wallet side" of the figures.
//
// IPC: on start → { sink }; runner → { run, job }; → { progress }… → { measuring } → { progress }… →
// { result } | { failed }. argv[2], when given, is JSON `{ host, port, publicUrl }`: where the webhook sink
// listens and the URL the target reaches it at (`--target external`; default 127.0.0.1, a free port).

import { performance } from 'node:perf_hooks'
import { Agent } from 'undici'
import { createHolder, type Holder } from './holders.ts'
import { GuardedAgent, HostGuard } from './host-guard.ts'
import {
  CREDENTIAL_CONTENT,
  type FromWorker,
  STEPS,
  type ToWorker,
  type WorkerJob,
  type WorkerResult,
} from './protocol.ts'
import { BenchRelyingParty, processIdOf, StepError } from './relying-party.ts'
import { WebhookSink } from './webhook-sink.ts'

const send = (message: FromWorker) => process.send?.(message)

/** A deferred download right after the submission should be ready; a few short retries cover a cluster's lag. */
const DEFERRED_TRIES = 20
const DEFERRED_PAUSE_MS = 50

class Recorder {
  readonly stepMs: Record<string, number[]>
  readonly flowMs: number[] = []
  readonly errorKinds: Record<string, { count: number; sample: string }> = {}
  errors = 0
  constructor(steps: readonly string[]) {
    this.stepMs = Object.fromEntries(steps.map((s) => [s, [] as number[]]))
  }
  error(error: unknown, step: string) {
    this.errors++
    const e = error instanceof StepError ? error : new StepError(step, (error as Error).name, String(error))
    const key = `${e.step}: ${e.kind}`
    const entry = this.errorKinds[key]
    if (entry) entry.count++
    else this.errorKinds[key] = { count: 1, sample: e.message.slice(0, 500) }
  }
}

async function run(job: WorkerJob, sink: WebhookSink): Promise<WorkerResult> {
  const { target } = job
  if (job.webhookSecret) sink.useSecret(job.webhookSecret)
  // One connection pool for every wallet and the relying party, as many sockets as there are wallets.
  // Against an external deployment every request goes through the host guard (--allow-host).
  const pool = { connections: job.wallets * 2, keepAliveTimeout: 30_000, pipelining: 1 }
  const guard = job.allowHosts ? new HostGuard(job.allowHosts) : undefined
  const dispatcher = guard ? new GuardedAgent(guard, pool) : new Agent(pool)
  const rp = new BenchRelyingParty(target.urls, dispatcher)
  // Several instances of one deployment: each wallet stays with one (its offers name that instance's URL).
  const rps = [rp, ...(target.moreUrls ?? []).map((urls) => new BenchRelyingParty(urls, dispatcher))]
  const instanceOf = new Map<Holder, BenchRelyingParty>()
  const rpFor = (holder: Holder) => instanceOf.get(holder) ?? rp
  const keys = target.keys
  const content = target.content ?? CREDENTIAL_CONTENT
  const ready = job.flow === 'issuance-ready'
  const needVerification = job.flow === 'full' || job.flow === 'verification'
  if (!keys && (job.flow !== 'issuance-ready' || !target.offerDesk))
    throw new Error(`target ${target.label} cannot run ${job.flow} flows`)
  const loginApp = (on = rp) =>
    keys
      ? on.login({ ...keys.issuance, tenant: keys.tenant, ssiconfig: keys.issuance.template })
      : Promise.resolve('')
  // Issuance tokens also serve the verification flows' setup (one credential per wallet).
  const adminToken = keys ? await rp.login({ ...keys.admin, tenant: keys.tenant }) : ''
  const verifier = keys?.verification
  if (needVerification && !verifier) throw new Error(`target ${target.label} has no verification key`)
  const verifierToken =
    keys && verifier && needVerification
      ? await rp.login({ ...verifier, tenant: keys.tenant, ssiconfig: verifier.template })
      : ''
  // The full flow logs in on every flow (it is one of its steps); the halves reuse one token.
  const appToken = keys ? await loginApp() : ''
  const holders = await Promise.all(
    Array.from({ length: job.wallets }, () => createHolder(job.mode, dispatcher)),
  )
  for (const [i, holder] of holders.entries()) instanceOf.set(holder, rps[i % rps.length] ?? rp)

  let measuring = false
  let recorder = new Recorder(STEPS[job.flow])
  // Errors before the measured run still count: a warm-up failure is a failure.
  const warmup = new Recorder(STEPS[job.flow])

  /**
   * Issuance, from the offer to the notification; returns the process id (undefined for the peer).
   * Attended (`ready` false): the wallet asks first, gets 202, the administrator submits, the wallet
   * downloads the deferred credential. Ready: the relying party submits right after its offer (timed as
   * `submit`), so the credential request must answer 200 with the credential. The peer's offer desk
   * hands out offers it issues at once: it has no submission.
   */
  async function issue(holder: Holder, token: string, mark: (step: string) => void, ready = false) {
    const rp = rpFor(holder)
    const link = target.offerDesk
      ? await rp.deskOffer(target.offerDesk)
      : await rp.createOffer(token, keys?.issuance.template ?? '')
    mark('offer')
    if (ready && !target.offerDesk) {
      await rp.submit(token, processIdOf(link), content)
      mark('submit')
    }
    const session = await holder.startIssuance(link)
    mark('scan')
    await session.token()
    mark('token')
    const answer = await session.requestCredential()
    if (ready && answer.status !== 200)
      throw new StepError(
        'credential',
        `HTTP ${answer.status} (not issued at once)`,
        `the content was submitted before the wallet asked, so the credential request must answer 200 with the credential; got ${answer.status}`,
      )
    mark('credential')
    if (answer.status === 202) {
      const processId = processIdOf(link)
      await rp.submit(adminToken, processId, content)
      mark('submit')
      let tries = 0
      while ((await session.deferred(answer.transactionId)) === 'pending') {
        if (++tries >= DEFERRED_TRIES)
          throw new StepError('deferred', 'still pending', `still pending after ${tries} tries`)
        await new Promise((resolve) => setTimeout(resolve, DEFERRED_PAUSE_MS))
      }
      mark('deferred')
      await session.notify()
      mark('notify')
      return processId
    }
    await session.notify()
    mark('notify')
    return undefined
  }

  async function verify(holder: Holder, mark: (step: string) => void) {
    const rp = rpFor(holder)
    const created = await rp.createSession(verifierToken, verifier?.template ?? '')
    mark('session')
    const presentation = await holder.present(created.authentication_request)
    mark('request')
    await presentation.respond()
    mark('response')
    await rp.readVerified(verifierToken, created.presentation_definition.id)
    mark('read')
    return created.presentation_definition.id
  }

  async function flow(holder: Holder) {
    const counted = measuring
    const rec = counted ? recorder : warmup
    const startedAt = performance.now()
    let last = startedAt
    let step = STEPS[job.flow][0] ?? ''
    const mark = (done: string) => {
      const now = performance.now()
      if (counted) rec.stepMs[done]?.push(now - last)
      last = now
      const steps = STEPS[job.flow]
      step = steps[steps.indexOf(done) + 1] ?? done
    }
    try {
      if (job.flow === 'issuance' || ready) await issue(holder, appToken, mark, ready)
      else if (job.flow === 'verification') await verify(holder, mark)
      else {
        const token = await loginApp(rpFor(holder))
        mark('login')
        const processId = await issue(holder, token, mark)
        const sessionId = await verify(holder, mark)
        if (target.webhooks) {
          const timeout = job.webhookTimeoutSec * 1000
          const [issued, verified] = await Promise.all([
            processId ? sink.waitFor(processId, timeout) : undefined,
            sink.waitFor(sessionId, timeout),
          ]).catch((error: Error) => {
            throw new StepError('webhook', 'timeout', error.message)
          })
          for (const [arrival, expected] of [
            [issued, 'issuance.issued'],
            [verified, 'verification.verified'],
          ] as const) {
            if (arrival && (arrival.event !== expected || arrival.status !== 'SUCCESS'))
              throw new StepError(
                'webhook',
                `unexpected ${arrival.event}`,
                `expected ${expected} SUCCESS, got ${arrival.event} ${arrival.status}`,
              )
          }
          mark('webhook')
        }
      }
      if (counted) rec.flowMs.push(performance.now() - startedAt)
    } catch (error) {
      rec.error(error, step)
    }
  }

  // Verification flows need a credential in every wallet: one issuance each, unmeasured.
  // A refused host stops the run below (the loop returns at once): the runner reports it.
  if (job.flow === 'verification') {
    await Promise.all(holders.map((h) => issue(h, appToken, () => {}))).catch((error) => {
      if (!guard || guard.refused.size === 0) throw error
    })
  }

  const warmupEnd = performance.now() + job.warmupSec * 1000
  let measureStart = 0
  let deadline = Number.POSITIVE_INFINITY
  let started = 0
  let cpu0 = process.cpuUsage()
  let elu0 = performance.eventLoopUtilization()
  let peakRss = 0
  const beginMeasuring = () => {
    measuring = true
    recorder = new Recorder(STEPS[job.flow])
    measureStart = performance.now()
    deadline = measureStart + job.durationSec * 1000
    cpu0 = process.cpuUsage()
    elu0 = performance.eventLoopUtilization()
    peakRss = process.memoryUsage().rss
    send({ kind: 'measuring' })
  }
  if (job.warmupSec <= 0) beginMeasuring()
  const progress = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss)
    send({
      kind: 'progress',
      phase: measuring ? 'measure' : 'warmup',
      flows: recorder.flowMs.length,
      errors: recorder.errors,
    })
  }, 1000)

  async function loop(holder: Holder) {
    for (;;) {
      // The target sent a wallet to a host not named with --allow-host: stop at once, the runner says which.
      if (guard && guard.refused.size > 0) {
        if (!measuring) beginMeasuring()
        return
      }
      if (!measuring && performance.now() >= warmupEnd) beginMeasuring()
      if (measuring && (performance.now() >= deadline || (job.flows > 0 && started >= job.flows))) return
      if (measuring) started++
      await flow(holder)
    }
  }
  try {
    await Promise.all(holders.map(loop))
  } finally {
    clearInterval(progress)
  }
  const wallSec = (performance.now() - measureStart) / 1000
  const cpu = process.cpuUsage(cpu0)
  const elu = performance.eventLoopUtilization(elu0)
  peakRss = Math.max(peakRss, process.memoryUsage().rss)
  await dispatcher.close()
  for (const [key, entry] of Object.entries(warmup.errorKinds)) recorder.errorKinds[`warm-up ${key}`] = entry
  return {
    flows: recorder.flowMs.length,
    errors: recorder.errors + warmup.errors,
    errorKinds: recorder.errorKinds,
    wallSec,
    flowMs: recorder.flowMs,
    stepMs: recorder.stepMs,
    cpuUs: cpu.user + cpu.system,
    eventLoopBusy: elu.utilization,
    peakRssMb: Math.round(peakRss / 1048576),
    ...(guard && guard.refused.size > 0
      ? { refusedHosts: [...guard.refused].map(([host, url]) => ({ host, url })) }
      : {}),
  }
}

const sinkAt = process.argv[2]
  ? (JSON.parse(process.argv[2]) as { host: string; port: number; publicUrl?: string })
  : undefined
const sink = await WebhookSink.start(sinkAt).catch((error: Error) => {
  const message = `the webhook sink cannot listen on ${sinkAt?.host ?? '127.0.0.1'}:${sinkAt?.port ?? 0}: ${error.message}`
  // Exit once the message is out, so the runner reads the reason rather than a bare exit code.
  process.send?.({ kind: 'failed', message } satisfies FromWorker, () => process.exit(1))
  return new Promise<never>(() => {})
})
process.on('message', (message: ToWorker) => {
  if (message.kind !== 'run') return
  run(message.job, sink).then(
    (result) => send({ kind: 'result', result }),
    // A refused relying-party call (a login with a wrong key) is said plainly; anything else with its stack.
    (error: Error) =>
      send({
        kind: 'failed',
        message:
          error instanceof StepError
            ? `the wallet process could not start its flows: ${error.message}`
            : (error.stack ?? error.message),
      }),
  )
})
process.on('disconnect', () => {
  void sink.close().finally(() => process.exit(0))
})
send({ kind: 'sink', url: sink.url })
