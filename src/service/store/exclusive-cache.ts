/** A cache of rows read on hot paths and changed rarely (API keys, status-list versions). */
export interface RowCache<V extends object> {
  read(key: string, load: () => Promise<V | undefined>): Promise<V | undefined>
  /** Runs a write of the cached rows; every copy is forgotten before it answers. */
  changed<T>(write: () => Promise<T>): Promise<T>
}

/** How the instances sharing a database keep their caches of its rows coherent (store/postgres-feed.ts). */
export interface CacheCoherence {
  /** This instance hears every change another announces (else nothing may be cached). */
  readonly coherent: boolean
  /** Called when another instance changed rows of `scope`, or when this one may have missed a change. */
  onForget(scope: string, forget: () => void): () => void
  /** Announces a committed change of `scope`'s rows; resolves once no other instance uses an older copy. */
  changed(scope: string): Promise<void>
}

/**
 * A cache of rows that every change must reach. Every change goes through `changed()`, which forgets before
 * and after the write, and a read that raced a change never caches what it read (the generation moved while
 * it read); values are frozen (callers share them). For instances sharing a PostgreSQL database (issue 38)
 * it is kept coherent over the change feed: a write answers only after `coherence.changed()` resolved, i.e. once every other instance has
 * forgotten its copies, or once a copy read before the write has outlived `lifetimeMs` (an instance that
 * did not confirm): so a revocation through one instance is in force on every instance by the time it
 * answers, as when every request read the row. Nothing is cached while this instance is not coherent.
 */
export class SharedCache<V extends object> implements RowCache<V> {
  private readonly entries = new Map<string, { value: V; readAt: number }>()
  private generation = 0
  constructor(
    private readonly coherence: CacheCoherence,
    private readonly scope: string,
    private readonly lifetimeMs: number,
    private readonly size = 4096,
  ) {
    coherence.onForget(scope, () => this.forget())
  }

  async read(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.entries.get(key)
    // Its age counts from before its read began: the bound a writer that got no confirmation relies on.
    if (cached && this.coherence.coherent && performance.now() - cached.readAt < this.lifetimeMs)
      return cached.value
    const generation = this.generation
    const readAt = performance.now()
    const value = await load()
    if (value && this.coherence.coherent && generation === this.generation) {
      if (this.entries.size >= this.size) this.entries.delete(this.entries.keys().next().value as string)
      this.entries.set(key, { value: Object.freeze(value), readAt })
    }
    return value
  }

  async changed<T>(write: () => Promise<T>): Promise<T> {
    this.forget()
    try {
      return await write()
    } finally {
      this.forget()
      await this.coherence.changed(this.scope)
    }
  }

  /**
   * The same cache for the repositories of a transaction, whose write is not committed when it returns:
   * `changing` tells the transaction's owner, who calls committed() once the commit has answered.
   */
  inTransaction(changing: () => void): RowCache<V> {
    return {
      read: (key, load) => this.read(key, load),
      changed: async (write) => {
        this.forget()
        changing()
        try {
          return await write()
        } finally {
          this.forget()
        }
      },
    }
  }

  /** After the commit of a transaction that changed rows: copies read meanwhile go, here and everywhere. */
  async committed(): Promise<void> {
    this.forget()
    await this.coherence.changed(this.scope)
  }

  private forget() {
    this.generation++
    this.entries.clear()
  }
}

/** One process owns the database: every change passes through it. */
const ALONE: CacheCoherence = { coherent: true, onForget: () => () => {}, changed: async () => {} }
/** Caching is off (a cluster's workers would not see each other's changes). */
const OFF: CacheCoherence = { coherent: false, onForget: () => () => {}, changed: async () => {} }

/**
 * Rows read on hot paths and changed rarely (API keys, status list versions), kept in memory only while
 * this process is the database's one writer (not in a cluster, whose workers would not see each other's
 * changes, and the service promises that a revocation takes effect at once). Every change goes through
 * `changed()`, which forgets before and after the write, and a read that raced a change never caches what
 * it read (the generation moved while it read). Values are frozen: callers share them. A SharedCache whose
 * coherence is this process alone: nothing to announce, no lifetime.
 */
export class ExclusiveCache<V extends object> extends SharedCache<V> {
  constructor(
    readonly enabled: boolean,
    size = 4096,
  ) {
    super(enabled ? ALONE : OFF, 'exclusive', Number.POSITIVE_INFINITY, size)
  }
}
