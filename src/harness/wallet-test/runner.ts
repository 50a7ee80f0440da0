// Runs a wallet test plan: builds the reference service with the plan's tenants and a fault registry, then
// for each case switches its fault on, opens the flow as a relying party would (over HTTP, RelyingPartyClient),
// hands the deep link to the wallet through a driver (a command, our own wallet in-process, or a person with
// a phone), waits until the wallet is done or the window closes, and judges what the service saw.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type DcqlSessionCreated,
  ok,
  parseCredentialOfferUri,
  RelyingPartyClient,
  type SessionCreated,
  type SessionRead,
  sessionIdOf,
  type VerificationTemplateInput,
} from '../../client/index.ts'
import { buildApp } from '../../service/app.ts'
import { FaultRegistry, startForeignOrigin } from '../../service/faults/index.ts'
import { certificateHost, type TlsCredentials, tlsLeaf, tlsWarnings } from '../../service/tls.ts'
import { defaultNamespace, MDOC_FORMAT } from '../../shared/mdoc.ts'
import {
  type CaseKey,
  ISSUANCE_TEMPLATE,
  MDOC_ELEMENTS,
  VERIFICATION_TEMPLATE,
  verificationTemplate,
  walletTestConfig,
} from './config.ts'
import { type Evidence, judge, settled, type Verdict } from './judge.ts'
import {
  type IssuanceFlow,
  isDcApiCase,
  type PlanChoice,
  type PresentationFlow,
  planCases,
  tenantOf,
  type WalletCase,
} from './plans.ts'

/**
 * The content a case's relying party submits: the claims every presentation case asks for or may. An mdoc's
 * elements are grouped by namespace (docs/issuance.md "ISO mdoc"), here the doctype's own.
 */
function sampleContent({ format, credentialType }: Pick<IssuanceFlow, 'format' | 'credentialType'>) {
  return [
    {
      type: ['VerifiableCredential', credentialType],
      credentialSubject:
        format === MDOC_FORMAT
          ? { [defaultNamespace(credentialType)]: { ...MDOC_ELEMENTS } }
          : { familyName: 'Doe', givenName: 'Jane', dateOfBirth: '1990-01-01' },
    },
  ]
}

/** What a driver gets for one case. */
export interface CaseContext {
  testCase: WalletCase
  /** 1-based position and the number of cases */
  index: number
  total: number
  /** the deep link, exactly as a QR code would carry it */
  link: string
  /**
   * PEM file of the wallet's trust anchors: the CA x509 request objects chain to, and the IACA the mdocs'
   * document signers are certified by (two certificates in one file)
   */
  trustAnchorFile: string
  /** a wallet file the command may keep its state in for the whole run (VC_HARNESS_WALLET) */
  walletFile: string
  /**
   * A DC API case (presentation-dc-api): the request entry the page hands `navigator.credentials.get`, the
   * origin of that page, and a file holding the entry (`{dc_api_request}`); `link` is then the URL the
   * harness fetched the entry from, not a deep link.
   */
  dcApi?: { request: unknown; origin: string; requestFile: string }
  /** aborted when the case is over (settled or its window closed): stop the wallet */
  signal: AbortSignal
}

export interface DriverResult {
  /** the wallet command's exit status; null when it was stopped; undefined when there is no command */
  exitCode?: number | null
  /** the end of what the command printed, for the reports */
  output?: string
  /**
   * A DC API case: the DigitalCredential `{protocol, data}` the wallet answered (a presentation, or the error
   * answer of a refusal), which the harness posts to the verifier with the origin
   */
  answer?: unknown
}

export interface WalletDriver {
  /** how the reports name the wallet (the command, "built-in wallet", "by hand") */
  readonly describe: string
  /**
   * false: the driver's end says the wallet is done (a command exited). true: a person drives the wallet, so
   * the case ends when the evidence settles it, the person says so, or the window closes.
   */
  readonly interactive?: boolean
  /**
   * How long answers after the driver's end still count (default 300 ms: a command's wallet may still be
   * talking to us as it exits). An in-process wallet has had every answer when its open() resolves: 0.
   */
  readonly settleMs?: number
  /**
   * Whether it can hand a wallet a request over the Digital Credentials API (the presentation-dc-api plan);
   * the cases of a driver that cannot are left out of the run, which says so.
   */
  readonly dcApi?: boolean
  open(ctx: CaseContext): Promise<DriverResult>
}

export interface CaseResult {
  id: string
  plan: WalletCase['plan']
  title: string
  sources: string[]
  expect: WalletCase['expect']
  fault?: string
  passes: string
  tenant: string
  link?: string
  verdict: Verdict
  durationMs: number
  /** the wallet command's exit status (null: stopped when the window closed); absent when a person drove it */
  exitCode?: number | null
  output?: string
}

export interface WalletTestRun {
  format: 'vc-harness-wallet-test/1'
  plan: PlanChoice
  wallet: string
  serviceUrl: string
  startedAt: string
  finishedAt: string
  durationMs: number
  totals: { cases: number; pass: number; fail: number }
  passed: boolean
  results: CaseResult[]
  /** set when the run was stopped (Ctrl-C by hand) before every case was judged: `results` are those judged */
  interrupted?: { planned: number }
}

export type Progress =
  | {
      kind: 'ready'
      serviceUrl: string
      cases: number
      trustAnchorFile: string
      pageUrl: string
      /** What a phone's wallet may hold against this set-up (an IP address where a DNS name is needed, …). */
      notes: string[]
    }
  | { kind: 'case'; ctx: Omit<CaseContext, 'signal'> }
  | { kind: 'exchange'; testCase: WalletCase; line: string }
  | { kind: 'result'; result: CaseResult; index: number; total: number }

export interface WalletTestOptions {
  plan: PlanChoice
  driver: WalletDriver
  /** only these case ids (in plan order) */
  only?: readonly string[]
  /** where the service listens; default 127.0.0.1, port 0 (any free one) */
  host?: string
  port?: number
  /**
   * the base URL wallets reach; default http://<host>:<port> once listening (with `tls`:
   * https://<the certificate's first DNS name>:<port>)
   */
  publicUrl?: string
  /** listen with HTTPS (docs/phones.md); the relying-party calls then pin this certificate */
  tls?: TlsCredentials
  /** how long a wallet has per case; default 60 s (a person with a phone: 120 s) */
  caseTimeoutMs?: number
  /** after a command finished: how long late notifications and answers may still arrive; default 300 ms */
  settleMs?: number
  /**
   * where trust-anchor.pem (the verifier CA and the IACA) and iaca.pem (the IACA alone) are written (and kept,
   * for vendors to configure); default a temporary folder
   */
  workDir?: string
  onProgress?: (event: Progress) => void
  /**
   * Stops the run (Ctrl-C by hand): the case in progress ends at once and is not judged, no further case
   * starts, and the run returns the cases judged before it.
   */
  signal?: AbortSignal
  /** told the app before it listens (the interactive page registers its routes) */
  configureApp?: (app: import('fastify').FastifyInstance, state: () => LiveState) => Promise<void> | void
}

/** What the interactive page shows. */
export interface LiveState {
  plan: PlanChoice
  /** the number of cases the run has */
  total: number
  current?: {
    index: number
    total: number
    id: string
    title: string
    passes: string
    link: string
    startedAt: number
    windowMs: number
  }
  results: CaseResult[]
  finished: boolean
  /** ends the current case now (a person says the wallet is done) */
  next: () => void
}

/** Runs the plan; never throws for a wallet's behaviour (that is a failed case), only for harness errors. */
export async function runWalletTest(options: WalletTestOptions): Promise<WalletTestRun> {
  const started = Date.now()
  const all = planCases(options.plan)
  const chosen = options.only?.length ? all.filter((c) => options.only?.includes(c.id)) : all
  if (chosen.length === 0)
    throw new Error(`no case of plan ${options.plan} matches ${options.only?.join(', ')}`)
  // A driver that cannot hand over a DC API request (a person with a phone, a command without
  // {dc_api_request}) runs the other cases; the run says which it left out.
  const cases = options.driver.dcApi ? chosen : chosen.filter((c) => !isDcApiCase(c))
  const leftOut = chosen.length - cases.length
  if (cases.length === 0) {
    throw new Error(
      `the cases of presentation-dc-api ask over the Digital Credentials API, which ${options.driver.interactive ? 'a wallet driven by hand cannot be asked (the harness would have to be its browser)' : 'this driver cannot hand a wallet: give a --wallet-command with {dc_api_request} and {origin}'} (docs/wallet-testing.md)`,
    )
  }
  const host = options.host ?? '127.0.0.1'
  const leaf = options.tls && tlsLeaf(options.tls)
  // The host wallets reach: the x509_san_dns cases' client identifier and the verifier leaf's dNSName name it
  // (OpenID4VP 1.0 §5.9.3), so with TLS it is the certificate's name rather than the listening address.
  const certificateName = leaf && (certificateHost(leaf) ?? leaf.ips[0])
  const publicHost = options.publicUrl
    ? new URL(options.publicUrl).hostname
    : (certificateName ?? (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host))
  const { config, keys, trustAnchorPem, iacaPem } = await walletTestConfig(
    cases,
    publicHost,
    options.publicUrl,
  )
  const tmp = mkdtempSync(join(tmpdir(), 'vc-harness-wallet-test-'))
  const workDir = options.workDir ?? tmp
  const trustAnchorFile = join(workDir, 'trust-anchor.pem')
  writeFileSync(trustAnchorFile, trustAnchorPem)
  writeFileSync(join(workDir, 'iaca.pem'), iacaPem)
  const walletFile = join(tmp, 'wallet.json')

  const faults = new FaultRegistry()
  let listening = ''
  const app = await buildApp({
    config,
    faults,
    publicUrl: () => options.publicUrl ?? listening,
    ...(options.tls ? { tls: options.tls } : {}),
  })
  // The runner's own relying-party calls go to the loopback address, which the certificate does not name.
  const apiFetch = leaf ? (await import('../loopback-fetch.ts')).pinnedFetch(leaf.der) : fetch
  const scheme = options.tls ? 'https' : 'http'
  let endCase: (() => void) | undefined
  const live: LiveState = {
    plan: options.plan,
    total: cases.length,
    results: [],
    finished: false,
    next: () => endCase?.(),
  }
  // A stop ends the case in progress like "Next case" would; the loop then drops that case unjudged.
  const interrupt = () => endCase?.()
  options.signal?.addEventListener('abort', interrupt, { once: true })
  await options.configureApp?.(app, () => live)
  let foreign: { url: string; close(): Promise<void> } | undefined
  try {
    await app.listen({ host, port: options.port ?? 0 })
    const address = app.server.address()
    const port = typeof address === 'object' && address ? address.port : options.port
    const bracket = (h: string) => (h.includes(':') ? `[${h}]` : h)
    listening = `${scheme}://${bracket(publicHost)}:${port}`
    const serviceUrl = options.publicUrl ?? listening
    // The "other origin" of response-uri-foreign-origin: the same service on another port, so a careless
    // wallet's answer still arrives and is seen.
    // x509_san_dns compares host names, redirect_uri whole URIs: another name for this machine and another
    // port break both. A LAN address has no second name a phone could resolve: the machine's own name is used.
    // With TLS, a second DNS name of the certificate is the best other name: the foreign listener presents the
    // same certificate, so only a name it proves lets a careless wallet's answer arrive (docs/phones.md).
    const secondName = leaf?.dnsNames.find((n) => n !== publicHost && !n.includes('*'))
    const otherName =
      secondName ??
      (publicHost === '127.0.0.1' || publicHost === '::1'
        ? 'localhost'
        : publicHost === 'localhost'
          ? '127.0.0.1'
          : hostname())
    const second = await startForeignOrigin(app, { host, ...(options.tls ? { tls: options.tls } : {}) })
    foreign = second
    faults.foreignOrigin = `${new URL(serviceUrl).protocol}//${bracket(otherName)}:${new URL(second.url).port}`
    const apiHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
    const apiUrl = `${scheme}://${bracket(apiHost)}:${port}`
    const api = new RelyingPartyClient(apiUrl, apiFetch)
    options.onProgress?.({
      kind: 'ready',
      serviceUrl,
      cases: cases.length,
      trustAnchorFile,
      pageUrl: `${serviceUrl}/wallet-test`,
      notes: [
        ...(leftOut > 0
          ? [
              `${leftOut} case${leftOut === 1 ? '' : 's'} of presentation-dc-api left out: ${options.driver.interactive ? 'a wallet driven by hand cannot be asked over the Digital Credentials API' : 'the wallet command has no {dc_api_request} (docs/wallet-testing.md)'}`,
            ]
          : []),
        ...setupNotes(cases, publicHost, serviceUrl),
        ...(options.tls ? tlsWarnings(options.tls, serviceUrl) : []),
      ],
    })
    const windowMs = options.caseTimeoutMs ?? (options.driver.interactive ? 120_000 : 60_000)
    for (const [i, testCase] of cases.entries()) {
      if (options.signal?.aborted) break
      const result = await runCase({
        testCase,
        apiUrl,
        fetch: apiFetch,
        index: i + 1,
        total: cases.length,
        api,
        faults,
        key: keys.get(testCase.id) as CaseKey,
        driver: options.driver,
        windowMs,
        settleMs: options.settleMs ?? options.driver.settleMs ?? 300,
        trustAnchorFile,
        walletFile,
        tmpDir: tmp,
        onProgress: options.onProgress,
        live,
        setEnd: (end) => {
          endCase = end
          // Stopped while the case was being opened: it ends as soon as it is live.
          if (options.signal?.aborted) end()
        },
      })
      if (options.signal?.aborted) break
      live.results.push(result)
      options.onProgress?.({ kind: 'result', result, index: i + 1, total: cases.length })
    }
  } finally {
    options.signal?.removeEventListener('abort', interrupt)
    live.finished = true
    delete live.current
    await foreign?.close()
    await app.close()
    rmSync(tmp, { recursive: true, force: true })
  }
  const results = live.results
  const pass = results.filter((r) => r.verdict.pass).length
  const finished = Date.now()
  return {
    format: 'vc-harness-wallet-test/1',
    plan: options.plan,
    wallet: options.driver.describe,
    serviceUrl: options.publicUrl ?? listening,
    startedAt: new Date(started).toISOString(),
    finishedAt: new Date(finished).toISOString(),
    durationMs: finished - started,
    totals: { cases: results.length, pass, fail: results.length - pass },
    // Nothing green on nothing: a run stopped before its first verdict did not pass.
    passed: results.length > 0 && pass === results.length,
    results,
    ...(results.length < cases.length ? { interrupted: { planned: cases.length } } : {}),
  }
}

/**
 * What the run's set-up means for a phone (docs/phones.md): an IP literal as the public host cannot be an
 * x509_san_dns client identifier (OpenID4VP 1.0 §5.9.3 asks for a DNS name, RFC 5280 §4.2.1.6 puts addresses
 * in iPAddress, not dNSName): the cases still run, with the address as text in a dNSName, which our wallet
 * compares as text but a strict wallet refuses before it looks at the fault.
 */
function setupNotes(cases: readonly WalletCase[], publicHost: string, serviceUrl: string): string[] {
  const notes: string[] = []
  const bare = publicHost.replace(/^\[|\]$/g, '')
  const x509Dns = cases.some(
    (c) => c.flow.kind === 'presentation' && c.flow.clientIdPrefix === 'x509_san_dns',
  )
  if (x509Dns && isIP(bare) !== 0) {
    notes.push(
      `the public host ${bare} is an IP address, not a DNS name: the x509_san_dns cases need a name (their client_id is x509_san_dns:${bare}, which a strict wallet refuses). Use a DNS name: vc-harness dev-cert --name …, --tls-cert/--tls-key and --public-url https://<name>:<port> (docs/phones.md)`,
    )
  }
  if (new URL(serviceUrl).protocol === 'http:' && !['127.0.0.1', '::1', 'localhost'].includes(bare)) {
    notes.push(
      'wallets on phones refuse http:// URLs: serve over HTTPS with --tls-cert/--tls-key under a DNS name (docs/phones.md)',
    )
  }
  return notes
}

/**
 * A presentation case's verification template, created over the portal as the tenant's administrator would,
 * just before its first flow: a template trusts its own tenant's issuers by default, and the credential comes
 * from the plan's setup case, so that tenant's DIDs (public in its issuer metadata) become the trusted issuers.
 */
async function createVerificationTemplate(run: CaseRun, tenant: string, flow: PresentationFlow) {
  // presentation-dc-api issues an SD-JWT VC and an mDL, each in a setup case of its own
  const setupId =
    run.testCase.plan === 'presentation-dc-api' && flow.format === MDOC_FORMAT ? 'setup-mdoc' : 'setup'
  const setup = tenantOf({ id: `${run.testCase.plan}:${setupId}` } as WalletCase)
  const metadata = await run.fetch(`${run.apiUrl}/.well-known/openid-credential-issuer/oid4vci/${setup}`)
  const dids = metadata.ok
    ? (((await metadata.json()) as { vc_harness_issuer_dids?: string[] }).vc_harness_issuer_dids ?? [])
    : []
  const token = await run.api.token({ keyId: run.key.admin.keyId, secret: run.key.admin.secret, tenant })
  ok(
    await run.api.createVerificationTemplate(token, {
      ...verificationTemplate(flow),
      // none yet (the setup case issued nothing): the positive cases will say which issuer was not trusted
      ...(dids.length > 0 ? { trustedIssuers: dids } : {}),
    } as VerificationTemplateInput),
    `create the verification template of ${tenant}`,
  )
}

interface CaseRun {
  testCase: WalletCase
  /** the relying-party API's base URL (loopback) */
  apiUrl: string
  /** how it is called (with TLS: pinning the served certificate) */
  fetch: typeof fetch
  index: number
  total: number
  api: RelyingPartyClient
  faults: FaultRegistry
  key: CaseKey
  driver: WalletDriver
  windowMs: number
  settleMs: number
  trustAnchorFile: string
  walletFile: string
  /** the run's temporary folder (a DC API case's request file) */
  tmpDir: string
  onProgress: WalletTestOptions['onProgress']
  live: LiveState
  setEnd: (end: () => void) => void
}

/** Opens the case's flow as its relying party: the deep link, and the session id of a presentation. */
interface OpenedFlow {
  link: string
  token: string
  sessionId?: string
  /** a DC API case: the request entry, the origin the harness calls from, where the answer is posted */
  dcApi?: { request: unknown; origin: string; response: string }
}

/** A URL of the service as the runner reaches it: the path (and query) of `url` on the loopback API URL. */
const onApi = (run: CaseRun, url: string) => {
  const u = new URL(url)
  return `${run.apiUrl}${u.pathname}${u.search}`
}

async function openFlow(run: CaseRun, tenant: string): Promise<OpenedFlow> {
  const { testCase, api, key } = run
  const issuance = testCase.flow.kind === 'issuance'
  if (testCase.flow.kind === 'presentation') await createVerificationTemplate(run, tenant, testCase.flow)
  const token = await api.token({
    keyId: key.keyId,
    secret: key.secret,
    tenant,
    ssiconfig: issuance ? ISSUANCE_TEMPLATE : VERIFICATION_TEMPLATE,
  })
  if (issuance) {
    const offer = ok<{ credential_offer_uri: string }>(
      await api.createOffer(token, ISSUANCE_TEMPLATE),
      'create offer',
    )
    const { processId } = parseCredentialOfferUri(offer.credential_offer_uri)
    // Submitted before the wallet arrives: the credential endpoint answers at once.
    ok(await api.submitCredentials(token, processId, sampleContent(testCase.flow)), 'submit content')
    return { link: offer.credential_offer_uri, token }
  }
  const created = ok<SessionCreated | DcqlSessionCreated>(
    await api.createSession<SessionCreated | DcqlSessionCreated>(token, VERIFICATION_TEMPLATE),
    'create session',
  )
  const dcApi = 'dcApi' in created ? created.dcApi : undefined
  if (isDcApiCase(testCase)) {
    if (!dcApi)
      throw new Error('the session offers no Digital Credentials API request (4.6 answered no dcApi)')
    // The harness is the relying party's page: it fetches the entry it would hand navigator.credentials.get.
    const response = await run.fetch(onApi(run, dcApi.request), { headers: { accept: 'application/json' } })
    const text = await response.text()
    if (response.status !== 200)
      throw new Error(`GET ${dcApi.request} answered ${response.status}: ${text.slice(0, 300)}`)
    return {
      link: dcApi.request,
      token,
      sessionId: sessionIdOf(created),
      dcApi: {
        request: JSON.parse(text) as unknown,
        origin: dcApi.expectedOrigins[0] as string,
        response: dcApi.response,
      },
    }
  }
  return { link: created.authentication_request, token, sessionId: sessionIdOf(created) }
}

/**
 * Posts a DC API wallet's answer as the relying party's page would (OpenID4VP 1.0 Appendix A.4): the
 * DigitalCredential with the origin the browser called from, to the session's DC API response endpoint. What
 * the verifier made of it is in the exchanges and the session; the answer's status is for the output.
 */
async function postDcApiAnswer(
  run: CaseRun,
  dcApi: NonNullable<OpenedFlow['dcApi']>,
  answer: unknown,
): Promise<string> {
  const body = { ...(answer as Record<string, unknown>), origin: dcApi.origin }
  const response = await run.fetch(onApi(run, dcApi.response), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  return `the harness posted the wallet's answer to the verifier with origin ${dcApi.origin}: ${response.status}${response.status >= 400 ? ` ${text.slice(0, 300)}` : ''}`
}

async function runCase(run: CaseRun): Promise<CaseResult> {
  const { testCase, faults, driver } = run
  const tenant = tenantOf(testCase)
  const started = Date.now()
  const base = {
    id: testCase.id,
    plan: testCase.plan,
    title: testCase.title,
    sources: testCase.sources,
    expect: testCase.expect,
    ...(testCase.fault ? { fault: testCase.fault } : {}),
    passes: testCase.passes,
    tenant,
  }
  faults.set(tenant, {
    ...(testCase.fault ? { fault: testCase.fault } : {}),
    ...(testCase.flow.kind === 'issuance' ? { issuance: testCase.flow.generation } : {}),
  })
  let flow: OpenedFlow
  try {
    flow = await openFlow(run, tenant)
  } catch (error) {
    faults.delete(tenant)
    // E.g. nonce-reused with no answered request before it: the case could not be set up.
    return {
      ...base,
      verdict: {
        outcome: 'nothing',
        pass: false,
        reason: `the case could not be opened: ${(error as Error).message}`,
        observed: [],
      },
      durationMs: Date.now() - started,
    }
  }
  const controller = new AbortController()
  const windowSeconds = Math.round(run.windowMs / 1000)
  const ctx: CaseContext = {
    testCase,
    index: run.index,
    total: run.total,
    link: flow.link,
    trustAnchorFile: run.trustAnchorFile,
    walletFile: run.walletFile,
    signal: controller.signal,
  }
  if (flow.dcApi) {
    const requestFile = join(run.tmpDir, 'dc-api-request.json')
    writeFileSync(requestFile, `${JSON.stringify(flow.dcApi.request, null, 2)}\n`)
    ctx.dcApi = { request: flow.dcApi.request, origin: flow.dcApi.origin, requestFile }
  }
  run.live.current = {
    index: run.index,
    total: run.total,
    id: testCase.id,
    title: testCase.title,
    passes: testCase.passes,
    link: flow.link,
    startedAt: started,
    windowMs: run.windowMs,
  }
  run.onProgress?.({ kind: 'case', ctx: { ...ctx } })
  // The case ends when the driver is done (a command), the evidence settles it (a person), a person says
  // so, or the window closes.
  let stop = () => {}
  const ended = new Promise<void>((resolve) => {
    stop = resolve
  })
  run.setEnd(stop)
  const timer = setTimeout(stop, run.windowMs)
  const unsubscribe = faults.onExchange((t, exchange) => {
    if (t !== tenant) return
    run.onProgress?.({
      kind: 'exchange',
      testCase,
      line: `${exchange.method} ${exchange.endpoint} → ${exchange.status}`,
    })
    if (!driver.interactive) return
    // A person's wallet: the evidence settles the case (a moment for what follows it), or it holds the
    // credential and gets a while to notify before it is judged.
    if (settled(testCase, faults.exchanges(tenant))) {
      setTimeout(stop, testCase.flow.kind === 'issuance' ? 1_000 : 500)
    } else if (
      (exchange.endpoint === 'credential' || exchange.endpoint === 'deferred') &&
      exchange.status === 200
    ) {
      // Unref'd: the window's timer keeps the process up while the case runs; once the case has ended some
      // other way, this one must not hold the process open after the last case (or a Ctrl-C) for 10 s.
      setTimeout(stop, 10_000).unref()
    }
  })
  let result: DriverResult = {}
  const driving = driver.open(ctx).then(
    async (r) => {
      result = r
      // A DC API case: the browser hands the wallet's answer back to the page, which posts it to the verifier.
      const dcApi = flow.dcApi
      if (dcApi && !controller.signal.aborted) {
        let line: string
        if (r.answer === undefined) {
          line =
            'the wallet gave no DigitalCredential answer (a JSON object {protocol, data} on stdout): nothing was posted to the verifier'
        } else {
          try {
            line = await postDcApiAnswer(run, dcApi, r.answer)
          } catch (error) {
            line = `the harness could not post the wallet's answer: ${(error as Error).message}`
          }
        }
        result = { ...r, output: [r.output, line].filter(Boolean).join('\n') }
      }
      // A command exited, or a person said the wallet is done (Enter): late answers get settleMs.
      setTimeout(stop, run.settleMs)
    },
    (error: unknown) => {
      result = { output: `driver error: ${(error as Error).message}` }
      setTimeout(stop, run.settleMs)
    },
  )
  await ended
  clearTimeout(timer)
  controller.abort()
  await driving
  unsubscribe()
  const evidence: Evidence = {
    exchanges: [...faults.exchanges(tenant)],
    ...(driver.interactive ? {} : { exitCode: result.exitCode ?? null }),
    windowSeconds,
  }
  if (flow.sessionId) {
    const read = await run.api.readSession(flow.token, flow.sessionId)
    if (read.status === 200) {
      const session = read.body as SessionRead
      evidence.sessionStatus = session.Status
      evidence.failedChecks = (session.Validations?.checks ?? [])
        .filter((c) => c.result === 'failed')
        .map((c) => `${c.check}: ${c.message}`)
    }
  }
  faults.delete(tenant)
  return {
    ...base,
    link: flow.link,
    verdict: judge(testCase, evidence),
    durationMs: Date.now() - started,
    ...(driver.interactive ? {} : { exitCode: result.exitCode ?? null }),
    ...(result.output ? { output: result.output } : {}),
  }
}
