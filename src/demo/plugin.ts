// The demo relying party served beside the service by `vc-harness serve` (mounted at /demo through
// startServer's `plugins`): pages with <vc-flow-qr>, the component's bundle, and the backend the component
// talks to. It behaves like any relying party: API calls go over HTTP with the application keys of the
// configuration; the page never sees a key or a token. docs/qr-page.md is its documentation.
//
//   GET  /demo, /demo/issue, /demo/verify          pages (?transport=auto|websocket|polling)
//   GET  /demo/assets/vc-flow-qr.js[?v=<hash>]     the component (ETag = content hash)
//   POST /demo/api/issuance | /demo/api/verification            {} → 201 FlowCreated
//   GET  /demo/api/<kind>/<id>                      → 200 FlowStatus (reads 4.3 / 4.7; a final verification's outcome)
//   GET  /demo/api/<kind>/<id>/socket               WebSocket: the service's event stream as JSON messages
//   GET  /demo/api/verification/<id>/dc-api         → 200 {protocol, data}: the DC API request entry
//   POST /demo/api/verification/<id>/dc-api         {protocol, data} (+ the Origin header) → 200 {result}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import websocket from '@fastify/websocket'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import type { SandboxPlan } from '../harness/sandbox.ts'
import type { ServiceConfig } from '../service/config/index.ts'
import { type Clock, systemClock } from '../service/util/clock.ts'
import { Type } from '../service/util/typebox.ts'
import { PROBLEM_MEDIA_TYPE } from '../shared/wire.ts'
import { FLOW_KINDS, type FlowKind, type FlowStatus, type SocketMessage } from '../web/flow-state.ts'
import { componentBundle } from './assets.ts'
import { DemoBackend, DemoError } from './backend.ts'
import { flowPage, indexPage, PAGE_CSP, type PageContext } from './pages.ts'

export interface DemoOptions {
  config: ServiceConfig
  /** The templates and application keys the demo uses (planSandbox: --issue / --verify or the defaults). */
  plan: SandboxPlan
  /** The service's clock (offers lapse on it); default the system clock. */
  clock?: Clock
  fetch?: typeof fetch
  /** Open WebSocket relays at most; beyond, a socket is closed with 1013 and the page polls. Default 200. */
  maxSockets?: number
}

export type DemoPlugin = FastifyPluginAsync<{ baseUrl: () => string }> & { backend: DemoBackend }

/** Largest request body the demo API accepts (it takes `{}`). */
export const DEMO_BODY_LIMIT = 1024
/**
 * Largest DC API answer the demo forwards (a DigitalCredential's protocol and data: a vp_token or an
 * encrypted response); the service's own JSON limit by default (`bodyLimitBytes`).
 */
export const DEMO_DC_API_BODY_LIMIT = 256 * 1024
const SOCKET_PING_MS = 25_000

/** A URL of the server this process can call: a wildcard listening address becomes loopback. */
function loopback(url: string): string {
  return url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:')
}

const FlowId = Type.String({ pattern: '^[0-9a-fA-F-]{36}$', description: 'process or session id' })
const IdParams = Type.Object({ id: FlowId }, { additionalProperties: false })
const EmptyBody = Type.Object({}, { additionalProperties: false })
const PageQuery = Type.Object(
  {
    transport: Type.Optional(
      Type.Union([Type.Literal('auto'), Type.Literal('websocket'), Type.Literal('polling')]),
    ),
  },
  { additionalProperties: false },
)
const AssetQuery = Type.Object(
  { v: Type.Optional(Type.String({ maxLength: 64 })) },
  { additionalProperties: false },
)
const DcApiOfferSchema = Type.Object({
  protocol: Type.String(),
  expectedOrigins: Type.Array(Type.String()),
})
const FlowCreatedSchema = Type.Object({
  kind: Type.String(),
  id: Type.String(),
  link: Type.String(),
  template: Type.String(),
  credentialTypes: Type.Array(Type.String()),
  expiresAt: Type.String(),
  txCode: Type.Optional(Type.String()),
  profile: Type.Optional(Type.String()),
  requested: Type.Optional(
    Type.Array(
      Type.Object({
        id: Type.String(),
        formats: Type.Array(Type.String()),
        types: Type.Array(Type.String()),
        claims: Type.Array(Type.String()),
      }),
    ),
  ),
  dcApi: Type.Optional(DcApiOfferSchema),
})
const FlowOutcomeSchema = Type.Object({
  failedChecks: Type.Optional(Type.Array(Type.Object({ check: Type.String(), message: Type.String() }))),
  shared: Type.Optional(
    Type.Array(
      Type.Object({
        type: Type.String(),
        issuer: Type.String(),
        claims: Type.Array(Type.Object({ path: Type.String(), value: Type.String() })),
      }),
    ),
  ),
})
const FlowStatusSchema = Type.Object({
  kind: Type.String(),
  id: Type.String(),
  status: Type.String(),
  step: Type.String(),
  at: Type.String(),
  outcome: Type.Optional(FlowOutcomeSchema),
})
/** A request entry or an answer: the protocol and a JSON object (passed through as is). */
const DcApiMessageSchema = Type.Object({
  protocol: Type.String({ minLength: 1, maxLength: 64 }),
  data: Type.Object({}, { additionalProperties: true }),
})
const DcApiBody = Type.Object(
  {
    protocol: Type.String({ minLength: 1, maxLength: 64 }),
    data: Type.Object({}, { additionalProperties: true }),
  },
  { additionalProperties: false },
)
/** The page's Origin, as the browser sets it on every POST: the origin the wallet was told of. */
const OriginHeaders = Type.Object({ origin: Type.String({ minLength: 1, maxLength: 2048 }) })
const DcApiResult = Type.Object({
  result: Type.Union([Type.Literal('verified'), Type.Literal('rejected')]),
})
const DemoProblem = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  code: Type.String(),
})

const TITLES: Record<DemoError['code'], string> = {
  flow_not_found: 'Flow not found',
  dc_api_not_offered: 'No Digital Credentials API request for this flow',
  answer_refused: "The service could not read the wallet's answer",
  upstream_failed: 'The service refused the call',
  upstream_unreachable: 'The service cannot be reached',
  too_many_streams: 'Too many open streams',
}

function sendDemoError(reply: FastifyReply, error: DemoError) {
  return reply
    .code(error.status)
    .type(PROBLEM_MEDIA_TYPE)
    .send({
      type: `urn:vc-harness:demo:problem:${error.code}`,
      title: TITLES[error.code],
      status: error.status,
      detail: error.message,
      code: error.code,
    })
}

/** The minimal surface of a `ws` WebSocket the relay uses. */
interface RelaySocket {
  readonly readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  ping(): void
  on(event: 'close' | 'error', listener: () => void): void
}
const WS_OPEN = 1

/** Builds the demo plugin; register it with startServer's `plugins`, prefix /demo. */
export function demoPlugin(options: DemoOptions): DemoPlugin {
  let baseUrl = () => ''
  const backend = new DemoBackend({
    plan: options.plan,
    apiUrl: () => loopback(baseUrl()),
    clock: options.clock ?? systemClock,
    offerLifetimeMs: options.config.oid4vci.preAuthorizedCodeLifetimeSeconds * 1000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  })
  const maxSockets = options.maxSockets ?? 200

  // Typed from the schemas (type provider): the querystring and params below are what the handlers read.
  const plugin: FastifyPluginAsyncTypebox<{ baseUrl: () => string }> = async (app, opts) => {
    baseUrl = opts.baseUrl
    // Built once per process, at start: a broken component stops start-up rather than the first page view.
    const bundle = await componentBundle()
    const context: PageContext = { prefix: app.prefix, plan: options.plan, assetHash: bundle.hash }
    // One @fastify/websocket per server: reuse the service's when it registered one for the whole app.
    if (!app.hasDecorator('websocketServer')) {
      await app.register(websocket, { options: { maxPayload: DEMO_BODY_LIMIT } })
    }

    app.addHook('onSend', async (_request, reply) => {
      reply.header('referrer-policy', 'no-referrer')
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
    })

    const page = (reply: FastifyReply, html: string) =>
      reply.type('text/html; charset=utf-8').header('content-security-policy', PAGE_CSP).send(html)
    const pageSchema = { hide: true, querystring: PageQuery }

    app.get('/', { schema: { hide: true } }, async (_request, reply) => page(reply, indexPage(context)))
    app.get('/issue', { schema: pageSchema }, async (request, reply) =>
      page(reply, flowPage(context, 'issuance', request.query.transport)),
    )
    app.get('/verify', { schema: pageSchema }, async (request, reply) =>
      page(reply, flowPage(context, 'verification', request.query.transport)),
    )

    app.get(
      '/assets/vc-flow-qr.js',
      { schema: { hide: true, querystring: AssetQuery } },
      async (request, reply) => {
        // The hashed URL never changes content: cache it for good. Without the hash: revalidate by ETag.
        reply
          .header('etag', bundle.etag)
          .header(
            'cache-control',
            request.query.v === bundle.hash ? 'public, max-age=31536000, immutable' : 'no-cache',
          )
          .type('text/javascript; charset=utf-8')
        if (request.headers['if-none-match'] === bundle.etag) return reply.code(304).send()
        return reply.send(bundle.code)
      },
    )

    const sockets = new Set<{ socket: RelaySocket; upstream: AbortController }>()
    app.addHook('preClose', async () => {
      for (const { socket, upstream } of sockets) {
        upstream.abort()
        socket.close(1001, 'server closing')
      }
    })

    for (const kind of FLOW_KINDS) {
      app.post(
        `/api/${kind}`,
        {
          bodyLimit: DEMO_BODY_LIMIT,
          schema: {
            hide: true,
            body: EmptyBody,
            response: { 201: FlowCreatedSchema, '4xx': DemoProblem, '5xx': DemoProblem },
          },
        },
        async (_request, reply) => {
          try {
            return reply.code(201).send(await backend.open(kind))
          } catch (error) {
            if (error instanceof DemoError) return sendDemoError(reply, error)
            throw error
          }
        },
      )

      app.get(
        `/api/${kind}/:id`,
        {
          schema: {
            hide: true,
            params: IdParams,
            response: { 200: FlowStatusSchema, '4xx': DemoProblem, '5xx': DemoProblem },
          },
        },
        async (request, reply) => {
          try {
            return reply.send(await backend.status(kind, request.params.id))
          } catch (error) {
            if (error instanceof DemoError) return sendDemoError(reply, error)
            throw error
          }
        },
      )

      app.get(
        `/api/${kind}/:id/socket`,
        {
          websocket: true,
          schema: { hide: true, params: IdParams },
          // Refused before the upgrade: only flows this backend opened are relayed.
          preHandler: async (request, reply) => {
            try {
              backend.flow(kind, request.params.id)
            } catch (error) {
              if (error instanceof DemoError) return sendDemoError(reply, error)
              throw error
            }
          },
        },
        (socket: RelaySocket, request) => relay(kind, request.params.id, socket),
      )
    }

    // The Digital Credentials API of a verification (OpenID4VP 1.0 Appendix A): the request entry, the answer.
    app.get(
      '/api/verification/:id/dc-api',
      {
        schema: {
          hide: true,
          params: IdParams,
          response: { 200: DcApiMessageSchema, '4xx': DemoProblem, '5xx': DemoProblem },
        },
      },
      async (request, reply) => {
        try {
          return reply.send(await backend.dcApiRequest(request.params.id))
        } catch (error) {
          if (error instanceof DemoError) return sendDemoError(reply, error)
          throw error
        }
      },
    )
    app.post(
      '/api/verification/:id/dc-api',
      {
        bodyLimit: DEMO_DC_API_BODY_LIMIT,
        schema: {
          hide: true,
          params: IdParams,
          headers: OriginHeaders,
          body: DcApiBody,
          response: { 200: DcApiResult, '4xx': DemoProblem, '5xx': DemoProblem },
        },
      },
      async (request, reply) => {
        try {
          const { protocol, data } = request.body
          return reply.send(
            await backend.dcApiRespond(request.params.id, request.headers.origin, {
              protocol,
              data: data as Record<string, unknown>,
            }),
          )
        } catch (error) {
          if (error instanceof DemoError) return sendDemoError(reply, error)
          throw error
        }
      },
    )

    function relay(kind: FlowKind, id: string, socket: RelaySocket) {
      const send = (message: SocketMessage) => {
        if (socket.readyState === WS_OPEN) socket.send(JSON.stringify(message))
      }
      if (sockets.size >= maxSockets) {
        send({ type: 'error', message: 'too many live connections: poll instead' })
        socket.close(1013, 'try again later')
        return
      }
      const entry = { socket, upstream: new AbortController() }
      sockets.add(entry)
      const ping = setInterval(() => {
        if (socket.readyState === WS_OPEN) socket.ping()
      }, SOCKET_PING_MS)
      ping.unref()
      const done = () => {
        clearInterval(ping)
        sockets.delete(entry)
        entry.upstream.abort()
      }
      socket.on('close', done)
      socket.on('error', done)
      let final = false
      backend
        .follow(
          kind,
          id,
          (state: FlowStatus) => {
            if (state.status !== 'PENDING') final = true
            send({ type: 'state', ...state })
          },
          entry.upstream.signal,
        )
        .then(
          () => {
            if (entry.upstream.signal.aborted) return
            // The service ended its stream: after a final state, or because it is closing (the page polls).
            socket.close(final ? 1000 : 1011, final ? 'flow ended' : 'stream ended early')
          },
          (error: unknown) => {
            if (entry.upstream.signal.aborted) return
            const message = error instanceof DemoError ? error.message : 'the event stream failed'
            send({ type: 'error', message })
            socket.close(1011, 'upstream error')
          },
        )
        .finally(done)
    }
  }
  return Object.assign(plugin, { backend })
}
