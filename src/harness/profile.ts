// Settings of an external target: a profile file (VC_HARNESS_PROFILE, JSON) and environment variables,
// the environment winning key by key. Every setting is listed once in SETTINGS; docs/targets.md and the
// table at the top of target.ts describe the same list. Values are never echoed in errors: several are
// secrets, and a URL may carry credentials too.

import { readFileSync } from 'node:fs'
import type { ApiKeyCredentials, ServiceUrls } from '../client/index.ts'
import type { ReceiverSettings, TenantFixture } from './target-types.ts'

type Env = Record<string, string | undefined>

/** A target that cannot be described: the message names the file or variable and the key, never a value. */
export class TargetConfigError extends Error {
  override name = 'TargetConfigError'
}

type Kind = 'url' | 'text' | 'secret' | 'port' | 'flag'

interface Setting {
  /** Dotted path in the profile file. */
  key: string
  env: string
  kind: Kind
  required?: boolean
}

export const SETTINGS: readonly Setting[] = [
  { key: 'auth_url', env: 'VC_HARNESS_AUTH_URL', kind: 'url', required: true },
  { key: 'issuer_url', env: 'VC_HARNESS_ISSUER_URL', kind: 'url' },
  { key: 'verifier_url', env: 'VC_HARNESS_VERIFIER_URL', kind: 'url' },
  { key: 'tenant', env: 'VC_HARNESS_TENANT', kind: 'text', required: true },
  { key: 'templates.issuance', env: 'VC_HARNESS_ISSUANCE_TEMPLATE', kind: 'text', required: true },
  { key: 'templates.other', env: 'VC_HARNESS_OTHER_TEMPLATE', kind: 'text', required: true },
  { key: 'app_key.id', env: 'VC_HARNESS_APP_KEY_ID', kind: 'text', required: true },
  { key: 'app_key.secret', env: 'VC_HARNESS_APP_KEY_SECRET', kind: 'secret', required: true },
  { key: 'admin_key.id', env: 'VC_HARNESS_ADMIN_KEY_ID', kind: 'text', required: true },
  { key: 'admin_key.secret', env: 'VC_HARNESS_ADMIN_KEY_SECRET', kind: 'secret', required: true },
  { key: 'operator_key.id', env: 'VC_HARNESS_OPERATOR_KEY_ID', kind: 'text' },
  { key: 'operator_key.secret', env: 'VC_HARNESS_OPERATOR_KEY_SECRET', kind: 'secret' },
  { key: 'operator_key.tenant', env: 'VC_HARNESS_OPERATOR_TENANT', kind: 'text' },
  { key: 'receiver.listen_host', env: 'VC_HARNESS_RECEIVER_HOST', kind: 'text' },
  { key: 'receiver.listen_port', env: 'VC_HARNESS_RECEIVER_PORT', kind: 'port' },
  { key: 'receiver.public_url', env: 'VC_HARNESS_RECEIVER_URL', kind: 'url' },
  { key: 'test_wallet_provider', env: 'VC_HARNESS_TEST_WALLET_PROVIDER', kind: 'flag' },
]

const GROUPS = ['templates', 'app_key', 'admin_key', 'operator_key', 'receiver']
/** Keys a profile may carry besides the settings: comments. */
const IGNORED = new Set(['$schema', '$comment'])

/** Everything an external target needs, resolved and checked. */
export interface ExternalSettings {
  urls: ServiceUrls
  tenant: TenantFixture
  operator?: ApiKeyCredentials
  receiver: ReceiverSettings
  /** The tenant trusts vc-harness's test wallet provider (capability `test-wallet-provider`). */
  testWalletProvider: boolean
}

/** Where each value came from, for messages: `VC_HARNESS_TENANT` or `profile.json: tenant`. */
type Found = { value: string; from: string }

/** Line and column of a character offset, for JSON errors that must not quote the (secret) text. */
function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n')
  return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`
}

/** Levenshtein distance, for "did you mean" suggestions. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
    previous = current
  }
  return previous[b.length] as number
}

/** The candidates closest to a misspelt word (at most 2 edits, or a third of its length): the nearest ones. */
export function didYouMean(word: string, candidates: Iterable<string>, max = 3): string[] {
  const limit = Math.max(2, Math.floor(word.length / 3))
  return [...new Set(candidates)]
    .map((c) => [c, distance(word.toLowerCase(), c.toLowerCase())] as const)
    .filter(([c, d]) => d <= limit && c !== word)
    .sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]))
    .filter(([, d], _, list) => d === list[0]?.[1])
    .slice(0, max)
    .map(([c]) => c)
}

/**
 * Reads a profile file into dotted keys (`app_key.secret`) and lists every problem of its structure
 * (an unknown key, a group that is not an object), each naming the file and the key. A file that cannot be
 * read, is not JSON or is not an object throws. Values are not checked here but in resolveExternal, where
 * the environment may override them.
 */
export function readProfileFile(path: string): {
  values: Map<string, unknown>
  problems: string[]
  /** Keys already reported (a group that is not an object): not reported again as missing. */
  reported: Set<string>
} {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new TargetConfigError(
      `VC_HARNESS_PROFILE: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    )
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    // V8's message may quote the text around the error, i.e. a secret: report the position only.
    const position = /position (\d+)/.exec((error as Error).message)?.[1]
    const where = position === undefined ? '' : ` at ${lineColumn(text, Number(position))}`
    throw new TargetConfigError(`${path}: not valid JSON${where}`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new TargetConfigError(`${path}: a profile is a JSON object (see config/profile.example.json)`)
  }
  const known = new Set(SETTINGS.map((s) => s.key))
  const problems: string[] = []
  const values = new Map<string, unknown>()
  const reported = new Set<string>()
  let listed = false
  const unknown = (key: string) => {
    const close = didYouMean(key, [...known, ...GROUPS])
    // The known keys once, on the first unknown key.
    const list = listed ? '' : ` (known keys: ${[...known].join(', ')})`
    listed = true
    problems.push(
      `${path}: unknown key ${key}${close.length ? `: did you mean ${close.join(' or ')}?` : ''}${list}`,
    )
  }
  for (const [key, value] of Object.entries(parsed)) {
    if (IGNORED.has(key)) continue
    if (GROUPS.includes(key)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        problems.push(`${path}: ${key} must be an object`)
        for (const k of known) if (k.startsWith(`${key}.`)) reported.add(k)
        continue
      }
      for (const [inner, innerValue] of Object.entries(value)) {
        const dotted = `${key}.${inner}`
        if (known.has(dotted)) values.set(dotted, innerValue)
        else unknown(dotted)
      }
    } else if (known.has(key)) {
      values.set(key, value)
    } else {
      unknown(key)
    }
  }
  return { values, problems, reported }
}

/** Checks one value; returns the normalised text or a problem that names no value. */
function check(setting: Setting, raw: unknown): { value: string } | { problem: string } {
  if (setting.kind === 'flag') {
    // a profile says true or false; a variable "true"/"1" or "false"/"0"
    if (raw === true || raw === 'true' || raw === '1') return { value: 'true' }
    if (raw === false || raw === 'false' || raw === '0') return { value: 'false' }
    return { problem: 'must be true or false' }
  }
  if (setting.kind === 'port') {
    const port = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
      return { problem: 'must be a port number (0 to 65535)' }
    }
    return { value: String(port) }
  }
  if (typeof raw !== 'string') return { problem: 'must be a string' }
  if (raw.trim() === '') return { problem: 'must not be empty' }
  if (setting.kind === 'url') {
    let url: URL | undefined
    try {
      url = new URL(raw)
    } catch {}
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      return { problem: 'must be an http(s) URL' }
    }
    return { value: raw.replace(/\/+$/, '') }
  }
  return { value: raw }
}

/**
 * Every problem of an external target's settings, VC_HARNESS_PROFILE (if set) and the environment: the
 * profile's structure (unknown keys, groups that are not objects), each invalid value, each missing key.
 * One line each, naming the file or variable and the key, never a value. `vc-harness conformance` checks
 * this before the run starts (exit 2); resolveExternal throws them.
 */
export function externalProblems(env: Env): string[] {
  try {
    return resolve(env).problems
  } catch (error) {
    if (error instanceof TargetConfigError) return [error.message]
    throw error
  }
}

/**
 * Resolves the settings of an external target from VC_HARNESS_PROFILE (if set) and the environment, which
 * overrides the profile key by key. Throws TargetConfigError listing every problem, one per line.
 */
export function resolveExternal(env: Env): ExternalSettings {
  const { problems, settings } = resolve(env)
  if (!settings) throw new TargetConfigError(`VC_HARNESS_TARGET=external: ${problems.join('\n  ')}`)
  return settings
}

function resolve(env: Env): { problems: string[]; settings?: ExternalSettings } {
  const profilePath = env.VC_HARNESS_PROFILE || undefined
  const read = profilePath ? readProfileFile(profilePath) : undefined
  const profile = read?.values ?? new Map<string, unknown>()
  const problems: string[] = [...(read?.problems ?? [])]
  const reported = new Set(read?.reported)
  const found = new Map<string, Found>()
  for (const setting of SETTINGS) {
    const fromEnv = env[setting.env]
    const [raw, from] =
      fromEnv !== undefined && fromEnv !== ''
        ? [fromEnv, setting.env]
        : [profile.get(setting.key), `${profilePath}: ${setting.key}`]
    if (raw === undefined) continue
    const result = check(setting, raw)
    if ('problem' in result) {
      problems.push(`${from} ${result.problem}`)
      reported.add(setting.key)
    } else found.set(setting.key, { value: result.value, from })
  }
  const where = (key: string) => {
    const setting = SETTINGS.find((s) => s.key === key) as Setting
    return profilePath ? `${key} (in ${profilePath}, or ${setting.env})` : setting.env
  }
  const missing: string[] = []
  for (const setting of SETTINGS) {
    if (setting.required && !found.has(setting.key) && !reported.has(setting.key))
      missing.push(where(setting.key))
  }
  if (found.has('operator_key.id') && !found.has('operator_key.secret')) {
    missing.push(`${where('operator_key.secret')}, since an operator key id is given`)
  }
  if (found.has('receiver.public_url')) {
    const port = found.get('receiver.listen_port')
    if (!port) {
      missing.push(
        `${where('receiver.listen_port')}: a receiver URL needs a fixed port for the receiver to listen on`,
      )
    } else if (port.value === '0') {
      problems.push(`${port.from} must not be 0 when a receiver URL is given: the service needs a fixed port`)
    }
  }
  if (problems.length > 0 || missing.length > 0)
    return { problems: [...problems, ...missing.map((m) => `missing: ${m}`)] }

  const get = (key: string) => found.get(key)?.value as string
  const opt = (key: string) => found.get(key)?.value
  const authUrl = get('auth_url')
  const issuerUrl = opt('issuer_url') ?? authUrl
  const verifierUrl = opt('verifier_url') ?? issuerUrl
  const tenant: TenantFixture = {
    tenant: get('tenant'),
    issuanceTemplate: get('templates.issuance'),
    otherTemplate: get('templates.other'),
    appKey: { id: get('app_key.id'), secret: get('app_key.secret') },
    adminKey: { id: get('admin_key.id'), secret: get('admin_key.secret') },
  }
  const operatorId = opt('operator_key.id')
  const publicUrl = opt('receiver.public_url')
  const settings: ExternalSettings = {
    urls: { authUrl, issuerUrl, verifierUrl },
    tenant,
    ...(operatorId
      ? {
          operator: {
            keyId: operatorId,
            secret: get('operator_key.secret'),
            tenant: opt('operator_key.tenant') ?? tenant.tenant,
          },
        }
      : {}),
    receiver: {
      host: opt('receiver.listen_host') ?? '0.0.0.0',
      port: Number(opt('receiver.listen_port') ?? 0),
      ...(publicUrl ? { publicUrl } : {}),
    },
    testWalletProvider: opt('test_wallet_provider') === 'true',
  }
  return { problems: [], settings }
}
