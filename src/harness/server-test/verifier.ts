// The verifier plan's cases, carried out with the harness's wallet (src/wallet) against any OpenID4VP
// verifier: each case takes a fresh authorization request, a fresh wallet holding fresh credentials (from the
// harness's test issuer, the profile's deployment, or the user's wallet file), answers the request correctly
// (positive cases) or with the case's one misbehaviour, and judges the verifier's answer and, where it
// reports its verdict elsewhere, that verdict.

import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isObject } from '../../shared/json.ts'
import { WalletProtocolError, WalletUsageError } from '../../wallet/errors.ts'
import type { PresentationMisbehaviour } from '../../wallet/misbehaviour.ts'
import type { PresentationResult, PresentationSession } from '../../wallet/presentation.ts'
import { isDcApiRefusal, resolveDcApiRequest } from '../../wallet/presentation-dc-api.ts'
import { DcqlUnsatisfiedError } from '../../wallet/presentation-dcql.ts'
import { parsePresentationLink } from '../../wallet/presentation-link.ts'
import { NoMatchingCredentialsError } from '../../wallet/presentation-select.ts'
import type { PresentationSessionV1 } from '../../wallet/presentation-v1.ts'
import { isV1Link } from '../../wallet/presentation-v1-request.ts'
import type { HolderKeyType } from '../../wallet/store.ts'
import { Wallet } from '../../wallet/wallet.ts'
import type { ExchangeRecorder } from './exchanges.ts'
import type { ServerCase } from './plans.ts'
import type { CredentialSupply } from './relying-party.ts'
import {
  answerText,
  type CaseCode,
  failed,
  notApplicable,
  nothing,
  passed,
  type ServerVerdict,
  stepFailed,
} from './runner.ts'
import type { AuthorizationRequest, DcApiAsk, ReportedResult, RequestSource } from './sources.ts'

export interface VerifierTestContext {
  requests: RequestSource
  recorder: ExchangeRecorder
  /** where the presented credentials come from; or `walletFile` */
  supply?: CredentialSupply
  /** a wallet file holding credentials the user's own issuer issued (copied per case, never changed) */
  walletFile?: string
  keyType: HolderKeyType
  /** PEM anchors the verifier's x509 request objects chain to (and x5c credentials, for the wallet) */
  trustAnchors: readonly string[]
}

type Session = PresentationSession | PresentationSessionV1

/** What a request asks for, read from the request the wallet resolved. */
interface Asked {
  profile: 'pe' | '1.0'
  formats: Set<string>
  responseMode: string | undefined
  requestUriMethod: 'get' | 'post' | undefined
}

const JWT_OR_LDP = ['jwt_vc_json', 'jwt_vp_json', 'jwt_vc', 'jwt_vp', 'ldp_vc', 'ldp_vp', 'ldp']
const SD_JWT = ['dc+sd-jwt', 'vc+sd-jwt']
const LDP = ['ldp_vc', 'ldp_vp', 'ldp']
const MDOC = ['mso_mdoc']

function askedOf(session: Session): Asked {
  if ('dcqlQuery' in session) {
    const v1 = session
    const formats = new Set(v1.dcqlQuery.credentials.map((q) => q.format as string))
    return {
      profile: '1.0',
      formats,
      responseMode: v1.responseMode,
      requestUriMethod: v1.request.requestUriMethod,
    }
  }
  const pe = session as PresentationSession
  const definition = pe.presentationDefinition as unknown as Record<string, unknown>
  const formats = new Set<string>()
  const addFormats = (value: unknown) => {
    if (isObject(value)) for (const name of Object.keys(value)) formats.add(name)
  }
  addFormats(definition.format)
  const descriptors = Array.isArray(definition.input_descriptors) ? definition.input_descriptors : []
  for (const d of descriptors) if (isObject(d)) addFormats(d.format)
  if (formats.size === 0) formats.add('jwt_vc_json')
  return {
    profile: 'pe',
    formats,
    responseMode:
      typeof pe.requestPayload.response_mode === 'string' ? pe.requestPayload.response_mode : undefined,
    requestUriMethod: undefined,
  }
}

const any = (asked: Asked, names: readonly string[]) => names.some((n) => asked.formats.has(n))

/** Why the case does not apply to this request, or undefined. */
function inapplicable(c: ServerCase, asked: Asked): string | undefined {
  const formats = [...asked.formats].join(', ')
  switch (c.name) {
    case 'vp-foreign-key':
    case 'vp-wrong-nonce':
    case 'vp-wrong-aud':
    case 'tampered-credential':
    case 'untrusted-issuer':
      return any(asked, JWT_OR_LDP)
        ? undefined
        : `the request asks for ${formats}: no JWT VP or ldp_vp to misbehave in`
    case 'sd-tampered-disclosure':
    case 'sd-issuer-signature':
    case 'kb-missing':
    case 'kb-wrong-sd-hash':
    case 'kb-wrong-nonce':
    case 'kb-wrong-aud':
    case 'kb-stale-iat':
    case 'kb-future-iat':
    case 'kb-bad-signature':
      return any(asked, SD_JWT) && asked.profile === '1.0'
        ? undefined
        : `the request asks for ${formats}: no SD-JWT VC`
    case 'mdoc-happy-flow':
    case 'mdoc-wrong-nonce':
    case 'mdoc-wrong-client-id':
    case 'mdoc-wrong-response-uri':
    case 'mdoc-foreign-device-key':
    case 'mdoc-tampered-element':
      return any(asked, MDOC) && asked.profile === '1.0'
        ? undefined
        : `the request asks for ${formats}: no ISO mdoc (mso_mdoc)`
    case 'ldp-undefined-term':
      return any(asked, LDP) ? undefined : `the request asks for ${formats}: no Linked Data presentation`
    case 'vp-replayed':
    case 'lying-submission':
    case 'revoked-credential':
      return asked.profile === 'pe'
        ? undefined
        : 'the request is an OpenID4VP 1.0 (DCQL) request: the case is about Presentation Exchange'
    case 'vp-token-wrong-id':
      return asked.profile === '1.0'
        ? undefined
        : 'the request is a Presentation Exchange request: no DCQL vp_token'
    case 'plain-response':
    case 'jwe-wrong-key':
      return asked.responseMode === 'direct_post.jwt'
        ? undefined
        : `the request's response_mode is ${asked.responseMode ?? 'direct_post'}, not direct_post.jwt`
    case 'request-uri-post':
      return asked.requestUriMethod === 'post'
        ? undefined
        : 'the request does not say request_uri_method=post'
    default:
      return undefined
  }
}

/** A fresh wallet per case, its credentials received now (or copied from the user's wallet file). */
async function walletFor(
  ctx: VerifierTestContext,
  revoked: boolean,
): Promise<{ wallet: Wallet; cleanup: () => void }> {
  if (ctx.walletFile) {
    const dir = mkdtempSync(join(tmpdir(), 'vc-harness-verifier-test-'))
    const file = join(dir, 'wallet.json')
    copyFileSync(ctx.walletFile, file)
    const wallet = await Wallet.create({
      file,
      fetch: ctx.recorder.fetch,
      trustAnchors: ctx.trustAnchors,
      http: { timeoutMs: 20_000 },
    })
    return { wallet, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
  }
  const wallet = await Wallet.create({
    keyType: ctx.keyType,
    fetch: ctx.recorder.fetch,
    trustAnchors: ctx.trustAnchors,
    http: { timeoutMs: 20_000 },
  })
  const supply = ctx.supply as CredentialSupply
  await ctx.recorder.muted(() =>
    revoked ? (supply.revoked as NonNullable<CredentialSupply['revoked']>)(wallet) : supply.fill(wallet),
  )
  return { wallet, cleanup: () => {} }
}

async function startSession(wallet: Wallet, link: string): Promise<Session> {
  return isV1Link(parsePresentationLink(link))
    ? wallet.startPresentationV1(link)
    : wallet.startPresentation(link)
}

/** The verifier's verdict on an answer: its HTTP answer, then what it reports elsewhere. */
async function judged(
  c: ServerCase,
  request: AuthorizationRequest,
  session: Session,
  answer: () => Promise<PresentationResult>,
  note: (line: string) => void,
): Promise<ServerVerdict> {
  const must = c.expect === 'refuse' ? `${c.rule ?? c.title} (${c.sources.join(' ')})` : c.title
  let result: PresentationResult
  try {
    result = await answer()
  } catch (error) {
    if (error instanceof WalletProtocolError && error.step === 'response' && error.status >= 400) {
      note(`response: ${answerText(error)}`)
      return c.expect === 'refuse'
        ? passed('refused', `refused as required: the response was answered ${answerText(error)}`)
        : failed('refused', `${must}: the verifier refused a correct response: ${answerText(error)}`)
    }
    return presentationStopped(error)
  }
  note(`response: ${result.httpStatus}${result.redirectUri ? ` with redirect_uri` : ''}`)
  let reported: { accepted: boolean | undefined; detail: string } | undefined
  if (request.result) {
    reported = await request.result({ state: session.state, session: session.sessionId })
    note(`reported: ${reported.detail}`)
  }
  const accepted = reported?.accepted ?? true
  if (reported && reported.accepted === undefined && c.expect === 'refuse')
    return failed(
      'accepted',
      `${must}: the verifier answered ${result.httpStatus} and reported no rejection (${reported.detail})`,
    )
  if (c.expect === 'refuse') {
    return accepted
      ? failed(
          'accepted',
          `${must}: the verifier accepted it (answered ${result.httpStatus}${reported ? `; ${reported.detail}` : '; give --result-command if it reports its verdict elsewhere'})`,
        )
      : passed('refused', `rejected as required: answered ${result.httpStatus}, ${reported?.detail}`)
  }
  return accepted
    ? passed('accepted', `accepted: answered ${result.httpStatus}${reported ? `; ${reported.detail}` : ''}`)
    : failed('refused', `${must}: the verifier rejected a correct presentation: ${reported?.detail}`)
}

function presentationStopped(error: unknown): ServerVerdict {
  if (error instanceof DcqlUnsatisfiedError || error instanceof NoMatchingCredentialsError)
    return nothing(
      `the wallet holds nothing the request asks for (${(error as Error).message}); configure the verifier with what --list-trust prints, or use --wallet with your own credentials`,
    )
  if (error instanceof WalletProtocolError && error.step === 'request')
    return nothing(`the wallet could not use the authorization request: ${error.message}`)
  if (error instanceof WalletUsageError) return notApplicable(error.message)
  return stepFailed('response', error)
}

/**
 * A case over the W3C Digital Credentials API (OpenID4VP 1.0 Appendix A): the harness is the browser and the
 * platform. It takes a fresh request entry and the page's origin from the source, has the wallet answer it
 * for that origin (correctly, or with the case's misbehaviour in how the answer is bound), posts the
 * DigitalCredential with the origin to where the page posts it, and judges the verifier's answer (2xx
 * accepted, 4xx refused) and, where it reports its verdict elsewhere, that verdict.
 */
async function dcApiCase(
  ctx: VerifierTestContext,
  c: ServerCase,
  wallet: Wallet,
  note: (line: string) => void,
): Promise<ServerVerdict> {
  if (!ctx.requests.nextDcApi)
    return notApplicable(
      'the source gives no request over the Digital Credentials API (a relying-party template with dcql.dcApi, or --dc-api-command)',
    )
  let ask: DcApiAsk | undefined
  try {
    ask = await ctx.requests.nextDcApi(ctx.recorder.fetch)
  } catch (error) {
    return nothing(`no request over the Digital Credentials API: ${(error as Error).message}`)
  }
  if (!ask)
    return notApplicable(
      "the verifier's session offers no request over the Digital Credentials API (4.6 answered no dcApi: its template sets no dcql.dcApi)",
    )
  const url = new URL(ask.response)
  if (!ctx.recorder.isAllowed(ask.response)) ctx.recorder.allow(url.host)
  note(`request over the DC API: ${ask.request.protocol}, answered for origin ${ask.origin}`)
  const misbehave = c.misbehave as PresentationMisbehaviour | undefined
  let answer: { response: { protocol: string; data: Record<string, unknown> } }
  try {
    answer = await wallet.presentDcApi(
      { request: ask.request, origin: ask.origin },
      misbehave ? { misbehave: [misbehave] } : {},
    )
  } catch (error) {
    if (isDcApiRefusal(error))
      return nothing(`the wallet could not use the request over the DC API: ${error.message}`)
    return presentationStopped(error)
  }
  let status: number
  let body: string
  try {
    const response = await ctx.recorder.fetch(ask.response, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ origin: ask.origin, ...answer.response }),
      redirect: 'manual',
    })
    status = response.status
    body = (await response.text()).slice(0, 300)
  } catch (error) {
    return nothing(`the answer could not be posted to ${ask.response}: ${(error as Error).message}`)
  }
  note(`response: ${status}${status >= 400 ? ` ${body}` : ''}`)
  const must = c.expect === 'refuse' ? `${c.rule ?? c.title} (${c.sources.join(' ')})` : c.title
  if (status >= 500 || status < 200 || (status >= 300 && status < 400))
    return c.expect === 'refuse' && status >= 500
      ? failed('nothing', `${must}: the verifier answered ${status} (a server error, not a refusal): ${body}`)
      : failed(
          c.expect === 'refuse' ? 'accepted' : 'refused',
          `${must}: the verifier answered ${status}: ${body}`,
        )
  if (status >= 400)
    return c.expect === 'refuse'
      ? passed('refused', `refused as required: the answer was answered ${status} ${body}`)
      : failed('refused', `${must}: the verifier refused a correct answer: ${status} ${body}`)
  let reported: ReportedResult | undefined
  if (ask.result) {
    reported = await ask.result()
    note(`reported: ${reported.detail}`)
  }
  if (c.expect === 'refuse') {
    return reported?.accepted === false
      ? passed('refused', `rejected as required: answered ${status}, ${reported.detail}`)
      : failed(
          'accepted',
          `${must}: the verifier accepted it (answered ${status}${reported ? `; ${reported.detail}` : ''})`,
        )
  }
  return reported?.accepted === false
    ? failed('refused', `${must}: the verifier rejected a correct answer: ${reported.detail}`)
    : passed('accepted', `accepted: answered ${status}${reported ? `; ${reported.detail}` : ''}`)
}

/**
 * Pre-flight: one request, resolved and checked the way the wallet does (request object, signature, client
 * identifier prefix). Throws a message naming what is wrong before any case runs; answers what it asks for.
 */
export async function probeVerifier(ctx: VerifierTestContext): Promise<string> {
  const wallet = await Wallet.create({
    keyType: ctx.keyType,
    fetch: ctx.recorder.fetch,
    trustAnchors: ctx.trustAnchors,
  })
  if (ctx.requests.links === false) {
    // requests over the DC API alone: one is resolved and checked the way the wallet does
    const ask = await ctx.requests.nextDcApi?.(ctx.recorder.fetch)
    if (!ask) throw new Error('the DC API source gave no request')
    ctx.recorder.allow(new URL(ask.response).host)
    let resolved: Awaited<ReturnType<typeof resolveDcApiRequest>>
    try {
      resolved = await resolveDcApiRequest(
        { request: ask.request, origin: ask.origin },
        { trustAnchors: ctx.trustAnchors, now: Date.now() },
      )
    } catch (error) {
      throw new Error(`the first request over the DC API could not be used: ${(error as Error).message}`)
    }
    return `OpenID4VP 1.0 over the Digital Credentials API only, ${resolved.protocol}, ${resolved.responseMode}, client ${resolved.clientId}`
  }
  const request = await ctx.requests.next()
  let session: Session
  try {
    session = await startSession(wallet, request.link)
  } catch (error) {
    throw new Error(`the first authorization request could not be used: ${(error as Error).message}`)
  }
  const asked = askedOf(session)
  return `${asked.profile === '1.0' ? 'OpenID4VP 1.0 with DCQL' : 'Presentation Exchange (draft 20)'}, ${[...asked.formats].join(', ')}, ${asked.responseMode ?? 'direct_post'}, client_id ${session.clientId}`
}

/** The verifier plan's case code over `ctx`. */
export function verifierCaseCode(ctx: VerifierTestContext): CaseCode {
  return async (c, note) => {
    const revokedCase = c.name === 'revoked-credential'
    if (revokedCase && !ctx.supply?.revoked)
      return notApplicable(
        'the credentials come from a wallet file: the harness cannot revoke one (use its test issuer or a profile)',
      )
    const { wallet, cleanup } = await walletFor(ctx, revokedCase)
    try {
      return await runCase(ctx, c, wallet, note)
    } finally {
      cleanup()
    }
  }
}

async function nextSession(
  ctx: VerifierTestContext,
  wallet: Wallet,
): Promise<{ request: AuthorizationRequest; session: Session } | ServerVerdict> {
  let request: AuthorizationRequest
  try {
    request = await ctx.requests.next()
  } catch (error) {
    return nothing(`no authorization request: ${(error as Error).message}`)
  }
  try {
    return { request, session: await startSession(wallet, request.link) }
  } catch (error) {
    return presentationStopped(error)
  }
}

const isVerdict = (value: unknown): value is ServerVerdict => isObject(value) && 'outcome' in value

async function runCase(
  ctx: VerifierTestContext,
  c: ServerCase,
  wallet: Wallet,
  note: (line: string) => void,
): Promise<ServerVerdict> {
  if (c.name.startsWith('dc-api-')) return dcApiCase(ctx, c, wallet, note)
  if (ctx.requests.links === false)
    return notApplicable('the verifier is asked over the Digital Credentials API only (no --request-command)')
  if (c.name === 'request-uri-twice') {
    let request: AuthorizationRequest
    try {
      request = await ctx.requests.next()
    } catch (error) {
      return nothing(`no authorization request: ${(error as Error).message}`)
    }
    const params = new URL(request.link.replace(/^[a-z0-9+.-]+:\/\/\/?/i, 'https://x/')).searchParams
    const requestUri = params.get('request_uri')
    if (!requestUri)
      return notApplicable('the request is passed by value: there is no request_uri to fetch twice')
    const method = params.get('request_uri_method') === 'post' ? 'POST' : 'GET'
    try {
      const first = await ctx.recorder.fetch(requestUri, {
        method,
        headers: { accept: 'application/oauth-authz-req+jwt, application/jwt' },
        ...(method === 'POST' ? { body: new URLSearchParams(), redirect: 'manual' } : { redirect: 'manual' }),
      })
      await first.arrayBuffer()
      if (first.status !== 200)
        return failed('refused', `the first fetch of request_uri answered ${first.status}`)
      note(`request_uri fetched once by the harness: ${first.status}`)
    } catch (error) {
      return nothing(`request_uri got no answer: ${(error as Error).message}`)
    }
    let session: Session
    try {
      session = await startSession(wallet, request.link)
    } catch (error) {
      if (error instanceof WalletProtocolError && error.step === 'request')
        return failed(
          'refused',
          `${c.title}: the second fetch of request_uri did not give a usable request: ${error.message} (${c.sources.join(' ')})`,
        )
      return presentationStopped(error)
    }
    return judged(c, request, session, () => session.respond(), note)
  }
  const started = await nextSession(ctx, wallet)
  if (isVerdict(started)) return started
  const { request, session } = started
  const asked = askedOf(session)
  note(
    `request: ${asked.profile === '1.0' ? 'OpenID4VP 1.0 DCQL' : 'Presentation Exchange'}, ${[...asked.formats].join(', ')}, ${asked.responseMode ?? 'direct_post'}`,
  )
  const why = inapplicable(c, asked)
  if (why) return notApplicable(why)
  const misbehave = c.misbehave as PresentationMisbehaviour | undefined
  if (c.name === 'vp-replayed') {
    // first a correct answer to this request, then that VP again to a new one
    try {
      await session.respond()
    } catch (error) {
      return stepFailed('response', error)
    }
    const second = await nextSession(ctx, wallet)
    if (isVerdict(second)) return second
    return judged(
      c,
      second.request,
      second.session,
      () => second.session.respond({ misbehave: ['vp-replayed'] }),
      note,
    )
  }
  if (c.name === 'response-replayed') {
    let first: PresentationResult
    try {
      first = await session.respond()
    } catch (error) {
      return error instanceof WalletProtocolError && error.step === 'response' && error.status >= 400
        ? failed('refused', `the verifier refused the first, correct response: ${answerText(error)}`)
        : presentationStopped(error)
    }
    note(`first response: ${first.httpStatus}`)
    let again: Response
    try {
      again = await ctx.recorder.fetch(first.responseUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(first.form),
        redirect: 'manual',
      })
      await again.arrayBuffer()
    } catch (error) {
      return nothing(`the second post got no answer: ${(error as Error).message}`)
    }
    return again.status >= 400 && again.status < 500
      ? passed('refused', `refused as required: the same response posted again was answered ${again.status}`)
      : failed(
          'accepted',
          `${c.rule}: the verifier answered ${again.status} to the same response posted again (${c.sources.join(' ')})`,
        )
  }
  return judged(c, request, session, () => session.respond(misbehave ? { misbehave: [misbehave] } : {}), note)
}
