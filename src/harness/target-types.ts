// Types and constants shared by the target modules (target.ts, child-target.ts, profile.ts, fixture.ts).
// A leaf module: it imports only types from outside the harness, so those modules can all depend on it
// without importing one another in a circle.

import type { ApiKeyCredentials, ServiceUrls } from '../client/index.ts'
// Types only (erased at run time): an external run still never loads the service.
import type { ShiftedClock } from '../service/util/clock.ts'

export type Capability = 'portal' | 'clock' | 'webhooks' | 'test-wallet-provider'
export const CAPABILITIES: readonly Capability[] = ['portal', 'clock', 'webhooks', 'test-wallet-provider']

export type TargetKind = 'embedded' | 'child' | 'external'
export const TARGET_KINDS: readonly TargetKind[] = ['embedded', 'child', 'external']

/** An API key as the portal hands it out: id and secret. */
export interface KeySecret {
  id: string
  secret: string
}

/** A tenant the suite may log in to, with the keys and templates scenarios need. */
export interface TenantFixture {
  tenant: string
  /** Issuance template the application key is linked to. */
  issuanceTemplate: string
  /** Another template of the same tenant that the application key is not linked to. */
  otherTemplate: string
  /**
   * Templates with a particular setup, for the issuance features: one asking for a tx_code, one issuing a
   * VerifiableId, one requiring the holder to present a VerifiableId. Present on provisioned tenants;
   * scenarios that need them are tagged @needs-portal.
   */
  templates?: { txCode: string; identity: string; requiresIdentity: string }
  /**
   * Verification templates (provisioned tenants only): a degree check asking for the degree claim, one
   * asking for a degree and one of two identity credentials (pick), and one accepting credentials without
   * a status entry.
   */
  verificationTemplates?: { degreeCheck: string; degreeAndIdentity: string; statusOptional: string }
  /** Application key linked to `issuanceTemplate`. */
  appKey: KeySecret
  /** Application key without a linked template (only tenants provisioned through the portal have one). */
  unlinkedAppKey?: KeySecret
  adminKey: KeySecret
}

/**
 * Where the harness's webhook receiver listens, and the URL the service reaches it at. Embedded and child
 * targets: 127.0.0.1, port 0, no publicUrl, meaning "use the bound loopback URL". External: from
 * VC_HARNESS_RECEIVER_* or the profile's `receiver`; the target has `webhooks` only with a publicUrl.
 */
export interface ReceiverSettings {
  host: string
  port: number
  publicUrl?: string
}

/** One `vc-harness serve` process of the child target. */
export interface ChildInfo {
  pid: number
  dataDir: string
}

export interface Target {
  kind: TargetKind
  urls: ServiceUrls
  capabilities: ReadonlySet<Capability>
  /** The tenant the target was configured with (the demo tenant when embedded or child). */
  tenant: TenantFixture
  /** Operator credentials; present exactly when the target has `portal`. */
  operator?: ApiKeyCredentials
  /** The service's clock; present exactly when the target has `clock`. */
  clock?: ShiftedClock
  /** Where the webhook receiver listens and is reached; see ReceiverSettings. */
  receiver: ReceiverSettings
  /**
   * The service process and its data folder; present exactly when the kind is `child`. With several
   * instances (VC_HARNESS_CHILD_INSTANCES) pid and dataDir are the first one's, and `instances` lists all.
   */
  child?: ChildInfo & { instances: readonly ChildInfo[] }
  close(): Promise<void>
}

/** Receiver settings of targets on this machine: loopback, any free port, the bound URL. */
export const LOOPBACK_RECEIVER: ReceiverSettings = { host: '127.0.0.1', port: 0 }
