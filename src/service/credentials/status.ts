import type { KeyObject } from 'node:crypto'
import { getStatus, readStatusList, type StatusList } from '../../shared/bitstring.ts'
import { type DidKey, JWS_ALGS, resolveDidKey } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { decodeJws, verifyJws } from '../../shared/jws.ts'
import { readTokenStatusList, type TokenStatusList, tokenStatusAt } from '../../shared/token-status-list.ts'
import {
  JWT_MEDIA_TYPE,
  STATUS_LIST_JWT_MEDIA_TYPE,
  STATUS_LIST_JWT_TYP,
  VC_JWT_MEDIA_TYPE,
} from '../../shared/wire.ts'
import { type Clock, systemClock } from '../util/clock.ts'
import type { Resolver, TargetPolicy } from '../util/net-targets.ts'
import { fetchOutbound, OUTBOUND_DEADLINE_MS, OutboundError, originOf } from '../util/outbound.ts'

// Credential status by Bitstring Status List v1.0 and IETF Token Status List, as a verifier checks it:
// fetch the list, verify that the credential's own issuer signed it, read the entry. A list this service
// publishes is read in-process (same code as its HTTP route, always fresh); any other is fetched through
// the outbound policy (util/outbound.ts: public addresses only outside webhooks.mode "test", no redirects,
// one deadline, a body cap) and kept in a shared, bounded cache for as long as the list and its HTTP
// answer allow. Lists are fetched only for credentials already found signed by a trusted issuer, so the
// URL is the issuer's word — but whoever presents the credential chooses which one is checked.

/**
 * Largest status list read: decodeJws (shared/jws.ts) refuses a JWS over 256 KiB, so reading more would
 * be work for nothing. A 131,072-entry list of 2 bits is 32 KiB before compression.
 */
export const STATUS_LIST_MAX_BYTES = 256 * 1024
/** What a status list may be served as: Token Status List §8.1, VC-JOSE-COSE §6.1, RFC 7519 §10.3.1. */
const STATUS_LIST_MEDIA_TYPES = [STATUS_LIST_JWT_MEDIA_TYPE, VC_JWT_MEDIA_TYPE, JWT_MEDIA_TYPE] as const

/** Returns the status-list credential (a JWT) at `url`; throws with a reason when it cannot. */
export type StatusListSource = (url: string) => Promise<string>

export type StatusVerdict = { ok: true; status: string } | { ok: false; reason: string }

/** Bounds of the shared status-list cache. */
export interface StatusListCacheLimits {
  /** Lists kept at most (least recently used evicted first). */
  maxEntries: number
  /** Characters of list JWTs kept at most, all entries together. */
  maxBytes: number
  /** Longest a list is kept, whatever its ttl or max-age say (ms). */
  maxLifetimeMs: number
  /** Shortest a cacheable list is kept, however small its ttl or max-age (ms); never past its exp. */
  minLifetimeMs: number
}

export const STATUS_LIST_CACHE_DEFAULTS: StatusListCacheLimits = {
  maxEntries: 256,
  maxBytes: 8 * 1024 * 1024,
  // Bitstring Status List v1.0 §2.2: a list without ttl may be cached for 300000 ms.
  maxLifetimeMs: 300_000,
  minLifetimeMs: 1000,
}

/** Cache-Control directives (RFC 9111 §5.2), names lower case; a directive without a value maps to ''. */
function cacheDirectives(header: string | undefined): Map<string, string> {
  const directives = new Map<string, string>()
  for (const part of (header ?? '').split(',')) {
    const [name, value = ''] = part.split('=', 2)
    const key = name?.trim().toLowerCase()
    if (key) directives.set(key, value.trim().replace(/^"|"$/g, ''))
  }
  return directives
}

/**
 * Until when (ms since the epoch) a list fetched at `fetchedAt` may be served from the cache, or undefined
 * when it must not be kept. The shortest bound wins: the cache's maximum, HTTP max-age (s-maxage first:
 * this cache is shared between tenants, RFC 9111 §5.2.2.10), the list's own ttl (Token Status List §5.1
 * `ttl` in seconds, §13.7 on caching; Bitstring Status List v1.0 §2.2 `ttl` in milliseconds), raised to
 * the floor; then never past the list's `exp` (RFC 7519 §4.1.4) or its `validUntil` / `expirationDate`.
 * `no-store`, `no-cache` (we do not revalidate, RFC 9111 §5.2.2.4) and `private` (a shared cache must not
 * store it, §5.2.2.7) keep it out. The claims are read before the signature is checked: they can only
 * shorten the time, and a list that does not verify fails every use anyway.
 */
export function statusListCacheUntil(
  jwt: string,
  cacheControl: string | undefined,
  fetchedAt: number,
  limits: StatusListCacheLimits = STATUS_LIST_CACHE_DEFAULTS,
): number | undefined {
  const directives = cacheDirectives(cacheControl)
  if (directives.has('no-store') || directives.has('no-cache') || directives.has('private')) return undefined
  let payload: Record<string, unknown>
  try {
    payload = decodeJws(jwt).payload
  } catch {
    return undefined
  }
  const bounds = [limits.maxLifetimeMs]
  const maxAge = directives.get('s-maxage') ?? directives.get('max-age')
  // an unreadable max-age counts as 0 (RFC 9111 §4.2.1: invalid freshness information means stale)
  if (maxAge !== undefined) bounds.push(/^\d+$/.test(maxAge) ? Number(maxAge) * 1000 : 0)
  if (payload.status_list !== undefined && typeof payload.ttl === 'number') bounds.push(payload.ttl * 1000)
  const vc = isObject(payload.vc) ? payload.vc : payload
  const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : undefined
  if (typeof subject?.ttl === 'number') bounds.push(subject.ttl)
  let until = fetchedAt + Math.max(limits.minLifetimeMs, Math.min(...bounds.map((b) => (b > 0 ? b : 0))))
  if (typeof payload.exp === 'number') until = Math.min(until, payload.exp * 1000)
  for (const end of [vc.validUntil, vc.expirationDate]) {
    const at = typeof end === 'string' ? Date.parse(end) : Number.NaN
    if (!Number.isNaN(at)) until = Math.min(until, at)
  }
  return until > fetchedAt ? until : undefined
}

/** Fetched list JWTs by URL, bounded in entries and characters, least recently used evicted first. */
export class StatusListCache {
  private readonly entries = new Map<string, { jwt: string; until: number; at: number }>()
  private chars = 0
  constructor(readonly limits: StatusListCacheLimits = STATUS_LIST_CACHE_DEFAULTS) {}

  get size() {
    return this.entries.size
  }
  get bytes() {
    return this.chars
  }

  get(url: string, now: number): string | undefined {
    const entry = this.entries.get(url)
    if (!entry) return undefined
    this.entries.delete(url)
    // past its time, or a clock set back before the fetch (the harness's ShiftedClock resets): stale
    if (entry.until <= now || now < entry.at) {
      this.chars -= url.length + entry.jwt.length
      return undefined
    }
    this.entries.set(url, entry) // most recently used last
    return entry.jwt
  }

  set(url: string, jwt: string, until: number, now: number) {
    const cost = url.length + jwt.length
    const old = this.entries.get(url)
    if (old) {
      this.entries.delete(url)
      this.chars -= url.length + old.jwt.length
    }
    if (cost > this.limits.maxBytes || this.limits.maxEntries < 1) return
    if (this.entries.size >= this.limits.maxEntries || this.chars + cost > this.limits.maxBytes) {
      for (const [key, entry] of this.entries) {
        if (entry.until > now) continue
        this.entries.delete(key)
        this.chars -= key.length + entry.jwt.length
      }
    }
    for (const [key, entry] of this.entries) {
      if (this.entries.size < this.limits.maxEntries && this.chars + cost <= this.limits.maxBytes) break
      this.entries.delete(key)
      this.chars -= key.length + entry.jwt.length
    }
    this.entries.set(url, { jwt, until, at: now })
    this.chars += cost
  }
}

export interface RemoteStatusListOptions {
  /** `webhooks.mode`: 'test' admits loopback lists (the suite's own servers), 'production' only public ones. */
  policy: TargetPolicy
  clock?: Clock
  /** Cache bounds, or false for none (every use fetches: the baseline of bench/status-fetch.ts). */
  cache?: Partial<StatusListCacheLimits> | false
  /** Total time for one fetch (default OUTBOUND_DEADLINE_MS). */
  deadlineMs?: number
  /** Largest list read (default STATUS_LIST_MAX_BYTES). */
  maxBytes?: number
  /** Tests: the resolver behind the connect-time address check. */
  resolve?: Resolver
}

/**
 * Status lists of other issuers, over HTTP(S) through the outbound policy, kept in one shared cache
 * (`source` is what StatusChecker takes). Concurrent uses of one URL share one fetch.
 */
export class RemoteStatusLists {
  readonly cache: StatusListCache | undefined
  /** Requests sent (tests and the bench count them). */
  fetches = 0
  private readonly inflight = new Map<string, Promise<string>>()
  private readonly clock: Clock

  constructor(private readonly options: RemoteStatusListOptions) {
    this.clock = options.clock ?? systemClock
    this.cache =
      options.cache === false
        ? undefined
        : new StatusListCache({ ...STATUS_LIST_CACHE_DEFAULTS, ...options.cache })
  }

  readonly source: StatusListSource = (url) => {
    const cached = this.cache?.get(url, this.clock.now())
    if (cached !== undefined) return Promise.resolve(cached)
    if (!this.cache) return this.fetch(url)
    let pending = this.inflight.get(url)
    if (!pending) {
      pending = this.fetch(url).finally(() => this.inflight.delete(url))
      this.inflight.set(url, pending)
    }
    return pending
  }

  private async fetch(url: string): Promise<string> {
    this.fetches++
    const {
      policy,
      deadlineMs = OUTBOUND_DEADLINE_MS,
      maxBytes = STATUS_LIST_MAX_BYTES,
      resolve,
    } = this.options
    const answer = await fetchOutbound(url, {
      policy,
      deadlineMs,
      maxBytes,
      // Token Status List §8.1: the relying party asks for application/statuslist+jwt
      accept: STATUS_LIST_MEDIA_TYPES.join(', '),
      mediaTypes: STATUS_LIST_MEDIA_TYPES,
      ...(resolve && { resolve }),
    })
    const jwt = answer.body.toString('utf8').trim()
    if (this.cache) {
      const now = this.clock.now()
      const until = statusListCacheUntil(jwt, answer.cacheControl, now, this.cache.limits)
      if (until !== undefined) this.cache.set(url, jwt, until, now)
    }
    return jwt
  }
}

/** What a failed list may say about itself: the check and the origin, never the path (util/outbound.ts). */
function cannotUse(url: string, error: unknown): string {
  if (error instanceof OutboundError) return `status list cannot be fetched: ${error.message}`
  const origin = originOf(url)
  return `status list ${origin ? `at ${origin}` : 'with an unreadable URL'} cannot be used: ${(error as Error).message}`
}

/**
 * List JWTs whose signature was verified, by their text, with what was decoded from them. A list changes
 * only when a status does, and then its JWT is a new text; until then every presentation of a credential
 * on it would verify the same signature and inflate the same bits again. What depends on the moment or on
 * the credential (expiry, who must have signed, `sub`) is still checked on every use.
 */
class VerifiedLists {
  private readonly entries = new Map<
    string,
    { signer: DidKey; payload: Record<string, unknown>; bitstring?: StatusList; token?: TokenStatusList }
  >()
  verify(jwt: string, kid: string) {
    let entry = this.entries.get(jwt)
    if (entry) {
      // least recently used goes first: lists in steady use stay verified
      this.entries.delete(jwt)
      this.entries.set(jwt, entry)
    } else {
      const signer = resolveDidKey(kid)
      const { payload } = verifyJws(jwt, signer.publicKey, { algorithms: JWS_ALGS })
      entry = { signer, payload }
      if (this.entries.size >= 64) this.entries.delete(this.entries.keys().next().value as string)
      this.entries.set(jwt, entry)
    }
    return entry
  }
}

export class StatusChecker {
  /** IETF Token Status Lists (SD-JWT VCs' `status.status_list`), read through the same source. */
  readonly token: TokenStatusChecker
  private readonly verified = new VerifiedLists()

  constructor(private readonly source: StatusListSource) {
    this.token = new TokenStatusChecker(source, this.verified)
  }

  /** Parses and verifies a list credential; `issuerDid` must have signed it. */
  private async load(url: string, issuerDid: string, now: number): Promise<StatusList> {
    const jwt = await this.source(url)
    const { header } = decodeJws(jwt)
    if (typeof header.kid !== 'string') throw new Error('status list JWT has no kid')
    const entry = this.verified.verify(jwt, header.kid)
    const { signer, payload } = entry
    if (signer.did !== issuerDid) {
      throw new Error(`status list is signed by ${signer.did}, not by the credential's issuer ${issuerDid}`)
    }
    if (typeof payload.exp === 'number' && payload.exp * 1000 <= now)
      throw new Error('status list has expired')
    entry.bitstring ??= readStatusList(payload)
    return entry.bitstring
  }

  /**
   * The status of one credential's `credentialStatus` entry (or array of entries). `memo` shares list
   * fetches between the credentials of one presentation.
   */
  async check(
    credentialStatus: unknown,
    issuerDid: string,
    now: number,
    memo: Map<string, Promise<StatusList>>,
  ): Promise<StatusVerdict> {
    const entries = Array.isArray(credentialStatus) ? credentialStatus : [credentialStatus]
    const statuses: string[] = []
    for (const entry of entries) {
      if (!isObject(entry) || typeof entry.statusListCredential !== 'string') {
        return {
          ok: false,
          reason: 'credentialStatus is not a BitstringStatusListEntry with statusListCredential',
        }
      }
      const index = Number(entry.statusListIndex)
      if (!Number.isSafeInteger(index) || index < 0) {
        return { ok: false, reason: `statusListIndex ${JSON.stringify(entry.statusListIndex)} is invalid` }
      }
      const url = entry.statusListCredential
      let pending = memo.get(url)
      if (!pending) {
        pending = this.load(url, issuerDid, now)
        memo.set(url, pending)
      }
      let list: StatusList
      try {
        list = await pending
      } catch (error) {
        return { ok: false, reason: cannotUse(url, error) }
      }
      if (entry.statusPurpose !== undefined && entry.statusPurpose !== list.purpose) {
        return {
          ok: false,
          reason: `entry purpose ${String(entry.statusPurpose)} differs from the list's ${list.purpose}`,
        }
      }
      if ((index + 1) * list.size > list.bits.length * 8) {
        return { ok: false, reason: `statusListIndex ${index} is outside the list` }
      }
      const value = getStatus(list.bits, index, list.size)
      if (value === 0) {
        statuses.push(list.purpose === 'message' ? messageOf(list, 0) : 'active')
        continue
      }
      const meaning =
        list.purpose === 'revocation'
          ? 'revoked'
          : list.purpose === 'suspension'
            ? 'suspended'
            : messageOf(list, value)
      return { ok: false, reason: `the credential is ${meaning} (status list ${url}, index ${index})` }
    }
    return { ok: true, status: statuses.join(', ') }
  }
}

/**
 * Token Status List (SD-JWT VC `status.status_list`): the list JWT at `uri`, fetched through the same
 * source as bitstring lists, must be `typ statuslist+jwt`, signed by the credential's issuer, with `sub`
 * the uri it was fetched from. 0 VALID, 1 INVALID, 2 SUSPENDED; other values fail as unknown.
 */
export class TokenStatusChecker {
  constructor(
    private readonly source: StatusListSource,
    private readonly verified = new VerifiedLists(),
  ) {}

  private async load(uri: string, issuer: string | KeyObject, now: number): Promise<TokenStatusList> {
    const jwt = await this.source(uri)
    const { header } = decodeJws(jwt)
    if (header.typ !== STATUS_LIST_JWT_TYP) {
      throw new Error(`status list JWT typ is not ${STATUS_LIST_JWT_TYP}`)
    }
    if (header.x5c !== undefined) throw new Error('status list JWT names its key by x5c (not read yet)')
    if (typeof header.kid !== 'string') throw new Error('status list JWT has no kid')
    const entry = this.verified.verify(jwt, header.kid)
    const { signer, payload } = entry
    // The same entity signs the list and the credential (Token Status List §11.3): the issuer's DID, or for
    // an x5c-certified issuer, the key its leaf certificate certifies.
    if (typeof issuer === 'string' ? signer.did !== issuer : !signer.publicKey.equals(issuer)) {
      throw new Error(
        `status list is signed by ${signer.did}, not by the credential's issuer ${typeof issuer === 'string' ? issuer : "(its x5c leaf's key)"}`,
      )
    }
    if (payload.sub !== uri) {
      throw new Error('status list sub is not the uri it was fetched from')
    }
    if (typeof payload.exp === 'number' && payload.exp * 1000 <= now)
      throw new Error('status list has expired')
    entry.token ??= readTokenStatusList(payload)
    return entry.token
  }

  /** `memo` shares list fetches per uri between the credentials of one presentation. */
  async check(
    reference: { uri: string; index: number },
    /** The credential issuer's DID, or its key when an x5c chain certified it. */
    issuer: string | KeyObject,
    now: number,
    memo: Map<string, Promise<unknown>>,
  ): Promise<StatusVerdict> {
    const { uri, index } = reference
    if (!Number.isSafeInteger(index) || index < 0)
      return { ok: false, reason: `status_list.idx ${index} is invalid` }
    const key = `token-status-list ${uri}`
    let pending = memo.get(key) as Promise<TokenStatusList> | undefined
    if (!pending) {
      pending = this.load(uri, issuer, now)
      // a rejection is reported by the await below, for every credential that names this uri
      pending.catch(() => {})
      memo.set(key, pending)
    }
    let list: TokenStatusList
    try {
      list = await pending
    } catch (error) {
      return { ok: false, reason: cannotUse(uri, error) }
    }
    const value = tokenStatusAt(list, index)
    if (value === undefined)
      return { ok: false, reason: `status_list.idx ${index} is outside the list ${uri}` }
    if (value === 0) return { ok: true, status: 'valid' }
    const meaning =
      value === 1 ? 'invalid (revoked)' : value === 2 ? 'suspended' : `of status 0x${value.toString(16)}`
    return { ok: false, reason: `the credential is ${meaning} (Token Status List ${uri}, index ${index})` }
  }
}

function messageOf(list: StatusList, value: number): string {
  const hex = `0x${value.toString(16)}`
  return list.messages?.find((m) => m.status.toLowerCase() === hex)?.message ?? `status ${hex}`
}
