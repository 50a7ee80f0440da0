/**
 * The bare baseline of the flow benchmarks: a minimal issuer/verifier speaking the reference service's wire
 * protocol (same paths, field names and status codes for the happy path and the common refusals) with
 * Fastify + jose + node built-ins only, everything in memory (Maps) and only the checks that make the
 * protocol secure: API key and access-token checks, single-use pre-authorized codes and nonces, and every
 * signature (key proof, VP, each VC). No database, no JSON schemas, no Presentation Exchange evaluation, no
 * status lists, no webhooks, no events. It is the floor the service's flows/s are compared with ("the
 * service must reach ≥ 70 % of the bare flows/s"), so the same benchmark code, `RelyingPartyClient` and
 * the real simulated wallet drive both servers unchanged.
 *
 * All JWT/JWS work goes through jose (WebCrypto), which costs ~0.1 ms more per Ed25519 sign or verify than the
 * node:crypto path of src/shared/jws.ts: the bare server does ~4–5 such operations per flow.
 */
import { createHash, createPublicKey, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import {
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWTPayload,
  errors as joseErrors,
  jwtVerify,
  SignJWT,
} from 'jose'
import { didKeyFromPublicKey, resolveDidKey } from '../../src/shared/did-key.ts'
import {
  AUTHORIZATION_REQUEST_SCHEME,
  CREDENTIAL_OFFER_SCHEME,
  FORM_MEDIA_TYPE,
  JWT_TYP,
  PRE_AUTHORIZED_GRANT,
  PROBLEM_MEDIA_TYPE,
  PROOF_TYP,
  REQUEST_OBJECT_MEDIA_TYPE,
  REQUEST_OBJECT_TYP,
  SIOP_AUDIENCE,
} from '../../src/shared/wire.ts'

export interface BareFlows {
  /** http://127.0.0.1:PORT */
  url: string
  keys: {
    tenant: string
    issuance: { template: string; keyId: string; secret: string }
    verification: { template: string; keyId: string; secret: string }
    admin: { keyId: string; secret: string }
  }
  close(): Promise<void>
}

// --- fixed configuration: the demo tenant of config/demo.json ------------------------------------------------

const TENANT = 'demo'
const ISSUANCE = {
  template: 'degree',
  keyId: '0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01',
  secret: 'demo-app-secret-7Qm2xV9pL4sT8wZ1',
}
const VERIFICATION = {
  template: 'degree-check',
  keyId: '5d2e8a47-1c3b-4f6d-8e9a-2b7c4d1e6f02',
  secret: 'demo-verifier-secret-H3nR6yK1cB8qW5',
}
const ADMIN = { keyId: '9a4f3c2b-6e1d-4b8a-a7c5-3d2e1f0b9c03', secret: 'demo-admin-secret-Z8kP3mN6vQ1rT4' }
const CREDENTIAL_TYPE = 'UniversityDegreeCredential'
const VERIFICATION_NAME = 'Degree check'

type Role = 'app' | 'admin'
interface ApiKey {
  id: string
  role: Role
  template: string | null
  /** sha256 of the secret: compared in constant time */
  digest: Buffer
}
const TEMPLATES: Record<string, 'issuance' | 'verification'> = {
  [ISSUANCE.template]: 'issuance',
  [VERIFICATION.template]: 'verification',
}

// The service's defaults (src/service/config/schema.ts).
const TOKEN_LIFETIME_S = 3600
const CODE_LIFETIME_S = 600
const WALLET_TOKEN_LIFETIME_S = 3600
const C_NONCE_LIFETIME_S = 300
const PROOF_MAX_AGE_S = 300
const DEFERRED_INTERVAL_S = 5
const SESSION_LIFETIME_S = 600
const BODY_LIMIT = 262_144
// Clock skew tolerated on iat/nbf, as the service's FUTURE_SKEW_SECONDS.
const SKEW_S = 60

// Access tokens exactly as src/service/auth/tokens.ts makes them.
const TOKEN_ISSUER = 'vc-harness'
const TOKEN_AUDIENCE = 'vc-harness:relying-party-api'
const TOKEN_TYPE = 'at+jwt'

const VC_V1_CONTEXT = 'https://www.w3.org/2018/credentials/v1'
const NOTIFICATION_EVENTS = new Set(['credential_accepted', 'credential_failure', 'credential_deleted'])
// jose cannot do ES256K on Node, so the bare server accepts (and advertises) the two algorithms it verifies.
const ALGS = ['EdDSA', 'ES256']
const FORMAT = {
  jwt: { alg: ALGS },
  jwt_vc: { alg: ALGS },
  jwt_vc_json: { alg: ALGS },
  jwt_vp: { alg: ALGS },
  jwt_vp_json: { alg: ALGS },
}

// --- errors: the service's two families ----------------------------------------------------------------------

const PROBLEM_STATUS = {
  validation_failed: 400,
  missing_header: 400,
  malformed_json: 400,
  invalid_credential: 400,
  unauthenticated: 401,
  invalid_credentials: 401,
  invalid_token: 401,
  token_expired: 401,
  role_forbidden: 403,
  template_not_allowed: 403,
  process_not_linked: 403,
  session_not_linked: 403,
  not_found: 404,
  template_not_found: 404,
  process_not_found: 404,
  session_not_found: 404,
  already_submitted: 409,
  process_not_pending: 409,
  unsupported_media_type: 415,
} as const
type ProblemCode = keyof typeof PROBLEM_STATUS

/** Relying-party API error: RFC 9457 problem+json with the service's stable `code`. */
class Problem extends Error {
  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail)
  }
}

const OAUTH_STATUS = {
  invalid_request: 400,
  invalid_grant: 400,
  unsupported_grant_type: 400,
  invalid_token: 401,
  invalid_credential_request: 400,
  unknown_credential_configuration: 400,
  invalid_proof: 400,
  invalid_nonce: 400,
  issuance_pending: 400,
  invalid_transaction_id: 400,
  invalid_notification_id: 400,
  invalid_notification_request: 400,
  invalid_presentation: 400,
  session_closed: 409,
  session_expired: 410,
  not_found: 404,
  server_error: 500,
} as const
type OAuthCode = keyof typeof OAUTH_STATUS

/** Wallet-facing error: `{error, error_description}` (OAuth 2.0 / OpenID4VCI / OpenID4VP). */
class OAuthFailure extends Error {
  constructor(
    readonly error: OAuthCode,
    readonly description: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(description)
  }
}

const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="vc-harness", charset="UTF-8"' }
const JWT_CHALLENGE = { 'WWW-Authenticate': 'jwt realm="vc-harness"' }
const WALLET_PATH = /^\/(?:oid4vci|oid4vp|\.well-known)\//

// --- state --------------------------------------------------------------------------------------------------

interface Principal {
  keyId: string
  role: Role
  template: string | null
}

interface Process {
  id: string
  templateId: string
  status: 'PENDING' | 'ISSUED'
  data: Record<string, unknown>[] | null
  validator: Record<string, unknown> | null
  /** credentials the relying party submitted before the wallet proved a holder */
  submitted: Record<string, unknown>[] | null
  createdAt: number
  updatedAt: number
  // the grant, kept on the process: one grant per process
  code: string
  codeExpiresAt: number
  codeUsed: boolean
  holderDid: string | null
  accessToken: string | null
  tokenExpiresAt: number
  transactionId: string | null
  redeemed: boolean
  notificationId: string | null
  /** the signed credential JWTs, as the wallet gets them */
  jwts: string[]
}

interface Session {
  id: string
  templateId: string
  status: 'PENDING' | 'VERIFIED' | 'REJECTED'
  definition: Record<string, unknown>
  request: Record<string, unknown> & { nonce: string; state: string; client_id: string; response_uri: string }
  requestJwt: string
  createdAt: number
  updatedAt: number
  expiresAt: number
  requestedAt: number | null
  submission: Record<string, unknown> | null
  validations: Record<string, unknown> | null
  subject: string | null
  sourceWallet: string | null
}

const iso = (ms: number) => new Date(ms).toISOString()
const vcTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
const random = (bytes: number) => randomBytes(bytes).toString('base64url')
const digest = (text: string) => createHash('sha256').update(text).digest()
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** did:key → jose key, cached (the service caches resolved did:keys too). */
const holderKeys = new Map<string, Awaited<ReturnType<typeof importJWK>>>()
async function keyOf(
  kid: unknown,
  where: string,
): Promise<{ did: string; key: Awaited<ReturnType<typeof importJWK>> }> {
  if (typeof kid !== 'string' || !kid.startsWith('did:key:') || !kid.includes('#')) {
    throw new Error(`${where} kid ${JSON.stringify(kid)} is not a did:key key id`)
  }
  const didKey = resolveDidKey(kid)
  let key = holderKeys.get(kid)
  if (!key) {
    if (!ALGS.includes(didKey.alg)) throw new Error(`${where} key type ${didKey.alg} is not supported`)
    key = await importJWK({ ...didKey.publicJwk } as Parameters<typeof importJWK>[0], didKey.alg)
    if (holderKeys.size >= 10_000) holderKeys.clear()
    holderKeys.set(kid, key)
  }
  return { did: didKey.did, key }
}

function processView(p: Process) {
  return {
    id: p.id,
    status: p.status,
    group: p.templateId,
    type: 'OIDC4VCI_PRE_AUTHORIZED',
    ...(p.status === 'ISSUED' && p.data ? { data: p.data } : {}),
    validator: p.validator,
    createdAt: iso(p.createdAt),
    updatedAt: iso(p.updatedAt),
  }
}

export async function startBareFlows(options: { host?: string; port?: number } = {}): Promise<BareFlows> {
  const host = options.host ?? '127.0.0.1'
  let base = ''
  const issuerUrl = () => `${base}/oid4vci/${TENANT}`

  // Keys: one for access tokens (the service's key), one for the tenant's issuer and verifier did:key.
  // jose keys (WebCrypto CryptoKeys): handing jose a node KeyObject converts it on every call.
  const serviceKey = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
  const serviceKid = `bare-${random(6)}`
  const issuerPair = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true })
  const issuerJwk = await exportJWK(issuerPair.publicKey)
  const issuer = {
    ...didKeyFromPublicKey(
      createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: issuerJwk.x as string }, format: 'jwk' }),
    ),
    privateKey: issuerPair.privateKey,
  }

  const apiKeys = new Map<string, ApiKey>(
    [
      { id: ISSUANCE.keyId, secret: ISSUANCE.secret, role: 'app' as const, template: ISSUANCE.template },
      {
        id: VERIFICATION.keyId,
        secret: VERIFICATION.secret,
        role: 'app' as const,
        template: VERIFICATION.template,
      },
      { id: ADMIN.keyId, secret: ADMIN.secret, role: 'admin' as const, template: null },
    ].map((k) => [k.id, { id: k.id, role: k.role, template: k.template, digest: digest(k.secret) }]),
  )
  const dummyDigest = digest(random(32))
  const processes = new Map<string, Process>()
  const byCode = new Map<string, Process>()
  const byToken = new Map<string, Process>()
  const nonces = new Map<string, number>()
  const sessions = new Map<string, Session>()

  // --- relying-party auth ---------------------------------------------------------------------------------

  async function login(request: FastifyRequest): Promise<string> {
    const { authorization, tenant, ssiconfig } = request.headers as Record<string, string | undefined>
    if (!authorization) {
      throw new Problem(
        'unauthenticated',
        'send Authorization: Basic base64(api_key_id:api_key_secret)',
        BASIC_CHALLENGE,
      )
    }
    if (!tenant) throw new Problem('missing_header', 'header "tenant" (the tenant id) is required')
    const bad = () =>
      new Problem(
        'invalid_credentials',
        'the API key id or secret is wrong, or the key is not valid for this tenant',
        BASIC_CHALLENGE,
      )
    const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(authorization)
    if (!match?.[1]) throw bad()
    const decoded = Buffer.from(match[1], 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon <= 0) throw bad()
    const key = apiKeys.get(decoded.slice(0, colon))
    // Always compare, even for an unknown id, so timing does not tell which ids exist.
    const secretOk = timingSafeEqual(digest(decoded.slice(colon + 1)), key?.digest ?? dummyDigest)
    if (!key || !secretOk || tenant !== TENANT) throw bad()
    const requested = ssiconfig || undefined
    if (key.template !== null && requested !== undefined && requested !== key.template) {
      throw new Problem(
        'template_not_allowed',
        `this API key is linked to template "${key.template}"; ssiconfig "${requested}" is not allowed`,
      )
    }
    const template = key.template ?? requested ?? null
    if (template !== null && !(template in TEMPLATES)) {
      throw new Problem('template_not_allowed', `template "${template}" does not exist in this tenant`)
    }
    const iat = Math.floor(Date.now() / 1000)
    return new SignJWT({ tenant: TENANT, role: key.role, template })
      .setProtectedHeader({ alg: 'EdDSA', kid: serviceKid, typ: TOKEN_TYPE })
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(key.id)
      .setJti(randomUUID())
      .setIssuedAt(iat)
      .setExpirationTime(iat + TOKEN_LIFETIME_S)
      .sign(serviceKey.privateKey)
  }

  /** `Authorization: jwt <token>` (Bearer accepted too): signature, typ, iss, aud, exp, and the key still known. */
  async function authenticate(request: FastifyRequest, roles: readonly Role[]): Promise<Principal> {
    const header = request.headers.authorization
    if (!header) {
      throw new Problem(
        'unauthenticated',
        'send Authorization: jwt <access token> (obtained by login)',
        JWT_CHALLENGE,
      )
    }
    const match = /^(?:jwt|bearer) +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header)
    if (!match?.[1])
      throw new Problem(
        'invalid_token',
        'the Authorization header must be "jwt <access token>"',
        JWT_CHALLENGE,
      )
    let payload: JWTPayload
    try {
      payload = (
        await jwtVerify(match[1], serviceKey.publicKey, {
          algorithms: ['EdDSA'],
          typ: TOKEN_TYPE,
          issuer: TOKEN_ISSUER,
          audience: TOKEN_AUDIENCE,
          requiredClaims: ['sub', 'exp', 'iat', 'tenant', 'role'],
        })
      ).payload
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired)
        throw new Problem('token_expired', 'the access token has expired', JWT_CHALLENGE)
      if (error instanceof joseErrors.JOSEError) {
        throw new Problem('invalid_token', `the access token is not valid: ${error.code}`, JWT_CHALLENGE)
      }
      throw error
    }
    const key = apiKeys.get(String(payload.sub))
    if (!key || payload.tenant !== TENANT) {
      throw new Problem('invalid_token', 'the API key behind this access token was revoked', JWT_CHALLENGE)
    }
    const principal: Principal = {
      keyId: key.id,
      role: key.role,
      template: (payload.template as string | null) ?? null,
    }
    if (!roles.includes(principal.role)) {
      const names = { app: 'an application', admin: 'an administrator' }
      throw new Problem(
        'role_forbidden',
        `this call must be made by ${roles.map((r) => names[r]).join(' or ')}; the token belongs to ${names[principal.role]}`,
      )
    }
    return principal
  }

  function templateAllowed(principal: Principal, template: string, what: string) {
    if (principal.template !== null && principal.template !== template) {
      throw new Problem(
        'template_not_allowed',
        `this token was issued for template "${principal.template}"; ${what} "${template}" is not allowed`,
      )
    }
  }

  // --- issuance -------------------------------------------------------------------------------------------

  function getProcess(principal: Principal, id: string): Process {
    const process = processes.get(id)
    if (!process) throw new Problem('process_not_found', `no issuance process "${id}"`)
    if (
      principal.role !== 'admin' &&
      principal.template !== null &&
      principal.template !== process.templateId
    ) {
      throw new Problem(
        'process_not_linked',
        `process "${id}" belongs to template "${process.templateId}", not to this token's template "${principal.template}"`,
      )
    }
    return process
  }

  /** Section 2.3 defaults, minimal: a non-empty array of objects with a credentialSubject and the template's type. */
  function prepare(body: unknown): Record<string, unknown>[] {
    const invalid = (detail: string) => new Problem('invalid_credential', detail)
    if (!Array.isArray(body) || body.length === 0)
      throw invalid('body must be a non-empty array of credential objects')
    return body.map((c, i) => {
      if (!isObject(c) || !isObject(c.credentialSubject))
        throw invalid(`body/${i}/credentialSubject: is required and must be an object`)
      if (
        !Array.isArray(c.type) ||
        c.type[0] !== 'VerifiableCredential' ||
        c.type.at(-1) !== CREDENTIAL_TYPE
      ) {
        throw invalid(
          `body/${i}/type: must start with "VerifiableCredential" and end with "${CREDENTIAL_TYPE}"`,
        )
      }
      return {
        ...c,
        '@context': Array.isArray(c['@context']) ? c['@context'] : [VC_V1_CONTEXT],
        id: typeof c.id === 'string' ? c.id : `urn:uuid:${randomUUID()}`,
      }
    })
  }

  /** Signs the prepared credentials for the proven holder (jwt_vc_json, as the service) and moves the process to ISSUED. */
  async function issue(process: Process, prepared: Record<string, unknown>[], holderDid: string) {
    const now = Date.now()
    const data: Record<string, unknown>[] = []
    const jwts: string[] = []
    for (const c of prepared) {
      const issuanceDate = typeof c.issuanceDate === 'string' ? c.issuanceDate : vcTime(now)
      const credential = {
        ...c,
        issuer: issuer.did,
        issuanceDate,
        credentialSubject: { ...(c.credentialSubject as Record<string, unknown>), id: holderDid },
      }
      const jwt = await new SignJWT({
        iss: issuer.did,
        sub: holderDid,
        jti: c.id as string,
        nbf: Math.floor(Date.parse(issuanceDate) / 1000),
        iat: Math.floor(now / 1000),
        vc: credential,
      })
        .setProtectedHeader({ alg: 'EdDSA', typ: JWT_TYP, kid: issuer.kid })
        .sign(issuer.privateKey)
      jwts.push(jwt)
      data.push({ ...credential, proof: { type: 'JwtProof2020', jwt } })
    }
    Object.assign(process, {
      status: 'ISSUED',
      data,
      jwts,
      submitted: null,
      updatedAt: Math.max(now, process.updatedAt + 1),
    })
  }

  // --- wallet-facing OpenID4VCI helpers -----------------------------------------------------------------------

  function newNonce(): string {
    const value = random(24)
    nonces.set(value, Date.now() + C_NONCE_LIFETIME_S * 1000)
    return value
  }

  function walletGrant(request: FastifyRequest): Process {
    const { tenant } = request.params as { tenant: string }
    const header = request.headers.authorization
    if (!header) {
      throw new OAuthFailure(
        'invalid_token',
        'an access token is required (Authorization: Bearer …)',
        {},
        { 'WWW-Authenticate': 'Bearer' },
      )
    }
    const fail = (description: string) =>
      new OAuthFailure(
        'invalid_token',
        description,
        {},
        {
          'WWW-Authenticate': `Bearer error="invalid_token", error_description="${description}"`,
        },
      )
    const match = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header)
    if (!match?.[1]) throw fail('Authorization must be "Bearer <access token>"')
    const process = byToken.get(match[1])
    if (!process || tenant !== TENANT) throw fail('access token is unknown to this issuer')
    if (Date.now() >= process.tokenExpiresAt) throw fail('access token has expired')
    return process
  }

  /** Appendix F.1 `jwt` key proof: typ, did:key kid, signature (jose), aud, iat age; returns holder and nonce. */
  async function verifyProof(
    body: Record<string, unknown>,
  ): Promise<{ holderKid: string; holderDid: string; nonce: string; iat: number }> {
    const invalid = (d: string) => new OAuthFailure('invalid_proof', d)
    let jwt: unknown
    if (isObject(body.proof)) {
      if (body.proof.proof_type !== 'jwt')
        throw invalid('proof type must be jwt (the bare issuer verifies jwt proofs only)')
      jwt = body.proof.jwt
    } else if (isObject(body.proofs) && Array.isArray(body.proofs.jwt) && body.proofs.jwt.length === 1) {
      jwt = body.proofs.jwt[0]
    } else {
      throw invalid('a key proof is required (proof or proofs)')
    }
    if (typeof jwt !== 'string') throw invalid('proof.jwt must be a compact JWT')
    let header: ReturnType<typeof decodeProtectedHeader>
    try {
      header = decodeProtectedHeader(jwt)
    } catch (error) {
      throw invalid(`proof JWT is malformed: ${(error as Error).message}`)
    }
    if (header.typ !== PROOF_TYP) throw invalid(`proof JWT header typ must be "${PROOF_TYP}"`)
    if (header.jwk !== undefined || header.x5c !== undefined)
      throw invalid('proof JWT must identify the key with kid (did:key)')
    let holder: Awaited<ReturnType<typeof keyOf>>
    try {
      holder = await keyOf(header.kid, 'proof JWT header')
    } catch (error) {
      throw invalid((error as Error).message)
    }
    let payload: JWTPayload
    try {
      payload = (
        await jwtVerify(jwt, holder.key, {
          algorithms: ALGS,
          typ: PROOF_TYP,
          audience: issuerUrl(),
          maxTokenAge: PROOF_MAX_AGE_S,
          clockTolerance: SKEW_S,
        })
      ).payload
    } catch (error) {
      throw invalid(
        error instanceof joseErrors.JWSSignatureVerificationFailed
          ? 'proof JWT signature does not verify with the key named in kid'
          : `proof JWT rejected: ${(error as Error).message}`,
      )
    }
    if (typeof payload.nonce !== 'string' || payload.nonce.length === 0) {
      throw new OAuthFailure('invalid_nonce', 'proof JWT has no nonce; fetch one from the nonce endpoint')
    }
    return {
      holderKid: header.kid as string,
      holderDid: holder.did,
      nonce: payload.nonce,
      iat: payload.iat as number,
    }
  }

  // --- verification ---------------------------------------------------------------------------------------

  /** Section 2.8 without the dataAgreement and the detached proofs (and no status constraint: no status lists). */
  function definitionFor(id: string) {
    return {
      id,
      name: VERIFICATION_NAME,
      format: FORMAT,
      submission_requirements: [{ name: 'mandatory', rule: 'all', from: 'mandatory' }],
      input_descriptors: [
        {
          id: CREDENTIAL_TYPE,
          name: CREDENTIAL_TYPE,
          group: ['mandatory'],
          constraints: {
            fields: [
              {
                path: ['$.vc.type[-1:]', '$.type[-1:]'],
                purpose: `The credential is a ${CREDENTIAL_TYPE}`,
                filter: { type: 'string', const: CREDENTIAL_TYPE },
                intent_to_retain: false,
              },
              {
                path: ['$.iss', '$.vc.issuer', '$.issuer', '$.vc.issuer.id', '$.issuer.id'],
                purpose: 'The credential comes from an issuer this relying party trusts',
                filter: { type: 'string', pattern: `^(${escapeRegex(issuer.did)})$` },
                intent_to_retain: false,
              },
            ],
          },
        },
      ],
    }
  }

  function liveSession(tenant: string, id: string): Session {
    const session = sessions.get(id)
    if (!session || tenant !== TENANT) throw new OAuthFailure('not_found', `no verification session "${id}"`)
    if (session.status === 'PENDING' && Date.now() >= session.expiresAt) {
      throw new OAuthFailure(
        'session_expired',
        `verification session "${id}" expired at ${iso(session.expiresAt)}`,
      )
    }
    if (session.status !== 'PENDING') {
      throw new OAuthFailure('session_closed', `verification session "${id}" is already ${session.status}`)
    }
    return session
  }

  /** The VP checks of the bare verifier: holder signature, nonce, aud, and each credential's issuer signature. */
  async function verifyVp(session: Session, vpToken: string) {
    const failures: string[] = []
    let holderDid: string | null = null
    const credentials: Record<string, unknown>[] = []
    const claims: Record<string, unknown> = {}
    let payload: JWTPayload
    try {
      const holder = await keyOf(decodeProtectedHeader(vpToken).kid, 'vp_token header')
      payload = (await jwtVerify(vpToken, holder.key, { algorithms: ALGS, clockTolerance: SKEW_S })).payload
      if (payload.iss !== undefined && payload.iss !== holder.did)
        failures.push('presentationProof: VP iss is not the DID of the signing key')
      holderDid = holder.did
    } catch (error) {
      return { failures: [`presentationProof: ${(error as Error).message}`], holderDid, credentials, claims }
    }
    if (payload.nonce !== session.request.nonce)
      failures.push("sessionBinding: VP nonce is not the nonce of this session's request")
    const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud]
    if (!audiences.includes(session.request.client_id))
      failures.push("sessionBinding: VP aud is not this verifier's client_id")
    const vp = isObject(payload.vp) ? payload.vp : {}
    const list = Array.isArray(vp.verifiableCredential) ? vp.verifiableCredential : [vp.verifiableCredential]
    if (list.length === 0 || list[0] === undefined)
      failures.push('securityMechanisms: vp.verifiableCredential is empty')
    for (const [i, jwt] of list.entries()) {
      if (jwt === undefined) continue
      try {
        if (typeof jwt !== 'string') throw new Error('is not a JWT credential (jwt_vc)')
        const signer = await keyOf(decodeProtectedHeader(jwt).kid, 'credential header')
        const vc = (
          await jwtVerify(jwt, signer.key, { algorithms: ALGS, issuer: signer.did, clockTolerance: SKEW_S })
        ).payload
        const body = isObject(vc.vc) ? vc.vc : {}
        const subject = isObject(body.credentialSubject) ? body.credentialSubject : {}
        for (const [k, v] of Object.entries(subject)) if (k !== 'id' && !(k in claims)) claims[k] = v
        credentials.push({
          ...body,
          id: body.id ?? vc.jti,
          issuer: body.issuer ?? vc.iss,
          credentialSubject: { ...subject, id: subject.id ?? vc.sub },
          proof: { type: 'JwtProof2020', jwt },
        })
      } catch (error) {
        failures.push(`credentialProof: verifiableCredential[${i}] ${(error as Error).message}`)
      }
    }
    return { failures, holderDid, credentials, claims }
  }

  function sessionView(session: Session) {
    const state = session.status === 'PENDING' && Date.now() >= session.expiresAt ? 'EXPIRED' : session.status
    const d = session.definition
    return {
      httpStatus: state === 'PENDING' ? 202 : 200,
      body: {
        Id: session.id,
        Status: state,
        PresentationSubmission: session.submission,
        PresentationSubmissionFormat: session.submission ? 'jwt_vp' : '',
        Validations: session.validations,
        PresentationDefinition: d,
        AuthRequest: {
          ...session.request,
          redirect_uri: session.request.response_uri,
          name: d.name,
          id: d.id,
          format: d.format,
          submission_requirements: d.submission_requirements,
          input_descriptors: d.input_descriptors,
        },
        RequestedAt: session.requestedAt === null ? null : iso(session.requestedAt),
        CreatedAt: iso(session.createdAt),
        UpdatedAt: iso(session.updatedAt),
        ExpiredAt: iso(session.expiresAt),
        DeletedAt: null,
        SourceWallet: session.sourceWallet ?? '',
        Callback: '',
        Subject: session.subject ?? '',
      },
    }
  }

  // --- the app --------------------------------------------------------------------------------------------

  const app = Fastify({ logger: false, bodyLimit: BODY_LIMIT })

  // One handler for both error families: wallet paths answer OAuth JSON, the relying-party API problem+json.
  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (error instanceof OAuthFailure || (WALLET_PATH.test(request.url) && !(error instanceof Problem))) {
      const clientError = (error.statusCode ?? 500) < 500
      const e =
        error instanceof OAuthFailure
          ? error
          : new OAuthFailure(
              clientError ? 'invalid_request' : 'server_error',
              clientError ? error.message : 'an internal error occurred',
            )
      return reply
        .code(OAUTH_STATUS[e.error])
        .headers({ 'Cache-Control': 'no-store', ...e.headers })
        .send({ error: e.error, error_description: e.description, ...e.extra })
    }
    const p =
      error instanceof Problem
        ? error
        : error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? new Problem('unsupported_media_type', error.message)
          : error.code?.startsWith('FST_ERR_CTP')
            ? new Problem('malformed_json', error.message)
            : undefined
    const status = p ? PROBLEM_STATUS[p.code] : 500
    const code = p?.code ?? 'internal_error'
    return reply
      .code(status)
      .headers(p?.headers ?? {})
      .type(PROBLEM_MEDIA_TYPE)
      .send({
        type: `urn:vc-harness:problem:${code}`,
        title: code,
        status,
        detail: p?.detail ?? 'an internal error occurred',
        code,
      })
  })
  // Unknown routes are problem+json everywhere, wallet paths included (the service's root 404 handler).
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .type(PROBLEM_MEDIA_TYPE)
      .send({
        type: 'urn:vc-harness:problem:not_found',
        title: 'Not found',
        status: 404,
        detail: `no route ${request.method} ${request.url.split('?')[0]}`,
        code: 'not_found',
      }),
  )
  // Login sends Content-Type: application/json with no body; forms are parsed with URLSearchParams.
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(null, undefined)
    try {
      done(null, JSON.parse(body as string))
    } catch (error) {
      done(
        Object.assign(error as Error, { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }),
        undefined,
      )
    }
  })
  app.addContentTypeParser(FORM_MEDIA_TYPE, { parseAs: 'string' }, (_request, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(body as string))),
  )
  const json = (reply: FastifyReply, body: unknown) =>
    reply.header('Cache-Control', 'no-store').type('application/json').send(body)
  const isForm = (request: FastifyRequest) =>
    (request.headers['content-type'] ?? '').toLowerCase().startsWith(FORM_MEDIA_TYPE)

  // 4.1
  app.post('/admin/v1/api_keys/login', async (request, reply) => {
    const token = await login(request)
    // Set on the raw response so the wire keeps the interface's spelling, as the service does.
    reply.raw.setHeader('Token', token)
    reply.raw.setHeader('Token_type', 'jwt')
    return reply.header('Cache-Control', 'no-store').send({ message: 'SUCCESS' })
  })

  // 4.2
  app.post<{ Body: { group?: unknown } }>(
    '/api/v3/oidc-issuance/credential-offer',
    async (request, reply) => {
      const principal = await authenticate(request, ['app'])
      const group = request.body?.group
      if (typeof group !== 'string') throw new Problem('validation_failed', 'body/group: missing field')
      templateAllowed(principal, group, 'group')
      if (TEMPLATES[group] !== 'issuance')
        throw new Problem('template_not_found', `no issuance template "${group}" in this tenant`)
      const now = Date.now()
      const process: Process = {
        id: randomUUID(),
        templateId: group,
        status: 'PENDING',
        data: null,
        validator: null,
        submitted: null,
        createdAt: now,
        updatedAt: now,
        code: random(32),
        codeExpiresAt: now + CODE_LIFETIME_S * 1000,
        codeUsed: false,
        holderDid: null,
        accessToken: null,
        tokenExpiresAt: 0,
        transactionId: null,
        redeemed: false,
        notificationId: null,
        jwts: [],
      }
      processes.set(process.id, process)
      byCode.set(process.code, process)
      const offer = `${issuerUrl()}/credential-offer/${process.id}`
      return reply.code(201).send({
        credential_offer_uri: `${CREDENTIAL_OFFER_SCHEME}://?credential_offer_uri=${encodeURIComponent(offer)}`,
      })
    },
  )

  // 4.3
  app.get<{ Params: { id: string } }>('/admin/v1/issuanceRequests/:id', async (request) =>
    processView(getProcess(await authenticate(request, ['app']), request.params.id)),
  )

  // 4.4: the linked application or an administrator (attended issuance).
  app.patch<{ Params: { id: string } }>('/admin/v1/issuanceRequests/:id/credentials', async (request) => {
    const process = getProcess(await authenticate(request, ['app', 'admin']), request.params.id)
    if (process.status !== 'PENDING' || process.submitted !== null) {
      throw new Problem('already_submitted', `credentials were already submitted to process "${process.id}"`)
    }
    const prepared = prepare(request.body)
    // Marked submitted before any await, so a concurrent submission gets the 409 above.
    process.submitted = prepared
    if (process.holderDid) await issue(process, prepared, process.holderDid)
    else process.updatedAt = Math.max(Date.now(), process.updatedAt + 1)
    return [processView(process)]
  })

  // OpenID4VCI, wallet-facing.
  const issuerMetadata = async (
    request: FastifyRequest<{ Params: { tenant: string } }>,
    reply: FastifyReply,
  ) => {
    if (request.params.tenant !== TENANT)
      throw new OAuthFailure('not_found', `no credential issuer for tenant "${request.params.tenant}"`)
    const id = issuerUrl()
    return json(reply, {
      credential_issuer: id,
      credential_endpoint: `${id}/credential`,
      nonce_endpoint: `${id}/nonce`,
      deferred_credential_endpoint: `${id}/deferred_credential`,
      notification_endpoint: `${id}/notification`,
      display: [{ name: `vc-harness issuer (${TENANT})`, locale: 'en' }],
      credential_configurations_supported: {
        [ISSUANCE.template]: {
          format: 'jwt_vc_json',
          scope: ISSUANCE.template,
          cryptographic_binding_methods_supported: ['did:key'],
          credential_signing_alg_values_supported: ['EdDSA'],
          proof_types_supported: { jwt: { proof_signing_alg_values_supported: ALGS } },
          credential_definition: { type: ['VerifiableCredential', CREDENTIAL_TYPE] },
          display: [{ name: CREDENTIAL_TYPE, locale: 'en' }],
        },
      },
      vc_harness_issuer_dids: [issuer.did],
    })
  }
  const asMetadata = async (request: FastifyRequest<{ Params: { tenant: string } }>, reply: FastifyReply) => {
    if (request.params.tenant !== TENANT)
      throw new OAuthFailure('not_found', `no credential issuer for tenant "${request.params.tenant}"`)
    const id = issuerUrl()
    return json(reply, {
      issuer: id,
      token_endpoint: `${id}/token`,
      grant_types_supported: [PRE_AUTHORIZED_GRANT],
      token_endpoint_auth_methods_supported: ['none'],
      'pre-authorized_grant_anonymous_access_supported': true,
    })
  }
  app.get('/oid4vci/:tenant/.well-known/openid-credential-issuer', issuerMetadata)
  app.get('/.well-known/openid-credential-issuer/oid4vci/:tenant', issuerMetadata)
  app.get('/oid4vci/:tenant/.well-known/oauth-authorization-server', asMetadata)
  app.get('/.well-known/oauth-authorization-server/oid4vci/:tenant', asMetadata)

  app.get<{ Params: { tenant: string; id: string } }>(
    '/oid4vci/:tenant/credential-offer/:id',
    async (request, reply) => {
      const process = processes.get(request.params.id)
      if (!process || request.params.tenant !== TENANT)
        throw new OAuthFailure('not_found', `no credential offer "${request.params.id}"`)
      if (process.status !== 'PENDING') {
        throw new OAuthFailure(
          'not_found',
          `credential offer "${process.id}" is closed (process ${process.status})`,
        )
      }
      return json(reply, {
        credential_issuer: issuerUrl(),
        credential_configuration_ids: [process.templateId],
        grants: { [PRE_AUTHORIZED_GRANT]: { 'pre-authorized_code': process.code } },
      })
    },
  )

  app.post<{ Params: { tenant: string }; Body: Record<string, unknown> | undefined }>(
    '/oid4vci/:tenant/token',
    async (request, reply) => {
      if (!isForm(request))
        throw new OAuthFailure('invalid_request', `the token request must be ${FORM_MEDIA_TYPE}`)
      const form = request.body ?? {}
      if (typeof form.grant_type !== 'string')
        throw new OAuthFailure('invalid_request', 'grant_type is required')
      if (form.grant_type !== PRE_AUTHORIZED_GRANT) {
        throw new OAuthFailure(
          'unsupported_grant_type',
          `grant_type "${form.grant_type}" is not supported; use ${PRE_AUTHORIZED_GRANT}`,
        )
      }
      const code = form['pre-authorized_code']
      if (typeof code !== 'string' || code.length === 0)
        throw new OAuthFailure('invalid_request', 'pre-authorized_code is required')
      const process = byCode.get(code)
      if (!process || request.params.tenant !== TENANT) {
        throw new OAuthFailure('invalid_grant', 'pre-authorized_code is unknown to this credential issuer')
      }
      // Single use: checked and burnt in one synchronous step, so two concurrent requests cannot both pass.
      if (process.codeUsed) throw new OAuthFailure('invalid_grant', 'pre-authorized_code was already used')
      if (Date.now() >= process.codeExpiresAt)
        throw new OAuthFailure('invalid_grant', 'pre-authorized_code has expired')
      if (process.status !== 'PENDING')
        throw new OAuthFailure('invalid_grant', `the issuance process is ${process.status}`)
      const txCode = form.tx_code ?? form.user_pin
      if (txCode !== undefined && txCode !== '') {
        throw new OAuthFailure('invalid_request', 'tx_code was sent but the offer did not announce one')
      }
      process.codeUsed = true
      process.accessToken = random(32)
      process.tokenExpiresAt = Date.now() + WALLET_TOKEN_LIFETIME_S * 1000
      byToken.set(process.accessToken, process)
      return json(reply.header('Pragma', 'no-cache'), {
        access_token: process.accessToken,
        token_type: 'Bearer',
        expires_in: WALLET_TOKEN_LIFETIME_S,
        c_nonce: newNonce(),
        c_nonce_expires_in: C_NONCE_LIFETIME_S,
      })
    },
  )

  app.post<{ Params: { tenant: string } }>('/oid4vci/:tenant/nonce', async (request, reply) => {
    if (request.params.tenant !== TENANT)
      throw new OAuthFailure('not_found', `no credential issuer for tenant "${request.params.tenant}"`)
    return json(reply, { c_nonce: newNonce(), c_nonce_expires_in: C_NONCE_LIFETIME_S })
  })

  app.post('/oid4vci/:tenant/credential', async (request, reply) => {
    const process = walletGrant(request)
    const body = request.body
    if (!isObject(body)) throw new OAuthFailure('invalid_credential_request', 'body must be a JSON object')
    const configurationId = body.credential_configuration_id
    if (typeof configurationId !== 'string')
      throw new OAuthFailure('invalid_credential_request', 'credential_configuration_id is required')
    if (TEMPLATES[configurationId] !== 'issuance') {
      throw new OAuthFailure(
        'unknown_credential_configuration',
        `credential configuration "${configurationId}" is not in this issuer's metadata`,
      )
    }
    if (configurationId !== process.templateId) {
      throw new OAuthFailure(
        'invalid_credential_request',
        `this access token grants "${process.templateId}", not "${configurationId}"`,
      )
    }
    if (process.holderDid !== null) {
      throw new OAuthFailure(
        'invalid_credential_request',
        'a credential was already requested with this access token; poll the deferred endpoint with its transaction_id',
      )
    }
    const proof = await verifyProof(body)
    // Single use: the nonce is deleted as it is consumed (after the await above, so nothing interleaves here).
    const expires = nonces.get(proof.nonce)
    nonces.delete(proof.nonce)
    if (expires === undefined || Date.now() >= expires) {
      throw new OAuthFailure(
        'invalid_nonce',
        'the nonce is unknown, expired or already used; fetch a fresh one',
        {
          c_nonce: newNonce(),
          c_nonce_expires_in: C_NONCE_LIFETIME_S,
        },
      )
    }
    if (process.holderDid !== null || process.status !== 'PENDING') {
      throw new OAuthFailure(
        'invalid_credential_request',
        'a credential was already requested with this access token',
      )
    }
    process.holderDid = proof.holderDid
    const entry = {
      type: 'JwtProof2020',
      created: new Date(proof.iat * 1000).toISOString(),
      creator: proof.holderKid,
      proofPurpose: 'authentication',
    }
    process.validator = {
      id: process.id,
      securityMechanisms: {
        type: ['VerifiablePresentation', 'ServiceCredentialPresentation'],
        proof: [entry],
      },
      verifiablePresentation: {
        type: ['VerifiablePresentation', 'ServiceCredentialPresentation'],
        holder: proof.holderDid,
        proof: [entry],
        verifiableCredential: [],
      },
    }
    if (process.submitted) {
      await issue(process, process.submitted, proof.holderDid)
      process.notificationId = randomUUID()
      return json(reply, {
        credentials: process.jwts.map((credential) => ({ credential })),
        notification_id: process.notificationId,
      })
    }
    process.transactionId = randomUUID()
    process.updatedAt = Math.max(Date.now(), process.updatedAt + 1)
    return json(reply.code(202), { transaction_id: process.transactionId, interval: DEFERRED_INTERVAL_S })
  })

  app.post('/oid4vci/:tenant/deferred_credential', async (request, reply) => {
    const process = walletGrant(request)
    const transactionId = isObject(request.body) ? request.body.transaction_id : undefined
    if (typeof transactionId !== 'string')
      throw new OAuthFailure('invalid_request', 'transaction_id is required')
    if (process.transactionId === null || process.transactionId !== transactionId) {
      throw new OAuthFailure('invalid_transaction_id', 'transaction_id is unknown to this access token')
    }
    if (process.redeemed)
      throw new OAuthFailure('invalid_transaction_id', 'transaction_id was already redeemed')
    if (process.status === 'PENDING') {
      throw new OAuthFailure(
        'issuance_pending',
        'the credential is not issued yet; retry after interval seconds',
        {
          interval: DEFERRED_INTERVAL_S,
        },
      )
    }
    process.redeemed = true
    process.notificationId = randomUUID()
    return json(reply, {
      credentials: process.jwts.map((credential) => ({ credential })),
      notification_id: process.notificationId,
    })
  })

  app.post('/oid4vci/:tenant/notification', async (request, reply) => {
    const process = walletGrant(request)
    const body = request.body
    if (!isObject(body)) throw new OAuthFailure('invalid_notification_request', 'body must be a JSON object')
    if (typeof body.notification_id !== 'string')
      throw new OAuthFailure('invalid_notification_request', 'notification_id is required')
    if (typeof body.event !== 'string' || !NOTIFICATION_EVENTS.has(body.event)) {
      throw new OAuthFailure(
        'invalid_notification_request',
        `event must be one of ${[...NOTIFICATION_EVENTS].join(', ')}`,
      )
    }
    if (process.notificationId === null || process.notificationId !== body.notification_id) {
      throw new OAuthFailure('invalid_notification_id', 'notification_id is unknown to this access token')
    }
    return reply.code(204).header('Cache-Control', 'no-store').send()
  })

  // 4.6
  app.post<{ Body: { ssiConfigId?: unknown } }>('/api/v3/sessions', async (request, reply) => {
    const principal = await authenticate(request, ['app'])
    const ssiConfigId = request.body?.ssiConfigId
    if (typeof ssiConfigId !== 'string')
      throw new Problem('validation_failed', 'body/ssiConfigId: missing field')
    templateAllowed(principal, ssiConfigId, 'ssiConfigId')
    if (TEMPLATES[ssiConfigId] !== 'verification') {
      throw new Problem('template_not_found', `no verification template "${ssiConfigId}" in this tenant`)
    }
    const now = Date.now()
    const id = randomUUID()
    const definition = definitionFor(id)
    const expiresAt = now + SESSION_LIFETIME_S * 1000
    const responseUri = `${base}/oid4vp/${TENANT}/responses/${id}`
    const requestPayload = {
      iss: issuer.did,
      aud: SIOP_AUDIENCE,
      client_id: issuer.did,
      client_id_scheme: 'did',
      response_type: 'vp_token',
      response_mode: 'direct_post',
      response_uri: responseUri,
      scope: 'openid',
      nonce: random(32),
      state: random(16),
      presentation_definition: definition,
      iat: Math.floor(now / 1000),
      nbf: Math.floor(now / 1000),
      exp: Math.floor(expiresAt / 1000),
      jti: id,
    }
    // Signed once at creation, as the service does; the GET serves the stored JWT.
    const requestJwt = await new SignJWT(requestPayload)
      .setProtectedHeader({ alg: 'EdDSA', typ: REQUEST_OBJECT_TYP, kid: issuer.kid })
      .sign(issuer.privateKey)
    sessions.set(id, {
      id,
      templateId: ssiConfigId,
      status: 'PENDING',
      definition,
      request: requestPayload,
      requestJwt,
      createdAt: now,
      updatedAt: now,
      expiresAt,
      requestedAt: null,
      submission: null,
      validations: null,
      subject: null,
      sourceWallet: null,
    })
    const link = new URLSearchParams({
      client_id: issuer.did,
      redirect_uri: responseUri,
      request_uri: `${base}/oid4vp/${TENANT}/requests/${id}`,
      response_mode: 'direct_post',
      response_type: 'vp_token',
      scope: 'openid',
    })
    return reply.code(201).send({
      authentication_request: `${AUTHORIZATION_REQUEST_SCHEME}://?${link.toString().replaceAll('+', '%20')}`,
      presentation_definition: definition,
    })
  })

  // 4.7: 202 while the session waits, 200 once it is final.
  app.get<{ Params: { id: string } }>('/api/v3/sessions/:id', async (request, reply) => {
    const principal = await authenticate(request, ['app'])
    const session = sessions.get(request.params.id)
    if (!session) throw new Problem('session_not_found', `no verification session "${request.params.id}"`)
    if (principal.template !== null && principal.template !== session.templateId) {
      throw new Problem(
        'session_not_linked',
        `session "${session.id}" belongs to template "${session.templateId}"`,
      )
    }
    const { httpStatus, body } = sessionView(session)
    return reply.code(httpStatus).header('Cache-Control', 'no-store').send(body)
  })

  // OpenID4VP, wallet-facing.
  app.get<{ Params: { tenant: string; id: string } }>(
    '/oid4vp/:tenant/requests/:id',
    async (request, reply) => {
      const session = liveSession(request.params.tenant, request.params.id)
      if (session.requestedAt === null) session.requestedAt = session.updatedAt = Date.now()
      return reply
        .header('Cache-Control', 'no-store')
        .type(REQUEST_OBJECT_MEDIA_TYPE)
        .send(session.requestJwt)
    },
  )

  app.post<{ Params: { tenant: string; id: string }; Body: Record<string, unknown> | undefined }>(
    '/oid4vp/:tenant/responses/:id',
    async (request, reply) => {
      if (!isForm(request))
        throw new OAuthFailure('invalid_request', `the response must be ${FORM_MEDIA_TYPE} (direct_post)`)
      const session = liveSession(request.params.tenant, request.params.id)
      const body = request.body ?? {}
      if (body.state !== session.request.state) {
        throw new OAuthFailure(
          'invalid_request',
          body.state === undefined ? 'state is missing' : "state does not match this session's request",
        )
      }
      const agent = request.headers['user-agent']
      const close = (status: 'VERIFIED' | 'REJECTED', validations: Record<string, unknown>) =>
        Object.assign(session, {
          status,
          validations,
          updatedAt: Date.now(),
          sourceWallet: agent ? agent.slice(0, 300) : null,
        })
      if (body.error !== undefined) {
        const message = `the wallet answered with error ${String(body.error)}`
        close('REJECTED', {
          status: 'REJECT',
          checks: [{ check: 'walletResponse', result: 'failed', message }],
          verificationResult: {
            checks: ['walletResponse'],
            warnings: [],
            errors: [`walletResponse: ${message}`],
          },
        })
        return json(reply, {})
      }
      if (typeof body.vp_token !== 'string' || body.vp_token.length === 0) {
        throw new OAuthFailure('invalid_request', 'vp_token is missing (or send error for a refusal)')
      }
      let submission: unknown
      try {
        submission =
          typeof body.presentation_submission === 'string'
            ? JSON.parse(body.presentation_submission)
            : undefined
      } catch {
        throw new OAuthFailure('invalid_request', 'presentation_submission is not valid JSON')
      }
      if (!isObject(submission))
        throw new OAuthFailure('invalid_request', 'presentation_submission is missing or not a JSON object')
      const verdict = await verifyVp(session, body.vp_token)
      if (session.status !== 'PENDING')
        throw new OAuthFailure('session_closed', `verification session "${session.id}" changed meanwhile`)
      const checks = ['presentationProof', 'sessionBinding', 'credentialProof']
      if (verdict.failures.length > 0) {
        close('REJECTED', {
          status: 'REJECT',
          checks: verdict.failures.map((message) => ({
            check: message.split(':')[0],
            result: 'failed',
            message,
          })),
          verificationResult: { checks, warnings: [], errors: verdict.failures },
        })
        session.subject = verdict.holderDid
        throw new OAuthFailure(
          'invalid_presentation',
          `the presentation was rejected: ${verdict.failures.join(' | ')}`,
        )
      }
      close('VERIFIED', {
        status: 'SUCCESS',
        checks: checks.map((check) => ({ check, result: 'passed', message: 'passed' })),
        verificationResult: { checks, warnings: [], errors: [] },
      })
      session.subject = verdict.holderDid
      session.submission = {
        ...submission,
        holder: verdict.holderDid,
        verifiableCredential: verdict.credentials,
      }
      return json(reply, {})
    },
  )

  await app.listen({ host, port: options.port ?? 0 })
  const address = app.server.address()
  if (typeof address !== 'object' || !address) throw new Error('bare flows server has no TCP address')
  const publicHost =
    host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host
  base = `http://${publicHost}:${address.port}`
  return {
    url: base,
    keys: {
      tenant: TENANT,
      issuance: { ...ISSUANCE },
      verification: { ...VERIFICATION },
      admin: { ...ADMIN },
    },
    close: () => app.close(),
  }
}
