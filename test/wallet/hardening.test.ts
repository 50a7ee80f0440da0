// The simulated wallet against hostile peers (issue 30): every HTTP request bounded (deadline, body cap, no
// redirects; src/wallet/http.ts), nothing shared with an issuer unless the holder said what may be
// (src/wallet/share.ts), and no Presentation Exchange definition evaluated whose field paths are not plain
// member/index JSONPath (src/shared/json-path.ts). The peers are small local servers (node:http, node:net),
// so what the wallet read, sent and was redirected to is counted on the peer's side.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createServer as createNetServer, type Socket } from 'node:net'
import { after, describe, test } from 'node:test'
import { didKeyFromPublicKey, generateKeyPair, type JwsAlg } from '../../src/shared/did-key.ts'
import { definitionPathProblem, plainJsonPathProblem } from '../../src/shared/json-path.ts'
import { signJws } from '../../src/shared/jws.ts'
import {
  AUTHORIZATION_REQUEST_SCHEME,
  CREDENTIAL_OFFER_SCHEME,
  PRE_AUTHORIZED_GRANT,
  REQUEST_OBJECT_MEDIA_TYPE,
  REQUEST_OBJECT_TYP,
  SIOP_AUDIENCE,
} from '../../src/shared/wire.ts'
import {
  DEFAULT_HTTP_LIMITS,
  type IssuanceProtocol,
  ShareNotAllowedError,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'
import { walletCli } from '../helpers.ts'

const NOW = Math.floor(Date.now() / 1000)
const MiB = 1024 * 1024

// --- keys and credentials ---------------------------------------------------------------------------------------

interface Key {
  did: string
  kid: string
  alg: JwsAlg
  privateKey: ReturnType<typeof generateKeyPair>['privateKey']
}

function newKey(): Key {
  const pair = generateKeyPair('EdDSA')
  const { did, kid } = didKeyFromPublicKey(pair.publicKey)
  return { did, kid, alg: 'EdDSA', privateKey: pair.privateKey }
}

const ISSUER_A = newKey()
const ISSUER_B = newKey()
const VERIFIER = newKey()

/** A jwt_vc_json credential of `type` signed by `issuer` for `subject`. */
function credential(subject: string, type: string, issuer: Key): string {
  return signJws(
    { alg: issuer.alg, typ: 'JWT', kid: issuer.kid },
    {
      iss: issuer.did,
      sub: subject,
      jti: `urn:uuid:${randomUUID()}`,
      nbf: NOW - 60,
      iat: NOW - 60,
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', type],
        issuer: issuer.did,
        issuanceDate: new Date((NOW - 60) * 1000).toISOString(),
        credentialSubject: { id: subject, familyName: 'Lovelace', degree: { name: 'BSc' } },
      },
    },
    issuer.privateKey,
  )
}

/** A wallet holding a VerifiableId of issuer A and a degree of issuer B (an ordinary QA wallet file). */
async function holderOfTwo(options: Parameters<typeof Wallet.create>[0] = {}) {
  const wallet = await Wallet.create(options)
  const origin = { credentialIssuer: 'https://a.example', configurationId: 'id', status: 200 }
  const [id] = await wallet.accept([credential(wallet.did, 'VerifiableId', ISSUER_A)], origin)
  const [degree] = await wallet.accept([credential(wallet.did, 'UniversityDegreeCredential', ISSUER_B)], {
    ...origin,
    credentialIssuer: 'https://b.example',
  })
  return { wallet, id: id?.credential as string, degree: degree?.credential as string }
}

/** A Presentation Exchange definition asking for one credential type (`paths` replaces the type check). */
function definitionFor(type: string, paths?: string[]) {
  return {
    id: `def-${randomUUID()}`,
    input_descriptors: [
      {
        id: `${type}-0`,
        format: { jwt_vc_json: { alg: ['EdDSA'] }, jwt_vc: { alg: ['EdDSA'] } },
        constraints: {
          fields: [
            paths
              ? { path: paths, filter: { type: 'string' } }
              : { path: ['$.vc.type[-1:]', '$.type[-1:]'], filter: { type: 'string', const: type } },
          ],
        },
      },
    ],
  }
}

// --- local peers ------------------------------------------------------------------------------------------------

const closers: (() => Promise<void>)[] = []
after(async () => {
  await Promise.all(closers.map((close) => close()))
})

interface Peer {
  url: string
  origin: string
  /** `METHOD path` of every request, with its body */
  log: { method: string; path: string; body: string }[]
}

/** An HTTP server on 127.0.0.1 answering with `handle`, recording every request; closed after the file. */
async function peer(
  handle: (req: IncomingMessage, res: ServerResponse, body: string, self: Peer) => void,
): Promise<Peer> {
  const self: Peer = { url: '', origin: '', log: [] }
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString()
      self.log.push({ method: req.method ?? 'GET', path: req.url ?? '/', body })
      handle(req, res, body, self)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  self.origin = `http://127.0.0.1:${port}`
  self.url = self.origin
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return self
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

/**
 * A server that answers every request with `total` bytes of `contentType`, chunked (no content-length), in
 * 64 KiB writes that wait for the socket to drain; `sent` resolves with the bytes written once the
 * connection closes.
 */
async function firehose(total: number, contentType: string) {
  let sent = 0
  let done: (bytes: number) => void = () => {}
  const closed = new Promise<number>((resolve) => {
    done = resolve
  })
  const chunk = Buffer.alloc(64 * 1024, 0x61)
  const p = await peer((_req, res) => {
    res.writeHead(200, { 'content-type': contentType })
    res.on('close', () => done(sent))
    const pump = () => {
      while (sent < total && !res.destroyed) {
        sent += chunk.length
        if (!res.write(chunk)) {
          res.once('drain', pump)
          return
        }
      }
      res.end()
    }
    pump()
  })
  return { ...p, closed }
}

/** A TCP server that accepts every connection and never answers. */
async function silentPeer(): Promise<{ url: string; connections: () => number }> {
  const sockets: Socket[] = []
  const server = createNetServer((socket) => {
    sockets.push(socket)
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  closers.push(
    () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  )
  return { url: `http://127.0.0.1:${port}`, connections: () => sockets.length }
}

/** A draft-20 (Presentation Exchange) link whose request object is at `requestUri`. */
function peLink(requestUri: string, clientId = VERIFIER.did): string {
  return `${AUTHORIZATION_REQUEST_SCHEME}://?${new URLSearchParams({ client_id: clientId, request_uri: requestUri })}`
}

/** An OpenID4VP 1.0 link (decentralized_identifier prefix) whose request object is at `requestUri`. */
function v1Link(requestUri: string): string {
  return `openid4vp://?${new URLSearchParams({ client_id: `decentralized_identifier:${VERIFIER.did}`, request_uri: requestUri })}`
}

/** A signed draft-20 request object asking with `definition`, answered to `responseUri`. */
function requestObject(definition: unknown, responseUri: string): string {
  return signJws(
    { alg: VERIFIER.alg, typ: REQUEST_OBJECT_TYP, kid: VERIFIER.kid },
    {
      iss: VERIFIER.did,
      aud: SIOP_AUDIENCE,
      client_id: VERIFIER.did,
      response_type: 'vp_token',
      response_mode: 'direct_post',
      response_uri: responseUri,
      nonce: `nonce-${randomUUID()}`,
      state: `state-${randomUUID()}`,
      presentation_definition: definition,
      iat: NOW,
      exp: NOW + 600,
    },
    VERIFIER.privateKey,
  )
}

/** A pre-authorized credential offer by value for `issuer` (and the definition an issuer may ask with). */
function offerLink(issuer: string, extra: Record<string, unknown> = {}): string {
  const offer = {
    credential_issuer: issuer,
    credential_configuration_ids: ['degree'],
    grants: { [PRE_AUTHORIZED_GRANT]: { 'pre-authorized_code': `code-${randomUUID()}` } },
    ...extra,
  }
  return `${CREDENTIAL_OFFER_SCHEME}://?credential_offer=${encodeURIComponent(JSON.stringify(offer))}`
}

type Redirected = 'metadata' | 'token' | 'credential'

/**
 * A small pre-authorized issuer at an origin root: draft-15 metadata (or 1.0, a configuration with
 * credential_metadata), AS metadata at oauth-authorization-server, a token with c_nonce, a nonce endpoint,
 * and a credential endpoint that refuses every proof (400 invalid_proof) — or a 302 to `redirectTo` on the
 * step named by `redirect`.
 */
async function fakeIssuer(opts: { v1?: boolean; redirect?: Redirected; redirectTo?: string } = {}) {
  return peer((req, res, _body, self) => {
    const path = (req.url ?? '/').split('?')[0]
    const step: Redirected | undefined =
      path === '/.well-known/openid-credential-issuer'
        ? 'metadata'
        : path === '/token'
          ? 'token'
          : path === '/credential'
            ? 'credential'
            : undefined
    if (step && step === opts.redirect) {
      res.writeHead(302, { location: `${opts.redirectTo}/stolen-${step}` }).end()
      return
    }
    if (path === '/.well-known/openid-credential-issuer') {
      json(res, 200, {
        credential_issuer: self.url,
        credential_endpoint: `${self.url}/credential`,
        nonce_endpoint: `${self.url}/nonce`,
        credential_configurations_supported: {
          degree: {
            format: 'jwt_vc_json',
            credential_definition: { type: ['VerifiableCredential', 'UniversityDegreeCredential'] },
            cryptographic_binding_methods_supported: ['did:key'],
            proof_types_supported: {
              jwt: { proof_signing_alg_values_supported: ['EdDSA', 'ES256', 'ES256K'] },
              di_vp: { proof_signing_alg_values_supported: ['eddsa-rdfc-2022'] },
            },
            ...(opts.v1 && { credential_metadata: { display: [{ name: 'Degree' }] } }),
          },
        },
      })
    } else if (path === '/.well-known/oauth-authorization-server') {
      json(res, 200, {
        issuer: self.url,
        token_endpoint: `${self.url}/token`,
        'pre-authorized_grant_anonymous_access_supported': true,
      })
    } else if (path === '/token') {
      json(res, 200, {
        access_token: `at-${randomUUID()}`,
        token_type: 'Bearer',
        expires_in: 300,
        c_nonce: 'n-1',
      })
    } else if (path === '/nonce') {
      json(res, 200, { c_nonce: `n-${randomUUID()}` })
    } else if (path === '/credential') {
      json(res, 400, { error: 'invalid_proof', error_description: 'this test issuer refuses every proof' })
    } else {
      json(res, 404, { error: 'not_found', error_description: `no ${path}` })
    }
  })
}

/** Asserts a WalletProtocolError with these fields (description: a pattern). */
async function rejectsWith(
  promise: Promise<unknown>,
  expected: { step: string; status?: number; error: string; description: RegExp },
): Promise<WalletProtocolError> {
  let caught: unknown
  try {
    await promise
  } catch (error) {
    caught = error
  }
  assert.ok(caught instanceof WalletProtocolError, `expected a WalletProtocolError, got ${String(caught)}`)
  assert.equal(caught.step, expected.step, caught.message)
  if (expected.status !== undefined) assert.equal(caught.status, expected.status, caught.message)
  assert.equal(caught.error, expected.error, caught.message)
  assert.match(caught.errorDescription ?? '', expected.description)
  return caught
}

// --- 1. every HTTP request bounded ------------------------------------------------------------------------------

/** A wallet without a deadline would wait forever on a silent peer: the test fails instead of hanging. */
const BOUNDED = { timeout: 20_000 }

describe('HTTP: a body cap, a deadline and no redirects on every request of the wallet', () => {
  test('the defaults: 30 s per request, 1 MiB per answer', () => {
    assert.deepEqual(DEFAULT_HTTP_LIMITS, { timeoutMs: 30_000, maxBodyBytes: MiB })
  })

  // Loopback socket buffers (the server's send buffer and the wallet's receive buffer) hold a few MiB that
  // the server counts as sent although the wallet never read them (about 3 MiB here); 8 MiB is far below 128 MiB.
  const KERNEL_MARGIN = 8 * MiB

  for (const transport of ['undici', 'fetch'] as const) {
    test(`a 128 MiB request object (draft 20, ${transport}): refused after at most the 1 MiB cap, the connection closed`, async () => {
      const hose = await firehose(128 * MiB, REQUEST_OBJECT_MEDIA_TYPE)
      const wallet = await Wallet.create(transport === 'fetch' ? { fetch: globalThis.fetch } : {})
      const rssBefore = process.memoryUsage().rss
      const e = await rejectsWith(wallet.present(peLink(`${hose.url}/request/1`)), {
        step: 'request',
        status: 0,
        error: 'response_too_large',
        description: new RegExp(
          `^GET ${hose.origin}: the answer's body is larger than 1048576 bytes, the wallet's cap for one answer \\(WalletOptions\\.http\\.maxBodyBytes, CLI --http-max-body\\): it sent more than that; the wallet stopped reading after \\d+ bytes`,
        ),
      })
      assert.ok(!(e.errorDescription ?? '').includes('/request/1'), 'the origin only, not the path')
      const sent = await hose.closed
      assert.ok(sent <= MiB + KERNEL_MARGIN, `the verifier wrote ${sent} bytes before the wallet hung up`)
      const grown = process.memoryUsage().rss - rssBefore
      assert.ok(grown < 64 * MiB, `RSS grew ${Math.round(grown / MiB)} MiB`)
    })
  }

  test(
    'a request object that declares 128 MiB (content-length, OpenID4VP 1.0 link): nothing of it is read',
    BOUNDED,
    async () => {
      const big = await peer((_req, res) => {
        res.writeHead(200, { 'content-type': REQUEST_OBJECT_MEDIA_TYPE, 'content-length': String(128 * MiB) })
        res.write('eyJ') // the rest never comes: the wallet must not wait for it
      })
      const wallet = await Wallet.create({ http: { timeoutMs: 5_000 } })
      await rejectsWith(wallet.present(v1Link(`${big.url}/request/2`)), {
        step: 'request',
        error: 'response_too_large',
        description: /it declares a body of 134217728 bytes \(content-length\); nothing of it was read$/,
      })
    },
  )

  test(
    'a verifier that accepts the connection and never answers: given up after the configured 1 s',
    BOUNDED,
    async () => {
      const silent = await silentPeer()
      const wallet = await Wallet.create({ http: { timeoutMs: 1_000 } })
      for (const link of [peLink(`${silent.url}/request/3`), v1Link(`${silent.url}/request/4`)]) {
        const started = Date.now()
        await rejectsWith(wallet.present(link), {
          step: 'request',
          status: 0,
          error: 'timeout',
          description: new RegExp(
            `^GET ${silent.url} gave no complete answer within 1000 ms, the wallet's deadline for one request \\(connect, headers and body; WalletOptions\\.http\\.timeoutMs, CLI --http-timeout\\)$`,
          ),
        })
        const took = Date.now() - started
        assert.ok(took >= 950 && took < 4_000, `gave up after ${took} ms`)
      }
      assert.ok(silent.connections() >= 2, 'each request reached the silent verifier')
    },
  )

  test(
    'a silent issuer: the offer by reference (wallet) and the 1.0 metadata (library, bounded fetch) time out',
    BOUNDED,
    async () => {
      const silent = await silentPeer()
      const wallet = await Wallet.create({ http: { timeoutMs: 1_000 } })
      const byReference = `${CREDENTIAL_OFFER_SCHEME}://?credential_offer_uri=${encodeURIComponent(`${silent.url}/offer/1`)}`
      await rejectsWith(wallet.receive(byReference), {
        step: 'offer',
        error: 'timeout',
        description: /^GET http:\/\/127\.0\.0\.1:\d+ gave no complete answer within 1000 ms/,
      })
      const started = Date.now()
      await rejectsWith(wallet.receive(offerLink(silent.url), { protocol: '1.0' }), {
        step: 'metadata',
        error: 'timeout',
        description: /^GET http:\/\/127\.0\.0\.1:\d+ gave no complete answer within 1000 ms/,
      })
      assert.ok(Date.now() - started < 4_000, 'the library gave up with the wallet')
    },
  )

  test(
    'the response_uri of a presentation may answer slowly, but not forever (the same deadline)',
    BOUNDED,
    async () => {
      const silent = await silentPeer()
      const { wallet } = await holderOfTwo({ http: { timeoutMs: 1_000 } })
      const verifier = await peer((_req, res) => {
        res
          .writeHead(200, { 'content-type': REQUEST_OBJECT_MEDIA_TYPE })
          .end(requestObject(definitionFor('VerifiableId'), `${silent.url}/responses/1`))
      })
      await rejectsWith(wallet.present(peLink(`${verifier.url}/request/5`)), {
        step: 'response',
        error: 'timeout',
        description: /gave no complete answer within 1000 ms/,
      })
    },
  )

  const cases: { protocol: IssuanceProtocol; redirect: Redirected }[] = [
    { protocol: 'draft15', redirect: 'metadata' },
    { protocol: 'draft15', redirect: 'token' },
    { protocol: 'draft15', redirect: 'credential' },
    { protocol: '1.0', redirect: 'metadata' },
    { protocol: '1.0', redirect: 'token' },
    { protocol: '1.0', redirect: 'credential' },
  ]
  for (const { protocol, redirect } of cases) {
    test(`a 302 on the ${redirect} request (${protocol}) is refused, not followed: the target sees nothing`, async () => {
      const target = await peer((_req, res) => json(res, 200, {}))
      const issuer = await fakeIssuer({ v1: protocol === '1.0', redirect, redirectTo: target.url })
      const wallet = await Wallet.create({ protocol })
      await rejectsWith(wallet.receive(offerLink(issuer.url)), {
        step: redirect,
        status: 302,
        error: 'redirect_not_followed',
        description: new RegExp(
          `^(GET|POST) ${issuer.origin} answered 302, a redirect to ${target.origin}: the wallet follows no redirects`,
        ),
      })
      assert.deepEqual(target.log, [], 'nothing was sent to the redirect target')
    })
  }

  test('a 302 on response_uri is refused too: the presentation is not sent on (OpenID4VP 1.0 §14.8)', async () => {
    const target = await peer((_req, res) => json(res, 200, {}))
    const verifier = await peer((req, res) => {
      if (req.method === 'POST') {
        res.writeHead(302, { location: `${target.url}/collect` }).end()
        return
      }
      res
        .writeHead(200, { 'content-type': REQUEST_OBJECT_MEDIA_TYPE })
        .end(requestObject(definitionFor('VerifiableId'), `${verifier.url}/responses/2`))
    })
    const { wallet } = await holderOfTwo({ fetch: globalThis.fetch })
    await rejectsWith(wallet.present(peLink(`${verifier.url}/request/6`)), {
      step: 'response',
      status: 302,
      error: 'redirect_not_followed',
      description: /answered 302, a redirect to http:\/\/127\.0\.0\.1:\d+: the wallet follows no redirects/,
    })
    assert.deepEqual(target.log, [])
  })

  test('limits that are not positive numbers are a WalletUsageError at create', async () => {
    for (const http of [{ timeoutMs: 0 }, { maxBodyBytes: -1 }, { timeoutMs: Number.NaN }]) {
      await assert.rejects(Wallet.create({ http }), (e: Error) => {
        assert.ok(e instanceof WalletUsageError, String(e))
        assert.match(e.message, /^http\.(timeoutMs|maxBodyBytes) must be a positive number/)
        return true
      })
    }
  })

  test(
    'CLI: --http-timeout and --http-max-body reach the wallet; bad values are argument errors',
    BOUNDED,
    async () => {
      const silent = await silentPeer()
      const started = Date.now()
      const slow = await walletCli(['present', peLink(`${silent.url}/request/7`), '--http-timeout', '0.5'])
      assert.match(slow.error?.message ?? '', /gave no complete answer within 500 ms/)
      assert.ok(Date.now() - started < 4_000)
      const big = await firehose(8 * MiB, REQUEST_OBJECT_MEDIA_TYPE)
      const capped = await walletCli(['present', peLink(`${big.url}/request/8`), '--http-max-body', '1000'])
      assert.match(capped.error?.message ?? '', /larger than 1000 bytes/)
      for (const args of [
        ['--http-timeout', 'soon'],
        ['--http-timeout', '-1'],
        ['--http-max-body', '1.5'],
      ]) {
        const bad = await walletCli(['receive', offerLink('http://127.0.0.1:9'), ...args])
        assert.match(String(bad.error?.code), /^ERR_PARSE_ARGS/, `${args.join(' ')}: ${bad.error?.message}`)
      }
      const help = await walletCli(['--help'])
      for (const option of ['--share WHAT', '--http-timeout S', '--http-max-body BYTES']) {
        assert.ok(help.out.includes(option), option)
      }
    },
  )
})

// --- 2. nothing shared with an issuer unless the holder asked ---------------------------------------------------

describe('share: an issuer asking for a presentation gets only what the holder allowed', () => {
  test('by default nothing: ShareNotAllowedError naming the option, before the code is redeemed', async () => {
    const issuer = await fakeIssuer()
    const { wallet } = await holderOfTwo()
    const link = offerLink(issuer.url, { presentation_definition: definitionFor('VerifiableId') })
    await assert.rejects(wallet.receive(link), (e: Error) => {
      assert.ok(e instanceof ShareNotAllowedError, String(e))
      assert.ok(e instanceof WalletUsageError)
      assert.match(
        e.message,
        new RegExp(
          `^the issuer ${issuer.url} asks the holder to present credentials before it issues \\(presentation_definition def-[\\w-]+, input descriptor VerifiableId-0\\); this wallet shares no held credential with an issuer unless told which: pass share: 'all' or a list of credential ids, types or issuers \\(CLI: --share all, or --share <id\\|type\\|issuer>, repeatable\\)\\. Nothing was shared\\.$`,
        ),
      )
      return true
    })
    assert.deepEqual(
      issuer.log.filter((r) => r.method === 'POST'),
      [],
      'no token or credential request',
    )
    // step by step: the session's credential request refuses the same way (the code is redeemed by then)
    const session = await wallet.startIssuance(link)
    await session.token()
    await assert.rejects(session.requestCredential(), ShareNotAllowedError)
    assert.deepEqual(
      issuer.log.filter((r) => r.path === '/credential'),
      [],
    )
  })

  test('share by type, id or issuer: only allowed credentials are candidates, and only what is asked is sent', async () => {
    const issuer = await fakeIssuer()
    const { wallet, id, degree } = await holderOfTwo()
    const link = offerLink(issuer.url, { presentation_definition: definitionFor('VerifiableId') })
    const [heldId, heldDegree] = wallet.credentials()
    for (const share of [
      ['VerifiableId'],
      [heldId?.id as string],
      [ISSUER_A.did],
      ['https://a.example'],
      'all',
    ] as const) {
      const before = issuer.log.length
      // the test issuer refuses every proof: what matters is what the wallet sent
      await rejectsWith(wallet.receive(link, { share }), {
        step: 'credential',
        status: 400,
        error: 'invalid_proof',
        description: /refuses every proof/,
      })
      const sent = issuer.log.slice(before).find((r) => r.path === '/credential')
      assert.ok(sent, `share ${JSON.stringify(share)}: a credential request`)
      assert.ok(sent.body.includes(id), 'the VerifiableId is shared')
      assert.ok(!sent.body.includes(degree), 'the degree of the other issuer is not')
      assert.equal(JSON.parse(sent.body).proof.proof_type, 'di_vp')
    }
    // allowed, but not what the issuer asks for: nothing is sent
    const before = issuer.log.length
    await assert.rejects(wallet.receive(link, { share: [heldDegree?.id as string] }), (e: Error) => {
      assert.ok(e instanceof WalletUsageError, String(e))
      assert.match(
        e.message,
        /^no held credential satisfies input descriptor\(s\) VerifiableId-0 of presentation definition def-[\w-]+; share allows only credentials with the id, type or issuer urn:uuid:[\w-]+ \(1 of the 2 held\)$/,
      )
      return true
    })
    assert.deepEqual(
      issuer.log.slice(before).filter((r) => r.method === 'POST'),
      [],
    )
  })

  test('CLI: receive without --share refuses naming it; --share all is accepted and alone', async () => {
    const issuer = await fakeIssuer()
    const link = offerLink(issuer.url, { presentation_definition: definitionFor('VerifiableId') })
    const refused = await walletCli(['receive', link])
    assert.match(
      refused.error?.message ?? '',
      /unless told which: .*--share all, or --share <id\|type\|issuer>/,
    )
    // the CLI's throw-away wallet holds nothing: with --share all the refusal is that nothing matches
    const shared = await walletCli(['receive', link, '--share', 'all'])
    assert.match(
      shared.error?.message ?? '',
      /^no held credential satisfies input descriptor\(s\) VerifiableId-0/,
    )
    const mixed = await walletCli(['receive', link, '--share', 'all', '--share', 'VerifiableId'])
    assert.match(String(mixed.error?.code), /^ERR_PARSE_ARGS/)
    assert.deepEqual(
      issuer.log.filter((r) => r.method === 'POST'),
      [],
    )
  })
})

// --- 3. JSONPath: only plain member/index paths are evaluated ---------------------------------------------------

describe('JSONPath of a definition: plain member/index paths only, refused before PEX sees them', () => {
  test('the rule (src/shared/json-path.ts): what the service and the wallet send passes, scripts do not', () => {
    for (const ok of [
      '$',
      '$.iss',
      '$.vc.type[-1:]',
      '$.vc.issuer.id',
      '$.credentialSubject.familyName',
      "$['@context']",
      '$.verifiableCredential[0]',
      '$.vc.type[*]',
      '$.vc.type[::-1]',
    ]) {
      assert.equal(plainJsonPathProblem(ok), undefined, ok)
    }
    for (const [bad, why] of [
      ['$.__proto__.polluted', /"__proto__" reaches the prototype chain/],
      ["$['__proto__']", /"__proto__" reaches the prototype chain/],
      ['$.constructor.prototype', /"constructor" reaches the prototype chain/],
      ['$.credentialSubject.__defineGetter__', /"__defineGetter__" reaches the prototype chain/],
      ['$..[?(@.__defineGetter__)]', /filter or script expression/],
      ['$.vc.type[(@.length-1)]', /filter or script expression/],
      ['$..degree', /recursive descent/],
      ['$.vc.type[0,1]', /starts no member, index, slice or wildcard step/],
      ['$.@context', /@ at character 1/],
      ['vc.type', /does not start at the root/],
      [`$${'.a'.repeat(200)}`, /longer than 256 characters/],
    ] as const) {
      assert.match(plainJsonPathProblem(bad) ?? '', why, bad)
    }
    assert.deepEqual(definitionPathProblem(definitionFor('X', ['$.vc.type', '$.__proto__.polluted'])), {
      at: 'input_descriptors[0].constraints.fields[0].path[1]',
      path: '$.__proto__.polluted',
      problem: 'the member "__proto__" reaches the prototype chain, not the credential\'s own data',
    })
  })

  for (const path of [
    '$.__proto__.polluted',
    '$..[?(@.__defineGetter__)]',
    "$..[?(@.__defineGetter__('polluted', function () { return 'yes' }))]",
    "$..[?(@.constructor.prototype.polluted = 'yes')]",
  ]) {
    test(`a verifier's definition with ${path}: refused naming the path, nothing evaluated or sent`, async () => {
      const responses: string[] = []
      const verifier = await peer((req, res, body) => {
        if (req.method === 'POST') {
          responses.push(body)
          json(res, 200, {})
          return
        }
        res
          .writeHead(200, { 'content-type': REQUEST_OBJECT_MEDIA_TYPE })
          .end(requestObject(definitionFor('VerifiableId', [path]), `${verifier.url}/responses/x`))
      })
      const { wallet } = await holderOfTwo()
      await rejectsWith(wallet.present(peLink(`${verifier.url}/request/9`)), {
        step: 'request',
        status: 200,
        error: 'invalid_request_object',
        description: new RegExp(
          `^presentation_definition \\(DIF Presentation Exchange v2 §5, fields\\.path\\): input_descriptors\\[0\\]\\.constraints\\.fields\\[0\\]\\.path\\[0\\] ${escapeRegExp(JSON.stringify(path))} is not a plain member/index JSONPath: .*; nothing was evaluated; nothing was sent$`,
        ),
      })
      assert.deepEqual(responses, [])
      assert.equal(({} as Record<string, unknown>).polluted, undefined)
      assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false)
      // the careless wallet refuses it too: the rule protects the wallet's process, not the protocol
      const careless = await Wallet.create({ trustEverything: true })
      await rejectsWith(careless.present(peLink(`${verifier.url}/request/10`)), {
        step: 'request',
        error: 'invalid_request_object',
        description: /is not a plain member\/index JSONPath/,
      })
    })
  }

  test("an issuer's offer with a script path: refused at the offer, before any request", async () => {
    const issuer = await fakeIssuer()
    const { wallet } = await holderOfTwo()
    const link = offerLink(issuer.url, {
      presentation_definition: definitionFor('VerifiableId', ['$..[?(@.__defineGetter__)]']),
    })
    await rejectsWith(wallet.receive(link, { share: 'all' }), {
      step: 'offer',
      error: 'invalid_credential_offer',
      description:
        /^the offer's presentation_definition \(DIF Presentation Exchange v2 §5, fields\.path\): input_descriptors\[0\]\.constraints\.fields\[0\]\.path\[0\] "\$\.\.\[\?\(@\.__defineGetter__\)\]" is not a plain member\/index JSONPath: a filter or script expression/,
    })
    assert.deepEqual(issuer.log, [], 'not even the metadata was read')
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  test('a request naming its definition or metadata by reference is refused: the library would fetch it unbounded', async () => {
    const verifier = await peer((_req, res, _body, self) => {
      const jwt = signJws(
        { alg: VERIFIER.alg, typ: REQUEST_OBJECT_TYP, kid: VERIFIER.kid },
        {
          client_id: VERIFIER.did,
          response_type: 'vp_token',
          response_mode: 'direct_post',
          response_uri: `${self.url}/responses/y`,
          nonce: `nonce-${randomUUID()}`,
          presentation_definition: definitionFor('VerifiableId'),
          client_metadata_uri: `${self.url}/client-metadata`,
          exp: NOW + 600,
        },
        VERIFIER.privateKey,
      )
      res.writeHead(200, { 'content-type': REQUEST_OBJECT_MEDIA_TYPE }).end(jwt)
    })
    const { wallet } = await holderOfTwo()
    await rejectsWith(wallet.present(peLink(`${verifier.url}/request/11`)), {
      step: 'request',
      error: 'invalid_request_object',
      description: /^client_metadata_uri: this wallet does not fetch a request's parameters by reference/,
    })
    assert.deepEqual(
      verifier.log.map((r) => r.path),
      ['/request/11'],
    )
  })
})

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
