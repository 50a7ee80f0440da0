import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { ServiceEvent } from '../../../src/service/events.ts'
import { encodedOf } from '../../../src/service/issuance/credentials.ts'
import { sha256 } from '../../../src/service/oid4vci/grants.ts'
import type { Store } from '../../../src/service/store/index.ts'
import { STORE_KINDS } from '../../fixtures/stores.ts'
import { makeApp, OTHER, type TestApp } from '../../helpers.ts'
import {
  DEGREE,
  expectOAuth,
  newOffer,
  oid4vciConfig,
  PRE_AUTH,
  postToken,
  rejectProcess,
  submit,
  walletAsked,
  walletPost,
} from '../../oid4vci-helpers.ts'

// Issue 20: the token request and the deferred download each run one SQL statement in their common case (a
// conditional UPDATE carrying every check), and fall back to the read-and-judge path otherwise. What must
// hold on both stores: one statement on success, every refusal answered as before (error, description)
// with nothing written that should not be, and one winner among concurrent redemptions.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The OAuth error with exactly this description. */
function refused(response: LightMyRequestResponse, status: number, error: string, description: string) {
  const body = expectOAuth(response, status, error)
  assert.equal(body.error_description, description, response.body)
  return body
}

for (const kind of STORE_KINDS) {
  describe(`one statement per successful token and deferred request (${kind.name})`, {
    skip: kind.skip,
  }, () => {
    const databases = kind.use()
    let t: TestApp
    let store: Store
    before(async () => {
      t = await makeApp(oid4vciConfig(), await databases.fresh('redemption'))
      await t.app.ready()
      // Nothing but the request runs statements while they are counted.
      await t.app.services.webhookDispatcher.stop()
      await t.app.services.retention.stop()
      store = t.app.services.store
    })
    after(() => t?.close())

    const code = (c: string, extra: Record<string, string> = {}, tenant = 'demo') =>
      postToken(t.app, { grant_type: PRE_AUTH, 'pre-authorized_code': c, ...extra }, tenant)
    const deferred = (accessToken: string, body: unknown, tenant = 'demo') =>
      walletPost(t.app, 'deferred_credential', accessToken, body, tenant)
    /** Until no statement runs any more (a store's work after the answer, e.g. a webhook's delivery). */
    async function quiet() {
      for (let last = -1; last !== store.stats.statements; ) {
        last = store.stats.statements
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
    /**
     * The statements `work` runs. On PostgreSQL this instance is alone on its database: its feed sends no
     * pg_notify for the events (issue 38), so the figures are the same on both stores.
     */
    async function counted<T>(work: () => Promise<T>): Promise<{ value: T; statements: number }> {
      await quiet()
      const before = store.stats.statements
      const value = await work()
      await quiet()
      return { value, statements: store.stats.statements - before }
    }
    /** The grant and process rows as stored now. */
    const rows = async (processId: string) => ({
      grant: await store.grants.get(processId),
      process: await store.processes.get(processId),
    })

    describe('token endpoint', () => {
      test('success: one statement; the code is used and bound to the access token', async () => {
        const { code: c, processId } = await newOffer(t.app, 'degree')
        const before = await rows(processId)
        const { value: response, statements } = await counted(() => code(c))
        assert.equal(response.statusCode, 200, response.body)
        assert.equal(statements, 1)
        const { access_token: accessToken, expires_in } = response.json()
        assert.equal(expires_in, 3600)
        const after = await rows(processId)
        assert.deepEqual(after.process, before.process, 'the process is untouched')
        assert.deepEqual(after.grant, {
          ...before.grant,
          codeState: 'used',
          tokenHash: sha256(accessToken),
          tokenExpiresAt: t.clock.now() + 3600_000,
        })
      })

      test('with a tx_code: the read-and-judge path (two statements), as before', async () => {
        const { code: c, txCode, processId } = await newOffer(t.app, 'pin')
        const { value: response, statements } = await counted(() => code(c, { tx_code: txCode ?? '' }))
        assert.equal(response.statusCode, 200, response.body)
        assert.equal(statements, 2)
        const { grant } = await rows(processId)
        assert.equal(grant?.codeState, 'used')
        assert.equal(grant?.tokenHash, sha256(response.json().access_token))
      })

      test('unknown code, and a code of another tenant: unknown, nothing written', async () => {
        refused(
          await code('not-a-code'),
          400,
          'invalid_grant',
          'pre-authorized_code is unknown to this credential issuer',
        )
        const foreign = await newOffer(t.app, 'degree', OTHER.app)
        const before = await rows(foreign.processId)
        refused(
          await code(foreign.code),
          400,
          'invalid_grant',
          'pre-authorized_code is unknown to this credential issuer',
        )
        assert.deepEqual(await rows(foreign.processId), before)
        assert.equal((await code(foreign.code, {}, 'other')).statusCode, 200, 'still usable at its tenant')
      })

      test('an expired code: invalid_grant, the code stays live and unbound', async () => {
        const { code: c, processId } = await newOffer(t.app, 'degree')
        t.clock.advance(600_000)
        const before = await rows(processId)
        refused(await code(c), 400, 'invalid_grant', 'pre-authorized_code has expired')
        assert.deepEqual(await rows(processId), before)
        assert.equal(before.grant?.codeState, 'live')
      })

      test('a used code: invalid_grant, the first access token stays bound', async () => {
        const { code: c, processId } = await newOffer(t.app, 'degree')
        const first = await code(c)
        assert.equal(first.statusCode, 200)
        const before = await rows(processId)
        refused(await code(c), 400, 'invalid_grant', 'pre-authorized_code was already used')
        assert.deepEqual(await rows(processId), before)
        assert.equal(before.grant?.tokenHash, sha256(first.json().access_token))
      })

      test('a rejected process: invalid_grant with the reason; the code is not consumed', async () => {
        const { code: c, rp, processId } = await newOffer(t.app, 'degree')
        assert.equal((await rejectProcess(t.app, rp, processId, 'documents incomplete')).statusCode, 200)
        const before = await rows(processId)
        refused(await code(c), 400, 'invalid_grant', 'the issuance process is REJECTED: documents incomplete')
        assert.deepEqual(await rows(processId), before)
        assert.equal(before.grant?.codeState, 'live')
        assert.equal(before.grant?.tokenHash, null)
      })

      test('tx_code missing when announced, or sent when not: invalid_request, nothing counted', async () => {
        const pin = await newOffer(t.app, 'pin')
        const before = await rows(pin.processId)
        for (const extra of [{}, { tx_code: '' }, { user_pin: '' }] as Record<string, string>[]) {
          refused(
            await code(pin.code, extra),
            400,
            'invalid_request',
            'tx_code is required: the offer announced one',
          )
        }
        assert.deepEqual(await rows(pin.processId), before)
        assert.equal(before.grant?.txFailures, 0)
        const plain = await newOffer(t.app, 'degree')
        const plainBefore = await rows(plain.processId)
        for (const extra of [{ tx_code: '123456' }, { user_pin: '123456' }] as Record<string, string>[]) {
          refused(
            await code(plain.code, extra),
            400,
            'invalid_request',
            'tx_code was sent but the offer did not announce one',
          )
        }
        assert.deepEqual(await rows(plain.processId), plainBefore)
      })

      test('a wrong tx_code is counted, the fifth burns the code; the right one is refused then', async () => {
        const { code: c, txCode, processId } = await newOffer(t.app, 'pin')
        const wrong = txCode === '000000' ? '111111' : '000000'
        for (let failures = 1; failures <= 4; failures++) {
          refused(
            await code(c, { tx_code: wrong }),
            400,
            'invalid_grant',
            `tx_code is wrong (${5 - failures} attempts left)`,
          )
          const { grant } = await rows(processId)
          assert.equal(grant?.txFailures, failures)
          assert.equal(grant?.codeState, 'live')
          assert.equal(grant?.tokenHash, null)
        }
        refused(
          await code(c, { tx_code: wrong }),
          400,
          'invalid_grant',
          'tx_code is wrong; after 5 wrong attempts the pre-authorized_code is invalidated',
        )
        const before = await rows(processId)
        assert.equal(before.grant?.codeState, 'burnt')
        refused(
          await code(c, { tx_code: txCode ?? '' }),
          400,
          'invalid_grant',
          'pre-authorized_code was invalidated after too many wrong tx_code attempts',
        )
        assert.deepEqual(await rows(processId), before, 'nothing counted on a burnt code')
      })

      test('two concurrent redemptions of one code: exactly one access token', async () => {
        for (const parallel of [2, 10]) {
          const { code: c, processId } = await newOffer(t.app, 'degree')
          const responses = await Promise.all(Array.from({ length: parallel }, () => code(c)))
          const winners = responses.filter((r) => r.statusCode === 200)
          assert.equal(winners.length, 1, responses.map((r) => r.statusCode).join(','))
          for (const r of responses.filter((x) => x.statusCode !== 200)) {
            refused(r, 400, 'invalid_grant', 'pre-authorized_code was already used')
          }
          const { grant } = await rows(processId)
          assert.equal(grant?.tokenHash, sha256(winners[0]?.json().access_token))
        }
      })
    })

    describe('deferred credential endpoint', () => {
      /** Offer, token, the wallet's 202 credential request, then (issued) the relying party's submission. */
      async function waiting(group = 'degree', issued = true) {
        const w = await walletAsked(t, group)
        if (issued) assert.equal((await submit(t.app, w.rp, w.processId, DEGREE)).statusCode, 200)
        return w
      }

      test('success: one statement; the transaction is redeemed, the credential handed out and announced', async () => {
        const w = await waiting()
        const before = await rows(w.processId)
        assert.equal(before.process?.status, 'ISSUED')
        const events: ServiceEvent[] = []
        const off = t.app.services.events.on((event) => events.push(event))
        const { value: response, statements } = await counted(() =>
          deferred(w.accessToken, { transaction_id: w.transactionId }),
        )
        off()
        assert.equal(response.statusCode, 200, response.body)
        assert.equal(statements, 1)
        const body = response.json()
        assert.deepEqual(Object.keys(body).sort(), ['credentials', 'notification_id'])
        assert.match(body.notification_id, UUID)
        assert.deepEqual(
          body.credentials,
          (before.process?.data ?? []).map((c) => ({ credential: encodedOf(c) })),
        )
        const after = await rows(w.processId)
        assert.deepEqual(after.process, before.process, 'the process is untouched')
        assert.deepEqual(after.grant, {
          ...before.grant,
          redeemedAt: t.clock.now(),
          notificationId: body.notification_id,
        })
        assert.deepEqual(events, [
          {
            kind: 'issuance',
            tenantId: 'demo',
            templateId: 'degree',
            processId: w.processId,
            status: 'ISSUED',
            step: 'credential_retrieved',
            at: before.process?.updatedAt,
          },
        ])
      })

      test('the repository answers the grant as changed and its process as stored', async () => {
        const w = await waiting()
        const redeemed = await store.grants.markRedeemedByToken({
          tokenHash: sha256(w.accessToken),
          tenantId: 'demo',
          transactionId: w.transactionId,
          now: t.clock.now(),
          notificationId: '00000000-0000-4000-8000-00000000000a',
        })
        assert.deepEqual(redeemed, await rows(w.processId))
        assert.equal(redeemed?.grant.notificationId, '00000000-0000-4000-8000-00000000000a')
        assert.equal(
          await store.grants.markRedeemedByToken({
            tokenHash: sha256(w.accessToken),
            tenantId: 'demo',
            transactionId: w.transactionId,
            now: t.clock.now(),
            notificationId: '00000000-0000-4000-8000-00000000000b',
          }),
          undefined,
          'a second redemption changes nothing',
        )
      })

      test('still pending: 202 with the transaction (1.0), issuance_pending (draft 15); nothing redeemed', async () => {
        const w = await waiting('degree', false)
        const before = await rows(w.processId)
        const pending = await deferred(w.accessToken, { transaction_id: w.transactionId })
        assert.equal(pending.statusCode, 202, pending.body)
        assert.deepEqual(pending.json(), { transaction_id: w.transactionId, interval: 5 })
        assert.deepEqual(await rows(w.processId), before)

        const d15 = await waiting('degree-d15', false)
        const d15Before = await rows(d15.processId)
        const body = refused(
          await deferred(d15.accessToken, { transaction_id: d15.transactionId }),
          400,
          'issuance_pending',
          'the credential is not issued yet; retry after interval seconds',
        )
        assert.equal(body.interval, 5)
        assert.deepEqual(await rows(d15.processId), d15Before)
      })

      test('wrong or missing transaction_id, another tenant, an expired token: refused, nothing redeemed', async () => {
        const w = await waiting()
        const other = await waiting()
        const before = await rows(w.processId)
        for (const transactionId of ['00000000-0000-4000-8000-000000000000', other.transactionId]) {
          refused(
            await deferred(w.accessToken, { transaction_id: transactionId }),
            400,
            'invalid_transaction_id',
            'transaction_id is unknown to this access token',
          )
        }
        refused(await deferred(w.accessToken, {}), 400, 'invalid_request', 'transaction_id is required')
        refused(
          await deferred(w.accessToken, { transaction_id: w.transactionId }, 'other'),
          401,
          'invalid_token',
          'access token is unknown to this issuer',
        )
        assert.deepEqual(await rows(w.processId), before)
        t.clock.advance(3600_000)
        refused(
          await deferred(w.accessToken, { transaction_id: w.transactionId }),
          401,
          'invalid_token',
          'access token has expired',
        )
        assert.deepEqual(await rows(w.processId), before)
      })

      test('already redeemed: invalid_transaction_id; the first notification_id stays', async () => {
        const w = await waiting()
        const first = await deferred(w.accessToken, { transaction_id: w.transactionId })
        assert.equal(first.statusCode, 200, first.body)
        const before = await rows(w.processId)
        refused(
          await deferred(w.accessToken, { transaction_id: w.transactionId }),
          400,
          'invalid_transaction_id',
          'transaction_id was already redeemed',
        )
        assert.deepEqual(await rows(w.processId), before)
        assert.equal(before.grant?.notificationId, first.json().notification_id)
      })

      test('a rejected process: credential_request_denied with the reason; nothing redeemed', async () => {
        const w = await waiting('degree', false)
        assert.equal(
          (await rejectProcess(t.app, w.rp, w.processId, 'identity not confirmed')).statusCode,
          200,
        )
        const before = await rows(w.processId)
        refused(
          await deferred(w.accessToken, { transaction_id: w.transactionId }),
          400,
          'credential_request_denied',
          'the issuer rejected this issuance: identity not confirmed',
        )
        assert.deepEqual(await rows(w.processId), before)
      })

      test('two concurrent downloads of one transaction: exactly one hands the credential out', async () => {
        const w = await waiting()
        const responses = await Promise.all(
          [1, 2].map(() => deferred(w.accessToken, { transaction_id: w.transactionId })),
        )
        const winners = responses.filter((r) => r.statusCode === 200)
        assert.equal(winners.length, 1, responses.map((r) => r.statusCode).join(','))
        for (const r of responses.filter((x) => x.statusCode !== 200)) {
          refused(r, 400, 'invalid_transaction_id', 'transaction_id was already redeemed')
        }
        const { grant } = await rows(w.processId)
        assert.equal(grant?.notificationId, winners[0]?.json().notification_id)
      })
    })
  })
}
