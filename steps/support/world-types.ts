import type { ApiKeyCredentials, ApiResponse, RelyingPartyClient } from '../../src/client/index.ts'
import type { KeySecret, Target, TenantFixture } from '../../src/harness/target-types.ts'
import type { ExchangeLog } from './exchanges.ts'

// What the flow helpers (issuance.ts, verification.ts, webhooks.ts) need of the World, as an interface.
// world.ts builds the flows and the flows call the world back; with the world's class in world.ts they
// imported each other. This leaf module names the contract instead; HarnessWorld implements it.

/** The API keys of a tenant a scenario logs in with. */
export type Caller = 'app' | 'unlinkedApp' | 'admin'

/** Which template a login names in its `ssiconfig` header. */
export type TemplateChoice = 'own' | 'other' | 'unknown'

/** Templates a provisioned tenant has beyond the linked one (see HarnessWorld.provisionTenant). */
export type TemplateRole = 'linked' | 'tx-code' | 'identity' | 'requires-identity'

/** A tenant created through the portal for one scenario: it has every key a scenario may need. */
export type ProvisionedTenant = TenantFixture & { unlinkedAppKey: KeySecret }

/** Ways to spoil a valid access token. */
export type Spoiling = 'tampered signature' | 'alg none' | 'foreign key' | 'garbage'

/** The World as the flows see it: the target, the client, the tenant's keys and the answer bookkeeping. */
export interface FlowWorld {
  readonly scenario: { name: string; tags: string[] }
  readonly target: Target
  readonly client: RelyingPartyClient
  /** The scenario's HTTP exchanges: wallets get `exchanges.fetch('wallet')`, so theirs are recorded too. */
  readonly exchanges: ExchangeLog
  readonly tenant: TenantFixture
  templateFor(role: TemplateRole): string
  token(caller: Caller): string
  unlinkedAppToken(): Promise<string>
  logIn(caller: Caller, template?: TemplateChoice): Promise<string>
  credentials(caller: Caller, template?: TemplateChoice): ApiKeyCredentials
  /** Records an answer obtained by a flow, for the expectations below. */
  recordAnswer(response: ApiResponse<unknown>, what: string): void
  expectStatus(status: number): void
  /** Throws naming the broken requirement, what was expected and what came back. */
  fail(expected: string, response?: ApiResponse<unknown> | null): never
}
