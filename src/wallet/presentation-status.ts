// Reading the status of held credentials from their Bitstring Status List credentials, for the
// 'revoked-credential' misbehaviour only (a correct presentation never fetches a status list: checking status
// is the verifier's job). Each list is fetched once per call; the list credential's signature is not checked
// (the wallet only looks for a credential the verifier should refuse), and a JSON list is read too. The
// entry is read from the list by the verifier's own rule (shared/status-check.ts bitstringEntryValue), so
// the credential picked is one the verifier reads as revoked.

import { readStatusList, STATUS_SIZE, type StatusList } from '../shared/bitstring.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws } from '../shared/jws.ts'
import { bitstringEntryValue, STATUS_LIST_ACCEPT } from '../shared/status-check.ts'
import { WalletUsageError } from './errors.ts'
import { httpRequest, type WalletHttp } from './http.ts'

export interface StatusEntry {
  statusListCredential: string
  statusListIndex: number
  statusPurpose: string
  statusSize: number
  /** the status value that means "revoked" */
  revokedValue: number
}

/**
 * The BitstringStatusListEntry of a held credential that says "revoked": purpose `revocation` (1 bit), or
 * purpose `message` with 2-bit entries whose statusMessage names `revoked` (default value 0x1). The credential
 * as stored: a JWT (jwt_vc_json), or the JSON text of an ldp_vc.
 */
export function revocationEntryOf(credential: string): StatusEntry | undefined {
  let payload: Record<string, unknown>
  try {
    const parsed: unknown = credential.trimStart().startsWith('{')
      ? JSON.parse(credential)
      : decodeJws(credential).payload
    if (!isObject(parsed)) return undefined
    payload = parsed
  } catch {
    return undefined
  }
  const vc = isObject(payload.vc) ? payload.vc : payload
  const list = Array.isArray(vc.credentialStatus) ? vc.credentialStatus : [vc.credentialStatus]
  for (const entry of list) {
    if (!isObject(entry) || typeof entry.statusListCredential !== 'string') continue
    const index = Number(entry.statusListIndex)
    if (!Number.isInteger(index) || index < 0) continue
    const purpose = String(entry.statusPurpose)
    const size = entry.statusSize === undefined ? 1 : Number(entry.statusSize)
    if (purpose === 'revocation' && size === 1) {
      return {
        statusListCredential: entry.statusListCredential,
        statusListIndex: index,
        statusPurpose: purpose,
        statusSize: 1,
        revokedValue: 1,
      }
    }
    if (purpose === 'message' && size === STATUS_SIZE) {
      const messages = Array.isArray(entry.statusMessage) ? entry.statusMessage : []
      const revoked = messages.find((m) => isObject(m) && m.message === 'revoked') as
        | { status?: unknown }
        | undefined
      const value = revoked ? Number.parseInt(String(revoked.status), 16) : 1
      return {
        statusListCredential: entry.statusListCredential,
        statusListIndex: index,
        statusPurpose: purpose,
        statusSize: size,
        revokedValue: Number.isNaN(value) ? 1 : value,
      }
    }
  }
  return undefined
}

/** Reads status lists over HTTP, each URL once. */
export class StatusListReader {
  private readonly lists = new Map<string, Promise<StatusList>>()
  /** how many lists were fetched */
  fetched = 0

  constructor(private readonly http: WalletHttp) {}

  private list(url: string): Promise<StatusList> {
    let pending = this.lists.get(url)
    if (!pending) {
      pending = this.load(url)
      this.lists.set(url, pending)
    }
    return pending
  }

  private async load(url: string): Promise<StatusList> {
    this.fetched++
    const fail = (why: string): never => {
      throw new WalletUsageError(`cannot read the status list ${url}: ${why}`)
    }
    let answer: Awaited<ReturnType<typeof httpRequest>>
    try {
      answer = await httpRequest(url, { method: 'GET', accept: STATUS_LIST_ACCEPT }, this.http)
    } catch (error) {
      return fail((error as Error).message)
    }
    if (answer.status !== 200) return fail(`HTTP ${answer.status} ${answer.text.slice(0, 200)}`)
    try {
      const text = answer.text.trim()
      // a JSON status-list credential, or a JWT carrying it
      return readStatusList(text.startsWith('{') ? JSON.parse(text) : decodeJws(text).payload)
    } catch (error) {
      return fail((error as Error).message)
    }
  }

  /**
   * The status value of an entry; 0 when the list does not hold it (past its end, another purpose or
   * statusSize): a verifier finds that status unknown, not revoked.
   */
  async status(entry: StatusEntry): Promise<number> {
    const url = entry.statusListCredential
    const read = bitstringEntryValue(await this.list(url), entry, entry.statusListIndex, url)
    return read.ok ? read.value : 0
  }

  async isRevoked(entry: StatusEntry): Promise<boolean> {
    return (await this.status(entry)) === entry.revokedValue
  }
}
