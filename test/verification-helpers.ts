import { randomUUID } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { parseConfig, type ServiceConfig } from '../src/service/config/index.ts'
import type { ServiceEvent, SessionChanged } from '../src/service/events.ts'
import type { ManualClock } from '../src/service/util/clock.ts'
import type { JwsAlg } from '../src/shared/did-key.ts'
import { decodeJws, signJws } from '../src/shared/jws.ts'
import { FORM_MEDIA_TYPE } from '../src/shared/wire.ts'
import { auth, OTHER, tokenFor } from './helpers.ts'
import { FOREIGN_ISSUER, type Holder, newHolder, oid4vciConfig, WIDE_APP } from './oid4vci-helpers.ts'

// A lean OpenID4VP driver for service-level tests of verification (sections 2.7–2.9, 4.6, 4.7, 6):
// app.inject, the manual clock, and node:crypto signing through src/shared, so each test controls every
// byte the "wallet" sends.

export const V1 = 'https://www.w3.org/2018/credentials/v1'
export const FORM = FORM_MEDIA_TYPE

/** A second (P-256) did:key nobody in these tests signs with (an explicit trust list of two foreign DIDs). */
export const FOREIGN_ISSUER_2 = newHolder('ES256').did

/** An application key of the demo tenant linked to the verification template `vid-check`. */
export const VID_APP = {
  id: 'b1b2b3b4-0000-4111-8222-333333333333',
  secret: 'vid-check-app-secret-abcdefghijkl',
  tenant: 'demo',
}
/** A tenant-wide application key of the "other" tenant, with a verification template of its own. */
export const OTHER_WIDE = {
  id: 'a0a0a0a0-9999-4888-8777-666666666666',
  secret: 'other-wide-app-secret-abcdefghijk',
  tenant: 'other',
}
export const WEBHOOK_URL = 'https://rp.example/hooks/vid-check'

/**
 * oid4vciConfig() plus verification templates:
 * - degree-check (demo.json): one UniversityDegreeCredential, every default;
 * - vid-check: VerifiableId with a required sensitive familyName and an optional nickname, purpose,
 *   consent 90 days, lifetime 120 s, a webhook URL;
 * - degree-nostatus: requireStatus false;
 * - degree-foreign: trusts FOREIGN_ISSUER and FOREIGN_ISSUER_2 only;
 * - degree-plus / degree-plus2: a degree plus an optional group "extras" (VerifiableId or
 *   EmployeeCredential) with min 1 / min 2;
 * - degree-and-id: both UniversityDegreeCredential and VerifiableId mandatory.
 * The "other" tenant gets a verification template and a tenant-wide application key.
 */
export function verificationConfig(): ServiceConfig {
  const raw = structuredClone(oid4vciConfig()) as unknown as {
    tenants: { id: string; apiKeys: unknown[]; verificationTemplates: unknown[] }[]
  }
  const demo = raw.tenants.find((t) => t.id === 'demo')
  const other = raw.tenants.find((t) => t.id === 'other')
  if (!demo || !other) throw new Error('oid4vciConfig has no demo or other tenant')
  demo.apiKeys.push({ id: VID_APP.id, secret: VID_APP.secret, role: 'app', template: 'vid-check' })
  demo.verificationTemplates.push(
    {
      id: 'vid-check',
      name: 'ID check',
      purpose: 'We check who you are',
      credentialTypes: ['VerifiableId'],
      requestedFields: [
        { path: '$.credentialSubject.familyName', sensitive: true, purpose: 'To address you' },
        { path: '$.credentialSubject.nickname', optional: true },
      ],
      consentDurationDays: 90,
      sessionLifetimeSeconds: 120,
      webhookUrl: WEBHOOK_URL,
      webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    },
    {
      id: 'degree-nostatus',
      name: 'Degree check without status',
      credentialTypes: ['UniversityDegreeCredential'],
      requireStatus: false,
    },
    {
      id: 'degree-foreign',
      name: 'Degree from partners',
      credentialTypes: ['UniversityDegreeCredential'],
      trustedIssuers: [FOREIGN_ISSUER, FOREIGN_ISSUER_2],
    },
    {
      id: 'degree-plus',
      name: 'Degree plus one extra',
      credentialTypes: ['UniversityDegreeCredential'],
      optionalGroups: [
        {
          name: 'extras',
          credentialTypes: ['VerifiableId', 'EmployeeCredential'],
          min: 1,
          purpose: 'Extras',
        },
      ],
    },
    {
      id: 'degree-plus2',
      name: 'Degree plus two extras',
      credentialTypes: ['UniversityDegreeCredential'],
      optionalGroups: [{ name: 'extras', credentialTypes: ['VerifiableId', 'EmployeeCredential'], min: 2 }],
    },
    {
      id: 'degree-and-id',
      name: 'Degree and ID',
      credentialTypes: ['UniversityDegreeCredential', 'VerifiableId'],
    },
  )
  other.apiKeys.push({ id: OTHER_WIDE.id, secret: OTHER_WIDE.secret, role: 'app' })
  other.verificationTemplates.push({
    id: 'other-check',
    name: 'Other tenant check',
    credentialTypes: ['UniversityDegreeCredential'],
  })
  return parseConfig(raw)
}

export { OTHER, WIDE_APP }

export type Definition = Record<string, unknown> & {
  id: string
  name: string
  dataAgreement: Record<string, unknown>
  format: Record<string, { alg?: string[]; proof_type?: string[] }>
  submission_requirements: Record<string, unknown>[]
  input_descriptors: InputDescriptor[]
  proof: Record<string, unknown>[]
}
export type InputDescriptor = {
  id: string
  name: string
  group: string[]
  constraints: {
    fields: {
      path: string[]
      purpose?: string
      filter?: Record<string, unknown>
      intent_to_retain?: boolean
      optional?: boolean
    }[]
    statuses?: { active?: { directive?: string } }
  }
}

export interface RequestClaims extends Record<string, unknown> {
  client_id: string
  client_id_scheme: string
  response_uri: string
  response_mode: string
  response_type: string
  nonce: string
  state: string
  exp: number
  presentation_definition: Record<string, unknown> & { id: string }
}

export function postSession(app: FastifyInstance, token: string | undefined, payload: unknown) {
  return app.inject({
    method: 'POST',
    url: '/api/v3/sessions',
    headers: token === undefined ? {} : auth(token),
    payload: payload as object,
  })
}

/** 4.6 → 201; returns the body and the parts of the authentication request. */
export async function createSession(app: FastifyInstance, token: string, ssiConfigId: string) {
  const response = await postSession(app, token, { ssiConfigId })
  if (response.statusCode !== 201) throw new Error(`session: ${response.statusCode} ${response.body}`)
  const body = response.json<{ authentication_request: string; presentation_definition: Definition }>()
  const query = new URLSearchParams(body.authentication_request.split('?')[1])
  const requestUri = new URL(query.get('request_uri') ?? '')
  const redirectUri = new URL(query.get('redirect_uri') ?? '')
  return {
    response,
    body,
    id: body.presentation_definition.id,
    definition: body.presentation_definition,
    query,
    requestPath: requestUri.pathname,
    responsePath: redirectUri.pathname,
  }
}

export function getRequest(app: FastifyInstance, path: string) {
  return app.inject({ method: 'GET', url: path })
}

/** GET request_uri → 200; returns the raw JWT and its decoded parts (not verified here). */
export async function fetchRequest(app: FastifyInstance, path: string) {
  const response = await getRequest(app, path)
  if (response.statusCode !== 200) throw new Error(`request object: ${response.statusCode} ${response.body}`)
  const decoded = decodeJws(response.body)
  return { response, jwt: response.body, header: decoded.header, claims: decoded.payload as RequestClaims }
}

/** Login as `key` (with `ssiconfig`), create a session of `template` and fetch its request object. */
export async function openSession(
  t: { app: FastifyInstance },
  template = 'degree-check',
  key: { id: string; secret: string; tenant: string } = WIDE_APP,
) {
  const rp = await tokenFor(t.app, key, template)
  const session = await createSession(t.app, rp, template)
  const request = await fetchRequest(t.app, session.requestPath)
  return { rp, ...session, request: request.claims, requestJwt: request.jwt }
}
export type OpenSession = Awaited<ReturnType<typeof openSession>>

/** A jwt_vp presentation of `jwts` by `holder`, bound to the session's nonce and client_id. */
export function vpJwt(
  holder: Holder,
  clock: ManualClock,
  request: { nonce: string; client_id: string },
  jwts: unknown[],
  overrides: {
    header?: Record<string, unknown>
    payload?: Record<string, unknown>
    vp?: Record<string, unknown>
    signWith?: Holder
  } = {},
): string {
  const signer = overrides.signWith ?? holder
  return signJws(
    { alg: signer.alg, typ: 'JWT', kid: holder.kid, ...overrides.header } as { alg: JwsAlg },
    {
      iss: holder.did,
      aud: request.client_id,
      nonce: request.nonce,
      iat: Math.floor(clock.now() / 1000),
      jti: `urn:uuid:${randomUUID()}`,
      vp: {
        '@context': [V1],
        type: ['VerifiablePresentation'],
        holder: holder.did,
        verifiableCredential: jwts,
        ...overrides.vp,
      },
      ...overrides.payload,
    },
    signer.privateKey,
  )
}

export interface DescriptorEntry {
  id: string
  index?: number
  format?: string
  path?: string
  nestedFormat?: string
  nestedPath?: string
}

/** A presentation_submission mapping each descriptor to `$.verifiableCredential[index]` of the jwt_vp. */
export function submission(definitionId: string, entries: DescriptorEntry[]) {
  return {
    id: randomUUID(),
    definition_id: definitionId,
    descriptor_map: entries.map((e, i) => ({
      id: e.id,
      format: e.format ?? 'jwt_vp',
      path: e.path ?? '$',
      path_nested: {
        id: e.id,
        format: e.nestedFormat ?? 'jwt_vc',
        path: e.nestedPath ?? `$.verifiableCredential[${e.index ?? i}]`,
      },
    })),
  }
}

/** direct_post with any form fields (content type overridable). */
export function postResponse(
  app: FastifyInstance,
  path: string,
  form: Record<string, string>,
  contentType = FORM,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: path,
    headers: { 'content-type': contentType, ...headers },
    payload: contentType === FORM ? new URLSearchParams(form).toString() : JSON.stringify(form),
  })
}

/** The usual good answer of a session: vp_token, presentation_submission and state. */
export function respond(
  app: FastifyInstance,
  s: { responsePath: string; request: RequestClaims },
  vpToken: string,
  sub: unknown,
  extra: Record<string, string> = {},
) {
  return postResponse(app, s.responsePath, {
    vp_token: vpToken,
    presentation_submission: JSON.stringify(sub),
    state: s.request.state,
    ...extra,
  })
}

export type CheckOutcome = { check: string; result: 'passed' | 'failed' | 'not_run'; message: string }
export type SessionBody = {
  Id: string
  Status?: string
  PresentationSubmission: Record<string, unknown> | null
  PresentationSubmissionFormat: string
  Validations: {
    status: string
    checks: CheckOutcome[]
    verificationResult: { checks: string[]; warnings: string[]; errors: string[] }
  } | null
  PresentationDefinition: Definition
  AuthRequest: Record<string, unknown>
  RequestedAt: string | null
  CreatedAt: string
  UpdatedAt: string
  ExpiredAt: string
  DeletedAt: string | null
  SourceWallet: string
  Callback: string
  Subject: string
}

export function getSession(app: FastifyInstance, token: string | undefined, id: string) {
  return app.inject({
    method: 'GET',
    url: `/api/v3/sessions/${id}`,
    headers: token === undefined ? {} : auth(token),
  })
}

/** 4.7 as `rp`: returns the status code and the body. */
export async function readSession(app: FastifyInstance, rp: string, id: string) {
  const response = await getSession(app, rp, id)
  if (response.statusCode !== 200 && response.statusCode !== 202) {
    throw new Error(`read session: ${response.statusCode} ${response.body}`)
  }
  return { status: response.statusCode, body: response.json<SessionBody>(), response }
}

/** The names of the checks with `result` in a session's Validations. */
export function checksWith(body: SessionBody, result: CheckOutcome['result']): string[] {
  return (body.Validations?.checks ?? []).filter((c) => c.result === result).map((c) => c.check)
}

/** A key that can sign credentials: a Holder (fresh did:key) or one of the tenant's issuer keys. */
export interface SigningKey {
  alg: JwsAlg
  did: string
  kid: string
  privateKey: Holder['privateKey']
}

/**
 * A jwt_vc_json credential as docs/issuance.md describes it, signed by `issuer` for `holderDid`, with
 * every part overridable (for credentials the service would never issue: no status, expired, …).
 */
export function signCredential(
  issuer: SigningKey,
  holderDid: string,
  clock: ManualClock,
  options: {
    type?: string[]
    subject?: Record<string, unknown>
    vc?: Record<string, unknown>
    payload?: Record<string, unknown>
    issuanceMs?: number
  } = {},
): string {
  const issued = options.issuanceMs ?? clock.now() - 60_000
  const id = `urn:uuid:${randomUUID()}`
  const vc = {
    '@context': [V1],
    id,
    type: options.type ?? ['VerifiableCredential', 'UniversityDegreeCredential'],
    issuer: issuer.did,
    issuanceDate: new Date(issued).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    credentialSubject: { id: holderDid, ...(options.subject ?? { degree: { type: 'BachelorDegree' } }) },
    ...options.vc,
  }
  return signJws(
    { alg: issuer.alg, typ: 'JWT', kid: issuer.kid },
    {
      iss: issuer.did,
      sub: holderDid,
      jti: id,
      nbf: Math.floor(issued / 1000),
      iat: Math.floor(issued / 1000),
      vc,
      ...options.payload,
    },
    issuer.privateKey,
  )
}

/** Replaces the payload of a compact JWS, keeping header and signature (a tampered token). */
export function tamper(jws: string, change: (payload: Record<string, unknown>) => void): string {
  const [header, , signature] = jws.split('.')
  const { payload } = decodeJws(jws)
  change(payload)
  return `${header}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${signature}`
}

/** Collects the verification events the service emits until `stop()` is called. */
export function recordSessionEvents(app: FastifyInstance) {
  const events: SessionChanged[] = []
  const stop = app.services.events.on((event: ServiceEvent) => {
    if (event.kind === 'verification') events.push(event)
  })
  return { events, stop }
}
