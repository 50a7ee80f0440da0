import { Webhook } from 'standardwebhooks'

// Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
// `${webhook-id}.${webhook-timestamp}.${body}` with the base64 secret after `whsec_`.

/** The `webhook-signature` value: `v1,<base64>` per secret, space-separated, current secret first. */
export function signatureHeader(id: string, timestampMs: number, body: string, secrets: string[]): string {
  const at = new Date(timestampMs)
  return secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ')
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
