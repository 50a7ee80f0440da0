import {
  type DcqlCredential,
  type DcqlCredentialPresentation,
  DcqlPresentationResult,
  DcqlQuery,
  runDcqlQuery,
} from 'dcql'
import { formatNamed } from '../../formats/registry.ts'
import type { ReadCredential } from '../../formats/types.ts'
import { isObject } from '../../shared/json.ts'
import type { QueryCandidate, QueryEvaluation, QueryLanguage } from './query.ts'

// DCQL (OpenID4VP 1.0 Final §6) as a query language of the pipeline: the dcql_query is the query, the
// vp_token object (§8.1, credential query id → presentations) the wallet's mapping. Matching is the
// `dcql` package's; this module turns our credentials into its model, judges each presentation under
// the key the wallet put it (a credential under key K must satisfy credential query K), and says in
// plain words which requirement broke. Over-disclosure (§6.4) is a warning, never a failure.

type Query = DcqlQuery
type CredentialQuery = Query['credentials'][number]
type ClaimQuery = NonNullable<CredentialQuery['claims']>[number]
type Path = (string | number | null)[]
type PresentationResult = ReturnType<typeof DcqlPresentationResult.fromDcqlPresentation>
type Match = PresentationResult['credential_matches'][string]
type FailedCredential = NonNullable<Match['failed_credentials']>[number]

// ---- messages (stable: tests and testers match on them) ----

const unknownKey = (key: string) =>
  `vp_token key ${JSON.stringify(key)} names no credential query of this session's dcql_query`
const tooMany = (key: string, n: number) =>
  `vp_token ${JSON.stringify(key)} holds ${n} presentations but credential query ${JSON.stringify(key)} does not allow multiple (OpenID4VP 1.0 §6.1)`
const showOptions = (options: readonly (readonly string[])[]) =>
  options.map((option) => option.map((id) => JSON.stringify(id)).join(' + ')).join(' | ')
const showPath = (path: Path) =>
  `[${path.map((p) => (typeof p === 'string' ? `'${p}'` : String(p))).join(', ')}]`
const showValues = (values: readonly unknown[]) => values.map((v) => JSON.stringify(v)).join(', ')

/** `credential query "pid"`, with the position when the wallet put several presentations under it. */
const labelOf = (queryId: string, position: number, count: number) =>
  `credential query ${JSON.stringify(queryId)}${count > 1 ? `[${position}]` : ''}`

/** The query, parsed and checked by dcql (ids unique, credential_sets and claim_sets name known ids). */
function parseQueryOnce(query: unknown): Query | string {
  try {
    const parsed = DcqlQuery.parse(query as DcqlQuery.Input)
    DcqlQuery.validate(parsed)
    return parsed
  } catch (error) {
    // valibot's error carries the failing member's path; dcql's own errors only a message.
    const issue = (error as { issues?: { path?: { key: unknown }[]; message: string }[] }).issues?.[0]
    const at = issue?.path?.map((p) => String(p.key)).join('.')
    const message = issue ? `${at ? `${at}: ` : ''}${issue.message}` : (error as Error).message
    return `dcql_query is not a valid DCQL query: ${message}`
  }
}

/** A parsed query, and the copy dcql judges presentations with (every credential query `multiple`). */
interface Parsed {
  query: Query
  allMultiple: Query
}

/**
 * Parsed queries by their JSON: a session's dcql_query depends on its template only (verification/
 * dcql-query.ts), so its valibot parse and validation run once per template, not twice per response
 * (evaluate and checkMapping). Bounded; an invalid query is remembered with its message.
 */
const parsedQueries = new Map<string, Parsed | string>()
const MAX_PARSED = 256

function prepare(query: unknown): Parsed | string {
  const parsed = parseQueryOnce(query)
  if (typeof parsed === 'string') return parsed
  // `multiple` is judged by checkMapping (dcql throws on it), so dcql judges every presentation.
  const credentials = parsed.credentials.map((cq) => ({ ...cq, multiple: true })) as Query['credentials']
  return { query: parsed, allMultiple: { ...parsed, credentials } }
}

function parseQuery(query: unknown): Parsed | string {
  let key: string
  try {
    key = JSON.stringify(query) ?? ''
  } catch {
    return prepare(query) // not JSON (a cycle, a BigInt): not remembered
  }
  let parsed = parsedQueries.get(key)
  if (parsed === undefined) {
    parsed = prepare(query)
    if (parsedQueries.size >= MAX_PARSED) parsedQueries.delete(parsedQueries.keys().next().value as string)
    parsedQueries.set(key, parsed)
  }
  return parsed
}

/** Our credential in dcql's model (its format's, src/formats/<format>/index.ts), or why it has none. */
function toDcql(credential: ReadCredential): DcqlCredential | string {
  const format = formatNamed(credential.format)
  return format
    ? format.dcql.model(credential)
    : `format ${JSON.stringify(credential.format)} cannot be evaluated with DCQL`
}

const pathOf = (claim: ClaimQuery): Path =>
  'path' in claim ? claim.path : [claim.namespace, claim.claim_name]

/** Whether the claim exists at all (dcql's verdict on the path without `values`). */
function claimPresent(cq: CredentialQuery, claim: ClaimQuery, credential: DcqlCredential): boolean {
  const probe = {
    ...cq,
    claims: [{ path: pathOf(claim) }],
    claim_sets: undefined,
    trusted_authorities: undefined,
  }
  const result = runDcqlQuery({ credentials: [probe] } as unknown as Query, {
    credentials: [credential],
    presentation: true,
  })
  const match = result.credential_matches[cq.id]
  const item = match?.valid_credentials?.[0] ?? match?.failed_credentials?.[0]
  return item?.claims.success === true
}

function claimReason(cq: CredentialQuery, claim: ClaimQuery | undefined, credential: DcqlCredential): string {
  if (!claim) return 'a claim does not match'
  const shown = showPath(pathOf(claim))
  if (claim.values && claimPresent(cq, claim, credential)) {
    return `claim ${shown} is not one of ${showValues(claim.values)}`
  }
  return `claim ${shown} is missing`
}

/** Why one presentation does not satisfy its credential query, in the order a tester would fix them. */
function failureReasons(cq: CredentialQuery, credential: DcqlCredential, failed: FailedCredential): string[] {
  const reasons: string[] = []
  if (!failed.meta.success) {
    const issues = failed.meta.issues
    if ('credential_format' in issues) {
      // Nothing else about a credential of another format is worth reading.
      return [`format ${JSON.stringify(credential.credential_format)} is not ${JSON.stringify(cq.format)}`]
    }
    if ('vct' in issues) {
      const vct = 'vct' in credential ? credential.vct : undefined
      const allowed = cq.meta && 'vct_values' in cq.meta ? cq.meta.vct_values : undefined
      reasons.push(
        allowed ? `vct ${JSON.stringify(vct)} is not one of ${showValues(allowed)}` : 'vct is missing',
      )
    }
    if ('type' in issues) {
      const type = 'type' in credential ? credential.type : []
      const wanted = cq.meta && 'type_values' in cq.meta ? cq.meta.type_values : []
      reasons.push(
        `type ${JSON.stringify(type)} does not include all of ${wanted.map((w) => JSON.stringify(w)).join(' or ')}`,
      )
    }
    if ('doctype' in issues) reasons.push('doctype does not match')
    if ('cryptographic_holder_binding' in issues) {
      reasons.push('it has no cryptographic holder binding, which the query requires')
    }
  }
  if (!failed.trusted_authorities.success) reasons.push('its issuer matches none of the trusted_authorities')
  const claims = failed.claims
  if (!claims.success) {
    const all = cq.claims ?? []
    if (!cq.claim_sets) {
      for (const c of claims.failed_claims) reasons.push(claimReason(cq, all[c.claim_index], credential))
    } else {
      // §6.4.1: one satisfied claim set is enough; name every claim that kept a set from being satisfied.
      const indexes = [...new Set(claims.failed_claim_sets.flatMap((s) => s.failed_claim_indexes))].sort(
        (a, b) => a - b,
      )
      const why = indexes.map((i) => claimReason(cq, all[i], credential)).join(', ')
      reasons.push(`none of its claim_sets is satisfied: ${why}`)
    }
  }
  return reasons.length > 0 ? reasons : ['it does not match']
}

// ---- over-disclosure (OpenID4VP 1.0 §6.4: wallets MUST NOT send selectively disclosable claims that
// were not selected) ----

/** A query path asks for a disclosed claim when one leads to the other (a parent opens its children). */
function asks(queryPath: Path, disclosed: string[]): boolean {
  const n = Math.min(queryPath.length, disclosed.length)
  for (let i = 0; i < n; i++) {
    const q = queryPath[i]
    const d = disclosed[i] as string
    if (q === null ? !/^\d+$/.test(d) : String(q) !== d) return false
  }
  return true
}

function overDisclosure(cq: CredentialQuery, credential: ReadCredential): string[] {
  // Only a selectively disclosing format says what was disclosed (ReadCredential.disclosed, once its
  // proof verified); a format that discloses everything cannot over-disclose.
  if (credential.disclosed === undefined) return []
  // §6.4.1: without `claims` the verifier asks for no selectively disclosable claim at all.
  const wanted = (cq.claims ?? []).map(pathOf)
  const disclosed = credential.disclosed.map((path) => path.map(String))
  const extra = disclosed.filter((d) => !wanted.some((q) => asks(q, d)))
  // Name a disclosed object once, not each of its disclosed members as well: a path is dropped when one of
  // its prefixes is also extra (a set lookup per prefix: linear in the claims, not quadratic).
  const key = (path: readonly string[]) => JSON.stringify(path)
  const extraKeys = new Set(extra.map(key))
  const shown = extra
    .filter((d) => !d.some((_, i) => i > 0 && extraKeys.has(key(d.slice(0, i)))))
    .map((d) => d.join('.'))
  return [...new Set(shown)].sort() // disclosure order is the digests' order: random
}

// ---- the query language ----

interface Keyed {
  candidate: QueryCandidate
  model: DcqlCredential | string
}

export const dcql: QueryLanguage = {
  id: 'dcql',
  words: {
    query: "this session's dcql_query",
    satisfied: 'the credentials satisfy the dcql_query under the credential query ids the vp_token names',
  },

  evaluate(query, candidates): QueryEvaluation {
    const prepared = parseQuery(query)
    if (typeof prepared === 'string') return { outcome: 'error', detail: prepared, matches: [] }
    const parsed = prepared.query
    const problems: string[] = []
    const warnings: string[] = []
    const known = new Set(parsed.credentials.map((cq) => cq.id))
    const keyed = new Map<string, Keyed[]>()
    // Keys naming no credential query and too many presentations are the mapping's mistakes: checkMapping
    // names them once; evaluation judges the credentials under known keys.
    for (const candidate of candidates) {
      const key = candidate.queryId
      if (key === undefined) problems.push(`credential ${candidate.index} is under no vp_token key`)
      else if (known.has(key)) {
        keyed.set(key, [...(keyed.get(key) ?? []), { candidate, model: toDcql(candidate.credential) }])
      }
    }

    // What dcql gets: the readable presentations under each known key, judged against the all-`multiple`
    // copy of the query (parseQuery).
    const presented: Record<string, DcqlCredentialPresentation[]> = {}
    for (const cq of parsed.credentials) {
      const entries = keyed.get(cq.id) ?? []
      const models = entries.flatMap((e) => (typeof e.model === 'string' ? [] : [e.model]))
      if (models.length > 0) presented[cq.id] = models
    }
    let result: PresentationResult
    try {
      result = DcqlPresentationResult.fromDcqlPresentation(presented, { dcqlQuery: prepared.allMultiple })
    } catch (error) {
      return { outcome: 'error', detail: `DCQL evaluation failed: ${(error as Error).message}`, matches: [] }
    }

    const matches: QueryEvaluation['matches'] = []
    for (const cq of parsed.credentials) {
      const entries = keyed.get(cq.id) ?? []
      if (entries.length === 0) {
        if (!parsed.credential_sets) problems.push(`credential query "${cq.id}" has no readable presentation`)
        continue
      }
      // dcql indexes the models it was given; map them back to the wallet's entries.
      const judged = entries.filter((e) => typeof e.model !== 'string')
      const match = result.credential_matches[cq.id]
      for (const [position, entry] of entries.entries()) {
        const label = labelOf(cq.id, position, entries.length)
        if (typeof entry.model === 'string') problems.push(`${label}: ${entry.model}`)
        const extra = overDisclosure(cq, entry.candidate.credential)
        if (extra.length > 0) {
          warnings.push(
            `${label}: claims disclosed beyond the query: ${extra.join(', ')} (OpenID4VP 1.0 §6.4 data minimisation)`,
          )
        }
      }
      for (const valid of match?.valid_credentials ?? []) {
        const entry = judged[valid.input_credential_index]
        if (entry) matches.push({ queryId: cq.id, index: entry.candidate.index })
      }
      for (const failed of match?.failed_credentials ?? []) {
        const entry = judged[failed.input_credential_index]
        if (!entry || typeof entry.model === 'string') continue
        const label = labelOf(cq.id, entries.indexOf(entry), entries.length)
        for (const reason of failureReasons(cq, entry.model, failed)) problems.push(`${label}: ${reason}`)
      }
    }
    for (const [i, set] of (result.credential_sets ?? []).entries()) {
      if (!set.required || set.matching_options) continue
      const [only, ...others] = set.options
      if (others.length === 0 && only) {
        // A one-option set (a mandatory type): name what is missing; a failed presentation said why already.
        for (const id of only) {
          if (!keyed.has(id)) problems.push(`credential query "${id}" has no readable presentation`)
        }
      } else {
        problems.push(
          `no option of required credential_sets[${i}] (${showOptions(set.options)}) is satisfied`,
        )
      }
    }

    const satisfied = problems.length === 0 && result.can_be_satisfied
    return {
      outcome: satisfied ? 'satisfied' : 'unsatisfied',
      detail: satisfied ? '' : problems.join('; ') || 'the vp_token does not satisfy the dcql_query',
      matches,
      ...(warnings.length > 0 ? { warnings } : {}),
    }
  },

  checkMapping(mapping, query) {
    const prepared = parseQuery(query)
    if (typeof prepared === 'string') return [] // evaluate() already reports an unreadable query
    const parsed = prepared.query
    if (!isObject(mapping)) {
      return ['vp_token is not a JSON object keyed by credential query ids (OpenID4VP 1.0 §8.1)']
    }
    const failures: string[] = []
    const answered = new Set<string>()
    for (const [key, value] of Object.entries(mapping)) {
      const cq = parsed.credentials.find((c) => c.id === key)
      if (!cq) failures.push(unknownKey(key))
      else if (!Array.isArray(value) || value.length === 0) {
        failures.push(`vp_token ${JSON.stringify(key)} is not a non-empty array of presentations`)
      } else {
        answered.add(key)
        if (value.length > 1 && !cq.multiple) failures.push(tooMany(key, value.length))
      }
    }
    const missing = (id: string) =>
      `vp_token has no entry for required credential query ${JSON.stringify(id)}`
    // §6.4.2: without credential_sets every credential query is required; with them, one option of each
    // required set.
    if (!parsed.credential_sets) {
      for (const cq of parsed.credentials) if (!answered.has(cq.id)) failures.push(missing(cq.id))
      return failures
    }
    for (const [i, set] of parsed.credential_sets.entries()) {
      if (!set.required || set.options.some((option) => option.every((id) => answered.has(id)))) continue
      const [only, ...others] = set.options
      if (others.length === 0 && only) failures.push(...only.filter((id) => !answered.has(id)).map(missing))
      else {
        failures.push(
          `vp_token answers no option of required credential_sets[${i}] (${showOptions(set.options)})`,
        )
      }
    }
    return failures
  },
}
