import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { guard, principalOf } from '../auth/guard.ts'
import type { AuthService } from '../auth/service.ts'
import { invalidField } from '../errors/problem.ts'
import { newAjv } from '../util/ajv.ts'
import type { PublicUrls } from '../util/urls.ts'
import {
  createOfferSchema,
  credentialStatusSchema,
  listProcessesSchema,
  readProcessSchema,
  rejectProcessSchema,
  SubmittedArray,
  submitCredentialsSchema,
} from './schemas.ts'
import { type IssuanceService, processView } from './service.ts'

export interface IssuanceRouteOptions {
  auth: AuthService
  issuance: IssuanceService
  urls: PublicUrls
  pageSize: { default: number; max: number }
}

export const issuanceRoutes: FastifyPluginAsyncTypebox<IssuanceRouteOptions> = async (app, opts) => {
  const { auth, issuance, urls, pageSize } = opts
  const appOnly = guard(auth, ['app'])
  const adminOnly = guard(auth, ['admin'])
  // Writes on one process: its linked application, or an administrator of the tenant (attended issuance).
  const appOrAdmin = guard(auth, ['app', 'admin'])

  app.post(
    '/api/v3/oidc-issuance/credential-offer',
    { schema: createOfferSchema, onRequest: appOnly },
    async (request, reply) => {
      const { uri, txCode } = await issuance.createOffer(principalOf(request), request.body.group)
      return reply.code(201).send({ credential_offer_uri: uri, ...(txCode ? { tx_code: txCode } : {}) })
    },
  )

  app.get(
    '/admin/v1/issuanceRequests/:id',
    { schema: readProcessSchema, onRequest: appOnly },
    async (request) => processView(await issuance.getProcess(principalOf(request), request.params.id)),
  )

  app.get(
    '/admin/v1/issuanceRequests',
    { schema: listProcessesSchema, onRequest: adminOnly },
    async (request, reply) => {
      const { status, cursor } = request.query
      // The page size is configuration (listPageSize), not a schema default.
      const limit = request.query.limit ?? pageSize.default
      if (limit > pageSize.max) {
        throw invalidField('querystring/limit', `must be at most ${pageSize.max}`)
      }
      const { page, next } = await issuance.listProcesses(principalOf(request), {
        limit,
        ...(status ? { status } : {}),
        ...(cursor ? { cursor } : {}),
      })
      if (next) {
        const query = new URLSearchParams({
          ...(status ? { status } : {}),
          limit: String(limit),
          cursor: next,
        })
        reply.header('Link', `<${urls.absolute(`/admin/v1/issuanceRequests?${query}`)}>; rel="next"`)
      }
      return page.map(processView)
    },
  )

  // The body schema documents and types section 2.3; Ajv checks only that the body is an array, so that
  // prepareCredentials names every problem per index as invalid_credential (see SubmittedCredentials).
  const submittedArray = newAjv({ strict: false }).compile(SubmittedArray)
  app.patch(
    '/admin/v1/issuanceRequests/:id/credentials',
    {
      schema: submitCredentialsSchema,
      onRequest: appOrAdmin,
      validatorCompiler: (route) => {
        if (route.httpPart === 'body') return submittedArray
        if (!app.validatorCompiler) throw new Error('the app sets a validator compiler before its routes')
        return app.validatorCompiler(route)
      },
    },
    async (request) => [
      processView(await issuance.submitCredentials(principalOf(request), request.params.id, request.body)),
    ],
  )

  app.post(
    '/admin/v1/issuanceRequests/:id/reject',
    {
      schema: rejectProcessSchema,
      onRequest: appOrAdmin,
      // The body is optional: none at all (with or without a Content-Type) is `{}`, then validated.
      preValidation: async (request) => {
        request.body ??= {}
      },
    },
    async (request) =>
      processView(await issuance.reject(principalOf(request), request.params.id, request.body.reason)),
  )

  app.post(
    '/admin/v1/issuanceRequests/:id/credentials/status',
    { schema: credentialStatusSchema, onRequest: appOrAdmin },
    async (request) => ({
      credentials: await issuance.setCredentialStatus(principalOf(request), request.params.id, request.body),
    }),
  )
}
