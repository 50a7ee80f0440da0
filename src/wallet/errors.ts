// Errors the simulated wallet raises. A WalletProtocolError is what the other side answered (or what the
// wallet found wrong in an answer): its message names the step, the HTTP status and the wire error, so a
// failing test says exactly what broke.
import { isObject } from '../shared/json.ts'
import { HttpLimitError, type HttpLimitKind } from './http.ts'

export type WalletStep =
  | 'offer'
  | 'metadata'
  // authorization code flow: the pushed authorization request (RFC 9126), the authorization response (RFC 6749
  // §4.1.2) and what led to it (the authorization endpoint, the user step)
  | 'par'
  | 'authorization'
  | 'token'
  | 'nonce'
  | 'credential'
  | 'deferred'
  | 'notification'
  | 'verify'
  // OpenID4VP: fetching and checking the request object, posting the authorization response
  | 'request'
  | 'response'

export interface WalletProtocolErrorDetails {
  step: WalletStep
  /** HTTP status of the answer; for 'verify' (and other checks of a 2xx answer) the status that carried it */
  status: number
  /** `error` of the `{error, error_description}` body, or of `WWW-Authenticate`, or a wallet-side code */
  error?: string | undefined
  errorDescription?: string | undefined
  /** the parsed answer body, when there was one */
  body?: unknown
  /** the `WWW-Authenticate` header of a 401 */
  wwwAuthenticate?: string | undefined
}

export class WalletProtocolError extends Error {
  override name = 'WalletProtocolError'
  readonly step: WalletStep
  readonly status: number
  readonly error: string | undefined
  readonly errorDescription: string | undefined
  readonly body: unknown
  readonly wwwAuthenticate: string | undefined

  constructor(details: WalletProtocolErrorDetails) {
    super(`${details.step}: ${details.status} ${details.error}: ${details.errorDescription}`)
    this.step = details.step
    this.status = details.status
    this.error = details.error
    this.errorDescription = details.errorDescription
    this.body = details.body
    this.wwwAuthenticate = details.wwwAuthenticate
  }
}

/** A problem on the wallet's side before anything went over the wire (bad deep link, missing tx code, …). */
export class WalletUsageError extends Error {
  override name = 'WalletUsageError'
}

/** `error="…"` and `error_description="…"` of a `WWW-Authenticate: Bearer …` header. */
export function parseWwwAuthenticate(header: string | undefined): {
  error?: string
  errorDescription?: string
} {
  if (!header) return {}
  const param = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(header)?.[1]
  const error = param('error')
  const errorDescription = param('error_description')
  return {
    ...(error !== undefined && { error }),
    ...(errorDescription !== undefined && { errorDescription }),
  }
}

/** The wallet-side `error` of each HTTP rule (http.ts) that ended a request. */
const LIMIT_ERRORS: Record<HttpLimitKind, string> = {
  timeout: 'timeout',
  body_too_large: 'response_too_large',
  redirect: 'redirect_not_followed',
}

/**
 * A request of `step` that got no usable answer: one of the wallet's HTTP rules ended it (a timeout, a body
 * over the cap, a redirect: its `error` names the rule, the description the limit and the origin), or the
 * network failed (`unreachable`, naming the URL as before).
 */
export function transportError(step: WalletStep, url: string, error: unknown): WalletProtocolError {
  if (error instanceof HttpLimitError) {
    return new WalletProtocolError({
      step,
      status: error.status,
      error: LIMIT_ERRORS[error.kind],
      errorDescription: error.message,
    })
  }
  return new WalletProtocolError({
    step,
    status: 0,
    error: 'unreachable',
    errorDescription: `${url}: ${error instanceof Error ? error.message : String(error)}`,
  })
}

/** Builds the error for a non-success answer from its status, body and headers. */
export function protocolError(
  step: WalletStep,
  status: number,
  body: unknown,
  wwwAuthenticate?: string | null,
): WalletProtocolError {
  const fromHeader = parseWwwAuthenticate(wwwAuthenticate ?? undefined)
  const error = isObject(body) && typeof body.error === 'string' ? body.error : fromHeader.error
  const errorDescription =
    isObject(body) && typeof body.error_description === 'string'
      ? body.error_description
      : (fromHeader.errorDescription ??
        (typeof body === 'string' && body.length > 0 ? body.slice(0, 500) : undefined))
  return new WalletProtocolError({
    step,
    status,
    error,
    errorDescription,
    body,
    wwwAuthenticate: wwwAuthenticate ?? undefined,
  })
}

/**
 * The request reuses the nonce of a request this wallet already answered with a vp_token: answering would
 * hand out a presentation for a nonce that is no longer fresh (OpenID4VP 1.0 §14.1, replay).
 */
export function replayedNonce(
  status: number,
  nonce: string,
  error = 'invalid_request_object',
): WalletProtocolError {
  return new WalletProtocolError({
    step: 'request',
    status,
    error,
    errorDescription: `nonce (OpenID4VP 1.0 §14.1): this wallet already answered a request with the nonce ${JSON.stringify(nonce)}; a verifier must use a fresh nonce per request, and a reused one is how a presentation is replayed. Nothing was sent.`,
  })
}
