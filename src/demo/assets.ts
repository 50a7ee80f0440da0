// The browser component, bundled in memory by esbuild when the demo starts: src/web/vc-flow-qr.ts with the
// qrcode package's browser build, one ES module. Nothing generated is written or committed. The content hash
// names the bundle in the pages' URLs (…/vc-flow-qr.js?v=<hash>) and is its ETag, so it can be cached for good.

import { createHash } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

export const COMPONENT_ENTRY = fileURLToPath(new URL('../web/vc-flow-qr.ts', import.meta.url))

export interface ComponentBundle {
  code: string
  /** base64url SHA-256 of the code, 22 characters. */
  hash: string
  /** Strong ETag, the quoted hash. */
  etag: string
}

export async function buildComponentBundle(): Promise<ComponentBundle> {
  const result = await build({
    entryPoints: [COMPONENT_ENTRY],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'eof',
    charset: 'utf8',
    logLevel: 'silent',
  })
  const output = result.outputFiles[0]
  if (!output) throw new Error('esbuild produced no output for the vc-flow-qr component')
  const code = output.text
  const hash = createHash('sha256').update(code).digest('base64url').slice(0, 22)
  return { code, hash, etag: `"${hash}"` }
}

let shared: Promise<ComponentBundle> | undefined

/** The bundle, built once per process (several servers in one test process share it). */
export function componentBundle(): Promise<ComponentBundle> {
  if (!shared) {
    const building = buildComponentBundle()
    shared = building
    building.catch(() => {
      if (shared === building) shared = undefined
    })
  }
  return shared
}
