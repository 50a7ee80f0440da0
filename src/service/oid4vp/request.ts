import { AUTHORIZATION_REQUEST_SCHEME, SIOP_AUDIENCE } from '../../shared/wire.ts'
import type { PublicUrls } from '../util/urls.ts'
import { difDefinition } from '../verification/definition.ts'
import { AUTH_REQUEST_SCOPE, type RequestInput } from '../verification/service.ts'
import { type Oid4vpProfile, type RequestObjectSigner, requestObjectSigner } from './profile.ts'
import { peResponses } from './responses.ts'

// The authorization request of a verification session, in the profile docs/interface.md shows
// (section 2.7): OpenID4VP draft 20, client_id scheme `did`, request object by reference (`request_uri`,
// RFC 9101 §5.2), response_mode direct_post, DIF Presentation Exchange. A profile is this small module;
// the relying-party API (verification/) asks it for the request and never builds protocol messages itself.
// The response half (vp_token and presentation_submission, their schema and checks) is responses.ts.

export class PresentationExchangeRequests implements Oid4vpProfile<string> {
  readonly submissionFormat = peResponses.submissionFormat
  readonly parseResponse = peResponses.parseResponse
  readonly verify = peResponses.verify

  constructor(
    private readonly urls: PublicUrls,
    /** Signs the request object; app.ts may hand in a wrapping one (profile.ts). */
    private readonly signer: RequestObjectSigner = requestObjectSigner,
  ) {}

  async build({ tenantId, sessionId, definition, nonce, state, verifier, now, expiresAt }: RequestInput) {
    if (!definition) throw new Error('a pe session needs its presentation definition')
    const responseUri = this.urls.verifierResponse(tenantId, sessionId)
    const request = {
      iss: verifier.did,
      aud: SIOP_AUDIENCE,
      // No client_id_scheme (gone in OpenID4VP 1.0; a did: client_id says it) and no `scope`: the signed
      // request object wins over the link's parameters (RFC 9101 §6.3), and 1.0 §5.1 allows exactly one of
      // dcql_query, presentation_definition or a scope naming one. The link keeps section 2.7's scope=openid.
      client_id: verifier.did,
      response_type: 'vp_token',
      response_mode: 'direct_post',
      response_uri: responseUri,
      nonce,
      state,
      presentation_definition: difDefinition(definition),
      iat: Math.floor(now / 1000),
      nbf: Math.floor(now / 1000),
      exp: Math.floor(expiresAt / 1000),
      jti: sessionId,
    }
    const requestJwt = this.signer.sign(
      tenantId,
      request,
      { alg: verifier.alg, privateKey: verifier.privateKey, header: { kid: verifier.kid } },
      now,
    )
    // Section 2.7's link, exactly: the request object by reference plus the parameters the interface shows.
    const link = new URLSearchParams({
      client_id: verifier.did,
      redirect_uri: responseUri,
      request_uri: this.urls.verifierRequest(tenantId, sessionId),
      response_mode: 'direct_post',
      response_type: 'vp_token',
      scope: AUTH_REQUEST_SCOPE,
    })
    return {
      request,
      requestJwt,
      responseKey: null,
      link: `${AUTHORIZATION_REQUEST_SCHEME}://?${link.toString().replaceAll('+', '%20')}`,
    }
  }
}
