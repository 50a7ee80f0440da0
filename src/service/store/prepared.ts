import type { CompiledQuery, Kysely, RootOperationNode } from 'kysely'

// Fixed SQL texts for the hot paths: built once, run without Kysely building or compiling a query per call
// (query building was ~10 % of the service's CPU in a full flow:
// bench/results/2026-11-22-flow-bench-before-issue-20.md). The text is constant, so the driver's prepared
// statement is reused (sqlite-driver.ts). Cold paths keep Kysely's builder.
// Placeholders are `?` (`$n` on PostgreSQL); the tests of each repository run every text.

/**
 * A constant statement; `one`: at most one row is wanted (the driver fetches one instead of all). That holds
 * for a write with RETURNING of one row too: SQLite makes all of a statement's changes at its first step.
 * `postgres`: the same statement for PostgreSQL (issue 21): the text with `$1, $2, …` for its `?`, or a
 * text of its own where SQLite's has no portable form (`json_each`).
 */
export interface Prepared {
  readonly sql: string
  readonly one: boolean
  readonly postgres: string
}

const squeezed = (text: string) => text.replace(/\s+/g, ' ').trim()
/**
 * `?` → `$n` (the texts here hold no `?` inside a literal). Exported for a PostgreSQL text of its own composed
 * of SQLite ones (issue 38: a data-modifying CTE of two statements, numbered as a whole).
 */
export const numbered = (text: string) => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

/**
 * Every fixed statement's PostgreSQL text → the name it is prepared under on each connection (issue 38):
 * parsed and planned once per connection instead of once per execution (store/postgres.ts).
 */
export const postgresStatementNames = new Map<string, string>()

export const prepared = (sql: string, one = false, postgres?: string): Prepared => {
  const text = squeezed(postgres ?? numbered(sql))
  if (!postgresStatementNames.has(text))
    postgresStatementNames.set(text, `vc${postgresStatementNames.size + 1}`)
  return { sql: squeezed(sql), one, postgres: text }
}

/** A flag the two databases answer differently: SQLite 0/1, PostgreSQL a boolean (EXISTS) or an integer. */
export const flag = (value: unknown): boolean => value === true || Number(value) === 1

// Kysely's executor passes the compiled query to the driver as it is; `query` is only read by plugins
// (there are none), so one raw node serves every statement.
const RAW: RootOperationNode = {
  kind: 'RawNode',
  sqlFragments: [''],
  parameters: [],
} as unknown as RootOperationNode

export interface OneRowQuery extends CompiledQuery {
  readonly one?: boolean
  /** The statement's PostgreSQL text; the PostgreSQL store runs it instead of `sql`. */
  readonly postgres?: string
}

const compiled = (statement: Prepared, parameters: readonly unknown[]): OneRowQuery => ({
  sql: statement.sql,
  parameters,
  query: RAW,
  queryId: { queryId: '' },
  one: statement.one,
  postgres: statement.postgres,
})

// biome-ignore lint/suspicious/noExplicitAny: a statement runs on any schema's connection
type AnyDb = Kysely<any>

export async function rows<R>(db: AnyDb, statement: Prepared, parameters: readonly unknown[]): Promise<R[]> {
  return (await db.executeQuery<R>(compiled(statement, parameters))).rows as R[]
}

export async function first<R>(
  db: AnyDb,
  statement: Prepared,
  parameters: readonly unknown[],
): Promise<R | undefined> {
  return (await db.executeQuery<R>(compiled(statement, parameters))).rows[0]
}

/** Runs a write; answers the rows it changed. */
export async function run(db: AnyDb, statement: Prepared, parameters: readonly unknown[]): Promise<number> {
  return Number((await db.executeQuery(compiled(statement, parameters))).numAffectedRows ?? 0n)
}
