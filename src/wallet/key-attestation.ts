// Which key proof the wallet sends on the OpenID4VCI 1.0 path, and the key attestation with it (Appendix D):
// a `jwt` proof (Appendix F.1), with a key attestation of its key in the `key_attestation` header when the
// configuration says `key_attestations_required` (§12.2.4) or the wallet is told to; or the `attestation`
// proof type (Appendix F.3: the key attestation itself, with the c_nonce, attesting every key of the request)
// when asked for, or when the configuration offers it and not `jwt`. The attestation is signed by the wallet's
// provider: the built-in TEST provider unless a provider key is configured (AuthorizationOptions.walletProvider,
// the same signer as the wallet attestation's).

import { isObject } from '../shared/json.ts'
import type { AttestationSigner } from '../shared/oauth/client-attestation.ts'
import { ATTESTATION_PROOF_TYPE, createKeyAttestation } from '../shared/oauth/key-attestation.ts'
import { WalletUsageError } from './errors.ts'

/** The proof types of the 1.0 path a caller may ask for (RequestCredentialOptions.proofType). */
export type V1ProofType = 'jwt' | typeof ATTESTATION_PROOF_TYPE
export const V1_PROOF_TYPES: readonly V1ProofType[] = ['jwt', ATTESTATION_PROOF_TYPE]

/** The key proof to make for one configuration. */
export interface ProofPlan {
  type: V1ProofType
  /** a jwt proof carries a key attestation in its `key_attestation` header (always so for `attestation`) */
  attest: boolean
  /** what the attestation claims: one value of each list key_attestations_required names, when it names one */
  keyStorage?: string[]
  userAuthentication?: string[]
}

const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.every((v) => typeof v === 'string') && value.length > 0
    ? (value as string[])
    : undefined

/**
 * The proof for `configurationId`: `asked` (a caller's proof type, or `keyAttestation: true` to attach one
 * where none is required) against the configuration's `proof_types_supported`. A proof type the
 * configuration does not offer, or a provider algorithm it does not list for key attestations (Appendix F.1,
 * F.3: the attestation's `alg` must be one of `proof_signing_alg_values_supported`), is a WalletUsageError:
 * nothing is sent.
 */
export function planProof(
  configurationId: string,
  configuration: Record<string, unknown> | undefined,
  asked: { proofType?: V1ProofType | undefined; keyAttestation?: boolean | undefined },
  provider: AttestationSigner,
): ProofPlan {
  const types = isObject(configuration?.proof_types_supported)
    ? (configuration.proof_types_supported as Record<string, unknown>)
    : undefined
  const offered = types ? Object.keys(types) : undefined
  const offers = (type: string) => (types ? isObject(types[type]) : type === 'jwt')
  // Appendix F.3 only where asked or where jwt is not offered: a jwt proof also proves possession of the key
  const type: V1ProofType =
    asked.proofType ?? (!offers('jwt') && offers(ATTESTATION_PROOF_TYPE) ? ATTESTATION_PROOF_TYPE : 'jwt')
  if (!offers(type)) {
    throw new WalletUsageError(
      `credential configuration ${configurationId} does not offer the ${type} proof type (proof_types_supported: ${offered?.join(', ') || 'none'}; OpenID4VCI 1.0 §12.2.4)`,
    )
  }
  const entry = types && isObject(types[type]) ? (types[type] as Record<string, unknown>) : {}
  const required = isObject(entry.key_attestations_required)
    ? (entry.key_attestations_required as Record<string, unknown>)
    : undefined
  const attest = type === ATTESTATION_PROOF_TYPE || required !== undefined || asked.keyAttestation === true
  if (attest) {
    const algs = strings(entry.proof_signing_alg_values_supported)
    if (algs && !algs.includes(provider.alg)) {
      throw new WalletUsageError(
        `credential configuration ${configurationId} takes ${type} proofs signed with ${algs.join(', ')} (proof_signing_alg_values_supported), and the wallet provider signs key attestations with ${provider.alg} (OpenID4VCI 1.0 Appendix ${type === 'jwt' ? 'F.1' : 'F.3'})`,
      )
    }
  }
  // §12.2.4: key_storage / user_authentication list the values the issuer accepts; the attestation must assert
  // one. The simulated wallet's provider (the TEST provider, or a key configured for tests) attests nothing
  // real: it claims the first value asked, and nothing where nothing is asked (Appendix D.2).
  const keyStorage = strings(required?.key_storage)?.slice(0, 1)
  const userAuthentication = strings(required?.user_authentication)?.slice(0, 1)
  return {
    type,
    attest,
    ...(keyStorage && { keyStorage }),
    ...(userAuthentication && { userAuthentication }),
  }
}

/**
 * The key attestation (Appendix D.1) of `keys` by `provider`, claiming what `plan` says, with the c_nonce (F.1:
 * in a jwt proof's header it carries the proof's c_nonce; F.3: required, it is the proof). `exp` one hour
 * ahead: required when the attestation sits in a jwt proof (D.1).
 */
export function walletKeyAttestation(
  provider: AttestationSigner,
  keys: readonly { publicJwk: JsonWebKey }[],
  plan: ProofPlan,
  nonce: string | undefined,
): string {
  return createKeyAttestation(provider, {
    attestedKeys: keys.map((k) => ({ ...k.publicJwk }) as Record<string, unknown>),
    ...(plan.keyStorage && { keyStorage: plan.keyStorage }),
    ...(plan.userAuthentication && { userAuthentication: plan.userAuthentication }),
    ...(nonce && { nonce }),
  })
}
