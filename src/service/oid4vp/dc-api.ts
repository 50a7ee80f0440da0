import { randomUUID } from 'node:crypto'
import {
  DC_API_PROTOCOLS,
  type DcApiRequest,
  type DcApiResponseMode,
  type GeneralJwsSigner,
  signGeneralJws,
} from '../../shared/dc-api.ts'
import { SIOP_AUDIENCE } from '../../shared/wire.ts'
import { DEFAULT_MULTISIGNED_PREFIXES } from '../config/schema.ts'
import type { SessionRecord } from '../store/index.ts'
import type { ClientIdPrefix, VerifierIdentities } from './identity.ts'
import { type RequestObjectSigner, requestObjectSigner } from './profile.ts'
import { prefixOf } from './request-v1.ts'

// A dcql session's request over the W3C Digital Credentials API (OpenID4VP 1.0 Appendix A), the entry the
// relying party's page hands `navigator.credentials.get({digital: {requests: [entry]}})`. It asks what the
// session's QR request asks (the same nonce, dcql_query and client_metadata, so under direct_post.jwt the
// same ephemeral response key), answered through the API instead of to a response_uri (A.2: response_mode
// dc_api, or dc_api.jwt for an encrypted answer); no state (A.2: "not defined for the DC API"). Three
// protections (A.3), fixed per session in `policy.dcApi`:
//   unsigned     the parameters as `data`, no client_id (A.2: "MUST be omitted"), no expected_origins: the
//                origin the browser hands the wallet names the verifier
//   signed       `data.request`: a request object (JWS Compact Serialization, typ oauth-authz-req+jwt) with
//                client_id and expected_origins (A.2: REQUIRED when signed), signed as the QR request object
//                is under the template's client identifier prefix (identity.ts)
//   multisigned  `data.request`: a JWS JSON Serialization (A.3.2), one signature per prefix; client_id is in
//                each signature's protected header, never in the payload
// A signed request is signed when it is fetched (like the request object of request_uri_method=post), dated
// then and valid until the session ends.

/** Builds a session's DC API request; services.ts may hand Oid4vpService a wrapping one (wallet test plans). */
export interface DcApiRequests {
  build(session: SessionRecord, now: number): Promise<DcApiRequest>
}

/** A.2: the DC API response mode of a session's response mode (the answer comes back through the API). */
export function dcApiResponseModeOf(session: SessionRecord): DcApiResponseMode {
  return session.request.response_mode === 'direct_post.jwt' ? 'dc_api.jwt' : 'dc_api'
}

/** The genuine builder. */
export class Openid4vpDcApiRequests implements DcApiRequests {
  constructor(
    private readonly deps: {
      /** How the verifier names itself per prefix: the same identities as its QR request objects. */
      identities: VerifierIdentities
      /** Signs a compact request object; default the genuine one (profile.ts). */
      signer?: RequestObjectSigner
    },
  ) {}

  async build(session: SessionRecord, now: number): Promise<DcApiRequest> {
    const dcApi = session.policy.dcApi
    if (!dcApi) throw new Error(`verification session ${session.id} offers no DC API request`)
    const { request } = session
    // A.2's parameters, in the order the appendix's example lists them.
    const params = {
      response_type: 'vp_token',
      response_mode: dcApiResponseModeOf(session),
      nonce: request.nonce,
      dcql_query: request.dcql_query,
      client_metadata: request.client_metadata,
    }
    const protocol = DC_API_PROTOCOLS[dcApi.request]
    if (dcApi.request === 'unsigned') return { protocol, data: params }
    const claims = {
      expected_origins: [...dcApi.origins],
      ...params,
      aud: SIOP_AUDIENCE,
      iat: Math.floor(now / 1000),
      exp: Math.floor(session.expiresAt / 1000),
      // A fresh JWT each fetch: a wallet that remembers jti values takes every one.
      jti: randomUUID(),
    }
    if (dcApi.request === 'signed') {
      const { clientId, signer } = await this.identity(prefixOf(request.client_id), session)
      const jwt = (this.deps.signer ?? requestObjectSigner).sign(
        session.tenantId,
        { client_id: clientId, ...claims },
        signer,
        now,
      )
      return { protocol, data: { request: jwt } }
    }
    const prefixes = dcApi.prefixes ?? DEFAULT_MULTISIGNED_PREFIXES
    const signers = await Promise.all(
      prefixes.map(async (prefix): Promise<GeneralJwsSigner> => {
        const { clientId, signer } = await this.identity(prefix, session)
        // A.3.2: client_id only in the protected header of its own signature.
        return {
          alg: signer.alg,
          privateKey: signer.privateKey,
          header: { ...signer.header, client_id: clientId },
        }
      }),
    )
    return { protocol, data: { request: signGeneralJws(claims, signers) } }
  }

  /** The client identifier and signer under `prefix`; a prefix that signs nothing cannot sign a request. */
  private async identity(prefix: ClientIdPrefix, session: SessionRecord) {
    const { clientId, signer } = await this.deps.identities.of(prefix, session.tenantId, {
      responseUri: session.request.response_uri,
    })
    if (!signer) {
      throw new Error(
        `verification session ${session.id}: ${prefix} signs nothing (OpenID4VP 1.0 §5.9.3), so its DC API request cannot be signed`,
      )
    }
    return { clientId, signer }
  }
}
