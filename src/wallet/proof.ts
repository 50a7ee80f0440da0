// Building what the wallet proves: the token request's form fields, the `jwt` proof of possession
// (OpenID4VCI Appendix F.1) and the `di_vp` proof (docs/issuance.md), each optionally with misbehaviours
// (the tamper hooks of tamper.ts, applied where each part is built). Pure functions over a signer, so every
// defect is unit-tested without a server.

import { ProofOfPossessionBuilder } from '@sphereon/oid4vci-client'
import { OpenId4VCIVersion, type TxCode } from '@sphereon/oid4vci-common'
import type { DiSigner } from '../shared/data-integrity.ts'
import type { JwsAlg } from '../shared/did-key.ts'
import { PRE_AUTHORIZED_GRANT, PROOF_TYP } from '../shared/wire.ts'
import { WalletUsageError } from './errors.ts'
import { loadDataIntegrity } from './lazy.ts'
import { JWT_ONLY_MISBEHAVIOURS, type Misbehaviour } from './misbehaviour.ts'
import { tamperOf } from './tamper.ts'

export { corruptProofValue, freshKid, randomNonce, wrongTxCode } from './defects.ts'

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

/**
 * The form fields of the pre-authorized code token request, as oid4vci-client 0.20.1 builds them
 * (`client_id`, `user_pin` and `tx_code` both carrying the code, `grant_type`, `pre-authorized_code`).
 */
export function buildTokenRequest(input: TokenRequestInput): Record<string, string> {
  const form: Record<string, string> = {}
  if (input.clientId) form.client_id = input.clientId
  const code = tamperOf(input.misbehave).apply('token.txCode', input.txCode, { spec: input.txCodeSpec })
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

/** How the proof's header names the holder key (OpenID4VCI 1.0 Appendix F.1: exactly one of kid, jwk, x5c). */
export type ProofKeyHeader = 'kid' | 'jwk'

export interface ProofMisbehaviourInput {
  misbehave: readonly Misbehaviour[]
  /** the private JWK 'jwk-with-private-key' adds, read beforehand */
  privateJwk?: JsonWebKey | undefined
  foreignKid?: () => string
  /** clock, in seconds, when injected */
  now?: (() => number) | undefined
  /** 'key-attestation-foreign-key': a key attestation of another key (1.0 path: issuance-v1.ts) */
  foreignKeyAttestation?: (() => string) | undefined
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
  const tamper = tamperOf(input.misbehave)
  const nowSeconds = input.now ?? (() => Math.floor(Date.now() / 1000))
  const header = tamper.apply(
    'proof.header',
    { ...jwt.header },
    {
      alg: signer.alg,
      foreignKid: input.foreignKid,
      privateJwk: input.privateJwk,
      foreignKeyAttestation: input.foreignKeyAttestation,
    },
  )
  const payload = tamper.apply('proof.payload', { ...jwt.payload }, { nowSeconds })
  const sign = tamper.apply('proof.sign', (signingInput: string) => signer.sign(signingInput))
  const signingInput = `${b64urlJson(header)}.${b64urlJson(payload)}`
  const signature = await sign(signingInput)
  return `${signingInput}.${Buffer.from(signature).toString('base64url')}`
}

/**
 * The `jwt` proof: oid4vci-client's ProofOfPossessionBuilder lays out header (`typ`, `alg`, `kid`) and payload
 * (`aud`, `iat` = now − 60 s, `exp` = now + 10 min, `nonce`; no `iss` in the pre-authorized flow); the sign
 * callback applies the misbehaviours and signs through `signer` (the Veramo KMS in the wallet).
 */
export async function buildJwtProof(signer: JwtSigner, input: JwtProofInput): Promise<string> {
  const misbehave = input.misbehave ?? []
  const tamper = tamperOf(misbehave)
  const nonce = tamper.apply('proof.nonce', input.nonce)
  const nowSeconds = input.now ?? (() => Math.floor(Date.now() / 1000))
  const privateJwk = await tamper.apply('proof.privateJwk', undefined, {
    read: input.privateJwk ?? missingPrivateJwk,
  })

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
  const tamper = tamperOf(misbehave)
  const now = input.now ?? (() => new Date())
  const namedSigner = tamper.apply('di_vp.signer', signer, { foreignKid: input.foreignKid })
  const options = tamper.apply(
    'di_vp.options',
    { challenge: input.challenge, domain: input.domain, ...(input.now && { created: now() }) },
    { now },
  )
  const vp = await signPresentation(
    presentationTemplate(input.holder, input.credentials),
    namedSigner,
    options,
  )
  return { proof_type: 'di_vp', di_vp: tamper.apply('di_vp.signed', vp) }
}
