import { Given, Then, When } from '@cucumber/cucumber'
import type { PresentationMisbehaviour } from '../src/wallet/index.ts'
import type { DcApiPage, DcApiRequestType } from './support/dc-api.ts'
import type { ClientIdPrefix, ResponseMode } from './support/dcql.ts'
import type { HarnessWorld as W } from './support/world.ts'

// OpenID4VP 1.0 over the W3C Digital Credentials API (features/verification/dc-api.feature). The template, the
// page's GET and POST, the wallet in place of the platform: steps/support/dc-api.ts; the wallet's credentials,
// the session and 4.7 are the dcql flow's, whose steps the feature reuses.

const PAGES: Record<string, DcApiPage> = {
  "the relying party's page": 'the relying party',
  'a page of an origin the template does not expect': 'unexpected',
}

// The template and the session

Given(
  /^a DC API template asking for the (family name of a VerifiableId as dc\+sd-jwt|family name of an mDL as mso_mdoc) with (unsigned|signed|multisigned) requests(?:, its verifier named by (decentralized_identifier|x509_san_dns|x509_hash))?(?:, answered by (direct_post\.jwt|direct_post))?$/,
  async function (
    this: W,
    asked: string,
    request: DcApiRequestType,
    prefix: ClientIdPrefix | undefined,
    responseMode: ResponseMode | undefined,
  ) {
    const mdoc = asked.endsWith('mso_mdoc')
    await this.dcApi.defineTemplate({
      ask: mdoc ? 'mDL family name' : 'family name',
      format: mdoc ? 'mso_mdoc' : 'dc+sd-jwt',
      request,
      ...(prefix && { prefix }),
      ...(responseMode && { responseMode }),
    })
  },
)

Then(
  "the 4.6 answer offers the session over the DC API as {word} at the session's own URL, expecting the relying party's origin",
  function (this: W, protocol: string) {
    this.dcApi.expectOffered(protocol)
  },
)

// The relying party's page

When("the relying party's page gets the DC API request", async function (this: W) {
  await this.dcApi.fetchRequest()
})

Then(
  "the relying party's page gets an entry of protocol {word} from the session's DC API URL",
  async function (this: W, protocol: string) {
    await this.dcApi.fetchRequest()
    this.dcApi.expectEntryProtocol(protocol)
  },
)

Given('the first signature of the multi-signed DC API request is corrupted', function (this: W) {
  this.dcApi.corruptFirstSignature()
})

When("the relying party posts the wallet's answer with the origin of that page", async function (this: W) {
  await this.dcApi.post()
})

When(
  "the relying party posts the wallet's answer with the origin of that page again",
  async function (this: W) {
    await this.dcApi.post('POST the same DigitalCredential again, the session being closed')
  },
)

// The wallet, in place of the platform

When(
  /^the wallet answers the DC API request on (the relying party's page|a page of an origin the template does not expect)(?: misbehaving with (\S+))?$/,
  async function (this: W, page: string, misbehaviour: string | undefined) {
    await this.dcApi.present(
      PAGES[page] as DcApiPage,
      misbehaviour ? [misbehaviour as PresentationMisbehaviour] : [],
    )
  },
)

Given(
  "the wallet has answered the DC API request on the relying party's page and the answer was verified",
  async function (this: W) {
    await this.dcApi.present('the relying party')
    await this.dcApi.post()
    this.dcApi.expectVerifiedAnswer()
  },
)

// Expectations on the request

Then(
  "the DC API request asks for a vp_token with response_mode {word}, the session's nonce and DCQL query, and no state or response_uri",
  async function (this: W, mode: string) {
    await this.dcApi.expectA2Parameters(mode)
  },
)

Then(
  'the DC API request is {word} as Appendix A.3 prescribes, its signatures verifying as its client identifier prefixes prescribe',
  async function (this: W, _request: string) {
    await this.dcApi.expectProtected()
  },
)

// Expectations on the wallet's answer

Then(
  "the wallet answered through the DC API by {word}, under the request's protocol",
  function (this: W, mode: string) {
    this.dcApi.expectAnsweredBy(mode)
  },
)

Then(
  /^the KB-JWT the wallet presented is bound to (origin:\S+) and the session's nonce$/,
  function (this: W, audience: string) {
    this.dcApi.expectKbJwtBoundTo(audience)
  },
)

Then(
  'the wallet refuses the DC API request with {string} and presents nothing',
  function (this: W, error: string) {
    this.dcApi.expectWalletRefused(error)
  },
)

Then(
  'the wallet found the first signature invalid and verified the other one, naming the verifier by its client_id',
  function (this: W) {
    this.dcApi.expectFirstSignatureRefusedSecondVerified()
  },
)

// Expectations on what the relying party's backend is told

Then('the relying party is told the DC API answer was verified', function (this: W) {
  this.dcApi.expectVerifiedAnswer()
})

Then(
  'the relying party is refused with HTTP {int} {string}',
  function (this: W, status: number, error: string) {
    this.dcApi.expectRefused(status, error)
  },
)
