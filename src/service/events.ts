import { EventEmitter } from 'node:events'
import type { ProcessStatus } from './store/index.ts'

/** State changes of issuance processes: webhooks, the QR page's stream and tests subscribe here. */
export interface ProcessChanged {
  kind: 'issuance'
  tenantId: string
  templateId: string
  processId: string
  status: ProcessStatus
  /** What happened, finer than the status: the wallet bound a holder, content arrived, … */
  step: 'offer_created' | 'holder_bound' | 'submitted' | 'issued' | 'rejected' | 'credential_retrieved'
  at: number
}

export class ServiceEvents {
  private readonly emitter = new EventEmitter({ captureRejections: false })

  constructor() {
    // Subscribers are per open stream/receiver; the default cap of 10 would warn spuriously.
    this.emitter.setMaxListeners(0)
  }

  /** Emitted after the change is committed, never before. */
  emit(event: ProcessChanged): void {
    this.emitter.emit('process', event)
  }

  on(listener: (event: ProcessChanged) => void): () => void {
    // A failing subscriber must not turn a committed change into an error answer.
    const safe = (event: ProcessChanged) => {
      try {
        listener(event)
      } catch (error) {
        process.emitWarning(`event subscriber failed: ${(error as Error).message}`)
      }
    }
    this.emitter.on('process', safe)
    return () => this.emitter.off('process', safe)
  }
}
