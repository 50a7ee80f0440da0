import { Given, Then, When } from '@cucumber/cucumber'
import type { Caller, HarnessWorld, Spoiling, TemplateChoice } from './support/world.ts'

type W = HarnessWorld

Given('a tenant of our own', async function (this: W) {
  await this.useOwnTenant()
})

Given('{caller} has logged in', async function (this: W, caller: Caller) {
  await this.logIn(caller)
})

Given("the application's login with a wrong secret was refused", async function (this: W) {
  await this.loginWithWrongSecret('app')
  this.expectProblem(401, 'invalid_credentials')
  this.keep('wrong-secret')
})

When(
  '{caller} logs in naming {template}',
  async function (this: W, caller: Caller, template: TemplateChoice) {
    await this.login(caller, template)
  },
)

When('{caller} logs in with a wrong secret', async function (this: W, caller: Caller) {
  await this.loginWithWrongSecret(caller)
})

When('a key id that does not exist logs in', async function (this: W) {
  await this.loginWithUnknownKeyId()
})

When('{caller} logs in with the tenant id of another tenant', async function (this: W, caller: Caller) {
  await this.loginWithTenant(caller, this.otherTenantId())
})

When('{caller} logs in without the tenant header', async function (this: W, caller: Caller) {
  await this.loginWithoutTenantHeader(caller)
})

When('the application creates an offer with its token', async function (this: W) {
  await this.createOffer(this.token('app'), 'with the application token')
})

When('the application creates an offer without an Authorization header', async function (this: W) {
  await this.createOffer(undefined, 'without an Authorization header')
})

When(
  'the application creates an offer with its token spoiled by {spoiling}',
  async function (this: W, how: Spoiling) {
    await this.createOffer(await this.spoil(this.token('app'), how), `with the application token (${how})`)
  },
)

When("the application's token expires", function (this: W) {
  this.passTokenExpiry('app')
})

When("the administrator revokes the application's key", async function (this: W) {
  await this.revoke('app')
})

When('{caller} lists the issuance processes', async function (this: W, caller: Caller) {
  await this.listProcesses(caller)
})

Then('the answer is HTTP {int}', function (this: W, status: number) {
  this.expectStatus(status)
})

Then('the answer is a {int} problem {string}', function (this: W, status: number, code: string) {
  this.expectProblem(status, code)
})

Then('the answer body is', function (this: W, json: string) {
  this.expectJsonBody(JSON.parse(json))
})

Then('the Token header holds a JWT', function (this: W) {
  this.expectJwtHeader('token')
})

Then('the {word} header is {string}', function (this: W, name: string, value: string) {
  this.expectHeader(name, (v) => v === value, JSON.stringify(value))
})

Then('the answer holds a credential_offer_uri', function (this: W) {
  this.expectBodyString('credential_offer_uri')
})

Then('its body is byte-identical to the wrong-secret answer', function (this: W) {
  this.expectSameBodyAs('wrong-secret')
})
