import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type GrantFacts, processState, transition } from '../../src/service/issuance/lifecycle.ts'
import type { ProcessRecord, SessionRecord } from '../../src/service/store/index.ts'
import { sessionState, transition as sessionTransition } from '../../src/service/verification/lifecycle.ts'

// The lifecycles are pure: every rule is checked here without a store, a clock or HTTP.

const NOW = 1_700_000_000_000
// Any submitted credential: the lifecycle only asks whether something was submitted.
const SUBMITTED: ProcessRecord['submitted'] = [
  { '@context': [], id: 'urn:x', type: [], credentialSubject: {} },
]
const process = (over: Partial<ProcessRecord> = {}): ProcessRecord => ({
  id: 'p1',
  tenantId: 't',
  templateId: 'degree',
  type: 'OIDC4VCI_PRE_AUTHORIZED',
  status: 'PENDING',
  data: null,
  validator: null,
  submitted: null,
  rejectedReason: null,
  createdByKey: 'k',
  createdAt: NOW - 1000,
  updatedAt: NOW - 1000,
  ...over,
})
const live: GrantFacts = { codeState: 'live', codeExpiresAt: NOW + 1000, holderDid: null }
const redeemed: GrantFacts = { codeState: 'used', codeExpiresAt: NOW - 1, holderDid: null }
const bound: GrantFacts = { ...redeemed, holderDid: 'did:key:z6Mk' }

describe('issuance lifecycle', () => {
  test('an offer unredeemed past its code lifetime is EXPIRED; redeemed or closed ones are not', () => {
    assert.equal(processState(process(), live, NOW), 'PENDING')
    assert.equal(processState(process(), live, NOW + 1000), 'EXPIRED')
    assert.equal(processState(process(), redeemed, NOW + 1000), 'PENDING')
    assert.equal(processState(process({ status: 'ISSUED' }), live, NOW + 1000), 'ISSUED')
    assert.equal(processState(process(), null, NOW + 1e9), 'PENDING')
  })

  test('retrieve_offer: PENDING only; a lapsed offer is refused as expired, a closed one as closed', () => {
    assert.deepEqual(transition(process(), live, 'retrieve_offer', NOW), {
      ok: true,
      status: 'PENDING',
      step: 'offer_retrieved',
    })
    const lapsed = transition(process(), live, 'retrieve_offer', NOW + 1000)
    assert.equal(lapsed.ok || lapsed.refusal, 'expired')
    const issued = transition(process({ status: 'ISSUED' }), redeemed, 'retrieve_offer', NOW)
    assert.equal(issued.ok || issued.refusal, 'not_pending')
    const rejected = transition(process({ status: 'REJECTED' }), live, 'retrieve_offer', NOW)
    assert.equal(rejected.ok || rejected.refusal, 'rejected')
  })

  test('submit and request_credential: whichever comes second issues', () => {
    assert.deepEqual(transition(process(), redeemed, 'submit', NOW), {
      ok: true,
      status: 'PENDING',
      step: 'submitted',
    })
    assert.deepEqual(transition(process(), bound, 'submit', NOW), {
      ok: true,
      status: 'ISSUED',
      step: 'issued',
    })
    assert.deepEqual(transition(process(), redeemed, 'request_credential', NOW), {
      ok: true,
      status: 'PENDING',
      step: 'holder_bound',
    })
    assert.deepEqual(transition(process({ submitted: SUBMITTED }), redeemed, 'request_credential', NOW), {
      ok: true,
      status: 'ISSUED',
      step: 'issued',
    })
  })

  test('refusals carry the reason each API names in its own error family', () => {
    const cases: [Partial<ProcessRecord>, Parameters<typeof transition>[2], string][] = [
      [{ submitted: SUBMITTED }, 'submit', 'already_submitted'],
      [{ status: 'ISSUED' }, 'submit', 'already_submitted'],
      [{ status: 'REJECTED' }, 'submit', 'not_pending'],
      [{ status: 'REJECTED' }, 'reject', 'not_pending'],
      [{ status: 'ISSUED' }, 'reject', 'not_pending'],
      [{ status: 'REJECTED' }, 'request_credential', 'rejected'],
      [{ status: 'ISSUED' }, 'request_credential', 'not_pending'], // no holder bound: never asked
      [{}, 'retrieve_credential', 'pending'],
      [{ status: 'REJECTED' }, 'retrieve_credential', 'rejected'],
      [{}, 'change_status', 'not_issued'],
      [{ status: 'REJECTED' }, 'change_status', 'not_issued'],
    ]
    for (const [over, event, refusal] of cases) {
      const outcome = transition(process(over), redeemed, event, NOW)
      assert.equal(outcome.ok, false, `${event} on ${JSON.stringify(over)}`)
      if (!outcome.ok) {
        assert.equal(outcome.refusal, refusal, `${event} on ${JSON.stringify(over)}`)
        assert.match(outcome.message, /p1/, 'the message names the process')
      }
    }
  })

  test('request_credential again on one access token (OpenID4VCI 1.0 §14.3): a further instance once ISSUED, the process unchanged; pending before; refused once REJECTED', () => {
    // Until issue 34 an ISSUED process refused every credential request (not_pending).
    assert.deepEqual(
      transition(process({ status: 'ISSUED', submitted: SUBMITTED }), bound, 'request_credential', NOW),
      {
        ok: true,
        status: 'ISSUED',
        step: 'credential_retrieved',
      },
    )
    const waiting = transition(process(), bound, 'request_credential', NOW)
    assert.equal(waiting.ok || waiting.refusal, 'pending')
    const rejected = transition(process({ status: 'REJECTED' }), bound, 'request_credential', NOW)
    assert.equal(rejected.ok || rejected.refusal, 'rejected')
  })

  test('the relying party may still submit to an offer that lapsed (it knows three statuses)', () => {
    assert.equal(transition(process(), live, 'submit', NOW + 1e6).ok, true)
    assert.deepEqual(transition(process(), live, 'reject', NOW + 1e6), {
      ok: true,
      status: 'REJECTED',
      step: 'rejected',
    })
  })

  test('issued credentials are retrieved and change status; the status stays ISSUED', () => {
    const issued = process({ status: 'ISSUED' })
    assert.deepEqual(transition(issued, bound, 'retrieve_credential', NOW), {
      ok: true,
      status: 'ISSUED',
      step: 'credential_retrieved',
    })
    assert.deepEqual(transition(issued, bound, 'change_status', NOW), {
      ok: true,
      status: 'ISSUED',
      step: null,
    })
  })
})

describe('verification lifecycle', () => {
  const session = (over: Partial<SessionRecord> = {}) =>
    ({ id: 's1', status: 'PENDING', expiresAt: NOW + 1000, ...over }) as SessionRecord

  test('EXPIRED is judged on the clock for a PENDING session only', () => {
    assert.equal(sessionState(session(), NOW), 'PENDING')
    assert.equal(sessionState(session(), NOW + 1000), 'EXPIRED')
    assert.equal(sessionState(session({ status: 'VERIFIED' }), NOW + 1000), 'VERIFIED')
  })

  test('a live session takes every step; an expired or closed one refuses each with its reason', () => {
    assert.deepEqual(sessionTransition(session(), 'retrieve_request', NOW), {
      ok: true,
      status: 'PENDING',
      step: 'request_retrieved',
    })
    assert.deepEqual(sessionTransition(session(), 'verify', NOW), {
      ok: true,
      status: 'VERIFIED',
      step: 'verified',
    })
    assert.deepEqual(sessionTransition(session(), 'reject', NOW), {
      ok: true,
      status: 'REJECTED',
      step: 'rejected',
    })
    for (const event of ['retrieve_request', 'verify', 'reject'] as const) {
      const expired = sessionTransition(session(), event, NOW + 1000)
      assert.equal(expired.ok || expired.refusal, 'expired')
      const closed = sessionTransition(session({ status: 'REJECTED' }), event, NOW)
      assert.equal(closed.ok || closed.refusal, 'closed')
    }
  })
})
