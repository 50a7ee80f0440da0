import type { SessionRecord } from '../store/index.ts'
import { sessionState } from '../verification/lifecycle.ts'

/** How long after its request object was handed out a session waits here for the wallet's response. */
export const HANDED_OUT_WINDOW_MS = 60_000
/** Sessions held at most (the oldest goes first): ~10 KB each, the request object's claims and JWT. */
export const HANDED_OUT_MAX = 1024

/**
 * Sessions whose request object this process has just handed out, for the wallet's response (issue 20: no
 * second read of the row). A response is judged on what the request carried (nonce, state, the definition
 * or DCQL query, the trust policy, the response key, the expiry), none of which changes once the session
 * exists. What can change, its state, is judged where the outcome is written: that write is conditional on
 * the session being PENDING and unexpired, and when it writes nothing (another response won, here or at
 * another instance) the session is read anew and answered as it is. A session is forgotten once its
 * response is recorded here, at its expiry, or after HANDED_OUT_WINDOW_MS: later responses read it.
 *
 * One difference remains, across instances only: a malformed second response (wrong state, no vp_token) to a
 * session another instance has already closed is answered 400 for what is wrong with it rather than 409.
 */
export class HandedOutSessions {
  private readonly sessions = new Map<string, { session: SessionRecord; until: number }>()

  constructor(
    private readonly windowMs = HANDED_OUT_WINDOW_MS,
    private readonly max = HANDED_OUT_MAX,
  ) {}

  /** A session whose request object was just handed out at `now`, if it is PENDING and unexpired. */
  remember(session: SessionRecord, now: number) {
    if (sessionState(session, now) !== 'PENDING') return
    this.sessions.delete(session.id) // re-inserted: the newest goes last
    if (this.sessions.size >= this.max) this.sessions.delete(this.sessions.keys().next().value as string)
    this.sessions.set(session.id, { session, until: now + this.windowMs })
  }

  /** The session as handed out, if it is this tenant's, unexpired and within the window; else undefined. */
  recall(tenantId: string, id: string, now: number): SessionRecord | undefined {
    const held = this.sessions.get(id)
    if (!held) return undefined
    // Expiry is the lifecycle's judgement (verification/lifecycle.ts), not a second copy of it here.
    if (now >= held.until || sessionState(held.session, now) !== 'PENDING') {
      this.sessions.delete(id)
      return undefined
    }
    return held.session.tenantId === tenantId ? held.session : undefined
  }

  forget(id: string) {
    this.sessions.delete(id)
  }

  get size() {
    return this.sessions.size
  }
}
