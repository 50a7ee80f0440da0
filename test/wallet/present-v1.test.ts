// The wallet's OpenID4VP 1.0 Final presentations against an independent verifier (test/fixtures/owf-verifier.ts:
// the OpenWallet Foundation's Openid4vpVerifier, @sd-jwt/sd-jwt-vc, jose and dcql), with credentials received
// for real from the independent OpenID4VCI 1.0 issuer (test/fixtures/owf-issuer.ts): every client identifier
// prefix, request_uri get and post, by value, direct_post and direct_post.jwt (A128GCM, A256GCM), DCQL with
// claims, claim_sets, values, multiple and credential_sets, the PE request of a bare did client_id; the
// verifier's refusal of each misbehaviour, and the wallet's refusal of requests it must not answer.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash, generateKeyPairSync } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { DcqlQuery } from 'dcql'
import { compactDecrypt } from 'jose'
import { resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../src/shared/jws.ts'
import { splitSdJwt } from '../../src/shared/sd-jwt.ts'
import {
  ACCESS_DENIED_DESCRIPTION,
  DC_API_PRESENTATION_MISBEHAVIOURS,
  DcqlUnsatisfiedError,
  MDOC_PRESENTATION_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  type PresentationResult,
  selectForDcql,
  V1_ONLY_PRESENTATION_MISBEHAVIOURS,
  Wallet,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import { EXPIRED_IAT_SECONDS, FUTURE_IAT_SECONDS } from '../../src/wallet/misbehaviour.ts'
import { concretePaths, presentSdJwt, withoutPrefix } from '../../src/wallet/presentation-sd-jwt.ts'
import {
  directPostForm,
  encryptResponse,
  responsePayload,
  withWrongQueryId,
} from '../../src/wallet/presentation-v1-response.ts'
import { tamperOf } from '../../src/wallet/tamper.ts'
import { JWT_CONFIG, type OwfIssuer, SD_JWT_CONFIG, startOwfIssuer } from '../fixtures/owf-issuer.ts'
import {
  type OwfSession,
  type OwfVerifier,
  type RequestOptions,
  startOwfVerifier,
  type VerifierPrefix,
} from '../fixtures/owf-verifier.ts'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')

let issuer: OwfIssuer
/** the verifier at http://localhost:<port>: its x509 leaf's dNSName is `localhost` */
let verifier: OwfVerifier
/** P-256 holder: one identity SD-JWT VC, one degree JWT VC */
let holder: Wallet
/** Ed25519 holder: two identity SD-JWT VCs, one degree JWT VC (for `multiple` and the newest-first choice) */
let twice: Wallet
let vct: string
const tempDir = mkdtempSync(join(tmpdir(), 'present-v1-'))

before(async () => {
  issuer = await startOwfIssuer()
  verifier = await startOwfVerifier({ host: 'localhost', trustedIssuers: [issuer.did] })
  vct = `${issuer.issuer}/vct/identity`
  holder = await Wallet.create({ keyType: 'P-256', trustAnchors: [verifier.caPem] })
  twice = await Wallet.create({ keyType: 'Ed25519', trustAnchors: [verifier.caPem] })
  for (const [wallet, configs] of [
    [holder, [SD_JWT_CONFIG, JWT_CONFIG]],
    [twice, [SD_JWT_CONFIG, SD_JWT_CONFIG, JWT_CONFIG]],
  ] as const) {
    for (const id of configs) {
      const received = await wallet.receive(issuer.offer({ configurationIds: [id] }))
      assert.equal(received.status, 'issued')
    }
  }
})
after(async () => {
  await verifier?.close()
  await issuer?.close()
  rmSync(tempDir, { recursive: true, force: true })
})

// --- queries ------------------------------------------------------------------------------------------------------

const pidQuery = (extra: Record<string, unknown> = {}) => ({
  id: 'pid',
  format: 'dc+sd-jwt',
  meta: { vct_values: [vct] },
  claims: [{ path: ['given_name'] }, { path: ['address', 'locality'] }],
  ...extra,
})
const DEGREE_QUERY = {
  id: 'degree',
  format: 'jwt_vc_json',
  meta: { type_values: [['UniversityDegreeCredential']] },
  claims: [{ path: ['credentialSubject', 'degree'] }],
}
const bothQuery = () => ({ credentials: [pidQuery(), DEGREE_QUERY] })

/** The KB-JWT payload of an SD-JWT presentation. */
function kbOf(presentation: string) {
  const { kbJwt } = splitSdJwt(presentation)
  assert.ok(kbJwt, 'the presentation has a KB-JWT')
  return decodeJws(kbJwt)
}

async function answer(wallet: Wallet, options: RequestOptions, misbehave: PresentationMisbehaviour[] = []) {
  const session = await verifier.request(options)
  const result = await wallet.present(session.link, { misbehave })
  return { session, result, verdict: verifier.session(session.id).verdict }
}

/** A refusal by the verifier: WalletProtocolError at `response`, and the verdict recorded the same reason. */
async function refusedBy(
  wallet: Wallet,
  options: RequestOptions,
  misbehave: PresentationMisbehaviour[],
  reason: RegExp,
): Promise<OwfSession> {
  const session = await verifier.request(options)
  await assert.rejects(wallet.present(session.link, { misbehave }), (e: Record<string, unknown>) => {
    assert.equal(e.name, 'WalletProtocolError', String(e.message))
    assert.equal(e.step, 'response')
    assert.equal(e.status, 400)
    assert.equal(e.error, 'invalid_request')
    assert.match(String(e.errorDescription), reason)
    const verdict = verifier.session(session.id).verdict
    assert.equal(verdict?.accepted, false)
    assert.equal(verdict?.reason, e.errorDescription)
    return true
  })
  return session
}

/** A refusal by the wallet itself: WalletProtocolError at `request`, nothing posted to the verifier. */
async function refusedByWallet(
  wallet: Wallet,
  session: OwfSession,
  description: RegExp,
  error = 'invalid_request',
) {
  await assert.rejects(wallet.present(session.link), (e: Record<string, unknown>) => {
    assert.equal(e.name, 'WalletProtocolError', String(e.message))
    assert.equal(e.step, 'request')
    assert.equal(e.error, error, String(e.errorDescription))
    assert.match(String(e.errorDescription), description)
    return true
  })
  assert.equal(verifier.session(session.id).verdict, undefined, 'nothing was posted')
}

// --- every prefix, request_uri method and response mode ----------------------------------------------------------

describe('OpenID4VP 1.0 against the OWF verifier: prefixes × request_uri method × response mode', () => {
  const cases: {
    prefix: VerifierPrefix
    method?: 'get' | 'post'
    mode: 'direct_post' | 'direct_post.jwt'
  }[] = []
  for (const prefix of ['decentralized_identifier', 'x509_san_dns', 'x509_hash'] as const) {
    for (const method of ['get', 'post'] as const) {
      for (const mode of ['direct_post', 'direct_post.jwt'] as const) cases.push({ prefix, method, mode })
    }
  }
  for (const mode of ['direct_post', 'direct_post.jwt'] as const) cases.push({ prefix: 'redirect_uri', mode })

  for (const { prefix, method, mode } of cases) {
    const how = method ? `request_uri ${method}` : 'parameters by value'
    test(`${prefix}, ${how}, ${mode}: accepted with only the requested disclosures`, async () => {
      const { session, result, verdict } = await answer(holder, {
        prefix,
        dcql: bothQuery(),
        responseMode: mode,
        ...(method && { requestUriMethod: method }),
      })
      assert.equal(verdict?.accepted, true, verdict?.reason)
      assert.equal(result.status, 'verified')
      assert.equal(result.profile, '1.0')
      assert.equal(result.clientId, session.clientId)
      assert.ok(session.clientId.startsWith(`${prefix}:`))
      assert.equal(result.responseMode, mode)

      // what the verifier received: the two asked-for claims of the SD-JWT VC, none of its other disclosures
      const pid = verdict?.claims.pid?.[0] as Record<string, unknown>
      assert.equal(pid.given_name, 'Erika')
      assert.deepEqual(pid.address, { locality: 'Köln', country: 'DE' })
      assert.equal(pid.family_name, undefined, 'family_name was not asked for')
      assert.deepEqual(verdict?.disclosed.pid, [['address.locality', 'given_name']])
      const degree = verdict?.claims.degree?.[0] as { credentialSubject: Record<string, unknown> }
      assert.equal(degree.credentialSubject.degree, 'MSc Physics')

      // the vp_token: an array per credential query id (§8.1); KB-JWT and VP bound to this request
      const vpToken = result.dcqlVpToken as Record<string, string[]>
      assert.deepEqual(Object.keys(vpToken), ['pid', 'degree'])
      assert.equal(vpToken.pid?.length, 1)
      assert.equal(vpToken.degree?.length, 1)
      const kb = kbOf(vpToken.pid?.[0] as string)
      assert.equal(kb.header.typ, 'kb+jwt')
      assert.equal(kb.header.alg, 'ES256')
      assert.equal(kb.payload.aud, session.clientId, 'the full client_id, prefix included')
      assert.equal(kb.payload.nonce, session.nonce)
      const vp = decodeJws(vpToken.degree?.[0] as string).payload
      assert.equal(vp.aud, session.clientId)
      assert.equal(vp.nonce, session.nonce)

      // the request as fetched
      if (!method) assert.deepEqual(session.fetched, [], 'by value: nothing fetched')
      else if (method === 'get') assert.deepEqual(session.fetched, [{ method: 'GET' }])
      else {
        assert.equal(session.fetched.length, 1)
        const [posted] = session.fetched
        assert.equal(posted?.method, 'POST')
        assert.match(String(posted?.walletNonce), /^[A-Za-z0-9_-]{22,}$/)
        const metadata = posted?.walletMetadata as Record<string, Record<string, unknown>>
        assert.deepEqual(Object.keys(metadata.vp_formats_supported ?? {}).sort(), [
          'dc+sd-jwt',
          'jwt_vc_json',
          'ldp_vc',
          'mso_mdoc',
        ])
        // ldp_vc (B.1.3.2.3): what this holder's key signs an ldp_vp with
        assert.deepEqual(metadata.vp_formats_supported?.ldp_vc, {
          proof_type_values: ['JsonWebSignature2020', 'DataIntegrityProof'],
          cryptosuite_values: ['ecdsa-rdfc-2019'],
        })
        assert.ok((metadata.client_id_prefixes_supported as unknown as string[]).includes(prefix))
        assert.deepEqual(metadata.authorization_encryption_alg_values_supported, ['ECDH-ES'])
      }

      // the response mode on the wire
      if (mode === 'direct_post') {
        assert.deepEqual(Object.keys(verdict?.form ?? {}).sort(), ['state', 'vp_token'])
        assert.equal(verdict?.form.state, session.state)
        assert.deepEqual(JSON.parse(verdict?.form.vp_token as string), vpToken)
      } else {
        assert.deepEqual(Object.keys(verdict?.form ?? {}), ['response'])
        const header = verdict?.jweHeader as Record<string, unknown>
        assert.equal(header.alg, 'ECDH-ES')
        assert.equal(header.enc, 'A128GCM', '§8.3 default when no enc values are named')
        assert.equal(header.kid, `enc-${session.id}`)
        assert.equal((header.epk as { crv: string }).crv, 'P-256')
        assert.deepEqual(result.encryption, header)
      }
    })
  }

  for (const [offered, chosen] of [
    [['A256GCM'], 'A256GCM'],
    [['A192GCM', 'A256GCM', 'A128GCM'], 'A256GCM'],
    [['A128GCM', 'A256GCM'], 'A128GCM'],
  ] as const) {
    test(`direct_post.jwt with encrypted_response_enc_values_supported ${JSON.stringify(offered)}: enc ${chosen}`, async () => {
      const { verdict, result } = await answer(holder, {
        prefix: 'x509_san_dns',
        dcql: bothQuery(),
        responseMode: 'direct_post.jwt',
        encValues: [...offered],
      })
      assert.equal(verdict?.accepted, true, verdict?.reason)
      assert.equal(verdict?.jweHeader?.enc, chosen)
      assert.equal(result.encryption?.enc, chosen)
    })
  }

  test('direct_post.jwt naming only enc values the wallet lacks: refused before anything is posted', async () => {
    const session = await verifier.request({
      prefix: 'decentralized_identifier',
      dcql: bothQuery(),
      responseMode: 'direct_post.jwt',
      encValues: ['A128CBC-HS256'],
    })
    await refusedByWallet(holder, session, /encrypted_response_enc_values_supported \["A128CBC-HS256"\]/)
  })

  test('x509_san_dns with the leaf dNSName 127.0.0.1 (a verifier at http://127.0.0.1) works too', async () => {
    const ip = await startOwfVerifier({ host: '127.0.0.1', trustedIssuers: [issuer.did] })
    try {
      const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: [ip.caPem] })
      await wallet.receive(issuer.offer({ configurationIds: [SD_JWT_CONFIG] }))
      const session = await ip.request({ prefix: 'x509_san_dns', dcql: { credentials: [pidQuery()] } })
      assert.equal(session.clientId, 'x509_san_dns:127.0.0.1')
      assert.equal((await wallet.present(session.link)).status, 'verified')
      assert.equal(ip.session(session.id).verdict?.accepted, true)
    } finally {
      await ip.close()
    }
  })
})

// --- DCQL against the verifier -------------------------------------------------------------------------------------

describe('DCQL (OpenID4VP 1.0 §6) against the OWF verifier', () => {
  test('no claims in the credential query: no selectively disclosable claim is disclosed (§6.4.1)', async () => {
    const { verdict, result } = await answer(holder, {
      prefix: 'decentralized_identifier',
      dcql: { credentials: [pidQuery({ claims: undefined })] },
    })
    assert.equal(verdict?.accepted, true, verdict?.reason)
    assert.deepEqual(verdict?.disclosed.pid, [[]])
    const pid = verdict?.claims.pid?.[0] as Record<string, unknown>
    assert.equal(pid.vct, vct)
    assert.equal(pid.given_name, undefined)
    assert.equal(pid.family_name, undefined)
    assert.equal(splitSdJwt(result.dcqlVpToken?.pid?.[0] as string).disclosures.length, 0)
  })

  test('claim_sets: the first option the credential satisfies, and only its claims', async () => {
    const { verdict } = await answer(holder, {
      prefix: 'decentralized_identifier',
      dcql: {
        credentials: [
          pidQuery({
            claims: [
              { id: 'nick', path: ['nickname'] },
              { id: 'family', path: ['family_name'] },
              { id: 'given', path: ['given_name'] },
            ],
            claim_sets: [['nick'], ['family'], ['given']],
          }),
        ],
      },
    })
    assert.equal(verdict?.accepted, true, verdict?.reason)
    assert.deepEqual(verdict?.disclosed.pid, [['family_name']])
    assert.equal(verdict?.claims.pid?.[0]?.family_name, 'Mustermann')
  })

  test('values: a claim whose value matches is presented', async () => {
    const { verdict } = await answer(holder, {
      prefix: 'decentralized_identifier',
      dcql: {
        credentials: [pidQuery({ claims: [{ path: ['address', 'locality'], values: ['Köln', 'Bonn'] }] })],
      },
    })
    assert.equal(verdict?.accepted, true, verdict?.reason)
    assert.deepEqual(verdict?.disclosed.pid, [['address.locality']])
  })

  test('multiple: every matching credential, each presented with its own KB-JWT', async () => {
    const { verdict, result, session } = await answer(twice, {
      prefix: 'x509_hash',
      dcql: { credentials: [pidQuery({ multiple: true, claims: [{ path: ['given_name'] }] })] },
      responseMode: 'direct_post.jwt',
    })
    assert.equal(verdict?.accepted, true, verdict?.reason)
    assert.equal(result.dcqlVpToken?.pid?.length, 2)
    assert.deepEqual(verdict?.disclosed.pid, [['given_name'], ['given_name']])
    for (const presentation of result.dcqlVpToken?.pid ?? []) {
      assert.equal(typeof presentation, 'string', 'an SD-JWT VC presentation is a string')
      assert.equal(kbOf(String(presentation)).payload.aud, session.clientId)
      assert.equal(kbOf(String(presentation)).header.alg, 'EdDSA')
    }
    assert.notEqual(result.dcqlVpToken?.pid?.[0], result.dcqlVpToken?.pid?.[1])
  })

  test('without multiple: one presentation, of the newest matching credential', async () => {
    const { verdict, result } = await answer(twice, {
      prefix: 'decentralized_identifier',
      dcql: { credentials: [pidQuery({ claims: [{ path: ['given_name'] }] })] },
    })
    assert.equal(verdict?.accepted, true, verdict?.reason)
    const pids = twice.credentials().filter((c) => c.format === 'dc+sd-jwt')
    assert.equal(pids.length, 2)
    assert.deepEqual(result.presented, [pids[1]?.id])
    assert.equal(
      splitSdJwt(result.dcqlVpToken?.pid?.[0] as string).jwt,
      splitSdJwt(pids[1]?.credential ?? '').jwt,
    )
  })

  test('credential_sets: the first satisfiable option of a required set, an optional set when satisfiable', async () => {
    const { verdict, result } = await answer(holder, {
      prefix: 'decentralized_identifier',
      dcql: {
        credentials: [
          { id: 'mdl', format: 'dc+sd-jwt', meta: { vct_values: ['https://example.org/mdl'] } },
          pidQuery(),
          DEGREE_QUERY,
          { id: 'diploma', format: 'jwt_vc_json', meta: { type_values: [['DiplomaCredential']] } },
        ],
        credential_sets: [
          { options: [['mdl'], ['pid']] },
          { options: [['degree']], required: false },
          { options: [['diploma']], required: false },
        ],
      },
    })
    assert.equal(verdict?.accepted, true, verdict?.reason)
    assert.deepEqual(Object.keys(result.dcqlVpToken ?? {}), ['pid', 'degree'])
    assert.deepEqual(Object.keys(verdict?.claims ?? {}), ['pid', 'degree'])
  })

  test('a query the wallet cannot satisfy: DcqlUnsatisfiedError naming the credential queries; nothing posted', async () => {
    const session = await verifier.request({
      prefix: 'decentralized_identifier',
      dcql: {
        credentials: [
          pidQuery({ claims: [{ path: ['address', 'locality'], values: ['Berlin'] }] }),
          { id: 'mdl', format: 'mso_mdoc', meta: { doctype_value: 'org.iso.18013.5.1.mDL' } },
          DEGREE_QUERY,
        ],
      },
    })
    await assert.rejects(holder.present(session.link), (e: Error) => {
      assert.ok(e instanceof DcqlUnsatisfiedError, `${e.name}: ${e.message}`)
      assert.ok(e instanceof WalletUsageError)
      assert.deepEqual(e.credentialQueries, ['pid', 'mdl'])
      assert.match(e.message, /credential queries pid, mdl unsatisfied/)
      assert.match(e.message, /Berlin/)
      assert.match(e.message, /mdl \(mso_mdoc "org\.iso\.18013\.5\.1\.mDL"\): no mso_mdoc credential held/)
      assert.match(e.message, /OpenID4VP 1\.0 §6\.4\.2/)
      return true
    })
    assert.equal(verifier.session(session.id).verdict, undefined)
  })

  test("onUnsatisfied 'access-denied': the wallet answers access_denied naming the unsatisfied queries", async () => {
    const session = await verifier.request({
      prefix: 'x509_san_dns',
      responseMode: 'direct_post.jwt',
      dcql: {
        credentials: [{ id: 'mdl', format: 'dc+sd-jwt', meta: { vct_values: ['https://example.org/mdl'] } }],
      },
    })
    const result = await holder.present(session.link, { onUnsatisfied: 'access-denied' })
    assert.equal(result.status, 'rejected-by-wallet')
    assert.deepEqual(result.presented, [])
    const verdict = verifier.session(session.id).verdict
    assert.deepEqual(verdict?.declined, {
      error: 'access_denied',
      description: 'the wallet holds no credential for the credential query mdl',
    })
    assert.equal(verdict?.form.state, session.state)
  })
})

// --- the draft-20 PE request of a bare did client_id ------------------------------------------------------------------

describe('Presentation Exchange request (bare did client_id) from the OWF verifier', () => {
  test('jwt_vc_json asked with a presentation_definition: answered on the PE path and accepted', async () => {
    const definition = {
      id: 'degree-pe',
      input_descriptors: [
        {
          id: 'degree',
          format: { jwt_vc_json: { alg: ['EdDSA'] } },
          constraints: {
            fields: [
              {
                path: ['$.vc.type', '$.type'],
                filter: { type: 'array', contains: { const: 'UniversityDegreeCredential' } },
              },
            ],
          },
        },
      ],
    }
    const { session, result, verdict } = await answer(holder, {
      prefix: 'did',
      presentationDefinition: definition,
    })
    assert.equal(session.clientId, verifier.did)
    assert.equal(result.profile, 'pe')
    assert.equal(verdict?.accepted, true, verdict?.reason)
    assert.equal(result.presentationSubmission?.definition_id, 'degree-pe')
    assert.equal(result.presentationSubmission?.descriptor_map[0]?.format, 'jwt_vp_json')
    const degree = verdict?.claims.degree?.[0] as { credentialSubject: Record<string, unknown> }
    assert.equal(degree.credentialSubject.degree, 'MSc Physics')
  })
})

// --- misbehaviours: the verifier refuses each -----------------------------------------------------------------------

describe('misbehaviours on the 1.0 path: the OWF verifier refuses each, with its reason', () => {
  const EXPECTED: Partial<
    Record<PresentationMisbehaviour, { reason: RegExp; options?: Partial<RequestOptions> }>
  > = {
    'sd-tampered-disclosure': {
      reason: /SD-JWT VC: 1 of 2 disclosures are not referenced by the issuer-signed JWT/,
    },
    'sd-extra-disclosure': { reason: /pid: disclosed claims the query did not ask for: family_name/ },
    'kb-wrong-sd-hash': { reason: /SD-JWT VC: Invalid sd_hash in Key Binding JWT/ },
    'kb-wrong-nonce': { reason: /SD-JWT VC: Verify Error: Invalid Nonce/ },
    'kb-wrong-aud': { reason: /KB-JWT aud "localhost" is not the client_id x509_san_dns:localhost/ },
    'kb-stale-iat': { reason: /KB-JWT iat is 36\d\d s old; this verifier accepts at most 300 s/ },
    'kb-missing': { reason: /SD-JWT VC: Key Binding JWT not exist/ },
    'plain-response': {
      reason: /Invalid response mode for openid4vp response\. Expected jarm response/,
      options: { responseMode: 'direct_post.jwt' },
    },
    'vp-token-wrong-id': {
      reason: /vp_token key pid_unrequested names no credential query of the dcql_query/,
    },
    'kb-bad-signature': { reason: /SD-JWT VC: Verify Error: Invalid JWT Signature/ },
    // the fixture's window check (60 s ahead at most) words an iat an hour ahead as a negative age
    'kb-future-iat': { reason: /KB-JWT iat is -3[56]\d\d s old/ },
    'sd-issuer-signature': { reason: /SD-JWT VC: signature verification failed/ },
    'jwe-wrong-key': {
      reason: /decryption operation failed/,
      options: { responseMode: 'direct_post.jwt' },
    },
    'vp-wrong-nonce': { reason: /jwt_vp_json: nonce ".+" is not the request nonce/ },
    'vp-wrong-aud': { reason: /jwt_vp_json: unexpected "aud" claim value/ },
    'vp-foreign-key': { reason: /jwt_vc_json: sub did:key:\S+ is not the presenter did:key:/ },
    'tampered-credential': { reason: /jwt_vc_json: signature verification failed/ },
    'untrusted-issuer': { reason: /jwt_vc_json: issuer key did:key:\S+ is not of a trusted issuer/ },
  }

  test('every 1.0-only misbehaviour has an expectation (the mdoc ones: test/wallet/mdoc-unit.test.ts; the DC API ones: test/wallet/dc-api-*.test.ts)', () => {
    for (const m of V1_ONLY_PRESENTATION_MISBEHAVIOURS) {
      if (!MDOC_PRESENTATION_MISBEHAVIOURS.includes(m) && !DC_API_PRESENTATION_MISBEHAVIOURS.includes(m)) {
        assert.ok(EXPECTED[m], m)
      }
    }
  })

  for (const [misbehaviour, expected] of Object.entries(EXPECTED)) {
    test(`${misbehaviour}: refused — ${expected.reason.source.slice(0, 60)}`, async () => {
      await refusedBy(
        holder,
        { prefix: 'x509_san_dns', dcql: bothQuery(), ...expected.options },
        [misbehaviour as PresentationMisbehaviour],
        expected.reason,
      )
    })
  }

  test('access-denied: the wallet declines; the verifier records access_denied and 200s it', async () => {
    const { result, verdict, session } = await answer(
      holder,
      { prefix: 'x509_hash', dcql: bothQuery(), responseMode: 'direct_post.jwt' },
      ['access-denied'],
    )
    assert.equal(result.status, 'rejected-by-wallet')
    assert.equal(result.httpStatus, 200)
    assert.deepEqual(verdict?.declined, { error: 'access_denied', description: ACCESS_DENIED_DESCRIPTION })
    assert.deepEqual(
      { ...verdict?.form },
      {
        error: 'access_denied',
        error_description: ACCESS_DENIED_DESCRIPTION,
        state: session.state,
      },
    )
  })

  test('misbehaviours that do not apply are WalletUsageErrors, and nothing is posted', async () => {
    const cases: [RequestOptions, PresentationMisbehaviour, RegExp][] = [
      [
        { prefix: 'x509_san_dns', dcql: bothQuery() },
        'lying-submission',
        /Presentation Exchange \(draft 20\)/,
      ],
      [{ prefix: 'x509_san_dns', dcql: bothQuery() }, 'vp-replayed', /Presentation Exchange \(draft 20\)/],
      [
        { prefix: 'x509_san_dns', dcql: bothQuery() },
        'revoked-credential',
        /Presentation Exchange \(draft 20\)/,
      ],
      [{ prefix: 'x509_san_dns', dcql: bothQuery() }, 'plain-response', /this request asks for direct_post$/],
      [{ prefix: 'x509_san_dns', dcql: bothQuery() }, 'jwe-wrong-key', /this request asks for direct_post$/],
      [
        { prefix: 'x509_san_dns', dcql: { credentials: [DEGREE_QUERY] } },
        'sd-issuer-signature',
        /presents no dc\+sd-jwt/,
      ],
      [
        { prefix: 'x509_san_dns', dcql: { credentials: [DEGREE_QUERY] } },
        'kb-wrong-aud',
        /presents no dc\+sd-jwt/,
      ],
      [
        { prefix: 'x509_san_dns', dcql: { credentials: [pidQuery()] } },
        'vp-wrong-nonce',
        /presents no jwt_vc_json/,
      ],
      [
        { prefix: 'x509_san_dns', dcql: { credentials: [pidQuery({ claims: undefined })] } },
        'sd-tampered-disclosure',
        /selects no selectively disclosable claim/,
      ],
    ]
    for (const [options, misbehaviour, pattern] of cases) {
      const session = await verifier.request(options)
      await assert.rejects(holder.present(session.link, { misbehave: [misbehaviour] }), (e: Error) => {
        assert.ok(e instanceof WalletUsageError, `${misbehaviour}: ${e.name}: ${e.message}`)
        assert.match(e.message, pattern)
        return true
      })
      assert.equal(verifier.session(session.id).verdict, undefined, misbehaviour)
    }
  })

  test("expired-session: the wallet's own exp check is skipped, nothing else changes", async () => {
    const session = await verifier.request({ prefix: 'decentralized_identifier', dcql: bothQuery() })
    const late = () => Date.now() + 10 * 60 * 1000
    await assert.rejects(
      holder.startPresentationV1(session.link, { now: late }),
      (e: Record<string, unknown>) => {
        assert.equal(e.step, 'request')
        assert.match(String(e.errorDescription), /the request object expired at/)
        return true
      },
    )
    const started = await holder.startPresentationV1(session.link, {
      now: late,
      misbehave: ['expired-session'],
    })
    assert.equal(started.expired, true)
    assert.equal(
      started.request.expiresAt,
      (decodeJws(String(started.request.requestObject)).payload.exp as number) * 1000,
    )
  })
})

// --- each SD-JWT misbehaviour changes one thing ----------------------------------------------------------------------

describe('presentSdJwt: the correct presentation, and each misbehaviour changing exactly one thing', () => {
  const AUD = 'x509_san_dns:verifier.example'
  const base = () => {
    const stored = holder.credentials().find((c) => c.format === 'dc+sd-jwt')
    assert.ok(stored)
    return {
      credential: stored.credential,
      claimPaths: [['given_name'], ['address', 'locality']],
      nonce: 'n-0S6_WzA2Mj',
      audience: AUD,
      iat: 1_800_000_000,
      signer: holder.jwtSigner(),
    }
  }
  const parts = (presentation: string) => {
    const split = splitSdJwt(presentation)
    const sdJwt = presentation.slice(0, presentation.length - (split.kbJwt?.length ?? 0))
    return { ...split, sdJwt, kb: split.kbJwt ? decodeJws(split.kbJwt) : undefined }
  }
  const sha = (text: string) => createHash('sha256').update(text, 'ascii').digest('base64url')

  test('correct: the issuer JWT, the two selected disclosures, a KB-JWT over exactly them', async () => {
    const input = base()
    const correct = await presentSdJwt(input)
    const p = parts(correct.presentation)
    assert.equal(p.jwt, splitSdJwt(input.credential).jwt)
    assert.equal(p.disclosures.length, 2)
    assert.deepEqual(correct.disclosed.sort(), ['address.locality', 'given_name'])
    const issuedDisclosures = splitSdJwt(input.credential).disclosures
    for (const d of p.disclosures) assert.ok(issuedDisclosures.includes(d), 'disclosures as issued')
    assert.deepEqual(p.kb?.header, { typ: 'kb+jwt', alg: 'ES256' })
    assert.deepEqual(p.kb?.payload, { nonce: input.nonce, aud: AUD, iat: input.iat, sd_hash: sha(p.sdJwt) })
  })

  const KB_CHANGES: [
    PresentationMisbehaviour,
    string,
    (i: ReturnType<typeof base>, sdJwt: string) => unknown,
  ][] = [
    ['kb-wrong-nonce', 'nonce', (i) => i.nonce],
    ['kb-wrong-aud', 'aud', () => withoutPrefix(AUD)],
    ['kb-stale-iat', 'iat', (i) => i.iat - EXPIRED_IAT_SECONDS],
    ['kb-future-iat', 'iat', (i) => i.iat + FUTURE_IAT_SECONDS],
    ['kb-wrong-sd-hash', 'sd_hash', (_i, sdJwt) => sha(sdJwt.slice(0, -1))],
  ]
  for (const [misbehaviour, member, value] of KB_CHANGES) {
    test(`${misbehaviour}: only the KB-JWT's ${member} differs`, async () => {
      const input = base()
      const p = parts((await presentSdJwt(input)).presentation)
      const m = parts((await presentSdJwt({ ...input, misbehave: [misbehaviour] })).presentation)
      assert.equal(m.sdJwt, p.sdJwt)
      assert.deepEqual(m.kb?.header, p.kb?.header)
      const { [member]: changed, ...rest } = m.kb?.payload ?? {}
      const { [member]: original, ...expectedRest } = p.kb?.payload ?? {}
      assert.deepEqual(rest, expectedRest)
      assert.notDeepEqual(changed, original)
      if (misbehaviour === 'kb-wrong-nonce') assert.match(String(changed), /^[A-Za-z0-9_-]{43}$/)
      else assert.deepEqual(changed, value(input, p.sdJwt))
    })
  }

  test("kb-bad-signature: the same SD-JWT, KB-JWT header and payload; its signature is not the cnf key's", async () => {
    const input = base()
    const p = parts((await presentSdJwt(input)).presentation)
    const m = parts((await presentSdJwt({ ...input, misbehave: ['kb-bad-signature'] })).presentation)
    assert.equal(m.sdJwt, p.sdJwt)
    assert.deepEqual(m.kb?.header, p.kb?.header)
    assert.deepEqual(m.kb?.payload, p.kb?.payload)
    // the holder key (cnf) verifies the correct KB-JWT, not this one
    const holderKey = resolveDidKey(holder.kid).publicKey
    assert.doesNotThrow(() => verifyJws(p.kbJwt as string, holderKey, { algorithms: [holder.alg] }))
    assert.throws(() => verifyJws(m.kbJwt as string, holderKey, { algorithms: [holder.alg] }), /signature/)
  })

  test('sd-issuer-signature: one bit of the issuer signature; disclosures as issued, the KB-JWT over what is presented', async () => {
    const input = base()
    const p = parts((await presentSdJwt(input)).presentation)
    const m = parts((await presentSdJwt({ ...input, misbehave: ['sd-issuer-signature'] })).presentation)
    const [header, payload, signature] = p.jwt.split('.') as [string, string, string]
    const [badHeader, badPayload, badSignature] = m.jwt.split('.') as [string, string, string]
    assert.deepEqual([badHeader, badPayload], [header, payload])
    const diff = Buffer.from(signature, 'base64url').map(
      (byte, i) => byte ^ (Buffer.from(badSignature, 'base64url')[i] as number),
    )
    assert.deepEqual(
      [...diff].filter((x) => x !== 0),
      [1],
      'exactly one bit of the signature differs',
    )
    assert.deepEqual(m.disclosures, p.disclosures)
    assert.deepEqual(m.kb?.header, p.kb?.header)
    assert.deepEqual({ ...m.kb?.payload, sd_hash: undefined }, { ...p.kb?.payload, sd_hash: undefined })
    assert.equal(m.kb?.payload.sd_hash, sha(m.sdJwt), 'sd_hash over the presented (altered) SD-JWT')
    const issuerKey = resolveDidKey(String(decodeJws(p.jwt).header.kid)).publicKey
    assert.doesNotThrow(() => verifyJws(p.jwt, issuerKey, { algorithms: ['EdDSA'] }))
    assert.throws(() => verifyJws(m.jwt, issuerKey, { algorithms: ['EdDSA'] }), /signature/)
  })

  test('kb-missing: the same SD-JWT, no KB-JWT', async () => {
    const input = base()
    const p = parts((await presentSdJwt(input)).presentation)
    const m = await presentSdJwt({ ...input, misbehave: ['kb-missing'] })
    assert.equal(m.presentation, p.sdJwt)
    assert.ok(m.presentation.endsWith('~'))
  })

  test('sd-extra-disclosure: one more disclosure (family_name), the KB-JWT consistent with it', async () => {
    const input = base()
    const p = parts((await presentSdJwt(input)).presentation)
    const extra = await presentSdJwt({ ...input, misbehave: ['sd-extra-disclosure'] })
    const m = parts(extra.presentation)
    assert.equal(extra.extra, 'family_name')
    assert.equal(m.disclosures.length, p.disclosures.length + 1)
    for (const d of p.disclosures) assert.ok(m.disclosures.includes(d))
    assert.deepEqual({ ...m.kb?.payload, sd_hash: undefined }, { ...p.kb?.payload, sd_hash: undefined })
    assert.equal(m.kb?.payload.sd_hash, sha(m.sdJwt))
  })

  test('sd-tampered-disclosure: one disclosure value changed (salt and name kept), the KB-JWT consistent with it', async () => {
    const input = base()
    const p = parts((await presentSdJwt(input)).presentation)
    const tampered = await presentSdJwt({ ...input, misbehave: ['sd-tampered-disclosure'] })
    const m = parts(tampered.presentation)
    assert.equal(m.jwt, p.jwt)
    assert.equal(m.disclosures.length, p.disclosures.length)
    const changed = m.disclosures.filter((d, i) => d !== p.disclosures[i])
    assert.equal(changed.length, 1)
    const index = m.disclosures.indexOf(changed[0] as string)
    const before = JSON.parse(Buffer.from(p.disclosures[index] as string, 'base64url').toString('utf8'))
    const after = JSON.parse(Buffer.from(changed[0] as string, 'base64url').toString('utf8'))
    assert.deepEqual(after.slice(0, -1), before.slice(0, -1))
    assert.equal(after.at(-1), `${before.at(-1)} (tampered)`)
    assert.deepEqual(tampered.tampered, { claim: before[1], from: before.at(-1), to: after.at(-1) })
    assert.equal(m.kb?.payload.sd_hash, sha(m.sdJwt))
  })
})

describe('the response around the presentations: each misbehaviour changing one thing', () => {
  const token = { pid: ['a~b~c'], degree: ['x.y.z'] }

  test('vp-token-wrong-id: only the first key changes (same presentations, same order)', () => {
    const wrong = withWrongQueryId(token)
    assert.deepEqual(Object.keys(wrong), ['pid_unrequested', 'degree'])
    assert.deepEqual(Object.values(wrong), Object.values(token))
  })

  test('plain-response sends exactly the direct_post form of the same vp_token', async () => {
    const session = await verifier.request({
      prefix: 'x509_san_dns',
      dcql: bothQuery(),
      responseMode: 'direct_post.jwt',
    })
    await assert.rejects(holder.present(session.link, { misbehave: ['plain-response'] }))
    const form = { ...verifier.session(session.id).verdict?.form }
    assert.deepEqual(Object.keys(form), ['vp_token', 'state'])
    assert.deepEqual(form, directPostForm(JSON.parse(form.vp_token as string), session.state))
    assert.deepEqual(Object.keys(JSON.parse(form.vp_token as string)), ['pid', 'degree'])
  })

  test("jwe-wrong-key: a fresh key of the verifier key's curve, its kid, alg and use kept; only that key decrypts", async () => {
    const verifierKey = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const jwk = {
      ...verifierKey.publicKey.export({ format: 'jwk' }),
      kid: 'enc-1',
      alg: 'ECDH-ES',
      use: 'enc',
    }
    const encryption = { jwk, alg: 'ECDH-ES' as const, enc: 'A256GCM' as const, kid: 'enc-1' }
    const wrong = tamperOf(['jwe-wrong-key']).apply('response.encryption', encryption)
    assert.deepEqual({ ...wrong, jwk: undefined }, { ...encryption, jwk: undefined })
    const { x, y, ...kept } = wrong.jwk
    assert.deepEqual(kept, { kty: 'EC', crv: 'P-256', kid: 'enc-1', alg: 'ECDH-ES', use: 'enc' })
    assert.notEqual(x, jwk.x)
    assert.notEqual(y, jwk.y)

    const payload = responsePayload(token, 'state-1')
    const good = await encryptResponse(payload, encryption)
    const bad = await encryptResponse(payload, wrong)
    assert.deepEqual({ ...bad.header, epk: undefined }, { ...good.header, epk: undefined })
    assert.equal(bad.header.kid, 'enc-1', "the verifier key's kid: it tries its own key")
    const decrypt = async (jwe: string) =>
      JSON.parse(new TextDecoder().decode((await compactDecrypt(jwe, verifierKey.privateKey)).plaintext))
    assert.deepEqual(await decrypt(good.jwe), payload)
    await assert.rejects(decrypt(bad.jwe), /decryption operation failed/)
  })

  test('jwe-wrong-key on the wire: the JWE header of a correct answer, but the verifier cannot decrypt it', async () => {
    const request = { prefix: 'x509_san_dns', dcql: bothQuery(), responseMode: 'direct_post.jwt' } as const
    const { result, verdict } = await answer(holder, request)
    assert.equal(verdict?.accepted, true, verdict?.reason)
    const session = await refusedBy(holder, request, ['jwe-wrong-key'], /decryption operation failed/)
    const header = verifier.session(session.id).verdict?.jweHeader as Record<string, unknown>
    assert.deepEqual(Object.keys(verifier.session(session.id).verdict?.form ?? {}), ['response'])
    assert.deepEqual(
      { ...header, kid: undefined, epk: undefined },
      { ...result.encryption, kid: undefined, epk: undefined },
    )
    assert.equal(header.kid, `enc-${session.id}`, "the verifier key's kid")
  })
})

// --- the wallet refuses requests it must not answer -------------------------------------------------------------------

describe('the wallet refuses a 1.0 request that breaks its prefix rules (§5.9.3, §5.10), posting nothing', () => {
  test('x509_san_dns signed by a leaf of a CA the wallet does not trust', async () => {
    const session = await verifier.request({
      prefix: 'x509_san_dns',
      dcql: bothQuery(),
      defect: 'untrusted-ca',
    })
    await refusedByWallet(
      holder,
      session,
      /^x509_san_dns \(OpenID4VP 1\.0 §5\.9\.3\): x5c: certificate 0 of the chain .* is not a configured trust anchor nor issued by one/,
    )
  })

  test('x509_hash with a wallet that has no trust anchor', async () => {
    const bare = await Wallet.create()
    const session = await verifier.request({ prefix: 'x509_hash', dcql: bothQuery() })
    await refusedByWallet(
      bare,
      session,
      /x509_hash .*: the wallet must validate the x5c chain, but it has no trust anchor configured/,
    )
  })

  test('x509_hash whose client identifier is the hash of another certificate', async () => {
    const session = await verifier.request({ prefix: 'x509_hash', dcql: bothQuery(), defect: 'wrong-hash' })
    await refusedByWallet(
      holder,
      session,
      /x509_hash .*: the client identifier \S+ is not the SHA-256 hash of the leaf certificate/,
    )
  })

  test('x509_san_dns whose leaf names another host', async () => {
    const session = await verifier.request({
      prefix: 'x509_san_dns',
      dcql: bothQuery(),
      defect: 'foreign-dns',
    })
    await refusedByWallet(
      holder,
      session,
      /x509_san_dns .*: localhost is not a dNSName SAN of the leaf certificate .*\["verifier\.example"\]/,
    )
  })

  test('redirect_uri with a signed request object', async () => {
    const session = await verifier.request({
      prefix: 'redirect_uri',
      dcql: bothQuery(),
      defect: 'signed-redirect-uri',
    })
    await refusedByWallet(
      holder,
      session,
      /^redirect_uri \(OpenID4VP 1\.0 §5\.9\.3\): the request must not be signed/,
    )
  })

  test('request_uri post whose request object does not echo the wallet_nonce', async () => {
    const session = await verifier.request({
      prefix: 'decentralized_identifier',
      dcql: bothQuery(),
      requestUriMethod: 'post',
      defect: 'wrong-wallet-nonce',
    })
    await refusedByWallet(
      holder,
      session,
      /^wallet_nonce \(OpenID4VP 1\.0 §5\.10\.1\): the request object must echo/,
    )
    const posted = session.fetched[0]?.walletNonce
    assert.ok(posted)
    assert.ok(verifier.session(session.id).fetched.length === 1)
  })

  test('an unsupported client identifier prefix is refused before anything is fetched', async () => {
    const session = await verifier.request({ prefix: 'decentralized_identifier', dcql: bothQuery() })
    const link = session.link.replace(
      /client_id=[^&]+/,
      `client_id=${encodeURIComponent('verifier_attestation:verifier.example')}`,
    )
    await assert.rejects(holder.present(link), (e: Record<string, unknown>) => {
      assert.equal(e.step, 'request')
      assert.equal(e.status, 0)
      assert.match(
        String(e.errorDescription),
        /has prefix verifier_attestation; this wallet verifies decentralized_identifier, x509_san_dns, x509_hash, redirect_uri/,
      )
      return true
    })
    assert.deepEqual(session.fetched, [])
  })

  test("the link's client_id and the request object's must be identical, prefix included", async () => {
    const session = await verifier.request({ prefix: 'decentralized_identifier', dcql: bothQuery() })
    const link = session.link.replace(/client_id=[^&]+/, `client_id=${encodeURIComponent(`x509_hash:abc`)}`)
    await assert.rejects(holder.present(link), (e: Record<string, unknown>) => {
      assert.match(
        String(e.errorDescription),
        /must be identical, prefix included \(OpenID4VP 1\.0 §5\.10\.1\)/,
      )
      return true
    })
  })

  test('startPresentation (the draft-20 API) points a 1.0 link to startPresentationV1', async () => {
    const session = await verifier.request({ prefix: 'x509_san_dns', dcql: bothQuery() })
    await assert.rejects(
      holder.startPresentation(session.link),
      (e: Error) => e instanceof WalletUsageError && /startPresentationV1/.test(e.message),
    )
    assert.deepEqual(session.fetched, [])
  })
})

// --- DCQL matching, unit -----------------------------------------------------------------------------------------------

describe('selectForDcql (unit): what answers a query, without any verifier', () => {
  const select = (query: Record<string, unknown>) =>
    selectForDcql(DcqlQuery.parse(query as never), twice.credentials())

  test('claims, claim sets, multiple and the newest-first choice', async () => {
    const pids = twice.credentials().filter((c) => c.format === 'dc+sd-jwt')
    const one = await select({ credentials: [pidQuery()] })
    assert.deepEqual(
      one.answers.map((a) => [a.queryId, a.credentials.map((c) => c.credential.id)]),
      [['pid', [pids[1]?.id]]],
    )
    assert.deepEqual(one.answers[0]?.credentials[0]?.claimPaths, [['given_name'], ['address', 'locality']])
    const many = await select({ credentials: [pidQuery({ multiple: true })] })
    assert.deepEqual(
      many.answers[0]?.credentials.map((c) => c.credential.id),
      [pids[1]?.id, pids[0]?.id],
    )
    const sets = await select({
      credentials: [
        pidQuery({
          claims: [
            { id: 'a', path: ['nickname'] },
            { id: 'b', path: ['family_name'] },
            { id: 'c', path: ['address', 'country'] },
          ],
          claim_sets: [['a', 'b'], ['c', 'b'], ['b']],
        }),
      ],
    })
    const choice = sets.answers[0]?.credentials[0]
    assert.equal(choice?.claimSetIndex, 1)
    assert.deepEqual(
      choice?.claimPaths,
      [['address', 'country'], ['family_name']],
      'in the order of the claim set',
    )
    const none = await select({ credentials: [pidQuery({ claims: undefined })] })
    assert.deepEqual(none.answers[0]?.credentials[0]?.claimPaths, [])
  })

  test('concretePaths: a null element selects every element of the array there (§7.1)', () => {
    const claims = { nationalities: ['DE', 'FR'], degrees: [{ type: 'BSc' }, { type: 'MSc' }], name: 'x' }
    assert.deepEqual(concretePaths(['nationalities', null], claims), ['nationalities.0', 'nationalities.1'])
    assert.deepEqual(concretePaths(['degrees', null, 'type'], claims), ['degrees.0.type', 'degrees.1.type'])
    assert.deepEqual(concretePaths(['degrees', 1, 'type'], claims), ['degrees.1.type'])
    assert.deepEqual(concretePaths(['name', null], claims), [])
  })

  test('jwt_vc_json: type_values against vc.type, claim paths from the root of the VC', async () => {
    const found = await select({ credentials: [DEGREE_QUERY] })
    assert.equal(found.answers[0]?.credentials[0]?.format, 'jwt_vc_json')
    await assert.rejects(
      select({ credentials: [{ ...DEGREE_QUERY, claims: [{ path: ['degree'] }] }] }),
      (e: Error) => e instanceof DcqlUnsatisfiedError && /degree \(jwt_vc_json/.test(e.message),
    )
  })

  test('credential_sets: required sets must be met (the error names their queries), optional ones are skipped', async () => {
    const query = (required: boolean) => ({
      credentials: [{ id: 'mdl', format: 'dc+sd-jwt', meta: { vct_values: ['x'] } }, pidQuery()],
      credential_sets: [{ options: [['pid']] }, { options: [['mdl']], required }],
    })
    const optional = await select(query(false))
    assert.deepEqual(
      optional.answers.map((a) => a.queryId),
      ['pid'],
    )
    await assert.rejects(select(query(true)), (e: Error) => {
      assert.ok(e instanceof DcqlUnsatisfiedError)
      assert.deepEqual(e.credentialQueries, ['mdl'])
      assert.match(e.message, /credential_sets\[1\] \(options \[mdl\]\)/)
      return true
    })
  })
})

// --- CLI ---------------------------------------------------------------------------------------------------------------------

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin/vc-harness.mjs'), ...args],
      { cwd: ROOT, timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr })
      },
    )
  })
}

describe('vc-harness wallet present (CLI, child process) against the OWF verifier', () => {
  test('x509_san_dns, request_uri post, direct_post.jwt: presented; --misbehave kb-wrong-aud: refused, exit 1', async () => {
    const file = join(tempDir, 'wallet.json')
    const anchor = join(tempDir, 'ca.pem')
    writeFileSync(anchor, verifier.caPem)
    const wallet = await Wallet.create({ file, keyType: 'P-256' })
    await wallet.receive(issuer.offer({ configurationIds: [SD_JWT_CONFIG] }))
    const options: RequestOptions = {
      prefix: 'x509_san_dns',
      dcql: { credentials: [pidQuery()] },
      requestUriMethod: 'post',
      responseMode: 'direct_post.jwt',
    }
    const good = await verifier.request(options)
    const run = await cli(['wallet', 'present', good.link, '--wallet', file, '--trust-anchor', anchor])
    assert.equal(run.code, 0, run.stderr)
    const output = JSON.parse(run.stdout) as PresentationResult & { vpToken: Record<string, string[]> }
    assert.equal(output.status, 'verified')
    assert.equal(output.profile, '1.0')
    assert.equal(output.responseMode, 'direct_post.jwt')
    assert.deepEqual(Object.keys(output.vpToken), ['pid'])
    assert.match(
      run.stderr,
      /client_id prefix x509_san_dns, request_uri post, signed\) asks with DCQL for \["pid"\], answer direct_post\.jwt/,
    )
    assert.match(run.stderr, /select: pid ← \S+ disclosing \[\["given_name"\],\["address","locality"\]\]/)
    assert.equal(verifier.session(good.id).verdict?.accepted, true)

    const bad = await verifier.request(options)
    const refused = await cli([
      'wallet',
      'present',
      bad.link,
      '--wallet',
      file,
      '--trust-anchor',
      anchor,
      '--misbehave',
      'kb-wrong-aud',
    ])
    assert.equal(refused.code, 1)
    const failed = JSON.parse(refused.stdout) as Record<string, unknown>
    assert.equal(failed.step, 'response')
    assert.match(String(failed.error_description), /KB-JWT aud "localhost" is not the client_id/)

    const untrusted = await verifier.request(options)
    const noAnchor = await cli(['wallet', 'present', untrusted.link, '--wallet', file])
    assert.equal(noAnchor.code, 1)
    assert.match(noAnchor.stderr, /no trust anchor configured/)
    assert.equal(verifier.session(untrusted.id).verdict, undefined)
  })

  test('--decline-unsatisfied: a query nothing held satisfies is answered access_denied (exit 0)', async () => {
    const file = join(tempDir, 'empty.json')
    await Wallet.create({ file })
    const session = await verifier.request({
      prefix: 'decentralized_identifier',
      dcql: { credentials: [pidQuery()] },
    })
    const refused = await cli(['wallet', 'present', session.link, '--wallet', file])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /credential query pid unsatisfied/)
    assert.equal(verifier.session(session.id).verdict, undefined)
    const declined = await cli(['wallet', 'present', session.link, '--wallet', file, '--decline-unsatisfied'])
    assert.equal(declined.code, 0, declined.stderr)
    assert.equal((JSON.parse(declined.stdout) as { status: string }).status, 'rejected-by-wallet')
    assert.deepEqual(verifier.session(session.id).verdict?.declined, {
      error: 'access_denied',
      description: 'the wallet holds no credential for the credential query pid',
    })
  })
})
