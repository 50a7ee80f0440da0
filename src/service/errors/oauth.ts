import type { FastifyError, FastifyInstance } from 'fastify'
import { headerText } from '../../shared/oauth/dpop.ts'
import { FORM_MEDIA_TYPE } from '../../shared/wire.ts'
import { clip, ECHO_LIMITS } from '../util/echo.ts'
import { JsonLimitError } from '../util/json-limits.ts'

// Wallet-facing errors: `{error, error_description}` with the OAuth 2.0 / OpenID4VCI / OpenID4VP codes,
// never problem+json (ARCHITECTURE.md, "two error families").

export const OAUTH_ERRORS = {
  invalid_request: 400,
  /** RFC 9101 §7 / RFC 9126 §4: a request_uri that is unknown, expired or used. */
  invalid_request_uri: 400,
  invalid_grant: 400,
  /** RFC 6749 §4.1.2.1. */
  unsupported_response_type: 400,
  access_denied: 400,
  invalid_scope: 400,
  /** RFC 9396 §5 (OpenID4VCI 1.0 §5.1.1). */
  invalid_authorization_details: 400,
  /** RFC 9449 §5 and §7.1 (401 at a protected resource: the error's status given with it). */
  invalid_dpop_proof: 400,
  use_dpop_nonce: 400,
  unsupported_grant_type: 400,
  invalid_client: 401,
  invalid_token: 401,
  invalid_credential_request: 400,
  unknown_credential_configuration: 400,
  unknown_credential_identifier: 400,
  invalid_proof: 400,
  invalid_nonce: 400,
  invalid_encryption_parameters: 400,
  credential_request_denied: 400,
  issuance_pending: 400,
  invalid_transaction_id: 400,
  invalid_notification_id: 400,
  invalid_notification_request: 400,
  invalid_presentation: 400,
  session_closed: 409,
  session_expired: 410,
  not_found: 404,
  /** RFC 8628 §3.5's "slow down", with 429 and Retry-After (RFC 6585 §4): the client's rate limit. */
  slow_down: 429,
  server_error: 500,
} as const

export type OAuthErrorCode = keyof typeof OAUTH_ERRORS

export class OAuthError extends Error {
  override name = 'OAuthError'
  readonly status: number
  /** What the wallet is told: bounded, since descriptions quote what it sent (util/echo.ts). */
  readonly description: string
  constructor(
    readonly error: OAuthErrorCode,
    description: string,
    readonly extra: {
      headers?: Record<string, string>
      body?: Record<string, unknown>
      status?: number
    } = {},
  ) {
    const bounded = clip(description, ECHO_LIMITS.maxDescription)
    super(`${error}: ${bounded}`)
    this.description = bounded
    // A protected resource answers a DPoP error 401 with its challenge (RFC 9449 §7.1), a server 400 (§5).
    this.status = extra.status ?? OAUTH_ERRORS[error]
  }

  toBody(): Record<string, unknown> {
    return { error: this.error, error_description: this.description, ...this.extra.body }
  }
}

/** 401 with the RFC 6750 challenge; `error="invalid_token"` only when a token was presented. */
export function tokenError(description: string, presented: boolean): OAuthError {
  const challenge = presented
    ? `Bearer error="invalid_token", error_description="${headerText(description)}"`
    : 'Bearer'
  return new OAuthError('invalid_token', description, { headers: { 'WWW-Authenticate': challenge } })
}

// Fastify's own client errors on wallet-facing routes become `invalid_request` in the OAuth error shape.
function toOAuth(error: FastifyError): OAuthError {
  if (error instanceof OAuthError) return error
  // A JSON body, form field or token payload beyond util/json-limits.ts: malformed input (RFC 6749 §5.2).
  if (error instanceof JsonLimitError) return new OAuthError('invalid_request', error.message)
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new OAuthError('invalid_request', 'request body too large')
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new OAuthError(
      'invalid_request',
      `unsupported Content-Type: token and direct_post take ${FORM_MEDIA_TYPE}, the other endpoints application/json`,
    )
  }
  if (error.validation || error.code?.startsWith('FST_ERR_CTP'))
    return new OAuthError('invalid_request', error.message)
  return new OAuthError('server_error', 'an internal error occurred')
}

/** Whether a Content-Type names a form body (the token request and direct_post take only forms). */
export const isForm = (contentType: string | undefined) =>
  (contentType ?? '').toLowerCase().startsWith(FORM_MEDIA_TYPE)

/** For an encapsulated wallet-facing plugin: OAuth-shaped errors and `no-store` on every answer. */
export function installOAuthErrors(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const oauth = toOAuth(error)
    if (oauth.status >= 500) request.log.error({ err: error }, 'unhandled error')
    return reply
      .code(oauth.status)
      .headers({ 'Cache-Control': 'no-store', Pragma: 'no-cache', ...oauth.extra.headers })
      .send(oauth.toBody())
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (!reply.hasHeader('Cache-Control')) reply.header('Cache-Control', 'no-store')
    done(null, payload)
  })
}
