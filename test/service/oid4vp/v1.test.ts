import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { CompactEncrypt, importJWK } from 'jose'
import { type DcqlSessionCreated, ok, type SessionRead } from '../../../src/client/index.ts'
import { verificationTemplateProblem } from '../../../src/service/config/index.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../../src/shared/did-key.ts'
import { decodeJws } from '../../../src/shared/jws.ts'
import { certificatePem, generateTestCa } from '../../../src/shared/x509.ts'
import { type DcqlService, startDcqlService, VERIFIABLE_ID } from '../../fixtures/dcql-service.ts'
import { type OwfHolder, owfHolder, sdJwtPresentation } from '../../fixtures/owf-holder.ts'
import { fanOutSdJwt, withKeyBinding } from '../../fixtures/sd-jwt-attacks.ts'

// The dcql profile's protocol edges, by hand over HTTP (the happy paths with an independent wallet are in
// test/service/oid4vp/owf-interop.test.ts): request_uri_method=post (OpenID4VP 1.0 §5.10), direct_post.jwt (§8.3), the
// vp_token object (§8.1), SD-JWT VC presentations that break one rule each, and the template rules.

let service: DcqlService
let holder: OwfHolder
let credential: string

before(async () => {
  service = await startDcqlService()
  holder = owfHolder('ES256')
  credential = await service.issue(holder, 'pid', VERIFIABLE_ID)
})
after(() => service?.server.close())

interface Opened {
  id: string
  created: DcqlSessionCreated
  params: Record<string, string>
  /** The request object's claims (fetched by GET), or the link's parameters for redirect_uri. */
  request: Record<string, unknown> & { nonce: string; client_id: string; state: string; response_uri: string }
}

async function open(templateId: string): Promise<Opened> {
  const created = ok(
    await service.rp.createSession<DcqlSessionCreated>(service.appToken, templateId),
    templateId,
  )
  const params = Object.fromEntries(new URL(created.authentication_request).searchParams)
  const request = params.request_uri
    ? decodeJws(await (await fetch(params.request_uri)).text()).payload
    : (params as Record<string, unknown>)
  return { id: created.id, created, params, request: request as Opened['request'] }
}

const form = (url: string, fields: Record<string, string>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  })

async function read(id: string): Promise<SessionRead> {
  return (await service.rp.readSession(service.appToken, id)).body as SessionRead
}

/** A correct SD-JWT VC presentation for this session, unless `change` breaks it. */
const present = (
  o: Opened,
  disclose = ['familyName'],
  binding: Partial<{ nonce: string; aud: string; iat: number }> = {},
) =>
  sdJwtPresentation(holder, credential, disclose, {
    nonce: o.request.nonce,
    aud: o.request.client_id,
    ...binding,
  })

async function encryptTo(o: Opened, payload: unknown, enc = 'A128GCM', jwk?: Record<string, unknown>) {
  const metadata = o.request.client_metadata as { jwks: { keys: Record<string, unknown>[] } }
  const key = jwk ?? (metadata.jwks.keys[0] as Record<string, unknown>)
  return new CompactEncrypt(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'ECDH-ES', enc, kid: String(key.kid) })
    .encrypt(await importJWK(key as never, 'ECDH-ES'))
}

const failedChecks = (s: SessionRead) =>
  s.Validations?.checks.filter((c) => c.result === 'failed').map((c) => c.check)
const errors = (s: SessionRead) => s.Validations?.verificationResult.errors.join(' | ') ?? ''

describe('request_uri_method=post (OpenID4VP 1.0 §5.10)', () => {
  test('the request object is signed anew with the wallet_nonce; GET still serves it without one', async () => {
    const o = await open('pid-x509-hash')
    assert.equal(o.params.request_uri_method, 'post')
    const response = await form(o.params.request_uri as string, {
      wallet_nonce: 'wallet-nonce-1',
      wallet_metadata: JSON.stringify({ request_object_signing_alg_values_supported: ['ES256'] }),
    })
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('content-type'), 'application/oauth-authz-req+jwt')
    const { header, payload } = decodeJws(await response.text())
    assert.equal(payload.wallet_nonce, 'wallet-nonce-1')
    assert.equal(header.alg, 'ES256')
    assert.ok(Array.isArray(header.x5c), 'x509_hash signs with an x5c chain')
    assert.equal(o.request.wallet_nonce, undefined)
    assert.equal((await read(o.id)).RequestedAt !== null, true)
  })

  test('a wallet_nonce over 512 characters is a 400; one of 512 is echoed (issue 30: bounded echoes)', async () => {
    const o = await open('pid-x509-hash')
    const long = await form(o.params.request_uri as string, { wallet_nonce: 'n'.repeat(300_000) })
    assert.equal(long.status, 400)
    const body = await long.json()
    assert.equal(body.error, 'invalid_request')
    assert.match(body.error_description, /wallet_nonce is 300000 characters long; at most 512 are accepted/)
    const fits = await form(o.params.request_uri as string, { wallet_nonce: 'n'.repeat(512) })
    assert.equal(fits.status, 200)
    assert.equal(decodeJws(await fits.text()).payload.wallet_nonce, 'n'.repeat(512))
  })

  test('a wallet that cannot verify our algorithm, or sends unreadable metadata, gets a 400 naming it', async () => {
    const o = await open('pid-x509-hash')
    const unsupported = await form(o.params.request_uri as string, {
      wallet_metadata: JSON.stringify({ request_object_signing_alg_values_supported: ['EdDSA'] }),
    })
    assert.equal(unsupported.status, 400)
    assert.match((await unsupported.json()).error_description, /does not include ES256/)
    const garbled = await form(o.params.request_uri as string, { wallet_metadata: '{not json' })
    assert.equal(garbled.status, 400)
    assert.match((await garbled.json()).error_description, /wallet_metadata is not a JSON object/)
  })

  test('a PE session refuses the POST; a redirect_uri session has no request object', async () => {
    const pe = ok(await service.rp.createSession(service.appToken, 'degree-check'), 'pe session')
    const requestUri = new URL(pe.authentication_request).searchParams.get('request_uri') as string
    const posted = await form(requestUri, { wallet_nonce: 'x' })
    assert.equal(posted.status, 400)
    assert.match(
      (await posted.json()).error_description,
      /draft 20 profile \(pe\): fetch its request object with GET/,
    )
    const byValue = await open('pid-redirect')
    const fetched = await fetch(byValue.request.response_uri.replace('/responses/', '/requests/'))
    assert.equal(fetched.status, 404)
    assert.match((await fetched.json()).error_description, /sends its request by value/)
  })
})

describe('direct_post.jwt (OpenID4VP 1.0 §8.3)', () => {
  test('client_metadata offers an ephemeral P-256 ECDH-ES key and A128GCM/A256GCM; each session its own', async () => {
    const [a, b] = [await open('pid-dcql-post-jwe'), await open('pid-dcql-post-jwe')]
    const metadata = a.request.client_metadata as Record<
      string,
      { keys?: Record<string, unknown>[] } & unknown
    >
    const key = (metadata.jwks as { keys: Record<string, unknown>[] }).keys[0] as Record<string, unknown>
    assert.deepEqual(
      [key.kty, key.crv, key.use, key.alg, key.d],
      ['EC', 'P-256', 'enc', 'ECDH-ES', undefined],
    )
    assert.deepEqual(metadata.encrypted_response_enc_values_supported, ['A128GCM', 'A256GCM'])
    const other = (b.request.client_metadata as { jwks: { keys: { x: string }[] } }).jwks.keys[0]
    assert.notEqual(other?.x, key.x)
  })

  test('a plain vp_token where encryption was asked is REJECTED under securityMechanisms', async () => {
    const o = await open('pid-dcql-post-jwe')
    const response = await form(o.request.response_uri, {
      state: o.request.state,
      vp_token: JSON.stringify({ VerifiableId: [await present(o)] }),
    })
    assert.equal(response.status, 400)
    const session = await read(o.id)
    assert.equal(session.Status, 'REJECTED')
    assert.deepEqual(failedChecks(session), ['securityMechanisms'])
    assert.match(
      errors(session),
      /the response is not encrypted: this session's response_mode is direct_post\.jwt/,
    )
  })

  test('a JWE for another key, or an enc outside A128GCM/A256GCM, is a 400 and the session stays open', async () => {
    const o = await open('pid-dcql-post-jwe')
    const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' })
    const payload = { state: o.request.state, vp_token: { VerifiableId: [await present(o)] } }
    for (const jwe of [
      await encryptTo(o, payload, 'A128GCM', { ...stranger, kid: 'stranger' }),
      await encryptTo(o, payload, 'A192GCM'),
    ]) {
      const response = await form(o.request.response_uri, { response: jwe })
      assert.equal(response.status, 400)
      assert.match((await response.json()).error_description, /cannot be decrypted with this session's key/)
    }
    assert.equal((await read(o.id)).Status, 'PENDING')
    const good = await form(o.request.response_uri, { response: await encryptTo(o, payload, 'A256GCM') })
    assert.equal(good.status, 200, await good.clone().text())
    assert.equal((await read(o.id)).Status, 'VERIFIED')
  })
})

describe('the vp_token object (§8.1) and SD-JWT VC presentations that break one rule', () => {
  /** Posts `vpToken` (direct_post) and answers the session read. */
  async function answer(o: Opened, vpToken: unknown) {
    const response = await form(o.request.response_uri, {
      state: o.request.state,
      vp_token: typeof vpToken === 'string' ? vpToken : JSON.stringify(vpToken),
    })
    return { status: response.status, session: await read(o.id) }
  }

  test('vp_token that is no object is a 400; the session stays open', async () => {
    const o = await open('pid-dcql')
    const { status, session } = await answer(o, await present(o))
    assert.equal(status, 400)
    assert.equal(session.Status, 'PENDING')
  })

  test('the presentation under another credential query id: matchingIds names both mistakes', async () => {
    const o = await open('pid-dcql')
    const { status, session } = await answer(o, { pid: [await present(o)] })
    assert.equal(status, 400)
    assert.equal(session.Status, 'REJECTED')
    assert.deepEqual(failedChecks(session), ['matchingIds'])
    assert.match(errors(session), /vp_token key "pid" names no credential query of this session's dcql_query/)
    assert.match(errors(session), /vp_token has no entry for required credential query "VerifiableId"/)
  })

  test('a vp_token of 4,500 unknown keys (9,000 members): the description, the stored errors and the webhook stay bounded', async () => {
    const o = await open('pid-dcql')
    const keys = Object.fromEntries(
      Array.from({ length: 4500 }, (_, i) => [`key-${i}-${'x'.repeat(40)}`, ['x']]),
    )
    const response = await form(o.request.response_uri, {
      state: o.request.state,
      vp_token: JSON.stringify(keys),
    })
    assert.equal(response.status, 400)
    const body = await response.json()
    assert.equal(body.error, 'invalid_presentation')
    assert.ok(body.error_description.length <= 2000, `error_description of ${body.error_description.length}`)
    const session = await read(o.id)
    assert.equal(session.Status, 'REJECTED')
    const failed = session.Validations?.checks.find((c) => c.result === 'failed')
    assert.match(failed?.message ?? '', /; … and 4\d{3} more$/)
    assert.ok(JSON.stringify(session.Validations).length < 20_000, 'stored (and sent by webhook) bounded')
  })

  test('a bare string instead of an array of presentations is read but named (§8.1)', async () => {
    const o = await open('pid-dcql')
    const { session } = await answer(o, { VerifiableId: await present(o) })
    assert.equal(session.Status, 'REJECTED')
    assert.deepEqual(failedChecks(session), ['matchingIds'])
    assert.match(errors(session), /vp_token "VerifiableId" is not a non-empty array of presentations/)
  })

  for (const [name, tamper, check, reason] of [
    [
      'a tampered disclosure',
      (p: string) => {
        const parts = p.split('~')
        const disclosure = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString())
        disclosure[2] = 'Turing'
        parts[1] = Buffer.from(JSON.stringify(disclosure)).toString('base64url')
        return parts.join('~')
      },
      'credentialProof',
      /disclosure/,
    ],
    [
      'no KB-JWT',
      (p: string) => `${p.slice(0, p.lastIndexOf('~') + 1)}`,
      'presentationProof',
      /no key-binding JWT/,
    ],
  ] as const) {
    test(`${name} is REJECTED under ${check}`, async () => {
      const o = await open('pid-dcql')
      const { session } = await answer(o, { VerifiableId: [tamper(await present(o))] })
      assert.equal(session.Status, 'REJECTED')
      assert.ok(failedChecks(session)?.includes(check), JSON.stringify(session.Validations))
      assert.match(errors(session), reason)
    })
  }

  for (const [name, binding, reason] of [
    [
      'a KB-JWT for another audience',
      { aud: 'https://other.example' },
      /KB-JWT aud "https:\/\/other\.example" is not this verifier's client_id/,
    ],
    [
      'a stale KB-JWT',
      { iat: Math.floor(Date.now() / 1000) - 3600 },
      /KB-JWT iat is 3\d{3} s old; at most 300 s is accepted/,
    ],
  ] as const) {
    test(`${name} is REJECTED under sessionBinding`, async () => {
      const o = await open('pid-dcql')
      const { session } = await answer(o, { VerifiableId: [await present(o, ['familyName'], binding)] })
      assert.deepEqual(failedChecks(session), ['sessionBinding'])
      assert.match(errors(session), reason)
    })
  }

  // Issue 30: a 4 KB token whose disclosures reference each other 4 times over 12 levels unpacked to 16.7
  // million claims and froze every tenant; RFC 9901 §7.1 refuses its first repeated digest. No login needed:
  // whoever sees the QR code can post it. Without the rule this test never ends (bench/attacks.ts times it).
  for (const levels of [8, 12]) {
    test(`a 4×${levels} fan-out SD-JWT is a 400 REJECTED under credentialProof, naming the rule`, async () => {
      const o = await open('pid-dcql')
      const pair = generateKeyPair('EdDSA')
      const key = didKeyFromPublicKey(pair.publicKey)
      const issuer = { alg: 'EdDSA' as const, privateKey: pair.privateKey, kid: key.kid, iss: key.did }
      const token = withKeyBinding(
        fanOutSdJwt(issuer, 4, levels, { cnf: { jwk: holder.holder.publicJwk } }),
        { alg: holder.alg, privateKey: holder.privateKey },
        { nonce: o.request.nonce, aud: o.request.client_id },
      )
      const { status, session } = await answer(o, { VerifiableId: [token] })
      assert.equal(status, 400)
      assert.equal(session.Status, 'REJECTED')
      assert.ok(failedChecks(session)?.includes('credentialProof'), JSON.stringify(session.Validations))
      assert.match(errors(session), /disclosures: a digest is listed more than once \(RFC 9901 §7\.1\)/)
      const matching = session.Validations?.checks.find((c) => c.check === 'matchingIds')
      assert.equal(matching?.result, 'not_run', 'no query runs on a credential whose proof failed')
    })
  }

  test('a wrong sd_hash is REJECTED under presentationProof', async () => {
    const o = await open('pid-dcql')
    // A KB-JWT made for the presentation with both disclosures, sent with one of them dropped.
    const both = await present(o, ['familyName', 'firstName'])
    const parts = both.split('~')
    const withoutOne = [parts[0], ...parts.slice(1, -2), parts.at(-1)].join('~')
    const { session } = await answer(o, { VerifiableId: [withoutOne] })
    assert.ok(failedChecks(session)?.includes('presentationProof'), JSON.stringify(session.Validations))
    assert.match(errors(session), /KB-JWT sd_hash is not the digest of the presented SD-JWT/)
  })
})

describe('x5c-certified SD-JWT VC issuers (SD-JWT VC §3.5, HAIP)', () => {
  test("an x5c credential of the tenant's own CA verifies, its Token Status List signed by the leaf's key", async () => {
    const x5cCredential = await service.issue(holder, 'pid-x5c', VERIFIABLE_ID)
    assert.ok(Array.isArray(decodeJws(x5cCredential.split('~')[0] as string).header.x5c))
    const o = await open('pid-dcql')
    const response = await form(o.request.response_uri, {
      state: o.request.state,
      vp_token: JSON.stringify({
        VerifiableId: [
          await sdJwtPresentation(holder, x5cCredential, ['familyName'], {
            nonce: o.request.nonce,
            aud: o.request.client_id,
          }),
        ],
      }),
    })
    const session = await read(o.id)
    assert.equal(response.status, 200, JSON.stringify(session.Validations))
    assert.equal(session.Status, 'VERIFIED')
    const status = session.Validations?.checks.find((c) => c.check === 'credentialStatus')
    assert.equal(status?.message, 'status: valid')
  })

  test('a template trusting another CA refuses it under credentialProof, naming the chain', async () => {
    const other = await generateTestCa({ name: 'CN=Another PKI' })
    const strict = await startDcqlService({
      verificationTemplates: [
        {
          id: 'pid-other-anchor',
          name: 'PID, another PKI',
          profile: 'dcql',
          credentialTypes: ['VerifiableId'],
          requestedFields: [{ path: '$.credentialSubject.familyName' }],
          trustAnchors: [certificatePem(other.certificate)],
        },
      ],
    })
    try {
      const wallet = owfHolder('ES256')
      const x5cCredential = await strict.issue(wallet, 'pid-x5c', VERIFIABLE_ID)
      const created = ok(
        await strict.rp.createSession<DcqlSessionCreated>(strict.appToken, 'pid-other-anchor'),
        'session',
      )
      const params = Object.fromEntries(new URL(created.authentication_request).searchParams)
      const request = decodeJws(await (await fetch(params.request_uri as string)).text())
        .payload as Opened['request']
      await form(request.response_uri, {
        state: request.state,
        vp_token: JSON.stringify({
          VerifiableId: [
            await sdJwtPresentation(wallet, x5cCredential, ['familyName'], {
              nonce: request.nonce,
              aud: request.client_id,
            }),
          ],
        }),
      })
      const session = (await strict.rp.readSession(strict.appToken, created.id)).body as SessionRead
      assert.equal(session.Status, 'REJECTED')
      assert.ok(failedChecks(session)?.includes('credentialProof'))
      assert.match(errors(session), /vp_token\.VerifiableId\[0\] x5c chain: /)
    } finally {
      await strict.server.close()
    }
  })
})

describe('dcql template rules (config load and portal)', () => {
  const base = { credentialTypes: ['VerifiableId'] }
  test('each rule names its field', () => {
    assert.deepEqual(verificationTemplateProblem({ ...base, dcql: {} }), {
      field: 'dcql',
      message: 'is only meaningful with profile dcql (OpenID4VP 1.0)',
    })
    assert.equal(
      verificationTemplateProblem({
        ...base,
        profile: 'dcql',
        dcql: { clientIdPrefix: 'redirect_uri', requestUriMethod: 'post' },
      })?.field,
      'dcql/requestUriMethod',
    )
    assert.deepEqual(
      verificationTemplateProblem({ ...base, profile: 'dcql', dcql: { vctValues: { Other: ['x'] } } }),
      { field: 'dcql/vctValues/Other', message: '"Other" is not a requested credential type' },
    )
    assert.match(
      verificationTemplateProblem({
        ...base,
        profile: 'dcql',
        optionalGroups: [
          { name: 'many', credentialTypes: ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J'], min: 5 },
        ],
      })?.message ?? '',
      /needs 252 credential_sets options; the dcql profile cannot express more than 64/,
    )
    assert.equal(verificationTemplateProblem({ ...base, trustAnchors: ['x'] })?.field, 'trustAnchors')
    assert.equal(
      verificationTemplateProblem({ ...base, profile: 'dcql', trustAnchors: ['not a pem'] })?.field,
      'trustAnchors/0',
    )
    assert.equal(verificationTemplateProblem({ ...base, profile: 'dcql' }), undefined)
    assert.equal(verificationTemplateProblem(base), undefined)
  })
})
