import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { decodeList, getStatus } from '../../../src/shared/bitstring.ts'
import { JWS_ALGS, resolveDidKey } from '../../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../../src/shared/jws.ts'
import { auth, DEMO, makeApp, OTHER, problemOf, type TestApp, tokenFor } from '../../helpers.ts'
import {
  changeStatus,
  DEGREE,
  grantFor,
  jwtRequest,
  newHolder,
  oid4vciConfig,
  proofJwt,
  readProcess,
  rejectProcess,
  submit,
  WIDE_APP,
  walletAsked,
  walletPost,
} from '../../oid4vci-helpers.ts'

// The relying-party side of issuance (docs/api.md): attended issuance, submission rules, reject, status lists.

const V1 = 'https://www.w3.org/2018/credentials/v1'
const vcTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

type Credential = Record<string, unknown> & {
  id: string
  type: string[]
  issuer: string
  credentialSubject: Record<string, unknown>
  credentialStatus: Record<string, unknown> & { statusListCredential: string; statusListIndex: string }
  proof: { type: string; jwt: string }
}
type ProcessBody = {
  id: string
  status: string
  group: string
  validator: Record<string, unknown> | null
  data?: Credential[]
}

/** Asserts a 400 invalid_credential naming exactly `fields` (in any order). */
function expectInvalid(response: Awaited<ReturnType<typeof submit>>, fields: string[]) {
  assert.equal(response.statusCode, 400, response.body)
  const problem = problemOf(response)
  assert.equal(problem.code, 'invalid_credential')
  assert.deepEqual(
    (problem.errors ?? []).map((e) => e.field).sort(),
    [...fields].sort(),
    JSON.stringify(problem.errors),
  )
  for (const field of fields.filter((f) => f.includes('/')))
    assert.ok(problem.detail.includes(field), problem.detail)
  return problem
}

/** PENDING, no submitted content: a later valid submission issues at once. */
async function assertStillOpen(t: TestApp, w: Awaited<ReturnType<typeof walletAsked>>) {
  const process = await readProcess(t.app, w.rp, w.processId)
  assert.equal(process.status, 'PENDING')
  assert.equal(process.data, undefined)
  const ok = await submit(t.app, w.rp, w.processId, DEGREE)
  assert.equal(ok.statusCode, 200, `a valid submission still works: ${ok.body}`)
  assert.equal(ok.json()[0].status, 'ISSUED')
}

describe('attended issuance: the administrator works the PENDING queue', () => {
  let t: TestApp
  let admin: string
  before(async () => {
    t = await makeApp(oid4vciConfig())
    admin = await tokenFor(t.app, DEMO.admin)
  })
  after(() => t.close())

  const pending = async () => {
    const response = await t.app.inject({
      url: '/admin/v1/issuanceRequests?status=PENDING',
      headers: auth(admin),
    })
    assert.equal(response.statusCode, 200)
    return response.json<ProcessBody[]>()
  }

  test('list PENDING, read the validator after the wallet asked, submit as administrator → ISSUED', async () => {
    const holder = newHolder()
    const g = await grantFor(t.app, 'degree')
    const before = (await pending()).find((p) => p.id === g.processId)
    assert.ok(before, 'the new process is in the PENDING queue')
    assert.equal(before.validator, null)

    const asked = await walletPost(
      t.app,
      'credential',
      g.accessToken,
      jwtRequest('degree', proofJwt(holder, t.clock, g.cNonce)),
    )
    assert.equal(asked.statusCode, 202)
    const waiting = (await pending()).find((p) => p.id === g.processId)
    const vp = waiting?.validator?.verifiablePresentation as { holder: string; proof: { creator: string }[] }
    assert.equal(vp.holder, holder.did)
    assert.equal(vp.proof[0]?.creator.split('#')[0], holder.did)

    const response = await submit(t.app, admin, g.processId, DEGREE)
    assert.equal(response.statusCode, 200, response.body)
    const body = response.json<ProcessBody[]>()
    assert.ok(Array.isArray(body), 'the answer is an array, as the document shows')
    assert.equal(body.length, 1)
    assert.equal(body[0]?.id, g.processId)
    assert.equal(body[0]?.status, 'ISSUED')
    assert.equal(body[0]?.data?.length, 1)
    assert.equal(body[0]?.data?.[0]?.credentialSubject.id, holder.did)
    assert.ok(!(await pending()).some((p) => p.id === g.processId), 'no longer in the PENDING queue')
    const issued = await t.app.inject({
      url: '/admin/v1/issuanceRequests?status=ISSUED',
      headers: auth(admin),
    })
    assert.ok(issued.json<ProcessBody[]>().some((p) => p.id === g.processId))
  })

  test('who may submit: the linked app, an unlinked app and an administrator; not another template, not another tenant', async () => {
    const linked = await walletAsked(t)
    const viaLinked = await submit(t.app, await tokenFor(t.app, DEMO.app), linked.processId, DEGREE)
    assert.equal(viaLinked.statusCode, 200, viaLinked.body)

    const wide = await walletAsked(t)
    assert.equal(
      (await submit(t.app, await tokenFor(t.app, WIDE_APP), wide.processId, DEGREE)).statusCode,
      200,
    )

    const w = await walletAsked(t)
    const notLinked = await submit(t.app, await tokenFor(t.app, DEMO.verifierApp), w.processId, DEGREE)
    assert.equal(notLinked.statusCode, 403)
    assert.equal(problemOf(notLinked).code, 'process_not_linked')
    const pinApp = await submit(t.app, await tokenFor(t.app, WIDE_APP, 'pin'), w.processId, DEGREE)
    assert.equal(pinApp.statusCode, 403)
    assert.equal(problemOf(pinApp).code, 'process_not_linked')
    for (const key of [OTHER.admin, OTHER.app]) {
      const foreign = await submit(t.app, await tokenFor(t.app, key), w.processId, DEGREE)
      assert.equal(foreign.statusCode, 404)
      assert.equal(problemOf(foreign).code, 'process_not_found')
    }
    await assertStillOpen(t, w)
  })

  test('defaults of rule 1: context, unique urn:uuid ids, tenant issuer DID, issuanceDate, status entry', async () => {
    const w = await walletAsked(t)
    t.clock.advance(1_234)
    const signedAt = t.clock.now()
    const response = await submit(t.app, admin, w.processId, [DEGREE[0], DEGREE[0]])
    assert.equal(response.statusCode, 200, response.body)
    const data = response.json<ProcessBody[]>()[0]?.data ?? []
    assert.equal(data.length, 2)
    const meta = (await t.app.inject({ url: '/oid4vci/demo/.well-known/openid-credential-issuer' })).json()
    for (const credential of data) {
      assert.deepEqual(credential['@context'], [V1])
      assert.match(credential.id, /^urn:uuid:[0-9a-f-]{36}$/)
      assert.deepEqual(credential.type, ['VerifiableCredential', 'UniversityDegreeCredential'])
      assert.match(credential.issuer, /^did:key:z6Mk/, 'EdDSA template: the Ed25519 did:key')
      assert.ok(meta.vc_harness_issuer_dids.includes(credential.issuer))
      assert.equal(credential.issuanceDate, vcTime(signedAt))
      assert.equal(credential.expirationDate, undefined)
      assert.deepEqual(credential.credentialSubject, { ...DEGREE[0]?.credentialSubject, id: w.holder.did })
      const status = credential.credentialStatus
      assert.equal(status.type, 'BitstringStatusListEntry')
      assert.equal(status.statusPurpose, 'message')
      assert.equal(status.statusSize, 2)
      assert.deepEqual(status.statusMessage, [
        { status: '0x0', message: 'active' },
        { status: '0x1', message: 'revoked' },
        { status: '0x2', message: 'suspended' },
      ])
      assert.match(status.statusListIndex, /^\d+$/)
      assert.match(
        status.statusListCredential,
        /^https:\/\/issuer\.example\/oid4vci\/demo\/status\/[0-9a-f-]{36}$/,
      )
      assert.equal(status.id, `${status.statusListCredential}#${status.statusListIndex}`)
      assert.equal(credential.proof.type, 'JwtProof2020')
    }
    assert.notEqual(data[0]?.id, data[1]?.id, 'a fresh id per credential')
    assert.notEqual(data[0]?.credentialStatus.statusListIndex, data[1]?.credentialStatus.statusListIndex)
  })

  test('each credential is a jwt_vc_json JWT signed by its issuer did:key, its vc = the data', async () => {
    const w = await walletAsked(t)
    const response = await submit(t.app, admin, w.processId, DEGREE)
    const [credential] = response.json<ProcessBody[]>()[0]?.data ?? []
    assert.ok(credential)
    const { header, payload } = decodeJws(credential.proof.jwt)
    assert.equal(header.typ, 'JWT')
    assert.equal(header.alg, 'EdDSA')
    const issuerKey = resolveDidKey(String(header.kid))
    assert.equal(issuerKey.did, credential.issuer)
    verifyJws(credential.proof.jwt, issuerKey.publicKey, { algorithms: JWS_ALGS })
    const { proof: _proof, ...withoutProof } = credential
    assert.deepEqual(payload.vc, withoutProof)
    assert.equal(payload.iss, credential.issuer)
    assert.equal(payload.sub, w.holder.did)
    assert.equal(payload.jti, credential.id)
    assert.equal(payload.iat, Math.floor(t.clock.now() / 1000))
    assert.equal(payload.nbf, Math.floor(Date.parse(String(credential.issuanceDate)) / 1000))
    assert.equal(payload.exp, undefined)
  })

  test("the template's signingAlg picks the issuer key: ES256 → did:key:zDn…, ES256K → did:key:zQ3s…", async () => {
    for (const [group, alg, prefix] of [
      ['es256', 'ES256', /^did:key:zDn/],
      ['es256k', 'ES256K', /^did:key:zQ3s/],
    ] as const) {
      const w = await walletAsked(t, group)
      const response = await submit(t.app, admin, w.processId, [
        { type: ['VerifiableCredential', 'EmployeeCredential'], credentialSubject: { employer: 'ACME' } },
      ])
      assert.equal(response.statusCode, 200, response.body)
      const [credential] = response.json<ProcessBody[]>()[0]?.data ?? []
      assert.match(String(credential?.issuer), prefix)
      const { header } = decodeJws(String(credential?.proof.jwt))
      assert.equal(header.alg, alg)
      verifyJws(String(credential?.proof.jwt), resolveDidKey(String(header.kid)).publicKey, {
        algorithms: [alg],
      })
    }
  })

  test('validityDays sets expirationDate and exp; supplied id, issuanceDate, validFrom and extras are kept', async () => {
    const short = await walletAsked(t, 'short')
    const response = await submit(t.app, admin, short.processId, DEGREE)
    const [credential] = response.json<ProcessBody[]>()[0]?.data ?? []
    assert.equal(credential?.expirationDate, vcTime(t.clock.now() + 30 * 86_400_000))
    assert.equal(
      decodeJws(String(credential?.proof.jwt)).payload.exp,
      Math.floor((t.clock.now() + 30 * 86_400_000) / 1000),
    )

    const w = await walletAsked(t)
    const given = {
      '@context': [V1, 'https://www.w3.org/2018/credentials/examples/v1'],
      id: 'urn:example:degree:42',
      type: ['VerifiableCredential', 'UniversityDegreeCredential'],
      issuanceDate: '2026-01-01T00:00:00Z',
      validFrom: '2026-02-01T00:00:00+01:00',
      expirationDate: '2030-01-01T00:00:00Z',
      name: 'Degree',
      evidence: [{ type: ['DocumentVerification'], document: 'passport' }],
      credentialSubject: { id: w.holder.did, degree: { name: 'BSc' } },
    }
    const kept = await submit(t.app, admin, w.processId, [given])
    assert.equal(kept.statusCode, 200, kept.body)
    const [c] = kept.json<ProcessBody[]>()[0]?.data ?? []
    for (const field of [
      '@context',
      'id',
      'issuanceDate',
      'validFrom',
      'expirationDate',
      'name',
      'evidence',
    ] as const) {
      assert.deepEqual(c?.[field], given[field], field)
    }
    const payload = decodeJws(String(c?.proof.jwt)).payload
    assert.equal(payload.nbf, Date.parse('2026-02-01T00:00:00+01:00') / 1000, 'nbf from validFrom')
    assert.equal(payload.exp, Date.parse('2030-01-01T00:00:00Z') / 1000)
  })

  test('credentialSchema: type becomes [VerifiableCredential, VerifiableAttestation|VerifiableID, …, credentialType]', async () => {
    const schema = { id: 'https://schemas.example/degree.json', type: 'FullJsonSchemaValidator2021' }
    const w = await walletAsked(t)
    const noType = await submit(t.app, admin, w.processId, [
      { credentialSchema: schema, credentialSubject: { degree: 'BSc' } },
    ])
    assert.equal(noType.statusCode, 200, noType.body)
    assert.deepEqual(noType.json<ProcessBody[]>()[0]?.data?.[0]?.type, [
      'VerifiableCredential',
      'VerifiableAttestation',
      'UniversityDegreeCredential',
    ])
    const middle = await walletAsked(t)
    const withMiddle = await submit(t.app, admin, middle.processId, [
      {
        type: ['VerifiableCredential', 'Diploma'],
        credentialSchema: [schema],
        credentialSubject: { degree: 'BSc' },
      },
    ])
    assert.deepEqual(withMiddle.json<ProcessBody[]>()[0]?.data?.[0]?.type, [
      'VerifiableCredential',
      'VerifiableAttestation',
      'Diploma',
      'UniversityDegreeCredential',
    ])
    const id = await walletAsked(t, 'vid')
    const identity = await submit(t.app, admin, id.processId, [
      { credentialSchema: schema, credentialSubject: { familyName: 'Doe' } },
    ])
    assert.deepEqual(identity.json<ProcessBody[]>()[0]?.data?.[0]?.type, [
      'VerifiableCredential',
      'VerifiableID',
      'VerifiableId',
    ])
  })

  test('a second submission → 409 already_submitted; after ISSUED → 409', async () => {
    const g = await grantFor(t.app, 'degree')
    assert.equal((await submit(t.app, admin, g.processId, DEGREE)).statusCode, 200)
    const again = await submit(t.app, admin, g.processId, DEGREE)
    assert.equal(again.statusCode, 409)
    assert.equal(problemOf(again).code, 'already_submitted')
    const issued = await walletAsked(t)
    assert.equal((await submit(t.app, admin, issued.processId, DEGREE)).statusCode, 200)
    const late = await submit(t.app, admin, issued.processId, DEGREE)
    assert.equal(late.statusCode, 409)
    assert.match(problemOf(late).code, /^(already_submitted|process_not_pending)$/)
  })
})

describe('submission validation (400 invalid_credential, nothing stored)', () => {
  let t: TestApp
  let admin: string
  before(async () => {
    t = await makeApp(oid4vciConfig())
    admin = await tokenFor(t.app, DEMO.admin)
  })
  after(() => t.close())

  const subject = { degree: 'BSc' }
  const type = ['VerifiableCredential', 'UniversityDegreeCredential']
  const cases: [string, unknown[], string[]][] = [
    ['no credentialSubject and no type', [{}], ['body/0/credentialSubject', 'body/0/type']],
    ['credentialSubject not an object', [{ type, credentialSubject: 'me' }], ['body/0/credentialSubject']],
    [
      'credentialSubject with only an id',
      [{ type, credentialSubject: { id: 'did:key:z6Mk' } }],
      ['body/0/credentialSubject'],
    ],
    [
      'credentialSubject.id not a string',
      [{ type, credentialSubject: { id: 5, degree: 'x' } }],
      ['body/0/credentialSubject/id'],
    ],
    [
      'credentialStatus supplied',
      [{ type, credentialSubject: subject, credentialStatus: { id: 'x' } }],
      ['body/0/credentialStatus'],
    ],
    ['type missing without credentialSchema', [{ credentialSubject: subject }], ['body/0/type']],
    [
      'type not ending with the template type',
      [{ type: ['VerifiableCredential', 'Other'], credentialSubject: subject }],
      ['body/0/type'],
    ],
    [
      'type not starting with VerifiableCredential',
      [{ type: ['UniversityDegreeCredential'], credentialSubject: subject }],
      ['body/0/type'],
    ],
    [
      'type not an array of strings',
      [{ type: 'VerifiableCredential', credentialSubject: subject }],
      ['body/0/type'],
    ],
    [
      '@context not starting with v1',
      [{ '@context': ['https://www.w3.org/ns/credentials/v2'], type, credentialSubject: subject }],
      ['body/0/@context'],
    ],
    ['id not a URI', [{ id: 'not a uri', type, credentialSubject: subject }], ['body/0/id']],
    [
      'issuanceDate without a zone',
      [{ issuanceDate: '2026-01-01T00:00:00', type, credentialSubject: subject }],
      ['body/0/issuanceDate'],
    ],
    [
      'expirationDate not a date',
      [{ expirationDate: 'tomorrow', type, credentialSubject: subject }],
      ['body/0/expirationDate'],
    ],
    ['an unknown field', [{ type, credentialSubject: subject, colour: 'red' }], ['body/0/colour']],
    [
      'a bad credentialSchema',
      [{ type, credentialSubject: subject, credentialSchema: { type: 'X' } }],
      ['body/0/credentialSchema'],
    ],
    ['the second item bad', [{ type, credentialSubject: subject }, { type }], ['body/1/credentialSubject']],
    ['a non-object item', [{ type, credentialSubject: subject }, 'x'], ['body/1']],
    [
      'duplicate ids',
      [
        { id: 'urn:x:1', type, credentialSubject: subject },
        { id: 'urn:x:1', type, credentialSubject: subject },
      ],
      ['body'],
    ],
    ['an empty array', [], ['body']],
    ['21 credentials', Array.from({ length: 21 }, () => ({ type, credentialSubject: subject })), ['body']],
  ]

  for (const [name, body, fields] of cases) {
    test(`${name} → 400 naming ${fields.join(', ')}; the process is unchanged`, async () => {
      const w = await walletAsked(t)
      expectInvalid(await submit(t.app, admin, w.processId, body), fields)
      await assertStillOpen(t, w)
    })
  }

  test('a body that is not an array → 400, nothing stored', async () => {
    const w = await walletAsked(t)
    const response = await submit(t.app, admin, w.processId, { type, credentialSubject: subject })
    assert.equal(response.statusCode, 400)
    assert.match(problemOf(response).code, /^(validation_failed|invalid_credential)$/)
    await assertStillOpen(t, w)
  })

  test('the same rules apply before the wallet has asked: refused content is not kept', async () => {
    const g = await grantFor(t.app, 'degree')
    expectInvalid(await submit(t.app, admin, g.processId, [{ type }]), ['body/0/credentialSubject'])
    const ok = await submit(t.app, admin, g.processId, DEGREE)
    assert.equal(ok.statusCode, 200, 'not already_submitted: the refused content was not stored')
    assert.equal(ok.json()[0].status, 'PENDING')
  })

  test('credentialSubject.id of another DID than the proved holder → 400 naming body/0/credentialSubject/id', async () => {
    const w = await walletAsked(t)
    const response = await submit(t.app, admin, w.processId, [
      { type, credentialSubject: { id: newHolder().did, degree: 'BSc' } },
    ])
    expectInvalid(response, ['body/0/credentialSubject/id'])
    await assertStillOpen(t, w)
  })

  test('credentialSubject.id equal to the proved holder is accepted', async () => {
    const w = await walletAsked(t)
    const response = await submit(t.app, admin, w.processId, [
      { type, credentialSubject: { id: w.holder.did, degree: 'BSc' } },
    ])
    assert.equal(response.statusCode, 200, response.body)
  })

  test("an issuer other than the template's issuer DID → 400 naming body/0/issuer (wallet already asked)", async () => {
    const w = await walletAsked(t)
    const response = await submit(t.app, admin, w.processId, [
      {
        type,
        issuer: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
        credentialSubject: subject,
      },
    ])
    expectInvalid(response, ['body/0/issuer'])
    await assertStillOpen(t, w)
  })

  test("an issuer other than the template's issuer DID → 400 also before the wallet asked", async () => {
    const g = await grantFor(t.app, 'degree')
    const response = await submit(t.app, admin, g.processId, [
      {
        type,
        issuer: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
        credentialSubject: subject,
      },
    ])
    expectInvalid(response, ['body/0/issuer'])
  })

  test("the tenant's own issuer DID (string, or an object whose other members are kept) is accepted", async () => {
    const first = await walletAsked(t)
    const issued = (await submit(t.app, admin, first.processId, DEGREE)).json<ProcessBody[]>()[0]?.data?.[0]
    const did = String(issued?.issuer)
    for (const issuer of [did, { id: did, name: 'Demo University' }]) {
      const w = await walletAsked(t)
      const response = await submit(t.app, admin, w.processId, [{ type, issuer, credentialSubject: subject }])
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json<ProcessBody[]>()[0]?.data?.[0]?.issuer, issuer)
    }
  })

  test('content with a credentialSubject.id kept before the wallet asked, then another holder proves: no 500', async () => {
    const g = await grantFor(t.app, 'degree')
    const planned = newHolder()
    const stored = await submit(t.app, admin, g.processId, [
      { type, credentialSubject: { id: planned.did, degree: 'BSc' } },
    ])
    assert.equal(stored.statusCode, 200, stored.body)
    const someoneElse = newHolder()
    const response = await walletPost(
      t.app,
      'credential',
      g.accessToken,
      jwtRequest('degree', proofJwt(someoneElse, t.clock, g.cNonce)),
    )
    assert.ok(
      response.statusCode < 500,
      `the wallet gets a 4xx OAuth error, not ${response.statusCode} ${response.body}`,
    )
    assert.equal(response.headers['cache-control'], 'no-store')
  })

  test('a refused submission leaves no trace: its supplied id can be issued afterwards', async () => {
    const w = await walletAsked(t)
    const id = 'urn:example:refused-then-issued'
    const refused = await submit(t.app, admin, w.processId, [
      { id, type, credentialSubject: { id: newHolder().did, degree: 'BSc' } },
    ])
    assert.equal(refused.statusCode, 400)
    assert.equal(problemOf(refused).code, 'invalid_credential')
    const ok = await submit(t.app, admin, w.processId, [{ id, type, credentialSubject: subject }])
    assert.equal(ok.statusCode, 200, ok.body)
    assert.equal(ok.json()[0].data[0].id, id)
  })

  test('a supplied id that was already issued → 409 credential_id_conflict, the process unchanged', async () => {
    const first = await walletAsked(t)
    const credential = { id: 'urn:example:unique-1', type, credentialSubject: subject }
    assert.equal((await submit(t.app, admin, first.processId, [credential])).statusCode, 200)
    const w = await walletAsked(t)
    const response = await submit(t.app, admin, w.processId, [credential])
    assert.equal(response.statusCode, 409)
    assert.equal(problemOf(response).code, 'credential_id_conflict')
    await assertStillOpen(t, w)
  })

  test('a supplied id already issued, submitted before the wallet asked → 409 at submission', async () => {
    const first = await walletAsked(t)
    const credential = { id: 'urn:example:unique-2', type, credentialSubject: subject }
    assert.equal((await submit(t.app, admin, first.processId, [credential])).statusCode, 200)
    const g = await grantFor(t.app, 'degree')
    const response = await submit(t.app, admin, g.processId, [credential])
    assert.equal(response.statusCode, 409, response.body)
    assert.equal(problemOf(response).code, 'credential_id_conflict')
  })
})

describe('a submission racing the wallet request', () => {
  let t: TestApp
  before(async () => {
    t = await makeApp(oid4vciConfig())
  })
  after(() => t.close())

  test('the wallet binds between the submission reading the grant and storing: the process still issues', async () => {
    const admin = await tokenFor(t.app, DEMO.admin)
    const g = await grantFor(t.app, 'degree')
    const holder = newHolder()
    // Deterministic interleaving: the wallet's request runs to completion right after the relying party's
    // submission has read the grant (what concurrent HTTP requests can do at any time).
    const grants = t.app.services.store.grants
    const original = grants.withProcess.bind(grants)
    let wallet: Awaited<ReturnType<typeof walletPost>> | undefined
    // The submission reads the process and its grant in one statement (grants.withProcess).
    grants.withProcess = async (key) => {
      const read = await original(key)
      grants.withProcess = original
      wallet = await walletPost(
        t.app,
        'credential',
        g.accessToken,
        jwtRequest('degree', proofJwt(holder, t.clock, g.cNonce)),
      )
      return read
    }
    let submitted: Awaited<ReturnType<typeof submit>>
    try {
      submitted = await submit(t.app, admin, g.processId, DEGREE)
    } finally {
      grants.withProcess = original
    }
    assert.equal(submitted.statusCode, 200, submitted.body)
    assert.equal(wallet?.statusCode, 202, wallet?.body)
    const process = await readProcess(t.app, g.rp, g.processId)
    assert.equal(
      process.status,
      'ISSUED',
      'content submitted and a holder bound: nothing is left to wait for (else the wallet polls issuance_pending forever and a new submission is 409 already_submitted)',
    )
    const deferred = await walletPost(t.app, 'deferred_credential', g.accessToken, {
      transaction_id: wallet?.json().transaction_id,
    })
    assert.equal(deferred.statusCode, 200, deferred.body)
  })
})

describe('reject', () => {
  let t: TestApp
  let admin: string
  before(async () => {
    t = await makeApp(oid4vciConfig())
    admin = await tokenFor(t.app, DEMO.admin)
  })
  after(() => t.close())

  test('PENDING → REJECTED with the reason; again → 409 process_not_pending; submit after → 409', async () => {
    const w = await walletAsked(t)
    const response = await rejectProcess(t.app, admin, w.processId, 'document expired')
    assert.equal(response.statusCode, 200, response.body)
    const body = response.json<ProcessBody>()
    assert.ok(!Array.isArray(body), 'reject answers the process itself')
    assert.equal(body.status, 'REJECTED')
    assert.equal(body.id, w.processId)
    assert.equal(body.data, undefined)
    const again = await rejectProcess(t.app, admin, w.processId, 'twice')
    assert.equal(again.statusCode, 409)
    assert.equal(problemOf(again).code, 'process_not_pending')
    const late = await submit(t.app, admin, w.processId, DEGREE)
    assert.equal(late.statusCode, 409)
    assert.equal(problemOf(late).code, 'process_not_pending')
    const listed = await t.app.inject({
      url: '/admin/v1/issuanceRequests?status=REJECTED',
      headers: auth(admin),
    })
    assert.ok(listed.json<ProcessBody[]>().some((p) => p.id === w.processId))
  })

  test('who may reject: the linked app, an administrator; not another template (403), not another tenant (404)', async () => {
    const a = await grantFor(t.app, 'degree')
    const viaApp = await rejectProcess(t.app, await tokenFor(t.app, DEMO.app), a.processId, 'by the app')
    assert.equal(viaApp.statusCode, 200)
    const b = await grantFor(t.app, 'degree')
    const notLinked = await rejectProcess(t.app, await tokenFor(t.app, DEMO.verifierApp), b.processId, 'x')
    assert.equal(notLinked.statusCode, 403)
    assert.equal(problemOf(notLinked).code, 'process_not_linked')
    const foreign = await rejectProcess(t.app, await tokenFor(t.app, OTHER.admin), b.processId, 'x')
    assert.equal(foreign.statusCode, 404)
    assert.equal(problemOf(foreign).code, 'process_not_found')
    assert.equal((await readProcess(t.app, b.rp, b.processId)).status, 'PENDING')
  })

  test('reject after content was submitted: the wallet is denied; an unknown body field → 400', async () => {
    const g = await grantFor(t.app, 'degree')
    assert.equal((await submit(t.app, admin, g.processId, DEGREE)).statusCode, 200)
    const bad = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/issuanceRequests/${g.processId}/reject`,
      headers: auth(admin),
      payload: { reason: 'x', colour: 'red' },
    })
    assert.equal(bad.statusCode, 400)
    assert.equal(problemOf(bad).errors?.[0]?.field, 'body/colour')
    assert.equal((await rejectProcess(t.app, admin, g.processId, 'fraud suspected')).statusCode, 200)
    const wallet = await walletPost(
      t.app,
      'credential',
      g.accessToken,
      jwtRequest('degree', proofJwt(newHolder(), t.clock, g.cNonce)),
    )
    assert.equal(wallet.statusCode, 400)
    assert.equal(wallet.json().error, 'credential_request_denied')
    assert.match(wallet.json().error_description, /fraud suspected/)
  })

  test('the reason is optional: a reject without a body → 200 REJECTED', async () => {
    const empty = await grantFor(t.app, 'degree')
    const withoutBody = await rejectProcess(t.app, admin, empty.processId, undefined)
    assert.equal(withoutBody.statusCode, 200, `POST …/reject without a body: ${withoutBody.body}`)
    assert.equal(withoutBody.json().status, 'REJECTED')
    const bare = await grantFor(t.app, 'degree')
    const noBody = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/issuanceRequests/${bare.processId}/reject`,
      headers: { ...auth(admin), 'content-type': 'application/json' },
    })
    assert.equal(noBody.statusCode, 200, `Content-Type: application/json, no body: ${noBody.body}`)
  })

  test('{} (no reason) rejects; the wallet is denied without a reason', async () => {
    const g = await grantFor(t.app, 'degree')
    const response = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/issuanceRequests/${g.processId}/reject`,
      headers: auth(admin),
      payload: {},
    })
    assert.equal(response.statusCode, 200, response.body)
    const wallet = await walletPost(
      t.app,
      'credential',
      g.accessToken,
      jwtRequest('degree', proofJwt(newHolder(), t.clock, g.cNonce)),
    )
    assert.equal(wallet.json().error, 'credential_request_denied')
  })

  test('an ISSUED process cannot be rejected (409)', async () => {
    const w = await walletAsked(t)
    assert.equal((await submit(t.app, admin, w.processId, DEGREE)).statusCode, 200)
    const response = await rejectProcess(t.app, admin, w.processId, 'too late')
    assert.equal(response.statusCode, 409)
    assert.equal(problemOf(response).code, 'process_not_pending')
  })
})

describe('status lists: revocation and suspension', () => {
  let t: TestApp
  let admin: string
  before(async () => {
    t = await makeApp(oid4vciConfig())
    admin = await tokenFor(t.app, DEMO.admin)
  })
  after(() => t.close())

  /** A process ISSUED with two credentials. */
  async function issued(group = 'degree') {
    const w = await walletAsked(t, group)
    const content =
      group === 'degree'
        ? [DEGREE[0], DEGREE[0]]
        : [{ type: ['VerifiableCredential', 'EmployeeCredential'], credentialSubject: { employer: 'ACME' } }]
    const response = await submit(t.app, admin, w.processId, content)
    assert.equal(response.statusCode, 200, response.body)
    return { ...w, data: response.json<ProcessBody[]>()[0]?.data ?? [] }
  }

  /** Fetches, verifies and decodes the status list a credential points to. */
  async function statusOf(credential: Credential) {
    const url = new URL(credential.credentialStatus.statusListCredential)
    const response = await t.app.inject({ url: url.pathname })
    assert.equal(response.statusCode, 200, response.body)
    assert.match(String(response.headers['content-type']), /^application\/jwt/)
    assert.equal(response.headers['cache-control'], 'no-cache')
    const jwt = response.body
    const { header, payload } = decodeJws(jwt)
    const key = resolveDidKey(String(header.kid))
    verifyJws(jwt, key.publicKey, { algorithms: JWS_ALGS })
    assert.equal(key.did, credential.issuer, 'signed by the did:key of the credentials pointing to it')
    const vc = payload.vc as {
      type: string[]
      issuer: string
      id: string
      credentialSubject: { statusPurpose: string; statusSize: number; encodedList: string }
    }
    assert.deepEqual(vc.type, ['VerifiableCredential', 'BitstringStatusListCredential'])
    assert.equal(vc.issuer, credential.issuer)
    assert.equal(vc.id, credential.credentialStatus.statusListCredential)
    assert.equal(vc.credentialSubject.statusPurpose, 'message')
    assert.equal(vc.credentialSubject.statusSize, 2)
    const bits = decodeList(vc.credentialSubject.encodedList)
    return { jwt, status: getStatus(bits, Number(credential.credentialStatus.statusListIndex)) }
  }

  const setStatus = (processId: string, body: unknown, token = admin) =>
    changeStatus(t.app, token, processId, body)

  test('a new credential is active (0) in a signed application/jwt list; the list is re-signed only on change', async () => {
    const { data } = await issued()
    const [a, b] = data
    assert.ok(a && b)
    const first = await statusOf(a)
    assert.equal(first.status, 0)
    assert.equal((await statusOf(b)).status, 0)
    t.clock.advance(60_000)
    assert.equal((await statusOf(a)).jwt, first.jwt, 'unchanged list, same JWT')
  })

  test('revoked → 1 for the named credential only; revocation is final (409 status_final)', async () => {
    const { processId, data } = await issued()
    const [a, b] = data
    assert.ok(a && b)
    const before = (await statusOf(a)).jwt
    const response = await setStatus(processId, { status: 'revoked', credentialIds: [a.id] })
    assert.equal(response.statusCode, 200, response.body)
    assert.deepEqual(response.json(), { credentials: [{ id: a.id, status: 'revoked' }] })
    const after = await statusOf(a)
    assert.equal(after.status, 1)
    assert.notEqual(after.jwt, before, 're-signed after the change')
    assert.equal((await statusOf(b)).status, 0)
    for (const status of ['active', 'suspended']) {
      const refused = await setStatus(processId, { status, credentialIds: [a.id] })
      assert.equal(refused.statusCode, 409)
      assert.equal(problemOf(refused).code, 'status_final')
      assert.match(problemOf(refused).detail, /revoked/)
    }
    assert.equal((await statusOf(a)).status, 1)
  })

  test('suspended → 2, then active → 0; without credentialIds all credentials change', async () => {
    const { processId, data } = await issued()
    const response = await setStatus(processId, { status: 'suspended' })
    assert.equal(response.statusCode, 200)
    assert.deepEqual(
      response
        .json()
        .credentials.map((c: { id: string }) => c.id)
        .sort(),
      data.map((c) => c.id).sort(),
    )
    for (const credential of data) assert.equal((await statusOf(credential)).status, 2)
    assert.equal((await setStatus(processId, { status: 'active' })).statusCode, 200)
    for (const credential of data) assert.equal((await statusOf(credential)).status, 0)
  })

  test('an unknown credential id → 404 credential_not_found and no change to the others', async () => {
    const { processId, data } = await issued()
    const [a] = data
    assert.ok(a)
    const response = await setStatus(processId, { status: 'revoked', credentialIds: [a.id, 'urn:uuid:nope'] })
    assert.equal(response.statusCode, 404)
    assert.equal(problemOf(response).code, 'credential_not_found')
    assert.match(problemOf(response).detail, /urn:uuid:nope/)
    assert.equal((await statusOf(a)).status, 0)
    // a credential of another process is unknown here too
    const other = await issued()
    const foreign = await setStatus(processId, { status: 'revoked', credentialIds: [other.data[0]?.id] })
    assert.equal(foreign.statusCode, 404)
    assert.equal(problemOf(foreign).code, 'credential_not_found')
  })

  test('who may change a status; a process not ISSUED → 409; a bad status → 400', async () => {
    const { processId, data } = await issued()
    const viaApp = await setStatus(processId, { status: 'suspended' }, await tokenFor(t.app, DEMO.app))
    assert.equal(viaApp.statusCode, 200, viaApp.body)
    const notLinked = await setStatus(
      processId,
      { status: 'active' },
      await tokenFor(t.app, DEMO.verifierApp),
    )
    assert.equal(notLinked.statusCode, 403)
    assert.equal(problemOf(notLinked).code, 'process_not_linked')
    const foreign = await setStatus(processId, { status: 'active' }, await tokenFor(t.app, OTHER.admin))
    assert.equal(foreign.statusCode, 404)
    assert.equal(problemOf(foreign).code, 'process_not_found')
    const bad = await setStatus(processId, { status: 'deleted' })
    assert.equal(bad.statusCode, 400)
    assert.equal(problemOf(bad).errors?.[0]?.field, 'body/status')
    for (const credential of data) assert.equal((await statusOf(credential)).status, 2, 'still suspended')
    const g = await grantFor(t.app, 'degree')
    const pending = await setStatus(g.processId, { status: 'revoked' })
    assert.equal(pending.statusCode, 409)
    assert.equal(problemOf(pending).code, 'process_not_issued')
  })

  test('lists are per tenant and signing key; another tenant or an unknown id → 404', async () => {
    const ed = await issued()
    const p256 = await issued('es256')
    const edUrl = ed.data[0]?.credentialStatus.statusListCredential ?? ''
    const p256Url = p256.data[0]?.credentialStatus.statusListCredential ?? ''
    assert.notEqual(edUrl, p256Url, 'one list per signing key')
    assert.equal((await statusOf(p256.data[0] as Credential)).status, 0)
    const listId = edUrl.split('/').pop()
    for (const path of [
      `/oid4vci/other/status/${listId}`,
      '/oid4vci/demo/status/00000000-0000-4000-8000-000000000000',
    ]) {
      const response = await t.app.inject({ url: path })
      assert.equal(response.statusCode, 404)
      assert.equal(response.json().error, 'not_found')
      assert.match(response.json().error_description, /no status list/)
    }
  })
})
