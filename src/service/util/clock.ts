/** Injected time source, so expiry is tested by moving the clock instead of sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock tests and the conformance harness move by hand. */
export class ManualClock implements Clock {
  constructor(private current = Date.now()) {}
  now() {
    return this.current
  }
  advance(ms: number) {
    this.current += ms
  }
}

/** ISO 8601 UTC with milliseconds, the interface's timestamp format: 2026-11-22T10:15:00.123Z. */
export const isoTime = (ms: number): string => new Date(ms).toISOString()
