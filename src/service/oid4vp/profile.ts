import type { KeyObject } from 'node:crypto'
import type { JwsAlg } from '../../shared/did-key.ts'
import { signJws } from '../../shared/jws.ts'
import { REQUEST_OBJECT_TYP } from '../../shared/wire.ts'
import type { SessionRecord } from '../store/index.ts'
import type { ResponseContext, Verdict } from '../verification/checks.ts'
import type { AuthorizationRequests } from '../verification/service.ts'

// An OpenID4VP profile as one object (docs/design.md): it builds a session's request (the
// AuthorizationRequests the relying-party API asks), parses the wallet's response with its schema
// (oid4vp/responses.ts) and verifies it. `pe` is oid4vp/request.ts (draft 20, Presentation Exchange), `dcql`
// is oid4vp/request-v1.ts (OpenID4VP 1.0). Oid4vpService runs the steps every profile shares around them.

/** A response's presentations as its profile reads them. */
export interface PresentationResponse<T = unknown> {
  /** pe: the VP JWT; dcql: the object keyed by credential query id (OpenID4VP 1.0 §8.1). */
  vpToken: T
  /**
   * How the wallet mapped its presentations to the query: pe's presentation_submission, dcql's credential
   * query ids. The relying party's PresentationSubmission shows it once the response is verified.
   */
  mapping: Record<string, unknown>
}

export interface Oid4vpProfile<T = unknown> extends AuthorizationRequests {
  /** The relying party's PresentationSubmissionFormat of a verified response. */
  readonly submissionFormat: 'jwt_vp' | 'dcql'
  /** The profile's response parameters, checked against its schema: 400 invalid_request when they do not fit. */
  parseResponse(params: Record<string, unknown>): PresentationResponse<T>
  /** The credential pipeline's verdict on the presentations, held to what `session` asked. */
  verify(
    response: PresentationResponse<T>,
    session: SessionRecord,
    context: ResponseContext,
  ): Promise<Verdict>
}

/** The key a request object is signed with and the JOSE header members naming it (`kid` or `x5c`). */
export interface RequestSigningKey {
  alg: JwsAlg
  privateKey: KeyObject
  header: Record<string, unknown>
}

/**
 * Signs a request object (RFC 9101 §4, typ oauth-authz-req+jwt): the one point where a request's claims
 * meet its key, for both profiles. app.ts may hand the builders a wrapping signer (the wallet test plans'
 * faulty verifier); the claims the session keeps are the builder's either way.
 */
export interface RequestObjectSigner {
  sign(tenantId: string, claims: Record<string, unknown>, key: RequestSigningKey, now: number): string
}

/** The genuine signer: what it is given, with the given key. */
export const requestObjectSigner: RequestObjectSigner = {
  sign: (_tenantId, claims, key) =>
    signJws({ alg: key.alg, typ: REQUEST_OBJECT_TYP, ...key.header }, claims, key.privateKey),
}
