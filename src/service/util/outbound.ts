import { isIP } from 'node:net'
import type { Agent } from 'undici'
import { lazyRequire } from '../../shared/lazy.ts'
import {
  ForbiddenTargetError,
  forbiddenRange,
  guardedLookup,
  isLocalName,
  type Resolver,
  type TargetPolicy,
} from './net-targets.ts'

// The one way the service fetches a URL it was handed by someone else: a credential's status list today,
// anything else a credential, request or metadata names tomorrow. Whoever posts a presentation chooses
// that URL, so the request must not become a probe of the service's own network (SSRF) nor a way to hold
// a wallet-facing request open:
// - the webhook address policy (util/net-targets.ts): public unicast only, loopback too under
//   `webhooks.mode: "test"`; judged on the URL before anything is sent and again on every address a name
//   resolves to when connecting (DNS rebinding);
// - http and https only, no userinfo in the URL (RFC 9110 §4.2.4: it is deprecated, and would be a secret
//   taken from someone else's document);
// - no redirects: a 3xx is an error, since following it would take the request to a target nobody judged
//   (RFC 9110 §15.4 leaves following to the client);
// - one deadline over connect, headers and body together, so a server that drips a byte at a time cannot
//   hold the caller longer than it;
// - a body cap: a Content-Length above it is refused before reading, and reading stops at the cap;
// - errors name the check and the URL's origin (scheme://host:port) only: never the path (the caller's
//   input, which may carry secrets) and never what the target answered (status code, headers, body,
//   resolved addresses or connection error codes), so an error returned to a wallet is no port or status
//   probe.

/** Default total time for one outbound request: connect, headers and body (ms). */
export const OUTBOUND_DEADLINE_MS = 5000
/** Default largest body read (bytes). */
export const OUTBOUND_MAX_BYTES = 1024 * 1024
/** Connections kept per origin: a slow or hostile origin cannot take more sockets than this. */
const CONNECTIONS_PER_ORIGIN = 16

/** The check an outbound request failed, stable for tests and logs. */
export type OutboundCheck =
  | 'url' // not an absolute http(s) URL, or one with userinfo
  | 'address' // a forbidden address, by the URL or by what its name resolves to at connect
  | 'connection' // no connection or no complete HTTP answer (details withheld)
  | 'redirect' // a 3xx answer (never followed)
  | 'status' // an answer other than 200
  | 'media-type' // a Content-Type the caller does not accept
  | 'size' // a body over the cap
  | 'deadline' // not complete within the deadline

export class OutboundError extends Error {
  override name = 'OutboundError'
  constructor(
    readonly check: OutboundCheck,
    /** scheme://host:port of the URL, or undefined when it is no URL. */
    readonly origin: string | undefined,
    detail: string,
  ) {
    super(`${check} check: ${origin ?? 'the URL'} ${detail}`)
  }
}

export interface OutboundOptions {
  /** `webhooks.mode` of the configuration: 'test' admits loopback targets, nothing else. */
  policy: TargetPolicy
  /** Total time for connect, headers and body, ms (default OUTBOUND_DEADLINE_MS). */
  deadlineMs?: number
  /** Largest body read, bytes (default OUTBOUND_MAX_BYTES). */
  maxBytes?: number
  /** The Accept header sent. */
  accept?: string
  /** Media types accepted in the answer's Content-Type (parameters ignored); absent: any. */
  mediaTypes?: readonly string[]
  /** Aborts the request early (the service is closing); reported as a deadline. */
  signal?: AbortSignal
  /** The resolver behind the connect-time address check (tests inject one; default node:dns lookup). */
  resolve?: Resolver
}

export interface OutboundResponse {
  body: Buffer
  /** The answer's media type, lower case, without parameters. */
  mediaType: string | undefined
  /** The answer's Cache-Control header, for a caller that caches (RFC 9111 §5.2). */
  cacheControl: string | undefined
}

/** The HTTP client, loaded at the first outbound request (most deployments read only their own lists). */
const undici = lazyRequire<typeof import('undici')>('undici')

/** Keep-alive agents per policy, each resolving through the guarded lookup; made at first use. */
const agents = new Map<TargetPolicy, Agent>()

function agentFor(policy: TargetPolicy, resolve: Resolver | undefined): Agent {
  const make = () =>
    new (undici().Agent)({
      connections: CONNECTIONS_PER_ORIGIN,
      // undici hands `lookup` to net.connect / tls.connect: every address of the name is judged at
      // connect time, for every new connection (DNS rebinding).
      connect: { lookup: guardedLookup(policy, resolve) },
    })
  if (resolve) return make()
  let agent = agents.get(policy)
  if (!agent) {
    agent = make()
    agents.set(policy, agent)
  }
  return agent
}

/**
 * scheme://host:port of `url`, with the port even when it is the scheme's default: what an error may say
 * about a URL someone else chose. Undefined when `url` is no URL.
 */
export function originOf(url: URL | string): string | undefined {
  let parsed: URL
  try {
    parsed = typeof url === 'string' ? new URL(url) : url
  } catch {
    return undefined
  }
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : parsed.protocol === 'http:' ? '80' : '')
  return `${parsed.protocol}//${parsed.hostname}${port && `:${port}`}`
}

/** undici's own timers: they are set to the deadline, so whichever fires first, the deadline passed. */
const UNDICI_TIMEOUTS = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
])
const timedOut = (error: unknown) => UNDICI_TIMEOUTS.has((error as { code?: string } | undefined)?.code ?? '')

/** The URL checks, before any connection: scheme, userinfo, IP literals and local names. */
function judgeUrl(url: string, policy: TargetPolicy): URL {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new OutboundError('url', undefined, 'is not an absolute URL')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new OutboundError('url', undefined, 'does not use http or https')
  }
  const origin = originOf(parsed)
  if (parsed.username || parsed.password) {
    throw new OutboundError('url', origin, 'carries credentials (userinfo), which are never sent')
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '')
  // An IP literal never goes through the lookup, so it is judged here (the URL parser has already
  // normalised 2130706433, 0x7f.1 and 127.1 to 127.0.0.1).
  const range = isIP(host)
    ? forbiddenRange(host, policy)
    : isLocalName(host) && policy !== 'test'
      ? 'loopback'
      : undefined
  if (range) throw new OutboundError('address', origin, refusal(range))
  return parsed
}

const refusal = (range: string) =>
  `is a ${range} address, which the service does not fetch from${range === 'loopback' ? ' (allowed only with webhooks.mode "test")' : ''}`

/** The connect-time refusal, wherever undici put it (the error itself or its cause). */
function forbiddenIn(error: unknown): ForbiddenTargetError | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof ForbiddenTargetError || (e as { code?: string }).code === 'EFORBIDDENTARGET')
      return e as ForbiddenTargetError
  }
  return undefined
}

/**
 * GET `url` under the outbound policy; resolves with the 200 answer's body, or throws an OutboundError
 * naming the failed check and the URL's origin.
 */
export async function fetchOutbound(url: string, options: OutboundOptions): Promise<OutboundResponse> {
  const target = judgeUrl(url, options.policy)
  const origin = originOf(target) as string
  const deadlineMs = options.deadlineMs ?? OUTBOUND_DEADLINE_MS
  const maxBytes = options.maxBytes ?? OUTBOUND_MAX_BYTES
  const deadline = new AbortController()
  let expired = false
  const timer = setTimeout(() => {
    expired = true
    deadline.abort()
  }, deadlineMs)
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal
  const dispatcher = agentFor(options.policy, options.resolve)
  const late = () =>
    new OutboundError(
      'deadline',
      origin,
      // undici's own timers (set to the deadline) may fire a moment before ours
      expired || !options.signal?.aborted
        ? `did not answer completely within ${deadlineMs} ms`
        : 'was abandoned (the service is closing)',
    )
  try {
    let response: Awaited<ReturnType<ReturnType<typeof undici>['request']>>
    try {
      response = await undici().request(target, {
        method: 'GET',
        dispatcher,
        signal,
        headers: options.accept ? { accept: options.accept } : {},
        // the deadline above bounds the whole exchange; these only make undici give up no later than it
        headersTimeout: deadlineMs,
        bodyTimeout: deadlineMs,
      })
    } catch (error) {
      if (forbiddenIn(error)) {
        const range = forbiddenIn(error)?.range ?? 'forbidden'
        throw new OutboundError(
          'address',
          origin,
          `resolves to a ${range} address, which the service does not fetch from`,
        )
      }
      if (signal.aborted || timedOut(error)) throw late()
      throw new OutboundError('connection', origin, 'could not be reached')
    }
    const { statusCode, headers, body } = response
    const refuse = (check: OutboundCheck, detail: string): never => {
      // never read what the target sent beyond the headers; undici reports the destroy as an 'error'
      // event, which must not become an uncaught exception of the service
      body.on('error', () => {})
      body.destroy()
      throw new OutboundError(check, origin, detail)
    }
    if (statusCode >= 300 && statusCode < 400)
      refuse('redirect', 'answered with a redirect, which is never followed')
    if (statusCode !== 200) refuse('status', 'did not answer 200')
    const contentType = headerValue(headers['content-type'])
    const mediaType = contentType?.split(';')[0]?.trim().toLowerCase() || undefined
    if (options.mediaTypes && (!mediaType || !options.mediaTypes.includes(mediaType))) {
      refuse('media-type', `did not answer with ${options.mediaTypes.join(' or ')}`)
    }
    const declared = Number(headerValue(headers['content-length']))
    if (Number.isFinite(declared) && declared > maxBytes)
      refuse('size', `announced a body over ${maxBytes} bytes`)
    const chunks: Buffer[] = []
    let size = 0
    try {
      for await (const chunk of body) {
        size += (chunk as Buffer).length
        if (size > maxBytes) refuse('size', `sent a body over ${maxBytes} bytes`)
        chunks.push(chunk as Buffer)
      }
    } catch (error) {
      if (error instanceof OutboundError) throw error
      if (signal.aborted || timedOut(error)) throw late()
      throw new OutboundError('connection', origin, 'ended its answer early')
    }
    return {
      body: Buffer.concat(chunks, size),
      mediaType,
      cacheControl: headerValue(headers['cache-control']),
    }
  } finally {
    clearTimeout(timer)
    if (options.resolve) void dispatcher.close().catch(() => {})
  }
}

const headerValue = (value: string | string[] | undefined) =>
  Array.isArray(value) ? value.join(', ') : value
