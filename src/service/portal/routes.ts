import type { FastifyPluginAsync } from 'fastify'
import { guard, principalOf } from '../auth/guard.ts'
import type { AuthService } from '../auth/service.ts'
import type { TemplateBody, TemplateKind } from '../store/index.ts'
import {
  createApiKeySchema,
  createTenantSchema,
  issuanceTemplateSchemas,
  listApiKeysSchema,
  revokeApiKeySchema,
  verificationTemplateSchemas,
} from './schemas.ts'
import { type PortalService, templateView } from './service.ts'

type IdParams = { Params: { id: string } }

export const portalRoutes: FastifyPluginAsync<{ auth: AuthService; portal: PortalService }> = async (
  app,
  opts,
) => {
  const { auth, portal } = opts
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
}
