import { createHmac } from 'node:crypto'

// Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
// `${webhook-id}.${webhook-timestamp}.${body}` with the base64 secret after `whsec_`. Computed with
// node:crypto: the `standardwebhooks` package's own sign() hashes in JavaScript (fast-sha256) and decodes the
// secret on every call, ~2 % of a full flow's event loop with two deliveries (issue 20). Its verify() stays
// the independent check of these signatures in the tests (test/webhook-signing.test.ts).

const PREFIX = 'whsec_'
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/
/** Decoded secrets: a handful per tenant, kept so a delivery does not decode its secret again. */
const keys = new Map<string, Buffer>()
const MAX_KEYS = 1024

function keyOf(secret: string): Buffer {
  let key = keys.get(secret)
  if (key) return key
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret
  // The configuration schema already insists on base64; a secret that is not is never signed with.
  if (!BASE64.test(encoded)) throw new Error('a webhook secret must be base64 after whsec_')
  key = Buffer.from(encoded, 'base64')
  if (keys.size >= MAX_KEYS) keys.clear()
  keys.set(secret, key)
  return key
}

/** The `webhook-signature` value: `v1,<base64>` per secret, space-separated, current secret first. */
export function signatureHeader(id: string, timestampMs: number, body: string, secrets: string[]): string {
  const signed = `${id}.${Math.floor(timestampMs / 1000)}.${body}`
  return secrets
    .map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`)
    .join(' ')
}

/** The headers of one delivery attempt. The timestamp is the attempt's, so retries get fresh ones. */
export function deliveryHeaders(
  event: { id: string; type: string; body: string },
  timestampMs: number,
  secrets: string[],
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'vc-harness-webhooks/1',
    'webhook-id': event.id,
    'webhook-timestamp': String(Math.floor(timestampMs / 1000)),
    'webhook-signature': signatureHeader(event.id, timestampMs, event.body, secrets),
    // Not part of the body (section 6 fixes its fields): receivers may route on it.
    'webhook-event': event.type,
  }
}
