// The wallet over the W3C Digital Credentials API (OpenID4VP 1.0 Appendix A), in process: requests built with
// src/shared/dc-api.ts (and signJws, did:key and a test CA), answered by Wallet.presentDcApi for an origin as a
// platform hands it over, each answer read back: KB-JWT aud = origin:<origin> (A.4, also for signed
// requests), an mdoc DeviceResponse signed over the OpenID4VPDCAPIHandover (B.2.6.2, checked with
// src/shared/mdoc.ts), dc_api.jwt as the JWE of direct_post.jwt; the refusals (expected_origins, prefixes,
// signatures of a multi-signed request, response modes, nonces), the careless wallet, and what each DC API
// misbehaviour changes. The interop with a verifier nobody here wrote: test/wallet/dc-api-owf.test.ts.
import assert from 'node:assert/strict'
import { generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { compactDecrypt, exportJWK, generateKeyPair as joseKeyPair } from 'jose'
import {
  DC_API_PROTOCOLS,
  type DcApiRequest,
  type GeneralJwsSigner,
  signGeneralJws,
} from '../../src/shared/dc-api.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../src/shared/did-key.ts'
import { decodeJws, jwkThumbprint, signJws } from '../../src/shared/jws.ts'
import * as mdoc from '../../src/shared/mdoc.ts'
import { issueSdJwtVc, splitSdJwt } from '../../src/shared/sd-jwt.ts'
import { REQUEST_OBJECT_TYP } from '../../src/shared/wire.ts'
import {
  certificatePem,
  generateIaca,
  generateTestCa,
  issueCertificate,
  issueDocumentSigner,
  type TestCa,
  x5cOf,
  x509Hash,
} from '../../src/shared/x509.ts'
import {
  DC_API_MISBEHAVIOUR_HELP,
  DC_API_PRESENTATION_MISBEHAVIOURS,
  type DcApiPresentationResult,
  dcApiErrorResponse,
  FOREIGN_ORIGIN,
  type PresentationMisbehaviour,
  V1_ONLY_PRESENTATION_MISBEHAVIOURS,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import { NONCE_LESS_PRESENTATION_MISBEHAVIOURS } from '../../src/wallet/misbehaviour.ts'
import { tamperOf } from '../../src/wallet/tamper.ts'
import { walletCli } from '../helpers.ts'

const ORIGIN = 'https://verifier.example'
const HOST = 'verifier.example'
const PID_VCT = 'urn:example:pid'
const NS = mdoc.MDL_NAMESPACE
const DOCTYPE = mdoc.MDL_DOCTYPE
const HOUR = 3_600_000

// --- keys: the credential issuer, the IACA and its document signer, the verifier's did:key and x509 leaf -------

const issuerPair = generateKeyPair('EdDSA')
const ISSUER = { ...didKeyFromPublicKey(issuerPair.publicKey), privateKey: issuerPair.privateKey }
const verifierPair = generateKeyPair('EdDSA')
const VERIFIER_DID = { ...didKeyFromPublicKey(verifierPair.publicKey), privateKey: verifierPair.privateKey }
const leafPair = generateKeyPair('ES256')

let ca: TestCa
let leaf: Buffer
let iaca: TestCa
let ds: { privateKey: KeyObject; x5chain: string[] }
let holder: Wallet
const tempDir = mkdtempSync(join(tmpdir(), 'wallet-dc-api-'))

before(async () => {
  await mdoc.prepareMdoc()
  ca = await generateTestCa({ name: 'CN=dc-api test CA' })
  leaf = await issueCertificate({
    issuer: ca,
    publicKey: leafPair.publicKey,
    dns: [HOST],
    subject: 'CN=verifier',
  })
  iaca = await generateIaca({ commonName: 'dc-api test IACA', uri: 'https://issuer.example' })
  const dsPair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const certificate = await issueDocumentSigner({
    iaca,
    publicKey: dsPair.publicKey,
    commonName: 'dc-api test DS',
    uri: 'https://issuer.example',
  })
  ds = { privateKey: dsPair.privateKey, x5chain: [certificate.toString('base64')] }
  holder = await holding()
})
after(() => rmSync(tempDir, { recursive: true, force: true }))

/** A P-256 wallet trusting the test CA and the IACA, holding a PID (dc+sd-jwt) and an mDL (mso_mdoc). */
async function holding(opts: { careless?: boolean; file?: string } = {}): Promise<Wallet> {
  const wallet = await Wallet.create({
    keyType: 'P-256',
    trustAnchors: [certificatePem(ca.certificate), certificatePem(iaca.certificate)],
    ...(opts.careless && { trustEverything: true }),
    ...(opts.file && { file: opts.file }),
  })
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
  const origin = { credentialIssuer: 'https://issuer.example', configurationId: 'pid', status: 200 }
  await wallet.accept([pid], { ...origin, format: 'dc+sd-jwt', vct: PID_VCT })
  const mdl = await mdoc.issueMdoc({
    docType: DOCTYPE,
    namespaces: { [NS]: { family_name: 'Lovelace', given_name: 'Ada', age_over_18: true } },
    deviceKey: wallet.publicJwk() as mdoc.MdocIssueInput['deviceKey'],
    signer: ds,
    validity: {
      signed: new Date(),
      validFrom: new Date(Date.now() - HOUR),
      validUntil: new Date(Date.now() + 24 * HOUR),
    },
  })
  await wallet.accept([mdl], { ...origin, configurationId: 'mdl', format: 'mso_mdoc', doctype: DOCTYPE })
  return wallet
}

// --- requests ------------------------------------------------------------------------------------------------

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

/** The verifier's ephemeral encryption key of a dc_api.jwt request, and its private half. */
async function encryptionKey() {
  const pair = await joseKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'enc-1', use: 'enc', alg: 'ECDH-ES' }
  return { jwk, privateKey: pair.privateKey }
}

/** The request parameters (no client_id, no expected_origins): a fresh nonce, the PID query by default. */
function params(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    response_type: 'vp_token',
    response_mode: 'dc_api',
    nonce: randomBytes(16).toString('base64url'),
    dcql_query: { credentials: [PID_QUERY] },
    client_metadata: {
      vp_formats_supported: {
        'dc+sd-jwt': { 'sd-jwt_alg_values': ['EdDSA'], 'kb-jwt_alg_values': ['ES256'] },
      },
    },
    ...extra,
  }
}

const unsigned = (data: Record<string, unknown>): DcApiRequest => ({
  protocol: DC_API_PROTOCOLS.unsigned,
  data,
})

type Prefix = 'decentralized_identifier' | 'x509_san_dns' | 'x509_hash'

/** The client_id and the JOSE header members naming the key of each prefix. */
function identity(prefix: Prefix): { clientId: string; header: Record<string, unknown>; key: KeyObject } {
  if (prefix === 'decentralized_identifier') {
    return {
      clientId: `decentralized_identifier:${VERIFIER_DID.did}`,
      header: { alg: 'EdDSA', kid: VERIFIER_DID.kid },
      key: VERIFIER_DID.privateKey,
    }
  }
  return {
    clientId: prefix === 'x509_san_dns' ? `x509_san_dns:${HOST}` : `x509_hash:${x509Hash(leaf)}`,
    header: { alg: 'ES256', x5c: x5cOf([leaf]) },
    key: leafPair.privateKey,
  }
}

/** openid4vp-v1-signed: a compact request object of `prefix`, expected_origins [ORIGIN] unless said. */
function signed(
  prefix: Prefix,
  payload: Record<string, unknown> = params(),
  over: { expectedOrigins?: unknown; clientId?: string; typ?: string } = {},
): DcApiRequest {
  const { clientId, header, key } = identity(prefix)
  const origins = 'expectedOrigins' in over ? over.expectedOrigins : [ORIGIN]
  const request = signJws(
    { ...header, typ: over.typ ?? REQUEST_OBJECT_TYP } as never,
    {
      client_id: over.clientId ?? clientId,
      ...(origins !== undefined && { expected_origins: origins }),
      ...payload,
    },
    key,
  )
  return { protocol: DC_API_PROTOCOLS.signed, data: { request } }
}

/** A signer of a multi-signed request under `prefix` (client_id in its protected header). */
function signer(prefix: Prefix | 'openid_federation'): GeneralJwsSigner {
  if (prefix === 'openid_federation') {
    return {
      alg: 'EdDSA',
      privateKey: VERIFIER_DID.privateKey,
      header: { kid: VERIFIER_DID.kid, client_id: 'openid_federation:https://rp.example' },
    }
  }
  const { clientId, header, key } = identity(prefix)
  const { alg, ...naming } = header
  return { alg: alg as GeneralJwsSigner['alg'], privateKey: key, header: { ...naming, client_id: clientId } }
}

/** openid4vp-v1-multisigned: the payload signed by each signer; `corrupt` lists signatures made invalid. */
function multisigned(
  signers: GeneralJwsSigner[],
  payload: Record<string, unknown> = { ...params(), expected_origins: [ORIGIN] },
  corrupt: number[] = [],
): DcApiRequest {
  const jws = signGeneralJws(payload, signers)
  for (const i of corrupt) {
    const entry = jws.signatures[i] as { signature: string }
    entry.signature = `${entry.signature[0] === 'A' ? 'B' : 'A'}${entry.signature.slice(1)}`
  }
  return { protocol: DC_API_PROTOCOLS.multisigned, data: { request: jws } }
}

// --- reading answers -----------------------------------------------------------------------------------------

const vpTokenOf = (result: DcApiPresentationResult) =>
  result.response.data.vp_token as Record<string, string[]>

function kbOf(presentation: string) {
  const { kbJwt } = splitSdJwt(presentation)
  assert.ok(kbJwt, 'the presentation has a KB-JWT')
  return decodeJws(kbJwt).payload
}

const pidKb = (result: DcApiPresentationResult) => kbOf(vpTokenOf(result).pid?.[0] as string)

/** A refusal: WalletProtocolError at step request, status 0 (nothing went over HTTP). */
async function refused(
  promise: Promise<unknown>,
  error: string,
  description: RegExp,
): Promise<WalletProtocolError> {
  let caught: unknown
  await assert.rejects(promise, (e: unknown) => {
    caught = e
    return true
  })
  assert.ok(caught instanceof WalletProtocolError, String(caught))
  assert.equal(caught.step, 'request')
  assert.equal(caught.status, 0)
  assert.equal(caught.error, error, caught.errorDescription)
  assert.match(caught.errorDescription ?? '', description)
  return caught
}

const present = (
  request: DcApiRequest,
  misbehave: PresentationMisbehaviour[] = [],
  wallet = holder,
  origin = ORIGIN,
) => wallet.presentDcApi({ request, origin }, { misbehave })

/** The device signature of the first document, against the DC API handover (null: verifies) and the link one. */
async function mdocChecks(
  deviceResponse: string,
  handover: mdoc.DcApiHandover,
  redirect?: mdoc.Oid4vpHandover,
) {
  const [doc] = mdoc.decodeDeviceResponse(deviceResponse).documents
  assert.ok(doc)
  return {
    doc,
    dcApi: mdoc.deviceSignatureFailure(doc, await mdoc.dcApiSessionTranscript(handover)),
    redirect: redirect && mdoc.deviceSignatureFailure(doc, await mdoc.oid4vpSessionTranscript(redirect)),
  }
}

// --- the three request types ------------------------------------------------------------------------------------

describe('openid4vp-v1-unsigned (A.3.1): the parameters as data, the client is the origin', () => {
  test('presented: vp_token bound to origin:<origin>; client_id and expected_origins ignored', async () => {
    const data = params({
      client_id: 'decentralized_identifier:did:key:zignored',
      expected_origins: ['https://elsewhere.example'],
      state: 's-1',
    })
    const steps: string[] = []
    const result = await holder.presentDcApi(
      { request: unsigned(data), origin: ORIGIN },
      { onStep: (s) => steps.push(s) },
    )
    assert.equal(result.status, 'presented')
    assert.deepEqual(result.response.protocol, DC_API_PROTOCOLS.unsigned)
    assert.deepEqual(Object.keys(result.response.data), ['vp_token'])
    assert.equal(result.clientId, `origin:${ORIGIN}`)
    assert.equal(result.prefix, 'origin')
    assert.equal(result.signed, false)
    assert.equal(result.audience, `origin:${ORIGIN}`)
    assert.deepEqual(result.ignoredParameters.sort(), ['client_id', 'expected_origins', 'state'])
    assert.equal(result.signatures, undefined)
    assert.deepEqual(steps, ['request', 'select', 'response'])
    const kb = pidKb(result)
    assert.equal(kb.aud, `origin:${ORIGIN}`)
    assert.equal(kb.nonce, data.nonce)
    assert.equal(result.presented.length, 1)
  })

  test('the whole {digital: {requests}}: the first entry of a protocol the wallet speaks', async () => {
    const entry = unsigned(params())
    const result = await holder.presentDcApi({
      request: { digital: { requests: [{ protocol: 'org-iso-mdoc', data: {} }, entry] } },
      origin: ORIGIN,
    })
    assert.equal(result.protocol, DC_API_PROTOCOLS.unsigned)
    await assert.rejects(
      holder.presentDcApi({
        request: { digital: { requests: [{ protocol: 'openid4vp', data: {} }] } },
        origin: ORIGIN,
      }),
      (e: Error) =>
        e instanceof WalletUsageError &&
        /"openid4vp"/.test(e.message) &&
        /openid4vp-v1-unsigned/.test(e.message),
    )
  })

  test('an origin as no browser writes it is the caller’s mistake (WalletUsageError)', async () => {
    for (const origin of [
      `${ORIGIN}/`,
      `${ORIGIN}/page`,
      'http://verifier.example',
      'ftp://verifier.example',
    ]) {
      await assert.rejects(present(unsigned(params()), [], holder, origin), WalletUsageError, origin)
    }
    // http is allowed on loopback (local development, A.2)
    assert.equal((await present(unsigned(params()), [], holder, 'http://localhost:8080')).status, 'presented')
  })

  test('a request object under the unsigned protocol, a link response mode, no nonce: refused', async () => {
    await refused(present(unsigned({ request: 'eyJ' })), 'invalid_request', /openid4vp-v1-signed/)
    await refused(
      present(unsigned(params({ response_mode: 'direct_post' }))),
      'invalid_request',
      /response_mode "direct_post" .*dc_api, dc_api\.jwt/,
    )
    await refused(present(unsigned(params({ nonce: undefined }))), 'invalid_request', /no nonce/)
    await refused(
      present(unsigned(params({ transaction_data: ['x'] }))),
      'invalid_transaction_data',
      /transaction_data/,
    )
  })

  test('a nonce answered before is refused (§14.1)', async () => {
    const data = params()
    await present(unsigned(data))
    await refused(present(unsigned(data)), 'invalid_request', /already answered a request with the nonce/)
  })

  test('dc_api.jwt: {response: <JWE>} to the client_metadata key, {vp_token} inside, no state', async () => {
    const key = await encryptionKey()
    const data = params({
      response_mode: 'dc_api.jwt',
      client_metadata: { jwks: { keys: [key.jwk] }, encrypted_response_enc_values_supported: ['A256GCM'] },
    })
    const result = await present(unsigned(data))
    assert.deepEqual(Object.keys(result.response.data), ['response'])
    assert.equal(result.encryption?.alg, 'ECDH-ES')
    assert.equal(result.encryption?.enc, 'A256GCM')
    assert.equal(result.encryption?.kid, 'enc-1')
    const { plaintext } = await compactDecrypt(String(result.response.data.response), key.privateKey)
    const payload = JSON.parse(new TextDecoder().decode(plaintext))
    assert.deepEqual(Object.keys(payload), ['vp_token'])
    assert.equal(kbOf(payload.vp_token.pid[0]).aud, `origin:${ORIGIN}`)
    // asked dc_api.jwt without a key to encrypt to: refused
    await refused(
      present(unsigned(params({ response_mode: 'dc_api.jwt' }))),
      'invalid_request',
      /dc_api\.jwt \(OpenID4VP 1\.0 §8\.3\): client_metadata\.jwks has no keys/,
    )
  })
})

describe('openid4vp-v1-signed (A.3.1): verified per prefix, expected_origins holding the origin', () => {
  for (const prefix of ['decentralized_identifier', 'x509_san_dns', 'x509_hash'] as const) {
    test(`${prefix}: verified; the audience is still origin:<origin> (A.4)`, async () => {
      const result = await present(signed(prefix))
      assert.equal(result.status, 'presented')
      assert.equal(result.protocol, DC_API_PROTOCOLS.signed)
      assert.equal(result.clientId, identity(prefix).clientId)
      assert.equal(result.prefix, prefix)
      assert.equal(result.signatures?.length, 1)
      assert.equal(result.signatures?.[0]?.verified, true)
      if (prefix !== 'decentralized_identifier') assert.match(result.certificate?.subject ?? '', /verifier/)
      assert.equal(pidKb(result).aud, `origin:${ORIGIN}`)
    })
  }

  test('expected_origins missing, empty or without the origin: invalid_request naming both', async () => {
    await refused(
      present(signed('decentralized_identifier', params(), { expectedOrigins: undefined })),
      'invalid_request',
      /^expected_origins \(OpenID4VP 1\.0 Appendix A\.2\): a signed request must carry a non-empty array/,
    )
    await refused(
      present(signed('decentralized_identifier', params(), { expectedOrigins: [] })),
      'invalid_request',
      /non-empty array of origins .* it carries \[\]/,
    )
    const wrong = await refused(
      present(
        signed('decentralized_identifier', params(), {
          expectedOrigins: ['https://other.example', `${ORIGIN}/`],
        }),
      ),
      'invalid_request',
      /the calling origin https:\/\/verifier\.example is not one of \["https:\/\/other\.example","https:\/\/verifier\.example\/"\] \(compared as plain strings\)/,
    )
    assert.deepEqual(dcApiErrorResponse(signed('decentralized_identifier'), wrong), {
      protocol: DC_API_PROTOCOLS.signed,
      data: { error: 'invalid_request', error_description: wrong.errorDescription },
    })
    assert.deepEqual(
      dcApiErrorResponse(signed('decentralized_identifier'), wrong, { describe: false }).data,
      {
        error: 'invalid_request',
      },
    )
  })

  test('x509_san_dns: an origin on another host than the certified one is refused', async () => {
    await refused(
      present(
        signed('x509_san_dns', params(), { expectedOrigins: ['https://other.example'] }),
        [],
        holder,
        'https://other.example',
      ),
      'invalid_request',
      /the calling origin https:\/\/other\.example is not on the certified host verifier\.example/,
    )
  })

  test('a bad signature, a wrong typ, a foreign kid: refused', async () => {
    const good = signed('decentralized_identifier')
    const jws = String(good.data.request)
    const bad = `${jws.slice(0, -2)}${jws.at(-2) === 'A' ? 'B' : 'A'}${jws.at(-1)}`
    await refused(
      present({ ...good, data: { request: bad } }),
      'invalid_request_object',
      /decentralized_identifier .*signature/,
    )
    await refused(
      present(signed('decentralized_identifier', params(), { typ: 'JWT' })),
      'invalid_request_object',
      /typ "JWT" is not oauth-authz-req\+jwt/,
    )
    await refused(
      present(
        signed('decentralized_identifier', params(), { clientId: `decentralized_identifier:${ISSUER.did}` }),
      ),
      'invalid_request_object',
      /is not a key of the client identifier/,
    )
  })

  test('redirect_uri, origin, unknown and unverified prefixes: refused', async () => {
    for (const [clientId, reason] of [
      [
        'redirect_uri:https://verifier.example/cb',
        /redirect_uri prefix cannot be used over the Digital Credentials API/,
      ],
      [`origin:${ORIGIN}`, /origin prefix is reserved/],
      [
        'openid_federation:https://rp.example',
        /has prefix openid_federation; this wallet verifies decentralized_identifier, x509_san_dns, x509_hash/,
      ],
      ['vc_harness_unknown:x', /unknown client identifier prefix vc_harness_unknown/],
    ] as const) {
      await refused(
        present(signed('decentralized_identifier', params(), { clientId })),
        'invalid_request',
        reason,
      )
    }
    const { request } = signed('decentralized_identifier').data
    const noClient = signJws(
      { alg: 'EdDSA', typ: REQUEST_OBJECT_TYP, kid: VERIFIER_DID.kid },
      { ...decodeJws(String(request)).payload, client_id: undefined },
      VERIFIER_DID.privateKey,
    )
    await refused(
      present({ protocol: DC_API_PROTOCOLS.signed, data: { request: noClient } }),
      'invalid_request',
      /client_id is REQUIRED/,
    )
  })

  test('an expired request object is refused; expired-session answers it', async () => {
    const old = params({ exp: Math.floor(Date.now() / 1000) - 60 })
    await refused(present(signed('decentralized_identifier', old)), 'invalid_request_object', /expired at/)
    assert.equal(
      (await present(signed('decentralized_identifier', old), ['expired-session'])).status,
      'presented',
    )
  })
})

describe('openid4vp-v1-multisigned (A.3.2): one signature per client identifier, each reported', () => {
  test('two valid signatures: accepted, both verified, the client is the first', async () => {
    const result = await present(multisigned([signer('x509_san_dns'), signer('decentralized_identifier')]))
    assert.equal(result.status, 'presented')
    assert.equal(result.protocol, DC_API_PROTOCOLS.multisigned)
    assert.equal(result.clientId, `x509_san_dns:${HOST}`)
    assert.deepEqual(
      result.signatures?.map((s) => [s.index, s.clientId, s.verified]),
      [
        [0, `x509_san_dns:${HOST}`, true],
        [1, `decentralized_identifier:${VERIFIER_DID.did}`, true],
      ],
    )
    assert.equal(pidKb(result).aud, `origin:${ORIGIN}`)
  })

  test('one of two corrupted (oid4vp-1final-wallet-multisigned-one-invalid-signature): accepted, the failure reported', async () => {
    const result = await present(
      multisigned([signer('x509_san_dns'), signer('decentralized_identifier')], undefined, [0]),
    )
    assert.equal(result.status, 'presented')
    assert.equal(result.clientId, `decentralized_identifier:${VERIFIER_DID.did}`)
    const [first, second] = result.signatures ?? []
    assert.equal(first?.verified, false)
    assert.equal(first?.supported, true)
    assert.match(first?.reason ?? '', /x509_san_dns .*the signature by the leaf certificate/)
    assert.equal(second?.verified, true)
    assert.equal(second?.reason, undefined)
  })

  test('every signature corrupted: refused, naming each', async () => {
    await refused(
      present(multisigned([signer('x509_san_dns'), signer('decentralized_identifier')], undefined, [0, 1])),
      'invalid_request_object',
      /none of the 2 signatures .*signatures\[0\] \(x509_san_dns:verifier\.example\): .*signatures\[1\] \(decentralized_identifier:did:key:\S+\): /,
    )
  })

  test('an unsupported prefix alone: refused; beside a supported one: reported and passed over', async () => {
    await refused(
      present(multisigned([signer('openid_federation')])),
      'invalid_request',
      /signatures\[0\] \(openid_federation:https:\/\/rp\.example\): .*has prefix openid_federation/,
    )
    const result = await present(multisigned([signer('openid_federation'), signer('x509_hash')]))
    assert.deepEqual(
      result.signatures?.map((s) => [s.prefix, s.supported, s.verified]),
      [
        ['openid_federation', false, false],
        ['x509_hash', true, true],
      ],
    )
    assert.equal(result.prefix, 'x509_hash')
  })

  test('client_id in the payload, expected_origins without the origin, an unprotected header: refused', async () => {
    await refused(
      present(
        multisigned([signer('decentralized_identifier')], {
          ...params(),
          expected_origins: [ORIGIN],
          client_id: 'x',
        }),
      ),
      'invalid_request',
      /client_id of a multi-signed request belong in each signature's protected header, not in the payload/,
    )
    await refused(
      present(
        multisigned([signer('decentralized_identifier')], {
          ...params(),
          expected_origins: ['https://other.example'],
        }),
      ),
      'invalid_request',
      /the calling origin https:\/\/verifier\.example is not one of/,
    )
    const request = multisigned([signer('decentralized_identifier')])
    ;(request.data.request as { signatures: Record<string, unknown>[] }).signatures[0] = {
      ...(request.data.request as { signatures: Record<string, unknown>[] }).signatures[0],
      header: { client_id: 'x' },
    }
    await refused(present(request), 'invalid_request_object', /unprotected header/)
  })
})

// --- mdoc over the DC API -------------------------------------------------------------------------------------

describe('mso_mdoc over the DC API (B.2.6.2): the DeviceResponse signs the OpenID4VPDCAPIHandover', () => {
  test('dc_api: origin, nonce, null thumbprint; not the redirect handover', async () => {
    const data = params({ dcql_query: { credentials: [MDL_QUERY] } })
    const result = await present(signed('x509_san_dns', data))
    const deviceResponse = vpTokenOf(result).mdl?.[0] as string
    const checks = await mdocChecks(
      deviceResponse,
      { origin: ORIGIN, nonce: String(data.nonce) },
      { clientId: `x509_san_dns:${HOST}`, nonce: String(data.nonce), responseUri: ORIGIN },
    )
    assert.equal(checks.dcApi, undefined)
    assert.match(checks.redirect ?? '', /does not verify/)
    assert.deepEqual(Object.keys(checks.doc.namespaces[NS] ?? {}), ['age_over_18'])
    // the origin without origin:, exactly; another nonce does not verify
    assert.ok(
      (await mdocChecks(deviceResponse, { origin: `origin:${ORIGIN}`, nonce: String(data.nonce) })).dcApi,
    )
    assert.ok((await mdocChecks(deviceResponse, { origin: ORIGIN, nonce: 'other' })).dcApi)
  })

  test('dc_api.jwt: the handover binds the encryption key’s thumbprint', async () => {
    const key = await encryptionKey()
    const data = params({
      response_mode: 'dc_api.jwt',
      dcql_query: { credentials: [MDL_QUERY] },
      client_metadata: { jwks: { keys: [key.jwk] } },
    })
    const result = await present(unsigned(data))
    const { plaintext } = await compactDecrypt(String(result.response.data.response), key.privateKey)
    const deviceResponse = JSON.parse(new TextDecoder().decode(plaintext)).vp_token.mdl[0]
    const thumbprint = jwkThumbprint(key.jwk as never)
    assert.equal(
      (
        await mdocChecks(deviceResponse, {
          origin: ORIGIN,
          nonce: String(data.nonce),
          jwkThumbprint: thumbprint,
        })
      ).dcApi,
      undefined,
    )
    assert.ok((await mdocChecks(deviceResponse, { origin: ORIGIN, nonce: String(data.nonce) })).dcApi)
  })

  test('the redirect handover misbehaviours have no member to change here: WalletUsageError', async () => {
    const data = () => params({ dcql_query: { credentials: [MDL_QUERY] } })
    for (const m of ['mdoc-wrong-client-id', 'mdoc-wrong-response-uri'] as const) {
      await assert.rejects(
        present(unsigned(data()), [m]),
        (e: Error) => e instanceof WalletUsageError && /OpenID4VPDCAPIHandover/.test(e.message),
        m,
      )
    }
    const wrongNonce = data()
    const result = await present(unsigned(wrongNonce), ['mdoc-wrong-nonce'])
    assert.ok(
      (
        await mdocChecks(vpTokenOf(result).mdl?.[0] as string, {
          origin: ORIGIN,
          nonce: String(wrongNonce.nonce),
        })
      ).dcApi,
    )
  })
})

// --- misbehaviours ----------------------------------------------------------------------------------------------

describe('the DC API misbehaviours: each changes what it says', () => {
  test('the lists: 1.0-only, in the tamper table, help for each; dc-api-wrong-request forgets the nonce', () => {
    for (const m of DC_API_PRESENTATION_MISBEHAVIOURS) {
      assert.ok(V1_ONLY_PRESENTATION_MISBEHAVIOURS.includes(m), m)
      assert.ok(DC_API_MISBEHAVIOUR_HELP[m], m)
      assert.ok(tamperOf([m]).acts('dc_api.binding') || tamperOf([m]).acts('dc_api.ignoreExpectedOrigins'), m)
    }
    assert.ok(NONCE_LESS_PRESENTATION_MISBEHAVIOURS.includes('dc-api-wrong-request'))
  })

  test('the CLI usage names the command and every DC API misbehaviour', async () => {
    const { WALLET_USAGE } = await import('../../src/cli/wallet.ts')
    assert.match(
      WALLET_USAGE,
      /^ {2}dc-api {16}answer an OpenID4VP 1\.0 request over the W3C Digital Credentials API/m,
    )
    for (const m of DC_API_PRESENTATION_MISBEHAVIOURS) assert.match(WALLET_USAGE, new RegExp(`\\b${m}\\b`), m)
  })

  test('dc-api-foreign-origin: aud origin:https://attacker.example, the mdoc handover of that origin', async () => {
    const data = params({ dcql_query: { credentials: [PID_QUERY, MDL_QUERY] } })
    const result = await present(signed('decentralized_identifier', data), ['dc-api-foreign-origin'])
    assert.equal(result.audience, `origin:${FOREIGN_ORIGIN}`)
    assert.equal(pidKb(result).aud, `origin:${FOREIGN_ORIGIN}`)
    assert.equal(pidKb(result).nonce, data.nonce)
    const mdl = vpTokenOf(result).mdl?.[0] as string
    assert.equal(
      (await mdocChecks(mdl, { origin: FOREIGN_ORIGIN, nonce: String(data.nonce) })).dcApi,
      undefined,
    )
    assert.ok((await mdocChecks(mdl, { origin: ORIGIN, nonce: String(data.nonce) })).dcApi)
  })

  test('dc-api-client-id-audience: aud the client_id (unsigned: the bare origin), the redirect handover', async () => {
    const data = params({ dcql_query: { credentials: [PID_QUERY, MDL_QUERY] } })
    const clientId = `decentralized_identifier:${VERIFIER_DID.did}`
    const result = await present(signed('decentralized_identifier', data), ['dc-api-client-id-audience'])
    assert.equal(pidKb(result).aud, clientId)
    const checks = await mdocChecks(
      vpTokenOf(result).mdl?.[0] as string,
      { origin: ORIGIN, nonce: String(data.nonce) },
      { clientId, nonce: String(data.nonce), responseUri: ORIGIN },
    )
    assert.ok(checks.dcApi)
    assert.equal(checks.redirect, undefined)
    assert.equal(pidKb(await present(unsigned(params()), ['dc-api-client-id-audience'])).aud, ORIGIN)
  })

  test('dc-api-wrong-request: another nonce everywhere; the request’s nonce is not spent', async () => {
    const data = params({ dcql_query: { credentials: [PID_QUERY, MDL_QUERY] } })
    const result = await present(unsigned(data), ['dc-api-wrong-request'])
    assert.notEqual(pidKb(result).nonce, data.nonce)
    assert.equal(pidKb(result).nonce, result.nonce)
    assert.equal(pidKb(result).aud, `origin:${ORIGIN}`)
    const mdl = vpTokenOf(result).mdl?.[0] as string
    assert.ok((await mdocChecks(mdl, { origin: ORIGIN, nonce: String(data.nonce) })).dcApi)
    assert.equal((await mdocChecks(mdl, { origin: ORIGIN, nonce: result.nonce })).dcApi, undefined)
    assert.equal((await present(unsigned(data))).status, 'presented')
  })

  test('dc-api-ignore-expected-origins: answers a request made for another page; only where there is one', async () => {
    const elsewhere = { expectedOrigins: ['https://other.example'] }
    const result = await present(signed('decentralized_identifier', params(), elsewhere), [
      'dc-api-ignore-expected-origins',
    ])
    assert.equal(result.status, 'presented')
    assert.equal(pidKb(result).aud, `origin:${ORIGIN}`)
    const missing = await present(
      signed('decentralized_identifier', params(), { expectedOrigins: undefined }),
      ['dc-api-ignore-expected-origins'],
    )
    assert.equal(missing.status, 'presented')
    await assert.rejects(
      present(signed('decentralized_identifier'), ['dc-api-ignore-expected-origins']),
      /nothing to ignore/,
    )
    await assert.rejects(present(unsigned(params()), ['dc-api-ignore-expected-origins']), /ignores anyway/)
  })

  test('a DC API misbehaviour asked of a link is refused before anything is fetched', async () => {
    const link = `openid4vp://?client_id=${encodeURIComponent('decentralized_identifier:did:key:z6Mk')}&request_uri=${encodeURIComponent('http://127.0.0.1:9/never')}`
    for (const m of DC_API_PRESENTATION_MISBEHAVIOURS) {
      await assert.rejects(
        holder.present(link, { misbehave: [m] }),
        (e: Error) => e instanceof WalletUsageError && /Digital Credentials API/.test(e.message),
        m,
      )
    }
  })

  test('plain-response answers dc_api where dc_api.jwt was asked; jwe-wrong-key encrypts to another key', async () => {
    const key = await encryptionKey()
    const data = () => params({ response_mode: 'dc_api.jwt', client_metadata: { jwks: { keys: [key.jwk] } } })
    const plain = await present(unsigned(data()), ['plain-response'])
    assert.equal(plain.responseMode, 'dc_api')
    assert.ok(plain.response.data.vp_token)
    const wrongKey = await present(unsigned(data()), ['jwe-wrong-key'])
    assert.equal(wrongKey.encryption?.kid, 'enc-1')
    await assert.rejects(compactDecrypt(String(wrongKey.response.data.response), key.privateKey))
  })

  test('access-denied, and a query nothing held satisfies: the access_denied answer', async () => {
    const declined = await present(unsigned(params()), ['access-denied'])
    assert.equal(declined.status, 'declined')
    assert.deepEqual(declined.presented, [])
    assert.equal(declined.response.data.error, 'access_denied')
    const nothing = params({
      dcql_query: { credentials: [{ id: 'x', format: 'dc+sd-jwt', meta: { vct_values: ['urn:none'] } }] },
    })
    const answer = await holder.presentDcApi(
      { request: unsigned(nothing), origin: ORIGIN },
      { onUnsatisfied: 'access-denied' },
    )
    assert.deepEqual(answer.response, {
      protocol: DC_API_PROTOCOLS.unsigned,
      data: {
        error: 'access_denied',
        error_description: 'the wallet holds no credential for the credential query x',
      },
    })
  })

  test('the careless wallet answers a bad signature and a foreign page', async () => {
    const careless = await holding({ careless: true })
    const bad = multisigned(
      [signer('decentralized_identifier')],
      { ...params(), expected_origins: ['https://other.example'] },
      [0],
    )
    const result = await present(bad, [], careless)
    assert.equal(result.status, 'presented')
    assert.match(result.signatures?.[0]?.reason ?? '', /not checked/)
    assert.equal(pidKb(result).aud, `origin:${ORIGIN}`)
  })
})

// --- the CLI ------------------------------------------------------------------------------------------------------

describe('vc-harness wallet dc-api', () => {
  test('prints the {protocol, data} answer; a refusal prints the error answer and fails', async () => {
    const file = join(tempDir, 'wallet.json')
    await holding({ file })
    const requestFile = join(tempDir, 'request.json')
    const data = params()
    writeFileSync(
      requestFile,
      JSON.stringify({ digital: { requests: [signed('decentralized_identifier', data)] } }),
    )
    const foreign = await walletCli([
      'dc-api',
      '--origin',
      ORIGIN,
      '--request',
      requestFile,
      '--wallet',
      file,
      '--misbehave',
      'dc-api-wrong-request',
    ])
    assert.equal(foreign.error, undefined, foreign.error?.message)

    const ok = await walletCli(['dc-api', '--origin', ORIGIN, '--request', requestFile, '--wallet', file])
    assert.equal(ok.error, undefined, ok.error?.message)
    const answer = JSON.parse(ok.out)
    assert.equal(answer.protocol, DC_API_PROTOCOLS.signed)
    assert.equal(kbOf(answer.data.vp_token.pid[0]).aud, `origin:${ORIGIN}`)

    const other = await walletCli([
      'dc-api',
      '--origin',
      'https://other.example',
      '--request',
      requestFile,
      '--wallet',
      file,
    ])
    assert.ok(other.error)
    const refusal = JSON.parse(other.out)
    assert.equal(refusal.protocol, DC_API_PROTOCOLS.signed)
    assert.equal(refusal.data.error, 'invalid_request')
    assert.match(refusal.data.error_description, /expected_origins/)

    const missing = await walletCli(['dc-api', '--request', requestFile, '--wallet', file])
    assert.equal(missing.error?.code, 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
    const wrongMisbehaviour = await walletCli([
      'dc-api',
      '--origin',
      ORIGIN,
      '--request',
      requestFile,
      '--wallet',
      file,
      '--misbehave',
      'wrong-nonce',
    ])
    assert.equal(wrongMisbehaviour.error?.code, 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
  })
})
