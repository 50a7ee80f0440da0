import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Kysely } from 'kysely'
import Database from 'libsql'
import { sql } from '../src/service/store/kysely.ts'
import {
  migratePostgres,
  PostgresOpenError,
  postgresDatabase,
  redactedUrl,
} from '../src/service/store/postgres.ts'
import { openSqliteStore } from '../src/service/store/sqlite.ts'
import { postgresSkipReason, startPostgres, type TestPostgres } from './fixtures/postgres.ts'

// The store's migrations on a real PostgreSQL server (issue 21): the same list as SQLite's, rewritten for
// PostgreSQL (store/postgres-schema.ts). What must hold: the two schemas have the same tables and columns,
// with each SQLite type's PostgreSQL counterpart; migration 0008's trigger works on PostgreSQL as on SQLite;
// a second migration is a no-op; a database migrated by a newer version, or one that cannot be reached, is a
// clear error naming the database without its password.

const skip = postgresSkipReason()

/** SQLite's schema of a freshly migrated store: table → column → declared type. */
async function sqliteSchema(): Promise<Map<string, Map<string, string>>> {
  const dir = mkdtempSync(join(tmpdir(), 'vc-harness-schema-'))
  try {
    await (await openSqliteStore(dir)).close()
    const db = new Database(join(dir, 'vc-harness.db'))
    const tables = db
      .prepare(
        "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'kysely_%'",
      )
      .all() as { name: string }[]
    const schema = new Map<string, Map<string, string>>()
    for (const { name } of tables) {
      const columns = db.prepare(`pragma table_info(${name})`).all() as { name: string; type: string }[]
      schema.set(name, new Map(columns.map((c) => [c.name, c.type.toLowerCase()])))
    }
    db.close()
    return schema
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function postgresSchema(db: Kysely<unknown>): Promise<Map<string, Map<string, string>>> {
  const { rows } = await sql<{ table_name: string; column_name: string; data_type: string }>`
    select table_name, column_name, data_type from information_schema.columns
    where table_schema = 'public' and table_name not like 'kysely_%'`.execute(db)
  const schema = new Map<string, Map<string, string>>()
  for (const r of rows) {
    const table = schema.get(r.table_name) ?? new Map<string, string>()
    table.set(r.column_name, r.data_type)
    schema.set(r.table_name, table)
  }
  return schema
}

const COUNTERPART: Record<string, string> = { integer: 'bigint', text: 'text', blob: 'bytea' }

describe('the store schema on PostgreSQL', { skip }, () => {
  let server: TestPostgres
  let url: string
  let db: Kysely<unknown>
  before(async () => {
    server = await startPostgres()
    url = server.database('schema')
    db = postgresDatabase(url)
  })
  after(async () => {
    await db?.destroy()
    server?.stop()
  })

  test('every migration applies, and the tables and columns are SQLite’s with their PostgreSQL types', async () => {
    const applied = await migratePostgres(db, url)
    assert.ok(applied.length >= 9, `applied ${applied.join(', ')}`)
    const expected = await sqliteSchema()
    const actual = await postgresSchema(db)
    assert.deepEqual([...actual.keys()].sort(), [...expected.keys()].sort())
    for (const [table, columns] of expected) {
      const got = actual.get(table) ?? new Map()
      assert.deepEqual([...got.keys()].sort(), [...columns.keys()].sort(), `columns of ${table}`)
      for (const [column, type] of columns) {
        assert.equal(got.get(column), COUNTERPART[type] ?? type, `${table}.${column} (${type} on SQLite)`)
      }
    }
    assert.deepEqual(await migratePostgres(db, url), [], 'a second run applies nothing')
  })

  test('migration 0008’s trigger: one UPDATE of an event logs its attempt, and a 410 disables the endpoint', async () => {
    await sql`insert into tenants (id, source, created_at) values ('t', 'portal', 1)`.execute(db)
    await sql`insert into webhook_events (id, tenant_id, template_id, template_kind, subject_id, type, url, body,
      state, attempts, created_at, updated_at) values ('msg_1', 't', 'degree', 'issuance', 'p1', 'issuance.issued',
      'https://rp.example/hook', '{}', 'pending', 0, 1700000000000, 1700000000000)`.execute(db)
    const attempt = (n: number, status: number, outcome: string) =>
      sql`update webhook_events set log_count = ${n}, updated_at = ${1700000000000 + n}, last_attempt = ${JSON.stringify(
        {
          at: 1700000000000 + n,
          durationMs: 12,
          status,
          error: null,
          outcome,
          nextAttemptAt: null,
          trigger: 'automatic',
        },
      )} where id = 'msg_1'`.execute(db)
    await attempt(1, 503, 'retry')
    await attempt(2, 410, 'disabled')
    const { rows } = await sql<{ attempt: number; at: number; status: number; outcome: string }>`
      select attempt, at, status, outcome from webhook_attempts where event_id = 'msg_1' order by attempt`.execute(
      db,
    )
    assert.deepEqual(rows, [
      { attempt: 1, at: 1700000000001, status: 503, outcome: 'retry' },
      { attempt: 2, at: 1700000000002, status: 410, outcome: 'disabled' },
    ])
    const endpoints = await sql<{
      disabled_reason: string
    }>`select disabled_reason from webhook_endpoints`.execute(db)
    assert.deepEqual(endpoints.rows, [
      { disabled_reason: 'https://rp.example/hook answered 410 Gone to event msg_1' },
    ])
  })

  test('a database migrated by a newer version is refused, naming it without its password', async () => {
    const newer = server.database('newer')
    const other = postgresDatabase(newer)
    try {
      await migratePostgres(other, newer)
      await sql`insert into kysely_migration (name, timestamp) values ('9999_from_the_future', 'now')`.execute(
        other,
      )
      const withPassword = newer.replace('vc@', 'vc:s3cret@')
      await assert.rejects(migratePostgres(other, withPassword), (error: Error) => {
        assert.ok(error instanceof PostgresOpenError)
        assert.match(error.message, /has a schema newer than this version of vc-harness/)
        assert.doesNotMatch(error.message, /s3cret/)
        return true
      })
    } finally {
      await other.destroy()
    }
  })

  test('an unreachable server is a PostgresOpenError naming the database, not the password', async () => {
    const unreachable = 'postgres://vc:s3cret@127.0.0.1:1/none'
    const db = postgresDatabase(unreachable, { connectTimeoutMs: 1000 })
    try {
      await assert.rejects(migratePostgres(db, unreachable), (error: Error) => {
        assert.ok(error instanceof PostgresOpenError)
        assert.match(
          error.message,
          /^cannot migrate the database postgres:\/\/vc:\*\*\*@127\.0\.0\.1:1\/none: /,
        )
        assert.doesNotMatch(error.message, /s3cret/)
        return true
      })
    } finally {
      await db.destroy()
    }
    assert.equal(redactedUrl('postgres://a:b@h/d'), 'postgres://a:***@h/d')
  })
})
