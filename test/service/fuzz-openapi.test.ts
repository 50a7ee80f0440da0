import assert from 'node:assert/strict'
import {
  createCipheriv,
  createHash,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  type JsonWebKey,
  randomBytes,
  randomUUID,
} from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../src/service/app.ts'
import { parseConfig, type ServiceConfig } from '../../src/service/config/index.ts'
import { ManualClock } from '../../src/service/util/clock.ts'
import { decodeJws, signJws } from '../../src/shared/jws.ts'
import { FORM_MEDIA_TYPE, PRE_AUTHORIZED_GRANT } from '../../src/shared/wire.ts'
import { basic, DEMO, makeApp, OTHER, type TestApp, tokenFor } from '../helpers.ts'
import {
  expectOAuth,
  grantFor,
  issueTo,
  newHolder,
  newOffer,
  proofJwt,
  WIDE_APP,
} from '../oid4vci-helpers.ts'
import {
  fetchRequest,
  openSession,
  postResponse,
  readSession,
  respond,
  submission,
  VID_APP,
  verificationConfig,
  vpJwt,
} from '../verification-helpers.ts'

// Issue 19: a property-based fuzzer over every route the service serves, the operations of its OpenAPI
// document (`/docs/json`) and those `printRoutes` adds (/health, /docs, HEAD). Each part of a request is
// valid-ish most of the time (real ids, a real token of the scheme the operation declares, a real body with
// one member mutated, a body derived from the operation's JSON Schema, a wallet's direct_post answer to the
// session in the path, encrypted for direct_post.jwt) and hostile otherwise (garbage paths, query strings
// and headers, wrong types, deep nesting, huge strings, prototype keys, objects whose toString is not a
// function, lone surrogates, bodies in the wrong media type). It fails on any 5xx, printing the shrunk
// request with its secrets replaced by their names and the logged cause. `VC_HARNESS_FUZZ_RUNS` runs per route (default 10, a few seconds in all);
// `VC_HARNESS_FUZZ_SEED` replays a seed; `VC_HARNESS_FUZZ_ROUTES` (a regular expression on "METHOD /path")
// picks routes; `npm run fuzz:nightly` (scripts/fuzz-nightly.ts) runs many more.

const RUNS = Number(process.env.VC_HARNESS_FUZZ_RUNS ?? 10)
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('VC_HARNESS_FUZZ_RUNS must be a positive integer')
const SEED =
  process.env.VC_HARNESS_FUZZ_SEED === undefined ? undefined : Number(process.env.VC_HARNESS_FUZZ_SEED)
const ONLY = process.env.VC_HARNESS_FUZZ_ROUTES ? new RegExp(process.env.VC_HARNESS_FUZZ_ROUTES) : undefined
const ANSWER_TIMEOUT_MS = 20_000
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
/** Wallet-facing routes that take forms (the document shows JSON, Fastify's default for a body schema). */
const FORM_ROUTES = new Set([
  'POST /oid4vci/:tenant/token',
  'POST /oid4vp/:tenant/requests/:id',
  'POST /oid4vp/:tenant/responses/:id',
])

// --- the routes ------------------------------------------------------------------------------------------

interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  items?: JsonSchema
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  allOf?: JsonSchema[]
  $ref?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  minItems?: number
  maxItems?: number
  format?: string
}

interface OpenApiParameter {
  in: 'path' | 'query' | 'header' | 'cookie'
  name: string
  schema?: JsonSchema
}

interface OpenApiOperation {
  parameters?: OpenApiParameter[]
  security?: Record<string, string[]>[]
  requestBody?: { content: Record<string, { schema?: JsonSchema }> }
}

interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>
  components?: { schemas?: Record<string, JsonSchema> }
}

interface Route {
  method: string
  /** Fastify's form: `/oid4vci/:tenant/credential-offer/:id`, `/docs/*`. */
  path: string
  documented?: OpenApiOperation
}

const key = (r: { method: string; path: string }) => `${r.method} ${r.path}`

/** Every route of `app.printRoutes()` (the tree drawn with box characters, four columns a level). */
function servedRoutes(app: FastifyInstance): Route[] {
  const routes: Route[] = []
  const prefixes: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (!match) continue
    const level = (match[1] ?? '').length / 4
    prefixes.length = level
    const path = `${prefixes.join('')}${match[2] ?? ''}`
    prefixes.push(match[2] ?? '')
    for (const method of (match[3] ?? '').split(', ').filter(Boolean)) routes.push({ method, path })
  }
  return routes
}

function routesOf(app: FastifyInstance, doc: OpenApiDocument): Route[] {
  const all = new Map(servedRoutes(app).map((r) => [key(r), r]))
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const route = { method: method.toUpperCase(), path: path.replace(/\{([^}]+)\}/g, ':$1') }
      all.set(key(route), { ...route, documented: operation })
    }
  }
  return [...all.values()]
}

// --- what the fuzzer knows: real ids, tokens and protocol messages, made in before() ----------------------

interface Known {
  auth: { label: string; value: string }[]
  tenants: string[]
  processIds: string[]
  sessionIds: string[]
  templateIds: string[]
  keyIds: string[]
  listIds: string[]
  /** Strings worth trying in any string position: codes, nonces, states, proof JWTs, VP JWTs, DIDs. */
  strings: string[]
  /** A body each route accepts (by route key), for the fuzzer to mutate one member of. */
  examples: Record<string, unknown>
  /** The answer each open session would accept (direct_post), by session id; renewed once it closes. */
  responses: Map<string, SessionAnswer>
  /** Replaces a closed session (in sessionIds and responses) by a new one of the same template. */
  renew(sessionId: string): Promise<void>
}

interface SessionAnswer {
  /** The response parameters: a form, or (direct_post.jwt) the JWE's payload. */
  params: Record<string, unknown>
  /** direct_post.jwt: the session's public key to encrypt `params` to. */
  encryptTo?: JsonWebKey & { kid?: string }
}

/** verificationConfig() plus dcql verification templates (OpenID4VP 1.0), to reach both profiles. */
function fuzzConfig(): ServiceConfig {
  const raw = structuredClone(verificationConfig()) as unknown as {
    tenants: { id: string; verificationTemplates: unknown[] }[]
  }
  const demo = raw.tenants.find((t) => t.id === 'demo')
  if (!demo) throw new Error('no demo tenant')
  for (const [id, dcql] of [
    ['pid-dcql', { format: 'dc+sd-jwt' }],
    ['degree-dcql-jwe', { format: 'jwt_vc_json', responseMode: 'direct_post.jwt', requestUriMethod: 'post' }],
  ] as const) {
    demo.verificationTemplates.push({
      id,
      name: id,
      profile: 'dcql',
      credentialTypes: [id.startsWith('pid') ? 'VerifiableId' : 'UniversityDegreeCredential'],
      dcql,
    })
  }
  return parseConfig(raw)
}

async function learn(app: FastifyInstance, clock: ManualClock): Promise<Known> {
  const login = async (k: { id: string; secret: string; tenant: string }, template?: string) =>
    tokenFor(app, k, template)
  const holder = newHolder()
  const issued = await issueTo(app, clock, holder, 'degree', [
    {
      type: ['VerifiableCredential', 'UniversityDegreeCredential'],
      credentialSubject: { degree: { type: 'BachelorDegree', name: 'Fuzzing' } },
    },
  ])
  const pending = await grantFor(app, 'degree')
  // More open processes for 4.4 submissions that get as far as signing and storing.
  const open = await Promise.all([1, 2, 3].map(() => grantFor(app, 'degree')))
  const unredeemed = await newOffer(app, 'pin')

  // One open session per profile and response mode, each with the answer a wallet would give it.
  const responses = new Map<string, SessionAnswer>()
  const templateOf = new Map<string, string>()
  const rpTokens = new Map<string, string>()
  const openSessionOf = async (template: string): Promise<string> => {
    if (!rpTokens.has(template)) rpTokens.set(template, await login(WIDE_APP, template))
    if (template === 'degree-check' || template === 'degree-nostatus') {
      const s = await openSession({ app }, template)
      responses.set(s.id, {
        params: {
          vp_token: vpJwt(holder, clock, s.request, issued.jwts),
          presentation_submission: submission(s.id, [{ id: s.definition.input_descriptors[0]?.id ?? 'x' }]),
          state: s.request.state,
        },
      })
      templateOf.set(s.id, template)
      return s.id
    }
    const created = await app.inject({
      method: 'POST',
      url: '/api/v3/sessions',
      headers: { authorization: `jwt ${rpTokens.get(template)}` },
      payload: { ssiConfigId: template },
    })
    const { id, authentication_request: link } = created.json<{
      id: string
      authentication_request: string
    }>()
    const requestUri = new URLSearchParams(link.split('?')[1]).get('request_uri') ?? ''
    const request = decodeJws((await app.inject({ url: new URL(requestUri).pathname })).body).payload as {
      state: string
      nonce: string
      client_id: string
      dcql_query: { credentials: { id: string }[] }
      client_metadata: { jwks?: { keys: (JsonWebKey & { kid?: string })[] } }
    }
    const queryId = request.dcql_query.credentials[0]?.id ?? 'q'
    const encryptTo = request.client_metadata.jwks?.keys[0]
    responses.set(id, {
      params: { vp_token: { [queryId]: [vpJwt(holder, clock, request, issued.jwts)] }, state: request.state },
      ...(encryptTo && { encryptTo }),
    })
    templateOf.set(id, template)
    return id
  }
  const sessionIds: string[] = []
  for (const template of ['degree-check', 'degree-nostatus', 'pid-dcql', 'degree-dcql-jwe']) {
    sessionIds.push(await openSessionOf(template))
  }
  // The fuzzer's JWE must decrypt: a payload with a wrong state gets as far as the state check.
  const jweSession = sessionIds[3] as string
  const encryptTo = responses.get(jweSession)?.encryptTo
  assert.ok(encryptTo, 'the direct_post.jwt session publishes its key')
  const probe = await app.inject({
    method: 'POST',
    url: `/oid4vp/demo/responses/${jweSession}`,
    headers: { 'content-type': FORM_MEDIA_TYPE },
    payload: `response=${encryptJwe(JSON.stringify({ state: 'not-it' }), encryptTo)}`,
  })
  assert.match(probe.body, /state does not match/, `the fuzzer's JWE: ${probe.body}`)

  const statusList = (issued.jwts[0] ?? '').split('.')[1] ?? ''
  const listUrl = String(
    (
      JSON.parse(Buffer.from(statusList, 'base64url').toString()) as {
        vc: { credentialStatus: { statusListCredential: string } }
      }
    ).vc.credentialStatus.statusListCredential,
  )
  const tokens = {
    app: await login(DEMO.app, 'degree'),
    wide: await login(WIDE_APP, 'degree'),
    verifier: await login(VID_APP, 'vid-check'),
    admin: await login(DEMO.admin),
    operator: await login(DEMO.operator),
    otherAdmin: await login(OTHER.admin),
  }
  const deepPayload = signJws(
    { alg: holder.alg, typ: 'JWT', kid: holder.kid },
    { nested: JSON.parse(`${'['.repeat(40)}1${']'.repeat(40)}`) as unknown },
    holder.privateKey,
  )
  const firstAnswer = responses.get(sessionIds[0] as string)?.params ?? {}
  return {
    auth: [
      ...Object.entries(tokens).map(([label, token]) => ({
        label: `jwt <${label} token>`,
        value: `jwt ${token}`,
      })),
      { label: 'Bearer <wallet access token>', value: `Bearer ${pending.accessToken}` },
      { label: 'Bearer <issued wallet access token>', value: `Bearer ${issued.accessToken}` },
      { label: 'Basic <admin key>', value: basic(DEMO.admin.id, DEMO.admin.secret) },
      { label: 'Basic <app key>', value: basic(DEMO.app.id, DEMO.app.secret) },
      { label: 'Basic <wrong secret>', value: basic(DEMO.admin.id, 'not-the-secret-0123456789abcdef') },
      { label: 'jwt (tampered admin token)', value: `jwt ${tokens.admin.slice(0, -3)}AAA` },
    ],
    tenants: ['demo', 'other'],
    processIds: [issued.processId, pending.processId, unredeemed.processId, ...open.map((g) => g.processId)],
    sessionIds,
    templateIds: ['degree', 'pin', 'pid', 'degree-check', 'vid-check', 'pid-dcql', 'nope'],
    keyIds: [DEMO.app.id, DEMO.admin.id, WIDE_APP.id],
    listIds: [listUrl.split('/').pop() ?? ''],
    strings: [
      PRE_AUTHORIZED_GRANT,
      pending.cNonce,
      unredeemed.code,
      unredeemed.txCode ?? '123456',
      String(firstAnswer.state),
      String(firstAnswer.vp_token),
      JSON.stringify(firstAnswer.presentation_submission),
      proofJwt(holder, clock, pending.cNonce),
      proofJwt(holder, clock, pending.cNonce, { payload: { nonce: 42, aud: ['x', { y: 1 }] } }),
      deepPayload,
      `${deepPayload}~WyJzIiwiayIsMV0~`,
      issued.jwts[0] ?? '',
      issued.notificationId,
      holder.did,
      holder.kid,
      listUrl,
      'degree',
      'jwt',
      'di_vp',
      'credential_accepted',
      'https://rp.example/hooks',
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    ],
    examples: {
      'POST /api/v3/oidc-issuance/credential-offer': { group: 'degree' },
      'PATCH /admin/v1/issuanceRequests/:id/credentials': [
        {
          type: ['VerifiableCredential', 'UniversityDegreeCredential'],
          credentialSubject: { degree: { type: 'BachelorDegree', name: 'Fuzzing' } },
        },
      ],
      'POST /admin/v1/issuanceRequests/:id/reject': { reason: 'no' },
      'POST /admin/v1/issuanceRequests/:id/credentials/status': { status: 'suspended' },
      'POST /oid4vci/:tenant/token': {
        grant_type: PRE_AUTHORIZED_GRANT,
        'pre-authorized_code': unredeemed.code,
      },
      'POST /oid4vci/:tenant/credential': {
        credential_configuration_id: 'degree',
        proof: { proof_type: 'jwt', jwt: proofJwt(holder, clock, pending.cNonce) },
      },
      'POST /oid4vci/:tenant/deferred_credential': { transaction_id: randomUUID() },
      'POST /oid4vci/:tenant/notification': {
        notification_id: issued.notificationId,
        event: 'credential_accepted',
      },
      'POST /api/v3/sessions': { ssiConfigId: 'degree-check' },
      // JSON text fields are objects here: toForm() writes them as JSON, so mutations reach inside.
      'POST /oid4vp/:tenant/requests/:id': {
        wallet_nonce: 'n-1',
        wallet_metadata: { request_object_signing_alg_values_supported: ['ES256'] },
      },
      'POST /portal/v1/tenants': { id: 'fuzz-tenant' },
      'POST /portal/v1/api-keys': { role: 'app', template: 'degree', label: 'fuzz' },
      'POST /portal/v1/issuance-templates': { id: 'fuzz-template', credentialType: 'FuzzCredential' },
      'PUT /portal/v1/issuance-templates/:id': { credentialType: 'UniversityDegreeCredential' },
      'POST /portal/v1/verification-templates': {
        id: 'fuzz-check',
        name: 'Fuzz check',
        credentialTypes: ['UniversityDegreeCredential'],
        requestedFields: [{ path: '$.credentialSubject.degree.name' }],
      },
      'PUT /portal/v1/verification-templates/:id': {
        name: 'Fuzz check',
        credentialTypes: ['UniversityDegreeCredential'],
      },
    },
    responses,
    async renew(sessionId) {
      const index = sessionIds.indexOf(sessionId)
      const template = templateOf.get(sessionId)
      if (index < 0 || !template) return
      responses.delete(sessionId)
      sessionIds[index] = await openSessionOf(template)
    },
  }
}

/**
 * A compact JWE (RFC 7516) of `plaintext` to a P-256 key: ECDH-ES with the Concat KDF (RFC 7518 §4.6.2) and
 * A128GCM, what a wallet sends to a direct_post.jwt verifier (OpenID4VP 1.0 §8.3). Synchronous, with
 * node:crypto, so that fast-check can build it while generating.
 */
function encryptJwe(plaintext: string, to: JsonWebKey & { kid?: string }): string {
  const recipient = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: to.x, y: to.y }, format: 'jwk' })
  const ephemeral = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const z = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: recipient })
  const { x, y } = ephemeral.publicKey.export({ format: 'jwk' })
  const header = {
    alg: 'ECDH-ES',
    enc: 'A128GCM',
    ...(to.kid && { kid: to.kid }),
    epk: { kty: 'EC', crv: 'P-256', x, y },
  }
  const protectedHeader = Buffer.from(JSON.stringify(header)).toString('base64url')
  const u32 = (n: number) => {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(n)
    return b
  }
  const field = (b: Buffer) => Buffer.concat([u32(b.length), b])
  const otherInfo = Buffer.concat([
    field(Buffer.from('A128GCM')),
    field(Buffer.alloc(0)),
    field(Buffer.alloc(0)),
    u32(128),
  ])
  const cek = createHash('sha256')
    .update(Buffer.concat([u32(1), z, otherInfo]))
    .digest()
    .subarray(0, 16)
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-128-gcm', cek, iv)
  cipher.setAAD(Buffer.from(protectedHeader, 'ascii'))
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  const b64 = (b: Buffer) => b.toString('base64url')
  return `${protectedHeader}..${b64(iv)}.${b64(ciphertext)}.${b64(cipher.getAuthTag())}`
}

/** Every path to a member or element of `value` (iteratively; examples are small). */
function memberPaths(value: unknown): (string | number)[][] {
  const paths: (string | number)[][] = []
  const stack: { node: unknown; path: (string | number)[] }[] = [{ node: value, path: [] }]
  while (stack.length > 0) {
    const { node, path } = stack.pop() as { node: unknown; path: (string | number)[] }
    if (node === null || typeof node !== 'object') continue
    for (const [k, child] of Object.entries(node)) {
      const childPath = [...path, Array.isArray(node) ? Number(k) : k]
      paths.push(childPath)
      stack.push({ node: child, path: childPath })
    }
  }
  return paths
}

interface Mutation {
  /** Which member (modulo the example's member count). */
  at: number
  value: unknown
  how: 'replace' | 'add' | 'none'
  /** The name of an added member. */
  name: string
}

const mutation = (wild: fc.Arbitrary<unknown>): fc.Arbitrary<Mutation> =>
  fc.record({
    at: fc.nat({ max: 999 }),
    value: wild,
    how: fc.constantFrom('replace', 'add', 'none'),
    name: fc.constantFrom('extra', '__proto__', 'constructor', 'toString', 'valueOf'),
  })

/** `example` with one member replaced by a wild value, one added beside it (an own `__proto__` too), or as is. */
function applyMutation(example: unknown, m: Mutation): unknown {
  const paths = memberPaths(example)
  if (paths.length === 0 || m.how === 'none') return example
  const copy = structuredClone(example)
  const path = paths[m.at % paths.length] ?? []
  let parent = copy as Record<string | number, unknown>
  for (const step of path.slice(0, -1)) parent = parent[step] as Record<string | number, unknown>
  const last = path.at(-1) as string | number
  if (m.how === 'replace') parent[last] = m.value
  else if (Array.isArray(parent)) parent.push(m.value)
  else
    Object.defineProperty(parent, m.name, {
      value: m.value,
      enumerable: true,
      writable: true,
      configurable: true,
    })
  return copy
}

// --- arbitraries -----------------------------------------------------------------------------------------

const LATIN1 = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)) })
const HOSTILE_WORDS = [
  '',
  ' ',
  '.',
  '..',
  '../../package.json',
  '%',
  '%00',
  '%ZZ',
  '%ED%A0%80',
  '%2e%2e%2f',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  '0',
  '-1',
  '1e309',
  'NaN',
  '[]',
  '{}',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  '\u0000',
  '\ud800',
  '😀',
  'a\u0301',
]

const hostileString = fc.oneof(
  fc.constantFrom(...HOSTILE_WORDS),
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.integer({ min: 100, max: 5000 }).map((n) => 'a'.repeat(n)),
)

/** Percent-encodes `text` for a URL; raw hostile escapes and lone surrogates stay malformed on purpose. */
function urlPart(text: string, raw: boolean): string {
  if (raw && /^[\x21-\x7e]*$/.test(text)) return text.replaceAll('#', '%23').replaceAll('?', '%3F')
  try {
    return encodeURIComponent(text)
  } catch {
    return '%ED%A0%80' // a lone surrogate: percent-encoded invalid UTF-8
  }
}

const nestedText = (depth: number, open: string, close: string, leaf = '1') =>
  `${open.repeat(depth)}${leaf}${close.repeat(depth)}`

// A value nesting thousands of levels cannot be written by JSON.stringify (the overflow of issue 19 itself):
// generated values hold a marker string instead, which json() replaces with the nested text.
const deepMarker = (depth: number) => `\uE000deep:${depth}\uE000`
const DEEP_MARKER = /"?\uE000deep:(\d+)\uE000"?/g
const expandDeep = (text: string) =>
  text.replace(DEEP_MARKER, (_, depth: string) => nestedText(Number(depth), '[', ']'))
/** JSON text of a generated value, markers expanded. */
const json = (value: unknown) => expandDeep(JSON.stringify(value) ?? 'null')

/** JSON texts no schema would produce: the cases of issue 19 and friends. */
const hostileJsonText = fc.oneof(
  fc
    .tuple(fc.integer({ min: 20, max: 40_000 }), fc.constantFrom(['[', ']'], ['{"a":', '}']))
    .map(([depth, [open, close]]) => nestedText(depth, open as string, close as string)),
  fc.integer({ min: 9_000, max: 30_000 }).map((n) => `[${new Array(n).fill('0').join(',')}]`),
  fc.integer({ min: 1_000, max: 200_000 }).map((n) => JSON.stringify({ group: 'x'.repeat(n) })),
  fc.constantFrom(
    '',
    'null',
    'true',
    '0',
    '"text"',
    '[]',
    '{}',
    '{"group":',
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"admin":true}}}',
    '[{"credentialSubject":{"__proto__":{"x":1}}}]',
    '{"a":1,"a":2}',
    '\ufeff{}',
    '{"\\ud800":"\\udfff"}',
    '1'.repeat(400),
    '[1e999999]',
  ),
  fc.string(),
)

interface SchemaContext {
  doc: OpenApiDocument
  known: Known
  wild: fc.Arbitrary<unknown>
}

function resolve(ref: string, doc: OpenApiDocument): JsonSchema | undefined {
  const name = ref.replace(/^#\/components\/schemas\//, '').replace(/#$/, '')
  return doc.components?.schemas?.[name]
}

/** Values that mostly follow `schema`, with real ids and tokens for strings and, at each level, a wild one. */
function fromSchema(schema: JsonSchema | undefined, ctx: SchemaContext, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return ctx.wild
  if (schema.$ref) return fromSchema(resolve(schema.$ref, ctx.doc), ctx, depth + 1)
  const variants: fc.Arbitrary<unknown>[] = []
  if (schema.const !== undefined) variants.push(fc.constant(schema.const))
  if (schema.enum && schema.enum.length > 0) variants.push(fc.constantFrom(...schema.enum))
  for (const sub of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) {
    variants.push(fromSchema(sub, ctx, depth + 1))
  }
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []
  for (const type of types) {
    if (type === 'object') {
      const entries = Object.entries(schema.properties ?? {})
      const required = new Set(schema.required ?? [])
      const record = fc.record(
        Object.fromEntries(entries.map(([name, s]) => [name, fromSchema(s, ctx, depth + 1)])),
        { requiredKeys: entries.map(([name]) => name).filter((name) => required.has(name)) },
      )
      const extra = fc.dictionary(
        fc.oneof(fc.constantFrom('__proto__', 'constructor', 'toString', 'valueOf', 'x'), fc.string()),
        ctx.wild,
        {
          maxKeys: 2,
        },
      )
      variants.push(fc.tuple(record, fc.option(extra, { freq: 4 })).map(([r, e]) => (e ? { ...e, ...r } : r)))
    } else if (type === 'array') {
      variants.push(
        fc.array(fromSchema(schema.items, ctx, depth + 1), {
          minLength: Math.min(schema.minItems ?? 0, 3),
          maxLength: Math.min(schema.maxItems ?? 3, 3),
        }),
      )
    } else if (type === 'string') {
      const formats: Record<string, string[]> = {
        'date-time': ['2026-11-22T10:15:00Z', '2026-13-45T99:99:99Z'],
        uri: ['https://rp.example/x', 'http://127.0.0.1:1/', 'file:///etc/passwd', 'javascript:alert(1)'],
        uuid: [randomUUID(), '00000000-0000-0000-0000-000000000000'],
      }
      variants.push(
        fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) }),
        fc.constantFrom(
          ...ctx.known.strings,
          ...ctx.known.templateIds,
          ...(formats[schema.format ?? ''] ?? []),
        ),
      )
    } else if (type === 'integer' || type === 'number') {
      const min = schema.minimum ?? -1_000_000
      const max = schema.maximum ?? 1_000_000
      variants.push(
        type === 'integer' ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true }),
        fc.constantFrom(min - 1, max + 1, 0, -1, 1.5, 2 ** 53, -(2 ** 63)),
      )
    } else if (type === 'boolean') variants.push(fc.boolean())
    else if (type === 'null') variants.push(fc.constant(null))
  }
  if (variants.length === 0) return ctx.wild
  return fc.oneof({ weight: 9, arbitrary: fc.oneof(...variants) }, { weight: 1, arbitrary: ctx.wild })
}

interface Answer {
  status: number
  body: string
}

interface FuzzRequest {
  method: string
  url: string
  headers: Record<string, string>
  /** Printed instead of the secret header values. */
  authLabel?: string
  payload?: string
  /** An event stream (sent over real HTTP, see openStream). */
  stream: boolean
  /** direct_post.jwt: what the JWE in the body carries, for the printed counterexample. */
  plaintext?: string
}

function printable(request: FuzzRequest): string {
  const headers = { ...request.headers }
  if (headers.authorization !== undefined && request.authLabel) headers.authorization = request.authLabel
  const body =
    request.payload === undefined
      ? ''
      : `\n  body (${request.payload.length} chars): ${JSON.stringify(request.payload.slice(0, 600))}${request.payload.length > 600 ? '…' : ''}`
  const plaintext =
    request.plaintext === undefined
      ? ''
      : `\n  JWE plaintext: ${JSON.stringify(request.plaintext.slice(0, 600))}`
  return `${request.method} ${request.url.slice(0, 600)}\n  headers: ${JSON.stringify(headers)}${body}${plaintext}`
}

function idsFor(path: string, known: Known): string[] {
  if (path.includes('issuanceRequests') || path.includes('credential-offer')) return known.processIds
  if (path.includes('sessions') || path.startsWith('/oid4vp/')) return known.sessionIds
  if (path.includes('api-keys')) return known.keyIds
  if (path.includes('templates')) return known.templateIds
  if (path.includes('status')) return known.listIds
  return [randomUUID()]
}

/** A request body; `plaintext` is what a JWE body carries (printed with a counterexample). */
interface Body {
  text: string
  plaintext?: string
}

/** The session id of a `/oid4vp/<tenant>/responses/<id>` path (as the router will decode it). */
function sessionOf(path: string): string {
  const segment = /\/responses\/([^/?]*)/.exec(path)?.[1] ?? ''
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** Valid most of the time, hostile otherwise: each part of a request on its own, so most requests break one rule. */
const mostly = <T>(valid: fc.Arbitrary<T>, hostile: fc.Arbitrary<T>, odds = 4) =>
  fc.oneof({ weight: odds, arbitrary: valid }, { weight: 1, arbitrary: hostile })

function requestFor(route: Route, doc: OpenApiDocument, known: Known): fc.Arbitrary<FuzzRequest> {
  const wild: fc.Arbitrary<unknown> = fc.oneof(
    { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 2, arbitrary: hostileString },
    { weight: 2, arbitrary: fc.constantFrom(...known.strings) },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 1, max: 60 })
        .map((depth) => JSON.parse(nestedText(depth, '[', ']')) as unknown),
    },
    // Deeper than JSON.stringify can write (issue 19): a marker that json() expands into nested text.
    { weight: 2, arbitrary: fc.integer({ min: 100, max: 20_000 }).map(deepMarker) },
    // JSON objects that break String() and template literals (a non-callable toString or valueOf).
    {
      weight: 1,
      arbitrary: fc.constantFrom<unknown>({ toString: 1 }, { toString: 'x', valueOf: 'y' }, [
        { valueOf: [] },
      ]),
    },
  )
  const ctx: SchemaContext = { doc, known, wild }
  const operation = route.documented
  const parameters = operation?.parameters ?? []

  // Path: real values for each :param, else hostile (raw, so that malformed escapes reach the router).
  const names = [...route.path.matchAll(/:([A-Za-z_]+)|\*/g)].map((m) => m[1] ?? '*')
  const pathValue = (name: string) =>
    mostly(
      // Read from the pool when generated: a process a run consumed is replaced by a fresh one (replenish).
      fc.nat({ max: 999 }).map((i) => {
        const pool =
          name === 'tenant'
            ? known.tenants
            : name === '*'
              ? ['static/index.html', 'json', 'yaml', 'static/x.css']
              : idsFor(route.path, known)
        return pool[i % pool.length] ?? ''
      }),
      fc.oneof(
        { weight: 3, arbitrary: hostileString.map((s) => urlPart(s, false)) },
        { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_WORDS).map((s) => urlPart(s, true)) },
      ),
    )
  const path = fc.tuple(...names.map(pathValue)).map((values) => {
    let i = 0
    return route.path.replace(/:([A-Za-z_]+)|\*/g, () => values[i++] ?? '')
  })

  // Query: none or the documented parameters (schema-derived), else unknown keys, wild values, garbage.
  const queryNames = parameters.filter((p) => p.in === 'query')
  const pairs = (names: fc.Arbitrary<string>, values: fc.Arbitrary<unknown>) =>
    fc
      .array(fc.tuple(names, values), { maxLength: 3 })
      .map((list) =>
        list
          .map(([k, v]) => `${urlPart(k, false)}=${urlPart(typeof v === 'string' ? v : json(v), false)}`)
          .join('&'),
      )
  const documentedPairs = queryNames.map((p) => fromSchema(p.schema, ctx).map((v) => [p.name, v] as const))
  const query = mostly(
    documentedPairs.length > 0
      ? fc
          .array(fc.oneof(...documentedPairs), { maxLength: 3 })
          .map((list) =>
            list.map(([k, v]) => `${k}=${urlPart(typeof v === 'string' ? v : json(v), false)}`).join('&'),
          )
      : fc.constant(''),
    fc.oneof(
      pairs(
        fc.oneof(
          fc.constantFrom('__proto__', 'constructor', 'a[b]', 'cursor', 'status', 'limit'),
          fc.string({ maxLength: 10 }),
        ),
        fc.oneof(hostileString, wild),
      ),
      fc.constantFrom('%%%', '&&=&', '=', 'a=%ZZ', 'limit=1&limit=2', `x=${'y'.repeat(8000)}`),
    ),
  )

  // Authorization: a real credential of the scheme the operation declares (`security`: jwt, basic,
  // walletToken), any role; else another real one, none, or garbage. Printed by name, never the secret.
  const scheme = Object.keys(operation?.security?.[0] ?? {})[0]
  const prefix = { jwt: 'jwt <', basic: 'Basic <', walletToken: 'Bearer <' }[scheme ?? ''] ?? ''
  const matching = known.auth.filter((a) => prefix !== '' && a.label.startsWith(prefix))
  const noAuth = fc.constant(undefined)
  const authorization = mostly<{ label: string; value: string } | undefined>(
    matching.length > 0 ? fc.constantFrom(...matching) : noAuth,
    fc.oneof(
      noAuth,
      fc.constantFrom(...known.auth),
      fc
        .tuple(fc.constantFrom('jwt ', 'Bearer ', 'Basic ', 'jwt', ''), LATIN1)
        .map(([s, rest]) => ({ label: '', value: `${s}${rest}` })),
      fc
        .string({ maxLength: 40 })
        .map((text) => ({ label: '', value: `Basic ${Buffer.from(text, 'utf8').toString('base64')}` })),
    ),
  )
  // Documented header parameters (login: tenant, ssiconfig) get real values; any route may get garbage.
  const headerNames = new Set(parameters.filter((p) => p.in === 'header').map((p) => p.name))
  const headerValue = (name: string, values: string[]) =>
    mostly<string | null>(
      headerNames.has(name) ? fc.constantFrom(...values) : fc.constant(null),
      fc.oneof(fc.constant(null), fc.constantFrom(...values), LATIN1),
    )
  const form = FORM_ROUTES.has(key(route))
  const contentType = mostly(
    fc.constant(form ? FORM_MEDIA_TYPE : 'application/json'),
    fc.oneof(
      fc.constantFrom(
        'application/json',
        FORM_MEDIA_TYPE,
        'application/json; charset=utf-16',
        'text/plain',
        'multipart/form-data; boundary=x',
        'application/jwt',
        'application/problem+json',
        '',
      ),
      LATIN1,
    ),
  )
  const extraHeader = mostly<[string, string] | null>(
    fc.constant(null),
    fc.tuple(
      fc.constantFrom(
        'accept',
        'accept-encoding',
        'content-encoding',
        'x-forwarded-for',
        'x-forwarded-host',
        'host',
        'origin',
        'user-agent',
        'cookie',
      ),
      LATIN1,
    ),
  )

  // Body: a real body with one member mutated, or one derived from the schema (each as JSON or as a form,
  // as the route takes); else hostile JSON text, protocol form fields, a prototype key, or none.
  const bodySchema = operation?.requestBody?.content['application/json']?.schema
  const example = known.examples[key(route)]
  const schemaValue =
    example === undefined
      ? fromSchema(bodySchema, ctx)
      : fc.oneof(
          { weight: 3, arbitrary: mutation(wild).map((m) => applyMutation(example, m)) },
          { weight: 1, arbitrary: fromSchema(bodySchema, ctx) },
        )
  const formFields = fc.dictionary(
    fc.oneof(
      fc.constantFrom(
        'grant_type',
        'pre-authorized_code',
        'tx_code',
        'user_pin',
        'state',
        'vp_token',
        'presentation_submission',
        'response',
        'error',
        'error_description',
        'wallet_nonce',
        'wallet_metadata',
      ),
      fc.string({ maxLength: 10 }),
    ),
    fc.oneof(
      fc.constantFrom(...known.strings),
      hostileJsonText,
      hostileString,
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    ),
    { maxKeys: 5 },
  )
  const toForm = (value: unknown) => {
    if (value === null || typeof value !== 'object') return `value=${urlPart(String(value), false)}`
    return Object.entries(value)
      .map(
        ([k, v]) => `${urlPart(k, false)}=${urlPart(typeof v === 'string' ? expandDeep(v) : json(v), false)}`,
      )
      .join('&')
  }
  // direct_post: the answer the session in the path would accept, mutated, as a form or as a JWE.
  const answering = key(route) === 'POST /oid4vp/:tenant/responses/:id'
  const answer = mutation(wild).map((m) => (sessionId: string): Body => {
    const expected = known.responses.get(sessionId) ?? [...known.responses.values()][0]
    const params = applyMutation(expected?.params ?? {}, m)
    if (!expected?.encryptTo) return { text: toForm(params) }
    const plaintext = json(params)
    return { text: `response=${encryptJwe(plaintext, expected.encryptTo)}`, plaintext }
  })
  const valid = answering ? answer : schemaValue.map((v): Body => ({ text: form ? toForm(v) : json(v) }))
  const body = BODY_METHODS.has(route.method)
    ? mostly<Body | ((sessionId: string) => Body) | undefined>(
        valid,
        fc.oneof(
          { weight: 1, arbitrary: fc.constant(undefined) },
          { weight: form ? 3 : 1, arbitrary: formFields.map((f): Body => ({ text: toForm(f) })) },
          { weight: 3, arbitrary: hostileJsonText.map((text): Body => ({ text })) },
          {
            weight: 1,
            arbitrary: schemaValue.map((v): Body => {
              const text = json(v)
              return {
                text: text.startsWith('{"') ? `{"__proto__":{"polluted":true},${text.slice(1)}` : text,
              }
            }),
          },
        ),
        3,
      )
    : fc.constant(undefined)

  return fc
    .record({
      path,
      query,
      authorization,
      tenant: headerValue('tenant', known.tenants),
      ssiconfig: headerValue('ssiconfig', known.templateIds),
      contentType,
      extraHeader,
      body,
    })
    .map((r): FuzzRequest => {
      const headers: Record<string, string> = {}
      if (r.authorization) headers.authorization = r.authorization.value
      if (r.tenant !== null) headers.tenant = r.tenant
      if (r.ssiconfig !== null) headers.ssiconfig = r.ssiconfig
      if (r.extraHeader) headers[r.extraHeader[0]] = r.extraHeader[1]
      if (r.body !== undefined) headers['content-type'] = r.contentType
      const body = typeof r.body === 'function' ? r.body(sessionOf(r.path)) : r.body
      const request: FuzzRequest = {
        method: route.method,
        url: r.query === '' ? r.path : `${r.path}?${r.query}`,
        headers,
        ...(r.authorization?.label ? { authLabel: r.authorization.label } : {}),
        ...(body !== undefined ? { payload: body.text } : {}),
        ...(body?.plaintext !== undefined ? { plaintext: body.plaintext } : {}),
        stream: route.path.endsWith('/events'),
      }
      return Object.assign(request, { [fc.toStringMethod]: () => printable(request) })
    })
}

// --- the property ----------------------------------------------------------------------------------------

describe('fuzzing every route: no request answers 5xx', () => {
  let app: FastifyInstance
  let doc: OpenApiDocument
  let known: Known
  let routes: Route[]
  let base: string
  let replenish: (request: FuzzRequest, status: number) => Promise<void>
  const logged: string[] = []
  const tally = new Map<string, number>()

  before(async () => {
    const clock = new ManualClock(Date.parse('2026-11-22T10:15:00.123Z'))
    app = await buildApp({
      config: fuzzConfig(),
      clock,
      dataDir: ':memory:',
      publicUrl: () => 'https://issuer.example',
      // 5xx causes are logged at error level: kept to explain a counterexample.
      logger: { level: 'error', stream: { write: (line: string) => void logged.push(line) } },
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    doc = (await app.inject({ url: '/docs/json' })).json<OpenApiDocument>()
    known = await learn(app, clock)
    replenish = async (request, status) => {
      // A process that took a submission or a rejection is spent for 4.4: open another in its place, so
      // that later runs still reach the submission's signing and storing.
      const spent = /^\/admin\/v1\/issuanceRequests\/([^/?]+)\/(credentials|reject)(\?|$)/.exec(request.url)
      const index =
        spent && request.method !== 'GET' && status < 300 ? known.processIds.indexOf(spent[1] ?? '') : -1
      if (index >= 0) known.processIds[index] = (await grantFor(app, 'degree')).processId
      // A session that took its answer (verified, rejected) is closed: open another of its template.
      const answered = /^\/oid4vp\/[^/]+\/responses\/([^/?]+)/.exec(request.url)?.[1]
      if (answered && known.responses.has(answered)) {
        const session = await app.services.store.sessions.get(answered)
        if (session?.status !== 'PENDING') await known.renew(answered)
      }
    }
    routes = routesOf(app, doc)
  })
  after(async () => {
    app?.server.closeAllConnections()
    await app?.close()
  })

  /** The answer's status; undefined when the client itself refused to send it (fetch rejects some headers). */
  async function send(request: FuzzRequest): Promise<Answer | undefined> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms`)),
        ANSWER_TIMEOUT_MS,
      )
    })
    try {
      if (request.stream) return await Promise.race([openStream(request), timeout])
      const options: InjectOptions = {
        method: request.method as InjectOptions['method'],
        url: request.url,
        headers: request.headers,
        ...(request.payload !== undefined ? { payload: request.payload } : {}),
      }
      const response = await Promise.race([app.inject(options), timeout])
      return { status: response.statusCode, body: response.body }
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * An event stream stays open, and ends by destroying its socket: over real HTTP (inject's socket has no
   * destroy), its answer known from its head, then the client goes away. A HEAD of a stream answers its head
   * and ends (it used to hang: the head of a HEAD answer goes out only with its end).
   */
  async function openStream(request: FuzzRequest): Promise<Answer | undefined> {
    const controller = new AbortController()
    let response: Response
    try {
      response = await fetch(`${base}${request.url}`, {
        method: request.method,
        headers: request.headers,
        signal: controller.signal,
      })
    } catch (error) {
      // fetch refuses some header values before sending anything: nothing to judge.
      const cause = (error as { cause?: { code?: unknown } }).cause
      if (error instanceof TypeError && (cause === undefined || cause.code === 'UND_ERR_INVALID_ARG')) {
        return undefined
      }
      throw error
    }
    const body = response.status >= 500 ? await response.text() : ''
    controller.abort()
    return { status: response.status, body }
  }

  test('the routes: every served route is fuzzed, and every documented operation is served', () => {
    const served = new Set(servedRoutes(app).map(key))
    assert.ok(served.size > 60, `printRoutes parsed: ${served.size} routes`)
    for (const route of routes) assert.ok(served.has(key(route)), `documented but not served: ${key(route)}`)
    for (const name of [
      'GET /health',
      'GET /docs/json',
      'POST /oid4vp/:tenant/responses/:id',
      'HEAD /oid4vci/:tenant/status/:id',
    ]) {
      assert.ok(served.has(name), name)
    }
  })

  test('every route, valid-ish and hostile requests', async (t) => {
    for (const [index, route] of routes.entries()) {
      if (ONLY && !ONLY.test(key(route))) continue
      await t.test(key(route), async () => {
        const property = fc.asyncProperty(requestFor(route, doc, known), async (request) => {
          logged.length = 0
          const response = await send(request)
          fc.pre(response !== undefined)
          const family = `${String(response.status).slice(0, 1)}xx`
          tally.set(family, (tally.get(family) ?? 0) + 1)
          if (response.status < 500) await replenish(request, response.status)
          if (response.status >= 500) {
            const cause = logged.map(
              (line) => (JSON.parse(line) as { err?: { stack?: string } }).err?.stack ?? line,
            )
            throw new Error(
              `${response.status} ${response.body.slice(0, 300)}\n  cause: ${cause.join('\n') || 'none logged'}`,
            )
          }
        })
        await fc.assert(property, {
          numRuns: RUNS,
          includeErrorInReport: true,
          ...(SEED !== undefined ? { seed: SEED + index } : {}),
          // The service keeps state between runs; a failure may not replay exactly while shrinking.
          endOnFailure: false,
        })
      })
    }
    t.diagnostic(`${routes.length} routes × ${RUNS} runs: ${JSON.stringify(Object.fromEntries(tally))}`)
    // The fuzzer reaches handlers, not only the guards: some requests succeed.
    if (!ONLY) assert.ok((tally.get('2xx') ?? 0) > 0, 'no request succeeded')
  })
})

describe('what the fuzzer found, replayed', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(fuzzConfig())
  })
  after(() => t.close())

  test('direct_post.jwt whose error and error_description are JSON objects: the refusal is recorded (was 500)', async () => {
    const rp = await tokenFor(t.app, WIDE_APP, 'degree-dcql-jwe')
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v3/sessions',
      headers: { authorization: `jwt ${rp}` },
      payload: { ssiConfigId: 'degree-dcql-jwe' },
    })
    const { id, authentication_request: link } = created.json<{
      id: string
      authentication_request: string
    }>()
    const requestUri = new URLSearchParams(link.split('?')[1]).get('request_uri') ?? ''
    const { claims } = await fetchRequest(t.app, new URL(requestUri).pathname)
    const key = (claims.client_metadata as unknown as { jwks: { keys: JsonWebKey[] } }).jwks
      .keys[0] as JsonWebKey
    // String() of {toString: 1} throws: the service read the wallet's error with String().
    const plaintext = JSON.stringify({
      state: claims.state,
      error: { toString: 1 },
      error_description: { valueOf: 2 },
    })
    const response = await postResponse(t.app, new URL(claims.response_uri).pathname, {
      response: encryptJwe(plaintext, key),
    })
    assert.equal(response.statusCode, 200, response.body)
    const read = await readSession(t.app, rp, id)
    assert.equal(read.body.Status, 'REJECTED')
    assert.match(read.body.Validations?.checks[0]?.message ?? '', /error \{"toString":1\}: \{"valueOf":2\}/)
  })

  test('a presentation_submission whose descriptor format is an object: 400 invalid_request, the session stays open (was 500)', async () => {
    const holder = newHolder()
    const issued = await issueTo(t.app, t.clock, holder, 'degree', [
      {
        type: ['VerifiableCredential', 'UniversityDegreeCredential'],
        credentialSubject: { degree: { type: 'BachelorDegree' } },
      },
    ])
    const s = await openSession(t)
    const sub = submission(s.id, [{ id: s.definition.input_descriptors[0]?.id ?? 'x' }])
    for (const [entry, member] of [
      [{ ...sub.descriptor_map[0], format: { toString: 1 } }, 'format'],
      [
        { ...sub.descriptor_map[0], path_nested: { ...sub.descriptor_map[0]?.path_nested, path: [1] } },
        'path_nested.path',
      ],
    ] as const) {
      const response = await respond(t.app, s, vpJwt(holder, t.clock, s.request, issued.jwts), {
        ...sub,
        descriptor_map: [entry],
      })
      expectOAuth(
        response,
        400,
        'invalid_request',
        new RegExp(`descriptor_map\\[0\\]\\.${member.replace('.', '\\.')} must be a string`),
      )
    }
    assert.equal((await readSession(t.app, s.rp, s.id)).body.Status, 'PENDING')
  })
})
