import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { Value } from 'typebox/value'
import { DEMO_CONFIG_PATH } from '../../../src/service/config/index.ts'
import {
  ConfigFile,
  DcqlSettings,
  IssuanceTemplate,
  resolveTemplate,
  VerificationTemplate,
} from '../../../src/service/config/schema.ts'
import { newAjv } from '../../../src/service/util/ajv.ts'

// resolveTemplate applies the schema defaults with a small filler (config/defaults.ts) instead of typebox's
// Value.Default, which stays off the start-up path: both must give the same templates.

const byTypebox = (kind: 'issuance' | 'verification', body: object) => {
  const resolved = Value.Default(
    kind === 'issuance' ? IssuanceTemplate : VerificationTemplate,
    Value.Clone(body),
  ) as Record<string, unknown>
  if (resolved.profile === 'dcql') resolved.dcql = Value.Default(DcqlSettings, resolved.dcql ?? {})
  return resolved
}

describe('configuration schema', () => {
  test('is a valid JSON Schema that Ajv compiles in strict mode (the loader skips both checks)', () => {
    const ajv = newAjv({ strict: true, allErrors: true, useDefaults: true })
    assert.equal(ajv.validateSchema(ConfigFile), true, ajv.errorsText(ajv.errors))
    assert.doesNotThrow(() => ajv.compile(ConfigFile))
  })
})

describe('template defaults', () => {
  test('every template of the demo configuration resolves as typebox/value resolves it', () => {
    // The raw file, not the loaded configuration: loading applies Ajv's defaults already.
    const config = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8')) as {
      tenants: { issuanceTemplates?: object[]; verificationTemplates?: object[] }[]
    }
    let compared = 0
    for (const tenant of config.tenants) {
      for (const template of tenant.issuanceTemplates ?? []) {
        assert.deepEqual(resolveTemplate('issuance', template as never), byTypebox('issuance', template))
        compared++
      }
      for (const template of tenant.verificationTemplates ?? []) {
        assert.deepEqual(
          resolveTemplate('verification', template as never),
          byTypebox('verification', template),
        )
        compared++
      }
    }
    assert.ok(compared >= 4, `only ${compared} templates compared`)
  })

  test('minimal bodies get every default, nested ones included, as typebox/value gives them', () => {
    const issuance = [
      { id: 'a', credentialType: 'Degree' },
      { id: 'b', credentialType: 'Pid', format: 'dc+sd-jwt', txCode: {}, display: { name: 'PID' } },
    ]
    const verification = [
      { id: 'c', credentialTypes: ['Degree'] },
      { id: 'd', credentialTypes: ['Pid'], profile: 'dcql' },
      {
        id: 'e',
        credentialTypes: ['Pid'],
        profile: 'dcql',
        dcql: { vctValues: { Pid: ['urn:pid'] } },
        requestedFields: [{ path: 'given_name' }],
        optionalGroups: [{ name: 'extra', credentialTypes: ['Degree'] }],
      },
    ]
    for (const body of issuance) {
      const resolved = resolveTemplate('issuance', body as never)
      assert.deepEqual(resolved, byTypebox('issuance', body))
      assert.notEqual(resolved, body, 'the body is copied, not changed')
    }
    for (const body of verification) {
      assert.deepEqual(resolveTemplate('verification', body as never), byTypebox('verification', body))
    }
    assert.deepEqual(
      resolveTemplate('verification', verification[0] as never).dcql,
      undefined,
      'dcql settings only for the dcql profile',
    )
  })
})
