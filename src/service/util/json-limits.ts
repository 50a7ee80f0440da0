import { createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'

// Structural limits on the JSON that reaches the service (RFC 8259 §9: "An implementation may set limits on
// the size of texts that it accepts. An implementation may set limits on the maximum depth of nesting.").
// The body-size limit alone does not bound either: a 9 KB body nesting arrays 4,500 deep overflowed the
// stack in JSON.stringify when a 4.4 submission was stored (issue 19), and a 256 KiB body holds 87,000
// one-digit array elements. Every JSON request body is checked as it is parsed, before any hook or handler
// runs, so a refused request changes nothing; JSON carried inside other carriers (form fields, JWT payloads,
// SD-JWT disclosures) is checked by the wallet-facing code that decodes it (`checkCarriedJson`). Every walk
// here uses an explicit stack, never recursion: the checker cannot overflow on the input it refuses.

export interface JsonLimits {
  /** Deepest nesting of arrays and objects: `{}` and `[]` are level 1, `[[]]` level 2, a scalar level 0. */
  maxDepth: number
  /** Object members plus array elements of one request, every document it carries counted together. */
  maxMembers: number
}

/**
 * 32 levels: the deepest legitimate inputs nest about 8 (a presentation definition's field `filter`: input
 * descriptor, constraints, fields, filter, contains; a DCQL query; a credential with structured claims), and
 * what the service builds around a submitted `credentialSubject` (the credential, its JWT payload, the
 * process, the webhook) adds fewer than 10, far below the few thousand levels at which JSON.stringify
 * overflows. 10,000 members: a 4.4 submission at
 * its maximum of 20 credentials of 100 claims each has 2,000 to 5,000, a wallet's presentation a few hundred;
 * the limit bounds the per-member work that follows parsing (schema validation, JSONPath queries, RDF
 * canonicalization of Data Integrity proofs, SD-JWT digests), which the body size does not: 256 KiB hold
 * 87,000 one-digit array elements.
 */
export const JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({ maxDepth: 32, maxMembers: 10_000 })

/**
 * A JSON input beyond a limit. The relying-party API answers it as 400 problem `json_limit_exceeded`, the
 * wallet-facing endpoints as 400 `invalid_request` (errors/handler.ts, errors/oauth.ts); the message names
 * the limit and where it was broken.
 */
export class JsonLimitError extends Error {
  override name = 'JsonLimitError'
  /** Also what Fastify would answer if an error handler did not know this class. */
  readonly statusCode = 400
  /** The broken limit, without where: "nests deeper than 32 levels (maxDepth)". */
  readonly reason: string
  constructor(
    readonly limit: keyof JsonLimits,
    readonly max: number,
    readonly where: string,
  ) {
    const reason =
      limit === 'maxDepth'
        ? `nests deeper than ${max} levels (maxDepth)`
        : `holds more than ${max} object members and array elements (maxMembers)`
    super(`${where} ${reason}`)
    this.reason = reason
  }
}

/** Members counted so far in one request, shared by the checks of the documents it carries. */
export interface MemberCount {
  members: number
}

/**
 * Walks `value` with an explicit stack; throws JsonLimitError at the first limit broken. `onString` is told
 * every string (the carriers' scan looks for tokens in them).
 */
function walk(
  value: unknown,
  where: string,
  limits: JsonLimits,
  counted: MemberCount,
  membersWhere: string,
  onString?: (text: string) => void,
): void {
  if (typeof value === 'string') onString?.(value)
  if (value === null || typeof value !== 'object') return
  const nodes: object[] = [value]
  const levels: number[] = [1]
  while (nodes.length > 0) {
    const node = nodes.pop() as object
    const level = levels.pop() as number
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node)
    counted.members += children.length
    if (counted.members > limits.maxMembers) {
      throw new JsonLimitError('maxMembers', limits.maxMembers, membersWhere)
    }
    for (const child of children) {
      if (child !== null && typeof child === 'object') {
        if (level + 1 > limits.maxDepth) throw new JsonLimitError('maxDepth', limits.maxDepth, where)
        nodes.push(child)
        levels.push(level + 1)
      } else if (typeof child === 'string') onString?.(child)
    }
  }
}

/** Throws JsonLimitError when a parsed JSON document breaks a limit (RFC 8259 §9). */
export function checkJsonLimits(value: unknown, where: string, limits: JsonLimits = JSON_LIMITS): void {
  walk(value, where, limits, { members: 0 }, where)
}

/**
 * For the whole app, right after the error handlers: the `application/json` parser becomes Fastify's own
 * (secure-json-parse, with the instance's `onProtoPoisoning` / `onConstructorPoisoning` actions, `error` by
 * default) followed by the limits. A body beyond them fails in the parser, as a malformed one does, so no
 * hook, handler or store sees it. Encapsulated plugins (oid4vci, oid4vp) inherit this parser.
 */
export function installJsonLimits(app: FastifyInstance, limits: JsonLimits = JSON_LIMITS): void {
  const { onProtoPoisoning = 'error', onConstructorPoisoning = 'error' } = app.initialConfig
  const parse = app.getDefaultJsonParser(onProtoPoisoning, onConstructorPoisoning)
  if (app.hasContentTypeParser('application/json')) app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // The interface sends `Content-Type: application/json` with no body on login; accept an empty body.
    if (body === '' || body === undefined) return done(null, undefined)
    parse(request, body as string, (error, value: unknown) => {
      if (error) return done(error, undefined)
      try {
        checkJsonLimits(value, 'the JSON body', limits)
      } catch (limit) {
        return done(limit as JsonLimitError, undefined)
      }
      done(null, value)
    })
  })
}

// --- JSON inside carriers -----------------------------------------------------------------------------

/** Tokens decoded inside tokens: a VP JWT's credential JWTs are level 2; deeper ones the service never reads. */
const MAX_TOKEN_NESTING = 3
const B64URL = /^[A-Za-z0-9_-]+$/
// A compact JWS or SD-JWT (RFC 7515 §7.1, RFC 9901 §4), optionally as a `data:` URL (an
// EnvelopedVerifiableCredential's id). Character classes without '.' before each dot: linear matching.
const TOKEN = /^(?:data:[^,]{0,100},)?[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_.~-]*$/
const SD_ALGS: Record<string, string> = { 'sha-256': 'sha256', 'sha-384': 'sha384', 'sha-512': 'sha512' }

function decodeJson(segment: string): { ok: true; value: unknown } | { ok: false } {
  if (!B64URL.test(segment)) return { ok: false }
  try {
    return { ok: true, value: JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) }
  } catch {
    // Not JSON: the code that reads this token reports it as malformed.
    return { ok: false }
  }
}

interface Decoded {
  value: unknown
  where: string
}

/** The JSON documents of a compact JWS (header, payload) or SD-JWT (issuer JWT, disclosures, KB-JWT). */
function decodeToken(text: string, where: string): { documents: Decoded[]; sdJwt?: SdJwtParts } {
  const token = text.startsWith('data:') ? text.slice(text.indexOf(',') + 1) : text
  const parts = token.split('~')
  const documents: Decoded[] = []
  let payload: unknown
  const disclosures: { text: string; value: unknown }[] = []
  for (const [i, part] of parts.entries()) {
    const segments = part.split('.')
    if (segments.length === 3) {
      // A JWS: the issuer-signed JWT (first) or the key-binding JWT (last part of an SD-JWT).
      for (const [j, segment] of segments.slice(0, 2).entries()) {
        const decoded = decodeJson(segment)
        if (!decoded.ok) continue
        documents.push({
          value: decoded.value,
          where: `the JWT ${j === 0 ? 'header' : 'payload'} of ${where}`,
        })
        if (i === 0 && j === 1) payload = decoded.value
      }
    } else if (i > 0 && segments.length === 1 && part.length > 0) {
      const decoded = decodeJson(part)
      if (!decoded.ok) continue
      documents.push({ value: decoded.value, where: `an SD-JWT disclosure of ${where}` })
      disclosures.push({ text: part, value: decoded.value })
    }
  }
  return disclosures.length > 0 ? { documents, sdJwt: { payload, disclosures } } : { documents }
}

interface SdJwtParts {
  payload: unknown
  disclosures: { text: string; value: unknown }[]
}

/**
 * The depth of an SD-JWT's claims once its disclosures are applied (RFC 9901 §7.1): a disclosure's value
 * takes the place of its digest, so chained disclosures nest although each document is shallow. A disclosed
 * object member lands one level below the object listing its digest in `_sd`, an array element where its
 * `{"...": digest}` stood. Longest path over the digest references, iteratively (post-order with colours).
 */
function sdJwtDepth(sd: SdJwtParts): number {
  const alg = (sd.payload as { _sd_alg?: unknown } | undefined)?._sd_alg ?? 'sha-256'
  const hash = typeof alg === 'string' ? SD_ALGS[alg] : undefined
  if (!hash) return 0 // an algorithm the verifier refuses before applying any disclosure
  const index = new Map<string, number>()
  for (const [i, d] of sd.disclosures.entries()) {
    const digest = createHash(hash).update(d.text, 'ascii').digest('base64url')
    if (!index.has(digest)) index.set(digest, i)
  }
  const values = sd.disclosures.map((d) => (Array.isArray(d.value) ? d.value.at(-1) : undefined))
  const shape = values.map(references)
  const depth: number[] = new Array(values.length).fill(-1) // -1 not started, -2 in progress
  const resolve = (refs: Reference[], own: number) =>
    refs.reduce((max, r) => {
      const j = index.get(r.digest)
      const d = j === undefined ? 0 : (depth[j] as number)
      return Math.max(max, d > 0 ? r.level + d : r.level)
    }, own)
  for (let start = 0; start < values.length; start++) {
    if (depth[start] !== -1) continue
    const stack = [start]
    while (stack.length > 0) {
      const i = stack.at(-1) as number
      const { refs, own } = shape[i] as { refs: Reference[]; own: number }
      if (depth[i] === -1) {
        depth[i] = -2
        for (const r of refs) {
          const j = index.get(r.digest)
          if (j !== undefined && depth[j] === -1) stack.push(j)
        }
        continue
      }
      stack.pop()
      // A cycle would need a SHA-2 preimage; an unfinished node simply counts as its own level.
      if (depth[i] === -2) depth[i] = resolve(refs, own)
    }
  }
  const top = references(sd.payload)
  return resolve(top.refs, top.own)
}

interface Reference {
  digest: string
  /** The level of the container whose child the disclosed value becomes. */
  level: number
}

/** A document's own depth and the digests it references, with the level each disclosed value lands under. */
function references(value: unknown): { refs: Reference[]; own: number } {
  const refs: Reference[] = []
  if (value === null || typeof value !== 'object') return { refs, own: 0 }
  const nodes: object[] = [value]
  const levels: number[] = [1]
  let own = 1
  while (nodes.length > 0) {
    const node = nodes.pop() as object
    const level = levels.pop() as number
    own = Math.max(own, level)
    if (Array.isArray(node)) {
      for (const item of node) {
        const digest = (item as { '...'?: unknown } | null)?.['...']
        if (typeof digest === 'string') refs.push({ digest, level })
        else if (item !== null && typeof item === 'object') {
          nodes.push(item)
          levels.push(level + 1)
        }
      }
    } else {
      for (const [key, item] of Object.entries(node)) {
        if (key === '_sd' && Array.isArray(item)) {
          for (const digest of item) if (typeof digest === 'string') refs.push({ digest, level })
        } else if (item !== null && typeof item === 'object') {
          nodes.push(item)
          levels.push(level + 1)
        }
      }
    }
  }
  return { refs, own }
}

/**
 * JSON that arrives inside other carriers at the wallet-facing edge: `value` itself (a form field, a
 * decrypted JWE's parameters, a proof object), JSON text when `jsonText` says the string is JSON (OpenID4VP
 * 1.0 §8.1 `vp_token`, PE `presentation_submission`), and what the service will decode from the compact
 * JWS and SD-JWT tokens inside it (JWT headers and payloads, disclosures, key-binding JWTs, credentials in
 * `data:` URLs, an SD-JWT's claims with its disclosures applied). Each document within maxDepth; every
 * member of the request, `counted` across calls, within maxMembers. Throws JsonLimitError.
 */
export function checkCarriedJson(
  value: unknown,
  where: string,
  options: { jsonText?: boolean; limits?: JsonLimits; counted?: MemberCount } = {},
): void {
  const limits = options.limits ?? JSON_LIMITS
  const counted = options.counted ?? { members: 0 }
  let root = value
  if (options.jsonText && typeof value === 'string' && /^\s*[[{]/.test(value)) {
    try {
      root = JSON.parse(value)
    } catch {
      // Not JSON after all: the field's own parser names the problem.
    }
  }
  const membersWhere = `${where}, with the tokens it carries,`
  const queue: { value: unknown; where: string; nesting: number }[] = [{ value: root, where, nesting: 0 }]
  const sdJwts: SdJwtParts[] = []
  while (queue.length > 0) {
    const item = queue.pop() as (typeof queue)[number]
    const tokens: string[] = []
    walk(item.value, item.where, limits, counted, membersWhere, (text) => {
      if (item.nesting < MAX_TOKEN_NESTING && TOKEN.test(text)) tokens.push(text)
    })
    for (const token of tokens) {
      const { documents, sdJwt } = decodeToken(token, item.nesting === 0 ? where : `a token in ${where}`)
      for (const d of documents) queue.push({ ...d, nesting: item.nesting + 1 })
      if (sdJwt) sdJwts.push(sdJwt)
    }
  }
  // Once every document passed the limits (their member count bounds this work): the claims as the
  // verifier will rebuild them.
  for (const sdJwt of sdJwts) {
    if (sdJwtDepth(sdJwt) > limits.maxDepth) {
      throw new JsonLimitError(
        'maxDepth',
        limits.maxDepth,
        `the claims of an SD-JWT in ${where}, with its disclosures applied,`,
      )
    }
  }
}
