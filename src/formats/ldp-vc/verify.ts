import { unwrapEnvelopedCredential } from '../../shared/data-integrity.ts'
import { isObject } from '../../shared/json.ts'
import { proofOptionsBinding } from '../binding.ts'
import { vcTypes } from '../jwt-vc/verify.ts'
import type {
  CredentialFormat,
  FormatPolicy,
  PresentationFormat,
  ReadCredential,
  ReadPresentation,
  StatusReference,
  ValidityBound,
} from '../types.ts'
import { type LdProofType, proofTypeOf, verifyLd } from './suites.ts'

// Linked Data credentials and presentations with an embedded proof (VC Data Model 1.1 §4.7 and
// VC Data Integrity 1.0): the interface's `ldp` / `ldp_vp` (section 2.8), OpenID4VC `ldp_vc` / `ldp_vp`
// (OpenID4VCI 1.0 Appendix A.1.2, OpenID4VP 1.0 Appendix B.1.3.2). The proof types are those 2.8 lists
// (Ed25519Signature2018, JsonWebSignature2020, EcdsaSecp256k1Signature2019, RsaSignature2018) and the
// Data Integrity cryptosuites eddsa-rdfc-2022 and ecdsa-rdfc-2019; suites.ts verifies them offline, in
// JSON-LD safe mode. A presentation is bound by its proof's `challenge` (the request nonce) and `domain`
// (the client_id); its holder is the controller of the proof's verificationMethod (`creator` in 2.5).

/** A JSON presentation or credential larger than this is refused before it is parsed (unauthenticated input). */
export const MAX_LDP_BYTES = 256 * 1024

const asArray = (value: unknown): unknown[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value]

/** The one proof object of a document, or why there is none. */
function oneProof(document: Record<string, unknown>, what: string): Record<string, unknown> {
  const proofs = asArray(document.proof)
  if (proofs.length !== 1 || !isObject(proofs[0]))
    throw new Error(`${what} must carry exactly one embedded proof object (it has ${proofs.length})`)
  return proofs[0]
}

/** The proof type, when the policy (the query's `format`) allows it. */
function allowedProofType(proof: Record<string, unknown>, policy: FormatPolicy, what: string): LdProofType {
  const type = proofTypeOf(proof)
  const shown =
    proof.type === 'DataIntegrityProof' ? `DataIntegrityProof ${String(proof.cryptosuite)}` : proof.type
  if (type === undefined)
    throw new Error(`${what} proof type ${JSON.stringify(shown)} is not one this verifier checks`)
  if (policy.proofTypes !== undefined && !policy.proofTypes.includes(type))
    throw new Error(
      `${what} proof type ${type} is not one the request allows (${policy.proofTypes.join(', ')})`,
    )
  return type
}

const isoBound = (kind: ValidityBound['kind'], value: unknown): ValidityBound[] =>
  typeof value === 'string' ? [{ kind, at: Date.parse(value), shown: value }] : []

/** VCDM 1.1 §4.6/§4.8 issuanceDate/expirationDate, VCDM 2.0 §4.9 validFrom/validUntil. */
const validityOf = (vc: Record<string, unknown>): ValidityBound[] => [
  ...isoBound('notBefore', vc.issuanceDate),
  ...isoBound('notBefore', vc.validFrom),
  ...isoBound('notAfter', vc.expirationDate),
  ...isoBound('notAfter', vc.validUntil),
]

/** The issuer's id: `issuer` is a URI or an object with an `id` (VCDM 1.1 §4.5). */
export const issuerIdOf = (vc: Record<string, unknown>): unknown =>
  isObject(vc.issuer) ? vc.issuer.id : vc.issuer

/** Parses a JSON text (a form-encoded vp_token) or takes an object as it is, bounded in size. */
export function jsonDocument(raw: unknown, what: string): Record<string, unknown> {
  if (isObject(raw)) return raw
  if (typeof raw !== 'string') throw new Error(`${what} is not a JSON object`)
  if (raw.length > MAX_LDP_BYTES) throw new Error(`${what} is larger than ${MAX_LDP_BYTES} bytes`)
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    throw new Error(`${what} is not valid JSON`)
  }
  if (!isObject(parsed)) throw new Error(`${what} is not a JSON object`)
  return parsed
}

function readLdCredential(raw: unknown, policy: FormatPolicy): ReadCredential {
  const vc = jsonDocument(raw, 'the credential')
  if (!vcTypes(vc).includes('VerifiableCredential'))
    throw new Error('type does not include VerifiableCredential')
  const proof = oneProof(vc, 'the credential')
  const proofType = allowedProofType(proof, policy, 'the credential')
  const subject = isObject(vc.credentialSubject) ? vc.credentialSubject : {}
  const claims: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(subject)) if (k !== 'id') claims[k] = v
  const status: StatusReference[] = asArray(vc.credentialStatus).map((entry) => ({
    kind: 'bitstring',
    entry,
  }))
  return {
    format: 'ldp_vc',
    alg: proofType,
    types: vcTypes(vc),
    async verifyProof() {
      const result = await verifyLd(vc, { purpose: 'assertionMethod' }, { allowed: [proofType] })
      if (!result.verified) return { ok: false, reason: result.errors.join('; ') }
      // The proof's verification method must be the issuer's own (VC Data Integrity §4.3: the controller).
      const issuer = issuerIdOf(vc)
      if (issuer !== result.key.did)
        return {
          ok: false,
          reason: `is signed by ${result.key.kid}, which is not a key of its issuer ${JSON.stringify(issuer)}`,
        }
      return { ok: true, issuer: result.key.did, issuerKey: result.key.publicKey }
    },
    holderBinding: { kind: 'subject', id: typeof subject.id === 'string' ? subject.id : undefined },
    validity: validityOf(vc),
    status,
    claims,
    // Section 2.4 shows a shared credential with its embedded proof: it is already in that shape.
    sharedView: vc,
    queryInput: vc,
  }
}

export const ldpVc: CredentialFormat = {
  id: 'ldp_vc',
  aliases: ['ldp'],
  // A JSON object that is not an envelope (enveloped JWTs are read by jwt_vc_json).
  accepts: (raw) => isObject(raw) && unwrapEnvelopedCredential(raw) === undefined,
  read: readLdCredential,
}

function readLdPresentation(token: unknown, policy: FormatPolicy): ReadPresentation {
  const vp = jsonDocument(token, 'vp_token')
  if (!asArray(vp.type).includes('VerifiablePresentation'))
    throw new Error('vp_token type does not include VerifiablePresentation')
  const proof = oneProof(vp, 'vp_token')
  const proofType = allowedProofType(proof, policy, 'vp_token')
  if (proof.proofPurpose !== 'authentication')
    throw new Error(
      `vp_token proofPurpose ${JSON.stringify(proof.proofPurpose)} is not authentication (VC Data Integrity §2.1)`,
    )
  const domains = asArray(proof.domain)
  const credentials: { index: number; raw: unknown }[] = []
  for (const [index, entry] of asArray(vp.verifiableCredential).entries()) {
    // VCDM 2.0 §4.13: an enveloped JWT credential is read as the JWT it carries.
    credentials.push({ index, raw: unwrapEnvelopedCredential(entry) ?? entry })
  }
  if (credentials.length === 0) throw new Error('vp_token.verifiableCredential is empty')
  return {
    format: 'ldp_vp',
    mechanisms: `ldp_vp (${proofType}) by a did:key holder`,
    verifyBinding: (session) => proofOptionsBinding(proof, session),
    credentials,
    unreadable: [],
    async verifyProof() {
      // Verified against its own challenge and domain (signed proof options); whether they are this
      // exchange's is the sessionBinding check.
      const result = await verifyLd(
        vp,
        {
          purpose: 'authentication',
          challenge: typeof proof.challenge === 'string' ? proof.challenge : '',
          domain: typeof domains[0] === 'string' ? domains[0] : '',
        },
        { allowed: [proofType] },
      )
      if (!result.verified) return { ok: false, failures: result.errors.map((e) => `the VP proof: ${e}`) }
      const { key } = result
      const holder = isObject(vp.holder) ? vp.holder.id : vp.holder
      if (holder !== undefined && holder !== key.did)
        return {
          ok: false,
          failures: [
            `vp.holder ${JSON.stringify(holder)} is not the controller of the proof's key ${key.kid}`,
          ],
        }
      // Section 2.4's validator shows the holder's proof with `creator` naming the key.
      return { ok: true, holder: key, proofEntry: { ...result.proof, creator: key.kid } }
    },
  }
}

export const ldpVp: PresentationFormat = {
  id: 'ldp_vp',
  aliases: [],
  read: readLdPresentation,
}
