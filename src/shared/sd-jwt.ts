import { createHash, createPublicKey, type KeyObject, type JsonWebKey as NodeJwk } from 'node:crypto'
import type { SDJwtInstance } from '@sd-jwt/core'
import { digest, generateSalt } from '@sd-jwt/crypto-nodejs'
import type { DisclosureFrame, PresentationFrame } from '@sd-jwt/types'
import { isJwsAlg, type JwsAlg } from './did-key.ts'
import { isObject } from './json.ts'
import { decodeJws, signInput, verifyInput } from './jws.ts'
import { lazyImport } from './lazy.ts'
import { KB_JWT_TYP, SD_JWT_VC_TYP, SD_JWT_VC_TYP_LEGACY } from './wire.ts'

// SD-JWT VC (IETF draft-ietf-oauth-sd-jwt-vc; SD-JWT RFC 9901) for the service, the wallet and the verifier.
// The OpenWallet Foundation's @sd-jwt packages do the disclosures, digests and key binding; this module pins
// what they leave open: the signing algorithms (our allow-list, node:crypto), the `typ` of the issuer-signed
// JWT, and the key-binding JWT's audience and freshness (the library checks only its nonce and sd_hash).

const FUTURE_SKEW_SECONDS = 60

// Loaded at the first SD-JWT issued, verified or presented (@sd-jwt/sd-jwt-vc brings zod along).
const sdJwtCore = lazyImport(() => import('@sd-jwt/core'))
const sdJwtVc = lazyImport(() => import('@sd-jwt/sd-jwt-vc'))

export class SdJwtError extends Error {
  override name = 'SdJwtError'
}

/** Builds a nested frame from dotted claim paths: `mark` sets the last segment in its parent object. */
function frameOf(paths: readonly string[], mark: (parent: Record<string, unknown>, name: string) => void) {
  const frame: Record<string, unknown> = {}
  for (const path of paths) {
    const parts = path.split('.')
    let node = frame
    for (const part of parts.slice(0, -1)) {
      node[part] = isObject(node[part]) ? node[part] : {}
      node = node[part] as Record<string, unknown>
    }
    mark(node, parts.at(-1) as string)
  }
  return frame
}

/** Claim paths ("given_name", "address.locality") → the library's disclosure frame. */
export function disclosureFrame(paths: readonly string[]): DisclosureFrame<Record<string, unknown>> {
  return frameOf(paths, (parent, name) => {
    parent._sd = [...((parent._sd as string[] | undefined) ?? []), name]
  }) as DisclosureFrame<Record<string, unknown>>
}

export interface SdJwtIssuerKey {
  alg: JwsAlg
  privateKey: KeyObject
  /** Header members naming the key: `kid` (a did:key URL) and/or `x5c`. */
  header: { kid?: string; x5c?: string[] }
}

/** Issues an SD-JWT VC: `payload` holds every claim; `disclosable` names the selectively disclosable ones. */
export async function issueSdJwtVc(
  payload: Record<string, unknown>,
  disclosable: readonly string[],
  key: SdJwtIssuerKey,
): Promise<string> {
  const vc = await sdJwtVc()
  const instance = new vc.SDJwtVcInstance({
    hasher: digest,
    hashAlg: 'sha-256',
    saltGenerator: generateSalt,
    signAlg: key.alg,
    signer: (data) => signInput(key.alg, data, key.privateKey),
  })
  return instance.issue(payload as never, disclosureFrame(disclosable) as never, { header: key.header })
}

/** The parts of a compact SD-JWT, without checking anything: `<jwt>~<disclosure>~…~[<kb-jwt>]`. */
export function splitSdJwt(compact: string): {
  jwt: string
  disclosures: string[]
  kbJwt: string | undefined
} {
  const parts = compact.split('~')
  const jwt = parts[0] ?? ''
  const kbJwt = parts.at(-1) || undefined
  return { jwt, disclosures: parts.slice(1, -1), kbJwt: parts.length > 1 ? kbJwt : undefined }
}

export interface KeyBindingExpectation {
  nonce: string
  audience: string
  /** How old the KB-JWT's iat may be. */
  maxAgeSeconds: number
}

export interface SdJwtVerifyOptions {
  /**
   * The issuer's public key for the issuer-signed JWT's header and payload (did:key kid, x5c chain, …);
   * asynchronous when finding it is (validating an x5c chain uses WebCrypto).
   */
  issuerKey: (
    header: Record<string, unknown>,
    payload: Record<string, unknown>,
  ) => KeyObject | Promise<KeyObject>
  algorithms: readonly JwsAlg[]
  now: number
  /** Set by a verifier: a KB-JWT is then required and checked (RFC 9901 §7.3). */
  keyBinding?: KeyBindingExpectation
}

export interface VerifiedSdJwtVc {
  header: Record<string, unknown>
  /** The issuer-signed claims with the presented disclosures applied (`_sd` digests removed). */
  claims: Record<string, unknown>
  /** The holder's key from `cnf.jwk`, when the credential is key-bound. */
  holderJwk: JsonWebKey | undefined
  disclosures: number
  keyBinding: { header: Record<string, unknown>; payload: Record<string, unknown> } | undefined
}

/**
 * Verifies an SD-JWT VC (issued, or presented with a KB-JWT): the issuer's signature with an allowed alg and
 * `typ dc+sd-jwt`, every disclosure's digest, iat/nbf/exp, and with `keyBinding` the KB-JWT's signature by
 * `cnf.jwk`, nonce, audience, iat window and sd_hash. Status is the caller's check (it knows its lists).
 */
export async function verifySdJwtVc(compact: string, options: SdJwtVerifyOptions): Promise<VerifiedSdJwtVc> {
  const { jwt } = splitSdJwt(compact)
  let decoded: ReturnType<typeof decodeJws>
  try {
    decoded = decodeJws(jwt)
  } catch (error) {
    throw new SdJwtError(`the issuer-signed JWT is malformed: ${(error as Error).message}`)
  }
  const { header, payload } = decoded
  if (header.typ !== SD_JWT_VC_TYP && header.typ !== SD_JWT_VC_TYP_LEGACY) {
    throw new SdJwtError(`typ ${JSON.stringify(header.typ)} is not ${SD_JWT_VC_TYP}`)
  }
  const alg = header.alg
  if (!isJwsAlg(alg) || !options.algorithms.includes(alg)) {
    throw new SdJwtError(`alg ${JSON.stringify(alg)} is not one of ${options.algorithms.join(', ')}`)
  }
  checkDisclosuresReferenced(payload, splitSdJwt(compact).disclosures)
  const issuerKey = await options.issuerKey(header, payload)
  const cnf = isObject(payload.cnf) && isObject(payload.cnf.jwk) ? (payload.cnf.jwk as JsonWebKey) : undefined
  let kbKey: KeyObject | undefined
  const core = await sdJwtCore()
  const instance = new core.SDJwtInstance({
    hasher: digest,
    hashAlg: 'sha-256',
    verifier: (data, signature) => verifyInput(alg, data, signature, issuerKey),
    kbVerifier: (data, signature) => {
      const kbAlg = decodeJws(`${data}.${signature}`).header.alg
      if (!cnf || !isJwsAlg(kbAlg) || !options.algorithms.includes(kbAlg)) return false
      kbKey ??= publicKeyOfJwk(cnf)
      return verifyInput(kbAlg, data, signature, kbKey)
    },
  })
  let result: Awaited<ReturnType<SDJwtInstance<Record<string, unknown>>['verify']>>
  try {
    result = await instance.verify(compact, {
      currentDate: Math.floor(options.now / 1000),
      skewSeconds: FUTURE_SKEW_SECONDS,
      ...(options.keyBinding ? { keyBindingNonce: options.keyBinding.nonce } : {}),
    })
  } catch (error) {
    throw new SdJwtError((error as Error).message)
  }
  const kb = result.kb
  if (options.keyBinding) {
    if (!kb) throw new SdJwtError('the presentation has no key-binding JWT')
    const { audience, maxAgeSeconds } = options.keyBinding
    if (kb.payload.aud !== audience) {
      throw new SdJwtError(`KB-JWT aud ${JSON.stringify(kb.payload.aud)} is not ${audience}`)
    }
    const nowSeconds = Math.floor(options.now / 1000)
    if (typeof kb.payload.iat !== 'number') throw new SdJwtError('KB-JWT iat is missing')
    if (kb.payload.iat > nowSeconds + FUTURE_SKEW_SECONDS) throw new SdJwtError('KB-JWT iat is in the future')
    if (kb.payload.iat < nowSeconds - maxAgeSeconds) {
      throw new SdJwtError(`KB-JWT iat is ${nowSeconds - kb.payload.iat} s old; at most ${maxAgeSeconds} s`)
    }
    if (kb.header.typ !== KB_JWT_TYP) throw new SdJwtError(`KB-JWT typ is not ${KB_JWT_TYP}`)
  }
  const claims = { ...(result.payload as Record<string, unknown>) }
  delete claims._sd
  delete claims._sd_alg
  return {
    header: result.header ?? header,
    claims,
    holderJwk: cnf,
    disclosures: splitSdJwt(compact).disclosures.length,
    keyBinding: kb
      ? { header: kb.header as Record<string, unknown>, payload: kb.payload as Record<string, unknown> }
      : undefined,
  }
}

/** The holder's presentation: only the claims in `disclose` (paths as in disclosureFrame), with a KB-JWT. */
export async function presentSdJwtVc(
  compact: string,
  disclose: readonly string[],
  keyBinding: { alg: JwsAlg; privateKey: KeyObject; nonce: string; audience: string; iat: number },
): Promise<string> {
  const frame = frameOf(disclose, (parent, name) => {
    parent[name] = true
  })
  const core = await sdJwtCore()
  const instance = new core.SDJwtInstance({
    hasher: digest,
    hashAlg: 'sha-256',
    kbSignAlg: keyBinding.alg,
    kbSigner: (data) => signInput(keyBinding.alg, data, keyBinding.privateKey),
  })
  return instance.present(compact, frame as PresentationFrame<Record<string, unknown>>, {
    kb: { payload: { iat: keyBinding.iat, aud: keyBinding.audience, nonce: keyBinding.nonce } },
  })
}

/** The claims an SD-JWT carries with all its disclosures applied, without verifying anything (display). */
export async function sdJwtClaims(compact: string): Promise<Record<string, unknown>> {
  const core = await sdJwtCore()
  const instance = new core.SDJwtInstance({ hasher: digest, hashAlg: 'sha-256' })
  const claims = { ...((await instance.getClaims(compact)) as Record<string, unknown>) }
  delete claims._sd
  delete claims._sd_alg
  return claims
}

/**
 * RFC 9901 §7.1: every disclosure must be referenced by a digest in the issuer-signed payload or in another
 * disclosure, once. The library silently drops an unreferenced one (a tampered or foreign disclosure).
 */
export function checkDisclosuresReferenced(payload: Record<string, unknown>, disclosures: readonly string[]) {
  if (payload._sd_alg !== undefined && payload._sd_alg !== 'sha-256') {
    throw new SdJwtError(`_sd_alg ${JSON.stringify(payload._sd_alg)} is not sha-256`)
  }
  const referenced = new Set<string>()
  const collect = (value: unknown) => {
    if (Array.isArray(value)) {
      for (const item of value) {
        if (isObject(item) && typeof item['...'] === 'string' && Object.keys(item).length === 1) {
          referenced.add(item['...'])
        } else collect(item)
      }
    } else if (isObject(value)) {
      for (const [key, item] of Object.entries(value)) {
        if (key === '_sd' && Array.isArray(item)) for (const d of item) referenced.add(String(d))
        else collect(item)
      }
    }
  }
  collect(payload)
  const decoded: unknown[] = []
  for (const disclosure of disclosures) {
    try {
      decoded.push(JSON.parse(Buffer.from(disclosure, 'base64url').toString('utf8')))
    } catch {
      throw new SdJwtError('a disclosure is not base64url-encoded JSON')
    }
  }
  for (const value of decoded) {
    if (!Array.isArray(value) || value.length < 2 || value.length > 3) {
      throw new SdJwtError('a disclosure is not a [salt, (name,) value] array')
    }
    collect(value.at(-1))
  }
  const seen = new Set<string>()
  for (const disclosure of disclosures) {
    const hash = createHash('sha256').update(disclosure, 'ascii').digest('base64url')
    if (!referenced.has(hash))
      throw new SdJwtError('a disclosure is not referenced by the issuer-signed JWT (altered?)')
    if (seen.has(hash)) throw new SdJwtError('a disclosure is presented twice')
    seen.add(hash)
  }
}

function publicKeyOfJwk(jwk: JsonWebKey): KeyObject {
  // Only the public members: a `d` in cnf would be the holder's leak, never a reason to sign with it.
  const { d: _private, ...pub } = jwk as JsonWebKey & { d?: string }
  try {
    return createPublicKey({ key: pub as NodeJwk, format: 'jwk' })
  } catch (error) {
    throw new SdJwtError(`cnf.jwk is not a usable public key: ${(error as Error).message}`)
  }
}
