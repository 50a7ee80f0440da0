import type { KeyObject } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { ManualClock } from '../src/service/util/clock.ts'
import { type DidKey, didKeyFromPublicKey, generateKeyPair, type JwsAlg } from '../src/shared/did-key.ts'
import { signJws } from '../src/shared/jws.ts'
import { auth, createOffer, DEMO, tokenFor } from './helpers.ts'

// A lean protocol driver for service-level tests (app.inject, manual clock): it signs with node:crypto
// directly, so each test controls every byte. End-to-end tests use the real wallet over HTTP instead.

export const ISSUER = 'https://issuer.example/oid4vci/demo'
export const PRE_AUTH = 'urn:ietf:params:oauth:grant-type:pre-authorized_code'

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
    { alg: holder.alg, typ: 'openid4vci-proof+jwt', kid: holder.kid, ...overrides.header } as never,
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
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
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
