// `vc-harness bench --target external` sends requests only to hosts named on the command line
// (`--allow-host`). The profile's URLs are checked before anything starts (bench/external.ts); this guard
// covers every request after that: the relying party's set-up calls (a fetch) and the wallet process's
// dispatcher, through which the relying party's calls and every lean wallet's requests go, including the
// URLs the deployment hands out (offer, metadata endpoints, request_uri, response_uri). A request to a
// host not named is refused before a connection is opened, and recorded, so the run can stop and say
// which host must be named.

import { Agent, type Dispatcher } from 'undici'
import { BenchUsageError } from './usage-error.ts'

/** A host as it is compared: lower case, IPv6 without its brackets, no trailing dot. */
export function normalHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
}

/** The host a URL points at, as compared (`URL.hostname`, normalised). */
export function hostOf(url: string | URL): string {
  return normalHost(new URL(url).hostname)
}

/**
 * `--allow-host` values (repeatable, each a comma-separated list) as a list of hosts. Host names or IP
 * addresses only: a URL, a port or a wildcard is a usage error, so what is allowed is exactly what was typed.
 */
export function parseAllowHosts(values: readonly string[]): string[] {
  const hosts = new Set<string>()
  for (const value of values) {
    for (const raw of value.split(',')) {
      const entry = raw.trim()
      if (entry === '') throw new BenchUsageError('--allow-host: an empty host name')
      if (entry.includes('/'))
        throw new BenchUsageError(`--allow-host takes host names, not URLs: "${entry}"`)
      if (entry.includes('*'))
        throw new BenchUsageError(`--allow-host takes no wildcards: name each host ("${entry}")`)
      if (/^[^:]+:\d*$/.test(entry) || /^\[.*\]:\d*$/.test(entry))
        throw new BenchUsageError(`--allow-host takes host names without a port: "${entry}"`)
      hosts.add(normalHost(entry))
    }
  }
  return [...hosts]
}

/** A request the guard refused; nothing was sent. `code` makes it a `network HOST_NOT_ALLOWED` step error. */
export class HostNotAllowedError extends Error {
  override name = 'HostNotAllowedError'
  readonly code = 'HOST_NOT_ALLOWED'
  constructor(
    readonly host: string,
    readonly url: string,
  ) {
    super(`host ${host} is not named with --allow-host: ${url} was not requested`)
  }
}

export class HostGuard {
  readonly allowed: ReadonlySet<string>
  /** Hosts refused so far, each with the first URL not requested (origin and path, no query, ids elided). */
  readonly refused = new Map<string, string>()

  constructor(hosts: Iterable<string>) {
    this.allowed = new Set([...hosts].map(normalHost))
  }

  allows(url: string | URL): boolean {
    return this.allowed.has(hostOf(url))
  }

  /** Throws HostNotAllowedError (and records the host) unless the URL's host is allowed. */
  check(url: string | URL): void {
    const parsed = new URL(url)
    const host = normalHost(parsed.hostname)
    if (this.allowed.has(host)) return
    // Long opaque path segments (process ids, codes) are capability URLs: not printed.
    const path = parsed.pathname.replace(/[\w-]{20,}/g, '…')
    const shown = `${parsed.origin}${path}`
    if (!this.refused.has(host)) this.refused.set(host, shown)
    throw new HostNotAllowedError(host, shown)
  }
}

/** An undici Agent that refuses, before connecting, every request to a host the guard does not allow. */
export class GuardedAgent extends Agent {
  private readonly guard: HostGuard
  constructor(guard: HostGuard, options?: Agent.Options) {
    super(options)
    this.guard = guard
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    // undici's request() turns a synchronous throw here into its rejected promise.
    this.guard.check(new URL(options.path, options.origin ?? 'http://origin.invalid'))
    return super.dispatch(options, handler)
  }
}

/** fetch for the relying party's set-up calls: refused hosts throw, and redirects are not followed. */
export function guardedFetch(guard: HostGuard, fetchImpl: typeof fetch = fetch): typeof fetch {
  // async: a refusal rejects, as a failed fetch does.
  return async (input, init) => {
    guard.check(input instanceof Request ? input.url : String(input))
    return fetchImpl(input, { ...init, redirect: 'manual' })
  }
}
