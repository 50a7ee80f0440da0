// Our wallet's key attestations (OpenID4VCI 1.0 Appendix D) and batches (§3.3.2) against the reference service
// over real HTTP: a key attestation by the test wallet provider in every jwt proof's header where the
// configuration says key_attestations_required (pre-authorized and authorization code flow), the attestation
// proof type (F.3), a batch of three copies (three keys, three credentials, three status entries) kept with
// their keys and presented later with the key each is bound to, a deferred batch, the batch limits refused before
// anything is sent, the 'key-attestation-foreign-key' misbehaviour refused by the service (invalid_proof, D.1)
// with nothing stored, and the CLI's --batch.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type DcqlSessionCreated, ok, type SessionRead } from '../../src/client/index.ts'
import { DEMO_CONFIG_PATH } from '../../src/service/config/index.ts'
import { decodeJws, jwkThumbprint } from '../../src/shared/jws.ts'
import { TEST_WALLET_PROVIDER_ISSUER } from '../../src/shared/oauth/test-wallet-provider.ts'
import {
  type StoredCredential,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import { walletCli } from '../helpers.ts'
import {
  jwtVcPayload,
  offerFor,
  sdJwtPayload,
  startIssuer,
  type TestIssuer,
  VERIFIABLE_ID,
} from '../service/oid4vci/http-wallet.ts'

const KEY_ATTESTATION = {
  required: true,
  keyStorage: ['iso_18045_high', 'iso_18045_moderate'],
  userAuthentication: ['iso_18045_moderate'],
}
const PID = {
  credentialType: 'VerifiableId',
  format: 'dc+sd-jwt',
  signingAlg: 'ES256',
  selectivelyDisclosable: ['familyName', 'firstName'],
}
const TEMPLATES = [
  // pre-authorized: the offer's default grant
  { id: 'pid-ka', ...PID, keyAttestation: KEY_ATTESTATION },
  {
    id: 'pid-ka-code',
    ...PID,
    keyAttestation: KEY_ATTESTATION,
    grants: ['authorization_code'],
    authorization: { userStep: 'auto' },
  },
  // no keyAttestation: none required, the attestation proof type not offered
  { id: 'degree-plain', credentialType: 'UniversityDegreeCredential', signingAlg: 'ES256' },
]
/** The presentation of a batch copy later: the service's verifier asks for a VerifiableId with DCQL. */
const PID_DCQL = {
  id: 'pid-dcql-batch',
  name: 'PID (DCQL) for the batch copies',
  profile: 'dcql',
  credentialTypes: ['VerifiableId'],
  requestedFields: [{ path: '$.credentialSubject.familyName' }],
  dcql: {},
}
const BATCH_SIZE = 3

let t: TestIssuer
/** An issuer of the same tenant setup that announces no batch issuance (oid4vci.batchSize 1). */
let single: TestIssuer
const dirs: string[] = []

before(async () => {
  const demo = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const verificationTemplates = [
    ...demo.tenants.find((x: { id: string }) => x.id === 'demo').verificationTemplates,
    PID_DCQL,
  ]
  ;[t, single] = await Promise.all([
    startIssuer({
      templates: TEMPLATES,
      tenant: { testWalletProvider: true, verificationTemplates },
      oid4vci: { batchSize: BATCH_SIZE },
      label: 'test/wallet/key-attestation-service.test.ts',
    }),
    startIssuer({
      templates: TEMPLATES,
      tenant: { testWalletProvider: true },
      oid4vci: { batchSize: 1 },
      label: 'test/wallet/key-attestation-service.test.ts (no batches)',
    }),
  ])
})
after(async () => {
  await Promise.all([t?.close(), single?.close()])
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const walletFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-harness-ka-'))
  dirs.push(dir)
  return join(dir, 'wallet.json')
}

interface Validator {
  securityMechanisms: { proof: Record<string, unknown>[] }
}
async function processOf(issuer: TestIssuer, processId: string) {
  return ok(await issuer.rp.getProcess(issuer.appToken, processId), 'process') as unknown as {
    status: string
    validator?: Validator
  }
}

/** What the test provider claims for pid-ka: the first value of each list key_attestations_required names. */
const CLAIMED = {
  provider: 'test',
  attestedKeys: 1,
  key_storage: ['iso_18045_high'],
  user_authentication: ['iso_18045_moderate'],
}

const cnfOf = (c: StoredCredential) => jwkThumbprint(sdJwtPayload(c.credential).cnf.jwk)
const statusIndexOf = (c: StoredCredential) => sdJwtPayload(c.credential).status.status_list.idx

describe('key attestation: the wallet attaches what the configuration requires', () => {
  test('pre-authorized: the jwt proof carries a key attestation by the test provider (Appendix F.1); the validator shows it', async () => {
    const w = await Wallet.create({ keyType: 'P-256' })
    const { link, processId } = await offerFor(t, 'pid-ka', VERIFIABLE_ID)
    const result = await w.receive(link)
    assert.equal(result.status, 'issued')
    const [stored] = result.credentials as [StoredCredential]
    assert.equal(stored.subject, w.did)
    assert.equal(cnfOf(stored), jwkThumbprint(w.publicJwk() as Record<string, unknown>))
    const process = await processOf(t, processId)
    assert.equal(process.status, 'ISSUED')
    const [proof] = process.validator?.securityMechanisms.proof ?? []
    assert.equal(proof?.type, 'JwtProof2020')
    assert.deepEqual(proof?.keyAttestation, CLAIMED)
  })

  test('authorization code flow: the same key attestation beside the wallet attestation, DPoP-bound token', async () => {
    const w = await Wallet.create({ keyType: 'P-256' })
    const { link, processId } = await offerFor(t, 'pid-ka-code', VERIFIABLE_ID)
    const result = await w.receive(link)
    assert.equal(result.status, 'issued')
    assert.equal(result.session.flow, 'authorization_code')
    const process = await processOf(t, processId)
    assert.equal(process.status, 'ISSUED')
    assert.deepEqual(process.validator?.securityMechanisms.proof[0]?.keyAttestation, CLAIMED)
  })

  test('keyAttestation: true attaches one where none is required; the service evaluates it only where its metadata asked (Appendix D)', async () => {
    const w = await Wallet.create({ keyType: 'Ed25519' })
    const { link, processId } = await offerFor(t, 'degree-plain', [
      {
        type: ['VerifiableCredential', 'UniversityDegreeCredential'],
        credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science' } },
      },
    ])
    const result = await w.receive(link, { keyAttestation: true })
    assert.equal(result.status, 'issued')
    const proof = (await processOf(t, processId)).validator?.securityMechanisms.proof[0]
    assert.equal(proof?.keyAttestation, undefined, 'not evaluated: the metadata announced nothing')
    // but sent: the proof's header carries the test provider's attestation of the proof's key
    const { header } = decodeJws(String(proof?.jwt))
    const attestation = decodeJws(String(header.key_attestation))
    assert.equal(attestation.header.typ, 'key-attestation+jwt')
    assert.equal(attestation.payload.iss, TEST_WALLET_PROVIDER_ISSUER)
    assert.deepEqual(attestation.payload.attested_keys, [w.publicJwk()])
    assert.equal(attestation.payload.key_storage, undefined, 'nothing asked, nothing claimed')
  })

  test('the attestation proof type (Appendix F.3): one key attestation with the c_nonce attests both keys of a batch of 2', async () => {
    const w = await Wallet.create({ keyType: 'P-256' })
    const { link, processId } = await offerFor(t, 'pid-ka', VERIFIABLE_ID)
    const result = await w.receive(link, { proofType: 'attestation', batch: 2 })
    assert.equal(result.status, 'issued')
    const stored = result.credentials
    assert.equal(stored.length, 2)
    assert.equal(stored[0]?.subject, w.did, "the first attested key is the wallet's own")
    assert.ok(w.isBatchKey(stored[1]?.subject ?? ''), 'the second is a further key, kept')
    assert.equal(new Set(stored.map(cnfOf)).size, 2)
    const [proof] = (await processOf(t, processId)).validator?.securityMechanisms.proof ?? []
    assert.equal(proof?.type, 'KeyAttestation')
    assert.deepEqual(proof?.keyAttestation, { ...CLAIMED, attestedKeys: 2 })
  })

  test('the attestation proof type where the configuration does not offer it: refused before anything is sent', async () => {
    const w = await Wallet.create({ keyType: 'P-256' })
    const { link, processId } = await offerFor(t, 'degree-plain')
    await assert.rejects(w.receive(link, { proofType: 'attestation' }), (e: Error) => {
      assert.ok(e instanceof WalletUsageError, String(e))
      assert.match(e.message, /does not offer the attestation proof type \(proof_types_supported: jwt/)
      return true
    })
    assert.equal((await processOf(t, processId)).status, 'PENDING')
  })
})

describe('batch issuance (OpenID4VCI 1.0 §3.3.2): one credential per key, each kept with its key', () => {
  test('a batch of 3: three credentials, three distinct cnf keys, three status entries; presented later with their own keys', async () => {
    const file = walletFile()
    const w = await Wallet.create({ keyType: 'P-256', file })
    const { link, processId } = await offerFor(t, 'pid-ka', VERIFIABLE_ID)
    const result = await w.receive(link, { batch: 3 })
    assert.equal(result.status, 'issued')
    const stored = result.credentials
    assert.equal(stored.length, 3)
    assert.equal(new Set(stored.map(cnfOf)).size, 3, 'three distinct cnf keys')
    assert.equal(new Set(stored.map(statusIndexOf)).size, 3, 'three status-list entries')
    assert.equal(new Set(stored.map((c) => c.id)).size, 3)
    assert.equal(stored[0]?.subject, w.did)
    for (const copy of stored.slice(1)) {
      assert.ok(w.isBatchKey(copy.subject), 'a further key of the wallet')
      assert.equal(cnfOf(copy), jwkThumbprint(sdJwtPayload(copy.credential).cnf.jwk))
    }
    // every key proof carried its own key attestation; the service bound each copy to a row of its own
    assert.equal((await t.store.issuedCredentials.listByProcess(processId)).length, 3)
    const [proof] = (await processOf(t, processId)).validator?.securityMechanisms.proof ?? []
    assert.deepEqual(proof?.keyAttestation, CLAIMED)

    // the file keeps the further keys (the holder's private key is there too: store.ts); a fresh Wallet on it
    // presents a copy bound to a further key, signing its KB-JWT with that key
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { keys: { did: string; privateKeyHex: string }[] }
    assert.deepEqual(
      saved.keys.map((k) => k.did).sort(),
      stored
        .slice(1)
        .map((c) => c.subject)
        .sort(),
    )
    assert.ok(saved.keys.every((k) => /^[0-9a-f]{64}$/.test(k.privateKeyHex)))
    const reopened = await Wallet.create({ file })
    for (const round of [1, 2]) {
      const session = ok(
        await t.rp.createSession<DcqlSessionCreated>(t.appToken, 'pid-dcql-batch'),
        'verification session',
      )
      const presentation = await reopened.present(session.authentication_request)
      const read = (await t.rp.readSession(t.appToken, session.id)).body as SessionRead
      assert.equal(read.Status, 'VERIFIED', `round ${round}: ${JSON.stringify(read.Validations)}`)
      const presented = reopened.credentials().find((c) => c.id === presentation.presented[0])
      // DCQL takes the newest matching copy: one bound to a further key
      assert.ok(presented && reopened.isBatchKey(presented.subject), `round ${round}: a batch copy`)
    }
  })

  test('a batch of jwt_vc_json: each copy names its key as sub, with its own status entry', async () => {
    const w = await Wallet.create({ keyType: 'Ed25519' })
    const { link } = await offerFor(t, 'degree-plain', [
      {
        type: ['VerifiableCredential', 'UniversityDegreeCredential'],
        credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science' } },
      },
    ])
    const result = await w.receive(link, { batch: 2 })
    assert.equal(result.status, 'issued')
    const payloads = result.credentials.map((c) => jwtVcPayload(c.credential))
    assert.deepEqual(
      payloads.map((p) => p.sub),
      result.credentials.map((c) => c.subject),
    )
    assert.equal(new Set(payloads.map((p) => p.sub)).size, 2)
    assert.equal(new Set(payloads.map((p) => p.vc.credentialStatus.statusListIndex)).size, 2)
  })

  test('a deferred batch: pending, the relying party submits, the deferred download delivers both copies', async () => {
    const w = await Wallet.create({ keyType: 'P-256' })
    const { link, processId } = await offerFor(t, 'pid-ka')
    const first = await w.receive(link, { batch: 2 })
    assert.equal(first.status, 'pending')
    if (first.status !== 'pending') return
    ok(await t.rp.submitCredentials(t.appToken, processId, VERIFIABLE_ID), 'submit')
    const issued = await first.session.awaitDeferred(first.transactionId, { timeoutMs: 20_000 })
    assert.equal(issued.credentials.length, 2)
    const stored = await first.session.accept(issued)
    assert.equal(stored[0]?.subject, w.did)
    assert.ok(w.isBatchKey(stored[1]?.subject ?? ''))
    assert.equal(new Set(stored.map(cnfOf)).size, 2)
  })

  test("more copies than the issuer's batch_size, or any batch where it announces none: refused before anything is sent (§12.2.4)", async () => {
    const w = await Wallet.create({ keyType: 'P-256' })
    const { link, processId } = await offerFor(t, 'pid-ka', VERIFIABLE_ID)
    await assert.rejects(w.receive(link, { batch: BATCH_SIZE + 1 }), (e: Error) => {
      assert.ok(e instanceof WalletUsageError, String(e))
      assert.match(e.message, /a batch of 4 copies asked for, but .* takes at most 3 key proofs per request/)
      return true
    })
    const other = await offerFor(single, 'pid-ka', VERIFIABLE_ID)
    await assert.rejects(w.receive(other.link, { batch: 2 }), (e: Error) => {
      assert.ok(e instanceof WalletUsageError, String(e))
      assert.match(e.message, /announces no batch issuance \(no batch_credential_issuance in its metadata/)
      return true
    })
    for (const [issuer, offer] of [
      [t, { link, processId }],
      [single, other],
    ] as const) {
      assert.equal((await processOf(issuer, offer.processId)).status, 'PENDING')
      // the pre-authorized code was not redeemed: one copy is issued from the same offer
      assert.equal((await w.receive(offer.link)).status, 'issued')
    }
    await assert.rejects(w.receive(link, { batch: 0 }), /batch: a whole number of copies, 1 or more, not 0/)
    await assert.rejects(
      (await Wallet.create({ protocol: 'draft15' })).receive((await offerFor(t, 'degree-plain')).link, {
        batch: 2,
      }),
      /a batch of 2 \(OpenID4VCI 1\.0 §3\.3\.2\) is spoken on the OpenID4VCI 1\.0 path only/,
    )
  })
})

describe("key-attestation-foreign-key: the service refuses a key attestation of another key than the proof's", () => {
  for (const template of ['pid-ka', 'pid-ka-code']) {
    test(`${template}: credential 400 invalid_proof naming Appendix D.1; nothing stored, nothing issued`, async () => {
      const w = await Wallet.create({ keyType: 'P-256' })
      const { link, processId } = await offerFor(t, template, VERIFIABLE_ID)
      await assert.rejects(w.receive(link, { misbehave: ['key-attestation-foreign-key'] }), (e: unknown) => {
        assert.ok(e instanceof WalletProtocolError, String(e))
        assert.deepEqual([e.step, e.status, e.error], ['credential', 400, 'invalid_proof'], e.message)
        assert.match(
          String(e.errorDescription),
          /^the proof JWT's key is not among the key attestation's attested_keys: the proof must be signed by an attested key \(OpenID4VCI 1\.0 Appendix D\.1\)$/,
        )
        return true
      })
      assert.deepEqual(w.credentials(), [])
      assert.equal((await processOf(t, processId)).status, 'PENDING')
      assert.deepEqual(await t.store.issuedCredentials.listByProcess(processId), [])
    })
  }

  test('with the attestation proof type it has nothing to change: refused before anything is sent', async () => {
    const w = await Wallet.create({ keyType: 'P-256' })
    const { link } = await offerFor(t, 'pid-ka', VERIFIABLE_ID)
    await assert.rejects(
      w.receive(link, { proofType: 'attestation', misbehave: ['key-attestation-foreign-key'] }),
      /misbehaviour key-attestation-foreign-key acts on a jwt proof; the attestation proof type \(OpenID4VCI 1\.0 Appendix F\.3\) is a key attestation alone/,
    )
  })
})

describe('vc-harness wallet receive --batch', () => {
  test('--batch 2 into a wallet file: two credentials, each naming its holder key; list shows both', async () => {
    const file = walletFile()
    const { link } = await offerFor(t, 'pid-ka', VERIFIABLE_ID)
    const { out, error } = await walletCli([
      'receive',
      link,
      '--batch',
      '2',
      '--wallet',
      file,
      '--key-type',
      'P-256',
    ])
    assert.equal(error, undefined, String(error?.message))
    const printed = JSON.parse(out) as { status: string; holder: string; credentials: { holder: string }[] }
    assert.equal(printed.status, 'issued')
    assert.equal(printed.credentials.length, 2)
    assert.equal(printed.credentials[0]?.holder, printed.holder)
    assert.notEqual(printed.credentials[1]?.holder, printed.holder)
    const listed = JSON.parse((await walletCli(['list', '--wallet', file])).out) as {
      credentials: { holder: string }[]
    }
    assert.deepEqual(
      listed.credentials.map((c) => c.holder),
      printed.credentials.map((c) => c.holder),
    )
    const bad = await walletCli(['receive', link, '--batch', 'two'])
    assert.match(bad.error?.code ?? '', /^ERR_PARSE_ARGS/)
    assert.match(String(bad.error?.message), /--batch: not a positive whole number of copies: two/)
  })
})
