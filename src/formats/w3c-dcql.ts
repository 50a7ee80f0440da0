import type { DcqlW3cVcCredential } from 'dcql'
import { jsonCopy } from '../shared/json.ts'
import { vcTypes } from './jwt-vc/verify.ts'
import type { DcqlProfile } from './types.ts'

// How a W3C VC takes part in DCQL (OpenID4VP 1.0 Appendix B.1), whichever way it is secured: jwt_vc_json
// and ldp_vc differ only in how the wallet reads the credential object out of what it holds.

/** The DCQL profile of a W3C VC format; `heldVc` reads the credential object (without proof) the wallet holds. */
export function w3cDcqlProfile(
  format: 'jwt_vc_json' | 'ldp_vc',
  heldVc: (issued: string) => Record<string, unknown>,
): DcqlProfile {
  return {
    // Appendix B.1.2: W3C claims paths start at the credential's root (`credentialSubject`, `type`, …).
    claimPath: (segments) => ['credentialSubject', ...segments],
    anchorClaim: 'type',
    // Appendix B.1.1: each inner array lists types the credential's `type` must all include. A template's
    // type names are not defined by a JSON-LD @context, so they stand as they are.
    meta: (type) => ({ type_values: [[...new Set(['VerifiableCredential', type])]] }),
    model(credential) {
      // Holder binding is declared true: the pipeline checks the presentation's proof by the subject itself.
      const { proof: _proof, ...vc } = credential.sharedView
      return {
        credential_format: format,
        type: [...credential.types],
        claims: jsonCopy(vc) as DcqlW3cVcCredential['claims'],
        cryptographic_holder_binding: true,
      }
    },
    async heldModel(issued) {
      const vc = heldVc(issued)
      return {
        credential_format: format,
        type: vcTypes(vc),
        claims: vc as never,
        cryptographic_holder_binding: true,
      }
    },
  }
}
