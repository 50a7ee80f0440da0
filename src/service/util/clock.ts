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

/**
 * Real time plus an offset that can be moved forward and reset: the conformance harness's clock. A
 * wallet signs with real time, so the service's clock must keep running; a scenario that moved it
 * resets it afterwards so later scenarios see real time again.
 */
export class ShiftedClock implements Clock {
  private offset = 0
  now() {
    return Date.now() + this.offset
  }
  advance(ms: number) {
    this.offset += ms
  }
  get shifted() {
    return this.offset !== 0
  }
  reset() {
    this.offset = 0
  }
}

/** ISO 8601 UTC with milliseconds, the interface's timestamp format: 2026-11-22T10:15:00.123Z. */
export const isoTime = (ms: number): string => new Date(ms).toISOString()
