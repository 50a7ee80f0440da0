// The issuer plan's HAIP cases (plans.ts `haip-*`): the harness's wallet through the authorization code flow
// as HAIP 1.0 profiles it (src/wallet/issuance-authorization.ts) against any issuer whose offers carry an
// authorization_code grant: the authorization server metadata, the flow issuer- and wallet-initiated, the
// authorization response (code, state, iss) and the DPoP-bound token; and one case per authorization
// misbehaviour of the wallet (AUTHORIZATION_MISBEHAVIOURS), each judged at the step whose answer must refuse it.
// The wallet attests itself with vc-harness's published TEST wallet provider unless told otherwise
// (IssuerTestContext.authorization): the issuer must trust it (walletProviderTrustText prints its key).

import { createPublicKey } from 'node:crypto'
import { isObject } from '../../shared/json.ts'
import { decodeJws, jwkThumbprint } from '../../shared/jws.ts'
import type { AttestationSigner } from '../../shared/oauth/client-attestation.ts'
import { testWalletProviderSigner } from '../../shared/oauth/test-wallet-provider.ts'
import { WalletProtocolError } from '../../wallet/errors.ts'
import type { CredentialResult, IssuedCredentials } from '../../wallet/issuance.ts'
import type { AuthorizationGrant } from '../../wallet/issuance-authorization.ts'
import type { AuthorizationMisbehaviour } from '../../wallet/misbehaviour.ts'
import {
  authorizationHint,
  type IssuerProfile,
  type IssuerTestContext,
  issuedDespite,
  isVerdict,
  mustRefuseCredential,
  newWallet,
  obtain,
  type Started,
  start,
  verifyIssued,
} from './issuer.ts'
import type { ServerCase } from './plans.ts'
import {
  answerText,
  type CaseCode,
  failed,
  judgeRefusal,
  notApplicable,
  nothing,
  passed,
  type ServerVerdict,
  stepFailed,
} from './runner.ts'

const NO_GRANT =
  "the issuer's offers carry no authorization_code grant (OpenID4VCI 1.0 §4.1.1): they are redeemed with the pre-authorized code; the HAIP cases need an offer with that grant (make the offer command, or the profile's issuance template, give one)"

/** Codes the wallet gives an answer it refuses to go on with (not the issuer's refusal: a wrong answer). */
const WRONG_ANSWERS = new Set([
  'invalid_authorization_response',
  'invalid_token_response',
  'invalid_par_response',
  'invalid_authorization_server_metadata',
])

/** The HAIP cases' code over `ctx`, with the pre-flight's profile. */
export function haipCaseCode(ctx: IssuerTestContext, profile: IssuerProfile): CaseCode {
  return async (c, note, signal) => {
    if (!profile.grants.authorizationCode) return notApplicable(NO_GRANT)
    switch (c.name) {
      case 'haip-metadata':
        return metadataCase(ctx, c, profile)
      case 'haip-flow':
        return flowCase(ctx, c, profile, note, signal)
      case 'haip-wallet-initiated':
        return walletInitiated(ctx, c, profile, note)
      case 'haip-authorization-response':
        return authorizationResponse(ctx, c, profile, note)
      case 'haip-token-dpop':
        return tokenDpop(ctx, c, profile, note)
      default:
        return misbehaving(ctx, c, profile, note)
    }
  }
}

/** A fresh offer, opened for the authorization code flow (also when it grants a pre-authorized code). */
const open = (ctx: IssuerTestContext, profile: IssuerProfile) =>
  start(ctx, profile.keyType, 'immediate', undefined, 'authorization_code')

/** A step the case needs failed before its own request: nothing tested, with what to do where it is known. */
function needed(step: string, error: unknown): ServerVerdict {
  const verdict = stepFailed(step, error)
  const hint =
    authorizationHint(error) ??
    (error instanceof WalletProtocolError && error.error === 'invalid_authorization_response'
      ? 'the wallet refused the authorization response (haip-authorization-response judges it)'
      : undefined)
  return hint ? { ...verdict, reason: `${verdict.reason}; ${hint}` } : verdict
}

/** A positive case's flow stopped: the issuer refused (fail), answered wrongly (fail), or nothing came back. */
function flowFailed(c: ServerCase, error: unknown): ServerVerdict {
  if (!(error instanceof WalletProtocolError) || error.status === 0 || error.error === 'interaction_required')
    return needed('authorization', error)
  const clauses = c.sources.join(' ')
  if (error.error !== undefined && WRONG_ANSWERS.has(error.error))
    return failed(
      'accepted',
      `${c.title}: the ${error.step} answer is wrong: ${error.errorDescription ?? error.message} (${clauses})`,
    )
  const hint = authorizationHint(error)
  return failed(
    'refused',
    `${c.title}: the ${error.step} request was refused: ${answerText(error)} (${clauses})${hint ? `; ${hint}` : ''}`,
  )
}

const grantLine = (grant: AuthorizationGrant) =>
  `authorization: ${grant.via === 'redirect' ? 'redirected at once' : 'through the user step'} to the redirect_uri with code, state and iss ${grant.iss ?? '(none)'}`

// --- the authorization server metadata ---------------------------------------------------------------------

/** `https://h/p` → `https://h/.well-known/<name>/p` (RFC 8414 §3.1, OpenID4VCI 1.0 §12.2.2). */
function inserted(identifier: string, name: string): string {
  const url = new URL(identifier)
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '')
  return `${url.origin}/.well-known/${name}${path}`
}

async function getJson(
  ctx: IssuerTestContext,
  url: string,
): Promise<{ status: number; body?: Record<string, unknown>; problem?: string }> {
  let response: Response
  try {
    response = await ctx.recorder.fetch(url, { headers: { accept: 'application/json' } })
  } catch (error) {
    return { status: 0, problem: `GET ${url} got no answer: ${(error as Error).message}` }
  }
  if (response.status !== 200)
    return { status: response.status, problem: `GET ${url} answered ${response.status}` }
  try {
    const body: unknown = await response.json()
    if (isObject(body)) return { status: 200, body }
  } catch {}
  return { status: 200, problem: `GET ${url} answered 200 but no JSON object` }
}

const lists = (value: unknown, item: string) => Array.isArray(value) && value.includes(item)
const shown = (value: unknown) => (value === undefined ? 'absent' : JSON.stringify(value))

async function metadataCase(ctx: IssuerTestContext, c: ServerCase, profile: IssuerProfile) {
  const issuerDoc = await getJson(ctx, inserted(profile.credentialIssuer, 'openid-credential-issuer'))
  if (!issuerDoc.body)
    return issuerDoc.status === 0
      ? nothing(issuerDoc.problem as string)
      : failed('refused', `${issuerDoc.problem}`)
  const servers = Array.isArray(issuerDoc.body.authorization_servers)
    ? issuerDoc.body.authorization_servers.filter((s): s is string => typeof s === 'string')
    : []
  const server = profile.authorizationServer ?? servers[0] ?? profile.credentialIssuer
  // RFC 8414 §3; an authorization server that is an OpenID provider may publish OpenID Connect Discovery only
  let where = inserted(server, 'oauth-authorization-server')
  let doc = await getJson(ctx, where)
  if (!doc.body) {
    const first = doc
    where = `${server.replace(/\/$/, '')}/.well-known/openid-configuration`
    doc = await getJson(ctx, where)
    if (!doc.body) {
      if (first.status === 0 && doc.status === 0) return nothing(`${first.problem}; ${doc.problem}`)
      return failed(
        'refused',
        `no authorization server metadata for ${server} (RFC 8414 §3): ${first.problem}; ${doc.problem} (${c.sources.join(' ')})`,
      )
    }
  }
  const md = doc.body
  const problems: string[] = []
  if (md.issuer !== server)
    problems.push(
      `issuer ${shown(md.issuer)} is not ${server}, the identifier it was fetched for (RFC 8414 §3.3)`,
    )
  if (typeof md.pushed_authorization_request_endpoint !== 'string')
    problems.push('no pushed_authorization_request_endpoint (RFC 9126 §5; HAIP 1.0 §4.1: PAR MUST be used)')
  if (md.require_pushed_authorization_requests !== true)
    problems.push(
      `require_pushed_authorization_requests is ${shown(md.require_pushed_authorization_requests)}, not true (RFC 9126 §5; HAIP 1.0 §4.1)`,
    )
  if (!lists(md.code_challenge_methods_supported, 'S256'))
    problems.push(
      `code_challenge_methods_supported is ${shown(md.code_challenge_methods_supported)}, without S256 (RFC 8414 §2, RFC 7636 §4.2; HAIP 1.0 §4)`,
    )
  if (md.authorization_response_iss_parameter_supported !== true)
    problems.push(
      `authorization_response_iss_parameter_supported is ${shown(md.authorization_response_iss_parameter_supported)}, not true (RFC 9207 §3)`,
    )
  if (!lists(md.dpop_signing_alg_values_supported, 'ES256'))
    problems.push(
      `dpop_signing_alg_values_supported is ${shown(md.dpop_signing_alg_values_supported)}, without ES256 (RFC 9449 §5.1; HAIP 1.0 §4: DPoP)`,
    )
  if (!lists(md.token_endpoint_auth_methods_supported, 'attest_jwt_client_auth'))
    problems.push(
      `token_endpoint_auth_methods_supported is ${shown(md.token_endpoint_auth_methods_supported)}, without attest_jwt_client_auth (draft-ietf-oauth-attestation-based-client-auth-07 §10.1; HAIP 1.0: wallet attestation)`,
    )
  if (problems.length > 0) return failed('accepted', `GET ${where}: ${problems.join('; ')}`)
  return passed(
    'accepted',
    `GET ${where}: PAR required at ${md.pushed_authorization_request_endpoint}, PKCE S256, iss in the authorization response, DPoP ${(md.dpop_signing_alg_values_supported as string[]).join(', ')}, attest_jwt_client_auth`,
  )
}

// --- the positive cases --------------------------------------------------------------------------------------

async function flowCase(
  ctx: IssuerTestContext,
  c: ServerCase,
  profile: IssuerProfile,
  note: (line: string) => void,
  signal: AbortSignal,
): Promise<ServerVerdict> {
  const s = await open(ctx, profile)
  if (isVerdict(s)) return s
  let issued: IssuedCredentials
  try {
    note(grantLine(await s.session.authorize()))
    const token = await s.session.token()
    note(`token: token_type ${String(token.token_type)}, expires_in ${String(token.expires_in)}`)
    issued = await obtain(ctx, s, note, signal)
  } catch (error) {
    return flowFailed(c, error)
  }
  const bad = await verifyIssued(s, issued, note)
  if (bad) return bad
  return passed(
    'accepted',
    'issued a credential that verifies through PAR with PKCE S256 and wallet attestation, the authorization endpoint, a DPoP-bound token and a DPoP-proved credential request (issuer-initiated)',
  )
}

async function walletInitiated(
  ctx: IssuerTestContext,
  c: ServerCase,
  profile: IssuerProfile,
  note: (line: string) => void,
): Promise<ServerVerdict> {
  const wallet = await newWallet(ctx, profile.keyType)
  const configuration = profile.configurationId
  let s: Started
  try {
    const session = await wallet.startIssuanceAt(
      profile.credentialIssuer,
      configuration,
      ctx.protocol ? { protocol: ctx.protocol } : {},
    )
    s = { offer: { link: session.deepLink }, wallet, session }
  } catch (error) {
    return stepFailed('metadata', error)
  }
  note(`wallet-initiated: ${configuration} of ${profile.credentialIssuer}, no offer`)
  try {
    note(grantLine(await s.session.authorize()))
  } catch (error) {
    const refusedStart =
      error instanceof WalletProtocolError &&
      (error.step === 'par' || error.step === 'authorization') &&
      error.status >= 400 &&
      authorizationHint(error) === undefined
    if (refusedStart)
      return notApplicable(
        `the issuer does not take a wallet-initiated request for ${configuration}: the ${error.step} request was answered ${answerText(error)} (OpenID4VCI 1.0 §3.5; haip-flow tests the issuer-initiated flow)`,
      )
    return flowFailed(c, error)
  }
  let first: CredentialResult
  try {
    const token = await s.session.token()
    note(`token: token_type ${String(token.token_type)}`)
    first = await s.session.requestCredential()
  } catch (error) {
    return flowFailed(c, error)
  }
  if (first.status === 202)
    return notApplicable(
      `the issuer holds the wallet-initiated issuance for a person: the credential request was answered 202 with a transaction_id (OpenID4VCI 1.0 §9); PAR, the authorization and the DPoP-bound token passed, nothing was issued to verify`,
    )
  const bad = await verifyIssued(s, first, note)
  if (bad) return bad
  return passed(
    'accepted',
    `issued ${configuration} that verifies to a wallet-initiated request (no offer, no issuer_state): PAR, authorization, DPoP-bound token, credential`,
  )
}

async function authorizationResponse(
  ctx: IssuerTestContext,
  c: ServerCase,
  profile: IssuerProfile,
  note: (line: string) => void,
): Promise<ServerVerdict> {
  const s = await open(ctx, profile)
  if (isVerdict(s)) return s
  let grant: AuthorizationGrant
  try {
    // the wallet checks the response before it keeps the code (checkAuthorizationResponse): redirect_uri,
    // iss (RFC 9207 §2.4: present, and the issuer the request went to), state (RFC 6749 §4.1.2), code
    grant = await s.session.authorize()
  } catch (error) {
    return flowFailed(c, error)
  }
  note(grantLine(grant))
  if (grant.iss !== grant.authorizationServer)
    return failed(
      'accepted',
      `iss ${shown(grant.iss)} is not the authorization server's issuer identifier ${grant.authorizationServer} (RFC 9207 §2)`,
    )
  return passed(
    'accepted',
    `the authorization endpoint ${grant.via === 'redirect' ? 'redirected' : 'sent the user step'} to the redirect_uri with code, the wallet's state and iss ${grant.iss}`,
  )
}

async function tokenDpop(
  ctx: IssuerTestContext,
  c: ServerCase,
  profile: IssuerProfile,
  note: (line: string) => void,
): Promise<ServerVerdict> {
  const s = await open(ctx, profile)
  if (isVerdict(s)) return s
  try {
    note(grantLine(await s.session.authorize()))
  } catch (error) {
    return needed('authorization', error)
  }
  let token: Record<string, unknown>
  try {
    // the wallet refuses a token_type other than DPoP (RFC 9449 §5) as invalid_token_response
    token = (await s.session.token()) as unknown as Record<string, unknown>
  } catch (error) {
    return flowFailed(c, error)
  }
  const jkt = accessTokenJkt(token.access_token)
  const flow = s.session.authorization
  const own = flow ? jwkThumbprint(flow.prover.signer.publicJwk as { kty?: string }) : undefined
  if (jkt !== undefined && own !== undefined && jkt !== own)
    return failed(
      'accepted',
      `the access token (a JWT) binds cnf.jkt ${jkt}, not the thumbprint ${own} of the key that signed the DPoP proof (RFC 9449 §6.1)`,
    )
  return passed(
    'accepted',
    `the token endpoint answered token_type ${String(token.token_type)}${jkt !== undefined ? `, the access token's cnf.jkt the DPoP key's thumbprint` : ''}`,
  )
}

/** The cnf.jkt of a JWT access token (RFC 9449 §6.1); undefined for an opaque one. */
function accessTokenJkt(accessToken: unknown): string | undefined {
  if (typeof accessToken !== 'string' || accessToken.split('.').length !== 3) return undefined
  try {
    const cnf = decodeJws(accessToken).payload.cnf
    return isObject(cnf) && typeof cnf.jkt === 'string' ? cnf.jkt : undefined
  } catch {
    return undefined
  }
}

// --- the misbehaviours ---------------------------------------------------------------------------------------

async function misbehaving(
  ctx: IssuerTestContext,
  c: ServerCase,
  profile: IssuerProfile,
  note: (line: string) => void,
): Promise<ServerVerdict> {
  const refusal = c.refusal
  const misbehave = c.misbehave as AuthorizationMisbehaviour | undefined
  if (!refusal || !misbehave) throw new Error(`case ${c.id} has no misbehaviour`)
  const s = await open(ctx, profile)
  if (isVerdict(s)) return s
  if (refusal.step === 'par') {
    try {
      const grant = await s.session.authorize({ misbehave: [misbehave] })
      note(grantLine(grant))
      return issuedDespite(c, 'accepted the pushed authorization request and granted an authorization code')
    } catch (error) {
      if (error instanceof WalletProtocolError && error.step !== 'par' && error.status !== 0)
        return issuedDespite(
          c,
          `accepted the pushed authorization request (201 request_uri; the ${error.step} step after it answered ${answerText(error)})`,
        )
      return judgeRefusal(c, refusal, error)
    }
  }
  try {
    note(grantLine(await s.session.authorize()))
  } catch (error) {
    return needed('authorization', error)
  }
  if (refusal.step === 'token') {
    if (misbehave === 'code-replay') return codeReplay(c, s, note)
    try {
      await s.session.token({ misbehave: [misbehave] })
      return issuedDespite(c, 'answered the token request with an access token')
    } catch (error) {
      return judgeRefusal(c, refusal, error)
    }
  }
  try {
    await s.session.token()
  } catch (error) {
    return needed('token', error)
  }
  return mustRefuseCredential(c, s, [misbehave])
}

/**
 * The code redeemed once (which must succeed, else nothing is tested), then again with fresh proofs; the
 * second answer judged. Whether the first token still works afterwards is noted (RFC 6749 §4.1.2: SHOULD
 * revoke).
 */
async function codeReplay(c: ServerCase, s: Started, note: (line: string) => void): Promise<ServerVerdict> {
  const refusal = c.refusal as NonNullable<ServerCase['refusal']>
  try {
    await s.session.token()
    note('first redemption of the code: a DPoP-bound access token')
  } catch (error) {
    return needed('token', error)
  }
  const flow = s.session.authorization
  if (!flow) throw new Error('an authorization code session without its flow')
  let verdict: ServerVerdict
  try {
    await flow.token()
    return issuedDespite(c, 'answered the second redemption of the authorization code with an access token')
  } catch (error) {
    verdict = judgeRefusal(c, refusal, error)
  }
  if (verdict.pass) {
    try {
      await s.session.requestCredential()
      note(
        "the first redemption's access token still answers the credential endpoint after the replay (RFC 6749 §4.1.2: the issuer SHOULD revoke it)",
      )
    } catch (error) {
      note(
        error instanceof WalletProtocolError && error.status > 0
          ? `the first redemption's access token is refused after the replay: ${answerText(error)} (revoked, as RFC 6749 §4.1.2 advises)`
          : `the first redemption's access token could not be tried: ${(error as Error).message}`,
      )
    }
  }
  return verdict
}

// --- what the issuer must trust ------------------------------------------------------------------------------

/**
 * `issuer-test --list-trust`: the wallet provider whose attestations the issuer under test must accept: its
 * public JWK, kid and iss (the built-in TEST provider, src/shared/oauth/test-wallet-provider.ts, unless a
 * provider key is given).
 */
export function walletProviderTrustText(provider?: AttestationSigner): string {
  const signer = provider ?? testWalletProviderSigner()
  const { kty, crv, x, y } = createPublicKey(signer.privateKey).export({ format: 'jwk' })
  const jwk = {
    kty,
    crv,
    x,
    ...(y !== undefined ? { y } : {}),
    ...(signer.kid !== undefined ? { kid: signer.kid } : {}),
    alg: signer.alg,
  }
  return [
    provider
      ? '# What the issuer under test must trust: the wallet provider of --wallet-provider-key'
      : "# What the issuer under test must trust: vc-harness's published TEST wallet provider (src/shared/oauth/test-wallet-provider.ts; its private key is public: trust it in tests only)",
    `wallet attestation iss: ${signer.issuer}`,
    `wallet provider key (signs OAuth-Client-Attestation, typ oauth-client-attestation+jwt, ${signer.alg}):`,
    JSON.stringify(jwk, null, 2),
    `JWKS: ${JSON.stringify({ keys: [jwk] })}`,
    '',
  ].join('\n')
}
