import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Agent, MockAgent } from 'undici'
import { LeanWallet, LeanWalletError } from '../../bench/lean-wallet.ts'
import { CREDENTIAL_CONTENT } from '../../bench/protocol.ts'
import { BenchRelyingParty, processIdOf } from '../../bench/relying-party.ts'
import { type IssuanceProcess, RelyingPartyClient } from '../../src/client/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { DEMO, demoConfig } from '../helpers.ts'

// The bench's `issuance-ready` flow (bench/worker.ts): the relying party submits the content right after
// its offer, before the wallet arrives, so the credential endpoint answers 200 with the credential at once
// (docs/api.md, "When the credentials are signed"). The lean wallet must verify that credential exactly as
// it verifies a deferred one.

describe('bench issuance-ready flow against the service', () => {
  let server: RunningServer
  const agent = new Agent()
  let rp: BenchRelyingParty
  let client: RelyingPartyClient
  let appToken: string
  before(async () => {
    server = await startServer({ config: demoConfig(), host: '127.0.0.1', port: 0, dataDir: ':memory:' })
    const urls = { authUrl: server.url, issuerUrl: server.url, verifierUrl: server.url }
    rp = new BenchRelyingParty(urls, agent)
    client = new RelyingPartyClient(urls)
    appToken = await rp.login({
      keyId: DEMO.app.id,
      secret: DEMO.app.secret,
      tenant: 'demo',
      ssiconfig: 'degree',
    })
  })
  after(async () => {
    await agent.close()
    await server.close()
  })

  test('offer, submit by the relying party, then the wallet gets 200 with a verified credential', async () => {
    const link = await rp.createOffer(appToken, 'degree')
    const processId = processIdOf(link)
    await rp.submit(appToken, processId, CREDENTIAL_CONTENT)
    const pending = (await client.getProcess(appToken, processId)).body as IssuanceProcess
    assert.equal(pending.status, 'PENDING', 'the content is kept until the wallet asks')

    const wallet = LeanWallet.create({ dispatcher: agent })
    const issuance = await wallet.startIssuance(link)
    await issuance.token()
    const answer = await issuance.requestCredential()
    assert.equal(answer.status, 200)
    assert.ok(answer.status === 200 && wallet.credentials.includes(answer.credential), 'verified and kept')
    await issuance.notify('credential_accepted')
    const issued = (await client.getProcess(appToken, processId)).body as IssuanceProcess
    assert.equal(issued.status, 'ISSUED')
  })

  test('a 200 credential that does not verify is refused at the credential step', async () => {
    // A genuine credential, then the same bytes with one claim changed, served by a mocked issuer.
    const link = await rp.createOffer(appToken, 'degree')
    await rp.submit(appToken, processIdOf(link), CREDENTIAL_CONTENT)
    const honest = LeanWallet.create({ dispatcher: agent })
    const session = await honest.startIssuance(link)
    await session.token()
    const genuine = await session.requestCredential()
    assert.equal(genuine.status, 200)
    const [header, payload, signature] = (genuine.status === 200 ? genuine.credential : '').split('.')
    const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8'))
    claims.vc.credentialSubject.degree.name = 'Doctor of Everything'
    const tampered = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`

    const issuer = 'https://issuer.test'
    const mock = new MockAgent()
    mock.disableNetConnect()
    const json = { headers: { 'content-type': 'application/json' } }
    const pool = mock.get(issuer)
    pool.intercept({ path: '/offer', method: 'GET' }).reply(
      200,
      {
        credential_issuer: issuer,
        credential_configuration_ids: ['UniversityDegreeCredential'],
        grants: { 'urn:ietf:params:oauth:grant-type:pre-authorized_code': { 'pre-authorized_code': 'c' } },
      },
      json,
    )
    pool.intercept({ path: '/.well-known/openid-credential-issuer', method: 'GET' }).reply(
      200,
      {
        credential_issuer: issuer,
        credential_endpoint: `${issuer}/credential`,
        token_endpoint: `${issuer}/token`,
      },
      json,
    )
    pool.intercept({ path: '/token', method: 'POST' }).reply(200, { access_token: 't', c_nonce: 'n' }, json)
    pool
      .intercept({ path: '/credential', method: 'POST' })
      .reply(200, { credentials: [{ credential: tampered }] }, json)
    const wallet = LeanWallet.create({ dispatcher: mock })
    const fake = await wallet.startIssuance(
      `openid-credential-offer://?credential_offer_uri=${encodeURIComponent(`${issuer}/offer`)}`,
    )
    await fake.token()
    await assert.rejects(
      fake.requestCredential(),
      (error: unknown) =>
        error instanceof LeanWalletError && error.step === 'credential' && error.kind === 'bad_signature',
    )
    assert.equal(wallet.credentials.length, 0)
    await mock.close()
  })
})
