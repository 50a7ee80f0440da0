import type {
  ApiKeyRecord,
  ListCursor,
  ProcessRecord,
  ProcessStatus,
  ServiceKeyRecord,
  TemplateKind,
  TemplateRecord,
  TenantRecord,
} from './types.ts'

export * from './types.ts'

// The repositories are the only way the service touches storage. They are async so that a
// second engine (PostgreSQL for shared deployments) can implement them without touching handlers.

export interface TenantRepository {
  get(id: string): Promise<TenantRecord | undefined>
  /** Inserts; throws ConflictError when the id exists. */
  create(tenant: TenantRecord): Promise<void>
  upsert(tenant: TenantRecord): Promise<void>
}

export interface ApiKeyRepository {
  get(id: string): Promise<ApiKeyRecord | undefined>
  listByTenant(tenantId: string): Promise<ApiKeyRecord[]>
  listBySource(source: ApiKeyRecord['source']): Promise<ApiKeyRecord[]>
  create(key: ApiKeyRecord): Promise<void>
  upsert(key: ApiKeyRecord): Promise<void>
  /** Sets revokedAt if not already set; returns false when no such key exists in the tenant. */
  revoke(tenantId: string, id: string, at: number): Promise<boolean>
  countLinkedToTemplate(tenantId: string, templateId: string): Promise<number>
}

export interface TemplateRepository {
  get<K extends TemplateKind>(tenantId: string, id: string, kind: K): Promise<TemplateRecord<K> | undefined>
  /** Any kind: `ssiconfig` at login names a template without its kind. */
  find(tenantId: string, id: string): Promise<TemplateRecord | undefined>
  list<K extends TemplateKind>(tenantId: string, kind: K): Promise<TemplateRecord<K>[]>
  listBySource(source: TemplateRecord['source']): Promise<TemplateRecord[]>
  /** Inserts; throws ConflictError when the id is taken in the tenant (by either kind). */
  create(template: TemplateRecord): Promise<void>
  upsert(template: TemplateRecord): Promise<void>
  update(template: TemplateRecord): Promise<void>
  delete(tenantId: string, id: string): Promise<void>
}

export interface ProcessQuery {
  tenantId: string
  status?: ProcessStatus
  after?: ListCursor
  limit: number
}

export interface ProcessRepository {
  get(id: string): Promise<ProcessRecord | undefined>
  create(process: ProcessRecord): Promise<void>
  /** Oldest first, by (createdAt, id). */
  list(query: ProcessQuery): Promise<ProcessRecord[]>
  countByTemplate(tenantId: string, templateId: string): Promise<number>
}

export interface ServiceKeyRepository {
  list(): Promise<ServiceKeyRecord[]>
  create(key: ServiceKeyRecord): Promise<void>
}

export interface Repositories {
  tenants: TenantRepository
  apiKeys: ApiKeyRepository
  templates: TemplateRepository
  processes: ProcessRepository
  serviceKeys: ServiceKeyRepository
}

export interface Store extends Repositories {
  /** Runs `work` atomically: all of its writes commit together or none do. */
  transaction<T>(work: (repos: Repositories) => Promise<T>): Promise<T>
  close(): Promise<void>
}

/** A write collided with an existing row (unique key). */
export class ConflictError extends Error {
  override name = 'ConflictError'
}
