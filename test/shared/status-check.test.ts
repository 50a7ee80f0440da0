import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { deflateSync } from 'node:zlib'
import { RemoteStatusLists, StatusChecker } from '../../src/service/credentials/status.ts'
import { emptyBitstring, encodeList, STATUS_MESSAGES, setStatus } from '../../src/shared/bitstring.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../src/shared/did-key.ts'
import { signJws } from '../../src/shared/jws.ts'
import { listSignerOf } from '../../src/shared/status-check.ts'
import { CredentialStatusError, ReceiptStatusChecker } from '../../src/wallet/credential-status.ts'
import { httpLimits } from '../../src/wallet/http.ts'
import { revocationEntryOf, StatusListReader } from '../../src/wallet/presentation-status.ts'

// One status check for both sides of the wire (shared/status-check.ts): the service's verifier
// (StatusChecker over RemoteStatusLists, the outbound policy in test mode) and the wallet at receipt
// (ReceiptStatusChecker over its bounded HTTP) read the same lists from a real server on 127.0.0.1, signed
// with real keys, and decide the same. Each case is a rule on which the two copies used to disagree; both
// now follow the stricter one.

function newKey() {
  const pair = generateKeyPair('EdDSA')
  return { ...didKeyFromPublicKey(pair.publicKey), ...pair }
}
type Key = ReturnType<typeof newKey>
const ISSUER = newKey()
const OTHER = newKey()
const NOW_S = Math.floor(Date.now() / 1000)

/** A Bitstring status list credential (JWT), entry 3 at `value`. */
function bitstringList(signer: Key, subject: Record<string, unknown> = {}, value = 0): string {
  const bits = emptyBitstring(256)
  setStatus(bits, 3, value)
  return signJws(
    { alg: 'EdDSA', typ: 'JWT', kid: signer.kid },
    {
      iss: signer.did,
      iat: NOW_S,
      vc: {
        '@context': ['https://www.w3.org/ns/credentials/v2'],
        type: ['VerifiableCredential', 'BitstringStatusListCredential'],
        issuer: signer.did,
        credentialSubject: {
          type: 'BitstringStatusList',
          statusPurpose: 'message',
          statusSize: 2,
          statusMessage: STATUS_MESSAGES,
          encodedList: encodeList(bits),
          ...subject,
        },
      },
    },
    signer.privateKey,
  )
}

/** A Token Status List JWT (2 bits, entry 3 at `value`) whose sub is `uri`. */
function tokenList(signer: Key, uri: string, header: Record<string, unknown> = {}, value = 0): string {
  const bytes = new Uint8Array(4)
  bytes[0] = value << 6
  return signJws(
    { alg: 'EdDSA', typ: 'statuslist+jwt', kid: signer.kid, ...header },
    { sub: uri, iat: NOW_S, status_list: { bits: 2, lst: deflateSync(bytes).toString('base64url') } },
    signer.privateKey,
  )
}

const routes = new Map<string, { type: string; body: string }>()
const requests: string[] = []
let server: Server
let origin = ''

/** Serves `body` at a fresh path as `type`; answers its URL. */
function serve(type: string, body: (url: string) => string): string {
  const path = `/lists/${routes.size}`
  const url = `${origin}${path}`
  routes.set(path, { type, body: body(url) })
  return url
}

before(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? '')
    const route = routes.get(req.url ?? '')
    if (!route) return void res.writeHead(404).end()
    res.writeHead(200, { 'content-type': route.type }).end(route.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(() => new Promise<void>((resolve) => server.close(() => resolve())))

type Decision = 'ok' | 'revoked' | 'unknown'
const service = () => new StatusChecker(new RemoteStatusLists({ policy: 'test', cache: false }).source)
const wallet = () => new ReceiptStatusChecker(httpLimits(undefined))

function serviceDecision(verdict: { ok: true } | { ok: false; reason: string }): [Decision, string] {
  if (verdict.ok) return ['ok', '']
  return [/the credential is /.test(verdict.reason) ? 'revoked' : 'unknown', verdict.reason]
}
async function walletDecision(check: () => Promise<void>): Promise<[Decision, string]> {
  try {
    await check()
    return ['ok', '']
  } catch (error) {
    assert.ok(error instanceof CredentialStatusError, String(error))
    return [error.kind, error.message]
  }
}

const entryAt = (url: string, extra: Record<string, unknown> = {}) => ({
  type: 'BitstringStatusListEntry',
  statusPurpose: 'message',
  statusListIndex: '3',
  statusListCredential: url,
  ...extra,
})

/** Both sides' decisions on one credentialStatus entry of a credential issued by `issuer`. */
async function bothOnBitstring(entry: unknown, issuer = ISSUER.did) {
  const s = serviceDecision(await service().check(entry, issuer, Date.now(), new Map()))
  const w = await walletDecision(() => wallet().checkBitstring({ vc: { credentialStatus: entry } }, issuer))
  return { service: s, wallet: w }
}

/** Both sides' decisions on a Token Status List reference of a credential by `issuer` (signed by `key`). */
async function bothOnToken(uri: string, issuer: string, key?: Key['publicKey']) {
  const s = serviceDecision(
    await service().token.check({ uri, index: 3 }, listSignerOf(issuer, key), Date.now(), new Map()),
  )
  const payload = { status: { status_list: { idx: 3, uri } } }
  const w = await walletDecision(() => wallet().checkTokenStatus(payload, issuer, key))
  return { service: s, wallet: w }
}

function same(
  got: { service: [Decision, string]; wallet: [Decision, string] },
  expected: Decision,
  why: { service?: RegExp; wallet?: RegExp } = {},
) {
  assert.equal(got.service[0], expected, `service: ${got.service[1]}`)
  assert.equal(got.wallet[0], expected, `wallet: ${got.wallet[1]}`)
  if (why.service) assert.match(got.service[1], why.service)
  if (why.wallet) assert.match(got.wallet[1], why.wallet)
}

describe('status lists: the service and the wallet decide the same (shared/status-check.ts)', () => {
  test('baseline: an active entry passes, a revoked one is refused, on both sides', async () => {
    same(await bothOnBitstring(entryAt(serve('application/jwt', () => bitstringList(ISSUER)))), 'ok')
    const revoked = serve('application/vc+jwt', () => bitstringList(ISSUER, {}, 1))
    same(await bothOnBitstring(entryAt(revoked)), 'revoked', {
      service: /the credential is revoked/,
      wallet: /the credential is revoked/,
    })
    same(
      await bothOnToken(
        serve('application/statuslist+jwt', (u) => tokenList(ISSUER, u)),
        ISSUER.did,
      ),
      'ok',
    )
  })

  test('media type (Token Status List §8.1): a list not served as a status-list JWT is unknown (the wallet read any)', async () => {
    same(await bothOnBitstring(entryAt(serve('text/plain', () => bitstringList(ISSUER)))), 'unknown', {
      service: /media-type check/,
      wallet: /Content-Type "text\/plain"/,
    })
    same(
      await bothOnToken(
        serve('application/json', (u) => tokenList(ISSUER, u)),
        ISSUER.did,
      ),
      'unknown',
    )
  })

  test('a Token Status List naming its key by x5c is unknown (the wallet ignored x5c and used kid)', async () => {
    const uri = serve('application/statuslist+jwt', (u) => tokenList(ISSUER, u, { x5c: ['MIIB'] }))
    same(await bothOnToken(uri, ISSUER.did), 'unknown', { service: /x5c/, wallet: /x5c/ })
  })

  test('who signs (§11.3): the issuer DID and the credential key must both match (the service checked only the key, the wallet only the DID)', async () => {
    // an x5c-certified issuer named by a DID its leaf certifies: the list signed by the leaf key's did:key
    const uri = serve('application/statuslist+jwt', (u) => tokenList(ISSUER, u))
    same(await bothOnToken(uri, 'did:web:issuer.example', ISSUER.publicKey), 'unknown', {
      service: /not by the credential's issuer did:web:issuer\.example/,
      wallet: /not by the credential's issuer did:web:issuer\.example/,
    })
    // named by its https URL: the key decides
    same(await bothOnToken(uri, 'https://issuer.example', ISSUER.publicKey), 'ok')
    same(await bothOnToken(uri, 'https://issuer.example', OTHER.publicKey), 'unknown')
  })

  test("one URL, two issuers, one presentation: each credential is judged by who signed the list (the service's memo reused the first verdict)", async () => {
    const url = serve('application/jwt', () => bitstringList(ISSUER))
    const checker = service()
    const memo = new Map()
    assert.equal((await checker.check(entryAt(url), ISSUER.did, Date.now(), memo)).ok, true)
    const second = await checker.check(entryAt(url), OTHER.did, Date.now(), memo)
    assert.match(second.ok ? '' : second.reason, /not by the credential's issuer/)
    const receipt = wallet()
    await receipt.checkBitstring({ vc: { credentialStatus: entryAt(url) } }, ISSUER.did)
    const refused = await walletDecision(() =>
      receipt.checkBitstring({ vc: { credentialStatus: entryAt(url) } }, OTHER.did),
    )
    assert.equal(refused[0], 'unknown', refused[1])
    assert.equal(receipt.fetched, 1, 'fetched once, verified per credential')
  })

  test('statusSize (§2.1): an entry whose statusSize is not the list’s is unknown (both read the list’s size; the misbehaviour read the entry’s)', async () => {
    const url = serve('application/jwt', () => bitstringList(ISSUER, {}, 1))
    same(await bothOnBitstring(entryAt(url, { statusSize: 1 })), 'unknown', {
      service: /statusSize 1/,
      wallet: /statusSize 1/,
    })
    // the 'revoked-credential' misbehaviour reads the entry by the same rule: not revoked, since unreadable
    const reader = new StatusListReader(httpLimits(undefined))
    const entry = { statusListCredential: url, statusListIndex: 3, statusPurpose: 'message', revokedValue: 1 }
    assert.equal(await reader.isRevoked({ ...entry, statusSize: 2 }), true)
    assert.equal(await reader.isRevoked({ ...entry, statusSize: 1 }), false)
    assert.equal(revocationEntryOf('not a jwt'), undefined)
  })

  test('statusMessage on the entry (v1.0 §2.1) names the value on both sides', async () => {
    const url = serve('application/jwt', () => bitstringList(ISSUER, { statusMessage: undefined }, 1))
    same(await bothOnBitstring(entryAt(url, { statusSize: 2, statusMessage: STATUS_MESSAGES })), 'revoked', {
      service: /the credential is revoked/,
      wallet: /the credential is revoked/,
    })
  })

  test('a URL with userinfo (RFC 9110 §4.2.4) is not fetched by either side (the wallet sent it)', async () => {
    const url = serve('application/jwt', () => bitstringList(ISSUER))
    const withUser = url.replace('http://', 'http://user:secret@')
    const before = requests.length
    same(await bothOnBitstring(entryAt(withUser)), 'unknown', {
      service: /url check: .*userinfo/,
      wallet: /userinfo/,
    })
    assert.equal(requests.length, before, 'no request sent')
  })
})
