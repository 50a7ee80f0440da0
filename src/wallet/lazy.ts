// Heavy libraries load on first use, so the CLI starts fast; and once: under tsx every repeated
// `await import()` costs ~1.5 ms of loader round trip even for a module already loaded (bench/README.md).
const memo = <T>(load: () => Promise<T>) => {
  let loaded: Promise<T> | undefined
  return () => {
    loaded ??= load()
    return loaded
  }
}

export const loadPex = memo(() => import('@sphereon/pex'))
export const loadSiop = memo(() => import('@sphereon/did-auth-siop'))
export const loadDataIntegrity = memo(() => import('../shared/data-integrity.ts'))
export const loadX509 = memo(() => import('../shared/x509.ts'))
export const loadJose = memo(() => import('jose'))
