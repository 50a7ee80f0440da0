import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { catalogueProblems, readCatalogueData, sectionNumbers } from '../../scripts/requirements.ts'
import { featureFiles } from '../../src/cli/conformance.ts'
import { loadScenarios } from '../../src/harness/scenarios.ts'

// The relying-party interface is described in the repository itself (docs/interface.md), and every
// `@interface-X.Y` tag of the suite names one of its sections.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const INTERFACE_DOC = 'docs/interface.md'
const OUTCOMES = 'test/fixtures/conformance/outcomes.feature'
const SELF = fileURLToPath(import.meta.url)

/** Every text file of the repository that could cite a document (not node_modules, git or reports). */
function textFiles(dir = ROOT): string[] {
  const files: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (!['node_modules', '.git', 'reports'].includes(entry.name)) files.push(...textFiles(path))
    } else if (/\.(md|ts|mjs|json|feature|ya?ml)$/.test(entry.name) && path !== SELF) {
      files.push(path)
    }
  }
  return files
}

describe('the interface document', () => {
  test('docs/interface.md has every section of the interface, numbered as the tags name them', () => {
    const sections = sectionNumbers(readFileSync(join(ROOT, INTERFACE_DOC), 'utf8'))
    const expected = [
      ...['1', '2', '3', '4', '5', '6', '7', '8', '9'],
      ...Array.from({ length: 10 }, (_, i) => `2.${i + 1}`),
      ...Array.from({ length: 7 }, (_, i) => `4.${i + 1}`),
    ]
    assert.deepEqual([...sections].sort(), expected.sort())
  })

  test('every @interface tag of the features names a heading of docs/interface.md', () => {
    const { scenarios, errors } = loadScenarios(featureFiles(ROOT), ROOT)
    assert.deepEqual(errors, [])
    const sections = sectionNumbers(readFileSync(join(ROOT, INTERFACE_DOC), 'utf8'))
    const tags = new Set(scenarios.flatMap((s) => s.sources).filter((t) => t.startsWith('@interface-')))
    assert.ok(tags.size > 10, 'the suite carries @interface tags')
    for (const tag of tags) assert.ok(sections.has(tag.slice('@interface-'.length)), `${tag} points nowhere`)
    const group = readCatalogueData().groups.find((g) => g.prefix === '@interface-')
    assert.equal(group?.sections, INTERFACE_DOC, 'npm run check checks the tags against docs/interface.md')
  })

  test('npm run check names a tag whose section the document lacks', () => {
    const { scenarios } = loadScenarios([OUTCOMES], ROOT)
    const data = {
      groups: [{ prefix: '@interface-', title: 'Interface', about: 'The interface.', sections: 'docs/x.md' }],
      clauses: { '@interface-4.1': 'Login.' },
    }
    const doc = (n: string) =>
      `# X\n\n## <a id="section-4"></a>4. Calls\n\n### <a id="section-${n}"></a>${n} A call\n`
    assert.deepEqual(
      catalogueProblems(scenarios, data, () => doc('4.1')),
      [],
    )
    assert.deepEqual(
      catalogueProblems(scenarios, data, () => doc('4.2')),
      [
        `@interface-4.1 (${OUTCOMES}:7) names section 4.1, which docs/x.md has no heading for: add one starting ` +
          '<a id="section-4.1"></a>4.1 there, or fix the tag',
      ],
    )
    // A heading must carry the anchor of its own number: the catalogue links to it.
    assert.equal(
      catalogueProblems(scenarios, data, () => '### <a id="section-4.2"></a>4.1 Login\n').length,
      1,
    )
    assert.match(
      catalogueProblems(scenarios, data, () => {
        throw new Error('ENOENT: no such file')
      }).join('\n'),
      /features\/requirements\.json names docs\/x\.md for the sections of its tags: ENOENT/,
    )
  })

  test('the repository cites no document outside itself', () => {
    // Built from pieces so that this file does not match itself.
    const outside = [
      ['service', 'interface.md'].join('-'),
      ['shared', 'ARCHITECTURE.md'].join('/'),
      ['shared', 'DEPENDENCIES.md'].join('/'),
    ]
    // `../shared/…` from the repository's root or docs/ leaves it (`src/shared/` is ours).
    const linkOutside = new RegExp(`(^|[^\\w/.-])(\\.\\./)+${'shared'}/`)
    const found: string[] = []
    for (const file of textFiles()) {
      const text = readFileSync(file, 'utf8')
      for (const [i, line] of text.split('\n').entries()) {
        const where = `${relative(ROOT, file)}:${i + 1}`
        if (outside.some((s) => line.includes(s))) found.push(`${where}: ${line.trim()}`)
        else if (file.endsWith('.md') && linkOutside.test(line)) found.push(`${where}: ${line.trim()}`)
      }
    }
    assert.deepEqual(found, [], 'describe it in docs/ (the interface: docs/interface.md) instead')
  })
})
