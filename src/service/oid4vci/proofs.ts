import {
  UNDEFINED_TERMS_CONTEXT,
  unwrapEnvelopedCredential,
  VC_V2_CONTEXT,
  verifyPresentation,
} from '../../shared/data-integrity.ts'
import { type DidKey, JWS_ALGS, resolveDidKey } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { decodeJws, JwsError, verifyJws } from '../../shared/jws.ts'
import { PROOF_TYP } from '../../shared/wire.ts'
import { OAuthError } from '../errors/oauth.ts'
import { evaluateDefinition } from '../util/pex.ts'

// Key proofs of the credential request (OpenID4VCI Appendix F): what the wallet proves, checked
// entirely here before anything is stored.

// JWK members that only a private key has: a wallet that sends them leaked its key.
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth']
const FUTURE_SKEW_SECONDS = 60
export const PRESENTATION_TYPE = ['VerifiablePresentation', 'ServiceCredentialPresentation']

/** A verified key proof: who the holder is, the nonce it used, and what it shared. */
export interface HolderProof {
  holder: DidKey
  nonce: string
  /** The proof entry of the validator (section 2.5 shape, `creator` = holder key id). */
  proofEntry: Record<string, unknown>
  /** Shared credentials as the validator shows them (decoded, with their JWT in `proof`). */
  shared: Record<string, unknown>[]
}

export interface ProofContext {
  credentialIssuer: string
  now: number
  maxAgeSeconds: number
  /** Set when the template requires a presentation: a jwt proof is then refused. */
  presentationDefinition?: Record<string, unknown> | undefined
  trustedIssuers: (type: string) => readonly string[] | undefined
}

const invalid = (description: string) => new OAuthError('invalid_proof', description)

function resolveKid(kid: unknown, field: string): DidKey {
  if (typeof kid !== 'string') throw invalid(`${field} must be a did:key key id`)
  if (!kid.includes('#')) throw invalid(`${field} must name a key (did:key:…#…), not a bare DID`)
  try {
    return resolveDidKey(kid)
  } catch (error) {
    throw invalid(`${field} "${kid}" cannot be resolved: ${(error as Error).message}`)
  }
}

/** Appendix F.1: the `jwt` proof type. */
export function verifyJwtProof(jwt: unknown, ctx: ProofContext): HolderProof {
  if (ctx.presentationDefinition) {
    throw invalid('this credential requires a di_vp proof carrying the credentials the offer asks for')
  }
  if (typeof jwt !== 'string') throw invalid('proof.jwt must be a compact JWT')
  let header: Record<string, unknown>
  try {
    header = decodeJws(jwt).header
  } catch (error) {
    throw invalid(`proof JWT is malformed: ${(error as Error).message}`)
  }
  if (header.typ !== PROOF_TYP)
    throw invalid(`proof JWT header typ must be "${PROOF_TYP}", got ${JSON.stringify(header.typ)}`)
  if (typeof header.alg !== 'string' || !(JWS_ALGS as readonly string[]).includes(header.alg)) {
    throw invalid(
      `proof JWT alg ${JSON.stringify(header.alg)} is not allowed; use one of ${JWS_ALGS.join(', ')}`,
    )
  }
  for (const member of ['jwk', 'x5c'] as const) {
    const value = header[member]
    if (value === undefined) continue
    if (member === 'jwk' && isObject(value) && PRIVATE_JWK_MEMBERS.some((m) => m in value)) {
      throw invalid(
        'proof JWT header carries private key material in jwk; it is refused (and the key should be considered compromised)',
      )
    }
    throw invalid(`proof JWT must identify the key with kid (did:key), not ${member}`)
  }
  const holder = resolveKid(header.kid, 'proof JWT header kid')
  let payload: Record<string, unknown>
  try {
    payload = verifyJws(jwt, holder.publicKey, { algorithms: JWS_ALGS }).payload
  } catch (error) {
    const reason = error instanceof JwsError ? error.reason : 'bad_signature'
    if (reason === 'bad_signature')
      throw invalid('proof JWT signature does not verify with the key named in kid')
    throw invalid(`proof JWT rejected: ${(error as Error).message}`)
  }
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud]
  if (!audiences.includes(ctx.credentialIssuer)) {
    throw invalid(
      `proof JWT aud must be the credential issuer ${ctx.credentialIssuer}, got ${JSON.stringify(payload.aud)}`,
    )
  }
  checkIat(payload.iat, ctx)
  if (typeof payload.nonce !== 'string' || payload.nonce.length === 0) {
    throw new OAuthError('invalid_nonce', 'proof JWT has no nonce; fetch one from the nonce endpoint')
  }
  return {
    holder,
    nonce: payload.nonce,
    proofEntry: {
      type: 'JwtProof2020',
      created: new Date((payload.iat as number) * 1000).toISOString(),
      creator: holder.kid,
      proofPurpose: 'authentication',
      jwt,
    },
    shared: [],
  }
}

function checkIat(iat: unknown, ctx: ProofContext, what = 'proof JWT iat') {
  const now = Math.floor(ctx.now / 1000)
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalid(`${what} is missing or not a number`)
  if (iat > now + FUTURE_SKEW_SECONDS) throw invalid(`${what} is ${iat - now} s in the future`)
  if (iat < now - ctx.maxAgeSeconds) {
    throw invalid(`${what} is ${now - iat} s old; at most ${ctx.maxAgeSeconds} s is accepted`)
  }
}

/** The shared credential as the validator shows it: the decoded VC with its JWT as proof. */
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

/** Checks one shared JWT credential: signature by its issuer's did:key, validity, holder binding, trust. */
function checkSharedCredential(jwt: string, index: number, holderDid: string, ctx: ProofContext) {
  const where = `verifiableCredential[${index}]`
  let decoded: ReturnType<typeof decodeJws>
  try {
    decoded = decodeJws(jwt)
  } catch (error) {
    throw invalid(`${where} is not a JWT credential: ${(error as Error).message}`)
  }
  const issuer = resolveKid(decoded.header.kid, `${where} header kid`)
  try {
    verifyJws(jwt, issuer.publicKey, { algorithms: JWS_ALGS })
  } catch {
    throw invalid(`${where} signature does not verify with its issuer key ${issuer.kid}`)
  }
  const { payload } = decoded
  if (payload.iss !== issuer.did) throw invalid(`${where} iss is not the DID of the signing key`)
  const now = Math.floor(ctx.now / 1000)
  if (typeof payload.nbf === 'number' && payload.nbf > now + FUTURE_SKEW_SECONDS)
    throw invalid(`${where} is not valid yet`)
  if (typeof payload.exp === 'number' && payload.exp <= now) throw invalid(`${where} has expired`)
  if (payload.sub !== holderDid) {
    throw invalid(`${where} was issued to ${String(payload.sub)}, not to the presenting holder ${holderDid}`)
  }
  const view = sharedView(jwt, payload)
  const types = Array.isArray(view.type) ? (view.type as string[]) : []
  const trusted = ctx.trustedIssuers(types.at(-1) ?? '')
  if (trusted && !trusted.includes(issuer.did)) {
    throw invalid(`${where} (${types.at(-1)}) is issued by ${issuer.did}, which this template does not trust`)
  }
  return view
}

/**
 * The `di_vp` proof type (draft 13: `ldp_vp`): a Data Integrity presentation by the holder with
 * challenge = c_nonce and domain = credential issuer, carrying the credentials the offer asks for.
 */
export async function verifyDiVpProof(vp: unknown, ctx: ProofContext): Promise<HolderProof> {
  if (!isObject(vp)) throw invalid('di_vp must be a Verifiable Presentation object')
  const proof = Array.isArray(vp.proof) ? vp.proof[0] : vp.proof
  const challenge = isObject(proof) ? proof.challenge : undefined
  if (typeof challenge !== 'string' || challenge.length === 0) {
    throw new OAuthError(
      'invalid_nonce',
      'di_vp proof has no challenge; use a c_nonce from the nonce endpoint',
    )
  }
  const result = await verifyPresentation(vp, { challenge, domain: ctx.credentialIssuer })
  if (!result.verified) throw invalid(`di_vp rejected: ${result.errors.join('; ')}`)
  const holder = resolveDidKey(result.holderKid)
  const created = typeof result.proof.created === 'string' ? Date.parse(result.proof.created) : Number.NaN
  if (Number.isNaN(created)) throw invalid('di_vp proof has no valid created time')
  checkIat(Math.floor(created / 1000), ctx, 'di_vp proof created')

  const entries = Array.isArray(vp.verifiableCredential)
    ? vp.verifiableCredential
    : vp.verifiableCredential
      ? [vp.verifiableCredential]
      : []
  const jwts = entries.map((entry, i) => {
    const jwt = unwrapEnvelopedCredential(entry)
    if (!jwt)
      throw invalid(`verifiableCredential[${i}] must be an EnvelopedVerifiableCredential carrying a JWT`)
    return jwt
  })
  const shared = jwts.map((jwt, i) => checkSharedCredential(jwt, i, holder.did, ctx))
  if (ctx.presentationDefinition) {
    // The service evaluates the definition itself; a wallet-supplied submission is never trusted.
    const evaluation = evaluateDefinition(ctx.presentationDefinition, jwts)
    if (evaluation.outcome !== 'satisfied') {
      throw invalid(
        `shared credentials do not satisfy the offer's presentation_definition${evaluation.detail ? ` (${evaluation.detail})` : ''}`,
      )
    }
  }
  return {
    holder,
    nonce: challenge,
    proofEntry: { ...result.proof, creator: holder.kid },
    shared,
  }
}

/** The validator of section 2.4, built from a verified proof only. */
export function buildValidator(processId: string, proof: HolderProof): Record<string, unknown> {
  const context = [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT]
  return {
    id: processId,
    securityMechanisms: { '@context': context, type: PRESENTATION_TYPE, proof: [proof.proofEntry] },
    verifiablePresentation: {
      '@context': context,
      type: PRESENTATION_TYPE,
      holder: proof.holder.did,
      proof: [proof.proofEntry],
      verifiableCredential: proof.shared,
    },
  }
}
