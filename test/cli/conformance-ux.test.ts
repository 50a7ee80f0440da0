import assert from 'node:assert/strict'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { loadSources } from '@cucumber/cucumber/api'
import {
  CATALOGUE_DOC,
  catalogueProblems,
  readCatalogueData,
  renderCatalogue,
} from '../../scripts/requirements.ts'
import { splitFormat } from '../../src/cli/conformance.ts'
import { externalProblems } from '../../src/harness/profile.ts'
import type { ConformanceSummary } from '../../src/harness/report.ts'
import { loadScenarios } from '../../src/harness/scenarios.ts'
import { type CliResult, explain, ROOT, runCli } from '../fixtures/cli.ts'

// `vc-harness conformance` as a user meets it (issue 18): filters that select nothing and malformed tag
// expressions are usage errors, a profile is checked before the run with every problem at once, cucumber's
// conventions pass through (feature paths with lines, --name, --list, --dry-run, --fail-fast, --format),
// the CI formats carry expected failures and not-applicable requirements, a harness error exits 3, and
// --version. The runs use test/fixtures/conformance/*.feature (known outcomes), side by side in before().

const OUTCOMES = 'test/fixtures/conformance/outcomes.feature'
const UNDEFINED = 'test/fixtures/conformance/undefined-step.feature'
const FAILS = 'A check that fails on purpose'
const LISTED = 'A check that fails on purpose and is listed as an expected failure'

const cli = runCli

const read = (...path: string[]) => readFileSync(join(...path), 'utf8')
const summaryOf = (dir: string) => JSON.parse(read(dir, 'conformance.json')) as ConformanceSummary
/** The attributes of the first element `name` whose attributes match `where`. */
function attributes(xml: string, name: string, where = /./): Record<string, string> {
  for (const match of xml.matchAll(new RegExp(`<${name}((?:\\s+[\\w.:-]+="[^"]*")*)\\s*/?>`, 'g'))) {
    if (!where.test(match[1] ?? '')) continue
    return Object.fromEntries(
      [...(match[1] ?? '').matchAll(/([\w.:-]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    )
  }
  return {}
}
/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
const emptyFiles = (dir: string) =>
  existsSync(dir) ? readdirSync(dir).filter((f) => statSync(join(dir, f)).size === 0) : []

describe('vc-harness conformance: what a user meets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-conformance-ux-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const expectedFile = join(dir, 'expected-failures.json')
  const runs: Record<'outcomes' | 'child' | 'harness' | 'failFast' | 'dryRun', CliResult> = {} as never

  before(async () => {
    writeFileSync(
      expectedFile,
      JSON.stringify({
        expectedFailures: [{ scenario: LISTED, reason: 'answers 200 where 418 is due (issue <7>)' }],
      }),
    )
    const port = await closedPort()
    const profile = join(dir, 'unreachable.json')
    writeFileSync(
      profile,
      JSON.stringify({
        auth_url: `http://127.0.0.1:${port}`,
        tenant: 'acme',
        templates: { issuance: 'degree', other: 'degree-check' },
        app_key: { id: 'app', secret: 'app-secret-app-secret-app-secret' },
        admin_key: { id: 'admin', secret: 'admin-secret-admin-secret-admin' },
      }),
    )
    mkdirSync(join(dir, 'cwd'))
    // The reports of an earlier full run, which the subset run below replaces.
    mkdirSync(join(dir, 'harness'))
    writeFileSync(
      join(dir, 'harness', 'conformance.json'),
      JSON.stringify({ startedAt: '2026-11-28T09:00:00.000Z', totals: { requirements: 222 } }),
    )
    const [outcomes, child, harness, failFast, dryRun] = await Promise.all([
      // Run from another folder: feature paths and --format paths are the user's, relative to it.
      cli(
        [
          'conformance',
          join(ROOT, OUTCOMES),
          '--expected-failures',
          expectedFile,
          '--reports',
          join(dir, 'outcomes'),
          '--format',
          'junit:extra/junit.xml',
        ],
        { cwd: join(dir, 'cwd') },
      ),
      cli(['conformance', '--target', 'child', `${OUTCOMES}:19:25`, '--reports', join(dir, 'child')]),
      cli([
        'conformance',
        '--profile',
        profile,
        '--tags',
        '@auth and @interface-4.1',
        '--reports',
        join(dir, 'harness'),
      ]),
      cli(['conformance', '--fail-fast', OUTCOMES, '--reports', join(dir, 'fail-fast')]),
      cli(['conformance', '--dry-run', OUTCOMES, UNDEFINED, '--reports', join(dir, 'dry-run')]),
    ])
    Object.assign(runs, { outcomes, child, harness, failFast, dryRun })
  })

  test('--version and -v print the package version', async () => {
    const { version } = JSON.parse(read(ROOT, 'package.json')) as { version: string }
    for (const flag of ['--version', '-v']) {
      const r = await cli([flag])
      assert.equal(r.code, 0, explain(r))
      assert.equal(r.stdout, `${version}\n`)
    }
  })

  test('a filter that selects no scenario is a usage error naming it, before anything runs', async () => {
    const reports = join(dir, 'nothing')
    const [typo, name, line] = await Promise.all([
      cli(['conformance', '--tags', '@interface-41', '--reports', reports]),
      cli(['conformance', '--tags', '@auth', '--name', 'no such requirement', '--reports', reports]),
      cli(['conformance', 'features/auth/login.feature:2', '--reports', reports]),
    ])
    for (const r of [typo, name, line]) {
      assert.equal(r.code, 2, explain(r))
      assert.equal(r.stdout, '')
    }
    assert.match(
      typo.stderr,
      /^vc-harness conformance: no scenario matches --tags "@interface-41": nothing to run; no scenario is tagged @interface-41 \(did you mean [^)]*@interface-4\.1/,
    )
    assert.match(
      name.stderr,
      /no scenario matches --tags "@auth", --name "no such requirement": nothing to run/,
    )
    assert.match(line.stderr, /no scenario matches features\/auth\/login\.feature:2: nothing to run/)
    assert.equal(existsSync(reports), false, 'no report folder, no report file')
  })

  test('a malformed tag expression is a usage error in one line, without a stack trace', async () => {
    const r = await cli(['conformance', '--tags', '@a and', '--reports', join(dir, 'malformed')])
    assert.equal(r.code, 2, explain(r))
    assert.equal(
      r.stderr,
      'vc-harness conformance: --tags: "@a and" is not a valid tag expression: Expected operand (see vc-harness conformance --help)\n',
    )
    assert.equal(existsSync(join(dir, 'malformed')), false)
  })

  test('a profile is checked before the run: every problem at once, one line each, exit 2, no report', async () => {
    const profile = join(dir, 'bad-profile.json')
    writeFileSync(
      profile,
      JSON.stringify({
        auth_ulr: 'https://vc.example',
        issuer_url: 'ftp://vc.example',
        tenant: 5,
        admin_key: 'not an object',
        app_key: { id: 'app', secrets: 'top-secret-value' },
        templates: { issuance: 'degree' },
      }),
    )
    const reports = join(dir, 'bad-profile')
    const r = await cli(['conformance', '--profile', profile, '--reports', reports])
    assert.equal(r.code, 2, explain(r))
    const lines = r.stderr.trimEnd().split('\n')
    assert.equal(
      lines[0],
      "vc-harness conformance: the external target's settings have 8 problems (see docs/targets.md):",
    )
    assert.deepEqual(
      lines.slice(1).map((l) => l.replace(profile, 'P').replace(/ \(known keys: [^)]*\)/, '')),
      [
        '  P: unknown key auth_ulr: did you mean auth_url?',
        '  P: admin_key must be an object',
        '  P: unknown key app_key.secrets: did you mean app_key.secret?',
        '  P: issuer_url must be an http(s) URL',
        '  P: tenant must be a string',
        '  missing: auth_url (in P, or VC_HARNESS_AUTH_URL)',
        '  missing: templates.other (in P, or VC_HARNESS_OTHER_TEMPLATE)',
        '  missing: app_key.secret (in P, or VC_HARNESS_APP_KEY_SECRET)',
      ],
    )
    assert.doesNotMatch(r.stderr, /top-secret-value|\n\s+at /)
    assert.equal(existsSync(reports), false)
  })

  test('--list prints each selected scenario (file:line, name, tags) without running, as cucumber selects', async () => {
    const tags = '@auth and @interface-4.1'
    const [r, lines] = await Promise.all([
      cli(['conformance', '--list', '--tags', tags]),
      cli(['conformance', '--list', `${OUTCOMES}:7:25`, 'features/auth/login.feature:13']),
    ])
    assert.equal(r.code, 0, explain(r))
    const { plan } = await loadSources(
      {
        paths: ['features/**/*.feature'],
        defaultDialect: 'en',
        names: [],
        tagExpression: tags,
        order: 'defined',
      },
      { cwd: ROOT },
    )
    const listed = r.stdout.trimEnd().split('\n')
    assert.deepEqual(
      listed.map((l) => l.split(/\s{2,}/).slice(0, 2)),
      plan.map((p) => [`${p.uri}:${p.location.line}`, p.name]),
    )
    assert.match(
      listed[0] ?? '',
      /^features\/auth\/login\.feature:13\s+A valid API key receives a JWT[^@]*\s+@auth @interface-4\.1$/,
    )
    assert.equal(r.stderr, `${plan.length} scenarios selected by --tags "${tags}"\n`)
    assert.equal(lines.code, 0, explain(lines))
    assert.deepEqual(
      lines.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/\s{2,}/).slice(0, 2)),
      [
        [`${OUTCOMES}:7`, FAILS],
        [`${OUTCOMES}:25`, 'A check that needs the clock'],
        [
          'features/auth/login.feature:13',
          'A valid API key receives a JWT in the Token header, Token_type jwt and message SUCCESS',
        ],
      ],
    )
  })

  test('a run: exit 1 for the failure; JUnit, cucumber.json and HTML count an expected failure as the gate does', () => {
    const r = runs.outcomes
    assert.equal(r.code, 1, explain(r))
    const reports = join(dir, 'outcomes')
    const summary = summaryOf(reports)
    assert.deepEqual(summary.totals, {
      requirements: 4,
      pass: 2,
      fail: 1,
      notApplicable: 0,
      expectedFailure: 1,
      unexpectedPass: 0,
    })
    const xml = read(reports, 'cucumber.xml')
    const root = attributes(xml, 'testsuites')
    assert.deepEqual([root.tests, root.failures, root.skipped, root.errors], ['4', '1', '1', '0'])
    assert.equal(root.name, 'vc-harness conformance report: embedded target')
    assert.match(
      xml,
      /<skipped message="expected failure: answers 200 where 418 is due \(issue &lt;7&gt;\)">/,
    )
    assert.match(
      xml,
      new RegExp(
        `name="${FAILS}" file="[^"]*outcomes.feature" line="7" time="[\\d.]+">\\n\\s*<failure message="Then the answer is HTTP 418 / Expected: HTTP 418"`,
      ),
    )
    // --format junit:PATH is relative to the working folder, and written the same way.
    assert.equal(read(dir, 'cwd/extra/junit.xml'), xml)
    assert.match(r.stdout, /junit xml\s+.*extra\/junit\.xml/)

    const json = JSON.parse(read(reports, 'cucumber.json')) as {
      elements: {
        name: string
        vc_harness: { status: string; reason?: string }
        steps: { result: { status: string } }[]
      }[]
    }[]
    const listed = json[0]?.elements.find((e) => e.name === LISTED)
    assert.deepEqual(listed?.vc_harness.status, 'expected-failure')
    assert.ok(
      !listed?.steps.some((s) => s.result.status === 'failed'),
      'no step of an expected failure reads failed',
    )
    assert.equal(json[0]?.elements.filter((e) => e.steps.some((s) => s.result.status === 'failed')).length, 1)

    const html = read(reports, 'cucumber.html')
    assert.match(html, /<title>vc-harness conformance report: embedded target<\/title>/)
    assert.match(html, /<summary>Expected failures \(1\)<\/summary>/)
    assert.match(html, /"message":"expected failure: answers 200 where 418 is due \(issue \\x3C7>\)"/)
    assert.deepEqual(emptyFiles(reports), [])
  })

  test('not applicable on a target without the capability: skipped with its reason in every format (child target)', () => {
    const r = runs.child
    assert.equal(r.code, 0, explain(r))
    const reports = join(dir, 'child')
    const summary = summaryOf(reports)
    assert.deepEqual([summary.totals.pass, summary.totals.notApplicable], [1, 1])
    const reason = summary.requirements.find((q) => q.status === 'not-applicable')?.reason ?? ''
    assert.match(reason, /^needs clock; /)
    const xml = read(reports, 'cucumber.xml')
    assert.deepEqual(
      [attributes(xml, 'testsuites').failures, attributes(xml, 'testsuites').skipped],
      ['0', '1'],
    )
    assert.ok(xml.includes(`<skipped message="not applicable: ${reason.replace(/&/g, '&amp;')}"/>`), xml)
    assert.match(read(reports, 'cucumber.json'), /"error_message": "not applicable: needs clock; /)
    assert.match(read(reports, 'cucumber.html'), /<summary>Not applicable \(1\)<\/summary>/)
  })

  test('a harness error (the pre-flight finds the target unreachable) exits 3, with harness-error.txt', () => {
    const r = runs.harness
    assert.equal(r.code, 3, explain(r))
    const reports = join(dir, 'harness')
    assert.ok(existsSync(join(reports, 'harness-error.txt')), explain(r))
    assert.match(r.stdout, /^Harness error: /m)
    assert.match(r.stdout, /Exit code 3: the harness could not judge the target/)
    const summary = summaryOf(reports)
    assert.ok(summary.harnessErrors.length > 0)
    assert.equal(summary.gate.passed, false)
    // Issue 32: the scenarios it never reached are not failures; the harness error is the one error.
    const suites = attributes(read(reports, 'cucumber.xml'), 'testsuites')
    assert.ok(Number(suites.errors) > 0)
    assert.equal(suites.failures, '0', explain(r))
    assert.equal(summary.totals.fail, 0)
    assert.deepEqual(emptyFiles(reports), [], 'a broken run leaves no empty report file')
    // And it said, before running, whose reports it replaces.
    assert.match(
      r.stderr,
      /^Warning: .*harness holds the reports of a run of 2026-11-28T09:00:00\.000Z of 222 requirements; this run of \d+ replaces them \(--reports DIR keeps both\)$/m,
    )
  })

  test('--fail-fast stops at the first failure; the rest are not run, not requirements', () => {
    const r = runs.failFast
    assert.equal(r.code, 1, explain(r))
    assert.match(
      r.stdout,
      /^· \[2\/4\] A check that fails on purpose and is listed as an expected failure: not run \(--fail-fast\)$/m,
    )
    const summary = summaryOf(join(dir, 'fail-fast'))
    assert.deepEqual(
      summary.requirements.map((q) => q.name),
      [FAILS],
    )
    assert.deepEqual(summary.warnings, [
      '3 scenarios were not run: --fail-fast stopped the run at the first failure',
    ])
  })

  test('--dry-run checks the step definitions, runs nothing and writes no report', () => {
    const r = runs.dryRun
    assert.equal(r.code, 1, explain(r))
    assert.match(
      r.stdout,
      /^· \[1\/5\] A check that fails on purpose: dry run, every step has a definition$/m,
    )
    assert.match(r.stdout, /undefined step: When the moon is made of cheese/)
    assert.match(
      r.stdout,
      /Dry run: 5 scenarios, nothing executed; 1 with a step that has no single definition/,
    )
    assert.equal(existsSync(join(dir, 'dry-run')), false)
  })
})

describe('pieces of the command', () => {
  test('--format FORMAT[:PATH] splits as cucumber does', () => {
    assert.deepEqual(splitFormat('summary'), ['summary', undefined])
    assert.deepEqual(splitFormat('json:out/report.json'), ['json', 'out/report.json'])
    assert.deepEqual(splitFormat('file:///tmp/my-formatter.mjs:out.txt'), [
      'file:///tmp/my-formatter.mjs',
      'out.txt',
    ])
    assert.deepEqual(splitFormat('"html":"reports/a:b.html"'), ['html', 'reports/a:b.html'])
  })

  test('externalProblems lists every problem of the settings, the environment included, never a value', () => {
    const problems = externalProblems({
      VC_HARNESS_AUTH_URL: 'not a url secret-1',
      VC_HARNESS_TENANT: 'acme',
      VC_HARNESS_RECEIVER_URL: 'https://hooks.example',
    })
    assert.deepEqual(problems, [
      'VC_HARNESS_AUTH_URL must be an http(s) URL',
      'missing: VC_HARNESS_ISSUANCE_TEMPLATE',
      'missing: VC_HARNESS_OTHER_TEMPLATE',
      'missing: VC_HARNESS_APP_KEY_ID',
      'missing: VC_HARNESS_APP_KEY_SECRET',
      'missing: VC_HARNESS_ADMIN_KEY_ID',
      'missing: VC_HARNESS_ADMIN_KEY_SECRET',
      'missing: VC_HARNESS_RECEIVER_PORT: a receiver URL needs a fixed port for the receiver to listen on',
    ])
  })

  test('the requirements catalogue describes every clause tag and is up to date', () => {
    const files = readdirSync(join(ROOT, 'features'), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.feature'))
      .map((f) => `features/${f.split('\\').join('/')}`)
      .sort()
    const { scenarios } = loadScenarios(files, ROOT)
    const data = readCatalogueData()
    assert.deepEqual(catalogueProblems(scenarios, data), [])
    assert.equal(
      read(ROOT, CATALOGUE_DOC),
      renderCatalogue(scenarios, data),
      'run node --import tsx scripts/requirements.ts',
    )
    assert.match(read(ROOT, CATALOGUE_DOC), /### <a id="interface-4\.4"><\/a>`@interface-4\.4`\n\n\S/)
  })

  test('the catalogue names a tag without a description and a description without a tag', () => {
    const scenarios = loadScenarios([OUTCOMES], ROOT).scenarios
    assert.deepEqual(
      catalogueProblems(scenarios, { groups: [], clauses: { '@gone-1': 'a clause no scenario has' } }),
      [
        `@interface-4.1 (${OUTCOMES}:7) has no description: add it to features/requirements.json "clauses"`,
        'features/requirements.json describes @gone-1, which no scenario carries any more: remove it',
      ],
    )
    const md = renderCatalogue(scenarios, {
      groups: [{ prefix: '@interface-', title: 'Interface', about: 'The interface.' }],
      clauses: { '@interface-4.1': 'Login.' },
    })
    assert.match(md, /\| \[Interface\]\(#group-interface\) \| 1 \| 4 \|/)
    assert.match(
      md,
      /### <a id="interface-4\.1"><\/a>`@interface-4\.1`\n\nLogin\.\n\n4 scenarios:\n\n- \[outcomes\.feature:7\]\(\.\.\/test\/fixtures\/conformance\/outcomes\.feature#L7\) A check that fails on purpose\n/,
    )
  })
})
