import assert from 'node:assert/strict'
import type { KeyObject } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { parseConfig, type ServiceConfig } from '../src/service/config/index.ts'
import type { ManualClock } from '../src/service/util/clock.ts'
import { presentationTemplate, signerFromPrivateKey, signPresentation } from '../src/shared/data-integrity.ts'
import { type DidKey, didKeyFromPublicKey, generateKeyPair, type JwsAlg } from '../src/shared/did-key.ts'
import { signJws } from '../src/shared/jws.ts'
import { FORM_MEDIA_TYPE, PRE_AUTHORIZED_GRANT, PROOF_TYP } from '../src/shared/wire.ts'
import { auth, createOffer, DEMO, demoConfig, OTHER, tokenFor } from './helpers.ts'

// A lean protocol driver for service-level tests (app.inject, manual clock): it signs with node:crypto
// directly, so each test controls every byte. End-to-end tests use the real wallet over HTTP instead.

export const ISSUER = 'https://issuer.example/oid4vci/demo'
export const PRE_AUTH = PRE_AUTHORIZED_GRANT

export interface Holder extends DidKey {
  privateKey: KeyObject
}

export function newHolder(alg: JwsAlg = 'EdDSA'): Holder {
  const pair = generateKeyPair(alg)
  return { ...didKeyFromPublicKey(pair.publicKey), privateKey: pair.privateKey }
}

export function proofJwt(
  holder: Holder,
  clock: ManualClock,
  nonce: string | undefined,
  overrides: { header?: Record<string, unknown>; payload?: Record<string, unknown> } = {},
): string {
  return signJws(
    { alg: holder.alg, typ: PROOF_TYP, kid: holder.kid, ...overrides.header } as never,
    {
      aud: ISSUER,
      iat: Math.floor(clock.now() / 1000),
      ...(nonce === undefined ? {} : { nonce }),
      ...overrides.payload,
    },
    holder.privateKey,
  )
}

export async function offerJson(app: FastifyInstance, processId: string) {
  const response = await app.inject({ method: 'GET', url: `/oid4vci/demo/credential-offer/${processId}` })
  if (response.statusCode !== 200) throw new Error(`offer: ${response.statusCode} ${response.body}`)
  return response.json<{
    credential_issuer: string
    credential_configuration_ids: string[]
    grants: Record<
      string,
      { 'pre-authorized_code': string; tx_code?: { length: number; input_mode: string } }
    >
    presentation_definition?: Record<string, unknown>
  }>()
}

export function postToken(app: FastifyInstance, form: Record<string, string>, tenant = 'demo') {
  return app.inject({
    method: 'POST',
    url: `/oid4vci/${tenant}/token`,
    headers: { 'content-type': FORM_MEDIA_TYPE },
    payload: new URLSearchParams(form).toString(),
  })
}

export function postJson(
  app: FastifyInstance,
  path: string,
  accessToken: string | undefined,
  payload: unknown,
) {
  return app.inject({
    method: 'POST',
    url: `/oid4vci/demo/${path}`,
    headers: accessToken ? { authorization: `Bearer ${accessToken}` } : {},
    payload: payload as object,
  })
}

export async function nonceOf(app: FastifyInstance): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/oid4vci/demo/nonce' })
  return response.json<{ c_nonce: string }>().c_nonce
}

export function oauthError(response: LightMyRequestResponse) {
  const body = response.json<{ error: string; error_description: string }>()
  if (typeof body.error !== 'string') throw new Error(`expected an OAuth error body, got ${response.body}`)
  return body
}

/** Asserts an RFC 6749-style wallet-facing error (JSON, no-store) and returns its body. */
export function expectOAuth(
  response: LightMyRequestResponse,
  status: number,
  error: string,
  description?: RegExp,
) {
  assert.equal(response.statusCode, status, response.body)
  assert.match(String(response.headers['content-type']), /^application\/json/)
  assert.equal(response.headers['cache-control'], 'no-store')
  const body = oauthError(response)
  assert.equal(body.error, error, response.body)
  if (description) assert.match(body.error_description, description, response.body)
  return body as Record<string, unknown> & { error: string; error_description: string }
}

/** Offer → token: returns what the wallet holds after the token step. */
export async function openGrant(app: FastifyInstance, group = 'degree') {
  const rp = await tokenFor(app, DEMO.app, group)
  const offer = await createOffer(app, rp, group)
  const json = await offerJson(app, offer.processId)
  const code = json.grants[PRE_AUTH]?.['pre-authorized_code'] ?? ''
  const token = await postToken(app, { grant_type: PRE_AUTH, 'pre-authorized_code': code })
  if (token.statusCode !== 200) throw new Error(`token: ${token.statusCode} ${token.body}`)
  const body = token.json<{ access_token: string; c_nonce: string }>()
  return { rp, processId: offer.processId, code, accessToken: body.access_token, cNonce: body.c_nonce }
}

export async function submit(app: FastifyInstance, token: string, processId: string, credentials: unknown) {
  return app.inject({
    method: 'PATCH',
    url: `/admin/v1/issuanceRequests/${processId}/credentials`,
    headers: auth(token),
    payload: credentials as object,
  })
}

export const DEGREE = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]

// --- Additions for test/service/oid4vci/endpoints.test.ts and test/service/issuance/attended.test.ts ----

/** An application key of the demo tenant linked to no template: it logs in with any template. */
export const WIDE_APP = {
  id: 'c0ffee00-1111-4222-8333-444444444444',
  secret: 'wide-app-secret-abcdefghijklmnopq',
  tenant: 'demo',
}
/** A syntactically valid did:key the service never signs with (for trustedIssuers). */
export const FOREIGN_ISSUER = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'

/**
 * The demo tenant with one template per OpenID4VCI feature, plus the "other" tenant of twoTenantConfig:
 * degree (EdDSA), pin (tx_code), es256 / es256k (signing algorithms), vid / vid-short (VerifiableId, the
 * second valid for 1 day), gated (requires a VerifiableId with familyName), gated-trusted (requires one
 * from FOREIGN_ISSUER), short (validityDays 30).
 */
export function oid4vciConfig(): ServiceConfig {
  const raw = structuredClone(demoConfig()) as unknown as {
    tenants: { issuanceTemplates: unknown[]; apiKeys: unknown[] }[]
  }
  const demo = raw.tenants[0]
  if (!demo) throw new Error('demo config has no tenant')
  demo.apiKeys.push({ id: WIDE_APP.id, secret: WIDE_APP.secret, role: 'app', label: 'tenant-wide test app' })
  demo.issuanceTemplates.push(
    {
      id: 'pin',
      credentialType: 'UniversityDegreeCredential',
      txCode: { length: 6, description: 'The code from your letter' },
    },
    {
      id: 'pin-text',
      credentialType: 'UniversityDegreeCredential',
      txCode: { length: 8, inputMode: 'text' },
    },
    { id: 'es256', credentialType: 'EmployeeCredential', signingAlg: 'ES256' },
    { id: 'es256k', credentialType: 'EmployeeCredential', signingAlg: 'ES256K' },
    { id: 'vid', credentialType: 'VerifiableId' },
    { id: 'vid-short', credentialType: 'VerifiableId', validityDays: 1 },
    {
      id: 'gated',
      credentialType: 'UniversityDegreeCredential',
      display: { name: 'Gated degree', description: 'Needs an ID', backgroundColor: '#123456' },
      requiredPresentation: {
        purpose: 'We issue the degree only to holders of a verified ID',
        credentials: [{ type: 'VerifiableId', fields: ['$.credentialSubject.familyName'] }],
      },
    },
    {
      id: 'gated-trusted',
      credentialType: 'UniversityDegreeCredential',
      requiredPresentation: { credentials: [{ type: 'VerifiableId', trustedIssuers: [FOREIGN_ISSUER] }] },
    },
    { id: 'short', credentialType: 'UniversityDegreeCredential', validityDays: 30 },
    { id: 'degree-d15', credentialType: 'UniversityDegreeCredential', deferredResponse: 'draft15' },
    {
      id: 'pid',
      credentialType: 'VerifiableId',
      format: 'dc+sd-jwt',
      selectivelyDisclosable: ['givenName', 'familyName', 'address.locality'],
      claims: [
        { path: 'givenName', name: 'Given name', mandatory: true },
        { path: 'address.locality', name: 'Town' },
      ],
    },
  )
  ;(raw.tenants as unknown[]).push({
    id: 'other',
    apiKeys: [
      { id: OTHER.app.id, secret: OTHER.app.secret, role: 'app', template: 'degree' },
      { id: OTHER.admin.id, secret: OTHER.admin.secret, role: 'admin' },
    ],
    issuanceTemplates: [{ id: 'degree', credentialType: 'UniversityDegreeCredential' }],
  })
  return parseConfig(raw)
}

export const issuerOf = (tenant: string) => `https://issuer.example/oid4vci/${tenant}`

export type OfferJson = Awaited<ReturnType<typeof offerJson>>

/** GET the offer of any tenant; returns the raw response. */
export function getOffer(app: FastifyInstance, processId: string, tenant = 'demo') {
  return app.inject({ method: 'GET', url: `/oid4vci/${tenant}/credential-offer/${processId}` })
}

/** 4.2 for `group` with an application key; returns the RP token, the process id and the tx_code if any. */
export async function newOffer(
  app: FastifyInstance,
  group = 'degree',
  key: { id: string; secret: string; tenant: string } = WIDE_APP,
) {
  const rp = await tokenFor(app, key, group)
  const response = await app.inject({
    method: 'POST',
    url: '/api/v3/oidc-issuance/credential-offer',
    headers: auth(rp),
    payload: { group },
  })
  if (response.statusCode !== 201) throw new Error(`offer: ${response.statusCode} ${response.body}`)
  const body = response.json<{ credential_offer_uri: string; tx_code?: string }>()
  const inner = new URL(
    new URLSearchParams(body.credential_offer_uri.split('?')[1]).get('credential_offer_uri') ?? '',
  )
  const processId = inner.pathname.split('/').pop() ?? ''
  const offer = await getOffer(app, processId, key.tenant)
  if (offer.statusCode !== 200) throw new Error(`offer json: ${offer.statusCode} ${offer.body}`)
  const json = offer.json<OfferJson>()
  const code = json.grants[PRE_AUTH]?.['pre-authorized_code'] ?? ''
  return { rp, processId, code, txCode: body.tx_code, offer: json, response: body }
}

/** Offer → token for any template (tx_code sent when the offer has one). */
export async function grantFor(
  app: FastifyInstance,
  group = 'degree',
  key: { id: string; secret: string; tenant: string } = WIDE_APP,
) {
  const offer = await newOffer(app, group, key)
  const form: Record<string, string> = { grant_type: PRE_AUTH, 'pre-authorized_code': offer.code }
  if (offer.txCode) form.tx_code = offer.txCode
  const token = await postToken(app, form, key.tenant)
  if (token.statusCode !== 200) throw new Error(`token: ${token.statusCode} ${token.body}`)
  const body = token.json<{ access_token: string; c_nonce: string }>()
  return { ...offer, accessToken: body.access_token, cNonce: body.c_nonce }
}

/** POST to a wallet endpoint of any tenant with a Bearer token. */
export function walletPost(
  app: FastifyInstance,
  path: string,
  accessToken: string | undefined,
  payload: unknown,
  tenant = 'demo',
) {
  return app.inject({
    method: 'POST',
    url: `/oid4vci/${tenant}/${path}`,
    headers: accessToken ? { authorization: `Bearer ${accessToken}` } : {},
    payload: payload as object,
  })
}

export const jwtRequest = (configurationId: string, jwt: string) => ({
  credential_configuration_id: configurationId,
  proof: { proof_type: 'jwt', jwt },
})

export const diVpRequest = (configurationId: string, vp: unknown, proofType = 'di_vp') => ({
  credential_configuration_id: configurationId,
  proof: { proof_type: proofType, [proofType]: vp },
})

/** A VC 2.0 presentation of `jwts` by `holder`, secured with eddsa-rdfc-2022 at the service clock's time. */
export function diVp(
  holder: Holder,
  clock: ManualClock,
  jwts: string[],
  options: { challenge: string; domain?: string; holderDid?: string },
) {
  return signPresentation(
    presentationTemplate(options.holderDid ?? holder.did, jwts),
    signerFromPrivateKey(holder.kid, holder.privateKey),
    { challenge: options.challenge, domain: options.domain ?? ISSUER, created: new Date(clock.now()) },
  )
}

/** 4.3 as the given RP token. */
export async function readProcess(app: FastifyInstance, rp: string, processId: string) {
  const response = await app.inject({ url: `/admin/v1/issuanceRequests/${processId}`, headers: auth(rp) })
  if (response.statusCode !== 200) throw new Error(`read: ${response.statusCode} ${response.body}`)
  return response.json<{
    id: string
    status: string
    validator: Record<string, unknown> | null
    data?: Record<string, unknown>[]
    updatedAt: string
  }>()
}

export function rejectProcess(app: FastifyInstance, token: string, processId: string, reason?: string) {
  return app.inject({
    method: 'POST',
    url: `/admin/v1/issuanceRequests/${processId}/reject`,
    headers: auth(token),
    ...(reason === undefined ? {} : { payload: { reason } }),
  })
}

export function changeStatus(app: FastifyInstance, token: string, processId: string, body: unknown) {
  return app.inject({
    method: 'POST',
    url: `/admin/v1/issuanceRequests/${processId}/credentials/status`,
    headers: auth(token),
    payload: body as object,
  })
}

/**
 * The whole flow with content submitted first: offer, token, submit, credential request with a jwt
 * proof → 200. Returns the issued JWT credentials and the grant.
 */
export async function issueTo(
  app: FastifyInstance,
  clock: ManualClock,
  holder: Holder,
  group: string,
  credentials: unknown,
) {
  const grant = await grantFor(app, group)
  const submitted = await submit(app, grant.rp, grant.processId, credentials)
  if (submitted.statusCode !== 200) throw new Error(`submit: ${submitted.statusCode} ${submitted.body}`)
  const response = await walletPost(
    app,
    'credential',
    grant.accessToken,
    jwtRequest(group, proofJwt(holder, clock, grant.cNonce)),
  )
  if (response.statusCode !== 200) throw new Error(`credential: ${response.statusCode} ${response.body}`)
  const body = response.json<{ credentials: { credential: string }[]; notification_id: string }>()
  return { ...grant, jwts: body.credentials.map((c) => c.credential), notificationId: body.notification_id }
}

export const VERIFIABLE_ID = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Doe', firstName: 'Jane', dateOfBirth: '1990-01-01' },
  },
]

/** Offer, token and the wallet's credential request (202): the process waits for the relying party. */
export async function walletAsked(
  t: { app: FastifyInstance; clock: ManualClock },
  group = 'degree',
  holder: Holder = newHolder(),
) {
  const g = await grantFor(t.app, group)
  const response = await walletPost(
    t.app,
    'credential',
    g.accessToken,
    jwtRequest(group, proofJwt(holder, t.clock, g.cNonce)),
  )
  if (response.statusCode !== 202)
    throw new Error(`credential request: ${response.statusCode} ${response.body}`)
  return { ...g, holder, transactionId: response.json().transaction_id as string }
}
