import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Database from 'better-sqlite3'
import type { Store } from '../../../src/service/store/index.ts'
import { openSqliteStore } from '../../../src/service/store/sqlite.ts'

// The outbox's partial indexes (migration 0010, issue 20) serve only queries that name the state as a
// literal; a query rewritten with a bound parameter (`state = ?`) would still answer right, but by scanning
// the table. So the store's own statements, recorded as it prepares them, are planned by SQLite here.

describe('the outbox scans use their partial indexes (SQLite query plans)', () => {
  const seen: string[] = []
  const prepare = Database.prototype.prepare
  let dir: string
  let store: Store
  before(async () => {
    Database.prototype.prepare = function (this: Database.Database, sql: string) {
      seen.push(sql)
      return prepare.call(this, sql)
    } as typeof prepare
    dir = mkdtempSync(join(tmpdir(), 'store-indexes-'))
    store = await openSqliteStore(dir)
    await store.webhooks.due(Date.now(), 10)
    await store.webhooks.nextDueAt()
    await store.retention.purgeBatch(Date.now(), { closedFlowDays: 1, issuedProcessDays: 1 }, 100)
  })
  after(async () => {
    Database.prototype.prepare = prepare
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** SQLite's plan of the one recorded statement matching `pattern`, one line per step. */
  function planOf(pattern: RegExp): string {
    const matching = seen.filter((sql) => pattern.test(sql))
    assert.equal(matching.length, 1, `one statement matches ${pattern}: ${matching.join('\n')}`)
    const sql = matching[0] as string
    const db = new Database(join(dir, 'vc-harness.db'))
    try {
      const parameters = Array.from(sql.match(/\?/g) ?? [], () => 0)
      const steps = db.prepare(`explain query plan ${sql}`).all(parameters) as { detail: string }[]
      return steps.map((s) => s.detail).join('\n')
    } finally {
      db.close()
    }
  }

  test('the dispatcher finds due events through webhook_events_due, in due order', () => {
    const plan = planOf(
      /^SELECT .* FROM webhook_events e WHERE e\.state = 'pending' AND e\.next_attempt_at <=/,
    )
    assert.match(plan, /SEARCH e USING INDEX webhook_events_due \(next_attempt_at<\?\)/)
    assert.doesNotMatch(plan, /TEMP B-TREE/, 'the index gives the order: no sort')
  })

  test('the next due time reads only the pending events, through webhook_events_due', () => {
    assert.match(planOf(/^SELECT min\(max\(e\.next_attempt_at/), /USING INDEX webhook_events_due/)
  })

  test('retention finds settled events through webhook_events_settled', () => {
    assert.match(
      planOf(/^select "id" from "webhook_events" where state <> 'pending'/),
      /SEARCH webhook_events USING INDEX webhook_events_settled \(updated_at<\?\)/,
    )
  })
})
