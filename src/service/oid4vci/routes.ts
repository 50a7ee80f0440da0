import formbody from '@fastify/formbody'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { FORM_MEDIA_TYPE, JWT_MEDIA_TYPE } from '../../shared/wire.ts'
import { installOAuthErrors, OAuthError } from '../errors/oauth.ts'
import type { StatusLists } from '../status/service.ts'
import type { Oid4vciService } from './service.ts'

export interface Oid4vciRouteOptions {
  oid4vci: Oid4vciService
  statusLists: StatusLists
}

type TenantParams = { tenant: string }
const tags = ['OpenID4VCI (wallet)']

/**
 * The wallet-facing issuer of every tenant (docs/issuance.md). Encapsulated: its form parser and its
 * OAuth-style error handler apply to these routes only.
 */
export const oid4vciRoutes: FastifyPluginAsync<Oid4vciRouteOptions> = async (
  app,
  { oid4vci, statusLists },
) => {
  await app.register(formbody, { bodyLimit: 16 * 1024 })
  installOAuthErrors(app)
  const json = (reply: FastifyReply, body: unknown) => reply.type('application/json').send(body)

  const issuerMetadata = async (request: { params: TenantParams }, reply: FastifyReply) =>
    json(reply, await oid4vci.issuerMetadata(request.params.tenant))
  const asMetadata = async (request: { params: TenantParams }, reply: FastifyReply) =>
    json(reply, await oid4vci.authorizationServerMetadata(request.params.tenant))
  const meta = { tags, summary: 'Credential issuer metadata' }
  // Both well-known forms: appended to the issuer id (what oid4vci-client asks for) and RFC 8615's.
  app.get<{ Params: TenantParams }>(
    '/oid4vci/:tenant/.well-known/openid-credential-issuer',
    { schema: meta },
    issuerMetadata,
  )
  app.get<{ Params: TenantParams }>(
    '/.well-known/openid-credential-issuer/oid4vci/:tenant',
    { schema: meta },
    issuerMetadata,
  )
  const asMeta = { tags, summary: 'OAuth authorization server metadata (RFC 8414)' }
  app.get<{ Params: TenantParams }>(
    '/oid4vci/:tenant/.well-known/oauth-authorization-server',
    { schema: asMeta },
    asMetadata,
  )
  app.get<{ Params: TenantParams }>(
    '/.well-known/oauth-authorization-server/oid4vci/:tenant',
    { schema: asMeta },
    asMetadata,
  )

  app.get<{ Params: TenantParams & { id: string } }>(
    '/oid4vci/:tenant/credential-offer/:id',
    { schema: { tags, summary: 'Credential offer (by reference)' } },
    async (request, reply) => json(reply, await oid4vci.offer(request.params.tenant, request.params.id)),
  )

  app.post<{ Params: TenantParams; Body: Record<string, unknown> }>(
    '/oid4vci/:tenant/token',
    { schema: { tags, summary: 'Token endpoint (pre-authorized code grant, form-encoded)' } },
    async (request, reply) => {
      if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith(FORM_MEDIA_TYPE)) {
        throw new OAuthError('invalid_request', `the token request must be ${FORM_MEDIA_TYPE}`)
      }
      return json(
        reply.header('Pragma', 'no-cache'),
        await oid4vci.token(request.params.tenant, request.body ?? {}),
      )
    },
  )

  app.post<{ Params: TenantParams }>(
    '/oid4vci/:tenant/nonce',
    { schema: { tags, summary: 'Nonce endpoint' } },
    async (request, reply) => json(reply, await oid4vci.nonce(request.params.tenant)),
  )

  app.post<{ Params: TenantParams }>(
    '/oid4vci/:tenant/credential',
    { schema: { tags, summary: 'Credential endpoint' } },
    async (request, reply) => {
      const result = await oid4vci.credential(
        request.params.tenant,
        request.headers.authorization,
        request.body,
      )
      return json(reply.code(result.status), result.body)
    },
  )

  app.post<{ Params: TenantParams }>(
    '/oid4vci/:tenant/deferred_credential',
    { schema: { tags, summary: 'Deferred credential endpoint' } },
    async (request, reply) =>
      json(reply, await oid4vci.deferred(request.params.tenant, request.headers.authorization, request.body)),
  )

  app.post<{ Params: TenantParams }>(
    '/oid4vci/:tenant/notification',
    { schema: { tags, summary: 'Notification endpoint' } },
    async (request, reply) => {
      await oid4vci.notification(request.params.tenant, request.headers.authorization, request.body)
      return reply.code(204).send()
    },
  )

  app.get<{ Params: TenantParams & { id: string } }>(
    '/oid4vci/:tenant/status/:id',
    { schema: { tags: ['Status lists'], summary: 'Status-list credential (signed JWT)' } },
    async (request, reply) => {
      const jwt = await statusLists.credential(request.params.tenant, request.params.id)
      if (!jwt) throw new OAuthError('not_found', `no status list "${request.params.id}"`)
      // Revalidate every time: a cached list would hide a revocation.
      return reply.header('Cache-Control', 'no-cache').type(JWT_MEDIA_TYPE).send(jwt)
    },
  )
}
