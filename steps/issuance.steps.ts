import { Given, Then, When } from '@cucumber/cucumber'
import { PRE_AUTHORIZED_GRANT } from '../src/shared/wire.ts'
import type { HolderKeyType, Misbehaviour } from '../src/wallet/index.ts'
import { DEGREE_CONTENT, IDENTITY_CONTENT, type TemplateRole } from './support/issuance.ts'
import type { HarnessWorld } from './support/world.ts'

type W = HarnessWorld

// Offers and the wallet

Given('the application has opened an offer', async function (this: W) {
  await this.logIn('app')
  await this.issuance.openOffer('linked')
})

Given('an offer for {templateRole}', async function (this: W, role: TemplateRole) {
  await this.logIn('app')
  await this.issuance.openOffer(role)
})

Given('the wallet already holds a VerifiableId', async function (this: W) {
  await this.logIn('app')
  await this.issuance.openOffer('identity')
  const rp = this.issuance
  await this.client.submitCredentials(await this.unlinkedAppToken(), rp.requireProcess(), IDENTITY_CONTENT)
  await rp.receive()
  await rp.expectReceived('VerifiableId')
})

Given("the relying party has {word} the wallet's VerifiableId", async function (this: W, change: string) {
  if (change !== 'revoked' && change !== 'suspended') throw new Error(`unknown status change "${change}"`)
  const response = await this.client.setCredentialStatus(
    await this.unlinkedAppToken(),
    this.issuance.requireProcess(),
    { status: change },
  )
  this.recordAnswer(response, `set the VerifiableId ${change}`)
  this.expectStatus(200)
})

When('the wallet scans the offer', async function (this: W) {
  await this.issuance.scan()
})

When('a {keyType} wallet scans the offer', async function (this: W, keyType: HolderKeyType) {
  await this.issuance.scan(keyType)
})

When('the wallet redeems the pre-authorized code', async function (this: W) {
  await this.issuance.redeem()
})

When(
  'the wallet redeems the pre-authorized code misbehaving with {misbehaviour}',
  async function (this: W, m: Misbehaviour) {
    await this.issuance.redeem([m])
  },
)

When(
  'the wallet redeems the pre-authorized code with the transaction code {string}',
  async function (this: W, code: string) {
    await this.issuance.redeem([], code)
  },
)

When('the wallet requests the credential', async function (this: W) {
  await this.issuance.requestCredential()
})

When(
  'the wallet requests the credential misbehaving with {misbehaviour}',
  async function (this: W, m: Misbehaviour) {
    await this.issuance.requestCredential([m])
  },
)

Given('the wallet has requested the credential and was told to come back later', async function (this: W) {
  await this.issuance.scan()
  await this.issuance.redeem()
  await this.issuance.requestCredential()
  this.issuance.expectDeferred()
})

When('the wallet completes the flow', async function (this: W) {
  await this.issuance.receive()
})

When('a {keyType} wallet completes the flow', async function (this: W, keyType: HolderKeyType) {
  await this.issuance.receive(keyType)
})

When('the wallet asks the deferred endpoint', async function (this: W) {
  await this.issuance.pollDeferred()
})

// The relying party

When('{caller} submits the degree credential', async function (this: W, caller: 'app' | 'admin') {
  await this.logIn(caller === 'admin' ? 'admin' : 'app')
  await this.issuance.submit(caller === 'admin' ? 'admin' : 'app')
})

Given('the application has submitted the degree credential', async function (this: W) {
  await this.issuance.submitAsOpener()
  this.expectStatus(200)
})

When('the administrator submits a credential without credentialSubject', async function (this: W) {
  await this.logIn('admin')
  await this.issuance.submit('admin', [{ type: DEGREE_CONTENT[0]?.type }])
})

When(
  '{caller} rejects the process because {string}',
  async function (this: W, caller: 'app' | 'admin', reason: string) {
    await this.logIn(caller === 'admin' ? 'admin' : 'app')
    await this.issuance.reject(caller === 'admin' ? 'admin' : 'app', reason)
  },
)

When('the administrator lists the PENDING processes', async function (this: W) {
  await this.logIn('admin')
  const response = await this.client.listAllProcesses(this.token('admin'), { status: 'PENDING' })
  this.recordAnswer(
    { status: 200, headers: new Headers(), text: JSON.stringify(response), body: response },
    'list PENDING processes (4.5)',
  )
})

// Expectations

Then('the wallet receives a {word} credential', async function (this: W, type: string) {
  await this.issuance.expectReceived(type)
})

Then(
  'the {keyType} wallet receives a {word} credential',
  async function (this: W, keyType: HolderKeyType, type: string) {
    await this.issuance.expectReceived(type, keyType)
  },
)

// Only the wire status and OAuth error code: error_description is free text that other issuers word
// differently, so the suite never matches it.
Then('the wallet is refused with HTTP {int} {string}', function (this: W, status: number, error: string) {
  this.issuance.expectWalletError(status, error)
})

Then(
  'the wallet is refused with HTTP {int} {string} naming the check {string}',
  function (this: W, status: number, error: string, check: string) {
    this.issuance.expectWalletError(status, error, new RegExp(`\\b${check}\\b`))
  },
)

Then('the wallet is told to come back later with a transaction id and an interval', function (this: W) {
  this.issuance.expectDeferred()
})

Then('the wallet is told the credential is still pending', function (this: W) {
  this.issuance.expectPending()
})

Then('the offer response holds a tx_code of {int} digits', function (this: W, digits: number) {
  const code = this.issuance.txCode
  if (!code || !new RegExp(`^\\d{${digits}}$`).test(code))
    this.fail(`a tx_code of ${digits} digits in the 4.2 answer`)
})

Then(
  'the offer announces a {word} transaction code of {int} characters',
  function (this: W, mode: string, length: number) {
    const grant = this.issuance.session?.offer.grants?.[PRE_AUTHORIZED_GRANT] as
      | { tx_code?: { input_mode?: string; length?: number } }
      | undefined
    if (grant?.tx_code?.input_mode !== mode || grant.tx_code.length !== length) {
      this.fail(
        `tx_code {input_mode: ${mode}, length: ${length}} in the offer; it was ${JSON.stringify(grant?.tx_code)}`,
        null,
      )
    }
  },
)

Then(
  'the offer names the issuer, the template as configuration and a pre-authorized code',
  function (this: W) {
    const session = this.issuance.session
    const offer = session?.offer
    const grant = offer?.grants?.[PRE_AUTHORIZED_GRANT] as { 'pre-authorized_code'?: string } | undefined
    const ok =
      offer?.credential_issuer === `${this.target.urls.issuerUrl}/oid4vci/${this.tenant.tenant}` &&
      JSON.stringify(offer?.credential_configuration_ids) ===
        JSON.stringify([this.tenant.issuanceTemplate]) &&
      typeof grant?.['pre-authorized_code'] === 'string'
    if (!ok)
      this.fail(
        `credential_issuer, credential_configuration_ids ["${this.tenant.issuanceTemplate}"] and a pre-authorized_code; the offer was ${JSON.stringify(offer)}`,
        null,
      )
  },
)

Then(
  'the issuer metadata lists the credential, nonce, deferred and notification endpoints',
  function (this: W) {
    const metadata = this.issuance.session?.issuerMetadata as Record<string, unknown> | undefined
    for (const name of [
      'credential_endpoint',
      'nonce_endpoint',
      'deferred_credential_endpoint',
      'notification_endpoint',
    ]) {
      if (typeof metadata?.[name] !== 'string')
        this.fail(`${name} in the issuer metadata; it was ${JSON.stringify(metadata)}`, null)
    }
  },
)

Then('the offer asks the holder to present a VerifiableId', function (this: W) {
  const definition = this.issuance.session?.presentationDefinition as
    | { input_descriptors?: { name?: string }[] }
    | undefined
  if (!definition?.input_descriptors?.some((d) => d.name === 'VerifiableId')) {
    this.fail(
      `a presentation_definition asking for a VerifiableId; it was ${JSON.stringify(definition)}`,
      null,
    )
  }
})

Then('the process is {word}', async function (this: W, status: string) {
  const process = await this.issuance.readProcess()
  if (process.status !== status) this.fail(`the process to be ${status}`)
})

Then("the process validator names the wallet's DID as holder", async function (this: W) {
  const process = await this.issuance.readProcess()
  const wallet = await this.issuance.wallet()
  const vp = process.validator?.verifiablePresentation as
    | { type?: string[]; proof?: { creator?: string }[] }
    | undefined
  const creator = vp?.proof?.[0]?.creator
  if (process.validator?.id !== this.issuance.processId) this.fail('validator.id to equal the process id')
  if (
    JSON.stringify(vp?.type) !== JSON.stringify(['VerifiablePresentation', 'ServiceCredentialPresentation'])
  ) {
    this.fail('verifiablePresentation.type [VerifiablePresentation, ServiceCredentialPresentation]')
  }
  if (!creator || creator.split('#')[0] !== wallet.did) {
    this.fail(
      `verifiablePresentation.proof[0].creator to be a key of ${wallet.did} (rule 3 of section 2.3); it was ${creator}`,
    )
  }
})

Then('the process validator holds the shared VerifiableId', async function (this: W) {
  const process = await this.issuance.readProcess()
  const vp = process.validator?.verifiablePresentation as
    | { verifiableCredential?: { type?: string[] }[] }
    | undefined
  if (vp?.verifiableCredential?.[0]?.type?.at(-1) !== 'VerifiableId') {
    this.fail('verifiablePresentation.verifiableCredential[0] to be the VerifiableId the wallet presented')
  }
})

Then('the process data holds the signed credential for the holder', async function (this: W) {
  const process = await this.issuance.readProcess()
  const wallet = await this.issuance.wallet()
  const credential = process.data?.[0] as
    | { credentialSubject?: { id?: string }; credentialStatus?: { type?: string }; proof?: { jwt?: string } }
    | undefined
  if (process.status !== 'ISSUED') this.fail('status ISSUED')
  if (credential?.credentialSubject?.id !== wallet.did)
    this.fail(`data[0].credentialSubject.id = ${wallet.did}`)
  if (credential?.credentialStatus?.type !== 'BitstringStatusListEntry')
    this.fail('data[0].credentialStatus, a BitstringStatusListEntry')
  if (typeof credential?.proof?.jwt !== 'string') this.fail('data[0].proof.jwt, the signed credential')
})

Then('the submission answer is an array holding the ISSUED process with its data', function (this: W) {
  const body = this.answer.body as { id?: string; status?: string; data?: unknown[] }[]
  this.expectStatus(200)
  if (
    !Array.isArray(body) ||
    body.length !== 1 ||
    body[0]?.id !== this.issuance.processId ||
    body[0]?.status !== 'ISSUED' ||
    !body[0]?.data?.length
  ) {
    this.fail('HTTP 200 with an array of one ISSUED process whose data is populated')
  }
})

Then('the listed processes include this one with its validator', function (this: W) {
  const list = this.answer.body as { id: string; status: string; validator: unknown }[]
  const mine = list.find((p) => p.id === this.issuance.processId)
  if (mine?.status !== 'PENDING' || mine.validator === null) {
    this.fail('the PENDING process, with the validator the wallet filled, in the list')
  }
})
