import { randomBytes, timingSafeEqual } from 'node:crypto'
import { isObject } from '../../shared/json.ts'
import {
  ClientAttestationError,
  type VerifiedClientAttestation,
  verifyClientAttestation,
  type WalletProviderTrust,
} from '../../shared/oauth/client-attestation.ts'
import type { VerifiedDpop } from '../../shared/oauth/dpop.ts'
import { CODE_VERIFIER, s256 } from '../../shared/oauth/pkce.ts'
import { OPENID_CREDENTIAL, PAR_REQUEST_URI_PREFIX } from '../../shared/wire.ts'
import type { Oid4vciOptions } from '../config/schema.ts'
import { OAuthError } from '../errors/oauth.ts'
import type { IssuanceService } from '../issuance/service.ts'
import type { AuthorizationRecord, ProcessRecord, Store, TemplateRecord } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import type { DpopGate } from './dpop.ts'
import {
  authorizationCodeEnabled,
  offersAuthorizationCode,
  type PreAuthorizedGrants,
  sha256,
} from './grants.ts'
import { requireIssuer } from './metadata.ts'

// The authorization server of each tenant's credential issuer for the authorization code flow (OpenID4VCI 1.0
// §5 and §6, as HAIP 1.0 §4 profiles it): pushed authorization requests (RFC 9126, required), PKCE S256
// (RFC 7636), the user step at the authorization endpoint, the authorization response with iss (RFC 9207),
// the token request with the code, DPoP (RFC 9449) and wallet attestation (OAuth 2.0 Attestation-Based
// Client Authentication). The process and everything after the token (credential, deferred, notification)
// stay the pre-authorized flow's: only how the wallet obtains its access token differs.

/** The headers a wallet authenticates with, as the routes hand them over. */
export interface ClientHeaders {
  dpop?: string | string[] | undefined
  attestation?: string | string[] | undefined
  attestationPop?: string | string[] | undefined
}

export interface AuthorizationDeps {
  store: Store
  clock: Clock
  urls: PublicUrls
  options: Oid4vciOptions
  grants: PreAuthorizedGrants
  issuance: IssuanceService
  dpop: DpopGate
  /** The wallet providers a tenant trusts (tenants[].walletProviders, testWalletProvider). */
  walletProviders(tenantId: string): readonly WalletProviderTrust[]
}

/** What the routes ask of the authorization server; a wallet test wraps it (faults/issuer.ts). */
export type AuthorizationEndpoints = Pick<AuthorizationServer, 'par' | 'authorize' | 'decide'>

/** What the authorization endpoint answers: a redirect (the authorization response), or the page of the user step. */
export type AuthorizationAnswer =
  | { redirect: string }
  | {
      page: {
        requestUri: string
        clientId: string
        credential: string
        issuer: string
        tenantId: string
        /** Where the decision's redirect goes: the page's CSP form-action must allow it. */
        redirectUri: string
      }
    }

type Form = Record<string, unknown>

const MAX_PARAM = 2048
const MAX_DETAILS = 8 * 1024
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/

/** A single-valued form parameter (a repeated one is refused, RFC 6749 §3.1), or undefined. */
function param(form: Form, name: string, max = MAX_PARAM): string | undefined {
  const value = form[name]
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `${name} must be sent once`)
  if (value.length > max) throw new OAuthError('invalid_request', `${name} is longer than ${max} characters`)
  return value
}

function required(form: Form, name: string, why: string, max?: number): string {
  const value = param(form, name, max)
  if (value === undefined || value === '')
    throw new OAuthError('invalid_request', `${name} is required (${why})`)
  return value
}

const equalText = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** RFC 6749 §3.1.2: an absolute URI without a fragment. */
function checkRedirectUri(uri: string) {
  let parsed: URL
  try {
    parsed = new URL(uri)
  } catch {
    throw new OAuthError('invalid_request', 'redirect_uri must be an absolute URI (RFC 6749 §3.1.2)')
  }
  if (parsed.hash !== '' || uri.includes('#'))
    throw new OAuthError('invalid_request', 'redirect_uri must not have a fragment (RFC 6749 §3.1.2)')
  if (parsed.protocol === 'javascript:' || parsed.protocol === 'data:')
    throw new OAuthError('invalid_request', `redirect_uri scheme ${parsed.protocol} is not allowed`)
}

export class AuthorizationServer {
  constructor(private readonly deps: AuthorizationDeps) {}

  private issuer(tenantId: string) {
    return this.deps.urls.credentialIssuer(tenantId)
  }

  /** The endpoints' public URLs (what DPoP proofs name in htu, and the metadata announces). */
  endpoint(tenantId: string, name: 'par' | 'authorize' | 'token') {
    return `${this.issuer(tenantId)}/${name}`
  }

  /**
   * Wallet attestation at PAR and token (draft-ietf-oauth-attestation-based-client-auth-07 §6.2, HAIP 1.0
   * §4.3): checked whenever sent, required when the template says so; the PoP's jti single use.
   */
  private async attested(
    tenantId: string,
    template: TemplateRecord<'issuance'>,
    headers: ClientHeaders,
    clientId: string | undefined,
  ): Promise<VerifiedClientAttestation | undefined> {
    const requiredHere = (template.body.authorization?.clientAttestation ?? 'required') === 'required'
    if (headers.attestation === undefined && headers.attestationPop === undefined && !requiredHere)
      return undefined
    const { clock, options, store } = this.deps
    let verified: VerifiedClientAttestation
    try {
      verified = await verifyClientAttestation(headers.attestation, headers.attestationPop, {
        audience: this.issuer(tenantId),
        trust: this.deps.walletProviders(tenantId),
        now: clock.now(),
        maxPopAgeSeconds: options.dpopProofMaxAgeSeconds,
        ...(clientId !== undefined ? { clientId } : {}),
      })
    } catch (error) {
      if (error instanceof ClientAttestationError) throw new OAuthError('invalid_client', error.message)
      throw error
    }
    if (
      !(await store.nonces.use(
        `attestation-pop:${verified.instanceJkt}:${verified.popJti}`,
        tenantId,
        verified.popExpiresAt,
      ))
    ) {
      throw new OAuthError('invalid_client', 'this client attestation PoP was used before: its jti is spent')
    }
    return verified
  }

  /** The configuration a pushed request asks for: authorization_details (OpenID4VCI 1.0 §5.1.1) or scope (§5.1.2). */
  private requested(form: Form): {
    configurationId?: string
    details: Record<string, unknown>[] | null
    scope: string | null
  } {
    const rawDetails = param(form, 'authorization_details', MAX_DETAILS)
    const scope = param(form, 'scope') ?? null
    if (rawDetails === undefined) {
      if (scope === null) return { details: null, scope: null }
      const scopes = scope.split(' ').filter(Boolean)
      if (scopes.length !== 1) {
        throw new OAuthError(
          'invalid_scope',
          'scope must name exactly one credential configuration (OpenID4VCI 1.0 §5.1.2)',
        )
      }
      return { configurationId: scopes[0], details: null, scope }
    }
    let details: unknown
    try {
      details = JSON.parse(rawDetails)
    } catch {
      throw new OAuthError('invalid_authorization_details', 'authorization_details is not JSON (RFC 9396 §2)')
    }
    if (!Array.isArray(details) || details.length !== 1 || !isObject(details[0])) {
      throw new OAuthError(
        'invalid_authorization_details',
        'authorization_details must be an array of one object: one credential configuration per authorization here',
      )
    }
    const [detail] = details as Record<string, unknown>[]
    if (detail?.type !== OPENID_CREDENTIAL) {
      throw new OAuthError(
        'invalid_authorization_details',
        `authorization_details type must be "${OPENID_CREDENTIAL}" (OpenID4VCI 1.0 §5.1.1)`,
      )
    }
    if (typeof detail.credential_configuration_id !== 'string') {
      throw new OAuthError(
        'invalid_authorization_details',
        'authorization_details needs a credential_configuration_id (OpenID4VCI 1.0 §5.1.1)',
      )
    }
    return { configurationId: detail.credential_configuration_id, details: [detail], scope }
  }

  /** The process an offer's issuer_state names, PENDING and offering the authorization code grant. */
  private async offered(tenantId: string, issuerState: string): Promise<ProcessRecord> {
    const processId = this.deps.grants.processOfIssuerState(issuerState)
    const found = processId && (await this.deps.store.grants.withProcess({ processId }))
    if (!found || found.process.tenantId !== tenantId) {
      throw new OAuthError(
        'invalid_request',
        'issuer_state is not one this credential issuer gave out (OpenID4VCI 1.0 §5.1.3)',
      )
    }
    const { process, grant } = found
    if (process.status !== 'PENDING')
      throw new OAuthError('invalid_request', `the offer's process is ${process.status}`)
    if (grant.codeState !== 'live')
      throw new OAuthError('invalid_request', "the offer's process has an access token already")
    if (this.deps.clock.now() >= grant.codeExpiresAt)
      throw new OAuthError('invalid_request', 'the offer has expired')
    return process
  }

  /** RFC 9126 §2: a pushed authorization request; answers its request_uri (201). */
  async par(tenantId: string, form: Form, headers: ClientHeaders) {
    await requireIssuer(this.deps.store, tenantId)
    const { store, clock, options } = this.deps
    if (form.request !== undefined) {
      throw new OAuthError(
        'invalid_request',
        'request objects are not supported here: push the parameters themselves',
      )
    }
    if (form.request_uri !== undefined) {
      throw new OAuthError(
        'invalid_request',
        'a pushed authorization request must not carry request_uri (RFC 9126 §2.1)',
      )
    }
    const responseType = required(form, 'response_type', 'RFC 6749 §4.1.1')
    if (responseType !== 'code') {
      throw new OAuthError(
        'unsupported_response_type',
        `response_type must be "code", not ${JSON.stringify(responseType)}`,
      )
    }
    const clientId = required(form, 'client_id', 'RFC 6749 §4.1.1', 512)
    const redirectUri = required(
      form,
      'redirect_uri',
      'HAIP 1.0 §4.2: the wallet names where the response goes',
    )
    checkRedirectUri(redirectUri)
    const method = param(form, 'code_challenge_method')
    const challenge = param(form, 'code_challenge')
    if (challenge === undefined)
      throw new OAuthError(
        'invalid_request',
        'code_challenge is required: PKCE (RFC 7636 §4.3; HAIP 1.0 §4.2)',
      )
    if (method !== 'S256') {
      throw new OAuthError(
        'invalid_request',
        `code_challenge_method must be S256 (RFC 7636 §4.3; plain is not accepted, RFC 9700 §2.1.1), not ${JSON.stringify(method ?? 'plain')}`,
      )
    }
    if (!CHALLENGE.test(challenge))
      throw new OAuthError(
        'invalid_request',
        'code_challenge is not a base64url SHA-256 (43 characters, RFC 7636 §4.2)',
      )
    const state = param(form, 'state', 512) ?? null
    const issuerState = param(form, 'issuer_state')
    const asked = this.requested(form)
    const process = issuerState === undefined ? undefined : await this.offered(tenantId, issuerState)
    const configurationId = asked.configurationId ?? process?.templateId
    if (configurationId === undefined) {
      throw new OAuthError(
        'invalid_request',
        "name the credential: authorization_details, scope or an offer's issuer_state (OpenID4VCI 1.0 §5.1)",
      )
    }
    if (process && process.templateId !== configurationId) {
      throw new OAuthError(
        'invalid_authorization_details',
        `the offer is for "${process.templateId}", not "${configurationId}"`,
      )
    }
    const template = await store.templates.get(tenantId, configurationId, 'issuance')
    if (!template || !authorizationCodeEnabled(template)) {
      const code = asked.details
        ? 'invalid_authorization_details'
        : asked.scope
          ? 'invalid_scope'
          : 'invalid_request'
      throw new OAuthError(
        code,
        template
          ? `credential configuration "${configurationId}" is not issued with the authorization code flow`
          : `credential configuration "${configurationId}" is not in this issuer's metadata`,
      )
    }
    if (process && !offersAuthorizationCode(template)) {
      throw new OAuthError(
        'invalid_request',
        `the offer of "${configurationId}" does not carry the authorization_code grant`,
      )
    }
    if (!process && template.body.authorization?.walletInitiated === false) {
      throw new OAuthError(
        'invalid_request',
        `credential configuration "${configurationId}" is issued only from an offer: send its issuer_state`,
      )
    }
    const attestation = await this.attested(tenantId, template, headers, clientId)
    // RFC 9449 §10: a DPoP proof at PAR binds the code to its key (no nonce asked here: the token request is
    // where a nonce is required); dpop_jkt names the key without a proof.
    let dpop: VerifiedDpop | undefined
    if (headers.dpop !== undefined) {
      dpop = await this.deps.dpop.check(
        tenantId,
        headers.dpop,
        { htm: 'POST', htu: this.endpoint(tenantId, 'par') },
        'server',
        false,
      )
    }
    const dpopJkt = param(form, 'dpop_jkt')
    if (dpop && dpopJkt !== undefined && dpop.jkt !== dpopJkt) {
      throw new OAuthError(
        'invalid_dpop_proof',
        'dpop_jkt is not the thumbprint of the DPoP proof key (RFC 9449 §10.1)',
      )
    }
    const reference = randomBytes(32).toString('base64url')
    const now = clock.now()
    await store.authorizations.create({
      id: sha256(reference),
      tenantId,
      templateId: template.id,
      processId: process?.id ?? null,
      clientId,
      redirectUri,
      state,
      codeChallenge: challenge,
      dpopJkt: dpop?.jkt ?? dpopJkt ?? null,
      instanceJkt: attestation?.instanceJkt ?? null,
      details: asked.details,
      scope: asked.scope,
      stage: 'pushed',
      expiresAt: now + options.pushedRequestLifetimeSeconds * 1000,
      codeHash: null,
      createdAt: now,
    })
    return {
      request_uri: `${PAR_REQUEST_URI_PREFIX}${reference}`,
      expires_in: options.pushedRequestLifetimeSeconds,
    }
  }

  /** The pushed request a request_uri names, still usable, of this client (RFC 9126 §4). */
  private async pushed(tenantId: string, query: Form) {
    const requestUri = required(
      query,
      'request_uri',
      'RFC 9126 §4: this server requires pushed authorization requests',
    )
    const clientId = required(query, 'client_id', 'RFC 9126 §4')
    if (!requestUri.startsWith(PAR_REQUEST_URI_PREFIX)) {
      throw new OAuthError(
        'invalid_request_uri',
        'request_uri is not one this server gave out at its pushed authorization request endpoint',
      )
    }
    const found = await this.deps.store.authorizations.get(
      sha256(requestUri.slice(PAR_REQUEST_URI_PREFIX.length)),
    )
    if (!found || found.tenantId !== tenantId)
      throw new OAuthError('invalid_request_uri', 'request_uri is unknown to this authorization server')
    if (found.stage !== 'pushed')
      throw new OAuthError(
        'invalid_request_uri',
        'request_uri was already used (RFC 9126 §2.2: one time use)',
      )
    if (this.deps.clock.now() >= found.expiresAt)
      throw new OAuthError('invalid_request_uri', 'request_uri has expired (RFC 9126 §2.2)')
    if (!equalText(found.clientId, clientId))
      throw new OAuthError(
        'invalid_request',
        'client_id is not the client that pushed this request (RFC 9126 §4)',
      )
    const template = await this.deps.store.templates.get(tenantId, found.templateId, 'issuance')
    if (!template)
      throw new OAuthError('invalid_request_uri', `credential configuration "${found.templateId}" is gone`)
    return { authorization: found, template, requestUri }
  }

  /**
   * The authorization endpoint (RFC 6749 §4.1.1 with RFC 9126 §4): the user step. A template in test mode
   * (`authorization.userStep: auto`) approves at once and answers the redirect; otherwise the page asks.
   */
  async authorize(tenantId: string, query: Form): Promise<AuthorizationAnswer> {
    const { authorization, template, requestUri } = await this.pushed(tenantId, query)
    if ((template.body.authorization?.userStep ?? 'page') === 'auto') {
      return { redirect: await this.complete(authorization, template, true) }
    }
    return {
      page: {
        requestUri,
        clientId: authorization.clientId,
        credential: template.body.display?.name ?? template.body.credentialType,
        issuer: this.issuer(tenantId),
        tenantId,
        redirectUri: authorization.redirectUri,
      },
    }
  }

  /** The page's answer: approve or decline, then the authorization response. */
  async decide(tenantId: string, form: Form): Promise<{ redirect: string }> {
    const { authorization, template } = await this.pushed(tenantId, form)
    const decision = param(form, 'decision')
    if (decision !== 'approve' && decision !== 'decline')
      throw new OAuthError('invalid_request', 'decision must be approve or decline')
    return { redirect: await this.complete(authorization, template, decision === 'approve') }
  }

  /** The authorization response (RFC 6749 §4.1.2, with iss: RFC 9207 §2) for an approved or declined request. */
  private async complete(
    authorization: AuthorizationRecord,
    template: TemplateRecord<'issuance'>,
    approved: boolean,
  ) {
    const { store, clock, options, issuance } = this.deps
    const answer = new URL(authorization.redirectUri)
    const respond = (params: Record<string, string>) => {
      for (const [k, v] of Object.entries(params)) answer.searchParams.set(k, v)
      if (authorization.state !== null) answer.searchParams.set('state', authorization.state)
      answer.searchParams.set('iss', this.issuer(authorization.tenantId))
      return answer.toString()
    }
    const now = clock.now()
    if (!approved) {
      if (!(await store.authorizations.deny(authorization.id, now))) {
        throw new OAuthError(
          'invalid_request_uri',
          'request_uri was already used (RFC 9126 §2.2: one time use)',
        )
      }
      return respond({ error: 'access_denied', error_description: 'the person declined the issuance' })
    }
    const code = randomBytes(32).toString('base64url')
    const content = authorization.processId === null ? await issuance.walletInitiatedContent(template) : null
    const opened = await store.transaction(async (repos) => {
      const process =
        authorization.processId === null
          ? await issuance.openForWalletIn(repos, template, content, now)
          : undefined
      const authorized = await repos.authorizations.authorize(authorization.id, {
        codeHash: sha256(code),
        expiresAt: now + options.authorizationCodeLifetimeSeconds * 1000,
        processId: process?.id ?? (authorization.processId as string),
        now,
      })
      if (!authorized)
        throw new OAuthError(
          'invalid_request_uri',
          'request_uri was already used (RFC 9126 §2.2: one time use)',
        )
      return process
    })
    if (opened) issuance.opened(opened)
    return respond({ code })
  }

  /**
   * The token request of the authorization code grant (RFC 6749 §4.1.3, OpenID4VCI 1.0 §6.1): the code of this
   * client, redirect_uri as pushed, the PKCE verifier (RFC 7636 §4.6), DPoP (required by default, HAIP 1.0
   * §4.3; bound to the key the pushed request named, RFC 9449 §10), the wallet attestation of the same client
   * instance. A replayed code revokes the access token it gave (RFC 6749 §4.1.2).
   */
  async token(tenantId: string, form: Form, headers: ClientHeaders) {
    const { store, clock, options, dpop: gate } = this.deps
    const code = required(form, 'code', 'RFC 6749 §4.1.3')
    const verifier = param(form, 'code_verifier')
    const redirectUri = param(form, 'redirect_uri')
    const dpop =
      headers.dpop === undefined
        ? undefined
        : await gate.check(
            tenantId,
            headers.dpop,
            { htm: 'POST', htu: this.endpoint(tenantId, 'token') },
            'server',
          )
    const codeHash = sha256(code)
    const authorization = await store.authorizations.byCode(codeHash)
    if (!authorization || authorization.tenantId !== tenantId) {
      // RFC 6749 §5.2: a tenant whose metadata announces no authorization code flow does not support the grant.
      const templates = await store.templates.list(tenantId, 'issuance')
      if (!templates.some(authorizationCodeEnabled)) {
        throw new OAuthError(
          'unsupported_grant_type',
          'grant_type "authorization_code" is not supported: none of this issuer\'s credential configurations is issued with it',
        )
      }
      throw new OAuthError('invalid_grant', 'the authorization code is unknown to this authorization server')
    }
    if (authorization.stage === 'redeemed') {
      if (authorization.processId) await store.grants.revokeToken(authorization.processId)
      throw new OAuthError(
        'invalid_grant',
        'the authorization code was already used; the access token it gave is revoked (RFC 6749 §4.1.2)',
      )
    }
    if (clock.now() >= authorization.expiresAt)
      throw new OAuthError('invalid_grant', 'the authorization code has expired')
    const template = await store.templates.get(tenantId, authorization.templateId, 'issuance')
    if (!template)
      throw new OAuthError('invalid_grant', `credential configuration "${authorization.templateId}" is gone`)
    if (!dpop && (template.body.authorization?.dpop ?? 'required') === 'required') {
      throw new OAuthError(
        'invalid_dpop_proof',
        'a DPoP proof is required at this token endpoint (RFC 9449 §5; HAIP 1.0 §4.3)',
        {
          headers: { 'DPoP-Nonce': gate.newNonce(tenantId) },
        },
      )
    }
    const formClientId = param(form, 'client_id', 512)
    const attestation = await this.attested(tenantId, template, headers, formClientId)
    const clientId = attestation?.clientId ?? formClientId
    if (clientId === undefined || !equalText(clientId, authorization.clientId)) {
      throw new OAuthError(
        'invalid_grant',
        'the authorization code was issued to another client (RFC 6749 §4.1.3)',
      )
    }
    if (authorization.instanceJkt !== null && attestation?.instanceJkt !== authorization.instanceJkt) {
      throw new OAuthError(
        'invalid_client',
        'the wallet attestation names another client instance key than at the pushed authorization request',
      )
    }
    if (redirectUri === undefined || redirectUri !== authorization.redirectUri) {
      throw new OAuthError(
        'invalid_grant',
        'redirect_uri is not the one of the authorization request (RFC 6749 §4.1.3)',
      )
    }
    if (verifier === undefined)
      throw new OAuthError(
        'invalid_grant',
        'code_verifier is required: the authorization request had a code_challenge (RFC 7636 §4.5)',
      )
    if (!CODE_VERIFIER.test(verifier) || !equalText(s256(verifier), authorization.codeChallenge)) {
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge (RFC 7636 §4.6)')
    }
    if (authorization.dpopJkt !== null && dpop?.jkt !== authorization.dpopJkt) {
      throw new OAuthError(
        'invalid_dpop_proof',
        'the code is bound to the DPoP key of the pushed request; this proof has another (RFC 9449 §10)',
      )
    }
    const processId = authorization.processId as string
    const accessToken = randomBytes(32).toString('base64url')
    const now = clock.now()
    const tokenExpiresAt = now + options.accessTokenLifetimeSeconds * 1000
    const redeemed = await store.transaction(async (repos) => {
      if (!(await repos.authorizations.redeem(authorization.id, now))) return 'replay'
      const found = await repos.grants.withProcess({ processId })
      if (!found) return 'the issuance process is gone'
      if (found.process.status !== 'PENDING') return `the issuance process is ${found.process.status}`
      if (
        !(await repos.grants.consumeCode(processId, sha256(accessToken), tokenExpiresAt, dpop?.jkt ?? null))
      ) {
        return "the offer's process has an access token already"
      }
      return 'ok'
    })
    if (redeemed === 'replay')
      throw new OAuthError('invalid_grant', 'the authorization code was already used (RFC 6749 §4.1.2)')
    if (redeemed !== 'ok') throw new OAuthError('invalid_grant', redeemed)
    return {
      access_token: accessToken,
      token_type: dpop ? 'DPoP' : 'Bearer',
      expires_in: options.accessTokenLifetimeSeconds,
      ...(authorization.details
        ? {
            authorization_details: authorization.details.map((detail) => ({
              ...detail,
              credential_identifiers: [
                this.deps.grants.credentialIdentifier(processId, authorization.templateId),
              ],
            })),
          }
        : {}),
      ...(authorization.scope ? { scope: authorization.scope } : {}),
    }
  }
}
