/**
 * Rows read on hot paths and changed rarely (API keys, status list versions), kept in memory only while
 * this process is the database's one writer (not in a cluster, whose workers would not see each other's
 * changes, and the service promises that a revocation takes effect at once). Every change goes through
 * `changed()`, which forgets before and after the write, and a read that raced a change never caches what
 * it read (the generation moved while it read). Values are frozen: callers share them.
 */
export class ExclusiveCache<V extends object> {
  private readonly entries = new Map<string, V>()
  private generation = 0
  constructor(
    readonly enabled: boolean,
    private readonly size = 4096,
  ) {}

  async read(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.entries.get(key)
    if (cached) return cached
    const generation = this.generation
    const value = await load()
    if (value && this.enabled && generation === this.generation) {
      if (this.entries.size >= this.size) this.entries.delete(this.entries.keys().next().value as string)
      this.entries.set(key, Object.freeze(value))
    }
    return value
  }

  /** Runs a write of the cached rows. They change rarely (portal, boot, a status change): all are forgotten. */
  async changed<T>(write: () => Promise<T>): Promise<T> {
    this.forget()
    try {
      return await write()
    } finally {
      this.forget()
    }
  }

  private forget() {
    this.generation++
    this.entries.clear()
  }
}
