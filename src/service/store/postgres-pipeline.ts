import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult } from 'kysely'
import type * as Pg from 'pg'
import { lazyRequire } from '../../shared/lazy.ts'
import type { StoreStats } from './index.ts'
import { PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from './kysely.ts'
import { type OneRowQuery, postgresStatementNames } from './prepared.ts'

// The root store's statements on PostgreSQL (issue 38): those outside a transaction, nearly every statement of
// a flow once its steps are one statement each, go out on a few connections in pg's pipeline mode instead of
// one pool connection per statement. A statement is sent at once, without waiting for the ones before it on
// its connection, so a busy server backend takes the next from its socket instead of sleeping between them:
// per statement 158 → 49 µs of the service's CPU and 75 → 34 µs of PostgreSQL's, 50 concurrent point reads
// on this 2-core machine (a pool of 10 against one pipelined connection). Each statement still ends with its
// own Sync, so one that fails fails alone (autocommit). Transactions keep the pool (store/postgres-commit.ts).
//
// The price is head-of-line blocking: a statement waiting for a row lock holds up those sent after it on its
// connection. Root statements wait only for short transactions (a batch's or a status change's row lock);
// two connections keep one such wait from stalling every request.

const pg = lazyRequire<typeof Pg>('pg')

interface Corkable {
  cork(): void
  uncork(): void
}

/** Connections carrying the root store's statements. */
export const PIPELINED_CONNECTIONS = 2

/**
 * A Kysely dialect over PIPELINED_CONNECTIONS pipelined pg clients, round robin, each (re)connected when
 * first needed: a lost connection fails the statements on it (as a pool's would) and the next statement
 * connects anew. Runs the fixed statements' PostgreSQL texts as named prepared statements and counts every
 * statement in `stats`. It runs no transaction: the store's transactions are the pool's.
 */
export function pipelinedDialect(config: Pg.ClientConfig, stats: StoreStats): Dialect {
  const driver = new PipelinedDriver(config, stats)
  return {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => driver,
    // biome-ignore lint/suspicious/noExplicitAny: Kysely's introspector takes any schema
    createIntrospector: (db: any) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  }
}

class PipelinedDriver implements Driver {
  private readonly clients: (Promise<Pg.Client> | undefined)[] = []
  private turn = 0
  private closed = false
  constructor(
    private readonly config: Pg.ClientConfig,
    private readonly stats: StoreStats,
  ) {}

  async init() {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const slot = this.turn++ % PIPELINED_CONNECTIONS
    const client = await this.client(slot)
    const stats = this.stats
    const coalesce = () => this.coalesce(slot, client)
    return {
      async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
        stats.statements++
        const text = (compiled as OneRowQuery).postgres ?? compiled.sql
        const name = (compiled as OneRowQuery).postgres ? postgresStatementNames.get(text) : undefined
        const values = [...compiled.parameters]
        coalesce()
        const result = await client.query<R & Pg.QueryResultRow>(
          name === undefined ? { text, values } : { name, text, values },
        )
        const { command, rowCount, rows } = result
        const changes =
          command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE'
        return { ...(changes ? { numAffectedRows: BigInt(rowCount ?? 0) } : {}), rows: rows ?? [] }
      },
      streamQuery() {
        throw new Error('the root store streams no query')
      },
    }
  }

  private readonly corked: boolean[] = []

  /**
   * The statements sent on a connection in one turn of the event loop leave in one write: its socket is
   * corked at the first and uncorked after the I/O phase (pg corks each statement's messages too; the
   * socket writes once the outermost cork is undone).
   */
  private coalesce(slot: number, client: Pg.Client) {
    if (this.corked[slot]) return
    const stream = (
      client as unknown as { connection?: { stream?: NodeJS.WritableStream & Partial<Corkable> } }
    ).connection?.stream
    if (!stream?.cork || !stream.uncork) return
    stream.cork()
    this.corked[slot] = true
    setImmediate(() => {
      this.corked[slot] = false
      stream.uncork?.()
    })
  }

  private client(slot: number): Promise<Pg.Client> {
    if (this.closed) return Promise.reject(new Error('the store is closed'))
    let client = this.clients[slot]
    if (!client) {
      const created = new (pg().Client)({ ...this.config, pipeline: true } as Pg.ClientConfig)
      const drop = () => {
        if (this.clients[slot] === client) this.clients[slot] = undefined
      }
      // A lost connection: its statements fail (pg rejects them); the next one connects anew.
      created.on('error', drop)
      created.on('end', drop)
      client = created.connect().then(
        () => created,
        (error: unknown) => {
          drop()
          throw error
        },
      )
      this.clients[slot] = client
    }
    return client
  }

  async beginTransaction(): Promise<void> {
    throw new Error('the root store runs no transaction: store.transaction() does, on the pool')
  }
  async commitTransaction(): Promise<void> {
    throw new Error('the root store runs no transaction')
  }
  async rollbackTransaction(): Promise<void> {
    throw new Error('the root store runs no transaction')
  }
  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    this.closed = true
    const clients = this.clients.splice(0)
    // Statements already sent finish first: pg ends a pipelined connection once it has drained.
    await Promise.all(clients.map(async (c) => (await c?.catch(() => undefined))?.end().catch(() => {})))
  }
}
