// A schema's `default` annotations applied to a value, for the JSON Schema the configuration's TypeBox
// definitions produce: `default` on any schema (optional properties too), object `properties`, schema-valued
// `additionalProperties` and `patternProperties`, array `items`. For those it does what typebox/value's
// `Value.Default` does, without loading typebox/value (some 300 modules) at start-up (bench/startup.ts). Not
// looked into: anyOf / oneOf / allOf and $ref, under which no template schema has a default.

interface Schema {
  type?: unknown
  default?: unknown
  properties?: Record<string, object>
  additionalProperties?: unknown
  patternProperties?: Record<string, object>
  items?: unknown
}

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null

/**
 * `value` with every missing member that has a default set to a copy of it, nested objects and array items
 * included. Mutates `value` (clone it first) and returns it, or the default when `value` is undefined.
 */
export function applyDefaults(typeSchema: object, value: unknown): unknown {
  const schema = typeSchema as Schema
  const filled = value === undefined && 'default' in schema ? structuredClone(schema.default) : value
  if (schema.type === 'array' && Array.isArray(filled) && isSchema(schema.items)) {
    for (let i = 0; i < filled.length; i++) filled[i] = applyDefaults(schema.items, filled[i])
    return filled
  }
  if (schema.type !== 'object' || typeof filled !== 'object' || filled === null) return filled
  const object = filled as Record<string, unknown>
  const properties = schema.properties ?? {}
  for (const [key, property] of Object.entries(properties)) {
    const member = applyDefaults(property, object[key])
    if (member !== undefined) object[key] = member
  }
  const patterns = Object.entries(schema.patternProperties ?? {}).map(([p, s]) => [new RegExp(p), s] as const)
  for (const key of Object.keys(object)) {
    if (Object.hasOwn(properties, key)) continue
    const matching = patterns.filter(([pattern]) => pattern.test(key))
    for (const [, inner] of matching) object[key] = applyDefaults(inner, object[key])
    if (matching.length === 0 && isSchema(schema.additionalProperties)) {
      object[key] = applyDefaults(schema.additionalProperties, object[key])
    }
  }
  return object
}
