import type { IssuanceTemplate, Role, VerificationTemplate } from '../config/schema.ts'

// Domain records as the repositories return them: camelCase, epoch milliseconds, parsed JSON.
// Nothing here knows which SQL engine sits behind the repositories.

/** Where an entry comes from: the configuration file (re-applied at every boot) or the portal API. */
export type Source = 'config' | 'portal'

export interface TenantRecord {
  id: string
  source: Source
  createdAt: number
}

export interface ApiKeyRecord {
  id: string
  tenantId: string
  role: Role
  templateId: string | null
  /** `hmac-sha256$<salt b64url>$<digest b64url>`; the secret itself is never stored. */
  secretHash: string
  label: string | null
  source: Source
  createdAt: number
  revokedAt: number | null
}

export type TemplateKind = 'issuance' | 'verification'
export type TemplateBody<K extends TemplateKind> = K extends 'issuance'
  ? IssuanceTemplate
  : VerificationTemplate

export interface TemplateRecord<K extends TemplateKind = TemplateKind> {
  tenantId: string
  id: string
  kind: K
  body: TemplateBody<K>
  source: Source
  createdAt: number
  updatedAt: number
}

export type ProcessStatus = 'PENDING' | 'ISSUED' | 'REJECTED'

export interface ProcessRecord {
  id: string
  tenantId: string
  /** The issuance template id (`group` on the wire). */
  templateId: string
  type: string
  status: ProcessStatus
  data: unknown[] | null
  validator: unknown | null
  createdByKey: string
  createdAt: number
  updatedAt: number
}

export interface ServiceKeyRecord {
  kid: string
  alg: string
  privateJwk: JsonWebKey
  publicJwk: JsonWebKey
  createdAt: number
}

/** Keyset cursor: the last row of the previous page in the list order. */
export interface ListCursor {
  createdAt: number
  id: string
}
