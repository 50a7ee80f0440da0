import { createPublicKey, type KeyObject, randomBytes } from 'node:crypto'
import { isObject } from '../json.ts'
import { decodeJws, JwsError, jwkThumbprint, type SignatureAlg, signJws, verifyJws } from '../jws.ts'
import { verifyX5c, X509Error } from '../x509.ts'

// OAuth 2.0 Attestation-Based Client Authentication (draft-ietf-oauth-attestation-based-client-auth-07, the
// version HAIP 1.0 §4.3 cites), both sides: the wallet sends a Client Attestation JWT its wallet provider
// signed (§5.1) and a Client Attestation PoP JWT it signs with the attested instance key (§5.2), in the
// OAuth-Client-Attestation and OAuth-Client-Attestation-PoP headers (§6.1). The authorization server checks
// both (§6.2). Keeping used PoP jti values is the caller's (it has the store).

export const ATTESTATION_HEADER = 'oauth-client-attestation'
export const ATTESTATION_POP_HEADER = 'oauth-client-attestation-pop'
export const ATTESTATION_TYP = 'oauth-client-attestation+jwt'
export const ATTESTATION_POP_TYP = 'oauth-client-attestation-pop+jwt'
/** The token endpoint auth method this is (§13.4). */
export const ATTEST_JWT_CLIENT_AUTH = 'attest_jwt_client_auth'
export const ATTESTATION_ALGS: readonly SignatureAlg[] = ['ES256', 'EdDSA']

export class ClientAttestationError extends Error {
  override name = 'ClientAttestationError'
  readonly code = 'invalid_client'
}

/** A wallet provider whose attestations an authorization server accepts: its keys or its CA certificates. */
export interface WalletProviderTrust {
  name: string
  /** Public JWKs the provider signs attestations with (matched by `kid` when the attestation names one). */
  jwks?: Record<string, unknown>[]
  /** PEM certificates an attestation's x5c chain must end in. */
  certificates?: string[]
  /** When set, the attestation's `iss` must be this. */
  issuer?: string
}

export interface AttestationSigner {
  privateKey: KeyObject
  alg: SignatureAlg
  /** The provider's identifier (`iss`). */
  issuer: string
  kid?: string
  x5c?: string[]
}

/** §5.1: the provider's attestation of a client instance key. */
export function createClientAttestation(
  provider: AttestationSigner,
  claims: {
    clientId: string
    instanceJwk: Record<string, unknown>
    lifetimeSeconds?: number
    now?: number
    extra?: Record<string, unknown>
  },
): string {
  const iat = Math.floor((claims.now ?? Date.now()) / 1000)
  const header: { alg: SignatureAlg; [k: string]: unknown } = { typ: ATTESTATION_TYP, alg: provider.alg }
  if (provider.kid) header.kid = provider.kid
  if (provider.x5c) header.x5c = provider.x5c
  return signJws(
    header,
    {
      iss: provider.issuer,
      sub: claims.clientId,
      iat,
      exp: iat + (claims.lifetimeSeconds ?? 3600),
      cnf: { jwk: claims.instanceJwk },
      ...claims.extra,
    },
    provider.privateKey,
  )
}

/** §5.2: the instance's proof of possession for one request to `audience` (the authorization server's issuer). */
export function createClientAttestationPop(
  instance: { privateKey: KeyObject; alg: SignatureAlg },
  claims: { clientId: string; audience: string; challenge?: string; jti?: string; now?: number },
): string {
  const iat = Math.floor((claims.now ?? Date.now()) / 1000)
  return signJws(
    { typ: ATTESTATION_POP_TYP, alg: instance.alg },
    {
      iss: claims.clientId,
      aud: claims.audience,
      jti: claims.jti ?? randomBytes(16).toString('base64url'),
      iat,
      // Earlier drafts (and clients built on them) required exp in the PoP: sent, and accepted when present.
      exp: iat + 60,
      ...(claims.challenge ? { challenge: claims.challenge } : {}),
    },
    instance.privateKey,
  )
}

export interface AttestationExpectation {
  /** The authorization server's issuer identifier: the PoP's `aud` (§5.2). */
  audience: string
  trust: readonly WalletProviderTrust[]
  now: number
  /** How old (or how far ahead) the PoP's iat may be, in seconds. */
  maxPopAgeSeconds: number
  /** The request's client_id, when it sent one: it must be the attestation's sub (§6.2). */
  clientId?: string
}

export interface VerifiedClientAttestation {
  clientId: string
  /** The wallet provider that signed the attestation. */
  provider: string
  /** RFC 7638 thumbprint of the attested instance key (cnf.jwk): the same instance must come back. */
  instanceJkt: string
  popJti: string
  /** When the PoP stops being acceptable (for keeping its jti): iat + the window. */
  popExpiresAt: number
  challenge?: string
}

const fail = (message: string) => new ClientAttestationError(message)
const errorText = (error: unknown) =>
  error instanceof JwsError || error instanceof X509Error ? error.message : String(error)

const seconds = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined

function publicKeyOf(jwk: unknown, what: string): KeyObject {
  if (!isObject(jwk)) throw fail(`${what} is not a JWK`)
  if ('d' in jwk) throw fail(`${what} holds a private key`)
  try {
    return createPublicKey({ key: jwk as never, format: 'jwk' })
  } catch {
    throw fail(`${what} is not a usable public key`)
  }
}

/**
 * Which trusted wallet provider signed `jwt` (its decoded `header` given): each provider's JWKs (the one whose
 * `kid` the header names, when both name one) and, for a header `x5c`, its chain to the provider's anchors.
 * Shared by the client attestation (§6.2) and the key attestation (OpenID4VCI 1.0 Appendix D,
 * key-attestation.ts): both are the wallet provider's word, trusted alike (tenants[].walletProviders). The
 * problems met name the providers tried, for the caller's error.
 */
export async function walletProviderSignature(
  jwt: string,
  header: Record<string, unknown>,
  trust: readonly WalletProviderTrust[],
  now: number,
  algorithms: readonly SignatureAlg[] = ATTESTATION_ALGS,
): Promise<
  | { provider: WalletProviderTrust; payload: Record<string, unknown> }
  | { provider?: never; problems: string[] }
> {
  const problems: string[] = []
  for (const provider of trust) {
    const keys: KeyObject[] = []
    if (Array.isArray(header.x5c) && provider.certificates?.length) {
      try {
        const chain = await verifyX5c(header.x5c as string[], provider.certificates, new Date(now))
        keys.push(chain.publicKey)
      } catch (error) {
        problems.push(`${provider.name}: ${errorText(error)}`)
      }
    }
    for (const jwk of provider.jwks ?? []) {
      if (typeof header.kid === 'string' && typeof jwk.kid === 'string' && jwk.kid !== header.kid) continue
      keys.push(publicKeyOf(jwk, `a JWK of wallet provider ${provider.name}`))
    }
    for (const key of keys) {
      try {
        return { provider, payload: verifyJws(jwt, key, { algorithms }).payload }
      } catch (error) {
        problems.push(`${provider.name}: ${errorText(error)}`)
      }
    }
  }
  return { problems }
}

/** The attestation's signature checked against the trusted providers; answers which one signed it. */
async function attestationSigner(
  attestation: string,
  header: Record<string, unknown>,
  trust: readonly WalletProviderTrust[],
  now: number,
): Promise<{ provider: WalletProviderTrust; payload: Record<string, unknown> }> {
  const signed = await walletProviderSignature(attestation, header, trust, now)
  if (signed.provider) return signed
  const { problems } = signed
  throw fail(
    `the client attestation is not signed by a wallet provider this issuer trusts${problems.length ? ` (${problems.slice(0, 3).join('; ')})` : ''} (draft-ietf-oauth-attestation-based-client-auth-07 §6.2)`,
  )
}

/**
 * §6.2 on the two header values: the attestation (typ, a trusted provider's signature, sub, exp, cnf.jwk) and
 * its PoP (typ, signed by cnf.jwk, aud = this authorization server, jti, iat in the window, iss = sub when
 * present). The caller checks the PoP jti was not used before.
 */
export async function verifyClientAttestation(
  attestation: string | string[] | undefined,
  pop: string | string[] | undefined,
  expected: AttestationExpectation,
): Promise<VerifiedClientAttestation> {
  if (attestation === undefined && pop === undefined) {
    throw fail(
      'wallet attestation is required: send the OAuth-Client-Attestation and OAuth-Client-Attestation-PoP headers (HAIP 1.0 §4.3)',
    )
  }
  if (typeof attestation !== 'string' || typeof pop !== 'string') {
    throw fail('send exactly one OAuth-Client-Attestation and one OAuth-Client-Attestation-PoP header (§6.1)')
  }
  let header: Record<string, unknown>
  try {
    ;({ header } = decodeJws(attestation))
  } catch (error) {
    throw fail(`the client attestation is not a JWT: ${errorText(error)}`)
  }
  if (header.typ !== ATTESTATION_TYP)
    throw fail(`the client attestation's typ must be "${ATTESTATION_TYP}" (§5.1)`)
  const { provider, payload } = await attestationSigner(attestation, header, expected.trust, expected.now)
  const nowSeconds = expected.now / 1000
  if (provider.issuer !== undefined && payload.iss !== provider.issuer) {
    throw fail(
      `the client attestation's iss ${JSON.stringify(payload.iss)} is not wallet provider ${provider.name}'s ${provider.issuer}`,
    )
  }
  const clientId = payload.sub
  if (typeof clientId !== 'string' || clientId.length === 0)
    throw fail('the client attestation has no sub (the client_id, §5.1)')
  const exp = seconds(payload.exp)
  if (exp === undefined) throw fail('the client attestation has no exp (§5.1)')
  if (exp <= nowSeconds) throw fail(`the client attestation expired at ${new Date(exp * 1000).toISOString()}`)
  const nbf = seconds(payload.nbf)
  if (nbf !== undefined && nbf > nowSeconds + 60) throw fail('the client attestation is not valid yet (nbf)')
  const cnf = payload.cnf
  if (!isObject(cnf) || !isObject(cnf.jwk))
    throw fail('the client attestation has no cnf.jwk (the instance key, §5.1)')
  const instanceKey = publicKeyOf(cnf.jwk, 'the client attestation cnf.jwk')
  if (expected.clientId !== undefined && expected.clientId !== clientId) {
    throw fail(
      `client_id ${JSON.stringify(expected.clientId)} is not the attested client ${JSON.stringify(clientId)} (§6.2)`,
    )
  }

  let popPayload: Record<string, unknown>
  let popHeader: Record<string, unknown>
  try {
    ;({ header: popHeader, payload: popPayload } = verifyJws(pop, instanceKey, {
      algorithms: ATTESTATION_ALGS,
    }))
  } catch (error) {
    throw fail(
      `the client attestation PoP is not signed by the attested instance key (cnf.jwk): ${errorText(error)} (§5.2)`,
    )
  }
  if (popHeader.typ !== ATTESTATION_POP_TYP)
    throw fail(`the client attestation PoP's typ must be "${ATTESTATION_POP_TYP}" (§5.2)`)
  if (popPayload.iss !== undefined && popPayload.iss !== clientId) {
    throw fail(
      `the client attestation PoP's iss ${JSON.stringify(popPayload.iss)} is not the attested client ${clientId}`,
    )
  }
  const aud = popPayload.aud
  const audiences = Array.isArray(aud) ? aud : [aud]
  if (!audiences.includes(expected.audience)) {
    throw fail(
      `the client attestation PoP's aud ${JSON.stringify(aud)} is not this authorization server ${expected.audience} (§5.2)`,
    )
  }
  const jti = popPayload.jti
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256)
    throw fail('the client attestation PoP has no jti (§5.2)')
  const iat = seconds(popPayload.iat)
  const popExp = seconds(popPayload.exp)
  if (iat === undefined && popExp === undefined) throw fail('the client attestation PoP has no iat (§5.2)')
  if (iat !== undefined && Math.abs(nowSeconds - iat) > expected.maxPopAgeSeconds) {
    throw fail(
      `the client attestation PoP's iat is ${Math.round(nowSeconds - iat)} s from now; at most ${expected.maxPopAgeSeconds} s is accepted`,
    )
  }
  if (popExp !== undefined && popExp <= nowSeconds) throw fail('the client attestation PoP has expired (exp)')
  const challenge = popPayload.challenge ?? popPayload.nonce
  return {
    clientId,
    provider: provider.name,
    instanceJkt: jwkThumbprint(cnf.jwk),
    popJti: jti,
    popExpiresAt: ((iat ?? nowSeconds) + expected.maxPopAgeSeconds) * 1000,
    ...(typeof challenge === 'string' ? { challenge } : {}),
  }
}
