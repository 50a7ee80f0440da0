import { Given, Then, When } from '@cucumber/cucumber'
import type { LdKeyType } from '../src/formats/ldp-vc/keys.ts'
import type { LdProofType } from '../src/formats/ldp-vc/suites.ts'
import type { HolderKeyType } from '../src/wallet/index.ts'
import type { LdAlteration, LdSigningAlg } from './support/linked-data.ts'
import type { HarnessWorld } from './support/world.ts'

// The interface's Linked Data formats (section 2.8: ldp, ldp_vc, ldp_vp; issue 33): presentations and
// credentials the steps sign themselves (steps/support/linked-data.ts), the tenant's ldp_vc issuance, and the
// simulated wallet answering a Presentation Exchange session with an ldp_vp.

type W = HarnessWorld
type P = LdProofType

Given('a tenant of our own with no template', async function (this: W) {
  await this.useOwnBareTenant()
})

// Holders and credentials

Given(
  'a(n) {ldKeyType} holder of a degree credential signed with {ldProofType} by an issuer of its own',
  async function (this: W, keyType: LdKeyType, proofType: P) {
    await this.linkedData.holdSignedDegree(keyType, proofType)
  },
)

Given(
  'the credential was made out to another DID with {ldProofType}',
  async function (this: W, proofType: P) {
    await this.linkedData.holdSomeoneElsesDegree(proofType)
  },
)

Given('the application has opened a verification session trusting that issuer', async function (this: W) {
  await this.linkedData.openTrustingSession()
})

Given(
  "the application has opened a verification session trusting the tenant's issuers",
  async function (this: W) {
    await this.linkedData.openDegreeCheck()
  },
)

// The holder's presentation

When('the holder posts an ldp_vp signed with {ldProofType}', async function (this: W, proofType: P) {
  await this.linkedData.present({ proofType })
})

When(
  "the holder posts an ldp_vp signed with {ldProofType} whose challenge is not the request's nonce",
  async function (this: W, proofType: P) {
    await this.linkedData.present({ proofType, challenge: 'a-nonce-of-another-request' })
  },
)

When(
  "the holder posts an ldp_vp signed with {ldProofType} whose domain is not the verifier's client_id",
  async function (this: W, proofType: P) {
    await this.linkedData.present({ proofType, domain: 'did:example:another-verifier' })
  },
)

When(
  'the holder posts an ldp_vp signed with {ldProofType} with {ldAlteration} after signing',
  async function (this: W, proofType: P, alteration: LdAlteration) {
    await this.linkedData.present({ proofType }, alteration)
  },
)

When(
  "the holder posts an ldp_vp signed with {ldProofType} by another DID's key",
  async function (this: W, proofType: P) {
    await this.linkedData.presentSignedByAnotherKey(proofType)
  },
)

// The tenant's ldp_vc

Given(
  'the tenant has an ldp_vc issuance template signing with {ldProofType} by its {tenantAlg} key',
  async function (this: W, proofType: P, alg: LdSigningAlg) {
    await this.linkedData.ensureIssuanceTemplate(proofType, alg)
  },
)

When('a holder receives the degree from it over OpenID4VCI', async function (this: W) {
  await this.linkedData.receiveFromTenant(this.linkedData.requireTemplate())
})

When(
  'the holder presents it to the degree check in an ldp_vp signed with {ldProofType}',
  async function (this: W, proofType: P) {
    await this.linkedData.openDegreeCheck()
    await this.linkedData.present({ proofType })
  },
)

Given('the relying party has revoked the ldp_vc', async function (this: W) {
  await this.linkedData.revokeIssued()
})

// The simulated wallet

Given(
  "a(n) {keyType} wallet holds the degree as an ldp_vc signed with {ldProofType} by the tenant's {tenantAlg} key",
  async function (this: W, keyType: HolderKeyType, proofType: P, alg: LdSigningAlg) {
    await this.linkedData.walletHoldsDegree(keyType, proofType, alg)
  },
)

// Expectations

Then('the verifier accepts the presentation', function (this: W) {
  this.linkedData.expectAccepted()
})

Then(
  'the verifier refuses the presentation with HTTP {int} {string}',
  function (this: W, status: number, error: string) {
    this.linkedData.expectRefused(status, error)
  },
)

Then('the session reads 200 VERIFIED for the holder with every check passed', async function (this: W) {
  await this.linkedData.expectVerified(this.linkedData.requireHolder().did)
})

Then(
  'the session reads 200 VERIFIED for the {keyType} wallet with every check passed',
  async function (this: W, keyType: HolderKeyType) {
    await this.linkedData.expectVerified((await this.issuance.wallet(keyType)).did)
  },
)

Then('the session names the format of the submission {word}', function (this: W, format: string) {
  this.linkedData.expectSubmissionFormat(format)
})

Then(
  'securityMechanisms names the ldp_vp and its proof type {ldProofType}',
  function (this: W, proofType: P) {
    this.linkedData.expectPassedCheck('securityMechanisms', `ldp_vp (${proofType})`)
  },
)

Then(
  'the session reads 200 REJECTED with {word} failed because {string}',
  async function (this: W, check: string, reason: string) {
    await this.linkedData.expectRejected(check, reason)
  },
)

Then('its {word} check failed too because {string}', function (this: W, check: string, reason: string) {
  this.linkedData.expectFailedCheck(check, reason)
})

Then('the verifier never fetched the @context', function (this: W) {
  const fetches = this.linkedData.contextFetches
  if (fetches !== 0)
    this.fail(
      `no request for the unknown @context (JSON-LD processed offline); it was fetched ${fetches} time(s)`,
      null,
    )
})

Then(
  "the holder has a JSON ldp_vc for its DID with a {ldProofType} assertionMethod proof by the tenant's issuer and a Bitstring status entry",
  function (this: W, proofType: P) {
    this.linkedData.expectIssuedCredential(proofType)
  },
)

Then(
  'the issuer metadata describes the template as an ldp_vc configuration with its @context, type and {ldProofType}',
  function (this: W, proofType: P) {
    this.linkedData.expectLdpConfiguration(this.linkedData.requireTemplate(), proofType)
  },
)

Then('the process data shows the ldp_vc the holder received, with its proof', async function (this: W) {
  await this.linkedData.expectProcessShowsCredential()
})
