import type { Ajv, ErrorObject, ValidateFunction } from 'ajv'
import { OAuthError } from '../errors/oauth.ts'
import type { SessionRecord } from '../store/index.ts'
import { newAjv } from '../util/ajv.ts'
import { type TSchema, Type } from '../util/typebox.ts'
import { type ResponseContext, verifyDcqlResponse, verifyResponse } from '../verification/checks.ts'
import type { PresentationResponse } from './profile.ts'

// The response parameters each OpenID4VP profile reads, as TypeBox schemas beside the parsers that hold a
// response to them (the profile objects of oid4vp/request.ts and oid4vp/request-v1.ts use them). The route's
// body schema (schemas.ts) stays permissive: which profile applies is known only once the session is read,
// and a direct_post.jwt response only once it is decrypted. A parameter that does not fit its schema is a
// malformed message, not a presentation to judge: 400 invalid_request naming it, the session stays open.
// JSON-text form fields are read first, then checked.

let compiler: Ajv | undefined
/** The schemas compile at the first response that needs them, not at start-up. */
function reader<T>(schema: TSchema, message: (error: ErrorObject | undefined, value: unknown) => string) {
  let validate: ValidateFunction | undefined
  return (value: unknown): T => {
    compiler ??= newAjv({ allErrors: false })
    validate ??= compiler.compile(schema)
    if (!validate(value)) throw new OAuthError('invalid_request', message(validate.errors?.[0], value))
    return value as T
  }
}

/** A JSON-text parameter that does not parse. */
const NOT_JSON = Symbol('not JSON')
const NOT_OBJECT = Type.Unsafe<unknown>({ not: { type: 'object' } })
const NOT_ARRAY = Type.Unsafe<unknown>({ not: { type: 'array' } })

/**
 * DIF Presentation Exchange v2, Presentation Submission: each descriptor_map entry, and each `path_nested`
 * in it, names its `id`, `format` and `path` as strings (a `path_nested` that is no object is not followed).
 * The mapping check reads them as text, and String() of an object with a non-callable `toString` member
 * throws. Everything else about the mapping is the mapping check's to judge.
 */
const Descriptor = Type.Cyclic(
  {
    Descriptor: Type.Object({
      id: Type.Optional(Type.String()),
      format: Type.Optional(Type.String()),
      path: Type.Optional(Type.String()),
      path_nested: Type.Optional(Type.Union([Type.Ref('Descriptor'), NOT_OBJECT])),
    }),
  },
  'Descriptor',
)
export const PresentationSubmission = Type.Object({
  descriptor_map: Type.Optional(Type.Union([Type.Array(Type.Union([Descriptor, NOT_OBJECT])), NOT_ARRAY])),
})
/** pe (draft 20 §6.1): the JWT of the one presentation. */
export const PeVpToken = Type.String()
/** dcql (OpenID4VP 1.0 §8.1): an object keyed by the credential query ids (JSON text in a direct_post form). */
export const DcqlVpToken = Type.Object({}, { additionalProperties: true, minProperties: 1 })

/** A JSON pointer of the submission as the wallet would write the member: `.descriptor_map[0].id`. */
const memberPath = (pointer: string) =>
  pointer
    .split('/')
    .slice(1)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')

const readPeVpToken = reader<string>(PeVpToken, () => 'vp_token must be the JWT of the presentation')
// Draft 20 requires the submission with a vp_token: without it the answer cannot be read.
const readSubmission = reader<Record<string, unknown>>(PresentationSubmission, (error, value) => {
  if (value === NOT_JSON) return 'presentation_submission is not valid JSON'
  if (!error || error.instancePath === '') return 'presentation_submission is missing or not a JSON object'
  return `presentation_submission${memberPath(error.instancePath)} must be a string`
})
const readDcqlVpToken = reader<Record<string, unknown>>(
  DcqlVpToken,
  () =>
    'vp_token must be a JSON object keyed by the credential query ids of the dcql_query (OpenID4VP 1.0 §8.1)',
)

/** The pe profile's half of the response (draft 20 §6.1, DIF Presentation Exchange v2). */
export const peResponses = {
  submissionFormat: 'jwt_vp' as const,
  parseResponse(params: Record<string, unknown>): PresentationResponse<string> {
    const vpToken = readPeVpToken(params.vp_token)
    const text = params.presentation_submission
    let submission: unknown
    try {
      submission = typeof text === 'string' ? JSON.parse(text) : undefined
    } catch {
      submission = NOT_JSON
    }
    return { vpToken, mapping: readSubmission(submission) }
  },
  verify(response: PresentationResponse<string>, session: SessionRecord, context: ResponseContext) {
    return verifyResponse(response.vpToken, response.mapping, {
      ...context,
      definition: session.request.presentation_definition as Record<string, unknown>,
    })
  },
}

/** The dcql profile's half of the response (OpenID4VP 1.0 §8.1). */
export const dcqlResponses = {
  submissionFormat: 'dcql' as const,
  parseResponse(params: Record<string, unknown>): PresentationResponse<Record<string, unknown>> {
    let token = params.vp_token
    if (typeof token === 'string') {
      try {
        token = JSON.parse(token)
      } catch {
        token = undefined
      }
    }
    const vpToken = readDcqlVpToken(token)
    return { vpToken, mapping: { credential_query_ids: Object.keys(vpToken) } }
  },
  verify(
    response: PresentationResponse<Record<string, unknown>>,
    session: SessionRecord,
    context: ResponseContext,
  ) {
    return verifyDcqlResponse(response.vpToken, {
      ...context,
      dcqlQuery: session.request.dcql_query as Record<string, unknown>,
    })
  },
}
