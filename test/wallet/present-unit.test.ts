// Unit tests of the simulated wallet's OpenID4VP side (src/wallet/presentation*.ts): real keys, real
// signatures, did-auth-siop and PEX for real, and a fake verifier behind the wallet's injectable `fetch`, so no
// socket is opened. What the wallet sends is tested against the real reference service in
// test/wallet/present.test.ts.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { emptyBitstring, encodeList, STATUS_MESSAGES, setStatus } from '../../src/shared/bitstring.ts'
import { didKeyFromPublicKey, generateKeyPair, type JwsAlg, resolveDidKey } from '../../src/shared/did-key.ts'
import { type DecodedJws, decodeJws, signJws, verifyJws } from '../../src/shared/jws.ts'
import {
  AUTHORIZATION_REQUEST_SCHEME,
  REQUEST_OBJECT_MEDIA_TYPE,
  REQUEST_OBJECT_TYP,
  SIOP_AUDIENCE,
} from '../../src/shared/wire.ts'
import {
  type HolderKeyType,
  MISBEHAVIOURS,
  NoMatchingCredentialsError,
  PRESENTATION_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  parsePresentationLink,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import {
  assertMisbehaviours,
  assertPresentationMisbehaviours,
  WRONG_AUDIENCE,
} from '../../src/wallet/misbehaviour.ts'
import {
  ACCESS_DENIED_DESCRIPTION,
  DcqlNotSupportedError,
  libraryForm,
} from '../../src/wallet/presentation.ts'
import { answerFormats, evaluationDefinition } from '../../src/wallet/presentation-select.ts'
import {
  lyingSubmission,
  type PresentationSubmission,
  responseForm,
  tamperCredential,
  withAnswerFormats,
} from '../../src/wallet/presentation-vp.ts'
import { walletCli } from '../helpers.ts'

// --- a fake verifier and issuer, behind the wallet's fetch -------------------------------------------------------

const BASE = 'https://verifier.example/oid4vp/demo'
const STATUS_BASE = 'https://issuer.example/status'
const ALGS = ['EdDSA', 'ES256', 'ES256K']
const NOW_MS = Date.now()
const NOW = Math.floor(NOW_MS / 1000)
const fixedNow = () => NOW_MS

interface Key {
  did: string
  kid: string
  alg: JwsAlg
  privateKey: ReturnType<typeof generateKeyPair>['privateKey']
}

function newKey(alg: JwsAlg = 'EdDSA'): Key {
  const pair = generateKeyPair(alg)
  const didKey = didKeyFromPublicKey(pair.publicKey)
  return { did: didKey.did, kid: didKey.kid, alg, privateKey: pair.privateKey }
}

const ISSUER = newKey()

interface Answer {
  status: number
  body: string
  contentType?: string
}

interface Session {
  id: string
  payload: Record<string, unknown>
  header: Record<string, unknown>
  jwt: string
  link: string
}

/** Descriptor as the reference service builds it (src/service/verification/definition.ts), trimmed. */
function descriptor(type: string, opts: { group?: string; issuers?: string[]; fields?: string[] } = {}) {
  const issuers = opts.issuers ?? [ISSUER.did]
  return {
    id: type,
    name: type,
    purpose: `We need your ${type}`,
    group: [opts.group ?? 'mandatory'],
    constraints: {
      fields: [
        { path: ['$.vc.type[-1:]', '$.type[-1:]'], filter: { type: 'string', const: type } },
        {
          path: ['$.iss', '$.vc.issuer', '$.issuer', '$.vc.issuer.id', '$.issuer.id'],
          filter: { type: 'string', pattern: `^(${issuers.join('|')})$` },
        },
        ...(opts.fields ?? []).map((f) => ({ path: [f.replace(/^\$\./, '$.vc.'), f] })),
      ],
      statuses: { active: { directive: 'required' } },
    },
  }
}

function definition(
  descriptors: ReturnType<typeof descriptor>[],
  requirements?: Record<string, unknown>[],
): Record<string, unknown> {
  return {
    id: randomUUID(),
    name: 'Check',
    format: {
      jwt: { alg: ALGS },
      jwt_vc: { alg: ALGS },
      jwt_vc_json: { alg: ALGS },
      jwt_vp: { alg: ALGS },
      jwt_vp_json: { alg: ALGS },
      ldp: { proof_type: ['Ed25519Signature2018'] },
    },
    submission_requirements: requirements ?? [{ name: 'mandatory', rule: 'all', from: 'mandatory' }],
    input_descriptors: descriptors,
  }
}

const DEGREE_DEFINITION = () => definition([descriptor('UniversityDegreeCredential')])

class FakeVerifier {
  readonly key: Key
  readonly sessions = new Map<string, Session>()
  readonly statusLists = new Map<string, string>()
  readonly calls: { method: string; url: string; form?: Record<string, string> }[] = []
  /** what POST response_uri answers; default 200 {} */
  respondWith: (form: Record<string, string>) => Answer = () => ({ status: 200, body: '{}' })
  /** overrides GET request_uri */
  requestAnswer: ((session: Session) => Answer) | undefined

  constructor(alg: JwsAlg = 'EdDSA') {
    this.key = newKey(alg)
  }

  posts(): Record<string, string>[] {
    return this.calls.flatMap((c) => (c.form ? [c.form] : []))
  }

  /** A session the way the reference service opens one: signed request object, link by reference. */
  open(
    opts: {
      definition?: Record<string, unknown>
      payload?: Record<string, unknown>
      header?: Record<string, unknown>
      signer?: Key
      linkClientId?: string
    } = {},
  ): Session {
    const id = randomUUID()
    const responseUri = `${BASE}/responses/${id}`
    const signer = opts.signer ?? this.key
    const payload: Record<string, unknown> = {
      iss: this.key.did,
      aud: SIOP_AUDIENCE,
      client_id: this.key.did,
      client_id_scheme: 'did',
      response_type: 'vp_token',
      response_mode: 'direct_post',
      response_uri: responseUri,
      scope: 'openid',
      nonce: `nonce-${randomUUID()}`,
      state: `state-${randomUUID()}`,
      presentation_definition: opts.definition ?? DEGREE_DEFINITION(),
      iat: NOW,
      nbf: NOW,
      exp: NOW + 600,
      jti: id,
      ...opts.payload,
    }
    const header = { alg: signer.alg, typ: REQUEST_OBJECT_TYP, kid: signer.kid, ...opts.header }
    const jwt = signJws(header as { alg: JwsAlg }, payload, signer.privateKey)
    const link = `${AUTHORIZATION_REQUEST_SCHEME}://?${new URLSearchParams({
      client_id: opts.linkClientId ?? this.key.did,
      redirect_uri: responseUri,
      request_uri: `${BASE}/requests/${id}`,
      response_mode: 'direct_post',
      response_type: 'vp_token',
      scope: 'openid',
    })}`
    const session = { id, payload, header, jwt, link }
    this.sessions.set(id, session)
    return session
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const url = String(input)
    const method = init?.method ?? 'GET'
    const form = method === 'POST' ? Object.fromEntries(new URLSearchParams(String(init?.body))) : undefined
    this.calls.push({ method, url, ...(form && { form }) })
    const answer = (a: Answer) =>
      new Response(a.body, {
        status: a.status,
        headers: { 'content-type': a.contentType ?? 'application/json' },
      })
    const list = this.statusLists.get(url)
    if (list) return answer({ status: 200, body: list, contentType: 'application/jwt' })
    const match = /\/(requests|responses)\/([^/]+)$/.exec(new URL(url).pathname)
    const session = match ? this.sessions.get(match[2] as string) : undefined
    if (!session) return answer({ status: 404, body: '{"error":"not_found","error_description":"no such"}' })
    if (match?.[1] === 'requests' && method === 'GET') {
      return answer(
        this.requestAnswer?.(session) ?? {
          status: 200,
          body: session.jwt,
          contentType: REQUEST_OBJECT_MEDIA_TYPE,
        },
      )
    }
    return answer(this.respondWith(form ?? {}))
  }
}

/** A jwt_vc_json credential signed by `issuer` for `subject`, optionally with a Bitstring status entry. */
function credential(
  subject: string,
  opts: {
    type?: string
    claims?: Record<string, unknown>
    issuer?: Key
    status?: { list: string; index: number }
    iat?: number
  } = {},
): string {
  const issuer = opts.issuer ?? ISSUER
  const iat = opts.iat ?? NOW - 60
  return signJws(
    { alg: issuer.alg, typ: 'JWT', kid: issuer.kid },
    {
      iss: issuer.did,
      sub: subject,
      jti: `urn:uuid:${randomUUID()}`,
      nbf: iat,
      iat,
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', opts.type ?? 'UniversityDegreeCredential'],
        issuer: issuer.did,
        issuanceDate: new Date(iat * 1000).toISOString(),
        credentialSubject: {
          id: subject,
          ...(opts.claims ?? { degree: { type: 'BachelorDegree', name: 'Bachelor of Science' } }),
        },
        ...(opts.status && {
          credentialStatus: {
            id: `${opts.status.list}#${opts.status.index}`,
            type: 'BitstringStatusListEntry',
            statusPurpose: 'message',
            statusListIndex: String(opts.status.index),
            statusListCredential: opts.status.list,
            statusSize: 2,
            statusMessage: STATUS_MESSAGES,
          },
        }),
      },
    },
    issuer.privateKey,
  )
}

/** A status list credential (JWT) with the given entries revoked. */
function statusList(url: string, revoked: number[]): string {
  const bits = emptyBitstring(1024)
  for (const index of revoked) setStatus(bits, index, 1)
  return signJws(
    { alg: ISSUER.alg, typ: 'JWT', kid: ISSUER.kid },
    {
      iss: ISSUER.did,
      sub: `${url}#list`,
      iat: NOW,
      vc: {
        '@context': ['https://www.w3.org/ns/credentials/v2'],
        type: ['VerifiableCredential', 'BitstringStatusListCredential'],
        issuer: ISSUER.did,
        credentialSubject: {
          id: `${url}#list`,
          type: 'BitstringStatusList',
          statusPurpose: 'message',
          statusSize: 2,
          encodedList: encodeList(bits),
        },
      },
    },
    ISSUER.privateKey,
  )
}

const ORIGIN = {
  credentialIssuer: 'https://issuer.example/oid4vci/demo',
  configurationId: 'degree',
  status: 200,
}

async function walletWith(
  verifier: FakeVerifier,
  credentials: ((did: string) => string)[] = [(did) => credential(did)],
  keyType: HolderKeyType = 'Ed25519',
): Promise<Wallet> {
  const wallet = await Wallet.create({ keyType, fetch: verifier.fetch })
  for (const make of credentials) await wallet.accept([make(wallet.did)], ORIGIN)
  return wallet
}

interface Posted {
  form: Record<string, string>
  vp: DecodedJws
  submission: PresentationSubmission
  credentials: string[]
}

function read(form: Record<string, string>): Posted {
  const vp = decodeJws(form.vp_token as string)
  const submission = JSON.parse(form.presentation_submission as string) as PresentationSubmission
  const credentials = (vp.payload.vp as { verifiableCredential: string[] }).verifiableCredential
  return { form, vp, submission, credentials }
}

/** Keys whose values differ between two objects. */
function changedKeys(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  return [...keys].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort()
}

/** The submission without its random `id` (a fresh one for every answer). */
function withoutId(submission: PresentationSubmission): Omit<PresentationSubmission, 'id'> {
  const { id: _id, ...rest } = submission
  return rest
}

/** One session, answered correctly and then with `misbehave` (the fake verifier accepts both). */
async function goodAndBad(
  wallet: Wallet,
  verifier: FakeVerifier,
  misbehave: PresentationMisbehaviour[],
  opts: { definition?: Record<string, unknown> } = {},
) {
  const session = verifier.open(opts)
  const presentation = await wallet.startPresentation(session.link, { now: fixedNow })
  const good = await presentation.respond()
  const bad = await presentation.respond({ misbehave })
  return { session, good: read(good.form), bad: read(bad.form), goodResult: good, badResult: bad }
}

async function rejectsWith(
  promise: Promise<unknown>,
  expected: { step: string; status: number; error: string; description?: RegExp },
): Promise<WalletProtocolError> {
  let caught: unknown
  await assert.rejects(promise, (error: unknown) => {
    caught = error
    return true
  })
  assert.ok(caught instanceof WalletProtocolError, `expected a WalletProtocolError, got ${String(caught)}`)
  assert.deepEqual(
    { step: caught.step, status: caught.status, error: caught.error },
    { step: expected.step, status: expected.status, error: expected.error },
    caught.message,
  )
  if (expected.description) assert.match(caught.errorDescription ?? '', expected.description)
  return caught
}

function verifiesWith(jwt: string, kid: string): boolean {
  try {
    verifyJws(jwt, resolveDidKey(kid).publicKey, { algorithms: ['EdDSA', 'ES256', 'ES256K'] })
    return true
  } catch {
    return false
  }
}

// --- misbehaviour lists ------------------------------------------------------------------------------------------

describe('misbehaviour lists', () => {
  test('issuance and presentation misbehaviours are disjoint lists', () => {
    const issuance = new Set<string>(MISBEHAVIOURS)
    assert.deepEqual(
      PRESENTATION_MISBEHAVIOURS.filter((m) => issuance.has(m)),
      [],
    )
    assert.equal(new Set(PRESENTATION_MISBEHAVIOURS).size, PRESENTATION_MISBEHAVIOURS.length)
  })

  test('a misbehaviour passed to the wrong flow is a TypeError naming its flow', async () => {
    assert.throws(
      () => assertPresentationMisbehaviours(['wrong-nonce']),
      (e: Error) =>
        e instanceof TypeError &&
        /belongs to the issuance flow/.test(e.message) &&
        /did you mean vp-wrong-nonce/.test(e.message),
    )
    assert.throws(
      () => assertMisbehaviours(['vp-wrong-aud']),
      (e: Error) => e instanceof TypeError && /belongs to the presentation flow/.test(e.message),
    )
    assert.throws(
      () => assertPresentationMisbehaviours(['no-such-thing']),
      (e: Error) => e instanceof TypeError && /unknown presentation misbehaviour/.test(e.message),
    )
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    await assert.rejects(
      wallet.present(verifier.open().link, { misbehave: ['bad-signature' as PresentationMisbehaviour] }),
      (e: Error) => e instanceof TypeError && /issuance flow/.test(e.message),
    )
    await assert.rejects(
      wallet.receive('openid-credential-offer://?credential_offer_uri=https%3A%2F%2Fx.example%2Fo', {
        misbehave: ['access-denied' as never],
      }),
      (e: Error) => e instanceof TypeError && /presentation flow/.test(e.message),
    )
    assert.deepEqual(verifier.calls, [], 'nothing was sent')
  })

  test('misbehaviours that change the same thing are a WalletUsageError together, before anything is sent', async () => {
    const cases: [PresentationMisbehaviour[], RegExp][] = [
      [
        ['kb-stale-iat', 'kb-future-iat'],
        /^misbehaviours kb-stale-iat and kb-future-iat both set the KB-JWT's iat/,
      ],
      [
        ['kb-missing', 'kb-bad-signature'],
        /^misbehaviour kb-missing sends no KB-JWT, so kb-bad-signature would change nothing/,
      ],
      [['kb-wrong-nonce', 'kb-missing'], /kb-missing sends no KB-JWT, so kb-wrong-nonce would/],
      [['plain-response', 'jwe-wrong-key'], /both set how a direct_post\.jwt answer is encrypted/],
    ]
    for (const [misbehave, pattern] of cases) {
      assert.throws(
        () => assertPresentationMisbehaviours(misbehave),
        (e: Error) => e instanceof WalletUsageError && pattern.test(e.message),
        misbehave.join(' + '),
      )
    }
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    await assert.rejects(
      wallet.present(verifier.open().link, { misbehave: ['kb-stale-iat', 'kb-future-iat'] }),
      (e: Error) => e instanceof WalletUsageError,
    )
    assert.deepEqual(verifier.calls, [], 'nothing was sent')
    // the others combine
    assert.deepEqual(
      assertPresentationMisbehaviours(['kb-bad-signature', 'kb-future-iat', 'sd-issuer-signature']),
      ['kb-bad-signature', 'kb-future-iat', 'sd-issuer-signature'],
    )
  })
})

// --- the link ---------------------------------------------------------------------------------------------------

describe('authorization request link', () => {
  test('the link as the reference service builds it', () => {
    const verifier = new FakeVerifier()
    const session = verifier.open()
    const parsed = parsePresentationLink(session.link)
    assert.equal(parsed.scheme, 'openid-vp')
    assert.equal(parsed.clientId, verifier.key.did)
    assert.equal(parsed.requestUri, `${BASE}/requests/${session.id}`)
    assert.equal(parsed.request, undefined)
    assert.equal(parsed.params.redirect_uri, `${BASE}/responses/${session.id}`)
  })

  test('garbage gives a clear WalletUsageError', () => {
    const cases: [string, RegExp][] = [
      ['', /empty/],
      ['hello', /not an authorization request link/],
      ['openid-vp://?client_id=x', /neither request_uri nor request/],
      ['openid-vp://?request_uri=https%3A%2F%2Fa.example&request=eyJ', /both request_uri and request/],
      ['openid-vp://?request_uri=nope', /request_uri is not a URL/],
      ['openid-vp://?request_uri=ftp%3A%2F%2Fa.example', /must be an http\(s\) URL/],
      ['openid-vp://?request_uri=https%3A%2F%2Fa.example&request_uri=https%3A%2F%2Fb.example', /repeats/],
    ]
    for (const [link, pattern] of cases) {
      assert.throws(
        () => parsePresentationLink(link),
        (e: Error) => e instanceof WalletUsageError && pattern.test(e.message),
        link,
      )
    }
  })
})

// --- the request object -----------------------------------------------------------------------------------------

describe('request object: fetched, verified, checked', () => {
  for (const alg of ['EdDSA', 'ES256', 'ES256K'] as const) {
    test(`a ${alg} request object is verified with the did:key named by kid`, async () => {
      const verifier = new FakeVerifier(alg)
      const wallet = await walletWith(verifier)
      const session = verifier.open()
      const presentation = await wallet.startPresentation(session.link)
      assert.equal(presentation.clientId, verifier.key.did)
      assert.equal(presentation.nonce, session.payload.nonce)
      assert.equal(presentation.state, session.payload.state)
      assert.equal(presentation.responseUri, `${BASE}/responses/${session.id}`)
      assert.equal(presentation.sessionId, session.id)
      assert.equal(presentation.requestObject, session.jwt)
      assert.equal(presentation.expiresAt, (NOW + 600) * 1000)
      assert.deepEqual(presentation.presentationDefinition, session.payload.presentation_definition)
      assert.deepEqual(
        verifier.calls.map((c) => `${c.method} ${c.url}`),
        [`GET ${BASE}/requests/${session.id}`],
      )
    })
  }

  test('what the wallet refuses, before answering anything', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const other = newKey()
    const cases: [string, Parameters<FakeVerifier['open']>[0], RegExp][] = [
      [
        'signed by another key under the verifier kid',
        { signer: { ...other, kid: verifier.key.kid } },
        /signature/,
      ],
      ['kid of another DID than client_id', { signer: other }, /is not a key of client_id/],
      ['link and request object client_id differ', { linkClientId: other.did }, /client_id of the link/],
      ['expired', { payload: { exp: NOW - 1 } }, /expired at/],
      ['response_mode', { payload: { response_mode: 'fragment' } }, /not direct_post/],
      ['response_type', { payload: { response_type: 'id_token' } }, /does not ask for a vp_token/],
      ['no nonce', { payload: { nonce: undefined } }, /no nonce/],
      ['client_id not a DID', { payload: { client_id: 'https://rp.example' } }, /not a DID|is not a key of/],
      ['typ', { header: { typ: 'JWT' } }, /typ "JWT"/],
    ]
    for (const [what, opts, pattern] of cases) {
      const session = verifier.open(opts)
      await rejectsWith(wallet.startPresentation(session.link), {
        step: 'request',
        status: 200,
        error: 'invalid_request_object',
        description: pattern,
      }).catch((error) => assert.fail(`${what}: ${error.message}`))
    }
    assert.deepEqual(verifier.posts(), [], 'nothing was posted')
  })

  test('an unsigned (alg none) request object is refused', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const session = verifier.open()
    const [, payload] = session.jwt.split('.')
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: REQUEST_OBJECT_TYP })).toString('base64url')
    verifier.requestAnswer = () => ({
      status: 200,
      body: `${header}.${payload}.`,
      contentType: REQUEST_OBJECT_MEDIA_TYPE,
    })
    await rejectsWith(wallet.startPresentation(session.link), {
      step: 'request',
      status: 200,
      error: 'invalid_request_object',
      description: /alg none|unsigned|signature/,
    })
  })

  test('the wrong content type, and the verifier error answers with their bodies', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const session = verifier.open()
    verifier.requestAnswer = (s) => ({ status: 200, body: s.jwt, contentType: 'application/json' })
    await rejectsWith(wallet.startPresentation(session.link), {
      step: 'request',
      status: 200,
      error: 'invalid_request_object',
      description: /content type application\/json/,
    })
    for (const [status, error] of [
      [404, 'not_found'],
      [410, 'session_expired'],
      [409, 'session_closed'],
    ] as const) {
      verifier.requestAnswer = () => ({
        status,
        body: JSON.stringify({ error, error_description: `it is ${error}` }),
      })
      const e = await rejectsWith(wallet.startPresentation(session.link), { step: 'request', status, error })
      assert.equal(e.errorDescription, `it is ${error}`)
    }
  })

  test("'expired-session' skips only the wallet's own exp check", async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const session = verifier.open()
    const later = () => (NOW + 601) * 1000
    await rejectsWith(wallet.startPresentation(session.link, { now: later }), {
      step: 'request',
      status: 200,
      error: 'invalid_request_object',
      description: /expired at/,
    })
    // fetched in time, answered late: refused unless misbehaving
    let now = NOW_MS
    const presentation = await wallet.startPresentation(session.link, { now: () => now })
    const good = read((await presentation.respond()).form)
    now = later()
    assert.equal(presentation.expired, true)
    await rejectsWith(presentation.respond(), {
      step: 'request',
      status: 200,
      error: 'invalid_request_object',
      description: /expired at .*expired-session answers anyway/,
    })
    assert.equal(verifier.posts().length, 1, 'the refused answer was not posted')
    const bad = read((await presentation.respond({ misbehave: ['expired-session'] })).form)
    // nothing on the wire changes but the VP's iat (the wallet's clock moved)
    assert.deepEqual(changedKeys(good.vp.payload, bad.vp.payload), ['iat'])
    assert.deepEqual(good.vp.header, bad.vp.header)
    assert.deepEqual(withoutId(good.submission), withoutId(bad.submission))
    assert.equal(good.form.state, bad.form.state)
    // and start() with the misbehaviour accepts an expired request object (a fresh one: the wallet refuses
    // a request whose nonce it already answered, OpenID4VP 1.0 §14.1)
    const late = await wallet.startPresentation(verifier.open().link, {
      now: later,
      misbehave: ['expired-session'],
    })
    assert.equal(late.expired, true)
  })
})

// --- selection ----------------------------------------------------------------------------------------------------

describe('credential selection (Presentation Exchange)', () => {
  test('nothing matching: NoMatchingCredentialsError naming each descriptor, nothing posted', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier, [(did) => credential(did, { type: 'VerifiableId' })])
    const def = definition([descriptor('UniversityDegreeCredential'), descriptor('DriversLicense')])
    const session = verifier.open({ definition: def })
    await assert.rejects(wallet.present(session.link), (e: Error) => {
      assert.ok(e instanceof NoMatchingCredentialsError, String(e))
      assert.ok(e instanceof WalletUsageError)
      assert.deepEqual(e.descriptors, ['UniversityDegreeCredential', 'DriversLicense'])
      assert.match(e.message, /UniversityDegreeCredential \(UniversityDegreeCredential\), DriversLicense/)
      assert.match(e.message, new RegExp(String(def.id)))
      return true
    })
    assert.deepEqual(verifier.posts(), [])
    assert.equal(verifier.calls.length, 1, 'only the request object was fetched')
  })

  test('an untrusted issuer and a missing requested field do not match', async () => {
    const verifier = new FakeVerifier()
    const stranger = newKey()
    const wallet = await walletWith(verifier, [
      (did) => credential(did, { issuer: stranger }),
      (did) => credential(did, { claims: { degree: { name: 'BSc' } } }),
    ])
    const def = definition([
      descriptor('UniversityDegreeCredential', { fields: ['$.credentialSubject.gpa'] }),
    ])
    await assert.rejects(wallet.present(verifier.open({ definition: def }).link), NoMatchingCredentialsError)
    const trusting = definition([descriptor('UniversityDegreeCredential')])
    const result = await wallet.present(verifier.open({ definition: trusting }).link)
    assert.deepEqual(result.presented, [wallet.credentials()[1]?.id], 'the trusted one')
  })

  test('the newest matching credential per descriptor; each descriptor mapped to its credential', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier, [
      (did) => credential(did, { claims: { degree: { name: 'old' } } }),
      (did) => credential(did, { type: 'VerifiableId', claims: { familyName: 'Lovelace' } }),
      (did) => credential(did, { claims: { degree: { name: 'new' } } }),
    ])
    const held = wallet.credentials()
    const def = definition([
      descriptor('VerifiableId', { fields: ['$.credentialSubject.familyName'] }),
      descriptor('UniversityDegreeCredential'),
    ])
    const result = await wallet.present(verifier.open({ definition: def }).link)
    assert.deepEqual(result.presented, [held[1]?.id, held[2]?.id])
    const posted = read(result.form)
    assert.deepEqual(posted.credentials, [held[1]?.credential, held[2]?.credential], 'as issued')
    assert.deepEqual(withoutId(posted.submission), {
      definition_id: def.id,
      descriptor_map: [
        {
          id: 'VerifiableId',
          format: 'jwt_vp_json',
          path: '$',
          path_nested: { id: 'VerifiableId', format: 'jwt_vc_json', path: '$.vp.verifiableCredential[0]' },
        },
        {
          id: 'UniversityDegreeCredential',
          format: 'jwt_vp_json',
          path: '$',
          path_nested: {
            id: 'UniversityDegreeCredential',
            format: 'jwt_vc_json',
            path: '$.vp.verifiableCredential[1]',
          },
        },
      ],
    })
  })

  test('submission_requirements: pick min 1 of an optional group, all of the mandatory one', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier, [
      (did) => credential(did),
      (did) => credential(did, { type: 'Passport', claims: { number: 'X1' } }),
    ])
    const requirements = [
      { name: 'mandatory', rule: 'all', from: 'mandatory' },
      { name: 'identity', rule: 'pick', min: 1, from: 'identity' },
    ]
    const def = definition(
      [
        descriptor('UniversityDegreeCredential'),
        descriptor('DriversLicense', { group: 'identity' }),
        descriptor('Passport', { group: 'identity' }),
      ],
      requirements,
    )
    const result = await wallet.present(verifier.open({ definition: def }).link)
    assert.equal(result.presented.length, 2)
    assert.deepEqual(
      read(result.form).submission.descriptor_map.map((d) => d.id),
      ['UniversityDegreeCredential', 'Passport'],
    )
    // a wallet with the degree only: the identity group names both its descriptors
    const degreeOnly = await walletWith(verifier)
    await assert.rejects(degreeOnly.present(verifier.open({ definition: def }).link), (e: Error) => {
      assert.ok(e instanceof NoMatchingCredentialsError)
      assert.deepEqual(e.descriptors, ['DriversLicense', 'Passport'])
      return true
    })
  })
})

// --- format identifiers and query languages ----------------------------------------------------------------------

/** The degree descriptor with its own `format` (none: the definition's applies). */
function degreeDescriptor(format?: Record<string, unknown>) {
  return { ...descriptor('UniversityDegreeCredential'), ...(format && { format }) }
}

/** A definition with the given top-level `format` (none: no `format` at all) and descriptors. */
function formatDefinition(
  format: Record<string, unknown> | undefined,
  descriptors: Record<string, unknown>[] = [degreeDescriptor()],
): Record<string, unknown> {
  return {
    id: randomUUID(),
    ...(format && { format }),
    submission_requirements: [{ name: 'mandatory', rule: 'all', from: 'mandatory' }],
    input_descriptors: descriptors,
  }
}

const A = { alg: ALGS }

describe('format identifiers: OpenID4VP (jwt_vc_json, jwt_vp_json) and PEX (jwt_vc, jwt_vp)', () => {
  const cases: {
    what: string
    top?: Record<string, unknown>
    own?: Record<string, unknown>
    vp: string
    vc: string
  }[] = [
    { what: 'top level jwt_vc_json only', top: { jwt_vc_json: A }, vp: 'jwt_vp_json', vc: 'jwt_vc_json' },
    {
      what: 'top level jwt_vc_json + jwt_vp_json',
      top: { jwt_vc_json: A, jwt_vp_json: A },
      vp: 'jwt_vp_json',
      vc: 'jwt_vc_json',
    },
    { what: 'descriptor jwt_vc_json only', own: { jwt_vc_json: A }, vp: 'jwt_vp_json', vc: 'jwt_vc_json' },
    {
      what: 'descriptor jwt_vc_json, top level jwt_vp_json',
      top: { jwt_vp_json: A },
      own: { jwt_vc_json: A },
      vp: 'jwt_vp_json',
      vc: 'jwt_vc_json',
    },
    { what: 'top level jwt_vc + jwt_vp only', top: { jwt_vc: A, jwt_vp: A }, vp: 'jwt_vp', vc: 'jwt_vc' },
    { what: 'descriptor jwt_vc only', own: { jwt_vc: A }, vp: 'jwt_vp', vc: 'jwt_vc' },
    {
      what: 'both generations named',
      top: { jwt_vc: A, jwt_vc_json: A, jwt_vp: A, jwt_vp_json: A },
      vp: 'jwt_vp_json',
      vc: 'jwt_vc_json',
    },
    { what: 'no format at all', vp: 'jwt_vp_json', vc: 'jwt_vc_json' },
  ]
  for (const { what, top, own, vp, vc } of cases) {
    test(`${what}: the held JWT VC matches, descriptor_map says ${vp} / ${vc}`, async () => {
      const verifier = new FakeVerifier()
      const wallet = await walletWith(verifier)
      const [stored] = wallet.credentials()
      const def = formatDefinition(top, [degreeDescriptor(own)])
      const session = verifier.open({ definition: def })
      const presentation = await wallet.startPresentation(session.link)
      const selection = await presentation.select()
      assert.deepEqual(
        selection.matches.map((m) => [m.id, m.candidates.map((c) => c.id)]),
        [['UniversityDegreeCredential', [stored?.id]]],
      )
      const result = await presentation.respond()
      assert.equal(result.status, 'verified')
      assert.deepEqual(result.presented, [stored?.id])
      const [form] = verifier.posts()
      const posted = read(form as Record<string, string>)
      assert.deepEqual(posted.credentials, [stored?.credential])
      assert.deepEqual(withoutId(posted.submission), {
        definition_id: def.id,
        descriptor_map: [
          {
            id: 'UniversityDegreeCredential',
            format: vp,
            path: '$',
            path_nested: {
              id: 'UniversityDegreeCredential',
              format: vc,
              path: '$.vp.verifiableCredential[0]',
            },
          },
        ],
      })
      assert.deepEqual(result.presentationSubmission, posted.submission)
      // the verifier's definition is what the session shows, untouched
      assert.deepEqual(presentation.presentationDefinition, def)
    })
  }

  test('the format is still evaluated: a descriptor naming no JWT VC format matches nothing', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    for (const format of [{ ldp_vc: { proof_type: ['Ed25519Signature2018'] } }, { 'vc+sd-jwt': {} }]) {
      const def = formatDefinition(undefined, [degreeDescriptor(format)])
      await assert.rejects(wallet.present(verifier.open({ definition: def }).link), (e: Error) => {
        assert.ok(
          e instanceof NoMatchingCredentialsError,
          `${JSON.stringify(format)}: ${e.name}: ${e.message}`,
        )
        return true
      })
    }
    assert.deepEqual(verifier.posts(), [], 'nothing was posted')
  })

  test('two descriptors in different words each get their own identifiers; the misbehaviours keep them', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier, [
      (did) => credential(did, { type: 'VerifiableId', claims: { familyName: 'Lovelace' } }),
      (did) => credential(did),
    ])
    const def = formatDefinition(undefined, [
      { ...descriptor('VerifiableId'), format: { jwt_vc: A } },
      degreeDescriptor({ jwt_vc_json: A }),
    ])
    const { good, bad } = await goodAndBad(wallet, verifier, ['lying-submission'], { definition: def })
    const formats = (s: PresentationSubmission) =>
      s.descriptor_map.map((d) => [d.id, d.format, d.path_nested?.format])
    const expected = [
      ['VerifiableId', 'jwt_vp', 'jwt_vc'],
      ['UniversityDegreeCredential', 'jwt_vp_json', 'jwt_vc_json'],
    ]
    assert.deepEqual(formats(good.submission), expected)
    assert.deepEqual(formats(bad.submission), expected, 'lying-submission changes the path only')
  })

  test('evaluationDefinition adds the PEX identifiers to a copy; answerFormats and withAnswerFormats', () => {
    const def = formatDefinition({ jwt_vp_json: A, ldp_vp: { proof_type: ['x'] } }, [
      degreeDescriptor({ jwt_vc_json: { alg: ['ES256'] } }),
      { ...descriptor('Old'), format: { jwt_vc: A } },
      { ...descriptor('Both'), format: { jwt_vc: { alg: ['EdDSA'] }, jwt_vc_json: { alg: ['ES256'] } } },
    ])
    const before = structuredClone(def)
    const evaluated = evaluationDefinition(def as never) as unknown as typeof def & {
      format: Record<string, unknown>
      input_descriptors: { format: Record<string, unknown> }[]
    }
    assert.deepEqual(def, before, 'the verifier definition is not changed')
    assert.deepEqual(evaluated.format, { jwt_vp_json: A, ldp_vp: { proof_type: ['x'] }, jwt_vp: A })
    assert.deepEqual(
      evaluated.input_descriptors.map((d) => d.format),
      [
        { jwt_vc_json: { alg: ['ES256'] }, jwt_vc: { alg: ['ES256'] } },
        { jwt_vc: A },
        { jwt_vc: { alg: ['EdDSA'] }, jwt_vc_json: { alg: ['ES256'] } },
      ],
    )
    const formats = answerFormats(def as never)
    assert.deepEqual(Object.fromEntries(formats), {
      UniversityDegreeCredential: { vp: 'jwt_vp_json', vc: 'jwt_vc_json' },
      Old: { vp: 'jwt_vp_json', vc: 'jwt_vc' },
      Both: { vp: 'jwt_vp_json', vc: 'jwt_vc_json' },
    })
    const laidOut: PresentationSubmission = {
      id: 's',
      definition_id: 'd',
      descriptor_map: [
        {
          id: 'Old',
          format: 'jwt_vp',
          path: '$',
          path_nested: { id: 'Old', format: 'jwt_vc', path: '$.vp.verifiableCredential[0]' },
        },
        {
          id: 'Unknown',
          format: 'jwt_vp',
          path: '$',
          path_nested: { id: 'Unknown', format: 'jwt_vc', path: '$.vp.verifiableCredential[1]' },
        },
      ],
    }
    assert.deepEqual(withAnswerFormats(laidOut, formats).descriptor_map, [
      {
        id: 'Old',
        format: 'jwt_vp_json',
        path: '$',
        path_nested: { id: 'Old', format: 'jwt_vc', path: '$.vp.verifiableCredential[0]' },
      },
      laidOut.descriptor_map[1],
    ])
  })
})

describe('a DCQL request (OpenID4VP 1.0 §6)', () => {
  const DCQL = {
    credentials: [
      {
        id: 'degree',
        format: 'jwt_vc_json',
        meta: { type_values: [['VerifiableCredential', 'UniversityDegreeCredential']] },
      },
    ],
  }

  test('is refused with a clear DcqlNotSupportedError (a WalletUsageError); nothing is posted', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    for (const run of [
      (link: string) => wallet.present(link),
      (link: string) => wallet.startPresentation(link),
      (link: string) => wallet.present(link, { misbehave: ['access-denied'] }),
    ]) {
      const session = verifier.open({ payload: { presentation_definition: undefined, dcql_query: DCQL } })
      assert.equal('presentation_definition' in decodeJws(session.jwt).payload, false)
      await assert.rejects(run(session.link), (e: Error) => {
        assert.ok(e instanceof DcqlNotSupportedError, `${e.name}: ${e.message}`)
        assert.ok(e instanceof WalletUsageError)
        assert.match(e.message, /DCQL/)
        assert.match(e.message, /OpenID4VP 1\.0 §6/)
        assert.match(e.message, /answers DCQL in the OpenID4VP 1\.0 form only/)
        assert.match(e.message, /decentralized_identifier:/)
        assert.match(e.message, /Presentation Exchange/)
        assert.doesNotMatch(e.message, /not valid JSON|\[object Object\]/)
        assert.equal(e.clientId, verifier.key.did)
        assert.deepEqual(e.dcqlQuery, DCQL)
        return true
      })
    }
    assert.deepEqual(verifier.posts(), [], 'nothing was posted')
    assert.deepEqual(
      verifier.calls.map((c) => c.method),
      ['GET', 'GET', 'GET'],
      'only the request objects were fetched',
    )
  })

  test('a DCQL query as a JSON string (draft form) is refused the same way', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const session = verifier.open({
      payload: { presentation_definition: undefined, dcql_query: JSON.stringify(DCQL) },
    })
    await assert.rejects(wallet.present(session.link), DcqlNotSupportedError)
    assert.deepEqual(verifier.posts(), [])
  })

  test('dcql_query and presentation_definition together: invalid_request_object, nothing posted', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const session = verifier.open({ payload: { dcql_query: DCQL } })
    await rejectsWith(wallet.present(session.link), {
      step: 'request',
      status: 200,
      error: 'invalid_request_object',
      description: /both dcql_query and presentation_definition/,
    })
    assert.deepEqual(verifier.posts(), [])
  })
})

// --- the correct answer --------------------------------------------------------------------------------------------

describe('the correct answer', () => {
  for (const { keyType, alg } of [
    { keyType: 'Ed25519', alg: 'EdDSA' },
    { keyType: 'P-256', alg: 'ES256' },
    { keyType: 'secp256k1', alg: 'ES256K' },
  ] as const) {
    test(`${keyType}: a JWT VP by the holder with the credentials as issued, posted with the submission and state`, async () => {
      const verifier = new FakeVerifier()
      const wallet = await walletWith(verifier, undefined, keyType)
      const [stored] = wallet.credentials()
      const session = verifier.open()
      const steps: string[] = []
      const result = await wallet.present(session.link, { now: fixedNow, onStep: (s) => steps.push(s) })
      assert.deepEqual(steps, ['request', 'select', 'response'])
      assert.equal(result.status, 'verified')
      assert.equal(result.sessionId, session.id)
      assert.equal(result.clientId, verifier.key.did)
      assert.equal(result.httpStatus, 200)
      assert.deepEqual(result.response, {})
      assert.deepEqual(result.presented, [stored?.id])

      const [form] = verifier.posts()
      assert.deepEqual(form, result.form)
      assert.deepEqual(Object.keys(form ?? {}), ['state', 'presentation_submission', 'vp_token'])
      const posted = read(form as Record<string, string>)
      assert.equal(posted.form.state, session.payload.state)
      assert.equal(posted.form.vp_token, result.vpToken)
      assert.deepEqual(posted.vp.header, { alg, typ: 'JWT', kid: wallet.kid })
      assert.deepEqual(posted.vp.payload, {
        iss: wallet.did,
        aud: verifier.key.did,
        nonce: session.payload.nonce,
        iat: NOW,
        vp: {
          '@context': ['https://www.w3.org/2018/credentials/v1'],
          type: ['VerifiablePresentation'],
          holder: wallet.did,
          verifiableCredential: [stored?.credential],
        },
      })
      assert.ok(verifiesWith(posted.form.vp_token as string, wallet.kid), 'signed by the holder key')
      assert.equal(
        posted.submission.definition_id,
        (session.payload.presentation_definition as { id: string }).id,
      )
      assert.deepEqual(result.presentationSubmission, posted.submission)
      // the only HTTP: the request object and the answer
      assert.deepEqual(
        verifier.calls.map((c) => c.method),
        ['GET', 'POST'],
      )
    })
  }

  test("the form the wallet posts itself is did-auth-siop's payload, byte for byte", async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const result = await wallet.present(verifier.open().link)
    // the correct answer went through createAuthorizationResponse; rebuild it the bypass way
    const submission = JSON.parse(result.form.presentation_submission as string)
    const own = responseForm({ vpToken: result.vpToken as string, submission, state: result.form.state })
    assert.deepEqual(Object.entries(own), Object.entries(result.form))
    assert.deepEqual(libraryForm({ state: 's', presentation_submission: { a: 1 }, vp_token: 't', x: null }), {
      state: 's',
      presentation_submission: '{"a":1}',
      vp_token: 't',
    })
  })

  test('the verifier errors name step response, status, error and description', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    for (const [status, error] of [
      [400, 'invalid_presentation'],
      [400, 'invalid_request'],
      [409, 'session_closed'],
      [410, 'session_expired'],
      [404, 'not_found'],
    ] as const) {
      verifier.respondWith = () => ({
        status,
        body: JSON.stringify({ error, error_description: `because ${error}` }),
      })
      const e = await rejectsWith(wallet.present(verifier.open().link), { step: 'response', status, error })
      assert.equal(e.errorDescription, `because ${error}`)
      assert.equal(e.message, `response: ${status} ${error}: because ${error}`)
    }
    verifier.respondWith = () => ({ status: 200, body: '{"redirect_uri":"https://rp.example/done"}' })
    const result = await wallet.present(verifier.open().link)
    assert.equal(result.redirectUri, 'https://rp.example/done')
  })

  test('an unreachable response_uri is step response, status 0', async () => {
    const verifier = new FakeVerifier()
    const failing: typeof fetch = async (input, init) => {
      if (init?.method === 'POST') throw new TypeError('fetch failed: ECONNREFUSED')
      return verifier.fetch(input, init)
    }
    const wallet = await Wallet.create({ fetch: failing })
    await wallet.accept([credential(wallet.did)], ORIGIN)
    await rejectsWith(wallet.present(verifier.open().link), {
      step: 'response',
      status: 0,
      error: 'unreachable',
      description: /ECONNREFUSED/,
    })
  })
})

// --- misbehaviours ------------------------------------------------------------------------------------------------

describe('presentation misbehaviours change exactly one thing', () => {
  test('vp-wrong-nonce: the VP nonce only', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const { good, bad, session } = await goodAndBad(wallet, verifier, ['vp-wrong-nonce'])
    assert.deepEqual(changedKeys(good.vp.payload, bad.vp.payload), ['nonce'])
    assert.notEqual(bad.vp.payload.nonce, session.payload.nonce)
    assert.deepEqual(good.vp.header, bad.vp.header)
    assert.deepEqual(withoutId(good.submission), withoutId(bad.submission))
    assert.equal(good.form.state, bad.form.state)
    assert.ok(verifiesWith(bad.form.vp_token as string, wallet.kid))
  })

  test('vp-wrong-aud: the VP aud only', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const { good, bad } = await goodAndBad(wallet, verifier, ['vp-wrong-aud'])
    assert.deepEqual(changedKeys(good.vp.payload, bad.vp.payload), ['aud'])
    assert.equal(bad.vp.payload.aud, WRONG_AUDIENCE)
    assert.deepEqual(good.vp.header, bad.vp.header)
    assert.deepEqual(withoutId(good.submission), withoutId(bad.submission))
    assert.ok(verifiesWith(bad.form.vp_token as string, wallet.kid))
  })

  test('vp-foreign-key: a fresh did:key presents (kid, iss, vp.holder), the credentials stay bound to the holder', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const { good, bad } = await goodAndBad(wallet, verifier, ['vp-foreign-key'])
    const foreign = bad.vp.payload.iss as string
    assert.notEqual(foreign, wallet.did)
    assert.ok(foreign.startsWith('did:key:z6Mk'), 'same algorithm as the holder')
    assert.deepEqual(changedKeys(good.vp.header, bad.vp.header), ['kid'])
    assert.equal(bad.vp.header.kid, `${foreign}#${foreign.slice('did:key:'.length)}`)
    assert.deepEqual(changedKeys(good.vp.payload, bad.vp.payload), ['iss', 'vp'])
    const { holder: goodHolder, ...goodVp } = good.vp.payload.vp as Record<string, unknown>
    const { holder: badHolder, ...badVp } = bad.vp.payload.vp as Record<string, unknown>
    assert.deepEqual(goodVp, badVp)
    assert.deepEqual([goodHolder, badHolder], [wallet.did, foreign])
    assert.ok(verifiesWith(bad.form.vp_token as string, bad.vp.header.kid as string), 'a valid signature')
    assert.equal(decodeJws(bad.credentials[0] as string).payload.sub, wallet.did)
    assert.deepEqual(withoutId(good.submission), withoutId(bad.submission))
  })

  test('tampered-credential: one claim of the credential payload, its header and signature kept', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const { good, bad } = await goodAndBad(wallet, verifier, ['tampered-credential'])
    const [gh, gp, gs] = (good.credentials[0] as string).split('.')
    const [bh, bp, bs] = (bad.credentials[0] as string).split('.')
    assert.equal(bh, gh)
    assert.equal(bs, gs)
    assert.notEqual(bp, gp)
    const before = decodeJws(good.credentials[0] as string).payload
    const after = decodeJws(bad.credentials[0] as string).payload
    assert.deepEqual(changedKeys(before, after), ['vc'])
    const subjectBefore = (before.vc as { credentialSubject: Record<string, unknown> }).credentialSubject
    const subjectAfter = (after.vc as { credentialSubject: Record<string, unknown> }).credentialSubject
    assert.deepEqual(subjectAfter, {
      ...subjectBefore,
      degree: { type: 'BachelorDegree (tampered)', name: 'Bachelor of Science' },
    })
    assert.equal(
      verifiesWith(bad.credentials[0] as string, ISSUER.kid),
      false,
      'the signature no longer fits',
    )
    // the VP around it is a correct one
    assert.deepEqual(changedKeys(good.vp.payload, bad.vp.payload), ['vp'])
    assert.ok(verifiesWith(bad.form.vp_token as string, wallet.kid))
    assert.deepEqual(withoutId(good.submission), withoutId(bad.submission))
    const t = tamperCredential(good.credentials[0] as string)
    assert.deepEqual(
      [t.path, t.from, t.to],
      ['$.vc.credentialSubject.degree.type', 'BachelorDegree', 'BachelorDegree (tampered)'],
    )
  })

  test('untrusted-issuer: the same credential, properly signed by a fresh did:key issuer', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const { good, bad } = await goodAndBad(wallet, verifier, ['untrusted-issuer'])
    const before = decodeJws(good.credentials[0] as string)
    const after = decodeJws(bad.credentials[0] as string)
    const issuer = after.payload.iss as string
    assert.notEqual(issuer, ISSUER.did)
    assert.deepEqual(changedKeys(before.header, after.header), ['kid'])
    assert.equal(after.header.kid, `${issuer}#${issuer.slice('did:key:'.length)}`)
    assert.deepEqual(changedKeys(before.payload, after.payload), ['iss', 'vc'])
    assert.deepEqual(after.payload.vc, { ...(before.payload.vc as object), issuer })
    assert.equal(after.payload.sub, wallet.did)
    assert.ok(verifiesWith(bad.credentials[0] as string, after.header.kid as string), 'signed properly')
    assert.deepEqual(changedKeys(good.vp.payload, bad.vp.payload), ['vp'])
    assert.ok(verifiesWith(bad.form.vp_token as string, wallet.kid))
    assert.deepEqual(withoutId(good.submission), withoutId(bad.submission))
  })

  test('revoked-credential: a held candidate its status list says is revoked, instead of the newest', async () => {
    const verifier = new FakeVerifier()
    const list = `${STATUS_BASE}/list-1`
    verifier.statusLists.set(list, statusList(list, [7]))
    const wallet = await walletWith(verifier, [
      (did) => credential(did, { status: { list, index: 7 } }),
      (did) => credential(did, { status: { list, index: 8 } }),
    ])
    const [revoked, active] = wallet.credentials()
    const steps: [string, unknown][] = []
    const session = verifier.open()
    const presentation = await wallet.startPresentation(session.link, { now: fixedNow })
    const good = await presentation.respond()
    assert.deepEqual(good.presented, [active?.id], 'a correct answer presents the newest')
    const bad = await presentation.respond({
      misbehave: ['revoked-credential'],
      onStep: (s, d) => steps.push([s, d]),
    })
    assert.deepEqual(bad.presented, [revoked?.id])
    assert.deepEqual(read(bad.form).credentials, [revoked?.credential])
    assert.deepEqual(changedKeys(read(good.form).vp.payload, read(bad.form).vp.payload), ['vp'])
    assert.deepEqual(withoutId(read(good.form).submission), withoutId(read(bad.form).submission))
    assert.deepEqual(steps[0], ['status', { lists: 1 }])
    assert.deepEqual(
      verifier.calls.map((c) => c.method + (c.url === list ? ' list' : '')),
      ['GET', 'POST', 'GET list', 'POST'],
      'the status list only for the misbehaviour, once',
    )
    // none revoked: a WalletUsageError, nothing posted
    verifier.statusLists.set(list, statusList(list, []))
    const clean = await walletWith(verifier, [(did) => credential(did, { status: { list, index: 7 } })])
    const before = verifier.posts().length
    await assert.rejects(
      clean.present(verifier.open().link, { misbehave: ['revoked-credential'] }),
      (e: Error) =>
        e instanceof WalletUsageError && /none of the 1 held credentials .* is revoked/.test(e.message),
    )
    assert.equal(verifier.posts().length, before)
  })

  test('lying-submission: descriptor_map[0] points at the wrong credential, nothing else changes', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier, [
      (did) => credential(did),
      (did) => credential(did, { type: 'VerifiableId', claims: { familyName: 'Lovelace' } }),
    ])
    const def = () => definition([descriptor('UniversityDegreeCredential'), descriptor('VerifiableId')])
    const two = await goodAndBad(wallet, verifier, ['lying-submission'], { definition: def() })
    assert.equal(two.good.submission.descriptor_map[0]?.path_nested?.path, '$.vp.verifiableCredential[0]')
    const expected = structuredClone(two.good.submission)
    ;(expected.descriptor_map[0]?.path_nested as { path: string }).path = '$.vp.verifiableCredential[1]'
    assert.deepEqual(withoutId(two.bad.submission), withoutId(expected))
    assert.deepEqual(changedKeys(two.good.vp.payload, two.bad.vp.payload), [])
    assert.equal(
      two.good.form.vp_token,
      two.bad.form.vp_token,
      'the same VP (EdDSA signatures are deterministic)',
    )
    // a single credential: index 1, which is not in the VP
    const one = await goodAndBad(await walletWith(verifier), verifier, ['lying-submission'])
    assert.equal(one.bad.submission.descriptor_map[0]?.path_nested?.path, '$.vp.verifiableCredential[1]')
    assert.deepEqual(
      lyingSubmission(
        {
          id: 'x',
          definition_id: 'd',
          descriptor_map: [{ id: 'a', format: 'jwt_vp', path: '$.vp.verifiableCredential[2]' }],
        },
        3,
      ).descriptor_map[0]?.path,
      '$.vp.verifiableCredential[0]',
    )
  })

  test('access-denied: error=access_denied with state, no VP; works without credentials', async () => {
    const verifier = new FakeVerifier()
    const wallet = await Wallet.create({ fetch: verifier.fetch })
    const session = verifier.open()
    const result = await wallet.present(session.link, { misbehave: ['access-denied'] })
    assert.equal(result.status, 'rejected-by-wallet')
    assert.deepEqual(result.presented, [])
    assert.equal(result.vpToken, undefined)
    assert.deepEqual(verifier.posts(), [
      { error: 'access_denied', error_description: ACCESS_DENIED_DESCRIPTION, state: session.payload.state },
    ])
    const custom = await wallet.present(verifier.open().link, {
      misbehave: ['access-denied'],
      errorDescription: 'not today',
    })
    assert.equal(custom.form.error_description, 'not today')
  })

  test("vp-replayed: the previous accepted VP, under this session's submission and state", async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    const second = verifier.open()
    await assert.rejects(
      wallet.present(second.link, { misbehave: ['vp-replayed'] }),
      (e: Error) => e instanceof WalletUsageError && /present once first/.test(e.message),
    )
    const first = await wallet.present(verifier.open().link)
    // a misbehaving answer is not what gets replayed
    await wallet.present(verifier.open().link, { misbehave: ['vp-wrong-nonce'] })
    const replay = await wallet.present(second.link, { misbehave: ['vp-replayed'] })
    const posted = read(replay.form)
    assert.equal(posted.form.vp_token, first.vpToken)
    assert.equal(posted.form.state, second.payload.state)
    assert.equal(
      posted.submission.definition_id,
      (second.payload.presentation_definition as { id: string }).id,
    )
    assert.deepEqual(
      posted.submission.descriptor_map,
      (first.presentationSubmission as PresentationSubmission).descriptor_map,
    )
    assert.deepEqual(replay.presented, first.presented)
    // a correct answer to the same session differs in the vp_token only
    const fresh = read((await (await wallet.startPresentation(second.link)).respond()).form)
    assert.notEqual(fresh.form.vp_token, posted.form.vp_token)
    assert.deepEqual(withoutId(fresh.submission), withoutId(posted.submission))
    assert.equal(fresh.form.state, posted.form.state)
    assert.deepEqual(Object.keys(fresh.form), Object.keys(posted.form))
  })

  test('access-denied and vp-replayed combine with expired-session only', async () => {
    const verifier = new FakeVerifier()
    const wallet = await walletWith(verifier)
    for (const misbehave of [
      ['access-denied', 'vp-wrong-nonce'],
      ['vp-replayed', 'tampered-credential'],
      ['access-denied', 'vp-replayed'],
    ] as PresentationMisbehaviour[][]) {
      await assert.rejects(
        wallet.present(verifier.open().link, { misbehave }),
        (e: Error) => e instanceof WalletUsageError && /combine it with expired-session only/.test(e.message),
      )
    }
    const ok = await wallet.present(verifier.open().link, { misbehave: ['access-denied', 'expired-session'] })
    assert.equal(ok.status, 'rejected-by-wallet')
  })
})

// --- CLI arguments ------------------------------------------------------------------------------------------------

/**
 * `vc-harness wallet …` in this process: what it printed to stdout and the error it threw. Usage errors are
 * ERR_PARSE_ARGS_* errors, which main() turns into exit code 2 (proven with a child process once, in
 * test/service/cluster.test.ts); four children here would only pay four start-ups of the wallet stack.
 */
const cli = walletCli

describe('vc-harness wallet present: arguments (no network)', () => {
  test('bad arguments are usage errors (exit code 2); help lists present', async () => {
    const link = 'openid-vp://?request_uri=https%3A%2F%2Fverifier.invalid%2Fr'
    const usage = /^ERR_PARSE_ARGS/
    const issuanceMisbehaviour = await cli(['present', link, '--misbehave', 'wrong-nonce'])
    assert.match(issuanceMisbehaviour.error?.code ?? '', usage, String(issuanceMisbehaviour.error))
    assert.match(issuanceMisbehaviour.error?.message ?? '', /an issuance misbehaviour: use it with receive/)
    const noLink = await cli(['present'])
    assert.match(noLink.error?.code ?? '', usage)
    assert.match(noLink.error?.message ?? '', /present needs exactly one argument/)
    const unknown = await cli(['present', link, '--misbehave', 'nonsense'])
    assert.match(unknown.error?.code ?? '', usage)
    assert.match(unknown.error?.message ?? '', /not a presentation misbehaviour; known: vp-wrong-nonce/)
    const help = await cli(['--help'])
    assert.equal(help.error, undefined)
    assert.match(help.out, /present <link>/)
    assert.equal(issuanceMisbehaviour.out, '')
  })
})
