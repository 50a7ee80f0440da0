import { randomUUID } from 'node:crypto'
import { signJwtVc } from '../../formats/jwt-vc/issue.ts'
import { KNOWN_CONTEXTS } from '../../formats/ldp-vc/contexts.ts'
import { signSdJwtVc } from '../../formats/sd-jwt-vc/issue.ts'
import type { FormatModule, StatusAllocation } from '../../formats/types.ts'
import { isObject } from '../../shared/json.ts'
import { MDL_DOCTYPE } from '../../shared/mdoc.ts'
import type { IssuanceTemplate } from '../config/schema.ts'
import type { SigningKey } from '../crypto/issuer-certificates.ts'
import { AppError } from '../errors/problem.ts'
import type { IssuedCredential, JwtProof, PreparedCredential, TemplateRecord } from '../store/types.ts'
import type { PublicUrls } from '../util/urls.ts'

// Credential objects of section 2.3: validation and defaults (rules 1–3), then signing in the template's
// format (src/formats/<format>/issue.ts).

export const VC_V1_CONTEXT = 'https://www.w3.org/2018/credentials/v1'
const ALLOWED_FIELDS = new Set([
  '@context',
  'id',
  'type',
  'issuer',
  'issuanceDate',
  'validFrom',
  'expirationDate',
  'validUntil',
  'credentialSubject',
  'credentialStatus',
  'credentialSchema',
  'evidence',
  'name',
  'description',
  'termsOfUse',
  'refreshService',
])
const IDENTITY_TYPES = new Set(['VerifiableId', 'VerifiableID'])
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
const URI = /^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$/
export const MAX_CREDENTIALS_PER_SUBMISSION = 20

export type { PreparedCredential }

type Problem = { field: string; message: string }

const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x.length > 0)

function checkOne(input: unknown, at: string, template: IssuanceTemplate, problems: Problem[]) {
  const bad = (field: string, message: string) => problems.push({ field: `${at}${field}`, message })
  if (!isObject(input)) return bad('', 'must be a credential object')
  for (const key of Object.keys(input)) if (!ALLOWED_FIELDS.has(key)) bad(`/${key}`, 'unknown field')
  if (input.credentialStatus !== undefined) bad('/credentialStatus', 'is filled by the service; leave it out')
  if (!isObject(input.credentialSubject)) bad('/credentialSubject', 'is required and must be an object')
  else if (Object.keys(input.credentialSubject).filter((k) => k !== 'id').length === 0) {
    bad('/credentialSubject', 'must hold at least one claim besides id')
  } else if (input.credentialSubject.id !== undefined && typeof input.credentialSubject.id !== 'string') {
    bad('/credentialSubject/id', 'must be a DID string')
  }
  const schema = input.credentialSchema
  if (schema !== undefined) {
    const schemas = Array.isArray(schema) ? schema : [schema]
    if (
      !schemas.every(
        (s) => isObject(s) && typeof s.id === 'string' && URI.test(s.id) && typeof s.type === 'string',
      )
    ) {
      bad('/credentialSchema', 'must be an object (or array of objects) with id (URL) and type')
    }
  }
  if (input.type === undefined) {
    if (schema === undefined) bad('/type', 'is required unless credentialSchema is given')
  } else if (!isStringArray(input.type)) {
    bad('/type', 'must be a non-empty array of strings')
  } else if (input.type[0] !== 'VerifiableCredential') {
    bad('/type', 'must start with "VerifiableCredential"')
  } else if (schema === undefined && input.type.at(-1) !== template.credentialType) {
    bad('/type', `must end with this template's credential type "${template.credentialType}"`)
  }
  if (input['@context'] !== undefined) {
    if (!isStringArray(input['@context'])) bad('/@context', 'must be a non-empty array of strings')
    else if (input['@context'][0] !== VC_V1_CONTEXT) bad('/@context', `must start with "${VC_V1_CONTEXT}"`)
    else if (template.format === 'ldp_vc') {
      // An ldp_vc is signed over its JSON-LD expansion, processed offline: every context must be bundled.
      const unknown = input['@context'].find((c) => !KNOWN_CONTEXTS.has(c))
      if (unknown !== undefined)
        bad(
          '/@context',
          `"${unknown}" is not a context this issuer has (ldp_vc contexts are processed offline; docs/issuance.md lists them)`,
        )
    }
  }
  if (input.id !== undefined && (typeof input.id !== 'string' || !URI.test(input.id)))
    bad('/id', 'must be a URI')
  for (const field of ['issuanceDate', 'validFrom', 'expirationDate', 'validUntil']) {
    const value = input[field]
    if (
      value !== undefined &&
      (typeof value !== 'string' || !DATE_TIME.test(value) || Number.isNaN(Date.parse(value)))
    ) {
      bad(`/${field}`, 'must be an ISO 8601 date-time with a time zone')
    }
  }
  if (input.issuer !== undefined && typeof input.issuer !== 'string' && !isObject(input.issuer)) {
    bad('/issuer', 'must be a DID or an object with id')
  }
  if (input.evidence !== undefined && !isObject(input.evidence) && !Array.isArray(input.evidence)) {
    bad('/evidence', 'must be an object or an array')
  }
}

function typeWithSchema(input: Record<string, unknown>, template: IssuanceTemplate): string[] {
  // Section 2.3: with a credentialSchema the type becomes VerifiableID (identity credentials) or
  // VerifiableAttestation; the template's type stays last, so verifiers still match on it.
  const given = isStringArray(input.type) ? input.type : []
  const all = [...given, template.credentialType]
  const base = all.some((t) => IDENTITY_TYPES.has(t)) ? 'VerifiableID' : 'VerifiableAttestation'
  const middle = given.filter(
    (t) => t !== 'VerifiableCredential' && t !== base && t !== template.credentialType,
  )
  return [...new Set(['VerifiableCredential', base, ...middle, template.credentialType])]
}

/**
 * Validates submitted credential objects and applies the defaults of rule 1. Throws 400
 * `invalid_credential` naming every problem; nothing is stored then.
 */
export function prepareCredentials(
  input: unknown,
  template: IssuanceTemplate,
  known: { issuerDid: string; holderDid: string | null },
): PreparedCredential[] {
  if (!Array.isArray(input) || input.length === 0) {
    throw new AppError('invalid_credential', 'body must be a non-empty array of credential objects', {
      errors: [{ field: 'body', message: 'must be a non-empty array' }],
    })
  }
  if (input.length > MAX_CREDENTIALS_PER_SUBMISSION) {
    throw new AppError(
      'invalid_credential',
      `at most ${MAX_CREDENTIALS_PER_SUBMISSION} credentials per submission`,
      {
        errors: [{ field: 'body', message: `has ${input.length} items` }],
      },
    )
  }
  const problems: Problem[] = []
  for (const [i, item] of input.entries()) {
    checkOne(item, `body/${i}`, template, problems)
    if (!isObject(item)) continue
    const issuer = isObject(item.issuer) ? item.issuer.id : item.issuer
    if (issuer !== undefined && issuer !== known.issuerDid) {
      problems.push({
        field: `body/${i}/issuer`,
        message: `must be this template's issuer DID ${known.issuerDid} (or left out)`,
      })
    }
    const subject = isObject(item.credentialSubject) ? item.credentialSubject.id : undefined
    const alreadyFlagged = problems.some((p) => p.field.startsWith(`body/${i}/credentialSubject`))
    if (
      typeof subject === 'string' &&
      !alreadyFlagged &&
      known.holderDid !== null &&
      subject !== known.holderDid
    ) {
      problems.push({
        field: `body/${i}/credentialSubject/id`,
        message: `must be the holder the wallet proved, ${known.holderDid} (or left out)`,
      })
    }
  }
  const ids = input.map((c) => (isObject(c) ? c.id : undefined)).filter((id) => id !== undefined)
  if (new Set(ids).size !== ids.length)
    problems.push({ field: 'body', message: 'credential ids must be unique' })
  if (problems.length > 0) {
    throw new AppError('invalid_credential', problems.map((p) => `${p.field}: ${p.message}`).join('; '), {
      errors: problems,
    })
  }
  return (input as Record<string, unknown>[]).map((c) => {
    const { credentialStatus: _ignored, ...rest } = c
    return {
      ...rest,
      '@context': (c['@context'] as string[] | undefined) ?? [VC_V1_CONTEXT],
      id: typeof c.id === 'string' ? c.id : `urn:uuid:${randomUUID()}`,
      type: c.credentialSchema !== undefined ? typeWithSchema(c, template) : (c.type as string[]),
      credentialSubject: { ...(c.credentialSubject as Record<string, unknown>) },
    }
  })
}

const seconds = (iso: string) => Math.floor(Date.parse(iso) / 1000)
/** The `vct` of an SD-JWT VC template: its own, or one under the tenant's credential issuer. */
export function vctOf(template: TemplateRecord<'issuance'>, urls: PublicUrls): string {
  return template.body.vct ?? urls.defaultVct(template.tenantId, template.body.credentialType)
}

/** The doctype of an mso_mdoc template: its own, or the mDL's. */
export const doctypeOf = (template: TemplateRecord<'issuance'>): string =>
  template.body.doctype ?? MDL_DOCTYPE

/** How a template names what it issues, in every format's terms (metadata, draft-13/14 requests). */
export const namingOf = (template: TemplateRecord<'issuance'>, urls: PublicUrls) => ({
  credentialType: template.body.credentialType,
  vct: vctOf(template, urls),
  doctype: doctypeOf(template),
})

export const vcTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

export type { JwtProof }

/**
 * The credential as a wallet receives it (OpenID4VCI 1.0 §8.3 `credential`): a JWT-secured one as its
 * compact form, an mdoc as its base64url IssuerSigned (Appendix A.2.4), an ldp_vc as the JSON object with
 * its embedded proof.
 */
export function wireCredential(issued: IssuedCredential): string | Record<string, unknown> {
  return encodedOf(issued) ?? issued
}

/** The encoded form of a credential (jwt_vc_json, dc+sd-jwt: compact JWS; mso_mdoc: base64url CBOR); undefined for an ldp_vc. */
export function encodedOf(issued: { proof: IssuedCredential['proof'] }): string | undefined {
  const { proof } = issued
  if ('jwt' in proof && typeof proof.jwt === 'string') return proof.jwt
  return 'mdoc' in proof && typeof proof.mdoc === 'string' ? proof.mdoc : undefined
}

interface SigningInput {
  holderDid: string
  key: SigningKey
  status: Record<string, unknown>
  now: number
  validityDays?: number | undefined
}

/**
 * A prepared credential completed for `holderDid` (rule 3), whatever the format: the issuer is the signing
 * DID (an issuer object keeps its other members), the dates are filled in, the status entry is set.
 */
function complete(prepared: PreparedCredential, input: SigningInput) {
  const subjectId = holderConflict([prepared], input.holderDid)
  if (subjectId !== undefined)
    throw new Error(`credentialSubject.id ${subjectId} is not the holder ${input.holderDid}`)
  const issuanceDate = (prepared.issuanceDate as string | undefined) ?? vcTime(input.now)
  const expirationDate =
    (prepared.expirationDate as string | undefined) ??
    (input.validityDays ? vcTime(input.now + input.validityDays * 86_400_000) : undefined)
  const credential: PreparedCredential = {
    ...prepared,
    issuer: isObject(prepared.issuer) ? { ...prepared.issuer, id: input.key.did } : input.key.did,
    issuanceDate,
    ...(expirationDate ? { expirationDate } : {}),
    credentialSubject: { ...prepared.credentialSubject, id: input.holderDid },
    credentialStatus: input.status,
  }
  const notBefore = seconds((prepared.validFrom as string | undefined) ?? issuanceDate)
  return { credential, notBefore, expires: expirationDate ? seconds(expirationDate) : undefined }
}

type FormatInput = Omit<SigningInput, 'status'> & {
  vct: string
  disclosable?: readonly string[] | undefined
  /** ldp_vc: the template's Linked Data proof type. */
  proofType?: string | undefined
  /** mso_mdoc: the template's doctype (signed by the key's document signer certificate). */
  doctype?: string | undefined
}

/** Completes `prepared` for its holder with `status` (rule 3): what a format's signer signs. */
function issueInput(prepared: PreparedCredential, input: FormatInput, status: Record<string, unknown>) {
  const completed = complete(prepared, { ...input, status })
  return {
    ...completed,
    holderDid: input.holderDid,
    key: input.key,
    now: input.now,
    vct: input.vct,
    disclosable: input.disclosable,
    ...(input.proofType !== undefined && { proofType: input.proofType }),
    ...(input.key.mdocChain !== undefined && {
      mdoc: {
        docType: input.doctype ?? MDL_DOCTYPE,
        signer: { privateKey: input.key.privateKey, x5chain: input.key.mdocChain },
      },
    }),
  }
}

/**
 * Completes a prepared credential for `holderDid` (rule 3) and signs it in `format` (its signer is the
 * format's: src/formats/<format>/issue.ts), the status entry in the format's form.
 */
export async function signIn(
  format: FormatModule,
  prepared: PreparedCredential,
  input: FormatInput & { status: StatusAllocation },
): Promise<IssuedCredential> {
  const { issuance } = format
  const signing = issueInput(prepared, input, issuance.statusEntry(input.status))
  try {
    return (await issuance.sign(signing)) as IssuedCredential
  } catch (error) {
    // What the submitter wrote cannot be signed (an ldp_vc whose JSON-LD safe mode refuses a term): a 400,
    // and the caller's transaction leaves nothing half-issued.
    throw new AppError(
      'invalid_credential',
      `the credential cannot be signed as ${format.id}: ${(error as Error).message}`,
    )
  }
}

/**
 * Completes a prepared credential for `holderDid` (rule 3) and signs it as a jwt_vc_json JWT (tests and
 * benches sign this way). Returns the credential object (with its proof, as the process shows it) and the JWT.
 */
export function signCredential(
  prepared: PreparedCredential,
  input: SigningInput,
): { credential: IssuedCredential; jwt: string } {
  const signed = signJwtVc(issueInput(prepared, { ...input, vct: '' }, input.status))
  return { credential: signed.credential as IssuedCredential, jwt: signed.jwt }
}

/** signIn for dc+sd-jwt with a status entry already in its form (tests and benches sign this way). */
export function signSdJwtCredential(prepared: PreparedCredential, input: SigningInput & FormatInput) {
  return signSdJwtVc(issueInput(prepared, input, input.status)) as Promise<
    IssuedCredential & { proof: JwtProof }
  >
}

export function holderConflict(prepared: PreparedCredential[], holderDid: string): string | undefined {
  return prepared
    .map((c) => c.credentialSubject.id)
    .find((id): id is string => id !== undefined && id !== holderDid) as string | undefined
}
