import type { ReadCredential } from '../../formats/types.ts'

// The plug-in point for query languages: DIF Presentation Exchange v2 (presentation-exchange.ts) and DCQL
// (OpenID4VP 1.0 §6, dcql.ts). The service always evaluates the query itself; what the wallet says
// about its answer (a PE presentation_submission, the credential query ids keying a DCQL vp_token) is
// only checked against that evaluation, never trusted.

/** A credential of the presentation as the query language sees it. */
export interface QueryCandidate {
  /** Position in the presentation (`verifiableCredential[n]`; a DCQL vp_token's entry order). */
  index: number
  credential: ReadCredential
  /**
   * DCQL: the credential query id under which the wallet put this presentation in the vp_token object
   * (OpenID4VP 1.0 §8.1); undefined for Presentation Exchange, whose mapping is the submission.
   */
  queryId?: string
}

export interface QueryEvaluation {
  outcome: 'satisfied' | 'unsatisfied' | 'error'
  /** The language's first reasons when unsatisfied, what went wrong when it could not evaluate; '' when satisfied */
  detail: string
  /** Every (query id, presentation index) pair that matched: PE input descriptor ids, DCQL credential query ids. */
  matches: { queryId: string; index: number }[]
  /** What does not fail the check but a tester should see, e.g. claims disclosed beyond the query (DCQL). */
  warnings?: string[]
}

export interface QueryLanguage {
  /** `presentation_exchange`, `dcql` */
  readonly id: string
  /** How matchingIds messages name the query and a passed check: the language's own words. */
  readonly words: { query: string; satisfied: string }
  /** Do these credentials satisfy the query, and which credential matches which query id. */
  evaluate(query: unknown, candidates: readonly QueryCandidate[]): QueryEvaluation
  /**
   * Failures of the wallet's own mapping (`mapping`) against the service's `evaluation`; `presented` is
   * how many credentials the presentation carried (readable or not).
   */
  checkMapping(mapping: unknown, query: unknown, evaluation: QueryEvaluation, presented: number): string[]
}
