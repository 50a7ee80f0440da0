import { createServer } from 'node:net'

/** A TCP port of 127.0.0.1 free a moment ago (for a process that must be told its port before it listens). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}
