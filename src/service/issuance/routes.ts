import type { FastifyPluginAsync } from 'fastify'
import { guard, principalOf } from '../auth/guard.ts'
import type { AuthService } from '../auth/service.ts'
import { invalidField } from '../errors/problem.ts'
import type { CredentialStatus, ProcessStatus } from '../store/index.ts'
import { newAjv } from '../util/ajv.ts'
import type { PublicUrls } from '../util/urls.ts'
import {
  createOfferSchema,
  credentialStatusSchema,
  listProcessesSchema,
  RejectBody,
  readProcessSchema,
  rejectProcessSchema,
  submitCredentialsSchema,
} from './schemas.ts'
import { type IssuanceService, processView } from './service.ts'

export interface IssuanceRouteOptions {
  auth: AuthService
  issuance: IssuanceService
  urls: PublicUrls
  pageSize: { default: number; max: number }
}

export const issuanceRoutes: FastifyPluginAsync<IssuanceRouteOptions> = async (app, opts) => {
  const { auth, issuance, urls, pageSize } = opts
  const appOnly = guard(auth, ['app'])
  const adminOnly = guard(auth, ['admin'])
  // Writes on one process: its linked application, or an administrator of the tenant (attended issuance).
  const appOrAdmin = guard(auth, ['app', 'admin'])

  app.post<{ Body: { group: string } }>(
    '/api/v3/oidc-issuance/credential-offer',
    { schema: createOfferSchema, onRequest: appOnly },
    async (request, reply) => {
      const { uri, txCode } = await issuance.createOffer(principalOf(request), request.body.group)
      return reply.code(201).send({ credential_offer_uri: uri, ...(txCode ? { tx_code: txCode } : {}) })
    },
  )

  app.get<{ Params: { id: string } }>(
    '/admin/v1/issuanceRequests/:id',
    { schema: readProcessSchema, onRequest: appOnly },
    async (request) => processView(await issuance.getProcess(principalOf(request), request.params.id)),
  )

  app.get<{ Querystring: { status?: ProcessStatus; limit?: number; cursor?: string } }>(
    '/admin/v1/issuanceRequests',
    { schema: listProcessesSchema, onRequest: adminOnly },
    async (request, reply) => {
      const { status, cursor } = request.query
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

  app.patch<{ Params: { id: string }; Body: unknown[] }>(
    '/admin/v1/issuanceRequests/:id/credentials',
    { schema: submitCredentialsSchema, onRequest: appOrAdmin },
    async (request) => [
      processView(await issuance.submitCredentials(principalOf(request), request.params.id, request.body)),
    ],
  )

  const validReject = newAjv({ allErrors: true }).compile(RejectBody)
  app.post<{ Params: { id: string }; Body: unknown }>(
    '/admin/v1/issuanceRequests/:id/reject',
    { schema: rejectProcessSchema, onRequest: appOrAdmin },
    async (request) => {
      const body = request.body ?? {}
      if (!validReject(body)) {
        const first = validReject.errors?.[0]
        const extra = (first?.params as { additionalProperty?: string } | undefined)?.additionalProperty
        throw invalidField(
          `body${first?.instancePath ?? ''}${extra ? `/${extra}` : ''}`,
          first?.message ?? 'is invalid',
        )
      }
      const { reason } = body as { reason?: string }
      return processView(await issuance.reject(principalOf(request), request.params.id, reason))
    },
  )

  app.post<{ Params: { id: string }; Body: { status: CredentialStatus; credentialIds?: string[] } }>(
    '/admin/v1/issuanceRequests/:id/credentials/status',
    { schema: credentialStatusSchema, onRequest: appOrAdmin },
    async (request) => ({
      credentials: await issuance.setCredentialStatus(principalOf(request), request.params.id, request.body),
    }),
  )
}
