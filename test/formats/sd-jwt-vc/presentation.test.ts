import assert from 'node:assert/strict'
import type { JsonWebKey } from 'node:crypto'
import { describe, test } from 'node:test'
import { createHeaderAndPayload, StatusList } from '@sd-jwt/jwt-status-list'
import { sdJwtVcCredential, sdJwtVcPresentation } from '../../../src/formats/sd-jwt-vc/verify.ts'
import { CHECKS } from '../../../src/service/credentials/outcomes.ts'
import { checkPresentation, type PipelineContext } from '../../../src/service/credentials/pipeline.ts'
import { StatusChecker, TokenStatusChecker } from '../../../src/service/credentials/status.ts'
import { signJws } from '../../../src/shared/jws.ts'
import { issueSdJwtVc, presentSdJwtVc } from '../../../src/shared/sd-jwt.ts'
import { newHolder } from '../../oid4vci-helpers.ts'

// dc+sd-jwt through the credential pipeline: real SD-JWT VCs (issueSdJwtVc, did:key issuer) presented
// with a KB-JWT (presentSdJwtVc); every failure is named by its check.

const NOW = Date.parse('2026-11-22T10:15:00.000Z')
const seconds = Math.floor(NOW / 1000)
const issuer = newHolder()
const foreign = newHolder()
const holder = newHolder()
const stranger = newHolder()
const AUDIENCE = 'x509_san_dns:verifier.example'
const LIST_URI = 'https://issuer.example/token-status/1'
const jwkOf = (h: typeof holder) => h.publicKey.export({ format: 'jwk' }) as JsonWebKey

async function issue(extra: Record<string, unknown> = {}, signer = issuer) {
  return issueSdJwtVc(
    {
      iss: signer.did,
      vct: 'https://credentials.example/identity_credential',
      iat: seconds - 3600,
      cnf: { jwk: jwkOf(holder) },
      given_name: 'Erika',
      family_name: 'Mustermann',
      ...extra,
    },
    ['given_name', 'family_name'],
    { alg: 'EdDSA', privateKey: signer.privateKey, header: { kid: signer.kid } },
  )
}

const present = (
  compact: string,
  over: { nonce?: string; audience?: string; iat?: number; key?: typeof holder } = {},
) =>
  presentSdJwtVc(compact, ['given_name'], {
    alg: 'EdDSA',
    privateKey: (over.key ?? holder).privateKey,
    nonce: over.nonce ?? 'n-1',
    audience: over.audience ?? AUDIENCE,
    iat: over.iat ?? seconds,
  })

const noStatus = new StatusChecker(async () => {
  throw new Error('no list may be fetched in these tests')
})

const context = (over: Partial<PipelineContext> = {}): PipelineContext => ({
  session: {
    nonce: 'n-1',
    nonceRole: 'the nonce',
    audience: AUDIENCE,
    audienceRole: 'the verifier',
    now: NOW,
    maxAgeSeconds: 300,
  },
  presentationFormat: sdJwtVcPresentation,
  presentationPolicy: { algorithms: ['EdDSA'] },
  credentialFormats: [sdJwtVcCredential],
  credentialPolicy: { algorithms: ['EdDSA'] },
  trustedIssuers: () => [issuer.did],
  requireStatus: false,
  status: noStatus,
  ...over,
})

const results = (list: { check: string; result: string }[]) =>
  Object.fromEntries(list.map((c) => [c.check, c.result]))
const message = (list: { check: string; message?: string }[], check: string) =>
  list.find((c) => c.check === check)?.message ?? ''

/** Asserts exactly `check` failed (the others in `alsoNotPassed` may be not_run), and returns its message. */
async function failsOnly(token: string, check: string, alsoNotPassed: string[] = []) {
  const { outcomes } = await checkPresentation(token, context())
  const r = results(outcomes.list)
  assert.equal(r[check], 'failed', JSON.stringify(outcomes.list))
  for (const name of CHECKS) {
    if (name === check || name === 'matchingIds' || alsoNotPassed.includes(name)) continue
    assert.equal(r[name], 'passed', `${name}: ${JSON.stringify(outcomes.list)}`)
  }
  return message(outcomes.list, check)
}

describe('dc+sd-jwt presentation through the pipeline', () => {
  test('a good presentation passes every check; claims are the disclosed ones', async () => {
    const token = await present(await issue({ exp: seconds + 86400 }))
    const result = await checkPresentation(token, context())
    assert.deepEqual(
      result.outcomes.list.map((c) => c.check),
      [...CHECKS],
    )
    assert.equal(result.outcomes.failed().length, 0, JSON.stringify(result.outcomes.list))
    const [c] = result.credentials
    assert.equal(c?.issuer, issuer.did)
    assert.deepEqual(c?.credential.claims, { given_name: 'Erika' })
    assert.deepEqual(c?.credential.types, ['https://credentials.example/identity_credential'])
    assert.equal(
      (c?.credential.sharedView.credentialSubject as Record<string, unknown> | undefined)?.given_name,
      'Erika',
    )
    assert.equal(result.holder?.publicKey.equals(holder.publicKey), true)
  })

  test('sessionBinding names the KB-JWT nonce, aud and iat', async () => {
    const vc = await issue()
    assert.match(await failsOnly(await present(vc, { nonce: 'other' }), 'sessionBinding'), /KB-JWT nonce/)
    assert.match(
      await failsOnly(await present(vc, { audience: 'https://rp.example' }), 'sessionBinding'),
      /KB-JWT aud/,
    )
    assert.match(
      await failsOnly(await present(vc, { iat: seconds - 3600 }), 'sessionBinding'),
      /KB-JWT iat is 3600 s old/,
    )
  })

  test('presentationProof: a KB-JWT by another key, or none at all', async () => {
    const vc = await issue()
    const other = await present(vc, { key: stranger })
    assert.match(
      await failsOnly(other, 'presentationProof', ['holderBinding']),
      /KB-JWT signature does not verify/,
    )
    const { outcomes } = await checkPresentation(vc, context())
    assert.equal(results(outcomes.list).presentationProof, 'failed')
    assert.match(message(outcomes.list, 'presentationProof'), /no key-binding JWT/)
  })

  test('credentialProof: a tampered disclosure, a foreign issuer signature, an x5c header', async () => {
    const token = await present(await issue())
    const parts = token.split('~')
    const fake = Buffer.from(JSON.stringify(['salt', 'given_name', 'Mallory'])).toString('base64url')
    const tampered = [parts[0], fake, ...parts.slice(2)].join('~')
    assert.match(
      await failsOnly(tampered, 'credentialProof', [
        'presentationProof',
        'holderBinding',
        'trustedIssuer',
        'credentialStatus',
      ]),
      /not referenced by the issuer-signed JWT/,
    )

    // the issuer JWT of one issuer, signed by another key that claims the first's kid
    const signedByForeign = await issueSdJwtVc(
      { iss: issuer.did, vct: 'urn:x', iat: seconds, cnf: { jwk: jwkOf(holder) }, given_name: 'E' },
      ['given_name'],
      { alg: 'EdDSA', privateKey: foreign.privateKey, header: { kid: issuer.kid } },
    )
    assert.match(
      await failsOnly(await present(signedByForeign), 'credentialProof', [
        'trustedIssuer',
        'credentialStatus',
      ]),
      /signature does not verify/,
    )

    const x5c = await issueSdJwtVc(
      { iss: issuer.did, vct: 'urn:x', iat: seconds, cnf: { jwk: jwkOf(holder) }, given_name: 'E' },
      ['given_name'],
      { alg: 'EdDSA', privateKey: issuer.privateKey, header: { kid: issuer.kid, x5c: ['MIIB'] } },
    )
    assert.match(
      await failsOnly(await present(x5c), 'credentialProof', ['trustedIssuer', 'credentialStatus']),
      /x5c/,
    )
  })

  test('cnf of another key: the KB-JWT by the presenter cannot verify (holder unproven)', async () => {
    const vc = await issue({ cnf: { jwk: jwkOf(stranger) } })
    const { outcomes } = await checkPresentation(await present(vc), context())
    const r = results(outcomes.list)
    assert.equal(r.presentationProof, 'failed')
    assert.equal(r.holderBinding, 'not_run')
  })

  test('validityPeriod: an expired credential', async () => {
    const msg = await failsOnly(await present(await issue({ exp: seconds - 10 })), 'validityPeriod')
    assert.match(msg, /expired at/)
  })

  test('credentialStatus: a Token Status List entry is read (revoked, valid, foreign signer, wrong sub)', async () => {
    const list = new StatusList([0, 0, 0, 1, 0, 2, 0, 0, 0, 0], 2)
    const listJwt = (signer = issuer, sub = LIST_URI) => {
      const { header, payload } = createHeaderAndPayload(
        list,
        { iss: signer.did, sub, iat: seconds },
        { alg: 'EdDSA', typ: 'statuslist+jwt', kid: signer.kid },
      )
      return signJws(header as never, payload as never, signer.privateKey)
    }
    let fetched = 0
    const checker = (jwt: string) =>
      new TokenStatusChecker(async (url) => {
        fetched++
        assert.equal(url, LIST_URI)
        return jwt
      })
    const memo = new Map()
    const good = checker(listJwt())
    assert.deepEqual(await good.check({ uri: LIST_URI, index: 0 }, issuer.did, NOW, memo), {
      ok: true,
      status: 'valid',
    })
    const revoked = await good.check({ uri: LIST_URI, index: 3 }, issuer.did, NOW, memo)
    assert.equal(revoked.ok, false)
    assert.match(!revoked.ok ? revoked.reason : '', /invalid \(revoked\).*index 3/)
    assert.equal(fetched, 1, 'one fetch per uri and presentation')
    const suspended = await good.check({ uri: LIST_URI, index: 5 }, issuer.did, NOW, memo)
    assert.match(!suspended.ok ? suspended.reason : '', /suspended/)
    const outside = await good.check({ uri: LIST_URI, index: 400 }, issuer.did, NOW, memo)
    assert.match(!outside.ok ? outside.reason : '', /outside/)
    const bySomeoneElse = await checker(listJwt(foreign)).check(
      { uri: LIST_URI, index: 0 },
      issuer.did,
      NOW,
      new Map(),
    )
    assert.match(!bySomeoneElse.ok ? bySomeoneElse.reason : '', /not by the credential's issuer/)
    const wrongSub = await checker(listJwt(issuer, 'https://other.example/l')).check(
      { uri: LIST_URI, index: 0 },
      issuer.did,
      NOW,
      new Map(),
    )
    assert.match(!wrongSub.ok ? wrongSub.reason : '', /sub/)

    // Through the pipeline, a token-status-list reference is read by the StatusChecker's Token Status List
    // reader: the revoked entry fails credentialStatus naming it, a valid one passes.
    const listed = new StatusChecker(async (url) => {
      assert.equal(url, LIST_URI)
      return listJwt()
    })
    const vc = await issue({ status: { status_list: { idx: 3, uri: LIST_URI } } })
    const read = sdJwtVcCredential.read(vc, { algorithms: ['EdDSA'] })
    assert.deepEqual(read.status, [{ kind: 'token-status-list', uri: LIST_URI, index: 3 }])
    const piped = await checkPresentation(await present(vc), context({ status: listed }))
    assert.equal(results(piped.outcomes.list).credentialStatus, 'failed')
    assert.match(message(piped.outcomes.list, 'credentialStatus'), /invalid \(revoked\).*index 3/)
    const valid = await issue({ status: { status_list: { idx: 0, uri: LIST_URI } } })
    const ok = await checkPresentation(await present(valid), context({ status: listed }))
    assert.equal(results(ok.outcomes.list).credentialStatus, 'passed')
  })
})
