// Which held credentials answer a presentation_definition: DIF Presentation Exchange with @sphereon/pex
// 4.1.0 over the wallet's stored credential JWTs. Per input descriptor, every held credential PEX selects for
// it (newest first); then the descriptors the submission_requirements need (all of them when there are
// none), each answered by its newest candidate; the whole set must then evaluate to `info` (PEX answers
// `warn` for an unsatisfied submission-requirement group, which is not a pass).
//
// Format identifiers: OpenID4VP names a JWT VC `jwt_vc_json` and a JWT VP `jwt_vp_json`; PEX 4.1.0 (like the
// pre-OpenID4VP drafts) calls the wallet's Veramo JWT VCs `jwt_vc` and filters on an input descriptor's
// `format`, so a descriptor naming only `jwt_vc_json` would match nothing. The wallet evaluates a copy of
// the definition in which each `jwt_vc_json` / `jwt_vp_json` also appears as `jwt_vc` / `jwt_vp`
// (evaluationDefinition); the verifier's own definition is never changed. The presentation_submission then
// answers in the verifier's words (answerFormats).

import type { IPresentationDefinition } from '@sphereon/pex'
import { definitionPathProblem } from '../shared/json-path.ts'
import { WalletUsageError } from './errors.ts'
import { loadPex } from './lazy.ts'
import type { StoredCredential } from './store.ts'

/** The parts of an input descriptor the wallet reads (the rest goes to PEX untouched). */
interface InputDescriptor {
  id: string
  name?: string
  purpose?: string
  group?: string[]
}
interface SubmissionRequirement {
  name?: string
  rule: 'all' | 'pick'
  count?: number
  min?: number
  max?: number
  from?: string
  from_nested?: SubmissionRequirement[]
}

export interface DescriptorMatch {
  id: string
  name?: string
  purpose?: string
  /** the held credentials PEX selects for this descriptor alone, newest first */
  candidates: StoredCredential[]
}

export interface Selection {
  definitionId: string
  /** every input descriptor with its candidates, in definition order */
  matches: DescriptorMatch[]
  /** the descriptors answered, each with the credential chosen for it */
  chosen: { descriptorId: string; credential: StoredCredential }[]
  /** the credentials presented (each once), in the order of `chosen` */
  credentials: StoredCredential[]
}

/** Nothing (or not enough) of what the verifier asks for is held; nothing was sent. */
export class NoMatchingCredentialsError extends WalletUsageError {
  override name = 'NoMatchingCredentialsError'
  constructor(
    message: string,
    /** the input descriptors no held credential satisfies */
    readonly descriptors: string[],
  ) {
    super(message)
  }
}

/** The OpenID4VP format identifier of a JWT VC / VP and the older (PEX, draft) identifier of the same format. */
const FORMAT_ALIASES = [
  ['jwt_vc_json', 'jwt_vc'],
  ['jwt_vp_json', 'jwt_vp'],
] as const

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A `format` object in which each OpenID4VP identifier also appears under the older one (a copy). */
function withLegacyAliases(format: unknown): unknown {
  if (!isRecord(format)) return format
  const copy = { ...format }
  for (const [json, legacy] of FORMAT_ALIASES) {
    if (json in copy && !(legacy in copy)) copy[legacy] = copy[json]
  }
  return copy
}

/**
 * The definition as the wallet evaluates it with PEX 4.1.0: a copy in which `jwt_vc_json` / `jwt_vp_json` of
 * the top-level `format` and of each input descriptor's `format` also appear as `jwt_vc` / `jwt_vp` (same
 * algorithms), so a definition in OpenID4VP's words matches the held JWT VCs as one in PEX's words does.
 */
export function evaluationDefinition(definition: IPresentationDefinition): IPresentationDefinition {
  const copy = structuredClone(definition) as unknown as Record<string, unknown>
  if (copy.format !== undefined) copy.format = withLegacyAliases(copy.format)
  if (Array.isArray(copy.input_descriptors)) {
    copy.input_descriptors = copy.input_descriptors.map((descriptor: unknown) =>
      isRecord(descriptor) && descriptor.format !== undefined
        ? { ...descriptor, format: withLegacyAliases(descriptor.format) }
        : descriptor,
    )
  }
  return copy as unknown as IPresentationDefinition
}

/** The identifiers one descriptor_map entry uses: `format` (the VP, path `$`) and `path_nested.format` (the VC). */
export interface AnswerFormats {
  vp: 'jwt_vp_json' | 'jwt_vp'
  vc: 'jwt_vc_json' | 'jwt_vc'
}

function named<J extends string, L extends string>(format: unknown, json: J, legacy: L): J | L | undefined {
  if (!isRecord(format)) return undefined
  if (json in format) return json
  if (legacy in format) return legacy
  return undefined
}

/**
 * The format identifiers of each input descriptor's descriptor_map entry: a wallet answers in the verifier's
 * words. The OpenID4VP identifiers (`jwt_vp_json`, `jwt_vc_json`) unless the definition names only the older
 * ones (`jwt_vp`, `jwt_vc`). The VC format is read from the descriptor's `format`, else the definition's; the
 * VP format from the definition's, else the descriptor's; one that neither names follows the other's
 * generation.
 */
export function answerFormats(definition: IPresentationDefinition): Map<string, AnswerFormats> {
  const top = (definition as { format?: unknown }).format
  const formats = new Map<string, AnswerFormats>()
  for (const descriptor of descriptorsOf(definition)) {
    const own = (descriptor as { format?: unknown }).format
    const vc = named(own, 'jwt_vc_json', 'jwt_vc') ?? named(top, 'jwt_vc_json', 'jwt_vc')
    const vp = named(top, 'jwt_vp_json', 'jwt_vp') ?? named(own, 'jwt_vp_json', 'jwt_vp')
    formats.set(descriptor.id, {
      vp: vp ?? (vc === 'jwt_vc' ? 'jwt_vp' : 'jwt_vp_json'),
      vc: vc ?? (vp === 'jwt_vp' ? 'jwt_vc' : 'jwt_vc_json'),
    })
  }
  return formats
}

/**
 * The identifier of an ldp_vc in one descriptor's descriptor_map entry (`path_nested.format`), in the
 * verifier's words: `ldp_vc` (DIF PE v2, OpenID4VP) unless the descriptor's `format`, else the definition's,
 * names only section 2.8's `ldp`.
 */
export function ldpVcFormatName(definition: IPresentationDefinition, descriptorId: string): 'ldp_vc' | 'ldp' {
  const top = (definition as { format?: unknown }).format
  const descriptor = descriptorsOf(definition).find((d) => d.id === descriptorId)
  const own = (descriptor as { format?: unknown } | undefined)?.format
  return named(own, 'ldp_vc', 'ldp') ?? named(top, 'ldp_vc', 'ldp') ?? 'ldp_vc'
}

function descriptorsOf(definition: IPresentationDefinition): InputDescriptor[] {
  return definition.input_descriptors as unknown as InputDescriptor[]
}

function describe(descriptor: InputDescriptor): string {
  const label = descriptor.name ?? descriptor.purpose
  return label ? `${descriptor.id} (${label})` : descriptor.id
}

/**
 * Format identifiers of a credential the wallet holds, and of the presentation that carries it: a JWT VC
 * in a JWT VP (OpenID4VP, PEX and the older `jwt`), an ldp_vc in an ldp_vp (section 2.8 says `ldp`).
 */
const FAMILIES = {
  jwt: {
    vc: ['jwt_vc_json', 'jwt_vc', 'jwt'],
    vp: ['jwt_vp_json', 'jwt_vp', 'jwt'],
    held: 'jwt_vc_json',
    vpName: 'jwt_vp_json',
  },
  ldp: { vc: ['ldp_vc', 'ldp'], vp: ['ldp_vp'], held: 'ldp_vc', vpName: 'ldp_vp' },
} as const
type Family = keyof typeof FAMILIES
const familyOf = (c: StoredCredential): Family => (c.format === 'ldp_vc' ? 'ldp' : 'jwt')

/** What PEX evaluates for a held credential: the JWT as issued, an ldp_vc as its JSON object. */
const pexInput = (c: StoredCredential): unknown =>
  c.format === 'ldp_vc' ? JSON.parse(c.credential) : c.credential

/**
 * Why a descriptor cannot take a credential of `family` in its presentation, or undefined when it can: its
 * `format` (else the definition's) names claim formats, none of the family; or the definition's `format`
 * names presentation formats (`…vp…`), none of the family's. PEX 4.1.0 filters on a descriptor's own
 * `format` but not on the definition's (DIF Presentation Exchange v2 §5, `format`).
 */
function formatProblem(
  definition: IPresentationDefinition,
  descriptor: InputDescriptor,
  family: Family = 'jwt',
): string | undefined {
  const { vc, vp, held, vpName } = FAMILIES[family]
  const top = (definition as { format?: unknown }).format
  const own = (descriptor as { format?: unknown }).format
  const vcFormat = isRecord(own) ? own : isRecord(top) ? top : undefined
  if (vcFormat && !vc.some((f) => f in vcFormat)) {
    return `it accepts ${Object.keys(vcFormat).join(', ')}, and this wallet holds ${held}`
  }
  const vpFormats = isRecord(top) ? Object.keys(top).filter((f) => f.includes('vp')) : []
  if (vpFormats.length > 0 && !vp.some((f) => vpFormats.includes(f))) {
    return `it accepts presentations as ${vpFormats.join(', ')}, and this wallet presents ${vpName}`
  }
  return undefined
}

/**
 * Why the wallet will not evaluate `definition` (a field path that is not a plain member/index JSONPath,
 * src/shared/json-path.ts), as the first words of an error description; undefined when every path is plain.
 * PEX evaluates each path with @astronautlabs/jsonpath, whose filter and script expressions run through
 * static-eval over the credential objects, prototype chain included.
 */
export function unsafeDefinitionPath(source: string, definition: unknown): string | undefined {
  const found = definitionPathProblem(definition)
  if (!found) return undefined
  return `${source} (DIF Presentation Exchange v2 §5, fields.path): ${found.at} ${JSON.stringify(found.path)} is not a plain member/index JSONPath: ${found.problem}. This wallet evaluates a definition it is sent only when every field path is $ followed by .name, ['name'], [n], [a:b] or [*] steps, none naming a member of Object.prototype; nothing was evaluated`
}

/** Every held credential PEX selects for each descriptor on its own (newest first). */
export async function matchDescriptors(
  definition: IPresentationDefinition,
  held: StoredCredential[],
  holderDid: string,
): Promise<DescriptorMatch[]> {
  // the sessions refuse such a definition when it arrives; this guards every other caller of PEX here
  const unsafe = unsafeDefinitionPath('presentation_definition', definition)
  if (unsafe) throw new WalletUsageError(unsafe)
  const { PEX } = await loadPex()
  const pex = new PEX()
  const newestFirst = [...held].reverse()
  const evaluated = evaluationDefinition(definition)
  return descriptorsOf(evaluated).map((descriptor) => {
    const single = { ...evaluated, input_descriptors: [descriptor] } as IPresentationDefinition
    delete (single as { submission_requirements?: unknown }).submission_requirements
    const selected = new Set<StoredCredential>()
    // each format family the descriptor accepts is evaluated on its own (PEX reads a JWT VC as a string, an
    // ldp_vc as its object); the candidates are then the selected ones of either family, newest first
    for (const family of ['jwt', 'ldp'] as const) {
      const ofFamily = newestFirst.filter((c) => familyOf(c) === family)
      if (ofFamily.length === 0 || formatProblem(definition, descriptor, family)) continue
      const inputs = ofFamily.map(pexInput)
      const result = pex.selectFrom(single, inputs as string[], { holderDIDs: [holderDid] })
      if (result.areRequiredCredentialsPresent === 'error') continue
      // PEX 4.1.0 leaves vcIndexes undefined; map what it selected back to what the wallet holds
      const picked = new Set(
        (result.verifiableCredential ?? []).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))),
      )
      for (const [i, credential] of ofFamily.entries()) {
        const input = inputs[i]
        if (picked.has(typeof input === 'string' ? input : JSON.stringify(input))) selected.add(credential)
      }
    }
    const candidates = newestFirst.filter((c) => selected.has(c))
    return {
      id: descriptor.id,
      ...(descriptor.name !== undefined && { name: descriptor.name }),
      ...(descriptor.purpose !== undefined && { purpose: descriptor.purpose }),
      candidates,
    }
  })
}

interface Need {
  /** descriptor ids to answer */
  chosen: string[]
  /** descriptor ids that would be needed but have no candidate */
  missing: string[]
  satisfied: boolean
}

function pickCount(requirement: SubmissionRequirement): number {
  return requirement.count ?? requirement.min ?? 1
}

function evaluateRequirement(
  requirement: SubmissionRequirement,
  descriptors: InputDescriptor[],
  matched: ReadonlySet<string>,
): Need {
  if (requirement.from !== undefined) {
    const group = descriptors.filter((d) => d.group?.includes(requirement.from as string)).map((d) => d.id)
    const available = group.filter((id) => matched.has(id))
    const missing = group.filter((id) => !matched.has(id))
    if (requirement.rule === 'all') return { chosen: group, missing, satisfied: missing.length === 0 }
    const need = pickCount(requirement)
    return {
      chosen: available.slice(0, need),
      missing: available.length >= need ? [] : missing,
      satisfied: available.length >= need,
    }
  }
  const nested = (requirement.from_nested ?? []).map((r) => evaluateRequirement(r, descriptors, matched))
  if (requirement.rule === 'all') {
    return {
      chosen: nested.flatMap((n) => n.chosen),
      missing: nested.flatMap((n) => n.missing),
      satisfied: nested.every((n) => n.satisfied),
    }
  }
  const ok = nested.filter((n) => n.satisfied)
  const need = pickCount(requirement)
  return {
    chosen: ok.slice(0, need).flatMap((n) => n.chosen),
    missing: ok.length >= need ? [] : nested.filter((n) => !n.satisfied).flatMap((n) => n.missing),
    satisfied: ok.length >= need,
  }
}

/**
 * The descriptors to answer: all of them without submission_requirements; else, per requirement, the whole
 * group (`all`) or the first `count`/`min` descriptors that have candidates (`pick`).
 */
export function chooseDescriptors(
  definition: IPresentationDefinition,
  matches: DescriptorMatch[],
): { chosen: string[]; unmatched: string[] } {
  const descriptors = descriptorsOf(definition)
  const matched = new Set(matches.filter((m) => m.candidates.length > 0).map((m) => m.id))
  const requirements = (definition as { submission_requirements?: SubmissionRequirement[] })
    .submission_requirements
  if (!requirements || requirements.length === 0) {
    const all = descriptors.map((d) => d.id)
    return { chosen: all, unmatched: all.filter((id) => !matched.has(id)) }
  }
  const needs = requirements.map((r) => evaluateRequirement(r, descriptors, matched))
  const unique = (ids: string[]) => [...new Set(ids)]
  const unmatched = unique(needs.filter((n) => !n.satisfied).flatMap((n) => n.missing))
  // keep definition order
  const chosen = new Set(needs.flatMap((n) => n.chosen))
  return { chosen: descriptors.map((d) => d.id).filter((id) => chosen.has(id)), unmatched }
}

/**
 * Chooses what to present. `pick` may replace the newest candidate of one descriptor (the 'revoked-credential'
 * misbehaviour does); it answers undefined to keep it. Throws NoMatchingCredentialsError naming every
 * unmatched descriptor, or a WalletUsageError when PEX does not accept the chosen set as a whole.
 */
export async function selectCredentials(
  definition: IPresentationDefinition,
  held: StoredCredential[],
  holderDid: string,
  pick?: (
    chosen: { descriptorId: string; credential: StoredCredential }[],
    matches: DescriptorMatch[],
  ) => Promise<{ descriptorId: string; credential: StoredCredential }[]>,
): Promise<Selection> {
  const matches = await matchDescriptors(definition, held, holderDid)
  const { chosen: ids, unmatched } = chooseDescriptors(definition, matches)
  const definitionId = String(definition.id)
  if (unmatched.length > 0) {
    const byId = new Map(descriptorsOf(definition).map((d) => [d.id, d]))
    const heldFamilies = [...new Set(held.map(familyOf))]
    const names = unmatched.map((id) => {
      const descriptor = byId.get(id)
      // a format problem when no format the wallet holds fits the descriptor
      const problems = descriptor
        ? heldFamilies.map((family) => formatProblem(definition, descriptor, family))
        : []
      const problem =
        problems.length > 0 && problems.every((p) => p !== undefined) ? problems.join('; ') : undefined
      return `${descriptor ? describe(descriptor) : id}${problem ? ` [format: ${problem}]` : ''}`
    })
    throw new NoMatchingCredentialsError(
      `no held credential satisfies input descriptor${unmatched.length > 1 ? 's' : ''} ${names.join(', ')} of presentation definition ${definitionId} (the wallet holds ${held.length} credential${held.length === 1 ? '' : 's'})`,
      unmatched,
    )
  }
  let chosen = ids.map((descriptorId) => {
    const match = matches.find((m) => m.id === descriptorId) as DescriptorMatch
    return { descriptorId, credential: match.candidates[0] as StoredCredential }
  })
  if (pick) chosen = await pick(chosen, matches)
  const credentials = [...new Set(chosen.map((c) => c.credential))]
  const { PEX } = await loadPex()
  const check = new PEX().evaluateCredentials(
    evaluationDefinition(definition),
    credentials.map(pexInput) as string[],
    { holderDIDs: [holderDid] },
  )
  if (check.areRequiredCredentialsPresent !== 'info') {
    const reasons = (check.errors ?? []).map((e) => `${e.tag}: ${e.message}`).join('; ')
    throw new WalletUsageError(
      `the chosen credentials do not satisfy presentation definition ${definitionId} (${check.areRequiredCredentialsPresent}): ${reasons || 'no reason given'}`,
    )
  }
  return { definitionId, matches, chosen, credentials }
}

/** The ids of a definition's input descriptors, in definition order. */
export function descriptorIds(definition: IPresentationDefinition): string[] {
  return descriptorsOf(definition).map((d) => d.id)
}
