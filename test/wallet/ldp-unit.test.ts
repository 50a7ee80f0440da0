// Unit tests of the simulated wallet's Linked Data side (issue 33): ldp_vc at receipt (Wallet.accept), the
// ldp_vp it builds (presentation-ldp.ts) read and verified by the format's own reader (ldpVp.read, as the
// service reads it), the proof type it picks per key type, and what each ldp_vp misbehaviour changes. Real
// keys, real proofs, no network (status lists come through the wallet's injectable fetch). Against the
// reference service: test/wallet/ldp.test.ts.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { UNDEFINED_TERMS_CONTEXT, VC_V1_CONTEXT, VC_V2_CONTEXT } from '../../src/formats/ldp-vc/contexts.ts'
import { generateLdKeyPair, type LdKeyType, ldKeyFromPublicKey } from '../../src/formats/ldp-vc/keys.ts'
import { type LdProofType, signLd } from '../../src/formats/ldp-vc/suites.ts'
import { ldpVc, ldpVp } from '../../src/formats/ldp-vc/verify.ts'
import { encodeList } from '../../src/shared/bitstring.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../src/shared/did-key.ts'
import { signJws } from '../../src/shared/jws.ts'
import { legacyFormat } from '../../src/wallet/defects.ts'
import {
  type HolderKeyType,
  LD_PROOF_TYPES,
  type PresentationMisbehaviour,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import { LDP_VP_MISBEHAVIOURS, WRONG_AUDIENCE } from '../../src/wallet/misbehaviour.ts'
import {
  buildLdpVp,
  chooseLdProofType,
  dcqlAcceptedLdProofs,
  peAcceptedLdProofs,
  presenterOf,
  proofTypesFor,
} from '../../src/wallet/presentation-ldp.ts'
import { UNDEFINED_TERM } from '../../src/wallet/presentation-ldp-defects.ts'
import { NoMatchingCredentialsError, selectCredentials } from '../../src/wallet/presentation-select.ts'
import { revocationEntryOf } from '../../src/wallet/presentation-status.ts'
import { tamperOf } from '../../src/wallet/tamper.ts'

// --- helpers ---------------------------------------------------------------------------------------------

interface LdSigner {
  did: string
  kid: string
  privateKey: ReturnType<typeof generateLdKeyPair>['privateKey']
}

function ldSigner(keyType: LdKeyType): LdSigner {
  const { privateKey } = generateLdKeyPair(keyType)
  const { did, kid } = ldKeyFromPublicKey(privateKey)
  return { did, kid, privateKey }
}

const ISSUER = ldSigner('Ed25519')
const NONCE = 'n-0S6_WzA2Mj'
const CLIENT_ID = 'did:key:z6MkverifierClientIdForTheseTests'
const STATUS_LIST = 'https://issuer.example/status/1'
const ORIGIN = {
  credentialIssuer: 'https://issuer.example/oid4vci/demo',
  configurationId: 'degree-ldp',
  status: 200,
  format: 'ldp_vc',
}

/** An ldp_vc for `holder`, signed as an issuer would (the format's signer, none of the wallet's code). */
function ldCredential(
  holder: string,
  opts: {
    issuer?: LdSigner
    /** the `issuer` it names (default the signer's DID) */
    issuerId?: string
    proofType?: LdProofType
    context?: string[]
    types?: string[]
    subject?: Record<string, unknown>
    expirationDate?: string
    issuanceDate?: string
    status?: number
  } = {},
): Promise<Record<string, unknown>> {
  const issuer = opts.issuer ?? ISSUER
  return signLd(
    {
      '@context': opts.context ?? [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT],
      id: `urn:uuid:${randomUUID()}`,
      type: opts.types ?? ['VerifiableCredential', 'UniversityDegreeCredential'],
      issuer: opts.issuerId ?? issuer.did,
      issuanceDate: opts.issuanceDate ?? new Date(Date.now() - 60_000).toISOString(),
      ...(opts.expirationDate && { expirationDate: opts.expirationDate }),
      credentialSubject: {
        id: holder,
        ...(opts.subject ?? { degree: { type: 'BachelorDegree', name: 'Bachelor of Science' } }),
      },
      ...(opts.status !== undefined && {
        credentialStatus: {
          id: `${STATUS_LIST}#${opts.status}`,
          type: 'BitstringStatusListEntry',
          statusPurpose: 'revocation',
          statusListIndex: String(opts.status),
          statusListCredential: STATUS_LIST,
        },
      }),
    },
    {
      proofType: opts.proofType ?? 'Ed25519Signature2018',
      kid: issuer.kid,
      privateKey: issuer.privateKey,
      purpose: { purpose: 'assertionMethod' },
    },
  )
}

/** A revocation Bitstring Status List credential (JWT) signed by the issuer's Ed25519 key. */
function revocationList(revoked: number[]): string {
  // one bit per entry, index 0 at the most significant bit of byte 0 (Bitstring Status List v1.0 §4.1)
  const bits = new Uint8Array(128)
  for (const index of revoked) bits[index >> 3] = (bits[index >> 3] as number) | (1 << (7 - (index & 7)))
  const key = didKeyFromPublicKey(ISSUER.privateKey)
  return signJws(
    { alg: 'EdDSA', typ: 'JWT', kid: key.kid },
    {
      iss: key.did,
      sub: `${STATUS_LIST}#list`,
      iat: Math.floor(Date.now() / 1000),
      vc: {
        '@context': [VC_V2_CONTEXT],
        type: ['VerifiableCredential', 'BitstringStatusListCredential'],
        issuer: key.did,
        credentialSubject: {
          id: `${STATUS_LIST}#list`,
          type: 'BitstringStatusList',
          statusPurpose: 'revocation',
          encodedList: encodeList(bits),
        },
      },
    },
    ISSUER.privateKey,
  )
}

async function refusedAtReceipt(
  promise: Promise<unknown>,
  error: string,
  description: RegExp,
): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof WalletProtocolError, String(e))
    assert.equal(e.step, 'verify')
    assert.equal(e.error, error)
    assert.match(e.errorDescription ?? '', description)
    return true
  })
}

/** The VP as the service reads it: its proof, its binding to NONCE / CLIENT_ID, its credentials. */
async function readVp(vp: unknown) {
  const read = ldpVp.read(JSON.stringify(vp), { algorithms: [] })
  const proof = await read.verifyProof()
  const binding = await read.verifyBinding({
    nonce: NONCE,
    audience: CLIENT_ID,
    nonceRole: 'the nonce of this request',
    audienceRole: "this verifier's client_id",
    now: Date.now(),
  })
  return { read, proof, binding }
}

// --- receipt -----------------------------------------------------------------------------------------------

describe('receipt of ldp_vc (Wallet.accept, format ldp_vc)', () => {
  const signers: { proofType: LdProofType; keyType: LdKeyType }[] = [
    { proofType: 'Ed25519Signature2018', keyType: 'Ed25519' },
    { proofType: 'JsonWebSignature2020', keyType: 'P-256' },
    { proofType: 'EcdsaSecp256k1Signature2019', keyType: 'secp256k1' },
    { proofType: 'RsaSignature2018', keyType: 'RSA' },
    { proofType: 'eddsa-rdfc-2022', keyType: 'Ed25519' },
    { proofType: 'ecdsa-rdfc-2019', keyType: 'P-256' },
  ]
  for (const { proofType, keyType } of signers) {
    test(`${proofType} (${keyType} issuer): verified and stored as the credential's JSON text`, async () => {
      const wallet = await Wallet.create()
      const issuer = ldSigner(keyType)
      const vc = await ldCredential(wallet.did, { issuer, proofType })
      const [stored] = await wallet.accept([vc], ORIGIN)
      assert.equal(stored?.format, 'ldp_vc')
      assert.equal(stored?.id, vc.id)
      assert.equal(stored?.issuer, issuer.did)
      assert.equal(stored?.subject, wallet.did)
      assert.deepEqual(stored?.types, ['VerifiableCredential', 'UniversityDegreeCredential'])
      assert.deepEqual(stored?.credentialSubject, {
        id: wallet.did,
        degree: { type: 'BachelorDegree', name: 'Bachelor of Science' },
      })
      assert.equal(stored?.issuedAt, vc.issuanceDate)
      assert.deepEqual(JSON.parse(stored?.credential ?? ''), vc, 'kept exactly as issued, proof included')
      assert.equal(wallet.credentials().length, 1)
    })
  }

  test('without an id: named by the hash of its JSON text', async () => {
    const wallet = await Wallet.create()
    const vc = await ldCredential(wallet.did)
    const { id: _id, proof: _proof, ...unsigned } = vc
    const anonymous = await signLd(unsigned, {
      proofType: 'Ed25519Signature2018',
      kid: ISSUER.kid,
      privateKey: ISSUER.privateKey,
      purpose: { purpose: 'assertionMethod' },
    })
    const [stored] = await wallet.accept([anonymous], ORIGIN)
    assert.match(stored?.id ?? '', /^urn:sha256:[0-9a-f]{64}$/)
  })

  test('tampered: a claim changed after the issuer signed it is refused (invalid_credential)', async () => {
    const wallet = await Wallet.create()
    const vc = await ldCredential(wallet.did)
    ;(vc.credentialSubject as { degree: { name: string } }).degree.name = 'Doctor of Everything'
    await refusedAtReceipt(
      wallet.accept([vc], ORIGIN),
      'invalid_credential',
      /^credentials\[0\]: the issuer's proof .*Ed25519Signature2018.* does not verify: the signature does not verify/,
    )
    assert.deepEqual(wallet.credentials(), [])
  })

  test('wrong subject: credentialSubject.id of another holder is refused (wrong_subject)', async () => {
    const wallet = await Wallet.create()
    const other = ldSigner('Ed25519')
    await refusedAtReceipt(
      wallet.accept([await ldCredential(other.did)], ORIGIN),
      'wrong_subject',
      /credentialSubject\.id did:key:\S+ is not the holder .*holder binding/,
    )
  })

  test("wrong issuer key: signed by a key that is not the issuer's is refused (invalid_credential)", async () => {
    const wallet = await Wallet.create()
    const impostor = ldSigner('Ed25519')
    const vc = await ldCredential(wallet.did, { issuer: impostor, issuerId: ISSUER.did })
    await refusedAtReceipt(
      wallet.accept([vc], ORIGIN),
      'invalid_credential',
      /is signed by did:key:\S+, which is not a key of its issuer "did:key:/,
    )
  })

  test('validity period: expired, or issued in the future, is refused', async () => {
    const wallet = await Wallet.create()
    const expired = await ldCredential(wallet.did, { expirationDate: '2020-01-01T00:00:00Z' })
    await refusedAtReceipt(
      wallet.accept([expired], ORIGIN),
      'invalid_credential',
      /validity period: expirationDate \/ validUntil 2020-01-01T00:00:00Z has passed/,
    )
    const future = await ldCredential(wallet.did, {
      issuanceDate: new Date(Date.now() + 3_600_000).toISOString(),
    })
    await refusedAtReceipt(wallet.accept([future], ORIGIN), 'invalid_credential', /is in the future/)
  })

  test('not an object, or no proof: refused; all or none is stored', async () => {
    const wallet = await Wallet.create()
    await refusedAtReceipt(
      wallet.accept(['eyJhbGciOiJFZERTQSJ9.e30.AAAA'], ORIGIN),
      'unsupported_credential_format',
      /credentials\[0\] is not an ldp_vc JSON object/,
    )
    const good = await ldCredential(wallet.did)
    const { proof: _proof, ...unsigned } = await ldCredential(wallet.did)
    await refusedAtReceipt(
      wallet.accept([good, unsigned], ORIGIN),
      'invalid_credential',
      /credentials\[1\]: the credential must carry exactly one embedded proof/,
    )
    assert.deepEqual(wallet.credentials(), [], 'the good one was not stored either')
  })

  test('status at receipt: a revoked Bitstring entry is refused, an active one accepted', async () => {
    const list = revocationList([7])
    const fetched: string[] = []
    const fetch: typeof globalThis.fetch = async (input) => {
      fetched.push(String(input))
      return new Response(list, { status: 200, headers: { 'content-type': 'application/vc+jwt' } })
    }
    const wallet = await Wallet.create({ fetch })
    const checked = { ...ORIGIN, checkStatus: true }
    await refusedAtReceipt(
      wallet.accept([await ldCredential(wallet.did, { status: 7 })], checked),
      'credential_revoked',
      /Bitstring Status List v1\.0 §3\.2\): the credential is revoked \(status list https:\/\/issuer\.example\/status\/1, index 7\)/,
    )
    const [stored] = await wallet.accept([await ldCredential(wallet.did, { status: 8 })], checked)
    assert.equal(stored?.format, 'ldp_vc')
    assert.deepEqual(fetched, [STATUS_LIST, STATUS_LIST])
  })

  test('legacy-format-request names an ldp_vc by credential_definition @context and type (draft 13 A.1.2.2)', () => {
    const definition = {
      '@context': [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT],
      type: ['VerifiableCredential', 'X'],
    }
    assert.deepEqual(legacyFormat({ format: 'ldp_vc', credential_definition: definition }), {
      format: 'ldp_vc',
      credential_definition: definition,
    })
    // jwt_vc_json: the type only (A.1.1.2)
    assert.deepEqual(legacyFormat({ format: 'jwt_vc_json', credential_definition: definition }), {
      format: 'jwt_vc_json',
      credential_definition: { type: definition.type },
    })
  })

  test('the careless wallet (trustEverything) only parses: tampered, foreign and proofless are stored', async () => {
    const wallet = await Wallet.create({ trustEverything: true })
    const tampered = await ldCredential(wallet.did)
    ;(tampered.credentialSubject as { degree: { name: string } }).degree.name = 'changed'
    const foreign = await ldCredential(ldSigner('Ed25519').did)
    const { proof: _proof, ...proofless } = await ldCredential(wallet.did)
    const stored = await wallet.accept([tampered, foreign, proofless], ORIGIN)
    assert.equal(stored.length, 3)
    assert.ok(stored.every((c) => c.format === 'ldp_vc'))
  })
})

// --- proof type ----------------------------------------------------------------------------------------------

describe('the ldp_vp proof type: what the key makes, in the verifier’s order', () => {
  test('each key type makes its suites (wallet preference first)', () => {
    assert.deepEqual(proofTypesFor('Ed25519'), [
      'Ed25519Signature2018',
      'JsonWebSignature2020',
      'eddsa-rdfc-2022',
    ])
    assert.deepEqual(proofTypesFor('P-256'), ['JsonWebSignature2020', 'ecdsa-rdfc-2019'])
    assert.deepEqual(proofTypesFor('secp256k1'), ['EcdsaSecp256k1Signature2019', 'JsonWebSignature2020'])
  })

  test("the first of the verifier's list that the key makes; DataIntegrityProof is the key's cryptosuite", () => {
    // the reference service's list (section 2.8's four, then Data Integrity)
    const service = [
      'JsonWebSignature2020',
      'Ed25519Signature2018',
      'EcdsaSecp256k1Signature2019',
      'RsaSignature2018',
      'DataIntegrityProof',
    ]
    for (const keyType of ['Ed25519', 'P-256', 'secp256k1'] as const)
      assert.equal(chooseLdProofType(keyType, service), 'JsonWebSignature2020')
    assert.equal(
      chooseLdProofType('Ed25519', ['Ed25519Signature2018', 'JsonWebSignature2020']),
      'Ed25519Signature2018',
    )
    assert.equal(
      chooseLdProofType('secp256k1', ['RsaSignature2018', 'EcdsaSecp256k1Signature2019']),
      'EcdsaSecp256k1Signature2019',
    )
    assert.equal(chooseLdProofType('Ed25519', ['DataIntegrityProof']), 'eddsa-rdfc-2022')
    assert.equal(chooseLdProofType('P-256', ['DataIntegrityProof']), 'ecdsa-rdfc-2019')
    assert.equal(chooseLdProofType('secp256k1', ['DataIntegrityProof', 'RsaSignature2018']), undefined)
    // 1.0: cryptosuite_values narrow DataIntegrityProof
    assert.equal(
      chooseLdProofType('P-256', { proofTypes: ['DataIntegrityProof'], cryptosuites: ['eddsa-rdfc-2022'] }),
      undefined,
    )
    // nothing listed: the wallet's preference
    assert.equal(chooseLdProofType('Ed25519', undefined), 'Ed25519Signature2018')
    assert.equal(chooseLdProofType('P-256', undefined), 'JsonWebSignature2020')
    assert.equal(chooseLdProofType('secp256k1', undefined), 'EcdsaSecp256k1Signature2019')
  })

  test('a forced proof type wins over the list; one the key cannot make is a WalletUsageError', () => {
    assert.equal(chooseLdProofType('Ed25519', ['JsonWebSignature2020'], 'eddsa-rdfc-2022'), 'eddsa-rdfc-2022')
    assert.throws(
      () => chooseLdProofType('Ed25519', undefined, 'ecdsa-rdfc-2019'),
      (e: Error) =>
        e instanceof WalletUsageError &&
        /ecdsa-rdfc-2019 cannot be made with this wallet's Ed25519 key; it makes Ed25519Signature2018/.test(
          e.message,
        ),
    )
    assert.throws(
      () => chooseLdProofType('P-256', undefined, 'Ed25519Signature2020'),
      (e: Error) => e instanceof WalletUsageError && /unknown Linked Data proof type/.test(e.message),
    )
  })

  test('Wallet.create({ ldpProofType }) refuses one the key cannot make, before a key is made', async () => {
    await assert.rejects(
      Wallet.create({ keyType: 'secp256k1', ldpProofType: 'Ed25519Signature2018' }),
      (e: Error) => e instanceof WalletUsageError && /secp256k1 key/.test(e.message),
    )
    const wallet = await Wallet.create({ keyType: 'P-256', ldpProofType: 'ecdsa-rdfc-2019' })
    assert.equal(wallet.ldpProofType, 'ecdsa-rdfc-2019')
  })

  test('what a verifier accepts: PE format.ldp_vp.proof_type; 1.0 vp_formats_supported.ldp_vc', () => {
    assert.deepEqual(peAcceptedLdProofs({ format: { ldp_vp: { proof_type: ['Ed25519Signature2018'] } } }), {
      proofTypes: ['Ed25519Signature2018'],
    })
    assert.equal(peAcceptedLdProofs({ format: { jwt_vp: { alg: ['EdDSA'] } } }), undefined)
    assert.deepEqual(
      peAcceptedLdProofs({
        input_descriptors: [{ id: 'x', format: { ldp_vp: { proof_type: ['JsonWebSignature2020'] } } }],
      }),
      { proofTypes: ['JsonWebSignature2020'] },
    )
    assert.deepEqual(
      dcqlAcceptedLdProofs({
        vp_formats_supported: {
          ldp_vc: { proof_type_values: ['DataIntegrityProof'], cryptosuite_values: ['ecdsa-rdfc-2019'] },
        },
      }),
      { proofTypes: ['DataIntegrityProof'], cryptosuites: ['ecdsa-rdfc-2019'] },
    )
    assert.equal(dcqlAcceptedLdProofs({ vp_formats_supported: { jwt_vc_json: {} } }), undefined)
  })
})

// --- the ldp_vp ----------------------------------------------------------------------------------------------

describe('the ldp_vp the wallet signs, read as the verifier reads it', () => {
  const keyTypes: HolderKeyType[] = ['Ed25519', 'P-256', 'secp256k1']
  for (const keyType of keyTypes) {
    for (const proofType of proofTypesFor(keyType)) {
      test(`${keyType} holder, ${proofType}: the proof holds, bound to the nonce and client_id`, async () => {
        const holder = ldSigner(keyType)
        const vc = await ldCredential(holder.did)
        const vp = await buildLdpVp({
          holder: presenterOf(holder.privateKey),
          credentials: [vc],
          nonce: NONCE,
          audience: CLIENT_ID,
          proofType,
        })
        assert.deepEqual(vp['@context'], [VC_V1_CONTEXT, ...(vp['@context'] as string[]).slice(1)])
        assert.deepEqual(vp.type, ['VerifiablePresentation'])
        assert.equal(vp.holder, holder.did)
        assert.deepEqual(vp.verifiableCredential, [vc], 'the credential exactly as issued')
        const proof = vp.proof as Record<string, unknown>
        assert.equal(proof.proofPurpose, 'authentication')
        assert.equal(proof.challenge, NONCE)
        assert.equal(proof.domain, CLIENT_ID)
        assert.equal(proof.verificationMethod, holder.kid)
        if (proofType.includes('-')) {
          assert.equal(proof.type, 'DataIntegrityProof')
          assert.equal(proof.cryptosuite, proofType)
        } else assert.equal(proof.type, proofType)
        const { read, proof: verified, binding } = await readVp(vp)
        assert.ok(verified.ok, JSON.stringify(verified))
        assert.equal(verified.holder.did, holder.did, 'the holder is the proof key’s controller')
        assert.deepEqual(binding, [])
        assert.equal(read.credentials.length, 1)
        const credential = ldpVc.read(read.credentials[0]?.raw, { algorithms: [] })
        assert.equal((await credential.verifyProof(() => undefined as never)).ok, true)
        assert.deepEqual(credential.holderBinding, { kind: 'subject', id: holder.did })
      })
    }
  }

  test('a JWT credential rides along enveloped, in a VC 2.0 presentation (VCDM 2.0 §4.13)', async () => {
    const holder = ldSigner('Ed25519')
    const vc = await ldCredential(holder.did)
    const jwt = 'eyJhbGciOiJFZERTQSJ9.eyJpc3MiOiJkaWQ6a2V5OnoifQ.c2lnbmF0dXJl'
    const vp = await buildLdpVp({
      holder: presenterOf(holder.privateKey),
      credentials: [vc, jwt],
      nonce: NONCE,
      audience: CLIENT_ID,
      proofType: 'Ed25519Signature2018',
    })
    assert.equal((vp['@context'] as string[])[0], VC_V2_CONTEXT)
    assert.deepEqual((vp.verifiableCredential as unknown[])[1], {
      '@context': VC_V2_CONTEXT,
      id: `data:application/vc+jwt,${jwt}`,
      type: 'EnvelopedVerifiableCredential',
    })
    const { read, proof, binding } = await readVp(vp)
    assert.ok(proof.ok, JSON.stringify(proof))
    assert.deepEqual(binding, [])
    assert.deepEqual(
      read.credentials.map((c) => c.raw),
      [vc, jwt],
    )
  })
})

// --- misbehaviours -------------------------------------------------------------------------------------------

/** Paths whose values differ between two JSON values (leaves; arrays by index). */
function changedPaths(a: unknown, b: unknown, path = '$'): string[] {
  const isNode = (v: unknown) => typeof v === 'object' && v !== null
  if (!isNode(a) || !isNode(b)) return JSON.stringify(a) === JSON.stringify(b) ? [] : [path]
  const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)])
  return [...keys].flatMap((k) =>
    changedPaths(
      (a as Record<string, unknown>)[k],
      (b as Record<string, unknown>)[k],
      Array.isArray(a) ? `${path}[${k}]` : `${path}.${k}`,
    ),
  )
}

describe('each ldp_vp misbehaviour changes one thing, and the verifier’s reader sees it', () => {
  const made = async (misbehave: PresentationMisbehaviour[], context?: string[]) => {
    const holder = ldSigner('Ed25519')
    const vc = await ldCredential(
      holder.did,
      context ? { context, types: ['VerifiableCredential'], subject: {} } : {},
    )
    const input = {
      holder: presenterOf(holder.privateKey),
      credentials: [vc],
      nonce: NONCE,
      audience: CLIENT_ID,
      proofType: 'Ed25519Signature2018' as const,
      now: Date.parse('2030-01-01T00:00:00Z'),
    }
    const honest = await buildLdpVp(input)
    const bad = await buildLdpVp({ ...input, misbehave })
    return { holder, vc, honest, bad, changed: changedPaths(honest, bad) }
  }
  // the proof's signature always changes with what it covers
  const withoutSignature = (paths: string[]) => paths.filter((p) => p !== '$.proof.jws')

  test('the list: every ldp_vp misbehaviour acts on the ldp_vp', () => {
    for (const m of LDP_VP_MISBEHAVIOURS) {
      const tamper = tamperOf([m])
      const acts = (
        ['ldp.options', 'ldp.holder', 'ldp.credentials', 'ldp.reissue', 'ldp.signed'] as const
      ).some((point) => tamper.acts(point))
      assert.ok(acts, `${m} has an ldp.* hook`)
    }
  })

  test('vp-wrong-nonce: only proof.challenge (sessionBinding); the proof itself holds', async () => {
    const { bad, changed } = await made(['vp-wrong-nonce'])
    assert.deepEqual(withoutSignature(changed), ['$.proof.challenge'])
    const { proof, binding } = await readVp(bad)
    assert.ok(proof.ok)
    assert.match(binding.join(' '), /proof challenge ".+" is not the nonce of this request/)
  })

  test('vp-wrong-aud: only proof.domain (sessionBinding)', async () => {
    const { bad, changed } = await made(['vp-wrong-aud'])
    assert.deepEqual(withoutSignature(changed), ['$.proof.domain'])
    assert.equal((bad.proof as Record<string, unknown>).domain, WRONG_AUDIENCE)
    const { proof, binding } = await readVp(bad)
    assert.ok(proof.ok)
    assert.match(
      binding.join(' '),
      /proof domain "https:\/\/wrong-audience\.invalid" is not this verifier's client_id/,
    )
  })

  test('vp-foreign-key: holder and verificationMethod are another did:key (holder binding)', async () => {
    const { holder, bad, changed } = await made(['vp-foreign-key'])
    assert.deepEqual(withoutSignature(changed), ['$.holder', '$.proof.verificationMethod'])
    const { read, proof } = await readVp(bad)
    assert.ok(proof.ok, 'the foreign key signs validly')
    assert.notEqual(proof.holder.did, holder.did)
    const credential = ldpVc.read(read.credentials[0]?.raw, { algorithms: [] })
    assert.deepEqual(
      credential.holderBinding,
      { kind: 'subject', id: holder.did },
      'bound to the real holder',
    )
  })

  test('tampered-credential: one claim of the credential changed before the holder signs (credentialProof)', async () => {
    const { bad, changed } = await made(['tampered-credential'])
    assert.deepEqual(withoutSignature(changed), ['$.verifiableCredential[0].credentialSubject.degree.name'])
    const { read, proof } = await readVp(bad)
    assert.ok(proof.ok, "the holder's proof covers the changed credential")
    const credential = ldpVc.read(read.credentials[0]?.raw, { algorithms: [] })
    const issuerProof = await credential.verifyProof(() => undefined as never)
    assert.equal(issuerProof.ok, false)
    assert.match(issuerProof.ok ? '' : issuerProof.reason, /signature does not verify/)
  })

  test('untrusted-issuer: the credential re-signed by a fresh did:key named as its issuer (trustedIssuer)', async () => {
    const { bad, changed } = await made(['untrusted-issuer'])
    const credentialChanges = withoutSignature(changed).filter(
      (p) => !p.startsWith('$.verifiableCredential[0].proof.'),
    )
    assert.deepEqual(credentialChanges, ['$.verifiableCredential[0].issuer'])
    const { read, proof } = await readVp(bad)
    assert.ok(proof.ok)
    const credential = ldpVc.read(read.credentials[0]?.raw, { algorithms: [] })
    const issuerProof = await credential.verifyProof(() => undefined as never)
    assert.ok(issuerProof.ok, 'its own proof holds')
    assert.notEqual(issuerProof.issuer, ISSUER.did)
  })

  test('ldp-undefined-term: a term no context defines, added after signing (JSON-LD safe mode)', async () => {
    // the credential has the undefined-terms @vocab (as the service issues them): the term goes into the VP
    const { bad, changed } = await made(['ldp-undefined-term'])
    assert.deepEqual(changed, [`$.${UNDEFINED_TERM}`])
    const { proof } = await readVp(bad)
    assert.equal(proof.ok, false)
    assert.match(
      proof.ok ? '' : proof.failures.join(' '),
      new RegExp(
        `the term "${UNDEFINED_TERM}" is not defined by the document's @context \\(JSON-LD safe mode`,
      ),
    )
    // a credential without @vocab: the term goes into its credentialSubject, and both proofs refuse it
    const plain = await made(['ldp-undefined-term'], [VC_V1_CONTEXT])
    assert.deepEqual(plain.changed, [`$.verifiableCredential[0].credentialSubject.${UNDEFINED_TERM}`])
    const read = await readVp(plain.bad)
    assert.equal(read.proof.ok, false)
    const credential = ldpVc.read(read.read.credentials[0]?.raw, { algorithms: [] })
    const issuerProof = await credential.verifyProof(() => undefined as never)
    assert.match(issuerProof.ok ? '' : issuerProof.reason, /is not defined by the document's @context/)
  })

  test("revoked-credential picks an ldp_vc's Bitstring entry as it does a JWT's", async () => {
    const vc = await ldCredential(ISSUER.did, { status: 3 })
    assert.deepEqual(revocationEntryOf(JSON.stringify(vc)), {
      statusListCredential: STATUS_LIST,
      statusListIndex: 3,
      statusPurpose: 'revocation',
      statusSize: 1,
      revokedValue: 1,
    })
  })

  test('every LD proof type is named in the public list', () => {
    assert.deepEqual([...LD_PROOF_TYPES].sort(), [
      'EcdsaSecp256k1Signature2019',
      'Ed25519Signature2018',
      'JsonWebSignature2020',
      'RsaSignature2018',
      'ecdsa-rdfc-2019',
      'eddsa-rdfc-2022',
    ])
  })
})

// --- Presentation Exchange selection ---------------------------------------------------------------------------

describe('Presentation Exchange selection over ldp_vc (presentation-select.ts)', () => {
  const PROOF_TYPES = ['JsonWebSignature2020', 'Ed25519Signature2018', 'DataIntegrityProof']
  const JWS = ['EdDSA', 'ES256', 'ES256K']
  const formats = {
    ldp: { ldp_vc: { proof_type: PROOF_TYPES }, ldp_vp: { proof_type: PROOF_TYPES } },
    jwt: { jwt_vc_json: { alg: JWS }, jwt_vp_json: { alg: JWS } },
  }
  const definitionWith = (format: Record<string, unknown>) =>
    ({
      id: randomUUID(),
      format,
      input_descriptors: [
        {
          id: 'degree',
          constraints: {
            fields: [{ path: ['$.credentialSubject.degree.name', '$.vc.credentialSubject.degree.name'] }],
          },
        },
      ],
    }) as never

  /** A wallet holding a JWT degree and an ldp_vc degree, in the order given (the last is the newest). */
  async function holdingBoth(order: ('jwt' | 'ldp')[]) {
    const wallet = await Wallet.create()
    const issuer = generateKeyPair('EdDSA')
    const key = didKeyFromPublicKey(issuer.publicKey)
    for (const kind of order) {
      if (kind === 'ldp') {
        await wallet.accept([await ldCredential(wallet.did)], ORIGIN)
        continue
      }
      const now = Math.floor(Date.now() / 1000)
      const jwt = signJws(
        { alg: 'EdDSA', typ: 'JWT', kid: key.kid },
        {
          iss: key.did,
          sub: wallet.did,
          jti: `urn:uuid:${randomUUID()}`,
          nbf: now - 60,
          vc: {
            '@context': [VC_V1_CONTEXT],
            type: ['VerifiableCredential', 'UniversityDegreeCredential'],
            issuer: key.did,
            issuanceDate: new Date((now - 60) * 1000).toISOString(),
            credentialSubject: { id: wallet.did, degree: { type: 'BachelorDegree', name: 'BSc' } },
          },
        },
        issuer.privateKey,
      )
      await wallet.accept([jwt], { ...ORIGIN, configurationId: 'degree', format: 'jwt_vc_json' })
    }
    return wallet
  }

  test('a definition asking for ldp formats only gets the ldp_vc, even when a JWT VC is newer', async () => {
    const wallet = await holdingBoth(['ldp', 'jwt'])
    const selection = await selectCredentials(definitionWith(formats.ldp), wallet.credentials(), wallet.did)
    assert.deepEqual(
      selection.credentials.map((c) => c.format),
      ['ldp_vc'],
    )
  })

  test('one asking for JWT formats only gets the JWT VC; one allowing both gets the newest', async () => {
    const wallet = await holdingBoth(['jwt', 'ldp'])
    const jwtOnly = await selectCredentials(definitionWith(formats.jwt), wallet.credentials(), wallet.did)
    assert.deepEqual(
      jwtOnly.credentials.map((c) => c.format),
      ['jwt_vc_json'],
    )
    const both = await selectCredentials(
      definitionWith({ ...formats.jwt, ...formats.ldp }),
      wallet.credentials(),
      wallet.did,
    )
    assert.deepEqual(
      both.credentials.map((c) => c.format),
      ['ldp_vc'],
    )
    assert.deepEqual(
      both.matches[0]?.candidates.map((c) => c.format),
      ['ldp_vc', 'jwt_vc_json'],
      'newest first, across formats',
    )
  })

  test('ldp formats only and only a JWT VC held: nothing matches, and the refusal names the formats', async () => {
    const wallet = await holdingBoth(['jwt'])
    await assert.rejects(
      selectCredentials(definitionWith(formats.ldp), wallet.credentials(), wallet.did),
      (e: Error) =>
        e instanceof NoMatchingCredentialsError &&
        e.message.includes('[format: it accepts ldp_vc, ldp_vp, and this wallet holds jwt_vc_json]'),
    )
  })
})
