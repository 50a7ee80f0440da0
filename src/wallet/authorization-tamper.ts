// Where each misbehaviour of the authorization code flow acts: one table of hooks, as tamper.ts has for the
// pre-authorized flow and presentation. A hook sits at one point where issuance-authorization.ts builds a
// message (the token request's code_verifier, a DPoP proof's claims, the attestation's signer, …) and changes
// the value built there; a flag point replaces a step (redeem the code again). Each misbehaviour changes one
// thing (AUTHORIZATION_MISBEHAVIOUR_HELP in misbehaviour.ts says what).

import { generateKeyPairSync } from 'node:crypto'
import { jwkThumbprint } from '../shared/jws.ts'
import type { AttestationSigner } from '../shared/oauth/client-attestation.ts'
import { newPkce } from '../shared/oauth/pkce.ts'
import type { DpopClaimsChange } from './access-authorization.ts'
import { type AuthorizationMisbehaviour, WRONG_AUDIENCE, WRONG_URI_SUFFIX } from './misbehaviour.ts'

/** The iss of the attestation 'attestation-untrusted-provider' signs: a provider nobody configured. */
export const UNTRUSTED_PROVIDER_ISSUER = 'https://untrusted-wallet-provider.vc-harness.invalid'

type Flag = [value: boolean, ctx: undefined]

interface Points {
  /** the code_verifier of the token request (RFC 7636 §4.5) */
  'token.codeVerifier': [value: string, ctx: undefined]
  /** the redirect_uri of the token request (RFC 6749 §4.1.3) */
  'token.redirectUri': [value: string, ctx: undefined]
  /** the code is redeemed once more after a successful token request, and the second answer kept */
  'token.replay': Flag
  /** the claims of the token request's DPoP proof (RFC 9449 §4.2) */
  'token.dpop': [value: DpopClaimsChange | undefined, ctx: undefined]
  /** the Authorization scheme of the credential request (RFC 9449 §7.1) */
  'credential.scheme': [value: 'DPoP' | 'Bearer', ctx: undefined]
  /** who signs the wallet attestation (draft-ietf-oauth-attestation-based-client-auth-07 §5.1) */
  'attestation.provider': [value: AttestationSigner, ctx: undefined]
  /** the aud of every attestation PoP (§5.2) */
  'attestation.popAudience': [value: string, ctx: undefined]
}

export type AuthorizationTamperPoint = keyof Points
type Value<P extends AuthorizationTamperPoint> = Points[P][0]
type Hook<P extends AuthorizationTamperPoint> = (value: Value<P>) => Value<P>
type Hooks = { readonly [P in AuthorizationTamperPoint]?: Hook<P> }

const on = (): boolean => true

/** A wallet provider no authorization server trusts: a fresh P-256 key, its thumbprint as kid, its own iss. */
export function untrustedProvider(): AttestationSigner {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return {
    privateKey,
    alg: 'ES256',
    issuer: UNTRUSTED_PROVIDER_ISSUER,
    kid: jwkThumbprint(publicKey.export({ format: 'jwk' }) as Record<string, unknown>),
  }
}

/** Every authorization code flow misbehaviour and what it does where. */
export const AUTHORIZATION_TAMPER: { readonly [M in AuthorizationMisbehaviour]: Hooks } = {
  'pkce-verifier-mismatch': {
    // RFC 7636 §4.6: the verifier's S256 must be the challenge of the authorization request; a fresh one is not
    'token.codeVerifier': () => newPkce().verifier,
  },
  'code-replay': {
    // RFC 6749 §4.1.2: the client MUST NOT use the authorization code more than once
    'token.replay': on,
  },
  'dpop-wrong-htu': {
    // RFC 9449 §4.3 step 9: htu is the request's URI; here another path on the same origin
    'token.dpop': () => (claims) => ({
      ...claims,
      htu: `${claims.htu.replace(/\/$/, '')}${WRONG_URI_SUFFIX}`,
    }),
  },
  'dpop-wrong-htm': {
    // RFC 9449 §4.3 step 8: htm is the request's method; the token request is a POST
    'token.dpop': () => (claims) => ({ ...claims, htm: 'GET' }),
  },
  'dpop-replayed-jti': {
    // RFC 9449 §11.1: a jti is used once; here the previous proof's (the PAR request's, same server)
    'token.dpop':
      () =>
      (claims, { previousJti }) =>
        previousJti ? { ...claims, jti: previousJti } : claims,
  },
  'dpop-token-as-bearer': {
    // RFC 9449 §7.1, §7.2: a DPoP-bound token goes with the DPoP scheme; presented as Bearer it must be refused
    'credential.scheme': () => 'Bearer',
  },
  'attestation-untrusted-provider': {
    // attestation-based-client-auth-07 §6.2: the attestation is signed by a provider the server trusts
    'attestation.provider': () => untrustedProvider(),
  },
  'attestation-pop-wrong-aud': {
    // attestation-based-client-auth-07 §5.2: the PoP's aud is the authorization server's issuer identifier
    'attestation.popAudience': () => WRONG_AUDIENCE,
  },
  'authorization-wrong-redirect-uri': {
    // RFC 6749 §4.1.3: redirect_uri identical to the authorization request's
    'token.redirectUri': (uri) => `${uri.replace(/\/$/, '')}${WRONG_URI_SUFFIX}`,
  },
}

/** The hooks of a set of authorization code flow misbehaviours. */
export class AuthorizationTamper {
  private readonly active: readonly Hooks[]

  constructor(misbehave: readonly AuthorizationMisbehaviour[] = []) {
    this.active = Object.entries(AUTHORIZATION_TAMPER)
      .filter(([name]) => misbehave.includes(name as AuthorizationMisbehaviour))
      .map(([, hooks]) => hooks)
  }

  /** The value built at `point`, changed by every active hook there (table order). */
  apply<P extends AuthorizationTamperPoint>(point: P, value: Value<P>): Value<P> {
    let result = value
    for (const hooks of this.active) {
      const hook = hooks[point] as Hook<P> | undefined
      if (hook) result = hook(result)
    }
    return result
  }

  acts(point: AuthorizationTamperPoint): boolean {
    return this.active.some((hooks) => hooks[point] !== undefined)
  }

  /** The token request's DPoP proof: every active claims change, in table order. */
  dpopChange(): DpopClaimsChange | undefined {
    const changes = this.active.flatMap((hooks) => {
      const hook = hooks['token.dpop']
      const change = hook ? hook(undefined) : undefined
      return change ? [change] : []
    })
    if (changes.length === 0) return undefined
    return (claims, ctx) => changes.reduce((c, change) => change(c, ctx), claims)
  }
}
