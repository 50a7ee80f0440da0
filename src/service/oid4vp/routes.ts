import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { FORM_MEDIA_TYPE, REQUEST_OBJECT_MEDIA_TYPE } from '../../shared/wire.ts'
import { installOAuthErrors, isForm, OAuthError } from '../errors/oauth.ts'
import {
  authorizationResponseSchema,
  dcApiRequestSchema,
  dcApiResponseSchema,
  requestObjectPostSchema,
  requestObjectSchema,
} from './schemas.ts'
import type { Oid4vpService, ResponseFacts } from './service.ts'

export interface Oid4vpRouteOptions {
  oid4vp: Oid4vpService
  /**
   * Told what each response carried, also when it is refused (a JWE's content is known only here); none by
   * default. app.ts hands in the wallet test plans' exchange observer (noteExchange).
   */
  onResponse?: (request: FastifyRequest, facts: ResponseFacts) => void
}

/** The largest wallet response: a form (direct_post) or a JSON DC API answer, the same bound for both. */
const RESPONSE_BODY_LIMIT = 512 * 1024

/** Whether a Content-Type names a JSON body (the DC API answer). */
const isJson = (contentType: string | undefined) => /^application\/json\s*(;|$)/i.test(contentType ?? '')

/** The wallet-facing verifier (docs/verification.md). Encapsulated: form parser and OAuth errors. */
export const oid4vpRoutes: FastifyPluginAsyncTypebox<Oid4vpRouteOptions> = async (
  app,
  { oid4vp, onResponse },
) => {
  await app.register(formbody, { bodyLimit: RESPONSE_BODY_LIMIT })
  installOAuthErrors(app)

  app.get('/oid4vp/:tenant/requests/:id', { schema: requestObjectSchema }, async (request, reply) =>
    reply
      .type(REQUEST_OBJECT_MEDIA_TYPE)
      .send(await oid4vp.requestObject(request.params.tenant, request.params.id)),
  )

  // request_uri_method=post (OpenID4VP 1.0 §5.10): wallet_metadata and wallet_nonce, form-encoded.
  app.post(
    '/oid4vp/:tenant/requests/:id',
    {
      schema: requestObjectPostSchema,
      preValidation: async (request) => {
        if (!isForm(request.headers['content-type'])) {
          throw new OAuthError('invalid_request', `the request_uri POST must be ${FORM_MEDIA_TYPE}`)
        }
      },
    },
    async (request, reply) =>
      reply
        .type(REQUEST_OBJECT_MEDIA_TYPE)
        .send(await oid4vp.requestObjectByPost(request.params.tenant, request.params.id, request.body)),
  )

  // OpenID4VP 1.0 Appendix A: the session over the W3C Digital Credentials API. GET: the request entry for
  // the relying party's page; POST: the DigitalCredential it received, as JSON, within direct_post's limits.
  app.get('/oid4vp/:tenant/dc-api/:id', { schema: dcApiRequestSchema }, async (request, reply) =>
    reply.type('application/json').send(await oid4vp.dcApiRequest(request.params.tenant, request.params.id)),
  )

  app.post(
    '/oid4vp/:tenant/dc-api/:id',
    {
      schema: dcApiResponseSchema,
      bodyLimit: RESPONSE_BODY_LIMIT,
      preValidation: async (request) => {
        if (!isJson(request.headers['content-type'])) {
          throw new OAuthError(
            'invalid_request',
            'the Digital Credentials API answer must be application/json: {origin, protocol, data}',
          )
        }
      },
    },
    async (request, reply) => {
      const body = await oid4vp.respondDcApi(
        request.params.tenant,
        request.params.id,
        request.body,
        request.headers['user-agent'],
        onResponse && ((facts) => onResponse(request, facts)),
      )
      return reply.type('application/json').send(body)
    },
  )

  app.post(
    '/oid4vp/:tenant/responses/:id',
    {
      schema: authorizationResponseSchema,
      // Before the body schema: a JSON body is refused for its type, whatever its shape.
      preValidation: async (request) => {
        if (!isForm(request.headers['content-type'])) {
          throw new OAuthError(
            'invalid_request',
            `the response must be ${FORM_MEDIA_TYPE} (direct_post, direct_post.jwt)`,
          )
        }
      },
    },
    async (request, reply) => {
      const body = await oid4vp.respond(
        request.params.tenant,
        request.params.id,
        request.body,
        request.headers['user-agent'],
        onResponse && ((facts) => onResponse(request, facts)),
      )
      return reply.type('application/json').send(body)
    },
  )
}
