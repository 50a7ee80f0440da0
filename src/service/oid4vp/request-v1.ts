import { generateKeyPairSync, type JsonWebKey, randomBytes } from 'node:crypto'
import { formatOf } from '../../formats/registry.ts'
import { parseClientId } from '../../shared/client-id-prefix.ts'
import { JWS_ALGS } from '../../shared/did-key.ts'
import { OPENID4VP_SCHEME, SIOP_AUDIENCE } from '../../shared/wire.ts'
import type { ResolvedVerificationTemplate } from '../config/schema.ts'
import type { ConfiguredVerifier, IssuerCertificates } from '../crypto/issuer-certificates.ts'
import type { TenantKeys } from '../crypto/tenant-keys.ts'
import type { RequestObjectClaims, SessionRecord } from '../store/index.ts'
import { type Clock, systemClock } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import type { BuiltRequest, RequestInput } from '../verification/service.ts'
import { type ClientIdPrefix, VerifierIdentities } from './identity.ts'
import {
  type Oid4vpProfile,
  type RequestObjectSigner,
  type RequestSigningKey,
  requestObjectSigner,
} from './profile.ts'
import { dcqlResponses } from './responses.ts'

// The authorization request of a `dcql` session: OpenID4VP 1.0 Final. The verifier names itself with a
// client identifier prefix (§5.9.3): `decentralized_identifier:` (request object signed by the tenant's
// did:key), `x509_san_dns:` / `x509_hash:` (signed by the tenant's P-256 key, its x5c chain from the tenant's
// test CA), or `redirect_uri:` (unsigned, every parameter in the link). The request object goes by reference
// (§5.7, RFC 9101 §5.2), fetched by GET or, with request_uri_method=post, by a POST carrying the wallet's
// nonce (§5.10). response_mode direct_post or direct_post.jwt (§8.3): the latter publishes a fresh ephemeral
// P-256 key per session in client_metadata.jwks, whose private half decrypts the wallet's JWE.

/** Content encryption the verifier accepts for direct_post.jwt (HAIP §5: A128GCM and A256GCM). */
export const RESPONSE_ENC_VALUES = ['A128GCM', 'A256GCM'] as const
/** The JWE key management algorithm of direct_post.jwt (HAIP: ECDH-ES on P-256). */
export const RESPONSE_ALG = 'ECDH-ES'

type Settings = NonNullable<ResolvedVerificationTemplate['dcql']>

/** Appendix B: the algorithms this verifier accepts, per format it asks for. */
function vpFormatsSupported(format: Settings['format']) {
  return formatOf(format).vpFormatsSupported({ credential: JWS_ALGS, holder: JWS_ALGS })
}

/** A fresh ECDH-ES key for one session's encrypted response; the private JWK is kept with the session. */
function ephemeralKey(): { publicJwk: JsonWebKey; privateJwk: JsonWebKey } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const kid = randomBytes(12).toString('base64url')
  const pub = publicKey.export({ format: 'jwk' })
  return {
    publicJwk: { ...pub, kid, use: 'enc', alg: RESPONSE_ALG },
    privateJwk: { ...privateKey.export({ format: 'jwk' }), kid },
  }
}

/** The prefix a stored client_id was built with (its text up to the first ':'). */
export function prefixOf(clientId: string): ClientIdPrefix {
  return parseClientId(clientId).prefix as ClientIdPrefix
}

export class Openid4vp1Requests implements Oid4vpProfile<Record<string, unknown>> {
  // The response half (vp_token keyed by credential query id, its schema and checks) is responses.ts.
  readonly submissionFormat = dcqlResponses.submissionFormat
  readonly parseResponse = dcqlResponses.parseResponse
  readonly verify = dcqlResponses.verify

  /** How this verifier names itself per client identifier prefix: shared with the DC API requests (dc-api.ts). */
  readonly identities: VerifierIdentities

  constructor(
    private readonly deps: {
      urls: PublicUrls
      tenantKeys: TenantKeys
      certificates: IssuerCertificates
      /** Tenants whose configuration names their own verifier chain (tenants[].verifierCertificate). */
      configured?: ReadonlyMap<string, ConfiguredVerifier>
      /** Signs request objects; app.ts may hand in a wrapping one (profile.ts). Default: the genuine one. */
      signer?: RequestObjectSigner
      /** The time a request object re-signed for request_uri_method=post is dated at; default the system's. */
      clock?: Clock
    },
  ) {
    this.identities = new VerifierIdentities(deps)
  }

  /** The request object as the wallet gets it, signed. */
  private sign(
    tenantId: string,
    signer: RequestSigningKey,
    claims: Record<string, unknown>,
    now: number,
  ): string {
    return (this.deps.signer ?? requestObjectSigner).sign(tenantId, claims, signer, now)
  }

  async build(input: RequestInput): Promise<BuiltRequest> {
    const { tenantId, sessionId, nonce, state, verifier, now, expiresAt, dcqlQuery, settings } = input
    if (!dcqlQuery || !settings) throw new Error('a dcql session needs its dcql_query and settings')
    const responseUri = this.deps.urls.verifierResponse(tenantId, sessionId)
    const { clientId, signer } = await this.identities.of(settings.clientIdPrefix, tenantId, {
      responseUri,
      verifier,
    })
    const encrypted = settings.responseMode === 'direct_post.jwt'
    const responseKey = encrypted ? ephemeralKey() : undefined
    const clientMetadata = {
      vp_formats_supported: vpFormatsSupported(settings.format),
      ...(responseKey && {
        jwks: { keys: [responseKey.publicJwk] },
        encrypted_response_enc_values_supported: [...RESPONSE_ENC_VALUES],
      }),
    }
    const request: RequestObjectClaims = {
      client_id: clientId,
      response_type: 'vp_token',
      response_mode: settings.responseMode,
      response_uri: responseUri,
      nonce,
      state,
      dcql_query: dcqlQuery,
      client_metadata: clientMetadata,
      ...(signer && {
        aud: SIOP_AUDIENCE,
        iat: Math.floor(now / 1000),
        exp: Math.floor(expiresAt / 1000),
        jti: sessionId,
      }),
    }
    const link = new URLSearchParams({ client_id: clientId })
    if (signer) {
      link.set('request_uri', this.deps.urls.verifierRequest(tenantId, sessionId))
      if (settings.requestUriMethod === 'post') link.set('request_uri_method', 'post')
    } else {
      // redirect_uri: no request object (it could not be signed); every parameter travels in the link.
      for (const [name, value] of Object.entries(request)) {
        if (name !== 'client_id') link.set(name, typeof value === 'string' ? value : JSON.stringify(value))
      }
    }
    return {
      request,
      requestJwt: signer ? this.sign(tenantId, signer, request, now) : '',
      link: `${OPENID4VP_SCHEME}://?${link.toString().replaceAll('+', '%20')}`,
      responseKey: responseKey?.privateJwk ?? null,
    }
  }

  /**
   * request_uri_method=post (§5.10): the request object signed anew with the wallet's nonce, so the wallet
   * knows it is fresh. Only for sessions whose request goes by reference.
   */
  async requestObjectFor(session: SessionRecord, walletNonce: string | undefined): Promise<string> {
    const { signer } = await this.identities.of(prefixOf(session.request.client_id), session.tenantId, {
      responseUri: session.request.response_uri,
    })
    if (!signer) throw new Error('a redirect_uri request has no request object')
    return this.sign(
      session.tenantId,
      signer,
      { ...session.request, ...(walletNonce !== undefined && { wallet_nonce: walletNonce }) },
      (this.deps.clock ?? systemClock).now(),
    )
  }
}
