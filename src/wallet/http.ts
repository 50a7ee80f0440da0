// Every HTTP request of the simulated wallet goes through here, within the same three rules, whoever sends it
// (the wallet itself, or a protocol library handed boundedFetch): a total deadline (connect, headers and
// the whole body), a cap on the body it reads, and no redirects. QA points the wallet at untrusted issuers
// and verifiers: without them a verifier that accepts the connection and never answers holds the wallet
// forever, and a 128 MiB request object is read whole before any check of its length can run.
//
// Transport: undici.request by default (a fraction of the CPU of fetch; it follows no redirect), or a
// caller-supplied fetch (WalletOptions.fetch), asked with `redirect: 'manual'` and read as a stream with the
// cap instead of `response.text()`. A fetch whose Response has no body stream (a recording test double) is
// read with `text()` and the cap is checked afterwards: the caller chose that transport.

import { request } from 'undici'
import { FORM_MEDIA_TYPE } from '../shared/wire.ts'

export type FetchLike = typeof fetch

/** The bounds of one HTTP request of the wallet (WalletOptions.http, CLI --http-timeout / --http-max-body). */
export interface HttpLimits {
  /** total deadline of one request, ms: connecting, the answer's headers and its whole body */
  timeoutMs: number
  /** the most bytes of an answer's body the wallet reads; a longer (or longer declared) body ends the request */
  maxBodyBytes: number
}

/**
 * 30 s: a deployment answers in milliseconds, but the deadline is wall-clock time and the wallet often shares
 * its process and two cores with the service under test and a parallel suite (an offer GET on loopback took
 * over 10 s in test/wallet/receive.test.ts at a load of 4); a peer silent for 30 s is not going to answer, and a
 * silent one now costs half a minute instead of forever. 1 MiB: the largest honest answer the wallet reads (a
 * request object with an x5c chain, issuer metadata with display data, a status list of 2^17 entries, a
 * credential with its disclosures) is a few KiB to a few hundred KiB; a body past it is not read at all.
 */
export const DEFAULT_HTTP_LIMITS: Readonly<HttpLimits> = { timeoutMs: 30_000, maxBodyBytes: 1024 * 1024 }

/** How the wallet speaks HTTP: a caller's fetch (else undici.request), within its limits. */
export interface WalletHttp extends HttpLimits {
  fetch?: FetchLike | undefined
}

export interface HttpAnswer {
  status: number
  headers: Record<string, string>
  text: string
  /** parsed JSON when the body is JSON, else the text (undefined when empty) */
  body: unknown
}

export interface HttpRequest {
  method: 'GET' | 'POST'
  json?: unknown
  form?: Record<string, string>
  bearer?: string
  /**
   * further request headers (lower-case names), set last: DPoP (RFC 9449 §4.1), `Authorization: DPoP …`
   * (§7.1), OAuth-Client-Attestation and its PoP (draft-ietf-oauth-attestation-based-client-auth-07 §6.1)
   */
  headers?: Record<string, string>
  /** Accept header; default application/json */
  accept?: string
  /**
   * 'error' (default): a 3xx answer is an HttpLimitError naming it and nothing is followed; 'manual': the 3xx
   * comes back as an answer for the caller to judge. The wallet never follows a redirect itself.
   */
  redirect?: 'error' | 'manual'
}

export type HttpLimitKind = 'timeout' | 'body_too_large' | 'redirect'

/**
 * An answer the wallet stopped reading (or never got) because of one of its HTTP rules. The message names
 * the rule, its limit and the URL's origin only (a path or query can carry a code or a session id).
 */
export class HttpLimitError extends Error {
  override name = 'HttpLimitError'
  constructor(
    readonly kind: HttpLimitKind,
    /** the origin of the URL asked */
    readonly origin: string,
    message: string,
    /** the 3xx of a refused redirect; 0 otherwise */
    readonly status = 0,
    /** how many body bytes were read before the wallet stopped */
    readonly bytesRead = 0,
  ) {
    super(message)
  }
}

/** A wallet's limits, filled in from the defaults; a limit that is not a positive number is refused. */
export function httpLimits(given: Partial<HttpLimits> | undefined): HttpLimits {
  const limits = { ...DEFAULT_HTTP_LIMITS, ...given }
  for (const name of ['timeoutMs', 'maxBodyBytes'] as const) {
    const value = limits[name]
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new RangeError(`http.${name} must be a positive number, got ${String(value)}`)
    }
  }
  return { timeoutMs: limits.timeoutMs, maxBodyBytes: Math.floor(limits.maxBodyBytes) }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin
  } catch {
    return '(not a URL)'
  }
}

const isRedirect = (status: number) => status >= 300 && status < 400

function timeoutError(method: string, url: string, timeoutMs: number): HttpLimitError {
  const origin = originOf(url)
  return new HttpLimitError(
    'timeout',
    origin,
    `${method} ${origin} gave no complete answer within ${timeoutMs} ms, the wallet's deadline for one request (connect, headers and body; WalletOptions.http.timeoutMs, CLI --http-timeout)`,
  )
}

function tooLargeError(
  method: string,
  url: string,
  maxBodyBytes: number,
  bytesRead: number,
  declared?: number,
): HttpLimitError {
  const origin = originOf(url)
  const what =
    declared !== undefined
      ? `declares a body of ${declared} bytes (content-length); nothing of it was read`
      : `sent more than that; the wallet stopped reading after ${bytesRead} bytes and closed the connection`
  return new HttpLimitError(
    'body_too_large',
    origin,
    `${method} ${origin}: the answer's body is larger than ${maxBodyBytes} bytes, the wallet's cap for one answer (WalletOptions.http.maxBodyBytes, CLI --http-max-body): it ${what}`,
    0,
    bytesRead,
  )
}

function redirectError(method: string, url: string, status: number, location: string | null): HttpLimitError {
  const origin = originOf(url)
  const target = location ? ` to ${originOf(new URL(location, url).href)}` : ''
  return new HttpLimitError(
    'redirect',
    origin,
    // RFC 9110 §15.4 leaves following a redirect to the client; followed, it would send the same request
    // (a pre-authorized code, an access token, a proof, a presentation) to an origin nobody named
    `${method} ${origin} answered ${status}, a redirect${target}: the wallet follows no redirects (RFC 9110 §15.4; OpenID4VP 1.0 §14.8), so nothing was sent there`,
    status,
  )
}

/**
 * Runs `work` within the deadline: its signal is aborted and the call rejects with the timeout error when
 * the deadline passes, whether or not the transport honours the signal.
 */
async function withDeadline<T>(
  limits: HttpLimits,
  method: string,
  url: string,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = timeoutError(method, url, limits.timeoutMs)
      reject(error)
      controller.abort(error)
    }, limits.timeoutMs)
  })
  const running = work(controller.signal)
  running.catch(() => {}) // after the deadline its rejection is the abort's, already reported
  try {
    return await Promise.race([running, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/** The body of a fetch Response, read up to the cap (the stream is cancelled past it). */
async function readFetchBody(
  response: Response,
  method: string,
  url: string,
  cap: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  if (Number.isFinite(declared) && declared > cap) {
    await response.body?.cancel().catch(() => {})
    throw tooLargeError(method, url, cap, 0, declared)
  }
  if (!response.body) {
    // a Response-like without a stream (a caller's recording double): its text is all there is to read
    const bytes = new TextEncoder().encode(typeof response.text === 'function' ? await response.text() : '')
    if (bytes.byteLength > cap) throw tooLargeError(method, url, cap, bytes.byteLength)
    return bytes
  }
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > cap) {
      await reader.cancel().catch(() => {})
      throw tooLargeError(method, url, cap, total)
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return bytes
}

/** Statuses whose Response must have a null body (Fetch standard). */
const NULL_BODY = new Set([101, 103, 204, 205, 304])

/**
 * A fetch for the protocol libraries that take one (@openid4vc/* on the OpenID4VCI 1.0 path): the wallet's
 * transport (its `fetch`, else the global fetch) within its deadline, cap and no-redirect rule. The body is
 * read whole (capped) within the deadline and handed back as a fresh Response, so the library's own reads
 * (text, json, clone) cost nothing more.
 */
export function boundedFetch(http: WalletHttp): FetchLike {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input)
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase()
    const base = http.fetch ?? globalThis.fetch
    return withDeadline(http, method, url, async (signal) => {
      const response = await base(input, {
        ...init,
        signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal,
        redirect: 'manual',
      })
      if (isRedirect(response.status)) {
        await response.body?.cancel().catch(() => {})
        throw redirectError(method, url, response.status, response.headers.get('location'))
      }
      const bytes = await readFetchBody(response, method, url, http.maxBodyBytes)
      return new Response(NULL_BODY.has(response.status) ? null : bytes, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      })
    })
  }) as FetchLike
}

function parseBody(text: string, contentType: string | undefined): unknown {
  if (text.length === 0) return undefined
  if (contentType?.includes('json') || /^\s*[{[]/.test(text)) {
    try {
      return JSON.parse(text)
    } catch {}
  }
  return text
}

const DECODER = new TextDecoder()

/**
 * One request of the wallet, within `http`'s deadline and body cap; a 3xx is an HttpLimitError unless
 * `req.redirect` is 'manual'. Network failures reject as the transport reports them.
 */
export async function httpRequest(url: string, req: HttpRequest, http: WalletHttp): Promise<HttpAnswer> {
  const headers: Record<string, string> = { accept: req.accept ?? 'application/json' }
  let body: string | undefined
  if (req.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(req.json)
  } else if (req.form !== undefined) {
    headers['content-type'] = FORM_MEDIA_TYPE
    body = new URLSearchParams(req.form).toString()
  }
  if (req.bearer) headers.authorization = `Bearer ${req.bearer}`
  for (const [name, value] of Object.entries(req.headers ?? {})) headers[name.toLowerCase()] = value
  const cap = http.maxBodyBytes

  const answer = await withDeadline(http, req.method, url, async (signal) => {
    if (http.fetch) {
      const response = await http.fetch(url, {
        method: req.method,
        headers,
        ...(body !== undefined && { body }),
        redirect: 'manual',
        signal,
      })
      const flat: Record<string, string> = {}
      response.headers.forEach((value, key) => {
        flat[key] = value
      })
      if (isRedirect(response.status) && req.redirect !== 'manual') {
        await response.body?.cancel().catch(() => {})
        throw redirectError(req.method, url, response.status, flat.location ?? null)
      }
      const bytes = await readFetchBody(response, req.method, url, cap)
      return { status: response.status, headers: flat, text: DECODER.decode(bytes) }
    }
    const response = await request(url, {
      method: req.method,
      headers,
      ...(body !== undefined && { body }),
      signal,
    })
    const flat: Record<string, string> = {}
    for (const [key, value] of Object.entries(response.headers)) {
      if (value !== undefined) flat[key] = Array.isArray(value) ? value.join(', ') : value
    }
    // destroying an unread body aborts the request (undici closes the connection); the stream then reports
    // the abort as an 'error' event, which is expected here and must not become an uncaught exception
    const hangUp = () => {
      response.body.on('error', () => {})
      response.body.destroy()
    }
    if (isRedirect(response.statusCode) && req.redirect !== 'manual') {
      hangUp()
      throw redirectError(req.method, url, response.statusCode, flat.location ?? null)
    }
    const declared = Number(flat['content-length'] ?? Number.NaN)
    if (Number.isFinite(declared) && declared > cap) {
      hangUp()
      throw tooLargeError(req.method, url, cap, 0, declared)
    }
    const chunks: Buffer[] = []
    let total = 0
    for await (const chunk of response.body) {
      const piece = chunk as Buffer
      total += piece.byteLength
      if (total > cap) {
        hangUp() // nothing more is read
        throw tooLargeError(req.method, url, cap, total)
      }
      chunks.push(piece)
    }
    return { status: response.statusCode, headers: flat, text: DECODER.decode(Buffer.concat(chunks)) }
  })
  return { ...answer, body: parseBody(answer.text, answer.headers['content-type']) }
}
