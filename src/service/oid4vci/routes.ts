import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ATTESTATION_HEADER, ATTESTATION_POP_HEADER } from '../../shared/oauth/client-attestation.ts'
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
import type { AuthorizationAnswer, AuthorizationEndpoints, ClientHeaders } from './authorization.ts'
import type { DpopGate } from './dpop.ts'
import {
  authorizationServerMetadataSchema,
  authorizeDecisionSchema,
  authorizeSchema,
  credentialSchema,
  deferredSchema,
  iacaSchema,
  issuerMetadataSchema,
  nonceSchema,
  notificationSchema,
  offerSchema,
  parSchema,
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
  token(
    tenantId: string,
    form: Record<string, unknown>,
    headers?: ClientHeaders,
  ): Promise<Answer<typeof tokenSchema>>
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
  authorization: AuthorizationEndpoints
  dpop: DpopGate
}

/** The headers a wallet authenticates with (RFC 9449 DPoP; attestation-based client authentication §6.1). */
const clientHeaders = (headers: Record<string, string | string[] | undefined>): ClientHeaders => ({
  dpop: headers.dpop,
  attestation: headers[ATTESTATION_HEADER],
  attestationPop: headers[ATTESTATION_POP_HEADER],
})

/**
 * The user step page's CSP: nothing but its own inline style; the form posts here, and CSP form-action also
 * governs the redirect that answers it, so the wallet's redirect_uri (its origin, or its scheme for an app
 * link such as eudi-openid4vci://) is allowed too.
 */
function pageSecurityPolicy(redirectUri: string) {
  const target = new URL(redirectUri)
  const source = target.protocol === 'http:' || target.protocol === 'https:' ? target.origin : target.protocol
  return `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${source}; frame-ancestors 'none'`
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The user step's page: what is asked, by whom, and two buttons (ids approve / decline for browser tests). */
function authorizationPage(page: Extract<AuthorizationAnswer, { page: unknown }>['page']) {
  const field = (name: string, value: string) =>
    `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorize issuance</title>
<style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem}</style>
</head><body>
<h1>Authorize issuance</h1>
<p>The wallet <strong id="client">${escapeHtml(page.clientId)}</strong> asks for the credential
<strong id="credential">${escapeHtml(page.credential)}</strong> from ${escapeHtml(page.issuer)}.</p>
<form method="post" action="authorize">
${field('request_uri', page.requestUri)}${field('client_id', page.clientId)}
<button id="approve" name="decision" value="approve" type="submit">Approve</button>
<button id="decline" name="decision" value="decline" type="submit">Decline</button>
</form>
</body></html>`
}

/**
 * The wallet-facing issuer of every tenant (docs/issuance.md). Encapsulated: its form parser and its
 * OAuth-style error handler apply to these routes only.
 */
export const oid4vciRoutes: FastifyPluginAsyncTypebox<Oid4vciRouteOptions> = async (
  app,
  { oid4vci, metadata, statusLists, issuerCertificates, authorization, dpop },
) => {
  await app.register(formbody, { bodyLimit: 16 * 1024 })
  installOAuthErrors(app)
  // RFC 9449 §8.2 / §9: a fresh DPoP-Nonce on every answer to a request that carried a DPoP proof.
  const withDpopNonce = (
    reply: { header(name: string, value: string): unknown },
    tenantId: string,
    given: unknown,
  ) => {
    if (given !== undefined) reply.header('DPoP-Nonce', dpop.newNonce(tenantId))
  }
  const requireForm = async (request: { headers: Record<string, unknown> }) => {
    if (!isForm(request.headers['content-type'] as string | undefined)) {
      throw new OAuthError('invalid_request', `the request must be ${FORM_MEDIA_TYPE}`)
    }
  }

  app.post(
    '/oid4vci/:tenant/par',
    { schema: parSchema, preValidation: requireForm },
    async (request, reply) => {
      const answer = await authorization.par(
        request.params.tenant,
        request.body,
        clientHeaders(request.headers),
      )
      withDpopNonce(reply, request.params.tenant, request.headers.dpop)
      return reply.code(201).header('Cache-Control', 'no-store').type('application/json').send(answer)
    },
  )

  app.get('/oid4vci/:tenant/authorize', { schema: authorizeSchema }, async (request, reply) => {
    const answer = await authorization.authorize(request.params.tenant, request.query)
    if ('redirect' in answer) return reply.header('Cache-Control', 'no-store').redirect(answer.redirect, 302)
    return reply
      .header('Cache-Control', 'no-store')
      .header('Content-Security-Policy', pageSecurityPolicy(answer.page.redirectUri))
      .header('X-Frame-Options', 'DENY')
      .type('text/html; charset=utf-8')
      .send(authorizationPage(answer.page))
  })

  app.post(
    '/oid4vci/:tenant/authorize',
    { schema: authorizeDecisionSchema, preValidation: requireForm },
    async (request, reply) => {
      const answer = await authorization.decide(request.params.tenant, request.body)
      return reply.header('Cache-Control', 'no-store').redirect(answer.redirect, 303)
    },
  )

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
    async (request, reply) => {
      const answer = await oid4vci.token(request.params.tenant, request.body, clientHeaders(request.headers))
      withDpopNonce(reply, request.params.tenant, request.headers.dpop)
      return reply
        .header('Pragma', 'no-cache')
        .header('Cache-Control', 'no-store')
        .type('application/json')
        .send(answer)
    },
  )

  app.post('/oid4vci/:tenant/nonce', { schema: nonceSchema }, async (request, reply) => {
    const answer = await oid4vci.nonce(request.params.tenant)
    withDpopNonce(reply, request.params.tenant, request.headers.dpop)
    return reply.type('application/json').send(answer)
  })

  app.post('/oid4vci/:tenant/credential', { schema: credentialSchema }, async (request, reply) => {
    const { tenant } = request.params
    const result = await oid4vci.credential(
      tenant,
      request.headers.authorization,
      request.body,
      clientHeaders(request.headers),
    )
    withDpopNonce(reply, tenant, request.headers.dpop)
    if (result.status === 202) return reply.code(202).type('application/json').send(result.body)
    return reply.type('application/json').send(result.body)
  })

  app.post('/oid4vci/:tenant/deferred_credential', { schema: deferredSchema }, async (request, reply) => {
    const { tenant } = request.params
    const result = await oid4vci.deferred(
      tenant,
      request.headers.authorization,
      request.body,
      clientHeaders(request.headers),
    )
    withDpopNonce(reply, tenant, request.headers.dpop)
    if (result.status === 202) return reply.code(202).type('application/json').send(result.body)
    return reply.type('application/json').send(result.body)
  })

  app.post('/oid4vci/:tenant/notification', { schema: notificationSchema }, async (request, reply) => {
    const { tenant } = request.params
    await oid4vci.notification(
      tenant,
      request.headers.authorization,
      request.body,
      clientHeaders(request.headers),
    )
    withDpopNonce(reply, tenant, request.headers.dpop)
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
