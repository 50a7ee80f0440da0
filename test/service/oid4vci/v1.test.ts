import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { getStatus } from '../../../src/shared/bitstring.ts'
import { resolveDidKey } from '../../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../../src/shared/jws.ts'
import { splitSdJwt, verifySdJwtVc } from '../../../src/shared/sd-jwt.ts'
import { PROOF_TYP } from '../../../src/shared/wire.ts'
import { makeApp, type TestApp } from '../../helpers.ts'
import {
  changeStatus,
  expectOAuth,
  grantFor,
  ISSUER,
  newHolder,
  oid4vciConfig,
  proofJwt,
  submit,
  VERIFIABLE_ID,
  walletAsked,
  walletPost,
} from '../../oid4vci-helpers.ts'

// OpenID4VCI 1.0 Final on the service: the request shapes of every wallet generation (§8.2 `proofs`,
// draft 15 `proof`, drafts 13/14 format-based), SD-JWT VC issuance (Appendix A.3) with key binding by a
// did:key kid or a bare jwk, and its IETF Token Status List.

const PID = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: {
      givenName: 'Erika',
      familyName: 'Mustermann',
      address: { locality: 'Köln', country: 'DE' },
    },
  },
]

describe('OpenID4VCI 1.0 credential requests and SD-JWT VC issuance', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  const credential = (accessToken: string, body: unknown) =>
    walletPost(t.app, 'credential', accessToken, body)
  const issuerKeyOf = (header: Record<string, unknown>) => resolveDidKey(String(header.kid)).publicKey

  test('§8.2 proofs {jwt: [...]}: 200 {credentials: [{credential}], notification_id}', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    assert.equal(
      (
        await submit(t.app, g.rp, g.processId, [
          { ...PID[0], type: ['VerifiableCredential', 'UniversityDegreeCredential'] },
        ])
      ).statusCode,
      200,
    )
    const response = await credential(g.accessToken, {
      credential_configuration_id: 'degree',
      proofs: { jwt: [proofJwt(holder, t.clock, g.cNonce)] },
    })
    assert.equal(response.statusCode, 200, response.body)
    const body = response.json()
    assert.deepEqual(Object.keys(body).sort(), ['credentials', 'notification_id'])
    assert.equal(decodeJws(body.credentials[0].credential).payload.sub, holder.did)
  })

  test('drafts 13/14 format-based request: mapped to the granted configuration when it fits', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const response = await credential(g.accessToken, {
      format: 'jwt_vc_json',
      credential_definition: { type: ['VerifiableCredential', 'UniversityDegreeCredential'] },
      proof: { proof_type: 'jwt', jwt: proofJwt(holder, t.clock, g.cNonce) },
    })
    assert.equal(response.statusCode, 202, response.body)
    assert.ok(response.json().transaction_id)
  })

  test('a format-based request that does not describe the granted credential: invalid_credential_request', async () => {
    const g = await grantFor(t.app, 'degree')
    const proof = { proof_type: 'jwt', jwt: proofJwt(newHolder(), t.clock, g.cNonce) }
    for (const body of [
      {
        format: 'jwt_vc_json',
        credential_definition: { type: ['VerifiableCredential', 'VerifiableId'] },
        proof,
      },
      { format: 'jwt_vc_json', proof },
      { format: 'dc+sd-jwt', vct: 'https://elsewhere.example/vct', proof },
      { format: 'mso_mdoc', doctype: 'org.iso.18013.5.1.mDL', proof },
      { proof },
    ]) {
      expectOAuth(await credential(g.accessToken, body), 400, 'invalid_credential_request')
    }
  })

  test('SD-JWT VC, holder by did:key kid: typ dc+sd-jwt, vct, cnf = the holder key, disclosures as the template says', async () => {
    const holder = newHolder('ES256')
    const g = await grantFor(t.app, 'pid')
    assert.equal((await submit(t.app, g.rp, g.processId, PID)).statusCode, 200)
    const response = await credential(g.accessToken, {
      credential_configuration_id: 'pid',
      proofs: { jwt: [proofJwt(holder, t.clock, g.cNonce)] },
    })
    assert.equal(response.statusCode, 200, response.body)
    const compact: string = response.json().credentials[0].credential
    const { jwt, disclosures } = splitSdJwt(compact)
    const { header, payload } = decodeJws(jwt)
    assert.equal(header.typ, 'dc+sd-jwt')
    assert.equal(payload.vct, `${ISSUER}/vct/VerifiableId`)
    assert.equal(payload.sub, holder.did)
    assert.deepEqual(payload.cnf, { jwk: holder.publicJwk })
    assert.equal(payload.givenName, undefined, 'selectively disclosable')
    assert.equal(disclosures.length, 3, 'givenName, familyName, address.locality')
    assert.deepEqual((payload.address as Record<string, unknown>).country, 'DE', 'not disclosable: in clear')
    const status = (payload.status as { status_list: { idx: number; uri: string } }).status_list
    assert.match(status.uri, /\/oid4vci\/demo\/token-status\//)
    const verified = await verifySdJwtVc(compact, {
      issuerKey: issuerKeyOf,
      algorithms: ['EdDSA'],
      now: t.clock.now(),
    })
    assert.deepEqual(verified.claims.address, { locality: 'Köln', country: 'DE' })
    assert.equal(verified.claims.givenName, 'Erika')
    // The process data keeps the credential object with the SD-JWT VC as its proof.
    const read = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/issuanceRequests/${g.processId}`,
      headers: { authorization: `jwt ${g.rp}` },
    })
    assert.deepEqual(read.json().data[0].proof, { type: 'SdJwtVc', jwt: compact })
  })

  test('SD-JWT VC, holder by a bare jwk (1.0 Appendix F.1), deferred: 202 then the credential', async () => {
    const holder = newHolder('ES256')
    const g = await grantFor(t.app, 'pid')
    const jwt = proofJwt(holder, t.clock, g.cNonce, { header: { kid: undefined, jwk: holder.publicJwk } })
    assert.equal(decodeJws(jwt).header.typ, PROOF_TYP)
    const asked = await credential(g.accessToken, {
      credential_configuration_id: 'pid',
      proofs: { jwt: [jwt] },
    })
    assert.equal(asked.statusCode, 202, asked.body)
    const { transaction_id: transactionId } = asked.json()
    const pending = await walletPost(t.app, 'deferred_credential', g.accessToken, {
      transaction_id: transactionId,
    })
    assert.equal(pending.statusCode, 202)
    assert.equal((await submit(t.app, g.rp, g.processId, PID)).statusCode, 200)
    const ready = await walletPost(t.app, 'deferred_credential', g.accessToken, {
      transaction_id: transactionId,
    })
    assert.equal(ready.statusCode, 200, ready.body)
    const { payload } = decodeJws(splitSdJwt(ready.json().credentials[0].credential).jwt)
    assert.deepEqual(payload.cnf, { jwk: holder.publicJwk })
    assert.equal(payload.sub, holder.did, "the jwk's did:key names the holder")
  })

  test('a jwk proof for a jwt_vc_json configuration (did:key binding only) is refused', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const jwt = proofJwt(holder, t.clock, g.cNonce, { header: { kid: undefined, jwk: holder.publicJwk } })
    expectOAuth(
      await credential(g.accessToken, { credential_configuration_id: 'degree', proofs: { jwt: [jwt] } }),
      400,
      'invalid_proof',
    )
  })

  test('Token Status List (§5): statuslist+jwt signed by the issuer; revocation flips the entry', async () => {
    const holder = newHolder('ES256')
    const w = await walletAsked(t, 'pid', holder)
    const submitted = await submit(t.app, w.rp, w.processId, PID)
    assert.equal(submitted.statusCode, 200)
    const compact: string = submitted.json()[0].data[0].proof.jwt
    const { status_list: ref } = decodeJws(splitSdJwt(compact).jwt).payload.status as {
      status_list: { idx: number; uri: string }
    }
    const readList = async () => {
      const response = await t.app.inject({ method: 'GET', url: new URL(ref.uri).pathname })
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers['content-type'], 'application/statuslist+jwt')
      const { header, payload } = decodeJws(response.body)
      assert.equal(header.typ, 'statuslist+jwt')
      verifyJws(response.body, resolveDidKey(String(header.kid)).publicKey, { algorithms: ['EdDSA'] })
      assert.equal(payload.sub, ref.uri)
      const list = payload.status_list as { bits: number; lst: string }
      assert.equal(list.bits, 2)
      // §4.1: index 0 in the least significant bits of byte 0, ZLIB (RFC 1950).
      const bytes = (await import('node:zlib')).inflateSync(Buffer.from(list.lst, 'base64url'))
      return ((bytes[ref.idx >> 2] ?? 0) >> ((ref.idx & 3) * 2)) & 3
    }
    assert.equal(await readList(), 0, 'VALID')
    assert.equal((await changeStatus(t.app, w.rp, w.processId, { status: 'suspended' })).statusCode, 200)
    assert.equal(await readList(), 2, 'SUSPENDED')
    assert.equal((await changeStatus(t.app, w.rp, w.processId, { status: 'revoked' })).statusCode, 200)
    assert.equal(await readList(), 1, 'INVALID')
    assert.equal(getStatus(new Uint8Array([0b00000001]), 3), 1, 'the Bitstring list keeps its own order')
    assert.equal(VERIFIABLE_ID.length, 1)
  })
})
