import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { OIDF_MAPPING_DOC, renderOidfMapping } from '../../scripts/oidf-mapping.ts'
import {
  BEYOND_OIDF,
  type Coverage,
  countCoverage,
  coverageBefore,
  coverageIds,
  coverageScenarios,
  coverageTags,
  OIDF_HAIP_MODULES,
  OIDF_MODULES,
  OIDF_PLAN_NAMES,
  type OidfModule,
  type OidfPlanName,
} from '../../src/harness/server-test/oidf-modules.ts'
import { planCases } from '../../src/harness/wallet-test/plans.ts'

// docs/oidf-mapping.md is generated from src/harness/server-test/oidf-modules.ts and cannot drift from it, and
// everything the data names exists: the wallet test cases, the server test cases, the scenarios' tags and
// titles; each OpenID Foundation plan has the number of modules its plan class lists.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The modules of each plan, and of them the negative ones, as the suite's plan classes list them (module list
 * of `testModulesWithVariants`, read at OIDF_SUITE.commit, src/main/java/net/openid/conformance/):
 * - vp1finalverifier/VP1FinalVerifierTestPlan.java: 4 positive, 8 negative
 * - vci10issuer/VCIIssuerTestPlan.java: 2 metadata, 5 positive, 14 negative
 * - vp1finalwallet/VP1FinalWalletTestPlan.java: 4 positive, 3 "DCQL variation", 10 negative
 * - vci10wallet/VCIWalletTestPlan.java: 5, none negative
 * - vp1finalverifier/VP1FinalVerifierTestPlanHaip.java: the verifier plan's 12
 * - vci10issuer/VCIIssuerTestPlanHaip.java: the issuer plan's 21 (unsupported-encryption-algorithm in its
 *   encrypted entry) and 40 FAPI 2.0 modules: FAPI2SPFinalDiscoveryEndpointVerification in an entry of its own
 *   and vciFapi2SPFinalTestModules() (FAPI2MessageSigningFinalTestPlan's 78 less the 16 FAPI2SPFinalTestPlan
 *   removes as needing signed requests, less the 23 the HAIP plan removes, the discovery module among them);
 *   26 of the 40 in the FAPI plan's negative groups (its comments: "Negative tests for …", "Possible failure
 *   case", the PAR and PKCE refusals)
 * - vp1finalwallet/VP1FinalWalletTestPlanHaip.java: the wallet plan's 17 less response-uri-not-client-id
 * - vci10wallet/VCIWalletTestPlanHaip.java: the wallet plan's 5 less the scopes module, and 10 FAPI 2.0 client
 *   modules (FAPI2MessageSigningFinalClientTestPlan's 32 less the 22 removed), 5 of them negative
 */
const EXPECTED: Record<OidfPlanName, { modules: number; negative: number }> = {
  'oid4vp-1final-verifier-test-plan': { modules: 12, negative: 8 },
  'oid4vci-1_0-issuer-test-plan': { modules: 21, negative: 14 },
  'oid4vp-1final-wallet-test-plan': { modules: 17, negative: 10 },
  'oid4vci-1_0-wallet-test-plan': { modules: 5, negative: 0 },
  'oid4vp-1final-verifier-haip-test-plan': { modules: 12, negative: 8 },
  'oid4vci-1_0-issuer-haip-test-plan': { modules: 61, negative: 40 },
  'oid4vp-1final-wallet-haip-test-plan': { modules: 16, negative: 9 },
  'oid4vci-1_0-wallet-haip-test-plan': { modules: 14, negative: 5 },
}

/**
 * The case ids of the server test plans, for when src/harness/server-test/plans.ts cannot be loaded; when it
 * can, its `serverPlanCases` decides.
 */
const ISSUER_CASE_IDS = [
  'metadata',
  'metadata-appended',
  'happy-flow',
  'proof-es256',
  'additional-requests',
  'deferred',
  'notification',
  'proof-foreign-signature',
  'proof-foreign-kid',
  'proof-alg-none',
  'proof-wrong-typ',
  'proof-wrong-aud',
  'proof-stale-iat',
  'proof-future-iat',
  'proof-private-jwk',
  'proof-missing',
  'proof-legacy-shape',
  'nonce-unknown',
  'nonce-reused',
  'code-replayed',
  'tx-code-wrong',
  'tx-code-missing',
  'unknown-configuration',
  'unknown-identifier',
  'token-in-query',
  'token-expired',
  'credential-format-legacy',
].map((name) => `issuer:${name}`)
const VERIFIER_CASE_IDS = [
  'happy-flow',
  'request-uri-twice',
  'request-uri-post',
  'response-replayed',
  'vp-foreign-key',
  'vp-wrong-nonce',
  'vp-wrong-aud',
  'vp-replayed',
  'tampered-credential',
  'untrusted-issuer',
  'revoked-credential',
  'lying-submission',
  'vp-token-wrong-id',
  'sd-tampered-disclosure',
  'sd-issuer-signature',
  'kb-missing',
  'kb-wrong-sd-hash',
  'kb-wrong-nonce',
  'kb-wrong-aud',
  'kb-stale-iat',
  'kb-future-iat',
  'kb-bad-signature',
  'plain-response',
  'jwe-wrong-key',
  'ldp-undefined-term',
].map((name) => `verifier:${name}`)

async function serverCaseIds(): Promise<Set<string>> {
  try {
    const plans = await import('../../src/harness/server-test/plans.ts')
    return new Set(
      (['issuer', 'verifier'] as const).flatMap((plan) => plans.serverPlanCases(plan).map((c) => c.id)),
    )
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error
    return new Set([...ISSUER_CASE_IDS, ...VERIFIER_CASE_IDS])
  }
}

const isServerId = (id: string): boolean => id.startsWith('issuer:') || id.startsWith('verifier:')

function featureTexts(dir = join(ROOT, 'features')): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.feature'))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
}

const ALL_MODULES: readonly OidfModule[] = [...OIDF_MODULES, ...OIDF_HAIP_MODULES]

/** Every coverage the data holds, now and before, with where it is. */
function coverages(): { where: string; coverage: Coverage }[] {
  return ALL_MODULES.flatMap((m) => [
    { where: `${m.plan} ${m.module}`, coverage: m.coverage },
    ...(m.before ? [{ where: `${m.plan} ${m.module} (before)`, coverage: m.before }] : []),
  ])
}

const allIds = (): string[] => [
  ...coverages().flatMap((c) => coverageIds(c.coverage)),
  ...BEYOND_OIDF.flatMap((b) => b.ids ?? []),
]
const allTags = (): string[] => [
  ...coverages().flatMap((c) => coverageTags(c.coverage)),
  ...BEYOND_OIDF.flatMap((b) => b.tags ?? []),
]

describe('docs/oidf-mapping.md', () => {
  test('is what scripts/oidf-mapping.ts renders (npm run docs:oidf)', () => {
    assert.equal(
      readFileSync(join(ROOT, OIDF_MAPPING_DOC), 'utf8'),
      renderOidfMapping(),
      `${OIDF_MAPPING_DOC} is out of date: run npm run docs:oidf`,
    )
  })

  test('every wallet test case it names is a case of the wallet test plans', () => {
    const ids = new Set(planCases('all').map((c) => c.id))
    const missing = allIds().filter((id) => !isServerId(id) && !ids.has(id))
    assert.deepEqual([...new Set(missing)], [])
  })

  test('every scenario tag and title it names is in a feature file', () => {
    const texts = featureTexts()
    assert.ok(texts.length > 5, 'the features are there')
    const hasTag = (tag: string) =>
      texts.some((t) =>
        new RegExp(`(^|\\s)${tag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\s|$)`, 'm').test(t),
      )
    assert.deepEqual(
      [...new Set(allTags())].filter((t) => !hasTag(t)),
      [],
    )
    const titles = coverages().flatMap((c) => coverageScenarios(c.coverage))
    const hasTitle = (title: string) =>
      texts.some((t) => t.includes(`Scenario: ${title}\n`) || t.includes(`Scenario Outline: ${title}\n`))
    assert.deepEqual(
      [...new Set(titles)].filter((t) => !hasTitle(t)),
      [],
    )
  })

  test('every issuer and verifier case it names is a case of the server test plans', async () => {
    const ids = await serverCaseIds()
    const missing = allIds().filter((id) => isServerId(id) && !ids.has(id))
    assert.deepEqual([...new Set(missing)], [])
  })

  test('each kind of coverage names its own kind of case, and before names no server case', () => {
    const prefix = { 'issuer-case': 'issuer:', 'verifier-case': 'verifier:' } as const
    for (const { where, coverage } of coverages()) {
      if (coverage.kind === 'issuer-case' || coverage.kind === 'verifier-case') {
        assert.ok(coverage.ids.length > 0, where)
        for (const id of coverage.ids) assert.ok(id.startsWith(prefix[coverage.kind]), `${where}: ${id}`)
      } else if (coverage.kind === 'wallet-case') {
        assert.ok(coverage.ids.length > 0, where)
        for (const id of coverage.ids) assert.ok(!isServerId(id), `${where}: ${id}`)
      } else if (coverage.kind === 'scenario') {
        assert.ok(coverage.tags.length > 0, where)
      } else if (coverage.kind === 'partial') {
        assert.ok(
          coverageIds(coverage).length + coverageTags(coverage).length > 0,
          `${where} names what covers part`,
        )
      }
      if (where.endsWith('(before)')) assert.deepEqual(coverageIds(coverage).filter(isServerId), [], where)
    }
    for (const m of OIDF_MODULES) {
      const before = coverageBefore(m)
      assert.deepEqual(coverageIds(before).filter(isServerId), [], `${m.module}: give its coverage before`)
    }
  })

  test("each plan has the suite's number of modules and negatives, each module once", () => {
    for (const plan of OIDF_PLAN_NAMES) {
      const modules = ALL_MODULES.filter((m) => m.plan === plan)
      assert.equal(modules.length, EXPECTED[plan].modules, `${plan}: modules`)
      assert.equal(modules.filter((m) => m.negative).length, EXPECTED[plan].negative, `${plan}: negatives`)
      assert.equal(new Set(modules.map((m) => m.module)).size, modules.length, `${plan}: a module twice`)
    }
    const all = countCoverage(OIDF_MODULES)
    assert.deepEqual([all.modules, all.negatives], [55, 32])
    assert.ok(
      OIDF_HAIP_MODULES.every((m) => m.before === undefined),
      'the HAIP plans have no coverage before',
    )
  })
})
