// The wallet over the Digital Credentials API against a verifier nobody here wrote
// (test/fixtures/owf-dc-api-verifier.ts: the OpenWallet Foundation's Openid4vpVerifier creates the requests and
// parses the answers with the origin, @sd-jwt/sd-jwt-vc and @auth0/mdl verify the presentations): unsigned and
// signed (decentralized_identifier, x509_san_dns, x509_hash) requests, dc_api and dc_api.jwt, an SD-JWT VC and
// an mdoc, each answer accepted for the origin the browser saw; the answers bound to another origin, or to the
// client_id, or made for another request, refused; a request made for another page refused by the wallet.
// Multi-signed requests: the library (0.4.6) has no JWS JSON Serialization, so they are tested against
// requests built with src/shared/dc-api.ts (test/wallet/dc-api-unit.test.ts).
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { before, describe, test } from 'node:test'
import { didKeyFromPublicKey, generateKeyPair } from '../../src/shared/did-key.ts'
import * as mdoc from '../../src/shared/mdoc.ts'
import { issueSdJwtVc } from '../../src/shared/sd-jwt.ts'
import { certificatePem, generateIaca, issueDocumentSigner } from '../../src/shared/x509.ts'
import {
  dcApiErrorResponse,
  FOREIGN_ORIGIN,
  type PresentationMisbehaviour,
  Wallet,
  WalletProtocolError,
} from '../../src/wallet/index.ts'
import {
  createOwfDcApiVerifier,
  type DcApiRequestOptions,
  type OwfDcApiVerifier,
  PROTOCOLS,
  type SignedPrefix,
} from '../fixtures/owf-dc-api-verifier.ts'

const ORIGIN = 'https://rp.example'
const PID_VCT = 'urn:example:pid'
const NS = mdoc.MDL_NAMESPACE
const DOCTYPE = mdoc.MDL_DOCTYPE
const HOUR = 3_600_000

const issuerPair = generateKeyPair('EdDSA')
const ISSUER = { ...didKeyFromPublicKey(issuerPair.publicKey), privateKey: issuerPair.privateKey }

let verifier: OwfDcApiVerifier
let wallet: Wallet

before(async () => {
  await mdoc.prepareMdoc()
  const iaca = await generateIaca({ commonName: 'dc-api OWF test IACA', uri: 'https://issuer.example' })
  const dsPair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const dsCertificate = await issueDocumentSigner({
    iaca,
    publicKey: dsPair.publicKey,
    commonName: 'dc-api OWF test DS',
    uri: 'https://issuer.example',
  })
  const iacaPem = certificatePem(iaca.certificate)
  verifier = await createOwfDcApiVerifier({ origin: ORIGIN, trustedIssuers: [ISSUER.did], iacaPem })
  wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: [verifier.caPem, iacaPem] })
  const origin = { credentialIssuer: 'https://issuer.example', configurationId: 'pid', status: 200 }
  const pid = await issueSdJwtVc(
    {
      iss: ISSUER.did,
      vct: PID_VCT,
      iat: Math.floor(Date.now() / 1000) - 60,
      cnf: { jwk: wallet.publicJwk() },
      family_name: 'Hopper',
      given_name: 'Grace',
    },
    ['family_name', 'given_name'],
    { alg: 'EdDSA', privateKey: ISSUER.privateKey, header: { kid: ISSUER.kid } },
  )
  await wallet.accept([pid], { ...origin, format: 'dc+sd-jwt', vct: PID_VCT })
  const mdl = await mdoc.issueMdoc({
    docType: DOCTYPE,
    namespaces: { [NS]: { family_name: 'Lovelace', given_name: 'Ada', age_over_18: true } },
    deviceKey: wallet.publicJwk() as mdoc.MdocIssueInput['deviceKey'],
    signer: { privateKey: dsPair.privateKey, x5chain: [dsCertificate.toString('base64')] },
    validity: {
      signed: new Date(),
      validFrom: new Date(Date.now() - HOUR),
      validUntil: new Date(Date.now() + 24 * HOUR),
    },
  })
  await wallet.accept([mdl], { ...origin, configurationId: 'mdl', format: 'mso_mdoc', doctype: DOCTYPE })
})

const PID_QUERY = {
  id: 'pid',
  format: 'dc+sd-jwt',
  meta: { vct_values: [PID_VCT] },
  claims: [{ path: ['family_name'] }],
}
const MDL_QUERY = {
  id: 'mdl',
  format: 'mso_mdoc',
  meta: { doctype_value: DOCTYPE },
  claims: [{ path: [NS, 'age_over_18'] }],
}
const BOTH = { credentials: [PID_QUERY, MDL_QUERY] }

/** A request of the OWF verifier answered by the wallet for `origin`, and the verifier's verdict. */
async function exchange(
  options: DcApiRequestOptions,
  misbehave: PresentationMisbehaviour[] = [],
  origin = ORIGIN,
) {
  const session = await verifier.request(options)
  const result = await wallet.presentDcApi({ request: session.request, origin }, { misbehave })
  return { session, result, verdict: await verifier.verify(session, result.response, origin) }
}

describe('the OWF verifier accepts the wallet’s DC API answers', () => {
  const cases: [string, Omit<DcApiRequestOptions, 'dcql'>][] = [
    ['unsigned, dc_api', {}],
    ['unsigned, dc_api.jwt', { responseMode: 'dc_api.jwt' }],
    ...(['decentralized_identifier', 'x509_san_dns', 'x509_hash'] as SignedPrefix[]).flatMap(
      (prefix): [string, Omit<DcApiRequestOptions, 'dcql'>][] => [
        [`signed ${prefix}, dc_api`, { signed: prefix }],
        [`signed ${prefix}, dc_api.jwt`, { signed: prefix, responseMode: 'dc_api.jwt' }],
      ],
    ),
  ]
  for (const [name, options] of cases) {
    test(`${name}: an SD-JWT VC and an mdoc, bound to origin:${ORIGIN}`, async () => {
      const { session, result, verdict } = await exchange({ ...options, dcql: BOTH })
      assert.equal(verdict.accepted, true, verdict.reason)
      assert.equal(verdict.audience, `origin:${ORIGIN}`)
      assert.equal(result.response.protocol, options.signed ? PROTOCOLS.signed : PROTOCOLS.unsigned)
      assert.equal(result.clientId, session.clientId ?? `origin:${ORIGIN}`)
      assert.deepEqual(Object.keys(result.response.data), [
        options.responseMode === 'dc_api.jwt' ? 'response' : 'vp_token',
      ])
      assert.equal(verdict.claims.pid?.[0]?.family_name, 'Hopper')
      assert.equal(verdict.claims.pid?.[0]?.given_name, undefined)
      assert.deepEqual(verdict.claims.mdl?.[0], { [NS]: { age_over_18: true } })
      if (options.signed) assert.equal(result.signatures?.[0]?.verified, true)
    })
  }
})

describe('the OWF verifier refuses the misbehaving answers', () => {
  test('dc-api-foreign-origin: the KB-JWT names the attacker’s origin', async () => {
    const { verdict } = await exchange({ signed: 'x509_san_dns', dcql: { credentials: [PID_QUERY] } }, [
      'dc-api-foreign-origin',
    ])
    assert.equal(verdict.accepted, false)
    assert.equal(
      verdict.reason,
      `KB-JWT aud "origin:${FOREIGN_ORIGIN}" is not origin:${ORIGIN} (OpenID4VP 1.0 Appendix A.4)`,
    )
  })

  test('dc-api-foreign-origin: the mdoc’s device signature does not verify over this origin’s handover', async () => {
    const { verdict } = await exchange({ dcql: { credentials: [MDL_QUERY] } }, ['dc-api-foreign-origin'])
    assert.equal(verdict.accepted, false)
    assert.equal(verdict.reason, 'mso_mdoc: DEVICE_SIGNATURE_VALIDITY: Device signature must be valid')
  })

  test('dc-api-client-id-audience: bound to the client_id of a signed request', async () => {
    const { session, verdict } = await exchange(
      { signed: 'decentralized_identifier', dcql: { credentials: [PID_QUERY] } },
      ['dc-api-client-id-audience'],
    )
    assert.equal(verdict.accepted, false)
    assert.equal(
      verdict.reason,
      `KB-JWT aud "${session.clientId}" is not origin:${ORIGIN} (OpenID4VP 1.0 Appendix A.4)`,
    )
  })

  test('dc-api-wrong-request: another nonce', async () => {
    const { verdict } = await exchange({ dcql: { credentials: [PID_QUERY] } }, ['dc-api-wrong-request'])
    assert.equal(verdict.accepted, false)
    assert.equal(verdict.reason, 'SD-JWT VC: Verify Error: Invalid Nonce')
  })

  test('an answer replayed on another origin’s page: refused there', async () => {
    const session = await verifier.request({ dcql: { credentials: [PID_QUERY] } })
    const { response } = await wallet.presentDcApi({ request: session.request, origin: ORIGIN })
    const verdict = await verifier.verify(session, response, 'https://other.example')
    assert.equal(verdict.accepted, false)
    assert.match(verdict.reason ?? '', /is not origin:https:\/\/other\.example/)
  })
})

describe('the wallet refuses what the OWF verifier asks wrongly', () => {
  test('a signed request whose expected_origins lack the origin: the error answer, which the verifier reads', async () => {
    const session = await verifier.request({
      signed: 'x509_hash',
      dcql: { credentials: [PID_QUERY] },
      expectedOrigins: ['https://other.example'],
    })
    let refusal: WalletProtocolError | undefined
    await assert.rejects(wallet.presentDcApi({ request: session.request, origin: ORIGIN }), (e: unknown) => {
      assert.ok(e instanceof WalletProtocolError)
      refusal = e
      return true
    })
    const answer = dcApiErrorResponse(session.request, refusal as WalletProtocolError)
    const verdict = await verifier.verify(session, answer, ORIGIN)
    assert.equal(verdict.accepted, false)
    assert.equal(verdict.declined?.error, 'invalid_request')
    assert.match(
      String(verdict.declined?.description),
      /expected_origins .*https:\/\/rp\.example is not one of \["https:\/\/other\.example"\]/,
    )
    // dc-api-ignore-expected-origins answers it, and the verifier (which cannot know the page) accepts
    const ignored = await exchange(
      { signed: 'x509_hash', dcql: { credentials: [PID_QUERY] }, expectedOrigins: ['https://other.example'] },
      ['dc-api-ignore-expected-origins'],
    )
    assert.equal(ignored.verdict.accepted, true, ignored.verdict.reason)
  })

  test('x509_san_dns on a page of another host: refused by the wallet', async () => {
    const session = await verifier.request({
      signed: 'x509_san_dns',
      dcql: { credentials: [PID_QUERY] },
      expectedOrigins: ['https://other.example'],
    })
    await assert.rejects(
      wallet.presentDcApi({ request: session.request, origin: 'https://other.example' }),
      (e: unknown) =>
        e instanceof WalletProtocolError &&
        /not on the certified host rp\.example/.test(e.errorDescription ?? ''),
    )
  })
})
