// The Sphereon peer issuer (bench/baselines/peer-issuer.ts) driven by the real simulated wallet over real HTTP on
// 127.0.0.1: the wallet (oid4vci-client underneath) discovers the metadata, redeems the pre-authorized code,
// proves possession and verifies the issued JWT VC with Veramo. Negative cases: a replayed code and proofs
// the peer must refuse. Last, ~50 sequential flows against a forked peer to report its CPU per flow.
import assert from 'node:assert/strict'
import { type ChildProcess, fork } from 'node:child_process'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  type FromPeer,
  type PeerIssuer,
  startPeerIssuer,
  type ToPeer,
} from '../../../bench/baselines/peer-issuer.ts'
import { didKeyFromPublicKey, generateKeyPair, resolveDidKey } from '../../../src/shared/did-key.ts'
import { signJws, verifyJws } from '../../../src/shared/jws.ts'
import { Wallet, WalletProtocolError } from '../../../src/wallet/index.ts'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..')

/** The library answers refused requests through ssi-express-support's sendErrorResponse, which console.error's
 *  the error and, for 5xx, two stack traces; keep the test output readable. */
async function withoutConsoleError<T>(run: () => Promise<T>): Promise<T> {
  const original = console.error
  console.error = () => {}
  try {
    return await run()
  } finally {
    console.error = original
  }
}

async function rejection(promise: Promise<unknown>): Promise<WalletProtocolError> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof WalletProtocolError, `expected a WalletProtocolError, got ${String(error)}`)
    return error
  }
  assert.fail('expected the request to be refused')
}

describe('Sphereon peer issuer with the simulated wallet', () => {
  let peer: PeerIssuer
  before(async () => {
    peer = await startPeerIssuer()
  })
  after(async () => {
    await peer?.close()
  })

  test('serves discoverable metadata at the origin root', async () => {
    assert.match(peer.url, /^http:\/\/127\.0\.0\.1:\d+$/)
    const issuer = (await (await fetch(`${peer.url}/.well-known/openid-credential-issuer`)).json()) as Record<
      string,
      unknown
    >
    assert.equal(issuer.credential_issuer, peer.url)
    assert.equal(issuer.token_endpoint, `${peer.url}/token`)
    assert.equal(issuer.nonce_endpoint, `${peer.url}/nonce`)
    const as = (await (await fetch(`${peer.url}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >
    assert.equal(as.token_endpoint, `${peer.url}/token`)
  })

  test('wallet.receive: immediate issuance of a JWT VC signed by the issuer did:key, bound to the holder', async () => {
    const wallet = await Wallet.create()
    const link = await peer.createOffer()
    assert.match(link, /^openid-credential-offer:\/\/\?credential_offer=/)
    const steps: string[] = []
    const result = await wallet.receive(link, { onStep: (step) => steps.push(step) })
    assert.equal(result.status, 'issued')
    // the wallet verified the signature (Veramo) and the binding; notification went to the peer too
    assert.deepEqual(steps, ['offer', 'metadata', 'token', 'credential', 'verify', 'notification'])
    if (result.status !== 'issued') return
    const [stored] = result.credentials
    assert.ok(stored)
    assert.deepEqual(stored.types, ['VerifiableCredential', 'UniversityDegreeCredential'])
    assert.equal(stored.subject, wallet.did)
    assert.deepEqual(stored.credentialSubject, {
      id: wallet.did,
      degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' },
    })
    // and independently of Veramo: EdDSA by the issuer's did:key, credentialSubject.id = holder
    const issuerKey = resolveDidKey(stored.issuer)
    const { header, payload } = verifyJws(stored.credential, issuerKey.publicKey, { algorithms: ['EdDSA'] })
    assert.equal(header.kid, issuerKey.kid)
    assert.equal(payload.iss, issuerKey.did)
    assert.equal(payload.sub, wallet.did)
    const vc = payload.vc as { credentialSubject: { id: string } }
    assert.equal(vc.credentialSubject.id, wallet.did)
  })

  test('step by step with a nonce from the nonce endpoint, and a P-256 holder', async () => {
    const wallet = await Wallet.create({ keyType: 'P-256' })
    const session = await wallet.startIssuance(await peer.createOffer())
    const token = await session.token()
    assert.equal(typeof token.c_nonce, 'string')
    const nonce = await session.nonce()
    const issued = await session.requestCredential({ nonce })
    assert.equal(issued.status, 200)
    if (issued.status !== 200) return
    const [stored] = await session.accept(issued)
    assert.equal(stored?.subject, wallet.did)
  })

  test('a second token request with the same pre-authorized code fails with invalid_grant', async () => {
    const wallet = await Wallet.create()
    const session = await wallet.startIssuance(await peer.createOffer())
    await session.token()
    const error = await rejection(session.token())
    assert.equal(error.step, 'token')
    assert.equal(error.status, 400)
    assert.equal(error.error, 'invalid_grant')
  })

  test('a proof signed by another key than its kid is refused, and so is a corrupted signature', async () => {
    const wallet = await Wallet.create()
    for (const misbehaviour of ['foreign-kid', 'bad-signature'] as const) {
      const session = await wallet.startIssuance(await peer.createOffer())
      await session.token()
      const error = await withoutConsoleError(() =>
        rejection(session.requestCredential({ misbehave: [misbehaviour] })),
      )
      assert.equal(error.step, 'credential')
      // the library maps every failure of issueCredential, a bad proof included, to 500 invalid_request
      assert.equal(error.status, 500, `${misbehaviour}: ${error.message}`)
      assert.equal(error.error, 'invalid_request')
      assert.match(String(error.errorDescription), /Unable to verify any provided proofs/)
    }
    assert.equal(wallet.credentials().length, 0)
  })

  test('a JWT signed by a did:key other than the issuer is not accepted as an access token', async () => {
    // the library would verify bearer tokens with the proof callback (any did:key) if we did not pass our own
    const wallet = await Wallet.create()
    const session = await wallet.startIssuance(await peer.createOffer())
    await session.token()
    const holderKeys = generateKeyPair('EdDSA')
    const holder = didKeyFromPublicKey(holderKeys.publicKey)
    const now = Math.floor(Date.now() / 1000)
    const forged = signJws(
      { alg: 'EdDSA', typ: 'JWT', kid: holder.kid },
      { iss: peer.url, iat: now, exp: now + 300, preAuthorizedCode: session.preAuthorizedCode },
      holderKeys.privateKey,
    )
    const answer = await withoutConsoleError(() =>
      fetch(`${peer.url}/credentials`, {
        method: 'POST',
        headers: { authorization: `Bearer ${forged}`, 'content-type': 'application/json' },
        body: JSON.stringify({ credential_configuration_id: 'UniversityDegreeCredential' }),
      }),
    )
    assert.equal(answer.status, 400)
    assert.deepEqual(await answer.json(), { error: 'invalid_token' })
  })
})

describe('the peer issuer forked as the bench runs it: the real wallet completes every flow (CPU per flow printed)', () => {
  const FLOWS = 50
  let child: ChildProcess
  const replies: FromPeer[] = []
  let waiting: ((message: FromPeer) => void) | undefined

  function next(): Promise<FromPeer> {
    const queued = replies.shift()
    if (queued) return Promise.resolve(queued)
    return new Promise((resolve) => {
      waiting = resolve
    })
  }
  async function ask(message: ToPeer): Promise<FromPeer> {
    child.send(message)
    const reply = await next()
    if (reply.kind === 'failed') throw new Error(`peer: ${reply.message}`)
    return reply
  }

  before(async () => {
    child = fork(join(ROOT, 'bench/baselines/peer-issuer.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    child.on('message', (message: FromPeer) => {
      const resolve = waiting
      waiting = undefined
      if (resolve) resolve(message)
      else replies.push(message)
    })
    const started = await next()
    assert.equal(started.kind, 'started', JSON.stringify(started))
  })
  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.send({ kind: 'stop' } satisfies ToPeer)
      await exited
    }
  })

  test(`${FLOWS} sequential flows with the real wallet`, async (t) => {
    const wallet = await Wallet.create()
    // warm-up: JIT, did:key cache, keep-alive connections
    for (let i = 0; i < 5; i++) {
      const offer = await ask({ kind: 'offer' })
      assert.equal(offer.kind, 'offer')
      if (offer.kind === 'offer') assert.equal((await wallet.receive(offer.link)).status, 'issued')
    }
    const before = await ask({ kind: 'usage' })
    const walletBefore = process.cpuUsage()
    const started = performance.now()
    for (let i = 0; i < FLOWS; i++) {
      const offer = await ask({ kind: 'offer' })
      if (offer.kind !== 'offer') assert.fail(JSON.stringify(offer))
      const result = await wallet.receive(offer.link)
      assert.equal(result.status, 'issued')
    }
    const elapsed = performance.now() - started
    const walletCpu = process.cpuUsage(walletBefore)
    const afterUsage = await ask({ kind: 'usage' })
    assert.ok(before.kind === 'usage' && afterUsage.kind === 'usage')
    const peerMs = (afterUsage.cpuUs - before.cpuUs) / 1000 / FLOWS
    const walletMs = (walletCpu.user + walletCpu.system) / 1000 / FLOWS
    t.diagnostic(
      `peer CPU ${peerMs.toFixed(2)} ms/flow (offer creation included), wallet CPU ${walletMs.toFixed(2)} ms/flow, ` +
        `${(elapsed / FLOWS).toFixed(1)} ms/flow wall, peer RSS ${afterUsage.rssMb.toFixed(0)} MB`,
    )
  })
})
