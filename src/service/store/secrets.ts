import { DataKeyring } from '../crypto/data-key.ts'

// The columns that hold secrets, sealed with the data key (docs/security.md, "Data at rest"): private
// JWKs (the access-token key, issuers' keys, the tenant test CA's and IACA's keys, the ephemeral response keys of
// encrypted presentation responses) and the webhook secrets inside template bodies. The repositories seal
// on write and open on read. When a store opens, after the migrations, every value not sealed under the
// current key is re-sealed (`pendingReseals`: sqlite-secrets.ts on SQLite, postgres.ts on PostgreSQL).

export type SecretColumn =
  | 'service_keys.private_jwk'
  | 'issuer_keys.private_jwk'
  | 'issuer_cas.private_jwk'
  | 'mdoc_iacas.private_jwk'
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
  { column: 'mdoc_iacas.private_jwk', table: 'mdoc_iacas', value: 'private_jwk', key: ['tenant_id'] },
  {
    column: 'verification_sessions.response_key',
    table: 'verification_sessions',
    value: 'response_key',
    key: ['id'],
  },
]

export type Row = Record<string, string>

/** The two statements the re-sealing needs, on either database (`?` placeholders). */
export interface SecretsDb {
  all(sql: string, parameters: unknown[]): Promise<Row[]>
  run(sql: string, parameters: unknown[]): Promise<void>
}

/** Every stored secret not sealed under the current key, each with the statement that re-seals it. */
export async function pendingReseals(db: SecretsDb, secrets: StoreSecrets): Promise<(() => Promise<void>)[]> {
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
