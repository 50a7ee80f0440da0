import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { checkDataDir, parseServeArgs } from '../../src/cli/serve.ts'
import { ok, parseCredentialOfferUri, RelyingPartyClient } from '../../src/client/index.ts'
import { buildApp } from '../../src/service/app.ts'
import { DEMO_CONFIG_PATH } from '../../src/service/config/index.ts'
import { locateJsonProblem } from '../../src/service/config/json-position.ts'
import { loggedPath } from '../../src/service/request-log.ts'
import { startServe } from '../fixtures/cli.ts'
import { DEMO, twoTenantConfig } from '../helpers.ts'

const BIN = new URL('../../bin/vc-harness.mjs', import.meta.url).pathname

/** Starts `vc-harness serve` (test/fixtures/cli.ts). */
const serve = (args: string[]) => startServe(args)

/** A user error is one line (or a few) naming the problem: never a stack trace. */
function assertNoStack(out: string) {
  assert.ok(!/^\s+at /m.test(out), `a stack trace was printed:\n${out}`)
}

/** The request log's line: time, method, path, status, milliseconds (src/service/request-log.ts). */
const LOG_LINE =
  /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (GET|POST|PUT|PATCH|DELETE) (\S+) (\d{3}) \d+\.\d ms$/

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
    // test/service/cluster.test.ts already proves once, that main() exits 2 on an ERR_PARSE_ARGS_* error.
    assert.throws(
      () => parseServeArgs(['--colour']),
      (error: Error & { code?: string }) =>
        error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && /--colour/.test(error.message),
    )
    const unknown = await run(['frobnicate'])
    assert.equal(unknown.code, 2)
    assert.match(unknown.out, /^vc-harness: unknown command "frobnicate"\.\n/)
    // Issue 32: the likely command first; `help <command>` is that command's help; a wallet subcommand's
    // error is one line, not buried under the usage.
    const near = await run(['serv'])
    assert.equal(near.code, 2)
    assert.match(near.out, /^vc-harness: unknown command "serv"\. Did you mean "serve"\?\n/)
    const help = await run(['help', 'serve'])
    assert.equal(help.code, 0)
    assert.match(help.out, /^Usage: vc-harness serve /)
    const option = await run(['conformance', '--paralel', '2'])
    assert.equal(option.code, 2)
    assert.equal(
      option.out.trim(),
      'vc-harness conformance: unknown option --paralel. Did you mean --parallel? See its options with --help.',
    )
    const wallet = await run(['wallet', 'recieve'])
    assert.equal(wallet.code, 2)
    assert.equal(
      wallet.out.trim(),
      'vc-harness wallet: unknown command "recieve". Did you mean "receive"? See vc-harness wallet --help.',
    )
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

// Mistakes of the person running `serve`: a clear message, no stack trace, exit 2 for usage and
// configuration (as the usage says), 1 when the service cannot listen. Concurrent like the block above.
describe('vc-harness serve: user errors', { concurrency: true }, () => {
  const dirs: string[] = []
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'vch-usr-'))
    dirs.push(dir)
    return dir
  }
  after(() => {
    for (const dir of dirs) {
      chmodSync(dir, 0o700)
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('--port 99999 is a usage error: exit 2, naming the range', async () => {
    const { code, out } = await run(['serve', '--port', '99999', '--data', ':memory:'])
    assert.equal(code, 2, out)
    assert.match(out, /--port: not a port number \(0 to 65535; 0 picks a free one\): 99999/)
    assertNoStack(out)
  })

  test('a port in use: exit 1, saying so and suggesting --port', async () => {
    // Something else holds the port (a plain listener of this process: no second service needed).
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    try {
      const port = String((holder.address() as AddressInfo).port)
      const { code, out } = await run(['serve', '--port', port, '--data', ':memory:', '--no-demo'])
      assert.equal(code, 1, out)
      assert.match(out, new RegExp(`port ${port} is already in use on 127\\.0\\.0\\.1: .*--port`))
      assertNoStack(out)
    } finally {
      await new Promise((resolve) => holder.close(resolve))
    }
  })

  test('--data naming a file: exit 2 at once, naming it a file', async () => {
    const file = join(tempDir(), 'not-a-folder')
    writeFileSync(file, 'x')
    const { code, out } = await run(['serve', '--port', '0', '--data', file])
    assert.equal(code, 2, out)
    assert.match(out, /--data .*not-a-folder: is a file, not a folder/)
    assertNoStack(out)
    // In-process, the other shapes of the same mistake (no child needed).
    assert.throws(
      () => checkDataDir(join(file, 'below')),
      /cannot create the folder: .*not-a-folder is a file/,
    )
    assert.doesNotThrow(() => checkDataDir(join(tempDir(), 'new', 'folder')))
    assert.doesNotThrow(() => checkDataDir(':memory:'))
  })

  test('--data naming a folder without write permission (mode 0500): exit 2 naming it', {
    skip:
      process.getuid?.() === 0
        ? 'running as root: permission bits do not stop root, so the folder would be writable'
        : false,
  }, async () => {
    const dir = join(tempDir(), 'read-only')
    mkdirSync(dir, { mode: 0o500 })
    chmodSync(dir, 0o500)
    try {
      const { code, out } = await run(['serve', '--port', '0', '--data', dir])
      assert.equal(code, 2, out)
      assert.match(out, /--data .*read-only: the folder is not writable/)
      assertNoStack(out)
    } finally {
      chmodSync(dir, 0o700)
    }
  })

  test('a configuration that is not JSON: exit 2 with file, line and column, the line and a caret', async () => {
    const file = join(tempDir(), 'broken.json')
    writeFileSync(file, '{\n  "tenants": [\n    { "id": "acme", }\n  ]\n}\n')
    const { code, out } = await run(['serve', '--config', file, '--port', '0'])
    assert.equal(code, 2, out)
    assert.ok(
      out.includes(
        `${file} is not valid JSON at line 3, column 19: a comma before '}' (JSON allows no trailing comma)`,
      ),
      out,
    )
    assert.match(out, /^ {8}\{ "id": "acme", \}\n {22}\^$/m)
    assertNoStack(out)
    // The scanner on its own: what JSON.parse reports without a position in Node 20.
    assert.deepEqual(locateJsonProblem('{"a": }'), {
      line: 1,
      column: 7,
      reason: "expected a value (an object, array, string, number, true, false or null), found '}'",
      lineText: '{"a": }',
    })
    assert.equal(locateJsonProblem('{"a": [1, 2]}'), undefined)
  })

  test('one line per request by default: time, method, path, status, ms; no secret, token, code or whole id', async () => {
    // The demo configuration given as a file: its keys are not printed, so the whole output can be scanned.
    const [logged, quiet] = await Promise.all([
      serve(['--config', DEMO_CONFIG_PATH, '--data', ':memory:']),
      serve(['--config', DEMO_CONFIG_PATH, '--data', ':memory:', '--quiet']),
    ])
    try {
      for (const server of [logged, quiet]) {
        const client = new RelyingPartyClient(server.url)
        const token = await client.token(appKey)
        const created = ok<{ credential_offer_uri: string }>(await client.createOffer(token, 'degree'))
        const { processId, offerUrl } = parseCredentialOfferUri(created.credential_offer_uri)
        const offer = (await (await fetch(offerUrl)).json()) as {
          grants: Record<string, { 'pre-authorized_code': string }>
        }
        const code = Object.values(offer.grants)[0]?.['pre-authorized_code'] ?? ''
        assert.ok(code.length > 20)
        await fetch(`${server.url}/admin/v1/issuanceRequests/${processId}?secret=${code}`, {
          headers: { authorization: `jwt ${token}` },
        })
        await fetch(`${server.url}/docs/json`)
        await fetch(`${server.url}/health`)
        // The lines are written after each answer: wait for the last one.
        const deadline = Date.now() + 5000
        while (
          server === logged &&
          !/issuanceRequests\/\S+ \d{3}/.test(server.output()) &&
          Date.now() < deadline
        ) {
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        const lines = server
          .output()
          .split('\n')
          .filter((line) => /^\d{4}-\d\d-\d\dT/.test(line))
        if (server === quiet) {
          assert.deepEqual(lines, [], '--quiet still logs requests')
          continue
        }
        for (const line of lines) assert.match(line, LOG_LINE)
        const requests = lines.map((line) => {
          const [, method, path, status] = LOG_LINE.exec(line) ?? []
          return `${method} ${path} ${status}`
        })
        const short = `${processId.slice(0, 8)}…`
        assert.deepEqual(requests, [
          'POST /admin/v1/api_keys/login 200',
          'POST /api/v3/oidc-issuance/credential-offer 201',
          `GET /oid4vci/demo/credential-offer/${short} 200`,
          `GET /admin/v1/issuanceRequests/${short}?… 200`,
        ])
        const output = server.output()
        for (const secret of [DEMO.app.secret, token, code, processId]) {
          assert.ok(!output.includes(secret), `the log shows a secret: ${secret.slice(0, 12)}…`)
        }
      }
    } finally {
      for (const server of [logged, quiet]) server.child.kill('SIGTERM')
      await Promise.all([logged.exited, quiet.exited])
    }
    // The path rules on their own.
    assert.equal(
      loggedPath('/oid4vp/demo/responses/3f1c2b7a-9e4d-4c1b-8a6f-2d5e7c9b1a00'),
      '/oid4vp/demo/responses/3f1c2b7a…',
    )
    assert.equal(loggedPath(`/x/${'a'.repeat(41)}?code=1#f`), '/x/aaaaaaaa…?…')
    assert.equal(loggedPath('/docs/static/index.html'), undefined)
    assert.equal(loggedPath('/demo/api/verification'), undefined)
    assert.equal(loggedPath('/documents'), '/documents')
  })

  // Issue 19: with --log-level, pino's request lines carried whole offer URLs (whoever reads one fetches the code).
  test('pino full logs show paths as the request log does: no query string, capability ids cut', async () => {
    const lines: string[] = []
    const app = await buildApp({
      config: twoTenantConfig(),
      logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } },
    })
    try {
      const id = '3f1c2b7a-9e4d-4c1b-8a6f-2d5e7c9b1a00'
      await app.inject({ url: `/oid4vci/demo/credential-offer/${id}?code=secret-code` })
      const requests = lines.map((line) => JSON.parse(line) as { req?: { url: string } }).filter((l) => l.req)
      assert.deepEqual(
        requests.map((l) => l.req?.url),
        ['/oid4vci/demo/credential-offer/3f1c2b7a…?…'],
      )
      assert.ok(!lines.join('').includes(id) && !lines.join('').includes('secret-code'), lines.join(''))
    } finally {
      await app.close()
    }
  })
})
