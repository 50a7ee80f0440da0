// The harness's own test issuer: the reference service, embedded on 127.0.0.1, with one tenant issuing a
// VerifiableId in the three W3C and IETF formats a verifier may ask for (jwt_vc_json; dc+sd-jwt named by an
// x5c chain of the tenant's test CA, as HAIP has it; ldp_vc) and an ISO mDL (mso_mdoc, its MSO signed by a
// document signer under the tenant's IACA). Its keys live in a data folder (default .vc-harness/test-issuer),
// so the DID, the CA and the IACA a verifier under test is told to trust (`--list-trust`) stay the same from
// run to run. It keeps running for the whole verifier test: the verifier under test reads its status lists.

import { randomBytes, randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../service/app.ts'
import { parseConfig } from '../../service/config/index.ts'
import { resolveDataKeys } from '../../service/crypto/data-key.ts'
import { defaultNamespace, MDL_DOCTYPE, MDOC_FORMAT } from '../../shared/mdoc.ts'
import type { HolderKeyType } from '../../wallet/store.ts'
import { Wallet } from '../../wallet/wallet.ts'
import { type Deployment, DeploymentKeys, deploymentCredentials } from './relying-party.ts'

export const TEST_ISSUER_TENANT = 'vc-harness-test-issuer'
/** The credential type every template issues, and the vct of its SD-JWT VC. */
export const TEST_CREDENTIAL_TYPE = 'VerifiableId'
export const TEST_VCT = 'urn:vc-harness:test-issuer:VerifiableId'
/** The doctype of the test issuer's mdoc: the mDL (ISO/IEC 18013-5). */
export const TEST_DOCTYPE = MDL_DOCTYPE
export const TEST_TEMPLATES = {
  jwt: 'verifiable-id-jwt',
  sdJwt: 'verifiable-id-sd-jwt',
  ldp: 'verifiable-id-ldp',
  mdl: 'mdl',
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
  /** PEM of the IACA root the mdocs' document signer certificate (issuerAuth x5chain) is issued by */
  iacaPem: string
  credentialType: string
  vct: string
  /** the mdoc's doctype (its credential type) */
  doctype: string
}

export interface TestIssuer {
  url: string
  keys: DeploymentKeys
  templates: string[]
  trust: TestIssuerTrust
  /**
   * The templates a wallet with a `keyType` holder key can receive: the mdoc's device key is ES256
   * (OpenID4VCI 1.0 Appendix A.2, the proof_signing_alg_values_supported of its configuration), so only a
   * P-256 wallet gets the mDL.
   */
  templatesFor(keyType: HolderKeyType): string[]
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
            {
              id: TEST_TEMPLATES.mdl,
              credentialType: TEST_DOCTYPE,
              format: MDOC_FORMAT,
              doctype: TEST_DOCTYPE,
              signingAlg: 'ES256',
              display: { name: 'Mobile driving licence (vc-harness test issuer)' },
              claims: [
                { path: 'family_name', name: 'Family name' },
                { path: 'given_name', name: 'Given name' },
                { path: 'birth_date', name: 'Date of birth' },
                { path: 'age_over_18', name: 'Over 18' },
              ].map((c) => ({ ...c, path: `${defaultNamespace(TEST_DOCTYPE)}.${c.path}` })),
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
  const templates = [TEST_TEMPLATES.jwt, TEST_TEMPLATES.sdJwt, TEST_TEMPLATES.ldp, TEST_TEMPLATES.mdl]
  try {
    let trust = await readTrust(url)
    if (trust.dids.length === 0) {
      // A tenant's signing keys are made at its first issuance: one of each format, to a throwaway (P-256,
      // for the mdoc) wallet, before anyone is told what to trust (this also proves the issuer works).
      const wallet = await Wallet.create({
        keyType: 'P-256',
        trustAnchors: [trust.trustAnchorPem, trust.iacaPem],
      })
      await deploymentCredentials(keys, templates).fill(wallet)
      trust = await readTrust(url)
    }
    return {
      url,
      keys,
      templates,
      trust,
      templatesFor: (keyType) =>
        keyType === 'P-256' ? templates : templates.filter((t) => t !== TEST_TEMPLATES.mdl),
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
  const iaca = await fetch(`${credentialIssuer}/iaca`)
  if (!iaca.ok) throw new Error(`the test issuer has no IACA (${iaca.status})`)
  return {
    credentialIssuer,
    dids,
    trustAnchorPem: await anchor.text(),
    iacaPem: await iaca.text(),
    credentialType: TEST_CREDENTIAL_TYPE,
    vct: TEST_VCT,
    doctype: TEST_DOCTYPE,
  }
}

/** `--list-trust`: what to configure in the verifier under test. */
export function renderTrust(trust: TestIssuerTrust): string {
  return [
    '# What the verifier under test must trust (the vc-harness test issuer; stable while its data folder is kept)',
    `credential issuer: ${trust.credentialIssuer.replace(/^http:\/\/127\.0\.0\.1:\d+/, '<per run>')}`,
    `issuer DIDs (jwt_vc_json, ldp_vc): ${trust.dids.join(' ')}`,
    `credential type: ${trust.credentialType}; SD-JWT VC vct: ${trust.vct}; mdoc doctype: ${trust.doctype}`,
    'SD-JWT VC issuer trust anchor (x5c chains lead to this CA):',
    trust.trustAnchorPem.trim(),
    'mdoc IACA (the document signer of the mDL, in its issuerAuth x5chain, is issued by this root):',
    trust.iacaPem.trim(),
    '',
  ].join('\n')
}
