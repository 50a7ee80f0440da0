import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

// Where the service may send its own requests (webhooks): public unicast addresses only, so a template's
// URL cannot make the service probe its own network (SSRF). Checked when a URL is saved and again on
// every connection, because a name can resolve elsewhere later (DNS rebinding).

export type TargetPolicy = 'production' | 'test'

/** Why `address` (an IP literal) may not be connected to under `policy`, or undefined when it may. */
export function forbiddenAddress(address: string, policy: TargetPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return `"${address}" is not an IP address`
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
    return `${parsed.toString()}, a deprecated IPv4-compatible address`
  }
  if (range === 'unicast') return undefined
  if (range === 'loopback' && policy === 'test') return undefined
  const hint = range === 'loopback' ? ' (allowed only with webhooks.mode "test")' : ''
  return `${parsed.toString()}, a ${range} address${hint}`
}

/** Host names that always mean this machine. */
const LOCAL_NAMES = /(^|\.)localhost\.?$/i

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
  if (LOCAL_NAMES.test(host) && policy !== 'test') {
    return `targets ${host}, which is loopback (allowed only with webhooks.mode "test")`
  }
  return undefined
}

export class ForbiddenTargetError extends Error {
  override name = 'ForbiddenTargetError'
  readonly code = 'EFORBIDDENTARGET'
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void

/**
 * A `lookup` for http.request: resolves as usual, then refuses the connection if any address the name
 * resolves to is forbidden (one bad answer taints the name; the resolver may rotate them).
 */
export function guardedLookup(policy: TargetPolicy) {
  return (hostname: string, options: object, callback: LookupCallback) => {
    dnsLookup(hostname, { ...(options as LookupAllOptions), all: true }, (error, addresses) => {
      if (error) return callback(error, [])
      for (const { address } of addresses) {
        const reason = forbiddenAddress(address, policy)
        if (reason) return callback(new ForbiddenTargetError(`${hostname} resolves to ${reason}`), [])
      }
      if ((options as { all?: boolean }).all) return callback(null, addresses)
      const first = addresses[0]
      if (!first)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), [])
      return callback(null, first.address, first.family)
    })
  }
}
