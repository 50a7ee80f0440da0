// The wallet's authorization code flow (src/wallet/issuance-authorization.ts) without a socket: the checks of the
// authorization response on constructed redirect URLs, the flow choice, and the whole flow against a fake HAIP
// issuer behind the wallet's `fetch` whose authorization server checks what it gets with the project's own
// verifiers (src/shared/oauth: DPoP, wallet attestation, PKCE). Each misbehaviour is compared with the honest
// request: exactly one thing differs, and the fake refuses it. The independent issuer (OWF libraries) is in
// haip-owf.test.ts.
import assert from 'node:assert/strict'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { isObject } from '../../src/shared/json.ts'
import { decodeJws } from '../../src/shared/jws.ts'
import {
  ATTEST_JWT_CLIENT_AUTH,
  verifyClientAttestation,
  type WalletProviderTrust,
} from '../../src/shared/oauth/client-attestation.ts'
import { accessTokenHash, DpopError, dpopChallenge, verifyDpopProof } from '../../src/shared/oauth/dpop.ts'
import { s256 } from '../../src/shared/oauth/pkce.ts'
import {
  TEST_WALLET_PROVIDER_ISSUER,
  testWalletProviderTrust,
} from '../../src/shared/oauth/test-wallet-provider.ts'
import { PRE_AUTHORIZED_GRANT } from '../../src/shared/wire.ts'
import { AUTHORIZATION_TAMPER, UNTRUSTED_PROVIDER_ISSUER } from '../../src/wallet/authorization-tamper.ts'
import {
  AUTHORIZATION_MISBEHAVIOUR_HELP,
  AUTHORIZATION_MISBEHAVIOURS,
  type AuthorizationMisbehaviour,
  checkAuthorizationResponse,
  chooseFlow,
  DEFAULT_REDIRECT_URI,
  defaultClientId,
  type IssuanceMisbehaviour,
  MISBEHAVIOURS,
  Wallet,
  WalletProtocolError,
  type WalletStep,
  WalletUsageError,
  walletProviderFromJwk,
} from '../../src/wallet/index.ts'
import { WRONG_AUDIENCE, WRONG_URI_SUFFIX } from '../../src/wallet/misbehaviour.ts'
import { walletCli } from '../helpers.ts'

// --- the authorization response --------------------------------------------------------------------------------

const AS = 'https://as.example/haip'
const STATE = 'state-0123456789'
const expected = {
  redirectUri: DEFAULT_REDIRECT_URI,
  state: STATE,
  issuer: AS,
  issSupported: true,
  status: 302,
}
const redirect = (params: Record<string, string>, base = DEFAULT_REDIRECT_URI) => {
  const url = new URL(base)
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v)
  return url.href
}

function refusedWith(run: () => unknown, error: string, description: RegExp) {
  assert.throws(run, (e: unknown) => {
    assert.ok(e instanceof WalletProtocolError, String(e))
    assert.equal(e.step, 'authorization')
    assert.equal(e.error, error, e.message)
    assert.match(String(e.errorDescription), description)
    return true
  })
}

describe('the authorization response (RFC 9207 §2.4, RFC 6749 §4.1.2)', () => {
  test('code, state and the expected iss: the code', () => {
    const response = checkAuthorizationResponse(redirect({ code: 'C', state: STATE, iss: AS }), expected)
    assert.deepEqual(response, { code: 'C', state: STATE, iss: AS })
  })

  test('no iss although the metadata says authorization_response_iss_parameter_supported: refused', () => {
    refusedWith(
      () => checkAuthorizationResponse(redirect({ code: 'C', state: STATE }), expected),
      'invalid_authorization_response',
      /^iss \(RFC 9207 §2\.4\): the authorization response has no iss, but the authorization server https:\/\/as\.example\/haip says authorization_response_iss_parameter_supported/,
    )
  })

  test('no iss and no promise in the metadata: still refused (HAIP), unless requireIss is false', () => {
    const unpromised = { ...expected, issSupported: false }
    refusedWith(
      () => checkAuthorizationResponse(redirect({ code: 'C', state: STATE }), unpromised),
      'invalid_authorization_response',
      /^iss \(RFC 9207 §2\.4\): .* this wallet \(HAIP\) requires it/,
    )
    const lenient = checkAuthorizationResponse(redirect({ code: 'C', state: STATE }), {
      ...unpromised,
      requireIss: false,
    })
    assert.equal(lenient.code, 'C')
  })

  test('another issuer in iss (mix-up): refused, also for an error response', () => {
    const wrong = 'https://attacker.example'
    refusedWith(
      () => checkAuthorizationResponse(redirect({ code: 'C', state: STATE, iss: wrong }), expected),
      'invalid_authorization_response',
      /^iss \(RFC 9207 §2\.4\): the authorization response names the issuer "https:\/\/attacker\.example", not https:\/\/as\.example\/haip/,
    )
    refusedWith(
      () =>
        checkAuthorizationResponse(redirect({ error: 'access_denied', state: STATE, iss: wrong }), expected),
      'invalid_authorization_response',
      /^iss \(RFC 9207 §2\.4\)/,
    )
  })

  test('another state, or none: refused', () => {
    refusedWith(
      () => checkAuthorizationResponse(redirect({ code: 'C', state: 'other', iss: AS }), expected),
      'invalid_authorization_response',
      /^state \(RFC 6749 §4\.1\.2, §10\.12\): the authorization response carries the state "other", not the "state-0123456789"/,
    )
    refusedWith(
      () => checkAuthorizationResponse(redirect({ code: 'C', iss: AS }), expected),
      'invalid_authorization_response',
      /^state \(RFC 6749 §4\.1\.2, §10\.12\): the authorization response carries no state/,
    )
  })

  test('an error response is surfaced with its code and description', () => {
    assert.throws(
      () =>
        checkAuthorizationResponse(
          redirect({ error: 'access_denied', error_description: 'the user said no', state: STATE, iss: AS }),
          expected,
        ),
      (e: unknown) => {
        assert.ok(e instanceof WalletProtocolError)
        assert.equal(e.step, 'authorization')
        assert.equal(e.status, 302)
        assert.equal(e.error, 'access_denied')
        assert.equal(e.errorDescription, 'the user said no (error response, RFC 6749 §4.1.2.1)')
        return true
      },
    )
  })

  test('sent elsewhere than the redirect_uri, or without a code: refused', () => {
    refusedWith(
      () =>
        checkAuthorizationResponse(
          redirect({ code: 'C', state: STATE, iss: AS }, 'https://elsewhere.example/cb'),
          expected,
        ),
      'invalid_authorization_response',
      /not this wallet's redirect_uri https:\/\/wallet\.vc-harness\.invalid\/callback \(RFC 6749 §3\.1\.2\)/,
    )
    refusedWith(
      () => checkAuthorizationResponse(redirect({ state: STATE, iss: AS }), expected),
      'invalid_authorization_response',
      /^code \(RFC 6749 §4\.1\.2\)/,
    )
  })
})

describe('which flow redeems an offer (OpenID4VCI 1.0 §4.1.1)', () => {
  const pre = { [PRE_AUTHORIZED_GRANT]: { 'pre-authorized_code': 'P' } }
  const code = { authorization_code: { issuer_state: 'S' } }
  test('default: the pre-authorized code when there is one, else the authorization code flow', () => {
    assert.equal(chooseFlow(undefined, pre), 'pre-authorized_code')
    assert.equal(chooseFlow(undefined, { ...pre, ...code }), 'pre-authorized_code')
    assert.equal(chooseFlow(undefined, code), 'authorization_code')
    assert.equal(chooseFlow(undefined, undefined), 'authorization_code')
    assert.equal(chooseFlow(undefined, {}), 'authorization_code')
    assert.throws(() => chooseFlow(undefined, { other: {} }), { name: 'WalletProtocolError' })
  })
  test('asked for: taken when the offer grants it, else a WalletUsageError', () => {
    assert.equal(chooseFlow('authorization_code', { ...pre, ...code }), 'authorization_code')
    assert.throws(() => chooseFlow('authorization_code', pre), WalletUsageError)
    assert.throws(() => chooseFlow('pre-authorized_code', code), WalletUsageError)
  })
})

describe('the authorization code flow misbehaviours', () => {
  test('each has its row, its help text and its line in the CLI usage, and none is a pre-authorized one', async () => {
    assert.deepEqual(Object.keys(AUTHORIZATION_TAMPER).sort(), [...AUTHORIZATION_MISBEHAVIOURS].sort())
    assert.deepEqual(
      Object.keys(AUTHORIZATION_MISBEHAVIOUR_HELP).sort(),
      [...AUTHORIZATION_MISBEHAVIOURS].sort(),
    )
    const { WALLET_USAGE } = await import('../../src/cli/wallet.ts')
    for (const m of AUTHORIZATION_MISBEHAVIOURS) {
      assert.ok(!(MISBEHAVIOURS as readonly string[]).includes(m), m)
      assert.match(WALLET_USAGE, new RegExp(`\\b${m}\\b`), m)
    }
  })

  test('the CLI refuses an unknown misbehaviour naming both lists, and request needs --issuer and --configuration', async () => {
    const unknown = await walletCli([
      'request',
      '--issuer',
      AS,
      '--configuration',
      'x',
      '--misbehave',
      'nope',
    ])
    assert.match(
      String(unknown.error?.message),
      /--misbehave: unknown nope; known: .*replayed-code.*code-replay/,
    )
    const missing = await walletCli(['request', '--issuer', AS])
    assert.match(String(missing.error?.message), /request needs --issuer .* and --configuration/)
    const flow = await walletCli(['receive', 'openid-credential-offer://?x', '--flow', 'implicit'])
    assert.match(
      String(flow.error?.message),
      /--flow: expected one of pre-authorized_code, authorization_code/,
    )
  })
})

// --- a fake HAIP issuer behind the wallet's fetch --------------------------------------------------------------

const ISSUER = 'https://issuer.example/haip'
const PATH = new URL(ISSUER).pathname
const SEPARATE_AS = 'https://login.example/realm'

type Flaw =
  | 'no-iss'
  | 'wrong-iss'
  | 'wrong-state'
  | 'error-response'
  | 'page'
  | 'bearer-token'
  | 'dpop-nonce'
  | 'resource-nonce'
  | 'credential-identifiers'
  | 'separate-as'

interface Sent {
  method: string
  path: string
  headers: Record<string, string>
  form: Record<string, string>
  json: Record<string, unknown> | undefined
  /** what the fake found wrong, when it refused */
  refusal?: string
}

/**
 * A credential issuer and its authorization server in one fake: RFC 8414 metadata, PAR (RFC 9126), an
 * authorization endpoint that redirects at once (or shows a page), a token endpoint (PKCE S256, attestation,
 * DPoP-bound tokens), the nonce endpoint and a credential endpoint that answers 202. The checks are the shared
 * verifiers'; a DPoP jti is accepted once per server.
 */
function fakeHaipIssuer(
  flaws: readonly Flaw[] = [],
  trust: WalletProviderTrust[] = [testWalletProviderTrust],
) {
  const sent: Sent[] = []
  const asIssuer = flaws.includes('separate-as') ? SEPARATE_AS : ISSUER
  const asPath = new URL(asIssuer).pathname
  const asOrigin = new URL(asIssuer).origin
  const metadata = {
    credential_issuer: ISSUER,
    credential_endpoint: `${ISSUER}/credential`,
    nonce_endpoint: `${ISSUER}/nonce`,
    ...(flaws.includes('separate-as') && { authorization_servers: [SEPARATE_AS] }),
    credential_configurations_supported: {
      degree: {
        format: 'jwt_vc_json',
        scope: 'degree',
        cryptographic_binding_methods_supported: ['did:key'],
        credential_signing_alg_values_supported: ['ES256'],
        proof_types_supported: { jwt: { proof_signing_alg_values_supported: ['EdDSA', 'ES256', 'ES256K'] } },
        credential_definition: { type: ['VerifiableCredential', 'UniversityDegree'] },
        credential_metadata: { display: [{ name: 'Degree', locale: 'en' }] },
      },
    },
  }
  const as = {
    issuer: asIssuer,
    authorization_endpoint: `${asIssuer}/authorize`,
    token_endpoint: `${asIssuer}/token`,
    pushed_authorization_request_endpoint: `${asIssuer}/par`,
    require_pushed_authorization_requests: true,
    authorization_response_iss_parameter_supported: true,
    code_challenge_methods_supported: ['S256'],
    dpop_signing_alg_values_supported: ['ES256'],
    token_endpoint_auth_methods_supported: [ATTEST_JWT_CLIENT_AUTH],
    grant_types_supported: ['authorization_code'],
  }
  const pushed = new Map<string, { form: Record<string, string>; jkt: string; clientId: string }>()
  const codes = new Map<
    string,
    { form: Record<string, string>; jkt: string; clientId: string; used: boolean }
  >()
  const tokens = new Map<string, string>()
  const jtis = new Set<string>()
  const nonces = {
    as: `as-nonce-${randomBytes(4).toString('hex')}`,
    rs: `rs-nonce-${randomBytes(4).toString('hex')}`,
  }
  let counter = 0
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', ...headers },
    })

  /** The AS's checks of one request: attestation (aud = its issuer) and DPoP (htu = this URL); a jti once. */
  async function clientOf(request: Request, entry: Sent, url: URL) {
    const attested = await verifyClientAttestation(
      request.headers.get('oauth-client-attestation') ?? undefined,
      request.headers.get('oauth-client-attestation-pop') ?? undefined,
      { audience: asIssuer, trust, now: Date.now(), maxPopAgeSeconds: 300, clientId: entry.form.client_id },
    )
    const dpop = verifyDpopProof(request.headers.get('dpop') ?? undefined, {
      htm: request.method,
      htu: `${url.origin}${url.pathname}`,
      now: Date.now(),
      maxAgeSeconds: 300,
    })
    if (jtis.has(dpop.jti))
      throw new DpopError('invalid_dpop_proof', 'the DPoP proof jti was used before (RFC 9449 §11.1)')
    if (flaws.includes('dpop-nonce') && dpop.nonce !== nonces.as) {
      throw new DpopError('use_dpop_nonce', 'a DPoP nonce is required (RFC 9449 §8)')
    }
    jtis.add(dpop.jti)
    return { clientId: attested.clientId, jkt: dpop.jkt }
  }

  const fetch = (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const url = new URL(request.url)
    const text = request.method === 'POST' ? await request.text() : ''
    const type = request.headers.get('content-type') ?? ''
    const entry: Sent = {
      method: request.method,
      path: `${url.origin === asOrigin && url.origin !== new URL(ISSUER).origin ? 'AS ' : ''}${url.pathname}`,
      headers: Object.fromEntries(request.headers),
      form: type.includes('form') ? Object.fromEntries(new URLSearchParams(text)) : {},
      json: type.includes('json') && text ? JSON.parse(text) : undefined,
    }
    if (url.pathname.includes('.well-known')) {
      if (url.pathname === `/.well-known/openid-credential-issuer${PATH}`) return json(200, metadata)
      if (url.pathname === `/.well-known/oauth-authorization-server${asPath}` && url.origin === asOrigin)
        return json(200, as)
      return json(404, { error: 'not_found' })
    }
    sent.push(entry)
    const refuse = (
      status: number,
      error: string,
      description: string,
      headers: Record<string, string> = {},
    ) => {
      entry.refusal = `${error}: ${description}`
      return json(status, { error, error_description: description }, headers)
    }
    const asError = (e: unknown) => {
      if (e instanceof DpopError && e.code === 'use_dpop_nonce')
        return refuse(400, e.code, e.message, { 'dpop-nonce': nonces.as })
      if (e instanceof DpopError) return refuse(400, e.code, e.message)
      if (isObject(e) && e.code === 'invalid_client') return refuse(401, 'invalid_client', String(e.message))
      throw e
    }
    if (url.origin === asOrigin && url.pathname === `${asPath}/par`) {
      try {
        const { clientId, jkt } = await clientOf(request, entry, url)
        const requestUri = `urn:ietf:params:oauth:request_uri:${++counter}`
        pushed.set(requestUri, { form: entry.form, jkt, clientId })
        return json(201, { request_uri: requestUri, expires_in: 60 })
      } catch (e) {
        return asError(e)
      }
    }
    if (url.origin === asOrigin && url.pathname === `${asPath}/authorize`) {
      const par = pushed.get(url.searchParams.get('request_uri') ?? '')
      if (!par || par.clientId !== url.searchParams.get('client_id'))
        return refuse(400, 'invalid_request', 'unknown request_uri')
      if (flaws.includes('page'))
        return new Response('<html>log in</html>', { status: 200, headers: { 'content-type': 'text/html' } })
      const code = `code-${++counter}`
      codes.set(code, { ...par, used: false })
      const back = new URL(par.form.redirect_uri as string)
      if (flaws.includes('error-response')) back.searchParams.set('error', 'access_denied')
      else back.searchParams.set('code', code)
      back.searchParams.set(
        'state',
        flaws.includes('wrong-state') ? 'another-state' : (par.form.state as string),
      )
      if (!flaws.includes('no-iss'))
        back.searchParams.set('iss', flaws.includes('wrong-iss') ? 'https://mix-up.example' : asIssuer)
      return new Response(null, { status: 302, headers: { location: back.href } })
    }
    if (url.origin === asOrigin && url.pathname === `${asPath}/token`) {
      try {
        const { clientId, jkt } = await clientOf(request, entry, url)
        const grant = codes.get(entry.form.code ?? '')
        if (!grant || grant.clientId !== clientId) return refuse(400, 'invalid_grant', 'unknown code')
        if (grant.used) return refuse(400, 'invalid_grant', 'the code was used before')
        if (s256(entry.form.code_verifier ?? '') !== grant.form.code_challenge)
          return refuse(
            400,
            'invalid_grant',
            'code_verifier does not match the code_challenge (RFC 7636 §4.6)',
          )
        if (entry.form.redirect_uri !== grant.form.redirect_uri)
          return refuse(
            400,
            'invalid_grant',
            "redirect_uri is not the authorization request's (RFC 6749 §4.1.3)",
          )
        if (jkt !== grant.jkt) return refuse(400, 'invalid_dpop_proof', 'another DPoP key than at PAR')
        grant.used = true
        const accessToken = `AT-${++counter}`
        tokens.set(accessToken, jkt)
        const details = JSON.parse(grant.form.authorization_details ?? '[]') as Record<string, unknown>[]
        return json(
          200,
          {
            access_token: accessToken,
            token_type: flaws.includes('bearer-token') ? 'Bearer' : 'DPoP',
            expires_in: 300,
            ...(flaws.includes('credential-identifiers') && {
              authorization_details: details.map((d) => ({
                ...d,
                credential_identifiers: [`${d.credential_configuration_id}-id-1`],
              })),
            }),
          },
          flaws.includes('dpop-nonce') ? { 'dpop-nonce': nonces.as } : {},
        )
      } catch (e) {
        return asError(e)
      }
    }
    if (url.pathname === `${PATH}/nonce`) return json(200, { c_nonce: `c-nonce-${++counter}` })
    if (url.pathname === `${PATH}/credential`) {
      const [scheme, token] = (request.headers.get('authorization') ?? '').split(' ')
      const challenge = (code: string, description: string, headers: Record<string, string> = {}) =>
        refuse(401, code, description, { 'www-authenticate': dpopChallenge(code, description), ...headers })
      if (scheme !== 'DPoP' || !token || !tokens.has(token))
        return challenge(
          'invalid_token',
          `a DPoP-bound access token is required (Authorization: DPoP), got ${scheme}`,
        )
      try {
        const dpop = verifyDpopProof(request.headers.get('dpop') ?? undefined, {
          htm: 'POST',
          htu: `${url.origin}${url.pathname}`,
          accessToken: token,
          now: Date.now(),
          maxAgeSeconds: 300,
        })
        if (dpop.jkt !== tokens.get(token))
          return challenge('invalid_token', "the DPoP key is not the token's")
        if (flaws.includes('resource-nonce') && dpop.nonce !== nonces.rs)
          return challenge('use_dpop_nonce', 'a DPoP nonce is required (RFC 9449 §9)', {
            'dpop-nonce': nonces.rs,
          })
      } catch (e) {
        if (e instanceof DpopError) return challenge(e.code, e.message)
        throw e
      }
      return json(202, { transaction_id: `tx-${++counter}`, interval: 5 })
    }
    return json(404, { error: 'not_found' })
  }) as typeof globalThis.fetch

  const offer = (
    grants: Record<string, unknown> = { authorization_code: { issuer_state: 'issuer-state-1' } },
  ) =>
    `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify({ credential_issuer: ISSUER, credential_configuration_ids: ['degree'], grants }))}`
  return {
    fetch,
    sent,
    offer,
    asIssuer,
    nonces,
    posts: (path: string) => sent.filter((e) => e.path.endsWith(path)),
  }
}

type Fake = ReturnType<typeof fakeHaipIssuer>

/** A P-256 wallet on the fake; the issuance up to the credential answer (202). */
async function run(
  fake: Fake,
  opts: { misbehave?: IssuanceMisbehaviour[]; walletInitiated?: boolean; wallet?: Wallet } = {},
) {
  const wallet = opts.wallet ?? (await Wallet.create({ keyType: 'P-256', fetch: fake.fetch }))
  const session = opts.walletInitiated
    ? await wallet.startIssuanceAt(ISSUER, 'degree')
    : await wallet.startIssuance(fake.offer())
  const misbehave = opts.misbehave ?? []
  const token = await session.token({ misbehave })
  const result = await session.requestCredential({ misbehave })
  return { wallet, session, token, result }
}

async function refusal(promise: Promise<unknown>): Promise<WalletProtocolError> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof WalletProtocolError, String(error))
    return error
  }
  assert.fail('the flow was not refused')
}

const payloadOf = (jwt: string | undefined) => decodeJws(jwt as string).payload

describe('the authorization code flow against a fake HAIP issuer (no socket)', () => {
  test('issuer-initiated: PAR, redirect, token, credential: what goes over the wire', async () => {
    const fake = fakeHaipIssuer()
    const { wallet, session, token, result } = await run(fake)
    assert.equal(session.flow, 'authorization_code')
    assert.equal(session.protocol, '1.0')
    assert.equal(session.initiatedBy, 'issuer')
    assert.equal(result.status, 202)
    assert.equal(token.token_type, 'DPoP')
    const clientId = defaultClientId(wallet.did)
    assert.equal(session.authorization?.clientId, clientId)

    const [par] = fake.posts('/par')
    assert.ok(par)
    // RFC 9126 §2.1, RFC 7636 §4.3, OpenID4VCI 1.0 §5.1.1 / §5.1.3
    assert.deepEqual(Object.keys(par.form).sort(), [
      'authorization_details',
      'client_id',
      'code_challenge',
      'code_challenge_method',
      'issuer_state',
      'redirect_uri',
      'response_type',
      'scope',
      'state',
    ])
    assert.equal(par.form.response_type, 'code')
    assert.equal(par.form.client_id, clientId)
    assert.equal(par.form.redirect_uri, DEFAULT_REDIRECT_URI)
    assert.equal(par.form.code_challenge_method, 'S256')
    assert.equal(par.form.issuer_state, 'issuer-state-1')
    assert.equal(par.form.scope, 'degree')
    assert.deepEqual(JSON.parse(par.form.authorization_details as string), [
      { type: 'openid_credential', credential_configuration_id: 'degree' },
    ])
    // the attestation: the TEST provider, sub = client_id, cnf = the DPoP key; the PoP for this AS
    const attestation = payloadOf(par.headers['oauth-client-attestation'])
    assert.equal(attestation.iss, TEST_WALLET_PROVIDER_ISSUER)
    assert.equal(attestation.sub, clientId)
    const dpopHeader = decodeJws(par.headers.dpop as string).header
    assert.deepEqual((attestation.cnf as { jwk: unknown }).jwk, dpopHeader.jwk)
    assert.equal(payloadOf(par.headers['oauth-client-attestation-pop']).aud, ISSUER)

    const [tokenRequest] = fake.posts('/token')
    assert.ok(tokenRequest)
    assert.deepEqual(Object.keys(tokenRequest.form).sort(), [
      'client_id',
      'code',
      'code_verifier',
      'grant_type',
      'redirect_uri',
    ])
    assert.equal(tokenRequest.form.grant_type, 'authorization_code')
    assert.equal(s256(tokenRequest.form.code_verifier as string), par.form.code_challenge)
    const tokenProof = payloadOf(tokenRequest.headers.dpop)
    assert.equal(tokenProof.htm, 'POST')
    assert.equal(tokenProof.htu, `${ISSUER}/token`)
    assert.equal(tokenProof.ath, undefined, 'no access token yet')
    assert.notEqual(tokenProof.jti, payloadOf(par.headers.dpop).jti)

    // RFC 9449 §7.1: Authorization DPoP and a proof with ath, on the nonce and the credential request
    for (const path of ['/nonce', '/credential']) {
      const [request] = fake.posts(path)
      assert.ok(request, path)
      assert.equal(request.headers.authorization, `DPoP ${token.access_token}`, path)
      const proof = payloadOf(request.headers.dpop)
      assert.equal(proof.ath, accessTokenHash(token.access_token), path)
      assert.equal(proof.htu, `${ISSUER}${path}`, path)
    }
    assert.deepEqual(Object.keys(fake.posts('/credential')[0]?.json ?? {}).sort(), [
      'credential_configuration_id',
      'proofs',
    ])
    assert.ok(
      fake.sent.every((e) => e.refusal === undefined),
      JSON.stringify(fake.sent.map((e) => e.refusal)),
    )
  })

  test('wallet-initiated: no offer, no issuer_state; the configuration asked for', async () => {
    const fake = fakeHaipIssuer()
    const { session, result } = await run(fake, { walletInitiated: true })
    assert.equal(session.initiatedBy, 'wallet')
    assert.equal(session.flow, 'authorization_code')
    assert.equal(result.status, 202)
    const [par] = fake.posts('/par')
    assert.equal(par?.form.issuer_state, undefined)
    assert.deepEqual(JSON.parse(par?.form.authorization_details as string), [
      { type: 'openid_credential', credential_configuration_id: 'degree' },
    ])
    await assert.rejects((await Wallet.create({ fetch: fake.fetch })).startIssuanceAt(ISSUER, 'nope'), {
      step: 'metadata',
      error: 'invalid_issuer_metadata',
      message: /lacks the requested nope/,
    })
  })

  test('a separate authorization server: its metadata, aud and htu; locations in authorization_details (§5.1.1)', async () => {
    const fake = fakeHaipIssuer(['separate-as'])
    const { session, result } = await run(fake)
    assert.equal(result.status, 202)
    assert.equal(session.authorization?.server.issuer, SEPARATE_AS)
    const [par] = fake.posts('/par')
    assert.deepEqual(JSON.parse(par?.form.authorization_details as string), [
      { type: 'openid_credential', credential_configuration_id: 'degree', locations: [ISSUER] },
    ])
    assert.equal(payloadOf(par?.headers['oauth-client-attestation-pop']).aud, SEPARATE_AS)
  })

  test('an offer with both grants: the pre-authorized code unless flow authorization_code is asked', async () => {
    const fake = fakeHaipIssuer()
    const wallet = await Wallet.create({ keyType: 'P-256', fetch: fake.fetch })
    const both = fake.offer({
      [PRE_AUTHORIZED_GRANT]: { 'pre-authorized_code': 'P' },
      authorization_code: { issuer_state: 'S' },
    })
    assert.equal((await wallet.startIssuance(both)).flow, 'pre-authorized_code')
    assert.equal(
      (await wallet.startIssuance(both, { flow: 'authorization_code' })).flow,
      'authorization_code',
    )
    await assert.rejects(wallet.startIssuance(fake.offer(), { protocol: 'draft15' }), {
      name: 'WalletUsageError',
      message: /spoken on the OpenID4VCI 1\.0 path only/,
    })
  })

  test('DPoP nonces: a 400 use_dpop_nonce at PAR is retried once with the nonce, which the token request reuses', async () => {
    const fake = fakeHaipIssuer(['dpop-nonce'])
    const { result } = await run(fake)
    assert.equal(result.status, 202)
    const pars = fake.posts('/par')
    assert.equal(pars.length, 2)
    assert.match(String(pars[0]?.refusal), /^use_dpop_nonce/)
    assert.equal(payloadOf(pars[0]?.headers.dpop).nonce, undefined)
    assert.equal(payloadOf(pars[1]?.headers.dpop).nonce, fake.nonces.as)
    const tokens = fake.posts('/token')
    assert.equal(tokens.length, 1, 'the remembered nonce: no second refusal')
    assert.equal(payloadOf(tokens[0]?.headers.dpop).nonce, fake.nonces.as)
    // a fresh attestation PoP on the retry (its jti is the server's to remember)
    assert.notEqual(
      payloadOf(pars[0]?.headers['oauth-client-attestation-pop']).jti,
      payloadOf(pars[1]?.headers['oauth-client-attestation-pop']).jti,
    )
  })

  test("DPoP nonces: a resource's 401 WWW-Authenticate use_dpop_nonce is retried once with its DPoP-Nonce", async () => {
    const fake = fakeHaipIssuer(['resource-nonce'])
    const { result } = await run(fake)
    assert.equal(result.status, 202)
    const credentials = fake.posts('/credential')
    assert.equal(credentials.length, 2)
    assert.match(String(credentials[0]?.refusal), /^use_dpop_nonce/)
    assert.equal(payloadOf(credentials[1]?.headers.dpop).nonce, fake.nonces.rs)
  })

  test('a Bearer token answered to a DPoP token request is refused (RFC 9449 §5)', async () => {
    const error = await refusal(run(fakeHaipIssuer(['bearer-token'])))
    assert.equal(error.step, 'token')
    assert.equal(error.error, 'invalid_token_response')
    assert.match(String(error.errorDescription), /^token_type \(RFC 9449 §5\): .*not "Bearer"/)
  })

  for (const [flaw, description] of [
    ['no-iss', /^iss \(RFC 9207 §2\.4\): the authorization response has no iss/],
    [
      'wrong-iss',
      /^iss \(RFC 9207 §2\.4\): the authorization response names the issuer "https:\/\/mix-up\.example"/,
    ],
    ['wrong-state', /^state \(RFC 6749 §4\.1\.2, §10\.12\)/],
  ] as const) {
    test(`${flaw}: the authorization response is refused naming the clause, the code never redeemed`, async () => {
      const fake = fakeHaipIssuer([flaw])
      const error = await refusal(run(fake))
      assert.equal(error.step, 'authorization')
      assert.equal(error.status, 302)
      assert.equal(error.error, 'invalid_authorization_response')
      assert.match(String(error.errorDescription), description)
      assert.equal(fake.posts('/token').length, 0)
    })
  }

  test('an error response is reported with its code', async () => {
    const error = await refusal(run(fakeHaipIssuer(['error-response'])))
    assert.equal(error.step, 'authorization')
    assert.equal(error.error, 'access_denied')
  })

  test('a page for a person: without userStep a WalletProtocolError naming the URL; with it, its redirect URL', async () => {
    const fake = fakeHaipIssuer(['page'])
    const error = await refusal(run(fake))
    assert.equal(error.step, 'authorization')
    assert.equal(error.status, 200)
    assert.equal(error.error, 'interaction_required')
    assert.match(
      String(error.errorDescription),
      /Open https:\/\/issuer\.example\/haip\/authorize\?client_id=vc-harness-wallet-[\w-]+&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3A1 in a browser/,
    )

    const seen: string[] = []
    const wallet = await Wallet.create({ keyType: 'P-256', fetch: fake.fetch })
    const session = await wallet.startIssuance(fake.offer(), {
      authorization: {
        // what a person (Playwright) would do: the AS, once they logged in, redirects with code, state and iss
        userStep: async (url) => {
          seen.push(url)
          const par = fake.posts('/par').at(-1)
          return redirect({ code: 'from-the-browser', state: par?.form.state as string, iss: ISSUER })
        },
      },
    })
    const grant = await session.authorize()
    assert.equal(grant.via, 'user-step')
    assert.equal(grant.code, 'from-the-browser')
    assert.equal(seen[0], grant.authorizationUrl)
  })

  test("credential_identifiers in the token's authorization_details: the credential request names it (§6.2, §8.2)", async () => {
    const fake = fakeHaipIssuer(['credential-identifiers'])
    const { result } = await run(fake)
    assert.equal(result.status, 202)
    const body = fake.posts('/credential')[0]?.json
    assert.deepEqual(Object.keys(body ?? {}).sort(), ['credential_identifier', 'proofs'])
    assert.equal(body?.credential_identifier, 'degree-id-1')
  })

  test('a wallet provider of its own: walletProviderFromJwk signs the attestation the trusting server accepts', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'provider-1' }
    const provider = walletProviderFromJwk(jwk, { issuer: 'https://provider.example' })
    const publicJwk = { ...publicKey.export({ format: 'jwk' }), kid: 'provider-1' }
    const fake = fakeHaipIssuer([], [{ name: 'own', jwks: [publicJwk], issuer: 'https://provider.example' }])
    const wallet = await Wallet.create({
      keyType: 'P-256',
      fetch: fake.fetch,
      authorization: { walletProvider: provider, clientId: 'my-wallet' },
    })
    const { result } = await run(fake, { wallet })
    assert.equal(result.status, 202)
    assert.equal(payloadOf(fake.posts('/par')[0]?.headers['oauth-client-attestation']).sub, 'my-wallet')
    // the default TEST provider is not trusted by that server
    await assert.rejects(run(fake), { step: 'par', status: 401, error: 'invalid_client' })
    assert.throws(() => walletProviderFromJwk(publicJwk), WalletUsageError)
  })

  test('misbehaviours of the other flow are WalletUsageErrors before anything is sent', async () => {
    const fake = fakeHaipIssuer()
    const wallet = await Wallet.create({ keyType: 'P-256', fetch: fake.fetch })
    const session = await wallet.startIssuance(fake.offer())
    await assert.rejects(session.token({ misbehave: ['replayed-code'] }), {
      name: 'WalletUsageError',
      message: /replayed-code belongs to the pre-authorized code token request; .* code-replay/,
    })
    const pre = await wallet.startIssuance(
      fake.offer({ [PRE_AUTHORIZED_GRANT]: { 'pre-authorized_code': 'P' } }),
    )
    await assert.rejects(pre.token({ misbehave: ['pkce-verifier-mismatch'] }), {
      name: 'WalletUsageError',
      message: /pkce-verifier-mismatch belongs to the authorization code flow/,
    })
    assert.equal(fake.sent.length, 0)
  })
})

// --- each misbehaviour changes one thing, and the fake refuses it ------------------------------------------------

interface Outcome {
  step: WalletStep
  status: number
  error: string
  description: RegExp
}

const REFUSED: Record<AuthorizationMisbehaviour, Outcome> = {
  'pkce-verifier-mismatch': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /^code_verifier does not match/,
  },
  'code-replay': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /^the code was used before$/,
  },
  'dpop-wrong-htu': {
    step: 'token',
    status: 400,
    error: 'invalid_dpop_proof',
    description: /htu .* \(RFC 9449 §4\.3 step 9\)$/,
  },
  'dpop-wrong-htm': {
    step: 'token',
    status: 400,
    error: 'invalid_dpop_proof',
    description: /htm "GET" .* \(RFC 9449 §4\.3 step 8\)$/,
  },
  'dpop-replayed-jti': {
    step: 'token',
    status: 400,
    error: 'invalid_dpop_proof',
    description: /jti was used before/,
  },
  'dpop-token-as-bearer': {
    step: 'credential',
    status: 401,
    error: 'invalid_token',
    description: /got Bearer$/,
  },
  'attestation-untrusted-provider': {
    step: 'par',
    status: 401,
    error: 'invalid_client',
    description: /not signed by a wallet provider this issuer trusts/,
  },
  'attestation-pop-wrong-aud': {
    step: 'par',
    status: 401,
    error: 'invalid_client',
    description: /PoP's aud "https:\/\/wrong-audience\.invalid" is not this authorization server/,
  },
  'authorization-wrong-redirect-uri': {
    step: 'token',
    status: 400,
    error: 'invalid_grant',
    description: /^redirect_uri is not the authorization request's/,
  },
}

/** What differs between the honest request and the misbehaving one, in the request the misbehaviour acts on. */
const CHANGED: Record<AuthorizationMisbehaviour, { path: string; check: (good: Sent, bad: Sent) => void }> = {
  'pkce-verifier-mismatch': {
    path: '/token',
    check: (good, bad) => {
      assert.deepEqual(
        { ...bad.form, code: '', code_verifier: '' },
        { ...good.form, code: '', code_verifier: '' },
      )
      assert.match(bad.form.code_verifier as string, /^[A-Za-z0-9_-]{43}$/)
    },
  },
  'code-replay': {
    path: '/token',
    check: () => {},
  },
  'dpop-wrong-htu': {
    path: '/token',
    check: (good, bad) => {
      const { jti: _, iat: __, ...rest } = payloadOf(bad.headers.dpop)
      const { jti: _g, iat: __g, ...honest } = payloadOf(good.headers.dpop)
      assert.deepEqual(rest, { ...honest, htu: `${ISSUER}/token${WRONG_URI_SUFFIX}` })
    },
  },
  'dpop-wrong-htm': {
    path: '/token',
    check: (good, bad) => {
      const { jti: _, iat: __, ...rest } = payloadOf(bad.headers.dpop)
      const { jti: _g, iat: __g, ...honest } = payloadOf(good.headers.dpop)
      assert.deepEqual(rest, { ...honest, htm: 'GET' })
    },
  },
  'dpop-replayed-jti': {
    path: '/token',
    check: () => {},
  },
  'dpop-token-as-bearer': {
    path: '/credential',
    check: (good, bad) => {
      assert.equal(
        bad.headers.authorization,
        (good.headers.authorization as string).replace(/^DPoP /, 'Bearer '),
      )
      assert.ok(payloadOf(bad.headers.dpop).ath, 'the DPoP proof is still sent')
    },
  },
  'attestation-untrusted-provider': {
    path: '/par',
    check: (good, bad) => {
      const attestation = decodeJws(bad.headers['oauth-client-attestation'] as string)
      const honest = decodeJws(good.headers['oauth-client-attestation'] as string)
      assert.equal(attestation.payload.iss, UNTRUSTED_PROVIDER_ISSUER)
      assert.notEqual(attestation.header.kid, honest.header.kid)
      assert.equal(attestation.payload.sub, honest.payload.sub)
    },
  },
  'attestation-pop-wrong-aud': {
    path: '/par',
    check: (_good, bad) => {
      assert.equal(payloadOf(bad.headers['oauth-client-attestation-pop']).aud, WRONG_AUDIENCE)
    },
  },
  'authorization-wrong-redirect-uri': {
    path: '/token',
    check: (good, bad) => {
      assert.deepEqual(
        { ...bad.form, code: '' },
        {
          ...good.form,
          code: '',
          code_verifier: bad.form.code_verifier as string,
          redirect_uri: `${DEFAULT_REDIRECT_URI}${WRONG_URI_SUFFIX}`,
        },
      )
    },
  },
}

describe('each authorization code flow misbehaviour changes one thing and the fake refuses it', () => {
  test('the tables cover every misbehaviour', () => {
    assert.deepEqual(Object.keys(REFUSED).sort(), [...AUTHORIZATION_MISBEHAVIOURS].sort())
  })
  for (const misbehaviour of AUTHORIZATION_MISBEHAVIOURS) {
    const outcome = REFUSED[misbehaviour]
    test(`${misbehaviour}: ${outcome.step} ${outcome.status} ${outcome.error}`, async () => {
      // one client_id for both wallets, so the requests compare field by field
      const walletOn = (fake: Fake) =>
        Wallet.create({ keyType: 'P-256', fetch: fake.fetch, authorization: { clientId: 'the-wallet' } })
      const honest = fakeHaipIssuer()
      await run(honest, { wallet: await walletOn(honest) })
      const fake = fakeHaipIssuer()
      const error = await refusal(run(fake, { misbehave: [misbehaviour], wallet: await walletOn(fake) }))
      assert.equal(error.step, outcome.step, error.message)
      assert.equal(error.status, outcome.status, error.message)
      assert.equal(error.error, outcome.error, error.message)
      assert.match(String(error.errorDescription), outcome.description)
      const { path, check } = CHANGED[misbehaviour]
      const good = honest.posts(path)[0] as Sent
      const bad = fake.posts(path).at(-1) as Sent
      check(good, bad)
      assert.ok(bad.refusal, 'the fake refused the request the misbehaviour acted on')
      if (misbehaviour === 'code-replay') {
        const [first, second] = fake.posts('/token')
        assert.equal(first?.refusal, undefined, 'the first redemption succeeded')
        assert.equal(second?.form.code, first?.form.code)
        assert.notEqual(payloadOf(second?.headers.dpop).jti, payloadOf(first?.headers.dpop).jti)
      }
      if (misbehaviour === 'dpop-replayed-jti') {
        assert.equal(payloadOf(bad.headers.dpop).jti, payloadOf(fake.posts('/par')[0]?.headers.dpop).jti)
      }
    })
  }
})
