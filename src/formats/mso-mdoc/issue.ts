import { resolveDidKey } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { defaultNamespace, issueMdoc, MDOC_FORMAT, type MdocNamespaces } from '../../shared/mdoc.ts'
import type { IssueInput, SignedCredential } from '../types.ts'

// Issues an mdoc (OpenID4VCI 1.0 Appendix A.2) from a credential object of section 2.3.

/** An mdoc is valid this long when the credential names no end (validUntil is mandatory in an MSO). */
const DEFAULT_VALIDITY_SECONDS = 365 * 86_400

/**
 * Section 2.3's credentialSubject as mdoc namespaces: a member whose name is a namespace (it holds a dot)
 * and whose value is an object groups that namespace's elements; any other member is an element of the
 * doctype's own namespace (`org.iso.18013.5.1` for the mDL). `id` (the holder) is not an element: the MSO's
 * deviceKey binds the holder.
 */
export function namespacesOf(subject: Record<string, unknown>, docType: string): MdocNamespaces {
  const namespaces: MdocNamespaces = {}
  const own = defaultNamespace(docType)
  for (const [name, value] of Object.entries(subject)) {
    if (name === 'id') continue
    if (name.includes('.') && isObject(value)) namespaces[name] = { ...namespaces[name], ...value }
    else namespaces[own] = { ...namespaces[own], [name]: value }
  }
  return namespaces
}

/**
 * Signs the completed credential as an mdoc: its doctype the template's, its elements the subject's
 * (namespacesOf), valid from its notBefore to its expiry, bound to the holder's key (deviceKeyInfo), its
 * status a Token Status List reference in the MSO, signed by the tenant's document signer (IACA chain).
 * The process `data` keeps the credential object with the mdoc as its proof (`type: MsoMdoc`).
 */
export async function signMdoc(input: IssueInput): Promise<SignedCredential> {
  const { mdoc } = input
  if (!mdoc) throw new Error('an mso_mdoc credential needs the tenant’s document signer (IACA chain)')
  const { credential } = input
  const until = input.expires ?? input.notBefore + DEFAULT_VALIDITY_SECONDS
  const status = isObject(credential.credentialStatus) ? credential.credentialStatus.status_list : undefined
  const encoded = await issueMdoc({
    docType: mdoc.docType,
    namespaces: namespacesOf(credential.credentialSubject, mdoc.docType),
    deviceKey: resolveDidKey(input.holderDid).publicJwk as import('node:crypto').JsonWebKey,
    signer: mdoc.signer,
    validity: {
      signed: new Date(input.now),
      validFrom: new Date(Math.min(input.notBefore * 1000, input.now)),
      validUntil: new Date(until * 1000),
    },
    ...(isObject(status) &&
      typeof status.idx === 'number' &&
      typeof status.uri === 'string' && { status: { idx: status.idx, uri: status.uri } }),
  })
  return { ...credential, proof: { type: 'MsoMdoc', format: MDOC_FORMAT, mdoc: encoded } }
}
