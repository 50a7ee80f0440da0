import { isObject } from '../../shared/json.ts'
import { decodeJws } from '../../shared/jws.ts'
import type { FormatModule } from '../types.ts'
import { w3cDcqlProfile } from '../w3c-dcql.ts'
import { signJwtVc } from './issue.ts'
import { jwtVcJson, jwtVpJson } from './verify.ts'

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
  // W3C VCs: claims paths match on the root of the credential, the `vc` claim of a VC 1.1 JWT (B.1.2)
  dcql: w3cDcqlProfile('jwt_vc_json', (issued) => {
    const { payload } = decodeJws(issued)
    return isObject(payload.vc) ? payload.vc : payload
  }),
  issuance: {
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
