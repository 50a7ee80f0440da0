// A received credential's status, checked at receipt: a wallet that stores a credential its issuer already
// revoked would later present it in good faith. jwt_vc_json: every Bitstring Status List entry of
// `credentialStatus` (Bitstring Status List v1.0 §3.2); dc+sd-jwt: the Token Status List reference
// `status.status_list` (draft-ietf-oauth-status-list §8.3). The checking is the service verifier's own
// (shared/status-check.ts); this module injects the wallet's bounded HTTP and words the refusals. A list
// that cannot be fetched, verified or read leaves the status unknown, and the credential is refused as well.

import type { KeyObject } from 'node:crypto'
import { resolveLdKey } from '../formats/ldp-vc/keys.ts'
import { isObject } from '../shared/json.ts'
import {
  isStatusListMediaType,
  type ListProblem,
  type ListSigner,
  listSignerOf,
  STATUS_LIST_ACCEPT,
  STATUS_LIST_MAX_BYTES,
  STATUS_LIST_MEDIA_TYPES,
  StatusListChecks,
  type StatusListFetch,
  type StatusOutcome,
} from '../shared/status-check.ts'
import { tokenStatusReference } from '../shared/token-status-list.ts'
import { STATUS_LIST_JWT_TYP } from '../shared/wire.ts'
import { httpRequest, type WalletHttp } from './http.ts'

/** Why a credential's status is not acceptable: `revoked` (the list says so) or `unknown` (unreadable). */
export class CredentialStatusError extends Error {
  override name = 'CredentialStatusError'
  constructor(
    readonly kind: 'revoked' | 'unknown',
    message: string,
  ) {
    super(message)
  }
}

export type { ListSigner }

const BITSTRING_RULE = 'credentialStatus (Bitstring Status List v1.0 §3.2)'
const TOKEN_RULE = 'status (Token Status List §8.3)'

/**
 * A status list over the wallet's bounded HTTP: a 200 answer of a status-list media type (Token Status
 * List §8.1), read up to the largest list decodeJws reads. Throws an Error whose message says what
 * happened, worded to follow "the status list <url>".
 */
export function walletStatusListFetch(http: WalletHttp, onFetch: () => void = () => {}): StatusListFetch {
  const bounded = { ...http, maxBodyBytes: Math.min(http.maxBodyBytes, STATUS_LIST_MAX_BYTES) }
  return async (url) => {
    onFetch()
    let answer: Awaited<ReturnType<typeof httpRequest>>
    try {
      answer = await httpRequest(url, { method: 'GET', accept: STATUS_LIST_ACCEPT }, bounded)
    } catch (error) {
      throw new Error(`cannot be fetched (${(error as Error).message})`)
    }
    if (answer.status !== 200) throw new Error(`answered HTTP ${answer.status}`)
    const type = answer.headers['content-type']
    if (!isStatusListMediaType(type)) {
      throw new Error(
        `answered with Content-Type ${JSON.stringify(type ?? null)}, not ${STATUS_LIST_MEDIA_TYPES.join(' or ')}`,
      )
    }
    return answer.text.trim()
  }
}

/** The wallet's words for a list that cannot be used. */
function listMessage(rule: string, url: string, problem: ListProblem, signer: ListSigner): string {
  const unknown = (why: string) => `${rule}: the status list ${url} ${why}, so the status is unknown`
  switch (problem.code) {
    case 'url':
      return problem.detail.startsWith('carries')
        ? unknown(problem.detail)
        : `${rule}: the status list ${url} is not an http(s) URL`
    case 'fetch':
      return unknown((problem.error as Error).message)
    case 'not-jws':
      return unknown('is not a signed JWT')
    case 'typ':
      return `${TOKEN_RULE}: the status list token ${url} has typ ${JSON.stringify(problem.typ)}, not ${STATUS_LIST_JWT_TYP}`
    case 'x5c':
      return unknown('names its key by x5c, which is not read (a did:key kid is)')
    case 'kid':
      return unknown(`names its key with ${JSON.stringify(problem.kid)}, not a did:key URL`)
    case 'unresolvable':
      return unknown(`names an unresolvable key (${problem.detail})`)
    case 'signer':
      return unknown(
        `is signed by ${problem.did}, not by the credential's issuer${signer.did !== undefined ? ` ${signer.did}` : ''}`,
      )
    case 'signature':
      return unknown(`signature does not verify (${problem.detail})`)
    case 'expired':
      return unknown('has expired')
    case 'sub':
      return `${TOKEN_RULE}: the status list token's sub ${JSON.stringify(problem.sub)} is not the uri it was fetched from (${url})`
    case 'unreadable':
      return rule === TOKEN_RULE
        ? `${TOKEN_RULE}: the status list token ${url} cannot be read (${problem.detail})`
        : `${BITSTRING_RULE}: the status list ${url} cannot be read (${problem.detail})`
  }
}

/** A refused outcome as the wallet's CredentialStatusError. */
function refusal(outcome: Exclude<StatusOutcome, { ok: true }>, token: boolean, signer: ListSigner) {
  const rule = token ? TOKEN_RULE : BITSTRING_RULE
  const unknown = (message: string) => new CredentialStatusError('unknown', message)
  switch (outcome.code) {
    case 'entry':
      return unknown(`${BITSTRING_RULE}: an entry has no statusListCredential, so the status is unknown`)
    case 'index':
      return unknown(
        token
          ? `${TOKEN_RULE}: status_list.idx ${JSON.stringify(outcome.index)} is invalid`
          : `${BITSTRING_RULE}: statusListIndex ${JSON.stringify(outcome.index)} is not an index`,
      )
    case 'list':
      return unknown(listMessage(rule, outcome.url, outcome.problem, signer))
    case 'size':
      return unknown(
        `${BITSTRING_RULE}: the entry's statusSize ${JSON.stringify(outcome.entrySize)} is not the list's ${outcome.listSize}, so the status is unknown`,
      )
    case 'purpose':
      return unknown(
        `${BITSTRING_RULE}: the entry's purpose ${outcome.entryPurpose} is not the list's ${outcome.listPurpose}`,
      )
    case 'range':
      return unknown(
        token
          ? `${TOKEN_RULE}: status_list.idx ${outcome.index} is outside the list ${outcome.url}`
          : `${BITSTRING_RULE}: statusListIndex ${outcome.index} is outside the list ${outcome.url}`,
      )
    case 'status': {
      const { value, url, index } = outcome
      const hex = `0x${value.toString(16)}`
      const meaning = token
        ? value === 1
          ? 'INVALID (revoked)'
          : value === 2
            ? 'SUSPENDED'
            : `of status ${hex}`
        : outcome.purpose === 'revocation'
          ? 'revoked'
          : outcome.purpose === 'suspension'
            ? 'suspended'
            : (outcome.message ?? `of status ${hex}`)
      return new CredentialStatusError(
        'revoked',
        `${rule}: the credential is ${meaning} (status list ${url}, index ${index}): refused at receipt`,
      )
    }
  }
}

/** Fetches each list once per checker; each list is checked against its credential's issuer. */
export class ReceiptStatusChecker {
  private readonly memo = new Map<string, Promise<string>>()
  private readonly checks: StatusListChecks
  /** how many lists were fetched */
  fetched = 0

  constructor(
    http: WalletHttp,
    private readonly now: () => number = Date.now,
  ) {
    // an ldp_vc issuer's RSA key signs its lists with PS256: resolve every did:key type the formats know
    this.checks = new StatusListChecks(
      walletStatusListFetch(http, () => this.fetched++),
      resolveLdKey,
    )
  }

  /** Every Bitstring Status List entry of a jwt_vc_json credential's `credentialStatus` must be 0. */
  async checkBitstring(jwtPayload: Record<string, unknown>, issuerDid: string): Promise<void> {
    const vc = isObject(jwtPayload.vc) ? jwtPayload.vc : jwtPayload
    if (vc.credentialStatus === undefined) return
    const entries = Array.isArray(vc.credentialStatus) ? vc.credentialStatus : [vc.credentialStatus]
    const signer: ListSigner = { did: issuerDid }
    for (const entry of entries) {
      const outcome = await this.checks.bitstring(entry, signer, this.now(), this.memo)
      if (!outcome.ok) throw refusal(outcome, false, signer)
    }
  }

  /**
   * The Token Status List entry of an SD-JWT VC (`status.status_list`) must be VALID (0); the list signed
   * by the issuer's DID and, when known, by the key that signed the credential (listSignerOf).
   */
  async checkTokenStatus(
    payload: Record<string, unknown>,
    issuer: string,
    issuerKey?: KeyObject,
  ): Promise<void> {
    let reference: ReturnType<typeof tokenStatusReference>
    try {
      reference = tokenStatusReference(payload)
    } catch (error) {
      throw new CredentialStatusError('unknown', `${TOKEN_RULE}: ${(error as Error).message}`)
    }
    if (!reference) return
    const signer = listSignerOf(issuer, issuerKey)
    const outcome = await this.checks.token(reference, signer, this.now(), this.memo)
    if (!outcome.ok) throw refusal(outcome, true, signer)
  }
}
