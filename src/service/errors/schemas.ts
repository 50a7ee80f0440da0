import { Type } from '../util/typebox.ts'

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'Stable machine-readable error code (see docs/errors.md).' }),
    errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details (application/problem+json).' },
)

const ref = Type.Unsafe<unknown>({ $ref: 'Problem#' })

/** Response schemas for the given error statuses, all problem+json. */
export function problems(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [s, { ...ref, description: 'Problem details (application/problem+json)' }]),
  )
}
