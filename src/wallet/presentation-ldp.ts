import type { KeyObject } from 'node:crypto'
import { VC_V1_CONTEXT, VC_V2_CONTEXT } from '../formats/ldp-vc/contexts.ts'
import { keyTypeOf, ldKeyFromPublicKey } from '../formats/ldp-vc/keys.ts'
import { type LdProofType, signLd } from '../formats/ldp-vc/suites.ts'
import { envelopeJwtCredential } from '../shared/data-integrity.ts'
import { isObject } from '../shared/json.ts'
import type { PresentationMisbehaviour } from './misbehaviour.ts'
import { freshLdPresenter, type LdPresenter } from './presentation-ldp-defects.ts'
import { tamperOf } from './tamper.ts'

// A Linked Data presentation (ldp_vp) of ldp_vc credentials: the interface's section 2.8 format, OpenID4VP
// draft 20 with Presentation Exchange and OpenID4VP 1.0 Appendix B.1.3.2. A VC 1.1 presentation with one
// embedded proof, proofPurpose authentication, challenge = the request's nonce, domain = the client_id
// (VC Data Integrity §2.1 proof options); JWT credentials riding along make it a VC 2.0 presentation that
// envelopes them (VCDM 2.0 §4.13: a bare JWT string is not JSON-LD, safe mode refuses it). The proof type is
// the first the verifier lists that the holder's key type signs, or the one the caller forces; the
// misbehaviours act through the tamper hooks `ldp.*`.

export * from './ldp-proof-choice.ts'
export type { LdPresenter }

/** The presenter of a wallet's holder key. */
export function presenterOf(privateKey: KeyObject): LdPresenter {
  const { did, kid } = ldKeyFromPublicKey(privateKey)
  return { did, kid, privateKey }
}

/**
 * The signed ldp_vp of `credentials` (ldp_vc objects, and JWT credentials as compact strings, enveloped),
 * bound to the request's nonce (challenge) and client_id (domain). `verifiableCredential` keeps their order.
 */
export async function buildLdpVp(input: {
  holder: LdPresenter
  credentials: readonly (Record<string, unknown> | string)[]
  nonce: string
  audience: string
  proofType: LdProofType
  misbehave?: readonly PresentationMisbehaviour[]
  /** ms; default now */
  now?: number
}): Promise<Record<string, unknown>> {
  const tamper = tamperOf(input.misbehave)
  const keyType = keyTypeOf(input.holder.privateKey)
  const holder = tamper.apply('ldp.holder', input.holder, { fresh: () => freshLdPresenter(keyType) })
  const options = tamper.apply('ldp.options', { challenge: input.nonce, domain: input.audience })
  // the misbehaviours that change a credential change the first ldp_vc; JWT credentials ride as issued
  const positions = input.credentials.flatMap((c, i) => (typeof c === 'string' ? [] : [i]))
  let linked = input.credentials.filter(isObject).map((c) => structuredClone(c))
  const reissue = tamper.apply('ldp.reissue', undefined)
  if (reissue && linked[0]) linked = [await reissue(linked[0]), ...linked.slice(1)]
  linked = tamper.apply('ldp.credentials', linked)
  const entries: unknown[] = input.credentials.map((c) =>
    typeof c === 'string' ? envelopeJwtCredential(c) : undefined,
  )
  for (const [n, position] of positions.entries()) entries[position] = linked[n]
  const enveloped = input.credentials.some((c) => typeof c === 'string')
  const vp = await signLd(
    {
      // VC 1.1 as section 2.8 shows it; VC 2.0 when it carries enveloped JWT credentials (VCDM 2.0 §4.13)
      '@context': [enveloped ? VC_V2_CONTEXT : VC_V1_CONTEXT],
      type: ['VerifiablePresentation'],
      holder: holder.did,
      verifiableCredential: entries,
    },
    {
      proofType: input.proofType,
      kid: holder.kid,
      privateKey: holder.privateKey,
      purpose: { purpose: 'authentication', ...options },
      created: new Date(input.now ?? Date.now()),
    },
  )
  return tamper.apply('ldp.signed', vp)
}
