import assert from 'node:assert/strict'
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { Agent, request } from 'undici'
import { loadTls, tlsFilePair } from '../../src/cli/tls-options.ts'
import { parseCredentialOfferUri, RelyingPartyClient } from '../../src/client/index.ts'
import { freePort } from '../../src/harness/free-port.ts'
import { pinnedFetch } from '../../src/harness/loopback-fetch.ts'
import { tlsWarnings } from '../../src/service/tls.ts'
import { certificatePem, generateTestCa, issueCertificate } from '../../src/shared/x509.ts'
import { explain, runCli, type Serving, startServe } from '../fixtures/cli.ts'
import { DEMO } from '../helpers.ts'

// HTTPS for phones (docs/phones.md): `vc-harness dev-cert` makes a development CA and a server certificate for
// a DNS name; `serve --tls-cert/--tls-key` (also with --sandbox, --workers, and `wallet-test`) listens with
// them, and the links wallets get name https://<that name>. The name does not resolve here: clients connect to
// 127.0.0.1 with the TLS server name set to it, as a phone resolving it would.

const NAME = 'wallet-test.example.lan'
const DAY = 86_400_000

interface DevCert {
  dir: string
  ca: string
  cert: string
  key: string
  caKey: string
}

function tempDir(t: { after: (fn: () => void) => void }, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function devCert(dir: string, args: string[]): Promise<DevCert & { stdout: string }> {
  const result = await runCli(['dev-cert', '--out', dir, ...args])
  assert.equal(result.code, 0, explain(result))
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    cert: join(dir, 'cert.pem'),
    key: join(dir, 'key.pem'),
    caKey: join(dir, 'ca-key.pem'),
    stdout: result.stdout,
  }
}

const pemBlocks = (text: string) =>
  text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []

/** An HTTPS client that trusts `ca` (or nothing but the system's CAs) and sends `servername` as SNI and for the name check. */
function client(options: { ca?: string; servername?: string }) {
  return new Agent({
    connect: {
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      ...(options.servername !== undefined ? { servername: options.servername } : {}),
    },
  })
}

/** A fetch over `agent` (RelyingPartyClient takes one). */
const fetchVia =
  (agent: Agent): typeof fetch =>
  (input, init) =>
    import('undici').then(({ fetch: undiciFetch }) =>
      undiciFetch(input as string, { ...(init as object), dispatcher: agent } as never),
    ) as unknown as Promise<Response>

async function stop(serving: Serving) {
  serving.child.kill('SIGTERM')
  return serving.exited
}

describe('vc-harness dev-cert', () => {
  test('makes a CA and a server certificate for the name that chain, with private keys 0600', async (t) => {
    const dir = tempDir(t, 'vc-harness-dev-cert-')
    const made = await devCert(dir, ['--name', NAME, '--ip', '192.168.1.20', '--days', '30'])
    const ca = new X509Certificate(readFileSync(made.ca))
    const chain = pemBlocks(readFileSync(made.cert, 'utf8'))
    assert.equal(chain.length, 2, 'cert.pem holds the server certificate, then the CA')
    const leaf = new X509Certificate(chain[0] as string)
    assert.equal(new X509Certificate(chain[1] as string).fingerprint256, ca.fingerprint256)
    // The leaf chains to the CA (RFC 5280 §6.1: issuer name and signature).
    assert.ok(leaf.checkIssued(ca), 'the CA issued the server certificate')
    assert.ok(leaf.verify(ca.publicKey), "the CA's key signed it")
    assert.ok(ca.ca, 'basicConstraints cA on the CA')
    assert.ok(!leaf.ca, 'the server certificate is no CA')
    // SAN dNSName (and the optional iPAddress), serverAuth, P-256.
    assert.equal(leaf.subjectAltName, `DNS:${NAME}, IP Address:192.168.1.20`)
    assert.equal(leaf.checkHost(NAME), NAME)
    assert.deepEqual(leaf.keyUsage, ['1.3.6.1.5.5.7.3.1'])
    assert.equal(leaf.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1')
    const days = (Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / DAY
    assert.ok(days <= 30 && days > 29, `valid for --days 30 (${days})`)
    // The private keys: owner only; key.pem is the leaf's key.
    assert.equal(statSync(made.key).mode & 0o777, 0o600)
    assert.equal(statSync(made.caKey).mode & 0o777, 0o600)
    assert.ok(leaf.checkPrivateKey(createPrivateKey(readFileSync(made.key))))
    // ca.crt: the same CA in DER, for phone installers that look for that extension.
    assert.equal(new X509Certificate(readFileSync(join(dir, 'ca.crt'))).fingerprint256, ca.fingerprint256)
    // The next steps name the files, the phone's menus and the serve command.
    assert.match(made.stdout, /Install a certificate → CA certificate/)
    assert.match(made.stdout, /Certificate Trust Settings/)
    assert.match(
      made.stdout,
      new RegExp(`--tls-cert \\S+cert\\.pem --tls-key \\S+key\\.pem --public-url https://${NAME}:8443`),
    )
  })

  test('a second run in the same folder reuses the CA; its name constraints hold', async (t) => {
    const dir = tempDir(t, 'vc-harness-dev-cert-')
    const first = await devCert(dir, ['--name', NAME])
    const caBefore = readFileSync(first.ca, 'utf8')
    const leafBefore = pemBlocks(readFileSync(first.cert, 'utf8'))[0]
    const second = await devCert(dir, ['--name', `phone.${NAME}`, '--ip', '10.0.0.7'])
    assert.match(second.stdout, /CA reused/)
    assert.equal(readFileSync(second.ca, 'utf8'), caBefore, 'the CA a phone trusts is kept')
    const leaf = new X509Certificate(pemBlocks(readFileSync(second.cert, 'utf8'))[0] as string)
    assert.notEqual(leaf.toString(), leafBefore, 'a new server certificate')
    assert.ok(leaf.verify(new X509Certificate(caBefore).publicKey))
    assert.equal(leaf.checkHost(`phone.${NAME}`), `phone.${NAME}`)

    // A name outside the CA's constraints: refused, and the CA is left alone.
    const outside = await runCli(['dev-cert', '--out', dir, '--name', 'bank.example.com'])
    assert.equal(outside.code, 2, explain(outside))
    assert.match(outside.stderr, /may not certify bank\.example\.com .*name constraints/)
    assert.equal(readFileSync(first.ca, 'utf8'), caBefore)

    // The constraint is in the certificate, not only in our check: a TLS client (OpenSSL) refuses a
    // certificate the CA signs for another name.
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const rogue = await issueCertificate({
      issuer: {
        certificate: caBefore,
        privateKey: createPrivateKey(readFileSync(first.caKey)),
      },
      publicKey,
      dns: ['bank.example.com'],
      extendedKeyUsages: ['1.3.6.1.5.5.7.3.1'],
    })
    const server = createServer(
      { cert: certificatePem(rogue), key: privateKey.export({ type: 'pkcs8', format: 'pem' }) },
      (_req, res) => res.end('ok'),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.after(() => server.close())
    const port = (server.address() as AddressInfo).port
    const agent = client({ ca: caBefore, servername: 'bank.example.com' })
    t.after(() => agent.close())
    await assert.rejects(
      request(`https://127.0.0.1:${port}/`, { dispatcher: agent }),
      (error: Error & { code?: string; cause?: { code?: string } }) =>
        /permitted.subtree|name.constraint/i.test(
          `${error.code} ${error.message} ${error.cause?.code ?? ''}`,
        ),
    )
  })

  test('usage errors exit 2 with the reason', async () => {
    const noName = await runCli(['dev-cert', '--out', join(tmpdir(), 'never-made')])
    assert.equal(noName.code, 2, explain(noName))
    assert.match(noName.stderr, /--name is required/)
    const ip = await runCli(['dev-cert', '--name', '192.168.1.20', '--out', join(tmpdir(), 'never-made')])
    assert.equal(ip.code, 2, explain(ip))
    assert.match(ip.stderr, /is an IP address, not a DNS name/)
    const long = await runCli([
      'dev-cert',
      '--name',
      NAME,
      '--days',
      '398',
      '--out',
      join(tmpdir(), 'never-made'),
    ])
    assert.equal(long.code, 2, explain(long))
    assert.match(long.stderr, /--days 398: whole days from 1 to 397/)
  })
})

describe('serve --tls-cert --tls-key', () => {
  test('answers over HTTPS a client that trusts the CA, not one that does not; links name the certificate', async (t) => {
    const certs = await devCert(tempDir(t, 'vc-harness-tls-'), ['--name', NAME])
    const ca = readFileSync(certs.ca, 'utf8')
    const serving = await startServe(['--data', ':memory:', '--tls-cert', certs.cert, '--tls-key', certs.key])
    t.after(() => stop(serving))
    const port = new URL(serving.url).port
    assert.equal(serving.url, `https://127.0.0.1:${port}`)
    // No --public-url: the certificate's name (a phone reaches that, not the listening address).
    const publicUrl = `https://${NAME}:${port}`
    await waitForOutput(serving, /valid until/)
    assert.match(serving.output(), new RegExp(`public URL \\(in offers and requests\\): ${publicUrl}`))
    assert.match(serving.output(), new RegExp(`TLS: certificate for ${NAME}`))

    const trusting = client({ ca, servername: NAME })
    t.after(() => trusting.close())
    const health = await request(`${serving.url}/health`, { dispatcher: trusting })
    assert.equal(health.statusCode, 200)
    assert.deepEqual(await health.body.json(), { status: 'ok' })

    // Without the CA: the chain does not verify (a phone that has not installed and trusted ca.pem).
    const stranger = client({ servername: NAME })
    t.after(() => stranger.close())
    await assert.rejects(
      request(`${serving.url}/health`, { dispatcher: stranger }),
      (error: Error & { code?: string }) =>
        /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT/.test(
          error.code ?? '',
        ),
    )
    // With the CA but another name: the name check fails (a URL with the machine's address).
    const byAddress = client({ ca })
    t.after(() => byAddress.close())
    await assert.rejects(
      request(`${serving.url}/health`, { dispatcher: byAddress }),
      /ERR_TLS_CERT_ALTNAME_INVALID|does not match|altnames/i,
    )

    // What a wallet gets: https URLs under the name (offer, issuer metadata, request_uri, response_uri).
    const rp = new RelyingPartyClient(serving.url, fetchVia(trusting))
    const { app, verifierApp } = DEMO
    const issuer = await rp.token({
      keyId: app.id,
      secret: app.secret,
      tenant: app.tenant,
      ssiconfig: 'degree',
    })
    const offer = await rp.createOffer(issuer, 'degree')
    assert.equal(offer.status, 201, offer.text)
    const { offerUrl } = parseCredentialOfferUri(
      (offer.body as { credential_offer_uri: string }).credential_offer_uri,
    )
    assert.ok(offerUrl.startsWith(`${publicUrl}/oid4vci/${app.tenant}/credential-offer/`), offerUrl)
    const metadata = await request(
      `${serving.url}/.well-known/openid-credential-issuer/oid4vci/${app.tenant}`,
      {
        dispatcher: trusting,
      },
    )
    const { credential_issuer } = (await metadata.body.json()) as { credential_issuer: string }
    assert.equal(credential_issuer, `${publicUrl}/oid4vci/${app.tenant}`)
    const verifier = await rp.token({
      ...{ keyId: verifierApp.id, secret: verifierApp.secret },
      ...{ tenant: verifierApp.tenant, ssiconfig: 'degree-check' },
    })
    const session = await rp.createSession(verifier, 'degree-check')
    assert.equal(session.status, 201, session.text)
    const link = new URL((session.body as { authentication_request: string }).authentication_request)
    assert.ok(link.searchParams.get('request_uri')?.startsWith(`${publicUrl}/oid4vp/${app.tenant}/requests/`))
    assert.ok(
      link.searchParams.get('redirect_uri')?.startsWith(`${publicUrl}/oid4vp/${app.tenant}/responses/`),
    )

    // A graceful close still works over TLS.
    assert.deepEqual(await stop(serving), { code: 0, signal: null })
  })

  test('an x509_san_dns template names the DNS name: client_id, request_uri and the verifier certificate', async (t) => {
    const dir = tempDir(t, 'vc-harness-tls-')
    const certs = await devCert(dir, ['--name', NAME])
    const config = join(dir, 'config.json')
    writeFileSync(config, JSON.stringify(x509Config()))
    const port = await freePort()
    const publicUrl = `https://${NAME}:${port}`
    const serving = await startServe([
      ...['--config', config, '--data', ':memory:', '--port', String(port)],
      ...['--tls-cert', certs.cert, '--tls-key', certs.key, '--public-url', publicUrl],
    ])
    t.after(() => stop(serving))
    const agent = client({ ca: readFileSync(certs.ca, 'utf8'), servername: NAME })
    t.after(() => agent.close())
    const rp = new RelyingPartyClient(serving.url, fetchVia(agent))
    const token = await rp.token({
      keyId: X509_KEY.id,
      secret: X509_KEY.secret,
      tenant: 'phones',
      ssiconfig: 'x509-check',
    })
    const session = await rp.createSession(token, 'x509-check')
    assert.equal(session.status, 201, session.text)
    const link = new URL((session.body as { authentication_request: string }).authentication_request)
    // OpenID4VP 1.0 §5.9.3: x509_san_dns:<a DNS name in the leaf's dNSName SAN>.
    assert.equal(link.searchParams.get('client_id'), `x509_san_dns:${NAME}`)
    const requestUri = link.searchParams.get('request_uri') as string
    assert.ok(requestUri.startsWith(`${publicUrl}/oid4vp/phones/requests/`), requestUri)
    // The request object, fetched as the phone would (its host resolved to this machine).
    const fetched = await request(requestUri.replace(publicUrl, serving.url), { dispatcher: agent })
    assert.equal(fetched.statusCode, 200)
    const jwt = await fetched.body.text()
    const [header, payload] = jwt
      .split('.')
      .slice(0, 2)
      .map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()))
    assert.equal(payload.client_id, `x509_san_dns:${NAME}`)
    assert.ok(String(payload.response_uri).startsWith(`${publicUrl}/oid4vp/phones/responses/`))
    const verifierLeaf = new X509Certificate(Buffer.from(header.x5c[0], 'base64'))
    assert.equal(verifierLeaf.checkHost(NAME), NAME, 'the verifier certificate carries the DNS name')
    assert.match(verifierLeaf.subjectAltName ?? '', new RegExp(`DNS:${NAME.replace(/\./g, '\\.')}`))
  })

  test('usage errors: one option without the other, unreadable or mismatched files exit 2', async (t) => {
    const dir = tempDir(t, 'vc-harness-tls-')
    const certs = await devCert(dir, ['--name', NAME])
    const other = await devCert(join(dir, 'other'), ['--name', 'other.example.lan'])
    // As a user meets them: the command as a child process, the message alone, exit 2.
    const cases: [string[], RegExp][] = [
      [['--tls-cert', certs.cert], /--tls-cert needs --tls-key/],
      [
        ['--tls-cert', join(dir, 'missing.pem'), '--tls-key', certs.key],
        /--tls-cert \S+missing\.pem: cannot be read \(no such file\)/,
      ],
      [
        ['--tls-cert', certs.cert, '--tls-key', other.key],
        /the private key is not the key of the certificate/,
      ],
    ]
    for (const [args, message] of cases) {
      const result = await runCli(['serve', '--data', ':memory:', '--port', '0', ...args])
      assert.equal(result.code, 2, `${args.join(' ')}\n${explain(result)}`)
      assert.match(result.stderr, message)
      assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace')
    }
    // The other mistakes through the same functions, in this process: a UserError is exit 2 (main.ts).
    const usage = (message: string) => new TypeError(message)
    assert.throws(() => tlsFilePair({ 'tls-key': certs.key }, usage), /--tls-key needs --tls-cert/)
    assert.equal(tlsFilePair({}, usage), undefined, 'neither: no TLS, the defaults unchanged')
    const wrong: [{ certFile: string; keyFile: string }, RegExp][] = [
      [
        { certFile: certs.cert, keyFile: join(dir, 'missing.pem') },
        /^--tls-key \S+missing\.pem: cannot be read \(no such file\)$/,
      ],
      [{ certFile: dir, keyFile: certs.key }, /^--tls-cert \S+: cannot be read \(a folder, not a file\)$/],
      [{ certFile: certs.key, keyFile: certs.key }, /^--tls-cert \S+: holds no PEM certificate/],
      [{ certFile: certs.cert, keyFile: certs.ca }, /^--tls-key \S+: is not a PEM private key/],
    ]
    for (const [pair, message] of wrong) {
      assert.throws(
        () => loadTls(pair),
        (error: Error & { exitCode?: number }) =>
          error.name === 'UserError' && error.exitCode === 2 && message.test(error.message),
      )
    }
    // The same options and checks for wallet-test (it serves its own service).
    const half = await runCli(['wallet-test', '--wallet-command', 'echo {link}', '--tls-key', certs.key])
    assert.equal(half.code, 2, explain(half))
    assert.match(half.stderr, /--tls-key needs --tls-cert/)
    const mismatched = await runCli([
      ...['wallet-test', '--wallet-command', 'echo {link}'],
      ...['--tls-cert', certs.cert, '--tls-key', other.key],
    ])
    assert.equal(mismatched.code, 2, explain(mismatched))
    assert.match(mismatched.stderr, /the private key is not the key of the certificate/)
  })

  test('--workers: every worker listens with HTTPS', async (t) => {
    const dir = tempDir(t, 'vc-harness-tls-')
    const certs = await devCert(join(dir, 'tls'), ['--name', NAME])
    const serving = await startServe([
      ...['--workers', '2', '--data', join(dir, 'data')],
      ...['--tls-cert', certs.cert, '--tls-key', certs.key],
    ])
    t.after(() => stop(serving))
    assert.match(serving.url, /^https:\/\/127\.0\.0\.1:\d+$/)
    const agent = client({ ca: readFileSync(certs.ca, 'utf8'), servername: NAME })
    t.after(() => agent.close())
    for (let i = 0; i < 4; i++) {
      const health = await request(`${serving.url}/health`, { dispatcher: agent, reset: true })
      assert.equal(health.statusCode, 200)
      await health.body.dump()
    }
    await waitForOutput(serving, /TLS: certificate for/)
    assert.match(serving.output(), new RegExp(`public URL \\(in offers and requests\\): https://${NAME}:`))
  })

  test('the sandbox opens its flows over the pinned loopback and prints https links under the name', async (t) => {
    const certs = await devCert(tempDir(t, 'vc-harness-tls-'), ['--name', NAME])
    const serving = await startServe([
      ...['--sandbox', '--data', ':memory:'],
      ...['--tls-cert', certs.cert, '--tls-key', certs.key],
    ])
    t.after(() => stop(serving))
    const port = new URL(serving.url).port
    // Both flows were created through the relying-party API on https://127.0.0.1 (pinned, not name-checked).
    await waitForOutput(serving, /^openid-vp:\/\/\?\S+$/m)
    const offer = /^openid-credential-offer:\/\/\?credential_offer_uri=(\S+)$/m.exec(serving.output())
    assert.ok(offer, serving.output())
    assert.ok(decodeURIComponent(offer[1] as string).startsWith(`https://${NAME}:${port}/oid4vci/`))
    assert.match(serving.output(), new RegExp(`wallets reach the service at https://${NAME}:${port}`))
  })
})

describe('wallet-test --tls-cert --tls-key', () => {
  test('the x509_san_dns case runs under the certificate name, over HTTPS, with our wallet trusting the CA', async (t) => {
    // "localhost" is a DNS name this machine resolves, so the wallet command can reach it by name.
    const dir = tempDir(t, 'vc-harness-tls-')
    const certs = await devCert(join(dir, 'tls'), ['--name', 'localhost'])
    const result = await runCli(
      [
        ...['wallet-test', '--plan', 'presentation-dcql'],
        ...['--case', 'presentation-dcql:setup', '--case', 'presentation-dcql:positive-x509-san-dns-jwt'],
        ...['--tls-cert', certs.cert, '--tls-key', certs.key, '--reports', join(dir, 'reports')],
        ...['--wallet-command', 'vc-harness wallet open {link}'],
      ],
      // Node's TLS (the wallet's fetch) trusts the development CA as a phone that installed it would.
      { env: { NODE_EXTRA_CA_CERTS: certs.ca } },
    )
    assert.equal(result.code, 0, explain(result))
    const run = JSON.parse(readFileSync(join(dir, 'reports', 'wallet-test.json'), 'utf8')) as {
      serviceUrl: string
      results: { id: string; link: string; verdict: { pass: boolean } }[]
    }
    assert.match(run.serviceUrl, /^https:\/\/localhost:\d+$/)
    const x509 = run.results.find((r) => r.id === 'presentation-dcql:positive-x509-san-dns-jwt')
    assert.ok(x509?.verdict.pass)
    const link = new URL(x509.link)
    assert.equal(link.searchParams.get('client_id'), 'x509_san_dns:localhost')
    assert.ok(link.searchParams.get('request_uri')?.startsWith(`${run.serviceUrl}/oid4vp/`))
  })

  test('an IP address as the public host is named as unfit for x509_san_dns', async (t) => {
    const result = await runCli([
      ...[
        'wallet-test',
        '--plan',
        'presentation-dcql',
        '--case',
        'presentation-dcql:positive-x509-san-dns-jwt',
      ],
      ...['--public-url', 'http://192.168.1.20:8080', '--case-timeout', '1'],
      ...['--reports', join(tempDir(t, 'vc-harness-tls-'), 'reports'), '--wallet-command', 'echo {link}'],
    ])
    assert.match(
      result.stderr,
      /the public host 192\.168\.1\.20 is an IP address, not a DNS name: the x509_san_dns cases need a name/,
    )
    assert.match(result.stderr, /wallets on phones refuse http:\/\/ URLs/)
  })
})

describe('TLS helpers', () => {
  test('pinnedFetch talks only to the server presenting the pinned certificate', async (t) => {
    const dir = tempDir(t, 'vc-harness-tls-')
    const a = await devCert(join(dir, 'a'), ['--name', NAME])
    const b = await devCert(join(dir, 'b'), ['--name', NAME])
    const server = createServer({ cert: readFileSync(a.cert), key: readFileSync(a.key) }, (_req, res) =>
      res.end('ok'),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.after(() => server.close())
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const der = (file: string) => new X509Certificate(pemBlocks(readFileSync(file, 'utf8'))[0] as string).raw
    const pinned = await pinnedFetch(der(a.cert))(url)
    assert.equal(await pinned.text(), 'ok')
    // Twice: a second connection (no resumed session that would hide the certificate) is checked as well.
    assert.equal(await (await pinnedFetch(der(a.cert))(url)).text(), 'ok')
    await assert.rejects(pinnedFetch(der(b.cert))(url), (error: Error) =>
      /presented another certificate/.test(`${error.message} ${(error.cause as Error | undefined)?.message}`),
    )
  })

  test('tlsWarnings names what a phone would refuse', async (t) => {
    const dir = tempDir(t, 'vc-harness-tls-')
    const certs = await devCert(dir, ['--name', NAME, '--ip', '192.168.1.20'])
    const cert = readFileSync(certs.cert, 'utf8')
    assert.deepEqual(tlsWarnings({ cert }, `https://${NAME}:8443`), [])
    assert.match(
      tlsWarnings({ cert }, 'https://other.example.lan:8443').join('\n'),
      /does not name the public URL's host other\.example\.lan/,
    )
    assert.match(
      tlsWarnings({ cert }, 'https://192.168.1.20:8443').join('\n'),
      /is an IP address, not a DNS name/,
    )
    assert.match(tlsWarnings({ cert }, `http://${NAME}:8443`).join('\n'), /is not https/)
    assert.match(tlsWarnings({ cert }, `https://${NAME}:8443`, Date.now() + 400 * DAY).join('\n'), /expired/)
    // A self-signed certificate valid for years: two more reasons for a phone to refuse it.
    const selfSigned = await generateTestCa({ validityDays: 1000 })
    const warnings = tlsWarnings(
      { cert: certificatePem(selfSigned.certificate) },
      `https://${NAME}:8443`,
    ).join('\n')
    assert.match(warnings, /self-signed/)
    assert.match(warnings, /valid for 1001 days/)
  })
})

/** The configuration of the x509_san_dns test: one tenant, one dcql template with that prefix. */
const X509_KEY = { id: '3f0c9a52-7d1e-4b8f-a6c3-2e9d5b7f1a04', secret: 'phones-x509-secret-4Jq8Lw2Nz6Rt' }
function x509Config() {
  return {
    webhooks: { mode: 'test' },
    tenants: [
      {
        id: 'phones',
        apiKeys: [{ id: X509_KEY.id, secret: X509_KEY.secret, role: 'app', template: 'x509-check' }],
        verificationTemplates: [
          {
            id: 'x509-check',
            name: 'x509_san_dns over HTTPS',
            profile: 'dcql',
            credentialTypes: ['VerifiableId'],
            requestedFields: [{ path: '$.credentialSubject.familyName' }],
            dcql: { format: 'dc+sd-jwt', clientIdPrefix: 'x509_san_dns', responseMode: 'direct_post.jwt' },
          },
        ],
      },
    ],
  }
}

/** Waits until the child's output matches (the banner is printed in several writes). */
async function waitForOutput(serving: Serving, pattern: RegExp, timeoutMs = 20_000) {
  const started = Date.now()
  while (!pattern.test(serving.output())) {
    if (Date.now() - started > timeoutMs)
      throw new Error(`timed out waiting for ${pattern}:\n${serving.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
