// Wallet-facing errors: `{error, error_description}` with the OAuth 2.0 / OpenID4VCI codes, never
// problem+json (ARCHITECTURE.md, "two error families").

export const OAUTH_ERRORS = {
  invalid_request: 400,
  invalid_grant: 400,
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
  not_found: 404,
  server_error: 500,
} as const

export type OAuthErrorCode = keyof typeof OAUTH_ERRORS

export class OAuthError extends Error {
  override name = 'OAuthError'
  readonly status: number
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly extra: { headers?: Record<string, string>; body?: Record<string, unknown> } = {},
  ) {
    super(`${error}: ${description}`)
    this.status = OAUTH_ERRORS[error]
  }

  toBody(): Record<string, unknown> {
    return { error: this.error, error_description: this.description, ...this.extra.body }
  }
}

/** 401 with the RFC 6750 challenge; `error="invalid_token"` only when a token was presented. */
export function tokenError(description: string, presented: boolean): OAuthError {
  const challenge = presented
    ? `Bearer error="invalid_token", error_description="${description.replaceAll('"', "'")}"`
    : 'Bearer'
  return new OAuthError('invalid_token', description, { headers: { 'WWW-Authenticate': challenge } })
}
