import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { type ResolvedVerificationTemplate, resolveTemplate } from '../../../src/service/config/schema.ts'
import { presentationExchange } from '../../../src/service/credentials/presentation-exchange.ts'
import type { TenantKey } from '../../../src/service/crypto/tenant-keys.ts'
import {
  compiledVerdict,
  decodeSegment,
  evaluateDefinition,
  evaluateWithPex,
  pathValues,
} from '../../../src/service/util/pex.ts'
import { buildDefinition, difDefinition } from '../../../src/service/verification/definition.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../../src/shared/did-key.ts'
import { signJws } from '../../../src/shared/jws.ts'
import { verificationConfig } from '../../verification-helpers.ts'

// The compiled Presentation Exchange evaluation (util/pex.ts) against @sphereon/pex, its reference: for
// the definitions the service builds and for generated ones, the same outcome, the same detail and the
// same (descriptor, credential) matches; where the compiled form answers at all, the same satisfied /
// not satisfied verdict and the same matches as PEX, and never a verdict where PEX throws. The JSONPath
// and JWT readings it replaces are held against @astronautlabs/jsonpath and jwt-decode themselves.

const RUNS = Number(process.env.VC_HARNESS_PEX_RUNS ?? 200)

const fromPex = createRequire(createRequire(import.meta.url).resolve('@sphereon/pex'))
const { JSONPath } = fromPex('@astronautlabs/jsonpath') as {
  JSONPath: { nodes(root: unknown, path: string): { value: unknown }[] }
}
const jwtDecode = createRequire(fromPex.resolve('@sphereon/ssi-types'))('jwt-decode') as (
  token: string,
  options?: { header: boolean },
) => unknown

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
/** An unsigned JWT: PEX reads credentials, it never checks their signatures. */
const jwt = (payload: unknown, header: unknown = { alg: 'EdDSA', typ: 'JWT' }) =>
  `${b64(header)}.${b64(payload)}.c2ln`

/**
 * The compiled form and PEX agree: evaluateDefinition answers PEX's outcome, detail and matches, and the
 * compiled verdict, where there is one, is PEX's. Returns both for the caller's own expectations.
 */
function agree(definition: unknown, jwts: readonly unknown[]) {
  const reference = evaluateWithPex(definition, jwts)
  assert.deepEqual(evaluateDefinition(definition, jwts), reference)
  const compiled = compiledVerdict(definition, jwts)
  if (compiled) {
    const shown = `compiled ${JSON.stringify(compiled)} vs PEX ${JSON.stringify(reference)}`
    assert.notEqual(reference.outcome, 'error', `PEX could not evaluate, the compiled form did: ${shown}`)
    assert.equal(compiled.status === 'info', reference.outcome === 'satisfied', shown)
    assert.deepEqual(compiled.matches, reference.matches, shown)
  }
  return { reference, compiled }
}

// ---- the definitions the service builds (verification/definition.ts, the demo templates) ----

function key(): TenantKey<'EdDSA'> {
  const pair = generateKeyPair('EdDSA')
  const { did, kid } = didKeyFromPublicKey(pair.publicKey)
  return { alg: 'EdDSA', did, kid, privateKey: pair.privateKey, publicKey: pair.publicKey }
}
const issuer = key()
const otherIssuer = key()
const stranger = key()
const holder = 'did:key:z6MkholderHolderHolderHolderHolderHolderHolder'
const now = Date.UTC(2026, 0, 1)

function definitionOf(body: Record<string, unknown> | undefined, trusted = [issuer.did, otherIssuer.did]) {
  if (!body) throw new Error('no such template')
  const template = resolveTemplate('verification', {
    id: 't',
    name: 'T',
    ...body,
  } as never) as ResolvedVerificationTemplate
  return difDefinition(
    buildDefinition({
      sessionId: crypto.randomUUID(),
      template,
      templateUpdatedAt: now,
      trustedIssuers: trusted,
      verifier: issuer,
      nonce: 'n',
      receiverUrl: 'https://rp.example',
      now,
    }),
  )
}

/** A jwt_vc_json credential as the service issues it (issuance/credentials.ts), signed by `by`. */
function credential(type: string, by: TenantKey = issuer, subject: Record<string, unknown> = {}) {
  return signJws(
    { alg: 'EdDSA', kid: by.kid, typ: 'JWT' },
    {
      iss: by.did,
      sub: holder,
      nbf: Math.floor(now / 1000),
      jti: `urn:uuid:${crypto.randomUUID()}`,
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', type],
        issuer: by.did,
        credentialSubject: { id: holder, ...subject },
        credentialStatus: {
          id: 'https://vc.example/status/1#7',
          type: 'BitstringStatusListEntry',
          statusPurpose: 'revocation',
          statusListIndex: '7',
          statusListCredential: 'https://vc.example/status/1',
        },
      },
    },
    by.privateKey,
  )
}

const TEMPLATES: Record<string, Record<string, unknown>> = {
  'degree-check (demo)': { credentialTypes: ['UniversityDegreeCredential'] },
  'two mandatory types': { credentialTypes: ['UniversityDegreeCredential', 'VerifiableId'] },
  'requested fields': {
    credentialTypes: ['UniversityDegreeCredential'],
    requestedFields: [
      { path: '$.credentialSubject.degree.name' },
      { path: '$.credentialSubject.degree.type', optional: true },
    ],
  },
  'optional group (pick 1)': {
    credentialTypes: ['VerifiableId'],
    optionalGroups: [{ name: 'proof', credentialTypes: ['UniversityDegreeCredential', 'EmployeeId'] }],
  },
  'optional group (pick 0)': {
    credentialTypes: ['VerifiableId'],
    optionalGroups: [{ name: 'extra', credentialTypes: ['EmployeeId'], min: 0 }],
  },
}
// Every `pe` template of the demo configuration and of the verification tests' configuration.
for (const tenant of verificationConfig().tenants) {
  for (const template of tenant.verificationTemplates) {
    if (template.profile === 'dcql') continue
    const { trustedIssuers: _trusted, ...body } = template
    TEMPLATES[`${tenant.id}/${template.id}`] = body as Record<string, unknown>
  }
}
const degree = { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } }
const SETS: Record<string, () => unknown[]> = {
  'a degree': () => [credential('UniversityDegreeCredential', issuer, degree)],
  'a degree without the requested claims': () => [credential('UniversityDegreeCredential')],
  'a degree from an untrusted issuer': () => [credential('UniversityDegreeCredential', stranger, degree)],
  'a degree and an id': () => [
    credential('UniversityDegreeCredential', issuer, degree),
    credential('VerifiableId', otherIssuer),
  ],
  'an id and a degree': () => [
    credential('VerifiableId', otherIssuer),
    credential('UniversityDegreeCredential', issuer, degree),
  ],
  'an id, a degree and an employee id': () => [
    credential('VerifiableId'),
    credential('UniversityDegreeCredential', issuer, degree),
    credential('EmployeeId'),
  ],
  'two degrees': () => [
    credential('UniversityDegreeCredential', issuer, degree),
    credential('UniversityDegreeCredential', otherIssuer, degree),
  ],
  'the same degree twice': () => {
    const one = credential('UniversityDegreeCredential', issuer, degree)
    return [one, one]
  },
  'an id': () => [credential('VerifiableId')],
  'a degree, an id and an employee credential': () => [
    credential('UniversityDegreeCredential', issuer, degree),
    credential('VerifiableId', issuer, { familyName: 'Doe' }),
    credential('EmployeeCredential'),
  ],
  'a degree and an employee credential': () => [
    credential('UniversityDegreeCredential', issuer, degree),
    credential('EmployeeCredential'),
  ],
  'an id with the requested claims': () => [credential('VerifiableId', issuer, { familyName: 'Doe' })],
  nothing: () => [],
  'a credential whose iss and vc.issuer differ': () => [
    jwt({
      iss: stranger.did,
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', 'UniversityDegreeCredential'],
        issuer: issuer.did,
        credentialSubject: degree,
      },
    }),
  ],
  'a JWT without vc': () => [jwt({ iss: issuer.did, sub: holder })],
  'an SD-JWT': () => [`${credential('VerifiableId')}~`],
  'not a JWT': () => ['eyJ.not-base64!.x'],
  'a JSON-LD credential': () => [
    {
      '@context': ['https://www.w3.org/2018/credentials/v1'],
      type: ['VerifiableCredential', 'UniversityDegreeCredential'],
      issuer: issuer.did,
      issuanceDate: '2026-01-01T00:00:00Z',
      credentialSubject: { id: holder, ...degree },
    },
  ],
}

describe('the compiled evaluation answers like PEX for the definitions the service builds', () => {
  for (const [name, body] of Object.entries(TEMPLATES)) {
    test(name, () => {
      const definition = definitionOf(body)
      for (const [set, make] of Object.entries(SETS)) {
        const { reference, compiled } = agree(definition, make())
        // Every satisfied answer to one of the service's own definitions comes from the compiled form.
        if (reference.outcome === 'satisfied' && set !== 'a JSON-LD credential')
          assert.equal(compiled?.status, 'info', `${name} / ${set}`)
      }
    })
  }

  test('a template of the demo configuration is satisfied by the compiled form, and refused with PEX reasons', () => {
    const definition = definitionOf(TEMPLATES['degree-check (demo)'])
    assert.deepEqual(evaluateDefinition(definition, SETS['a degree']?.() ?? []), {
      outcome: 'satisfied',
      detail: '',
      matches: [{ descriptor: 'UniversityDegreeCredential', index: 0 }],
    })
    const refused = evaluateDefinition(definition, [credential('UniversityDegreeCredential', stranger)])
    assert.equal(refused.outcome, 'unsatisfied')
    // PEX's own words: which handler refused which descriptor for which credential
    assert.match(
      refused.detail,
      /FilterEvaluation: .*\$\.input_descriptors\[0\]: \$\.verifiableCredential\[0\]/,
    )
  })

  test('one compiled form serves every session of a template: only the definition id differs', () => {
    const body = TEMPLATES['two mandatory types']
    const sets = [SETS['a degree and an id']?.() ?? [], SETS['an id']?.() ?? []]
    for (let i = 0; i < 3; i++) {
      const definition = definitionOf(body)
      for (const jwts of sets) agree(definition, jwts)
    }
    // a non-string id is PEX's to refuse
    const definition = { ...definitionOf(body), id: 7 }
    assert.equal(compiledVerdict(definition, sets[0] ?? []), undefined)
    assert.equal(evaluateDefinition(definition, sets[0] ?? []).outcome, 'error')
  })

  test('a definition the compiled form does not cover is left to PEX', () => {
    const base = definitionOf(TEMPLATES['degree-check (demo)'])
    const jwts = SETS['a degree']?.() ?? []
    type Descriptor = { constraints: Record<string, unknown> }
    const descriptors = base.input_descriptors as Descriptor[]
    const variants: Record<string, unknown> = {
      limit_disclosure: {
        ...base,
        input_descriptors: descriptors.map((d) => ({
          ...d,
          constraints: { ...d.constraints, limit_disclosure: 'required' },
        })),
      },
      'a descendant path': {
        ...base,
        input_descriptors: descriptors.map((d) => ({
          ...d,
          constraints: { ...d.constraints, fields: [{ path: ['$..degree'] }] },
        })),
      },
      'a date filter': {
        ...base,
        input_descriptors: descriptors.map((d) => ({
          ...d,
          constraints: { fields: [{ path: ['$.nbf'], filter: { type: 'string', format: 'date' } }] },
        })),
      },
      'not a definition': { id: 'x' },
    }
    for (const [name, definition] of Object.entries(variants)) {
      assert.equal(compiledVerdict(definition, jwts), undefined, name)
      agree(definition, jwts)
    }
  })
})

// ---- generated definitions and credentials ----

const TYPES = ['A', 'B', 'C']
const ISSUERS = ['did:key:z6MkIssuerOne', 'did:key:z6MkIssuerTwo']
const PATHS = [
  '$.vc.type[-1:]',
  '$.type[-1:]',
  '$.iss',
  '$.vc.issuer',
  '$.vc.issuer.id',
  '$.issuer',
  '$.sub',
  '$.nbf',
  '$.vc.credentialSubject.id',
  '$.vc.credentialSubject.name',
  '$.credentialSubject.name',
  '$.vc.credentialSubject.age',
  '$.vc.credentialSubject.tags[0]',
  '$.vc.credentialSubject.tags[1:]',
  '$.vc.credentialSubject.*',
  "$['vc']['type'][0]",
  '$.vc.type[*]',
  '$.vc.type[::-1]',
  '$.vc.type.length',
  '$.vc.constructor',
  '$.vc.proof.type',
  '$.vc.proof.created',
  '$.vc.proof.verificationMethod',
  '$..name',
  '$.vc.type[?(@ == "A")]',
  '$.vc.type[0,1]',
]
const FILTERS: unknown[] = [
  { type: 'string', const: 'A' },
  { type: 'string', const: 'B' },
  { type: 'string', pattern: `^(${ISSUERS[0]})$` },
  { type: 'string', pattern: '^(did:key:z6MkIssuerOne|did:key:z6MkIssuerTwo)$' },
  { enum: ['A', 'B'] },
  { type: 'number', minimum: 18 },
  { type: 'array', contains: { const: 'A' } },
  { type: 'string', format: 'uri' },
  { type: 'string', format: 'date' },
  {},
  { not: {} },
  { type: 'object' },
]
const SUBSET = (pool: readonly string[]) => fc.subarray([...pool], { minLength: 0 })

const anyField = fc.record(
  {
    path: fc.array(fc.constantFrom(...PATHS), { minLength: 1, maxLength: 3 }),
    filter: fc.constantFrom(...FILTERS),
    purpose: fc.constant('why'),
    intent_to_retain: fc.boolean(),
  },
  { requiredKeys: ['path'] },
)
/** The fields the service's definitions carry: a type, a trusted issuer, a claim. */
const typicalField = fc.oneof(
  fc.constantFrom(...TYPES).map((t) => ({
    path: ['$.vc.type[-1:]', '$.type[-1:]'],
    filter: { type: 'string', const: t },
  })),
  fc.constant({
    path: ['$.iss', '$.vc.issuer', '$.issuer', '$.vc.issuer.id', '$.issuer.id'],
    filter: { type: 'string', pattern: `^(${ISSUERS.join('|')})$` },
  }),
  fc.constant({ path: ['$.vc.credentialSubject.name', '$.credentialSubject.name'], intent_to_retain: false }),
)
const field = fc.oneof({ weight: 3, arbitrary: typicalField }, { weight: 2, arbitrary: anyField })
const descriptor = fc.record(
  {
    name: fc.constantFrom(...TYPES),
    group: SUBSET(['g1', 'g2']),
    format: fc.constantFrom<Record<string, unknown>>(
      { jwt_vc: { alg: ['EdDSA'] } },
      { jwt_vc_json: { alg: ['EdDSA'] } },
      { ldp_vc: { proof_type: ['Ed25519Signature2018'] } },
    ),
    constraints: fc.record(
      {
        fields: fc.array(field, { maxLength: 2 }),
        statuses: fc.constant({ active: { directive: 'required' } }),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['constraints'] },
)
const requirement = fc.record(
  {
    name: fc.constant('r'),
    rule: fc.constantFrom('all', 'pick'),
    from: fc.constantFrom('g1', 'g1', 'g2', 'g3'),
    count: fc.integer({ min: 1, max: 3 }),
    min: fc.integer({ min: 0, max: 3 }),
    max: fc.integer({ min: 0, max: 3 }),
  },
  { requiredKeys: ['rule', 'from'] },
)
const definition = fc
  .record(
    {
      id: fc.uuid(),
      name: fc.constant('generated'),
      purpose: fc.constant('tests'),
      format: fc.constant({ jwt_vc: { alg: ['EdDSA'] }, jwt_vp: { alg: ['EdDSA'] } }),
      input_descriptors: fc.array(descriptor, { minLength: 1, maxLength: 3 }),
      submission_requirements: fc.array(requirement, { maxLength: 3 }),
    },
    { requiredKeys: ['id', 'input_descriptors'] },
  )
  .map((d) => ({ ...d, input_descriptors: d.input_descriptors.map((x, i) => ({ id: `d${i}`, ...x })) }))

const typeValue = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...TYPES).map((t) => ['VerifiableCredential', t]) },
  { weight: 2, arbitrary: fc.subarray(TYPES, { minLength: 1 }).map((t) => ['VerifiableCredential', ...t]) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>('VerifiableCredential', ['A'], 5, null, { a: 1 }) },
)
const subject = fc.record(
  {
    name: fc.oneof(fc.constantFrom('A', 'B'), fc.string({ maxLength: 4 })),
    age: fc.integer({ min: 0, max: 40 }),
    tags: fc.array(fc.constantFrom('A', 'B', 1), { maxLength: 3 }),
  },
  { requiredKeys: [] },
)
/** Claims that agree with each other (iss and vc.issuer, sub and credentialSubject.id, nbf and issuanceDate). */
const consistent = fc
  .record({
    iss: fc.constantFrom(...ISSUERS),
    issuerForm: fc.constantFrom('none', 'string', 'object', 'nameOnly'),
    sub: fc.option(fc.constant(holder)),
    subjectId: fc.boolean(),
    nbf: fc.option(fc.constant(1767225600)),
    type: typeValue,
    subject,
    extra: fc.record(
      { '@context': fc.constant(['https://www.w3.org/2018/credentials/v1']) },
      { requiredKeys: [] },
    ),
  })
  .map(({ iss, issuerForm, sub, subjectId, nbf, type, subject: claims, extra }) => ({
    iss,
    ...(sub !== null && { sub }),
    ...(nbf !== null && { nbf }),
    vc: {
      '@context': ['https://www.w3.org/2018/credentials/v1'],
      ...extra,
      type,
      ...(issuerForm === 'string' && { issuer: iss }),
      ...(issuerForm === 'object' && { issuer: { id: iss } }),
      ...(issuerForm === 'nameOnly' && { issuer: { name: 'Uni' } }),
      ...(nbf !== null && { issuanceDate: '2026-01-01T00:00:00Z' }),
      credentialSubject: { ...(subjectId && { id: holder }), ...claims },
    },
  }))
/** Anything goes: claims that disagree (PEX's credential mapper throws), odd types and members. */
const wild = fc.record(
  {
    iss: fc.constantFrom(...ISSUERS),
    sub: fc.constantFrom(holder, 'did:key:z6MkSomeoneElse'),
    nbf: fc.constantFrom(1767225600, 1767225600000),
    jti: fc.constant('urn:uuid:1'),
    vc: fc.record(
      {
        '@context': fc.constant(['https://www.w3.org/2018/credentials/v1']),
        type: typeValue,
        issuer: fc.constantFrom<unknown>(ISSUERS[0], ISSUERS[1], { id: ISSUERS[0] }, { name: 'Uni' }, null),
        issuanceDate: fc.constantFrom('2026-01-01T00:00:00Z', '2020-01-01T00:00:00Z'),
        credentialSubject: fc.record(
          {
            id: fc.constantFrom(holder, 'did:key:z6MkSomeoneElse'),
            name: fc.oneof(fc.constantFrom('A', 'B'), fc.string({ maxLength: 4 })),
            age: fc.integer({ min: 0, max: 40 }),
            tags: fc.array(fc.constantFrom('A', 'B', 1), { maxLength: 3 }),
          },
          { requiredKeys: [] },
        ),
        credentialSchema: fc.constantFrom<unknown>([{ id: 'https://s.example' }], [null], { id: 's' }),
      },
      { requiredKeys: ['credentialSubject'] },
    ),
  },
  { requiredKeys: ['vc'] },
)
const payload = fc.oneof({ weight: 4, arbitrary: consistent }, { weight: 1, arbitrary: wild })
const header = fc.record(
  { alg: fc.constant('EdDSA'), kid: fc.constant(`${ISSUERS[0]}#k`), typ: fc.constant('JWT') },
  { requiredKeys: ['alg'] },
)
const credentialArb = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(payload, header).map(([p, h]) => jwt(p, h)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>('eyJhbGciOiJFZERTQSJ9.e30.c2ln', 'eyX~y~', 'plain', 'eyJ9.bad', {}),
  },
)

describe('the compiled evaluation answers like PEX for generated definitions and credentials', () => {
  test('same outcome, detail and matches; the same verdict wherever the compiled form answers', () => {
    let answered = 0
    let satisfied = 0
    fc.assert(
      fc.property(definition, fc.array(credentialArb, { maxLength: 3 }), (d, jwts) => {
        const { reference, compiled } = agree(d, jwts)
        if (compiled) answered++
        if (compiled?.status === 'info') satisfied++
        return reference !== undefined
      }),
      { numRuns: RUNS },
    )
    // The generators reach the compiled form often enough to mean something.
    assert.ok(answered > RUNS / 5, `the compiled form answered ${answered} of ${RUNS}`)
    assert.ok(satisfied > 0, 'the compiled form found nothing satisfied')
  })

  test('definitions shaped like the service builds them: groups, requirements, types, issuers', () => {
    // One descriptor per type, a mandatory group (rule all) and an optional one (rule pick), as
    // verification/definition.ts builds them; credentials of those types, often enough to satisfy them.
    const shaped = fc
      .record({
        types: fc.uniqueArray(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 3 }),
        optional: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
        min: fc.integer({ min: 0, max: 2 }),
        requirements: fc.constantFrom('both', 'mandatory', 'none'),
        claim: fc.boolean(),
      })
      .map(({ types, optional, min, requirements, claim }) => {
        const groups = types.map((_, i) => (optional[i] && i > 0 ? 'g2' : 'g1'))
        return {
          id: crypto.randomUUID(),
          ...(requirements !== 'none' && {
            submission_requirements: [
              { name: 'mandatory', rule: 'all', from: 'g1' },
              ...(requirements === 'both' && groups.includes('g2')
                ? [{ name: 'optional', rule: 'pick', min, from: 'g2' }]
                : []),
            ],
          }),
          input_descriptors: types.map((t, i) => ({
            id: t,
            name: t,
            group: [groups[i]],
            constraints: {
              fields: [
                { path: ['$.vc.type[-1:]', '$.type[-1:]'], filter: { type: 'string', const: t } },
                {
                  path: ['$.iss', '$.vc.issuer', '$.issuer', '$.vc.issuer.id', '$.issuer.id'],
                  filter: { type: 'string', pattern: `^(${ISSUERS.join('|')})$` },
                },
                ...(claim ? [{ path: ['$.vc.credentialSubject.name', '$.credentialSubject.name'] }] : []),
              ],
              statuses: { active: { directive: 'required' } },
            },
          })),
        }
      })
    const typed = fc
      .tuple(consistent, fc.constantFrom(...TYPES))
      .map(([p, type]) => jwt({ ...p, vc: { ...p.vc, type: ['VerifiableCredential', type] } }))
    let satisfied = 0
    fc.assert(
      fc.property(shaped, fc.array(typed, { maxLength: 4 }), (d, jwts) => {
        if (agree(d, jwts).compiled?.status === 'info') satisfied++
      }),
      { numRuns: RUNS },
    )
    assert.ok(satisfied > RUNS / 20, `the compiled form found ${satisfied} of ${RUNS} satisfied`)
  })

  test('the service-shaped definitions, with generated credentials', () => {
    const definitions = Object.values(TEMPLATES).map((body) =>
      definitionOf(body, ['did:key:z6MkIssuerOne', 'did:key:z6MkIssuerTwo']),
    )
    const typed = fc
      .tuple(consistent, fc.constantFrom('UniversityDegreeCredential', 'VerifiableId', 'EmployeeId'))
      .map(([p, type]) => ({
        ...p,
        vc: {
          ...p.vc,
          type: ['VerifiableCredential', type],
          credentialSubject: { ...p.vc.credentialSubject, ...degree },
        },
      }))
    fc.assert(
      fc.property(
        fc.constantFrom(...definitions),
        fc.array(
          typed.map((p) => jwt(p)),
          { maxLength: 3 },
        ),
        (d, jwts) => {
          agree(d, jwts)
        },
      ),
      { numRuns: RUNS },
    )
  })
})

// ---- the pieces the compiled form evaluates with ----

const NAMES = ['a', 'b', 'length', 'constructor', 'toString', 'x']
const step = fc.oneof(
  fc.constantFrom(...NAMES).map((n) => `.${n}`),
  fc.constantFrom(...NAMES).map((n) => `['${n}']`),
  fc.integer({ min: -2, max: 3 }).map((n) => `[${n}]`),
  fc
    .tuple(
      fc.option(fc.integer({ min: -3, max: 3 })),
      fc.option(fc.integer({ min: -3, max: 3 })),
      fc.option(fc.integer({ min: -2, max: 2 })),
    )
    .map(([a, b, c]) => `[${a ?? ''}:${b ?? ''}${c === null ? '' : `:${c}`}]`),
  fc.constantFrom('[*]', '.*', '..a', '[0,1]'),
)
const jsonPath = fc.array(step, { maxLength: 4 }).map((steps) => `$${steps.join('')}`)
const tree = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom<unknown>(null, true, 0, 'A', ''),
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom(...NAMES, '0', '1'), tie('node'), { maxKeys: 4, noNullPrototype: true }),
  ),
}))

describe('the compiled form reads what PEX reads', () => {
  test('JSONPath: the same values as @astronautlabs/jsonpath for every path it covers', () => {
    let covered = 0
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(tree.node, { maxLength: 4 }),
          fc.dictionary(fc.constantFrom(...NAMES), tree.node, { noNullPrototype: true }),
        ),
        jsonPath,
        (root, path) => {
          const mine = pathValues(path, root)
          if (mine === undefined) return
          covered++
          assert.deepEqual(
            mine,
            JSONPath.nodes(root, path).map((n) => n.value),
            path,
          )
        },
      ),
      { numRuns: RUNS * 3 },
    )
    assert.ok(covered > RUNS, `only ${covered} paths were covered`)
  })

  test('JWT segments: what jwt-decode reads, wherever the compiled form reads one', () => {
    const asToken = (segment: string) => `eyJ.${segment}.sig`
    const same = (segment: string) => {
      const mine = decodeSegment(segment)
      if (mine === undefined) return false
      assert.deepEqual(mine, jwtDecode(asToken(segment)), segment)
      return true
    }
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        // JSON of any text, UTF-8 encoded: always read, and read alike
        assert.ok(same(Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')))
      }),
      { numRuns: RUNS },
    )
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        same(Buffer.from(bytes).toString('base64url'))
      }),
      { numRuns: RUNS },
    )
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{0,24}$/), (segment) => {
        same(segment)
      }),
      { numRuns: RUNS },
    )
    // A byte-order mark, a lone surrogate and Latin-1 bytes: jwt-decode reads them differently or not at
    // all, so the compiled form leaves them to PEX.
    for (const bytes of [
      Buffer.from('\ufeff{}', 'utf8'),
      Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
      Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]),
    ]) {
      assert.equal(decodeSegment(bytes.toString('base64url')), undefined)
    }
  })
})

describe('each required input descriptor needs a credential of its own (DIF PE v2 §5.1)', () => {
  // PEX counts the distinct credentials of a submission-requirement group, not its descriptors: two degree
  // credentials "satisfy" a group of a degree and an id. The service's Presentation Exchange refuses that.
  const definition = definitionOf(TEMPLATES['two mandatory types'])
  const descriptors = (definition.input_descriptors as { id: string }[]).map((d) => d.id)
  const candidates = (jwts: unknown[]) =>
    jwts.map((queryInput, index) => ({ index, credential: { queryInput } as never }))

  test('two degrees for a degree and an id: unsatisfied, naming the descriptor left without a credential', () => {
    const twoDegrees = [
      credential('UniversityDegreeCredential', issuer, degree),
      credential('UniversityDegreeCredential', otherIssuer, degree),
    ]
    assert.equal(evaluateWithPex(definition, twoDegrees).outcome, 'satisfied', 'PEX alone lets it pass')
    const evaluation = presentationExchange.evaluate(definition, candidates(twoDegrees))
    assert.equal(evaluation.outcome, 'unsatisfied')
    const idDescriptor = descriptors.find((id) => /VerifiableId/i.test(id))
    assert.match(
      evaluation.detail,
      new RegExp(`input descriptor "${idDescriptor}" is matched by no presented credential`),
    )
  })

  test('a degree and an id: satisfied; a descriptor_map that leaves one descriptor out is a mapping failure', () => {
    const both = [
      credential('UniversityDegreeCredential', issuer, degree),
      credential('VerifiableId', otherIssuer),
    ]
    const evaluation = presentationExchange.evaluate(definition, candidates(both))
    assert.equal(evaluation.outcome, 'satisfied', evaluation.detail)
    const entry = (m: { queryId: string; index: number }) => ({
      id: m.queryId,
      format: 'jwt_vc_json',
      path: `$.verifiableCredential[${m.index}]`,
    })
    const full = { definition_id: definition.id, descriptor_map: evaluation.matches.map(entry) }
    assert.deepEqual(presentationExchange.checkMapping(full, definition, evaluation, 2), [])
    const first = evaluation.matches[0]
    assert.ok(first)
    const partial = { definition_id: definition.id, descriptor_map: [entry(first)] }
    const left = descriptors.find((id) => id !== first.queryId)
    assert.deepEqual(presentationExchange.checkMapping(partial, definition, evaluation, 2), [
      `descriptor_map maps no credential to input descriptor "${left}", which is required`,
    ])
  })
})
