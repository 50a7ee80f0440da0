// A received credential's status, checked at receipt: a wallet that stores a credential its issuer already
// revoked would later present it in good faith. jwt_vc_json: every Bitstring Status List entry of
// `credentialStatus` (Bitstring Status List v1.0 §3.2, the validate algorithm); dc+sd-jwt: the Token Status
// List reference `status.status_list` (draft-ietf-oauth-status-list §8.3). The list must be signed by the
// credential's issuer (the same key that signed the credential); a list that cannot be fetched, verified or
// read leaves the status unknown, and the credential is refused as well. presentation-status.ts reads
// lists for the 'revoked-credential' misbehaviour only.

import type { KeyObject } from 'node:crypto'
import { getStatus, readStatusList, type StatusList } from '../shared/bitstring.ts'
import { JWS_ALGS, resolveDidKey } from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws, verifyJws } from '../shared/jws.ts'
import {
  readTokenStatusList,
  type TokenStatusList,
  tokenStatusAt,
  tokenStatusReference,
} from '../shared/token-status-list.ts'
import {
  JWT_MEDIA_TYPE,
  STATUS_LIST_JWT_MEDIA_TYPE,
  STATUS_LIST_JWT_TYP,
  VC_JWT_MEDIA_TYPE,
} from '../shared/wire.ts'
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

const BITSTRING_RULE = 'credentialStatus (Bitstring Status List v1.0 §3.2)'
const TOKEN_RULE = 'status (Token Status List §8.3)'

/** The statusMessage (of the list, else of the entry) for a value such as `0x1`. */
function messageOf(messages: unknown, hex: string): string | undefined {
  if (!Array.isArray(messages)) return undefined
  const found = messages.find((m) => isObject(m) && String(m.status).toLowerCase() === hex)
  return isObject(found) && typeof found.message === 'string' ? found.message : undefined
}

/** Who may sign the list: the credential issuer's DID, or (x5c issuer) the key that signed the credential. */
export type ListSigner = { did: string } | { key: KeyObject }

/** Fetches each list once per checker; the signature is checked against the credential's issuer. */
export class ReceiptStatusChecker {
  private readonly jwts = new Map<string, Promise<string>>()
  /** how many lists were fetched */
  fetched = 0

  constructor(
    private readonly http: WalletHttp,
    private readonly now: () => number = Date.now,
  ) {}

  private fetchList(url: string, rule: string): Promise<string> {
    let pending = this.jwts.get(url)
    if (!pending) {
      pending = this.load(url, rule)
      pending.catch(() => {})
      this.jwts.set(url, pending)
    }
    return pending
  }

  private async load(url: string, rule: string): Promise<string> {
    if (!/^https?:\/\//.test(url)) {
      throw new CredentialStatusError('unknown', `${rule}: the status list ${url} is not an http(s) URL`)
    }
    this.fetched++
    let answer: Awaited<ReturnType<typeof httpRequest>>
    try {
      answer = await httpRequest(
        url,
        {
          method: 'GET',
          accept: `${STATUS_LIST_JWT_MEDIA_TYPE}, ${VC_JWT_MEDIA_TYPE}, ${JWT_MEDIA_TYPE}`,
        },
        this.http,
      )
    } catch (error) {
      throw new CredentialStatusError(
        'unknown',
        `${rule}: the status list ${url} cannot be fetched (${(error as Error).message}), so the status is unknown`,
      )
    }
    if (answer.status !== 200) {
      throw new CredentialStatusError(
        'unknown',
        `${rule}: the status list ${url} answered HTTP ${answer.status}, so the status is unknown`,
      )
    }
    return answer.text.trim()
  }

  /** Verifies a list JWT: signed by `signer` (did:key `kid`); answers its payload. */
  private verified(jwt: string, url: string, signer: ListSigner, rule: string): Record<string, unknown> {
    const fail = (why: string): never => {
      throw new CredentialStatusError(
        'unknown',
        `${rule}: the status list ${url} ${why}, so the status is unknown`,
      )
    }
    let header: Record<string, unknown>
    try {
      ;({ header } = decodeJws(jwt))
    } catch {
      return fail('is not a signed JWT')
    }
    if (typeof header.kid !== 'string' || !header.kid.startsWith('did:key:')) {
      return fail(`names its key with ${JSON.stringify(header.kid)}, not a did:key URL`)
    }
    let listKey: ReturnType<typeof resolveDidKey>
    try {
      listKey = resolveDidKey(header.kid)
    } catch (error) {
      return fail(`names an unresolvable key (${(error as Error).message})`)
    }
    if ('did' in signer ? listKey.did !== signer.did : !listKey.publicKey.equals(signer.key)) {
      return fail(
        `is signed by ${listKey.did}, not by the credential's issuer${'did' in signer ? ` ${signer.did}` : ''}`,
      )
    }
    try {
      const { payload } = verifyJws(jwt, listKey.publicKey, { algorithms: JWS_ALGS })
      if (typeof payload.exp === 'number' && payload.exp * 1000 <= this.now()) fail('has expired')
      return payload
    } catch (error) {
      if (error instanceof CredentialStatusError) throw error
      return fail(`signature does not verify (${(error as Error).message})`)
    }
  }

  /** Every Bitstring Status List entry of a jwt_vc_json credential's `credentialStatus` must be 0. */
  async checkBitstring(jwtPayload: Record<string, unknown>, issuerDid: string): Promise<void> {
    const vc = isObject(jwtPayload.vc) ? jwtPayload.vc : jwtPayload
    if (vc.credentialStatus === undefined) return
    const entries = Array.isArray(vc.credentialStatus) ? vc.credentialStatus : [vc.credentialStatus]
    for (const entry of entries) {
      if (!isObject(entry) || typeof entry.statusListCredential !== 'string') {
        throw new CredentialStatusError(
          'unknown',
          `${BITSTRING_RULE}: an entry has no statusListCredential, so the status is unknown`,
        )
      }
      const url = entry.statusListCredential
      const index = Number(entry.statusListIndex)
      if (!Number.isSafeInteger(index) || index < 0) {
        throw new CredentialStatusError(
          'unknown',
          `${BITSTRING_RULE}: statusListIndex ${JSON.stringify(entry.statusListIndex)} is not an index`,
        )
      }
      const jwt = await this.fetchList(url, BITSTRING_RULE)
      let list: StatusList
      try {
        list = readStatusList(this.verified(jwt, url, { did: issuerDid }, BITSTRING_RULE))
      } catch (error) {
        if (error instanceof CredentialStatusError) throw error
        throw new CredentialStatusError(
          'unknown',
          `${BITSTRING_RULE}: the status list ${url} cannot be read (${(error as Error).message})`,
        )
      }
      if (entry.statusPurpose !== undefined && entry.statusPurpose !== list.purpose) {
        throw new CredentialStatusError(
          'unknown',
          `${BITSTRING_RULE}: the entry's purpose ${String(entry.statusPurpose)} is not the list's ${list.purpose}`,
        )
      }
      if ((index + 1) * list.size > list.bits.length * 8) {
        throw new CredentialStatusError(
          'unknown',
          `${BITSTRING_RULE}: statusListIndex ${index} is outside the list ${url}`,
        )
      }
      const value = getStatus(list.bits, index, list.size)
      if (value === 0) continue
      const hex = `0x${value.toString(16)}`
      const meaning =
        list.purpose === 'revocation'
          ? 'revoked'
          : list.purpose === 'suspension'
            ? 'suspended'
            : (messageOf(list.messages ?? entry.statusMessage, hex) ?? `of status ${hex}`)
      throw new CredentialStatusError(
        'revoked',
        `${BITSTRING_RULE}: the credential is ${meaning} (status list ${url}, index ${index}): refused at receipt`,
      )
    }
  }

  /** The Token Status List entry of an SD-JWT VC (`status.status_list`) must be VALID (0). */
  async checkTokenStatus(payload: Record<string, unknown>, signer: ListSigner): Promise<void> {
    let reference: ReturnType<typeof tokenStatusReference>
    try {
      reference = tokenStatusReference(payload)
    } catch (error) {
      throw new CredentialStatusError('unknown', `${TOKEN_RULE}: ${(error as Error).message}`)
    }
    if (!reference) return
    const { uri, index } = reference
    const jwt = await this.fetchList(uri, TOKEN_RULE)
    let list: TokenStatusList
    try {
      const { header } = decodeJws(jwt)
      if (header.typ !== STATUS_LIST_JWT_TYP) {
        throw new CredentialStatusError(
          'unknown',
          `${TOKEN_RULE}: the status list token ${uri} has typ ${JSON.stringify(header.typ)}, not ${STATUS_LIST_JWT_TYP}`,
        )
      }
      const listPayload = this.verified(jwt, uri, signer, TOKEN_RULE)
      if (listPayload.sub !== uri) {
        throw new CredentialStatusError(
          'unknown',
          `${TOKEN_RULE}: the status list token's sub ${JSON.stringify(listPayload.sub)} is not the uri it was fetched from (${uri})`,
        )
      }
      list = readTokenStatusList(listPayload)
    } catch (error) {
      if (error instanceof CredentialStatusError) throw error
      throw new CredentialStatusError(
        'unknown',
        `${TOKEN_RULE}: the status list token ${uri} cannot be read (${(error as Error).message})`,
      )
    }
    const value = tokenStatusAt(list, index)
    if (value === undefined) {
      throw new CredentialStatusError(
        'unknown',
        `${TOKEN_RULE}: status_list.idx ${index} is outside the list ${uri}`,
      )
    }
    if (value === 0) return
    const meaning =
      value === 1 ? 'INVALID (revoked)' : value === 2 ? 'SUSPENDED' : `of status 0x${value.toString(16)}`
    throw new CredentialStatusError(
      'revoked',
      `${TOKEN_RULE}: the credential is ${meaning} (status list ${uri}, index ${index}): refused at receipt`,
    )
  }
}
