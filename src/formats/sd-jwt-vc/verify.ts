import { createHash, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto'
import { type DidKey, didKeyFromPublicKey, isJwsAlg } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { type DecodedJws, decodeJws, JwsError, verifyJws } from '../../shared/jws.ts'
import { type ClaimPath, readDisclosures, SD_JWT_LIMITS, splitSdJwt } from '../../shared/sd-jwt.ts'
import { tokenStatusReference } from '../../shared/token-status-list.ts'
import { KB_JWT_TYP, SD_JWT_VC_TYP, SD_JWT_VC_TYP_LEGACY } from '../../shared/wire.ts'
import { bindingFailures } from '../binding.ts'
import { signatureFailure, verifyIssuerJws } from '../jwt-vc/verify.ts'
import type {
  CredentialFormat,
  FormatPolicy,
  PresentationFormat,
  ProofContext,
  ProofResult,
  ReadCredential,
  ReadPresentation,
  StatusReference,
  ValidityBound,
} from '../types.ts'
import { IssuerKeyError, type SdJwtIssuer, sdJwtIssuer, subjectClaims } from './issuer.ts'

// SD-JWT VC (`dc+sd-jwt`; draft-ietf-oauth-sd-jwt-vc, SD-JWT RFC 9901) for the pipeline. A presentation
// is `<issuer-signed JWT>~<disclosures>~<KB-JWT>`: the same string is the credential (read by
// `sdJwtVcCredential`) and its own presentation (`sdJwtVcPresentation`, whose proof is the KB-JWT).
// The issuer names its key by a did:key `kid`, or by an `x5c` chain to one of the verifier's trust anchors
// (issuer.ts decides who signed, for the service and the wallet alike).
// Work is bounded before anything is trusted (issue 30): reading decodes the issuer-signed JWT only; the
// disclosures are decoded, digested and applied by shared/sd-jwt.ts's readDisclosures (RFC 9901 §7.1, its
// limits) once the issuer's signature verified. Until then the claims are the payload's plain ones.

const isoOf = (seconds: number) => new Date(seconds * 1000).toISOString()

function validityOf(payload: Record<string, unknown>): ValidityBound[] {
  const bounds: ValidityBound[] = []
  if (typeof payload.nbf === 'number')
    bounds.push({ kind: 'notBefore', at: payload.nbf * 1000, shown: isoOf(payload.nbf) })
  if (typeof payload.exp === 'number')
    bounds.push({ kind: 'notAfter', at: payload.exp * 1000, shown: isoOf(payload.exp) })
  return bounds
}

/** `status.status_list {idx, uri}` (Token Status List §6.1); throws when present but malformed. */
function statusOf(payload: Record<string, unknown>): StatusReference[] {
  const ref = tokenStatusReference(payload)
  return ref ? [{ kind: 'token-status-list', ...ref }] : []
}

/** The holder key of `cnf.jwk` (public members only), or why there is none. */
function cnfKey(payload: Record<string, unknown>): { jwk: JsonWebKey; key: KeyObject } | string {
  const jwk = isObject(payload.cnf) && isObject(payload.cnf.jwk) ? payload.cnf.jwk : undefined
  if (!jwk) return 'the credential has no cnf.jwk (it is not key-bound)'
  const { d: _private, ...pub } = jwk as JsonWebKey & { d?: string }
  try {
    return { jwk: pub, key: createPublicKey({ key: pub, format: 'jwk' }) }
  } catch (error) {
    return `cnf.jwk is not a usable public key: ${(error as Error).message}`
  }
}

interface Parsed {
  compact: string
  issuerJwt: string
  decoded: DecodedJws
  disclosures: string[]
  kbJwt: string | undefined
}

function parse(raw: unknown, policy: FormatPolicy, what: string): Parsed {
  if (typeof raw !== 'string' || !raw.includes('~')) throw new Error(`is not an SD-JWT (${what})`)
  const { jwt, disclosures, kbJwt } = splitSdJwt(raw)
  if (disclosures.length > SD_JWT_LIMITS.maxDisclosures) {
    throw new Error(
      `has ${disclosures.length} disclosures; at most ${SD_JWT_LIMITS.maxDisclosures} are read (limit maxDisclosures)`,
    )
  }
  let decoded: DecodedJws
  try {
    decoded = decodeJws(jwt)
  } catch (error) {
    throw new Error(`has a malformed issuer-signed JWT: ${(error as Error).message}`)
  }
  const { header } = decoded
  if (header.typ !== SD_JWT_VC_TYP && header.typ !== SD_JWT_VC_TYP_LEGACY) {
    throw new Error(`typ ${JSON.stringify(header.typ)} is not ${SD_JWT_VC_TYP}`)
  }
  if (!isJwsAlg(header.alg) || !policy.algorithms.includes(header.alg)) {
    throw new Error(`alg ${JSON.stringify(header.alg)} is not one of ${policy.algorithms.join(', ')}`)
  }
  return { compact: raw, issuerJwt: jwt, decoded, disclosures, kbJwt }
}

/**
 * SD-JWT VC §3.5 / HAIP: the issuer-signed JWT names its key by an `x5c` chain that must end in one of the
 * verifier's trust anchors and name `iss` (issuer.ts, the rule the wallet applies too).
 */
async function verifyX5cIssuer(
  jwt: string,
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  policy: FormatPolicy,
  context: ProofContext | undefined,
): Promise<ProofResult> {
  let signer: SdJwtIssuer
  try {
    signer = await sdJwtIssuer(header, payload, {
      anchors: context?.trustAnchors ?? [],
      now: context?.now ?? Date.now(),
    })
  } catch (error) {
    if (!(error instanceof IssuerKeyError)) throw error
    const reason =
      error.code === 'no_anchor'
        ? 'names its issuer key by x5c, and this verifier has no trust anchor configured'
        : error.code === 'chain'
          ? `x5c chain: ${error.message}`
          : error.message
    return { ok: false, reason }
  }
  try {
    verifyJws(jwt, signer.key, { algorithms: policy.algorithms })
  } catch (error) {
    return { ok: false, reason: signatureFailure(error, 'the x5c leaf key') }
  }
  return {
    ok: true,
    issuer: signer.issuer,
    ...(signer.anchor !== undefined && { anchor: signer.anchor }),
    issuerKey: signer.key,
  }
}

function readSdJwtCredential(raw: unknown, policy: FormatPolicy): ReadCredential {
  const { issuerJwt, decoded, disclosures } = parse(raw, policy, SD_JWT_VC_TYP)
  const { header, payload } = decoded
  if (typeof payload.vct !== 'string') throw new Error('has no vct')
  const vct = payload.vct
  const cnf = cnfKey(payload)
  const status = statusOf(payload)
  const withoutKb = `${[issuerJwt, ...disclosures].join('~')}~`
  /** The payload with the disclosures applied, once the issuer's signature verified; the plain claims until then. */
  let all: Record<string, unknown> = plainClaims(payload)
  let disclosed: ClaimPath[] = []
  let view: { claims: Record<string, unknown>; sharedView: Record<string, unknown>; queryInput: unknown }
  const refresh = () => {
    const claims = subjectClaims(all)
    view = {
      claims,
      sharedView: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', vct],
        issuer: payload.iss,
        issuanceDate: typeof payload.iat === 'number' ? isoOf(payload.iat) : undefined,
        ...(typeof payload.exp === 'number' ? { expirationDate: isoOf(payload.exp) } : {}),
        credentialSubject: { ...(typeof payload.sub === 'string' ? { id: payload.sub } : {}), ...claims },
        ...(status.length > 0 ? { credentialStatus: payload.status } : {}),
        proof: { type: 'SdJwtVc', format: SD_JWT_VC_TYP, sdJwt: withoutKb },
      },
      // DCQL evaluates dc+sd-jwt credentials on their disclosed claims with vct (dcql's own model).
      queryInput: { credential_format: SD_JWT_VC_TYP, vct, claims: { ...all } },
    }
  }
  refresh()
  /** RFC 9901 §7.1 on a payload whose signature verified: the disclosures applied, or why they cannot be. */
  const applyDisclosures = (result: ProofResult): ProofResult => {
    if (!result.ok) return result
    try {
      const read = readDisclosures(payload, disclosures)
      all = read.claims
      disclosed = read.disclosed
    } catch (error) {
      return { ok: false, reason: `disclosures: ${(error as Error).message}` }
    }
    refresh()
    return result
  }
  return {
    format: SD_JWT_VC_TYP,
    alg: header.alg as string,
    types: [vct],
    verifyProof(keys, context) {
      // the issuer's signature first: nothing of a disclosure is decoded for an unsigned token
      if (header.x5c !== undefined) {
        return verifyX5cIssuer(issuerJwt, header, payload, policy, context).then(applyDisclosures)
      }
      return applyDisclosures(verifyIssuerJws(issuerJwt, header.kid, payload.iss, keys, policy, false))
    },
    // An unusable or missing cnf binds nobody: an empty JWK never equals the presenter's key.
    holderBinding: { kind: 'key', jwk: typeof cnf === 'string' ? {} : cnf.jwk },
    validity: validityOf(payload),
    status,
    get claims() {
      return view.claims
    },
    get sharedView() {
      return view.sharedView
    },
    get queryInput() {
      return view.queryInput
    },
    get disclosed() {
      return disclosed
    },
  }
}

/** The issuer-signed payload's own claims, without SD-JWT internals (what is visible without disclosures). */
function plainClaims(payload: Record<string, unknown>): Record<string, unknown> {
  const { _sd: _digests, _sd_alg: _alg, ...plain } = payload
  return plain
}

export const sdJwtVcCredential: CredentialFormat = {
  id: SD_JWT_VC_TYP,
  aliases: [SD_JWT_VC_TYP_LEGACY],
  accepts: (raw) => typeof raw === 'string' && /^[\w-]+\.[\w-]+\.[\w-]*~/.test(raw),
  read: readSdJwtCredential,
}

/**
 * An SD-JWT VC presentation: the credential is the whole string; the KB-JWT is the holder's proof
 * (signature by `cnf.jwk`, `sd_hash` over what precedes it) and carries the session binding.
 */
function readSdJwtPresentation(token: unknown, policy: FormatPolicy): ReadPresentation {
  if (typeof token !== 'string' || token.length === 0) throw new Error('vp_token is missing')
  let parsed: Parsed
  try {
    parsed = parse(token, policy, SD_JWT_VC_TYP)
  } catch (error) {
    throw new Error(`vp_token ${(error as Error).message}`)
  }
  const { kbJwt, issuerJwt, disclosures, decoded } = parsed
  let kb: DecodedJws | undefined
  let kbProblem: string | undefined
  if (kbJwt === undefined) kbProblem = 'the SD-JWT VC presentation has no key-binding JWT (KB-JWT)'
  else {
    try {
      kb = decodeJws(kbJwt)
    } catch (error) {
      kbProblem = `the KB-JWT is malformed: ${(error as Error).message}`
    }
  }
  const p = kb?.payload ?? {}
  return {
    format: SD_JWT_VC_TYP,
    mechanisms: `${SD_JWT_VC_TYP} (${String(decoded.header.alg)}) with ${kb ? `a KB-JWT (${String(kb.header.alg)})` : 'no KB-JWT'}`,
    verifyBinding: (session) =>
      bindingFailures(
        {
          nonce: p.nonce,
          audiences: Array.isArray(p.aud) ? p.aud : [p.aud],
          issuedAt: p.iat,
          expiresAt: p.exp,
          audienceShown: p.aud,
          names: {
            presentation: 'KB-JWT',
            nonce: 'KB-JWT nonce',
            audience: 'KB-JWT aud',
            issuedAt: 'KB-JWT iat',
            expiresAt: 'KB-JWT exp',
          },
        },
        session,
      ),
    credentials: [{ index: 0, raw: token }],
    unreadable: [],
    async verifyProof() {
      if (!kb || kbJwt === undefined) return { ok: false, failures: [kbProblem as string] }
      const failures: string[] = []
      if (kb.header.typ !== KB_JWT_TYP)
        failures.push(`KB-JWT typ ${JSON.stringify(kb.header.typ)} is not ${KB_JWT_TYP}`)
      if (p.iat === undefined) failures.push('KB-JWT iat is missing')
      const cnf = cnfKey(decoded.payload)
      let holder: DidKey | undefined
      if (typeof cnf === 'string') failures.push(`the KB-JWT cannot be checked: ${cnf}`)
      else {
        try {
          verifyJws(kbJwt, cnf.key, { algorithms: policy.algorithms })
          holder = didKeyFromPublicKey(cnf.key)
        } catch (error) {
          failures.push(
            error instanceof JwsError && error.reason === 'bad_signature'
              ? 'the KB-JWT signature does not verify with the credential’s cnf key'
              : `the KB-JWT signature cannot be checked: ${(error as Error).message}`,
          )
        }
      }
      const presented = `${[issuerJwt, ...disclosures].join('~')}~`
      const sdHash = createHash('sha256').update(presented, 'ascii').digest('base64url')
      if (p.sd_hash !== sdHash) failures.push('KB-JWT sd_hash is not the digest of the presented SD-JWT')
      if (failures.length > 0 || !holder) return { ok: false, failures }
      return {
        ok: true,
        holder,
        proofEntry: { type: 'SdJwtKeyBinding', format: KB_JWT_TYP, jwt: kbJwt },
      }
    },
  }
}

export const sdJwtVcPresentation: PresentationFormat = {
  id: SD_JWT_VC_TYP,
  aliases: [SD_JWT_VC_TYP_LEGACY],
  read: readSdJwtPresentation,
}

/** The format as both roles: `credential` for credentialFormats, `presentation` for presentationFormat. */
export const sdJwtVc = { credential: sdJwtVcCredential, presentation: sdJwtVcPresentation } as const
