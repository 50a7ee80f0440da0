import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import Database from 'better-sqlite3'
import { checkDataDir } from '../../../src/cli/serve.ts'
import { RelyingPartyClient } from '../../../src/client/index.ts'
import { TOKEN_AUDIENCE, TOKEN_ISSUER, TOKEN_TYPE } from '../../../src/service/auth/tokens.ts'
import { DEMO_CONFIG_PATH, parseConfig, type ServiceConfig } from '../../../src/service/config/index.ts'
import { DataKeyError, DataKeyring, resolveDataKeys } from '../../../src/service/crypto/data-key.ts'
import { startServer } from '../../../src/service/server.ts'
import { StoreSecrets } from '../../../src/service/store/secrets.ts'
import { openSqliteStore } from '../../../src/service/store/sqlite.ts'
import { signJws } from '../../../src/shared/jws.ts'
import { BIN, explain, runCli } from '../../fixtures/cli.ts'
import { DEMO } from '../../helpers.ts'

// Issue 19, item 1: the data folder and database are owner-only whatever the umask, an exposed folder is
// refused, and private keys and webhook secrets are encrypted at rest with a data key kept outside the
// database (docs/security.md, "Data at rest").

const mode = (path: string) => statSync(path).mode & 0o777
const newKey = () => randomBytes(32).toString('base64')
const idOf = (key: string) => DataKeyring.parse(key, 'test').currentId
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`
const PREVIOUS_SECRET = `whsec_${randomBytes(24).toString('base64')}`
const DATA_KEY_VARS = { VC_HARNESS_DATA_KEY: '', VC_HARNESS_DATA_KEY_FILE: '' }

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'vch-rest-'))
  dirs.push(dir)
  return dir
}
/** Every service started here: one a failed assertion left running must not keep the test process alive. */
const children: ChildProcess[] = []
after(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  for (const dir of dirs) {
    chmodSync(dir, 0o700)
    rmSync(dir, { recursive: true, force: true })
  }
})

/** The demo configuration with webhooks.mode "production" (a configuration of one's own), as a file. */
function productionConfigFile(): string {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  delete raw.$schema
  raw.webhooks.mode = 'production'
  const file = join(tempDir(), 'production.json')
  writeFileSync(file, JSON.stringify(raw))
  return file
}

/** A key file of mode `fileMode` holding `keys` (one a line). */
function keyFile(keys: string[], fileMode = 0o600): string {
  const file = join(tempDir(), 'data.key')
  writeFileSync(file, `${keys.join('\n')}\n`, { mode: fileMode })
  chmodSync(file, fileMode)
  return file
}

interface Served {
  child: ChildProcess
  url: string
  output: () => string
  stop(): Promise<void>
}

/**
 * `vc-harness serve --port 0 …` until it prints its URL; the data key variables cleared unless `env` sets
 * them. With `umask`, through bash, so the service starts under that umask.
 */
function serve(
  args: string[],
  options: { env?: Record<string, string>; umask?: string } = {},
): Promise<Served> {
  const env: Record<string, string | undefined> = { ...process.env, ...DATA_KEY_VARS, ...options.env }
  const argv = [BIN, 'serve', '--port', '0', '--quiet', ...args]
  const child =
    options.umask === undefined
      ? spawn(process.execPath, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('bash', ['-c', `umask ${options.umask}; exec "$0" "$@"`, process.execPath, ...argv], {
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        })
  children.push(child)
  let out = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1]
      // The banner may arrive in several chunks: wait for its line after the data key lines.
      if (url && /\n {2}data key: .*\n/.test(out) && /\n {2}API docs: .*\n/.test(out)) {
        child.stdout?.off('data', onData)
        child.stdout?.on('data', (more: Buffer) => (out += more))
        resolve({
          child,
          url,
          output: () => out,
          stop: async () => {
            child.kill('SIGTERM')
            await exited
          },
        })
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', (chunk: Buffer) => (out += chunk))
    void exited.then((code) => reject(new Error(`serve exited (${code}) before listening:\n${out}`)))
  })
}

/** A user error is a message, never a stack trace. */
const assertNoStack = (out: string) => assert.ok(!/^\s+at /m.test(out), `a stack trace was printed:\n${out}`)

/** Every value of the secret columns, read straight from the database file with SQLite. */
function secretColumns(databaseFile: string) {
  const db = new Database(databaseFile, { readonly: true })
  try {
    const all = (sql: string) => db.prepare(sql).all() as Record<string, string>[]
    return {
      serviceKeys: all('SELECT kid, private_jwk AS value FROM service_keys'),
      tenantKeys: all('SELECT tenant_id, alg, private_jwk AS value FROM issuer_keys'),
      issuerCas: all('SELECT tenant_id, private_jwk AS value FROM issuer_cas'),
      responseKeys: all(
        'SELECT id, response_key AS value FROM verification_sessions WHERE response_key IS NOT NULL',
      ),
      templates: all('SELECT tenant_id, id, body FROM templates'),
    }
  } finally {
    db.close()
  }
}

/** The sealed values' key ids (every secret of the database, templates' webhook secrets included). */
function keyIdsIn(databaseFile: string): Set<string> {
  const columns = secretColumns(databaseFile)
  const values = [
    ...columns.serviceKeys,
    ...columns.tenantKeys,
    ...columns.issuerCas,
    ...columns.responseKeys,
  ].map((r) => r.value as string)
  for (const t of columns.templates) {
    const body = JSON.parse(t.body as string) as { webhookSecret?: string; webhookPreviousSecrets?: string[] }
    if (body.webhookSecret) values.push(body.webhookSecret, ...(body.webhookPreviousSecrets ?? []))
  }
  return new Set(values.map((v) => /^enc:v1:([^:]+):/.exec(v)?.[1] ?? 'clear'))
}

/** The demo configuration with a signed webhook (current and previous secret) on the degree template. */
function configWithWebhook(): ServiceConfig {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const degree = raw.tenants[0].issuanceTemplates.find((t: { id: string }) => t.id === 'degree')
  Object.assign(degree, {
    webhookUrl: 'http://127.0.0.1:9/hook',
    webhookSecret: WEBHOOK_SECRET,
    webhookPreviousSecrets: [PREVIOUS_SECRET],
  })
  return parseConfig(raw, 'data-at-rest test configuration')
}

const PID_VERIFIER = {
  keyId: '869f01d4-da07-4f10-a853-1e326420c9fe',
  secret: 'demo-pid-verifier-secret-M7bK3nV9xD5q',
  tenant: 'demo',
}

/**
 * A service on `dataDir` that has written every kind of secret: the access-token key, issuer keys, the
 * tenant's test CA, an encrypted-response session's ephemeral key, and the template's webhook secrets.
 */
async function serviceWithEverySecret(dataDir: string, dataKeys: DataKeyring) {
  const server = await startServer({ config: configWithWebhook(), port: 0, dataDir, dataKeys })
  const rp = new RelyingPartyClient(server.url)
  const created = await rp.createSession(await rp.token(PID_VERIFIER), 'pid-check')
  assert.equal(created.status, 201, JSON.stringify(created.body))
  assert.equal((await fetch(`${server.url}/oid4vci/demo/trust-anchor`)).status, 200)
  for (const alg of ['EdDSA', 'ES256', 'ES256K'] as const) {
    await server.app.services.tenantKeys.forTenant('demo', alg)
  }
  return server
}

describe('data at rest: secrets in the database', () => {
  test('the database holds no private JWK and no webhook secret in clear; each is sealed for its row', async () => {
    const dir = tempDir()
    const dataKeys = DataKeyring.parse(newKey(), 'test key')
    const server = await serviceWithEverySecret(dir, dataKeys)
    await server.close()
    const databaseFile = join(dir, 'vc-harness.db')
    const columns = secretColumns(databaseFile)
    assert.equal(columns.serviceKeys.length, 1)
    assert.equal(columns.tenantKeys.length, 3)
    assert.equal(columns.issuerCas.length, 1)
    assert.equal(columns.responseKeys.length, 1)
    for (const row of [
      ...columns.serviceKeys,
      ...columns.tenantKeys,
      ...columns.issuerCas,
      ...columns.responseKeys,
    ]) {
      assert.match(row.value as string, new RegExp(`^enc:v1:${dataKeys.currentId}:[\\w-]+:[\\w-]+$`))
    }
    const degree = columns.templates.find((t) => t.id === 'degree')
    const body = JSON.parse(degree?.body as string)
    assert.match(body.webhookSecret, /^enc:v1:/)
    assert.match(body.webhookPreviousSecrets[0], /^enc:v1:/)
    assert.equal(body.webhookUrl, 'http://127.0.0.1:9/hook', 'the rest of the body stays readable')
    // The whole file, as whoever copies it sees it (closed: the WAL is checkpointed into it).
    for (const name of readdirSync(dir).filter((f) => f.startsWith('vc-harness.db'))) {
      const bytes = readFileSync(join(dir, name)).toString('latin1')
      assert.ok(!bytes.includes('"d":'), `${name} holds a private JWK member "d" in clear`)
      for (const secret of ['whsec_', WEBHOOK_SECRET.slice(6, 30), PREVIOUS_SECRET.slice(6, 30)]) {
        assert.ok(!bytes.includes(secret), `${name} holds a webhook secret in clear`)
      }
    }
    // Read back through the store, every secret is what was written.
    const store = await openSqliteStore(dir, { dataKeys })
    try {
      const template = await store.templates.get('demo', 'degree', 'issuance')
      assert.equal(template?.body.webhookSecret, WEBHOOK_SECRET)
      assert.deepEqual(template?.body.webhookPreviousSecrets, [PREVIOUS_SECRET])
      assert.ok((await store.serviceKeys.list())[0]?.privateJwk.d)
      const session = await store.sessions.get(columns.responseKeys[0]?.id as string)
      assert.equal(session?.responseKey?.kty, 'EC')
      assert.ok(session?.responseKey?.d)
    } finally {
      await store.close()
    }
    // A sealed value copied into another row does not open there (its place is authenticated).
    const secrets = new StoreSecrets(dataKeys)
    const es256 = columns.tenantKeys.find((k) => k.alg === 'ES256')?.value as string
    assert.ok(secrets.openJson('issuer_keys.private_jwk', ['demo', 'ES256'], es256))
    assert.throws(
      () => secrets.openJson('issuer_keys.private_jwk', ['demo', 'EdDSA'], es256),
      (error: Error) =>
        error instanceof DataKeyError && /altered or copied from another row/.test(error.message),
    )
  })

  test('a token forged with the access-token key needs the data key: with it the service accepts one, without it there is no key to sign with', async () => {
    const dir = tempDir()
    const dataKey = newKey()
    const server = await startServer({
      config: configWithWebhook(),
      port: 0,
      dataDir: dir,
      dataKeys: DataKeyring.parse(dataKey, 'test key'),
    })
    try {
      const [row] = secretColumns(join(dir, 'vc-harness.db')).serviceKeys
      const stored = row?.value as string
      // What the database alone gives: no JSON, no "d".
      assert.throws(() => JSON.parse(stored))
      assert.ok(!stored.includes('"d"'))
      // Another key opens nothing.
      const wrong = new StoreSecrets(DataKeyring.parse(newKey(), 'a wrong key'))
      assert.throws(
        () => wrong.openJson('service_keys.private_jwk', [row?.kid as string], stored),
        /is encrypted under data key id "[\w-]+", which is not among the keys given/,
      )
      // With the data key, it is the live signing key: a token signed with it passes (so the data key, and
      // nothing in the database, stands between a copy of the database and a forged token).
      const { createPrivateKey } = await import('node:crypto')
      const jwk = new StoreSecrets(DataKeyring.parse(dataKey, 'test key')).openJson<JsonWebKey>(
        'service_keys.private_jwk',
        [row?.kid as string],
        stored,
      )
      const now = Math.floor(Date.now() / 1000)
      const forged = signJws(
        { alg: 'EdDSA', kid: row?.kid, typ: TOKEN_TYPE },
        {
          tenant: 'demo',
          role: 'admin',
          template: null,
          iss: TOKEN_ISSUER,
          aud: TOKEN_AUDIENCE,
          sub: DEMO.admin.id,
          jti: randomUUID(),
          iat: now,
          exp: now + 60,
        },
        createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }),
      )
      const listed = await new RelyingPartyClient(server.url).listProcesses(forged)
      assert.equal(listed.status, 200)
    } finally {
      await server.close()
    }
  })

  test('a database written before encryption at rest: its clear secrets are sealed when the store opens', async () => {
    const dir = tempDir()
    const dataKeys = DataKeyring.parse(newKey(), 'test key')
    const server = await serviceWithEverySecret(dir, dataKeys)
    await server.close()
    const databaseFile = join(dir, 'vc-harness.db')
    // Put every secret back in clear, as an earlier version stored it.
    const secrets = new StoreSecrets(dataKeys)
    const db = new Database(databaseFile)
    const columns = secretColumns(databaseFile)
    for (const r of columns.serviceKeys) {
      db.prepare('UPDATE service_keys SET private_jwk = ? WHERE kid = ?').run(
        secrets.open('service_keys.private_jwk', [r.kid as string], r.value as string),
        r.kid,
      )
    }
    for (const r of columns.responseKeys) {
      db.prepare('UPDATE verification_sessions SET response_key = ? WHERE id = ?').run(
        secrets.open('verification_sessions.response_key', [r.id as string], r.value as string),
        r.id,
      )
    }
    for (const t of columns.templates) {
      const body = secrets.openTemplateBody(t.tenant_id as string, t.id as string, t.body as string)
      db.prepare('UPDATE templates SET body = ? WHERE tenant_id = ? AND id = ?').run(
        JSON.stringify(body),
        t.tenant_id,
        t.id,
      )
    }
    db.close()
    assert.ok(keyIdsIn(databaseFile).has('clear'))

    const reopened = DataKeyring.parse(newKey(), 'the new key')
    // The old key still opens the issuer keys, CA: a rotation and a legacy upgrade at once.
    const both = DataKeyring.parse(`${reopened.export()},${dataKeys.export()}`, 'both keys')
    const store = await openSqliteStore(dir, { dataKeys: both })
    await store.close()
    assert.equal(both.resealed, 3 + 1 + 1 + 1 + 1, 'service key, 3 issuer keys, CA, session key, template')
    assert.deepEqual([...keyIdsIn(databaseFile)], [both.currentId])
    // The clear values leave nothing behind in the file's free space (secure_delete while re-sealing).
    for (const name of readdirSync(dir).filter((f) => f.startsWith('vc-harness.db'))) {
      const bytes = readFileSync(join(dir, name)).toString('latin1')
      assert.ok(!bytes.includes('"d":'), `${name} still holds a private JWK member "d" in clear`)
      assert.ok(!bytes.includes('whsec_'), `${name} still holds a webhook secret in clear`)
    }
  })
})

describe('data at rest: keys and envelopes', () => {
  test('keys: base64 or base64url of 32 bytes, several separated by commas or lines; the first seals, all open', () => {
    const a = randomBytes(32)
    const b = randomBytes(32)
    const ring = DataKeyring.parse(`${a.toString('base64url')}, \n${b.toString('base64')}\n`, 'test')
    assert.deepEqual(ring.ids, [idOf(a.toString('base64')), idOf(b.toString('base64'))])
    assert.match(ring.currentId, /^[\w-]{8}$/)
    const older = DataKeyring.parse(b.toString('base64'), 'older')
    const sealed = older.seal('secret', 'place')
    assert.equal(ring.open(sealed, 'place'), 'secret')
    assert.equal(ring.isCurrent(sealed), false)
    assert.equal(ring.isCurrent(ring.seal('x', 'place')), true)
    assert.notEqual(ring.seal('same', 'place'), ring.seal('same', 'place'), 'a fresh IV each time')
    assert.throws(
      () => DataKeyring.parse(randomBytes(16).toString('base64'), 'VC_HARNESS_DATA_KEY'),
      (e: Error) =>
        /VC_HARNESS_DATA_KEY: the key is not base64 of 32 bytes \(it decodes to 16\); make one with .*openssl rand -base64 32/.test(
          e.message,
        ),
    )
    assert.throws(() => DataKeyring.parse('  ', 'VC_HARNESS_DATA_KEY'), /no key in it/)
    assert.throws(() => DataKeyring.parse(`${newKey()},not*base64`, 'F'), /F: key 2 of 2 is not base64/)
    // Altered ciphertext, and clear text where a sealed value belongs, are refused.
    // (a character well inside the ciphertext: the last one may carry only padding bits)
    const at = sealed.length - 10
    const tampered = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`
    assert.throws(() => ring.open(tampered, 'place'), /decryption under data key id .* failed/)
    // A truncated tag (GCM would check 4 bytes of it) is refused, not weakly checked.
    const [prefix, body] = [
      sealed.slice(0, sealed.lastIndexOf(':') + 1),
      sealed.slice(sealed.lastIndexOf(':') + 1),
    ]
    const short = Buffer.from(body, 'base64url')
    const truncated = `${prefix}${short.subarray(0, short.length - 12).toString('base64url')}`
    assert.throws(() => ring.open(truncated, 'place'), /decryption under data key id .* failed/)
    assert.throws(() => ring.open('{"d":"x"}', 'place'), /stored in clear, not encrypted: refused/)
  })

  test('serve chooses the key: a file or VC_HARNESS_DATA_KEY (not both); none in production is refused with how to make one', () => {
    const dir = tempDir()
    const key = newKey()
    const fromFile = resolveDataKeys({ dataDir: dir, keyFile: keyFile([key]), production: true })
    assert.equal(fromFile.keyring.currentId, idOf(key))
    const fromEnv = resolveDataKeys({ dataDir: dir, keyText: key, production: true })
    assert.match(fromEnv.description, new RegExp(`data key: VC_HARNESS_DATA_KEY \\(id ${idOf(key)}\\)`))
    assert.throws(
      () => resolveDataKeys({ dataDir: dir, keyFile: keyFile([key]), keyText: key, production: true }),
      /both --data-key-file and VC_HARNESS_DATA_KEY are set/,
    )
    // A key file others may read protects nothing.
    const open = keyFile([key], 0o644)
    assert.throws(
      () => resolveDataKeys({ dataDir: dir, keyFile: open, production: true }),
      (e: Error) =>
        e instanceof DataKeyError && e.message.includes(`open to other users (mode 0644): chmod 600 ${open}`),
    )
    // In memory: an ephemeral key; the demo and test mode: <data>/data.key, generated 0600 once, then reused.
    assert.match(resolveDataKeys({ dataDir: ':memory:', production: true }).description, /in memory/)
    const local = resolveDataKeys({ dataDir: join(dir, 'demo'), production: false })
    assert.equal(local.generatedFile, join(dir, 'demo', 'data.key'))
    assert.equal(mode(join(dir, 'demo', 'data.key')), 0o600)
    const again = resolveDataKeys({ dataDir: join(dir, 'demo'), production: false })
    assert.equal(again.generatedFile, undefined)
    assert.equal(again.keyring.currentId, local.keyring.currentId)
    // Production does not take the key from the data folder, and says why.
    assert.throws(
      () => resolveDataKeys({ dataDir: join(dir, 'demo'), production: true }),
      /data\.key exists .* a key beside the database protects nothing/,
    )
  })
})

describe('data at rest: vc-harness serve', { concurrency: true }, () => {
  test('a new data folder is 0700; the database, its -wal and -shm and the generated data.key 0600, under umask 022 and 000', async () => {
    const runs = await Promise.all(
      ['022', '000'].map(async (umask) => {
        const dir = join(tempDir(), `data-${umask}`)
        return { umask, dir, served: await serve(['--data', dir, '--no-demo'], { umask }) }
      }),
    )
    try {
      for (const { umask, dir, served } of runs) {
        assert.match(served.output(), /data key: generated .*data\.key \(mode 0600\)/)
        const database = join(dir, 'vc-harness.db')
        // While it runs: SQLite keeps -wal and -shm beside the open database.
        for (const file of [database, `${database}-wal`, `${database}-shm`, join(dir, 'data.key')]) {
          assert.equal(mode(file).toString(8), '600', `${file} under umask ${umask}`)
        }
        assert.equal(mode(dir).toString(8), '700', `the folder under umask ${umask}`)
      }
    } finally {
      await Promise.all(runs.map((r) => r.served.stop()))
    }
  })

  test('an existing folder open to other users is refused with exit 2 and the fix; --allow-shared-data-dir starts on it', async () => {
    const dir = tempDir()
    chmodSync(dir, 0o755)
    const refused = await runCli(['serve', '--port', '0', '--no-demo', '--data', dir], { env: DATA_KEY_VARS })
    assert.equal(refused.code, 2, explain(refused))
    assert.ok(
      refused.stderr.includes(`--data ${dir}: open to other users: ${dir} (mode 0755)`),
      explain(refused),
    )
    assert.ok(
      refused.stderr.includes(`keys: chmod 700 ${dir}, or start with --allow-shared-data-dir`),
      explain(refused),
    )
    assertNoStack(refused.stderr)
    assert.equal(existsSync(join(dir, 'vc-harness.db')), false, 'nothing was created')

    const shared = await serve(['--no-demo', '--data', dir, '--allow-shared-data-dir'])
    try {
      assert.equal(mode(dir).toString(8), '755', 'an existing folder keeps its mode')
      assert.equal(mode(join(dir, 'vc-harness.db')).toString(8), '600', 'a new database is private anyway')
    } finally {
      await shared.stop()
    }
    // A database or -wal file open to others in a private folder is refused too (in-process: same check).
    chmodSync(dir, 0o700)
    chmodSync(join(dir, 'vc-harness.db'), 0o644)
    const database = join(dir, 'vc-harness.db')
    assert.throws(
      () => checkDataDir(dir),
      (e: Error) =>
        e.message.includes(`open to other users: ${database} (mode 0644).`) &&
        e.message.includes(`keys: chmod 600 ${database}, or start`),
    )
    assert.doesNotThrow(() => checkDataDir(dir, { allowShared: true }))
    chmodSync(join(dir, 'vc-harness.db'), 0o600)
    writeFileSync(join(dir, 'vc-harness.db-wal'), '', { mode: 0o664 })
    chmodSync(join(dir, 'vc-harness.db-wal'), 0o664)
    assert.throws(() => checkDataDir(dir), /vc-harness\.db-wal \(mode 0664\)/)
  })

  test("a folder of another user's is refused", {
    skip: process.getuid?.() === 0 ? false : 'needs root to give a folder to another user',
  }, () => {
    const dir = tempDir()
    chownSync(dir, 65534, 65534)
    try {
      assert.throws(
        () => checkDataDir(dir),
        /the folder belongs to another user \(uid 65534; this process runs as uid 0\)/,
      )
      assert.doesNotThrow(() => checkDataDir(dir, { allowShared: true }))
    } finally {
      chownSync(dir, 0, 0)
    }
  })

  test('production mode (a configuration of its own, a database on disk) without a data key: exit 2 saying how to make one', async () => {
    const dir = join(tempDir(), 'data')
    const run = await runCli(['serve', '--port', '0', '--config', productionConfigFile(), '--data', dir], {
      env: DATA_KEY_VARS,
    })
    assert.equal(run.code, 2, explain(run))
    assert.match(run.stderr, /^vc-harness serve: no data key\. /)
    assert.ok(
      run.stderr.includes('(umask 077 && openssl rand -base64 32 > /etc/vc-harness/data.key)'),
      explain(run),
    )
    assert.match(run.stderr, /--data-key-file .*VC_HARNESS_DATA_KEY_FILE.*VC_HARNESS_DATA_KEY/s)
    assertNoStack(run.stderr)
    assert.equal(existsSync(join(dir, 'data.key')), false, 'production generates no key')
  })

  test('rotation: start on K1; then "K2,K1" re-encrypts every secret under K2; then K2 alone starts and K1 alone is refused naming the key id', async () => {
    const dir = join(tempDir(), 'data')
    const config = productionConfigFile()
    const [k1, k2] = [newKey(), newKey()]
    const databaseFile = join(dir, 'vc-harness.db')

    const first = await serve(['--config', config, '--data', dir, '--data-key-file', keyFile([k1])])
    assert.match(first.output(), new RegExp(`data key: .*data\\.key \\(id ${idOf(k1)}\\)`))
    await first.stop()
    assert.deepEqual([...keyIdsIn(databaseFile)], [idOf(k1)])

    const rotating = await serve(['--config', config, '--data', dir], {
      env: { VC_HARNESS_DATA_KEY: `${k2},${k1}` },
    })
    assert.match(rotating.output(), new RegExp(`also opens ${idOf(k1)} \\(rotation\\)`))
    assert.match(
      rotating.output(),
      new RegExp(`re-encrypted [1-9]\\d* stored secret\\(s\\) under id ${idOf(k2)}`),
    )
    await rotating.stop()
    assert.deepEqual([...keyIdsIn(databaseFile)], [idOf(k2)])

    const rotated = await serve(['--config', config, '--data', dir], { env: { VC_HARNESS_DATA_KEY: k2 } })
    assert.doesNotMatch(rotated.output(), /re-encrypted/)
    const token = await new RelyingPartyClient(rotated.url).token({
      keyId: DEMO.admin.id,
      secret: DEMO.admin.secret,
      tenant: 'demo',
    })
    assert.ok(token)
    await rotated.stop()

    const dropped = await runCli(['serve', '--port', '0', '--config', config, '--data', dir], {
      env: { ...DATA_KEY_VARS, VC_HARNESS_DATA_KEY: k1 },
    })
    assert.equal(dropped.code, 2, explain(dropped))
    assert.match(
      dropped.stderr,
      new RegExp(
        `is encrypted under data key id "${idOf(k2)}", which is not among the keys given \\(VC_HARNESS_DATA_KEY: id ${idOf(k1)}\\)`,
      ),
    )
    assertNoStack(dropped.stderr)
  })

  test('the embedded demo on a database of another key: exit 2 naming it, and the key it generated is removed again', async () => {
    const dir = join(tempDir(), 'data')
    const k1 = newKey()
    const store = await openSqliteStore(dir, { dataKeys: DataKeyring.parse(k1, 'k1') })
    await store.transaction((repos) =>
      repos.serviceKeys.createFirst({
        kid: 'k',
        alg: 'EdDSA',
        privateJwk: { kty: 'OKP', crv: 'Ed25519', x: 'x', d: 'd' },
        publicJwk: { kty: 'OKP', crv: 'Ed25519', x: 'x' },
        createdAt: 0,
      }),
    )
    await store.close()
    const run = await runCli(['serve', '--port', '0', '--no-demo', '--data', dir], { env: DATA_KEY_VARS })
    assert.equal(run.code, 2, explain(run))
    assert.match(run.stderr, new RegExp(`encrypted under data key id "${idOf(k1)}"`))
    assertNoStack(run.stderr)
    assert.equal(existsSync(join(dir, 'data.key')), false)
  })

  test('--workers 2: the workers get the key from the primary (IPC), not from a file or their environment', async () => {
    const dir = join(tempDir(), 'data')
    const key = newKey()
    const served = await serve(['--workers', '2', '--config', productionConfigFile(), '--data', dir], {
      env: { VC_HARNESS_DATA_KEY: key },
    })
    try {
      assert.match(served.output(), new RegExp(`data key: VC_HARNESS_DATA_KEY \\(id ${idOf(key)}\\)`))
      const pids = (/\(2 workers: (\d+), (\d+)\)/.exec(served.output()) ?? []).slice(1)
      assert.equal(pids.length, 2, served.output())
      const rp = new RelyingPartyClient(served.url)
      // Several logins: both workers open the service key sealed by the primary.
      for (let i = 0; i < 4; i++) {
        assert.ok(await rp.token({ keyId: DEMO.admin.id, secret: DEMO.admin.secret, tenant: 'demo' }))
      }
      assert.deepEqual(
        readdirSync(dir).filter((f) => f.includes('key')),
        [],
        'no key file written',
      )
      if (process.platform === 'linux') {
        for (const pid of pids) {
          const environ = readFileSync(`/proc/${pid}/environ`, 'latin1')
          assert.ok(!environ.includes('VC_HARNESS_DATA_KEY='), `worker ${pid} has the key in its environment`)
        }
      }
      assert.deepEqual([...keyIdsIn(join(dir, 'vc-harness.db'))], [idOf(key)])
    } finally {
      await served.stop()
    }
  })
})
