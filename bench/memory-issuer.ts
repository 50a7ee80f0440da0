import type { TenantKey, TenantKeys } from '../src/service/crypto/tenant-keys.ts'
import { StatusLists } from '../src/service/status/service.ts'
import type { StatusListRecord, Store } from '../src/service/store/index.ts'
import type { PublicUrls } from '../src/service/util/urls.ts'
import { didKeyFromPublicKey, generateKeyPair, JWS_ALGS, type JwsAlg } from '../src/shared/did-key.ts'

// The issuer side of the service in memory, for the benchmarks that measure the verifier alone
// (bench/verifier.ts, bench/status-fetch.ts): a tenant's did:key per algorithm, as TenantKeys generates them,
// and the service's own StatusLists over a store that holds nothing but status lists (allocating an entry
// and signing a list need nothing else).

export function memoryIssuer(urls: PublicUrls, now: number, statusListSize: number) {
  const keys = new Map<JwsAlg, TenantKey<JwsAlg>>(
    JWS_ALGS.map((alg) => {
      const pair = generateKeyPair(alg)
      const { did, kid } = didKeyFromPublicKey(pair.publicKey)
      return [alg, { alg, did, kid, privateKey: pair.privateKey, publicKey: pair.publicKey }]
    }),
  )
  const key = <A extends JwsAlg>(alg: A) => keys.get(alg) as TenantKey<A>
  const lists = new Map<string, StatusListRecord>()
  const store = {
    statusLists: {
      get: async (id: string) => lists.get(id),
      version: async (id: string) => {
        const list = lists.get(id)
        return list && { tenantId: list.tenantId, version: list.version }
      },
      // StatusListRepository.reserveEntry: the newest list of the tenant and alg while it has room
      reserveEntry: async (tenantId: string, alg: string, fillLimit: number) => {
        const list = [...lists.values()].reverse().find((l) => l.tenantId === tenantId && l.alg === alg)
        if (!list || list.used >= fillLimit * list.size) return undefined
        list.used++
        return { id: list.id, size: list.size }
      },
      create: async (list: StatusListRecord) => void lists.set(list.id, list),
    },
    issuedCredentials: { create: async () => {} },
  }
  const statusLists = new StatusLists(
    store as unknown as Store,
    { forTenant: async (_tenant: string, alg: JwsAlg) => key(alg) } as unknown as TenantKeys,
    { now: () => now },
    urls,
    statusListSize,
  )
  return {
    key,
    /** The store StatusLists writes to (also what `allocate` is handed as the repositories). */
    store,
    /** The default trust list of a session: the tenant's own issuer DIDs. */
    trustedIssuers: [...keys.values()].map((k) => k.did),
    statusLists,
  }
}
