import { createPublicKey, type KeyObject, type JsonWebKey as NodeJwk } from 'node:crypto'
import { ldpVp } from '../../formats/data-integrity/verify.ts'
import { jwtVcJson } from '../../formats/jwt-vc/verify.ts'
import type { ProvenHolder } from '../../formats/types.ts'
import { UNDEFINED_TERMS_CONTEXT, VC_V2_CONTEXT } from '../../shared/data-integrity.ts'
import {
  type DidKey,
  didKeyFromPublicKey,
  JWS_ALGS,
  type JwsAlg,
  resolveDidKey,
} from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { decodeJws, JwsError, verifyJws } from '../../shared/jws.ts'
import type { WalletProviderTrust } from '../../shared/oauth/client-attestation.ts'
import {
  KEY_ATTESTATION_HEADER,
  KeyAttestationError,
  type VerifiedKeyAttestation,
  verifyKeyAttestation,
} from '../../shared/oauth/key-attestation.ts'
import { PROOF_TYP } from '../../shared/wire.ts'
import { type CheckMetrics, checkPresentation } from '../credentials/pipeline.ts'
import { presentationExchange } from '../credentials/presentation-exchange.ts'
import type { StatusChecker } from '../credentials/status.ts'
import { OAuthError } from '../errors/oauth.ts'
import { checkCarriedJson } from '../util/json-limits.ts'

// Key proofs of the credential request (OpenID4VCI Appendix F): what the wallet proves, checked
// entirely here before anything is stored.

// JWK members that only a private key has: a wallet that sends them leaked its key.
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth']
const FUTURE_SKEW_SECONDS = 60
export const PRESENTATION_TYPE = ['VerifiablePresentation', 'ServiceCredentialPresentation']

/** A verified key proof: who the holder is, the nonce it used, and what it shared. */
export interface HolderProof {
  holder: ProvenHolder
  nonce: string
  /** The proof entry of the validator (section 2.5 shape, `creator` = holder key id). */
  proofEntry: Record<string, unknown>
  /** Shared credentials as the validator shows them (decoded, with their JWT in `proof`). */
  shared: Record<string, unknown>[]
  /**
   * The other keys the proof's key attestation vouches for (Appendix F.1, F.3: "SHOULD issue a Credential for
   * each cryptographic public key specified in the attested_keys"), in its order, `holder` left out.
   */
  attested?: DidKey[]
}

/** What a template asks of key attestations (its `keyAttestation`), with the wallet providers its tenant trusts. */
export interface KeyAttestationPolicy {
  required: boolean
  keyStorage?: readonly string[] | undefined
  userAuthentication?: readonly string[] | undefined
  trust: readonly WalletProviderTrust[]
}

export interface ProofContext {
  credentialIssuer: string
  now: number
  maxAgeSeconds: number
  /** Set when the template requires a presentation: a jwt proof is then refused. */
  presentationDefinition?: Record<string, unknown> | undefined
  trustedIssuers: (type: string) => readonly string[] | undefined
  /** The tenant's own issuer DIDs: whose status lists are read when no trust list applies. */
  ownIssuers: () => Promise<readonly string[]>
  status: StatusChecker
  metrics?: CheckMetrics | undefined
  /** The configuration binds by `jwk` (an SD-JWT VC's cnf) or `cose_key` (an mdoc's deviceKey): a proof may name its key by a bare jwk. */
  acceptJwk?: boolean
  /** The configuration's proof_signing_alg_values_supported (an mdoc's: ES256); default every JWS_ALGS. */
  algorithms?: readonly JwsAlg[]
  /**
   * Set when the template asks for key attestations (Appendix D): a key_attestation header is then checked
   * (and required when `required`). Without, the header is not evaluated: the metadata announced nothing
   * (Appendix D: the issuer "MUST communicate the need to evaluate key attestations through its metadata").
   */
  keyAttestation?: KeyAttestationPolicy | undefined
}

const invalid = (description: string) => new OAuthError('invalid_proof', description)

function holderOfJwk(jwk: unknown): DidKey {
  try {
    return didKeyFromPublicKey(createPublicKey({ key: jwk as NodeJwk, format: 'jwk' }))
  } catch (error) {
    throw invalid(
      `proof JWT header jwk is not a usable EdDSA, ES256 or ES256K public key: ${(error as Error).message}`,
    )
  }
}

function resolveKid(kid: unknown, field: string): DidKey {
  if (typeof kid !== 'string') throw invalid(`${field} must be a did:key key id`)
  if (!kid.includes('#')) throw invalid(`${field} must name a key (did:key:…#…), not a bare DID`)
  try {
    return resolveDidKey(kid)
  } catch (error) {
    throw invalid(`${field} "${kid}" cannot be resolved: ${(error as Error).message}`)
  }
}

/** The holder an attested JWK is: its did:key, if the configuration can bind to its key type. */
function holderOfAttested(
  jwk: Record<string, unknown>,
  publicKey: KeyObject,
  index: number,
  ctx: ProofContext,
) {
  let holder: DidKey
  try {
    holder = didKeyFromPublicKey(publicKey)
  } catch {
    throw invalid(
      `attested_keys[${index}] is not an EdDSA, ES256 or ES256K key: no credential can be bound to it (OpenID4VCI 1.0 Appendix D.1)`,
    )
  }
  const algorithms = ctx.algorithms ?? JWS_ALGS
  if (!algorithms.includes(holder.alg)) {
    throw invalid(
      `attested_keys[${index}] is a ${holder.alg} key; this credential configuration binds ${algorithms.join(', ')} keys only`,
    )
  }
  // The JWK's own kid (if any) is kept out: the did:key names the key the way the rest of the service does.
  return { holder, kid: typeof jwk.kid === 'string' ? jwk.kid : undefined }
}

/** A key attestation checked against the template's policy; its errors are `invalid_proof` naming the clause. */
async function checkedKeyAttestation(
  jwt: unknown,
  use: 'jwt' | 'attestation',
  policy: KeyAttestationPolicy,
  ctx: ProofContext,
): Promise<VerifiedKeyAttestation> {
  if (typeof jwt === 'string')
    checkCarriedJson(jwt, use === 'jwt' ? 'the key_attestation header' : 'proofs.attestation')
  try {
    return await verifyKeyAttestation(jwt, {
      trust: policy.trust,
      now: ctx.now,
      use,
      algorithms: ctx.algorithms ?? JWS_ALGS,
      ...(policy.keyStorage ? { keyStorage: policy.keyStorage } : {}),
      ...(policy.userAuthentication ? { userAuthentication: policy.userAuthentication } : {}),
      ...(use === 'attestation' ? { maxAgeSeconds: ctx.maxAgeSeconds } : {}),
    })
  } catch (error) {
    if (error instanceof KeyAttestationError) throw invalid(error.message)
    throw error
  }
}

/** What the validator's proof entry says of a key attestation (the relying party sees who vouched, and for what). */
const attestationSummary = (verified: VerifiedKeyAttestation) => ({
  provider: verified.provider,
  attestedKeys: verified.attestedKeys.length,
  ...(verified.keyStorage ? { key_storage: verified.keyStorage } : {}),
  ...(verified.userAuthentication ? { user_authentication: verified.userAuthentication } : {}),
})

/**
 * Appendix F.1: the `jwt` proof type. With the template's key attestation policy, its `key_attestation`
 * header (Appendix D) is checked: signed by a trusted wallet provider, the proof's key among its
 * `attested_keys` (D.1: "the JWT used as a proof is signed by a key contained in the attestation"), named by
 * `kid` (a did:key key id, or the `kid` of an attested JWK as in F.1's example) or by `jwk`; its `nonce`, if
 * any, the proof's (F.1: "the nonce claim in the key attestation MUST be set to a server-provided c_nonce").
 */
export async function verifyJwtProof(jwt: unknown, ctx: ProofContext): Promise<HolderProof> {
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
  // Its header and payload within the JSON limits (RFC 8259 §9) before any member is read: 400 invalid_request.
  checkCarriedJson(jwt, 'proof.jwt')
  if (header.typ !== PROOF_TYP)
    throw invalid(`proof JWT header typ must be "${PROOF_TYP}", got ${JSON.stringify(header.typ)}`)
  const algorithms = ctx.algorithms ?? JWS_ALGS
  if (typeof header.alg !== 'string' || !(algorithms as readonly string[]).includes(header.alg)) {
    throw invalid(
      `proof JWT alg ${JSON.stringify(header.alg)} is not allowed; use one of ${algorithms.join(', ')} (the credential configuration's proof_signing_alg_values_supported)`,
    )
  }
  const jwk = header.jwk
  if (isObject(jwk) && PRIVATE_JWK_MEMBERS.some((m) => m in jwk)) {
    throw invalid(
      'proof JWT header carries private key material in jwk; it is refused (and the key should be considered compromised)',
    )
  }
  for (const member of ['jwk', 'x5c'] as const) {
    if (header[member] !== undefined && (member === 'x5c' || !ctx.acceptJwk)) {
      throw invalid(`proof JWT must identify the key with kid (did:key), not ${member}`)
    }
  }
  // Appendix F.1: exactly one of kid, jwk, x5c names the key.
  if (jwk !== undefined && header.kid !== undefined) {
    throw invalid('proof JWT header must name its key with exactly one of kid and jwk, not both')
  }
  const policy = ctx.keyAttestation
  const carried = header[KEY_ATTESTATION_HEADER]
  if (policy?.required && carried === undefined) {
    throw invalid(
      "this credential configuration requires a key attestation (key_attestations_required): send it in the jwt proof's key_attestation header, or use the attestation proof type (OpenID4VCI 1.0 Appendix F.1, F.3)",
    )
  }
  // Not evaluated where the template asks for none (see ProofContext.keyAttestation).
  const attestation =
    policy && carried !== undefined ? await checkedKeyAttestation(carried, 'jwt', policy, ctx) : undefined
  const attested = attestation?.attestedKeys.map((key, i) => holderOfAttested(key.jwk, key.publicKey, i, ctx))
  // A bare jwk is the holder key itself; its did:key is the same key, named the way the rest of the
  // service (grants, webhooks, holder binding) names holders. A kid that is no DID names an attested key.
  const keyMember = jwk === undefined ? 'kid' : 'jwk'
  let holder: DidKey
  if (jwk !== undefined) holder = holderOfJwk(jwk)
  else if (attested && typeof header.kid === 'string' && !header.kid.startsWith('did:')) {
    const named = attested.filter((a) => a.kid === header.kid)
    if (named.length !== 1) {
      throw invalid(
        `proof JWT header kid ${JSON.stringify(header.kid)} names ${named.length === 0 ? 'no' : 'more than one'} key of the key attestation's attested_keys (OpenID4VCI 1.0 Appendix D.1)`,
      )
    }
    holder = (named[0] as { holder: DidKey }).holder
  } else holder = resolveKid(header.kid, 'proof JWT header kid')
  if (attested && !attested.some((a) => a.holder.did === holder.did)) {
    throw invalid(
      "the proof JWT's key is not among the key attestation's attested_keys: the proof must be signed by an attested key (OpenID4VCI 1.0 Appendix D.1)",
    )
  }
  let payload: Record<string, unknown>
  try {
    payload = verifyJws(jwt, holder.publicKey, { algorithms: JWS_ALGS }).payload
  } catch (error) {
    const reason = error instanceof JwsError ? error.reason : 'bad_signature'
    if (reason === 'bad_signature')
      throw invalid(`proof JWT signature does not verify with the key named in ${keyMember}`)
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
  if (attestation?.nonce !== undefined && attestation.nonce !== payload.nonce) {
    throw invalid(
      "the key attestation's nonce is not the proof JWT's: both must carry the c_nonce this request uses (OpenID4VCI 1.0 Appendix F.1)",
    )
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
      ...(attestation ? { keyAttestation: attestationSummary(attestation) } : {}),
    },
    shared: [],
    ...(attested ? { attested: attested.map((a) => a.holder).filter((key) => key.did !== holder.did) } : {}),
  }
}

/**
 * Appendix F.3: the `attestation` proof type, a key attestation itself (no proof of possession): signed by
 * a trusted wallet provider, its `nonce` a c_nonce of this issuer (used up by the caller), its `iat` within
 * the proof window (F.4). Every attested key is a holder (F.3: "SHOULD issue a Credential for each
 * cryptographic public key specified in the attested_keys"), the first one the process's.
 */
export async function verifyAttestationProof(jwt: unknown, ctx: ProofContext): Promise<HolderProof> {
  const policy = ctx.keyAttestation
  if (!policy) {
    throw invalid(
      'proof type "attestation" is not offered for this credential configuration (its proof_types_supported has none)',
    )
  }
  if (ctx.presentationDefinition) {
    throw invalid('this credential requires a di_vp proof carrying the credentials the offer asks for')
  }
  const attestation = await checkedKeyAttestation(jwt, 'attestation', policy, ctx)
  const holders = attestation.attestedKeys.map(
    (key, i) => holderOfAttested(key.jwk, key.publicKey, i, ctx).holder,
  )
  const seen = new Set<string>()
  for (const [i, key] of holders.entries()) {
    if (seen.has(key.did)) {
      throw invalid(
        `attested_keys[${i}] repeats an earlier key: each key is bound to one credential (OpenID4VCI 1.0 §8.3)`,
      )
    }
    seen.add(key.did)
  }
  const [holder, ...others] = holders as [DidKey, ...DidKey[]]
  return {
    holder,
    nonce: attestation.nonce as string,
    proofEntry: {
      type: 'KeyAttestation',
      created: new Date(attestation.iat * 1000).toISOString(),
      creator: holder.kid,
      proofPurpose: 'authentication',
      jwt,
      keyAttestation: attestationSummary(attestation),
    },
    shared: [],
    attested: others,
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

/**
 * The `di_vp` proof type (draft 13: `ldp_vp`): a Data Integrity presentation by the holder with
 * challenge = c_nonce and domain = credential issuer, carrying the credentials the offer asks for. The
 * presentation and its credentials go through the credential pipeline, as a verifier's would; the first
 * failed checks are named in the `invalid_proof` description.
 */
export async function verifyDiVpProof(vp: unknown, ctx: ProofContext): Promise<HolderProof> {
  if (!isObject(vp)) throw invalid('di_vp must be a Verifiable Presentation object')
  // The body's limits held for the object itself; these also bound the credential JWTs it envelops.
  checkCarriedJson(vp, 'the di_vp proof')
  const proof = Array.isArray(vp.proof) ? vp.proof[0] : vp.proof
  const challenge = isObject(proof) ? proof.challenge : undefined
  if (typeof challenge !== 'string' || challenge.length === 0) {
    throw new OAuthError(
      'invalid_nonce',
      'di_vp proof has no challenge; use a c_nonce from the nonce endpoint',
    )
  }
  const definition = ctx.presentationDefinition
  const result = await checkPresentation(vp, {
    // The challenge is not compared here: the caller consumes it as a c_nonce (invalid_nonce otherwise).
    session: {
      nonceRole: 'a c_nonce of this issuer',
      audience: ctx.credentialIssuer,
      audienceRole: 'the credential issuer',
      now: ctx.now,
      maxAgeSeconds: ctx.maxAgeSeconds,
    },
    presentationFormat: ldpVp,
    // eddsa-rdfc-2022 only (Ed25519 holders): the Data Integrity format checks its cryptosuite itself.
    presentationPolicy: { algorithms: ['EdDSA'] },
    credentialFormats: [jwtVcJson],
    credentialPolicy: { algorithms: JWS_ALGS },
    trustedIssuers: (credential) => ctx.trustedIssuers(credential.types.at(-1) ?? ''),
    ownIssuers: await ctx.ownIssuers(),
    // A requiredPresentation has no requireStatus setting: a credential without status is accepted.
    requireStatus: false,
    status: ctx.status,
    // The service evaluates the definition itself; a wallet-supplied submission is never trusted.
    ...(definition ? { query: { language: presentationExchange, query: definition } } : {}),
  })
  ctx.metrics?.checks('issuance', result.timings)
  const errors = result.outcomes.errors()
  if (errors.length > 0 || !result.holder || !result.proofEntry) {
    throw invalid(`di_vp rejected: ${errors.join(' | ')}`)
  }
  return {
    holder: result.holder,
    nonce: challenge,
    proofEntry: result.proofEntry,
    shared: result.credentials.map((c) => c.credential.sharedView),
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
