import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import type { Envelope } from '@cucumber/messages'
import { progressLine } from '../src/harness/progress-formatter.ts'
import {
  type ConformanceSummary,
  RunCollector,
  renderConsoleSummary,
  renderMarkdown,
  type SummaryOptions,
  summarize,
  writeReports,
} from '../src/harness/report.ts'
import {
  type ExpectedFailures,
  ExpectedFailuresError,
  loadExpectedFailures,
  parseExpectedFailures,
} from '../src/harness/report-expected.ts'

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
      new URL('../features/expected-failures.json', import.meta.url).pathname,
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

  test('planned scenarios that never ran fail as not run', () => {
    const envelopes = run([LOGIN]).filter((e) => !e.testCaseStarted && !e.testCaseFinished)
    const summary = summarize([envelopes])
    assert.equal(summary.totals.fail, 4)
    assert.match(summary.requirements[0]?.reason ?? '', /^not run: the test run stopped before this scenario/)
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
