import { isDeepStrictEqual } from 'node:util'
import { Given, Then, When } from '@cucumber/cucumber'
import type { SessionRead } from '../src/client/index.ts'
import { OPENID4VP_SCHEME } from '../src/shared/wire.ts'
import type { PresentationMisbehaviour } from '../src/wallet/index.ts'
import {
  type ClientIdPrefix,
  type DcqlAsk,
  type DcqlFormat,
  type RequestUriMethod,
  type ResponseMode,
  subjectClaims,
} from './support/dcql.ts'
import type { HarnessWorld as W } from './support/world.ts'

// OpenID4VP 1.0, the dcql profile of a verification template (features/verification/dcql*.feature). The
// wallet, the template and the session: steps/support/dcql.ts.

type M = PresentationMisbehaviour

// The wallet and what it holds

Given('the wallet holds an SD-JWT VC VerifiableId', async function (this: W) {
  await this.dcql.hold('sd-jwt')
})

Given('the wallet holds an x5c-certified SD-JWT VC VerifiableId', async function (this: W) {
  await this.dcql.hold('x5c sd-jwt')
})

Given('the wallet holds a jwt_vc_json degree credential', async function (this: W) {
  await this.dcql.hold('jwt_vc_json degree')
})

Given(
  /^the wallet trusts (no certificate authority|only a certificate authority the tenant does not use)$/,
  function (this: W, trust: string) {
    this.dcql.trustOnly(trust === 'no certificate authority' ? 'no CA' : 'another CA')
  },
)

// The template and the session

Given(
  /^a dcql template asking for the (family name of a VerifiableId|degree name of a UniversityDegreeCredential) as (dc\+sd-jwt|jwt_vc_json)(?:, its verifier named by (decentralized_identifier|x509_san_dns|x509_hash|redirect_uri))?(?:, answered by (direct_post\.jwt|direct_post))?(?:, its request fetched by (GET|POST))?$/,
  async function (
    this: W,
    asked: string,
    format: DcqlFormat,
    prefix: ClientIdPrefix | undefined,
    responseMode: ResponseMode | undefined,
    method: string | undefined,
  ) {
    const ask: DcqlAsk = asked.startsWith('family name') ? 'family name' : 'degree name'
    await this.dcql.defineTemplate({
      ask,
      format,
      ...(prefix && { prefix }),
      ...(responseMode && { responseMode }),
      ...(method && { requestUriMethod: method.toLowerCase() as RequestUriMethod }),
    })
  },
)

Given('the dcql template sends its webhooks to the harness receiver', async function (this: W) {
  await this.dcql.sendWebhooksToReceiver()
})

Given(
  "the dcql template's trust anchors name only a certificate authority the tenant does not use",
  async function (this: W) {
    await this.dcql.trustOnlyAnotherCa()
  },
)

Given('the application has opened a dcql session', async function (this: W) {
  await this.dcql.open()
})

When('the application opens a dcql session', async function (this: W) {
  await this.dcql.open()
})

// The wallet's answer

When('the wallet presents to the dcql session', async function (this: W) {
  await this.dcql.present()
})

When(
  'the wallet presents to the dcql session misbehaving with {dcqlMisbehaviour}',
  async function (this: W, m: M) {
    await this.dcql.present([m])
  },
)

Given('the wallet has presented to the dcql session', async function (this: W) {
  await this.dcql.present()
  this.dcql.expectAnswerReceived('verified')
})

When('the wallet answers the same dcql request again', async function (this: W) {
  await this.dcql.respond()
})

When('the wallet fetches the dcql request', async function (this: W) {
  await this.dcql.fetchRequest()
})

When('the dcql session expires', function (this: W) {
  this.dcql.expireSession()
})

When('the wallet answers the dcql request anyway', async function (this: W) {
  await this.dcql.respond(['expired-session'])
})

// Expectations on the wallet's side

Then('the wallet is told the dcql presentation was accepted', function (this: W) {
  this.dcql.expectAnswerReceived('verified')
})

Then('the wallet is told its refusal of the dcql request was received', function (this: W) {
  this.dcql.expectAnswerReceived('rejected-by-wallet')
})

// The wire status and OAuth code only; the reason is read from the session's Validations.
Then(
  'the verifier refuses the dcql answer with HTTP {int} {string}',
  function (this: W, status: number, error: string) {
    this.dcql.expectVerifierRefused(status, error)
  },
)

Then(
  'the wallet verified the request as the {clientIdPrefix} client identifier prefix prescribes',
  async function (this: W, prefix: ClientIdPrefix) {
    await this.dcql.expectRequestVerifiedAs(prefix)
  },
)

Then('the wallet answered by {responseMode}', function (this: W, mode: ResponseMode) {
  this.dcql.expectAnsweredBy(mode)
})

Then(
  'the wallet fetched the request by POST and the request object echoes its wallet_nonce',
  function (this: W) {
    this.dcql.expectWalletNonceEchoed()
  },
)

Then('the wallet disclosed only the requested claim', function (this: W) {
  this.dcql.expectOnlyRequestedDisclosed()
})

Then('the wallet refuses the request with {string} and sends nothing', function (this: W, error: string) {
  this.dcql.expectWalletRefusedRequest(error)
})

Then('the wallet refuses by itself because no credential matches the DCQL query', function (this: W) {
  this.dcql.expectWalletFoundNothing()
})

// Expectations on what the relying party reads (4.6, 4.7)

Then(
  'the answer carries an openid4vp link whose client_id has the decentralized_identifier prefix and whose request_uri ends with the session id',
  function (this: W) {
    const created = this.dcql.requireCreated()
    const link = created.authentication_request
    if (!link.startsWith(`${OPENID4VP_SCHEME}://?`))
      this.fail(`an ${OPENID4VP_SCHEME}:// link; got ${link}`, null)
    const query = new URL(link).searchParams
    if (!/^decentralized_identifier:did:key:/.test(query.get('client_id') ?? ''))
      this.fail(`client_id decentralized_identifier:did:key:…; the link was ${link}`, null)
    const requestUri = query.get('request_uri') ?? ''
    if (!/^https?:\/\//.test(requestUri) || new URL(requestUri).pathname.split('/').at(-1) !== created.id)
      this.fail(`a request_uri ending with the session id ${created.id}; the link was ${link}`, null)
    if (query.has('request_uri_method') || query.has('dcql_query') || query.has('presentation_definition'))
      this.fail(`only client_id and request_uri in a GET-by-reference link; it was ${link}`, null)
  },
)

Then(
  "the DCQL query asks for one dc+sd-jwt credential of the wallet's vct and only its familyName claim",
  function (this: W) {
    const query = this.dcql.requireCreated().dcql_query as {
      credentials: {
        id: string
        format: string
        meta?: { vct_values?: string[] }
        claims?: { path: unknown }[]
      }[]
      credential_sets?: unknown
    }
    const vct = this.dcql.heldCredential('sd-jwt').vct
    const [credential, ...others] = query.credentials
    if (
      !credential ||
      others.length > 0 ||
      credential.format !== 'dc+sd-jwt' ||
      !/^[A-Za-z0-9_-]+$/.test(credential.id) ||
      !credential.meta?.vct_values?.includes(vct ?? '') ||
      !isDeepStrictEqual(
        credential.claims?.map((c) => c.path),
        [['familyName']],
      )
    )
      this.fail(
        `one credential query {id, format: dc+sd-jwt, meta.vct_values with ${vct}, claims [{path: [familyName]}]}; it was ${JSON.stringify(query)}`,
        null,
      )
  },
)

Then(
  'the dcql session reads 202 PENDING with no presentation definition and the DCQL query in AuthRequest',
  async function (this: W) {
    await this.dcql.expectPendingWithQuery()
  },
)

Then(
  'the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql',
  async function (this: W) {
    await this.dcql.expectVerified()
  },
)

Then('the dcql session shares only the requested claim', async function (this: W) {
  await this.dcql.expectSharedOnlyTheAskedClaim()
})

Then('the dcql session reads 200 REJECTED with {word} failed', async function (this: W, check: string) {
  await this.dcql.expectRejected(check)
})

Then(
  'the dcql session reads 200 REJECTED with {word} failed naming {string}',
  async function (this: W, check: string, subject: string) {
    await this.dcql.expectRejected(check, subject)
  },
)

Then(
  'the dcql session reads 200 VERIFIED with a warning naming {string}',
  async function (this: W, subject: string) {
    await this.dcql.expectVerifiedWithWarning(subject)
  },
)

Then('the dcql session reads {int} {word}', async function (this: W, status: number, state: string) {
  if ((state === 'PENDING') !== (status === 202)) throw new Error('PENDING reads 202, final states 200')
  await this.dcql.expectState(state as SessionRead['Status'])
})

// Webhooks (section 6)

Then(
  /^within (\d+) seconds the receiver got exactly one (SUCCESS|REJECT) about the dcql session$/,
  async function (this: W, seconds: string, status: 'SUCCESS' | 'REJECT') {
    await this.dcql.expectWebhook(status, Number(seconds))
  },
)

Then(
  'the webhook carries the wallet as subject and only the requested claim as payload',
  async function (this: W) {
    const body = this.dcql.webhookBody()
    const holder = (await this.dcql.wallet()).did
    if (body.subject !== holder)
      this.fail(`subject ${holder} (the holder); it is ${JSON.stringify(body.subject)}`, null)
    // The JWT's registered claims (RFC 7519 §4.1) are signed in the clear, not disclosed: left out.
    if (!isDeepStrictEqual(subjectClaims(body.payload), { familyName: 'Hopper' }))
      this.fail(
        `payload {"familyName":"Hopper"}, the one claim asked for, and no other claim of the subject; it is ${JSON.stringify(body.payload)}`,
        null,
      )
  },
)

Then('the webhook errors name the {word} check', function (this: W, check: string) {
  const errors = this.dcql.webhookBody().verificationResult.errors
  if (!errors.some((e) => e.startsWith(`${check}:`)))
    this.fail(`a verificationResult error of the ${check} check; they are ${JSON.stringify(errors)}`, null)
})
