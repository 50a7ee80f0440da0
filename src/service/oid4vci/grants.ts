import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'
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
  /** MACs the issuer_state of an authorization code offer (OpenID4VCI 1.0 §4.1.1). */
  issuerState: Buffer
}

/** Whether a template's offers carry the pre-authorized code grant (its default) or only the authorization code. */
export const offersPreAuthorizedCode = (template: TemplateRecord<'issuance'>) =>
  (template.body.grants ?? ['pre-authorized_code']).includes('pre-authorized_code')
/** Whether a template's offers carry the authorization_code grant. */
export const offersAuthorizationCode = (template: TemplateRecord<'issuance'>) =>
  template.body.grants?.includes('authorization_code') === true
/** Whether a template takes the authorization code flow at all (issuer- or wallet-initiated). */
export const authorizationCodeEnabled = (template: TemplateRecord<'issuance'>) =>
  offersAuthorizationCode(template) || template.body.authorization !== undefined

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

  /**
   * The issuer_state of a process's authorization_code grant (OpenID4VCI 1.0 §4.1.1): its id and a MAC, so
   * the pushed authorization request names the process and nobody can name another one.
   */
  issuerState(processId: string): string {
    return `${processId}.${this.stateMac(processId)}`
  }

  /** The process an issuer_state names, or undefined when it is not one this service made. */
  processOfIssuerState(issuerState: string): string | undefined {
    const dot = issuerState.lastIndexOf('.')
    if (dot <= 0) return undefined
    const processId = issuerState.slice(0, dot)
    const given = Buffer.from(issuerState.slice(dot + 1))
    const expected = Buffer.from(this.stateMac(processId))
    return given.length === expected.length && timingSafeEqual(given, expected) ? processId : undefined
  }

  /**
   * The credential identifier a token response's authorization_details grants (OpenID4VCI 1.0 §6.2): the
   * configuration and a MAC of the process, so the credential endpoint recognises it without storing it.
   */
  credentialIdentifier(processId: string, configurationId: string): string {
    return `${configurationId}.${this.stateMac(`credential_identifier\u0000${processId}`)}`
  }

  private stateMac(processId: string) {
    return createHmac('sha256', this.secrets.issuerState).update(processId).digest('base64url').slice(0, 22)
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
    const preAuthorized = offersPreAuthorizedCode(template)
    const txCode =
      template.body.txCode && preAuthorized ? PreAuthorizedGrants.newTxCode(template.body.txCode) : undefined
    const grant: GrantRecord = {
      processId: process.id,
      tenantId: process.tenantId,
      // An offer without the pre-authorized grant names no code: the row's code is one nobody can know.
      codeHash: sha256(
        preAuthorized ? this.preAuthorizedCode(process.id) : randomBytes(32).toString('base64url'),
      ),
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
      tokenJkt: null,
    }
    return txCode === undefined ? { grant } : { grant, txCode }
  }

  deepLink(tenantId: string, processId: string): string {
    return this.urls.credentialOfferDeepLink(tenantId, processId)
  }
}
