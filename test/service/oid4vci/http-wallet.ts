import assert from 'node:assert/strict'
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { ok, RelyingPartyClient } from '../../../src/client/index.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../../src/service/server.ts'
import type { Store } from '../../../src/service/store/index.ts'
import { type DidKey, didKeyFromPublicKey, type JwsAlg } from '../../../src/shared/did-key.ts'
import { decodeJws, signJws } from '../../../src/shared/jws.ts'
import { FORM_MEDIA_TYPE, PRE_AUTHORIZED_GRANT, PROOF_TYP } from '../../../src/shared/wire.ts'

// A wallet over real HTTP for the key attestation and batch tests (key-attestation.test.ts, batch.test.ts):
// a service started with extra templates, offers by a relying-party key, the pre-authorized token, the nonce
// endpoint and credential requests whose every byte the test chooses.

const TENANT = 'demo'
/** A tenant-wide application key (the demo's app keys are linked to one template each). */
const APP_KEY = {
  id: '3c8e1f2a-6b4d-4e7f-9a0b-1c2d3e4f5a6b',
  secret: 'http-wallet-test-secret-0123456789abcdef',
  role: 'app',
}
const ADMIN_KEY = {
  id: '4d9f2a3b-7c5e-4f80-8b1c-2d3e4f5a6b7c',
  secret: 'http-wallet-admin-secret-0123456789abcdef',
  role: 'admin',
}

export const DEGREE = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science' } },
  },
]
export const VERIFIABLE_ID = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Hopper', firstName: 'Grace' },
  },
]

export interface TestIssuer {
  server: RunningServer
  rp: RelyingPartyClient
  appToken: string
  adminToken: string
  /** The demo tenant's credential issuer identifier. */
  issuer: string
  store: Store
  close(): Promise<void>
}

/** The demo configuration with `templates` and the tenant settings given, served over HTTP on 127.0.0.1. */
export async function startIssuer(options: {
  templates: Record<string, unknown>[]
  tenant?: Record<string, unknown>
  oid4vci?: Record<string, unknown>
  /** A store opened by the caller (PostgreSQL); default: SQLite in memory. */
  store?: Store
  label: string
}): Promise<TestIssuer> {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  const ids = new Set(options.templates.map((t) => t.id))
  // Ours replace any demo template of the same id (the demo configuration grows on its own).
  tenant.issuanceTemplates = [
    ...tenant.issuanceTemplates.filter((t: { id: string }) => !ids.has(t.id)),
    ...options.templates,
  ]
  tenant.apiKeys.push(APP_KEY, ADMIN_KEY)
  Object.assign(tenant, options.tenant)
  raw.oid4vci = { deferredIntervalSeconds: 1, ...options.oid4vci }
  const config = parseConfig(raw, `${options.label} configuration`)
  const server = await startServer({
    config,
    host: '127.0.0.1',
    port: 0,
    dataDir: ':memory:',
    ...(options.store ? { store: options.store } : {}),
  })
  const rp = new RelyingPartyClient(server.url)
  return {
    server,
    rp,
    appToken: await rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT }),
    adminToken: await rp.token({ keyId: ADMIN_KEY.id, secret: ADMIN_KEY.secret, tenant: TENANT }),
    issuer: `${server.url}/oid4vci/${TENANT}`,
    store: server.app.services.store,
    close: () => server.close(),
  }
}

export interface Grant {
  processId: string
  accessToken: string
  cNonce: string
  link: string
}

/** 4.2 offer for `group`, content submitted when given: the process and the deep link (the OWF client's start). */
export async function offerFor(t: TestIssuer, group: string, content?: unknown) {
  const body = ok(await t.rp.createOffer(t.appToken, group), `offer ${group}`)
  const offerUri = decodeURIComponent(body.credential_offer_uri.split('credential_offer_uri=')[1] ?? '')
  const processId = new URL(offerUri).pathname.split('/').at(-1) as string
  if (content) ok(await t.rp.submitCredentials(t.appToken, processId, content), 'submit')
  return { processId, offerUri, link: body.credential_offer_uri }
}

/** 4.2 offer for `group` (content submitted first when given) → offer → pre-authorized token. */
export async function grantFor(t: TestIssuer, group: string, content?: unknown): Promise<Grant> {
  const { processId, offerUri, link } = await offerFor(t, group, content)
  const offer = (await (await fetch(offerUri)).json()) as {
    grants: Record<string, { 'pre-authorized_code': string }>
  }
  const code = offer.grants[PRE_AUTHORIZED_GRANT]?.['pre-authorized_code'] ?? ''
  const token = await fetch(`${t.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': FORM_MEDIA_TYPE },
    body: new URLSearchParams({ grant_type: PRE_AUTHORIZED_GRANT, 'pre-authorized_code': code }),
  })
  assert.equal(token.status, 200, await token.clone().text())
  const { access_token: accessToken, c_nonce: cNonce } = (await token.json()) as {
    access_token: string
    c_nonce: string
  }
  return { processId, accessToken, cNonce, link }
}

export async function nonceOf(t: TestIssuer): Promise<string> {
  const response = await fetch(`${t.issuer}/nonce`, { method: 'POST' })
  return ((await response.json()) as { c_nonce: string }).c_nonce
}

export interface Answer {
  status: number
  body: Record<string, unknown> & {
    error?: string
    error_description?: string
    credentials?: { credential: string }[]
    notification_id?: string
    transaction_id?: string
  }
}

/** POST to a wallet-facing endpoint of the demo issuer with the access token. */
export async function walletPost(
  t: TestIssuer,
  endpoint: 'credential' | 'deferred_credential' | 'notification',
  accessToken: string,
  body: unknown,
): Promise<Answer> {
  const response = await fetch(`${t.issuer}/${endpoint}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, body: text ? JSON.parse(text) : {} }
}

/** Asserts an OAuth error answer (400 unless said) and its description. */
export function refused(answer: Answer, error: string, description: RegExp, status = 400) {
  assert.equal(answer.status, status, JSON.stringify(answer.body))
  assert.equal(answer.body.error, error, JSON.stringify(answer.body))
  assert.match(String(answer.body.error_description), description)
}

/** The credentials of a 200 answer. */
export function credentialsOf(answer: Answer): string[] {
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
  return (answer.body.credentials ?? []).map((c) => c.credential)
}

/** A holder key: its private key, public JWK and did:key. */
export interface HolderKey {
  alg: JwsAlg
  privateKey: KeyObject
  publicJwk: Record<string, unknown>
  holder: DidKey
}

export function holderKey(alg: 'ES256' | 'EdDSA' = 'ES256'): HolderKey {
  const { privateKey, publicKey } =
    alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519')
  const jwk = publicKey.export({ format: 'jwk' }) as Record<string, unknown>
  return { alg, privateKey, publicJwk: jwk, holder: didKeyFromPublicKey(publicKey) }
}

/** A jwt key proof (Appendix F.1) by `key`, named by its jwk unless the header says otherwise. */
export function jwtProof(
  t: TestIssuer,
  key: HolderKey,
  nonce: string,
  header: Record<string, unknown> = {},
  payload: Record<string, unknown> = {},
): string {
  return signJws(
    { alg: key.alg, typ: PROOF_TYP, ...('kid' in header ? {} : { jwk: key.publicJwk }), ...header } as never,
    { aud: t.issuer, iat: Math.floor(Date.now() / 1000), nonce, ...payload },
    key.privateKey,
  )
}

/** An SD-JWT VC's issuer-signed payload (before the first `~`). */
export const sdJwtPayload = (compact: string) =>
  decodeJws(compact.split('~')[0] ?? '').payload as {
    cnf: { jwk: Record<string, unknown> }
    status: { status_list: { idx: number; uri: string } }
  }

/** A jwt_vc_json credential's payload. */
export const jwtVcPayload = (jwt: string) =>
  decodeJws(jwt).payload as {
    sub: string
    jti: string
    vc: { credentialStatus: { statusListIndex: string; statusListCredential: string } }
  }
