import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// `npm run fuzz:nightly [-- --runs N] [--seed S] [--routes REGEX]`: test/service/fuzz-openapi.test.ts and
// test/shared/fuzz-sd-jwt.test.ts (hostile SD-JWTs, issue 30) with many more runs per route and property than
// `npm test` gives them (default 1,000 instead of 10). The seed is printed first, so a
// failing night is replayed with `--seed S` (or VC_HARNESS_FUZZ_SEED=S and the same VC_HARNESS_FUZZ_RUNS
// on the test file); fast-check prints each shrunk counterexample with its own seed and path as well.

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function option(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1] : undefined
}

const runs = Number(option('runs') ?? process.env.VC_HARNESS_FUZZ_RUNS ?? 1000)
const seed = Number(option('seed') ?? process.env.VC_HARNESS_FUZZ_SEED ?? Date.now() % 2 ** 31)
const routes = option('routes') ?? process.env.VC_HARNESS_FUZZ_ROUTES
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  console.error('usage: fuzz-nightly [--runs N] [--seed S] [--routes REGEX]  (N ≥ 1, S an integer)')
  process.exit(2)
}
console.log(`fuzz:nightly — ${runs} runs per route, seed ${seed}${routes ? `, routes /${routes}/` : ''}`)
console.log(
  `replay: npm run fuzz:nightly -- --runs ${runs} --seed ${seed}${routes ? ` --routes '${routes}'` : ''}`,
)

const started = Date.now()
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-reporter=spec',
    'test/service/fuzz-openapi.test.ts',
    'test/shared/fuzz-sd-jwt.test.ts',
  ],
  {
    cwd: ROOT,
    stdio: 'inherit',
    env: {
      ...process.env,
      VC_HARNESS_FUZZ_RUNS: String(runs),
      VC_HARNESS_FUZZ_SEED: String(seed),
      ...(routes ? { VC_HARNESS_FUZZ_ROUTES: routes } : {}),
    },
  },
)
console.log(
  `fuzz:nightly — seed ${seed}, ${((Date.now() - started) / 1000).toFixed(0)} s, exit ${result.status}`,
)
process.exit(result.status ?? 1)
