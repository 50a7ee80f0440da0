import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

// c_nonce values (OpenID4VCI 1.0 §7 Nonce Endpoint; draft 15 §7.3 in the token answer) are stateless: their
// expiry and 16 random bytes, MACed together with the tenant. Handing one out, which anyone may ask for
// anonymously, writes nothing (issue 19: each used to cost a durable row); the first use is recorded until
// the expiry (NonceRepository.use), which keeps every nonce single use (§8.2: a fresh nonce per proof).

const BODY = 8 + 16
const MAC = 16

export class CNonces {
  constructor(private readonly secret: Buffer) {}

  issue(tenantId: string, expiresAt: number): string {
    const body = Buffer.alloc(BODY)
    body.writeBigUInt64BE(BigInt(expiresAt))
    randomBytes(16).copy(body, 8)
    return Buffer.concat([body, this.mac(tenantId, body)]).toString('base64url')
  }

  /** The expiry of a nonce this service issued to `tenantId`, or undefined for anything else. */
  expiresAt(value: string, tenantId: string): number | undefined {
    const raw = Buffer.from(value, 'base64url')
    // Only the canonical spelling: another encoding of the same bytes must not pass as an unused nonce.
    if (raw.length !== BODY + MAC || raw.toString('base64url') !== value) return undefined
    const body = raw.subarray(0, BODY)
    if (!timingSafeEqual(raw.subarray(BODY), this.mac(tenantId, body))) return undefined
    return Number(body.readBigUInt64BE(0))
  }

  private mac(tenantId: string, body: Buffer): Buffer {
    return createHmac('sha256', this.secret)
      .update(tenantId)
      .update('\0')
      .update(body)
      .digest()
      .subarray(0, MAC)
  }
}
