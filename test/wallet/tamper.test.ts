// The tamper table (src/wallet/tamper.ts) against the lists of src/wallet/misbehaviour.ts: the lists say
// what each misbehaviour means, the table is where it acts; they must not drift apart.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  CONFLICTING_MISBEHAVIOURS,
  JWT_ONLY_MISBEHAVIOURS,
  KB_JWT_MISBEHAVIOURS,
  LEAVE_OUT_MISBEHAVIOURS,
  MISBEHAVIOURS,
  NONCE_LESS_PRESENTATION_MISBEHAVIOURS,
  PRESENTATION_MISBEHAVIOURS,
  PROOF_MISBEHAVIOURS,
  SD_JWT_PRESENTATION_MISBEHAVIOURS,
} from '../../src/wallet/misbehaviour.ts'
import { TAMPER, type TamperPoint, tamperOf } from '../../src/wallet/tamper.ts'

const sorted = (list: readonly string[]) => [...list].sort()
const actingAt = <M extends string>(list: readonly M[], points: readonly TamperPoint[]) =>
  list.filter((m) => points.some((point) => tamperOf([m as never]).acts(point)))

describe('the tamper table and the misbehaviour lists', () => {
  test('every misbehaviour has its row, and every row is a misbehaviour', () => {
    assert.deepEqual(sorted(Object.keys(TAMPER)), sorted([...MISBEHAVIOURS, ...PRESENTATION_MISBEHAVIOURS]))
  })

  test("exactly the nonce-less misbehaviours keep the request's nonce from being remembered (OpenID4VP 1.0 §14.1)", () => {
    const forgetting = PRESENTATION_MISBEHAVIOURS.filter((m) => tamperOf([m]).acts('response.forgetNonce'))
    assert.deepEqual([...forgetting].sort(), [...NONCE_LESS_PRESENTATION_MISBEHAVIOURS].sort())
  })

  test("the proof misbehaviours are those acting on the key proof, and legacy-proof (which moves it into 'proof')", () => {
    const proofPoints: TamperPoint[] = [
      'nonce.choose',
      'proof.nonce',
      'proof.privateJwk',
      'proof.header',
      'proof.payload',
      'proof.sign',
      'di_vp.signer',
      'di_vp.options',
      'di_vp.signed',
    ]
    assert.deepEqual(
      sorted(actingAt(MISBEHAVIOURS, proofPoints)),
      sorted(PROOF_MISBEHAVIOURS.filter((m) => m !== 'legacy-proof')),
    )
    for (const m of JWT_ONLY_MISBEHAVIOURS) assert.ok(PROOF_MISBEHAVIOURS.includes(m), m)
  })

  test('the KB-JWT misbehaviours are those acting on the KB-JWT, and all are SD-JWT VC ones', () => {
    const kbPoints: TamperPoint[] = ['kb.hashed', 'kb.payload', 'kb.signer']
    assert.deepEqual(sorted(actingAt(PRESENTATION_MISBEHAVIOURS, kbPoints)), sorted(KB_JWT_MISBEHAVIOURS))
    for (const m of KB_JWT_MISBEHAVIOURS) assert.ok(SD_JWT_PRESENTATION_MISBEHAVIOURS.includes(m), m)
  })

  test('a conflict group lies within one flow and names each misbehaviour once', () => {
    const groups = [
      ...CONFLICTING_MISBEHAVIOURS.map((g) => g.misbehaviours),
      ...LEAVE_OUT_MISBEHAVIOURS.map((g) => [g.leavesOut, ...g.changing]),
    ]
    for (const misbehaviours of groups) {
      assert.equal(new Set(misbehaviours).size, misbehaviours.length, misbehaviours.join(', '))
      const issuance = misbehaviours.filter((m) => (MISBEHAVIOURS as readonly string[]).includes(m))
      assert.ok(issuance.length === 0 || issuance.length === misbehaviours.length, misbehaviours.join(', '))
    }
  })

  test('a correct wallet tampers with nothing', () => {
    assert.equal(tamperOf([]).acts('response.forgetNonce'), false)
    assert.deepEqual(tamperOf([]).apply('vp_token', { a: ['x'] }), { a: ['x'] })
  })
})
