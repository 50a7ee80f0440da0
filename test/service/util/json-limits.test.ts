import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { parseConfig, type ServiceConfig } from '../../../src/service/config/index.ts'
import {
  checkCarriedJson,
  checkJsonLimits,
  JSON_LIMITS,
  JsonLimitError,
} from '../../../src/service/util/json-limits.ts'
import { decodeJws, signJws } from '../../../src/shared/jws.ts'
import { auth, makeApp, problemOf, type TestApp, tokenFor } from '../../helpers.ts'
import {
  DEGREE,
  expectOAuth,
  grantFor,
  issueTo,
  jwtRequest,
  newHolder,
  proofJwt,
  readProcess,
  submit,
  walletPost,
} from '../../oid4vci-helpers.ts'
import {
  fetchRequest,
  openSession,
  postResponse,
  readSession,
  submission,
  verificationConfig,
  vpJwt,
  WIDE_APP,
} from '../../verification-helpers.ts'

// Issue 19 item 4: structural limits on every JSON input (RFC 8259 §9), at the edge, before anything
// changes: request bodies, JSON text in direct_post form fields, JWT payloads, SD-JWT disclosures.

const { maxDepth, maxMembers } = JSON_LIMITS

/** JSON text nesting arrays `depth` deep around `leaf`, built as text (JSON.stringify would overflow). */
const nestedText = (depth: number, leaf = '"x"') => `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`
/** The same as a value, built iteratively. */
function nested(depth: number, leaf: unknown = 'x'): unknown {
  let value = leaf
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

const credentialsText = (degree: string) =>
  `[{"type":["VerifiableCredential","UniversityDegreeCredential"],"credentialSubject":{"degree":${degree}}}]`

function patchText(app: FastifyInstance, token: string, processId: string, text: string) {
  return app.inject({
    method: 'PATCH',
    url: `/admin/v1/issuanceRequests/${processId}/credentials`,
    headers: { ...auth(token), 'content-type': 'application/json' },
    payload: text,
  })
}

function expectLimitProblem(response: LightMyRequestResponse, limit: RegExp) {
  assert.equal(response.statusCode, 400, response.body)
  const problem = problemOf(response)
  assert.equal(problem.code, 'json_limit_exceeded')
  assert.match(problem.detail, limit)
  assert.deepEqual(
    problem.errors?.map((e) => e.field),
    ['body'],
  )
}

const DEPTH = new RegExp(`nests deeper than ${maxDepth} levels \\(maxDepth\\)`)
const MEMBERS = new RegExp(`more than ${maxMembers} object members and array elements \\(maxMembers\\)`)

/** verificationConfig() plus dcql templates (OpenID4VP 1.0): by GET, and by request_uri_method=post. */
function limitsConfig(): ServiceConfig {
  const raw = structuredClone(verificationConfig()) as unknown as {
    tenants: { id: string; verificationTemplates: unknown[] }[]
  }
  const demo = raw.tenants.find((t) => t.id === 'demo')
  if (!demo) throw new Error('no demo tenant')
  const dcql = (id: string, settings: Record<string, unknown>) => ({
    id,
    name: id,
    profile: 'dcql',
    credentialTypes: ['UniversityDegreeCredential'],
    dcql: { format: 'jwt_vc_json', ...settings },
  })
  demo.verificationTemplates.push(
    dcql('degree-dcql', {}),
    dcql('degree-dcql-post', { requestUriMethod: 'post' }),
  )
  return parseConfig(raw)
}

describe('JSON request bodies (relying-party API and wallet-facing JSON endpoints)', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(limitsConfig())
  })
  after(() => t.close())

  test('the issue 19 submission: credentialSubject nesting arrays 4,500 deep (9 KB) → 400 naming the limit; the process stays PENDING without data', async () => {
    const g = await grantFor(t.app, 'degree')
    const before = await readProcess(t.app, g.rp, g.processId)
    const text = credentialsText(nestedText(4500))
    assert.ok(text.length < 10_000, 'a 9 KB body, far below bodyLimitBytes')
    // Before the fix: 500 internal_error (JSON.stringify overflowed the stack while storing it).
    expectLimitProblem(await patchText(t.app, g.rp, g.processId, text), DEPTH)
    const process = await readProcess(t.app, g.rp, g.processId)
    assert.equal(process.status, 'PENDING')
    assert.equal(process.data, undefined)
    assert.equal(process.updatedAt, before.updatedAt)
    // Nothing half-written: the same process takes a proper submission afterwards.
    const good = await submit(t.app, g.rp, g.processId, DEGREE)
    assert.equal(good.statusCode, 200, good.body)
  })

  test('a body nesting 100,000 deep → 400, on the relying-party API and on a wallet-facing endpoint', async () => {
    const g = await grantFor(t.app, 'degree')
    const deep = nestedText(100_000, '')
    assert.ok(deep.length < 256 * 1024)
    expectLimitProblem(await patchText(t.app, g.rp, g.processId, deep), DEPTH)
    const offer = await t.app.inject({
      method: 'POST',
      url: '/api/v3/oidc-issuance/credential-offer',
      headers: { ...auth(g.rp), 'content-type': 'application/json' },
      payload: `{"group":${deep}}`,
    })
    expectLimitProblem(offer, /^the JSON body nests deeper than 32 levels/)
    const wallet = await t.app.inject({
      method: 'POST',
      url: '/oid4vci/demo/credential',
      headers: { authorization: `Bearer ${g.accessToken}`, 'content-type': 'application/json' },
      payload: `{"credential_configuration_id":"degree","proof":${deep}}`,
    })
    expectOAuth(wallet, 400, 'invalid_request', DEPTH)
    assert.equal((await readProcess(t.app, g.rp, g.processId)).validator, null)
  })

  test(`a body with more than ${maxMembers} members and elements → 400 naming maxMembers; nothing stored`, async () => {
    const g = await grantFor(t.app, 'degree')
    const wide = `[${new Array(maxMembers).fill('0').join(',')}]`
    expectLimitProblem(await patchText(t.app, g.rp, g.processId, credentialsText(wide)), MEMBERS)
    assert.equal((await readProcess(t.app, g.rp, g.processId)).data, undefined)
    const notification = await t.app.inject({
      method: 'POST',
      url: '/oid4vci/demo/notification',
      headers: { authorization: `Bearer ${g.accessToken}`, 'content-type': 'application/json' },
      payload: `{"notification_id":"x","event":"credential_accepted","pad":${wide}}`,
    })
    expectOAuth(notification, 400, 'invalid_request', MEMBERS)
  })

  test(`exactly ${maxDepth} levels pass and are signed and stored; ${maxDepth + 1} do not`, async () => {
    // body array 1, credential 2, credentialSubject 3, then arrays down to level maxDepth.
    const g = await grantFor(t.app, 'degree')
    expectLimitProblem(
      await patchText(t.app, g.rp, g.processId, credentialsText(nestedText(maxDepth - 2))),
      DEPTH,
    )
    const atLimit = credentialsText(nestedText(maxDepth - 3))
    const holder = newHolder()
    const issued = await issueTo(t.app, t.clock, holder, 'degree', JSON.parse(atLimit))
    const vc = decodeJws(issued.jwts[0] as string).payload.vc as { credentialSubject: { degree: unknown } }
    assert.deepEqual(vc.credentialSubject.degree, nested(maxDepth - 3))
  })

  test('a legitimately large body passes: 20 credentials of 100 claims each, signed and issued', async () => {
    // 100 claims, a third of them structured: about 200 members per credential, 4,000 in all.
    const claims = Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [
        `claim${i}`,
        i % 3 === 0 ? { value: `value number ${i} of this credential`, list: [i, i + 1] } : `value ${i}`,
      ]),
    )
    const credentials = Array.from({ length: 20 }, (_, i) => ({
      id: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      type: ['VerifiableCredential', 'UniversityDegreeCredential'],
      credentialSubject: { ...claims, degree: { type: 'BachelorDegree', name: `Degree ${i}` } },
    }))
    const text = JSON.stringify(credentials)
    assert.ok(text.length > 50_000, `${text.length} bytes`)
    const issued = await issueTo(t.app, t.clock, newHolder(), 'degree', credentials)
    assert.equal(issued.jwts.length, 20)
  })

  test("Fastify's prototype-poisoning protection is kept (secure-json-parse), on both APIs", async () => {
    const g = await grantFor(t.app, 'degree')
    for (const payload of [
      '[{"credentialSubject":{"__proto__":{"admin":true}}}]',
      '[{"credentialSubject":{"a":{"constructor":{"prototype":{"admin":true}}}}}]',
    ]) {
      const response = await patchText(t.app, g.rp, g.processId, payload)
      assert.equal(response.statusCode, 400)
      assert.equal(problemOf(response).code, 'malformed_json')
    }
    const wallet = await t.app.inject({
      method: 'POST',
      url: '/oid4vci/demo/credential',
      headers: { authorization: `Bearer ${g.accessToken}`, 'content-type': 'application/json' },
      payload: '{"credential_configuration_id":"degree","__proto__":{"x":1}}',
    })
    expectOAuth(wallet, 400, 'invalid_request')
  })
})

describe('JSON inside carriers at the wallet-facing edge', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(limitsConfig())
  })
  after(() => t.close())

  test('a jwt proof whose payload nests too deep → 400 invalid_request; the nonce and the process are untouched', async () => {
    const g = await grantFor(t.app, 'degree')
    const holder = newHolder()
    const deep = proofJwt(holder, t.clock, g.cNonce, { payload: { extra: nested(maxDepth + 1) } })
    const refused = await walletPost(t.app, 'credential', g.accessToken, jwtRequest('degree', deep))
    expectOAuth(refused, 400, 'invalid_request', /^the JWT payload of proof\.jwt nests deeper than 32/)
    assert.equal((await readProcess(t.app, g.rp, g.processId)).validator, null)
    // The same c_nonce still works: nothing was consumed by the refused request.
    const good = await walletPost(
      t.app,
      'credential',
      g.accessToken,
      jwtRequest('degree', proofJwt(holder, t.clock, g.cNonce)),
    )
    assert.equal(good.statusCode, 202, good.body)
  })

  test('deep JSON text in a dcql vp_token over direct_post → 400 invalid_request; the session stays open', async () => {
    const rp = await loginFor(t.app, 'degree-dcql')
    const session = await dcqlSession(t.app, rp, 'degree-dcql')
    for (const vpToken of [`{"q":${nestedText(maxDepth)}}`, `{"q":${nestedText(50_000, '')}}`]) {
      const response = await postResponse(t.app, session.responsePath, {
        vp_token: vpToken,
        state: session.state,
      })
      expectOAuth(response, 400, 'invalid_request', /^vp_token nests deeper than 32 levels/)
    }
    const deepSubmission = await postResponse(t.app, session.responsePath, {
      vp_token: '{"q":["a.b.c"]}',
      presentation_submission: `{"descriptor_map":${nestedText(40)}}`,
      state: session.state,
    })
    expectOAuth(deepSubmission, 400, 'invalid_request', /^presentation_submission nests deeper/)
    const read = await readSession(t.app, rp, session.id)
    assert.equal(read.body.Status, 'PENDING')
    assert.equal(read.body.Validations, null)
  })

  test('a pe vp_token JWT with a deep payload, or carrying a credential JWT with deep claims → 400 invalid_request', async () => {
    const s = await openSession(t)
    const holder = newHolder()
    const sub = submission(s.id, [{ id: s.definition.input_descriptors[0]?.id ?? 'x' }])
    const deepVp = vpJwt(holder, t.clock, s.request, [], { payload: { extra: nested(maxDepth + 5) } })
    const issuerKey = newHolder()
    const deepVc = signJws(
      { alg: issuerKey.alg, typ: 'JWT', kid: issuerKey.kid },
      { iss: issuerKey.did, vc: { credentialSubject: { degree: nested(maxDepth + 1) } } },
      issuerKey.privateKey,
    )
    const carrying = vpJwt(holder, t.clock, s.request, [deepVc])
    for (const [vpToken, where] of [
      [deepVp, /^the JWT payload of vp_token nests deeper/],
      [carrying, /^the JWT payload of a token in vp_token nests deeper/],
    ] as const) {
      const response = await postResponse(t.app, s.responsePath, {
        vp_token: vpToken,
        presentation_submission: JSON.stringify(sub),
        state: s.request.state,
      })
      expectOAuth(response, 400, 'invalid_request', where)
    }
    assert.equal((await readSession(t.app, s.rp, s.id)).body.Status, 'PENDING')
  })

  test('an SD-JWT whose disclosures chain deeper than the limit once applied → 400 invalid_request', async () => {
    const rp = await loginFor(t.app, 'degree-dcql')
    const session = await dcqlSession(t.app, rp, 'degree-dcql')
    const response = await postResponse(t.app, session.responsePath, {
      vp_token: JSON.stringify({ q: [chainedSdJwt(maxDepth + 8)] }),
      state: session.state,
    })
    expectOAuth(
      response,
      400,
      'invalid_request',
      /^the claims of an SD-JWT in vp_token, with its disclosures/,
    )
    assert.equal((await readSession(t.app, rp, session.id)).body.Status, 'PENDING')
  })

  test('deep wallet_metadata on request_uri_method=post → 400 invalid_request', async () => {
    const rp = await loginFor(t.app, 'degree-dcql-post')
    const session = await dcqlSession(t.app, rp, 'degree-dcql-post', false)
    const response = await postResponse(t.app, session.requestPath, {
      wallet_metadata: `{"vp_formats_supported":${nestedText(maxDepth + 1, '{}')}}`,
    })
    expectOAuth(response, 400, 'invalid_request', /^wallet_metadata nests deeper than 32/)
  })
})

describe('checkJsonLimits / checkCarriedJson (unit)', () => {
  test('walks iteratively: a million levels are refused without overflowing the checker', () => {
    assert.throws(() => checkJsonLimits(nested(1_000_000), 'x'), JsonLimitError)
    assert.doesNotThrow(() => checkJsonLimits(nested(maxDepth - 1, {}), 'x'))
    assert.throws(() => checkJsonLimits(nested(maxDepth, {}), 'x'), /x nests deeper than 32 levels/)
    assert.doesNotThrow(() => checkJsonLimits(nested(maxDepth, 1), 'x'))
  })

  test(`exactly ${maxMembers} members and elements pass, one more does not`, () => {
    const members = (n: number) => ({ list: new Array(n - 1).fill(0) })
    assert.doesNotThrow(() => checkJsonLimits(members(maxMembers), 'x'))
    assert.throws(() => checkJsonLimits(members(maxMembers + 1), 'x'), MEMBERS)
  })

  test('members are counted over the whole request, the documents of its tokens included', () => {
    const counted = { members: 0 }
    const half = new Array(maxMembers / 2).fill(0)
    checkCarriedJson(half, 'a', { counted })
    assert.throws(
      () => checkCarriedJson([...half, 0], 'b', { counted }),
      /b, with the tokens it carries, holds more than/,
    )
  })

  test('tokens: JWT header and payload, data: URLs, SD-JWT disclosures and the KB-JWT are decoded and checked', () => {
    const key = newHolder()
    const jwt = (payload: Record<string, unknown>) => signJws({ alg: key.alg }, payload, key.privateKey)
    const deep = { deep: nested(maxDepth + 1) }
    assert.throws(() => checkCarriedJson(jwt(deep), 'p'), /the JWT payload of p nests/)
    assert.throws(
      () => checkCarriedJson({ id: `data:application/vc+jwt,${jwt(deep)}` }, 'p'),
      /the JWT payload of p nests/,
    )
    const disclosure = Buffer.from(JSON.stringify(['salt', 'k', nested(maxDepth)])).toString('base64url')
    assert.throws(
      () => checkCarriedJson(`${jwt({ a: 1 })}~${disclosure}~`, 'p'),
      /an SD-JWT disclosure of p nests/,
    )
    assert.throws(() => checkCarriedJson(`${jwt({ a: 1 })}~${jwt(deep)}`, 'p'), /the JWT payload of p/)
    // A legitimate SD-JWT with a short chain and many disclosures passes.
    assert.doesNotThrow(() => checkCarriedJson(chainedSdJwt(10), 'p'))
    assert.doesNotThrow(() => checkCarriedJson(flatSdJwt(200), 'p'))
    // Not a token, or not JSON inside: left to the code that reads it.
    assert.doesNotThrow(() => checkCarriedJson(['example.co.uk', 'a.b.c', 'x~y~z', '..'], 'p'))
  })
})

// --- helpers -------------------------------------------------------------------------------------------

const loginFor = (app: FastifyInstance, template: string) => tokenFor(app, WIDE_APP, template)

/** A dcql session: its id, its state and where the wallet posts (response_uri, request_uri). */
async function dcqlSession(app: FastifyInstance, rp: string, template: string, fetchIt = true) {
  const response = await app.inject({
    method: 'POST',
    url: '/api/v3/sessions',
    headers: auth(rp),
    payload: { ssiConfigId: template },
  })
  assert.equal(response.statusCode, 201, response.body)
  const body = response.json<{ id: string; authentication_request: string }>()
  const requestUri = new URL(
    new URLSearchParams(body.authentication_request.split('?')[1]).get('request_uri') ?? '',
  )
  if (!fetchIt) return { id: body.id, requestPath: requestUri.pathname, responsePath: '', state: '' }
  const { claims } = await fetchRequest(app, requestUri.pathname)
  return {
    id: body.id,
    requestPath: requestUri.pathname,
    responsePath: new URL(claims.response_uri).pathname,
    state: claims.state,
  }
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const digestOf = (disclosure: string) => createHash('sha256').update(disclosure, 'ascii').digest('base64url')
const issuerJwt = (payload: Record<string, unknown>) =>
  `${b64({ alg: 'EdDSA', typ: 'dc+sd-jwt' })}.${b64(payload)}.${randomBytes(64).toString('base64url')}`

/** An SD-JWT whose disclosures each disclose an object holding the next one's digest: `length` levels once applied. */
function chainedSdJwt(length: number): string {
  const disclosures: string[] = []
  let next: string | undefined
  for (let i = 0; i < length; i++) {
    const value = next === undefined ? 'leaf' : { _sd: [next] }
    const disclosure = b64([randomBytes(8).toString('base64url'), `k${i}`, value])
    disclosures.unshift(disclosure)
    next = digestOf(disclosure)
  }
  return `${issuerJwt({ vct: 'x', _sd_alg: 'sha-256', _sd: [next] })}~${disclosures.join('~')}~`
}

/** An SD-JWT of `count` sibling disclosures (shallow however many). */
function flatSdJwt(count: number): string {
  const disclosures = Array.from({ length: count }, (_, i) => b64([`s${i}`, `claim${i}`, { v: [i] }]))
  return `${issuerJwt({ vct: 'x', _sd: disclosures.map(digestOf) })}~${disclosures.join('~')}~`
}
