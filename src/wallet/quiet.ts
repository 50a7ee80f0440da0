// oid4vci-client 0.20.1 writes a few messages straight to the console (e.g. a console.warn on every metadata
// fetch from a pre-authorized-only issuer: "has no authorization_endpoint! … This only works for
// pre-authorized flows"; oid4vci-common logs every deferred poll). While a library call runs, those known
// lines are dropped; anything else still reaches the console.

const LIBRARY_NOISE: readonly RegExp[] = [
  /has no authorization_endpoint! Will use .* This only works for pre-authorized flows/,
  /^Issuance still pending\?:/,
  /^Redirect URI mismatch between access-token/,
  /^Not all credential types .* are present in metadata/,
]

type ConsoleMethod = 'log' | 'warn' | 'info'
const METHODS: readonly ConsoleMethod[] = ['log', 'warn', 'info']

let depth = 0
const originals = new Map<ConsoleMethod, (...args: unknown[]) => void>()

function install(): void {
  for (const method of METHODS) {
    const original = console[method].bind(console)
    originals.set(method, original)
    console[method] = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && LIBRARY_NOISE.some((re) => re.test(args[0] as string))) return
      original(...args)
    }
  }
}

function uninstall(): void {
  for (const method of METHODS) {
    const original = originals.get(method)
    if (original) console[method] = original
  }
  originals.clear()
}

/** Runs a library call with its known console noise filtered out (nesting and concurrency safe). */
export async function quietly<T>(call: () => Promise<T>): Promise<T> {
  if (depth++ === 0) install()
  try {
    return await call()
  } finally {
    if (--depth === 0) uninstall()
  }
}
