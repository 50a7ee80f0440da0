import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { ValidateFunction } from 'ajv'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { SECURITY_SCHEMES } from './auth/security.ts'
import type { ServiceConfig } from './config/index.ts'
import { installErrorHandling } from './errors/handler.ts'
import { ProblemSchema } from './errors/schemas.ts'
import { ProcessSchema } from './issuance/schemas.ts'
import { installRequestLog, type RequestLogWriter, withRedactedUrls } from './request-log.ts'
import type { TlsCredentials } from './tls.ts'
import { newAjv } from './util/ajv.ts'
import { installJsonLimits } from './util/json-limits.ts'
import type { PublicUrls } from './util/urls.ts'
import { PACKAGE_VERSION } from './util/version.ts'

// The HTTP layer every route shares: the Fastify instance with its compilers, timeouts, limits, error
// handling and headers, and the OpenAPI page. app.ts builds it, then the services (services.ts), then
// registers the routes.

/** The relying-party API and the portal: every answer is per caller and most carry personal data. */
const API_PATH = /^\/(?:api|admin|portal)\//

// Bodies are validated strictly (no type coercion); query strings, params and headers arrive as text
// and are coerced. Neither instance strips unknown fields: they are rejected with a 400 naming them.
function validatorCompiler() {
  const options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const
  const body = newAjv({ ...options, coerceTypes: false })
  const text = newAjv({ ...options, coerceTypes: 'array' })
  // Compiled at the route's first request, not at start-up (~140 ms of `serve`'s start, bench/startup.ts).
  // test/service/fuzz-openapi.test.ts sends every route requests, so a schema Ajv refuses still fails a test.
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => {
    let compiled: ValidateFunction | undefined
    const validate = (data: unknown) => {
      compiled ??= (httpPart === 'body' ? body : text).compile(schema)
      const ok = compiled(data)
      validate.errors = compiled.errors
      return ok
    }
    validate.errors = undefined as ValidateFunction['errors']
    return validate
  }
}

/** The Fastify instance with everything but routes and services: listening is server.ts's. */
export function createHttpServer(options: {
  config: ServiceConfig
  logger?: FastifyServerOptions['logger']
  requestLog?: RequestLogWriter
  tls?: TlsCredentials
}): FastifyInstance {
  const { config } = options
  const httpServerOptions = {
    headersTimeout: config.http.headersTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, config.http.headersTimeoutMs / 2),
  }
  const app = Fastify({
    logger: withRedactedUrls(options.logger ?? false),
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: true,
    // Response serializers compile at their route's first answer, not at start-up.
    schemaController: {
      compilersFactory: {
        buildSerializer: (external, options) => {
          const compile = SerializerSelector()(external, options)
          return (route) => {
            let serialize: ((data: unknown) => string) | undefined
            return (data) => {
              serialize ??= compile(route)
              return serialize(data)
            }
          }
        },
      },
    },
    // Slow clients (a body one byte every 2 s, headers that never end) must not hold connections: Node answers
    // 408 and closes; its timeout checks run every connectionsCheckingInterval (default 30 s, too coarse).
    requestTimeout: config.http.requestTimeoutMs,
    connectionTimeout: config.http.idleTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    // Fastify hands `http` to http.createServer only; with `https` the same server options go there, beside
    // the certificate and key (node:https takes both kinds).
    ...(options.tls
      ? { https: { ...httpServerOptions, cert: options.tls.cert, key: options.tls.key } }
      : { http: httpServerOptions }),
    trustProxy: config.http.trustProxy.length > 0 ? config.http.trustProxy : false,
  } as FastifyServerOptions)
  app.server.maxConnections = config.http.maxConnections
  // A root hook before any route plugin: it sees every route and every 404.
  if (options.requestLog) installRequestLog(app, options.requestLog)
  app.setValidatorCompiler(validatorCompiler())
  installErrorHandling(app)
  installJsonLimits(app)
  app.decorateRequest('principal', null)
  app.addSchema(ProblemSchema)
  app.addSchema(ProcessSchema)
  // Callback hooks, not async ones: they run on every request, and a promise each is measurable (issue 20).
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('X-Content-Type-Options', 'nosniff')
    // Processes, sessions and keys carry credentials and personal data: no cache may keep them (RFC 9111 §5.2.2.5).
    if (API_PATH.test(request.url) && !reply.hasHeader('Cache-Control'))
      reply.header('Cache-Control', 'no-store')
    done(null, payload)
  })
  return app
}

/** The OpenAPI document of the relying-party API and the portal, and its page at /docs. */
export async function registerApiDocs(app: FastifyInstance, urls: PublicUrls): Promise<void> {
  await app.register(swagger, {
    openapi: {
      info: {
        title: 'vc-harness reference service',
        version: PACKAGE_VERSION,
        description:
          'Relying-party API of the Credential Issuance and Verification Service Interface, plus the management portal. ' +
          'To try a protected call here: run the login (Authentication) with "Authorize" → basic (API key id and secret) ' +
          'and the `tenant` header, copy the `Token` response header, then "Authorize" → jwt with `jwt <token>`.',
      },
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // `servers` is the public URL, known only once the service listens (port 0): set per request. When
    // the page was opened at another address (e.g. 127.0.0.1 while the public URL is the LAN one), that
    // address comes first, so that "Try it out" stays same-origin (the API sends no CORS headers).
    transformSpecification: (spec, request) => {
      const base = urls.absolute('')
      const servers = [{ url: base, description: 'the public URL (offers and requests carry it)' }]
      let publicHost: string | undefined
      try {
        publicHost = new URL(base).host
      } catch {}
      if (request.headers.host !== undefined && request.headers.host !== publicHost) {
        servers.unshift({ url: '/', description: 'the address this page was opened at' })
      }
      return { ...spec, servers }
    },
  })
}
