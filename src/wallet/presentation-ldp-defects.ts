import type { KeyObject } from 'node:crypto'
import { UNDEFINED_TERMS_CONTEXT, VC_V2_CONTEXT } from '../formats/ldp-vc/contexts.ts'
import {
  generateLdKeyPair,
  type LdKeyType,
  ldKeyFromPublicKey,
  resolveLdKey,
} from '../formats/ldp-vc/keys.ts'
import { PROOF_KEY_TYPES, proofTypeOf, signLd } from '../formats/ldp-vc/suites.ts'
import { isObject } from '../shared/json.ts'
import { tamperValue } from './defects.ts'
import { WalletUsageError } from './errors.ts'

// The defects of a Linked Data presentation (tamper.ts applies them): content changed after its proof was
// made, a credential re-signed by a key nobody trusts, a term no context defines. Over JSON objects; the
// originals are never changed.

/** Who signs an ldp_vp: the holder's did:key and its private key (presentation-ldp.ts). */
export interface LdPresenter {
  did: string
  kid: string
  privateKey: KeyObject
}

/** A fresh did:key of `keyType` as an LdPresenter (the foreign holder and issuer keys of the misbehaviours). */
export function freshLdPresenter(keyType: LdKeyType): LdPresenter {
  const { privateKey } = generateLdKeyPair(keyType)
  const { did, kid } = ldKeyFromPublicKey(privateKey)
  return { did, kid, privateKey }
}

/** Names whose values are identifiers or types (IRIs), not claims: a changed claim is never one of them. */
const NOT_CLAIMS = new Set(['id', 'type', '@id', '@type', '@context'])

/** Changes the first primitive claim under `node`, depth first; answers its path, or undefined. */
function changeFirstClaim(node: Record<string, unknown> | unknown[], path: string): string | undefined {
  const entries: [string | number, unknown][] = Array.isArray(node)
    ? node.map((v, i) => [i, v])
    : Object.entries(node).filter(([key]) => !NOT_CLAIMS.has(key))
  for (const [key, value] of entries) {
    const childPath = typeof key === 'number' ? `${path}[${key}]` : `${path}.${key}`
    if (isObject(value) || Array.isArray(value)) {
      const found = changeFirstClaim(value, childPath)
      if (found) return found
      continue
    }
    if (value === null) continue
    ;(node as Record<string | number, unknown>)[key] = tamperValue(value)
    return childPath
  }
  return undefined
}

/**
 * 'tampered-credential': the credential with its first subject claim (depth first; ids and types skipped)
 * changed as tamperValue changes it (string + ` (tampered)`, number + 1, boolean negated); its issuer's proof
 * is kept, so it no longer verifies.
 */
export function tamperLdCredential(credential: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(credential)
  const subjects = [copy.credentialSubject].flat().filter(isObject)
  for (const [i, subject] of subjects.entries()) {
    if (changeFirstClaim(subject, `$.credentialSubject${subjects.length > 1 ? `[${i}]` : ''}`)) return copy
  }
  throw new WalletUsageError(
    "'tampered-credential' needs an ldp_vc whose credentialSubject has a claim besides its id to change",
  )
}

/**
 * 'untrusted-issuer': the same credential (types, subject, claims, dates, status entry) with its issuer
 * replaced by a freshly generated did:key of the original signer's key type, properly signed by it with the
 * original proof type: every proof holds, but no verifier trusts that issuer.
 */
export async function selfIssueLdCredential(
  credential: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { proof, ...unsigned } = structuredClone(credential)
  const proofType = proofTypeOf([proof].flat()[0]) ?? 'Ed25519Signature2018'
  const method = isObject(proof) ? (proof.verificationMethod ?? proof.creator) : undefined
  let keyType: LdKeyType = PROOF_KEY_TYPES[proofType][0] as LdKeyType
  try {
    if (typeof method === 'string') keyType = resolveLdKey(method).keyType
  } catch {
    // not a did:key: the proof type's first key type
  }
  const issuer = freshLdPresenter(keyType)
  unsigned.issuer = isObject(unsigned.issuer) ? { ...unsigned.issuer, id: issuer.did } : issuer.did
  return signLd(unsigned, {
    proofType,
    kid: issuer.kid,
    privateKey: issuer.privateKey,
    purpose: { purpose: 'assertionMethod' },
  })
}

/** The term 'ldp-undefined-term' adds: defined by none of the contexts the wallet or the service use. */
export const UNDEFINED_TERM = 'vcHarnessUndefinedTerm'

/**
 * Whether a document's `@context` gives every term an IRI (an `@vocab`): the W3C undefined-terms context,
 * the VC 2.0 context (its `@vocab` is issuer-dependent), or an inline context with one.
 */
function hasVocab(context: unknown): boolean {
  return [context]
    .flat()
    .some(
      (c) =>
        c === UNDEFINED_TERMS_CONTEXT ||
        c === VC_V2_CONTEXT ||
        (isObject(c) && typeof c['@vocab'] === 'string'),
    )
}

/**
 * 'ldp-undefined-term': the signed VP with a property no context defines (`vcHarnessUndefinedTerm`) added after
 * signing. JSON-LD outside safe mode drops such a term before canonicalizing, so the proofs would still verify
 * over content they do not cover (VC Data Integrity 1.0 §4.2 asks verifiers to expand in safe mode). It goes
 * into the first credential's credentialSubject when that credential's contexts have no `@vocab`; a credential
 * with one (the reference service issues its credentials with the undefined-terms context) defines every
 * term, so it goes into the presentation itself, whose contexts have none.
 */
export function withUndefinedTerm(vp: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(vp)
  const [first] = [copy.verifiableCredential].flat().filter(isObject)
  const subject = first && [first.credentialSubject].flat().find(isObject)
  if (first && subject && !hasVocab(first['@context'])) {
    subject[UNDEFINED_TERM] = 'added after signing'
    return copy
  }
  if (hasVocab(copy['@context']))
    throw new WalletUsageError(
      "'ldp-undefined-term': every part of this presentation has an @vocab context, so no term is undefined in it",
    )
  copy[UNDEFINED_TERM] = 'added after signing'
  return copy
}
