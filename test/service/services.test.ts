// The service's parts constructed without Fastify (issue 31 item 7): services.ts is plain construction, so
// a test drives the relying-party and wallet-facing services directly, and the faults refusal holds there too.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../../src/service/config/index.ts'
import { FaultRegistry } from '../../src/service/faults/index.ts'
import { buildServices } from '../../src/service/services.ts'

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`

describe('services without an HTTP server', () => {
  test('login, an offer, its wallet-facing offer object and a verification session, then close', async () => {
    const config = loadConfigFile(DEMO_CONFIG_PATH)
    const built = await buildServices({ config, publicUrl: () => 'https://rp.example' })
    try {
      const { services } = built
      const { principal } = await services.auth.login({
        authorization: basic('0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01', 'demo-app-secret-7Qm2xV9pL4sT8wZ1'),
        tenant: 'demo',
        ssiconfig: undefined,
        clientAddress: '192.0.2.10',
      })
      const offer = await services.issuance.createOffer(principal, 'degree')
      assert.equal(offer.process.status, 'PENDING')
      assert.match(
        offer.uri,
        /^openid-credential-offer:\/\/\?credential_offer_uri=https%3A%2F%2Frp\.example%2F/,
      )
      const object = (await services.oid4vci.offer('demo', offer.process.id)) as Record<string, unknown>
      assert.equal(object.credential_issuer, 'https://rp.example/oid4vci/demo')
      await assert.rejects(
        services.auth.login({
          authorization: basic('0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01', 'wrong'),
          tenant: 'demo',
          ssiconfig: undefined,
          clientAddress: '192.0.2.10',
        }),
        (error: Error & { code?: string }) => error.code === 'invalid_credentials',
      )
    } finally {
      await built.close()
    }
  })

  test('faults need webhooks.mode "test": refused before any store is opened', async () => {
    const config = loadConfigFile(DEMO_CONFIG_PATH)
    await assert.rejects(
      buildServices({
        config: { ...config, webhooks: { ...config.webhooks, mode: 'production' } },
        faults: new FaultRegistry(),
      }),
      /deliberate faults \(AppOptions\.faults\) are for wallet tests only: the configuration must set webhooks\.mode "test" \(it is "production"\)/,
    )
  })
})
