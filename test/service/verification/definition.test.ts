import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { canonicalJson } from '../../../src/service/verification/definition.ts'

// canonicalJson (verification/definition.ts) is what the definition's and the data agreement's detached
// JWS sign, and what relying parties rebuild to check them (docs/verification.md): its text must not
// change. It was rewritten for speed (it runs three times per session); this holds it to the earlier
// implementation, kept here as the reference, byte for byte.

function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

test('canonicalJson writes what the earlier implementation wrote, for any value', () => {
  // JSON values, keys of every kind (unicode, digits, __proto__-like), and what JSON has no text for.
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 2 }),
      fc.constantFrom<unknown>(undefined, () => 1, Symbol('s'), new Date(0), -0, Number.NaN),
      fc.array(tie('node'), { maxLength: 4 }),
      fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__proto__', '10', '2', 'a', 'B')), tie('node'), {
        maxKeys: 5,
      }),
    ),
  }))
  fc.assert(
    fc.property(value.node, (v) => {
      assert.equal(canonicalJson(v), reference(v))
    }),
    { numRuns: 500 },
  )
  assert.equal(
    canonicalJson({ b: [1, undefined, { d: 1, c: null }], a: 'x', z: undefined }),
    '{"a":"x","b":[1,,{"c":null,"d":1}]}',
  )
})
