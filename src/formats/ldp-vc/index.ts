import { isObject } from '../../shared/json.ts'
import type { FormatModule } from '../types.ts'
import { w3cDcqlProfile } from '../w3c-dcql.ts'
import { VC_V1_CONTEXT } from './contexts.ts'
import { DEFAULT_LD_PROOF_TYPE, ldContexts, signLdVc } from './issue.ts'
import { CRYPTOSUITES, isCryptosuite, LD_PROOF_TYPES } from './suites.ts'
import { jsonDocument, ldpVc, ldpVp } from './verify.ts'

// ldp_vc: a W3C VC secured with an embedded Linked Data proof (VC Data Model 1.1 §4.7, VC Data Integrity
// 1.0); OpenID4VCI 1.0 Appendix A.1.2, OpenID4VP 1.0 Appendix B.1.3.2 (it travels in an ldp_vp
// presentation signed by the subject). The interface names the format `ldp` and the presentation
// `ldp_vp` (section 2.8). verify.ts reads and verifies; issue.ts signs; suites.ts holds the proof types,
// contexts.ts the bundled JSON-LD contexts (nothing is fetched), keys.ts the did:key key types.

export const ldpVcFormat: FormatModule<'ldp_vc'> = {
  id: 'ldp_vc',
  aliases: ['ldp'],
  credential: ldpVc,
  presentation: ldpVp,
  typedBy: 'type',
  selectiveDisclosure: false,
  // Appendix B.1.3.2.3: proof types, and Data Integrity cryptosuites by name.
  vpFormatsSupported: () => ({
    ldp_vc: {
      proof_type_values: [...LD_PROOF_TYPES.filter((t) => !isCryptosuite(t)), 'DataIntegrityProof'],
      cryptosuite_values: [...CRYPTOSUITES],
    },
  }),
  dcql: w3cDcqlProfile('ldp_vc', (issued) => {
    const { proof: _proof, ...vc } = jsonDocument(issued, 'the credential')
    return vc
  }),
  issuance: {
    bindingMethods: ['did:key'],
    dataIntegrityProofs: true,
    x5cIssuer: false,
    // Appendix A.1.2 / §12.2.4: for ldp_vc, the proof types (cryptosuites) the credential is signed with.
    signingAlgValues: ({ proofType }) => [proofType ?? DEFAULT_LD_PROOF_TYPE],
    // Appendix A.1.2.1: credential_definition with the credential's @context and type.
    describe: ({ credentialType }) => ({
      credential_definition: {
        '@context': ldContexts([VC_V1_CONTEXT]),
        type: ['VerifiableCredential', credentialType],
      },
    }),
    legacyRequest(body, format) {
      const definition = isObject(body.credential_definition) ? body.credential_definition : undefined
      const types = definition?.type ?? (isObject(body.credential_definition) ? undefined : body.types)
      if (!Array.isArray(types))
        return `format ${format} needs credential_definition.type (draft 13 Appendix A.1.2)`
      return { shown: `with type ${JSON.stringify(types)}`, names: (t) => types.includes(t.credentialType) }
    },
    statusEntry: (allocation) => allocation.bitstring,
    sign: signLdVc,
  },
}
