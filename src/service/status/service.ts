import { randomInt, randomUUID } from 'node:crypto'
import { createHeaderAndPayload, StatusList } from '@sd-jwt/jwt-status-list'
import {
  emptyBitstring,
  encodeList,
  getStatus,
  STATUS_MESSAGES,
  STATUS_SIZE,
  STATUS_VALUES,
  setStatus,
} from '../../shared/bitstring.ts'
import { signJws } from '../../shared/jws.ts'
import { JWT_TYP, STATUS_LIST_JWT_TYP } from '../../shared/wire.ts'
import type { TenantKeys } from '../crypto/tenant-keys.ts'
import {
  ConflictError,
  type CredentialStatus,
  type Repositories,
  type SigningAlg,
  type StatusListRecord,
  type Store,
} from '../store/index.ts'
import { outsideTransaction } from '../store/transaction-guard.ts'
import type { Clock } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'

/** What goes into a credential's `credentialStatus` (Bitstring Status List, purpose "message"). */
export interface StatusEntry {
  id: string
  type: 'BitstringStatusListEntry'
  statusPurpose: 'message'
  statusListIndex: string
  statusListCredential: string
  statusSize: number
  statusMessage: typeof STATUS_MESSAGES
}

/**
 * The same entry as an IETF Token Status List reference (`status.status_list`, §6.1), for SD-JWT VCs: the
 * stored list is one, published in both forms (its values 0 VALID, 1 INVALID, 2 SUSPENDED are ours).
 */
export interface TokenStatusReference {
  status_list: { idx: number; uri: string }
}

/** How long a relying party may cache a Token Status List before fetching it again (§5.1 `ttl`). */
const TOKEN_STATUS_TTL_SECONDS = 300

/** A list as signed at `version`. */
interface SignedList {
  version: number
  jwt: string
}

// A list is closed to new entries when this full, so random allocation stays cheap.
const FILL_LIMIT = 0.75
const ALLOCATION_TRIES = 32
/** Status entries a shared deployment counts ahead per tenant and algorithm (StatusLists, issue 38). */
export const STATUS_ENTRIES_AHEAD = 16
/** A stock below this share of `ahead` is topped up. */
const STOCK_LOW = 0.25

/**
 * Status lists, one series per tenant and issuer key. Entries are allocated at random positions so
 * that the index says nothing about issuance order or volume (herd privacy).
 */
export class StatusLists {
  private readonly signed = new Map<string, SignedList>()
  private readonly tokens = new Map<string, SignedList>()

  /**
   * Entries counted ahead on a list, per tenant and algorithm (issue 38, PostgreSQL): an issuance takes one
   * instead of updating the list's counter in its transaction. On PostgreSQL that counter's row stayed
   * locked until the commit, for the whole group-committed batch, so issuances queued behind each other. A
   * count is not a slot (the slot is the issued_credentials row, written in the transaction): an entry
   * counted and never used only fills its list a little early (at most `ahead` per instance and stop).
   */
  private readonly stock = new Map<string, { id: string; size: number; left: number }>()
  private readonly wanted = new Set<string>()
  private topping: Promise<void> | undefined

  constructor(
    private readonly store: Store,
    private readonly tenantKeys: TenantKeys,
    private readonly clock: Clock,
    private readonly urls: PublicUrls,
    private readonly listSize: number,
    /** Entries to count ahead at a time (0: each in its issuance's transaction, as SQLite does). */
    private readonly ahead = 0,
  ) {}

  /** An entry counted ahead on a list of the tenant and algorithm, if any is left; tops the stock up. */
  private stocked(tenantId: string, alg: SigningAlg): { id: string; size: number } | undefined {
    if (this.ahead === 0) return undefined
    const key = `${tenantId}\u0000${alg}`
    const stock = this.stock.get(key)
    let taken: { id: string; size: number } | undefined
    if (stock && stock.left > 0) {
      stock.left--
      taken = { id: stock.id, size: stock.size }
    }
    if (!stock || stock.left < this.ahead * STOCK_LOW) this.want(key)
    return taken
  }

  private want(key: string) {
    this.wanted.add(key)
    if (this.topping) return
    // Called inside an issuance's transaction: the top-up runs on the root store once scheduled outside it.
    this.topping = outsideTransaction(
      () =>
        new Promise<void>((resolve) => {
          setImmediate(() => {
            this.topUp().finally(() => {
              this.topping = undefined
              resolve()
            })
          })
        }),
    )
  }

  /** Resolves once no top-up of the stock is under way (tests; a top-up is one statement). */
  async idle(): Promise<void> {
    while (this.topping) await this.topping
  }

  /** One statement per tenant and algorithm wanted, outside any transaction: it holds no other row. */
  private async topUp() {
    for (const key of [...this.wanted]) {
      this.wanted.delete(key)
      const [tenantId, alg] = key.split('\u0000') as [string, SigningAlg]
      try {
        const list = await this.store.statusLists.reserveEntries(
          tenantId,
          alg,
          FILL_LIMIT,
          this.ahead,
          this.clock.now(),
        )
        // None when the newest list has no room for them all: issuances count their own and open the next.
        if (list) this.stock.set(key, { ...list, left: this.ahead })
      } catch {
        // The issuances count their own meanwhile; the next one asks again.
      }
    }
  }

  /** Allocates an entry for a new credential; call inside the transaction that issues it. */
  async allocate(
    repos: Repositories,
    input: { tenantId: string; alg: SigningAlg; credentialId: string; processId: string },
  ): Promise<StatusEntry & { token: TokenStatusReference }> {
    const now = this.clock.now()
    // An entry counted ahead, else the newest list counts it if it has room; else a new list starts with it.
    let list =
      this.stocked(input.tenantId, input.alg) ??
      (await repos.statusLists.reserveEntry(input.tenantId, input.alg, FILL_LIMIT, now))
    if (!list) {
      list = { id: randomUUID(), size: this.listSize }
      await repos.statusLists.create({
        id: list.id,
        tenantId: input.tenantId,
        alg: input.alg,
        size: this.listSize,
        bits: emptyBitstring(this.listSize),
        used: 1,
        version: 0,
        createdAt: now,
        updatedAt: now,
      })
    }
    for (let attempt = 0; attempt < ALLOCATION_TRIES; attempt++) {
      const index = randomInt(list.size)
      try {
        await repos.issuedCredentials.create({
          id: input.credentialId,
          processId: input.processId,
          tenantId: input.tenantId,
          listId: list.id,
          listIndex: index,
          status: 'active',
          updatedAt: now,
        })
      } catch (error) {
        if (error instanceof ConflictError && error.key === 'slot') continue
        throw error
      }
      const url = this.urls.statusList(input.tenantId, list.id)
      return {
        id: `${url}#${index}`,
        type: 'BitstringStatusListEntry',
        statusPurpose: 'message',
        statusListIndex: String(index),
        statusListCredential: url,
        statusSize: STATUS_SIZE,
        statusMessage: STATUS_MESSAGES,
        token: { status_list: { idx: index, uri: this.urls.tokenStatusList(input.tenantId, list.id) } },
      }
    }
    throw new Error(`no free status entry found in list ${list.id} after ${ALLOCATION_TRIES} tries`)
  }

  /** The stored version of a list of the tenant: its version only, not its bits (tens of KB, read to sign anew). */
  private async versionOf(tenantId: string, listId: string): Promise<number | undefined> {
    const head = await this.store.statusLists.version(listId)
    return head && head.tenantId === tenantId ? head.version : undefined
  }

  /** Sets the status bits of issued credentials; call inside the transaction that records the change. */
  async apply(repos: Repositories, changes: { listId: string; index: number; status: CredentialStatus }[]) {
    const now = this.clock.now()
    const lists = new Map<string, StatusListRecord>()
    for (const change of changes) {
      let list = lists.get(change.listId)
      if (!list) {
        list = await repos.statusLists.getForUpdate(change.listId)
        if (!list) throw new Error(`status list ${change.listId} missing`)
        lists.set(list.id, list)
      }
      setStatus(list.bits, change.index, STATUS_VALUES[change.status])
    }
    for (const list of lists.values()) {
      await repos.statusLists.save({ ...list, version: list.version + 1, updatedAt: now })
    }
  }

  /**
   * The status-list credential as a signed JWT, re-signed only when the list changed. Undefined for an
   * unknown list or one of another tenant.
   */
  async credential(tenantId: string, listId: string): Promise<string | undefined> {
    const version = await this.versionOf(tenantId, listId)
    if (version === undefined) return undefined
    const cached = this.signed.get(listId)
    if (cached && cached.version === version) return cached.jwt
    const list = await this.store.statusLists.get(listId)
    if (!list || list.tenantId !== tenantId) return undefined
    const key = await this.tenantKeys.forTenant(tenantId, list.alg)
    const url = this.urls.statusList(tenantId, list.id)
    const now = Math.floor(this.clock.now() / 1000)
    const vc = {
      '@context': ['https://www.w3.org/ns/credentials/v2'],
      id: url,
      type: ['VerifiableCredential', 'BitstringStatusListCredential'],
      issuer: key.did,
      validFrom: new Date(list.updatedAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      credentialSubject: {
        id: `${url}#list`,
        type: 'BitstringStatusList',
        statusPurpose: 'message',
        statusSize: STATUS_SIZE,
        statusMessage: STATUS_MESSAGES,
        encodedList: encodeList(list.bits),
      },
    }
    const jwt = signJws(
      { alg: key.alg, typ: JWT_TYP, kid: key.kid },
      { iss: key.did, sub: `${url}#list`, jti: url, iat: now, nbf: Math.floor(list.updatedAt / 1000), vc },
      key.privateKey,
    )
    this.signed.set(list.id, { version: list.version, jwt })
    return jwt
  }

  /**
   * The list as an IETF Token Status List JWT (`typ statuslist+jwt`, §5.1): `sub` is the URL the referenced
   * SD-JWT VCs name, 2 bits per entry, index 0 in the least significant bits (§4.1), ZLIB-compressed by
   * @sd-jwt/jwt-status-list. Re-signed only when the list changed; undefined for an unknown list.
   */
  async tokenStatusList(tenantId: string, listId: string): Promise<string | undefined> {
    const version = await this.versionOf(tenantId, listId)
    if (version === undefined) return undefined
    const cached = this.tokens.get(listId)
    if (cached && cached.version === version) return cached.jwt
    const list = await this.store.statusLists.get(listId)
    if (!list || list.tenantId !== tenantId) return undefined
    const key = await this.tenantKeys.forTenant(tenantId, list.alg)
    const statuses = Array.from({ length: list.size }, (_, index) => getStatus(list.bits, index))
    const { header, payload } = createHeaderAndPayload(
      new StatusList(statuses, STATUS_SIZE),
      {
        iss: key.did,
        sub: this.urls.tokenStatusList(tenantId, list.id),
        iat: Math.floor(this.clock.now() / 1000),
        ttl: TOKEN_STATUS_TTL_SECONDS,
      },
      { alg: key.alg, typ: STATUS_LIST_JWT_TYP, kid: key.kid },
    )
    const jwt = signJws({ ...header, alg: key.alg }, payload as Record<string, unknown>, key.privateKey)
    this.tokens.set(list.id, { version: list.version, jwt })
    return jwt
  }
}
