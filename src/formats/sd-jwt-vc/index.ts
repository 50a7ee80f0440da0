import type { DcqlCredential } from 'dcql'
import { isObject, jsonCopy } from '../../shared/json.ts'
import { sdJwtClaims } from '../../shared/sd-jwt.ts'
import { SD_JWT_VC_TYP, SD_JWT_VC_TYP_LEGACY } from '../../shared/wire.ts'
import type { FormatModule } from '../types.ts'
import { signSdJwtVc } from './issue.ts'
import { sdJwtVcCredential, sdJwtVcPresentation } from './verify.ts'

// dc+sd-jwt: an IETF SD-JWT VC (draft-ietf-oauth-sd-jwt-vc, SD-JWT RFC 9901); OpenID4VCI 1.0 Appendix A.3,
// OpenID4VP 1.0 Appendix B.3 (it is its own presentation: the KB-JWT proves the holder and binds the
// session). verify.ts reads and verifies; issue.ts signs.

export const sdJwtVcFormat: FormatModule<typeof SD_JWT_VC_TYP> = {
  id: SD_JWT_VC_TYP,
  aliases: [SD_JWT_VC_TYP_LEGACY],
  credential: sdJwtVcCredential,
  presentation: sdJwtVcPresentation,
  typedBy: 'vct',
  selectiveDisclosure: true,
  vpFormatsSupported: (algs) => ({
    [SD_JWT_VC_TYP]: { 'sd-jwt_alg_values': [...algs.credential], 'kb-jwt_alg_values': [...algs.holder] },
  }),
  dcql: {
    // Appendix B.3: claims paths start at the SD-JWT VC's payload.
    claimPath: (segments) => [...segments],
    anchorClaim: 'vct',
    // Appendix B.3.5: vct_values is a non-empty array.
    meta(type, vctValues) {
      const values = vctValues()
      return values.length === 0
        ? `credential type "${type}" has no vct value for ${SD_JWT_VC_TYP}`
        : { vct_values: [...values] }
    },
    model(credential) {
      // verify.ts reads it as dcql's model {credential_format, vct, claims} (its disclosed claims once its
      // proof verified); holder binding is declared true: the pipeline checks the KB-JWT itself.
      if (!isObject(credential.queryInput)) return `format ${credential.format} has no DCQL model`
      return jsonCopy({ ...credential.queryInput, cryptographic_holder_binding: true }) as DcqlCredential
    },
    async heldModel(issued, storedVct) {
      // the claims path root of an SD-JWT VC is its payload with every disclosure applied (§7.1)
      const claims = await sdJwtClaims(issued)
      const vct = storedVct ?? claims.vct
      if (typeof vct !== 'string') return undefined
      return {
        credential_format: SD_JWT_VC_TYP,
        vct,
        claims: claims as never,
        cryptographic_holder_binding: isObject(claims.cnf),
      }
    },
  },
  issuance: {
    // An SD-JWT VC binds the key itself (cnf.jwk): a did:key kid or a bare jwk in the proof both work.
    bindingMethods: ['jwk', 'did:key'],
    dataIntegrityProofs: false,
    signingAlgValues: ({ signingAlg }) => [signingAlg],
    x5cIssuer: true,
    describe: ({ vct }) => ({ vct }),
    legacyRequest: (body) => ({
      shown: `with vct ${JSON.stringify(body.vct)}`,
      names: (t) => body.vct === t.vct,
    }),
    statusEntry: (allocation) => allocation.token,
    sign: signSdJwtVc,
  },
}
