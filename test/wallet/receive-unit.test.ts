// Unit tests of the simulated wallet (src/wallet): real keys and real signatures, no network. Everything the
// wallet sends over the wire is tested against the real reference service in test/wallet/receive.test.ts.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import {
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { AccessTokenClient } from '@sphereon/oid4vci-client'
import { PRE_AUTH_GRANT_LITERAL } from '@sphereon/oid4vci-common'
import { verifyPresentation } from '../../src/shared/data-integrity.ts'
import {
  didKeyFromPublicKey,
  didOf,
  generateKeyPair,
  type JwsAlg,
  resolveDidKey,
} from '../../src/shared/did-key.ts'
import { decodeJws, signJws, verifyJws } from '../../src/shared/jws.ts'
import { PRE_AUTHORIZED_GRANT, PROOF_TYP } from '../../src/shared/wire.ts'
import { createHolder, createWalletAgent } from '../../src/wallet/agent.ts'
import { parseDeepLink } from '../../src/wallet/deep-link.ts'
import { WalletProtocolError, WalletUsageError } from '../../src/wallet/errors.ts'
import { type HolderKeyType, Wallet } from '../../src/wallet/index.ts'
import {
  assertMisbehaviours,
  EXPIRED_IAT_SECONDS,
  FUTURE_IAT_SECONDS,
  JWT_ONLY_MISBEHAVIOURS,
  type Misbehaviour,
  UNKNOWN_ID_SUFFIX,
  WRONG_AUDIENCE,
} from '../../src/wallet/misbehaviour.ts'
import { buildDiVpProof, buildJwtProof, buildTokenRequest, wrongTxCode } from '../../src/wallet/proof.ts'
import { FileWalletStore } from '../../src/wallet/store.ts'
import { walletCli } from '../helpers.ts'

// --- helpers ---------------------------------------------------------------------------------------------

const KEY_TYPES: { keyType: HolderKeyType; prefix: string; alg: JwsAlg }[] = [
  { keyType: 'Ed25519', prefix: 'did:key:z6Mk', alg: 'EdDSA' },
  { keyType: 'P-256', prefix: 'did:key:zDn', alg: 'ES256' },
  { keyType: 'secp256k1', prefix: 'did:key:zQ3s', alg: 'ES256K' },
]

const NOW = 1_900_000_000
const AUDIENCE = 'https://issuer.example/oid4vci/demo'
const NONCE = 'fixed-nonce-value'

async function proofPair(wallet: Wallet, misbehave: Misbehaviour[]) {
  const base = { audience: AUDIENCE, nonce: NONCE, now: () => NOW, privateJwk: () => wallet.privateJwk() }
  const good = await buildJwtProof(wallet.jwtSigner(), base)
  const bad = await buildJwtProof(wallet.jwtSigner(), { ...base, misbehave })
  return { good, bad, goodParts: decodeJws(good), badParts: decodeJws(bad) }
}

/** Keys whose values differ between two objects. */
function changedKeys(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  return [...keys].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort()
}

/** A jwt_vc_json credential signed directly with src/shared (as an issuer would), for the holder `subject`. */
function signCredential(
  subject: string,
  opts: { alg?: JwsAlg; type?: string; claims?: Record<string, unknown>; exp?: number } = {},
): { jwt: string; issuer: string } {
  const { privateKey, publicKey } = generateKeyPair(opts.alg ?? 'EdDSA')
  const issuer = didKeyFromPublicKey(publicKey)
  const now = Math.floor(Date.now() / 1000)
  const jwt = signJws(
    { alg: issuer.alg, typ: 'JWT', kid: issuer.kid },
    {
      iss: issuer.did,
      sub: subject,
      jti: `urn:uuid:${randomUUID()}`,
      nbf: now - 5,
      iat: now - 5,
      ...(opts.exp !== undefined && { exp: opts.exp }),
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', opts.type ?? 'UniversityDegree'],
        issuer: issuer.did,
        issuanceDate: new Date((now - 5) * 1000).toISOString(),
        credentialSubject: { id: subject, ...(opts.claims ?? { name: 'Ada' }) },
      },
    },
    privateKey,
  )
  return { jwt, issuer: issuer.did }
}

const ORIGIN = {
  credentialIssuer: 'https://issuer.example/oid4vci/demo',
  configurationId: 'degree',
  status: 200,
}

function verifiesWithHolder(jwt: string, wallet: Wallet): boolean {
  try {
    verifyJws(jwt, resolveDidKey(wallet.kid).publicKey, { algorithms: [wallet.alg] })
    return true
  } catch {
    return false
  }
}

async function rejects(
  promise: Promise<unknown>,
  check: (error: WalletProtocolError) => void,
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof WalletProtocolError, `expected a WalletProtocolError, got ${String(error)}`)
    check(error)
    return true
  })
}

const tempDirs: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vc-harness-wallet-'))
  tempDirs.push(dir)
  return dir
}
after(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

// --- agent -----------------------------------------------------------------------------------------------

describe('wallet agent', () => {
  for (const { keyType, prefix, alg } of KEY_TYPES) {
    test(`${keyType} holder: did:key prefix ${prefix}, resolvable, ${alg} proof verifiable from the did:key`, async () => {
      const wallet = await Wallet.create({ keyType })
      assert.ok(wallet.did.startsWith(prefix), wallet.did)
      assert.equal(wallet.kid, `${wallet.did}#${wallet.did.slice('did:key:'.length)}`)
      assert.equal(wallet.alg, alg)

      const resolved = await wallet.agent.resolveDid({ didUrl: wallet.did })
      assert.equal(resolved.didResolutionMetadata.error, undefined)
      assert.equal(resolved.didDocument?.id, wallet.did)
      assert.ok(resolved.didDocument?.verificationMethod?.some((vm) => vm.id === wallet.kid))
      assert.equal(resolveDidKey(wallet.kid).alg, alg)

      const jwt = await buildJwtProof(wallet.jwtSigner(), { audience: AUDIENCE, nonce: NONCE })
      const { header, payload } = verifyJws(jwt, resolveDidKey(wallet.kid).publicKey, { algorithms: [alg] })
      assert.deepEqual(header, { typ: 'openid4vci-proof+jwt', alg, kid: wallet.kid })
      assert.equal(payload.aud, AUDIENCE)
      assert.equal(payload.nonce, NONCE)
      assert.equal(payload.iss, undefined, 'no iss in the pre-authorized flow')
      const now = Math.floor(Date.now() / 1000)
      assert.ok(Math.abs(Number(payload.iat) - (now - 60)) <= 2, 'iat = now - 60 s')
      assert.ok(Number(payload.exp) > now)
    })
  }

  test('a stored private key re-creates the same did:key', async () => {
    for (const { keyType } of KEY_TYPES) {
      const first = createWalletAgent()
      const holder = await createHolder(first.agent, keyType)
      const hex = (await first.privateKeyStore.getKey({ alias: holder.keyRef })).privateKeyHex
      const again = await createHolder(createWalletAgent().agent, keyType, hex)
      assert.equal(again.did, holder.did)
    }
  })

  test('Veramo verifies credentials from Ed25519, P-256 and secp256k1 issuers', async () => {
    const wallet = await Wallet.create()
    for (const alg of ['EdDSA', 'ES256', 'ES256K'] as const) {
      const result = await wallet.agent.verifyCredential({
        credential: signCredential(wallet.did, { alg }).jwt,
        policies: { credentialStatus: false },
      })
      assert.equal(result.verified, true, `${alg}: ${result.error?.message}`)
    }
  })
})

// --- deep links ------------------------------------------------------------------------------------------

describe('deep link parsing', () => {
  const offerUri = 'https://issuer.example/oid4vci/demo/credential-offer/123'
  test('custom scheme by reference', () => {
    const link = `openid-credential-offer://?credential_offer_uri=${encodeURIComponent(offerUri)}`
    assert.deepEqual(parseDeepLink(link), { scheme: 'openid-credential-offer', offerUri })
    assert.deepEqual(parseDeepLink(`haip://offer?credential_offer_uri=${encodeURIComponent(offerUri)}`), {
      scheme: 'haip',
      offerUri,
    })
  })
  test('https scheme by reference', () => {
    const link = `https://wallet.example/receive?credential_offer_uri=${encodeURIComponent(offerUri)}`
    assert.deepEqual(parseDeepLink(link), { scheme: 'https', offerUri })
  })
  test('inline offer', () => {
    const offer = { credential_issuer: 'https://issuer.example', credential_configuration_ids: ['degree'] }
    const parsed = parseDeepLink(
      `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify(offer))}`,
    )
    assert.deepEqual(parsed, { scheme: 'openid-credential-offer', offer })
  })
  test('garbage gives a clear error', () => {
    const cases: [string, RegExp][] = [
      ['', /empty/],
      ['hello world', /not a credential offer deep link/],
      ['openid-credential-offer://', /not a credential offer deep link/],
      ['openid-credential-offer://?foo=bar', /neither credential_offer_uri nor credential_offer/],
      ['openid-credential-offer://?credential_offer_uri=not%20a%20url', /credential_offer_uri is not a URL/],
      ['openid-credential-offer://?credential_offer_uri=ftp%3A%2F%2Fx', /must be an http\(s\) URL/],
      ['openid-credential-offer://?credential_offer=%7Bbroken', /credential_offer is not JSON/],
      ['openid-credential-offer://?credential_offer=%5B%5D', /not a JSON object/],
      ['openid-credential-offer://?credential_offer=%7B%7D', /no credential_issuer/],
    ]
    for (const [link, pattern] of cases) {
      assert.throws(
        () => parseDeepLink(link),
        (e: Error) => e instanceof WalletUsageError && pattern.test(e.message),
        link,
      )
    }
  })
})

// --- file store ------------------------------------------------------------------------------------------

describe('file store', () => {
  test('keys and credentials survive a new Wallet on the same file', async () => {
    const file = join(tempDir(), 'nested', 'wallet.json')
    const first = await Wallet.create({ file, keyType: 'P-256' })
    assert.equal(statSync(file).mode & 0o777, 0o600)
    const stored = await first.accept([signCredential(first.did).jwt], ORIGIN)
    const saved = JSON.parse(readFileSync(file, 'utf8'))
    assert.equal(saved.holder.did, first.did)
    assert.match(saved.holder.privateKeyHex, /^[0-9a-f]{64}$/)

    const second = await Wallet.create({ file })
    assert.equal(second.did, first.did)
    assert.equal(second.keyType, 'P-256')
    assert.deepEqual(second.credentials(), stored)
    // the restored key signs proofs that verify against the did:key
    const jwt = await buildJwtProof(second.jwtSigner(), { audience: AUDIENCE, nonce: NONCE })
    assert.ok(verifiesWithHolder(jwt, second))

    await assert.rejects(Wallet.create({ file, keyType: 'Ed25519' }), /holds a P-256 holder key/)
  })

  test('saves replace the file atomically (temp file + rename), leaving no temp files', async () => {
    const dir = tempDir()
    const file = join(dir, 'wallet.json')
    const wallet = await Wallet.create({ file })
    const before = readFileSync(file, 'utf8')
    const fd = openSync(file, 'r') // the old inode stays readable through this descriptor
    await wallet.accept([signCredential(wallet.did).jwt], ORIGIN)
    const buffer = Buffer.alloc(before.length + 100)
    const read = readSync(fd, buffer, 0, buffer.length, 0)
    assert.equal(
      buffer.subarray(0, read).toString('utf8'),
      before,
      'the old file was replaced, not rewritten',
    )
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).credentials.length, 1)
    assert.deepEqual(readdirSync(dir), ['wallet.json'])

    // concurrent saves of one store are serialised and each leaves a complete file
    const store = new FileWalletStore(file)
    const state = (await store.load()) ?? assert.fail('no state')
    await Promise.all(Array.from({ length: 10 }, () => store.save(state)))
    assert.deepEqual(await store.load(), state)
    assert.deepEqual(readdirSync(dir), ['wallet.json'])
  })

  test('an in-memory wallet writes no key anywhere; a foreign file is refused', async () => {
    const wallet = await Wallet.create()
    assert.equal(wallet.location, '(memory)')
    const file = join(tempDir(), 'other.json')
    writeFileSync(file, '{"hello":"world"}')
    await assert.rejects(Wallet.create({ file }), /not a vc-harness wallet file/)
  })
})

// --- misbehaviours: proof building ------------------------------------------------------------------------

describe('misbehaviours change exactly one thing of the jwt proof', () => {
  const wallets = new Map<HolderKeyType, Wallet>()
  before(async () => {
    for (const { keyType } of KEY_TYPES) wallets.set(keyType, await Wallet.create({ keyType }))
  })

  for (const { keyType } of KEY_TYPES) {
    test(`${keyType}: the correct proof verifies and has no defect`, async () => {
      const wallet = wallets.get(keyType) as Wallet
      const { good, goodParts } = await proofPair(wallet, [])
      assert.ok(verifiesWithHolder(good, wallet))
      assert.deepEqual(goodParts.header, { typ: PROOF_TYP, alg: wallet.alg, kid: wallet.kid })
      assert.deepEqual(goodParts.payload, { aud: AUDIENCE, iat: NOW - 60, exp: NOW + 600, nonce: NONCE })
    })

    test(`${keyType}: each misbehaviour`, async () => {
      const wallet = wallets.get(keyType) as Wallet
      const pair = (m: Misbehaviour) => proofPair(wallet, [m])

      let p = await pair('wrong-nonce')
      assert.deepEqual(changedKeys(p.goodParts.header, p.badParts.header), [])
      assert.deepEqual(changedKeys(p.goodParts.payload, p.badParts.payload), ['nonce'])
      assert.ok(verifiesWithHolder(p.bad, wallet))

      p = await pair('wrong-aud')
      assert.deepEqual(changedKeys(p.goodParts.payload, p.badParts.payload), ['aud'])
      assert.equal(p.badParts.payload.aud, WRONG_AUDIENCE)
      assert.deepEqual(changedKeys(p.goodParts.header, p.badParts.header), [])
      assert.ok(verifiesWithHolder(p.bad, wallet))

      p = await pair('expired-iat')
      assert.deepEqual(changedKeys(p.goodParts.payload, p.badParts.payload), ['iat'])
      assert.equal(p.badParts.payload.iat, NOW - EXPIRED_IAT_SECONDS)
      assert.ok(verifiesWithHolder(p.bad, wallet))

      p = await pair('future-iat')
      assert.deepEqual(changedKeys(p.goodParts.payload, p.badParts.payload), ['iat'])
      assert.equal(p.badParts.payload.iat, NOW + FUTURE_IAT_SECONDS)
      assert.deepEqual(changedKeys(p.goodParts.header, p.badParts.header), [])
      assert.ok(verifiesWithHolder(p.bad, wallet))

      p = await pair('wrong-typ')
      assert.deepEqual(changedKeys(p.goodParts.header, p.badParts.header), ['typ'])
      assert.equal(p.badParts.header.typ, 'JWT')
      assert.deepEqual(changedKeys(p.goodParts.payload, p.badParts.payload), [])
      assert.ok(verifiesWithHolder(p.bad, wallet))

      p = await pair('bad-signature')
      assert.equal(p.bad.split('.').slice(0, 2).join('.'), p.good.split('.').slice(0, 2).join('.'))
      assert.equal(p.badParts.signature.length, p.goodParts.signature.length)
      assert.ok(!verifiesWithHolder(p.bad, wallet), 'signature must not verify')

      p = await pair('alg-none')
      assert.deepEqual(changedKeys(p.goodParts.header, p.badParts.header), ['alg'])
      assert.equal(p.badParts.header.alg, 'none')
      assert.equal(p.bad.split('.')[2], '', 'no signature')
      assert.deepEqual(changedKeys(p.goodParts.payload, p.badParts.payload), [])

      p = await pair('foreign-kid')
      assert.deepEqual(changedKeys(p.goodParts.header, p.badParts.header), ['kid'])
      const foreign = resolveDidKey(String(p.badParts.header.kid))
      assert.notEqual(foreign.did, wallet.did)
      assert.equal(foreign.alg, wallet.alg, 'the named key has the same algorithm')
      assert.ok(verifiesWithHolder(p.bad, wallet), 'signed by the holder key')
      assert.throws(
        () => verifyJws(p.bad, foreign.publicKey, { algorithms: [foreign.alg] }),
        /signature is invalid/,
      )

      p = await pair('jwk-with-private-key')
      assert.deepEqual(changedKeys(p.goodParts.header, p.badParts.header), ['jwk'])
      const jwk = p.badParts.header.jwk as JsonWebKey
      assert.equal(typeof jwk.d, 'string', 'private key material in the header')
      assert.deepEqual({ ...jwk, d: undefined }, { ...resolveDidKey(wallet.kid).publicJwk, d: undefined })
      assert.ok(verifiesWithHolder(p.bad, wallet))
    })
  }
})

describe('misbehaviours of the di_vp proof', () => {
  let wallet: Wallet
  before(async () => {
    wallet = await Wallet.create()
  })
  const created = new Date('2030-01-01T00:00:00Z')
  const build = (misbehave: Misbehaviour[]) =>
    buildDiVpProof(wallet.diSigner(), {
      holder: wallet.did,
      credentials: [signCredential(wallet.did).jwt],
      challenge: NONCE,
      domain: AUDIENCE,
      misbehave,
      now: () => created,
    })
  const proofOf = (vp: Record<string, unknown>) => vp.proof as Record<string, unknown>

  test('the correct presentation verifies', async () => {
    const { proof_type, di_vp } = await build([])
    assert.equal(proof_type, 'di_vp')
    const result = await verifyPresentation(di_vp, { challenge: NONCE, domain: AUDIENCE })
    assert.ok(result.verified, JSON.stringify(result))
    assert.equal(proofOf(di_vp).created, '2030-01-01T00:00:00Z')
  })

  test('each applicable misbehaviour', async () => {
    const good = proofOf((await build([])).di_vp)
    const changed = async (m: Misbehaviour) => {
      const vp = (await build([m])).di_vp
      const proof = proofOf(vp)
      return { vp, proof, keys: changedKeys({ ...good, proofValue: 0 }, { ...proof, proofValue: 0 }) }
    }
    let c = await changed('wrong-nonce')
    assert.deepEqual(c.keys, ['challenge'])
    assert.ok(
      (await verifyPresentation(c.vp, { challenge: String(c.proof.challenge), domain: AUDIENCE })).verified,
    )

    c = await changed('wrong-aud')
    assert.deepEqual(c.keys, ['domain'])
    assert.equal(c.proof.domain, WRONG_AUDIENCE)
    assert.ok((await verifyPresentation(c.vp, { challenge: NONCE, domain: WRONG_AUDIENCE })).verified)

    c = await changed('expired-iat')
    assert.deepEqual(c.keys, ['created'])
    assert.equal(Date.parse(String(c.proof.created)), created.getTime() - EXPIRED_IAT_SECONDS * 1000)
    assert.ok((await verifyPresentation(c.vp, { challenge: NONCE, domain: AUDIENCE })).verified)

    c = await changed('future-iat')
    assert.deepEqual(c.keys, ['created'])
    assert.equal(Date.parse(String(c.proof.created)), created.getTime() + FUTURE_IAT_SECONDS * 1000)
    assert.ok((await verifyPresentation(c.vp, { challenge: NONCE, domain: AUDIENCE })).verified)

    c = await changed('bad-signature')
    assert.deepEqual(c.keys, [])
    assert.notEqual(c.proof.proofValue, good.proofValue)
    assert.deepEqual(await verifyPresentation(c.vp, { challenge: NONCE, domain: AUDIENCE }), {
      verified: false,
      errors: ['signature invalid'],
    })

    c = await changed('foreign-kid')
    assert.deepEqual(c.keys, ['verificationMethod'])
    assert.notEqual(didOf(String(c.proof.verificationMethod)), wallet.did)

    for (const m of JWT_ONLY_MISBEHAVIOURS) {
      await assert.rejects(
        build([m]),
        (e: Error) => e instanceof WalletUsageError && /jwt proof only/.test(e.message),
      )
    }
  })

  test('P-256 and secp256k1 holders cannot make a di_vp proof', async () => {
    const p256 = await Wallet.create({ keyType: 'P-256' })
    assert.throws(() => p256.diSigner(), /needs an Ed25519 holder key/)
  })
})

describe('misbehaviours of the token request', () => {
  test('the correct request is what oid4vci-client builds', async () => {
    const offer = {
      credential_offer: {
        credential_issuer: AUDIENCE,
        credential_configuration_ids: ['degree'],
        grants: {
          [PRE_AUTH_GRANT_LITERAL]: {
            'pre-authorized_code': 'CODE',
            tx_code: { input_mode: 'numeric' as const, length: 6 },
          },
        },
      },
    }
    const library = await new AccessTokenClient().createAccessTokenRequest({
      credentialOffer: offer,
      pin: '123456',
      pinMetadata: { isPinRequired: true, txCode: { input_mode: 'numeric', length: 6 } },
      asOpts: { clientOpts: { clientId: 'did:key:zHolder' } },
    })
    const defined = Object.fromEntries(Object.entries(library).filter(([, v]) => v !== undefined))
    const ours = buildTokenRequest({
      preAuthorizedCode: 'CODE',
      clientId: 'did:key:zHolder',
      txCode: '123456',
    })
    assert.deepEqual(ours, defined)
  })

  test('wrong-tx-code and missing-tx-code change only the transaction code', () => {
    const input = {
      preAuthorizedCode: 'CODE',
      clientId: 'did:key:zHolder',
      txCode: '123456',
      txCodeSpec: { input_mode: 'numeric' as const, length: 6 },
    }
    const good = buildTokenRequest(input)
    const wrong = buildTokenRequest({ ...input, misbehave: ['wrong-tx-code'] })
    assert.deepEqual(changedKeys(good, wrong), ['tx_code', 'user_pin'])
    assert.equal(wrong.tx_code, '123457')
    assert.equal(wrong.tx_code, wrong.user_pin)
    const missing = buildTokenRequest({ ...input, misbehave: ['missing-tx-code'] })
    assert.deepEqual(changedKeys(good, missing), ['tx_code', 'user_pin'])
    assert.equal('tx_code' in missing || 'user_pin' in missing, false)
    // without a known code, a code of the announced shape
    assert.match(wrongTxCode(undefined, { input_mode: 'numeric', length: 4 }), /^\d{4}$/)
    assert.equal(wrongTxCode('ab9'), 'ab0')
    assert.equal(wrongTxCode('abc'), 'abd')
  })
})

// --- misbehaviours of the credential request: a fake issuer behind the wallet's fetch ----------------------------

const FAKE_ISSUER = 'https://issuer.example/oid4vci/fake'

interface SentCredentialRequest {
  url: URL
  authorization: string | null
  body: Record<string, unknown>
}

/**
 * A credential issuer that answers every credential request 202 and records what it got, behind the wallet's
 * `fetch` (no socket): 1.0 metadata (credential_metadata, the §12.2.2 and RFC 8414 §3.1 locations) or draft 15
 * (the appended well-known paths).
 */
function fakeIssuer(protocol: '1.0' | 'draft15') {
  const path = new URL(FAKE_ISSUER).pathname
  const sent: SentCredentialRequest[] = []
  const metadata = {
    credential_issuer: FAKE_ISSUER,
    credential_endpoint: `${FAKE_ISSUER}/credential`,
    nonce_endpoint: `${FAKE_ISSUER}/nonce`,
    credential_configurations_supported: {
      degree: {
        format: 'jwt_vc_json',
        cryptographic_binding_methods_supported: ['did:key'],
        credential_signing_alg_values_supported: ['EdDSA'],
        proof_types_supported: { jwt: { proof_signing_alg_values_supported: ['EdDSA', 'ES256', 'ES256K'] } },
        credential_definition: { type: ['VerifiableCredential', 'UniversityDegree'] },
        ...(protocol === '1.0' && { credential_metadata: { display: [{ name: 'Degree', locale: 'en' }] } }),
      },
    },
  }
  const as = {
    issuer: FAKE_ISSUER,
    token_endpoint: `${FAKE_ISSUER}/token`,
    grant_types_supported: [PRE_AUTHORIZED_GRANT],
    'pre-authorized_grant_anonymous_access_supported': true,
  }
  let nonces = 0
  const answer = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
  const fetch = (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const url = new URL(request.url)
    switch (url.pathname) {
      case `/.well-known/openid-credential-issuer${path}`:
      case `${path}/.well-known/openid-credential-issuer`:
        return answer(200, metadata)
      case `/.well-known/oauth-authorization-server${path}`:
      case `${path}/.well-known/oauth-authorization-server`:
        return answer(200, as)
      case `${path}/token`:
        return answer(200, {
          access_token: 'AT-fake-0123456789',
          token_type: 'Bearer',
          expires_in: 300,
        })
      case `${path}/nonce`:
        return answer(200, { c_nonce: `nonce-${++nonces}` })
      case `${path}/credential`:
        sent.push({
          url,
          authorization: request.headers.get('authorization'),
          body: JSON.parse(await request.text()),
        })
        return answer(202, { transaction_id: `tx-${sent.length}`, interval: 5 })
      default:
        return answer(404, { error: 'not_found' })
    }
  }) as typeof globalThis.fetch
  const offer = {
    credential_issuer: FAKE_ISSUER,
    credential_configuration_ids: ['degree'],
    grants: { [PRE_AUTHORIZED_GRANT]: { 'pre-authorized_code': 'CODE' } },
  }
  const link = `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify(offer))}`
  return { fetch, sent, link }
}

/** The request with every compact JWT (the proof) replaced by a placeholder: what is left to compare. */
const withoutJwts = (body: unknown): unknown =>
  JSON.parse(JSON.stringify(body).replace(/"ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"/g, '"<jwt>"'))

/** The jwt proof a credential request carries (1.0 `proofs.jwt[0]`, draft 15 `proof.jwt`). */
function proofJwtOf(body: Record<string, unknown>): string {
  const proofs = body.proofs as { jwt?: string[] } | undefined
  const proof = body.proof as { jwt?: string } | undefined
  const jwt = proofs?.jwt?.[0] ?? proof?.jwt
  assert.ok(jwt, 'the request carries a jwt proof')
  return jwt
}

describe('misbehaviours of the credential request change exactly one thing (both paths)', () => {
  for (const protocol of ['1.0', 'draft15'] as const) {
    test(`${protocol}: missing-proof, unknown-configuration, unknown-credential-identifier, token-in-query, future-iat`, async () => {
      const issuer = fakeIssuer(protocol)
      const wallet = await Wallet.create({ protocol, fetch: issuer.fetch })
      const session = await wallet.startIssuance(issuer.link)
      assert.equal(session.protocol, protocol)
      await session.token()
      const request = async (misbehave: Misbehaviour[]) => {
        const result = await session.requestCredential({ misbehave })
        assert.equal(result.status, 202)
        const sent = issuer.sent.at(-1) as SentCredentialRequest
        return { ...sent, shape: withoutJwts(sent.body) as Record<string, unknown> }
      }

      const good = await request([])
      const endpoint = `${FAKE_ISSUER}/credential`
      assert.equal(good.url.toString(), endpoint)
      assert.equal(good.authorization, 'Bearer AT-fake-0123456789')
      assert.equal(good.body.credential_configuration_id, 'degree')
      assert.deepEqual(
        Object.keys(good.body).sort(),
        protocol === '1.0'
          ? ['credential_configuration_id', 'proofs']
          : ['credential_configuration_id', 'proof'],
      )
      assert.ok(verifiesWithHolder(proofJwtOf(good.body), wallet))
      const goodProof = decodeJws(proofJwtOf(good.body))

      // OpenID4VCI 1.0 §8.2, §8.3.1.2: neither proof nor proofs; everything else as the correct request
      const missing = await request(['missing-proof'])
      assert.deepEqual(missing.body, { credential_configuration_id: 'degree' })
      assert.equal(missing.authorization, good.authorization)
      assert.equal(missing.url.toString(), endpoint)

      // §8.2: a credential_configuration_id the issuer's metadata does not have
      const unknown = await request(['unknown-configuration'])
      assert.deepEqual(unknown.shape, {
        ...good.shape,
        credential_configuration_id: `degree${UNKNOWN_ID_SUFFIX}`,
      })
      assert.equal(unknown.authorization, good.authorization)

      // §8.2: credential_identifier (one the token did not grant) in place of credential_configuration_id
      const identifier = await request(['unknown-credential-identifier'])
      const { credential_configuration_id: _, ...rest } = good.shape
      assert.deepEqual(identifier.shape, { ...rest, credential_identifier: `degree${UNKNOWN_ID_SUFFIX}` })
      assert.equal(identifier.authorization, good.authorization)

      // RFC 6750 §2.3: the access token in the query, no Authorization header; the body as the correct one
      const query = await request(['token-in-query'])
      assert.equal(query.authorization, null)
      assert.equal(query.url.origin + query.url.pathname, endpoint)
      assert.deepEqual([...query.url.searchParams], [['access_token', 'AT-fake-0123456789']])
      assert.deepEqual(query.shape, good.shape)

      // Appendix F.1/F.4: the proof's iat an hour ahead; the rest of the proof and the request as the correct one
      const future = await request(['future-iat'])
      assert.deepEqual(future.shape, good.shape)
      assert.equal(future.authorization, good.authorization)
      assert.ok(verifiesWithHolder(proofJwtOf(future.body), wallet))
      const futureProof = decodeJws(proofJwtOf(future.body))
      assert.deepEqual(futureProof.header, goodProof.header)
      // each request has its own nonce from the nonce endpoint, and its own clock reading (iat, exp)
      const { iat: _gi, exp: goodExp, nonce: _gn, ...goodRest } = goodProof.payload
      const { iat, exp, nonce: _fn, ...futureRest } = futureProof.payload
      assert.deepEqual(futureRest, goodRest)
      assert.ok(Math.abs(Number(exp ?? 0) - Number(goodExp ?? 0)) <= 5, 'exp untouched')
      const now = Math.floor(Date.now() / 1000)
      assert.ok(Math.abs(Number(iat) - (now + FUTURE_IAT_SECONDS)) <= 5, `iat ${iat}, now ${now}`)
    })
  }

  test('misbehaviours that change the same thing are a WalletUsageError together, before anything is sent', () => {
    const cases: [Misbehaviour[], RegExp][] = [
      [
        ['expired-iat', 'future-iat'],
        /^misbehaviours expired-iat and future-iat both set the key proof's iat/,
      ],
      [
        ['missing-proof', 'wrong-nonce'],
        /^misbehaviour missing-proof sends no key proof, so wrong-nonce would change nothing/,
      ],
      [['missing-proof', 'legacy-proof', 'alg-none'], /sends no key proof, so alg-none, legacy-proof would/],
      [['unknown-configuration', 'legacy-format-request'], /how the credential request names the credential/],
      [
        ['unknown-configuration', 'unknown-credential-identifier'],
        /how the credential request names the credential/,
      ],
      [['wrong-tx-code', 'missing-tx-code'], /tx_code/],
    ]
    for (const [misbehave, pattern] of cases) {
      assert.throws(
        () => assertMisbehaviours(misbehave),
        (e: Error) => e instanceof WalletUsageError && pattern.test(e.message),
        misbehave.join(' + '),
      )
    }
    // the others combine
    assert.deepEqual(assertMisbehaviours(['wrong-nonce', 'future-iat', 'wrong-typ']), [
      'wrong-nonce',
      'future-iat',
      'wrong-typ',
    ])
    assert.deepEqual(assertMisbehaviours(['missing-proof', 'token-in-query', 'unknown-configuration']), [
      'missing-proof',
      'token-in-query',
      'unknown-configuration',
    ])
  })
})

// --- verification of received credentials --------------------------------------------------------------------

describe('accept: verification and holder binding, all or none', () => {
  test('a valid credential is stored with what the wallet read from it', async () => {
    const wallet = await Wallet.create({ keyType: 'secp256k1' })
    const { jwt, issuer } = signCredential(wallet.did, { alg: 'ES256', claims: { name: 'Ada' } })
    const [stored] = await wallet.accept([jwt], ORIGIN)
    assert.equal(stored?.credential, jwt)
    assert.equal(stored?.issuer, issuer)
    assert.equal(stored?.subject, wallet.did)
    assert.deepEqual(stored?.types, ['VerifiableCredential', 'UniversityDegree'])
    assert.deepEqual(stored?.credentialSubject, { id: wallet.did, name: 'Ada' })
    assert.equal(stored?.credentialIssuer, ORIGIN.credentialIssuer)
    assert.deepEqual(wallet.credentials(), [stored])
  })

  test('bad credentials fail step verify and nothing of the batch is stored', async () => {
    const wallet = await Wallet.create()
    const good = signCredential(wallet.did).jwt
    const someoneElse = signCredential('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK').jwt
    const [head, payload] = good.split('.')
    const forged = `${head}.${payload}.${Buffer.alloc(64).toString('base64url')}`
    const expired = signCredential(wallet.did, { exp: Math.floor(Date.now() / 1000) - 3600 }).jwt
    const cases: [unknown, string, RegExp][] = [
      [someoneElse, 'wrong_subject', /^credentials\[1\]: sub did:key:z6Mkha\S+ is not the holder/],
      [forged, 'invalid_credential', /^credentials\[1\]: /],
      [expired, 'invalid_credential', /^credentials\[1\]: /],
      [{ not: 'a jwt' }, 'unsupported_credential_format', /^credentials\[1\] is not a jwt_vc_json string$/],
    ]
    for (const [bad, error, description] of cases) {
      await rejects(wallet.accept([good, bad], { ...ORIGIN, status: 202 }), (e) => {
        assert.equal(e.step, 'verify')
        assert.equal(e.status, 202, 'the status of the answer that carried the credential')
        assert.equal(e.error, error, e.message)
        assert.match(e.errorDescription ?? '', description)
      })
    }
    assert.deepEqual(wallet.credentials(), [], 'the good credential of a failed batch is not kept')
  })
})

// --- CLI arguments -------------------------------------------------------------------------------------------

describe('vc-harness wallet: arguments (no network)', () => {
  const run = walletCli

  test('bad arguments are usage errors (exit code 2), help is printed', async () => {
    for (const argv of [
      [],
      ['frobnicate'],
      ['receive'],
      ['receive', 'a', 'b'],
      ['receive', 'x://?credential_offer_uri=http%3A%2F%2Fa', '--key-type', 'RSA'],
      ['receive', 'x://?credential_offer_uri=http%3A%2F%2Fa', '--misbehave', 'be-rude'],
      ['receive', 'x://?credential_offer_uri=http%3A%2F%2Fa', '--timeout', '0'],
      ['receive', 'x://?credential_offer_uri=http%3A%2F%2Fa', '--bogus'],
      ['list'],
    ]) {
      const result = await run(argv)
      assert.match(result.error?.code ?? '', /^ERR_PARSE_ARGS/, `${argv.join(' ')}: ${result.error}`)
    }
    assert.match((await run(['--help'])).out, /Usage: vc-harness wallet/)
    assert.match((await run(['receive', '--help'])).out, /--tx-code C/)
    const missing = await run(['list', '--wallet', join(tempDir(), 'none.json')])
    assert.match(missing.error?.message ?? '', /^no wallet file at /)
    assert.equal(missing.error?.stack, missing.error?.message, 'a one-line error, no stack trace')
  })
})
