// The harness's webhook receiver over real HTTP on 127.0.0.1, with deliveries signed by the reference
// `standardwebhooks` package, so the receiver's own verifier is checked against an independent signer.
import assert from 'node:assert/strict'
import { createHmac, randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import {
  type Delivery,
  MAX_BODY_BYTES,
  verifyWebhookSignature,
  type WebhookEventBody,
  WebhookReceiver,
  WebhookWaitError,
  webhookSignature,
} from '../../src/harness/webhook-receiver.ts'

// --- helpers ---------------------------------------------------------------------------------------------

const nowSeconds = () => Math.floor(Date.now() / 1000)

function event(id: string, status: 'SUCCESS' | 'REJECT' = 'SUCCESS'): WebhookEventBody {
  return {
    id,
    subject: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
    status,
    payload: { degree: 'BSc' },
    verificationResult: { checks: ['credentialProof'], warnings: [], errors: [] },
  }
}

interface SignOptions {
  webhookId?: string
  timestamp?: number
  event?: string
}

/** Headers of a delivery signed with standardwebhooks, as the service would send them. */
function signedHeaders(secret: string, body: string, options: SignOptions = {}): Record<string, string> {
  const webhookId = options.webhookId ?? `msg_${randomUUID()}`
  const timestamp = options.timestamp ?? nowSeconds()
  const signature = new Webhook(secret).sign(webhookId, new Date(timestamp * 1000), body)
  return {
    'content-type': 'application/json',
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature,
    ...(options.event ? { 'webhook-event': options.event } : {}),
  }
}

async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  init: { timeoutMs?: number; method?: string } = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await fetch(url, {
    method: init.method ?? 'POST',
    headers,
    body: init.method === 'GET' ? undefined : body,
    redirect: 'manual',
    signal: AbortSignal.timeout(init.timeoutMs ?? 5000),
  })
  return { status: response.status, text: await response.text(), headers: response.headers }
}

/** Signs and posts an event body to an endpoint. */
async function deliver(
  endpoint: { url: string; secret: string },
  body: object | string,
  options: SignOptions & { secret?: string } = {},
) {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  return post(endpoint.url, text, signedHeaders(options.secret ?? endpoint.secret, text, options))
}

/** A receiver closed after the test, whatever happens. */
async function withReceiver(
  fn: (receiver: WebhookReceiver) => Promise<void>,
  options: Parameters<typeof WebhookReceiver.start>[0] = {},
): Promise<void> {
  const receiver = await WebhookReceiver.start(options)
  try {
    await fn(receiver)
  } finally {
    await receiver.close()
  }
}

const only = (endpoint: { deliveries: readonly Delivery[] }): Delivery => {
  assert.equal(endpoint.deliveries.length, 1, 'exactly one delivery')
  return endpoint.deliveries[0] as Delivery
}

/** What the reference library says about the same request, with the real clock. */
function referenceVerdict(secret: string, delivery: Delivery): string {
  try {
    new Webhook(secret).verify(delivery.rawBody, delivery.headers)
    return 'valid'
  } catch (error) {
    return (error as Error).name
  }
}

// --- tests -----------------------------------------------------------------------------------------------

describe('webhook receiver', () => {
  test('records and verifies a valid delivery', async () => {
    await withReceiver(async (receiver) => {
      const hook = receiver.endpoint('degree issued')
      assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
      assert.equal(Buffer.from(hook.secret.slice(6), 'base64').length, 32)
      assert.ok(hook.url.startsWith(receiver.url('/wh/degree-issued-')), hook.url)

      const body = event('process-1')
      const response = await deliver(hook, body, { webhookId: 'msg_1', event: 'issuance.issued' })
      assert.equal(response.status, 204)

      const d = only(hook)
      assert.equal(d.signatureValid, true, d.signatureError)
      assert.equal(d.signatureError, undefined)
      assert.equal(d.method, 'POST')
      assert.equal(d.path, hook.path)
      assert.equal(d.webhookId, 'msg_1')
      assert.equal(d.event, 'issuance.issued')
      assert.match(d.webhookTimestamp ?? '', /^\d+$/)
      assert.equal(d.headers['content-type'], 'application/json')
      assert.deepEqual(d.json, body)
      assert.equal(d.rawBody, JSON.stringify(body))
      assert.equal(d.answeredStatus, 204)
      assert.equal(d.answerOutcome, 'answered')
      assert.ok(Math.abs(d.receivedAt - Date.now()) < 5000)
      assert.equal(referenceVerdict(hook.secret, d), 'valid')
      assert.equal(receiver.strays.length, 0)
    })
  })

  test('the webhook-event header is optional', async () => {
    await withReceiver(async (receiver) => {
      const hook = receiver.endpoint()
      assert.equal((await deliver(hook, event('p'))).status, 204)
      assert.equal(only(hook).event, undefined)
      assert.equal(only(hook).signatureValid, true)
    })
  })

  describe('rejects a bad signature with the reason and a 400', () => {
    const body = JSON.stringify(event('process-2'))
    const otherSecret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
    const cases: {
      name: string
      /** The headers sent with `body`, given the endpoint's secret. */
      headers: (secret: string) => Record<string, string>
      reason: RegExp
    }[] = [
      {
        name: 'tampered body',
        headers: (secret) => signedHeaders(secret, body.replace('BSc', 'PhD')),
        reason: /no matching signature/,
      },
      {
        name: 'wrong secret',
        headers: () => signedHeaders(otherSecret, body),
        reason: /no matching signature: 1 v1 signature\(s\) checked against 1 secret\(s\)/,
      },
      {
        name: 'missing signature header',
        headers: (secret) => {
          const { 'webhook-signature': _, ...rest } = signedHeaders(secret, body)
          return rest
        },
        reason: /missing header webhook-signature/,
      },
      {
        name: 'missing id and timestamp',
        headers: (secret) => {
          const { 'webhook-id': _, 'webhook-timestamp': __, ...rest } = signedHeaders(secret, body)
          return rest
        },
        reason: /missing header webhook-id, webhook-timestamp/,
      },
      {
        name: 'no signature headers at all',
        headers: () => ({ 'content-type': 'application/json' }),
        reason: /missing header webhook-id, webhook-timestamp, webhook-signature/,
      },
      {
        name: 'timestamp older than 300 s',
        headers: (secret) => signedHeaders(secret, body, { timestamp: nowSeconds() - 301 }),
        reason: /bad timestamp: too old, 30\d s behind the receiver clock \(tolerance 300 s\)/,
      },
      {
        name: 'timestamp further than 300 s ahead',
        headers: (secret) => signedHeaders(secret, body, { timestamp: nowSeconds() + 400 }),
        reason: /bad timestamp: too new, (399|400) s ahead/,
      },
      {
        name: 'timestamp in milliseconds',
        headers: (secret) => ({ ...signedHeaders(secret, body), 'webhook-timestamp': String(Date.now()) }),
        reason: /too new.*milliseconds instead of seconds\?/,
      },
      {
        name: 'timestamp not an integer',
        headers: (secret) => ({ ...signedHeaders(secret, body), 'webhook-timestamp': 'soon' }),
        reason: /bad timestamp: webhook-timestamp "soon" is not integer seconds/,
      },
      {
        name: 'only a non-v1 signature',
        headers: (secret) => ({ ...signedHeaders(secret, body), 'webhook-signature': 'v1a,AAAA' }),
        reason: /no v1 signature in webhook-signature \(versions seen: v1a\)/,
      },
    ]
    for (const c of cases) {
      test(c.name, async () => {
        await withReceiver(async (receiver) => {
          const hook = receiver.endpoint(c.name)
          const answer = await post(hook.url, body, c.headers(hook.secret))
          assert.equal(answer.status, 400)
          assert.deepEqual(JSON.parse(answer.text), { error: 'invalid signature' })
          const d = only(hook)
          assert.equal(d.signatureValid, false)
          assert.match(d.signatureError ?? '', c.reason)
          assert.equal(d.answeredStatus, 400)
          assert.deepEqual(d.json, JSON.parse(body), 'the body is recorded even when refused')
          // The reference library refuses it too (it throws WebhookVerificationError for all of these).
          assert.equal(referenceVerdict(hook.secret, d), 'WebhookVerificationError')
        })
      })
    }
  })

  test('several signatures (rotation on the sender side): valid when the second one matches', async () => {
    await withReceiver(async (receiver) => {
      const hook = receiver.endpoint()
      const body = JSON.stringify(event('p'))
      const headers = signedHeaders(hook.secret, body)
      const stale = new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).sign(
        headers['webhook-id'] as string,
        new Date(Number(headers['webhook-timestamp']) * 1000),
        body,
      )
      headers['webhook-signature'] = `${stale} v1a,bm90LXVzZWQ= ${headers['webhook-signature']}`
      assert.equal((await post(hook.url, body, headers)).status, 204)
      assert.equal(only(hook).signatureValid, true)
      assert.equal(referenceVerdict(hook.secret, only(hook)), 'valid')
    })
  })

  test('rotate(): old and new secret both accepted until the old one is removed', async () => {
    await withReceiver(async (receiver) => {
      const hook = receiver.endpoint()
      const old = hook.secret
      const fresh = hook.rotate()
      assert.notEqual(fresh, old)
      assert.equal(hook.secret, fresh)
      assert.deepEqual(hook.secrets, [old, fresh])

      assert.equal((await deliver(hook, event('a'), { secret: old })).status, 204)
      assert.equal((await deliver(hook, event('b'), { secret: fresh })).status, 204)
      hook.removeSecret(old)
      assert.deepEqual(hook.secrets, [fresh])
      assert.equal((await deliver(hook, event('c'), { secret: old })).status, 400)
      assert.deepEqual(
        hook.deliveries.map((d) => d.signatureValid),
        [true, true, false],
      )
      assert.throws(() => hook.removeSecret(fresh), /at least one secret/)
    })
  })

  test('endpoints are isolated by path; an unknown path is a 404 stray', async () => {
    await withReceiver(async (receiver) => {
      const a = receiver.endpoint('a')
      const b = receiver.endpoint('b')
      assert.notEqual(a.path, b.path)
      assert.notEqual(a.secret, b.secret)

      await deliver(a, event('for-a'))
      await deliver(b, event('for-b'))
      // Signed with a's secret but sent to b: b does not accept it.
      assert.equal((await post(b.url, '{}', signedHeaders(a.secret, '{}'))).status, 400)

      assert.deepEqual(
        a.deliveries.map((d) => (d.json as WebhookEventBody).id),
        ['for-a'],
      )
      assert.equal(b.deliveries.length, 2)
      assert.equal(b.deliveriesFor('for-a').length, 0)

      const stray = await post(receiver.url('/wh/nobody'), '{}', signedHeaders(a.secret, '{}'))
      assert.equal(stray.status, 404)
      assert.equal(receiver.strays.length, 1)
      assert.equal(receiver.strays[0]?.path, '/wh/nobody')

      b.dispose()
      assert.equal((await deliver(b, event('late'))).status, 404)
      assert.equal(receiver.strays.length, 2)
      assert.equal(b.deliveries.length, 2)
    })
  })

  test('a query string does not change the route', async () => {
    await withReceiver(async (receiver) => {
      const hook = receiver.endpoint()
      const body = '{}'
      await post(`${hook.url}?attempt=2`, body, signedHeaders(hook.secret, body))
      assert.equal(only(hook).path, `${hook.path}?attempt=2`)
    })
  })

  test('publicUrl: urls use it, and a forwarded path prefix is stripped', async () => {
    await withReceiver(
      async (receiver) => {
        const hook = receiver.endpoint()
        assert.equal(receiver.url(), 'https://hooks.example/base/')
        assert.equal(hook.url, `https://hooks.example/base${hook.path}`)
      },
      { publicUrl: 'https://hooks.example/base/' },
    )
  })

  test('only POST: other methods are answered 405 and recorded', async () => {
    await withReceiver(async (receiver) => {
      const hook = receiver.endpoint()
      hook.respondWith({ status: 503 })
      const response = await post(hook.url, '', {}, { method: 'GET' })
      assert.equal(response.status, 405)
      assert.equal(response.headers.get('allow'), 'POST')
      assert.equal(only(hook).method, 'GET')
      assert.equal(only(hook).answeredStatus, 405)
      // The scripted answer was not spent on it.
      assert.equal((await deliver(hook, event('p'))).status, 503)
    })
  })

  test('a body over 1 MiB is answered 413 and recorded', async () => {
    await withReceiver(async (receiver) => {
      const hook = receiver.endpoint()
      const big = `"${'x'.repeat(MAX_BODY_BYTES)}"`
      const response = await post(hook.url, big, signedHeaders(hook.secret, big))
      assert.equal(response.status, 413)
      const d = only(hook)
      assert.equal(d.answeredStatus, 413)
      assert.equal(d.bodyBytes, MAX_BODY_BYTES + 2)
      assert.equal(d.rawBody, '')
      assert.equal(d.signatureValid, false)
      assert.match(d.signatureError ?? '', /exceeds the 1048576 byte limit/)

      const fits = `"${'x'.repeat(MAX_BODY_BYTES - 2)}"`
      assert.equal((await post(hook.url, fits, signedHeaders(hook.secret, fits))).status, 204)
    })
  })

  describe('scripted answers', () => {
    test('503 with Retry-After, then the default', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        hook.respondWith({ status: 503, retryAfter: '1' })
        const body = JSON.stringify(event('p'))
        const headers = signedHeaders(hook.secret, body, { webhookId: 'msg_retry' })
        const first = await post(hook.url, body, headers)
        assert.equal(first.status, 503)
        assert.equal(first.headers.get('retry-after'), '1')
        const second = await post(hook.url, body, headers)
        assert.equal(second.status, 204)
        assert.equal(second.headers.get('retry-after'), null)

        assert.deepEqual(
          hook.deliveries.map((d) => d.answeredStatus),
          [503, 204],
        )
        // Two attempts, one event.
        const events = hook.distinctEvents('p')
        assert.equal(events.size, 1)
        assert.equal(events.get('msg_retry')?.length, 2)
      })
    })

    test('410 Gone and a 302 redirect', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        hook.respondWith({ status: 410 }, { status: 302, location: 'http://127.0.0.1:1/elsewhere' })
        assert.equal((await deliver(hook, event('p'))).status, 410)
        const redirect = await deliver(hook, event('p'))
        assert.equal(redirect.status, 302)
        assert.equal(redirect.headers.get('location'), 'http://127.0.0.1:1/elsewhere')
        assert.equal((await deliver(hook, event('p'))).status, 204)
      })
    })

    test('respondAlways, with a body, until reset', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        hook.respondAlways({ status: 500, body: { error: 'down' } }).respondWith({ status: 429 })
        assert.equal((await deliver(hook, event('p'))).status, 429)
        const down = await deliver(hook, event('p'))
        assert.equal(down.status, 500)
        assert.deepEqual(JSON.parse(down.text), { error: 'down' })
        assert.equal(down.headers.get('content-type'), 'application/json')
        assert.equal((await deliver(hook, event('p'))).status, 500)
        hook.respondAlways(undefined)
        assert.equal((await deliver(hook, event('p'))).status, 204)
      })
    })

    test('a delayed answer runs into the client timeout; the delivery is still recorded', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        hook.respondWith({ delayMs: 2000 })
        const body = JSON.stringify(event('slow'))
        await assert.rejects(
          post(hook.url, body, signedHeaders(hook.secret, body), { timeoutMs: 150 }),
          (error: Error) => error.name === 'TimeoutError',
        )
        const d = only(hook)
        assert.equal(d.signatureValid, true)
        assert.equal(d.answeredStatus, 204)
        // The sender hung up before the answer was due.
        await waitUntil(() => d.answerOutcome === 'client-closed')
      })
    })

    test('a delayed answer is sent late when the client waits', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        hook.respondWith({ delayMs: 100, status: 202 })
        const started = Date.now()
        assert.equal((await deliver(hook, event('p'))).status, 202)
        assert.ok(Date.now() - started >= 90)
        assert.equal(only(hook).answerOutcome, 'answered')
      })
    })

    test('a pending delayed answer does not hold close()', async () => {
      const receiver = await WebhookReceiver.start()
      const hook = receiver.endpoint()
      hook.respondWith({ delayMs: 60_000 })
      const body = '{}'
      const pending = post(hook.url, body, signedHeaders(hook.secret, body), { timeoutMs: 30_000 })
      await hook.waitFor(() => true, { timeoutMs: 2000 })
      const started = Date.now()
      await receiver.close()
      assert.ok(Date.now() - started < 1000, 'close() was quick')
      await assert.rejects(pending)
      assert.equal(only(hook).answerOutcome, 'server-closed')
    })

    test('destroy drops the connection without an answer', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        hook.respondWith({ destroy: true })
        await assert.rejects(deliver(hook, event('p')), TypeError)
        const d = only(hook)
        assert.equal(d.answeredStatus, null)
        assert.equal(d.answerOutcome, 'destroyed')
        assert.equal(d.signatureValid, true)
        // The next delivery gets the default answer on a fresh connection.
        assert.equal((await deliver(hook, event('p'))).status, 204)
      })
    })
  })

  describe('waiting', () => {
    test('waitFor resolves with an already received delivery', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        await deliver(hook, event('early', 'REJECT'), { event: 'verification.rejected' })
        const d = await hook.waitForEvent({ id: 'early', status: 'REJECT', timeoutMs: 100 })
        assert.equal(d.event, 'verification.rejected')
        assert.equal(d.seq, 1)
      })
    })

    test('waitFor resolves with a later delivery, skipping those that do not match', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        const waiting = hook.waitForEvent({ id: 'later', status: 'SUCCESS', timeoutMs: 5000 })
        await deliver(hook, event('other'))
        await deliver(hook, event('later', 'REJECT'))
        await deliver(hook, event('later'), { secret: `whsec_${Buffer.alloc(32, 2).toString('base64')}` })
        await deliver(hook, event('later'), { webhookId: 'msg_good' })
        const d = await waiting
        assert.equal(d.webhookId, 'msg_good')
        assert.equal(d.seq, 4)
      })
    })

    test('the predicate sees the deliveries so far (e.g. the third attempt of one event)', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        hook.respondWith({ status: 503 }, { status: 503 })
        const third = hook.waitFor(
          (d, seen) => seen.filter((s) => s.webhookId === d.webhookId).length === 3,
          {
            timeoutMs: 5000,
            description: 'the third attempt of an event',
          },
        )
        const body = JSON.stringify(event('p'))
        const headers = signedHeaders(hook.secret, body, { webhookId: 'msg_3' })
        for (let i = 0; i < 3; i++) await post(hook.url, body, headers)
        assert.equal((await third).seq, 3)
        assert.equal((await third).answeredStatus, 204)
      })
    })

    test('a timeout says what was awaited and lists what arrived', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint('verification')
        await deliver(hook, event('s-1', 'REJECT'), { webhookId: 'msg_a', event: 'verification.rejected' })
        await deliver(hook, event('s-1'), { webhookId: 'msg_b', timestamp: nowSeconds() - 3600 })
        await post(receiver.url('/nowhere'), '{}', {})
        const error = await hook.waitForEvent({ id: 's-1', status: 'SUCCESS', timeoutMs: 50 }).then(
          () => assert.fail('should time out'),
          (e: unknown) => e,
        )
        assert.ok(error instanceof WebhookWaitError)
        assert.equal(error.code, 'timeout')
        assert.equal(error.deliveries.length, 2)
        const message = error.message
        assert.match(message, /timed out after 50 ms on webhook endpoint "verification"/)
        assert.match(message, /waiting for a validly signed delivery with id=s-1 status=SUCCESS/)
        assert.match(message, /received 2 deliveries/)
        assert.match(
          message,
          /#1 POST webhook-id=msg_a event=verification.rejected id=s-1 status=REJECT signature valid answered 204/,
        )
        assert.match(
          message,
          /#2 POST webhook-id=msg_b id=s-1 status=SUCCESS signature invalid \(bad timestamp: too old/,
        )
        assert.match(message, /answered 400/)
        assert.match(message, /1 request\(s\) to unknown paths: POST \/nowhere/)
      })
    })

    test('a timeout with nothing received says so', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        await assert.rejects(
          hook.waitFor(() => true, { timeoutMs: 20, description: 'anything' }),
          {
            name: 'WebhookWaitError',
            message: /waiting for anything; received 0 deliveries$/,
          },
        )
      })
    })

    test('close() rejects pending waits; later waits reject at once', async () => {
      const receiver = await WebhookReceiver.start()
      const hook = receiver.endpoint('closing')
      const waiting = hook.waitForEvent({ id: 'never', status: 'SUCCESS', timeoutMs: 60_000 })
      await receiver.close()
      await assert.rejects(waiting, (error: unknown) => {
        assert.ok(error instanceof WebhookWaitError)
        assert.equal(error.code, 'closed')
        assert.match(error.message, /receiver closed while waiting on webhook endpoint "closing"/)
        return true
      })
      await assert.rejects(
        hook.waitFor(() => true),
        { name: 'WebhookWaitError', message: /receiver closed/ },
      )
      await receiver.close() // idempotent
      assert.throws(() => receiver.endpoint(), /closed/)
    })

    test('deliveriesFor and distinctEvents: exactly one SUCCESS for a process', async () => {
      await withReceiver(async (receiver) => {
        const hook = receiver.endpoint()
        hook.respondWith({ status: 500 })
        const body = JSON.stringify(event('proc-9'))
        const headers = signedHeaders(hook.secret, body, { webhookId: 'msg_once' })
        await post(hook.url, body, headers)
        await post(hook.url, body, headers)
        await deliver(hook, event('proc-10'))
        assert.equal(hook.deliveriesFor('proc-9').length, 2)
        const events = [...hook.distinctEvents('proc-9').values()]
        assert.equal(events.length, 1)
        assert.equal(events[0]?.filter((d) => d.answeredStatus === 204).length, 1)
        assert.equal(hook.distinctEvents().size, 2)
      })
    })
  })

  describe('signatures', () => {
    test('known answer: the HMAC by hand equals Webhook.sign and the receiver accepts it', async () => {
      const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
      const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek'
      const timestamp = 1614265330
      const body = '{"test": 2432232314}'
      const byHand = `v1,${createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
        .update(`${id}.${timestamp}.${body}`)
        .digest('base64')}`
      // The example of the Standard Webhooks spec and of the reference library's own tests.
      assert.equal(byHand, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=')
      assert.equal(new Webhook(secret).sign(id, new Date(timestamp * 1000), body), byHand)
      assert.equal(webhookSignature(secret, id, String(timestamp), body), byHand)

      // Directly, and over HTTP by an endpoint holding that secret, its clock at the message's time.
      const verdict = verifyWebhookSignature({
        secrets: [secret],
        id,
        timestamp: String(timestamp),
        signature: byHand,
        body,
        now: timestamp * 1000 + 299_000,
      })
      assert.deepEqual(verdict, { valid: true, secretIndex: 0 })
      await withReceiver(
        async (receiver) => {
          const hook = receiver.endpoint('known answer', { secret })
          assert.equal(hook.secret, secret)
          assert.throws(() => receiver.endpoint('x', { secret: 'not-a-secret' }), /whsec_ followed by base64/)
          const response = await post(hook.url, body, {
            'webhook-id': id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': byHand,
          })
          assert.equal(response.status, 204)
          assert.equal(only(hook).signatureValid, true)
          assert.deepEqual(only(hook).json, { test: 2432232314 })
        },
        { now: () => timestamp * 1000 + 10_000 },
      )
    })

    test('an injected clock: a shifted sender is accepted, the real clock would refuse it', async () => {
      const shift = 2 * 3600_000
      await withReceiver(
        async (receiver) => {
          const hook = receiver.endpoint()
          const timestamp = Math.floor((Date.now() + shift) / 1000)
          assert.equal((await deliver(hook, event('p'), { timestamp })).status, 204)
          assert.ok(only(hook).receivedAt - Date.now() > shift - 5000, 'receivedAt is receiver time')
          assert.equal(referenceVerdict(hook.secret, only(hook)), 'WebhookVerificationError')
        },
        { now: () => Date.now() + shift },
      )
    })

    test('the raw bytes are signed: a body that is not UTF-8 still verifies', () => {
      const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`
      const body = Buffer.from([0x7b, 0xff, 0xfe, 0x7d])
      const signature = webhookSignature(secret, 'msg_bin', '1700000000', body)
      const verdict = verifyWebhookSignature({
        secrets: [secret],
        id: 'msg_bin',
        timestamp: '1700000000',
        signature,
        body,
        now: 1700000000_000,
      })
      assert.equal(verdict.valid, true)
    })

    test('strict timestamp format: leading zeros and suffixes are refused', () => {
      for (const timestamp of ['01700000000', '1700000000abc', '-1', '1700000000.5', ' 1700000000']) {
        const verdict = verifyWebhookSignature({
          secrets: [`whsec_${Buffer.alloc(32, 3).toString('base64')}`],
          id: 'm',
          timestamp,
          signature: 'v1,AAAA',
          body: '{}',
          now: 1700000000_000,
        })
        assert.equal(verdict.valid, false, timestamp)
        assert.match(verdict.valid ? '' : verdict.error, /is not integer seconds/, timestamp)
      }
    })
  })
})

/** Polls a condition that is set by a socket event outside the test's control (no event to await). */
async function waitUntil(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) assert.fail('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
