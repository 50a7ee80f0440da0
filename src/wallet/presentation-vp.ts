// What the wallet sends in an OpenID4VP direct_post answer: the JWT VP (`vp_token`), the
// `presentation_submission` and the form around them; the presentation misbehaviours change them through
// the tamper hooks of tamper.ts (the defects themselves are in defects.ts). Pure functions over a signer, so
// every defect is unit-tested without a verifier.

import { createHash } from 'node:crypto'
import { decodeJws } from '../shared/jws.ts'
import { JWT_TYP } from '../shared/wire.ts'
import type { ForeignKey, PresentationSubmission } from './defects.ts'
import type { PresentationMisbehaviour } from './misbehaviour.ts'
import type { JwtSigner } from './proof.ts'
import { tamperOf } from './tamper.ts'

export {
  type DescriptorMapEntry,
  type ForeignKey,
  freshDidKey,
  keySigner,
  lyingSubmission,
  type PresentationSubmission,
  randomNonce,
  type SelfIssuedCredential,
  selfIssueCopy,
  type TamperedCredential,
  tamperCredential,
  tamperValue,
} from './defects.ts'

export const VC_CONTEXT_V1 = 'https://www.w3.org/2018/credentials/v1'

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

/**
 * The JWT VP: header `{alg, typ: 'JWT', kid}`, payload `{iss: holder, aud: client_id, nonce, iat, vp}` with
 * `vp = {@context, type, holder, verifiableCredential: [<credential JWTs as issued>]}`. Misbehaviours:
 * 'vp-wrong-nonce' (nonce), 'vp-wrong-aud' (aud), 'vp-foreign-key' (a fresh did:key presents: kid, iss,
 * vp.holder and the signing key are all the foreign key's, so the signature verifies but the credentials are
 * bound to someone else).
 */
export async function buildVpToken(signer: JwtSigner, input: VpTokenInput): Promise<string> {
  const tamper = tamperOf(input.misbehave)
  const now = input.now ?? (() => Math.floor(Date.now() / 1000))
  const { holder, signer: effective } = tamper.apply(
    'vp.holder',
    { holder: input.holder, signer },
    { foreignKey: input.foreignKey },
  )
  const vp: Record<string, unknown> = {
    '@context': [VC_CONTEXT_V1],
    type: ['VerifiablePresentation'],
    ...input.presentation,
    holder,
  }
  const header = { alg: effective.alg, typ: JWT_TYP, kid: effective.kid }
  const payload = tamper.apply('vp.payload', {
    iss: holder,
    aud: input.audience,
    nonce: input.nonce,
    iat: now(),
    vp,
  })
  const signingInput = `${b64urlJson(header)}.${b64urlJson(payload)}`
  const signature = await effective.sign(signingInput)
  return `${signingInput}.${Buffer.from(signature).toString('base64url')}`
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
