// The issuer plan's cases, carried out with the harness's wallet (src/wallet) against any OpenID4VCI issuer:
// each case takes a fresh offer from the source, creates a fresh wallet whose every request is recorded, and
// either completes the flow (positive cases) or sends the case's one misbehaviour and judges the refusal.
// The HAIP authorization code flow cases (`haip-*`) are issuer-haip.ts's, on the steps exported here.

import { setTimeout as sleep } from 'node:timers/promises'
import { isObject } from '../../shared/json.ts'
import { WalletProtocolError } from '../../wallet/errors.ts'
import type { IssuanceSession, IssuedCredentials } from '../../wallet/issuance.ts'
import {
  AUTHORIZATION_CODE_GRANT,
  type AuthorizationOptions,
  type IssuanceFlow,
} from '../../wallet/issuance-authorization.ts'
import type { IssuanceProtocol } from '../../wallet/issuance-v1.ts'
import type { IssuanceMisbehaviour, Misbehaviour } from '../../wallet/misbehaviour.ts'
import type { HolderKeyType } from '../../wallet/store.ts'
import { Wallet } from '../../wallet/wallet.ts'
import type { ExchangeRecorder } from './exchanges.ts'
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
import type { Offer, OfferSource } from './sources.ts'

export interface IssuerTestContext {
  offers: OfferSource
  recorder: ExchangeRecorder
  /** PEM anchors for x5c-signed credentials the issuer hands out */
  trustAnchors?: readonly string[]
  /** the OpenID4VCI generation to speak; default auto (the metadata decides) */
  protocol?: IssuanceProtocol
  /** how long the harness may wait for an access token to expire (token-expired); default 0 */
  tokenWaitMs?: number
  /** the deferred case's polling budget */
  deferredTimeoutMs?: number
  /**
   * How the wallet takes part in the authorization code flow: the wallet provider signing its attestation
   * (default vc-harness's published TEST provider, which the issuer must trust), redirect_uri, client_id, and
   * a user step for an authorization endpoint that shows a page (default none: the target must approve at once)
   */
  authorization?: AuthorizationOptions
}

/** What the pre-flight learned of the issuer: its identifier, generation and the holder key it takes. */
export interface IssuerProfile {
  credentialIssuer: string
  protocol: '1.0' | 'draft15'
  configurationId: string
  format?: string
  /** proof_signing_alg_values_supported of the offered configuration's jwt proof (undefined: not said) */
  proofAlgs?: string[]
  keyType: HolderKeyType
  /**
   * The issuer serves draft 15 beside 1.0: its 1.0 configuration also carries draft 15's top-level `display`
   * or `claims` (moved into credential_metadata by 1.0 §12.2.4). A draft-shaped request is then one it offers.
   */
  servesDraft15Too: boolean
  /** the grants of the first offer (OpenID4VCI 1.0 §4.1.1) */
  grants: { preAuthorized: boolean; authorizationCode: boolean }
  /** the authorization_code grant's authorization_server, when the offer names one */
  authorizationServer?: string
}

const KEY_OF_ALG: Record<string, HolderKeyType> = {
  EdDSA: 'Ed25519',
  Ed25519: 'Ed25519',
  ES256: 'P-256',
  ES256K: 'secp256k1',
}

/** The holder key of the positive flow: EdDSA where the issuer takes it, else its first algorithm we have. */
export function chooseKeyType(algs: readonly string[] | undefined): HolderKeyType {
  if (!algs || algs.length === 0 || algs.includes('EdDSA') || algs.includes('Ed25519')) return 'Ed25519'
  for (const alg of algs) {
    const type = KEY_OF_ALG[alg]
    if (type) return type
  }
  return 'Ed25519'
}

function proofAlgsOf(session: IssuanceSession, configurationId: string): string[] | undefined {
  const configuration = session.configurations[configurationId] as Record<string, unknown> | undefined
  const types = configuration?.proof_types_supported
  const jwt = isObject(types) ? types.jwt : undefined
  const algs = isObject(jwt) ? jwt.proof_signing_alg_values_supported : undefined
  return Array.isArray(algs) ? algs.filter((a): a is string => typeof a === 'string') : undefined
}

/** What to do when the authorization endpoint shows a page instead of redirecting at once. */
export const USER_STEP_HINT =
  'the authorization endpoint wants a person: an automated run needs the issuer to approve at once in a test mode (docs/server-testing.md "HAIP issuance")'
/** What to do when the pushed authorization request is refused for its client authentication. */
export const TRUST_HINT =
  "the issuer must trust the wallet provider that signs the wallet attestation: vc-harness issuer-test --list-trust prints its public key (the built-in TEST provider's unless --wallet-provider-key)"

/** The hint for a failed authorization step the harness knows the cause of: a person asked for, an untrusted wallet. */
export function authorizationHint(error: unknown): string | undefined {
  if (!(error instanceof WalletProtocolError)) return undefined
  if (error.error === 'interaction_required') return USER_STEP_HINT
  if (error.step === 'par' && (error.error === 'invalid_client' || error.status === 401)) return TRUST_HINT
  return undefined
}

/**
 * Pre-flight: one offer, the issuer metadata read the way the wallet reads it. Throws a message naming what
 * is wrong (the command, the offer, the metadata) before any case runs. An offer redeemed only with the
 * authorization code flow is also authorized (PAR, the authorization endpoint; nothing redeemed): an
 * endpoint that wants a person, or a wallet attestation the issuer does not trust, would stop every case.
 */
export async function probeIssuer(ctx: IssuerTestContext): Promise<IssuerProfile> {
  const offer = await ctx.offers.next('immediate')
  if (!offer) throw new Error('the offer source gave no offer')
  const wallet = await newWallet(ctx, 'Ed25519')
  let session: IssuanceSession
  try {
    session = await wallet.startIssuance(offer.link, ctx.protocol ? { protocol: ctx.protocol } : {})
  } catch (error) {
    throw new Error(`the first offer could not be read: ${(error as Error).message}`)
  }
  if (session.flow === 'authorization_code') {
    try {
      await session.authorize()
    } catch (error) {
      const hint = authorizationHint(error)
      if (hint)
        throw new Error(
          `the authorization step of the first offer failed (${(error as Error).message}): ${hint}`,
        )
      // anything else is the cases' to judge (haip-authorization-response, haip-metadata, …)
    }
  }
  const configurationId = session.offer.credential_configuration_ids[0] as string
  const configuration = session.configurations[configurationId] as Record<string, unknown> | undefined
  const proofAlgs = proofAlgsOf(session, configurationId)
  const grants = isObject(session.offer.grants) ? session.offer.grants : {}
  const codeGrant = grants[AUTHORIZATION_CODE_GRANT]
  const authorizationServer = isObject(codeGrant) ? codeGrant.authorization_server : undefined
  return {
    credentialIssuer: session.credentialIssuer,
    protocol: session.protocol,
    configurationId,
    ...(typeof configuration?.format === 'string' ? { format: configuration.format } : {}),
    ...(proofAlgs ? { proofAlgs } : {}),
    keyType: chooseKeyType(proofAlgs),
    servesDraft15Too:
      session.protocol === '1.0' &&
      configuration !== undefined &&
      ('display' in configuration || 'claims' in configuration),
    grants: {
      preAuthorized: isObject(grants['urn:ietf:params:oauth:grant-type:pre-authorized_code']),
      authorizationCode: isObject(codeGrant),
    },
    ...(typeof authorizationServer === 'string' ? { authorizationServer } : {}),
  }
}

export function newWallet(ctx: IssuerTestContext, keyType: HolderKeyType): Promise<Wallet> {
  return Wallet.create({
    keyType,
    fetch: ctx.recorder.fetch,
    ...(ctx.trustAnchors ? { trustAnchors: ctx.trustAnchors } : {}),
    ...(ctx.protocol ? { protocol: ctx.protocol } : {}),
    ...(ctx.authorization ? { authorization: ctx.authorization } : {}),
    // a case's window bounds it; one request may not take all of it
    http: { timeoutMs: 20_000 },
  })
}

export interface Started {
  offer: Offer
  wallet: Wallet
  session: IssuanceSession
}

/**
 * A fresh offer opened by a fresh wallet: the offer and the metadata read. `flow`: the flow that redeems it
 * (default: the offer's pre-authorized code where it has one, else the authorization code flow).
 */
export async function start(
  ctx: IssuerTestContext,
  keyType: HolderKeyType,
  kind: 'immediate' | 'deferred' = 'immediate',
  wallet?: Wallet,
  flow?: IssuanceFlow,
): Promise<Started | ServerVerdict> {
  let offer: Offer | undefined
  try {
    offer = await ctx.offers.next(kind)
  } catch (error) {
    return nothing(`no offer: ${(error as Error).message}`)
  }
  if (!offer)
    return notApplicable(
      'this source cannot make the issuer defer (give --deferred-offer-command and --complete-command, or use --profile)',
    )
  const holder = wallet ?? (await newWallet(ctx, keyType))
  try {
    const session = await holder.startIssuance(offer.link, {
      ...(ctx.protocol ? { protocol: ctx.protocol } : {}),
      ...(flow ? { flow } : {}),
    })
    return { offer, wallet: holder, session }
  } catch (error) {
    return stepFailed('offer', error)
  }
}

export const isVerdict = (value: unknown): value is ServerVerdict => isObject(value) && 'outcome' in value

/** Redeems the offer's code; a failure means the case's own request was never reached. */
async function redeem(s: Started): Promise<ServerVerdict | undefined> {
  try {
    await s.session.token({ ...(s.offer.txCode !== undefined ? { txCode: s.offer.txCode } : {}) })
    return undefined
  } catch (error) {
    return stepFailed('token', error)
  }
}

/** A credential request, completed through the deferred endpoint when the issuer answers 202. */
export async function obtain(
  ctx: IssuerTestContext,
  s: Started,
  note: (line: string) => void,
  signal: AbortSignal,
): Promise<IssuedCredentials> {
  const result = await s.session.requestCredential()
  if (result.status === 200) return result
  note(`credential: 202 transaction_id (deferred)`)
  await s.offer.complete?.(result.transactionId)
  return s.session.awaitDeferred(result.transactionId, {
    timeoutMs: ctx.deferredTimeoutMs ?? 30_000,
    signal,
  })
}

/** Verifies and keeps what was issued: the positive cases' proof that the credential is right. */
export async function verifyIssued(
  s: Started,
  issued: IssuedCredentials,
  note: (line: string) => void,
): Promise<ServerVerdict | undefined> {
  try {
    const stored = await s.session.accept(issued)
    note(
      `received and verified: ${stored.map((c) => `${c.format ?? 'jwt_vc_json'} ${c.types.join(',')}`).join('; ')}`,
    )
    return undefined
  } catch (error) {
    return failed(
      'accepted',
      `the issued credential does not verify: ${error instanceof WalletProtocolError ? error.message : (error as Error).message}`,
    )
  }
}

/** The case's credential request, which the issuer must refuse: its answer judged. */
export async function mustRefuseCredential(
  c: ServerCase,
  s: Started,
  misbehave: readonly IssuanceMisbehaviour[],
  what = '',
): Promise<ServerVerdict> {
  try {
    const result = await s.session.requestCredential({ misbehave })
    return issuedDespite(
      c,
      result.status === 200
        ? `issued a credential${what}`
        : `accepted the request${what} (202, a credential to come)`,
    )
  } catch (error) {
    return judgeRefusal(c, c.refusal as NonNullable<ServerCase['refusal']>, error)
  }
}

export function issuedDespite(c: ServerCase, what: string): ServerVerdict {
  return failed(
    'accepted',
    `${c.rule ?? c.title}: the issuer ${what} (${c.sources.join(' ')} requires a refusal)`,
  )
}

/** The issuer plan's case code over `ctx`, with the pre-flight's profile. */
export function issuerCaseCode(ctx: IssuerTestContext, profile: IssuerProfile): CaseCode {
  const keyType = profile.keyType
  return async (c, note, signal) => {
    switch (c.name) {
      case 'metadata':
      case 'metadata-appended':
        if (c.name === 'metadata-appended' && profile.protocol === '1.0' && !profile.servesDraft15Too)
          return notApplicable(
            'the issuer speaks OpenID4VCI 1.0 only: its metadata belongs at the §12.2.2 location, which the metadata case reads',
          )
        return metadataCase(ctx, c, keyType)
      case 'happy-flow':
      case 'proof-es256':
      case 'additional-requests':
      case 'notification':
      case 'deferred':
        return positive(ctx, c, c.name === 'proof-es256' ? 'P-256' : keyType, profile, note, signal)
      case 'nonce-reused':
        return nonceReused(ctx, c, keyType, note, signal)
      case 'token-expired':
        return tokenExpired(ctx, c, keyType, note, signal)
      default:
        if (c.name.startsWith('haip-')) throw new Error(`${c.id} is carried out by issuer-haip.ts`)
        return misbehaving(ctx, c, keyType, profile)
    }
  }
}

async function metadataCase(
  ctx: IssuerTestContext,
  c: ServerCase,
  keyType: HolderKeyType,
): Promise<ServerVerdict> {
  const s = await start(ctx, keyType)
  if (isVerdict(s)) return s
  const issuer = new URL(s.session.credentialIssuer)
  const path = issuer.pathname === '/' ? '' : issuer.pathname
  const inserted = `${issuer.origin}/.well-known/openid-credential-issuer${path}`
  const appended = `${s.session.credentialIssuer.replace(/\/$/, '')}/.well-known/openid-credential-issuer`
  if (c.name === 'metadata-appended' && inserted === appended)
    return notApplicable(
      'the issuer identifier has no path: both locations are one URL (the metadata case reads it)',
    )
  const url = c.name === 'metadata' ? inserted : appended
  let response: Response
  try {
    response = await ctx.recorder.fetch(url, { headers: { accept: 'application/json' } })
  } catch (error) {
    return nothing(`GET ${url} got no answer: ${(error as Error).message}`)
  }
  const where = `GET ${url}`
  if (response.status !== 200)
    return failed('refused', `${where} answered ${response.status} (${c.sources.join(' ')})`)
  let body: unknown
  try {
    body = await response.json()
  } catch {
    return failed('accepted', `${where} answered 200 but not JSON (${c.sources.join(' ')})`)
  }
  if (!isObject(body)) return failed('accepted', `${where} answered JSON that is not an object`)
  if (body.credential_issuer !== s.session.credentialIssuer)
    return failed(
      'accepted',
      `${where}: credential_issuer ${JSON.stringify(body.credential_issuer)} is not the offer's ${s.session.credentialIssuer} (OpenID4VCI 1.0 §12.2.2: it MUST be identical)`,
    )
  if (typeof body.credential_endpoint !== 'string')
    return failed('accepted', `${where}: no credential_endpoint (OpenID4VCI 1.0 §12.2.4: REQUIRED)`)
  const configurations = isObject(body.credential_configurations_supported)
    ? body.credential_configurations_supported
    : {}
  const missing = s.session.offer.credential_configuration_ids.filter((id) => !(id in configurations))
  if (missing.length > 0)
    return failed(
      'accepted',
      `${where}: credential_configurations_supported lacks the offered ${missing.join(', ')} (§12.2.4)`,
    )
  return passed(
    'accepted',
    `${where} answered the metadata: credential_issuer matches, credential_endpoint, ${Object.keys(configurations).length} configuration(s)`,
  )
}

async function positive(
  ctx: IssuerTestContext,
  c: ServerCase,
  keyType: HolderKeyType,
  profile: IssuerProfile,
  note: (line: string) => void,
  signal: AbortSignal,
): Promise<ServerVerdict> {
  if (c.name === 'proof-es256' && profile.proofAlgs && !profile.proofAlgs.includes('ES256'))
    return notApplicable(
      `the configuration's proof_signing_alg_values_supported is ${profile.proofAlgs.join(', ')}: no ES256`,
    )
  const s = await start(ctx, keyType, c.name === 'deferred' ? 'deferred' : 'immediate')
  if (isVerdict(s)) return s
  const stopped = await redeem(s)
  if (stopped) return stopped
  let issued: IssuedCredentials
  try {
    if (c.name === 'deferred') {
      const first = await s.session.requestCredential()
      if (first.status === 200)
        return failed(
          'accepted',
          'the issuer issued at once an offer whose content was held back: it did not defer (§9)',
        )
      note(`credential: 202 transaction_id ${first.transactionId.slice(0, 8)}… (deferred)`)
      await s.offer.complete?.(first.transactionId)
      issued = await s.session.awaitDeferred(first.transactionId, {
        timeoutMs: ctx.deferredTimeoutMs ?? 30_000,
        signal,
      })
    } else {
      issued = await obtain(ctx, s, note, signal)
    }
  } catch (error) {
    return error instanceof WalletProtocolError && error.status > 0
      ? failed(
          'refused',
          `${c.title}: the ${error.step} request was refused: ${answerText(error)} (${c.sources.join(' ')})`,
        )
      : stepFailed('credential', error)
  }
  const bad = await verifyIssued(s, issued, note)
  if (bad) return bad
  if (c.name === 'additional-requests') {
    try {
      const again = await obtain(ctx, s, note, signal)
      const worse = await verifyIssued(s, again, note)
      if (worse) return worse
      return passed(
        'accepted',
        'a second credential request on the same access token, with a fresh nonce, was answered with a credential that verifies',
      )
    } catch (error) {
      return error instanceof WalletProtocolError && error.status > 0
        ? failed(
            'refused',
            `the second credential request on the same access token was refused: ${answerText(error)} (OpenID4VCI 1.0 §8: an access token may serve several credential requests)`,
          )
        : stepFailed('credential', error)
    }
  }
  if (c.name === 'notification') {
    if (!issued.notificationId)
      return notApplicable('the credential response carried no notification_id (§8.3)')
    try {
      await s.session.notify('credential_accepted', { notificationId: issued.notificationId })
      return passed('accepted', 'the notification endpoint answered 2xx to credential_accepted')
    } catch (error) {
      if (error instanceof WalletProtocolError && error.status > 0)
        return failed(
          'refused',
          `the notification endpoint answered ${answerText(error)} to credential_accepted (§11.2 asks for 204)`,
        )
      return stepFailed('notification', error)
    }
  }
  return passed(
    'accepted',
    `issued a credential that verifies (${profile.protocol === '1.0' ? 'OpenID4VCI 1.0' : 'draft 15'}, ${s.session.flow === 'authorization_code' ? 'the authorization code flow: the offer grants no pre-authorized code, ' : ''}${keyType} key proof)`,
  )
}

/** The case's one misbehaviour at its step; the refusal judged. */
async function misbehaving(
  ctx: IssuerTestContext,
  c: ServerCase,
  keyType: HolderKeyType,
  profile: IssuerProfile,
): Promise<ServerVerdict> {
  const refusal = c.refusal
  const misbehave = c.misbehave as Misbehaviour | undefined
  if (!refusal || !misbehave) throw new Error(`case ${c.id} has no misbehaviour`)
  const v1Only = ['proof-legacy-shape', 'credential-format-legacy', 'unknown-identifier']
  if (v1Only.includes(c.name) && profile.protocol !== '1.0')
    return notApplicable(`the issuer speaks draft 15; ${c.name} is about an OpenID4VCI 1.0 issuer`)
  if ((c.name === 'proof-legacy-shape' || c.name === 'credential-format-legacy') && profile.servesDraft15Too)
    return notApplicable(
      "the issuer serves draft 15 beside 1.0 (its configuration carries draft 15's top-level display or claims besides credential_metadata): a draft-shaped request is one it offers",
    )
  const s = await start(ctx, keyType)
  if (isVerdict(s)) return s
  if ((c.name === 'tx-code-wrong' || c.name === 'tx-code-missing') && !s.session.txCodeSpec)
    return notApplicable('the offer asks for no tx_code (make the offer command print one that does)')
  if (refusal.step === 'token' && s.session.flow === 'authorization_code')
    return notApplicable(
      "the offer grants no pre-authorized code (only authorization_code): this case is about the pre-authorized code's token request; haip-code-replay redeems an authorization code twice",
    )
  if (refusal.step === 'token') {
    try {
      await s.session.token({
        ...(s.offer.txCode !== undefined && misbehave !== 'missing-tx-code'
          ? { txCode: s.offer.txCode }
          : {}),
        misbehave: [misbehave],
      })
      return issuedDespite(c, 'answered the token request with an access token')
    } catch (error) {
      return judgeRefusal(c, refusal, error)
    }
  }
  const stopped = await redeem(s)
  if (stopped) return stopped
  if ((c.name === 'unknown-configuration' || c.name === 'credential-format-legacy') && grantsIdentifiers(s))
    return notApplicable(
      'the token response granted credential_identifiers (OpenID4VCI 1.0 §6.2): the credential is then named by credential_identifier (§8.2), and a request naming a configuration or a format is malformed whatever it names; unknown-identifier tests the identifier',
    )
  return mustRefuseCredential(c, s, [misbehave])
}

/** Whether the token response's authorization_details granted credential_identifiers (OpenID4VCI 1.0 §6.2). */
function grantsIdentifiers(s: Started): boolean {
  const details = (s.session.tokenResponse as Record<string, unknown> | undefined)?.authorization_details
  return (
    Array.isArray(details) &&
    details.some(
      (d) => isObject(d) && Array.isArray(d.credential_identifiers) && d.credential_identifiers.length > 0,
    )
  )
}

/** A nonce consumed by a completed issuance of one offer, replayed in the request of another. */
async function nonceReused(
  ctx: IssuerTestContext,
  c: ServerCase,
  keyType: HolderKeyType,
  note: (line: string) => void,
  signal: AbortSignal,
): Promise<ServerVerdict> {
  const first = await start(ctx, keyType)
  if (isVerdict(first)) return first
  const stopped = await redeem(first)
  if (stopped) return stopped
  try {
    await obtain(ctx, first, note, signal)
    note('first offer: issued (its proof consumed a nonce)')
  } catch (error) {
    return stepFailed('credential', error)
  }
  const second = await start(ctx, keyType, 'immediate', first.wallet)
  if (isVerdict(second)) return second
  const again = await redeem(second)
  if (again) return again
  return mustRefuseCredential(c, second, ['replayed-nonce'])
}

/** A credential request after the access token's expires_in (only when the harness may wait that long). */
async function tokenExpired(
  ctx: IssuerTestContext,
  c: ServerCase,
  keyType: HolderKeyType,
  note: (line: string) => void,
  signal: AbortSignal,
): Promise<ServerVerdict> {
  const s = await start(ctx, keyType)
  if (isVerdict(s)) return s
  const stopped = await redeem(s)
  if (stopped) return stopped
  const expiresIn = Number(s.session.tokenResponse?.expires_in)
  if (!Number.isFinite(expiresIn) || expiresIn <= 0)
    return notApplicable(
      'the token response has no expires_in: the harness cannot know when the token expires',
    )
  const waitMs = (expiresIn + 2) * 1000
  if (waitMs > (ctx.tokenWaitMs ?? 0))
    return notApplicable(
      `the access token lives ${expiresIn} s; --token-wait ${Math.ceil(waitMs / 1000)} lets the harness wait for it to expire (and --case-timeout must be longer)`,
    )
  note(`waiting ${expiresIn + 2} s for the access token to expire`)
  await sleep(waitMs, undefined, { signal })
  return mustRefuseCredential(c, s, [], ' on an expired token')
}
