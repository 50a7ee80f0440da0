// Bounds on what the service says back (issue 30): a wallet's vp_token with 9,000 keys once produced a
// 521 KB error_description, stored with the session and sent by webhook. Every message built from a
// caller's input goes out through these, so an attacker's size never becomes the answer's size.

export const ECHO_LIMITS = Object.freeze({
  /** One failure or warning of a check (a message may quote a claim, a path, a nonce). */
  maxMessage: 500,
  /** Failures listed per check, and warnings per run; the rest are counted. */
  maxItems: 20,
  /** A wallet-facing error_description (RFC 6749 §5.2: human-readable, for the developer). */
  maxDescription: 2000,
})

/** `text`, cut to `max` characters with an ellipsis. */
export function clip(text: string, max: number = ECHO_LIMITS.maxMessage): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/** The first `max` items, each clipped, and how many more there were. */
export function boundedList(items: readonly string[], max: number = ECHO_LIMITS.maxItems): string[] {
  const shown = items.slice(0, max).map((item) => clip(item))
  if (items.length > max) shown.push(`… and ${items.length - max} more`)
  return shown
}
