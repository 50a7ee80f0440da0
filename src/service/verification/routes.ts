import formbody from '@fastify/formbody'
import type { FastifyPluginAsync } from 'fastify'
import { FORM_MEDIA_TYPE, REQUEST_OBJECT_MEDIA_TYPE } from '../../shared/wire.ts'
import { guard, principalOf } from '../auth/guard.ts'
import type { AuthService } from '../auth/service.ts'
import { installOAuthErrors, OAuthError } from '../errors/oauth.ts'
import type { Clock } from '../util/clock.ts'
import { createSessionSchema, readSessionSchema } from './schemas.ts'
import { sessionView, type VerificationService } from './service.ts'

export interface VerificationRouteOptions {
  auth: AuthService
  verification: VerificationService
  clock: Clock
}

/** Sections 4.6 and 4.7: the relying party's side, for an application linked to the tenant. */
export const verificationRoutes: FastifyPluginAsync<VerificationRouteOptions> = async (app, opts) => {
  const { auth, verification, clock } = opts
  const appOnly = guard(auth, ['app'])

  app.post<{ Body: { ssiConfigId: string } }>(
    '/api/v3/sessions',
    { schema: createSessionSchema, onRequest: appOnly },
    async (request, reply) =>
      reply.code(201).send(await verification.createSession(principalOf(request), request.body.ssiConfigId)),
  )

  app.get<{ Params: { id: string } }>(
    '/api/v3/sessions/:id',
    { schema: readSessionSchema, onRequest: appOnly },
    async (request, reply) => {
      const session = await verification.getSession(principalOf(request), request.params.id)
      const { httpStatus, body } = sessionView(session, clock.now())
      return reply.code(httpStatus).header('Cache-Control', 'no-store').send(body)
    },
  )
}

type SessionParams = { tenant: string; id: string }
const tags = ['OpenID4VP (wallet)']

/** The wallet-facing verifier (docs/verification.md). Encapsulated: form parser and OAuth errors. */
export const oid4vpRoutes: FastifyPluginAsync<{ verification: VerificationService }> = async (
  app,
  { verification },
) => {
  await app.register(formbody, { bodyLimit: 512 * 1024 })
  installOAuthErrors(app)

  app.get<{ Params: SessionParams }>(
    '/oid4vp/:tenant/requests/:id',
    { schema: { tags, summary: 'Signed request object (request_uri)' } },
    async (request, reply) =>
      reply
        .type(REQUEST_OBJECT_MEDIA_TYPE)
        .send(await verification.requestObject(request.params.tenant, request.params.id)),
  )

  app.post<{ Params: SessionParams; Body: Record<string, unknown> }>(
    '/oid4vp/:tenant/responses/:id',
    { schema: { tags, summary: 'Authorization response (response_mode direct_post, form-encoded)' } },
    async (request, reply) => {
      if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith(FORM_MEDIA_TYPE)) {
        throw new OAuthError('invalid_request', `the response must be ${FORM_MEDIA_TYPE} (direct_post)`)
      }
      const body = await verification.respond(
        request.params.tenant,
        request.params.id,
        request.body ?? {},
        request.headers['user-agent'],
      )
      return reply.type('application/json').send(body)
    },
  )
}
