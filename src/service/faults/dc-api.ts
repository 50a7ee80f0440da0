import { AppError } from '../errors/problem.ts'
import type { DcApiRequests } from '../oid4vp/dc-api.ts'
import type { SessionRecord } from '../store/index.ts'
import { type FaultRegistry, isPresentationFault, type PresentationFault } from './index.ts'

// The wallet test plans' faulty verifier over the W3C Digital Credentials API (OpenID4VP 1.0 Appendix A): a
// decorator of the genuine DcApiRequests (oid4vp/dc-api.ts), wired by services.ts only in an app built with
// `faults`, as faults/verifier.ts wraps the request object signer. The session keeps what it expects (its
// origins, nonce and query), so a careless wallet's answer is still checked, and VERIFIED, when posted back.
//
// Two kinds. What a signed request says (expected_origins wrong or missing) is changed in the claims before
// they are signed, by the faulty request object signer the genuine builder signs with (dcApiClaimsFault,
// called from FaultyVerifier.signer); request-foreign-signature goes the same way. How a multi-signed request
// is signed (a corrupted signature) is changed after it is built (FaultyDcApiRequests).

/** The origin `dc-api-wrong-expected-origins` names instead of the caller's (the OIDF module's own). */
export const WRONG_EXPECTED_ORIGIN = 'https://wrong.example.com'

/** The DC API faults: which request type each needs. */
const NEEDS: Partial<Record<PresentationFault, readonly ('signed' | 'multisigned')[]>> = {
  'dc-api-wrong-expected-origins': ['signed', 'multisigned'],
  'dc-api-expected-origins-missing': ['signed'],
  'dc-api-multisigned-one-invalid-signature': ['multisigned'],
  'dc-api-multisigned-all-invalid': ['multisigned'],
}

/**
 * The claims of a DC API request object under a fault in what it says (only claims that carry
 * expected_origins are a DC API request's: a QR request object is left as it is).
 */
export function dcApiClaimsFault(
  fault: PresentationFault | undefined,
  claims: Record<string, unknown>,
): Record<string, unknown> {
  if (!('expected_origins' in claims)) return claims
  // OpenID4VP 1.0 Appendix A.2: the wallet compares the caller's origin with expected_origins.
  if (fault === 'dc-api-wrong-expected-origins')
    return { ...claims, expected_origins: [WRONG_EXPECTED_ORIGIN] }
  // Appendix A.2: expected_origins is REQUIRED in a signed request.
  if (fault === 'dc-api-expected-origins-missing') {
    const { expected_origins: _gone, ...rest } = claims
    return rest
  }
  return claims
}

/** A base64url signature with one byte changed: it no longer verifies, whatever the algorithm. */
function corrupted(signature: string): string {
  const bytes = Buffer.from(signature, 'base64url')
  const at = Math.min(10, bytes.length - 1)
  bytes[at] = (bytes[at] ?? 0) ^ 0xff
  return bytes.toString('base64url')
}

interface GeneralJwsLike {
  payload: string
  signatures: { protected: string; signature: string }[]
}

export class FaultyDcApiRequests implements DcApiRequests {
  constructor(
    private readonly registry: FaultRegistry,
    private readonly inner: DcApiRequests,
  ) {}

  private fault(tenantId: string): PresentationFault | undefined {
    const fault = this.registry.fault(tenantId)
    return fault && isPresentationFault(fault) ? fault : undefined
  }

  async build(session: SessionRecord, now: number) {
    const fault = this.fault(session.tenantId)
    const needs = fault && NEEDS[fault]
    const type = session.policy.dcApi?.request
    if (fault && needs && (type === undefined || !(needs as readonly string[]).includes(type))) {
      throw new AppError(
        'conflict',
        `fault ${fault} cannot apply to this verification template: it needs a ${needs.join(' or ')} Digital Credentials API request (dcql.dcApi.request), not ${type ?? 'none'}`,
      )
    }
    const entry = await this.inner.build(session, now)
    if (fault !== 'dc-api-multisigned-one-invalid-signature' && fault !== 'dc-api-multisigned-all-invalid')
      return entry
    // Appendix A.3.2: a wallet accepts a multi-signed request when a signature it verifies verifies (the OIDF
    // module oid4vp-1final-wallet-multisigned-one-invalid-signature corrupts the first), never when none does.
    const jws = entry.data.request as GeneralJwsLike
    const signatures = jws.signatures.map((s, i) =>
      fault === 'dc-api-multisigned-all-invalid' || i === 0 ? { ...s, signature: corrupted(s.signature) } : s,
    )
    return { ...entry, data: { ...entry.data, request: { ...jws, signatures } } }
  }
}
