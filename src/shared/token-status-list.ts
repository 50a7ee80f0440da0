import { inflateSync } from 'node:zlib'
import { isObject } from './json.ts'

// IETF Token Status List (draft-ietf-oauth-status-list): reading the list of a Status List Token, as both a
// verifier and a wallet checking a credential at receipt need it. The token's signature and `sub` are the
// caller's business.

/** An IETF Token Status List as read from its JWT: `bits` per status, LSB first (§4.1). */
export interface TokenStatusList {
  bits: 1 | 2 | 4 | 8
  list: Uint8Array
}

/** Status Types (§7.1): 0 VALID, 1 INVALID, 2 SUSPENDED; other values are application-specific. */
export const TOKEN_STATUS = { valid: 0, invalid: 1, suspended: 2 } as const

// Same bound as the bitstring lists (bitstring.ts): a list inflating far beyond is a bomb.
const MAX_TOKEN_LIST_BYTES = 4 * 1024 * 1024

/** `status_list {bits, lst}` of a Token Status List JWT payload; throws naming what is malformed. */
export function readTokenStatusList(payload: Record<string, unknown>): TokenStatusList {
  const statusList = payload.status_list
  if (!isObject(statusList)) throw new Error('status list JWT has no status_list')
  const { bits, lst } = statusList
  if (bits !== 1 && bits !== 2 && bits !== 4 && bits !== 8)
    throw new Error(`status_list.bits ${JSON.stringify(bits)} is not 1, 2, 4 or 8`)
  if (typeof lst !== 'string' || !/^[\w-]*$/.test(lst)) throw new Error('status_list.lst is not base64url')
  let list: Buffer
  try {
    list = inflateSync(Buffer.from(lst, 'base64url'), { maxOutputLength: MAX_TOKEN_LIST_BYTES })
  } catch (error) {
    throw new Error(`status_list.lst cannot be decompressed (ZLIB): ${(error as Error).message}`)
  }
  return { bits, list: new Uint8Array(list) }
}

/** The status of entry `index` (§4.1: the first entry in the lowest bits of byte 0); undefined past the end. */
export function tokenStatusAt(list: TokenStatusList, index: number): number | undefined {
  const bit = index * list.bits
  const byte = list.list[bit >> 3]
  if (byte === undefined) return undefined
  return (byte >> (bit & 7)) & ((1 << list.bits) - 1)
}

/** `status.status_list {idx, uri}` of an SD-JWT VC payload (§6.1); undefined without `status`. */
export function tokenStatusReference(
  payload: Record<string, unknown>,
): { uri: string; index: number } | undefined {
  if (payload.status === undefined) return undefined
  const list = isObject(payload.status) ? payload.status.status_list : undefined
  if (!isObject(list)) throw new Error('status has no status_list')
  const { idx, uri } = list
  if (typeof idx !== 'number' || !Number.isSafeInteger(idx) || idx < 0)
    throw new Error(`status_list.idx ${JSON.stringify(idx)} is invalid`)
  if (typeof uri !== 'string' || uri.length === 0) throw new Error('status_list.uri is missing')
  return { uri, index: idx }
}
