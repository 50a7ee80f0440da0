import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import type { Envelope } from '@cucumber/messages'
import { progressLine } from '../../src/harness/progress-formatter.ts'
import {
  type ConformanceSummary,
  clearHarnessErrors,
  exitCode,
  HARNESS_ERROR_FILE,
  REPORTS_DIR_ENV,
  RunCollector,
  readHarnessErrors,
  recordHarnessError,
  renderConsoleSummary,
  renderMarkdown,
  type SummaryOptions,
  summarize,
  summarizeCollected,
  writeReports,
} from '../../src/harness/report.ts'
import {
  type ExpectedFailures,
  ExpectedFailuresError,
  loadExpectedFailures,
  parseExpectedFailures,
} from '../../src/harness/report-expected.ts'
import {
  annotateCucumberJson,
  annotateEnvelopes,
  annotateHtml,
  finishCucumberReports,
  renderJunit,
} from '../../src/harness/report-formats.ts'

// Synthetic cucumber message streams, shaped like those of cucumber-js 12 (see reports/cucumber.ndjson).

type Status = 'PASSED' | 'FAILED' | 'SKIPPED' | 'UNDEFINED' | 'PENDING' | 'AMBIGUOUS'

interface ScenarioSpec {
  name: string
  line: number
  tags?: string[]
  /** [keyword, text, status, error message] */
  steps: [string, string, Status, string?][]
  /** Status of the Before hook (the suite's skip hook); default PASSED. */
  before?: Status
  /** Attachments logged by the scenario (this.log). */
  logs?: string[]
  durationMs?: number
  /** Attempts that failed and were retried before this one. */
  retried?: number
}

interface FeatureSpec {
  uri: string
  name: string
  tags: string[]
  scenarios: ScenarioSpec[]
}

let counter = 0
const id = (prefix: string) => `${prefix}-${++counter}`
const ts = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 })
const env = (value: unknown) => value as Envelope

/** The envelopes of one run of the given features, scenario after scenario from `startMs`. */
function run(features: FeatureSpec[], startMs = 1_800_000_000_000, extra: unknown[] = []): Envelope[] {
  const out: Envelope[] = []
  const runId = id('run')
  const beforeHook = {
    id: id('hook'),
    type: 'BEFORE_TEST_CASE',
    sourceReference: { uri: 'steps/support/hooks.ts', location: { line: 23 } },
  }
  const planned: {
    spec: ScenarioSpec
    pickle: Record<string, unknown>
    testCase: Record<string, unknown>
  }[] = []
  for (const feature of features) {
    const gherkinScenarios = feature.scenarios.map((s) => ({
      id: id('scenario'),
      location: { line: s.line },
      tags: (s.tags ?? []).map((name) => ({ name, id: id('tag'), location: { line: s.line - 1 } })),
      keyword: 'Scenario',
      name: s.name,
      description: '',
      examples: [],
      steps: s.steps.map(([keyword, text], i) => ({
        id: id('step'),
        keyword: `${keyword} `,
        text,
        location: { line: s.line + 1 + i },
      })),
    }))
    out.push(
      env({
        gherkinDocument: {
          uri: feature.uri,
          comments: [],
          feature: {
            location: { line: 2 },
            tags: feature.tags.map((name) => ({ name, id: id('tag'), location: { line: 1 } })),
            language: 'en',
            keyword: 'Feature',
            name: feature.name,
            description: '',
            children: gherkinScenarios.map((scenario) => ({ scenario })),
          },
        },
      }),
    )
    feature.scenarios.forEach((spec, i) => {
      const scenario = gherkinScenarios[i] as (typeof gherkinScenarios)[number]
      const pickle = {
        id: id('pickle'),
        uri: feature.uri,
        location: { line: spec.line },
        name: spec.name,
        language: 'en',
        astNodeIds: [scenario.id],
        tags: [...feature.tags, ...(spec.tags ?? [])].map((name) => ({ name, astNodeId: id('tag') })),
        steps: scenario.steps.map((step) => ({ id: id('pstep'), text: step.text, astNodeIds: [step.id] })),
      }
      out.push(env({ pickle }))
      const testCase = {
        id: id('tc'),
        pickleId: pickle.id,
        testRunStartedId: runId,
        testSteps: [
          { id: id('ts'), hookId: beforeHook.id },
          ...pickle.steps.map((s) => ({ id: id('ts'), pickleStepId: s.id, stepDefinitionIds: [] })),
        ],
      }
      planned.push({ spec, pickle, testCase })
    })
  }
  out.push(env({ hook: beforeHook }), env({ testRunStarted: { id: runId, timestamp: ts(startMs) } }))
  for (const p of planned) out.push(env({ testCase: p.testCase }))
  out.push(...extra.map(env))
  let now = startMs + 1000
  for (const { spec, testCase } of planned) {
    const steps = testCase.testSteps as { id: string }[]
    const statuses: Status[] = [spec.before ?? 'PASSED', ...spec.steps.map((s) => s[2])]
    const attempts = (spec.retried ?? 0) + 1
    for (let attempt = 0; attempt < attempts; attempt++) {
      const last = attempt === attempts - 1
      const started = id('tcs')
      out.push(
        env({ testCaseStarted: { id: started, testCaseId: testCase.id, attempt, timestamp: ts(now) } }),
      )
      steps.forEach((step, i) => {
        const status = last ? statuses[i] : 'FAILED'
        const message = last ? spec.steps[i - 1]?.[3] : 'flaky'
        if (i === 0 && last) {
          for (const body of spec.logs ?? []) {
            out.push(
              env({
                attachment: {
                  testCaseStartedId: started,
                  testStepId: step.id,
                  body,
                  mediaType: 'text/x.cucumber.log+plain',
                  contentEncoding: 'IDENTITY',
                },
              }),
            )
          }
        }
        const result = {
          status,
          duration: { seconds: 0, nanos: 1e6 },
          ...(message
            ? {
                message: `${message}\n    at step (steps/x.ts:1:1)`,
                exception: { type: 'RequirementBroken', message },
              }
            : {}),
        }
        out.push(
          env({
            testStepFinished: {
              testCaseStartedId: started,
              testStepId: step.id,
              testStepResult: result,
              timestamp: ts(now),
            },
          }),
        )
      })
      now += spec.durationMs ?? 100
      out.push(
        env({ testCaseFinished: { testCaseStartedId: started, timestamp: ts(now), willBeRetried: !last } }),
      )
    }
  }
  out.push(env({ testRunFinished: { testRunStartedId: runId, timestamp: ts(now + 10), success: true } }))
  return out
}

const BROKEN = [
  'A wrong API key secret is refused with 401 invalid_credentials (@interface-4.1 @security)',
  'Expected: HTTP 401 application/problem+json with code "invalid_credentials"',
  'Request: login of the application key with a wrong secret',
  'Got: HTTP 200 (application/json) {"message":"SUCCESS"}',
].join('\n')

const LOGIN: FeatureSpec = {
  uri: 'features/auth/login.feature',
  name: 'Login exchanges an API key for an access token',
  tags: ['@auth'],
  scenarios: [
    {
      name: 'A valid API key receives a JWT',
      line: 13,
      tags: ['@interface-4.1'],
      steps: [
        ['Given', 'a tenant of our own', 'PASSED'],
        ['When', 'the application logs in', 'PASSED'],
      ],
      durationMs: 250,
    },
    {
      name: 'A wrong API key secret is refused with 401 invalid_credentials',
      line: 31,
      tags: ['@interface-4.1', '@security'],
      steps: [
        ['Given', 'a tenant of our own', 'PASSED'],
        ['When', 'the application logs in with a wrong secret', 'PASSED'],
        ['Then', 'the answer is a 401 problem "invalid_credentials"', 'FAILED', BROKEN],
      ],
      durationMs: 40,
    },
    {
      name: 'A revoked API key can no longer log in',
      line: 50,
      tags: ['@interface-4.1', '@security', '@needs-portal'],
      before: 'SKIPPED',
      logs: ['Skipped: needs portal; the external target has no portal access'],
      steps: [['Given', 'a tenant of our own', 'SKIPPED']],
      durationMs: 1,
    },
    {
      name: 'A token can no longer be used after it expired',
      line: 114,
      tags: ['@interface-5', '@needs-clock'],
      before: 'SKIPPED',
      steps: [['Given', 'a tenant of our own', 'SKIPPED']],
      durationMs: 1,
    },
  ],
}

const OFFER: FeatureSpec = {
  uri: 'features/issuance/offer.feature',
  name: 'Credential offers',
  tags: ['@issuance', '@OID4VCI-4'],
  scenarios: [
    {
      name: 'A Ed25519 holder key receives a credential bound to it',
      line: 47,
      tags: ['@OID4VCI-8.3'],
      steps: [['When', 'the wallet receives the credential', 'PASSED']],
    },
    {
      name: 'A secp256k1 holder key receives a credential bound to it',
      line: 49,
      tags: ['@OID4VCI-8.3'],
      steps: [['When', 'the wallet receives the credential', 'PASSED']],
      durationMs: 900,
    },
    {
      name: 'A template nobody wrote steps for',
      line: 60,
      tags: ['@interface-2.4'],
      steps: [
        ['Given', 'a tenant of our own', 'PASSED'],
        ['When', 'nobody defined this step', 'UNDEFINED'],
        ['Then', 'something', 'SKIPPED'],
      ],
    },
    {
      name: 'A pending requirement',
      line: 70,
      steps: [['Given', 'a step still to write', 'PENDING']],
    },
  ],
}

const byName = (summary: ConformanceSummary, name: string) => {
  const found = summary.requirements.find((r) => r.name === name)
  assert.ok(found, `no requirement "${name}" in ${summary.requirements.map((r) => r.name).join(', ')}`)
  return found
}

const expectedList = (entries: ExpectedFailures['entries']): ExpectedFailures => ({
  file: 'features/expected-failures.json',
  entries,
})

describe('summarize', () => {
  const summary = summarize([run([LOGIN, OFFER])], { target: { kind: 'embedded' } })

  test('one requirement per scenario, outline rows apart, in file and line order', () => {
    assert.deepEqual(
      summary.requirements.map((r) => `${r.uri}:${r.line}`),
      [
        'features/auth/login.feature:13',
        'features/auth/login.feature:31',
        'features/auth/login.feature:50',
        'features/auth/login.feature:114',
        'features/issuance/offer.feature:47',
        'features/issuance/offer.feature:49',
        'features/issuance/offer.feature:60',
        'features/issuance/offer.feature:70',
      ],
    )
  })

  test('a passing scenario: sources, capability, needs, duration', () => {
    const r = byName(summary, 'A valid API key receives a JWT')
    assert.equal(r.status, 'pass')
    assert.deepEqual(r.sources, ['@interface-4.1'])
    assert.deepEqual(r.capabilities, ['@auth'])
    assert.equal(r.feature, 'Login exchanges an API key for an access token')
    assert.equal(r.durationMs, 250)
    assert.equal(r.reason, undefined)
    const skipped = byName(summary, 'A revoked API key can no longer log in')
    assert.deepEqual(skipped.sources, ['@interface-4.1', '@security'])
    assert.deepEqual(skipped.needs, ['portal'])
  })

  test('a spec-section tag on a feature is a source, a grouping tag a capability', () => {
    const r = byName(summary, 'A Ed25519 holder key receives a credential bound to it')
    assert.deepEqual(r.capabilities, ['@issuance'])
    assert.deepEqual(r.sources, ['@OID4VCI-4', '@OID4VCI-8.3'])
  })

  test('a failure names the failing step and the first lines of its error, without the stack', () => {
    const r = byName(summary, 'A wrong API key secret is refused with 401 invalid_credentials')
    assert.equal(r.status, 'fail')
    assert.equal(r.step, 'Then the answer is a 401 problem "invalid_credentials"')
    assert.equal(
      r.reason,
      [
        'Then the answer is a 401 problem "invalid_credentials"',
        'Expected: HTTP 401 application/problem+json with code "invalid_credentials"',
        'Request: login of the application key with a wrong secret',
        'Got: HTTP 200 (application/json) {"message":"SUCCESS"}',
      ].join('\n'),
    )
  })

  test('a skip carries the reason the Before hook logged, or just "skipped"', () => {
    const r = byName(summary, 'A revoked API key can no longer log in')
    assert.equal(r.status, 'not-applicable')
    assert.equal(r.reason, 'needs portal; the external target has no portal access')
    assert.equal(byName(summary, 'A token can no longer be used after it expired').reason, 'skipped')
  })

  test('undefined and pending steps fail, saying so', () => {
    const undefinedStep = byName(summary, 'A template nobody wrote steps for')
    assert.equal(undefinedStep.status, 'fail')
    assert.match(undefinedStep.reason ?? '', /^undefined step: When nobody defined this step/)
    const pending = byName(summary, 'A pending requirement')
    assert.equal(pending.status, 'fail')
    assert.match(pending.reason ?? '', /^pending step: Given a step still to write/)
  })

  test('totals, rollups and the gate', () => {
    assert.deepEqual(summary.totals, {
      requirements: 8,
      pass: 3,
      fail: 3,
      notApplicable: 2,
      expectedFailure: 0,
      unexpectedPass: 0,
    })
    const security = summary.bySource.find((s) => s.tag === '@security')
    assert.deepEqual(security, {
      tag: '@security',
      requirements: 2,
      pass: 0,
      fail: 1,
      notApplicable: 1,
      expectedFailure: 0,
      unexpectedPass: 0,
    })
    assert.deepEqual(
      summary.byCapability.map((c) => [c.capability, c.requirements]),
      [
        ['@auth', 4],
        ['@issuance', 4],
      ],
    )
    assert.equal(summary.gate.passed, false)
    assert.deepEqual(summary.gate.problems, ['3 requirements fail'])
    assert.equal(summary.startedAt, new Date(1_800_000_000_000).toISOString())
    assert.equal(summary.durationMs, 1000 + 250 + 40 + 1 + 1 + 100 + 900 + 100 + 100 + 10)
  })

  test('JSON shape', () => {
    const json = JSON.parse(JSON.stringify(summary))
    assert.equal(json.format, 'vc-harness-conformance/1')
    assert.deepEqual(json.target, { kind: 'embedded' })
    assert.deepEqual(Object.keys(json.totals), [
      'requirements',
      'pass',
      'fail',
      'notApplicable',
      'expectedFailure',
      'unexpectedPass',
    ])
    for (const r of json.requirements) {
      for (const key of ['name', 'status', 'sources', 'capabilities', 'feature', 'uri', 'line', 'durationMs'])
        assert.ok(key in r, `requirement lacks ${key}`)
    }
    assert.equal(json.runs.length, 1)
    assert.equal(json.runs[0].scenarios, 8)
  })

  test('the slowest scenarios come first in the console summary', () => {
    const text = renderConsoleSummary(summary, { reports: [['html', 'reports/cucumber.html']] })
    const slow = text.slice(text.indexOf('Slowest scenarios:'))
    assert.ok(slow.indexOf('secp256k1') < slow.indexOf('A valid API key'), slow)
    assert.match(text, /Failures \(3\):/)
    assert.match(text, /↷ 1 × needs portal; the external target has no portal access/)
    assert.match(text, /html {2}reports\/cucumber\.html/)
    assert.match(text, /Gate: FAILED \(3 requirements fail\)/)
  })
})

describe('expected failures', () => {
  const broken = 'A wrong API key secret is refused with 401 invalid_credentials'
  const passing = 'A valid API key receives a JWT'

  test('a listed failure is an expected failure and does not fail the gate', () => {
    const summary = summarize([run([LOGIN])], {
      expected: expectedList([{ scenario: broken, reason: 'issue 12: the service answers 200' }]),
    })
    const r = byName(summary, broken)
    assert.equal(r.status, 'expected-failure')
    assert.equal(r.knownIssue, 'issue 12: the service answers 200')
    assert.match(r.reason ?? '', /Expected: HTTP 401/)
    assert.equal(summary.gate.passed, true)
    assert.equal(summary.totals.expectedFailure, 1)
  })

  test('a listed scenario that passes is an unexpected pass; it fails the gate only when strict', () => {
    const options: SummaryOptions = {
      expected: expectedList([
        { scenario: broken, reason: 'known' },
        { scenario: passing, reason: 'was broken once' },
      ]),
    }
    const lenient = summarize([run([LOGIN])], options)
    const r = byName(lenient, passing)
    assert.equal(r.status, 'unexpected-pass')
    assert.match(r.reason ?? '', /remove it from the list/)
    assert.equal(lenient.gate.passed, true)
    const strict = summarize([run([LOGIN])], { ...options, strict: true })
    assert.equal(strict.gate.passed, false)
    assert.deepEqual(strict.gate.problems, ['1 unexpected pass (--strict)'])
    const text = renderConsoleSummary(lenient)
    assert.match(text, /Unexpected passes \(1\): remove it from features\/expected-failures\.json/)
  })

  test('a skipped listed scenario stays not applicable', () => {
    const skipped = 'A revoked API key can no longer log in'
    const summary = summarize([run([LOGIN])], {
      expected: expectedList([{ scenario: skipped, reason: 'x' }]),
    })
    assert.equal(byName(summary, skipped).status, 'not-applicable')
  })

  test('an entry limited to other targets does not apply', () => {
    const expected = expectedList([{ scenario: broken, reason: 'vendor X', targets: ['external'] }])
    const embedded = summarize([run([LOGIN])], { expected, target: { kind: 'embedded' } })
    assert.equal(byName(embedded, broken).status, 'fail')
    const external = summarize([run([LOGIN])], { expected, target: { kind: 'external' } })
    assert.equal(byName(external, broken).status, 'expected-failure')
  })

  test('a listed name that is no scenario is a warning; an unselected one is not', () => {
    const expected = expectedList([
      { scenario: 'A scenario that was renamed', reason: 'x' },
      { scenario: 'A Ed25519 holder key receives a credential bound to it', reason: 'y' },
    ])
    const summary = summarize([run([LOGIN])], {
      expected,
      knownScenarios: ['A Ed25519 holder key receives a credential bound to it'],
    })
    assert.deepEqual(summary.warnings, [
      'features/expected-failures.json lists "A scenario that was renamed", which is no scenario of the suite (renamed or removed?)',
    ])
    // Without the suite's names, the pickles of the run tell: both are unknown here.
    const fromPickles = summarize([run([LOGIN])], { expected })
    assert.equal(fromPickles.warnings.length, 2)
  })

  test('the file is validated, naming the file and the bad entry', () => {
    const file = 'features/expected-failures.json'
    assert.deepEqual(parseExpectedFailures({ $comment: 'c', expectedFailures: [] }, file), [])
    assert.deepEqual(
      parseExpectedFailures({ expectedFailures: [{ scenario: 'S', reason: 'R', targets: ['child'] }] }, file),
      [{ scenario: 'S', reason: 'R', targets: ['child'] }],
    )
    const cases: [unknown, RegExp][] = [
      [[], /features\/expected-failures\.json: top level: must be an object/],
      [{ expectedFailures: {} }, /"expectedFailures": must be an array/],
      [{ expectedFailure: [] }, /"expectedFailure": unknown member/],
      [{ expectedFailures: ['x'] }, /expectedFailures\[0\]: must be an object/],
      [{ expectedFailures: [{ scenario: 'S' }] }, /expectedFailures\[0\] \("S"\): "reason" must say why/],
      [
        { expectedFailures: [{ reason: 'R' }] },
        /expectedFailures\[0\]: "scenario" must be the exact scenario name/,
      ],
      [{ expectedFailures: [{ scenario: 'S', reason: 'R', target: ['x'] }] }, /unknown member "target"/],
      [
        { expectedFailures: [{ scenario: 'S', reason: 'R', targets: ['staging'] }] },
        /"targets" has "staging"/,
      ],
      [
        { expectedFailures: [{ scenario: 'S', reason: 'R', targets: [] }] },
        /"targets" must be a non-empty array/,
      ],
      [
        {
          expectedFailures: [
            { scenario: 'S', reason: 'R' },
            { scenario: 'T', reason: 'R' },
            { scenario: 'S', reason: 'again', targets: ['external'] },
          ],
        },
        /expectedFailures\[2\] \("S"\): lists the same scenario as expectedFailures\[0\]/,
      ],
    ]
    for (const [data, message] of cases) {
      assert.throws(
        () => parseExpectedFailures(data, file),
        (error: Error) => error instanceof ExpectedFailuresError && message.test(error.message),
        JSON.stringify(data),
      )
    }
    // The same scenario for disjoint targets is fine.
    assert.equal(
      parseExpectedFailures(
        {
          expectedFailures: [
            { scenario: 'S', reason: 'R', targets: ['child'] },
            { scenario: 'S', reason: 'R2', targets: ['external'] },
          ],
        },
        file,
      ).length,
      2,
    )
  })

  test('the shipped file is valid and empty', () => {
    const shipped = loadExpectedFailures(
      new URL('../../features/expected-failures.json', import.meta.url).pathname,
    )
    assert.deepEqual(shipped.entries, [])
  })
})

describe('merging runs (CI shards)', () => {
  test('two shards make one summary; a scenario in both counts once, as its later result', () => {
    const shard1 = run([LOGIN], 1_800_000_000_000)
    const shard2 = run([OFFER], 1_800_000_005_000)
    const merged = summarize([shard1, shard2])
    assert.equal(merged.requirements.length, 8)
    assert.equal(merged.runs.length, 2)
    assert.equal(merged.startedAt, new Date(1_800_000_000_000).toISOString())
    assert.ok((merged.durationMs ?? 0) > 5000)

    // A rerun of the login feature in which the broken scenario passes.
    const fixed: FeatureSpec = {
      ...LOGIN,
      scenarios: LOGIN.scenarios.map((s) =>
        s.line === 31
          ? { ...s, steps: s.steps.map(([k, t]) => [k, t, 'PASSED'] as [string, string, Status]) }
          : s,
      ),
    }
    const rerun = summarize([shard1, run([fixed], 1_800_000_100_000)])
    assert.equal(rerun.requirements.length, 4)
    assert.equal(
      byName(rerun, 'A wrong API key secret is refused with 401 invalid_credentials').status,
      'pass',
    )
  })
})

describe('run problems', () => {
  test('a failed BeforeAll hook is a run error and fails the gate', () => {
    const hook = {
      id: 'before-all',
      type: 'BEFORE_TEST_RUN',
      sourceReference: { uri: 'steps/support/hooks.ts', location: { line: 11 } },
    }
    const envelopes = run([], 1_800_000_000_000, [
      { hook },
      { testRunHookStarted: { id: 'trh', testRunStartedId: 'x', hookId: 'before-all', timestamp: ts(0) } },
      {
        testRunHookFinished: {
          testRunHookStartedId: 'trh',
          timestamp: ts(1),
          result: {
            status: 'FAILED',
            duration: { seconds: 0, nanos: 0 },
            exception: { type: 'Error', message: 'VC_HARNESS_TARGET=external: missing: VC_HARNESS_AUTH_URL' },
          },
        },
      },
    ])
    const summary = summarize([envelopes])
    assert.deepEqual(summary.runErrors, [
      'BeforeAll hook (steps/support/hooks.ts:11) failed: VC_HARNESS_TARGET=external: missing: VC_HARNESS_AUTH_URL',
    ])
    assert.equal(summary.gate.passed, false)
    assert.deepEqual(summary.gate.problems, ['the run broke: 1 run error'])
  })

  // Issue 32: a run that never reached its scenarios counted each as a failure (222 red tests on a CI
  // dashboard for one unreachable URL). They are not judged: the run's error is what failed.
  test('planned scenarios that never started are not run, not failed; the run error fails the gate', () => {
    const envelopes = run([LOGIN]).filter((e) => !e.testCaseStarted && !e.testCaseFinished)
    const summary = summarize([envelopes])
    assert.equal(summary.totals.requirements, 0)
    assert.equal(summary.totals.fail, 0)
    assert.deepEqual(summary.runErrors, ['the test run stopped before 4 scenarios started'])
    assert.deepEqual(summary.gate.problems, ['the run broke: 1 run error'])
    assert.ok(
      summary.warnings.includes(
        '4 scenarios were not run: the test run stopped before them (see the run errors)',
      ),
    )
    assert.equal(exitCode(summary), 3)
    const junit = renderJunit(summary)
    assert.match(junit, /<testsuites[^>]* tests="1" failures="0" errors="1"/)
  })

  test('with a harness error, the scenarios never started count only as that error', () => {
    const envelopes = run([LOGIN]).filter((e) => !e.testCaseStarted && !e.testCaseFinished)
    const summary = summarize([envelopes], { harnessErrors: ['auth_url cannot be reached'] })
    assert.equal(summary.totals.fail, 0)
    assert.deepEqual(summary.runErrors, [])
    assert.deepEqual(summary.gate.problems, ['harness error: auth_url cannot be reached'])
  })

  test('a retried scenario counts by its last attempt', () => {
    const flaky: FeatureSpec = {
      ...LOGIN,
      scenarios: [{ ...(LOGIN.scenarios[0] as ScenarioSpec), retried: 1 }],
    }
    const summary = summarize([run([flaky])])
    const r = summary.requirements[0]
    assert.equal(r?.status, 'pass')
    assert.equal(r?.attempts, 2)
  })
})

describe('rendering', () => {
  const summary = summarize([run([LOGIN, OFFER])], {
    target: { kind: 'external', url: 'https://vc.example' },
    expected: expectedList([{ scenario: 'A pending requirement', reason: 'not written | yet' }]),
  })
  const md = renderMarkdown(summary)

  test('the markdown has a totals line, a table per feature with failures first, and the rollup', () => {
    assert.match(md, /^# Conformance report/)
    assert.match(md, /Target: \*\*external\*\* at https:\/\/vc\.example/)
    assert.match(
      md,
      /\*\*8 requirements: 3 pass, 2 fail, 2 not applicable, 1 expected failure, 0 unexpected passes\*\*/,
    )
    assert.match(md, /Expected failures: `features\/expected-failures\.json`/)
    assert.match(md, /## Login exchanges an API key for an access token `@auth`/)
    assert.match(md, /\| Requirement \| Sources \| Result \| Reason \|/)
    const login = md.slice(md.indexOf('## Login'), md.indexOf('## Credential offers'))
    const rows = login.split('\n').filter((l) => l.startsWith('| A '))
    assert.deepEqual(
      rows.map((l) => l.split(' | ')[2]),
      ['**FAIL**', 'not applicable', 'not applicable', 'pass'],
    )
    assert.ok(
      rows[0]?.includes(
        'Then the answer is a 401 problem "invalid_credentials"<br>Expected: HTTP 401 application/problem+json',
      ),
      rows[0],
    )
    // Pipes in a reason do not break the table.
    assert.match(md, /Known: not written \\\| yet<br>Failed at pending step/)
    assert.match(md, /\| @security \| 2 \| 0 \| 1 \| 1 \| 0 \| 0 \|/)
    assert.match(md, /## Slowest scenarios/)
  })

  test('progress lines: mark, counter, name, time and the reason of a skip or failure', () => {
    const collector = new RunCollector()
    const lines: string[] = []
    let done = 0
    for (const envelope of run([LOGIN])) {
      const finished = collector.add(envelope)
      if (finished) lines.push(progressLine(finished, { done: ++done, planned: collector.planned }))
    }
    assert.deepEqual(lines, [
      '✔ [1/4] A valid API key receives a JWT (250 ms)',
      '✘ [2/4] A wrong API key secret is refused with 401 invalid_credentials (40 ms): Then the answer is a 401 problem "invalid_credentials" / Expected: HTTP 401 application/problem+json with code "invalid_credentials"',
      '↷ [3/4] A revoked API key can no longer log in (1 ms): needs portal; the external target has no portal access',
      '↷ [4/4] A token can no longer be used after it expired (1 ms): skipped',
    ])
  })
})

describe('writeReports', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-report-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  test('reads ndjson files (several: shards) and writes conformance.json and conformance.md', () => {
    const a = join(dir, 'a.ndjson')
    const b = join(dir, 'b.ndjson')
    writeFileSync(
      a,
      `${run([LOGIN])
        .map((e) => JSON.stringify(e))
        .join('\n')}\n`,
    )
    writeFileSync(
      b,
      `${run([OFFER])
        .map((e) => JSON.stringify(e))
        .join('\n')}\n`,
    )
    const { summary, json, markdown } = writeReports([a, b], join(dir, 'out'), {
      target: { kind: 'embedded' },
    })
    assert.equal(summary.requirements.length, 8)
    assert.deepEqual(JSON.parse(readFileSync(json, 'utf8')).totals, summary.totals)
    assert.equal(readFileSync(markdown, 'utf8'), renderMarkdown(summary))
  })

  test('a line that is no message names the file and line', () => {
    const bad = join(dir, 'bad.ndjson')
    writeFileSync(bad, '{"meta":{}}\nnot json\n')
    assert.throws(() => writeReports(bad, join(dir, 'out2')), /bad\.ndjson:2: not a cucumber message/)
  })
})

// The CI formats told the gate's way (src/harness/report-formats.ts).

/** The attributes of the first element `name` whose attributes match `where`. */
function element(xml: string, name: string, where: RegExp): Record<string, string> | undefined {
  for (const match of xml.matchAll(new RegExp(`<${name}((?:\\s+[\\w.:-]+="[^"]*")*)\\s*/?>`, 'g'))) {
    const text = match[1] ?? ''
    if (!where.test(text)) continue
    return Object.fromEntries([...text.matchAll(/([\w.:-]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]))
  }
  return undefined
}

/** Every testcase of a JUnit report with what it holds: failure, skipped (with message) or nothing. */
function testcases(xml: string): { name: string; kind: string; message?: string }[] {
  return [...xml.matchAll(/<testcase([^>]*)>([\s\S]*?)<\/testcase>/g)].map((m) => {
    const name = /\sname="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? ''
    const inner = /<(failure|skipped|error)((?:\s+[\w.:-]+="[^"]*")*)/.exec(m[2] ?? '')
    const message = /message="([^"]*)"/.exec(inner?.[2] ?? '')?.[1]
    return { name, kind: inner?.[1] ?? 'pass', ...(message !== undefined ? { message } : {}) }
  })
}

describe('CI formats: expected failures, not applicable and the gate', () => {
  const WRONG_SECRET = 'A wrong API key secret is refused with 401 invalid_credentials'
  const options = (strict: boolean): SummaryOptions => ({
    target: { kind: 'external', url: 'https://vc.example', profile: 'ci/profile.json' },
    strict,
    expected: expectedList([
      { scenario: WRONG_SECRET, reason: 'acme answers 403 "forbidden" (ticket <12>)' },
      { scenario: 'A valid API key receives a JWT', reason: 'was broken once' },
    ]),
  })
  const envelopes = run([LOGIN, OFFER])
  const collector = new RunCollector()
  for (const e of envelopes) collector.add(e)
  const summary = summarizeCollected(collector, options(false))
  const strict = summarizeCollected(collector, options(true))

  test('JUnit: failures are exactly the gate failures; expected failures and not applicable are skipped with their reason', () => {
    const xml = renderJunit(summary, collector.steps)
    assert.match(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /)
    const root = element(xml, 'testsuites', /./) ?? {}
    // Gate: 2 fail (undefined, pending), 1 expected failure, 2 not applicable, 1 unexpected pass (no --strict).
    assert.equal(summary.totals.fail, 2)
    assert.deepEqual(
      [root.tests, root.failures, root.skipped, root.errors],
      ['8', String(summary.totals.fail), '3', '0'],
    )
    assert.equal(
      root.name,
      'vc-harness conformance report: external target at https://vc.example, profile ci/profile.json',
    )
    const cases = testcases(xml)
    const byCase = (name: string) => cases.find((c) => c.name === name)
    assert.deepEqual(byCase(WRONG_SECRET), {
      name: WRONG_SECRET,
      kind: 'skipped',
      message: 'expected failure: acme answers 403 &quot;forbidden&quot; (ticket &lt;12&gt;)',
    })
    assert.deepEqual(byCase('A revoked API key can no longer log in'), {
      name: 'A revoked API key can no longer log in',
      kind: 'skipped',
      message: 'not applicable: needs portal; the external target has no portal access',
    })
    assert.equal(byCase('A valid API key receives a JWT')?.kind, 'pass')
    assert.equal(byCase('A template nobody wrote steps for')?.kind, 'failure')
    assert.equal(cases.filter((c) => c.kind === 'failure').length, Number(root.failures))
    // Each feature is a testsuite with its own counts and the run's properties.
    assert.deepEqual(element(xml, 'testsuite', /file="features\/auth\/login.feature"/), {
      name: 'Login exchanges an API key for an access token',
      file: 'features/auth/login.feature',
      tests: '4',
      failures: '0',
      errors: '0',
      skipped: '3',
      time: '0.292',
    })
    assert.match(xml, /<property name="vc-harness.profile" value="ci\/profile.json"\/>/)
    // The failure itself stays in the element's text; the steps in system-out, dotted to their status.
    assert.match(xml, /<!\[CDATA\[Then the answer is a 401 problem "invalid_credentials"\nExpected: HTTP 401/)
    assert.match(xml, /When the application logs in with a wrong secret\.+passed\n/)
  })

  test('JUnit under --strict: an unexpected pass is a failure; harness and run errors are errors', () => {
    const xml = renderJunit({ ...strict, harnessErrors: ['the auth URL cannot be reached. Fix: start it'] })
    const root = element(xml, 'testsuites', /./) ?? {}
    assert.equal(root.failures, String(strict.totals.fail + strict.totals.unexpectedPass))
    assert.equal(root.errors, '1')
    const unexpected = testcases(xml).find((c) => c.name === 'A valid API key receives a JWT')
    assert.equal(unexpected?.kind, 'failure')
    assert.match(
      unexpected?.message ?? '',
      /^unexpected pass \(--strict: fails the gate\): features\/expected-failures.json lists it/,
    )
    assert.match(
      xml,
      /<error message="harness error: the auth URL cannot be reached. Fix: start it" type="harness error">/,
    )
  })

  test('messages (the HTML report): an expected failure is skipped with its reason, the failure attached', () => {
    const before = JSON.stringify(envelopes)
    const out = annotateEnvelopes(envelopes, summary)
    assert.equal(JSON.stringify(envelopes), before, 'the input is not changed')
    const results = out.flatMap((e) => (e.testStepFinished ? [e.testStepFinished.testStepResult] : []))
    const skippedKnown = results.find((r) => r.message?.startsWith('expected failure:'))
    assert.equal(`${skippedKnown?.status}`, 'SKIPPED')
    assert.equal(skippedKnown?.message, 'expected failure: acme answers 403 "forbidden" (ticket <12>)')
    assert.equal(skippedKnown?.exception, undefined)
    const bodies = out.flatMap((e) => (e.attachment ? [e.attachment.body] : []))
    assert.ok(
      bodies.some((b) => b.startsWith('The known failure (FAILED):\n') && b.includes('Expected: HTTP 401')),
    )
    assert.ok(bodies.some((b) => b.startsWith('unexpected pass: features/expected-failures.json lists it')))
    assert.ok(
      results.some(
        (r) => r.message === 'not applicable: needs portal; the external target has no portal access',
      ),
    )
    // What cucumber counts as failed is now what the gate counts as failed (the undefined and pending steps).
    const failing = results.filter((r) => !['PASSED', 'SKIPPED'].includes(`${r.status}`))
    assert.equal(failing.length, summary.totals.fail)
    // Under --strict the unexpected pass fails its last step.
    const strictResults = annotateEnvelopes(envelopes, strict).flatMap((e) =>
      e.testStepFinished ? [e.testStepFinished.testStepResult] : [],
    )
    assert.ok(
      strictResults.some(
        (r) => `${r.status}` === 'FAILED' && r.message?.startsWith('unexpected pass (--strict'),
      ),
    )
  })

  test('cucumber.json: each scenario annotated; the expected failure reads skipped, the not-applicable one says why', () => {
    const step = (keyword: string, status: string, error?: string) => ({
      keyword,
      name: 'x',
      result: { status, duration: 1, ...(error ? { error_message: error } : {}) },
    })
    const doc = [
      {
        uri: 'features/auth/login.feature',
        name: LOGIN.name,
        elements: [
          {
            type: 'scenario',
            line: 13,
            name: 'A valid API key receives a JWT',
            steps: [step('Given ', 'passed')],
          },
          {
            type: 'scenario',
            line: 31,
            name: WRONG_SECRET,
            steps: [
              step('Before', 'passed'),
              step('Then ', 'failed', 'RequirementBroken: …'),
              step('After', 'passed'),
            ],
          },
          {
            type: 'scenario',
            line: 50,
            name: 'A revoked API key can no longer log in',
            steps: [step('Before', 'skipped')],
          },
        ],
      },
    ]
    const out = annotateCucumberJson(doc, summary) as typeof doc &
      { elements: { vc_harness?: Record<string, unknown>; steps: ReturnType<typeof step>[] }[] }[]
    const [pass, known, na] = out[0]?.elements ?? []
    assert.deepEqual(pass?.vc_harness, {
      status: 'unexpected-pass',
      reason:
        'unexpected pass: features/expected-failures.json lists it as a known failure (was broken once); it passes: remove it from the list',
      known_issue: 'was broken once',
      sources: ['@interface-4.1'],
    })
    assert.equal(known?.vc_harness?.status, 'expected-failure')
    assert.equal(known?.steps[1]?.result.status, 'skipped')
    assert.match(
      known?.steps[1]?.result.error_message ?? '',
      /^expected failure: acme answers 403[^\n]*\n\nThe known failure \(failed\):\nRequirementBroken/,
    )
    assert.equal(
      na?.steps[0]?.result.error_message,
      'not applicable: needs portal; the external target has no portal access',
    )
    assert.equal(doc[0]?.elements[1]?.steps[1]?.result.status, 'failed', 'the input is not changed')
  })

  test('HTML: the project title with target and profile, the summary panel, the annotated messages', () => {
    const page = [
      '<!DOCTYPE html>\n<html lang="en">\n<head>\n\t<title>Cucumber</title>\n</head>\n<body>\n<div id="content">\n</div>',
      '<script>\nwindow.CUCUMBER_MESSAGES = [{"meta":{}}];\n</script>\n<script>\n</script>\n</body>\n</html>\n',
    ].join('\n')
    const html = annotateHtml(page, annotateEnvelopes(envelopes, summary), summary)
    assert.match(
      html,
      /<title>vc-harness conformance report: external target at https:\/\/vc.example, profile ci\/profile.json<\/title>/,
    )
    assert.match(html, /<body>\n<header class="vch">\n<h1>vc-harness conformance report<\/h1>/)
    assert.match(html, /<span class="gate-failed">Gate: FAILED<\/span>/)
    assert.match(
      html,
      /<summary>Expected failures \(1\)<\/summary><ul><li>A wrong API key secret[^<]*<small>features\/auth\/login.feature:31<\/small>: acme answers 403 &quot;forbidden&quot; \(ticket &lt;12&gt;\)/,
    )
    assert.match(html, /<summary>Not applicable \(2\)<\/summary>/)
    const json = /window\.CUCUMBER_MESSAGES = \[(.*)\];\n<\/script>/.exec(html)?.[1] ?? ''
    assert.doesNotMatch(json, /</, 'no < inside the script element')
    const messages = JSON.parse(`[${json.replace(/\\x3C/g, '<')}]`) as {
      testStepFinished?: { testStepResult: { message?: string } }
    }[]
    assert.ok(messages.length > envelopes.length, 'the attachments were added')
    assert.ok(
      messages.some(
        (m) =>
          m.testStepFinished?.testStepResult.message ===
          'expected failure: acme answers 403 "forbidden" (ticket <12>)',
      ),
    )
  })

  test('report files: JUnit written, JSON annotated, empty files of a broken run removed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-formats-'))
    try {
      const files = {
        [join(dir, 'cucumber.xml')]: 'junit',
        [join(dir, 'cucumber.json')]: 'json',
        [join(dir, 'cucumber.html')]: 'html',
        [join(dir, 'cucumber.ndjson')]: 'message',
      }
      writeFileSync(join(dir, 'cucumber.json'), '[]')
      writeFileSync(join(dir, 'cucumber.html'), '')
      writeFileSync(join(dir, 'cucumber.ndjson'), '')
      const kept = finishCucumberReports(files, summary, { envelopes, steps: collector.steps })
      assert.deepEqual(kept.map((f) => f.slice(dir.length + 1)).sort(), ['cucumber.json', 'cucumber.xml'])
      assert.match(readFileSync(join(dir, 'cucumber.xml'), 'utf8'), /<testsuites /)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  // Issue 32: the links pointed at ../docs/requirements.md and broke once the reports folder was copied.
  test('conformance.md links each source to its own Sources section, which says what the tag stands for', () => {
    const catalogue = {
      '@interface-4.1': 'Logging in with an API key.',
      '@security': 'What the service refuses.',
      '@OID4VCI-8.3': 'The credential endpoint.',
    }
    const md = renderMarkdown(summary, { catalogue })
    assert.match(md, /\| \[@interface-4\.1\]\(#interface-4\.1\) \[@security\]\(#security\) \|/)
    assert.match(md, /\| \[@OID4VCI-8\.3\]\(#OID4VCI-8\.3\) \| 2 \|/)
    assert.match(
      md,
      /## Sources\n\n- <a id="interface-4\.1"><\/a>\*\*@interface-4\.1\*\*: Logging in with an API key\./,
    )
    assert.doesNotMatch(md, /\]\(\.\.\//, 'no link leaves the report')
    // A tag without a description stays plain text (nothing to link to).
    assert.match(renderMarkdown(summary), /\| @interface-4\.1 @security \|/)
  })
})

describe('harness errors and exit codes', () => {
  test('errors recorded in the reports folder named by VC_HARNESS_REPORTS are read back, one per line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-harness-error-'))
    try {
      const env = { [REPORTS_DIR_ENV]: dir }
      assert.equal(recordHarnessError('no reports folder: nothing written', {}), undefined)
      assert.equal(
        recordHarnessError('the auth URL cannot be reached.\n  Fix: start it', env),
        join(dir, HARNESS_ERROR_FILE),
      )
      recordHarnessError(['a key does not log in', 'the auth URL cannot be reached. Fix: start it'], env)
      assert.deepEqual(readHarnessErrors(dir), [
        'the auth URL cannot be reached. Fix: start it',
        'a key does not log in',
      ])
      clearHarnessErrors(dir)
      assert.deepEqual(readHarnessErrors(dir), [])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('3 for a harness error or a broken run, 1 for a failed gate, else 0', () => {
    const passing = summarize([run([{ ...LOGIN, scenarios: [LOGIN.scenarios[0] as ScenarioSpec] }])])
    assert.equal(exitCode(passing), 0)
    const harness = summarize([run([{ ...LOGIN, scenarios: [LOGIN.scenarios[0] as ScenarioSpec] }])], {
      harnessErrors: ['the receiver port 9099 is taken'],
    })
    assert.deepEqual(harness.gate, {
      passed: false,
      problems: ['harness error: the receiver port 9099 is taken'],
    })
    assert.equal(exitCode(harness), 3)
    assert.equal(exitCode(summarize([run([LOGIN])])), 1)
    assert.equal(exitCode({ ...passing, runErrors: ['BeforeAll hook failed'] }), 3)
  })

  test('--fail-fast: the scenarios skipped without a reason were not run, and are no requirement', () => {
    const stopped: FeatureSpec = {
      ...LOGIN,
      scenarios: [
        LOGIN.scenarios[1] as ScenarioSpec,
        {
          name: 'Never reached',
          line: 90,
          before: 'SKIPPED',
          steps: [['Given', 'a tenant of our own', 'SKIPPED']],
        },
      ],
    }
    const summary = summarize([run([stopped])], { failFast: true })
    assert.deepEqual(
      summary.requirements.map((r) => r.name),
      ['A wrong API key secret is refused with 401 invalid_credentials'],
    )
    assert.deepEqual(summary.warnings, [
      '1 scenario was not run: --fail-fast stopped the run at the first failure',
    ])
  })
})
