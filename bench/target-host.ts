// The server side of a bench run, in its own process so its CPU and peak memory are its own: our
// service (one process, or a node:cluster of workers on one SQLite file), the bare Fastify + jose
// baseline, or the peer issuer built on @sphereon/oid4vci-issuer. The last two live in ./baselines/ and are
// imported only when asked for (the peer's libraries are devDependencies, absent from an installed package).
//
// IPC: runner → { start, spec } → { started, info } | { failed }; → { usage } → { usage }; → { stop }.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { cpuUsage as processCpu } from 'node:process'
import type { ServiceConfig } from '../src/service/config/index.ts'
import { DEMO_KEYS, type FromTarget, type TargetInfo, type TargetSpec, type ToTarget } from './protocol.ts'

const send = (message: FromTarget) => process.send?.(message)

interface Started {
  info: TargetInfo
  /** CPU of the target's worker processes (a cluster), µs; this process's own is added by the caller. */
  workerCpu?: () => Promise<number>
  /** Statements run by the service's store (store.stats), where it lives in this process. */
  statements?: () => number
  /** CPU of the database server's processes, µs (PostgreSQL): already in workerCpu, reported apart too. */
  databaseCpu?: () => number
  close(): Promise<void>
}

/**
 * A baseline module, imported only when asked for. The peer needs devDependencies (@sphereon/oid4vci-issuer…)
 * that an installed package lacks: say so instead of a bare "module not found".
 */
async function baseline<T>(load: () => Promise<T>, name: string): Promise<T> {
  try {
    return await load()
  } catch (error) {
    throw new Error(
      `the ${name} baseline could not be loaded (${(error as Error).message}); it needs a git checkout of vc-harness with its devDependencies installed (npm ci)`,
    )
  }
}

/** The demo configuration with both demo templates sending webhooks to the wallet process's sink. */
async function serviceConfig(webhook: { url: string; secret: string } | undefined): Promise<ServiceConfig> {
  const { DEMO_CONFIG_PATH, loadConfigFile } = await import('../src/service/config/index.ts')
  const config = loadConfigFile(DEMO_CONFIG_PATH)
  if (!webhook) return config
  // The sink is ours and answers at once: let the dispatcher keep up with the flows (the default of 4
  // per receiver protects real receivers, and would make the webhook step a queue).
  config.webhooks = { ...config.webhooks, concurrency: 64, perEndpointConcurrency: 64 }
  for (const tenant of config.tenants) {
    for (const template of [...(tenant.issuanceTemplates ?? []), ...(tenant.verificationTemplates ?? [])]) {
      template.webhookUrl = webhook.url
      template.webhookSecret = webhook.secret
    }
  }
  return config
}

async function startService(
  spec: Extract<TargetSpec, { kind: 'service' }>,
  dataDir: string,
): Promise<Started> {
  const config = await serviceConfig(spec.webhook)
  const base = { label: spec.workers > 1 ? `service ×${spec.workers}` : 'service', keys: DEMO_KEYS }
  const kinds: TargetInfo['kinds'] = ['full', 'issuance', 'issuance-ready', 'verification']
  if (spec.workers > 1) {
    const { startCluster } = await import('../src/service/cluster.ts')
    const cluster = await startCluster({ config, workers: spec.workers, host: '127.0.0.1', port: 0, dataDir })
    return {
      info: {
        ...base,
        urls: { authUrl: cluster.url, issuerUrl: cluster.url, verifierUrl: cluster.url },
        kinds,
        webhooks: spec.webhook !== undefined,
        pids: [process.pid, ...cluster.pids],
      },
      workerCpu: async () => {
        const used = await cluster.cpuUsage()
        return used.user + used.system
      },
      close: () => cluster.close(),
    }
  }
  const { startServer } = await import('../src/service/server.ts')
  const database = typeof spec.database === 'object' ? spec.database : undefined
  if (database) {
    // The same service over PostgreSQL; the database server's processes do the store's work, so their CPU
    // is counted with this process's (the cores' "other" column would hide it otherwise).
    const { openPostgresStore } = await import('../src/service/store/postgres.ts')
    const { DataKeyring } = await import('../src/service/crypto/data-key.ts')
    const { treeCpuMicros } = await import('../src/harness/postgres-cluster.ts')
    const dataKeys = DataKeyring.generate('the bench')
    const store = await openPostgresStore(database.url, { dataKeys })
    const server = await startServer({ config, host: '127.0.0.1', port: 0, dataDir, store })
    // More instances are `vc-harness serve --database` processes on the same database, configuration and key.
    const others = await Promise.all(
      Array.from({ length: (spec.instances ?? 1) - 1 }, (_, i) =>
        startInstance(config, database.url, dataKeys.export(), join(dataDir, `instance-${i + 2}`)),
      ),
    )
    const urlsOf = (url: string) => ({ authUrl: url, issuerUrl: url, verifierUrl: url })
    return {
      info: {
        ...base,
        label: others.length > 0 ? `service ×${others.length + 1} (PostgreSQL)` : 'service (PostgreSQL)',
        urls: urlsOf(server.url),
        ...(others.length > 0 ? { moreUrls: others.map((o) => urlsOf(o.url)) } : {}),
        kinds,
        webhooks: spec.webhook !== undefined,
        pids: [process.pid, ...others.map((o) => o.pid)],
      },
      workerCpu: async () =>
        treeCpuMicros(database.serverPid) + others.reduce((sum, o) => sum + treeCpuMicros(o.pid), 0),
      databaseCpu: () => treeCpuMicros(database.serverPid),
      // The other instances' statements are theirs to count: with them the figure would be half the story.
      ...(others.length === 0 ? { statements: () => store.stats.statements } : {}),
      close: async () => {
        for (const other of others) await other.close()
        await server.close()
        await store.close()
      },
    }
  }
  const server = await startServer({ config, host: '127.0.0.1', port: 0, dataDir })
  return {
    info: {
      ...base,
      urls: { authUrl: server.url, issuerUrl: server.url, verifierUrl: server.url },
      kinds,
      webhooks: spec.webhook !== undefined,
      pids: [process.pid],
    },
    statements: () => server.app.services.store.stats.statements,
    close: () => server.close(),
  }
}

/** One more instance: `vc-harness serve --database` on a free port, with the bench's configuration and key. */
async function startInstance(config: ServiceConfig, url: string, dataKey: string, dir: string) {
  const { spawn } = await import('node:child_process')
  const { mkdirSync, writeFileSync } = await import('node:fs')
  const { CLI_BIN } = await import('../src/harness/child-target.ts')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const configFile = join(dir, 'config.json')
  writeFileSync(configFile, JSON.stringify(config), { mode: 0o600 })
  const child = spawn(
    process.execPath,
    [CLI_BIN, 'serve', '--config', configFile, '--data', dir, '--port', '0', '--quiet', '--database', url],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, VC_HARNESS_DATA_KEY: dataKey } },
  )
  let output = ''
  const listening = new Promise<string>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk
      const found = /listening on (http:\/\/\S+)/.exec(output)?.[1]
      if (found) resolve(found)
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('exit', (code) =>
      reject(new Error(`an instance exited (${code}) before listening:\n${output}`)),
    )
  })
  const instanceUrl = await listening
  return {
    url: instanceUrl,
    pid: child.pid ?? 0,
    close: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    },
  }
}

async function startBare(): Promise<Started> {
  const { startBareFlows } = await baseline(() => import('./baselines/bare-flows.ts'), 'bare')
  const bare = await startBareFlows({ host: '127.0.0.1', port: 0 })
  return {
    info: {
      label: 'bare',
      urls: { authUrl: bare.url, issuerUrl: bare.url, verifierUrl: bare.url },
      ...(bare.keys ? { keys: bare.keys } : {}),
      kinds: ['full', 'issuance', 'verification'],
      webhooks: false,
      pids: [process.pid],
    },
    close: () => bare.close(),
  }
}

/** The peer has no relying-party API: an offer desk (POST → a fresh offer link) stands in for 4.2. */
async function startPeer(): Promise<Started> {
  const { startPeerIssuer } = await baseline(() => import('./baselines/peer-issuer.ts'), 'peer')
  const peer = await startPeerIssuer({ host: '127.0.0.1', port: 0 })
  const desk = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      peer.createOffer().then(
        (link) => {
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ credential_offer_uri: link }))
        },
        (error: Error) => {
          res.writeHead(500, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ error: 'server_error', error_description: error.message }))
        },
      )
    })
  })
  await new Promise<void>((resolve) => desk.listen(0, '127.0.0.1', resolve))
  return {
    info: {
      label: 'peer (@sphereon/oid4vci-issuer)',
      urls: { authUrl: peer.url, issuerUrl: peer.url, verifierUrl: peer.url },
      offerDesk: `http://127.0.0.1:${(desk.address() as AddressInfo).port}/offer`,
      // It issues at once, as our service does when the content was submitted first: the ready flow only.
      kinds: ['issuance-ready'],
      webhooks: false,
      pids: [process.pid],
    },
    close: async () => {
      desk.closeAllConnections()
      await new Promise((resolve) => desk.close(resolve))
      await peer.close()
    },
  }
}

/** Peak resident memory of a process (VmHWM, Linux), MB; undefined when /proc cannot tell. */
function peakRssMb(pid: number): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Math.round(Number(match[1]) / 1024) : undefined
  } catch {
    return undefined
  }
}

let started: Started | undefined
let dataDir: string | undefined

process.on('message', (message: ToTarget) => {
  void (async () => {
    try {
      if (message.kind === 'start') {
        const { spec } = message
        if (spec.kind === 'service') {
          dataDir = mkdtempSync(join(tmpdir(), 'vc-harness-bench-'))
          started = await startService(spec, dataDir)
        } else if (spec.kind === 'bare') started = await startBare()
        else if (spec.kind === 'peer') started = await startPeer()
        else throw new Error('an external deployment has no target host')
        send({ kind: 'started', info: started.info })
      } else if (message.kind === 'usage') {
        const own = processCpu()
        const workers = (await started?.workerCpu?.()) ?? 0
        // Without /proc only this process's own peak is known.
        const peaks = (started?.info.pids ?? [process.pid]).map(
          (pid) =>
            peakRssMb(pid) ?? (pid === process.pid ? Math.round(process.resourceUsage().maxRSS / 1024) : 0),
        )
        const statements = started?.statements?.()
        const databaseCpuUs = started?.databaseCpu?.()
        // One process serves: its one event loop is what limits flows/s (the thread pool, the JIT's and GC's
        // threads run beside it, counted in cpuUs).
        const oneLoop = started !== undefined && started.info.pids.length === 1
        send({
          kind: 'usage',
          cpuUs: own.user + own.system + workers,
          peakRssMb: peaks.reduce((a, b) => a + b, 0),
          ...(statements !== undefined ? { statements } : {}),
          ...(databaseCpuUs !== undefined ? { databaseCpuUs } : {}),
          ...(oneLoop ? { loopActiveMs: performance.eventLoopUtilization().active } : {}),
        })
      } else if (message.kind === 'stop') {
        await started?.close()
        if (dataDir) rmSync(dataDir, { recursive: true, force: true })
        process.exit(0)
      }
    } catch (error) {
      send({ kind: 'failed', message: (error as Error).stack ?? String(error) })
    }
  })()
})
// The runner died: take the data directory with us.
process.on('disconnect', () => {
  void (started?.close() ?? Promise.resolve()).finally(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  })
})
