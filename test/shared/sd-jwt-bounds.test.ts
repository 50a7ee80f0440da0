import assert from 'node:assert/strict'
import { createHash, type JsonWebKey } from 'node:crypto'
import { describe, test } from 'node:test'
import { sdJwtVcCredential } from '../../src/formats/sd-jwt-vc/verify.ts'
import { didKeyFromPublicKey, generateKeyPair, JWS_ALGS, resolveDidKey } from '../../src/shared/did-key.ts'
import {
  readDisclosures,
  SD_JWT_LIMITS,
  SdJwtError,
  sdJwtClaims,
  verifySdJwtVc,
} from '../../src/shared/sd-jwt.ts'
import { parseReceivedSdJwt, verifyReceivedSdJwt } from '../../src/wallet/sd-jwt-receive.ts'
import {
  type AttackIssuer,
  fanOutSdJwt,
  objectDisclosure,
  signedSdJwt,
  withKeyBinding,
} from '../fixtures/sd-jwt-attacks.ts'

// Issue 30: an SD-JWT is bounded before it is trusted, by one reader (src/shared/sd-jwt.ts readDisclosures)
// for the service's pipeline, the wallet and the shared verifier. RFC 9901 §7.1: a digest listed twice, a
// disclosure referenced nowhere, a disclosure named `_sd` or `...`, a name already at its level are refused;
// SD_JWT_LIMITS caps disclosures, digests, depth and claims. A fan-out token that unpacked to refs^levels
// claims (4×12: 16.7 million) is refused on its first repeated digest; without the rule these tests hang.

function attacker(): AttackIssuer & { did: string } {
  const pair = generateKeyPair('EdDSA')
  const key = didKeyFromPublicKey(pair.publicKey)
  return { alg: 'EdDSA', privateKey: pair.privateKey, kid: key.kid, iss: key.did, did: key.did }
}

const holderPair = generateKeyPair('ES256')
const holderJwk = holderPair.publicKey.export({ format: 'jwk' }) as JsonWebKey
const verifyOptions = (issuer: AttackIssuer) => ({
  issuerKey: () => resolveDidKey(issuer.kid).publicKey,
  algorithms: JWS_ALGS,
  now: Date.now(),
})
const refusedWith = (pattern: RegExp) => (error: unknown) =>
  error instanceof SdJwtError && pattern.test(error.message)

describe('the fan-out SD-JWT (one disclosure referenced many times, RFC 9901 §7.1)', () => {
  for (const [refs, levels] of [
    [4, 8],
    [4, 12],
  ] as const) {
    test(`${refs}×${levels}: refused by the shared verifier, the display reader and the wallet`, async () => {
      const issuer = attacker()
      const token = fanOutSdJwt(issuer, refs, levels, { cnf: { jwk: holderJwk } })
      assert.ok(token.length < 5000, `a ${token.length}-byte token`)
      const twice = /a digest is listed more than once \(RFC 9901 §7\.1\)/
      await assert.rejects(verifySdJwtVc(token, verifyOptions(issuer)), refusedWith(twice))
      await assert.rejects(sdJwtClaims(token), refusedWith(twice))
      // The wallet receiving it from a malicious issuer (careful and careless).
      await assert.rejects(verifyReceivedSdJwt(token, { holderJwk }), (e: Error) => twice.test(e.message))
      await assert.rejects(parseReceivedSdJwt(token), (e: Error) => twice.test(e.message))
    })
  }

  test("the service's reader: refused under credentialProof, no claim of it applied, no query run on it", async () => {
    const issuer = attacker()
    const presented = withKeyBinding(
      fanOutSdJwt(issuer, 4, 12, { cnf: { jwk: holderJwk } }),
      { alg: 'ES256', privateKey: holderPair.privateKey },
      { nonce: 'n', aud: 'x509_san_dns:verifier.example' },
    )
    const credential = sdJwtVcCredential.read(presented, { algorithms: JWS_ALGS })
    // Before the proof: only the payload's plain claims (the digests, unexpanded).
    assert.equal((credential.claims.claims as unknown[]).length, 4)
    const proof = await credential.verifyProof(resolveDidKey)
    assert.equal(proof.ok, false)
    assert.match(proof.ok ? '' : proof.reason, /^disclosures: a digest is listed more than once/)
    assert.equal((credential.claims.claims as unknown[]).length, 4, 'nothing was unpacked')
  })
})

describe('RFC 9901 §7.1, rule by rule', () => {
  const issuer = attacker()
  const base = { iss: issuer.iss, vct: 'https://credentials.example/VerifiableId' }

  test('a digest listed twice in one _sd array', async () => {
    const { disclosure, digest } = objectDisclosure('given_name', 'Erika')
    const token = signedSdJwt(issuer, { ...base, _sd: [digest, digest] }, [disclosure])
    await assert.rejects(verifySdJwtVc(token, verifyOptions(issuer)), refusedWith(/listed more than once/))
  })

  test('the same disclosure presented twice', async () => {
    const { disclosure, digest } = objectDisclosure('given_name', 'Erika')
    const token = signedSdJwt(issuer, { ...base, _sd: [digest] }, [disclosure, disclosure])
    await assert.rejects(verifySdJwtVc(token, verifyOptions(issuer)), refusedWith(/presented twice/))
  })

  test('a disclosure no digest references (the library accepts it silently)', async () => {
    const listed = objectDisclosure('given_name', 'Erika')
    const foreign = objectDisclosure('family_name', 'Mallory')
    const token = signedSdJwt(issuer, { ...base, _sd: [listed.digest] }, [
      listed.disclosure,
      foreign.disclosure,
    ])
    await assert.rejects(verifySdJwtVc(token, verifyOptions(issuer)), refusedWith(/is not referenced/))
    // Shown without verifying (the careless wallet, the wallet's list): left out, never applied.
    const shown = await sdJwtClaims(token)
    assert.equal(shown.given_name, 'Erika')
    assert.equal(shown.family_name, undefined)
  })

  test('a disclosure named _sd or "...", or a name already present at its level', async () => {
    for (const name of ['_sd', '...']) {
      const { disclosure, digest } = objectDisclosure(name, ['x'])
      const token = signedSdJwt(issuer, { ...base, _sd: [digest] }, [disclosure])
      await assert.rejects(verifySdJwtVc(token, verifyOptions(issuer)), refusedWith(/names the claim/))
    }
    const { disclosure, digest } = objectDisclosure('vct', 'https://other.example')
    const token = signedSdJwt(issuer, { ...base, _sd: [digest] }, [disclosure])
    await assert.rejects(
      verifySdJwtVc(token, verifyOptions(issuer)),
      refusedWith(/already present at its level/),
    )
  })

  test('an object disclosure referenced as an array element', async () => {
    const { disclosure, digest } = objectDisclosure('given_name', 'Erika')
    const token = signedSdJwt(issuer, { ...base, list: [{ '...': digest }] }, [disclosure])
    await assert.rejects(
      verifySdJwtVc(token, verifyOptions(issuer)),
      refusedWith(/referenced as an array element/),
    )
  })

  test('a claim named __proto__ is an own claim, never the prototype', () => {
    const { disclosure, digest } = objectDisclosure('__proto__', { polluted: true })
    const { claims } = readDisclosures({ ...base, _sd: [digest] }, [disclosure])
    assert.equal(Object.getPrototypeOf(claims), Object.prototype)
    assert.deepEqual(Object.getOwnPropertyDescriptor(claims, '__proto__')?.value, { polluted: true })
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  test('the issuer signature is checked before any disclosure is decoded', async () => {
    const other = attacker()
    const token = signedSdJwt(issuer, { ...base, _sd: [] }, ['not-json', 'not-json'])
    // Signed by `issuer`, verified with `other`'s key: the signature is named, not the garbage disclosures.
    await assert.rejects(
      verifySdJwtVc(token, verifyOptions(other)),
      refusedWith(/the issuer signature does not verify/),
    )
    await assert.rejects(
      verifySdJwtVc(token, verifyOptions(issuer)),
      refusedWith(/disclosure 0 is not base64url-encoded JSON/),
    )
  })
})

describe('SD_JWT_LIMITS', () => {
  const issuer = attacker()
  const base = { iss: issuer.iss, vct: 'https://credentials.example/VerifiableId' }

  test(`more than ${SD_JWT_LIMITS.maxDisclosures} disclosures: refused before any is decoded`, async () => {
    const many = Array.from({ length: SD_JWT_LIMITS.maxDisclosures + 1 }, () => objectDisclosure('a', 1))
    const token = signedSdJwt(
      issuer,
      base,
      many.map((d) => d.disclosure),
    )
    await assert.rejects(verifySdJwtVc(token, verifyOptions(issuer)), refusedWith(/limit maxDisclosures/))
    assert.throws(
      () => sdJwtVcCredential.read(token, { algorithms: JWS_ALGS }),
      /has 1025 disclosures; at most 1024 are read \(limit maxDisclosures\)/,
    )
  })

  test(`more than ${SD_JWT_LIMITS.maxDigests} digests (decoys included)`, () => {
    const decoys = Array.from({ length: SD_JWT_LIMITS.maxDigests + 1 }, (_, i) => `decoy-${i}`)
    assert.throws(() => readDisclosures({ ...base, _sd: decoys }, []), /limit maxDigests/)
  })

  test(`claims nesting deeper than ${SD_JWT_LIMITS.maxDepth} levels, through disclosures`, () => {
    // Each disclosure holds the next one's reference one level down: 40 disclosures, 40+ levels.
    let inner = objectDisclosure('leaf', 1)
    const disclosures = [inner.disclosure]
    for (let i = 0; i < 40; i++) {
      inner = objectDisclosure(`n${i}`, { _sd: [inner.digest] })
      disclosures.push(inner.disclosure)
    }
    assert.throws(() => readDisclosures({ ...base, _sd: [inner.digest] }, disclosures), /limit maxDepth/)
  })

  test(`more than ${SD_JWT_LIMITS.maxClaims} claims unpacked`, () => {
    const wide = Object.fromEntries(Array.from({ length: SD_JWT_LIMITS.maxClaims }, (_, i) => [`c${i}`, i]))
    assert.throws(() => readDisclosures({ ...base, ...wide }, []), /limit maxClaims/)
    assert.equal(Object.keys(readDisclosures({ c: 1 }, []).claims).length, 1)
  })

  test('a legitimate nested credential reads every disclosure once, and names where each landed', () => {
    const street = objectDisclosure('street', 'Hauptstraße 1')
    // An array-element disclosure `[salt, value]` (RFC 9901 §4.2.2).
    const element = Buffer.from(JSON.stringify(['salt-n', 'DE'])).toString('base64url')
    const nationality = {
      disclosure: element,
      digest: createHash('sha256').update(element).digest('base64url'),
    }
    const address = objectDisclosure('address', { locality: 'Köln', _sd: [street.digest] })
    const { claims, disclosed } = readDisclosures(
      { ...base, _sd: [address.digest, 'decoy'], nationalities: [{ '...': nationality.digest }, 'FR'] },
      [street.disclosure, address.disclosure, nationality.disclosure],
    )
    assert.deepEqual(claims, {
      ...base,
      nationalities: ['DE', 'FR'],
      address: { locality: 'Köln', street: 'Hauptstraße 1' },
    })
    assert.deepEqual(
      disclosed.map((p) => p.join('.')),
      ['nationalities.0', 'address', 'address.street'],
    )
  })
})
