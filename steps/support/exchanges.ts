import { request } from 'undici'
import {
  mayHoldSecrets,
  redact,
  redactHeader,
  registerSecretsIn,
  registerSecretsInForm,
  registerSecretsInHeader,
  SECRET_HEADERS,
  type SecretRegistry,
} from '../../src/harness/redact.ts'

// Every HTTP request a scenario makes, with its answer, for the reports: the World's relying-party client
// and the scenario's wallets are handed a recording fetch. Each exchange also teaches the scenario's secret
// registry what it carried (keys the portal handed out, tokens, pre-authorized codes, tx_codes, webhook
// secrets), so redact() masks them wherever they reappear. Rendering redacts and trims the bodies; the
// exchanges are kept whole in memory for the scenario's cleanup (cleanup.ts). docs/conformance-exchanges.md.

type FetchLike = typeof fetch

/** The fetch of this process before recordGlobalFetch() wrapped it: what recording fetches send through. */
let nativeFetch: FetchLike = globalThis.fetch

/** A fetch that records nothing (the cleanup's requests are not the scenario's). */
export const unrecordedFetch: FetchLike = (input, init) => nativeFetch(input, init)

/**
 * Records the requests made with the global fetch into the current scenario's log (`current()`), as the
 * wallet's: the OpenID4VCI 1.0 library the wallet drives sends its requests with it. Returns the undo.
 */
export function recordGlobalFetch(current: () => ExchangeLog | undefined): () => void {
  const original = globalThis.fetch
  nativeFetch = original
  const recording = ((input: string | URL | Request, init?: RequestInit) => {
    const log = current()
    return log ? log.fetch('wallet')(input, init) : original(input, init)
  }) as FetchLike
  globalThis.fetch = recording
  return () => {
    if (globalThis.fetch === recording) globalThis.fetch = original
  }
}

/** Who sent the request. */
export type ExchangeSource = 'relying party' | 'wallet'

export interface Exchange {
  /** 1-based, in the order the requests were sent. */
  n: number
  source: ExchangeSource
  method: string
  url: string
  requestHeaders: [string, string][]
  requestBody?: string
  /** Absent when no answer came (a network error). */
  status?: number
  responseHeaders: [string, string][]
  responseBody?: string
  /** The network error, when the request got no answer. */
  error?: string
  /** Milliseconds from the first exchange of the scenario; and how long this one took. */
  at: number
  ms: number
}

/** Bodies in the reports are cut after this many characters. */
export const BODY_LIMIT = 4096
/** Characters past the cut that are redacted too, so a secret across the cut is still recognised. */
const REDACT_MARGIN = 2048
/** A scenario that makes more requests keeps the first and the last ones (half each). */
export const EXCHANGE_LIMIT = 400

/** Answer headers that say nothing about a requirement (left out of the reports to keep them small). */
const QUIET_HEADERS = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'x-content-type-options',
  'vary',
])

const bodyText = (body: unknown): string | undefined => {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string') return body
  if (body instanceof URLSearchParams) return body.toString()
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body))
    return `(${body.byteLength} bytes of binary data)`
  return `(a ${(body as object).constructor?.name ?? typeof body} body)`
}

/** A network error as people read it: the cause's code and message (`fetch failed` alone says nothing). */
export function describeNetworkError(error: unknown): string {
  const e = error as { message?: string; cause?: { code?: string; message?: string } }
  const cause = e.cause
  if (cause && (cause.code || cause.message)) {
    return [cause.code, cause.message].filter(Boolean).join(': ')
  }
  return e.message ?? String(error)
}

const DECODER = new TextDecoder()

const isText = (contentType: string | null) =>
  contentType === null || /^text\/|json|xml|x-www-form-urlencoded|jwt|javascript/i.test(contentType)

export class ExchangeLog {
  readonly exchanges: Exchange[] = []
  private readonly answers = new WeakMap<Headers, Exchange>()
  private started: number | undefined
  /** How many exchanges were left out of `exchanges` (beyond EXCHANGE_LIMIT). */
  dropped = 0

  constructor(
    readonly secrets: SecretRegistry,
    private readonly base: FetchLike = unrecordedFetch,
  ) {}

  /**
   * A fetch that records each exchange as `source` made it. The answer is handed back as it came; its body
   * is recorded when the caller reads it (text, json, arrayBuffer, also of a clone): reading it here and
   * building a new Response would cost every request of the suite twice.
   */
  fetch(source: ExchangeSource): FetchLike {
    return (async (input: string | URL | Request, init?: RequestInit) => {
      const exchange = this.begin(source, input, init)
      const started = performance.now()
      let response: Response
      try {
        response = await this.base(input, init)
      } catch (error) {
        exchange.error = describeNetworkError(error)
        exchange.ms = Math.round(performance.now() - started)
        throw error
      }
      exchange.ms = Math.round(performance.now() - started)
      this.answered(exchange, response.status, response.headers)
      return this.capture(response, exchange)
    }) as FetchLike
  }

  /**
   * For the wallet's own requests (WalletOptions.fetch): undici.request, which the wallet uses when given no
   * fetch (it follows no redirect, and costs a fraction of fetch), answered as the little of a Response
   * the wallet reads (src/wallet/http.ts: status, headers, text).
   */
  walletFetch(): FetchLike {
    return (async (input: string | URL | Request, init?: RequestInit) => {
      const exchange = this.begin('wallet', input, init)
      const started = performance.now()
      let answer: Awaited<ReturnType<typeof request>>
      try {
        answer = await request(exchange.url, {
          method: exchange.method as 'GET',
          headers: Object.fromEntries(exchange.requestHeaders),
          ...(typeof init?.body === 'string' ? { body: init.body } : {}),
        })
      } catch (error) {
        exchange.error = describeNetworkError(error)
        exchange.ms = Math.round(performance.now() - started)
        throw error
      }
      const headers = new Headers()
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value === undefined) continue
        for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
      }
      const text = await answer.body.text()
      exchange.ms = Math.round(performance.now() - started)
      this.answered(exchange, answer.statusCode, headers)
      this.recordBody(exchange, text, headers.get('content-type'))
      const status = answer.statusCode
      return {
        status,
        statusText: '',
        ok: status >= 200 && status < 300,
        headers,
        text: async () => text,
        json: async () => JSON.parse(text),
        arrayBuffer: async () => new TextEncoder().encode(text).buffer,
      } as unknown as Response
    }) as FetchLike
  }

  /** Records a request as it leaves. */
  private begin(source: ExchangeSource, input: string | URL | Request, init?: RequestInit): Exchange {
    const request = input instanceof Request ? input : undefined
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    const headers = new Headers(init?.headers ?? request?.headers)
    const requestBody = bodyText(init?.body)
    const now = performance.now()
    this.started ??= now
    const exchange: Exchange = {
      n: this.exchanges.length + this.dropped + 1,
      source,
      method: (init?.method ?? request?.method ?? 'GET').toUpperCase(),
      url,
      requestHeaders: [...headers],
      ...(requestBody !== undefined ? { requestBody } : {}),
      responseHeaders: [],
      at: Math.round(now - this.started),
      ms: 0,
    }
    this.keep(exchange)
    this.learnRequest(exchange, headers)
    return exchange
  }

  private answered(exchange: Exchange, status: number, headers: Headers) {
    exchange.status = status
    exchange.responseHeaders = [...headers]
    for (const [name, value] of exchange.responseHeaders) registerSecretsInHeader(name, value, this.secrets)
    this.answers.set(headers, exchange)
  }

  /** Records an answer's body (the first reading of it), and what secrets it carries. */
  private recordBody(exchange: Exchange, text: string, type: string | null) {
    if (exchange.responseBody !== undefined || text.length === 0) return
    exchange.responseBody = text
    this.learnResponse(text, type)
  }

  /** The response, its body-reading methods (and its clones') recording what they read. */
  private capture(response: Response, exchange: Exchange): Response {
    const type = response.headers.get('content-type')
    const readText = response.text
    const readBytes = response.arrayBuffer
    const clone = response.clone
    Object.assign(response, {
      text: async () => {
        const text = await readText.call(response)
        this.recordBody(exchange, text, type)
        return text
      },
      json: async () => {
        const text = await readText.call(response)
        this.recordBody(exchange, text, type)
        return JSON.parse(text)
      },
      arrayBuffer: async () => {
        const bytes = await readBytes.call(response)
        this.recordBody(
          exchange,
          isText(type) ? DECODER.decode(bytes) : `(${bytes.byteLength} bytes of ${type})`,
          type,
        )
        return bytes
      },
      clone: () => this.capture(clone.call(response), exchange),
    })
    return response
  }

  private keep(exchange: Exchange) {
    if (this.exchanges.length >= EXCHANGE_LIMIT) {
      // Keep the first half; drop the oldest of the second half.
      this.exchanges.splice(EXCHANGE_LIMIT / 2, 1)
      this.dropped++
    }
    this.exchanges.push(exchange)
  }

  private learnRequest(exchange: Exchange, headers: Headers) {
    const secrets = this.secrets
    for (const [name, value] of headers) registerSecretsInHeader(name, value, secrets)
    const query = exchange.url.indexOf('?')
    if (query >= 0) registerSecretsInForm(exchange.url.slice(query + 1), secrets)
    const body = exchange.requestBody
    if (body === undefined) return
    const type = headers.get('content-type') ?? ''
    if (/json/.test(type) || /^\s*[{[]/.test(body)) {
      if (!mayHoldSecrets(body)) return
      try {
        registerSecretsIn(JSON.parse(body), secrets)
      } catch {}
    } else {
      registerSecretsInForm(body, secrets)
    }
  }

  private learnResponse(body: string, type: string | null) {
    if ((/json/.test(type ?? '') || /^\s*[{[]/.test(body)) && mayHoldSecrets(body)) {
      try {
        registerSecretsIn(JSON.parse(body), this.secrets)
      } catch {}
    }
    // A deep link or a redirect may carry a code in its query.
    if (body.includes('_code=')) {
      for (const match of body.matchAll(/[?&](?:pre-authorized_code|tx_code)=[^&\s"']+/g)) {
        registerSecretsInForm(match[0].slice(1), this.secrets)
      }
    }
  }

  /** The exchange whose answer a relying-party client returned (ApiResponse.headers is its Headers). */
  exchangeOf(headers: Headers | undefined): Exchange | undefined {
    return headers ? this.answers.get(headers) : undefined
  }

  get last(): Exchange | undefined {
    return this.exchanges.at(-1)
  }

  /** One line: `#3 wallet POST http://…/token → 400 (12 ms)`, redacted. */
  headline(exchange: Exchange): string {
    return redact(this.rawHeadline(exchange), this.secrets)
  }

  private rawHeadline(exchange: Exchange): string {
    const outcome =
      exchange.status !== undefined ? `→ ${exchange.status}` : `→ no answer: ${exchange.error ?? 'pending'}`
    return `#${exchange.n} ${exchange.source}: ${exchange.method} ${exchange.url} ${outcome} (${exchange.ms} ms)`
  }

  /** The exchange as text, redacted, bodies cut at BODY_LIMIT. */
  render(exchange: Exchange): string {
    // Credential headers masked by name; the rest redacted in one pass with the headline.
    const head = [this.rawHeadline(exchange)]
    for (const [name, value] of exchange.requestHeaders) head.push(`> ${name}: ${maskHeader(name, value)}`)
    const parts = [redact(head.join('\n'), this.secrets)]
    if (exchange.requestBody !== undefined) parts.push('>', indent('> ', this.body(exchange.requestBody)))
    if (exchange.status !== undefined) {
      const answer: string[] = []
      for (const [name, value] of exchange.responseHeaders) {
        if (!QUIET_HEADERS.has(name)) answer.push(`< ${name}: ${maskHeader(name, value)}`)
      }
      if (answer.length > 0) parts.push(redact(answer.join('\n'), this.secrets))
      if (exchange.responseBody !== undefined) parts.push('<', indent('< ', this.body(exchange.responseBody)))
    }
    return parts.join('\n')
  }

  private body(text: string): string {
    // Redacted, then cut: a secret is never cut in half before it is recognised. Only the part shown and a
    // margin longer than any secret is redacted (a status list or a credential may be far longer).
    const clean = redact(
      text.length > BODY_LIMIT + REDACT_MARGIN ? text.slice(0, BODY_LIMIT + REDACT_MARGIN) : text,
      this.secrets,
    )
    return clean.length > BODY_LIMIT || text.length > BODY_LIMIT + REDACT_MARGIN
      ? `${clean.slice(0, BODY_LIMIT)}… (cut: ${text.length} characters in all)`
      : clean
  }

  /** Every exchange of the scenario as one text, for the reports. */
  transcript(): string {
    const count = this.exchanges.length + this.dropped
    const head = [
      `${count} HTTP exchange${count === 1 ? '' : 's'} of this scenario, in the order sent ` +
        `(secrets redacted; bodies cut after ${BODY_LIMIT} characters).`,
      "Recorded: the relying-party client's requests and every request of the wallet (offer, metadata, " +
        'token, nonce, credential, deferred, notification, status lists, OpenID4VP requests and responses). ' +
        'Each step also carries the exchanges it made.',
    ]
    const parts = this.exchanges.map((e) => this.render(e))
    if (this.dropped > 0) {
      parts.splice(EXCHANGE_LIMIT / 2, 0, `… ${this.dropped} exchanges left out …`)
    }
    return [head.join('\n'), ...parts].join('\n\n')
  }
}

const indent = (prefix: string, text: string) => prefix + text.replaceAll('\n', `\n${prefix}`)

/** A credential header's value with its scheme kept; any other header as it is (redacted afterwards). */
const maskHeader = (name: string, value: string) =>
  SECRET_HEADERS[name.toLowerCase()] ? redactHeader(name, value) : value
