import { After, AfterAll, Before, BeforeAll, Status } from '@cucumber/cucumber'
import {
  CAPABILITIES,
  describeCapabilities,
  missingCapability,
  startTarget,
} from '../../src/harness/target.ts'
import { closeReceiver } from './webhooks.ts'
import { getProcessTarget, type HarnessWorld, setProcessTarget } from './world.ts'

// One target per worker process: the embedded service starts once and serves every scenario of the worker.
BeforeAll({ timeout: 60_000 }, async () => {
  const target = await startTarget()
  setProcessTarget(target)
  if (target.kind !== 'embedded') console.error(describeCapabilities(target))
})

AfterAll({ timeout: 30_000 }, async () => {
  await closeReceiver()
  await getProcessTarget()?.close()
  setProcessTarget(undefined)
})

// Scenarios tagged @needs-<capability> are skipped, with the reason attached, on a target without it.
Before(function (this: HarnessWorld, { pickle }) {
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
