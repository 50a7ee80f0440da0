import { createRequire } from 'node:module'
import type { IPresentationDefinition, PEX } from '@sphereon/pex'
import { isObject } from '../../shared/json.ts'
import { lazyRequire } from '../../shared/lazy.ts'

// The service's own Presentation Exchange evaluation, for issuance `di_vp` proofs and the verifier alike:
// a wallet's mapping is never trusted. Only 'info' counts as satisfied (PEX answers 'warn' for an unmet
// submission-requirement group). PEX (CommonJS, with ajv and JSONPath) loads at the first evaluation.
//
// PEX redoes per call what depends on the definition only: it copies the definition, validates it against
// the DIF schema, rewrites it with JSONPath `$..` walks, and runs its ten handlers twice (evaluate, then
// selectFrom), parsing every field path and compiling every filter anew; it decodes each JWT with
// jwt-decode's pure-JS base64. That was ~1 ms of a ~1.5 ms presentation check. So a definition of the shape
// this service builds is compiled once (per content, `id` aside: every session has its own id), and a
// response the compiled form finds satisfied is answered by it. PEX stays the reference: it answers
// whenever the compiled form does not say "satisfied" (its reasons are the detail a tester reads), and
// for every definition or credential outside what the compiled form covers. test/service/util/pex-compiled.test.ts
// holds the two to the same outcome and the same matches, over generated definitions and credentials.

const pex = lazyRequire<typeof import('@sphereon/pex')>('@sphereon/pex')

export interface DefinitionEvaluation {
  outcome: 'satisfied' | 'unsatisfied' | 'error'
  /** PEX's first reasons when unsatisfied, what went wrong when it could not evaluate; '' when satisfied */
  detail: string
  /** every (descriptor id, credential index) pair PEX matched */
  matches: { descriptor: string; index: number }[]
}

const INDEX_PATH = /^\$\.verifiableCredential\[(\d+)\]$/

/** Presentation Exchange as @sphereon/pex evaluates it, every call from scratch: the reference. */
export function evaluateWithPex(definition: unknown, jwts: readonly unknown[]): DefinitionEvaluation {
  const Pex = pex().PEX // outside the try: a library that cannot load is no evaluation outcome
  let evaluation: ReturnType<PEX['evaluateCredentials']>
  try {
    // The definition is our own (difDefinition) and PEX validates it itself; its model type is named only here.
    evaluation = new Pex().evaluateCredentials(definition as IPresentationDefinition, jwts as string[])
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

/**
 * Does this set of JWT credentials satisfy the definition, and which credential matches which input
 * descriptor: the compiled form of the definition when it finds the definition satisfied, PEX otherwise.
 */
export function evaluateDefinition(definition: unknown, jwts: readonly unknown[]): DefinitionEvaluation {
  const compiled = compiledVerdict(definition, jwts)
  if (compiled?.status === 'info') return { outcome: 'satisfied', detail: '', matches: compiled.matches }
  return evaluateWithPex(definition, jwts)
}

// ---- what PEX evaluates with, loaded from PEX's own place (the same module instances) ----

type Filter = (value: unknown) => unknown
interface PexModules {
  /** An ajv instance with the options and formats of PEX's field-filter validator. */
  compileFilter(schema: unknown): Filter
  /** @astronautlabs/jsonpath's parser: the same AST PEX's JSONPath.nodes builds on every call. */
  parsePath(path: string): PathComponent[]
  /** @sphereon/ssi-types' CredentialMapper, as PEX wraps a JWT credential. */
  toUniformCredential(decoded: Record<string, unknown>): Record<string, unknown>
}
interface PathComponent {
  expression: { type: string; value: unknown }
  operation?: string
  scope?: string
}

let modules: PexModules | undefined
function pexModules(): PexModules {
  if (modules) return modules
  const fromPex = createRequire(createRequire(import.meta.url).resolve('@sphereon/pex'))
  const ajvModule = fromPex('ajv') as { default: new (options: object) => AjvInstance }
  const formats = fromPex('ajv-formats') as { default: (ajv: AjvInstance) => void }
  // evaluation/handlers/inputDescriptorFilterEvaluationHandler.js: AJV_FIELD_FILTER
  const ajv = new ajvModule.default({
    verbose: false,
    code: { source: false, lines: true, esm: false },
    allowUnionTypes: true,
    allErrors: true,
    strict: false,
  })
  formats.default(ajv)
  const { JSONPath } = fromPex('@astronautlabs/jsonpath') as {
    JSONPath: { parse(path: string): PathComponent[] }
  }
  const { CredentialMapper } = fromPex('@sphereon/ssi-types') as {
    CredentialMapper: {
      jwtDecodedCredentialToUniformCredential(decoded: unknown): Record<string, unknown>
    }
  }
  modules = {
    compileFilter(schema) {
      const validate = ajv.compile(schema)
      // ajv keeps every schema object it compiled; the compiled function is all this module keeps.
      if (typeof schema === 'object' && schema !== null) ajv.removeSchema(schema)
      return validate
    },
    parsePath: (path) => JSONPath.parse(path),
    toUniformCredential: (decoded) => CredentialMapper.jwtDecodedCredentialToUniformCredential(decoded),
  }
  return modules
}
interface AjvInstance {
  compile(schema: unknown): Filter
  removeSchema(schema: object): void
}

// ---- the compiled form ----

type Step =
  | { kind: 'member'; key: string }
  | { kind: 'index'; index: number }
  | { kind: 'slice'; start: number | null; end: number | null; step: number | null }
  | { kind: 'all' }

interface CompiledField {
  /** Alternatives: the first that finds anything is the one judged (PEX JsonPathUtils.extractInputField). */
  paths: Step[][]
  filter: Filter | null
}
interface CompiledDescriptor {
  id: string
  group: readonly string[] | undefined
  /** A descriptor `format` that does not name `jwt_vc` refuses every JWT credential (FormatRestriction). */
  acceptsJwtVc: boolean
  fields: CompiledField[]
}
interface CompiledRequirement {
  rule: unknown
  from: string
  count?: number
  min?: number
  max?: number
}
interface CompiledDefinition {
  descriptors: CompiledDescriptor[]
  requirements: CompiledRequirement[] | undefined
}

/**
 * What the compiled form does not cover, anywhere in the definition: members PEX renames (`_const`,
 * `_enum`), handlers that need the holder or several credentials at once (is_holder, same_subject,
 * subject_is_issuer, limit_disclosure, predicate), nested requirements, and filter `$id`s (PEX registers
 * every filter in one shared ajv, so a second evaluation of the same `$id` throws).
 */
const UNCOVERED_MEMBERS = new Set([
  '_const',
  '_enum',
  'is_holder',
  'same_subject',
  'subject_is_issuer',
  'limit_disclosure',
  'predicate',
  'from_nested',
  '$id',
])

/**
 * Every member name of the definition is one the compiled form reads as PEX does: `path` and `fields`
 * (which PEX finds with `$..path` and `$..fields[*]` anywhere) only where DIF PE v2 §5 puts them, and no
 * field `id` (PEX's holder handlers then read every credentialSubject).
 */
function coveredShape(value: unknown, at: readonly (string | number)[]): boolean {
  if (Array.isArray(value)) return value.every((v, i) => coveredShape(v, [...at, i]))
  if (value === null || typeof value !== 'object') return true
  const descriptor = at[0] === 'input_descriptors'
  const inConstraints = descriptor && at.length === 3 && at[2] === 'constraints'
  const inField = descriptor && at.length === 5 && at[2] === 'constraints' && at[3] === 'fields'
  for (const [key, v] of Object.entries(value)) {
    if (UNCOVERED_MEMBERS.has(key)) return false
    if (key === 'path' ? !inField : key === 'id' && inField) return false
    if (key === 'fields' && !inConstraints) return false
    if (!coveredShape(v, [...at, key])) return false
  }
  return true
}

const parseNullableInt = (value: string) => (/^-?[0-9]+$/.test(value) ? Number.parseInt(value, 10) : null)

/** A field path as JSONPath parses it, in the components this module evaluates; undefined otherwise. */
function compilePath(path: unknown, parse: PexModules['parsePath']): Step[] | undefined {
  // PEX rewrites `@name` segments of a definition's paths first (JsonPathUtils.changeSpecialPathsRecursively)
  if (typeof path !== 'string' || path.length === 0 || path.includes('@')) return undefined
  let components: PathComponent[]
  try {
    components = parse(path)
  } catch {
    return undefined
  }
  if (components[0]?.expression.type === 'root') components = components.slice(1)
  const steps: Step[] = []
  for (const { operation, scope, expression } of components) {
    const kind = `${operation}-${scope}-${expression.type}`
    if (kind === 'member-child-identifier' || kind === 'subscript-child-string_literal') {
      steps.push({ kind: 'member', key: String(expression.value) })
    } else if (kind === 'subscript-child-numeric_literal' && typeof expression.value === 'number') {
      steps.push({ kind: 'index', index: expression.value })
    } else if (kind === 'subscript-child-slice' && typeof expression.value === 'string') {
      const [start = null, end = null, step = null] = expression.value.split(':').map(parseNullableInt)
      // JSONPath throws on a zero step, and a negative one may start past the end (an undefined node)
      if (step !== null && step <= 0) return undefined
      steps.push({ kind: 'slice', start, end, step })
    } else if (kind === 'member-child-wildcard' || kind === 'subscript-child-wildcard') {
      steps.push({ kind: 'all' })
    } else return undefined // descendants, unions, filter and script expressions: PEX's own JSONPath
  }
  return steps
}

function compileDefinition(definition: unknown): CompiledDefinition | undefined {
  let pd: Record<string, unknown>
  try {
    // What PEX reads: a JSON copy (SSITypesBuilder.toInternalPresentationDefinition).
    pd = JSON.parse(JSON.stringify(definition))
  } catch {
    return undefined
  }
  if (!isObject(pd) || !coveredShape(pd, [])) return undefined
  const { PEX: Pex, PEVersion } = pex()
  // The DIF schema check PEX runs on every call, run once: v1 definitions stay with PEX.
  if (Pex.definitionVersionDiscovery(pd as unknown as IPresentationDefinition).version !== PEVersion.v2)
    return undefined
  const { compileFilter, parsePath } = pexModules()
  const input = pd.input_descriptors
  if (!Array.isArray(input) || input.length === 0) return undefined
  const descriptors: CompiledDescriptor[] = []
  for (const d of input) {
    if (!isObject(d) || typeof d.id !== 'string' || descriptors.some((c) => c.id === d.id)) return undefined
    const constraints = isObject(d.constraints) ? d.constraints : {}
    const fields: CompiledField[] = []
    for (const f of Array.isArray(constraints.fields) ? constraints.fields : []) {
      if (!isObject(f) || !Array.isArray(f.path)) return undefined
      // PEX rewrites a value for `format: date` filters before validating it
      if (isObject(f.filter) && f.filter.format === 'date') return undefined
      const paths = f.path.map((p) => compilePath(p, parsePath))
      if (paths.some((p) => p === undefined)) return undefined
      let filter: Filter | null = null
      try {
        // `if (field.filter)`: a `false` filter is no filter to PEX
        if (f.filter) filter = compileFilter(f.filter)
      } catch {
        return undefined
      }
      fields.push({ paths: paths as Step[][], filter })
    }
    descriptors.push({
      id: d.id,
      group: Array.isArray(d.group) ? d.group.map(String) : undefined,
      acceptsJwtVc:
        !('format' in d && d.format) || (isObject(d.format) && Object.keys(d.format).includes('jwt_vc')),
      fields,
    })
  }
  let requirements: CompiledRequirement[] | undefined
  if (pd.submission_requirements !== undefined) {
    if (!Array.isArray(pd.submission_requirements)) return undefined
    requirements = []
    for (const sr of pd.submission_requirements) {
      if (!isObject(sr) || typeof sr.from !== 'string' || sr.from === '') return undefined
      const number = (n: unknown) => (typeof n === 'number' && n !== 0 ? n : undefined)
      requirements.push({
        rule: sr.rule,
        from: sr.from,
        ...(number(sr.count) !== undefined && { count: number(sr.count) }),
        ...(number(sr.min) !== undefined && { min: number(sr.min) }),
        ...(number(sr.max) !== undefined && { max: number(sr.max) }),
      })
    }
  }
  return { descriptors, requirements }
}

/** Compiled definitions by content without `id`; null: outside what the compiled form covers. */
const compiledDefinitions = new Map<string, CompiledDefinition | null>()
const MAX_COMPILED = 256

function compiledFor(definition: unknown): CompiledDefinition | undefined {
  // PE v2 §5: `id` is a string; any string keeps a definition valid, so one compiled form serves them all.
  if (!isObject(definition) || typeof definition.id !== 'string') return undefined
  let key: string
  try {
    key = JSON.stringify({ ...definition, id: '' })
  } catch {
    return undefined
  }
  let compiled = compiledDefinitions.get(key)
  if (compiled === undefined) {
    try {
      compiled = compileDefinition(definition) ?? null
    } catch {
      compiled = null
    }
    if (compiledDefinitions.size >= MAX_COMPILED) {
      compiledDefinitions.delete(compiledDefinitions.keys().next().value as string)
    }
    compiledDefinitions.set(key, compiled)
  }
  return compiled ?? undefined
}

// ---- a response, against the compiled form ----

/** @astronautlabs/jsonpath's `slice` (dist/slice.js), for the arguments a parsed slice can have. */
function slice(items: readonly unknown[], from: number | null, to: number | null, by: number | null) {
  const integer = (v: number) => (Number.isFinite(v) ? Math.trunc(v) : 0)
  const len = items.length
  const step = by ? integer(by) : 1
  let start: number | null = from !== null && from < 0 ? len + from : from
  let end: number | null = to !== null && to < 0 ? len + to : to
  start = integer(start === 0 ? 0 : !start ? (step > 0 ? 0 : len - 1) : start)
  end = integer(end === 0 ? 0 : !end ? (step > 0 ? len : -1) : end)
  start = step > 0 ? Math.max(0, start) : Math.min(len, start)
  end = step > 0 ? Math.min(end, len) : Math.max(-1, end)
  if ((step > 0 && end <= start) || (step < 0 && start <= end)) return []
  const out: unknown[] = []
  for (let i = start; i !== end; i += step) {
    if ((step < 0 && i <= end) || (step > 0 && i >= end)) break
    out.push(items[i])
  }
  return out
}

/** The values JSONPath.nodes finds (handlers.js, child scope only). */
function valuesAt(root: unknown, steps: readonly Step[]): unknown[] {
  let values: unknown[] = [root]
  for (const step of steps) {
    const next: unknown[] = []
    for (const value of values) {
      if (step.kind === 'member') {
        // `value instanceof Object && key in value`: inherited members count, as in JSONPath
        if (value instanceof Object && step.key in value)
          next.push((value as Record<string, unknown>)[step.key])
      } else if (step.kind === 'index') {
        if (Array.isArray(value) && step.index >= 0 && step.index < value.length) next.push(value[step.index])
      } else if (step.kind === 'slice') {
        if (Array.isArray(value)) next.push(...slice(value, step.start, step.end, step.step))
      } else if (Array.isArray(value)) next.push(...value)
      else if (value instanceof Object) next.push(...Object.values(value))
    }
    values = next
  }
  return values
}

/** InputDescriptorFilterEvaluationHandler: the first path that finds anything, and one value passing the filter. */
function fieldHolds(field: CompiledField, decoded: unknown): boolean {
  for (const path of field.paths) {
    const values = valuesAt(decoded, path)
    if (values.length === 0) continue
    return field.filter === null || values.some((v) => field.filter?.(v))
  }
  return false
}

const BASE64URL = /^[A-Za-z0-9_-]*$/
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** jwt-decode's reading of one segment, where it is plain base64url of UTF-8 JSON; undefined otherwise. */
function jsonSegment(segment: string | undefined): unknown {
  if (segment === undefined || segment.length % 4 === 1 || !BASE64URL.test(segment)) return undefined
  try {
    return JSON.parse(utf8.decode(Buffer.from(segment, 'base64url')))
  } catch {
    return undefined
  }
}

const MAX_DEPTH = 64
/** PEX's holder handlers walk every credential recursively (`$..credentialSubject`). */
function shallow(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object') return true
  if (depth >= MAX_DEPTH) return false
  for (const v of Object.values(value)) if (!shallow(v, depth + 1)) return false
  return true
}

/**
 * A JWT credential as PEX wraps it (CredentialMapper.toWrappedVerifiableCredential): its decoded payload,
 * with the `vc.proof` PEX adds and the members jwtDecodedCredentialToUniformCredential sets. Undefined for
 * anything PEX would read otherwise or throw on (SD-JWT, JSON-LD, no `vc`, claims that disagree, no W3C
 * `type`): PEX then answers.
 */
function wrapped(
  jwt: unknown,
  mapper: PexModules['toUniformCredential'],
): Record<string, unknown> | undefined {
  if (typeof jwt !== 'string' || !jwt.startsWith('ey') || jwt.includes('~')) return undefined
  const [h, p] = jwt.split('.')
  const payload = jsonSegment(p)
  const header = jsonSegment(h)
  if (!isObject(payload) || !isObject(payload.vc) || !isObject(header) || !shallow(payload)) return undefined
  payload.vc.proof = {
    type: 'JwtProof2020',
    created: payload.nbf,
    proofPurpose: 'authentication',
    verificationMethod: header.kid ?? payload.iss,
    jwt,
  }
  let credential: Record<string, unknown>
  try {
    credential = mapper(payload)
  } catch {
    return undefined // "Inconsistent issuers …": PEX throws the same and answers 'error'
  }
  // What the URI and DID-restriction handlers read without guarding (they throw otherwise).
  const { type, credentialSchema, issuer } = credential
  if (!(Array.isArray(type) || typeof type === 'string') || !('@context' in credential)) return undefined
  if (!type.includes('VerifiableCredential')) return undefined
  if (Array.isArray(credentialSchema) && credentialSchema.some((s) => s === null || s === undefined))
    return undefined
  if (issuer === null) return undefined
  return payload
}

type Status = 'info' | 'warn' | 'error'

/** EvaluationClientWrapper.determineAreRequiredCredentialsPresent for `from` requirements. */
function requirementsStatus(
  requirements: readonly CompiledRequirement[],
  descriptors: readonly CompiledDescriptor[],
  pairs: readonly { d: number; index: number }[],
): Status {
  if (requirements.length === 0) return 'error'
  const statuses = requirements.map((sr): Status => {
    const inGroup = (d: CompiledDescriptor | undefined) => d?.group?.includes(sr.from) === true
    // vc_path: the distinct credentials matched by any descriptor of the group
    const n = new Set(pairs.filter((m) => inGroup(descriptors[m.d])).map((m) => m.index)).size
    if (sr.rule === 'all') return n === descriptors.filter(inGroup).length ? 'info' : 'warn'
    if (sr.rule !== 'pick' || n === 0) return 'error'
    if (sr.count && n !== sr.count) return n > sr.count ? 'warn' : 'error'
    if (sr.min && n < sr.min) return 'error'
    if (sr.max && n > sr.max) return 'warn'
    return 'info'
  })
  return statuses.includes('error') ? 'error' : statuses.includes('warn') ? 'warn' : 'info'
}

/**
 * The compiled form's verdict: PEX's areRequiredCredentialsPresent and descriptor_map for these
 * credentials; undefined when the definition or a credential is outside what it covers. Exported for the
 * differential tests.
 */
export function compiledVerdict(
  definition: unknown,
  jwts: readonly unknown[],
): { status: Status; matches: DefinitionEvaluation['matches'] } | undefined {
  const compiled = compiledFor(definition)
  if (!compiled) return undefined
  const { toUniformCredential } = pexModules()
  const decoded: Record<string, unknown>[] = []
  for (const jwt of jwts) {
    const payload = wrapped(jwt, toUniformCredential)
    if (!payload) return undefined
    decoded.push(payload)
  }
  // descriptor_map: every (descriptor, credential) no handler refused, descriptors first (URI handler order)
  const pairs: { d: number; index: number }[] = []
  for (const [d, descriptor] of compiled.descriptors.entries()) {
    if (!descriptor.acceptsJwtVc) continue
    for (const [index, payload] of decoded.entries()) {
      if (descriptor.fields.every((f) => fieldHolds(f, payload))) pairs.push({ d, index })
    }
  }
  const matches = pairs.map((m) => ({ descriptor: compiled.descriptors[m.d]?.id as string, index: m.index }))
  if (pairs.length === 0) return { status: 'error', matches }
  // selectFrom: without submission_requirements every descriptor needs a credential (PE v2 §5)
  const status = compiled.requirements
    ? requirementsStatus(compiled.requirements, compiled.descriptors, pairs)
    : compiled.descriptors.every((_, d) => pairs.some((m) => m.d === d))
      ? 'info'
      : 'error'
  return { status, matches }
}

// ---- for test/service/util/pex-compiled.test.ts: the pieces the differential tests hold against the libraries ----

/** The values a field path finds in `root`, as the compiled form evaluates it; undefined: left to PEX. */
export function pathValues(path: string, root: unknown): unknown[] | undefined {
  const steps = compilePath(path, pexModules().parsePath)
  return steps && valuesAt(root, steps)
}

/** A JWT segment as the compiled form reads it (jwt-decode's reading); undefined: left to PEX. */
export const decodeSegment = jsonSegment
