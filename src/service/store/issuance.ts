import type { Kysely, Selectable } from 'kysely'
import { JsonInterner } from '../util/frozen.ts'
import { insertOrConflict, isUniqueViolation } from './conflicts.ts'
import type { RowCache } from './exclusive-cache.ts'
import {
  ConflictError,
  type CredentialStatus,
  type GrantRecord,
  type GrantRepository,
  type HolderValidator,
  type IssuedCredential,
  type IssuedCredentialRecord,
  type IssuedCredentialRepository,
  type IssuerCaRecord,
  type IssuerCertificateRecord,
  type IssuerCertificateRepository,
  type IssuerKeyRecord,
  type IssuerKeyRepository,
  type NonceRepository,
  type OwnTransaction,
  type PreparedCredential,
  type ProcessQuery,
  type ProcessRecord,
  type ProcessRepository,
  type SigningAlg,
  type StatusListRecord,
  type StatusListRepository,
} from './index.ts'
import { sql } from './kysely.ts'
import { first, type Prepared, prepared, run } from './prepared.ts'
import type { StoreSecrets } from './secrets.ts'

// Tables of the wallet-facing issuance protocol (migration 0002) and their repositories.

export interface IssuerKeysTable {
  tenant_id: string
  alg: string
  kid: string
  private_jwk: string
  created_at: number
}
export interface IssuerCasTable {
  tenant_id: string
  private_jwk: string
  certificate: string
  created_at: number
}
export interface IssuerCertificatesTable {
  tenant_id: string
  alg: string
  issuer: string
  certificate: string
  created_at: number
}
export interface GrantsTable {
  process_id: string
  tenant_id: string
  code_hash: string
  code_expires_at: number
  tx_code_hash: string | null
  tx_failures: number
  code_state: string
  token_hash: string | null
  token_expires_at: number | null
  holder_did: string | null
  credential_requested_at: number | null
  transaction_id: string | null
  redeemed_at: number | null
  notification_id: string | null
  notification_event: string | null
  /** RFC 9449 §6: the DPoP key thumbprint the access token is bound to; null for a Bearer token. */
  token_jkt: string | null
  /** Migration 0013: a batch request's further holder DIDs (OpenID4VCI 1.0 §8.2), a JSON array; else null. */
  batch_holders: string | null
}
export interface NoncesTable {
  value: string
  tenant_id: string
  expires_at: number
}
export interface StatusListsTable {
  id: string
  tenant_id: string
  alg: string
  size: number
  used: number
  version: number
  created_at: number
  updated_at: number
}
/** The bits apart from the counters (migration 0009): an allocation never rewrites them. */
export interface StatusListBitsTable {
  list_id: string
  bits: Uint8Array
}
export interface IssuedCredentialsTable {
  id: string
  process_id: string
  tenant_id: string
  list_id: string
  list_index: number
  status: string
  updated_at: number
  /** Migration 0011: on a further instance (OpenID4VCI 1.0 §14.3), its original and its response's notification. */
  instance_of: string | null
  notification_id: string | null
  notification_event: string | null
}
export interface ProcessesTable {
  id: string
  tenant_id: string
  template_id: string
  type: string
  status: string
  data: string | null
  validator: string | null
  submitted: string | null
  rejected_reason: string | null
  created_by_key: string
  created_at: number
  updated_at: number
}
export interface IssuanceProtocolSchema {
  issuance_processes: ProcessesTable
  issuer_keys: IssuerKeysTable
  issuer_cas: IssuerCasTable
  mdoc_iacas: IssuerCasTable
  issuer_certificates: IssuerCertificatesTable
  oid4vci_grants: GrantsTable
  nonces: NoncesTable
  status_lists: StatusListsTable
  status_list_bits: StatusListBitsTable
  issued_credentials: IssuedCredentialsTable
}
type Db = Kysely<IssuanceProtocolSchema>

// Private JWKs are sealed with the data key (secrets.ts); the row's identity is the place it is sealed for.
export class SqlIssuerKeys implements IssuerKeyRepository {
  constructor(
    private readonly db: Db,
    private readonly secrets: StoreSecrets,
  ) {}
  private readonly toRecord = (r: Selectable<IssuerKeysTable>): IssuerKeyRecord => ({
    tenantId: r.tenant_id,
    alg: r.alg as SigningAlg,
    kid: r.kid,
    privateJwk: this.secrets.openJson<JsonWebKey>(
      'issuer_keys.private_jwk',
      [r.tenant_id, r.alg],
      r.private_jwk,
    ),
    createdAt: r.created_at,
  })
  async get(tenantId: string, alg: SigningAlg) {
    const row = await this.db
      .selectFrom('issuer_keys')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('alg', '=', alg)
      .executeTakeFirst()
    return row && this.toRecord(row)
  }
  async listByTenant(tenantId: string) {
    const rows = await this.db
      .selectFrom('issuer_keys')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .orderBy('alg')
      .execute()
    return rows.map(this.toRecord)
  }
  async create(k: IssuerKeyRecord) {
    await insertOrConflict(
      this.db
        .insertInto('issuer_keys')
        .values({
          tenant_id: k.tenantId,
          alg: k.alg,
          kid: k.kid,
          private_jwk: this.secrets.sealJson('issuer_keys.private_jwk', [k.tenantId, k.alg], k.privateJwk),
          created_at: k.createdAt,
        })
        .execute(),
      `issuer key ${k.alg} of tenant "${k.tenantId}"`,
    )
  }
}

export class SqlIssuerCertificates implements IssuerCertificateRepository {
  constructor(
    private readonly db: Db,
    private readonly secrets: StoreSecrets,
  ) {}
  getCa(tenantId: string) {
    return this.getRoot('issuer_cas', tenantId)
  }
  createCa(ca: IssuerCaRecord) {
    return this.createRoot('issuer_cas', ca, `CA of tenant "${ca.tenantId}"`)
  }
  getIaca(tenantId: string) {
    return this.getRoot('mdoc_iacas', tenantId)
  }
  createIaca(iaca: IssuerCaRecord) {
    return this.createRoot('mdoc_iacas', iaca, `IACA of tenant "${iaca.tenantId}"`)
  }
  /** A tenant's root certificate and its sealed key: the test CA (issuer_cas) or the mdoc IACA (mdoc_iacas). */
  private async getRoot(
    table: 'issuer_cas' | 'mdoc_iacas',
    tenantId: string,
  ): Promise<IssuerCaRecord | undefined> {
    const r = await this.db.selectFrom(table).selectAll().where('tenant_id', '=', tenantId).executeTakeFirst()
    return (
      r && {
        tenantId: r.tenant_id,
        privateJwk: this.secrets.openJson<JsonWebKey>(`${table}.private_jwk`, [r.tenant_id], r.private_jwk),
        certificate: r.certificate,
        createdAt: r.created_at,
      }
    )
  }
  private async createRoot(table: 'issuer_cas' | 'mdoc_iacas', root: IssuerCaRecord, what: string) {
    await insertOrConflict(
      this.db
        .insertInto(table)
        .values({
          tenant_id: root.tenantId,
          private_jwk: this.secrets.sealJson(`${table}.private_jwk`, [root.tenantId], root.privateJwk),
          certificate: root.certificate,
          created_at: root.createdAt,
        })
        .execute(),
      what,
    )
  }
  async getLeaf(tenantId: string, alg: SigningAlg, issuer: string) {
    const r = await this.db
      .selectFrom('issuer_certificates')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('alg', '=', alg)
      .where('issuer', '=', issuer)
      .executeTakeFirst()
    return (
      r && {
        tenantId: r.tenant_id,
        alg: r.alg as SigningAlg,
        issuer: r.issuer,
        certificate: r.certificate,
        createdAt: r.created_at,
      }
    )
  }
  async createLeaf(c: IssuerCertificateRecord) {
    await insertOrConflict(
      this.db
        .insertInto('issuer_certificates')
        .values({
          tenant_id: c.tenantId,
          alg: c.alg,
          issuer: c.issuer,
          certificate: c.certificate,
          created_at: c.createdAt,
        })
        .execute(),
      `${c.alg} certificate of tenant "${c.tenantId}" for ${c.issuer}`,
    )
  }
}

const json = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value)
const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T))

// The holder validator is the template's, the same text in every process of it: parsed once, shared frozen.
const validators = new JsonInterner()

const toProcess = (row: Selectable<ProcessesTable>): ProcessRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  templateId: row.template_id,
  type: row.type,
  status: row.status as ProcessRecord['status'],
  data: parse<IssuedCredential[]>(row.data),
  validator: row.validator === null ? null : validators.parse<HolderValidator>(row.validator),
  submitted: parse<PreparedCredential[]>(row.submitted),
  rejectedReason: row.rejected_reason,
  createdByKey: row.created_by_key,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

const PROCESS_COLUMNS =
  'id, tenant_id, template_id, type, status, data, validator, submitted, rejected_reason, created_by_key, created_at, updated_at'
const PROCESS_BY_ID = prepared(`SELECT ${PROCESS_COLUMNS} FROM issuance_processes WHERE id = ?`, true)
const PROCESS_INSERT = prepared(
  `INSERT INTO issuance_processes (${PROCESS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
)
const PROCESS_UPDATE = prepared(`UPDATE issuance_processes
  SET status = ?, data = ?, validator = ?, submitted = ?, rejected_reason = ?, updated_at = ?
  WHERE id = ? AND updated_at = ?`)

const processValues = (p: ProcessRecord) => [
  p.id,
  p.tenantId,
  p.templateId,
  p.type,
  p.status,
  json(p.data),
  json(p.validator),
  json(p.submitted),
  p.rejectedReason,
  p.createdByKey,
  p.createdAt,
  p.updatedAt,
]

/** PROCESS_UPDATE's values (and PROCESS_UPDATE_UNREQUESTED's, PROCESS_AND_REQUEST_UPDATE's first eight). */
const processUpdateValues = (p: ProcessRecord, expectedUpdatedAt: number) => [
  p.status,
  json(p.data),
  json(p.validator),
  json(p.submitted),
  p.rejectedReason,
  p.updatedAt,
  p.id,
  expectedUpdatedAt,
]

export class SqlProcesses implements ProcessRepository {
  constructor(private readonly db: Db) {}
  async get(id: string) {
    const row = await first<Selectable<ProcessesTable>>(this.db, PROCESS_BY_ID, [id])
    return row && toProcess(row)
  }
  async create(p: ProcessRecord) {
    await insertOrConflict(run(this.db, PROCESS_INSERT, processValues(p)), `issuance process "${p.id}"`)
  }
  async list(query: ProcessQuery) {
    let q = this.db.selectFrom('issuance_processes').selectAll().where('tenant_id', '=', query.tenantId)
    if (query.status) q = q.where('status', '=', query.status)
    const after = query.after
    if (after) {
      q = q.where((eb) =>
        eb.or([
          eb('created_at', '>', after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)]),
        ]),
      )
    }
    const rows = await q.orderBy('created_at').orderBy('id').limit(query.limit).execute()
    return rows.map(toProcess)
  }
  async countByTemplate(tenantId: string, templateId: string) {
    const row = await this.db
      .selectFrom('issuance_processes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenantId)
      .where('template_id', '=', templateId)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }
  async update(p: ProcessRecord, expectedUpdatedAt: number) {
    return (await run(this.db, PROCESS_UPDATE, processUpdateValues(p, expectedUpdatedAt))) > 0
  }
}

const toGrant = (r: Selectable<GrantsTable>): GrantRecord => ({
  processId: r.process_id,
  tenantId: r.tenant_id,
  codeHash: r.code_hash,
  codeExpiresAt: r.code_expires_at,
  txCodeHash: r.tx_code_hash,
  txFailures: r.tx_failures,
  codeState: r.code_state as GrantRecord['codeState'],
  tokenHash: r.token_hash,
  tokenExpiresAt: r.token_expires_at,
  holderDid: r.holder_did,
  credentialRequestedAt: r.credential_requested_at,
  transactionId: r.transaction_id,
  redeemedAt: r.redeemed_at,
  notificationId: r.notification_id,
  notificationEvent: r.notification_event,
  tokenJkt: r.token_jkt,
  batchHolders: parse<string[]>(r.batch_holders),
})

const GRANT_COLUMNS =
  'process_id, tenant_id, code_hash, code_expires_at, tx_code_hash, tx_failures, code_state, token_hash, token_expires_at, holder_did, credential_requested_at, transaction_id, redeemed_at, notification_id, notification_event, token_jkt, batch_holders'
const grantBy = (column: string) =>
  prepared(`SELECT ${GRANT_COLUMNS} FROM oid4vci_grants WHERE ${column} = ?`, true)
const GRANT_BY = {
  processId: grantBy('process_id'),
  codeHash: grantBy('code_hash'),
  tokenHash: grantBy('token_hash'),
}
// A grant and its process in one read: the process's columns beside the grant's (tenant_id is the same).
const withProcessBy = (column: string) =>
  prepared(
    `SELECT g.process_id, g.tenant_id, g.code_hash, g.code_expires_at, g.tx_code_hash, g.tx_failures,
       g.code_state, g.token_hash, g.token_expires_at, g.holder_did, g.credential_requested_at,
       g.transaction_id, g.redeemed_at, g.notification_id, g.notification_event, g.token_jkt, g.batch_holders,
       p.template_id, p.type, p.status, p.data, p.validator, p.submitted, p.rejected_reason,
       p.created_by_key, p.created_at, p.updated_at
     FROM oid4vci_grants g JOIN issuance_processes p ON p.id = g.process_id WHERE g.${column} = ?`,
    true,
  )
const WITH_PROCESS_BY = {
  processId: withProcessBy('process_id'),
  codeHash: withProcessBy('code_hash'),
  tokenHash: withProcessBy('token_hash'),
}
const GRANT_INSERT = prepared(
  `INSERT INTO oid4vci_grants (${GRANT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
)
const CONSUME_CODE = prepared(`UPDATE oid4vci_grants
  SET code_state = 'used', token_hash = ?, token_expires_at = ?, token_jkt = ?
  WHERE process_id = ? AND code_state = 'live'`)
// The token endpoint's common case in one statement (issue 20): every check of the read-and-judge path the
// row can answer, in the WHERE. The code is found by its hash, as the read finds it (a unique index).
const CONSUME_CODE_BY_HASH = prepared(`UPDATE oid4vci_grants
  SET code_state = 'used', token_hash = ?, token_expires_at = ?, token_jkt = ?
  WHERE code_hash = ? AND tenant_id = ? AND code_state = 'live' AND code_expires_at > ? AND tx_code_hash IS NULL
    AND EXISTS (SELECT 1 FROM issuance_processes p WHERE p.id = oid4vci_grants.process_id AND p.status = 'PENDING')`)
const RECORD_CREDENTIAL_REQUEST = prepared(`UPDATE oid4vci_grants
  SET holder_did = ?, credential_requested_at = ?, transaction_id = ?, notification_id = ?, batch_holders = ?
  WHERE process_id = ? AND credential_requested_at IS NULL`)
type CredentialRequest = Parameters<GrantRepository['recordCredentialRequest']>[1]
/** RECORD_CREDENTIAL_REQUEST's SET values. */
const credentialRequestValues = (r: CredentialRequest) => [
  r.holderDid,
  r.at,
  r.transactionId,
  r.notificationId,
  json(r.batchHolders?.length ? r.batchHolders : null),
]
const MARK_REDEEMED = prepared(`UPDATE oid4vci_grants SET redeemed_at = ?, notification_id = ?
  WHERE process_id = ? AND redeemed_at IS NULL`)
// The deferred endpoint's successful download in one statement (issue 20): the grant's columns and its
// process's (scalar subqueries: SQLite's RETURNING names only the changed table, PostgreSQL's allows them too).
// Not a batch request's: its further credentials are issued with the redemption, in one transaction.
const processColumn = (column: string) =>
  `(SELECT p.${column} FROM issuance_processes p WHERE p.id = oid4vci_grants.process_id) AS ${column}`
const MARK_REDEEMED_BY_TOKEN = prepared(
  `UPDATE oid4vci_grants SET redeemed_at = ?, notification_id = ?
  WHERE token_hash = ? AND tenant_id = ? AND token_expires_at > ? AND transaction_id = ? AND redeemed_at IS NULL
    AND COALESCE(token_jkt, '') = ? AND batch_holders IS NULL
    AND EXISTS (SELECT 1 FROM issuance_processes p WHERE p.id = oid4vci_grants.process_id AND p.status = 'ISSUED')
  RETURNING ${GRANT_COLUMNS}, ${PROCESS_COLUMNS.split(', ')
    .filter((c) => c !== 'id' && c !== 'tenant_id')
    .map(processColumn)
    .join(', ')}`,
  true,
)
const RECORD_NOTIFICATION = prepared(`UPDATE oid4vci_grants SET notification_event = ?
  WHERE process_id = ? AND notification_event IS NULL`)

const RECORD_NOTIFICATION_BY_TOKEN = prepared(`UPDATE oid4vci_grants SET notification_event = ?
  WHERE token_hash = ? AND tenant_id = ? AND token_expires_at > ? AND notification_id = ?
    AND notification_event IS NULL AND COALESCE(token_jkt, '') = ?`)

type GrantWithProcessRow = Selectable<GrantsTable> & Omit<Selectable<ProcessesTable>, 'id' | 'tenant_id'>

const grantValues = (g: GrantRecord) => [
  g.processId,
  g.tenantId,
  g.codeHash,
  g.codeExpiresAt,
  g.txCodeHash,
  g.txFailures,
  g.codeState,
  g.tokenHash,
  g.tokenExpiresAt,
  g.holderDid,
  g.credentialRequestedAt,
  g.transactionId,
  g.redeemedAt,
  g.notificationId,
  g.notificationEvent,
  g.tokenJkt,
  json(g.batchHolders?.length ? g.batchHolders : null),
]

// A new offer's process and grant in one statement on PostgreSQL (issue 38): a data-modifying CTE, whose
// foreign key check runs at the statement's end and sees the process. SQLite has no INSERT in a WITH: it runs
// the two inserts (its text here is never run).
const PROCESS_AND_GRANT_INSERT = prepared(
  PROCESS_INSERT.sql,
  false,
  `WITH process AS (${PROCESS_INSERT.postgres})
   INSERT INTO oid4vci_grants (${GRANT_COLUMNS})
   VALUES (${Array.from({ length: 17 }, (_, i) => `$${13 + i}`).join(', ')})`,
)

// The attended first credential request's write (issue 38): the process bound to the holder and the request
// recorded, both or neither. SQLite, in a transaction (whose write lock nobody else takes in between): the
// process UPDATE also asks the grant's condition, so it writes nothing when the grant's UPDATE would not
// write; the grant's UPDATE (RECORD_CREDENTIAL_REQUEST) follows.
const PROCESS_UPDATE_UNREQUESTED = prepared(`UPDATE issuance_processes
  SET status = ?, data = ?, validator = ?, submitted = ?, rejected_reason = ?, updated_at = ?
  WHERE id = ? AND updated_at = ? AND EXISTS (SELECT 1 FROM oid4vci_grants g
    WHERE g.process_id = issuance_processes.id AND g.credential_requested_at IS NULL)`)
// PostgreSQL: one statement. Both conditions are judged by one CTE that locks both rows (READ COMMITTED: a row
// another transaction changed meanwhile is waited for and judged again on its newest version, as an UPDATE
// judges it); each UPDATE writes its row only if that CTE locked both, so both happen or neither, and nothing
// can change the locked rows in between. Two UPDATEs whose WHEREs held each other's condition would not do:
// each judges its own table's row again on the newest version but the other's condition on the statement's
// snapshot, so a request recorded by a transaction committing while this statement waited for it could leave
// the process written and the grant not (test/service/store/atomic-writes.test.ts holds that case). The lock
// is the UPDATEs' own strength (FOR NO KEY UPDATE) and order (the process, then the grant, as the transaction
// of oid4vci/service.ts takes them).
const PROCESS_AND_REQUEST_UPDATE = prepared(
  PROCESS_UPDATE_UNREQUESTED.sql,
  false,
  `WITH locked AS MATERIALIZED (
     SELECT p.id FROM issuance_processes p JOIN oid4vci_grants g ON g.process_id = p.id
     WHERE p.id = $7 AND p.updated_at = $8 AND g.credential_requested_at IS NULL
     FOR NO KEY UPDATE),
   process AS (UPDATE issuance_processes
     SET status = $1, data = $2, validator = $3, submitted = $4, rejected_reason = $5, updated_at = $6
     WHERE id = $7 AND EXISTS (SELECT 1 FROM locked))
   UPDATE oid4vci_grants
   SET holder_did = $9, credential_requested_at = $10, transaction_id = $11, notification_id = $12,
     batch_holders = $13
   WHERE process_id = $7 AND EXISTS (SELECT 1 FROM locked)`,
)

export class SqlGrants implements GrantRepository {
  constructor(
    private readonly db: Db,
    /** PostgreSQL: the writes atomic by themselves are one statement each (issue 38). */
    private readonly postgres = false,
    /** SQLite's root repositories: those writes run their statements in this transaction (issue 38). */
    private readonly own?: OwnTransaction,
  ) {}
  async create(g: GrantRecord) {
    await insertOrConflict(run(this.db, GRANT_INSERT, grantValues(g)), `grant of process "${g.processId}"`)
  }
  // Atomic by itself (store/index.ts, Store; issue 38), as recordCredentialRequestWithProcess.
  async createWithProcess(p: ProcessRecord, g: GrantRecord) {
    if (this.postgres) {
      await insertOrConflict(
        run(this.db, PROCESS_AND_GRANT_INSERT, [...processValues(p), ...grantValues(g)]),
        `issuance process "${p.id}" or its grant`,
      )
      return
    }
    if (this.own) return this.own((repos) => repos.grants.createWithProcess(p, g))
    await new SqlProcesses(this.db).create(p)
    await this.create(g)
  }
  async recordCredentialRequestWithProcess(
    p: ProcessRecord,
    expectedUpdatedAt: number,
    request: CredentialRequest,
  ): Promise<boolean> {
    if (this.postgres)
      return (
        (await run(this.db, PROCESS_AND_REQUEST_UPDATE, [
          ...processUpdateValues(p, expectedUpdatedAt),
          ...credentialRequestValues(request),
        ])) > 0
      )
    if (this.own)
      return this.own((repos) =>
        repos.grants.recordCredentialRequestWithProcess(p, expectedUpdatedAt, request),
      )
    const bound = await run(this.db, PROCESS_UPDATE_UNREQUESTED, processUpdateValues(p, expectedUpdatedAt))
    if (bound === 0) return false
    // The process was written because the grant qualified, and nothing else wrote in between.
    if (!(await this.recordCredentialRequest(p.id, request)))
      throw new Error(`the credential request of process "${p.id}" was recorded during its own transaction`)
    return true
  }
  private async by(key: GrantKey) {
    const [name, value] = grantKey(key)
    const row = await first<Selectable<GrantsTable>>(this.db, GRANT_BY[name], [value])
    return row && toGrant(row)
  }
  get(processId: string) {
    return this.by({ processId })
  }
  async withProcess(key: GrantKey) {
    const [name, value] = grantKey(key)
    const row = await first<GrantWithProcessRow>(this.db, WITH_PROCESS_BY[name], [value])
    return row && { grant: toGrant(row), process: toProcess({ ...row, id: row.process_id }) }
  }
  async revokeToken(processId: string) {
    await this.db
      .updateTable('oid4vci_grants')
      .set({ token_expires_at: 0 })
      .where('process_id', '=', processId)
      .where('token_hash', 'is not', null)
      .execute()
  }
  async recordTxFailure(processId: string, maxAttempts: number) {
    // One statement: concurrent wrong guesses each count, and the burn cannot be skipped.
    const row = await this.db
      .updateTable('oid4vci_grants')
      .set((eb) => ({
        tx_failures: eb('tx_failures', '+', 1),
        code_state: eb
          .case()
          .when('tx_failures', '>=', maxAttempts - 1)
          .then('burnt')
          .else(eb.ref('code_state'))
          .end(),
      }))
      .where('process_id', '=', processId)
      .where('code_state', '=', 'live')
      .returning(['tx_failures', 'code_state'])
      .executeTakeFirst()
    return row
      ? { failures: row.tx_failures, burnt: row.code_state === 'burnt' }
      : { failures: maxAttempts, burnt: true }
  }
  async consumeCode(
    processId: string,
    tokenHash: string,
    tokenExpiresAt: number,
    tokenJkt: string | null = null,
  ) {
    return (await run(this.db, CONSUME_CODE, [tokenHash, tokenExpiresAt, tokenJkt, processId])) > 0
  }
  async consumeCodeByHash(r: {
    codeHash: string
    tenantId: string
    now: number
    tokenHash: string
    tokenExpiresAt: number
    tokenJkt?: string | null
  }) {
    const { codeHash, tenantId, now, tokenHash, tokenExpiresAt } = r
    return (
      (await run(this.db, CONSUME_CODE_BY_HASH, [
        tokenHash,
        tokenExpiresAt,
        r.tokenJkt ?? null,
        codeHash,
        tenantId,
        now,
      ])) > 0
    )
  }
  async recordCredentialRequest(processId: string, request: CredentialRequest) {
    return (
      (await run(this.db, RECORD_CREDENTIAL_REQUEST, [...credentialRequestValues(request), processId])) > 0
    )
  }
  async markRedeemed(processId: string, at: number, notificationId: string) {
    return (await run(this.db, MARK_REDEEMED, [at, notificationId, processId])) > 0
  }
  async markRedeemedByToken(r: {
    tokenHash: string
    tenantId: string
    transactionId: string
    now: number
    notificationId: string
    tokenJkt?: string | null
  }) {
    const { tokenHash, tenantId, transactionId, now, notificationId } = r
    const row = await first<GrantWithProcessRow>(this.db, MARK_REDEEMED_BY_TOKEN, [
      now,
      notificationId,
      tokenHash,
      tenantId,
      now,
      transactionId,
      r.tokenJkt ?? '',
    ])
    return row && { grant: toGrant(row), process: toProcess({ ...row, id: row.process_id }) }
  }
  async recordNotificationByToken(n: {
    tokenHash: string
    tenantId: string
    notificationId: string
    event: string
    now: number
    tokenJkt?: string | null
  }) {
    const { tokenHash, tenantId, notificationId, event, now } = n
    const jkt = n.tokenJkt ?? ''
    return (
      (await run(this.db, RECORD_NOTIFICATION_BY_TOKEN, [
        event,
        tokenHash,
        tenantId,
        now,
        notificationId,
        jkt,
      ])) > 0
    )
  }
  async recordNotification(processId: string, event: string) {
    return (await run(this.db, RECORD_NOTIFICATION, [event, processId])) > 0
  }
}

type GrantKey = { processId: string } | { codeHash: string } | { tokenHash: string }
const grantKey = (key: GrantKey): ['processId' | 'codeHash' | 'tokenHash', string] => {
  if ('processId' in key) return ['processId', key.processId]
  if ('codeHash' in key) return ['codeHash', key.codeHash]
  return ['tokenHash', key.tokenHash]
}

const NONCE_USE = prepared(
  'INSERT INTO nonces (value, tenant_id, expires_at) VALUES (?, ?, ?) ON CONFLICT (value) DO NOTHING',
)

export class SqlNonces implements NonceRepository {
  constructor(private readonly db: Db) {}
  async use(value: string, tenantId: string, expiresAt: number) {
    // The row is the use: a second INSERT of the same nonce conflicts and inserts nothing.
    return (await run(this.db, NONCE_USE, [value, tenantId, expiresAt])) > 0
  }
  async deleteExpired(before: number, limit: number) {
    // By primary key, not SQLite's rowid: the same statement on PostgreSQL.
    const result = await sql`delete from nonces where value in (
      select value from nonces where expires_at < ${before} limit ${limit})`.execute(this.db)
    return Number(result.numAffectedRows ?? 0n)
  }
}

const toList = (r: Selectable<StatusListsTable> & { bits: Uint8Array }): StatusListRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  alg: r.alg as SigningAlg,
  size: r.size,
  bits: new Uint8Array(r.bits),
  used: r.used,
  version: r.version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
})

const STATUS_LIST_BY_ID = prepared(
  `SELECT l.id, l.tenant_id, l.alg, l.size, b.bits, l.used, l.version, l.created_at, l.updated_at
     FROM status_lists l JOIN status_list_bits b ON b.list_id = l.id WHERE l.id = ?`,
  true,
)
// A status change reads, changes and writes the bits: on PostgreSQL the rows are locked until the transaction
// ends (two instances changing entries of one list would otherwise lose one change); SQLite's BEGIN IMMEDIATE
// already serialises writers.
const STATUS_LIST_FOR_UPDATE = prepared(
  STATUS_LIST_BY_ID.sql,
  true,
  `${STATUS_LIST_BY_ID.postgres} FOR UPDATE`,
)
const STATUS_LIST_VERSION = prepared('SELECT tenant_id, version FROM status_lists WHERE id = ?', true)
// The newest list of the tenant and algorithm counts one more entry if it has room, in one statement on the
// counters' row (the bits, 32 KB by default, live in status_list_bits).
const RESERVE_ENTRY = prepared(
  `UPDATE status_lists SET used = used + 1, updated_at = ?
  WHERE id = (SELECT id FROM status_lists WHERE tenant_id = ? AND alg = ? ORDER BY created_at DESC, id DESC LIMIT 1)
    AND used < size * CAST(? AS REAL)
  RETURNING id, size`,
  true,
)
// `count` entries at once, outside any transaction (issue 38: StatusLists counts ahead on PostgreSQL).
const RESERVE_ENTRIES = prepared(
  `UPDATE status_lists SET used = used + ?, updated_at = ?
  WHERE id = (SELECT id FROM status_lists WHERE tenant_id = ? AND alg = ? ORDER BY created_at DESC, id DESC LIMIT 1)
    AND used + ? <= size * CAST(? AS REAL)
  RETURNING id, size`,
  true,
)
// A taken slot inserts nothing (no error): on PostgreSQL an error would abort the whole transaction, so the
// allocation could not try another index. A taken id still fails (the primary key).
const ISSUED_INSERT = prepared(`INSERT INTO issued_credentials
  (id, process_id, tenant_id, list_id, list_index, status, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (list_id, list_index) DO NOTHING`)

export class SqlStatusLists implements StatusListRepository {
  constructor(
    private readonly db: Db,
    private readonly versions: RowCache<{ tenantId: string; version: number }>,
  ) {}
  get(id: string) {
    return this.read(STATUS_LIST_BY_ID, id)
  }
  getForUpdate(id: string) {
    return this.read(STATUS_LIST_FOR_UPDATE, id)
  }
  private async read(statement: Prepared, id: string) {
    const row = await first<Selectable<StatusListsTable> & { bits: Uint8Array }>(this.db, statement, [id])
    return row && toList(row)
  }
  version(id: string) {
    return this.versions.read(id, async () => {
      const row = await first<{ tenant_id: string; version: number }>(this.db, STATUS_LIST_VERSION, [id])
      return row && { tenantId: row.tenant_id, version: row.version }
    })
  }
  async reserveEntry(tenantId: string, alg: SigningAlg, fillLimit: number, at: number) {
    return first<{ id: string; size: number }>(this.db, RESERVE_ENTRY, [at, tenantId, alg, fillLimit])
  }
  async reserveEntries(tenantId: string, alg: SigningAlg, fillLimit: number, count: number, at: number) {
    return first<{ id: string; size: number }>(this.db, RESERVE_ENTRIES, [
      count,
      at,
      tenantId,
      alg,
      count,
      fillLimit,
    ])
  }
  async create(l: StatusListRecord) {
    await insertOrConflict(
      this.db
        .insertInto('status_lists')
        .values({
          id: l.id,
          tenant_id: l.tenantId,
          alg: l.alg,
          size: l.size,
          used: l.used,
          version: l.version,
          created_at: l.createdAt,
          updated_at: l.updatedAt,
        })
        .execute(),
      `status list "${l.id}"`,
    )
    await this.db
      .insertInto('status_list_bits')
      .values({ list_id: l.id, bits: Buffer.from(l.bits) })
      .execute()
  }
  /** A status change: the bits and the version (the entries' count is the allocations' own). */
  async save(l: StatusListRecord) {
    await this.versions.changed(async () => {
      await this.db
        .updateTable('status_list_bits')
        .set({ bits: Buffer.from(l.bits) })
        .where('list_id', '=', l.id)
        .execute()
      await this.db
        .updateTable('status_lists')
        .set({ version: l.version, updated_at: l.updatedAt })
        .where('id', '=', l.id)
        .execute()
    })
  }
}

// A status change and a further instance of one process take turns on its row (listByProcessForUpdate). On
// SQLite the transaction's BEGIN IMMEDIATE already serialises writers: a plain read stands in.
const PROCESS_LOCK = prepared(
  'SELECT 1 FROM issuance_processes WHERE id = ?',
  true,
  'SELECT 1 FROM issuance_processes WHERE id = $1 FOR UPDATE',
)
const MARK_FURTHER_INSTANCE = prepared(
  'UPDATE issued_credentials SET instance_of = ?, notification_id = ? WHERE id = ?',
)
const RECORD_INSTANCE_NOTIFICATION = prepared(`UPDATE issued_credentials SET notification_event = ?
  WHERE process_id = ? AND notification_id = ? AND notification_event IS NULL`)
const INSTANCE_NOTIFICATION = prepared(
  'SELECT notification_event FROM issued_credentials WHERE process_id = ? AND notification_id = ? LIMIT 1',
  true,
)

export class SqlIssuedCredentials implements IssuedCredentialRepository {
  constructor(private readonly db: Db) {}
  async create(c: IssuedCredentialRecord) {
    let inserted: number
    try {
      inserted = await run(this.db, ISSUED_INSERT, [
        c.id,
        c.processId,
        c.tenantId,
        c.listId,
        c.listIndex,
        c.status,
        c.updatedAt,
      ])
    } catch (error) {
      if (!isUniqueViolation(error)) throw error
      throw new ConflictError(`credential "${c.id}" already exists`, 'id')
    }
    if (inserted === 0) throw new ConflictError(`status entry ${c.listId}#${c.listIndex} is taken`, 'slot')
  }
  async listByProcess(processId: string) {
    const rows = await this.db
      .selectFrom('issued_credentials')
      .selectAll()
      .where('process_id', '=', processId)
      .orderBy('list_id')
      .orderBy('list_index')
      .execute()
    return rows.map(
      (r): IssuedCredentialRecord => ({
        id: r.id,
        processId: r.process_id,
        tenantId: r.tenant_id,
        listId: r.list_id,
        listIndex: r.list_index,
        status: r.status as CredentialStatus,
        updatedAt: r.updated_at,
        instanceOf: r.instance_of,
      }),
    )
  }
  async listByProcessForUpdate(processId: string) {
    await first(this.db, PROCESS_LOCK, [processId])
    return this.listByProcess(processId)
  }
  async markFurtherInstance(id: string, further: { instanceOf: string; notificationId: string }) {
    await run(this.db, MARK_FURTHER_INSTANCE, [further.instanceOf, further.notificationId, id])
  }
  async recordNotification(processId: string, notificationId: string, event: string) {
    return (await run(this.db, RECORD_INSTANCE_NOTIFICATION, [event, processId, notificationId])) > 0
  }
  async notificationEvent(processId: string, notificationId: string) {
    const row = await first<{ notification_event: string | null }>(this.db, INSTANCE_NOTIFICATION, [
      processId,
      notificationId,
    ])
    return row && { event: row.notification_event }
  }
  async existing(ids: string[]) {
    if (ids.length === 0) return []
    const rows = await this.db.selectFrom('issued_credentials').select('id').where('id', 'in', ids).execute()
    return rows.map((r) => r.id)
  }
  async setStatus(id: string, status: CredentialStatus, at: number) {
    await this.db
      .updateTable('issued_credentials')
      .set({ status, updated_at: at })
      .where('id', '=', id)
      .execute()
  }
}
