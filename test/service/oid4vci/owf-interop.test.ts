import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { Openid4vciRetrieveCredentialsError, setGlobalConfig } from '@openid4vc/openid4vci'
import { Openid4vpClient } from '@openid4vc/openid4vp'
import { ok, RelyingPartyClient } from '../../../src/client/index.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../../../src/service/config/index.ts'
import { type RunningServer, startServer } from '../../../src/service/server.ts'
import { resolveDidKey } from '../../../src/shared/did-key.ts'
import { decodeJws, signJws, verifyJws } from '../../../src/shared/jws.ts'
import { verifySdJwtVc } from '../../../src/shared/sd-jwt.ts'
import { type OwfHolder, owfHolder, owfReceive } from '../../fixtures/owf-holder.ts'

// Interoperability with code nobody here wrote: the OpenWallet Foundation's @openid4vc/openid4vci client
// (the library under credo-ts and the wallets built on it) completes pre-authorized issuance against the
// reference service over real HTTP, immediate and deferred, for jwt_vc_json and dc+sd-jwt, with no help
// from us but its callbacks (hashing, randomness, signing with the holder key).

// The library refuses http:// URLs unless told otherwise (process-wide); the service listens on 127.0.0.1.
setGlobalConfig({ allowInsecureUrls: true })

const TENANT = 'demo'
/** A tenant-wide application key, added for this test (the demo's app keys are linked to one template). */
const APP_KEY = {
  id: '6f1c2a8e-3b4d-4c5e-9f60-7a8b9c0d1e2f',
  secret: 'owf-interop-test-secret-0123456789abcdef',
  role: 'app',
}
const TEMPLATES = [
  {
    id: 'pid',
    credentialType: 'VerifiableId',
    format: 'dc+sd-jwt',
    selectivelyDisclosable: ['familyName', 'firstName'],
    claims: [{ path: 'familyName', name: 'Family name', mandatory: true }],
  },
  { id: 'degree-pin', credentialType: 'UniversityDegreeCredential', txCode: { length: 6 } },
]
const VERIFIABLE_ID = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Hopper', firstName: 'Grace' },
  },
]
const DEGREE = [
  {
    type: ['VerifiableCredential', 'UniversityDegreeCredential'],
    credentialSubject: { degree: { type: 'BachelorDegree', name: 'Bachelor of Science' } },
  },
]

let server: RunningServer
let rp: RelyingPartyClient
let appToken: string

before(async () => {
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  tenant.issuanceTemplates.push(...TEMPLATES)
  raw.oid4vci = { deferredIntervalSeconds: 1 }
  tenant.apiKeys.push(APP_KEY)
  const config = parseConfig(raw, 'test/service/oid4vci/owf-interop.test.ts configuration')
  server = await startServer({ config, host: '127.0.0.1', port: 0, dataDir: ':memory:' })
  rp = new RelyingPartyClient(server.url)
  appToken = await rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT })
})
after(() => server?.close())

async function offer(group: string, credentials?: unknown) {
  const body = ok(await rp.createOffer(appToken, group), `offer ${group}`)
  const processId = new URL(
    decodeURIComponent(body.credential_offer_uri.split('credential_offer_uri=')[1] ?? ''),
  ).pathname
    .split('/')
    .at(-1) as string
  if (credentials) ok(await rp.submitCredentials(appToken, processId, credentials), 'submit')
  return { link: body.credential_offer_uri, txCode: body.tx_code, processId }
}

/**
 * The deferred request. @openid4vc/openid4vci 0.4.6 rejects a spec-valid 200 {credentials, notification_id}
 * (its schema's check is inverted, a known bug): the answer itself is then read from the response.
 */
async function deferred(
  wallet: OwfHolder,
  issuerMetadata: Awaited<ReturnType<typeof owfReceive>>['issuerMetadata'],
  accessToken: string,
  transactionId: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    const d = await wallet.client.retrieveDeferredCredentials({ issuerMetadata, accessToken, transactionId })
    return { status: d.response.status, body: d.deferredCredentialResponse as Record<string, unknown> }
  } catch (error) {
    if (!(error instanceof Openid4vciRetrieveCredentialsError) || error.response.response.status !== 200)
      throw error
    return { status: 200, body: await error.response.response.clone().json() }
  }
}

const issuerKey = (header: Record<string, unknown>) => resolveDidKey(String(header.kid)).publicKey

describe('@openid4vc/openid4vci (OWF) as the wallet against the reference service', () => {
  test('it reads our metadata as OpenID4VCI 1.0 (credential_metadata), found at the 1.0 location', async () => {
    const wallet = owfHolder('ES256')
    const { link } = await offer('degree')
    const credentialOffer = await wallet.client.resolveCredentialOffer(link)
    const metadata = await wallet.client.resolveIssuerMetadata(credentialOffer.credential_issuer)
    assert.equal(metadata.originalDraftVersion, 'V1')
    assert.equal(metadata.credentialIssuer.credential_issuer, `${server.url}/oid4vci/${TENANT}`)
    assert.equal(metadata.authorizationServers[0]?.token_endpoint, `${server.url}/oid4vci/${TENANT}/token`)
  })

  for (const alg of ['EdDSA', 'ES256'] as const) {
    test(`${alg} jwt_vc_json, immediate, with a tx_code: the credential is ours, for the holder`, async () => {
      const wallet = owfHolder(alg)
      const { link, txCode } = await offer('degree-pin', DEGREE)
      const { result, issuerMetadata, accessToken } = await owfReceive(wallet, link, 'did', txCode)
      assert.equal(result.response.status, 200)
      const response = result.credentialResponse as {
        credentials: { credential: string }[]
        notification_id: string
      }
      const jwt = response.credentials[0]?.credential as string
      const { header, payload } = decodeJws(jwt)
      verifyJws(jwt, issuerKey(header), { algorithms: ['EdDSA'] })
      assert.equal(payload.sub, wallet.holder.did)
      await wallet.client.sendNotification({
        issuerMetadata,
        accessToken,
        notification: { notificationId: response.notification_id, event: 'credential_accepted' },
      })
    })

    test(`${alg} dc+sd-jwt, immediate, bound by a bare jwk: verified, cnf is the holder key`, async () => {
      const wallet = owfHolder(alg)
      const { link } = await offer('pid', VERIFIABLE_ID)
      const { result } = await owfReceive(wallet, link, 'jwk')
      assert.equal(result.response.status, 200)
      const compact = (result.credentialResponse as { credentials: { credential: string }[] }).credentials[0]
        ?.credential as string
      const verified = await verifySdJwtVc(compact, { issuerKey, algorithms: ['EdDSA'], now: Date.now() })
      assert.deepEqual(verified.holderJwk, wallet.holder.publicJwk)
      assert.equal(verified.claims.familyName, 'Hopper')
      assert.equal(verified.claims.vct, `${server.url}/oid4vci/${TENANT}/vct/VerifiableId`)
    })
  }

  for (const [group, signer, content] of [
    ['degree', 'did', DEGREE],
    ['pid', 'jwk', VERIFIABLE_ID],
  ] as const) {
    test(`${group}: deferred per 1.0 §9.2 — 202, 202 while pending, then 200 once submitted`, async () => {
      const wallet = owfHolder('ES256')
      const { link, processId } = await offer(group)
      const { result, issuerMetadata, accessToken } = await owfReceive(wallet, link, signer)
      assert.equal(result.response.status, 202)
      const { transaction_id: transactionId, interval } = result.credentialResponse as {
        transaction_id: string
        interval: number
      }
      assert.equal(interval, 1)
      const pending = await deferred(wallet, issuerMetadata, accessToken, transactionId)
      assert.deepEqual(pending, { status: 202, body: { transaction_id: transactionId, interval: 1 } })
      ok(await rp.submitCredentials(appToken, processId, content), 'submit')
      const ready = await deferred(wallet, issuerMetadata, accessToken, transactionId)
      assert.equal(ready.status, 200)
      const credential = (ready.body.credentials as { credential: string }[])[0]?.credential as string
      assert.ok(typeof ready.body.notification_id === 'string')
      if (group === 'pid') {
        const verified = await verifySdJwtVc(credential, {
          issuerKey,
          algorithms: ['EdDSA'],
          now: Date.now(),
        })
        assert.deepEqual(verified.holderJwk, wallet.holder.publicJwk)
      } else {
        assert.equal(decodeJws(credential).payload.sub, wallet.holder.did)
      }
    })
  }
})

describe('@openid4vc/openid4vp (OWF) as the wallet against the reference verifier, PE profile', () => {
  /** The OWF client with the one callback a signed request needs: verifying it with the client's did:key. */
  const vpClient = new Openid4vpClient({
    callbacks: {
      hash: (data, algorithm) =>
        new Uint8Array(createHash(algorithm.replace('-', '').toLowerCase()).update(data).digest()),
      fetch,
      verifyJwt: async (signer, jwt) => {
        if (signer.method !== 'did') return { verified: false }
        const key = resolveDidKey(signer.didUrl)
        try {
          verifyJws(jwt.compact, key.publicKey, { algorithms: ['EdDSA', 'ES256', 'ES256K'] })
          return { verified: true, signerJwk: key.publicJwk as never }
        } catch {
          return { verified: false }
        }
      },
      // Unused by a direct_post PE answer (no JARM, no encryption); the type asks for them.
      signJwt: async () => {
        throw new Error('not used')
      },
      encryptJwe: async () => {
        throw new Error('not used')
      },
      decryptJwe: async () => {
        throw new Error('not used')
      },
    },
  })

  test('it resolves our signed request (no scope next to the definition) and its direct_post answer verifies', async () => {
    // A credential to present, issued to a key the test holds, by the OWF issuance client.
    const wallet = owfHolder('EdDSA')
    const issued = await offer('degree', DEGREE)
    const { result } = await owfReceive(wallet, issued.link, 'did')
    const credential = (result.credentialResponse as { credentials: { credential: string }[] }).credentials[0]
      ?.credential as string

    const session = ok(await rp.createSession(appToken, 'degree-check'), 'session')
    const params = Object.fromEntries(new URL(session.authentication_request).searchParams)
    const resolved = await vpClient.resolveOpenId4vpAuthorizationRequest({
      authorizationRequestPayload: params as never,
    })
    assert.equal(resolved.client.identifier, params.client_id)
    assert.ok(resolved.pex?.presentation_definition, 'a Presentation Exchange request')
    assert.equal(resolved.dcql, undefined)
    const requestPayload = resolved.authorizationRequestPayload as Record<string, unknown>
    assert.equal(requestPayload.scope, undefined, 'the signed object carries no scope beside the definition')

    // The holder's answer: a jwt_vp of the credential for this nonce and client, mapped in OpenID4VP's words.
    const definition = resolved.pex?.presentation_definition as {
      id: string
      input_descriptors: { id: string }[]
    }
    const vp = signJws(
      { alg: 'EdDSA', typ: 'JWT', kid: wallet.holder.kid },
      {
        iss: wallet.holder.did,
        aud: requestPayload.client_id,
        nonce: requestPayload.nonce,
        iat: Math.floor(Date.now() / 1000),
        vp: {
          '@context': ['https://www.w3.org/2018/credentials/v1'],
          type: ['VerifiablePresentation'],
          holder: wallet.holder.did,
          verifiableCredential: [credential],
        },
      },
      wallet.privateKey,
    )
    const submission = {
      id: 'owf-submission',
      definition_id: definition.id,
      descriptor_map: definition.input_descriptors.map((d) => ({
        id: d.id,
        format: 'jwt_vp_json',
        path: '$',
        path_nested: { id: d.id, format: 'jwt_vc_json', path: '$.verifiableCredential[0]' },
      })),
    }
    const submitted = await vpClient.submitOpenid4vpAuthorizationResponse({
      authorizationRequestPayload: requestPayload as never,
      authorizationResponsePayload: {
        vp_token: vp,
        presentation_submission: submission,
        state: requestPayload.state as string,
      } as never,
    })
    assert.equal(submitted.response.status, 200, await submitted.response.clone().text())
    const read = await rp.readSession(appToken, params.request_uri?.split('/').at(-1) as string)
    assert.equal(read.status, 200)
    assert.equal((read.body as { Status: string }).Status, 'VERIFIED')
  })
})
