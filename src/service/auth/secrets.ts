import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

// API key secrets are machine-generated with 256 bits of entropy (config secrets must be at least
// 24 characters), so a salted HMAC-SHA-256 is enough; a slow password hash would only cap login throughput.

const SCHEME = 'hmac-sha256'

export function generateSecret(): string {
  return randomBytes(32).toString('base64url')
}

export function hashSecret(secret: string, salt = randomBytes(16)): string {
  const digest = createHmac('sha256', salt).update(secret, 'utf8').digest()
  return `${SCHEME}$${salt.toString('base64url')}$${digest.toString('base64url')}`
}

export function verifySecret(secret: string, stored: string): boolean {
  const [scheme, saltText, digestText] = stored.split('$')
  if (scheme !== SCHEME || saltText === undefined || digestText === undefined) return false
  const expected = Buffer.from(digestText, 'base64url')
  const actual = createHmac('sha256', Buffer.from(saltText, 'base64url')).update(secret, 'utf8').digest()
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}

/** Checked against when the key id is unknown, so both failures cost the same time. */
export const DUMMY_HASH = hashSecret(generateSecret())
