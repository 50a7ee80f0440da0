import formbody from '@fastify/formbody'
import type { FastifyPluginAsync } from 'fastify'
import { FORM_MEDIA_TYPE, REQUEST_OBJECT_MEDIA_TYPE } from '../../shared/wire.ts'
import { installOAuthErrors, OAuthError } from '../errors/oauth.ts'
import type { Oid4vpService } from './service.ts'

type SessionParams = { tenant: string; id: string }
const tags = ['OpenID4VP (wallet)']

/** The wallet-facing verifier (docs/verification.md). Encapsulated: form parser and OAuth errors. */
export const oid4vpRoutes: FastifyPluginAsync<{ oid4vp: Oid4vpService }> = async (app, { oid4vp }) => {
  await app.register(formbody, { bodyLimit: 512 * 1024 })
  installOAuthErrors(app)

  app.get<{ Params: SessionParams }>(
    '/oid4vp/:tenant/requests/:id',
    { schema: { tags, summary: 'Signed request object (request_uri)' } },
    async (request, reply) =>
      reply
        .type(REQUEST_OBJECT_MEDIA_TYPE)
        .send(await oid4vp.requestObject(request.params.tenant, request.params.id)),
  )

  app.post<{ Params: SessionParams; Body: Record<string, unknown> }>(
    '/oid4vp/:tenant/responses/:id',
    { schema: { tags, summary: 'Authorization response (response_mode direct_post, form-encoded)' } },
    async (request, reply) => {
      if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith(FORM_MEDIA_TYPE)) {
        throw new OAuthError('invalid_request', `the response must be ${FORM_MEDIA_TYPE} (direct_post)`)
      }
      const body = await oid4vp.respond(
        request.params.tenant,
        request.params.id,
        request.body ?? {},
        request.headers['user-agent'],
      )
      return reply.type('application/json').send(body)
    },
  )
}
