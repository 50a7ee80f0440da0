import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { setGlobalConfig } from '@openid4vc/openid4vci'
import {
  type DcqlSessionCreated,
  ok,
  type RelyingPartyClient,
  type SessionRead,
} from '../../../src/client/index.ts'
import { certificatePem, generateTestCa, issueCertificate, x509Hash } from '../../../src/shared/x509.ts'
import { type DcqlService, DEGREE, startDcqlService, VERIFIABLE_ID } from '../../fixtures/dcql-service.ts'
import {
  jwtVpPresentation,
  type OwfHolder,
  owfAnswer,
  owfHolder,
  owfPresenter,
  owfResolve,
  sdJwtPresentation,
} from '../../fixtures/owf-holder.ts'

// OpenID4VP 1.0 Final against the reference verifier's `dcql` profile, answered by a wallet built from code
// nobody here wrote (test/fixtures/owf-holder.ts: the OWF @openid4vc/openid4vp client resolves and answers,
// @sd-jwt/sd-jwt-vc presents, jose encrypts). Every client identifier prefix, both request_uri methods,
// direct_post and direct_post.jwt (A128GCM, A256GCM), dc+sd-jwt and jwt_vc_json; the session must read
// VERIFIED with the shared claims, exactly as the PE profile reports them.

setGlobalConfig({ allowInsecureUrls: true })

let service: DcqlService
let rp: RelyingPartyClient
let appToken: string

before(async () => {
  service = await startDcqlService()
  ;({ rp, appToken } = service)
})
after(() => service?.server.close())

interface Answer {
  /** What the holder puts under each credential query id; gets the resolved request's nonce and client_id. */
  present(
    request: { nonce: string; client_id: string },
    queryIds: string[],
  ): Promise<Record<string, string[]>>
  enc?: 'A128GCM' | 'A256GCM'
}

/** 4.6 → the OWF client resolves the link → the holder answers → 4.7. */
async function run(templateId: string, answer: Answer) {
  const created = ok(
    await rp.createSession<DcqlSessionCreated>(appToken, templateId),
    `session ${templateId}`,
  )
  const params = Object.fromEntries(new URL(created.authentication_request).searchParams)
  const owf = await owfResolve(created.authentication_request, [service.trustAnchor])
  const { resolved, request } = owf
  const response = await owfAnswer(owf, await answer.present(request, owf.queryIds), answer.enc)
  const submitted = { response }
  const read = ok(await rp.readSession(appToken, created.id), 'read session') as SessionRead
  return { created, params, resolved, request, submitted, read }
}

describe('OpenID4VP 1.0 (dcql profile) answered by the OWF @openid4vc/openid4vp client', () => {
  let sdHolder: OwfHolder
  let sdCredential: string
  let vcHolder: OwfHolder
  let vcCredential: string
  before(async () => {
    sdHolder = owfHolder('ES256')
    sdCredential = await service.issue(sdHolder, 'pid', VERIFIABLE_ID)
    vcHolder = owfHolder('EdDSA')
    vcCredential = await service.issue(vcHolder, 'degree', DEGREE)
  })
  const sdJwtAnswer = (disclose = ['familyName'], enc?: Answer['enc']): Answer => ({
    enc,
    present: async (req, [id]) => ({
      [id as string]: [
        await sdJwtPresentation(sdHolder, sdCredential, disclose, { nonce: req.nonce, aud: req.client_id }),
      ],
    }),
  })

  test('dc+sd-jwt, decentralized_identifier, GET, direct_post: VERIFIED with only the requested claim', async () => {
    const { created, params, resolved, submitted, read } = await run('pid-dcql', sdJwtAnswer())
    assert.match(
      created.authentication_request,
      /^openid4vp:\/\/\?client_id=decentralized_identifier%3Adid%3Akey%3A/,
    )
    assert.equal(params.request_uri_method, undefined)
    assert.equal(resolved.client.prefix, 'decentralized_identifier')
    assert.equal(resolved.version, 100, 'the OWF client reads our request as OpenID4VP 1.0 Final')
    assert.deepEqual(created.dcql_query.credentials[0]?.format, 'dc+sd-jwt')
    assert.equal(submitted.response.status, 200, await submitted.response.clone().text())
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
    assert.equal(read.PresentationDefinition, null)
    assert.equal(read.PresentationSubmissionFormat, 'dcql')
    assert.deepEqual((read.AuthRequest as { dcql_query: unknown }).dcql_query, created.dcql_query)
    const shared = (
      read.PresentationSubmission as {
        verifiableCredential: { credentialSubject: Record<string, unknown> }[]
      }
    ).verifiableCredential[0]?.credentialSubject
    assert.equal(shared?.familyName, 'Hopper')
    assert.equal(shared?.firstName, undefined, 'firstName was not disclosed')
    assert.ok(read.Subject.startsWith('did:key:'), read.Subject)
    assert.deepEqual(read.Validations?.verificationResult.warnings, [])
  })

  test('request_uri_method=post and direct_post.jwt (A256GCM): the wallet_nonce is echoed, the JWE decrypts', async () => {
    const { params, request, submitted, read } = await run(
      'pid-dcql-post-jwe',
      sdJwtAnswer(['familyName'], 'A256GCM'),
    )
    assert.equal(params.request_uri_method, 'post')
    assert.equal(request.wallet_nonce, undefined, 'OWF 0.4.6 sends none, so none is echoed')
    assert.equal(request.response_mode, 'direct_post.jwt')
    assert.equal(submitted.response.status, 200, await submitted.response.clone().text())
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
  })

  test('x509_san_dns with direct_post.jwt (A128GCM): the chain ends in the tenant trust anchor', async () => {
    const { resolved, request, submitted, read } = await run(
      'pid-x509-dns',
      sdJwtAnswer(['familyName'], 'A128GCM'),
    )
    assert.equal(resolved.client.prefix, 'x509_san_dns')
    assert.equal(resolved.client.identifier, '127.0.0.1')
    assert.equal(request.client_id, 'x509_san_dns:127.0.0.1')
    assert.equal(submitted.response.status, 200, await submitted.response.clone().text())
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
  })

  test('x509_hash with request_uri_method=post', async () => {
    const { resolved, read } = await run('pid-x509-hash', sdJwtAnswer())
    assert.equal(resolved.client.prefix, 'x509_hash')
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
  })

  test('redirect_uri: every parameter by value, unsigned; the KB-JWT aud is redirect_uri:<response_uri>', async () => {
    const { params, request, read } = await run('pid-redirect', sdJwtAnswer())
    assert.equal(params.request_uri, undefined)
    assert.equal(request.client_id, `redirect_uri:${request.response_uri}`)
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
    assert.equal(read.RequestedAt, null, 'nothing was fetched: the request went by value')
  })

  test('jwt_vc_json in a jwt_vp_json, direct_post.jwt: VERIFIED with the degree', async () => {
    const { read } = await run('degree-dcql', {
      present: async (req, [id]) => ({
        [id as string]: [
          await jwtVpPresentation(vcHolder, [vcCredential], { nonce: req.nonce, aud: req.client_id }),
        ],
      }),
    })
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
    const subject = (
      read.PresentationSubmission as {
        verifiableCredential: { credentialSubject: { degree: { name: string } } }[]
      }
    ).verifiableCredential[0]?.credentialSubject
    assert.equal(subject?.degree.name, 'Bachelor of Science')
  })

  test('over-disclosure passes with a named warning (OpenID4VP 1.0 §6.4 data minimisation)', async () => {
    const { read } = await run('pid-dcql', sdJwtAnswer(['familyName', 'firstName']))
    assert.equal(read.Status, 'VERIFIED')
    assert.deepEqual(read.Validations?.verificationResult.warnings, [
      'matchingIds: credential query "VerifiableId": claims disclosed beyond the query: firstName (OpenID4VP 1.0 §6.4 data minimisation)',
    ])
  })

  test('a KB-JWT for another nonce is REJECTED, sessionBinding names it', async () => {
    const { submitted, read } = await run('pid-dcql', {
      present: async (_req, [id]) => ({
        [id as string]: [
          await sdJwtPresentation(sdHolder, sdCredential, ['familyName'], {
            nonce: 'another-nonce',
            aud: _req.client_id,
          }),
        ],
      }),
    })
    assert.equal(submitted.response.status, 400)
    assert.equal(read.Status, 'REJECTED')
    const failed = read.Validations?.checks.filter((c) => c.result === 'failed').map((c) => c.check)
    assert.deepEqual(failed, ['sessionBinding'])
    assert.match(
      read.Validations?.verificationResult.errors.join(' ') ?? '',
      /KB-JWT nonce "another-nonce" is not the nonce of this session's request/,
    )
  })
})

describe("a tenant's own verifier chain (tenants[].verifierCertificate) instead of the generated test CA", () => {
  test('x509_san_dns and x509_hash requests carry the configured chain; the OWF client trusts only its CA', async () => {
    const ca = await generateTestCa({ name: 'CN=Relying Party PKI (test)' })
    const leafKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const intermediateKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const intermediate = await issueCertificate({
      issuer: ca,
      publicKey: intermediateKeys.publicKey,
      subject: 'CN=Relying Party issuing CA',
      ca: true,
    })
    const leaf = await issueCertificate({
      issuer: { certificate: intermediate, privateKey: intermediateKeys.privateKey },
      publicKey: leafKeys.publicKey,
      subject: 'CN=verifier',
      dns: ['127.0.0.1'],
    })
    const own = await startDcqlService({
      verifierCertificate: {
        chain: [certificatePem(leaf), certificatePem(intermediate)],
        privateKey: leafKeys.privateKey.export({ format: 'pem', type: 'pkcs8' }),
      },
    })
    try {
      const wallet = owfHolder('ES256')
      const credential = await own.issue(wallet, 'pid', VERIFIABLE_ID)
      for (const template of ['pid-x509-dns', 'pid-x509-hash']) {
        const created = ok(await own.rp.createSession<DcqlSessionCreated>(own.appToken, template), template)
        const params = Object.fromEntries(new URL(created.authentication_request).searchParams)
        // The tenant's generated test CA is not the anchor of this chain: only the configured PKI is.
        await assert.rejects(
          owfPresenter([own.trustAnchor]).resolveOpenId4vpAuthorizationRequest({
            authorizationRequestPayload: params as never,
          }),
        )
        const owf = await owfResolve(created.authentication_request, [certificatePem(ca.certificate)])
        const { request } = owf
        if (template === 'pid-x509-hash') assert.equal(request.client_id, `x509_hash:${x509Hash(leaf)}`)
        else assert.equal(request.client_id, 'x509_san_dns:127.0.0.1')
        const vpToken = {
          [owf.queryIds[0] as string]: [
            await sdJwtPresentation(wallet, credential, ['familyName'], {
              nonce: request.nonce,
              aud: request.client_id,
            }),
          ],
        }
        const submitted = { response: await owfAnswer(owf, vpToken) }
        assert.equal(submitted.response.status, 200, await submitted.response.clone().text())
        const read = ok(await own.rp.readSession(own.appToken, created.id), 'read') as SessionRead
        assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
      }
    } finally {
      await own.server.close()
    }
  })

  test("a chain whose key is not the leaf's, or not P-256, is refused at config load", async () => {
    const ca = await generateTestCa()
    const leafKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const leaf = await issueCertificate({ issuer: ca, publicKey: leafKeys.publicKey, dns: ['127.0.0.1'] })
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      format: 'pem',
      type: 'pkcs8',
    })
    const ed = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' })
    await assert.rejects(
      startDcqlService({ verifierCertificate: { chain: [certificatePem(leaf)], privateKey: other } }),
      /verifierCertificate: privateKey is not the key of the chain's first \(leaf\) certificate/,
    )
    await assert.rejects(
      startDcqlService({ verifierCertificate: { chain: [certificatePem(leaf)], privateKey: ed } }),
      /verifierCertificate: privateKey must be a P-256 key/,
    )
  })
})
