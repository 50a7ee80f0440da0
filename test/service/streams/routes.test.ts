import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { parseCredentialOfferUri, RelyingPartyClient } from '../../../src/client/index.ts'
import { type RunningServer, startServer } from '../../../src/service/server.ts'
import type { StreamState } from '../../../src/service/streams/routes.ts'
import { ShiftedClock } from '../../../src/service/util/clock.ts'
import { DEMO, demoConfig } from '../../helpers.ts'

// The relying party's event streams (src/service/streams/routes.ts) over real HTTP: a snapshot first,
// each change as it is committed, EXPIRED from the clock, and the end of the stream after a final state.

interface Stream {
  status: number
  contentType: string | null
  /** Resolves with the next state message; rejects when the stream ends first. */
  next(timeoutMs?: number): Promise<StreamState>
  /** Resolves when the server ended the stream. */
  ended: Promise<void>
  close(): void
}

async function openStream(url: string, token: string | undefined): Promise<Stream> {
  const controller = new AbortController()
  const response = await fetch(url, {
    headers: token ? { authorization: `jwt ${token}` } : {},
    signal: controller.signal,
  })
  const queue: StreamState[] = []
  const waiters: (() => void)[] = []
  let done = false
  const wake = () => {
    for (const w of waiters.splice(0)) w()
  }
  const ended = (async () => {
    if (!response.body || response.status !== 200) return
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true })
        let cut = buffer.indexOf('\n\n')
        while (cut >= 0) {
          const message = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const data = message
            .split('\n')
            .find((line) => line.startsWith('data: '))
            ?.slice(6)
          if (data && message.includes('event: state')) queue.push(JSON.parse(data) as StreamState)
          cut = buffer.indexOf('\n\n')
        }
        wake()
      }
    } catch {
      // aborted by close()
    }
  })().finally(() => {
    done = true
    wake()
  })
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    ended,
    close: () => controller.abort(),
    async next(timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      while (queue.length === 0) {
        if (done) throw new Error('the stream ended')
        const left = deadline - Date.now()
        if (left <= 0) throw new Error('no stream message in time')
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          waiters.push(() => {
            clearTimeout(timer)
            resolve()
          })
        })
      }
      return queue.shift() as StreamState
    },
  }
}

describe('event streams of processes and sessions', () => {
  let server: RunningServer
  let client: RelyingPartyClient
  const clock = new ShiftedClock()
  let issuerToken: string
  let verifierToken: string

  before(async () => {
    server = await startServer({ config: demoConfig(), dataDir: ':memory:', port: 0, clock })
    client = new RelyingPartyClient({ authUrl: server.url, issuerUrl: server.url, verifierUrl: server.url })
    issuerToken = await client.token({ keyId: DEMO.app.id, secret: DEMO.app.secret, tenant: DEMO.app.tenant })
    verifierToken = await client.token({
      keyId: DEMO.verifierApp.id,
      secret: DEMO.verifierApp.secret,
      tenant: DEMO.verifierApp.tenant,
    })
  })
  after(async () => {
    await server.close()
  })

  const openOffer = async () => {
    const created = await client.createOffer(issuerToken, 'degree')
    assert.equal(created.status, 201, created.text)
    return parseCredentialOfferUri((created.body as { credential_offer_uri: string }).credential_offer_uri)
  }

  test('a process: snapshot PENDING, offer_retrieved when the wallet fetches the offer, REJECTED ends it', async () => {
    const offer = await openOffer()
    const stream = await openStream(
      `${server.url}/admin/v1/issuanceRequests/${offer.processId}/events`,
      issuerToken,
    )
    assert.equal(stream.status, 200)
    assert.match(stream.contentType ?? '', /^text\/event-stream/)
    const first = await stream.next()
    assert.deepEqual(
      { kind: first.kind, id: first.id, status: first.status, step: first.step },
      { kind: 'issuance', id: offer.processId, status: 'PENDING', step: 'snapshot' },
    )
    assert.match(first.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.equal((await fetch(offer.offerUrl)).status, 200)
    assert.equal((await stream.next()).step, 'offer_retrieved')
    const rejected = await client.rejectProcess(issuerToken, offer.processId, 'not eligible')
    assert.equal(rejected.status, 200, rejected.text)
    const last = await stream.next()
    assert.equal(last.status, 'REJECTED')
    assert.equal(last.step, 'rejected')
    await stream.ended
    await assert.rejects(stream.next(100), /ended/)
  })

  test('a process already final answers its state and ends at once', async () => {
    const offer = await openOffer()
    assert.equal((await client.rejectProcess(issuerToken, offer.processId)).status, 200)
    const stream = await openStream(
      `${server.url}/admin/v1/issuanceRequests/${offer.processId}/events`,
      issuerToken,
    )
    const only = await stream.next()
    assert.equal(only.status, 'REJECTED')
    assert.equal(only.step, 'snapshot')
    await stream.ended
  })

  test('an offer nobody redeemed is EXPIRED once its pre-authorized code lapses on the clock', async (t) => {
    t.after(() => clock.reset())
    const offer = await openOffer()
    const stream = await openStream(
      `${server.url}/admin/v1/issuanceRequests/${offer.processId}/events`,
      issuerToken,
    )
    assert.equal((await stream.next()).status, 'PENDING')
    clock.advance((demoConfig().oid4vci.preAuthorizedCodeLifetimeSeconds + 1) * 1000)
    const expired = await stream.next(3000)
    assert.deepEqual([expired.status, expired.step], ['EXPIRED', 'expired'])
    await stream.ended
  })

  test('a session: request_retrieved when the wallet fetches the request, EXPIRED at ExpiredAt', async (t) => {
    t.after(() => clock.reset())
    const created = await client.createSession(verifierToken, 'degree-check')
    assert.equal(created.status, 201, created.text)
    const body = created.body as { authentication_request: string; presentation_definition: { id: string } }
    const id = body.presentation_definition.id
    const stream = await openStream(`${server.url}/api/v3/sessions/${id}/events`, verifierToken)
    assert.deepEqual(
      [(await stream.next()).status, id],
      ['PENDING', id],
      'the first message is the PENDING snapshot',
    )
    const requestUri = new URL(
      body.authentication_request.replace(/^openid-vp:\/\//, 'https://x/'),
    ).searchParams.get('request_uri') as string
    assert.equal((await fetch(requestUri)).status, 200)
    const retrieved = await stream.next()
    assert.deepEqual(
      [retrieved.kind, retrieved.status, retrieved.step],
      ['verification', 'PENDING', 'request_retrieved'],
    )
    clock.advance(601_000)
    const expired = await stream.next(3000)
    assert.deepEqual([expired.status, expired.step], ['EXPIRED', 'expired'])
    await stream.ended
  })

  test('the same callers as 4.3 and 4.7: 401 without a token, 403 for another template, 404 unknown', async () => {
    const offer = await openOffer()
    const url = `${server.url}/admin/v1/issuanceRequests/${offer.processId}/events`
    const anonymous = await fetch(url)
    assert.equal(anonymous.status, 401)
    assert.match(anonymous.headers.get('content-type') ?? '', /problem\+json/)
    // The verifier's key is linked to degree-check, not to the process's template.
    const foreign = await fetch(url, { headers: { authorization: `jwt ${verifierToken}` } })
    assert.equal(foreign.status, 403)
    assert.equal(((await foreign.json()) as { code: string }).code, 'process_not_linked')
    const unknown = await fetch(`${server.url}/api/v3/sessions/00000000-0000-4000-8000-000000000000/events`, {
      headers: { authorization: `jwt ${verifierToken}` },
    })
    assert.equal(unknown.status, 404)
    assert.equal(((await unknown.json()) as { code: string }).code, 'session_not_found')
    const admin = await client.token({
      keyId: DEMO.admin.id,
      secret: DEMO.admin.secret,
      tenant: DEMO.admin.tenant,
    })
    const byAdmin = await fetch(url, { headers: { authorization: `jwt ${admin}` } })
    assert.equal(byAdmin.status, 403)
    assert.equal(((await byAdmin.json()) as { code: string }).code, 'role_forbidden')
  })

  // Found by the fuzzer (issue 19): a HEAD of a stream hung; Node sends a HEAD answer's head only at its end.
  test('HEAD of a stream answers the head and ends, subscribing nothing', async () => {
    const offer = await openOffer()
    const events = server.app.services.events as unknown as {
      emitter: { listenerCount(name: string): number }
    }
    const before = events.emitter.listenerCount('event')
    const head = await fetch(`${server.url}/admin/v1/issuanceRequests/${offer.processId}/events`, {
      method: 'HEAD',
      headers: { authorization: `jwt ${issuerToken}` },
      signal: AbortSignal.timeout(5000),
    })
    assert.equal(head.status, 200)
    assert.match(head.headers.get('content-type') ?? '', /^text\/event-stream/)
    assert.equal(await head.text(), '')
    assert.equal(events.emitter.listenerCount('event'), before)
  })

  test('a client that goes away unsubscribes: no listener is left behind', async () => {
    const offer = await openOffer()
    const events = server.app.services.events as unknown as {
      emitter: { listenerCount(name: string): number }
    }
    const before = events.emitter.listenerCount('event')
    const stream = await openStream(
      `${server.url}/admin/v1/issuanceRequests/${offer.processId}/events`,
      issuerToken,
    )
    await stream.next()
    assert.equal(events.emitter.listenerCount('event'), before + 1)
    stream.close()
    const deadline = Date.now() + 3000
    while (events.emitter.listenerCount('event') !== before && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    assert.equal(events.emitter.listenerCount('event'), before)
  })
})
