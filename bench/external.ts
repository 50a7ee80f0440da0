// `vc-harness bench --target external`: the bench's lean wallets and relying party against a deployment the
// bench did not start, described by the conformance suite's profile (src/harness/profile.ts: the same file,
// the same VC_HARNESS_* overrides, the same capability rules of src/harness/target.ts).
//
// Guarded: every host the profile's URLs point at must be named with --allow-host (checked before anything
// is sent), and every later request, also to URLs the deployment hands out, goes through the same allow
// list (bench/host-guard.ts). The relying-party set-up uses the profile's keys only:
// - issuance (`issuance-ready`, `issuance`): the application key and its template; the administrator
//   submits in the attended flow, as in our own runs;
// - verification (`verification`, `full`): `templates.other` when it is a Presentation Exchange verification
//   template; sessions need an application key linked to it, so the administrator creates one for the run
//   through the portal and revokes it at the end;
// - webhooks (the `webhook` step of `full`): only when the profile gives the target the conformance suite's
//   `webhooks` capability (an operator key and a receiver URL the deployment reaches). The templates are not
//   changed: the administrator creates copies named `vc-harness-bench-<template>` that send to the bench's
//   sink, with keys linked to them; the keys are revoked at the end, the copies deleted where nothing refers
//   to them (an issuance copy keeps its processes, so it stays and is reused by the next run).

import {
  type ApiResponse,
  type NewApiKey,
  type Problem,
  RelyingPartyClient,
  type ServiceUrls,
  type TemplateKind,
} from '../src/client/index.ts'
import { externalProblems } from '../src/harness/profile.ts'
import { externalTarget, missingCapability, type Target } from '../src/harness/target.ts'
import { guardedFetch, type HostGuard, hostOf } from './host-guard.ts'
import { type BenchKeys, CREDENTIAL_CONTENT, type FlowKind, type TargetInfo } from './protocol.ts'
import { BenchUsageError } from './usage-error.ts'

type Env = Record<string, string | undefined>

/**
 * The external target of a profile file (or VC_HARNESS_PROFILE) with the environment's overrides, checked
 * the way `vc-harness conformance` checks it: every problem at once, as a usage error (exit 2).
 */
export function resolveExternalTarget(profile: string | undefined, env: Env = process.env): Target {
  const environment = profile !== undefined ? { ...env, VC_HARNESS_PROFILE: profile } : env
  const problems = externalProblems(environment)
  if (problems.length > 0)
    throw new BenchUsageError(`--target external: the profile cannot be used:\n  ${problems.join('\n  ')}`)
  return externalTarget(environment)
}

/** Each host the profile's URLs point at, with the keys that point there. */
export function profileHosts(urls: ServiceUrls): Map<string, string[]> {
  const hosts = new Map<string, string[]>()
  for (const [key, url] of [
    ['auth_url', urls.authUrl],
    ['issuer_url', urls.issuerUrl],
    ['verifier_url', urls.verifierUrl],
  ] as const) {
    const host = hostOf(url)
    hosts.set(host, [...(hosts.get(host) ?? []), key])
  }
  return hosts
}

/** The guard's first line: every host of the profile must be named with --allow-host. */
export function checkProfileHosts(urls: ServiceUrls, allowHosts: readonly string[]): void {
  const allowed = new Set(allowHosts)
  const missing = [...profileHosts(urls)].filter(([host]) => !allowed.has(host))
  if (missing.length === 0) return
  const listed = missing.map(([host, keys]) => `${host} (${keys.join(', ')})`).join(', ')
  throw new BenchUsageError(
    `--target external loads only hosts named with --allow-host, and the profile points at ${listed}. ` +
      `If that deployment is yours to load, name ${missing.length > 1 ? 'them' : 'it'}: --allow-host ${missing.map(([host]) => host).join(',')}`,
  )
}

/** The message for hosts the deployment sent the wallets to that --allow-host does not name. */
export function refusedHostsMessage(refused: readonly { host: string; url: string }[]): string {
  return (
    `--target external: the deployment sent the bench to ${refused.map((r) => `${r.host} (${r.url})`).join(', ')}, ` +
    `which --allow-host does not name; nothing was sent there and the run stopped. If ${refused.length > 1 ? 'those hosts belong' : 'that host belongs'} to the deployment under test, ` +
    `name ${refused.length > 1 ? 'them' : 'it'} too: --allow-host ${refused.map((r) => r.host).join(',')}`
  )
}

/** What the set-up made of the deployment, for the runs and the report. */
export interface ExternalSetup {
  info: TargetInfo
  /** One line each: what the bench uses, creates, skips and why. */
  notes: string[]
  /** Revokes the keys and deletes the template copies the set-up created; one line each of what it did or left. */
  cleanup(): Promise<string[]>
}

const BENCH_PREFIX = 'vc-harness-bench-'
/** Fields of a template's portal view that are not part of its body. */
const VIEW_ONLY = ['id', 'hasWebhookSecret', 'source', 'createdAt', 'updatedAt']

const answerText = (response: ApiResponse<unknown>) => {
  const body = response.body as Partial<Problem> | undefined
  return `HTTP ${response.status}${typeof body === 'object' && body?.code ? ` ${body.code}` : ''}${
    typeof body === 'object' && body?.detail ? `: ${body.detail}` : ''
  }`
}

/** The deployment refused the set-up (a login, a portal call): the CLI prints the message and exits 1. */
class SetupError extends Error {
  override name = 'UserError'
  readonly exitCode = 1
}

/**
 * Logs in with the profile's keys, finds what the deployment can run of `options.flows` (the planned
 * kinds), and creates only what those need (see the top of this file). `webhook` is where the bench's
 * webhook sink is reached, when the profile has one.
 */
export async function prepareExternal(
  target: Target,
  guard: HostGuard,
  options: { flows: readonly FlowKind[]; webhook?: { url: string; secret: string } },
): Promise<ExternalSetup> {
  const wantsVerification = options.flows.includes('full') || options.flows.includes('verification')
  const client = new RelyingPartyClient(target.urls, guardedFetch(guard))
  const { tenant: fixture } = target
  const tenant = fixture.tenant
  const notes: string[] = []
  const createdKeys: { id: string; what: string }[] = []
  const copies: { kind: TemplateKind; id: string }[] = []

  const call = async <T>(what: string, work: () => Promise<ApiResponse<T | Problem>>) => {
    let response: ApiResponse<T | Problem>
    try {
      response = await work()
    } catch (error) {
      throw new SetupError(`set-up: ${what}: ${(error as Error).message}`)
    }
    return response
  }
  const must = async <T>(what: string, work: () => Promise<ApiResponse<T | Problem>>): Promise<T> => {
    const response = await call(what, work)
    if (response.status < 200 || response.status > 299)
      throw new SetupError(`set-up: ${what}: ${answerText(response)}`)
    return response.body as T
  }

  let adminLogin: Awaited<ReturnType<typeof client.login>>
  try {
    adminLogin = await client.login({ keyId: fixture.adminKey.id, secret: fixture.adminKey.secret, tenant })
  } catch (error) {
    throw new SetupError(`set-up: login of admin_key ${fixture.adminKey.id}: ${(error as Error).message}`)
  }
  if (adminLogin.status !== 200 || !adminLogin.token)
    throw new SetupError(
      `set-up: login of admin_key ${fixture.adminKey.id} (tenant ${tenant}): ${answerText(adminLogin)}`,
    )
  const admin = adminLogin.token

  const newKey = async (template: string, what: string): Promise<NewApiKey> => {
    const key = await must<NewApiKey>(`create an application key linked to ${template}`, () =>
      client.createApiKey(admin, { role: 'app', template, label: `vc-harness bench (${what})` }),
    )
    createdKeys.push({ id: key.id, what: `${what}, linked to ${template}` })
    return key
  }
  const cleanup = async (): Promise<string[]> => {
    const lines: string[] = []
    for (const key of createdKeys.splice(0)) {
      const answer = await call(`revoke key ${key.id}`, () => client.revokeApiKey(admin, key.id)).catch(
        (error: Error) => error,
      )
      lines.push(
        answer instanceof Error || answer.status !== 204
          ? `could not revoke API key ${key.id} (${key.what}): ${answer instanceof Error ? answer.message : answerText(answer)}; revoke it in the portal`
          : `revoked API key ${key.id} (${key.what})`,
      )
    }
    for (const copy of copies.splice(0)) {
      const answer = await call(`delete template ${copy.id}`, () =>
        client.request<'' | Problem>(
          target.urls.authUrl,
          `/portal/v1/${copy.kind}-templates/${encodeURIComponent(copy.id)}`,
          { method: 'DELETE', token: admin },
        ),
      ).catch((error: Error) => error)
      lines.push(
        answer instanceof Error || answer.status !== 204
          ? `left ${copy.kind} template ${copy.id} (${answer instanceof Error ? answer.message : answerText(answer)}); the next run reuses it`
          : `deleted ${copy.kind} template ${copy.id}`,
      )
    }
    return lines
  }

  try {
    // What the relying party submits: the demo's degree, typed as the issuance template's credential.
    const issuanceView = await call(`read issuance template ${fixture.issuanceTemplate}`, () =>
      client.getTemplate(admin, 'issuance', fixture.issuanceTemplate),
    )
    let content: unknown[] = CREDENTIAL_CONTENT
    let issuanceBody: Record<string, unknown> | undefined
    if (issuanceView.status === 200) {
      issuanceBody = issuanceView.body as unknown as Record<string, unknown>
      const { credentialType, format, txCode } = issuanceBody
      if (txCode !== undefined)
        throw new BenchUsageError(
          `templates.issuance "${fixture.issuanceTemplate}" asks for a tx_code, which the lean wallets do not enter: name a template without one`,
        )
      if (format !== undefined && format !== 'jwt_vc_json')
        throw new BenchUsageError(
          `templates.issuance "${fixture.issuanceTemplate}" issues ${String(format)}; the lean wallets take jwt_vc_json only`,
        )
      const subject = (CREDENTIAL_CONTENT[0] as { credentialSubject: unknown }).credentialSubject
      content = [{ type: ['VerifiableCredential', String(credentialType)], credentialSubject: subject }]
    } else {
      notes.push(
        `the issuance template could not be read through the portal (${answerText(issuanceView)}): submitting the demo's UniversityDegreeCredential`,
      )
    }

    // Verification needs a Presentation Exchange verification template: templates.other, when it is one.
    const verificationView = wantsVerification
      ? await call(`read verification template ${fixture.otherTemplate}`, () =>
          client.getTemplate(admin, 'verification', fixture.otherTemplate),
        )
      : undefined
    let verificationBody: Record<string, unknown> | undefined
    if (!verificationView) {
      // Not planned (--flow): nothing to read, nothing to create.
    } else if (verificationView.status !== 200)
      notes.push(
        `verification and full flows: not run, templates.other "${fixture.otherTemplate}" is not a verification template of tenant ${tenant} (${answerText(verificationView)})`,
      )
    else if ((verificationView.body as { profile?: string }).profile === 'dcql')
      notes.push(
        `verification and full flows: not run, templates.other "${fixture.otherTemplate}" is a dcql template and the lean wallets speak Presentation Exchange (pe) only`,
      )
    else verificationBody = verificationView.body as unknown as Record<string, unknown>

    const keys: BenchKeys = {
      tenant,
      issuance: {
        keyId: fixture.appKey.id,
        secret: fixture.appKey.secret,
        template: fixture.issuanceTemplate,
      },
      admin: { keyId: fixture.adminKey.id, secret: fixture.adminKey.secret },
    }
    let webhooks = false
    const missing = missingCapability(target, 'webhooks')
    if (!options.flows.includes('full')) {
      // Only the full flow has a webhook step.
    } else if (missing !== undefined) notes.push(`webhook step: skipped, ${missing}`)
    else if (!options.webhook) notes.push('webhook step: skipped, the webhook sink has no URL')
    else if (!issuanceBody || !verificationBody)
      notes.push(
        'webhook step: skipped, it belongs to the full flow, which needs both templates readable through the portal',
      )
    else {
      // Copies of both templates that send to the sink, so the deployment's own templates stay untouched.
      const hook = options.webhook
      try {
        const copy = async (kind: TemplateKind, id: string, body: Record<string, unknown>) => {
          const copyId = `${BENCH_PREFIX}${id}`.slice(0, 128)
          const fields = Object.fromEntries(Object.entries(body).filter(([k]) => !VIEW_ONLY.includes(k)))
          const template = { ...fields, webhookUrl: hook.url, webhookSecret: hook.secret }
          const created = await call<unknown>(`create ${kind} template ${copyId}`, () =>
            kind === 'issuance'
              ? client.createIssuanceTemplate(admin, { ...template, id: copyId } as never)
              : (client.createVerificationTemplate(admin, { ...template, id: copyId } as never) as Promise<
                  ApiResponse<unknown>
                >),
          )
          if (created.status === 409)
            await must(`point ${kind} template ${copyId} at the webhook sink`, () =>
              client.replaceTemplate(admin, kind, copyId, template as never),
            )
          else if (created.status !== 201)
            throw new SetupError(`create ${kind} template ${copyId}: ${answerText(created)}`)
          copies.push({ kind, id: copyId })
          return copyId
        }
        const issuanceCopy = await copy('issuance', fixture.issuanceTemplate, issuanceBody)
        const verificationCopy = await copy('verification', fixture.otherTemplate, verificationBody)
        const issuer = await newKey(issuanceCopy, 'issuance with webhooks')
        const verifier = await newKey(verificationCopy, 'verification with webhooks')
        keys.issuance = { keyId: issuer.id, secret: issuer.secret, template: issuanceCopy }
        keys.verification = { keyId: verifier.id, secret: verifier.secret, template: verificationCopy }
        webhooks = true
        notes.push(
          `webhook step: on, copies ${issuanceCopy} and ${verificationCopy} of the templates send to ${hook.url}`,
        )
      } catch (error) {
        notes.push(`webhook step: skipped, the set-up failed: ${(error as Error).message}`)
        for (const line of await cleanup()) notes.push(`  ${line}`)
      }
    }
    if (verificationBody && !keys.verification) {
      const verifier = await newKey(fixture.otherTemplate, 'verification')
      keys.verification = { keyId: verifier.id, secret: verifier.secret, template: fixture.otherTemplate }
    }
    for (const key of createdKeys)
      notes.push(`created API key ${key.id} (${key.what}) for the run; revoked at the end`)
    const kinds: FlowKind[] = keys.verification
      ? ['full', 'issuance-ready', 'issuance', 'verification']
      : ['issuance-ready', 'issuance']
    return {
      info: {
        label: `external (${target.urls.authUrl})`,
        urls: target.urls,
        keys,
        kinds,
        webhooks,
        pids: [],
        content,
      },
      notes,
      cleanup,
    }
  } catch (error) {
    await cleanup()
    throw error
  }
}
