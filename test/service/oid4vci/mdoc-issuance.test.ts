import assert from 'node:assert/strict'
import { createPublicKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { Openid4vciRetrieveCredentialsError, setGlobalConfig } from '@openid4vc/openid4vci'
import { ok, RelyingPartyClient } from '../../../src/client/index.ts'
import { ConfigError, DEMO_CONFIG_PATH, parseConfig } from '../../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../../src/service/server.ts'
import { didKeyFromPublicKey, generateKeyPair } from '../../../src/shared/did-key.ts'
import { signJws } from '../../../src/shared/jws.ts'
import * as mdoc from '../../../src/shared/mdoc.ts'
import {
  certificatePem,
  generateIaca,
  issueDocumentSigner,
  mdocCertificateProblems,
  parseCertificates,
} from '../../../src/shared/x509.ts'
import { verifyIssuerSignedIndependently } from '../../fixtures/independent-mdoc.ts'
import { owfHolder, owfReceive } from '../../fixtures/owf-holder.ts'

// ISO mdoc issuance (OpenID4VCI 1.0 Appendix A.2) by the reference service, received by the OWF
// @openid4vc/openid4vci client (code nobody here wrote): the demo's `mdl` template, its metadata, the
// tenant's IACA and document signer (ISO 18013-5 Annex B), immediate and deferred, and what a template or
// a tenant may not configure.

setGlobalConfig({ allowInsecureUrls: true })

const TENANT = 'demo'
const NS = mdoc.MDL_NAMESPACE
const APP_KEY = {
  id: '7d2e9c4a-5b1f-4a3e-8d6c-0f1e2a3b4c5d',
  secret: 'mdoc-issuance-test-secret-0123456789abcdef',
  role: 'app',
}
const LICENCE = [
  {
    type: ['VerifiableCredential', mdoc.MDL_DOCTYPE],
    credentialSubject: { [NS]: { family_name: 'Lovelace', given_name: 'Ada', birth_date: '1815-12-10' } },
  },
]

function demoConfig(
  change: (tenant: Record<string, unknown> & { issuanceTemplates: unknown[] }) => void = () => {},
) {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  tenant.apiKeys.push(APP_KEY)
  raw.oid4vci = { deferredIntervalSeconds: 1 }
  change(tenant)
  return raw
}

let server: RunningServer
let rp: RelyingPartyClient
let appToken: string

before(async () => {
  server = await startServer({
    config: parseConfig(demoConfig(), 'mdoc-issuance test configuration'),
    host: '127.0.0.1',
    port: 0,
    dataDir: ':memory:',
  })
  rp = new RelyingPartyClient(server.url)
  appToken = await rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT })
  await mdoc.prepareMdoc()
})
after(() => server?.close())

async function offer(content?: unknown) {
  const body = ok(await rp.createOffer(appToken, 'mdl'), 'offer mdl')
  const processId = new URL(
    decodeURIComponent(body.credential_offer_uri.split('credential_offer_uri=')[1] ?? ''),
  ).pathname
    .split('/')
    .at(-1) as string
  if (content) ok(await rp.submitCredentials(appToken, processId, content), 'submit')
  return { link: body.credential_offer_uri, processId }
}

const iacaOf = async () => (await fetch(`${server.url}/oid4vci/${TENANT}/iaca`)).text()

describe('mso_mdoc issuance (OpenID4VCI 1.0 Appendix A.2)', () => {
  test('GET /oid4vci/<tenant>/iaca serves one ISO 18013-5 Annex B IACA as PEM; 404 for no tenant', async () => {
    const first = await fetch(`${server.url}/oid4vci/${TENANT}/iaca`)
    assert.equal(first.status, 200)
    assert.equal(first.headers.get('content-type'), 'application/x-pem-file')
    const pem = await first.text()
    assert.deepEqual(mdocCertificateProblems(pem, 'iaca'), [])
    assert.equal(await iacaOf(), pem, 'persisted: the same root every time')
    assert.notEqual(pem, await (await fetch(`${server.url}/oid4vci/${TENANT}/trust-anchor`)).text())
    assert.equal((await fetch(`${server.url}/oid4vci/nobody/iaca`)).status, 404)
  })

  test('the configuration: doctype, cose_key, COSE ES256, ES256 proofs, [namespace, element] claims', async () => {
    const wallet = owfHolder('ES256')
    const { link } = await offer()
    const credentialOffer = await wallet.client.resolveCredentialOffer(link)
    const metadata = await wallet.client.resolveIssuerMetadata(credentialOffer.credential_issuer)
    const config = metadata.credentialIssuer.credential_configurations_supported.mdl as Record<
      string,
      unknown
    >
    assert.equal(config.format, 'mso_mdoc')
    assert.equal(config.doctype, mdoc.MDL_DOCTYPE)
    assert.deepEqual(config.cryptographic_binding_methods_supported, ['cose_key'])
    assert.deepEqual(config.credential_signing_alg_values_supported, [-7])
    assert.deepEqual(config.proof_types_supported, { jwt: { proof_signing_alg_values_supported: ['ES256'] } })
    const claims = (config.credential_metadata as { claims: { path: string[] }[] }).claims
    assert.deepEqual(claims[0]?.path, [NS, 'family_name'])
  })

  test('immediate: the mDL verifies to the IACA, carries the submitted elements, the holder key and a status', async () => {
    const wallet = owfHolder('ES256')
    const { link, processId } = await offer(LICENCE)
    const { result } = await owfReceive(wallet, link, 'jwk')
    assert.equal(result.response.status, 200)
    const encoded = (result.credentialResponse as { credentials: { credential: string }[] }).credentials[0]
      ?.credential as string
    const doc = mdoc.decodeIssuerSigned(encoded)
    const verified = await mdoc.verifyIssuerAuth(doc, { trustAnchors: [await iacaOf()], now: Date.now() })
    assert.ok(verified.ok, verified.ok ? '' : verified.reason)
    assert.deepEqual(mdocCertificateProblems(Buffer.from(doc.x5chain[0] as Uint8Array), 'ds'), [])
    assert.deepEqual(doc.namespaces, LICENCE[0]?.credentialSubject)
    assert.deepEqual(
      { x: doc.deviceKey.x, y: doc.deviceKey.y },
      { x: wallet.holder.publicJwk.x, y: wallet.holder.publicJwk.y },
    )
    assert.match(doc.status?.uri ?? '', new RegExp(`/oid4vci/${TENANT}/token-status/`))
    const process = ok(await rp.getProcess(appToken, processId), 'process')
    const proof = (process.data?.[0] as { proof?: Record<string, unknown> } | undefined)?.proof
    assert.deepEqual(proof, { type: 'MsoMdoc', format: 'mso_mdoc', mdoc: encoded })
  })

  test('an EdDSA key proof is refused: the device key must be P-256 (proof_signing_alg_values_supported)', async () => {
    // The OWF client already refuses to make one from our metadata; a wallet that ignores it sends this.
    const wallet = owfHolder('ES256')
    const { link } = await offer(LICENCE)
    const credentialOffer = await wallet.client.resolveCredentialOffer(link)
    const issuerMetadata = await wallet.client.resolveIssuerMetadata(credentialOffer.credential_issuer)
    const { accessTokenResponse } = await wallet.client.retrievePreAuthorizedCodeAccessTokenFromOffer({
      credentialOffer,
      issuerMetadata,
    })
    const { c_nonce: nonce } = await wallet.client.requestNonce({ issuerMetadata })
    const ed = generateKeyPair('EdDSA')
    const jwt = signJws(
      { alg: 'EdDSA', typ: 'openid4vci-proof+jwt', jwk: didKeyFromPublicKey(ed.publicKey).publicJwk },
      { aud: credentialOffer.credential_issuer, iat: Math.floor(Date.now() / 1000), nonce },
      ed.privateKey,
    )
    const answer = await fetch(`${server.url}/oid4vci/${TENANT}/credential`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${accessTokenResponse.access_token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ credential_configuration_id: 'mdl', proofs: { jwt: [jwt] } }),
    })
    assert.equal(answer.status, 400)
    const body = (await answer.json()) as { error: string; error_description: string }
    assert.equal(body.error, 'invalid_proof')
    assert.match(body.error_description, /alg "EdDSA" is not allowed; use one of ES256/)
  })

  test('deferred: 202 until the relying party submits, then the mDL', async () => {
    const wallet = owfHolder('ES256')
    const { link, processId } = await offer()
    const { result, issuerMetadata, accessToken } = await owfReceive(wallet, link, 'jwk')
    assert.equal(result.response.status, 202)
    const { transaction_id: transactionId } = result.credentialResponse as { transaction_id: string }
    ok(await rp.submitCredentials(appToken, processId, LICENCE), 'submit')
    let body: Record<string, unknown>
    try {
      body = (await wallet.client.retrieveDeferredCredentials({ issuerMetadata, accessToken, transactionId }))
        .deferredCredentialResponse as Record<string, unknown>
    } catch (error) {
      // @openid4vc/openid4vci 0.4.6 rejects a valid 200 {credentials, notification_id} (its inverted check)
      if (!(error instanceof Openid4vciRetrieveCredentialsError)) throw error
      body = await error.response.response.clone().json()
    }
    const encoded = (body.credentials as { credential: string }[])[0]?.credential as string
    const verified = await mdoc.verifyIssuerAuth(mdoc.decodeIssuerSigned(encoded), {
      trustAnchors: [await iacaOf()],
      now: Date.now(),
    })
    assert.ok(verified.ok, verified.ok ? '' : verified.reason)
    // and by an implementation nobody here wrote (@auth0/mdl): issuerAuth, the chain, every digest
    const independent = await verifyIssuerSignedIndependently(encoded, await iacaOf())
    assert.deepEqual(independent.namespaces[NS], LICENCE[0]?.credentialSubject[NS])
  })
})

describe('mso_mdoc configuration', () => {
  const problem = (change: Parameters<typeof demoConfig>[0]) => {
    try {
      parseConfig(demoConfig(change), 'test')
      return undefined
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error))
      return error.message
    }
  }

  test('doctype on another format, another signingAlg, or issuerKeyBinding: the field is named', () => {
    assert.match(
      problem((t) => t.issuanceTemplates.push({ id: 'x', credentialType: 'X', doctype: mdoc.MDL_DOCTYPE })) ??
        '',
      /issuanceTemplates\/\d+\/doctype: is only meaningful with format mso_mdoc/,
    )
    assert.match(
      problem((t) =>
        t.issuanceTemplates.push({ id: 'x', credentialType: 'X', format: 'mso_mdoc', signingAlg: 'EdDSA' }),
      ) ?? '',
      /issuanceTemplates\/\d+\/signingAlg: mso_mdoc needs signingAlg ES256/,
    )
    assert.match(
      problem((t) =>
        t.issuanceTemplates.push({
          id: 'x',
          credentialType: 'X',
          format: 'mso_mdoc',
          signingAlg: 'ES256',
          issuerKeyBinding: 'x5c',
        }),
      ) ?? '',
      /issuerKeyBinding: mso_mdoc always names its document signer/,
    )
  })

  test('a configured mdocIaca must be an IACA with its own key', async () => {
    const iaca = await generateIaca({ commonName: 'Configured IACA', uri: 'https://issuer.example' })
    const other = await generateIaca({ commonName: 'Other', uri: 'https://other.example' })
    const pem = (key: typeof iaca.privateKey) => key.export({ format: 'pem', type: 'pkcs8' }).toString()
    assert.match(
      problem((t) => {
        t.mdocIaca = { certificate: certificatePem(iaca.certificate), privateKey: pem(other.privateKey) }
      }) ?? '',
      /mdocIaca: privateKey is not the certificate's key/,
    )
    const ds = await issueDocumentSigner({
      iaca,
      publicKey: createPublicKey(other.privateKey),
      commonName: 'A document signer',
      uri: 'https://issuer.example',
    })
    assert.match(
      problem((t) => {
        t.mdocIaca = { certificate: certificatePem(ds), privateKey: pem(other.privateKey) }
      }) ?? '',
      /mdocIaca: certificate is no IACA \(ISO 18013-5 Annex B.1.2\): .*basicConstraints/,
    )
  })

  test('with a configured mdocIaca, the document signer chains to it and /iaca serves it', async () => {
    const iaca = await generateIaca({
      commonName: 'Configured IACA',
      country: 'NL',
      uri: 'https://issuer.example',
    })
    const configured = await startServer({
      config: parseConfig(
        demoConfig((t) => {
          t.mdocIaca = {
            certificate: certificatePem(iaca.certificate),
            privateKey: iaca.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
          }
        }),
        'configured IACA',
      ),
      host: '127.0.0.1',
      port: 0,
      dataDir: ':memory:',
    })
    try {
      const served = await (await fetch(`${configured.url}/oid4vci/${TENANT}/iaca`)).text()
      assert.equal(served, certificatePem(iaca.certificate))
      const client = new RelyingPartyClient(configured.url)
      const token = await client.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT })
      const body = ok(await client.createOffer(token, 'mdl'), 'offer')
      const processId = new URL(
        decodeURIComponent(body.credential_offer_uri.split('credential_offer_uri=')[1] ?? ''),
      ).pathname
        .split('/')
        .at(-1) as string
      ok(await client.submitCredentials(token, processId, LICENCE), 'submit')
      const wallet = owfHolder('ES256')
      const { result } = await owfReceive(wallet, body.credential_offer_uri, 'jwk')
      const encoded = (result.credentialResponse as { credentials: { credential: string }[] }).credentials[0]
        ?.credential as string
      const doc = mdoc.decodeIssuerSigned(encoded)
      assert.ok((await mdoc.verifyIssuerAuth(doc, { trustAnchors: [served], now: Date.now() })).ok)
      const [ds] = parseCertificates(Buffer.from(doc.x5chain[0] as Uint8Array), 'ds')
      assert.match(ds?.subject ?? '', /C=NL/, "the document signer carries the IACA's country")
    } finally {
      await configured.close()
    }
  })
})
