// Reading the status of held credentials from their Bitstring Status List credentials, for the
// 'revoked-credential' misbehaviour only (a correct presentation never fetches a status list: checking status
// is the verifier's job). Each list is fetched once per call; the list credential's signature is not checked
// (the wallet only looks for a credential the verifier should refuse).
import { decodeList, getStatus, STATUS_SIZE } from '../shared/bitstring.ts'
import { decodeJws } from '../shared/jws.ts'
import { WalletUsageError } from './errors.ts'
import { type FetchLike, httpRequest } from './http.ts'

export interface StatusEntry {
  statusListCredential: string
  statusListIndex: number
  statusPurpose: string
  statusSize: number
  /** the status value that means "revoked" */
  revokedValue: number
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * The BitstringStatusListEntry of a credential JWT that says "revoked": purpose `revocation` (1 bit), or
 * purpose `message` with 2-bit entries whose statusMessage names `revoked` (default value 0x1).
 */
export function revocationEntryOf(jwt: string): StatusEntry | undefined {
  let payload: Record<string, unknown>
  try {
    payload = decodeJws(jwt).payload
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
  private readonly lists = new Map<string, Promise<Uint8Array>>()
  /** how many lists were fetched */
  fetched = 0

  constructor(private readonly fetchImpl: FetchLike | undefined) {}

  private list(url: string): Promise<Uint8Array> {
    let pending = this.lists.get(url)
    if (!pending) {
      pending = this.load(url)
      this.lists.set(url, pending)
    }
    return pending
  }

  private async load(url: string): Promise<Uint8Array> {
    this.fetched++
    const fail = (why: string): never => {
      throw new WalletUsageError(`cannot read the status list ${url}: ${why}`)
    }
    let answer: Awaited<ReturnType<typeof httpRequest>>
    try {
      answer = await httpRequest(
        url,
        { method: 'GET', accept: 'application/vc+jwt, application/statuslist+jwt, application/jwt' },
        this.fetchImpl,
      )
    } catch (error) {
      return fail((error as Error).message)
    }
    if (answer.status !== 200) return fail(`HTTP ${answer.status} ${answer.text.slice(0, 200)}`)
    let credential: Record<string, unknown>
    const text = answer.text.trim()
    try {
      if (text.startsWith('{')) credential = JSON.parse(text)
      else {
        const { payload } = decodeJws(text)
        credential = isObject(payload.vc) ? payload.vc : payload
      }
    } catch (error) {
      return fail(`neither a JWT nor JSON (${(error as Error).message})`)
    }
    const subject = credential.credentialSubject
    if (!isObject(subject) || typeof subject.encodedList !== 'string')
      return fail('no credentialSubject.encodedList')
    try {
      return decodeList(subject.encodedList)
    } catch (error) {
      return fail((error as Error).message)
    }
  }

  /** The status value of an entry (0 when the list is shorter than the index). */
  async status(entry: StatusEntry): Promise<number> {
    const bits = await this.list(entry.statusListCredential)
    if (entry.statusSize === STATUS_SIZE) return getStatus(bits, entry.statusListIndex)
    const bit = entry.statusListIndex
    return ((bits[bit >> 3] ?? 0) >> (7 - (bit & 7))) & 1
  }

  async isRevoked(entry: StatusEntry): Promise<boolean> {
    return (await this.status(entry)) === entry.revokedValue
  }
}
