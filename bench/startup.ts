/**
 * How soon `vc-harness serve` answers: spawn → first `GET /health` 200, for the service without the demo
 * (`--no-demo`) and with the embedded demo (the default without --config), each with a fresh `--data`
 * folder (so every start creates the database, seeds the configuration and generates the service key),
 * against baselines spawned in the same run, one after the other in each round:
 *
 * - **bare**: `node -e` with a Fastify server that answers only /health — the floor of Node + Fastify;
 * - **peer**: the Sphereon issuer of the flow bench (bench/baselines/peer-issuer.ts, run as its forkable
 *   child through tsx, as `vc-harness bench` runs it), ready at its first `/.well-known/openid-credential-issuer`
 *   200; skipped where its devDependencies are absent.
 *
 * Prints median / min / max per target and the ratios service / peer and service / bare (medians of the same
 * run); asserts nothing, but exits 1 when a target never became ready. `--modules` adds one spawn per target
 * with a loader hook counting the modules loaded by the time it is ready (ESM through the loader hooks, i.e.
 * through tsx's; CommonJS from require.cache), per package.
 *
 *   node --import tsx bench/startup.ts [--smoke] [--rounds N] [--modules]
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { get } from 'node:http'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { percentile, r2 } from './stats.ts'

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    modules: { type: 'boolean', default: false },
  },
})
const rounds = Number(values.rounds ?? (values.smoke ? 1 : 7))
if (!Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: node --import tsx bench/startup.ts [--smoke] [--rounds N] [--modules]')
  process.exit(2)
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CLI = join(ROOT, 'bin', 'vc-harness.mjs')
const PEER = join(ROOT, 'bench', 'baselines', 'peer-issuer.ts')
/** Give up on a target after this long (ms): a start that hangs is a failure, not a figure. */
const READY_TIMEOUT_MS = 30_000

/** The floor: Node, Fastify and one route, listening on a free port and printing its URL. */
const BARE_SERVER = `
const app = require('fastify')()
app.get('/health', async () => ({ status: 'ok' }))
app.listen({ host: '127.0.0.1', port: 0 }).then((url) => console.log('listening on ' + url))
`

interface Target {
  name: string
  /** the command line after `node` */
  args(dataDir: string): string[]
  /** path answered 200 once ready */
  path: string
  /** where the URL comes from: a stdout line, or the peer's IPC `started` message */
  announce: 'stdout' | 'ipc'
}

const serveArgs = (dataDir: string, ...more: string[]) => [
  CLI,
  'serve',
  '--port',
  '0',
  '--data',
  dataDir,
  '--quiet',
  ...more,
]

function peerInstalled(): boolean {
  try {
    import.meta.resolve('@sphereon/oid4vci-issuer-server')
    return true
  } catch {
    return false
  }
}

const TARGETS: Target[] = [
  { name: 'service --no-demo', args: (d) => serveArgs(d, '--no-demo'), path: '/health', announce: 'stdout' },
  { name: 'service (embedded demo)', args: (d) => serveArgs(d), path: '/health', announce: 'stdout' },
  { name: 'bare (node -e Fastify)', args: () => ['-e', BARE_SERVER], path: '/health', announce: 'stdout' },
  ...(peerInstalled()
    ? [
        {
          name: 'peer (@sphereon/oid4vci-issuer)',
          // through tsx as `vc-harness bench` forks it (bench/run.ts)
          args: () => ['--import', import.meta.resolve('tsx'), PEER],
          path: '/.well-known/openid-credential-issuer',
          announce: 'ipc',
        } satisfies Target,
      ]
    : []),
]

/** One GET; resolves with the status code, or 0 when the connection failed. */
function status(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', () => resolve(0))
  })
}

/** Loader hooks posting every loaded URL to the preload below (run off-thread, like tsx's own hooks). */
const COUNT_HOOKS = `let port
export function initialize(data) { port = data.port }
export async function load(url, context, next) { port.postMessage(url); return next(url, context) }`

/**
 * Preload for --modules: on SIGTERM (sent once the target is ready) writes one line to stderr with the ESM
 * URLs seen and require.cache, then exits unless the target handles SIGTERM itself.
 */
const COUNT_PRELOAD = `import { register, createRequire } from 'node:module'
import { MessageChannel } from 'node:worker_threads'
import { writeSync } from 'node:fs'
const { port1, port2 } = new MessageChannel()
const urls = new Set()
port1.on('message', (url) => urls.add(url))
port1.unref()
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(COUNT_HOOKS)}`)}, { data: { port: port2 }, transferList: [port2] })
process.on('SIGTERM', () => {
  const esm = [...urls].filter((u) => u.startsWith('file:'))
  const cjs = Object.keys(createRequire(process.cwd() + '/').cache)
  writeSync(2, 'MODULES ' + JSON.stringify({ esm, cjs }) + '\\n')
  if (process.listenerCount('SIGTERM') === 1) process.exit(0)
})`

interface Start {
  ms: number
  /** --modules: the files loaded by then */
  modules?: { esm: string[]; cjs: string[] }
}

async function start(target: Target, countModules: boolean): Promise<Start> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vc-startup-'))
  const preload = countModules
    ? ['--import', `data:text/javascript,${encodeURIComponent(COUNT_PRELOAD)}`]
    : []
  const began = performance.now()
  const child = spawn(process.execPath, [...preload, ...target.args(dataDir)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe', ...(target.announce === 'ipc' ? (['ipc'] as const) : [])],
  })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  try {
    const url = await announced(target, child)
    for (;;) {
      if ((await status(`${url}${target.path}`)) === 200) break
      if (performance.now() - began > READY_TIMEOUT_MS) throw new Error(`no 200 at ${target.path}`)
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    const ms = performance.now() - began
    await stop(child)
    if (!countModules) return { ms }
    const line = stderr.split('\n').find((l) => l.startsWith('MODULES '))
    if (!line) throw new Error('no module counts written')
    return { ms, modules: JSON.parse(line.slice('MODULES '.length)) }
  } catch (error) {
    await stop(child)
    throw new Error(`${target.name}: ${(error as Error).message}\n${stderr.slice(-2000)}`)
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** The base URL the target prints (stdout) or sends (IPC), once it listens. */
function announced(target: Target, child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('not listening in time')), READY_TIMEOUT_MS)
    const done = (then: () => void) => {
      clearTimeout(timer)
      child.off('exit', onExit)
      then()
    }
    const onExit = (code: number | null) => done(() => reject(new Error(`exited (${code}) before listening`)))
    child.once('exit', onExit)
    if (target.announce === 'ipc') {
      child.on('message', (message: { kind: string; url?: string; message?: string }) => {
        if (message.kind === 'started' && message.url) done(() => resolve(message.url as string))
        if (message.kind === 'failed') done(() => reject(new Error(message.message)))
      })
      return
    }
    let out = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const match = /listening on (http:\/\/[^\s/]+)/.exec(out)
      if (match?.[1]) done(() => resolve(match[1] as string))
    })
  })
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const hard = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.once('exit', () => {
      clearTimeout(hard)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

function packageOf(file: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/.exec(file)
  if (pkg?.[1]) return pkg[1]
  const own = /\/(src|bench|bin)\//.exec(file)
  return own?.[1] ?? file
}

function byPackage(files: string[], top = 8): string {
  const counts = new Map<string, number>()
  for (const file of files) counts.set(packageOf(file), (counts.get(packageOf(file)) ?? 0) + 1)
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, n]) => `${name} ${n}`)
    .join(', ')
}

console.log(
  `startup: spawn → first 200 (/health; the peer: its issuer metadata), ${rounds} round${rounds > 1 ? 's' : ''}${values.smoke ? '' : ' after one warm-up round'}, targets interleaved`,
)
console.log(
  `  ${cpus().length} cores, load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
)
if (!TARGETS.some((t) => t.announce === 'ipc')) {
  console.log('  @sphereon/oid4vci-issuer-server is not installed (a devDependency): no peer baseline')
}

const times = new Map<string, number[]>(TARGETS.map((t) => [t.name, []]))
let failed = false
// A warm-up round first (tsx's transform cache, the OS file cache), not counted; the smoke run skips it.
for (let round = values.smoke ? 1 : 0; round <= rounds; round++) {
  for (const target of TARGETS) {
    try {
      const { ms } = await start(target, false)
      if (round > 0) times.get(target.name)?.push(ms)
    } catch (error) {
      console.error(`startup: ${(error as Error).message}`)
      failed = true
    }
  }
}

const median = (name: string) => percentile(times.get(name) ?? [], 50)
console.log('\nready (ms)                          median     min     max')
for (const target of TARGETS) {
  const ms = times.get(target.name) ?? []
  if (ms.length === 0) continue
  const row = [median(target.name), Math.min(...ms), Math.max(...ms)].map((x) =>
    String(Math.round(x)).padStart(7),
  )
  console.log(`  ${target.name.padEnd(32)}${row.join(' ')}`)
}
const ratios: [string, string, string][] = [
  ['service --no-demo / peer', 'service --no-demo', 'peer (@sphereon/oid4vci-issuer)'],
  ['service --no-demo / bare', 'service --no-demo', 'bare (node -e Fastify)'],
  ['service (embedded demo) / peer', 'service (embedded demo)', 'peer (@sphereon/oid4vci-issuer)'],
  ['service (embedded demo) / bare', 'service (embedded demo)', 'bare (node -e Fastify)'],
]
console.log('\nratios (medians, same run):')
for (const [label, a, b] of ratios) {
  if (median(a) > 0 && median(b) > 0) console.log(`  ${label}: ${r2(median(a) / median(b))}`)
}

if (values.modules) {
  console.log(
    '\nmodules loaded by the time each is ready (one extra spawn each, with a counting loader hook):',
  )
  for (const target of TARGETS) {
    try {
      const { modules } = await start(target, true)
      if (!modules) continue
      console.log(`  ${target.name}: ESM ${modules.esm.length}, CommonJS ${modules.cjs.length}`)
      console.log(`    ESM: ${byPackage(modules.esm)}`)
      console.log(`    CommonJS: ${byPackage(modules.cjs)}`)
    } catch (error) {
      console.error(`startup: ${(error as Error).message}`)
      failed = true
    }
  }
}

if (failed) process.exitCode = 1
