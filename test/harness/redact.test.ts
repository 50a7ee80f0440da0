import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  redact,
  redactError,
  redactHeader,
  redactPatterns,
  registerSecretsIn,
  registerSecretsInForm,
  registerSecretsInHeader,
  SecretRegistry,
} from '../../src/harness/redact.ts'

// redact(): what reports and the terminal may never show (docs/conformance-exchanges.md).

const JWT =
  'eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJrZXkiLCJleHAiOjE3MDAwMDAwMDB9.c2lnbmF0dXJlLWJ5dGVzLWhlcmU'
const SECRET = 'Zk3pQ9vLx2T7mW1sR8cN4bY6'

describe('patterns', () => {
  test('access tokens after jwt / Bearer, in headers and in prose', () => {
    assert.equal(redactPatterns(`authorization: jwt ${JWT}`), 'authorization: jwt [redacted:access-token]')
    assert.equal(
      redactPatterns(`Authorization: Bearer ${JWT}`),
      'Authorization: Bearer [redacted:access-token]',
    )
    assert.equal(
      redactPatterns('sent Bearer abcDEF0123456789ghijKLMN to the credential endpoint'),
      'sent Bearer [redacted:access-token] to the credential endpoint',
    )
    // Words are not tokens: scenario names and format names stay readable.
    for (const text of [
      'A valid API key receives a JWT in the Token header, Token_type jwt and message SUCCESS',
      'a dc+sd-jwt UniversityDegreeCredential with its disclosures',
      'header Token: a signed JWT (base64url header.payload.signature with alg and exp)',
    ]) {
      assert.equal(redactPatterns(text), text)
    }
  })

  test('Basic credentials are masked; "Basic authentication" is not', () => {
    const basic = Buffer.from(`0b6c1f5e-3f4e:${SECRET}`).toString('base64')
    assert.equal(
      redactPatterns(`authorization: Basic ${basic}`),
      'authorization: Basic [redacted:api-key-credentials]',
    )
    assert.equal(redactPatterns('send Basic authentication'), 'send Basic authentication')
  })

  test('the Token header line of a printed answer', () => {
    assert.equal(
      redactPatterns(`< token: ${JWT}\n< token_type: jwt`),
      '< token: [redacted:access-token]\n< token_type: jwt',
    )
  })

  test('JSON members by name: key secrets, tokens, codes, tx_codes, webhook secrets', () => {
    const body = JSON.stringify({
      id: 'k1',
      secret: SECRET,
      access_token: JWT,
      grants: {
        'urn:ietf:params:oauth:grant-type:pre-authorized_code': { 'pre-authorized_code': 'c0de-XYZ-123' },
      },
      tx_code: '493817',
      webhookSecret: 'whsec_c2VjcmV0LWJ5dGVz',
      webhookPreviousSecrets: ['whsec_b2xk', 'whsec_b2xkZXI='],
    })
    const out = redactPatterns(body)
    for (const secret of [SECRET, JWT, 'c0de-XYZ-123', '493817', 'c2VjcmV0LWJ5dGVz', 'b2xk']) {
      assert.ok(!out.includes(secret), `${secret} in ${out}`)
    }
    assert.match(out, /"secret":"\[redacted:api-key-secret\]"/)
    assert.match(out, /"pre-authorized_code":"\[redacted:pre-authorized-code\]"/)
    assert.match(out, /"tx_code":"\[redacted:tx-code\]"/)
    assert.match(out, /"webhookSecret":"\[redacted:webhook-secret\]"/)
    assert.match(out, /"webhookPreviousSecrets":\["\[redacted:webhook-secret\]"\]/)
    assert.match(out, /"id":"k1"/)
    // A numeric tx_code, and JSON escaped into a string.
    assert.equal(redactPatterns('{"tx_code": 493817}'), '{"tx_code": "[redacted:tx-code]"}')
    assert.equal(
      redactPatterns(JSON.stringify({ got: JSON.stringify({ secret: SECRET }) })),
      JSON.stringify({ got: JSON.stringify({ secret: '[redacted:api-key-secret]' }) }),
    )
  })

  test('form bodies, query strings and URL-encoded inline offers', () => {
    assert.equal(
      redactPatterns('grant_type=urn%3Aietf&pre-authorized_code=abc123DEF&tx_code=493817'),
      'grant_type=urn%3Aietf&pre-authorized_code=[redacted:pre-authorized-code]&tx_code=[redacted:tx-code]',
    )
    const inline = `openid-credential-offer://?credential_offer=${encodeURIComponent(
      JSON.stringify({ grants: { x: { 'pre-authorized_code': 'c0deXYZ' } } }),
    )}`
    assert.ok(!redactPatterns(inline).includes('c0deXYZ'))
    // The offer id of a credential_offer_uri is no secret.
    const byReference =
      'openid-credential-offer://?credential_offer_uri=http%3A%2F%2Fh%2Foid4vci%2Fdemo%2Foffers%2F6f1c2d'
    assert.equal(redactPatterns(byReference), byReference)
  })

  test('whsec_ secrets anywhere and credentials in URLs', () => {
    assert.equal(redactPatterns('secret whsec_AbC+/=, then'), 'secret [redacted:webhook-secret], then')
    assert.equal(
      redactPatterns('https://ops:hunter2@vc.example.com/x'),
      'https://[redacted:url-credentials]@vc.example.com/x',
    )
  })
})

describe('values', () => {
  test('a registered secret is masked wherever it appears, with its kind', () => {
    const secrets = new SecretRegistry()
    secrets.add(SECRET, 'api-key-secret')
    assert.equal(
      redact(`detail: the key ${SECRET} is wrong (${encodeURIComponent(SECRET)})`, secrets),
      'detail: the key [redacted:api-key-secret] is wrong ([redacted:api-key-secret])',
    )
  })

  test('short values only as whole words; very short ones never', () => {
    const secrets = new SecretRegistry()
    secrets.add('493817', 'tx-code')
    secrets.add('ab', 'secret')
    assert.equal(redact('tx 493817, at 17004938170', secrets), 'tx [redacted:tx-code], at 17004938170')
    assert.equal(redact('ab cd', secrets), 'ab cd')
  })

  test("a scenario's registry masks its parent's values too, and is dropped with the scenario", () => {
    const run = new SecretRegistry()
    run.add('run-secret-0123456789', 'api-key-secret')
    const scenario = run.child()
    scenario.add('scenario-secret-0123456789', 'access-token')
    assert.equal(
      redact('run-secret-0123456789 scenario-secret-0123456789', scenario),
      '[redacted:api-key-secret] [redacted:access-token]',
    )
    assert.equal(redact('scenario-secret-0123456789', run), 'scenario-secret-0123456789')
  })

  test('registration from JSON answers, forms and headers', () => {
    const secrets = new SecretRegistry()
    registerSecretsIn(
      {
        adminKey: { id: 'k', secret: 'portal-handed-secret-1' },
        tx_code: '120934',
        nested: [{ webhookSecret: 'whsec_x1y2' }],
      },
      secrets,
    )
    registerSecretsInForm('grant_type=x&pre-authorized_code=code-0123456789', secrets)
    registerSecretsInHeader('token', 'opaque-token-0123456789', secrets)
    registerSecretsInHeader(
      'authorization',
      `Basic ${Buffer.from('key-id:basic-secret-99').toString('base64')}`,
      secrets,
    )
    for (const value of [
      'portal-handed-secret-1',
      '120934',
      'whsec_x1y2',
      'code-0123456789',
      'opaque-token-0123456789',
      'basic-secret-99',
    ]) {
      assert.ok(secrets.has(value), value)
      assert.ok(!redact(`echo: ${value}.`, secrets).includes(value), value)
    }
    assert.ok(!secrets.has('key-id'))
  })
})

describe('headers and errors', () => {
  test('secret headers keep their scheme only', () => {
    assert.equal(redactHeader('Authorization', `jwt ${JWT}`), 'jwt [redacted:access-token]')
    assert.equal(redactHeader('authorization', 'Basic YTpi'), 'Basic [redacted:api-key-credentials]')
    assert.equal(redactHeader('Token', JWT), '[redacted:access-token]')
    assert.equal(redactHeader('content-type', 'application/json'), 'application/json')
  })

  test('an error keeps its class and fields; message and stack are redacted', () => {
    class Broken extends Error {
      override name = 'Broken'
      readonly extra = 1
    }
    const secrets = new SecretRegistry()
    secrets.add(SECRET, 'api-key-secret')
    const error = new Broken(`Got: HTTP 201 {"secret":"${SECRET}"}`)
    const out = redactError(error, secrets) as Broken
    assert.equal(out, error)
    assert.ok(out instanceof Broken)
    assert.equal(out.message, 'Got: HTTP 201 {"secret":"[redacted:api-key-secret]"}')
    assert.ok(!out.stack?.includes(SECRET))
    assert.equal(redactError(`plain ${SECRET}`, secrets), 'plain [redacted:api-key-secret]')
  })
})
