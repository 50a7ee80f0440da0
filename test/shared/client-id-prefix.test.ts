// The client identifier prefix table (src/shared/client-id-prefix.ts, OpenID4VP 1.0 §5.9): how a client_id
// parses, what the service needs per prefix, and the wallet's rule per prefix, with real did:key signatures.
// The full flows (x509 chains included) run in test/wallet/present-v1.test.ts and test/service/oid4vp/v1.test.ts.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  ClientIdPrefixError,
  type ClientRequest,
  checkClientRequest,
  parseClientId,
  requestsAreSigned,
  serviceIdentity,
  VERIFIED_CLIENT_ID_PREFIXES,
} from '../../src/shared/client-id-prefix.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../src/shared/did-key.ts'
import { signJws } from '../../src/shared/jws.ts'
import { REQUEST_OBJECT_TYP } from '../../src/shared/wire.ts'

const TRUST = { trustAnchors: [], now: Date.now() }

function didSigned(payload: Record<string, unknown> = {}) {
  const { privateKey, publicKey } = generateKeyPair('EdDSA')
  const key = didKeyFromPublicKey(publicKey)
  const header = { alg: 'EdDSA' as const, typ: REQUEST_OBJECT_TYP, kid: key.kid }
  return { key, header, compact: signJws(header, payload, privateKey) }
}

function request(over: Partial<ClientRequest> & Pick<ClientRequest, 'prefix' | 'identifier'>): ClientRequest {
  return { signed: false, compact: undefined, header: {}, payload: {}, requestUri: undefined, ...over }
}

async function refusal(promise: Promise<unknown>): Promise<ClientIdPrefixError> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof ClientIdPrefixError, String(error))
    return error
  }
  assert.fail('the request was not refused')
}

describe('client identifier prefixes (OpenID4VP 1.0 §5.9)', () => {
  test('a client_id parses into prefix and identifier; bare DIDs, unknown and missing prefixes are told apart', () => {
    assert.deepEqual(parseClientId('x509_san_dns:verifier.example'), {
      kind: 'known',
      prefix: 'x509_san_dns',
      identifier: 'verifier.example',
    })
    assert.deepEqual(parseClientId('redirect_uri:https://rp.example/cb?a=b'), {
      kind: 'known',
      prefix: 'redirect_uri',
      identifier: 'https://rp.example/cb?a=b',
    })
    assert.equal(parseClientId('origin:https://rp.example').kind, 'known')
    assert.deepEqual(parseClientId('did:key:z6Mk'), {
      kind: 'bare-did',
      prefix: undefined,
      identifier: 'did:key:z6Mk',
    })
    assert.deepEqual(parseClientId('https://rp.example'), {
      kind: 'unknown',
      prefix: 'https',
      identifier: '//rp.example',
    })
    assert.equal(parseClientId('my-client').kind, 'pre-registered')
    // a colon, but not the §5.9.1 shape of a prefix
    assert.equal(parseClientId('1a:b').kind, 'pre-registered')
  })

  test('the wallet verifies four prefixes, announced in table order; only redirect_uri requests are unsigned', () => {
    assert.deepEqual(VERIFIED_CLIENT_ID_PREFIXES, [
      'decentralized_identifier',
      'x509_san_dns',
      'x509_hash',
      'redirect_uri',
    ])
    assert.deepEqual(
      ['decentralized_identifier', 'x509_san_dns', 'x509_hash', 'redirect_uri', 'openid_federation'].map(
        requestsAreSigned,
      ),
      [true, true, true, false, true],
    )
  })

  test('what the service names itself with under each prefix', () => {
    const redirect = serviceIdentity('redirect_uri')
    assert.equal(redirect.signsWith, 'nothing')
    assert.equal(
      redirect.signsWith === 'nothing' && redirect.identifier({ responseUri: 'https://v/r' }),
      'https://v/r',
    )
    const did = serviceIdentity('decentralized_identifier')
    assert.equal(did.signsWith === 'did' && did.identifier({ did: 'did:key:z6Mk' }), 'did:key:z6Mk')
    const dns = serviceIdentity('x509_san_dns')
    assert.equal(dns.signsWith === 'x509' && dns.identifier({ dnsName: '', hash: 'h' }), '')
    const hash = serviceIdentity('x509_hash')
    assert.equal(hash.signsWith === 'x509' && hash.identifier({ dnsName: 'v.example', hash: 'h' }), 'h')
  })

  test('decentralized_identifier: signed by a key of the DID; another DID, or no signature, is refused', async () => {
    const { key, header, compact } = didSigned({ client_id: 'x' })
    const ok = request({
      prefix: 'decentralized_identifier',
      identifier: key.did,
      signed: true,
      compact,
      header,
    })
    assert.equal(await checkClientRequest(ok, TRUST), undefined)

    const other = didSigned()
    const foreign = await refusal(checkClientRequest({ ...ok, identifier: other.key.did }, TRUST))
    assert.equal(foreign.error, 'invalid_request_object')
    assert.match(foreign.message, /the header kid .* is not a key of the client identifier/)

    const unsigned = await refusal(checkClientRequest({ ...ok, signed: false }, TRUST))
    assert.equal(unsigned.error, 'invalid_request')
    assert.equal(
      unsigned.message,
      "decentralized_identifier (OpenID4VP 1.0 §5.9.3): the request must be a request object signed by the DID's key; it came unsigned",
    )
  })

  test('x509 prefixes: a chain is only checked against trust anchors the wallet has', async () => {
    const { header, compact } = didSigned()
    const error = await refusal(
      checkClientRequest(
        request({
          prefix: 'x509_hash',
          identifier: 'abc',
          signed: true,
          compact,
          header: { ...header, x5c: [] },
        }),
        TRUST,
      ),
    )
    assert.equal(error.error, 'invalid_request')
    assert.match(
      error.message,
      /^x509_hash \(OpenID4VP 1\.0 §5\.9\.3\): the wallet must validate the x5c chain/,
    )
  })

  test('redirect_uri: unsigned, the answer goes to the identifier (filled in when absent); a signed one is refused', async () => {
    const absent = request({ prefix: 'redirect_uri', identifier: 'https://rp.example/cb' })
    await checkClientRequest(absent, TRUST)
    assert.equal(absent.payload.response_uri, 'https://rp.example/cb')

    const elsewhere = request({
      prefix: 'redirect_uri',
      identifier: 'https://rp.example/cb',
      payload: { response_uri: 'https://evil.example/cb' },
    })
    assert.match(
      (await refusal(checkClientRequest(elsewhere, TRUST))).message,
      /must be the client identifier/,
    )

    const { header, compact } = didSigned()
    const signed = await refusal(checkClientRequest({ ...absent, signed: true, compact, header }, TRUST))
    assert.match(signed.message, /^redirect_uri \(OpenID4VP 1\.0 §5\.9\.3\): the request must not be signed/)
  })
})
