import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  FORM_MEDIA_TYPE,
  JWT_MEDIA_TYPE,
  PEM_MEDIA_TYPE,
  STATUS_LIST_JWT_MEDIA_TYPE,
} from '../../shared/wire.ts'
import type { IssuerCertificates } from '../crypto/issuer-certificates.ts'
import { installOAuthErrors, isForm, OAuthError } from '../errors/oauth.ts'
import type { StatusLists } from '../status/service.ts'
import type { Static, TSchema } from '../util/typebox.ts'
import {
  authorizationServerMetadataSchema,
  credentialSchema,
  deferredSchema,
  iacaSchema,
  issuerMetadataSchema,
  nonceSchema,
  notificationSchema,
  offerSchema,
  statusListSchema,
  tokenSchema,
  tokenStatusListSchema,
  trustAnchorSchema,
} from './schemas.ts'
import type { Oid4vciService } from './service.ts'

/** The body of a route's 200 answer, as its schema types it. */
type Answer<S extends { response: { 200: TSchema } }> = Static<S['response'][200]>

/** What the routes ask of the issuer; app.ts may wrap it (the wallet test plans' faulty issuer). */
export type Oid4vciEndpoints = Pick<
  Oid4vciService,
  'offer' | 'nonce' | 'credential' | 'deferred' | 'notification'
> & {
  /** OpenID4VCI §6.2 (draft 15: with c_nonce and c_nonce_expires_in). */
  token(tenantId: string, form: Record<string, unknown>): Promise<Answer<typeof tokenSchema>>
}

/** The documents a wallet reads before it asks for anything (metadata.ts); app.ts may wrap them too. */
export interface IssuerMetadataDocuments {
  issuer(tenantId: string): Promise<Answer<typeof issuerMetadataSchema>>
  authorizationServer(tenantId: string): Promise<Answer<typeof authorizationServerMetadataSchema>>
}

export interface Oid4vciRouteOptions {
  oid4vci: Oid4vciEndpoints
  metadata: IssuerMetadataDocuments
  statusLists: StatusLists
  issuerCertificates: IssuerCertificates
}

/**
 * The wallet-facing issuer of every tenant (docs/issuance.md). Encapsulated: its form parser and its
 * OAuth-style error handler apply to these routes only.
 */
export const oid4vciRoutes: FastifyPluginAsyncTypebox<Oid4vciRouteOptions> = async (
  app,
  { oid4vci, metadata, statusLists, issuerCertificates },
) => {
  await app.register(formbody, { bodyLimit: 16 * 1024 })
  installOAuthErrors(app)

  // Both well-known forms: appended to the issuer id (what oid4vci-client asks for) and RFC 8615's.
  for (const path of [
    '/oid4vci/:tenant/.well-known/openid-credential-issuer',
    '/.well-known/openid-credential-issuer/oid4vci/:tenant',
  ]) {
    app.get(path, { schema: issuerMetadataSchema }, async (request, reply) =>
      reply.type('application/json').send(await metadata.issuer(request.params.tenant)),
    )
  }
  for (const path of [
    '/oid4vci/:tenant/.well-known/oauth-authorization-server',
    '/.well-known/oauth-authorization-server/oid4vci/:tenant',
  ]) {
    app.get(path, { schema: authorizationServerMetadataSchema }, async (request, reply) =>
      reply.type('application/json').send(await metadata.authorizationServer(request.params.tenant)),
    )
  }

  app.get('/oid4vci/:tenant/credential-offer/:id', { schema: offerSchema }, async (request, reply) =>
    reply.type('application/json').send(await oid4vci.offer(request.params.tenant, request.params.id)),
  )

  // The CA behind the tenant's x5c issuer keys, for relying parties and wallets to configure as a trust
  // anchor (out of band: fetching it over the same channel as the credential proves nothing by itself).
  app.get('/oid4vci/:tenant/trust-anchor', { schema: trustAnchorSchema }, async (request, reply) => {
    const pem = await issuerCertificates.trustAnchorPem(request.params.tenant)
    if (!pem) throw new OAuthError('not_found', `no credential issuer for tenant "${request.params.tenant}"`)
    return reply.type(PEM_MEDIA_TYPE).send(pem)
  })

  // The IACA behind the tenant's mdoc document signer (ISO 18013-5 Annex B.1.2), configured like the CA above.
  app.get('/oid4vci/:tenant/iaca', { schema: iacaSchema }, async (request, reply) => {
    const pem = await issuerCertificates.iacaPem(request.params.tenant)
    if (!pem) throw new OAuthError('not_found', `no credential issuer for tenant "${request.params.tenant}"`)
    return reply.type(PEM_MEDIA_TYPE).send(pem)
  })

  app.post(
    '/oid4vci/:tenant/token',
    {
      schema: tokenSchema,
      // Before the body schema: a JSON body is refused for its type, whatever its shape.
      preValidation: async (request) => {
        if (!isForm(request.headers['content-type'])) {
          throw new OAuthError('invalid_request', `the token request must be ${FORM_MEDIA_TYPE}`)
        }
      },
    },
    async (request, reply) =>
      reply
        .header('Pragma', 'no-cache')
        .type('application/json')
        .send(await oid4vci.token(request.params.tenant, request.body)),
  )

  app.post('/oid4vci/:tenant/nonce', { schema: nonceSchema }, async (request, reply) =>
    reply.type('application/json').send(await oid4vci.nonce(request.params.tenant)),
  )

  app.post('/oid4vci/:tenant/credential', { schema: credentialSchema }, async (request, reply) => {
    const result = await oid4vci.credential(
      request.params.tenant,
      request.headers.authorization,
      request.body,
    )
    if (result.status === 202) return reply.code(202).type('application/json').send(result.body)
    return reply.type('application/json').send(result.body)
  })

  app.post('/oid4vci/:tenant/deferred_credential', { schema: deferredSchema }, async (request, reply) => {
    const result = await oid4vci.deferred(request.params.tenant, request.headers.authorization, request.body)
    if (result.status === 202) return reply.code(202).type('application/json').send(result.body)
    return reply.type('application/json').send(result.body)
  })

  app.post('/oid4vci/:tenant/notification', { schema: notificationSchema }, async (request, reply) => {
    await oid4vci.notification(request.params.tenant, request.headers.authorization, request.body)
    return reply.code(204).send(null)
  })

  app.get('/oid4vci/:tenant/status/:id', { schema: statusListSchema }, async (request, reply) => {
    const jwt = await statusLists.credential(request.params.tenant, request.params.id)
    if (!jwt) throw new OAuthError('not_found', `no status list "${request.params.id}"`)
    // Revalidate every time: a cached list would hide a revocation.
    return reply.header('Cache-Control', 'no-cache').type(JWT_MEDIA_TYPE).send(jwt)
  })

  app.get('/oid4vci/:tenant/token-status/:id', { schema: tokenStatusListSchema }, async (request, reply) => {
    const jwt = await statusLists.tokenStatusList(request.params.tenant, request.params.id)
    if (!jwt) throw new OAuthError('not_found', `no status list "${request.params.id}"`)
    return reply.header('Cache-Control', 'no-cache').type(STATUS_LIST_JWT_MEDIA_TYPE).send(jwt)
  })
}
