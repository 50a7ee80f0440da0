// The wallet's choice of key proof and key attestation (src/wallet/key-attestation.ts) and its further holder
// keys (src/wallet/holder-keys.ts), without a server; the service's side of both is
// test/wallet/key-attestation-service.test.ts.
import assert from 'node:assert/strict'
import { createPublicKey, verify } from 'node:crypto'
import { describe, test } from 'node:test'
import { resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../src/shared/jws.ts'
import { testWalletProviderSigner } from '../../src/shared/oauth/test-wallet-provider.ts'
import { privateKeyFromHex } from '../../src/wallet/agent.ts'
import { deviceSignerOf, freshProofKey, privateKeyHexOf, proofKeyOf } from '../../src/wallet/holder-keys.ts'
import { KEY_ATTESTATION_FOREIGN_KEY_HELP, WalletUsageError } from '../../src/wallet/index.ts'
import { planProof, walletKeyAttestation } from '../../src/wallet/key-attestation.ts'

const provider = testWalletProviderSigner()
const REQUIRED = {
  key_storage: ['iso_18045_high', 'iso_18045_moderate'],
  user_authentication: ['iso_18045_moderate'],
}
const both = {
  proof_types_supported: {
    jwt: { proof_signing_alg_values_supported: ['ES256'], key_attestations_required: REQUIRED },
    attestation: { proof_signing_alg_values_supported: ['ES256'], key_attestations_required: REQUIRED },
  },
}

describe('planProof: which proof, and what its key attestation claims', () => {
  test('key_attestations_required on jwt: a jwt proof with an attestation claiming the first value of each list (§12.2.4)', () => {
    assert.deepEqual(planProof('pid', both, {}, provider), {
      type: 'jwt',
      attest: true,
      keyStorage: ['iso_18045_high'],
      userAuthentication: ['iso_18045_moderate'],
    })
  })

  test('nothing required: a bare jwt proof; keyAttestation: true attaches one claiming nothing', () => {
    const plain = {
      proof_types_supported: { jwt: { proof_signing_alg_values_supported: ['EdDSA', 'ES256'] } },
    }
    assert.deepEqual(planProof('degree', plain, {}, provider), { type: 'jwt', attest: false })
    assert.deepEqual(planProof('degree', plain, { keyAttestation: true }, provider), {
      type: 'jwt',
      attest: true,
    })
    // a configuration without proof_types_supported takes jwt proofs (no binding asked is no concern here)
    assert.deepEqual(planProof('x', {}, {}, provider), { type: 'jwt', attest: false })
  })

  test('the attestation proof type: asked for, or where the configuration offers it and not jwt (Appendix F.3)', () => {
    assert.equal(planProof('pid', both, { proofType: 'attestation' }, provider).type, 'attestation')
    const only = { proof_types_supported: { attestation: both.proof_types_supported.attestation } }
    assert.deepEqual(planProof('pid', only, {}, provider), {
      type: 'attestation',
      attest: true,
      keyStorage: ['iso_18045_high'],
      userAuthentication: ['iso_18045_moderate'],
    })
    assert.throws(
      () => planProof('pid', only, { proofType: 'jwt' }, provider),
      (e: Error) =>
        e instanceof WalletUsageError &&
        /does not offer the jwt proof type \(proof_types_supported: attestation/.test(e.message),
    )
  })

  test("a provider algorithm the configuration's list leaves out is refused (Appendix F.1, F.3)", () => {
    const eddsaOnly = {
      proof_types_supported: {
        jwt: { proof_signing_alg_values_supported: ['EdDSA'], key_attestations_required: {} },
      },
    }
    assert.throws(
      () => planProof('pid', eddsaOnly, {}, provider),
      /takes jwt proofs signed with EdDSA .* the wallet provider signs key attestations with ES256/,
    )
  })
})

describe('walletKeyAttestation and the further keys', () => {
  test('the attestation: typ, the provider, the keys, the claims and the c_nonce; verifiable with the provider key', () => {
    const keys = [freshProofKey('ES256'), freshProofKey('ES256')]
    const plan = planProof('pid', both, {}, provider)
    const jwt = walletKeyAttestation(provider, keys, plan, 'the-c-nonce')
    const { header, payload } = verifyJws(jwt, createPublicKey(provider.privateKey), {
      algorithms: ['ES256'],
    })
    assert.equal(header.typ, 'key-attestation+jwt')
    assert.equal(header.kid, provider.kid)
    assert.equal(payload.iss, provider.issuer)
    assert.deepEqual(
      payload.attested_keys,
      keys.map((k) => k.publicJwk),
    )
    assert.deepEqual(payload.key_storage, ['iso_18045_high'])
    assert.deepEqual(payload.user_authentication, ['iso_18045_moderate'])
    assert.equal(payload.nonce, 'the-c-nonce')
    assert.equal(
      (payload.exp as number) - (payload.iat as number),
      3600,
      'exp: required in a jwt proof (D.1)',
    )
  })

  test('a further key: a did:key of its algorithm that signs proofs and device signatures; its hex reads back', async () => {
    for (const alg of ['EdDSA', 'ES256', 'ES256K'] as const) {
      const key = freshProofKey(alg)
      assert.equal(resolveDidKey(key.kid).did, key.did)
      const input = 'header.payload'
      const signature = await key.signer.sign(input)
      const publicKey = resolveDidKey(key.kid).publicKey
      const ok = verify(
        alg === 'EdDSA' ? null : 'sha256',
        Buffer.from(input),
        alg === 'EdDSA' ? publicKey : { key: publicKey, dsaEncoding: 'ieee-p1363' },
        signature,
      )
      assert.ok(ok, alg)
      const keyType = alg === 'EdDSA' ? 'Ed25519' : alg === 'ES256' ? 'P-256' : 'secp256k1'
      const back = proofKeyOf(privateKeyFromHex(keyType, privateKeyHexOf(key.privateKey as never)))
      assert.equal(back.did, key.did, `${alg}: the wallet file's hex is the same key`)
      assert.equal(deviceSignerOf(alg, key.privateKey as never)?.alg, alg === 'ES256K' ? undefined : alg)
    }
  })

  test('without a c_nonce (an issuer that gave none) the attestation carries none', () => {
    const jwt = walletKeyAttestation(
      provider,
      [freshProofKey('EdDSA')],
      { type: 'jwt', attest: true },
      undefined,
    )
    assert.equal(decodeJws(jwt).payload.nonce, undefined)
  })

  test("key-attestation-foreign-key has its help text, in the CLI's usage too", async () => {
    assert.match(KEY_ATTESTATION_FOREIGN_KEY_HELP, /freshly generated key.*Appendix D\.1, F\.1/)
    const { WALLET_USAGE } = await import('../../src/cli/wallet.ts')
    assert.match(WALLET_USAGE, /key-attestation-foreign-key: the jwt proof's key_attestation header/)
    assert.match(WALLET_USAGE, /--batch N/)
  })
})
