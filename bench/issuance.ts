/**
 * Issuance benchmark: complete attended-issuance flows per second, driven by the real simulated wallet
 * (Veramo + oid4vci-client) against the reference service on 127.0.0.1 with a durable database:
 * offer → scan (offer + metadata) → token → credential (202) → relying-party submission → deferred
 * download → Veramo verification and storage → notification.
 *
 *   npm run bench:issuance                    # 1 wallet, then 8 concurrent wallets, 15 s each
 *   npm run bench:issuance -- --wallets 1,4,16 --duration 20
 *   npm run bench:issuance -- --smoke         # a few flows: proves the bench works (exit 1 on any error)
 *
 * The service runs in this process, the wallets in a forked child, so the CPU of each side is measured
 * apart (process.cpuUsage); crypto is timed in isolation and reported per flow. See bench/README.md.
 */
import { fork } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../src/service/config/index.ts'
import { startServer } from '../src/service/server.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../src/shared/did-key.ts'
import { signJws, verifyJws } from '../src/shared/jws.ts'
import { flowBenchArgs, percentile, r1, r2 } from './common.ts'
import { STEPS, type WalletJob, type WalletResult } from './issuance-wallets.ts'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const DEMO = {
  app: { keyId: '0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01', secret: 'demo-app-secret-7Qm2xV9pL4sT8wZ1' },
  admin: { keyId: '9a4f3c2b-6e1d-4b8a-a7c5-3d2e1f0b9c03', secret: 'demo-admin-secret-Z8kP3mN6vQ1rT4' },
}

const { smoke, concurrencies, durationSec, out } = flowBenchArgs('bench-issuance', ROOT)

/** Service-side crypto per flow, timed in isolation: one proof verification and one credential signature (Ed25519). */
function serviceCryptoMs() {
  const holder = generateKeyPair('EdDSA')
  const holderKey = didKeyFromPublicKey(holder.publicKey)
  const issuer = generateKeyPair('EdDSA')
  const proof = signJws(
    { alg: 'EdDSA', typ: 'openid4vci-proof+jwt', kid: holderKey.kid },
    { aud: 'x', iat: 1, nonce: 'n' },
    holder.privateKey,
  )
  const n = 2000
  let at = performance.now()
  for (let i = 0; i < n; i++) verifyJws(proof, holderKey.publicKey, { algorithms: ['EdDSA'] })
  const proofVerify = (performance.now() - at) / n
  const vc = {
    vc: {
      type: ['VerifiableCredential', 'UniversityDegreeCredential'],
      credentialSubject: { id: holderKey.did, degree: { name: 'x'.repeat(40) } },
    },
  }
  at = performance.now()
  for (let i = 0; i < n; i++)
    signJws({ alg: 'EdDSA', typ: 'JWT', kid: holderKey.kid }, { ...vc, jti: String(i) }, issuer.privateKey)
  const credentialSign = (performance.now() - at) / n
  return { proofVerify, credentialSign }
}

function runWallets(job: WalletJob): Promise<WalletResult> {
  return new Promise((resolve, reject) => {
    const child = fork(join(ROOT, 'bench', 'issuance-wallets.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: 'inherit',
    })
    child.once('message', (message: { kind: string; result?: WalletResult; message?: string }) => {
      child.disconnect()
      if (message.kind === 'result' && message.result) resolve(message.result)
      else reject(new Error(`wallet process failed: ${message.message}`))
    })
    child.once('exit', (code) => code !== 0 && reject(new Error(`wallet process exited with ${code}`)))
    child.send({ kind: 'run', job })
  })
}

async function main(): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vc-harness-bench-issuance-'))
  const server = await startServer({
    config: loadConfigFile(DEMO_CONFIG_PATH),
    host: '127.0.0.1',
    port: 0,
    dataDir,
  })
  const rows: Record<string, unknown>[] = []
  let failed = false
  try {
    const serviceCrypto = serviceCryptoMs()
    for (const wallets of concurrencies) {
      const job: WalletJob = {
        origin: server.url,
        tenant: 'demo',
        template: 'degree',
        app: DEMO.app,
        admin: DEMO.admin,
        wallets,
        durationSec,
        flows: smoke ? 3 * wallets : 0,
      }
      const cpu0 = process.cpuUsage()
      const result = await runWallets(job)
      const serviceUsed = process.cpuUsage(cpu0)
      const serviceCpuSec = (serviceUsed.user + serviceUsed.system) / 1e6
      const flows = result.flows || 1
      const walletCrypto = result.cryptoMs.proofSign + result.cryptoMs.credentialVerify
      const serviceCryptoPerFlow = serviceCrypto.proofVerify + serviceCrypto.credentialSign
      const row = {
        wallets,
        flows: result.flows,
        errors: result.errors,
        errorSamples: result.errorSamples,
        flowsPerSec: r1(result.flows / result.wallSec),
        flowMs: {
          p50: r1(percentile(result.flowMs, 50)),
          p95: r1(percentile(result.flowMs, 95)),
          p99: r1(percentile(result.flowMs, 99)),
        },
        stepP50Ms: Object.fromEntries(STEPS.map((s) => [s, r2(percentile(result.stepMs[s], 50))])),
        cpuMsPerFlow: {
          wallet: r2((result.cpuSec * 1000) / flows),
          service: r2((serviceCpuSec * 1000) / flows),
        },
        cryptoMsPerFlow: {
          wallet: r2(walletCrypto),
          service: r2(serviceCryptoPerFlow),
          walletDetail: {
            proofSign: r2(result.cryptoMs.proofSign),
            credentialVerify: r2(result.cryptoMs.credentialVerify),
          },
          serviceDetail: {
            proofVerify: r2(serviceCrypto.proofVerify),
            credentialSign: r2(serviceCrypto.credentialSign),
          },
        },
        peakRssMb: { wallet: result.peakRssMb, service: Math.round(process.memoryUsage().rss / 1048576) },
      }
      rows.push(row)
      if (result.errors > 0 || result.flows === 0) failed = true
    }
  } finally {
    await server.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
  console.log(
    `\nissuance flows (real wallet, durable SQLite) on ${cpus().length} cores, Node ${process.version}\n`,
  )
  console.log(
    'wallets  flows/s   p50 ms   p95 ms   p99 ms   wallet CPU ms/flow  service CPU ms/flow  crypto ms/flow (wallet / service)  errors',
  )
  for (const row of rows as {
    wallets: number
    flowsPerSec: number
    flowMs: Record<string, number>
    cpuMsPerFlow: Record<string, number>
    cryptoMsPerFlow: { wallet: number; service: number }
    errors: number
  }[]) {
    console.log(
      [
        String(row.wallets).padStart(7),
        String(row.flowsPerSec).padStart(8),
        String(row.flowMs.p50).padStart(8),
        String(row.flowMs.p95).padStart(8),
        String(row.flowMs.p99).padStart(8),
        String(row.cpuMsPerFlow.wallet).padStart(19),
        String(row.cpuMsPerFlow.service).padStart(20),
        `${row.cryptoMsPerFlow.wallet} / ${row.cryptoMsPerFlow.service}`.padStart(34),
        String(row.errors).padStart(7),
      ].join(' '),
    )
  }
  console.log(
    '\nper-step p50 ms:',
    JSON.stringify(rows.map((r) => ({ wallets: r.wallets, ...(r.stepP50Ms as object) }))),
  )
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(
    out,
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, cores: cpus().length, smoke, rows }, null, 2)}\n`,
  )
  console.log(`\nwritten: ${relative(process.cwd(), out)}`)
  if (failed) {
    console.error('!!! BENCH RUN HAD FLOW ERRORS:', JSON.stringify(rows.map((r) => r.errorSamples)))
    return 1
  }
  return 0
}

process.exitCode = await main()
