import { type JsonWebKey, randomBytes, randomUUID } from 'node:crypto'
import { DC_API_PROTOCOLS } from '../../shared/dc-api.ts'
import { MDOC_FORMAT } from '../../shared/mdoc.ts'
import type { Principal } from '../auth/tokens.ts'
import { DEFAULT_MULTISIGNED_PREFIXES, type ResolvedVerificationTemplate } from '../config/schema.ts'
import type { IssuerCertificates } from '../crypto/issuer-certificates.ts'
import type { TenantKey, TenantKeys } from '../crypto/tenant-keys.ts'
import { AppError } from '../errors/problem.ts'
import type { ServiceEvents } from '../events.ts'
import type { RequestObjectClaims, SessionRecord, Store } from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'
import { buildDcqlQuery } from './dcql-query.ts'
import { buildDefinition } from './definition.ts'
import { sessionChanged, sessionState } from './lifecycle.ts'

// Verification sessions for the relying party (sections 2.7–2.9, 4.6, 4.7): problem+json errors only.
// The wallet-facing verifier (request object, direct_post, the checks) is src/service/oid4vp/; this module
// asks a protocol profile for the authorization request through the AuthorizationRequests interface.

const SIGNING_ALGS = ['EdDSA', 'ES256', 'ES256K'] as const
/** The `scope` section 2.7's link carries. */
export const AUTH_REQUEST_SCOPE = 'openid'

/** What a protocol profile needs to build a session's authorization request. */
export interface RequestInput {
  tenantId: string
  sessionId: string
  /** `pe`: the section 2.8 definition. */
  definition?: Record<string, unknown>
  /** `dcql`: the DCQL query (OpenID4VP 1.0 §6) and the template's OpenID4VP settings. */
  dcqlQuery?: Record<string, unknown>
  settings?: NonNullable<ResolvedVerificationTemplate['dcql']>
  nonce: string
  state: string
  /** The tenant's EdDSA key (did:key): the PE profile's and decentralized_identifier's signer. */
  verifier: TenantKey<'EdDSA'>
  now: number
  expiresAt: number
}

/** What a profile built: the request object's claims, the signed request object, the deep link. */
export interface BuiltRequest {
  request: RequestObjectClaims
  /** '' when the request goes by value, unsigned (OpenID4VP 1.0 redirect_uri prefix). */
  requestJwt: string
  link: string
  /** direct_post.jwt: the private JWK that decrypts the response. */
  responseKey: JsonWebKey | null
}

/** What a new session asks before anything is built from it. */
export interface SessionAsk {
  tenantId: string
  /** Fresh per request (OpenID4VP 1.0 §5.2, §14.1). */
  nonce: string
  /** `dcql`: the template's OpenID4VP settings (format, client identifier prefix, response mode). */
  settings?: NonNullable<ResolvedVerificationTemplate['dcql']>
}

/**
 * A protocol profile's request builder (oid4vp/request.ts, oid4vp/request-v1.ts; oid4vp/profile.ts grows it
 * into the profile object that also reads the response).
 */
export interface AuthorizationRequests {
  /**
   * Optional: what a new session asks, changed or refused (an AppError) before its query and request are
   * built. The genuine profiles have none; a wrapper app.ts wires around them may (the wallet test plans'
   * faulty verifier).
   */
  prepare?(ask: SessionAsk): SessionAsk
  build(input: RequestInput): Promise<BuiltRequest>
  /** request_uri_method=post (OpenID4VP 1.0 §5.10): the request object signed with the wallet's nonce. */
  requestObjectFor?(session: SessionRecord, walletNonce: string | undefined): Promise<string>
}

export interface VerificationDeps {
  store: Store
  clock: Clock
  urls: PublicUrls
  tenantKeys: TenantKeys
  /** The tenant's test CA: the default trust anchor of x5c-certified SD-JWT VC issuers. */
  certificates: Pick<IssuerCertificates, 'trustAnchorPem' | 'iacaPem'>
  events: ServiceEvents
  /** One request builder per profile a template may choose. */
  requests: Record<SessionRecord['profile'], AuthorizationRequests>
}

const b64 = (bytes: number) => randomBytes(bytes).toString('base64url')

export class VerificationService {
  constructor(private readonly deps: VerificationDeps) {}

  /** Section 4.6: open a session for verification template `ssiConfigId`. */
  async createSession(principal: Principal, ssiConfigId: string) {
    if (principal.template !== null && principal.template !== ssiConfigId) {
      throw new AppError(
        'template_not_allowed',
        `this token was issued for template "${principal.template}"; ssiConfigId "${ssiConfigId}" is not allowed`,
      )
    }
    const { store, clock, urls, tenantKeys } = this.deps
    const template = await store.templates.get(principal.tenantId, ssiConfigId, 'verification')
    if (!template) {
      throw new AppError('template_not_found', `no verification template "${ssiConfigId}" in this tenant`)
    }
    // Keys load before anything else: the default trust list is the tenant's own issuer DIDs.
    const verifier = await tenantKeys.forTenant(principal.tenantId, 'EdDSA')
    const keys = await Promise.all(SIGNING_ALGS.map((alg) => tenantKeys.forTenant(principal.tenantId, alg)))
    // The RSA key exists only where an ldp_vc template signs with it; it is trusted like the others then.
    const rsa = template.body.trustedIssuers
      ? undefined
      : await tenantKeys.ifExists(principal.tenantId, 'PS256')
    const trustedIssuers = template.body.trustedIssuers ?? [...keys, ...(rsa ? [rsa] : [])].map((k) => k.did)
    const now = clock.now()
    const id = randomUUID()
    const profile = template.body.profile
    const requests = this.deps.requests[profile]
    const fresh: SessionAsk = {
      tenantId: principal.tenantId,
      nonce: b64(32),
      ...(template.body.dcql && { settings: template.body.dcql }),
    }
    const { nonce, settings } = requests.prepare?.(fresh) ?? fresh
    const state = b64(16)
    const definition =
      profile === 'pe'
        ? buildDefinition({
            sessionId: id,
            template: template.body,
            templateUpdatedAt: template.updatedAt,
            trustedIssuers,
            verifier,
            nonce,
            receiverUrl: urls.absolute(''),
            now,
          })
        : null
    const dcqlQuery =
      profile === 'dcql' && settings
        ? buildDcqlQuery({
            credentialTypes: template.body.credentialTypes,
            optionalGroups: template.body.optionalGroups,
            requestedFields: template.body.requestedFields,
            format: settings.format,
            vctValues: (type) => settings.vctValues?.[type] ?? [urls.defaultVct(principal.tenantId, type)],
          })
        : undefined
    // OpenID4VP 1.0 Appendix A: the origins an answer over the DC API may come from, fixed with the session.
    const dcApiSettings = profile === 'dcql' ? settings?.dcApi : undefined
    const dcApi: SessionRecord['policy']['dcApi'] = dcApiSettings && {
      request: dcApiSettings.request,
      origins: [...(dcApiSettings.expectedOrigins ?? [urls.origin()])],
      ...(dcApiSettings.request === 'multisigned' && {
        prefixes: [...(dcApiSettings.clientIdPrefixes ?? DEFAULT_MULTISIGNED_PREFIXES)],
      }),
    }
    const expiresAt = now + template.body.sessionLifetimeSeconds * 1000
    const { request, requestJwt, link, responseKey } = await requests.build({
      tenantId: principal.tenantId,
      sessionId: id,
      ...(definition && { definition }),
      ...(dcqlQuery && { dcqlQuery: dcqlQuery as unknown as Record<string, unknown>, settings }),
      nonce,
      state,
      verifier,
      now,
      expiresAt,
    })
    const session: SessionRecord = {
      id,
      tenantId: principal.tenantId,
      templateId: ssiConfigId,
      createdByKey: principal.keyId,
      status: 'PENDING',
      profile,
      definition,
      request,
      requestJwt,
      responseKey,
      policy: {
        trustedIssuers: [...trustedIssuers],
        requireStatus: template.body.requireStatus,
        ...(profile === 'dcql' && {
          // the tenant's own roots: its test CA (x5c SD-JWT VCs) and its IACA (mdocs)
          trustAnchors:
            template.body.trustAnchors ??
            [
              await this.deps.certificates.trustAnchorPem(principal.tenantId),
              ...(template.body.dcql?.format === MDOC_FORMAT
                ? [await this.deps.certificates.iacaPem(principal.tenantId)]
                : []),
            ].filter((p) => p !== undefined),
        }),
        ...(dcApi && { dcApi }),
      },
      createdAt: now,
      updatedAt: now,
      expiresAt,
      requestedAt: null,
      submission: null,
      submissionFormat: '',
      validations: null,
      subject: null,
      sourceWallet: null,
      callback: template.body.webhookUrl ?? null,
    }
    await store.sessions.create(session)
    this.deps.events.emit(sessionChanged(session, 'session_created'))
    // Section 2.7's answer; a dcql session names its query instead, and its id (a PE session's id is its
    // definition's), and, offered over the Digital Credentials API, where its page gets the request entry and
    // posts the answer back (the same URL).
    if (definition) return { authentication_request: link, presentation_definition: definition }
    return {
      authentication_request: link,
      dcql_query: request.dcql_query as Record<string, unknown>,
      id,
      ...(dcApi && {
        dcApi: {
          protocol: DC_API_PROTOCOLS[dcApi.request],
          request: urls.verifierDcApi(principal.tenantId, id),
          response: urls.verifierDcApi(principal.tenantId, id),
          expectedOrigins: dcApi.origins,
        },
      }),
    }
  }

  /**
   * Section 4.7. Like issuance processes: another tenant's session is a 404 like an unknown id; one of
   * another template than the token's is a 403.
   */
  async getSession(principal: Principal, id: string): Promise<SessionRecord> {
    const session = await this.deps.store.sessions.get(id)
    if (!session || session.tenantId !== principal.tenantId) {
      throw new AppError('session_not_found', `no verification session "${id}"`)
    }
    if (principal.template !== null && principal.template !== session.templateId) {
      throw new AppError(
        'session_not_linked',
        `session "${id}" belongs to template "${session.templateId}", not to this token's template "${principal.template}"`,
      )
    }
    return session
  }
}

/** Section 2.9, plus `Status`; the HTTP status is 202 while the session waits and 200 once it is final. */
export function sessionView(session: SessionRecord, now: number) {
  const state = sessionState(session, now)
  const { definition } = session
  return {
    httpStatus: state === 'PENDING' ? (202 as const) : (200 as const),
    body: {
      Id: session.id,
      Status: state,
      PresentationSubmission: session.submission,
      PresentationSubmissionFormat: session.submissionFormat,
      Validations: session.validations,
      PresentationDefinition: definition,
      AuthRequest: {
        ...session.request,
        // Section 2.9 shows the request as the wallet sees it: the link's redirect_uri and scope with the
        // signed request object's claims (a dcql request carries its dcql_query and no scope: 1.0 §5.1).
        redirect_uri: session.request.response_uri,
        ...(definition && {
          scope: AUTH_REQUEST_SCOPE,
          name: definition.name,
          id: definition.id,
          format: definition.format,
          submission_requirements: definition.submission_requirements,
          input_descriptors: definition.input_descriptors,
          proof: definition.proof,
        }),
      },
      RequestedAt: session.requestedAt === null ? null : isoTime(session.requestedAt),
      CreatedAt: isoTime(session.createdAt),
      UpdatedAt: isoTime(session.updatedAt),
      ExpiredAt: isoTime(session.expiresAt),
      DeletedAt: null,
      SourceWallet: session.sourceWallet ?? '',
      Callback: session.callback ?? '',
      Subject: session.subject ?? '',
    },
  }
}
