import { spawn } from 'node:child_process'
import { postgresSkipReason, startPostgres } from '../src/harness/postgres-cluster.ts'

// The conformance suite against `vc-harness serve --database` (issue 21): a private PostgreSQL cluster
// (test/fixtures/postgres.ts), a fresh database, the child target with $VC_HARNESS_DATABASE_URL as two
// instances behind a round-robin proxy (--instances 2: every flow alternates between them, so state one
// instance keeps to itself fails a scenario), reports in reports/postgres/ (the embedded run's stay in
// reports/). Without a PostgreSQL server it says why and passes, unless VC_HARNESS_REQUIRE_POSTGRES=1 (CI),
// as the PostgreSQL unit tests do.
//
//   node --import tsx scripts/conformance-postgres.ts [conformance options…]

const skip = postgresSkipReason()
if (skip) {
  console.log(`conformance on PostgreSQL skipped: ${skip}`)
  process.exit(0)
}
const server = await startPostgres()
let code = 1
try {
  const url = server.database('conformance')
  const child = spawn(
    process.execPath,
    [
      'bin/vc-harness.mjs',
      'conformance',
      '--target',
      'child',
      '--instances',
      '2',
      '--reports',
      'reports/postgres',
      ...process.argv.slice(2),
    ],
    { stdio: 'inherit', env: { ...process.env, VC_HARNESS_DATABASE_URL: url } },
  )
  code = await new Promise<number>((resolve) => child.on('close', (exit) => resolve(exit ?? 1)))
} finally {
  server.stop()
}
process.exit(code)
