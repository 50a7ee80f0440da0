import { isObject } from '../../shared/json.ts'
import { type DefinitionEvaluation, evaluateDefinition, evaluateWithPex } from '../util/pex.ts'
import type { QueryEvaluation, QueryLanguage } from './query.ts'

// DIF Presentation Exchange v2 (OpenID4VP draft 20 §5, §6.1): the presentation_definition is the query,
// the wallet's presentation_submission its mapping. Evaluation is @sphereon/pex's (util/pex.ts): the
// definition compiled once where it can be, PEX itself for the rest and for every refusal's reasons.

// Section 2.8 names `ldp` and `ldp_vp`; PE v2 and OpenID4VP say `ldp_vc`.
const VP_FORMATS = ['jwt_vp', 'jwt_vp_json', 'ldp_vp']
const VC_FORMATS = ['jwt_vc', 'jwt_vc_json', 'ldp_vc', 'ldp']
// Only plain index paths are read from the wallet's descriptor_map: its JSONPath is never evaluated.
const NESTED_PATH = /^\$(?:\.vp)?\.verifiableCredential\[(\d{1,3})\]$/

/** One descriptor_map entry: a known descriptor, a plain index path, and a credential that satisfies it. */
function checkEntry(
  entry: unknown,
  at: string,
  descriptorIds: Set<string>,
  matches: Set<string>,
  credentialCount: number,
): string | undefined {
  if (!isObject(entry)) return `${at} is not an object`
  if (typeof entry.id !== 'string' || !descriptorIds.has(entry.id)) {
    return `${at}.id ${JSON.stringify(entry.id)} names no input descriptor of the definition`
  }
  let path: unknown = entry.path
  let format: unknown = entry.format
  if (isObject(entry.path_nested)) {
    // typeof first: String() of a wallet's object may throw ({"toString": 1}); found by the fuzzer.
    if (entry.path !== '$' || typeof entry.format !== 'string' || !VP_FORMATS.includes(entry.format)) {
      return `${at} must point at the vp_token ("$", jwt_vp or ldp_vp) before path_nested`
    }
    path = entry.path_nested.path
    format = entry.path_nested.format
  }
  const index = typeof path === 'string' ? NESTED_PATH.exec(path)?.[1] : undefined
  if (index === undefined) {
    return `${at} path ${JSON.stringify(path)} is not a plain $.verifiableCredential[n] path (expressions are never evaluated)`
  }
  if (typeof format !== 'string' || !VC_FORMATS.includes(format))
    return `${at} format ${JSON.stringify(format)} is not jwt_vc, jwt_vc_json, ldp_vc or ldp`
  const n = Number(index)
  if (n >= credentialCount) return `${at} points at credential ${n}, which is not in the vp_token`
  if (!matches.has(`${entry.id}|${n}`)) {
    return `${at} maps descriptor "${entry.id}" to verifiableCredential[${n}], which does not satisfy it`
  }
  return undefined
}

type Evaluator = (definition: unknown, credentials: readonly unknown[]) => DefinitionEvaluation

/**
 * The input descriptors a submission must satisfy (DIF PE v2 §5.1): every one when the definition has no
 * submission_requirements, else every one of a group that a top-level requirement with rule "all" names.
 * PEX counts distinct credentials per group instead, so two credentials of one kind could satisfy a group
 * of two descriptors; the service holds each descriptor to a match of its own.
 */
function requiredDescriptors(definition: unknown): string[] {
  if (!isObject(definition) || !Array.isArray(definition.input_descriptors)) return []
  const descriptors = definition.input_descriptors.filter(isObject)
  const ids = (list: Record<string, unknown>[]) =>
    list.flatMap((d) => (typeof d.id === 'string' ? [d.id] : []))
  const requirements = definition.submission_requirements
  if (!Array.isArray(requirements)) return ids(descriptors)
  const groups = new Set(
    requirements.flatMap((r) =>
      isObject(r) && r.rule === 'all' && typeof r.from === 'string' ? [r.from] : [],
    ),
  )
  return ids(
    descriptors.filter((d) => Array.isArray(d.group) && d.group.some((g) => groups.has(g as string))),
  )
}

/** Presentation Exchange over an evaluator of definitions. */
const over = (evaluateWith: Evaluator): QueryLanguage => ({
  id: 'presentation_exchange',
  words: {
    query: 'the presentation definition',
    satisfied: 'the credentials satisfy the definition as the submission maps them',
  },

  evaluate(definition, candidates): QueryEvaluation {
    const evaluation = evaluateWith(
      definition,
      candidates.map((c) => c.credential.queryInput),
    )
    // PEX indexes the credentials it was given; the presentation indexes its own entries.
    const matches = evaluation.matches.flatMap(({ descriptor, index }) => {
      const c = candidates[index]
      return c ? [{ queryId: descriptor, index: c.index }] : []
    })
    if (evaluation.outcome === 'satisfied') {
      const matched = new Set(matches.map((m) => m.queryId))
      const missing = requiredDescriptors(definition).find((id) => !matched.has(id))
      if (missing !== undefined) {
        return {
          outcome: 'unsatisfied',
          detail: `input descriptor "${missing}" is matched by no presented credential (DIF PE v2 §5.1: each required descriptor needs a credential of its own)`,
          matches,
        }
      }
    }
    return { outcome: evaluation.outcome, detail: evaluation.detail, matches }
  },

  checkMapping(submission, query, evaluation, presented) {
    const definition = isObject(query) ? query : {}
    if (!isObject(submission)) return ['presentation_submission is missing or not a JSON object']
    const failures: string[] = []
    if (submission.definition_id !== definition.id) {
      failures.push(
        `presentation_submission.definition_id ${JSON.stringify(submission.definition_id)} is not this session's definition ${String(definition.id)}`,
      )
    }
    const map = submission.descriptor_map
    if (!Array.isArray(map) || map.length === 0) return [...failures, 'descriptor_map is missing or empty']
    const descriptorIds = new Set(
      (Array.isArray(definition.input_descriptors) ? definition.input_descriptors : []).map(
        (d) => (d as { id: string }).id,
      ),
    )
    const matches = new Set(evaluation.matches.map((m) => `${m.queryId}|${m.index}`))
    for (const [i, entry] of map.entries()) {
      const failure = checkEntry(entry, `descriptor_map[${i}]`, descriptorIds, matches, presented)
      if (failure) failures.push(failure)
    }
    const mapped = new Set(map.map((entry) => (isObject(entry) ? entry.id : undefined)))
    for (const id of requiredDescriptors(definition)) {
      if (!mapped.has(id))
        failures.push(`descriptor_map maps no credential to input descriptor "${id}", which is required`)
    }
    return failures
  },
})

/** The service's: each definition compiled once, PEX where the compiled form does not answer. */
export const presentationExchange = over(evaluateDefinition)

/** PEX alone, every response from scratch: the reference (tests) and the bench's baseline. */
export const presentationExchangeByPex = over(evaluateWithPex)
