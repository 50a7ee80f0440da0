import { createHash, createPublicKey, type KeyObject, type JsonWebKey as NodeJwk } from 'node:crypto'
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
 * Verifies an SD-JWT VC (issued, or presented with a KB-JWT), bounded before it is trusted: the issuer's
 * signature with an allowed alg and `typ dc+sd-jwt` first, then the disclosures (readDisclosures: RFC 9901
 * §7.1 and SD_JWT_LIMITS), iat/nbf/exp, and with `keyBinding` the KB-JWT's signature by `cnf.jwk`, nonce,
 * audience, iat window and sd_hash (§7.3). Status is the caller's check (it knows its lists). Nothing of a
 * disclosure is decoded before the signature verified, so an unsigned fan-out token costs one signature.
 */
export async function verifySdJwtVc(compact: string, options: SdJwtVerifyOptions): Promise<VerifiedSdJwtVc> {
  const { jwt, disclosures, kbJwt } = splitSdJwt(compact)
  if (disclosures.length > SD_JWT_LIMITS.maxDisclosures) throw tooManyDisclosures(disclosures.length)
  let decoded: ReturnType<typeof decodeJws>
  try {
    decoded = decodeJws(jwt)
  } catch (error) {
    throw new SdJwtError(`the issuer-signed JWT is malformed: ${(error as Error).message}`)
  }
  const { header, payload } = decoded
  if (header.typ !== SD_JWT_VC_TYP && header.typ !== SD_JWT_VC_TYP_LEGACY) {
    throw new SdJwtError(`typ ${shortJson(header.typ)} is not ${SD_JWT_VC_TYP}`)
  }
  const alg = header.alg
  if (!isJwsAlg(alg) || !options.algorithms.includes(alg)) {
    throw new SdJwtError(`alg ${shortJson(alg)} is not one of ${options.algorithms.join(', ')}`)
  }
  if (header.crit !== undefined) throw new SdJwtError('crit header parameters are not supported')
  const issuerKey = await options.issuerKey(header, payload)
  if (!verifyInput(alg, decoded.signingInput, decoded.signature.toString('base64url'), issuerKey)) {
    throw new SdJwtError('the issuer signature does not verify (was the SD-JWT altered?)')
  }
  const nowSeconds = Math.floor(options.now / 1000)
  checkTimes(payload, nowSeconds)
  const { claims } = readDisclosures(payload, disclosures)
  const cnf = isObject(payload.cnf) && isObject(payload.cnf.jwk) ? (payload.cnf.jwk as JsonWebKey) : undefined
  let keyBinding: VerifiedSdJwtVc['keyBinding']
  if (options.keyBinding) {
    if (kbJwt === undefined) throw new SdJwtError('the presentation has no Key Binding JWT (KB-JWT)')
    if (!cnf) throw new SdJwtError('the credential has no cnf.jwk to check the KB-JWT with')
    keyBinding = checkKeyBinding(compact, kbJwt, cnf, options.algorithms, options.keyBinding, nowSeconds)
  }
  return { header, claims, holderJwk: cnf, disclosures: disclosures.length, keyBinding }
}

/** RFC 7519 §4.1.4-6 as the SD-JWT library applied them: a 60 s allowance for clocks either way. */
function checkTimes(payload: Record<string, unknown>, nowSeconds: number) {
  const { iat, nbf, exp } = payload
  if (typeof iat === 'number' && iat - FUTURE_SKEW_SECONDS > nowSeconds)
    throw new SdJwtError('iat is in the future')
  if (typeof nbf === 'number' && nbf - FUTURE_SKEW_SECONDS > nowSeconds)
    throw new SdJwtError('the credential is not yet valid (nbf)')
  if (typeof exp === 'number' && exp + FUTURE_SKEW_SECONDS < nowSeconds)
    throw new SdJwtError('the credential has expired (exp)')
}

/** RFC 9901 §7.3: the KB-JWT signed by cnf.jwk, its typ, nonce, aud, iat window and sd_hash. */
function checkKeyBinding(
  compact: string,
  kbJwt: string,
  cnf: JsonWebKey,
  algorithms: readonly JwsAlg[],
  expected: KeyBindingExpectation,
  nowSeconds: number,
) {
  let kb: ReturnType<typeof decodeJws>
  try {
    kb = decodeJws(kbJwt)
  } catch (error) {
    throw new SdJwtError(`the Key Binding JWT is malformed: ${(error as Error).message}`)
  }
  const kbAlg = kb.header.alg
  if (!isJwsAlg(kbAlg) || !algorithms.includes(kbAlg)) {
    throw new SdJwtError(`KB-JWT alg ${shortJson(kbAlg)} is not one of ${algorithms.join(', ')}`)
  }
  if (kb.header.typ !== KB_JWT_TYP) throw new SdJwtError(`KB-JWT typ is not ${KB_JWT_TYP}`)
  if (!verifyInput(kbAlg, kb.signingInput, kb.signature.toString('base64url'), publicKeyOfJwk(cnf))) {
    throw new SdJwtError('the Key Binding JWT signature does not verify with cnf.jwk')
  }
  const { audience, maxAgeSeconds, nonce } = expected
  const p = kb.payload
  if (p.nonce !== nonce)
    throw new SdJwtError(`KB-JWT nonce ${shortJson(p.nonce)} is not ${nonce} (Nonce mismatch)`)
  if (p.aud !== audience) throw new SdJwtError(`KB-JWT aud ${shortJson(p.aud)} is not ${audience}`)
  if (typeof p.iat !== 'number') throw new SdJwtError('KB-JWT iat is missing')
  if (p.iat > nowSeconds + FUTURE_SKEW_SECONDS) throw new SdJwtError('KB-JWT iat is in the future')
  if (p.iat < nowSeconds - maxAgeSeconds) {
    throw new SdJwtError(`KB-JWT iat is ${nowSeconds - p.iat} s old; at most ${maxAgeSeconds} s`)
  }
  const presented = compact.slice(0, compact.length - kbJwt.length)
  if (p.sd_hash !== createHash('sha256').update(presented, 'ascii').digest('base64url')) {
    throw new SdJwtError('KB-JWT sd_hash is not the digest of the presented SD-JWT')
  }
  return { header: kb.header, payload: p }
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

/**
 * The claims an SD-JWT carries with all its disclosures applied, without verifying anything (display of a
 * stored credential, the careless wallet). Bounded like a verified one (readDisclosures); a disclosure no
 * digest references is left out rather than refused, as a careless wallet would.
 */
export async function sdJwtClaims(compact: string): Promise<Record<string, unknown>> {
  const { jwt, disclosures } = splitSdJwt(compact)
  if (disclosures.length > SD_JWT_LIMITS.maxDisclosures) throw tooManyDisclosures(disclosures.length)
  let payload: Record<string, unknown>
  try {
    payload = decodeJws(jwt).payload
  } catch (error) {
    throw new SdJwtError(`the issuer-signed JWT is malformed: ${(error as Error).message}`)
  }
  return readDisclosures(payload, disclosures, { unreferenced: 'ignore' }).claims
}

/**
 * What one SD-JWT may make a reader do, checked before the work is done (issue 30: 4 references × 8 levels of
 * array disclosures in 3 KB unpacked to 65,536 claims and froze the verifier for 27 s). Every disclosure is
 * referenced once (RFC 9901 §7.1, below), so the unpacked claims grow with the input, never faster; these
 * caps bound that input too. They match the service's JSON limits (util/json-limits.ts: depth 32, 10,000
 * members) so a credential the service issues or accepts as JSON fits: an EUDI PID with every claim
 * disclosable and decoys has about 60 disclosures and 150 digests.
 */
export const SD_JWT_LIMITS = Object.freeze({
  /** Disclosures after the issuer-signed JWT. */
  maxDisclosures: 1024,
  /** Digests in `_sd` arrays and `{"...": digest}` elements, decoys included. */
  maxDigests: 4096,
  /** Nesting of the unpacked claims: `{}` and `[]` are level 1. */
  maxDepth: 32,
  /** Object members plus array elements of the unpacked claims. */
  maxClaims: 10_000,
})

const tooManyDisclosures = (n: number) =>
  new SdJwtError(`${n} disclosures; at most ${SD_JWT_LIMITS.maxDisclosures} are read (limit maxDisclosures)`)

/** An attacker's value in a message: JSON, at most 80 characters. */
function shortJson(value: unknown): string {
  let text: string
  try {
    text = JSON.stringify(value) ?? String(value)
  } catch {
    text = String(value)
  }
  return text.length > 80 ? `${text.slice(0, 77)}…` : text
}

/** A claim path of the unpacked claims: member names, and array positions as numbers. */
export type ClaimPath = (string | number)[]

export interface ReadDisclosures {
  /** The payload with every disclosure applied; `_sd`, `_sd_alg` and decoy digests removed. */
  claims: Record<string, unknown>
  /** Where each disclosure's value landed: the selectively disclosed claims. */
  disclosed: ClaimPath[]
}

interface Disclosure {
  /** 3 elements (an object property) or 2 (an array element), RFC 9901 §4.2.1 / §4.2.2 */
  name: string | undefined
  value: unknown
  used: boolean
}

/** Sets an own property, even one named `__proto__` (a plain assignment would replace the prototype). */
function define(target: Record<string, unknown>, name: string, value: unknown) {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true })
}

/**
 * Applies the disclosures to an issuer-signed payload, with every rule of RFC 9901 §7.1 and SD_JWT_LIMITS:
 * each disclosure is base64url JSON `[salt, name, value]` or `[salt, value]`, named neither `_sd` nor `...`;
 * each digest appears once (§7.1 step 3.a: "If any digest value is encountered more than once … MUST be
 * rejected"), which is what keeps one disclosure from being unpacked many times; an object disclosure is
 * referenced from an `_sd` array, an array disclosure from a `{"...": digest}` element; a name already at its
 * level is refused; every disclosure is referenced (§7.1 step 5); `_sd_alg` is sha-256. Throws SdJwtError
 * naming the rule. A verifier calls it after the issuer's signature verified, never before.
 */
export function readDisclosures(
  payload: Record<string, unknown>,
  disclosures: readonly string[],
  /**
   * `unreferenced: 'ignore'` only for showing claims nobody verified (sdJwtClaims): a disclosure no digest
   * names lands nowhere, so leaving it out costs nothing; every other rule and limit still holds.
   */
  options: { unreferenced?: 'refuse' | 'ignore' } = {},
): ReadDisclosures {
  if (disclosures.length > SD_JWT_LIMITS.maxDisclosures) throw tooManyDisclosures(disclosures.length)
  if (payload._sd_alg !== undefined && payload._sd_alg !== 'sha-256') {
    throw new SdJwtError(`_sd_alg ${shortJson(payload._sd_alg)} is not sha-256`)
  }
  const byDigest = new Map<string, Disclosure>()
  for (const [i, text] of disclosures.entries()) {
    const digest = createHash('sha256').update(text, 'ascii').digest('base64url')
    if (byDigest.has(digest)) throw new SdJwtError(`disclosure ${i} is presented twice (RFC 9901 §7.1)`)
    let value: unknown
    try {
      value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))
    } catch {
      throw new SdJwtError(`disclosure ${i} is not base64url-encoded JSON`)
    }
    if (!Array.isArray(value) || value.length < 2 || value.length > 3 || typeof value[0] !== 'string') {
      throw new SdJwtError(`disclosure ${i} is not a [salt, (name,) value] array (RFC 9901 §4.2)`)
    }
    const name = value.length === 3 ? value[1] : undefined
    if (value.length === 3 && typeof name !== 'string')
      throw new SdJwtError(`disclosure ${i} has a claim name that is not a string`)
    if (name === '_sd' || name === '...')
      throw new SdJwtError(`disclosure ${i} names the claim ${shortJson(name)} (RFC 9901 §7.1)`)
    byDigest.set(digest, { name, value: value.at(-1), used: false })
  }

  const seen = new Set<string>()
  let claims = 0
  const disclosed: ClaimPath[] = []
  const reference = (digest: unknown): Disclosure | undefined => {
    if (typeof digest !== 'string') throw new SdJwtError('a digest in _sd or "..." is not a string')
    if (seen.has(digest)) throw new SdJwtError('a digest is listed more than once (RFC 9901 §7.1)')
    seen.add(digest)
    if (seen.size > SD_JWT_LIMITS.maxDigests) {
      throw new SdJwtError(`more than ${SD_JWT_LIMITS.maxDigests} digests (limit maxDigests)`)
    }
    const disclosure = byDigest.get(digest)
    if (disclosure) disclosure.used = true // once: its digest cannot be seen again
    return disclosure // undefined: a decoy, or a disclosure the holder did not present
  }
  const count = () => {
    if (++claims > SD_JWT_LIMITS.maxClaims) {
      throw new SdJwtError(`more than ${SD_JWT_LIMITS.maxClaims} claims unpacked (limit maxClaims)`)
    }
  }
  // Recursion is bounded by maxDepth (checked on entry), so the stack cannot overflow.
  const unpack = (value: unknown, path: ClaimPath, depth: number): unknown => {
    if (typeof value !== 'object' || value === null) return value
    if (depth >= SD_JWT_LIMITS.maxDepth) {
      throw new SdJwtError(`claims nest deeper than ${SD_JWT_LIMITS.maxDepth} levels (limit maxDepth)`)
    }
    if (Array.isArray(value)) {
      const out: unknown[] = []
      for (const item of value) {
        if (isObject(item) && Object.keys(item).length === 1 && '...' in item) {
          const disclosure = reference(item['...'])
          if (!disclosure) continue
          if (disclosure.name !== undefined)
            throw new SdJwtError('an object-property disclosure is referenced as an array element')
          count()
          disclosed.push([...path, out.length])
          out.push(unpack(disclosure.value, [...path, out.length], depth + 1))
        } else {
          count()
          out.push(unpack(item, [...path, out.length], depth + 1))
        }
      }
      return out
    }
    const object = value as Record<string, unknown>
    const out: Record<string, unknown> = {}
    for (const [name, item] of Object.entries(object)) {
      if (name === '_sd' || (name === '_sd_alg' && depth === 0)) continue
      count()
      define(out, name, unpack(item, [...path, name], depth + 1))
    }
    if (object._sd !== undefined) {
      if (!Array.isArray(object._sd)) throw new SdJwtError('_sd is not an array')
      for (const digest of object._sd) {
        const disclosure = reference(digest)
        if (!disclosure) continue
        if (disclosure.name === undefined)
          throw new SdJwtError('an array-element disclosure is referenced from _sd')
        if (Object.hasOwn(out, disclosure.name)) {
          throw new SdJwtError(
            `disclosed claim ${shortJson(disclosure.name)} is already present at its level (RFC 9901 §7.1)`,
          )
        }
        count()
        disclosed.push([...path, disclosure.name])
        define(out, disclosure.name, unpack(disclosure.value, [...path, disclosure.name], depth + 1))
      }
    }
    return out
  }
  const result = unpack(payload, [], 0) as Record<string, unknown>
  for (const disclosure of byDigest.values()) {
    if (!disclosure.used && options.unreferenced !== 'ignore') {
      throw new SdJwtError(
        'a disclosure is not referenced by the issuer-signed JWT or another disclosure (RFC 9901 §7.1; altered?)',
      )
    }
  }
  return { claims: result, disclosed }
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
