import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { loadSources } from '@cucumber/cucumber/api'
import { conformance, featureFiles, parseShard, shardFiles } from '../../src/cli/conformance.ts'
import type { ConformanceSummary } from '../../src/harness/report.ts'
import { type CliResult, explain, ROOT, runCli } from '../fixtures/cli.ts'

// `vc-harness conformance` end to end: two small runs of the real suite against the embedded service
// (one serial, one with two workers and an expected-failures file under --strict) run side by side, then
// summaries rebuilt from their message files and argument errors.

// Two fast login scenarios that need nothing but the embedded service.
const TAGS = '@auth and @interface-4.1 and not @security and not @needs-portal'

const cli = (args: string[]) => runCli(['conformance', ...args])
const readSummary = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'conformance.json'), 'utf8')) as ConformanceSummary

describe('vc-harness conformance', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-conformance-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const serialDir = join(dir, 'serial')
  const parallelDir = join(dir, 'parallel')
  const expectedFile = join(dir, 'expected-failures.json')
  let selected: string[] = []
  let serial: CliResult
  let parallel: CliResult

  before(async () => {
    // What cucumber itself selects with the tag expression, independently of the CLI.
    const { plan } = await loadSources(
      {
        paths: ['features/**/*.feature'],
        defaultDialect: 'en',
        names: [],
        tagExpression: TAGS,
        order: 'defined',
      },
      { cwd: ROOT },
    )
    selected = plan.map((p) => p.name)
    assert.ok(selected.length >= 2 && selected.length <= 4, `the tags select ${selected.length} scenarios`)
    writeFileSync(
      expectedFile,
      JSON.stringify({
        $comment: 'test',
        expectedFailures: [{ scenario: selected[0], reason: 'was broken once (issue 0)' }],
      }),
    )
    ;[serial, parallel] = await Promise.all([
      cli(['--tags', TAGS, '--reports', serialDir]),
      cli([
        '--tags',
        TAGS,
        '--parallel',
        '2',
        '--expected-failures',
        expectedFile,
        '--strict',
        '--reports',
        parallelDir,
      ]),
    ])
  })

  test('a run passes with exit 0, one progress line per scenario, a summary and every report', () => {
    assert.equal(serial.code, 0, explain(serial))
    for (const [i, name] of selected.entries()) {
      const line = new RegExp(
        `^✔ \\[${i + 1}/${selected.length}\\] ${escapeRegExp(name)} \\(\\d+ ms\\)$`,
        'm',
      )
      assert.match(serial.stdout, line)
    }
    // The console formatter of cucumber.mjs does not print as well.
    assert.doesNotMatch(serial.stdout, /\d+ scenarios? \(/)
    assert.match(serial.stdout, /Slowest scenarios:/)
    assert.match(
      serial.stdout,
      new RegExp(
        `Conformance on the embedded target in [\\d.]+ s: ${selected.length} requirements: ${selected.length} pass, 0 fail`,
      ),
    )
    assert.match(serial.stdout, /Gate: passed/)
    for (const file of [
      'cucumber.html',
      'cucumber.json',
      'cucumber.xml',
      'cucumber.ndjson',
      'conformance.json',
      'conformance.md',
    ]) {
      assert.ok(existsSync(join(serialDir, file)), `${file} was not written`)
      assert.match(serial.stdout, new RegExp(`${escapeRegExp(join(serialDir, file))}`))
    }
    const summary = readSummary(serialDir)
    assert.deepEqual(summary.requirements.map((r) => r.name).sort(), [...selected].sort())
    assert.ok(summary.requirements.every((r) => r.status === 'pass'))
    assert.deepEqual(summary.target, { kind: 'embedded' })
    assert.equal(summary.gate.passed, true)
    for (const name of selected)
      assert.ok(readFileSync(join(serialDir, 'conformance.md'), 'utf8').includes(name))
  })

  test('a listed scenario that passes is an unexpected pass, failing the gate under --strict (with 2 workers)', () => {
    assert.equal(parallel.code, 1, explain(parallel))
    assert.match(parallel.stdout, /UNEXPECTED PASS, listed as a known failure: remove it from the list/)
    assert.match(parallel.stdout, /Unexpected passes \(1\): remove it from .*expected-failures\.json/)
    assert.match(parallel.stdout, /Gate: FAILED \(1 unexpected pass \(--strict\)\)/)
    const summary = readSummary(parallelDir)
    assert.deepEqual(
      summary.requirements.map((r) => [r.name, r.status]).sort(),
      selected.map((name, i) => [name, i === 0 ? 'unexpected-pass' : 'pass']).sort(),
    )
    assert.equal(summary.strict, true)
  })

  test('--report-only rebuilds the summary from message files, merging runs', async () => {
    const [merged, listed] = await Promise.all([
      cli([
        '--report-only',
        join(serialDir, 'cucumber.ndjson'),
        join(parallelDir, 'cucumber.ndjson'),
        '--reports',
        join(dir, 'merged'),
      ]),
      cli([
        '--report-only',
        join(serialDir, 'cucumber.ndjson'),
        '--expected-failures',
        expectedFile,
        '--reports',
        join(dir, 'listed'),
      ]),
    ])
    // Both runs hold the same scenarios: each counts once, as its later result; no expected failures now.
    assert.equal(merged.code, 0, explain(merged))
    assert.match(merged.stdout, /Gate: passed/)
    const both = readSummary(join(dir, 'merged'))
    assert.equal(both.runs.length, 2)
    // A merged JUnit file for the CI test view of the shards.
    const junit = readFileSync(join(dir, 'merged', 'cucumber.xml'), 'utf8')
    assert.match(junit, new RegExp(`<testsuites [^>]*tests="${selected.length}" failures="0"`))
    assert.match(merged.stdout, /junit xml\s+.*merged\/cucumber\.xml/)
    assert.deepEqual(both.requirements.map((r) => r.name).sort(), [...selected].sort())
    assert.ok(both.requirements.every((r) => r.status === 'pass'))

    // Without --strict an unexpected pass is reported but does not fail the gate.
    assert.equal(listed.code, 0, explain(listed))
    assert.match(listed.stdout, /Unexpected passes \(1\)/)
    const summary = readSummary(join(dir, 'listed'))
    assert.equal(summary.totals.unexpectedPass, 1)
    assert.deepEqual(
      summary.requirements.map((r) => r.durationMs),
      readSummary(serialDir).requirements.map((r) => r.durationMs),
    )
  })

  test('a usage error exits 2 with a clear message', async () => {
    const r = await cli(['--parallel', '0'])
    assert.equal(r.code, 2, explain(r))
    assert.match(r.stderr, /^vc-harness conformance: --parallel: expected a whole number ≥ 1, got "0"/m)
  })

  test('bad arguments and a malformed expected-failures file are usage errors (exit 2 in main)', async () => {
    const badFile = join(dir, 'bad-expected.json')
    writeFileSync(badFile, JSON.stringify({ expectedFailures: [{ scenario: 'S' }] }))
    const cases: [string[], RegExp][] = [
      [['--no-such-option'], /Unknown option '--no-such-option'/],
      [['--target', 'staging'], /--target: expected embedded, child, external; got "staging"/],
      [['--profile', join(dir, 'nowhere.json')], /--profile: no such file/],
      [['--target', 'embedded', '--profile', badFile], /--profile describes an external deployment/],
      [['--report-only'], /--report-only: name at least one \.ndjson message file/],
      [['--report-only', 'x.ndjson', '--tags', '@a'], /--tags does not apply with --report-only/],
      [['stray'], /no such feature file or folder: stray/],
      [['--shard', '1/2', 'features/auth'], /--shard splits the whole suite by feature file/],
      [['--retry', 'x'], /--retry: expected a whole number ≥ 0, got "x"/],
      [['--name', '('], /--name: "\(" is not a regular expression/],
      [['--format', ':x'], /--format: expected FORMAT\[:PATH\], got ":x"/],
      [['--report-only', 'x.ndjson', '--list'], /--list does not apply with --report-only/],
      [
        ['--expected-failures', badFile],
        /bad-expected\.json: expectedFailures\[0\] \("S"\): "reason" must say why/,
      ],
      [
        ['--expected-failures', join(dir, 'missing.json')],
        /missing\.json: cannot read the expected-failures file/,
      ],
    ]
    for (const [args, message] of cases) {
      await assert.rejects(
        conformance(args),
        (e: Error & { code?: string }) =>
          e.code?.startsWith('ERR_PARSE_ARGS') === true && message.test(e.message),
        args.join(' '),
      )
    }
  })
})

describe('shards', () => {
  test('shard K of N holds the feature files whose sorted index i has i % N == K - 1', () => {
    const files = [
      'features/a.feature',
      'features/b.feature',
      'features/c.feature',
      'features/d.feature',
      'features/e.feature',
    ]
    assert.deepEqual(shardFiles(files, parseShard('1/2')), [
      'features/a.feature',
      'features/c.feature',
      'features/e.feature',
    ])
    assert.deepEqual(shardFiles(files, parseShard('2/2')), ['features/b.feature', 'features/d.feature'])
    assert.deepEqual(shardFiles(files, parseShard('3/3')), ['features/c.feature'])
    const all = featureFiles()
    assert.deepEqual(all, [...all].sort())
    assert.ok(all.includes('features/auth/login.feature'))
    const union = [1, 2, 3].flatMap((k) => shardFiles(all, { index: k, total: 3 }))
    assert.deepEqual(union.sort(), all)
  })

  test('a bad shard is a usage error', () => {
    for (const bad of ['3/2', '0/2', '1', 'a/b', '1/0']) {
      assert.throws(
        () => parseShard(bad),
        (e: Error & { code?: string }) =>
          e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && e.message.includes(`got "${bad}"`),
      )
    }
  })
})

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
