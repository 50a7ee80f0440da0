import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { ldProofProblem } from '../../formats/ldp-vc/issue.ts'
import { DEFAULT_DCQL_FORMAT, FORMATS, formatNamed, isFormatId } from '../../formats/registry.ts'
import { originProblem } from '../../shared/dc-api.ts'
import { MDOC_FORMAT } from '../../shared/mdoc.ts'
import { parseCertificates } from '../../shared/x509.ts'
import { configuredIaca, configuredVerifier } from '../crypto/issuer-certificates.ts'
import { newAjv } from '../util/ajv.ts'
import { forbiddenUrl, type TargetPolicy } from '../util/net-targets.ts'
import { dcqlQueryProblems } from '../verification/dcql-query.ts'
import { formatJsonProblem, locateJsonProblem } from './json-position.ts'
import { type ConfigFile, ConfigFile as ConfigFileSchema } from './schema.ts'

export type { ConfigFile, ConfigTenant, IssuanceTemplate, Role, VerificationTemplate } from './schema.ts'

/** Validated configuration with every default applied. */
export type ServiceConfig = ConfigFile

export const DEMO_CONFIG_PATH = join(dirname(fileURLToPath(import.meta.url)), '../../../config/demo.json')

export class ConfigError extends Error {
  override name = 'ConfigError'
}

// Compiled at the first configuration read, and run once per file: neither Ajv's code optimisation nor its check
// of the schema against the meta-schema pays for itself here (in a fresh process the compile takes ~85 ms of CPU
// with them, ~40 ms without). test/service/config/defaults.test.ts checks the schema, strictly, instead.
let validateFile: ValidateFunction<ConfigFile> | undefined
const fileValidator = () =>
  (validateFile ??= newAjv({
    allErrors: true,
    useDefaults: true,
    validateSchema: false,
    code: { optimize: false },
  }).compile<ConfigFile>(ConfigFileSchema))

export function describe(error: ErrorObject): string {
  const at = error.instancePath || '/'
  if (error.keyword === 'additionalProperties') {
    return `${at}: unknown field "${(error.params as { additionalProperty: string }).additionalProperty}"`
  }
  if (error.keyword === 'required') {
    return `${at}: missing field "${(error.params as { missingProperty: string }).missingProperty}"`
  }
  if (error.keyword === 'enum') {
    return `${at}: must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`
  }
  return `${at}: ${error.message}`
}

/** Validates a parsed configuration object, applies defaults, and checks cross-references. */
export function parseConfig(input: unknown, source = 'configuration'): ServiceConfig {
  const config = structuredClone(input)
  const validate = fileValidator()
  if (!validate(config)) {
    const lines = (validate.errors ?? []).map(describe)
    throw new ConfigError(`${source} is invalid:\n  - ${[...new Set(lines)].join('\n  - ')}`)
  }
  const problems: string[] = []
  const keyIds = new Set<string>()
  const tenantIds = new Set<string>()
  config.tenants.forEach((tenant, t) => {
    if (tenantIds.has(tenant.id)) problems.push(`/tenants/${t}/id: duplicate tenant id "${tenant.id}"`)
    tenantIds.add(tenant.id)
    // ssiconfig names a template without saying its kind, so ids are unique across both kinds.
    const templateIds = new Set<string>()
    const templates = [
      ...tenant.issuanceTemplates.map((x, i) => [x.id, `issuanceTemplates/${i}`] as const),
      ...tenant.verificationTemplates.map((x, i) => [x.id, `verificationTemplates/${i}`] as const),
    ]
    for (const [id, path] of templates) {
      if (templateIds.has(id)) problems.push(`/tenants/${t}/${path}/id: duplicate template id "${id}"`)
      templateIds.add(id)
    }
    const withHooks = [
      ...tenant.issuanceTemplates.map((x, i) => [x, `issuanceTemplates/${i}`] as const),
      ...tenant.verificationTemplates.map((x, i) => [x, `verificationTemplates/${i}`] as const),
    ]
    tenant.issuanceTemplates.forEach((template, i) => {
      const problem = issuanceTemplateProblem(template)
      if (problem) problems.push(`/tenants/${t}/issuanceTemplates/${i}/${problem.field}: ${problem.message}`)
    })
    tenant.verificationTemplates.forEach((template, i) => {
      const problem = verificationTemplateProblem(template)
      if (problem)
        problems.push(`/tenants/${t}/verificationTemplates/${i}/${problem.field}: ${problem.message}`)
    })
    if (tenant.mdocIaca) {
      try {
        configuredIaca(tenant.mdocIaca)
      } catch (error) {
        problems.push(`/tenants/${t}/mdocIaca: ${(error as Error).message}`)
      }
    }
    if (tenant.verifierCertificate) {
      try {
        const { chain } = configuredVerifier(tenant.verifierCertificate)
        const sanDns = tenant.verificationTemplates.findIndex(
          (v) => v.dcql?.clientIdPrefix === 'x509_san_dns',
        )
        if (chain.dnsName === '' && sanDns >= 0) {
          problems.push(
            `/tenants/${t}/verificationTemplates/${sanDns}/dcql/clientIdPrefix: x509_san_dns needs a dNSName in the leaf of verifierCertificate, which has none`,
          )
        }
        // A multi-signed DC API request signs under each of its prefixes (OpenID4VP 1.0 Appendix A.3.2).
        const multiSanDns = tenant.verificationTemplates.findIndex(
          (v) =>
            v.dcql?.dcApi?.request === 'multisigned' &&
            (v.dcql.dcApi.clientIdPrefixes ?? []).includes('x509_san_dns'),
        )
        if (chain.dnsName === '' && multiSanDns >= 0) {
          problems.push(
            `/tenants/${t}/verificationTemplates/${multiSanDns}/dcql/dcApi/clientIdPrefixes: x509_san_dns needs a dNSName in the leaf of verifierCertificate, which has none`,
          )
        }
      } catch (error) {
        problems.push(`/tenants/${t}/verifierCertificate: ${(error as Error).message}`)
      }
    }
    for (const [template, path] of withHooks) {
      const problem = webhookProblem(template, config.webhooks.mode)
      if (problem) problems.push(`/tenants/${t}/${path}/${problem.field}: ${problem.message}`)
    }
    tenant.apiKeys.forEach((key, k) => {
      if (keyIds.has(key.id)) problems.push(`/tenants/${t}/apiKeys/${k}/id: duplicate API key id "${key.id}"`)
      keyIds.add(key.id)
      if (key.template !== undefined && !templateIds.has(key.template)) {
        problems.push(
          `/tenants/${t}/apiKeys/${k}/template: no template "${key.template}" in tenant "${tenant.id}"`,
        )
      }
    })
  })
  if (config.listPageSize > config.listMaxPageSize) {
    problems.push('/listPageSize: must not exceed listMaxPageSize')
  }
  if (config.http.headersTimeoutMs > config.http.requestTimeoutMs) {
    problems.push(
      '/http/headersTimeoutMs: must not exceed requestTimeoutMs (the headers are part of the request)',
    )
  }
  config.rateLimits.exempt.forEach((address, i) => {
    if (isIP(address) === 0)
      problems.push(`/rateLimits/exempt/${i}: "${address}" is not an IPv4 or IPv6 address`)
  })
  config.http.trustProxy.forEach((entry, i) => {
    const [address, bits, extra] = entry.split('/')
    const named = ['loopback', 'linklocal', 'uniquelocal'].includes(entry)
    const family = isIP(address ?? '')
    const bitsOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32))
    if (!named && (family === 0 || !bitsOk || extra !== undefined)) {
      problems.push(
        `/http/trustProxy/${i}: "${entry}" is not an address, a CIDR range or one of loopback, linklocal, uniquelocal`,
      )
    }
  })
  if (problems.length > 0) throw new ConfigError(`${source} is invalid:\n  - ${problems.join('\n  - ')}`)
  return config
}

/** Reads, parses and validates a configuration file; throws ConfigError naming the file and field. */
export function loadConfigFile(path: string): ServiceConfig {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`cannot read configuration file ${path}: ${(error as Error).message}`)
  }
  // A byte order mark (some Windows editors write one) is not JSON, but it is no mistake of the author's.
  if (text.startsWith('\ufeff')) text = text.slice(1)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    // JSON.parse names a position for some mistakes only: the scanner finds the line and column.
    const problem = locateJsonProblem(text)
    if (problem) throw new ConfigError(formatJsonProblem(path, problem))
    throw new ConfigError(`${path} is not valid JSON: ${(error as Error).message}`)
  }
  return parseConfig(parsed, path)
}

export const CONFIG_SCHEMA_PATH = join(dirname(DEMO_CONFIG_PATH), 'config.schema.json')

/** The shipped JSON Schema text, derived from the TypeBox definitions so the two cannot drift. */
export function configJsonSchema(): string {
  return `${JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', ...ConfigFileSchema }, null, 2)}\n`
}

/**
 * What is wrong across an issuance template's fields, or undefined (config load and portal). An x5c issuer
 * key is a P-256 leaf of the tenant's test CA (HAIP requires ES256) and only an SD-JWT VC carries it here.
 */
export function issuanceTemplateProblem(template: {
  issuerKeyBinding?: string
  signingAlg?: string
  format?: string
  proofType?: string
  doctype?: string
  keyAttestation?: object
  requiredPresentation?: object
}): { field: string; message: string } | undefined {
  // A required presentation is the key proof (di_vp), and a di_vp proof carries no key attestation
  // (OpenID4VCI 1.0 Appendix F.2 defines none): the two settings cannot both be met.
  if (template.keyAttestation !== undefined && template.requiredPresentation !== undefined) {
    return {
      field: 'keyAttestation',
      message:
        'cannot be combined with requiredPresentation: its di_vp key proof carries no key attestation (OpenID4VCI 1.0 Appendix F)',
    }
  }
  const ldProblem = ldProofProblem(template)
  if (ldProblem) return ldProblem
  const mdocProblem = mdocTemplateProblem(template)
  if (mdocProblem) return mdocProblem
  if (template.issuerKeyBinding !== 'x5c') return undefined
  if ((template.signingAlg ?? 'EdDSA') !== 'ES256') {
    return {
      field: 'signingAlg',
      message: `issuerKeyBinding x5c needs signingAlg ES256 (the test CA certifies P-256 keys), not ${template.signingAlg ?? 'EdDSA'}`,
    }
  }
  const x5cFormats = FORMATS.filter((f) => f.issuance.x5cIssuer).map((f) => f.id)
  if (!x5cFormats.some((id) => id === template.format)) {
    return {
      field: 'format',
      message: `issuerKeyBinding x5c is offered for format ${x5cFormats.join(', ')} only`,
    }
  }
  return undefined
}

/**
 * An mso_mdoc template: its document signer certifies the tenant's P-256 key under the tenant's IACA (ISO
 * 18013-5 Annex B; HAIP: ES256), and `doctype` means nothing to the other formats.
 */
function mdocTemplateProblem(template: {
  format?: string
  signingAlg?: string
  doctype?: string
  issuerKeyBinding?: string
}): { field: string; message: string } | undefined {
  if (template.format !== MDOC_FORMAT) {
    return template.doctype === undefined
      ? undefined
      : { field: 'doctype', message: `is only meaningful with format ${MDOC_FORMAT}` }
  }
  if (template.signingAlg !== 'ES256') {
    return {
      field: 'signingAlg',
      message: `${MDOC_FORMAT} needs signingAlg ES256: a document signer certificate of the tenant's IACA certifies its P-256 key (ISO 18013-5 Annex B, HAIP), not ${template.signingAlg ?? 'EdDSA'}`,
    }
  }
  if (template.issuerKeyBinding === 'x5c') {
    return {
      field: 'issuerKeyBinding',
      message: `${MDOC_FORMAT} always names its document signer by an x5chain to the tenant's IACA; leave issuerKeyBinding out`,
    }
  }
  return undefined
}

/**
 * What is wrong across a verification template's fields, or undefined (config load and portal): the
 * OpenID4VP 1.0 settings belong to the dcql profile, and a request sent by value cannot be fetched by POST.
 */
export function verificationTemplateProblem(template: {
  profile?: string
  trustAnchors?: readonly string[]
  dcql?: {
    format?: string
    clientIdPrefix?: string
    requestUriMethod?: string
    vctValues?: object
    dcApi?: { request?: string; expectedOrigins?: readonly string[]; clientIdPrefixes?: readonly string[] }
  }
  credentialTypes: readonly string[]
  optionalGroups?: readonly { name: string; credentialTypes: readonly string[]; min?: number }[]
  requestedFields?: readonly { path: string; credentialTypes?: readonly string[]; optional?: boolean }[]
}): { field: string; message: string } | undefined {
  const { dcql } = template
  if (template.profile !== 'dcql') {
    if (template.trustAnchors !== undefined) {
      return {
        field: 'trustAnchors',
        message: 'is only meaningful with profile dcql (x5c-certified SD-JWT VC issuers)',
      }
    }
    return dcql === undefined
      ? undefined
      : { field: 'dcql', message: 'is only meaningful with profile dcql (OpenID4VP 1.0)' }
  }
  for (const [i, pem] of (template.trustAnchors ?? []).entries()) {
    try {
      parseCertificates(pem, 'trust anchor')
    } catch (error) {
      return { field: `trustAnchors/${i}`, message: (error as Error).message }
    }
  }
  if (dcql?.clientIdPrefix === 'redirect_uri' && dcql.requestUriMethod === 'post') {
    return {
      field: 'dcql/requestUriMethod',
      message:
        'post needs a request_uri, and a redirect_uri request goes by value, unsigned (OpenID4VP 1.0 §5.9.3)',
    }
  }
  const dcApi = dcql?.dcApi === undefined ? undefined : dcApiProblem(dcql.dcApi, dcql.clientIdPrefix)
  if (dcApi) return dcApi
  if (dcql?.vctValues !== undefined) {
    const format = formatNamed(dcql.format ?? DEFAULT_DCQL_FORMAT)
    if (format?.typedBy !== 'vct') {
      const vctFormats = FORMATS.filter((f) => f.typedBy === 'vct').map((f) => f.id)
      return { field: 'dcql/vctValues', message: `is only meaningful with format ${vctFormats.join(', ')}` }
    }
    const requested = new Set([
      ...template.credentialTypes,
      ...(template.optionalGroups ?? []).flatMap((g) => g.credentialTypes),
    ])
    const stray = Object.keys(dcql.vctValues).find((type) => !requested.has(type))
    if (stray !== undefined) {
      return { field: `dcql/vctValues/${stray}`, message: `"${stray}" is not a requested credential type` }
    }
  }
  // What DCQL cannot express (e.g. an optional group with too many combinations) is refused now, not per session.
  const [problem] = dcqlQueryProblems({
    credentialTypes: template.credentialTypes,
    optionalGroups: template.optionalGroups?.map((g) => ({ ...g, min: g.min ?? 1 })),
    requestedFields: template.requestedFields?.map((f) => ({ ...f, optional: f.optional ?? false })),
    format: isFormatId(dcql?.format) ? dcql.format : DEFAULT_DCQL_FORMAT,
    vctValues: (type) => [`vct:${type}`],
  })
  return problem === undefined ? undefined : { field: 'credentialTypes', message: problem }
}

/**
 * What is wrong with a template's Digital Credentials API settings (OpenID4VP 1.0 Appendix A), the field
 * named under `dcql/dcApi`: a signed request needs a client identifier prefix that signs, a multi-signed one
 * distinct prefixes, and every expected origin must be an origin as a browser writes it (A.2).
 */
function dcApiProblem(
  dcApi: { request?: string; expectedOrigins?: readonly string[]; clientIdPrefixes?: readonly string[] },
  clientIdPrefix: string | undefined,
): { field: string; message: string } | undefined {
  const request = dcApi.request ?? 'signed'
  if (request !== 'unsigned' && clientIdPrefix === 'redirect_uri') {
    return {
      field: 'dcql/dcApi/request',
      message: `${request} needs a client identifier prefix whose requests are signed; dcql.clientIdPrefix redirect_uri signs nothing (OpenID4VP 1.0 §5.9.3): use request unsigned, or another prefix`,
    }
  }
  if (dcApi.clientIdPrefixes !== undefined) {
    if (request !== 'multisigned') {
      return {
        field: 'dcql/dcApi/clientIdPrefixes',
        message: `is only meaningful with request multisigned (a ${request} request ${request === 'signed' ? 'is signed under dcql.clientIdPrefix' : 'is not signed'})`,
      }
    }
    if (new Set(dcApi.clientIdPrefixes).size < 2) {
      return {
        field: 'dcql/dcApi/clientIdPrefixes',
        message:
          'a multi-signed request names at least two distinct client identifier prefixes (OpenID4VP 1.0 Appendix A.3.2); for one, use request signed',
      }
    }
  }
  for (const [i, origin] of (dcApi.expectedOrigins ?? []).entries()) {
    const problem = originProblem(origin)
    if (problem) return { field: `dcql/dcApi/expectedOrigins/${i}`, message: problem }
  }
  return undefined
}

/** What is wrong with a template's webhook settings under `mode`, or undefined (config load and portal). */
export function webhookProblem(
  template: { webhookUrl?: string; webhookSecret?: string; webhookPreviousSecrets?: string[] },
  mode: TargetPolicy,
): { field: string; message: string } | undefined {
  if (template.webhookUrl === undefined) {
    if (template.webhookPreviousSecrets?.length) {
      return { field: 'webhookPreviousSecrets', message: 'is only meaningful with a webhookUrl' }
    }
    return undefined
  }
  const reason = forbiddenUrl(template.webhookUrl, mode)
  if (reason) return { field: 'webhookUrl', message: `${reason}` }
  if (template.webhookSecret === undefined) {
    return { field: 'webhookSecret', message: 'is required with webhookUrl: every delivery is signed' }
  }
  return undefined
}
