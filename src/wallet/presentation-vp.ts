// What the wallet sends in an OpenID4VP direct_post answer: the JWT VP (`vp_token`), the
// `presentation_submission` and the form around them, plus the defects the presentation misbehaviours put
// into them. Pure functions over a signer, so every defect is unit-tested without a verifier.

import { createHash, sign as cryptoSign, type KeyObject, randomBytes } from 'node:crypto'
import { didKeyFromPublicKey, generateKeyPair, isJwsAlg, type JwsAlg } from '../shared/did-key.ts'
import { isObject } from '../shared/json.ts'
import { decodeJws, signJws } from '../shared/jws.ts'
import { JWT_TYP } from '../shared/wire.ts'
import { type PresentationMisbehaviour, WRONG_AUDIENCE } from './misbehaviour.ts'
import type { JwtSigner } from './proof.ts'

export const VC_CONTEXT_V1 = 'https://www.w3.org/2018/credentials/v1'

/** DIF Presentation Exchange v2 presentation_submission. */
export interface PresentationSubmission {
  id: string
  definition_id: string
  descriptor_map: DescriptorMapEntry[]
}
export interface DescriptorMapEntry {
  id: string
  format: string
  path: string
  path_nested?: DescriptorMapEntry
}

function b64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
}

/** The id the wallet gives a credential: its `jti`, else `urn:sha256:<hash of the JWT>` (as store.ts does). */
export function credentialId(jwt: string): string {
  try {
    const { payload } = decodeJws(jwt)
    if (typeof payload.jti === 'string') return payload.jti
  } catch {}
  return `urn:sha256:${createHash('sha256').update(jwt).digest('hex')}`
}

// --- signers ---------------------------------------------------------------------------------------------

/** A JwtSigner over a node:crypto private key (the foreign keys of the misbehaviours). */
export function keySigner(privateKey: KeyObject, kid: string, alg: JwsAlg): JwtSigner {
  return {
    kid,
    alg,
    async sign(signingInput: string): Promise<Uint8Array> {
      const data = Buffer.from(signingInput, 'ascii')
      return alg === 'EdDSA'
        ? cryptoSign(null, data, privateKey)
        : cryptoSign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' })
    },
  }
}

export interface ForeignKey {
  did: string
  kid: string
  alg: JwsAlg
  privateKey: KeyObject
}

/** A freshly generated did:key of one algorithm. */
export function freshDidKey(alg: JwsAlg): ForeignKey {
  const pair = generateKeyPair(alg)
  const didKey = didKeyFromPublicKey(pair.publicKey)
  return { did: didKey.did, kid: didKey.kid, alg, privateKey: pair.privateKey }
}

// --- vp_token --------------------------------------------------------------------------------------------

export interface VpTokenInput {
  /** the holder DID: `iss` and `vp.holder` */
  holder: string
  /** the verifier's client_id: `aud` */
  audience: string
  /** the request object's nonce */
  nonce: string
  /** the presentation as Presentation Exchange laid it out (`@context`, `type`, `holder`, `verifiableCredential`) */
  presentation: Record<string, unknown>
  misbehave?: readonly PresentationMisbehaviour[]
  /** clock, in seconds; default now */
  now?: () => number
  /** the key 'vp-foreign-key' presents with; default a fresh did:key of the signer's algorithm */
  foreignKey?: () => ForeignKey
}

/** A random value shaped like a verifier nonce that no verifier issued, for 'vp-wrong-nonce'. */
export function randomNonce(): string {
  return randomBytes(32).toString('base64url')
}

/**
 * The JWT VP: header `{alg, typ: 'JWT', kid}`, payload `{iss: holder, aud: client_id, nonce, iat, vp}` with
 * `vp = {@context, type, holder, verifiableCredential: [<credential JWTs as issued>]}`. Misbehaviours:
 * 'vp-wrong-nonce' (nonce), 'vp-wrong-aud' (aud), 'vp-foreign-key' (a fresh did:key presents: kid, iss,
 * vp.holder and the signing key are all the foreign key's, so the signature verifies but the credentials are
 * bound to someone else).
 */
export async function buildVpToken(signer: JwtSigner, input: VpTokenInput): Promise<string> {
  const misbehave = input.misbehave ?? []
  const now = input.now ?? (() => Math.floor(Date.now() / 1000))
  let holder = input.holder
  let effective = signer
  if (misbehave.includes('vp-foreign-key')) {
    const foreign = (input.foreignKey ?? (() => freshDidKey(signer.alg)))()
    holder = foreign.did
    effective = keySigner(foreign.privateKey, foreign.kid, foreign.alg)
  }
  const vp: Record<string, unknown> = {
    '@context': [VC_CONTEXT_V1],
    type: ['VerifiablePresentation'],
    ...input.presentation,
    holder,
  }
  const header = { alg: effective.alg, typ: JWT_TYP, kid: effective.kid }
  const payload = {
    iss: holder,
    aud: misbehave.includes('vp-wrong-aud') ? WRONG_AUDIENCE : input.audience,
    nonce: misbehave.includes('vp-wrong-nonce') ? randomNonce() : input.nonce,
    iat: now(),
    vp,
  }
  const signingInput = `${b64urlJson(header)}.${b64urlJson(payload)}`
  const signature = await effective.sign(signingInput)
  return `${signingInput}.${Buffer.from(signature).toString('base64url')}`
}

// --- credential defects ------------------------------------------------------------------------------------

function subjectOf(payload: Record<string, unknown>): Record<string, unknown> | undefined {
  const vc = isObject(payload.vc) ? payload.vc : payload
  return isObject(vc.credentialSubject) ? vc.credentialSubject : undefined
}

/** A changed value of the same kind: string + ` (tampered)`, number + 1, boolean negated, else 'tampered'. */
export function tamperValue(value: unknown): unknown {
  if (typeof value === 'string') return `${value} (tampered)`
  if (typeof value === 'number') return value + 1
  if (typeof value === 'boolean') return !value
  return 'tampered'
}

/** Changes the first primitive leaf under `node` (depth first, `id` skipped); answers its path. */
function tamperFirstLeaf(node: Record<string, unknown> | unknown[], path: string): string | undefined {
  const entries: [string | number, unknown][] = Array.isArray(node)
    ? node.map((v, i) => [i, v])
    : Object.entries(node).filter(([key]) => key !== 'id')
  for (const [key, value] of entries) {
    const childPath = typeof key === 'number' ? `${path}[${key}]` : `${path}.${key}`
    if (isObject(value) || Array.isArray(value)) {
      const found = tamperFirstLeaf(value, childPath)
      if (found) return found
      continue
    }
    ;(node as Record<string | number, unknown>)[key] = tamperValue(value)
    return childPath
  }
  return undefined
}

export interface TamperedCredential {
  jwt: string
  /** JSONPath of the changed claim in the JWT payload */
  path: string
  from: unknown
  to: unknown
}

/**
 * 'tampered-credential': one claim of `credentialSubject` (the first value other than `id`, depth first)
 * changed in the JWT payload; header and signature segments kept byte for byte.
 */
export function tamperCredential(jwt: string): TamperedCredential {
  const [header, , signature] = jwt.split('.') as [string, string, string]
  const { payload } = decodeJws(jwt)
  const subject = subjectOf(payload)
  if (!subject) throw new Error('the credential has no credentialSubject to tamper with')
  const before = structuredClone(subject)
  const base = isObject(payload.vc) ? '$.vc.credentialSubject' : '$.credentialSubject'
  const path = tamperFirstLeaf(subject, base)
  if (!path) throw new Error('the credentialSubject has no claim besides id to tamper with')
  const read = (root: unknown, p: string) =>
    p
      .slice(base.length)
      .split(/\.|\[(\d+)\]/)
      .filter((s) => s !== undefined && s !== '')
      .reduce<unknown>((node, key) => (node as Record<string, unknown>)?.[key], root)
  return {
    jwt: `${header}.${b64urlJson(payload)}.${signature}`,
    path,
    from: read(before, path),
    to: read(subject, path),
  }
}

export interface SelfIssuedCredential {
  jwt: string
  /** the fresh did:key that signed it */
  issuer: string
}

/**
 * 'untrusted-issuer': the same credential (type, subject = holder, claims, dates, jti, status entry) issued
 * and properly signed by a freshly generated did:key of the original's algorithm instead of its issuer.
 */
export function selfIssueCopy(jwt: string, issuerKey?: ForeignKey): SelfIssuedCredential {
  const { header, payload } = decodeJws(jwt)
  const alg: JwsAlg = isJwsAlg(header.alg) ? header.alg : 'EdDSA'
  const key = issuerKey ?? freshDidKey(alg)
  const copy = structuredClone(payload)
  copy.iss = key.did
  // a VC 1.1 JWT keeps the credential under `vc`; a VC 2.0 JWT is the credential
  const vc = isObject(copy.vc) ? copy.vc : undefined
  const credential = vc ?? copy
  if (isObject(credential.issuer)) credential.issuer = { ...credential.issuer, id: key.did }
  else if (credential.issuer !== undefined || vc) credential.issuer = key.did
  const signed = signJws(
    { ...header, alg: key.alg, kid: key.kid, ...(header.typ === undefined && { typ: JWT_TYP }) },
    copy,
    key.privateKey,
  )
  return { jwt: signed, issuer: key.did }
}

// --- presentation_submission --------------------------------------------------------------------------------

/**
 * The submission with each descriptor_map entry's `format` (the VP, path `$`) and `path_nested.format` (the
 * VC) set to the identifiers the verifier's definition uses (presentation-select.ts answerFormats); did-auth-
 * siop lays the submission out in PEX's words (`jwt_vp` / `jwt_vc`). Paths are kept: for a JWT VP,
 * `path_nested` is resolved against the decoded JWT payload (`$.vp.verifiableCredential[n]`, as PEX and
 * OpenID4VP draft 20 lay it out). An entry without `path_nested`, or of a descriptor `formats` does not
 * name, is left as it is.
 */
export function withAnswerFormats(
  submission: PresentationSubmission,
  formats: ReadonlyMap<string, { vp: string; vc: string }>,
): PresentationSubmission {
  return {
    ...submission,
    descriptor_map: submission.descriptor_map.map((entry) => {
      const format = formats.get(entry.id)
      if (!format || !entry.path_nested) return entry
      return { ...entry, format: format.vp, path_nested: { ...entry.path_nested, format: format.vc } }
    }),
  }
}

/**
 * 'lying-submission': `descriptor_map[0]` points at another credential of the VP (index i → i + 1, wrapping;
 * with a single credential, at index 1, which does not exist). Everything else of the submission is kept.
 */
export function lyingSubmission(
  submission: PresentationSubmission,
  credentialCount: number,
): PresentationSubmission {
  const copy = structuredClone(submission)
  const first = copy.descriptor_map[0]
  if (!first) throw new Error('the presentation_submission has no descriptor_map entry to lie about')
  const target = first.path_nested ?? first
  const match = /\[(\d+)\]$/.exec(target.path)
  const index = match ? Number(match[1]) : 0
  const next = (index + 1) % Math.max(credentialCount, 2)
  target.path = match ? target.path.replace(/\[\d+\]$/, `[${next}]`) : `${target.path}[${next}]`
  return copy
}

// --- the direct_post form -------------------------------------------------------------------------------------

/**
 * The authorization response as did-auth-siop 0.19.0 lays it out (`state`, `presentation_submission` as
 * JSON, `vp_token`); a unit test proves it equal to the library's payload.
 */
export function responseForm(input: {
  vpToken: string
  submission: PresentationSubmission
  state: string | undefined
}): Record<string, string> {
  return {
    ...(input.state !== undefined && { state: input.state }),
    presentation_submission: JSON.stringify(input.submission),
    vp_token: input.vpToken,
  }
}

/** The wallet's error answer (OpenID4VP §6.4 / RFC 6749 §4.1.2.1). */
export function errorForm(input: {
  error: string
  errorDescription: string
  state: string | undefined
}): Record<string, string> {
  return {
    error: input.error,
    error_description: input.errorDescription,
    ...(input.state !== undefined && { state: input.state }),
  }
}
