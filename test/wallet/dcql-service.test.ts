import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type DcqlSessionCreated, ok, type SessionRead } from '../../src/client/index.ts'
import { Wallet } from '../../src/wallet/index.ts'
import { type DcqlService, DEGREE, startDcqlService, VERIFIABLE_ID } from '../fixtures/dcql-service.ts'

// Our wallet against our verifier's dcql profile (OpenID4VP 1.0), every prefix and response mode: the two
// halves were built against independent peers (test/service/oid4vp/owf-interop.test.ts, test/wallet/present-v1.test.ts); here
// they meet, and each new presentation misbehaviour gets the verifier's exact refusal.

let service: DcqlService
let wallet: Wallet

/** A credential issued by the service to our wallet (OpenID4VCI 1.0). */
async function receive(group: 'pid' | 'pid-x5c' | 'degree', content: unknown) {
  const body = ok(await service.rp.createOffer(service.appToken, group), `offer ${group}`)
  const processId = new URL(
    decodeURIComponent(body.credential_offer_uri.split('credential_offer_uri=')[1] ?? ''),
  ).pathname
    .split('/')
    .at(-1) as string
  ok(await service.rp.submitCredentials(service.appToken, processId, content), 'submit')
  await wallet.receive(body.credential_offer_uri)
}

before(async () => {
  service = await startDcqlService()
  wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: [service.trustAnchor] })
  await receive('pid', VERIFIABLE_ID)
  await receive('degree', DEGREE)
})
after(() => service?.server.close())

async function session(template: string) {
  return ok(await service.rp.createSession<DcqlSessionCreated>(service.appToken, template), template)
}
const read = async (id: string) => (await service.rp.readSession(service.appToken, id)).body as SessionRead

describe('our wallet answers our dcql verifier', () => {
  for (const template of [
    'pid-dcql',
    'pid-dcql-post-jwe',
    'pid-x509-dns',
    'pid-x509-hash',
    'pid-redirect',
    'degree-dcql',
  ]) {
    test(`${template}: VERIFIED`, async () => {
      const created = await session(template)
      const result = await wallet.present(created.authentication_request)
      const s = await read(created.id)
      assert.equal(s.Status, 'VERIFIED', JSON.stringify(s.Validations))
      assert.equal(result.profile, '1.0')
      assert.deepEqual(s.Validations?.verificationResult.warnings, [])
    })
  }

  // Each misbehaviour changes one thing; the verifier names the requirement it breaks.
  for (const [misbehaviour, template, check, reason] of [
    ['sd-tampered-disclosure', 'pid-dcql', 'credentialProof', /disclosure/],
    ['sd-extra-disclosure', 'pid-dcql', undefined, /claims disclosed beyond the query: firstName/],
    [
      'kb-wrong-sd-hash',
      'pid-dcql',
      'presentationProof',
      /KB-JWT sd_hash is not the digest of the presented SD-JWT/,
    ],
    [
      'kb-wrong-nonce',
      'pid-dcql',
      'sessionBinding',
      /KB-JWT nonce .* is not the nonce of this session's request/,
    ],
    ['kb-wrong-aud', 'pid-dcql', 'sessionBinding', /KB-JWT aud .* is not this verifier's client_id/],
    ['kb-stale-iat', 'pid-dcql', 'sessionBinding', /KB-JWT iat is \d+ s old; at most 300 s is accepted/],
    ['kb-missing', 'pid-dcql', 'presentationProof', /no key-binding JWT/],
    ['plain-response', 'pid-dcql-post-jwe', 'securityMechanisms', /the response is not encrypted/],
    [
      'vp-token-wrong-id',
      'pid-dcql',
      'matchingIds',
      /names no credential query of this session's dcql_query/,
    ],
    [
      'kb-bad-signature',
      'pid-dcql',
      'presentationProof',
      /the KB-JWT signature does not verify with the credential’s cnf key/,
    ],
    ['kb-future-iat', 'pid-dcql', 'sessionBinding', /KB-JWT iat is in the future/],
    ['sd-issuer-signature', 'pid-dcql', 'credentialProof', /signature does not verify with its issuer key/],
    [
      'vp-wrong-nonce',
      'degree-dcql',
      'sessionBinding',
      /VP nonce .* is not the nonce of this session's request/,
    ],
  ] as const) {
    test(`${misbehaviour}: ${check ? `REJECTED under ${check}` : 'VERIFIED with a warning'}`, async () => {
      const created = await session(template)
      await wallet
        .present(created.authentication_request, { misbehave: [misbehaviour] })
        .catch(() => undefined)
      const s = await read(created.id)
      if (check === undefined) {
        assert.equal(s.Status, 'VERIFIED', JSON.stringify(s.Validations))
        assert.match(s.Validations?.verificationResult.warnings.join(' | ') ?? '', reason)
      } else {
        assert.equal(s.Status, 'REJECTED', JSON.stringify(s.Validations))
        const failed = s.Validations?.checks.filter((c) => c.result === 'failed').map((c) => c.check)
        assert.ok(failed?.includes(check), `${check} in ${JSON.stringify(failed)}`)
        assert.match(s.Validations?.verificationResult.errors.join(' | ') ?? '', reason)
      }
    })
  }

  test('jwe-wrong-key: a JWE the session key cannot decrypt is a 400 that leaves the session open', async () => {
    const created = await session('pid-dcql-post-jwe')
    await assert.rejects(
      wallet.present(created.authentication_request, { misbehave: ['jwe-wrong-key'] }),
      (e: Record<string, unknown>) => {
        assert.equal(e.name, 'WalletProtocolError', String(e.message))
        assert.deepEqual([e.step, e.status, e.error], ['response', 400, 'invalid_request'])
        assert.match(
          String(e.errorDescription),
          /^the response JWE cannot be decrypted with this session's key/,
        )
        return true
      },
    )
    const s = await read(created.id)
    assert.equal(
      s.Status,
      'PENDING',
      'the session stays open: a JWE that cannot be decrypted cannot be attributed',
    )
  })
})
