import { createRequire } from 'node:module'
import type * as TypeBox from 'typebox'

// TypeBox by require() (Node ≥ 20.19 loads ES modules that way): its ~370 ES modules then load without
// tsx's loader hooks, ~120 ms of `vc-harness serve`'s start (bench/startup.ts). Every value import of
// typebox in src/ comes from here (test/repo/import-cycles.test.ts); its Kind symbols are global, so a copy
// loaded elsewhere (a test's typebox/value) still reads these schemas.
export const Type: typeof TypeBox.Type = (createRequire(import.meta.url)('typebox') as typeof TypeBox).Type
export type { Static, TSchema } from 'typebox'
