// Login timing oracle (issue 19): does a known API key id with a wrong secret answer slower than an unknown
// id? Prints medians of interleaved samples over real login requests (in-process inject) and, as the
// baseline measured in the same run, the lookup the service used before (`apiKeys.get`: a row for a known
// id, none for an unknown one) next to the one it uses now (`apiKeys.forLogin`: one row either way).
//
//   node --import tsx bench/login-timing.ts [--smoke] [--samples N] [--rounds N]

import { parseArgs } from 'node:util'
import { buildApp } from '../src/service/app.ts'
import { DUMMY_HASH } from '../src/service/auth/secrets.ts'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../src/service/config/index.ts'
import { DEMO_KEYS } from './protocol.ts'

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    samples: { type: 'string' },
    rounds: { type: 'string' },
  },
})
const samples = Number(values.samples ?? (values.smoke ? 200 : 1000))
const rounds = Number(values.rounds ?? 2)

// The demo configuration in memory (its test mode exempts loopback from the failed-login limit).
const app = await buildApp({ config: loadConfigFile(DEMO_CONFIG_PATH) })
const store = app.services.store
const known = { id: DEMO_KEYS.issuance.keyId, secret: 'not-the-secret-at-all-xxxxxx' }
const unknown = { ...known, id: '00000000-0000-4000-8000-000000000000' }
const login = (key: { id: string; secret: string }) =>
  app.inject({
    method: 'POST',
    url: '/admin/v1/api_keys/login',
    headers: {
      authorization: `Basic ${Buffer.from(`${key.id}:${key.secret}`).toString('base64')}`,
      tenant: DEMO_KEYS.tenant,
    },
  })

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? Number.NaN

/** One timed call (µs). */
async function timed(op: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint()
  await op()
  return Number(process.hrtime.bigint() - start) / 1000
}

/**
 * Interleaved samples of two operations (µs), so drift of the machine hits both alike; which goes first
 * alternates, because the first of a pair measured ~0.9 µs slower whatever it was.
 */
async function pair(a: () => Promise<unknown>, b: () => Promise<unknown>) {
  const ta: number[] = []
  const tb: number[] = []
  for (let i = 0; i < samples; i++) {
    if (i % 2 === 0) {
      ta.push(await timed(a))
      tb.push(await timed(b))
    } else {
      tb.push(await timed(b))
      ta.push(await timed(a))
    }
  }
  return { known: median(ta), unknown: median(tb) }
}

const row = (what: string, r: { known: number; unknown: number }) =>
  console.log(
    `${what.padEnd(44)} known ${r.known.toFixed(2).padStart(7)} µs  unknown ${r.unknown.toFixed(2).padStart(7)} µs  difference ${(r.known - r.unknown).toFixed(2).padStart(6)} µs`,
  )

// Warm-up: JIT, statement caches.
await pair(
  () => login(known),
  () => login(unknown),
)
console.log(`login timing: ${rounds} rounds × ${samples} interleaved samples, medians`)
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round}`)
  row(
    '  login, wrong secret (the whole request)',
    await pair(
      () => login(known),
      () => login(unknown),
    ),
  )
  row(
    '  baseline: apiKeys.get (the lookup before)',
    await pair(
      () => store.apiKeys.get(known.id),
      () => store.apiKeys.get(unknown.id),
    ),
  )
  row(
    '  apiKeys.forLogin (the lookup now)',
    await pair(
      () => store.apiKeys.forLogin(known.id, DUMMY_HASH),
      () => store.apiKeys.forLogin(unknown.id, DUMMY_HASH),
    ),
  )
}
await app.close()
