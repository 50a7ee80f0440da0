import assert from 'node:assert/strict'
import { sign, X509Certificate } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { CompactEncrypt, calculateJwkThumbprint, importJWK } from 'jose'
import { type DcqlSessionCreated, ok, type SessionRead } from '../../../src/client/index.ts'
import { parseConfig, verificationTemplateProblem } from '../../../src/service/config/index.ts'
import { DC_API_PROTOCOLS, splitGeneralJws } from '../../../src/shared/dc-api.ts'
import { resolveDidKey } from '../../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../../src/shared/jws.ts'
import { dcApiSessionTranscript, presentMdoc } from '../../../src/shared/mdoc.ts'
import { x509Hash } from '../../../src/shared/x509.ts'
import { type DcqlService, startDcqlService, TENANT, VERIFIABLE_ID } from '../../fixtures/dcql-service.ts'
import { type OwfHolder, owfHolder, sdJwtPresentation } from '../../fixtures/owf-holder.ts'
import { auth, makeApp, tokenFor } from '../../helpers.ts'
import { recordSessionEvents, verificationConfig } from '../../verification-helpers.ts'

// OpenID4VP 1.0 Appendix A, the verifier's side: a dcql session offered over the W3C Digital Credentials
// API. The request entries (unsigned, signed, multi-signed) are checked byte by byte and every signature
// verified with src/shared/jws.ts; the answers are built by hand (SD-JWT VC presentations by @sd-jwt/sd-jwt-vc,
// mdoc DeviceResponses by src/shared/mdoc.ts under the DC API handover) and posted as the relying party's
// page would, so each test controls the origin, the audience and the encryption. The OWF holder's side is
// test/service/oid4vp/dc-api-owf.test.ts.

const RP = 'https://rp.example'
const SHOP = 'https://shop.example'
const MDL = 'org.iso.18013.5.1.mDL'
const NS = 'org.iso.18013.5.1'
const LICENCE = [
  {
    type: ['VerifiableCredential', MDL],
    credentialSubject: { [NS]: { family_name: 'Hopper', given_name: 'Grace', age_over_18: true } },
  },
]

const pid = (id: string, dcql: Record<string, unknown>) => ({
  id,
  name: `PID ${id}`,
  profile: 'dcql',
  credentialTypes: ['VerifiableId'],
  requestedFields: [{ path: '$.credentialSubject.familyName' }],
  dcql,
})
const mdl = (id: string, dcql: Record<string, unknown>) => ({
  id,
  name: `mDL ${id}`,
  profile: 'dcql',
  credentialTypes: [MDL],
  requestedFields: [{ path: '$.credentialSubject.family_name' }],
  dcql: { format: 'mso_mdoc', ...dcql },
})

let service: DcqlService
let origin: string
let holder: OwfHolder
let credential: string

before(async () => {
  service = await startDcqlService({
    verificationTemplates: [
      pid('dc-signed', { dcApi: {} }),
      pid('dc-unsigned', { dcApi: { request: 'unsigned' } }),
      pid('dc-x509', { clientIdPrefix: 'x509_hash', dcApi: { expectedOrigins: [RP, SHOP] } }),
      pid('dc-multi', { dcApi: { request: 'multisigned' } }),
      pid('dc-multi3', {
        dcApi: {
          request: 'multisigned',
          clientIdPrefixes: ['x509_san_dns', 'decentralized_identifier', 'x509_hash'],
        },
      }),
      pid('dc-jwt', {
        responseMode: 'direct_post.jwt',
        dcApi: { request: 'unsigned', expectedOrigins: [RP] },
      }),
      pid('dc-redirect', { clientIdPrefix: 'redirect_uri', dcApi: { request: 'unsigned' } }),
      mdl('mdl-dc', { dcApi: { request: 'unsigned', expectedOrigins: [RP] } }),
      mdl('mdl-dc-jwt', {
        clientIdPrefix: 'x509_hash',
        responseMode: 'direct_post.jwt',
        dcApi: { expectedOrigins: [RP] },
      }),
    ],
  })
  origin = new URL(service.server.publicUrl).origin
  holder = owfHolder('ES256')
  credential = await service.issue(holder, 'pid', VERIFIABLE_ID)
})
after(() => service?.server.close())

interface Opened {
  created: DcqlSessionCreated & { dcApi: NonNullable<DcqlSessionCreated['dcApi']> }
  /** the session's request claims as 4.7 shows them (AuthRequest): what its QR request object carries */
  qr: Record<string, unknown> & { nonce: string; client_id: string }
  /** the id of the first credential query */
  queryId: string
}

/** 4.6, then 4.7 for the request's claims (nothing fetched: RequestedAt stays null). */
async function open(templateId: string): Promise<Opened> {
  const created = ok(
    await service.rp.createSession<DcqlSessionCreated>(service.appToken, templateId),
    templateId,
  )
  assert.ok(created.dcApi, `${templateId} offers the DC API`)
  const read = (await service.rp.readSession(service.appToken, created.id)).body as SessionRead
  assert.equal(read.RequestedAt, null)
  return {
    created: created as Opened['created'],
    qr: read.AuthRequest as Opened['qr'],
    queryId: created.dcql_query.credentials[0]?.id as string,
  }
}

async function entryOf(o: Opened): Promise<{ protocol: string; data: Record<string, unknown> }> {
  const response = await fetch(o.created.dcApi.request)
  assert.equal(response.status, 200, await response.clone().text())
  assert.match(String(response.headers.get('content-type')), /^application\/json/)
  return response.json()
}

/** The request parameters of an entry, whatever its protection (signatures not verified here). */
function paramsOf(entry: { protocol: string; data: Record<string, unknown> }): Record<string, unknown> {
  if (entry.protocol === DC_API_PROTOCOLS.unsigned) return entry.data
  if (entry.protocol === DC_API_PROTOCOLS.signed) return decodeJws(String(entry.data.request)).payload
  return splitGeneralJws(entry.data.request).payload
}

const post = (o: Opened, body: unknown, contentType = 'application/json') =>
  fetch(o.created.dcApi.response, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

async function read(o: Opened): Promise<SessionRead> {
  return (await service.rp.readSession(service.appToken, o.created.id)).body as SessionRead
}

const failed = (s: SessionRead) =>
  (s.Validations?.checks ?? []).filter((c) => c.result === 'failed').map((c) => c.check)
const errors = (s: SessionRead) => s.Validations?.verificationResult.errors.join(' | ') ?? ''

/** An SD-JWT VC presentation whose KB-JWT is bound to `aud` and the session's nonce. */
const presentation = (nonce: string, aud: string) =>
  sdJwtPresentation(holder, credential, ['familyName'], { nonce, aud })

const leafKey = (x5c: unknown) =>
  new X509Certificate(Buffer.from(String((x5c as string[])[0]), 'base64')).publicKey

describe('the 4.6 answer', () => {
  test('a template with dcql.dcApi names the protocol, the two URLs and the expected origins; the QR link is unchanged', async () => {
    const o = await open('dc-signed')
    const { dcApi, id } = o.created
    assert.equal(dcApi.protocol, 'openid4vp-v1-signed')
    assert.equal(dcApi.request, `${service.server.publicUrl}/oid4vp/${TENANT}/dc-api/${id}`)
    assert.equal(dcApi.response, dcApi.request)
    assert.deepEqual(dcApi.expectedOrigins, [origin], 'default: the origin of the public URL')
    assert.match(o.created.authentication_request, /^openid4vp:\/\/\?client_id=decentralized_identifier/)
    const x509 = await open('dc-x509')
    assert.deepEqual(x509.created.dcApi.expectedOrigins, [RP, SHOP])
    const plain = ok(
      await service.rp.createSession<DcqlSessionCreated>(service.appToken, 'pid-dcql'),
      'plain',
    )
    assert.equal(plain.dcApi, undefined, 'no dcql.dcApi, no dcApi member')
  })
})

describe('GET /oid4vp/<tenant>/dc-api/<id>: the request entry (Appendix A.2, A.3)', () => {
  test('unsigned: the parameters as data, sharing the session nonce and query; no client_id, state, response_uri, expected_origins', async () => {
    const o = await open('dc-unsigned')
    const entry = await entryOf(o)
    assert.equal(entry.protocol, 'openid4vp-v1-unsigned')
    assert.deepEqual(Object.keys(entry.data).sort(), [
      'client_metadata',
      'dcql_query',
      'nonce',
      'response_mode',
      'response_type',
    ])
    assert.equal(entry.data.response_type, 'vp_token')
    assert.equal(entry.data.response_mode, 'dc_api')
    assert.equal(entry.data.nonce, o.qr.nonce)
    assert.deepEqual(entry.data.dcql_query, o.qr.dcql_query)
    assert.deepEqual(entry.data.client_metadata, o.qr.client_metadata)
  })

  test('signed: a compact request object under the template prefix (did:key), with client_id and expected_origins', async () => {
    const o = await open('dc-signed')
    const events = recordSessionEvents(service.server.app)
    const entry = await entryOf(o)
    const again = await entryOf(o)
    events.stop()
    assert.equal(entry.protocol, 'openid4vp-v1-signed')
    assert.deepEqual(Object.keys(entry.data), ['request'])
    const jwt = String(entry.data.request)
    const { header } = decodeJws(jwt)
    assert.equal(header.typ, 'oauth-authz-req+jwt')
    const { payload } = verifyJws(jwt, resolveDidKey(String(header.kid)).publicKey, { algorithms: ['EdDSA'] })
    assert.equal(payload.client_id, o.qr.client_id)
    assert.deepEqual(payload.expected_origins, [origin])
    assert.equal(payload.response_mode, 'dc_api')
    assert.equal(payload.response_type, 'vp_token')
    assert.equal(payload.nonce, o.qr.nonce)
    assert.deepEqual(payload.dcql_query, o.qr.dcql_query)
    assert.equal(payload.aud, 'https://self-issued.me/v2')
    assert.equal(typeof payload.iat, 'number')
    assert.equal(payload.exp, o.qr.exp)
    assert.equal(typeof payload.jti, 'string')
    for (const absent of ['state', 'response_uri', 'redirect_uri'])
      assert.equal(payload[absent], undefined, absent)
    assert.notEqual(decodeJws(String(again.data.request)).payload.jti, payload.jti, 'signed at each fetch')
    // the first fetch is the wallet's request_retrieved step, announced once
    assert.deepEqual(
      events.events.filter((e) => e.sessionId === o.created.id).map((e) => e.step),
      ['request_retrieved'],
    )
    assert.notEqual((await read(o)).RequestedAt, null)
  })

  test('signed under x509_hash: x5c, ES256, client_id the hash of the leaf, the configured origins', async () => {
    const o = await open('dc-x509')
    const jwt = String((await entryOf(o)).data.request)
    const { header } = decodeJws(jwt)
    const { payload } = verifyJws(jwt, leafKey(header.x5c), { algorithms: ['ES256'] })
    assert.equal(
      payload.client_id,
      `x509_hash:${x509Hash(Buffer.from(String((header.x5c as string[])[0]), 'base64'))}`,
    )
    assert.equal(payload.client_id, o.qr.client_id)
    assert.deepEqual(payload.expected_origins, [RP, SHOP])
  })

  test('multisigned: one signature per prefix, client_id only in each protected header, every signature verifies', async () => {
    for (const [template, prefixes] of [
      ['dc-multi', ['x509_hash', 'decentralized_identifier']],
      ['dc-multi3', ['x509_san_dns', 'decentralized_identifier', 'x509_hash']],
    ] as const) {
      const o = await open(template)
      const entry = await entryOf(o)
      assert.equal(entry.protocol, 'openid4vp-v1-multisigned')
      const { payload, entries } = splitGeneralJws(entry.data.request)
      assert.equal(payload.client_id, undefined, 'A.3.2: client_id is per signature')
      assert.deepEqual(payload.expected_origins, [origin])
      assert.equal(payload.nonce, o.qr.nonce)
      assert.equal(payload.response_mode, 'dc_api')
      assert.deepEqual(
        entries.map((e) => String(e.header.client_id).split(':')[0]),
        prefixes,
        `${template}: the prefixes in order`,
      )
      for (const { header, compact } of entries) {
        assert.equal(header.typ, 'oauth-authz-req+jwt')
        const key = header.x5c ? leafKey(header.x5c) : resolveDidKey(String(header.kid)).publicKey
        const verified = verifyJws(compact, key, { algorithms: ['EdDSA', 'ES256'] })
        assert.deepEqual(verified.payload, payload)
        if (String(header.client_id).startsWith('x509_hash:')) {
          assert.equal(
            header.client_id,
            `x509_hash:${x509Hash(Buffer.from(String((header.x5c as string[])[0]), 'base64'))}`,
          )
        }
        if (String(header.client_id).startsWith('decentralized_identifier:')) {
          assert.equal(header.client_id, `decentralized_identifier:${String(header.kid).split('#')[0]}`)
        }
      }
    }
  })

  test('dc_api.jwt: the session’s ephemeral key in client_metadata.jwks, as in the QR request', async () => {
    const o = await open('dc-jwt')
    const entry = await entryOf(o)
    assert.equal(entry.data.response_mode, 'dc_api.jwt')
    assert.deepEqual(entry.data.client_metadata, o.qr.client_metadata)
    const jwks = (entry.data.client_metadata as { jwks: { keys: { kid: string }[] } }).jwks
    assert.equal(jwks.keys.length, 1)
  })

  test('a redirect_uri template may offer an unsigned DC API request (no request object by link)', async () => {
    const o = await open('dc-redirect')
    const entry = await entryOf(o)
    assert.equal(entry.protocol, 'openid4vp-v1-unsigned')
    assert.equal(entry.data.client_id, undefined)
  })

  test('404 for an unknown session, another tenant’s, or one without dcql.dcApi', async () => {
    const o = await open('dc-signed')
    const plain = ok(
      await service.rp.createSession<DcqlSessionCreated>(service.appToken, 'pid-dcql'),
      'plain',
    )
    const base = `${service.server.url}/oid4vp`
    for (const url of [
      `${base}/${TENANT}/dc-api/no-such-session`,
      `${base}/other/dc-api/${o.created.id}`,
      `${base}/${TENANT}/dc-api/${plain.id}`,
    ]) {
      const response = await fetch(url)
      assert.equal(response.status, 404, url)
      assert.equal((await response.json()).error, 'not_found')
    }
    const noDcApi = await fetch(`${base}/${TENANT}/dc-api/${plain.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: { vp_token: {} } }),
    })
    assert.equal(noDcApi.status, 404)
    assert.match((await noDcApi.json()).error_description, /offers no Digital Credentials API request/)
  })
})

describe('POST /oid4vp/<tenant>/dc-api/<id>: the answer, bound to the origin (Appendix A.4)', () => {
  test('dc+sd-jwt whose KB-JWT aud is origin:<origin> → 200, VERIFIED; a replay → 409', async () => {
    const o = await open('dc-signed')
    const entry = await entryOf(o)
    const params = paramsOf(entry)
    const vp = await presentation(String(params.nonce), `origin:${origin}`)
    const answer = { origin, protocol: entry.protocol, data: { vp_token: { VerifiableId: [vp] } } }
    const response = await post(o, answer)
    assert.equal(response.status, 200, await response.clone().text())
    assert.deepEqual(await response.json(), {})
    const session = await read(o)
    assert.equal(session.Status, 'VERIFIED', errors(session))
    assert.equal(session.PresentationSubmissionFormat, 'dcql')
    const replay = await post(o, answer)
    assert.equal(replay.status, 409)
    assert.equal((await replay.json()).error, 'session_closed')
    assert.equal((await fetch(o.created.dcApi.request)).status, 409, 'a closed session hands out no request')
  })

  test('no origin posted: the first expected origin is assumed; the second one is accepted when named', async () => {
    const first = await open('dc-x509')
    const vp1 = await presentation(first.qr.nonce, `origin:${RP}`)
    const r1 = await post(first, { data: { vp_token: { VerifiableId: [vp1] } } })
    assert.equal(r1.status, 200, await r1.clone().text())
    const second = await open('dc-x509')
    const vp2 = await presentation(second.qr.nonce, `origin:${SHOP}`)
    const r2 = await post(second, { origin: SHOP, data: { vp_token: { VerifiableId: [vp2] } } })
    assert.equal(r2.status, 200, await r2.clone().text())
    assert.equal((await read(second)).Status, 'VERIFIED')
  })

  test('a KB-JWT bound to the client_id (the QR rule) → 400 invalid_presentation, REJECTED sessionBinding', async () => {
    const o = await open('dc-signed')
    const vp = await presentation(o.qr.nonce, o.qr.client_id)
    const response = await post(o, { origin, data: { vp_token: { VerifiableId: [vp] } } })
    assert.equal(response.status, 400)
    assert.equal((await response.json()).error, 'invalid_presentation')
    const session = await read(o)
    assert.equal(session.Status, 'REJECTED')
    assert.deepEqual(failed(session), ['sessionBinding'])
    assert.match(errors(session), /KB-JWT aud .* is not the origin audience .*origin:http/)
  })

  test('a KB-JWT bound to another expected origin than the page’s → REJECTED sessionBinding', async () => {
    const o = await open('dc-x509')
    const vp = await presentation(o.qr.nonce, `origin:${SHOP}`)
    const response = await post(o, { origin: RP, data: { vp_token: { VerifiableId: [vp] } } })
    assert.equal(response.status, 400)
    const session = await read(o)
    assert.deepEqual(failed(session), ['sessionBinding'])
    assert.match(errors(session), /origin:https:\/\/rp\.example/)
  })

  test('an answer posted from an origin the session does not expect → REJECTED sessionBinding naming both', async () => {
    const o = await open('dc-x509')
    const evil = 'https://evil.example'
    const vp = await presentation(o.qr.nonce, `origin:${evil}`)
    const events = recordSessionEvents(service.server.app)
    const response = await post(o, { origin: evil, data: { vp_token: { VerifiableId: [vp] } } })
    events.stop()
    assert.equal(response.status, 400)
    const body = await response.json()
    assert.equal(body.error, 'invalid_presentation')
    const session = await read(o)
    assert.equal(session.Status, 'REJECTED')
    assert.deepEqual(failed(session), ['sessionBinding'])
    assert.match(
      errors(session),
      /origin "https:\/\/evil\.example", which is not one this session expects \(https:\/\/rp\.example, https:\/\/shop\.example/,
    )
    const rejected = events.events.find((e) => e.sessionId === o.created.id && e.step === 'rejected')
    assert.deepEqual(rejected?.webhook?.verificationResult.checks, ['sessionBinding'])
  })

  test('dc_api.jwt: a JWE to the session key → VERIFIED; a plain vp_token → REJECTED securityMechanisms', async () => {
    const o = await open('dc-jwt')
    const params = paramsOf(await entryOf(o))
    const key = (params.client_metadata as { jwks: { keys: Record<string, unknown>[] } }).jwks
      .keys[0] as Record<string, unknown>
    const vp = await presentation(String(params.nonce), `origin:${RP}`)
    const jwe = await new CompactEncrypt(
      new TextEncoder().encode(JSON.stringify({ vp_token: { VerifiableId: [vp] } })),
    )
      .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM', kid: String(key.kid) })
      .encrypt(await importJWK(key as never, 'ECDH-ES'))
    const response = await post(o, { origin: RP, protocol: 'openid4vp-v1-unsigned', data: { response: jwe } })
    assert.equal(response.status, 200, await response.clone().text())
    assert.equal((await read(o)).Status, 'VERIFIED')

    const clear = await open('dc-jwt')
    const vp2 = await presentation(clear.qr.nonce, `origin:${RP}`)
    const plain = await post(clear, { origin: RP, data: { vp_token: { VerifiableId: [vp2] } } })
    assert.equal(plain.status, 400)
    assert.equal((await plain.json()).error, 'invalid_presentation')
    const session = await read(clear)
    assert.equal(session.Status, 'REJECTED')
    assert.deepEqual(failed(session), ['securityMechanisms'])
    assert.match(errors(session), /not encrypted: this session's DC API response_mode is dc_api\.jwt/)
  })

  test('what cannot be read is 400 invalid_request and the session stays PENDING', async () => {
    const o = await open('dc-jwt')
    const cases: [string, unknown, string?][] = [
      ['undecryptable JWE', { origin: RP, data: { response: 'a.b.c.d.e' } }],
      ['no data object', { origin: RP, data: 'vp_token' }],
      ['no data at all', { origin: RP }],
      ['another protocol', { protocol: 'openid4vp-v1-signed', data: { vp_token: {} } }],
      ['a protocol of another exchange', { protocol: 'org-iso-mdoc', data: { vp_token: {} } }],
      ['not JSON', '{"data": ', 'application/json'],
      ['a form', 'data=x', 'application/x-www-form-urlencoded'],
      ['a non-string origin', { origin: 42, data: { vp_token: {} } }],
      ['no vp_token', { origin: RP, data: {} }],
      [
        'vp_token JSON text beyond the limits',
        { origin: RP, data: { vp_token: `${'['.repeat(40)}${']'.repeat(40)}` } },
      ],
    ]
    for (const [what, body, type] of cases) {
      const response = await post(o, body, type)
      assert.equal(response.status, 400, what)
      assert.equal((await response.json()).error, 'invalid_request', what)
    }
    // nesting beyond 32 levels inside a JSON body is refused by the parser
    const deep = await post(o, `{"data":${'['.repeat(40)}${']'.repeat(40)}}`)
    assert.equal(deep.status, 400)
    const session = await service.rp.readSession(service.appToken, o.created.id)
    assert.equal(session.status, 202)
    assert.equal((session.body as SessionRead).Status, 'PENDING')
  })

  test('a wallet error → 400 invalid_presentation, REJECTED walletResponse', async () => {
    const o = await open('dc-unsigned')
    const response = await post(o, {
      origin,
      protocol: 'openid4vp-v1-unsigned',
      data: { error: 'access_denied', error_description: 'the user declined' },
    })
    assert.equal(response.status, 400)
    assert.equal((await response.json()).error, 'invalid_presentation')
    const session = await read(o)
    assert.equal(session.Status, 'REJECTED')
    assert.deepEqual(failed(session), ['walletResponse'])
    assert.match(errors(session), /access_denied: the user declined/)
  })
})

describe('mso_mdoc over the DC API: the OpenID4VPDCAPIHandover (Appendix B.2.6.2)', () => {
  let mdoc: string
  before(async () => {
    mdoc = await service.issue(holder, 'mdl', LICENCE)
  })

  const deviceResponse = async (handover: { origin: string; nonce: string; jwkThumbprint?: string }) =>
    presentMdoc({
      documents: [{ issuerSigned: mdoc, disclose: { [NS]: ['family_name'] } }],
      sessionTranscript: await dcApiSessionTranscript(handover),
      deviceSigner: {
        alg: 'ES256',
        sign: (bytes) =>
          new Uint8Array(sign('sha256', bytes, { key: holder.privateKey, dsaEncoding: 'ieee-p1363' })),
      },
    })

  test('dc_api: a DeviceResponse under the handover of the page origin → VERIFIED; of another origin → REJECTED sessionBinding', async () => {
    const o = await open('mdl-dc')
    const params = paramsOf(await entryOf(o))
    const good = await deviceResponse({ origin: RP, nonce: String(params.nonce) })
    const response = await post(o, { origin: RP, data: { vp_token: { [o.queryId]: [good] } } })
    assert.equal(response.status, 200, await response.clone().text())
    assert.equal((await read(o)).Status, 'VERIFIED')

    const other = await open('mdl-dc')
    const bad = await deviceResponse({ origin: SHOP, nonce: other.qr.nonce })
    const refused = await post(other, { origin: RP, data: { vp_token: { [other.queryId]: [bad] } } })
    assert.equal(refused.status, 400)
    const session = await read(other)
    assert.deepEqual(failed(session), ['sessionBinding'])
    assert.match(errors(session), /OpenID4VPDCAPIHandover of origin https:\/\/rp\.example/)
  })

  test('dc_api.jwt, signed under x509_hash: the handover carries the encryption key’s thumbprint', async () => {
    const o = await open('mdl-dc-jwt')
    const entry = await entryOf(o)
    assert.equal(entry.protocol, 'openid4vp-v1-signed')
    const params = paramsOf(entry)
    const key = (params.client_metadata as { jwks: { keys: Record<string, unknown>[] } }).jwks
      .keys[0] as Record<string, unknown>
    const vp = await deviceResponse({
      origin: RP,
      nonce: String(params.nonce),
      jwkThumbprint: await calculateJwkThumbprint(key as never, 'sha256'),
    })
    const jwe = await new CompactEncrypt(
      new TextEncoder().encode(JSON.stringify({ vp_token: { [o.queryId]: [vp] } })),
    )
      .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A128GCM', kid: String(key.kid) })
      .encrypt(await importJWK(key as never, 'ECDH-ES'))
    const response = await post(o, { origin: RP, data: { response: jwe } })
    assert.equal(response.status, 200, await response.clone().text())
    assert.equal((await read(o)).Status, 'VERIFIED')
  })
})

describe('an expired session (manual clock)', () => {
  test('GET and POST answer 410 session_expired', async () => {
    const config = structuredClone(verificationConfig()) as unknown as {
      tenants: { id: string; apiKeys: unknown[]; verificationTemplates: unknown[] }[]
    }
    const demo = config.tenants.find((t) => t.id === 'demo') as (typeof config.tenants)[number]
    const key = {
      id: 'c3c3c3c3-1111-4222-8333-444444444444',
      secret: 'dc-api-app-secret-abcdefghijkl',
      tenant: 'demo',
    }
    demo.apiKeys.push({ id: key.id, secret: key.secret, role: 'app' })
    demo.verificationTemplates.push({ ...pid('dc-short', { dcApi: {} }), sessionLifetimeSeconds: 30 })
    const t = await makeApp(parseConfig(config))
    try {
      const rp = await tokenFor(t.app, key)
      const created = await t.app.inject({
        method: 'POST',
        url: '/api/v3/sessions',
        headers: auth(rp),
        payload: { ssiConfigId: 'dc-short' },
      })
      assert.equal(created.statusCode, 201, created.body)
      const { dcApi } = created.json<DcqlSessionCreated>()
      assert.ok(dcApi)
      assert.deepEqual(dcApi.expectedOrigins, ['https://issuer.example'])
      const path = new URL(dcApi.request).pathname
      assert.equal((await t.app.inject({ method: 'GET', url: path })).statusCode, 200)
      t.clock.advance(31_000)
      const get = await t.app.inject({ method: 'GET', url: path })
      assert.equal(get.statusCode, 410)
      assert.equal(get.json().error, 'session_expired')
      const posted = await t.app.inject({ method: 'POST', url: path, payload: { data: { vp_token: {} } } })
      assert.equal(posted.statusCode, 410)
    } finally {
      await t.close()
    }
  })
})

describe('template rules (config load and portal)', () => {
  const template = (dcql: Record<string, unknown>) => ({
    profile: 'dcql',
    credentialTypes: ['VerifiableId'],
    dcql,
  })
  test('signed and multisigned need a prefix that signs; clientIdPrefixes only multisigned, two distinct; origins as a browser writes them', () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [
        { clientIdPrefix: 'redirect_uri', dcApi: {} },
        'dcql/dcApi/request',
        /signed needs a client identifier prefix whose requests are signed/,
      ],
      [
        { clientIdPrefix: 'redirect_uri', dcApi: { request: 'multisigned' } },
        'dcql/dcApi/request',
        /redirect_uri signs nothing/,
      ],
      [
        { dcApi: { request: 'signed', clientIdPrefixes: ['x509_hash', 'decentralized_identifier'] } },
        'dcql/dcApi/clientIdPrefixes',
        /only meaningful with request multisigned/,
      ],
      [
        { dcApi: { request: 'multisigned', clientIdPrefixes: ['x509_hash', 'x509_hash'] } },
        'dcql/dcApi/clientIdPrefixes',
        /at least two distinct/,
      ],
      [
        { dcApi: { expectedOrigins: ['https://rp.example/'] } },
        'dcql/dcApi/expectedOrigins/0',
        /not an origin as a browser writes it/,
      ],
      [
        { dcApi: { expectedOrigins: [RP, 'http://rp.example'] } },
        'dcql/dcApi/expectedOrigins/1',
        /not loopback/,
      ],
      [{ dcApi: { expectedOrigins: ['wss://rp.example'] } }, 'dcql/dcApi/expectedOrigins/0', /scheme wss/],
    ]
    for (const [dcql, field, message] of cases) {
      const problem = verificationTemplateProblem(template(dcql))
      assert.equal(problem?.field, field, JSON.stringify(dcql))
      assert.match(problem?.message ?? '', message)
    }
    for (const fine of [
      { clientIdPrefix: 'redirect_uri', dcApi: { request: 'unsigned' } },
      { dcApi: { expectedOrigins: ['http://localhost:8080', RP] } },
      { dcApi: { request: 'multisigned' } },
    ]) {
      assert.equal(verificationTemplateProblem(template(fine)), undefined, JSON.stringify(fine))
    }
  })

  test('the configuration file is refused naming the path', () => {
    const config = structuredClone(verificationConfig()) as unknown as {
      tenants: { id: string; verificationTemplates: unknown[] }[]
    }
    const demo = config.tenants.find((t) => t.id === 'demo') as (typeof config.tenants)[number]
    demo.verificationTemplates.push(
      pid('dc-bad', { clientIdPrefix: 'redirect_uri', dcApi: { request: 'signed' } }),
    )
    const index = demo.verificationTemplates.length - 1
    assert.throws(
      () => parseConfig(config),
      new RegExp(`/tenants/\\d+/verificationTemplates/${index}/dcql/dcApi/request: signed needs`),
    )
    demo.verificationTemplates[index] = pid('dc-bad', { dcApi: { request: 'sometimes' } })
    assert.throws(() => parseConfig(config), /dcApi\/request: must be one of unsigned, signed, multisigned/)
  })
})
