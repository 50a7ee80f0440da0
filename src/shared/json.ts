/** A plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A plain-JSON copy: no undefined members, no prototypes, no shared references (what schema validators such as dcql's expect). */
export const jsonCopy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T
