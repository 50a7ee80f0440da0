// Login timing oracle (issue 19): does a known API key id with a wrong secret answer slower than an unknown
// id? Prints medians of interleaved samples over real login requests (in-process inject) and, as the
// baseline measured in the same run, the lookup the service used before (`apiKeys.get`: a row for a known
// id, none for an unknown one) next to the one it uses now (`apiKeys.forLogin`: one row either way).
//
//   node --import tsx bench/login-timing.ts [--smoke] [--samples N] [--rounds N]

import { parseArgs } from 'node:util'
import { DUMMY_HASH } from '../src/service/auth/secrets.ts'
import { DEMO, loginRequest, makeApp, twoTenantConfig } from '../test/helpers.ts'

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    samples: { type: 'string' },
    rounds: { type: 'string' },
  },
})
const samples = Number(values.samples ?? (values.smoke ? 200 : 1000))
const rounds = Number(values.rounds ?? 2)

const t = await makeApp(twoTenantConfig())
const store = t.app.services.store
const known = { ...DEMO.app, secret: 'not-the-secret-at-all-xxxxxx' }
const unknown = { ...known, id: '00000000-0000-4000-8000-000000000000' }

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? Number.NaN

/** Interleaved samples of two operations (µs), so drift of the machine hits both alike. */
async function pair(a: () => Promise<unknown>, b: () => Promise<unknown>) {
  const ta: number[] = []
  const tb: number[] = []
  for (let i = 0; i < samples; i++) {
    let start = process.hrtime.bigint()
    await a()
    ta.push(Number(process.hrtime.bigint() - start) / 1000)
    start = process.hrtime.bigint()
    await b()
    tb.push(Number(process.hrtime.bigint() - start) / 1000)
  }
  return { known: median(ta), unknown: median(tb) }
}

const row = (what: string, r: { known: number; unknown: number }) =>
  console.log(
    `${what.padEnd(44)} known ${r.known.toFixed(2).padStart(7)} µs  unknown ${r.unknown.toFixed(2).padStart(7)} µs  difference ${(r.known - r.unknown).toFixed(2).padStart(6)} µs`,
  )

// Warm-up: JIT, statement caches.
await pair(
  () => loginRequest(t.app, known),
  () => loginRequest(t.app, unknown),
)
console.log(`login timing: ${rounds} rounds × ${samples} interleaved samples, medians`)
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round}`)
  row(
    '  login, wrong secret (the whole request)',
    await pair(
      () => loginRequest(t.app, known),
      () => loginRequest(t.app, unknown),
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
await t.close()
