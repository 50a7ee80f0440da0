import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'

// ajv-formats is CommonJS; its default export differs between loaders.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv

/** An Ajv instance with the standard formats (uri, uuid, date-time, …). */
export function newAjv(options: Options): Ajv {
  return addFormats(new Ajv({ strict: false, ...options }))
}
