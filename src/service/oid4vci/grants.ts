import { createHash, createHmac, randomInt } from 'node:crypto'
import type { Oid4vciOptions, ResolvedIssuanceTemplate } from '../config/schema.ts'
import type { OfferGrants } from '../issuance/service.ts'
import type { GrantRecord, ProcessRecord, TemplateRecord } from '../store/index.ts'
import type { PublicUrls } from '../util/urls.ts'

// The pre-authorized code grant of an offer (OpenID4VCI §4.1.1, §6.1): the code and the tx_code are
// protocol secrets, so they live beside the token endpoint that checks them. The issuance service asks for
// a grant when it opens a process (through the OfferGrants interface it declares) and never sees a code.

export const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url')
// No 0/O, 1/I/L: a code read off a screen and typed on a phone.
const TEXT_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789'

/** Secrets derived from the service key: the pre-authorized code is recomputed, never stored. */
export interface CodeSecrets {
  preAuthorizedCode: Buffer
  txCode: Buffer
}

export class PreAuthorizedGrants implements OfferGrants {
  constructor(
    private readonly secrets: CodeSecrets,
    private readonly urls: PublicUrls,
    private readonly options: Oid4vciOptions,
  ) {}

  /** The pre-authorized code of a process: an HMAC of its id, so the offer can be served again. */
  preAuthorizedCode(processId: string): string {
    return createHmac('sha256', this.secrets.preAuthorizedCode).update(processId).digest('base64url')
  }

  txCodeHash(processId: string, txCode: string): string {
    return createHmac('sha256', this.secrets.txCode).update(`${processId}\u0000${txCode}`).digest('base64url')
  }

  private static newTxCode(options: NonNullable<ResolvedIssuanceTemplate['txCode']>): string {
    const { length } = options
    const alphabet = options.inputMode === 'text' ? TEXT_ALPHABET : '0123456789'
    return Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join('')
  }

  newGrant(process: ProcessRecord, template: TemplateRecord<'issuance'>, now: number) {
    const txCode = template.body.txCode ? PreAuthorizedGrants.newTxCode(template.body.txCode) : undefined
    const grant: GrantRecord = {
      processId: process.id,
      tenantId: process.tenantId,
      codeHash: sha256(this.preAuthorizedCode(process.id)),
      codeExpiresAt: now + this.options.preAuthorizedCodeLifetimeSeconds * 1000,
      txCodeHash: txCode === undefined ? null : this.txCodeHash(process.id, txCode),
      txFailures: 0,
      codeState: 'live',
      tokenHash: null,
      tokenExpiresAt: null,
      holderDid: null,
      credentialRequestedAt: null,
      transactionId: null,
      redeemedAt: null,
      notificationId: null,
      notificationEvent: null,
    }
    return txCode === undefined ? { grant } : { grant, txCode }
  }

  deepLink(tenantId: string, processId: string): string {
    return this.urls.credentialOfferDeepLink(tenantId, processId)
  }
}
