import { jwtVcJsonFormat } from './jwt-vc/index.ts'
import { ldpVcFormat } from './ldp-vc/index.ts'
import { msoMdocFormat } from './mso-mdoc/index.ts'
import { sdJwtVcFormat } from './sd-jwt-vc/index.ts'
import type { FormatModule } from './types.ts'

// The credential formats vc-harness issues, verifies and presents, one folder each. Adding a format is
// a folder beside these and a line here;
// mso-mdoc/ is the ISO mdoc.
// Data Integrity (data-integrity/) is a presentation format only: an OpenID4VCI di_vp key proof, carrying
// jwt_vc_json credentials; ldp-vc/ is the Linked Data credential format with its ldp_vp presentation.

export const FORMATS = [jwtVcJsonFormat, sdJwtVcFormat, ldpVcFormat, msoMdocFormat] as const

/** A credential format's identifier, as templates, the store and the wire name it. */
export type FormatId = (typeof FORMATS)[number]['id']

/** Every format id, in registry order (config schema enums, CLI choices). */
export const FORMAT_IDS: readonly FormatId[] = FORMATS.map((f) => f.id)

/** What a template issues when it names no format (interface section 2.3's credentials are W3C VCs). */
export const DEFAULT_ISSUANCE_FORMAT: FormatId = jwtVcJsonFormat.id
/** What a dcql verification template asks for when it names no format (HAIP's SD-JWT VC). */
export const DEFAULT_DCQL_FORMAT: FormatId = sdJwtVcFormat.id

export const isFormatId = (value: unknown): value is FormatId =>
  typeof value === 'string' && (FORMAT_IDS as readonly string[]).includes(value)

/** The format a wire name stands for (its id or an older alias such as `jwt_vc`, `vc+sd-jwt`), if any. */
export function formatNamed(name: unknown): FormatModule<FormatId> | undefined {
  if (typeof name !== 'string') return undefined
  return FORMATS.find((f) => f.id === name || f.aliases.includes(name))
}

/** The format of a known id. */
export function formatOf(id: FormatId): FormatModule<FormatId> {
  return formatNamed(id) as FormatModule<FormatId>
}

/** The format an issuance template issues (its `format`, or the default). */
export const issuedFormat = (format: FormatId | undefined): FormatModule<FormatId> =>
  formatOf(format ?? DEFAULT_ISSUANCE_FORMAT)
