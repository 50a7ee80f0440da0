// The suite's scenarios as written: every pickle of the feature files (each Scenario Outline row is its
// own), with its tags sorted into sources, capabilities and needs exactly as the conformance report does
// (scenarioTags in report.ts). Read without running anything: `vc-harness conformance --list`, the
// selection check before a run, and the requirements catalogue (scripts/requirements.ts →
// docs/requirements.md) use it.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateMessages } from '@cucumber/gherkin'
import { IdGenerator, SourceMediaType } from '@cucumber/messages'
import { scenarioTags } from './report.ts'

export interface ScenarioInfo {
  /** The scenario's name (an outline row: with its parameters filled in): the requirement. */
  name: string
  /** Feature file, relative to the root, forward slashes. */
  uri: string
  /** The scenario's line (an outline row: the row's line), as cucumber and the reports name it. */
  line: number
  feature: string
  /** Every tag of the pickle (the feature's, the scenario's, the examples'), in source order, once each. */
  tags: string[]
  sources: string[]
  capabilities: string[]
  needs: string[]
}

/** A feature file that does not parse: cucumber reports it as a run error when the suite runs. */
export interface ScenarioParseError {
  uri: string
  message: string
}

/** Parses the given feature files (paths relative to root) into their scenarios, in file and line order. */
export function loadScenarios(
  files: readonly string[],
  root: string,
): { scenarios: ScenarioInfo[]; errors: ScenarioParseError[] } {
  const scenarios: ScenarioInfo[] = []
  const errors: ScenarioParseError[] = []
  const newId = IdGenerator.incrementing()
  for (const uri of files) {
    const envelopes = generateMessages(
      readFileSync(join(root, uri), 'utf8'),
      uri,
      SourceMediaType.TEXT_X_CUCUMBER_GHERKIN_PLAIN,
      { includeGherkinDocument: true, includePickles: true, includeSource: false, newId },
    )
    let feature = { name: uri, tags: [] as string[] }
    for (const envelope of envelopes) {
      if (envelope.gherkinDocument?.feature) {
        const f = envelope.gherkinDocument.feature
        feature = { name: f.name, tags: f.tags.map((t) => t.name) }
      } else if (envelope.parseError) {
        errors.push({ uri, message: envelope.parseError.message })
      } else if (envelope.pickle) {
        const p = envelope.pickle
        const tags = [...new Set(p.tags.map((t) => t.name))]
        scenarios.push({
          name: p.name,
          uri,
          line: p.location?.line ?? 0,
          feature: feature.name,
          tags,
          ...scenarioTags(tags, feature.tags),
        })
      }
    }
  }
  return { scenarios, errors }
}
