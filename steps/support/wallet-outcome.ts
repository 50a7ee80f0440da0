// What the simulated wallet did when a step asked it to present: its result, the verifier's (or its own)
// protocol refusal, or a usage refusal made before anything was sent. Shared by both verification profiles.

/** The wallet's errors that mean "refused before sending anything" (no request was answered). */
const USAGE_ERRORS = new Set(['WalletUsageError', 'NoMatchingCredentialsError', 'DcqlUnsatisfiedError'])

export type WalletAttempt<T> =
  | { kind: 'ok'; what: string; result: T }
  | {
      kind: 'protocol'
      what: string
      /** The wallet step that failed (request, response, …); '?' when the error names none. */
      step: string
      status: number
      error?: string
      description: string
      message: string
    }
  | { kind: 'usage'; what: string; name: string; message: string }

/**
 * Runs `work`, turning the wallet's protocol and usage errors into an outcome; anything else is rethrown
 * (usage errors too with `usage: false`: a step that cannot run as written is the scenario's mistake).
 */
export async function walletAttempt<T>(
  what: string,
  work: () => Promise<T>,
  options: { usage?: boolean } = {},
): Promise<WalletAttempt<T>> {
  try {
    return { kind: 'ok', what, result: await work() }
  } catch (error) {
    const e = error as {
      name?: string
      step?: string
      status?: number
      error?: string
      errorDescription?: string
      message: string
    }
    if (e.name === 'WalletProtocolError') {
      return {
        kind: 'protocol',
        what,
        step: e.step ?? '?',
        status: e.status ?? 0,
        ...(e.error ? { error: e.error } : {}),
        description: e.errorDescription ?? '',
        message: e.message,
      }
    }
    if (options.usage !== false && e.name !== undefined && USAGE_ERRORS.has(e.name))
      return { kind: 'usage', what, name: e.name, message: e.message }
    throw error
  }
}
