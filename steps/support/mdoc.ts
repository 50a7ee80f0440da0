import { createHash, createPublicKey, generateKeyPairSync, X509Certificate } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list'
import { decodeJws, signJws, verifyJws } from '../../src/shared/jws.ts'
import {
  decodeDeviceResponse,
  decodeIssuerSigned,
  MDL_DOCTYPE,
  MDL_NAMESPACE,
  MDOC_FORMAT,
  prepareMdoc,
  type ReadMdoc,
  verifyIssuerAuth,
} from '../../src/shared/mdoc.ts'
import { PROOF_TYP, STATUS_LIST_JWT_MEDIA_TYPE, STATUS_LIST_JWT_TYP } from '../../src/shared/wire.ts'
import { mdocCertificateProblems, parseCertificates } from '../../src/shared/x509.ts'
import type { DcqlFlow } from './dcql.ts'
import type { IssuanceFlow } from './issuance.ts'
import { createMdlTemplate, MDL_CONTENT, MDL_ELEMENTS, MDL_TEMPLATE } from './mdoc-template.ts'
import { STATUS_TYPES, type StatusType } from './sd-jwt-vc.ts'
import type { FlowWorld } from './world-types.ts'

// The ISO mdoc (mso_mdoc) side of a scenario: the mDL issuance template created through the portal, the
// wallet trusting the tenant's IACA (GET /oid4vci/<tenant>/iaca), the mdoc it received read as ISO/IEC 18013-5
// structures (issuerAuth, the MSO, its IssuerSignedItems, the document signer certificate), its Token Status
// List entry, a key proof the configuration does not allow, and what an OpenID4VP 1.0 session asked for and
// received of an mdoc (the DCQL query, the DeviceResponse, what the relying party reads). The issuance and
// dcql flows do the protocol work; the World owns one of these, and steps call it in one line.

/** COSE ES256 (RFC 9053), as the configuration names issuerAuth's algorithm (Appendix A.2.2). */
const COSE_ES256 = -7
/** ISO 18013-5 §9.1.2.5: each IssuerSignedItem's random salt is at least this long (bytes). */
const MIN_RANDOM_BYTES = 16

/** The subject's country (C) of a certificate, as node:crypto prints the subject. */
const countryOf = (certificate: X509Certificate) =>
  certificate.subject
    .split('\n')
    .find((line) => line.startsWith('C='))
    ?.slice(2)

export class MdocFlow {
  private templateCreated = false
  /** The Token Status List JWT read last, and the entry it was read for. */
  private statusList: { jwt: string; idx: number; uri: string } | undefined

  constructor(
    private readonly world: FlowWorld,
    private readonly issuance: IssuanceFlow,
    private readonly dcql: DcqlFlow,
  ) {}

  // The template, the wallet and the offer (issuance)

  /** The mDL issuance template, through the portal (once). */
  async defineTemplate() {
    if (this.templateCreated) return
    await createMdlTemplate(this.world)
    this.templateCreated = true
  }

  /** The scenario's issuance wallets trust the IACA the tenant serves (they refuse an mdoc chaining elsewhere). */
  async walletTrustsIaca() {
    this.issuance.trustWith([await this.dcql.tenantIaca()])
  }

  /** 4.2 for the mDL template, by the tenant's unlinked application. */
  async openOffer() {
    await this.defineTemplate()
    await this.issuance.openOfferFor(MDL_TEMPLATE.id, await this.world.unlinkedAppToken())
  }

  /** 4.4 by the application that opened the offer: MDL_CONTENT. */
  async submit() {
    await this.issuance.submitAsOpener(MDL_CONTENT)
    this.world.expectStatus(200)
  }

  /** The whole flow into the P-256 wallet (an mdoc's device key signs ES256), which must succeed. */
  async receive() {
    await this.issuance.receive('P-256')
    this.expectReceived()
  }

  /** Attended issuance (OpenID4VCI 1.0 §9): nothing submitted yet, so the credential request is deferred. */
  async requestBeforeSubmission() {
    await this.issuance.scan('P-256')
    await this.issuance.redeem()
    await this.issuance.requestCredential()
    this.issuance.expectDeferred()
  }

  // The configuration in the issuer metadata (read at its 1.0 location by the issuance flow)

  private configuration() {
    const configuration = this.issuance.configurations()[MDL_TEMPLATE.id]
    if (!configuration)
      this.world.fail(`configuration "${MDL_TEMPLATE.id}" in credential_configurations_supported`, null)
    return configuration
  }

  /**
   * Appendix A.2: format mso_mdoc with the doctype; the device key bound as a COSE key; issuerAuth signed with
   * COSE ES256 (-7); jwt key proofs signed with ES256 only (the device key signs DeviceAuthentication so).
   */
  expectConfiguration() {
    const configuration = this.configuration()
    const proofs = configuration.proof_types_supported as
      | { jwt?: { proof_signing_alg_values_supported?: unknown } }
      | undefined
    const problems = [
      configuration.format === MDOC_FORMAT ? '' : `format ${JSON.stringify(configuration.format)}`,
      configuration.doctype === MDL_TEMPLATE.doctype
        ? ''
        : `doctype ${JSON.stringify(configuration.doctype)}`,
      isDeepStrictEqual(configuration.cryptographic_binding_methods_supported, ['cose_key'])
        ? ''
        : `cryptographic_binding_methods_supported ${JSON.stringify(configuration.cryptographic_binding_methods_supported)}`,
      isDeepStrictEqual(configuration.credential_signing_alg_values_supported, [COSE_ES256])
        ? ''
        : `credential_signing_alg_values_supported ${JSON.stringify(configuration.credential_signing_alg_values_supported)}`,
      isDeepStrictEqual(proofs?.jwt?.proof_signing_alg_values_supported, ['ES256'])
        ? ''
        : `proof_types_supported ${JSON.stringify(proofs)}`,
    ].filter(Boolean)
    if (problems.length > 0)
      this.world.fail(
        `format ${MDOC_FORMAT}, doctype ${MDL_TEMPLATE.doctype}, cryptographic_binding_methods_supported ["cose_key"], credential_signing_alg_values_supported [${COSE_ES256}] and jwt proofs signed with ES256 only; the configuration has ${problems.join('; ')}`,
        null,
      )
  }

  /** Appendix A.2 (claims path pointers of §12.2.4 / Appendix C): every described element is [namespace, element]. */
  expectClaimPaths() {
    const meta = this.configuration().credential_metadata as { claims?: { path?: unknown }[] } | undefined
    const expected = (MDL_TEMPLATE.claims ?? []).map((c) => [MDL_NAMESPACE, c.path.split('.').at(-1)])
    const paths = meta?.claims?.map((c) => c.path)
    if (!isDeepStrictEqual(paths, expected))
      this.world.fail(
        `credential_metadata.claims with the paths ${JSON.stringify(expected)}; it was ${JSON.stringify(meta?.claims)}`,
        null,
      )
  }

  // The mdoc the wallet received

  /** The wallet received an mso_mdoc of the template's doctype. */
  expectReceived() {
    this.issuance.expectWalletSuccess()
    const stored = this.issuance.stored[0]
    if (stored?.format !== MDOC_FORMAT || stored.doctype !== MDL_TEMPLATE.doctype)
      this.world.fail(
        `an ${MDOC_FORMAT} credential of doctype ${MDL_TEMPLATE.doctype}; the wallet stored ${JSON.stringify({ format: stored?.format, doctype: stored?.doctype })}`,
        null,
      )
  }

  /** The base64url IssuerSigned the wallet received last (Appendix A.2.4), decoded. */
  private async mdoc(): Promise<ReadMdoc> {
    this.expectReceived()
    await prepareMdoc()
    const stored = this.issuance.stored[0]
    try {
      return decodeIssuerSigned(stored?.credential)
    } catch (error) {
      this.world.fail(`a base64url CBOR IssuerSigned; ${(error as Error).message}`, null)
    }
  }

  /** The document signer certificate: the first (here only) certificate of issuerAuth's x5chain. */
  private documentSigner(doc: ReadMdoc): X509Certificate {
    const [der] = doc.x5chain
    if (!der) this.world.fail('an x5chain in the unprotected header of issuerAuth', null)
    return new X509Certificate(Buffer.from(der))
  }

  /** The IACA the tenant serves at GET /oid4vci/<tenant>/iaca (a PEM certificate, application/x-pem-file). */
  private async servedIaca(): Promise<{ pem: string; certificate: X509Certificate }> {
    const pem = await this.dcql.tenantIaca()
    if (parseCertificates(pem, 'the served IACA').length !== 1)
      this.world.fail('exactly one PEM certificate at the iaca path', null)
    return { pem, certificate: new X509Certificate(pem) }
  }

  /**
   * ISO 18013-5 §9.1.2.4 and §9.3.1: issuerAuth is a COSE_Sign1 with ES256 whose x5chain names a document
   * signer certificate issued by the IACA the tenant serves, and it verifies to that IACA as the only trust
   * anchor (chain, COSE signature, docType, the digests of the items present).
   */
  async expectIssuerAuthVerifiesToServedIaca() {
    const doc = await this.mdoc()
    const iaca = await this.servedIaca()
    if (doc.alg !== 'ES256')
      this.world.fail(`issuerAuth signed with ES256 (COSE -7); it names ${doc.alg}`, null)
    const ds = this.documentSigner(doc)
    if (!ds.checkIssued(iaca.certificate) || !ds.verify(iaca.certificate.publicKey))
      this.world.fail(
        `a document signer certificate issued and signed by the served IACA ${iaca.certificate.subject.replaceAll('\n', ', ')}; its issuer is ${ds.issuer.replaceAll('\n', ', ')}`,
        null,
      )
    const result = await verifyIssuerAuth(doc, { trustAnchors: [iaca.pem], now: Date.now() })
    if (!result.ok)
      this.world.fail(`issuerAuth to verify with the served IACA as trust anchor; ${result.reason}`, null)
  }

  /**
   * ISO 18013-5 Annex B.1: the IACA root and the document signer certificate fit their profiles (B.1.2, B.1.4:
   * extensions, key usages, P-256, the DS's extended key usage and validity), and the document signer is of
   * the IACA's country.
   */
  async expectAnnexBCertificates() {
    const doc = await this.mdoc()
    const iaca = await this.servedIaca()
    const ds = this.documentSigner(doc)
    const problems = [
      ...mdocCertificateProblems(iaca.pem, 'iaca').map((p) => `IACA: ${p}`),
      ...mdocCertificateProblems(ds.raw, 'ds').map((p) => `document signer: ${p}`),
    ]
    if (countryOf(ds) === undefined || countryOf(ds) !== countryOf(iaca.certificate))
      problems.push(
        `document signer: its country ${countryOf(ds)} is not the IACA's ${countryOf(iaca.certificate)}`,
      )
    if (problems.length > 0)
      this.world.fail(`certificates of the ISO 18013-5 Annex B profiles; ${problems.join('; ')}`, null)
  }

  /** ISO 18013-5 §9.1.2.4: the MSO's deviceKeyInfo.deviceKey is the public key the wallet proved (§8.2 proofs). */
  async expectDeviceKeyOfWallet() {
    const doc = await this.mdoc()
    const holder = (await this.issuance.wallet('P-256')).publicJwk()
    const key = doc.deviceKey
    if (key.kty !== holder.kty || key.crv !== holder.crv || key.x !== holder.x || key.y !== holder.y)
      this.world.fail(
        `the MSO's deviceKey = the wallet's key ${JSON.stringify(holder)}; it is ${JSON.stringify(key)}`,
        null,
      )
  }

  /**
   * The elements are the namespaces of the submitted credentialSubject (4.4), value for value; the
   * `…_date` element a CBOR full-date (RFC 8943), not a text string.
   */
  async expectSubmittedElements() {
    const doc = await this.mdoc()
    if (!isDeepStrictEqual(doc.namespaces, MDL_ELEMENTS))
      this.world.fail(
        `the elements ${JSON.stringify(MDL_ELEMENTS)}; the mdoc holds ${JSON.stringify(doc.namespaces)}`,
        null,
      )
    const { DateOnly } = await prepareMdoc()
    const items = doc.issuerSigned.issuerNamespaces?.issuerNamespaces.get(MDL_NAMESPACE) ?? []
    const birthDate = items.find((i) => i.elementIdentifier === 'birth_date')
    if (!(birthDate?.elementValue instanceof DateOnly))
      this.world.fail(
        `birth_date as a CBOR full-date (tag 1004); it is ${JSON.stringify(birthDate?.elementValue)}`,
        null,
      )
  }

  /**
   * ISO 18013-5 §9.1.2.5: every IssuerSignedItem, as the tag-24 IssuerSignedItemBytes, hashes (the MSO's
   * digestAlgorithm, SHA-256) to the value digest the MSO keeps under its namespace and digestID; digestIDs
   * are unique in a namespace and each item has a random salt of at least 16 bytes. Computed here, not by
   * the service's verifier.
   */
  async expectElementDigests() {
    const doc = await this.mdoc()
    const mso = doc.issuerSigned.issuerAuth.mobileSecurityObject
    const digests = mso.valueDigests.valueDigests
    const problems: string[] = []
    if (mso.digestAlgorithm !== 'SHA-256') problems.push(`digestAlgorithm ${mso.digestAlgorithm}`)
    let count = 0
    for (const [ns, items] of doc.issuerSigned.issuerNamespaces?.issuerNamespaces ?? new Map()) {
      const ids = new Set<number>()
      for (const item of items) {
        count++
        const name = `${ns}/${item.elementIdentifier}`
        if (ids.has(item.digestId)) problems.push(`${name}: digestID ${item.digestId} used twice`)
        ids.add(item.digestId)
        if (item.random.length < MIN_RANDOM_BYTES)
          problems.push(`${name}: a random salt of ${item.random.length} bytes`)
        const digest = createHash('sha256')
          .update(item.encode({ asDataItem: true }))
          .digest()
        const expected = digests.get(ns)?.get(item.digestId)
        if (!expected) problems.push(`${name}: no value digest under digestID ${item.digestId}`)
        else if (!digest.equals(Buffer.from(expected))) problems.push(`${name}: its digest differs`)
      }
    }
    const elements = Object.values(MDL_ELEMENTS).flatMap((e) => Object.keys(e)).length
    if (count !== elements) problems.push(`${count} IssuerSignedItems for ${elements} submitted elements`)
    if (problems.length > 0)
      this.world.fail(
        `every IssuerSignedItem hashing with SHA-256 to its value digest in the MSO, unique digestIDs, salts of at least ${MIN_RANDOM_BYTES} bytes; ${problems.join('; ')}`,
        null,
      )
  }

  // Its status (IETF Token Status List, referenced by the MSO)

  /** Token Status List §8.1: GET the `uri` of the MSO's status.status_list, asking for the JWT. */
  async readStatusList() {
    const doc = await this.mdoc()
    if (!doc.status)
      this.world.fail('status.status_list {idx, uri} in the MSO (Token Status List §6.3)', null)
    const { idx, uri } = doc.status
    const url = new URL(uri)
    const response = await this.world.client.request(url.origin, `${url.pathname}${url.search}`, {
      headers: { accept: STATUS_LIST_JWT_MEDIA_TYPE },
    })
    this.world.recordAnswer(response, `GET the Token Status List ${uri}`)
    this.world.expectStatus(200)
    const type = response.headers.get('content-type') ?? ''
    if (!type.startsWith(STATUS_LIST_JWT_MEDIA_TYPE))
      this.world.fail(`content type ${STATUS_LIST_JWT_MEDIA_TYPE}`)
    this.statusList = { jwt: response.text.trim(), idx, uri }
  }

  /**
   * Token Status List §7.1: the status type at the mdoc's index of a list signed by the mdoc's issuer (the
   * document signer's key, whose certificate issuerAuth carries).
   */
  async expectStatus(expected: StatusType) {
    const list = this.statusList
    if (!list) throw new Error("the mDL's status list has not been read")
    const ds = this.documentSigner(await this.mdoc())
    const { header } = decodeJws(list.jwt)
    try {
      verifyJws(list.jwt, createPublicKey(ds.publicKey.export({ format: 'pem', type: 'spki' })), {
        algorithms: ['ES256'],
      })
    } catch (error) {
      this.world.fail(
        `a Status List Token signed by the mdoc's document signer key: ${(error as Error).message}`,
        null,
      )
    }
    if (header.typ !== STATUS_LIST_JWT_TYP)
      this.world.fail(`header typ ${STATUS_LIST_JWT_TYP}; it was ${JSON.stringify(header.typ)}`, null)
    let value: number
    try {
      value = getListFromStatusListJWT(list.jwt).getStatus(list.idx)
    } catch (error) {
      this.world.fail(`a Status List Token with a status_list {bits, lst}: ${(error as Error).message}`, null)
    }
    if (value !== STATUS_TYPES[expected])
      this.world.fail(
        `status ${expected} (${STATUS_TYPES[expected]}) at index ${list.idx} of ${list.uri}; it was ${value}`,
        null,
      )
  }

  // A key proof the configuration does not take (written out: the wallet will not send one)

  /**
   * An Ed25519 holder redeems the offer with the simulated wallet, then writes its credential request itself
   * (OpenID4VCI 1.0 §8.2): a jwt key proof signed with EdDSA, its key as the header's jwk (the configuration
   * binds by cose_key), a fresh nonce from the nonce endpoint. The wallet would refuse to send it (the
   * configuration takes ES256 proofs only).
   */
  async requestWithEdDsaProof() {
    await this.issuance.scan('Ed25519')
    await this.issuance.redeem()
    this.issuance.expectWalletSuccess()
    const session = this.issuance.session
    const accessToken = session?.tokenResponse?.access_token
    const endpoint = session?.issuerMetadata.credential_endpoint
    if (!session || !accessToken || !endpoint)
      throw new Error('the wallet holds no access token and no credential endpoint')
    const nonce = await session.nonce()
    const { privateKey, publicKey } = generateKeyPairSync('ed25519')
    const proof = signJws(
      { alg: 'EdDSA', typ: PROOF_TYP, jwk: publicKey.export({ format: 'jwk' }) },
      { aud: session.credentialIssuer, iat: Math.floor(Date.now() / 1000), nonce },
      privateKey,
    )
    const url = new URL(endpoint)
    const response = await this.world.client.request(url.origin, url.pathname, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}` },
      body: { credential_configuration_id: MDL_TEMPLATE.id, proofs: { jwt: [proof] } },
    })
    this.world.recordAnswer(response, 'the credential request for the mDL with an EdDSA key proof')
  }

  // OpenID4VP 1.0 (Appendix B.2): what a dcql session asks of an mdoc and what it gets

  /** Appendix B.2.3 and §6: one mso_mdoc credential query, meta.doctype_value, the claims [namespace, element]. */
  expectDcqlQueryForFamilyName() {
    const query = this.dcql.requireCreated().dcql_query as {
      credentials: {
        id: string
        format: string
        meta?: Record<string, unknown>
        claims?: { path: unknown }[]
      }[]
    }
    const [credential, ...others] = query.credentials
    if (
      !credential ||
      others.length > 0 ||
      credential.format !== MDOC_FORMAT ||
      !/^[A-Za-z0-9_-]+$/.test(credential.id) ||
      !isDeepStrictEqual(credential.meta, { doctype_value: MDL_DOCTYPE }) ||
      !isDeepStrictEqual(
        credential.claims?.map((c) => c.path),
        [[MDL_NAMESPACE, 'family_name']],
      )
    )
      this.world.fail(
        `one credential query {id, format: ${MDOC_FORMAT}, meta: {doctype_value: ${MDL_DOCTYPE}}, claims [{path: [${MDL_NAMESPACE}, family_name]}]}; it was ${JSON.stringify(query)}`,
        null,
      )
  }

  /** §6.4.1, Appendix B.2.6: the one DeviceResponse of the vp_token discloses the family_name element only. */
  async expectOnlyFamilyNameDisclosed() {
    const result = this.dcql.presentedAnswer()
    const presentations = Object.values(result.dcqlVpToken ?? {}).flat()
    const [token] = presentations
    if (presentations.length !== 1 || typeof token !== 'string')
      this.world.fail(`one DeviceResponse in vp_token; it was ${JSON.stringify(result.dcqlVpToken)}`, null)
    await prepareMdoc()
    const { documents } = decodeDeviceResponse(token)
    const disclosed = documents.map((d) => d.namespaces)
    const wanted = [{ [MDL_NAMESPACE]: { family_name: MDL_ELEMENTS[MDL_NAMESPACE].family_name } }]
    if (!isDeepStrictEqual(disclosed, wanted))
      this.world.fail(
        `one document disclosing ${JSON.stringify(wanted[0])}; the DeviceResponse disclosed ${JSON.stringify(disclosed)}`,
        null,
      )
  }

  /** 4.7: the shared mdoc's credentialSubject is the family_name element by namespace, nothing else. */
  async expectSharedOnlyFamilyName() {
    const body = await this.dcql.read()
    const shared = (
      body.PresentationSubmission?.verifiableCredential as Record<string, unknown>[] | undefined
    )?.[0]
    const wanted = { [MDL_NAMESPACE]: { family_name: MDL_ELEMENTS[MDL_NAMESPACE].family_name } }
    if (
      !isDeepStrictEqual(shared?.type, ['VerifiableCredential', MDL_DOCTYPE]) ||
      !isDeepStrictEqual(shared?.credentialSubject, wanted)
    )
      this.world.fail(
        `a shared credential of type [VerifiableCredential, ${MDL_DOCTYPE}] whose credentialSubject is ${JSON.stringify(wanted)}; it was ${JSON.stringify(shared && { type: shared.type, credentialSubject: shared.credentialSubject })}`,
      )
  }
}
