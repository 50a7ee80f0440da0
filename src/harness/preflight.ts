// Pre-flight: before any scenario, is the target usable as configured? A wrong key secret, an unreachable
// host, a busy receiver port or a template id that does not exist would otherwise surface as a hundred
// requirement failures ("login: HTTP 401", "fetch failed"). Checked once per process (BeforeAll in
// steps/support/hooks.ts), every problem at once, each with its fix:
//
// - every host (auth, issuer, verifier URL) answers HTTP at all (any status counts; a network error names
//   the URL and the error);
// - every key logs in (application, administrator, operator), and acts in its role (an administrator
//   reads the portal's key list; an operator's tenant creation is not refused as forbidden — the probe
//   sends no tenant id, so nothing is created);
// - every template id names a template of the tenant (a login naming it in `ssiconfig`), the issuance one
//   an issuance template, the application key linked to it;
// - the webhook receiver can listen on its fixed port.
//
// The embedded target is the service in this process, configured from the file the suite reads: it passes
// without a request. A failed pre-flight writes `<reports>/harness-error.txt` (one problem per line, each
// with its fix; `vc-harness conformance` reads it and exits 3) and stops the run before any scenario.
// docs/conformance-exchanges.md.

import { createServer } from 'node:net'
import { type ApiKeyCredentials, RelyingPartyClient } from '../client/index.ts'
import { SETTINGS } from './profile.ts'
import { redact } from './redact.ts'
import { HARNESS_ERROR_FILE, REPORTS_DIR_ENV, recordHarnessError } from './report.ts'
import type { Target } from './target-types.ts'

type Env = Record<string, string | undefined>
type FetchLike = typeof fetch

// The file a failed pre-flight (or a target that cannot start) leaves in the reports folder, and the
// variable naming that folder: `vc-harness conformance` reads the file (src/harness/report.ts).
export { HARNESS_ERROR_FILE, REPORTS_DIR_ENV }

export interface PreflightProblem {
  /** What is wrong, naming the setting, URL, key id or port (never a secret). */
  problem: string
  /** How to fix it. */
  fix: string
}

export interface PreflightOptions {
  env?: Env
  /** HTTP for the probes; default the global fetch. */
  fetch?: FetchLike
  /** How long each probe may take; default 5 s. */
  timeoutMs?: number
}

/** One line per problem: `<problem>. Fix: <fix>`. */
export function problemLine(p: PreflightProblem): string {
  return redact(`${p.problem.replace(/\.$/, '')}. Fix: ${p.fix}`).replace(/\s*\n\s*/g, ' ')
}

/** Thrown by the BeforeAll hook: the run stops before any scenario. */
export class HarnessError extends Error {
  override name = 'HarnessError'
  constructor(
    message: string,
    readonly lines: readonly string[],
  ) {
    super(message)
  }
}

/**
 * Adds the lines, redacted, one problem each, to `<reports>/harness-error.txt` (the folder is
 * VC_HARNESS_REPORTS, which `vc-harness conformance` sets for the run and its workers). Returns the file,
 * or undefined outside the command (plain cucumber-js: the thrown error is then all there is).
 */
export function writeHarnessError(lines: readonly string[], env: Env = process.env): string | undefined {
  return recordHarnessError(
    lines.map((l) => redact(l)),
    env,
  )
}

/** The terminal text of a failed pre-flight. */
export function describeProblems(
  target: Pick<Target, 'kind'>,
  problems: readonly PreflightProblem[],
): string {
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`
  return [
    `vc-harness pre-flight: the ${target.kind} target cannot be tested as configured (${count}); no requirement was run:`,
    ...problems.map((p) => `  ✘ ${problemLine(p)}`),
  ].join('\n')
}

/** Where a setting comes from, for fixes: `VC_HARNESS_APP_KEY_ID` or `app_key.id in /ci/profile.json (or VC_HARNESS_APP_KEY_ID)`. */
function settingOf(kind: Target['kind'], env: Env) {
  return (...keys: string[]): string => {
    if (kind !== 'external') {
      const file = env.VC_HARNESS_CONFIG || 'config/demo.json'
      return `the service configuration ${file}`
    }
    const settings = keys.map((key) => SETTINGS.find((s) => s.key === key)).filter((s) => s !== undefined)
    const fromEnv = settings.filter((s) => env[s.env])
    if (fromEnv.length === settings.length && settings.length > 0)
      return fromEnv.map((s) => s.env).join(' / ')
    const profile = env.VC_HARNESS_PROFILE
    const names = settings.map((s) => s.key).join(' / ')
    const vars = settings.map((s) => s.env).join(' / ')
    return profile ? `${names} in ${profile} (or ${vars})` : vars
  }
}

/** A URL without credentials, for messages. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.username || u.password) {
      u.username = ''
      u.password = ''
      return `${u.href.replace(/\/$/, '')} (credentials in the URL not shown)`
    }
  } catch {}
  return url
}

const errorCode = (error: unknown): { code: string; detail: string } => {
  const e = error as { name?: string; message?: string; code?: string; cause?: unknown }
  const cause = (e.cause ?? {}) as { code?: string; message?: string; cause?: { code?: string } }
  if (e.name === 'TimeoutError' || e.name === 'AbortError')
    return { code: 'timeout', detail: 'no answer in time' }
  const detail = cause.message ?? e.message ?? String(error)
  const code = cause.code ?? cause.cause?.code ?? e.code ?? (detail === 'bad port' ? 'bad port' : 'error')
  return { code, detail }
}

function networkFix(code: string, setting: string, timeoutMs: number): string {
  if (code === 'ECONNREFUSED') return `nothing listens there: start the deployment, or correct ${setting}`
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return `the host name does not resolve: check its spelling in ${setting}, and your DNS or VPN`
  if (code === 'timeout' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT')
    return `no answer within ${timeoutMs} ms: check that the host is up and that no firewall, VPN or proxy is in the way (${setting})`
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(code))
    return `the TLS certificate is not trusted: give Node the CA with NODE_EXTRA_CA_CERTS=<ca.pem>, or correct ${setting}`
  if (code === 'bad port')
    return `fetch refuses that port (it belongs to another protocol, e.g. 1, 25, 6000): serve the deployment on another port and correct ${setting}`
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET')
    return `the connection was cut: check that ${setting} names the service (http vs https, the port) and no proxy is in the way`
  return `check ${setting} and that the deployment is up`
}

const ROLE_NAME = { app: 'application key', admin: 'administrator key', operator: 'operator key' } as const
const KEY_SETTING = { app: 'app_key', admin: 'admin_key', operator: 'operator_key' } as const

const problemCodeOf = (body: unknown) =>
  body && typeof body === 'object' && typeof (body as { code?: unknown }).code === 'string'
    ? (body as { code: string }).code
    : undefined

/** Can something listen on host:port? Resolves with the error code, or undefined when it can. */
export function canListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((done) => {
    const server = createServer()
    server.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message))
    server.listen({ host, port, exclusive: true }, () => server.close(() => done(undefined)))
  })
}

/**
 * Every problem that would break the run, each with its fix; empty when the target is usable. The
 * embedded target passes at once.
 */
export async function preflight(target: Target, options: PreflightOptions = {}): Promise<PreflightProblem[]> {
  if (target.kind === 'embedded') return []
  const env = options.env ?? process.env
  const timeoutMs = options.timeoutMs ?? 5_000
  const baseFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
  const timed: FetchLike = (input, init) =>
    baseFetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' })
  const client = new RelyingPartyClient(target.urls, timed)
  const setting = settingOf(target.kind, env)
  const problems: PreflightProblem[] = []

  // Hosts, each distinct URL once, named by every setting that gives it.
  const hosts = new Map<string, string[]>()
  for (const [key, url] of [
    ['auth_url', target.urls.authUrl],
    ['issuer_url', target.urls.issuerUrl],
    ['verifier_url', target.urls.verifierUrl],
  ] as const) {
    hosts.set(url, [...(hosts.get(url) ?? []), key])
  }
  const receiverCheck = checkReceiver(target, env, setting)
  const hostProblems = await Promise.all(
    [...hosts].map(async ([url, keys]): Promise<PreflightProblem | undefined> => {
      try {
        const response = await timed(`${url}/health`, { method: 'GET' })
        await response.arrayBuffer().catch(() => undefined)
        return undefined
      } catch (error) {
        const { code, detail } = errorCode(error)
        const shown = code === 'error' ? detail : `${code}${detail && detail !== code ? ` (${detail})` : ''}`
        // Without the auth host no key or template can be checked: this run says so with the problem.
        const unchecked = url === target.urls.authUrl ? '; the keys and templates could not be checked' : ''
        return {
          problem: `${keys.join(', ')} ${shownUrl(url)} cannot be reached: ${shown}${unchecked}`,
          fix: networkFix(code, setting(...keys), timeoutMs),
        }
      }
    }),
  )
  for (const problem of hostProblems) if (problem) problems.push(problem)
  if (hostProblems[0] === undefined) {
    // hosts is keyed in the order auth, issuer, verifier: the first entry is the auth URL.
    problems.push(...(await checkKeysAndTemplates(target, client, setting)))
  }
  problems.push(...(await receiverCheck))
  return problems
}

type Login = { ok: true; token: string } | { ok: false; status: number; code?: string; error?: string }

async function login(client: RelyingPartyClient, credentials: ApiKeyCredentials): Promise<Login> {
  try {
    const response = await client.login(credentials)
    if (response.status === 200 && response.token) return { ok: true, token: response.token }
    const code = problemCodeOf(response.body)
    return { ok: false, status: response.status, ...(code ? { code } : {}) }
  } catch (error) {
    const { code, detail } = errorCode(error)
    return { ok: false, status: 0, error: `${code} (${detail})` }
  }
}

const answered = (result: Extract<Login, { ok: false }>) =>
  result.status === 0
    ? `got no answer: ${result.error}`
    : `was refused with HTTP ${result.status}${result.code ? ` ${result.code}` : ''}`

async function checkKeysAndTemplates(
  target: Target,
  client: RelyingPartyClient,
  setting: (...keys: string[]) => string,
): Promise<PreflightProblem[]> {
  const problems: PreflightProblem[] = []
  const fixture = target.tenant
  const tenant = fixture.tenant
  const keyProblem = (
    role: keyof typeof ROLE_NAME,
    keyId: string,
    keyTenant: string,
    result: Extract<Login, { ok: false }>,
  ): PreflightProblem => {
    const name = KEY_SETTING[role]
    const which = `${name} (${ROLE_NAME[role]} ${keyId}, tenant ${keyTenant})`
    if (result.status === 401)
      return {
        problem: `${which}: login ${answered(result)}: the key id or secret is wrong, the key was revoked, or it belongs to another tenant`,
        fix: `check ${setting(`${name}.id`, `${name}.secret`)} and ${role === 'operator' ? setting('operator_key.tenant', 'tenant') : setting('tenant')}`,
      }
    return {
      problem: `${which}: login ${answered(result)}`,
      fix: `check ${setting(`${name}.id`, `${name}.secret`)} and that ${target.urls.authUrl} is the login host of the deployment (auth_url)`,
    }
  }
  const adminCredentials = (ssiconfig?: string): ApiKeyCredentials => ({
    keyId: fixture.adminKey.id,
    secret: fixture.adminKey.secret,
    tenant,
    ...(ssiconfig !== undefined ? { ssiconfig } : {}),
  })

  // Every key logs in: the application key naming the issuance template it must be linked to.
  const [app, admin, operator] = await Promise.all([
    login(client, {
      keyId: fixture.appKey.id,
      secret: fixture.appKey.secret,
      tenant,
      ssiconfig: fixture.issuanceTemplate,
    }),
    login(client, adminCredentials()),
    target.operator ? login(client, target.operator) : undefined,
  ])
  if (!admin.ok) problems.push(keyProblem('admin', fixture.adminKey.id, tenant, admin))
  if (operator && !operator.ok && target.operator) {
    problems.push(keyProblem('operator', target.operator.keyId, target.operator.tenant ?? tenant, operator))
  }

  // Roles, and the templates: an administrator's login naming a template in ssiconfig says whether it
  // exists (4.1; any implementation of the interface answers it), the portal says of which kind.
  const adminToken = admin.ok ? admin.token : undefined
  const [adminRole, issuanceExists, otherExists, issuanceKind, operatorRole] = await Promise.all([
    adminToken ? client.listApiKeys(adminToken).catch(() => undefined) : undefined,
    adminToken ? login(client, adminCredentials(fixture.issuanceTemplate)) : undefined,
    adminToken ? login(client, adminCredentials(fixture.otherTemplate)) : undefined,
    adminToken ? templateKind(client, adminToken, fixture.issuanceTemplate) : undefined,
    operator?.ok
      ? // No id: no tenant can be created by this request; only whether it is refused as forbidden matters.
        client
          .request(target.urls.authUrl, '/portal/v1/tenants', {
            method: 'POST',
            token: operator.token,
            body: {},
          })
          .catch(() => undefined)
      : undefined,
  ])

  const adminRefused = adminRole !== undefined && (adminRole.status === 401 || adminRole.status === 403)
  if (adminRefused) {
    problems.push({
      problem: `admin_key (${fixture.adminKey.id}) logs in but is no administrator key: GET /portal/v1/api-keys was refused with HTTP ${adminRole.status}`,
      fix: `use an administrator key of tenant ${tenant} in ${setting('admin_key.id', 'admin_key.secret')}`,
    })
  }
  if (operatorRole && target.operator && (operatorRole.status === 401 || operatorRole.status === 403)) {
    problems.push({
      problem: `operator_key (${target.operator.keyId}) logs in but is no operator key: creating a tenant was refused with HTTP ${operatorRole.status}`,
      fix: `use a key with the role operator in ${setting('operator_key.id', 'operator_key.secret')}, or leave operator_key out (scenarios that need the portal are then not applicable)`,
    })
  }

  // Templates: only an administrator's answers tell (a key linked to a template may name no other).
  const missingTemplates = new Set<string>()
  if (adminToken && !adminRefused) {
    for (const [key, id, result] of [
      ['templates.issuance', fixture.issuanceTemplate, issuanceExists],
      ['templates.other', fixture.otherTemplate, otherExists],
    ] as const) {
      if (!result || result.ok) continue
      if (result.status === 403 && result.code === 'template_not_allowed') {
        missingTemplates.add(id)
        problems.push({
          problem: `${key} "${id}" is no template of tenant ${tenant}`,
          fix: `name an existing template in ${setting(key)}`,
        })
      } else {
        problems.push({
          problem: `${key} "${id}": the administrator's login naming it ${answered(result)}`,
          fix: `check ${setting(key)}`,
        })
      }
    }
    if (issuanceKind === 'verification' && !missingTemplates.has(fixture.issuanceTemplate)) {
      problems.push({
        problem: `templates.issuance "${fixture.issuanceTemplate}" is a verification template; it must be an issuance template`,
        fix: `name the issuance template the application key is linked to in ${setting('templates.issuance')}`,
      })
    }
    if (fixture.issuanceTemplate === fixture.otherTemplate) {
      problems.push({
        problem: `templates.other "${fixture.otherTemplate}" is the issuance template: it must be another template, not linked to the application key`,
        fix: `name a second template of tenant ${tenant} in ${setting('templates.other')}`,
      })
    }
  }

  if (!app.ok) {
    if (app.status === 403 && app.code === 'template_not_allowed') {
      if (!missingTemplates.has(fixture.issuanceTemplate))
        problems.push({
          problem: `app_key (application key ${fixture.appKey.id}) cannot log in naming templates.issuance "${fixture.issuanceTemplate}": it is not linked to that template${adminToken ? '' : ', or the template does not exist'}`,
          fix: `use the application key linked to that template, or name the template the key is linked to, in ${setting('app_key.id', 'templates.issuance')}`,
        })
    } else {
      problems.push(keyProblem('app', fixture.appKey.id, tenant, app))
    }
  }
  return problems
}

/** Of which kind a template is, by the portal; undefined when the portal does not say. */
async function templateKind(
  client: RelyingPartyClient,
  token: string,
  id: string,
): Promise<'issuance' | 'verification' | undefined> {
  const [issuance, verification] = await Promise.all(
    (['issuance', 'verification'] as const).map((kind) =>
      client.getTemplate(token, kind, id).catch(() => undefined),
    ),
  )
  if (issuance?.status === 200) return 'issuance'
  if (verification?.status === 200) return 'verification'
  return undefined
}

async function checkReceiver(
  target: Target,
  env: Env,
  setting: (...keys: string[]) => string,
): Promise<PreflightProblem[]> {
  const { host, port, publicUrl } = target.receiver
  if (port === 0 || !target.capabilities.has('webhooks')) return []
  const workers = Number(env.CUCUMBER_TOTAL_WORKERS ?? '1')
  const where = `${host}:${port}`
  const ask = publicUrl
    ? `and ask whoever runs the route to ${shownUrl(publicUrl)} (tunnel, port forward, firewall rule) to send it to the new port`
    : ''
  if (workers > 1) {
    return [
      {
        problem: `the webhook receiver listens on the fixed port ${port}, and ${workers} workers (--parallel) cannot all listen on it`,
        fix: `run this target without --parallel, or leave receiver.public_url out (webhook scenarios are then not applicable)`,
      },
    ]
  }
  const code = await canListen(host, port)
  if (code === undefined) return []
  const portSetting = setting('receiver.listen_port')
  if (code === 'EADDRINUSE')
    return [
      {
        problem: `the webhook receiver cannot listen on ${where}: the port is in use (EADDRINUSE)`,
        fix: `stop what holds it (find it with \`lsof -i :${port}\` or \`ss -ltnp 'sport = :${port}'\`; an earlier run may still be alive), or choose another port in ${portSetting} ${ask}`.trim(),
      },
    ]
  if (code === 'EACCES')
    return [
      {
        problem: `the webhook receiver may not listen on ${where}: ports below 1024 need privileges (EACCES)`,
        fix: `choose a port from 1024 up in ${portSetting} ${ask}`.trim(),
      },
    ]
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
    return [
      {
        problem: `the webhook receiver cannot listen on ${where}: ${host} is no address of this machine (${code})`,
        fix: `set ${setting('receiver.listen_host')} to an address of this machine, or 0.0.0.0`,
      },
    ]
  return [
    {
      problem: `the webhook receiver cannot listen on ${where}: ${code}`,
      fix: `check ${setting('receiver.listen_host', 'receiver.listen_port')}`,
    },
  ]
}
