import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import {
  CONFIG_SCHEMA_PATH,
  ConfigError,
  configJsonSchema,
  DEMO_CONFIG_PATH,
  loadConfigFile,
  parseConfig,
} from '../../../src/service/config/index.ts'
import { DEMO, demoConfig, loginRequest, makeApp } from '../../helpers.ts'

const minimal = () => ({
  tenants: [
    {
      id: 'acme',
      apiKeys: [
        { id: '3f1c2b7a-9e4d-4c1b-8a6f-2d5e7c9b1a00', secret: 'a-long-enough-secret-123456', role: 'app' },
      ],
    },
  ],
})

function rejects(input: unknown, pattern: RegExp) {
  assert.throws(
    () => parseConfig(input, 'test.json'),
    (error: unknown) => error instanceof ConfigError && pattern.test(error.message),
    `expected a ConfigError matching ${pattern}`,
  )
}

describe('configuration file', () => {
  test('the embedded demo configuration is valid and gets every default', () => {
    const config = loadConfigFile(DEMO_CONFIG_PATH)
    assert.equal(config.walletScheme, 'openid-credential-offer')
    assert.equal(config.tokenLifetimeSeconds, 3600)
    assert.equal(config.bodyLimitBytes, 262144)
    assert.equal(config.listPageSize, 50)
    assert.equal(config.listMaxPageSize, 200)
    assert.equal(config.publicUrl, undefined)
    const roles = config.tenants[0]?.apiKeys.map((k) => k.role).sort()
    assert.deepEqual(roles, ['admin', 'app', 'app', 'app', 'app', 'app', 'app', 'app', 'operator'])
  })

  test('a minimal file gets empty template lists', () => {
    const config = parseConfig(minimal())
    assert.deepEqual(config.tenants[0]?.issuanceTemplates, [])
    assert.deepEqual(config.tenants[0]?.verificationTemplates, [])
  })

  test('errors name the file and the field', () => {
    rejects({ ...minimal(), colour: 'red' }, /test\.json is invalid:[\s\S]*\/: unknown field "colour"/)
    rejects({}, /missing field "tenants"/)
    const badKey = minimal()
    ;(badKey.tenants[0]?.apiKeys[0] as { id: string }).id = 'not-a-uuid'
    rejects(badKey, /\/tenants\/0\/apiKeys\/0\/id: must match format "uuid"/)
    const badRole = minimal()
    ;(badRole.tenants[0]?.apiKeys[0] as { role: string }).role = 'root'
    rejects(badRole, /\/tenants\/0\/apiKeys\/0\/role: must be one of app, admin, operator/)
    rejects({ ...minimal(), publicUrl: 'http://x.example/' }, /\/publicUrl/)
    rejects({ ...minimal(), tokenLifetimeSeconds: 5 }, /\/tokenLifetimeSeconds/)
  })

  test('ldp_vc templates: the proof type signs with the key of signingAlg, PS256 and proofType are for ldp_vc only', () => {
    const withTemplate = (template: Record<string, unknown>) => {
      const config = minimal() as { tenants: { issuanceTemplates?: unknown[] }[] }
      ;(config.tenants[0] as { issuanceTemplates?: unknown[] }).issuanceTemplates = [
        { id: 't', credentialType: 'DegreeCredential', ...template },
      ]
      return config
    }
    rejects(
      withTemplate({ format: 'ldp_vc', proofType: 'RsaSignature2018' }),
      /\/tenants\/0\/issuanceTemplates\/0\/signingAlg: proofType RsaSignature2018 signs with signingAlg PS256, not EdDSA/,
    )
    rejects(
      withTemplate({ format: 'ldp_vc', proofType: 'ecdsa-rdfc-2019', signingAlg: 'ES256K' }),
      /signingAlg: proofType ecdsa-rdfc-2019 signs with signingAlg ES256, not ES256K/,
    )
    rejects(
      withTemplate({ proofType: 'Ed25519Signature2018' }),
      /proofType: proofType is for format ldp_vc only/,
    )
    rejects(
      withTemplate({ signingAlg: 'PS256' }),
      /signingAlg: signingAlg PS256 \(RSA\) signs format ldp_vc only/,
    )
    const ok = parseConfig(
      withTemplate({ format: 'ldp_vc', proofType: 'JsonWebSignature2020', signingAlg: 'PS256' }),
    )
    assert.equal(ok.tenants[0]?.issuanceTemplates[0]?.proofType, 'JsonWebSignature2020')
  })

  test('cross-references are checked: duplicate ids and links to unknown templates', () => {
    const dupKey = minimal()
    dupKey.tenants[0]?.apiKeys.push(
      structuredClone(dupKey.tenants[0].apiKeys[0] as (typeof dupKey.tenants)[0]['apiKeys'][0]),
    )
    rejects(dupKey, /\/tenants\/0\/apiKeys\/1\/id: duplicate API key id/)
    const unknownTemplate = minimal()
    ;(unknownTemplate.tenants[0]?.apiKeys[0] as { template?: string }).template = 'nope'
    rejects(unknownTemplate, /\/tenants\/0\/apiKeys\/0\/template: no template "nope"/)
    rejects(
      {
        tenants: [
          {
            id: 'acme',
            issuanceTemplates: [{ id: 'same', credentialType: 'A' }],
            verificationTemplates: [{ id: 'same', name: 'n', credentialTypes: ['A'] }],
          },
        ],
      },
      /verificationTemplates\/0\/id: duplicate template id "same"/,
    )
    rejects({ tenants: [{ id: 'a' }, { id: 'a' }] }, /\/tenants\/1\/id: duplicate tenant id/)
    rejects({ ...minimal(), listPageSize: 300, listMaxPageSize: 200 }, /listPageSize/)
  })

  test('unreadable and non-JSON files are reported with their path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vch-config-'))
    try {
      assert.throws(
        () => loadConfigFile(join(dir, 'missing.json')),
        /cannot read configuration file .*missing\.json/,
      )
      writeFileSync(join(dir, 'bad.json'), '{ "tenants": [ ')
      assert.throws(() => loadConfigFile(join(dir, 'bad.json')), /bad\.json is not valid JSON/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('the shipped config/config.schema.json is the one generated from the code', () => {
    assert.equal(readFileSync(CONFIG_SCHEMA_PATH, 'utf8'), configJsonSchema())
  })
})

describe('seeding from the configuration at boot', () => {
  test('a key or template removed from the file is revoked or deleted at the next boot; portal entries stay', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vch-seed-'))
    try {
      const first = await makeApp(demoConfig(), dir)
      const admin = await loginRequest(first.app, DEMO.admin)
      const portalKey = await first.app.inject({
        method: 'POST',
        url: '/portal/v1/api-keys',
        headers: { authorization: `jwt ${admin.headers.token}` },
        payload: { role: 'admin' },
      })
      assert.equal(portalKey.statusCode, 201)
      await first.close()

      const changed = demoConfig()
      const tenant = changed.tenants[0]
      assert.ok(tenant)
      tenant.apiKeys = tenant.apiKeys.filter((k) => k.id !== DEMO.admin.id)
      tenant.verificationTemplates = []
      tenant.apiKeys = tenant.apiKeys.filter((k) => k.template !== 'degree-check')
      const second = await makeApp(changed, dir)
      assert.equal((await loginRequest(second.app, DEMO.admin)).statusCode, 401, 'removed key is revoked')
      assert.equal(await second.app.services.store.templates.find('demo', 'degree-check'), undefined)
      const kept = { id: portalKey.json().id, secret: portalKey.json().secret, tenant: 'demo' }
      assert.equal((await loginRequest(second.app, kept)).statusCode, 200, 'portal key survives')
      await second.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
