/**
 * What a status list of ANOTHER issuer costs the verifier per presentation, fetched over HTTP from another
 * local process, with and without the shared status-list cache (credentials/status.ts RemoteStatusLists,
 * issue 30), next to the list read from memory (what bench/verifier.ts measures, as the service reads its
 * own lists) in the same run. Prints CPU µs per presentation, fetches per presentation and the ratios to the
 * uncached row; asserts nothing, but exits 1 if a measured presentation does not verify.
 *
 *   node --import tsx bench/status-fetch.ts [--smoke] [--iterations N] [--rounds R]
 *
 * Built as the service builds it: the demo configuration's `degree` credential and `degree-check` template,
 * status entries and lists from the service's StatusLists (131072 entries), the request objects from the
 * profiles' own builders, every check of verification/checks.ts. The lists are served by a child process on
 * 127.0.0.1 (so its CPU is not counted) without Cache-Control: the Bitstring list has no ttl (5 min by
 * default, Bitstring Status List v1.0 §2.2), the Token Status List says `ttl: 300`. The fetch goes through
 * util/outbound.ts under policy "test" (loopback allowed), as the suite and the benchmarks run. Presentations
 * are verified one after the other, so "no cache" is one keep-alive HTTP request per presentation.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { cpus, loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../src/service/config/index.ts'
import { resolveTemplate } from '../src/service/config/schema.ts'
import { RemoteStatusLists, StatusChecker, type StatusListSource } from '../src/service/credentials/status.ts'
import type { IssuerCertificates } from '../src/service/crypto/issuer-certificates.ts'
import type { TenantKeys } from '../src/service/crypto/tenant-keys.ts'
import {
  prepareCredentials,
  signCredential,
  signSdJwtCredential,
} from '../src/service/issuance/credentials.ts'
import { PresentationExchangeRequests } from '../src/service/oid4vp/request.ts'
import { Openid4vp1Requests } from '../src/service/oid4vp/request-v1.ts'
import type { Repositories } from '../src/service/store/index.ts'
import { PublicUrls } from '../src/service/util/urls.ts'
import { type Verdict, verifyDcqlResponse, verifyResponse } from '../src/service/verification/checks.ts'
import { buildDcqlQuery } from '../src/service/verification/dcql-query.ts'
import { buildDefinition } from '../src/service/verification/definition.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../src/shared/did-key.ts'
import { signJws } from '../src/shared/jws.ts'
import { presentSdJwtVc } from '../src/shared/sd-jwt.ts'
import { JWT_MEDIA_TYPE, JWT_TYP, STATUS_LIST_JWT_MEDIA_TYPE } from '../src/shared/wire.ts'
import { memoryIssuer } from './memory-issuer.ts'
import { CREDENTIAL_CONTENT } from './protocol.ts'
import { percentile } from './stats.ts'

// ---------------------------------------------------------------------------------------------------
// The list server: a child process serving what the parent publishes (its CPU is not the verifier's)

type Published = { path: string; body: string; contentType: string }

if (process.argv.includes('--serve-lists')) {
  const lists = new Map<string, Published>()
  const server = createServer((request, response) => {
    const list = lists.get(request.url ?? '')
    if (!list) return void response.writeHead(404).end()
    response.writeHead(200, { 'content-type': list.contentType }).end(list.body)
  })
  process.on('message', (message: Published) => {
    lists.set(message.path, message)
    process.send?.({ published: message.path })
  })
  process.on('disconnect', () => server.close())
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }))
} else {
  await main()
}

async function startListServer(): Promise<{
  child: ChildProcess
  port: number
  publish(p: Published): Promise<void>
}> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve-lists'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port))
    child.once('exit', (code) => reject(new Error(`the list server exited (${code})`)))
  })
  const publish = (p: Published) =>
    new Promise<void>((resolve) => {
      const done = (m: { published?: string }) => {
        if (m.published !== p.path) return
        child.off('message', done)
        resolve()
      }
      child.on('message', done)
      child.send(p)
    })
  return { child, port, publish }
}

// ---------------------------------------------------------------------------------------------------

class NotVerified extends Error {}

interface Row {
  label: string
  /** How the list is read: from memory, over HTTP uncached, over HTTP through the cache. */
  source: 'memory' | 'http, no cache' | 'http, cache'
  fetches: () => number
  verify(): Promise<Verdict>
}

async function main() {
  const USAGE = 'usage: node --import tsx bench/status-fetch.ts [--smoke] [--iterations N] [--rounds R]'
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      iterations: { type: 'string' },
      rounds: { type: 'string' },
    },
  })
  const iterations = Number(values.iterations ?? (values.smoke ? 5 : 500))
  const rounds = Number(values.rounds ?? (values.smoke ? 1 : 5))
  if (!Number.isInteger(iterations) || iterations < 1 || !Number.isInteger(rounds) || rounds < 1) {
    console.error(USAGE)
    process.exit(2)
  }
  const warmup = values.smoke ? 2 : Math.min(200, Math.max(50, iterations))
  const began = performance.now()
  const lists = await startListServer()
  try {
    const rows = await buildRows(lists.port, lists.publish)
    for (const row of rows) ensureVerified(row, await row.verify())
    console.log(
      `status list of another issuer, per presentation: ${rounds} round(s) × ${iterations} presentations per row after ${warmup} warm-up; ` +
        `Node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]?.toFixed(2)}`,
    )
    for (const row of rows) await measure(row, warmup)
    const samples = rows.map(() => [] as { cpuUs: number; wallUs: number; fetches: number }[])
    for (let r = 0; r < rounds; r++) {
      for (const [i, row] of rows.entries()) samples[i]?.push(await measure(row, iterations))
    }
    console.log('')
    console.log(
      '| presentation | status list read | µs CPU / presentation (median, range) | µs wall | fetches / presentation | CPU vs http, no cache |',
    )
    console.log('|---|---|---:|---:|---:|---:|')
    for (const [i, row] of rows.entries()) {
      const s = samples[i] ?? []
      const baseIndex = rows.findIndex((r) => r.label === row.label && r.source === 'http, no cache')
      const base = samples[baseIndex] ?? []
      const cpu = s.map((x) => x.cpuUs)
      const ratio =
        i === baseIndex
          ? '(baseline)'
          : `×${percentile(
              s.map((x, r) => x.cpuUs / (base[r]?.cpuUs ?? Number.NaN)),
              50,
            ).toFixed(2)}`
      console.log(
        `| ${row.label} | ${row.source} | ${percentile(cpu, 50).toFixed(0)} (${Math.min(...cpu).toFixed(0)}–${Math.max(...cpu).toFixed(0)}) | ` +
          `${percentile(
            s.map((x) => x.wallUs),
            50,
          ).toFixed(0)} | ${percentile(
            s.map((x) => x.fetches),
            50,
          ).toFixed(3)} | ${ratio} |`,
      )
    }
    console.log('')
    console.log(
      'CPU = process.cpuUsage of the verifier process (user + system, every thread), the list server excluded; every named check runs, credentialStatus included.',
    )
    console.log(
      `done in ${((performance.now() - began) / 1000).toFixed(1)} s, load ${loadavg()[0]?.toFixed(2)}`,
    )
  } catch (error) {
    if (!(error instanceof NotVerified)) throw error
    console.error(`!!! A PRESENTATION DID NOT VERIFY — nothing was measured\n  ${error.message}`)
    process.exitCode = 1
  } finally {
    lists.child.disconnect()
  }
}

async function measure(row: Row, n: number) {
  const fetchesBefore = row.fetches()
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  for (let i = 0; i < n; i++) ensureVerified(row, await row.verify())
  const wallMs = performance.now() - started
  const cpu = process.cpuUsage(cpuBefore)
  return {
    cpuUs: (cpu.user + cpu.system) / n,
    wallUs: (wallMs * 1000) / n,
    fetches: (row.fetches() - fetchesBefore) / n,
  }
}

function ensureVerified(row: Row, verdict: Verdict) {
  const { validations } = verdict
  const status = validations.checks.find((c) => c.check === 'credentialStatus')
  if (
    validations.status === 'SUCCESS' &&
    validations.checks.every((c) => c.result === 'passed') &&
    /^status: (active|valid)$/.test(status?.message ?? '')
  )
    return
  const notPassed = validations.checks
    .filter((c) => c.result !== 'passed' || c.check === 'credentialStatus')
    .map((c) => `${c.check} ${c.result}: ${c.message ?? ''}`)
  throw new NotVerified(
    `${row.label} (${row.source}): ${validations.status}\n    ${notPassed.join('\n    ')}`,
  )
}

// ---------------------------------------------------------------------------------------------------
// The service's pieces, as bench/verifier.ts sets them up, with the issuer at the list server's origin

async function buildRows(port: number, publish: (p: Published) => Promise<void>): Promise<Row[]> {
  const TENANT = 'demo'
  const config = loadConfigFile(DEMO_CONFIG_PATH)
  const tenant = config.tenants.find((t) => t.id === TENANT)
  const degreeCheck = tenant?.verificationTemplates.find((t) => t.id === 'degree-check')
  const degree = tenant?.issuanceTemplates.find((t) => t.id === 'degree')
  if (!degreeCheck || !degree) throw new Error(`${DEMO_CONFIG_PATH} lost the degree / degree-check templates`)
  // The other issuer: its lists live at the list server's origin; the verifier's own URLs do not matter.
  const issuerUrls = new PublicUrls(() => `http://127.0.0.1:${port}`, 'openid-credential-offer')
  const verifierUrls = new PublicUrls(() => 'https://verifier.example', 'openid-credential-offer')
  const now = Date.now()
  const iat = Math.floor(now / 1000)
  const issuer = memoryIssuer(issuerUrls, now, config.statusListSize)
  const key = issuer.key('EdDSA')
  const { trustedIssuers, statusLists, store: listStore } = issuer
  /** In memory, by URL: the "memory" rows' source and what the list server is sent. */
  const inMemory = new Map<string, string>()
  async function publishList(url: string) {
    const own = issuerUrls.ownStatusList(url)
    const jwt =
      own?.form === 'bitstring'
        ? await statusLists.credential(own.tenantId, own.listId)
        : own && (await statusLists.tokenStatusList(own.tenantId, own.listId))
    if (!jwt || !own) throw new Error(`no status list behind ${url}`)
    inMemory.set(url, jwt)
    await publish({
      path: new URL(url).pathname,
      body: jwt,
      contentType: own.form === 'bitstring' ? JWT_MEDIA_TYPE : STATUS_LIST_JWT_MEDIA_TYPE,
    })
  }
  const holderPair = generateKeyPair('EdDSA')
  const holder = {
    ...didKeyFromPublicKey(holderPair.publicKey),
    alg: 'EdDSA' as const,
    privateKey: holderPair.privateKey,
  }

  async function issue(format: 'jwt_vc_json' | 'dc+sd-jwt'): Promise<string> {
    const [prepared] = prepareCredentials(structuredClone(CREDENTIAL_CONTENT), degree as never, {
      issuerDid: key.did,
      holderDid: holder.did,
    })
    if (!prepared) throw new Error('prepareCredentials returned nothing')
    const { token, ...bitstring } = await statusLists.allocate(listStore as unknown as Repositories, {
      tenantId: TENANT,
      alg: 'EdDSA',
      credentialId: prepared.id as string,
      processId: randomUUID(),
    })
    if (format === 'jwt_vc_json') {
      await publishList(bitstring.statusListCredential)
      return signCredential(prepared, { holderDid: holder.did, key, status: { ...bitstring }, now }).jwt
    }
    await publishList(token.status_list.uri)
    const signed = await signSdJwtCredential(prepared, {
      holderDid: holder.did,
      key,
      status: { ...token },
      now,
      vct: issuerUrls.defaultVct(TENANT, degree?.credentialType ?? ''),
    })
    return signed.proof.jwt
  }

  const sources: { source: Row['source']; status: StatusChecker; fetches: () => number }[] = []
  const memorySource: StatusListSource = async (url) => {
    const jwt = inMemory.get(url)
    if (jwt === undefined) throw new Error(`no list at ${url}`)
    return jwt
  }
  sources.push({ source: 'memory', status: new StatusChecker(memorySource), fetches: () => 0 })
  for (const cached of [false, true]) {
    const remote = new RemoteStatusLists({ policy: 'test', ...(cached ? {} : { cache: false as const }) })
    sources.push({
      source: cached ? 'http, cache' : 'http, no cache',
      status: new StatusChecker(remote.source),
      fetches: () => remote.fetches,
    })
  }

  const rows: Row[] = []
  // pe / jwt_vc_json / Bitstring Status List (the interface document's profile)
  {
    const template = resolveTemplate('verification', { ...degreeCheck, profile: 'pe' })
    const sessionId = randomUUID()
    const nonce = randomBytes(32).toString('base64url')
    const definition = buildDefinition({
      sessionId,
      template,
      templateUpdatedAt: now,
      trustedIssuers,
      verifier: key,
      nonce,
      receiverUrl: verifierUrls.absolute(''),
      now,
    })
    const { request } = await new PresentationExchangeRequests(verifierUrls).build({
      tenantId: TENANT,
      sessionId,
      definition,
      nonce,
      state: randomBytes(16).toString('base64url'),
      verifier: key,
      now,
      expiresAt: now + template.sessionLifetimeSeconds * 1000,
    })
    const presented = request.presentation_definition as { id: string; input_descriptors: { id: string }[] }
    const credential = await issue('jwt_vc_json')
    const vpToken = signJws(
      { alg: holder.alg, typ: JWT_TYP, kid: holder.kid },
      {
        iss: holder.did,
        aud: request.client_id,
        nonce,
        iat,
        jti: `urn:uuid:${randomUUID()}`,
        vp: {
          '@context': ['https://www.w3.org/2018/credentials/v1'],
          type: ['VerifiablePresentation'],
          holder: holder.did,
          verifiableCredential: [credential],
        },
      },
      holder.privateKey,
    )
    const submission = {
      id: randomUUID(),
      definition_id: presented.id,
      descriptor_map: presented.input_descriptors.map((d) => ({
        id: d.id,
        format: 'jwt_vp',
        path: '$',
        path_nested: { id: d.id, format: 'jwt_vc_json', path: '$.verifiableCredential[0]' },
      })),
    }
    for (const { source, status, fetches } of sources) {
      const ctx = {
        nonce,
        clientId: request.client_id,
        now,
        trustedIssuers,
        requireStatus: template.requireStatus,
        status,
        definition: presented as unknown as Record<string, unknown>,
      }
      rows.push({
        label: 'pe / jwt_vc_json / Bitstring',
        source,
        fetches,
        verify: () => verifyResponse(vpToken, submission, ctx),
      })
    }
  }
  // dcql / dc+sd-jwt / Token Status List
  {
    const template = resolveTemplate('verification', {
      ...degreeCheck,
      profile: 'dcql',
      dcql: { format: 'dc+sd-jwt', responseMode: 'direct_post' },
    })
    const settings = template.dcql
    if (!settings) throw new Error('a dcql template without its settings')
    const dcqlQuery = buildDcqlQuery({
      credentialTypes: template.credentialTypes,
      optionalGroups: template.optionalGroups,
      requestedFields: template.requestedFields,
      format: settings.format,
      vctValues: (type) => settings.vctValues?.[type] ?? [issuerUrls.defaultVct(TENANT, type)],
    })
    const nonce = randomBytes(32).toString('base64url')
    const { request } = await new Openid4vp1Requests({
      urls: verifierUrls,
      tenantKeys: {} as TenantKeys,
      certificates: {} as IssuerCertificates,
    }).build({
      tenantId: TENANT,
      sessionId: randomUUID(),
      dcqlQuery: dcqlQuery as unknown as Record<string, unknown>,
      settings,
      nonce,
      state: randomBytes(16).toString('base64url'),
      verifier: key,
      now,
      expiresAt: now + template.sessionLifetimeSeconds * 1000,
    })
    const credential = await issue('dc+sd-jwt')
    const presentation = await presentSdJwtVc(
      credential,
      Object.keys(CREDENTIAL_CONTENT[0]?.credentialSubject ?? {}),
      { alg: 'EdDSA', privateKey: holder.privateKey, nonce, audience: request.client_id, iat },
    )
    const vpToken = { [dcqlQuery.credentials[0]?.id as string]: [presentation] }
    for (const { source, status, fetches } of sources) {
      const ctx = {
        nonce,
        clientId: request.client_id,
        now,
        trustedIssuers,
        requireStatus: template.requireStatus,
        status,
        dcqlQuery: request.dcql_query as Record<string, unknown>,
      }
      rows.push({
        label: 'dcql / dc+sd-jwt / Token Status List',
        source,
        fetches,
        verify: () => verifyDcqlResponse(vpToken, ctx),
      })
    }
  }
  return rows
}
