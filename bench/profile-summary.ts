/**
 * Summarises V8 CPU profiles (`vc-harness bench --cpu-prof DIR`, or any `node --cpu-prof` output): self
 * time by function and by package, and inclusive time of our own source files, so a hot spot can be
 * named without opening a flame graph.
 *
 *   node --import tsx bench/profile-summary.ts DIR_OR_FILE [--top 30] [--from 6]
 *
 * `--from S` drops the samples of the first S seconds (start-up, module loading, warm-up), so the shares are
 * those of the steady state the bench measures.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '30' }, from: { type: 'string', default: '0' } },
})
const top = Number(values.top)
const fromUs = Number(values.from) * 1e6
const target = positionals[0]
if (!target) {
  console.error('usage: bench/profile-summary.ts DIR_OR_FILE [--top N] [--from SECONDS]')
  process.exit(2)
}
const files = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => join(target, f))
  : [target]

/** `node_modules/<pkg>` (scoped too), our `src/<dir>`, node internals, or the V8 pseudo-frames. */
function where(url: string, name: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1] as string
  const own = /\/(src|bench)\/(.+?)\.ts/.exec(url)
  if (own) return `${own[1]}/${own[2]}`
  if (url.startsWith('node:')) return url
  return url === '' ? `(${name || 'native'})` : url
}

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const self = new Map<number, number>()
  let total = 0
  let elapsed = 0
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0
    elapsed += dt
    if (elapsed < fromUs) return
    self.set(id, (self.get(id) ?? 0) + dt)
    total += dt
  })
  const fnSelf = new Map<string, number>()
  const pkgSelf = new Map<string, number>()
  const ownInclusive = new Map<string, number>()
  for (const [id, us] of self) {
    const node = byId.get(id)
    if (!node) continue
    const { functionName, url, lineNumber } = node.callFrame
    const place = where(url, functionName)
    const key = `${functionName || '(anonymous)'}  ${place}:${lineNumber + 1}`
    fnSelf.set(key, (fnSelf.get(key) ?? 0) + us)
    pkgSelf.set(
      place.startsWith('src/') ? 'src (ours)' : place,
      (pkgSelf.get(place.startsWith('src/') ? 'src (ours)' : place) ?? 0) + us,
    )
    // Inclusive time of each of our files: count a sample once per distinct own file on its stack.
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame
      if (!frame) break
      const p = where(frame.url, frame.functionName)
      if (p.startsWith('src/') && !seen.has(p)) {
        seen.add(p)
        ownInclusive.set(p, (ownInclusive.get(p) ?? 0) + us)
      }
    }
  }
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)} %`
  const list = (title: string, map: Map<string, number>, n: number) => {
    console.log(`\n${title}`)
    for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`  ${pct(us)}  ${k}`)
  }
  console.log(`\n=== ${file}: ${(total / 1e6).toFixed(2)} s sampled`)
  list('self time by package / place', pkgSelf, top)
  list('self time by function', fnSelf, top)
  list('inclusive time of our files', ownInclusive, top)
}
