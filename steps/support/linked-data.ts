import type { KeyObject } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type ApiResponse,
  type IssuanceTemplateInput,
  parseCredentialOfferUri,
  type SessionCreated,
  type SessionRead,
  type VerificationTemplateInput,
} from '../../src/client/index.ts'
import { UNDEFINED_TERMS_CONTEXT, VC_V1_CONTEXT } from '../../src/formats/ldp-vc/contexts.ts'
import { generateLdKeyPair, type LdKeyType, ldKeyFromPublicKey } from '../../src/formats/ldp-vc/keys.ts'
import { type LdProofType, signLd } from '../../src/formats/ldp-vc/suites.ts'
import { isObject } from '../../src/shared/json.ts'
import { decodeJws, signJws } from '../../src/shared/jws.ts'
import { FORM_MEDIA_TYPE, PRE_AUTHORIZED_GRANT, PROOF_TYP } from '../../src/shared/wire.ts'
import type { HolderKeyType } from '../../src/wallet/index.ts'
import { DEGREE_CONTENT, type IssuanceFlow } from './issuance.ts'
import type { VerificationFlow } from './verification.ts'
import type { FlowWorld } from './world-types.ts'

// The Linked Data side of a scenario (issue 33: the interface's `ldp`, `ldp_vc` and `ldp_vp` of section 2.8).
// The steps act as a wallet somebody else wrote: they make keys, sign credentials and presentations with the
// format's signer (src/formats/ldp-vc/suites.ts, none of the simulated wallet's code), redeem offers by hand
// over OpenID4VCI, fetch the request object and post the ldp_vp to the response URI (direct_post) over HTTP,
// and read the outcome over 4.7. Everything goes through the relying-party client's recorded HTTP.

export const DEGREE_TYPE = 'UniversityDegreeCredential'

/** The verification template of a scenario whose credential comes from the steps' own issuer. */
const LD_CHECK_TEMPLATE = 'ldp-degree-check'
/** The tenant's degree check, trusting its own issuers (as provisioned tenants have it). */
const DEGREE_CHECK_TEMPLATE = 'degree-check'

/** Tenant signing algorithms (PS256: an RSA key; for RsaSignature2018 and JsonWebSignature2020 only). */
export type LdSigningAlg = 'EdDSA' | 'ES256' | 'ES256K' | 'PS256'

/** A key of the steps' own: a holder's or an issuer's, named by its did:key. */
export interface LdParty {
  did: string
  kid: string
  keyType: LdKeyType
  privateKey: KeyObject
}

/** What the steps change in a signed presentation before posting it. */
export type LdAlteration = 'degree changed' | 'undefined term' | 'unknown context'

/** How the presentation's proof is made: its challenge and domain, and by whom. */
export interface LdSigning {
  proofType: LdProofType
  challenge?: string
  domain?: string
  /** another key than the holder's signs, the presentation still naming the holder */
  signer?: LdParty
}

function partyOf(pair: { privateKey: KeyObject; publicKey: KeyObject }): LdParty {
  const key = ldKeyFromPublicKey(pair.publicKey)
  return { did: key.did, kid: key.kid, keyType: key.keyType, privateKey: pair.privateKey }
}

// An RSA key takes ~100 ms to make; every other type well under a millisecond. The worker process makes one
// RSA key per role on first use and reuses it: a did:key is public, and no scenario changes a key.
const rsaParties = new Map<string, LdParty>()

/** A fresh key of `keyType` (RSA: the worker's key of that role). */
export function ldParty(keyType: LdKeyType, role: 'holder' | 'issuer' | 'other'): LdParty {
  if (keyType !== 'RSA') return partyOf(generateLdKeyPair(keyType))
  let party = rsaParties.get(role)
  if (!party) {
    party = partyOf(generateLdKeyPair('RSA'))
    rsaParties.set(role, party)
  }
  return party
}

/** The submission of one ldp_vp answering the definition's first descriptor with its first credential. */
function ldpSubmission(definition: Record<string, unknown>) {
  const descriptor = (definition.input_descriptors as { id: string }[] | undefined)?.[0]?.id
  if (!descriptor) throw new Error('the presentation definition has no input descriptor')
  return {
    id: `submission-${Date.now()}`,
    definition_id: definition.id,
    descriptor_map: [
      {
        id: descriptor,
        format: 'ldp_vp',
        path: '$',
        path_nested: { format: 'ldp_vc', path: '$.verifiableCredential[0]' },
      },
    ],
  }
}

/** The request object's claims a presentation is bound to. */
interface LdRequest {
  nonce: string
  clientId: string
  responseUri: string
  state: string
  definition: Record<string, unknown>
}

/** A loopback listener that counts what reaches it: the URL of an @context nobody may fetch. */
async function countingListener(): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0
  const server = createServer((_request, response) => {
    hits++
    response.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/contexts/never-fetched/v1`,
    hits: () => hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

export class LinkedDataFlow {
  holder: LdParty | undefined
  /** The issuer of the holder's credential when the steps signed it themselves. */
  private issuer: LdParty | undefined
  credential: Record<string, unknown> | undefined
  /** The credential issuer metadata the holder read (OpenID4VCI 1.0 §12.2.2). */
  issuerMetadata: Record<string, unknown> | undefined
  /** The issuance process behind a credential the tenant issued (to revoke it). */
  private process: { id: string; token: string } | undefined
  /** Issuance templates this scenario created, by id, and the last one. */
  private readonly templates = new Set<string>()
  private template: string | undefined
  created: SessionCreated | undefined
  private request: LdRequest | undefined
  /** The presentation as posted, and the response endpoint's answer. */
  posted: Record<string, unknown> | undefined
  private answer: ApiResponse<unknown> | undefined
  /** How many requests reached the never-fetched @context of the last post, when it named one. */
  contextFetches: number | undefined
  /** The session as 4.7 last read it. */
  session: SessionRead | undefined

  constructor(
    private readonly world: FlowWorld,
    private readonly flows: { readonly issuance: IssuanceFlow; readonly verification: VerificationFlow },
  ) {}

  requireHolder(): LdParty {
    if (!this.holder) throw new Error('the scenario has no Linked Data holder yet')
    return this.holder
  }

  private requireCredential(): Record<string, unknown> {
    if (!this.credential) throw new Error('the holder holds no ldp_vc yet')
    return this.credential
  }

  // Credentials the steps sign themselves

  /** A holder of `keyType` and a degree credential signed with `proofType` by an issuer of the same key type. */
  async holdSignedDegree(keyType: LdKeyType, proofType: LdProofType) {
    this.holder = ldParty(keyType, 'holder')
    this.issuer = ldParty(keyType, 'issuer')
    this.credential = await this.signDegree(this.issuer, this.holder.did, proofType)
  }

  /** A degree credential issued by `issuer` to `subject` (VC Data Model 1.1, the undefined-terms context for its own terms). */
  private signDegree(issuer: LdParty, subject: string, proofType: LdProofType) {
    return signLd(
      {
        '@context': [VC_V1_CONTEXT, UNDEFINED_TERMS_CONTEXT],
        id: `urn:uuid:${crypto.randomUUID()}`,
        type: ['VerifiableCredential', DEGREE_TYPE],
        issuer: issuer.did,
        issuanceDate: new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        credentialSubject: { id: subject, ...DEGREE_CONTENT[0]?.credentialSubject },
      },
      { proofType, kid: issuer.kid, privateKey: issuer.privateKey, purpose: { purpose: 'assertionMethod' } },
    )
  }

  /** The holder's credential is replaced by one the same issuer made out to somebody else. */
  async holdSomeoneElsesDegree(proofType: LdProofType) {
    if (!this.issuer) throw new Error('the steps have made no issuer yet')
    this.credential = await this.signDegree(this.issuer, ldParty('Ed25519', 'other').did, proofType)
  }

  // Templates and sessions

  /**
   * A verification template trusting the steps' issuer (a template trusts its own tenant's issuers unless it
   * names others), created through the portal, and a session of it opened by the unlinked application.
   */
  async openTrustingSession() {
    if (!this.issuer) throw new Error('the steps have made no issuer yet')
    const template: VerificationTemplateInput = {
      id: LD_CHECK_TEMPLATE,
      name: 'Linked Data degree check',
      credentialTypes: [DEGREE_TYPE],
      purpose: 'We check that applicants hold a degree',
      requestedFields: [{ path: '$.credentialSubject.degree' }],
      trustedIssuers: [this.issuer.did],
      // the steps' issuer keeps no status list
      requireStatus: false,
    }
    await this.createVerificationTemplate(template)
    await this.openSession(LD_CHECK_TEMPLATE)
  }

  /**
   * The tenant's degree check: a template that trusts the tenant's own issuers (the default) and requires an
   * active status, as provisioned tenants have it; a bare tenant gets it through the portal here.
   */
  async openDegreeCheck() {
    if (this.world.tenant.verificationTemplates) {
      this.created = await this.flows.verification.open('degree check')
      this.request = undefined
      return
    }
    await this.createVerificationTemplate({
      id: DEGREE_CHECK_TEMPLATE,
      name: 'Degree check',
      credentialTypes: [DEGREE_TYPE],
      purpose: 'We check that applicants hold a degree',
      requestedFields: [{ path: '$.credentialSubject.degree' }],
    })
    await this.openSession(DEGREE_CHECK_TEMPLATE)
  }

  private async createVerificationTemplate(template: VerificationTemplateInput) {
    const response = await this.world.client.createVerificationTemplate(await this.adminToken(), template)
    this.world.recordAnswer(response, `create the verification template "${template.id}" (portal)`)
    this.world.expectStatus(201)
  }

  /** The tenant administrator's token (a bare tenant's came with it). */
  private async adminToken(): Promise<string> {
    try {
      return this.world.token('admin')
    } catch {
      return this.world.logIn('admin')
    }
  }

  private async openSession(template: string) {
    const response = await this.world.client.createSession(await this.world.unlinkedAppToken(), template)
    this.world.recordAnswer(response, `create a verification session for "${template}" (4.6)`)
    this.world.expectStatus(201)
    this.created = response.body as SessionCreated
    // the same session for the verification steps (the session reads …)
    this.flows.verification.created = this.created
    this.request = undefined
  }

  /** GET request_uri: the signed request object, whose nonce, client_id, response_uri and state bind the answer. */
  private async fetchRequest(): Promise<LdRequest> {
    if (this.request) return this.request
    if (!this.created) throw new Error('no verification session was opened in this scenario')
    const requestUri = new URL(this.created.authentication_request).searchParams.get('request_uri')
    if (!requestUri) this.world.fail('a request_uri in the authentication request', null)
    const url = new URL(requestUri)
    const response = await this.world.client.request<string>(url.origin, `${url.pathname}${url.search}`)
    this.world.recordAnswer(response, 'fetch the request object (request_uri)')
    this.world.expectStatus(200)
    const claims = decodeJws(response.text).payload
    const { nonce, client_id: clientId, response_uri: responseUri, state } = claims
    const definition = claims.presentation_definition
    if (
      typeof nonce !== 'string' ||
      typeof clientId !== 'string' ||
      typeof responseUri !== 'string' ||
      typeof state !== 'string' ||
      !isObject(definition)
    )
      this.world.fail(
        'a request object with nonce, client_id, response_uri, state and presentation_definition',
      )
    this.request = { nonce, clientId, responseUri, state, definition }
    return this.request
  }

  // The presentation

  /** The holder's ldp_vp of its credential, bound to the session (challenge = nonce, domain = client_id). */
  private async presentation(signing: LdSigning): Promise<Record<string, unknown>> {
    const holder = this.requireHolder()
    const request = await this.fetchRequest()
    const signer = signing.signer ?? holder
    return signLd(
      {
        '@context': [VC_V1_CONTEXT],
        type: ['VerifiablePresentation'],
        holder: holder.did,
        verifiableCredential: [this.requireCredential()],
      },
      {
        proofType: signing.proofType,
        kid: signer.kid,
        privateKey: signer.privateKey,
        purpose: {
          purpose: 'authentication',
          challenge: signing.challenge ?? request.nonce,
          domain: signing.domain ?? request.clientId,
        },
      },
    )
  }

  /** Signs and posts the ldp_vp, altered after signing when asked. */
  async present(signing: LdSigning, alteration?: LdAlteration) {
    const vp = await this.presentation(signing)
    if (alteration !== 'unknown context') {
      await this.post(alter(vp, alteration))
      return
    }
    // An @context on a listener of ours: the verifier must refuse it without fetching it.
    const listener = await countingListener()
    try {
      vp['@context'] = [...[vp['@context']].flat(), listener.url]
      await this.post(vp)
    } finally {
      this.contextFetches = listener.hits()
      await listener.close()
    }
  }

  /** Another key than the holder's signs the presentation, which still names the holder. */
  async presentSignedByAnotherKey(proofType: LdProofType) {
    const other = ldParty(this.requireHolder().keyType, 'other')
    await this.present({ proofType, signer: other })
  }

  /** OpenID4VP draft 20 direct_post: vp_token (the VP as a JSON string), presentation_submission, state. */
  private async post(vp: Record<string, unknown>) {
    const request = await this.fetchRequest()
    this.posted = vp
    const form = {
      vp_token: JSON.stringify(vp),
      presentation_submission: JSON.stringify(ldpSubmission(request.definition)),
      state: request.state,
    }
    const url = new URL(request.responseUri)
    const response = await this.world.client.request(url.origin, url.pathname, {
      method: 'POST',
      body: new URLSearchParams(form).toString(),
      headers: { 'content-type': FORM_MEDIA_TYPE },
    })
    this.world.recordAnswer(response, 'post the ldp_vp to the response URI (direct_post)')
    this.answer = response
  }

  // Credentials the tenant issues

  /** An ldp_vc issuance template of the tenant, created through the portal on first use. */
  async ensureIssuanceTemplate(proofType: LdProofType, signingAlg: LdSigningAlg): Promise<string> {
    const id = `ldp-${proofType.toLowerCase()}-${signingAlg.toLowerCase()}`
    this.template = id
    if (this.templates.has(id)) return id
    const template: IssuanceTemplateInput = {
      id,
      credentialType: DEGREE_TYPE,
      format: 'ldp_vc',
      proofType,
      signingAlg,
    }
    const response = await this.world.client.createIssuanceTemplate(await this.adminToken(), template)
    this.world.recordAnswer(response, `create the ldp_vc issuance template "${id}" (portal)`)
    this.world.expectStatus(201)
    this.templates.add(id)
    return id
  }

  requireTemplate(): string {
    if (!this.template) throw new Error('the scenario has made no ldp_vc issuance template')
    return this.template
  }

  /**
   * A holder (Ed25519) receives the degree from `template` the way any OpenID4VCI wallet would, written out:
   * the application opens an offer and submits the content (4.2, 4.4); the holder reads the offer and the
   * metadata, redeems the pre-authorized code, proves its key with a JWT and takes the credential.
   */
  async receiveFromTenant(template: string) {
    const world = this.world
    const holder = ldParty('Ed25519', 'holder')
    this.holder = holder
    const token = await world.unlinkedAppToken()
    const offer = await world.client.createOffer(token, template)
    world.recordAnswer(offer, `create an offer for "${template}" (4.2)`)
    world.expectStatus(201)
    const deepLink = (offer.body as { credential_offer_uri: string }).credential_offer_uri
    const { offerUrl, processId } = parseCredentialOfferUri(deepLink)
    this.process = { id: processId, token }
    world.recordAnswer(await world.client.submitCredentials(token, processId, DEGREE_CONTENT), 'submit (4.4)')
    world.expectStatus(200)
    const offerJson = await this.getJson(offerUrl, 'the credential offer')
    const issuerId = String(offerJson.credential_issuer)
    const grant = (offerJson.grants as Record<string, { 'pre-authorized_code'?: string }> | undefined)?.[
      PRE_AUTHORIZED_GRANT
    ]
    const code = grant?.['pre-authorized_code']
    const configuration = (offerJson.credential_configuration_ids as string[] | undefined)?.[0]
    if (!code || !configuration)
      this.world.fail('an offer with a pre-authorized code and a configuration id', null)
    const metadata = await this.getJson(
      wellKnown('openid-credential-issuer', issuerId),
      'the issuer metadata',
    )
    this.issuerMetadata = metadata
    const server = (metadata.authorization_servers as string[] | undefined)?.[0] ?? issuerId
    const asMetadata = await this.getJson(
      wellKnown('oauth-authorization-server', server),
      'the authorization server metadata',
    )
    const tokenAnswer = await this.postTo(String(asMetadata.token_endpoint), 'the token request', {
      form: { grant_type: PRE_AUTHORIZED_GRANT, 'pre-authorized_code': code },
    })
    const accessToken = String(tokenAnswer.access_token)
    let nonce = tokenAnswer.c_nonce
    if (typeof nonce !== 'string' && typeof metadata.nonce_endpoint === 'string')
      nonce = (await this.postTo(metadata.nonce_endpoint, 'the nonce request', {})).c_nonce
    const proof = signJws(
      { alg: 'EdDSA', typ: PROOF_TYP, kid: holder.kid },
      { aud: issuerId, iat: Math.floor(Date.now() / 1000), nonce },
      holder.privateKey,
    )
    const answer = await this.postTo(String(metadata.credential_endpoint), 'the credential request', {
      json: { credential_configuration_id: configuration, proof: { proof_type: 'jwt', jwt: proof } },
      bearer: accessToken,
    })
    const issued = (answer.credentials as { credential?: unknown }[] | undefined)?.[0]?.credential
    if (!isObject(issued))
      this.world.fail(
        `an ldp_vc JSON object in credentials[0].credential; got ${JSON.stringify(answer)}`,
        null,
      )
    this.credential = issued
  }

  private async getJson(url: string, what: string): Promise<Record<string, unknown>> {
    const { origin, pathname, search } = new URL(url)
    const response = await this.world.client.request(origin, `${pathname}${search}`)
    this.world.recordAnswer(response, `GET ${what}`)
    this.world.expectStatus(200)
    if (!isObject(response.body)) this.world.fail(`${what} as a JSON object`)
    return response.body
  }

  private async postTo(
    url: string,
    what: string,
    body: { form?: Record<string, string>; json?: unknown; bearer?: string },
  ): Promise<Record<string, unknown>> {
    const { origin, pathname } = new URL(url)
    const headers: Record<string, string> = body.bearer ? { authorization: `Bearer ${body.bearer}` } : {}
    const response = await this.world.client.request(origin, pathname, {
      method: 'POST',
      ...(body.form
        ? {
            body: new URLSearchParams(body.form).toString(),
            headers: { ...headers, 'content-type': FORM_MEDIA_TYPE },
          }
        : { body: body.json ?? {}, headers }),
    })
    this.world.recordAnswer(response, what)
    this.world.expectStatus(200)
    if (!isObject(response.body)) this.world.fail(`${what} answered with a JSON object`)
    return response.body
  }

  /** The relying party revokes the credential the holder received (the process's status entry). */
  async revokeIssued() {
    if (!this.process) throw new Error('the tenant issued nothing in this scenario')
    const response = await this.world.client.setCredentialStatus(this.process.token, this.process.id, {
      status: 'revoked',
    })
    this.world.recordAnswer(response, 'revoke the credential of the process')
    this.world.expectStatus(200)
  }

  /** 4.3: the process ISSUED, its data the very credential the holder received (section 2.3's object, signed). */
  async expectProcessShowsCredential() {
    if (!this.process) throw new Error('the tenant issued nothing in this scenario')
    const response = await this.world.client.getProcess(this.process.token, this.process.id)
    this.world.recordAnswer(response, 'read the issuance process (4.3)')
    this.world.expectStatus(200)
    const body = response.body as { status?: string; data?: unknown[] }
    const shown = body.data?.[0]
    if (body.status !== 'ISSUED' || JSON.stringify(shown) !== JSON.stringify(this.requireCredential()))
      this.world.fail('status ISSUED and data[0] equal to the ldp_vc the holder received, proof included')
  }

  // The simulated wallet (src/wallet/) with an ldp_vc of the tenant

  /** The scenario's wallet of `keyType` receives the degree from the tenant's ldp_vc template. */
  async walletHoldsDegree(keyType: HolderKeyType, proofType: LdProofType, signingAlg: LdSigningAlg) {
    const template = await this.ensureIssuanceTemplate(proofType, signingAlg)
    const issuance = this.flows.issuance
    await issuance.openOfferFor(template, await this.world.unlinkedAppToken())
    this.world.recordAnswer(await issuance.submitAsOpener(), 'submit the degree (4.4)')
    this.world.expectStatus(200)
    await issuance.receive(keyType)
    issuance.expectWalletSuccess()
    const stored = issuance.stored[0]
    if (stored?.format !== 'ldp_vc')
      this.world.fail(`the wallet to keep an ldp_vc; it kept ${JSON.stringify(stored?.format)}`, null)
    // kept as its JSON text
    this.credential = JSON.parse(stored.credential) as Record<string, unknown>
  }

  // Expectations

  private requireAnswer(): ApiResponse<unknown> {
    if (!this.answer) throw new Error('no presentation has been posted in this scenario')
    return this.answer
  }

  /** The response endpoint's answer: 200 for an accepted presentation. */
  expectAccepted() {
    const answer = this.requireAnswer()
    if (answer.status !== 200) this.world.fail('HTTP 200 from the response endpoint', answer)
  }

  /**
   * The response endpoint refused with `status` and OAuth `error` (which check failed is read from the
   * session's Validations, never from error_description, which other verifiers word differently).
   */
  expectRefused(status: number, error: string) {
    const answer = this.requireAnswer()
    const body = answer.body as { error?: unknown } | null
    if (answer.status !== status || body?.error !== error)
      this.world.fail(`HTTP ${status} with error "${error}" from the response endpoint`, answer)
  }

  /** 4.7 by the application that opened the session, in `state` (the verification flow reads it). */
  async expectState(state: SessionRead['Status']): Promise<SessionRead> {
    this.session = await this.flows.verification.expectState(state)
    return this.session
  }

  /** VERIFIED: the holder as Subject, every check passed, the credential shared with its embedded proof (2.4). */
  async expectVerified(holderDid: string) {
    const body = await this.expectState('VERIFIED')
    if (body.Subject !== holderDid) this.world.fail(`Subject to be the holder's DID ${holderDid}`)
    const notPassed = body.Validations?.checks.filter((c) => c.result !== 'passed') ?? []
    if (body.Validations?.status !== 'SUCCESS' || notPassed.length > 0)
      this.world.fail(
        `Validations with status SUCCESS and every check passed; not passed: ${JSON.stringify(notPassed)}`,
      )
    const shared = body.PresentationSubmission?.verifiableCredential as Record<string, unknown>[] | undefined
    if (!isObject(shared?.[0]?.proof) || body.PresentationSubmission?.holder !== holderDid)
      this.world.fail('PresentationSubmission with the holder and the shared ldp_vc, its embedded proof kept')
    return body
  }

  /** Section 2.9: the submission's format, as the session read last shows it. */
  expectSubmissionFormat(format: string) {
    const shown = this.session?.PresentationSubmissionFormat
    if (shown !== format)
      this.world.fail(`PresentationSubmissionFormat "${format}"; it was ${JSON.stringify(shown)}`)
  }

  /** The named check passed, its message containing `text`. */
  expectPassedCheck(check: string, text: string) {
    const entry = this.session?.Validations?.checks.find((c) => c.check === check)
    if (entry?.result !== 'passed' || !entry.message.includes(text))
      this.world.fail(
        `Validations to show check "${check}" passed saying "${text}"; it was ${JSON.stringify(entry)}`,
      )
  }

  /** REJECTED with `check` failed because of `reason`, nothing shared. */
  async expectRejected(check: string, reason: string) {
    const body = await this.expectState('REJECTED')
    this.expectFailedCheck(check, reason)
    if (body.PresentationSubmission !== null || body.PresentationSubmissionFormat !== '')
      this.world.fail('no PresentationSubmission on a REJECTED session')
  }

  /** The named check failed in the session read last, in Validations and in the webhook-form errors. */
  expectFailedCheck(check: string, reason: string) {
    if (!this.session) throw new Error('the session has not been read')
    this.flows.verification.expectFailedCheck(this.session, check, reason)
  }

  /**
   * OpenID4VCI 1.0 Appendix A.1.2: the template's configuration is format ldp_vc with a credential_definition
   * naming its @context (VC 1.1 first) and type, and its proof type as the signing value.
   */
  expectLdpConfiguration(template: string, proofType: LdProofType) {
    const configurations = this.issuerMetadata?.credential_configurations_supported as
      | Record<string, Record<string, unknown>>
      | undefined
    const c = configurations?.[template]
    const definition = c?.credential_definition as { '@context'?: unknown; type?: unknown } | undefined
    const contexts = definition?.['@context']
    const problems = [
      c?.format !== 'ldp_vc' && 'format ldp_vc',
      (!Array.isArray(contexts) || contexts[0] !== VC_V1_CONTEXT) &&
        `credential_definition.@context starting with ${VC_V1_CONTEXT}`,
      JSON.stringify(definition?.type) !== JSON.stringify(['VerifiableCredential', DEGREE_TYPE]) &&
        `credential_definition.type ["VerifiableCredential","${DEGREE_TYPE}"]`,
      JSON.stringify(c?.credential_signing_alg_values_supported) !== JSON.stringify([proofType]) &&
        `credential_signing_alg_values_supported ["${proofType}"]`,
    ].filter((p): p is string => typeof p === 'string')
    if (problems.length > 0)
      this.world.fail(
        `configuration "${template}" with ${problems.join(', ')}; it was ${JSON.stringify(c)}`,
        null,
      )
  }

  /** The credential the tenant issued: a JSON ldp_vc for the holder, its proof as asked, with a status entry. */
  expectIssuedCredential(proofType: LdProofType) {
    const vc = this.requireCredential()
    const holder = this.requireHolder()
    const proof = vc.proof as Record<string, unknown> | undefined
    const subject = vc.credentialSubject as Record<string, unknown> | undefined
    const status = vc.credentialStatus as Record<string, unknown> | undefined
    const named = proof?.type === 'DataIntegrityProof' ? proof.cryptosuite : proof?.type
    const issuer = isObject(vc.issuer) ? vc.issuer.id : vc.issuer
    const problems = [
      named !== proofType && `a ${proofType} proof (it was ${JSON.stringify(named)})`,
      proof?.proofPurpose !== 'assertionMethod' && 'proofPurpose assertionMethod',
      (typeof issuer !== 'string' || !String(proof?.verificationMethod ?? '').startsWith(`${issuer}#`)) &&
        `a verificationMethod of the issuer ${JSON.stringify(issuer)}`,
      subject?.id !== holder.did && `credentialSubject.id ${holder.did}`,
      !isObject(subject?.degree) && 'the submitted degree claim',
      status?.type !== 'BitstringStatusListEntry' && 'a BitstringStatusListEntry credentialStatus',
      !(vc.type as string[] | undefined)?.includes(DEGREE_TYPE) && `type ${DEGREE_TYPE}`,
    ].filter((p): p is string => typeof p === 'string')
    if (problems.length > 0)
      this.world.fail(`an issued ldp_vc with ${problems.join(', ')}; it was ${JSON.stringify(vc)}`, null)
  }
}

/** `<origin>/.well-known/<name><path>` of an identifier (OpenID4VCI 1.0 §12.2.2, RFC 8414 §3.1). */
function wellKnown(name: string, identifier: string): string {
  const url = new URL(identifier)
  return `${url.origin}/.well-known/${name}${url.pathname.replace(/\/$/, '')}`
}

/** A copy of the signed presentation with `alteration` made after signing. */
function alter(vp: Record<string, unknown>, alteration: LdAlteration | undefined): Record<string, unknown> {
  if (alteration === undefined) return vp
  const copy = structuredClone(vp)
  if (alteration === 'undefined term') {
    // no context of the presentation defines it (VC 1.1 has no @vocab): JSON-LD would drop it silently
    copy.undefinedTerm = 'added after signing'
  } else if (alteration === 'degree changed') {
    const vc = (copy.verifiableCredential as Record<string, unknown>[])[0] as {
      credentialSubject: { degree: { name: string } }
    }
    vc.credentialSubject.degree.name = 'Doctor of Philosophy'
  }
  return copy
}
