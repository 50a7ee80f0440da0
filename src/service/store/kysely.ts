import { createRequire } from 'node:module'
import type * as KyselyModule from 'kysely'

// Kysely's CommonJS build, by require(): its ~260 ES modules would each pass through tsx's loader hooks when
// `vc-harness serve` starts (~130 ms, bench/startup.ts); required, they load as plain CommonJS. Every value
// import of kysely comes from here, so the process holds one copy of it; types come from 'kysely' itself.
const kysely = createRequire(import.meta.url)('kysely') as typeof KyselyModule

export const {
  Kysely,
  Migrator,
  SqliteDialect,
  PostgresDialect,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  OperationNodeTransformer,
  sql,
  CompiledQuery,
} = kysely
export type Kysely<DB> = KyselyModule.Kysely<DB>
