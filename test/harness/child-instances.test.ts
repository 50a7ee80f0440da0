import assert from 'node:assert/strict'
import { createServer, request, type Server } from 'node:http'
import { describe, test } from 'node:test'
import { parseChildInstances, requireSharedDatabase, startChild } from '../../src/harness/child-target.ts'
import { TargetConfigError } from '../../src/harness/profile.ts'
import { startRoundRobinProxy } from '../../src/harness/round-robin-proxy.ts'
import { explain, runCli } from '../fixtures/cli.ts'

// The child target with several instances behind a round-robin proxy (issue 21): the instance count and
// its refusal without a shared database, and the proxy (turn order, streams as they come, close ends them).

describe('child target instances', () => {
  test('the count: default 1, a whole number ≥ 1, more than one only on a shared database', () => {
    assert.equal(parseChildInstances(undefined, 'x'), 1)
    assert.equal(parseChildInstances('', 'x'), 1)
    assert.equal(parseChildInstances('3', 'x'), 3)
    for (const bad of ['0', '-1', '1.5', 'two']) {
      assert.throws(
        () => parseChildInstances(bad, `--instances ${bad}`),
        (e: Error) => e instanceof TargetConfigError && e.message.startsWith(`--instances ${bad}: expected`),
      )
    }
    requireSharedDatabase(1, {}, 'x')
    requireSharedDatabase(2, { VC_HARNESS_DATABASE_URL: 'postgres://h/d' }, 'x')
    assert.throws(
      () => requireSharedDatabase(2, {}, '--instances 2'),
      /^TargetConfigError: --instances 2: several instances must share one database: set VC_HARNESS_DATABASE_URL .*SQLite/,
    )
  })

  test('the child target refuses several instances without VC_HARNESS_DATABASE_URL before starting any', async () => {
    await assert.rejects(
      startChild({ VC_HARNESS_CHILD_INSTANCES: '2', VC_HARNESS_DATABASE_URL: '' }),
      (e: Error) =>
        e instanceof TargetConfigError && /^VC_HARNESS_CHILD_INSTANCES=2: several/.test(e.message),
    )
  })

  test('vc-harness conformance --instances: a usage error in one line (exit 2)', async () => {
    const env = { VC_HARNESS_DATABASE_URL: '', VC_HARNESS_CHILD_INSTANCES: '' }
    const [noDatabase, notChild] = await Promise.all([
      runCli(['conformance', '--target', 'child', '--instances', '2'], { env }),
      runCli(['conformance', '--target', 'embedded', '--instances', '2'], { env }),
    ])
    assert.equal(noDatabase.code, 2, explain(noDatabase))
    assert.match(
      noDatabase.stderr,
      /^vc-harness conformance: --instances 2: several instances must share one database: set VC_HARNESS_DATABASE_URL .*SQLite.*\n$/,
    )
    assert.equal(notChild.code, 2, explain(notChild))
    assert.match(notChild.stderr, /--instances applies to the child target only/)
  })
})

/** An upstream answering its name, echoing a POST body, and holding /events open after one event. */
async function upstream(name: string, streams: Set<string>): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(`data: from ${name}\n\n`)
      streams.add(name)
      res.on('close', () => streams.delete(name))
      return
    }
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk))
    req.on('end', () => res.end(`${name}${body ? `:${body}` : ''}`))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as { port: number }).port}`

describe('round-robin proxy', () => {
  test('request n goes to upstream n mod N; a stream passes event by event; close() ends it', async () => {
    const streams = new Set<string>()
    const [a, b] = await Promise.all([upstream('a', streams), upstream('b', streams)])
    const proxy = await startRoundRobinProxy()
    try {
      assert.equal((await fetch(proxy.url)).status, 503, 'no upstream yet')
      proxy.setUpstreams([urlOf(a), urlOf(b)])
      const answers: string[] = []
      for (let i = 0; i < 4; i++) answers.push(await (await fetch(`${proxy.url}/x`)).text())
      answers.push(await (await fetch(proxy.url, { method: 'POST', body: 'hello' })).text())
      assert.deepEqual(answers, ['a', 'b', 'a', 'b', 'a:hello'])
      assert.deepEqual(proxy.served, [3, 2])

      // The next turn is b's: its first event arrives while the stream stays open.
      const ended = new Promise<string>((resolve, reject) => {
        const stream = request(`${proxy.url}/events`, (res) => {
          let text = ''
          res.on('data', (chunk: Buffer) => {
            text += chunk
            if (text.includes('\n\n')) void proxy.close()
          })
          res.on('close', () => resolve(text))
        })
        stream.on('error', reject)
        stream.end()
      })
      assert.equal(await ended, 'data: from b\n\n')
      // Closed towards the upstream too.
      for (let waited = 0; streams.size > 0 && waited < 2000; waited += 10) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      assert.deepEqual([...streams], [])
    } finally {
      await proxy.close()
      for (const server of [a, b]) {
        server.closeAllConnections()
        server.close()
      }
    }
  })
})
