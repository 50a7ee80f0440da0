import { ConflictError } from './index.ts'

// Constraint errors of SQLite and PostgreSQL, turned into the repositories' ConflictError.

/** A primary key or unique constraint refused the write: SQLite's codes, or PostgreSQL's SQLSTATE 23505. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string }).code ?? ''
  return (
    code === '23505' ||
    code.startsWith('SQLITE_CONSTRAINT_PRIMARYKEY') ||
    code.startsWith('SQLITE_CONSTRAINT_UNIQUE')
  )
}

export async function insertOrConflict(work: Promise<unknown>, what: string): Promise<void> {
  try {
    await work
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError(`${what} already exists`)
    throw error
  }
}
