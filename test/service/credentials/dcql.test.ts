import assert from 'node:assert/strict'
import type { JsonWebKey } from 'node:crypto'
import { describe, test } from 'node:test'
import { DcqlQuery } from 'dcql'
import { jwtVcJson } from '../../../src/formats/jwt-vc/verify.ts'
import { sdJwtVcCredential } from '../../../src/formats/sd-jwt-vc/verify.ts'
import type { ReadCredential } from '../../../src/formats/types.ts'
import { dcql } from '../../../src/service/credentials/dcql.ts'
import type { QueryCandidate } from '../../../src/service/credentials/query.ts'
import {
  buildDcqlQuery,
  type DcqlQueryInput,
  dcqlQueryProblems,
} from '../../../src/service/verification/dcql-query.ts'
import { resolveDidKey } from '../../../src/shared/did-key.ts'
import { signJws } from '../../../src/shared/jws.ts'
import { issueSdJwtVc, presentSdJwtVc } from '../../../src/shared/sd-jwt.ts'
import { newHolder } from '../../oid4vci-helpers.ts'

// DCQL (OpenID4VP 1.0 Final §6): the dcql_query a template becomes, and the verifier's judgement of a
// vp_token object as the wallet keyed it. Real dc+sd-jwt and jwt_vc_json credentials, read by their formats.

const NOW = Date.parse('2026-11-22T10:15:00.000Z')
const seconds = Math.floor(NOW / 1000)
const issuer = newHolder()
const holder = newHolder()
const policy = { algorithms: ['EdDSA' as const] }
const vctOf = (type: string) => `https://credentials.example/${type}`

/** An SD-JWT VC of `type`, its `claims` disclosable and `plain` always visible, presented disclosing `disclose`. */
async function sdJwt(
  type: string,
  disclose: string[],
  claims: Record<string, unknown> = {},
  plain: Record<string, unknown> = {},
) {
  const subject = { given_name: 'Erika', family_name: 'Mustermann', birthdate: '1984-01-26', ...claims }
  const compact = await issueSdJwtVc(
    {
      iss: issuer.did,
      vct: vctOf(type),
      iat: seconds - 3600,
      cnf: { jwk: holder.publicKey.export({ format: 'jwk' }) as JsonWebKey },
      ...subject,
      ...plain,
    },
    [...Object.keys(subject), ...(claims.address ? ['address.street', 'address.locality'] : [])],
    { alg: 'EdDSA', privateKey: issuer.privateKey, header: { kid: issuer.kid } },
  )
  const presented = await presentSdJwtVc(compact, disclose, {
    alg: 'EdDSA',
    privateKey: holder.privateKey,
    nonce: 'n-1',
    audience: 'x509_san_dns:verifier.example',
    iat: seconds,
  })
  // The disclosures are applied once the issuer's signature verified (issue 30: nothing before trust).
  const credential = sdJwtVcCredential.read(presented, policy)
  const proof = await credential.verifyProof(resolveDidKey)
  assert.ok(proof.ok, proof.ok ? '' : proof.reason)
  return credential
}

function jwtVc(type: string, subject: Record<string, unknown> = { familyName: 'Doe' }) {
  const jwt = signJws(
    { alg: 'EdDSA', typ: 'JWT', kid: issuer.kid },
    {
      iss: issuer.did,
      sub: holder.did,
      nbf: seconds - 60,
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', type],
        credentialSubject: { id: holder.did, ...subject },
      },
    },
    issuer.privateKey,
  )
  return jwtVcJson.read(jwt, policy)
}

/** The vp_token object as candidates: entries in order, each under the key the wallet used. */
const keyed = (...entries: [string, ReadCredential][]): QueryCandidate[] =>
  entries.map(([queryId, credential], index) => ({ index, credential, queryId }))

const sdQuery = (over: Partial<DcqlQueryInput> = {}) =>
  buildDcqlQuery({ credentialTypes: ['Pid'], format: 'dc+sd-jwt', vctValues: (t) => [vctOf(t)], ...over })

describe('buildDcqlQuery', () => {
  test('mandatory types only: one credential query per type, vct_values, no credential_sets', () => {
    const query = sdQuery({ credentialTypes: ['Pid', 'Diploma'] })
    assert.deepEqual(query, {
      credentials: [
        { id: 'Pid', format: 'dc+sd-jwt', meta: { vct_values: [vctOf('Pid')] } },
        { id: 'Diploma', format: 'dc+sd-jwt', meta: { vct_values: [vctOf('Diploma')] } },
      ],
    })
  })

  test('requested fields: top-level claims for dc+sd-jwt, credentialSubject paths for jwt_vc_json', () => {
    const requestedFields = [
      { path: '$.credentialSubject.given_name', optional: false },
      { path: '$.credentialSubject.address.locality', credentialTypes: ['Pid'], optional: false },
    ]
    const sd = sdQuery({ credentialTypes: ['Pid', 'Diploma'], requestedFields })
    assert.deepEqual(
      sd.credentials.map((c) => c.claims),
      [[{ path: ['given_name'] }, { path: ['address', 'locality'] }], [{ path: ['given_name'] }]],
    )
    const w3c = buildDcqlQuery({
      credentialTypes: ['Pid'],
      requestedFields,
      format: 'jwt_vc_json',
      vctValues: () => assert.fail('vct values are for dc+sd-jwt only'),
    })
    assert.deepEqual(w3c, {
      credentials: [
        {
          id: 'Pid',
          format: 'jwt_vc_json',
          meta: { type_values: [['VerifiableCredential', 'Pid']] },
          claims: [
            { path: ['credentialSubject', 'given_name'] },
            { path: ['credentialSubject', 'address', 'locality'] },
          ],
        },
      ],
    })
  })

  test('a claim asked twice is one claims query, required when either asks it so (§6.1)', () => {
    const query = sdQuery({
      requestedFields: [
        { path: '$.credentialSubject.given_name', credentialTypes: ['Pid'], optional: false },
        { path: '$.credentialSubject.given_name', optional: true },
      ],
    })
    assert.deepEqual(query.credentials[0], {
      id: 'Pid',
      format: 'dc+sd-jwt',
      meta: { vct_values: [vctOf('Pid')] },
      claims: [{ path: ['given_name'] }],
    })
  })

  test('optional fields become claim_sets: all claims first, then the required ones', () => {
    const query = sdQuery({
      requestedFields: [
        { path: '$.credentialSubject.given_name', optional: false },
        { path: '$.credentialSubject.birthdate', optional: true },
      ],
    })
    const [pid] = query.credentials
    assert.deepEqual(pid?.claims, [
      { id: 'given_name', path: ['given_name'] },
      { id: 'birthdate', path: ['birthdate'] },
    ])
    assert.deepEqual(pid?.claim_sets, [['given_name', 'birthdate'], ['given_name']])
  })

  test('only optional fields: the fallback claim set asks for vct, which every SD-JWT VC shows', () => {
    const [pid] = sdQuery({
      requestedFields: [{ path: '$.credentialSubject.birthdate', optional: true }],
    }).credentials
    assert.deepEqual(pid?.claims, [
      { id: 'birthdate', path: ['birthdate'] },
      { id: 'vct', path: ['vct'] },
    ])
    assert.deepEqual(pid?.claim_sets, [['birthdate'], ['vct']])
  })

  test('optional groups become credential_sets: each mandatory type a set, each group every pick of min', () => {
    const query = sdQuery({
      optionalGroups: [{ name: 'proof', credentialTypes: ['A', 'B', 'C'], min: 2, purpose: 'Two proofs' }],
    })
    assert.deepEqual(
      query.credentials.map((c) => c.id),
      ['Pid', 'A', 'B', 'C'],
    )
    assert.deepEqual(query.credential_sets, [
      { options: [['Pid']] },
      {
        options: [
          ['A', 'B'],
          ['A', 'C'],
          ['B', 'C'],
        ],
        purpose: 'Two proofs',
      },
    ])
  })

  test('min 0: the group is not required and each type is an option of its own', () => {
    const query = sdQuery({ optionalGroups: [{ name: 'extra', credentialTypes: ['A', 'B'], min: 0 }] })
    assert.deepEqual(query.credential_sets?.[1], { options: [['A'], ['B']], required: false })
  })

  test('a group needing more than 64 options is refused, naming the group', () => {
    const types = ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J']
    const input: DcqlQueryInput = {
      credentialTypes: ['Pid'],
      optionalGroups: [{ name: 'big', credentialTypes: types, min: 5 }],
      format: 'dc+sd-jwt',
      vctValues: (t) => [vctOf(t)],
    }
    const expected =
      'optional group "big" (pick 5 of 10 credential types) needs 252 credential_sets options; the dcql profile cannot express more than 64'
    assert.throws(() => buildDcqlQuery(input), { message: expected })
    assert.deepEqual(dcqlQueryProblems(input), [expected])
    // 8 choose 3 = 56 options: still expressible
    const fits = { ...input, optionalGroups: [{ name: 'big', credentialTypes: types.slice(0, 8), min: 3 }] }
    assert.deepEqual(dcqlQueryProblems(fits), [])
    assert.equal(buildDcqlQuery(fits).credential_sets?.[1]?.options.length, 56)
  })

  test('other problems: min above the group size, a type without vct values', () => {
    assert.deepEqual(
      dcqlQueryProblems({
        credentialTypes: ['Pid'],
        optionalGroups: [{ name: 'few', credentialTypes: ['A'], min: 2 }],
        format: 'dc+sd-jwt',
        vctValues: (t) => (t === 'Pid' ? [] : [vctOf(t)]),
      }),
      [
        'credential type "Pid" has no vct value for dc+sd-jwt',
        'optional group "few": min 2 is more than its 1 credential types',
      ],
    )
  })

  test('every built query is one dcql itself accepts', () => {
    const query = sdQuery({
      credentialTypes: ['Pid', 'Diploma'],
      optionalGroups: [{ name: 'extra', credentialTypes: ['A', 'B'], min: 1 }],
      requestedFields: [
        { path: '$.credentialSubject.given_name', optional: false },
        { path: '$.credentialSubject.birthdate', optional: true },
      ],
    })
    assert.doesNotThrow(() => DcqlQuery.validate(DcqlQuery.parse(query as unknown as DcqlQuery.Input)))
  })
})

const PID_QUERY = {
  credentials: [
    {
      id: 'pid',
      format: 'dc+sd-jwt',
      meta: { vct_values: [vctOf('Pid')] },
      claims: [{ path: ['given_name'] }, { path: ['family_name'] }],
    },
  ],
}

describe('dcql evaluate', () => {
  test('satisfied: the credential under its key matches; matches name (query id, index)', async () => {
    const pid = await sdJwt('Pid', ['given_name', 'family_name'])
    const evaluation = dcql.evaluate(PID_QUERY, keyed(['pid', pid]))
    assert.deepEqual(evaluation, {
      outcome: 'satisfied',
      detail: '',
      matches: [{ queryId: 'pid', index: 0 }],
    })
  })

  test('wrong vct', async () => {
    const other = await sdJwt('Other', ['given_name', 'family_name'])
    const evaluation = dcql.evaluate(PID_QUERY, keyed(['pid', other]))
    assert.equal(evaluation.outcome, 'unsatisfied')
    assert.equal(
      evaluation.detail,
      `credential query "pid": vct "${vctOf('Other')}" is not one of "${vctOf('Pid')}"`,
    )
    assert.deepEqual(evaluation.matches, [])
  })

  test('missing claim, and a claim whose value is not one of the values asked', async () => {
    const pid = await sdJwt('Pid', ['given_name'])
    const missing = dcql.evaluate(PID_QUERY, keyed(['pid', pid]))
    assert.equal(missing.outcome, 'unsatisfied')
    assert.equal(missing.detail, `credential query "pid": claim ['family_name'] is missing`)
    const query = {
      credentials: [{ ...PID_QUERY.credentials[0], claims: [{ path: ['given_name'], values: ['Max'] }] }],
    }
    const wrongValue = dcql.evaluate(query, keyed(['pid', pid]))
    assert.equal(wrongValue.detail, `credential query "pid": claim ['given_name'] is not one of "Max"`)
    const absent = {
      credentials: [{ ...query.credentials[0], claims: [{ path: ['family_name'], values: ['Doe'] }] }],
    }
    assert.equal(
      dcql.evaluate(absent, keyed(['pid', pid])).detail,
      `credential query "pid": claim ['family_name'] is missing`,
    )
  })

  test('claim_sets: unsatisfied when the required claim is missing, satisfied by the fallback set', async () => {
    const query = sdQuery({
      requestedFields: [
        { path: '$.credentialSubject.given_name', optional: false },
        { path: '$.credentialSubject.address.street', optional: true },
      ],
    })
    const fallback = dcql.evaluate(query, keyed(['Pid', await sdJwt('Pid', ['given_name'])]))
    assert.equal(fallback.outcome, 'satisfied')
    const none = dcql.evaluate(query, keyed(['Pid', await sdJwt('Pid', ['family_name'])]))
    assert.equal(
      none.detail,
      `credential query "Pid": none of its claim_sets is satisfied: claim ['given_name'] is missing, claim ['address', 'street'] is missing`,
    )
  })

  test('a credential under the wrong key fails there, though the same credentials keyed right satisfy', async () => {
    const query = {
      credentials: [
        { id: 'pid', format: 'dc+sd-jwt', meta: { vct_values: [vctOf('Pid')] } },
        {
          id: 'diploma',
          format: 'jwt_vc_json',
          meta: { type_values: [['VerifiableCredential', 'Diploma']] },
        },
      ],
    }
    const pid = await sdJwt('Pid', [])
    const diploma = jwtVc('Diploma')
    assert.equal(dcql.evaluate(query, keyed(['pid', pid], ['diploma', diploma])).outcome, 'satisfied')
    const swapped = dcql.evaluate(query, keyed(['pid', diploma], ['diploma', pid]))
    assert.equal(swapped.outcome, 'unsatisfied')
    assert.equal(
      swapped.detail,
      'credential query "pid": format "jwt_vc_json" is not "dc+sd-jwt"; credential query "diploma": format "dc+sd-jwt" is not "jwt_vc_json"',
    )
    // Same format, wrong key: two SD-JWT VC queries with their credentials swapped.
    const two = {
      credentials: [
        { id: 'pid', format: 'dc+sd-jwt', meta: { vct_values: [vctOf('Pid')] } },
        { id: 'mdl', format: 'dc+sd-jwt', meta: { vct_values: [vctOf('Mdl')] } },
      ],
    }
    const mdl = await sdJwt('Mdl', [])
    assert.equal(dcql.evaluate(two, keyed(['pid', pid], ['mdl', mdl])).outcome, 'satisfied')
    assert.equal(
      dcql.evaluate(two, keyed(['pid', mdl], ['mdl', pid])).detail,
      `credential query "pid": vct "${vctOf('Mdl')}" is not one of "${vctOf('Pid')}"; credential query "mdl": vct "${vctOf('Pid')}" is not one of "${vctOf('Mdl')}"`,
    )
  })

  test('jwt_vc_json: type_values and credentialSubject claims', async () => {
    const query = buildDcqlQuery({
      credentialTypes: ['Diploma'],
      requestedFields: [{ path: '$.credentialSubject.familyName', optional: false }],
      format: 'jwt_vc_json',
      vctValues: () => [],
    })
    assert.equal(dcql.evaluate(query, keyed(['Diploma', jwtVc('Diploma')])).outcome, 'satisfied')
    assert.equal(
      dcql.evaluate(query, keyed(['Diploma', jwtVc('Other')])).detail,
      'credential query "Diploma": type ["VerifiableCredential","Other"] does not include all of ["VerifiableCredential","Diploma"]',
    )
    assert.equal(
      dcql.evaluate(query, keyed(['Diploma', jwtVc('Diploma', { givenName: 'Jo' })])).detail,
      `credential query "Diploma": claim ['credentialSubject', 'familyName'] is missing`,
    )
  })

  test('a key that names no credential query', async () => {
    const pid = await sdJwt('Pid', ['given_name', 'family_name'])
    const evaluation = dcql.evaluate(PID_QUERY, keyed(['x', pid]))
    assert.equal(evaluation.outcome, 'unsatisfied')
    // The stray key is the mapping's mistake (named once, by checkMapping); evaluation misses the answer.
    assert.equal(evaluation.detail, 'credential query "pid" has no readable presentation')
    assert.deepEqual(dcql.checkMapping({ x: ['ey…'] }, PID_QUERY, evaluation, 1), [
      `vp_token key "x" names no credential query of this session's dcql_query`,
      'vp_token has no entry for required credential query "pid"',
    ])
  })

  test('more than one presentation under a query without multiple (§6.1)', async () => {
    const a = await sdJwt('Pid', ['given_name', 'family_name'])
    const b = await sdJwt('Pid', ['given_name', 'family_name'])
    const message =
      'vp_token "pid" holds 2 presentations but credential query "pid" does not allow multiple (OpenID4VP 1.0 §6.1)'
    // Each credential satisfies the query; the count is the mapping's mistake, named by checkMapping.
    const evaluation = dcql.evaluate(PID_QUERY, keyed(['pid', a], ['pid', b]))
    assert.equal(evaluation.outcome, 'satisfied')
    assert.deepEqual(dcql.checkMapping({ pid: ['a', 'b'] }, PID_QUERY, evaluation, 2), [message])
    const multiple = { credentials: [{ ...PID_QUERY.credentials[0], multiple: true }] }
    const allowed = dcql.evaluate(multiple, keyed(['pid', a], ['pid', b]))
    assert.equal(allowed.outcome, 'satisfied')
    assert.deepEqual(allowed.matches, [
      { queryId: 'pid', index: 0 },
      { queryId: 'pid', index: 1 },
    ])
    assert.deepEqual(dcql.checkMapping({ pid: ['a', 'b'] }, multiple, allowed, 2), [])
  })

  test('credential_sets: one option of a group satisfies it; none fails naming the set', async () => {
    const query = sdQuery({
      optionalGroups: [{ name: 'proof', credentialTypes: ['Diploma', 'License'], min: 1 }],
    })
    const pid = await sdJwt('Pid', [])
    const license = await sdJwt('License', [])
    const one = dcql.evaluate(query, keyed(['Pid', pid], ['License', license]))
    assert.equal(one.outcome, 'satisfied')
    assert.deepEqual(one.matches, [
      { queryId: 'Pid', index: 0 },
      { queryId: 'License', index: 1 },
    ])
    assert.deepEqual(dcql.checkMapping({ Pid: ['p'], License: ['l'] }, query, one, 2), [])
    const none = dcql.evaluate(query, keyed(['Pid', pid]))
    assert.equal(none.outcome, 'unsatisfied')
    assert.equal(none.detail, 'no option of required credential_sets[1] ("Diploma" | "License") is satisfied')
    assert.deepEqual(dcql.checkMapping({ Pid: ['p'] }, query, none, 1), [
      'vp_token answers no option of required credential_sets[1] ("Diploma" | "License")',
    ])
    // the mandatory type's one-option set names the missing query itself
    assert.equal(
      dcql.evaluate(query, keyed(['License', license])).detail,
      'credential query "Pid" has no readable presentation',
    )
  })

  test('over-disclosure is a warning naming the extra claims, not a failure', async () => {
    const pid = await sdJwt('Pid', ['given_name', 'family_name', 'birthdate', 'address'], {
      address: { street: 'Heidestraße 17', locality: 'Köln' },
    })
    const query = { credentials: [{ ...PID_QUERY.credentials[0], claims: [{ path: ['given_name'] }] }] }
    const evaluation = dcql.evaluate(query, keyed(['pid', pid]))
    assert.equal(evaluation.outcome, 'satisfied')
    assert.deepEqual(evaluation.warnings, [
      'credential query "pid": claims disclosed beyond the query: address, birthdate, family_name (OpenID4VP 1.0 §6.4 data minimisation)',
    ])
    // an object disclosed with a member is named once
    const nested = await sdJwt('Pid', ['given_name', 'address.street'], {
      address: { street: 'Heidestraße 17', locality: 'Köln' },
    })
    assert.deepEqual(dcql.evaluate(query, keyed(['pid', nested])).warnings, [
      'credential query "pid": claims disclosed beyond the query: address (OpenID4VP 1.0 §6.4 data minimisation)',
    ])
    // asking for address.street covers the address object that opens it, not its other members
    const street = {
      credentials: [
        { ...query.credentials[0], claims: [{ path: ['given_name'] }, { path: ['address', 'street'] }] },
      ],
    }
    const pid2 = await sdJwt('Pid', ['given_name', 'address.street', 'address.locality'], {
      address: { street: 'Heidestraße 17', locality: 'Köln' },
    })
    assert.deepEqual(dcql.evaluate(street, keyed(['pid', pid2])).warnings, [
      'credential query "pid": claims disclosed beyond the query: address.locality (OpenID4VP 1.0 §6.4 data minimisation)',
    ])
    // exactly what was asked, plus a claim the issuer made always visible: no warnings
    const exact = dcql.evaluate(
      PID_QUERY,
      keyed(['pid', await sdJwt('Pid', ['given_name', 'family_name'], {}, { nationality: 'DE' })]),
    )
    assert.equal(exact.outcome, 'satisfied')
    assert.equal(exact.warnings, undefined)
  })
})

describe('dcql checkMapping and errors', () => {
  test('a credential under no key, and one of a format DCQL is not evaluated for here', async () => {
    const pid = await sdJwt('Pid', ['given_name', 'family_name'])
    const unkeyed = dcql.evaluate(PID_QUERY, [{ index: 0, credential: pid }])
    assert.equal(
      unkeyed.detail,
      'credential 0 is under no vp_token key; credential query "pid" has no readable presentation',
    )
    // a format no folder of src/formats/ provides (ldp_vc has one since issue 33, mso_mdoc since issue 35)
    const unknown = dcql.evaluate(PID_QUERY, keyed(['pid', { ...pid, format: 'ac_vc' }]))
    assert.equal(unknown.outcome, 'unsatisfied')
    assert.equal(unknown.detail, 'credential query "pid": format "ac_vc" cannot be evaluated with DCQL')
  })

  test('a value that is not a non-empty array; a mapping that is not an object', () => {
    const evaluation = { outcome: 'unsatisfied' as const, detail: '', matches: [] }
    assert.deepEqual(dcql.checkMapping({ pid: 'ey…' }, PID_QUERY, evaluation, 1), [
      'vp_token "pid" is not a non-empty array of presentations',
      'vp_token has no entry for required credential query "pid"',
    ])
    assert.deepEqual(dcql.checkMapping({ pid: [] }, PID_QUERY, evaluation, 0), [
      'vp_token "pid" is not a non-empty array of presentations',
      'vp_token has no entry for required credential query "pid"',
    ])
    assert.deepEqual(dcql.checkMapping(['ey…'], PID_QUERY, evaluation, 1), [
      'vp_token is not a JSON object keyed by credential query ids (OpenID4VP 1.0 §8.1)',
    ])
  })

  test('a query is parsed once per content: each response (a fresh copy of it) is judged alike', async () => {
    // dcql.ts remembers the parsed query by its JSON; every response reads its session's query anew.
    const pid = await sdJwt('Pid', ['given_name', 'family_name', 'birthdate'])
    const other = await sdJwt('Other', ['given_name'])
    const fresh = () => JSON.parse(JSON.stringify(PID_QUERY)) as typeof PID_QUERY
    const first = [dcql.evaluate(fresh(), keyed(['pid', pid])), dcql.evaluate(fresh(), keyed(['pid', other]))]
    const query = fresh()
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(dcql.evaluate(query, keyed(['pid', pid])), first[0])
      assert.deepEqual(dcql.evaluate(fresh(), keyed(['pid', other])), first[1])
      assert.deepEqual(dcql.checkMapping({ pid: ['a', 'b'] }, fresh(), first[0] as never, 2), [
        'vp_token "pid" holds 2 presentations but credential query "pid" does not allow multiple (OpenID4VP 1.0 §6.1)',
      ])
    }
    assert.deepEqual(query, PID_QUERY) // neither evaluation nor the remembered parse changed it
    // an invalid query is remembered with its message
    for (let i = 0; i < 2; i++) {
      assert.equal(
        dcql.evaluate({ credentials: [] }, []).detail.startsWith('dcql_query is not a valid'),
        true,
      )
    }
  })

  test('a query dcql cannot parse is an error, not an unsatisfied query', async () => {
    const pid = await sdJwt('Pid', [])
    const evaluation = dcql.evaluate({ credentials: [] }, keyed(['pid', pid]))
    assert.equal(evaluation.outcome, 'error')
    assert.equal(
      evaluation.detail,
      'dcql_query is not a valid DCQL query: credentials: Array must be non-empty and have length of at least 1',
    )
    const duplicate = dcql.evaluate({ credentials: [PID_QUERY.credentials[0], PID_QUERY.credentials[0]] }, [])
    assert.equal(
      duplicate.detail,
      'dcql_query is not a valid DCQL query: Duplicate credential query ids found: pid',
    )
  })
})
