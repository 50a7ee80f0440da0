// The pure pieces of the QR page's Digital Credentials API use (src/web/flow-state.ts): what the page accepts of
// a backend's DC API offer and of a request entry or a wallet's answer, and when it offers the button.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { DC_API_PROTOCOLS } from '../../src/shared/dc-api.ts'
import {
  asDcApiMessage,
  asDcApiOffer,
  DC_API_LIMITS,
  DC_API_PROTOCOL_NAMES,
  type DcApiOffer,
  dcApiUsable,
} from '../../src/web/flow-state.ts'

const ORIGIN = 'http://127.0.0.1:8080'
const signed: DcApiOffer = { protocol: 'openid4vp-v1-signed', expectedOrigins: [ORIGIN] }

describe('flow-state: the Digital Credentials API', () => {
  test("the page's protocol list is Appendix A.1's, as src/shared/dc-api.ts has it", () => {
    assert.deepEqual([...DC_API_PROTOCOL_NAMES].sort(), Object.values(DC_API_PROTOCOLS).sort())
  })

  test('asDcApiOffer: a known protocol and a bounded list of origins, nothing else', () => {
    assert.deepEqual(asDcApiOffer({ ...signed, request: 'http://x/y', key: 'k' }), signed)
    assert.deepEqual(asDcApiOffer({ protocol: 'openid4vp-v1-unsigned', expectedOrigins: [] }), {
      protocol: 'openid4vp-v1-unsigned',
      expectedOrigins: [],
    })
    for (const bad of [
      undefined,
      null,
      'openid4vp-v1-signed',
      { protocol: 'openid4vp-v2-signed', expectedOrigins: [] },
      { protocol: 'openid4vp', expectedOrigins: [] },
      { protocol: 'openid4vp-v1-signed' },
      { protocol: 'openid4vp-v1-signed', expectedOrigins: [1] },
      { protocol: 'openid4vp-v1-signed', expectedOrigins: [''] },
      { protocol: 'openid4vp-v1-signed', expectedOrigins: ['x'.repeat(DC_API_LIMITS.origin + 1)] },
      { protocol: 'openid4vp-v1-signed', expectedOrigins: Array(DC_API_LIMITS.origins + 1).fill(ORIGIN) },
    ]) {
      assert.equal(asDcApiOffer(bad), undefined, JSON.stringify(bad))
    }
  })

  test('asDcApiMessage: protocol and a JSON object as data; reads getters of a prototype (a DigitalCredential)', () => {
    const entry = { protocol: 'openid4vp-v1-signed', data: { request: 'a.b.c' } }
    assert.deepEqual(asDcApiMessage(entry), entry)
    assert.deepEqual(asDcApiMessage(entry, 'openid4vp-v1-signed'), entry)
    assert.equal(asDcApiMessage(entry, 'openid4vp-v1-unsigned'), undefined, 'another protocol than offered')
    for (const bad of [
      null,
      'x',
      { protocol: 'p' },
      { protocol: 'p', data: null },
      { protocol: 'p', data: [] },
      { protocol: 'p', data: 'vp' },
      { protocol: '', data: {} },
      { protocol: 'p'.repeat(DC_API_LIMITS.protocol + 1), data: {} },
      { protocol: 1, data: {} },
    ]) {
      assert.equal(asDcApiMessage(bad), undefined, JSON.stringify(bad))
    }
    class DigitalCredentialLike {
      get protocol() {
        return 'openid4vp-v1-signed'
      }
      get data() {
        return { vp_token: { pid: ['x'] } }
      }
    }
    assert.deepEqual(asDcApiMessage(new DigitalCredentialLike()), {
      protocol: 'openid4vp-v1-signed',
      data: { vp_token: { pid: ['x'] } },
    })
  })

  test('dcApiUsable: an offer, the API, an allowed protocol and an expected origin', () => {
    const env = { available: true, origin: ORIGIN }
    assert.equal(dcApiUsable(signed, env), true)
    assert.equal(dcApiUsable(undefined, env), false, 'no DC API request')
    assert.equal(dcApiUsable(signed, { ...env, available: false }), false, 'no API in this browser')
    assert.equal(dcApiUsable(signed, { ...env, origin: 'http://localhost:8080' }), false, 'a foreign origin')
    assert.equal(dcApiUsable({ ...signed, expectedOrigins: [] }, { ...env, origin: 'https://x' }), true)
    assert.equal(dcApiUsable(signed, { ...env, allowsProtocol: (p) => p !== signed.protocol }), false)
    assert.equal(dcApiUsable(signed, { ...env, allowsProtocol: () => true }), true)
    const throwing = () => {
      throw new TypeError('not implemented')
    }
    assert.equal(
      dcApiUsable(signed, { ...env, allowsProtocol: throwing }),
      true,
      'a broken check is no refusal',
    )
  })
})
