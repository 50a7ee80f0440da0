import { unwrapEnvelopedCredential, verifyPresentation } from '../../shared/data-integrity.ts'
import { resolveDidKey } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { proofOptionsBinding } from '../binding.ts'
import type { PresentationFormat, ReadPresentation } from '../types.ts'

// A VC 2.0 presentation secured with Data Integrity (eddsa-rdfc-2022) by a did:key holder: OpenID4VCI's
// `di_vp` key proof (draft 13 `ldp_vp`), and OpenID4VP's `ldp_vp`. Its binding is the proof's `challenge`
// and `domain` (VC Data Integrity §4.2, proof options); credentials travel as EnvelopedVerifiableCredential
// (VCDM 2.0 §4.13) with a `data:application/vc+jwt,` id, read by the jwt_vc_json format.

const asArray = (value: unknown): unknown[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value]

function readDiPresentation(vp: unknown): ReadPresentation {
  if (!isObject(vp)) throw new Error('the presentation must be a Verifiable Presentation object')
  const proof = Array.isArray(vp.proof) ? vp.proof[0] : vp.proof
  const options = isObject(proof) ? proof : {}
  const domains = asArray(options.domain)
  const credentials: { index: number; raw: unknown }[] = []
  const unreadable: string[] = []
  for (const [index, entry] of asArray(vp.verifiableCredential).entries()) {
    const jwt = unwrapEnvelopedCredential(entry)
    if (jwt) credentials.push({ index, raw: jwt })
    else
      unreadable.push(
        `verifiableCredential[${index}] must be an EnvelopedVerifiableCredential carrying a JWT`,
      )
  }
  return {
    format: 'ldp_vp',
    mechanisms: `ldp_vp (${String(options.cryptosuite ?? options.type)}) by a did:key holder`,
    verifyBinding: (session) => proofOptionsBinding(options, session),
    credentials,
    unreadable,
    async verifyProof() {
      // The proof is verified against its own challenge and domain (they are signed as proof options);
      // whether they are this exchange's is the sessionBinding check.
      const result = await verifyPresentation(vp, {
        challenge: typeof options.challenge === 'string' ? options.challenge : '',
        domain: typeof domains[0] === 'string' ? domains[0] : '',
      })
      if (!result.verified) return { ok: false, failures: result.errors }
      const holder = resolveDidKey(result.holderKid)
      return { ok: true, holder, proofEntry: { ...result.proof, creator: holder.kid } }
    },
  }
}

export const ldpVp: PresentationFormat = {
  id: 'ldp_vp',
  aliases: ['di_vp'],
  read: readDiPresentation,
}
