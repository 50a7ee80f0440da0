import { createPublicKey, type KeyObject } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { FUTURE_SKEW_SECONDS, type SessionExpectation } from '../../formats/binding.ts'
import type {
  CredentialFormat,
  FormatPolicy,
  KeyResolver,
  PresentationFormat,
  ProvenHolder,
  ReadCredential,
} from '../../formats/types.ts'
import { resolveDidKey } from '../../shared/did-key.ts'
import { listSignerOf } from '../../shared/status-check.ts'
import { CHECKS, Outcomes } from './outcomes.ts'
import type { QueryLanguage } from './query.ts'
import type { StatusChecker } from './status.ts'

// The one credential-checking pipeline: what the holder shares is checked by the same named checks
// whether it arrives as an OpenID4VCI di_vp key proof (issuance, a template's requiredPresentation) or as
// an OpenID4VP vp_token (verification). Every check runs that can; a check whose input is missing because
// an earlier one failed is reported as not_run, with the reason. Formats and query languages plug in
// (src/formats/, query.ts); the callers turn the outcomes into their own error style.

export type { SessionExpectation }

/** Where the time of one run went (milliseconds), for benchmarks. */
export interface CheckTimings {
  totalMs: number
  signaturesMs: number
  queryMs: number
  statusMs: number
}

/** A hook for whoever measures the checks (the bench); services default to none. */
export interface CheckMetrics {
  checks(source: 'issuance' | 'verification', timings: CheckTimings): void
}

/** How one presentation of a response is read: its format and the credential formats it may carry. */
export interface PresentationPart {
  token: unknown
  presentationFormat: PresentationFormat
  presentationPolicy: FormatPolicy
  credentialFormats: readonly CredentialFormat[]
  credentialPolicy: FormatPolicy
  /** DCQL: the credential query id the wallet answered with this presentation (its vp_token key). */
  queryId?: string
  /** Names the presentation in messages (`vp_token.pid[0]`); unset for a response's one presentation. */
  label?: string
}

/** What every presentation of one response is checked against. */
export interface SharedContext {
  session: SessionExpectation
  /** PEM anchors an x5c issuer chain must end in (dc+sd-jwt); a credential anchored in one is trusted. */
  trustAnchors?: readonly string[]
  /** Issuer key resolution; did:key by default. */
  keys?: KeyResolver
  /** The issuers trusted for this credential, or undefined when any issuer is accepted. */
  trustedIssuers(credential: ReadCredential): readonly string[] | undefined
  /**
   * Whose status lists may be fetched when no trust list applies (the tenant's own issuers): a list URL
   * is fetched only on a trusted issuer's word, never on one a holder could have signed himself.
   */
  ownIssuers?: readonly string[]
  /** A credential without a status entry fails (true) or passes with a warning (false). */
  requireStatus: boolean
  status: StatusChecker
  /** The query to satisfy; `mapping` is the wallet's own answer to it, when the protocol has one. */
  query?: { language: QueryLanguage; query: unknown; mapping?: { value: unknown } }
}

/** One presentation (a PE vp_token, an OpenID4VCI di_vp proof): the shared context and its formats. */
export type PipelineContext = SharedContext & Omit<PresentationPart, 'token' | 'queryId' | 'label'>

/** A credential of the presentation, read, and its issuer once its proof verified. */
export interface CheckedCredential {
  index: number
  /** How messages name it: `verifiableCredential[n]`, or under its presentation's label. */
  label: string
  credential: ReadCredential
  issuer: string | undefined
  /** The credential query id of its presentation (DCQL). */
  queryId?: string
  /** The trust anchor its issuer's x5c chain ended in: trusted by the anchor, not by a DID list. */
  anchor?: string
  /** The x5c leaf's key (it must also sign the credential's Token Status List). */
  issuerKey?: KeyObject
}

export interface PipelineResult {
  outcomes: Outcomes
  /** The holder key, when the presentation proof verified. */
  holder: ProvenHolder | null
  /** The holder's proof as the section 2.4 validator shows it, when it verified. */
  proofEntry: Record<string, unknown> | null
  credentials: CheckedCredential[]
  timings: CheckTimings
}

const where = (c: { label: string }) => c.label

function holderBinding(c: CheckedCredential, holder: ProvenHolder): string | undefined {
  const binding = c.credential.holderBinding
  if (binding.kind === 'key') {
    // Compared as keys, not as JWK text: member order and extra members do not matter.
    try {
      if (createPublicKey({ key: binding.jwk, format: 'jwk' }).equals(holder.publicKey)) return undefined
    } catch {
      // an unusable cnf key binds nobody
    }
    return `${where(c)} is bound to another key than the presenter's ${holder.kid}`
  }
  if (binding.conflict) return `${where(c)} ${binding.conflict}`
  return binding.id === holder.did
    ? undefined
    : `${where(c)} was issued to ${String(binding.id)}, not to the presenter ${holder.did}`
}

/** Runs every check on a presentation in `token`, read with `ctx.presentationFormat`. */
export function checkPresentation(token: unknown, ctx: PipelineContext): Promise<PipelineResult> {
  return checkPresentations([{ ...ctx, token }], ctx)
}

/** A presentation as its format read it, with its part and the holder its proof established. */
interface ReadPart {
  part: PresentationPart
  presentation: ReturnType<PresentationFormat['read']>
  holder: ProvenHolder | null
  credentials: CheckedCredential[]
}

const prefixed = (part: PresentationPart, failures: readonly string[]) =>
  part.label === undefined ? [...failures] : failures.map((f) => `${part.label}: ${f}`)

/**
 * Runs every check on the presentations of one response: one for Presentation Exchange and OpenID4VCI,
 * one per credential query answer for a DCQL vp_token (OpenID4VP 1.0 §8.1). Each presentation is read,
 * proven and bound on its own; credentials are bound to their own presentation's holder; the query is
 * evaluated once over every credential.
 */
export async function checkPresentations(
  parts: readonly PresentationPart[],
  ctx: SharedContext,
): Promise<PipelineResult> {
  const begun = performance.now()
  const out = new Outcomes()
  const timings: CheckTimings = { totalMs: 0, signaturesMs: 0, queryMs: 0, statusMs: 0 }
  const done = (result: Omit<PipelineResult, 'outcomes' | 'timings'>): PipelineResult => {
    timings.totalMs = performance.now() - begun
    return { outcomes: out, timings, ...result }
  }

  // securityMechanisms: the formats, algorithms and key references the query and this service allow.
  const unreadable: string[] = []
  const read: ReadPart[] = []
  let index = 0
  // a format whose library loads on first use (mso_mdoc) is loaded before anything is read
  await Promise.all(
    parts.flatMap((p) => [
      p.presentationFormat.prepare?.(),
      ...p.credentialFormats.map((f) => f.prepare?.()),
    ]),
  )
  for (const part of parts) {
    try {
      read.push({
        part,
        presentation: part.presentationFormat.read(part.token, part.presentationPolicy),
        holder: null,
        credentials: [],
      })
    } catch (error) {
      unreadable.push(...prefixed(part, [(error as Error).message]))
    }
  }
  if (read.length === 0) {
    out.record(
      'securityMechanisms',
      unreadable.length ? unreadable : ['the response carries no presentation'],
      '',
    )
    for (const check of CHECKS.slice(1)) out.notRun(check, 'the presentation could not be read')
    return done({ holder: null, proofEntry: null, credentials: [] })
  }
  for (const r of read) {
    const { part, presentation } = r
    unreadable.push(...prefixed(part, presentation.unreadable))
    for (const { index: n, raw } of presentation.credentials) {
      // No format recognises it: the first (the one the query expects) says why it cannot read it.
      const format = part.credentialFormats.find((f) => f.accepts(raw)) ?? part.credentialFormats[0]
      const label =
        part.label === undefined
          ? `verifiableCredential[${n}]`
          : raw === part.token
            ? part.label
            : `${part.label}.verifiableCredential[${n}]`
      try {
        if (!format) throw new Error('is of no supported credential format')
        r.credentials.push({
          index: part.label === undefined ? n : index,
          label,
          credential: format.read(raw, part.credentialPolicy),
          issuer: undefined,
          ...(part.queryId !== undefined && { queryId: part.queryId }),
        })
      } catch (error) {
        unreadable.push(`${label} ${(error as Error).message}`)
      }
      index++
    }
  }
  const credentials = read.flatMap((r) => r.credentials)
  const formats = [...new Set(credentials.map((c) => c.credential.format))].join(', ') || 'no'
  const mechanisms = [...new Set(read.map((r) => r.presentation.mechanisms))].join('; ')
  out.record(
    'securityMechanisms',
    unreadable,
    `${mechanisms} carrying ${credentials.length} ${formats} credential(s)`,
  )

  // presentationProof: the holder's signature over each presentation.
  let started = performance.now()
  const proofFailures: string[] = []
  let proofEntry: Record<string, unknown> | null = null
  for (const r of read) {
    const proof = await r.presentation.verifyProof()
    if (proof.ok) {
      r.holder = proof.holder
      proofEntry ??= proof.proofEntry
    } else proofFailures.push(...prefixed(r.part, proof.failures))
  }
  const holders = [...new Set(read.flatMap((r) => (r.holder ? [r.holder.kid] : [])))]
  out.record(
    'presentationProof',
    proofFailures,
    read.length === 1
      ? `signed by the holder ${holders[0]}`
      : `every presentation signed by its holder (${holders.join(', ')})`,
  )
  const holder = read.find((r) => r.holder)?.holder ?? null

  // sessionBinding: made for this exchange and this audience, now (each format knows how it is bound).
  out.record(
    'sessionBinding',
    (
      await Promise.all(
        read.map(async (r) => prefixed(r.part, await r.presentation.verifyBinding(ctx.session))),
      )
    ).flat(),
    "nonce and audience are this exchange's",
  )

  // credentialProof: each credential's signature by its issuer's key.
  const keys = ctx.keys ?? resolveDidKey
  const signatureFailures: string[] = []
  const proofContext = { trustAnchors: ctx.trustAnchors ?? [], now: ctx.session.now }
  for (const c of credentials) {
    const result = await c.credential.verifyProof(keys, proofContext)
    if (result.ok) {
      c.issuer = result.issuer
      if (result.anchor !== undefined) c.anchor = result.anchor
      if (result.issuerKey !== undefined) c.issuerKey = result.issuerKey
    } else signatureFailures.push(`${where(c)} ${result.reason}`)
  }
  timings.signaturesMs = performance.now() - started
  out.record('credentialProof', signatureFailures, `${credentials.length} credential signature(s) verified`)

  // holderBinding: the presenter is the one every credential was issued to (each presentation's own).
  if (read.every((r) => !r.holder)) {
    out.notRun('holderBinding', 'the presentation proof failed, so the holder is unproven')
  } else {
    const failures = read.flatMap((r) =>
      r.holder
        ? r.credentials
            .map((c) => holderBinding(c, r.holder as ProvenHolder))
            .filter((f): f is string => f !== undefined)
        : r.credentials.map((c) => `${where(c)}: its presentation's proof failed, so its holder is unproven`),
    )
    out.record('holderBinding', failures, 'the presenter is the subject of every credential')
  }

  // trustedIssuer
  const trusted = (c: CheckedCredential) => {
    if (c.anchor !== undefined) return true
    const list = ctx.trustedIssuers(c.credential)
    return list === undefined || list.includes(c.issuer as string)
  }
  const verified = credentials.filter((c) => c.issuer !== undefined)
  const trustFailures = verified
    .filter((c) => !trusted(c))
    .map((c) => `${where(c)} is issued by ${c.issuer}, which this template does not trust`)
  const unproven = credentials.length - verified.length
  out.record(
    'trustedIssuer',
    trustFailures,
    `every verified credential comes from a trusted issuer${unproven ? ` (${unproven} unverified credential(s) not counted)` : ''}`,
  )

  // validityPeriod
  const { now } = ctx.session
  const validity: string[] = []
  for (const c of credentials) {
    for (const bound of c.credential.validity) {
      if (bound.kind === 'notBefore' && bound.at > now + FUTURE_SKEW_SECONDS * 1000)
        validity.push(`${where(c)} is not valid before ${bound.shown}`)
      if (bound.kind === 'notAfter' && bound.at <= now) validity.push(`${where(c)} expired at ${bound.shown}`)
    }
  }
  out.record('validityPeriod', validity, 'every credential is within its validity period')

  // credentialStatus: only on a trusted issuer's word (its list URL is fetched).
  started = performance.now()
  const eligible = verified.filter((c) => {
    // An issuer certified by a configured anchor is trusted to name its status list.
    if (c.anchor !== undefined) return true
    const list = ctx.trustedIssuers(c.credential) ?? ctx.ownIssuers ?? []
    return list.includes(c.issuer as string)
  })
  // Accepted without a trust list, from an issuer that is not the tenant's: its status is not read.
  for (const c of verified.filter((c) => trusted(c) && !eligible.includes(c))) {
    out.warnings.push(`credentialStatus: ${where(c)} is from ${c.issuer}, whose status list is not read`)
  }
  if (eligible.length === 0) {
    out.notRun('credentialStatus', 'no credential is both verified and from a trusted issuer')
  } else {
    const memo = new Map()
    const failures: string[] = []
    const seen: string[] = []
    for (const c of eligible) {
      const entries = c.credential.status
      if (entries.length === 0) {
        const note = `${where(c)} has no credentialStatus`
        if (ctx.requireStatus) failures.push(`${note}, and this template requires one`)
        else out.warnings.push(`credentialStatus: ${note}; its status was not checked`)
        continue
      }
      for (const entry of entries) {
        const verdict =
          entry.kind === 'bitstring'
            ? await ctx.status.check(entry.entry, c.issuer as string, now, memo)
            : await ctx.status.token.check(entry, listSignerOf(c.issuer as string, c.issuerKey), now, memo)
        if (verdict.ok) seen.push(verdict.status)
        else failures.push(`${where(c)}: ${verdict.reason}`)
      }
    }
    out.record('credentialStatus', failures, `status: ${seen.join(', ') || 'not checked'}`)
  }
  timings.statusMs = performance.now() - started

  // matchingIds: the service's own evaluation of the query, and the wallet's mapping against it.
  // Only credentials whose issuer signature verified are evaluated (issue 30): a query's work is never
  // spent on what an attacker could have written, and an unproven claim never satisfies a query.
  if (!ctx.query) out.notRun('matchingIds', 'nothing was asked for')
  else if (verified.length === 0 && credentials.length > 0) {
    out.notRun('matchingIds', 'no credential passed credentialProof, so none was evaluated against the query')
  } else {
    started = performance.now()
    const { language, query, mapping } = ctx.query
    const evaluation = language.evaluate(query, verified)
    const failures: string[] = []
    if (evaluation.outcome !== 'satisfied' && verified.length < credentials.length) {
      const unverified = credentials.filter((c) => c.issuer === undefined).map(where)
      failures.push(`not evaluated, as their credentialProof failed: ${unverified.join(', ')}`)
    }
    if (evaluation.outcome === 'error') {
      failures.push(`the credentials cannot be evaluated against the query: ${evaluation.detail}`)
    } else if (evaluation.outcome === 'unsatisfied') {
      failures.push(
        `the shared credentials do not satisfy ${language.words.query}${evaluation.detail ? ` (${evaluation.detail})` : ''}`,
      )
    }
    timings.queryMs = performance.now() - started
    out.warnings.push(...(evaluation.warnings ?? []).map((w) => `matchingIds: ${w}`))
    if (mapping) {
      const presented = read.reduce(
        (n, r) => n + r.presentation.credentials.length + r.presentation.unreadable.length,
        0,
      )
      failures.push(...language.checkMapping(mapping.value, query, evaluation, presented))
    }
    out.record('matchingIds', failures, language.words.satisfied)
  }
  return done({ holder, proofEntry, credentials })
}
