/**
 * The wallet side of bench/issuance.ts, in a child process: N simulated wallets (the real Veramo /
 * Sphereon wallet of src/wallet) each run complete attended-issuance flows back to back, with the
 * relying party's calls made by the typed client. Reports per-flow and per-step latencies and this
 * process's CPU (the wallet's share).
 *
 * IPC: parent → `{ kind: 'run', job }`; child → `{ kind: 'result', result }` | `{ kind: 'failed', message }`.
 */
import { performance } from 'node:perf_hooks'
import { RelyingPartyClient } from '../src/client/index.ts'
import { resolveDidKey } from '../src/shared/did-key.ts'
import { verifyJws } from '../src/shared/jws.ts'
import { Wallet } from '../src/wallet/index.ts'

export interface WalletJob {
  origin: string
  tenant: string
  template: string
  app: { keyId: string; secret: string }
  admin: { keyId: string; secret: string }
  wallets: number
  /** Stop starting flows after this many seconds, or after `flows` flows (0: no limit), whichever comes first. */
  durationSec: number
  flows: number
}

export const STEPS = [
  'offer',
  'scan',
  'token',
  'credential',
  'submit',
  'deferred',
  'accept',
  'notify',
] as const
export type Step = (typeof STEPS)[number]

export interface WalletResult {
  flows: number
  errors: number
  errorSamples: string[]
  wallSec: number
  flowMs: number[]
  stepMs: Record<Step, number[]>
  cpuSec: number
  peakRssMb: number
  /** Wallet-side crypto per flow, timed in isolation after the run: proof signing and credential verification. */
  cryptoMs: { proofSign: number; credentialVerify: number }
}

const CONTENT = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]

async function run(job: WalletJob): Promise<WalletResult> {
  const client = new RelyingPartyClient(job.origin)
  const appToken = await client.token({ ...job.app, tenant: job.tenant, ssiconfig: job.template })
  const adminToken = await client.token({ ...job.admin, tenant: job.tenant })
  const wallets = await Promise.all(Array.from({ length: job.wallets }, () => Wallet.create()))
  const stepMs = Object.fromEntries(STEPS.map((s) => [s, [] as number[]])) as Record<Step, number[]>
  const flowMs: number[] = []
  const errorSamples: string[] = []
  let errors = 0
  let started = 0
  let peakRss = process.memoryUsage().rss
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const deadline = t0 + job.durationSec * 1000

  const timed = async <T>(step: Step, work: () => Promise<T>): Promise<T> => {
    const at = performance.now()
    const value = await work()
    stepMs[step].push(performance.now() - at)
    return value
  }

  async function flow(wallet: Wallet) {
    const at = performance.now()
    const offer = await timed('offer', () => client.createOffer(appToken, job.template))
    if (offer.status !== 201) throw new Error(`offer: ${offer.status} ${offer.text}`)
    const link = (offer.body as { credential_offer_uri: string }).credential_offer_uri
    const session = await timed('scan', () => wallet.startIssuance(link))
    await timed('token', () => session.token())
    const pending = await timed('credential', () => session.requestCredential())
    if (pending.status !== 202) throw new Error(`credential: expected 202, got ${pending.status}`)
    const processId = new URL(
      new URLSearchParams(link.split('?')[1]).get('credential_offer_uri') ?? '',
    ).pathname
      .split('/')
      .pop() as string
    const submitted = await timed('submit', () => client.submitCredentials(adminToken, processId, CONTENT))
    if (submitted.status !== 200) throw new Error(`submit: ${submitted.status} ${submitted.text}`)
    const issued = await timed('deferred', () => session.deferred(pending.transactionId))
    if (issued.status !== 200) throw new Error(`deferred: expected 200, got ${JSON.stringify(issued.body)}`)
    await timed('accept', () => session.accept(issued))
    await timed('notify', () => session.notify('credential_accepted'))
    flowMs.push(performance.now() - at)
  }

  async function loop(wallet: Wallet) {
    while (performance.now() < deadline && (job.flows === 0 || started < job.flows)) {
      started++
      try {
        await flow(wallet)
      } catch (error) {
        errors++
        if (errorSamples.length < 5) errorSamples.push((error as Error).message)
      }
      peakRss = Math.max(peakRss, process.memoryUsage().rss)
    }
  }
  await Promise.all(wallets.map(loop))
  const wallSec = (performance.now() - t0) / 1000
  const used = process.cpuUsage(cpu0)

  // Wallet-side crypto, in isolation: a proof signature through the Veramo KMS and a Veramo
  // verification of one issued credential (signature, did:key resolution, JWT checks).
  const wallet = wallets[0] as Wallet
  const stored = wallet.credentials()[0]
  const n = 50
  let at = performance.now()
  const signer = wallet.jwtSigner()
  for (let i = 0; i < n; i++)
    await signer.sign(`eyJhbGciOiJFZERTQSJ9.${Buffer.from(String(i)).toString('base64url')}`)
  const proofSign = (performance.now() - at) / n
  at = performance.now()
  for (let i = 0; i < n && stored; i++) {
    await wallet.agent.verifyCredential({
      credential: stored.credential,
      policies: { credentialStatus: false },
    })
  }
  const credentialVerify = (performance.now() - at) / n
  if (stored) {
    // Keep the checker honest: the credential really is signed by its issuer's did:key.
    const kid = JSON.parse(Buffer.from(stored.credential.split('.')[0] ?? '', 'base64url').toString()).kid
    verifyJws(stored.credential, resolveDidKey(kid).publicKey, { algorithms: ['EdDSA', 'ES256', 'ES256K'] })
  }
  return {
    flows: flowMs.length,
    errors,
    errorSamples,
    wallSec,
    flowMs,
    stepMs,
    cpuSec: (used.user + used.system) / 1e6,
    peakRssMb: Math.round(peakRss / 1048576),
    cryptoMs: { proofSign, credentialVerify },
  }
}

process.on('message', (message: { kind: 'run'; job: WalletJob }) => {
  if (message.kind !== 'run') return
  run(message.job).then(
    (result) => process.send?.({ kind: 'result', result }),
    (error: Error) => process.send?.({ kind: 'failed', message: error.stack ?? error.message }),
  )
})
process.on('disconnect', () => process.exit(0))
