// Secrets out of every report: the conformance suite's failure messages, attachments (HTTP exchanges) and
// terminal lines pass through redact() before anyone sees them. Two layers:
//
// - patterns: what is a secret by its shape or its name, wherever it appears (`Basic …`, `jwt …`,
//   `Bearer …`, a `token:` header line, JSON members such as "secret", "access_token",
//   "pre-authorized_code", "tx_code", "webhookSecret", the same names as form or query parameters,
//   `whsec_…`, credentials in a URL);
// - values: every secret the harness learns (the target's keys, keys the portal hands out, tokens, codes,
//   webhook secrets) is registered, and its exact text is masked wherever it appears, even where no pattern
//   would find it (an echo in a problem's detail, a code inside a URL-encoded inline offer).
//
// A masked secret reads `[redacted:<kind>]`. docs/conformance-exchanges.md lists what is masked.

export type SecretKind =
  | 'api-key-secret'
  | 'api-key-credentials'
  | 'access-token'
  | 'pre-authorized-code'
  | 'tx-code'
  | 'webhook-secret'
  | 'url-credentials'
  | 'secret'

export const marker = (kind: SecretKind) => `[redacted:${kind}]`

/** JSON members (and form / query parameters) whose values are secrets, by name. */
const SECRET_MEMBERS: Record<string, SecretKind> = {
  secret: 'api-key-secret',
  api_key_secret: 'api-key-secret',
  client_secret: 'secret',
  password: 'secret',
  access_token: 'access-token',
  refresh_token: 'access-token',
  token: 'access-token',
  'pre-authorized_code': 'pre-authorized-code',
  tx_code: 'tx-code',
  user_pin: 'tx-code',
  webhookSecret: 'webhook-secret',
}
/** JSON members holding an array of secrets. */
const SECRET_ARRAYS: Record<string, SecretKind> = { webhookPreviousSecrets: 'webhook-secret' }
/** Form or query parameters that are secrets (a token request, a URL carrying a token). */
const SECRET_PARAMS = [
  'pre-authorized_code',
  'tx_code',
  'user_pin',
  'access_token',
  'refresh_token',
  'client_secret',
]

const names = (list: readonly string[]) => list.map((n) => n.replace(/[-]/g, '\\-')).join('|')

/** Values shorter than this are masked only as whole words (a 6-digit tx_code inside a timestamp is not one). */
const SHORT = 16
/** Values shorter than this are never registered: masking them would garble ordinary text. */
const MIN_LENGTH = 4

/** A pattern, its replacement, and words (lower case) one of which a text must hold for it to apply. */
type Pattern = [RegExp, (match: string, ...groups: string[]) => string, readonly string[]]

const MEMBER_WORDS = ['secret', 'token', 'code', 'pin', 'password']

const PATTERNS: Pattern[] = [
  // An access token after its scheme (header or prose): `jwt eyJ…`, `Bearer abc…`. The token must look
  // like one (three dotted parts, or 20 characters with a digit), so "Token_type jwt and message" and
  // "dc+sd-jwt UniversityDegreeCredential" stay readable.
  [
    /(?<![\w+-])(jwt|bearer)(\s+)([A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*|(?=[A-Za-z._~+/-]*\d)[A-Za-z0-9._~+/-]{20,}=*)/gi,
    (_, scheme, space) => `${scheme}${space}${marker('access-token')}`,
    ['jwt', 'bearer'],
  ],
  // HTTP Basic: base64(key id:secret) (only what decodes to `id:secret`, not "Basic authentication").
  [
    /\b(basic)(\s+)([A-Za-z0-9+/]{4,}={0,2})(?![\w+/=])/gi,
    (match, scheme, space, value) =>
      Buffer.from(value, 'base64').toString('latin1').includes(':')
        ? `${scheme}${space}${marker('api-key-credentials')}`
        : match,
    ['basic'],
  ],
  // A `token:` header line (the login answer's access token), as exchanges and describeResponse print it.
  [
    /^([<>]?\s*token:[ \t]*)(\S+)/gim,
    (match, head, value) => (value.startsWith('[redacted:') ? match : `${head}${marker('access-token')}`),
    ['token:'],
  ],
  // JSON members by name, also inside a JSON text escaped into a string (\"secret\":\"…\").
  [
    new RegExp(
      `(\\\\?")(${names(Object.keys(SECRET_MEMBERS))})(\\\\?"\\s*:\\s*)(\\\\?")((?:[^"\\\\]|\\\\(?!")[\\s\\S])*)(\\\\?")`,
      'g',
    ),
    (match, q1, name, colon, q2, value, q3) =>
      value.startsWith('[redacted:')
        ? match
        : `${q1}${name}${colon}${q2}${marker(SECRET_MEMBERS[name] as SecretKind)}${q3}`,
    MEMBER_WORDS,
  ],
  // Numeric secrets (a tx_code sent as a number).
  [
    new RegExp(`(")(${names(Object.keys(SECRET_MEMBERS))})("\\s*:\\s*)(\\d+)`, 'g'),
    (_, q1, name, colon) => `${q1}${name}${colon}"${marker(SECRET_MEMBERS[name] as SecretKind)}"`,
    MEMBER_WORDS,
  ],
  [
    new RegExp(`(")(${names(Object.keys(SECRET_ARRAYS))})("\\s*:\\s*)\\[[^\\]]*\\]`, 'g'),
    (_, q1, name, colon) => `${q1}${name}${colon}["${marker(SECRET_ARRAYS[name] as SecretKind)}"]`,
    ['secrets'],
  ],
  // Form bodies and query strings: pre-authorized_code=…&tx_code=…
  [
    new RegExp(`(^|[?&\\s"'])(${names(SECRET_PARAMS)})=([^&\\s"'#]+)`, 'g'),
    (match, lead, name, value) =>
      value.startsWith('%5Bredacted') || value.startsWith('[redacted:')
        ? match
        : `${lead}${name}=${marker(paramKind(name))}`,
    MEMBER_WORDS,
  ],
  // A secret member inside URL-encoded JSON (an inline credential_offer in a deep link).
  [
    new RegExp(`(%22)(${names(SECRET_PARAMS)})(%22%3A%22)([^%]*)(%22)`, 'gi'),
    (_, q1, name, colon, _value, q3) => `${q1}${name}${colon}${marker(paramKind(name))}${q3}`,
    ['%22%3a%22'],
  ],
  // Standard Webhooks secrets.
  [/\bwhsec_[A-Za-z0-9+/=]+/g, () => marker('webhook-secret'), ['whsec_']],
  // user:password@ in a URL.
  [
    /\b(https?:\/\/)[^\s/:@"'<>]+:[^\s/@"'<>]+@/gi,
    (_, scheme) => `${scheme}${marker('url-credentials')}@`,
    ['@'],
  ],
]

function paramKind(name: string): SecretKind {
  return SECRET_MEMBERS[name] ?? 'secret'
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

/**
 * Secrets known by value. `child()` makes a registry for one scenario that also masks its parent's values
 * (the run's: the target's keys), so a scenario's registry stays small and is dropped with the scenario.
 */
export class SecretRegistry {
  private readonly values = new Map<string, SecretKind>()
  private compiled: [string, SecretKind, RegExp | undefined][] | undefined

  constructor(private readonly parent?: SecretRegistry) {}

  child(): SecretRegistry {
    return new SecretRegistry(this)
  }

  /** Registers a secret (and its URL-encoded form); ignores non-strings and values too short to mask safely. */
  add(value: unknown, kind: SecretKind): void {
    if (typeof value !== 'string' || value.length < MIN_LENGTH || value.startsWith('[redacted:')) return
    for (const form of new Set([value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)])) {
      if (!this.values.has(form)) {
        this.values.set(form, kind)
        this.compiled = undefined
      }
    }
  }

  has(value: string): boolean {
    return this.values.has(value) || (this.parent?.has(value) ?? false)
  }

  get size(): number {
    return this.values.size + (this.parent?.size ?? 0)
  }

  /** The values longest first (a value containing another is masked whole), each with how to mask it. */
  private ordered(): [string, SecretKind, RegExp | undefined][] {
    this.compiled ??= [...this.values]
      .sort(([a], [b]) => b.length - a.length)
      .map(([value, kind]) => [
        value,
        kind,
        value.length < SHORT
          ? new RegExp(`(?<![A-Za-z0-9_-])${escapeRegExp(value)}(?![A-Za-z0-9_-])`, 'g')
          : undefined,
      ])
    return this.compiled
  }

  /** Masks this registry's values, then its parent's. */
  maskValues(text: string): string {
    // One indexOf per value (fast) rather than one regex alternating them all (a comparison per value
    // at every character); only the values found are replaced.
    let out = text
    for (const [value, kind, boundary] of this.ordered()) {
      if (!out.includes(value)) continue
      out = boundary ? out.replace(boundary, marker(kind)) : out.replaceAll(value, marker(kind))
    }
    return this.parent ? this.parent.maskValues(out) : out
  }

  /** Every registered value and every pattern masked. */
  redact(text: string): string {
    return redactPatterns(this.maskValues(text))
  }
}

/** Masks what patterns recognise (no registered values). */
export function redactPatterns(text: string): string {
  // Each pattern runs only on a text holding one of its words: most bodies need two or three passes.
  const lower = text.toLowerCase()
  let out = text
  for (const [pattern, replace, words] of PATTERNS) {
    if (words.some((w) => lower.includes(w))) out = out.replace(pattern, replace as never)
  }
  return out
}

/** The run's registry: secrets every scenario of this process may meet (the target's keys). */
export const runSecrets = new SecretRegistry()

let active: SecretRegistry = runSecrets

/** The registry redact() uses: the current scenario's (hooks.ts sets it in Before and resets it in After). */
export function useSecrets(registry: SecretRegistry | undefined): void {
  active = registry ?? runSecrets
}

/** The text with every known secret and every secret-shaped value masked. */
export function redact(text: string, registry: SecretRegistry = active): string {
  return registry.redact(text)
}

/**
 * An error whose message and stack are redacted (in place when possible, so its class and fields stay);
 * for errors thrown by steps and hooks before cucumber formats them into the reports.
 */
export function redactError(error: unknown, registry: SecretRegistry = active): unknown {
  if (!(error instanceof Error)) {
    return typeof error === 'string' ? registry.redact(error) : error
  }
  const message = registry.redact(error.message)
  const stack = error.stack === undefined ? undefined : registry.redact(error.stack)
  try {
    if (message !== error.message) error.message = message
    if (stack !== undefined && stack !== error.stack) error.stack = stack
  } catch {
    const copy = new Error(message)
    copy.name = error.name
    if (stack !== undefined) copy.stack = stack
    return copy
  }
  return error
}

const MEMBER_NAMES = new RegExp(
  `"(?:${names([...Object.keys(SECRET_MEMBERS), ...Object.keys(SECRET_ARRAYS)])})"`,
)

/** Whether a JSON text names a secret member at all (cheaper than parsing it to find none). */
export function mayHoldSecrets(json: string): boolean {
  return MEMBER_NAMES.test(json)
}

/** Registers the secrets of a JSON value by member name (what the portal, token and offer answers carry). */
export function registerSecretsIn(value: unknown, registry: SecretRegistry, depth = 0): void {
  if (depth > 8 || value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    for (const item of value) registerSecretsIn(item, registry, depth + 1)
    return
  }
  for (const [key, inner] of Object.entries(value)) {
    const kind = SECRET_MEMBERS[key]
    const arrayKind = SECRET_ARRAYS[key]
    if (kind && (typeof inner === 'string' || typeof inner === 'number')) registry.add(String(inner), kind)
    else if (arrayKind && Array.isArray(inner)) for (const v of inner) registry.add(v, arrayKind)
    else registerSecretsIn(inner, registry, depth + 1)
  }
}

/** Registers the secrets in a form body or query string (pre-authorized_code=…&tx_code=…). */
export function registerSecretsInForm(text: string, registry: SecretRegistry): void {
  if (!/=/.test(text)) return
  let params: URLSearchParams
  try {
    params = new URLSearchParams(text.startsWith('?') ? text.slice(1) : text)
  } catch {
    return
  }
  for (const name of SECRET_PARAMS) {
    for (const value of params.getAll(name)) registry.add(value, paramKind(name))
  }
}

/** Registers what an HTTP header carries: an access token (`jwt`/`Bearer`, `Token`) or Basic credentials. */
export function registerSecretsInHeader(name: string, value: string, registry: SecretRegistry): void {
  const lower = name.toLowerCase()
  if (lower === 'token') {
    registry.add(value.trim(), 'access-token')
    return
  }
  if (lower !== 'authorization') return
  const match = /^(\w+)\s+(\S+)/.exec(value)
  if (!match?.[1] || !match[2]) return
  const scheme = match[1].toLowerCase()
  if (scheme === 'basic') {
    registry.add(match[2], 'api-key-credentials')
    const decoded = Buffer.from(match[2], 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon > 0) registry.add(decoded.slice(colon + 1), 'api-key-secret')
  } else {
    registry.add(match[2], 'access-token')
  }
}

/** Headers whose whole value is a secret. */
export const SECRET_HEADERS: Record<string, SecretKind> = {
  authorization: 'access-token',
  token: 'access-token',
  cookie: 'secret',
  'set-cookie': 'secret',
  'proxy-authorization': 'secret',
  'x-api-key': 'api-key-secret',
}

/** A header value as reports may show it: the scheme kept, the credentials masked. */
export function redactHeader(name: string, value: string, registry: SecretRegistry = active): string {
  const kind = SECRET_HEADERS[name.toLowerCase()]
  if (!kind) return registry.redact(value)
  const scheme = /^(\w+)\s+\S/.exec(value)?.[1]
  if (name.toLowerCase() === 'authorization' && scheme) {
    return `${scheme} ${marker(scheme.toLowerCase() === 'basic' ? 'api-key-credentials' : 'access-token')}`
  }
  return marker(kind)
}
