import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, test } from 'node:test'
import ts from 'typescript'

// The dependency direction must run one way (docs: ARCHITECTURE.md). This walks the relative
// import graph of the folders below and fails with every cycle it finds. Edges counted:
// `import … from`, `import type … from`, `export … from`, side-effect imports and `import('./x.ts')`
// with a literal specifier. Type-only imports are erased at runtime, but a type cycle is still a
// design cycle; and a lazy import() is a load-time optimisation, not a way to hide one.
// madge would do this too, but node_modules is shared, so the graph comes from TypeScript's own
// import pre-processor (already a devDependency; it skips comments and strings correctly).

const ROOT = resolve(import.meta.dirname, '../..')
const FOLDERS = ['src', 'steps', 'bench']
const SOURCE = /\.(?:ts|mts|cts|tsx)$/

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path)
    return SOURCE.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

/** Relative specifiers imported by one file's text (any kind of import or re-export). */
export function relativeImports(text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true)
  return importedFiles.map((f) => f.fileName).filter((s) => s.startsWith('./') || s.startsWith('../'))
}

/** Resolve a specifier the way NodeNext does for this project (explicit `.ts`), or a folder index. */
function resolveImport(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier)
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')]
  return candidates.find((c) => SOURCE.test(c) && existsSync(c) && statSync(c).isFile())
}

export type Graph = Map<string, Set<string>>

export function importGraph(files: string[], read = (f: string) => readFileSync(f, 'utf8')): Graph {
  const graph: Graph = new Map()
  for (const file of files) {
    const edges = new Set<string>()
    for (const spec of relativeImports(read(file))) {
      const target = resolveImport(file, spec)
      if (target) edges.add(target)
    }
    graph.set(file, edges)
  }
  return graph
}

/** Strongly connected components with a cycle in them (Tarjan, iterative enough for this size). */
export function cyclicComponents(graph: Graph): string[][] {
  let index = 0
  const indices = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  const visit = (v: string) => {
    indices.set(v, index)
    low.set(v, index)
    index++
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, indices.get(w) as number))
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop() as string
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || graph.get(v)?.has(v)) components.push(component.sort())
    }
  }
  for (const v of graph.keys()) if (!indices.has(v)) visit(v)
  return components
}

/** The shortest cycle through `start` (breadth-first), as a path that ends where it began. */
export function shortestCycle(graph: Graph, start: string): string[] | undefined {
  const previous = new Map<string, string>()
  const queue = [start]
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i] as string
    for (const w of graph.get(v) ?? []) {
      if (w === start) {
        const path = [start]
        for (let u: string | undefined = v; u !== undefined && u !== start; u = previous.get(u))
          path.splice(1, 0, u)
        return [...path, start]
      }
      if (!previous.has(w)) {
        previous.set(w, v)
        queue.push(w)
      }
    }
  }
  return undefined
}

/** One line per distinct shortest cycle through each file of each cyclic component. */
export function describeCycles(graph: Graph, rel = (f: string) => f): string[] {
  const lines = new Set<string>()
  for (const component of cyclicComponents(graph)) {
    for (const file of component) {
      const cycle = shortestCycle(graph, file)
      if (!cycle) continue
      // Rotate to start at the smallest name so the same cycle is listed once.
      const ring = cycle.slice(0, -1)
      const first = ring.indexOf([...ring].sort()[0] as string)
      const rotated = [...ring.slice(first), ...ring.slice(0, first)]
      lines.add([...rotated, rotated[0] as string].map(rel).join(' → '))
    }
  }
  return [...lines].sort()
}

describe('import cycles', () => {
  test('the finder sees every kind of import and reports a cycle', () => {
    const text = [
      "import a from './a.ts'",
      "import type { B } from '../b.ts'",
      "export * from './c.ts'",
      "import './d.ts'",
      "const e = await import('./e.ts')",
      "// import z from './commented.ts'",
      'const s = \'import y from "./string.ts"\'',
      "import fs from 'node:fs'",
    ].join('\n')
    assert.deepEqual(relativeImports(text), ['./a.ts', '../b.ts', './c.ts', './d.ts', './e.ts'])
    const graph: Graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
      ['d', new Set(['a', 'd'])],
      ['e', new Set(['a'])],
    ])
    assert.deepEqual(describeCycles(graph), ['a → b → c → a', 'd → d'])
    assert.deepEqual(
      describeCycles(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set()],
        ]),
      ),
      [],
    )
  })

  test(`no import cycles in ${FOLDERS.join(', ')}`, () => {
    const files = FOLDERS.flatMap((f) => sourceFiles(join(ROOT, f)))
    assert.ok(files.length > 50, `expected the project's sources, found ${files.length} files`)
    const cycles = describeCycles(importGraph(files), (f) => relative(ROOT, f))
    assert.deepEqual(cycles, [], `import cycles found:\n  ${cycles.join('\n  ')}`)
  })
})

// src/service/store/kysely.ts loads kysely's CommonJS build (start-up time); a value import of 'kysely'
// anywhere else would load its ES build beside it, two copies whose `sql` and `Kysely` do not mix.
describe('one copy of kysely and of typebox', () => {
  test('values of typebox come only from src/service/util/typebox.ts in src/ (its require() keeps start-up short)', () => {
    const offenders = sourceFiles(join(ROOT, 'src')).filter(
      (file) =>
        !file.endsWith(join('util', 'typebox.ts')) &&
        /^import (?!type )[^'"]*from 'typebox'/m.test(readFileSync(file, 'utf8')),
    )
    assert.deepEqual(
      offenders.map((f) => relative(ROOT, f)),
      [],
    )
  })

  test("values of kysely come only from src/service/store/kysely.ts; elsewhere only `import type … from 'kysely'`", () => {
    const files = [...FOLDERS, 'test', 'scripts'].flatMap((f) => sourceFiles(join(ROOT, f)))
    const offenders = files.filter((file) => {
      if (file.endsWith(join('store', 'kysely.ts'))) return false
      const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
      if (!importedFiles.some((f) => f.fileName === 'kysely')) return false
      // One statement: nothing between `import` and `from` may be a quote (no semicolons in this code base).
      return /^import (?!type )[^'"]*from 'kysely'/m.test(readFileSync(file, 'utf8'))
    })
    assert.deepEqual(
      offenders.map((f) => relative(ROOT, f)),
      [],
    )
  })
})
