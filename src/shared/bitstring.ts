import { gunzipSync, gzipSync } from 'node:zlib'
import { isObject } from './json.ts'

// Bitstring Status List v1.0: entries of `statusSize` bits, index 0 at the most significant bit of
// byte 0; the published form is GZIP, base64url, with the multibase prefix "u".

export const STATUS_SIZE = 2
export const STATUS_VALUES = { active: 0, revoked: 1, suspended: 2 } as const
export type StatusName = keyof typeof STATUS_VALUES
export const STATUS_MESSAGES = [
  { status: '0x0', message: 'active' },
  { status: '0x1', message: 'revoked' },
  { status: '0x2', message: 'suspended' },
] as const

export function emptyBitstring(entries: number): Uint8Array {
  return new Uint8Array(Math.ceil((entries * STATUS_SIZE) / 8))
}

/** The value of entry `index` in a list of `size`-bit entries (default: ours, 2 bits). */
export function getStatus(bits: Uint8Array, index: number, size = STATUS_SIZE): number {
  let value = 0
  for (let i = 0; i < size; i++) {
    const bit = index * size + i
    value = (value << 1) | (((bits[bit >> 3] ?? 0) >> (7 - (bit & 7))) & 1)
  }
  return value
}

export function setStatus(bits: Uint8Array, index: number, value: number): void {
  for (let i = 0; i < STATUS_SIZE; i++) {
    const bit = index * STATUS_SIZE + i
    const mask = 1 << (7 - (bit & 7))
    const on = (value >> (STATUS_SIZE - 1 - i)) & 1
    bits[bit >> 3] = on ? (bits[bit >> 3] ?? 0) | mask : (bits[bit >> 3] ?? 0) & ~mask
  }
}

export function encodeList(bits: Uint8Array): string {
  return `u${gzipSync(bits).toString('base64url')}`
}

// A list of 2^20 two-bit entries is 256 KiB; anything inflating far beyond is a decompression bomb.
const MAX_LIST_BYTES = 4 * 1024 * 1024

export function decodeList(encoded: string): Uint8Array {
  if (!encoded.startsWith('u')) throw new Error('encodedList must be multibase base64url (prefix "u")')
  return new Uint8Array(
    gunzipSync(Buffer.from(encoded.slice(1), 'base64url'), { maxOutputLength: MAX_LIST_BYTES }),
  )
}

/** What a status-list credential carries. */
export interface StatusList {
  purpose: string
  /** bits per entry (1 unless the list says otherwise) */
  size: number
  messages: { status: string; message: string }[] | undefined
  bits: Uint8Array
}

/**
 * The list of a status-list credential, given as the VC or as a JWT payload carrying it in `vc`. Throws
 * naming what is missing or malformed. The credential's signature is the caller's business.
 */
export function readStatusList(credential: Record<string, unknown>): StatusList {
  const vc = isObject(credential.vc) ? credential.vc : credential
  const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : undefined
  if (!subject || typeof subject.encodedList !== 'string') throw new Error('status list has no encodedList')
  const size = subject.statusSize === undefined ? 1 : Number(subject.statusSize)
  if (!Number.isInteger(size) || size < 1 || size > 8) throw new Error('status list statusSize is invalid')
  return {
    purpose: String(subject.statusPurpose ?? ''),
    size,
    messages: Array.isArray(subject.statusMessage)
      ? (subject.statusMessage as { status: string; message: string }[])
      : undefined,
    bits: decodeList(subject.encodedList),
  }
}
