import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  dcApiClaimsFault,
  FaultyDcApiRequests,
  WRONG_EXPECTED_ORIGIN,
} from '../../../src/service/faults/dc-api.ts'
import { FaultRegistry } from '../../../src/service/faults/index.ts'
import type { DcApiRequests } from '../../../src/service/oid4vp/dc-api.ts'
import type { SessionRecord } from '../../../src/service/store/index.ts'
import { DC_API_PROTOCOLS, type DcApiRequestType } from '../../../src/shared/dc-api.ts'

// The DC API faults of the wallet test plans (faults/dc-api.ts): what a signed request says, changed before it
// is signed, and how a multi-signed one is signed, changed after it is built; every other tenant's request
// passes through untouched. End to end (a wallet meeting them): test/harness/wallet-test/dc-api-plan.test.ts.

const session = (tenantId: string, request: DcApiRequestType) =>
  ({
    id: 's1',
    tenantId,
    policy: { dcApi: { request, origins: ['https://rp.example'] } },
  }) as unknown as SessionRecord

const GENERAL = {
  payload: 'eyJhIjoxfQ',
  signatures: [
    { protected: 'eyJhbGciOiJFUzI1NiJ9', signature: Buffer.alloc(64, 1).toString('base64url') },
    { protected: 'eyJhbGciOiJFZERTQSJ9', signature: Buffer.alloc(64, 2).toString('base64url') },
  ],
}
const inner: DcApiRequests = {
  build: async (s) =>
    s.policy.dcApi?.request === 'multisigned'
      ? { protocol: DC_API_PROTOCOLS.multisigned, data: { request: structuredClone(GENERAL) } }
      : { protocol: DC_API_PROTOCOLS.signed, data: { request: 'a.b.c' } },
}

describe('DC API faults', () => {
  test('expected_origins wrong or missing, only in claims that carry them (a QR request object is left alone)', () => {
    const claims = { client_id: 'x509_hash:abc', expected_origins: ['https://rp.example'], nonce: 'n' }
    assert.deepEqual(dcApiClaimsFault('dc-api-wrong-expected-origins', claims).expected_origins, [
      WRONG_EXPECTED_ORIGIN,
    ])
    const missing = dcApiClaimsFault('dc-api-expected-origins-missing', claims)
    assert.ok(!('expected_origins' in missing))
    assert.equal(missing.nonce, 'n')
    const qr = { client_id: 'x509_hash:abc', nonce: 'n' }
    assert.equal(dcApiClaimsFault('dc-api-wrong-expected-origins', qr), qr)
    assert.equal(dcApiClaimsFault('nonce-missing', claims), claims)
  })

  test('a multi-signed request: the first signature corrupted, or all; other tenants untouched', async () => {
    const registry = new FaultRegistry()
    const faulty = new FaultyDcApiRequests(registry, inner)
    registry.set('one', { fault: 'dc-api-multisigned-one-invalid-signature' })
    registry.set('all', { fault: 'dc-api-multisigned-all-invalid' })
    const signatures = async (tenant: string) =>
      ((await faulty.build(session(tenant, 'multisigned'), 0)).data.request as typeof GENERAL).signatures.map(
        (s) => s.signature,
      )
    const genuine = GENERAL.signatures.map((s) => s.signature)
    assert.deepEqual(await signatures('other'), genuine)
    const one = await signatures('one')
    assert.notEqual(one[0], genuine[0])
    assert.equal(one[1], genuine[1])
    assert.equal(Buffer.from(one[0] as string, 'base64url').length, 64)
    const all = await signatures('all')
    assert.ok(all.every((s, i) => s !== genuine[i]))
  })

  test('a fault that needs another request type is a 409 naming it', async () => {
    const registry = new FaultRegistry()
    registry.set('t', { fault: 'dc-api-multisigned-all-invalid' })
    await assert.rejects(
      new FaultyDcApiRequests(registry, inner).build(session('t', 'signed'), 0),
      (e: Error) => {
        assert.match(e.message, /needs a multisigned Digital Credentials API request .*not signed/)
        return true
      },
    )
    registry.set('t', { fault: 'dc-api-expected-origins-missing' })
    await assert.rejects(
      new FaultyDcApiRequests(registry, inner).build(session('t', 'unsigned'), 0),
      /needs a signed/,
    )
  })
})
