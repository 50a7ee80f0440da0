import type { Kysely } from 'kysely'
import type * as Pg from 'pg'
import { lazyRequire } from '../../shared/lazy.ts'
import { Kysely as KyselyClass, Migrator, PostgresDialect } from './kysely.ts'
import { migrations } from './migrations.ts'
import { postgresMigrations } from './postgres-schema.ts'

// The PostgreSQL connection of a shared deployment (issue 21; docs/scaling.md): a pg pool under Kysely's
// PostgreSQL dialect, migrated by the same list of migrations as SQLite. `pg` loads only when a PostgreSQL
// URL is given: the embedded SQLite default never pays for it.

const pg = lazyRequire<typeof Pg>('pg')

/** pg's type id of int8 (`bigint`): every integer column of the schema is one. */
const INT8_OID = 20

export interface PostgresOptions {
  /** Connections in the pool (default 10). */
  maxConnections?: number
  /** A statement running longer is cancelled by the server (default 10 s). */
  statementTimeoutMs?: number
  /** How long a new connection may take (default 5 s). */
  connectTimeoutMs?: number
}

/**
 * The database could not be reached, or its schema is newer than this code (another version migrated it):
 * the message names the database (never its password) and the reason.
 */
export class PostgresOpenError extends Error {
  override name = 'PostgresOpenError'
}

/** The URL without its password, for messages and logs. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return '(not a URL)'
  }
}

/**
 * Kysely over a pg pool. Integer columns are `bigint` (milliseconds since 1970 outgrow 4 bytes) and pg reads
 * those as strings; here they read as numbers, exact up to 2^53, which a millisecond timestamp stays below
 * for 285,000 years.
 */
export function postgresDatabase<DB>(url: string, options: PostgresOptions = {}): Kysely<DB> {
  const { Pool, types } = pg()
  const pool = new Pool({
    connectionString: url,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? Number : types.getTypeParser(oid, format)) as typeof types.getTypeParser,
    },
  })
  return new KyselyClass<DB>({ dialect: new PostgresDialect({ pool }) })
}

/**
 * Brings the schema up to date with the store's migrations (migrations.ts, rewritten for PostgreSQL by
 * postgres-schema.ts). Kysely's migrator takes a lock table, so instances starting together migrate once.
 * A database that cannot be reached, or that holds a migration this code does not know (a newer version
 * migrated it), is a PostgresOpenError.
 */
export async function migratePostgres(db: Kysely<unknown>, url: string): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => postgresMigrations(migrations) },
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) {
    const message = (error as Error).message ?? String(error)
    if (/previously executed migration .* is missing/i.test(message)) {
      throw new PostgresOpenError(
        `the database ${redactedUrl(url)} has a schema newer than this version of vc-harness (${message}); run the version that migrated it, or a newer one`,
        { cause: error },
      )
    }
    throw new PostgresOpenError(`cannot migrate the database ${redactedUrl(url)}: ${message}`, {
      cause: error,
    })
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
