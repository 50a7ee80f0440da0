// What the bench's three kinds of process say to each other: the runner (bench/run.ts), the wallet
// process (worker.ts: N simulated wallets and the relying party's calls) and the target host
// (target-host.ts: the server under test). Each runs in its own process so the CPU and peak memory of
// the wallets and of the server are measured apart.

import type { ServiceUrls } from '../src/client/index.ts'

/**
 * `full`: one relying party and one holder going through everything — login, offer, OpenID4VCI with
 * deferred download, the administrator's submission, a verification session, the presentation, the
 * session read and (when the target sends them) both webhooks. `issuance` and `verification` are the two
 * halves, for comparisons with servers that only do one; `issuance` is attended (the wallet asks first,
 * gets 202, the administrator submits, the wallet downloads the deferred credential).
 * `issuance-ready`: the relying party submits the credential content right after creating the offer,
 * before the wallet arrives, so the credential endpoint answers 200 with the credential at once — the
 * same work as the peer issuer, whose offer desk hands out offers it will issue at once.
 */
export type FlowKind = 'full' | 'issuance' | 'issuance-ready' | 'verification'
export const FLOW_KINDS: readonly FlowKind[] = ['full', 'issuance', 'issuance-ready', 'verification']

/** `lean`: undici + node:crypto (the service's capacity); `full`: the Veramo/Sphereon wallet users run. */
export type WalletMode = 'lean' | 'full'
export const WALLET_MODES: readonly WalletMode[] = ['lean', 'full']

const ISSUANCE_STEPS = ['offer', 'scan', 'token', 'credential', 'submit', 'deferred', 'notify'] as const
/** `submit` right after `offer`: the relying party's work, timed inside the flow (the peer has none). */
const READY_ISSUANCE_STEPS = ['offer', 'submit', 'scan', 'token', 'credential', 'notify'] as const
const VERIFICATION_STEPS = ['session', 'request', 'response', 'read'] as const
export const STEPS: Record<FlowKind, readonly string[]> = {
  full: ['login', ...ISSUANCE_STEPS, ...VERIFICATION_STEPS, 'webhook'],
  issuance: ISSUANCE_STEPS,
  'issuance-ready': READY_ISSUANCE_STEPS,
  verification: VERIFICATION_STEPS,
}

export interface KeySecret {
  keyId: string
  secret: string
}
export interface BenchKeys {
  tenant: string
  issuance: KeySecret & { template: string }
  /** Absent where the target has no verification template for the bench (an external deployment may not). */
  verification?: KeySecret & { template: string }
  admin: KeySecret
}

/** What a started target tells the wallet process. */
export interface TargetInfo {
  label: string
  urls: ServiceUrls
  /** Absent for the peer, whose offers come from `offerDesk` and which has no relying-party API. */
  keys?: BenchKeys
  /** The peer's offers: POST here answers `{ credential_offer_uri }`. */
  offerDesk?: string
  /** Which flow kinds the target can run. */
  kinds: FlowKind[]
  /** True when the target sends signed webhooks to the wallet process's sink. */
  webhooks: boolean
  /** The target process's pids (the host and, in a cluster, its workers), for the CPU and memory figures; empty for an external deployment. */
  pids: number[]
  /** What the relying party submits for every process; default CREDENTIAL_CONTENT (the demo's degree). */
  content?: unknown[]
  /** More instances of the same deployment (one database): wallet i uses instance i mod (1 + their number). */
  moreUrls?: TargetInfo['urls'][]
}

export type TargetSpec =
  | {
      kind: 'service'
      workers: number
      webhook?: { url: string; secret: string }
      /**
       * PostgreSQL (issue 21): `postgres` asks the runner for a fresh database of its private cluster; the
       * target is given its URL and the server's pid (its CPU counts as the server's).
       */
      database?: 'postgres' | { url: string; serverPid: number }
      /** On PostgreSQL: this many `serve --database` instances, each wallet on one of them (default 1). */
      instances?: number
    }
  | { kind: 'bare' }
  | { kind: 'peer' }
  /** A deployment the bench did not start (`--target external`): no target process, no server figures. */
  | { kind: 'external' }

export interface WorkerJob {
  target: TargetInfo
  flow: FlowKind
  mode: WalletMode
  wallets: number
  /** Unmeasured seconds first (JIT, pools, caches). */
  warmupSec: number
  /** Measured: stop starting flows after this many seconds, or after `flows` flows (0: no limit). */
  durationSec: number
  flows: number
  /** Seconds to wait for a flow's webhooks before counting it as an error. */
  webhookTimeoutSec: number
  webhookSecret?: string
  /**
   * `--target external`: the only hosts the wallet process may send a request to (`--allow-host`). A request
   * to any other host is refused before it leaves, and the run stops (WorkerResult.refusedHosts).
   */
  allowHosts?: string[]
}

export interface WorkerResult {
  flows: number
  errors: number
  /** Errors by kind (`<step>: <what>`), with one sample message per kind. */
  errorKinds: Record<string, { count: number; sample: string }>
  wallSec: number
  flowMs: number[]
  stepMs: Record<string, number[]>
  /** Wallet process CPU (all threads) during the measured run, µs. */
  cpuUs: number
  /** Share of the measured run the wallet process's event loop was busy. */
  eventLoopBusy: number
  peakRssMb: number
  /** Hosts the target sent the wallets to that `allowHosts` does not name (nothing was sent there), with one URL each. */
  refusedHosts?: { host: string; url: string }[]
}

/** Runner → worker. */
export type ToWorker = { kind: 'run'; job: WorkerJob }
/** Worker → runner. */
export type FromWorker =
  | { kind: 'sink'; url: string }
  | { kind: 'measuring' }
  | { kind: 'progress'; phase: 'warmup' | 'measure'; flows: number; errors: number }
  | { kind: 'result'; result: WorkerResult }
  | { kind: 'failed'; message: string }

/** Runner → target host. */
export type ToTarget = { kind: 'start'; spec: TargetSpec } | { kind: 'usage' } | { kind: 'stop' }
/** Target host → runner. */
export type FromTarget =
  | { kind: 'started'; info: TargetInfo }
  | {
      kind: 'usage'
      cpuUs: number
      peakRssMb: number
      /** SQL statements the service's store ran so far; absent where the host cannot see the store (a cluster, the baselines). */
      statements?: number
      /** CPU of the database server's processes (PostgreSQL), µs: a part of cpuUs. */
      databaseCpuUs?: number
      /**
       * Milliseconds the server's event loop was busy so far (performance.eventLoopUtilization().active); absent
       * where the server is several processes (a cluster, several instances): no one loop limits them.
       */
      loopActiveMs?: number
    }
  | { kind: 'failed'; message: string }

/** The demo tenant's keys (config/demo.json), shared by the service and the bare baseline. */
export const DEMO_KEYS: BenchKeys = {
  tenant: 'demo',
  issuance: {
    template: 'degree',
    keyId: '0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01',
    secret: 'demo-app-secret-7Qm2xV9pL4sT8wZ1',
  },
  verification: {
    template: 'degree-check',
    keyId: '5d2e8a47-1c3b-4f6d-8e9a-2b7c4d1e6f02',
    secret: 'demo-verifier-secret-H3nR6yK1cB8qW5',
  },
  admin: { keyId: '9a4f3c2b-6e1d-4b8a-a7c5-3d2e1f0b9c03', secret: 'demo-admin-secret-Z8kP3mN6vQ1rT4' },
}

/** What the administrator submits for every process (the demo template's degree). */
export const CREDENTIAL_CONTENT = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]
