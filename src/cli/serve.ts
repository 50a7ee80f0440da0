import { parseArgs } from 'node:util'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../service/config/index.ts'
import { startServer } from '../service/server.ts'

export const SERVE_USAGE = `Usage: vc-harness serve [--config FILE] [--port N] [--host H] [--data DIR] [--log-level LEVEL]

  --config FILE   service configuration (JSON, see config/config.schema.json); default: the embedded demo
  --port N        TCP port; default 8080 (0 picks a free one)
  --host H        interface to listen on; default 127.0.0.1
  --data DIR      folder of the SQLite database, or :memory:; default .vc-harness
  --log-level L   fastify/pino log level (info, warn, …); default: no request logs`

export async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      data: { type: 'string', default: '.vc-harness' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  if (values.help) {
    console.log(SERVE_USAGE)
    return
  }
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port: not a port number: ${values.port}`)
  const usingDemo = values.config === undefined
  const config = loadConfigFile(values.config ?? DEMO_CONFIG_PATH)

  const server = await startServer({
    config,
    host: values.host,
    port,
    dataDir: values.data,
    ...(values['log-level'] ? { logLevel: values['log-level'] } : {}),
  })
  console.log(`vc-harness listening on ${server.url}`)
  console.log(`  data: ${values.data === ':memory:' ? 'in memory (lost on exit)' : values.data}`)
  console.log(`  API docs: ${server.url}/docs`)
  if (usingDemo) {
    console.log('  No --config given: running the embedded demo configuration (config/demo.json).')
    for (const tenant of config.tenants) {
      for (const key of tenant.apiKeys) {
        // Demo keys are public by design; a real configuration's secrets are never printed.
        const template = key.template ? ` template=${key.template}` : ''
        console.log(
          `  demo ${key.role} key: tenant=${tenant.id} id=${key.id} secret=${key.secret}${template}`,
        )
      }
    }
  }

  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    console.log(`vc-harness: ${signal} received, closing`)
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('vc-harness: error while closing:', error)
        process.exit(1)
      },
    )
  }
  process.once('SIGTERM', () => shutdown('SIGTERM'))
  process.once('SIGINT', () => shutdown('SIGINT'))
}
