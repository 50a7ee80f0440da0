// The SD-JWT VC presentation of an OpenID4VP 1.0 answer (1.0 Appendix B.3.6, RFC 9901 §4.3): the
// issuer-signed JWT, only the disclosures the credential query's claims select (§6.4.1), and a key-binding
// JWT signed with the holder key the credential is bound to (cnf), with `nonce` = the request nonce, `aud` =
// the full client_id (prefix included), `iat` and `sd_hash`. @sd-jwt/core finds the disclosures of each claim
// path; the wallet assembles the KB-JWT itself, so each presentation misbehaviour (a tamper hook of tamper.ts)
// changes one byte range of an otherwise correct presentation. Pure over a signer: unit-tested without a verifier.

import { createHash } from 'node:crypto'
import { SDJwtInstance } from '@sd-jwt/core'
import { digest } from '@sd-jwt/crypto-nodejs'
import { isObject } from '../shared/json.ts'
import { decodeJws } from '../shared/jws.ts'
import { sdJwtClaims, splitSdJwt } from '../shared/sd-jwt.ts'
import { KB_JWT_TYP } from '../shared/wire.ts'
import { WalletUsageError } from './errors.ts'
import type { PresentationMisbehaviour } from './misbehaviour.ts'
import type { ClaimPath } from './presentation-dcql.ts'
import type { JwtSigner } from './proof.ts'
import { tamperOf } from './tamper.ts'

export { withoutPrefix } from './defects.ts'

export interface SdJwtPresentationInput {
  /** the SD-JWT VC as issued (`<jwt>~<disclosure>~…~`) */
  credential: string
  /** claims path pointers to disclose (1.0 §7); [] discloses nothing selectively disclosable (§6.4.1) */
  claimPaths: readonly ClaimPath[]
  nonce: string
  /** the full client_id, prefix included (1.0 §B.3.6, §5.9.1) */
  audience: string
  /** seconds */
  iat: number
  /** the holder key the credential's cnf names */
  signer: JwtSigner
  misbehave?: readonly PresentationMisbehaviour[]
  /** what 'kb-wrong-aud' puts into aud: by default the client identifier without its prefix */
  wrongAudience?: string
}

export interface SdJwtPresentation {
  /** `<jwt>~<disclosure>~…~<kb-jwt>` (no KB-JWT for 'kb-missing') */
  presentation: string
  /** the disclosed claims, as @sd-jwt names them (`given_name`, `address.locality`, `nationalities.0`) */
  disclosed: string[]
  /** 'sd-extra-disclosure': the claim disclosed beyond the request */
  extra?: string
  /** 'sd-tampered-disclosure': the claim whose disclosure was altered, before and after */
  tampered?: { claim: string; from: unknown; to: unknown }
}

const instance = () => new SDJwtInstance({ hasher: digest, hashAlg: 'sha-256' })

/** A claims path pointer → the concrete dotted paths it selects (null: every element of the array there). */
export function concretePaths(path: ClaimPath, claims: unknown): string[] {
  const walk = (rest: ClaimPath, node: unknown, prefix: string[]): string[] => {
    if (rest.length === 0) return [prefix.join('.')]
    const [head, ...tail] = rest
    if (head === null) {
      if (!Array.isArray(node)) return []
      return node.flatMap((item, i) => walk(tail, item, [...prefix, String(i)]))
    }
    const next =
      Array.isArray(node) || isObject(node) ? (node as Record<string, unknown>)[String(head)] : undefined
    return walk(tail, next, [...prefix, String(head)])
  }
  return walk(path, claims, [])
}

/** The library's presentation frame for a set of dotted keys (`{address: {locality: true}}`). */
function frameOf(keys: readonly string[]): Record<string, unknown> {
  const frame: Record<string, unknown> = {}
  for (const key of keys) {
    const parts = key.split('.')
    let node = frame
    for (const part of parts.slice(0, -1)) {
      node[part] = isObject(node[part]) ? node[part] : {}
      node = node[part] as Record<string, unknown>
    }
    const last = parts.at(-1) as string
    if (!isObject(node[last])) node[last] = true
  }
  return frame
}

const related = (key: string, path: string) =>
  key === path || path.startsWith(`${key}.`) || key.startsWith(`${path}.`)

function b64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
}

/**
 * The presentation: the disclosures of `claimPaths` (each path's own disclosure, those of the objects it sits
 * in and of the claims inside it), then the KB-JWT `{typ: kb+jwt, alg}` / `{nonce, aud, iat, sd_hash}`.
 * Misbehaviours: 'sd-tampered-disclosure', 'sd-extra-disclosure', 'sd-issuer-signature' (one bit of the
 * issuer-signed JWT's signature), 'kb-wrong-sd-hash' (the hash of the SD-JWT without its last `~`),
 * 'kb-wrong-nonce', 'kb-wrong-aud', 'kb-stale-iat' (an hour old), 'kb-future-iat' (an hour ahead),
 * 'kb-bad-signature' (signed by a fresh key, not the cnf one), 'kb-missing'.
 */
export async function presentSdJwt(input: SdJwtPresentationInput): Promise<SdJwtPresentation> {
  const tamper = tamperOf(input.misbehave)
  const sd = instance()
  const issuedJwt = splitSdJwt(input.credential).jwt
  if (
    decodeJws(issuedJwt).payload._sd_alg !== undefined &&
    decodeJws(issuedJwt).payload._sd_alg !== 'sha-256'
  ) {
    throw new WalletUsageError('the SD-JWT VC uses an _sd_alg other than sha-256')
  }
  const keys = await sd.presentableKeys(input.credential)
  const claims = await sdJwtClaims(input.credential)
  const wanted = input.claimPaths.flatMap((path) => concretePaths(path, claims))
  const { selected, extra } = tamper.apply(
    'sd.disclose',
    { selected: keys.filter((key) => wanted.some((path) => related(key, path))) },
    { keys },
  )
  const { sdJwt, tampered } = tamper.apply('sd.presentation', {
    sdJwt: await sd.present(input.credential, frameOf(selected) as never),
  })
  const result = { disclosed: selected, ...(extra && { extra }), ...(tampered && { tampered }) }
  if (tamper.acts('kb.omit')) return { presentation: sdJwt, ...result }

  // RFC 9901 §4.3.1: sd_hash over the US-ASCII bytes of the SD-JWT up to and including the last `~`
  const hashed = tamper.apply('kb.hashed', sdJwt)
  const header = { typ: KB_JWT_TYP, alg: input.signer.alg }
  const payload = tamper.apply(
    'kb.payload',
    {
      nonce: input.nonce,
      aud: input.audience,
      iat: input.iat,
      sd_hash: createHash('sha256').update(hashed, 'ascii').digest('base64url'),
    },
    { wrongAudience: input.wrongAudience },
  )
  const signingInput = `${b64urlJson(header)}.${b64urlJson(payload)}`
  const signature = await tamper.apply('kb.signer', input.signer).sign(signingInput)
  return {
    presentation: `${sdJwt}${signingInput}.${Buffer.from(signature).toString('base64url')}`,
    ...result,
  }
}
