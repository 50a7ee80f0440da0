import type { Kysely, Migration } from 'kysely'
import { sql } from './kysely.ts'
import { isPostgres, postgresAttemptTrigger } from './postgres-schema.ts'

// Append-only: a released migration is never edited; a change is a new entry.
export const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('tenants')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('template_id', 'text')
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('label', 'text')
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('revoked_at', 'integer')
        .execute()
      await db.schema
        .createIndex('api_keys_by_tenant')
        .on('api_keys')
        .columns(['tenant_id', 'created_at'])
        .execute()
      // Issuance and verification templates share one id space per tenant: `ssiconfig` names either kind.
      await db.schema
        .createTable('templates')
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('templates_pk', ['tenant_id', 'id'])
        .execute()
      await db.schema
        .createTable('issuance_processes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('data', 'text')
        .addColumn('validator', 'text')
        .addColumn('created_by_key', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .execute()
      // Serves the admin list: tenant-scoped, optionally by status, in (created_at, id) order.
      await db.schema
        .createIndex('processes_by_tenant')
        .on('issuance_processes')
        .columns(['tenant_id', 'created_at', 'id'])
        .execute()
      await db.schema
        .createIndex('processes_by_tenant_status')
        .on('issuance_processes')
        .columns(['tenant_id', 'status', 'created_at', 'id'])
        .execute()
      await db.schema
        .createIndex('processes_by_template')
        .on('issuance_processes')
        .columns(['tenant_id', 'template_id'])
        .execute()
      await db.schema
        .createTable('service_keys')
        .addColumn('kid', 'text', (c) => c.primaryKey())
        .addColumn('alg', 'text', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .execute()
    },
  },
  '0002_oid4vci': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('issuance_processes').addColumn('submitted', 'text').execute()
      await db.schema.alterTable('issuance_processes').addColumn('rejected_reason', 'text').execute()
      await db.schema
        .createTable('issuer_keys')
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('alg', 'text', (c) => c.notNull())
        .addColumn('kid', 'text', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('issuer_keys_pk', ['tenant_id', 'alg'])
        .execute()
      await db.schema
        .createTable('oid4vci_grants')
        .addColumn('process_id', 'text', (c) => c.primaryKey().references('issuance_processes.id'))
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('code_hash', 'text', (c) => c.notNull().unique())
        .addColumn('code_expires_at', 'integer', (c) => c.notNull())
        .addColumn('tx_code_hash', 'text')
        .addColumn('tx_failures', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('code_state', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.unique())
        .addColumn('token_expires_at', 'integer')
        .addColumn('holder_did', 'text')
        .addColumn('credential_requested_at', 'integer')
        .addColumn('transaction_id', 'text', (c) => c.unique())
        .addColumn('redeemed_at', 'integer')
        .addColumn('notification_id', 'text', (c) => c.unique())
        .addColumn('notification_event', 'text')
        .execute()
      await db.schema
        .createTable('nonces')
        .addColumn('value', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'integer', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('nonces_by_expiry').on('nonces').column('expires_at').execute()
      await db.schema
        .createTable('status_lists')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('alg', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('bits', 'blob', (c) => c.notNull())
        .addColumn('used', 'integer', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('status_lists_by_tenant')
        .on('status_lists')
        .columns(['tenant_id', 'alg', 'created_at'])
        .execute()
      await db.schema
        .createTable('issued_credentials')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('process_id', 'text', (c) => c.notNull().references('issuance_processes.id'))
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('list_id', 'text', (c) => c.notNull().references('status_lists.id'))
        .addColumn('list_index', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .addUniqueConstraint('issued_credentials_slot', ['list_id', 'list_index'])
        .execute()
      await db.schema
        .createIndex('issued_credentials_by_process')
        .on('issued_credentials')
        .column('process_id')
        .execute()
    },
  },
  '0003_verification': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('verification_sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('created_by_key', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('definition', 'text', (c) => c.notNull())
        .addColumn('request', 'text', (c) => c.notNull())
        .addColumn('request_jwt', 'text', (c) => c.notNull())
        .addColumn('policy', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .addColumn('expires_at', 'integer', (c) => c.notNull())
        .addColumn('requested_at', 'integer')
        .addColumn('submission', 'text')
        .addColumn('submission_format', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('validations', 'text')
        .addColumn('subject', 'text')
        .addColumn('source_wallet', 'text')
        .addColumn('callback', 'text')
        .execute()
      await db.schema
        .createIndex('sessions_by_tenant')
        .on('verification_sessions')
        .columns(['tenant_id', 'created_at'])
        .execute()
    },
  },
  // Webhook outbox (issue 5): an event row is written in the transaction of the state change it reports.
  '0004_webhooks': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('webhook_events')
        // seq orders events; deliveries of one subject (process or session) follow it.
        .addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement())
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('template_kind', 'text', (c) => c.notNull())
        .addColumn('subject_id', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'integer')
        .addColumn('lease_until', 'integer')
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .addColumn('delivered_at', 'integer')
        .execute()
      // The dispatcher's scan: pending events by due time.
      await db.schema
        .createIndex('webhook_events_due')
        .on('webhook_events')
        .columns(['state', 'next_attempt_at'])
        .execute()
      await db.schema
        .createIndex('webhook_events_by_subject')
        .on('webhook_events')
        .columns(['tenant_id', 'subject_id', 'seq'])
        .execute()
      await db.schema
        .createIndex('webhook_events_by_template')
        .on('webhook_events')
        .columns(['tenant_id', 'template_id', 'seq'])
        .execute()
      await db.schema
        .createTable('webhook_attempts')
        .addColumn('event_id', 'text', (c) => c.notNull().references('webhook_events.id'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('at', 'integer', (c) => c.notNull())
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('status', 'integer')
        .addColumn('error', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('next_attempt_at', 'integer')
        .addColumn('trigger', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('webhook_attempts_pk', ['event_id', 'attempt'])
        .execute()
      // An endpoint that answered 410 Gone stays disabled for that URL until the template is saved again.
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('disabled_at', 'integer', (c) => c.notNull())
        .addColumn('disabled_reason', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('webhook_endpoints_pk', ['tenant_id', 'template_id'])
        .execute()
    },
  },
  // X.509 issuer keys (HAIP; issue 15): a test CA per tenant, its certificate the trust anchor relying parties
  // configure, and the leaf certificates it issued for the tenant's issuer keys (one per algorithm and
  // credential issuer URL, the leaf's SAN URI). Private keys are stored as the issuer keys are (JWK text).
  '0005_issuer_x509': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('issuer_cas')
        .addColumn('tenant_id', 'text', (c) => c.primaryKey().references('tenants.id'))
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('certificate', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('issuer_certificates')
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('alg', 'text', (c) => c.notNull())
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('certificate', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('issuer_certificates_pk', ['tenant_id', 'alg', 'issuer'])
        .execute()
    },
  },
  // OpenID4VP 1.0 sessions (issue 16): the profile a session speaks (`pe`, the interface document's draft-20
  // profile, or `dcql`) and, for response_mode direct_post.jwt, the private half of the session's ephemeral
  // ECDH-ES key (JWK text) that decrypts the wallet's response. PE sessions keep their rows as they were.
  '0006_openid4vp_1': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('verification_sessions')
        .addColumn('profile', 'text', (c) => c.notNull().defaultTo('pe'))
        .execute()
      await db.schema.alterTable('verification_sessions').addColumn('response_key', 'text').execute()
    },
  },
  // Retention (issue 19): the background purge (store/retention.ts) finds closed flows by age
  // through these, without reading the young rows of big tables.
  '0007_retention': {
    async up(db: Kysely<unknown>) {
      // REJECTED and ISSUED processes by their last change.
      await db.schema
        .createIndex('processes_by_status_age')
        .on('issuance_processes')
        .columns(['status', 'updated_at'])
        .execute()
      // Offers that lapsed unredeemed: live codes by expiry.
      await db.schema
        .createIndex('grants_by_code_expiry')
        .on('oid4vci_grants')
        .columns(['code_state', 'code_expires_at'])
        .execute()
      // Ended sessions: a session is written only while it lives, so its last change bounds its end.
      await db.schema
        .createIndex('sessions_by_age')
        .on('verification_sessions')
        .column('updated_at')
        .execute()
      // Settled webhook events by their last change.
      await db.schema
        .createIndex('webhook_events_by_state_age')
        .on('webhook_events')
        .columns(['state', 'updated_at'])
        .execute()
    },
  },
  // One statement per webhook attempt (issue 20). An event row names the dispatcher holding its lease (it is
  // written already leased to the enqueuing process's dispatcher), counts the attempts in its log and carries
  // the newest one as JSON; recording an attempt is one UPDATE of the row, and this trigger appends the
  // attempt to webhook_attempts and, on a 410 Gone, disables the endpoint, as the dispatcher did before in a
  // transaction of its own (store/webhooks.ts recordAttempt).
  '0008_webhook_attempt_statement': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('webhook_events').addColumn('lease_owner', 'text').execute()
      await db.schema
        .alterTable('webhook_events')
        .addColumn('log_count', 'integer', (c) => c.notNull().defaultTo(0))
        .execute()
      await db.schema.alterTable('webhook_events').addColumn('last_attempt', 'text').execute()
      await sql`update webhook_events set log_count = (
        select coalesce(max(a.attempt), 0) from webhook_attempts a where a.event_id = webhook_events.id)`.execute(
        db,
      )
      if (isPostgres(db)) {
        await postgresAttemptTrigger(db)
        return
      }
      await sql`create trigger webhook_attempt_logged after update of log_count on webhook_events
        when new.log_count > old.log_count and new.last_attempt is not null
        begin
          insert into webhook_attempts
            (event_id, attempt, at, duration_ms, status, error, outcome, next_attempt_at, trigger)
          values (
            new.id,
            new.log_count,
            json_extract(new.last_attempt, '$.at'),
            json_extract(new.last_attempt, '$.durationMs'),
            json_extract(new.last_attempt, '$.status'),
            json_extract(new.last_attempt, '$.error'),
            json_extract(new.last_attempt, '$.outcome'),
            json_extract(new.last_attempt, '$.nextAttemptAt'),
            json_extract(new.last_attempt, '$.trigger'));
          insert into webhook_endpoints (tenant_id, template_id, url, disabled_at, disabled_reason)
            select new.tenant_id, new.template_id, new.url, new.updated_at,
              new.url || ' answered 410 Gone to event ' || new.id
            where json_extract(new.last_attempt, '$.outcome') = 'disabled'
              and json_extract(new.last_attempt, '$.status') = 410
            on conflict (tenant_id, template_id) do update set
              url = excluded.url, disabled_at = excluded.disabled_at, disabled_reason = excluded.disabled_reason;
        end`.execute(db)
    },
  },
  // A status list's bits (16–128 KB) apart from its counters (issue 20). SQLite rewrites a whole row on any
  // UPDATE, and reads a column after a blob by walking the blob's overflow pages: with the bits in the row,
  // counting one allocation rewrote the list (~32 KB of WAL per credential issued) and reading its version
  // walked it. Now an allocation and a version read touch a row of a few dozen bytes; a status change writes
  // the bits.
  '0009_status_list_bits': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('status_list_bits')
        .addColumn('list_id', 'text', (c) => c.primaryKey().references('status_lists.id'))
        .addColumn('bits', 'blob', (c) => c.notNull())
        .execute()
      await sql`insert into status_list_bits (list_id, bits) select id, bits from status_lists`.execute(db)
      await db.schema.alterTable('status_lists').dropColumn('bits').execute()
    },
  },
  // The outbox's two state indexes cover only the rows their queries look for (issue 20): the dispatcher's
  // due scan reads pending events, retention reads settled ones. A new event (pending) no longer enters the
  // settled index, and its delivery moves it from one index to the other instead of rewriting an entry in
  // both: three fewer index writes per event. Queries name the state as a literal (`state = 'pending'`,
  // `state <> 'pending'`), which both databases need to use a partial index.
  '0010_webhook_partial_indexes': {
    async up(db: Kysely<unknown>) {
      await sql`drop index webhook_events_due`.execute(db)
      await sql`create index webhook_events_due on webhook_events (next_attempt_at, seq)
        where state = 'pending'`.execute(db)
      await sql`drop index webhook_events_by_state_age`.execute(db)
      await sql`create index webhook_events_settled on webhook_events (updated_at)
        where state <> 'pending'`.execute(db)
    },
  },
  // Further credential requests on one access token (OpenID4VCI 1.0 §14.3, issue 34): each further instance of
  // a process's credential is a row of issued_credentials with its own status entry, naming the original it
  // is an instance of (a status change of the original reaches it) and the notification id of the credential
  // response that carried it, with the wallet's notification event. All null on an original.
  '0011_further_credentials': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('issued_credentials').addColumn('instance_of', 'text').execute()
      await db.schema.alterTable('issued_credentials').addColumn('notification_id', 'text').execute()
      await db.schema.alterTable('issued_credentials').addColumn('notification_event', 'text').execute()
    },
  },
  // ISO mdoc issuance (issue 35): each tenant's IACA root (ISO 18013-5 Annex B.1.2), its private key sealed
  // like the test CA's; the document signer certificates it issues are rows of issuer_certificates.
  '0012_mdoc_iaca': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('mdoc_iacas')
        .addColumn('tenant_id', 'text', (c) => c.primaryKey().references('tenants.id'))
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('certificate', 'text', (c) => c.notNull())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .execute()
    },
  },
  // The authorization code flow (issue 36; OpenID4VCI 1.0 §5, RFC 9126 PAR, RFC 7636 PKCE): one row per
  // flow from the pushed request to the code's redemption, found by the request_uri's hash or the code's.
  // The grant's access token may be DPoP-bound (RFC 9449 §6): token_jkt, null for a Bearer token.
  // A batch credential request (OpenID4VCI 1.0 §8.2) keeps its further holders for the deferred download:
  // batch_holders, a JSON array of DIDs, null for a request of one key.
  '0013_authorization_code': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('oauth_authorizations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('process_id', 'text')
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('redirect_uri', 'text', (c) => c.notNull())
        .addColumn('state', 'text')
        .addColumn('code_challenge', 'text', (c) => c.notNull())
        .addColumn('dpop_jkt', 'text')
        .addColumn('instance_jkt', 'text')
        .addColumn('details', 'text')
        .addColumn('scope', 'text')
        .addColumn('stage', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'integer', (c) => c.notNull())
        .addColumn('code_hash', 'text', (c) => c.unique())
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('oauth_authorizations_by_expiry')
        .on('oauth_authorizations')
        .column('expires_at')
        .execute()
      await db.schema.alterTable('oid4vci_grants').addColumn('token_jkt', 'text').execute()
      await db.schema.alterTable('oid4vci_grants').addColumn('batch_holders', 'text').execute()
    },
  },
}
