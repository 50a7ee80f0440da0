import { lazyImport } from '../shared/lazy.ts'

// Heavy libraries load on first use, so the CLI starts fast; and once (src/shared/lazy.ts says why).
export const loadPex = lazyImport(() => import('@sphereon/pex'))
export const loadSiop = lazyImport(() => import('@sphereon/did-auth-siop'))
export const loadDataIntegrity = lazyImport(() => import('../shared/data-integrity.ts'))
export const loadX509 = lazyImport(() => import('../shared/x509.ts'))
export const loadJose = lazyImport(() => import('jose'))
