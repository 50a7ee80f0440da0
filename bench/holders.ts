// One interface over the two wallets a bench can drive, so a flow is written once: the lean load wallet
// (undici + node:crypto: measures the server) and the Veramo/Sphereon wallet users run (measures what
// they will see, wallet cost included).

import type { Dispatcher } from 'undici'
import { Wallet, WalletProtocolError } from '../src/wallet/index.ts'
import { LeanWallet, LeanWalletError } from './lean-wallet.ts'
import type { WalletMode } from './protocol.ts'
import { StepError } from './relying-party.ts'

export interface HolderIssuance {
  token(): Promise<void>
  /** 200: issued at once (the peer); 202: deferred, with the transaction id. */
  requestCredential(): Promise<{ status: 200 } | { status: 202; transactionId: string }>
  /** Issued (and stored), or still pending. */
  deferred(transactionId: string): Promise<'issued' | 'pending'>
  notify(): Promise<void>
}

export interface HolderPresentation {
  respond(): Promise<void>
}

export interface Holder {
  startIssuance(link: string): Promise<HolderIssuance>
  present(link: string): Promise<HolderPresentation>
}

/** Wallet errors as step errors, so every failure is counted under the step and kind it happened in. */
async function as<T>(step: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof StepError) throw error
    if (error instanceof LeanWalletError)
      throw new StepError(error.step, error.kind, error.message.replace(/^[a-z]+: /, ''))
    if (error instanceof WalletProtocolError)
      throw new StepError(step, `${error.status} ${error.error}`, error.message)
    const e = error as Error
    throw new StepError(step, e.name, e.message)
  }
}

/** Keeps the lean wallet's store short: a load run would otherwise hold every credential it received. */
const KEEP_CREDENTIALS = 4

class LeanHolder implements Holder {
  constructor(private readonly wallet: LeanWallet) {}

  async startIssuance(link: string): Promise<HolderIssuance> {
    const session = await as('scan', () => this.wallet.startIssuance(link))
    const held = this.wallet.credentials as string[]
    const trim = () => {
      if (held.length > KEEP_CREDENTIALS) held.splice(0, held.length - KEEP_CREDENTIALS)
    }
    return {
      token: () => as('token', () => session.token()),
      requestCredential: () =>
        as('credential', async () => {
          const answer = await session.requestCredential()
          trim()
          return answer.status === 200 ? { status: 200 as const } : answer
        }),
      deferred: (transactionId) =>
        as('deferred', async () => {
          const answer = await session.deferred(transactionId)
          trim()
          return answer.status === 200 ? 'issued' : 'pending'
        }),
      notify: () => as('notify', () => session.notify('credential_accepted')),
    }
  }

  async present(link: string): Promise<HolderPresentation> {
    const presentation = await as('request', () => this.wallet.present(link))
    return {
      respond: () =>
        as('response', async () => {
          await presentation.respond()
        }),
    }
  }
}

class FullHolder implements Holder {
  constructor(private readonly wallet: Wallet) {}

  async startIssuance(link: string): Promise<HolderIssuance> {
    const session = await as('scan', () => this.wallet.startIssuance(link))
    return {
      token: () => as('token', async () => void (await session.token())),
      requestCredential: () =>
        as('credential', async () => {
          const answer = await session.requestCredential()
          if (answer.status === 202) return { status: 202 as const, transactionId: answer.transactionId }
          await session.accept(answer)
          return { status: 200 as const }
        }),
      deferred: (transactionId) =>
        as('deferred', async () => {
          const answer = await session.deferred(transactionId)
          if (answer.status !== 200) return 'pending'
          await session.accept(answer)
          return 'issued'
        }),
      notify: () =>
        as('notify', async () => {
          // An issuer that gave no notification_id (the peer) has nothing to be notified about.
          await session.notify('credential_accepted').catch((error: Error) => {
            if (error.name !== 'WalletUsageError') throw error
          })
        }),
    }
  }

  async present(link: string): Promise<HolderPresentation> {
    const session = await as('request', () => this.wallet.startPresentation(link))
    return {
      respond: () =>
        as('response', async () => {
          const result = await session.respond()
          if (result.status !== 'verified')
            throw new StepError('response', result.status, `the wallet answered with an error`)
        }),
    }
  }
}

export async function createHolder(mode: WalletMode, dispatcher: Dispatcher): Promise<Holder> {
  return mode === 'lean'
    ? new LeanHolder(LeanWallet.create({ dispatcher }))
    : new FullHolder(await Wallet.create())
}
