// What the holder lets the wallet share with an issuer that asks for a presentation before it issues (the
// draft-15 offer's `presentation_definition`, answered in a `di_vp` key proof). Nothing by default: the wallet
// file QA runs against untrusted issuers holds credentials of other issuers, and an offer is written by
// whoever made the QR code. The holder's consent is the `share` option (CLI --share); Presentation Exchange
// then picks, among the credentials it allows, only what the definition's descriptors select.

import { WalletUsageError } from './errors.ts'
import type { StoredCredential } from './store.ts'

/**
 * `'all'`: any held credential the definition selects; a list: only held credentials whose `id`, one of whose
 * `types`, whose `issuer` (DID) or whose `credentialIssuer` (URL it came from) is in the list. Absent or
 * empty: nothing is shared, and an offer asking for a presentation is refused (ShareNotAllowedError).
 */
export type SharePolicy = 'all' | readonly string[]

/** Whether `policy` lets the wallet share `credential` with an issuer. */
export function shareAllows(policy: SharePolicy | undefined, credential: StoredCredential): boolean {
  if (policy === 'all') return true
  if (!policy) return false
  return policy.some(
    (entry) =>
      entry === credential.id ||
      credential.types.includes(entry) ||
      entry === credential.issuer ||
      entry === credential.credentialIssuer,
  )
}

/** Whether `policy` allows anything at all. */
export function sharesAnything(policy: SharePolicy | undefined): policy is SharePolicy {
  return policy === 'all' || (Array.isArray(policy) && policy.length > 0)
}

/**
 * The issuer asks for a presentation (its offer carries a presentation_definition) and the holder has not
 * said what may be shared: nothing is selected and nothing is sent.
 */
export class ShareNotAllowedError extends WalletUsageError {
  override name = 'ShareNotAllowedError'
  constructor(
    readonly credentialIssuer: string,
    readonly definitionId: string,
    /** the input descriptors the issuer asks to be answered */
    readonly descriptors: string[],
  ) {
    super(
      `the issuer ${credentialIssuer} asks the holder to present credentials before it issues (presentation_definition ${definitionId}, input descriptor${descriptors.length === 1 ? '' : 's'} ${descriptors.join(', ')}); this wallet shares no held credential with an issuer unless told which: pass share: 'all' or a list of credential ids, types or issuers (CLI: --share all, or --share <id|type|issuer>, repeatable). Nothing was shared.`,
    )
  }
}
