// The harness's own test issuer: the reference service, embedded on 127.0.0.1, with one tenant issuing a
// VerifiableId in the three formats a verifier may ask for (jwt_vc_json; dc+sd-jwt named by an x5c chain of
// the tenant's test CA, as HAIP has it; ldp_vc). Its keys live in a data folder (default
// .vc-harness/test-issuer), so the DID and the CA a verifier under test is told to trust (`--list-trust`)
// stay the same from run to run. It keeps running for the whole verifier test: the verifier under test reads
// its status lists.

import { randomBytes, randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../service/app.ts'
import { parseConfig } from '../../service/config/index.ts'
import { resolveDataKeys } from '../../service/crypto/data-key.ts'
import { Wallet } from '../../wallet/wallet.ts'
import { type Deployment, DeploymentKeys, deploymentCredentials } from './relying-party.ts'

export const TEST_ISSUER_TENANT = 'vc-harness-test-issuer'
/** The credential type every template issues, and the vct of its SD-JWT VC. */
export const TEST_CREDENTIAL_TYPE = 'VerifiableId'
export const TEST_VCT = 'urn:vc-harness:test-issuer:VerifiableId'
export const TEST_TEMPLATES = {
  jwt: 'verifiable-id-jwt',
  sdJwt: 'verifiable-id-sd-jwt',
  ldp: 'verifiable-id-ldp',
}
export const DEFAULT_TEST_ISSUER_DIR = '.vc-harness/test-issuer'

/** What a verifier under test must trust to accept the test issuer's credentials. */
export interface TestIssuerTrust {
  /** the credential issuer identifier */
  credentialIssuer: string
  /** the DIDs that sign the jwt_vc_json and ldp_vc credentials (did:key) */
  dids: string[]
  /** PEM of the CA the SD-JWT VCs' x5c chains lead to */
  trustAnchorPem: string
  credentialType: string
  vct: string
}

export interface TestIssuer {
  url: string
  keys: DeploymentKeys
  templates: string[]
  trust: TestIssuerTrust
  close(): Promise<void>
}

export async function startTestIssuer(opts: { dataDir?: string } = {}): Promise<TestIssuer> {
  const dataDir = opts.dataDir ?? DEFAULT_TEST_ISSUER_DIR
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const secret = () => randomBytes(24).toString('base64url')
  const keyOf = (template?: string) => ({
    id: randomUUID(),
    secret: secret(),
    ...(template ? { template } : {}),
  })
  const jwt = keyOf(TEST_TEMPLATES.jwt)
  const admin = keyOf()
  const claims = [
    { path: 'familyName', name: 'Family name' },
    { path: 'givenName', name: 'Given name' },
    { path: 'dateOfBirth', name: 'Date of birth' },
  ]
  const config = parseConfig(
    {
      webhooks: { mode: 'test' },
      tenants: [
        {
          id: TEST_ISSUER_TENANT,
          apiKeys: [
            { id: jwt.id, secret: jwt.secret, role: 'app', template: jwt.template, label: 'test issuer' },
            { id: admin.id, secret: admin.secret, role: 'admin', label: 'test issuer administrator' },
          ],
          issuanceTemplates: [
            {
              id: TEST_TEMPLATES.jwt,
              credentialType: TEST_CREDENTIAL_TYPE,
              display: { name: 'Verifiable ID (vc-harness test issuer)' },
            },
            {
              id: TEST_TEMPLATES.sdJwt,
              credentialType: TEST_CREDENTIAL_TYPE,
              format: 'dc+sd-jwt',
              vct: TEST_VCT,
              signingAlg: 'ES256',
              issuerKeyBinding: 'x5c',
              claims,
            },
            {
              id: TEST_TEMPLATES.ldp,
              credentialType: TEST_CREDENTIAL_TYPE,
              format: 'ldp_vc',
              proofType: 'Ed25519Signature2018',
              signingAlg: 'EdDSA',
            },
          ],
        },
      ],
    },
    'the test issuer configuration',
  )
  let url = ''
  const app: FastifyInstance = await buildApp({
    config,
    dataDir,
    dataKeys: resolveDataKeys({ dataDir, production: false }).keyring,
    publicUrl: () => url,
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  const deployment: Deployment = {
    describe: `the vc-harness test issuer at ${url}`,
    urls: { authUrl: url, issuerUrl: url, verifierUrl: url },
    tenant: TEST_ISSUER_TENANT,
    appKey: { id: jwt.id, secret: jwt.secret },
    adminKey: { id: admin.id, secret: admin.secret },
    issuanceTemplate: TEST_TEMPLATES.jwt,
  }
  const keys = new DeploymentKeys(deployment)
  const templates = [TEST_TEMPLATES.jwt, TEST_TEMPLATES.sdJwt, TEST_TEMPLATES.ldp]
  try {
    let trust = await readTrust(url)
    if (trust.dids.length === 0) {
      // A tenant's signing keys are made at its first issuance: one of each format, to a throwaway wallet,
      // before anyone is told what to trust (this also proves the issuer works).
      const wallet = await Wallet.create({ trustAnchors: [trust.trustAnchorPem] })
      await deploymentCredentials(keys, templates).fill(wallet)
      trust = await readTrust(url)
    }
    return {
      url,
      keys,
      templates,
      trust,
      close: async () => {
        await keys.close().catch(() => {})
        await app.close()
      },
    }
  } catch (error) {
    await app.close()
    throw error
  }
}

async function readTrust(url: string): Promise<TestIssuerTrust> {
  const credentialIssuer = `${url}/oid4vci/${TEST_ISSUER_TENANT}`
  const metadata = await fetch(`${url}/.well-known/openid-credential-issuer/oid4vci/${TEST_ISSUER_TENANT}`)
  const dids = metadata.ok
    ? (((await metadata.json()) as { vc_harness_issuer_dids?: string[] }).vc_harness_issuer_dids ?? [])
    : []
  const anchor = await fetch(`${credentialIssuer}/trust-anchor`)
  if (!anchor.ok) throw new Error(`the test issuer has no trust anchor (${anchor.status})`)
  return {
    credentialIssuer,
    dids,
    trustAnchorPem: await anchor.text(),
    credentialType: TEST_CREDENTIAL_TYPE,
    vct: TEST_VCT,
  }
}

/** `--list-trust`: what to configure in the verifier under test. */
export function renderTrust(trust: TestIssuerTrust): string {
  return [
    '# What the verifier under test must trust (the vc-harness test issuer; stable while its data folder is kept)',
    `credential issuer: ${trust.credentialIssuer.replace(/^http:\/\/127\.0\.0\.1:\d+/, '<per run>')}`,
    `issuer DIDs (jwt_vc_json, ldp_vc): ${trust.dids.join(' ')}`,
    `credential type: ${trust.credentialType}; SD-JWT VC vct: ${trust.vct}`,
    'SD-JWT VC issuer trust anchor (x5c chains lead to this CA):',
    trust.trustAnchorPem.trim(),
    '',
  ].join('\n')
}
