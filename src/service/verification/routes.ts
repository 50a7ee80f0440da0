import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { guard, principalOf } from '../auth/guard.ts'
import type { AuthService } from '../auth/service.ts'
import type { Clock } from '../util/clock.ts'
import { createSessionSchema, readSessionSchema } from './schemas.ts'
import { sessionView, type VerificationService } from './service.ts'

export interface VerificationRouteOptions {
  auth: AuthService
  verification: VerificationService
  clock: Clock
}

/** Sections 4.6 and 4.7: the relying party's side, for an application linked to the tenant. */
export const verificationRoutes: FastifyPluginAsyncTypebox<VerificationRouteOptions> = async (app, opts) => {
  const { auth, verification, clock } = opts
  const appOnly = guard(auth, ['app'])

  app.post('/api/v3/sessions', { schema: createSessionSchema, onRequest: appOnly }, async (request, reply) =>
    reply.code(201).send(await verification.createSession(principalOf(request), request.body.ssiConfigId)),
  )

  app.get(
    '/api/v3/sessions/:id',
    { schema: readSessionSchema, onRequest: appOnly },
    async (request, reply) => {
      const session = await verification.getSession(principalOf(request), request.params.id)
      const { httpStatus, body } = sessionView(session, clock.now())
      return reply.code(httpStatus).header('Cache-Control', 'no-store').send(body)
    },
  )
}
