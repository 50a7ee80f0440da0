import { jwtVcJson, jwtVpJson } from '../../formats/jwt-vc/verify.ts'
import { isCryptosuite, LD_PROOF_TYPES } from '../../formats/ldp-vc/suites.ts'
import { ldpVc, ldpVp } from '../../formats/ldp-vc/verify.ts'
import { DEFAULT_DCQL_FORMAT, formatNamed, formatOf } from '../../formats/registry.ts'
import { originAudience } from '../../shared/dc-api.ts'
import { isJwsAlg, JWS_ALGS } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { dcql } from '../credentials/dcql.ts'
import { CHECKS, type CheckName } from '../credentials/outcomes.ts'
import {
  type CheckTimings,
  checkPresentation,
  checkPresentations,
  type PipelineResult,
  type PresentationPart,
} from '../credentials/pipeline.ts'
import { presentationExchange } from '../credentials/presentation-exchange.ts'
import type { QueryLanguage } from '../credentials/query.ts'
import type { StatusChecker } from '../credentials/status.ts'
import type { Validations } from '../store/index.ts'

// What a careful verifier checks in an OpenID4VP response: the credential pipeline's named checks
// (credentials/pipeline.ts), each reported on its own so a relying party (and a QA engineer) learns
// exactly which requirement broke. docs/verification.md has the list; the names are on the wire.

export { CHECKS, type CheckName }

export interface ResponseContext {
  nonce: string
  /** The verifier's client_id (its DID): the VP's `aud`. */
  clientId: string
  now: number
  trustedIssuers: readonly string[]
  /** PEM anchors of x5c-certified issuers (dc+sd-jwt). */
  trustAnchors?: readonly string[]
  requireStatus: boolean
  status: StatusChecker
  /** OpenID4VP 1.0: where the response was posted, and the JWK thumbprint of the key it was encrypted to
   * (direct_post.jwt): a format whose binding covers them (an mdoc's handover, Appendix B.2.6.1) checks them. */
  responseUri?: string
  encryptionKeyThumbprint?: string
  /**
   * OpenID4VP 1.0 Appendix A: the request went over the Digital Credentials API, answered from this origin.
   * Every presentation is then bound to `origin:<origin>` (A.4: "even for signed requests"), not to the
   * client_id, and an mdoc to the OpenID4VPDCAPIHandover (B.2.6.2); responseUri plays no part.
   */
  origin?: string
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
  /** The relying party's PresentationSubmissionFormat when it is not the profile's own (an ldp_vp: `ldp_vp`). */
  submissionFormat?: string
}

/** The algorithms the definition's `format` allows for `format` (PE v2 §5: `format.jwt_vp.alg`). */
function algsOf(definition: Record<string, unknown>, format: string) {
  const formats = isObject(definition.format) ? definition.format : {}
  const entry = formats[format]
  return isObject(entry) && Array.isArray(entry.alg) ? entry.alg.filter(isJwsAlg) : []
}

/**
 * The Linked Data proof types the definition's `format` allows for `formats` (PE v2 §5: `proof_type`);
 * `DataIntegrityProof` stands for the Data Integrity cryptosuites this verifier checks.
 */
function proofTypesOf(definition: Record<string, unknown>, ...formats: string[]): string[] {
  const declared = isObject(definition.format) ? definition.format : {}
  const named = formats.flatMap((format) => {
    const entry = declared[format]
    return isObject(entry) && Array.isArray(entry.proof_type) ? entry.proof_type : []
  })
  return LD_PROOF_TYPES.filter(
    (t) => named.includes(t) || (isCryptosuite(t) && named.includes('DataIntegrityProof')),
  )
}

/** A JSON presentation (an object, or its JSON text in a form field) is an ldp_vp; anything else a JWT VP. */
const isJsonPresentation = (token: unknown) =>
  isObject(token) || (typeof token === 'string' && /^\s*\{/.test(token))

/**
 * Verifies a direct_post response queried with Presentation Exchange: a jwt_vp_json or an ldp_vp (the
 * interface's section 2.8 formats), carrying jwt_vc_json and ldp_vc credentials as the definition allows.
 */
export async function verifyResponse(
  vpToken: unknown,
  submission: unknown,
  ctx: ResponseContext & {
    definition: Record<string, unknown>
    /** Who evaluates the definition: the service's own by default; PEX alone for the bench's baseline. */
    language?: QueryLanguage
  },
): Promise<Verdict> {
  const result = await checkPresentation(vpToken, {
    session: {
      nonce: ctx.nonce,
      nonceRole: "the nonce of this session's request",
      audience: ctx.clientId,
      audienceRole: "this verifier's client_id",
      now: ctx.now,
    },
    ...(isJsonPresentation(vpToken)
      ? {
          presentationFormat: ldpVp,
          presentationPolicy: { algorithms: [], proofTypes: proofTypesOf(ctx.definition, 'ldp_vp') },
        }
      : {
          presentationFormat: jwtVpJson,
          presentationPolicy: { algorithms: algsOf(ctx.definition, 'jwt_vp') },
        }),
    credentialFormats: [jwtVcJson, ldpVc],
    credentialPolicy: {
      algorithms: algsOf(ctx.definition, 'jwt_vc'),
      proofTypes: proofTypesOf(ctx.definition, 'ldp', 'ldp_vc'),
    },
    trustedIssuers: () => ctx.trustedIssuers,
    requireStatus: ctx.requireStatus,
    status: ctx.status,
    query: {
      language: ctx.language ?? presentationExchange,
      query: ctx.definition,
      mapping: { value: submission },
    },
  })
  const verdict = verdictOf(result)
  return isJsonPresentation(vpToken) ? { ...verdict, submissionFormat: 'ldp_vp' } : verdict
}

/** The verdict of a pipeline run: the validations, and what a VERIFIED session reports. */
function verdictOf(result: PipelineResult): Verdict {
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

const ALL_ALGS = { algorithms: JWS_ALGS }
/** How old a KB-JWT or VP may be (its `iat`): a presentation is made for one exchange, now. */
export const PRESENTATION_MAX_AGE_SECONDS = 300

/**
 * Verifies an OpenID4VP 1.0 response to a DCQL query: `vpToken` is the object keyed by credential query id
 * whose values are arrays of presentations (§8.1). Every presentation runs the same named checks as the PE
 * profile; dcql (credentials/dcql.ts) judges the answer as the wallet keyed it.
 */
export async function verifyDcqlResponse(
  vpToken: Record<string, unknown>,
  ctx: ResponseContext & { dcqlQuery: Record<string, unknown> },
): Promise<Verdict> {
  const queries = Array.isArray(ctx.dcqlQuery.credentials) ? ctx.dcqlQuery.credentials : []
  // How a DCQL answer is read per credential format (OpenID4VP 1.0 Appendix B): the credential query's
  // format names it (the session's own query: this service wrote it); its presentation format reads it.
  const partOf = (id: string) => {
    const query = queries.find((q) => isObject(q) && q.id === id) ?? queries[0]
    const format = formatNamed(isObject(query) ? query.format : undefined) ?? formatOf(DEFAULT_DCQL_FORMAT)
    return { presentationFormat: format.presentation, credentialFormats: [format.credential] }
  }
  const parts: PresentationPart[] = Object.entries(vpToken).flatMap(([queryId, value]) =>
    // A bare presentation instead of an array is read anyway; dcql's mapping check names the mistake.
    (Array.isArray(value) ? value : [value]).map((token, i) => ({
      token,
      queryId,
      label: `vp_token.${queryId}[${i}]`,
      ...partOf(queryId),
      presentationPolicy: ALL_ALGS,
      credentialPolicy: ALL_ALGS,
    })),
  )
  const result = await checkPresentations(parts, {
    session: {
      nonce: ctx.nonce,
      nonceRole: "the nonce of this session's request",
      ...(ctx.origin === undefined
        ? { audience: ctx.clientId, audienceRole: "this verifier's client_id" }
        : {
            audience: originAudience(ctx.origin),
            audienceRole:
              'the origin audience of this Digital Credentials API request (OpenID4VP 1.0 Appendix A.4: the origin, not the client_id, even for signed requests):',
            origin: ctx.origin,
          }),
      now: ctx.now,
      maxAgeSeconds: PRESENTATION_MAX_AGE_SECONDS,
      ...(ctx.origin === undefined && ctx.responseUri !== undefined && { responseUri: ctx.responseUri }),
      ...(ctx.encryptionKeyThumbprint !== undefined && {
        encryptionKeyThumbprint: ctx.encryptionKeyThumbprint,
      }),
    },
    trustedIssuers: () => ctx.trustedIssuers,
    trustAnchors: ctx.trustAnchors ?? [],
    requireStatus: ctx.requireStatus,
    status: ctx.status,
    query: { language: dcql, query: ctx.dcqlQuery, mapping: { value: vpToken } },
  })
  return verdictOf(result)
}
