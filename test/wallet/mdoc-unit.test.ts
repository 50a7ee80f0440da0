// The wallet and ISO mdocs (mso_mdoc; OpenID4VCI 1.0 Appendix A.2, OpenID4VP 1.0 Appendix B.2), without a
// service: an IACA and a document signer made here (src/shared/x509.ts), mdocs issued with the shared issuer
// (issueMdoc) and bound to the wallet's key; receipt (Wallet.accept, and the whole pre-authorized flow against a
// fake 1.0 issuer behind the wallet's fetch) and presentation (a by-value redirect_uri: request answered to a
// fake verifier behind the same fetch), each DeviceResponse read back with the format's own reader
// (src/formats/mso-mdoc, the service's verifier), and what each mdoc misbehaviour changes.
import assert from 'node:assert/strict'
import { generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { deflateSync } from 'node:zlib'
import { DcqlQuery } from 'dcql'
import { compactDecrypt, exportJWK, generateKeyPair as joseKeyPair } from 'jose'
import { msoMdocFormat } from '../../src/formats/mso-mdoc/index.ts'
import { buildDcqlQuery } from '../../src/service/verification/dcql-query.ts'
import { didKeyFromPublicKey, resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, jwkThumbprint, signJws } from '../../src/shared/jws.ts'
import * as mdoc from '../../src/shared/mdoc.ts'
import { PRE_AUTHORIZED_GRANT, STATUS_LIST_JWT_TYP } from '../../src/shared/wire.ts'
import { certificatePem, generateIaca, issueDocumentSigner, type TestCa } from '../../src/shared/x509.ts'
import {
  MDOC_PRESENTATION_MISBEHAVIOURS,
  PRESENTATION_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  type StoredCredential,
  V1_ONLY_PRESENTATION_MISBEHAVIOURS,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import {
  NONCE_LESS_PRESENTATION_MISBEHAVIOURS,
  WRONG_RESPONSE_URI_SUFFIX,
} from '../../src/wallet/misbehaviour.ts'
import { selectForDcql } from '../../src/wallet/presentation-dcql.ts'
import { elementsOf, presentMdocCredential } from '../../src/wallet/presentation-mdoc.ts'
import { type TamperPoint, tamperOf } from '../../src/wallet/tamper.ts'
import { walletCli } from '../helpers.ts'

const NS = mdoc.MDL_NAMESPACE
const DOCTYPE = mdoc.MDL_DOCTYPE
const HOUR = 3_600_000
const ISSUER_URL = 'https://issuer.example/oid4vci/mdoc'
const STATUS_URI = `${ISSUER_URL}/token-status/1`
const ELEMENTS = {
  family_name: 'Lovelace',
  given_name: 'Ada',
  birth_date: '1815-12-10',
  age_over_18: true,
  document_number: 'D-1815',
}

interface Signer {
  privateKey: KeyObject
  x5chain: string[]
}

let iaca: TestCa
let ds: Signer
let foreignDs: Signer
const tempDir = mkdtempSync(join(tmpdir(), 'wallet-mdoc-'))
const anchors = () => [certificatePem(iaca.certificate)]

async function documentSigner(authority: TestCa, name: string): Promise<Signer> {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const certificate = await issueDocumentSigner({
    iaca: authority,
    publicKey: pair.publicKey,
    commonName: name,
    uri: ISSUER_URL,
  })
  return { privateKey: pair.privateKey, x5chain: [certificate.toString('base64')] }
}

/** An mDL bound to `deviceKey`, signed by `signer` (the IACA's document signer unless said otherwise). */
function issue(
  deviceKey: object,
  over: Partial<mdoc.MdocIssueInput> & { signer?: Signer } = {},
): Promise<string> {
  return mdoc.issueMdoc({
    docType: DOCTYPE,
    namespaces: { [NS]: { ...ELEMENTS } },
    deviceKey: deviceKey as mdoc.MdocIssueInput['deviceKey'],
    signer: ds,
    validity: {
      signed: new Date(),
      validFrom: new Date(Date.now() - HOUR),
      validUntil: new Date(Date.now() + 24 * HOUR),
    },
    ...over,
  })
}

const ORIGIN = {
  credentialIssuer: ISSUER_URL,
  configurationId: 'mdl',
  status: 200,
  format: 'mso_mdoc',
  doctype: DOCTYPE,
}

before(async () => {
  await mdoc.prepareMdoc()
  iaca = await generateIaca({ commonName: 'wallet-mdoc test IACA', uri: ISSUER_URL })
  ds = await documentSigner(iaca, 'wallet-mdoc test DS')
  const foreign = await generateIaca({ commonName: 'another IACA', uri: 'https://elsewhere.example' })
  foreignDs = await documentSigner(foreign, 'another DS')
})
after(() => rmSync(tempDir, { recursive: true, force: true }))

/** A P-256 wallet trusting the test IACA, holding one mDL. */
async function holding(opts: { fetch?: typeof fetch; file?: string } = {}) {
  const wallet = await Wallet.create({
    keyType: 'P-256',
    trustAnchors: anchors(),
    ...(opts.fetch && { fetch: opts.fetch }),
    ...(opts.file && { file: opts.file }),
  })
  const [stored] = await wallet.accept([await issue(wallet.publicJwk())], ORIGIN)
  return { wallet, stored: stored as StoredCredential }
}

async function refusedAtReceipt(
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
  assert.equal(caught.step, 'verify')
  assert.equal(caught.error, error, caught.errorDescription)
  assert.match(caught.errorDescription ?? '', description)
  return caught
}

// --- receipt ------------------------------------------------------------------------------------------------

describe('mso_mdoc at receipt (OpenID4VCI 1.0 Appendix A.2, ISO 18013-5 §9.3.1)', () => {
  test('an mdoc of the IACA, bound to the wallet key, is stored with its doctype and elements', async () => {
    const { wallet, stored } = await holding()
    assert.equal(stored.format, 'mso_mdoc')
    assert.equal(stored.doctype, DOCTYPE)
    assert.deepEqual(stored.types, [DOCTYPE])
    assert.deepEqual(stored.credentialSubject, { [NS]: ELEMENTS })
    assert.match(stored.issuer, /wallet-mdoc test DS/)
    assert.equal(stored.subject, wallet.did)
    assert.match(stored.id, /^urn:sha256:[0-9a-f]{64}$/)
    assert.ok(stored.expiresAt && Date.parse(stored.expiresAt) > Date.now())
    assert.equal(mdoc.decodeIssuerSigned(stored.credential).docType, DOCTYPE)
    assert.deepEqual(
      wallet.credentials().map((c) => c.id),
      [stored.id],
    )
  })

  test('an mdoc whose x5chain ends in another IACA is refused, naming the chain', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors() })
    await refusedAtReceipt(
      wallet.accept([await issue(wallet.publicJwk(), { signer: foreignDs })], ORIGIN),
      'invalid_credential',
      /^credentials\[0\]: issuerAuth \(ISO 18013-5 §9\.1\.2\.4, §9\.3\.1\) does not verify: issuerAuth x5chain: /,
    )
    assert.deepEqual(wallet.credentials(), [])
  })

  test('without a trust anchor the wallet says which one to configure', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256' })
    await refusedAtReceipt(
      wallet.accept([await issue(wallet.publicJwk())], ORIGIN),
      'invalid_credential',
      /no IACA trust anchor configured .*--trust-anchor.*\/iaca/,
    )
  })

  test('an expired MSO is refused (validUntil passed)', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors() })
    const expired = await issue(wallet.publicJwk(), {
      validity: {
        signed: new Date(Date.now() - 48 * HOUR),
        validFrom: new Date(Date.now() - 48 * HOUR),
        validUntil: new Date(Date.now() - HOUR),
      },
    })
    await refusedAtReceipt(
      wallet.accept([expired], ORIGIN),
      'invalid_credential',
      /validity period: the MSO's validUntil \S+ has passed \(ISO 18013-5 §9\.1\.2\.4 ValidityInfo\)/,
    )
  })

  test('an MSO not valid yet is refused (validFrom in the future)', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors() })
    const early = await issue(wallet.publicJwk(), {
      validity: {
        signed: new Date(),
        validFrom: new Date(Date.now() + HOUR),
        validUntil: new Date(Date.now() + 24 * HOUR),
      },
    })
    await refusedAtReceipt(
      wallet.accept([early], ORIGIN),
      'invalid_credential',
      /validFrom \S+ is in the future/,
    )
  })

  test('a device key that is not the wallet key is refused (holder binding)', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors() })
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' })
    await refusedAtReceipt(
      wallet.accept([await issue(other)], ORIGIN),
      'wrong_holder_key',
      /holder binding: the MSO's deviceKeyInfo\.deviceKey \(ISO 18013-5 §9\.1\.2\.4\) is not this holder's key/,
    )
  })

  test('a doctype other than the configuration names is refused', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors() })
    await refusedAtReceipt(
      wallet.accept([await issue(wallet.publicJwk())], { ...ORIGIN, doctype: mdoc.PID_DOCTYPE }),
      'invalid_credential',
      /docType: the MSO's docType org\.iso\.18013\.5\.1\.mDL is not the offered configuration's doctype eu\.europa\.ec\.eudi\.pid\.1/,
    )
    // a configuration that names no doctype takes the MSO's
    const [stored] = await wallet.accept([await issue(wallet.publicJwk())], { ...ORIGIN, doctype: undefined })
    assert.equal(stored?.doctype, DOCTYPE)
  })

  test('an element changed after issuance is refused (its digest)', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors() })
    const tampered = await mdoc.tamperMdocElement(await issue(wallet.publicJwk()))
    await refusedAtReceipt(
      wallet.accept([tampered], ORIGIN),
      'invalid_credential',
      /does not match its digest in the MSO \(ISO 18013-5 §9\.3\.1\)/,
    )
  })

  test('what is not base64url IssuerSigned is refused; all or none of a response is stored', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors() })
    await refusedAtReceipt(
      wallet.accept([{ issuerSigned: 'x' }], ORIGIN),
      'unsupported_credential_format',
      /is not an mso_mdoc string/,
    )
    await refusedAtReceipt(
      wallet.accept(['eyJub3QiOiJjYm9yIn0'], ORIGIN),
      'invalid_credential',
      /base64url IssuerSigned \(OpenID4VCI 1\.0 Appendix A\.2\.4/,
    )
    const good = await issue(wallet.publicJwk())
    await refusedAtReceipt(
      wallet.accept([good, 'not an mdoc!'], ORIGIN),
      'invalid_credential',
      /credentials\[1\]/,
    )
    assert.deepEqual(wallet.credentials(), [])
  })

  test('the careless wallet (trustEverything) stores what it cannot verify', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256', trustEverything: true })
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' })
    const [stored] = await wallet.accept([await issue(other, { signer: foreignDs })], ORIGIN)
    assert.equal(stored?.doctype, DOCTYPE)
    assert.equal(stored?.issuer, '')
  })

  test('vc-harness wallet list shows the doctype and the elements of each namespace', async () => {
    const file = join(tempDir, 'list.json')
    await holding({ file })
    const { out, error } = await walletCli(['list', '--wallet', file])
    assert.equal(error, undefined, error?.message)
    const listed = JSON.parse(out) as { credentials: Record<string, unknown>[] }
    const [shown] = listed.credentials
    assert.equal(shown?.format, 'mso_mdoc')
    assert.equal(shown?.doctype, DOCTYPE)
    assert.deepEqual(shown?.namespaces, { [NS]: Object.keys(ELEMENTS) })
    assert.deepEqual(shown?.credentialSubject, { [NS]: ELEMENTS })
  })
})

// --- the whole pre-authorized flow: key choice, holder binding, doctype and status, against a fake 1.0 issuer ----

/** A Token Status List token (1 bit per entry) signed by `key` (the document signer's: the same key signs both). */
function tokenStatusList(uri: string, revoked: number[], key: KeyObject): string {
  const bytes = new Uint8Array(32)
  for (const index of revoked) bytes[index >> 3] = (bytes[index >> 3] as number) | (1 << (index & 7))
  const signer = didKeyFromPublicKey(key)
  return signJws(
    { alg: 'ES256', typ: STATUS_LIST_JWT_TYP, kid: signer.kid },
    {
      sub: uri,
      iat: Math.floor(Date.now() / 1000),
      status_list: { bits: 1, lst: deflateSync(bytes).toString('base64url') },
    },
    key,
  )
}

/**
 * An OpenID4VCI 1.0 issuer of an mDL configuration (`cose_key`, ES256 proofs), behind the wallet's fetch: it
 * issues to the key of the proof's `jwk` header, with a status entry whose list says `revoked`.
 */
function fakeMdocIssuer(opts: { revoked?: boolean; doctype?: string } = {}) {
  const path = new URL(ISSUER_URL).pathname
  const calls: string[] = []
  const proofs: Record<string, unknown>[] = []
  const metadata = {
    credential_issuer: ISSUER_URL,
    credential_endpoint: `${ISSUER_URL}/credential`,
    nonce_endpoint: `${ISSUER_URL}/nonce`,
    credential_configurations_supported: {
      mdl: {
        format: 'mso_mdoc',
        doctype: opts.doctype ?? DOCTYPE,
        cryptographic_binding_methods_supported: ['cose_key'],
        credential_signing_alg_values_supported: [-7],
        proof_types_supported: { jwt: { proof_signing_alg_values_supported: ['ES256'] } },
        credential_metadata: { display: [{ name: 'mDL', locale: 'en' }] },
      },
    },
  }
  const as = {
    issuer: ISSUER_URL,
    token_endpoint: `${ISSUER_URL}/token`,
    grant_types_supported: [PRE_AUTHORIZED_GRANT],
    'pre-authorized_grant_anonymous_access_supported': true,
  }
  const answer = (status: number, body: unknown, type = 'application/json') =>
    new Response(typeof body === 'string' ? body : JSON.stringify(body), {
      status,
      headers: { 'content-type': type },
    })
  const fetch = (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const url = new URL(request.url)
    calls.push(url.pathname)
    switch (url.pathname) {
      case `/.well-known/openid-credential-issuer${path}`:
      case `${path}/.well-known/openid-credential-issuer`:
        return answer(200, metadata)
      case `/.well-known/oauth-authorization-server${path}`:
      case `${path}/.well-known/oauth-authorization-server`:
        return answer(200, as)
      case `${path}/token`:
        return answer(200, { access_token: 'AT-mdoc-0123456789', token_type: 'Bearer', expires_in: 300 })
      case `${path}/nonce`:
        return answer(200, { c_nonce: `nonce-${randomUUID()}` })
      case `${path}/credential`: {
        const body = JSON.parse(await request.text()) as { proofs: { jwt: string[] } }
        const { header } = decodeJws(body.proofs.jwt[0] as string)
        proofs.push(header)
        const encoded = await issue(header.jwk as JsonWebKey, { status: { idx: 3, uri: STATUS_URI } })
        return answer(200, { credentials: [{ credential: encoded }] })
      }
      case new URL(STATUS_URI).pathname:
        return answer(
          200,
          tokenStatusList(STATUS_URI, opts.revoked ? [3] : [], ds.privateKey),
          'application/statuslist+jwt',
        )
      default:
        return answer(404, { error: 'not_found' })
    }
  }) as typeof globalThis.fetch
  const offer = {
    credential_issuer: ISSUER_URL,
    credential_configuration_ids: ['mdl'],
    grants: { [PRE_AUTHORIZED_GRANT]: { 'pre-authorized_code': 'CODE' } },
  }
  const link = `openid-credential-offer://?credential_offer=${encodeURIComponent(JSON.stringify(offer))}`
  return { fetch, calls, proofs, link }
}

describe('receiving an mDL from an OpenID4VCI 1.0 issuer (key choice, binding, status)', () => {
  test('a P-256 wallet proves its key by jwk (cose_key binding) and stores the mDL, its status read', async () => {
    const issuer = fakeMdocIssuer()
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors(), fetch: issuer.fetch })
    const result = await wallet.receive(issuer.link)
    assert.equal(result.status, 'issued')
    const [proof] = issuer.proofs
    assert.ok(proof)
    assert.equal(proof.alg, 'ES256')
    assert.equal(proof.kid, undefined, 'a cose_key configuration gets the key as jwk, not as a did:key kid')
    const jwk = proof.jwk as JsonWebKey
    assert.deepEqual({ x: jwk.x, y: jwk.y }, { x: wallet.publicJwk().x, y: wallet.publicJwk().y })
    assert.ok(issuer.calls.includes(new URL(STATUS_URI).pathname), 'the status list was read')
    assert.equal(wallet.credentials()[0]?.doctype, DOCTYPE)
  })

  test('an mDL whose status list says revoked is refused at receipt', async () => {
    const issuer = fakeMdocIssuer({ revoked: true })
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors(), fetch: issuer.fetch })
    await refusedAtReceipt(
      wallet.receive(issuer.link),
      'credential_revoked',
      /status \(Token Status List §8\.3\): the credential is INVALID \(revoked\)/,
    )
    assert.deepEqual(wallet.credentials(), [])
  })

  test('the metadata names another doctype: refused at receipt', async () => {
    const issuer = fakeMdocIssuer({ doctype: mdoc.PID_DOCTYPE })
    const wallet = await Wallet.create({ keyType: 'P-256', trustAnchors: anchors(), fetch: issuer.fetch })
    await refusedAtReceipt(wallet.receive(issuer.link), 'invalid_credential', /docType: the MSO's docType/)
  })

  for (const keyType of ['Ed25519', 'secp256k1'] as const) {
    test(`a ${keyType} wallet is told to use a P-256 one, before the code is redeemed`, async () => {
      const issuer = fakeMdocIssuer()
      const wallet = await Wallet.create({ keyType, trustAnchors: anchors(), fetch: issuer.fetch })
      await assert.rejects(
        wallet.receive(issuer.link),
        (e: Error) =>
          e instanceof WalletUsageError &&
          /credential configuration mdl takes jwt key proofs signed with ES256/.test(e.message) &&
          /mso_mdoc: the proven key becomes the device key/.test(e.message) &&
          /--key-type P-256/.test(e.message),
      )
      assert.ok(!issuer.calls.some((p) => p.endsWith('/token')), 'the pre-authorized code was not redeemed')
      // step by step, the credential request is refused before a nonce is fetched
      const session = await wallet.startIssuance(issuer.link)
      await session.token()
      await assert.rejects(session.requestCredential(), WalletUsageError)
      assert.ok(!issuer.calls.some((p) => p.endsWith('/nonce')))
    })
  }
})

// --- presentation ----------------------------------------------------------------------------------------------

const VERIFIER = 'https://verifier.example/oid4vp/demo'

/** The query the reference service builds for an mDL template asking for two elements (dcql-query.ts). */
const serviceQuery = () =>
  buildDcqlQuery({
    credentialTypes: [DOCTYPE],
    requestedFields: [
      { path: '$.credentialSubject.family_name', optional: false },
      { path: `$.credentialSubject.${NS}.age_over_18`, optional: false },
    ],
    format: 'mso_mdoc',
    vctValues: () => [],
  }) as unknown as Record<string, unknown>

/** A fake verifier behind the wallet's fetch: what reaches each response_uri. */
class FakeVerifier {
  readonly posts = new Map<string, Record<string, string>>()
  readonly fetch = (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    if (request.method === 'POST' && request.url.startsWith(VERIFIER)) {
      this.posts.set(request.url, Object.fromEntries(new URLSearchParams(await request.text())))
      return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } })
    }
    return new Response('{"error":"not_found"}', {
      status: 404,
      headers: { 'content-type': 'application/json' },
    })
  }) as typeof globalThis.fetch

  /** An unsigned 1.0 request by value (redirect_uri: prefix), direct_post or direct_post.jwt to `encryptTo`. */
  request(opts: { query?: Record<string, unknown>; encryptTo?: JsonWebKey } = {}) {
    const responseUri = `${VERIFIER}/response/${randomUUID()}`
    const clientId = `redirect_uri:${responseUri}`
    const nonce = `nonce-${randomUUID()}`
    const params: Record<string, string> = {
      response_type: 'vp_token',
      client_id: clientId,
      response_mode: opts.encryptTo ? 'direct_post.jwt' : 'direct_post',
      response_uri: responseUri,
      nonce,
      state: 'state-1',
      dcql_query: JSON.stringify(opts.query ?? serviceQuery()),
      ...(opts.encryptTo && {
        client_metadata: JSON.stringify({
          jwks: { keys: [{ ...opts.encryptTo, kid: 'enc-1', use: 'enc', alg: 'ECDH-ES' }] },
          encrypted_response_enc_values_supported: ['A128GCM'],
        }),
      }),
    }
    return { link: `openid4vp://?${new URLSearchParams(params)}`, responseUri, clientId, nonce }
  }
}

/** The session expectation the service's verifier checks a DeviceResponse against. */
const expectation = (r: { clientId: string; nonce: string; responseUri: string }, thumbprint?: string) => ({
  audience: r.clientId,
  nonce: r.nonce,
  responseUri: r.responseUri,
  nonceRole: "the nonce of this session's request",
  audienceRole: "this verifier's client_id",
  now: Date.now(),
  ...(thumbprint !== undefined && { encryptionKeyThumbprint: thumbprint }),
})

/** The DeviceResponse as the service's pipeline reads it: the presentation and its one credential. */
async function readDeviceResponse(token: string) {
  await msoMdocFormat.presentation.prepare?.()
  const presentation = msoMdocFormat.presentation.read(token, { algorithms: [] })
  const [entry] = presentation.credentials
  assert.ok(entry, 'one document')
  const credential = msoMdocFormat.credential.read(entry.raw, { algorithms: [] })
  return { presentation, credential }
}

describe('presenting an mDL (OpenID4VP 1.0 §6 DCQL, Appendix B.2.6)', () => {
  let verifier: FakeVerifier
  let wallet: Wallet
  let stored: StoredCredential

  before(async () => {
    verifier = new FakeVerifier()
    ;({ wallet, stored } = await holding({ fetch: verifier.fetch }))
  })

  test('the dcql package finds the held mDL: doctype_value, [namespace, element] paths, intent_to_retain ignored', async () => {
    const query = serviceQuery() as { credentials: { id: string; claims: Record<string, unknown>[] }[] }
    const [credentialQuery] = query.credentials
    assert.ok(credentialQuery)
    credentialQuery.claims = credentialQuery.claims.map((c, i) => ({ ...c, intent_to_retain: i === 0 }))
    const selection = await selectForDcql(DcqlQuery.parse(query as never), wallet.credentials())
    const [choice] = selection.answers[0]?.credentials ?? []
    assert.equal(choice?.format, 'mso_mdoc')
    assert.equal(choice?.credential.id, stored.id)
    assert.deepEqual(choice?.claimPaths, [
      [NS, 'family_name'],
      [NS, 'age_over_18'],
    ])
    // another doctype matches nothing, and says so
    const pid = { credentials: [{ ...credentialQuery, meta: { doctype_value: mdoc.PID_DOCTYPE } }] }
    await assert.rejects(
      selectForDcql(DcqlQuery.parse(pid as never), wallet.credentials()),
      /\(mso_mdoc "eu\.europa\.ec\.eudi\.pid\.1"\): none of the 1 held mso_mdoc credential\(s\) matches/,
    )
  })

  test('direct_post: a DeviceResponse of exactly the asked elements, bound to this exchange', async () => {
    const r = verifier.request()
    const result = await wallet.present(r.link)
    assert.equal(result.status, 'verified')
    assert.deepEqual(result.presented, [stored.id])
    const form = verifier.posts.get(r.responseUri) as Record<string, string>
    const vpToken = JSON.parse(form.vp_token as string) as Record<string, string[]>
    const [queryId] = Object.keys(vpToken)
    const token = vpToken[queryId as string]?.[0] as string
    assert.match(token, /^[A-Za-z0-9_-]+$/, 'a base64url DeviceResponse string')
    const { presentation, credential } = await readDeviceResponse(token)
    assert.deepEqual(await presentation.verifyBinding(expectation(r)), [])
    const proof = await presentation.verifyProof()
    assert.ok(proof.ok, proof.ok ? '' : proof.failures.join('; '))
    assert.equal(proof.holder.did, wallet.did)
    const issuer = await credential.verifyProof(resolveDidKey, { trustAnchors: anchors(), now: Date.now() })
    assert.ok(issuer.ok, issuer.ok ? '' : issuer.reason)
    assert.deepEqual(credential.claims, { [NS]: { family_name: 'Lovelace', age_over_18: true } })
    assert.deepEqual(credential.disclosed?.map((p) => p.join('/')).sort(), [
      `${NS}/age_over_18`,
      `${NS}/family_name`,
    ])
    // another exchange: the same DeviceResponse does not verify
    const other = expectation({ ...r, nonce: 'another-nonce' })
    assert.equal((await presentation.verifyBinding(other)).length, 1)
  })

  test("direct_post.jwt: the handover binds the verifier encryption key's thumbprint", async () => {
    const { publicKey, privateKey } = await joseKeyPair('ECDH-ES', { crv: 'P-256' })
    const jwk = (await exportJWK(publicKey)) as JsonWebKey
    const r = verifier.request({ encryptTo: jwk })
    await wallet.present(r.link)
    const form = verifier.posts.get(r.responseUri) as Record<string, string>
    const { plaintext } = await compactDecrypt(form.response as string, privateKey)
    const payload = JSON.parse(new TextDecoder().decode(plaintext)) as { vp_token: Record<string, string[]> }
    const token = Object.values(payload.vp_token)[0]?.[0] as string
    const { presentation } = await readDeviceResponse(token)
    const thumbprint = jwkThumbprint(jwk as never)
    assert.deepEqual(await presentation.verifyBinding(expectation(r, thumbprint)), [])
    assert.equal(
      (await presentation.verifyBinding(expectation(r))).length,
      1,
      'null in place of the thumbprint',
    )
  })

  test('no claims in the query: no element is disclosed (§6.4.1)', async () => {
    const { credentials } = serviceQuery() as { credentials: Record<string, unknown>[] }
    const { claims: _, ...bare } = credentials[0] as Record<string, unknown>
    const r = verifier.request({ query: { credentials: [bare] } })
    await wallet.present(r.link)
    const form = verifier.posts.get(r.responseUri) as Record<string, string>
    const token = Object.values(JSON.parse(form.vp_token as string) as Record<string, string[]>)[0]?.[0]
    const { presentation, credential } = await readDeviceResponse(token as string)
    assert.deepEqual(await presentation.verifyBinding(expectation(r)), [])
    assert.deepEqual(credential.disclosed, [])
  })

  // Each misbehaviour through the whole answer: what the service's reader concludes.
  const answered = async (misbehaviour: PresentationMisbehaviour) => {
    const r = verifier.request()
    await wallet.present(r.link, { misbehave: [misbehaviour] })
    const form = verifier.posts.get(r.responseUri) as Record<string, string>
    const token = Object.values(JSON.parse(form.vp_token as string) as Record<string, string[]>)[0]?.[0]
    return { r, ...(await readDeviceResponse(token as string)) }
  }

  for (const misbehaviour of [
    'mdoc-wrong-nonce',
    'mdoc-wrong-client-id',
    'mdoc-wrong-response-uri',
    'mdoc-foreign-device-key',
  ] as const) {
    test(`${misbehaviour}: the deviceSignature does not verify for this exchange; the issuer part does`, async () => {
      const { r, presentation, credential } = await answered(misbehaviour)
      const failures = await presentation.verifyBinding(expectation(r))
      assert.equal(failures.length, 1, failures.join('; '))
      assert.match(failures[0] as string, /the deviceSignature does not verify with the MSO’s deviceKey/)
      const issuer = await credential.verifyProof(resolveDidKey, { trustAnchors: anchors(), now: Date.now() })
      assert.ok(issuer.ok)
      assert.equal(
        await wallet.answeredNonce(r.nonce),
        !NONCE_LESS_PRESENTATION_MISBEHAVIOURS.includes(misbehaviour),
        'only an answer that carries the nonce remembers it',
      )
    })
  }

  test('mdoc-tampered-element: the credential proof fails on that element’s digest; the binding holds', async () => {
    const { r, presentation, credential } = await answered('mdoc-tampered-element')
    assert.deepEqual(await presentation.verifyBinding(expectation(r)), [])
    const issuer = await credential.verifyProof(resolveDidKey, { trustAnchors: anchors(), now: Date.now() })
    assert.equal(issuer.ok, false)
    assert.match(
      issuer.ok ? '' : issuer.reason,
      /^org\.iso\.18013\.5\.1\/family_name: its value does not match its digest in the MSO \(ISO 18013-5 §9\.3\.1\)$/,
    )
    assert.equal((credential.claims[NS] as Record<string, unknown>).family_name, 'Lovelace (tampered)')
  })

  test('mdoc-extra-element: exactly one element more than asked, everything verifying', async () => {
    const { r, presentation, credential } = await answered('mdoc-extra-element')
    assert.deepEqual(await presentation.verifyBinding(expectation(r)), [])
    assert.ok((await credential.verifyProof(resolveDidKey, { trustAnchors: anchors(), now: Date.now() })).ok)
    // the DeviceResponse carries the items in issued order
    assert.deepEqual(credential.disclosed?.map((p) => p.join('/')).sort(), [
      `${NS}/age_over_18`,
      `${NS}/family_name`,
      `${NS}/given_name`,
    ])
  })

  test('an mdoc misbehaviour on a draft-20 link is a WalletUsageError, before anything is fetched', async () => {
    const pe = `openid-vp://?${new URLSearchParams({
      client_id: wallet.did,
      request_uri: `${VERIFIER}/requests/1`,
    })}`
    await assert.rejects(
      wallet.present(pe, { misbehave: ['mdoc-extra-element'] }),
      (e: Error) =>
        e instanceof WalletUsageError && /mdoc-extra-element applies to an OpenID4VP 1\.0/.test(e.message),
    )
  })
})

// --- each misbehaviour changes one thing (presentMdocCredential over a signer, compared with the correct one) ---

describe('each mdoc misbehaviour changes exactly one thing', () => {
  let wallet: Wallet
  let stored: StoredCredential
  const base = {
    clientId: 'x509_san_dns:verifier.example',
    nonce: 'n-1',
    responseUri: 'https://verifier.example/response/1',
    jwkThumbprint: undefined,
    claimPaths: [
      [NS, 'family_name'],
      [NS, 'age_over_18'],
    ],
  }

  before(async () => {
    ;({ wallet, stored } = await holding())
  })

  const present = (misbehave: PresentationMisbehaviour[] = []) =>
    presentMdocCredential({
      ...base,
      credential: stored.credential,
      signer: wallet.deviceSigner(),
      misbehave,
    })

  test('the lists: disjoint, 1.0-only, each acting at an mdoc point of the tamper table', () => {
    assert.deepEqual(
      MDOC_PRESENTATION_MISBEHAVIOURS.filter((m) => !PRESENTATION_MISBEHAVIOURS.includes(m)),
      [],
    )
    const points: TamperPoint[] = ['mdoc.handover', 'mdoc.disclose', 'mdoc.tamper', 'mdoc.signer']
    for (const m of MDOC_PRESENTATION_MISBEHAVIOURS) {
      assert.ok(V1_ONLY_PRESENTATION_MISBEHAVIOURS.includes(m), m)
      assert.ok(
        points.some((p) => tamperOf([m]).acts(p)),
        m,
      )
    }
    const acting = PRESENTATION_MISBEHAVIOURS.filter((m) => points.some((p) => tamperOf([m]).acts(p)))
    assert.deepEqual([...acting].sort(), [...MDOC_PRESENTATION_MISBEHAVIOURS].sort())
  })

  test('the handover ones change one member of OpenID4VPHandover', async () => {
    const good = await present()
    assert.deepEqual(good.handover, {
      clientId: base.clientId,
      nonce: base.nonce,
      jwkThumbprint: undefined,
      responseUri: base.responseUri,
    })
    const changed = async (m: PresentationMisbehaviour) => {
      const bad = await present([m])
      assert.deepEqual(bad.disclosed, good.disclosed, m)
      return Object.keys(good.handover).filter(
        (k) =>
          good.handover[k as keyof typeof good.handover] !== bad.handover[k as keyof typeof bad.handover],
      )
    }
    assert.deepEqual(await changed('mdoc-wrong-nonce'), ['nonce'])
    assert.deepEqual(await changed('mdoc-wrong-client-id'), ['clientId'])
    assert.equal((await present(['mdoc-wrong-client-id'])).handover.clientId, 'verifier.example')
    assert.deepEqual(await changed('mdoc-wrong-response-uri'), ['responseUri'])
    assert.equal(
      (await present(['mdoc-wrong-response-uri'])).handover.responseUri,
      `${base.responseUri}${WRONG_RESPONSE_URI_SUFFIX}`,
    )
    assert.deepEqual(await changed('mdoc-foreign-device-key'), [])
  })

  test('the element ones change the disclosed items only', async () => {
    const good = await present()
    assert.deepEqual(good.disclosed, { [NS]: ['family_name', 'age_over_18'] })
    const extra = await present(['mdoc-extra-element'])
    assert.deepEqual(extra.extra, { namespace: NS, element: 'given_name' })
    assert.deepEqual(extra.disclosed, { [NS]: ['family_name', 'age_over_18', 'given_name'] })
    assert.deepEqual(extra.handover, good.handover)
    const tampered = await present(['mdoc-tampered-element'])
    assert.deepEqual(tampered.tampered, {
      namespace: NS,
      element: 'family_name',
      value: 'Lovelace (tampered)',
    })
    assert.deepEqual(tampered.disclosed, good.disclosed)
    // combined: the extra element is added, the first asked one tampered with
    const both = await present(['mdoc-extra-element', 'mdoc-tampered-element'])
    assert.equal(both.tampered?.element, 'family_name')
    assert.equal(both.extra?.element, 'given_name')
  })

  test('nothing to add, nothing to tamper with: WalletUsageError', async () => {
    const every = Object.keys(ELEMENTS).map((e) => [NS, e])
    await assert.rejects(
      presentMdocCredential({
        ...base,
        claimPaths: every,
        credential: stored.credential,
        signer: wallet.deviceSigner(),
        misbehave: ['mdoc-extra-element'],
      }),
      (e: Error) => e instanceof WalletUsageError && /none to add/.test(e.message),
    )
    await assert.rejects(
      presentMdocCredential({
        ...base,
        claimPaths: [],
        credential: stored.credential,
        signer: wallet.deviceSigner(),
        misbehave: ['mdoc-tampered-element'],
      }),
      (e: Error) => e instanceof WalletUsageError && /needs a disclosed element/.test(e.message),
    )
  })

  test('a claims path that is not [namespace, element] is a WalletUsageError', () => {
    assert.deepEqual(
      elementsOf([
        [NS, 'a'],
        [NS, 'b'],
        [NS, 'a'],
      ]),
      { [NS]: ['a', 'b'] },
    )
    assert.throws(() => elementsOf([[NS, 'address', 'street']]), WalletUsageError)
    assert.throws(() => elementsOf([[NS, null]]), WalletUsageError)
  })

  test('the device signer: ES256 for P-256, EdDSA for Ed25519; secp256k1 signs no mdoc', async () => {
    assert.equal(wallet.deviceSigner().alg, 'ES256')
    const ed = await Wallet.create({ keyType: 'Ed25519' })
    assert.equal(ed.deviceSigner().alg, 'EdDSA')
    const k1 = await Wallet.create({ keyType: 'secp256k1' })
    assert.throws(() => k1.deviceSigner(), /use a P-256 wallet/)
  })
})
