import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import type { Role } from '../config/schema.ts'
import { AppError } from '../errors/problem.ts'
import { type AuthService, hasRole } from './service.ts'
import type { Principal } from './tokens.ts'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null
  }
}

const ROLE_NAMES: Record<Role, string> = {
  app: 'an application',
  admin: 'an administrator',
  operator: 'an operator',
}

/** onRequest hook: authenticates the access token and requires one of `roles`. */
export function guard(auth: AuthService, roles: readonly Role[]): onRequestAsyncHookHandler {
  return async (request) => {
    const principal = await auth.authenticate(request.headers.authorization)
    if (!hasRole(principal, roles)) {
      throw new AppError(
        'role_forbidden',
        `this call must be made by ${roles.map((r) => ROLE_NAMES[r]).join(' or ')}; the token belongs to ${ROLE_NAMES[principal.role]}`,
      )
    }
    request.principal = principal
  }
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route has no guard: principal missing')
  return request.principal
}
