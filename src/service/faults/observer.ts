import type { FastifyInstance, FastifyRequest } from 'fastify'
import { isObject } from '../../shared/json.ts'
import type { Clock } from '../util/clock.ts'
import { cameThroughForeignOrigin } from './foreign-origin.ts'
import type { Endpoint, Exchange, FaultRegistry } from './index.ts'

// The judge's evidence: one Exchange per request on a tenant's wallet-facing route, recorded once the answer
// is sent (so its status is known). What only the service knows (a vp_token inside a direct_post.jwt JWE,
// the error a wallet posted) is noted on the request by the route through noteExchange and merged here.

/** Route patterns (as registered) of the wallet-facing routes, and the endpoint each one is. */
const ENDPOINTS: Readonly<Record<string, Endpoint>> = {
  '/oid4vci/:tenant/credential-offer/:id': 'offer',
  '/oid4vci/:tenant/.well-known/openid-credential-issuer': 'issuer-metadata',
  '/.well-known/openid-credential-issuer/oid4vci/:tenant': 'issuer-metadata',
  '/oid4vci/:tenant/.well-known/oauth-authorization-server': 'authorization-server-metadata',
  '/.well-known/oauth-authorization-server/oid4vci/:tenant': 'authorization-server-metadata',
  '/oid4vci/:tenant/par': 'par',
  '/oid4vci/:tenant/authorize': 'authorize',
  '/oid4vci/:tenant/token': 'token',
  '/oid4vci/:tenant/nonce': 'nonce',
  '/oid4vci/:tenant/credential': 'credential',
  '/oid4vci/:tenant/deferred_credential': 'deferred',
  '/oid4vci/:tenant/notification': 'notification',
  '/oid4vci/:tenant/status/:id': 'status-list',
  '/oid4vci/:tenant/token-status/:id': 'status-list',
  '/oid4vci/:tenant/trust-anchor': 'trust-anchor',
  '/oid4vp/:tenant/requests/:id': 'request',
  '/oid4vp/:tenant/responses/:id': 'response',
}

type Facts = Partial<Omit<Exchange, 'at' | 'endpoint' | 'method' | 'status'>>

// Keyed by request object: nothing is added to requests of an app without faults.
const notes = new WeakMap<FastifyRequest, Facts>()

/** Adds facts to the exchange this request will be recorded as (a route calls it when faults are on). */
export function noteExchange(request: FastifyRequest, facts: Facts): void {
  notes.set(request, { ...notes.get(request), ...facts })
}

/**
 * OpenID4VP 1.0 Appendix A: one route for a session over the Digital Credentials API, its GET the request
 * entry (fetched by the page, in a wallet test by the harness playing the browser), its POST the answer.
 */
const DC_API_ROUTE = '/oid4vp/:tenant/dc-api/:id'

function observed(request: FastifyRequest): { endpoint: Endpoint; tenant: string } | undefined {
  const url = request.routeOptions.url ?? ''
  const endpoint =
    url === DC_API_ROUTE ? (request.method === 'POST' ? 'response' : 'request') : ENDPOINTS[url]
  const tenant = (request.params as { tenant?: unknown } | undefined)?.tenant
  return endpoint && typeof tenant === 'string' ? { endpoint, tenant } : undefined
}

/** Whether a jwt proof's payload carries a non-empty nonce; decoded only, never verified. */
function jwtHasNonce(jwt: unknown): boolean {
  if (typeof jwt !== 'string') return false
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8'))
    return isObject(payload) && typeof payload.nonce === 'string' && payload.nonce.length > 0
  } catch {
    return false
  }
}

/** A di_vp (ldp_vp) proof's nonce is the challenge of its Data Integrity proof. */
function diVpHasNonce(vp: unknown): boolean {
  if (!isObject(vp)) return false
  const proof = Array.isArray(vp.proof) ? vp.proof[0] : vp.proof
  return isObject(proof) && typeof proof.challenge === 'string' && proof.challenge.length > 0
}

/** Credential request: true when every key proof carried a nonce; undefined when there is no proof to read. */
export function proofNonceOf(body: unknown): boolean | undefined {
  if (!isObject(body)) return undefined
  const proofs: { type: string; value: unknown }[] = []
  if (isObject(body.proof) && typeof body.proof.proof_type === 'string') {
    proofs.push({ type: body.proof.proof_type, value: body.proof[body.proof.proof_type] })
  }
  if (isObject(body.proofs)) {
    for (const [type, list] of Object.entries(body.proofs)) {
      if (Array.isArray(list)) for (const value of list) proofs.push({ type, value })
    }
  }
  if (proofs.length === 0) return undefined
  return proofs.every(({ type, value }) => (type === 'jwt' ? jwtHasNonce(value) : diVpHasNonce(value)))
}

/** The facts the request itself shows (no service knowledge needed). */
function requestFacts(endpoint: Endpoint, body: unknown): Facts {
  if (endpoint === 'credential') {
    const proofNonce = proofNonceOf(body)
    return proofNonce === undefined ? {} : { proofNonce }
  }
  if (endpoint === 'notification' && isObject(body) && typeof body.event === 'string') {
    return { notification: body.event }
  }
  return {}
}

/**
 * Installs the observer on the root instance, before the route plugins are registered, so its hooks run for
 * the encapsulated oid4vci and oid4vp plugins too.
 */
export function installExchangeObserver(app: FastifyInstance, registry: FaultRegistry, clock: Clock): void {
  // The OAuth error code is known only from the answer itself (the plugins' error handlers build it).
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400 && typeof payload === 'string' && observed(request)) {
      try {
        const body: unknown = JSON.parse(payload)
        if (isObject(body) && typeof body.error === 'string') noteExchange(request, { error: body.error })
      } catch {
        // not a JSON error body: no code to record
      }
    }
    return payload
  })
  app.addHook('onResponse', async (request, reply) => {
    const seen = observed(request)
    if (!seen) return
    registry.record(seen.tenant, {
      at: clock.now(),
      endpoint: seen.endpoint,
      method: request.method,
      status: reply.statusCode,
      origin: cameThroughForeignOrigin(request.raw) ? 'foreign' : 'public',
      ...requestFacts(seen.endpoint, request.body),
      ...notes.get(request),
    })
  })
}
