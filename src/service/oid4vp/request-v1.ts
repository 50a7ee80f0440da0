import { generateKeyPairSync, type JsonWebKey, type KeyObject, randomBytes } from 'node:crypto'
import { formatOf } from '../../formats/registry.ts'
import { JWS_ALGS } from '../../shared/did-key.ts'
import { signJws } from '../../shared/jws.ts'
import { OPENID4VP_SCHEME, REQUEST_OBJECT_TYP, SIOP_AUDIENCE } from '../../shared/wire.ts'
import type { ResolvedVerificationTemplate } from '../config/schema.ts'
import type { ConfiguredVerifier, IssuerCertificates } from '../crypto/issuer-certificates.ts'
import type { IssuerKey, IssuerKeys } from '../crypto/issuer-keys.ts'
import { type FaultRegistry, isPresentationFault, type PresentationFault } from '../faults/index.ts'
import {
  foreignResponseUri,
  presentationFault,
  requestObjectFault,
  UNKNOWN_PREFIX,
  unknownPrefixClientId,
} from '../faults/requests.ts'
import type { RequestObjectClaims, SessionRecord } from '../store/index.ts'
import { type Clock, systemClock } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import type { AuthorizationRequests, BuiltRequest, RequestInput } from '../verification/service.ts'

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
type Prefix = Settings['clientIdPrefix']

/** How a request object is signed: the key and the JOSE header naming it. */
interface Signer {
  alg: IssuerKey['alg']
  privateKey: KeyObject
  header: Record<string, unknown>
}

/** Appendix B: the algorithms this verifier accepts, per format it asks for. */
function vpFormatsSupported(format: Settings['format']) {
  return formatOf(format).vpFormatsSupported(JWS_ALGS)
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

/**
 * The prefix a stored client_id was built with (its text up to the first ':'); the unknown prefix of the
 * unknown-client-id-prefix fault is built like decentralized_identifier.
 */
function prefixOf(clientId: string): Prefix {
  const prefix = clientId.slice(0, clientId.indexOf(':'))
  return (prefix === UNKNOWN_PREFIX ? 'decentralized_identifier' : prefix) as Prefix
}

export class Openid4vp1Requests implements AuthorizationRequests {
  constructor(
    private readonly deps: {
      urls: PublicUrls
      issuerKeys: IssuerKeys
      certificates: IssuerCertificates
      /** Tenants whose configuration names their own verifier chain (tenants[].verifierCertificate). */
      configured?: ReadonlyMap<string, ConfiguredVerifier>
      /** Wallet test plans only: the tenants whose request breaks a rule on purpose (faults/requests.ts). */
      faults?: FaultRegistry
      /** The time a request object re-signed for request_uri_method=post is dated at; default the system's. */
      clock?: Clock
    },
  ) {}

  /** The client identifier and the signer of `prefix` for this tenant (none for redirect_uri). */
  private async identity(
    prefix: Prefix,
    tenantId: string,
    responseUri: string,
    verifier: IssuerKey,
  ): Promise<{ clientId: string; signer?: Signer }> {
    if (prefix === 'redirect_uri') return { clientId: `redirect_uri:${responseUri}` }
    if (prefix === 'decentralized_identifier') {
      return {
        clientId: `decentralized_identifier:${verifier.did}`,
        signer: { alg: verifier.alg, privateKey: verifier.privateKey, header: { kid: verifier.kid } },
      }
    }
    // HAIP: x509 request objects are ES256: the configured chain's key, or the tenant's P-256 key under a
    // leaf of its test CA.
    const configured = this.deps.configured?.get(tenantId)
    const key = configured ? undefined : await this.deps.issuerKeys.forTenant(tenantId, 'ES256')
    const chain =
      configured?.chain ?? (await this.deps.certificates.verifierChain(tenantId, key as IssuerKey))
    const privateKey = configured?.privateKey ?? (key as IssuerKey).privateKey
    if (prefix === 'x509_san_dns' && chain.dnsName === '') {
      throw new Error(
        `the verifier certificate of tenant ${tenantId} names no dNSName: x509_san_dns cannot be used`,
      )
    }
    const clientId = prefix === 'x509_san_dns' ? `x509_san_dns:${chain.dnsName}` : `x509_hash:${chain.hash}`
    return { clientId, signer: { alg: 'ES256', privateKey, header: { x5c: chain.x5c } } }
  }

  /** The request object as the wallet gets it: signed, with the tenant's presentation fault (if any) applied. */
  private sign(
    signer: Signer,
    claims: Record<string, unknown>,
    fault: PresentationFault | undefined,
    now: number,
  ): string {
    const shown = requestObjectFault(fault, claims, signer, now)
    return signJws(
      { alg: signer.alg, typ: REQUEST_OBJECT_TYP, ...signer.header },
      shown.claims,
      shown.privateKey,
    )
  }

  async build(input: RequestInput): Promise<BuiltRequest> {
    const { tenantId, sessionId, nonce, state, verifier, now, expiresAt, dcqlQuery, settings } = input
    if (!dcqlQuery || !settings) throw new Error('a dcql session needs its dcql_query and settings')
    const fault = presentationFault(this.deps.faults, tenantId, {
      profile: 'dcql',
      prefix: settings.clientIdPrefix,
    })
    const publicResponseUri = this.deps.urls.verifierResponse(tenantId, sessionId)
    // unknown-client-id-prefix: signed like decentralized_identifier, whatever the template's prefix.
    const prefix = fault === 'unknown-client-id-prefix' ? 'decentralized_identifier' : settings.clientIdPrefix
    const identity = await this.identity(prefix, tenantId, publicResponseUri, verifier)
    const { signer } = identity
    const clientId =
      fault === 'unknown-client-id-prefix' ? unknownPrefixClientId(identity.clientId) : identity.clientId
    // response-uri-foreign-origin: a redirect_uri client id keeps naming the public response_uri.
    const responseUri =
      fault === 'response-uri-foreign-origin' && this.deps.faults
        ? foreignResponseUri(this.deps.faults, this.deps.urls.absolute(''), publicResponseUri, prefix)
        : publicResponseUri
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
      const { nonce: _nonce, ...withoutNonce } = request
      // nonce-missing (OpenID4VP 1.0 §5.2): the link then carries no nonce; the session keeps one to check.
      for (const [name, value] of Object.entries(fault === 'nonce-missing' ? withoutNonce : request)) {
        if (name !== 'client_id') link.set(name, typeof value === 'string' ? value : JSON.stringify(value))
      }
    }
    return {
      request,
      requestJwt: signer ? this.sign(signer, request, fault, now) : '',
      link: `${OPENID4VP_SCHEME}://?${link.toString().replaceAll('+', '%20')}`,
      responseKey: responseKey?.privateJwk ?? null,
    }
  }

  /**
   * request_uri_method=post (§5.10): the request object signed anew with the wallet's nonce, so the wallet
   * knows it is fresh. Only for sessions whose request goes by reference.
   */
  async requestObjectFor(session: SessionRecord, walletNonce: string | undefined): Promise<string> {
    const prefix = prefixOf(session.request.client_id)
    const verifier = await this.deps.issuerKeys.forTenant(session.tenantId, 'EdDSA')
    const { signer } = await this.identity(prefix, session.tenantId, session.request.response_uri, verifier)
    if (!signer) throw new Error('a redirect_uri request has no request object')
    // The fault was judged applicable when the session opened; re-signing applies it again.
    const fault = this.deps.faults?.fault(session.tenantId)
    return this.sign(
      signer,
      { ...session.request, ...(walletNonce !== undefined && { wallet_nonce: walletNonce }) },
      fault && isPresentationFault(fault) ? fault : undefined,
      (this.deps.clock ?? systemClock).now(),
    )
  }
}
