import { formatNamed } from '../../formats/registry.ts'
import { OAuthError } from '../errors/oauth.ts'
import { namingOf } from '../issuance/credentials.ts'
import type { TemplateRecord } from '../store/index.ts'
import type { PublicUrls } from '../util/urls.ts'

// Which credential a credential request asks for, in every generation's words: OpenID4VCI 1.0 §8.2 and
// draft 15 name the configuration (`credential_configuration_id`); drafts 13 and 14 describe it instead
// (`format` with `credential_definition` or `vct`). An access token here grants exactly one configuration,
// so a description is mapped to it when it fits, and refused with what did not fit otherwise.

const invalid = (description: string) => new OAuthError('invalid_credential_request', description)

/**
 * The configuration id a request names or describes; `granted` is the one its access token grants, and
 * `identifier` the credential_identifier a token response's authorization_details granted it (§6.2; only an
 * authorization code flow with authorization_details gives one out).
 */
export function requestedConfiguration(
  body: Record<string, unknown>,
  granted: TemplateRecord<'issuance'>,
  urls: PublicUrls,
  identifier?: string,
): string {
  if (body.credential_identifier !== undefined) {
    // OpenID4VCI 1.0 §8.2: the two are exclusive; §8.3.1.2: an identifier the token did not grant is unknown.
    if (body.credential_configuration_id !== undefined)
      throw invalid(
        'send credential_identifier or credential_configuration_id, not both (OpenID4VCI 1.0 §8.2)',
      )
    if (identifier !== undefined && body.credential_identifier === identifier) return granted.id
    throw new OAuthError(
      'unknown_credential_identifier',
      'this credential_identifier was not granted: only a token response with authorization_details grants one; send credential_configuration_id',
    )
  }
  if (body.credential_configuration_id !== undefined) {
    if (typeof body.credential_configuration_id !== 'string') {
      throw invalid('credential_configuration_id must be a string')
    }
    return body.credential_configuration_id
  }
  if (typeof body.format !== 'string') {
    throw invalid(
      'credential_configuration_id is required (OpenID4VCI 1.0 §8.2), or format with credential_definition or vct (drafts 13/14)',
    )
  }
  const { format } = body
  const grantedFormat = granted.body.format
  const describes = `this access token grants "${granted.id}" (${grantedFormat})`
  const named = formatNamed(format)
  if (!named) throw invalid(`format ${JSON.stringify(format)} is not one this issuer offers; ${describes}`)
  // The format reads its own description of the credential: credential_definition.type, or vct.
  const request = named.issuance.legacyRequest(body, format)
  if (typeof request === 'string') throw invalid(request)
  const type = namingOf(granted, urls)
  if (grantedFormat !== named.id || !request.names(type)) {
    throw invalid(`format ${format} ${request.shown} does not describe what ${describes}`)
  }
  return granted.id
}
