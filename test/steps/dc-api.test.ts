import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { signGeneralJws } from '../../src/shared/dc-api.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../src/shared/did-key.ts'
import { signJws } from '../../src/shared/jws.ts'
import { REQUEST_OBJECT_TYP } from '../../src/shared/wire.ts'
import { DcApiFlow, type DcApiRequestType, RP_ORIGIN } from '../../steps/support/dc-api.ts'
import type { DcqlFlow } from '../../steps/support/dcql.ts'
import type { FlowWorld } from '../../steps/support/world-types.ts'

// The DC API request checks of the conformance suite (steps/support/dc-api.ts expectProtected) judge what a
// target hands out without the wallet's help: a request the reference service would never build must fail
// them. Each case hands the flow an entry as the page would get it, through a stub world and dcql flow.

class Broken extends Error {}

const signer = () => {
  const { privateKey, publicKey } = generateKeyPair('EdDSA')
  const key = didKeyFromPublicKey(publicKey)
  return { privateKey, key, clientId: `decentralized_identifier:${key.did}` }
}

const params = {
  response_type: 'vp_token',
  response_mode: 'dc_api',
  nonce: 'n-0S6_WzA2Mj',
  dcql_query: { credentials: [] },
  client_metadata: {},
}

/** A DcApiFlow whose template is of `type`, the QR link naming `clientId`, the page getting `entry`. */
async function flowWith(type: DcApiRequestType, clientId: string, entry: unknown) {
  const world = {
    tenant: { tenant: 't-1' },
    client: {
      createVerificationTemplate: async () => ({ status: 201, headers: new Headers(), text: '', body: {} }),
      request: async () => ({
        status: 200,
        headers: new Headers({ 'content-type': 'application/json' }),
        text: JSON.stringify(entry),
        body: structuredClone(entry),
      }),
    },
    logIn: async () => 'token',
    recordAnswer: () => {},
    expectStatus: () => {},
    fail: (expected: string): never => {
      throw new Broken(expected)
    },
  } as unknown as FlowWorld
  const dcql = {
    template: undefined,
    requireCreated: () => ({
      id: 's-1',
      authentication_request: `openid4vp://?client_id=${encodeURIComponent(clientId)}`,
      dcql_query: params.dcql_query,
      dcApi: {
        protocol: `openid4vp-v1-${type}`,
        request: 'https://verifier.example/oid4vp/t-1/dc-api/s-1',
        response: 'https://verifier.example/oid4vp/t-1/dc-api/s-1',
        expectedOrigins: [RP_ORIGIN],
      },
    }),
    tenantTrustAnchor: async () => '',
  } as unknown as DcqlFlow
  const flow = new DcApiFlow(world, dcql)
  await flow.defineTemplate({ ask: 'family name', format: 'dc+sd-jwt', request: type })
  await flow.fetchRequest()
  return flow
}

const signed = (s: ReturnType<typeof signer>, claims: Record<string, unknown>) =>
  signJws({ alg: 'EdDSA', typ: REQUEST_OBJECT_TYP, kid: s.key.kid }, claims, s.privateKey)

describe('steps/support/dc-api.ts: the DC API request as Appendix A.3 prescribes', () => {
  test('signed: a request object by the client_id DID with the expected origins passes', async () => {
    const s = signer()
    const jwt = signed(s, { client_id: s.clientId, expected_origins: [RP_ORIGIN], ...params })
    const flow = await flowWith('signed', s.clientId, {
      protocol: 'openid4vp-v1-signed',
      data: { request: jwt },
    })
    await flow.expectProtected()
  })

  test('signed: a changed payload, a foreign kid, other expected_origins or another client_id fail', async () => {
    const s = signer()
    const other = signer()
    const good = signed(s, { client_id: s.clientId, expected_origins: [RP_ORIGIN], ...params })
    const [header, , signature] = good.split('.')
    const payload = Buffer.from(
      JSON.stringify({ client_id: s.clientId, expected_origins: [RP_ORIGIN], ...params, nonce: 'other' }),
    ).toString('base64url')
    const cases: [string, string, RegExp][] = [
      ['changed payload', `${header}.${payload}.${signature}`, /does not verify/],
      [
        'signed by another DID',
        signJws(
          { alg: 'EdDSA', typ: REQUEST_OBJECT_TYP, kid: other.key.kid },
          { client_id: s.clientId, expected_origins: [RP_ORIGIN], ...params },
          other.privateKey,
        ),
        /is no key of/,
      ],
      [
        'other expected_origins',
        signed(s, { client_id: s.clientId, expected_origins: ['https://other.example'], ...params }),
        /expected_origins/,
      ],
      ['no expected_origins', signed(s, { client_id: s.clientId, ...params }), /expected_origins/],
      [
        'another client_id than the link',
        signed(s, { client_id: other.clientId, expected_origins: [RP_ORIGIN], ...params }),
        /the QR link's/,
      ],
    ]
    for (const [what, jwt, message] of cases) {
      const flow = await flowWith('signed', s.clientId, {
        protocol: 'openid4vp-v1-signed',
        data: { request: jwt },
      })
      await assert.rejects(
        flow.expectProtected(),
        (e: Error) => e instanceof Broken && message.test(e.message),
        what,
      )
    }
  })

  test('unsigned: a client_id or expected_origins in data fail; the protocol must be the template type', async () => {
    for (const extra of [
      { client_id: 'decentralized_identifier:did:key:z' },
      { expected_origins: [RP_ORIGIN] },
    ]) {
      const flow = await flowWith('unsigned', 'x', {
        protocol: 'openid4vp-v1-unsigned',
        data: { ...params, ...extra },
      })
      await assert.rejects(flow.expectProtected(), Broken, Object.keys(extra)[0])
    }
    const fine = await flowWith('unsigned', 'x', { protocol: 'openid4vp-v1-unsigned', data: params })
    await fine.expectProtected()
    const mislabelled = await flowWith('unsigned', 'x', { protocol: 'openid4vp-v1-signed', data: params })
    await assert.rejects(mislabelled.expectProtected(), /protocol openid4vp-v1-unsigned/)
  })

  test('multisigned: client_id in the payload, an unprotected header, one signature or two of one prefix fail', async () => {
    const a = signer()
    const b = signer()
    const claims = { expected_origins: [RP_ORIGIN], ...params }
    const jws = (payload: Record<string, unknown>, signers = [a, b]) =>
      signGeneralJws(
        payload,
        signers.map((s) => ({
          alg: 'EdDSA' as const,
          privateKey: s.privateKey,
          header: { kid: s.key.kid, client_id: s.clientId },
        })),
      )
    const unprotected = jws(claims)
    ;(unprotected.signatures[1] as { header?: unknown }).header = { client_id: b.clientId }
    const cases: [string, unknown, RegExp][] = [
      ['client_id in the payload', jws({ ...claims, client_id: a.clientId }), /no client_id/],
      ['an unprotected header', unprotected, /no unprotected header/],
      ['one signature', jws(claims, [a]), /two at least/],
      ['two signatures of one prefix', jws(claims), /one signature per client identifier prefix/],
    ]
    for (const [what, request, message] of cases) {
      const flow = await flowWith('multisigned', a.clientId, {
        protocol: 'openid4vp-v1-multisigned',
        data: { request },
      })
      await assert.rejects(
        flow.expectProtected(),
        (e: Error) => e instanceof Broken && message.test(e.message),
        what,
      )
    }
  })
})
