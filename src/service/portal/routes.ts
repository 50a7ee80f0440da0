import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { guard, principalOf } from '../auth/guard.ts'
import type { AuthService } from '../auth/service.ts'
import { invalidField } from '../errors/problem.ts'
import type { TemplateKind } from '../store/index.ts'
import type { WebhookService } from '../webhooks/service.ts'
import {
  createApiKeySchema,
  createTenantSchema,
  deliveriesSchema,
  issuanceTemplateSchemas,
  listApiKeysSchema,
  readDeliverySchema,
  redeliverSchema,
  revokeApiKeySchema,
  verificationTemplateSchemas,
} from './schemas.ts'
import { type PortalService, templateView } from './service.ts'

export interface PortalRoutesOptions {
  auth: AuthService
  portal: PortalService
  webhooks: WebhookService
  pageSize: { default: number; max: number }
}

export const portalRoutes: FastifyPluginAsyncTypebox<PortalRoutesOptions> = async (app, opts) => {
  const { auth, portal, webhooks, pageSize } = opts
  const onRequest = guard(auth, ['admin'])

  app.post(
    '/tenants',
    { schema: createTenantSchema, onRequest: guard(auth, ['operator']) },
    async (request, reply) => reply.code(201).send(await portal.createTenant(request.body.id)),
  )

  app.post('/api-keys', { schema: createApiKeySchema, onRequest }, async (request, reply) =>
    reply.code(201).send(await portal.createApiKey(principalOf(request), request.body)),
  )
  app.get('/api-keys', { schema: listApiKeysSchema, onRequest }, async (request) =>
    portal.listApiKeys(principalOf(request)),
  )
  app.delete('/api-keys/:id', { schema: revokeApiKeySchema, onRequest }, async (request, reply) => {
    await portal.revokeApiKey(principalOf(request), request.params.id)
    return reply.code(204).send(null)
  })

  // One set of routes per kind; each body is validated against its own kind's schema.
  const templateRoutes = (
    kind: TemplateKind,
    path: string,
    schemas: typeof issuanceTemplateSchemas | typeof verificationTemplateSchemas,
  ) => {
    app.post(path, { schema: schemas.create, onRequest }, async (request, reply) =>
      reply
        .code(201)
        .send(templateView(await portal.createTemplate(principalOf(request), kind, request.body))),
    )
    app.get(path, { schema: schemas.list, onRequest }, async (request) =>
      (await portal.listTemplates(principalOf(request), kind)).map(templateView),
    )
    app.get(`${path}/:id`, { schema: schemas.read, onRequest }, async (request) =>
      templateView(await portal.getTemplate(principalOf(request), kind, request.params.id)),
    )
    app.put(`${path}/:id`, { schema: schemas.replace, onRequest }, async (request) => {
      const body = { ...request.body, id: request.params.id }
      return templateView(await portal.replaceTemplate(principalOf(request), kind, request.params.id, body))
    })
    app.delete(`${path}/:id`, { schema: schemas.delete, onRequest }, async (request, reply) => {
      await portal.deleteTemplate(principalOf(request), kind, request.params.id)
      return reply.code(204).send(null)
    })
  }
  templateRoutes('issuance', '/issuance-templates', issuanceTemplateSchemas)
  templateRoutes('verification', '/verification-templates', verificationTemplateSchemas)

  for (const [kind, path] of [
    ['issuance', '/issuance-templates'],
    ['verification', '/verification-templates'],
  ] as const) {
    app.get(
      `${path}/:id/webhook-deliveries`,
      { schema: deliveriesSchema(kind), onRequest },
      async (request) => {
        // The page size is configuration (listPageSize), not a schema default.
        const { limit = pageSize.default, before, state } = request.query
        if (limit > pageSize.max) throw invalidField('querystring/limit', `must be at most ${pageSize.max}`)
        return webhooks.listDeliveries(principalOf(request), kind, request.params.id, {
          limit,
          ...(before !== undefined ? { before } : {}),
          ...(state !== undefined ? { state } : {}),
        })
      },
    )
  }
  app.get('/webhook-deliveries/:id', { schema: readDeliverySchema, onRequest }, async (request) =>
    webhooks.getDelivery(principalOf(request), request.params.id),
  )
  app.post(
    '/webhook-deliveries/:id/redeliver',
    { schema: redeliverSchema, onRequest },
    async (request, reply) =>
      reply.code(202).send(await webhooks.redeliver(principalOf(request), request.params.id)),
  )
}
