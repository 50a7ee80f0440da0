import { createHash } from 'node:crypto'
import { JWS_ALGS, type JwsAlg } from '../../shared/did-key.ts'
import { signJws } from '../../shared/jws.ts'
import type { ResolvedVerificationTemplate } from '../config/schema.ts'
import type { TenantKey } from '../crypto/tenant-keys.ts'

// The presentation definition of section 2.8, built from a verification template: DIF Presentation
// Exchange 2.0 plus the interface's `dataAgreement` and `proof`.

export const MANDATORY_GROUP = 'mandatory'
/**
 * Formats named by the interface (2.8) plus the JWT VC names PEX matches Veramo-style credentials on, and
 * `ldp_vc` (PE v2's name for 2.8's `ldp`). The Linked Data proof types are 2.8's four and Data Integrity
 * (`DataIntegrityProof`: the eddsa-rdfc-2022 and ecdsa-rdfc-2019 cryptosuites), all verified
 * (src/formats/ldp-vc/).
 */
const LDP_PROOF_TYPES = [
  'JsonWebSignature2020',
  'Ed25519Signature2018',
  'EcdsaSecp256k1Signature2019',
  'RsaSignature2018',
  'DataIntegrityProof',
]
export const DEFINITION_FORMAT = {
  jwt: { alg: [...JWS_ALGS] },
  jwt_vc: { alg: [...JWS_ALGS] },
  jwt_vc_json: { alg: [...JWS_ALGS] },
  jwt_vp: { alg: [...JWS_ALGS] },
  jwt_vp_json: { alg: [...JWS_ALGS] },
  ldp: { proof_type: LDP_PROOF_TYPES },
  ldp_vc: { proof_type: LDP_PROOF_TYPES },
  ldp_vp: { proof_type: LDP_PROOF_TYPES },
}
const DATA_AGREEMENT_CONTEXT =
  'https://raw.githubusercontent.com/decentralised-dataexchange/data-exchange-agreements/main/interface-specs/jsonld/contexts/dexa-context.jsonld'

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * RFC 8785-style canonical JSON (sorted keys): what the definition and agreement proofs sign. Built with
 * one string and the default sort (UTF-16 code units, as `<` compares): it runs three times per session.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) {
      // as Array.prototype.join writes an element without JSON (undefined, a function): nothing
      out += `${i === 0 ? '' : ','}${canonicalJson(value[i]) ?? ''}`
    }
    return `${out}]`
  }
  const object = value as Record<string, unknown>
  let out = '{'
  for (const key of Object.keys(object).sort()) {
    const v = object[key]
    if (v === undefined) continue
    out += `${out.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(v)}`
  }
  return `${out}}`
}

/** A detached compact JWS (`header..signature`) over the canonical JSON of `value`. */
export function detachedJws(value: unknown, key: TenantKey<JwsAlg>): string {
  const jws = signJws(
    { alg: key.alg, kid: key.kid, b64: true, typ: 'JOSE' },
    { canonical: canonicalJson(value) },
    key.privateKey,
  )
  const [header, , signature] = jws.split('.')
  return `${header}..${signature}`
}

/** The payload a detached proof signed; verifiers rebuild it to check the signature. */
export function detachedPayload(value: unknown): string {
  return Buffer.from(JSON.stringify({ canonical: canonicalJson(value) }), 'utf8').toString('base64url')
}

export interface DefinitionInput {
  sessionId: string
  template: ResolvedVerificationTemplate
  /** Template record's last update: part of the data agreement's template_version. */
  templateUpdatedAt: number
  trustedIssuers: readonly string[]
  verifier: TenantKey<JwsAlg>
  nonce: string
  /** data_receiver.url and proof domain. */
  receiverUrl: string
  now: number
}

interface Requested {
  type: string
  group: string
  purpose: string | undefined
}

function requestedCredentials(t: ResolvedVerificationTemplate): Requested[] {
  return [
    ...t.credentialTypes.map((type) => ({ type, group: MANDATORY_GROUP, purpose: t.purpose })),
    ...(t.optionalGroups ?? []).flatMap((g) =>
      g.credentialTypes.map((type) => ({ type, group: g.name, purpose: g.purpose ?? t.purpose })),
    ),
  ]
}

const fieldsFor = (
  t: ResolvedVerificationTemplate,
  type: string,
): NonNullable<ResolvedVerificationTemplate['requestedFields']> =>
  (t.requestedFields ?? []).filter((f) => !f.credentialTypes || f.credentialTypes.includes(type))

/** Descriptor ids are the type for the mandatory group and `group.type` for the others: unique per definition. */
export const descriptorId = (r: { type: string; group: string }) =>
  r.group === MANDATORY_GROUP ? r.type : `${r.group}.${r.type}`

function inputDescriptor(t: ResolvedVerificationTemplate, r: Requested, trusted: readonly string[]) {
  const issuerPattern = `^(${trusted.map(escapeRegex).join('|')})$`
  return {
    id: descriptorId(r),
    name: r.type,
    ...(r.purpose ? { purpose: r.purpose } : {}),
    group: [r.group],
    constraints: {
      fields: [
        {
          // "matched by the last element of the type array" (2.8)
          path: ['$.vc.type[-1:]', '$.type[-1:]'],
          purpose: `The credential is a ${r.type}`,
          filter: { type: 'string', const: r.type },
          intent_to_retain: false,
        },
        {
          path: ['$.iss', '$.vc.issuer', '$.issuer', '$.vc.issuer.id', '$.issuer.id'],
          purpose: 'The credential comes from an issuer this relying party trusts',
          filter: { type: 'string', pattern: issuerPattern },
          intent_to_retain: false,
        },
        ...fieldsFor(t, r.type).map((f) => ({
          path: [f.path.replace(/^\$\./, '$.vc.'), f.path],
          ...((f.purpose ?? t.purpose) ? { purpose: f.purpose ?? t.purpose } : {}),
          intent_to_retain: false,
          ...(f.optional ? { optional: true } : {}),
        })),
      ],
      ...(t.requireStatus === false ? {} : { statuses: { active: { directive: 'required' } } }),
    },
  }
}

function submissionRequirements(t: ResolvedVerificationTemplate) {
  return [
    {
      name: MANDATORY_GROUP,
      ...(t.purpose ? { purpose: t.purpose } : {}),
      rule: 'all',
      from: MANDATORY_GROUP,
    },
    ...(t.optionalGroups ?? []).map((g) => ({
      name: g.name,
      ...((g.purpose ?? t.purpose) ? { purpose: g.purpose ?? t.purpose } : {}),
      rule: 'pick',
      min: g.min,
      from: g.name,
    })),
  ]
}

function dataAgreement(input: DefinitionInput, requested: Requested[]) {
  const { template: t, verifier, now } = input
  const personalData = requested.flatMap((r) => {
    const fields = fieldsFor(t, r.type)
    if (fields.length === 0) {
      return [{ attribute_name: r.type, attribute_sensitive: false, purposes: r.purpose ? [r.purpose] : [] }]
    }
    return fields.map((f) => ({
      attribute_name: f.path.split('.').at(-1) as string,
      attribute_sensitive: f.sensitive,
      purposes: [f.purpose ?? t.purpose].filter((p): p is string => typeof p === 'string'),
    }))
  })
  const templateVersion = createHash('sha256')
    .update(canonicalJson({ body: t, updatedAt: input.templateUpdatedAt }))
    .digest('base64url')
    .slice(0, 16)
  const agreement = {
    '@context': [DATA_AGREEMENT_CONTEXT],
    id: `urn:uuid:${input.sessionId}`,
    version: '1.0.0',
    template_id: t.id,
    template_version: templateVersion,
    purposes: t.purpose ? [t.purpose] : null,
    personal_data: personalData,
    data_receiver: {
      id: verifier.did,
      consent_duration: t.consentDurationDays,
      form_of_consent: 'explicit',
      url: input.receiverUrl,
    },
  }
  const proof = {
    type: 'DetachedJws',
    created: new Date(now).toISOString(),
    verificationMethod: verifier.kid,
    proofPurpose: 'authentication',
    domain: input.receiverUrl,
    nonce: input.nonce,
    signatureValue: detachedJws(agreement, verifier),
  }
  return {
    ...agreement,
    event: [
      { principle_did: verifier.did, proof: [proof], state: 'offer', version: '1.0.0', timestamp: now },
    ],
  }
}

/**
 * The definition as a wallet gets it in the request object: DIF Presentation Exchange members only
 * (libraries validate it against the DIF schema, which refuses the interface's `dataAgreement` and
 * `proof`), and only the formats this verifier verifies.
 */
export function difDefinition(definition: Record<string, unknown>): Record<string, unknown> {
  const { dataAgreement: _agreement, proof: _proof, ...dif } = definition
  // The schema refuses a field's `optional` member too (PEX then throws on every evaluation). An optional
  // field constrains nothing, so the wallet's copy leaves it out; the relying party's view keeps it.
  type Descriptor = { constraints: { fields: { optional?: boolean }[] } }
  const descriptors = (dif.input_descriptors as Descriptor[]).map((d) => ({
    ...d,
    constraints: { ...d.constraints, fields: d.constraints.fields.filter((f) => f.optional !== true) },
  }))
  return { ...dif, input_descriptors: descriptors }
}

/**
 * Section 2.8. `proof` is a detached JWS by the verifier over the canonical JSON of the definition
 * without `proof` (docs/verification.md says how to check it).
 */
export function buildDefinition(input: DefinitionInput): Record<string, unknown> {
  const { template: t, verifier } = input
  const requested = requestedCredentials(t)
  const definition = {
    id: input.sessionId,
    name: t.name,
    ...(t.purpose ? { purpose: t.purpose } : {}),
    dataAgreement: dataAgreement(input, requested),
    format: DEFINITION_FORMAT,
    submission_requirements: submissionRequirements(t),
    input_descriptors: requested.map((r) => inputDescriptor(t, r, input.trustedIssuers)),
  }
  const proof = {
    type: 'DetachedJws',
    created: new Date(input.now).toISOString(),
    creator: verifier.kid,
    proofPurpose: 'authentication',
    proofValue: detachedJws(definition, verifier),
  }
  return { ...definition, proof: [proof] }
}
