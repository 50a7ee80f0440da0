// Which JSONPath expressions of a Presentation Exchange definition are safe to hand to @sphereon/pex, whose
// JSONPath (@astronautlabs/jsonpath) evaluates filter and script expressions (`?(…)`, `(…)`) with static-eval
// and walks plain JavaScript objects, prototype included: `$..[?(@.__defineGetter__)]` matches every node
// of a credential. A definition written by someone else (a verifier's request object, an issuer's offer) is
// evaluated only when every field path is plain: `$` followed by member names (`.name`, `['name']`), array
// indices and slices (`[0]`, `[-1:]`), and wildcards (`.*`, `[*]`) — no filter or script expression, no
// recursive descent (`..`), no union, and no member that names a property of Object.prototype (`__proto__`,
// `constructor`, `__defineGetter__`, …) or `prototype`. DIF Presentation Exchange v2 §5 "Input Descriptor
// Object" (fields.path: "JSONPath string expressions") allows more; this is what a wallet that evaluates an
// untrusted definition accepts. Pure: both sides of the wire may use it.

/** Longest field path accepted (the paths of real definitions are a few dozen characters). */
export const MAX_JSON_PATH_LENGTH = 256

/** Member names that reach the prototype chain of a plain object instead of its own data. */
const FORBIDDEN_MEMBERS: ReadonlySet<string> = new Set([
  ...Object.getOwnPropertyNames(Object.prototype),
  'prototype',
])

const DOT_MEMBER = /^\.([\p{L}_$][\p{L}\p{N}_$-]*|\*)/u
const BRACKET_STRING = /^\[(?:'([^'\\]*)'|"([^"\\]*)")\]/
const BRACKET_INDEX = /^\[(-?\d{1,9}|\*)\]/
const BRACKET_SLICE = /^\[(-?\d{1,9})?:(-?\d{1,9})?(?::(-?[1-9]\d{0,8})?)?\]/

/** Why `path` is not a plain member/index JSONPath, or undefined when it is. */
export function plainJsonPathProblem(path: unknown): string | undefined {
  if (typeof path !== 'string') return 'it is not a string'
  if (path.length > MAX_JSON_PATH_LENGTH) return `it is longer than ${MAX_JSON_PATH_LENGTH} characters`
  if (!path.startsWith('$')) return 'it does not start at the root ($)'
  // checked first: the expressions static-eval would run are what this rule exists for
  if (/[?()]/.test(path)) return 'a filter or script expression ( ?(…) or (…) ) is not evaluated'
  let rest = path.slice(1)
  while (rest.length > 0) {
    if (rest.startsWith('..')) return 'recursive descent (..) is not evaluated'
    const dot = DOT_MEMBER.exec(rest)
    const quoted = dot ? null : BRACKET_STRING.exec(rest)
    const match = dot ?? quoted ?? BRACKET_INDEX.exec(rest) ?? BRACKET_SLICE.exec(rest)
    if (!match) {
      const at = path.length - rest.length
      return rest.startsWith('.@') || rest.startsWith('[@')
        ? `@ at character ${at} (the current node of a filter expression) is not evaluated; a member named @… is written ['@…']`
        : `character ${at} (${JSON.stringify(rest.slice(0, 12))}) starts no member, index, slice or wildcard step`
    }
    const member = dot ? (dot[1] === '*' ? undefined : dot[1]) : quoted ? (quoted[1] ?? quoted[2]) : undefined
    if (member !== undefined && FORBIDDEN_MEMBERS.has(member)) {
      return `the member ${JSON.stringify(member)} reaches the prototype chain, not the credential's own data`
    }
    rest = rest.slice(match[0].length)
  }
  return undefined
}

export interface JsonPathProblem {
  /** where the path sits in the definition, e.g. `input_descriptors[0].constraints.fields[1].path[0]` */
  at: string
  path: unknown
  problem: string
}

/**
 * The first field path of a Presentation Exchange definition that is not plain (see plainJsonPathProblem),
 * or undefined. Reads `input_descriptors[].constraints.fields[].path` (a string or an array of strings), the
 * only JSONPath expressions of a definition an evaluator runs against credentials.
 */
export function definitionPathProblem(definition: unknown): JsonPathProblem | undefined {
  const descriptors = isRecord(definition) ? definition.input_descriptors : undefined
  if (!Array.isArray(descriptors)) return undefined
  for (const [d, descriptor] of descriptors.entries()) {
    const constraints = isRecord(descriptor) ? descriptor.constraints : undefined
    const fields = isRecord(constraints) ? constraints.fields : undefined
    if (!Array.isArray(fields)) continue
    for (const [f, field] of fields.entries()) {
      if (!isRecord(field) || field.path === undefined) continue
      const paths = Array.isArray(field.path) ? field.path : [field.path]
      for (const [p, path] of paths.entries()) {
        const problem = plainJsonPathProblem(path)
        if (problem) {
          const at = `input_descriptors[${d}].constraints.fields[${f}].path${Array.isArray(field.path) ? `[${p}]` : ''}`
          return { at, path, problem }
        }
      }
    }
  }
  return undefined
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
