import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { TenantKeys } from '../../../src/service/crypto/tenant-keys.ts'
import { StatusLists } from '../../../src/service/status/service.ts'
import type { Store } from '../../../src/service/store/index.ts'
import { ManualClock } from '../../../src/service/util/clock.ts'
import { PublicUrls } from '../../../src/service/util/urls.ts'
import { STORE_KINDS } from '../../fixtures/stores.ts'

// Issue 38: a shared deployment counts status entries ahead (status/service.ts StatusLists `ahead`), so an
// issuance's transaction writes its credential's slot without updating its list's counter row, which a
// group-committed batch on PostgreSQL held locked until its commit. What must hold, on both stores: the first
// issuance counts its own entry and the stock is topped up outside the transaction; the next ones take from the
// stock (the counter unchanged by their transactions); every credential has a slot of its own; a stock that
// cannot fit in the newest list is not taken (the issuances count their own and open the next list); and
// with `ahead` 0 (the default, SQLite) every issuance counts its own entry.

const AHEAD = 4
const SIZE = 64

for (const kind of STORE_KINDS)
  describe(`status entries counted ahead (${kind.name})`, { skip: kind.skip }, () => {
    const databases = kind.use()
    let store: Store
    const clock = new ManualClock(Date.UTC(2026, 10, 29))
    const urls = new PublicUrls(() => 'https://issuer.example', 'openid-credential-offer')
    before(async () => {
      store = await (await databases.fresh('entries ahead')).open()
      await store.tenants.create({ id: 't', source: 'portal', createdAt: clock.now() })
    })
    after(() => store?.close())

    const lists = (ahead: number) =>
      new StatusLists(store, new TenantKeys(store, clock), clock, urls, SIZE, ahead)
    const issue = async (statusLists: StatusLists, processId: string) => {
      await store.processes.create({
        id: processId,
        tenantId: 't',
        templateId: 'x',
        type: 'attended',
        status: 'PENDING',
        data: null,
        validator: null,
        submitted: null,
        rejectedReason: null,
        createdByKey: 'k',
        createdAt: clock.now(),
        updatedAt: clock.now(),
      })
      return store.transaction((repos) =>
        statusLists.allocate(repos, { tenantId: 't', alg: 'ES256', credentialId: randomUUID(), processId }),
      )
    }
    const used = async (listId: string) => (await store.statusLists.get(listId))?.used

    test('the first counts its own and tops up; the next take from the stock; every slot its own', async () => {
      // The list exists (a top-up never sees a list whose creating transaction has not committed yet: the
      // issuance after that one tops up).
      const opened = await issue(lists(0), 'p0')
      const listId = opened.statusListCredential.split('/').pop() as string
      assert.equal(await used(listId), 1)
      const statusLists = lists(AHEAD)
      const first = await issue(statusLists, 'p1')
      await statusLists.idle()
      assert.equal(await used(listId), 2 + AHEAD, 'its own, then AHEAD counted outside the transaction')
      const indexes = new Set([first.statusListIndex])
      // AHEAD − 1 more leave the stock at its low mark without a top-up (1 ≥ 4 × 0.25): the counter stays.
      for (let i = 2; i <= AHEAD; i++) indexes.add((await issue(statusLists, `p${i}`)).statusListIndex)
      assert.equal(await used(listId), 2 + AHEAD, 'taken from the stock: no count in their transactions')
      // The next takes the last and tops up again.
      indexes.add((await issue(statusLists, `p${AHEAD + 1}`)).statusListIndex)
      await statusLists.idle()
      assert.equal(await used(listId), 2 + 2 * AHEAD)
      assert.equal(indexes.size, AHEAD + 1, 'one slot each')
      const rows = await store.issuedCredentials.listByProcess('p1')
      assert.equal(rows.length, 1)
    })

    test('a stock that does not fit below the fill limit is not counted: the issuances count their own', async () => {
      const tight = await store.statusLists.reserveEntries('t', 'ES256', 0.75, SIZE, clock.now())
      assert.equal(tight, undefined, 'more than the list holds is never counted')
      const one = await store.statusLists.reserveEntries('t', 'ES256', 0.75, 1, clock.now())
      assert.ok(one, 'one that fits is')
    })

    test('ahead 0: every issuance counts its own entry in its transaction', async () => {
      const statusLists = lists(0)
      const entry = await issue(statusLists, 'q1')
      const listId = entry.statusListCredential.split('/').pop() as string
      const before = await used(listId)
      await issue(statusLists, 'q2')
      await statusLists.idle()
      assert.equal(await used(listId), (before ?? 0) + 1)
    })
  })
