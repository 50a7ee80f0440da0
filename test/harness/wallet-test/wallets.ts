import { readFileSync } from 'node:fs'
import type { CaseContext } from '../../../src/harness/wallet-test/runner.ts'
import { Wallet } from '../../../src/wallet/index.ts'

/**
 * One P-256 wallet for the whole run, made at the first case (which names the run's trust anchor file: the
 * verifier CA and the mdoc IACA). P-256, as HAIP has it: an mdoc's device key signs ES256 (OpenID4VCI 1.0
 * Appendix A.2), and the other plans take a P-256 holder as well. test/fixtures/wallet-test.ts's walletOnce
 * makes an Ed25519 one.
 */
export function p256WalletOnce(options: { trustEverything?: boolean } = {}) {
  let wallet: Promise<Wallet> | undefined
  return (ctx: CaseContext) => {
    wallet ??= Wallet.create({
      keyType: 'P-256',
      trustAnchors: [readFileSync(ctx.trustAnchorFile, 'utf8')],
      ...(options.trustEverything ? { trustEverything: true } : {}),
    })
    return wallet
  }
}
