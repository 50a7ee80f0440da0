import 'reflect-metadata'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { clientAuthenticationAnonymous } from '@openid4vc/oauth2'
import { createKeyAttestationJwt, Openid4vciClient, setGlobalConfig } from '@openid4vc/openid4vci'
import { jwkThumbprint, signInput } from '../../../src/shared/jws.ts'
import { createKeyAttestation, KEY_ATTESTATION_TYP_DRAFT } from '../../../src/shared/oauth/key-attestation.ts'
import {
  TEST_WALLET_PROVIDER_ISSUER,
  testWalletProviderSigner,
} from '../../../src/shared/oauth/test-wallet-provider.ts'
import { certificatePem, generateTestCa, issueCertificate, x5cOf } from '../../../src/shared/x509.ts'
import {
  credentialsOf,
  DEGREE,
  grantFor,
  type HolderKey,
  holderKey,
  jwtProof,
  jwtVcPayload,
  offerFor,
  refused,
  sdJwtPayload,
  startIssuer,
  type TestIssuer,
  VERIFIABLE_ID,
  walletPost,
} from './http-wallet.ts'

// Key attestation (OpenID4VCI 1.0 Appendix D) at the credential endpoint, as HAIP 1.0 §4 asks (the jwt proof
// type with key_attestation, and the attestation proof type), over real HTTP: the template's keyAttestation
// setting in the metadata, the attestation in a jwt proof's header (the proof's key one of attested_keys) or
// as the proof itself (every attested key gets a credential), each broken rule refused with invalid_proof
// naming it and nothing issued; and the OWF @openid4vc/openid4vci client's own jwt proof with a key
// attestation built by its createKeyAttestationJwt.

setGlobalConfig({ allowInsecureUrls: true })

const HIGH = ['iso_18045_high']
const TEMPLATES = [
  // HAIP-like: an SD-JWT VC whose keys must be attested, in high or moderate storage, moderate user authentication.
  {
    id: 'pid-ka',
    credentialType: 'VerifiableId',
    format: 'dc+sd-jwt',
    signingAlg: 'ES256',
    keyAttestation: {
      required: true,
      keyStorage: ['iso_18045_high', 'iso_18045_moderate'],
      userAuthentication: ['iso_18045_moderate'],
    },
  },
  // Key attestations evaluated when sent, not required (di_vp proofs still offered).
  { id: 'degree-ka', credentialType: 'UniversityDegreeCredential', keyAttestation: { required: false } },
  // No keyAttestation: the header is not evaluated, the attestation proof type not offered.
  { id: 'pid-plain', credentialType: 'VerifiableId', format: 'dc+sd-jwt' },
]

let t: TestIssuer
/** A wallet provider of the tenant that signs with a certificate of its own CA (x5c). */
let x5cProvider: { privateKey: import('node:crypto').KeyObject; x5c: string[] }

before(async () => {
  const ca = await generateTestCa({ name: 'CN=Example Wallet Provider CA' })
  const { privateKey, publicKey } = (await import('node:crypto')).generateKeyPairSync('ec', {
    namedCurve: 'P-256',
  })
  const leaf = await issueCertificate({ issuer: ca, publicKey, subject: 'CN=Example Wallet Provider' })
  x5cProvider = { privateKey, x5c: x5cOf([leaf]) }
  t = await startIssuer({
    templates: TEMPLATES,
    tenant: {
      testWalletProvider: true,
      walletProviders: [{ name: 'example-x5c', certificates: [certificatePem(ca.certificate)] }],
    },
    label: 'test/service/oid4vci/key-attestation.test.ts',
  })
})
after(() => t?.close())

/** A key attestation by the test wallet provider (high storage, moderate user authentication unless told). */
function attest(keys: HolderKey[], claims: Parameters<typeof createKeyAttestation>[1] | object = {}) {
  return createKeyAttestation(testWalletProviderSigner(), {
    attestedKeys: keys.map((k) => k.publicJwk),
    keyStorage: HIGH,
    userAuthentication: ['iso_18045_moderate'],
    ...claims,
  })
}

const request = (configurationId: string, proofs: Record<string, unknown[]>) => ({
  credential_configuration_id: configurationId,
  proofs,
})

/** The process's issued credentials as the store has them (none: nothing was half-written). */
const issuedRows = (processId: string) => t.store.issuedCredentials.listByProcess(processId)

describe('key attestation (OpenID4VCI 1.0 Appendix D) at the credential endpoint', () => {
  test('metadata: key_attestations_required (§12.2.4) and the attestation proof type where the template asks', async () => {
    const meta = (await (await fetch(`${t.issuer}/.well-known/openid-credential-issuer`)).json()) as {
      credential_configurations_supported: Record<string, { proof_types_supported: Record<string, unknown> }>
    }
    const proofTypes = (id: string) => meta.credential_configurations_supported[id]?.proof_types_supported
    assert.deepEqual(proofTypes('pid-ka'), {
      jwt: {
        proof_signing_alg_values_supported: ['EdDSA', 'ES256', 'ES256K'],
        key_attestations_required: {
          key_storage: ['iso_18045_high', 'iso_18045_moderate'],
          user_authentication: ['iso_18045_moderate'],
        },
      },
      attestation: {
        proof_signing_alg_values_supported: ['EdDSA', 'ES256'],
        key_attestations_required: {
          key_storage: ['iso_18045_high', 'iso_18045_moderate'],
          user_authentication: ['iso_18045_moderate'],
        },
      },
    })
    const optional = proofTypes('degree-ka') as Record<string, Record<string, unknown>>
    assert.deepEqual(Object.keys(optional).sort(), ['attestation', 'di_vp', 'jwt', 'ldp_vp'])
    assert.equal(optional.jwt?.key_attestations_required, undefined, 'not required: MUST NOT be present')
    assert.deepEqual(Object.keys(proofTypes('pid-plain') ?? {}), ['jwt'])
  })

  test('F.1: a jwt proof carrying the key attestation of its key (jwk) → the credential, bound to that key; the validator names the provider', async () => {
    const key = holderKey()
    const g = await grantFor(t, 'pid-ka', VERIFIABLE_ID)
    const proof = jwtProof(t, key, g.cNonce, { key_attestation: attest([key]) })
    const [credential] = credentialsOf(
      await walletPost(t, 'credential', g.accessToken, request('pid-ka', { jwt: [proof] })),
    )
    assert.equal(jwkThumbprint(sdJwtPayload(credential ?? '').cnf.jwk), jwkThumbprint(key.publicJwk))
    const process = (await t.rp.getProcess(t.appToken, g.processId)).body as unknown as {
      status: string
      validator: { securityMechanisms: { proof: Record<string, unknown>[] } }
    }
    assert.equal(process.status, 'ISSUED')
    assert.deepEqual(process.validator.securityMechanisms.proof[0]?.keyAttestation, {
      provider: 'test',
      attestedKeys: 1,
      key_storage: HIGH,
      user_authentication: ['iso_18045_moderate'],
    })
  })

  test('F.1: the proof names its key by the kid of an attested JWK (kid "0", as the spec example); other attested keys get credentials too', async () => {
    const [a, b] = [holderKey(), holderKey('EdDSA')]
    const attestation = createKeyAttestation(testWalletProviderSigner(), {
      attestedKeys: [
        { ...a.publicJwk, kid: '0' },
        { ...b.publicJwk, kid: '1' },
      ],
      keyStorage: ['iso_18045_moderate'],
      userAuthentication: ['iso_18045_moderate'],
    })
    const g = await grantFor(t, 'pid-ka', VERIFIABLE_ID)
    const proof = jwtProof(t, a, g.cNonce, { kid: '0', key_attestation: attestation })
    const credentials = credentialsOf(
      await walletPost(t, 'credential', g.accessToken, request('pid-ka', { jwt: [proof] })),
    )
    // F.1: "SHOULD issue a Credential for each cryptographic public key specified in the attested_keys".
    assert.deepEqual(
      credentials.map((c) => jwkThumbprint(sdJwtPayload(c).cnf.jwk)),
      [a, b].map((k) => jwkThumbprint(k.publicJwk)),
    )
    assert.equal((await issuedRows(g.processId)).length, 2)
  })

  test('F.3: the attestation proof type → one credential per attested key; its nonce is used up', async () => {
    const keys = [holderKey(), holderKey(), holderKey('EdDSA')]
    const g = await grantFor(t, 'pid-ka', VERIFIABLE_ID)
    const attestation = attest(keys, { nonce: g.cNonce, lifetimeSeconds: null })
    const answer = await walletPost(
      t,
      'credential',
      g.accessToken,
      request('pid-ka', { attestation: [attestation] }),
    )
    const credentials = credentialsOf(answer)
    assert.deepEqual(
      credentials.map((c) => jwkThumbprint(sdJwtPayload(c).cnf.jwk)),
      keys.map((k) => jwkThumbprint(k.publicJwk)),
    )
    const indices = new Set(credentials.map((c) => sdJwtPayload(c).status.status_list.idx))
    assert.equal(indices.size, 3, 'each credential has its own status entry')
    assert.ok(typeof answer.body.notification_id === 'string')
    // The same attestation again: its c_nonce is single use.
    refused(
      await walletPost(t, 'credential', g.accessToken, request('pid-ka', { attestation: [attestation] })),
      'invalid_nonce',
      /already used/,
    )
  })

  test('an x5c-signed key attestation of a configured provider (its chain to the tenant-configured anchor) is accepted', async () => {
    const key = holderKey()
    const g = await grantFor(t, 'pid-ka', VERIFIABLE_ID)
    const attestation = createKeyAttestation(
      {
        privateKey: x5cProvider.privateKey,
        alg: 'ES256',
        issuer: 'https://wallet-provider.example',
        x5c: x5cProvider.x5c,
      },
      { attestedKeys: [key.publicJwk], keyStorage: HIGH, userAuthentication: ['iso_18045_moderate'] },
    )
    const proof = jwtProof(t, key, g.cNonce, { key_attestation: attestation })
    assert.equal(
      credentialsOf(await walletPost(t, 'credential', g.accessToken, request('pid-ka', { jwt: [proof] })))
        .length,
      1,
    )
  })

  test('each broken rule → invalid_proof naming it (or invalid_nonce); nothing issued, the process still PENDING', async () => {
    const key = holderKey()
    const other = holderKey()
    const g = await grantFor(t, 'pid-ka', VERIFIABLE_ID)
    const now = Math.floor(Date.now() / 1000)
    const untrusted = holderKey()
    const cases: [string, Record<string, unknown[]>, string, RegExp][] = [
      [
        'no key attestation when required',
        { jwt: [jwtProof(t, key, g.cNonce)] },
        'invalid_proof',
        /requires a key attestation.*Appendix F\.1, F\.3/,
      ],
      [
        'an untrusted provider',
        {
          jwt: [
            jwtProof(t, key, g.cNonce, {
              key_attestation: createKeyAttestation(
                {
                  privateKey: untrusted.privateKey,
                  alg: 'ES256',
                  issuer: TEST_WALLET_PROVIDER_ISSUER,
                  kid: 'vc-harness-test-wallet-provider',
                },
                {
                  attestedKeys: [key.publicJwk],
                  keyStorage: HIGH,
                  userAuthentication: ['iso_18045_moderate'],
                },
              ),
            }),
          ],
        },
        'invalid_proof',
        /not signed by a wallet provider this issuer trusts.*Appendix D\.1/,
      ],
      [
        'the proof key not among attested_keys',
        { jwt: [jwtProof(t, key, g.cNonce, { key_attestation: attest([other]) })] },
        'invalid_proof',
        /not among the key attestation's attested_keys.*Appendix D\.1/,
      ],
      [
        'an expired key attestation',
        {
          jwt: [jwtProof(t, key, g.cNonce, { key_attestation: attest([key], { now: (now - 7200) * 1000 }) })],
        },
        'invalid_proof',
        /key attestation expired at/,
      ],
      [
        'no exp in a jwt proof’s attestation',
        { jwt: [jwtProof(t, key, g.cNonce, { key_attestation: attest([key], { lifetimeSeconds: null }) })] },
        'invalid_proof',
        /no exp: it is required .*jwt proof type/,
      ],
      [
        'key_storage not accepted',
        {
          jwt: [
            jwtProof(t, key, g.cNonce, {
              key_attestation: attest([key], { keyStorage: ['iso_18045_basic'] }),
            }),
          ],
        },
        'invalid_proof',
        /key_storage \["iso_18045_basic"\] asserts none of the values .*§12\.2\.4/,
      ],
      [
        'no user_authentication when one is asked',
        {
          jwt: [
            jwtProof(t, key, g.cNonce, { key_attestation: attest([key], { userAuthentication: undefined }) }),
          ],
        },
        'invalid_proof',
        /user_authentication null asserts none/,
      ],
      [
        'a wrong typ',
        { jwt: [jwtProof(t, key, g.cNonce, { key_attestation: attest([key], { typ: 'JWT' }) })] },
        'invalid_proof',
        /typ must be "key-attestation\+jwt"/,
      ],
      [
        'a private key among attested_keys',
        {
          jwt: [
            jwtProof(t, key, g.cNonce, {
              key_attestation: createKeyAttestation(testWalletProviderSigner(), {
                attestedKeys: [key.privateKey.export({ format: 'jwk' }) as Record<string, unknown>],
                keyStorage: HIGH,
                userAuthentication: ['iso_18045_moderate'],
              }),
            }),
          ],
        },
        'invalid_proof',
        /attested_keys\[0\] carries private key material/,
      ],
      [
        'the attestation’s nonce not the proof’s',
        { jwt: [jwtProof(t, key, g.cNonce, { key_attestation: attest([key], { nonce: 'another' }) })] },
        'invalid_proof',
        /nonce is not the proof JWT's.*Appendix F\.1/,
      ],
      [
        'the attestation proof type without a nonce',
        { attestation: [attest([key])] },
        'invalid_proof',
        /has no nonce.*Appendix F\.3/,
      ],
      [
        'the attestation proof type with a nonce the issuer never gave',
        { attestation: [attest([key], { nonce: randomBytes(16).toString('base64url') })] },
        'invalid_nonce',
        /unknown, expired or already used/,
      ],
      [
        'the attestation proof type with two JWTs',
        { attestation: [attest([key], { nonce: g.cNonce }), attest([other], { nonce: g.cNonce })] },
        'invalid_proof',
        /exactly one key attestation JWT/,
      ],
      [
        'an attestation proof type older than proofMaxAgeSeconds',
        { attestation: [attest([key], { nonce: g.cNonce, now: (now - 400) * 1000 })] },
        'invalid_proof',
        /iat is \d+ s old; at most 300 s/,
      ],
    ]
    for (const [what, proofs, error, description] of cases) {
      const answer = await walletPost(t, 'credential', g.accessToken, request('pid-ka', proofs))
      assert.equal(answer.body.error, error, `${what}: ${JSON.stringify(answer.body)}`)
      refused(answer, error, description)
    }
    // Nothing was issued or bound, and the c_nonce was never used: the right request still succeeds.
    assert.deepEqual(await issuedRows(g.processId), [])
    const process = (await t.rp.getProcess(t.appToken, g.processId)).body as unknown as {
      status: string
      validator: unknown
    }
    assert.equal(process.status, 'PENDING')
    assert.equal(process.validator, null)
    const proof = jwtProof(t, key, g.cNonce, { key_attestation: attest([key], { nonce: g.cNonce }) })
    assert.equal(
      credentialsOf(await walletPost(t, 'credential', g.accessToken, request('pid-ka', { jwt: [proof] })))
        .length,
      1,
    )
  })

  test('not required: a proof without one is served, one sent is still checked; no keyAttestation: the header is not evaluated, the attestation type not offered', async () => {
    const key = holderKey()
    const g = await grantFor(t, 'degree-ka', DEGREE)
    const forged = createKeyAttestation(
      { privateKey: holderKey().privateKey, alg: 'ES256', issuer: 'https://forger.example' },
      { attestedKeys: [key.publicJwk] },
    )
    refused(
      await walletPost(
        t,
        'credential',
        g.accessToken,
        request('degree-ka', {
          jwt: [jwtProof(t, key, g.cNonce, { kid: key.holder.kid, key_attestation: forged })],
        }),
      ),
      'invalid_proof',
      /not signed by a wallet provider this issuer trusts/,
    )
    const [credential] = credentialsOf(
      await walletPost(
        t,
        'credential',
        g.accessToken,
        request('degree-ka', { jwt: [jwtProof(t, key, g.cNonce, { kid: key.holder.kid })] }),
      ),
    )
    assert.equal(jwtVcPayload(credential ?? '').sub, key.holder.did)

    const plain = await grantFor(t, 'pid-plain', VERIFIABLE_ID)
    refused(
      await walletPost(
        t,
        'credential',
        plain.accessToken,
        request('pid-plain', { attestation: [attest([key], { nonce: plain.cNonce })] }),
      ),
      'invalid_proof',
      /proof type "attestation" is not supported; use jwt, di_vp/,
    )
    const ignored = jwtProof(t, key, plain.cNonce, { key_attestation: 'not even a JWT' })
    assert.equal(
      credentialsOf(
        await walletPost(t, 'credential', plain.accessToken, request('pid-plain', { jwt: [ignored] })),
      ).length,
      1,
    )
  })
})

describe('@openid4vc/openid4vci (OWF) as the wallet: a jwt proof with a key attestation', () => {
  test('createKeyAttestationJwt (the provider) + createCredentialRequestJwtProof({keyAttestationJwt}) → the credential for the attested key', async () => {
    const key = holderKey()
    const hash = (data: Uint8Array, algorithm: string) =>
      new Uint8Array(createHash(algorithm.replace('-', '').toLowerCase()).update(data).digest())
    const provider = testWalletProviderSigner()
    // The OWF library signs the key attestation with the test wallet provider's key (typ keyattestation+jwt, its
    // draft name) and the proof with the holder key; we only hand it the signatures.
    const keyAttestationJwt = await createKeyAttestationJwt({
      signer: { method: 'custom', alg: 'ES256' } as never,
      attestedKeys: [key.publicJwk as never],
      keyStorage: ['iso_18045_moderate'],
      userAuthentication: ['iso_18045_moderate'],
      expiresAt: new Date(Date.now() + 600_000),
      use: 'proof_type.jwt',
      additionalPayload: { iss: TEST_WALLET_PROVIDER_ISSUER },
      callbacks: {
        signJwt: async (_signer, { header, payload }) => {
          const encode = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
          const input = `${encode({ ...header, kid: provider.kid })}.${encode(payload)}`
          return { jwt: `${input}.${signInput('ES256', input, provider.privateKey)}`, signerJwk: {} as never }
        },
      },
    })
    assert.equal(
      JSON.parse(Buffer.from(keyAttestationJwt.split('.')[0] ?? '', 'base64url').toString()).typ,
      KEY_ATTESTATION_TYP_DRAFT,
    )
    const client = new Openid4vciClient({
      callbacks: {
        hash,
        generateRandom: (bytes) => new Uint8Array(randomBytes(bytes)),
        clientAuthentication: clientAuthenticationAnonymous(),
        signJwt: async (_signer, { header, payload }) => {
          const encode = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
          const input = `${encode(header)}.${encode(payload)}`
          return {
            jwt: `${input}.${signInput('ES256', input, key.privateKey)}`,
            signerJwk: key.publicJwk as never,
          }
        },
      },
    })
    const { link } = await offerFor(t, 'pid-ka', VERIFIABLE_ID)
    const credentialOffer = await client.resolveCredentialOffer(link)
    const issuerMetadata = await client.resolveIssuerMetadata(credentialOffer.credential_issuer)
    const { accessTokenResponse } = await client.retrievePreAuthorizedCodeAccessTokenFromOffer({
      credentialOffer,
      issuerMetadata,
    })
    const { c_nonce: nonce } = await client.requestNonce({ issuerMetadata })
    // The library refuses to sign without an attestation: it read key_attestations_required from our metadata.
    await assert.rejects(
      client.createCredentialRequestJwtProof({
        issuerMetadata,
        credentialConfigurationId: 'pid-ka',
        signer: { method: 'jwk', publicJwk: key.publicJwk as never, alg: 'ES256' },
        nonce,
      }),
      /requires key attestations/,
    )
    const { jwt } = await client.createCredentialRequestJwtProof({
      issuerMetadata,
      credentialConfigurationId: 'pid-ka',
      signer: { method: 'jwk', publicJwk: key.publicJwk as never, alg: 'ES256' },
      nonce,
      keyAttestationJwt,
    })
    const result = await client.retrieveCredentials({
      issuerMetadata,
      accessToken: accessTokenResponse.access_token,
      credentialConfigurationId: 'pid-ka',
      proofs: { jwt: [jwt] },
    })
    assert.equal(result.response.status, 200)
    const credentials = (result.credentialResponse as { credentials: { credential: string }[] }).credentials
    assert.equal(credentials.length, 1)
    assert.equal(
      jwkThumbprint(sdJwtPayload(credentials[0]?.credential ?? '').cnf.jwk),
      jwkThumbprint(key.publicJwk),
    )
  })
})
