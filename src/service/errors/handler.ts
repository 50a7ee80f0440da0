import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { PROBLEM_MEDIA_TYPE } from '../../shared/wire.ts'
import { describe } from '../config/index.ts'
import { JsonLimitError } from '../util/json-limits.ts'
import { AppError, type ProblemBody, type ProblemCode, problem } from './problem.ts'

function send(reply: FastifyReply, body: ProblemBody, headers: Record<string, string> = {}) {
  return reply.code(body.status).headers(headers).type(PROBLEM_MEDIA_TYPE).send(body)
}

// Fastify's own client errors, mapped to our stable codes.
const FASTIFY_CODES: Record<string, ProblemCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformed_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'malformed_json',
}

function validationProblem(error: FastifyError): ProblemBody {
  const errors = (error.validation ?? []).map((e) => {
    const params = e.params as { additionalProperty?: string; missingProperty?: string }
    const named = params.additionalProperty ?? params.missingProperty
    const field = `${error.validationContext ?? 'request'}${e.instancePath}${named ? `/${named}` : ''}`
    // Reuse the configuration loader's wording: "unknown field", "missing field", "must be one of".
    const message = describe({ ...e, instancePath: '' } as Parameters<typeof describe>[0]).replace(
      /^\/: /,
      '',
    )
    return { field, message }
  })
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ') || error.message
  return problem('validation_failed', detail, errors)
}

/** One handler for the whole app: problem+json for every error, never a stack trace or a 5xx detail. */
export function installErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) return send(reply, error.toProblem(), error.extra.headers)
    if (error instanceof JsonLimitError) {
      return send(
        reply,
        problem('json_limit_exceeded', error.message, [{ field: 'body', message: error.reason }]),
      )
    }
    if (error.validation) return send(reply, validationProblem(error))
    const mapped = error.code ? FASTIFY_CODES[error.code] : undefined
    if (mapped) return send(reply, problem(mapped, error.message))
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return send(reply, { ...problem('validation_failed', error.message), status: error.statusCode })
    }
    request.log.error({ err: error }, 'unhandled error')
    return send(reply, problem('internal_error', `an internal error occurred (request ${request.id})`))
  })
  app.setNotFoundHandler((request, reply) =>
    send(reply, problem('not_found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  )
  // Only JSON (and, on the wallet-facing routes, forms) are bodies here: text/plain is a 415 like any other type.
  // The JSON parser itself, with its limits, is util/json-limits.ts (installJsonLimits).
  app.removeContentTypeParser('text/plain')
}
