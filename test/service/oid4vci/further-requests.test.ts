import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { generateWebhookSecret } from '../../../src/harness/webhook-receiver.ts'
import type { ServiceEvent } from '../../../src/service/events.ts'
import type { Store } from '../../../src/service/store/index.ts'
import { getStatus, STATUS_VALUES } from '../../../src/shared/bitstring.ts'
import { resolveDidKey } from '../../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../../src/shared/jws.ts'
import { STORE_KINDS } from '../../fixtures/stores.ts'
import { makeApp, OTHER, type TestApp } from '../../helpers.ts'
import {
  changeStatus,
  DEGREE,
  expectOAuth,
  grantFor,
  type Holder,
  jwtRequest,
  newHolder,
  nonceOf,
  oid4vciConfig,
  proofJwt,
  readProcess,
  rejectProcess,
  submit,
  walletAsked,
  walletPost,
} from '../../oid4vci-helpers.ts'

// Issue 34: further credential requests on one access token. OpenID4VCI 1.0 §8 ("the Client can send several
// consecutive Credential Requests") and §14.3 ("The Credential Endpoint can be accessed multiple times by a
// Wallet using the same Access Token, even for the same Credential"; draft 15 §13.3 says the same), as the
// OpenID Foundation's oid4vci-1_0-issuer-happy-flow-additional-requests module asks: each further request with
// a fresh nonce from the nonce endpoint. Until issue 34 the service refused every request after the first
// with invalid_credential_request. On both stores: the status change and the further instance lock the
// process's row (PostgreSQL: FOR UPDATE).

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A 1.0 credential request (§8.2): the configuration and a list of jwt proofs. */
const v1Request = (configurationId: string, jwt: string) => ({
  credential_configuration_id: configurationId,
  proofs: { jwt: [jwt] },
})

type CredentialAnswer = { credentials: { credential: string }[]; notification_id: string }

/** The claims of a jwt_vc_json credential, its signature checked against its issuer's did:key. */
function claimsOf(jwt: string) {
  const { header, payload } = decodeJws(jwt)
  verifyJws(jwt, resolveDidKey(String(header.kid)).publicKey, { algorithms: ['EdDSA', 'ES256', 'ES256K'] })
  return payload as {
    iss: string
    sub: string
    jti: string
    vc: { credentialSubject: Record<string, unknown>; credentialStatus: { id: string } }
  }
}

for (const kind of STORE_KINDS) {
  describe(`further credential requests on one access token (${kind.name})`, { skip: kind.skip }, () => {
    const databases = kind.use()
    let t: TestApp
    let store: Store
    before(async () => {
      const config = oid4vciConfig()
      const degree = config.tenants[0]?.issuanceTemplates?.find((template) => template.id === 'degree')
      if (!degree) throw new Error('no degree template')
      // A webhook, to see that the relying party is told once; the dispatcher is stopped (nothing listens).
      degree.webhookUrl = 'http://127.0.0.1:9/hook'
      degree.webhookSecret = generateWebhookSecret()
      t = await makeApp(config, await databases.fresh('further-requests'))
      await t.app.ready()
      await t.app.services.webhookDispatcher.stop()
      store = t.app.services.store
    })
    after(() => t?.close())

    const credential = (accessToken: string, body: unknown, tenant = 'demo') =>
      walletPost(t.app, 'credential', accessToken, body, tenant)
    const notify = (accessToken: string, body: unknown) =>
      walletPost(t.app, 'notification', accessToken, body)
    /** A credential request by `holder` with an unused nonce from the nonce endpoint (1.0 §7). */
    const again = async (accessToken: string, holder: Holder, configurationId = 'degree') =>
      credential(accessToken, v1Request(configurationId, proofJwt(holder, t.clock, await nonceOf(t.app))))
    const issued = (response: { statusCode: number; body: string; json(): unknown }) => {
      assert.equal(response.statusCode, 200, response.body)
      return response.json() as CredentialAnswer
    }
    /** Content submitted, then the first request (200): the process is ISSUED. */
    async function issuedProcess(holder: Holder, content: unknown = DEGREE) {
      const g = await grantFor(t.app, 'degree')
      assert.equal((await submit(t.app, g.rp, g.processId, content)).statusCode, 200)
      const first = issued(
        await credential(g.accessToken, v1Request('degree', proofJwt(holder, t.clock, g.cNonce))),
      )
      return { ...g, first }
    }
    const issuanceWebhooks = async (processId: string) =>
      (await store.webhooks.listByTemplate('demo', 'degree', { limit: 500 })).filter(
        (event) => event.subjectId === processId,
      )

    test('§14.3: another key with a fresh nonce gets the same content signed for it, its own id, status entry and notification_id; the process, its data and its webhook stay as they were', async () => {
      const [a, b] = [newHolder(), newHolder('ES256')]
      const g = await issuedProcess(a)
      const process = await readProcess(t.app, g.rp, g.processId)
      assert.equal((await issuanceWebhooks(g.processId)).length, 1)
      const events: ServiceEvent[] = []
      const off = t.app.services.events.on((event) => events.push(event))
      const second = issued(await again(g.accessToken, b))
      off()
      assert.deepEqual(Object.keys(second).sort(), ['credentials', 'notification_id'])
      assert.match(second.notification_id, UUID)
      assert.notEqual(second.notification_id, g.first.notification_id)
      const [one, two] = [g.first, second].map((answer) => claimsOf(answer.credentials[0]?.credential ?? ''))
      assert.ok(one && two)
      assert.equal(two.sub, b.did, "bound to the further request's key")
      assert.equal(one.sub, a.did)
      assert.equal(two.iss, one.iss)
      assert.deepEqual(two.vc.credentialSubject, { ...one.vc.credentialSubject, id: b.did })
      assert.notEqual(two.jti, one.jti)
      assert.match(two.jti, /^urn:uuid:/)
      assert.notEqual(two.vc.credentialStatus.id, one.vc.credentialStatus.id, 'its own status entry')
      assert.deepEqual(
        await readProcess(t.app, g.rp, g.processId),
        process,
        'the process is not issued again',
      )
      assert.equal((await issuanceWebhooks(g.processId)).length, 1, 'the relying party was told once')
      assert.deepEqual(
        events.map((e) => [e.kind, 'processId' in e ? e.processId : '', 'step' in e ? e.step : '']),
        [['issuance', g.processId, 'credential_retrieved']],
      )
      // The same key may ask again too, and a draft-15 wallet's singular proof is served alike (draft 15 §13.3).
      const third = issued(
        await credential(g.accessToken, jwtRequest('degree', proofJwt(a, t.clock, await nonceOf(t.app)))),
      )
      const three = claimsOf(third.credentials[0]?.credential ?? '')
      assert.equal(three.sub, a.did)
      assert.ok(![one.jti, two.jti].includes(three.jti))
      assert.equal(new Set([g.first, second, third].map((x) => x.notification_id)).size, 3)
      const rows = await store.issuedCredentials.listByProcess(g.processId)
      assert.equal(rows.length, 3)
      const original = process.data?.[0]?.id
      assert.deepEqual(rows.map((r) => r.instanceOf ?? null).sort(), [null, original, original].sort())
    })

    test("each request needs an unused nonce: the c_nonce the first used, or none → the first request's errors, nothing issued", async () => {
      const [a, b] = [newHolder(), newHolder()]
      const g = await issuedProcess(a)
      const replay = expectOAuth(
        await credential(g.accessToken, v1Request('degree', proofJwt(b, t.clock, g.cNonce))),
        400,
        'invalid_nonce',
      )
      assert.equal(typeof replay.c_nonce, 'string', 'a fresh c_nonce comes with invalid_nonce')
      expectOAuth(
        await credential(g.accessToken, v1Request('degree', proofJwt(b, t.clock, undefined))),
        400,
        'invalid_nonce',
      )
      const used = await nonceOf(t.app)
      issued(await credential(g.accessToken, v1Request('degree', proofJwt(b, t.clock, used))))
      expectOAuth(
        await credential(g.accessToken, v1Request('degree', proofJwt(a, t.clock, used))),
        400,
        'invalid_nonce',
      )
      assert.equal((await store.issuedCredentials.listByProcess(g.processId)).length, 2)
    })

    test('1.0 §8.3.1.2: a further request with neither proof nor proofs is invalid_proof (until issue 34: invalid_credential_request); both at once too (draft 15 §8.3.1.2)', async () => {
      const a = newHolder()
      const g = await issuedProcess(a)
      expectOAuth(
        await credential(g.accessToken, { credential_configuration_id: 'degree' }),
        400,
        'invalid_proof',
        /key proof is required/,
      )
      const jwt = proofJwt(a, t.clock, await nonceOf(t.app))
      expectOAuth(
        await credential(g.accessToken, { ...jwtRequest('degree', jwt), proofs: { jwt: [jwt] } }),
        400,
        'invalid_proof',
        /either proof or proofs/,
      )
      // Neither refusal used the nonce.
      issued(await credential(g.accessToken, v1Request('degree', jwt)))
    })

    test("the token's rules hold: another tenant's endpoint and another configuration are refused, and an expired token is invalid_token", async () => {
      const a = newHolder()
      const g = await issuedProcess(a)
      const body = v1Request('degree', proofJwt(a, t.clock, await nonceOf(t.app)))
      const foreign = await credential(g.accessToken, body, OTHER.app.tenant)
      assert.equal(foreign.statusCode, 401, foreign.body)
      assert.match(String(foreign.headers['www-authenticate']), /invalid_token/)
      expectOAuth(
        await credential(g.accessToken, v1Request('pin', proofJwt(a, t.clock, await nonceOf(t.app)))),
        400,
        'invalid_credential_request',
        /grants "degree"/,
      )
      t.clock.advance(3600_000)
      const expired = await again(g.accessToken, a)
      assert.equal(expired.statusCode, 401, expired.body)
      assert.match(String(expired.headers['www-authenticate']), /invalid_token/)
      assert.equal((await store.issuedCredentials.listByProcess(g.processId)).length, 1)
    })

    test('content submitted for a named holder is not signed for another key (credential_request_denied, its nonce kept); the named holder may ask again', async () => {
      const [a, b] = [newHolder(), newHolder()]
      const named = DEGREE.map((c) => ({ ...c, credentialSubject: { ...c.credentialSubject, id: a.did } }))
      const g = await issuedProcess(a, named)
      const nonce = await nonceOf(t.app)
      expectOAuth(
        await credential(g.accessToken, v1Request('degree', proofJwt(b, t.clock, nonce))),
        400,
        'credential_request_denied',
        new RegExp(`bound to ${a.did}`),
      )
      const answer = issued(await credential(g.accessToken, v1Request('degree', proofJwt(a, t.clock, nonce))))
      assert.equal(claimsOf(answer.credentials[0]?.credential ?? '').sub, a.did)
    })

    test("a status change of the process reaches every further instance, the answer naming the process's own credentials; while suspended or once revoked nothing more is issued", async () => {
      const [a, b] = [newHolder(), newHolder()]
      const g = await issuedProcess(a)
      issued(await again(g.accessToken, b))
      const originalId = (await readProcess(t.app, g.rp, g.processId)).data?.[0]?.id
      const statuses = async () => {
        const rows = await store.issuedCredentials.listByProcess(g.processId)
        const bits = await Promise.all(
          rows.map(async (r) =>
            getStatus((await store.statusLists.get(r.listId))?.bits ?? new Uint8Array(), r.listIndex),
          ),
        )
        return { rows: rows.map((r) => r.status), bits }
      }
      const suspended = await changeStatus(t.app, g.rp, g.processId, { status: 'suspended' })
      assert.equal(suspended.statusCode, 200, suspended.body)
      assert.deepEqual(suspended.json(), { credentials: [{ id: originalId, status: 'suspended' }] })
      assert.deepEqual(await statuses(), {
        rows: ['suspended', 'suspended'],
        bits: [STATUS_VALUES.suspended, STATUS_VALUES.suspended],
      })
      expectOAuth(await again(g.accessToken, b), 400, 'credential_request_denied', /suspended/)
      assert.equal((await changeStatus(t.app, g.rp, g.processId, { status: 'active' })).statusCode, 200)
      issued(await again(g.accessToken, b))
      const revoked = await changeStatus(t.app, g.rp, g.processId, {
        status: 'revoked',
        credentialIds: [originalId],
      })
      assert.deepEqual(revoked.json(), { credentials: [{ id: originalId, status: 'revoked' }] })
      assert.deepEqual(await statuses(), {
        rows: ['revoked', 'revoked', 'revoked'],
        bits: [STATUS_VALUES.revoked, STATUS_VALUES.revoked, STATUS_VALUES.revoked],
      })
      expectOAuth(await again(g.accessToken, a), 400, 'credential_request_denied', /revoked/)
      // A further instance's id is not one the relying party addresses.
      const rows = await store.issuedCredentials.listByProcess(g.processId)
      const instance = rows.find((r) => r.instanceOf)?.id ?? ''
      const unknown = await changeStatus(t.app, g.rp, g.processId, {
        status: 'revoked',
        credentialIds: [instance],
      })
      assert.equal(unknown.statusCode, 404, unknown.body)
    })

    test('a revocation and further requests at the same moment: no instance stays valid beside its revoked original', async () => {
      const [a, b] = [newHolder(), newHolder()]
      const g = await issuedProcess(a)
      const bodies = await Promise.all(
        [b, a, b].map(async (h) => v1Request('degree', proofJwt(h, t.clock, await nonceOf(t.app)))),
      )
      const [revoked, ...answers] = await Promise.all([
        changeStatus(t.app, g.rp, g.processId, { status: 'revoked' }),
        ...bodies.map((body) => credential(g.accessToken, body)),
      ])
      assert.equal(revoked?.statusCode, 200, revoked?.body)
      for (const answer of answers) {
        if (answer.statusCode !== 200) expectOAuth(answer, 400, 'credential_request_denied', /revoked/)
      }
      const rows = await store.issuedCredentials.listByProcess(g.processId)
      assert.equal(rows.length, 1 + answers.filter((x) => x.statusCode === 200).length)
      assert.deepEqual(
        rows.map((r) => r.status),
        rows.map(() => 'revoked'),
      )
    })

    test('notification (§10): a further response has its own notification_id, idempotent like the first, whose id stays valid', async () => {
      const a = newHolder()
      const g = await issuedProcess(a)
      const other = await issuedProcess(newHolder())
      const second = issued(await again(g.accessToken, a))
      const accepted = { notification_id: second.notification_id, event: 'credential_accepted' }
      for (let i = 0; i < 2; i++) assert.equal((await notify(g.accessToken, accepted)).statusCode, 204)
      expectOAuth(
        await notify(g.accessToken, { ...accepted, event: 'credential_deleted' }),
        400,
        'invalid_notification_id',
        /already notified with "credential_accepted"/,
      )
      const first = { notification_id: g.first.notification_id, event: 'credential_failure' }
      assert.equal((await notify(g.accessToken, first)).statusCode, 204)
      expectOAuth(
        await notify(other.accessToken, accepted),
        400,
        'invalid_notification_id',
        /unknown to this access token/,
      )
      expectOAuth(
        await notify(g.accessToken, { notification_id: 'nope', event: 'credential_accepted' }),
        400,
        'invalid_notification_id',
        /unknown to this access token/,
      )
    })

    test('attended issuance: while PENDING the same holder gets the same 202 (its nonce used) and another key is refused (its nonce kept); once ISSUED, before or after the deferred download, further requests get credentials', async () => {
      const [a, b] = [newHolder(), newHolder()]
      const w = await walletAsked(t, 'degree', a)
      const n1 = await nonceOf(t.app)
      const pending = await credential(w.accessToken, v1Request('degree', proofJwt(a, t.clock, n1)))
      assert.equal(pending.statusCode, 202, pending.body)
      assert.deepEqual(pending.json(), { transaction_id: w.transactionId, interval: 5 })
      expectOAuth(
        await credential(w.accessToken, v1Request('degree', proofJwt(a, t.clock, n1))),
        400,
        'invalid_nonce',
      )
      const n2 = await nonceOf(t.app)
      expectOAuth(
        await credential(w.accessToken, v1Request('degree', proofJwt(b, t.clock, n2))),
        400,
        'invalid_credential_request',
        /waits for the issuer/,
      )
      assert.equal(
        (await credential(w.accessToken, v1Request('degree', proofJwt(a, t.clock, n2)))).statusCode,
        202,
      )
      const before = await readProcess(t.app, w.rp, w.processId)
      assert.equal(before.status, 'PENDING')
      assert.equal((await submit(t.app, w.rp, w.processId, DEGREE)).statusCode, 200)
      const early = issued(await again(w.accessToken, b))
      assert.equal(claimsOf(early.credentials[0]?.credential ?? '').sub, b.did)
      const download = await walletPost(t.app, 'deferred_credential', w.accessToken, {
        transaction_id: w.transactionId,
      })
      const downloaded = issued(download)
      assert.equal(claimsOf(downloaded.credentials[0]?.credential ?? '').sub, a.did)
      const late = issued(await again(w.accessToken, a))
      assert.equal(new Set([early, downloaded, late].map((x) => x.notification_id)).size, 3)
      assert.equal((await readProcess(t.app, w.rp, w.processId)).status, 'ISSUED')
      assert.equal((await issuanceWebhooks(w.processId)).length, 1)
    })

    test('a rejected process answers a further request credential_request_denied', async () => {
      const a = newHolder()
      const w = await walletAsked(t, 'degree', a)
      assert.equal((await rejectProcess(t.app, w.rp, w.processId, 'no match')).statusCode, 200)
      expectOAuth(await again(w.accessToken, a), 400, 'credential_request_denied', /no match/)
    })

    test('an SD-JWT VC configuration: the further instance is bound to the new key (sub and cnf.jwk)', async () => {
      const [a, b] = [newHolder(), newHolder('ES256')]
      const g = await grantFor(t.app, 'pid')
      const content = [
        {
          type: ['VerifiableCredential', 'VerifiableId'],
          credentialSubject: { givenName: 'Jane', familyName: 'Doe' },
        },
      ]
      assert.equal((await submit(t.app, g.rp, g.processId, content)).statusCode, 200)
      issued(await credential(g.accessToken, v1Request('pid', proofJwt(a, t.clock, g.cNonce))))
      const second = issued(await again(g.accessToken, b, 'pid'))
      const sdJwt = second.credentials[0]?.credential ?? ''
      const { payload } = decodeJws(sdJwt.split('~')[0] ?? '')
      assert.equal(payload.sub, b.did)
      assert.deepEqual((payload.cnf as { jwk: JsonWebKey }).jwk, b.publicJwk)
    })
  })
}
