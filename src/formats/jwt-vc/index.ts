import type { DcqlW3cVcCredential } from 'dcql'
import { isObject, jsonCopy } from '../../shared/json.ts'
import { decodeJws } from '../../shared/jws.ts'
import type { FormatModule } from '../types.ts'
import { signJwtVc } from './issue.ts'
import { jwtVcJson, jwtVpJson, vcTypes } from './verify.ts'

// jwt_vc_json: a W3C VC secured as a JWT (VC Data Model 1.1 §6.3.1); OpenID4VCI 1.0 Appendix A.1.1,
// OpenID4VP 1.0 Appendix B.1 (it travels in a jwt_vp_json presentation signed by the subject).
// verify.ts reads and verifies both; issue.ts signs.

export const jwtVcJsonFormat: FormatModule<'jwt_vc_json'> = {
  id: 'jwt_vc_json',
  aliases: ['jwt_vc'],
  credential: jwtVcJson,
  presentation: jwtVpJson,
  typedBy: 'type',
  selectiveDisclosure: false,
  // One list for the credential's and the VP's JWS (Appendix B.1.3.1.3: alg_values).
  vpFormatsSupported: (algs) => ({ jwt_vc_json: { alg_values: [...algs.credential] } }),
  dcql: {
    // Appendix B.1.2: W3C claims paths start at the credential's root (`credentialSubject`, `type`, …).
    claimPath: (segments) => ['credentialSubject', ...segments],
    anchorClaim: 'type',
    // Appendix B.1.1: each inner array lists types the credential's `type` must all include. A template's
    // type names are not defined by a JSON-LD @context, so they stand as they are.
    meta: (type) => ({ type_values: [[...new Set(['VerifiableCredential', type])]] }),
    model(credential) {
      // Holder binding is declared true: the pipeline checks the jwt_vp's signature by the subject itself.
      const { proof: _proof, ...vc } = credential.sharedView
      return {
        credential_format: 'jwt_vc_json',
        type: [...credential.types],
        claims: jsonCopy(vc) as DcqlW3cVcCredential['claims'],
        cryptographic_holder_binding: true,
      }
    },
    async heldModel(issued) {
      // W3C VCs: claims paths match on the root of the credential, the `vc` claim of a VC 1.1 JWT (B.1.2)
      const { payload } = decodeJws(issued)
      const vc = isObject(payload.vc) ? payload.vc : payload
      return {
        credential_format: 'jwt_vc_json',
        type: vcTypes(vc),
        claims: vc as never,
        cryptographic_holder_binding: true,
      }
    },
  },
  issuance: {
    claimsRoot: ['credentialSubject'],
    bindingMethods: ['did:key'],
    dataIntegrityProofs: true,
    signingAlgValues: ({ signingAlg }) => [signingAlg],
    x5cIssuer: false,
    describe: ({ credentialType }) => ({
      credential_definition: { type: ['VerifiableCredential', credentialType] },
    }),
    legacyRequest(body, format) {
      const types = isObject(body.credential_definition) ? body.credential_definition.type : undefined
      if (!Array.isArray(types))
        return `format ${format} needs credential_definition.type (draft 13 Appendix A.1)`
      return { shown: `with type ${JSON.stringify(types)}`, names: (t) => types.includes(t.credentialType) }
    },
    statusEntry: (allocation) => allocation.bitstring,
    sign: async (input) => signJwtVc(input).credential,
  },
}
