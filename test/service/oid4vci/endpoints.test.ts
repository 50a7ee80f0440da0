import assert from 'node:assert/strict'
import { createHmac, generateKeyPairSync, sign } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { envelopeJwtCredential } from '../../../src/shared/data-integrity.ts'
import { JWS_ALGS, type JwsAlg, resolveDidKey } from '../../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../../src/shared/jws.ts'
import { DEMO, makeApp, OTHER, type TestApp, tokenFor } from '../../helpers.ts'
import {
  changeStatus,
  DEGREE,
  diVp,
  diVpRequest,
  expectOAuth,
  FOREIGN_ISSUER,
  getOffer,
  grantFor,
  type Holder,
  ISSUER,
  issuerOf,
  issueTo,
  jwtRequest,
  newHolder,
  newOffer,
  nonceOf,
  oid4vciConfig,
  PRE_AUTH,
  postToken,
  proofJwt,
  readProcess,
  rejectProcess,
  submit,
  VERIFIABLE_ID,
  WIDE_APP,
  walletAsked,
  walletPost,
} from '../../oid4vci-helpers.ts'

// The wallet-facing contract of docs/issuance.md, rule by rule, on the wire.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The process is still as the offer left it: PENDING, nobody bound, nothing issued. */
async function assertUntouched(t: TestApp, rp: string, processId: string) {
  const process = await readProcess(t.app, rp, processId)
  assert.equal(process.status, 'PENDING')
  assert.equal(process.validator, null)
  assert.equal(process.data, undefined)
}

const b64json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const seconds = (t: TestApp) => Math.floor(t.clock.now() / 1000)

/** The claims of a good proof JWT at the service clock's time. */
const claims = (t: TestApp, nonce: string) => ({ aud: ISSUER, iat: seconds(t), nonce })

describe('credential offer', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  test('the offer: issuer, configuration id = template id, pre-authorized grant, nothing else', async () => {
    const { processId, offer, response } = await newOffer(t.app, 'degree')
    assert.deepEqual(Object.keys(response), ['credential_offer_uri'], '4.2 has no tx_code without txCode')
    assert.deepEqual(Object.keys(offer).sort(), [
      'credential_configuration_ids',
      'credential_issuer',
      'grants',
    ])
    assert.equal(offer.credential_issuer, ISSUER)
    assert.deepEqual(offer.credential_configuration_ids, ['degree'])
    assert.deepEqual(Object.keys(offer.grants), [PRE_AUTH])
    const grant = offer.grants[PRE_AUTH]
    assert.deepEqual(Object.keys(grant ?? {}), ['pre-authorized_code'])
    assert.match(grant?.['pre-authorized_code'] ?? '', /^[A-Za-z0-9_-]{40,}$/)
    const again = await getOffer(t.app, processId)
    assert.equal(again.statusCode, 200)
    assert.equal(again.headers['cache-control'], 'no-store')
    assert.deepEqual(again.json(), offer, 'the offer URL can be fetched again and says the same')
  })

  test('txCode template: tx_code object in the offer, the code itself only in the 4.2 response', async () => {
    const pin = await newOffer(t.app, 'pin')
    assert.match(pin.txCode ?? '', /^\d{6}$/)
    assert.deepEqual(pin.offer.grants[PRE_AUTH]?.tx_code, {
      input_mode: 'numeric',
      length: 6,
      description: 'The code from your letter',
    })
    assert.ok(!JSON.stringify(pin.offer).includes(pin.txCode ?? '-'), 'the offer never carries the code')
    const text = await newOffer(t.app, 'pin-text')
    assert.match(text.txCode ?? '', /^[A-Z2-9]{8}$/)
    assert.deepEqual(text.offer.grants[PRE_AUTH]?.tx_code, { input_mode: 'text', length: 8 })
  })

  test('requiredPresentation template: presentation_definition with one descriptor per credential', async () => {
    const { offer } = await newOffer(t.app, 'gated')
    const definition = offer.presentation_definition as {
      id: string
      purpose?: string
      input_descriptors: { id: string; name: string; constraints: { fields: { path: string[] }[] } }[]
    }
    assert.ok(definition, 'presentation_definition is present')
    assert.equal(definition.purpose, 'We issue the degree only to holders of a verified ID')
    assert.equal(definition.input_descriptors.length, 1)
    const [descriptor] = definition.input_descriptors
    assert.equal(descriptor?.name, 'VerifiableId')
    const paths = descriptor?.constraints.fields.map((f) => f.path.join('|')) ?? []
    assert.ok(
      paths.some((p) => p.includes('$.credentialSubject.familyName')),
      'each fields path is required',
    )
    const trusted = await newOffer(t.app, 'gated-trusted')
    assert.ok(
      JSON.stringify(trusted.offer.presentation_definition).includes(FOREIGN_ISSUER),
      'the issuer is constrained to trustedIssuers',
    )
    assert.equal((await newOffer(t.app, 'degree')).offer.presentation_definition, undefined)
  })

  test('a rejected process closes its offer: 404 in the OAuth error shape', async () => {
    const { processId, rp } = await newOffer(t.app, 'degree')
    assert.equal((await rejectProcess(t.app, rp, processId, 'not eligible')).statusCode, 200)
    expectOAuth(await getOffer(t.app, processId), 404, 'not_found', /closed.*REJECTED/)
  })

  test('an issued process closes its offer: 404', async () => {
    const { processId } = await issueTo(t.app, t.clock, newHolder(), 'degree', DEGREE)
    expectOAuth(await getOffer(t.app, processId), 404, 'not_found', /closed.*ISSUED/)
  })

  // Issue 19: an expired code's offer URL answered 200 once the code had been redeemed (a token issued, no credential).
  test('a code past its lifetime closes the offer: 404 unredeemed, and 404 when redeemed but never used', async () => {
    const unredeemed = await newOffer(t.app, 'degree')
    const redeemed = await newOffer(t.app, 'degree')
    const token = await postToken(t.app, { grant_type: PRE_AUTH, 'pre-authorized_code': redeemed.code })
    assert.equal(token.statusCode, 200, token.body)
    assert.equal((await getOffer(t.app, redeemed.processId)).statusCode, 200, 'redeemed, within the lifetime')
    t.clock.advance(600_000)
    expectOAuth(await getOffer(t.app, unredeemed.processId), 404, 'not_found', /expired at .* unredeemed/)
    const late = expectOAuth(await getOffer(t.app, redeemed.processId), 404, 'not_found', /expired at /)
    assert.doesNotMatch(late.error_description, /unredeemed/)
  })

  test("another tenant's process answers 404 like an unknown id; an unknown tenant 404", async () => {
    const { processId } = await newOffer(t.app, 'degree')
    expectOAuth(await getOffer(t.app, processId, 'other'), 404, 'not_found', /no credential offer/)
    expectOAuth(
      await getOffer(t.app, '00000000-0000-4000-8000-000000000000'),
      404,
      'not_found',
      /no credential offer/,
    )
    expectOAuth(await getOffer(t.app, processId, 'nobody'), 404, 'not_found', /no credential offer/)
  })
})

describe('issuer and authorization server metadata', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  const get = (url: string) => t.app.inject({ method: 'GET', url })

  test('both URL forms serve the same issuer metadata', async () => {
    const appended = await get('/oid4vci/demo/.well-known/openid-credential-issuer')
    const rfc8615 = await get('/.well-known/openid-credential-issuer/oid4vci/demo')
    assert.equal(appended.statusCode, 200)
    assert.equal(rfc8615.statusCode, 200)
    assert.match(String(appended.headers['content-type']), /^application\/json/)
    assert.deepEqual(appended.json(), rfc8615.json())
    const meta = appended.json()
    assert.equal(meta.credential_issuer, ISSUER)
    assert.equal(meta.credential_endpoint, `${ISSUER}/credential`)
    assert.equal(meta.nonce_endpoint, `${ISSUER}/nonce`)
    assert.equal(meta.deferred_credential_endpoint, `${ISSUER}/deferred_credential`)
    assert.equal(meta.notification_endpoint, `${ISSUER}/notification`)
    assert.ok(Array.isArray(meta.vc_harness_issuer_dids))
  })

  test('OpenID4VCI 1.0 §12.2.4: display and claims under credential_metadata; a dc+sd-jwt configuration by vct', async () => {
    const meta = (await get('/oid4vci/demo/.well-known/openid-credential-issuer')).json()
    const { degree, pid } = meta.credential_configurations_supported
    // A 1.0 wallet tells the version by credential_metadata on the configurations (the OWF client does).
    for (const configuration of Object.values(meta.credential_configurations_supported)) {
      assert.ok((configuration as { credential_metadata?: unknown }).credential_metadata)
    }
    assert.deepEqual(degree.credential_metadata, { display: degree.display })
    assert.equal(pid.format, 'dc+sd-jwt')
    assert.equal(pid.vct, `${meta.credential_issuer}/vct/VerifiableId`)
    assert.equal(pid.credential_definition, undefined)
    assert.deepEqual(pid.cryptographic_binding_methods_supported, ['jwk', 'did:key'])
    assert.deepEqual(Object.keys(pid.proof_types_supported), ['jwt'])
    assert.deepEqual(pid.credential_metadata.claims, [
      { path: ['givenName'], mandatory: true, display: [{ name: 'Given name', locale: 'en' }] },
      { path: ['address', 'locality'], display: [{ name: 'Town', locale: 'en' }] },
    ])
    const issuer = meta.credential_issuer
    assert.equal(meta.nonce_endpoint, `${issuer}/nonce`)
    assert.equal(meta.deferred_credential_endpoint, `${issuer}/deferred_credential`)
    assert.equal(meta.notification_endpoint, `${issuer}/notification`)
  })

  test('one configuration per issuance template; proof types and signing alg per template', async () => {
    const meta = (await get('/oid4vci/demo/.well-known/openid-credential-issuer')).json()
    const configurations = meta.credential_configurations_supported
    assert.deepEqual(Object.keys(configurations).sort(), [
      'degree',
      'degree-d15',
      'degree-ldp',
      'es256',
      'es256k',
      'gated',
      'gated-trusted',
      'mdl',
      'pid',
      'pid-haip',
      'pid-sd-jwt',
      'pin',
      'pin-text',
      'short',
      'vid',
      'vid-short',
    ])
    const degree = configurations.degree
    assert.equal(degree.format, 'jwt_vc_json')
    assert.deepEqual(degree.cryptographic_binding_methods_supported, ['did:key'])
    assert.deepEqual(degree.credential_signing_alg_values_supported, ['EdDSA'])
    assert.deepEqual(degree.credential_definition.type, [
      'VerifiableCredential',
      'UniversityDegreeCredential',
    ])
    assert.deepEqual(Object.keys(degree.proof_types_supported).sort(), ['di_vp', 'jwt', 'ldp_vp'])
    assert.deepEqual(degree.proof_types_supported.jwt.proof_signing_alg_values_supported, [...JWS_ALGS])
    assert.deepEqual(degree.proof_types_supported.di_vp.proof_signing_alg_values_supported, [
      'eddsa-rdfc-2022',
    ])
    assert.equal(degree.display[0].name, 'UniversityDegreeCredential', 'default display name: the type')
    assert.deepEqual(configurations.es256.credential_signing_alg_values_supported, ['ES256'])
    assert.deepEqual(configurations.es256k.credential_signing_alg_values_supported, ['ES256K'])
    const gated = configurations.gated
    assert.deepEqual(
      Object.keys(gated.proof_types_supported).sort(),
      ['di_vp', 'ldp_vp'],
      'jwt is not offered when a presentation is required',
    )
    assert.deepEqual(gated.display[0], {
      name: 'Gated degree',
      locale: 'en',
      description: 'Needs an ID',
      background_color: '#123456',
    })
    const other = (await get('/oid4vci/other/.well-known/openid-credential-issuer')).json()
    assert.equal(other.credential_issuer, issuerOf('other'))
    assert.deepEqual(Object.keys(other.credential_configurations_supported), ['degree'])
  })

  test('vc_harness_issuer_dids lists the did:key of each algorithm the tenant signed with', async () => {
    const holder = newHolder()
    const ed = await issueTo(t.app, t.clock, holder, 'degree', DEGREE)
    const p256 = await issueTo(t.app, t.clock, holder, 'es256', [
      { type: ['VerifiableCredential', 'EmployeeCredential'], credentialSubject: { employer: 'ACME' } },
    ])
    const dids = (await get('/oid4vci/demo/.well-known/openid-credential-issuer')).json()
      .vc_harness_issuer_dids
    const edIssuer = String(decodeJws(ed.jwts[0] ?? '').payload.iss)
    const p256Issuer = String(decodeJws(p256.jwts[0] ?? '').payload.iss)
    assert.match(edIssuer, /^did:key:z6Mk/)
    assert.match(p256Issuer, /^did:key:zDn/)
    assert.ok(dids.includes(edIssuer) && dids.includes(p256Issuer), JSON.stringify(dids))
  })

  test('AS metadata in both URL forms: the issuer is its own authorization server', async () => {
    const appended = await get('/oid4vci/demo/.well-known/oauth-authorization-server')
    const rfc8615 = await get('/.well-known/oauth-authorization-server/oid4vci/demo')
    assert.equal(appended.statusCode, 200)
    assert.deepEqual(appended.json(), rfc8615.json())
    const meta = appended.json()
    assert.equal(meta.issuer, ISSUER)
    assert.equal(meta.token_endpoint, `${ISSUER}/token`)
    // The demo's pid-haip template takes the authorization code flow (docs/issuance.md).
    assert.deepEqual(meta.grant_types_supported, [PRE_AUTH, 'authorization_code'])
    assert.equal(meta['pre-authorized_grant_anonymous_access_supported'], true)
  })

  test('an unknown tenant: 404 on every metadata URL and on the nonce endpoint', async () => {
    for (const url of [
      '/oid4vci/nobody/.well-known/openid-credential-issuer',
      '/.well-known/openid-credential-issuer/oid4vci/nobody',
      '/oid4vci/nobody/.well-known/oauth-authorization-server',
      '/.well-known/oauth-authorization-server/oid4vci/nobody',
    ]) {
      expectOAuth(await get(url), 404, 'not_found', /nobody/)
    }
    expectOAuth(
      await t.app.inject({ method: 'POST', url: '/oid4vci/nobody/nonce' }),
      404,
      'not_found',
      /nobody/,
    )
  })

  test('nonce endpoint: {c_nonce, c_nonce_expires_in}, no-store, a new value each time', async () => {
    const first = await t.app.inject({ method: 'POST', url: '/oid4vci/demo/nonce' })
    assert.equal(first.statusCode, 200)
    assert.equal(first.headers['cache-control'], 'no-store')
    const body = first.json()
    assert.deepEqual(Object.keys(body).sort(), ['c_nonce', 'c_nonce_expires_in'])
    assert.equal(body.c_nonce_expires_in, 300)
    assert.notEqual(body.c_nonce, await nonceOf(t.app))
  })
})

describe('token endpoint', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  const token = (form: Record<string, string>, tenant = 'demo') => postToken(t.app, form, tenant)
  const grant = (code: string, extra: Record<string, string> = {}) =>
    token({ grant_type: PRE_AUTH, 'pre-authorized_code': code, ...extra })

  test('success: access token, Bearer, expires_in, c_nonce; no-store and Pragma: no-cache', async () => {
    const { code } = await newOffer(t.app, 'degree')
    const response = await grant(code)
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(response.headers['cache-control'], 'no-store')
    assert.equal(response.headers.pragma, 'no-cache')
    const body = response.json()
    assert.deepEqual(Object.keys(body).sort(), [
      'access_token',
      'c_nonce',
      'c_nonce_expires_in',
      'expires_in',
      'token_type',
    ])
    assert.match(body.access_token, /^[A-Za-z0-9_-]{43}$/, '256 random bits, base64url')
    assert.equal(body.token_type, 'Bearer')
    assert.equal(body.expires_in, 3600)
    assert.equal(typeof body.c_nonce, 'string')
    assert.equal(body.c_nonce_expires_in, 300)
  })

  test('another grant_type → unsupported_grant_type; no grant_type → invalid_request', async () => {
    const { code } = await newOffer(t.app, 'degree')
    expectOAuth(
      await token({ grant_type: 'client_credentials', 'pre-authorized_code': code }),
      400,
      'unsupported_grant_type',
      /client_credentials.*not supported/,
    )
    // The demo's pid-haip template takes the authorization code grant: an unknown code is invalid_grant.
    expectOAuth(
      await token({ grant_type: 'authorization_code', code: 'x', 'pre-authorized_code': code }),
      400,
      'invalid_grant',
      /authorization code is unknown/,
    )
    expectOAuth(await token({ 'pre-authorized_code': code }), 400, 'invalid_request', /grant_type/)
    assert.equal((await grant(code)).statusCode, 200, 'the code was not consumed by the failures')
  })

  test('pre-authorized_code missing → invalid_request', async () => {
    expectOAuth(
      await token({ grant_type: PRE_AUTH }),
      400,
      'invalid_request',
      /pre-authorized_code is required/,
    )
    expectOAuth(
      await token({ grant_type: PRE_AUTH, 'pre-authorized_code': '' }),
      400,
      'invalid_request',
      /pre-authorized_code is required/,
    )
  })

  test('unknown code → invalid_grant; a code of another tenant is unknown here and stays usable there', async () => {
    expectOAuth(await grant('not-a-code'), 400, 'invalid_grant', /unknown/)
    const foreign = await newOffer(t.app, 'degree', OTHER.app)
    expectOAuth(await grant(foreign.code), 400, 'invalid_grant', /unknown/)
    const home = await token({ grant_type: PRE_AUTH, 'pre-authorized_code': foreign.code }, 'other')
    assert.equal(home.statusCode, 200, home.body)
  })

  test('expired code (preAuthorizedCodeLifetimeSeconds = 600 from offer creation) → invalid_grant', async () => {
    const late = await newOffer(t.app, 'degree')
    const inTime = await newOffer(t.app, 'degree')
    t.clock.advance(599_000)
    assert.equal((await grant(inTime.code)).statusCode, 200, 'valid at 599 s')
    t.clock.advance(1_000)
    expectOAuth(await grant(late.code), 400, 'invalid_grant', /expired/)
  })

  test('a used code → invalid_grant', async () => {
    const { code } = await newOffer(t.app, 'degree')
    assert.equal((await grant(code)).statusCode, 200)
    expectOAuth(await grant(code), 400, 'invalid_grant', /already used/)
  })

  test('a rejected process → invalid_grant with the reason (docs/api.md, Reject)', async () => {
    const { code, rp, processId } = await newOffer(t.app, 'degree')
    assert.equal((await rejectProcess(t.app, rp, processId, 'documents incomplete')).statusCode, 200)
    expectOAuth(await grant(code), 400, 'invalid_grant', /REJECTED/)
    expectOAuth(await grant(code), 400, 'invalid_grant', /documents incomplete/)
  })

  test('tx_code missing when announced → invalid_request, not counted as a wrong try', async () => {
    const { code, txCode } = await newOffer(t.app, 'pin')
    for (let i = 0; i < 6; i++) {
      expectOAuth(await grant(code), 400, 'invalid_request', /tx_code is required/)
    }
    expectOAuth(await grant(code, { tx_code: '' }), 400, 'invalid_request', /tx_code is required/)
    assert.equal((await grant(code, { tx_code: txCode ?? '' })).statusCode, 200)
  })

  test('tx_code sent when not announced → invalid_request, the code survives', async () => {
    const { code } = await newOffer(t.app, 'degree')
    expectOAuth(await grant(code, { tx_code: '123456' }), 400, 'invalid_request', /did not announce/)
    expectOAuth(await grant(code, { user_pin: '123456' }), 400, 'invalid_request', /did not announce/)
    assert.equal((await grant(code)).statusCode, 200)
  })

  test('a wrong tx_code → invalid_grant naming the attempts left; the code survives', async () => {
    const { code, txCode } = await newOffer(t.app, 'pin')
    const wrong = txCode === '000000' ? '111111' : '000000'
    expectOAuth(
      await grant(code, { tx_code: wrong }),
      400,
      'invalid_grant',
      /tx_code is wrong \(4 attempts left\)/,
    )
    expectOAuth(await grant(code, { tx_code: wrong }), 400, 'invalid_grant', /3 attempts left/)
    assert.equal((await grant(code, { tx_code: txCode ?? '' })).statusCode, 200)
  })

  test('txCodeMaxAttempts (5) wrong tries burn the code: invalid_grant even with the right tx_code', async () => {
    const { code, txCode } = await newOffer(t.app, 'pin')
    const wrong = txCode === '000000' ? '111111' : '000000'
    for (let left = 4; left >= 1; left--) {
      expectOAuth(
        await grant(code, { tx_code: wrong }),
        400,
        'invalid_grant',
        new RegExp(`${left} attempts left`),
      )
    }
    expectOAuth(await grant(code, { tx_code: wrong }), 400, 'invalid_grant', /5 wrong attempts.*invalidated/)
    expectOAuth(await grant(code, { tx_code: txCode ?? '' }), 400, 'invalid_grant', /invalidated/)
    expectOAuth(await grant(code, { user_pin: txCode ?? '' }), 400, 'invalid_grant', /invalidated/)
  })

  test('user_pin (the draft-11 name) is accepted for tx_code', async () => {
    const { code, txCode } = await newOffer(t.app, 'pin')
    const response = await grant(code, { user_pin: txCode ?? '' })
    assert.equal(response.statusCode, 200, response.body)
    const wrong = await newOffer(t.app, 'pin')
    expectOAuth(
      await grant(wrong.code, { user_pin: wrong.txCode === '000000' ? '111111' : '000000' }),
      400,
      'invalid_grant',
      /4 attempts left/,
    )
  })

  test('concurrent replay: of 10 parallel token requests with one code exactly one succeeds', async () => {
    const { code } = await newOffer(t.app, 'degree')
    const responses = await Promise.all(Array.from({ length: 10 }, () => grant(code)))
    const ok = responses.filter((r) => r.statusCode === 200)
    assert.equal(ok.length, 1, responses.map((r) => r.statusCode).join(','))
    for (const r of responses.filter((x) => x.statusCode !== 200)) {
      expectOAuth(r, 400, 'invalid_grant', /already used/)
    }
  })

  test('a body that is not form-encoded → invalid_request; the code is not consumed', async () => {
    const { code } = await newOffer(t.app, 'degree')
    const asJson = await t.app.inject({
      method: 'POST',
      url: '/oid4vci/demo/token',
      headers: { 'content-type': 'application/json' },
      payload: { grant_type: PRE_AUTH, 'pre-authorized_code': code },
    })
    expectOAuth(asJson, 400, 'invalid_request', /x-www-form-urlencoded/)
    const asText = await t.app.inject({
      method: 'POST',
      url: '/oid4vci/demo/token',
      headers: { 'content-type': 'text/plain' },
      payload: `grant_type=${encodeURIComponent(PRE_AUTH)}&pre-authorized_code=${code}`,
    })
    expectOAuth(asText, 400, 'invalid_request', /x-www-form-urlencoded/)
    const asXml = await t.app.inject({
      method: 'POST',
      url: '/oid4vci/demo/token',
      headers: { 'content-type': 'application/xml' },
      payload: '<token/>',
    })
    expectOAuth(asXml, 400, 'invalid_request', /Content-Type|x-www-form-urlencoded/)
    assert.equal((await grant(code)).statusCode, 200)
  })
})

describe('token endpoint: tx_code failures are persisted', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'vc-harness-oid4vci-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  test('failures counted before a restart still count after it, and the burn is final', async () => {
    const first = await makeApp(oid4vciConfig(), dir)
    const { code, txCode } = await newOffer(first.app, 'pin')
    const wrong = txCode === '000000' ? '111111' : '000000'
    const form = (tx: string) => ({ grant_type: PRE_AUTH, 'pre-authorized_code': code, tx_code: tx })
    for (let i = 0; i < 3; i++) assert.equal((await postToken(first.app, form(wrong))).statusCode, 400)
    await first.close()

    const second = await makeApp(oid4vciConfig(), dir)
    try {
      expectOAuth(await postToken(second.app, form(wrong)), 400, 'invalid_grant', /1 attempts left/)
      expectOAuth(await postToken(second.app, form(wrong)), 400, 'invalid_grant', /invalidated/)
    } finally {
      await second.close()
    }
    const third = await makeApp(oid4vciConfig(), dir)
    try {
      expectOAuth(await postToken(third.app, form(txCode ?? '')), 400, 'invalid_grant', /invalidated/)
    } finally {
      await third.close()
    }
  })
})

describe('credential endpoint: the access token', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  const request = (authorization: string | undefined) =>
    t.app.inject({
      method: 'POST',
      url: '/oid4vci/demo/credential',
      headers: authorization === undefined ? {} : { authorization },
      payload: { credential_configuration_id: 'degree', proof: { proof_type: 'jwt', jwt: 'x.y.z' } },
    })

  test('no token → 401 with a bare Bearer challenge', async () => {
    const response = await request(undefined)
    expectOAuth(response, 401, 'invalid_token', /access token is required/)
    assert.equal(response.headers['www-authenticate'], 'Bearer')
  })

  test('garbage, a non-Bearer scheme and a relying-party token → 401 error="invalid_token"', async () => {
    const rp = await tokenFor(t.app, DEMO.app)
    for (const authorization of [
      'Bearer garbage',
      'Bearer ',
      'Basic Zm9vOmJhcg==',
      `Bearer ${rp}`,
      `jwt ${rp}`,
    ]) {
      const response = await request(authorization)
      expectOAuth(response, 401, 'invalid_token', /unknown|must be "Bearer/)
      assert.match(
        String(response.headers['www-authenticate']),
        /^Bearer error="invalid_token"/,
        authorization,
      )
    }
  })

  test('an expired access token (accessTokenLifetimeSeconds = 3600) → 401 invalid_token', async () => {
    const g = await grantFor(t.app, 'degree')
    t.clock.advance(3_599_000)
    // still valid: the notification endpoint gets past authentication and complains about the id
    expectOAuth(
      await walletPost(t.app, 'notification', g.accessToken, {
        notification_id: 'x',
        event: 'credential_accepted',
      }),
      400,
      'invalid_notification_id',
      /unknown/,
    )
    t.clock.advance(1_000)
    const response = await request(`Bearer ${g.accessToken}`)
    expectOAuth(response, 401, 'invalid_token', /expired/)
    assert.match(String(response.headers['www-authenticate']), /^Bearer error="invalid_token"/)
  })

  test("another tenant's access token → 401 invalid_token", async () => {
    const foreign = await grantFor(t.app, 'degree', OTHER.app)
    const response = await request(`Bearer ${foreign.accessToken}`)
    expectOAuth(response, 401, 'invalid_token', /unknown/)
    assert.match(String(response.headers['www-authenticate']), /error="invalid_token"/)
  })
})

describe('credential endpoint: request checks leave nothing behind', () => {
  let t: TestApp
  let g: Awaited<ReturnType<typeof grantFor>>
  let holder: Holder
  before(async () => {
    t = await makeApp(oid4vciConfig())
    g = await grantFor(t.app, 'degree')
    holder = newHolder()
  })
  after(() => t.close())

  const send = (body: unknown) => walletPost(t.app, 'credential', g.accessToken, body)
  const good = () => proofJwt(holder, t.clock, g.cNonce)

  test('a configuration not in the metadata → unknown_credential_configuration', async () => {
    expectOAuth(
      await send(jwtRequest('no-such-configuration', good())),
      400,
      'unknown_credential_configuration',
      /no-such-configuration/,
    )
    expectOAuth(
      await send(jwtRequest('degree-check', good())),
      400,
      'unknown_credential_configuration',
      /degree-check/,
    )
  })

  test("another template's configuration → invalid_credential_request", async () => {
    expectOAuth(await send(jwtRequest('pin', good())), 400, 'invalid_credential_request', /grants "degree"/)
  })

  test('proof and proofs both, or neither → invalid_proof', async () => {
    // 1.0 §8.3.1.2: invalid_proof "if the field is missing"; draft 15 §8.3.1.2 names the singular proof too:
    // "(1) if both fields are missing, or (2) both are present simultaneously" (until issue 34, both at once
    // was invalid_credential_request).
    const jwt = good()
    expectOAuth(
      await send({ ...jwtRequest('degree', jwt), proofs: { jwt: [jwt] } }),
      400,
      'invalid_proof',
      /either proof or proofs/,
    )
    expectOAuth(
      await send({ credential_configuration_id: 'degree' }),
      400,
      'invalid_proof',
      /key proof is required/,
    )
  })

  test('malformed requests: body, configuration id, credential_identifier', async () => {
    expectOAuth(await send([1, 2]), 400, 'invalid_credential_request', /JSON object/)
    expectOAuth(
      await send({ proof: { proof_type: 'jwt', jwt: good() } }),
      400,
      'invalid_credential_request',
      /credential_configuration_id is required/,
    )
    expectOAuth(
      await send({ ...jwtRequest('degree', good()), credential_identifier: 'x' }),
      400,
      'invalid_credential_request',
      /not both/,
    )
    // OpenID4VCI 1.0 §8.3.1.2: an identifier no token granted is unknown_credential_identifier
    const { credential_configuration_id: _id, ...byIdentifier } = jwtRequest('degree', good())
    expectOAuth(
      await send({ ...byIdentifier, credential_identifier: 'x' }),
      400,
      'unknown_credential_identifier',
      /not granted/,
    )
  })

  test('malformed or unsupported proofs → invalid_proof', async () => {
    const cases: [unknown, RegExp][] = [
      [{ proof: { jwt: good() } }, /proof_type is required/],
      [{ proof: { proof_type: 'cwt', cwt: 'x' } }, /"cwt" is not supported/],
      [{ proof: { proof_type: 'jwt' } }, /compact JWT/],
      [{ proof: { proof_type: 'jwt', jwt: 42 } }, /compact JWT/],
      [{ proof: { proof_type: 'jwt', jwt: 'not-a-jwt' } }, /malformed/],
      [{ proof: 'jwt' }, /key proof is required/],
      [{ proofs: { jwt: [] } }, /1 to 10 proofs/],
      [{ proofs: { jwt: Array.from({ length: 11 }, good) } }, /1 to 10 proofs/],
      [{ proofs: { jwt: [good()], di_vp: [{}] } }, /one proof type/],
      [{ proofs: { jwt: good() } }, /1 to 10 proofs/],
    ]
    for (const [body, description] of cases) {
      expectOAuth(
        await send({ credential_configuration_id: 'degree', ...(body as object) }),
        400,
        'invalid_proof',
        description,
      )
    }
  })

  test('a body that is not JSON → invalid_request in the OAuth shape, never problem+json', async () => {
    for (const [type, payload, description] of [
      ['application/json', '{"credential_configuration_id": ', /not valid JSON/],
      ['application/json', '{"__proto__": {"x": 1}}', /not valid JSON/],
      ['text/html', '<p>hi</p>', /Content-Type/],
    ] as const) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/oid4vci/demo/credential',
        headers: { authorization: `Bearer ${g.accessToken}`, 'content-type': type },
        payload,
      })
      expectOAuth(response, 400, 'invalid_request', description)
    }
  })

  test('after all that: still PENDING without validator; the token and its c_nonce still work', async () => {
    await assertUntouched(t, g.rp, g.processId)
    const response = await send(jwtRequest('degree', good()))
    assert.equal(response.statusCode, 202, response.body)
  })
})

describe('jwt proof (Appendix F.1)', () => {
  let t: TestApp
  let g: Awaited<ReturnType<typeof grantFor>>
  let holder: Holder
  before(async () => {
    t = await makeApp(oid4vciConfig())
    g = await grantFor(t.app, 'degree')
    holder = newHolder()
  })
  after(() => t.close())

  const send = (jwt: string, accessToken = g.accessToken) =>
    walletPost(t.app, 'credential', accessToken, jwtRequest('degree', jwt))
  const header = (extra: Record<string, unknown> = {}) => ({
    alg: holder.alg,
    typ: 'openid4vci-proof+jwt',
    kid: holder.kid,
    ...extra,
  })

  test('typ other than openid4vci-proof+jwt → invalid_proof', async () => {
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { header: { typ: 'JWT' } })),
      400,
      'invalid_proof',
      /typ/,
    )
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { header: { typ: undefined } })),
      400,
      'invalid_proof',
      /typ/,
    )
  })

  test('alg none, HS256, and an alg that does not match the key → invalid_proof', async () => {
    const body = b64json(claims(t, g.cNonce))
    const none = `${b64json(header({ alg: 'none' }))}.${body}.`
    expectOAuth(await send(none), 400, 'invalid_proof', /alg "none" is not allowed/)
    const hsInput = `${b64json(header({ alg: 'HS256' }))}.${body}`
    const hs = `${hsInput}.${createHmac('sha256', holder.publicJwk.x ?? 'k')
      .update(hsInput)
      .digest('base64url')}`
    expectOAuth(await send(hs), 400, 'invalid_proof', /alg "HS256" is not allowed/)
    const p256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    const esInput = `${b64json(header({ alg: 'ES256' }))}.${body}`
    const es = `${esInput}.${sign('sha256', Buffer.from(esInput), { key: p256.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`
    expectOAuth(await send(es), 400, 'invalid_proof', /ES256 does not match/)
  })

  test('private key material in a jwk header → invalid_proof saying so', async () => {
    const privateJwk = holder.privateKey.export({ format: 'jwk' })
    assert.ok(privateJwk.d)
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { header: { kid: undefined, jwk: privateJwk } })),
      400,
      'invalid_proof',
      /private key material/,
    )
  })

  test('jwk or x5c instead of kid → invalid_proof', async () => {
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { header: { kid: undefined, jwk: holder.publicJwk } })),
      400,
      'invalid_proof',
      /kid \(did:key\), not jwk/,
    )
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { header: { jwk: holder.publicJwk } })),
      400,
      'invalid_proof',
      /not jwk/,
    )
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { header: { x5c: ['MIIB'] } })),
      400,
      'invalid_proof',
      /not x5c/,
    )
  })

  test('kid missing, not did:key, a bare DID or a wrong fragment → invalid_proof', async () => {
    const other = newHolder()
    const cases: [unknown, RegExp][] = [
      [undefined, /kid must be a did:key key id/],
      ['did:web:example.com#key-1', /cannot be resolved/],
      ['https://example.com/keys/1', /cannot be resolved|bare DID/],
      [holder.did, /not a bare DID/],
      [`${holder.did}#${other.kid.split('#')[1]}`, /cannot be resolved/],
    ]
    for (const [kid, description] of cases) {
      expectOAuth(
        await send(proofJwt(holder, t.clock, g.cNonce, { header: { kid } })),
        400,
        'invalid_proof',
        description,
      )
    }
  })

  test('a signature by another key under the holder kid → invalid_proof', async () => {
    const impostor = newHolder()
    expectOAuth(
      await send(proofJwt(impostor, t.clock, g.cNonce, { header: { kid: holder.kid } })),
      400,
      'invalid_proof',
      /signature does not verify/,
    )
    const good = proofJwt(holder, t.clock, g.cNonce)
    const [h, p] = good.split('.')
    const tampered = `${h}.${b64json({ ...claims(t, g.cNonce), extra: 1 })}.${good.split('.')[2]}`
    assert.notEqual(p, tampered.split('.')[1])
    expectOAuth(await send(tampered), 400, 'invalid_proof', /signature does not verify/)
  })

  test('aud missing or not the credential issuer → invalid_proof', async () => {
    for (const aud of ['https://issuer.example/oid4vci/other', 'https://evil.example', undefined, ['x']]) {
      expectOAuth(
        await send(proofJwt(holder, t.clock, g.cNonce, { payload: { aud } })),
        400,
        'invalid_proof',
        /aud must be the credential issuer/,
      )
    }
  })

  test('iat missing, older than proofMaxAgeSeconds (300) or more than 60 s ahead → invalid_proof', async () => {
    const now = seconds(t)
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { payload: { iat: undefined } })),
      400,
      'invalid_proof',
      /iat is missing/,
    )
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { payload: { iat: String(now) } })),
      400,
      'invalid_proof',
      /iat is missing or not a number/,
    )
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { payload: { iat: now - 301 } })),
      400,
      'invalid_proof',
      /301 s old/,
    )
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce, { payload: { iat: now + 61 } })),
      400,
      'invalid_proof',
      /in the future/,
    )
  })

  test('nonce missing → invalid_nonce (checked after the proof itself)', async () => {
    expectOAuth(await send(proofJwt(holder, t.clock, undefined)), 400, 'invalid_nonce', /no nonce/)
    expectOAuth(await send(proofJwt(holder, t.clock, '')), 400, 'invalid_nonce', /no nonce/)
  })

  test('an unknown nonce → invalid_nonce with a fresh c_nonce in the answer', async () => {
    const response = await send(proofJwt(holder, t.clock, 'made-up-nonce'))
    const body = expectOAuth(response, 400, 'invalid_nonce', /unknown, expired or already used/)
    assert.equal(typeof body.c_nonce, 'string')
    assert.equal(body.c_nonce_expires_in, 300)
    // the fresh c_nonce works (on another grant, so the one under test stays untouched)
    const other = await grantFor(t.app, 'degree')
    const ok = await send(proofJwt(holder, t.clock, String(body.c_nonce)), other.accessToken)
    assert.equal(ok.statusCode, 202, ok.body)
  })

  test('every rejected proof above left the process untouched and the c_nonce unconsumed', async () => {
    await assertUntouched(t, g.rp, g.processId)
    const response = await send(proofJwt(holder, t.clock, g.cNonce))
    assert.equal(response.statusCode, 202, response.body)
  })

  test('a replayed nonce → invalid_nonce (each c_nonce is single use)', async () => {
    const next = await grantFor(t.app, 'degree')
    expectOAuth(
      await send(proofJwt(holder, t.clock, g.cNonce), next.accessToken),
      400,
      'invalid_nonce',
      /already used/,
    )
    await assertUntouched(t, next.rp, next.processId)
  })

  test('an expired nonce (cNonceLifetimeSeconds = 300) and a nonce of another tenant → invalid_nonce', async () => {
    const stale = await nonceOf(t.app)
    t.clock.advance(300_000)
    const next = await grantFor(t.app, 'degree')
    expectOAuth(
      await send(proofJwt(holder, t.clock, stale), next.accessToken),
      400,
      'invalid_nonce',
      /expired/,
    )
    const foreign = (await t.app.inject({ method: 'POST', url: '/oid4vci/other/nonce' })).json().c_nonce
    expectOAuth(
      await send(proofJwt(holder, t.clock, foreign), next.accessToken),
      400,
      'invalid_nonce',
      /unknown/,
    )
    const fromEndpoint = await send(proofJwt(holder, t.clock, await nonceOf(t.app)), next.accessToken)
    assert.equal(fromEndpoint.statusCode, 202, 'a c_nonce from the nonce endpoint works')
  })

  test('iat at the edges (300 s old, 60 s ahead) is accepted; aud may be an array holding the issuer', async () => {
    const now = seconds(t)
    for (const payload of [{ iat: now - 300 }, { iat: now + 60 }, { aud: ['https://x.example', ISSUER] }]) {
      const next = await grantFor(t.app, 'degree')
      const response = await send(proofJwt(holder, t.clock, next.cNonce, { payload }), next.accessToken)
      assert.equal(response.statusCode, 202, `${JSON.stringify(payload)}: ${response.body}`)
    }
  })
})

describe('credential endpoint: holders, proofs, outcomes and the validator', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  const send = (accessToken: string, body: unknown) => walletPost(t.app, 'credential', accessToken, body)

  // OpenID4VCI 1.0 §8.3: "Each key provided by the Wallet is used to bind to, at most, one Credential": a batch
  // names distinct keys (test/service/oid4vci/batch.test.ts issues one); the same key twice is refused.
  test('proofs {jwt: [a, b]} by one holder → invalid_proof (a batch needs distinct keys); nothing bound', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const a = proofJwt(holder, t.clock, g.cNonce)
    const b = proofJwt(holder, t.clock, g.cNonce, { payload: { jti: 'second' } })
    const response = await send(g.accessToken, {
      credential_configuration_id: 'degree',
      proofs: { jwt: [a, b] },
    })
    expectOAuth(
      response,
      400,
      'invalid_proof',
      /proofs\[1\] proves the same key as proofs\[0\].*distinct keys/,
    )
    await assertUntouched(t, g.rp, g.processId)
    const single = await send(g.accessToken, jwtRequest('degree', a))
    assert.equal(single.statusCode, 202, single.body)
    const process = await readProcess(t.app, g.rp, g.processId)
    assert.equal(
      (process.validator?.verifiablePresentation as { holder: string } | undefined)?.holder,
      holder.did,
    )
  })

  test('proofs by two holders with different nonces, or one not verifying → invalid_proof; nothing bound, nonce unconsumed', async () => {
    const g = await grantFor(t.app, 'degree')
    const one = newHolder()
    const two = newHolder()
    const response = await send(g.accessToken, {
      credential_configuration_id: 'degree',
      proofs: { jwt: [proofJwt(one, t.clock, g.cNonce), proofJwt(two, t.clock, await nonceOf(t.app))] },
    })
    expectOAuth(response, 400, 'invalid_proof', /same c_nonce/)
    await assertUntouched(t, g.rp, g.processId)
    const bad = proofJwt(two, t.clock, g.cNonce, { header: { kid: one.kid } })
    expectOAuth(
      await send(g.accessToken, {
        credential_configuration_id: 'degree',
        proofs: { jwt: [proofJwt(one, t.clock, g.cNonce), bad] },
      }),
      400,
      'invalid_proof',
      /signature does not verify/,
    )
    const ok = await send(g.accessToken, jwtRequest('degree', proofJwt(one, t.clock, g.cNonce)))
    assert.equal(ok.statusCode, 202, ok.body)
  })

  for (const alg of ['ES256', 'ES256K', 'EdDSA'] as JwsAlg[]) {
    test(`an ${alg} holder gets a credential bound to its did:key`, async () => {
      const holder = newHolder(alg)
      const { processId, rp, jwts } = await issueTo(t.app, t.clock, holder, 'degree', DEGREE)
      const [jwt] = jwts
      assert.ok(jwt)
      assert.equal(decodeJws(jwt).payload.sub, holder.did)
      const process = await readProcess(t.app, rp, processId)
      assert.equal((process.data?.[0]?.credentialSubject as { id: string } | undefined)?.id, holder.did)
      const proof = (
        process.validator?.verifiablePresentation as { proof: { creator: string }[] } | undefined
      )?.proof[0]
      assert.equal(proof?.creator, holder.kid)
    })
  }

  test('a second credential request on one token while the first waits: the same 202 for its holder, invalid_credential_request for another key', async () => {
    // Until issue 34 every second request was refused. OpenID4VCI 1.0 §14.3 (draft 15 §13.3): "The Credential
    // Endpoint can be accessed multiple times by a Wallet using the same Access Token"; while nothing is
    // issued, the first request's transaction answers it. test/service/oid4vci/further-requests.test.ts has
    // the rest: further credentials once the process is ISSUED.
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const first = await send(g.accessToken, jwtRequest('degree', proofJwt(holder, t.clock, g.cNonce)))
    assert.equal(first.statusCode, 202)
    const again = await send(
      g.accessToken,
      jwtRequest('degree', proofJwt(holder, t.clock, await nonceOf(t.app))),
    )
    assert.equal(again.statusCode, 202, again.body)
    assert.deepEqual(again.json(), first.json())
    const nonce = await nonceOf(t.app)
    expectOAuth(
      await send(g.accessToken, jwtRequest('degree', proofJwt(newHolder(), t.clock, nonce))),
      400,
      'invalid_credential_request',
      /waits for the issuer/,
    )
    // the refused request did not consume its nonce
    const other = await grantFor(t.app, 'degree')
    assert.equal(
      (await send(other.accessToken, jwtRequest('degree', proofJwt(holder, t.clock, nonce)))).statusCode,
      202,
    )
  })

  test('nothing submitted yet → 202 {transaction_id, interval: 5}; the process is PENDING with a validator', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const response = await send(g.accessToken, jwtRequest('degree', proofJwt(holder, t.clock, g.cNonce)))
    assert.equal(response.statusCode, 202)
    assert.equal(response.headers['cache-control'], 'no-store')
    const body = response.json()
    assert.deepEqual(Object.keys(body).sort(), ['interval', 'transaction_id'])
    assert.match(body.transaction_id, UUID)
    assert.equal(body.interval, 5)
    const process = await readProcess(t.app, g.rp, g.processId)
    assert.equal(process.status, 'PENDING')
    assert.notEqual(process.validator, null)
    assert.equal(process.data, undefined)
  })

  test('content submitted first → 200 {credentials, notification_id}; the process is ISSUED', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const submitted = await submit(t.app, g.rp, g.processId, DEGREE)
    assert.equal(submitted.statusCode, 200)
    assert.equal(submitted.json()[0].status, 'PENDING', 'kept until the wallet asks')
    assert.equal(submitted.json()[0].data, undefined)
    const response = await send(g.accessToken, jwtRequest('degree', proofJwt(holder, t.clock, g.cNonce)))
    assert.equal(response.statusCode, 200, response.body)
    const body = response.json()
    assert.deepEqual(Object.keys(body).sort(), ['credentials', 'notification_id'])
    assert.match(body.notification_id, UUID)
    assert.equal(body.credentials.length, 1)
    const jwt: string = body.credentials[0].credential
    const process = await readProcess(t.app, g.rp, g.processId)
    assert.equal(process.status, 'ISSUED')
    const [credential] = process.data ?? []
    assert.equal((credential?.credentialSubject as { id: string } | undefined)?.id, holder.did)
    assert.deepEqual(credential?.proof, { type: 'JwtProof2020', jwt })
    const { header, payload } = decodeJws(jwt)
    const issuer = resolveDidKey(String(header.kid))
    verifyJws(jwt, issuer.publicKey, { algorithms: JWS_ALGS })
    assert.equal(header.typ, 'JWT')
    assert.equal(payload.iss, issuer.did)
    assert.equal(payload.sub, holder.did)
    assert.equal(payload.jti, credential?.id)
  })

  test('the validator (section 2.4) is built from the verified jwt proof', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const jwt = proofJwt(holder, t.clock, g.cNonce)
    assert.equal((await send(g.accessToken, jwtRequest('degree', jwt))).statusCode, 202)
    const submitted = await submit(t.app, g.rp, g.processId, DEGREE)
    assert.equal(submitted.statusCode, 200)
    const process = submitted.json()[0]
    assert.equal(process.status, 'ISSUED')
    const validator = process.validator
    assert.equal(validator.id, g.processId)
    const presentationType = ['VerifiablePresentation', 'ServiceCredentialPresentation']
    assert.deepEqual(validator.securityMechanisms.type, presentationType)
    const vp = validator.verifiablePresentation
    assert.deepEqual(vp.type, presentationType)
    assert.equal(vp.holder, holder.did)
    assert.deepEqual(vp.verifiableCredential, [])
    assert.deepEqual(vp.proof, validator.securityMechanisms.proof)
    assert.deepEqual(vp.proof[0], {
      type: 'JwtProof2020',
      created: new Date(seconds(t) * 1000).toISOString(),
      creator: holder.kid,
      proofPurpose: 'authentication',
      jwt,
    })
    // rule 3 of section 2.3: the holder DID is creator without its fragment
    const creator: string = vp.proof[0].creator
    assert.equal(creator.split('#')[0], holder.did)
    assert.equal(process.data[0].credentialSubject.id, creator.split('#')[0])
  })

  test('a REJECTED process → credential_request_denied with the reason', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    assert.equal((await rejectProcess(t.app, g.rp, g.processId, 'no enrolment found')).statusCode, 200)
    expectOAuth(
      await send(g.accessToken, jwtRequest('degree', proofJwt(holder, t.clock, g.cNonce))),
      400,
      'credential_request_denied',
      /rejected.*no enrolment found/,
    )
  })
})

describe('di_vp proof: templates that require a presentation', () => {
  let t: TestApp
  let holder: Holder
  let stranger: Holder
  let vidJwt: string
  let strangerVidJwt: string
  let degreeJwt: string
  let noFamilyNameJwt: string
  let tenantDid: string
  before(async () => {
    t = await makeApp(oid4vciConfig())
    holder = newHolder()
    stranger = newHolder()
    vidJwt = (await issueTo(t.app, t.clock, holder, 'vid', VERIFIABLE_ID)).jwts[0] ?? ''
    strangerVidJwt = (await issueTo(t.app, t.clock, stranger, 'vid', VERIFIABLE_ID)).jwts[0] ?? ''
    degreeJwt = (await issueTo(t.app, t.clock, holder, 'degree', DEGREE)).jwts[0] ?? ''
    noFamilyNameJwt =
      (
        await issueTo(t.app, t.clock, holder, 'vid', [
          { type: ['VerifiableCredential', 'VerifiableId'], credentialSubject: { firstName: 'Jane' } },
        ])
      ).jwts[0] ?? ''
    tenantDid = String(decodeJws(vidJwt).payload.iss)
  })
  after(() => t.close())

  const send = (accessToken: string, body: unknown) => walletPost(t.app, 'credential', accessToken, body)

  test('a VerifiableId shared in a di_vp → 202; the validator holds the decoded credential', async () => {
    const g = await grantFor(t.app, 'gated')
    const vp = await diVp(holder, t.clock, [vidJwt], { challenge: g.cNonce })
    const response = await send(g.accessToken, diVpRequest('gated', vp))
    assert.equal(response.statusCode, 202, response.body)
    const process = await readProcess(t.app, g.rp, g.processId)
    const validator = process.validator as {
      id: string
      verifiablePresentation: {
        type: string[]
        holder: string
        proof: Record<string, unknown>[]
        verifiableCredential: Record<string, unknown>[]
      }
    }
    assert.equal(validator.id, g.processId)
    const presentation = validator.verifiablePresentation
    assert.deepEqual(presentation.type, ['VerifiablePresentation', 'ServiceCredentialPresentation'])
    assert.equal(presentation.holder, holder.did)
    const proof = presentation.proof[0]
    assert.equal(proof?.creator, holder.kid)
    assert.equal(proof?.proofPurpose, 'authentication')
    assert.equal(proof?.challenge, g.cNonce)
    assert.equal(proof?.domain, ISSUER)
    assert.equal(presentation.verifiableCredential.length, 1)
    const shared = presentation.verifiableCredential[0]
    assert.deepEqual(shared?.type, ['VerifiableCredential', 'VerifiableId'])
    assert.equal(shared?.issuer, tenantDid)
    assert.equal(shared?.id, decodeJws(vidJwt).payload.jti)
    assert.equal(typeof shared?.issuanceDate, 'string')
    assert.deepEqual(shared?.credentialSubject, { ...VERIFIABLE_ID[0]?.credentialSubject, id: holder.did })
    assert.deepEqual(shared?.proof, { type: 'JwtProof2020', jwt: vidJwt })
  })

  test('submitted first, then the di_vp → 200 with the credential; ldp_vp is accepted as the draft-13 name', async () => {
    const g = await grantFor(t.app, 'gated')
    assert.equal((await submit(t.app, g.rp, g.processId, DEGREE)).statusCode, 200)
    const vp = await diVp(holder, t.clock, [vidJwt], { challenge: g.cNonce })
    const response = await send(g.accessToken, diVpRequest('gated', vp, 'ldp_vp'))
    assert.equal(response.statusCode, 200, response.body)
    const jwt = response.json().credentials[0].credential
    assert.equal(decodeJws(jwt).payload.sub, holder.did)
    const process = await readProcess(t.app, g.rp, g.processId)
    assert.equal(process.status, 'ISSUED')
    assert.equal((process.data?.[0]?.credentialSubject as { id: string } | undefined)?.id, holder.did)
  })

  test('proofs {di_vp: [vp]} is accepted like proof', async () => {
    const g = await grantFor(t.app, 'gated')
    const vp = await diVp(holder, t.clock, [vidJwt], { challenge: g.cNonce })
    const response = await send(g.accessToken, {
      credential_configuration_id: 'gated',
      proofs: { di_vp: [vp] },
    })
    assert.equal(response.statusCode, 202, response.body)
    const validator = (await readProcess(t.app, g.rp, g.processId)).validator as {
      securityMechanisms: { proof: unknown[] }
      verifiablePresentation: { proof: unknown[] }
    }
    assert.deepEqual(validator.securityMechanisms.proof, validator.verifiablePresentation.proof)
  })

  test('failures before the nonce check leave the process untouched and the c_nonce usable', async () => {
    const g = await grantFor(t.app, 'gated')
    const challenge = g.cNonce
    const fail = async (body: unknown, error: string, description: RegExp) =>
      expectOAuth(await send(g.accessToken, body), 400, error, description)

    // a jwt proof where a presentation is required
    await fail(jwtRequest('gated', proofJwt(holder, t.clock, challenge)), 'invalid_proof', /requires a di_vp/)
    // no credential, the wrong type, a credential missing a required field
    for (const jwts of [[], [degreeJwt], [noFamilyNameJwt]]) {
      const vp = await diVp(holder, t.clock, jwts, { challenge })
      await fail(diVpRequest('gated', vp), 'invalid_proof', /matchingIds: /)
    }
    // a credential issued to another holder
    await fail(
      diVpRequest('gated', await diVp(holder, t.clock, [strangerVidJwt], { challenge })),
      'invalid_proof',
      /issued to/,
    )
    // wrong domain
    await fail(
      diVpRequest('gated', await diVp(holder, t.clock, [vidJwt], { challenge, domain: issuerOf('other') })),
      'invalid_proof',
      /domain/,
    )
    // the presentation changed after signing
    const signed = await diVp(holder, t.clock, [vidJwt], { challenge })
    const swapped = { ...signed, verifiableCredential: [envelopeJwtCredential(strangerVidJwt)] }
    await fail(diVpRequest('gated', swapped), 'invalid_proof', /di_vp rejected/)
    // a tampered credential inside a correctly signed presentation
    const [h, p, s] = vidJwt.split('.')
    const forged = `${h}.${b64json({ ...decodeJws(vidJwt).payload, forged: true })}.${s}`
    assert.notEqual(forged.split('.')[1], p)
    await fail(
      diVpRequest('gated', await diVp(holder, t.clock, [forged], { challenge })),
      'invalid_proof',
      /signature does not verify/,
    )
    // holder in the presentation is not the signer
    await fail(
      diVpRequest('gated', await diVp(holder, t.clock, [vidJwt], { challenge, holderDid: stranger.did })),
      'invalid_proof',
      /holder does not match/,
    )
    // a credential that is not enveloped
    await fail(
      diVpRequest('gated', {
        ...(await diVp(holder, t.clock, [], { challenge })),
        verifiableCredential: [vidJwt],
      }),
      'invalid_proof',
      /di_vp rejected|EnvelopedVerifiableCredential/,
    )
    await fail(diVpRequest('gated', 'not-a-presentation'), 'invalid_proof', /Verifiable Presentation object/)

    await assertUntouched(t, g.rp, g.processId)
    const ok = await send(
      g.accessToken,
      diVpRequest('gated', await diVp(holder, t.clock, [vidJwt], { challenge })),
    )
    assert.equal(ok.statusCode, 202, ok.body)
  })

  test('a challenge that is not a fresh c_nonce → invalid_nonce; no challenge → invalid_nonce', async () => {
    const g = await grantFor(t.app, 'gated')
    const response = await send(
      g.accessToken,
      diVpRequest('gated', await diVp(holder, t.clock, [vidJwt], { challenge: 'my-own-challenge' })),
    )
    const body = expectOAuth(response, 400, 'invalid_nonce', /unknown, expired or already used/)
    assert.equal(typeof body.c_nonce, 'string')
    const vp = await diVp(holder, t.clock, [vidJwt], { challenge: g.cNonce })
    const proof = { ...(vp.proof as Record<string, unknown>) }
    delete proof.challenge
    expectOAuth(
      await send(g.accessToken, diVpRequest('gated', { ...vp, proof })),
      400,
      'invalid_nonce',
      /challenge/,
    )
    await assertUntouched(t, g.rp, g.processId)
    // a c_nonce already consumed by an earlier credential request
    const used = await grantFor(t.app, 'gated')
    assert.equal(
      (
        await send(
          used.accessToken,
          diVpRequest('gated', await diVp(holder, t.clock, [vidJwt], { challenge: used.cNonce })),
        )
      ).statusCode,
      202,
    )
    expectOAuth(
      await send(
        g.accessToken,
        diVpRequest('gated', await diVp(holder, t.clock, [vidJwt], { challenge: used.cNonce })),
      ),
      400,
      'invalid_nonce',
      /already used/,
    )
  })

  test('an issuer outside trustedIssuers → invalid_proof', async () => {
    const g = await grantFor(t.app, 'gated-trusted')
    const response = await send(
      g.accessToken,
      diVpRequest('gated-trusted', await diVp(holder, t.clock, [vidJwt], { challenge: g.cNonce })),
    )
    expectOAuth(response, 400, 'invalid_proof', /does not trust/)
    await assertUntouched(t, g.rp, g.processId)
  })

  test('a revoked shared credential → invalid_proof naming credentialStatus; the process is untouched', async () => {
    const issued = await issueTo(t.app, t.clock, holder, 'vid', VERIFIABLE_ID)
    const changed = await changeStatus(t.app, issued.rp, issued.processId, { status: 'revoked' })
    assert.equal(changed.statusCode, 200, changed.body)
    const g = await grantFor(t.app, 'gated')
    const vp = await diVp(holder, t.clock, [issued.jwts[0] ?? ''], { challenge: g.cNonce })
    expectOAuth(
      await send(g.accessToken, diVpRequest('gated', vp)),
      400,
      'invalid_proof',
      /credentialStatus: .*revoked/,
    )
    await assertUntouched(t, g.rp, g.processId)
  })

  test('a suspended shared credential → invalid_proof; once reinstated it is accepted', async () => {
    const issued = await issueTo(t.app, t.clock, holder, 'vid', VERIFIABLE_ID)
    const jwt = issued.jwts[0] ?? ''
    assert.equal(
      (await changeStatus(t.app, issued.rp, issued.processId, { status: 'suspended' })).statusCode,
      200,
    )
    const g = await grantFor(t.app, 'gated')
    expectOAuth(
      await send(
        g.accessToken,
        diVpRequest('gated', await diVp(holder, t.clock, [jwt], { challenge: g.cNonce })),
      ),
      400,
      'invalid_proof',
      /credentialStatus: .*suspended/,
    )
    assert.equal(
      (await changeStatus(t.app, issued.rp, issued.processId, { status: 'active' })).statusCode,
      200,
    )
    const ok = await send(
      g.accessToken,
      diVpRequest('gated', await diVp(holder, t.clock, [jwt], { challenge: g.cNonce })),
    )
    assert.equal(ok.statusCode, 202, ok.body)
  })

  test('an expired shared credential → invalid_proof', async () => {
    const short = (await issueTo(t.app, t.clock, holder, 'vid-short', VERIFIABLE_ID)).jwts[0] ?? ''
    t.clock.advance(86_400_000 + 1_000)
    const g = await grantFor(t.app, 'gated')
    const response = await send(
      g.accessToken,
      diVpRequest('gated', await diVp(holder, t.clock, [short], { challenge: g.cNonce })),
    )
    expectOAuth(response, 400, 'invalid_proof', /expired/)
    // a credential without expiry, presented now, still works
    const ok = await send(
      g.accessToken,
      diVpRequest('gated', await diVp(holder, t.clock, [vidJwt], { challenge: g.cNonce })),
    )
    assert.equal(ok.statusCode, 202, ok.body)
  })
})

describe('deferred credential and notification endpoints', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  const waiting = (group = 'degree') => walletAsked(t, group)
  const deferred = (accessToken: string | undefined, body: unknown) =>
    walletPost(t.app, 'deferred_credential', accessToken, body)
  const notify = (accessToken: string | undefined, body: unknown) =>
    walletPost(t.app, 'notification', accessToken, body)

  test('1.0 §9.2: 202 with the same transaction_id and interval until the submission, then the credentials once', async () => {
    const w = await waiting()
    for (let i = 0; i < 2; i++) {
      const pending = await deferred(w.accessToken, { transaction_id: w.transactionId })
      assert.equal(pending.statusCode, 202, pending.body)
      assert.equal(pending.headers['cache-control'], 'no-store')
      assert.deepEqual(pending.json(), { transaction_id: w.transactionId, interval: 5 })
    }
    const submitted = await submit(t.app, w.rp, w.processId, DEGREE)
    assert.equal(submitted.statusCode, 200)
    assert.equal(submitted.json()[0].status, 'ISSUED')
    const response = await deferred(w.accessToken, { transaction_id: w.transactionId })
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(response.headers['cache-control'], 'no-store')
    const body = response.json()
    assert.deepEqual(Object.keys(body).sort(), ['credentials', 'notification_id'])
    assert.match(body.notification_id, UUID)
    assert.equal(body.credentials[0].credential, submitted.json()[0].data[0].proof.jwt)
    assert.equal(decodeJws(body.credentials[0].credential).payload.sub, w.holder.did)
    expectOAuth(
      await deferred(w.accessToken, { transaction_id: w.transactionId }),
      400,
      'invalid_transaction_id',
      /already redeemed/,
    )
  })

  test('a draft15 template answers 400 issuance_pending with the interval instead (older wallets)', async () => {
    const w = await waiting('degree-d15')
    const pending = expectOAuth(
      await deferred(w.accessToken, { transaction_id: w.transactionId }),
      400,
      'issuance_pending',
      /not issued yet/,
    )
    assert.equal(pending.interval, 5)
    assert.equal((await submit(t.app, w.rp, w.processId, DEGREE)).statusCode, 200)
    assert.equal((await deferred(w.accessToken, { transaction_id: w.transactionId })).statusCode, 200)
  })

  test('unknown, foreign or missing transaction ids; no token', async () => {
    const w = await waiting()
    const other = await waiting()
    expectOAuth(
      await deferred(w.accessToken, { transaction_id: '00000000-0000-4000-8000-000000000000' }),
      400,
      'invalid_transaction_id',
      /unknown/,
    )
    expectOAuth(
      await deferred(w.accessToken, { transaction_id: other.transactionId }),
      400,
      'invalid_transaction_id',
      /unknown/,
    )
    expectOAuth(await deferred(w.accessToken, {}), 400, 'invalid_request', /transaction_id is required/)
    const anonymous = await deferred(undefined, { transaction_id: w.transactionId })
    expectOAuth(anonymous, 401, 'invalid_token', /access token is required/)
    assert.equal(anonymous.headers['www-authenticate'], 'Bearer')
    // a grant answered at once (200) has no transaction id
    const issued = await issueTo(t.app, t.clock, newHolder(), 'degree', DEGREE)
    expectOAuth(
      await deferred(issued.accessToken, { transaction_id: w.transactionId }),
      400,
      'invalid_transaction_id',
      /unknown/,
    )
  })

  test('a rejected process → credential_request_denied with the reason', async () => {
    const w = await waiting()
    const rejected = await rejectProcess(t.app, w.rp, w.processId, 'identity not confirmed')
    assert.equal(rejected.statusCode, 200)
    assert.equal(rejected.json().status, 'REJECTED')
    expectOAuth(
      await deferred(w.accessToken, { transaction_id: w.transactionId }),
      400,
      'credential_request_denied',
      /identity not confirmed/,
    )
  })

  test('notification: 204, the same again 204, another event → invalid_notification_id', async () => {
    const issued = await issueTo(t.app, t.clock, newHolder(), 'degree', DEGREE)
    const first = await notify(issued.accessToken, {
      notification_id: issued.notificationId,
      event: 'credential_accepted',
      event_description: 'stored',
    })
    assert.equal(first.statusCode, 204, first.body)
    assert.equal(first.body, '')
    const again = await notify(issued.accessToken, {
      notification_id: issued.notificationId,
      event: 'credential_accepted',
    })
    assert.equal(again.statusCode, 204)
    expectOAuth(
      await notify(issued.accessToken, {
        notification_id: issued.notificationId,
        event: 'credential_deleted',
      }),
      400,
      'invalid_notification_id',
      /already notified with "credential_accepted"/,
    )
  })

  test('notification after a deferred download uses its notification_id', async () => {
    const w = await waiting()
    assert.equal((await submit(t.app, w.rp, w.processId, DEGREE)).statusCode, 200)
    const { notification_id } = (await deferred(w.accessToken, { transaction_id: w.transactionId })).json()
    const response = await notify(w.accessToken, { notification_id, event: 'credential_failure' })
    assert.equal(response.statusCode, 204, response.body)
  })

  test('notification: unknown id → invalid_notification_id; bad event → invalid_notification_request', async () => {
    const issued = await issueTo(t.app, t.clock, newHolder(), 'degree', DEGREE)
    expectOAuth(
      await notify(issued.accessToken, { notification_id: 'nope', event: 'credential_accepted' }),
      400,
      'invalid_notification_id',
      /unknown/,
    )
    const pending = await waiting()
    expectOAuth(
      await notify(pending.accessToken, {
        notification_id: issued.notificationId,
        event: 'credential_accepted',
      }),
      400,
      'invalid_notification_id',
      /unknown/,
    )
    for (const event of ['credential_lost', undefined, 5]) {
      expectOAuth(
        await notify(issued.accessToken, { notification_id: issued.notificationId, event }),
        400,
        'invalid_notification_request',
        /event must be one of credential_accepted, credential_failure, credential_deleted/,
      )
    }
    expectOAuth(
      await notify(issued.accessToken, { event: 'credential_accepted' }),
      400,
      'invalid_notification_request',
      /notification_id is required/,
    )
    // the bad requests did not record anything: the first real notification still succeeds
    const ok = await notify(issued.accessToken, {
      notification_id: issued.notificationId,
      event: 'credential_deleted',
    })
    assert.equal(ok.statusCode, 204)
    const anonymous = await notify(undefined, {
      notification_id: issued.notificationId,
      event: 'credential_deleted',
    })
    expectOAuth(anonymous, 401, 'invalid_token', /access token is required/)
  })
})

describe('wallet endpoints of the other tenant', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  test('a full flow on tenant "other": its own issuer, audience and signing identity', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree', OTHER.app)
    const demoAud = proofJwt(holder, t.clock, g.cNonce)
    expectOAuth(
      await walletPost(t.app, 'credential', g.accessToken, jwtRequest('degree', demoAud), 'other'),
      400,
      'invalid_proof',
      /aud must be the credential issuer https:\/\/issuer\.example\/oid4vci\/other/,
    )
    const jwt = proofJwt(holder, t.clock, g.cNonce, { payload: { aud: issuerOf('other') } })
    const response = await walletPost(t.app, 'credential', g.accessToken, jwtRequest('degree', jwt), 'other')
    assert.equal(response.statusCode, 202, response.body)
    const admin = await tokenFor(t.app, OTHER.admin)
    const submitted = await submit(t.app, admin, g.processId, DEGREE)
    assert.equal(submitted.statusCode, 200, submitted.body)
    const demoIssued = await issueTo(t.app, t.clock, holder, 'degree', DEGREE)
    assert.notEqual(
      submitted.json()[0].data[0].issuer,
      decodeJws(demoIssued.jwts[0] ?? '').payload.iss,
      'each tenant signs with its own did:key',
    )
    // the demo tenant's RP cannot see it
    const demoRp = await tokenFor(t.app, WIDE_APP, 'degree')
    const foreign = await t.app.inject({
      url: `/admin/v1/issuanceRequests/${g.processId}`,
      headers: { authorization: `jwt ${demoRp}` },
    })
    assert.equal(foreign.statusCode, 404)
  })
})

// Issue 19: every anonymous POST …/nonce wrote a durable row (~2,400/s from one client). A c_nonce is now
// stateless (src/service/oid4vci/nonces.ts): nothing is written until it is used, and it stays single use.
describe('c_nonce: no durable write until used', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())
  const rows = () =>
    t.app.services.store.nonces.deleteExpired(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)
  const send = (jwt: string, accessToken: string) =>
    walletPost(t.app, 'credential', accessToken, jwtRequest('degree', jwt))

  test('200 nonces handed out write no row; the one used writes one; a replay is refused', async () => {
    const nonces = new Set<string>()
    for (let i = 0; i < 200; i++) nonces.add(await nonceOf(t.app))
    assert.equal(nonces.size, 200, 'each is fresh')
    assert.equal(await rows(), 0, 'nothing was written for them')
    const holder = newHolder()
    const [nonce] = nonces
    const first = await grantFor(t.app, 'degree')
    const used = await send(proofJwt(holder, t.clock, nonce), first.accessToken)
    assert.equal(used.statusCode, 202, used.body)
    const second = await grantFor(t.app, 'degree')
    expectOAuth(
      await send(proofJwt(holder, t.clock, nonce), second.accessToken),
      400,
      'invalid_nonce',
      /already used/,
    )
    assert.equal(await rows(), 1, 'the use, kept until the nonce expires')
  })

  test('a forged, altered, re-encoded or other tenant nonce is refused and writes nothing', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const genuine = await nonceOf(t.app)
    const raw = Buffer.from(genuine, 'base64url')
    const later = Buffer.from(raw)
    later.writeBigUInt64BE(later.readBigUInt64BE(0) + 3_600_000n) // a longer life, MAC unchanged
    const otherTenant = (await t.app.inject({ method: 'POST', url: '/oid4vci/other/nonce' })).json<{
      c_nonce: string
    }>().c_nonce
    const last = genuine.at(-1) ?? 'A'
    // The last character of 40 bytes in base64url carries 2 unused bits: a different letter, same bytes.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const reencoded = `${genuine.slice(0, -1)}${alphabet[alphabet.indexOf(last) ^ 1]}`
    assert.deepEqual(Buffer.from(reencoded, 'base64url'), raw, 'the same bytes, spelled otherwise')
    for (const forged of [later.toString('base64url'), otherTenant, reencoded, `${genuine}A`]) {
      expectOAuth(
        await send(proofJwt(holder, t.clock, forged), g.accessToken),
        400,
        'invalid_nonce',
        /unknown/,
      )
    }
    assert.equal(await rows(), 0)
    const ok = await send(proofJwt(holder, t.clock, genuine), g.accessToken)
    assert.equal(ok.statusCode, 202, ok.body)
  })
})
