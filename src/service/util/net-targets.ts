import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

// Where the service may send its own requests (webhooks, and every fetch of a URL someone else named:
// util/outbound.ts): public unicast addresses only, so a template's or a credential's URL cannot make the
// service probe its own network (SSRF). Checked when a URL is saved or about to be fetched, and again on
// every connection, because a name can resolve elsewhere later (DNS rebinding).

export type TargetPolicy = 'production' | 'test'

/**
 * The ipaddr.js range name of `address` (an IP literal) when it may not be connected to under `policy`
 * ('loopback', 'private', 'linkLocal' — cloud metadata 169.254.169.254 —, 'uniqueLocal' — IPv6 ULA —,
 * 'deprecated IPv4-compatible', …), undefined when it may. Only public unicast passes; loopback too
 * under 'test'. Names no address, so a caller can say why without echoing what a name resolved to.
 */
export function forbiddenRange(address: string, policy: TargetPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return 'not an IP address'
  // An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
  const parsed = ipaddr.process(address)
  const range = parsed.range()
  // ::a.b.c.d (IPv4-compatible, deprecated by RFC 4291) counts as unicast to ipaddr.js, yet it is no
  // public host's address: the URL parser writes http://[::127.0.0.1]/ as [::7f00:1].
  if (
    parsed.kind() === 'ipv6' &&
    range === 'unicast' &&
    (parsed as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)
  ) {
    return 'deprecated IPv4-compatible'
  }
  if (range === 'unicast') return undefined
  if (range === 'loopback' && policy === 'test') return undefined
  return range
}

/** Why `address` (an IP literal) may not be connected to under `policy`, or undefined when it may. */
export function forbiddenAddress(address: string, policy: TargetPolicy): string | undefined {
  const range = forbiddenRange(address, policy)
  if (range === undefined) return undefined
  if (!ipaddr.isValid(address)) return `"${address}" is not an IP address`
  const hint = range === 'loopback' ? ' (allowed only with webhooks.mode "test")' : ''
  return `${ipaddr.process(address).toString()}, a ${range} address${hint}`
}

/** Host names that always mean this machine. */
const LOCAL_NAMES = /(^|\.)localhost\.?$/i

/** Whether `host` (a URL's hostname) is a name that always means this machine (RFC 6761 §6.3 localhost). */
export function isLocalName(host: string): boolean {
  return LOCAL_NAMES.test(host)
}

/** Why `url` may not be a webhook target under `policy`, judged without DNS; undefined when it may. */
export function forbiddenUrl(url: string, policy: TargetPolicy): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'is not a URL'
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'must use http or https'
  if (parsed.username || parsed.password)
    return 'must not carry credentials (sign with webhookSecret instead)'
  const host = parsed.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host)) {
    const reason = forbiddenAddress(host, policy)
    return reason && `targets ${reason}`
  }
  if (isLocalName(host) && policy !== 'test') {
    return `targets ${host}, which is loopback (allowed only with webhooks.mode "test")`
  }
  return undefined
}

export class ForbiddenTargetError extends Error {
  override name = 'ForbiddenTargetError'
  readonly code = 'EFORBIDDENTARGET'
  constructor(
    message: string,
    /** The forbidden range one of the name's addresses is in (see forbiddenRange). */
    readonly range?: string,
  ) {
    super(message)
  }
}

/** The resolver guardedLookup asks (node:dns lookup with `all: true`); injectable for tests. */
export type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void

/**
 * A `lookup` for http.request: resolves as usual, then refuses the connection if any address the name
 * resolves to is forbidden (one bad answer taints the name; the resolver may rotate them).
 */
export function guardedLookup(policy: TargetPolicy, resolve: Resolver = dnsLookup) {
  return (hostname: string, options: object, callback: LookupCallback) => {
    resolve(hostname, { ...(options as LookupAllOptions), all: true }, (error, addresses) => {
      if (error) return callback(error, [])
      for (const { address } of addresses) {
        const reason = forbiddenAddress(address, policy)
        if (reason) {
          const range = forbiddenRange(address, policy)
          return callback(new ForbiddenTargetError(`${hostname} resolves to ${reason}`, range), [])
        }
      }
      if ((options as { all?: boolean }).all) return callback(null, addresses)
      const first = addresses[0]
      if (!first)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), [])
      return callback(null, first.address, first.family)
    })
  }
}
