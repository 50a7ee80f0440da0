import { Given, Then, When } from '@cucumber/cucumber'
import type { IssuanceProtocol, Misbehaviour } from '../src/wallet/index.ts'
import type { StatusType } from './support/sd-jwt-vc.ts'
import type { HarnessWorld } from './support/world.ts'

type W = HarnessWorld

// OpenID4VCI 1.0 discovery and requests of every wallet generation (features/issuance/openid4vci-1.0.feature),
// SD-JWT VC issuance and its Token Status List (features/issuance/sd-jwt-vc.feature).

// Offers and the wallet

Given('an offer for the SD-JWT VC template', async function (this: W) {
  await this.issuance.openSdJwtOffer()
})

When('a wallet speaking {issuanceProtocol} scans the offer', async function (this: W, p: IssuanceProtocol) {
  await this.issuance.scan('Ed25519', p)
})

When(
  'the wallet requests another configuration of the issuer misbehaving with {misbehaviour}',
  async function (this: W, m: Misbehaviour) {
    await this.issuance.requestCredential([m], this.tenant.otherTemplate)
  },
)

// Further credential requests on one access token (OpenID4VCI 1.0 §14.3)

When('the wallet requests the credential again', async function (this: W) {
  await this.issuance.requestCredentialAgain()
})

When(
  'the wallet requests the credential again misbehaving with {misbehaviour}',
  async function (this: W, m: Misbehaviour) {
    await this.issuance.requestCredentialAgain([m])
  },
)

Then(
  'the further credential is another one for the wallet, with its own notification_id',
  function (this: W) {
    this.issuance.expectFurtherCredential()
  },
)

Then('the wallet is told to come back later with the same transaction id', function (this: W) {
  this.issuance.expectSameTransaction()
})

Given('the wallet holds the SD-JWT VC', async function (this: W) {
  await this.issuance.receive()
  this.sdJwt.expectReceived()
})

Given('the relying party has {word} the SD-JWT VC', async function (this: W, change: string) {
  if (change !== 'revoked' && change !== 'suspended') throw new Error(`unknown status change "${change}"`)
  await this.issuance.setStatus(change)
})

// Discovery

When('the issuer metadata is read at its OpenID4VCI 1.0 location', async function (this: W) {
  await this.issuance.readIssuerMetadata()
})

When('the authorization server metadata is read at its RFC 8414 location', async function (this: W) {
  await this.issuance.readAuthorizationServerMetadata()
})

Then("the metadata names the offer's credential issuer", function (this: W) {
  this.issuance.expectMetadataOfOfferIssuer()
})

Then('every credential configuration carries credential_metadata', function (this: W) {
  this.issuance.expectCredentialMetadataEverywhere()
})

Then('the authorization server metadata names its issuer and a token endpoint', function (this: W) {
  this.issuance.expectAuthorizationServerMetadata()
})

Then("the SD-JWT VC configuration has format dc+sd-jwt and the template's vct", function (this: W) {
  this.sdJwt.expectConfigurationFormatAndVct()
})

Then('the claims of the SD-JWT VC configuration are addressed by claims path pointers', function (this: W) {
  this.sdJwt.expectClaimsPathPointers()
})

// Credential responses

Then('the credential response holds the credentials and a notification_id', function (this: W) {
  this.issuance.expectCredentialResponseWithNotification()
})

Then("the wallet receives an SD-JWT VC of the template's vct", function (this: W) {
  this.sdJwt.expectReceived()
})

// The SD-JWT VC

Then('the SD-JWT VC is typed dc+sd-jwt', function (this: W) {
  this.sdJwt.expectTyp()
})

Then("the SD-JWT VC carries the template's vct", function (this: W) {
  this.sdJwt.expectVct()
})

Then("the SD-JWT VC is bound to the wallet's key", async function (this: W) {
  await this.sdJwt.expectBoundToHolder()
})

Then("the SD-JWT VC verifies against its issuer's did:key", async function (this: W) {
  await this.sdJwt.verify()
})

Then('the SD-JWT VC discloses the submitted credentialSubject', async function (this: W) {
  await this.sdJwt.expectSubmittedClaims()
})

// Its Token Status List

When("the SD-JWT VC's status list is read", async function (this: W) {
  await this.sdJwt.readStatusList()
})

Then(
  "the status list is a statuslist+jwt of the credential's issuer whose sub is the referenced uri",
  function (this: W) {
    this.sdJwt.expectStatusListToken()
  },
)

Then('the SD-JWT VC reads {statusType} in its status list', function (this: W, status: StatusType) {
  this.sdJwt.expectStatus(status)
})
