import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { serve } from '../../src/cli/serve.ts'
import { parseCredentialOfferUri, RelyingPartyClient } from '../../src/client/index.ts'
import { planSandbox, sampleCredentials, terminalQr } from '../../src/harness/sandbox.ts'
import { parseConfig } from '../../src/service/config/index.ts'
import { Wallet } from '../../src/wallet/index.ts'
import { DCQL_TEMPLATES, OwfDcqlWallet } from '../browser-helpers.ts'
import { DEMO, demoConfig } from '../helpers.ts'

const BIN = new URL('../../bin/vc-harness.mjs', import.meta.url).pathname
const OFFER_LINK = /^openid-credential-offer:\/\/\?credential_offer_uri=\S+$/m
/** A pe session's link (OpenID4VP draft 20). */
const VP_LINK = /^openid-vp:\/\/\?\S+$/m
/** A dcql session's link (OpenID4VP 1.0). */
const VP1_LINK = /^openid4vp:\/\/\?\S+$/m
/** The session line under a verification block: its id. */
const SESSION_LINE = /^session: (\S+), expires \d\d:\d\d:\d\d$/m

interface Sandboxed {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exited: Promise<number | null>
  /** Resolves once stdout matches `pattern` (or rejects when the child exits first or after 20 s). */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>
}

function sandbox(args: string[]): Sandboxed {
  const child = spawn(process.execPath, [BIN, 'serve', '--sandbox', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  const waiters = new Set<() => void>()
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString()
    for (const wake of waiters) wake()
  })
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const waitFor = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(out)
        if (!match) return
        waiters.delete(check)
        clearTimeout(timer)
        resolve(match)
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error(`timed out waiting for ${pattern}\n--- stdout ---\n${out}\n--- stderr ---\n${err}`))
      }, 20_000)
      waiters.add(check)
      exited.then((code) => {
        if (!waiters.has(check)) return
        waiters.delete(check)
        clearTimeout(timer)
        reject(new Error(`sandbox exited (${code}) before ${pattern}\n${out}\n${err}`))
      })
      check()
    })
  return { child, stdout: () => out, stderr: () => err, exited, waitFor }
}

describe('vc-harness serve --sandbox', () => {
  const dirs: string[] = []
  const children: ChildProcess[] = []
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'vch-sandbox-'))
    dirs.push(dir)
    return dir
  }
  after(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  test('--once: a real wallet receives and presents; the sandbox reports both and exits 0', async () => {
    const data = tempDir()
    const run = sandbox(['--once', '--data', data])
    children.push(run.child)
    const offerLink = (await run.waitFor(OFFER_LINK))[0]
    const vpLink = (await run.waitFor(VP_LINK))[0]
    const sessionId = (await run.waitFor(SESSION_LINE))[1]
    await run.waitFor(/session created/)

    // What is printed under each link is exactly the terminal QR code of that link.
    const out = run.stdout()
    assert.ok(out.includes(`${offerLink}\n${await terminalQr(offerLink)}`), 'the offer QR block')
    assert.ok(out.includes(`${vpLink}\n${await terminalQr(vpLink)}`), 'the verification QR block')
    // The default verification template is a pe one: the block names its profile and its input descriptor.
    assert.match(out, /\(asks for UniversityDegreeCredential; OpenID4VP draft 20, Presentation Exchange\)$/m)
    assert.match(out, /^profile: OpenID4VP draft 20, Presentation Exchange$/m)
    assert.match(
      out,
      /^input descriptor UniversityDegreeCredential; formats jwt, jwt_vc, jwt_vc_json, [^;]+; no claims named$/m,
    )

    const wallet = await Wallet.create()
    const received = await wallet.receive(offerLink)
    assert.equal(received.status, 'issued')
    await run.waitFor(
      /\[issuance #1\] credential ISSUED \(sent to the wallet in the credential response\): holder did:key:/,
    )
    assert.ok(run.stdout().includes(`holder ${wallet.did}`))

    const presented = await wallet.present(vpLink)
    assert.equal(presented.status, 'verified')
    assert.equal(presented.sessionId, sessionId)

    assert.equal(await run.exited, 0, `exit code; stdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`)
    const final = run.stdout()
    assert.match(final, /\[verification #1\] wallet fetched the verification request/)
    assert.match(final, /\[verification #1\] presentation VERIFIED: checks \S/)
    assert.match(
      final,
      new RegExp(`\\[verification #1\\] SourceWallet: .+; Subject: ${wallet.did}; Status: VERIFIED`),
    )
    assert.match(final, /both succeeded/)
    // --once prints no second offer or session.
    assert.doesNotMatch(final, /Issuance #2|Verification #2/)

    const log = readFileSync(join(data, 'sandbox.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    const steps = log.map((e) => `${e.flow}:${e.step}`)
    for (const step of [
      'issuance:offer_created',
      'issuance:issued',
      'verification:session_created',
      'verification:request_retrieved',
      'verification:verified',
      'verification:session_read',
    ]) {
      assert.ok(steps.includes(step), `${step} in the log (${steps.join(', ')})`)
    }
    const read = log.find((e) => e.step === 'session_read')
    assert.equal(read?.subject, wallet.did)
    const created = log.find((e) => e.step === 'session_created')
    assert.equal(created?.id, sessionId)
    assert.equal(created?.profile, 'pe')
    assert.deepEqual(read?.failedChecks, [])
    // The sandbox's own key never reaches its output or its log (the demo banner aside, which prints the
    // public demo keys on purpose; the log has none of them).
    assert.ok(!JSON.stringify(log).includes(DEMO.app.secret))
  })

  test('--once: a rejected presentation is reported with its failed checks and the exit code is 1', async () => {
    const data = tempDir()
    const run = sandbox(['--once', '--data', ':memory:', '--sandbox-log', join(data, 'log.ndjson')])
    children.push(run.child)
    const offerLink = (await run.waitFor(OFFER_LINK))[0]
    const vpLink = (await run.waitFor(VP_LINK))[0]
    const wallet = await Wallet.create()
    await wallet.receive(offerLink)
    // The wallet signs the presentation with a key that is not its holder key: holder binding fails.
    await assert.rejects(wallet.present(vpLink, { misbehave: ['vp-foreign-key'] }))
    assert.equal(await run.exited, 1)
    const out = run.stdout()
    assert.match(out, /\[verification #1\] presentation REJECTED: errors \S/)
    assert.match(out, /\[verification #1\] SourceWallet: .*Status: REJECTED/)
    assert.match(out, /\[verification #1\] {3}failed check \w+: \S/)
    assert.match(out, /not both succeeded/)
    const log = readFileSync(join(data, 'log.ndjson'), 'utf8')
    assert.match(log, /"step":"failed_check"/)
  })

  test('--once with the OpenID4VP 1.0 templates: an independent wallet receives the SD-JWT VC and presents it over DCQL', async () => {
    const data = tempDir()
    const run = sandbox([
      '--once',
      '--data',
      ':memory:',
      '--sandbox-log',
      join(data, 'log.ndjson'),
      '--issue',
      DCQL_TEMPLATES.issue,
      '--verify',
      DCQL_TEMPLATES.verify,
    ])
    children.push(run.child)
    const offerLink = (await run.waitFor(OFFER_LINK))[0]
    const vpLink = (await run.waitFor(VP1_LINK))[0]
    const sessionId = (await run.waitFor(SESSION_LINE))[1]
    await run.waitFor(/session created/)
    const out = run.stdout()
    assert.doesNotMatch(out, VP_LINK, 'a dcql session has no openid-vp:// link')
    // decentralized_identifier, the request object by reference (pid-check in config/demo.json).
    assert.match(
      vpLink,
      /^openid4vp:\/\/\?client_id=decentralized_identifier%3Adid%3Akey%3A[^&]+&request_uri=http/,
    )
    assert.ok(out.includes(`${vpLink}\n${await terminalQr(vpLink)}`), 'the verification QR block')
    assert.match(
      out,
      /verification: tenant "demo", template "pid-check" \(asks for VerifiableId; OpenID4VP 1\.0, DCQL\)$/m,
    )
    assert.match(out, /=== Issuance #1: VerifiableId \(template "pid-sd-jwt", tenant "demo"\) ===/)
    assert.match(out, /^profile: OpenID4VP 1\.0, DCQL$/m)
    assert.match(
      out,
      /^credential query VerifiableId; type http:\/\/127\.0\.0\.1:\d+\/oid4vci\/demo\/vct\/VerifiableId; format dc\+sd-jwt; claims familyName$/m,
    )

    const wallet = new OwfDcqlWallet()
    await wallet.receive(offerLink)
    await run.waitFor(/\[issuance #1\] credential ISSUED \(sent to the wallet in the credential response\)/)
    const answered = await wallet.present(vpLink)
    assert.equal(answered.status, 200, answered.body)

    assert.equal(await run.exited, 0, `exit code; stdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`)
    const final = run.stdout()
    assert.match(final, /\[verification #1\] wallet fetched the verification request/)
    assert.match(final, /\[verification #1\] presentation VERIFIED: checks \S/)
    assert.match(final, /\[verification #1\] SourceWallet: .*; Subject: \S+; Status: VERIFIED/)
    assert.match(final, /both succeeded/)
    const log = readFileSync(join(data, 'log.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    const created = log.find((e) => e.step === 'session_created')
    assert.ok(created, 'a session_created entry')
    assert.equal(created.id, sessionId)
    assert.equal(created.profile, 'dcql')
    assert.deepEqual(
      (created.requested as { id: string; formats: string[]; claims: string[] }[]).map((r) => [
        r.id,
        r.formats,
        r.claims,
      ]),
      [['VerifiableId', ['dc+sd-jwt'], ['familyName']]],
    )
    const verified = log.find((e) => e.step === 'verified')
    assert.ok(verified, 'a verified entry')
    assert.equal(verified.id, sessionId)
    assert.deepEqual((verified.verificationResult as { errors: string[] }).errors, [])
  })

  test('without --once a finished flow gets a fresh offer; --public-url goes into the links', async () => {
    const run = sandbox(['--data', ':memory:', '--public-url', 'http://192.0.2.1:8080/'])
    children.push(run.child)
    const url = (await run.waitFor(/^vc-harness listening on (http:\S+)$/m))[1] as string
    const offerLink = (await run.waitFor(OFFER_LINK))[0]
    await run.waitFor(VP_LINK)
    assert.match(run.stdout(), /public URL \(in offers and requests\): http:\/\/192\.0\.2\.1:8080$/m)
    assert.ok(offerLink.includes(encodeURIComponent('http://192.0.2.1:8080/oid4vci/demo/credential-offer/')))
    assert.doesNotMatch(run.stdout(), /a phone cannot reach/)
    // The relying party rejects the process (4.4 extension); the sandbox reports it and offers anew.
    const { processId } = parseCredentialOfferUri(offerLink)
    const client = new RelyingPartyClient(url)
    const token = await client.token({ keyId: DEMO.app.id, secret: DEMO.app.secret, tenant: 'demo' })
    assert.equal((await client.rejectProcess(token, processId, 'test')).status, 200)
    await run.waitFor(/\[issuance #1\] issuance REJECTED/)
    const second = await run.waitFor(/=== Issuance #2: [^\n]*\n[^\n]*\n(openid-credential-offer:\S+)/)
    assert.notEqual(second[1], offerLink)
    assert.doesNotMatch(run.stdout(), /Verification #2/)
    run.child.kill('SIGTERM')
    assert.equal(await run.exited, 0)
  })

  test('a template without an application key is refused before the service starts (exit 2)', async () => {
    // In-process: serve() throws a ConfigError before listening, which main() turns into exit 2 (that
    // wiring is proven by a child process in test/cli/crash.test.ts); a child here costs a service start-up.
    const printed: string[] = []
    const log = console.log
    console.log = (...args: unknown[]) => printed.push(args.join(' '))
    try {
      await assert.rejects(
        serve(['--sandbox', '--port', '0', '--data', ':memory:', '--issue', 'nope']),
        (error: Error) =>
          error.name === 'ConfigError' &&
          /--sandbox: --issue nope: no issuance template of that id \(known: degree, degree-ldp, pid-sd-jwt, mdl, pid-haip\)/.test(
            error.message,
          ),
      )
    } finally {
      console.log = log
    }
    assert.doesNotMatch(printed.join('\n'), /listening on/)
  })
})

describe('sandbox planning', () => {
  test('defaults to the first templates an application key may use; a keyless template is skipped', () => {
    const raw = structuredClone(demoConfig()) as unknown as {
      tenants: { issuanceTemplates: unknown[]; apiKeys: { template?: string }[] }[]
    }
    const tenant = raw.tenants[0]
    assert.ok(tenant)
    tenant.issuanceTemplates.unshift({ id: 'keyless', credentialType: 'VerifiableId' })
    const plan = planSandbox(parseConfig(raw))
    assert.equal(plan.issuance.template, 'degree')
    assert.equal(plan.issuance.key.keyId, DEMO.app.id)
    assert.equal(plan.verification.template, 'degree-check')
    assert.equal(plan.verification.key.keyId, DEMO.verifierApp.id)
    assert.equal(plan.verification.profile, 'pe')
    assert.equal(plan.issuance.profile, undefined)
    // The demo's OpenID4VP 1.0 pair, each with its own linked application key.
    const dcql = planSandbox(parseConfig(raw), DCQL_TEMPLATES)
    assert.deepEqual(
      [dcql.issuance.template, dcql.issuance.credentialTypes, dcql.issuance.key.ssiconfig],
      ['pid-sd-jwt', ['VerifiableId'], 'pid-sd-jwt'],
    )
    assert.deepEqual(
      [dcql.verification.template, dcql.verification.profile, dcql.verification.key.ssiconfig],
      ['pid-check', 'dcql', 'pid-check'],
    )
    assert.notEqual(dcql.verification.key.keyId, DEMO.verifierApp.id)
    assert.throws(
      () => planSandbox(parseConfig(raw), { issue: 'keyless' }),
      /--issue keyless: tenant "demo" has no application key linked to it/,
    )
    // An application key without a template qualifies for any template.
    tenant.apiKeys.push({
      id: '3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b',
      secret: 'unlinked-app-secret-abcdefghijkl',
      role: 'app',
    } as never)
    const unlinked = planSandbox(parseConfig(raw), { issue: 'keyless' })
    assert.equal(unlinked.issuance.key.keyId, '3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b')
    assert.equal(unlinked.issuance.key.ssiconfig, 'keyless')
  })

  test('sample content matches the template type', () => {
    assert.deepEqual(sampleCredentials('UniversityDegreeCredential')[0]?.type, [
      'VerifiableCredential',
      'UniversityDegreeCredential',
    ])
    const identity = sampleCredentials('VerifiableId')[0]?.credentialSubject as Record<string, unknown>
    assert.ok(identity.familyName)
  })
})
