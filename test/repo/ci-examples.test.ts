import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { BIN, ROOT } from '../fixtures/cli.ts'

// Issue 32: the CI examples a user copies (examples/ci/) must work. Every `npx vc-harness` line of both files
// is run here as written, its CI variables set as the CI would (each shard of the matrix or `parallel`), in a
// fresh folder, with `npx vc-harness` meaning this checkout's bin. Three narrowings keep this test to a
// minute, each appended to the command, never replacing a word of it: the shards select `@auth or
// @attended or @webhooks or @limits` (four feature files, which the sorted file list spreads over shards 1 and 2
// — auth/login, security/limits and webhooks/delivery fall in shard 1 since issuance/haip.feature joined the
// list; the sharding and the merge are what is checked, not the suite's requirements: npm test runs those), the wallet test plans run one case (after the one that gives the wallet its credential), and the bench smoke one flow kind.

const NARROW = {
  conformance: ` --tags '@auth or @attended or @webhooks or @limits'`,
  'wallet-test': ' --plan presentation-pe --case presentation-pe:setup --case presentation-pe:positive',
  bench: ' --flow issuance-ready',
} as const

interface Ran {
  command: string
  code: number | null
  output: string
}

/** Runs `command` through /bin/sh (its globs and quotes as CI's shell reads them) in `cwd`. */
function sh(command: string, cwd: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd, env: { ...process.env, FORCE_COLOR: '0' } })
    let output = ''
    child.stdout.on('data', (d) => {
      output += d
    })
    child.stderr.on('data', (d) => {
      output += d
    })
    child.on('close', (code) => resolve({ command, code, output }))
  })
}

/** The `npx vc-harness …` lines of a CI file, in order. */
function commands(text: string): string[] {
  return [...text.matchAll(/npx vc-harness [^\n]+/g)].map((m) => m[0].trim())
}

/** What runs locally for one line: this checkout's bin, and the narrowing of its subcommand. */
function local(line: string): string {
  const subcommand = /^npx vc-harness ([\w-]+)/.exec(line)?.[1] as keyof typeof NARROW
  const narrowed = line.includes('--report-only') ? '' : (NARROW[subcommand] ?? '')
  return `${line.replace(/^npx vc-harness/, `node ${BIN}`)}${narrowed}`
}

interface Example {
  file: string
  /** The shard commands for shard k of n. */
  shard: (line: string, k: number, n: number) => string
  shards: number
  /** Where the merge command finds shard k's reports (GitHub downloads each artifact into its own folder). */
  artifact: (k: number) => string
  mergedDir: string
}

const EXAMPLES: Example[] = [
  {
    file: 'examples/ci/github-actions.yml',
    // GitHub's expression syntax, written as it stands in the file (not a template placeholder).
    shard: (line, k) => line.replaceAll(`$\{{ matrix.shard }}`, String(k)),
    shards: 3,
    artifact: (k) => `shards/conformance-shard-${k}`,
    mergedDir: 'reports/merged',
  },
  {
    file: 'examples/ci/gitlab-ci.yml',
    shard: (line, k, n) =>
      line.replaceAll('$CI_NODE_INDEX', String(k)).replaceAll('$CI_NODE_TOTAL', String(n)),
    shards: 3,
    artifact: () => '',
    mergedDir: 'reports/merged',
  },
]

const results = new Map<string, { dir: string; runs: Ran[] }>()

before(async () => {
  for (const example of EXAMPLES) {
    const dir = mkdtempSync(join(tmpdir(), 'vc-harness-ci-'))
    const runs: Ran[] = []
    for (const line of commands(readFileSync(join(ROOT, example.file), 'utf8'))) {
      if (/--shard /.test(line)) {
        const shards = await Promise.all(
          Array.from({ length: example.shards }, (_, i) =>
            sh(local(example.shard(line, i + 1, example.shards)), dir),
          ),
        )
        runs.push(...shards)
        // The artifacts, where the next job of this CI finds them.
        for (let k = 1; k <= example.shards; k++) {
          const to = example.artifact(k)
          if (to) cpSync(join(dir, `reports/shard-${k}`), join(dir, to), { recursive: true })
        }
      } else runs.push(await sh(local(line), dir))
    }
    results.set(example.file, { dir, runs })
  }
})
after(() => {
  for (const { dir } of results.values()) rmSync(dir, { recursive: true, force: true })
})

for (const example of EXAMPLES) {
  describe(example.file, () => {
    test('has the shard, merge, wallet-test and bench commands, on a Node that is not past its end of life', () => {
      const text = readFileSync(join(ROOT, example.file), 'utf8')
      const lines = commands(text)
      assert.equal(lines.filter((l) => l.includes('--shard')).length, 1)
      assert.equal(lines.filter((l) => l.includes('--report-only')).length, 1)
      assert.equal(lines.filter((l) => l.startsWith('npx vc-harness wallet-test')).length, 1)
      assert.equal(lines.filter((l) => l.startsWith('npx vc-harness bench --smoke')).length, 1)
      assert.doesNotMatch(
        text,
        /node-version: 20\b|image: node:20/,
        'Node 20 reached its end of life in April 2026',
      )
      assert.doesNotMatch(text, /\t/, 'YAML is indented with spaces')
    })

    test('every command exits 0 when run as the CI would', () => {
      const { runs } = results.get(example.file) as { runs: Ran[] }
      assert.ok(runs.length >= 6, `${runs.length} commands ran`)
      for (const r of runs) assert.equal(r.code, 0, `${r.command}\n${r.output}`)
    })

    test('the merged report holds every shard, with HTML, JUnit and Markdown', () => {
      const { dir } = results.get(example.file) as { dir: string }
      const merged = join(dir, example.mergedDir)
      for (const file of ['cucumber.html', 'cucumber.xml', 'conformance.md', 'conformance.json']) {
        assert.ok(existsSync(join(merged, file)), `${file} in the merged report`)
      }
      const total = (path: string) =>
        (JSON.parse(readFileSync(path, 'utf8')) as { totals: { requirements: number; pass: number } }).totals
      const shards = Array.from({ length: example.shards }, (_, k) =>
        total(join(dir, `reports/shard-${k + 1}/conformance.json`)),
      )
      const sum = shards.reduce((n, t) => n + t.requirements, 0)
      assert.ok(shards.filter((t) => t.requirements > 0).length >= 2, 'the selection spans several shards')
      assert.deepEqual(total(join(merged, 'conformance.json')), {
        ...total(join(merged, 'conformance.json')),
        requirements: sum,
        pass: sum,
      })
      assert.match(readFileSync(join(merged, 'cucumber.html'), 'utf8'), /CUCUMBER_MESSAGES/)
    })

    test('the wallet test plans and the bench smoke leave their reports', () => {
      const { dir } = results.get(example.file) as { dir: string }
      assert.ok(existsSync(join(dir, 'reports/wallet-test/wallet-test.xml')))
      assert.ok(existsSync(join(dir, 'reports/bench.smoke.json')))
    })
  })
}
