// How a presentation is bound to its exchange. Each format owns the check (ReadPresentation.verifyBinding):
// JWT-shaped bindings (a VP's nonce/aud/iat/exp, a KB-JWT's, a Data Integrity proof's challenge/domain/
// created/expires) share `bindingFailures`; an mdoc checks its SessionTranscript against the same
// expectation (OpenID4VP 1.0 Appendix B.2.6.1 names client_id, nonce, the encryption key's JWK thumbprint
// and response_uri), which is why the expectation carries all four.

/** A presentation made up to this long in the future is accepted (clocks differ). */
export const FUTURE_SKEW_SECONDS = 60

/** A JWT-shaped binding to the exchange: OpenID4VP nonce / client_id, OpenID4VCI c_nonce / issuer (binding.ts). */
export interface PresentationBinding {
  /** JWT `nonce`, Data Integrity `challenge`, KB-JWT `nonce`. */
  nonce: unknown
  /** JWT `aud`, Data Integrity `domain`, KB-JWT `aud`. */
  audiences: readonly unknown[]
  /** Seconds since the epoch (`iat`, Data Integrity `created`); undefined when absent. */
  issuedAt: unknown
  /** Seconds since the epoch (`exp`, Data Integrity `expires`); undefined when absent. */
  expiresAt: unknown
  /** The audience as the presentation wrote it (for messages). */
  audienceShown: unknown
  /** What the presentation calls these, for messages: `VP nonce`, `VP aud`, `VP iat`, `exp`; `challenge`, … */
  names: { presentation: string; nonce: string; audience: string; issuedAt: string; expiresAt: string }
}

/** What binds the presentation to this exchange. */
export interface SessionExpectation {
  /** The nonce it must carry; undefined when the caller checks it itself (OpenID4VCI consumes the c_nonce). */
  nonce?: string
  /** OpenID4VP: the verifier's client_id; OpenID4VCI: the credential issuer identifier. */
  audience: string
  /** For messages: "the nonce of this session's request", "this verifier's client_id". */
  nonceRole: string
  audienceRole: string
  now: number
  /** When set, the presentation must say when it was made, at most this long ago (OpenID4VCI proof age). */
  maxAgeSeconds?: number
  /** OpenID4VP: where the response was posted (an mdoc's handover binds it). */
  responseUri?: string
  /** OpenID4VP 1.0 §8.3: the JWK thumbprint of the key the response was encrypted to, when it was. */
  encryptionKeyThumbprint?: string
  /**
   * OpenID4VP 1.0 Appendix A: the request went over the Digital Credentials API from this origin. `audience`
   * is then `origin:<origin>`, and an mdoc's SessionTranscript is the OpenID4VPDCAPIHandover (B.2.6.2).
   */
  origin?: string
}

/** Seconds since the epoch of a proof option's ISO date (NaN when it is not a string), undefined when absent. */
function secondsOf(value: unknown): number | undefined {
  if (value === undefined) return undefined
  return typeof value === 'string' ? Math.floor(Date.parse(value) / 1000) : Number.NaN
}

/**
 * Failures of a Linked Data proof's binding (VC Data Integrity §2.1 proof options: `challenge` = the nonce,
 * `domain` = the audience, `created`, `expires`) against the expectation: ldp_vp and the di_vp key proof.
 */
export function proofOptionsBinding(proof: Record<string, unknown>, expect: SessionExpectation): string[] {
  return bindingFailures(
    {
      nonce: proof.challenge,
      audiences: proof.domain === undefined ? [] : [proof.domain].flat(),
      issuedAt: secondsOf(proof.created),
      expiresAt: secondsOf(proof.expires),
      audienceShown: proof.domain,
      names: {
        presentation: 'presentation',
        nonce: 'proof challenge',
        audience: 'proof domain',
        issuedAt: 'proof created',
        expiresAt: 'proof expires',
      },
    },
    expect,
  )
}

/** Failures of a JWT-shaped binding against the expectation; empty when it is this exchange's, now. */
export function bindingFailures(binding: PresentationBinding, expect: SessionExpectation): string[] {
  const failures: string[] = []
  const { names } = binding
  if (expect.nonce !== undefined && binding.nonce !== expect.nonce) {
    failures.push(`${names.nonce} ${JSON.stringify(binding.nonce)} is not ${expect.nonceRole}`)
  }
  if (!binding.audiences.includes(expect.audience)) {
    failures.push(
      `${names.audience} ${JSON.stringify(binding.audienceShown)} is not ${expect.audienceRole} ${expect.audience}`,
    )
  }
  const now = Math.floor(expect.now / 1000)
  const { issuedAt, expiresAt } = binding
  if (issuedAt === undefined) {
    if (expect.maxAgeSeconds !== undefined) failures.push(`${names.issuedAt} is missing`)
  } else if (typeof issuedAt !== 'number' || !Number.isFinite(issuedAt)) {
    failures.push(`${names.issuedAt} is not a number`)
  } else if (issuedAt > now + FUTURE_SKEW_SECONDS) {
    failures.push(`${names.issuedAt} is in the future`)
  } else if (expect.maxAgeSeconds !== undefined && issuedAt < now - expect.maxAgeSeconds) {
    failures.push(
      `${names.issuedAt} is ${now - issuedAt} s old; at most ${expect.maxAgeSeconds} s is accepted`,
    )
  }
  if (expiresAt !== undefined && (typeof expiresAt !== 'number' || expiresAt <= now)) {
    failures.push(`the ${names.presentation} has expired (${names.expiresAt})`)
  }
  return failures
}
