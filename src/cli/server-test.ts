// `vc-harness issuer-test` and `vc-harness verifier-test`: the harness's wallet grading someone else's
// OpenID4VCI issuer or OpenID4VP verifier (docs/server-testing.md). Parsing and pre-flight here; the plans,
// case code and reports in src/harness/server-test/.

import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { type ServerCase, type ServerPlan, serverPlanCases } from '../harness/server-test/plans.ts'

const COMMON = `  --case ID               run only this case (repeatable; ids as --list prints them)
  --list                  print the plan's cases (id, expectation, misbehaviour, clauses, rule, what passes) and exit
  --case-timeout S        seconds one case may take; default 60
  --allow-host HOST       a further host[:port] the wallet may contact (repeatable); by default only the hosts of
                          the profile's URLs and of the first offer / request are contacted
  --trust-anchor FILE     a PEM certificate (CA or pinned leaf) the wallet trusts (repeatable)
  --reports DIR           where the JSON, Markdown and JUnit reports go
  -h, --help              show this text

Exit codes: 0 every case that applies passed (and at least one did); 1 a case failed, or none applied; 2 bad
arguments; 3 the pre-flight failed (the target cannot be reached, the command prints no link, …).`

export const ISSUER_TEST_USAGE = `Usage: vc-harness issuer-test (--offer-command "<cmd>" | --profile FILE) [options]
       vc-harness issuer-test --list | --list-trust

Grades any OpenID4VCI issuer: the harness's wallet takes a fresh credential offer per case and completes the
flow (positive cases) or does one thing wrong that the issuer must refuse with the right OAuth error and
without issuing (key proof, nonce, code, tx_code, credential request and access token negatives). Each result
says what the issuer answered and which clause it breaks. See docs/server-testing.md.

Options:
  --offer-command CMD     run through /bin/sh once per case; prints one fresh credential offer: a deep link
                          (openid-credential-offer://…), a bare credential_offer_uri, or the JSON of the
                          relying-party API's offer; a line "tx_code: VALUE" gives its transaction code
  --profile FILE          a deployment of the relying-party API (docs/targets.md): offers are created with its
                          application key and issuance template, their content submitted at once
  --deferred-offer-command CMD
                          like --offer-command, for an offer the issuer answers 202 (deferred); needs
  --complete-command CMD  run once the issuer answered 202: {offer} the offer link, {transaction_id} its id
  --tx-code CODE          the transaction code, when the offer command does not print one
  --protocol P            auto (default: the metadata decides), 1.0 or draft15
  --token-wait S          how long the token-expired case may wait for an access token to expire; default 0

HAIP authorization code flow (the haip-* cases, for offers with an authorization_code grant; the issuer's
authorization endpoint must approve without a person, in a test mode: docs/server-testing.md):
  --wallet-provider-key FILE
                          sign the wallet attestation with this wallet provider's private JWK (JSON; EC P-256
                          or OKP Ed25519). Default: vc-harness's published TEST provider
  --wallet-provider-issuer ID
                          the attestation's iss with --wallet-provider-key; default the key's thumbprint URN
  --redirect-uri URI      the wallet's redirect_uri; default https://wallet.vc-harness.invalid/callback
  --client-id ID          the wallet's client_id (the attestation's sub); default vc-harness-wallet-<hash>
  --list-trust            print the wallet provider's public key the issuer must trust, and exit
${COMMON}
  (reports default: reports/issuer-test)`

export const VERIFIER_TEST_USAGE = `Usage: vc-harness verifier-test (--request-command "<cmd>" [--dc-api-command "<cmd>"] | --profile FILE) [options]
       vc-harness verifier-test --list | --list-trust

Grades any OpenID4VP verifier: the harness's wallet takes a fresh authorization request per case and answers
it correctly (positive cases) or with one misbehaviour the verifier must reject (a foreign or replayed VP,
wrong nonce or audience, tampered, revoked or untrusted credentials, broken key binding, a plain response to
direct_post.jwt, a JWE to another key, …). See docs/server-testing.md.

Options:
  --request-command CMD   run through /bin/sh once per case; prints one fresh authorization request link
  --result-command CMD    where the verifier reports its verdict elsewhere: run after the answer with {state}
                          and {session} (the last path segment of response_uri); prints JSON {"accepted": …}
                          (or 4.7's {"Status": "VERIFIED" | "REJECTED"}), else its exit code says 0 accepted,
                          1 rejected
  --dc-api-command CMD    the dc-api-* cases (OpenID4VP over the W3C Digital Credentials API): run through
                          /bin/sh once per case; prints JSON {"request": {"protocol", "data"}, "origin",
                          "response"}: the entry the verifier's page hands navigator.credentials.get, the
                          page's origin, and the URL the page posts the wallet's answer to (JSON {origin,
                          protocol, data}; 2xx accepted, 4xx refused). With --request-command or alone (then
                          only the dc-api-* cases apply). --result-command gets {session}, the last path
                          segment of that URL
  --profile FILE          a deployment of the relying-party API: sessions of its verification template
                          (templates.other, or --verification-template), judged by 4.7; credentials from its
                          issuance template (templates.issuance, or --issuance-template, repeatable)
  --verification-template ID, --issuance-template ID
  --wallet FILE           present the credentials of this wallet file (vc-harness wallet receive --wallet FILE)
                          instead of the test issuer's; it is copied per case, never changed
  --issuer-data DIR       the test issuer's data folder (its keys: keep it to keep what the verifier trusts);
                          default .vc-harness/test-issuer
  --list-trust            start the test issuer, print what the verifier under test must trust, and exit
  --key-type T            the holder key: P-256 (default, HAIP), Ed25519 or secp256k1
${COMMON}
  (reports default: reports/verifier-test)`

function usageError(message: string, command: string): Error {
  return Object.assign(new TypeError(`${message} (see vc-harness ${command} --help)`), {
    code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
  })
}

const COMMON_OPTIONS = {
  case: { type: 'string', multiple: true },
  list: { type: 'boolean' },
  'case-timeout': { type: 'string' },
  'allow-host': { type: 'string', multiple: true },
  'trust-anchor': { type: 'string', multiple: true },
  reports: { type: 'string' },
  profile: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

function listCases(cases: readonly ServerCase[]): void {
  for (const c of cases) {
    console.log(
      `${c.id}\t${c.expect}${c.misbehave ? ` (misbehaviour ${c.misbehave})` : ''}\t${c.sources.join(' ')}\t${c.title}`,
    )
    if (c.rule) console.log(`    rule: ${c.rule}`)
    console.log(`    passes: ${c.passes}`)
  }
}

function selected(
  plan: ServerPlan,
  only: readonly string[] | undefined,
  command: string,
): readonly ServerCase[] {
  const cases = serverPlanCases(plan)
  const unknown = (only ?? []).filter((id) => !cases.some((c) => c.id === id))
  if (unknown.length)
    throw usageError(`--case ${unknown.join(', ')}: not a case of the ${plan} plan (see --list)`, command)
  return only?.length ? cases.filter((c) => only.includes(c.id)) : cases
}

function seconds(
  value: string | undefined,
  fallback: number,
  name: string,
  command: string,
  min = 1,
): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < min || n > 3600)
    throw usageError(`--${name} ${value}: whole seconds from ${min} to 3600`, command)
  return n
}

function readAnchors(files: readonly string[] | undefined, command: string): string[] {
  return (files ?? []).map((file) => {
    try {
      const pem = readFileSync(file, 'utf8')
      if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate in it')
      return pem
    } catch (error) {
      throw usageError(`--trust-anchor ${file}: ${(error as Error).message}`, command)
    }
  })
}

/** --wallet-provider-key/-issuer, --redirect-uri and --client-id as the wallet's AuthorizationOptions. */
async function authorizationOptions(
  values: {
    'wallet-provider-key'?: string | undefined
    'wallet-provider-issuer'?: string | undefined
    'redirect-uri'?: string | undefined
    'client-id'?: string | undefined
  },
  command: string,
): Promise<import('../wallet/issuance-authorization.ts').AuthorizationOptions> {
  const redirectUri = values['redirect-uri']
  if (redirectUri !== undefined && !URL.canParse(redirectUri))
    throw usageError(`--redirect-uri ${redirectUri}: not a URL`, command)
  const keyFile = values['wallet-provider-key']
  const issuer = values['wallet-provider-issuer']
  if (issuer !== undefined && keyFile === undefined)
    throw usageError(
      '--wallet-provider-issuer names the iss of --wallet-provider-key: give the key too',
      command,
    )
  let walletProvider: import('../shared/oauth/client-attestation.ts').AttestationSigner | undefined
  if (keyFile !== undefined) {
    let jwk: unknown
    try {
      jwk = JSON.parse(readFileSync(keyFile, 'utf8'))
    } catch (error) {
      throw usageError(`--wallet-provider-key ${keyFile}: no JSON JWK: ${(error as Error).message}`, command)
    }
    if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk))
      throw usageError(`--wallet-provider-key ${keyFile}: no JWK object`, command)
    const { walletProviderFromJwk } = await import('../wallet/issuance-authorization.ts')
    try {
      walletProvider = walletProviderFromJwk(
        jwk as Record<string, unknown>,
        issuer !== undefined ? { issuer } : {},
      )
    } catch (error) {
      throw usageError(`--wallet-provider-key ${keyFile}: ${(error as Error).message}`, command)
    }
  }
  return {
    ...(redirectUri !== undefined && { redirectUri }),
    ...(values['client-id'] !== undefined && { clientId: values['client-id'] }),
    ...(walletProvider && { walletProvider }),
  }
}

/** The deployment a --profile file describes (a problem with it is the pre-flight's). */
async function deploymentOf(file: string) {
  const { deploymentFromProfile } = await import('../harness/server-test/relying-party.ts')
  return deploymentFromProfile(file)
}

/**
 * Runs a plan, prints the summary and writes the reports: exit 0 passed, 1 not; a pre-flight problem (the
 * profile, the first offer or request, the target) is exit 3 with its message.
 */
async function reported(
  command: string,
  reports: string,
  run: () => Promise<import('../harness/server-test/runner.ts').ServerTestRun>,
): Promise<number> {
  const { PreflightError } = await import('../harness/server-test/index.ts')
  const { TargetConfigError } = await import('../harness/profile.ts')
  let result: import('../harness/server-test/runner.ts').ServerTestRun
  try {
    result = await run()
  } catch (error) {
    if (!(error instanceof PreflightError || error instanceof TargetConfigError)) throw error
    console.error(`vc-harness ${command}: pre-flight: ${error.message}`)
    return 3
  }
  const { renderServerSummary, writeServerTestReports } = await import('../harness/server-test/report.ts')
  console.log(renderServerSummary(result, writeServerTestReports(result, reports)))
  return result.passed ? 0 : 1
}

export async function issuerTest(argv: string[]): Promise<number> {
  const command = 'issuer-test'
  const { values } = parseArgs({
    args: argv,
    options: {
      ...COMMON_OPTIONS,
      'offer-command': { type: 'string' },
      'deferred-offer-command': { type: 'string' },
      'complete-command': { type: 'string' },
      'tx-code': { type: 'string' },
      protocol: { type: 'string' },
      'token-wait': { type: 'string' },
      'wallet-provider-key': { type: 'string' },
      'wallet-provider-issuer': { type: 'string' },
      'redirect-uri': { type: 'string' },
      'client-id': { type: 'string' },
      'list-trust': { type: 'boolean' },
    },
    strict: true,
    allowPositionals: false,
  })
  if (values.help) {
    console.log(ISSUER_TEST_USAGE)
    return 0
  }
  const cases = selected('issuer', values.case, command)
  if (values.list) {
    listCases(cases)
    return 0
  }
  const authorization = await authorizationOptions(values, command)
  if (values['list-trust']) {
    const { walletProviderTrustText } = await import('../harness/server-test/issuer-haip.ts')
    process.stdout.write(walletProviderTrustText(authorization.walletProvider))
    return 0
  }
  if ((values['offer-command'] === undefined) === (values.profile === undefined))
    throw usageError('give exactly one of --offer-command and --profile', command)
  if ((values['deferred-offer-command'] === undefined) !== (values['complete-command'] === undefined))
    throw usageError('--deferred-offer-command and --complete-command go together', command)
  const protocol = values.protocol ?? 'auto'
  if (!['auto', '1.0', 'draft15'].includes(protocol))
    throw usageError(`--protocol ${protocol}: auto, 1.0 or draft15`, command)
  const caseTimeout = seconds(values['case-timeout'], 60, 'case-timeout', command)
  const tokenWait = seconds(values['token-wait'], 0, 'token-wait', command, 0)
  const trustAnchors = readAnchors(values['trust-anchor'], command)
  const reports = resolve(values.reports ?? 'reports/issuer-test')

  return reported(command, reports, async () => {
    const { runIssuerTest } = await import('../harness/server-test/index.ts')
    const { serverCaseLine } = await import('../harness/server-test/report.ts')
    return runIssuerTest({
      source:
        values.profile !== undefined
          ? { deployment: await deploymentOf(values.profile) }
          : {
              offerCommand: values['offer-command'] as string,
              ...(values['deferred-offer-command'] !== undefined
                ? {
                    deferredOfferCommand: values['deferred-offer-command'],
                    completeCommand: values['complete-command'] as string,
                  }
                : {}),
              ...(values['tx-code'] !== undefined ? { txCode: values['tx-code'] } : {}),
            },
      ...(values.case?.length ? { only: values.case } : {}),
      caseTimeoutMs: caseTimeout * 1000,
      allowHosts: values['allow-host'] ?? [],
      trustAnchors,
      ...(protocol !== 'auto' ? { protocol: protocol as '1.0' | 'draft15' } : {}),
      tokenWaitMs: tokenWait * 1000,
      ...(Object.keys(authorization).length > 0 ? { authorization } : {}),
      onReady: (line) => console.error(`${command}: ${line}`),
      onResult: (r, i, n) => console.log(serverCaseLine(r, i, n)),
    })
  })
}

export async function verifierTest(argv: string[]): Promise<number> {
  const command = 'verifier-test'
  const { values } = parseArgs({
    args: argv,
    options: {
      ...COMMON_OPTIONS,
      'request-command': { type: 'string' },
      'result-command': { type: 'string' },
      'dc-api-command': { type: 'string' },
      'verification-template': { type: 'string' },
      'issuance-template': { type: 'string', multiple: true },
      wallet: { type: 'string' },
      'issuer-data': { type: 'string' },
      'list-trust': { type: 'boolean' },
      'key-type': { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  })
  if (values.help) {
    console.log(VERIFIER_TEST_USAGE)
    return 0
  }
  const cases = selected('verifier', values.case, command)
  if (values.list) {
    listCases(cases)
    return 0
  }
  const { startTestIssuer, renderTrust } = await import('../harness/server-test/test-issuer.ts')
  if (values['list-trust']) {
    const issuer = await startTestIssuer(values['issuer-data'] ? { dataDir: values['issuer-data'] } : {})
    try {
      process.stdout.write(renderTrust(issuer.trust))
    } finally {
      await issuer.close()
    }
    return 0
  }
  const commands = values['request-command'] !== undefined || values['dc-api-command'] !== undefined
  if (commands === (values.profile !== undefined))
    throw usageError(
      'give --request-command (and/or --dc-api-command) or --profile, not both and not neither',
      command,
    )
  if (values.profile === undefined && (values['verification-template'] || values['issuance-template']))
    throw usageError('--verification-template and --issuance-template need --profile', command)
  const keyType = values['key-type'] ?? 'P-256'
  if (!['P-256', 'Ed25519', 'secp256k1'].includes(keyType))
    throw usageError(`--key-type ${keyType}: P-256, Ed25519 or secp256k1`, command)
  const caseTimeout = seconds(values['case-timeout'], 60, 'case-timeout', command)
  const trustAnchors = readAnchors(values['trust-anchor'], command)
  if (values.wallet !== undefined && !existsSync(values.wallet))
    throw usageError(
      `--wallet ${values.wallet}: no such file (vc-harness wallet receive --wallet FILE <offer> makes one)`,
      command,
    )
  const reports = resolve(values.reports ?? 'reports/verifier-test')

  return reported(command, reports, async () => {
    const { runVerifierTest } = await import('../harness/server-test/index.ts')
    const { serverCaseLine } = await import('../harness/server-test/report.ts')
    return runVerifierTest({
      source:
        values.profile !== undefined
          ? {
              deployment: await deploymentOf(values.profile),
              ...(values['verification-template']
                ? { verificationTemplate: values['verification-template'] }
                : {}),
              ...(values['issuance-template'] ? { issuanceTemplates: values['issuance-template'] } : {}),
            }
          : {
              ...(values['request-command'] !== undefined
                ? { requestCommand: values['request-command'] }
                : {}),
              ...(values['result-command'] !== undefined ? { resultCommand: values['result-command'] } : {}),
              ...(values['dc-api-command'] !== undefined ? { dcApiCommand: values['dc-api-command'] } : {}),
            },
      ...(values.case?.length ? { only: values.case } : {}),
      caseTimeoutMs: caseTimeout * 1000,
      allowHosts: values['allow-host'] ?? [],
      trustAnchors,
      ...(values.wallet ? { walletFile: values.wallet } : {}),
      ...(values['issuer-data'] ? { issuerDataDir: values['issuer-data'] } : {}),
      keyType: keyType as 'P-256' | 'Ed25519' | 'secp256k1',
      onReady: (line) => console.error(`${command}: ${line}`),
      onResult: (r, i, n) => console.log(serverCaseLine(r, i, n)),
    })
  })
}
