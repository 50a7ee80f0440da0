import type { IssueInput, SignedCredential } from '../types.ts'
import { UNDEFINED_TERMS_CONTEXT } from './contexts.ts'
import type { LdKeyType } from './keys.ts'
import { isLdProofType, type LdProofType, PROOF_KEY_TYPES, signLd } from './suites.ts'

// Issuing an ldp_vc credential (OpenID4VCI 1.0 Appendix A.1.2; VC Data Model 1.1 §4.7 embedded proof):
// the credential object of section 2.3 as it is, completed for its holder, with an assertionMethod proof
// of the template's proof type by the tenant's key of the matching type. Terms a template defines
// (its credential type, its claims) get an IRI from the W3C undefined-terms context (an `@vocab`), so
// JSON-LD safe mode signs them instead of refusing them; a context the signer does not bundle is refused.

/** The proof type a template names when it names none: the one section 2.8 lists first for Ed25519. */
export const DEFAULT_LD_PROOF_TYPE: LdProofType = 'Ed25519Signature2018'

/** The credential's contexts, with the undefined-terms context appended once. */
export function ldContexts(context: unknown): string[] {
  const contexts = Array.isArray(context) ? context.map(String) : [String(context)]
  return contexts.includes(UNDEFINED_TERMS_CONTEXT) ? contexts : [...contexts, UNDEFINED_TERMS_CONTEXT]
}

/** Signs the completed credential with an embedded proof; the process `data` shows it as signed. */
export async function signLdVc(input: IssueInput): Promise<SignedCredential> {
  const proofType = input.proofType ?? DEFAULT_LD_PROOF_TYPE
  if (!isLdProofType(proofType)) throw new Error(`proof type ${proofType} is not one vc-harness signs`)
  const { credential, key } = input
  const document = { ...credential, '@context': ldContexts(credential['@context']) }
  const signed = await signLd(document, {
    proofType,
    kid: key.kid,
    privateKey: key.privateKey,
    purpose: { purpose: 'assertionMethod' },
    created: new Date(input.now),
  })
  return signed as SignedCredential
}

/** The key type behind a template's signing algorithm (TenantKeys keeps one key per algorithm). */
const KEY_TYPE_OF_ALG: Readonly<Record<string, LdKeyType>> = {
  EdDSA: 'Ed25519',
  ES256: 'P-256',
  ES256K: 'secp256k1',
  PS256: 'RSA',
}

/**
 * What is wrong with a template's proof type and signing algorithm, or undefined: a proof type belongs to
 * ldp_vc, signs with the key types its suite defines, and an RSA key (PS256) signs Linked Data proofs only.
 */
export function ldProofProblem(template: {
  format?: string
  signingAlg?: string
  proofType?: string
}): { field: string; message: string } | undefined {
  const alg = template.signingAlg ?? 'EdDSA'
  if (template.format !== 'ldp_vc') {
    if (template.proofType !== undefined)
      return { field: 'proofType', message: 'proofType is for format ldp_vc only' }
    if (alg === 'PS256')
      return { field: 'signingAlg', message: 'signingAlg PS256 (RSA) signs format ldp_vc only' }
    return undefined
  }
  const proofType = template.proofType ?? DEFAULT_LD_PROOF_TYPE
  if (!isLdProofType(proofType)) return { field: 'proofType', message: `unknown proof type ${proofType}` }
  const keyType = KEY_TYPE_OF_ALG[alg]
  const allowed = PROOF_KEY_TYPES[proofType]
  if (keyType === undefined || !allowed.includes(keyType)) {
    const algs = Object.entries(KEY_TYPE_OF_ALG)
      .filter(([, type]) => allowed.includes(type))
      .map(([a]) => a)
    return {
      field: 'signingAlg',
      message: `proofType ${proofType} signs with signingAlg ${algs.join(' or ')}, not ${alg}`,
    }
  }
  return undefined
}
