// How a request to a protected resource (the credential, nonce, deferred and notification endpoints) carries
// the access token: `Authorization: Bearer` (RFC 6750 §2.1; the pre-authorized code flow) or a DPoP-bound
// token with `Authorization: DPoP` and a fresh proof per request (RFC 9449 §7.1; the authorization code flow as
// HAIP 1.0 profiles it). The 1.0 issuance path asks one of these for each request's headers and shows it each
// answer, so Bearer and DPoP share one request code (issuance-v1.ts). The DPoP prover also makes the proofs of
// the authorization server's requests (PAR, token; issuance-authorization.ts) and keeps the servers' nonces.

import { randomBytes } from 'node:crypto'
import { createDpopProof, type DpopClaims, type DpopSigner } from '../shared/oauth/dpop.ts'
import { parseWwwAuthenticate } from './errors.ts'

/** Reads one header of an answer (any case), undefined when absent. */
export type HeaderOf = (name: string) => string | undefined

/** The access token and how it goes with a request. */
export interface AccessAuthorization {
  readonly scheme: 'Bearer' | 'DPoP'
  readonly accessToken: string
  /**
   * The headers of one request to `url` (lower-case names): `authorization` (unless `withToken` is false: the
   * token travels elsewhere, e.g. 'token-in-query') and, for DPoP, a fresh `dpop` proof bound to the token.
   */
  headers(method: string, url: string, opts?: { withToken?: boolean }): Record<string, string>
  /**
   * Shown every answer to a request made with `headers`: remembers a `DPoP-Nonce` and answers whether the
   * answer asks for one retry with it (RFC 9449 §9: 401 with `WWW-Authenticate: DPoP error="use_dpop_nonce"`).
   */
  retry(url: string, status: number, header: HeaderOf): boolean
}

/** RFC 6750 §2.1: `Authorization: Bearer <token>`; nothing to retry. */
export function bearerAuthorization(accessToken: string): AccessAuthorization {
  return {
    scheme: 'Bearer',
    accessToken,
    headers: (_method, _url, opts): Record<string, string> =>
      opts?.withToken === false ? {} : { authorization: `Bearer ${accessToken}` },
    retry: () => false,
  }
}

/** A bare access token is a Bearer token (what the pre-authorized path always had). */
export function accessOf(access: AccessAuthorization | string): AccessAuthorization {
  return typeof access === 'string' ? bearerAuthorization(access) : access
}

/** The server a DPoP nonce belongs to (RFC 9449 §8, §9: each server issues its own). */
export function serverOf(url: string): string {
  return new URL(url).origin
}

/** A change to one proof's claims before it is signed (the DPoP misbehaviours). */
export type DpopClaimsChange = (claims: DpopClaims, ctx: { previousJti: string | undefined }) => DpopClaims

/**
 * Makes DPoP proofs (RFC 9449 §4.2) with one key, and keeps the latest `DPoP-Nonce` of each server (§8 at the
 * authorization server, §9 at a resource server): the next proof to that server carries it.
 */
export class DpopProver {
  readonly signer: DpopSigner
  /** the jti of the last proof made (the 'dpop-replayed-jti' misbehaviour reuses it) */
  lastJti: string | undefined
  private readonly nonces: Map<string, string>

  constructor(signer: DpopSigner, nonces: Map<string, string> = new Map()) {
    this.signer = signer
    this.nonces = nonces
  }

  /** The nonce the server of `url` last gave, if any. */
  nonceFor(url: string): string | undefined {
    return this.nonces.get(serverOf(url))
  }

  /** A fresh proof for `method` `url`, bound to `accessToken` (`ath`, §4.2) when given. */
  proof(method: string, url: string, opts: { accessToken?: string; change?: DpopClaimsChange } = {}): string {
    const nonce = this.nonceFor(url)
    let claims: DpopClaims = {
      htm: method,
      htu: url,
      jti: randomBytes(16).toString('base64url'),
      ...(nonce !== undefined && { nonce }),
      ...(opts.accessToken !== undefined && { accessToken: opts.accessToken }),
    }
    if (opts.change) claims = opts.change(claims, { previousJti: this.lastJti })
    this.lastJti = claims.jti
    return createDpopProof(this.signer, claims)
  }

  /** Remembers the `DPoP-Nonce` of an answer from the server of `url` (§8.2: the latest one counts). */
  note(url: string, header: HeaderOf): string | undefined {
    const nonce = header('dpop-nonce')
    if (nonce) this.nonces.set(serverOf(url), nonce)
    return nonce
  }
}

/**
 * A DPoP-bound access token (RFC 9449 §7.1): `Authorization: DPoP <token>` (or the `scheme` a misbehaviour
 * says) and a fresh proof with `ath` for each request; a 401 `use_dpop_nonce` with a new `DPoP-Nonce` asks for
 * one retry (§9).
 */
export function dpopAuthorization(
  accessToken: string,
  prover: DpopProver,
  opts: { scheme?: 'DPoP' | 'Bearer' } = {},
): AccessAuthorization {
  return {
    scheme: 'DPoP',
    accessToken,
    headers: (method, url, headerOpts) => {
      const headers: Record<string, string> = { dpop: prover.proof(method, url, { accessToken }) }
      if (headerOpts?.withToken !== false) headers.authorization = `${opts.scheme ?? 'DPoP'} ${accessToken}`
      return headers
    },
    retry: (url, status, header) => {
      const nonce = prover.note(url, header)
      if (status !== 401 || !nonce) return false
      return parseWwwAuthenticate(header('www-authenticate')).error === 'use_dpop_nonce'
    },
  }
}
