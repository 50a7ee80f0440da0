import type { KeyObject } from 'node:crypto'
import { generateLdKeyPair, keyTypeOf, type LdKeyType, ldKeyFromPublicKey } from '../formats/ldp-vc/keys.ts'
import { isLdProofType, type LdProofType, PROOF_KEY_TYPES, signLd } from '../formats/ldp-vc/suites.ts'
import { isObject } from '../shared/json.ts'
import { WalletUsageError } from './errors.ts'
import type { PresentationMisbehaviour } from './misbehaviour.ts'
import type { LdPresenter } from './presentation-ldp-defects.ts'
import { tamperOf } from './tamper.ts'

// A Linked Data presentation (ldp_vp) of ldp_vc credentials: the interface's section 2.8 format, OpenID4VP
// draft 20 with Presentation Exchange and OpenID4VP 1.0 Appendix B.1.3.2. A VC 1.1 presentation with one
// embedded proof, proofPurpose authentication, challenge = the request's nonce, domain = the client_id
// (VC Data Integrity §2.1 proof options). The proof type is the first the verifier lists that the holder's
// key type signs, or the one the caller forces; the misbehaviours act through the tamper hooks `ldp.*`.

export const VC_V1_CONTEXT = 'https://www.w3.org/2018/credentials/v1'

export type { LdPresenter }

/** What a key type signs, in the wallet's order of preference (2.8's suites first, then Data Integrity). */
const PREFERENCE: readonly LdProofType[] = [
  'Ed25519Signature2018',
  'EcdsaSecp256k1Signature2019',
  'RsaSignature2018',
  'JsonWebSignature2020',
  'eddsa-rdfc-2022',
  'ecdsa-rdfc-2019',
]

/** The proof types a key type can sign an ldp_vp with, preferred first. */
export const proofTypesFor = (keyType: LdKeyType): LdProofType[] =>
  PREFERENCE.filter((t) => PROOF_KEY_TYPES[t].includes(keyType))

/**
 * The ldp_vp proof type: `forced` when the key can make it, else the first proof type of the verifier's
 * list (`DataIntegrityProof` standing for the cryptosuites) that the key type signs; undefined when the
 * verifier lists none of them.
 */
export function chooseLdProofType(
  keyType: LdKeyType,
  listed: readonly string[] | undefined,
  forced?: string,
): LdProofType | undefined {
  const possible = proofTypesFor(keyType)
  if (forced !== undefined) {
    if (!isLdProofType(forced) || !possible.includes(forced))
      throw new WalletUsageError(
        `proof type ${forced} cannot be made with this wallet's ${keyType} key; it makes ${possible.join(', ')}`,
      )
    return forced
  }
  if (!listed) return possible[0]
  return possible.find(
    (t) => listed.includes(t) || (t.includes('-') && listed.includes('DataIntegrityProof')),
  )
}

/** The proof types a PE definition's `format.ldp_vp` lists (undefined: it names none, so any will do). */
export function listedProofTypes(definition: unknown): string[] | undefined {
  const format = isObject(definition) && isObject(definition.format) ? definition.format : undefined
  const entry = format?.ldp_vp
  return isObject(entry) && Array.isArray(entry.proof_type) ? entry.proof_type.map(String) : undefined
}

/** The presenter of a wallet's holder key. */
export function presenterOf(privateKey: KeyObject): LdPresenter {
  const { did, kid } = ldKeyFromPublicKey(privateKey)
  return { did, kid, privateKey }
}

/** The signed ldp_vp of `credentials` (ldp_vc objects), bound to the request's nonce and client_id. */
export async function buildLdpVp(input: {
  holder: LdPresenter
  credentials: Record<string, unknown>[]
  nonce: string
  audience: string
  proofType: LdProofType
  misbehave?: readonly PresentationMisbehaviour[]
  /** ms; default now */
  now?: number
}): Promise<Record<string, unknown>> {
  const tamper = tamperOf(input.misbehave)
  const keyType = keyTypeOf(input.holder.privateKey)
  const holder = tamper.apply('ldp.holder', input.holder, {
    fresh: () => presenterOf(generateLdKeyPair(keyType).privateKey),
  })
  const options = tamper.apply('ldp.options', { challenge: input.nonce, domain: input.audience })
  const credentials = tamper.apply(
    'ldp.credentials',
    input.credentials.map((c) => structuredClone(c)),
  )
  const vp = await signLd(
    {
      '@context': [VC_V1_CONTEXT],
      type: ['VerifiablePresentation'],
      holder: holder.did,
      verifiableCredential: credentials,
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
