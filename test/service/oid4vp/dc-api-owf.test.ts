import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { getOpenid4vpClientId } from '@openid4vc/openid4vp'
import { type DcqlSessionCreated, ok, type SessionRead } from '../../../src/client/index.ts'
import { type DcqlService, startDcqlService, VERIFIABLE_ID } from '../../fixtures/dcql-service.ts'
import { type OwfHolder, owfHolder, owfPresenter, sdJwtPresentation } from '../../fixtures/owf-holder.ts'

// Our verifier over the W3C Digital Credentials API (OpenID4VP 1.0 Appendix A) with a holder built from code
// nobody here wrote: the OpenWallet Foundation's Openid4vpClient (@openid4vc/openid4vp 0.4.6) resolves the
// request entry the service hands out, given the origin the browser would hand a wallet
// (resolveOpenId4vpAuthorizationRequest: expected_origins of a signed request, the request object's
// signature and client identifier by the holder's callbacks in test/fixtures/owf-holder.ts), and creates the
// answer (createOpenid4vpAuthorizationResponse, a JWE through jose for dc_api.jwt); @sd-jwt/sd-jwt-vc makes
// the SD-JWT VC presentation. The test only carries `{origin, protocol, data}` back to the service, as the
// relying party's page does, and reads the session.
//
// Where the library stops:
// - multi-signed requests (openid4vp-v1-multisigned, the JWS JSON Serialization of A.3.2): 0.4.6 parses
//   `request` only as a compact JWT and has no JWS JSON Serialization; the last test records that it refuses
//   our multi-signed entry (test/service/oid4vp/dc-api.test.ts verifies every signature of it instead).
// - the audience: for a signed request 0.4.6 names the request's client_id as the effective client id (the
//   drafts' rule), where 1.0 A.4 makes the audience `origin:<origin>` "even for signed requests". The holder
//   here binds its KB-JWT to the library's own origin client identifier (getOpenid4vpClientId without a
//   client_id), which is A.4's value.

const MULTISIGNED = 'openid4vp-v1-multisigned'
const pid = (id: string, dcql: Record<string, unknown>) => ({
  id,
  name: `PID ${id}`,
  profile: 'dcql',
  credentialTypes: ['VerifiableId'],
  requestedFields: [{ path: '$.credentialSubject.familyName' }],
  dcql,
})

let service: DcqlService
let origin: string
let holder: OwfHolder
let credential: string

before(async () => {
  service = await startDcqlService({
    verificationTemplates: [
      pid('owf-dc-unsigned', { dcApi: { request: 'unsigned' } }),
      pid('owf-dc-unsigned-jwt', { responseMode: 'direct_post.jwt', dcApi: { request: 'unsigned' } }),
      pid('owf-dc-signed-did', { dcApi: { request: 'signed' } }),
      pid('owf-dc-signed-hash-jwt', {
        clientIdPrefix: 'x509_hash',
        responseMode: 'direct_post.jwt',
        dcApi: { request: 'signed' },
      }),
      pid('owf-dc-multi', { dcApi: { request: 'multisigned' } }),
    ],
  })
  // the default expected origin: the service's public URL (http on loopback, allowed for local development)
  origin = new URL(service.server.publicUrl).origin
  holder = owfHolder('ES256')
  credential = await service.issue(holder, 'pid', VERIFIABLE_ID)
})
after(() => service?.server.close())

async function open(templateId: string) {
  const created = ok(
    await service.rp.createSession<DcqlSessionCreated>(service.appToken, templateId),
    templateId,
  )
  assert.ok(created.dcApi)
  const entry = (await (await fetch(created.dcApi.request)).json()) as {
    protocol: string
    data: Record<string, unknown>
  }
  return { created, dcApi: created.dcApi, entry }
}

/** The OWF holder resolves the entry at `origin`, answers with an SD-JWT VC, the page posts it back. */
async function presentWithOwf(templateId: string) {
  const { created, dcApi, entry } = await open(templateId)
  assert.equal(entry.protocol, dcApi.protocol)
  const presenter = owfPresenter([service.trustAnchor])
  const resolved = await presenter.resolveOpenId4vpAuthorizationRequest({
    authorizationRequestPayload: entry.data as never,
    origin,
  })
  const request = resolved.authorizationRequestPayload as Record<string, unknown> & {
    nonce: string
    response_mode: string
  }
  assert.ok(resolved.dcql, 'the request carries its dcql_query')
  const queryId = (resolved.dcql.query as { credentials: { id: string }[] }).credentials[0]?.id as string
  // A.4: the audience is the origin, whatever the request's protection
  const audience = getOpenid4vpClientId({
    responseMode: request.response_mode as never,
    origin,
  }).effectiveClientId
  assert.equal(audience, `origin:${origin}`)
  const vp = await sdJwtPresentation(holder, credential, ['familyName'], {
    nonce: request.nonce,
    aud: audience,
  })
  const response = await presenter.createOpenid4vpAuthorizationResponse({
    authorizationRequestPayload: request as never,
    authorizationResponsePayload: { vp_token: { [queryId]: [vp] } } as never,
    origin,
    ...(request.response_mode === 'dc_api.jwt' && {
      jarm: {
        encryption: { nonce: randomBytes(16).toString('base64url') },
        serverMetadata: {
          authorization_signing_alg_values_supported: ['ES256'],
          authorization_encryption_alg_values_supported: ['ECDH-ES'],
          authorization_encryption_enc_values_supported: ['A128GCM'],
        },
      },
    }),
  })
  const data = response.jarm
    ? { response: response.jarm.responseJwt }
    : (response.authorizationResponsePayload as Record<string, unknown>)
  const posted = await fetch(dcApi.response, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin, protocol: entry.protocol, data }),
  })
  const read = (await service.rp.readSession(service.appToken, created.id)).body as SessionRead
  return { resolved, request, data, posted, read }
}

describe('the OWF holder (Openid4vpClient) against our DC API requests', () => {
  test('unsigned, dc_api: resolved with the origin as the client, answered in the clear → VERIFIED', async () => {
    const { resolved, request, data, posted, read } = await presentWithOwf('owf-dc-unsigned')
    assert.equal(resolved.client.prefix, 'origin')
    assert.equal(request.response_mode, 'dc_api')
    assert.ok('vp_token' in data)
    assert.equal(posted.status, 200, await posted.clone().text())
    assert.equal(read.Status, 'VERIFIED', read.Validations?.verificationResult.errors.join(' | '))
  })

  test('unsigned, dc_api.jwt: the OWF JWE to the session key → VERIFIED', async () => {
    const { data, posted, read } = await presentWithOwf('owf-dc-unsigned-jwt')
    assert.equal(typeof data.response, 'string')
    assert.equal(String(data.response).split('.').length, 5, 'a compact JWE')
    assert.equal(posted.status, 200, await posted.clone().text())
    assert.equal(read.Status, 'VERIFIED', read.Validations?.verificationResult.errors.join(' | '))
  })

  test('signed under decentralized_identifier: signature, client_id and expected_origins accepted → VERIFIED', async () => {
    const { resolved, request, posted, read } = await presentWithOwf('owf-dc-signed-did')
    assert.equal(resolved.jar?.signer.method, 'did')
    assert.equal(resolved.client.prefix, 'decentralized_identifier')
    assert.deepEqual(request.expected_origins, [origin])
    assert.equal(posted.status, 200, await posted.clone().text())
    assert.equal(read.Status, 'VERIFIED', read.Validations?.verificationResult.errors.join(' | '))
  })

  test('signed under x509_hash (HAIP), dc_api.jwt: the x5c chain to the tenant CA, the hash, the JWE → VERIFIED', async () => {
    const { resolved, posted, read } = await presentWithOwf('owf-dc-signed-hash-jwt')
    assert.equal(resolved.client.prefix, 'x509_hash')
    assert.equal(resolved.jar?.signer.method, 'x5c')
    assert.equal(posted.status, 200, await posted.clone().text())
    assert.equal(read.Status, 'VERIFIED', read.Validations?.verificationResult.errors.join(' | '))
  })

  test('a page at an origin the signed request does not name: the OWF holder refuses (expected_origins)', async () => {
    const { entry } = await open('owf-dc-signed-did')
    await assert.rejects(
      owfPresenter([service.trustAnchor]).resolveOpenId4vpAuthorizationRequest({
        authorizationRequestPayload: entry.data as never,
        origin: 'https://evil.example',
      }),
      /expected_origins/,
    )
  })

  test('multisigned: 0.4.6 cannot read a JWS JSON Serialization (a limit of the library, not of the request)', async () => {
    const { entry } = await open('owf-dc-multi')
    assert.equal(entry.protocol, MULTISIGNED)
    await assert.rejects(
      owfPresenter([service.trustAnchor]).resolveOpenId4vpAuthorizationRequest({
        authorizationRequestPayload: entry.data as never,
        origin,
      }),
      // its schema takes `request` as a string only: "Expected string, received object at request"
      /Could not parse openid4vp authorization request/,
    )
  })
})
