// The service configuration a wallet test plan runs on: one tenant per case (a fault is on for exactly that
// tenant), each with one application key and the one template its flow needs, one verifier certificate
// chain and one mdoc IACA for every tenant, so a wallet configures a single trust anchor file: the verifier
// CA (x509 request objects) and the IACA (the mdocs' issuerAuth x5chain) in one PEM.

import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import { formatOf } from '../../formats/registry.ts'
import { parseConfig, type ServiceConfig } from '../../service/config/index.ts'
import { defaultNamespace, MDOC_FORMAT } from '../../shared/mdoc.ts'
import { certificatePem, generateIaca, generateTestCa, issueCertificate } from '../../shared/x509.ts'
import { type PresentationFlow, tenantOf, type WalletCase } from './plans.ts'

/** The template ids every case tenant uses. */
export const ISSUANCE_TEMPLATE = 'credential'
export const VERIFICATION_TEMPLATE = 'check'
/** One vct per credential type for every tenant (the default one names the tenant's issuer URL). */
export const walletTestVct = (credentialType: string) => `urn:vc-harness:wallet-test:${credentialType}`

export interface CaseKey {
  keyId: string
  secret: string
  /** the tenant administrator's key (portal: a presentation tenant learns which issuer to trust) */
  admin: { keyId: string; secret: string }
}

export interface WalletTestConfig {
  config: ServiceConfig
  /** the application key of each case's tenant */
  keys: Map<string, CaseKey>
  /**
   * The wallet's trust anchors, one PEM holding two certificates: the CA the x509_san_dns / x509_hash request
   * objects chain to, then the IACA root every tenant's mdoc document signer is certified by
   */
  trustAnchorPem: string
  /** PEM of the IACA alone (a wallet that keeps its mdoc issuers apart from its verifiers) */
  iacaPem: string
}

/** The mdoc elements a case's relying party submits and a presentation case asks for (ISO 18013-5 §7.2.1). */
export const MDOC_ELEMENTS = { family_name: 'Doe', given_name: 'Jane', birth_date: '1990-01-01' }

export function verificationTemplate(flow: PresentationFlow) {
  // An mdoc element is named as the doctype's namespace names it: family_name (docs/verification.md).
  const field = flow.format === MDOC_FORMAT ? 'family_name' : 'familyName'
  return {
    id: VERIFICATION_TEMPLATE,
    name: `Wallet test: ${flow.credentialType}`,
    credentialTypes: [flow.credentialType],
    requestedFields: [{ path: `$.credentialSubject.${field}` }],
    ...(flow.profile === 'dcql'
      ? {
          profile: 'dcql',
          dcql: {
            format: flow.format,
            ...(formatOf(flow.format).typedBy === 'vct'
              ? { vctValues: { [flow.credentialType]: [walletTestVct(flow.credentialType)] } }
              : {}),
            clientIdPrefix: flow.clientIdPrefix ?? 'decentralized_identifier',
            responseMode: flow.responseMode ?? 'direct_post',
            requestUriMethod: flow.requestUriMethod ?? 'get',
            // OpenID4VP 1.0 Appendix A: the session over the DC API too; its expected origin is the service's
            // own (the default), which the harness hands the wallet as the calling page's origin.
            ...(flow.dcApi ? { dcApi: { request: flow.dcApi.request } } : {}),
          },
        }
      : {}),
  }
}

/** How a wallet shows each credential type the plans issue. */
const DISPLAY_NAMES: Record<string, string> = {
  VerifiableId: 'Verifiable ID',
  PersonIdentificationData: 'Person identification data',
  PermanentResidentCard: 'Permanent resident card',
}

function issuanceTemplate(testCase: WalletCase) {
  const flow = testCase.flow
  if (flow.kind !== 'issuance') throw new Error('not an issuance case')
  return {
    id: ISSUANCE_TEMPLATE,
    credentialType: flow.credentialType,
    format: flow.format,
    display: { name: `${DISPLAY_NAMES[flow.credentialType] ?? flow.credentialType} (wallet test)` },
    // HAIP (plan issuance-haip): only the authorization_code grant, the user step approved at once; DPoP and
    // wallet attestation required (the tenant trusts the test wallet provider, below).
    ...(flow.grant === 'authorization_code'
      ? { grants: ['authorization_code'], authorization: { userStep: 'auto' }, signingAlg: 'ES256' }
      : {}),
    // ldp_vc: signed with the proof type section 2.8 lists first for an Ed25519 key, by the tenant's EdDSA key
    ...(flow.format === 'ldp_vc' ? { proofType: 'Ed25519Signature2018', signingAlg: 'EdDSA' } : {}),
    // mso_mdoc (OpenID4VCI 1.0 Appendix A.2): the doctype is the credential type, the MSO signed with ES256
    // by the tenant's document signer; claims as [namespace, element]
    ...(flow.format === MDOC_FORMAT
      ? {
          doctype: flow.credentialType,
          signingAlg: 'ES256',
          claims: [
            { path: 'family_name', name: 'Family name' },
            { path: 'given_name', name: 'Given name' },
            { path: 'birth_date', name: 'Date of birth' },
          ].map((c) => ({ ...c, path: `${defaultNamespace(flow.credentialType)}.${c.path}` })),
        }
      : {}),
    ...(formatOf(flow.format).typedBy === 'vct'
      ? {
          vct: walletTestVct(flow.credentialType),
          claims: [
            { path: 'familyName', name: 'Family name' },
            { path: 'givenName', name: 'Given name' },
            { path: 'dateOfBirth', name: 'Date of birth' },
          ],
        }
      : {}),
  }
}

/**
 * The configuration for `cases`. The verifier leaf's dNSName SAN is `publicHost`, the host wallets reach, so
 * x509_san_dns client identifiers name it; `publicUrl` is set when known before listening.
 */
export async function walletTestConfig(
  cases: readonly WalletCase[],
  publicHost: string,
  publicUrl?: string,
): Promise<WalletTestConfig> {
  const ca = await generateTestCa({ name: 'CN=vc-harness wallet test CA, O=vc-harness' })
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const host = publicHost.replace(/^\[|\]$/g, '')
  const leaf = await issueCertificate({ issuer: ca, publicKey, dns: [host], subject: `CN=${host}` })
  const verifierCertificate = {
    chain: [certificatePem(leaf)],
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  }
  // ISO 18013-5 Annex B.1.2: one IACA for the run, so an mdoc of the setup case's tenant is trusted by the
  // presentation cases' tenants (their default trust anchors include their IACA) and by the wallet.
  const iaca = await generateIaca({
    commonName: 'vc-harness wallet test IACA',
    uri: publicUrl ?? 'https://vc-harness.invalid/wallet-test',
  })
  const mdocIaca = {
    certificate: certificatePem(iaca.certificate),
    privateKey: iaca.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  }
  const keys = new Map<string, CaseKey>()
  const tenants = cases.map((c) => {
    const id = tenantOf(c)
    const secret = () => randomBytes(24).toString('base64url')
    const key = { keyId: randomUUID(), secret: secret(), admin: { keyId: randomUUID(), secret: secret() } }
    keys.set(c.id, key)
    return {
      id,
      verifierCertificate,
      mdocIaca,
      apiKeys: [
        { id: key.keyId, secret: key.secret, role: 'app', label: `wallet test ${c.id}` },
        {
          id: key.admin.keyId,
          secret: key.admin.secret,
          role: 'admin',
          label: `wallet test ${c.id} (admin)`,
        },
      ],
      issuanceTemplates: c.flow.kind === 'issuance' ? [issuanceTemplate(c)] : [],
      // The wallet under test attests itself with vc-harness's published test wallet provider, or with its own
      // provider's keys configured here (docs/wallet-testing.md).
      ...(c.flow.kind === 'issuance' && c.flow.grant === 'authorization_code'
        ? { testWalletProvider: true }
        : {}),
      // A presentation case's template is created over the portal before its flow (runner.ts): it must
      // trust the issuer of the plan's setup case, whose DID exists only once that case has issued.
    }
  })
  const config = parseConfig(
    { ...(publicUrl ? { publicUrl } : {}), webhooks: { mode: 'test' }, tenants },
    'the wallet test configuration',
  )
  return {
    config,
    keys,
    trustAnchorPem: `${certificatePem(ca.certificate).trim()}\n${mdocIaca.certificate.trim()}\n`,
    iacaPem: mdocIaca.certificate,
  }
}
