import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { deliveryHeaders, signatureHeader } from '../../../src/service/webhooks/signing.ts'

// Our signatures are computed with node:crypto (issue 20); the `standardwebhooks` package, written by the
// specification's authors, is the independent judge: its verify() must accept every header we send, and its
// own sign() must produce the same bytes.

const secret = () => `whsec_${randomBytes(32).toString('base64')}`

describe('webhook signatures (Standard Webhooks, signed with node:crypto)', () => {
  it('equal the standardwebhooks reference signature, byte for byte, over varied ids, times and bodies', () => {
    const bodies = ['{}', '{"id":"p-1","status":"SUCCESS"}', JSON.stringify({ name: 'Zoë 🎓 – ✓', n: 1e21 })]
    for (let i = 0; i < 30; i++) {
      const key = secret()
      const id = `msg_${randomBytes(6).toString('hex')}`
      const at = 1_700_000_000_000 + i * 12_345_678 + 999 // milliseconds: the header carries whole seconds
      const body = bodies[i % bodies.length] as string
      assert.equal(signatureHeader(id, at, body, [key]), new Webhook(key).sign(id, new Date(at), body))
    }
  })

  it('are accepted by the reference verify(), for every secret of a rotation, and refused for a changed body', () => {
    const [current, previous] = [secret(), secret()]
    const now = Date.now()
    const event = { id: 'evt-1', type: 'verification.verified', body: '{"id":"s-1","status":"SUCCESS"}' }
    const headers = deliveryHeaders(event, now, [current, previous])
    assert.equal(headers['webhook-signature']?.split(' ').length, 2)
    assert.equal(headers['webhook-timestamp'], String(Math.floor(now / 1000)))
    for (const key of [current, previous]) {
      assert.deepEqual(new Webhook(key).verify(event.body, headers), JSON.parse(event.body))
    }
    assert.throws(
      () => new Webhook(current).verify('{"id":"s-1","status":"REJECT"}', headers),
      WebhookVerificationError,
    )
    assert.throws(() => new Webhook(secret()).verify(event.body, headers), WebhookVerificationError)
  })

  it('refuse a secret that is not base64 after whsec_, naming the rule', () => {
    assert.throws(() => signatureHeader('id', Date.now(), '{}', ['whsec_not*base64']), /base64 after whsec_/)
  })
})
