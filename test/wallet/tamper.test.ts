// The tamper table (src/wallet/tamper.ts) against the lists of src/wallet/misbehaviour.ts: the lists say
// what each misbehaviour means, the table is where it acts; they must not drift apart.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  NONCE_LESS_PRESENTATION_MISBEHAVIOURS,
  PRESENTATION_MISBEHAVIOURS,
} from '../../src/wallet/misbehaviour.ts'
import { tamperOf } from '../../src/wallet/tamper.ts'

describe('the tamper table and the misbehaviour lists', () => {
  test("exactly the nonce-less misbehaviours keep the request's nonce from being remembered (OpenID4VP 1.0 §14.1)", () => {
    const forgetting = PRESENTATION_MISBEHAVIOURS.filter((m) => tamperOf([m]).acts('response.forgetNonce'))
    assert.deepEqual([...forgetting].sort(), [...NONCE_LESS_PRESENTATION_MISBEHAVIOURS].sort())
  })

  test('a correct wallet tampers with nothing', () => {
    assert.equal(tamperOf([]).acts('response.forgetNonce'), false)
    assert.deepEqual(tamperOf([]).apply('vp_token', { a: ['x'] }), { a: ['x'] })
  })
})
