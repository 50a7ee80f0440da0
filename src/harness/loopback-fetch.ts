import type { TLSSocket } from 'node:tls'
import { lazyRequire } from '../shared/lazy.ts'

// The relying parties that run inside `vc-harness serve` (the sandbox, the demo backend, the wallet test
// runner) call the service's API on its own loopback address. With TLS on (docs/phones.md) that address is
// not a name the certificate proves (the certificate names the DNS name phones use), and its CA may be one
// only the phone was told to trust, so ordinary verification would fail. Those calls instead pin the exact
// certificate this process serves: the handshake must present that leaf, byte for byte, or the connection
// is closed before a request (and its API key) is sent. Nothing else is accepted, so this is no weaker than
// verifying a chain, and it works for any certificate a user brings (self-signed, a private CA, Let's Encrypt).

const undici = lazyRequire<typeof import('undici')>('undici')

/** A `fetch` that talks HTTPS only to a server presenting `leafDer` as its certificate. */
export function pinnedFetch(leafDer: Buffer): typeof fetch {
  const { Agent, buildConnector, fetch: undiciFetch } = undici()
  // rejectUnauthorized off: the pin below replaces chain and name verification, and is checked before
  // undici writes anything on the socket.
  // No session cache: a resumed TLS session shows no peer certificate, and every connection must show the pinned one.
  const connect = buildConnector({ rejectUnauthorized: false, maxCachedSessions: 0 })
  const dispatcher = new Agent({
    connect: (options, callback) => {
      connect(options, (error, socket) => {
        if (error || !socket) return callback(error ?? new Error('no socket'), null)
        if (options.protocol !== 'https:') return callback(null, socket)
        const presented = (socket as TLSSocket).getPeerX509Certificate?.()
        if (presented && Buffer.from(presented.raw).equals(leafDer)) return callback(null, socket)
        socket.destroy()
        callback(
          new Error(
            `${options.hostname}:${options.port} presented another certificate than the one this service serves`,
          ),
          null,
        )
      })
    },
  })
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(
      input as Parameters<typeof undiciFetch>[0],
      {
        ...(init as Parameters<typeof undiciFetch>[1]),
        dispatcher,
      } as Parameters<typeof undiciFetch>[1],
    )) as unknown as typeof fetch
}
