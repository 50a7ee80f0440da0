// What the flow benchmarks (issuance, verification) and the HTTP bench share: arguments, statistics and
// the machine's CPU counters.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'

/** `--smoke`, `--wallets 1,8`, `--duration 15`, `--out FILE` of a flow benchmark writing `reports/<name>.json`. */
export function flowBenchArgs(name: string, root: string) {
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      wallets: { type: 'string', default: '1,8' },
      duration: { type: 'string', default: '15' },
      out: { type: 'string' },
    },
    strict: true,
  })
  const smoke = values.smoke === true
  const concurrencies = (smoke ? '1,2' : String(values.wallets)).split(',').map(Number)
  if (concurrencies.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error('--wallets must list whole numbers ≥ 1')
  const durationSec = smoke ? 60 : Number(values.duration)
  if (!(durationSec > 0)) throw new Error('--duration must be a number of seconds > 0')
  const out = values.out ?? join(root, 'reports', smoke ? `${name}.smoke.json` : `${name}.json`)
  return { smoke, concurrencies, durationSec, out }
}

export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length
    ? (sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0)
    : 0
}
export const r1 = (x: number) => Math.round(x * 10) / 10
export const r2 = (x: number) => Math.round(x * 100) / 100

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
