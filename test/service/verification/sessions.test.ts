import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { PEX } from '@sphereon/pex'
import type { LightMyRequestResponse } from 'fastify'
import type { TenantKey } from '../../../src/service/crypto/tenant-keys.ts'
import { canonicalJson, detachedPayload } from '../../../src/service/verification/definition.ts'
import { didOf, JWS_ALGS, type JwsAlg, resolveDidKey } from '../../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../../src/shared/jws.ts'
import { DEMO, makeApp, problemOf, type TestApp, tokenFor } from '../../helpers.ts'
import {
  changeStatus,
  DEGREE,
  expectOAuth,
  FOREIGN_ISSUER,
  type Holder,
  issueTo,
  newHolder,
  VERIFIABLE_ID,
  WIDE_APP,
} from '../../oid4vci-helpers.ts'
import {
  checksWith,
  createSession,
  type Definition,
  FOREIGN_ISSUER_2,
  FORM,
  fetchRequest,
  getRequest,
  getSession,
  type InputDescriptor,
  type OpenSession,
  OTHER_WIDE,
  openSession,
  postResponse,
  postSession,
  readSession,
  recordSessionEvents,
  respond,
  signCredential,
  submission,
  tamper,
  V1,
  VID_APP,
  verificationConfig,
  vpJwt,
  WEBHOOK_URL,
} from '../../verification-helpers.ts'

// The verification side of the interface (sections 2.7–2.9, 4.6, 4.7, 6) and the wallet-facing
// OpenID4VP draft-20 verifier (request object by reference, direct_post, DIF Presentation Exchange), on
// the wire through app.inject with the manual clock.

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const B64URL = /^[A-Za-z0-9_-]+$/
const ALGS = ['EdDSA', 'ES256', 'ES256K']
const LDP_PROOF_TYPES = [
  'JsonWebSignature2020',
  'Ed25519Signature2018',
  'EcdsaSecp256k1Signature2019',
  'RsaSignature2018',
  'DataIntegrityProof',
]
/** The check names of the interface's webhook example (section 6), which every verified session reports. */
const SECTION_6_CHECKS = ['matchingIds', 'presentationProof', 'securityMechanisms', 'credentialProof']
const ALL_CHECKS = [
  'securityMechanisms',
  'presentationProof',
  'sessionBinding',
  'credentialProof',
  'holderBinding',
  'trustedIssuer',
  'validityPeriod',
  'credentialStatus',
  'matchingIds',
]
const DEGREE_ID = 'UniversityDegreeCredential'

const iso = (ms: number) => new Date(ms).toISOString()
const sorted = (values: Iterable<string>) => [...values].sort()

/** Asserts a problem+json answer with `code`. */
function expectProblem(response: LightMyRequestResponse, status: number, code: string) {
  assert.equal(response.statusCode, status, response.body)
  const problem = problemOf(response)
  assert.equal(problem.code, code, response.body)
  assert.equal(problem.status, status)
  return problem
}

/** The tenant's three issuer DIDs (EdDSA, ES256, ES256K): the default trust list. */
async function tenantIssuerDids(t: TestApp, tenant = 'demo') {
  const keys = await Promise.all(
    (['EdDSA', 'ES256', 'ES256K'] as const).map((alg) => t.app.services.tenantKeys.forTenant(tenant, alg)),
  )
  return keys.map((k) => k.did)
}

const issuerKey = (t: TestApp, alg: JwsAlg = 'EdDSA'): Promise<TenantKey<JwsAlg>> =>
  t.app.services.tenantKeys.forTenant('demo', alg)

/** The field of a descriptor whose filter constrains the issuer (a regex pattern). */
function issuerField(d: InputDescriptor) {
  const field = d.constraints.fields.find(
    (f) => typeof f.filter?.pattern === 'string' && f.path.some((p) => /iss/.test(p)),
  )
  assert.ok(field, `descriptor ${d.id} has an issuer pattern`)
  return field as { path: string[]; filter: { pattern: string } }
}

/** The DIDs spelled out in an issuer pattern. */
const didsIn = (pattern: string) =>
  sorted(new Set((pattern.replaceAll('\\', '').match(/did:key:z[1-9A-HJ-NP-Za-km-z]+/g) ?? []) as string[]))

/** A response the session rejects: 400 invalid_presentation naming `failing` (and only those checks). */
async function expectRejected(
  t: TestApp,
  s: OpenSession,
  response: LightMyRequestResponse,
  failing: string[],
  exactly = true,
) {
  const error = expectOAuth(response, 400, 'invalid_presentation')
  for (const check of failing) assert.match(error.error_description, new RegExp(`\\b${check}\\b`), check)
  const { status, body } = await readSession(t.app, s.rp, s.id)
  assert.equal(status, 200, 'a rejected session is final')
  assert.equal(body.Status, 'REJECTED')
  assert.equal(body.Validations?.status, 'REJECT')
  assert.equal(body.PresentationSubmission, null)
  const failed = checksWith(body, 'failed')
  if (exactly) assert.deepEqual(sorted(failed), sorted(failing), JSON.stringify(body.Validations?.checks))
  else for (const check of failing) assert.ok(failed.includes(check), `${check} failed: ${failed}`)
  for (const check of failing) {
    assert.ok(
      body.Validations?.verificationResult.errors.some((e) => e.startsWith(check)),
      `verificationResult.errors names ${check}`,
    )
  }
  return body
}

/** A session that is still waiting: 202, PENDING, nothing recorded. */
async function expectPending(t: TestApp, s: OpenSession) {
  const { status, body } = await readSession(t.app, s.rp, s.id)
  assert.equal(status, 202)
  assert.equal(body.Status, 'PENDING')
  assert.equal(body.Validations, null)
  assert.equal(body.PresentationSubmission, null)
  assert.equal(body.Subject, '')
}

/** The good answer to a one-credential degree session. */
const degreeSubmission = (s: OpenSession, index = 0) => submission(s.id, [{ id: DEGREE_ID, index }])
const vidSubmission = (s: OpenSession) =>
  submission(s.id, [{ id: descriptorIdOf(s.definition, 'VerifiableId'), index: 0 }])

/** A fresh holder with a degree issued by the demo tenant (EdDSA). */
async function holderWithDegree(t: TestApp, alg: JwsAlg = 'EdDSA') {
  const holder = newHolder(alg)
  const issued = await issueTo(t.app, t.clock, holder, 'degree', DEGREE)
  return { holder, jwt: issued.jwts[0] as string, issued }
}

// ---------------------------------------------------------------------------------------------------------

describe('4.6 create a verification session', () => {
  let t: TestApp
  let wide: string
  before(async () => {
    t = await makeApp(verificationConfig())
    wide = await tokenFor(t.app, WIDE_APP)
  })
  after(() => t.close())

  test('201 with authentication_request and presentation_definition only', async () => {
    const rp = await tokenFor(t.app, DEMO.verifierApp)
    const response = await postSession(t.app, rp, { ssiConfigId: 'degree-check' })
    assert.equal(response.statusCode, 201, response.body)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    const body = response.json()
    assert.deepEqual(Object.keys(body).sort(), ['authentication_request', 'presentation_definition'])
    assert.equal(typeof body.authentication_request, 'string')
    assert.equal(typeof body.presentation_definition, 'object')
  })

  test('authentication_request is openid-vp://? with exactly the six parameters of 2.7, in order', async () => {
    const s = await createSession(t.app, wide, 'degree-check')
    const link = s.body.authentication_request
    assert.ok(link.startsWith('openid-vp://?'), link)
    const url = new URL(link)
    assert.equal(url.protocol, 'openid-vp:')
    assert.deepEqual(
      [...s.query.keys()],
      ['client_id', 'redirect_uri', 'request_uri', 'response_mode', 'response_type', 'scope'],
    )
    assert.equal(s.query.get('response_mode'), 'direct_post')
    assert.equal(s.query.get('response_type'), 'vp_token')
    assert.equal(s.query.get('scope'), 'openid')
    assert.match(s.query.get('client_id') ?? '', /^did:key:z[1-9A-HJ-NP-Za-km-z]+$/)
    // every value is URL-encoded: the link survives a QR code and a wallet's URL parser intact
    for (const value of link.split('?')[1]?.split('&') ?? [])
      assert.doesNotMatch(value.split('=')[1] ?? '', /[:/]/)
    const requestUri = new URL(s.query.get('request_uri') ?? '')
    const redirectUri = new URL(s.query.get('redirect_uri') ?? '')
    assert.equal(requestUri.protocol, 'https:')
    assert.equal(redirectUri.protocol, 'https:')
    assert.notEqual(requestUri.href, redirectUri.href)
    // the session id is presentation_definition.id and the last path segment of both URIs
    assert.equal(requestUri.pathname.split('/').at(-1), s.definition.id)
    assert.equal(redirectUri.pathname.split('/').at(-1), s.definition.id)
    assert.match(s.definition.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    // and it reads the session (4.7)
    const read = await readSession(t.app, wide, s.definition.id)
    assert.equal(read.body.Id, s.definition.id)
  })

  test('every session has its own id', async () => {
    const ids = new Set<string>()
    for (let i = 0; i < 5; i++) ids.add((await createSession(t.app, wide, 'degree-check')).id)
    assert.equal(ids.size, 5)
  })

  test('400 validation_failed on a missing, extra or mistyped body field; nothing is created', async () => {
    const missing = expectProblem(await postSession(t.app, wide, {}), 400, 'validation_failed')
    assert.ok(
      missing.errors?.some((e) => e.field === 'body/ssiConfigId'),
      JSON.stringify(missing),
    )
    const extra = expectProblem(
      await postSession(t.app, wide, { ssiConfigId: 'degree-check', group: 'degree' }),
      400,
      'validation_failed',
    )
    assert.ok(
      extra.errors?.some((e) => e.field === 'body/group'),
      JSON.stringify(extra),
    )
    const typed = expectProblem(await postSession(t.app, wide, { ssiConfigId: 5 }), 400, 'validation_failed')
    assert.ok(
      typed.errors?.some((e) => e.field === 'body/ssiConfigId'),
      JSON.stringify(typed),
    )
    expectProblem(await postSession(t.app, wide, { ssiConfigId: '' }), 400, 'validation_failed')
    const events = recordSessionEvents(t.app)
    await postSession(t.app, wide, { ssiConfigId: 'degree-check', extra: true })
    events.stop()
    assert.deepEqual(events.events, [], 'no session was created')
  })

  test('404 template_not_found for an unknown template and for an issuance template id', async () => {
    const unknown = expectProblem(
      await postSession(t.app, wide, { ssiConfigId: 'no-such-check' }),
      404,
      'template_not_found',
    )
    assert.match(unknown.detail, /no-such-check/)
    expectProblem(await postSession(t.app, wide, { ssiConfigId: 'degree' }), 404, 'template_not_found')
    // another tenant's verification template does not exist in this one
    expectProblem(await postSession(t.app, wide, { ssiConfigId: 'other-check' }), 404, 'template_not_found')
  })

  test('403 template_not_allowed for a key linked to another template', async () => {
    const vid = await tokenFor(t.app, VID_APP)
    const problem = expectProblem(
      await postSession(t.app, vid, { ssiConfigId: 'degree-check' }),
      403,
      'template_not_allowed',
    )
    assert.match(problem.detail, /degree-check/)
    // a key linked to an issuance template
    const issuing = await tokenFor(t.app, DEMO.app)
    expectProblem(
      await postSession(t.app, issuing, { ssiConfigId: 'degree-check' }),
      403,
      'template_not_allowed',
    )
    // its own template still works
    assert.equal((await postSession(t.app, vid, { ssiConfigId: 'vid-check' })).statusCode, 201)
  })

  test('administrators and operators: 403 role_forbidden', async () => {
    for (const key of [DEMO.admin, DEMO.operator]) {
      const token = await tokenFor(t.app, key)
      expectProblem(await postSession(t.app, token, { ssiConfigId: 'degree-check' }), 403, 'role_forbidden')
    }
  })

  test('401 without a token or with a bad one', async () => {
    expectProblem(
      await postSession(t.app, undefined, { ssiConfigId: 'degree-check' }),
      401,
      'unauthenticated',
    )
    expectProblem(
      await postSession(t.app, `${wide.slice(0, -4)}AAAA`, { ssiConfigId: 'degree-check' }),
      401,
      'invalid_token',
    )
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('2.8 presentation definition', () => {
  let t: TestApp
  let wide: string
  before(async () => {
    t = await makeApp(verificationConfig())
    wide = await tokenFor(t.app, WIDE_APP)
  })
  after(() => t.close())

  test('id, name and the members of 2.8', async () => {
    const s = await createSession(t.app, wide, 'degree-check')
    const d = s.definition
    assert.equal(d.id, s.id)
    assert.equal(d.name, 'Degree check')
    for (const member of ['dataAgreement', 'format', 'submission_requirements', 'input_descriptors', 'proof'])
      assert.ok(member in d, member)
  })

  test('dataAgreement: every field of 2.8, epoch-millisecond timestamps, template values', async () => {
    const created = t.clock.now()
    const s = await createSession(t.app, wide, 'vid-check')
    const verifier = s.query.get('client_id')
    const a = s.definition.dataAgreement as Record<string, unknown> & {
      data_receiver: Record<string, unknown>
      event: Record<string, unknown>[]
      personal_data: Record<string, unknown>[]
    }
    for (const field of [
      '@context',
      'data_receiver',
      'event',
      'id',
      'personal_data',
      'purposes',
      'template_id',
      'template_version',
      'version',
    ])
      assert.ok(field in a, `dataAgreement.${field}`)
    assert.ok(
      Array.isArray(a['@context']) && a['@context'].length > 0,
      "Array.isArray(a['@context']) && a['@context'].length > 0",
    )
    assert.equal(typeof a.id, 'string')
    assert.equal(a.template_id, 'vid-check')
    assert.equal(typeof a.template_version, 'string')
    assert.equal(typeof a.version, 'string')
    assert.deepEqual(a.purposes, ['We check who you are'])
    assert.equal(a.data_receiver.id, verifier, 'the receiver is the verifier (client_id)')
    assert.match(String(a.data_receiver.id), /^did:/)
    assert.equal(a.data_receiver.consent_duration, 90, 'consentDurationDays of the template')
    assert.equal(typeof a.data_receiver.form_of_consent, 'string')
    assert.doesNotThrow(() => new URL(String(a.data_receiver.url)))
    assert.ok(Array.isArray(a.event) && a.event.length > 0, 'Array.isArray(a.event) && a.event.length > 0')
    for (const event of a.event) {
      assert.equal(event.principle_did, verifier)
      assert.equal(typeof event.state, 'string')
      assert.equal(typeof event.version, 'string')
      assert.equal(typeof event.timestamp, 'number')
      assert.equal(event.timestamp, created, 'epoch milliseconds of the session creation')
      assert.ok(
        Array.isArray(event.proof) && event.proof.length > 0,
        'Array.isArray(event.proof) && event.proof.length > 0',
      )
      for (const proof of event.proof as Record<string, unknown>[]) {
        // 2.5: data agreement proofs carry signatureValue, verificationMethod, domain, nonce
        for (const field of ['signatureValue', 'verificationMethod', 'domain', 'nonce'])
          assert.equal(typeof proof[field], 'string', `agreement proof ${field}`)
        assert.equal(didOf(String(proof.verificationMethod)), verifier)
      }
    }
    // docs/verification.md: fixed values of the agreement
    assert.equal(a.id, `urn:uuid:${s.id}`)
    assert.equal(a.version, '1.0.0')
    assert.equal(a.data_receiver.form_of_consent, 'explicit')
    assert.equal(a.data_receiver.url, 'https://issuer.example')
    assert.equal(a.event[0]?.state, 'offer')
    // the event proof: a detached JWS by the verifier over the agreement without `event`
    const { event: _event, ...agreement } = a
    const proofs = a.event[0]?.proof as Record<string, string>[] | undefined
    const proof = proofs?.[0] ?? {}
    const [header, empty, signature] = String(proof.signatureValue).split('.')
    assert.equal(empty, '')
    const key = resolveDidKey(String(proof.verificationMethod)).publicKey
    assert.doesNotThrow(() =>
      verifyJws(`${header}.${detachedPayload(agreement)}.${signature}`, key, { algorithms: JWS_ALGS }),
    )
    assert.throws(() =>
      verifyJws(`${header}.${detachedPayload({ ...agreement, template_id: 'x' })}.${signature}`, key, {
        algorithms: JWS_ALGS,
      }),
    )
    const { claims } = await fetchRequest(t.app, s.requestPath)
    assert.equal(proof.nonce, claims.nonce, "the agreement proof's nonce is the request's")
    // personal_data: one entry per requested field, sensitivity and purposes from the template
    assert.deepEqual(a.personal_data, [
      { attribute_name: 'familyName', attribute_sensitive: true, purposes: ['To address you'] },
      { attribute_name: 'nickname', attribute_sensitive: false, purposes: ['We check who you are'] },
    ])
  })

  test('dataAgreement defaults: consent_duration 30, purposes null without a purpose', async () => {
    const s = await createSession(t.app, wide, 'degree-check')
    const a = s.definition.dataAgreement as { data_receiver: { consent_duration: number }; purposes: unknown }
    assert.equal(a.data_receiver.consent_duration, 30)
    assert.equal(a.purposes, null)
  })

  test('format: jwt/jwt_vp algs EdDSA, ES256, ES256K; ldp/ldp_vc/ldp_vp the four proof types of 2.8 and Data Integrity', async () => {
    const { format } = (await createSession(t.app, wide, 'degree-check')).definition
    for (const key of ['jwt', 'jwt_vp']) assert.deepEqual(sorted(format[key]?.alg ?? []), sorted(ALGS), key)
    for (const key of ['ldp', 'ldp_vc', 'ldp_vp'])
      assert.deepEqual(sorted(format[key]?.proof_type ?? []), sorted(LDP_PROOF_TYPES), key)
  })

  test('submission_requirements: rule all for the mandatory group', async () => {
    const d = (await createSession(t.app, wide, 'vid-check')).definition
    assert.equal(d.submission_requirements.length, 1)
    const [all] = d.submission_requirements
    assert.equal(all?.rule, 'all')
    assert.equal(all?.from, 'mandatory')
    assert.equal(typeof all?.name, 'string')
    assert.equal(all?.purpose, 'We check who you are')
    assert.equal(all?.min, undefined)
    for (const descriptor of d.input_descriptors) assert.deepEqual(descriptor.group, ['mandatory'])
  })

  test('submission_requirements: rule pick with min for each optional group', async () => {
    for (const [template, min] of [
      ['degree-plus', 1],
      ['degree-plus2', 2],
    ] as const) {
      const d = (await createSession(t.app, wide, template)).definition
      assert.equal(d.submission_requirements.length, 2)
      const pick = d.submission_requirements.find((r) => r.rule === 'pick')
      assert.deepEqual(
        { rule: pick?.rule, from: pick?.from, min: pick?.min },
        { rule: 'pick', from: 'extras', min },
        template,
      )
      assert.equal(typeof pick?.name, 'string')
      assert.ok(
        d.submission_requirements.some((r) => r.rule === 'all' && r.from === 'mandatory'),
        "d.submission_requirements.some((r) => r.rule === 'all' && r.from === 'mandatory')",
      )
      // one descriptor per type, each in its group
      const groups = d.input_descriptors.map((x) => [x.name, x.group])
      assert.deepEqual(groups, [
        [DEGREE_ID, ['mandatory']],
        ['VerifiableId', ['extras']],
        ['EmployeeCredential', ['extras']],
      ])
      assert.equal(new Set(d.input_descriptors.map((x) => x.id)).size, 3, 'descriptor ids are unique')
    }
  })

  test('input_descriptors: one per type, the type matched on the last element of type', async () => {
    const d = (await createSession(t.app, wide, 'degree-and-id')).definition
    assert.equal(d.input_descriptors.length, 2)
    for (const [i, type] of [DEGREE_ID, 'VerifiableId'].entries()) {
      const descriptor = d.input_descriptors[i] as InputDescriptor
      assert.equal(descriptor.name, type)
      assert.deepEqual(descriptor.group, ['mandatory'])
      const typeField = descriptor.constraints.fields.find((f) => f.path.some((p) => /type\[-1:?\]$/.test(p)))
      assert.ok(typeField, `descriptor ${type} filters on type[-1]`)
      assert.ok(
        typeField.path.every((p) => /type\[-1:?\]$/.test(p)),
        `every path is the last element: ${typeField.path}`,
      )
      const filter = typeField.filter ?? {}
      if ('const' in filter) assert.equal(filter.const, type)
      else {
        const pattern = new RegExp(String(filter.pattern))
        assert.ok(
          pattern.test(type) && !pattern.test(`${type}X`) && !pattern.test(`X${type}`),
          `the type pattern matches exactly ${type}`,
        )
      }
    }
  })

  test('the issuer pattern lists exactly the tenant’s three issuer DIDs by default', async () => {
    const d = (await createSession(t.app, wide, 'degree-check')).definition
    const trusted = await tenantIssuerDids(t)
    assert.equal(new Set(trusted).size, 3)
    const { filter } = issuerField(d.input_descriptors[0] as InputDescriptor)
    assert.deepEqual(didsIn(filter.pattern), sorted(trusted))
    const pattern = new RegExp(filter.pattern)
    for (const did of trusted) {
      assert.ok(pattern.test(did), did)
      assert.ok(!pattern.test(`${did}x`), 'anchored at the end')
      assert.ok(!pattern.test(`x${did}`), 'anchored at the start')
    }
    assert.ok(!pattern.test(FOREIGN_ISSUER), '!pattern.test(FOREIGN_ISSUER)')
    assert.ok(!pattern.test(newHolder().did), '!pattern.test(newHolder().did)')
  })

  test('the issuer pattern lists exactly the template’s trustedIssuers when given', async () => {
    const d = (await createSession(t.app, wide, 'degree-foreign')).definition
    const { filter } = issuerField(d.input_descriptors[0] as InputDescriptor)
    assert.deepEqual(didsIn(filter.pattern), sorted([FOREIGN_ISSUER, FOREIGN_ISSUER_2]))
    const pattern = new RegExp(filter.pattern)
    assert.ok(
      pattern.test(FOREIGN_ISSUER) && pattern.test(FOREIGN_ISSUER_2),
      'pattern.test(FOREIGN_ISSUER) && pattern.test(FOREIGN_ISSUER_2)',
    )
    for (const own of await tenantIssuerDids(t))
      assert.ok(!pattern.test(own), 'own DIDs are not trusted here')
  })

  test('statuses.active.directive required by default; absent when requireStatus is false', async () => {
    const strict = (await createSession(t.app, wide, 'degree-check')).definition
    for (const descriptor of strict.input_descriptors)
      assert.equal(descriptor.constraints.statuses?.active?.directive, 'required')
    const lax = (await createSession(t.app, wide, 'degree-nostatus')).definition
    for (const descriptor of lax.input_descriptors)
      assert.notEqual(descriptor.constraints.statuses?.active?.directive, 'required')
  })

  test('requestedFields become descriptor fields: required by default, optional when the template says so', async () => {
    const d = (await createSession(t.app, wide, 'vid-check')).definition
    const { fields } = (d.input_descriptors[0] as InputDescriptor).constraints
    const family = fields.find((f) => f.path.some((p) => p.endsWith('credentialSubject.familyName')))
    const nick = fields.find((f) => f.path.some((p) => p.endsWith('credentialSubject.nickname')))
    assert.ok(family && nick, JSON.stringify(fields))
    assert.notEqual(family.optional, true)
    assert.equal(family.purpose, 'To address you')
    assert.equal(nick.optional, true)
    assert.equal(typeof family.intent_to_retain, 'boolean')
  })

  test('proof: a detached JWS by the verifier over the canonical definition without proof', async () => {
    const s = await createSession(t.app, wide, 'vid-check')
    const { proof, ...unsigned } = s.definition
    assert.ok(Array.isArray(proof) && proof.length === 1, 'Array.isArray(proof) && proof.length === 1')
    const p = proof[0] as { proofPurpose: string; creator: string; proofValue: string; created: string }
    assert.equal(p.proofPurpose, 'authentication')
    assert.match(p.creator, /^did:key:z[^#]+#z/)
    assert.equal(didOf(p.creator), s.query.get('client_id'), 'signed by the verifier')
    assert.match(p.created, ISO_MS)
    const [header, empty, signature] = p.proofValue.split('.')
    assert.equal(empty, '', 'detached: header..signature')
    const key = resolveDidKey(p.creator).publicKey
    const rebuilt = `${header}.${detachedPayload(unsigned)}.${signature}`
    assert.doesNotThrow(() => verifyJws(rebuilt, key, { algorithms: JWS_ALGS }))
    // the payload is base64url(JSON.stringify({canonical: canonicalJson(definition without proof)}))
    assert.equal(
      Buffer.from(detachedPayload(unsigned), 'base64url').toString('utf8'),
      JSON.stringify({ canonical: canonicalJson(unsigned) }),
    )
    // and it covers the whole definition: a changed name or trust list no longer verifies
    const renamed = { ...unsigned, name: 'Something else' }
    assert.throws(() =>
      verifyJws(`${header}.${detachedPayload(renamed)}.${signature}`, key, { algorithms: JWS_ALGS }),
    )
    const widened = structuredClone(unsigned) as typeof unsigned
    ;(widened.input_descriptors[0] as InputDescriptor).constraints.fields.pop()
    assert.throws(() =>
      verifyJws(`${header}.${detachedPayload(widened)}.${signature}`, key, { algorithms: JWS_ALGS }),
    )
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('request object (request_uri)', () => {
  let t: TestApp
  let wide: string
  before(async () => {
    t = await makeApp(verificationConfig())
    wide = await tokenFor(t.app, WIDE_APP)
  })
  after(() => t.close())

  test('signed by the client_id DID, typ oauth-authz-req+jwt, served as application/oauth-authz-req+jwt', async () => {
    const s = await createSession(t.app, wide, 'degree-check')
    const response = await getRequest(t.app, s.requestPath)
    assert.equal(response.statusCode, 200, response.body)
    assert.match(String(response.headers['content-type']), /^application\/oauth-authz-req\+jwt/)
    const { header, payload } = decodeJws(response.body)
    assert.equal(header.typ, 'oauth-authz-req+jwt')
    const clientId = s.query.get('client_id') as string
    assert.equal(payload.client_id, clientId)
    const key = resolveDidKey(clientId)
    assert.ok(ALGS.includes(String(header.alg)), 'ALGS.includes(String(header.alg))')
    assert.equal(didOf(String(header.kid)), clientId, 'kid is a key of the client_id DID')
    assert.doesNotThrow(() => verifyJws(response.body, key.publicKey, { algorithms: JWS_ALGS }))
    // a key other than the client_id's does not verify it
    assert.throws(() => verifyJws(response.body, newHolder().publicKey, { algorithms: JWS_ALGS }))
  })

  test('claims: did client_id, response_uri, direct_post, nonce, state, definition, exp; no scope, no client_id_scheme', async () => {
    const created = t.clock.now()
    const s = await createSession(t.app, wide, 'vid-check')
    const { claims } = await fetchRequest(t.app, s.requestPath)
    assert.equal(claims.client_id, s.query.get('client_id'))
    assert.match(String(claims.client_id), /^did:key:/)
    // OpenID4VP 1.0 §5.1: one of dcql_query, presentation_definition or scope; client_id_scheme is gone.
    // The link keeps section 2.7's scope=openid; the signed object wins over it (RFC 9101 §6.3).
    assert.equal(claims.scope, undefined)
    assert.equal(claims.client_id_scheme, undefined)
    assert.equal(s.query.get('scope'), 'openid')
    assert.equal(claims.response_uri, s.query.get('redirect_uri'))
    assert.equal(new URL(claims.response_uri).pathname, s.responsePath)
    assert.equal(claims.response_mode, 'direct_post')
    assert.equal(claims.response_type, 'vp_token')
    assert.match(claims.nonce, B64URL)
    assert.ok(claims.nonce.length >= 22, `nonce of at least 128 bits: ${claims.nonce}`)
    assert.equal(typeof claims.state, 'string')
    assert.ok(claims.state.length >= 16, 'claims.state.length >= 16')
    assert.equal(
      claims.exp,
      Math.floor((created + 120 * 1000) / 1000),
      'exp = created + sessionLifetimeSeconds',
    )
    // the definition without the interface's extra members (DIF PEX validators refuse them); an optional
    // requested field constrains nothing and its `optional` member is not in the DIF schema either
    const { dataAgreement: _a, proof: _p, ...dif } = structuredClone(s.definition)
    for (const d of dif.input_descriptors)
      d.constraints.fields = d.constraints.fields.filter((f) => !f.optional)
    // every format of the relying party's view: the verifier checks the Linked Data ones too (issue 33)
    assert.deepEqual(
      Object.keys(s.definition.format).filter((k) => k.startsWith('ldp')),
      ['ldp', 'ldp_vc', 'ldp_vp'],
    )
    assert.deepEqual(claims.presentation_definition, dif)
    assert.ok(
      !('dataAgreement' in claims.presentation_definition),
      "!('dataAgreement' in claims.presentation_definition)",
    )
    assert.ok(!('proof' in claims.presentation_definition), "!('proof' in claims.presentation_definition)")
  })

  test('the request object’s definition is a valid DIF Presentation Exchange v2 definition', async () => {
    for (const template of [
      'degree-check',
      'vid-check',
      'degree-nostatus',
      'degree-foreign',
      'degree-plus',
      'degree-and-id',
    ]) {
      const s = await createSession(t.app, wide, template)
      const { claims } = await fetchRequest(t.app, s.requestPath)
      assert.doesNotThrow(() => PEX.validateDefinition(claims.presentation_definition as never), template)
      assert.deepEqual(
        PEX.definitionVersionDiscovery(claims.presentation_definition as never).version,
        'v2',
        template,
      )
    }
  })

  test('exp defaults to created + 600 s', async () => {
    const created = t.clock.now()
    const s = await createSession(t.app, wide, 'degree-check')
    const { claims } = await fetchRequest(t.app, s.requestPath)
    assert.equal(claims.exp, Math.floor((created + 600_000) / 1000))
  })

  test('nonce and state are distinct per session', async () => {
    const nonces = new Set<string>()
    const states = new Set<string>()
    for (let i = 0; i < 5; i++) {
      const s = await createSession(t.app, wide, 'degree-check')
      const { claims } = await fetchRequest(t.app, s.requestPath)
      nonces.add(claims.nonce)
      states.add(claims.state)
    }
    assert.equal(nonces.size, 5)
    assert.equal(states.size, 5)
  })

  test('fetchable twice; RequestedAt is set by the first fetch and kept', async () => {
    const s = await createSession(t.app, wide, 'degree-check')
    assert.equal((await readSession(t.app, wide, s.id)).body.RequestedAt, null)
    t.clock.advance(1500)
    const firstAt = t.clock.now()
    const first = await getRequest(t.app, s.requestPath)
    assert.equal(first.statusCode, 200)
    const after1 = (await readSession(t.app, wide, s.id)).body
    assert.equal(after1.RequestedAt, iso(firstAt))
    t.clock.advance(1500)
    const second = await getRequest(t.app, s.requestPath)
    assert.equal(second.statusCode, 200)
    assert.equal(second.body, first.body, 'the same signed request')
    const after2 = await readSession(t.app, wide, s.id)
    assert.equal(after2.body.RequestedAt, iso(firstAt), 'the first fetch counts')
    assert.equal(after2.status, 202, 'fetching does not complete the session')
  })

  test('unknown id and another tenant’s path: 404 not_found', async () => {
    expectOAuth(
      await getRequest(t.app, '/oid4vp/demo/requests/00000000-0000-4000-8000-000000000000'),
      404,
      'not_found',
    )
    const s = await createSession(t.app, wide, 'degree-check')
    expectOAuth(await getRequest(t.app, s.requestPath.replace('/demo/', '/other/')), 404, 'not_found')
    expectOAuth(await getRequest(t.app, s.requestPath.replace('/demo/', '/nobody/')), 404, 'not_found')
    // and the other tenant's own session is not reachable through the demo path
    const other = await createSession(t.app, await tokenFor(t.app, OTHER_WIDE), 'other-check')
    assert.ok(
      other.requestPath.startsWith('/oid4vp/other/'),
      "other.requestPath.startsWith('/oid4vp/other/')",
    )
    expectOAuth(await getRequest(t.app, other.requestPath.replace('/other/', '/demo/')), 404, 'not_found')
    assert.equal((await getRequest(t.app, other.requestPath)).statusCode, 200)
  })

  test('an expired session: 410 session_expired', async () => {
    const s = await createSession(t.app, wide, 'vid-check')
    t.clock.advance(119_000)
    assert.equal((await getRequest(t.app, s.requestPath)).statusCode, 200, 'still alive before ExpiredAt')
    t.clock.advance(1_000)
    expectOAuth(await getRequest(t.app, s.requestPath), 410, 'session_expired')
  })

  test('a completed session: 409 session_closed', async () => {
    const { holder, jwt } = await holderWithDegree(t)
    const s = await openSession(t, 'degree-check')
    const ok = await respond(t.app, s, vpJwt(holder, t.clock, s.request, [jwt]), degreeSubmission(s))
    assert.equal(ok.statusCode, 200, ok.body)
    expectOAuth(await getRequest(t.app, s.requestPath), 409, 'session_closed')
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('4.7 read a verification session', () => {
  let t: TestApp
  let holder: Holder
  let jwt: string
  before(async () => {
    t = await makeApp(verificationConfig())
    ;({ holder, jwt } = await holderWithDegree(t))
  })
  after(() => t.close())

  test('202 while pending: the 2.9 fields, nothing shared yet', async () => {
    const rp = await tokenFor(t.app, VID_APP)
    const created = t.clock.now()
    const s = await createSession(t.app, rp, 'vid-check')
    const { status, body, response } = await readSession(t.app, rp, s.id)
    assert.equal(status, 202)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    assert.equal(response.headers['cache-control'], 'no-store', 'issue 19: never cached')
    for (const field of [
      'Id',
      'PresentationSubmission',
      'PresentationSubmissionFormat',
      'Validations',
      'PresentationDefinition',
      'AuthRequest',
      'RequestedAt',
      'CreatedAt',
      'UpdatedAt',
      'ExpiredAt',
      'DeletedAt',
      'SourceWallet',
      'Callback',
      'Subject',
    ])
      assert.ok(field in body, field)
    assert.equal(body.Id, s.id)
    assert.equal(body.PresentationSubmission, null)
    assert.equal(body.PresentationSubmissionFormat, '')
    assert.equal(body.Validations, null)
    assert.equal(body.Subject, '')
    assert.equal(body.SourceWallet, '')
    assert.equal(body.RequestedAt, null)
    assert.equal(body.DeletedAt, null)
    assert.equal(body.Callback, WEBHOOK_URL, "Callback is the template's webhook URL")
    assert.deepEqual(body.PresentationDefinition, s.definition)
    for (const stamp of [body.CreatedAt, body.UpdatedAt, body.ExpiredAt]) assert.match(stamp, ISO_MS)
    assert.equal(body.CreatedAt, iso(created))
    assert.equal(body.ExpiredAt, iso(created + 120_000))
    // AuthRequest: the request object's claims plus the definition's members (2.9)
    const auth = body.AuthRequest
    for (const field of [
      'exp',
      'iss',
      'response_type',
      'client_id',
      'redirect_uri',
      'state',
      'scope',
      'response_mode',
      'nonce',
      'presentation_definition',
      'name',
      'id',
      'format',
      'submission_requirements',
      'input_descriptors',
      'proof',
    ])
      assert.ok(field in auth, `AuthRequest.${field}`)
    assert.equal(auth.exp, Math.floor((created + 120_000) / 1000), 'epoch seconds')
    assert.equal(auth.redirect_uri, s.query.get('redirect_uri'))
    assert.equal(auth.client_id, s.query.get('client_id'))
    assert.equal(auth.id, s.id)
    assert.equal(auth.name, 'ID check')
    assert.deepEqual(auth.proof, s.definition.proof)
    const { claims } = await fetchRequest(t.app, s.requestPath)
    assert.equal(auth.nonce, claims.nonce)
    assert.equal(auth.state, claims.state)
    assert.equal(response.headers['cache-control'], 'no-store')
  })

  test('Callback is empty when the template has no webhook', async () => {
    const s = await openSession(t, 'degree-check')
    assert.equal((await readSession(t.app, s.rp, s.id)).body.Callback, '')
  })

  test('200 VERIFIED: the submission, Subject = holder DID, every validation passed', async () => {
    const s = await openSession(t, 'degree-check')
    t.clock.advance(2000)
    const answeredAt = t.clock.now()
    const response = await respond(
      t.app,
      s,
      vpJwt(holder, t.clock, s.request, [jwt]),
      degreeSubmission(s),
      {},
    )
    assert.equal(response.statusCode, 200, response.body)
    const { status, body } = await readSession(t.app, s.rp, s.id)
    assert.equal(status, 200)
    assert.equal(body.Status, 'VERIFIED')
    assert.equal(body.Subject, holder.did)
    assert.notEqual(body.PresentationSubmission, null)
    assert.notEqual(body.PresentationSubmissionFormat, '')
    assert.equal(body.UpdatedAt, iso(answeredAt))
    assert.ok(body.Validations, 'body.Validations')
    assert.equal(body.Validations.status, 'SUCCESS')
    assert.deepEqual(sorted(body.Validations.checks.map((c) => c.check)), sorted(ALL_CHECKS))
    for (const c of body.Validations.checks) assert.equal(c.result, 'passed', `${c.check}: ${c.message}`)
    for (const check of SECTION_6_CHECKS)
      assert.ok(
        body.Validations.verificationResult.checks.includes(check),
        'body.Validations.verificationResult.checks.includes(check)',
      )
    assert.deepEqual(body.Validations.verificationResult.errors, [])
    // what the holder shared: the definition it answers, and the credential
    const shared = body.PresentationSubmission as { definition_id?: string; verifiableCredential?: unknown[] }
    assert.equal(shared.definition_id, s.id)
    assert.equal(JSON.stringify(shared).includes(jwt), true, 'the shared credential is in the submission')
  })

  test('SourceWallet names the responding wallet (its User-Agent)', async () => {
    const s = await openSession(t, 'degree-check')
    const response = await postResponse(
      t.app,
      s.responsePath,
      {
        vp_token: vpJwt(holder, t.clock, s.request, [jwt]),
        presentation_submission: JSON.stringify(degreeSubmission(s)),
        state: s.request.state,
      },
      FORM,
      { 'user-agent': 'TestWallet/1.0' },
    )
    assert.equal(response.statusCode, 200, response.body)
    assert.equal((await readSession(t.app, s.rp, s.id)).body.SourceWallet, 'TestWallet/1.0')
  })

  test('200 REJECTED: Validations name the failed check', async () => {
    const s = await openSession(t, 'degree-check')
    const vp = vpJwt(holder, t.clock, { ...s.request, nonce: 'not-the-nonce' }, [jwt])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['sessionBinding'])
    const { body } = await readSession(t.app, s.rp, s.id)
    assert.equal(body.PresentationSubmissionFormat, '')
    const failed = body.Validations?.checks.find((c) => c.check === 'sessionBinding')
    assert.match(failed?.message ?? '', /nonce/)
    assert.equal(body.Subject, holder.did, 'the holder proved its key, so it is the subject')
  })

  test('200 EXPIRED once the clock passes ExpiredAt', async () => {
    const s = await openSession(t, 'vid-check', VID_APP)
    const pending = await readSession(t.app, s.rp, s.id)
    assert.equal(pending.status, 202)
    t.clock.advance(Date.parse(pending.body.ExpiredAt) - t.clock.now() - 1)
    assert.equal((await readSession(t.app, s.rp, s.id)).status, 202, 'one millisecond before')
    t.clock.advance(1)
    const expired = await readSession(t.app, s.rp, s.id)
    assert.equal(expired.status, 200)
    assert.equal(expired.body.Status, 'EXPIRED')
    assert.equal(expired.body.PresentationSubmission, null)
    assert.equal(expired.body.Subject, '')
  })

  test('another tenant: 404 session_not_found, like an unknown id', async () => {
    const s = await openSession(t, 'degree-check')
    const other = await tokenFor(t.app, OTHER_WIDE)
    const foreign = expectProblem(await getSession(t.app, other, s.id), 404, 'session_not_found')
    const unknown = expectProblem(
      await getSession(t.app, other, '00000000-0000-4000-8000-000000000000'),
      404,
      'session_not_found',
    )
    assert.equal(foreign.title, unknown.title)
  })

  test('a token linked to another template: 403 session_not_linked', async () => {
    const s = await openSession(t, 'degree-check')
    const vid = await tokenFor(t.app, VID_APP)
    const problem = expectProblem(await getSession(t.app, vid, s.id), 403, 'session_not_linked')
    assert.match(problem.detail, /degree-check/)
    expectProblem(await getSession(t.app, await tokenFor(t.app, DEMO.app), s.id), 403, 'session_not_linked')
    // the linked key reads it
    assert.equal((await getSession(t.app, await tokenFor(t.app, DEMO.verifierApp), s.id)).statusCode, 202)
  })

  test('administrators: 403 role_forbidden; no token: 401', async () => {
    const s = await openSession(t, 'degree-check')
    expectProblem(await getSession(t.app, await tokenFor(t.app, DEMO.admin), s.id), 403, 'role_forbidden')
    expectProblem(await getSession(t.app, undefined, s.id), 401, 'unauthenticated')
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('direct_post: a good response', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(verificationConfig())
  })
  after(() => t.close())

  test('200 with a JSON body and no-store', async () => {
    const { holder, jwt } = await holderWithDegree(t)
    const s = await openSession(t)
    const response = await respond(t.app, s, vpJwt(holder, t.clock, s.request, [jwt]), degreeSubmission(s))
    assert.equal(response.statusCode, 200, response.body)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    assert.equal(response.headers['cache-control'], 'no-store')
    assert.equal(typeof response.json(), 'object')
  })

  test('the flat descriptor_map form ($.verifiableCredential[n], jwt_vc) is accepted too', async () => {
    const { holder, jwt } = await holderWithDegree(t)
    const s = await openSession(t)
    const flat = {
      id: 'flat',
      definition_id: s.id,
      descriptor_map: [{ id: DEGREE_ID, format: 'jwt_vc', path: '$.verifiableCredential[0]' }],
    }
    const response = await respond(t.app, s, vpJwt(holder, t.clock, s.request, [jwt]), flat)
    assert.equal(response.statusCode, 200, response.body)
  })

  test('P-256 and secp256k1 holders, and credentials signed with ES256', async () => {
    for (const alg of ['ES256', 'ES256K'] as const) {
      const holder = newHolder(alg)
      const degree = (await issueTo(t.app, t.clock, holder, 'degree', DEGREE)).jwts[0] as string
      const employee = (
        await issueTo(t.app, t.clock, holder, 'es256', [
          { type: ['VerifiableCredential', 'EmployeeCredential'], credentialSubject: { employer: 'ACME' } },
        ])
      ).jwts[0] as string
      assert.equal(decodeJws(employee).header.alg, 'ES256')
      const s = await openSession(t, 'degree-plus')
      const response = await respond(
        t.app,
        s,
        vpJwt(holder, t.clock, s.request, [degree, employee]),
        submission(s.id, [
          { id: DEGREE_ID, index: 0 },
          { id: descriptorIdOf(s.definition, 'EmployeeCredential'), index: 1 },
        ]),
      )
      assert.equal(response.statusCode, 200, `${alg}: ${response.body}`)
      assert.equal((await readSession(t.app, s.rp, s.id)).body.Subject, holder.did)
    }
  })
})

/** The id of the descriptor that asks for `type`. */
function descriptorIdOf(definition: Definition, type: string): string {
  const descriptor = definition.input_descriptors.find((d) => d.name === type)
  assert.ok(descriptor, `a descriptor for ${type}`)
  return descriptor.id
}

// ---------------------------------------------------------------------------------------------------------

describe('direct_post: each check fails on its own', () => {
  let t: TestApp
  let holder: Holder
  let jwt: string
  before(async () => {
    t = await makeApp(verificationConfig())
    ;({ holder, jwt } = await holderWithDegree(t))
  })
  after(() => t.close())

  const good = (s: OpenSession) => vpJwt(holder, t.clock, s.request, [jwt])

  test('sessionBinding: a wrong nonce', async () => {
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, { ...s.request, nonce: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, [jwt])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['sessionBinding'])
  })

  test('sessionBinding: no nonce', async () => {
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [jwt], { payload: { nonce: undefined } })
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['sessionBinding'])
  })

  test('sessionBinding: a wrong aud', async () => {
    const s = await openSession(t)
    const vp = vpJwt(
      holder,
      t.clock,
      { ...s.request, client_id: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK' },
      [jwt],
    )
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['sessionBinding'])
  })

  test('presentationProof: the VP is signed by a key other than its kid', async () => {
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [jwt], { signWith: newHolder() })
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['presentationProof'], false)
    const { body } = await readSession(t.app, s.rp, s.id)
    assert.equal(body.Subject, '', 'an unproven holder is no subject')
    assert.deepEqual(
      sorted(checksWith(body, 'failed')),
      ['presentationProof'],
      'holder binding cannot run without a proven holder, it does not fail',
    )
  })

  test('presentationProof: iss is not the DID of the kid', async () => {
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [jwt], { payload: { iss: newHolder().did } })
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['presentationProof'])
  })

  test('presentationProof: vp.holder is not the signer', async () => {
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [jwt], { vp: { holder: newHolder().did } })
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['presentationProof'])
  })

  test('sessionBinding: iat in the future, or an expired VP', async () => {
    const future = await openSession(t)
    const ahead = vpJwt(holder, t.clock, future.request, [jwt], {
      payload: { iat: Math.floor(t.clock.now() / 1000) + 3600 },
    })
    await expectRejected(t, future, await respond(t.app, future, ahead, degreeSubmission(future)), [
      'sessionBinding',
    ])
    const stale = await openSession(t)
    const lapsed = vpJwt(holder, t.clock, stale.request, [jwt], {
      payload: { exp: Math.floor(t.clock.now() / 1000) - 1 },
    })
    await expectRejected(t, stale, await respond(t.app, stale, lapsed, degreeSubmission(stale)), [
      'sessionBinding',
    ])
  })

  test('presentationProof: a changed VP payload', async () => {
    const s = await openSession(t)
    const vp = tamper(good(s), (p) => {
      p.jti = 'urn:uuid:changed'
    })
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['presentationProof'])
  })

  test('credentialProof: a tampered credential', async () => {
    const s = await openSession(t)
    const altered = tamper(jwt, (p) => {
      const vc = p.vc as { credentialSubject: { degree: { name: string } } }
      vc.credentialSubject.degree.name = 'Doctor of Everything'
    })
    const vp = vpJwt(holder, t.clock, s.request, [altered])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['credentialProof'])
  })

  test('credentialProof: a credential whose iss is not the DID of its signing key', async () => {
    const key = await issuerKey(t)
    // signed with the tenant's EdDSA key, claiming its (equally trusted) ES256 DID as issuer
    const claimed = (await issuerKey(t, 'ES256')).did
    const misattributed = signCredential(key, holder.did, t.clock, {
      vc: { issuer: claimed },
      payload: { iss: claimed },
    })
    const s = await openSession(t, 'degree-nostatus')
    const vp = vpJwt(holder, t.clock, s.request, [misattributed])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['credentialProof'])
  })

  test('holderBinding: a credential issued to someone else', async () => {
    const thief = newHolder()
    const s = await openSession(t)
    const vp = vpJwt(thief, t.clock, s.request, [jwt])
    const body = await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), [
      'holderBinding',
    ])
    assert.match(
      body.Validations?.checks.find((c) => c.check === 'holderBinding')?.message ?? '',
      new RegExp(holder.did),
    )
  })

  test('trustedIssuer: a credential signed by a fresh did:key issuer', async () => {
    const rogue = newHolder()
    const forged = signCredential(rogue, holder.did, t.clock)
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [forged])
    // The definition constrains the issuer too, so the service's own matching refuses it as well.
    const body = await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), [
      'trustedIssuer',
      'matchingIds',
    ])
    assert.deepEqual(
      checksWith(body, 'passed')
        .filter((c) => ['presentationProof', 'credentialProof', 'holderBinding'].includes(c))
        .sort(),
      ['credentialProof', 'holderBinding', 'presentationProof'],
      'the forgery is well signed by its own issuer and bound to the holder',
    )
  })

  test('trustedIssuer: the tenant’s own issuer is not trusted by a template with its own trust list', async () => {
    const s = await openSession(t, 'degree-foreign')
    const vp = vpJwt(holder, t.clock, s.request, [jwt])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), [
      'trustedIssuer',
      'matchingIds',
    ])
  })

  test('validityPeriod: an expired credential signed by a trusted issuer', async () => {
    const key = await issuerKey(t)
    const lapsed = signCredential(key, holder.did, t.clock, {
      issuanceMs: t.clock.now() - 10 * 86_400_000,
      vc: { expirationDate: iso(t.clock.now() - 86_400_000).replace(/\.\d{3}Z$/, 'Z') },
      payload: { exp: Math.floor((t.clock.now() - 86_400_000) / 1000) },
    })
    const s = await openSession(t, 'degree-nostatus')
    const vp = vpJwt(holder, t.clock, s.request, [lapsed])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['validityPeriod'])
  })

  test('validityPeriod: a credential whose JWT exp has passed (no expirationDate)', async () => {
    const key = await issuerKey(t)
    const lapsed = signCredential(key, holder.did, t.clock, {
      issuanceMs: t.clock.now() - 10 * 86_400_000,
      payload: { exp: Math.floor(t.clock.now() / 1000) - 3600 },
    })
    const s = await openSession(t, 'degree-nostatus')
    const vp = vpJwt(holder, t.clock, s.request, [lapsed])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['validityPeriod'])
  })

  test('validityPeriod: a credential not yet valid', async () => {
    const key = await issuerKey(t)
    const early = signCredential(key, holder.did, t.clock, { issuanceMs: t.clock.now() + 86_400_000 })
    const s = await openSession(t, 'degree-nostatus')
    const vp = vpJwt(holder, t.clock, s.request, [early])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['validityPeriod'])
  })

  test('credentialStatus: no credentialStatus while the template requires one', async () => {
    const key = await issuerKey(t)
    const bare = signCredential(key, holder.did, t.clock)
    const s = await openSession(t, 'degree-check')
    const vp = vpJwt(holder, t.clock, s.request, [bare])
    await expectRejected(t, s, await respond(t.app, s, vp, degreeSubmission(s)), ['credentialStatus'])
  })

  test('credentialStatus: without one and requireStatus false, a warning and VERIFIED', async () => {
    const key = await issuerKey(t)
    const bare = signCredential(key, holder.did, t.clock)
    const s = await openSession(t, 'degree-nostatus')
    const response = await respond(t.app, s, vpJwt(holder, t.clock, s.request, [bare]), degreeSubmission(s))
    assert.equal(response.statusCode, 200, response.body)
    const { body } = await readSession(t.app, s.rp, s.id)
    assert.equal(body.Status, 'VERIFIED')
    assert.equal(body.Validations?.status, 'SUCCESS')
    assert.deepEqual(checksWith(body, 'failed'), [])
    assert.ok(
      body.Validations?.verificationResult.warnings.some((w) => /credentialStatus/.test(w)),
      JSON.stringify(body.Validations?.verificationResult),
    )
  })

  test('matchingIds: the submission maps the descriptor to the wrong credential', async () => {
    const id = (await issueTo(t.app, t.clock, holder, 'vid', VERIFIABLE_ID)).jwts[0] as string
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [id, jwt])
    // the degree is at index 1; the wallet claims index 0 (the ID)
    const wrong = await respond(t.app, s, vp, degreeSubmission(s, 0))
    await expectRejected(t, s, wrong, ['matchingIds'])
    // the same presentation with the right index passes
    const s2 = await openSession(t)
    const right = await respond(
      t.app,
      s2,
      vpJwt(holder, t.clock, s2.request, [id, jwt]),
      degreeSubmission(s2, 1),
    )
    assert.equal(right.statusCode, 200, right.body)
  })

  test('matchingIds: an index outside the vp_token', async () => {
    const s = await openSession(t)
    await expectRejected(t, s, await respond(t.app, s, good(s), degreeSubmission(s, 3)), ['matchingIds'])
  })

  test('matchingIds: a descriptor id the definition does not have', async () => {
    const s = await openSession(t)
    const sub = submission(s.id, [{ id: 'NoSuchDescriptor', index: 0 }])
    await expectRejected(t, s, await respond(t.app, s, good(s), sub), ['matchingIds'])
  })

  test('matchingIds: a wrong definition_id', async () => {
    const s = await openSession(t)
    const other = await openSession(t)
    const sub = submission(other.id, [{ id: DEGREE_ID, index: 0 }])
    await expectRejected(t, s, await respond(t.app, s, good(s), sub), ['matchingIds'])
  })

  test('matchingIds: JSONPath filter and script expressions are refused, never evaluated', async () => {
    const marker = '__vcHarnessJsonPathEvaluated'
    const g = globalThis as Record<string, unknown>
    delete g[marker]
    for (const nestedPath of [
      '$.verifiableCredential[?(@.x)]',
      `$.verifiableCredential[?(@ && (globalThis.${marker} = true))]`,
      `$.verifiableCredential[(globalThis.${marker} = 0)]`,
      '$..verifiableCredential[0]',
      '$.verifiableCredential[*]',
    ]) {
      const s = await openSession(t)
      const sub = submission(s.id, [{ id: DEGREE_ID, nestedPath }])
      const body = await expectRejected(t, s, await respond(t.app, s, good(s), sub), ['matchingIds'])
      assert.match(
        body.Validations?.checks.find((c) => c.check === 'matchingIds')?.message ?? '',
        /path/,
        nestedPath,
      )
    }
    assert.equal(g[marker], undefined, 'no expression of the wallet ran')
  })

  test('matchingIds: a credential type the definition asks for is missing', async () => {
    const id = (await issueTo(t.app, t.clock, holder, 'vid', VERIFIABLE_ID)).jwts[0] as string
    // only the degree, for a definition that wants a degree and an ID
    const both = await openSession(t, 'degree-and-id')
    await expectRejected(
      t,
      both,
      await respond(t.app, both, vpJwt(holder, t.clock, both.request, [jwt]), degreeSubmission(both)),
      ['matchingIds'],
    )
    // only an ID, mapped as the degree, for a degree check
    const s = await openSession(t)
    await expectRejected(
      t,
      s,
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [id]), degreeSubmission(s)),
      ['matchingIds'],
    )
  })

  test('matchingIds: the type counts only as the last element of type', async () => {
    const key = await issuerKey(t)
    const shifted = signCredential(key, holder.did, t.clock, {
      type: ['VerifiableCredential', DEGREE_ID, 'SomethingElse'],
    })
    const s = await openSession(t, 'degree-nostatus')
    await expectRejected(
      t,
      s,
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [shifted]), degreeSubmission(s)),
      ['matchingIds'],
    )
  })

  test('matchingIds: a submission without descriptor_map', async () => {
    const s = await openSession(t)
    await expectRejected(t, s, await respond(t.app, s, good(s), { id: 'x', definition_id: s.id }), [
      'matchingIds',
    ])
  })

  test('presentationProof: an ldp_vp (JSON) vp_token whose Ed25519Signature2018 proof is not a signature', async () => {
    const s = await openSession(t)
    const ldp = JSON.stringify({
      '@context': [V1],
      type: ['VerifiablePresentation'],
      holder: holder.did,
      verifiableCredential: [jwt],
      proof: {
        type: 'Ed25519Signature2018',
        proofPurpose: 'authentication',
        verificationMethod: holder.kid,
        challenge: s.request.nonce,
        jws: 'eyJhbGciOiJFZERTQSJ9..AAAA',
      },
    })
    const sub = submission(s.id, [{ id: DEGREE_ID, format: 'ldp_vp', nestedFormat: 'jwt_vc' }])
    await expectRejected(t, s, await respond(t.app, s, ldp, sub), ['presentationProof', 'sessionBinding'])
  })

  test('securityMechanisms: alg none', async () => {
    const s = await openSession(t)
    const [, payload] = good(s).split('.')
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT', kid: holder.kid })).toString(
      'base64url',
    )
    await expectRejected(t, s, await respond(t.app, s, `${header}.${payload}.`, degreeSubmission(s)), [
      'securityMechanisms',
    ])
  })

  test('securityMechanisms: an unknown or HMAC alg', async () => {
    for (const alg of ['HS256', 'RS256', 'ES384']) {
      const s = await openSession(t)
      const [, payload, signature] = good(s).split('.')
      const header = Buffer.from(JSON.stringify({ alg, typ: 'JWT', kid: holder.kid })).toString('base64url')
      await expectRejected(
        t,
        s,
        await respond(t.app, s, `${header}.${payload}.${signature}`, degreeSubmission(s)),
        ['securityMechanisms'],
      )
    }
  })

  test('securityMechanisms: a vp_token that is not a JWT, or whose key is not a did:key kid', async () => {
    const s = await openSession(t)
    await expectRejected(t, s, await respond(t.app, s, 'not-a-jwt', degreeSubmission(s)), [
      'securityMechanisms',
    ])
    const s2 = await openSession(t)
    const jwk = holder.publicKey.export({ format: 'jwk' })
    const vp = vpJwt(holder, t.clock, s2.request, [jwt], { header: { kid: undefined, jwk } })
    await expectRejected(t, s2, await respond(t.app, s2, vp, degreeSubmission(s2)), ['securityMechanisms'])
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('direct_post: revoked and suspended credentials', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(verificationConfig())
  })
  after(() => t.close())

  test('credentialStatus: revoked', async () => {
    const { holder, jwt, issued } = await holderWithDegree(t)
    const changed = await changeStatus(t.app, issued.rp, issued.processId, { status: 'revoked' })
    assert.equal(changed.statusCode, 200, changed.body)
    const s = await openSession(t)
    const body = await expectRejected(
      t,
      s,
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [jwt]), degreeSubmission(s)),
      ['credentialStatus'],
    )
    assert.match(
      body.Validations?.checks.find((c) => c.check === 'credentialStatus')?.message ?? '',
      /revoked/,
    )
  })

  test('credentialStatus: suspended, then active again once the suspension is lifted', async () => {
    const { holder, jwt, issued } = await holderWithDegree(t)
    assert.equal(
      (await changeStatus(t.app, issued.rp, issued.processId, { status: 'suspended' })).statusCode,
      200,
    )
    const s = await openSession(t)
    const body = await expectRejected(
      t,
      s,
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [jwt]), degreeSubmission(s)),
      ['credentialStatus'],
    )
    assert.match(
      body.Validations?.checks.find((c) => c.check === 'credentialStatus')?.message ?? '',
      /suspended/,
    )
    assert.equal(
      (await changeStatus(t.app, issued.rp, issued.processId, { status: 'active' })).statusCode,
      200,
    )
    const s2 = await openSession(t)
    const ok = await respond(t.app, s2, vpJwt(holder, t.clock, s2.request, [jwt]), degreeSubmission(s2))
    assert.equal(ok.statusCode, 200, ok.body)
  })

  test('validityPeriod: a credential of a 1-day template, presented two days later', async () => {
    const holder = newHolder()
    const id = (await issueTo(t.app, t.clock, holder, 'vid-short', VERIFIABLE_ID)).jwts[0] as string
    t.clock.advance(2 * 86_400_000)
    const s = await openSession(t, 'vid-check', VID_APP)
    await expectRejected(
      t,
      s,
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [id]), vidSubmission(s)),
      ['validityPeriod'],
    )
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('direct_post: malformed responses leave the session open', () => {
  let t: TestApp
  let holder: Holder
  let jwt: string
  before(async () => {
    t = await makeApp(verificationConfig())
    ;({ holder, jwt } = await holderWithDegree(t))
  })
  after(() => t.close())

  test('missing state, wrong state, missing vp_token, missing or bad presentation_submission, wrong content type', async () => {
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [jwt])
    const sub = JSON.stringify(degreeSubmission(s))
    const events = recordSessionEvents(t.app)
    const cases: [string, () => Promise<LightMyRequestResponse>, RegExp][] = [
      [
        'missing state',
        () => postResponse(t.app, s.responsePath, { vp_token: vp, presentation_submission: sub }),
        /state/,
      ],
      [
        'wrong state',
        () =>
          postResponse(t.app, s.responsePath, { vp_token: vp, presentation_submission: sub, state: 'nope' }),
        /state/,
      ],
      [
        'missing vp_token',
        () => postResponse(t.app, s.responsePath, { presentation_submission: sub, state: s.request.state }),
        /vp_token/,
      ],
      [
        'empty vp_token',
        () =>
          postResponse(t.app, s.responsePath, {
            vp_token: '',
            presentation_submission: sub,
            state: s.request.state,
          }),
        /vp_token/,
      ],
      [
        'presentation_submission not JSON',
        () =>
          postResponse(t.app, s.responsePath, {
            vp_token: vp,
            presentation_submission: '{"definition_id":',
            state: s.request.state,
          }),
        /presentation_submission/,
      ],
      [
        'missing presentation_submission',
        () => postResponse(t.app, s.responsePath, { vp_token: vp, state: s.request.state }),
        /presentation_submission/,
      ],
      [
        'presentation_submission not an object',
        () =>
          postResponse(t.app, s.responsePath, {
            vp_token: vp,
            presentation_submission: '[1]',
            state: s.request.state,
          }),
        /presentation_submission/,
      ],
      [
        'JSON body',
        () =>
          postResponse(
            t.app,
            s.responsePath,
            { vp_token: vp, presentation_submission: sub, state: s.request.state },
            'application/json',
          ),
        /x-www-form-urlencoded|Content-Type/i,
      ],
    ]
    for (const [name, send, description] of cases) {
      const response = await send()
      assert.equal(response.statusCode, 400, `${name}: ${response.body}`)
      expectOAuth(response, 400, 'invalid_request', description)
      await expectPending(t, s)
    }
    events.stop()
    assert.deepEqual(
      events.events.filter((e) => e.sessionId === s.id),
      [],
      'no state change was emitted',
    )
    // the wallet can still answer properly
    const ok = await respond(t.app, s, vp, degreeSubmission(s))
    assert.equal(ok.statusCode, 200, ok.body)
  })

  test('a wallet error response: 200, the session REJECTED with walletResponse', async () => {
    const s = await openSession(t)
    const response = await postResponse(t.app, s.responsePath, {
      error: 'access_denied',
      error_description: 'the user declined',
      state: s.request.state,
    })
    assert.equal(response.statusCode, 200, response.body)
    const { status, body } = await readSession(t.app, s.rp, s.id)
    assert.equal(status, 200)
    assert.equal(body.Status, 'REJECTED')
    assert.equal(body.Validations?.status, 'REJECT')
    assert.deepEqual(
      body.Validations?.checks.map((c) => [c.check, c.result]),
      [['walletResponse', 'failed']],
    )
    assert.match(body.Validations?.checks[0]?.message ?? '', /access_denied/)
    assert.ok(
      body.Validations?.verificationResult.errors.some((e) => e.startsWith('walletResponse')),
      "body.Validations?.verificationResult.errors.some((e) => e.startsWith('walletResponse'))",
    )
    expectOAuth(
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [jwt]), degreeSubmission(s)),
      409,
      'session_closed',
    )
  })

  test('a wallet error response with a wrong state changes nothing', async () => {
    const s = await openSession(t)
    expectOAuth(
      await postResponse(t.app, s.responsePath, { error: 'access_denied', state: 'forged' }),
      400,
      'invalid_request',
    )
    await expectPending(t, s)
  })

  test('unknown session and another tenant’s path: 404 not_found', async () => {
    const s = await openSession(t)
    const form = {
      vp_token: vpJwt(holder, t.clock, s.request, [jwt]),
      presentation_submission: JSON.stringify(degreeSubmission(s)),
      state: s.request.state,
    }
    expectOAuth(
      await postResponse(t.app, s.responsePath.replace('/demo/', '/other/'), form),
      404,
      'not_found',
    )
    expectOAuth(
      await postResponse(t.app, '/oid4vp/demo/responses/00000000-0000-4000-8000-000000000000', form),
      404,
      'not_found',
    )
    await expectPending(t, s)
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('direct_post: replay, expiry and races', () => {
  let t: TestApp
  let holder: Holder
  let jwt: string
  before(async () => {
    t = await makeApp(verificationConfig())
    ;({ holder, jwt } = await holderWithDegree(t))
  })
  after(() => t.close())

  test('a successful vp_token replayed into the same session: 409 session_closed', async () => {
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [jwt])
    assert.equal((await respond(t.app, s, vp, degreeSubmission(s))).statusCode, 200)
    expectOAuth(await respond(t.app, s, vp, degreeSubmission(s)), 409, 'session_closed')
    const { body } = await readSession(t.app, s.rp, s.id)
    assert.equal(body.Status, 'VERIFIED', 'the replay changed nothing')
  })

  test('a successful vp_token replayed into another session: rejected by sessionBinding', async () => {
    const first = await openSession(t)
    const vp = vpJwt(holder, t.clock, first.request, [jwt])
    assert.equal((await respond(t.app, first, vp, degreeSubmission(first))).statusCode, 200)
    const second = await openSession(t)
    // the attacker knows the second session's state and definition, not its nonce
    await expectRejected(t, second, await respond(t.app, second, vp, degreeSubmission(second)), [
      'sessionBinding',
    ])
  })

  test('an expired session: 410 session_expired, and it stays EXPIRED', async () => {
    const s = await openSession(t, 'vid-check', VID_APP)
    const id = (await issueTo(t.app, t.clock, holder, 'vid', VERIFIABLE_ID)).jwts[0] as string
    const vp = vpJwt(holder, t.clock, s.request, [id])
    t.clock.advance(120_000)
    expectOAuth(
      await respond(t.app, s, vp, submission(s.id, [{ id: descriptorIdOf(s.definition, 'VerifiableId') }])),
      410,
      'session_expired',
    )
    const { status, body } = await readSession(t.app, s.rp, s.id)
    assert.equal(status, 200)
    assert.equal(body.Status, 'EXPIRED')
    assert.equal(body.Validations, null)
  })

  test('10 concurrent identical valid responses: exactly one 200, the others 409', async () => {
    const s = await openSession(t)
    const vp = vpJwt(holder, t.clock, s.request, [jwt])
    const sub = degreeSubmission(s)
    const events = recordSessionEvents(t.app)
    const responses = await Promise.all(Array.from({ length: 10 }, () => respond(t.app, s, vp, sub)))
    events.stop()
    const codes = responses.map((r) => r.statusCode)
    assert.equal(codes.filter((c) => c === 200).length, 1, String(codes))
    for (const r of responses.filter((x) => x.statusCode !== 200)) expectOAuth(r, 409, 'session_closed')
    assert.equal(
      events.events.filter((e) => e.sessionId === s.id && e.step === 'verified').length,
      1,
      'one webhook',
    )
  })
  test('10 responses that all pass the checks before any is recorded: still exactly one 200', async () => {
    // Every response is held just before its recording write (the outcome and its webhook event, one write
    // atomic by itself: store/index.ts, Store; issue 38), until all ten got there: the worst interleaving.
    const store = t.app.services.store
    const sessions = store.sessions as unknown as Record<string, unknown>
    const completeWithEvent = store.sessions.completeWithEvent.bind(store.sessions)
    let arrived = 0
    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const fallback = setTimeout(release, 5000)
    sessions.completeWithEvent = (async (...args) => {
      arrived++
      if (arrived === 10) release()
      await gate
      return completeWithEvent(...args)
    }) as typeof store.sessions.completeWithEvent
    try {
      const s = await openSession(t)
      const vp = vpJwt(holder, t.clock, s.request, [jwt])
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => respond(t.app, s, vp, degreeSubmission(s))),
      )
      assert.equal(arrived, 10, 'all ten responses passed the checks')
      const codes = responses.map((r) => r.statusCode)
      assert.equal(codes.filter((c) => c === 200).length, 1, String(codes))
      for (const r of responses.filter((x) => x.statusCode !== 200)) expectOAuth(r, 409, 'session_closed')
      assert.equal((await readSession(t.app, s.rp, s.id)).body.Status, 'VERIFIED')
    } finally {
      clearTimeout(fallback)
      delete sessions.completeWithEvent
    }
  })

  test('a response the store refuses because the session expired meanwhile: 410, the session EXPIRED', async () => {
    const store = t.app.services.store
    const sessions = store.sessions as unknown as Record<string, unknown>
    const s = await openSession(t, 'vid-check', VID_APP)
    const id = (await issueTo(t.app, t.clock, holder, 'vid', VERIFIABLE_ID)).jwts[0] as string
    const vp = vpJwt(holder, t.clock, s.request, [id])
    // the checks pass while the session lives; the clock then moves past ExpiredAt before it is recorded (the
    // recording write judges expiry at its own `now`: sessions.completeWithEvent, issue 38)
    const completeWithEvent = store.sessions.completeWithEvent.bind(store.sessions)
    sessions.completeWithEvent = ((session, _now, event) => {
      t.clock.advance(120_000)
      return completeWithEvent(session, t.clock.now(), event)
    }) as typeof store.sessions.completeWithEvent
    try {
      const response = await respond(
        t.app,
        s,
        vp,
        submission(s.id, [{ id: descriptorIdOf(s.definition, 'VerifiableId') }]),
      )
      expectOAuth(response, 410, 'session_expired')
    } finally {
      delete sessions.completeWithEvent
    }
    assert.equal((await readSession(t.app, s.rp, s.id)).body.Status, 'EXPIRED')
    const events = await t.app.services.store.webhooks.listByTemplate('demo', 'vid-check', { limit: 50 })
    assert.ok(
      !events.some((e) => e.subjectId === s.id),
      'no webhook event for a session that was not completed',
    )
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('optional groups and requested fields', () => {
  let t: TestApp
  let holder: Holder
  let degree: string
  let id: string
  let employee: string
  before(async () => {
    t = await makeApp(verificationConfig())
    ;({ holder, jwt: degree } = await holderWithDegree(t))
    id = (await issueTo(t.app, t.clock, holder, 'vid', VERIFIABLE_ID)).jwts[0] as string
    employee = (
      await issueTo(t.app, t.clock, holder, 'es256', [
        { type: ['VerifiableCredential', 'EmployeeCredential'], credentialSubject: { employer: 'ACME' } },
      ])
    ).jwts[0] as string
  })
  after(() => t.close())

  test('pick min 1: satisfied by one credential of the group', async () => {
    const s = await openSession(t, 'degree-plus')
    const response = await respond(
      t.app,
      s,
      vpJwt(holder, t.clock, s.request, [degree, id]),
      submission(s.id, [
        { id: DEGREE_ID, index: 0 },
        { id: descriptorIdOf(s.definition, 'VerifiableId'), index: 1 },
      ]),
    )
    assert.equal(response.statusCode, 200, response.body)
  })

  test('pick min 1: unsatisfied without any credential of the group', async () => {
    const s = await openSession(t, 'degree-plus')
    await expectRejected(
      t,
      s,
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [degree]), degreeSubmission(s)),
      ['matchingIds'],
    )
  })

  test('pick min 2: one is not enough, two are', async () => {
    const one = await openSession(t, 'degree-plus2')
    await expectRejected(
      t,
      one,
      await respond(
        t.app,
        one,
        vpJwt(holder, t.clock, one.request, [degree, id]),
        submission(one.id, [
          { id: DEGREE_ID, index: 0 },
          { id: descriptorIdOf(one.definition, 'VerifiableId'), index: 1 },
        ]),
      ),
      ['matchingIds'],
    )
    const two = await openSession(t, 'degree-plus2')
    const response = await respond(
      t.app,
      two,
      vpJwt(holder, t.clock, two.request, [degree, id, employee]),
      submission(two.id, [
        { id: DEGREE_ID, index: 0 },
        { id: descriptorIdOf(two.definition, 'VerifiableId'), index: 1 },
        { id: descriptorIdOf(two.definition, 'EmployeeCredential'), index: 2 },
      ]),
    )
    assert.equal(response.statusCode, 200, response.body)
  })

  test('the mandatory group is still required when the optional one is satisfied', async () => {
    const s = await openSession(t, 'degree-plus')
    await expectRejected(
      t,
      s,
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [id]), vidSubmission(s)),
      ['matchingIds'],
    )
  })

  test('requestedFields: a required claim present, an optional one absent → VERIFIED', async () => {
    const s = await openSession(t, 'vid-check', VID_APP)
    const response = await respond(
      t.app,
      s,
      vpJwt(holder, t.clock, s.request, [id]),
      submission(s.id, [{ id: descriptorIdOf(s.definition, 'VerifiableId'), index: 0 }]),
    )
    assert.equal(response.statusCode, 200, response.body)
  })

  test('requestedFields: a required claim missing → REJECTED by matchingIds', async () => {
    const nameless = (
      await issueTo(t.app, t.clock, holder, 'vid', [
        {
          type: ['VerifiableCredential', 'VerifiableId'],
          credentialSubject: { firstName: 'Jane', nickname: 'JJ' },
        },
      ])
    ).jwts[0] as string
    const s = await openSession(t, 'vid-check', VID_APP)
    await expectRejected(
      t,
      s,
      await respond(t.app, s, vpJwt(holder, t.clock, s.request, [nameless]), vidSubmission(s)),
      ['matchingIds'],
    )
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('6 webhook bodies on services.events', () => {
  let t: TestApp
  let holder: Holder
  let jwt: string
  before(async () => {
    t = await makeApp(verificationConfig())
    ;({ holder, jwt } = await holderWithDegree(t))
  })
  after(() => t.close())

  test('SUCCESS: id, subject = holder DID, payload = claims without id, checks, no errors', async () => {
    const s = await openSession(t)
    const events = recordSessionEvents(t.app)
    assert.equal(
      (await respond(t.app, s, vpJwt(holder, t.clock, s.request, [jwt]), degreeSubmission(s))).statusCode,
      200,
    )
    events.stop()
    const done = events.events.filter((e) => e.sessionId === s.id && e.webhook)
    assert.equal(done.length, 1)
    const event = done[0] as (typeof done)[number]
    assert.equal(event.step, 'verified')
    assert.equal(event.tenantId, 'demo')
    assert.equal(event.templateId, 'degree-check')
    const webhook = event.webhook as NonNullable<typeof event.webhook>
    assert.deepEqual(Object.keys(webhook).sort(), [
      'id',
      'payload',
      'status',
      'subject',
      'verificationResult',
    ])
    assert.equal(webhook.id, s.id)
    assert.equal(webhook.subject, holder.did)
    assert.equal(webhook.status, 'SUCCESS')
    assert.deepEqual(webhook.payload, DEGREE[0]?.credentialSubject, 'the claims, without the id claim')
    assert.ok(!('id' in (webhook.payload ?? {})), "!('id' in (webhook.payload ?? {}))")
    for (const check of SECTION_6_CHECKS) assert.ok(webhook.verificationResult.checks.includes(check), check)
    assert.deepEqual(webhook.verificationResult.errors, [])
    assert.ok(
      Array.isArray(webhook.verificationResult.warnings),
      'Array.isArray(webhook.verificationResult.warnings)',
    )
  })

  test('REJECT: errors name the failing check; no payload', async () => {
    const s = await openSession(t)
    const events = recordSessionEvents(t.app)
    const altered = tamper(jwt, (p) => {
      p.sub = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'
    })
    await respond(t.app, s, vpJwt(holder, t.clock, s.request, [altered]), degreeSubmission(s))
    events.stop()
    const done = events.events.filter((e) => e.sessionId === s.id && e.webhook)
    assert.equal(done.length, 1)
    const event = done[0] as (typeof done)[number]
    assert.equal(event.step, 'rejected')
    const webhook = event.webhook as NonNullable<typeof event.webhook>
    assert.equal(webhook.id, s.id)
    assert.equal(webhook.status, 'REJECT')
    assert.equal(webhook.payload, undefined, 'nothing verified is shared')
    assert.equal(webhook.subject, holder.did, 'the presentation proof verified')
    assert.ok(webhook.verificationResult.errors.length > 0, 'webhook.verificationResult.errors.length > 0')
    assert.ok(
      webhook.verificationResult.errors.some((e) => e.startsWith('credentialProof')),
      JSON.stringify(webhook),
    )
  })

  test('REJECT after a wallet error: errors name walletResponse', async () => {
    const s = await openSession(t)
    const events = recordSessionEvents(t.app)
    await postResponse(t.app, s.responsePath, { error: 'access_denied', state: s.request.state })
    events.stop()
    const webhook = events.events.find((e) => e.sessionId === s.id && e.webhook)?.webhook
    assert.ok(webhook, 'webhook')
    assert.equal(webhook.status, 'REJECT')
    assert.ok(
      webhook.verificationResult.errors.some((e) => e.startsWith('walletResponse')),
      "webhook.verificationResult.errors.some((e) => e.startsWith('walletResponse'))",
    )
  })

  test('no webhook before the wallet answers: creation and the request fetch are not final', async () => {
    const events = recordSessionEvents(t.app)
    const s = await openSession(t)
    events.stop()
    const mine = events.events.filter((e) => e.sessionId === s.id)
    assert.ok(mine.length >= 1, 'mine.length >= 1')
    for (const e of mine) {
      assert.equal(e.webhook, undefined)
      assert.equal(e.status, 'PENDING')
    }
  })
})
