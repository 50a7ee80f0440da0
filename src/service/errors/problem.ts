// Relying-party API errors: RFC 9457 problem details with a stable machine-readable `code`.
// Clients branch on `code`, never on `title` or `detail`.

export interface ProblemBody {
  type: string
  title: string
  status: number
  detail: string
  code: string
  /** Field-level causes of a validation failure. */
  errors?: { field: string; message: string }[]
}

/** Every problem code the relying-party API can answer, with its HTTP status and title. */
export const PROBLEMS = {
  malformed_json: [400, 'Malformed JSON body'],
  json_limit_exceeded: [400, 'JSON nested too deep or too large'],
  validation_failed: [400, 'Request does not match the schema'],
  invalid_webhook: [400, 'Webhook settings not accepted'],
  missing_header: [400, 'Required header missing'],
  invalid_cursor: [400, 'Invalid pagination cursor'],
  invalid_credential: [400, 'Invalid credential object'],
  unauthenticated: [401, 'Authentication required'],
  invalid_credentials: [401, 'Invalid API key credentials'],
  invalid_token: [401, 'Invalid access token'],
  token_expired: [401, 'Access token expired'],
  role_forbidden: [403, 'Role not allowed'],
  template_not_allowed: [403, 'Template not allowed for this key'],
  process_not_linked: [403, 'Process not linked to this application'],
  session_not_linked: [403, 'Session not linked to this application'],
  not_found: [404, 'Not found'],
  template_not_found: [404, 'Template not found'],
  process_not_found: [404, 'Issuance process not found'],
  session_not_found: [404, 'Verification session not found'],
  api_key_not_found: [404, 'API key not found'],
  credential_not_found: [404, 'Credential not found in this process'],
  webhook_delivery_not_found: [404, 'Webhook delivery not found'],
  conflict: [409, 'Conflict'],
  config_managed: [409, 'Managed by the configuration file'],
  template_in_use: [409, 'Template in use'],
  process_not_pending: [409, 'Process is no longer PENDING'],
  process_not_issued: [409, 'Process is not ISSUED'],
  already_submitted: [409, 'Credentials already submitted'],
  credential_id_conflict: [409, 'Credential id already used'],
  status_final: [409, 'Credential status cannot change'],
  webhook_endpoint_disabled: [409, 'Webhook endpoint disabled'],
  payload_too_large: [413, 'Request body too large'],
  unsupported_media_type: [415, 'Unsupported media type'],
  too_many_requests: [429, 'Too many requests'],
  internal_error: [500, 'Internal server error'],
} as const satisfies Record<string, readonly [number, string]>

export type ProblemCode = keyof typeof PROBLEMS

export class AppError extends Error {
  override name = 'AppError'
  readonly status: number
  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    readonly extra: { errors?: ProblemBody['errors']; headers?: Record<string, string> } = {},
  ) {
    super(`${code}: ${detail}`)
    this.status = PROBLEMS[code][0]
  }

  toProblem(): ProblemBody {
    return problem(this.code, this.detail, this.extra.errors)
  }
}

export function problem(code: ProblemCode, detail: string, errors?: ProblemBody['errors']): ProblemBody {
  const [status, title] = PROBLEMS[code]
  return {
    type: `urn:vc-harness:problem:${code}`,
    title,
    status,
    detail,
    code,
    ...(errors ? { errors } : {}),
  }
}

/** A 400 naming the offending field, for checks a JSON Schema cannot express. */
export function invalidField(field: string, message: string): AppError {
  return new AppError('validation_failed', `${field} ${message}`, { errors: [{ field, message }] })
}
