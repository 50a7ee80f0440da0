// Fixed strings of the protocols on the wire, one copy for the service, wallet, client, bench, harness,
// steps and tests. Values come from the specs named beside them; test/shared/wire.test.ts pins each to its literal
// so a slip here cannot hide behind tests that use the constant on both sides.

/** OpenID4VCI pre-authorized code grant type (OpenID4VCI §3.5, the offer's `grants` key and `grant_type`). */
export const PRE_AUTHORIZED_GRANT = 'urn:ietf:params:oauth:grant-type:pre-authorized_code'
/** RFC 6749 §4.1.3; OpenID4VCI 1.0 §4.1.1 names the offer's grant the same. */
export const AUTHORIZATION_CODE_GRANT = 'authorization_code'
/** RFC 9126 §2.2: the prefix of a pushed request's request_uri. */
export const PAR_REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:'
/** OpenID4VCI 1.0 §5.1.1: the authorization_details type of a credential. */
export const OPENID_CREDENTIAL = 'openid_credential'

/** JOSE `typ` of an OpenID4VCI key proof (OpenID4VCI Appendix F.1). */
export const PROOF_TYP = 'openid4vci-proof+jwt'
/** JOSE `typ` of a signed authorization request object (RFC 9101 §4, JAR). */
export const REQUEST_OBJECT_TYP = 'oauth-authz-req+jwt'
/** Format identifier and JOSE `typ` of an SD-JWT VC (SD-JWT VC §3.2.1; OpenID4VCI 1.0 Appendix A.3). */
export const SD_JWT_VC_TYP = 'dc+sd-jwt'
/** The `typ` SD-JWT VC drafts before 06 used; still read, never written. */
export const SD_JWT_VC_TYP_LEGACY = 'vc+sd-jwt'
/** JOSE `typ` of a key-binding JWT (SD-JWT, RFC 9901 §4.3). */
export const KB_JWT_TYP = 'kb+jwt'
/** JOSE `typ` of a Token Status List JWT (IETF Token Status List §5.1). */
export const STATUS_LIST_JWT_TYP = 'statuslist+jwt'
/** JOSE `typ` of a plain JWT: credentials, presentations, status lists (RFC 7519 §5.1). */
export const JWT_TYP = 'JWT'

/** Media type of a request object (RFC 9101 §10.2). */
export const REQUEST_OBJECT_MEDIA_TYPE = `application/${REQUEST_OBJECT_TYP}`
/** Form bodies: the token request (RFC 6749 §4.1.3) and direct_post (OpenID4VP §7.2). */
export const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded'
/** Problem details, the relying-party API's errors (RFC 9457). */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json'
/** A JWT-secured W3C credential (VC-JOSE-COSE). */
export const VC_JWT_MEDIA_TYPE = 'application/vc+jwt'
/** A status list credential as a JWT (IETF Token Status List). */
export const STATUS_LIST_JWT_MEDIA_TYPE = 'application/statuslist+jwt'
/** Any JWT (RFC 7519 §10.3.1). */
export const JWT_MEDIA_TYPE = 'application/jwt'
/** A PEM certificate (a trust anchor to configure), as browsers and tools name it. */
export const PEM_MEDIA_TYPE = 'application/x-pem-file'

/** `aud` of a request object for a self-issued wallet (SIOPv2 §9, OpenID4VP §5). */
export const SIOP_AUDIENCE = 'https://self-issued.me/v2'

/** Deep-link scheme of a credential offer (OpenID4VCI §4.1); the service's default, configurable. */
export const CREDENTIAL_OFFER_SCHEME = 'openid-credential-offer'
/** Deep-link scheme of an authorization request (OpenID4VP draft 20 §5 era, the one docs/interface.md shows). */
export const AUTHORIZATION_REQUEST_SCHEME = 'openid-vp'
/** Deep-link scheme of an OpenID4VP 1.0 authorization request (OpenID4VP 1.0 §13.1.2). */
export const OPENID4VP_SCHEME = 'openid4vp'
