import {
  After,
  AfterAll,
  AfterStep,
  Before,
  BeforeAll,
  Status,
  setDefaultTimeout,
  setDefinitionFunctionWrapper,
} from '@cucumber/cucumber'
import {
  describeProblems,
  HarnessError,
  preflight,
  problemLine,
  writeHarnessError,
} from '../../src/harness/preflight.ts'
import { redact, redactError, runSecrets, useSecrets } from '../../src/harness/redact.ts'
import {
  CAPABILITIES,
  describeCapabilities,
  missingCapability,
  startTarget,
  type Target,
  TargetConfigError,
} from '../../src/harness/target.ts'
import { CleanupTally } from './cleanup.ts'
import { recordGlobalFetch } from './exchanges.ts'
import { closeReceiver } from './webhooks.ts'
import { getProcessTarget, type HarnessWorld, setProcessTarget } from './world.ts'

// Every step and hook: an error it throws is redacted before cucumber puts it in a report or on the
// terminal (a failure's "Got:" may echo a secret the target handed out). Synchronous code stays synchronous.
setDefinitionFunctionWrapper(
  (fn: (...args: unknown[]) => unknown) =>
    function (this: unknown, ...args: unknown[]) {
      try {
        const result = fn.apply(this, args)
        if (result && typeof (result as Promise<unknown>).then === 'function') {
          return (result as Promise<unknown>).then(undefined, (error: unknown) => {
            throw redactError(error)
          })
        }
        return result
      } catch (error) {
        throw redactError(error)
      }
    },
)

/**
 * Stops the run before any scenario: writes harness-error.txt and fails BeforeAll with every problem in
 * the error's message, which cucumber and `vc-harness conformance` print (so it is printed once).
 */
function stopRun(lines: readonly string[], text: string): never {
  writeHarnessError(lines)
  throw new HarnessError(redact(text), lines)
}

/** A target that cannot start: its configuration problems, one per line, or the first line of the error. */
function startProblems(error: unknown): string[] {
  const message = redact((error as Error).message ?? String(error))
  if (error instanceof TargetConfigError) {
    return message
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
  }
  const first = message.split('\n')[0] ?? message
  return [`${first}. Fix: see the error printed above (the target's own output follows it)`]
}

/** The run's own secrets: every report masks the target's key secrets wherever they appear. */
function registerTargetSecrets(target: Target) {
  const { appKey, adminKey, unlinkedAppKey } = target.tenant
  for (const key of [appKey, adminKey, unlinkedAppKey]) runSecrets.add(key?.secret, 'api-key-secret')
  runSecrets.add(target.operator?.secret, 'api-key-secret')
}

// A step's time limit: cucumber's default of 5 s was met by a whole wallet flow against a `serve` child that
// was still loading what its first requests need, on a 2-core machine that also ran the unit tests (a
// timeout, not a failed requirement). 20 s still ends a hung step well inside a run; steps that wait for
// something on purpose (a webhook, an expiry) carry their own, tighter limits.
setDefaultTimeout(20_000)

const cleanup = new CleanupTally()

/** The running scenario's World: requests made with the global fetch are recorded in its exchanges. */
let running: HarnessWorld | undefined
let stopRecording: (() => void) | undefined

// One target per worker process: the embedded service starts once and serves every scenario of the
// worker. Pre-flight checks it is usable before any scenario (src/harness/preflight.ts).
BeforeAll({ timeout: 60_000 }, async () => {
  let target: Target
  try {
    target = await startTarget()
  } catch (error) {
    // The error already says why (cucumber and the conformance summary print it): record it and rethrow.
    writeHarnessError(startProblems(error))
    throw redactError(error)
  }
  registerTargetSecrets(target)
  setProcessTarget(target)
  if (target.kind !== 'embedded') console.error(redact(describeCapabilities(target)))
  const problems = await preflight(target)
  if (problems.length > 0) {
    setProcessTarget(undefined)
    await target.close().catch(() => undefined)
    stopRun(problems.map(problemLine), describeProblems(target, problems))
  }
  stopRecording = recordGlobalFetch(() => running?.exchanges)
})

AfterAll({ timeout: 30_000 }, async () => {
  stopRecording?.()
  stopRecording = undefined
  const summary = cleanup.describe()
  if (summary) console.error(summary)
  await closeReceiver()
  await getProcessTarget()?.close()
  setProcessTarget(undefined)
})

// Scenarios tagged @needs-<capability> are skipped, with the reason attached, on a target without it.
Before(function (this: HarnessWorld, { pickle }) {
  useSecrets(this.secrets)
  running = this
  const tags = pickle.tags.map((t) => t.name)
  this.scenario = { name: pickle.name, tags }
  for (const capability of CAPABILITIES) {
    const reason = tags.includes(`@needs-${capability}`)
      ? missingCapability(this.target, capability)
      : undefined
    if (reason !== undefined) {
      // The conformance summary and the progress line show this reason.
      this.log(`Skipped: needs ${capability}; ${reason}`)
      return 'skipped'
    }
  }
  return undefined
})

// After hooks run in the reverse order of their definitions: the last one below runs first.

// After each step: the exchanges it made, attached to it (where the HTML report shows them under the step).
AfterStep(function (this: HarnessWorld) {
  this.attachStepExchanges()
})

// Last: the scenario's HTTP exchanges, redacted, and the one that broke the requirement after a failure.
After(function (this: HarnessWorld, { result }) {
  try {
    this.attachExchanges(result?.status === Status.FAILED)
  } finally {
    useSecrets(undefined)
    running = undefined
  }
})

// What the scenario created on the target is removed (external targets; VC_HARNESS_CLEANUP), on the
// service's real clock.
After({ timeout: 60_000 }, async function (this: HarnessWorld) {
  cleanup.add(await this.cleanUp())
})

// A scenario that moved the service's clock puts it back, so later scenarios (and wallets, which sign with
// real time) see real time again. Scenarios run one at a time per worker, each with its own target.
After(function (this: HarnessWorld) {
  if (this.target.clock?.shifted) this.target.clock.reset()
})

// A scenario whose last answer was an error that no step looked at has not shown what it claims.
After(function (this: HarnessWorld, { result }) {
  if (result?.status !== Status.PASSED) return
  const unchecked = this.uncheckedError()
  if (unchecked)
    throw new Error(`Scenario "${this.scenario.name}" ended with an unchecked error: ${unchecked}`)
})
