/**
 * What a hostile presentation costs the verifier (issue 30), over real HTTP against a running service: the
 * fan-out SD-JWTs (one disclosure referenced 4 times per level, 8 and 12 levels: 65,536 and 16.7 million
 * claims if unpacked) posted to a dcql session's response_uri without any login, beside a genuine SD-JWT VC
 * presentation of the same session template as the baseline of the same run. For each row: the answer's
 * status and time (median of the runs), the longest silence of `/health` polled every 5 ms while the row
 * ran (every tenant waits on the same event loop), and the service's RSS growth. Prints figures and ratios
 * against the genuine presentation; asserts nothing, but exits 1 when an attack is not refused with 400
 * (a benchmark of an accepted attack measures nothing).
 *
 *   node --import tsx bench/attacks.ts [--smoke] [--runs N]
 */
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import type { DcqlSessionCreated } from '../src/client/index.ts'
import { ok } from '../src/client/index.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../src/shared/did-key.ts'
import { decodeJws } from '../src/shared/jws.ts'
import { startDcqlService, VERIFIABLE_ID } from '../test/fixtures/dcql-service.ts'
import { owfHolder, sdJwtPresentation } from '../test/fixtures/owf-holder.ts'
import { fanOutSdJwt, withKeyBinding } from '../test/fixtures/sd-jwt-attacks.ts'
import { percentile } from './stats.ts'

const { values } = parseArgs({
  options: { smoke: { type: 'boolean', default: false }, runs: { type: 'string' } },
})
const runs = Number(values.runs ?? (values.smoke ? 2 : 15))
if (!Number.isInteger(runs) || runs < 1) {
  console.error('usage: node --import tsx bench/attacks.ts [--smoke] [--runs N]')
  process.exit(2)
}

const service = await startDcqlService()
const holder = owfHolder('ES256')
const credential = await service.issue(holder, 'pid', VERIFIABLE_ID)
const pair = generateKeyPair('EdDSA')
const key = didKeyFromPublicKey(pair.publicKey)
const attacker = { alg: 'EdDSA' as const, privateKey: pair.privateKey, kid: key.kid, iss: key.did }

async function openSession() {
  const created = ok(
    await service.rp.createSession<DcqlSessionCreated>(service.appToken, 'pid-dcql'),
    'session',
  )
  const requestUri = new URL(created.authentication_request).searchParams.get('request_uri') as string
  const request = decodeJws(await (await fetch(requestUri)).text()).payload
  return request as { nonce: string; client_id: string; state: string; response_uri: string }
}

type Row = {
  name: string
  bytes: number
  present: (r: Awaited<ReturnType<typeof openSession>>) => Promise<string>
}
const rows: Row[] = [
  {
    name: 'genuine SD-JWT VC presentation',
    bytes: 0,
    present: (r) =>
      sdJwtPresentation(holder, credential, ['familyName'], { nonce: r.nonce, aud: r.client_id }),
  },
  ...[8, 12].map((levels) => ({
    name: `fan-out 4×${levels}`,
    bytes: 0,
    present: async (r: Awaited<ReturnType<typeof openSession>>) =>
      withKeyBinding(
        fanOutSdJwt(attacker, 4, levels, { cnf: { jwk: holder.holder.publicJwk } }),
        { alg: holder.alg, privateKey: holder.privateKey },
        { nonce: r.nonce, aud: r.client_id },
      ),
  })),
]

/** Polls /health every 5 ms until stopped; answers the longest gap between two answers (ms). */
function watchHealth() {
  let last = performance.now()
  let longest = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      await fetch(`${service.server.url}/health`).then((r) => r.arrayBuffer())
      const at = performance.now()
      longest = Math.max(longest, at - last)
      last = at
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  })()
  return async () => {
    stopped = true
    await loop
    return longest
  }
}

const rssMiB = () => process.memoryUsage().rss / 2 ** 20
let failed = false
const results: { name: string; status: number; ms: number; health: number; rss: number; bytes: number }[] = []
for (const row of rows) {
  const times: number[] = []
  let status = 0
  let bytes = 0
  const rssBefore = rssMiB()
  const stop = watchHealth()
  for (let i = 0; i < runs; i++) {
    const request = await openSession()
    const token = await row.present(request)
    bytes = token.length
    const started = performance.now()
    const response = await fetch(request.response_uri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        state: request.state,
        vp_token: JSON.stringify({ VerifiableId: [token] }),
      }),
    })
    await response.arrayBuffer()
    times.push(performance.now() - started)
    status = response.status
  }
  const health = await stop()
  const expected = row.name.startsWith('genuine') ? 200 : 400
  if (status !== expected) failed = true
  results.push({
    name: row.name,
    status,
    ms: percentile(times, 50),
    health,
    rss: rssMiB() - rssBefore,
    bytes,
  })
}
await service.server.close()

const baseline = results[0]?.ms ?? 1
console.log(
  `attacks on the verifier: ${runs} run(s) per row, the service in this process (RSS is the process's)`,
)
console.log(
  '| row | token bytes | answer | median ms | vs genuine | /health longest gap ms | RSS growth MiB |',
)
console.log('| --- | --- | --- | --- | --- | --- | --- |')
for (const r of results) {
  console.log(
    `| ${r.name} | ${r.bytes} | ${r.status} | ${r.ms.toFixed(1)} | ${(r.ms / baseline).toFixed(2)} | ${r.health.toFixed(1)} | ${r.rss.toFixed(1)} |`,
  )
}
if (failed) {
  console.error('a row was not answered as expected (genuine 200, attacks 400)')
  process.exit(1)
}
