// What a misbehaving wallet can do wrong. Each misbehaviour changes exactly one thing of an otherwise correct
// request; src/wallet/README.md has the table, test/wallet-unit.test.ts proves each one.

export const MISBEHAVIOURS = [
  'wrong-nonce',
  'replayed-nonce',
  'bad-signature',
  'wrong-aud',
  'expired-iat',
  'replayed-code',
  'wrong-tx-code',
  'foreign-kid',
  'missing-tx-code',
  'jwk-with-private-key',
  'wrong-typ',
  'alg-none',
] as const

export type Misbehaviour = (typeof MISBEHAVIOURS)[number]

/** Misbehaviours of the token request. */
export const TOKEN_MISBEHAVIOURS: readonly Misbehaviour[] = [
  'replayed-code',
  'wrong-tx-code',
  'missing-tx-code',
]
/** Misbehaviours a `jwt` proof can show but a `di_vp` proof cannot (it has no JOSE header). */
export const JWT_ONLY_MISBEHAVIOURS: readonly Misbehaviour[] = [
  'jwk-with-private-key',
  'wrong-typ',
  'alg-none',
]

/** The `aud` (jwt) or `domain` (di_vp) of the 'wrong-aud' misbehaviour. */
export const WRONG_AUDIENCE = 'https://wrong-audience.invalid'
/** How far in the past 'expired-iat' puts `iat` (jwt) or `created` (di_vp). */
export const EXPIRED_IAT_SECONDS = 3600

export function isMisbehaviour(value: unknown): value is Misbehaviour {
  return typeof value === 'string' && (MISBEHAVIOURS as readonly string[]).includes(value)
}

export function assertMisbehaviours(values: readonly unknown[] | undefined): readonly Misbehaviour[] {
  const list = values ?? []
  for (const value of list) {
    if (!isMisbehaviour(value)) {
      throw new TypeError(`unknown misbehaviour ${JSON.stringify(value)}; known: ${MISBEHAVIOURS.join(', ')}`)
    }
  }
  return list as readonly Misbehaviour[]
}
