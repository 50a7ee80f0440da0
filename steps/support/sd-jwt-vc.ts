import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list'
import { subjectClaims } from '../../src/formats/sd-jwt-vc/issuer.ts'
import { JWS_ALGS, resolveDidKey } from '../../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../../src/shared/jws.ts'
import { splitSdJwt, verifySdJwtVc } from '../../src/shared/sd-jwt.ts'
import { SD_JWT_VC_TYP, STATUS_LIST_JWT_MEDIA_TYPE, STATUS_LIST_JWT_TYP } from '../../src/shared/wire.ts'
import { DEGREE_CONTENT, type IssuanceFlow, SD_JWT_TEMPLATE } from './issuance.ts'
import type { FlowWorld } from './world-types.ts'

// The SD-JWT VC side of a scenario: what the wallet received last, read as SD-JWT VC (typ, vct, cnf, the
// disclosed claims) and its IETF Token Status List entry, fetched through the relying-party client's HTTP.
// The World owns one; steps call it in one line.

/** Token Status List status types (§7.1), as this service's revoke and suspend map onto them. */
export const STATUS_TYPES = { VALID: 0, INVALID: 1, SUSPENDED: 2 } as const
export type StatusType = keyof typeof STATUS_TYPES

/** JWT claims of an SD-JWT VC that are not the credential's own claims (SD-JWT VC §3.2.2, RFC 7519). */

export class SdJwtVcFlow {
  /** The Token Status List JWT read last, and the entry it was read for. */
  private statusList: { jwt: string; idx: number; uri: string } | undefined

  constructor(
    private readonly world: FlowWorld,
    private readonly issuance: IssuanceFlow,
  ) {}

  /** The SD-JWT VC the wallet received last, with its issuer-signed header and payload. */
  credential() {
    const stored = this.issuance.stored[0]
    if (!stored) this.world.fail('an SD-JWT VC in the wallet; it received none', null)
    if (stored.format !== SD_JWT_VC_TYP)
      this.world.fail(`a ${SD_JWT_VC_TYP} credential; the wallet stored a ${stored.format} one`, null)
    const compact = stored.credential
    const { header, payload } = decodeJws(splitSdJwt(compact).jwt)
    return { compact, header, payload, stored }
  }

  // The configuration in the issuer metadata (read at its 1.0 location by the issuance flow)

  private configuration() {
    const configuration = this.issuance.configurations()[SD_JWT_TEMPLATE.id]
    if (!configuration)
      this.world.fail(`configuration "${SD_JWT_TEMPLATE.id}" in credential_configurations_supported`, null)
    return configuration
  }

  /** 1.0 Appendix A.3.2: `format` dc+sd-jwt and the `vct` of the credential type. */
  expectConfigurationFormatAndVct() {
    const configuration = this.configuration()
    if (configuration.format !== SD_JWT_VC_TYP || configuration.vct !== SD_JWT_TEMPLATE.vct)
      this.world.fail(
        `format ${SD_JWT_VC_TYP} and vct ${SD_JWT_TEMPLATE.vct}; the configuration was ${JSON.stringify(configuration)}`,
        null,
      )
  }

  /** 1.0 §12.2.4 and Appendix C: every described claim has a `path`, a non-empty claims path pointer. */
  expectClaimsPathPointers() {
    const meta = this.configuration().credential_metadata as { claims?: { path?: unknown }[] } | undefined
    const claims = meta?.claims
    const pointer = (path: unknown) =>
      Array.isArray(path) &&
      path.length > 0 &&
      path.every((p) => typeof p === 'string' || p === null || (Number.isInteger(p) && p >= 0))
    const expected = SD_JWT_TEMPLATE.claims.map((c) => c.path.split('.'))
    if (
      !Array.isArray(claims) ||
      claims.length !== expected.length ||
      !claims.every((c) => pointer(c.path)) ||
      JSON.stringify(claims.map((c) => c.path)) !== JSON.stringify(expected)
    )
      this.world.fail(
        `credential_metadata.claims with the claims path pointers ${JSON.stringify(expected)}; it was ${JSON.stringify(meta)}`,
        null,
      )
  }

  // The credential

  /** The wallet received an SD-JWT VC of the template's vct. */
  expectReceived() {
    this.issuance.expectWalletSuccess()
    const { stored } = this.credential()
    if (stored.vct !== SD_JWT_TEMPLATE.vct)
      this.world.fail(`an SD-JWT VC of vct ${SD_JWT_TEMPLATE.vct}; the wallet stored ${stored.vct}`, null)
  }

  /** SD-JWT VC §3.2.1: explicitly typed `typ: dc+sd-jwt`. */
  expectTyp() {
    const { header } = this.credential()
    if (header.typ !== SD_JWT_VC_TYP)
      this.world.fail(`header typ ${SD_JWT_VC_TYP}; it was ${JSON.stringify(header.typ)}`, null)
  }

  /** SD-JWT VC §3.2.2: `vct` is the credential type the configuration names. */
  expectVct() {
    const { payload } = this.credential()
    if (payload.vct !== SD_JWT_TEMPLATE.vct)
      this.world.fail(`vct ${SD_JWT_TEMPLATE.vct}; it was ${JSON.stringify(payload.vct)}`, null)
  }

  /** SD-JWT VC §3.2.2 (RFC 7800): `cnf.jwk` is the public key of the holder that signed the key proof. */
  async expectBoundToHolder() {
    const { payload } = this.credential()
    const holder = (await this.issuance.wallet()).publicJwk()
    const jwk = (payload.cnf as { jwk?: JsonWebKey } | undefined)?.jwk
    const same =
      jwk?.kty === holder.kty &&
      jwk?.crv === holder.crv &&
      jwk?.x === holder.x &&
      (jwk?.y ?? '') === (holder.y ?? '')
    if (!same)
      this.world.fail(
        `cnf.jwk = the holder's key ${JSON.stringify(holder)}; cnf was ${JSON.stringify(payload.cnf)}`,
        null,
      )
  }

  /**
   * SD-JWT VC §3.2 over RFC 9901: the issuer-signed JWT verifies with the key its `kid` names (a did:key of the
   * `iss`), and every disclosure is referenced by a digest of the signed payload.
   */
  async verify() {
    const { compact, header, payload } = this.credential()
    const kid = String(header.kid)
    if (
      !kid.startsWith('did:key:') ||
      (typeof payload.iss === 'string' && !kid.startsWith(`${payload.iss}#`))
    )
      this.world.fail(
        `a header kid naming a did:key of the issuer ${String(payload.iss)}; it was ${kid}`,
        null,
      )
    try {
      return await verifySdJwtVc(compact, {
        issuerKey: () => resolveDidKey(kid).publicKey,
        algorithms: JWS_ALGS,
        now: Date.now(),
      })
    } catch (error) {
      this.world.fail(`an SD-JWT VC that verifies; it did not: ${(error as Error).message}`, null)
    }
  }

  /** The disclosed claims, the registered JWT claims aside, are the credentialSubject the application submitted. */
  async expectSubmittedClaims() {
    const { claims } = await this.verify()
    const own = subjectClaims(claims)
    const submitted = DEGREE_CONTENT[0]?.credentialSubject
    if (JSON.stringify(own) !== JSON.stringify(submitted))
      this.world.fail(
        `the claims ${JSON.stringify(submitted)}; the SD-JWT VC disclosed ${JSON.stringify(own)}`,
        null,
      )
  }

  // Its status (IETF Token Status List)

  /** Token Status List §6: `status.status_list` with the index `idx` and the list's `uri`. */
  statusReference(): { idx: number; uri: string } {
    const { payload } = this.credential()
    const reference = (payload.status as { status_list?: { idx?: unknown; uri?: unknown } } | undefined)
      ?.status_list
    const { idx, uri } = reference ?? {}
    if (!Number.isInteger(idx) || (idx as number) < 0 || typeof uri !== 'string' || !URL.canParse(uri))
      this.world.fail(
        `status.status_list {idx, uri} in the SD-JWT VC; status was ${JSON.stringify(payload.status)}`,
        null,
      )
    return { idx: idx as number, uri: uri as string }
  }

  /** Token Status List §8.1: GET the referenced `uri`, asking for the Status List Token as a JWT. */
  async readStatusList() {
    const { idx, uri } = this.statusReference()
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
    return this.statusList
  }

  /**
   * Token Status List §5.1: a JWT typed `statuslist+jwt`, signed by the issuer's did:key (as the credential
   * is), whose `sub` is the `uri` the credential references.
   */
  expectStatusListToken() {
    const list = this.requireStatusList()
    const { header, payload } = decodeJws(list.jwt)
    const issuerKid = String(this.credential().header.kid)
    if (header.typ !== STATUS_LIST_JWT_TYP)
      this.world.fail(`header typ ${STATUS_LIST_JWT_TYP}; it was ${JSON.stringify(header.typ)}`, null)
    if (payload.sub !== list.uri)
      this.world.fail(
        `sub ${list.uri} (the uri the credential references); it was ${JSON.stringify(payload.sub)}`,
        null,
      )
    try {
      verifyJws(list.jwt, resolveDidKey(String(header.kid)).publicKey, { algorithms: [...JWS_ALGS] })
    } catch (error) {
      this.world.fail(
        `a Status List Token signed by ${String(header.kid)}: ${(error as Error).message}`,
        null,
      )
    }
    if (String(header.kid).split('#')[0] !== issuerKid.split('#')[0])
      this.world.fail(
        `a Status List Token signed by the credential's issuer ${issuerKid}; kid was ${String(header.kid)}`,
        null,
      )
  }

  /** Token Status List §7.1: the status type at the credential's index. */
  expectStatus(expected: StatusType) {
    const list = this.requireStatusList()
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

  private requireStatusList() {
    if (!this.statusList) throw new Error('the Token Status List has not been read')
    return this.statusList
  }
}
