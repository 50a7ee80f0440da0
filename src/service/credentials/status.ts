import { request } from 'undici'
import { getStatus, readStatusList, type StatusList } from '../../shared/bitstring.ts'
import { JWS_ALGS, resolveDidKey } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { decodeJws, verifyJws } from '../../shared/jws.ts'
import { JWT_MEDIA_TYPE, STATUS_LIST_JWT_MEDIA_TYPE, VC_JWT_MEDIA_TYPE } from '../../shared/wire.ts'

// Credential status by Bitstring Status List v1.0, as a verifier checks it: fetch the list credential,
// verify that the credential's own issuer signed it, read the entry. A list this service publishes is read
// in-process (same code as its HTTP route); any other is fetched over HTTP(S) with tight limits. Lists are
// fetched only for credentials already found signed by a trusted issuer, so the URL is the issuer's word.

const FETCH_TIMEOUT_MS = 5000
const MAX_LIST_JWT_BYTES = 1024 * 1024

/** Returns the status-list credential (a JWT) at `url`; throws with a reason when it cannot. */
export type StatusListSource = (url: string) => Promise<string>

export type StatusVerdict = { ok: true; status: string } | { ok: false; reason: string }

/** Fetches a status list over HTTP(S): 200 only, no redirects, 5 s, 1 MiB. */
export const httpStatusListSource: StatusListSource = async (url) => {
  if (!/^https?:\/\//.test(url)) throw new Error('statusListCredential must be an http(s) URL')
  const response = await request(url, {
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

export class StatusChecker {
  constructor(private readonly source: StatusListSource) {}

  /** Parses and verifies a list credential; `issuerDid` must have signed it. */
  private async load(url: string, issuerDid: string, now: number): Promise<StatusList> {
    const jwt = await this.source(url)
    const { header } = decodeJws(jwt)
    if (typeof header.kid !== 'string') throw new Error('status list JWT has no kid')
    const signer = resolveDidKey(header.kid)
    const { payload } = verifyJws(jwt, signer.publicKey, { algorithms: JWS_ALGS })
    if (signer.did !== issuerDid) {
      throw new Error(`status list is signed by ${signer.did}, not by the credential's issuer ${issuerDid}`)
    }
    if (typeof payload.exp === 'number' && payload.exp * 1000 <= now)
      throw new Error('status list has expired')
    return readStatusList(payload)
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

function messageOf(list: StatusList, value: number): string {
  const hex = `0x${value.toString(16)}`
  return list.messages?.find((m) => m.status.toLowerCase() === hex)?.message ?? `status ${hex}`
}
