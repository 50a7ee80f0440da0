// The `child` target: `vc-harness serve` as a child process on 127.0.0.1 and a free port, with a durable
// SQLite database in a fresh temp dir. It runs the real CLI start-up path (config file, migrations, listen,
// signals), which the embedded target skips; the suite still knows the configuration, so it derives the
// tenant fixture and the operator key from the same file.
//
// No orphans: the child gets `--exit-on-stdin-close` and a stdin pipe, so it shuts down when this process
// dies however it dies (even SIGKILL closes the pipe); a normal exit of this process also SIGKILLs it.
//
// Several instances (issue 21): with VC_HARNESS_CHILD_INSTANCES=N (`vc-harness conformance --instances N`)
// and N > 1, N `serve` children share the PostgreSQL database of VC_HARNESS_DATABASE_URL and one data key,
// behind a round-robin proxy (round-robin-proxy.ts) whose URL is their public URL and the target's URLs:
// consecutive requests of a flow land on different instances, so state one instance keeps to itself shows.

import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fixtureFromConfig, trustsTestWalletProvider } from './fixture.ts'
import { TargetConfigError } from './profile.ts'
import { type RoundRobinProxy, startRoundRobinProxy } from './round-robin-proxy.ts'
import { type Capability, type ChildInfo, LOOPBACK_RECEIVER, type Target } from './target-types.ts'

type Env = Record<string, string | undefined>

export const CLI_BIN = fileURLToPath(new URL('../../bin/vc-harness.mjs', import.meta.url))

/** How many `serve` instances the child target runs (default 1); `vc-harness conformance --instances`. */
export const CHILD_INSTANCES_ENV = 'VC_HARNESS_CHILD_INSTANCES'
// The names of src/service/crypto/data-key.ts, not imported: an external run never loads the service.
const DATABASE_URL_ENV = 'VC_HARNESS_DATABASE_URL'
const DATA_KEY_ENV = 'VC_HARNESS_DATA_KEY'
const DATA_KEY_FILE_ENV = 'VC_HARNESS_DATA_KEY_FILE'

/**
 * The child target's instance count, `value` as given by `origin` (`--instances 2` or
 * `VC_HARNESS_CHILD_INSTANCES=2`, for the message); 1 when undefined or empty. Throws TargetConfigError.
 */
export function parseChildInstances(value: string | undefined, origin: string): number {
  if (value === undefined || value === '') return 1
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < 1) {
    throw new TargetConfigError(`${origin}: expected a whole number ≥ 1, got "${value}"`)
  }
  return n
}

/** More than one instance needs the shared database of VC_HARNESS_DATABASE_URL: else TargetConfigError. */
export function requireSharedDatabase(instances: number, env: Env, origin: string): void {
  if (instances > 1 && !env[DATABASE_URL_ENV]) {
    throw new TargetConfigError(
      `${origin}: several instances must share one database: set ${DATABASE_URL_ENV} to a PostgreSQL URL (the SQLite file of each child cannot be shared by instances)`,
    )
  }
}

export interface ChildOptions {
  /** How long to wait for the `listening on` line; default 30 s. */
  startTimeoutMs?: number
  /** How long close() waits after SIGTERM before SIGKILL; default 10 s. */
  closeTimeoutMs?: number
}

/** The last `limit` characters of a stream, so a chatty child cannot grow the parent's memory. */
class Tail {
  private text = ''
  constructor(private readonly limit = 16_384) {}
  push(chunk: Buffer | string) {
    this.text = (this.text + chunk.toString()).slice(-this.limit)
  }
  toString() {
    return this.text.trim()
  }
}

type Exit = { code: number | null; signal: NodeJS.Signals | null }

/**
 * Starts `vc-harness serve` as a child process (or VC_HARNESS_CHILD_INSTANCES of them behind a round-robin
 * proxy) and describes it as a target once it listens.
 */
export async function startChild(env: Env = process.env, options: ChildOptions = {}): Promise<Target> {
  const childEnv: Env = { ...process.env, ...env }
  const origin = `${CHILD_INSTANCES_ENV}=${env[CHILD_INSTANCES_ENV]}`
  const count = parseChildInstances(env[CHILD_INSTANCES_ENV], origin)
  requireSharedDatabase(count, childEnv, origin)
  const { DEMO_CONFIG_PATH, loadConfigFile } = await import('../service/config/index.ts')
  const configPath = resolve(env.VC_HARNESS_CONFIG || DEMO_CONFIG_PATH)
  let proxy: RoundRobinProxy | undefined
  const extraArgs: string[] = []
  if (count > 1) {
    proxy = await startRoundRobinProxy()
    // Offers and requests must name the address in front of the instances, not one of them.
    extraArgs.push('--public-url', proxy.url)
    // Keys are sealed in the shared database under the data key: every instance needs the same one
    // (each would otherwise generate its own in its --data folder and fail on the other's values).
    if (!childEnv[DATA_KEY_ENV] && !childEnv[DATA_KEY_FILE_ENV]) {
      childEnv[DATA_KEY_ENV] = randomBytes(32).toString('base64')
    }
  }
  const instances: Instance[] = []
  const close = async () => {
    // The proxy first: it ends the streams open through it, which an instance's shutdown would wait for.
    await proxy?.close()
    await Promise.all(instances.map((instance) => instance.close()))
  }
  try {
    // One after the other: a child that fails to start is then named alone, its stderr not mixed with others'.
    for (let i = 0; i < count; i++) {
      const label = count > 1 ? `vc-harness serve (instance ${i + 1} of ${count})` : 'vc-harness serve'
      instances.push(await startInstance(configPath, extraArgs, childEnv, label, options))
    }
    proxy?.setUpstreams(instances.map((instance) => instance.url))
    // The children accepted the file, so it parses here too; the fixture comes from the very same file.
    const config = loadConfigFile(configPath)
    const { tenant, operator } = fixtureFromConfig(config, configPath)
    const url = proxy?.url ?? (instances[0] as Instance).url
    const capabilities = new Set<Capability>(['portal', 'webhooks'])
    if (trustsTestWalletProvider(config, tenant.tenant)) capabilities.add('test-wallet-provider')
    return {
      kind: 'child',
      urls: { authUrl: url, issuerUrl: url, verifierUrl: url },
      capabilities,
      tenant,
      operator,
      receiver: { ...LOOPBACK_RECEIVER },
      child: { ...(instances[0] as Instance).info, instances: instances.map((instance) => instance.info) },
      close,
    }
  } catch (error) {
    await close()
    throw error
  }
}

interface Instance {
  url: string
  info: ChildInfo
  close(): Promise<void>
}

/** One `vc-harness serve` child on 127.0.0.1 and a free port, with its own data folder, once it listens. */
async function startInstance(
  configPath: string,
  extraArgs: readonly string[],
  env: Env,
  label: string,
  options: ChildOptions,
): Promise<Instance> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vc-harness-child-'))
  const args = [
    CLI_BIN,
    'serve',
    '--config',
    configPath,
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--data',
    dataDir,
    '--exit-on-stdin-close',
    ...extraArgs,
  ]
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env })
  const stdout = new Tail()
  const stderr = new Tail()
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk))
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
  let exit: Exit | undefined
  const exited = new Promise<Exit>((resolveExit) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal }
      resolveExit(exit)
    })
  })
  // A spawn failure (e.g. no node binary) emits 'error' and no 'exit': nothing is left to wait for.
  const spawnError = new Promise<Error>((resolveError) =>
    child.once('error', (error) => {
      if (child.pid === undefined) {
        exit ??= { code: null, signal: null }
      }
      resolveError(error)
    }),
  )
  const removeDir = () => rmSync(dataDir, { recursive: true, force: true })
  const onParentExit = () => {
    if (exit === undefined) child.kill('SIGKILL')
    removeDir()
  }
  process.on('exit', onParentExit)

  let closing: Promise<void> | undefined
  const close = (): Promise<void> => {
    closing ??= (async () => {
      if (exit === undefined) {
        child.kill('SIGTERM')
        const timeout = options.closeTimeoutMs ?? 10_000
        let timer: NodeJS.Timeout | undefined
        const killed = await Promise.race([
          exited.then(() => false),
          new Promise<boolean>((r) => {
            timer = setTimeout(() => r(true), timeout)
          }),
        ])
        clearTimeout(timer)
        if (killed) {
          child.kill('SIGKILL')
          await exited
        }
      }
      process.off('exit', onParentExit)
      removeDir()
    })()
    return closing
  }

  try {
    const url = await waitForListening(
      child,
      stdout,
      stderr,
      exited,
      spawnError,
      label,
      options.startTimeoutMs,
    )
    afterStart(child, stderr, () => closing !== undefined)
    return { url, info: { pid: child.pid as number, dataDir }, close }
  } catch (error) {
    await close()
    throw error
  }
}

/** Resolves with the base URL from `vc-harness listening on <url>`, or rejects with the child's stderr. */
async function waitForListening(
  child: ChildProcess,
  stdout: Tail,
  stderr: Tail,
  exited: Promise<Exit>,
  spawnError: Promise<Error>,
  label: string,
  timeoutMs = 30_000,
): Promise<string> {
  let timer: NodeJS.Timeout | undefined
  let onData: ((chunk: Buffer) => void) | undefined
  const describe = (what: string) => {
    const err = stderr.toString()
    const out = stdout.toString()
    return (
      `child target: ${label} ${what}` +
      (err ? `\n--- its stderr ---\n${err}` : '') +
      (out ? `\n--- its stdout ---\n${out}` : '')
    )
  }
  try {
    return await Promise.race([
      new Promise<string>((resolveUrl) => {
        let seen = ''
        onData = (chunk: Buffer) => {
          seen += chunk.toString()
          const url = /^vc-harness listening on (http:\/\/\S+)$/m.exec(seen)?.[1]
          if (url) resolveUrl(url)
        }
        child.stdout?.on('data', onData)
      }),
      exited.then(({ code, signal }) => {
        throw new Error(describe(`exited (${signal ?? `code ${code}`}) before listening`))
      }),
      spawnError.then((error) => {
        throw new Error(describe(`could not start: ${error.message}`))
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(describe(`did not print "listening on" within ${timeoutMs} ms`))),
          timeoutMs,
        )
      }),
    ])
  } finally {
    clearTimeout(timer)
    if (onData) child.stdout?.off('data', onData)
  }
}

/**
 * Once the child serves: report if it dies on its own, and let this process exit without waiting for it
 * (the 'exit' hook and the stdin lifeline then stop it).
 */
function afterStart(child: ChildProcess, stderr: Tail, closing: () => boolean) {
  child.once('exit', (code, signal) => {
    if (closing()) return
    const err = stderr.toString()
    console.error(
      `child target: vc-harness serve (pid ${child.pid}) exited unexpectedly (${signal ?? `code ${code}`})` +
        (err ? `\n--- its stderr ---\n${err}` : ''),
    )
  })
  child.unref()
  for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as Socket | null)?.unref?.()
}
