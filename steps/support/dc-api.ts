import { isDeepStrictEqual } from 'node:util'
import type { ApiResponse, DcqlSessionCreated, VerificationTemplateInput } from '../../src/client/index.ts'
import { DC_API_REQUEST_PARAMETERS } from '../../src/shared/dc-api.ts'
import { resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../src/shared/jws.ts'
import { REQUEST_OBJECT_TYP } from '../../src/shared/wire.ts'
import type { DcApiPresentationResult, PresentationMisbehaviour, Wallet } from '../../src/wallet/index.ts'
import type { ClientIdPrefix, DcqlAsk, DcqlFlow, DcqlFormat, ResponseMode } from './dcql.ts'
import { type WalletAttempt, walletAttempt } from './wallet-outcome.ts'
import type { FlowWorld } from './world-types.ts'

// OpenID4VP 1.0 over the W3C Digital Credentials API (Appendix A), the relying party's page and the platform
// wallet of a scenario: a dcql template with `dcql.dcApi` (created through the portal), the session's DC API
// request as the page GETs it from the 4.6 answer's `dcApi.request`, the simulated wallet answering it as a
// platform wallet does (Wallet.presentDcApi: the entry and the page's origin in, a DigitalCredential
// `{protocol, data}` out), and the page's backend POSTing `{origin, protocol, data}` to `dcApi.response`.
// The wallet, the credentials it holds, the session and what the relying party reads (4.7) are the dcql
// flow's (steps/support/dcql.ts); this flow checks the request independently of the wallet (signatures with
// src/shared/jws.ts and the keys the headers name, x5c chains to the tenant's CA) and the answer's binding.

/** How a DC API request is protected (Appendix A.1, A.3): the template's `dcql.dcApi.request`. */
export type DcApiRequestType = 'unsigned' | 'signed' | 'multisigned'

/** The origin of the relying party's page: the one origin the scenario's templates expect. */
export const RP_ORIGIN = 'https://rp.example'
/** An origin no template of the scenarios expects (a page that replays the request). */
export const UNEXPECTED_ORIGIN = 'https://phish.example'

/** Which page hands the wallet the request: the relying party's (expected) or another origin's. */
export type DcApiPage = 'the relying party' | 'unexpected'

const PROTOCOLS: Record<DcApiRequestType, string> = {
  unsigned: 'openid4vp-v1-unsigned',
  signed: 'openid4vp-v1-signed',
  multisigned: 'openid4vp-v1-multisigned',
}

/** The claims of a signed request object beside them (RFC 9101 / JWT). */
const JWT_CLAIMS = ['iss', 'aud', 'iat', 'exp', 'nbf', 'jti']

export interface DcApiTemplateChoice {
  ask: DcqlAsk
  format: DcqlFormat
  request: DcApiRequestType
  prefix?: ClientIdPrefix
  responseMode?: ResponseMode
}

type DcApiTemplateInput = VerificationTemplateInput & {
  profile: 'dcql'
  dcql: {
    format: DcqlFormat
    clientIdPrefix?: ClientIdPrefix
    responseMode?: ResponseMode
    dcApi: { request: DcApiRequestType; expectedOrigins: string[] }
  }
}

/** What dcql.ts creates for an ask (its ASKS is private): the credential type and the requested field. */
const ASKED: Record<DcqlAsk, { credentialType: string; path: string }> = {
  'family name': { credentialType: 'VerifiableId', path: '$.credentialSubject.familyName' },
  'degree name': { credentialType: 'UniversityDegreeCredential', path: '$.credentialSubject.degree.name' },
  'mDL family name': { credentialType: 'org.iso.18013.5.1.mDL', path: '$.credentialSubject.family_name' },
}

interface Entry {
  protocol: string
  data: Record<string, unknown>
}

type DcApiSession = DcqlSessionCreated & { dcApi: NonNullable<DcqlSessionCreated['dcApi']> }

const b64json = (segment: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>

export class DcApiFlow {
  private templates = 0
  private choice: DcApiTemplateChoice | undefined
  /** The entry as the page got it (and as it handed it to the wallet, possibly altered). */
  private entry: Entry | undefined
  private outcome: WalletAttempt<DcApiPresentationResult> | undefined
  private page: string | undefined
  /** The answer to the page's last POST of the wallet's DigitalCredential. */
  private posted: ApiResponse<unknown> | undefined

  constructor(
    private readonly world: FlowWorld,
    private readonly dcql: DcqlFlow,
  ) {}

  // The template and the session

  /** A dcql template with `dcql.dcApi` (its page at RP_ORIGIN), through the portal; the dcql flow opens it. */
  async defineTemplate(choice: DcApiTemplateChoice) {
    const asked = ASKED[choice.ask]
    const id = `dc-api-${++this.templates}`
    const template: DcApiTemplateInput = {
      id,
      name: `${choice.ask} (${choice.format}) over the Digital Credentials API`,
      profile: 'dcql',
      credentialTypes: [asked.credentialType],
      purpose: `We check the ${choice.ask}`,
      requestedFields: [{ path: asked.path }],
      dcql: {
        format: choice.format,
        ...(choice.prefix && { clientIdPrefix: choice.prefix }),
        ...(choice.responseMode && { responseMode: choice.responseMode }),
        dcApi: { request: choice.request, expectedOrigins: [RP_ORIGIN] },
      },
    }
    const response = await this.world.client.createVerificationTemplate(
      await this.world.logIn('admin'),
      template,
    )
    this.world.recordAnswer(response, `create the DC API verification template "${id}" (portal)`)
    this.world.expectStatus(201)
    this.choice = choice
    // The session, the wallet's credentials and 4.7 are the dcql flow's.
    this.dcql.template = {
      id,
      choice: {
        ask: choice.ask,
        format: choice.format,
        ...(choice.prefix && { prefix: choice.prefix }),
        ...(choice.responseMode && { responseMode: choice.responseMode }),
      },
    }
  }

  private requireChoice(): DcApiTemplateChoice {
    if (!this.choice) throw new Error('no DC API template was defined in this scenario')
    return this.choice
  }

  /** The 4.6 answer's `dcApi` member, which a template with `dcql.dcApi` must carry. */
  private session(): DcApiSession {
    const created = this.dcql.requireCreated()
    if (!created.dcApi)
      this.world.fail(
        `a dcApi member {protocol, request, response, expectedOrigins} in the 4.6 answer; it had ${Object.keys(created).join(', ')}`,
        null,
      )
    return created as DcApiSession
  }

  /** 4.6: dcApi names the protocol, the session's own DC API URL (GET and POST alike) and the expected origins. */
  expectOffered(protocol: string) {
    const created = this.session()
    const { dcApi } = created
    const tenant = encodeURIComponent(this.world.tenant.tenant)
    const path = `/oid4vp/${tenant}/dc-api/${encodeURIComponent(created.id)}`
    const problems: string[] = []
    if (dcApi.protocol !== protocol) problems.push(`protocol ${dcApi.protocol}`)
    let url: URL | undefined
    try {
      url = new URL(dcApi.request)
    } catch {}
    if (!url?.pathname.endsWith(path)) problems.push(`request ${dcApi.request}`)
    if (dcApi.response !== dcApi.request) problems.push(`response ${dcApi.response} differs from request`)
    if (!isDeepStrictEqual(dcApi.expectedOrigins, [RP_ORIGIN]))
      problems.push(`expectedOrigins ${JSON.stringify(dcApi.expectedOrigins)}`)
    if (problems.length > 0)
      this.world.fail(
        `dcApi {protocol: ${protocol}, request and response: …${path}, expectedOrigins: [${RP_ORIGIN}]}; ${problems.join('; ')}`,
        null,
      )
  }

  // The relying party's page

  /** GET dcApi.request: 200 application/json, the `{protocol, data}` entry for navigator.credentials.get. */
  async fetchRequest() {
    const url = new URL(this.session().dcApi.request)
    const response = await this.world.client.request<Entry>(url.origin, `${url.pathname}${url.search}`)
    this.world.recordAnswer(response, 'GET the DC API request of the session (Appendix A.2)')
    this.world.expectStatus(200)
    if (!(response.headers.get('content-type') ?? '').startsWith('application/json'))
      this.world.fail('an application/json entry {protocol, data}')
    const body = response.body as Entry
    if (typeof body !== 'object' || body === null || typeof body.data !== 'object' || body.data === null)
      this.world.fail('an entry {protocol, data} whose data is an object')
    this.entry = { protocol: body.protocol, data: body.data }
    return this.entry
  }

  private requireEntry(): Entry {
    if (!this.entry) throw new Error("the relying party's page has not got the DC API request")
    return this.entry
  }

  expectEntryProtocol(protocol: string) {
    const entry = this.requireEntry()
    if (entry.protocol !== protocol)
      this.world.fail(`an entry of protocol ${protocol}; it is of ${JSON.stringify(entry.protocol)}`, null)
  }

  /** Breaks the signature of the first signature object of a multi-signed request (one bit of its bytes). */
  corruptFirstSignature() {
    const entry = this.requireEntry()
    const request = entry.data.request as { signatures?: { signature: string }[] } | undefined
    const first = request?.signatures?.[0]
    if (!first) this.world.fail('a multi-signed request {payload, signatures: [...]}', null)
    const bytes = Buffer.from(first.signature, 'base64url')
    const i = Math.floor(bytes.length / 2)
    bytes.writeUInt8((bytes[i] ?? 0) ^ 0x01, i)
    first.signature = bytes.toString('base64url')
  }

  // The wallet, in place of the platform

  /** The platform hands the wallet the entry (fetched now unless the page has it) and the page's origin. */
  async present(page: DcApiPage, misbehave: PresentationMisbehaviour[] = []) {
    const entry = this.entry ?? (await this.fetchRequest())
    const wallet: Wallet = await this.dcql.wallet()
    this.page = page === 'the relying party' ? RP_ORIGIN : UNEXPECTED_ORIGIN
    const origin = this.page
    const what = `DC API answer for ${origin}${misbehave.length ? ` (${misbehave.join(', ')})` : ''}`
    this.outcome = await walletAttempt(what, () =>
      wallet.presentDcApi({ request: structuredClone(entry), origin }, { misbehave }),
    )
  }

  private presented(): DcApiPresentationResult {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has not answered a DC API request')
    if (outcome.kind !== 'ok')
      this.world.fail(`the wallet's ${outcome.what} to succeed; it got ${outcome.message}`, null)
    return outcome.result
  }

  // The page's backend

  /** POST dcApi.response with `{origin, protocol, data}`: the DigitalCredential and the page's origin. */
  async post(what = "POST the wallet's DigitalCredential with the page's origin (Appendix A.4)") {
    const result = this.presented()
    const url = new URL(this.session().dcApi.response)
    const response = await this.world.client.request(url.origin, `${url.pathname}${url.search}`, {
      method: 'POST',
      body: { origin: this.page, protocol: result.response.protocol, data: result.response.data },
    })
    this.world.recordAnswer(response, what)
    this.posted = response
  }

  private requirePosted(): ApiResponse<unknown> {
    if (!this.posted) throw new Error("the relying party has not posted the wallet's answer")
    return this.posted
  }

  /** 200 `{}`: the session is VERIFIED. */
  expectVerifiedAnswer() {
    const posted = this.requirePosted()
    this.world.expectStatus(200)
    if (!isDeepStrictEqual(posted.body, {})) this.world.fail('HTTP 200 {}', posted)
  }

  /** The page's backend was refused with `status` and the OAuth `error`. */
  expectRefused(status: number, error: string) {
    const posted = this.requirePosted()
    const expected = `HTTP ${status} {"error": "${error}", …}`
    this.world.expectStatus(status)
    if ((posted.body as { error?: unknown } | null)?.error !== error) this.world.fail(expected, posted)
  }

  // Expectations on the request

  /**
   * A.2: response_type vp_token, response_mode dc_api (dc_api.jwt for an encrypted answer), the session's
   * nonce and DCQL query (those of the QR request, as 4.7 shows them), no state, no response_uri nor
   * redirect_uri, nothing A.2 does not define but a signed request's JWT claims.
   */
  async expectA2Parameters(dcMode: string) {
    const params = this.parameters()
    const created = this.dcql.requireCreated()
    const read = await this.dcql.read()
    this.world.expectStatus(202)
    const auth = read.AuthRequest as { nonce?: unknown }
    const problems: string[] = []
    if (params.response_type !== 'vp_token') problems.push(`response_type ${params.response_type}`)
    if (params.response_mode !== dcMode) problems.push(`response_mode ${params.response_mode}`)
    if (typeof params.nonce !== 'string' || params.nonce !== auth.nonce)
      problems.push(`nonce ${JSON.stringify(params.nonce)}, the session's is ${JSON.stringify(auth.nonce)}`)
    if (!isDeepStrictEqual(params.dcql_query, created.dcql_query)) problems.push('another dcql_query')
    const allowed: readonly string[] =
      this.requireChoice().request === 'unsigned'
        ? DC_API_REQUEST_PARAMETERS
        : [...DC_API_REQUEST_PARAMETERS, ...JWT_CLAIMS]
    const foreign = Object.keys(params).filter((k) => !allowed.includes(k))
    if (foreign.length > 0) problems.push(`parameters Appendix A.2 does not define: ${foreign.join(', ')}`)
    if (dcMode === 'dc_api.jwt') {
      const keys = (params.client_metadata as { jwks?: { keys?: unknown[] } } | undefined)?.jwks?.keys
      if (!Array.isArray(keys) || keys.length === 0) problems.push('no client_metadata.jwks to encrypt to')
    }
    if (problems.length > 0)
      this.world.fail(
        `a DC API request {response_type: vp_token, response_mode: ${dcMode}, nonce, dcql_query, client_metadata} and no state, response_uri or redirect_uri; ${problems.join('; ')}`,
        null,
      )
  }

  /** The request parameters: `data` (unsigned), the request object's payload (signed, multisigned). */
  private parameters(): Record<string, unknown> {
    const entry = this.requireEntry()
    const type = this.requireChoice().request
    if (type === 'unsigned') return entry.data
    if (type === 'signed') {
      if (typeof entry.data.request !== 'string') this.world.fail('data.request, a compact JWS', null)
      return decodeJws(entry.data.request).payload
    }
    const request = entry.data.request as { payload?: unknown } | undefined
    if (typeof request?.payload !== 'string')
      this.world.fail('data.request, a JWS JSON Serialization with a payload', null)
    return b64json(request.payload)
  }

  /**
   * A.3.1 unsigned: `data` is the parameters, without client_id, expected_origins or request.
   * A.3.2.1 signed: `data` is `{request}`, a compact JWS of typ oauth-authz-req+jwt whose client_id is the
   * QR link's and whose expected_origins are the template's, verifying as its prefix prescribes.
   * A.3.2.2 multi-signed: `data.request` is `{payload, signatures}`, client_id in none of the payload and in
   * each protected header (distinct, at least two), each signature verifying as its prefix prescribes.
   */
  async expectProtected() {
    const entry = this.requireEntry()
    const type = this.requireChoice().request
    const link = new URL(this.dcql.requireCreated().authentication_request)
    const linkClientId = link.searchParams.get('client_id') ?? ''
    if (entry.protocol !== PROTOCOLS[type])
      this.world.fail(`protocol ${PROTOCOLS[type]}; it is ${JSON.stringify(entry.protocol)}`, null)
    if (type === 'unsigned') {
      const present = ['client_id', 'expected_origins', 'request', 'state', 'response_uri'].filter(
        (k) => k in entry.data,
      )
      if (present.length > 0)
        this.world.fail(`an unsigned request without ${present.join(', ')}; data has them`, null)
      return
    }
    if (!isDeepStrictEqual(Object.keys(entry.data), ['request']))
      this.world.fail(`data {request} only; it has ${Object.keys(entry.data).join(', ')}`, null)
    if (type === 'signed') {
      const jwt = entry.data.request as string
      const { header, payload } = decodeJws(jwt)
      if (payload.client_id !== linkClientId)
        this.world.fail(
          `client_id ${linkClientId} (the QR link's) in the request object; it is ${JSON.stringify(payload.client_id)}`,
          null,
        )
      this.expectExpectedOrigins(payload)
      await this.expectSignature(jwt, header, String(payload.client_id), 'the request object')
      return
    }
    const request = entry.data.request as {
      payload: string
      signatures?: { protected?: unknown; signature?: unknown; header?: unknown }[]
    }
    const payload = b64json(request.payload)
    if ('client_id' in payload || 'verifier_info' in payload)
      this.world.fail('no client_id (nor verifier_info) in the payload of a multi-signed request', null)
    this.expectExpectedOrigins(payload)
    const signatures = request.signatures ?? []
    if (signatures.length < 2)
      this.world.fail(`a signature per client identifier, two at least; ${signatures.length}`, null)
    const clientIds: string[] = []
    for (const [i, s] of signatures.entries()) {
      if (typeof s.protected !== 'string' || typeof s.signature !== 'string' || s.header !== undefined)
        this.world.fail(`signatures[${i}] {protected, signature}, no unprotected header`, null)
      const header = b64json(s.protected)
      const clientId = header.client_id
      if (typeof clientId !== 'string')
        this.world.fail(`signatures[${i}]: client_id in its protected header; it has none`, null)
      clientIds.push(clientId)
      await this.expectSignature(
        `${s.protected}.${request.payload}.${s.signature}`,
        header,
        clientId,
        `signatures[${i}]`,
      )
    }
    if (new Set(clientIds.map((c) => c.split(':')[0])).size !== clientIds.length)
      this.world.fail(`one signature per client identifier prefix; ${clientIds.join(', ')}`, null)
  }

  /** A.2: a signed request's expected_origins are the template's (the page's origin). */
  private expectExpectedOrigins(payload: Record<string, unknown>) {
    if (!isDeepStrictEqual(payload.expected_origins, [RP_ORIGIN]))
      this.world.fail(
        `expected_origins ["${RP_ORIGIN}"] (the template's) in a signed request; it has ${JSON.stringify(payload.expected_origins)}`,
        null,
      )
  }

  /**
   * §5.9.3 per prefix: decentralized_identifier — signed by the key its kid names, a DID URL of the client
   * identifier; x509_hash / x509_san_dns — signed by the leaf of an x5c chain ending in the tenant's CA, the
   * client identifier the SHA-256 of the leaf (x509_hash) or one of its dNSNames (x509_san_dns).
   */
  private async expectSignature(
    compact: string,
    header: Record<string, unknown>,
    clientId: string,
    what: string,
  ) {
    const fail = (why: string): never =>
      this.world.fail(`${what} for ${clientId} verifying as its prefix prescribes; ${why}`, null)
    if (header.typ !== REQUEST_OBJECT_TYP) fail(`header typ ${JSON.stringify(header.typ)}`)
    const colon = clientId.indexOf(':')
    const prefix = clientId.slice(0, colon)
    const identifier = clientId.slice(colon + 1)
    let publicKey: Parameters<typeof verifyJws>[1] | undefined
    if (prefix === 'decentralized_identifier') {
      const kid = String(header.kid)
      if (!kid.startsWith(`${identifier}#`)) fail(`kid ${kid} is no key of ${identifier}`)
      publicKey = resolveDidKey(kid).publicKey
    } else if (prefix === 'x509_hash' || prefix === 'x509_san_dns') {
      const { verifyX5c, x509Hash } = await import('../../src/shared/x509.ts')
      const anchor = await this.dcql.tenantTrustAnchor()
      const chain = await verifyX5c(header.x5c, [anchor]).catch((error: Error) =>
        fail(`its x5c does not chain to the tenant's CA: ${error.message}`),
      )
      if (prefix === 'x509_hash' && x509Hash((header.x5c as string[])[0] as string) !== identifier)
        fail('the client identifier is not the SHA-256 hash of the leaf')
      if (prefix === 'x509_san_dns' && !chain.dns.includes(identifier))
        fail('the client identifier is no dNSName of the leaf')
      publicKey = chain.publicKey
    } else {
      fail(`a prefix that signs (decentralized_identifier, x509_san_dns, x509_hash); it is ${prefix}`)
    }
    if (!publicKey) return fail('no key')
    try {
      verifyJws(compact, publicKey, { algorithms: ['EdDSA', 'ES256', 'ES256K'] })
    } catch (error) {
      fail(`the signature does not verify: ${(error as Error).message}`)
    }
  }

  // Expectations on the wallet's answer

  /** A.4: `{vp_token}` for dc_api, only `{response: <JWE>}` for dc_api.jwt, under the entry's protocol. */
  expectAnsweredBy(dcMode: string) {
    const result = this.presented()
    const { protocol, data } = result.response
    const fields = Object.keys(data).sort()
    const problems: string[] = []
    if (protocol !== this.requireEntry().protocol) problems.push(`protocol ${protocol}`)
    if (result.responseMode !== dcMode) problems.push(`response mode ${result.responseMode}`)
    if (dcMode === 'dc_api' && !isDeepStrictEqual(fields, ['vp_token'])) problems.push(`data ${fields}`)
    if (
      dcMode === 'dc_api.jwt' &&
      (!isDeepStrictEqual(fields, ['response']) ||
        String(data.response).split('.').length !== 5 ||
        result.encryption?.alg !== 'ECDH-ES')
    )
      problems.push(`data ${fields}, encryption ${JSON.stringify(result.encryption)}`)
    if (problems.length > 0)
      this.world.fail(
        `a DigitalCredential of protocol ${this.requireEntry().protocol} whose data is ${dcMode === 'dc_api' ? '{vp_token}' : '{response: <compact JWE, ECDH-ES>}'}; ${problems.join('; ')}`,
        null,
      )
  }

  /** A.4: the KB-JWT's aud is `origin:<origin>` (not the client_id), its nonce the request's. */
  expectKbJwtBoundTo(audience: string) {
    const result = this.presented()
    const presentations = Object.values(result.vpToken ?? {}).flat()
    const [sdJwt] = presentations
    if (presentations.length !== 1 || typeof sdJwt !== 'string')
      this.world.fail(`one SD-JWT VC presentation; vp_token ${JSON.stringify(result.vpToken)}`, null)
    const kbJwt = sdJwt.split('~').at(-1) ?? ''
    const { payload } = decodeJws(kbJwt)
    const nonce = this.parameters().nonce
    if (payload.aud !== audience || payload.nonce !== nonce)
      this.world.fail(
        `a KB-JWT with aud ${audience} and nonce ${String(nonce)}; it has aud ${JSON.stringify(payload.aud)}, nonce ${JSON.stringify(payload.nonce)}`,
        null,
      )
  }

  /** The wallet refused the request with `error` (step request) and handed nothing back to present. */
  expectWalletRefused(error: string) {
    const outcome = this.outcome
    if (!outcome) throw new Error('the wallet has not answered a DC API request')
    const expected = `the wallet to refuse the DC API request with "${error}" before presenting`
    if (outcome.kind !== 'protocol' || outcome.step !== 'request' || outcome.error !== error)
      this.world.fail(
        `${expected}; it ${outcome.kind === 'ok' ? `presented (${outcome.result.status})` : `got ${outcome.message}`}`,
        null,
      )
  }

  /** A.3.2.2: signatures[0] did not verify, signatures[1] did, and the client is the latter's client_id. */
  expectFirstSignatureRefusedSecondVerified() {
    const result = this.presented()
    const [first, second] = result.signatures ?? []
    if (!first || !second || first.verified || !second.verified || result.clientId !== second.clientId)
      this.world.fail(
        `signatures[0] not verified, signatures[1] verified and its client_id naming the verifier; the wallet reported ${JSON.stringify(
          result.signatures?.map((s) => ({ clientId: s.clientId, verified: s.verified, reason: s.reason })),
        )} and the client ${result.clientId}`,
        null,
      )
  }
}
