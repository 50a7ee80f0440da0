import assert from 'node:assert/strict'
import type { JsonWebKey } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { bindingFailures } from '../../../src/formats/binding.ts'
import { jwtVcJson, jwtVpJson } from '../../../src/formats/jwt-vc/verify.ts'
import type { CredentialFormat, PresentationFormat, ReadCredential } from '../../../src/formats/types.ts'
import { buildApp } from '../../../src/service/app.ts'
import { CHECKS } from '../../../src/service/credentials/outcomes.ts'
import {
  type CheckTimings,
  checkPresentation,
  type PipelineContext,
} from '../../../src/service/credentials/pipeline.ts'
import { presentationExchange } from '../../../src/service/credentials/presentation-exchange.ts'
import { StatusChecker } from '../../../src/service/credentials/status.ts'
import { ManualClock } from '../../../src/service/util/clock.ts'
import { signJws } from '../../../src/shared/jws.ts'
import {
  diVp,
  diVpRequest,
  grantFor,
  issueTo,
  newHolder,
  oid4vciConfig,
  VERIFIABLE_ID,
  walletPost,
} from '../../oid4vci-helpers.ts'

// The credential pipeline on its own: named checks in a fixed order, and formats that plug in behind
// one interface (a toy key-bound format stands in for dc+sd-jwt).

const NOW = Date.parse('2026-11-22T10:15:00.000Z')
const seconds = Math.floor(NOW / 1000)
const issuer = newHolder()
const holder = newHolder()
const noStatus = new StatusChecker(async () => {
  throw new Error('no list may be fetched in these tests')
})

function jwtVc(subject: string, extra: Record<string, unknown> = {}) {
  return signJws(
    { alg: 'EdDSA', typ: 'JWT', kid: issuer.kid },
    {
      iss: issuer.did,
      sub: subject,
      nbf: seconds - 60,
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', 'VerifiableId'],
        credentialSubject: { id: subject, familyName: 'Doe' },
        ...extra,
      },
    },
    issuer.privateKey,
  )
}

function jwtVp(credentials: string[], payload: Record<string, unknown> = {}) {
  return signJws(
    { alg: 'EdDSA', typ: 'JWT', kid: holder.kid },
    {
      iss: holder.did,
      aud: 'did:key:verifier',
      nonce: 'n-1',
      iat: seconds,
      vp: { type: ['VerifiablePresentation'], verifiableCredential: credentials },
      ...payload,
    },
    holder.privateKey,
  )
}

const context = (over: Partial<PipelineContext> = {}): PipelineContext => ({
  session: {
    nonce: 'n-1',
    nonceRole: 'the nonce',
    audience: 'did:key:verifier',
    audienceRole: 'the verifier',
    now: NOW,
  },
  presentationFormat: jwtVpJson,
  presentationPolicy: { algorithms: ['EdDSA'] },
  credentialFormats: [jwtVcJson],
  credentialPolicy: { algorithms: ['EdDSA'] },
  trustedIssuers: () => [issuer.did],
  requireStatus: false,
  status: noStatus,
  ...over,
})

const results = (list: { check: string; result: string }[]) =>
  Object.fromEntries(list.map((c) => [c.check, c.result]))

describe('credential pipeline: named checks', () => {
  test('a good jwt_vp runs every check in CHECKS order; no query → matchingIds not_run', async () => {
    const result = await checkPresentation(jwtVp([jwtVc(holder.did)]), context())
    assert.deepEqual(
      result.outcomes.list.map((c) => c.check),
      [...CHECKS],
    )
    assert.equal(result.outcomes.failed().length, 0, JSON.stringify(result.outcomes.list))
    assert.equal(results(result.outcomes.list).matchingIds, 'not_run')
    assert.equal(result.holder?.did, holder.did)
    // no credentialStatus and requireStatus false: passes with a warning naming the check
    assert.match(result.outcomes.warnings[0] ?? '', /^credentialStatus: /)
  })

  test('errors() names each failed check: a stranger credential, a wrong nonce, an untrusted issuer', async () => {
    const result = await checkPresentation(
      jwtVp([jwtVc('did:key:someone-else')], { nonce: 'other' }),
      context({ trustedIssuers: () => ['did:key:trusted'] }),
    )
    const failed = result.outcomes.errors().map((e) => e.split(':')[0])
    assert.deepEqual(failed, ['sessionBinding', 'holderBinding', 'trustedIssuer'])
  })

  test('no nonce expected (OpenID4VCI consumes its c_nonce itself), but a maximum age: an old presentation fails', async () => {
    const result = await checkPresentation(
      jwtVp([jwtVc(holder.did)], { nonce: undefined, iat: seconds - 3600 }),
      context({
        session: {
          nonceRole: '',
          audience: 'did:key:verifier',
          audienceRole: 'the verifier',
          now: NOW,
          maxAgeSeconds: 300,
        },
      }),
    )
    assert.deepEqual(
      result.outcomes.failed().map((c) => c.check),
      ['sessionBinding'],
    )
    assert.match(result.outcomes.failed()[0]?.message ?? '', /3600 s old/)
  })

  test("no trust list: a list URL is read only for the tenant's own issuers, never on a stranger's word", async () => {
    const entry = {
      type: 'BitstringStatusListEntry',
      statusPurpose: 'revocation',
      statusListIndex: '3',
      statusListCredential: 'http://127.0.0.1:1/internal',
    }
    const vp = jwtVp([jwtVc(holder.did, { credentialStatus: entry })])
    const stranger = await checkPresentation(vp, context({ trustedIssuers: () => undefined, ownIssuers: [] }))
    assert.equal(results(stranger.outcomes.list).credentialStatus, 'not_run')
    assert.equal(results(stranger.outcomes.list).trustedIssuer, 'passed')
    assert.match(stranger.outcomes.warnings.join(), /credentialStatus: .*status list is not read/)
    const own = await checkPresentation(
      vp,
      context({ trustedIssuers: () => undefined, ownIssuers: [issuer.did] }),
    )
    assert.equal(results(own.outcomes.list).credentialStatus, 'failed') // the test source refuses every fetch
  })

  test('an unreadable presentation fails securityMechanisms; every other check is not_run', async () => {
    const result = await checkPresentation('{"not":"a jwt"}', context())
    assert.equal(result.outcomes.list[0]?.check, 'securityMechanisms')
    assert.equal(result.outcomes.list[0]?.result, 'failed')
    assert.ok(result.outcomes.list.slice(1).every((c) => c.result === 'not_run'))
  })

  test('Presentation Exchange: the wallet mapping is checked against the service evaluation', async () => {
    const definition = {
      id: 'def-1',
      input_descriptors: [
        {
          id: 'VerifiableId',
          constraints: {
            fields: [{ path: ['$.vc.type[-1:]', '$.type[-1:]'], filter: { const: 'VerifiableId' } }],
          },
        },
      ],
    }
    const mapping = (path: string) => ({
      value: {
        definition_id: 'def-1',
        descriptor_map: [
          { id: 'VerifiableId', format: 'jwt_vp', path: '$', path_nested: { format: 'jwt_vc', path } },
        ],
      },
    })
    const vp = jwtVp([jwtVc(holder.did)])
    const query = (path: string) => ({
      language: presentationExchange,
      query: definition,
      mapping: mapping(path),
    })
    const good = await checkPresentation(vp, context({ query: query('$.verifiableCredential[0]') }))
    assert.equal(results(good.outcomes.list).matchingIds, 'passed', JSON.stringify(good.outcomes.list))
    const bad = await checkPresentation(vp, context({ query: query('$.verifiableCredential[3]') }))
    assert.equal(results(bad.outcomes.list).matchingIds, 'failed')
  })
})

// A key-bound format as dc+sd-jwt will be: the holder is bound by a cnf key, status by a Token Status
// List entry. Credentials are plain JSON here; only the pipeline's use of the interface is under test.
const keyBound: CredentialFormat = {
  id: 'toy+key',
  aliases: [],
  accepts: (raw) => typeof raw === 'object' && raw !== null && 'cnf' in raw,
  read(raw): ReadCredential {
    const c = raw as { cnf: JsonWebKey; iss: string; status?: { uri: string; idx: number } }
    return {
      format: 'toy+key',
      alg: 'none',
      types: ['Toy'],
      verifyProof: () => ({ ok: true, issuer: c.iss }),
      holderBinding: { kind: 'key', jwk: c.cnf },
      validity: [],
      status: c.status ? [{ kind: 'token-status-list', uri: c.status.uri, index: c.status.idx }] : [],
      claims: {},
      sharedView: { type: ['Toy'] },
      queryInput: raw,
    }
  },
}
const toyPresentation: PresentationFormat = {
  id: 'toy_vp',
  aliases: [],
  read: (token) => ({
    format: 'toy_vp',
    mechanisms: 'toy_vp',
    verifyBinding: (session) =>
      bindingFailures(
        {
          nonce: 'n-1',
          audiences: ['did:key:verifier'],
          issuedAt: seconds,
          expiresAt: undefined,
          audienceShown: 'did:key:verifier',
          names: { presentation: 'toy', nonce: 'nonce', audience: 'aud', issuedAt: 'iat', expiresAt: 'exp' },
        },
        session,
      ),
    credentials: (token as unknown[]).map((raw, index) => ({ index, raw })),
    unreadable: [],
    verifyProof: async () => ({ ok: true, holder, proofEntry: {} }),
  }),
}

describe('credential pipeline: a format plugs in behind CredentialFormat', () => {
  const jwk = holder.publicKey.export({ format: 'jwk' }) as JsonWebKey
  const stranger = newHolder().publicKey.export({ format: 'jwk' }) as JsonWebKey
  const run = (credentials: unknown[]) =>
    checkPresentation(
      credentials,
      context({ presentationFormat: toyPresentation, credentialFormats: [jwtVcJson, keyBound] }),
    )

  test('holderBinding by cnf key: the presenter key passes, another key fails', async () => {
    const good = await run([{ cnf: jwk, iss: issuer.did }])
    assert.equal(results(good.outcomes.list).holderBinding, 'passed')
    const bad = await run([{ cnf: stranger, iss: issuer.did }])
    assert.equal(results(bad.outcomes.list).holderBinding, 'failed')
  })

  test('a Token Status List entry reaches credentialStatus (reported, not silently passed)', async () => {
    const result = await run([{ cnf: jwk, iss: issuer.did, status: { uri: 'https://x.example/l', idx: 3 } }])
    assert.equal(results(result.outcomes.list).credentialStatus, 'failed')
  })
})

describe('credential pipeline: the metrics hook', () => {
  const seen: { source: string; timings: CheckTimings }[] = []
  let app: Awaited<ReturnType<typeof buildApp>>
  const clock = new ManualClock(Date.parse('2026-11-22T10:15:00.123Z'))
  before(async () => {
    app = await buildApp({
      config: oid4vciConfig(),
      clock,
      publicUrl: () => 'https://issuer.example',
      checkMetrics: { checks: (source, timings) => seen.push({ source, timings }) },
    })
  })
  after(() => app.close())

  test('a di_vp proof reports its check timings as issuance', async () => {
    const wallet = newHolder()
    const vid = (await issueTo(app, clock, wallet, 'vid', VERIFIABLE_ID)).jwts[0] ?? ''
    const g = await grantFor(app, 'gated')
    const vp = await diVp(wallet, clock, [vid], { challenge: g.cNonce })
    const response = await walletPost(app, 'credential', g.accessToken, diVpRequest('gated', vp))
    assert.equal(response.statusCode, 202, response.body)
    assert.equal(seen.length, 1)
    assert.equal(seen[0]?.source, 'issuance')
    for (const key of ['totalMs', 'signaturesMs', 'queryMs', 'statusMs'] as const) {
      assert.equal(typeof seen[0]?.timings[key], 'number')
    }
  })
})
