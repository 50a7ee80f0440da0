import { ConflictError } from './index.ts'

// SQLite's constraint errors, turned into the repositories' ConflictError.

export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string }).code ?? ''
  return code.startsWith('SQLITE_CONSTRAINT_PRIMARYKEY') || code.startsWith('SQLITE_CONSTRAINT_UNIQUE')
}

export async function insertOrConflict(work: Promise<unknown>, what: string): Promise<void> {
  try {
    await work
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError(`${what} already exists`)
    throw error
  }
}
