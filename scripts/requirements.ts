// Writes docs/requirements.md, the catalogue of every clause the conformance suite checks: each source tag
// of the features (`@interface-4.4`, `@OID4VP-1.0-5.9.3`, `@security`, …, sorted into sources as the
// conformance report does) with its description from features/requirements.json and links to its
// scenarios. The reports (conformance.md) link each source tag to its anchor here.
//
//   node --import tsx scripts/requirements.ts           writes docs/requirements.md
//   node --import tsx scripts/requirements.ts --check   fails when it is out of date (npm run check)
//
// Either way it fails when a tag has no description or a description no scenario: write or remove it in
// features/requirements.json; and when a tag of a group with `sections` (`@interface-4.4`) names a section
// its document (docs/interface.md) has no heading for.

import { readFileSync, writeFileSync } from 'node:fs'
import { join, posix, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { featureFiles } from '../src/cli/conformance.ts'
import { requirementAnchor } from '../src/harness/report.ts'
import { loadScenarios, type ScenarioInfo } from '../src/harness/scenarios.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
export const CATALOGUE_DATA = 'features/requirements.json'
export const CATALOGUE_DOC = 'docs/requirements.md'

export interface CatalogueGroup {
  /** Tags starting with it belong to the group (the first group that matches). */
  prefix: string
  title: string
  about: string
  /**
   * A document of this repository (`docs/interface.md`) whose numbered sections the tags name: the tag
   * without the prefix is a section number (`@interface-4.4` → 4.4), which must have a heading there.
   */
  sections?: string
}

export interface CatalogueData {
  groups: CatalogueGroup[]
  /** Tag → what the clause stands for, in our own words. */
  clauses: Record<string, string>
}

/** Reads and checks features/requirements.json. */
export function readCatalogueData(path = join(ROOT, CATALOGUE_DATA)): CatalogueData {
  const data = JSON.parse(readFileSync(path, 'utf8')) as Partial<CatalogueData>
  const groups = Array.isArray(data.groups) ? data.groups : []
  const clauses = typeof data.clauses === 'object' && data.clauses !== null ? data.clauses : {}
  for (const [i, g] of groups.entries()) {
    if (typeof g.prefix !== 'string' || typeof g.title !== 'string' || typeof g.about !== 'string')
      throw new Error(`${CATALOGUE_DATA}: groups[${i}] needs prefix, title and about (strings)`)
    if (g.sections !== undefined && typeof g.sections !== 'string')
      throw new Error(`${CATALOGUE_DATA}: groups[${i}].sections must be a document path (a string)`)
  }
  for (const [tag, text] of Object.entries(clauses)) {
    if (typeof text !== 'string' || text.trim() === '')
      throw new Error(`${CATALOGUE_DATA}: clauses["${tag}"] must be a description (a non-empty string)`)
  }
  return { groups, clauses }
}

/** Every source tag of the scenarios, with its scenarios in file and line order. */
export function clausesOf(scenarios: readonly ScenarioInfo[]): Map<string, ScenarioInfo[]> {
  const byTag = new Map<string, ScenarioInfo[]>()
  for (const s of scenarios) for (const tag of s.sources) byTag.set(tag, [...(byTag.get(tag) ?? []), s])
  return byTag
}

/**
 * The section numbers of a Markdown document: its headings that carry the anchor of their number,
 * `### <a id="section-4.4"></a>4.4 Submit credentials` or `## <a id="section-3"></a>3. States`.
 */
export function sectionNumbers(markdown: string): Set<string> {
  const heading = /^#{1,6}[ \t]+<a id="section-(\d+(?:\.\d+)*)"><\/a>\1\.?[ \t]/gm
  return new Set([...markdown.matchAll(heading)].map((m) => m[1] as string))
}

const readDoc = (path: string) => readFileSync(join(ROOT, path), 'utf8')

/**
 * Tags without a description, descriptions without a tag, and tags naming a section their group's
 * document has no heading for: each a line saying what to do. `read` reads a document of the repository.
 */
export function catalogueProblems(
  scenarios: readonly ScenarioInfo[],
  data: CatalogueData,
  read: (path: string) => string = readDoc,
): string[] {
  const tags = clausesOf(scenarios)
  const problems: string[] = []
  for (const [tag, list] of tags) {
    if (!(tag in data.clauses)) {
      const first = list[0] as ScenarioInfo
      problems.push(
        `${tag} (${first.uri}:${first.line}) has no description: add it to ${CATALOGUE_DATA} "clauses"`,
      )
    }
  }
  for (const tag of Object.keys(data.clauses)) {
    if (!tags.has(tag))
      problems.push(`${CATALOGUE_DATA} describes ${tag}, which no scenario carries any more: remove it`)
  }
  return [...problems, ...sectionProblems(tags, data, read)]
}

/** Tags of a group with `sections` whose document has no heading for the section they name. */
function sectionProblems(
  tags: ReadonlyMap<string, ScenarioInfo[]>,
  data: CatalogueData,
  read: (path: string) => string,
): string[] {
  const problems: string[] = []
  const documents = new Map<string, Set<string> | undefined>()
  const sectionsOf = (doc: string) => {
    if (!documents.has(doc)) {
      try {
        documents.set(doc, sectionNumbers(read(doc)))
      } catch (error) {
        documents.set(doc, undefined)
        problems.push(
          `${CATALOGUE_DATA} names ${doc} for the sections of its tags: ${(error as Error).message}`,
        )
      }
    }
    return documents.get(doc)
  }
  for (const [tag, list] of tags) {
    const group = data.groups.find((g) => tag.startsWith(g.prefix))
    if (group?.sections === undefined) continue
    const section = tag.slice(group.prefix.length)
    const known = sectionsOf(group.sections)
    if (known && !known.has(section)) {
      const first = list[0] as ScenarioInfo
      problems.push(
        `${tag} (${first.uri}:${first.line}) names section ${section}, which ${group.sections} has no heading ` +
          `for: add one starting <a id="section-${section}"></a>${section} there, or fix the tag`,
      )
    }
  }
  return problems
}

/** Natural order for tags: @interface-4.10 after @interface-4.9. */
const byNatural = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true, sensitivity: 'base' })
const text = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/\|/g, '\\|')
const groupAnchor = (g: CatalogueGroup) => `group-${g.prefix.replace(/^@/, '').replace(/-$/, '')}`

/** docs/requirements.md: pure, from the scenarios and the catalogue data. */
export function renderCatalogue(scenarios: readonly ScenarioInfo[], data: CatalogueData): string {
  const tags = clausesOf(scenarios)
  const other: CatalogueGroup = {
    prefix: '',
    title: 'Other tags',
    about: 'Source tags that match no group of features/requirements.json.',
  }
  const grouped = new Map<CatalogueGroup, string[]>()
  for (const tag of [...tags.keys()].sort(byNatural)) {
    const group = data.groups.find((g) => tag.startsWith(g.prefix)) ?? other
    grouped.set(group, [...(grouped.get(group) ?? []), tag])
  }
  const groups = [...data.groups, other].filter((g) => grouped.has(g))
  const out = [
    '# Requirements catalogue',
    '',
    `<!-- Generated by scripts/requirements.ts from the features' tags and ${CATALOGUE_DATA}: do not edit;`,
    '     run `node --import tsx scripts/requirements.ts` (npm run check fails when this file is stale). -->',
    '',
    'Every clause the conformance suite checks: the source tags of its scenarios, what each stands for (in',
    'our own words), and the scenarios that check it. A scenario is one requirement, named after what it',
    'requires; a scenario may check several clauses. The conformance reports (`conformance.md`) link each',
    'source tag to its entry here; `vc-harness conformance --tags TAG --list` lists the same scenarios.',
    '',
    `${tags.size} clauses, ${scenarios.length} scenarios.`,
    '',
    '| Source | Clauses | Scenarios |',
    '| --- | ---: | ---: |',
  ]
  for (const g of groups) {
    const list = grouped.get(g) ?? []
    const count = new Set(list.flatMap((t) => (tags.get(t) ?? []).map((s) => `${s.uri}:${s.line}`))).size
    out.push(`| [${text(g.title)}](#${groupAnchor(g)}) | ${list.length} | ${count} |`)
  }
  out.push('')
  for (const g of groups) {
    out.push(`## <a id="${groupAnchor(g)}"></a>${text(g.title)}`, '', text(g.about), '')
    for (const tag of grouped.get(g) ?? []) {
      const list = tags.get(tag) ?? []
      out.push(
        `### <a id="${requirementAnchor(tag)}"></a>\`${tag}\``,
        '',
        text(data.clauses[tag] ?? '(no description)'),
        '',
      )
      if (g.sections !== undefined) {
        const section = tag.slice(g.prefix.length)
        const link = posix.relative(posix.dirname(CATALOGUE_DOC), g.sections)
        out.push(`Section [${section} of ${g.sections}](${link}#section-${section}).`, '')
      }
      out.push(`${list.length} scenario${list.length === 1 ? '' : 's'}:`, '')
      for (const s of list)
        out.push(`- [${s.uri.split('/').pop()}:${s.line}](../${s.uri}#L${s.line}) ${text(s.name)}`)
      out.push('')
    }
  }
  return `${out.join('\n').trimEnd()}\n`
}

function main(argv: string[]): number {
  const { scenarios, errors } = loadScenarios(featureFiles(ROOT), ROOT)
  for (const e of errors) console.error(`${e.uri}: ${e.message}`)
  const data = readCatalogueData()
  const problems = catalogueProblems(scenarios, data)
  for (const p of problems) console.error(p)
  if (errors.length || problems.length) return 1
  const wanted = renderCatalogue(scenarios, data)
  const path = join(ROOT, CATALOGUE_DOC)
  if (argv.includes('--check')) {
    let current = ''
    try {
      current = readFileSync(path, 'utf8')
    } catch {}
    if (current !== wanted) {
      console.error(`${CATALOGUE_DOC} is out of date: run node --import tsx scripts/requirements.ts`)
      return 1
    }
    return 0
  }
  writeFileSync(path, wanted)
  console.log(`wrote ${CATALOGUE_DOC} (${clausesOf(scenarios).size} clauses, ${scenarios.length} scenarios)`)
  return 0
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2))
}
