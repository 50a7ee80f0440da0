// The two server test plans from code, as `vc-harness issuer-test` and `vc-harness verifier-test` run them
// (the CLI parses, this wires): where the flows come from, which hosts the wallet may contact, the pre-flight,
// the run. docs/server-testing.md describes both.

import type { AuthorizationOptions } from '../../wallet/issuance-authorization.ts'
import { ExchangeRecorder } from './exchanges.ts'
import { type IssuerProfile, issuerCaseCode, probeIssuer } from './issuer.ts'
import { haipCaseCode } from './issuer-haip.ts'
import { type ServerCase, serverPlanCases } from './plans.ts'
import {
  type CredentialSupply,
  type Deployment,
  DeploymentKeys,
  deploymentCredentials,
  deploymentOffers,
  deploymentRequests,
} from './relying-party.ts'
import { runServerTest, type ServerCaseResult, type ServerTestRun } from './runner.ts'
import { commandOffers, commandRequests, type OfferSource, type RequestSource } from './sources.ts'
import { startTestIssuer, type TestIssuer } from './test-issuer.ts'
import { probeVerifier, verifierCaseCode } from './verifier.ts'

/** The pre-flight failed: the target cannot be tested as configured (exit 3). The message says why. */
export class PreflightError extends Error {
  override name = 'PreflightError'
}

/** The hosts a link names: its own (http/https), its credential_offer_uri's or request_uri's, response_uri's. */
export function hostsOfLink(link: string): string[] {
  const hosts: string[] = []
  const add = (value: string | null) => {
    if (!value) return
    try {
      const url = new URL(value)
      if (url.protocol === 'http:' || url.protocol === 'https:') hosts.push(url.host)
    } catch {}
  }
  add(link)
  const query = link.includes('?') ? link.slice(link.indexOf('?') + 1) : ''
  const params = new URLSearchParams(query)
  for (const name of ['credential_offer_uri', 'request_uri', 'response_uri', 'redirect_uri'])
    add(params.get(name))
  const offer = params.get('credential_offer')
  if (offer) {
    try {
      const issuer = (JSON.parse(offer) as { credential_issuer?: unknown }).credential_issuer
      if (typeof issuer === 'string') add(issuer)
    } catch {}
  }
  return hosts
}

/** Runs the pre-flight probe; its failure is a PreflightError naming a refused host where that was why. */
async function preflight<T>(recorder: ExchangeRecorder, probe: () => Promise<T>): Promise<T> {
  try {
    return await probe()
  } catch (error) {
    const refused = recorder.take().find((e) => e.status === 0)
    throw new PreflightError(
      `${(error as Error).message}${refused?.response ? ` (${refused.response})` : ''}`,
    )
  } finally {
    recorder.take()
  }
}

const deploymentHosts = (d: Deployment) => Object.values(d.urls).flatMap((u) => (u ? [new URL(u).host] : []))

interface Common {
  /** only these cases (ids), in plan order */
  only?: readonly string[]
  caseTimeoutMs?: number
  /** further host[:port] names the wallet may contact */
  allowHosts?: readonly string[]
  trustAnchors?: readonly string[]
  onResult?: (result: ServerCaseResult, index: number, total: number) => void
  /** told once the pre-flight passed */
  onReady?: (line: string) => void
}

function casesOf(plan: 'issuer' | 'verifier', only: readonly string[] | undefined): readonly ServerCase[] {
  const cases = serverPlanCases(plan)
  return only?.length ? cases.filter((c) => only.includes(c.id)) : cases
}

export interface IssuerTestOptions extends Common {
  /** a deployment of the relying-party API, or the user's commands */
  source:
    | { deployment: Deployment }
    | { offerCommand: string; deferredOfferCommand?: string; completeCommand?: string; txCode?: string }
  protocol?: '1.0' | 'draft15'
  tokenWaitMs?: number
  /**
   * The authorization code flow (the HAIP cases, and every case when the offers grant nothing else): the wallet
   * provider signing the attestation (default the published TEST provider), redirect_uri, client_id, a user step
   */
  authorization?: AuthorizationOptions
}

export async function runIssuerTest(options: IssuerTestOptions): Promise<ServerTestRun> {
  const cases = casesOf('issuer', options.only)
  const caseTimeoutMs = options.caseTimeoutMs ?? 60_000
  const recorder = new ExchangeRecorder(options.allowHosts ?? [])
  let source: OfferSource
  let target: string
  if ('deployment' in options.source) {
    const deployment = options.source.deployment
    for (const host of deploymentHosts(deployment)) recorder.allow(host)
    source = deploymentOffers(new DeploymentKeys(deployment))
    target = deployment.describe
  } else {
    source = commandOffers(options.source)
    target = `the issuer of ${options.source.offerCommand}`
  }
  // The first offer names the issuer: its hosts join the allowed ones.
  let first = true
  const offers: OfferSource = {
    describe: source.describe,
    async next(kind) {
      const offer = await source.next(kind)
      if (offer && first) for (const host of hostsOfLink(offer.link)) recorder.allow(host)
      if (offer) first = false
      return offer
    },
  }
  const ctx = {
    offers,
    recorder,
    ...(options.trustAnchors?.length ? { trustAnchors: options.trustAnchors } : {}),
    ...(options.protocol ? { protocol: options.protocol } : {}),
    tokenWaitMs: options.tokenWaitMs ?? 0,
    deferredTimeoutMs: Math.max(5_000, caseTimeoutMs - 5_000),
    ...(options.authorization ? { authorization: options.authorization } : {}),
  }
  const profile: IssuerProfile = await preflight(recorder, () => probeIssuer(ctx))
  const grants = [
    ...(profile.grants.preAuthorized ? ['pre-authorized_code'] : []),
    ...(profile.grants.authorizationCode ? ['authorization_code'] : []),
  ]
  options.onReady?.(
    `${cases.length} cases against ${profile.credentialIssuer} (OpenID4VCI ${profile.protocol === '1.0' ? '1.0' : 'draft 15'}, configuration ${profile.configurationId}${profile.format ? `, ${profile.format}` : ''}, ${profile.keyType} holder key, offers granting ${grants.join(' and ') || 'nothing'})`,
  )
  const issuerCase = issuerCaseCode(ctx, profile)
  const haipCase = haipCaseCode(ctx, profile)
  return runServerTest({
    plan: 'issuer',
    cases,
    target: `${target} (${profile.credentialIssuer})`,
    run: (c, note, signal) => (c.name.startsWith('haip-') ? haipCase : issuerCase)(c, note, signal),
    exchanges: () => recorder.take(),
    caseTimeoutMs,
    ...(options.onResult ? { onResult: options.onResult } : {}),
  })
}

export interface VerifierTestOptions extends Common {
  source:
    | { deployment: Deployment; verificationTemplate?: string; issuanceTemplates?: readonly string[] }
    | { requestCommand?: string; resultCommand?: string; dcApiCommand?: string }
  /** present the credentials of this wallet file instead of received ones */
  walletFile?: string
  /** the test issuer's data folder (request commands without a wallet file) */
  issuerDataDir?: string
  keyType?: 'P-256' | 'Ed25519' | 'secp256k1'
}

export async function runVerifierTest(options: VerifierTestOptions): Promise<ServerTestRun> {
  const cases = casesOf('verifier', options.only)
  const recorder = new ExchangeRecorder(options.allowHosts ?? [])
  const trustAnchors = [...(options.trustAnchors ?? [])]
  let source: RequestSource
  let supply: CredentialSupply | undefined
  let target: string
  let testIssuer: TestIssuer | undefined
  try {
    if ('deployment' in options.source) {
      const { deployment } = options.source
      for (const host of deploymentHosts(deployment)) recorder.allow(host)
      const keys = new DeploymentKeys(deployment)
      const template = options.source.verificationTemplate ?? deployment.verificationTemplate
      if (!template) throw new PreflightError('the profile names no verification template: give one')
      source = deploymentRequests(keys, template)
      if (!options.walletFile)
        supply = deploymentCredentials(
          keys,
          options.source.issuanceTemplates ?? [deployment.issuanceTemplate],
        )
      target = `${deployment.describe}, verification template ${template}`
    } else {
      if (options.source.requestCommand === undefined && options.source.dcApiCommand === undefined)
        throw new PreflightError('give a request command, a DC API command, or both')
      source = commandRequests(options.source)
      target = `the verifier of ${source.describe}`
      if (!options.walletFile) {
        testIssuer = await startTestIssuer(options.issuerDataDir ? { dataDir: options.issuerDataDir } : {})
        recorder.allow(new URL(testIssuer.url).host)
        supply = deploymentCredentials(testIssuer.keys, testIssuer.templatesFor(options.keyType ?? 'P-256'))
        // the SD-JWT VCs' x5c chains lead to its CA, the mdoc's issuerAuth x5chain to its IACA
        trustAnchors.push(testIssuer.trust.trustAnchorPem, testIssuer.trust.iacaPem)
      }
    }
  } catch (error) {
    await testIssuer?.close()
    throw error instanceof PreflightError ? error : new PreflightError((error as Error).message)
  }
  let first = true
  const requests: RequestSource = {
    describe: source.describe,
    ...(source.links !== undefined && { links: source.links }),
    async next() {
      const request = await source.next()
      if (first) for (const host of hostsOfLink(request.link)) recorder.allow(host)
      first = false
      return request
    },
    ...(source.nextDcApi && { nextDcApi: source.nextDcApi.bind(source) }),
  }
  const ctx = {
    requests,
    recorder,
    ...(supply ? { supply } : {}),
    ...(options.walletFile ? { walletFile: options.walletFile } : {}),
    keyType: options.keyType ?? 'P-256',
    trustAnchors,
  }
  try {
    const asked = await preflight(recorder, () => probeVerifier(ctx))
    options.onReady?.(
      `${cases.length} cases against ${target} (${asked}); credentials from ${options.walletFile ?? supply?.describe}`,
    )
    return await runServerTest({
      plan: 'verifier',
      cases,
      target,
      run: verifierCaseCode(ctx),
      exchanges: () => recorder.take(),
      caseTimeoutMs: options.caseTimeoutMs ?? 60_000,
      ...(options.onResult ? { onResult: options.onResult } : {}),
    })
  } finally {
    await source.close?.().catch(() => {})
    await testIssuer?.close()
  }
}

export type { ServerCaseResult, ServerTestRun }
