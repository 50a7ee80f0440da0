import { type JsonWebKey, randomBytes } from 'node:crypto'
import type { FormatId } from '../../formats/registry.ts'
import { didKeyFromPublicKey, generateKeyPair, type JwsAlg } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { decodeJws, signInput } from '../../shared/jws.ts'
import { MDOC_FORMAT, reissueMdoc, tamperMdocElement } from '../../shared/mdoc.ts'
import { SD_JWT_VC_TYP } from '../../shared/wire.ts'
import { generateTestCa, issueCertificate } from '../../shared/x509.ts'
import type { SigningKey } from '../crypto/issuer-certificates.ts'
import { AppError } from '../errors/problem.ts'
import type { CredentialHandOut, IssuedWith, WireCredential } from '../oid4vci/service.ts'
import type { StatusLists } from '../status/service.ts'
import type { ProcessRecord, Store } from '../store/index.ts'
import type { Clock } from '../util/clock.ts'
import type { FaultRegistry } from './index.ts'

// Issuance faults at hand-out: the credential the wallet receives (credential and deferred endpoints) is
// the genuine one transformed here, the CredentialHandOut app.ts hands the issuer (oid4vci/service.ts) in an
// app built with `faults`; the process data the relying party reads stays genuine, and the signing code of
// issuance/ knows nothing of faults. Each transformation breaks one rule and keeps everything else
// valid, so a wallet that refuses can only have refused for that rule.

type Format = FormatId

const b64json = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
const seconds = (ms: number) => Math.floor(ms / 1000)
const vcTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

/** The alg of a public JWK's curve (a cnf.jwk), so another holder's key is of the same kind. */
function algOfJwk(jwk: unknown): JwsAlg {
  const crv = isObject(jwk) ? jwk.crv : undefined
  return crv === 'P-256' ? 'ES256' : crv === 'secp256k1' ? 'ES256K' : 'EdDSA'
}

/** A did:key nobody holds the key of in this flow: "another holder". */
function otherHolder(alg: JwsAlg) {
  return didKeyFromPublicKey(generateKeyPair(alg).publicKey)
}

/** A JWS with a new payload, its header bytes kept, signed by `key` (the issuer's, or a foreign one). */
function resign(jwt: string, payload: Record<string, unknown>, alg: JwsAlg, key: SigningKey['privateKey']) {
  const input = `${jwt.split('.')[0]}.${b64json(payload)}`
  return `${input}.${signInput(alg, input, key)}`
}

/** The issuer-signed JWT of a credential of either format, and how to put a changed one back. */
function parts(credential: string, format: Format) {
  const [jwt = '', ...tail] = format === SD_JWT_VC_TYP ? credential.split('~') : [credential]
  return { jwt, tail, join: (changed: string, rest = tail) => [changed, ...rest].join('~') }
}

/** RFC 9901 §7.1: a disclosure whose value changed no longer hashes to a digest the issuer signed. */
function tamperDisclosure(tail: string[]): string[] {
  const index = tail.findIndex((d) => d !== '')
  if (index < 0) {
    // Nothing selectively disclosable: a disclosure the issuer never signed breaks the same rule.
    const forged = b64json([randomBytes(16).toString('base64url'), 'vc_harness_forged', 'altered'])
    return [forged, ...tail]
  }
  const decoded: unknown = JSON.parse(Buffer.from(tail[index] as string, 'base64url').toString('utf8'))
  if (!Array.isArray(decoded)) throw new Error('an issued disclosure is not a JSON array')
  const value = decoded.at(-1)
  decoded[decoded.length - 1] = typeof value === 'string' ? `${value} (altered)` : 'altered'
  const changed = [...tail]
  changed[index] = b64json(decoded)
  return changed
}

/** Whether `fault` can be applied to credentials of `format`: a runner's mistake is named, not ignored. */
export function issuanceFaultProblem(fault: string | undefined, format: Format): AppError | undefined {
  // The re-signing faults rewrite a JWT or an mdoc's MSO; an ldp_vc's embedded proof is neither (revocation works for it).
  if (format === 'ldp_vc' && fault !== undefined && RESIGNING_FAULTS.includes(fault)) {
    return new AppError(
      'conflict',
      `fault ${fault} rewrites JWT-secured credentials (jwt_vc_json, ${SD_JWT_VC_TYP}); this template issues ldp_vc`,
    )
  }
  for (const [only, own] of [
    ['sd-jwt-tampered-disclosure', SD_JWT_VC_TYP],
    ['mdoc-digest-mismatch', MDOC_FORMAT],
  ] as const) {
    if (fault === only && format !== own) {
      return new AppError(
        'conflict',
        `fault ${fault} applies to ${own} credentials only; this template issues ${format}`,
      )
    }
  }
  return undefined
}

/** The faults that change a credential and sign it again (transform below). */
const RESIGNING_FAULTS: readonly string[] = [
  'credential-foreign-signature',
  'credential-other-holder',
  'sd-jwt-tampered-disclosure',
  'credential-expired',
]

export interface HandOut {
  tenantId: string
  processId: string
  format: Format
  /** The template's signing key (with its x5c chain, if any): what re-signed credentials are signed with. */
  key: SigningKey
}

export class CredentialFaults implements CredentialHandOut {
  constructor(
    readonly registry: FaultRegistry,
    private readonly deps: { store: Store; statusLists: StatusLists; clock: Clock },
  ) {}

  /** What the wallet receives instead of `credentials` under the tenant's fault (unchanged without one). */
  async handOut(
    credentials: WireCredential[],
    process: ProcessRecord,
    issuedWith: () => Promise<IssuedWith | undefined>,
  ): Promise<WireCredential[]> {
    const fault = this.registry.fault(process.tenantId)
    if (!fault) return credentials
    // The template (its format and signing key) is read only for a faulty tenant's hand-out.
    const issued = await issuedWith()
    if (!issued) return credentials
    const context: HandOut = {
      tenantId: process.tenantId,
      processId: process.id,
      format: issued.template.body.format ?? 'jwt_vc_json',
      key: issued.key,
    }
    const problem = issuanceFaultProblem(fault, context.format)
    if (problem) throw problem
    if (fault === 'credential-revoked') {
      await this.revoke(context.processId)
      return credentials
    }
    if (context.format === MDOC_FORMAT) {
      return Promise.all(
        credentials.map((c) => (typeof c === 'string' ? this.transformMdoc(fault, c, context) : c)),
      )
    }
    // issuanceFaultProblem refused the re-signing faults for ldp_vc objects; what is left keeps them as they are
    return credentials.map((credential) =>
      typeof credential === 'string' ? this.transform(fault, credential, context) : credential,
    )
  }

  private transform(fault: string | undefined, credential: string, { format, key }: HandOut): string {
    const { jwt, tail, join } = parts(credential, format)
    const { header, payload } = decodeJws(jwt)
    const alg = header.alg as JwsAlg
    const now = this.deps.clock.now()
    switch (fault) {
      // OpenID4VCI 1.0 §8.3 / SD-JWT VC §3.5: the signature must verify with the issuer's key.
      case 'credential-foreign-signature': {
        const input = jwt.split('.').slice(0, 2).join('.')
        return join(`${input}.${signInput(alg, input, generateKeyPair(alg).privateKey)}`)
      }
      // OpenID4VCI 1.0 §8.2.1: the credential must be bound to the key the wallet proved possession of.
      case 'credential-other-holder': {
        if (format === SD_JWT_VC_TYP) {
          const cnf = isObject(payload.cnf) ? payload.cnf : {}
          const other = otherHolder(algOfJwk(cnf.jwk))
          const changed = { ...payload, cnf: { ...cnf, jwk: other.publicJwk }, sub: other.did }
          return join(resign(jwt, changed, alg, key.privateKey))
        }
        const other = otherHolder('EdDSA')
        const vc = isObject(payload.vc) ? payload.vc : {}
        const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : {}
        const changed = {
          ...payload,
          sub: other.did,
          vc: { ...vc, credentialSubject: { ...subject, id: other.did } },
        }
        return join(resign(jwt, changed, alg, key.privateKey))
      }
      // RFC 9901 §7.1 step 3: every disclosure's digest must be in the issuer-signed payload.
      case 'sd-jwt-tampered-disclosure':
        return join(jwt, tamperDisclosure(tail))
      // RFC 7519 §4.1.4 / VC Data Model validUntil: an expired credential must not be accepted.
      case 'credential-expired': {
        const expired = now - 3_600_000
        const issued = now - 7_200_000
        const changed: Record<string, unknown> = {
          ...payload,
          exp: seconds(expired),
          iat: seconds(issued),
          nbf: seconds(issued),
        }
        if (format !== SD_JWT_VC_TYP && isObject(payload.vc)) {
          const vc: Record<string, unknown> = {
            ...payload.vc,
            expirationDate: vcTime(expired),
            issuanceDate: vcTime(issued),
          }
          if (vc.validUntil !== undefined) vc.validUntil = vcTime(expired)
          if (vc.validFrom !== undefined) vc.validFrom = vcTime(issued)
          changed.vc = vc
        }
        return join(resign(jwt, changed, alg, key.privateKey))
      }
      default:
        return credential
    }
  }

  /** The faults on an mdoc: its MSO changed and signed again, or an element changed under it. */
  private async transformMdoc(fault: string, credential: string, { key }: HandOut): Promise<string> {
    if (!key.mdocChain) throw new Error('an mso_mdoc template signs with a document signer chain')
    const genuine = { privateKey: key.privateKey, x5chain: key.mdocChain }
    const now = this.deps.clock.now()
    switch (fault) {
      // ISO 18013-5 §9.3.1: issuerAuth's x5chain must lead to a trusted IACA; this DS is under a stranger's.
      case 'credential-foreign-signature': {
        const stranger = await generateTestCa({ name: 'CN=vc-harness stranger IACA, C=UT', now })
        const pair = generateKeyPair('ES256')
        const ds = await issueCertificate({
          issuer: stranger,
          publicKey: pair.publicKey,
          subject: 'CN=vc-harness stranger document signer, C=UT',
        })
        return reissueMdoc(credential, {}, { privateKey: pair.privateKey, x5chain: [ds.toString('base64')] })
      }
      // OpenID4VCI 1.0 §8.2.1, ISO 18013-5 §9.1.2.4: the MSO's deviceKey must be the key the wallet proved.
      case 'credential-other-holder':
        return reissueMdoc(credential, { deviceKey: otherHolder('ES256').publicJwk as JsonWebKey }, genuine)
      // ISO 18013-5 §9.3.1: validityInfo.validUntil must not have passed.
      case 'credential-expired':
        return reissueMdoc(
          credential,
          {
            validity: {
              signed: new Date(now - 7_200_000),
              validFrom: new Date(now - 7_200_000),
              validUntil: new Date(now - 3_600_000),
            },
          },
          genuine,
        )
      case 'mdoc-digest-mismatch':
        return tamperMdocElement(credential)
      default:
        return credential
    }
  }

  /**
   * Token Status List §6 / Bitstring Status List: the entry says revoked before the wallet has the
   * credential, through the same status service a relying party's revocation goes through.
   */
  private async revoke(processId: string) {
    const { store, statusLists, clock } = this.deps
    await store.transaction(async (repos) => {
      const live = (await repos.issuedCredentials.listByProcess(processId)).filter(
        (e) => e.status !== 'revoked',
      )
      const now = clock.now()
      for (const entry of live) await repos.issuedCredentials.setStatus(entry.id, 'revoked', now)
      await statusLists.apply(
        repos,
        live.map((e) => ({ listId: e.listId, index: e.listIndex, status: 'revoked' as const })),
      )
    })
  }
}
