import { Given, Then, When } from '@cucumber/cucumber'
import {
  type PortalAction,
  type ProcessAction,
  type Role,
  type RpRequest,
  security,
  type TemplateAction,
  type TemplateKind,
} from './support/security.ts'
import type { Caller, HarnessWorld } from './support/world.ts'

type W = HarnessWorld

// Issuance processes

Given("another tenant's application has read a process id that does not exist", async function (this: W) {
  await security(this).otherReadsUnknownProcess()
})

Given('its application has read the process', async function (this: W) {
  await security(this).snapshotProcess()
})

Given("another tenant's application has opened an offer", async function (this: W) {
  await security(this).otherOpensOffer()
})

Given('the administrator has counted the PENDING processes', async function (this: W) {
  await security(this).countPending()
})

When(
  "another tenant's {role} tries to {processAction} the process",
  async function (this: W, role: Role, action: ProcessAction) {
    await security(this).otherActsOnProcess(role, action)
  },
)

When(
  '{caller} tries to {processAction} the process',
  async function (this: W, caller: Caller, action: ProcessAction) {
    await security(this).actsOnProcess(caller, action)
  },
)

When('{caller} tries to open an offer', async function (this: W, caller: Caller) {
  await security(this).openOfferAs(caller)
})

When("another tenant's administrator lists the PENDING processes", async function (this: W) {
  await security(this).otherListsPending()
})

When('the application submits {int} degree credentials', async function (this: W, count: number) {
  await security(this).submitMany(count)
})

When(
  'the administrator lists the processes with the query {string}',
  async function (this: W, query: string) {
    await security(this).listWithQuery(query)
  },
)

// Verification sessions and the wallet-facing endpoints

When('{caller} tries to read the session', async function (this: W, caller: Caller) {
  await security(this).actsOnSession(caller)
})

When("a wallet fetches the session's request object under another tenant's path", async function (this: W) {
  await security(this).fetchRequestUnderOtherTenant()
})

When("the wallet answers with a refusal under another tenant's path", async function (this: W) {
  await security(this).postRefusal({ underOtherTenant: true })
})

When('the wallet posts its refusal padded to {int} KiB', async function (this: W, kib: number) {
  await security(this).postRefusal({ padKiB: kib })
})

When('the wallet posts its refusal as JSON', async function (this: W) {
  await security(this).postRefusal({ json: true })
})

When("a wallet fetches the offer under another tenant's issuer", async function (this: W) {
  await security(this).fetchOfferUnderOtherTenant()
})

When(
  "the wallet redeems the pre-authorized code at another tenant's token endpoint",
  async function (this: W) {
    await security(this).sendTokenRequest({ underOtherTenant: true })
  },
)

When('the wallet sends its token request padded to {int} KiB', async function (this: W, kib: number) {
  await security(this).sendTokenRequest({ padKiB: kib })
})

When('the wallet sends its token request as JSON', async function (this: W) {
  await security(this).sendTokenRequest({ json: true })
})

When(
  "the wallet sends a credential request with its access token to another tenant's credential endpoint",
  async function (this: W) {
    await security(this).credentialRequestAtOtherTenant()
  },
)

// The portal

When("another tenant's administrator tries to revoke the application's key", async function (this: W) {
  await security(this).revokeAppKeyAs('other admin')
})

When("the operator tries to revoke the application's key", async function (this: W) {
  await security(this).revokeAppKeyAs('operator')
})

When("another tenant's administrator lists its API keys", async function (this: W) {
  await security(this).otherListsKeys()
})

Given(
  'the administrator has created its own {templateKind} template with a fresh id',
  async function (this: W, kind: TemplateKind) {
    await security(this).createOwnTemplate(kind)
  },
)

When(
  "another tenant's administrator tries to {templateAction} that template",
  async function (this: W, action: TemplateAction) {
    await security(this).otherActsOnTemplate(action)
  },
)

When(
  "another tenant's administrator tries to create an application key linked to that template",
  async function (this: W) {
    await security(this).otherLinksKeyToOurTemplate()
  },
)

When(
  'the application tries to {portalAction} through the portal',
  async function (this: W, action: PortalAction) {
    await security(this).appUsesPortal(action)
  },
)

When('the administrator tries to create a tenant', async function (this: W) {
  await security(this).adminCreatesTenant()
})

When('the administrator tries to create an API key with the role operator', async function (this: W) {
  await security(this).adminCreatesOperatorKey()
})

Given('the administrator has counted the API keys', async function (this: W) {
  await security(this).countKeys()
})

// Relying-party requests with bent bodies

When(
  '{caller} sends {rpRequest} padded to {int} KiB',
  async function (this: W, caller: Caller, request: RpRequest, kib: number) {
    await security(this).send(caller, request, { padKiB: kib })
  },
)

When(
  '{caller} sends {rpRequest} with the unknown field {string}',
  async function (this: W, caller: Caller, request: RpRequest, field: string) {
    await security(this).send(caller, request, { unknownField: field })
  },
)

When(
  '{caller} sends {rpRequest} whose {word} is {int} characters long',
  async function (this: W, caller: Caller, request: RpRequest, member: string, length: number) {
    await security(this).send(caller, request, { member, length })
  },
)

When(
  '{caller} sends {rpRequest} as {string}',
  async function (this: W, caller: Caller, request: RpRequest, contentType: string) {
    await security(this).send(caller, request, { contentType })
  },
)

When(
  '{caller} sends {rpRequest} whose body is {string}',
  async function (this: W, caller: Caller, request: RpRequest, text: string) {
    await security(this).send(caller, request, { text })
  },
)

// Expectations

// Problems and OAuth errors are judged by status, code and structured members only: `detail` and
// `error_description` are free text that other implementations word differently.
Then(
  'the answer is a {int} problem {string} naming the field {string}',
  function (this: W, status: number, code: string, field: string) {
    security(this).expectProblemField(status, code, field)
  },
)

Then('the answer is a {int} OAuth error {string}', function (this: W, status: number, error: string) {
  security(this).expectOAuthError(status, error)
})

Then('its body is the unknown-id answer but for the id it echoes', function (this: W) {
  security(this).expectLikeUnknownId()
})

Then('the process reads exactly as before', async function (this: W) {
  await security(this).expectProcessUnchanged()
})

Then("the list holds the other tenant's process but not this one", function (this: W) {
  security(this).expectListHasOthersButNotOurs()
})

Then('its application can still suspend the credential', async function (this: W) {
  await security(this).expectStillSuspendable()
})

Then("the tenant's PENDING processes are the same as before", async function (this: W) {
  await security(this).expectPendingUnchanged()
})

Then("the tenant's API keys are the same as before", async function (this: W) {
  await security(this).expectKeysUnchanged()
})

Then("the session's request has not been fetched", async function (this: W) {
  await security(this).expectRequestNotFetched()
})

Then('the wallet can still redeem the pre-authorized code', async function (this: W) {
  await security(this).expectStillRedeemable()
})

Then('the application can still log in', async function (this: W) {
  await security(this).expectAppStillLogsIn()
})

Then('none of our keys is in the list', function (this: W) {
  security(this).expectNoneOfOurKeysListed()
})

Then('the template reads exactly as before for its administrator', async function (this: W) {
  await security(this).expectTemplateUnchanged()
})
