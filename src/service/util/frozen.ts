// Records shared between requests (a cached template, a stored session's definition) are frozen all the
// way down instead of copied per read: a caller that tried to change one would throw in strict mode
// rather than change what the next request sees, and a stable identity lets per-template work be
// memoised by object (WeakMap) rather than by re-serialising it.

export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value
  Object.freeze(value)
  for (const member of Object.values(value as object)) deepFreeze(member)
  return value
}

/**
 * Parses JSON texts that repeat (a template's definition stored in each of its sessions) once, answering
 * the same frozen value for the same text while it is among the `size` most recently used.
 */
export class JsonInterner {
  private readonly parsed = new Map<string, unknown>()
  constructor(private readonly size = 256) {}
  parse<T>(text: string): T {
    let value = this.parsed.get(text)
    if (value === undefined) {
      value = deepFreeze(JSON.parse(text))
      if (this.parsed.size >= this.size) this.parsed.delete(this.parsed.keys().next().value as string)
    } else {
      this.parsed.delete(text) // re-inserted below: most recently used last
    }
    this.parsed.set(text, value)
    return value as T
  }
}
