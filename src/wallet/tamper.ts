// Every misbehaviour of the wallet, and where it acts: one table (TAMPER) of tamper hooks. A hook sits at one
// point where the wallet builds a message (the proof JWT's header before signing, the token request's
// tx_code, the KB-JWT payload, the vp_token, …) and changes the value built there; the builder applies the
// point once and never asks which misbehaviours are on:
//
//   const header = tamper.apply('proof.header', laidOut, { alg, foreignKid })
//
// Hooks of one point apply in the table's order. A flag point (value `false`, asked with `acts`) is where a
// misbehaviour replaces a step instead of a value: redeem the code again, decline, post what a library would
// refuse to send. misbehaviour.ts keeps the names and the lists that say which flow each one belongs to
// (checked before anything is built); defects.ts the defects themselves.

import type { TxCode } from '@sphereon/oid4vci-common'
import type { DiSigner } from '../shared/data-integrity.ts'
import type { JwsAlg } from '../shared/did-key.ts'
import type { DcApiHandover, Oid4vpHandover } from '../shared/mdoc.ts'
import {
  corruptIssuerSignature,
  corruptProofValue,
  type DeviceSigner,
  type ForeignKey,
  flipLastBit,
  freshDeviceSigner,
  freshDidKey,
  freshEncryptionKey,
  freshKid,
  type KeySigner,
  keySigner,
  legacyFormat,
  lyingSubmission,
  type MdocElements,
  type PresentationSubmission,
  publicJwkOfKid,
  randomNonce,
  selfIssueCopy,
  tamperCredential,
  tamperDisclosure,
  tamperValue,
  withAccessTokenInQuery,
  withExtraElement,
  withoutPrefix,
  wrongTxCode,
} from './defects.ts'
import { WalletUsageError } from './errors.ts'
import {
  EXPIRED_IAT_SECONDS,
  FOREIGN_ORIGIN,
  FUTURE_IAT_SECONDS,
  type Misbehaviour,
  type PresentationMisbehaviour,
  UNKNOWN_ID_SUFFIX,
  WRONG_AUDIENCE,
  WRONG_RESPONSE_URI_SUFFIX,
} from './misbehaviour.ts'
import type { AnswerBinding } from './presentation-binding.ts'
import {
  type LdPresenter,
  selfIssueLdCredential,
  tamperLdCredential,
  withUndefinedTerm,
} from './presentation-ldp-defects.ts'
import type { ResponseEncryption } from './presentation-v1-request.ts'
import { type VpTokenV1, withWrongQueryId } from './presentation-v1-response.ts'

type Flag = [value: boolean, ctx: undefined]

/** The points where a message is built: [the value a hook changes, what else it may read]. */
interface Points {
  // --- OpenID4VCI: token request (proof.ts buildTokenRequest, issuance.ts, issuance-v1.ts) --------------------
  /** the transaction code sent as `tx_code` (and the drafts' `user_pin`); `acts`: one the caller need not know */
  'token.txCode': [value: string | undefined, ctx: { spec: TxCode | undefined }]
  /** the pre-authorized code is redeemed once more, and the second answer kept */
  'token.replay': Flag
  // --- OpenID4VCI: key proof (proof.ts, issuance.ts, issuance-v1.ts) ------------------------------------------
  /** the proof's nonce chosen before the token's c_nonce or the nonce endpoint is asked (undefined: not here) */
  'nonce.choose': [value: string | undefined, ctx: { lastConsumed: () => string | undefined }]
  /** the `nonce` of a jwt proof */
  'proof.nonce': [value: string | undefined, ctx: undefined]
  /** the holder's private JWK, read before the proof is built (undefined: not read) */
  'proof.privateJwk': [
    value: JsonWebKey | Promise<JsonWebKey> | undefined,
    ctx: { read: () => JsonWebKey | Promise<JsonWebKey> },
  ]
  /** the jwt proof's JOSE header, before signing */
  'proof.header': [
    value: Record<string, unknown>,
    ctx: {
      alg: JwsAlg
      foreignKid: (() => string) | undefined
      privateJwk: JsonWebKey | undefined
      /** a key attestation like the proof's own, of a freshly generated key (undefined: none can be made) */
      foreignKeyAttestation?: (() => string) | undefined
    },
  ]
  /** the jwt proof's payload, before signing */
  'proof.payload': [value: Record<string, unknown>, ctx: { nowSeconds: () => number }]
  /** what signs the jwt proof's signing input */
  'proof.sign': [value: (signingInput: string) => Promise<Uint8Array>, ctx: undefined]
  /** the di_vp proof's signer: its `id` is the proof's verificationMethod */
  'di_vp.signer': [value: DiSigner, ctx: { foreignKid: (() => string) | undefined }]
  /** the di_vp proof options (docs/issuance.md: challenge = c_nonce, domain = credential issuer) */
  'di_vp.options': [value: { challenge: string; domain: string; created?: Date }, ctx: { now: () => Date }]
  /** the signed di_vp presentation */
  'di_vp.signed': [value: Record<string, unknown>, ctx: undefined]
  // --- OpenID4VCI: credential request (issuance.ts, issuance-v1.ts) ------------------------------------------
  /** the 1.0 request goes out as plain HTTP: @openid4vc/openid4vci refuses to send it */
  'credential.plainHttp': Flag
  /**
   * the credential request body as posted (1.0 §8.2 by plain HTTP; draft 15 as the library laid it out):
   * the configuration requested, and the jwt proof it carries (undefined: a di_vp proof)
   */
  'credential.request': [
    value: Record<string, unknown>,
    ctx: {
      configuration: Record<string, unknown> | undefined
      configurationId: string
      proofJwt: string | undefined
    },
  ]
  /** where the credential request goes and the access token of its Authorization header (RFC 6750 §2.1) */
  'credential.auth': [value: { url: string; bearer: string | undefined }, ctx: undefined]
  /** the nonce remembered as consumed once the issuer answered (undefined: none) */
  'nonce.consumed': [value: string | undefined, ctx: undefined]
  // --- OpenID4VP: both profiles (presentation.ts, presentation-v1.ts) -----------------------------------------
  /** the wallet's own `exp` check of the request object is skipped */
  'request.skipExpiry': Flag
  /** the wallet answers access_denied instead of presenting */
  'response.decline': Flag
  /** the request's nonce is not remembered as answered (the answer does not carry it: §14.1) */
  'response.forgetNonce': Flag
  /** the credential JWTs a JWT VP presents */
  'vp.credentials': [value: string[], ctx: undefined]
  /** who presents a JWT VP: `iss`, `vp.holder` and the key that signs (presentation-vp.ts) */
  'vp.holder': [
    value: { holder: string; signer: KeySigner },
    ctx: { foreignKey: (() => ForeignKey) | undefined },
  ]
  /** the JWT VP's payload, before signing (presentation-vp.ts) */
  'vp.payload': [value: Record<string, unknown>, ctx: undefined]
  /** an ldp_vp's proof options: challenge = the request nonce, domain = the client_id (presentation-ldp.ts) */
  'ldp.options': [value: { challenge: string; domain: string }, ctx: undefined]
  /** who signs an ldp_vp: `holder` and the proof's verificationMethod */
  'ldp.holder': [value: LdPresenter, ctx: { fresh: () => LdPresenter }]
  /** the ldp_vc credential objects an ldp_vp presents, before it is signed */
  'ldp.credentials': [value: Record<string, unknown>[], ctx: undefined]
  /** what re-signs the first ldp_vc an ldp_vp presents before it is signed (undefined: nothing) */
  'ldp.reissue': [
    value: ((credential: Record<string, unknown>) => Promise<Record<string, unknown>>) | undefined,
    ctx: undefined,
  ]
  /** the signed ldp_vp */
  'ldp.signed': [value: Record<string, unknown>, ctx: undefined]
  // --- OpenID4VP draft 20, Presentation Exchange (presentation.ts) ---------------------------------------------
  /** the previous accepted VP answers instead of a new one */
  'pe.replay': Flag
  /** the selection picks a candidate whose status list says revoked */
  'pe.selectRevoked': Flag
  /** the presentation_submission as posted */
  'pe.submission': [value: PresentationSubmission, ctx: { credentialCount: number }]
  /** the form is posted without did-auth-siop, whose own check would refuse to assemble it */
  'pe.bypassLibrary': Flag
  /** the VP is not remembered for 'vp-replayed': it is not an honest one */
  'pe.forget': Flag
  // --- OpenID4VP 1.0, DCQL (presentation-v1.ts, presentation-sd-jwt.ts) ---------------------------------------
  /**
   * the response mode the answer is posted with (§8.2 direct_post, §8.3 direct_post.jwt), or returned with over
   * the Digital Credentials API (Appendix A.2 dc_api, dc_api.jwt)
   */
  'response.mode': [value: 'direct_post' | 'direct_post.jwt' | 'dc_api' | 'dc_api.jwt', ctx: undefined]
  /** the key (client_metadata.jwks) and algorithms a direct_post.jwt answer is encrypted to (§8.3) */
  'response.encryption': [value: ResponseEncryption, ctx: undefined]
  /** the vp_token object (§8.1), keyed by credential query id */
  vp_token: [value: VpTokenV1, ctx: undefined]
  /** the disclosures selected (@sd-jwt keys) and the one added beyond the query */
  'sd.disclose': [value: { selected: string[]; extra?: string }, ctx: { keys: readonly string[] }]
  /** the SD-JWT with its disclosures, before the KB-JWT; `tampered` says what a hook changed */
  'sd.presentation': [
    value: { sdJwt: string; tampered?: { claim: string; from: unknown; to: unknown } },
    ctx: undefined,
  ]
  /** the presentation ends without a KB-JWT */
  'kb.omit': Flag
  /** the text the KB-JWT's sd_hash is computed over */
  'kb.hashed': [value: string, ctx: undefined]
  /** the KB-JWT payload, before signing */
  'kb.payload': [value: Record<string, unknown>, ctx: { wrongAudience: string | undefined }]
  /** what signs the KB-JWT: the holder key the credential's cnf names */
  'kb.signer': [value: KeySigner, ctx: undefined]
  // --- OpenID4VP 1.0, an mdoc's DeviceResponse (presentation-mdoc.ts, Appendix B.2.6) --------------------------
  /** what the SessionTranscript's OpenID4VPHandover binds: client_id, nonce, jwkThumbprint, response_uri */
  'mdoc.handover': [value: Oid4vpHandover, ctx: undefined]
  /** over the DC API, what the OpenID4VPDCAPIHandover binds: origin, nonce, jwkThumbprint (B.2.6.2) */
  'mdoc.dcApiHandover': [value: DcApiHandover, ctx: undefined]
  /** the elements disclosed by namespace, and the one added beyond the query */
  'mdoc.disclose': [
    value: { disclose: Record<string, string[]>; extra?: { namespace: string; element: string } },
    ctx: { held: MdocElements },
  ]
  /** an IssuerSignedItem whose value is changed after selection (undefined: none) */
  'mdoc.tamper': [
    value: { namespace: string; element: string; value: unknown } | undefined,
    ctx: { disclosed: readonly { namespace: string; element: string; value: unknown }[] },
  ]
  /** what signs DeviceAuthentication: the holder key the MSO's deviceKey is */
  'mdoc.signer': [value: DeviceSigner, ctx: undefined]
  // --- OpenID4VP 1.0 over the Digital Credentials API (presentation-dc-api.ts, Appendix A) -------------------
  /**
   * what every presentation of the answer is bound to: `origin:<origin>` as audience, the request's nonce, the
   * OpenID4VPDCAPIHandover; ctx: the caller's origin and the request's client_id (a signed request's)
   */
  'dc_api.binding': [value: AnswerBinding, ctx: { origin: string; clientId: string | undefined }]
  /** the wallet's expected_origins check of a signed request (A.2) is skipped */
  'dc_api.ignoreExpectedOrigins': Flag
}

export type TamperPoint = keyof Points
type Value<P extends TamperPoint> = Points[P][0]
type Ctx<P extends TamperPoint> = Points[P][1]
type Hook<P extends TamperPoint> = (value: Value<P>, ctx: Ctx<P>) => Value<P>
type Hooks = { readonly [P in TamperPoint]?: Hook<P> }

const on = (): boolean => true

/**
 * Every misbehaviour, the points it acts at, and what it does there. Issuance first (MISBEHAVIOURS order),
 * then presentation (PRESENTATION_MISBEHAVIOURS order); where two act at one point, that order applies.
 */
export const TAMPER: { readonly [M in Misbehaviour | PresentationMisbehaviour]: Hooks } = {
  // ===== OpenID4VCI issuance =====================================================================================
  'wrong-nonce': {
    // OpenID4VCI 1.0 Appendix F.1/F.4: the proof carries the c_nonce the issuer gave (di_vp: as challenge)
    'proof.nonce': () => randomNonce(),
    'di_vp.options': (options) => ({ ...options, challenge: randomNonce() }),
    // a nonce the proof did not carry was not consumed: 'replayed-nonce' must not pick it
    'nonce.consumed': () => undefined,
  },
  'replayed-nonce': {
    // §7: a c_nonce is fresh; this one was already used in a successful credential request
    'nonce.choose': (_, { lastConsumed }) => {
      const consumed = lastConsumed()
      if (!consumed) {
        throw new WalletUsageError(
          "'replayed-nonce' needs a nonce this wallet already used in a successful credential request: receive a credential first",
        )
      }
      return consumed
    },
  },
  'bad-signature': {
    // Appendix F.4: the proof's signature verifies with the key its header names (jwt: last signature byte)
    'proof.sign': (sign) => async (signingInput) => flipLastBit(await sign(signingInput)),
    // di_vp: the last byte of proofValue
    'di_vp.signed': (vp) => {
      const proof = vp.proof as Record<string, unknown>
      return { ...vp, proof: { ...proof, proofValue: corruptProofValue(String(proof.proofValue)) } }
    },
  },
  'wrong-aud': {
    // Appendix F.1: aud is the credential issuer identifier (di_vp: domain)
    'proof.payload': (payload) => ({ ...payload, aud: WRONG_AUDIENCE }),
    'di_vp.options': (options) => ({ ...options, domain: WRONG_AUDIENCE }),
  },
  'expired-iat': {
    // Appendix F.4: iat within the issuer's window (di_vp: created); exp untouched
    'proof.payload': (payload, { nowSeconds }) => ({ ...payload, iat: nowSeconds() - EXPIRED_IAT_SECONDS }),
    'di_vp.options': (options, { now }) => ({
      ...options,
      created: new Date(now().getTime() - EXPIRED_IAT_SECONDS * 1000),
    }),
  },
  'future-iat': {
    // Appendix F.1/F.4: iat is when the proof was made, within the issuer's window; here an hour ahead (di_vp:
    // created); exp untouched
    'proof.payload': (payload, { nowSeconds }) => ({ ...payload, iat: nowSeconds() + FUTURE_IAT_SECONDS }),
    'di_vp.options': (options, { now }) => ({
      ...options,
      created: new Date(now().getTime() + FUTURE_IAT_SECONDS * 1000),
    }),
  },
  'replayed-code': {
    // §6.1 (as RFC 6749 §4.1.2 for codes): a pre-authorized code is redeemed once
    'token.replay': on,
  },
  'wrong-tx-code': {
    // §6.1: tx_code is the code the user was given (with no tx_code announced, one is sent anyway)
    'token.txCode': (code, { spec }) => wrongTxCode(code, spec),
  },
  'foreign-kid': {
    // Appendix F.4: the header names the key that signs. A did:key URL in `kid`, or that key's public JWK
    // in `jwk` (1.0 path with jwk binding); di_vp: the verificationMethod
    'proof.header': (header, { alg, foreignKid }) => {
      const foreign = (foreignKid ?? (() => freshKid(alg)))()
      return header.jwk !== undefined && header.kid === undefined
        ? { ...header, jwk: publicJwkOfKid(foreign) }
        : { ...header, kid: foreign }
    },
    'di_vp.signer': (signer, { foreignKid }) => ({
      ...signer,
      id: (foreignKid ?? (() => freshKid('EdDSA')))(),
    }),
  },
  'missing-tx-code': {
    // §6.1: tx_code is required when the offer announced one
    'token.txCode': () => undefined,
  },
  'jwk-with-private-key': {
    // Appendix F.1: a `jwk` header must not carry a private key; the holder's own one (with `d`) is read and sent
    'proof.privateJwk': (_, { read }) => read(),
    'proof.header': (header, { privateJwk }) => (privateJwk ? { ...header, jwk: privateJwk } : header),
  },
  'wrong-typ': {
    // Appendix F.1: typ is openid4vci-proof+jwt
    'proof.header': (header) => ({ ...header, typ: 'JWT' }),
  },
  'alg-none': {
    // Appendix F.1: alg must not be none; the proof goes unsigned (empty signature)
    'proof.header': (header) => ({ ...header, alg: 'none' }),
    'proof.sign': () => async () => new Uint8Array(0),
    'credential.plainHttp': on,
  },
  'key-attestation-foreign-key': {
    // Appendix D.1: "the JWT used as a proof is signed by a key contained in the attestation" (F.1: the
    // proof's key is one of attested_keys); here the attestation, by the wallet's provider and otherwise as
    // honest, attests a freshly generated key instead, and is sent even where none was asked for
    'proof.header': (header, { foreignKeyAttestation }) => {
      if (!foreignKeyAttestation) {
        throw new WalletUsageError(
          "'key-attestation-foreign-key' changes the key attestation of a jwt proof, which the wallet sends on the OpenID4VCI 1.0 path only",
        )
      }
      return { ...header, key_attestation: foreignKeyAttestation() }
    },
  },
  'legacy-proof': {
    // 1.0 §8.2 has only `proofs`: the drafts' singular `proof` instead
    'credential.request': ({ proofs: _, ...body }, { proofJwt }) => {
      if (proofJwt === undefined)
        throw new WalletUsageError("'legacy-proof' sends a jwt proof; this one is di_vp")
      return { ...body, proof: { proof_type: 'jwt', jwt: proofJwt } }
    },
    'credential.plainHttp': on,
  },
  'legacy-format-request': {
    // 1.0 §8.2 names the credential by credential_configuration_id: the draft-13/14 format parameters instead
    'credential.request': ({ credential_configuration_id: _, ...body }, { configuration }) => ({
      ...legacyFormat(configuration),
      ...body,
    }),
    'credential.plainHttp': on,
  },
  'missing-proof': {
    // 1.0 §8.2, §8.3.1.2: a configuration that binds to a key is requested with a proof (invalid_proof
    // otherwise); the proof is made, then neither `proof` nor `proofs` is sent
    'credential.request': ({ proof: _, proofs: __, ...body }) => body,
    // the nonce went nowhere: 'replayed-nonce' must not pick it
    'nonce.consumed': () => undefined,
    'credential.plainHttp': on,
  },
  'unknown-configuration': {
    // 1.0 §8.2, §8.3.1.2 unknown_credential_configuration: the id is one of the issuer's metadata; here the
    // requested one with a suffix no issuer has
    'credential.request': (body, { configurationId }) => ({
      ...body,
      credential_configuration_id: `${configurationId}${UNKNOWN_ID_SUFFIX}`,
    }),
    'credential.plainHttp': on,
  },
  'unknown-credential-identifier': {
    // 1.0 §8.2, §8.3.1.2 unknown_credential_identifier: credential_identifier is one the token response's
    // authorization_details granted; here one it did not, in place of credential_configuration_id
    'credential.request': (
      { credential_configuration_id: _, credential_identifier: __, ...body },
      { configurationId },
    ) => ({
      ...body,
      credential_identifier: `${configurationId}${UNKNOWN_ID_SUFFIX}`,
    }),
    'credential.plainHttp': on,
  },
  'token-in-query': {
    // RFC 6750 §2.3 (a URI query parameter, which 1.0 §8 and HAIP do not allow): `access_token` in the
    // credential endpoint's query, no Authorization header
    'credential.auth': ({ url, bearer }) => ({ url: withAccessTokenInQuery(url, bearer), bearer: undefined }),
    'credential.plainHttp': on,
  },

  // ===== OpenID4VP presentation ==================================================================================
  'vp-wrong-nonce': {
    // OpenID4VP 1.0 §B.1.3.1.5: the VP carries the request's nonce (ldp_vp, §B.1.3.2.5: as its challenge)
    'vp.payload': (payload) => ({ ...payload, nonce: randomNonce() }),
    'ldp.options': (options) => ({ ...options, challenge: randomNonce() }),
    'response.forgetNonce': on,
    'pe.forget': on,
  },
  'vp-wrong-aud': {
    // §B.1.3.1.5: the VP's aud is the client_id
    'vp.payload': (payload) => ({ ...payload, aud: WRONG_AUDIENCE }),
    'ldp.options': (options) => ({ ...options, domain: WRONG_AUDIENCE }),
    'pe.forget': on,
  },
  'vp-foreign-key': {
    // holder binding: a fresh did:key presents (and validly signs) credentials bound to the holder
    'vp.holder': ({ signer }, { foreignKey }) => {
      const foreign = (foreignKey ?? (() => freshDidKey(signer.alg)))()
      return { holder: foreign.did, signer: keySigner(foreign.privateKey, foreign.kid, foreign.alg) }
    },
    // ldp_vp: `holder` and the proof's verificationMethod are a fresh did:key of the holder's key type
    'ldp.holder': (_, { fresh }) => fresh(),
    'pe.bypassLibrary': on,
    'pe.forget': on,
  },
  'vp-replayed': {
    // 1.0 §14.1: a presentation answers one request; the last accepted VP is sent again
    'pe.replay': on,
    'response.forgetNonce': on,
    'pe.forget': on,
  },
  'tampered-credential': {
    // the credential's signature covers its claims: one claim of the first credential changed
    'vp.credentials': (credentials) => replaceFirst(credentials, (jwt) => tamperCredential(jwt).jwt),
    'ldp.credentials': (credentials) => replaceFirst(credentials, tamperLdCredential),
    'pe.bypassLibrary': on,
    'pe.forget': on,
  },
  'untrusted-issuer': {
    // the verifier trusts the issuer: the first credential re-issued by a fresh did:key
    'vp.credentials': (credentials) => replaceFirst(credentials, (jwt) => selfIssueCopy(jwt).jwt),
    // ldp_vp: the first ldp_vc re-signed by a fresh did:key of its signer's key type, with its proof type
    'ldp.reissue': () => selfIssueLdCredential,
    'pe.bypassLibrary': on,
    'pe.forget': on,
  },
  'revoked-credential': {
    // Bitstring Status List: a revoked credential is presented
    'pe.selectRevoked': on,
    'pe.forget': on,
  },
  'expired-session': {
    // RFC 9101 §6.3, RFC 7519 §4.1.4: nothing on the wire, the wallet answers an expired request anyway
    'request.skipExpiry': on,
  },
  'lying-submission': {
    // DIF Presentation Exchange v2: descriptor_map[0] points at another credential of the VP
    'pe.submission': (submission, { credentialCount }) => lyingSubmission(submission, credentialCount),
    'pe.bypassLibrary': on,
    'pe.forget': on,
  },
  'access-denied': {
    // 1.0 §8.5: the holder declines; an error answer and no VP
    'response.decline': on,
  },
  'ldp-undefined-term': {
    // JSON-LD safe mode (VC Data Integrity 1.0 §4.2): after signing, a property no context defines is added
    // (the first credential's subject, or the VP when that credential has an @vocab); without safe mode it
    // would be dropped before canonicalization and the proofs would still verify
    'ldp.signed': (vp) => withUndefinedTerm(vp),
    'pe.forget': on,
  },
  'sd-tampered-disclosure': {
    // RFC 9901 §7.1: every disclosure's digest is in the issuer-signed JWT; the first one's value changed
    'sd.presentation': ({ sdJwt }) => {
      const parts = sdJwt.split('~')
      const first = parts[1]
      if (parts.length < 3 || !first) {
        throw new WalletUsageError(
          "'sd-tampered-disclosure' needs a disclosed claim, but the credential query selects no selectively disclosable claim",
        )
      }
      const changed = tamperDisclosure(first)
      parts[1] = changed.disclosure
      return {
        sdJwt: parts.join('~'),
        tampered: { claim: changed.claim, from: changed.from, to: changed.to },
      }
    },
  },
  'sd-extra-disclosure': {
    // 1.0 §6.4.1: only the claims the query selects are disclosed; one more (whose enclosing disclosable
    // objects are disclosed)
    'sd.disclose': ({ selected }, { keys }) => {
      const extra = keys.find(
        (key) =>
          !selected.includes(key) && keys.every((k) => !key.startsWith(`${k}.`) || selected.includes(k)),
      )
      if (extra === undefined) {
        throw new WalletUsageError(
          `'sd-extra-disclosure': the credential query already selects every one of the credential's ${keys.length} disclosures; there is none to add`,
        )
      }
      return { selected: [...selected, extra], extra }
    },
  },
  'kb-wrong-sd-hash': {
    // RFC 9901 §4.3.1: sd_hash covers the SD-JWT up to and including its last `~`; here without it
    'kb.hashed': (sdJwt) => sdJwt.slice(0, -1),
  },
  'kb-wrong-nonce': {
    // 1.0 §B.3.6: the KB-JWT's nonce is the request's
    'kb.payload': (payload) => ({ ...payload, nonce: randomNonce() }),
    'response.forgetNonce': on,
  },
  'kb-wrong-aud': {
    // 1.0 §B.3.6, §14.10: aud is the full client_id; here without its prefix
    'kb.payload': (payload, { wrongAudience }) => ({
      ...payload,
      aud: wrongAudience ?? withoutPrefix(String(payload.aud)),
    }),
  },
  'kb-stale-iat': {
    // RFC 9901 §7.3: the KB-JWT's iat is recent; here an hour old
    'kb.payload': (payload) => ({ ...payload, iat: Number(payload.iat) - EXPIRED_IAT_SECONDS }),
  },
  'kb-missing': {
    // 1.0 §B.3.6: a credential bound to a key (cnf) is presented with a KB-JWT
    'kb.omit': on,
  },
  'plain-response': {
    // 1.0 §8.3: asked for direct_post.jwt (dc_api.jwt over the DC API), the answer is encrypted; here it goes
    // in the clear
    'response.mode': (mode) => {
      if (mode === 'dc_api.jwt') return 'dc_api'
      if (mode !== 'direct_post.jwt') {
        throw new WalletUsageError(
          `'plain-response' answers direct_post where direct_post.jwt was asked (dc_api where dc_api.jwt was); this request asks for ${mode}`,
        )
      }
      return 'direct_post'
    },
  },
  'vp-token-wrong-id': {
    // 1.0 §8.1: vp_token is keyed by the request's credential query ids
    vp_token: (vpToken) => withWrongQueryId(vpToken),
  },
  'kb-bad-signature': {
    // RFC 9901 §4.3, §7.3: the KB-JWT is signed by the key the credential's cnf names; here by a fresh key of
    // the same algorithm (header and payload unchanged)
    'kb.signer': (signer) => {
      const foreign = freshDidKey(signer.alg)
      return keySigner(foreign.privateKey, foreign.kid, foreign.alg)
    },
  },
  'kb-future-iat': {
    // RFC 9901 §7.3: the KB-JWT's iat is when it was made, recent; here an hour ahead
    'kb.payload': (payload) => ({ ...payload, iat: Number(payload.iat) + FUTURE_IAT_SECONDS }),
  },
  'sd-issuer-signature': {
    // RFC 9901 §7.1, SD-JWT VC §3.5: the issuer-signed JWT's signature verifies; here one bit of it flipped
    // (header and payload kept); the disclosures and the KB-JWT (sd_hash over what is presented) are correct
    'sd.presentation': (presented) => ({ ...presented, sdJwt: corruptIssuerSignature(presented.sdJwt) }),
  },
  'jwe-wrong-key': {
    // 1.0 §8.3: the response is encrypted to the verifier's client_metadata key; here to a fresh key of the
    // same type, the verifier key's kid kept in the JWE header (so it tries its key, which cannot decrypt)
    'response.mode': (mode) => {
      if (mode !== 'direct_post.jwt' && mode !== 'dc_api.jwt') {
        throw new WalletUsageError(
          `'jwe-wrong-key' encrypts a direct_post.jwt (or dc_api.jwt) answer to the wrong key; this request asks for ${mode}`,
        )
      }
      return mode
    },
    'response.encryption': (encryption) => ({ ...encryption, jwk: freshEncryptionKey(encryption.jwk) }),
  },
  'mdoc-wrong-nonce': {
    // 1.0 §B.2.6.1: the SessionTranscript's OpenID4VPHandover binds the request's nonce; here 32 random bytes
    'mdoc.handover': (handover) => ({ ...handover, nonce: randomNonce() }),
    // B.2.6.2: so does the OpenID4VPDCAPIHandover over the DC API
    'mdoc.dcApiHandover': (handover) => ({ ...handover, nonce: randomNonce() }),
    'response.forgetNonce': on,
  },
  'mdoc-wrong-client-id': {
    // 1.0 §B.2.6.1, §14.10: the handover binds the full client_id; here without its prefix
    'mdoc.handover': (handover) => ({ ...handover, clientId: withoutPrefix(handover.clientId) }),
    'mdoc.dcApiHandover': () => noSuchMember('mdoc-wrong-client-id', 'client_id'),
  },
  'mdoc-wrong-response-uri': {
    // 1.0 §B.2.6.1: the handover binds the response_uri the answer is posted to; here another URI of its origin
    'mdoc.handover': (handover) => ({
      ...handover,
      responseUri: `${handover.responseUri.replace(/\/$/, '')}${WRONG_RESPONSE_URI_SUFFIX}`,
    }),
    'mdoc.dcApiHandover': () => noSuchMember('mdoc-wrong-response-uri', 'response_uri'),
  },
  'mdoc-tampered-element': {
    // ISO 18013-5 §9.3.1: every IssuerSignedItem's digest is in the MSO; the first disclosed one's value
    // changed after issuance (digestID, random and identifier kept)
    'mdoc.tamper': (_, { disclosed }) => {
      const first = disclosed[0]
      if (!first) {
        throw new WalletUsageError(
          "'mdoc-tampered-element' needs a disclosed element, but the credential query selects none",
        )
      }
      return { namespace: first.namespace, element: first.element, value: tamperValue(first.value) }
    },
  },
  'mdoc-extra-element': {
    // 1.0 §6.4.1: only the elements the query selects are disclosed; one more (the first the mdoc has that is
    // not selected)
    'mdoc.disclose': ({ disclose }, { held }) => {
      const added = withExtraElement(disclose, held)
      if (!added) {
        throw new WalletUsageError(
          "'mdoc-extra-element': the credential query already selects every element of the mdoc; there is none to add",
        )
      }
      return added
    },
  },
  'mdoc-foreign-device-key': {
    // ISO 18013-5 §9.1.3.6: DeviceAuthentication is signed by the MSO's deviceKey; here by a fresh key of the
    // same algorithm (the SessionTranscript and the disclosed items correct)
    'mdoc.signer': (signer) => freshDeviceSigner(signer.alg),
  },
  'dc-api-foreign-origin': {
    // 1.0 Appendix A.4, B.2.6.2: every presentation is bound to the caller's origin; here to another one
    'dc_api.binding': (binding) => ({
      ...binding,
      audience: `origin:${FOREIGN_ORIGIN}`,
      mdoc: { kind: 'dc_api', origin: FOREIGN_ORIGIN },
    }),
  },
  'dc-api-client-id-audience': {
    // Appendix A.4: "the Client Identifier is not used as the audience for the response"; here it is (an
    // unsigned request has none: the origin without `origin:`), and an mdoc signs the redirect flow's
    // OpenID4VPHandover (B.2.6.1) instead of the OpenID4VPDCAPIHandover (B.2.6.2): the origin binding is missing
    'dc_api.binding': (binding, { origin, clientId }) => {
      const audience = clientId ?? origin
      return { ...binding, audience, mdoc: { kind: 'redirect', clientId: audience, responseUri: origin } }
    },
  },
  'dc-api-wrong-request': {
    // §14.1, Appendix A.4: the answer is made for this request; here for another one (another nonce)
    'dc_api.binding': (binding) => ({ ...binding, nonce: randomNonce() }),
    'response.forgetNonce': on,
  },
  'dc-api-ignore-expected-origins': {
    // Appendix A.2: "If the Origin does not match any of the entries in expected_origins, the Wallet MUST
    // return an error"; here it answers
    'dc_api.ignoreExpectedOrigins': on,
  },
}

/** A handover misbehaviour of the redirect flow asked of an answer over the DC API, whose handover lacks it. */
function noSuchMember(misbehaviour: string, member: string): never {
  throw new WalletUsageError(
    `'${misbehaviour}' changes the ${member} of the OpenID4VPHandover (OpenID4VP 1.0 B.2.6.1); over the Digital Credentials API the SessionTranscript is the OpenID4VPDCAPIHandover of origin, nonce and thumbprint (B.2.6.2), which has no ${member} (dc-api-foreign-origin changes its origin)`,
  )
}

function replaceFirst<T>(list: T[], change: (first: T) => T): T[] {
  const [first, ...rest] = list
  return first === undefined ? list : [change(first), ...rest]
}

type CtxArgs<P extends TamperPoint> = Ctx<P> extends undefined ? [] : [ctx: Ctx<P>]

/** The hooks of a set of misbehaviours: what each build point applies. */
export class Tamper {
  private readonly active: readonly Hooks[]

  constructor(misbehave: readonly (Misbehaviour | PresentationMisbehaviour)[] = []) {
    this.active = Object.entries(TAMPER)
      .filter(([name]) => misbehave.includes(name as Misbehaviour | PresentationMisbehaviour))
      .map(([, hooks]) => hooks)
  }

  /** The value built at `point`, changed by every active hook there (table order). */
  apply<P extends TamperPoint>(point: P, value: Value<P>, ...[ctx]: CtxArgs<P>): Value<P> {
    let result = value
    for (const hooks of this.active) {
      const hook = hooks[point] as Hook<P> | undefined
      if (hook) result = hook(result, ctx as Ctx<P>)
    }
    return result
  }

  /** Whether an active misbehaviour acts at `point` (a flag point: replace that step). */
  acts(point: TamperPoint): boolean {
    return this.active.some((hooks) => hooks[point] !== undefined)
  }
}

export function tamperOf(misbehave?: readonly (Misbehaviour | PresentationMisbehaviour)[]): Tamper {
  return new Tamper(misbehave)
}
