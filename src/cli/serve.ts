import { accessSync, constants, statSync, unlinkSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
// Type only: the sandbox (and its QR code library) loads only with --sandbox or the demo.
import type { SandboxPlan } from '../harness/sandbox.ts'
import { type ClusterOptions, checkWorkerCount, startCluster } from '../service/cluster.ts'
import type { ServiceConfig } from '../service/config/index.ts'
import { ConfigError, DEMO_CONFIG_PATH, loadConfigFile } from '../service/config/index.ts'
import {
  DATA_KEY_ENV,
  DATA_KEY_FILE_ENV,
  DataKeyError,
  type DataKeyring,
  type ResolvedDataKeys,
  resolveDataKeys,
} from '../service/crypto/data-key.ts'
import { fileStatus, modeText, sharedBits } from '../service/crypto/private-files.ts'
import { stdoutRequestLog } from '../service/request-log.ts'
import { type ServerOptions, startServer } from '../service/server.ts'
import { openPostgresStore, redactedUrl } from '../service/store/postgres.ts'
import { DATABASE_FILE } from '../service/store/sqlite.ts'
import { type TlsLeaf, tlsLeaf, tlsWarnings } from '../service/tls.ts'
import { loadTls, TLS_PARSE_OPTIONS, tlsFilePair, tlsUsage } from './tls-options.ts'

export const SERVE_USAGE = `Usage: vc-harness serve [--config FILE] [--port N] [--host H] [--data DIR] [--public-url URL]
                        [--workers N] [--log-level LEVEL] [--demo | --no-demo] [--issue T] [--verify T]
                        [--data-key-file FILE] [--allow-shared-data-dir] [--database URL]
                        [--tls-cert FILE --tls-key FILE]
                        [--sandbox [--once] [--sandbox-log FILE]]
                        [--sandbox --wallet-plan NAME [--case-timeout S] [--reports DIR]]

  --config FILE       service configuration (JSON, see config/config.schema.json); default: the embedded demo
  --port N            TCP port; default 8080 (0 picks a free one)
  --host H            interface to listen on; default 127.0.0.1 (0.0.0.0: every interface, e.g. for phones)
  --data DIR          folder of the SQLite database, or :memory:; default .vc-harness. Created 0700, the
                      database 0600; an existing one open to other users (or not this user's) is refused
  --data-key-file FILE
                      the data key that encrypts private keys and webhook secrets in the database (base64 of
                      32 bytes; several, newest first, during a rotation); the file mode 0600 or stricter.
                      Or $VC_HARNESS_DATA_KEY_FILE, or the key itself in $VC_HARNESS_DATA_KEY. Required with a
                      --config whose webhooks.mode is "production" and a database on disk; otherwise generated
                      into <data>/data.key (docs/security.md)
  --allow-shared-data-dir
                      start on a --data folder or database other users may read or write, or owned by another
                      user (refused by default: it holds the service's keys)
  --database URL      keep the state in PostgreSQL (postgres://user:password@host:port/db; or
                      $VC_HARNESS_DATABASE_URL, or the configuration's database.url) instead of SQLite in --data, for several instances behind one
                      address (docs/scaling.md). The schema is migrated at start; an unreachable database or one
                      migrated by a newer version stops the start (exit 1). --data still holds the data key
                      unless one is given. Not with --workers: run several instances instead
  --public-url URL    base URL wallets reach, used in offers and requests (e.g. http://192.168.1.20:8080);
                      overrides the configuration's publicUrl; default: that, else the listening URL
                      (with TLS: https://<the certificate's first DNS name>:<port>)
${tlsUsage(22)}
  --workers N         serve from N processes sharing the port and the database in --data (docs/scaling.md);
                      default 1. At most 4 per core; not with --data :memory:, --sandbox or --demo (their state
                      lives in one process), so the demo is off by default with N > 1
  --log-level L       fastify/pino's full logs at level L (info, warn, …) instead of the request lines
  --quiet             no request lines (by default one per wallet-facing and relying-party request:
                      time, method, path, status, ms; no query strings, ids cut to 8 characters)
  --exit-on-stdin-close
                      shut down when stdin closes (for supervisors: the service ends with its parent)

Demo relying party (docs/qr-page.md):
  --demo              serve the demo relying party at /demo (/demo/issue, /demo/verify: a QR page with live
                      updates, its backend holding the application keys); on by default without --config
  --no-demo           do not serve it, also without --config

Wallet-vendor sandbox (docs/sandbox.md):
  --sandbox           act as a relying party beside the service: open a credential offer (sample content
                      submitted at once) and a verification session, print each as a deep link and a
                      terminal QR code, report every step the wallet takes (with the verification result,
                      SourceWallet, Subject and each failed check), and print fresh ones when a flow ends
  --issue T           issuance template the sandbox and the demo offer; default the first one an
                      application key may use
  --verify T          verification template the sandbox and the demo request; default the first one an
                      application key may use
  --once              exit after one issuance and one verification ended: 0 when both succeeded, else 1
  --sandbox-log FILE  append every reported step as JSON lines; default <data dir>/sandbox.ndjson
                      (none with --data :memory:)

Wallet test plans by hand (docs/wallet-testing.md):
  --sandbox --wallet-plan NAME
                      instead of the configured service, run a wallet test plan (issuance-draft15,
                      issuance-1.0, issuance-mdoc, issuance-haip, presentation-pe, presentation-pe-ldp,
                      presentation-dcql, presentation-mdoc or all; presentation-dc-api needs a browser or
                      a --dc-api-command, so only \`vc-harness wallet-test\` runs it) on its own embedded service:
                      each case's QR code in turn, in the terminal and at <public URL>/wallet-test, what the
                      wallet did and whether that passes; the reports (JSON, Markdown, JUnit) at the end.
                      Enter ends a case early. Exit 0 when the wallet behaved correctly in every case, else 1
  --case-timeout S    seconds per case; default 120
  --reports DIR       where the wallet test reports and trust-anchor.pem go; default reports/wallet-test

Exit codes: 2 for a bad option or configuration (also a --sandbox or demo template no application key may use,
a --data folder that cannot hold the database or is open to other users, a missing or wrong data key, and a
--tls-cert / --tls-key that cannot be read or do not belong together); 1 when
the service cannot listen (port in use, …).`

/**
 * A mistake of the person running the command (a port in use, a --data path that cannot hold the database):
 * main.ts prints the message alone, without a stack trace, and exits with `exitCode` (2: usage or
 * configuration, as the usage says; 1: the service could not start).
 */
export class UserError extends Error {
  override name = 'UserError'
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 2,
  ) {
    super(message)
  }
}

const REQUEST_LOG_NOTE =
  '  requests: one line each below (time, method, path, status, ms); --quiet: none, --log-level L: full logs'

/** --public-url: an http(s) base URL without query, fragment or trailing slash. */
function publicUrlOption(value: string): string {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {}
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    throw Object.assign(new TypeError(`--public-url: not an http(s) base URL: ${value}`), {
      code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
    })
  }
  return value.replace(/\/+$/, '')
}

const usage = (message: string) =>
  Object.assign(new TypeError(message), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' })

/**
 * Whether to serve the demo relying party: on with the embedded demo configuration (no --config), otherwise
 * only with --demo; --no-demo turns it off. Throws a usage error (exit 2) for options that cannot apply.
 */
export function demoWanted(values: {
  config?: string | undefined
  demo?: boolean | undefined
  'no-demo'?: boolean | undefined
  sandbox?: boolean | undefined
  issue?: string | undefined
  verify?: string | undefined
  once?: boolean | undefined
  'sandbox-log'?: string | undefined
}): boolean {
  if (values.demo && values['no-demo']) throw usage('--demo and --no-demo exclude each other')
  const demo = values['no-demo'] ? false : (values.demo ?? values.config === undefined)
  const sandboxOnly = (['once', 'sandbox-log'] as const).filter((o) => values[o] !== undefined)
  if (!values.sandbox && sandboxOnly.length > 0) throw usage(`--${sandboxOnly[0]} needs --sandbox`)
  const templateOptions = (['issue', 'verify'] as const).filter((o) => values[o] !== undefined)
  if (!values.sandbox && !demo && templateOptions.length > 0) {
    throw usage(`--${templateOptions[0]} needs --sandbox or the demo (--demo)`)
  }
  return demo
}

/** A URL of the server this process can call: a wildcard listening address becomes loopback. */
function localUrl(url: string): string {
  return url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:')
}

/**
 * Parses and checks `serve`'s options without touching the disk or the network: every usage error (exit 2)
 * is thrown here, so tests can check them without starting a process. `help` means print the usage only.
 */
export function parseServeArgs(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      data: { type: 'string', default: '.vc-harness' },
      'data-key-file': { type: 'string' },
      'allow-shared-data-dir': { type: 'boolean' },
      database: { type: 'string' },
      'public-url': { type: 'string' },
      workers: { type: 'string', default: '1' },
      'log-level': { type: 'string' },
      quiet: { type: 'boolean' },
      'exit-on-stdin-close': { type: 'boolean' },
      demo: { type: 'boolean' },
      'no-demo': { type: 'boolean' },
      sandbox: { type: 'boolean' },
      issue: { type: 'string' },
      verify: { type: 'string' },
      once: { type: 'boolean' },
      'sandbox-log': { type: 'string' },
      'wallet-plan': { type: 'string' },
      'case-timeout': { type: 'string' },
      reports: { type: 'string' },
      ...TLS_PARSE_OPTIONS,
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  if (values.help) return { help: true as const, values }
  const tls = tlsFilePair(values, usage)
  const planOnly = (['case-timeout', 'reports'] as const).filter((o) => values[o] !== undefined)
  if (values['wallet-plan'] === undefined && planOnly.length > 0) {
    throw usage(`--${planOnly[0]} needs --wallet-plan`)
  }
  if (values['wallet-plan'] !== undefined && !values.sandbox) throw usage('--wallet-plan needs --sandbox')
  const port = Number(values.port)
  if (values.port.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535)
    throw usage(`--port: not a port number (0 to 65535; 0 picks a free one): ${values.port}`)
  const workers = Number(values.workers)
  try {
    checkWorkerCount(workers)
  } catch (error) {
    throw usage(`--${(error as Error).message}`)
  }
  const usingDemo = values.config === undefined
  const database = values.database ?? (process.env.VC_HARNESS_DATABASE_URL || undefined)
  if (database !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(database))
      throw usage(
        `--database: a PostgreSQL URL (postgres://user:password@host:port/database), not ${redactedUrl(database)}`,
      )
    if (workers > 1)
      throw usage(
        '--database with --workers: run several `vc-harness serve --database` instances instead (docs/scaling.md)',
      )
  }
  if (workers > 1) {
    // The sandbox and the demo keep their flows in the memory of one process: not behind several workers.
    if (values.data === ':memory:')
      throw usage('--workers needs a database folder (--data DIR), not :memory:')
    if (values.sandbox) throw usage('--sandbox runs in one process: not with --workers')
    if (values.demo) throw usage('--demo runs in one process: not with --workers')
  }
  // With several workers the demo is off (its flows live in one process); the same option checks apply.
  const demo = demoWanted(workers > 1 ? { ...values, 'no-demo': true } : values)
  const publicUrl = values['public-url'] === undefined ? undefined : publicUrlOption(values['public-url'])
  return { help: false as const, values, port, workers, usingDemo, demo, publicUrl, database, tls }
}

/** Returns an exit code only when it ends by itself (a wallet test plan); a service runs until stopped. */
export async function serve(argv: string[]): Promise<number | undefined> {
  const options = parseServeArgs(argv)
  if (options.help) {
    console.log(SERVE_USAGE)
    return
  }
  const { values, port, workers, usingDemo, demo, publicUrl, database } = options
  // Read before anything else starts: a wrong pair is a usage error, not a handshake failure on a phone.
  const tls = options.tls && loadTls(options.tls)
  if (values['wallet-plan'] !== undefined) {
    const { walletPlanByHand } = await import('./wallet-test.ts')
    return walletPlanByHand({
      plan: values['wallet-plan'],
      host: values.host,
      port,
      ...(publicUrl !== undefined ? { publicUrl } : {}),
      ...(tls ? { tls } : {}),
      ...(values['case-timeout'] !== undefined ? { caseTimeout: values['case-timeout'] } : {}),
      ...(values.reports !== undefined ? { reports: values.reports } : {}),
    })
  }
  const loaded = loadConfigFile(values.config ?? DEMO_CONFIG_PATH)
  // The option and its variable first (checked with the other options), else the configuration's key.
  const databaseUrl = database ?? loaded.database?.url
  if (databaseUrl !== undefined && database === undefined && workers > 1)
    throw usage(
      'database.url with --workers: run several `vc-harness serve` instances instead (docs/scaling.md)',
    )
  checkDataDir(values.data, { allowShared: values['allow-shared-data-dir'] === true })
  const dataKeys = chooseDataKeys(values, !usingDemo && loaded.webhooks.mode !== 'test')
  // One line per request unless --quiet; --log-level replaces it with pino's full logs.
  const requestLog = !values.quiet && !values['log-level']
  // The service prefers config.publicUrl over the listening URL (src/service/app.ts), so the option goes there.
  const config = publicUrl === undefined ? loaded : { ...loaded, publicUrl }
  // Checked before listening: a sandbox that cannot run should not leave a service behind.
  // The demo uses the same templates as the sandbox (--issue / --verify, else the same defaults).
  let plan: SandboxPlan | undefined
  if (values.sandbox || demo) {
    const { planSandbox, SandboxPlanError } = await import('../harness/sandbox.ts')
    try {
      plan = planSandbox(config, {
        ...(values.issue !== undefined ? { issue: values.issue } : {}),
        ...(values.verify !== undefined ? { verify: values.verify } : {}),
      })
    } catch (error) {
      // Exit code 2 like any other configuration problem.
      if (error instanceof SandboxPlanError) {
        throw new ConfigError(`${values.sandbox ? '--sandbox' : '--demo'}: ${error.message}`)
      }
      throw error
    }
  }
  // The sandbox and the demo backend call the API on the loopback address, which the certificate does not
  // name: with TLS they pin the certificate this process serves instead (src/harness/loopback-fetch.ts).
  const loopbackFetch = tls
    ? (await import('../harness/loopback-fetch.ts')).pinnedFetch(tls.leaf.der)
    : undefined
  const plugins: NonNullable<ServerOptions['plugins']> = []
  if (demo && plan) {
    const { demoPlugin } = await import('../demo/plugin.ts')
    plugins.push({
      plugin: demoPlugin({ config, plan, ...(loopbackFetch ? { fetch: loopbackFetch } : {}) }),
      prefix: '/demo',
    })
  }

  const where = { host: values.host, port, dataDir: values.data, dataKeys }
  if (workers > 1) {
    await starting(
      where,
      serveCluster({
        config,
        workers,
        host: values.host,
        port,
        dataDir: values.data,
        ...(values['log-level'] ? { logLevel: values['log-level'] } : {}),
        ...(requestLog ? { requestLog: true } : {}),
        usingDemo,
        exitOnStdinClose: values['exit-on-stdin-close'] === true,
        resolvedKeys: dataKeys,
        ...(tls ? { tls: { cert: tls.cert, key: tls.key } } : {}),
      }),
    )
    return
  }

  // PostgreSQL: opened (and migrated) here, handed to the server, closed after it (docs/scaling.md).
  const store =
    databaseUrl === undefined
      ? undefined
      : await starting(
          where,
          // The configuration's pool settings (maxConnections, statementTimeoutMs), its URL aside.
          openPostgresStore(databaseUrl, { dataKeys: dataKeys.keyring, ...poolOptions(loaded.database) }),
        )
  const server = await starting(
    where,
    startServer({
      config,
      host: values.host,
      port,
      dataDir: values.data,
      ...(store ? { store } : {}),
      ...(values['log-level'] ? { logLevel: values['log-level'] } : {}),
      ...(requestLog ? { requestLog: stdoutRequestLog } : {}),
      plugins,
      dataKeys: dataKeys.keyring,
      ...(tls ? { tls: { cert: tls.cert, key: tls.key } } : {}),
    }),
  )
  console.log(`vc-harness listening on ${server.url}`)
  if (server.publicUrl !== server.url) {
    console.log(`  public URL (in offers and requests): ${server.publicUrl}`)
  }
  if (tls) for (const line of tlsLines(tls, server.publicUrl)) console.log(`  ${line}`)
  if (databaseUrl !== undefined) console.log(`  database: ${redactedUrl(databaseUrl)} (PostgreSQL)`)
  else console.log(`  data: ${values.data === ':memory:' ? 'in memory (lost on exit)' : values.data}`)
  for (const line of dataKeyLines(dataKeys)) console.log(`  ${line}`)
  console.log(`  API docs: ${server.url}/docs`)
  if (requestLog) console.log(REQUEST_LOG_NOTE)
  if (plugins.length > 0) {
    console.log(
      `  demo relying party: ${server.url}/demo/issue and ${server.url}/demo/verify (docs/qr-page.md; --no-demo turns it off)`,
    )
  }
  if (usingDemo) printDemoKeys(config)

  let closing = false
  let stopSandbox = () => {}
  const shutdown = (signal: string, code = 0) => {
    if (closing) return
    closing = true
    stopSandbox()
    console.log(`vc-harness: ${signal}, closing`)
    server
      .close()
      .then(() => store?.close())
      .then(
        () => process.exit(code),
        (error: unknown) => {
          console.error('vc-harness: error while closing:', error)
          process.exit(1)
        },
      )
  }
  process.once('SIGTERM', () => shutdown('SIGTERM received'))
  process.once('SIGINT', () => shutdown('SIGINT received'))
  if (values['exit-on-stdin-close']) {
    process.stdin.once('end', () => shutdown('stdin closed'))
    process.stdin.once('error', () => shutdown('stdin closed'))
    process.stdin.resume()
  }

  if (plan && values.sandbox) {
    const { startSandbox } = await import('../harness/sandbox.ts')
    const logFile =
      values['sandbox-log'] ?? (values.data === ':memory:' ? undefined : join(values.data, 'sandbox.ndjson'))
    const sandbox = await startSandbox({
      config,
      plan,
      events: server.app.services.events,
      apiUrl: localUrl(server.url),
      publicUrl: server.publicUrl,
      ...(loopbackFetch ? { fetch: loopbackFetch } : {}),
      ...(values.once ? { once: true } : {}),
      ...(logFile !== undefined ? { logFile } : {}),
    })
    stopSandbox = () => sandbox.close()
    if (values.once) {
      void sandbox.done.then((succeeded) => {
        console.log(
          `vc-harness sandbox: issuance and verification ended, ${succeeded ? 'both succeeded' : 'not both succeeded'}`,
        )
        shutdown('--once done', succeeded ? 0 : 1)
      })
    }
  }
}

/**
 * The data key (docs/security.md, "Data at rest"): --data-key-file, $VC_HARNESS_DATA_KEY_FILE or
 * $VC_HARNESS_DATA_KEY; without one, `<data>/data.key` (generated) for the embedded demo and test-mode
 * configurations, an in-memory key for --data :memory:, and exit 2 saying how to make one in production
 * mode (a --config whose webhooks.mode is not "test", a database on disk).
 */
function chooseDataKeys(
  values: { data: string; 'data-key-file'?: string | undefined },
  production: boolean,
): ResolvedDataKeys {
  const fromOption = values['data-key-file']
  const fromEnv = process.env[DATA_KEY_FILE_ENV] || undefined
  const keyText = process.env[DATA_KEY_ENV] || undefined
  // Read once: children of this process (a wallet command, anything a plug-in spawns) need not inherit it;
  // cluster workers get the keys over IPC.
  delete process.env[DATA_KEY_ENV]
  try {
    return resolveDataKeys({
      dataDir: values.data,
      keyFile: fromOption ?? fromEnv,
      keyFileOrigin: fromOption !== undefined ? '--data-key-file' : DATA_KEY_FILE_ENV,
      keyText,
      production,
    })
  } catch (error) {
    if (error instanceof DataKeyError) throw new UserError(error.message)
    throw error
  }
}

/** The banner's data key lines: where the key came from, and what the start re-sealed (a rotation). */
function dataKeyLines({ keyring, description }: { keyring: DataKeyring; description: string }): string[] {
  if (keyring.resealed === 0) return [description]
  return [
    description,
    `data key: re-encrypted ${keyring.resealed} stored secret(s) under id ${keyring.currentId}; keys other than it can now be dropped (docs/security.md)`,
  ]
}

/**
 * Why an existing --data folder must not be used as it is, or undefined: owned by another user, or the
 * folder, the database or its -wal/-shm files open to group or others. It holds the service's keys (sealed,
 * but also API key hashes, processes, sessions and everything else in clear).
 */
function exposure(dir: string): string | undefined {
  if (process.platform === 'win32') return undefined
  const folder = fileStatus(dir)
  const uid = process.getuid?.()
  if (!folder) return undefined
  if (uid !== undefined && folder.uid !== uid) {
    return `the folder belongs to another user (uid ${folder.uid}; this process runs as uid ${uid}) and holds the service's keys: use a folder of this user's, or --allow-shared-data-dir if that is intended`
  }
  const database = join(dir, DATABASE_FILE)
  const open = [dir, database, `${database}-wal`, `${database}-shm`].flatMap((path) => {
    const status = fileStatus(path)
    return status && sharedBits(status.mode) !== 0 ? [{ path, mode: status.mode }] : []
  })
  if (open.length === 0) return undefined
  const files = open.filter((o) => o.path !== dir).map((o) => o.path)
  const fix = [
    ...(open.some((o) => o.path === dir) ? [`chmod 700 ${dir}`] : []),
    ...(files.length > 0 ? [`chmod 600 ${files.join(' ')}`] : []),
  ].join(' && ')
  const list = open.map((o) => `${o.path} (mode ${modeText(o.mode)})`).join(', ')
  return `open to other users: ${list}. It holds the service's keys: ${fix}, or start with --allow-shared-data-dir if other users are meant to have it`
}

/**
 * --data: a folder that holds (or can hold) the database, checked before anything starts, so that a file in
 * the way or a folder without write permission is named at once (SQLite's own error says neither).
 */
export function checkDataDir(dir: string, options: { allowShared?: boolean } = {}): void {
  if (dir === ':memory:') return
  const problem = (what: string) => new UserError(`--data ${dir}: ${what}`)
  const writable = (path: string) => {
    try {
      accessSync(path, constants.W_OK | constants.X_OK)
      return true
    } catch {
      return false
    }
  }
  const kind = (path: string) => {
    try {
      return statSync(path).isDirectory() ? 'folder' : 'file'
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      // ENOTDIR: a file stands where a folder of the path should be; the walk up below names it.
      if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing'
      throw problem(`cannot be read (${code ?? (error as Error).message})`)
    }
  }
  const found = kind(dir)
  if (found === 'file') {
    throw problem(
      `is a file, not a folder: give the folder the database goes in (created when missing), or :memory:`,
    )
  }
  if (found === 'folder') {
    if (!writable(dir)) {
      throw problem(
        `the folder is not writable: the service writes ${DATABASE_FILE} and its -wal and -shm files there`,
      )
    }
    const database = join(dir, DATABASE_FILE)
    if (kind(database) === 'file') {
      try {
        accessSync(database, constants.R_OK | constants.W_OK)
      } catch {
        throw problem(`${DATABASE_FILE} there is not writable`)
      }
    }
    const exposed = options.allowShared ? undefined : exposure(dir)
    if (exposed) throw problem(exposed)
    return
  }
  // Missing: it is created, so the nearest existing folder above it must be writable.
  let above = dirname(resolve(dir))
  while (kind(above) === 'missing' && dirname(above) !== above) above = dirname(above)
  if (kind(above) === 'file') throw problem(`cannot create the folder: ${above} is a file`)
  if (!writable(above)) throw problem(`cannot create the folder: ${above} is not writable`)
}

/**
 * Awaits the start of the service and turns what the person running it can fix into a UserError (no stack
 * trace): the port taken or not allowed, the host not an address of this machine, the database unusable.
 */
async function starting<T>(
  where: { host: string; port: number; dataDir: string; dataKeys: ResolvedDataKeys },
  start: Promise<T>,
) {
  try {
    return await start
  } catch (error) {
    if (error instanceof DataKeyError) {
      // The database holds values of another key: the store's re-sealing rolled back and nothing was sealed
      // under a key generated for this start (every later write comes after it), so that key file goes again.
      if (where.dataKeys.generatedFile !== undefined) unlinkSync(where.dataKeys.generatedFile)
      throw new UserError(error.message)
    }
    const { code, name, message } = error as NodeJS.ErrnoException
    const address = `${where.host}:${where.port}`
    if (code === 'EADDRINUSE') {
      throw new UserError(
        `port ${where.port} is already in use on ${where.host}: stop what listens there, or choose another port with --port (--port 0 picks a free one)`,
        1,
      )
    }
    if (code === 'EACCES') {
      throw new UserError(
        `not allowed to listen on ${address} (ports below 1024 need privileges): choose another port with --port`,
        1,
      )
    }
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      throw new UserError(`--host ${where.host}: no such host name (give an IP address, e.g. 127.0.0.1)`, 1)
    }
    if (code === 'EADDRNOTAVAIL') {
      throw new UserError(
        `--host ${where.host} is not an address of this machine: use 127.0.0.1, 0.0.0.0 (every interface) or one of its addresses`,
        1,
      )
    }
    if (name === 'StoreOpenError') throw new UserError(`--data ${where.dataDir}: ${message}`)
    if (name === 'PostgresOpenError') throw new UserError(`--database: ${message}`, 1)
    throw error
  }
}

const poolOptions = (database: ServiceConfig['database']) => {
  const { url: _url, ...pool } = database ?? {}
  return pool
}

function printDemoKeys(config: ServiceConfig) {
  console.log('  No --config given: running the embedded demo configuration (config/demo.json).')
  for (const tenant of config.tenants) {
    for (const key of tenant.apiKeys) {
      // Demo keys are public by design; a real configuration's secrets are never printed.
      const template = key.template ? ` template=${key.template}` : ''
      console.log(`  demo ${key.role} key: tenant=${tenant.id} id=${key.id} secret=${key.secret}${template}`)
    }
  }
}

/** The banner's TLS lines: which certificate, and what a phone's wallet would hold against it. */
function tlsLines(tls: { leaf: TlsLeaf; cert: string }, publicUrl: string): string[] {
  const names = [...tls.leaf.dnsNames, ...tls.leaf.ips].join(', ') || tls.leaf.subject
  return [
    `TLS: certificate for ${names}, valid until ${tls.leaf.notAfter.toISOString().slice(0, 10)} (docs/phones.md)`,
    ...tlsWarnings(tls, publicUrl).map((w) => `warning: ${w}`),
  ]
}

/** --workers N > 1: the primary forks the workers, reports, and shuts them all down on a signal. */
async function serveCluster(
  options: Omit<ClusterOptions, 'publicUrl' | 'dataKeys'> & {
    usingDemo: boolean
    exitOnStdinClose: boolean
    resolvedKeys: ResolvedDataKeys
  },
) {
  const { usingDemo, exitOnStdinClose, resolvedKeys, ...clusterOptions } = options
  const running = await startCluster({ ...clusterOptions, dataKeys: resolvedKeys.keyring })
  console.log(
    `vc-harness listening on ${running.url} (${running.workers} workers: ${running.pids.join(', ')})`,
  )
  const { config } = options
  if (running.publicUrl !== running.url) {
    console.log(`  public URL (in offers and requests): ${running.publicUrl}`)
  }
  if (options.tls) {
    for (const line of tlsLines({ ...options.tls, leaf: tlsLeaf(options.tls) }, running.publicUrl)) {
      console.log(`  ${line}`)
    }
  }
  console.log(`  data: ${options.dataDir} (shared by every worker; docs/scaling.md)`)
  for (const line of dataKeyLines(resolvedKeys)) console.log(`  ${line}`)
  console.log(`  API docs: ${running.url}/docs`)
  if (options.requestLog) console.log(REQUEST_LOG_NOTE)
  if (usingDemo) printDemoKeys(config)

  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    console.log(`vc-harness: ${signal}, closing ${running.workers} workers`)
    running.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('vc-harness: error while closing:', error)
        process.exit(1)
      },
    )
  }
  process.once('SIGTERM', () => shutdown('SIGTERM received'))
  process.once('SIGINT', () => shutdown('SIGINT received'))
  if (exitOnStdinClose) {
    process.stdin.once('end', () => shutdown('stdin closed'))
    process.stdin.once('error', () => shutdown('stdin closed'))
    process.stdin.resume()
  }
}
