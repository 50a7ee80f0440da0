import type Database from 'better-sqlite3'
import type { Kysely } from 'kysely'
import { DataKeyring } from '../crypto/data-key.ts'
import { prepared, rows, run } from './prepared.ts'

// The columns that hold secrets, sealed with the data key (docs/security.md, "Data at rest"): private
// JWKs (the access-token key, issuers' keys, the tenant test CA's key, the ephemeral response keys of
// encrypted presentation responses) and the webhook secrets inside template bodies. The repositories seal
// on write and open on read; `resealSecrets` runs once when the store opens, after the migrations.

export type SecretColumn =
  | 'service_keys.private_jwk'
  | 'issuer_keys.private_jwk'
  | 'issuer_cas.private_jwk'
  | 'verification_sessions.response_key'
  | 'templates.body.webhookSecret'
  | 'templates.body.webhookPreviousSecrets'

/** The template body fields that are secrets (a string, or an array of strings). */
const TEMPLATE_SECRETS = ['webhookSecret', 'webhookPreviousSecrets'] as const

/** A value's place: its column and row identity, authenticated with it (a value moved to another row fails). */
const placeOf = (column: SecretColumn, row: readonly string[]) => `${column} ${JSON.stringify(row)}`

export class StoreSecrets {
  constructor(readonly keys: DataKeyring) {}

  seal(column: SecretColumn, row: readonly string[], plaintext: string): string {
    return this.keys.seal(plaintext, placeOf(column, row))
  }

  open(column: SecretColumn, row: readonly string[], stored: string): string {
    return this.keys.open(stored, placeOf(column, row))
  }

  sealJson(column: SecretColumn, row: readonly string[], value: unknown): string {
    return this.seal(column, row, JSON.stringify(value))
  }

  openJson<T>(column: SecretColumn, row: readonly string[], stored: string): T {
    return JSON.parse(this.open(column, row, stored)) as T
  }

  /** A template body as stored: JSON with each webhook secret sealed in place. */
  sealTemplateBody(tenantId: string, id: string, body: object): string {
    return JSON.stringify(
      this.mapTemplateSecrets(body, (column, value) => this.seal(column, [tenantId, id], value)),
    )
  }

  openTemplateBody(tenantId: string, id: string, stored: string): unknown {
    return this.mapTemplateSecrets(JSON.parse(stored) as object, (column, value) =>
      this.open(column, [tenantId, id], value),
    )
  }

  /** `body` with every secret field's string(s) replaced by `map`'s answer; the other fields as they are. */
  mapTemplateSecrets(body: object, map: (column: SecretColumn, value: string) => string): object {
    let copy: Record<string, unknown> | undefined
    for (const field of TEMPLATE_SECRETS) {
      const value = (body as Record<string, unknown>)[field]
      if (value === undefined) continue
      const column: SecretColumn = `templates.body.${field}`
      copy ??= { ...body }
      copy[field] = Array.isArray(value)
        ? value.map((v) => map(column, String(v)))
        : map(column, String(value))
    }
    return copy ?? body
  }
}

interface SealedColumn {
  column: SecretColumn
  table: string
  value: string
  /** The row identity, in the order the repositories give it. */
  key: readonly string[]
}
const COLUMNS: readonly SealedColumn[] = [
  { column: 'service_keys.private_jwk', table: 'service_keys', value: 'private_jwk', key: ['kid'] },
  {
    column: 'issuer_keys.private_jwk',
    table: 'issuer_keys',
    value: 'private_jwk',
    key: ['tenant_id', 'alg'],
  },
  { column: 'issuer_cas.private_jwk', table: 'issuer_cas', value: 'private_jwk', key: ['tenant_id'] },
  {
    column: 'verification_sessions.response_key',
    table: 'verification_sessions',
    value: 'response_key',
    key: ['id'],
  },
]

type Row = Record<string, string>

/** The two statements the re-sealing needs, on either database (`?` placeholders). */
interface SecretsDb {
  all(sql: string, parameters: unknown[]): Promise<Row[]>
  run(sql: string, parameters: unknown[]): Promise<void>
}

/** Every stored secret not sealed under the current key, each with the statement that re-seals it. */
async function pending(db: SecretsDb, secrets: StoreSecrets): Promise<(() => Promise<void>)[]> {
  const current = `enc:v1:${secrets.keys.currentId}:`
  const work: (() => Promise<void>)[] = []
  for (const c of COLUMNS) {
    // substr, not LIKE: a key id may hold '_', LIKE's wildcard. Cheap when nothing is pending: no JSON, no crypto.
    const rows = await db.all(
      `SELECT ${c.key.join(', ')}, ${c.value} AS value FROM ${c.table} WHERE ${c.value} IS NOT NULL AND substr(${c.value}, 1, ?) <> ?`,
      [current.length, current],
    )
    const update = `UPDATE ${c.table} SET ${c.value} = ? WHERE ${c.key.map((k) => `${k} = ?`).join(' AND ')} AND ${c.value} = ?`
    for (const row of rows) {
      const identity = c.key.map((k) => String(row[k]))
      const stored = String(row.value)
      work.push(() => {
        const plaintext = DataKeyring.isSealed(stored) ? secrets.open(c.column, identity, stored) : stored
        return db.run(update, [secrets.seal(c.column, identity, plaintext), ...identity, stored])
      })
    }
  }
  const templates = await db.all('SELECT tenant_id, id, body FROM templates', [])
  for (const { tenant_id: tenantId = '', id = '', body = '' } of templates) {
    let stale = false
    secrets.mapTemplateSecrets(JSON.parse(body) as object, (_column, value) => {
      if (!secrets.keys.isCurrent(value)) stale = true
      return value
    })
    if (!stale) continue
    work.push(() => {
      const resealed = secrets.mapTemplateSecrets(JSON.parse(body) as object, (column, value) => {
        if (secrets.keys.isCurrent(value)) return value
        const plaintext = DataKeyring.isSealed(value) ? secrets.open(column, [tenantId, id], value) : value
        return secrets.seal(column, [tenantId, id], plaintext)
      })
      return db.run('UPDATE templates SET body = ? WHERE tenant_id = ? AND id = ? AND body = ?', [
        JSON.stringify(resealed),
        tenantId,
        id,
        body,
      ])
    })
  }
  return work
}

/** better-sqlite3's synchronous statements as a SecretsDb. */
const onNative = (database: Database.Database): SecretsDb => ({
  all: async (sql, parameters) => database.prepare(sql).all(...parameters) as Row[],
  run: async (sql, parameters) => {
    database.prepare(sql).run(...parameters)
  },
})

/**
 * resealSecrets on PostgreSQL (issue 21), in one transaction of its own. Instances starting together with a
 * new key each find the same values pending; the conditional UPDATEs (`AND value = the old one`) let only the
 * first re-seal each value, the others change nothing. Returns how many values this call re-sealed.
 */
export async function resealSecretsOnPostgres(
  // biome-ignore lint/suspicious/noExplicitAny: the statements name their tables
  db: Kysely<any>,
  secrets: StoreSecrets,
): Promise<number> {
  // Fixed texts (prepared.ts): the PostgreSQL connection runs their `$n` form.
  const on = (conn: typeof db): SecretsDb => ({
    all: (text, parameters) => rows<Row>(conn, prepared(text), parameters),
    run: async (text, parameters) => {
      await run(conn, prepared(text), parameters)
    },
  })
  if ((await pending(on(db), secrets)).length === 0) return 0
  return db.transaction().execute(async (trx) => {
    const work = await pending(on(trx), secrets)
    for (const reseal of work) await reseal()
    return work.length
  })
}

/**
 * Seals every secret under the current data key: clear values of a database written before encryption at
 * rest, and values sealed under an older key of a rotation. One transaction, so a failure (a value sealed
 * under a key not given: DataKeyError naming its id) changes nothing. Returns how many values it re-sealed.
 * The common case, nothing pending, only reads: cluster workers opening together do not contend.
 */
export async function resealSecrets(database: Database.Database, secrets: StoreSecrets): Promise<number> {
  if ((await pending(onNative(database), secrets)).length === 0) return 0
  // secure_delete: the bytes a clear value (or an old key's ciphertext) leaves behind in its page are zeroed,
  // not left in the file's free space. Only for this transaction: it costs I/O on every other delete.
  const secureDelete = database.pragma('secure_delete', { simple: true })
  database.pragma('secure_delete = ON')
  let work: (() => Promise<void>)[] = []
  try {
    // BEGIN IMMEDIATE: the write lock first, then the list again (another process may have re-sealed meanwhile).
    database.exec('BEGIN IMMEDIATE')
    try {
      work = await pending(onNative(database), secrets)
      for (const reseal of work) await reseal()
      database.exec('COMMIT')
    } catch (error) {
      database.exec('ROLLBACK')
      throw error
    }
  } finally {
    database.pragma(`secure_delete = ${Number(secureDelete)}`)
  }
  // The WAL still holds the pages as they were (this connection's close does not checkpoint it): copy the
  // new pages into the database and empty the WAL, so no old copy of a value stays in either file. Best
  // effort: a reader of another process may keep part of the WAL until the next checkpoint.
  database.pragma('wal_checkpoint(TRUNCATE)')
  return work.length
}
