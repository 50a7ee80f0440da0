import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import type { WalletTestRun } from '../../src/harness/wallet-test/runner.ts'
import { mdocCertificateProblems, parseCertificates } from '../../src/shared/x509.ts'

// The ISO mdoc plans as a wallet vendor's CI runs them: `vc-harness wallet-test` with our CLI wallet as the
// command. An mdoc's device key signs ES256, so the wallet is made P-256 (--key-type); it trusts the file
// VC_HARNESS_TRUST_ANCHOR names, which holds the verifier CA and the run's IACA. Every plan's case runs
// in-process in test/harness/wallet-test/our-wallet.test.ts; here a few, each spawning the CLI wallet.

const BIN = new URL('../../bin/vc-harness.mjs', import.meta.url).pathname

const cli = (args: string[]) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, 'wallet-test', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => {
      stdout += c
    })
    child.stderr.on('data', (c) => {
      stderr += c
    })
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })

describe('vc-harness wallet-test with the ISO mdoc plans', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'wallet-test-mdoc-cli-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  test('our P-256 CLI wallet passes issuance-mdoc and presentation-mdoc cases, positive and negative', async () => {
    const reports = join(dir, 'ok')
    const cases = [
      'issuance-mdoc:positive',
      'issuance-mdoc:credential-foreign-signature',
      'issuance-mdoc:mdoc-digest-mismatch',
      'presentation-mdoc:setup',
      'presentation-mdoc:positive-x509-hash-jwt',
      'presentation-mdoc:nonce-missing',
    ]
    const out = await cli([
      '--plan',
      'all',
      ...cases.flatMap((c) => ['--case', c]),
      '--wallet-command',
      'vc-harness wallet open --key-type P-256 {link}',
      '--reports',
      reports,
    ])
    assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`)
    const json = JSON.parse(readFileSync(join(reports, 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.deepEqual(
      json.results.map((r) => [r.id, r.verdict.pass]),
      cases.map((c) => [c, true]),
    )
    // the refusals were the wallet's own word: a non-zero exit naming the rule
    const foreign = json.results.find((r) => r.id === 'issuance-mdoc:credential-foreign-signature')
    assert.match(foreign?.output ?? '', /issuerAuth/)
    // the trust anchor file: the verifier CA and the IACA; iaca.pem the IACA alone
    const anchors = parseCertificates(readFileSync(join(reports, 'trust-anchor.pem'), 'utf8'))
    assert.equal(anchors.length, 2)
    const iaca = readFileSync(join(reports, 'iaca.pem'), 'utf8')
    assert.equal(anchors[1]?.toString('pem').trim(), iaca.trim())
    assert.deepEqual(mdocCertificateProblems(iaca, 'iaca'), [])
    assert.ok(existsSync(join(reports, 'wallet-test.xml')))
  })

  test("an Ed25519 wallet cannot hold an mDL: the positive case fails with the wallet's reason", async () => {
    const reports = join(dir, 'ed25519')
    const out = await cli([
      '--plan',
      'issuance-mdoc',
      '--case',
      'issuance-mdoc:positive',
      '--wallet-command',
      'vc-harness wallet open {link}',
      '--reports',
      reports,
    ])
    assert.equal(out.code, 1, `${out.stdout}\n${out.stderr}`)
    const json = JSON.parse(readFileSync(join(reports, 'wallet-test.json'), 'utf8')) as WalletTestRun
    assert.equal(json.results[0]?.verdict.pass, false)
    assert.match(json.results[0]?.output ?? '', /P-256/)
  })
})
