import type { Insertable, Kysely, Selectable } from 'kysely'
import { resolveTemplate } from '../config/schema.ts'
import type { Clock } from '../util/clock.ts'
import { deepFreeze } from '../util/frozen.ts'
import { insertOrConflict } from './conflicts.ts'
import type { TemplateKind, TemplateRecord, TemplateRepository } from './index.ts'
import type { StoreSecrets } from './secrets.ts'

// Templates: the one table every request reads, so reads go through a short cache on the injected clock,
// dropped on every local write (another worker's writes are seen within TEMPLATE_CACHE_MS).

export interface TemplatesTable {
  tenant_id: string
  id: string
  kind: string
  body: string
  source: string
  created_at: number
  updated_at: number
}
export interface TemplatesSchema {
  templates: TemplatesTable
}

type StoredBody = Parameters<typeof resolveTemplate<TemplateKind>>[1]

// Webhook secrets inside a body are sealed with the data key (secrets.ts), opened on read: a read
// from the database happens once per TEMPLATE_CACHE_MS at most, so the cache also spares the decryption.
const toTemplate = (row: Selectable<TemplatesTable>, secrets: StoreSecrets): TemplateRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  kind: row.kind as TemplateKind,
  // Defaults applied on read too: a row written before a default existed reads as a new one would.
  body: resolveTemplate(
    row.kind as TemplateKind,
    secrets.openTemplateBody(row.tenant_id, row.id, row.body) as StoredBody,
  ),
  source: row.source as TemplateRecord['source'],
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

/**
 * Templates by (tenant, id), read ~9 times per complete flow and written rarely (portal, boot). A write
 * through this process drops its entry at once; an entry lives TEMPLATE_CACHE_MS, which bounds how long
 * another worker of a cluster can act on a template changed elsewhere. Callers share one frozen record
 * (util/frozen.ts): a read costs no copy, and what depends only on the template can be memoised by it.
 */
const TEMPLATE_CACHE_MS = 1000
export class TemplateCache {
  private readonly entries = new Map<string, { record: TemplateRecord | undefined; until: number }>()
  // The service's clock, so expiry is tested by moving it rather than by sleeping.
  constructor(private readonly clock: Clock) {}
  get(key: string): { record: TemplateRecord | undefined } | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    const now = this.clock.now()
    // Also stale when the clock moved back (a test clock reset) past the entry's birth.
    if (entry.until <= now || entry.until > now + TEMPLATE_CACHE_MS) {
      this.entries.delete(key)
      return undefined
    }
    return { record: entry.record }
  }
  set(key: string, record: TemplateRecord | undefined) {
    if (this.entries.size >= 1024) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(key, {
      record: record && deepFreeze(record),
      until: this.clock.now() + TEMPLATE_CACHE_MS,
    })
  }
  drop(tenantId: string, id: string) {
    const key = JSON.stringify([tenantId, id])
    this.entries.delete(key)
    this.reading.delete(key)
    this.drops++
  }
  /** Reads under way, by key: requests missing the same entry at once share one read (issue 38). */
  private readonly reading = new Map<string, Promise<TemplateRecord | undefined>>()
  /** Counts drops: a read that began before one does not fill the cache. */
  private drops = 0
  /**
   * The entry, read by `read` when missing or stale; concurrent misses of one key share the read (on
   * PostgreSQL an expired entry under load was read by every request that missed it: 0.7 reads per flow).
   */
  load(key: string, read: () => Promise<TemplateRecord | undefined>): Promise<TemplateRecord | undefined> {
    const cached = this.get(key)
    if (cached) return Promise.resolve(cached.record)
    const pending = this.reading.get(key)
    if (pending) return pending
    const drops = this.drops
    const loading = read().then(
      (record) => {
        if (this.reading.get(key) === loading) this.reading.delete(key)
        if (this.drops !== drops) return record && deepFreeze(record)
        this.set(key, record)
        return record
      },
      (error: unknown) => {
        if (this.reading.get(key) === loading) this.reading.delete(key)
        throw error
      },
    )
    this.reading.set(key, loading)
    return loading
  }
}

/**
 * Tells other instances sharing the database that a template changed, on the write's own connection: on
 * PostgreSQL a NOTIFY sent inside a transaction is delivered when it commits, never before and never for a
 * rollback (store/postgres-feed.ts).
 */
export type TemplateAnnouncer = (db: Kysely<TemplatesSchema>, tenantId: string, id: string) => Promise<void>

export class SqlTemplates implements TemplateRepository {
  constructor(
    private readonly db: Kysely<TemplatesSchema>,
    private readonly cache: TemplateCache,
    private readonly secrets: StoreSecrets,
    private readonly announce?: TemplateAnnouncer,
  ) {}
  private readonly toRecord = (row: Selectable<TemplatesTable>) => toTemplate(row, this.secrets)
  async get<K extends TemplateKind>(tenantId: string, id: string, kind: K) {
    const found = await this.find(tenantId, id)
    return found?.kind === kind ? (found as TemplateRecord<K>) : undefined
  }
  async find(tenantId: string, id: string) {
    return this.cache.load(JSON.stringify([tenantId, id]), async () => {
      const row = await this.db
        .selectFrom('templates')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('id', '=', id)
        .executeTakeFirst()
      return row && this.toRecord(row)
    })
  }
  async list<K extends TemplateKind>(tenantId: string, kind: K) {
    const rows = await this.db
      .selectFrom('templates')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('kind', '=', kind)
      .orderBy('id')
      .execute()
    return rows.map(this.toRecord) as TemplateRecord<K>[]
  }
  async listBySource(source: TemplateRecord['source']) {
    return (await this.db.selectFrom('templates').selectAll().where('source', '=', source).execute()).map(
      this.toRecord,
    )
  }
  async create(template: TemplateRecord) {
    this.cache.drop(template.tenantId, template.id)
    await insertOrConflict(
      this.db.insertInto('templates').values(this.row(template)).execute(),
      `template "${template.id}"`,
    )
    await this.announce?.(this.db, template.tenantId, template.id)
  }
  async upsert(template: TemplateRecord) {
    this.cache.drop(template.tenantId, template.id)
    const row = this.row(template)
    await this.db
      .insertInto('templates')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['tenant_id', 'id']).doUpdateSet({
          kind: row.kind,
          body: row.body,
          source: row.source,
          updated_at: row.updated_at,
        }),
      )
      .execute()
    await this.announce?.(this.db, template.tenantId, template.id)
  }
  async update(template: TemplateRecord) {
    this.cache.drop(template.tenantId, template.id)
    await this.db
      .updateTable('templates')
      .set({
        body: this.secrets.sealTemplateBody(template.tenantId, template.id, template.body),
        updated_at: template.updatedAt,
      })
      .where('tenant_id', '=', template.tenantId)
      .where('id', '=', template.id)
      .execute()
    await this.announce?.(this.db, template.tenantId, template.id)
  }
  async delete(tenantId: string, id: string) {
    this.cache.drop(tenantId, id)
    await this.db.deleteFrom('templates').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
    await this.announce?.(this.db, tenantId, id)
  }
  private row(t: TemplateRecord): Insertable<TemplatesTable> {
    return {
      tenant_id: t.tenantId,
      id: t.id,
      kind: t.kind,
      body: this.secrets.sealTemplateBody(t.tenantId, t.id, t.body),
      source: t.source,
      created_at: t.createdAt,
      updated_at: t.updatedAt,
    }
  }
}
