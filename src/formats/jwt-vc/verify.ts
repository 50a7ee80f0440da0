import { type DidKey, isJwsAlg, resolveDidKey } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { type DecodedJws, decodeJws, JwsError, verifyJws } from '../../shared/jws.ts'
import { bindingFailures } from '../binding.ts'
import type {
  CredentialFormat,
  FormatPolicy,
  KeyResolver,
  PresentationFormat,
  ProofResult,
  ReadCredential,
  ReadPresentation,
  ValidityBound,
} from '../types.ts'

// JWT-secured W3C credentials and presentations (VC Data Model 1.1 JWT encoding, section 6.3.1):
// OpenID4VC format `jwt_vc_json` (Veramo and PEX say `jwt_vc`) and `jwt_vp_json` (`jwt_vp`). Keys are
// named by `kid` only (a did:key key id); `jwk` and `x5c` headers are refused.

const COMPACT = /^[\w-]+\.[\w-]+\.[\w-]*$/

/** Resolves a kid that must be a did:key key id (`did:key:…#…`). */
export function resolveKid(kid: unknown, keys: KeyResolver = resolveDidKey): DidKey {
  if (typeof kid !== 'string' || !kid.startsWith('did:key:') || !kid.includes('#')) {
    throw new Error(`kid ${JSON.stringify(kid)} is not a did:key key id`)
  }
  return keys(kid)
}

/** The shared credential as section 2.4 shows it: the decoded VC with its JWT as proof. */
/**
 * The issuer's signature over a JWT-based credential, by the did:key its `kid` names; `iss`, when present
 * (or when `issRequired`), must be that DID. One check for every JWT-secured format.
 */
export function verifyIssuerJws(
  jwt: string,
  kid: unknown,
  iss: unknown,
  keys: KeyResolver,
  policy: FormatPolicy,
  issRequired: boolean,
): ProofResult {
  try {
    const issuerKey = resolveKid(kid, keys)
    verifyJws(jwt, issuerKey.publicKey, { algorithms: policy.algorithms })
    if ((issRequired || iss !== undefined) && iss !== issuerKey.did)
      return { ok: false, reason: 'iss is not the DID of the key that signed it' }
    return { ok: true, issuer: issuerKey.did }
  } catch (error) {
    return { ok: false, reason: signatureFailure(error, 'its issuer key') }
  }
}

/** Why an issuer's signature failed: altered (it does not verify with `key`), or not checkable at all. */
export function signatureFailure(error: unknown, key: string): string {
  return error instanceof JwsError && error.reason === 'bad_signature'
    ? `signature does not verify with ${key} (was it altered?)`
    : `cannot be checked: ${(error as Error).message}`
}

/** A W3C credential's `type`, as a list (a lone string is one type). */
export const vcTypes = (vc: Record<string, unknown>): string[] =>
  Array.isArray(vc.type) ? vc.type.map(String) : typeof vc.type === 'string' ? [vc.type] : []

export function sharedView(jwt: string, payload: Record<string, unknown>): Record<string, unknown> {
  const vc = isObject(payload.vc) ? payload.vc : {}
  const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : {}
  return {
    ...vc,
    id: vc.id ?? payload.jti,
    issuer: vc.issuer ?? payload.iss,
    issuanceDate:
      vc.issuanceDate ??
      (typeof payload.nbf === 'number' ? new Date(payload.nbf * 1000).toISOString() : undefined),
    credentialSubject: { ...subject, id: subject.id ?? payload.sub },
    proof: { type: 'JwtProof2020', jwt },
  }
}

const isoOf = (seconds: number) => new Date(seconds * 1000).toISOString()

/** VCDM 1.1 §6.3.1: nbf/exp stand for issuanceDate/expirationDate; VCDM 2.0 validFrom/validUntil as well. */
function validityOf(payload: Record<string, unknown>, vc: Record<string, unknown>): ValidityBound[] {
  const bounds: ValidityBound[] = []
  if (typeof payload.nbf === 'number')
    bounds.push({ kind: 'notBefore', at: payload.nbf * 1000, shown: isoOf(payload.nbf) })
  if (typeof payload.exp === 'number')
    bounds.push({ kind: 'notAfter', at: payload.exp * 1000, shown: isoOf(payload.exp) })
  const until = [vc.expirationDate, vc.validUntil].find((v) => typeof v === 'string') as string | undefined
  if (until) bounds.push({ kind: 'notAfter', at: Date.parse(until), shown: until })
  if (typeof vc.validFrom === 'string')
    bounds.push({ kind: 'notBefore', at: Date.parse(vc.validFrom), shown: vc.validFrom })
  return bounds
}

function readJwtCredential(raw: unknown, policy: FormatPolicy): ReadCredential {
  if (typeof raw !== 'string') throw new Error('is not a JWT credential (jwt_vc)')
  let decoded: DecodedJws
  try {
    decoded = decodeJws(raw)
  } catch (error) {
    throw new Error(`is not a compact JWT: ${(error as Error).message}`)
  }
  const { header, payload } = decoded
  if (!isJwsAlg(header.alg) || !policy.algorithms.includes(header.alg)) {
    throw new Error(`alg ${JSON.stringify(header.alg)} is not allowed`)
  }
  const vc = isObject(payload.vc) ? payload.vc : {}
  const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : {}
  const subjectId = subject.id
  const { sub } = payload
  const conflict =
    sub !== undefined && subjectId !== undefined && sub !== subjectId
      ? `names two subjects: sub ${String(sub)} and credentialSubject.id ${String(subjectId)}`
      : undefined
  const holderId = sub ?? subjectId
  const claims: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(subject)) if (k !== 'id') claims[k] = v
  return {
    format: 'jwt_vc_json',
    alg: header.alg,
    types: vcTypes(vc),
    verifyProof(keys) {
      return verifyIssuerJws(raw, header.kid, payload.iss, keys, policy, true)
    },
    holderBinding: {
      kind: 'subject',
      id: typeof holderId === 'string' ? holderId : undefined,
      ...(conflict ? { conflict } : {}),
    },
    validity: validityOf(payload, vc),
    status: vc.credentialStatus === undefined ? [] : [{ kind: 'bitstring', entry: vc.credentialStatus }],
    claims,
    sharedView: sharedView(raw, payload),
    queryInput: raw,
  }
}

export const jwtVcJson: CredentialFormat = {
  id: 'jwt_vc_json',
  aliases: ['jwt_vc'],
  accepts: (raw) => typeof raw === 'string' && COMPACT.test(raw),
  read: readJwtCredential,
}

/** A JWT VP (`vp` claim); the binding is `nonce` / `aud` / `iat` / `exp` (OpenID4VP draft 20 §12.1). */
function readJwtPresentation(token: unknown, policy: FormatPolicy): ReadPresentation {
  if (typeof token !== 'string' || token.length === 0) throw new Error('vp_token is missing')
  if (/^\s*[{[]/.test(token)) {
    throw new Error('vp_token is a JSON (ldp_vp) presentation; this verifier accepts jwt_vp only')
  }
  let vp: DecodedJws
  try {
    vp = decodeJws(token)
  } catch (error) {
    throw new Error(`vp_token is not a compact JWT: ${(error as Error).message}`)
  }
  const { header, payload } = vp
  if (!isJwsAlg(header.alg) || !policy.algorithms.includes(header.alg)) {
    throw new Error(
      `vp_token alg ${JSON.stringify(header.alg)} is not one of ${policy.algorithms.join(', ')}`,
    )
  }
  if (header.jwk !== undefined || header.x5c !== undefined) {
    throw new Error('vp_token must name its key with kid (did:key), not jwk or x5c')
  }
  let holderKey: DidKey
  try {
    holderKey = resolveKid(header.kid)
  } catch (error) {
    throw new Error(`vp_token header: ${(error as Error).message}`)
  }
  const body = payload.vp
  if (!isObject(body)) throw new Error('vp_token payload has no vp object')
  const types = Array.isArray(body.type) ? body.type : [body.type]
  if (!types.includes('VerifiablePresentation'))
    throw new Error('vp.type does not include VerifiablePresentation')
  const raw = Array.isArray(body.verifiableCredential)
    ? body.verifiableCredential
    : body.verifiableCredential === undefined
      ? []
      : [body.verifiableCredential]
  if (raw.length === 0) throw new Error('vp.verifiableCredential is empty')
  const alg = header.alg
  return {
    format: 'jwt_vp_json',
    mechanisms: `jwt_vp (${alg}) by a did:key holder`,
    verifyBinding: (session) =>
      bindingFailures(
        {
          nonce: payload.nonce,
          audiences: Array.isArray(payload.aud) ? payload.aud : [payload.aud],
          issuedAt: payload.iat,
          expiresAt: payload.exp,
          audienceShown: payload.aud,
          names: {
            presentation: 'VP',
            nonce: 'VP nonce',
            audience: 'VP aud',
            issuedAt: 'VP iat',
            expiresAt: 'exp',
          },
        },
        session,
      ),
    credentials: raw.map((entry, index) => ({ index, raw: entry })),
    unreadable: [],
    async verifyProof() {
      const failures: string[] = []
      try {
        verifyJws(token, holderKey.publicKey, { algorithms: policy.algorithms })
      } catch (error) {
        failures.push(
          error instanceof JwsError && error.reason === 'bad_signature'
            ? `the VP signature does not verify with the holder key ${holderKey.kid}`
            : `the VP signature cannot be checked: ${(error as Error).message}`,
        )
      }
      if (payload.iss !== undefined && payload.iss !== holderKey.did) {
        failures.push(
          `VP iss ${JSON.stringify(payload.iss)} is not the DID of the signing key ${holderKey.did}`,
        )
      }
      if (body.holder !== undefined && body.holder !== holderKey.did) {
        failures.push(`vp.holder ${JSON.stringify(body.holder)} is not the DID of the signing key`)
      }
      if (failures.length > 0) return { ok: false, failures }
      return {
        ok: true,
        holder: holderKey,
        proofEntry: { type: 'JwtProof2020', creator: holderKey.kid, jwt: token },
      }
    },
  }
}

export const jwtVpJson: PresentationFormat = {
  id: 'jwt_vp_json',
  aliases: ['jwt_vp'],
  read: readJwtPresentation,
}
