import { webhookSignature } from '../../shared/webhook-signature.ts'

// Standard Webhooks signatures (https://www.standardwebhooks.com) on deliveries; the HMAC itself is
// src/shared/webhook-signature.ts, shared with the harness that checks them.

/** The `webhook-signature` value: `v1,<base64>` per secret, space-separated, current secret first. */
export function signatureHeader(id: string, timestampMs: number, body: string, secrets: string[]): string {
  const timestamp = Math.floor(timestampMs / 1000)
  return secrets.map((secret) => webhookSignature(secret, id, timestamp, body)).join(' ')
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
