// The wallet against an independent OpenID4VCI 1.0 Final issuer (test/fixtures/owf-issuer.ts, built on the
// OpenWallet Foundation's issuer code): discovery with a path in the issuer identifier, RFC 8414 AS metadata,
// `proofs`, the nonce endpoint, deferred 202 → 200, notifications, jwt_vc_json and dc+sd-jwt, the wallet's
// refusals of bad SD-JWT VCs, and the issuer's refusal of each misbehaviour.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { decodeJws } from '../../src/shared/jws.ts'
import { type Misbehaviour, type StoredCredential, Wallet, type WalletStep } from '../../src/wallet/index.ts'
import {
  ISSUER_PATH,
  JWT_CONFIG,
  type OfferOptions,
  type OwfIssuer,
  SD_JWT_CONFIG,
  SD_JWT_JWK_CONFIG,
  startOwfIssuer,
  TOKEN_PATH,
} from '../fixtures/owf-issuer.ts'

let issuer: OwfIssuer
before(async () => {
  issuer = await startOwfIssuer()
})
after(() => issuer.close())

/** Records the waits instead of waiting. */
function fakeSleep() {
  const waits: number[] = []
  return { waits, sleep: async (ms: number) => void waits.push(ms) }
}

function posts(path: string) {
  return issuer.log.filter((e) => e.method === 'POST' && e.url === path)
}

async function receive(options: OfferOptions, wallet?: Wallet, misbehave: Misbehaviour[] = []) {
  const holder = wallet ?? (await Wallet.create())
  const { sleep, waits } = fakeSleep()
  const result = await holder.receive(issuer.offer(options), {
    ...(options.txCode && { txCode: options.txCode }),
    waitForDeferred: { timeoutMs: 60_000 },
    sleep,
    misbehave,
  })
  return { wallet: holder, result, waits }
}

async function rejectsWith(
  promise: Promise<unknown>,
  expected: { step: WalletStep; status: number; error: string; description?: RegExp },
) {
  await assert.rejects(promise, (error: Record<string, unknown>) => {
    assert.equal(error.name, 'WalletProtocolError', String(error.message))
    assert.equal(error.step, expected.step, String(error.message))
    assert.equal(error.status, expected.status, String(error.message))
    assert.equal(error.error, expected.error, String(error.message))
    if (expected.description) assert.match(String(error.errorDescription), expected.description)
    return true
  })
}

describe('OpenID4VCI 1.0 issuer with a path in its identifier', () => {
  test('jwt_vc_json, immediate: 1.0 discovery, RFC 8414 token endpoint, proofs, notification', async () => {
    const { wallet, result } = await receive({ configurationIds: [JWT_CONFIG] })
    assert.equal(result.status, 'issued')
    assert.equal(result.session.protocol, '1.0')
    const [stored] = result.credentials as [StoredCredential]
    assert.equal(stored.format, 'jwt_vc_json')
    assert.equal(decodeJws(stored.credential).payload.sub, wallet.did)
    assert.equal(stored.credentialSubject.degree, 'MSc Physics')
    const urls = issuer.log.map((e) => `${e.method} ${e.url}`)
    assert.ok(
      urls.includes(`GET /.well-known/openid-credential-issuer${ISSUER_PATH}`),
      '1.0 §12.2.2 location',
    )
    assert.ok(urls.includes(`GET /.well-known/oauth-authorization-server${ISSUER_PATH}`), 'RFC 8414 §3.1')
    assert.ok(!urls.some((u) => u.endsWith(`${ISSUER_PATH}/token`)), 'the token endpoint is never guessed')
    const request = posts(`${ISSUER_PATH}/credential`).at(-1)?.body as Record<string, unknown>
    assert.deepEqual(Object.keys(request).sort(), ['credential_configuration_id', 'proofs'])
    const proof = decodeJws((request.proofs as { jwt: string[] }).jwt[0] as string)
    assert.equal(proof.header.typ, 'openid4vci-proof+jwt')
    assert.equal(proof.header.kid, wallet.kid)
    assert.equal(proof.payload.aud, issuer.issuer)
    assert.ok(issuer.notifications.some((n) => n.notification_id === result.notificationId))
  })

  test('dc+sd-jwt with a tx_code: kid proof, cnf = the holder key, verified and stored with its claims', async () => {
    const { wallet, result } = await receive({ configurationIds: [SD_JWT_CONFIG], txCode: '493817' })
    assert.equal(result.status, 'issued')
    const token = posts(TOKEN_PATH).at(-1)?.body as Record<string, string>
    assert.equal(token.tx_code, '493817')
    const [stored] = result.credentials as [StoredCredential]
    assert.equal(stored.format, 'dc+sd-jwt')
    assert.equal(stored.vct, `${issuer.issuer}/vct/identity`)
    assert.equal(stored.issuer, issuer.did)
    assert.deepEqual(stored.credentialSubject, {
      given_name: 'Erika',
      family_name: 'Mustermann',
      address: { locality: 'Köln', country: 'DE' },
    })
    assert.deepEqual(
      wallet.credentials().map((c) => c.format),
      ['dc+sd-jwt'],
    )
  })

  test('dc+sd-jwt bound by jwk when the configuration binds jwk only', async () => {
    const { wallet, result } = await receive({ configurationIds: [SD_JWT_JWK_CONFIG] })
    assert.equal(result.status, 'issued')
    const request = posts(`${ISSUER_PATH}/credential`).at(-1)?.body as { proofs: { jwt: string[] } }
    const header = decodeJws(request.proofs.jwt[0] as string).header
    assert.equal(header.kid, undefined)
    assert.deepEqual(header.jwk, wallet.publicJwk())
  })

  for (const [format, id] of [
    ['jwt_vc_json', JWT_CONFIG],
    ['dc+sd-jwt', SD_JWT_CONFIG],
  ] as const) {
    test(`${format}, deferred: 202 {transaction_id, interval}, waits the interval, then 200`, async () => {
      const { result, waits } = await receive({ configurationIds: [id], deferredPolls: 2, txCode: '1234' })
      assert.equal(result.status, 'issued')
      assert.equal(result.credentials[0]?.format, format)
      assert.equal(posts(`${ISSUER_PATH}/deferred`).length >= 3, true)
      assert.equal(waits.length, 3, 'one wait per 202')
      for (const ms of waits) assert.ok(ms > 1900 && ms <= 2000, `waited ${ms} ms of the announced 2 s`)
      assert.ok(issuer.notifications.some((n) => n.notification_id === result.notificationId))
    })
  }

  test('protocol draft15 forced: Sphereon appends the well-known path and finds no metadata', async () => {
    const wallet = await Wallet.create({ protocol: 'draft15' })
    await assert.rejects(wallet.receive(issuer.offer({ configurationIds: [JWT_CONFIG] })), {
      name: 'WalletProtocolError',
      step: 'metadata',
    })
    assert.ok(issuer.log.some((e) => e.url === `${ISSUER_PATH}/.well-known/openid-credential-issuer`))
  })
})

describe('the wallet refuses a bad SD-JWT VC (and tells the issuer)', () => {
  const cases = [
    ['foreign-cnf', 'wrong_holder_key', /cnf\.jwk is not this holder's key/],
    ['tampered-disclosure', 'invalid_credential', /disclosure is not referenced/],
    ['foreign-signer', 'invalid_credential', /signature/i],
    ['x5c', 'invalid_credential', /x5c chain, but this wallet has no trust anchor configured/],
  ] as const
  for (const [defect, error, description] of cases) {
    test(`${defect}: verify ${error}, nothing stored, credential_failure sent`, async () => {
      const wallet = await Wallet.create()
      await rejectsWith(wallet.receive(issuer.offer({ configurationIds: [SD_JWT_CONFIG], defect })), {
        step: 'verify',
        status: 200,
        error,
        description,
      })
      assert.equal(wallet.credentials().length, 0)
      assert.equal(issuer.notifications.at(-1)?.event, 'credential_failure')
    })
  }
})

describe('misbehaviours on the 1.0 path: the issuer refuses each one', () => {
  const expected: [
    Misbehaviour,
    string,
    { step: WalletStep; status: number; error: string; description?: RegExp },
  ][] = [
    ['foreign-kid', SD_JWT_CONFIG, { step: 'credential', status: 400, error: 'invalid_proof' }],
    ['foreign-kid', SD_JWT_JWK_CONFIG, { step: 'credential', status: 400, error: 'invalid_proof' }],
    ['wrong-nonce', JWT_CONFIG, { step: 'credential', status: 400, error: 'invalid_nonce' }],
    ['bad-signature', JWT_CONFIG, { step: 'credential', status: 400, error: 'invalid_proof' }],
    ['wrong-aud', SD_JWT_CONFIG, { step: 'credential', status: 400, error: 'invalid_proof' }],
    [
      'legacy-proof',
      SD_JWT_CONFIG,
      { step: 'credential', status: 400, error: 'invalid_credential_request', description: /send proofs/ },
    ],
    [
      'legacy-format-request',
      JWT_CONFIG,
      { step: 'credential', status: 400, error: 'invalid_credential_request' },
    ],
    [
      'replayed-code',
      JWT_CONFIG,
      { step: 'token', status: 400, error: 'invalid_grant', description: /already used/ },
    ],
    // the credential request around the proof, sent as plain HTTP (the library would not send them)
    [
      'missing-proof',
      JWT_CONFIG,
      { step: 'credential', status: 400, error: 'invalid_proof', description: /proof/ },
    ],
    [
      'unknown-configuration',
      SD_JWT_CONFIG,
      { step: 'credential', status: 400, error: 'invalid_credential_request' },
    ],
    [
      'unknown-credential-identifier',
      SD_JWT_CONFIG,
      { step: 'credential', status: 400, error: 'invalid_credential_request' },
    ],
    ['token-in-query', JWT_CONFIG, { step: 'credential', status: 401, error: 'invalid_token' }],
  ]
  for (const [misbehaviour, id, answer] of expected) {
    test(`${misbehaviour} (${id}): ${answer.step} ${answer.status} ${answer.error}`, async () => {
      const wallet = await Wallet.create()
      await rejectsWith(
        wallet.receive(issuer.offer({ configurationIds: [id] }), { misbehave: [misbehaviour] }),
        answer,
      )
      assert.equal(wallet.credentials().length, 0)
    })
  }

  test('replayed-nonce: the nonce of the last successful request is refused', async () => {
    const { wallet } = await receive({ configurationIds: [JWT_CONFIG] })
    await rejectsWith(
      wallet.receive(issuer.offer({ configurationIds: [SD_JWT_CONFIG] }), { misbehave: ['replayed-nonce'] }),
      { step: 'credential', status: 400, error: 'invalid_nonce' },
    )
  })

  test('wrong-tx-code and missing-tx-code go out as plain HTTP and are refused', async () => {
    const wallet = await Wallet.create()
    await rejectsWith(
      wallet.receive(issuer.offer({ configurationIds: [JWT_CONFIG], txCode: '4321' }), {
        txCode: '4321',
        misbehave: ['wrong-tx-code'],
      }),
      { step: 'token', status: 400, error: 'invalid_grant' },
    )
    await rejectsWith(
      wallet.receive(issuer.offer({ configurationIds: [JWT_CONFIG], txCode: '4321' }), {
        misbehave: ['missing-tx-code'],
      }),
      { step: 'token', status: 400, error: 'invalid_request' },
    )
  })
})
