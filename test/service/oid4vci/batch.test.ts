import 'reflect-metadata'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { clientAuthenticationAnonymous } from '@openid4vc/oauth2'
import { Openid4vciClient, setGlobalConfig } from '@openid4vc/openid4vci'
import { ok } from '../../../src/client/index.ts'
import type { Store } from '../../../src/service/store/index.ts'
import { jwkThumbprint, signInput } from '../../../src/shared/jws.ts'
import { createKeyAttestation } from '../../../src/shared/oauth/key-attestation.ts'
import { testWalletProviderSigner } from '../../../src/shared/oauth/test-wallet-provider.ts'
import { STORE_KINDS } from '../../fixtures/stores.ts'
import {
  credentialsOf,
  DEGREE,
  grantFor,
  type HolderKey,
  holderKey,
  jwtProof,
  jwtVcPayload,
  nonceOf,
  offerFor,
  refused,
  sdJwtPayload,
  startIssuer,
  type TestIssuer,
  VERIFIABLE_ID,
  walletPost,
} from './http-wallet.ts'

// Batch issuance (OpenID4VCI 1.0 §8.2 `proofs` with several keys, §12.2.4 batch_credential_issuance) over real
// HTTP, on both stores: distinct keys → one credential each, each with its own status entry (unlinkable
// copies: further instances of the process's credential, so a status change reaches them), in one
// transaction; the same key twice, or more than batch_size, refused with nothing written; a batch whose first
// request waits for content (attended issuance) gets every key's credential from the deferred download; and
// the OWF @openid4vc/openid4vci client's own batch (`proofs: {jwt: [a, b, c]}`).

setGlobalConfig({ allowInsecureUrls: true })

const BATCH_SIZE = 4
const TEMPLATES = [
  { id: 'degree-b', credentialType: 'UniversityDegreeCredential' },
  { id: 'pid-b', credentialType: 'VerifiableId', format: 'dc+sd-jwt', signingAlg: 'ES256' },
  {
    id: 'pid-b-ka',
    credentialType: 'VerifiableId',
    format: 'dc+sd-jwt',
    signingAlg: 'ES256',
    keyAttestation: { required: true },
  },
]

const request = (configurationId: string, proofs: Record<string, unknown[]>) => ({
  credential_configuration_id: configurationId,
  proofs,
})
const thumbprints = (keys: HolderKey[]) => keys.map((k) => jwkThumbprint(k.publicJwk))

for (const kind of STORE_KINDS) {
  describe(`batch issuance (${kind.name})`, { skip: kind.skip }, () => {
    const databases = kind.use()
    let t: TestIssuer
    let store: Store
    before(async () => {
      store = await (await databases.fresh('batch-issuance')).open()
      t = await startIssuer({
        templates: TEMPLATES,
        tenant: { testWalletProvider: true },
        oid4vci: { batchSize: BATCH_SIZE },
        store,
        label: 'test/service/oid4vci/batch.test.ts',
      })
    })
    after(async () => {
      await t?.close()
      await store?.close()
    })

    const rows = (processId: string) => store.issuedCredentials.listByProcess(processId)
    const processOf = async (processId: string) =>
      ok(await t.rp.getProcess(t.appToken, processId), 'process') as unknown as {
        status: string
        data?: { id: string }[]
        validator: { verifiablePresentation: { holder: string } } | null
      }

    test('metadata: batch_credential_issuance.batch_size is oid4vci.batchSize (§12.2.4)', async () => {
      const meta = (await (await fetch(`${t.issuer}/.well-known/openid-credential-issuer`)).json()) as Record<
        string,
        unknown
      >
      assert.deepEqual(meta.batch_credential_issuance, { batch_size: BATCH_SIZE })
    })

    test('§8.2: 3 distinct keys, immediate → 3 credentials, each bound to its key with its own status entry, one notification_id; a status change reaches all', async () => {
      const keys = [holderKey(), holderKey('EdDSA'), holderKey()]
      const g = await grantFor(t, 'degree-b', DEGREE)
      const proofs = keys.map((k) => jwtProof(t, k, g.cNonce, { kid: k.holder.kid }))
      const answer = await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: proofs }))
      const credentials = credentialsOf(answer).map(jwtVcPayload)
      assert.deepEqual(
        credentials.map((c) => c.sub),
        keys.map((k) => k.holder.did),
      )
      assert.equal(new Set(credentials.map((c) => c.jti)).size, 3)
      assert.equal(new Set(credentials.map((c) => c.vc.credentialStatus.statusListIndex)).size, 3)
      const stored = await rows(g.processId)
      assert.equal(stored.length, 3)
      assert.equal(new Set(stored.map((r) => `${r.listId}#${r.listIndex}`)).size, 3)
      // The first key is the process's holder; its data shows the original, the others are its instances.
      const process = await processOf(g.processId)
      assert.equal(process.status, 'ISSUED')
      assert.equal(process.validator?.verifiablePresentation.holder, keys[0]?.holder.did)
      const original = process.data?.[0]?.id
      assert.equal(process.data?.length, 1)
      assert.deepEqual(stored.map((r) => r.instanceOf ?? null).sort(), [null, original, original].sort())
      const notified = await walletPost(t, 'notification', g.accessToken, {
        notification_id: answer.body.notification_id,
        event: 'credential_accepted',
      })
      assert.equal(notified.status, 204)
      ok(await t.rp.setCredentialStatus(t.adminToken, g.processId, { status: 'suspended' }), 'suspend')
      assert.deepEqual(
        (await rows(g.processId)).map((r) => r.status),
        ['suspended', 'suspended', 'suspended'],
      )
    })

    test('dc+sd-jwt: 3 keys by jwk → 3 SD-JWT VCs, cnf each key, 3 status indices', async () => {
      const keys = [holderKey(), holderKey(), holderKey()]
      const g = await grantFor(t, 'pid-b', VERIFIABLE_ID)
      const proofs = keys.map((k) => jwtProof(t, k, g.cNonce))
      const credentials = credentialsOf(
        await walletPost(t, 'credential', g.accessToken, request('pid-b', { jwt: proofs })),
      ).map(sdJwtPayload)
      assert.deepEqual(
        credentials.map((c) => jwkThumbprint(c.cnf.jwk)),
        thumbprints(keys),
      )
      assert.equal(new Set(credentials.map((c) => c.status.status_list.idx)).size, 3)
    })

    test('the same key twice, more than batch_size, different nonces → invalid_proof; nothing written, the nonce unused', async () => {
      const [a, b] = [holderKey(), holderKey()]
      const g = await grantFor(t, 'degree-b', DEGREE)
      const proof = (k: HolderKey, extra: Record<string, unknown> = {}) =>
        jwtProof(t, k, g.cNonce, { kid: k.holder.kid }, extra)
      refused(
        await walletPost(
          t,
          'credential',
          g.accessToken,
          request('degree-b', { jwt: [proof(a), proof(b), proof(a, { jti: 'again' })] }),
        ),
        'invalid_proof',
        /proofs\[2\] proves the same key as proofs\[0\].*distinct keys.*§8\.3/,
      )
      const five = Array.from({ length: BATCH_SIZE + 1 }, () => proof(holderKey()))
      refused(
        await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: five })),
        'invalid_proof',
        /1 to 4 proofs \(this issuer's batch_size, OpenID4VCI 1\.0 §12\.2\.4\); got 5/,
      )
      const other = jwtProof(t, b, await nonceOf(t), { kid: b.holder.kid })
      refused(
        await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: [proof(a), other] })),
        'invalid_proof',
        /same c_nonce/,
      )
      assert.deepEqual(await rows(g.processId), [])
      const process = await processOf(g.processId)
      assert.equal(process.status, 'PENDING')
      assert.equal(process.validator, null)
      const credentials = credentialsOf(
        await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: [proof(a), proof(b)] })),
      )
      assert.equal(credentials.length, 2)
    })

    test('a failure while issuing the further keys rolls the whole request back: no status entry, no holder bound, the request can be sent again', async () => {
      const keys = [holderKey(), holderKey(), holderKey()]
      const g = await grantFor(t, 'degree-b', DEGREE)
      const proofs = keys.map((k) => jwtProof(t, k, g.cNonce, { kid: k.holder.kid }))
      const { issuance } = t.server.app.services
      const genuine = issuance.issueFurtherIn.bind(issuance)
      // The further instances are signed (entries allocated, rows written), then the store fails.
      issuance.issueFurtherIn = async (...args) => {
        await genuine(...args)
        throw new Error('injected failure after the further instances were written')
      }
      try {
        const failed = await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: proofs }))
        assert.equal(failed.status, 500, JSON.stringify(failed.body))
      } finally {
        issuance.issueFurtherIn = genuine
      }
      assert.deepEqual(await rows(g.processId), [], 'no status entry kept')
      const process = await processOf(g.processId)
      assert.equal(process.status, 'PENDING')
      assert.equal(process.validator, null)
      assert.equal((await store.grants.get(g.processId))?.holderDid, null)
      // The nonce was used by the failed request (consumed before the transaction): a fresh one works.
      const fresh = await nonceOf(t)
      const again = keys.map((k) => jwtProof(t, k, fresh, { kid: k.holder.kid }))
      const credentials = credentialsOf(
        await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: again })),
      )
      assert.equal(credentials.length, 3)
      assert.equal((await rows(g.processId)).length, 3)
    })

    test('attended (deferred): a batch waits with its keys; the same keys get the same 202, others are refused; the download hands out every key’s credential once', async () => {
      const keys = [holderKey(), holderKey('EdDSA'), holderKey()]
      const g = await grantFor(t, 'degree-b')
      const proofs = (nonce: string, which = keys) =>
        which.map((k) => jwtProof(t, k, nonce, { kid: k.holder.kid }))
      const first = await walletPost(
        t,
        'credential',
        g.accessToken,
        request('degree-b', { jwt: proofs(g.cNonce) }),
      )
      assert.equal(first.status, 202, JSON.stringify(first.body))
      const transactionId = first.body.transaction_id as string
      assert.deepEqual((await store.grants.get(g.processId))?.batchHolders, [
        keys[1]?.holder.did,
        keys[2]?.holder.did,
      ])
      // The same batch (in another order) again: the same transaction.
      const reordered = [keys[0], keys[2], keys[1]] as HolderKey[]
      const same = await walletPost(
        t,
        'credential',
        g.accessToken,
        request('degree-b', { jwt: proofs(await nonceOf(t), reordered) }),
      )
      assert.deepEqual(same.body, { transaction_id: transactionId, interval: 1 })
      refused(
        await walletPost(
          t,
          'credential',
          g.accessToken,
          request('degree-b', { jwt: proofs(await nonceOf(t), keys.slice(0, 2)) }),
        ),
        'invalid_credential_request',
        /waits for the issuer/,
      )
      const pending = await walletPost(t, 'deferred_credential', g.accessToken, {
        transaction_id: transactionId,
      })
      assert.equal(pending.status, 202)
      assert.deepEqual(await rows(g.processId), [])
      // The relying party submits: the first key's credential is issued now, the others' at the download.
      ok(await t.rp.submitCredentials(t.appToken, g.processId, DEGREE), 'submit')
      assert.equal((await rows(g.processId)).length, 1)
      const ready = await walletPost(t, 'deferred_credential', g.accessToken, {
        transaction_id: transactionId,
      })
      const credentials = credentialsOf(ready).map(jwtVcPayload)
      assert.deepEqual(
        credentials.map((c) => c.sub),
        keys.map((k) => k.holder.did),
      )
      assert.equal(new Set(credentials.map((c) => c.vc.credentialStatus.statusListIndex)).size, 3)
      const stored = await rows(g.processId)
      assert.equal(stored.length, 3)
      assert.equal(stored.filter((r) => r.instanceOf).length, 2)
      assert.equal(
        (
          await walletPost(t, 'notification', g.accessToken, {
            notification_id: ready.body.notification_id,
            event: 'credential_accepted',
          })
        ).status,
        204,
      )
      refused(
        await walletPost(t, 'deferred_credential', g.accessToken, { transaction_id: transactionId }),
        'invalid_transaction_id',
        /already redeemed/,
      )
      assert.equal((await rows(g.processId)).length, 3, 'a second download issues nothing')
      // Once ISSUED, a further batch on the same token: two more keys, two more credentials.
      const more = [holderKey(), holderKey()]
      const further = credentialsOf(
        await walletPost(
          t,
          'credential',
          g.accessToken,
          request('degree-b', { jwt: proofs(await nonceOf(t), more) }),
        ),
      )
      assert.deepEqual(
        further.map((c) => jwtVcPayload(c).sub),
        more.map((k) => k.holder.did),
      )
      assert.equal((await rows(g.processId)).length, 5)
    })

    test('attended: a credential suspended before the download → only the process’s own is handed out (§8.3: the issuer may issue fewer)', async () => {
      const keys = [holderKey(), holderKey()]
      const g = await grantFor(t, 'degree-b')
      const proofs = keys.map((k) => jwtProof(t, k, g.cNonce, { kid: k.holder.kid }))
      const first = await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: proofs }))
      assert.equal(first.status, 202)
      ok(await t.rp.submitCredentials(t.appToken, g.processId, DEGREE), 'submit')
      ok(await t.rp.setCredentialStatus(t.adminToken, g.processId, { status: 'suspended' }), 'suspend')
      const ready = await walletPost(t, 'deferred_credential', g.accessToken, {
        transaction_id: first.body.transaction_id,
      })
      assert.deepEqual(
        credentialsOf(ready).map((c) => jwtVcPayload(c).sub),
        [keys[0]?.holder.did],
      )
      assert.equal((await rows(g.processId)).length, 1)
    })

    test('the attestation proof type: one credential per attested key within batch_size, beyond it refused', async () => {
      const attest = (keys: HolderKey[], nonce: string) =>
        createKeyAttestation(testWalletProviderSigner(), {
          attestedKeys: keys.map((k) => k.publicJwk),
          nonce,
        })
      const g = await grantFor(t, 'pid-b-ka', VERIFIABLE_ID)
      const five = Array.from({ length: BATCH_SIZE + 1 }, () => holderKey())
      refused(
        await walletPost(
          t,
          'credential',
          g.accessToken,
          request('pid-b-ka', { attestation: [attest(five, g.cNonce)] }),
        ),
        'invalid_proof',
        /attests 5 keys, one credential each; this issuer issues at most 4 per request/,
      )
      const same = holderKey()
      refused(
        await walletPost(
          t,
          'credential',
          g.accessToken,
          request('pid-b-ka', { attestation: [attest([same, same], g.cNonce)] }),
        ),
        'invalid_proof',
        /attested_keys\[1\] repeats an earlier key/,
      )
      assert.deepEqual(await rows(g.processId), [])
      const four = five.slice(0, BATCH_SIZE)
      const credentials = credentialsOf(
        await walletPost(
          t,
          'credential',
          g.accessToken,
          request('pid-b-ka', { attestation: [attest(four, g.cNonce)] }),
        ),
      ).map(sdJwtPayload)
      assert.deepEqual(
        credentials.map((c) => jwkThumbprint(c.cnf.jwk)),
        thumbprints(four),
      )
    })

    test('@openid4vc/openid4vci (OWF): proofs {jwt: [a, b, c]} built by the client → 3 credentials, one per key', async () => {
      const keys = [holderKey(), holderKey(), holderKey()]
      const byThumbprint = new Map(keys.map((k) => [jwkThumbprint(k.publicJwk), k]))
      const client = new Openid4vciClient({
        callbacks: {
          hash: (data, algorithm) =>
            new Uint8Array(createHash(algorithm.replace('-', '').toLowerCase()).update(data).digest()),
          generateRandom: (bytes) => new Uint8Array(randomBytes(bytes)),
          clientAuthentication: clientAuthenticationAnonymous(),
          // Signs with the key the library's signer names (a jwk signer each).
          signJwt: async (signer, { header, payload }) => {
            const jwk = (signer as { publicJwk: Record<string, unknown> }).publicJwk
            const key = byThumbprint.get(jwkThumbprint(jwk))
            if (!key) throw new Error('no such key')
            const encode = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
            const input = `${encode(header)}.${encode(payload)}`
            return { jwt: `${input}.${signInput('ES256', input, key.privateKey)}`, signerJwk: jwk as never }
          },
        },
      })
      const { link } = await offerFor(t, 'pid-b', VERIFIABLE_ID)
      const credentialOffer = await client.resolveCredentialOffer(link)
      const issuerMetadata = await client.resolveIssuerMetadata(credentialOffer.credential_issuer)
      assert.equal(issuerMetadata.credentialIssuer.batch_credential_issuance?.batch_size, BATCH_SIZE)
      const { accessTokenResponse } = await client.retrievePreAuthorizedCodeAccessTokenFromOffer({
        credentialOffer,
        issuerMetadata,
      })
      const { c_nonce: nonce } = await client.requestNonce({ issuerMetadata })
      const jwts: string[] = []
      for (const key of keys) {
        const { jwt } = await client.createCredentialRequestJwtProof({
          issuerMetadata,
          credentialConfigurationId: 'pid-b',
          signer: { method: 'jwk', publicJwk: key.publicJwk as never, alg: 'ES256' },
          nonce,
        })
        jwts.push(jwt)
      }
      const result = await client.retrieveCredentials({
        issuerMetadata,
        accessToken: accessTokenResponse.access_token,
        credentialConfigurationId: 'pid-b',
        proofs: { jwt: jwts },
      })
      assert.equal(result.response.status, 200)
      const credentials = (result.credentialResponse as { credentials: { credential: string }[] }).credentials
      assert.deepEqual(
        credentials.map((c) => jwkThumbprint(sdJwtPayload(c.credential).cnf.jwk)),
        thumbprints(keys),
      )
      // The client's own batch_size check: one more proof than the metadata allows is refused before sending.
      await assert.rejects(
        client.retrieveCredentials({
          issuerMetadata,
          accessToken: accessTokenResponse.access_token,
          credentialConfigurationId: 'pid-b',
          proofs: { jwt: [...jwts, ...jwts.slice(0, 2)] },
        }),
        /max batch size is '4'/,
      )
    })
  })
}

describe('batch issuance off (oid4vci.batchSize 1)', () => {
  let t: TestIssuer
  before(async () => {
    t = await startIssuer({
      templates: TEMPLATES.slice(0, 1),
      oid4vci: { batchSize: 1 },
      label: 'test/service/oid4vci/batch.test.ts (batchSize 1)',
    })
  })
  after(() => t?.close())

  test('the metadata leaves batch_credential_issuance out; two proofs are refused, one is served', async () => {
    const meta = (await (await fetch(`${t.issuer}/.well-known/openid-credential-issuer`)).json()) as Record<
      string,
      unknown
    >
    assert.equal('batch_credential_issuance' in meta, false)
    const [a, b] = [holderKey(), holderKey()]
    const g = await grantFor(t, 'degree-b', DEGREE)
    const proof = (k: HolderKey) => jwtProof(t, k, g.cNonce, { kid: k.holder.kid })
    refused(
      await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: [proof(a), proof(b)] })),
      'invalid_proof',
      /1 to 1 proofs/,
    )
    assert.equal(
      credentialsOf(
        await walletPost(t, 'credential', g.accessToken, request('degree-b', { jwt: [proof(a)] })),
      ).length,
      1,
    )
  })
})
