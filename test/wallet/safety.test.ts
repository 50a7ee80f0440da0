// The wallet's safety checks (src/wallet), one broken rule at a time, against a hostile stage on 127.0.0.1: a
// verifier whose request objects break one rule (foreign signature, client_id mismatch, no nonce, a reused
// nonce, expired, a response_uri on a foreign origin, an unknown client identifier prefix, a query nothing
// held satisfies, a format the wallet does not hold) and a draft-15 / 1.0 issuer whose metadata or
// credentials break one (another credential_issuer, a revoked credential, no c_nonce in the token answer).
// The careful wallet must refuse each (nothing posted, or access_denied); the careless one
// (WalletOptions.trustEverything) must not — which is what proves that each case catches a wallet that
// checks nothing. Then `Wallet.open`, the answered-nonce memory of a wallet file, and the CLI's `open` with
// its environment defaults. The service's own faults are tested end to end elsewhere.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { deflateSync } from 'node:zlib'
import { emptyBitstring, encodeList, STATUS_MESSAGES, setStatus } from '../../src/shared/bitstring.ts'
import { didKeyFromPublicKey, didOf, generateKeyPair, type JwsAlg } from '../../src/shared/did-key.ts'
import { decodeJws, signJws } from '../../src/shared/jws.ts'
import { issueSdJwtVc } from '../../src/shared/sd-jwt.ts'
import {
  PRE_AUTHORIZED_GRANT,
  REQUEST_OBJECT_MEDIA_TYPE,
  REQUEST_OBJECT_TYP,
  STATUS_LIST_JWT_MEDIA_TYPE,
  STATUS_LIST_JWT_TYP,
} from '../../src/shared/wire.ts'
import { certificatePem, generateTestCa, issueCertificate, x5cOf } from '../../src/shared/x509.ts'
import {
  IssuerMismatchError,
  linkKind,
  MAX_ANSWERED_NONCES,
  PresentationDeclinedError,
  type PresentationResult,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import { walletCli } from '../helpers.ts'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')

// --- the stage: one HTTP server playing verifier, issuer and status lists; a second port is "another origin" ---

interface Answer {
  status: number
  body: string | Record<string, unknown>
  contentType?: string
}
interface Call {
  method: string
  path: string
  form: Record<string, string> | undefined
  json: Record<string, unknown> | undefined
  /** which listener answered */
  port: number
}
type Handler = (call: Call) => Answer | Promise<Answer>

class Stage {
  readonly routes = new Map<string, Handler>()
  readonly calls: Call[] = []
  private readonly servers: Server[] = []
  origin = ''
  /** the same routes on another port of the same host: another origin (OpenID4VP 1.0 §5.9.3) */
  foreign = ''

  async start(): Promise<void> {
    const listen = async () => {
      const server = createServer((req, res) => this.handle(req, res))
      this.servers.push(server)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    }
    this.origin = await listen()
    this.foreign = await listen()
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => new Promise((resolve) => s.close(resolve))))
  }

  on(method: string, path: string, handler: Handler): string {
    this.routes.set(`${method} ${path}`, handler)
    return `${this.origin}${path}`
  }

  seen(method: string, prefix: string): Call[] {
    return this.calls.filter((c) => c.method === method && c.path.startsWith(prefix))
  }

  private async handle(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    let text = ''
    for await (const chunk of req) text += chunk
    const type = String(req.headers['content-type'] ?? '')
    const path = (req.url ?? '/').split('?')[0] as string
    const call: Call = {
      method: req.method ?? 'GET',
      path,
      form: type.includes('form') ? Object.fromEntries(new URLSearchParams(text)) : undefined,
      json: type.includes('json') && text ? JSON.parse(text) : undefined,
      port: req.socket.localPort ?? 0,
    }
    this.calls.push(call)
    const handler = this.routes.get(`${call.method} ${path}`)
    const answer: Answer = handler
      ? await handler(call)
      : { status: 404, body: { error: 'not_found', error_description: `${call.method} ${path}` } }
    const body = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body)
    res.writeHead(answer.status, { 'content-type': answer.contentType ?? 'application/json' })
    res.end(body)
  }
}

const stage = new Stage()
const tempDir = mkdtempSync(join(tmpdir(), 'wallet-safety-'))
let ca: Awaited<ReturnType<typeof generateTestCa>>
let caFile: string

before(async () => {
  await stage.start()
  ca = await generateTestCa({ name: 'CN=wallet-safety test CA' })
  caFile = join(tempDir, 'ca.pem')
  writeFileSync(caFile, certificatePem(ca.certificate))
})
after(async () => {
  await stage.close()
  rmSync(tempDir, { recursive: true, force: true })
})

// --- keys and credentials ----------------------------------------------------------------------------------------

interface Key {
  did: string
  kid: string
  alg: JwsAlg
  privateKey: ReturnType<typeof generateKeyPair>['privateKey']
  publicKey: ReturnType<typeof generateKeyPair>['publicKey']
}

function newKey(alg: JwsAlg = 'EdDSA'): Key {
  const pair = generateKeyPair(alg)
  const { did, kid } = didKeyFromPublicKey(pair.publicKey)
  return { did, kid, alg, ...pair }
}

const ISSUER = newKey()
const VERIFIER = newKey()
const NOW = () => Math.floor(Date.now() / 1000)

/** A jwt_vc_json credential for `holder`, optionally with a Bitstring status entry. */
function degree(holder: string, opts: { status?: { list: string; index: number }; exp?: number } = {}) {
  const iat = NOW() - 60
  return signJws(
    { alg: ISSUER.alg, typ: 'JWT', kid: ISSUER.kid },
    {
      iss: ISSUER.did,
      sub: holder,
      jti: `urn:uuid:${randomUUID()}`,
      nbf: iat,
      iat,
      ...(opts.exp !== undefined && { exp: opts.exp }),
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', 'UniversityDegreeCredential'],
        issuer: ISSUER.did,
        issuanceDate: new Date(iat * 1000).toISOString(),
        credentialSubject: { id: holder, degree: { type: 'BachelorDegree', name: 'Bachelor of Science' } },
        ...(opts.status && {
          credentialStatus: {
            id: `${opts.status.list}#${opts.status.index}`,
            type: 'BitstringStatusListEntry',
            statusPurpose: 'message',
            statusListIndex: String(opts.status.index),
            statusListCredential: opts.status.list,
            statusSize: 2,
            statusMessage: STATUS_MESSAGES,
          },
        }),
      },
    },
    ISSUER.privateKey,
  )
}

/** A Bitstring status list credential (JWT) signed by `signer`, with `revoked` entries set to 0x1. */
function bitstringList(url: string, revoked: number[], signer: Key = ISSUER): string {
  const bits = emptyBitstring(256)
  for (const index of revoked) setStatus(bits, index, 1)
  return signJws(
    { alg: signer.alg, typ: 'JWT', kid: signer.kid },
    {
      iss: signer.did,
      sub: `${url}#list`,
      iat: NOW(),
      vc: {
        '@context': ['https://www.w3.org/ns/credentials/v2'],
        type: ['VerifiableCredential', 'BitstringStatusListCredential'],
        issuer: signer.did,
        credentialSubject: {
          id: `${url}#list`,
          type: 'BitstringStatusList',
          statusPurpose: 'message',
          statusSize: 2,
          encodedList: encodeList(bits),
        },
      },
    },
    signer.privateKey,
  )
}

/** An IETF Token Status List token (1 bit per entry) signed by the issuer. */
function tokenStatusList(uri: string, revoked: number[]): string {
  const bytes = new Uint8Array(32)
  for (const index of revoked) bytes[index >> 3] = (bytes[index >> 3] as number) | (1 << (index & 7))
  return signJws(
    { alg: ISSUER.alg, typ: STATUS_LIST_JWT_TYP, kid: ISSUER.kid },
    { sub: uri, iat: NOW(), status_list: { bits: 1, lst: deflateSync(bytes).toString('base64url') } },
    ISSUER.privateKey,
  )
}

const PID_VCT = 'urn:example:pid'

/** A dc+sd-jwt PID bound to the wallet's key, optionally with a Token Status List entry. */
function pid(wallet: Wallet, status?: { uri: string; index: number }): Promise<string> {
  return issueSdJwtVc(
    {
      iss: ISSUER.did,
      vct: PID_VCT,
      iat: NOW() - 60,
      cnf: { jwk: wallet.publicJwk() },
      family_name: 'Hopper',
      given_name: 'Grace',
      ...(status && { status: { status_list: { idx: status.index, uri: status.uri } } }),
    },
    ['family_name', 'given_name'],
    { alg: ISSUER.alg, privateKey: ISSUER.privateKey, header: { kid: ISSUER.kid } },
  )
}

const ORIGIN = { credentialIssuer: 'https://issuer.example', configurationId: 'degree', status: 200 }

/** A wallet holding one degree (jwt_vc_json) and, with `sdJwt`, one PID (dc+sd-jwt). */
async function holding(
  opts: { careless?: boolean; file?: string; sdJwt?: boolean; trust?: boolean } = {},
): Promise<Wallet> {
  const wallet = await Wallet.create({
    ...(opts.file && { file: opts.file }),
    ...(opts.careless && { trustEverything: true }),
    ...(opts.trust && { trustAnchors: [certificatePem(ca.certificate)] }),
  })
  await wallet.accept([degree(wallet.did)], ORIGIN)
  if (opts.sdJwt) {
    await wallet.accept([await pid(wallet)], { ...ORIGIN, format: 'dc+sd-jwt', vct: PID_VCT })
  }
  return wallet
}

// --- the verifier: request objects by reference, answers recorded ------------------------------------------------

const DEGREE_TYPE = 'UniversityDegreeCredential'

/** A Presentation Exchange definition for the degree (as the reference service builds one, trimmed). */
function definition(type = DEGREE_TYPE, format?: Record<string, unknown>): Record<string, unknown> {
  return {
    id: randomUUID(),
    ...(format && { format }),
    input_descriptors: [
      {
        id: type,
        constraints: {
          fields: [{ path: ['$.vc.type[-1:]', '$.type[-1:]'], filter: { type: 'string', const: type } }],
        },
      },
    ],
  }
}

/** A DCQL query for the degree (jwt_vc_json) or the PID (dc+sd-jwt). */
function dcql(what: 'degree' | 'pid' | 'license' | 'pid-as-jwt' = 'degree'): Record<string, unknown> {
  const query =
    what === 'pid'
      ? {
          id: 'pid',
          format: 'dc+sd-jwt',
          meta: { vct_values: [PID_VCT] },
          claims: [{ path: ['family_name'] }],
        }
      : what === 'pid-as-jwt'
        ? // the PID's type asked in a format the wallet does not hold it in (format-not-offered)
          { id: 'pid', format: 'jwt_vc_json', meta: { type_values: [[PID_VCT]] } }
        : {
            id: what,
            format: 'jwt_vc_json',
            meta: {
              type_values: [['VerifiableCredential', what === 'degree' ? DEGREE_TYPE : 'DriversLicense']],
            },
          }
  return { credentials: [query] }
}

type Profile = 'pe' | '1.0'

interface Made {
  id: string
  link: string
  nonce: string
  responseUri: string
}

interface RequestSpec {
  profile: Profile
  /** payload members to add or replace (undefined removes) */
  payload?: Record<string, unknown>
  /** sign with this key under the verifier's kid (a foreign signature) */
  signWith?: Key
  /** the link's client_id, when it differs from the request object's */
  linkClientId?: string
  /** the client_id of both (default: the verifier's DID, or decentralized_identifier:<DID> for 1.0) */
  clientId?: string
  /** x509_san_dns: signed by a leaf of the test CA whose dNSName is 127.0.0.1 */
  x509?: boolean
  /** the response_uri on the foreign port */
  foreignResponse?: boolean
}

const leafPair = generateKeyPair('ES256')
let leafX5c: string[] | undefined
async function leafChain(): Promise<string[]> {
  leafX5c ??= x5cOf([
    await issueCertificate({
      issuer: ca,
      publicKey: leafPair.publicKey,
      dns: ['127.0.0.1'],
      subject: 'CN=verifier',
    }),
  ])
  return leafX5c
}

/** A signed request object served at /requests/<id>; answers to /responses/<id> are recorded (200 {}). */
async function request(spec: RequestSpec): Promise<Made> {
  const id = randomUUID()
  const responseUri = `${spec.foreignResponse ? stage.foreign : stage.origin}/responses/${id}`
  stage.on('POST', `/responses/${id}`, () => ({ status: 200, body: {} }))
  const clientId =
    spec.clientId ??
    (spec.x509
      ? 'x509_san_dns:127.0.0.1'
      : spec.profile === 'pe'
        ? VERIFIER.did
        : `decentralized_identifier:${VERIFIER.did}`)
  const nonce = `nonce-${randomUUID()}`
  const payload: Record<string, unknown> = {
    client_id: clientId,
    response_type: 'vp_token',
    response_mode: 'direct_post',
    response_uri: responseUri,
    nonce,
    state: `state-${id}`,
    iat: NOW(),
    exp: NOW() + 300,
    ...(spec.profile === 'pe'
      ? { client_id_scheme: 'did', presentation_definition: definition() }
      : { dcql_query: dcql() }),
  }
  for (const [key, value] of Object.entries(spec.payload ?? {})) {
    if (value === undefined) delete payload[key]
    else payload[key] = value
  }
  const jwt = spec.x509
    ? signJws(
        { alg: 'ES256', typ: REQUEST_OBJECT_TYP, x5c: await leafChain() } as never,
        payload,
        leafPair.privateKey,
      )
    : signJws(
        { alg: VERIFIER.alg, typ: REQUEST_OBJECT_TYP, kid: VERIFIER.kid },
        payload,
        (spec.signWith ?? VERIFIER).privateKey,
      )
  const requestUri = stage.on('GET', `/requests/${id}`, () => ({
    status: 200,
    body: jwt,
    contentType: REQUEST_OBJECT_MEDIA_TYPE,
  }))
  const link = `openid4vp://?${new URLSearchParams({ client_id: spec.linkClientId ?? clientId, request_uri: requestUri })}`
  return { id, link, nonce: typeof payload.nonce === 'string' ? payload.nonce : '', responseUri }
}

/** What reached /responses/<id> (either port). */
function answers(made: Made): Record<string, string>[] {
  return stage.calls.filter((c) => c.path === `/responses/${made.id}` && c.form).map((c) => c.form ?? {})
}

async function refused(promise: Promise<unknown>, description: RegExp): Promise<WalletProtocolError> {
  let caught: unknown
  await assert.rejects(promise, (error: unknown) => {
    caught = error
    return true
  })
  assert.ok(caught instanceof WalletProtocolError, `expected a WalletProtocolError, got ${String(caught)}`)
  assert.equal(caught.step, 'request', caught.message)
  assert.match(caught.errorDescription ?? '', description)
  return caught
}

// --- presentation faults ------------------------------------------------------------------------------------------

interface Fault {
  name: string
  profiles: Profile[]
  /** the request breaking the rule (`wallet` answered an earlier one, for nonce-reused) */
  make: (profile: Profile, wallet: Wallet) => Promise<Made>
  /** what the careful wallet's refusal names */
  rule: RegExp
}

const FAULTS: Fault[] = [
  {
    name: 'request-foreign-signature',
    profiles: ['pe', '1.0'],
    make: (profile) => request({ profile, signWith: newKey() }),
    rule: /signature/,
  },
  {
    name: 'client-id-mismatch',
    profiles: ['pe', '1.0'],
    make: (profile) => {
      const other = newKey().did
      return request({
        profile,
        linkClientId: profile === 'pe' ? other : `decentralized_identifier:${other}`,
      })
    },
    rule: /client_id of the link .* (differs from|must be identical)/,
  },
  {
    name: 'nonce-missing',
    profiles: ['pe', '1.0'],
    make: (profile) => request({ profile, payload: { nonce: undefined } }),
    rule: /no nonce \(OpenID4VP (1\.0 )?§5\.2/,
  },
  {
    name: 'nonce-reused',
    profiles: ['pe', '1.0'],
    make: async (profile, wallet) => {
      const first = await request({ profile })
      await wallet.open(first.link)
      return request({ profile, payload: { nonce: first.nonce } })
    },
    rule: /^nonce \(OpenID4VP 1\.0 §14\.1\): this wallet already answered/,
  },
  {
    name: 'request-expired',
    profiles: ['pe', '1.0'],
    make: (profile) => request({ profile, payload: { exp: NOW() - 60 } }),
    rule: /expired at .*RFC 7519 §4\.1\.4/,
  },
  {
    name: 'response-uri-foreign-origin (x509_san_dns: same host, another port)',
    profiles: ['1.0'],
    make: (profile) => request({ profile, x509: true, foreignResponse: true }),
    rule: /^x509_san_dns \(OpenID4VP 1\.0 §5\.9\.3\): response_uri .* is on the origin http:\/\/127\.0\.0\.1:\d+, not on/,
  },
  {
    name: 'unknown-client-id-prefix',
    profiles: ['1.0'],
    make: (profile) => request({ profile, clientId: `vc_harness_unknown:${VERIFIER.did}` }),
    rule: /unknown client identifier prefix vc_harness_unknown \(OpenID4VP 1\.0 §5\.9\.1/,
  },
]

describe('presentation faults: the careful wallet refuses, the careless one answers', {
  concurrency: true,
}, () => {
  for (const fault of FAULTS) {
    for (const profile of fault.profiles) {
      test(`${fault.name} (${profile === 'pe' ? 'draft 20, PE' : '1.0, DCQL'})`, async () => {
        const careful = await holding({ trust: true })
        const made = await fault.make(profile, careful)
        const before = stage.calls.length
        await refused(careful.open(made.link), fault.rule)
        assert.deepEqual(answers(made), [], 'nothing posted')
        if (fault.name === 'unknown-client-id-prefix') {
          assert.equal(stage.calls.length, before, 'refused before the request object was fetched')
        }
        const careless = await holding({ careless: true, trust: true })
        if (fault.name === 'nonce-reused') {
          await careless.open((await request({ profile, payload: { nonce: made.nonce } })).link)
        }
        const opened = await careless.open(made.link)
        assert.equal(opened.kind, 'presentation')
        assert.equal((opened.result as PresentationResult).status, 'verified')
        const [posted] = answers(made)
        assert.ok(posted?.vp_token, 'the careless wallet sent a vp_token')
      })
    }
  }

  test('response-uri-foreign-origin (redirect_uri: response_uri is not the client identifier)', async () => {
    const id = randomUUID()
    const own = `${stage.origin}/responses/${id}`
    const foreign = `${stage.foreign}/responses/${id}`
    stage.on('POST', `/responses/${id}`, () => ({ status: 200, body: {} }))
    const link = `openid4vp://?${new URLSearchParams({
      response_type: 'vp_token',
      client_id: `redirect_uri:${own}`,
      response_mode: 'direct_post',
      response_uri: foreign,
      nonce: `nonce-${id}`,
      state: 's',
      dcql_query: JSON.stringify(dcql()),
    })}`
    const made = { id, link, nonce: '', responseUri: foreign }
    await refused(
      (await holding()).open(link),
      /^redirect_uri \(OpenID4VP 1\.0 §5\.9\.3\): response_uri .* must be/,
    )
    assert.deepEqual(answers(made), [])
    await (await holding({ careless: true })).open(link)
    const [posted] = stage.calls.filter((c) => c.path === `/responses/${id}`)
    assert.equal(
      posted?.port,
      Number(new URL(stage.foreign).port),
      'the careless wallet answered the foreign origin',
    )
  })

  test('the same request on its own origin is answered (x509_san_dns, trust anchor)', async () => {
    const made = await request({ profile: '1.0', x509: true })
    const opened = await (await holding({ trust: true })).open(made.link)
    assert.equal((opened.result as PresentationResult).status, 'verified')
    assert.equal(answers(made).length, 1)
  })
})

describe('queries nothing held satisfies: access_denied, or the careless wallet presents anyway', {
  concurrency: true,
}, () => {
  const cases: { name: string; profile: Profile; payload: Record<string, unknown>; sdJwt?: boolean }[] = [
    {
      name: 'query-unsatisfiable',
      profile: 'pe',
      payload: { presentation_definition: definition('DriversLicense') },
    },
    { name: 'query-unsatisfiable', profile: '1.0', payload: { dcql_query: dcql('license') } },
    {
      name: 'format-not-offered (definition asks for ldp_vc / ldp_vp only)',
      profile: 'pe',
      payload: {
        presentation_definition: definition(DEGREE_TYPE, {
          ldp_vc: { proof_type: ['Ed25519Signature2018'] },
          ldp_vp: { proof_type: ['Ed25519Signature2018'] },
        }),
      },
    },
    {
      name: 'format-not-offered (the PID asked as jwt_vc_json, held as dc+sd-jwt)',
      profile: '1.0',
      payload: { dcql_query: dcql('pid-as-jwt') },
      sdJwt: true,
    },
  ]
  for (const c of cases) {
    test(`${c.name} (${c.profile})`, async () => {
      const made = await request({ profile: c.profile, payload: c.payload })
      let declined: unknown
      await assert.rejects((await holding({ sdJwt: c.sdJwt === true })).open(made.link), (e: unknown) => {
        declined = e
        return e instanceof PresentationDeclinedError && /^declined: answered access_denied/.test(e.message)
      })
      const result = (declined as PresentationDeclinedError).result
      assert.equal(result.status, 'rejected-by-wallet')
      assert.deepEqual(result.presented, [])
      const [posted] = answers(made)
      assert.equal(posted?.error, 'access_denied')
      assert.equal(posted?.vp_token, undefined)
      assert.match(posted?.error_description ?? '', /holds no credential for/)
      // present() keeps its default: refuse, send nothing
      const again = await request({ profile: c.profile, payload: c.payload })
      await assert.rejects((await holding({ sdJwt: c.sdJwt === true })).present(again.link), WalletUsageError)
      assert.deepEqual(answers(again), [])
      // the careless wallet presents the first credential it holds under every query id / descriptor
      const careless = await request({ profile: c.profile, payload: c.payload })
      const shown = await (await holding({ careless: true, sdJwt: c.sdJwt === true })).open(careless.link)
      assert.equal((shown.result as PresentationResult).status, 'verified')
      const [form] = answers(careless)
      assert.ok(form?.vp_token)
      if (c.profile === 'pe') {
        const submission = JSON.parse(form?.presentation_submission ?? '{}')
        const descriptors = (c.payload.presentation_definition as { input_descriptors: { id: string }[] })
          .input_descriptors
        assert.deepEqual(
          submission.descriptor_map.map((d: { id: string }) => d.id),
          descriptors.map((d) => d.id),
        )
      } else {
        const queries = (c.payload.dcql_query as { credentials: { id: string }[] }).credentials
        assert.deepEqual(
          Object.keys(JSON.parse(form?.vp_token ?? '{}')),
          queries.map((q) => q.id),
        )
      }
    })
  }
})

// --- the answered nonces, kept in the wallet file -----------------------------------------------------------------

describe('answered nonces: a reused one is refused across Wallet instances on one file', () => {
  for (const profile of ['pe', '1.0'] as const) {
    test(`${profile}: a second wallet on the same file refuses the nonce the first answered`, async () => {
      const file = join(tempDir, `nonces-${profile}.json`)
      const first = await holding({ file })
      const answered = await request({ profile })
      await first.open(answered.link)
      const saved = JSON.parse(readFileSync(file, 'utf8'))
      assert.deepEqual(saved.answeredNonces, [answered.nonce])
      const second = await Wallet.create({ file })
      const reused = await request({ profile, payload: { nonce: answered.nonce } })
      await refused(second.open(reused.link), /§14\.1/)
      assert.deepEqual(answers(reused), [])
      // a fresh nonce is answered, and remembered too
      await second.open((await request({ profile })).link)
      assert.equal(JSON.parse(readFileSync(file, 'utf8')).answeredNonces.length, 2)
    })
  }

  test('the newest 64 are kept; a misbehaviour that sends another nonce is not remembered', async () => {
    const file = join(tempDir, 'bounded.json')
    const wallet = await holding({ file })
    for (let i = 0; i < MAX_ANSWERED_NONCES + 6; i++) await wallet.rememberAnsweredNonce(`n-${i}`)
    const kept = JSON.parse(readFileSync(file, 'utf8')).answeredNonces as string[]
    assert.equal(kept.length, MAX_ANSWERED_NONCES)
    assert.equal(kept[0], 'n-6')
    assert.equal(await wallet.answeredNonce('n-5'), false)
    const made = await request({ profile: 'pe' })
    await wallet.present(made.link, { misbehave: ['vp-wrong-nonce'] })
    assert.equal(await wallet.answeredNonce(made.nonce), false)
  })
})

// --- receipt: a draft-15 / 1.0 issuer on the stage --------------------------------------------------------------

interface IssuerSpec {
  /** 1.0-shaped metadata (credential_metadata), else draft 15 */
  v1?: boolean
  /** the metadata's credential_issuer differs from the offer's */
  mismatch?: boolean
  /** the token answer's c_nonce (default a valid one); null: none */
  tokenNonce?: 'valid' | 'stale' | null
  /** the credential's status entry is revoked */
  revoked?: boolean
}

interface Issuer {
  link: string
  /** the path of its endpoints */
  base: string
  /** the proofs' nonces, in order (undefined: a proof without nonce) */
  proofNonces: (string | undefined)[]
  notifications: Record<string, unknown>[]
  tokenRequests: number
}

/** A pre-authorized issuer: metadata, token, nonce, credential (nonce required), notification, status list. */
function issuer(spec: IssuerSpec = {}): Issuer {
  const id = randomUUID().slice(0, 8)
  const base = `/issuers/${id}`
  const credentialIssuer = `${stage.origin}${base}`
  const nonces = new Set<string>()
  const fresh = () => {
    const n = randomUUID()
    nonces.add(n)
    return n
  }
  const state: Issuer = { link: '', base, proofNonces: [], notifications: [], tokenRequests: 0 }
  const list = `${stage.origin}${base}/status`
  stage.on('GET', `${base}/status`, () => ({
    status: 200,
    body: bitstringList(list, spec.revoked ? [3] : []),
    contentType: 'application/vc+jwt',
  }))
  const metadata = {
    credential_issuer: spec.mismatch ? `${stage.origin}/issuers/someone-else` : credentialIssuer,
    credential_endpoint: `${credentialIssuer}/credential`,
    token_endpoint: `${credentialIssuer}/token`,
    nonce_endpoint: `${credentialIssuer}/nonce`,
    notification_endpoint: `${credentialIssuer}/notification`,
    credential_configurations_supported: {
      degree: {
        format: 'jwt_vc_json',
        cryptographic_binding_methods_supported: ['did:key'],
        proof_types_supported: { jwt: { proof_signing_alg_values_supported: ['EdDSA', 'ES256', 'ES256K'] } },
        credential_definition: { type: ['VerifiableCredential', DEGREE_TYPE] },
        ...(spec.v1 && { credential_metadata: { display: [{ name: 'Degree' }] } }),
      },
    },
  }
  const as = {
    issuer: credentialIssuer,
    token_endpoint: `${credentialIssuer}/token`,
    'pre-authorized_grant_anonymous_access_supported': true,
  }
  for (const path of [
    `/.well-known/openid-credential-issuer${base}`,
    `${base}/.well-known/openid-credential-issuer`,
  ]) {
    stage.on('GET', path, () => ({ status: 200, body: metadata }))
  }
  for (const path of [
    `/.well-known/oauth-authorization-server${base}`,
    `${base}/.well-known/oauth-authorization-server`,
  ]) {
    stage.on('GET', path, () => ({ status: 200, body: as }))
  }
  stage.on('POST', `${base}/token`, () => {
    state.tokenRequests++
    const tokenNonce = spec.tokenNonce === undefined ? 'valid' : spec.tokenNonce
    return {
      status: 200,
      body: {
        access_token: `at-${id}`,
        token_type: 'Bearer',
        expires_in: 300,
        ...(tokenNonce === 'valid' && { c_nonce: fresh(), c_nonce_expires_in: 300 }),
        ...(tokenNonce === 'stale' && { c_nonce: 'stale-nonce', c_nonce_expires_in: 300 }),
      },
    }
  })
  stage.on('POST', `${base}/nonce`, () => ({ status: 200, body: { c_nonce: fresh() } }))
  stage.on('POST', `${base}/credential`, (call) => {
    const body = call.json ?? {}
    const proofs = body.proofs as { jwt?: string[] } | undefined
    const jwt = proofs?.jwt?.[0] ?? (body.proof as { jwt?: string } | undefined)?.jwt
    const proof = decodeJws(String(jwt))
    const nonce = proof.payload.nonce as string | undefined
    state.proofNonces.push(nonce)
    if (nonce === undefined || !nonces.delete(nonce)) {
      return {
        status: 400,
        body: { error: 'invalid_nonce', error_description: 'a fresh nonce is required', c_nonce: fresh() },
      }
    }
    const holder = didOf(String(proof.header.kid))
    return {
      status: 200,
      body: {
        credentials: [
          { credential: degree(holder, spec.revoked !== undefined ? { status: { list, index: 3 } } : {}) },
        ],
        notification_id: `n-${id}`,
      },
    }
  })
  stage.on('POST', `${base}/notification`, (call) => {
    state.notifications.push(call.json ?? {})
    return { status: 204, body: '' }
  })
  const offer = {
    credential_issuer: credentialIssuer,
    credential_configuration_ids: ['degree'],
    grants: { [PRE_AUTHORIZED_GRANT]: { 'pre-authorized_code': `code-${id}` } },
  }
  const offerUri = stage.on('GET', `${base}/offer`, () => ({ status: 200, body: offer }))
  state.link = `openid-credential-offer://?credential_offer_uri=${encodeURIComponent(offerUri)}`
  return state
}

describe('receipt: the careful wallet refuses, the careless one takes it', { concurrency: true }, () => {
  for (const v1 of [false, true]) {
    test(`metadata-issuer-mismatch (${v1 ? '1.0' : 'draft 15'} metadata): refused before the code is redeemed`, async () => {
      const careful = issuer({ v1, mismatch: true })
      const wallet = await Wallet.create()
      await assert.rejects(wallet.open(careful.link), (e: unknown) => {
        assert.ok(e instanceof IssuerMismatchError, String(e))
        assert.equal(e.step, 'metadata')
        assert.match(
          e.errorDescription ?? '',
          /^credential_issuer \(OpenID4VCI 1\.0 §12\.2\.2\): .* MUST NOT be used/,
        )
        return true
      })
      assert.equal(careful.tokenRequests, 0)
      const careless = issuer({ v1, mismatch: true })
      const result = await (await Wallet.create({ trustEverything: true })).open(careless.link)
      assert.equal(careless.tokenRequests, 1, 'the careless wallet redeemed the code')
      assert.equal(result.kind, 'issuance')
    })
  }

  test('credential-revoked: the status list is read at receipt; refused with credential_failure', async () => {
    const revoked = issuer({ revoked: true })
    const wallet = await Wallet.create()
    await assert.rejects(wallet.open(revoked.link), (e: unknown) => {
      assert.ok(e instanceof WalletProtocolError, String(e))
      assert.equal(e.step, 'verify')
      assert.equal(e.error, 'credential_revoked')
      assert.match(e.errorDescription ?? '', /Bitstring Status List v1\.0 §3\.2\): the credential is revoked/)
      return true
    })
    assert.deepEqual(wallet.credentials(), [])
    assert.deepEqual(
      revoked.notifications.map((n) => n.event),
      ['credential_failure'],
    )
    // an active entry is read and accepted
    const active = issuer({ revoked: false })
    await wallet.open(active.link)
    assert.equal(wallet.credentials().length, 1)
    assert.deepEqual(
      active.notifications.map((n) => n.event),
      ['credential_accepted'],
    )
    assert.equal(stage.seen('GET', `${active.base}/status`).length, 1, 'its status list read once')
    // the careless wallet stores the revoked one and says it accepted it
    const careless = issuer({ revoked: true })
    const taken = await Wallet.create({ trustEverything: true })
    await taken.open(careless.link)
    assert.equal(taken.credentials().length, 1)
    assert.deepEqual(
      careless.notifications.map((n) => n.event),
      ['credential_accepted'],
    )
  })

  test('token-without-c-nonce (draft 15): the nonce endpoint; the careless wallet sends no nonce and gives up', async () => {
    const careful = issuer({ tokenNonce: null })
    const wallet = await Wallet.create()
    const opened = await wallet.open(careful.link)
    assert.equal(opened.kind, 'issuance')
    assert.equal(careful.proofNonces.length, 1)
    assert.ok(careful.proofNonces[0], 'a nonce from the nonce endpoint')
    assert.equal(stage.seen('POST', `${careful.base}/nonce`).length, 1)
    const careless = issuer({ tokenNonce: null })
    await assert.rejects(
      (await Wallet.create({ trustEverything: true })).open(careless.link),
      (e: unknown) => {
        assert.ok(e instanceof WalletProtocolError && e.error === 'invalid_nonce', String(e))
        return true
      },
    )
    assert.deepEqual(careless.proofNonces, [undefined], 'one proof, without nonce, no retry')
  })

  test("invalid_nonce with a c_nonce: retried once with the error's nonce", async () => {
    const stale = issuer({ tokenNonce: 'stale' })
    const wallet = await Wallet.create()
    await wallet.open(stale.link)
    assert.equal(stale.proofNonces.length, 2)
    assert.equal(stale.proofNonces[0], 'stale-nonce')
    assert.equal(wallet.credentials().length, 1)
  })

  test('dc+sd-jwt: a revoked Token Status List entry is refused at receipt; unreadable lists too', async () => {
    const uri = stage.on('GET', `/token-status/${randomUUID()}`, () => ({
      status: 200,
      body: tokenStatusList(`${stage.origin}${new URL(uri).pathname}`, [5]),
      contentType: STATUS_LIST_JWT_MEDIA_TYPE,
    }))
    const wallet = await Wallet.create()
    const sdOrigin = { ...ORIGIN, format: 'dc+sd-jwt', vct: PID_VCT, checkStatus: true }
    await assert.rejects(wallet.accept([await pid(wallet, { uri, index: 5 })], sdOrigin), (e: unknown) => {
      assert.ok(e instanceof WalletProtocolError, String(e))
      assert.equal(e.error, 'credential_revoked')
      assert.match(e.errorDescription ?? '', /Token Status List .*INVALID \(revoked\)/)
      return true
    })
    await wallet.accept([await pid(wallet, { uri, index: 4 })], sdOrigin)
    assert.equal(wallet.credentials().length, 1)
    const missing = `${stage.origin}/token-status/none`
    await assert.rejects(
      wallet.accept([await pid(wallet, { uri: missing, index: 4 })], sdOrigin),
      (e: unknown) => {
        assert.ok(e instanceof WalletProtocolError && e.error === 'invalid_credential', String(e))
        assert.match(e.errorDescription ?? '', /answered HTTP 404, so the status is unknown/)
        return true
      },
    )
    // a list signed by someone else than the issuer leaves the status unknown
    const forged = stage.on('GET', `/status/${randomUUID()}`, () => ({
      status: 200,
      body: bitstringList(forged, [], newKey()),
      contentType: 'application/vc+jwt',
    }))
    await assert.rejects(
      wallet.accept([degree(wallet.did, { status: { list: forged, index: 1 } })], {
        ...ORIGIN,
        checkStatus: true,
      }),
      /is signed by did:key:\S+, not by the credential's issuer/,
    )
    // Wallet.accept without checkStatus (planting a credential) reads no list
    await wallet.accept([await pid(wallet, { uri, index: 5 })], { ...sdOrigin, checkStatus: false })
  })
})

// --- Wallet.open, the CLI's open, and the environment defaults ---------------------------------------------------

describe('wallet open: routing by link, CLI, environment defaults', () => {
  test('linkKind: offer or request parameters, any scheme; both or neither is a usage error', () => {
    const offer = 'credential_offer_uri=https%3A%2F%2Fi.example%2Fo'
    assert.equal(linkKind(`openid-credential-offer://?${offer}`), 'issuance')
    assert.equal(linkKind(`haip://?${offer}`), 'issuance')
    assert.equal(linkKind('https://wallet.example/offer?credential_offer=%7B%7D'), 'issuance')
    for (const scheme of ['openid-vp', 'openid4vp', 'haip', 'https']) {
      assert.equal(
        linkKind(`${scheme}://x/?client_id=did%3Akey%3Az&request_uri=https%3A%2F%2Fv.example%2Fr`),
        'presentation',
      )
    }
    assert.equal(linkKind('openid4vp://?response_type=vp_token&dcql_query=%7B%7D'), 'presentation')
    assert.throws(() => linkKind(`openid4vp://?${offer}&request_uri=x`), WalletUsageError)
    assert.throws(
      () => linkKind('openid4vp://?foo=bar'),
      /neither a credential offer .* nor an authorization request/,
    )
    assert.throws(() => linkKind('not a link'), WalletUsageError)
  })

  test('VC_HARNESS_WALLET and VC_HARNESS_TRUST_ANCHOR stand in for --wallet and --trust-anchor', async () => {
    const file = join(tempDir, 'env-wallet.json')
    const saved = { ...process.env }
    try {
      process.env.VC_HARNESS_WALLET = file
      process.env.VC_HARNESS_TRUST_ANCHOR = ['', caFile].join(delimiter)
      // receive into the file through open (an issuance link)
      const received = await walletCli(['open', issuer().link])
      assert.equal(received.error, undefined, String(received.error))
      const issued = JSON.parse(received.out)
      assert.equal(issued.kind, 'issuance')
      assert.equal(issued.status, 'issued')
      // list reads the same file
      const listed = JSON.parse((await walletCli(['list'])).out)
      assert.equal(listed.holder.did, issued.holder)
      assert.equal(listed.credentials.length, 1)
      // present with it: the trust anchor comes from the environment (x509_san_dns request answered)
      const made = await request({ profile: '1.0', x509: true })
      const shown = await walletCli(['open', made.link])
      assert.equal(shown.error, undefined, String(shown.error))
      assert.equal(JSON.parse(shown.out).status, 'verified')
      // refused: JSON outcome, then the error (exit code 1)
      const foreign = await request({ profile: '1.0', x509: true, foreignResponse: true })
      const refusal = await walletCli(['open', foreign.link])
      assert.match(refusal.error?.message ?? '', /x509_san_dns \(OpenID4VP 1\.0 §5\.9\.3\)/)
      assert.equal(refusal.error?.code, undefined, 'not a usage error')
      assert.deepEqual(
        (({ kind, status, step, error }) => ({ kind, status, step, error }))(JSON.parse(refusal.out)),
        { kind: 'presentation', status: 'failed', step: 'request', error: 'invalid_request' },
      )
      // declined (nothing held satisfies the query): JSON outcome with the answer, then exit code 1
      const unsatisfied = await request({
        profile: 'pe',
        payload: { presentation_definition: definition('DriversLicense') },
      })
      const declined = await walletCli(['open', unsatisfied.link])
      assert.match(
        declined.error?.message ?? '',
        /^declined: answered access_denied \(the wallet holds no credential for/,
      )
      assert.equal(JSON.parse(declined.out).status, 'rejected-by-wallet')
      assert.equal(JSON.parse(declined.out).error, 'access_denied')
      // an unreadable anchor in the environment is an argument error naming the variable
      process.env.VC_HARNESS_TRUST_ANCHOR = join(tempDir, 'missing.pem')
      const bad = await walletCli(['open', made.link])
      assert.match(bad.error?.code ?? '', /^ERR_PARSE_ARGS/)
      assert.match(bad.error?.message ?? '', /^VC_HARNESS_TRUST_ANCHOR: cannot read /)
    } finally {
      process.env = saved
    }
  })

  test('open: argument errors are usage errors (exit code 2)', async () => {
    const usage = /^ERR_PARSE_ARGS/
    const none = await walletCli(['open'])
    assert.match(none.error?.code ?? '', usage)
    const neither = await walletCli(['open', 'openid4vp://?foo=bar'])
    assert.match(neither.error?.code ?? '', usage)
    const wrongFlow = await walletCli(['open', issuer().link, '--misbehave', 'vp-wrong-nonce'])
    assert.match(wrongFlow.error?.code ?? '', usage)
    assert.match(wrongFlow.error?.message ?? '', /not an issuance misbehaviour/)
    const help = await walletCli(['--help'])
    assert.match(help.out, /open <link>/)
    assert.match(help.out, /VC_HARNESS_WALLET/)
    assert.match(help.out, /VC_HARNESS_TRUST_ANCHOR/)
  })

  test('a child process: exit code 0 for a presentation, 1 for a refusal (the link as one argument)', async () => {
    const file = join(tempDir, 'child.json')
    await holding({ file })
    const run = (link: string) =>
      new Promise<{ code: number; stdout: string }>((resolve) => {
        execFile(
          process.execPath,
          [join(ROOT, 'bin/vc-harness.mjs'), 'wallet', 'open', link],
          { cwd: ROOT, timeout: 30_000, env: { ...process.env, VC_HARNESS_WALLET: file } },
          (error, stdout) => resolve({ code: error ? Number(error.code ?? -1) : 0, stdout }),
        )
      })
    const [ok, bad] = await Promise.all([
      run((await request({ profile: 'pe' })).link),
      run((await request({ profile: '1.0', payload: { nonce: undefined } })).link),
    ])
    assert.equal(ok.code, 0, ok.stdout)
    assert.equal(JSON.parse(ok.stdout).status, 'verified')
    assert.equal(bad.code, 1, bad.stdout)
    assert.equal(JSON.parse(bad.stdout).status, 'failed')
  })
})
