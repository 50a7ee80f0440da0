import type { CheckOutcome, Validations } from '../store/index.ts'
import { boundedList, clip } from '../util/echo.ts'

// The named checks of the credential pipeline. Each name is used as is in `Validations.checks`, in the
// webhook's `verificationResult` and in the `invalid_proof` descriptions of issuance, so a relying party,
// a wallet and a QA engineer all read the same word for the same requirement (docs/verification.md).
// The order is the order a verifier reports them in.
export const CHECKS = [
  'securityMechanisms',
  'presentationProof',
  'sessionBinding',
  'credentialProof',
  'holderBinding',
  'trustedIssuer',
  'validityPeriod',
  'credentialStatus',
  'matchingIds',
] as const
export type CheckName = (typeof CHECKS)[number]

/**
 * The outcomes of one run of the pipeline, in the order they were recorded. Messages quote what the holder
 * sent, so each is clipped and each check lists at most ECHO_LIMITS.maxItems failures (util/echo.ts).
 */
export class Outcomes {
  readonly list: CheckOutcome[] = []
  readonly warnings: string[] = []

  record(check: CheckName, failures: readonly string[], passed: string) {
    this.list.push(
      failures.length > 0
        ? { check, result: 'failed', message: boundedList(failures).join('; ') }
        : { check, result: 'passed', message: clip(passed) },
    )
  }

  notRun(check: CheckName, why: string) {
    this.list.push({ check, result: 'not_run', message: clip(why) })
  }

  failed(): CheckOutcome[] {
    return this.list.filter((c) => c.result === 'failed')
  }

  /** `check: message` of every failed check, the form of `verificationResult.errors`. */
  errors(): string[] {
    return this.failed().map((c) => `${c.check}: ${c.message}`)
  }

  /** Section 2.9 `Validations`: SUCCESS when nothing failed and something passed. */
  validations(): Validations {
    const failed = this.failed()
    return {
      status: failed.length === 0 && this.list.some((c) => c.result === 'passed') ? 'SUCCESS' : 'REJECT',
      checks: this.list,
      verificationResult: {
        checks: this.list.filter((c) => c.result !== 'not_run').map((c) => c.check),
        warnings: boundedList(this.warnings),
        errors: this.errors(),
      },
    }
  }
}
