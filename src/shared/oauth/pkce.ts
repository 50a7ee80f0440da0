import { createHash, randomBytes } from 'node:crypto'

// PKCE (RFC 7636) with S256 only: HAIP 1.0 and the OAuth 2.0 Security BCP (RFC 9700 §2.1.1) rule out `plain`.

/** RFC 7636 §4.1: 43 to 128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~". */
export const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

/** RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))). */
export const s256 = (verifier: string): string =>
  createHash('sha256').update(verifier, 'ascii').digest('base64url')

/** A fresh verifier (32 random bytes, 43 characters, §7.1) and its S256 challenge. */
export function newPkce(): { verifier: string; challenge: string; method: 'S256' } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: s256(verifier), method: 'S256' }
}
