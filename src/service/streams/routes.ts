import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { FINAL_STATES, type FlowState, type FlowStep } from '../../shared/flow.ts'
import { guard, principalOf } from '../auth/guard.ts'
import type { AuthService } from '../auth/service.ts'
import type { ServiceEvent, ServiceEvents } from '../events.ts'
import type { IssuanceService } from '../issuance/service.ts'
import type { Store } from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import { sessionState } from '../verification/lifecycle.ts'
import type { VerificationService } from '../verification/service.ts'
import { issuanceEventsSchema, sessionEventsSchema } from './schemas.ts'

// Server-sent event streams of one issuance process or verification session, for the relying party's
// backend (its QR page follows the flow without polling). Authenticated exactly like 4.3 and 4.7, fed by
// the same state-changed events as the webhooks. docs/api.md (Event streams) is the contract.

/** One state of the stream: `status` adds EXPIRED for an offer or session that timed out. */
export interface StreamState {
  kind: 'issuance' | 'verification'
  id: string
  status: FlowState
  /** snapshot (first message), then the event's step, or `expired`. */
  step: FlowStep
  at: string
}

/** Expiry is computed from the (injectable) clock, so it is checked on a tick rather than one timer. */
const TICK_MS = 1000
const HEARTBEAT_MS = 15_000

export interface StreamRouteOptions {
  auth: AuthService
  store: Store
  issuance: IssuanceService
  verification: VerificationService
  events: ServiceEvents
  clock: Clock
}

interface StreamSpec {
  first: StreamState
  /** The state an event brings, or undefined when the event is not about this stream's subject. */
  next(event: ServiceEvent): StreamState | undefined
  /** The EXPIRED state once `now` passes the deadline, while nothing ended the stream before. */
  expired(now: number): StreamState | undefined
}

function open(
  request: FastifyRequest,
  reply: FastifyReply,
  events: ServiceEvents,
  clock: Clock,
  live: Set<() => void>,
  spec: StreamSpec,
) {
  reply.hijack()
  const out = reply.raw
  out.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    // A stream is the connection's last response: once it ends, the socket closes (no idle keep-alive
    // socket holding up a shutdown).
    connection: 'close',
  })
  // HEAD (RFC 9110 §9.3.2): the stream's head and nothing more. Node sends a HEAD answer's head only with its
  // end, so a stream left open would keep the client waiting for it.
  if (request.method === 'HEAD') {
    out.end()
    return
  }
  let sequence = 0
  let closed = false
  const send = (state: StreamState) => {
    if (closed) return
    sequence++
    out.write(`id: ${sequence}\nevent: state\ndata: ${JSON.stringify(state)}\n\n`)
    if (FINAL_STATES.includes(state.status)) close()
  }
  const unsubscribe = events.on((event) => {
    const state = spec.next(event)
    if (state) send(state)
  })
  const tick = setInterval(() => {
    const state = spec.expired(clock.now())
    if (state) send(state)
  }, TICK_MS)
  const heartbeat = setInterval(() => out.write(': keep-alive\n\n'), HEARTBEAT_MS)
  function close() {
    if (closed) return
    closed = true
    live.delete(close)
    unsubscribe()
    clearInterval(tick)
    clearInterval(heartbeat)
    // The socket goes with the stream: ended, it is not reused, so nothing waits on it at shutdown.
    const socket = request.raw.socket
    out.end(() => socket.destroy())
    setTimeout(() => socket.destroy(), 1000).unref()
  }
  // The client went away: nobody reads any more, so drop the socket at once.
  request.raw.socket.on('close', close)
  live.add(close)
  // A subject that is already final answers its state and ends.
  send(spec.first)
  if (!closed) {
    const expired = spec.expired(clock.now())
    if (expired) send(expired)
  }
}

export const streamRoutes: FastifyPluginAsyncTypebox<StreamRouteOptions> = async (app, opts) => {
  const { auth, store, issuance, verification, events, clock } = opts
  const appOnly = guard(auth, ['app'])
  // Open streams end when the service closes: a stream never holds shutdown up.
  const live = new Set<() => void>()
  app.addHook('preClose', async () => {
    for (const close of [...live]) close()
  })

  app.get(
    '/admin/v1/issuanceRequests/:id/events',
    {
      onRequest: appOnly,
      schema: issuanceEventsSchema,
    },
    async (request, reply) => {
      const process = await issuance.getProcess(principalOf(request), request.params.id)
      const grant = await store.grants.get(process.id)
      const id = process.id
      let redeemed = grant?.codeState !== 'live'
      const state = (status: StreamState['status'], step: FlowStep, at: number): StreamState => ({
        kind: 'issuance',
        id,
        status,
        step,
        at: isoTime(at),
      })
      open(request, reply, events, clock, live, {
        first: state(process.status, 'snapshot', process.updatedAt),
        next: (event) => {
          if (event.kind !== 'issuance' || event.processId !== id) return undefined
          if (event.step !== 'offer_created' && event.step !== 'offer_retrieved') redeemed = true
          return state(event.status, event.step, event.at)
        },
        // An offer nobody redeemed lapses with its code; once redeemed, the process waits for the issuer.
        expired: (now) =>
          !redeemed && grant && now >= grant.codeExpiresAt
            ? state('EXPIRED', 'expired', grant.codeExpiresAt)
            : undefined,
      })
    },
  )

  app.get(
    '/api/v3/sessions/:id/events',
    {
      onRequest: appOnly,
      schema: sessionEventsSchema,
    },
    async (request, reply) => {
      const session = await verification.getSession(principalOf(request), request.params.id)
      const id = session.id
      let final = session.status !== 'PENDING'
      const state = (status: StreamState['status'], step: FlowStep, at: number): StreamState => ({
        kind: 'verification',
        id,
        status,
        step,
        at: isoTime(at),
      })
      open(request, reply, events, clock, live, {
        first: state(sessionState(session, clock.now()), 'snapshot', session.updatedAt),
        next: (event) => {
          if (event.kind !== 'verification' || event.sessionId !== id) return undefined
          if (event.status !== 'PENDING') final = true
          return state(event.status, event.step, event.at)
        },
        expired: (now) =>
          !final && now >= session.expiresAt ? state('EXPIRED', 'expired', session.expiresAt) : undefined,
      })
    },
  )
}
