import type { KeyObject } from 'node:crypto'
import { WalletUsageError } from './errors.ts'

// The defects of a Linked Data presentation (tamper.ts applies them): content changed after its proof was
// made. Pure functions over JSON objects.

/** Who signs an ldp_vp: the holder's did:key and its private key (presentation-ldp.ts). */
export interface LdPresenter {
  did: string
  kid: string
  privateKey: KeyObject
}

/** The first credential with one subject claim changed after its issuer signed it (its proof no longer holds). */
export function tamperLdCredential(credential: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(credential)
  const subject = copy.credentialSubject as Record<string, unknown> | undefined
  const claim = subject && Object.keys(subject).find((k) => k !== 'id')
  if (!subject || claim === undefined)
    throw new WalletUsageError("'tampered-credential' needs a credential with a subject claim to change")
  subject[claim] =
    typeof subject[claim] === 'string' ? `${subject[claim]} (changed)` : { changed: subject[claim] }
  return copy
}

/** The signed VP with `vcHarnessUndefinedTerm` added to its first credential's subject: no context defines it. */
export function withUndefinedTerm(vp: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(vp)
  const [first] = [copy.verifiableCredential].flat() as Record<string, unknown>[]
  const subject = first?.credentialSubject as Record<string, unknown> | undefined
  if (!subject)
    throw new WalletUsageError("'ldp-undefined-term' needs an ldp_vc credential in the presentation")
  subject.vcHarnessUndefinedTerm = 'added after signing'
  return copy
}
