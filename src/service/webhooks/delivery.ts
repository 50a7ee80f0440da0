import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import { performance } from 'node:perf_hooks'
import { forbiddenAddress, guardedLookup, type TargetPolicy } from '../util/net-targets.ts'

// One HTTP attempt of a webhook delivery: POST, no redirects followed, a hard deadline, the target's
// addresses checked at connect time, and only the first bytes of the answer kept for the log.

export interface AttemptResult {
  /** The receiver's status, or null when none came. */
  status: number | null
  /** Retry-After of the answer, in ms from now. */
  retryAfterMs?: number
  /** Why no (acceptable) answer came: timeout, connection error, forbidden target. */
  error?: string
  /** The target itself is refused (private address): retrying cannot help. */
  forbidden?: boolean
  durationMs: number
}

const LOG_BODY_BYTES = 256

/** Keep-alive agents shared by all deliveries: receivers usually get many events. */
export class DeliveryAgents {
  readonly http = new http.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 16 })
  readonly https = new https.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 16 })
  destroy() {
    this.http.destroy()
    this.https.destroy()
  }
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)'
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)'
const TIME = '\\d{2}:\\d{2}:\\d{2}'
/** The HTTP-date forms of RFC 9110 section 5.6.7 that carry their zone: IMF-fixdate and (obsolete) RFC 850. */
const ZONED_DATE = new RegExp(
  `^(?:${DAY}, \\d{2} ${MONTH} \\d{4}|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, \\d{2}-${MONTH}-\\d{2}) ${TIME} GMT$`,
)
/** The obsolete asctime form, which is in GMT without saying so. */
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4}$`)

/** Retry-After as delta-seconds or an HTTP date, in ms from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined || value.trim() === '') return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  // Only real HTTP dates: Date.parse alone reads junk such as "1.5" or "-5" as some date and the retry
  // would then go out at once instead of after the backoff.
  let date = Number.NaN
  if (ZONED_DATE.test(text)) date = Date.parse(text)
  else if (ASCTIME_DATE.test(text)) date = Date.parse(`${text} GMT`)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

export function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; policy: TargetPolicy; agents: DeliveryAgents; signal?: AbortSignal },
): Promise<AttemptResult> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const target = new URL(url)
  const host = target.hostname.replace(/^\[|\]$/g, '')
  // An IP literal never goes through lookup, so it is judged here.
  if (isIP(host)) {
    const reason = forbiddenAddress(host, options.policy)
    if (reason)
      return Promise.resolve({
        status: null,
        error: `target refused: ${reason}`,
        forbidden: true,
        durationMs: 0,
      })
  }
  const secure = target.protocol === 'https:'
  return new Promise((resolve) => {
    let settled = false
    const finish = (result: Omit<AttemptResult, 'durationMs'>) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resolve({ ...result, durationMs: elapsed() })
    }
    const request = (secure ? https : http).request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: secure ? options.agents.https : options.agents.http,
        lookup: guardedLookup(options.policy),
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (response) => {
        const status = response.statusCode ?? 0
        const retryAfterMs = parseRetryAfter(response.headers['retry-after'], Date.now())
        // Drain a little (keeps the socket reusable for small answers), never buffer a large one.
        let seen = 0
        response.on('data', (chunk: Buffer) => {
          seen += chunk.length
          if (seen > LOG_BODY_BYTES * 16) response.destroy()
        })
        const done = () => finish({ status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) })
        response.on('error', done)
        response.on('end', done)
        response.on('close', done)
        response.resume()
      },
    )
    const deadline = setTimeout(() => {
      finish({ status: null, error: `timeout: no answer within ${options.timeoutMs} ms` })
      request.destroy()
    }, options.timeoutMs)
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.name === 'ForbiddenTargetError') {
        finish({ status: null, error: `target refused: ${error.message}`, forbidden: true })
      } else if (error.name === 'AbortError') {
        finish({ status: null, error: 'aborted: the service is shutting down' })
      } else {
        finish({ status: null, error: `connection error: ${error.code ?? error.message}` })
      }
    })
    request.end(body)
  })
}
