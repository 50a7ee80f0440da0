// What the harness's wallet said to the target and what the target answered, per case: the evidence of a
// server test's verdict and of its reports. Every request of the wallet goes through `recordingFetch`, which
// also keeps the run to the hosts it was told to contact (the target's, named on the command line or in the
// profile): a target's metadata pointing the wallet anywhere else is refused, not followed.

import { redactPatterns } from '../redact.ts'

/** One HTTP exchange as the reports show it: secrets masked, bodies cut. */
export interface Exchange {
  method: string
  url: string
  /** the request body (form or JSON text), masked and cut; absent for a GET */
  request?: string
  /** the answer's status; 0 when nothing came back (refused host, connection error, timeout) */
  status: number
  /** the answer's body, masked and cut; or why there was none */
  response?: string
  ms: number
}

/** How much of a body a report keeps. */
const BODY_MAX = 1500

const cut = (text: string) =>
  text.length > BODY_MAX ? `${text.slice(0, BODY_MAX)}… (${text.length} chars)` : text

/**
 * The authorization code flow's secrets in a form body, besides what redact.ts masks by name: the code and
 * its PKCE verifier (`code=…&code_verifier=…` of a token request).
 */
const FLOW_SECRETS = /(^|&)(code|code_verifier)=[^&]*/g
export function maskFlowSecrets(form: string): string {
  return form.replace(
    FLOW_SECRETS,
    (_, lead: string, name: string) =>
      `${lead}${name}=[redacted:${name === 'code' ? 'authorization-code' : 'code-verifier'}]`,
  )
}

function bodyText(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string') return body
  if (body instanceof URLSearchParams) return body.toString()
  return '(binary body)'
}

/** An exchange's URL as reports show it: its query masked like a form (an access token may travel there). */
export function maskedUrl(url: string): string {
  return redactPatterns(url)
}

/** A host the run may not contact: the wallet's request never leaves the machine. */
export class HostNotAllowedError extends Error {
  override name = 'HostNotAllowedError'
}

export class ExchangeRecorder {
  private list: Exchange[] = []
  private readonly allowed = new Set<string>()

  /** `hosts`: host[:port] names (lower case) the wallet may contact; empty: any (tests of our own service). */
  constructor(hosts: Iterable<string> = []) {
    for (const host of hosts) this.allow(host)
  }

  allow(host: string): void {
    this.allowed.add(host.toLowerCase())
  }

  isAllowed(url: string): boolean {
    if (this.allowed.size === 0) return true
    const parsed = new URL(url)
    return this.allowed.has(parsed.host.toLowerCase()) || this.allowed.has(parsed.hostname.toLowerCase())
  }

  /** Everything recorded since the last `take()`, and a fresh list. */
  take(): Exchange[] {
    const taken = this.list
    this.list = []
    return taken
  }

  private mutedDepth = 0

  /** Runs `work` without recording (the harness's own set-up, e.g. receiving credentials to present). */
  async muted<T>(work: () => Promise<T>): Promise<T> {
    this.mutedDepth++
    try {
      return await work()
    } finally {
      this.mutedDepth--
    }
  }

  /** A fetch for the wallet (WalletOptions.fetch) that records every exchange and keeps to the allowed hosts. */
  readonly fetch: typeof fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase()
    const sent = bodyText(init?.body)
    const started = Date.now()
    const entry: Exchange = {
      method,
      url: maskedUrl(url),
      ...(sent !== undefined ? { request: cut(maskFlowSecrets(redactPatterns(sent))) } : {}),
      status: 0,
      ms: 0,
    }
    if (this.mutedDepth === 0) this.list.push(entry)
    if (!this.isAllowed(url)) {
      entry.response = `not contacted: ${new URL(url).host} is not a host of the target (name it with --allow-host)`
      throw new HostNotAllowedError(entry.response)
    }
    try {
      const response = await fetch(input, init)
      entry.status = response.status
      entry.ms = Date.now() - started
      // The wallet reads the body itself (bounded); the report reads a copy, cut.
      response
        .clone()
        .text()
        .then(
          (text) => {
            if (text !== '') entry.response = cut(redactPatterns(text))
          },
          () => {},
        )
      return response
    } catch (error) {
      entry.ms = Date.now() - started
      entry.response = `no answer: ${(error as Error).message}`
      throw error
    }
  }
}

/** One line per exchange, for the console and the reports' "observed" lists. */
export function exchangeLine(e: Exchange): string {
  const answer = e.status === 0 ? (e.response ?? 'no answer') : `${e.status}${errorOf(e.response)}`
  return `${e.method} ${e.url} → ${answer}`
}

/** ` invalid_proof` of a JSON error body, for a one-line view. */
function errorOf(body: string | undefined): string {
  if (!body) return ''
  const match = /"error"\s*:\s*"([^"]+)"/.exec(body)
  return match ? ` ${match[1]}` : ''
}
