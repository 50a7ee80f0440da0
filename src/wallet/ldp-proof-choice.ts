import type { LdKeyType } from '../formats/ldp-vc/keys.ts'
import {
  CRYPTOSUITES,
  isLdProofType,
  LD_PROOF_TYPES,
  type LdProofType,
  PROOF_KEY_TYPES,
} from '../formats/ldp-vc/suites.ts'
import { isObject } from '../shared/json.ts'
import { WalletUsageError } from './errors.ts'

// Which Linked Data proof type the wallet signs an ldp_vp with: what its key type makes, what the verifier
// accepts (a PE definition's `format.ldp_vp`, a 1.0 request's `vp_formats_supported.ldp_vc`), and what the
// caller forces. Pure functions, apart from presentation-ldp.ts (which builds the VP through the tamper
// hooks), so the request readers can use them too.

/**
 * What a key type signs, in the wallet's order of preference when the verifier names no proof type: the
 * suite made for the key type (section 2.8's), then JsonWebSignature2020, then the Data Integrity cryptosuite.
 */
const PREFERENCE: readonly LdProofType[] = [
  'Ed25519Signature2018',
  'EcdsaSecp256k1Signature2019',
  'RsaSignature2018',
  'JsonWebSignature2020',
  'eddsa-rdfc-2022',
  'ecdsa-rdfc-2019',
]

/**
 * The proof types a key type can sign an ldp_vp with, preferred first: Ed25519 → Ed25519Signature2018,
 * JsonWebSignature2020, eddsa-rdfc-2022; P-256 → JsonWebSignature2020, ecdsa-rdfc-2019; secp256k1 →
 * EcdsaSecp256k1Signature2019, JsonWebSignature2020.
 */
export const proofTypesFor = (keyType: LdKeyType): LdProofType[] =>
  PREFERENCE.filter((t) => PROOF_KEY_TYPES[t].includes(keyType))

/**
 * What a verifier accepts for an ldp_vp: proof types in its order of preference (PE `format.ldp_vp.proof_type`;
 * 1.0 `vp_formats_supported.ldp_vc.proof_type_values`), `DataIntegrityProof` standing for the cryptosuites
 * (1.0 `cryptosuite_values`; all of them when it names none). Undefined: it names none, so any will do.
 */
export interface AcceptedLdProofs {
  proofTypes: readonly string[]
  cryptosuites?: readonly string[] | undefined
}

/** Checks a proof type the caller forces (an option, a CLI flag): one this key type signs. */
export function checkForcedLdProofType(keyType: LdKeyType, forced: string): LdProofType {
  const possible = proofTypesFor(keyType)
  if (!isLdProofType(forced))
    throw new WalletUsageError(
      `unknown Linked Data proof type ${forced}: one of ${LD_PROOF_TYPES.join(', ')} (a ${keyType} key makes ${possible.join(', ')})`,
    )
  if (!possible.includes(forced))
    throw new WalletUsageError(
      `proof type ${forced} cannot be made with this wallet's ${keyType} key; it makes ${possible.join(', ')}`,
    )
  return forced
}

/**
 * The ldp_vp proof type: `forced` when the key can make it (else a WalletUsageError), otherwise the first
 * proof type the verifier accepts that the key type signs (a `DataIntegrityProof` entry: the key's
 * cryptosuite, eddsa-rdfc-2022 or ecdsa-rdfc-2019, when the verifier's cryptosuites allow it); undefined when
 * it accepts none of them. A verifier that names none gets the wallet's preference (proofTypesFor).
 */
export function chooseLdProofType(
  keyType: LdKeyType,
  accepted: AcceptedLdProofs | readonly string[] | undefined,
  forced?: string,
): LdProofType | undefined {
  if (forced !== undefined) return checkForcedLdProofType(keyType, forced)
  const possible = proofTypesFor(keyType)
  if (accepted === undefined) return possible[0]
  const { proofTypes, cryptosuites } = Array.isArray(accepted)
    ? { proofTypes: accepted as readonly string[], cryptosuites: undefined }
    : (accepted as AcceptedLdProofs)
  for (const listed of proofTypes) {
    if (listed === 'DataIntegrityProof') {
      const suite = possible.find((t) => CRYPTOSUITES.includes(t) && (cryptosuites?.includes(t) ?? true))
      if (suite) return suite
    } else if (isLdProofType(listed) && possible.includes(listed)) {
      return listed
    }
  }
  return undefined
}

const stringsOf = (value: unknown): string[] | undefined =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : undefined

/**
 * The proof types a Presentation Exchange definition accepts for an ldp_vp: its `format.ldp_vp.proof_type`,
 * else one an input descriptor's own `format` names (undefined: none is named, so any will do).
 */
export function peAcceptedLdProofs(definition: unknown): AcceptedLdProofs | undefined {
  if (!isObject(definition)) return undefined
  const formats = [
    definition.format,
    ...(Array.isArray(definition.input_descriptors)
      ? definition.input_descriptors.map((d) => (isObject(d) ? d.format : undefined))
      : []),
  ]
  for (const format of formats) {
    const entry = isObject(format) ? format.ldp_vp : undefined
    const proofTypes = isObject(entry) ? stringsOf(entry.proof_type) : undefined
    if (proofTypes) return { proofTypes }
  }
  return undefined
}

/**
 * What an OpenID4VP 1.0 verifier accepts for an ldp_vc presentation (Appendix B.1.3.2.3): its
 * `client_metadata.vp_formats_supported.ldp_vc` `proof_type_values` and `cryptosuite_values`.
 */
export function dcqlAcceptedLdProofs(clientMetadata: unknown): AcceptedLdProofs | undefined {
  const formats = isObject(clientMetadata) ? clientMetadata.vp_formats_supported : undefined
  const entry = isObject(formats) ? formats.ldp_vc : undefined
  if (!isObject(entry)) return undefined
  const proofTypes = stringsOf(entry.proof_type_values)
  const cryptosuites = stringsOf(entry.cryptosuite_values)
  if (proofTypes) return { proofTypes, cryptosuites }
  // only cryptosuites named: Data Integrity proofs of those
  return cryptosuites ? { proofTypes: ['DataIntegrityProof'], cryptosuites } : undefined
}
