/**
 * What the verifier's checks cost for ONE presentation, per profile and format: the pure checking the
 * service runs on a wallet's response (verification/checks.ts — every named check of the credential
 * pipeline, credentialStatus included), without HTTP and without the database. Measured in one process,
 * one row after the other, each round running every row once, with `pe` / jwt_vc_json (the interface
 * document's profile) as the baseline of the same round. Prints CPU µs per presentation, presentations/s
 * on one core and the ratios; asserts nothing, but exits 1 if any measured presentation does not verify
 * (a benchmark of a failing check measures nothing).
 *
 *   node --import tsx bench/verifier.ts [--smoke] [--iterations N] [--rounds R]
 *
 * What is built as the service builds it (once, before measuring): the demo configuration's `degree`
 * credential and `degree-check` template; the presentation definition (buildDefinition) and the DCQL query
 * (buildDcqlQuery) put into the request objects by the profiles' own request builders; status entries
 * allocated and status lists signed by the service's StatusLists (131072 entries by default). The lists
 * are handed to the StatusChecker from memory (the service reads its own lists in-process, with one
 * SQLite read per fetch that this bench leaves out), and credentialStatus reads them as the service does.
 * The `pe / ldp_vc` rows (issue 33) answer the same session with an ldp_vp whose presentation proof is
 * of one proof type (section 2.8's four and the Data Integrity cryptosuites), carrying the degree issued
 * as an ldp_vc (its proof of the same type where the tenant has a key of that type, else
 * Ed25519Signature2018: the RSA row). JSON-LD canonicalization costs far more than a JWS, so these rows
 * run a tenth of the iterations (the figures are per presentation).
 * The row `pe (PEX per response)` evaluates the definition with @sphereon/pex from scratch for every
 * response, as the service did before it compiled definitions (util/pex.ts): that change's baseline.
 */
import { createPrivateKey, type JsonWebKey, randomBytes, randomUUID } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { CompactEncrypt, compactDecrypt, importJWK } from 'jose'
import { ldpVcFormat } from '../src/formats/ldp-vc/index.ts'
import { generateLdKeyPair, type LdKeyType, ldKeyFromPublicKey } from '../src/formats/ldp-vc/keys.ts'
import { type LdProofType, signLd } from '../src/formats/ldp-vc/suites.ts'
import { DEMO_CONFIG_PATH, loadConfigFile } from '../src/service/config/index.ts'
import { resolveTemplate } from '../src/service/config/schema.ts'
import { CHECKS } from '../src/service/credentials/outcomes.ts'
import { presentationExchangeByPex } from '../src/service/credentials/presentation-exchange.ts'
import { StatusChecker } from '../src/service/credentials/status.ts'
import type { IssuerCertificates } from '../src/service/crypto/issuer-certificates.ts'
import type { TenantKeys } from '../src/service/crypto/tenant-keys.ts'
import {
  prepareCredentials,
  signCredential,
  signIn,
  signSdJwtCredential,
} from '../src/service/issuance/credentials.ts'
import { PresentationExchangeRequests } from '../src/service/oid4vp/request.ts'
import { Openid4vp1Requests, RESPONSE_ALG, RESPONSE_ENC_VALUES } from '../src/service/oid4vp/request-v1.ts'
import type { Repositories } from '../src/service/store/index.ts'
import { PublicUrls } from '../src/service/util/urls.ts'
import {
  type ResponseContext,
  type Verdict,
  verifyDcqlResponse,
  verifyResponse,
} from '../src/service/verification/checks.ts'
import { buildDcqlQuery } from '../src/service/verification/dcql-query.ts'
import { buildDefinition } from '../src/service/verification/definition.ts'
import { didKeyFromPublicKey, generateKeyPair, type JwsAlg } from '../src/shared/did-key.ts'
import { signJws } from '../src/shared/jws.ts'
import { presentSdJwtVc } from '../src/shared/sd-jwt.ts'
import { JWT_TYP } from '../src/shared/wire.ts'
import { memoryIssuer } from './memory-issuer.ts'
import { CREDENTIAL_CONTENT } from './protocol.ts'
import { percentile } from './stats.ts'

const USAGE = 'usage: node --import tsx bench/verifier.ts [--smoke] [--iterations N] [--rounds R]'
const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    iterations: { type: 'string' },
    rounds: { type: 'string' },
  },
})
const iterations = Number(values.iterations ?? (values.smoke ? 5 : 1000))
const rounds = Number(values.rounds ?? (values.smoke ? 2 : 5))
if (!Number.isInteger(iterations) || iterations < 1 || !Number.isInteger(rounds) || rounds < 1) {
  console.error(USAGE)
  process.exit(2)
}
const warmup = values.smoke ? 3 : Math.min(300, Math.max(50, iterations))

class NotVerified extends Error {}

// ---------------------------------------------------------------------------------------------------
// The service's pieces, as the demo configuration sets them up

const TENANT = 'demo'
const config = loadConfigFile(DEMO_CONFIG_PATH)
const { degree, degreeCheck } = (() => {
  const tenant = config.tenants.find((t) => t.id === TENANT)
  const degreeCheck = tenant?.verificationTemplates.find((t) => t.id === 'degree-check')
  const degree = tenant?.issuanceTemplates.find((t) => t.id === 'degree')
  if (!degreeCheck || !degree) throw new Error(`${DEMO_CONFIG_PATH} lost the degree / degree-check templates`)
  return { degree, degreeCheck }
})()
const urls = new PublicUrls(() => 'https://vc-harness.example', 'openid-credential-offer')
const now = Date.now()
const iat = Math.floor(now / 1000)

// The tenant's did:key per algorithm and its StatusLists, in memory (bench/memory-issuer.ts); EdDSA is also
// the verifier's key.
const issuer = memoryIssuer(urls, now, config.statusListSize)
const tenantKey = issuer.key
const verifier = tenantKey('EdDSA')
/** The default trust list of a session: the tenant's own issuer DIDs. */
const trustedIssuers = issuer.trustedIssuers
const { statusLists, store: listStore } = issuer
const published = new Map<string, string>()
/** What the service's status source answers for its own lists, taken out of the measured path. */
async function publish(url: string) {
  const own = urls.ownStatusList(url)
  const jwt =
    own?.form === 'bitstring'
      ? await statusLists.credential(own.tenantId, own.listId)
      : own && (await statusLists.tokenStatusList(own.tenantId, own.listId))
  if (!jwt) throw new Error(`no status list behind ${url}`)
  published.set(url, jwt)
}
const status = new StatusChecker(async (url) => {
  const jwt = published.get(url)
  if (jwt === undefined) throw new Error(`the bench publishes no status list at ${url}`)
  return jwt
})

interface Holder {
  alg: JwsAlg
  did: string
  kid: string
  privateKey: ReturnType<typeof generateKeyPair>['privateKey']
}
function newHolder(alg: JwsAlg): Holder {
  const pair = generateKeyPair(alg)
  return { ...didKeyFromPublicKey(pair.publicKey), alg, privateKey: pair.privateKey }
}

/** The `degree` credential issued to `holder` as the service issues it: status entry allocated, signed. */
async function issue(alg: JwsAlg, holder: Holder, format: 'jwt_vc_json' | 'dc+sd-jwt'): Promise<string> {
  const key = tenantKey(alg)
  const [prepared] = prepareCredentials(structuredClone(CREDENTIAL_CONTENT), degree, {
    issuerDid: key.did,
    holderDid: holder.did,
  })
  if (!prepared) throw new Error('prepareCredentials returned nothing')
  const { token, ...bitstring } = await statusLists.allocate(listStore as unknown as Repositories, {
    tenantId: TENANT,
    alg,
    credentialId: prepared.id as string,
    processId: randomUUID(),
  })
  if (format === 'jwt_vc_json') {
    await publish(bitstring.statusListCredential)
    return signCredential(prepared, { holderDid: holder.did, key, status: { ...bitstring }, now }).jwt
  }
  await publish(token.status_list.uri)
  const signed = await signSdJwtCredential(prepared, {
    holderDid: holder.did,
    key,
    status: { ...token },
    now,
    vct: urls.defaultVct(TENANT, degree.credentialType),
  })
  return signed.proof.jwt
}

/** A jwt_vp_json presentation of `credential` for this verifier and nonce (what the lean wallet sends). */
const jwtVp = (holder: Holder, credential: string, audience: string, nonce: string) =>
  signJws(
    { alg: holder.alg, typ: JWT_TYP, kid: holder.kid },
    {
      iss: holder.did,
      aud: audience,
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

const session = () => ({
  sessionId: randomUUID(),
  nonce: randomBytes(32).toString('base64url'),
  state: randomBytes(16).toString('base64url'),
})
const baseContext = (nonce: string, clientId: string, requireStatus: boolean): ResponseContext => ({
  nonce,
  clientId,
  now,
  trustedIssuers,
  requireStatus,
  status,
})

// ---------------------------------------------------------------------------------------------------
// The rows: one presentation each, verified over and over

interface Row {
  profile: 'pe' | 'dcql'
  /** What differs from the service's own path (the same-run baseline of an earlier design). */
  variant?: string
  format: 'jwt_vc_json' | 'dc+sd-jwt' | 'ldp_vc'
  mode: 'direct_post' | 'direct_post.jwt'
  /** the JWS algorithm, or an ldp_vp's proof type (and its key type) */
  alg: string
  /** the share of `iterations` this row runs (the ldp rows: a tenth) */
  scale?: number
  /** Verifies the row's one presentation; `decryptMs` is the JWE part, 0 without one. */
  verify(): Promise<{ verdict: Verdict; decryptMs: number }>
}
const profileOf = (r: Pick<Row, 'profile' | 'variant'>) =>
  r.variant ? `${r.profile} (${r.variant})` : r.profile
const label = (r: Pick<Row, 'profile' | 'variant' | 'format' | 'mode' | 'alg'>) =>
  `${profileOf(r)} / ${r.format} / ${r.mode} / ${r.alg}`

/** A pe session of the degree check, its request object built as the service builds it. */
async function peSession() {
  const template = resolveTemplate('verification', { ...degreeCheck, profile: 'pe' })
  const { sessionId, nonce, state } = session()
  const definition = buildDefinition({
    sessionId,
    template,
    templateUpdatedAt: now,
    trustedIssuers,
    verifier,
    nonce,
    receiverUrl: urls.absolute(''),
    now,
  })
  const { request } = await new PresentationExchangeRequests(urls).build({
    tenantId: TENANT,
    sessionId,
    definition,
    nonce,
    state,
    verifier,
    now,
    expiresAt: now + template.sessionLifetimeSeconds * 1000,
  })
  const presented = request.presentation_definition as { id: string; input_descriptors: { id: string }[] }
  return { template, nonce, request, presented }
}

/**
 * The interface document's profile. `byPex`: the definition evaluated by @sphereon/pex from scratch for every
 * response, as the service did before it compiled definitions (util/pex.ts): the same-run baseline of that.
 */
async function peRow(alg: JwsAlg, byPex = false): Promise<Row> {
  const { template, nonce, request, presented } = await peSession()
  const holder = newHolder(alg)
  const vpToken = jwtVp(holder, await issue(alg, holder, 'jwt_vc_json'), request.client_id, nonce)
  // As the lean wallet maps it: every descriptor answered by the one credential of the VP.
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
  const ctx = {
    ...baseContext(nonce, request.client_id, template.requireStatus),
    definition: presented as unknown as Record<string, unknown>,
    ...(byPex && { language: presentationExchangeByPex }),
  }
  return {
    profile: 'pe',
    ...(byPex && { variant: 'PEX per response' }),
    format: 'jwt_vc_json',
    mode: 'direct_post',
    alg,
    verify: async () => ({ verdict: await verifyResponse(vpToken, submission, ctx), decryptMs: 0 }),
  }
}

/** What signs each ldp row's credential: the tenant's key of a type the proof type signs with. */
const LDP_ISSUER: Record<LdProofType, { alg: JwsAlg; proofType: LdProofType }> = {
  Ed25519Signature2018: { alg: 'EdDSA', proofType: 'Ed25519Signature2018' },
  JsonWebSignature2020: { alg: 'ES256', proofType: 'JsonWebSignature2020' },
  EcdsaSecp256k1Signature2019: { alg: 'ES256K', proofType: 'EcdsaSecp256k1Signature2019' },
  RsaSignature2018: { alg: 'EdDSA', proofType: 'Ed25519Signature2018' },
  'eddsa-rdfc-2022': { alg: 'EdDSA', proofType: 'eddsa-rdfc-2022' },
  'ecdsa-rdfc-2019': { alg: 'ES256', proofType: 'ecdsa-rdfc-2019' },
}

/** The interface's Linked Data format: an ldp_vp of `proofType` by a `keyType` holder, over an ldp_vc. */
async function ldpRow(proofType: LdProofType, keyType: LdKeyType): Promise<Row> {
  const { template, nonce, request, presented } = await peSession()
  const pair = generateLdKeyPair(keyType)
  const holder = { ...ldKeyFromPublicKey(pair.publicKey), privateKey: pair.privateKey }
  const { alg, proofType: credentialProof } = LDP_ISSUER[proofType]
  const key = tenantKey(alg)
  const [prepared] = prepareCredentials(structuredClone(CREDENTIAL_CONTENT), degree, {
    issuerDid: key.did,
    holderDid: holder.did,
  })
  if (!prepared) throw new Error('prepareCredentials returned nothing')
  const allocation = await statusLists.allocate(listStore as unknown as Repositories, {
    tenantId: TENANT,
    alg,
    credentialId: prepared.id as string,
    processId: randomUUID(),
  })
  const { token, ...bitstring } = allocation
  await publish(bitstring.statusListCredential)
  const credential = await signIn(ldpVcFormat, prepared, {
    holderDid: holder.did,
    key,
    status: { bitstring: { ...bitstring }, token: { ...token } },
    now,
    vct: '',
    proofType: credentialProof,
  })
  const vp = await signLd(
    {
      '@context': ['https://www.w3.org/2018/credentials/v1'],
      type: ['VerifiablePresentation'],
      holder: holder.did,
      verifiableCredential: [credential],
    },
    {
      proofType,
      kid: holder.kid,
      privateKey: holder.privateKey,
      purpose: { purpose: 'authentication', challenge: nonce, domain: request.client_id },
      created: new Date(now),
    },
  )
  const vpToken = JSON.stringify(vp)
  const submission = {
    id: randomUUID(),
    definition_id: presented.id,
    descriptor_map: presented.input_descriptors.map((d) => ({
      id: d.id,
      format: 'ldp_vp',
      path: '$',
      path_nested: { id: d.id, format: 'ldp_vc', path: '$.verifiableCredential[0]' },
    })),
  }
  const ctx = {
    ...baseContext(nonce, request.client_id, template.requireStatus),
    definition: presented as unknown as Record<string, unknown>,
  }
  return {
    profile: 'pe',
    format: 'ldp_vc',
    mode: 'direct_post',
    alg: `${proofType} (${keyType}${credentialProof === proofType ? '' : `; VC ${credentialProof}`})`,
    scale: 0.1,
    verify: async () => ({ verdict: await verifyResponse(vpToken, submission, ctx), decryptMs: 0 }),
  }
}

async function dcqlRow(alg: JwsAlg, format: 'jwt_vc_json' | 'dc+sd-jwt', mode: Row['mode']): Promise<Row> {
  const template = resolveTemplate('verification', {
    ...degreeCheck,
    profile: 'dcql',
    dcql: { format, responseMode: mode },
  })
  const settings = template.dcql
  if (!settings) throw new Error('a dcql template without its settings')
  const dcqlQuery = buildDcqlQuery({
    credentialTypes: template.credentialTypes,
    optionalGroups: template.optionalGroups,
    requestedFields: template.requestedFields,
    format: settings.format,
    vctValues: (type) => settings.vctValues?.[type] ?? [urls.defaultVct(TENANT, type)],
  })
  const { sessionId, nonce, state } = session()
  // decentralized_identifier (the default prefix) signs with the verifier key handed in: no key store
  // and no certificate is asked for.
  const requests = new Openid4vp1Requests({
    urls,
    tenantKeys: {} as TenantKeys,
    certificates: {} as IssuerCertificates,
  })
  const { request, responseKey } = await requests.build({
    tenantId: TENANT,
    sessionId,
    dcqlQuery: dcqlQuery as unknown as Record<string, unknown>,
    settings,
    nonce,
    state,
    verifier,
    now,
    expiresAt: now + template.sessionLifetimeSeconds * 1000,
  })
  const queryId = dcqlQuery.credentials[0]?.id as string
  const holder = newHolder(alg)
  const credential = await issue(alg, holder, format)
  const presentation =
    format === 'jwt_vc_json'
      ? jwtVp(holder, credential, request.client_id, nonce)
      : await presentSdJwtVc(credential, Object.keys(CREDENTIAL_CONTENT[0]?.credentialSubject ?? {}), {
          alg,
          privateKey: holder.privateKey,
          nonce,
          audience: request.client_id,
          iat,
        })
  const vpToken = { [queryId]: [presentation] }
  const ctx = {
    ...baseContext(nonce, request.client_id, template.requireStatus),
    dcqlQuery: request.dcql_query as Record<string, unknown>,
  }
  const row = { profile: 'dcql', format, mode, alg } as const
  if (mode === 'direct_post') {
    return { ...row, verify: async () => ({ verdict: await verifyDcqlResponse(vpToken, ctx), decryptMs: 0 }) }
  }
  // direct_post.jwt: the wallet encrypts {state, vp_token} to the session's ephemeral key (once: the
  // verifier's cost is the same for every copy); the verifier decrypts as oid4vp/service.ts decrypt() does.
  const jwks = (request.client_metadata as { jwks: { keys: JsonWebKey[] } }).jwks.keys
  const publicJwk = jwks[0] as JsonWebKey & { kid: string }
  const jwe = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify({ state, vp_token: vpToken })))
    .setProtectedHeader({ alg: RESPONSE_ALG, enc: 'A128GCM', kid: publicJwk.kid })
    .encrypt(await importJWK(publicJwk, RESPONSE_ALG))
  const privateJwk = responseKey as JsonWebKey & { kid: string }
  return {
    ...row,
    async verify() {
      const started = performance.now()
      const { plaintext, protectedHeader } = await compactDecrypt(
        jwe,
        createPrivateKey({ key: privateJwk, format: 'jwk' }),
        { keyManagementAlgorithms: [RESPONSE_ALG], contentEncryptionAlgorithms: [...RESPONSE_ENC_VALUES] },
      )
      if (protectedHeader.kid !== undefined && protectedHeader.kid !== privateJwk.kid)
        throw new NotVerified(`${label(row)}: the JWE names another key`)
      const params = JSON.parse(new TextDecoder().decode(plaintext)) as Record<string, unknown>
      if (params.state !== state) throw new NotVerified(`${label(row)}: the decrypted state differs`)
      const decryptMs = performance.now() - started
      return { verdict: await verifyDcqlResponse(params.vp_token as Record<string, unknown>, ctx), decryptMs }
    },
  }
}

/** Every check must have passed — credentialStatus included, so a status was really read. */
function ensureVerified(row: Row, verdict: Verdict) {
  const { validations } = verdict
  if (validations.status === 'SUCCESS' && validations.checks.every((c) => c.result === 'passed')) return
  const notPassed = validations.checks
    .filter((c) => c.result !== 'passed')
    .map((c) => `${c.check} ${c.result}: ${c.message ?? ''}`)
  throw new NotVerified(`${label(row)}: Validations ${validations.status}\n    ${notPassed.join('\n    ')}`)
}

/** Before measuring: every named check ran and passed, and the status really came from a list. */
async function checkOnce(row: Row) {
  const { verdict } = await row.verify()
  ensureVerified(row, verdict)
  const ran = verdict.validations.checks.map((c) => c.check)
  if (ran.join() !== CHECKS.join()) throw new NotVerified(`${label(row)}: checks run were ${ran.join(', ')}`)
  const statusCheck = verdict.validations.checks.find((c) => c.check === 'credentialStatus')
  if (!/^status: (active|valid)$/.test(statusCheck?.message ?? '')) {
    throw new NotVerified(`${label(row)}: credentialStatus said ${JSON.stringify(statusCheck?.message)}`)
  }
}

// ---------------------------------------------------------------------------------------------------
// Measuring

interface Sample {
  /** per presentation, µs */
  cpuUs: number
  wallUs: number
  /** summed over the run, ms (the pipeline's CheckTimings, wall clock) */
  signaturesMs: number
  queryMs: number
  statusMs: number
  decryptMs: number
  wallMs: number
}

async function measure(row: Row, n: number): Promise<Sample> {
  const sums = { signaturesMs: 0, queryMs: 0, statusMs: 0, decryptMs: 0 }
  const cpuBefore = process.cpuUsage()
  const started = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    const { verdict, decryptMs } = await row.verify()
    ensureVerified(row, verdict)
    sums.signaturesMs += verdict.timings.signaturesMs
    sums.queryMs += verdict.timings.queryMs
    sums.statusMs += verdict.timings.statusMs
    sums.decryptMs += decryptMs
  }
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6
  const cpu = process.cpuUsage(cpuBefore)
  return { cpuUs: (cpu.user + cpu.system) / n, wallUs: (wallMs * 1000) / n, wallMs, ...sums }
}

const median = (xs: readonly number[]) => percentile(xs, 50)
const fmt = (x: number, digits = 0) => x.toFixed(digits)
const share = (part: number, whole: number) => `${fmt((100 * part) / whole)} %`

async function main() {
  const began = performance.now()
  const rows = [
    await peRow('EdDSA'),
    await peRow('EdDSA', true),
    await dcqlRow('EdDSA', 'jwt_vc_json', 'direct_post'),
    await dcqlRow('EdDSA', 'dc+sd-jwt', 'direct_post'),
    await dcqlRow('EdDSA', 'dc+sd-jwt', 'direct_post.jwt'),
    await dcqlRow('ES256', 'dc+sd-jwt', 'direct_post'),
    await ldpRow('Ed25519Signature2018', 'Ed25519'),
    await ldpRow('JsonWebSignature2020', 'Ed25519'),
    await ldpRow('JsonWebSignature2020', 'P-256'),
    await ldpRow('EcdsaSecp256k1Signature2019', 'secp256k1'),
    await ldpRow('RsaSignature2018', 'RSA'),
    await ldpRow('eddsa-rdfc-2022', 'Ed25519'),
    await ldpRow('ecdsa-rdfc-2019', 'P-256'),
  ]
  for (const row of rows) await checkOnce(row)
  console.log(
    `verifier checks per presentation: ${rounds} round(s) × ${iterations} presentations per row after ${warmup} warm-up; ` +
      `Node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]?.toFixed(2)}`,
  )
  console.log(
    `one presentation of the demo degree credential, status list of ${config.statusListSize} entries; checks: ${CHECKS.join(', ')}`,
  )

  const runs = (row: Row, n: number) => Math.max(1, Math.round(n * (row.scale ?? 1)))
  for (const row of rows) await measure(row, runs(row, warmup))
  const samples = rows.map(() => [] as Sample[])
  for (let r = 0; r < rounds; r++) {
    for (const [i, row] of rows.entries()) samples[i]?.push(await measure(row, runs(row, iterations)))
  }
  const baseline = samples[0] as Sample[]

  console.log('')
  console.log(
    '| profile | format | response mode | alg | µs CPU / presentation (median, range) | µs wall | presentations/s (1 core) | CPU vs pe/jwt_vc_json | signatures | query | status | decrypt | rest |',
  )
  console.log('|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const [i, row] of rows.entries()) {
    const s = samples[i] as Sample[]
    const cpu = s.map((x) => x.cpuUs)
    const cpuMedian = median(cpu)
    const ratio =
      i === 0
        ? '(baseline)'
        : `×${median(s.map((x, r) => x.cpuUs / (baseline[r] as Sample).cpuUs)).toFixed(2)}`
    const total = (k: keyof Sample) => s.reduce((sum, x) => sum + x[k], 0)
    const wall = total('wallMs')
    const parts = ['signaturesMs', 'queryMs', 'statusMs', 'decryptMs'] as const
    const rest = wall - parts.reduce((sum, k) => sum + total(k), 0)
    console.log(
      `| ${profileOf(row)} | ${row.format} | ${row.mode} | ${row.alg} | ${fmt(cpuMedian)} (${fmt(Math.min(...cpu))}–${fmt(Math.max(...cpu))}) | ${fmt(median(s.map((x) => x.wallUs)))} | ${fmt(1e6 / cpuMedian)} | ${ratio} | ` +
        `${parts.map((k) => (k === 'decryptMs' && total(k) === 0 ? '—' : share(total(k), wall))).join(' | ')} | ${share(rest, wall)} |`,
    )
  }
  console.log('')
  console.log(
    'CPU = process.cpuUsage (user + system, every thread: WebCrypto jobs on the libuv pool and GC count too); ' +
      'shares are of the wall time per presentation (the pipeline CheckTimings: signatures = presentation + credential proofs, ' +
      'status = list signature + decompression + lookup, query = PEX / DCQL evaluation; decrypt = JWE; rest = reading, parsing, the other checks, the verdict).',
  )
  console.log(`done in ${fmt((performance.now() - began) / 1000, 1)} s, load ${loadavg()[0]?.toFixed(2)}`)
}

try {
  await main()
} catch (error) {
  if (!(error instanceof NotVerified)) throw error
  console.error(`!!! A PRESENTATION DID NOT VERIFY — nothing was measured\n  ${error.message}`)
  process.exit(1)
}
