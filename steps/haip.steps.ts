import { Given, Then, When } from '@cucumber/cucumber'
import type { AttestationDefect, AuthorizationEndpointMisuse, RequestDefect } from './support/haip.ts'
import type { HarnessWorld as W } from './support/world.ts'

// Issuance by the authorization code flow as HAIP 1.0 §4 profiles it: PAR, PKCE S256, DPoP, wallet attestation
// (features/issuance/haip.feature). The flow's side: steps/support/haip.ts; the relying party's steps (the
// process status) are the issuance ones.

// The tenant, its templates, offers and submissions

Given(
  'the configured tenant, trusting the test wallet provider, has a template issuing an SD-JWT VC by the authorization code flow',
  async function (this: W) {
    await this.haip.defineTemplate('haip')
  },
)

Given(
  'the tenant has a HAIP template that supplies the identity credential when the wallet is authorized',
  async function (this: W) {
    await this.haip.defineTemplate('wallet-initiated')
  },
)

Given(
  'the tenant has a HAIP template and a pre-authorized template of the same credential, both sending their webhooks to the harness receiver',
  async function (this: W) {
    await this.haip.defineWebhookTemplates()
  },
)

Given('the application has opened an offer for the HAIP template', async function (this: W) {
  await this.haip.openOffer()
})

Given('the application has submitted the identity credential', async function (this: W) {
  await this.haip.submit()
})

When('the application submits the identity credential', async function (this: W) {
  await this.haip.submit()
})

// The simulated wallet

When('a P-256 wallet takes the offer', async function (this: W) {
  await this.haip.takeOffer()
})

Given('a P-256 wallet has taken the offer and was told to come back later', async function (this: W) {
  await this.haip.takeOfferAndWait()
})

When(
  'a P-256 wallet takes the offer misbehaving with {word}',
  async function (this: W, misbehaviour: string) {
    await this.haip.takeOfferMisbehaving(misbehaviour)
  },
)

When('the wallet collects the credential from the deferred endpoint', async function (this: W) {
  await this.haip.collectDeferred()
})

When(
  "a P-256 wallet asks for that template's credential from the issuer metadata alone",
  async function (this: W) {
    await this.haip.requestFromMetadata()
  },
)

When(
  'a P-256 wallet takes an offer of each, the application having submitted the identity credential to both',
  async function (this: W) {
    await this.haip.issueBoth()
  },
)

Then(
  'the offer granted authorization_code alone, with an issuer_state, and the wallet took the authorization code flow',
  function (this: W) {
    this.haip.expectOfferOfAuthorizationCodeOnly()
  },
)

Then(
  'the wallet holds an SD-JWT VC of the HAIP template with the submitted claims, bound to its key',
  async function (this: W) {
    await this.haip.expectCredential('haip')
  },
)

Then(
  'the wallet holds an SD-JWT VC of the wallet-initiated template with the claims it supplies, bound to its key',
  async function (this: W) {
    await this.haip.expectCredential('wallet-initiated')
  },
)

Then(
  'the wallet is refused at its {word} request with HTTP {int} {string}',
  function (this: W, step: string, status: number, error: string) {
    this.haip.expectRefused(step, status, error)
  },
)

Then('the administrator lists one ISSUED process of the wallet-initiated template', async function (this: W) {
  await this.haip.expectOneIssuedWalletInitiatedProcess()
})

// Discovery

When("the authorization server metadata of the tenant's credential issuer is read", async function (this: W) {
  await this.haip.discover()
})

Then(
  'it requires pushed authorization requests, takes PKCE S256 and not plain, announces iss, ES256 DPoP proofs and attest_jwt_client_auth',
  function (this: W) {
    this.haip.expectHaipServerMetadata()
  },
)

// The raw client

When(
  'a client pushes an authorization request for the HAIP template and follows the authorization endpoint with its request_uri',
  async function (this: W) {
    await this.haip.push()
    this.haip.expectPushed()
    await this.haip.visitAuthorization()
  },
)

Then(
  "the authorization endpoint redirects to the client's redirect_uri with a code, the state it sent and iss the authorization server's issuer identifier",
  function (this: W) {
    this.haip.expectAuthorizationResponse()
  },
)

Given('a client has been through the authorization endpoint for the HAIP template', async function (this: W) {
  await this.haip.push()
  this.haip.expectPushed()
  await this.haip.visitAuthorization()
  this.haip.expectAuthorizationResponse()
})

When(
  'a client obtains an access token for the HAIP template through PAR, the authorization endpoint and a DPoP token request',
  async function (this: W) {
    await this.haip.obtainAccessToken()
  },
)

Given('a client holds a DPoP-bound access token for the HAIP template', async function (this: W) {
  await this.haip.obtainAccessToken()
})

Then(
  "the token response holds a DPoP-bound access token and authorization_details with the template's credential identifiers",
  function (this: W) {
    this.haip.expectDpopBoundToken()
  },
)

When(
  'the client redeems its authorization code with a DPoP proof carrying no server nonce',
  async function (this: W) {
    await this.haip.redeem({ nonce: false })
  },
)

Then(
  "the answer names a DPoP-Nonce, with which the client's retry gets a DPoP-bound access token",
  async function (this: W) {
    await this.haip.expectNonceThenRetry()
  },
)

When('the client presents it at the credential endpoint as a Bearer token', async function (this: W) {
  await this.haip.presentAsBearer()
})

Then('the credential endpoint refuses it with 401 invalid_token', function (this: W) {
  this.haip.expectBearerRefused()
})

Then(
  'the same request under the DPoP scheme with a proof of its key gets past the token, refused only for its missing key proof with 400 invalid_proof',
  async function (this: W) {
    await this.haip.expectAcceptedAsDpop()
  },
)

// Refusals of the pushed authorization request and of the authorization endpoint

const REQUEST_DEFECTS: Record<string, RequestDefect> = {
  'with the PKCE method plain': 'plain',
  'without a code_challenge': 'no-challenge',
  'with response_type token': 'response-type-token',
  'with response_type "code id_token"': 'response-type-code-id-token',
  'carrying a request_uri': 'request-uri',
}

When(
  /^a client pushes an authorization request for the HAIP template (with the PKCE method plain|without a code_challenge|with response_type token|with response_type "code id_token"|carrying a request_uri)$/,
  async function (this: W, defect: string) {
    await this.haip.push({ defect: REQUEST_DEFECTS[defect] })
  },
)

const ATTESTATION_DEFECTS: Record<string, AttestationDefect> = {
  'has a signature that does not verify': 'bad-signature',
  'expired ten minutes ago': 'expired',
  'names no client (no sub)': 'no-sub',
  'comes with a PoP whose signature does not verify': 'pop-bad-signature',
  'comes with a PoP signed by another key than the attested one': 'pop-other-key',
}

When(
  /^a client pushes an authorization request for the HAIP template with a wallet attestation that (.+)$/,
  async function (this: W, defect: string) {
    const known = ATTESTATION_DEFECTS[defect]
    if (!known)
      throw new Error(
        `unknown attestation defect "${defect}" (${Object.keys(ATTESTATION_DEFECTS).join('; ')})`,
      )
    await this.haip.push({ defect: known })
  },
)

Given('a client has pushed an authorization request for the HAIP template', async function (this: W) {
  await this.haip.push()
  this.haip.expectPushed()
})

const MISUSES: Record<string, AuthorizationEndpointMisuse> = {
  'the request_uri it has used already': 'reused',
  'its request_uri under another client_id': 'other-client',
  'a request_uri the server never gave': 'unknown',
  'the parameters of a request it never pushed': 'not-pushed',
}

When(/^the client asks the authorization endpoint with (.+)$/, async function (this: W, request: string) {
  const misuse = MISUSES[request]
  if (!misuse) throw new Error(`unknown request "${request}" (${Object.keys(MISUSES).join('; ')})`)
  await this.haip.misuseAuthorization(misuse)
})

// The user step as a page

Given(
  'the tenant has a HAIP template whose user step is a page a person decides on',
  async function (this: W) {
    await this.haip.defineTemplate('page')
  },
)

When(
  'a client pushes an authorization request for that template and the person declines on the page',
  async function (this: W) {
    await this.haip.push({ role: 'page' })
    this.haip.expectPushed()
    await this.haip.decideOnPage('decline')
  },
)

Then(
  "the authorization response is the error access_denied, with the state the client sent and the authorization server's iss",
  function (this: W) {
    this.haip.expectAccessDenied()
  },
)

// The relying party's view

Then(
  'both processes read ISSUED with the same members, the same holder and the same claims',
  async function (this: W) {
    await this.haip.expectSameProcesses()
  },
)

Then(
  'within {int} seconds each process was reported by exactly one SUCCESS webhook, the two alike but for their ids',
  { timeout: 30_000 },
  async function (this: W, seconds: number) {
    await this.haip.expectSameWebhooks(seconds)
  },
)
