/**
 * Verification benchmark: complete OpenID4VP verification flows per second, driven by the real simulated
 * wallet (Veramo + did-auth-siop + PEX) against the reference service on 127.0.0.1 with a durable database:
 * relying party creates a session (4.6) → wallet fetches and verifies the request object, selects its
 * credential (PEX), signs a JWT VP and posts it (direct_post; the service runs its checks) → relying party
 * reads the session (4.7), which must be VERIFIED. Each wallet first receives one degree credential
 * through the issuance flow; that setup is not measured.
 *
 *   npm run bench:verification                    # 1 wallet, then 8 concurrent wallets, 15 s each
 *   npm run bench:verification -- --wallets 1,4,8 --duration 20
 *   npm run bench:verification -- --smoke         # a few flows: proves the bench works (exit 1 on any error)
 *
 * The service runs in this process, the wallets in a forked child, so the CPU of each side is measured
 * apart (process.cpuUsage). The service's own running totals (verification.stats) split its checks into
 * signatures, PEX evaluation and status lists; one PEX evaluation and one Ed25519 signature check are also
 * timed in isolation. See bench/README.md.
 */
import { fork } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { PEX } from '@sphereon/pex'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../src/service/config/index.ts'
import { startServer } from '../src/service/server.ts'
import type { VerifierStats } from '../src/service/verification/service.ts'
import { resolveDidKey } from '../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../src/shared/jws.ts'
import { flowBenchArgs, percentile, r1, r2, readProcStat } from './common.ts'
import { STEPS, type WalletJob, type WalletResult } from './verification-wallets.ts'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const DEMO = {
  tenant: 'demo',
  verifier: {
    template: 'degree-check',
    keyId: '5d2e8a47-1c3b-4f6d-8e9a-2b7c4d1e6f02',
    secret: 'demo-verifier-secret-H3nR6yK1cB8qW5',
  },
  issuer: {
    template: 'degree',
    keyId: '0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01',
    secret: 'demo-app-secret-7Qm2xV9pL4sT8wZ1',
  },
}

const { smoke, concurrencies, durationSec, out } = flowBenchArgs('bench-verification', ROOT)

const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0)

/**
 * The service's two kinds of check work, timed in isolation on one verified flow's data: one PEX
 * evaluateCredentials of the session's presentation definition over the presented JWT credential (as
 * checks.ts calls it: a new PEX per evaluation), and one Ed25519 verifyJws of that credential (a flow
 * verifies two: the VP and the credential).
 */
function isolatedCheckMs(sample: NonNullable<WalletResult['sample']>) {
  const vp = decodeJws(sample.vpToken).payload.vp as { verifiableCredential: string[] }
  const credential = vp.verifiableCredential[0]
  if (typeof credential !== 'string') throw new Error('the sample vp_token carries no JWT credential')
  const issuerKey = resolveDidKey(decodeJws(credential).header.kid as string)
  const evaluate = () => new PEX().evaluateCredentials(sample.definition as never, [credential])
  if (evaluate().areRequiredCredentialsPresent !== 'info')
    throw new Error('isolated PEX evaluation of the sample does not pass: the timing would be meaningless')
  const verify = () => verifyJws(credential, issuerKey.publicKey, { algorithms: ['EdDSA'] })
  for (let i = 0; i < 50; i++) {
    evaluate()
    verify()
  }
  let n = 300
  let at = performance.now()
  for (let i = 0; i < n; i++) evaluate()
  const pexEvaluate = (performance.now() - at) / n
  n = 2000
  at = performance.now()
  for (let i = 0; i < n; i++) verify()
  const signatureVerify = (performance.now() - at) / n
  return {
    pexEvaluateMs: r2(pexEvaluate),
    signatureVerifyMs: r2(signatureVerify),
    pexPerSignature: r1(pexEvaluate / signatureVerify),
  }
}

/** Above this many cores used by other processes during a run, the figures are flagged as depressed. */
const NOISY_CORES = 0.15

/**
 * Runs the wallet process; `onReady` is called once its setup (issuance, warm-up) is done and before
 * its measured run starts, so the caller can snapshot what it measures.
 */
function runWallets(job: WalletJob, onReady: () => void): Promise<WalletResult> {
  return new Promise((resolve, reject) => {
    const child = fork(join(ROOT, 'bench', 'verification-wallets.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: 'inherit',
    })
    child.on('message', (message: { kind: string; result?: WalletResult; message?: string }) => {
      if (message.kind === 'ready') {
        onReady()
        child.send({ kind: 'go' })
        return
      }
      child.disconnect()
      if (message.kind === 'result' && message.result) resolve(message.result)
      else reject(new Error(`wallet process failed: ${message.message}`))
    })
    child.once('exit', (code) => code !== 0 && reject(new Error(`wallet process exited with ${code}`)))
    child.send({ kind: 'run', job })
  })
}

interface Row {
  wallets: number
  flows: number
  errors: number
  errorKinds: Record<string, number>
  errorSamples: string[]
  flowsPerSec: number
  flowMs: { p50: number; p95: number; p99: number; mean: number }
  stepP50Ms: Record<string, number | null>
  /**
   * Mean wall time of one flow, split. `serviceChecks` is the service's verifyResponse (its own running
   * totals ÷ responses), of which `signatures` (VP + credential verifyJws, did:key resolution, binding
   * checks), `pex` (evaluateCredentials + submission check) and `status` (status-list lookup and its
   * signature check). `walletLocal` is the wallet's work outside its two HTTP exchanges: request object
   * verification, PEX selection, VP layout and signing. `httpOther` = flow − serviceChecks − walletLocal:
   * the four HTTP exchanges (create session, GET request_uri, POST response_uri, read session) as both
   * clients see them, minus the checks inside the POST — i.e. loopback transport, undici/fetch on the
   * wallet side, Fastify routing, auth and schemas, SQLite reads and the two fsynced commits (session
   * created, session completed), event emission; with several wallets also the time each request waits
   * for an event loop busy with other flows' work (the wallets share one, the service has one).
   */
  splitMsPerFlow: {
    flow: number
    serviceChecks: number
    signatures: number
    pex: number
    status: number
    walletLocal: number
    walletHttp: { request: number; response: number }
    httpOther: number
  }
  cpuMsPerFlow: { wallet: number; service: number }
  /** share of the run each process's event loop was busy (1: saturated; the wallets share one loop) */
  eventLoopBusy: { wallet: number; service: number }
  peakRssMb: { wallet: number; service: number }
  setupSec: number
  /**
   * Cores used during the measured run by everything but the two bench processes (from /proc/stat; null
   * off Linux), and stolen by the hypervisor.
   */
  machine: { otherCores: number | null; stealCores: number | null }
}

async function main(): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vc-harness-bench-verification-'))
  const server = await startServer({
    config: loadConfigFile(DEMO_CONFIG_PATH),
    host: '127.0.0.1',
    port: 0,
    dataDir,
  })
  const stats: VerifierStats = server.app.services.verification.stats
  const rows: Row[] = []
  let sample: WalletResult['sample']
  let isolated: ReturnType<typeof isolatedCheckMs> | undefined
  let failed = false
  try {
    for (const wallets of concurrencies) {
      const job: WalletJob = {
        origin: server.url,
        tenant: DEMO.tenant,
        verification: DEMO.verifier,
        issuance: DEMO.issuer,
        wallets,
        durationSec,
        flows: smoke ? 3 * wallets : 0,
      }
      // Snapshots taken when the wallets are set up, so setup and warm-up stay out of every figure.
      let before = { ...stats }
      let machine0 = readProcStat()
      let at0 = performance.now()
      let cpu0 = process.cpuUsage()
      let elu0 = performance.eventLoopUtilization()
      const result = await runWallets(job, () => {
        before = { ...stats }
        machine0 = readProcStat()
        at0 = performance.now()
        cpu0 = process.cpuUsage()
        elu0 = performance.eventLoopUtilization()
      })
      const serviceUsed = process.cpuUsage(cpu0)
      const serviceLoopBusy = performance.eventLoopUtilization(elu0).utilization
      const windowSec = (performance.now() - at0) / 1000
      const machine1 = readProcStat()
      const serviceCpuSec = (serviceUsed.user + serviceUsed.system) / 1e6
      const flows = result.flows || 1
      const responses = stats.responses - before.responses || 1
      const perResponse = (key: Exclude<keyof VerifierStats, 'responses'>) =>
        (stats[key] - before[key]) / responses
      const flowMean = mean(result.flowMs)
      const serviceChecks = perResponse('checksMs')
      const walletLocal = mean(result.walletLocalMs)
      rows.push({
        wallets,
        flows: result.flows,
        errors: result.errors,
        errorKinds: result.errorKinds,
        errorSamples: result.errorSamples,
        flowsPerSec: r1(result.flows / result.wallSec),
        flowMs: {
          p50: r1(percentile(result.flowMs, 50)),
          p95: r1(percentile(result.flowMs, 95)),
          p99: r1(percentile(result.flowMs, 99)),
          mean: r1(flowMean),
        },
        stepP50Ms: Object.fromEntries(
          STEPS.map((s) => [s, result.stepMs[s].length ? r2(percentile(result.stepMs[s], 50)) : null]),
        ),
        splitMsPerFlow: {
          flow: r2(flowMean),
          serviceChecks: r2(serviceChecks),
          signatures: r2(perResponse('signaturesMs')),
          pex: r2(perResponse('pexMs')),
          status: r2(perResponse('statusMs')),
          walletLocal: r2(walletLocal),
          walletHttp: {
            request: r2(mean(result.httpMs.request)),
            response: r2(mean(result.httpMs.response)),
          },
          httpOther: r2(flowMean - serviceChecks - walletLocal),
        },
        cpuMsPerFlow: {
          wallet: r2((result.cpuSec * 1000) / flows),
          service: r2((serviceCpuSec * 1000) / flows),
        },
        eventLoopBusy: { wallet: r2(result.eventLoopBusy), service: r2(serviceLoopBusy) },
        // maxRSS: peaks since each process started (the service's spans every run so far)
        peakRssMb: { wallet: result.peakRssMb, service: Math.round(process.resourceUsage().maxRSS / 1024) },
        setupSec: r1(result.setupSec),
        machine:
          machine0 && machine1
            ? {
                otherCores: r2(
                  Math.max(0, machine1.busy - machine0.busy - serviceCpuSec - result.cpuSec) / windowSec,
                ),
                stealCores: r2((machine1.steal - machine0.steal) / windowSec),
              }
            : { otherCores: null, stealCores: null },
      })
      sample = result.sample ?? sample
      if (result.errors > 0 || result.flows === 0) failed = true
    }
    if (sample) isolated = isolatedCheckMs(sample)
    else failed = true
  } finally {
    await server.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
  console.log(
    `\nverification flows (real wallet, durable SQLite) on ${cpus().length} cores, Node ${process.version}\n`,
  )
  console.log(
    'wallets  flows/s   p50 ms   p95 ms   p99 ms  wallet CPU ms/flow  service CPU ms/flow  ' +
      'checks ms/flow (sig / PEX / status)  wallet local ms  HTTP/other ms  errors',
  )
  for (const row of rows) {
    const s = row.splitMsPerFlow
    console.log(
      [
        String(row.wallets).padStart(7),
        String(row.flowsPerSec).padStart(8),
        String(row.flowMs.p50).padStart(8),
        String(row.flowMs.p95).padStart(8),
        String(row.flowMs.p99).padStart(8),
        String(row.cpuMsPerFlow.wallet).padStart(19),
        String(row.cpuMsPerFlow.service).padStart(20),
        `${s.serviceChecks} (${s.signatures} / ${s.pex} / ${s.status})`.padStart(36),
        String(s.walletLocal).padStart(16),
        String(s.httpOther).padStart(14),
        String(row.errors).padStart(7),
      ].join(' '),
    )
  }
  console.log('\nper-step p50 ms (null: step not seen):')
  for (const row of rows) console.log(`  ${row.wallets} wallet(s):`, JSON.stringify(row.stepP50Ms))
  console.log('mean ms per flow (flow = service checks + wallet local + HTTP/other):')
  for (const row of rows) console.log(`  ${row.wallets} wallet(s):`, JSON.stringify(row.splitMsPerFlow))
  console.log(
    'event loop busy (wallet / service):',
    rows.map((r) => `${r.wallets}: ${r.eventLoopBusy.wallet} / ${r.eventLoopBusy.service}`).join(', '),
  )
  console.log(
    'peak RSS MB (wallet / service):',
    rows.map((r) => `${r.wallets}: ${r.peakRssMb.wallet} / ${r.peakRssMb.service}`).join(', '),
  )
  if (isolated) {
    console.log(
      `isolated, in the service process: one PEX evaluateCredentials ${isolated.pexEvaluateMs} ms, ` +
        `one Ed25519 verifyJws ${isolated.signatureVerifyMs} ms (PEX = ${isolated.pexPerSignature} × a signature check)`,
    )
  }
  console.log(
    'other processes, cores (steal):',
    rows.map((r) => `${r.wallets}: ${r.machine.otherCores} (${r.machine.stealCores})`).join(', '),
  )
  const noisy = rows.filter((r) => (r.machine.otherCores ?? 0) > NOISY_CORES)
  if (noisy.length > 0) {
    console.log(
      `WARNING: the machine was not quiet — other processes used up to ${Math.max(...noisy.map((r) => r.machine.otherCores ?? 0))} cores during a run; the figures are depressed`,
    )
  }
  for (const row of rows.filter((r) => r.errors > 0))
    console.log(`errors with ${row.wallets} wallet(s):`, JSON.stringify(row.errorKinds))
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        node: process.version,
        cores: cpus().length,
        smoke,
        durationSec,
        machineQuiet: noisy.length === 0,
        isolatedCheckMs: isolated ?? null,
        rows,
      },
      null,
      2,
    )}\n`,
  )
  console.log(`\nwritten: ${relative(process.cwd(), out)}`)
  if (failed) {
    console.error(
      '!!! BENCH RUN HAD FLOW ERRORS:',
      JSON.stringify(rows.map((r) => ({ wallets: r.wallets, kinds: r.errorKinds, samples: r.errorSamples }))),
    )
    if (!sample) console.error('!!! no flow verified: no sample for the isolated timings')
    return 1
  }
  return 0
}

process.exitCode = await main()
