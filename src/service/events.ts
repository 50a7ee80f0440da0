import { EventEmitter } from 'node:events'
import type { IssuanceStep, VerificationStep } from '../shared/flow.ts'
import type { ProcessStatus, SessionStatus } from './store/index.ts'

/** State changes of issuance processes and verification sessions: webhooks, the QR page's stream and tests subscribe here. */
export interface ProcessChanged {
  kind: 'issuance'
  tenantId: string
  templateId: string
  processId: string
  status: ProcessStatus
  /** What happened, finer than the status: the wallet bound a holder, content arrived, … */
  step: IssuanceStep
  at: number
}

/** The webhook body of section 6. */
export interface WebhookBody {
  id: string
  subject: string
  status: 'SUCCESS' | 'REJECT'
  payload?: Record<string, unknown>
  verificationResult: { checks: string[]; warnings: string[]; errors: string[] }
}

/** State changes of verification sessions. */
export interface SessionChanged {
  kind: 'verification'
  tenantId: string
  templateId: string
  sessionId: string
  status: SessionStatus
  step: VerificationStep
  at: number
  /** Set on verified and rejected: what the template's webhook receives. */
  webhook?: WebhookBody
}

export type ServiceEvent = ProcessChanged | SessionChanged

export class ServiceEvents {
  private readonly emitter = new EventEmitter({ captureRejections: false })

  constructor() {
    // Subscribers are per open stream/receiver; the default cap of 10 would warn spuriously.
    this.emitter.setMaxListeners(0)
  }

  /** Emitted after the change is committed, never before. */
  emit(event: ServiceEvent): void {
    this.emitter.emit('event', event)
  }

  on(listener: (event: ServiceEvent) => void): () => void {
    // A failing subscriber must not turn a committed change into an error answer.
    const safe = (event: ServiceEvent) => {
      try {
        listener(event)
      } catch (error) {
        process.emitWarning(`event subscriber failed: ${(error as Error).message}`)
      }
    }
    this.emitter.on('event', safe)
    return () => this.emitter.off('event', safe)
  }
}
