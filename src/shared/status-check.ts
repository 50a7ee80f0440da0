import type { KeyObject } from 'node:crypto'
import { getStatus, readStatusList, type StatusList } from './bitstring.ts'
import { type DidKey, JWS_ALGS, resolveDidKey } from './did-key.ts'
import { isObject } from './json.ts'
import { decodeJws, type SignatureAlg, verifyJws } from './jws.ts'
import { readTokenStatusList, type TokenStatusList, tokenStatusAt } from './token-status-list.ts'
import { JWT_MEDIA_TYPE, STATUS_LIST_JWT_MEDIA_TYPE, STATUS_LIST_JWT_TYP, VC_JWT_MEDIA_TYPE } from './wire.ts'

// A credential's status, checked the same way by the service's verifier (service/credentials/status.ts) and
// by the wallet at receipt (wallet/credential-status.ts): fetch the list, check that the credential's own
// issuer signed it, read the entry. W3C Bitstring Status List v1.0 §3.2 (the validate algorithm) for a
// `credentialStatus` entry; IETF Token Status List (draft-ietf-oauth-status-list §8.3) for an SD-JWT VC's
// `status.status_list`. The fetch is injected (oid4vc-ts injects callbacks the same way): each side owns
// its network policy (the service's outbound policy and shared cache, the wallet's bounded HTTP). The
// answers are data, not texts: each side words them in its own error style.

/** What a status list may be served as: Token Status List §8.1, VC-JOSE-COSE §6.1, RFC 7519 §10.3.1. */
export const STATUS_LIST_MEDIA_TYPES = [
  STATUS_LIST_JWT_MEDIA_TYPE,
  VC_JWT_MEDIA_TYPE,
  JWT_MEDIA_TYPE,
] as const
/** The Accept header of a status list request (Token Status List §8.1 asks for statuslist+jwt first). */
export const STATUS_LIST_ACCEPT = STATUS_LIST_MEDIA_TYPES.join(', ')
/**
 * Largest status list read: decodeJws (jws.ts) refuses a JWS over 256 KiB, so reading more would be work
 * for nothing. A 131,072-entry list of 2 bits is 32 KiB before compression.
 */
export const STATUS_LIST_MAX_BYTES = 256 * 1024

/** Whether a Content-Type (parameters ignored) is one a status list may be served as. */
export function isStatusListMediaType(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase()
  return (STATUS_LIST_MEDIA_TYPES as readonly string[]).includes(type ?? '')
}

/**
 * Why a list URL is not fetched at all, or undefined: http and https only, no userinfo (RFC 9110 §4.2.4:
 * deprecated, and a secret taken from someone else's document). `origin` is set when the URL parses.
 */
export function statusListUrlProblem(url: string): { detail: string; origin?: string } | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return { detail: 'is not an absolute URL' }
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return { detail: 'does not use http or https' }
  if (parsed.username || parsed.password) {
    return { detail: 'carries credentials (userinfo), which are never sent', origin: parsed.origin }
  }
  return undefined
}

/** Returns the status list JWT at `url`; throws when it cannot (each side's own error, passed through). */
export type StatusListFetch = (url: string) => Promise<string>

/**
 * Who must have signed the list (Token Status List §11.3: the same entity signs the list and the
 * credential): the issuer's DID when it is one, and the key that signed the credential when it is known
 * (an x5c issuer's leaf key). Each one given must match.
 */
export interface ListSigner {
  did?: string
  key?: KeyObject
}

/** The ListSigner of a credential issued by `issuer` (a DID, or an x5c issuer's URL) with `key`. */
export function listSignerOf(issuer: string, key?: KeyObject): ListSigner {
  if (issuer.startsWith('did:') || !key) return { did: issuer, ...(key && { key }) }
  return { key }
}

/** The key that signed a list, named by its did:key kid. */
export type ListKey = Pick<DidKey, 'did' | 'publicKey'>
/** A list is signed like the credentials of its issuer key: EdDSA, ES256, ES256K, or PS256 (an RSA key). */
const LIST_ALGS: readonly SignatureAlg[] = [...JWS_ALGS, 'PS256']

/** Why a status list cannot be used: the status is unknown. */
export type ListProblem =
  | { code: 'url'; detail: string; origin?: string }
  | { code: 'fetch'; error: unknown }
  | { code: 'not-jws'; detail: string }
  | { code: 'typ'; typ: unknown }
  | { code: 'x5c' }
  | { code: 'kid'; kid: unknown }
  | { code: 'unresolvable'; detail: string }
  | { code: 'signer'; did: string }
  | { code: 'signature'; detail: string }
  | { code: 'expired' }
  | { code: 'sub'; sub: unknown }
  | { code: 'unreadable'; detail: string }

/** A status entry checked: 0 is the only acceptable value; anything else names why not. */
export type StatusOutcome =
  | {
      ok: true
      /** the list's purpose (bitstring); undefined for a Token Status List */
      purpose?: string
      /** the statusMessage of 0 (purpose `message`) */
      message?: string
    }
  | { ok: false; code: 'entry' }
  | { ok: false; code: 'index'; index: unknown }
  | { ok: false; code: 'list'; url: string; problem: ListProblem }
  | { ok: false; code: 'size'; url: string; entrySize: unknown; listSize: number }
  | { ok: false; code: 'purpose'; url: string; entryPurpose: string; listPurpose: string }
  | { ok: false; code: 'range'; url: string; index: number }
  | {
      ok: false
      code: 'status'
      url: string
      index: number
      value: number
      /** the list's purpose (bitstring); undefined for a Token Status List */
      purpose?: string
      /** what the statusMessage says of this value, if anything */
      message?: string
    }

class ListError extends Error {
  constructor(readonly problem: ListProblem) {
    super(problem.code)
  }
}

/** The statusMessage entry of `value` (e.g. `0x1`) in a list's or an entry's statusMessage array. */
export function statusMessageOf(messages: unknown, value: number): string | undefined {
  if (!Array.isArray(messages)) return undefined
  const hex = `0x${value.toString(16)}`
  const found = messages.find((m) => isObject(m) && String(m.status).toLowerCase() === hex)
  return isObject(found) && typeof found.message === 'string' ? found.message : undefined
}

/**
 * The value of a Bitstring Status List entry in `list`, or why it cannot be read: the entry's
 * statusPurpose must be the list's (§3.2 step 5), its statusSize, when it states one, the list's (§2.1:
 * the size belongs to the entry; a list read with another size gives the wrong bits), and the index
 * inside the list (§3.2 step 10, RANGE_ERROR).
 */
export function bitstringEntryValue(
  list: StatusList,
  entry: { statusPurpose?: unknown; statusSize?: unknown },
  index: number,
  url: string,
): { ok: true; value: number } | Extract<StatusOutcome, { code: 'size' | 'purpose' | 'range' }> {
  if (entry.statusPurpose !== undefined && entry.statusPurpose !== list.purpose) {
    return {
      ok: false,
      code: 'purpose',
      url,
      entryPurpose: String(entry.statusPurpose),
      listPurpose: list.purpose,
    }
  }
  if (entry.statusSize !== undefined && Number(entry.statusSize) !== list.size) {
    return { ok: false, code: 'size', url, entrySize: entry.statusSize, listSize: list.size }
  }
  if ((index + 1) * list.size > list.bits.length * 8) return { ok: false, code: 'range', url, index }
  return { ok: true, value: getStatus(list.bits, index, list.size) }
}

/**
 * List JWTs whose signature was verified, by their text, with what was decoded from them. A list changes
 * only when a status does, and then its JWT is a new text; until then every check of a credential on it
 * would verify the same signature and inflate the same bits again. What depends on the moment or on the
 * credential (who must have signed, expiry, `sub`) is checked on every use.
 */
class VerifiedLists {
  private readonly entries = new Map<
    string,
    { signer: ListKey; payload: Record<string, unknown>; bitstring?: StatusList; token?: TokenStatusList }
  >()

  verify(jwt: string, signer: ListKey) {
    let entry = this.entries.get(jwt)
    if (entry) {
      // least recently used goes first: lists in steady use stay verified
      this.entries.delete(jwt)
      this.entries.set(jwt, entry)
      return entry
    }
    const { payload } = verifyJws(jwt, signer.publicKey, { algorithms: LIST_ALGS })
    entry = { signer, payload }
    if (this.entries.size >= 64) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(jwt, entry)
    return entry
  }
}

/**
 * Checks status entries against their lists, fetched through the injected `fetch`. `memo` (one per
 * presentation, or per receipt) shares the fetch of a URL between entries; the list is verified against
 * each credential's own issuer on every use, so two credentials naming one URL are each judged by who
 * signed it.
 */
export class StatusListChecks {
  private readonly verified = new VerifiedLists()

  /**
   * `resolveKey` names the list signer's did:key; the default knows the three JWS key types, the service
   * and wallet pass one that also knows RSA (an ldp_vc issuer's PS256 lists).
   */
  constructor(
    private readonly fetch: StatusListFetch,
    private readonly resolveKey: (kid: string) => ListKey = resolveDidKey,
  ) {}

  private fetchOnce(url: string, memo: Map<string, Promise<string>>): Promise<string> {
    let pending = memo.get(url)
    if (!pending) {
      pending = this.fetch(url)
      // a rejection is reported to every entry that names this URL, by the await of each
      pending.catch(() => {})
      memo.set(url, pending)
    }
    return pending
  }

  /** Fetches and verifies a list JWT, answering its verified entry; throws ListError. */
  private async load(
    url: string,
    kind: 'bitstring' | 'token',
    signer: ListSigner,
    now: number,
    memo: Map<string, Promise<string>>,
  ) {
    const urlProblem = statusListUrlProblem(url)
    if (urlProblem) throw new ListError({ code: 'url', ...urlProblem })
    let jwt: string
    try {
      jwt = await this.fetchOnce(url, memo)
    } catch (error) {
      throw new ListError({ code: 'fetch', error })
    }
    let header: Record<string, unknown>
    try {
      ;({ header } = decodeJws(jwt))
    } catch (error) {
      throw new ListError({ code: 'not-jws', detail: (error as Error).message })
    }
    if (kind === 'token') {
      // Token Status List §5.1: the Status List Token's typ is statuslist+jwt
      if (header.typ !== STATUS_LIST_JWT_TYP) throw new ListError({ code: 'typ', typ: header.typ })
      if (header.x5c !== undefined) throw new ListError({ code: 'x5c' })
    }
    // Only did:key list signers are read: the key is in the kid, nothing else is resolved.
    if (typeof header.kid !== 'string' || !header.kid.startsWith('did:key:')) {
      throw new ListError({ code: 'kid', kid: header.kid })
    }
    let listKey: ListKey
    try {
      listKey = this.resolveKey(header.kid)
    } catch (error) {
      throw new ListError({ code: 'unresolvable', detail: (error as Error).message })
    }
    // Bitstring Status List §3.2 step 4 / Token Status List §11.3: signed by the credential's issuer
    if (
      (signer.did !== undefined && listKey.did !== signer.did) ||
      (signer.key !== undefined && !listKey.publicKey.equals(signer.key)) ||
      (signer.did === undefined && signer.key === undefined)
    ) {
      throw new ListError({ code: 'signer', did: listKey.did })
    }
    let entry: ReturnType<VerifiedLists['verify']>
    try {
      entry = this.verified.verify(jwt, listKey)
    } catch (error) {
      throw new ListError({ code: 'signature', detail: (error as Error).message })
    }
    const { payload } = entry
    // RFC 7519 §4.1.4
    if (typeof payload.exp === 'number' && payload.exp * 1000 <= now) throw new ListError({ code: 'expired' })
    // Token Status List §8.3: sub is the uri the Referenced Token names
    if (kind === 'token' && payload.sub !== url) throw new ListError({ code: 'sub', sub: payload.sub })
    return entry
  }

  /** load, with a ListError as the `list` outcome */
  private async list<T>(
    url: string,
    read: () => Promise<T>,
  ): Promise<{ ok: true; list: T } | Extract<StatusOutcome, { code: 'list' }>> {
    try {
      return { ok: true, list: await read() }
    } catch (error) {
      if (!(error instanceof ListError)) throw error
      return { ok: false, code: 'list', url, problem: error.problem }
    }
  }

  /** One `credentialStatus` entry (Bitstring Status List v1.0 §3.2), the list signed by `signer`. */
  async bitstring(
    entry: unknown,
    signer: ListSigner,
    now: number,
    memo: Map<string, Promise<string>>,
  ): Promise<StatusOutcome> {
    if (!isObject(entry) || typeof entry.statusListCredential !== 'string')
      return { ok: false, code: 'entry' }
    const index = Number(entry.statusListIndex)
    if (!Number.isSafeInteger(index) || index < 0) {
      return { ok: false, code: 'index', index: entry.statusListIndex }
    }
    const url = entry.statusListCredential
    const loaded = await this.list(url, async () => {
      const verified = await this.load(url, 'bitstring', signer, now, memo)
      try {
        verified.bitstring ??= readStatusList(verified.payload)
      } catch (error) {
        throw new ListError({ code: 'unreadable', detail: (error as Error).message })
      }
      return verified.bitstring
    })
    if (!loaded.ok) return loaded
    const list = loaded.list
    const read = bitstringEntryValue(list, entry, index, url)
    if (!read.ok) return read
    // §3.2 step 13: a message list's value means what its statusMessage says (on the entry in v1.0 §2.1,
    // on the list in earlier drafts)
    const message = statusMessageOf(list.messages ?? entry.statusMessage, read.value)
    if (read.value === 0)
      return { ok: true, purpose: list.purpose, ...(message !== undefined && { message }) }
    return {
      ok: false,
      code: 'status',
      url,
      index,
      value: read.value,
      purpose: list.purpose,
      ...(message !== undefined && { message }),
    }
  }

  /** A Token Status List reference (§6.1 `status.status_list`), the list signed by `signer`. */
  async token(
    reference: { uri: string; index: number },
    signer: ListSigner,
    now: number,
    memo: Map<string, Promise<string>>,
  ): Promise<StatusOutcome> {
    const { uri, index } = reference
    if (!Number.isSafeInteger(index) || index < 0) return { ok: false, code: 'index', index }
    const loaded = await this.list(uri, async () => {
      const verified = await this.load(uri, 'token', signer, now, memo)
      try {
        verified.token ??= readTokenStatusList(verified.payload)
      } catch (error) {
        throw new ListError({ code: 'unreadable', detail: (error as Error).message })
      }
      return verified.token
    })
    if (!loaded.ok) return loaded
    const value = tokenStatusAt(loaded.list, index)
    if (value === undefined) return { ok: false, code: 'range', url: uri, index }
    if (value === 0) return { ok: true }
    return { ok: false, code: 'status', url: uri, index, value }
  }
}
