import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setGlobalConfig } from '@openid4vc/openid4vci'
import { calculateJwkThumbprint } from 'jose'
import { type DcqlSessionCreated, ok, type SessionRead } from '../../../src/client/index.ts'
import { type DcqlService, startDcqlService, TENANT } from '../../fixtures/dcql-service.ts'
import {
  deviceResponseIndependently,
  verifyIssuerSignedIndependently,
} from '../../fixtures/independent-mdoc.ts'
import { type OwfHolder, owfAnswer, owfHolder, owfResolve } from '../../fixtures/owf-holder.ts'

// ISO mdoc (mso_mdoc) end to end with a wallet built only from code nobody here wrote: the OpenWallet
// Foundation's @openid4vc/openid4vci and @openid4vc/openid4vp clients speak the protocol (issuance,
// request resolution, the direct_post / direct_post.jwt answer), and @auth0/mdl (test/fixtures/
// independent-mdoc.ts) verifies the issued mdoc against the tenant's IACA and builds the DeviceResponse,
// with the OpenID4VP 1.0 SessionTranscript built by the test (Appendix B.2.6.1). The session must read
// VERIFIED with exactly the requested elements, and each deliberate fault REJECTED under its named check.

setGlobalConfig({ allowInsecureUrls: true })

const MDL = 'org.iso.18013.5.1.mDL'
const NS = 'org.iso.18013.5.1'
const LICENCE = [
  {
    type: ['VerifiableCredential', MDL],
    credentialSubject: {
      [NS]: {
        family_name: 'Hopper',
        given_name: 'Grace',
        birth_date: '1906-12-09',
        age_over_18: true,
        issuing_country: 'UT',
      },
    },
  },
]
const mdl = (id: string, dcql: Record<string, unknown>) => ({
  id,
  name: `mDL ${id}`,
  profile: 'dcql',
  credentialTypes: [MDL],
  requestedFields: [{ path: '$.credentialSubject.family_name' }, { path: '$.credentialSubject.age_over_18' }],
  dcql: { format: 'mso_mdoc', ...dcql },
})

let service: DcqlService
let iaca: string

before(async () => {
  service = await startDcqlService({
    verificationTemplates: [
      mdl('mdl-hash-jwt', { clientIdPrefix: 'x509_hash', responseMode: 'direct_post.jwt' }),
      mdl('mdl-did', { clientIdPrefix: 'decentralized_identifier', responseMode: 'direct_post' }),
    ],
  })
  const answer = await fetch(`${service.server.url}/oid4vci/${TENANT}/iaca`)
  assert.equal(answer.status, 200)
  iaca = await answer.text()
})
after(() => service?.server.close())

interface Fault {
  /** another nonce in the SessionTranscript than the request's */
  nonce?: string
  /** an element value changed after issuance */
  tamper?: boolean
}

/** 4.6 → OWF resolves the request → @auth0/mdl builds the DeviceResponse → OWF answers → 4.7. */
async function present(holder: OwfHolder, credential: string, templateId: string, fault: Fault = {}) {
  const created = ok(
    await service.rp.createSession<DcqlSessionCreated>(service.appToken, templateId),
    `session ${templateId}`,
  )
  const owf = await owfResolve(created.authentication_request, [service.trustAnchor])
  const { request } = owf
  const metadata = (request as { client_metadata?: { jwks?: { keys?: Record<string, unknown>[] } } })
    .client_metadata
  const encryptionKey = request.response_mode === 'direct_post.jwt' ? metadata?.jwks?.keys?.[0] : undefined
  let issuerSigned = credential
  if (fault.tamper) {
    // @auth0/mdl re-encodes what it parsed: change the value inside the CBOR the way an attacker would
    issuerSigned = Buffer.from(
      Buffer.from(credential, 'base64url').toString('latin1').replace('Hopper', 'Hacker'),
      'latin1',
    ).toString('base64url')
  }
  const deviceResponse = await deviceResponseIndependently({
    issuerSignedB64url: issuerSigned,
    docType: MDL,
    disclose: { [NS]: ['family_name', 'age_over_18'] },
    devicePrivateJwk: holder.privateKey.export({ format: 'jwk' }),
    handover: {
      clientId: request.client_id,
      nonce: fault.nonce ?? request.nonce,
      jwkThumbprint: encryptionKey ? await calculateJwkThumbprint(encryptionKey as never, 'sha256') : null,
      responseUri: String((request as { response_uri?: string }).response_uri),
    },
  })
  const [queryId] = owf.queryIds
  const response = await owfAnswer(owf, { [queryId as string]: [deviceResponse] })
  const read = ok(await service.rp.readSession(service.appToken, created.id), 'read') as SessionRead
  return { created, request, response, read }
}

const failed = (read: SessionRead) =>
  (read.Validations?.checks ?? []).filter((c) => c.result === 'failed').map((c) => c.check)

describe('mso_mdoc with an independent wallet (OWF clients + @auth0/mdl)', () => {
  let holder: OwfHolder
  let credential: string
  before(async () => {
    holder = owfHolder('ES256')
    credential = await service.issue(holder, 'mdl', LICENCE)
  })

  test('the issued mDL verifies with @auth0/mdl against the tenant IACA: issuerAuth, digests, device key', async () => {
    const verified = await verifyIssuerSignedIndependently(credential, iaca)
    assert.equal(verified.docType, MDL)
    assert.equal(verified.namespaces[NS]?.family_name, 'Hopper')
    assert.equal(verified.namespaces[NS]?.age_over_18, true)
    assert.deepEqual(
      { x: verified.deviceKeyJwk.x, y: verified.deviceKeyJwk.y },
      { x: holder.holder.publicJwk.x, y: holder.holder.publicJwk.y },
      "the MSO's deviceKey is the key the OWF holder proved",
    )
    assert.ok(verified.validity.validUntil.getTime() > Date.now())
  })

  test('x509_hash + direct_post.jwt: VERIFIED with exactly the requested elements', async () => {
    const { created, request, response, read } = await present(holder, credential, 'mdl-hash-jwt')
    assert.match(request.client_id, /^x509_hash:/)
    assert.equal(request.response_mode, 'direct_post.jwt')
    const query = created.dcql_query.credentials[0] as unknown as Record<string, unknown>
    assert.equal(query.format, 'mso_mdoc')
    assert.deepEqual(query.meta, { doctype_value: MDL })
    assert.deepEqual(query.claims, [{ path: [NS, 'family_name'] }, { path: [NS, 'age_over_18'] }])
    assert.equal(response.status, 200, await response.clone().text())
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
    const shared = (read.PresentationSubmission as { verifiableCredential: { credentialSubject: unknown }[] })
      .verifiableCredential[0]?.credentialSubject
    assert.deepEqual(shared, { [NS]: { family_name: 'Hopper', age_over_18: true } })
  })

  test('decentralized_identifier + direct_post: VERIFIED', async () => {
    const { request, response, read } = await present(holder, credential, 'mdl-did')
    assert.match(request.client_id, /^decentralized_identifier:did:key:/)
    assert.equal(response.status, 200, await response.clone().text())
    assert.equal(read.Status, 'VERIFIED', JSON.stringify(read.Validations))
  })

  test('a SessionTranscript with another nonce: REJECTED under sessionBinding', async () => {
    const { read } = await present(holder, credential, 'mdl-hash-jwt', { nonce: 'not-this-sessions-nonce' })
    assert.equal(read.Status, 'REJECTED')
    assert.deepEqual(failed(read), ['sessionBinding'], JSON.stringify(read.Validations))
  })

  test('a tampered element: REJECTED under credentialProof (its digest)', async () => {
    const { read } = await present(holder, credential, 'mdl-did', { tamper: true })
    assert.equal(read.Status, 'REJECTED')
    assert.ok(failed(read).includes('credentialProof'), JSON.stringify(read.Validations))
    assert.match(JSON.stringify(read.Validations), /does not match its digest/)
  })

  test('a revoked mDL: REJECTED under credentialStatus', async () => {
    const revokedHolder = owfHolder('ES256')
    const { credential: revoked, processId } = await service.issueProcess(revokedHolder, 'mdl', LICENCE)
    ok(await service.rp.setCredentialStatus(service.appToken, processId, { status: 'revoked' }), 'revoke')
    const { read } = await present(revokedHolder, revoked, 'mdl-did')
    assert.equal(read.Status, 'REJECTED')
    assert.deepEqual(failed(read), ['credentialStatus'], JSON.stringify(read.Validations))
  })
})
