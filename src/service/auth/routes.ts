import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { loginSchema } from './schemas.ts'
import type { AuthService } from './service.ts'

export const authRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService }> = async (app, { auth }) => {
  app.post('/admin/v1/api_keys/login', { schema: loginSchema }, async (request, reply) => {
    const headers = request.headers
    const { token } = await auth.login({
      authorization: headers.authorization,
      tenant: headers.tenant,
      ssiconfig: headers.ssiconfig,
      clientAddress: request.ip,
    })
    // Set on the raw response so the wire keeps the document's exact spelling (Fastify lower-cases names).
    reply.raw.setHeader('Token', token)
    reply.raw.setHeader('Token_type', 'jwt')
    reply.header('Cache-Control', 'no-store')
    return { message: 'SUCCESS' as const }
  })
}
