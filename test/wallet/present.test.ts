// The simulated wallet's OpenID4VP side (src/wallet/presentation*.ts, CLI `wallet present`) against the real
// reference service over real HTTP on 127.0.0.1: one service for the file (its clock a ShiftedClock, so the
// tests run one after another), the relying party driven with RelyingPartyClient, credentials received from the
// service's own issuer. Each misbehaviour gets the exact wire error and the exact failed checks.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  ok,
  parseCredentialOfferUri,
  RelyingPartyClient,
  type SessionCreated,
  type SessionRead,
} from '../../src/client/index.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../src/service/server.ts'
import { ShiftedClock } from '../../src/service/util/clock.ts'
import { decodeJws } from '../../src/shared/jws.ts'
import {
  type HolderKeyType,
  NoMatchingCredentialsError,
  PRESENTATION_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  V1_ONLY_PRESENTATION_MISBEHAVIOURS,
  type V1OnlyPresentationMisbehaviour,
  Wallet,
  WalletProtocolError,
  WalletUsageError,
} from '../../src/wallet/index.ts'

// --- the service ---------------------------------------------------------------------------------------------

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
const TENANT = 'demo'
/** An unlinked application key: offers for every issuance template, sessions for every verification one. */
const APP_KEY = {
  id: 'a11ce000-5e7e-4c0d-9a11-00000000beef',
  secret: 'wallet-present-app-secret-Jq7Vb2Xn5Lm8',
  role: 'app',
  label: 'test/wallet/present.test.ts: every template',
}
const ISSUANCE_TEMPLATES = [
  { id: 'verifiable-id', credentialType: 'VerifiableId' },
  { id: 'es256', credentialType: 'UniversityDegreeCredential', signingAlg: 'ES256' },
  { id: 'es256k', credentialType: 'UniversityDegreeCredential', signingAlg: 'ES256K' },
]
const VERIFICATION_TEMPLATES = [
  {
    id: 'degree-and-id',
    name: 'Degree and ID',
    credentialTypes: ['UniversityDegreeCredential', 'VerifiableId'],
    requestedFields: [{ path: '$.credentialSubject.familyName', credentialTypes: ['VerifiableId'] }],
  },
  {
    id: 'degree-plus',
    name: 'Degree plus one of',
    credentialTypes: ['UniversityDegreeCredential'],
    optionalGroups: [{ name: 'extras', credentialTypes: ['EmployeeCredential', 'VerifiableId'], min: 1 }],
  },
]
const LIFETIME_MS = 600_000

const DEGREE = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science and Arts' } },
  },
]
const VERIFIABLE_ID = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Lovelace', firstName: 'Ada' },
  },
]

function serviceConfig() {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  tenant.apiKeys.push(APP_KEY)
  tenant.issuanceTemplates.push(...ISSUANCE_TEMPLATES)
  tenant.verificationTemplates.push(...VERIFICATION_TEMPLATES)
  const admin = (tenant.apiKeys as { id: string; secret: string; role: string; template?: string }[]).find(
    (k) => k.role === 'admin' && k.template === undefined,
  )
  if (!admin) throw new Error('config/demo.json has no admin key')
  return { config: parseConfig(raw, 'test/wallet/present.test.ts configuration'), admin }
}

let server: RunningServer
let rp: RelyingPartyClient
let appToken: string
let adminToken: string
const clock = new ShiftedClock()

before(async () => {
  const { config, admin } = serviceConfig()
  server = await startServer({ config, host: '127.0.0.1', port: 0, dataDir: ':memory:', clock })
  rp = new RelyingPartyClient(server.url)
  ;[appToken, adminToken] = await Promise.all([
    rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT }),
    rp.token({ keyId: admin.id, secret: admin.secret, tenant: TENANT }),
  ])
})

const tempDirs: string[] = []
after(async () => {
  await server?.close()
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

// --- helpers -------------------------------------------------------------------------------------------------

/** Issuance through the service's own issuer: offer, content, wallet.receive. Answers the process id. */
async function issue(wallet: Wallet, group = 'degree', content: unknown = DEGREE): Promise<string> {
  const body = ok(await rp.createOffer(appToken, group), `offer ${group}`)
  const { processId } = parseCredentialOfferUri(body.credential_offer_uri)
  ok(await rp.submitCredentials(appToken, processId, content), 'submit')
  const result = await wallet.receive(body.credential_offer_uri)
  assert.equal(result.status, 'issued')
  return processId
}

async function holding(groups: string[] = ['degree'], keyType: HolderKeyType = 'Ed25519'): Promise<Wallet> {
  const wallet = await Wallet.create({ keyType })
  for (const group of groups) await issue(wallet, group, group === 'verifiable-id' ? VERIFIABLE_ID : DEGREE)
  return wallet
}

interface Opened {
  link: string
  id: string
  definitionId: string
}

/** 4.6 by the relying party: the link the QR code carries. */
async function openSession(template = 'degree-check'): Promise<Opened> {
  const body = ok(await rp.createSession<SessionCreated>(appToken, template), `session ${template}`)
  const requestUri = new URLSearchParams(body.authentication_request.split('?')[1]).get('request_uri') ?? ''
  const id = decodeURIComponent(new URL(requestUri).pathname.split('/').pop() ?? '')
  return { link: body.authentication_request, id, definitionId: body.presentation_definition.id }
}

async function readSession(id: string): Promise<SessionRead> {
  return ok(await rp.readSession(appToken, id), 'read session')
}

function failedChecks(session: SessionRead): string[] {
  return (session.Validations?.checks ?? []).filter((c) => c.result === 'failed').map((c) => c.check)
}

async function rejectsWith(
  promise: Promise<unknown>,
  expected: { step: 'request' | 'response'; status: number; error: string; description?: RegExp },
): Promise<WalletProtocolError> {
  let caught: unknown
  await assert.rejects(promise, (error: unknown) => {
    caught = error
    return true
  })
  assert.ok(caught instanceof WalletProtocolError, `expected a WalletProtocolError, got ${String(caught)}`)
  assert.deepEqual(
    { step: caught.step, status: caught.status, error: caught.error },
    { step: expected.step, status: expected.status, error: expected.error },
    caught.message,
  )
  if (expected.description) assert.match(caught.errorDescription ?? '', expected.description)
  assert.equal(caught.message, `${caught.step}: ${caught.status} ${caught.error}: ${caught.errorDescription}`)
  return caught
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vc-harness-present-e2e-'))
  tempDirs.push(dir)
  return dir
}

interface CliRun {
  code: number
  stdout: string
  stderr: string
}

function cli(args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin/vc-harness.mjs'), ...args],
      { cwd: ROOT, timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

// --- verified ------------------------------------------------------------------------------------------------

describe('a verified presentation, end to end', () => {
  for (const keyType of ['Ed25519', 'P-256', 'secp256k1'] as const) {
    test(`${keyType} holder: request verified, VP accepted, the session VERIFIED with every check passed`, async () => {
      const wallet = await holding(['degree'], keyType)
      const [stored] = wallet.credentials()
      const session = await openSession()
      const steps: string[] = []
      const result = await wallet.present(session.link, { onStep: (step) => steps.push(step) })
      assert.deepEqual(steps, ['request', 'select', 'response'])
      assert.equal(result.status, 'verified')
      assert.equal(result.sessionId, session.id)
      assert.equal(result.httpStatus, 200)
      assert.deepEqual(result.response, {})
      assert.deepEqual(result.presented, [stored?.id])
      assert.equal(result.presentationSubmission?.definition_id, session.definitionId)

      const read = await readSession(session.id)
      assert.equal(read.Status, 'VERIFIED')
      assert.equal(read.Subject, wallet.did)
      assert.equal(read.Validations?.status, 'SUCCESS')
      assert.deepEqual(failedChecks(read), [])
      assert.ok(read.RequestedAt, 'the request object was fetched')
      assert.equal(read.PresentationSubmissionFormat, 'jwt_vp')
      // the service's definition names both generations: the wallet answers with the OpenID4VP identifiers,
      // and the service accepts them
      assert.deepEqual(
        result.presentationSubmission?.descriptor_map.map((d) => [
          d.format,
          d.path,
          d.path_nested?.format,
          d.path_nested?.path,
        ]),
        [['jwt_vp_json', '$', 'jwt_vc_json', '$.vp.verifiableCredential[0]']],
      )
      assert.equal(result.form.presentation_submission, JSON.stringify(result.presentationSubmission))
    })
  }

  for (const [group, alg] of [
    ['es256', 'ES256'],
    ['es256k', 'ES256K'],
  ] as const) {
    test(`a credential its issuer signed with ${alg}`, async () => {
      const wallet = await holding([group])
      const [stored] = wallet.credentials()
      assert.equal(decodeJws(stored?.credential ?? '').header.alg, alg)
      const result = await wallet.present((await openSession()).link)
      assert.equal(result.status, 'verified')
      assert.deepEqual(result.presented, [stored?.id])
    })
  }

  test('two mandatory credentials, and a pick from an optional group', async () => {
    const wallet = await holding(['degree', 'verifiable-id'])
    const both = await wallet.present((await openSession('degree-and-id')).link)
    assert.equal(both.status, 'verified')
    assert.equal(both.presented.length, 2)
    const plus = await openSession('degree-plus')
    const picked = await wallet.present(plus.link)
    assert.deepEqual(
      picked.presentationSubmission?.descriptor_map.map((d) => d.id),
      ['UniversityDegreeCredential', 'extras.VerifiableId'],
    )
    assert.equal((await readSession(plus.id)).Status, 'VERIFIED')
  })

  test('the stepwise form: startPresentation, then respond', async () => {
    const wallet = await holding()
    const session = await openSession()
    const presentation = await wallet.startPresentation(session.link)
    assert.equal((await readSession(session.id)).Status, 'PENDING')
    assert.equal(presentation.sessionId, session.id)
    assert.equal(presentation.presentationDefinition.id, session.definitionId)
    const result = await presentation.respond()
    assert.equal(result.status, 'verified')
    // the same session answered again: closed
    await rejectsWith(presentation.respond(), { step: 'response', status: 409, error: 'session_closed' })
    await rejectsWith(wallet.startPresentation(session.link), {
      step: 'request',
      status: 409,
      error: 'session_closed',
      description: /already VERIFIED/,
    })
  })
})

// --- misbehaviours -----------------------------------------------------------------------------------------------

interface Expected {
  status: number
  error?: string
  /** the checks the service reports failed, in its order */
  failed: string[]
  description?: RegExp
  sessionStatus: SessionRead['Status']
  /** the template, when the misbehaviour needs more than one credential type */
  template?: string
}

/** The misbehaviours of a Presentation Exchange answer (the 1.0-only ones are refused on this path). */
// ldp-undefined-term changes a Linked Data presentation: test/wallet/ldp.test.ts
type PeMisbehaviour = Exclude<PresentationMisbehaviour, V1OnlyPresentationMisbehaviour | 'ldp-undefined-term'>
const PE_MISBEHAVIOURS = PRESENTATION_MISBEHAVIOURS.filter(
  (m): m is PeMisbehaviour => !V1_ONLY_PRESENTATION_MISBEHAVIOURS.includes(m) && m !== 'ldp-undefined-term',
)

const EXPECTED: Record<PeMisbehaviour, Expected> = {
  'vp-wrong-nonce': {
    status: 400,
    error: 'invalid_presentation',
    failed: ['sessionBinding'],
    description: /VP nonce .* is not the nonce of this session's request/,
    sessionStatus: 'REJECTED',
  },
  'vp-wrong-aud': {
    status: 400,
    error: 'invalid_presentation',
    failed: ['sessionBinding'],
    description: /VP aud "https:\/\/wrong-audience.invalid" is not this verifier's client_id/,
    sessionStatus: 'REJECTED',
  },
  'vp-foreign-key': {
    status: 400,
    error: 'invalid_presentation',
    failed: ['holderBinding'],
    description: /was issued to did:key:\S+, not to the presenter did:key:/,
    sessionStatus: 'REJECTED',
  },
  'vp-replayed': {
    status: 400,
    error: 'invalid_presentation',
    failed: ['sessionBinding'],
    description: /VP nonce .* is not the nonce of this session's request/,
    sessionStatus: 'REJECTED',
  },
  'tampered-credential': {
    status: 400,
    error: 'invalid_presentation',
    failed: ['credentialProof'],
    description: /signature does not verify with its issuer key \(was it altered\?\)/,
    sessionStatus: 'REJECTED',
  },
  'untrusted-issuer': {
    status: 400,
    error: 'invalid_presentation',
    // the definition constrains the issuer too, so PEX no longer matches the credential
    failed: ['trustedIssuer', 'matchingIds'],
    description: /which this template does not trust/,
    sessionStatus: 'REJECTED',
  },
  'revoked-credential': {
    status: 400,
    error: 'invalid_presentation',
    failed: ['credentialStatus'],
    description: /the credential is revoked/,
    sessionStatus: 'REJECTED',
  },
  'expired-session': {
    status: 410,
    error: 'session_expired',
    failed: [],
    description: /expired at/,
    sessionStatus: 'EXPIRED',
  },
  'lying-submission': {
    status: 400,
    error: 'invalid_presentation',
    failed: ['matchingIds'],
    description:
      /descriptor_map\[0\] maps descriptor "UniversityDegreeCredential" to verifiableCredential\[1\], which does not satisfy it/,
    sessionStatus: 'REJECTED',
    template: 'degree-and-id',
  },
  'access-denied': {
    status: 200,
    failed: ['walletResponse'],
    sessionStatus: 'REJECTED',
  },
}

describe('misbehaviours: the service answers each with its exact error', () => {
  test('every Presentation Exchange misbehaviour has an expectation', () => {
    assert.deepEqual(Object.keys(EXPECTED).sort(), [...PE_MISBEHAVIOURS].sort())
  })

  test('the OpenID4VP 1.0 misbehaviours are a WalletUsageError here, before anything is posted', async () => {
    const wallet = await holding()
    for (const misbehaviour of V1_ONLY_PRESENTATION_MISBEHAVIOURS) {
      const session = await openSession()
      await assert.rejects(
        wallet.present(session.link, { misbehave: [misbehaviour] }),
        (e: Error) =>
          e instanceof WalletUsageError &&
          e.message.includes(misbehaviour) &&
          /OpenID4VP 1\.0/.test(e.message),
      )
      assert.equal((await readSession(session.id)).Status, 'PENDING', misbehaviour)
    }
  })

  for (const misbehaviour of PE_MISBEHAVIOURS) {
    const expected = EXPECTED[misbehaviour]
    test(`${misbehaviour}: ${expected.status} ${expected.error ?? ''} ${expected.failed.join(', ')}`, async () => {
      const wallet = await holding(expected.template ? ['degree', 'verifiable-id'] : ['degree'])
      if (misbehaviour === 'vp-replayed') {
        assert.equal((await wallet.present((await openSession()).link)).status, 'verified')
      }
      if (misbehaviour === 'revoked-credential') {
        const processId = await issue(wallet)
        ok(await rp.setCredentialStatus(adminToken, processId, { status: 'revoked' }), 'revoke')
        // a newer, active degree: the misbehaviour picks the revoked one anyway
        await issue(wallet)
      }
      const session = await openSession(expected.template)
      let outcome: Promise<unknown>
      if (misbehaviour === 'expired-session') {
        const presentation = await wallet.startPresentation(session.link)
        clock.advance(LIFETIME_MS + 1000)
        outcome = presentation.respond({ misbehave: [misbehaviour] }).finally(() => clock.reset())
      } else {
        outcome = wallet.present(session.link, { misbehave: [misbehaviour] })
      }
      if (expected.status === 200) {
        const result = (await outcome) as Awaited<ReturnType<Wallet['present']>>
        assert.equal(result.status, 'rejected-by-wallet')
        assert.equal(result.httpStatus, 200)
      } else {
        await rejectsWith(outcome, {
          step: 'response',
          status: expected.status,
          error: expected.error as string,
          ...(expected.description && { description: expected.description }),
        })
      }
      if (misbehaviour === 'expired-session') clock.advance(LIFETIME_MS + 1000)
      const read = await readSession(session.id)
      clock.reset()
      assert.equal(read.Status, expected.sessionStatus)
      assert.deepEqual(failedChecks(read), expected.failed)
      if (expected.failed.length > 0) assert.equal(read.Validations?.status, 'REJECT')
    })
  }

  test("the wallet's own refusals post nothing: the session stays PENDING", async () => {
    const wallet = await holding()
    // an expired request object on the wallet's clock
    const late = await openSession()
    await rejectsWith(wallet.startPresentation(late.link, { now: () => Date.now() + LIFETIME_MS + 1000 }), {
      step: 'request',
      status: 200,
      error: 'invalid_request_object',
      description: /expired at/,
    })
    // nothing held that matches
    const empty = await Wallet.create()
    const unmatched = await openSession()
    await assert.rejects(empty.present(unmatched.link), (e: Error) => {
      assert.ok(e instanceof NoMatchingCredentialsError)
      assert.deepEqual(e.descriptors, ['UniversityDegreeCredential'])
      return true
    })
    for (const { id } of [late, unmatched]) {
      const read = await readSession(id)
      assert.equal(read.Status, 'PENDING')
      assert.equal(read.Validations, null)
    }
  })

  test('the request object of an unknown and of an expired session', async () => {
    const wallet = await holding()
    const session = await openSession()
    const unknown = session.link.replaceAll(session.id, '00000000-0000-4000-8000-000000000000')
    await rejectsWith(wallet.startPresentation(unknown), {
      step: 'request',
      status: 404,
      error: 'not_found',
    })
    clock.advance(LIFETIME_MS + 1000)
    try {
      await rejectsWith(wallet.startPresentation(session.link), {
        step: 'request',
        status: 410,
        error: 'session_expired',
      })
    } finally {
      clock.reset()
    }
  })
})

// --- CLI -----------------------------------------------------------------------------------------------------------

describe('vc-harness wallet present (CLI, child process)', () => {
  test('presents from a wallet file and prints the outcome as JSON; a rejection exits 1 with JSON too', async () => {
    const file = join(tempDir(), 'wallet.json')
    const wallet = await Wallet.create({ file, keyType: 'P-256' })
    await issue(wallet)
    const [stored] = wallet.credentials()
    const [good, bad, declined] = await Promise.all([openSession(), openSession(), openSession()])
    const [presented, rejected, denied] = await Promise.all([
      cli(['wallet', 'present', good.link, '--wallet', file]),
      cli(['wallet', 'present', bad.link, '--wallet', file, '--misbehave', 'vp-wrong-aud']),
      cli(['wallet', 'present', declined.link, '--wallet', file, '--misbehave', 'access-denied']),
    ])

    assert.equal(presented.code, 0, presented.stderr)
    const output = JSON.parse(presented.stdout)
    assert.equal(output.status, 'verified')
    assert.equal(output.holder, wallet.did)
    assert.equal(output.sessionId, good.id)
    assert.equal(output.httpStatus, 200)
    assert.deepEqual(output.presented, [stored?.id])
    assert.equal(decodeJws(output.vpToken).payload.iss, wallet.did)
    assert.match(presented.stderr, /^holder: did:key:zDn\S+ \(P-256, wallet /m)
    assert.match(presented.stderr, /^request: did:key:\S+ asks for presentation definition /m)
    assert.match(presented.stderr, /^select: UniversityDegreeCredential ← urn:uuid:/m)
    assert.match(presented.stderr, /^response: HTTP 200$/m)
    assert.equal((await readSession(good.id)).Status, 'VERIFIED')

    assert.equal(rejected.code, 1)
    const failure = JSON.parse(rejected.stdout)
    assert.deepEqual(
      { status: failure.status, step: failure.step, httpStatus: failure.httpStatus, error: failure.error },
      { status: 'failed', step: 'response', httpStatus: 400, error: 'invalid_presentation' },
    )
    assert.match(failure.error_description, /sessionBinding: VP aud/)
    const lines = rejected.stderr.trimEnd().split('\n')
    assert.match(lines.at(-1) ?? '', /^vc-harness wallet: response: 400 invalid_presentation: /)
    assert.ok(!lines.some((line) => /^\s+at /.test(line)), `no stack trace:\n${rejected.stderr}`)

    assert.equal(denied.code, 0, denied.stderr)
    assert.equal(JSON.parse(denied.stdout).status, 'rejected-by-wallet')
    assert.deepEqual(failedChecks(await readSession(declined.id)), ['walletResponse'])
  })

  test('nothing to present: exit 1, one line naming the descriptor, nothing posted', async () => {
    const session = await openSession()
    const run = await cli(['wallet', 'present', session.link])
    assert.equal(run.code, 1)
    assert.equal(run.stdout, '')
    assert.match(
      run.stderr.trimEnd().split('\n').at(-1) ?? '',
      /^vc-harness wallet: no held credential satisfies input descriptor UniversityDegreeCredential/,
    )
    assert.equal((await readSession(session.id)).Status, 'PENDING')
  })
})
