import { Given, Then, When } from '@cucumber/cucumber'
import type { ClientIdPrefix, ResponseMode } from './support/dcql.ts'
import type { StatusType } from './support/sd-jwt-vc.ts'
import type { HarnessWorld as W } from './support/world.ts'

// ISO mdocs (mso_mdoc; ISO/IEC 18013-5): issuance over OpenID4VCI 1.0 Appendix A.2
// (features/issuance/mdoc.feature) and presentation over OpenID4VP 1.0 Appendix B.2
// (features/verification/mdoc.feature). The mdoc's side: steps/support/mdoc.ts; the protocol flows are the
// issuance and dcql ones (steps/support/issuance.ts, dcql.ts), whose steps the features reuse.

// Issuance: the template, the wallet and the offer

Given('the wallet trusts the IACA the tenant serves', async function (this: W) {
  await this.mdoc.walletTrustsIaca()
})

Given('an offer for the mDL template', async function (this: W) {
  await this.mdoc.openOffer()
})

Given('the application has submitted the mDL', async function (this: W) {
  await this.mdoc.submit()
})

When('the application submits the mDL', async function (this: W) {
  await this.mdoc.submit()
})

Given('a P-256 wallet has received the mDL', async function (this: W) {
  await this.mdoc.receive()
})

Given('a P-256 wallet has requested the mDL and was told to come back later', async function (this: W) {
  await this.mdoc.requestBeforeSubmission()
})

Given('the relying party has {word} the mDL', async function (this: W, change: string) {
  if (change !== 'revoked' && change !== 'suspended') throw new Error(`unknown status change "${change}"`)
  await this.issuance.setStatus(change)
})

When(
  'an Ed25519 holder redeems the offer and requests the mDL with an EdDSA key proof',
  async function (this: W) {
    await this.mdoc.requestWithEdDsaProof()
  },
)

// Issuance: expectations

Then(
  "the mDL configuration has format mso_mdoc, the template's doctype, cose_key binding, COSE algorithm -7 and ES256 key proofs",
  function (this: W) {
    this.mdoc.expectConfiguration()
  },
)

Then('the claims of the mDL configuration are addressed by namespace and element', function (this: W) {
  this.mdoc.expectClaimPaths()
})

Then("the wallet receives an mDL of the template's doctype", function (this: W) {
  this.mdoc.expectReceived()
})

Then("the mDL's issuerAuth verifies to the IACA the tenant serves", async function (this: W) {
  await this.mdoc.expectIssuerAuthVerifiesToServedIaca()
})

Then(
  'the IACA and document signer certificates fit their ISO 18013-5 Annex B profiles',
  async function (this: W) {
    await this.mdoc.expectAnnexBCertificates()
  },
)

Then("the MSO's deviceKey is the wallet's key", async function (this: W) {
  await this.mdoc.expectDeviceKeyOfWallet()
})

Then("the mDL's elements are the submitted namespaces, birth_date a full-date", async function (this: W) {
  await this.mdoc.expectSubmittedElements()
})

Then(
  'every element of the mDL hashes to its value digest in the MSO, each with its own digest ID and salt',
  async function (this: W) {
    await this.mdoc.expectElementDigests()
  },
)

When("the mDL's status list is read", async function (this: W) {
  await this.mdoc.readStatusList()
})

Then('the mDL reads {statusType} in its status list', async function (this: W, status: StatusType) {
  await this.mdoc.expectStatus(status)
})

// Presentation: the wallet, the template and the session (the dcql flow's)

Given('the wallet holds an mDL', async function (this: W) {
  await this.dcql.hold('mdl')
})

Given("the relying party has revoked the wallet's mDL", async function (this: W) {
  await this.dcql.revokeHeld('mdl')
})

Given(
  /^a dcql template asking for the family name of an mDL as mso_mdoc(?:, its verifier named by (decentralized_identifier|x509_san_dns|x509_hash|redirect_uri))?(?:, answered by (direct_post\.jwt|direct_post))?$/,
  async function (this: W, prefix: ClientIdPrefix | undefined, responseMode: ResponseMode | undefined) {
    await this.dcql.defineTemplate({
      ask: 'mDL family name',
      format: 'mso_mdoc',
      ...(prefix && { prefix }),
      ...(responseMode && { responseMode }),
    })
  },
)

Given(
  "the dcql template's trust anchors name only an IACA the tenant does not use",
  async function (this: W) {
    await this.dcql.trustOnlyAnotherIaca()
  },
)

// Presentation: expectations

Then(
  'the DCQL query asks for one mso_mdoc credential of the mDL doctype and only its family_name element',
  function (this: W) {
    this.mdoc.expectDcqlQueryForFamilyName()
  },
)

Then('the wallet disclosed only the family_name element of the mDL', async function (this: W) {
  await this.mdoc.expectOnlyFamilyNameDisclosed()
})

Then('the dcql session shares only the family_name element of the mDL', async function (this: W) {
  await this.mdoc.expectSharedOnlyFamilyName()
})
