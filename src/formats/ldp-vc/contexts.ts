import { lazyImport } from '../../shared/lazy.ts'
import jws2020 from './contexts/jws-2020-v1.json' with { type: 'json' }
import secp256k12019 from './contexts/secp256k1-2019-v1.json' with { type: 'json' }

// The JSON-LD contexts Linked Data proofs are processed with, bundled: a verifier receives documents from
// strangers, and fetching what they name would let them make it call anywhere (and change a context's
// meaning under a signature). An unknown context is refused with its URL. The two CCG suite contexts no
// npm package ships (jws-2020, secp256k1-2019) are vendored as published at w3id.org.

export const VC_V1_CONTEXT = 'https://www.w3.org/2018/credentials/v1'
export const VC_V2_CONTEXT = 'https://www.w3.org/ns/credentials/v2'
/** W3C's context with an `@vocab` (issuer-dependent terms): template-defined types and claims get IRIs. */
export const UNDEFINED_TERMS_CONTEXT = 'https://www.w3.org/ns/credentials/undefined-terms/v2'
export const SECURITY_V2_CONTEXT = 'https://w3id.org/security/v2'
export const DATA_INTEGRITY_V2_CONTEXT = 'https://w3id.org/security/data-integrity/v2'
export const MULTIKEY_CONTEXT = 'https://w3id.org/security/multikey/v1'
export const DID_V1_CONTEXT = 'https://www.w3.org/ns/did/v1'
export const JWS_2020_CONTEXT = 'https://w3id.org/security/suites/jws-2020/v1'
export const SECP256K1_2019_CONTEXT = 'https://w3id.org/security/suites/secp256k1-2019/v1'
export const ED25519_2018_CONTEXT = 'https://w3id.org/security/suites/ed25519-2018/v1'
export const ED25519_2020_CONTEXT = 'https://w3id.org/security/suites/ed25519-2020/v1'
export const BITSTRING_STATUS_CONTEXT = 'https://www.w3.org/ns/credentials/status/v1'

/** Every context the loader serves, by URL (what a 4.4 submission may name, and what a verifier reads). */
export const KNOWN_CONTEXTS: ReadonlySet<string> = new Set([
  VC_V1_CONTEXT,
  VC_V2_CONTEXT,
  UNDEFINED_TERMS_CONTEXT,
  'https://w3id.org/security/v1',
  SECURITY_V2_CONTEXT,
  'https://w3id.org/security/data-integrity/v1',
  DATA_INTEGRITY_V2_CONTEXT,
  MULTIKEY_CONTEXT,
  DID_V1_CONTEXT,
  JWS_2020_CONTEXT,
  SECP256K1_2019_CONTEXT,
  ED25519_2018_CONTEXT,
  ED25519_2020_CONTEXT,
  BITSTRING_STATUS_CONTEXT,
])

// The context packages (with jsonld behind the suites) load at the first proof, not with this module.
const documents = lazyImport(async () => {
  const packages = await Promise.all([
    import('@digitalbazaar/credentials-context'),
    import('@digitalbazaar/security-context'),
    import('@digitalbazaar/data-integrity-context'),
    import('@digitalbazaar/multikey-context'),
    import('did-context'),
    import('ed25519-signature-2018-context'),
    // Not a dependency of its own: it comes with @digitalbazaar/ed25519-signature-2018. Served when present
    // (nothing here signs Ed25519Signature2020; documents may still name its context).
    import('ed25519-signature-2020-context').catch(() => ({})),
    import('@digitalbazaar/vc-bitstring-status-list-context'),
  ])
  const map = new Map<string, unknown>()
  for (const p of packages) {
    const contexts =
      (p as { contexts?: Map<string, unknown> }).contexts ??
      (p as { default?: { contexts?: Map<string, unknown> } }).default?.contexts
    for (const [url, document] of contexts ?? []) map.set(url, document)
  }
  map.set(JWS_2020_CONTEXT, jws2020)
  map.set(SECP256K1_2019_CONTEXT, secp256k12019)
  for (const url of KNOWN_CONTEXTS)
    if (!map.has(url) && url !== ED25519_2020_CONTEXT)
      throw new Error(`bundled JSON-LD context ${url} is missing from its package`)
  return map as ReadonlyMap<string, unknown>
})

/** Raised for a document the loader will not serve: the message names it, and nothing was fetched. */
export class UnknownContextError extends Error {
  override name = 'UnknownContextError'
  constructor(readonly url: string) {
    super(
      `@context ${JSON.stringify(url)} is not one this verifier has (JSON-LD is processed offline; nothing is fetched)`,
    )
  }
}

export type LoadedDocument = { document: unknown; documentUrl: string; contextUrl: null }

/** The static, offline document loader: bundled contexts only (verification methods are built by the suites). */
export async function ldDocumentLoader(url: string): Promise<LoadedDocument> {
  const document = (await documents()).get(url)
  if (document === undefined) throw new UnknownContextError(url)
  // jsonld reads contexts without changing them (it caches what it resolved), so one copy serves all.
  return { document, documentUrl: url, contextUrl: null }
}
