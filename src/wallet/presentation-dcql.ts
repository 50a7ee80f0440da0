// Which held credentials answer a DCQL query (OpenID4VP 1.0 §6), matched by the OWF `dcql` package: meta
// (vct_values, type_values, an mdoc's doctype_value), claims path pointers with `values` (§7), claim_sets, credential_sets, multiple.
// The wallet's part is the choice the query leaves open: the newest matching credential per query (every
// match when `multiple` is true), the first claim set it satisfies (§6.4.1: the verifier's preference), the
// first satisfiable option of each credential set (§6.4.2), optional sets answered when satisfiable; and a
// clear refusal naming the credential queries nothing held satisfies.

import { type DcqlCredential, DcqlQuery } from 'dcql'
import { type FormatId, formatOf } from '../formats/registry.ts'
import { isObject } from '../shared/json.ts'
import { WalletUsageError } from './errors.ts'
import type { StoredCredential } from './store.ts'

/** A claims path pointer (1.0 §7): object keys, array indexes, null for every element. */
export type ClaimPath = (string | number | null)[]

/** The formats this wallet presents in a 1.0 answer: every format of the registry. */
export type V1Format = FormatId

export interface DcqlChoice {
  queryId: string
  format: V1Format
  credential: StoredCredential
  /** the claims to disclose: the paths of the claim set chosen; [] when the query names no claims */
  claimPaths: ClaimPath[]
  /** index in claim_sets of the set chosen (undefined without claim_sets) */
  claimSetIndex: number | undefined
}

export interface DcqlSelection {
  /** the credential queries answered, in query order, each with its credentials (one unless `multiple`) */
  answers: { queryId: string; credentials: DcqlChoice[] }[]
}

/** The query cannot be satisfied with what the wallet holds (§6.4.2); nothing was sent. */
export class DcqlUnsatisfiedError extends WalletUsageError {
  override name = 'DcqlUnsatisfiedError'
  constructor(
    message: string,
    /** the credential query ids no held credential satisfies (those a required answer needs) */
    readonly credentialQueries: string[],
  ) {
    super(message)
  }
}

interface Candidate {
  stored: StoredCredential
  dcql: DcqlCredential
}

/** A held credential as the dcql package sees it (its format's model: src/formats/<format>/index.ts). */
async function asDcqlCredential(stored: StoredCredential): Promise<DcqlCredential | undefined> {
  return formatOf(stored.format).dcql.heldModel(stored.credential, stored.vct)
}

/** The issue messages of a dcql result (nested records of string arrays), flattened and shortened. */
function issueText(issues: unknown): string {
  const out: string[] = []
  const walk = (value: unknown) => {
    if (typeof value === 'string') out.push(value)
    else if (Array.isArray(value)) value.forEach(walk)
    else if (isObject(value)) Object.values(value).forEach(walk)
  }
  walk(issues)
  const text = [...new Set(out)].join('; ')
  return text.length > 240 ? `${text.slice(0, 237)}...` : text
}

type QueryResult = ReturnType<typeof DcqlQuery.query>
type CredentialQuery = DcqlQuery['credentials'][number]

/** Why no held credential satisfies one credential query. */
function whyUnsatisfied(query: CredentialQuery, result: QueryResult, held: Candidate[]): string {
  const meta = query.meta as Record<string, unknown> | undefined
  const wanted = meta?.vct_values ?? meta?.type_values ?? meta?.doctype_value
  const what = `${query.id} (${query.format}${wanted ? ` ${JSON.stringify(wanted)}` : ''})`
  const sameFormat = held.filter((c) => c.stored.format === query.format)
  if (sameFormat.length === 0) return `${what}: no ${query.format} credential held`
  const match = result.credential_matches[query.id]
  const failed = (match?.failed_credentials ?? []).find(
    (f) => held[f.input_credential_index]?.stored.format === query.format,
  )
  const detail = failed
    ? issueText([
        failed.meta.success ? [] : failed.meta.issues,
        failed.claims.success ? [] : failed.claims.failed_claim_sets,
      ])
    : ''
  return `${what}: none of the ${sameFormat.length} held ${query.format} credential(s) matches${detail ? ` (${detail})` : ''}`
}

/**
 * Selects what answers `query` from `held` (OpenID4VP 1.0 §6.4): throws DcqlUnsatisfiedError when a required
 * credential query (all of them without credential_sets; a required set's options otherwise) has no match.
 */
export async function selectForDcql(
  query: DcqlQuery,
  held: readonly StoredCredential[],
): Promise<DcqlSelection> {
  // newest first, so the first valid credential of a query is the newest one
  const candidates: Candidate[] = []
  for (const stored of [...held].reverse()) {
    const dcql = await asDcqlCredential(stored)
    if (dcql) candidates.push({ stored, dcql })
  }
  const result = DcqlQuery.query(
    query,
    candidates.map((c) => c.dcql),
  )
  const ok = (id: string) => result.credential_matches[id]?.success === true

  // the credential queries to answer (§6.4.2)
  let answered: string[]
  const missing = new Set<string>()
  const unsatisfiedSets: string[] = []
  if (!query.credential_sets) {
    answered = query.credentials.map((c) => c.id)
    for (const id of answered) if (!ok(id)) missing.add(id)
  } else {
    const picked = new Set<string>()
    query.credential_sets.forEach((set, index) => {
      const option = set.options.find((ids) => ids.every(ok))
      if (option) {
        for (const id of option) picked.add(id)
      } else if (set.required !== false) {
        for (const ids of set.options) for (const id of ids) if (!ok(id)) missing.add(id)
        unsatisfiedSets.push(
          `credential_sets[${index}] (options ${set.options.map((o) => `[${o.join(', ')}]`).join(' | ')})`,
        )
      }
    })
    answered = query.credentials.map((c) => c.id).filter((id) => picked.has(id))
  }
  if (missing.size > 0) {
    const reasons = query.credentials
      .filter((c) => missing.has(c.id))
      .map((c) => whyUnsatisfied(c, result, candidates))
    throw new DcqlUnsatisfiedError(
      `the DCQL query cannot be satisfied (OpenID4VP 1.0 §6.4.2): credential quer${missing.size === 1 ? 'y' : 'ies'} ${[...missing].join(', ')} unsatisfied${unsatisfiedSets.length > 0 ? ` in the required ${unsatisfiedSets.join(', ')}` : ''} — ${reasons.join('; ')}. Nothing was sent (misbehaviour access-denied, or onUnsatisfied 'access-denied', declines instead).`,
      [...missing],
    )
  }

  const answers = answered.map((queryId) => {
    const credentialQuery = query.credentials.find((c) => c.id === queryId) as CredentialQuery
    const match = result.credential_matches[queryId]
    const valid = match?.success ? match.valid_credentials : []
    const chosen = credentialQuery.multiple ? valid : valid.slice(0, 1)
    return {
      queryId,
      credentials: chosen.map((v): DcqlChoice => {
        // the verifier's most preferred claim set this credential satisfies (§6.4.1)
        const sets = [...v.claims.valid_claim_sets].sort(
          (a, b) => (a.claim_set_index ?? 0) - (b.claim_set_index ?? 0),
        )
        const set = sets[0]
        const claims = (credentialQuery.claims ?? []) as { path: ClaimPath }[]
        const indexes = set?.valid_claim_indexes ?? []
        const candidate = candidates[v.input_credential_index] as Candidate
        return {
          queryId,
          format: candidate.stored.format as V1Format,
          credential: candidate.stored,
          claimPaths: indexes.map((i) => claims[i]?.path as ClaimPath),
          claimSetIndex: set?.claim_set_index,
        }
      }),
    }
  })
  return { answers }
}
