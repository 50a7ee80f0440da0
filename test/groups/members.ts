import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

// The unit suite spends about 2 s loading its modules (Veramo, the Sphereon libraries, the service) in every
// test process. Files that keep no state at their root (no root-level before/after hooks) share eight
// processes instead of one each: test/groups/shared-{1..8}.ts import them. The others keep their own
// process (their root hooks would run for every file of a shared one). `npm run test:unit` runs both kinds.

const DIR = fileURLToPath(new URL('..', import.meta.url))
const ROOT_HOOK = /^(before|after|beforeEach|afterEach)\(/m

/** Every test file under test/ (its path from there, e.g. `wallet/present-v1.test.ts`), in path order. */
export function testFiles(): string[] {
  return readdirSync(DIR, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
}

/** Every test file whose root holds no hooks, in path order. */
export function sharedFiles(): string[] {
  return testFiles().filter((f) => !ROOT_HOOK.test(readFileSync(`${DIR}${f}`, 'utf8')))
}

/** Imports the files of share `k` of `n` (round robin in path order). */
export async function importShare(k: number, n: number): Promise<void> {
  for (const [i, file] of sharedFiles().entries()) {
    if (i % n === k) await import(`../${file}`)
  }
}
