import type { FastifyPluginAsync } from 'fastify'
import { guard, principalOf } from '../auth/guard.ts'
import type { AuthService } from '../auth/service.ts'
import { invalidField } from '../errors/problem.ts'
import type { TemplateBody, TemplateKind } from '../store/index.ts'
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

type IdParams = { Params: { id: string } }

export interface PortalRoutesOptions {
  auth: AuthService
  portal: PortalService
  webhooks: WebhookService
  pageSize: { default: number; max: number }
}

export const portalRoutes: FastifyPluginAsync<PortalRoutesOptions> = async (app, opts) => {
  const { auth, portal, webhooks, pageSize } = opts
  const onRequest = guard(auth, ['admin'])

  app.post<{ Body: { id: string } }>(
    '/tenants',
    { schema: createTenantSchema, onRequest: guard(auth, ['operator']) },
    async (request, reply) => reply.code(201).send(await portal.createTenant(request.body.id)),
  )

  app.post<{ Body: { role: 'app' | 'admin'; template?: string; label?: string } }>(
    '/api-keys',
    { schema: createApiKeySchema, onRequest },
    async (request, reply) =>
      reply.code(201).send(await portal.createApiKey(principalOf(request), request.body)),
  )
  app.get('/api-keys', { schema: listApiKeysSchema, onRequest }, async (request) =>
    portal.listApiKeys(principalOf(request)),
  )
  app.delete<IdParams>('/api-keys/:id', { schema: revokeApiKeySchema, onRequest }, async (request, reply) => {
    await portal.revokeApiKey(principalOf(request), request.params.id)
    return reply.code(204).send()
  })

  const templateRoutes = <K extends TemplateKind>(
    kind: K,
    path: string,
    schemas: typeof issuanceTemplateSchemas,
  ) => {
    app.post<{ Body: TemplateBody<K> }>(path, { schema: schemas.create, onRequest }, async (request, reply) =>
      reply
        .code(201)
        .send(
          templateView(
            await portal.createTemplate(principalOf(request), kind, request.body as TemplateBody<K>),
          ),
        ),
    )
    app.get(path, { schema: schemas.list, onRequest }, async (request) =>
      (await portal.listTemplates(principalOf(request), kind)).map(templateView),
    )
    app.get<IdParams>(`${path}/:id`, { schema: schemas.read, onRequest }, async (request) =>
      templateView(await portal.getTemplate(principalOf(request), kind, request.params.id)),
    )
    app.put<IdParams & { Body: Omit<TemplateBody<K>, 'id'> }>(
      `${path}/:id`,
      { schema: schemas.replace, onRequest },
      async (request) => {
        const body = { ...(request.body as object), id: request.params.id } as TemplateBody<K>
        return templateView(await portal.replaceTemplate(principalOf(request), kind, request.params.id, body))
      },
    )
    app.delete<IdParams>(`${path}/:id`, { schema: schemas.delete, onRequest }, async (request, reply) => {
      await portal.deleteTemplate(principalOf(request), kind, request.params.id)
      return reply.code(204).send()
    })
  }
  templateRoutes('issuance', '/issuance-templates', issuanceTemplateSchemas)
  templateRoutes('verification', '/verification-templates', verificationTemplateSchemas)

  type DeliveriesQuery = { limit?: number; before?: string; state?: string }
  for (const [kind, path] of [
    ['issuance', '/issuance-templates'],
    ['verification', '/verification-templates'],
  ] as const) {
    app.get<IdParams & { Querystring: DeliveriesQuery }>(
      `${path}/:id/webhook-deliveries`,
      { schema: deliveriesSchema(kind), onRequest },
      async (request) => {
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
  app.get<IdParams>('/webhook-deliveries/:id', { schema: readDeliverySchema, onRequest }, async (request) =>
    webhooks.getDelivery(principalOf(request), request.params.id),
  )
  app.post<IdParams>(
    '/webhook-deliveries/:id/redeliver',
    { schema: redeliverSchema, onRequest },
    async (request, reply) =>
      reply.code(202).send(await webhooks.redeliver(principalOf(request), request.params.id)),
  )
}
