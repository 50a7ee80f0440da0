import { createRequire } from 'node:module'

// Heavy libraries a request needs (Presentation Exchange, Data Integrity and jsonld, X.509, SD-JWT VC, an
// HTTP client) load on first use, once, so that `vc-harness serve` is ready sooner (bench/startup.ts): the
// first request that needs one pays its import, later ones get the loaded module.

const require = createRequire(import.meta.url)

/**
 * An `import()` run on the first call; every later call gets the same promise. Memoised on purpose: under
 * tsx each `await import()` costs a loader round trip even for a module already loaded.
 */
export function lazyImport<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined
  return () => {
    loaded ??= load()
    return loaded
  }
}

/**
 * A CommonJS package loaded by `require` on the first call, synchronously, so that its callers stay
 * synchronous; the caller names its type: `lazyRequire<typeof import('undici')>('undici')`. Only for
 * packages whose `import` resolves to the same CommonJS file (no `import` condition in their `exports`),
 * so that the process holds one instance of the package whichever way a module reaches it.
 */
export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined
  return () => {
    loaded ??= require(id) as T
    return loaded
  }
}
