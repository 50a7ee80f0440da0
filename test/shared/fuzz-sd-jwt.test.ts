import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { sdJwtVcCredential } from '../../src/formats/sd-jwt-vc/verify.ts'
import { didKeyFromPublicKey, generateKeyPair, JWS_ALGS, resolveDidKey } from '../../src/shared/did-key.ts'
import { SD_JWT_LIMITS, SdJwtError, sdJwtClaims, verifySdJwtVc } from '../../src/shared/sd-jwt.ts'
import { fanOutSdJwt } from '../fixtures/sd-jwt-attacks.ts'

// Issue 30 in the project's own fuzzing: signed SD-JWTs of random fan-out (1–6 references per level, 1–16
// levels, up to 16.7 million claims if unpacked naively), then one random mutation (a disclosure dropped,
// presented twice, garbled, the order shuffled). Whatever the shape, the shared verifier, the display reader
// and the service's reader either accept it with at most SD_JWT_LIMITS.maxClaims claims and one leaf per
// path, or refuse it with an SdJwtError (the service: a failed credentialProof); a digest listed twice is
// always refused. A hang fails the run by its time limit. `VC_HARNESS_FUZZ_RUNS` (default 10) and
// `VC_HARNESS_FUZZ_SEED` as in test/service/fuzz-openapi.test.ts; `npm run fuzz:nightly` runs both files with many more.

const RUNS = Number(process.env.VC_HARNESS_FUZZ_RUNS ?? 10)
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('VC_HARNESS_FUZZ_RUNS must be a positive integer')
const SEED =
  process.env.VC_HARNESS_FUZZ_SEED === undefined ? undefined : Number(process.env.VC_HARNESS_FUZZ_SEED)

const pair = generateKeyPair('EdDSA')
const key = didKeyFromPublicKey(pair.publicKey)
const issuer = { alg: 'EdDSA' as const, privateKey: pair.privateKey, kid: key.kid, iss: key.did }
// `now` is read per run: a token made minutes after this module loaded (a loaded machine) is not "in the future"
const options = () => ({ issuerKey: () => pair.publicKey, algorithms: JWS_ALGS, now: Date.now() })

/** Every member and element of a JSON value. */
function size(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  const items = Array.isArray(value) ? value : Object.values(value)
  return items.reduce((n: number, item) => n + 1 + size(item), 0)
}

function mutate(token: string, mutation: string, at: number): string {
  const parts = token.split('~')
  const disclosures = parts.slice(1, -1)
  const i = at % Math.max(1, disclosures.length)
  if (disclosures.length === 0 || mutation === 'none') return token
  if (mutation === 'drop') disclosures.splice(i, 1)
  if (mutation === 'twice') disclosures.push(disclosures[i] as string)
  if (mutation === 'garble') disclosures[i] = `${disclosures[i]}A`
  if (mutation === 'shuffle') disclosures.reverse()
  return [parts[0], ...disclosures, ''].join('~')
}

describe('fuzzing the bounded SD-JWT reader (issue 30)', () => {
  test(`random fan-out and mutations: accepted small, or refused (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 16 }),
        fc.constantFrom('none', 'drop', 'twice', 'garble', 'shuffle'),
        fc.nat(),
        async (refs, levels, mutation, at) => {
          const token = mutate(fanOutSdJwt(issuer, refs, levels), mutation, at)
          const outcomes = await Promise.allSettled([verifySdJwtVc(token, options()), sdJwtClaims(token)])
          for (const outcome of outcomes) {
            if (outcome.status === 'rejected') {
              assert.ok(outcome.reason instanceof SdJwtError, String(outcome.reason))
              if (refs > 1) assert.match(outcome.reason.message, /listed more than once|presented twice|not/)
              continue
            }
            const claims = 'claims' in outcome.value ? outcome.value.claims : outcome.value
            assert.equal(refs, 1, 'a token that references a disclosure twice is never accepted')
            assert.ok(size(claims) <= SD_JWT_LIMITS.maxClaims)
          }
          // The service's reader: the same verdict, as credentialProof.
          const credential = sdJwtVcCredential.read(`${token}`, { algorithms: JWS_ALGS })
          const proof = await credential.verifyProof(resolveDidKey)
          assert.equal(proof.ok, outcomes[0].status === 'fulfilled', proof.ok ? 'accepted' : proof.reason)
        },
      ),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
    )
  })
})
