import type { KeyObject } from 'node:crypto'
import { getStatus, readStatusList, type StatusList } from '../../shared/bitstring.ts'
import { type DidKey, JWS_ALGS, resolveDidKey } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { decodeJws, verifyJws } from '../../shared/jws.ts'
import { lazyRequire } from '../../shared/lazy.ts'
import { readTokenStatusList, type TokenStatusList, tokenStatusAt } from '../../shared/token-status-list.ts'
import {
  JWT_MEDIA_TYPE,
  STATUS_LIST_JWT_MEDIA_TYPE,
  STATUS_LIST_JWT_TYP,
  VC_JWT_MEDIA_TYPE,
} from '../../shared/wire.ts'

// Credential status by Bitstring Status List v1.0, as a verifier checks it: fetch the list credential,
// verify that the credential's own issuer signed it, read the entry. A list this service publishes is read
// in-process (same code as its HTTP route); any other is fetched over HTTP(S) with tight limits. Lists are
// fetched only for credentials already found signed by a trusted issuer, so the URL is the issuer's word.

const FETCH_TIMEOUT_MS = 5000
const MAX_LIST_JWT_BYTES = 1024 * 1024
/** The HTTP client, loaded at the first list fetched from another issuer (this service's own are read in-process). */
const undici = lazyRequire<typeof import('undici')>('undici')

/** Returns the status-list credential (a JWT) at `url`; throws with a reason when it cannot. */
export type StatusListSource = (url: string) => Promise<string>

export type StatusVerdict = { ok: true; status: string } | { ok: false; reason: string }

/** Fetches a status list over HTTP(S): 200 only, no redirects, 5 s, 1 MiB. */
export const httpStatusListSource: StatusListSource = async (url) => {
  if (!/^https?:\/\//.test(url)) throw new Error('statusListCredential must be an http(s) URL')
  const response = await undici().request(url, {
    method: 'GET',
    headers: { accept: `${VC_JWT_MEDIA_TYPE}, ${JWT_MEDIA_TYPE}, ${STATUS_LIST_JWT_MEDIA_TYPE}` },
    headersTimeout: FETCH_TIMEOUT_MS,
    bodyTimeout: FETCH_TIMEOUT_MS,
  })
  if (response.statusCode !== 200) {
    await response.body.dump()
    throw new Error(`GET ${url} answered ${response.statusCode}`)
  }
  let size = 0
  const chunks: Buffer[] = []
  for await (const chunk of response.body) {
    size += (chunk as Buffer).length
    if (size > MAX_LIST_JWT_BYTES) {
      response.body.destroy()
      throw new Error(`status list at ${url} is larger than ${MAX_LIST_JWT_BYTES} bytes`)
    }
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString('utf8').trim()
}

/**
 * List JWTs whose signature was verified, by their text, with what was decoded from them. A list changes
 * only when a status does, and then its JWT is a new text; until then every presentation of a credential
 * on it would verify the same signature and inflate the same bits again. What depends on the moment or on
 * the credential (expiry, who must have signed, `sub`) is still checked on every use.
 */
class VerifiedLists {
  private readonly entries = new Map<
    string,
    { signer: DidKey; payload: Record<string, unknown>; bitstring?: StatusList; token?: TokenStatusList }
  >()
  verify(jwt: string, kid: string) {
    let entry = this.entries.get(jwt)
    if (!entry) {
      const signer = resolveDidKey(kid)
      const { payload } = verifyJws(jwt, signer.publicKey, { algorithms: JWS_ALGS })
      entry = { signer, payload }
      if (this.entries.size >= 64) this.entries.delete(this.entries.keys().next().value as string)
      this.entries.set(jwt, entry)
    }
    return entry
  }
}

export class StatusChecker {
  /** IETF Token Status Lists (SD-JWT VCs' `status.status_list`), read through the same source. */
  readonly token: TokenStatusChecker
  private readonly verified = new VerifiedLists()

  constructor(private readonly source: StatusListSource) {
    this.token = new TokenStatusChecker(source, this.verified)
  }

  /** Parses and verifies a list credential; `issuerDid` must have signed it. */
  private async load(url: string, issuerDid: string, now: number): Promise<StatusList> {
    const jwt = await this.source(url)
    const { header } = decodeJws(jwt)
    if (typeof header.kid !== 'string') throw new Error('status list JWT has no kid')
    const entry = this.verified.verify(jwt, header.kid)
    const { signer, payload } = entry
    if (signer.did !== issuerDid) {
      throw new Error(`status list is signed by ${signer.did}, not by the credential's issuer ${issuerDid}`)
    }
    if (typeof payload.exp === 'number' && payload.exp * 1000 <= now)
      throw new Error('status list has expired')
    entry.bitstring ??= readStatusList(payload)
    return entry.bitstring
  }

  /**
   * The status of one credential's `credentialStatus` entry (or array of entries). `memo` shares list
   * fetches between the credentials of one presentation.
   */
  async check(
    credentialStatus: unknown,
    issuerDid: string,
    now: number,
    memo: Map<string, Promise<StatusList>>,
  ): Promise<StatusVerdict> {
    const entries = Array.isArray(credentialStatus) ? credentialStatus : [credentialStatus]
    const statuses: string[] = []
    for (const entry of entries) {
      if (!isObject(entry) || typeof entry.statusListCredential !== 'string') {
        return {
          ok: false,
          reason: 'credentialStatus is not a BitstringStatusListEntry with statusListCredential',
        }
      }
      const index = Number(entry.statusListIndex)
      if (!Number.isSafeInteger(index) || index < 0) {
        return { ok: false, reason: `statusListIndex ${JSON.stringify(entry.statusListIndex)} is invalid` }
      }
      const url = entry.statusListCredential
      let pending = memo.get(url)
      if (!pending) {
        pending = this.load(url, issuerDid, now)
        memo.set(url, pending)
      }
      let list: StatusList
      try {
        list = await pending
      } catch (error) {
        return { ok: false, reason: `status list ${url} cannot be used: ${(error as Error).message}` }
      }
      if (entry.statusPurpose !== undefined && entry.statusPurpose !== list.purpose) {
        return {
          ok: false,
          reason: `entry purpose ${String(entry.statusPurpose)} differs from the list's ${list.purpose}`,
        }
      }
      if ((index + 1) * list.size > list.bits.length * 8) {
        return { ok: false, reason: `statusListIndex ${index} is outside the list` }
      }
      const value = getStatus(list.bits, index, list.size)
      if (value === 0) {
        statuses.push(list.purpose === 'message' ? messageOf(list, 0) : 'active')
        continue
      }
      const meaning =
        list.purpose === 'revocation'
          ? 'revoked'
          : list.purpose === 'suspension'
            ? 'suspended'
            : messageOf(list, value)
      return { ok: false, reason: `the credential is ${meaning} (status list ${url}, index ${index})` }
    }
    return { ok: true, status: statuses.join(', ') }
  }
}

/**
 * Token Status List (SD-JWT VC `status.status_list`): the list JWT at `uri`, fetched through the same
 * source as bitstring lists, must be `typ statuslist+jwt`, signed by the credential's issuer, with `sub`
 * the uri it was fetched from. 0 VALID, 1 INVALID, 2 SUSPENDED; other values fail as unknown.
 */
export class TokenStatusChecker {
  constructor(
    private readonly source: StatusListSource,
    private readonly verified = new VerifiedLists(),
  ) {}

  private async load(uri: string, issuer: string | KeyObject, now: number): Promise<TokenStatusList> {
    const jwt = await this.source(uri)
    const { header } = decodeJws(jwt)
    if (header.typ !== STATUS_LIST_JWT_TYP) {
      throw new Error(`status list JWT typ ${JSON.stringify(header.typ)} is not ${STATUS_LIST_JWT_TYP}`)
    }
    if (header.x5c !== undefined) throw new Error('status list JWT names its key by x5c (not read yet)')
    if (typeof header.kid !== 'string') throw new Error('status list JWT has no kid')
    const entry = this.verified.verify(jwt, header.kid)
    const { signer, payload } = entry
    // The same entity signs the list and the credential (Token Status List §11.3): the issuer's DID, or for
    // an x5c-certified issuer, the key its leaf certificate certifies.
    if (typeof issuer === 'string' ? signer.did !== issuer : !signer.publicKey.equals(issuer)) {
      throw new Error(
        `status list is signed by ${signer.did}, not by the credential's issuer ${typeof issuer === 'string' ? issuer : "(its x5c leaf's key)"}`,
      )
    }
    if (payload.sub !== uri) {
      throw new Error(`status list sub ${JSON.stringify(payload.sub)} is not the uri it was fetched from`)
    }
    if (typeof payload.exp === 'number' && payload.exp * 1000 <= now)
      throw new Error('status list has expired')
    entry.token ??= readTokenStatusList(payload)
    return entry.token
  }

  /** `memo` shares list fetches per uri between the credentials of one presentation. */
  async check(
    reference: { uri: string; index: number },
    /** The credential issuer's DID, or its key when an x5c chain certified it. */
    issuer: string | KeyObject,
    now: number,
    memo: Map<string, Promise<unknown>>,
  ): Promise<StatusVerdict> {
    const { uri, index } = reference
    if (!Number.isSafeInteger(index) || index < 0)
      return { ok: false, reason: `status_list.idx ${index} is invalid` }
    const key = `token-status-list ${uri}`
    let pending = memo.get(key) as Promise<TokenStatusList> | undefined
    if (!pending) {
      pending = this.load(uri, issuer, now)
      // a rejection is reported by the await below, for every credential that names this uri
      pending.catch(() => {})
      memo.set(key, pending)
    }
    let list: TokenStatusList
    try {
      list = await pending
    } catch (error) {
      return { ok: false, reason: `status list ${uri} cannot be used: ${(error as Error).message}` }
    }
    const value = tokenStatusAt(list, index)
    if (value === undefined)
      return { ok: false, reason: `status_list.idx ${index} is outside the list ${uri}` }
    if (value === 0) return { ok: true, status: 'valid' }
    const meaning =
      value === 1 ? 'invalid (revoked)' : value === 2 ? 'suspended' : `of status 0x${value.toString(16)}`
    return { ok: false, reason: `the credential is ${meaning} (Token Status List ${uri}, index ${index})` }
  }
}

function messageOf(list: StatusList, value: number): string {
  const hex = `0x${value.toString(16)}`
  return list.messages?.find((m) => m.status.toLowerCase() === hex)?.message ?? `status ${hex}`
}
