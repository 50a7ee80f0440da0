// Figures shared by every benchmark: percentiles, rounding and the machine's CPU counters.

import { readFileSync } from 'node:fs'

/** Nearest-rank percentile (p in 0–100) of unsorted values; 0 for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0
  const sorted = Float64Array.from(values).sort()
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0
}

export const r1 = (x: number) => Math.round(x * 10) / 10
export const r2 = (x: number) => Math.round(x * 100) / 100

/** p50 / p95 / p99 in ms, rounded. */
export function latency(values: readonly number[]) {
  return { p50: r2(percentile(values, 50)), p95: r2(percentile(values, 95)), p99: r2(percentile(values, 99)) }
}

// /proc/stat counts in USER_HZ ticks: 100 per second on mainstream Linux builds (x86-64, arm64).
const USER_HZ = 100

/** Busy and steal seconds of the whole machine so far (Linux; null elsewhere). */
export function readProcStat(): { busy: number; steal: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
    const [label, ...fields] = line.trim().split(/\s+/)
    if (label !== 'cpu') return null
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields.map(Number)
    return { busy: (user + nice + system + irq + softirq) / USER_HZ, steal: steal / USER_HZ }
  } catch {
    return null
  }
}
