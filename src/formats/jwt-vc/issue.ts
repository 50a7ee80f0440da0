import { signJws } from '../../shared/jws.ts'
import { JWT_TYP } from '../../shared/wire.ts'
import type { IssueInput, SignedCredential } from '../types.ts'

// Issuing a jwt_vc_json credential (VC Data Model 1.1 §6.3.1, OpenID4VCI 1.0 Appendix A.1.1): the credential
// object goes in `vc`, its dates and subject stand for nbf/exp and sub, the issuer's did:key names the key.

/** Signs the completed credential; returns the credential object with its JWT as proof, and the JWT. */
export function signJwtVc(input: Omit<IssueInput, 'vct' | 'disclosable'>): {
  credential: SignedCredential
  jwt: string
} {
  const { credential, key } = input
  if (key.alg === 'PS256') throw new Error('an RSA (PS256) key signs Linked Data proofs (ldp_vc) only')
  const jwt = signJws(
    { alg: key.alg, typ: JWT_TYP, kid: key.kid },
    {
      iss: key.did,
      sub: input.holderDid,
      jti: credential.id,
      nbf: input.notBefore,
      iat: Math.floor(input.now / 1000),
      ...(input.expires !== undefined ? { exp: input.expires } : {}),
      vc: credential,
    },
    key.privateKey,
  )
  return { credential: { ...credential, proof: { type: 'JwtProof2020', jwt } }, jwt }
}
