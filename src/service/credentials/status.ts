import { KeyObject } from 'node:crypto'
import { resolveLdKey } from '../../formats/ldp-vc/keys.ts'
import { isObject } from '../../shared/json.ts'
import { decodeJws } from '../../shared/jws.ts'
import {
  type ListProblem,
  type ListSigner,
  STATUS_LIST_ACCEPT,
  STATUS_LIST_MAX_BYTES,
  STATUS_LIST_MEDIA_TYPES,
  StatusListChecks,
  type StatusListFetch,
  type StatusOutcome,
} from '../../shared/status-check.ts'
import { STATUS_LIST_JWT_TYP } from '../../shared/wire.ts'
import { type Clock, systemClock } from '../util/clock.ts'
import type { Resolver, TargetPolicy } from '../util/net-targets.ts'
import { fetchOutbound, OUTBOUND_DEADLINE_MS, OutboundError, originOf } from '../util/outbound.ts'

// Credential status by Bitstring Status List v1.0 and IETF Token Status List, as a verifier checks it:
// fetch the list, verify that the credential's own issuer signed it, read the entry — the checking itself
// is shared with the wallet (shared/status-check.ts); this module owns the network policy and the words of
// the verdicts. A list this service publishes is read in-process (same code as its HTTP route, always
// fresh); any other is fetched through the outbound policy (util/outbound.ts: public addresses only outside
// webhooks.mode "test", no redirects, one deadline, a body cap) and kept in a shared, bounded cache for as
// long as the list and its HTTP answer allow. Lists are fetched only for credentials already found signed
// by a trusted issuer, so the URL is the issuer's word — but whoever presents the credential chooses which
// one is checked.

export { STATUS_LIST_MAX_BYTES }

/** Returns the status-list credential (a JWT) at `url`; throws with a reason when it cannot. */
export type StatusListSource = StatusListFetch

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
      accept: STATUS_LIST_ACCEPT,
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

/** The verifier's words for a list that cannot be used (the shared check, shared/status-check.ts). */
function listReason(url: string, problem: ListProblem, signer: ListSigner): string {
  const unusable = (why: string) => cannotUse(url, new Error(why))
  switch (problem.code) {
    case 'url':
      // the words of the outbound policy's own URL check (util/outbound.ts)
      return `status list cannot be fetched: url check: ${problem.origin ?? 'the URL'} ${problem.detail}`
    case 'fetch':
      return cannotUse(url, problem.error)
    case 'not-jws':
    case 'unresolvable':
    case 'signature':
    case 'unreadable':
      return unusable(problem.detail)
    case 'typ':
      return unusable(`status list JWT typ is not ${STATUS_LIST_JWT_TYP}`)
    case 'x5c':
      return unusable('status list JWT names its key by x5c (not read yet)')
    case 'kid':
      return unusable(
        typeof problem.kid === 'string'
          ? `status list JWT kid ${JSON.stringify(problem.kid)} is not a did:key URL`
          : 'status list JWT has no kid',
      )
    case 'signer':
      return unusable(
        `status list is signed by ${problem.did}, not by the credential's issuer ${signer.did ?? "(its x5c leaf's key)"}`,
      )
    case 'expired':
      return unusable('status list has expired')
    case 'sub':
      return unusable('status list sub is not the uri it was fetched from')
  }
}

/** The verdict a failed outcome gives, in today's words of each check. */
function refusal(outcome: Exclude<StatusOutcome, { ok: true }>, signer: ListSigner, token: boolean): string {
  switch (outcome.code) {
    case 'entry':
      return 'credentialStatus is not a BitstringStatusListEntry with statusListCredential'
    case 'index':
      return token
        ? `status_list.idx ${String(outcome.index)} is invalid`
        : `statusListIndex ${JSON.stringify(outcome.index)} is invalid`
    case 'list':
      return listReason(outcome.url, outcome.problem, signer)
    case 'size':
      return `entry statusSize ${JSON.stringify(outcome.entrySize)} differs from the list's ${outcome.listSize}`
    case 'purpose':
      return `entry purpose ${outcome.entryPurpose} differs from the list's ${outcome.listPurpose}`
    case 'range':
      return token
        ? `status_list.idx ${outcome.index} is outside the list ${outcome.url}`
        : `statusListIndex ${outcome.index} is outside the list`
    case 'status': {
      const { value, url, index } = outcome
      if (token) {
        const meaning =
          value === 1 ? 'invalid (revoked)' : value === 2 ? 'suspended' : `of status 0x${value.toString(16)}`
        return `the credential is ${meaning} (Token Status List ${url}, index ${index})`
      }
      const meaning =
        outcome.purpose === 'revocation'
          ? 'revoked'
          : outcome.purpose === 'suspension'
            ? 'suspended'
            : (outcome.message ?? `status 0x${value.toString(16)}`)
      return `the credential is ${meaning} (status list ${url}, index ${index})`
    }
  }
}

/**
 * Bitstring Status List entries (`credentialStatus`) and, through `token`, IETF Token Status Lists, checked
 * by the shared code (shared/status-check.ts) on lists from `source`.
 */
export class StatusChecker {
  /** IETF Token Status Lists (SD-JWT VCs' `status.status_list`), read through the same source. */
  readonly token: TokenStatusChecker
  private readonly checks: StatusListChecks

  constructor(source: StatusListSource) {
    // An ldp_vc issuer may hold an RSA key, whose lists are PS256: resolve every did:key type the formats know.
    this.checks = new StatusListChecks(source, resolveLdKey)
    this.token = new TokenStatusChecker(source, this.checks)
  }

  /**
   * The status of one credential's `credentialStatus` entry (or array of entries), its lists signed by
   * `issuerDid`. `memo` shares list fetches between the credentials of one presentation.
   */
  async check(
    credentialStatus: unknown,
    issuerDid: string,
    now: number,
    memo: Map<string, Promise<string>>,
  ): Promise<StatusVerdict> {
    const entries = Array.isArray(credentialStatus) ? credentialStatus : [credentialStatus]
    const signer: ListSigner = { did: issuerDid }
    const statuses: string[] = []
    for (const entry of entries) {
      const outcome = await this.checks.bitstring(entry, signer, now, memo)
      if (!outcome.ok) return { ok: false, reason: refusal(outcome, signer, false) }
      statuses.push(outcome.purpose === 'message' ? (outcome.message ?? 'status 0x0') : 'active')
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
    source: StatusListSource,
    private readonly checks = new StatusListChecks(source),
  ) {}

  /** `memo` shares list fetches per uri between the credentials of one presentation. */
  async check(
    reference: { uri: string; index: number },
    /**
     * The credential issuer's DID, or its key when an x5c chain certified it, or both (listSignerOf):
     * each one given must match the list's signer.
     */
    issuer: string | KeyObject | ListSigner,
    now: number,
    memo: Map<string, Promise<string>>,
  ): Promise<StatusVerdict> {
    const signer: ListSigner =
      typeof issuer === 'string' ? { did: issuer } : issuer instanceof KeyObject ? { key: issuer } : issuer
    const outcome = await this.checks.token(reference, signer, now, memo)
    return outcome.ok ? { ok: true, status: 'valid' } : { ok: false, reason: refusal(outcome, signer, true) }
  }
}
