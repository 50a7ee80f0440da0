// A peer OpenID4VCI issuer for the benchmark comparison: pre-authorized code, built the way a user of the
// Sphereon libraries builds one instead of running our service. @sphereon/oid4vci-issuer (VcIssuerBuilder,
// in-memory state managers) does the protocol; @sphereon/oid4vci-issuer-server (express) serves it. Our code
// supplies only what the library leaves to its user: key material, the proof and access-token verify callbacks
// (node:crypto via src/shared), the credential data supplier and signer, and three local fixes for library gaps
// (single-use pre-authorized codes, notification claim name, console noise) marked "library gap" below.
//
// Issuance is immediate (the credential endpoint answers 200). Run as a script it is a forkable child: it
// starts the issuer and answers IPC messages ({kind:'offer'|'usage'|'stop'}), so a benchmark can keep the
// peer's CPU apart from the wallet's.

import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import {
  type CNonceState,
  type CredentialConfigurationSupportedV1_0_15,
  type CredentialOfferSession,
  EVENTS,
  IssueStatus,
  type JWTHeader,
  type JWTPayload,
  type JWTVerifyCallback,
  type Jwt,
  type OAuthGrantType,
  PRE_AUTH_CODE_LITERAL,
  PRE_AUTH_GRANT_LITERAL,
  type URIState,
} from '@sphereon/oid4vci-common'
import {
  AuthorizationServerMetadataBuilder,
  type CredentialDataSupplier,
  type CredentialIssuanceInput,
  type CredentialSignerCallback,
  MemoryStates,
  VcIssuerBuilder,
} from '@sphereon/oid4vci-issuer'
import { notificationEndpoint, OID4VCIServer } from '@sphereon/oid4vci-issuer-server'
import { ExpressBuilder } from '@sphereon/ssi-express-support'
import { didKeyFromPublicKey, generateKeyPair, resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, signJws, verifyJws } from '../../src/shared/jws.ts'
import { JWT_TYP } from '../../src/shared/wire.ts'

export interface PeerIssuer {
  /** the credential issuer identifier, http://HOST:PORT (an origin root: oid4vci-client appends well-known paths) */
  url: string
  /** a fresh pre-authorized offer deep link, `openid-credential-offer://?credential_offer=…` (by value) */
  createOffer(): Promise<string>
  close(): Promise<void>
}

export const PEER_CONFIGURATION_ID = 'UniversityDegreeCredential'
const VC_CONTEXT_V1 = 'https://www.w3.org/2018/credentials/v1'
const DEGREE = { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' }
const PROOF_ALGS = ['EdDSA', 'ES256', 'ES256K'] as const
/** seconds: pre-authorized code, access token and c_nonce lifetimes (the library's defaults) */
const CODE_TTL = 300
const TOKEN_TTL = 300
const NONCE_TTL = 300
/** seconds an offer session lives in memory; a cleanup timer evicts expired ones */
const SESSION_TTL = 600

// --- library gap: console noise ---------------------------------------------------------------------------
// EVENTS.emit (ssi-types EventManager) console.info's "Emitting '<event>' event" with the whole event (the
// signed credential included) on every offer and every issuance, and re-enables that console logger on each
// call, so logger options cannot turn it off. While a peer runs, the singleton's emit dispatches to its
// emitters without the log line.
type Emit = (eventName: unknown, event: unknown, ...args: unknown[]) => void
const eventManager = EVENTS as unknown as {
  emit: Emit
  emitters(filter: { eventName: unknown }): Array<{ emit(eventName: unknown, ...args: unknown[]): boolean }>
}
let quietDepth = 0
let loudEmit: Emit | undefined
function quietEvents(): void {
  if (quietDepth++ > 0) return
  loudEmit = eventManager.emit
  eventManager.emit = (eventName, event, ...args) => {
    for (const emitter of eventManager.emitters({ eventName })) emitter.emit(eventName, event, args)
  }
}
function loudEvents(): void {
  if (--quietDepth > 0 || !loudEmit) return
  eventManager.emit = loudEmit
  loudEmit = undefined
}

/** Minimal did:key DID document: the library insists on one whenever the verify callback names a DID. */
function didDocument(did: string, kid: string, publicKeyJwk: JsonWebKey): Record<string, unknown> {
  return {
    '@context': ['https://www.w3.org/ns/did/v1'],
    id: did,
    verificationMethod: [{ id: kid, type: 'JsonWebKey2020', controller: did, publicKeyJwk }],
    authentication: [kid],
    assertionMethod: [kid],
  }
}

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host
}

export async function startPeerIssuer(options: { host?: string; port?: number } = {}): Promise<PeerIssuer> {
  const host = options.host ?? '127.0.0.1'
  const tenantKeys = generateKeyPair('EdDSA')
  const issuerKey = didKeyFromPublicKey(tenantKeys.publicKey)

  // express app with the library's own body parsers; we listen ourselves to learn the port before the
  // issuer metadata (which names it) is built
  const expressSupport = ExpressBuilder.fromServerOpts({
    hostname: host,
    port: options.port ?? 0,
    startListening: false,
  }).build({ startListening: false })
  // express has no type declarations here: the app is `any`, kept to this local
  const app = expressSupport.express as unknown as {
    (req: IncomingMessage, res: ServerResponse): void
    post(
      path: string,
      handler: (req: ExpressRequest, res: ExpressResponse, next: () => void) => unknown,
    ): void
    use(handler: (err: unknown, req: unknown, res: ExpressResponse, next: unknown) => void): void
  }
  const httpServer = createServer(app)
  httpServer.keepAliveTimeout = 10_000
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(options.port ?? 0, host, () => {
      httpServer.off('error', reject)
      resolve()
    })
  })
  const port = (httpServer.address() as AddressInfo).port
  const url = `http://${formatHost(host)}:${port}`

  // the proof of possession: header kid must be a did:key; its key verifies the signature
  const verifyProof: JWTVerifyCallback = async ({ jwt }) => {
    const kid = decodeJws(jwt).header.kid
    if (typeof kid !== 'string' || !kid.startsWith('did:key:')) {
      throw new Error('the proof must name a did:key in its kid header')
    }
    const holder = resolveDidKey(kid)
    const { header, payload } = verifyJws(jwt, holder.publicKey, { algorithms: PROOF_ALGS })
    return {
      jwt: { header: header as JWTHeader, payload: payload as JWTPayload },
      kid,
      alg: holder.alg,
      did: holder.did,
      didDocument: didDocument(holder.did, holder.kid, holder.publicJwk),
    }
  }

  // access tokens: JWTs the issuer signs itself. Without an explicit verification callback the credential
  // endpoint would verify bearer tokens with the *proof* callback (issuer.jwtVerifyCallback), i.e. accept any
  // JWT a holder signs with its own did:key as an access token.
  const signAccessToken = async (jwt: Jwt): Promise<string> => {
    const payload = { ...jwt.payload } as Record<string, unknown>
    // library gap: the notification endpoint reads `pre-authorized_code` from the token, the token endpoint
    // writes `preAuthorizedCode`; carry both so notifications find their session
    if (typeof payload.preAuthorizedCode === 'string')
      payload[PRE_AUTH_CODE_LITERAL] = payload.preAuthorizedCode
    return signJws({ ...jwt.header, alg: 'EdDSA', kid: issuerKey.kid }, payload, tenantKeys.privateKey)
  }
  const verifyAccessToken: JWTVerifyCallback = async ({ jwt }) => {
    const { header, payload } = verifyJws(jwt, issuerKey.publicKey, { algorithms: ['EdDSA'] })
    if (header.kid !== issuerKey.kid || payload.iss !== url)
      throw new Error('not an access token of this issuer')
    if (typeof payload.exp !== 'number' || payload.exp * 1000 <= Date.now())
      throw new Error('access token expired')
    return { jwt: { header: header as JWTHeader, payload: payload as JWTPayload } }
  }

  // what the credential says; the library adds credentialSubject.id = the proof's DID
  const supplyDegree: CredentialDataSupplier = async () => ({
    format: 'jwt_vc_json',
    credential: {
      '@context': [VC_CONTEXT_V1],
      type: ['VerifiableCredential', 'UniversityDegreeCredential'],
      issuer: issuerKey.did,
      issuanceDate: new Date().toISOString(),
      credentialSubject: { degree: { ...DEGREE } },
    } as CredentialIssuanceInput,
  })
  // VC-JWT (VCDM 1.1 JWT encoding): iss, sub, nbf, jti around a `vc` claim, EdDSA by the issuer's did:key
  const signCredential: CredentialSignerCallback = async ({ credential, jwtVerifyResult }) => {
    const vc = credential as unknown as {
      '@context': unknown
      type: unknown
      credentialSubject: { id?: string }
    }
    const holder = jwtVerifyResult.did
    if (!holder || vc.credentialSubject.id !== holder) throw new Error('credential subject is not the holder')
    const now = Math.floor(Date.now() / 1000)
    return signJws(
      { alg: 'EdDSA', typ: JWT_TYP, kid: issuerKey.kid },
      {
        iss: issuerKey.did,
        sub: holder,
        nbf: now,
        iat: now,
        jti: `urn:uuid:${randomUUID()}`,
        vc: { '@context': vc['@context'], type: vc.type, credentialSubject: vc.credentialSubject },
      },
      tenantKeys.privateKey,
    )
  }

  const configuration: CredentialConfigurationSupportedV1_0_15 = {
    format: 'jwt_vc_json',
    cryptographic_binding_methods_supported: ['did:key'],
    credential_signing_alg_values_supported: ['EdDSA'],
    proof_types_supported: { jwt: { proof_signing_alg_values_supported: [...PROOF_ALGS] } },
    credential_definition: { type: ['VerifiableCredential', 'UniversityDegreeCredential'] },
    display: [{ name: 'University Degree', locale: 'en-US' }],
  } as CredentialConfigurationSupportedV1_0_15

  const sessions = new MemoryStates<CredentialOfferSession>({ expiresInSec: SESSION_TTL })
  const uris = new MemoryStates<URIState>({ expiresInSec: SESSION_TTL })
  const cNonces = new MemoryStates<CNonceState>({ expiresInSec: NONCE_TTL })
  const stateManagers = [sessions, uris, cNonces]
  // MemoryStates never evicts on its own
  for (const states of stateManagers) await states.startCleanupRoutine(30_000)

  const issuer = new VcIssuerBuilder()
    .withCredentialIssuer(url)
    .withCredentialEndpoint(`${url}/credentials`)
    .withTokenEndpoint(`${url}/token`)
    .withNonceEndpoint(`${url}/nonce`)
    .withIssuerDisplay({ name: 'Peer issuer (Sphereon oid4vci-issuer)', locale: 'en-US' })
    .withCredentialConfigurationsSupported({ [PEER_CONFIGURATION_ID]: configuration })
    .withAuthorizationMetadata(
      new AuthorizationServerMetadataBuilder()
        .withIssuer(url)
        .withTokenEndpoint(`${url}/token`)
        // RFC 8414 requires it (and the builder checks); the pre-authorized flow never uses it
        .withResponseTypesSupported(['code'])
        // the library's OAuthGrantType union lacks the pre-authorized grant it implements
        .withGrantTypesSupported([PRE_AUTH_GRANT_LITERAL as OAuthGrantType])
        .withPreAuthorizedGrantAnonymousAccessSupported(true)
        .build(),
    )
    .withCredentialOfferStateManager(sessions)
    .withCredentialOfferURIStateManager(uris)
    .withCNonceStateManager(cNonces)
    .withCNonceExpiresIn(NONCE_TTL)
    .withJWTVerifyCallback(verifyProof)
    .withCredentialDataSupplier(supplyDegree)
    .withCredentialSignerCallback(signCredential)
    .build()
  // the server has a notification route builder but never registers it; it reads the URL from the metadata
  issuer.issuerMetadata = { ...issuer.issuerMetadata, notification_endpoint: `${url}/notification` }

  // library gap: assertValidAccessTokenRequest never checks whether the code was already redeemed, so the
  // same pre-authorized code buys any number of access tokens. Allow one token request per code: the session
  // must still be fresh, and a synchronous in-flight set closes the race between two concurrent requests.
  const redeeming = new Set<string>()
  app.post('/token', async (req, res, next) => {
    const code = req.body?.[PRE_AUTH_CODE_LITERAL]
    if (typeof code !== 'string' || code.length === 0) return next()
    if (redeeming.has(code)) return invalidGrant(res)
    redeeming.add(code)
    res.on('close', () => redeeming.delete(code))
    const session = await sessions.get(code)
    if (session && session.status !== IssueStatus.OFFER_CREATED) return invalidGrant(res)
    return next()
  })

  quietEvents()
  const server = new OID4VCIServer(expressSupport, {
    issuer,
    baseUrl: url,
    endpointOpts: {
      tokenEndpointOpts: {
        accessTokenIssuer: url,
        accessTokenSignerCallback: signAccessToken,
        accessTokenVerificationCallback: verifyAccessToken,
        tokenExpiresIn: TOKEN_TTL,
        preAuthorizedCodeExpirationDuration: CODE_TTL,
      },
      // offers are made in-process (createOffer); no unauthenticated offer-creation route
      createCredentialOfferOpts: { enabled: false },
      nonceOpts: { baseUrl: url },
    },
  })
  notificationEndpoint(server.router, issuer, {
    baseUrl: url,
    accessTokenVerificationCallback: verifyAccessToken,
  })
  // express's default error handler prints the stack of e.g. a malformed JSON body to stderr
  app.use((err, _req, res, _next) => {
    const status = (err as { status?: number }).status
    res.status(typeof status === 'number' && status >= 400 && status < 500 ? status : 500)
    res.json({ error: 'invalid_request' })
  })

  let closed = false
  return {
    url,
    async createOffer() {
      const { uri } = await issuer.createCredentialOfferURI({
        offerMode: 'VALUE',
        credential_configuration_ids: [PEER_CONFIGURATION_ID],
        // an empty pre-authorized grant: the library draws the code (a UUID v4); no tx_code
        grants: { [PRE_AUTH_GRANT_LITERAL]: {} },
        sessionLifeTimeInSec: SESSION_TTL,
      })
      return uri
    },
    async close() {
      if (closed) return
      closed = true
      for (const states of stateManagers) await states.stopCleanupRoutine()
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve())
        httpServer.closeAllConnections()
      })
      loudEvents()
    },
  }
}

interface ExpressRequest extends IncomingMessage {
  body?: Record<string, unknown>
}
interface ExpressResponse extends ServerResponse {
  status(code: number): ExpressResponse
  json(body: unknown): ExpressResponse
  set(headers: Record<string, string>): ExpressResponse
}

function invalidGrant(res: ExpressResponse): void {
  res.set({ 'Cache-Control': 'no-store' })
  res
    .status(400)
    .json({ error: 'invalid_grant', error_description: 'the pre-authorized code was already used' })
}

// --- forkable child: `node --import tsx bench/baselines/peer-issuer.ts` with an IPC channel ----------------------------

export type ToPeer = { kind: 'offer' } | { kind: 'usage' } | { kind: 'stop' }
export type FromPeer =
  | { kind: 'started'; url: string }
  | { kind: 'offer'; link: string }
  | { kind: 'usage'; cpuUs: number; rssMb: number }
  | { kind: 'failed'; message: string }

async function runChild(): Promise<void> {
  const send = (message: FromPeer) => process.send?.(message)
  const port = process.env.PEER_PORT ? Number(process.env.PEER_PORT) : undefined
  const peer = await startPeerIssuer({ ...(process.env.PEER_HOST && { host: process.env.PEER_HOST }), port })
  process.on('message', (message: ToPeer) => {
    if (message.kind === 'offer') {
      peer.createOffer().then(
        (link) => send({ kind: 'offer', link }),
        (error: unknown) => send({ kind: 'failed', message: String(error) }),
      )
    } else if (message.kind === 'usage') {
      const cpu = process.cpuUsage()
      send({ kind: 'usage', cpuUs: cpu.user + cpu.system, rssMb: process.memoryUsage().rss / 2 ** 20 })
    } else if (message.kind === 'stop') {
      void peer.close().then(() => process.disconnect?.())
    }
  })
  process.on('disconnect', () => void peer.close())
  send({ kind: 'started', url: peer.url })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && process.send) {
  runChild().catch((error: unknown) => {
    process.send?.({ kind: 'failed', message: String(error) } satisfies FromPeer)
    process.exitCode = 1
  })
}
