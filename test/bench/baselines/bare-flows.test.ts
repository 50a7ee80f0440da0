import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type BareFlows, startBareFlows } from '../../../bench/baselines/bare-flows.ts'
import {
  type IssuanceProcess,
  parseCredentialOfferUri,
  RelyingPartyClient,
  type SessionCreated,
  type SessionRead,
} from '../../../src/client/index.ts'
import { decodeJws } from '../../../src/shared/jws.ts'
import { Wallet, WalletProtocolError } from '../../../src/wallet/index.ts'

// The bare baseline of the flow benchmarks must be indistinguishable from the service for the real simulated
// wallet and the typed relying-party client on the happy path, and still refuse what its checks cover.

const CONTENT = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]

/** Asserts that `promise` fails with a WalletProtocolError of this step, status and wire error. */
async function rejectsWith(promise: Promise<unknown>, step: string, status: number, error: string) {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof WalletProtocolError, String(e))
    assert.equal(`${e.step} ${e.status} ${e.error}`, `${step} ${status} ${error}`, e.message)
    return true
  })
}

describe('bare flows: the benchmark baseline speaks the service protocol', () => {
  let bare: BareFlows
  let client: RelyingPartyClient
  let issuer: string
  let verifier: string
  let admin: string
  let wallet: Wallet

  before(async () => {
    bare = await startBareFlows()
    client = new RelyingPartyClient(bare.url)
    const { tenant } = bare.keys
    issuer = await client.token({ ...bare.keys.issuance, tenant, ssiconfig: bare.keys.issuance.template })
    verifier = await client.token({
      ...bare.keys.verification,
      tenant,
      ssiconfig: bare.keys.verification.template,
    })
    admin = await client.token({ ...bare.keys.admin, tenant })
    wallet = await Wallet.create()
  })
  after(() => bare.close())

  test('login: 200 with Token and Token_type; a wrong secret or no token is a 401 problem', async () => {
    const ok = await client.login({ ...bare.keys.issuance, tenant: bare.keys.tenant })
    assert.equal(ok.status, 200)
    assert.deepEqual(ok.body, { message: 'SUCCESS' })
    assert.equal(ok.headers.get('token_type'), 'jwt')
    assert.equal(decodeJws(ok.token ?? '').header.typ, 'at+jwt')

    const bad = await client.login({ ...bare.keys.issuance, secret: 'wrong', tenant: bare.keys.tenant })
    assert.equal(bad.status, 401)
    assert.equal((bad.body as { code: string }).code, 'invalid_credentials')
    assert.equal(bad.token, undefined)

    const anonymous = await client.createOffer(undefined, 'degree')
    assert.equal(anonymous.status, 401)
    assert.match(anonymous.headers.get('content-type') ?? '', /application\/problem\+json/)
    const forged = await client.createOffer(`${issuer.slice(0, -4)}AAAA`, 'degree')
    assert.equal(forged.status, 401)
    // The verification key's token is linked to degree-check: no offers of degree.
    assert.equal((await client.createOffer(verifier, 'degree')).status, 403)
  })

  test('attended deferred issuance with the real wallet: 202, issuance_pending, admin submission, 200, notification', async () => {
    const offer = await client.createOffer(issuer, 'degree')
    assert.equal(offer.status, 201, offer.text)
    const link = (offer.body as { credential_offer_uri: string }).credential_offer_uri
    assert.match(link, /^openid-credential-offer:\/\/\?credential_offer_uri=/)
    const { processId } = parseCredentialOfferUri(link)

    const session = await wallet.startIssuance(link)
    const token = await session.token()
    assert.equal(token.token_type, 'Bearer')
    const pending = await session.requestCredential()
    assert.equal(pending.status, 202)
    if (pending.status !== 202) return
    const early = await session.deferred(pending.transactionId)
    assert.equal(early.status, 400)

    const submitted = await client.submitCredentials(admin, processId, CONTENT)
    assert.equal(submitted.status, 200, submitted.text)
    const [process] = submitted.body as IssuanceProcess[]
    assert.equal(process?.status, 'ISSUED')
    assert.equal(process?.data?.length, 1)

    const issued = await session.deferred(pending.transactionId)
    assert.equal(issued.status, 200)
    if (issued.status !== 200) return
    const [stored] = await session.accept(issued)
    assert.equal(stored?.subject, wallet.did)
    await session.notify('credential_accepted')
    const jwt = issued.credentials[0] as string
    assert.equal(decodeJws(jwt).payload.sub, wallet.did)

    const read = await client.getProcess(issuer, processId)
    assert.equal(read.status, 200)
    assert.equal((read.body as IssuanceProcess).status, 'ISSUED')
    // A second submission to an ISSUED process is refused.
    assert.equal((await client.submitCredentials(admin, processId, CONTENT)).status, 409)
  })

  test('content submitted first: the credential response issues at once (wallet.receive)', async () => {
    const offer = await client.createOffer(issuer, 'degree')
    const link = (offer.body as { credential_offer_uri: string }).credential_offer_uri
    const submitted = await client.submitCredentials(issuer, parseCredentialOfferUri(link).processId, CONTENT)
    assert.equal(submitted.status, 200, submitted.text)
    assert.equal((submitted.body as IssuanceProcess[])[0]?.status, 'PENDING')
    const received = await wallet.receive(link)
    assert.equal(received.status, 'issued')
  })

  test('a pre-authorized code is single use: 400 invalid_grant', async () => {
    const offer = await client.createOffer(issuer, 'degree')
    const link = (offer.body as { credential_offer_uri: string }).credential_offer_uri
    const session = await wallet.startIssuance(link)
    await rejectsWith(session.token({ misbehave: ['replayed-code'] }), 'token', 400, 'invalid_grant')
  })

  test('a reused or forged proof nonce and a bad proof signature are refused', async () => {
    const offer = await client.createOffer(issuer, 'degree')
    const session = await wallet.startIssuance(
      (offer.body as { credential_offer_uri: string }).credential_offer_uri,
    )
    await session.token()
    await rejectsWith(
      session.requestCredential({ misbehave: ['replayed-nonce'] }),
      'credential',
      400,
      'invalid_nonce',
    )
    await rejectsWith(
      session.requestCredential({ misbehave: ['wrong-nonce'] }),
      'credential',
      400,
      'invalid_nonce',
    )
    await rejectsWith(
      session.requestCredential({ misbehave: ['bad-signature'] }),
      'credential',
      400,
      'invalid_proof',
    )
  })

  const newSession = async () => {
    const created = await client.createSession(verifier, 'degree-check')
    assert.equal(created.status, 201, created.text)
    return created.body as SessionCreated
  }

  test('verification with the real wallet: request object, VP, session VERIFIED', async () => {
    const created = await newSession()
    assert.match(created.authentication_request, /^openid-vp:\/\/\?client_id=did%3Akey%3A.*request_uri=/)
    const id = created.presentation_definition.id
    const waiting = await client.readSession(verifier, id)
    assert.equal(waiting.status, 202)
    assert.equal((waiting.body as SessionRead).Status, 'PENDING')

    const presented = await wallet.present(created.authentication_request)
    assert.equal(presented.status, 'verified')
    assert.equal(presented.sessionId, id)

    const read = await client.readSession(verifier, id)
    assert.equal(read.status, 200)
    const body = read.body as SessionRead
    assert.equal(body.Status, 'VERIFIED')
    assert.equal(body.Subject, wallet.did)
    assert.equal(body.PresentationSubmissionFormat, 'jwt_vp')
    assert.equal(body.Validations?.status, 'SUCCESS')
    assert.ok(body.RequestedAt)
    const credentials = (body.PresentationSubmission?.verifiableCredential ?? []) as {
      credentialSubject: unknown
    }[]
    const shared = credentials[0]
    assert.deepEqual(shared?.credentialSubject, { ...CONTENT[0]?.credentialSubject, id: wallet.did })
    // The session is closed: a second answer is a 409.
    await rejectsWith(wallet.present(created.authentication_request), 'request', 409, 'session_closed')
  })

  for (const [misbehaviour, failure] of [
    ['vp-wrong-nonce', /sessionBinding: VP nonce/],
    ['vp-wrong-aud', /sessionBinding: VP aud/],
    ['tampered-credential', /credentialProof: verifiableCredential\[0\] signature verification failed/],
  ] as const) {
    test(`a VP with ${misbehaviour} is rejected (400 invalid_presentation, session REJECTED)`, async () => {
      const created = await newSession()
      await rejectsWith(
        wallet.present(created.authentication_request, { misbehave: [misbehaviour] }),
        'response',
        400,
        'invalid_presentation',
      )
      const read = await client.readSession(verifier, created.presentation_definition.id)
      assert.equal(read.status, 200)
      const body = read.body as SessionRead
      assert.equal(body.Status, 'REJECTED')
      assert.match(body.Validations?.verificationResult.errors.join(' | ') ?? '', failure)
    })
  }
})
