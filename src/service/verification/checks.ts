import { performance } from 'node:perf_hooks'
import { type DidKey, isJwsAlg, resolveDidKey } from '../../shared/did-key.ts'
import { isObject } from '../../shared/json.ts'
import { type DecodedJws, decodeJws, JwsError, verifyJws } from '../../shared/jws.ts'
import { sharedView } from '../oid4vci/proofs.ts'
import type { CheckOutcome, Validations } from '../store/index.ts'
import { evaluateDefinition } from '../util/pex.ts'
import type { StatusChecker } from './status.ts'

// What a careful verifier checks in an OpenID4VP response, each check reported on its own so a relying
// party (and a QA engineer) learns exactly which requirement broke. docs/verification.md has the list.

export const CHECKS = [
  'securityMechanisms',
  'presentationProof',
  'sessionBinding',
  'credentialProof',
  'holderBinding',
  'trustedIssuer',
  'validityPeriod',
  'credentialStatus',
  'matchingIds',
] as const
export type CheckName = (typeof CHECKS)[number]

const FUTURE_SKEW_SECONDS = 60
const VP_FORMATS = ['jwt_vp', 'jwt_vp_json']
const VC_FORMATS = ['jwt_vc', 'jwt_vc_json']
// Only plain index paths are read from the wallet's descriptor_map: its JSONPath is never evaluated.
const NESTED_PATH = /^\$(?:\.vp)?\.verifiableCredential\[(\d{1,3})\]$/

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

/** A credential of the presentation, as far as it could be read. */
interface Shared {
  index: number
  jwt: string
  decoded: DecodedJws
  issuer: string | undefined
  proofOk: boolean
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
  timings: { signaturesMs: number; pexMs: number; statusMs: number }
}

const vcOf = (c: Shared) => (isObject(c.decoded.payload.vc) ? c.decoded.payload.vc : {})
const where = (c: Shared) => `verifiableCredential[${c.index}]`

class Outcomes {
  readonly list: CheckOutcome[] = []
  readonly warnings: string[] = []
  record(check: CheckName, failures: string[], passed: string) {
    this.list.push(
      failures.length > 0
        ? { check, result: 'failed', message: failures.join('; ') }
        : { check, result: 'passed', message: passed },
    )
  }
  notRun(check: CheckName, why: string) {
    this.list.push({ check, result: 'not_run', message: why })
  }
  validations(): Validations {
    const failed = this.list.filter((c) => c.result === 'failed')
    return {
      status: failed.length === 0 && this.list.some((c) => c.result === 'passed') ? 'SUCCESS' : 'REJECT',
      checks: this.list,
      verificationResult: {
        checks: this.list.filter((c) => c.result !== 'not_run').map((c) => c.check),
        warnings: this.warnings,
        errors: failed.map((c) => `${c.check}: ${c.message}`),
      },
    }
  }
}

function algsOf(definition: Record<string, unknown>, format: string): readonly string[] {
  const formats = isObject(definition.format) ? definition.format : {}
  const entry = formats[format]
  return isObject(entry) && Array.isArray(entry.alg) ? (entry.alg as string[]) : []
}

function resolveKid(kid: unknown): DidKey {
  if (typeof kid !== 'string' || !kid.startsWith('did:key:') || !kid.includes('#')) {
    throw new Error(`kid ${JSON.stringify(kid)} is not a did:key key id`)
  }
  return resolveDidKey(kid)
}

/** One descriptor_map entry: a known descriptor, a plain index path, and a credential that satisfies it. */
function checkEntry(
  entry: unknown,
  at: string,
  descriptorIds: Set<string>,
  matches: Set<string>,
  credentialCount: number,
): string | undefined {
  if (!isObject(entry)) return `${at} is not an object`
  if (typeof entry.id !== 'string' || !descriptorIds.has(entry.id)) {
    return `${at}.id ${JSON.stringify(entry.id)} names no input descriptor of the definition`
  }
  let path: unknown = entry.path
  let format: unknown = entry.format
  if (isObject(entry.path_nested)) {
    if (entry.path !== '$' || !VP_FORMATS.includes(String(entry.format))) {
      return `${at} must point at the vp_token ("$", jwt_vp) before path_nested`
    }
    path = entry.path_nested.path
    format = entry.path_nested.format
  }
  const index = typeof path === 'string' ? NESTED_PATH.exec(path)?.[1] : undefined
  if (index === undefined) {
    return `${at} path ${JSON.stringify(path)} is not a plain $.verifiableCredential[n] path (expressions are never evaluated)`
  }
  if (!VC_FORMATS.includes(String(format)))
    return `${at} format ${JSON.stringify(format)} is not jwt_vc or jwt_vc_json`
  const n = Number(index)
  if (n >= credentialCount) return `${at} points at credential ${n}, which is not in the vp_token`
  if (!matches.has(`${entry.id}|${n}`)) {
    return `${at} maps descriptor "${entry.id}" to verifiableCredential[${n}], which does not satisfy it`
  }
  return undefined
}

/** The wallet's presentation_submission, checked against the service's own PEX evaluation. */
function checkSubmission(
  submission: unknown,
  definition: Record<string, unknown>,
  matches: Set<string>,
  credentialCount: number,
): string[] {
  if (!isObject(submission)) return ['presentation_submission is missing or not a JSON object']
  const failures: string[] = []
  if (submission.definition_id !== definition.id) {
    failures.push(
      `presentation_submission.definition_id ${JSON.stringify(submission.definition_id)} is not this session's definition ${String(definition.id)}`,
    )
  }
  const map = submission.descriptor_map
  if (!Array.isArray(map) || map.length === 0) return [...failures, 'descriptor_map is missing or empty']
  const descriptorIds = new Set(
    (Array.isArray(definition.input_descriptors) ? definition.input_descriptors : []).map(
      (d) => (d as { id: string }).id,
    ),
  )
  for (const [i, entry] of map.entries()) {
    const failure = checkEntry(entry, `descriptor_map[${i}]`, descriptorIds, matches, credentialCount)
    if (failure) failures.push(failure)
  }
  return failures
}

/**
 * Verifies a direct_post response. Every check runs that can; a check whose input is missing because an
 * earlier one failed is reported as not_run, with the reason.
 */
export async function verifyResponse(
  vpToken: unknown,
  submission: unknown,
  ctx: ResponseContext,
): Promise<Verdict> {
  const out = new Outcomes()
  const timings = { signaturesMs: 0, pexMs: 0, statusMs: 0 }
  const empty = (): Verdict => ({
    validations: out.validations(),
    holder: null,
    credentials: [],
    claims: {},
    timings,
  })

  // securityMechanisms: the format, algorithms and key references the definition allows.
  const readFailure = (reason: string) => {
    out.record('securityMechanisms', [reason], '')
    for (const check of CHECKS.slice(1)) out.notRun(check, 'the vp_token could not be read')
    return empty()
  }
  if (typeof vpToken !== 'string' || vpToken.length === 0) {
    return readFailure('vp_token is missing')
  }
  if (/^\s*[{[]/.test(vpToken)) {
    return readFailure('vp_token is a JSON (ldp_vp) presentation; this verifier accepts jwt_vp only')
  }
  let vp: DecodedJws
  let holderKey: DidKey
  try {
    vp = decodeJws(vpToken)
  } catch (error) {
    return readFailure(`vp_token is not a compact JWT: ${(error as Error).message}`)
  }
  const vpAlgs = algsOf(ctx.definition, 'jwt_vp')
  if (!isJwsAlg(vp.header.alg) || !vpAlgs.includes(vp.header.alg)) {
    return readFailure(`vp_token alg ${JSON.stringify(vp.header.alg)} is not one of ${vpAlgs.join(', ')}`)
  }
  if (vp.header.jwk !== undefined || vp.header.x5c !== undefined) {
    return readFailure('vp_token must name its key with kid (did:key), not jwk or x5c')
  }
  try {
    holderKey = resolveKid(vp.header.kid)
  } catch (error) {
    return readFailure(`vp_token header: ${(error as Error).message}`)
  }
  const vpBody = vp.payload.vp
  if (!isObject(vpBody)) return readFailure('vp_token payload has no vp object')
  const types = Array.isArray(vpBody.type) ? vpBody.type : [vpBody.type]
  if (!types.includes('VerifiablePresentation'))
    return readFailure('vp.type does not include VerifiablePresentation')
  const rawCredentials = Array.isArray(vpBody.verifiableCredential)
    ? vpBody.verifiableCredential
    : vpBody.verifiableCredential === undefined
      ? []
      : [vpBody.verifiableCredential]
  if (rawCredentials.length === 0) return readFailure('vp.verifiableCredential is empty')
  const vcAlgs = algsOf(ctx.definition, 'jwt_vc')
  const unreadable: string[] = []
  const shared: Shared[] = []
  for (const [index, raw] of rawCredentials.entries()) {
    const at = `verifiableCredential[${index}]`
    if (typeof raw !== 'string') {
      unreadable.push(`${at} is not a JWT credential (jwt_vc)`)
      continue
    }
    try {
      const decoded = decodeJws(raw)
      if (!isJwsAlg(decoded.header.alg) || !vcAlgs.includes(decoded.header.alg)) {
        unreadable.push(`${at} alg ${JSON.stringify(decoded.header.alg)} is not allowed`)
        continue
      }
      shared.push({ index, jwt: raw, decoded, issuer: undefined, proofOk: false })
    } catch (error) {
      unreadable.push(`${at} is not a compact JWT: ${(error as Error).message}`)
    }
  }
  out.record(
    'securityMechanisms',
    unreadable,
    `jwt_vp (${vp.header.alg}) by a did:key holder carrying ${shared.length} jwt_vc credential(s)`,
  )

  // presentationProof: the holder's signature over the VP.
  let started = performance.now()
  const proofFailures: string[] = []
  try {
    verifyJws(vpToken, holderKey.publicKey, { algorithms: vpAlgs.filter(isJwsAlg) })
  } catch (error) {
    proofFailures.push(
      error instanceof JwsError && error.reason === 'bad_signature'
        ? `the VP signature does not verify with the holder key ${holderKey.kid}`
        : `the VP signature cannot be checked: ${(error as Error).message}`,
    )
  }
  if (vp.payload.iss !== undefined && vp.payload.iss !== holderKey.did) {
    proofFailures.push(
      `VP iss ${JSON.stringify(vp.payload.iss)} is not the DID of the signing key ${holderKey.did}`,
    )
  }
  if (vpBody.holder !== undefined && vpBody.holder !== holderKey.did) {
    proofFailures.push(`vp.holder ${JSON.stringify(vpBody.holder)} is not the DID of the signing key`)
  }
  out.record('presentationProof', proofFailures, `signed by the holder ${holderKey.kid}`)
  const holder = proofFailures.length === 0 ? holderKey.did : null

  // sessionBinding: this VP was made for this session and this verifier, now.
  const binding: string[] = []
  if (vp.payload.nonce !== ctx.nonce) {
    binding.push(`VP nonce ${JSON.stringify(vp.payload.nonce)} is not the nonce of this session's request`)
  }
  const audiences = Array.isArray(vp.payload.aud) ? vp.payload.aud : [vp.payload.aud]
  if (!audiences.includes(ctx.clientId)) {
    binding.push(`VP aud ${JSON.stringify(vp.payload.aud)} is not this verifier's client_id ${ctx.clientId}`)
  }
  const nowSeconds = Math.floor(ctx.now / 1000)
  if (vp.payload.iat !== undefined) {
    if (typeof vp.payload.iat !== 'number') binding.push('VP iat is not a number')
    else if (vp.payload.iat > nowSeconds + FUTURE_SKEW_SECONDS) binding.push('VP iat is in the future')
  }
  if (typeof vp.payload.exp === 'number' && vp.payload.exp <= nowSeconds)
    binding.push('the VP has expired (exp)')
  out.record('sessionBinding', binding, "nonce and aud are this session's")

  // credentialProof: each credential's signature by its issuer's key.
  const credentialFailures: string[] = []
  for (const c of shared) {
    try {
      const issuerKey = resolveKid(c.decoded.header.kid)
      verifyJws(c.jwt, issuerKey.publicKey, { algorithms: vcAlgs.filter(isJwsAlg) })
      if (c.decoded.payload.iss !== issuerKey.did) {
        credentialFailures.push(`${where(c)} iss is not the DID of the key that signed it`)
      } else {
        c.issuer = issuerKey.did
        c.proofOk = true
      }
    } catch (error) {
      credentialFailures.push(
        error instanceof JwsError && error.reason === 'bad_signature'
          ? `${where(c)} signature does not verify with its issuer key (was it altered?)`
          : `${where(c)} cannot be checked: ${(error as Error).message}`,
      )
    }
  }
  timings.signaturesMs = performance.now() - started
  out.record('credentialProof', credentialFailures, `${shared.length} credential signature(s) verified`)

  // holderBinding: the presenter is the subject of every credential.
  if (!holder) out.notRun('holderBinding', 'the presentation proof failed, so the holder is unproven')
  else {
    const failures = shared
      .map((c) => {
        const subjectId = (vcOf(c).credentialSubject as { id?: unknown } | undefined)?.id
        const { sub } = c.decoded.payload
        if (sub !== undefined && subjectId !== undefined && sub !== subjectId) {
          return `${where(c)} names two subjects: sub ${String(sub)} and credentialSubject.id ${String(subjectId)}`
        }
        const subject = sub ?? subjectId
        return subject === holder
          ? undefined
          : `${where(c)} was issued to ${String(subject)}, not to the presenter ${holder}`
      })
      .filter((f): f is string => f !== undefined)
    out.record('holderBinding', failures, 'the presenter is the subject of every credential')
  }

  // trustedIssuer
  const trustFailures = shared
    .filter((c) => c.proofOk && !ctx.trustedIssuers.includes(c.issuer as string))
    .map((c) => `${where(c)} is issued by ${c.issuer}, which this template does not trust`)
  const unproven = shared.filter((c) => !c.proofOk).length
  out.record(
    'trustedIssuer',
    trustFailures,
    `every verified credential comes from a trusted issuer${unproven ? ` (${unproven} unverified credential(s) not counted)` : ''}`,
  )

  // validityPeriod
  const validity: string[] = []
  for (const c of shared) {
    const { nbf, exp } = c.decoded.payload
    const vc = vcOf(c)
    const until = [vc.expirationDate, vc.validUntil].find((v) => typeof v === 'string') as string | undefined
    const from = [vc.validFrom].find((v) => typeof v === 'string') as string | undefined
    if (typeof nbf === 'number' && nbf > nowSeconds + FUTURE_SKEW_SECONDS)
      validity.push(`${where(c)} is not valid before ${new Date(nbf * 1000).toISOString()}`)
    if (typeof exp === 'number' && exp <= nowSeconds)
      validity.push(`${where(c)} expired at ${new Date(exp * 1000).toISOString()}`)
    if (until && Date.parse(until) <= ctx.now) validity.push(`${where(c)} expired at ${until}`)
    if (from && Date.parse(from) > ctx.now + FUTURE_SKEW_SECONDS * 1000)
      validity.push(`${where(c)} is not valid before ${from}`)
  }
  out.record('validityPeriod', validity, 'every credential is within its validity period')

  // credentialStatus: only for credentials signed by a trusted issuer (their list URL is that issuer's word).
  started = performance.now()
  const eligible = shared.filter((c) => c.proofOk && ctx.trustedIssuers.includes(c.issuer as string))
  if (eligible.length === 0) {
    out.notRun('credentialStatus', 'no credential is both verified and from a trusted issuer')
  } else {
    const memo = new Map()
    const statusFailures: string[] = []
    const seen: string[] = []
    for (const c of eligible) {
      const entry = vcOf(c).credentialStatus
      if (entry === undefined) {
        const note = `${where(c)} has no credentialStatus`
        if (ctx.requireStatus) statusFailures.push(`${note}, and this template requires one`)
        else out.warnings.push(`credentialStatus: ${note}; its status was not checked`)
        continue
      }
      const verdict = await ctx.status.check(entry, c.issuer as string, ctx.now, memo)
      if (verdict.ok) seen.push(verdict.status)
      else statusFailures.push(`${where(c)}: ${verdict.reason}`)
    }
    out.record('credentialStatus', statusFailures, `status: ${seen.join(', ') || 'not checked'}`)
  }
  timings.statusMs = performance.now() - started

  // matchingIds: the service's own PEX evaluation of the definition, and the wallet's mapping against it.
  started = performance.now()
  const evaluation = evaluateDefinition(
    ctx.definition,
    shared.map((c) => c.jwt),
  )
  // PEX indexes the readable credentials; the wallet's mapping indexes the vp_token's.
  const matches = new Set(
    evaluation.matches.flatMap(({ descriptor, index }) => {
      const c = shared[index]
      return c ? [`${descriptor}|${c.index}`] : []
    }),
  )
  const matchFailures: string[] = []
  if (evaluation.outcome === 'error') {
    matchFailures.push(`the credentials cannot be evaluated against the definition: ${evaluation.detail}`)
  } else if (evaluation.outcome === 'unsatisfied') {
    matchFailures.push(
      `the shared credentials do not satisfy the presentation definition${evaluation.detail ? ` (${evaluation.detail})` : ''}`,
    )
  }
  timings.pexMs = performance.now() - started
  matchFailures.push(...checkSubmission(submission, ctx.definition, matches, rawCredentials.length))
  out.record(
    'matchingIds',
    matchFailures,
    'the credentials satisfy the definition as the submission maps them',
  )

  const validations = out.validations()
  const claims: Record<string, unknown> = {}
  if (validations.status === 'SUCCESS') {
    for (const c of shared) {
      const subject = vcOf(c).credentialSubject
      if (!isObject(subject)) continue
      for (const [k, v] of Object.entries(subject)) if (k !== 'id' && !(k in claims)) claims[k] = v
    }
  }
  return {
    validations,
    holder,
    credentials: shared.map((c) => sharedView(c.jwt, c.decoded.payload)),
    claims,
    timings,
  }
}
