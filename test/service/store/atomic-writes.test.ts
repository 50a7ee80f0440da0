import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import type {
  GrantRecord,
  ProcessRecord,
  SessionRecord,
  Store,
  Validations,
  WebhookEventRecord,
} from '../../../src/service/store/index.ts'
import { STORE_KINDS } from '../../fixtures/stores.ts'

// Writes atomic by themselves (store/index.ts, Store; issue 38): grants.createWithProcess,
// grants.recordCredentialRequestWithProcess and sessions.completeWithEvent make both of their rows or neither
// with no store.transaction around them. On PostgreSQL each is one statement (a data-modifying CTE) with no
// BEGIN/COMMIT; on SQLite, called on the root store, their statements run in a transaction of the store's own,
// as they ran in the caller's before (BEGIN IMMEDIATE, the two statements, COMMIT). What must hold on both:
// both rows or neither when either condition fails, also when another transaction changes a row while the
// write waits for it.

const TENANT = 'demo'
const NOW = 1_800_000_000_000

/** Statements of a root call alone: PostgreSQL one; SQLite its statements inside BEGIN … COMMIT. */
const alone = (kind: string, sqliteStatements: number) => (kind === 'PostgreSQL' ? 1 : sqliteStatements + 2)

const processOf = (id = randomUUID()): ProcessRecord => ({
  id,
  tenantId: TENANT,
  templateId: 'degree',
  type: 'OIDC4VCI_PRE_AUTHORIZED',
  status: 'PENDING',
  data: null,
  validator: null,
  submitted: null,
  rejectedReason: null,
  createdByKey: 'app-key',
  createdAt: NOW,
  updatedAt: NOW,
})

const grantOf = (processId: string): GrantRecord => ({
  processId,
  tenantId: TENANT,
  codeHash: randomUUID(),
  codeExpiresAt: NOW + 600_000,
  txCodeHash: null,
  txFailures: 0,
  codeState: 'used',
  tokenHash: randomUUID(),
  tokenExpiresAt: NOW + 600_000,
  holderDid: null,
  credentialRequestedAt: null,
  transactionId: null,
  redeemedAt: null,
  notificationId: null,
  notificationEvent: null,
  tokenJkt: null,
  batchHolders: null,
})

/** A credential request as the attended first request records it (a transaction_id, no notification yet). */
const requestOf = (holderDid: string) => ({
  holderDid,
  at: NOW + 10,
  transactionId: randomUUID(),
  notificationId: null,
  batchHolders: ['did:example:second-key'],
})

/** The process as that request binds it: the holder's validator, a later stamp. */
const boundOf = (process: ProcessRecord, holder: string): ProcessRecord => ({
  ...process,
  validator: { id: holder } as unknown as ProcessRecord['validator'],
  updatedAt: process.updatedAt + 1,
})

const sessionOf = (id = randomUUID()): SessionRecord => ({
  id,
  tenantId: TENANT,
  templateId: 'degree-check',
  createdByKey: 'app-key',
  status: 'PENDING',
  profile: 'dcql',
  definition: null,
  request: { nonce: 'n' } as unknown as SessionRecord['request'],
  requestJwt: '',
  responseKey: null,
  policy: { trustedIssuers: [], requireStatus: false },
  createdAt: NOW,
  updatedAt: NOW,
  expiresAt: NOW + 60_000,
  requestedAt: null,
  submission: null,
  submissionFormat: '',
  validations: null,
  subject: null,
  sourceWallet: null,
  callback: null,
})

const VERIFIED: Validations = {
  status: 'SUCCESS',
  checks: [],
  verificationResult: { checks: [], warnings: [], errors: [] },
} as unknown as Validations

/** The outcome of a response, as oid4vp/service.ts records it. */
const verifiedOf = (session: SessionRecord): SessionRecord => ({
  ...session,
  status: 'VERIFIED',
  validations: VERIFIED,
  subject: 'did:example:holder',
  submission: { holder: 'did:example:holder' },
  submissionFormat: 'dc+sd-jwt',
  updatedAt: NOW + 20,
})

/** The event the outbox builds for it (webhooks/outbox.ts eventFor), leased to `owner`. */
const eventOf = (subjectId: string, owner: string | null = 'dispatcher-a'): WebhookEventRecord => ({
  id: `msg_${randomUUID()}`,
  tenantId: TENANT,
  templateId: 'degree-check',
  templateKind: 'verification',
  subjectId,
  type: 'verification.verified',
  url: 'https://rp.example/hook',
  body: '{"status":"SUCCESS"}',
  state: 'pending',
  attempts: 0,
  nextAttemptAt: NOW + 20,
  leaseUntil: owner ? NOW + 60_000 : null,
  leaseOwner: owner,
  lastStatus: null,
  lastError: null,
  createdAt: NOW + 20,
  updatedAt: NOW + 20,
  deliveredAt: null,
})

for (const kind of STORE_KINDS)
  describe(`writes atomic by themselves (${kind.name})`, { skip: kind.skip }, () => {
    const databases = kind.use()
    let store: Store
    before(async () => {
      store = await (await databases.fresh('atomic writes')).open()
      await store.tenants.create({ id: TENANT, source: 'portal', createdAt: 1 })
    })
    after(() => store?.close())

    /** The statements `work` ran (BEGIN and COMMIT included), and its answer. */
    async function counted<T>(work: () => Promise<T>) {
      const before = store.stats.statements
      const value = await work()
      return { value, statements: store.stats.statements - before }
    }

    /** A process and its grant, stored; the grant's token redeemed (a credential request may follow). */
    async function offered() {
      const process = processOf()
      const grant = grantOf(process.id)
      await store.grants.createWithProcess(process, grant)
      return { process, grant }
    }

    describe('grants.createWithProcess (an offer)', () => {
      test(`on the root store: both rows, in ${alone(kind.name, 2)} statement(s)`, async () => {
        const process = processOf()
        const grant = grantOf(process.id)
        const { statements } = await counted(() => store.grants.createWithProcess(process, grant))
        assert.equal(statements, alone(kind.name, 2))
        assert.deepEqual(await store.processes.get(process.id), process)
        assert.deepEqual(await store.grants.withProcess({ processId: process.id }), { grant, process })
      })

      test('a grant that collides (its code hash is taken) leaves no process: a ConflictError', async () => {
        const { grant: taken } = await offered()
        const process = processOf()
        await assert.rejects(
          store.grants.createWithProcess(process, { ...grantOf(process.id), codeHash: taken.codeHash }),
          { name: 'ConflictError' },
        )
        assert.equal(await store.processes.get(process.id), undefined, 'the process insert is undone')
      })

      test("on a transaction's repositories: part of that transaction", async () => {
        const process = processOf()
        await assert.rejects(
          store.transaction(async (repos) => {
            await repos.grants.createWithProcess(process, grantOf(process.id))
            throw new Error('a later write of the transaction failed')
          }),
          /a later write/,
        )
        assert.equal(await store.processes.get(process.id), undefined)
        assert.equal(await store.grants.get(process.id), undefined)
      })
    })

    describe('grants.recordCredentialRequestWithProcess (the first credential request)', () => {
      test(`both conditions hold: the process bound and the request recorded, in ${alone(kind.name, 2)} statement(s)`, async () => {
        const { process, grant } = await offered()
        const bound = boundOf(process, 'did:example:holder')
        const request = requestOf('did:example:holder')
        const { value, statements } = await counted(() =>
          store.grants.recordCredentialRequestWithProcess(bound, process.updatedAt, request),
        )
        assert.equal(value, true)
        assert.equal(statements, alone(kind.name, 2))
        assert.deepEqual(await store.grants.withProcess({ processId: process.id }), {
          process: bound,
          grant: {
            ...grant,
            holderDid: request.holderDid,
            credentialRequestedAt: request.at,
            transactionId: request.transactionId,
            notificationId: null,
            batchHolders: request.batchHolders,
          },
        })
      })

      test('a request recorded already: false, and the process is left as it was', async () => {
        const { process } = await offered()
        const first = requestOf('did:example:first')
        assert.equal(await store.grants.recordCredentialRequest(process.id, first), true)
        const grant = await store.grants.get(process.id)
        const written = await store.grants.recordCredentialRequestWithProcess(
          boundOf(process, 'did:example:second'),
          process.updatedAt,
          requestOf('did:example:second'),
        )
        assert.equal(written, false)
        assert.deepEqual(await store.processes.get(process.id), process, 'the process untouched')
        assert.deepEqual(await store.grants.get(process.id), grant, 'the first request stays')
      })

      test('the process changed since it was read: false, and no request is recorded', async () => {
        const { process, grant } = await offered()
        const submitted = { ...process, submitted: [], updatedAt: process.updatedAt + 5 }
        assert.equal(await store.processes.update(submitted, process.updatedAt), true)
        const written = await store.grants.recordCredentialRequestWithProcess(
          boundOf(process, 'did:example:holder'),
          process.updatedAt,
          requestOf('did:example:holder'),
        )
        assert.equal(written, false)
        assert.deepEqual(await store.processes.get(process.id), submitted)
        assert.deepEqual(await store.grants.get(process.id), grant, 'no request recorded')
      })

      // The case two UPDATEs each holding the other's condition get wrong on PostgreSQL: the grant's
      // condition judged on the statement's snapshot (still unrequested) would let the process be written,
      // while the grant's UPDATE, waiting for the other transaction's row, finds it requested and writes
      // nothing. The write locks both rows and judges both again once the other transaction committed.
      test('a request recorded by a transaction that commits while the write waits: false, the process untouched', async () => {
        const { process } = await offered()
        const other = requestOf('did:example:other')
        let recorded: () => void = () => {}
        const holding = new Promise<void>((resolve) => {
          recorded = resolve
        })
        const transaction = store.transaction(async (repos) => {
          assert.equal(await repos.grants.recordCredentialRequest(process.id, other), true)
          recorded()
          await delay(300) // holds the grant's row (PostgreSQL) or the write lock (SQLite)
        })
        await holding
        const written = await store.grants.recordCredentialRequestWithProcess(
          boundOf(process, 'did:example:holder'),
          process.updatedAt,
          requestOf('did:example:holder'),
        )
        await transaction
        assert.equal(written, false)
        assert.deepEqual(await store.processes.get(process.id), process, 'the process untouched')
        assert.equal((await store.grants.get(process.id))?.holderDid, other.holderDid)
      })

      test('the process changed by a transaction that commits while the write waits: false, no request recorded', async () => {
        const { process, grant } = await offered()
        const rejected = {
          ...process,
          status: 'REJECTED' as const,
          rejectedReason: 'no',
          updatedAt: process.updatedAt + 5,
        }
        let changed: () => void = () => {}
        const holding = new Promise<void>((resolve) => {
          changed = resolve
        })
        const transaction = store.transaction(async (repos) => {
          assert.equal(await repos.processes.update(rejected, process.updatedAt), true)
          changed()
          await delay(300)
        })
        await holding
        const written = await store.grants.recordCredentialRequestWithProcess(
          boundOf(process, 'did:example:holder'),
          process.updatedAt,
          requestOf('did:example:holder'),
        )
        await transaction
        assert.equal(written, false)
        assert.deepEqual(await store.processes.get(process.id), rejected)
        assert.deepEqual(await store.grants.get(process.id), grant, 'no request recorded')
      })
    })

    describe('sessions.completeWithEvent (a response’s outcome and its webhook event)', () => {
      test(`a PENDING session: completed and its event written as enqueue writes it, in ${alone(kind.name, 2)} statement(s)`, async () => {
        const session = sessionOf()
        await store.sessions.create(session)
        const event = eventOf(session.id)
        const verified = verifiedOf(session)
        const { value, statements } = await counted(() =>
          store.sessions.completeWithEvent(verified, NOW + 20, event),
        )
        assert.equal(statements, alone(kind.name, 2))
        assert.equal(value.completed, true)
        assert.ok(value.event, 'the event as written')
        assert.equal(typeof value.event.event.seq, 'number')
        assert.deepEqual(value.event, {
          event: { ...event, seq: value.event.event.seq, logCount: 0 },
          endpointDisabled: null,
        })
        assert.deepEqual(await store.webhooks.get(event.id), value.event.event, 'the row as answered')
        assert.deepEqual(await store.sessions.get(session.id), verified)
      })

      test('an already completed session: not completed, and no event inserted', async () => {
        const session = sessionOf()
        await store.sessions.create(session)
        const first = await store.sessions.completeWithEvent(
          verifiedOf(session),
          NOW + 20,
          eventOf(session.id),
        )
        assert.equal(first.completed, true)
        const stored = await store.sessions.get(session.id)
        const second = eventOf(session.id)
        const again = await store.sessions.completeWithEvent(
          { ...verifiedOf(session), status: 'REJECTED', updatedAt: NOW + 30 },
          NOW + 30,
          second,
        )
        assert.deepEqual(again, { completed: false })
        assert.equal(
          await store.webhooks.get(second.id),
          undefined,
          'no event for a change that did not happen',
        )
        assert.deepEqual(await store.sessions.get(session.id), stored)
      })

      test('an expired session: not completed, and no event inserted', async () => {
        const session = sessionOf()
        await store.sessions.create(session)
        const event = eventOf(session.id)
        const outcome = await store.sessions.completeWithEvent(verifiedOf(session), session.expiresAt, event)
        assert.deepEqual(outcome, { completed: false })
        assert.equal(await store.webhooks.get(event.id), undefined)
        assert.deepEqual(await store.sessions.get(session.id), session)
      })

      test('an event id that exists: a ConflictError, and the session is not completed', async () => {
        const session = sessionOf()
        await store.sessions.create(session)
        const taken = eventOf(randomUUID())
        await store.webhooks.enqueue(taken)
        await assert.rejects(
          store.sessions.completeWithEvent(verifiedOf(session), NOW + 20, {
            ...eventOf(session.id),
            id: taken.id,
          }),
          { name: 'ConflictError' },
        )
        assert.deepEqual(await store.sessions.get(session.id), session, 'the completion is undone')
      })

      test('an older event of the subject pending: the new one is written without its lease, as enqueue writes it', async () => {
        const session = sessionOf()
        await store.sessions.create(session)
        await store.webhooks.enqueue(eventOf(session.id, null))
        const event = eventOf(session.id, 'dispatcher-a')
        const outcome = await store.sessions.completeWithEvent(verifiedOf(session), NOW + 20, event)
        assert.equal(outcome.completed, true)
        assert.equal(outcome.event?.event.leaseOwner, null)
        assert.equal(outcome.event?.event.leaseUntil, null)
        assert.equal((await store.webhooks.get(event.id))?.leaseOwner, null)
      })

      test(`no event (a template without webhookUrl): completed alone, in ${alone(kind.name, 1)} statement(s)`, async () => {
        const session = sessionOf()
        await store.sessions.create(session)
        const { value, statements } = await counted(() =>
          store.sessions.completeWithEvent(verifiedOf(session), NOW + 20),
        )
        assert.deepEqual(value, { completed: true })
        assert.equal(statements, alone(kind.name, 1))
        assert.deepEqual(await store.sessions.get(session.id), verifiedOf(session))
      })

      test('a session completed by a transaction that commits while the write waits: not completed, no event', async () => {
        const session = sessionOf()
        await store.sessions.create(session)
        const rejected = { ...verifiedOf(session), status: 'REJECTED' as const }
        let completed: () => void = () => {}
        const holding = new Promise<void>((resolve) => {
          completed = resolve
        })
        const transaction = store.transaction(async (repos) => {
          assert.equal(await repos.sessions.complete(rejected, NOW + 20), true)
          completed()
          await delay(300)
        })
        await holding
        const event = eventOf(session.id)
        const outcome = await store.sessions.completeWithEvent(verifiedOf(session), NOW + 20, event)
        await transaction
        assert.deepEqual(outcome, { completed: false })
        assert.equal(await store.webhooks.get(event.id), undefined)
        assert.deepEqual(await store.sessions.get(session.id), rejected)
      })
    })
  })
