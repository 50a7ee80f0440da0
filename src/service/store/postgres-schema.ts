import type {
  ColumnDefinitionNode,
  DataTypeNode,
  Kysely,
  KyselyPlugin,
  Migration,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely'
import { OperationNodeTransformer, PostgresAdapter, sql } from './kysely.ts'

// The store's one list of migrations (migrations.ts), run on PostgreSQL (issue 21). The schema is written
// once, in SQLite's terms; on PostgreSQL the same statements are rewritten on the way out:
// - `integer` → `bigint`: timestamps are milliseconds since 1970, beyond PostgreSQL's 4-byte integer;
// - `blob` → `bytea`;
// - an auto-increment key → `bigserial`.
// The one statement without a portable form (the trigger of migration 0008) has its PostgreSQL twin below.

/** Whether a migration runs on PostgreSQL (its statements take this file's rewriting). */
export function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}

class PostgresTypes extends OperationNodeTransformer {
  protected override transformDataType(node: DataTypeNode): DataTypeNode {
    const type = { integer: 'bigint', blob: 'bytea' }[node.dataType as string]
    return type ? { ...node, dataType: type as DataTypeNode['dataType'] } : node
  }
  protected override transformColumnDefinition(
    node: ColumnDefinitionNode,
    queryId?: never,
  ): ColumnDefinitionNode {
    const column = super.transformColumnDefinition(node, queryId)
    if (!column.autoIncrement) return column
    return {
      ...column,
      autoIncrement: false,
      dataType: { kind: 'DataTypeNode', dataType: 'bigserial' } as DataTypeNode,
    }
  }
}

/** Rewrites the schema statements of migrations.ts for PostgreSQL (and leaves every other query alone). */
export class PostgresSchemaPlugin implements KyselyPlugin {
  private readonly types = new PostgresTypes()
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const { kind } = args.node
    return kind === 'CreateTableNode' || kind === 'AlterTableNode'
      ? this.types.transformNode(args.node, args.queryId)
      : args.node
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result
  }
}

/** The migrations for PostgreSQL: the same list, each run through PostgresSchemaPlugin. */
export function postgresMigrations(migrations: Record<string, Migration>): Record<string, Migration> {
  const plugin = new PostgresSchemaPlugin()
  return Object.fromEntries(
    Object.entries(migrations).map(([name, m]) => [
      name,
      {
        up: (db: Kysely<unknown>) => m.up(db.withPlugin(plugin)),
        ...(m.down
          ? { down: (db: Kysely<unknown>) => (m.down as Migration['up'])(db.withPlugin(plugin)) }
          : {}),
      },
    ]),
  )
}

/**
 * Migration 0008's trigger in PL/pgSQL: an UPDATE that counts one more attempt in an event's log appends
 * that attempt (carried as JSON in `last_attempt`) to webhook_attempts and, on a 410 Gone, disables the
 * endpoint, in the same statement as the event's change (store/webhooks.ts recordAttempt).
 */
export async function postgresAttemptTrigger(db: Kysely<unknown>) {
  await sql`create function webhook_attempt_logged() returns trigger language plpgsql as $$
    declare attempt json := new.last_attempt::json;
    begin
      insert into webhook_attempts
        (event_id, attempt, at, duration_ms, status, error, outcome, next_attempt_at, trigger)
      values (
        new.id,
        new.log_count,
        (attempt->>'at')::bigint,
        (attempt->>'durationMs')::bigint,
        (attempt->>'status')::bigint,
        attempt->>'error',
        attempt->>'outcome',
        (attempt->>'nextAttemptAt')::bigint,
        attempt->>'trigger');
      if attempt->>'outcome' = 'disabled' and (attempt->>'status')::bigint = 410 then
        insert into webhook_endpoints (tenant_id, template_id, url, disabled_at, disabled_reason)
        values (new.tenant_id, new.template_id, new.url, new.updated_at,
          new.url || ' answered 410 Gone to event ' || new.id)
        on conflict (tenant_id, template_id) do update set
          url = excluded.url, disabled_at = excluded.disabled_at, disabled_reason = excluded.disabled_reason;
      end if;
      return new;
    end
  $$`.execute(db)
  await sql`create trigger webhook_attempt_logged after update of log_count on webhook_events
    for each row when (new.log_count > old.log_count and new.last_attempt is not null)
    execute function webhook_attempt_logged()`.execute(db)
}
