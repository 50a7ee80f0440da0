/**
 * The load generator: a child process (forked by bench/http/http.ts) that runs autocannon on request and
 * sends back a summary. It lives in its own process so the HTTP client and the server under test
 * each get an event loop of their own; they still share the machine's cores.
 *
 * Protocol (IPC): parent → `{ kind: 'run', job }`, child → `{ kind: 'result', result }` or
 * `{ kind: 'failed', message }`. The child exits when the parent disconnects.
 */
import autocannon from 'autocannon'

export interface LoadJob {
  /** Origin, e.g. http://127.0.0.1:40123. */
  origin: string
  method: 'GET' | 'POST'
  /** One path, or several: connection i uses paths[i % paths.length] for its whole run. */
  paths: string[]
  headers: Record<string, string>
  body?: string
  durationSec: number
  connections: number
  /** Every response must carry exactly this status; anything else counts as an error. */
  expectedStatus: number
}

export interface LoadResult {
  /** Completed responses, whatever their status. */
  responses: number
  /** Measured wall time of the run (autocannon's own clock), seconds. */
  durationSec: number
  /** responses / durationSec. */
  reqPerSec: number
  /** Standard deviation of the per-sample request counts, scaled to per second (noise indicator). */
  reqPerSecStddev: number
  samples: number
  /** Responses per `bucketMs` from the start of the run (the last bucket may be partial). */
  series: { bucketMs: number; counts: number[] }
  /** CPU the load generator process used during the run, in cores (1 = one core fully busy). */
  cpuCores: number
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number }
  /** Exact status code → count. */
  statusCounts: Record<string, number>
  /** Responses whose status was not `expectedStatus`. */
  unexpectedStatus: number
  /** Autocannon's own non-2xx count (1xx, 3xx, 4xx, 5xx). */
  non2xx: number
  /** Socket errors (connection refused/reset…), excluding timeouts. */
  socketErrors: number
  timeouts: number
  /** unexpectedStatus + socketErrors + timeouts. */
  errors: number
  /** Up to five distinct error messages, for the report. */
  errorSamples: string[]
}

export type ToLoadgen = { kind: 'run'; job: LoadJob }
export type FromLoadgen = { kind: 'result'; result: LoadResult } | { kind: 'failed'; message: string }

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? 0
}

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits

export function runLoad(job: LoadJob): Promise<LoadResult> {
  // Autocannon ends a run at the first sample tick after `duration`; short runs get short ticks so a
  // 0.5 s smoke run does not silently last a whole second. The headline figure is responses / elapsed,
  // which does not depend on the tick either way.
  const sampleInt = job.durationSec >= 2 ? 1000 : 100
  const latencies: number[] = []
  const statusCounts: Record<string, number> = {}
  const errorSamples = new Set<string>()
  const counts: number[] = []
  let nextPath = 0
  const cpuStart = process.cpuUsage()
  const started = performance.now()

  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: job.origin + (job.paths[0] ?? '/'),
        method: job.method,
        headers: job.headers,
        ...(job.body === undefined ? {} : { body: job.body }),
        connections: job.connections,
        pipelining: 1,
        duration: job.durationSec,
        sampleInt,
        timeout: 10,
        ...(job.paths.length > 1
          ? {
              setupClient: (client: autocannon.Client) => {
                const path = job.paths[nextPath++ % job.paths.length]
                if (path) client.setRequests([{ path }])
              },
            }
          : {}),
      },
      (error, result) => {
        if (error) {
          reject(error instanceof Error ? error : new Error(String(error)))
          return
        }
        const cpu = process.cpuUsage(cpuStart)
        const sorted = Float64Array.from(latencies).sort()
        const responses = latencies.length
        const unexpectedStatus = responses - (statusCounts[String(job.expectedStatus)] ?? 0)
        const socketErrors = result.errors - result.timeouts
        const perSecond = 1000 / sampleInt
        let sum = 0
        for (const x of sorted) sum += x
        resolve({
          responses,
          durationSec: result.duration,
          reqPerSec: round(responses / result.duration, 1),
          reqPerSecStddev: round(result.requests.stddev * perSecond, 1),
          // Present at runtime (autocannon 8) though missing from @types/autocannon 7.
          samples: (result as autocannon.Result & { samples?: number }).samples ?? 0,
          series: { bucketMs: sampleInt, counts: Array.from(counts, (c) => c ?? 0) },
          cpuCores: round((cpu.user + cpu.system) / 1e6 / result.duration, 2),
          latencyMs: {
            mean: round(responses ? sum / responses : 0),
            p50: round(percentile(sorted, 50)),
            p90: round(percentile(sorted, 90)),
            p99: round(percentile(sorted, 99)),
            max: round(sorted.at(-1) ?? 0),
          },
          statusCounts,
          unexpectedStatus,
          non2xx: result.non2xx,
          socketErrors,
          timeouts: result.timeouts,
          errors: unexpectedStatus + socketErrors + result.timeouts,
          errorSamples: [...errorSamples].slice(0, 5),
        })
      },
    )
    // Every response passes through here: its exact status is counted and its latency (hrtime, fractional
    // milliseconds) kept, so percentiles are not rounded to autocannon's whole-millisecond histogram.
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1
      latencies.push(responseTime)
      const bucket = Math.floor((performance.now() - started) / sampleInt)
      counts[bucket] = (counts[bucket] ?? 0) + 1
      if (statusCode !== job.expectedStatus && errorSamples.size < 5) {
        errorSamples.add(`HTTP ${statusCode} (expected ${job.expectedStatus})`)
      }
    })
    instance.on('reqError', (error: unknown) => {
      if (errorSamples.size < 5) errorSamples.add(error instanceof Error ? error.message : String(error))
    })
  })
}

if (process.send) {
  const send = (message: FromLoadgen) => process.send?.(message)
  process.on('message', (message: ToLoadgen) => {
    if (message.kind !== 'run') return
    runLoad(message.job).then(
      (result) => send({ kind: 'result', result }),
      (error: unknown) =>
        send({ kind: 'failed', message: error instanceof Error ? error.message : String(error) }),
    )
  })
  process.on('disconnect', () => process.exit(0))
}
