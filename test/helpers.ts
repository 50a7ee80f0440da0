import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Problem } from '../src/client/index.ts'
import { buildApp } from '../src/service/app.ts'
import {
  DEMO_CONFIG_PATH,
  loadConfigFile,
  parseConfig,
  type ServiceConfig,
} from '../src/service/config/index.ts'
import { ManualClock } from '../src/service/util/clock.ts'
import { PROBLEM_MEDIA_TYPE } from '../src/shared/wire.ts'
import type { TestDatabase } from './fixtures/stores.ts'

export const demoConfig = (): ServiceConfig => loadConfigFile(DEMO_CONFIG_PATH)

const demoKey = (role: string, template?: string) => {
  const tenant = demoConfig().tenants[0]
  const key = tenant?.apiKeys.find(
    (k) => k.role === role && (template === undefined || k.template === template),
  )
  if (!tenant || !key) throw new Error(`demo config has no ${role} key`)
  return { id: key.id, secret: key.secret, tenant: tenant.id, template: key.template }
}
export const DEMO = {
  app: demoKey('app', 'degree'),
  verifierApp: demoKey('app', 'degree-check'),
  admin: demoKey('admin'),
  operator: demoKey('operator'),
}

/** A second tenant beside the demo one, for isolation tests. */
export function twoTenantConfig(): ServiceConfig {
  const raw = structuredClone(demoConfig()) as unknown as { tenants: unknown[] }
  raw.tenants.push({
    id: 'other',
    apiKeys: [
      {
        id: '11111111-2222-4333-8444-555555555555',
        secret: 'other-app-secret-abcdefghijklmnop',
        role: 'app',
        template: 'degree',
      },
      {
        id: '66666666-7777-4888-9999-aaaaaaaaaaaa',
        secret: 'other-admin-secret-abcdefghijklmn',
        role: 'admin',
      },
    ],
    issuanceTemplates: [{ id: 'degree', credentialType: 'UniversityDegreeCredential' }],
  })
  return parseConfig(raw)
}
export const OTHER = {
  app: {
    id: '11111111-2222-4333-8444-555555555555',
    secret: 'other-app-secret-abcdefghijklmnop',
    tenant: 'other',
  },
  admin: {
    id: '66666666-7777-4888-9999-aaaaaaaaaaaa',
    secret: 'other-admin-secret-abcdefghijklmn',
    tenant: 'other',
  },
}

export interface TestApp {
  app: FastifyInstance
  clock: ManualClock
  close(): Promise<void>
}

/**
 * The app on the manual clock. `where`: the data folder buildApp opens its store in (default: in memory), or
 * a database of test/fixtures/stores.ts (SQLite or PostgreSQL), opened here on the app's clock and closed
 * by close() after the app.
 */
export async function makeApp(
  config: ServiceConfig = demoConfig(),
  where: string | TestDatabase = ':memory:',
): Promise<TestApp> {
  const clock = new ManualClock(Date.parse('2026-11-22T10:15:00.123Z'))
  const publicUrl = () => 'https://issuer.example'
  if (typeof where === 'string') {
    const app = await buildApp({ config, clock, dataDir: where, publicUrl })
    return { app, clock, close: () => app.close() }
  }
  const store = await where.open({ clock })
  try {
    // buildApp leaves a store it is given open: it is closed here, after the app.
    const app = await buildApp({ config, clock, store, publicUrl })
    return {
      app,
      clock,
      close: async () => {
        try {
          await app.close()
        } finally {
          await store.close()
        }
      },
    }
  } catch (error) {
    await store.close()
    throw error
  }
}

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`

export function loginRequest(
  app: FastifyInstance,
  key: { id: string; secret: string; tenant: string },
  ssiconfig?: string,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/admin/v1/api_keys/login',
    headers: {
      authorization: basic(key.id, key.secret),
      tenant: key.tenant,
      'content-type': 'application/json',
      ...(ssiconfig !== undefined ? { ssiconfig } : {}),
    },
  })
}

export async function tokenFor(
  app: FastifyInstance,
  key: { id: string; secret: string; tenant: string },
  ssiconfig?: string,
): Promise<string> {
  const response = await loginRequest(app, key, ssiconfig)
  if (response.statusCode !== 200) throw new Error(`login failed: ${response.statusCode} ${response.body}`)
  return String(response.headers.token)
}

export const auth = (token: string) => ({ authorization: `jwt ${token}` })

/** POST 4.2 with any payload, for negative tests. */
export function postOffer(app: FastifyInstance, token: string, payload: object) {
  return app.inject({
    method: 'POST',
    url: '/api/v3/oidc-issuance/credential-offer',
    headers: auth(token),
    payload,
  })
}

export async function createOffer(app: FastifyInstance, token: string, group = 'degree') {
  const response = await postOffer(app, token, { group })
  if (response.statusCode !== 201) throw new Error(`offer failed: ${response.statusCode} ${response.body}`)
  const uri = response.json<{ credential_offer_uri: string }>().credential_offer_uri
  const inner = new URL(new URLSearchParams(uri.split('?')[1]).get('credential_offer_uri') ?? '')
  return { uri, processId: inner.pathname.split('/').pop() ?? '', inner }
}

/** Asserts a problem+json answer and returns it. */
export function problemOf(response: LightMyRequestResponse) {
  const type = String(response.headers['content-type'])
  if (!type.startsWith(PROBLEM_MEDIA_TYPE)) {
    throw new Error(`expected ${PROBLEM_MEDIA_TYPE}, got ${type}: ${response.body}`)
  }
  return response.json<Problem>()
}

/**
 * Runs `vc-harness wallet <argv>` in this process with console.log captured (console.error silenced): the
 * argument checks, without paying a child process's start-up of the wallet stack.
 */
export async function walletCli(argv: string[]): Promise<{ out: string; error?: Error & { code?: string } }> {
  const { wallet } = await import('../src/cli/wallet.ts')
  const out: string[] = []
  const log = console.log
  const error = console.error
  console.log = (...args: unknown[]) => out.push(args.join(' '))
  console.error = () => {}
  try {
    await wallet(argv)
    return { out: out.join('\n') }
  } catch (e) {
    return { out: out.join('\n'), error: e as Error & { code?: string } }
  } finally {
    console.log = log
    console.error = error
  }
}
