// Building what the wallet proves: the token request's form fields, the `jwt` proof of possession
// (OpenID4VCI Appendix F.1) and the `di_vp` proof (docs/issuance.md), each optionally with misbehaviours.
// Pure functions over a signer, so every defect is unit-tested without a server.

import { randomBytes } from 'node:crypto'
import { ProofOfPossessionBuilder } from '@sphereon/oid4vci-client'
import { OpenId4VCIVersion, type TxCode } from '@sphereon/oid4vci-common'
import type { DiSigner } from '../shared/data-integrity.ts'
import {
  base58btcDecode,
  base58btcEncode,
  didKeyFromPublicKey,
  generateKeyPair,
  type JwsAlg,
  resolveDidKey,
} from '../shared/did-key.ts'
import { PRE_AUTHORIZED_GRANT, PROOF_TYP } from '../shared/wire.ts'
import { WalletUsageError } from './errors.ts'
import { loadDataIntegrity } from './lazy.ts'
import {
  EXPIRED_IAT_SECONDS,
  JWT_ONLY_MISBEHAVIOURS,
  type Misbehaviour,
  WRONG_AUDIENCE,
} from './misbehaviour.ts'

// --- token request -------------------------------------------------------------------------------------------

export interface TokenRequestInput {
  preAuthorizedCode: string
  /** sent as `client_id` (oid4vci-client sends the holder DID) */
  clientId?: string
  /** the transaction code the user typed */
  txCode?: string
  /** the offer's `tx_code` object, when it announced one */
  txCodeSpec?: TxCode
  misbehave?: readonly Misbehaviour[]
}

/** A code of the announced shape that differs from `code` (or a random one when the right one is unknown). */
export function wrongTxCode(code: string | undefined, spec?: TxCode): string {
  if (code && code.length > 0) {
    const last = code.charAt(code.length - 1)
    let replacement: string
    if (/[0-9]/.test(last)) replacement = String((Number(last) + 1) % 10)
    else if (/[a-y]/i.test(last)) replacement = String.fromCharCode(last.charCodeAt(0) + 1)
    else replacement = last === '0' ? '1' : '0'
    return code.slice(0, -1) + replacement
  }
  const length = spec?.length && spec.length > 0 ? spec.length : 6
  const digits = Array.from(randomBytes(length), (b) => String(b % 10)).join('')
  return spec?.input_mode === 'text' ? `x${digits.slice(1)}` : digits
}

/**
 * The form fields of the pre-authorized code token request, as oid4vci-client 0.20.1 builds them
 * (`client_id`, `user_pin` and `tx_code` both carrying the code, `grant_type`, `pre-authorized_code`).
 */
export function buildTokenRequest(input: TokenRequestInput): Record<string, string> {
  const misbehave = input.misbehave ?? []
  const form: Record<string, string> = {}
  if (input.clientId) form.client_id = input.clientId
  let code = input.txCode
  if (misbehave.includes('wrong-tx-code')) code = wrongTxCode(input.txCode, input.txCodeSpec)
  if (misbehave.includes('missing-tx-code')) code = undefined
  if (code !== undefined) {
    form.user_pin = code
    form.tx_code = code
  }
  form.grant_type = PRE_AUTHORIZED_GRANT
  form['pre-authorized_code'] = input.preAuthorizedCode
  return form
}

// --- jwt proof -----------------------------------------------------------------------------------------------

export interface JwtSigner {
  /** the key id the proof names: the holder's did:key key id */
  kid: string
  alg: JwsAlg
  /** signs the JWS signing input; returns the raw JOSE signature (EdDSA 64 bytes; ES256/ES256K r||s) */
  sign(signingInput: string): Promise<Uint8Array>
}

export interface JwtProofInput {
  /** the credential issuer identifier */
  audience: string
  /** the c_nonce; undefined only for the careless wallet's nonce-less proof (WalletOptions.trustEverything) */
  nonce: string | undefined
  misbehave?: readonly Misbehaviour[]
  /** the key id 'foreign-kid' names; default: a freshly generated did:key of the signer's algorithm */
  foreignKid?: () => string
  /** the holder's private JWK; needed by 'jwk-with-private-key' only */
  privateJwk?: () => JsonWebKey | Promise<JsonWebKey>
  /** clock, in seconds; default now */
  now?: () => number
}

export function b64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
}

/** A new did:key key id of one algorithm, for 'foreign-kid'. */
export function freshKid(alg: JwsAlg): string {
  return didKeyFromPublicKey(generateKeyPair(alg).publicKey).kid
}

/** A random value shaped like a server nonce that no server issued, for 'wrong-nonce'. */
export function randomNonce(): string {
  return randomBytes(32).toString('base64url')
}

function flipLastBit(bytes: Uint8Array): Uint8Array {
  const copy = Uint8Array.from(bytes)
  const last = copy.length - 1
  copy[last] = (copy[last] as number) ^ 0x01
  return copy
}

/** How the proof's header names the holder key (OpenID4VCI 1.0 Appendix F.1: exactly one of kid, jwk, x5c). */
export type ProofKeyHeader = 'kid' | 'jwk'

export interface ProofMisbehaviourInput {
  misbehave: readonly Misbehaviour[]
  /** the private JWK 'jwk-with-private-key' adds, read beforehand */
  privateJwk?: JsonWebKey | undefined
  foreignKid?: () => string
  /** clock, in seconds, when injected */
  now?: (() => number) | undefined
}

/**
 * Applies the jwt proof misbehaviours to a laid-out header and payload and signs it through `signer`. Shared
 * by the draft-15 path (Sphereon lays out the JWT) and the 1.0 path (@openid4vc/openid4vci lays it out).
 */
export async function signProofJwt(
  signer: JwtSigner,
  jwt: { header: Record<string, unknown>; payload: Record<string, unknown> },
  input: ProofMisbehaviourInput,
): Promise<string> {
  const { misbehave } = input
  const header: Record<string, unknown> = { ...jwt.header }
  const payload: Record<string, unknown> = { ...jwt.payload }
  const nowSeconds = input.now ?? (() => Math.floor(Date.now() / 1000))
  if (misbehave.includes('wrong-typ')) header.typ = 'JWT'
  if (misbehave.includes('foreign-kid')) {
    // the proof names another key than the one that signs it (OpenID4VCI 1.0 Appendix F.4: signature by the
    // header key): a did:key URL in `kid`, or that key's public JWK in `jwk`
    const foreign = (input.foreignKid ?? (() => freshKid(signer.alg)))()
    if (header.jwk !== undefined && header.kid === undefined) header.jwk = publicJwkOfKid(foreign)
    else header.kid = foreign
  }
  if (input.privateJwk) header.jwk = input.privateJwk
  if (misbehave.includes('wrong-aud')) payload.aud = WRONG_AUDIENCE
  if (misbehave.includes('expired-iat')) payload.iat = nowSeconds() - EXPIRED_IAT_SECONDS
  if (misbehave.includes('alg-none')) {
    header.alg = 'none'
    return `${b64urlJson(header)}.${b64urlJson(payload)}.`
  }
  const signingInput = `${b64urlJson(header)}.${b64urlJson(payload)}`
  let signature = await signer.sign(signingInput)
  if (misbehave.includes('bad-signature')) signature = flipLastBit(signature)
  return `${signingInput}.${Buffer.from(signature).toString('base64url')}`
}

function publicJwkOfKid(kid: string): JsonWebKey {
  return { ...resolveDidKey(kid).publicJwk }
}

/**
 * The `jwt` proof: oid4vci-client's ProofOfPossessionBuilder lays out header (`typ`, `alg`, `kid`) and payload
 * (`aud`, `iat` = now − 60 s, `exp` = now + 10 min, `nonce`; no `iss` in the pre-authorized flow); the sign
 * callback applies the misbehaviours and signs through `signer` (the Veramo KMS in the wallet).
 */
export async function buildJwtProof(signer: JwtSigner, input: JwtProofInput): Promise<string> {
  const misbehave = input.misbehave ?? []
  const nonce = misbehave.includes('wrong-nonce') ? randomNonce() : input.nonce
  const nowSeconds = input.now ?? (() => Math.floor(Date.now() / 1000))
  const privateJwk = misbehave.includes('jwk-with-private-key')
    ? await (input.privateJwk ?? missingPrivateJwk)()
    : undefined

  const signCallback = async (jwt: { header: Record<string, unknown>; payload: Record<string, unknown> }) => {
    const payload = { ...jwt.payload }
    if (input.now) {
      // the library reads the wall clock; keep its offsets relative to the injected one
      payload.iat = nowSeconds() - 60
      payload.exp = nowSeconds() + 600
    }
    return signProofJwt(
      signer,
      { header: jwt.header, payload },
      {
        misbehave,
        privateJwk,
        now: input.now,
        ...(input.foreignKid && { foreignKid: input.foreignKid }),
      },
    )
  }

  const proof = await ProofOfPossessionBuilder.fromJwt({
    jwt: {
      header: { typ: PROOF_TYP, alg: signer.alg, kid: signer.kid },
      payload: { aud: input.audience, ...(nonce !== undefined && { nonce }) },
    },
    callbacks: { signCallback },
    version: OpenId4VCIVersion.VER_1_0_15,
  }).build()
  return proof.jwt
}

export function missingPrivateJwk(): never {
  throw new WalletUsageError("'jwk-with-private-key' needs the holder's private JWK")
}

// --- di_vp proof ---------------------------------------------------------------------------------------------

export interface DiVpProofInput {
  holder: string
  /** the shared credentials (compact JWTs), wrapped as EnvelopedVerifiableCredential */
  credentials: string[]
  /** the c_nonce */
  challenge: string
  /** the credential issuer identifier */
  domain: string
  misbehave?: readonly Misbehaviour[]
  foreignKid?: () => string
  now?: () => Date
}

/** Flips one bit of the signature inside a base58btc multibase `proofValue`. */
export function corruptProofValue(proofValue: string): string {
  const bytes = proofValue.startsWith('z') ? base58btcDecode(proofValue.slice(1)) : undefined
  if (!bytes || bytes.length === 0) throw new Error('proofValue is not base58btc multibase')
  return `z${base58btcEncode(flipLastBit(bytes))}`
}

/**
 * The `di_vp` proof of docs/issuance.md: a VC 2.0 presentation of the shared credentials, secured with
 * eddsa-rdfc-2022 by the holder (`challenge` = c_nonce, `domain` = credential issuer).
 */
export async function buildDiVpProof(
  signer: DiSigner,
  input: DiVpProofInput,
): Promise<{ proof_type: 'di_vp'; di_vp: Record<string, unknown> }> {
  const misbehave = input.misbehave ?? []
  const jwtOnly = misbehave.filter((m) => JWT_ONLY_MISBEHAVIOURS.includes(m))
  if (jwtOnly.length > 0) {
    throw new WalletUsageError(`misbehaviour ${jwtOnly.join(', ')} applies to a jwt proof only, not to di_vp`)
  }
  const { presentationTemplate, signPresentation } = await loadDataIntegrity()
  const now = input.now ?? (() => new Date())
  const created = misbehave.includes('expired-iat')
    ? new Date(now().getTime() - EXPIRED_IAT_SECONDS * 1000)
    : input.now
      ? now()
      : undefined
  const namedSigner = misbehave.includes('foreign-kid')
    ? { ...signer, id: (input.foreignKid ?? (() => freshKid('EdDSA')))() }
    : signer
  const vp = await signPresentation(presentationTemplate(input.holder, input.credentials), namedSigner, {
    challenge: misbehave.includes('wrong-nonce') ? randomNonce() : input.challenge,
    domain: misbehave.includes('wrong-aud') ? WRONG_AUDIENCE : input.domain,
    ...(created && { created }),
  })
  if (misbehave.includes('bad-signature')) {
    const proof = vp.proof as Record<string, unknown>
    vp.proof = { ...proof, proofValue: corruptProofValue(String(proof.proofValue)) }
  }
  return { proof_type: 'di_vp', di_vp: vp }
}
