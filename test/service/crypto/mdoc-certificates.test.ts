import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Database from 'better-sqlite3'
import { IssuerCertificates } from '../../../src/service/crypto/issuer-certificates.ts'
import { TenantKeys } from '../../../src/service/crypto/tenant-keys.ts'
import type { Store } from '../../../src/service/store/index.ts'
import { DATABASE_FILE, openSqliteStore } from '../../../src/service/store/sqlite.ts'
import { ManualClock } from '../../../src/service/util/clock.ts'
import { PublicUrls } from '../../../src/service/util/urls.ts'
import {
  certificateDer,
  certificateExtension,
  mdocCertificateProblems,
  parseCertificates,
  verifyX5c,
} from '../../../src/shared/x509.ts'

// IssuerCertificates, mso_mdoc side (ISO/IEC 18013-5 Annex B): each tenant's IACA root and the document signer
// certificate of its ES256 issuer key are generated on first use, persisted (the IACA's key sealed like the
// test CA's), and the same after a restart on the same data; every tenant has its own root.

const DAY = 86_400_000
const BASE = 'https://issuer.example'
const tenant = (id: string) => ({ id, source: 'portal' as const, createdAt: 1 })

describe('IssuerCertificates: the per-tenant IACA and document signer', () => {
  let dir: string
  let store: Store
  let clock: ManualClock
  const urls = new PublicUrls(() => BASE, 'openid-credential-offer')
  const open = () => {
    const keys = new TenantKeys(store, clock)
    const certificates = new IssuerCertificates(store, clock, urls)
    return {
      certificates,
      chain: async (tenantId: string) =>
        certificates.mdocChain(tenantId, await keys.forTenant(tenantId, 'ES256')),
    }
  }
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-harness-mdoc-certs-'))
    store = await openSqliteStore(dir)
    clock = new ManualClock()
    await store.tenants.create(tenant('acme'))
    await store.tenants.create(tenant('globex'))
  })
  after(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('an unknown tenant has no IACA', async () => {
    assert.equal(await open().certificates.iacaPem('nobody'), undefined)
  })

  test('the IACA and DS fit Annex B; the DS chains to the IACA and names the credential issuer', async () => {
    const { certificates, chain } = open()
    const pem = (await certificates.iacaPem('acme')) ?? assert.fail('no IACA for a known tenant')
    assert.ok(pem.startsWith('-----BEGIN CERTIFICATE-----'), 'PEM')
    assert.deepEqual(mdocCertificateProblems(pem, 'iaca'), [])
    const x5chain = await chain('acme')
    assert.equal(x5chain.length, 1, 'the DS only: the IACA is the trust anchor')
    assert.match(x5chain[0] as string, /^[A-Za-z0-9+/]+={0,2}$/, 'standard base64 DER')
    assert.deepEqual(mdocCertificateProblems(Buffer.from(x5chain[0] as string, 'base64'), 'ds'), [])
    await verifyX5c(x5chain, [pem])
    const [iaca] = parseCertificates(pem)
    const [ds] = parseCertificates(x5chain[0] as string)
    assert.deepEqual(iaca?.subjectName.getField('C'), ['UT'])
    assert.deepEqual(ds?.subjectName.getField('C'), ['UT'])
    assert.equal(ds?.issuer, iaca?.subject)
    // issuerAltName (2.5.29.18) of both: the tenant's credential issuer URL.
    const issuerUrl = Buffer.from(urls.credentialIssuer('acme'))
    assert.ok(certificateExtension(pem, '2.5.29.18')?.value.includes(issuerUrl))
    assert.ok(certificateExtension(x5chain[0] as string, '2.5.29.18')?.value.includes(issuerUrl))
  })

  test('same tenant, same IACA and DS: from the cache, from another instance, after reopening the store', async () => {
    const first = open()
    const pem = await first.certificates.iacaPem('acme')
    const x5chain = await first.chain('acme')
    assert.equal(await first.certificates.iacaPem('acme'), pem)
    assert.deepEqual(await first.chain('acme'), x5chain)

    const second = open()
    assert.equal(await second.certificates.iacaPem('acme'), pem)
    assert.deepEqual(await second.chain('acme'), x5chain)

    await store.close()
    store = await openSqliteStore(dir)
    const restarted = open()
    assert.equal(await restarted.certificates.iacaPem('acme'), pem)
    assert.deepEqual(await restarted.chain('acme'), x5chain)
  })

  test('two tenants, two roots: each DS chains to its own IACA only', async () => {
    const { certificates, chain } = open()
    const [acmePem, globexPem] = [await certificates.iacaPem('acme'), await certificates.iacaPem('globex')]
    assert.ok(acmePem && globexPem)
    assert.notEqual(acmePem, globexPem)
    assert.notDeepEqual(certificateDer(acmePem), certificateDer(globexPem))
    const [acme, globex] = [await chain('acme'), await chain('globex')]
    assert.notDeepEqual(acme, globex)
    await verifyX5c(globex, [globexPem])
    await assert.rejects(verifyX5c(acme, [globexPem]), /trust anchor/)
    await assert.rejects(verifyX5c(globex, [acmePem]), /trust anchor/)
  })

  test('the IACA private key is sealed at rest, not stored as a plain JWK', async () => {
    await open().certificates.iacaPem('acme')
    const db = new Database(join(dir, DATABASE_FILE), { readonly: true, fileMustExist: true })
    try {
      const rows = db.prepare('SELECT tenant_id, private_jwk FROM mdoc_iacas').all() as {
        tenant_id: string
        private_jwk: string
      }[]
      assert.ok(rows.some((r) => r.tenant_id === 'acme'))
      for (const row of rows) assert.doesNotMatch(row.private_jwk, /"d"\s*:/)
    } finally {
      db.close()
    }
  })

  // ISO 18013-5 Annex B.1.4 limits a document signer to 457 days, and under RFC 5280 a DS valid after its
  // IACA has expired is useless past that date.
  test('a DS issued after its IACA does not outlive it, and lives at most 457 days', async () => {
    const { certificates } = open()
    await store.tenants.create(tenant('initech'))
    const pem = await certificates.iacaPem('initech')
    clock.advance(30 * DAY)
    const keys = new TenantKeys(store, clock)
    const [ds] = await certificates.mdocChain('initech', await keys.forTenant('initech', 'ES256'))
    const [iacaCert] = parseCertificates(pem as string)
    const [dsCert] = parseCertificates(ds as string)
    assert.ok(dsCert && iacaCert)
    assert.ok(
      dsCert.notAfter <= iacaCert.notAfter,
      `DS ${dsCert.notAfter.toISOString()} > IACA ${iacaCert.notAfter.toISOString()}`,
    )
    assert.ok(dsCert.notAfter.getTime() - dsCert.notBefore.getTime() <= 457 * DAY)
  })
})
