import { Given, Then, When } from '@cucumber/cucumber'
import type { SessionRead } from '../src/client/index.ts'
import { isObject } from '../src/shared/json.ts'
import { AUTHORIZATION_REQUEST_SCHEME } from '../src/shared/wire.ts'
import type { HolderKeyType, PresentationMisbehaviour } from '../src/wallet/index.ts'
import type { VerificationTemplateRole } from './support/verification.ts'
import type { HarnessWorld } from './support/world.ts'

type W = HarnessWorld
type M = PresentationMisbehaviour

// Holding credentials and opening sessions

Given('the wallet holds a degree credential', async function (this: W) {
  await this.verification.holdCredential('degree')
})

Given('a {keyType} wallet holds a degree credential', async function (this: W, keyType: HolderKeyType) {
  await this.verification.holdCredential('degree', keyType)
})

Given('the wallet holds a degree credential and a VerifiableId', async function (this: W) {
  await this.verification.holdCredential('degree')
  await this.verification.holdCredential('identity')
})

Given('the wallet holds only a VerifiableId', async function (this: W) {
  await this.verification.holdCredential('identity')
})

Given('the relying party has {word} that credential', async function (this: W, change: string) {
  if (change !== 'revoked' && change !== 'suspended') throw new Error(`unknown status change "${change}"`)
  await this.verification.changeHeldStatus(change)
})

Given(
  'the application has opened a verification session for {verificationTemplate}',
  async function (this: W, role: VerificationTemplateRole) {
    await this.verification.open(role)
  },
)

When(
  'the application opens a verification session for {verificationTemplate}',
  async function (this: W, role: VerificationTemplateRole) {
    await this.verification.open(role)
  },
)

When('the administrator opens a verification session', async function (this: W) {
  const template = this.verification.templateId('degree check')
  const response = await this.client.createSession(await this.logIn('admin'), template)
  this.recordAnswer(response, 'create a verification session as the administrator')
})

When('an application of another tenant reads the session', async function (this: W) {
  const other = this.target.tenant
  if (other.tenant === this.tenant.tenant) throw new Error('no second tenant on this target')
  const token = await this.client.token({
    keyId: other.appKey.id,
    secret: other.appKey.secret,
    tenant: other.tenant,
    ssiconfig: other.issuanceTemplate,
  })
  const response = await this.client.readSession(token, this.verification.sessionId)
  this.recordAnswer(response, "read this tenant's session with another tenant's application")
})

// The wallet

When('the wallet presents', async function (this: W) {
  await this.verification.present()
})

When('the {keyType} wallet presents', async function (this: W, keyType: HolderKeyType) {
  await this.verification.present([], keyType)
})

When('the wallet presents misbehaving with {presentationMisbehaviour}', async function (this: W, m: M) {
  await this.verification.present([m])
})

When('the wallet fetches the request', async function (this: W) {
  await this.verification.fetchRequest()
})

When('the session expires', function (this: W) {
  this.verification.expireSession()
})

When('the wallet answers anyway', async function (this: W) {
  await this.verification.respond(['expired-session'])
})

Given('the wallet has presented to a first session', async function (this: W) {
  await this.verification.open('degree check')
  await this.verification.present()
  this.verification.expectWalletSuccess()
})

When('the wallet presents to that session again', async function (this: W) {
  await this.verification.present()
})

// Expectations

Then('the wallet is told the presentation was accepted', function (this: W) {
  const result = this.verification.expectWalletSuccess() as { status?: string; httpStatus?: number }
  if (result.status !== 'verified' || result.httpStatus !== 200) {
    this.fail(`HTTP 200 to the direct_post; got ${JSON.stringify(result)}`, null)
  }
})

Then('the wallet is told its refusal was received', function (this: W) {
  const result = this.verification.expectWalletSuccess() as { status?: string; httpStatus?: number }
  if (result.status !== 'rejected-by-wallet' || result.httpStatus !== 200) {
    this.fail(`HTTP 200 to the wallet's error answer; got ${JSON.stringify(result)}`, null)
  }
})

// Only the wire status and error code; which check failed is read from the session's Validations (a
// check name), never from error_description, which other verifiers word differently.
Then(
  'the verifier refuses the wallet with HTTP {int} {string}',
  function (this: W, status: number, error: string) {
    this.verification.expectWalletRefused(status, error)
  },
)

Then('the wallet refuses by itself because nothing matches {string}', function (this: W, descriptor: string) {
  this.verification.expectWalletDeclined(descriptor)
})

Then(
  'the session reads {int} VERIFIED with the wallet as subject and every check passed',
  async function (this: W, status: number) {
    if (status !== 200) throw new Error('a final session reads 200')
    await this.verification.expectVerifiedBy()
  },
)

Then(
  'the session reads 200 VERIFIED for the {keyType} wallet',
  async function (this: W, keyType: HolderKeyType) {
    await this.verification.expectVerifiedBy(keyType)
  },
)

Then('the session shares the degree claims without the subject id', async function (this: W) {
  const body = await this.verification.read()
  const credentials = (body.PresentationSubmission?.verifiableCredential ?? []) as Record<string, unknown>[]
  const subject = credentials[0]?.credentialSubject as Record<string, unknown> | undefined
  if (!subject || !isObject(subject.degree))
    this.fail('a shared UniversityDegreeCredential with its degree claim')
  const definitionId = body.PresentationSubmission?.definition_id
  if (definitionId !== body.Id)
    this.fail(`presentation_submission.definition_id to be the session id ${body.Id}`)
})

Then('the session reads 200 REJECTED with {word} failed', async function (this: W, check: string) {
  const body = await this.verification.expectState('REJECTED')
  this.verification.expectFailedCheck(body, check)
  if (body.PresentationSubmission !== null || body.PresentationSubmissionFormat !== '') {
    this.fail('no PresentationSubmission on a REJECTED session')
  }
})

Then('the session reads {int} {word}', async function (this: W, status: number, state: string) {
  const body = await this.verification.expectState(state as SessionRead['Status'])
  if ((state === 'PENDING') !== (status === 202)) throw new Error('PENDING reads 202, final states 200')
  return body
})

Then('nothing has been submitted to the session yet', async function (this: W) {
  const body = await this.verification.read()
  const empty =
    body.PresentationSubmission === null &&
    body.PresentationSubmissionFormat === '' &&
    body.Validations === null &&
    body.Subject === '' &&
    body.SourceWallet === '' &&
    body.DeletedAt === null
  if (!empty)
    this.fail(
      'PresentationSubmission null, PresentationSubmissionFormat "", Validations null, Subject "" and SourceWallet ""',
    )
  for (const member of ['CreatedAt', 'UpdatedAt', 'ExpiredAt'] as const) {
    if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(body[member])) this.fail(`${member} in ISO 8601 UTC`)
  }
  if (typeof body.AuthRequest.exp !== 'number' || typeof body.AuthRequest.nonce !== 'string') {
    this.fail('AuthRequest with exp (epoch seconds) and nonce')
  }
})

Then('the session records when the wallet fetched the request', async function (this: W) {
  const body = await this.verification.read()
  if (body.RequestedAt === null) this.fail('RequestedAt set once the wallet fetched the request object')
})

Then(
  'the authentication request is an openid-vp link with client_id, redirect_uri, request_uri, response_mode direct_post, response_type vp_token and scope openid',
  function (this: W) {
    const link = this.verification.requireCreated().authentication_request
    if (!link.startsWith(`${AUTHORIZATION_REQUEST_SCHEME}://?`))
      this.fail(`an ${AUTHORIZATION_REQUEST_SCHEME}:// link; got ${link}`)
    const query = new URL(link).searchParams
    const expected: Record<string, string | RegExp> = {
      client_id: /^did:/,
      redirect_uri: /^https?:\/\//,
      request_uri: /^https?:\/\//,
      response_mode: 'direct_post',
      response_type: 'vp_token',
      scope: 'openid',
    }
    for (const [name, want] of Object.entries(expected)) {
      const value = query.get(name) ?? ''
      if (typeof want === 'string' ? value !== want : !want.test(value)) {
        this.fail(`query parameter ${name} ${String(want)}; the link was ${link}`)
      }
    }
  },
)

Then(
  'the session id is the definition id and the last path segment of request_uri and redirect_uri',
  function (this: W) {
    const created = this.verification.requireCreated()
    const query = new URL(created.authentication_request).searchParams
    const id = created.presentation_definition.id
    for (const name of ['request_uri', 'redirect_uri']) {
      const last = new URL(query.get(name) ?? 'x:/').pathname.split('/').at(-1)
      if (last !== id) this.fail(`${name} ending with the session id ${id}; it was ${query.get(name)}`)
    }
  },
)

Then(
  'the presentation definition carries a data agreement, jwt and ldp formats, a mandatory requirement and one descriptor per requested type',
  function (this: W) {
    const pd = this.verification.requireCreated().presentation_definition as Record<string, unknown>
    const agreement = pd.dataAgreement as Record<string, unknown> | undefined
    const receiver = agreement?.data_receiver as Record<string, unknown> | undefined
    const event = (agreement?.event as Record<string, unknown>[] | undefined)?.[0]
    if (
      !agreement ||
      !receiver ||
      typeof receiver.consent_duration !== 'number' ||
      typeof receiver.id !== 'string'
    ) {
      this.fail('dataAgreement with data_receiver {id, consent_duration, form_of_consent, url}')
    }
    if (!event || typeof event.timestamp !== 'number' || event.timestamp < 1e12) {
      this.fail('dataAgreement.event[0].timestamp in epoch milliseconds')
    }
    const format = pd.format as Record<string, { alg?: string[]; proof_type?: string[] }>
    for (const key of ['jwt', 'jwt_vp']) {
      const algs = format?.[key]?.alg ?? []
      if (!['EdDSA', 'ES256', 'ES256K'].every((a) => algs.includes(a)))
        this.fail(`format.${key}.alg EdDSA, ES256, ES256K`)
    }
    for (const key of ['ldp', 'ldp_vp']) {
      if (!format?.[key]?.proof_type?.includes('Ed25519Signature2018')) this.fail(`format.${key}.proof_type`)
    }
    const requirements = pd.submission_requirements as { rule: string; from: string }[]
    if (!requirements?.some((r) => r.rule === 'all' && r.from === 'mandatory')) {
      this.fail('a submission requirement {rule: all, from: mandatory}')
    }
    const descriptors = pd.input_descriptors as { name: string; group: string[] }[]
    if (descriptors?.length !== 1 || descriptors[0]?.name !== 'UniversityDegreeCredential') {
      this.fail('one input descriptor, for UniversityDegreeCredential')
    }
    const proof = (pd.proof as Record<string, unknown>[] | undefined)?.[0]
    if (proof?.proofPurpose !== 'authentication') this.fail('a proof with proofPurpose authentication')
  },
)

Then(
  "the descriptor matches the type's last element, trusts only the tenant's issuer DIDs and requires an active status",
  function (this: W) {
    const pd = this.verification.requireCreated().presentation_definition as Record<string, unknown>
    const descriptor = (pd.input_descriptors as Record<string, unknown>[])[0] as {
      constraints: {
        fields: { path: string[]; filter?: { pattern?: string; const?: string } }[]
        statuses?: unknown
      }
    }
    const fields = descriptor.constraints.fields
    if (
      !fields.some(
        (f) =>
          f.path.some((p) => p.endsWith('type[-1:]')) && f.filter?.const === 'UniversityDegreeCredential',
      )
    ) {
      this.fail('a field matching UniversityDegreeCredential on the last element of type')
    }
    const issuer = this.issuance.lastIssuerDid()
    const pattern = fields.find((f) => f.path.includes('$.iss'))?.filter?.pattern
    if (
      !pattern ||
      !new RegExp(pattern).test(issuer) ||
      new RegExp(pattern).test('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK')
    ) {
      this.fail(`an issuer pattern accepting the tenant's issuer ${issuer} and no other DID; got ${pattern}`)
    }
    const statuses = descriptor.constraints.statuses as { active?: { directive?: string } } | undefined
    if (statuses?.active?.directive !== 'required') this.fail('statuses.active.directive "required"')
  },
)

Then('the definition lets the holder pick at least one identity credential', function (this: W) {
  const pd = this.verification.requireCreated().presentation_definition as Record<string, unknown>
  const pick = (pd.submission_requirements as Record<string, unknown>[]).find((r) => r.rule === 'pick')
  if (pick?.from !== 'identity' || pick.min !== 1)
    this.fail('a requirement {rule: pick, min: 1, from: identity}')
})

Then(
  'the request object is signed by the client_id DID, typed, and carries a nonce of at least 128 bits',
  function (this: W) {
    const session = this.verification.expectWalletSuccess() as { requestObject: string }
    this.verification.expectSignedRequest(session.requestObject)
  },
)
