// The wallet's authorization code flow (HAIP 1.0: PAR, PKCE S256, wallet attestation, DPoP) against an
// independent issuer built on the OpenWallet Foundation's server classes (test/fixtures/owf-haip-issuer.ts):
// issuer-initiated (an offer with issuer_state) and wallet-initiated, dc+sd-jwt and jwt_vc_json, the token
// endpoint's DPoP nonce, a separate authorization server with deferred issuance, the issuer's flaws the
// wallet must refuse (RFC 9207 §2.4 iss, RFC 6749 §10.12 state), each misbehaviour and the issuer's answer,
// and the CLI's `wallet request`.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { decodeJws } from '../../src/shared/jws.ts'
import { testWalletProviderTrust } from '../../src/shared/oauth/test-wallet-provider.ts'
import {
  AUTHORIZATION_MISBEHAVIOURS,
  type AuthorizationMisbehaviour,
  DEFAULT_REDIRECT_URI,
  type StoredCredential,
  Wallet,
  WalletProtocolError,
  type WalletStep,
} from '../../src/wallet/index.ts'
import {
  HAIP_AS_PATH,
  HAIP_SCOPES,
  type HaipFlaw,
  JWT_CONFIG,
  type OwfHaipIssuer,
  type OwfHaipIssuerOptions,
  SD_JWT_CONFIG,
  startOwfHaipIssuer,
} from '../fixtures/owf-haip-issuer.ts'
import { walletCli } from '../helpers.ts'

const TEST_PROVIDER = testWalletProviderTrust.jwks?.[0] as JsonWebKey

const started: OwfHaipIssuer[] = []
async function start(options: Partial<OwfHaipIssuerOptions> = {}): Promise<OwfHaipIssuer> {
  const issuer = await startOwfHaipIssuer({ trustedWalletProviders: [TEST_PROVIDER], ...options })
  started.push(issuer)
  return issuer
}

let issuer: OwfHaipIssuer
before(async () => {
  issuer = await start()
})
after(() => Promise.all(started.map((i) => i.close())))

/** A P-256 wallet (the issuer takes ES256 key proofs only) trusting the issuer's CA (dc+sd-jwt x5c). */
const walletFor = (on: OwfHaipIssuer) => Wallet.create({ keyType: 'P-256', trustAnchors: [on.caPem] })

async function rejectsWith(
  promise: Promise<unknown>,
  expected: { step: WalletStep; status: number; error?: string; description?: RegExp },
) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof WalletProtocolError, String(error))
    assert.equal(error.step, expected.step, error.message)
    assert.equal(error.status, expected.status, error.message)
    if (expected.error !== undefined) assert.equal(error.error, expected.error, error.message)
    if (expected.description) assert.match(String(error.errorDescription), expected.description)
    return true
  })
}

/** What the issuer saw since `mark` (the counts of each list when it was taken). */
function since(on: OwfHaipIssuer, mark: Record<string, number>) {
  const { seen } = on
  return {
    par: seen.par.slice(mark.par),
    authorize: seen.authorize.slice(mark.authorize),
    token: seen.token.slice(mark.token),
    credential: seen.credential.slice(mark.credential),
    deferred: seen.deferred.slice(mark.deferred),
  }
}
const markOf = (on: OwfHaipIssuer) =>
  Object.fromEntries(Object.entries(on.seen).map(([k, v]) => [k, (v as unknown[]).length]))

describe('issuer-initiated: an offer with an authorization_code grant', () => {
  test('dc+sd-jwt by reference: PAR with issuer_state, redirect, DPoP nonce retry, DPoP-bound credential request', async () => {
    const wallet = await walletFor(issuer)
    const mark = markOf(issuer)
    const offer = await issuer.createOffer({ configurationIds: [SD_JWT_CONFIG] })
    const steps: string[] = []
    const result = await wallet.receive(offer.link, { onStep: (step) => steps.push(step) })
    assert.equal(result.status, 'issued')
    assert.equal(result.session.flow, 'authorization_code')
    assert.equal(result.session.protocol, '1.0')
    assert.deepEqual(steps, ['offer', 'metadata', 'authorization', 'token', 'credential', 'verify'])
    const [stored] = result.credentials as [StoredCredential]
    assert.equal(stored.format, 'dc+sd-jwt')
    assert.equal(stored.credentialSubject.family_name, 'Mustermann')

    const seen = since(issuer, mark)
    const [par] = seen.par
    assert.ok(par)
    assert.equal(par.status, 201)
    assert.equal(par.issuerState, offer.issuerState)
    assert.equal(par.codeChallengeMethod, 'S256')
    assert.equal(par.redirectUri, DEFAULT_REDIRECT_URI)
    assert.equal(par.scope, HAIP_SCOPES[SD_JWT_CONFIG])
    assert.deepEqual(par.authorizationDetails, [
      { type: 'openid_credential', credential_configuration_id: SD_JWT_CONFIG },
    ])
    assert.equal(par.clientAttestation?.payload.sub, par.clientId)
    assert.equal(par.clientAttestationPop?.payload.aud, issuer.authorizationServer)
    assert.equal(seen.authorize[0]?.status, 302)
    // RFC 9449 §8: the first token request has no nonce, is answered use_dpop_nonce, and retried once
    assert.deepEqual(
      seen.token.map((t) => [t.status, t.error, t.dpopNonce === undefined]),
      [
        [400, 'use_dpop_nonce', true],
        [200, undefined, false],
      ],
    )
    assert.equal(seen.token[1]?.grantType, 'authorization_code')
    const [credential] = seen.credential
    assert.equal(credential?.status, 200)
    assert.equal(credential?.scheme, 'DPoP')
    // 1.0 §6.2, §8.2: the token's authorization_details granted a credential_identifier; it is what is asked
    assert.ok(credential?.credentialIdentifier?.startsWith(`${SD_JWT_CONFIG}-`))
    assert.equal(credential?.credentialConfigurationId, undefined)
    assert.ok(credential?.dpop?.payload.ath)
  })

  test('jwt_vc_json by value', async () => {
    const wallet = await walletFor(issuer)
    const offer = await issuer.createOffer({ configurationIds: [JWT_CONFIG], by: 'value' })
    const result = await wallet.receive(offer.link)
    assert.equal(result.status, 'issued')
    const [stored] = result.credentials as [StoredCredential]
    assert.equal(stored.format, 'jwt_vc_json')
    assert.equal(decodeJws(stored.credential).payload.sub, wallet.did)
    assert.equal(stored.credentialSubject.degree, 'MSc Physics')
  })

  test("the wallet remembers the token endpoint's DPoP nonce: its next issuance needs no retry", async () => {
    const wallet = await walletFor(issuer)
    await wallet.receive((await issuer.createOffer({ configurationIds: [JWT_CONFIG] })).link)
    const mark = markOf(issuer)
    await wallet.receive((await issuer.createOffer({ configurationIds: [JWT_CONFIG] })).link)
    const { token } = since(issuer, mark)
    assert.equal(token.length, 1)
    assert.equal(token[0]?.status, 200)
    assert.ok(token[0]?.dpopNonce)
  })
})

describe('wallet-initiated: no offer', () => {
  for (const configuration of [SD_JWT_CONFIG, JWT_CONFIG]) {
    test(`${configuration}: from the issuer metadata, without issuer_state`, async () => {
      const wallet = await walletFor(issuer)
      const mark = markOf(issuer)
      const result = await wallet.request(issuer.credentialIssuer, configuration)
      assert.equal(result.status, 'issued')
      assert.equal(result.session.initiatedBy, 'wallet')
      assert.equal((result.credentials[0] as StoredCredential).configurationId, configuration)
      const [par] = since(issuer, mark).par
      assert.equal(par?.issuerState, undefined)
      assert.deepEqual(par?.authorizationDetails, [
        { type: 'openid_credential', credential_configuration_id: configuration },
      ])
    })
  }
})

describe('the issuer variants', () => {
  test('no DPoP nonce required: one token request', async () => {
    const plain = await start({ dpopNonce: false })
    const wallet = await walletFor(plain)
    const result = await wallet.request(plain.credentialIssuer, JWT_CONFIG)
    assert.equal(result.status, 'issued')
    assert.deepEqual(
      plain.seen.token.map((t) => [t.status, t.dpopNonce]),
      [[200, undefined]],
    )
  })

  test('a separate authorization server and deferred issuance: locations (1.0 §5.1.1), DPoP at the deferred endpoint', async () => {
    const separate = await start({ separateAuthorizationServer: true, deferred: true })
    assert.ok(separate.authorizationServer.endsWith(HAIP_AS_PATH))
    const wallet = await walletFor(separate)
    const offer = await separate.createOffer({ configurationIds: [SD_JWT_CONFIG] })
    const result = await wallet.receive(offer.link, {
      waitForDeferred: { timeoutMs: 30_000 },
      sleep: async () => {},
    })
    assert.equal(result.status, 'issued')
    assert.deepEqual(separate.seen.par[0]?.authorizationDetails, [
      {
        type: 'openid_credential',
        credential_configuration_id: SD_JWT_CONFIG,
        locations: [separate.credentialIssuer],
      },
    ])
    assert.equal(separate.seen.par[0]?.clientAttestationPop?.payload.aud, separate.authorizationServer)
    assert.equal(separate.seen.credential[0]?.status, 202)
    const [deferred] = separate.seen.deferred
    assert.equal(deferred?.status, 200)
    assert.equal(deferred?.scheme, 'DPoP')
    assert.ok(deferred?.dpop?.payload.ath)
  })

  test('no-par-required: the wallet pushes its request anyway (HAIP)', async () => {
    const lax = await start({ flaw: 'no-par-required' })
    const result = await (await walletFor(lax)).request(lax.credentialIssuer, JWT_CONFIG)
    assert.equal(result.status, 'issued')
    assert.equal(lax.seen.par.length, 1)
  })

  const REFUSALS: Record<Exclude<HaipFlaw, 'no-par-required'>, RegExp> = {
    'no-iss':
      /^iss \(RFC 9207 §2\.4\): the authorization response has no iss, but the authorization server .* says authorization_response_iss_parameter_supported/,
    'wrong-iss':
      /^iss \(RFC 9207 §2\.4\): the authorization response names the issuer "http:\/\/127\.0\.0\.1:\d+\/haip\/another-as", not http:\/\/127\.0\.0\.1:\d+\/haip\/issuer/,
    'wrong-state':
      /^state \(RFC 6749 §4\.1\.2, §10\.12\): the authorization response carries the state "[\w-]+", not the "[\w-]+" of this wallet's authorization request/,
  }
  for (const [flaw, description] of Object.entries(REFUSALS)) {
    test(`${flaw}: the authorization response is refused naming the clause; the code is never redeemed`, async () => {
      const flawed = await start({ flaw: flaw as HaipFlaw })
      const wallet = await walletFor(flawed)
      const offer = await flawed.createOffer({ configurationIds: [SD_JWT_CONFIG] })
      await rejectsWith(wallet.receive(offer.link), {
        step: 'authorization',
        status: 302,
        error: 'invalid_authorization_response',
        description,
      })
      await rejectsWith(wallet.request(flawed.credentialIssuer, JWT_CONFIG), {
        step: 'authorization',
        status: 302,
        error: 'invalid_authorization_response',
        description,
      })
      assert.equal(flawed.seen.token.length, 0)
      assert.equal(wallet.credentials().length, 0)
    })
  }
})

/** The OWF issuer's answer to each misbehaviour: step, status, error and the start of its description. */
const ANSWERS: Record<
  AuthorizationMisbehaviour,
  { step: WalletStep; status: number; error?: string; description?: RegExp }
> = {
  'pkce-verifier-mismatch': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /code_verifier/i,
  },
  'code-replay': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /^the authorization code was already used$/,
  },
  'dpop-wrong-htu': { step: 'token', status: 400, error: 'invalid_dpop_proof', description: /htu/i },
  'dpop-wrong-htm': { step: 'token', status: 400, error: 'invalid_dpop_proof', description: /htm/i },
  'dpop-replayed-jti': {
    step: 'token',
    status: 400,
    error: 'invalid_dpop_proof',
    description: /^DPoP proof: jti [\w-]+ was used before \(replay\)$/,
  },
  // the issuer's WWW-Authenticate for a Bearer use is @openid4vc/oauth2's toHeaderValue() of a challenge without
  // error: `DPoP error, error_description, scope` (null members written as bare names), so the wire carries no
  // error code; what the issuer decided is checked in its `seen` (below)
  'dpop-token-as-bearer': { step: 'credential', status: 401 },
  'attestation-untrusted-provider': { step: 'par', status: 401, error: 'invalid_client', description: /./ },
  'attestation-pop-wrong-aud': { step: 'par', status: 401, error: 'invalid_client', description: /aud/i },
  'authorization-wrong-redirect-uri': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /^redirect_uri differs from the authorization request \(RFC 6749 §4\.1\.3\)$/,
  },
}

describe('each misbehaviour against the OWF issuer: refused, nothing stored', () => {
  test('the table covers every misbehaviour', () => {
    assert.deepEqual(Object.keys(ANSWERS).sort(), [...AUTHORIZATION_MISBEHAVIOURS].sort())
  })
  for (const misbehaviour of AUTHORIZATION_MISBEHAVIOURS) {
    const answer = ANSWERS[misbehaviour]
    test(`${misbehaviour}: ${answer.step} ${answer.status} ${answer.error}`, async () => {
      const wallet = await walletFor(issuer)
      const offer = await issuer.createOffer({ configurationIds: [JWT_CONFIG] })
      await rejectsWith(wallet.receive(offer.link, { misbehave: [misbehaviour] }), answer)
      assert.equal(wallet.credentials().length, 0)
      if (misbehaviour === 'dpop-token-as-bearer') {
        const refused = issuer.seen.credential.at(-1)
        assert.equal(refused?.scheme, 'Bearer')
        assert.ok(refused?.dpop?.payload.ath, 'the DPoP proof went along')
        assert.deepEqual([refused?.status, refused?.error], [401, 'invalid_token'])
      }
    })
  }

  test('code-replay: the first redemption was issued a token, the second is refused', async () => {
    const wallet = await walletFor(issuer)
    const mark = markOf(issuer)
    const session = await wallet.startIssuanceAt(issuer.credentialIssuer, JWT_CONFIG)
    await rejectsWith(session.token({ misbehave: ['code-replay'] }), ANSWERS['code-replay'])
    const tokens = since(issuer, mark).token.filter((t) => t.error !== 'use_dpop_nonce')
    assert.deepEqual(
      tokens.map((t) => t.status),
      [200, 400],
    )
    assert.equal(tokens[0]?.code, tokens[1]?.code)
  })
})

describe('the CLI: vc-harness wallet request / receive', () => {
  let dir: string
  let anchor: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'vc-harness-haip-'))
    anchor = join(dir, 'ca.pem')
    writeFileSync(anchor, issuer.caPem)
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  test('request --issuer --configuration: issued, printed as JSON', async () => {
    const { out, error } = await walletCli([
      'request',
      '--issuer',
      issuer.credentialIssuer,
      '--configuration',
      SD_JWT_CONFIG,
      '--key-type',
      'P-256',
      '--trust-anchor',
      anchor,
    ])
    assert.equal(error, undefined, String(error?.message))
    const printed = JSON.parse(out)
    assert.equal(printed.status, 'issued')
    assert.equal(printed.credentials[0].format, 'dc+sd-jwt')
  })

  test('receive with --misbehave dpop-token-as-bearer: the issuer refusal as the error', async () => {
    const offer = await issuer.createOffer({ configurationIds: [JWT_CONFIG] })
    const { error } = await walletCli([
      'receive',
      offer.link,
      '--key-type',
      'P-256',
      '--misbehave',
      'dpop-token-as-bearer',
    ])
    assert.match(String(error?.message), /^credential: 401 /)
  })
})
