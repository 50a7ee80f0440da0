import { DcqlQuery } from 'dcql'
import { type FormatId, formatOf } from '../../formats/registry.ts'

// The dcql_query of a verification template (OpenID4VP 1.0 Final §6): the DCQL counterpart of the
// presentation definition (definition.ts). One credential query per credential type; requested fields
// become claims queries, optional ones a fallback claim set; optional groups become credential_sets.

/** What a template asks for, in the template's words (config/schema.ts VerificationTemplate). */
export interface DcqlQueryInput {
  /** Mandatory types: every one must be presented. */
  credentialTypes: readonly string[]
  /** Groups the holder picks `min` types from; `min` 0 makes every type of the group optional. */
  optionalGroups?: readonly {
    name: string
    credentialTypes: readonly string[]
    min: number
    purpose?: string
  }[]
  /** `$.credentialSubject.a.b` claims; without `credentialTypes` asked of every requested type. */
  requestedFields?: readonly {
    path: string
    credentialTypes?: readonly string[]
    optional: boolean
    purpose?: string
  }[]
  format: FormatId
  /** The SD-JWT VC `vct` values a type is accepted under (dc+sd-jwt only). */
  vctValues(type: string): string[]
}

export interface DcqlClaimsQueryJson {
  id?: string
  path: string[]
}

export interface DcqlCredentialQueryJson {
  id: string
  format: FormatId
  meta: { vct_values: string[] } | { type_values: string[][] } | { doctype_value: string }
  claims?: DcqlClaimsQueryJson[]
  claim_sets?: string[][]
}

export interface DcqlCredentialSetJson {
  options: string[][]
  required?: boolean
  purpose?: string
}

/** A DCQL query as it goes on the wire: plain JSON that `DcqlQuery.parse` accepts. */
export interface DcqlQueryJson {
  credentials: DcqlCredentialQueryJson[]
  credential_sets?: DcqlCredentialSetJson[]
}

/** Beyond this many options per credential set the request grows unreadable for wallets and people. */
export const MAX_SET_OPTIONS = 64

const SUBJECT_PATH = /^\$\.credentialSubject((?:\.[^.]+)+)$/

/** §6.1 / §6.3: ids are non-empty and made of alphanumerics, `_` and `-`; `taken` keeps them unique. */
function uniqueId(wanted: string, taken: Set<string>): string {
  const base = wanted.replace(/[^A-Za-z0-9_-]/g, '_') || 'credential'
  let id = base
  for (let n = 2; taken.has(id); n++) id = `${base}_${n}`
  taken.add(id)
  return id
}

function binomial(n: number, k: number): number {
  let c = 1
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i
  return Math.round(c)
}

/** Every way to pick `k` of `items`, in order. */
function combinations<T>(items: readonly T[], k: number): T[][] {
  if (k === 0) return [[]]
  return items.flatMap((first, i) => combinations(items.slice(i + 1), k - 1).map((rest) => [first, ...rest]))
}

/**
 * The claims of one credential query. SD-JWT VC claims are top-level claims of the credential (§7.1,
 * Appendix B.3); a W3C credential is matched from its root, so the path keeps `credentialSubject`
 * (Appendix B.1.2). Optional fields: first claim set all claims, then the required ones only (§6.4.1:
 * the wallet returns the first option it can satisfy).
 */
function claimsOf(
  type: string,
  input: DcqlQueryInput,
  problems: string[],
): Pick<DcqlCredentialQueryJson, 'claims' | 'claim_sets'> {
  // §6.1: a query must not point to the same claim twice; a required mention wins over an optional one.
  const byPath = new Map<string, { segments: string[]; optional: boolean }>()
  for (const field of input.requestedFields ?? []) {
    if (field.credentialTypes && !field.credentialTypes.includes(type)) continue
    const match = SUBJECT_PATH.exec(field.path)
    if (!match) {
      problems.push(`requested field path ${JSON.stringify(field.path)} is not a $.credentialSubject.… path`)
      continue
    }
    const segments = (match[1] as string).slice(1).split('.')
    const seen = byPath.get(field.path)
    byPath.set(field.path, { segments, optional: field.optional && (seen?.optional ?? true) })
  }
  const fields = [...byPath.values()]
  if (fields.length === 0) return {}
  const { dcql } = formatOf(input.format)
  const pathOf = (segments: string[]) => dcql.claimPath(segments, type)
  if (fields.every((f) => !f.optional)) return { claims: fields.map((f) => ({ path: pathOf(f.segments) })) }
  const ids = new Set<string>()
  const claims = fields.map((f) => ({ id: uniqueId(f.segments.join('_'), ids), path: pathOf(f.segments) }))
  const required = claims.filter((_, i) => !fields[i]?.optional).map((c) => c.id)
  if (required.length > 0) return { claims, claim_sets: [claims.map((c) => c.id), required] }
  // Every field optional: a claim set cannot be empty (§6.1), so the fallback asks for a claim every
  // credential of the format carries and no wallet discloses selectively: `vct` (SD-JWT VC), `type` (W3C).
  const anchorName = dcql.anchorClaim
  if (anchorName === undefined) {
    problems.push(
      `${input.format} has no claim every credential carries, so a query whose every claim is optional cannot be built (make one requested field mandatory)`,
    )
    return { claims }
  }
  const anchor = { id: uniqueId(anchorName, ids), path: [anchorName] }
  return { claims: [...claims, anchor], claim_sets: [claims.map((c) => c.id), [anchor.id]] }
}

function credentialQuery(
  type: string,
  id: string,
  input: DcqlQueryInput,
  problems: string[],
): DcqlCredentialQueryJson {
  // Appendix B: the format says how a credential query names the type (vct_values, type_values).
  const meta = formatOf(input.format).dcql.meta(type, () => input.vctValues(type))
  if (typeof meta === 'string') problems.push(meta)
  return {
    id,
    format: input.format,
    meta: typeof meta === 'string' ? { vct_values: [] } : meta,
    ...claimsOf(type, input, problems),
  }
}

function build(input: DcqlQueryInput, problems: string[]): DcqlQueryJson {
  const groups = input.optionalGroups ?? []
  const types = [...new Set([...input.credentialTypes, ...groups.flatMap((g) => g.credentialTypes)])]
  const taken = new Set<string>()
  const idOf = new Map(types.map((type) => [type, uniqueId(type, taken)]))
  const id = (type: string) => idOf.get(type) as string
  const credentials = types.map((type) => credentialQuery(type, id(type), input, problems))
  if (groups.length === 0) return { credentials } // §6.4.2: without credential_sets all are requested
  const sets: DcqlCredentialSetJson[] = input.credentialTypes.map((type) => ({ options: [[id(type)]] }))
  for (const group of groups) {
    const n = group.credentialTypes.length
    const purpose = group.purpose === undefined ? {} : { purpose: group.purpose }
    if (group.min > n) {
      problems.push(`optional group "${group.name}": min ${group.min} is more than its ${n} credential types`)
      continue
    }
    const count = group.min === 0 ? n : binomial(n, group.min)
    if (count > MAX_SET_OPTIONS) {
      problems.push(
        `optional group "${group.name}" (pick ${group.min} of ${n} credential types) needs ${count} credential_sets options; the dcql profile cannot express more than ${MAX_SET_OPTIONS}`,
      )
      continue
    }
    const ids = group.credentialTypes.map(id)
    if (group.min === 0) sets.push({ options: ids.map((i) => [i]), required: false, ...purpose })
    else sets.push({ options: combinations(ids, group.min), ...purpose })
  }
  return { credentials, credential_sets: sets }
}

/**
 * dcql's verdict on built queries, by their JSON: a template builds the same query for every session, so
 * dcql's parse and validation (valibot) run once per template, not per session. '' when valid. Bounded.
 */
const validated = new Map<string, string>()
const MAX_VALIDATED = 256

function dcqlProblem(query: DcqlQueryJson): string {
  const key = JSON.stringify(query)
  let problem = validated.get(key)
  if (problem === undefined) {
    try {
      // the plain JSON type is looser than dcql's input type; parse() is the real check
      DcqlQuery.validate(DcqlQuery.parse(query as unknown as DcqlQuery.Input))
      problem = ''
    } catch (error) {
      problem = `the DCQL query built from the template is invalid: ${(error as Error).message}`
    }
    if (validated.size >= MAX_VALIDATED) validated.delete(validated.keys().next().value as string)
    validated.set(key, problem)
  }
  return problem
}

/** The query, checked with dcql itself (`DcqlQuery.parse` + `validate`); problems in its messages. */
function checked(input: DcqlQueryInput): { query: DcqlQueryJson; problems: string[] } {
  const problems: string[] = []
  const query = build(input, problems)
  if (problems.length === 0) {
    const problem = dcqlProblem(query)
    if (problem) problems.push(problem)
  }
  return { query, problems }
}

/**
 * A verification template's request as a DCQL query. Throws an Error whose message names every
 * problem (an optional group too large to express, a type without vct values, a malformed path).
 */
export function buildDcqlQuery(input: DcqlQueryInput): DcqlQueryJson {
  const { query, problems } = checked(input)
  if (problems.length > 0) throw new Error(problems.join('; '))
  return query
}

/** What `buildDcqlQuery` would throw for, as messages (config validation at template load). */
export function dcqlQueryProblems(input: DcqlQueryInput): string[] {
  return checked(input).problems
}
