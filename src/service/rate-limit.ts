import { isIP } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { RateLimitOptions } from './config/schema.ts'
import { OAuthError } from './errors/oauth.ts'
import type { Clock } from './util/clock.ts'

// Abuse limits (issue 19; docs/security.md "Rate limits"). Token buckets in memory, one per key (a client
// address, a presented API key id): a bucket holds up to `perMinute` tokens and refills at perMinute/60 per
// second, so a client gets a burst of one minute's allowance and then that average. The injected clock drives
// refills, so tests move time instead of sleeping. Each instance counts on its own (docs/scaling.md).

/** Buckets kept at once; beyond it the least recently used goes (a full bucket is the same as none). */
const MAX_KEYS = 50_000

interface Bucket {
  tokens: number
  at: number
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>()
  private readonly perMs: number

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
    private readonly maxKeys = MAX_KEYS,
  ) {
    this.perMs = perMinute / 60_000
  }

  /** 0 when `key` may go on now (one token taken), else the whole seconds until a token is back. */
  take(key: string): number {
    const wait = this.wait(key)
    if (wait === 0) this.spend(key)
    return wait
  }

  /** Like take, without spending: for limits that count only failures (check first, spend on failure). */
  wait(key: string): number {
    if (this.perMinute === 0) return 0
    const tokens = this.tokens(key)
    return tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / this.perMs / 1000))
  }

  spend(key: string) {
    if (this.perMinute === 0) return
    const tokens = this.tokens(key) - 1
    this.buckets.delete(key) // re-inserted last: Map order is least recently used first
    this.buckets.set(key, { tokens, at: this.clock.now() })
    if (this.buckets.size > this.maxKeys) this.evict()
  }

  private tokens(key: string): number {
    const bucket = this.buckets.get(key)
    if (!bucket) return this.perMinute
    return Math.min(this.perMinute, bucket.tokens + (this.clock.now() - bucket.at) * this.perMs)
  }

  private evict() {
    for (const key of this.buckets.keys()) {
      this.buckets.delete(key)
      if (this.buckets.size <= this.maxKeys) return
    }
  }
}

/** Whether `address` is never limited: listed, or loopback while the service runs for tests on its own machine. */
export function exemptFrom(options: RateLimitOptions, loopbackToo: boolean): (address: string) => boolean {
  const listed = new Set(options.exempt.map(normalize))
  return (address) => {
    const a = normalize(address)
    return listed.has(a) || (loopbackToo && isLoopback(a))
  }
}

function normalize(address: string): string {
  // An IPv4 client on a dual-stack socket appears as ::ffff:a.b.c.d.
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
}

function isLoopback(address: string): boolean {
  return address === '::1' || (isIP(address) === 4 && address.startsWith('127.'))
}

/** The wallet-facing routes (OpenID4VCI, OpenID4VP and their metadata): anonymous, so limited per client. */
const WALLET_PATH = /^\/(?:oid4vci|oid4vp|\.well-known)\//

/**
 * A root hook before any route plugin: a client over its allowance on the wallet-facing routes gets 429 in
 * the OAuth error shape, `slow_down` (RFC 8628 §3.5's name for "too fast") with Retry-After (RFC 6585 §4,
 * RFC 9110 §10.2.3), before its request costs anything.
 */
export function installWalletRateLimit(
  app: FastifyInstance,
  options: RateLimitOptions,
  exempt: (address: string) => boolean,
  clock: Clock,
) {
  if (options.walletPerClientPerMinute === 0) return
  const buckets = new TokenBuckets(options.walletPerClientPerMinute, clock)
  // A callback hook: it runs on every request, and an async one costs a promise each (issue 20).
  app.addHook('onRequest', (request: FastifyRequest, _reply, done) => {
    if (!WALLET_PATH.test(request.url) || exempt(request.ip)) return done()
    const wait = buckets.take(request.ip)
    if (wait <= 0) return done()
    done(
      new OAuthError(
        'slow_down',
        `more than ${options.walletPerClientPerMinute} wallet-facing requests per minute from this address; retry after ${wait} s`,
        { headers: { 'Retry-After': String(wait) } },
      ),
    )
  })
}

/**
 * Failed logins per presented key id and per client address (brute force, issue 19). Checked before the
 * secret is, spent only on a failure: a client within its allowance never notices, and an unknown key id is
 * counted like a known one (the limit must not tell which ids exist).
 */
export class LoginLimits {
  private readonly perKey: TokenBuckets
  private readonly perClient: TokenBuckets

  constructor(
    private readonly options: RateLimitOptions,
    private readonly exempt: (address: string) => boolean,
    clock: Clock,
  ) {
    this.perKey = new TokenBuckets(options.loginFailuresPerKeyPerMinute, clock)
    this.perClient = new TokenBuckets(options.loginFailuresPerClientPerMinute, clock)
  }

  /** Seconds to wait, with what was exceeded, or undefined when the login may be tried. */
  blocked(keyId: string, address: string): { wait: number; what: string } | undefined {
    if (this.exempt(address)) return undefined
    const client = this.perClient.wait(address)
    if (client > 0) {
      return {
        wait: client,
        what: `more than ${this.options.loginFailuresPerClientPerMinute} failed logins per minute from this address`,
      }
    }
    const key = this.perKey.wait(keyId)
    if (key > 0) {
      return {
        wait: key,
        what: `more than ${this.options.loginFailuresPerKeyPerMinute} failed logins per minute for this API key id`,
      }
    }
    return undefined
  }

  failed(keyId: string, address: string) {
    if (this.exempt(address)) return
    this.perClient.spend(address)
    this.perKey.spend(keyId)
  }
}
