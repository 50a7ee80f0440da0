// `npm run build`: the package's dist/ (README, "Use as a library"). `prepare` runs it (with --optional), so
// `npm pack`, `npm publish` and a git install build it; `prepack` would not do for the last: npm 11 runs only
// `prepare` in a git dependency's clone (pacote lib/dir.js), whatever its docs say. `npm ci` and `npm install`
// in a clone run it too (~13 s on 2 idle cores, ~25 s on busy ones). Compiled with the TypeScript compiler
// and tsconfig.build.json:
//
// 1. JavaScript (and source maps) for every module the public entries reach, imports rewritten from ./x.ts
//    to ./x.js (rewriteRelativeImportExtensions). Not type-checked here (noCheck): `npm run check` does that,
//    and this step then costs a transpile only.
// 2. Declarations only for the public surface: the entries and the modules their declarations import.
//    `tsc --declaration` over the whole program would also print the service's TypeBox route schemas, whose
//    inferred types grow beyond 4 GB of heap (src/service/portal/schemas.ts); no public type names them.

import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type TS from 'typescript'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

// --optional (prepare): an install without development dependencies (`npm ci --omit=dev`, a deployment of
// the service) has no compiler and needs no dist/ (the CLI runs the TypeScript through tsx): skip, do not fail.
let ts: typeof TS
try {
  ts = (await import('typescript')).default
} catch (error) {
  if (!process.argv.includes('--optional') || (error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND')
    throw error
  console.error(
    'dist/ not built: typescript is not installed (a production install); the CLI does not need it',
  )
  process.exit(0)
}
const CONFIG = join(ROOT, 'tsconfig.build.json')
const started = performance.now()

const parsed = ts.getParsedCommandLineOfConfigFile(
  CONFIG,
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: fail },
)
if (!parsed) throw new Error(`cannot read ${CONFIG}`)
if (parsed.errors.length) fail(...parsed.errors)
const options = parsed.options
const outDir = options.outDir as string
const rootDir = options.rootDir as string
rmSync(outDir, { recursive: true, force: true })

// Both passes share the parsed sources (half of the build's time is parsing the dependencies' declarations).
const host = ts.createCompilerHost(options)
const parsedSources = new Map<string, TS.SourceFile | undefined>()
const parse = host.getSourceFile
host.getSourceFile = (name, ...rest) => {
  if (!parsedSources.has(name)) parsedSources.set(name, parse(name, ...rest))
  return parsedSources.get(name)
}

// 1. JavaScript for the whole graph.
const program = ts.createProgram({
  rootNames: parsed.fileNames,
  options: { ...options, declaration: false },
  host,
})
const syntax = [...program.getOptionsDiagnostics(), ...program.getSyntacticDiagnostics()]
if (syntax.length) fail(...syntax)
const js = program.emit()
if (js.emitSkipped || js.diagnostics.length) fail(...js.diagnostics)

// 2. Declarations for the public surface: each entry, then every source its emitted declaration imports.
const typed = ts.createProgram({
  rootNames: parsed.fileNames,
  options: { ...options, declaration: true, emitDeclarationOnly: true },
  host,
})
const queue = parsed.fileNames.filter((f) => !f.endsWith('.d.ts'))
const seen = new Set<string>()
let declarations = 0
while (queue.length > 0) {
  const file = queue.shift() as string
  if (seen.has(file)) continue
  seen.add(file)
  const source = typed.getSourceFile(file)
  if (!source) throw new Error(`${file} is not in the program`)
  const result = typed.emit(
    source,
    (name, text) => {
      mkdirSync(dirname(name), { recursive: true })
      writeFileSync(name, text)
      declarations++
      for (const next of relativeImports(text, file)) if (!seen.has(next)) queue.push(next)
    },
    undefined,
    true,
  )
  if (result.diagnostics.length) fail(...result.diagnostics)
}

const files = program
  .getSourceFiles()
  .filter((f) => !f.isDeclarationFile && !f.fileName.includes('/node_modules/'))
// stderr: `npm pack --json` runs this at prepare, and its stdout must stay the JSON.
console.error(
  `built ${relative(ROOT, outDir)}/: ${files.length} modules, ${declarations} declaration files, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
)

/** The TypeScript sources a declaration file imports by relative path (`./x.ts` or `./x.js`). */
function relativeImports(text: string, from: string): string[] {
  const out: string[] = []
  for (const match of text.matchAll(/(?:from\s+|import\()\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const base = resolve(dirname(from), (match[1] as string).replace(/\.(js|ts)$/, ''))
    const source = [`${base}.ts`, `${base}.d.ts`].find(existsSync)
    if (!source) throw new Error(`${relative(rootDir, from)}: its declarations import ${match[1]}, not found`)
    out.push(source)
  }
  return out
}

function fail(...diagnostics: readonly TS.Diagnostic[]): never {
  console.error(
    ts.formatDiagnosticsWithColorAndContext(diagnostics, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => ROOT,
      getNewLine: () => '\n',
    }),
  )
  process.exit(1)
}
