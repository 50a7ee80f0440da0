import type { IPresentationDefinition, PEX } from '@sphereon/pex'
import { lazyRequire } from '../../shared/lazy.ts'

// The service's own Presentation Exchange evaluation, for issuance `di_vp` proofs and the verifier alike:
// a wallet's mapping is never trusted. Only 'info' counts as satisfied (PEX answers 'warn' for an unmet
// submission-requirement group). PEX (CommonJS, with ajv and JSONPath) loads at the first evaluation.

const pex = lazyRequire<typeof import('@sphereon/pex')>('@sphereon/pex')

export interface DefinitionEvaluation {
  outcome: 'satisfied' | 'unsatisfied' | 'error'
  /** PEX's first reasons when unsatisfied, what went wrong when it could not evaluate; '' when satisfied */
  detail: string
  /** every (descriptor id, credential index) pair PEX matched */
  matches: { descriptor: string; index: number }[]
}

const INDEX_PATH = /^\$\.verifiableCredential\[(\d+)\]$/

export function evaluateDefinition(definition: unknown, jwts: string[]): DefinitionEvaluation {
  const Pex = pex().PEX // outside the try: a library that cannot load is no evaluation outcome
  let evaluation: ReturnType<PEX['evaluateCredentials']>
  try {
    // The definition is our own (difDefinition) and PEX validates it itself; its model type is named only here.
    evaluation = new Pex().evaluateCredentials(definition as IPresentationDefinition, jwts)
  } catch (error) {
    // PEX throws plain objects ({tag, status, message}) as well as Errors.
    const { message, tag } = error as { message?: string; tag?: string }
    return {
      outcome: 'error',
      detail: [tag, message].filter(Boolean).join(': ') || String(error),
      matches: [],
    }
  }
  const matches = (evaluation.value?.descriptor_map ?? []).flatMap((entry) => {
    const index = INDEX_PATH.exec(entry.path)?.[1]
    return index === undefined ? [] : [{ descriptor: entry.id, index: Number(index) }]
  })
  if (evaluation.areRequiredCredentialsPresent === 'info')
    return { outcome: 'satisfied', detail: '', matches }
  const reasons = [...(evaluation.errors ?? []), ...(evaluation.warnings ?? [])]
    .map((e) => `${e.tag}: ${e.message ?? ''}`.trim())
    .slice(0, 5)
  return { outcome: 'unsatisfied', detail: reasons.join('; '), matches }
}
