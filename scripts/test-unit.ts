import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { sharedFiles, testFiles } from '../test/groups/members.ts'

// `npm run test:unit`: the files with root hooks in a process each, the others in two shared processes
// (test/groups/members.ts says why), eight of them so no one is the long pole (issue 36 added enough for six to near the limit) (each must finish within the 4-minute limit below, under a loaded CI machine too); two at a time, as before. Extra arguments go to node --test.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const shared = new Set(sharedFiles())
const own = testFiles()
  .filter((f) => !shared.has(f))
  .map((f) => `test/${f}`)
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=2',
    '--test-reporter=spec',
    // A test that hangs fails after 4 minutes, named, instead of holding CI until its own limit.
    '--test-timeout=240000',
    ...process.argv.slice(2),
    ...[1, 2, 3, 4, 5, 6, 7, 8].map((k) => `test/groups/shared-${k}.ts`),
    ...own,
  ],
  { cwd: ROOT, stdio: 'inherit' },
)
process.exit(result.status ?? 1)
