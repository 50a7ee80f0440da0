import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { parseServeArgs } from '../src/cli/serve.ts'
import { ok, parseCredentialOfferUri, RelyingPartyClient } from '../src/client/index.ts'
import { DEMO } from './helpers.ts'

const BIN = new URL('../bin/vc-harness.mjs', import.meta.url).pathname

interface Running {
  child: ChildProcess
  url: string
  output: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Starts `vc-harness serve` and resolves once it prints its base URL (or rejects if it exits first). */
function serve(args: string[]): Promise<Running> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1]
      if (url) resolve({ child, url, output: () => out, exited })
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    exited.then(({ code }) => reject(new Error(`serve exited (${code}) before listening:\n${out}`)))
  })
}

function run(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c))
  child.stderr.on('data', (c: Buffer) => (out += c))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })))
}

const appKey = { keyId: DEMO.app.id, secret: DEMO.app.secret, tenant: 'demo', ssiconfig: 'degree' }

// Concurrent: each test runs its own child processes on their own ports and folders, and mostly waits
// for their start-up, so the five need not queue behind one another.
describe('vc-harness serve', { concurrency: true }, () => {
  const dirs: string[] = []
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'vch-cli-'))
    dirs.push(dir)
    return dir
  }
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  test('without --config it runs the demo, prints the URL and demo keys, answers /health, and exits 0 on SIGTERM', async () => {
    const server = await serve(['--data', ':memory:'])
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/)
    const health = await fetch(`${server.url}/health`)
    assert.equal(health.status, 200)
    assert.match(server.output(), /embedded demo configuration/)
    assert.ok(server.output().includes(DEMO.app.id) && server.output().includes(DEMO.app.secret))
    server.child.kill('SIGTERM')
    const { code } = await server.exited
    assert.equal(code, 0)
    assert.match(server.output(), /SIGTERM received, closing/)
  })

  test('a bad configuration stops start-up with exit code 2 and a message naming the field', async () => {
    const dir = tempDir()
    const file = join(dir, 'bad.json')
    writeFileSync(
      file,
      JSON.stringify({ tenants: [{ id: 'acme', apiKeys: [{ id: 'x', secret: 'short', role: 'app' }] }] }),
    )
    const { code, out } = await run(['serve', '--config', file, '--port', '0'])
    assert.equal(code, 2)
    assert.match(out, /\/tenants\/0\/apiKeys\/0\/id: must match format "uuid"/)
    assert.match(out, /\/tenants\/0\/apiKeys\/0\/secret/)
  })

  test('unknown options and commands are refused with usage', async () => {
    // In-process: a child for `serve --colour` would load the whole service (~1.5 s) to prove what
    // test/cluster.test.ts already proves once, that main() exits 2 on an ERR_PARSE_ARGS_* error.
    assert.throws(
      () => parseServeArgs(['--colour']),
      (error: Error & { code?: string }) =>
        error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && /--colour/.test(error.message),
    )
    const unknown = await run(['frobnicate'])
    assert.equal(unknown.code, 2)
    assert.match(unknown.out, /unknown command "frobnicate"/)
  })

  test('a configured secret is never printed (only the embedded demo prints its keys)', async () => {
    const dir = tempDir()
    const file = join(dir, 'real.json')
    const secret = 'production-secret-do-not-print-123'
    writeFileSync(
      file,
      JSON.stringify({
        tenants: [
          { id: 'acme', apiKeys: [{ id: '3f1c2b7a-9e4d-4c1b-8a6f-2d5e7c9b1a00', secret, role: 'admin' }] },
        ],
      }),
    )
    const server = await serve(['--config', file, '--data', ':memory:', '--log-level', 'info'])
    await fetch(`${server.url}/admin/v1/api_keys/login`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`3f1c2b7a-9e4d-4c1b-8a6f-2d5e7c9b1a00:${secret}`).toString('base64')}`,
        tenant: 'acme',
      },
    })
    server.child.kill('SIGTERM')
    await server.exited
    assert.ok(!server.output().includes(secret), 'secret leaked to the output')
    assert.ok(!server.output().includes('eyJ'), 'a token leaked to the output')
  })

  test('a 2xx is durable: kill -9 right after creating an offer, restart, and the process is there', async () => {
    const data = tempDir()
    const first = await serve(['--data', data])
    const client = new RelyingPartyClient(first.url)
    const created = await client.createOffer(await client.token(appKey), 'degree')
    assert.equal(created.status, 201)
    const { processId } = parseCredentialOfferUri(
      ok<{ credential_offer_uri: string }>(created).credential_offer_uri,
    )
    first.child.kill('SIGKILL')
    assert.equal((await first.exited).signal, 'SIGKILL')

    const second = await serve(['--data', data])
    try {
      const again = new RelyingPartyClient(second.url)
      const read = await again.getProcess(await again.token(appKey), processId)
      assert.equal(read.status, 200)
      assert.equal((read.body as { status: string }).status, 'PENDING')
    } finally {
      second.child.kill('SIGTERM')
      await second.exited
    }
  })
})
