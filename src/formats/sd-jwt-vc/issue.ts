import { resolveDidKey } from '../../shared/did-key.ts'
import { issueSdJwtVc } from '../../shared/sd-jwt.ts'
import type { IssueInput, SignedCredential } from '../types.ts'

/**
 * Signs a credential object of section 2.3 as an SD-JWT VC (IETF SD-JWT VC; OpenID4VCI 1.0 Appendix A.3),
 * mapped onto its claims: credentialSubject's properties become claims (`id` becomes `sub`),
 * issuanceDate/validFrom `nbf`, expirationDate/validUntil `exp`, the status entry a Token Status List
 * reference, and the holder's key `cnf.jwk`. The process `data` keeps the credential object with the SD-JWT
 * VC as its proof (`type: SdJwtVc`).
 */
export async function signSdJwtVc(input: IssueInput): Promise<SignedCredential> {
  const { credential, key } = input
  const { alg } = key
  if (alg === 'PS256') throw new Error('an RSA (PS256) key signs Linked Data proofs (ldp_vc) only')
  const { id: _subject, ...claims } = credential.credentialSubject
  // A VC 2.0 object's validUntil bounds an SD-JWT VC too (a JWT VC keeps it inside `vc`).
  const until =
    input.expires ??
    (typeof credential.validUntil === 'string'
      ? Math.floor(Date.parse(credential.validUntil) / 1000)
      : undefined)
  // SD-JWT VC §3.5: with an x5c chain the issuer is the credential issuer URL its leaf certifies (SAN URI),
  // and the header carries the chain instead of a did:key kid (HAIP asks for x5c).
  const { x5c } = key
  const payload = {
    ...claims,
    iss: x5c ? x5c.issuer : key.did,
    sub: input.holderDid,
    ...(credential.id ? { jti: credential.id } : {}),
    iat: Math.floor(input.now / 1000),
    nbf: input.notBefore,
    ...(until !== undefined ? { exp: until } : {}),
    vct: input.vct,
    cnf: { jwk: resolveDidKey(input.holderDid).publicJwk },
    status: credential.credentialStatus,
  }
  const jwt = await issueSdJwtVc(payload, input.disclosable ?? Object.keys(claims), {
    alg,
    privateKey: key.privateKey,
    header: x5c ? { x5c: x5c.x5c } : { kid: key.kid },
  })
  return { ...credential, proof: { type: 'SdJwtVc', jwt } }
}
