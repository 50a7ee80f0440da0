import type { Kysely, Selectable } from 'kysely'
import {
  ConflictError,
  type CredentialStatus,
  type GrantRecord,
  type GrantRepository,
  type IssuedCredentialRecord,
  type IssuedCredentialRepository,
  type IssuerCaRecord,
  type IssuerCertificateRecord,
  type IssuerCertificateRepository,
  type IssuerKeyRecord,
  type IssuerKeyRepository,
  type NonceRepository,
  type SigningAlg,
  type StatusListRecord,
  type StatusListRepository,
} from './index.ts'
import { sql } from './kysely.ts'
import { insertOrConflict, isUniqueViolation } from './sqlite-errors.ts'
import type { StoreSecrets } from './sqlite-secrets.ts'

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
  bits: Uint8Array
  used: number
  version: number
  created_at: number
  updated_at: number
}
export interface IssuedCredentialsTable {
  id: string
  process_id: string
  tenant_id: string
  list_id: string
  list_index: number
  status: string
  updated_at: number
}
export interface IssuanceProtocolSchema {
  issuer_keys: IssuerKeysTable
  issuer_cas: IssuerCasTable
  issuer_certificates: IssuerCertificatesTable
  oid4vci_grants: GrantsTable
  nonces: NoncesTable
  status_lists: StatusListsTable
  issued_credentials: IssuedCredentialsTable
}
type Db = Kysely<IssuanceProtocolSchema>

const changed = (result: { numUpdatedRows: bigint } | undefined) => (result?.numUpdatedRows ?? 0n) > 0n

// Private JWKs are sealed with the data key (sqlite-secrets.ts); the row's identity is the place it is sealed for.
export class SqliteIssuerKeys implements IssuerKeyRepository {
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

export class SqliteIssuerCertificates implements IssuerCertificateRepository {
  constructor(
    private readonly db: Db,
    private readonly secrets: StoreSecrets,
  ) {}
  async getCa(tenantId: string) {
    const r = await this.db
      .selectFrom('issuer_cas')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst()
    return (
      r && {
        tenantId: r.tenant_id,
        privateJwk: this.secrets.openJson<JsonWebKey>('issuer_cas.private_jwk', [r.tenant_id], r.private_jwk),
        certificate: r.certificate,
        createdAt: r.created_at,
      }
    )
  }
  async createCa(ca: IssuerCaRecord) {
    await insertOrConflict(
      this.db
        .insertInto('issuer_cas')
        .values({
          tenant_id: ca.tenantId,
          private_jwk: this.secrets.sealJson('issuer_cas.private_jwk', [ca.tenantId], ca.privateJwk),
          certificate: ca.certificate,
          created_at: ca.createdAt,
        })
        .execute(),
      `CA of tenant "${ca.tenantId}"`,
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
})

export class SqliteGrants implements GrantRepository {
  constructor(private readonly db: Db) {}
  async create(g: GrantRecord) {
    await insertOrConflict(
      this.db
        .insertInto('oid4vci_grants')
        .values({
          process_id: g.processId,
          tenant_id: g.tenantId,
          code_hash: g.codeHash,
          code_expires_at: g.codeExpiresAt,
          tx_code_hash: g.txCodeHash,
          tx_failures: g.txFailures,
          code_state: g.codeState,
          token_hash: g.tokenHash,
          token_expires_at: g.tokenExpiresAt,
          holder_did: g.holderDid,
          credential_requested_at: g.credentialRequestedAt,
          transaction_id: g.transactionId,
          redeemed_at: g.redeemedAt,
          notification_id: g.notificationId,
          notification_event: g.notificationEvent,
        })
        .execute(),
      `grant of process "${g.processId}"`,
    )
  }
  private async by(column: 'process_id' | 'code_hash' | 'token_hash', value: string) {
    const row = await this.db
      .selectFrom('oid4vci_grants')
      .selectAll()
      .where(column, '=', value)
      .executeTakeFirst()
    return row && toGrant(row)
  }
  get(processId: string) {
    return this.by('process_id', processId)
  }
  byCodeHash(codeHash: string) {
    return this.by('code_hash', codeHash)
  }
  byTokenHash(tokenHash: string) {
    return this.by('token_hash', tokenHash)
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
  async consumeCode(processId: string, tokenHash: string, tokenExpiresAt: number) {
    const result = await this.db
      .updateTable('oid4vci_grants')
      .set({ code_state: 'used', token_hash: tokenHash, token_expires_at: tokenExpiresAt })
      .where('process_id', '=', processId)
      .where('code_state', '=', 'live')
      .executeTakeFirst()
    return changed(result)
  }
  async recordCredentialRequest(
    processId: string,
    request: { holderDid: string; at: number; transactionId: string | null; notificationId: string | null },
  ) {
    const result = await this.db
      .updateTable('oid4vci_grants')
      .set({
        holder_did: request.holderDid,
        credential_requested_at: request.at,
        transaction_id: request.transactionId,
        notification_id: request.notificationId,
      })
      .where('process_id', '=', processId)
      .where('credential_requested_at', 'is', null)
      .executeTakeFirst()
    return changed(result)
  }
  async setNotificationId(processId: string, notificationId: string) {
    await this.db
      .updateTable('oid4vci_grants')
      .set({ notification_id: notificationId })
      .where('process_id', '=', processId)
      .execute()
  }
  async markRedeemed(processId: string, at: number) {
    const result = await this.db
      .updateTable('oid4vci_grants')
      .set({ redeemed_at: at })
      .where('process_id', '=', processId)
      .where('redeemed_at', 'is', null)
      .executeTakeFirst()
    return changed(result)
  }
  async recordNotification(processId: string, event: string) {
    const result = await this.db
      .updateTable('oid4vci_grants')
      .set({ notification_event: event })
      .where('process_id', '=', processId)
      .where('notification_event', 'is', null)
      .executeTakeFirst()
    return changed(result)
  }
}

export class SqliteNonces implements NonceRepository {
  constructor(private readonly db: Db) {}
  async use(value: string, tenantId: string, expiresAt: number) {
    // The row is the use: a second INSERT of the same nonce conflicts and inserts nothing.
    const result = await this.db
      .insertInto('nonces')
      .values({ value, tenant_id: tenantId, expires_at: expiresAt })
      .onConflict((oc) => oc.column('value').doNothing())
      .executeTakeFirst()
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n
  }
  async deleteExpired(before: number, limit: number) {
    const result = await sql`delete from nonces where rowid in (
      select rowid from nonces where expires_at < ${before} limit ${limit})`.execute(this.db)
    return Number(result.numAffectedRows ?? 0n)
  }
}

const toList = (r: Selectable<StatusListsTable>): StatusListRecord => ({
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

export class SqliteStatusLists implements StatusListRepository {
  constructor(private readonly db: Db) {}
  async get(id: string) {
    const row = await this.db.selectFrom('status_lists').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toList(row)
  }
  async latest(tenantId: string, alg: SigningAlg) {
    const row = await this.db
      .selectFrom('status_lists')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('alg', '=', alg)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst()
    return row && toList(row)
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
          bits: Buffer.from(l.bits),
          used: l.used,
          version: l.version,
          created_at: l.createdAt,
          updated_at: l.updatedAt,
        })
        .execute(),
      `status list "${l.id}"`,
    )
  }
  async save(l: StatusListRecord) {
    await this.db
      .updateTable('status_lists')
      .set({ bits: Buffer.from(l.bits), used: l.used, version: l.version, updated_at: l.updatedAt })
      .where('id', '=', l.id)
      .execute()
  }
  async countAllocation(id: string, at: number) {
    await this.db
      .updateTable('status_lists')
      .set((eb) => ({ used: eb('used', '+', 1), updated_at: at }))
      .where('id', '=', id)
      .execute()
  }
}

export class SqliteIssuedCredentials implements IssuedCredentialRepository {
  constructor(private readonly db: Db) {}
  async create(c: IssuedCredentialRecord) {
    try {
      await this.db
        .insertInto('issued_credentials')
        .values({
          id: c.id,
          process_id: c.processId,
          tenant_id: c.tenantId,
          list_id: c.listId,
          list_index: c.listIndex,
          status: c.status,
          updated_at: c.updatedAt,
        })
        .execute()
    } catch (error) {
      if (!isUniqueViolation(error)) throw error
      const slot = (error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT_UNIQUE') === true
      throw slot
        ? new ConflictError(`status entry ${c.listId}#${c.listIndex} is taken`, 'slot')
        : new ConflictError(`credential "${c.id}" already exists`, 'id')
    }
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
      }),
    )
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
