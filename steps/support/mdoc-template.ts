import type { IssuanceTemplateInput } from '../../src/client/index.ts'
import { MDL_DOCTYPE, MDL_NAMESPACE, MDOC_FORMAT } from '../../src/shared/mdoc.ts'
import type { FlowWorld } from './world-types.ts'

// The mDL template and content scenarios use, apart from the MdocFlow (mdoc.ts), so the dcql flow can
// create and present an mDL without importing the flow that reads one.

/**
 * The mDL template scenarios create through the portal (OpenID4VCI 1.0 Appendix A.2), as the demo's `mdl`:
 * four elements of the mDL namespace described in the metadata. `doctype` is not in the client's template
 * type yet, hence the intersection.
 */
export const MDL_TEMPLATE: IssuanceTemplateInput & { doctype: string; format: typeof MDOC_FORMAT } = {
  id: 'mdl',
  credentialType: MDL_DOCTYPE,
  format: MDOC_FORMAT,
  doctype: MDL_DOCTYPE,
  signingAlg: 'ES256',
  display: { name: 'Mobile driving licence' },
  claims: [
    { path: `${MDL_NAMESPACE}.family_name`, name: 'Family name' },
    { path: `${MDL_NAMESPACE}.given_name`, name: 'Given name' },
    { path: `${MDL_NAMESPACE}.birth_date`, name: 'Date of birth' },
    { path: `${MDL_NAMESPACE}.age_over_18`, name: 'Over 18' },
  ],
}

/** What the application submits (4.4): the elements grouped by namespace, a full-date and a boolean among them. */
export const MDL_ELEMENTS = {
  [MDL_NAMESPACE]: { family_name: 'Doe', given_name: 'Jane', birth_date: '1990-01-02', age_over_18: true },
}
export const MDL_CONTENT = [{ type: ['VerifiableCredential', MDL_DOCTYPE], credentialSubject: MDL_ELEMENTS }]

/** Creates MDL_TEMPLATE through the portal with the tenant's administrator key. */
export async function createMdlTemplate(world: FlowWorld) {
  if (!world.target.capabilities.has('portal'))
    throw new Error('creating the mDL template needs the portal: tag the scenario @needs-portal')
  const response = await world.client.createIssuanceTemplate(await world.logIn('admin'), MDL_TEMPLATE)
  world.recordAnswer(response, `create the issuance template "${MDL_TEMPLATE.id}" (portal)`)
  world.expectStatus(201)
}
