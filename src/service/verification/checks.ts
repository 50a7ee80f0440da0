import { isJwsAlg } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { jwtVcJson, jwtVpJson } from '../credentials/jwt-vc.ts'
import { CHECKS, type CheckName } from '../credentials/outcomes.ts'
import { type CheckTimings, checkPresentation } from '../credentials/pipeline.ts'
import { presentationExchange } from '../credentials/presentation-exchange.ts'
import type { StatusChecker } from '../credentials/status.ts'
import type { Validations } from '../store/index.ts'

// What a careful verifier checks in an OpenID4VP response: the credential pipeline's named checks
// (credentials/pipeline.ts), each reported on its own so a relying party (and a QA engineer) learns
// exactly which requirement broke. docs/verification.md has the list; the names are on the wire.

export { CHECKS, type CheckName }

export interface ResponseContext {
  definition: Record<string, unknown>
  nonce: string
  /** The verifier's client_id (its DID): the VP's `aud`. */
  clientId: string
  now: number
  trustedIssuers: readonly string[]
  requireStatus: boolean
  status: StatusChecker
}

export interface Verdict {
  validations: Validations
  /** The holder DID, when the presentation proof verified. */
  holder: string | null
  /** The shared credentials as section 2.4 shows them (decoded, JWT in `proof`). */
  credentials: Record<string, unknown>[]
  /** Claims of every credential subject, `id` left out (the webhook `payload`). */
  claims: Record<string, unknown>
  /** Where the time went, for the benchmark. */
  timings: CheckTimings
}

/** The algorithms the definition's `format` allows for `format` (PE v2 §5: `format.jwt_vp.alg`). */
function algsOf(definition: Record<string, unknown>, format: string) {
  const formats = isObject(definition.format) ? definition.format : {}
  const entry = formats[format]
  return isObject(entry) && Array.isArray(entry.alg) ? entry.alg.filter(isJwsAlg) : []
}

/** Verifies a direct_post response (jwt_vp_json carrying jwt_vc_json, queried with Presentation Exchange). */
export async function verifyResponse(
  vpToken: unknown,
  submission: unknown,
  ctx: ResponseContext,
): Promise<Verdict> {
  const result = await checkPresentation(vpToken, {
    session: {
      nonce: ctx.nonce,
      nonceRole: "the nonce of this session's request",
      audience: ctx.clientId,
      audienceRole: "this verifier's client_id",
      now: ctx.now,
    },
    presentationFormat: jwtVpJson,
    presentationPolicy: { algorithms: algsOf(ctx.definition, 'jwt_vp') },
    credentialFormats: [jwtVcJson],
    credentialPolicy: { algorithms: algsOf(ctx.definition, 'jwt_vc') },
    trustedIssuers: () => ctx.trustedIssuers,
    requireStatus: ctx.requireStatus,
    status: ctx.status,
    query: { language: presentationExchange, query: ctx.definition, mapping: { value: submission } },
  })
  const validations = result.outcomes.validations()
  const claims: Record<string, unknown> = {}
  if (validations.status === 'SUCCESS') {
    for (const c of result.credentials) {
      for (const [k, v] of Object.entries(c.credential.claims)) if (!(k in claims)) claims[k] = v
    }
  }
  return {
    validations,
    holder: result.holder?.did ?? null,
    credentials: result.credentials.map((c) => c.credential.sharedView),
    claims,
    timings: result.timings,
  }
}
