// The expected-failures file: scenarios known to fail, each with the reason, optionally only on some
// targets. A listed scenario that fails does not fail the gate; a listed scenario that passes is reported
// as an unexpected pass, to be removed from the list. See docs/conformance.md.

import { readFileSync } from 'node:fs'
import { TARGET_KINDS } from './target-types.ts'

export interface ExpectedFailure {
  /** The exact scenario name (for an outline row: the name with its parameters filled in). */
  scenario: string
  /** Why it is known to fail: an issue, a deviation of the target, a spec ambiguity. */
  reason: string
  /** Target kinds the entry applies to; absent: every target. */
  targets?: string[]
}

export interface ExpectedFailures {
  /** The file the entries came from, as given (for messages and reports). */
  file?: string
  entries: ExpectedFailure[]
}

/** A malformed expected-failures file: the message names the file and the bad entry. */
export class ExpectedFailuresError extends Error {
  override name = 'ExpectedFailuresError'
  /** main maps codes starting with ERR_PARSE_ARGS to exit code 2, like other bad input. */
  readonly code = 'ERR_PARSE_ARGS_EXPECTED_FAILURES'
}

const ENTRY_KEYS = new Set(['scenario', 'reason', 'targets'])
const FILE_KEYS = new Set(['$comment', 'expectedFailures'])

/** Validates the parsed file and returns its entries; throws ExpectedFailuresError naming the problem. */
export function parseExpectedFailures(data: unknown, file = 'expected-failures file'): ExpectedFailure[] {
  const bad = (where: string, problem: string): never => {
    throw new ExpectedFailuresError(`${file}: ${where}: ${problem}`)
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    bad('top level', 'must be an object {"$comment": "…", "expectedFailures": [ … ]}')
  const top = data as Record<string, unknown>
  for (const key of Object.keys(top)) {
    if (!FILE_KEYS.has(key)) bad(`"${key}"`, 'unknown member (allowed: "$comment", "expectedFailures")')
  }
  const list = top.expectedFailures
  if (!Array.isArray(list)) bad('"expectedFailures"', 'must be an array of {scenario, reason, targets?}')
  const entries: ExpectedFailure[] = []
  ;(list as unknown[]).forEach((raw, i) => {
    const label =
      typeof raw === 'object' && raw !== null && typeof (raw as { scenario?: unknown }).scenario === 'string'
        ? `expectedFailures[${i}] ("${(raw as { scenario: string }).scenario}")`
        : `expectedFailures[${i}]`
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      bad(label, 'must be an object {scenario, reason, targets?}')
    const entry = raw as Record<string, unknown>
    for (const key of Object.keys(entry)) {
      if (!ENTRY_KEYS.has(key)) bad(label, `unknown member "${key}" (allowed: scenario, reason, targets)`)
    }
    if (typeof entry.scenario !== 'string' || entry.scenario.trim() === '')
      bad(label, '"scenario" must be the exact scenario name, a non-empty string')
    if (typeof entry.reason !== 'string' || entry.reason.trim() === '')
      bad(label, '"reason" must say why the scenario is known to fail (a non-empty string)')
    let targets: string[] | undefined
    if (entry.targets !== undefined) {
      const value = entry.targets
      if (!Array.isArray(value) || value.length === 0)
        bad(
          label,
          `"targets" must be a non-empty array of ${TARGET_KINDS.join(' | ')}; omit it for every target`,
        )
      for (const t of value as unknown[]) {
        if (typeof t !== 'string' || !(TARGET_KINDS as readonly string[]).includes(t))
          bad(label, `"targets" has ${JSON.stringify(t)}; allowed: ${TARGET_KINDS.join(', ')}`)
      }
      targets = value as string[]
    }
    const scenario = entry.scenario as string
    for (const [j, earlier] of entries.entries()) {
      const overlap =
        earlier.scenario === scenario &&
        (!earlier.targets || !targets || earlier.targets.some((t) => targets?.includes(t)))
      if (overlap) bad(label, `lists the same scenario as expectedFailures[${j}] for the same target`)
    }
    entries.push({ scenario, reason: entry.reason as string, ...(targets ? { targets } : {}) })
  })
  return entries
}

/** Reads and validates an expected-failures file. */
export function loadExpectedFailures(file: string, shownAs = file): ExpectedFailures {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ExpectedFailuresError(
      `${shownAs}: cannot read the expected-failures file (${(error as Error).message})`,
    )
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    throw new ExpectedFailuresError(`${shownAs}: not valid JSON (${(error as Error).message})`)
  }
  return { file: shownAs, entries: parseExpectedFailures(data, shownAs) }
}

/** The entry that applies to a scenario on a target kind, if any. */
export function expectedFailureFor(
  expected: ExpectedFailures | undefined,
  scenario: string,
  targetKind: string | undefined,
): ExpectedFailure | undefined {
  return expected?.entries.find(
    (e) =>
      e.scenario === scenario && (!e.targets || targetKind === undefined || e.targets.includes(targetKind)),
  )
}
