// Writes docs/oidf-mapping.md: every module of the OpenID Foundation conformance suite's OpenID4VCI 1.0 and
// OpenID4VP 1.0 test plans (and of their HAIP plans), and what of vc-harness covers it, from the data of
// src/harness/server-test/oidf-modules.ts. Prints the coverage before the issuer and verifier test plans and now.
//
//   npm run docs:oidf                                    writes docs/oidf-mapping.md
//   node --import tsx scripts/oidf-mapping.ts --check    fails when it is out of date

import { readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  BEYOND_OIDF,
  type Coverage,
  type CoverageCount,
  countCoverage,
  coverageBefore,
  OIDF_HAIP_MODULES,
  OIDF_MODULES,
  OIDF_PLANS,
  OIDF_SUITE,
  type OidfModule,
  type OidfPlan,
} from '../src/harness/server-test/oidf-modules.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
export const OIDF_MAPPING_DOC = 'docs/oidf-mapping.md'

/** A table cell: no line breaks, no column separators. */
const cell = (text: string): string =>
  text
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\|/g, '\\|')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
const code = (items: readonly string[]): string => items.map((i) => `\`${i}\``).join(', ')

function covers(c: Coverage): string {
  const parts: string[] = []
  if ('ids' in c && c.ids && c.ids.length > 0) parts.push(code(c.ids))
  if ('tags' in c && c.tags && c.tags.length > 0)
    parts.push(`scenario${c.tags.length > 1 ? 's' : ''} ${code(c.tags)}`)
  if ('scenarios' in c && c.scenarios && c.scenarios.length > 0)
    parts.push(c.scenarios.map((s) => `“${s}”`).join(', '))
  return parts.join(' ')
}

/** The coverage in words; `notYet` marks a missing module "not yet covered" (the HAIP tables). */
export function renderCoverage(c: Coverage, notYet = false): string {
  switch (c.kind) {
    case 'none':
      return `**${notYet ? 'not yet covered' : 'not covered'}**: ${c.why}`
    case 'partial':
      return `**partial**: ${covers(c)}; ${c.why}`
    default:
      return `covered: ${covers(c)}`
  }
}

function renderModuleCoverage(m: OidfModule, notYet: boolean): string {
  return m.note ? `${renderCoverage(m.coverage, notYet)}; ${m.note}` : renderCoverage(m.coverage, notYet)
}

const sameCoverage = (a: Coverage, b: Coverage): boolean => JSON.stringify(a) === JSON.stringify(b)

function planTable(plan: OidfPlan, modules: readonly OidfModule[], withBefore: boolean): string[] {
  const lines = [
    `### \`${plan.name}\``,
    '',
    `${plan.title}. ${modules.length} modules, ${modules.filter((m) => m.negative).length} of them negative. ` +
      `Suite class: \`${plan.planClass}\`. In vc-harness: ${plan.vcHarness}.`,
    '',
  ]
  if (withBefore) {
    lines.push(
      '| Module | Negative | What it checks | vc-harness | Before the issuer and verifier plans |',
      '| --- | --- | --- | --- | --- |',
    )
  } else {
    lines.push('| Module | Negative | What it checks | vc-harness |', '| --- | --- | --- | --- |')
  }
  for (const m of modules) {
    const row = [
      `\`${m.module}\``,
      m.negative ? 'yes' : 'no',
      cell(m.checks),
      cell(renderModuleCoverage(m, plan.haip)),
    ]
    if (withBefore) {
      const before = coverageBefore(m)
      row.push(sameCoverage(before, m.coverage) ? 'the same' : cell(renderCoverage(before)))
    }
    lines.push(`| ${row.join(' | ')} |`)
  }
  lines.push('')
  return lines
}

function countRow(name: string, c: CoverageCount): string {
  const partial = c.negativesPartial > 0 ? ` (${c.negativesPartial} partial)` : ''
  return `| ${name} | ${c.modules} | ${c.covered} | ${c.partial} | ${c.missing} | ${c.negativesCovered} of ${c.negatives}${partial} |`
}

function countTable(
  modules: readonly OidfModule[],
  plans: readonly OidfPlan[],
  when: 'before' | 'after',
): string[] {
  const lines = [
    '| Plan | Modules | Covered | Partial | Not covered | Negatives covered |',
    '| --- | --- | --- | --- | --- | --- |',
  ]
  for (const plan of plans)
    lines.push(
      countRow(
        `\`${plan.name}\``,
        countCoverage(
          modules.filter((m) => m.plan === plan.name),
          when,
        ),
      ),
    )
  lines.push(countRow('**all**', countCoverage(modules, when)))
  return lines
}

/** A line of counts, as the generator prints it. */
export function summaryLine(c: CoverageCount): string {
  return (
    `${c.covered} of ${c.modules} modules covered (${c.negativesCovered} of ${c.negatives} negatives), ` +
    `${c.partial} partial, ${c.missing} not covered`
  )
}

/** docs/oidf-mapping.md, from the data. */
export function renderOidfMapping(): string {
  const plans = OIDF_PLANS.filter((p) => !p.haip)
  const haipPlans = OIDF_PLANS.filter((p) => p.haip)
  const before = countCoverage(OIDF_MODULES, 'before')
  const after = countCoverage(OIDF_MODULES, 'after')
  const haip = countCoverage(OIDF_HAIP_MODULES)
  const lines = [
    '# vc-harness and the OpenID Foundation test plans',
    '',
    '<!-- Generated by `npm run docs:oidf` (scripts/oidf-mapping.ts) from src/harness/server-test/oidf-modules.ts:',
    '     edit the data there and regenerate; test/repo/oidf-mapping.test.ts fails when this file is out of date. -->',
    '',
    `The ${OIDF_SUITE.name} grades wallets, issuers and verifiers with test plans made of modules. This page`,
    'lists every module of its OpenID4VCI 1.0 and OpenID4VP 1.0 plans, and of their HAIP 1.0 plans, with what of',
    'vc-harness covers it, or why nothing does:',
    '',
    "- an **issuer case** (`issuer:…`): `vc-harness issuer-test`, the harness's wallet against any OpenID4VCI issuer;",
    "- a **verifier case** (`verifier:…`): `vc-harness verifier-test`, the harness's wallet against any OpenID4VP verifier;",
    '- a **wallet case** (`issuance-1.0:…`, `presentation-dcql:…`): `vc-harness wallet-test`, the service as a',
    '  deliberately faulty issuer or verifier against any wallet ([wallet-testing.md](wallet-testing.md));',
    '- a **scenario** (a clause tag such as `@OID4VP-1.0-8.1`): the conformance suite (`features/`), which grades our',
    '  own service, or any deployment of the relying-party interface ([interface.md](interface.md)), through the API',
    '  a relying party calls to open offers and verification sessions and read their outcome;',
    '- **partial**: some of what the module checks is checked, and the line says what is not; **not covered**: why,',
    '  and the issue that brings it where there is one.',
    '',
    `Read from the suite's plan and module classes (\`${OIDF_SUITE.sources}\`) at commit`,
    `\`${OIDF_SUITE.commit}\` (${OIDF_SUITE.date}) of ${OIDF_SUITE.mirror}`,
    `(the project lives at ${OIDF_SUITE.home}). A module is "negative" when its plan lists it among the negative`,
    'tests: the suite sends something wrong.',
    '',
    '## Counts',
    '',
    `- **Now**: ${summaryLine(after)}.`,
    `- **Before the issuer and verifier test plans** (wallet test cases and scenarios only): ${summaryLine(before)}.`,
    `- **HAIP plans**: ${summaryLine(haip)}.`,
    '',
    'Now:',
    '',
    ...countTable(OIDF_MODULES, plans, 'after'),
    '',
    'Before the issuer and verifier test plans:',
    '',
    ...countTable(OIDF_MODULES, plans, 'before'),
    '',
    'HAIP plans:',
    '',
    ...countTable(OIDF_HAIP_MODULES, haipPlans, 'after'),
    '',
    '## Variants',
    '',
    'The suite runs each plan in variants chosen when it is started; a module marked covered is covered in the',
    'variant vc-harness runs:',
    '',
    '- **issuer plan**: vc-harness redeems a pre-authorized code (with a `tx_code` where the offer asks for one) and',
    '  uses the access token as a bearer token; the suite also runs the authorization code flow with PAR and always',
    '  sender-constrains the token (DPoP or mTLS), which the issuer test cases do not take yet: over that flow the',
    '  conformance scenarios of `features/issuance/haip.feature` (PAR, PKCE S256, DPoP, wallet attestation, issue',
    '  36) check a deployment whose tenant trusts the test wallet provider. Credential formats: whatever the issuer',
    '  offers (the suite: `dc+sd-jwt` or `mso_mdoc`).',
    "- **verifier plan**: the harness's wallet answers whatever the verifier asks for (client identifier prefix,",
    '  `request_uri` or by value, `direct_post` or `direct_post.jwt`) with credentials of its test issuer',
    "  (`jwt_vc_json`, `dc+sd-jwt`, `ldp_vc`, `mso_mdoc`) or the user's own; over the Digital Credentials API",
    '  (`--dc-api-command`, or a relying-party session offered there) its `dc-api-*` cases answer correctly or',
    '  bound to another origin, to the client_id, or to another request.',
    '- **wallet plans**: `presentation-dcql` asks with the `decentralized_identifier`, `x509_san_dns`, `x509_hash`',
    '  and `redirect_uri` prefixes and `direct_post` or `direct_post.jwt`; `presentation-dc-api` asks over the',
    '  Digital Credentials API (unsigned, signed, multi-signed; `dc_api` or `dc_api.jwt`; the harness plays the',
    '  browser and posts the answer back); `issuance-1.0` offers a pre-authorized',
    '  code for a `dc+sd-jwt` credential, issued at once; `issuance-haip` offers one with the `authorization_code`',
    '  grant alone (PAR, PKCE S256, DPoP with server nonces, wallet attestation), issued at once.',
    '',
    '## OpenID4VCI 1.0 and OpenID4VP 1.0 plans',
    '',
  ]
  for (const plan of plans)
    lines.push(
      ...planTable(
        plan,
        OIDF_MODULES.filter((m) => m.plan === plan.name),
        true,
      ),
    )
  lines.push(
    '## HAIP plans',
    '',
    "The HAIP 1.0 plans run the modules above in HAIP's variants (`x509_hash` and a signed request for",
    'presentation; the authorization code flow with DPoP and wallet attestation for issuance; the Digital',
    'Credentials API for three of the four presentation wallet variants) and add FAPI 2.0 modules for the',
    'authorization server and the client. What is missing here is mostly FAPI 2.0 rules that no scenario or case',
    'checks yet, key attestation and batch issuance (issue 36), and most misbehaviours over the Digital',
    'Credentials API: vc-harness sends them by link, and over the API only the `presentation-dc-api` and',
    '`dc-api-*` cases.',
    '',
  )
  for (const plan of haipPlans)
    lines.push(
      ...planTable(
        plan,
        OIDF_HAIP_MODULES.filter((m) => m.plan === plan.name),
        false,
      ),
    )
  lines.push(
    '## Beyond OIDF',
    '',
    "What vc-harness checks that the suite's plans do not.",
    '',
    '| Topic | What vc-harness checks | Cases and scenarios |',
    '| --- | --- | --- |',
  )
  for (const b of BEYOND_OIDF) {
    const refs = [
      ...(b.ids && b.ids.length > 0 ? [code(b.ids)] : []),
      ...(b.tags && b.tags.length > 0 ? [`scenarios ${code(b.tags)}`] : []),
    ]
    lines.push(`| ${cell(b.topic)} | ${cell(b.what)} | ${refs.length > 0 ? refs.join('; ') : 'every plan'} |`)
  }
  lines.push('')
  return lines.join('\n')
}

function main(argv: string[]): number {
  const path = join(ROOT, OIDF_MAPPING_DOC)
  const text = renderOidfMapping()
  const before = countCoverage(OIDF_MODULES, 'before')
  const after = countCoverage(OIDF_MODULES, 'after')
  if (argv.includes('--check')) {
    let current = ''
    try {
      current = readFileSync(path, 'utf8')
    } catch {}
    if (current !== text) {
      console.error(`${OIDF_MAPPING_DOC} is out of date: run npm run docs:oidf`)
      return 1
    }
  } else {
    writeFileSync(path, text)
    console.log(`wrote ${OIDF_MAPPING_DOC}`)
  }
  console.log(
    `OpenID4VCI 1.0 / OpenID4VP 1.0 plans, before the issuer and verifier plans: ${summaryLine(before)}`,
  )
  console.log(`OpenID4VCI 1.0 / OpenID4VP 1.0 plans, now: ${summaryLine(after)}`)
  console.log(`HAIP plans, now: ${summaryLine(countCoverage(OIDF_HAIP_MODULES))}`)
  return 0
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2))
}
