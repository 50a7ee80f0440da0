import Fastify from 'fastify'

/** Paths of the baseline routes; the POST takes the same body the create-offer scenario sends. */
export const BARE_POST_PATH = '/bare/post'
export const BARE_GET_PATH = '/bare/get'

export interface RunningBare {
  url: string
  close(): Promise<void>
}

/**
 * The baseline: a default Fastify 5 app with one POST JSON route and one GET JSON route — no auth,
 * no database, no schemas, no hooks. What Fastify + Node + the loopback socket cost on this machine,
 * so the service's figures can be read as a fraction of "the most this stack can do here".
 */
export async function startBare(): Promise<RunningBare> {
  const app = Fastify({ logger: false })
  app.post<{ Body: { group?: unknown } }>(BARE_POST_PATH, async (request, reply) =>
    reply.code(201).send({ received: typeof request.body?.group === 'string' }),
  )
  app.get(BARE_GET_PATH, async () => ({ status: 'ok' }))
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (typeof address !== 'object' || !address) throw new Error('bare server has no TCP address')
  return { url: `http://127.0.0.1:${address.port}`, close: () => app.close() }
}
