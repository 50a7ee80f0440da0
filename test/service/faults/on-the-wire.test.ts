import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../../src/service/app.ts'
import { type Exchange, FaultRegistry, startForeignOrigin } from '../../../src/service/faults/index.ts'
import { UNOBTAINABLE_TYPE, UNOBTAINABLE_VCT } from '../../../src/service/faults/requests.ts'
import type { ManualClock } from '../../../src/service/util/clock.ts'
import { getStatus, readStatusList, STATUS_VALUES } from '../../../src/shared/bitstring.ts'
import { resolveDidKey } from '../../../src/shared/did-key.ts'
import { decodeJws, JwsError, verifyJws } from '../../../src/shared/jws.ts'
import { splitSdJwt, verifySdJwtVc } from '../../../src/shared/sd-jwt.ts'
import { readTokenStatusList, tokenStatusAt } from '../../../src/shared/token-status-list.ts'
import { PRE_AUTHORIZED_GRANT } from '../../../src/shared/wire.ts'
import {
  encryptTo,
  faultsApp,
  faultsConfig,
  issueOn,
  type Opened,
  open,
  PUBLIC_URL,
  postForm,
  requestSignerKey,
  sdJwtPresentation,
  storedCredential,
} from '../../fixtures/faults-service.ts'
import { OTHER } from '../../helpers.ts'
import {
  DEGREE,
  expectOAuth,
  grantFor,
  issuerOf,
  jwtRequest,
  newHolder,
  postToken,
  proofJwt,
  submit,
  VERIFIABLE_ID,
  walletAsked,
  walletPost,
} from '../../oid4vci-helpers.ts'
import { OTHER_WIDE, readSession, submission, vpJwt } from '../../verification-helpers.ts'

// Deliberate service-side faults for wallet test plans (src/service/faults): each fault is on the wire as
// described, a tenant without a setting is untouched, and the observer records what the wallet did.

const ALGS = ['EdDSA', 'ES256', 'ES256K'] as const
const faults = new FaultRegistry()
let app: FastifyInstance
let clock: ManualClock
const holder = newHolder()
const TENANT = 'demo'

before(async () => {
  ;({ app, clock } = await faultsApp(faults))
})
after(() => app?.close())

/** Sets the demo tenant's setting for one test and forgets it (and its exchanges) afterwards. */
function withSetting(setting: Parameters<FaultRegistry['set']>[1], run: () => Promise<void>) {
  return async () => {
    faults.set(TENANT, setting)
    try {
      await run()
    } finally {
      faults.delete(TENANT)
    }
  }
}

const jwtPart = (credential: string) => splitSdJwt(credential).jwt
const issuerKeyOf = (jwt: string) => resolveDidKey(String(decodeJws(jwt).header.kid)).publicKey
const signatureFails = (jwt: string, key = issuerKeyOf(jwt)) =>
  assert.throws(
    () => verifyJws(jwt, key, { algorithms: ALGS }),
    (e: unknown) => e instanceof JwsError && e.reason === 'bad_signature',
  )
const verifiesWithIssuer = (jwt: string) => verifyJws(jwt, issuerKeyOf(jwt), { algorithms: ALGS }).payload
const seconds = () => Math.floor(clock.now() / 1000)

async function metadata(tenant = TENANT) {
  const response = await app.inject({ url: `/oid4vci/${tenant}/.well-known/openid-credential-issuer` })
  assert.equal(response.statusCode, 200)
  return response.json<{
    credential_issuer: string
    nonce_endpoint: string
    credential_endpoint: string
    credential_configurations_supported: Record<string, Record<string, unknown>>
  }>()
}

describe('buildApp and the registry', () => {
  test('faults are refused in a production configuration; without them nothing is recorded', async () => {
    await assert.rejects(
      buildApp({
        config: faultsConfig('production'),
        faults: new FaultRegistry(),
        publicUrl: () => PUBLIC_URL,
      }),
      /webhooks\.mode "test".*never a production configuration/,
    )
    const plain = await buildApp({ config: faultsConfig('production'), publicUrl: () => PUBLIC_URL })
    try {
      const response = await plain.inject({ url: '/oid4vci/demo/.well-known/openid-credential-issuer' })
      assert.equal(response.statusCode, 200)
      assert.ok(response.json().credential_configurations_supported.degree.credential_metadata)
    } finally {
      await plain.close()
    }
  })

  test('a tenant without a setting behaves as before, while another tenant breaks a rule', async () => {
    faults.set(TENANT, { fault: 'credential-foreign-signature', issuance: 'draft15' })
    try {
      const other = await metadata('other')
      assert.equal(other.credential_issuer, issuerOf('other'))
      assert.ok(other.credential_configurations_supported.degree?.credential_metadata)
      const issued = await issueOn(app, clock, holder, 'degree', DEGREE, OTHER.app)
      assert.equal(typeof issued.cNonce, 'string')
      assert.equal(issued.credential, await storedCredential(app, issued.processId))
      verifiesWithIssuer(issued.credential)
      const session = await open(app, 'other-check', OTHER_WIDE)
      verifyJws(session.requestJwt, requestSignerKey(session.header), { algorithms: ALGS })
      assert.equal(session.request.client_id, session.link.client_id)
      assert.equal(typeof session.request.nonce, 'string')
      assert.ok(Number(session.request.exp) > seconds())
      // The other tenant's exchanges are recorded under its own name, none under the faulty one.
      assert.ok(faults.exchanges('other').length >= 5)
      assert.equal(faults.exchanges(TENANT).length, 0)
    } finally {
      faults.delete(TENANT)
      faults.delete('other')
    }
  })
})

describe('issuance settings and faults', () => {
  test(
    'draft15: no credential_metadata (display stays), the token answer keeps c_nonce',
    withSetting({ issuance: 'draft15' }, async () => {
      const configurations = (await metadata()).credential_configurations_supported
      for (const configuration of Object.values(configurations)) {
        assert.equal(configuration.credential_metadata, undefined)
        assert.ok(Array.isArray(configuration.display))
      }
      const grant = await grantFor(app, 'degree')
      assert.equal(typeof grant.cNonce, 'string')
    }),
  )

  test(
    'metadata-issuer-mismatch: credential_issuer differs from the offer; a careless wallet still gets its credential',
    withSetting({ fault: 'metadata-issuer-mismatch' }, async () => {
      const meta = await metadata()
      assert.equal(meta.credential_issuer, `${issuerOf(TENANT)}/other`)
      assert.equal(meta.credential_endpoint, `${issuerOf(TENANT)}/credential`)
      const issued = await issueOn(app, clock, holder, 'degree', DEGREE)
      assert.equal(issued.offer.credential_issuer, issuerOf(TENANT))
      verifiesWithIssuer(issued.credential)
    }),
  )

  test(
    'token-without-c-nonce: no c_nonce in the token answer; nonce_endpoint announced; a nonce is still required',
    withSetting({ fault: 'token-without-c-nonce', issuance: 'draft15' }, async () => {
      assert.equal((await metadata()).nonce_endpoint, `${issuerOf(TENANT)}/nonce`)
      const offer = await grantFor(app, 'degree')
      assert.equal(offer.cNonce, undefined)
      const token = faults.exchanges(TENANT).find((x) => x.endpoint === 'token')
      assert.equal(token?.status, 200)
      await submit(app, offer.rp, offer.processId, DEGREE)
      const guessed = await walletPost(
        app,
        'credential',
        offer.accessToken,
        jwtRequest('degree', proofJwt(holder, clock, 'not-a-nonce-of-ours')),
      )
      const body = expectOAuth(guessed, 400, 'invalid_nonce')
      assert.equal(typeof body.c_nonce, 'string', 'invalid_nonce carries a fresh c_nonce')
      const ok = await walletPost(
        app,
        'credential',
        offer.accessToken,
        jwtRequest('degree', proofJwt(holder, clock, String(body.c_nonce))),
      )
      assert.equal(ok.statusCode, 200, ok.body)
    }),
  )

  test(
    'credential-foreign-signature: jwt_vc_json and dc+sd-jwt fail with the issuer key; header and payload unchanged',
    withSetting({ fault: 'credential-foreign-signature' }, async () => {
      for (const [group, content] of [
        ['degree', DEGREE],
        ['pid', VERIFIABLE_ID],
      ] as const) {
        const issued = await issueOn(app, clock, holder, group, content)
        const genuine = await storedCredential(app, issued.processId)
        const [header, payload] = jwtPart(issued.credential).split('.')
        const [genuineHeader, genuinePayload] = jwtPart(genuine).split('.')
        assert.equal(header, genuineHeader)
        assert.equal(payload, genuinePayload)
        verifiesWithIssuer(jwtPart(genuine))
        signatureFails(jwtPart(issued.credential))
      }
    }),
  )

  test(
    'credential-other-holder: bound to a fresh key, re-signed by the issuer',
    withSetting({ fault: 'credential-other-holder' }, async () => {
      const degree = await issueOn(app, clock, holder, 'degree', DEGREE)
      const payload = verifiesWithIssuer(degree.credential) as {
        sub: string
        vc: { credentialSubject: { id: string } }
      }
      assert.notEqual(payload.sub, holder.did)
      assert.match(payload.sub, /^did:key:/)
      assert.equal(payload.vc.credentialSubject.id, payload.sub)
      const pid = await issueOn(app, clock, holder, 'pid', VERIFIABLE_ID)
      const claims = verifiesWithIssuer(jwtPart(pid.credential)) as { cnf: { jwk: { x: string } } }
      assert.notEqual(claims.cnf.jwk.x, holder.publicJwk.x)
      // The disclosures still match: only the binding changed.
      await verifySdJwtVc(pid.credential, {
        issuerKey: (header) => resolveDidKey(String(header.kid)).publicKey,
        algorithms: ALGS,
        now: clock.now(),
      })
    }),
  )

  test(
    'sd-jwt-tampered-disclosure: a disclosure is not in _sd, the issuer signature holds; refused for jwt_vc_json',
    withSetting({ fault: 'sd-jwt-tampered-disclosure' }, async () => {
      const pid = await issueOn(app, clock, holder, 'pid', VERIFIABLE_ID)
      verifiesWithIssuer(jwtPart(pid.credential))
      await assert.rejects(
        verifySdJwtVc(pid.credential, {
          issuerKey: (header) => resolveDidKey(String(header.kid)).publicKey,
          algorithms: ALGS,
          now: clock.now(),
        }),
        /not referenced by the issuer-signed JWT/,
      )
      const refused = await grantFor(app, 'degree').catch((e: Error) => e)
      assert.match(String(refused), /409.*sd-jwt-tampered-disclosure applies to dc\+sd-jwt credentials only/)
    }),
  )

  test(
    'credential-expired: exp (and expirationDate) an hour ago, re-signed by the issuer',
    withSetting({ fault: 'credential-expired' }, async () => {
      const degree = await issueOn(app, clock, holder, 'degree', DEGREE)
      const payload = verifiesWithIssuer(degree.credential) as {
        exp: number
        iat: number
        nbf: number
        vc: { expirationDate: string }
      }
      assert.equal(payload.exp, seconds() - 3600)
      assert.ok(payload.iat < payload.exp && payload.nbf < payload.exp)
      assert.ok(Date.parse(payload.vc.expirationDate) < clock.now())
      const pid = await issueOn(app, clock, holder, 'pid', VERIFIABLE_ID)
      const claims = verifiesWithIssuer(jwtPart(pid.credential)) as { exp: number }
      assert.equal(claims.exp, seconds() - 3600)
    }),
  )

  test(
    'credential-revoked: the bitstring list and the token status list say revoked when the wallet gets it',
    withSetting({ fault: 'credential-revoked' }, async () => {
      const degree = await issueOn(app, clock, holder, 'degree', DEGREE)
      const entry = (
        verifiesWithIssuer(degree.credential) as { vc: { credentialStatus: Record<string, string> } }
      ).vc.credentialStatus
      const list = await app.inject({ url: new URL(String(entry.statusListCredential)).pathname })
      const bits = readStatusList(decodeJws(list.body).payload).bits
      assert.equal(getStatus(bits, Number(entry.statusListIndex)), STATUS_VALUES.revoked)
      const pid = await issueOn(app, clock, holder, 'pid', VERIFIABLE_ID)
      const status = (
        decodeJws(jwtPart(pid.credential)).payload as {
          status: { status_list: { idx: number; uri: string } }
        }
      ).status.status_list
      const token = await app.inject({ url: new URL(status.uri).pathname })
      assert.equal(tokenStatusAt(readTokenStatusList(decodeJws(token.body).payload), status.idx), 1)
      const seen = faults.exchanges(TENANT).filter((x) => x.endpoint === 'status-list')
      assert.deepEqual(
        seen.map((x) => x.status),
        [200, 200],
      )
    }),
  )

  test(
    'the deferred endpoint hands out the faulty credential too',
    withSetting({ fault: 'credential-foreign-signature' }, async () => {
      const asked = await walletAsked({ app, clock }, 'degree', holder)
      assert.equal((await submit(app, asked.rp, asked.processId, DEGREE)).statusCode, 200)
      const response = await walletPost(app, 'deferred_credential', asked.accessToken, {
        transaction_id: asked.transactionId,
      })
      assert.equal(response.statusCode, 200, response.body)
      const credential = response.json<{ credentials: { credential: string }[] }>().credentials[0]
        ?.credential as string
      signatureFails(credential)
      verifiesWithIssuer(await storedCredential(app, asked.processId))
    }),
  )
})

describe('the exchange observer (issuance)', () => {
  test(
    'one exchange per request with status, OAuth error, proofNonce and notification',
    withSetting({}, async () => {
      await metadata()
      await app.inject({ url: `/.well-known/oauth-authorization-server/oid4vci/${TENANT}` })
      const grant = await grantFor(app, 'degree')
      await submit(app, grant.rp, grant.processId, DEGREE)
      const noNonce = await walletPost(
        app,
        'credential',
        grant.accessToken,
        jwtRequest('degree', proofJwt(holder, clock, undefined)),
      )
      expectOAuth(noNonce, 400, 'invalid_nonce')
      const ok = await walletPost(
        app,
        'credential',
        grant.accessToken,
        jwtRequest('degree', proofJwt(holder, clock, grant.cNonce)),
      )
      assert.equal(ok.statusCode, 200)
      const notified = await walletPost(app, 'notification', grant.accessToken, {
        notification_id: ok.json().notification_id,
        event: 'credential_accepted',
      })
      assert.equal(notified.statusCode, 204)
      const reused = await postToken(app, {
        grant_type: PRE_AUTHORIZED_GRANT,
        'pre-authorized_code': grant.code,
      })
      expectOAuth(reused, 400, 'invalid_grant')
      const seen = faults.exchanges(TENANT).map(({ at: _at, ...x }) => x)
      assert.deepEqual(seen, [
        { endpoint: 'issuer-metadata', method: 'GET', status: 200, origin: 'public' },
        { endpoint: 'authorization-server-metadata', method: 'GET', status: 200, origin: 'public' },
        { endpoint: 'offer', method: 'GET', status: 200, origin: 'public' },
        { endpoint: 'token', method: 'POST', status: 200, origin: 'public' },
        {
          endpoint: 'credential',
          method: 'POST',
          status: 400,
          error: 'invalid_nonce',
          proofNonce: false,
          origin: 'public',
        },
        { endpoint: 'credential', method: 'POST', status: 200, proofNonce: true, origin: 'public' },
        {
          endpoint: 'notification',
          method: 'POST',
          status: 204,
          notification: 'credential_accepted',
          origin: 'public',
        },
        { endpoint: 'token', method: 'POST', status: 400, error: 'invalid_grant', origin: 'public' },
      ] satisfies Omit<Exchange, 'at'>[])
      assert.ok(faults.exchanges(TENANT).every((x) => x.at === clock.now()))
    }),
  )
})

// --- Presentation -------------------------------------------------------------------------------------

let sdJwt: string
let degreeJwt: string

/** A careless wallet's answer: the held credential for the session, by the session's own rules. */
async function answer(
  o: Opened,
  options: {
    nonce?: string
    aud?: string
    via?: (fields: Record<string, string>) => Promise<{ statusCode: number; body: string }>
  } = {},
) {
  const nonce = options.nonce ?? String(o.request.nonce)
  const aud = options.aud ?? o.request.client_id
  let fields: Record<string, string>
  if (o.request.presentation_definition) {
    const definition = o.request.presentation_definition as {
      id: string
      input_descriptors: { id: string }[]
    }
    fields = {
      vp_token: vpJwt(holder, clock, { nonce, client_id: aud }, [degreeJwt]),
      presentation_submission: JSON.stringify(
        submission(definition.id, [{ id: definition.input_descriptors[0]?.id as string }]),
      ),
      state: o.request.state,
    }
  } else {
    const vpToken = { VerifiableId: [await sdJwtPresentation(holder, clock, sdJwt, nonce, aud)] }
    fields =
      o.request.response_mode === 'direct_post.jwt'
        ? { response: await encryptTo(o.request, { state: o.request.state, vp_token: vpToken }) }
        : { state: o.request.state, vp_token: JSON.stringify(vpToken) }
  }
  return options.via ? options.via(fields) : postForm(app, o.responsePath, fields)
}

const statusOf = async (o: Opened) => (await readSession(app, o.rp, o.id)).body.Status
const responses = () => faults.exchanges(TENANT).filter((x) => x.endpoint === 'response')

describe('presentation faults', () => {
  before(async () => {
    sdJwt = (await issueOn(app, clock, holder, 'pid', VERIFIABLE_ID)).credential
    degreeJwt = (await issueOn(app, clock, holder, 'degree', DEGREE)).credential
  })

  test('nonce-reused before any verified answer is refused at session creation', async () => {
    faults.set(TENANT, { fault: 'nonce-reused' })
    try {
      const previous = faults.lastAnsweredNonce
      faults.lastAnsweredNonce = undefined
      await assert.rejects(open(app, 'degree-check'), /409.*nonce-reused.*no wallet has answered/)
      faults.lastAnsweredNonce = previous
    } finally {
      faults.delete(TENANT)
    }
  })

  test(
    'no fault: the genuine request verifies, a verified answer sets lastAnsweredNonce, direct_post.jwt is seen',
    withSetting({}, async () => {
      const pe = await open(app, 'degree-check')
      verifyJws(pe.requestJwt, requestSignerKey(pe.header), { algorithms: ALGS })
      assert.equal((await answer(pe)).statusCode, 200)
      assert.equal(faults.lastAnsweredNonce, pe.request.nonce)
      const jwe = await open(app, 'pid-check')
      assert.equal(jwe.request.response_mode, 'direct_post.jwt')
      assert.equal((await answer(jwe)).statusCode, 200)
      assert.equal(await statusOf(jwe), 'VERIFIED')
      assert.equal(faults.lastAnsweredNonce, jwe.request.nonce)
      // A refused answer inside a JWE (wrong state) is still seen to carry a vp_token.
      const refused = await open(app, 'pid-check')
      const bad = await postForm(app, refused.responsePath, {
        response: await encryptTo(refused.request, { state: 'wrong', vp_token: { VerifiableId: ['x'] } }),
      })
      assert.equal(bad.statusCode, 400)
      const seen = responses().map(({ at: _at, ...x }) => x)
      assert.deepEqual(seen, [
        { endpoint: 'response', method: 'POST', status: 200, origin: 'public', vpToken: true },
        { endpoint: 'response', method: 'POST', status: 200, origin: 'public', vpToken: true },
        {
          endpoint: 'response',
          method: 'POST',
          status: 400,
          origin: 'public',
          vpToken: true,
          error: 'invalid_request',
        },
      ])
      assert.deepEqual(
        faults
          .exchanges(TENANT)
          .filter((x) => x.endpoint === 'request')
          .map((x) => [x.method, x.status]),
        [
          ['GET', 200],
          ['GET', 200],
          ['GET', 200],
        ],
      )
    }),
  )

  test(
    'request-foreign-signature: kid / x5c unchanged, the signature fails with the client key; a careless answer is VERIFIED',
    withSetting({ fault: 'request-foreign-signature' }, async () => {
      for (const template of ['degree-check', 'pid-did', 'pid-dns']) {
        const o = await open(app, template)
        assert.ok(o.header.kid || o.header.x5c, template)
        if (template !== 'pid-dns')
          assert.equal(
            resolveDidKey(String(o.header.kid)).did,
            o.request.client_id.replace(/^decentralized_identifier:/, ''),
          )
        signatureFails(o.requestJwt, requestSignerKey(o.header))
        assert.equal((await answer(o)).statusCode, 200, template)
        assert.equal(await statusOf(o), 'VERIFIED')
      }
      await assert.rejects(open(app, 'pid-redirect'), /409.*request-foreign-signature.*redirect_uri/)
    }),
  )

  test(
    'client-id-mismatch: the request object names another client of the same kind, signed with the real key',
    withSetting({ fault: 'client-id-mismatch' }, async () => {
      const expected: Record<string, RegExp> = {
        'degree-check': /^did:key:/,
        'pid-did': /^decentralized_identifier:did:key:/,
        'pid-dns': /^x509_san_dns:other\.invalid$/,
        'pid-hash': /^x509_hash:/,
      }
      for (const [template, shape] of Object.entries(expected)) {
        const o = await open(app, template)
        verifyJws(o.requestJwt, requestSignerKey(o.header), { algorithms: ALGS })
        assert.match(o.request.client_id, shape)
        assert.notEqual(o.request.client_id, o.link.client_id, template)
        if (template === 'degree-check') assert.equal(o.request.iss, o.request.client_id)
      }
      // request_uri_method=post signs anew, with the same fault.
      const posted = await open(app, 'pid-hash')
      const again = await postForm(app, new URL(posted.link.request_uri as string).pathname, {
        wallet_nonce: 'n',
      })
      const claims = decodeJws(again.body).payload
      assert.equal(claims.wallet_nonce, 'n')
      assert.notEqual(claims.client_id, posted.link.client_id)
    }),
  )

  test(
    'nonce-missing: no nonce in the request object (or the redirect_uri link)',
    withSetting({ fault: 'nonce-missing' }, async () => {
      for (const template of ['degree-check', 'pid-did', 'pid-redirect']) {
        const o = await open(app, template)
        assert.equal(o.request.nonce, undefined, template)
        assert.equal(typeof o.request.state, 'string')
      }
    }),
  )

  test(
    'nonce-reused: the request and the session use the nonce of the last verified answer',
    withSetting({ fault: 'nonce-reused' }, async () => {
      const reused = faults.lastAnsweredNonce
      assert.ok(reused)
      const o = await open(app, 'pid-did')
      assert.equal(o.request.nonce, reused)
      assert.equal((await answer(o)).statusCode, 200)
      assert.equal(await statusOf(o), 'VERIFIED')
    }),
  )

  test(
    'request-expired: exp a minute ago, iat/nbf six; the session itself still answers',
    withSetting({ fault: 'request-expired' }, async () => {
      for (const template of ['degree-check', 'pid-dns']) {
        const o = await open(app, template)
        verifyJws(o.requestJwt, requestSignerKey(o.header), { algorithms: ALGS })
        assert.equal(o.request.exp, seconds() - 60)
        assert.equal(o.request.iat, seconds() - 360)
        assert.equal(o.request.nbf, seconds() - 360)
        assert.equal((await answer(o)).statusCode, 200)
        assert.equal(await statusOf(o), 'VERIFIED')
      }
    }),
  )

  test('response-uri-foreign-origin: the response_uri is on the foreign listener, which reaches the session', async () => {
    faults.set(TENANT, { fault: 'response-uri-foreign-origin' })
    const foreign = await startForeignOrigin(app, { host: '127.0.0.1' })
    try {
      await assert.rejects(open(app, 'pid-dns'), /409.*no foreign origin is set/)
      // Another port of the public host is no other origin for x509_san_dns (it compares host names).
      faults.foreignOrigin = 'https://issuer.example:8443'
      await assert.rejects(open(app, 'pid-dns'), /409.*x509_san_dns compares host names/)
      faults.foreignOrigin = foreign.url
      await assert.rejects(open(app, 'pid-did'), /409.*only the x509_san_dns and redirect_uri/)
      await assert.rejects(open(app, 'degree-check'), /409/)
      const dns = await open(app, 'pid-dns')
      assert.equal(dns.request.response_uri, `${foreign.url}${dns.responsePath}`)
      const redirect = await open(app, 'pid-redirect')
      assert.equal(redirect.link.response_uri, `${foreign.url}${redirect.responsePath}`)
      assert.equal(redirect.link.client_id, `redirect_uri:${PUBLIC_URL}${redirect.responsePath}`)
      for (const o of [dns, redirect]) {
        const posted = await answer(o, {
          via: async (fields) => {
            const response = await fetch(String(o.request.response_uri ?? o.link.response_uri), {
              method: 'POST',
              body: new URLSearchParams(fields),
            })
            return { statusCode: response.status, body: await response.text() }
          },
        })
        assert.equal(posted.statusCode, 200, posted.body)
        assert.equal(await statusOf(o), 'VERIFIED')
      }
      assert.deepEqual(
        responses().map((x) => [x.origin, x.vpToken, x.status]),
        [
          ['foreign', true, 200],
          ['foreign', true, 200],
        ],
      )
    } finally {
      faults.foreignOrigin = undefined
      await foreign.close()
      faults.delete(TENANT)
    }
  })

  test(
    'unknown-client-id-prefix: link and request object say vc_harness_unknown:<did>, signed by that did',
    withSetting({ fault: 'unknown-client-id-prefix' }, async () => {
      for (const template of ['pid-did', 'pid-hash']) {
        const o = await open(app, template)
        assert.match(o.link.client_id as string, /^vc_harness_unknown:did:key:/)
        assert.equal(o.request.client_id, o.link.client_id)
        assert.equal(
          resolveDidKey(String(o.header.kid)).did,
          o.request.client_id.slice('vc_harness_unknown:'.length),
        )
        verifyJws(o.requestJwt, requestSignerKey(o.header), { algorithms: ALGS })
      }
      const o = await open(app, 'pid-hash')
      const posted = await postForm(app, new URL(o.link.request_uri as string).pathname, {
        wallet_nonce: 'n',
      })
      assert.equal(posted.statusCode, 200, posted.body)
      verifyJws(posted.body, requestSignerKey(decodeJws(posted.body).header), { algorithms: ALGS })
      assert.equal((await answer(o)).statusCode, 200)
      assert.equal(await statusOf(o), 'VERIFIED')
      await assert.rejects(open(app, 'degree-check'), /409.*prefixes exist in the dcql profile only/)
    }),
  )

  test(
    'query-unsatisfiable: nobody holds what is asked; a wallet error answer is recorded',
    withSetting({ fault: 'query-unsatisfiable' }, async () => {
      const pe = await open(app, 'degree-check')
      const descriptor = (
        pe.request.presentation_definition as {
          input_descriptors: { constraints: { fields: { filter?: { const?: string } }[] } }[]
        }
      ).input_descriptors[0]
      assert.equal(descriptor?.constraints.fields[0]?.filter?.const, UNOBTAINABLE_TYPE)
      const dcql = await open(app, 'pid-did')
      const query = dcql.request.dcql_query as { credentials: { meta: { vct_values: string[] } }[] }
      assert.deepEqual(query.credentials[0]?.meta.vct_values, [UNOBTAINABLE_VCT])
      const refused = await postForm(app, dcql.responsePath, {
        state: dcql.request.state,
        error: 'access_denied',
        error_description: 'no matching credential',
      })
      assert.equal(refused.statusCode, 200)
      assert.equal(await statusOf(dcql), 'REJECTED')
      const [seen] = responses()
      assert.equal(seen?.vpToken, false)
      assert.equal(seen?.walletError, 'access_denied')
      assert.equal(seen?.walletErrorDescription, 'no matching credential')
    }),
  )

  test(
    'format-not-offered: the held credential asked for in another format',
    withSetting({ fault: 'format-not-offered' }, async () => {
      const dcql = await open(app, 'pid-did')
      const query = dcql.request.dcql_query as {
        credentials: { format: string; meta: { type_values: string[][] }; claims: { path: string[] }[] }[]
      }
      assert.equal(query.credentials[0]?.format, 'jwt_vc_json')
      assert.deepEqual(query.credentials[0]?.meta.type_values, [['VerifiableCredential', 'VerifiableId']])
      assert.deepEqual(query.credentials[0]?.claims[0]?.path, ['credentialSubject', 'familyName'])
      const formats = (dcql.request.client_metadata as { vp_formats_supported: Record<string, unknown> })
        .vp_formats_supported
      assert.deepEqual(Object.keys(formats), ['jwt_vc_json'])
      const pe = await open(app, 'degree-check')
      const format = (pe.request.presentation_definition as { format: Record<string, unknown> }).format
      assert.deepEqual(Object.keys(format).sort(), ['ldp_vc', 'ldp_vp'])
    }),
  )
})
